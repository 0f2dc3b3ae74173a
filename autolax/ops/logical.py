"""``and`` / ``or`` / ``not`` with Python semantics for concrete operands and ``jnp``
semantics for traced ones."""

from __future__ import annotations

import jax.numpy as jnp

from autolax.ops import report
from autolax.ops.control import predicate
from autolax.ops.state import is_tracer


def _truth(x, where):
    __tracebackhide__ = True
    return predicate(x, where)


def _is_bool(x) -> bool:
    return isinstance(x, bool) or getattr(x, "dtype", None) == jnp.bool_


def _site(kind):
    return report.expression_site(kind, depth=3)


@report.user_facing
def and_(first, *rest):
    """``first and rest[0]() and rest[1]() ...``: later operands are thunks, evaluated only
    if Python would evaluate them. Traced operands combine with ``jnp.logical_and`` (or
    ``jnp.where`` for non-booleans, which keeps Python's "first falsy operand" result)."""
    __tracebackhide__ = True
    site = _site("and")
    value, traced = first, False
    for thunk in rest:
        if not is_tracer(value):
            if not value:
                break
            value = thunk()
            continue
        traced = True
        other = thunk()
        if _is_bool(value) and _is_bool(other):
            value = jnp.logical_and(value, other)
        else:
            value = jnp.where(_truth(value, site.where if site else "an `and`"), other, value)
    traced = traced or is_tracer(value)
    report.record(site, "jnp.logical_and" if traced else "python (static)")
    return value


@report.user_facing
def or_(first, *rest):
    """``first or rest[0]() or ...`` (see ``and_``)."""
    __tracebackhide__ = True
    site = _site("or")
    value, traced = first, False
    for thunk in rest:
        if not is_tracer(value):
            if value:
                break
            value = thunk()
            continue
        traced = True
        other = thunk()
        if _is_bool(value) and _is_bool(other):
            value = jnp.logical_or(value, other)
        else:
            value = jnp.where(_truth(value, site.where if site else "an `or`"), value, other)
    traced = traced or is_tracer(value)
    report.record(site, "jnp.logical_or" if traced else "python (static)")
    return value


@report.user_facing
def not_(x):
    """``not x``; a traced ``x`` gives ``jnp.logical_not(x)`` (``x == 0`` for numbers)."""
    __tracebackhide__ = True
    site = _site("not")
    if not is_tracer(x):
        report.record(site, "python (static)")
        return not x
    report.record(site, "jnp.logical_not")
    return jnp.logical_not(_truth(x, site.where if site else "a `not`"))
