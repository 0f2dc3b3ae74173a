"""Evaluates a traced program without compiling it.

``evaluate(closed_jaxpr, *args)`` computes a closed jaxpr's outputs one primitive at a time
(each dispatched eagerly), with ``cond``, ``while`` and ``scan`` interpreted in Python: the
reference semantics of the lax control-flow primitives, without an XLA compile of the whole
program (several times faster for programs that run once). Effects run as they are reached:
a ``debug_callback`` (a staged ``print``) prints when its equation is evaluated. A jaxpr that
reads a variable nobody defined (a tracer leaked from another trace, which XLA lowering
reports as ``UnexpectedTracerError``) raises ``UnexpectedTracerError`` here too.
"""

from __future__ import annotations

MAX_WHILE_ITERATIONS = 10_000  # interpreted; then compiled, up to MAX_COMPILED_ITERATIONS in all
MAX_COMPILED_ITERATIONS = 10_000_000
_CALLS = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"}


class NonTerminatingLoop(RuntimeError):
    """A ``lax.while_loop`` ran ``MAX_COMPILED_ITERATIONS`` iterations: every generated loop
    ends far sooner, so the lowering is wrong."""


def _finish_compiled(params, cond_consts, body_consts, carry):
    """The rest of a ``while`` loop that ran ``MAX_WHILE_ITERATIONS`` interpreted iterations,
    compiled (each iteration costs microseconds there, not a millisecond) and bounded, so it
    ends: Python's own loops can run longer than the interpreter's bound (fuzz seed 6262: a
    bound doubled in a nested loop, 16,385 iterations), and that is no hang."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    def hang():
        return NonTerminatingLoop(f"a lax.while_loop ran {MAX_COMPILED_ITERATIONS} iterations without ending")

    if any(getattr(a, "shape", ()) != () for a in params["cond_jaxpr"].out_avals):
        raise hang()  # a batched predicate (vmap): rows step apart, interpreted only
    cond_fun, body_fun = jaxpr_as_fun(params["cond_jaxpr"]), jaxpr_as_fun(params["body_jaxpr"])
    left = MAX_COMPILED_ITERATIONS - MAX_WHILE_ITERATIONS

    def run(cond_consts, body_consts, carry):
        def test(state):
            return (state[0] < left) & cond_fun(*cond_consts, *state[1:])[0]

        def step(state):
            return (state[0] + 1, *body_fun(*body_consts, *state[1:]))

        return jax.lax.while_loop(test, step, (0, *carry))

    count, *carry = jax.jit(run)(list(cond_consts), list(body_consts), list(carry))
    if int(count) >= left:
        raise hang()
    return carry


def evaluate(closed, *args):
    """The outputs (a flat list) of a closed jaxpr on concrete ``args``."""
    return _eval(closed.jaxpr, closed.consts, args)


def _eval(jaxpr, consts, args):
    import jax
    import jax.numpy as jnp
    from jax.extend.core import Literal

    from autolax.runtime import compat

    env = {}

    def read(v):
        if isinstance(v, Literal):
            return v.val
        if v not in env:  # what XLA lowering reports as an escaped tracer
            raise jax.errors.UnexpectedTracerError(
                f"the traced program reads {v}, a value traced elsewhere: a tracer leaked out of another trace "
                "(found by the fuzzer's jaxpr interpreter)"
            )
        return env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        inputs = [read(v) for v in eqn.invars]
        name, params = eqn.primitive.name, eqn.params
        if name == "cond":
            index, *operands = inputs
            branches = params["branches"]
            branch = branches[min(max(int(index), 0), len(branches) - 1)]
            outputs = _eval_closed(branch, operands)
        elif name == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            cond_consts, body_consts, carry = inputs[:nc], inputs[nc : nc + nb], inputs[nc + nb :]
            for _ in range(MAX_WHILE_ITERATIONS):
                pred = _eval_closed(params["cond_jaxpr"], cond_consts + carry)[0]
                if not bool(jnp.any(pred)):
                    break
                new = _eval_closed(params["body_jaxpr"], body_consts + carry)
                if jnp.ndim(pred):  # a batched predicate (vmap): only its true rows step
                    new = [jnp.where(pred.reshape(pred.shape + (1,) * (jnp.ndim(x) - pred.ndim)), x, c) for x, c in zip(new, carry)]
                carry = new
            else:
                carry = _finish_compiled(params, cond_consts, body_consts, carry)
            outputs = carry
        elif name == "scan":
            (n_consts, n_carry), length = compat.scan_counts(params), params["length"]
            body = params["jaxpr"]
            consts_, carry, xs = inputs[:n_consts], inputs[n_consts : n_consts + n_carry], inputs[n_consts + n_carry :]
            steps = range(length - 1, -1, -1) if params["reverse"] else range(length)
            ys = []
            for k in steps:
                out = _eval_closed(body, consts_ + carry + [x[k] for x in xs])
                carry, y = out[:n_carry], out[n_carry:]
                ys.append(y)
            if params["reverse"]:
                ys.reverse()
            y_avals = body.out_avals[n_carry:]
            stacked = [
                jnp.stack([y[j] for y in ys]) if ys else jnp.zeros((0,) + aval.shape, aval.dtype)
                for j, aval in enumerate(y_avals)
            ]
            outputs = carry + stacked
        elif name in _CALLS and ("jaxpr" in params or "call_jaxpr" in params):
            outputs = _eval_closed(params.get("jaxpr", params.get("call_jaxpr")), inputs)
        else:
            outputs = eqn.primitive.bind(*inputs, **params)
            if not eqn.primitive.multiple_results:
                outputs = [outputs]
        for var, value in zip(eqn.outvars, outputs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _eval_closed(fn, args):
    if hasattr(fn, "consts"):  # a ClosedJaxpr
        return _eval(fn.jaxpr, fn.consts, list(args))
    return _eval(fn, [], list(args))
