"""Traces a branch or loop body once into a jaxpr, and replays it inside ``lax.*``.

Tracing first (with ``jax.make_jaxpr``) tells the staged op the exact types a body
produces, so branch/carry types can be reconciled *before* calling ``lax.cond`` /
``while_loop`` / ``scan``, and the user's Python runs once per body (not once to probe and
again inside lax). Values the body closes over -- tracers of the enclosing trace included --
become the jaxpr's constants.

This module is the only one that touches jaxprs.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jax_core
from jax.extend.core import jaxpr_as_fun, primitives

from autolax.runtime import compat
from autolax.runtime.ops import checks, report
from autolax.runtime.ops.lists import list_shape
from autolax.runtime.ops.state import State, Undefined, cast, kept_in_place, received


def unpack(result, n: int, what: str = "function"):
    """A generated function's return value as a tuple of ``n`` values."""
    if n == 0:
        return ()
    if n == 1:
        return (result,)
    return tuple(result)


def pack(values, n: int):
    """The inverse of ``unpack``: what the emitted code assigns."""
    if n == 0:
        return None
    if n == 1:
        return values[0]
    return tuple(values)


@dataclass
class Traced:
    """A body traced once: its jaxpr, the state it returns, and any per-iteration extras."""

    jaxpr: object
    out: State
    extras: list  # avals of per-iteration outputs (list appends), after the state leaves
    makers: tuple = ()  # the body's checks (see autolax.runtime.ops.checks): their code is the last output
    raises: bool = False  # every path through the body raises: it returns only the code
    kept: list | None = None  # per returned name, ``state.kept_in_place``

    def __call__(self, dynamic_inputs, target: State | None = None, *, guard=None, outputs=None):
        """Runs the jaxpr; returns (state leaves cast to ``target``'s types, extras,
        ``checks.Failures`` or None). With ``guard`` it runs as ``selecting`` does; a
        boolean scalar ``guard`` also takes the derivative off its inputs and constants
        where it is false. ``outputs`` ({output index: variable}) returns other variables
        of the jaxpr in place of some outputs (see ``accumulations``)."""
        __tracebackhide__ = True
        if outputs:
            jaxpr = self.jaxpr.jaxpr
            outvars = [outputs.get(k, v) for k, v in enumerate(jaxpr.outvars)]
            outs = _evaluate(jaxpr, self.jaxpr.consts, dynamic_inputs, outvars)
        elif guard is None:
            outs = jaxpr_as_fun(self.jaxpr)(*dynamic_inputs)
        elif guard is True:
            outs = selecting(self.jaxpr)(*dynamic_inputs)
        else:
            consts = [guarded(guard, c) for c in self.jaxpr.consts]
            outs = _evaluate(self.jaxpr.jaxpr, consts, [guarded(guard, x) for x in dynamic_inputs])
        # An output that does not depend on the inputs is the jaxpr's literal.
        outs = [compat.plain_constant(o) for o in outs]
        failures = None
        if self.makers:
            outs, failures = outs[:-1], checks.Failures(outs[-1], self.makers)
        if self.raises:
            return [], [], failures
        n_state = self.out.n_dynamic()
        state_leaves, extras = outs[:n_state], outs[n_state:]
        if target is None:
            return list(state_leaves), list(extras), failures
        return cast_to(self.out, target, state_leaves), list(extras), failures

    def sources(self, target: State) -> list:
        """For each state leaf ``self(..., target)`` returns, the index of the jaxpr output
        it is (its type ``target``'s), or None for a leaf made there (a zero for a variable
        this body leaves unbound, a bound flag)."""
        sources = []
        k = 0
        for spec, tspec in zip(self.out.specs, target.specs):
            if spec.is_undefined and not tspec.is_undefined:
                sources.extend(None for t in tspec.leaves if t.dynamic)
                continue
            for leaf, tleaf in zip(spec.leaves, tspec.leaves):
                if tleaf.dynamic:
                    sources.append(k if leaf.dynamic and leaf.aval == tleaf.aval else None)
                k += leaf.dynamic
            if tspec.is_maybe_bound and not spec.is_maybe_bound:
                sources.append(None)
        return sources


def cast_to(out: State, target: State, state_leaves) -> list:
    """The dynamic leaves of a body's returned state ``out``, as the leaves of ``target``
    (the carried types): cast, a zero for a variable this body leaves unbound, a bound flag."""
    cast_leaves = []
    it = iter(state_leaves)
    for spec, tspec in zip(out.specs, target.specs):
        if spec.is_undefined and not tspec.is_undefined:  # see Undefined.pending
            cast_leaves.extend(cast(jnp.zeros(t.aval.shape, t.aval.dtype), t.aval) for t in tspec.leaves if t.dynamic)
            continue
        for leaf, tleaf in zip(spec.leaves, tspec.leaves):
            value = next(it) if leaf.dynamic else None
            if tleaf.dynamic:
                if isinstance(value, bool) and tleaf.aval.dtype == np.bool_ and tleaf.aval.shape == ():
                    value = np.bool_(value)  # a constant flag (`break_ = True`) stays known
                else:
                    value = cast(value, tleaf.aval)
                cast_leaves.append(value)
        if tspec.is_maybe_bound and not spec.is_maybe_bound:  # assigned on this path
            cast_leaves.append(jnp.asarray(True))
    return cast_leaves


@contextlib.contextmanager
def staging(site):
    """The context a staged body is traced in (``report.staging``, room for nesting)."""
    with report.staging(site):
        _room_for(report.staging_depth())
        yield


# Python frames one level of nested staging takes (an op, JAX's tracing, the body).
_FRAMES_PER_LEVEL = 40


def _room_for(depth: int) -> None:
    """Bodies staged inside bodies nest Python calls (an `elif` chain of 100 branches is 100
    nested conditionals). Python's recursion limit is raised to leave room for ``depth`` of
    them; it is never lowered again (other threads may rely on it)."""
    needed = 1000 + depth * _FRAMES_PER_LEVEL
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def run_body(
    fn,
    in_state: State,
    out_names,
    dynamic,
    captured: dict,
    *,
    site=None,
    prefix_state=None,
    strong_numbers=False,
    split=None,
    fails=None,
) -> list:
    """Runs ``fn`` on the values ``dynamic`` (the prefix's leaves, then ``in_state``'s) stand
    for, while some trace records it; returns the leaves ``trace``'s jaxpr returns and fills
    ``captured`` (out, extras, makers, raises, kept) as ``Traced`` holds them.

    ``fails(exc)``: for an error ``fn`` raised while traced, the error to raise when the
    program runs (the body is then staged as raising it there, after what it did before, as
    a ``raise`` statement at that point is: ``checks.raising``), or None to let it go on."""
    __tracebackhide__ = True
    n_prefix = prefix_state.n_dynamic() if prefix_state is not None else 0
    pre_values = prefix_state.rebuild(dynamic[:n_prefix]) if prefix_state is not None else []
    args = in_state.rebuild(dynamic[n_prefix:])
    report.given_to_body(args)
    shapes = [list_shape(a) for a in args]
    index = received(dict(zip(in_state.names, args)))
    watched = report.outside_containers(fn)
    with checks.collecting() as pending:
        try:
            values = unpack(fn(*pre_values, *args), len(out_names))
        except checks.StagedRaise as raised:  # this body always raises when it runs
            report.check_unchanged(watched, site)
            captured.update(out=None, extras=[], makers=raised.failures.makers, raises=True)
            return [raised.failures.code]
        except BaseException as exc:
            changed = report.check_unchanged(watched, site, failed=True)
            error = fails(exc) if fails is not None and isinstance(exc, report.PROGRAM_ERRORS) and not changed else None
            if error is None:
                if isinstance(exc, Exception) and checks.first(pending) is not None:
                    exc.__autolax_after_check__ = True  # see ``raised_after_check``
                raise
            failures = checks.first([checks.first(pending), checks.Failures(jnp.int32(1), (lambda: error,))])
            captured.update(out=None, extras=[], makers=failures.makers, raises=True)
            return [failures.code]
    report.check_unchanged(watched, site)
    failures = checks.first(pending)
    captured["makers"] = failures.makers if failures is not None else ()
    captured["kept"] = [kept_in_place(index, v) for v in values]
    extras = []
    if split is not None:
        values, extras = split(shapes, list(values))
    out = State.of(out_names, values, site, strong_numbers=strong_numbers)
    captured["out"] = out
    captured["extras"] = [jax.typeof(e) for e in extras]
    leaves = []
    for spec, value in zip(out.specs, values):
        flat_values = jax.tree_util.tree_leaves(value, is_leaf=lambda x: isinstance(x, Undefined))
        leaves.extend(x for leaf, x in zip(spec.leaves, flat_values) if leaf.dynamic)
    return leaves + list(extras) + ([failures.code] if failures is not None else [])


def raised_after_check(exc) -> bool:
    """Was ``exc`` raised, while a staged body was traced, after a check staged earlier in
    that body (``checks``)? When the program runs, that check may fail first: Python would
    then raise its error, never getting to ``exc``."""
    return getattr(exc, "__autolax_after_check__", False)


def trace(
    fn, in_state: State, out_names, *, site=None, prefix=(), strong_numbers=False, split=None, fails=None
) -> Traced:
    """Traces ``fn(*prefix_values, *state_values)``.

    ``prefix`` is a list of (value-spec State) for leading arguments that are not part of the
    returned state (a loop's item). ``split(inputs, outputs) -> (outputs, extras)`` lets a
    loop move list appends out of the state into per-iteration outputs. ``fails``: see
    ``run_body``.
    """
    __tracebackhide__ = True
    captured = {}
    prefix_state = prefix if prefix else None

    def flat(*dynamic):
        __tracebackhide__ = True
        return run_body(
            fn,
            in_state,
            out_names,
            dynamic,
            captured,
            site=site,
            prefix_state=prefix_state,
            strong_numbers=strong_numbers,
            split=split,
            fails=fails,
        )

    abstract = (prefix_state.abstract() if prefix_state is not None else []) + in_state.abstract()
    with staging(site):
        jaxpr = jax.make_jaxpr(flat)(*abstract)
    return Traced(
        jaxpr,
        captured["out"],
        captured["extras"],
        captured["makers"],
        captured.get("raises", False),
        captured.get("kept"),
    )


# ----------------------------------------------------------------------------- selecting
def guarded(keep, value):
    """``value`` where ``keep``, else ``value`` without a derivative (inexact values only).

    What JAX's batched ``lax.cond`` does to the operands of a branch not taken: an untaken
    computation's NaN or inf derivative (``jnp.sqrt`` of a negative) never reaches a
    gradient."""
    if not jnp.issubdtype(jnp.result_type(value), jnp.inexact):
        return value
    return jax.lax.select(keep, value, jax.lax.stop_gradient(value))


def selecting(closed_jaxpr):
    """``closed_jaxpr`` as a function in which every ``cond`` runs all its branches, each on
    ``guarded`` operands, and selects the taken branch's results (nested in ``scan`` and
    ``jit`` too).

    The same values and derivatives as the jaxpr, for a derivative rule that ``vmap`` may
    batch after it is differentiated: JAX batches a ``cond`` whose predicate is batched into
    a select with ``stop_gradient`` on its operands -- tangents too, once differentiated,
    which reverse mode cannot transpose (jax-ml/jax#22011). A select has no such problem.
    """
    return lambda *args: _evaluate(closed_jaxpr.jaxpr, closed_jaxpr.consts, args)


def _has_cond(eqn) -> bool:
    return eqn.primitive is primitives.cond_p or any(
        _has_cond(e) for sub in compat.jaxprs_in_params(eqn.params) for e in sub.eqns
    )


# ----------------------------------------------------------------------------- accumulating
# `x OP e` for an operation with a unit: `x OP unit` is `x` bit for bit, for every `x`
# (-0.0 and +0.0, inf and NaN included): x + -0.0, x - 0.0, x * 1.
_UNITS = {"add": (-0.0, (0, 1)), "sub": (0.0, (0,)), "mul": (1.0, (0, 1))}


def accumulations(changed: Traced, same: Traced) -> dict:
    """The outputs that branch ``changed`` computes as ``x OP e`` from an input ``x`` that
    branch ``same`` returns unchanged there (``if c: total += x * x``):
    ``{output index: (OP, e's variable, unit)}``.

    ``select(p, x OP e, x)`` is then ``x OP select(p, e, unit)``: the same bits, the same
    derivatives, and the carried value stays out of the select, which XLA's CPU backend
    runs markedly faster in a loop body (a ``while`` summing under a condition: 1.15x ->
    1.02x of the hand-written ``total + jnp.where(c, x * x, 0.0)``). Scalars of integer or
    floating type only; bodies with checks are left as they are."""
    if changed.makers or same.makers or changed.raises or same.raises:
        return {}
    cj, sj = changed.jaxpr.jaxpr, same.jaxpr.jaxpr
    inputs = {id(v): j for j, v in enumerate(sj.invars)}
    producers = {id(v): eqn for eqn in cj.eqns for v in eqn.outvars}
    found = {}
    for k, (cv, sv) in enumerate(zip(cj.outvars, sj.outvars)):
        j = inputs.get(id(sv)) if isinstance(sv, jax_core.Var) else None
        eqn = producers.get(id(cv)) if isinstance(cv, jax_core.Var) else None
        if j is None or eqn is None or eqn.primitive.name not in _UNITS:
            continue
        unit, positions = _UNITS[eqn.primitive.name]
        base = cj.invars[j]
        for pos in positions:
            other = eqn.invars[1 - pos]
            if (
                eqn.invars[pos] is base
                and isinstance(other, jax_core.Var)
                and _same_number_type(cv.aval, base.aval, sv.aval, other.aval)
            ):
                found[k] = (eqn.primitive.name, other, unit)
                break
    return found


def _same_number_type(*avals) -> bool:
    first = avals[0]
    if getattr(first, "shape", None) != () or not (
        jnp.issubdtype(first.dtype, jnp.floating) or jnp.issubdtype(first.dtype, jnp.integer)
    ):
        return False
    return all(a.shape == () and a.dtype == first.dtype and a.weak_type == first.weak_type for a in avals)


def _evaluate(jaxpr, consts, args, outvars=None):
    eqns = jaxpr.eqns if outvars is None else _needed(jaxpr.eqns, outvars)
    env = {}

    def read(v):
        return v.val if isinstance(v, jax_core.Literal) else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in eqns:
        invals = [read(v) for v in eqn.invars]
        outs = _evaluate_equation(eqn, invals)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in (jaxpr.outvars if outvars is None else outvars)]


def _needed(eqns, outvars) -> list:
    """The equations of ``eqns`` (without effects) that ``outvars`` depend on, in order."""
    live = {id(v) for v in outvars if isinstance(v, jax_core.Var)}
    kept = []
    for eqn in reversed(eqns):
        if eqn.effects or any(id(v) in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(id(v) for v in eqn.invars if isinstance(v, jax_core.Var))
    return kept[::-1]


def _evaluate_equation(eqn, invals):
    prim, params = eqn.primitive, eqn.params
    if prim is primitives.cond_p:
        index, *operands = invals
        outs = []
        for i, branch in enumerate(params["branches"]):
            taken = index == i
            outs.append(_evaluate(branch.jaxpr, branch.consts, [guarded(taken, x) for x in operands]))
        return [jax.lax.select_n(index, *values) for values in zip(*outs)]
    if not _has_cond(eqn):
        return compat.bind_equation(eqn, invals)
    if prim is primitives.scan_p:
        body = params["jaxpr"]
        n_consts, n_carry = compat.scan_counts(params)
        consts, init, xs = invals[:n_consts], invals[n_consts : n_consts + n_carry], invals[n_consts + n_carry :]

        def scan_body(carry, x):
            outs = _evaluate(body.jaxpr, body.consts, [*consts, *carry, *x])
            return outs[:n_carry], outs[n_carry:]

        carry, ys = jax.lax.scan(
            scan_body, init, xs, length=params["length"], reverse=params["reverse"], unroll=params["unroll"]
        )
        return [*carry, *ys]
    inner = params.get("jaxpr")
    if isinstance(inner, jax_core.ClosedJaxpr) and prim.name in ("jit", "pjit", "closed_call", "core_call"):
        return _evaluate(inner.jaxpr, inner.consts, invals)  # inlined
    return compat.bind_equation(eqn, invals)  # a while_loop: not reverse-differentiable anyway
