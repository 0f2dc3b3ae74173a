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
* Backward pass: the chunks run, last first. Each chunk's states are recomputed from its
  checkpoint into a buffer of ``K + 1`` states (an inner ``while_loop`` that stores the state
  after each step, the value the next step reads anyway), then walked in reverse,
  pulling the cotangent back through one iteration at a time (``jax.vjp`` of the body) and
  summing the cotangents of the values the loop reads without carrying them. Every loop
  runs exactly the iterations the loop ran: no masked steps, no scan over ``max_steps``.
  Only the parts of the state that the caller's cotangent can reach are differentiated
  (``custom_vjp`` with symbolic zeros plus the body's data dependencies).
  Memory: ``C + K + 1`` states (about ``2 * sqrt(max_steps)``) plus one iteration's residuals;
  time: each iteration runs forward, is recomputed, and is pulled back (measured on CPU:
  about four to six times the plain loop for a body that does real work per iteration; 9 to
  15 times for a body that is one cheap pass over a large state, whose own derivative costs
  several passes: ``benchmarks/results_grad_while.md``).
* Under ``jax.vmap`` every loop runs while any lane still runs (``custom_vmap``
  predicates), so no loop selects over its whole carry (the buffers) in every iteration; a
  lane's iterations past its own count are masked by a select across the lanes. Outside
  ``vmap`` every iteration the backward loops run is one the loop ran: no mask, no
  ``lax.cond`` (on CPU a conditional per iteration cost as much as a cheap body's derivative).
* Needing more than ``max_steps`` iterations under differentiation is a run-time error,
  never a truncated derivative.

Derivatives: ``grad``, ``value_and_grad``, ``vjp``, ``jacrev``, and forward over reverse
(``hessian``, ``jacfwd(grad)``). Not supported, as for every ``custom_vjp``: forward mode of
the loop itself (``jvp``, ``jacfwd``; ``linearize`` returns but its linear function raises),
and reverse over reverse (``grad`` of ``grad``: the backward pass is itself a ``while_loop``).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jax.custom_derivatives import SymbolicZero

from autolax.runtime import compat
from autolax.runtime.errors import RuntimeCheckError
from autolax.runtime.ops import checks

__all__ = [
    "DEFAULT_BUDGET_BYTES",
    "LoopBoundExceededError",
    "bounded_while_loop",
    "chunking",
]

DEFAULT_BUDGET_BYTES = 64 * 2**20
"""The memory the derivative's buffers of one loop may take, per ``vmap`` lane, when a call
gives no ``budget_bytes``: 64 MiB, e.g. ``max_steps`` up to about a billion for a 1 KiB
state, 65,000 for a 128 KiB state, 990 for a 1 MiB state."""

JVP_UNSUPPORTED = (
    "bounded_while_loop: forward-mode differentiation (jax.jvp, jax.jacfwd) of a bounded "
    "while loop is not supported: its derivative is a "
    "custom reverse-mode rule (jax.custom_vjp). Use reverse mode (jax.grad, jax.vjp, "
    "jax.jacrev); for second derivatives use forward over reverse, as jax.hessian does "
    "(jax.jacfwd(jax.jacrev(f)))."
)


_FORWARD = contextvars.ContextVar("autolax_forward_mode", default=False)


@contextlib.contextmanager
def forward_mode():
    """Bounded loops traced in this block are plain ``while_loop``s, which have a
    forward-mode derivative. For a ``jax.jit`` object called with ``jvp``'s tracers
    (``jax.jvp(autolax.jit(f))``): the ``jit`` hides them from the loop, whose
    ``custom_vjp`` JAX could not differentiate forward (``autolax.jitted.Jitted``)."""
    token = _FORWARD.set(True)
    try:
        yield
    finally:
        _FORWARD.reset(token)


class LoopBoundExceededError(RuntimeCheckError):
    """A loop differentiated through :func:`bounded_while_loop` needed more than its
    ``max_steps`` iterations.

    The derivative of a bounded loop covers only its first ``max_steps`` iterations; rather
    than return the derivative of a truncated loop, the computation stops with this error.
    Raise the loop's ``max_steps`` (memory grows with its square root) or make the loop exit
    sooner.

    The check runs inside the computation: where ``jax.grad`` is inside the traced function,
    as an output of the loop that ``autolax.jit`` raises after the program returns (see
    ``autolax.runtime.ops.checks``); where JAX differentiates a traced program later (``jax.grad``
    of a ``jax.jit`` function), by a ``jax.debug.callback``. Called eagerly, the
    caller gets this error. Under plain ``jax.jit`` JAX reports it as a
    ``jax.errors.JaxRuntimeError`` (a ``RuntimeError``) whose message ends with this error's
    class name and text; the computation returns no result. (On CPU a program containing a
    host callback runs synchronously, so the error comes from the call itself.)
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
    ``jax.value_and_grad`` can differentiate if the loop runs at most ``max_steps`` iterations.

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
      budget_bytes: the most memory the derivative's buffers may take (about ``2 *
        sqrt(max_steps)`` loop states, :func:`chunking`; one iteration's residuals are not
        counted), per ``vmap`` lane. ``None``: :data:`DEFAULT_BUDGET_BYTES`. A budget too
        small for ``max_steps`` is a ``ValueError`` at trace time.
      error_message: replaces the text of the error for exceeding ``max_steps``.

    Returns the final loop state, like ``lax.while_loop``.

    Values ``cond_fun``/``body_fun`` read without carrying them (closed-over arrays,
    tracers of an enclosing transform, whether differentiated or only batched by ``vmap``)
    get derivatives too. The derivatives supported and their cost: this module's docstring.
    Forward mode (``jvp``, ``jacfwd``) of a loop that sees ``jvp``'s tracers runs it as a plain
    ``while_loop`` (a ``custom_vjp`` has no forward mode); where another transform's tracers
    hide them (``jvp`` of ``vmap``) it is a ``TypeError`` that names the fix when called eagerly
    and JAX's own ``TypeError`` under ``jit``. ``jax.debug.print``/``callback`` in the body run
    once per iteration in the forward pass and twice more in the backward pass (chunk by chunk
    from the last: each chunk's iterations in order, then in reverse).
    """
    __tracebackhide__ = True
    max_steps = _check_max_steps(max_steps)
    budget_bytes = DEFAULT_BUDGET_BYTES if budget_bytes is None else budget_bytes
    leaves, treedef, consts, cond_flat, body_flat = _flatten_loop(cond_fun, body_fun, init_val)
    steps, chunks = chunking(max_steps, sum(_nbytes(leaf) for leaf in leaves), budget_bytes)
    message = error_message or _exceeded_message(max_steps)
    if _FORWARD.get() or compat.forward_mode((*leaves, *consts)):  # jvp / jacfwd: see above
        return treedef.unflatten(lax.while_loop(lambda x: cond_flat(x, consts), lambda x: body_flat(x, consts), leaves))
    chunked = _Chunked(cond_flat, body_flat, max_steps, steps, chunks, _state_dependencies(body_flat, leaves, consts))
    carried = compat.differentiated((*leaves, *consts))  # see _differentiable_loop
    out, exceeded = _call_differentiable(_differentiable_loop(chunked, message, carried), leaves, consts)
    if carried:
        checks.fail_unless(exceeded == 0, lambda: LoopBoundExceededError(message))
    return treedef.unflatten(out)


def _flatten_loop(cond_fun, body_fun, init_val):
    """The loop on flat tuples: ``(leaves, treedef, consts, cond_flat, body_flat)``, where
    ``cond_flat(x, consts)`` and ``body_flat(x, consts)`` take the state's leaves and the
    values the two functions read without carrying them (``consts``, by ``closure_convert``).
    ``init_val`` is first checked against what the body returns (``_match_body_types``)."""
    init_val = _match_body_types(body_fun, init_val)
    leaves, treedef = jax.tree_util.tree_flatten(init_val)
    cond_c, cond_consts = closure_convert(cond_fun, init_val)
    body_c, body_consts = closure_convert(body_fun, init_val)
    n_cond = len(cond_consts)

    def cond_flat(x, consts):
        return cond_c(treedef.unflatten(x), *consts[:n_cond])

    def body_flat(x, consts):
        out = body_c(treedef.unflatten(x), *consts[n_cond:])
        return tuple(jax.tree_util.tree_leaves(out))

    return tuple(leaves), treedef, (*cond_consts, *body_consts), cond_flat, body_flat


def _exceeded_message(max_steps: int) -> str:
    return (
        f"bounded_while_loop: the loop needed more than max_steps={max_steps} iterations "
        "while being differentiated, so its derivative would be that of a truncated loop. "
        "Raise max_steps (memory grows with its square root) or make the loop exit sooner."
    )


def _differentiable_loop(chunked: _Chunked, message: str, carried: bool):
    """The loop as a ``jax.custom_vjp`` of ``(leaves, consts)``: returns the final leaves and
    whether a differentiated call needed more than ``max_steps`` iterations (an int32).

    Differentiated where the loop is traced (jax.grad inside the traced function,
    ``carried``): the bound's check is that output -- 0 when not differentiated, else whether
    the loop needed more steps -- and a check of the program (``checks.fail_unless``), which
    ``autolax.jit`` returns with the outputs. Otherwise (jax.grad of a jitted function, whose
    forward rule JAX traces later) a host callback in the forward rule raises it."""
    cond_flat, body_flat = chunked.cond_flat, chunked.body_flat

    @jax.custom_vjp
    def loop(x, consts):
        return lax.while_loop(lambda x: cond_flat(x, consts), lambda x: body_flat(x, consts), x), jnp.int32(0)

    def loop_fwd(x, consts):
        # With symbolic_zeros, the arguments say which of them are being differentiated
        # and the backward pass learns which outputs the caller uses.
        wanted = _Static((tuple(a.perturbed for a in x), tuple(a.perturbed for a in consts)))
        x, consts = tuple(a.value for a in x), tuple(a.value for a in consts)
        x, checkpoints, n_chunks, ran = chunked.forward(x, consts)
        exceeded = cond_flat(x, consts)
        if not carried:
            _runtime_error(exceeded, message)
        return (x, jnp.where(exceeded, 1, 0).astype(jnp.int32)), (checkpoints, n_chunks, ran, consts, wanted)

    def loop_bwd(residuals, ct):
        return chunked.backward(*residuals, ct[0])

    loop.defvjp(loop_fwd, loop_bwd, symbolic_zeros=True)
    return loop


def _call_differentiable(loop, leaves: tuple, consts: tuple):
    """Calls the ``custom_vjp`` loop, naming the fix when JAX's forward mode reaches it."""
    try:
        return loop(leaves, consts)
    except TypeError as err:
        # Eager jax.jvp raises this while binding; staged (jit) jvp raises it later from
        # JAX's own frames, where JAX's text (same meaning, no fix) is what users see.
        if "forward-mode autodiff (jvp) to a custom_vjp" in str(err):
            raise TypeError(JVP_UNSUPPORTED) from err
        raise


def chunking(max_steps: int, state_bytes: int, budget_bytes: int) -> tuple[int, int]:
    """Splits ``max_steps`` into ``chunks`` chunks of ``steps`` steps (``steps * chunks >=
    max_steps``) and returns ``(steps, chunks)``.

    The derivative keeps ``chunks`` checkpoints and, while pulling back through one chunk,
    that chunk's ``steps + 1`` states: ``(chunks + steps + 1) * state_bytes`` in all, least at
    ``steps = ceil(sqrt(max_steps))``, where it is about ``2 * sqrt(max_steps) *
    state_bytes``. The time does not depend on the split (every iteration runs once forward,
    once recomputed and once pulled back), except that both buffers are zeroed on every call,
    so the least memory is also the fastest. Raises ``ValueError`` if that memory exceeds
    ``budget_bytes``.
    """
    steps = math.isqrt(max_steps - 1) + 1
    chunks = -(-max_steps // steps)
    need = (chunks + steps + 1) * max(int(state_bytes), 1)
    if need > budget_bytes:
        raise ValueError(
            f"bounded_while_loop: max_steps={max_steps} with a loop state of "
            f"{state_bytes:,} bytes needs at least {need:,} bytes for its derivative "
            f"({chunks} checkpoints and {steps + 1} states of one chunk), over "
            f"budget_bytes={budget_bytes:,}. Pass budget_bytes={need} or more, or lower "
            "max_steps."
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
            checkpoints = tuple(lax.dynamic_update_index_in_dim(c, leaf, chunk, 0) for c, leaf in zip(checkpoints, x))

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
        does not use a part) back through the iterations run. Returns the cotangents of the
        initial state and of ``consts`` (``None`` where ``wanted`` says an input is not being
        differentiated).

        For each chunk run, last first: recompute its states from its checkpoint into a
        buffer (row ``i`` the state before its step ``i``), then walk them in reverse, pulling
        the cotangent back through one iteration at a time (``jax.vjp`` of the body). Only
        the state leaves a cotangent can reach are differentiated (``needed``)."""
        x_wanted, c_wanted = wanted.value
        used = [_differentiable(c) and not isinstance(t, SymbolicZero) for c, t in zip(checkpoints, ct)]
        x_keep = self.needed(used, [_differentiable(c) for c in checkpoints])
        c_keep = [w and _differentiable(c) for w, c in zip(c_wanted, consts)]
        if not any(x_keep):
            return tuple(None for _ in checkpoints), tuple(None for _ in consts)
        rows = _Rows([jax.typeof(lax.index_in_dim(c, 0, 0, keepdims=False)) for c in checkpoints])

        def one_chunk(carry):
            chunk, ct_x, ct_c, states = carry
            chunk = chunk - 1
            start = tuple(lax.dynamic_index_in_dim(c, chunk, 0, keepdims=False) for c in checkpoints)
            lane_steps = jnp.clip(ran - chunk * self.steps, 0, self.steps)
            steps = _max_lane(lane_steps)
            states = self._recompute(rows, states, start, consts, lane_steps, steps)
            ct_x, ct_c = self._pull(rows, states, consts, (x_keep, c_keep), lane_steps, steps, (ct_x, ct_c))
            return chunk, ct_x, ct_c, states

        ct_x = tuple(
            jnp.zeros(c.shape[1:], c.dtype) if isinstance(t, SymbolicZero) else t
            for c, t in zip(_pick(checkpoints, x_keep), _pick(ct, x_keep))
        )
        ct_c = tuple(jnp.zeros_like(c) for c in _pick(consts, c_keep))
        # steps + 1 rows: the recompute also stores the state after the chunk's last step.
        carry = (n_chunks, ct_x, ct_c, rows.empty(self.steps + 1))
        _, ct_x, ct_c, _ = lax.while_loop(lambda c: c[0] > 0, one_chunk, carry)
        x_out = [k and w for k, w in zip(x_keep, x_wanted)]
        ct_x = tuple(t if w else None for t, w in zip(_unpick(ct_x, x_keep), x_out))
        return ct_x, _unpick(ct_c, c_keep)

    def _recompute(self, rows, states, start, consts, lane_steps, steps):
        """One chunk's states, recomputed from its checkpoint ``start``: row ``i`` of the
        buffer ``states`` is the state before the chunk's step ``i``."""

        def recompute(carry):
            # Stores the state after the step (row i + 1), which the next step reads
            # anyway; storing the state before it made XLA copy it every iteration.
            i, x, states = carry
            x = _lane_where(i < lane_steps, self.body_flat(x, consts), x)
            return i + 1, x, rows.write(states, i + 1, x)

        states = rows.write(states, 0, start)
        return lax.while_loop(lambda c: c[0] < steps, recompute, (jnp.int32(0), start, states))[2]

    def _pull(self, rows, states, consts, keep, lane_steps, steps, ct):
        """Pulls the cotangents ``ct`` (of the kept state leaves and consts) back through one
        chunk's steps, last first (``jax.vjp`` of the body at each recomputed state)."""
        x_keep, c_keep = keep

        def step_fn(x, x_part, c_part):
            out = self.body_flat(_merge(x, x_keep, x_part), _merge(consts, c_keep, c_part))
            return _pick(out, x_keep)

        def pull(carry):
            i, ct_x, ct_c = carry
            i = i - 1
            x = tuple(rows.read(states, i))
            _, vjp = jax.vjp(lambda xp, cp: step_fn(x, xp, cp), _pick(x, x_keep), _pick(consts, c_keep))
            dx, dc = vjp(ct_x)
            pulled = (dx, tuple(a + b for a, b in zip(ct_c, dc)))
            ct_x, ct_c = _lane_where(i < lane_steps, pulled, (ct_x, ct_c))
            return i, ct_x, ct_c

        _, ct_x, ct_c = lax.while_loop(lambda c: c[0] > 0, pull, (steps, *ct))
        return ct_x, ct_c

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


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class _Static:
    """A Python value carried in a pytree's structure (it has no leaves): lets a
    ``custom_vjp`` forward rule hand static facts to its backward rule."""

    value: Any


def closure_convert(fun, example):
    """``fun`` as a function of ``(val, *consts)`` and the ``consts`` it reads: every tracer
    ``fun`` reads without taking it as an argument (closed over directly, or through the
    constants of a jaxpr it evaluates).

    Unlike ``jax.closure_convert``, which hoists only values that may carry a tangent, this
    hoists every tracer: a ``custom_vjp`` rule runs outside the transforms that made a
    closed-over, unperturbed tracer (e.g. a ``vmap`` tracer of a value that is batched but
    not differentiated), so such a value kept in a closure would escape its trace. Concrete
    constants stay in the closure."""
    closed, out_shape = jax.make_jaxpr(fun, return_shape=True)(example)
    # The closure below keeps the jaxpr and the concrete constants only, not `closed`,
    # whose constants include the hoisted tracers.
    jaxpr, consts = closed.jaxpr, closed.consts
    out_tree = jax.tree_util.tree_structure(out_shape)
    hoist = [isinstance(c, compat.Tracer) for c in consts]
    kept = [c for c, h in zip(consts, hoist) if not h]
    hoisted = [c for c, h in zip(consts, hoist) if h]

    def converted(val, *values):
        kept_it, hoisted_it = iter(kept), iter(values)
        consts = [next(hoisted_it) if h else next(kept_it) for h in hoist]
        out = jax.core.eval_jaxpr(jaxpr, consts, *jax.tree_util.tree_leaves(val))
        return jax.tree_util.tree_unflatten(out_tree, out)

    return converted, hoisted


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


class _Rows:
    """Buffers that hold one value of a list of arrays (of fixed types) per row. Arrays of
    at most :attr:`SMALL` elements share one buffer per dtype, side by side in a row, so
    writing or reading a row is one ``dynamic_update_slice`` / ``dynamic_slice`` per dtype
    and per large array rather than per array: on CPU each is an operation of its own per
    iteration, and a state's scalars (time, step size, counters) would otherwise cost
    more than a cheap body."""

    SMALL = 1024

    def __init__(self, avals):
        self.avals = [(tuple(a.shape), a.dtype) for a in avals]
        self.slots = []  # per array: (buffer, offset in the row, or None for a buffer of its own)
        self.buffers = []  # per buffer: (row shape, dtype)
        packed = {}
        for shape, dtype in self.avals:
            size = math.prod(shape)
            if size > self.SMALL or jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
                self.slots.append((len(self.buffers), None))
                self.buffers.append((shape, dtype))
                continue
            if dtype not in packed:
                packed[dtype] = len(self.buffers)
                self.buffers.append(((0,), dtype))
            b = packed[dtype]
            self.slots.append((b, self.buffers[b][0][0]))
            self.buffers[b] = ((self.buffers[b][0][0] + size,), dtype)

    def empty(self, n):
        return tuple(jnp.zeros((n, *shape), dtype) for shape, dtype in self.buffers)

    def write(self, buffers, i, values):
        parts = [[] for _ in self.buffers]
        for (b, offset), v in zip(self.slots, values):
            parts[b].append(v if offset is None else jnp.ravel(v))
        rows = [
            p[0] if len(p) == 1 and p[0].shape == shape else jnp.concatenate(p)
            for p, (shape, _) in zip(parts, self.buffers)
        ]
        return tuple(lax.dynamic_update_index_in_dim(buf, row, i, 0) for buf, row in zip(buffers, rows))

    def read(self, buffers, i):
        rows = [lax.dynamic_index_in_dim(buf, i, 0, keepdims=False) for buf in buffers]
        return [
            rows[b] if offset is None else rows[b][offset : offset + math.prod(shape)].reshape(shape)
            for (b, offset), (shape, _) in zip(self.slots, self.avals)
        ]


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
_max_lane = _lane_reduction(jnp.max, "The greatest value of an integer across ``vmap`` lanes.")


@jax.custom_jvp
def _lane_where(pred, new, old):
    """``new`` where ``pred`` holds, else ``old`` (pytrees of one structure), for a ``pred``
    that can fail only in some lanes of a ``vmap``: unbatched it is ``new`` with no select.

    The backward pass runs each loop to the greatest trip count over the lanes, so outside
    ``vmap`` (or with an unbatched count) every iteration is one the loop ran and ``pred``
    holds; a ``lax.cond`` there cost a conditional per iteration (operand copies and a
    nested dispatch, about as much as a cheap body's whole derivative on CPU). Under
    ``vmap`` a lane past its own count keeps ``old``, as the ``lax.cond`` did (``vmap``
    made that a select of both branches too). Its derivative (forward over reverse) is a
    select, so reverse mode over it reaches JAX's own error for the ``while_loop``."""
    return _lane_select(pred, new, old)


@_lane_where.defjvp
def _lane_where_jvp(primals, tangents):
    pred, new, old = primals
    _, t_new, t_old = tangents

    def select(a, b):
        return a if a.dtype == jax.dtypes.float0 else jnp.where(pred, a, b)

    return _lane_select(pred, new, old), jax.tree_util.tree_map(select, t_new, t_old)


@custom_vmap
def _lane_select(pred, new, old):
    del pred, old
    return new


@_lane_select.def_vmap
def _lane_select_vmap(axis_size, in_batched, pred, new, old):
    pred_batched, new_batched, old_batched = in_batched
    if not pred_batched:
        return new, new_batched

    def select(n, o, n_batched, o_batched):
        n = n if n_batched else jnp.broadcast_to(n, (axis_size, *jnp.shape(n)))
        o = o if o_batched else jnp.broadcast_to(o, (axis_size, *jnp.shape(o)))
        return jnp.where(pred.reshape((axis_size,) + (1,) * (n.ndim - 1)), n, o)

    out = jax.tree_util.tree_map(select, new, old, new_batched, old_batched)
    return out, jax.tree_util.tree_map(lambda _: True, new)


def _runtime_error(pred, message: str) -> None:
    """Stops the computation with :class:`LoopBoundExceededError` (``message``) when
    ``pred`` holds (in any lane), through autolax's run-time checks (``autolax.runtime.ops.checks``:
    ``autolax.jit`` raises the error itself; plain ``jax.jit`` a ``JaxRuntimeError`` with its
    text). It runs inside the derivative's own computation, so it calls back at once."""
    checks.fail_at_once_unless(jnp.logical_not(pred), lambda: LoopBoundExceededError(message))


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
    return int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize  # PRNG key dtypes have one too
