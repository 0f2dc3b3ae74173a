"""``if`` statements and conditional expressions."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from autolax.ops import registry
from autolax.ops.state import State, is_tracer, join_branches
from autolax.transpile.context import Construct
from autolax.ops.tracing import pack, trace


def predicate(pred, where: str):
    """A traced condition as a boolean scalar, with Python's truthiness (nonzero is true)."""
    __tracebackhide__ = True
    if getattr(pred, "shape", ()) != ():
        raise ValueError(
            f"the condition at {where} is a traced array of shape {tuple(pred.shape)}; the truth "
            "value of an array with more than one element is ambiguous.\n"
            "Fix: reduce it to one value first, e.g. `if jnp.any(c):` or `if jnp.all(c):`."
        )
    if pred.dtype != jnp.bool_:
        pred = pred != 0
    return pred


# Primitives that only move or retype values: a branch made of these computes nothing that
# could fail, loop, produce a NaN or have an effect, so running it untaken is harmless.
_MOVES = frozenset({"convert_element_type", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "copy", "copy_p"})


def only_moves(traced) -> bool:
    """True when a traced branch assigns values without computing anything (``found = i;
    break_ = True``): the branches of the flags that ``break``/``return`` lower to."""
    jaxpr = traced.jaxpr.jaxpr
    return not jaxpr.effects and all(eqn.primitive.name in _MOVES for eqn in jaxpr.eqns)


def _select(pred, on_true, on_false):
    on_true, on_false = jnp.asarray(on_true), jnp.asarray(on_false)  # Python numbers stay weakly typed
    pred = jnp.broadcast_to(pred, on_true.shape)
    if on_true.dtype == jnp.bool_:
        # The same as a select, but XLA's CPU backend runs a select of booleans inside a
        # loop body markedly slower than this (it also folds `flag = True` to `pred | flag`).
        return (pred & on_true) | (~pred & on_false)
    return lax.select(pred, on_true, on_false)


def staged_cond(pred, true_fn, false_fn, operands, construct, in_names=None, out_names=None, select_ok=False):
    """Stages ``true_fn(*operands) if pred else false_fn(*operands)`` with ``lax.cond``.

    Each function is traced once; their outputs (``out_names``, default: the construct's
    names) are reconciled to one type. Returns ``(outputs, how)``: the tuple of outputs and
    ``"lax.cond"``, or ``"lax.select"`` when ``select_ok`` and both branches only move
    values: then both run and ``lax.select`` picks, which saves the cost of a conditional
    (a ``lax.cond`` in a loop body costs about as much as a few dozen arithmetic
    operations on CPU) and has the same values, gradients and batching.
    """
    __tracebackhide__ = True
    out_names = list(construct.names if out_names is None else out_names)
    in_names = list(construct.names if in_names is None else in_names)
    pred = predicate(pred, construct.where)
    in_state = State.of(in_names, operands, construct)
    registry.count_trace(construct)
    try:
        true_traced = trace(true_fn, in_state, out_names, construct=construct)
        false_traced = trace(false_fn, in_state, out_names, construct=construct)
    except Exception as exc:
        registry.add_staging_note(exc, construct)
        raise
    out = join_branches(true_traced.out, false_traced.out, construct)
    dynamic = in_state.dynamic(operands)
    if select_ok and only_moves(true_traced) and only_moves(false_traced):
        on_true, on_false = true_traced(dynamic, out)[0], false_traced(dynamic, out)[0]
        results = [_select(pred, t, f) for t, f in zip(on_true, on_false)]
        return tuple(out.rebuild(results)), "lax.select"
    results = lax.cond(
        pred,
        lambda *dyn: true_traced(dyn, out)[0],
        lambda *dyn: false_traced(dyn, out)[0],
        *dynamic,
    )
    return tuple(out.rebuild(results)), "lax.cond"


@registry.user_facing
def cond(pred, if_true, if_false, *operands):
    """``if pred: <if_true> else: <if_false>``, decided when it runs.

    Equivalent Python::

        def cond(pred, if_true, if_false, *operands):
            if pred:
                return if_true(*operands)
            return if_false(*operands)

    A traced ``pred`` stages both branches with ``lax.cond``; each returns the variables
    assigned in the ``if`` that are used after it, reconciled to one type.
    """
    __tracebackhide__ = True
    construct = registry.construct_of(if_true)
    if not is_tracer(pred):
        registry.record(construct, "python (static)")
        return if_true(*operands) if pred else if_false(*operands)
    code = if_true.__code__
    params = code.co_varnames[: code.co_argcount]
    outputs, how = staged_cond(pred, if_true, if_false, operands, construct, in_names=params, select_ok=True)
    registry.record(construct, how)
    return pack(outputs, len(construct.names))


@registry.user_facing
def if_else(test, if_true, if_false):
    """``if_true() if test else if_false()``: a conditional expression with a traced ``test``
    becomes ``lax.cond`` (only the chosen side runs, as in Python)."""
    __tracebackhide__ = True
    if not is_tracer(test):
        registry.record(registry.expression_site("ternary"), "python (static)")
        return if_true() if test else if_false()
    site = registry.expression_site("ternary", always=True)
    construct = Construct(
        "ternary", site.filename, site.lineno, 0, site.source, names=("value",),
        descriptions={"value": "the value of the conditional expression"},
    )
    pred = predicate(test, site.where)
    empty = State([])
    a = trace(if_true, empty, ["value"], construct=construct)
    b = trace(if_false, empty, ["value"], construct=construct)
    out = join_branches(a.out, b.out, construct)
    result = lax.cond(pred, lambda: a((), out)[0], lambda: b((), out)[0])
    registry.record(site, "lax.cond")
    return out.rebuild(result)[0]


__all__ = ["cond", "if_else", "predicate", "staged_cond"]
