"""A bounded ``while_loop`` that ``jax.grad`` can differentiate (checkpointed chunks).

``lax.while_loop`` has no reverse-mode derivative: its trip count is only known at run
time, so JAX cannot size the storage for the values the backward pass needs.
:func:`bounded_while_loop` takes a bound ``max_steps`` on the trip count and gives the loop
a reverse-mode derivative whose cost follows the iterations actually run.

Design (a ``jax.custom_vjp``; ``max_steps`` is split into ``C`` chunks of ``K`` steps,
``C * K >= max_steps``, see :func:`chunking`):

* Primal: a plain ``lax.while_loop``. A call that is not differentiated runs that and
  nothing else; ``max_steps`` is not enforced there.
* Forward pass under ``grad``/``vjp``: an outer ``while_loop`` over chunks; each chunk
  stores its starting state in a buffer of ``C`` checkpoints and runs up to ``K`` steps as a
  plain inner ``while_loop``. The loop stops when ``cond_fun`` fails, so the work is that of
  the iterations run.
* Backward pass: the chunks run, last first. Each is recomputed from its checkpoint as a
  ``lax.scan`` under ``jax.vjp`` and the cotangent pulled through it; the cotangents of the
  values the loop reads without carrying them are summed. A chunk that ran all ``K`` steps
  is a plain scan; in the chunk where the loop stopped each step is a ``lax.cond`` on the
  number of iterations run. Each step keeps only its input state (and matrix products)
  and is recomputed once more while pulling back: on CPU that is cheaper than stacking
  every intermediate of the body. Only the parts of the state that the caller's cotangent
  can reach are differentiated (``custom_vjp`` with symbolic zeros).
  Memory: ``C`` states plus ``K`` states of one chunk; time about five to ten forward
  passes (measured on CPU).
* Under ``jax.vmap`` the outer loops run while any lane still runs (``custom_vmap``
  predicates), so they select over nothing per lane; inside a chunk each lane's steps stay
  masked by its own count.
* Needing more than ``max_steps`` iterations under differentiation is a run-time error,
  never a truncated derivative.

Derivatives: ``grad``, ``value_and_grad``, ``vjp``, ``jacrev``, and forward over reverse
(``hessian``, ``jacfwd(grad)``). Not supported, as for every ``custom_vjp``: forward mode of
the loop itself (``jvp``, ``jacfwd``; ``linearize`` returns but its linear function raises),
and reverse over reverse (``grad`` of ``grad``: the backward pass is itself a ``while_loop``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jax.custom_derivatives import SymbolicZero

__all__ = [
    "DEFAULT_BUDGET_BYTES",
    "LoopBoundExceededError",
    "bounded_while_loop",
    "chunking",
]

DEFAULT_BUDGET_BYTES = 64 * 2**20
"""The memory the checkpoints of one loop may use, per ``vmap`` lane, when a call gives no
``budget_bytes``: 64 MiB."""

JVP_UNSUPPORTED = (
    "bounded_while_loop: forward-mode differentiation (jax.jvp, jax.jacfwd) of a bounded "
    "while loop is not supported: its derivative is a "
    "custom reverse-mode rule (jax.custom_vjp). Use reverse mode (jax.grad, jax.vjp, "
    "jax.jacrev); for second derivatives use forward over reverse, as jax.hessian does "
    "(jax.jacfwd(jax.jacrev(f)))."
)


_SAVED = jax.checkpoint_policies.dots_with_no_batch_dims_saveable


class LoopBoundExceededError(RuntimeError):
    """A loop differentiated through :func:`bounded_while_loop` needed more than its
    ``max_steps`` iterations.

    The derivative of a bounded loop covers only its first ``max_steps`` iterations; rather
    than return the derivative of a truncated loop, the computation stops with this error.
    Raise the loop's ``max_steps`` (memory grows with its square root) or make the loop exit
    sooner.

    The check runs inside the computation (``jax.debug.callback``). Called eagerly, the
    caller gets this error. Under ``jax.jit`` JAX reports it as a
    ``jax.errors.JaxRuntimeError`` (a ``RuntimeError``) whose message ends with this error's
    class name and text.
    """


def bounded_while_loop(
    cond_fun: Callable[[Any], Any],
    body_fun: Callable[[Any], Any],
    init_val: Any,
    *,
    max_steps: int,
    budget_bytes: int | None = None,
    error_message: str | None = None,
) -> Any:
    """``lax.while_loop(cond_fun, body_fun, init_val)`` that ``jax.grad``, ``jax.vjp`` and
    ``jax.value_and_grad`` can differentiate, provided the loop runs at most ``max_steps``
    iterations.

    The Python equivalent, when not differentiated::

        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val

    Args:
      cond_fun: ``val -> bool scalar``, as for ``lax.while_loop``.
      body_fun: ``val -> val`` (same pytree structure, shapes and dtypes).
      init_val: the initial loop state, a pytree of arrays. Integer and boolean leaves
        (counters, flags) are carried and get no derivative.
      max_steps: the most iterations a differentiated call may run. A call that is not
        differentiated ignores it and runs to completion, exactly as ``lax.while_loop``.
        A differentiated call that needs more stops with :class:`LoopBoundExceededError`
        at run time (see there for how ``jax.jit`` reports it).
      budget_bytes: the memory the derivative's checkpoints and recomputed residuals may
        take, counted per ``vmap`` lane: under ``vmap`` every buffer holds all lanes, so the
        real figure is the batch size times this. ``None`` means
        :data:`DEFAULT_BUDGET_BYTES`. See :func:`chunking` for how it sets the chunk
        length; a budget too small for ``max_steps`` is a ``ValueError`` at trace time.
      error_message: replaces the text of the error for exceeding ``max_steps``.

    Returns:
      The final loop state, like ``lax.while_loop``.

    Values ``cond_fun``/``body_fun`` read without carrying them (closed-over arrays,
    tracers of an enclosing transform) get derivatives too. Under ``grad`` the forward pass
    runs the iterations the loop needs as a plain ``while_loop`` and the backward pass
    recomputes them (about five to ten times the plain loop in all, measured on CPU).
    Supported derivatives: reverse mode (``grad``, ``value_and_grad``, ``vjp``,
    ``jacrev``) and forward over reverse (``hessian``); forward mode of the loop itself
    (``jvp``, ``jacfwd``) is a ``TypeError`` that names the fix when called eagerly and
    JAX's own ``TypeError`` under ``jit``; ``grad`` of ``grad`` is JAX's error for reverse
    mode through a ``while_loop``. ``jax.debug.print``/``callback`` in the body run once
    per iteration in the forward pass and two or three more times in the backward pass,
    chunk by chunk from the last.
    """
    __tracebackhide__ = True
    max_steps = _check_max_steps(max_steps)
    if budget_bytes is None:
        budget_bytes = DEFAULT_BUDGET_BYTES
    init_val = _match_body_types(body_fun, init_val)
    leaves, treedef = jax.tree_util.tree_flatten(init_val)

    cond_c, cond_consts = jax.closure_convert(cond_fun, init_val)
    body_c, body_consts = jax.closure_convert(body_fun, init_val)
    n_cond = len(cond_consts)

    def cond_flat(x, consts):
        return cond_c(treedef.unflatten(x), *consts[:n_cond])

    def body_flat(x, consts):
        out = body_c(treedef.unflatten(x), *consts[n_cond:])
        return tuple(jax.tree_util.tree_leaves(out))

    state_bytes = sum(_nbytes(leaf) for leaf in leaves)
    consts = (*cond_consts, *body_consts)
    residual_bytes = _residual_bytes(body_flat, tuple(leaves), consts)
    steps, chunks = chunking(max_steps, state_bytes, residual_bytes, budget_bytes)
    message = error_message or (
        f"bounded_while_loop: the loop needed more than max_steps={max_steps} iterations "
        "while being differentiated, so its derivative would be that of a truncated loop. "
        "Raise max_steps (memory grows with its square root) or make the loop exit sooner."
    )
    reads = _state_dependencies(body_flat, tuple(leaves), consts)
    chunked = _Chunked(cond_flat, body_flat, max_steps, steps, chunks, reads)

    @jax.custom_vjp
    def loop(x, consts):
        return lax.while_loop(
            lambda x: cond_flat(x, consts), lambda x: body_flat(x, consts), x
        )

    def loop_fwd(x, consts):
        # With symbolic_zeros, the arguments say which of them are being differentiated
        # and the backward pass learns which outputs the caller uses.
        wanted = _Static((tuple(a.perturbed for a in x), tuple(a.perturbed for a in consts)))
        x, consts = tuple(a.value for a in x), tuple(a.value for a in consts)
        x, checkpoints, n_chunks, ran = chunked.forward(x, consts)
        _runtime_error(cond_flat(x, consts), message)
        return x, (checkpoints, n_chunks, ran, consts, wanted)

    def loop_bwd(residuals, ct):
        return chunked.backward(*residuals, ct)

    loop.defvjp(loop_fwd, loop_bwd, symbolic_zeros=True)
    try:
        out = loop(tuple(leaves), consts)
    except TypeError as err:
        # Eager jax.jvp raises this while binding; staged (jit) jvp raises it later from
        # JAX's own frames, where JAX's text (same meaning, no fix) is what users see.
        if "forward-mode autodiff (jvp) to a custom_vjp" in str(err):
            raise TypeError(JVP_UNSUPPORTED) from err
        raise
    return treedef.unflatten(out)


def chunking(
    max_steps: int, state_bytes: int, residual_bytes: int, budget_bytes: int
) -> tuple[int, int]:
    """Splits ``max_steps`` into ``chunks`` chunks of ``steps`` steps (``steps * chunks >=
    max_steps``) and returns ``(steps, chunks)``.

    Memory is ``chunks * state_bytes`` (checkpoints) plus ``steps * residual_bytes`` (one
    chunk's residuals in the backward pass). The least of it is at ``steps =
    sqrt(max_steps * state_bytes / residual_bytes)``, about ``2 * sqrt(max_steps *
    state_bytes * residual_bytes)``; that split also bounds the work spent on the skipped
    steps of a partly used last chunk. Raises ``ValueError`` if it exceeds
    ``budget_bytes``.
    """
    state_bytes = max(int(state_bytes), 1)
    residual_bytes = max(int(residual_bytes), 1)
    ideal = math.sqrt(max_steps * state_bytes / residual_bytes)
    best = None
    for guess in (math.floor(ideal), math.ceil(ideal)):
        guess = max(1, min(max_steps, guess))
        chunks = -(-max_steps // guess)
        steps = -(-max_steps // chunks)  # the same number of chunks, the least waste
        need = chunks * state_bytes + steps * residual_bytes
        if best is None or need < best[0]:
            best = (need, steps, chunks)
    need, steps, chunks = best
    if need > budget_bytes:
        raise ValueError(
            f"bounded_while_loop: max_steps={max_steps} with a loop state of "
            f"{state_bytes:,} bytes (about {residual_bytes:,} bytes of residuals a step) "
            f"needs at least {need:,} bytes for its derivative ({chunks} checkpoints, "
            f"chunks of {steps} steps), over budget_bytes={budget_bytes:,}. Pass "
            f"budget_bytes={need} or more, or lower max_steps."
        )
    return steps, chunks


class _Chunked:
    """The loop as chunks of ``steps`` steps, ``chunks`` of them at most: the forward pass that
    keeps checkpoints and the backward pass that uses them."""

    def __init__(self, cond_flat, body_flat, max_steps, steps, chunks, reads):
        self.cond_flat, self.body_flat = cond_flat, body_flat
        self.max_steps, self.steps, self.chunks = max_steps, steps, chunks
        self.reads = reads  # per output leaf of the body, the state leaves it depends on

    def active(self, x, consts, step):
        return jnp.logical_and(self.cond_flat(x, consts), step < self.max_steps)

    def forward(self, x, consts):
        """Runs the loop, storing the state at the start of every ``steps`` iterations.
        Returns the final state, the checkpoints, the number of chunks run and the number of
        iterations run (per ``vmap`` lane). Nothing here is differentiated, so the steps are a
        plain ``while_loop``."""

        def go_on(carry):
            x, _, chunk, _ = carry
            more = jnp.logical_and(chunk < self.chunks, self.active(x, consts, chunk * self.steps))
            return _any_lane(more)

        def one_chunk(carry):
            x, checkpoints, chunk, ran = carry
            first = chunk * self.steps
            checkpoints = tuple(
                lax.dynamic_update_index_in_dim(c, leaf, chunk, 0)
                for c, leaf in zip(checkpoints, x)
            )

            def step_on(carry):
                i, x = carry
                return jnp.logical_and(i < self.steps, self.active(x, consts, first + i))

            def step(carry):
                i, x = carry
                return i + 1, self.body_flat(x, consts)

            i, x = lax.while_loop(step_on, step, (jnp.int32(0), x))
            return x, checkpoints, chunk + 1, ran + i

        empty = tuple(jnp.zeros((self.chunks, *jnp.shape(leaf)), jnp.result_type(leaf)) for leaf in x)
        return lax.while_loop(go_on, one_chunk, (x, empty, jnp.int32(0), jnp.int32(0)))

    def backward(self, checkpoints, n_chunks, ran, consts, wanted, ct):
        """Pulls ``ct`` (the cotangent of the final state; ``SymbolicZero`` where the caller
        does not use a part) back through the chunks run, last first. Returns the cotangents
        of the initial state and of ``consts`` (``None`` where ``wanted`` says that input is
        not being differentiated).

        Only the state leaves a cotangent can reach are differentiated: those the caller
        uses and those the body reads to compute them (``needed``). The chunks that ran all
        their steps in every lane are recomputed as plain scans; the others (one, when not
        under ``vmap``) with masked steps."""
        x_wanted, c_wanted = wanted.value
        used = [_differentiable(c) and not isinstance(t, SymbolicZero) for c, t in zip(checkpoints, ct)]
        x_keep = self.needed(used, [_differentiable(c) for c in checkpoints])
        c_keep = [w and _differentiable(c) for w, c in zip(c_wanted, consts)]
        if not any(x_keep):
            return tuple(None for _ in checkpoints), tuple(None for _ in consts)

        def pull_back(run_chunk):
            def pull(carry):
                chunk, ct_x, ct_consts = carry
                chunk = chunk - 1
                start = tuple(lax.dynamic_index_in_dim(c, chunk, 0, keepdims=False) for c in checkpoints)

                def chunk_fn(x_part, c_part):
                    x = _merge(start, x_keep, x_part)
                    cs = _merge(consts, c_keep, c_part)
                    return _pick(run_chunk(x, cs, chunk), x_keep)

                _, vjp = jax.vjp(chunk_fn, _pick(start, x_keep), _pick(consts, c_keep))
                ct_x, ct_c = vjp(ct_x)
                return chunk, ct_x, tuple(a + b for a, b in zip(ct_consts, ct_c))

            return pull

        def partial_chunk(x, cs, chunk):
            return self.masked_steps(x, cs, chunk, ran)

        def full_chunk(x, cs, chunk):
            return self.plain_steps(x, cs, self.steps)

        ct_x = tuple(
            jnp.zeros(c.shape[1:], c.dtype) if isinstance(t, SymbolicZero) else t
            for c, t in zip(_pick(checkpoints, x_keep), _pick(ct, x_keep))
        )
        n_full = _min_lane(ran) // self.steps
        carry = (n_chunks, ct_x, tuple(jnp.zeros_like(c) for c in _pick(consts, c_keep)))
        carry = lax.while_loop(lambda carry: carry[0] > n_full, pull_back(partial_chunk), carry)
        _, ct_x, ct_c = lax.while_loop(lambda carry: carry[0] > 0, pull_back(full_chunk), carry)
        x_out = [k and w for k, w in zip(x_keep, x_wanted)]
        ct_x = tuple(t if w else None for t, w in zip(_unpick(ct_x, x_keep), x_out))
        return ct_x, _unpick(ct_c, c_keep)

    def needed(self, used, differentiable):
        """The state leaves that a cotangent reaches at some chunk boundary: those ``used``
        by the caller and, repeatedly, the differentiable ones the body reads to compute a
        needed leaf."""
        needed = list(used)
        changed = True
        while changed:
            changed = False
            for i in range(len(needed)):
                if needed[i] or not differentiable[i]:
                    continue
                if any(needed[j] and i in reads for j, reads in enumerate(self.reads)):
                    needed[i] = changed = True
        return needed

    # Each step below keeps only its input state (and matrix products) for the backward
    # pass and recomputes the rest there: on CPU, writing and reading a stack for every
    # intermediate of the body costs more than computing it twice.

    def plain_steps(self, x, consts, length):
        """``length`` iterations of the loop body, unmasked, as a ``lax.scan``."""

        def step(x, _):
            return self.body_flat(x, consts), None

        step = jax.checkpoint(step, prevent_cse=False, policy=_SAVED)
        return lax.scan(step, x, None, length=length)[0]

    def masked_steps(self, x, consts, chunk, ran):
        """The ``steps`` iterations of chunk ``chunk``, each skipped (``lax.cond``) at or
        after the lane's count of iterations run, ``ran``: the chunk where the loop stopped."""

        def step(x, i):
            return lax.cond(i < ran, lambda x: self.body_flat(x, consts), lambda x: x, x), None

        step = jax.checkpoint(step, prevent_cse=False, policy=_SAVED)
        steps = chunk * self.steps + jnp.arange(self.steps, dtype=jnp.int32)
        return lax.scan(step, x, steps)[0]


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class _Static:
    """A Python value carried in a pytree's structure (it has no leaves): lets a
    ``custom_vjp`` forward rule hand static facts to its backward rule."""

    value: Any


def _state_dependencies(body_flat, x, consts) -> list[set[int]]:
    """For each leaf of the body's output, the state leaves (indices into ``x``) whose
    input values it depends on, read off the body's jaxpr (an equation's outputs depend
    on all its inputs: conservative for nested control flow)."""
    jaxpr = jax.make_jaxpr(body_flat)(x, consts).jaxpr
    deps = {v: {i} for i, v in enumerate(jaxpr.invars[: len(x)])}

    def of(v):
        return set() if isinstance(v, jax.extend.core.Literal) else deps.get(v, set())

    for eqn in jaxpr.eqns:
        d = set().union(*(of(v) for v in eqn.invars))
        for v in eqn.outvars:
            deps[v] = d
    return [of(v) for v in jaxpr.outvars]


def _differentiable(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _pick(xs, keep):
    return tuple(x for x, k in zip(xs, keep) if k)


def _merge(xs, keep, picked):
    picked = iter(picked)
    return tuple(next(picked) if k else x for x, k in zip(xs, keep))


def _unpick(picked, keep):
    """Cotangents for every input: the computed ones where ``keep``, else ``None`` (no
    cotangent for integer and boolean values)."""
    picked = iter(picked)
    return tuple(next(picked) if k else None for k in keep)


def _lane_reduction(reduce, doc):
    """A function that is the identity outside ``vmap`` and, under it, reduces its
    batched argument across the lanes to one unbatched value."""

    @custom_vmap
    def across_lanes(x):
        return x

    @across_lanes.def_vmap
    def across_lanes_vmap(axis_size, in_batched, x):
        (batched,) = in_batched
        return (reduce(x, axis=0) if batched else x), False

    across_lanes.__doc__ = doc
    return across_lanes


_any_lane = _lane_reduction(
    jnp.any,
    "Whether a bool holds in any ``vmap`` lane, unbatched, so that a ``while_loop`` on it "
    "keeps a scalar predicate instead of selecting over its whole carry every iteration.",
)
_min_lane = _lane_reduction(jnp.min, "The least value of an integer across ``vmap`` lanes.")


def _runtime_error(pred, message: str) -> None:
    """Stops the computation with :class:`LoopBoundExceededError` (``message``) when
    ``pred`` holds (in any lane). Eagerly the caller gets that error; under ``jax.jit``,
    a ``jax.errors.JaxRuntimeError`` that carries its text."""

    def check(pred):
        if np.any(pred):
            raise LoopBoundExceededError(message)

    jax.debug.callback(check, pred)


def _check_max_steps(max_steps) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
        raise TypeError(
            "bounded_while_loop: max_steps must be a Python int (a static bound on the "
            f"number of iterations), got {max_steps!r} of type {type(max_steps).__name__}."
        )
    if max_steps < 1:
        raise ValueError(f"bounded_while_loop: max_steps must be at least 1, got {max_steps}.")
    return int(max_steps)


def _match_body_types(body_fun, init_val):
    """Checks that ``body_fun`` keeps the state's structure, shapes and dtypes (as
    ``lax.while_loop`` does) and makes weakly typed initial leaves strongly typed where the
    body's are, as ``lax.while_loop`` promotes them."""
    out = jax.eval_shape(body_fun, init_val)
    in_leaves, in_tree = jax.tree_util.tree_flatten_with_path(init_val)
    out_leaves, out_tree = jax.tree_util.tree_flatten(out)
    if in_tree != out_tree:
        raise TypeError(
            "bounded_while_loop: body_fun must return a value with the same pytree "
            f"structure as init_val; init_val is {in_tree}, body_fun returned {out_tree}."
        )
    fixed = []
    for (path, x), o in zip(in_leaves, out_leaves):
        t = jax.typeof(x)
        if t.shape != o.shape or t.dtype != o.dtype:
            raise TypeError(
                "bounded_while_loop: body_fun must keep the shape and dtype of each part of "
                f"the loop state; init_val{jax.tree_util.keystr(path)} is {t.str_short()} "
                f"but body_fun returns {o.dtype.name}{list(o.shape)} for it. Cast the "
                "initial value (or the body's result) so that both agree."
            )
        if t.weak_type and not o.weak_type:
            x = lax.convert_element_type(x, o.dtype)
        fixed.append(x)
    return jax.tree_util.tree_unflatten(in_tree, fixed)


def _nbytes(x) -> int:
    t = jax.typeof(x)
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def _residual_bytes(body_flat, x, consts) -> int:
    """Estimates the bytes the backward pass keeps per step: the residuals of
    ``jax.vjp`` of a step as the recomputation runs it (its input state and matrix products,
    see ``_SAVED``), less loop invariants (values read from outside)."""

    def residuals(x, consts):
        step = jax.checkpoint(lambda x: body_flat(x, consts), policy=_SAVED)
        return jax.tree_util.tree_leaves(jax.vjp(step, x)[1])

    closed = jax.make_jaxpr(residuals)(x, consts)
    invariant = set(closed.jaxpr.invars[len(x) :]) | set(closed.jaxpr.constvars)
    total = 0
    for var in closed.jaxpr.outvars:
        if isinstance(var, jax.extend.core.Literal) or var in invariant:
            continue
        total += int(np.prod(var.aval.shape, dtype=np.int64)) * np.dtype(var.aval.dtype).itemsize
    return max(total, sum(_nbytes(leaf) for leaf in x))
