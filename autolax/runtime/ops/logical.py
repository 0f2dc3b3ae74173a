"""``and`` / ``or`` / ``not`` with Python semantics for concrete operands, and staged for
traced ones (only the operands Python would evaluate have effects); ``is`` / ``is not``,
which a traced value answers only where Python's answer is known (``is_``)."""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.runtime import errors, plan, sites
from autolax.runtime.ops import checks, meaning, report
from autolax.runtime.ops.control import cond_of_traced, fails_when_taken, predicate
from autolax.runtime.ops.state import State, is_tracer
from autolax.runtime.ops.tracing import trace


def harmless(traced) -> bool:
    """May a traced operand or loop test be evaluated where Python would skip it
    (``plan.evaluate_anyway`` decides, given the primitives of its jaxpr; making objects or
    raising is an effect)?"""
    jaxpr = traced.jaxpr.jaxpr
    return plan.evaluate_anyway(_primitives(jaxpr), bool(traced.makers or traced.raises or jaxpr.effects))


def _primitives(jaxpr):
    """The primitives ``jaxpr`` runs, with those of the jitted functions it calls (``jnp.where``
    is a ``jit`` call of a ``select_n``; ``jnp.linalg.norm`` one of a ``sqrt``)."""
    for eqn in jaxpr.eqns:
        inner = eqn.params.get("jaxpr") if eqn.primitive.name in ("jit", "pjit") else None
        if inner is not None:
            yield from _primitives(getattr(inner, "jaxpr", inner))
        else:
            yield eqn.primitive.name


def _is_bool(x) -> bool:
    return isinstance(x, bool) or getattr(x, "dtype", None) == jnp.bool_


_ROLES = {"value": "the value of the boolean expression"}


def _logical(kind, a, b):
    """``jnp.logical_and`` / ``logical_or`` of two booleans; of two boolean arrays of one shape,
    the bare ``lax`` operation (jnp's would first convert each operand to the bool it is)."""
    if all(getattr(x, "dtype", None) == jnp.bool_ for x in (a, b)) and jnp.shape(a) == jnp.shape(b):
        return (lax.bitwise_and if kind == "and" else lax.bitwise_or)(a, b)
    return (jnp.logical_and if kind == "and" else jnp.logical_or)(a, b)


_AMBIGUOUS = "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"
_EMPTY = "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not empty."


def _operand_shape(traced):
    """The shape of the one array a traced operand gives, or None (a pytree, a Python value,
    an operand that raises)."""
    if traced.raises or traced.out is None or not traced.out.specs:
        return None
    spec = traced.out.specs[0]
    if len(spec.leaves) != 1 or spec.treedef != jax.tree_util.tree_structure(0):
        return None
    leaf = spec.leaves[0]
    return tuple(leaf.aval.shape) if leaf.dynamic else tuple(np.shape(leaf.value))


def _combine(kind, value, thunk, where, caught_by=(), tested=False):
    """``value and thunk()`` (``kind`` "and") or ``value or thunk()`` for a traced ``value``,
    and the form it took. An operand that fails while traced with an error of the user's
    code raises it when the program evaluates it (``control.fails_when_taken``).

    ``tested``: the operand is the last of a chain that is the condition of an ``if`` /
    ``while`` / ``assert``, whose truth Python asks for where the chain reaches it. An array
    of several items or none there is Python's ``ValueError`` (ambiguous truth) on the runs that
    reach it -- a run-time check -- and the chain's truth on the others (Python never
    evaluates it there). As a value, an operand whose shape is not the first one's is
    refused: Python's result would have one shape or the other by data."""
    __tracebackhide__ = True
    site = sites.Site(kind, where.filename, where.lineno, names=("value",), roles=_ROLES)
    pred = predicate(value, site.where)
    fails = fails_when_taken(site, f"the operand after `{kind}`", caught_by)
    try:
        rest = trace(thunk, State([]), ["value"], site=site, fails=fails)
    except report.PROGRAM_ERRORS as exc:
        if not meaning.taken_only(exc):
            raise  # autolax's and JAX's own errors say what went wrong (and let a loop fall back)
        if checks.refused_in_try(meaning.python_type(exc), caught_by):
            raise errors.make(
                "operand-fails-in-try", kind=kind, where=site.where, source=site.source, error=report.python_error(exc)
            ) from exc
        raise errors.make(
            "operand-fails",
            kind=kind,
            where=site.where,
            source=site.source,
            error=report.python_error(exc),
            needed="true" if kind == "and" else "false",
        ) from exc
    shape = _operand_shape(rest)
    if tested and shape is not None and int(np.prod(shape)) != 1 and harmless(rest):
        reached = pred if kind == "and" else jnp.logical_not(pred)
        message = _AMBIGUOUS if int(np.prod(shape)) else _EMPTY
        checks.fail_unless(jnp.logical_not(reached), lambda: ValueError(message))
        truth = jnp.logical_and(pred, False) if kind == "and" else pred
        return truth, f"jnp.logical_{kind}"
    if shape is not None and shape != tuple(jnp.shape(value)) and not (tested and int(np.prod(shape)) == 1):
        raise errors.make(
            "logical-shapes",
            kind=kind,
            where=site.where,
            source=site.source,
            first=tuple(jnp.shape(value)),
            other=shape,
            when="false" if kind == "and" else "true",
        )
    if plan.logical_form(True, harmless(rest)) == plan.LOGICAL:
        leaves, _, _ = rest((), rest.out)
        other = rest.out.rebuild(leaves)[0]
        if _is_bool(value) and _is_bool(other):
            return _logical(kind, value, other), f"jnp.logical_{kind}"
        on_true, on_false = (other, value) if kind == "and" else (value, other)
        return jnp.where(pred, on_true, on_false), f"jnp.logical_{kind}"
    keep = trace(lambda: value, State([]), ["value"], site=site)
    on_true, on_false = (rest, keep) if kind == "and" else (keep, rest)
    outputs, _ = cond_of_traced(pred, on_true, on_false, [], site)
    return outputs[0], plan.COND


def _chain(kind, first, rest, caught_by, tested=False):
    __tracebackhide__ = True
    where = report.expression_site(kind, depth=3, always=True)
    value, form = first, plan.PYTHON
    for index, thunk in enumerate(rest):
        if not is_tracer(value):
            if (not report.truth(value)) if kind == "and" else report.truth(value):
                break
            value = thunk()
            continue
        value, form = _combine(kind, value, thunk, where, caught_by, tested and index == len(rest) - 1)
    if form == plan.PYTHON and is_tracer(value):
        form = f"jnp.logical_{kind}"
    report.record(where, form)
    return value


@report.user_facing
def and_(first, *rest, caught_by=(), tested=False):
    """``first and rest[0]() and rest[1]() ...``: later operands are thunks, evaluated only
    if Python would evaluate them.

    A traced operand combines with the next one through ``jnp.logical_and`` (``jnp.where``
    for non-booleans, which keeps Python's "first falsy operand" result) when evaluating
    that one is harmless either way; otherwise through ``lax.cond``, so its effects
    (``print``, a check) happen only when Python would evaluate it. An operand that fails
    while traced (``items[5]`` of a 3-item list) raises its error when the program evaluates
    it; inside a ``try``, ``caught_by`` holds the exception types its handlers catch (such an
    error there is refused). ``tested``: the chain is the condition of an ``if`` / ``while``
    / ``assert`` (see ``_combine``: its last operand may be an array Python never tests).
    """
    __tracebackhide__ = True
    return _chain("and", first, rest, caught_by, tested)


@report.user_facing
def or_(first, *rest, caught_by=(), tested=False):
    """``first or rest[0]() or ...`` (see ``and_``)."""
    __tracebackhide__ = True
    return _chain("or", first, rest, caught_by, tested)


@report.user_facing
def not_(x):
    """``not x``; a traced ``x`` gives ``jnp.logical_not(x)`` (``x == 0`` for numbers)."""
    __tracebackhide__ = True
    site = report.expression_site("not", depth=2)
    if not is_tracer(x):
        report.record(site, plan.PYTHON)
        return not report.truth(x)
    report.record(site, "jnp.logical_not")
    return jnp.logical_not(predicate(x, site.where if site else "a `not`"))


@report.user_facing
def is_(left, right, text: str, flag: str | None = None):
    """``ops.is_(a, b, 'a is b')`` for ``a is b``.

    Equivalent Python::

        def is_(left, right, text, flag=None):
            return left is right

    A traced value has no Python identity. ``flag='done'`` (``done is False``, where every
    assignment to ``done`` in the function is ``True``, ``False`` or ``None``): a traced
    ``done`` stands for the Python bool a staged ``if`` or loop left, so ``done is False``
    is staged as ``not done`` (``done is True`` as ``done``). A traced value stands for an
    array or a number: it is not ``None``, a string, a sentinel ``object()``. Its identity
    with a bool, a number or an array, or with another traced value, is refused
    (``TracedValueError``): Python's answer depends on which object it holds.
    """
    __tracebackhide__ = True
    return _identity(left, right, text, flag)


@report.user_facing
def is_not(left, right, text: str, flag: str | None = None):
    """``ops.is_not(a, b, 'a is not b')`` for ``a is not b`` (see ``is_``)."""
    __tracebackhide__ = True
    same = _identity(left, right, text, flag)
    return (not same) if not is_tracer(same) else jnp.logical_not(same)


def _identity(left, right, text, flag):
    __tracebackhide__ = True
    left_traced, right_traced = is_tracer(left), is_tracer(right)
    if not (left_traced or right_traced):
        return left is right
    traced, other = (left, right) if left_traced else (right, left)
    if not (left_traced and right_traced) and not isinstance(other, _MAY_BE_TRACED):
        return False  # a traced value stands for an array or a number: never None, a string, a function...
    if (
        flag is not None
        and isinstance(other, bool)
        and not (left_traced and right_traced)
        and getattr(traced, "dtype", None) == jnp.bool_
        and jnp.shape(traced) == ()
    ):
        return traced if other else jnp.logical_not(traced)
    site = report.expression_site("is", depth=3, always=True)
    what = f"'{flag}'" if flag is not None else "an operand"
    raise errors.make(
        "traced-identity",
        text=text,
        where=site.where,
        what=what,
        source=site.source,
        why=_why_not_known(other, left_traced and right_traced),
    )


# What a traced value may stand for in Python: ``x is y`` with any other object is False.
_MAY_BE_TRACED = (numbers.Number, np.ndarray, np.generic, jax.Array)


def _why_not_known(other, both: bool) -> str:
    if both:
        return "both operands are traced, and whether Python would hold one object or two is not known while tracing."
    if isinstance(other, bool):
        return (
            f"Python's answer depends on whether the object is `{other}` itself or a NumPy or JAX bool (which "
            "never is), and a traced value stands for an array, not for one Python object."
        )
    return (
        f"it is compared with a {type(other).__name__} object, and a traced value stands for an array, not for "
        "one Python object."
    )


__all__ = ["and_", "is_", "is_not", "not_", "or_"]
