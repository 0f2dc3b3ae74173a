"""Searching a list, tuple or deque by value: ``x in lst``, ``lst.count(x)``, ``lst.index(x)``.

Python compares ``x`` with the items in turn (``item is x or item == x``) and tests each
answer. Where an answer is traced, only the running program can tell, so these ops make the
same comparisons and combine the traced answers with ``jnp`` -- in Python's order, stopping
where Python is sure to stop -- and return a traced ``bool`` (``in``) or ``int`` (``count``,
``index``). ``lst.index(x)`` raises Python's ``ValueError`` when the program runs and finds
no item equal to ``x`` (a run-time check, ``autolax.runtime.ops.checks``).

Each traced answer must be one boolean (as ``bool()`` of a one-item array is), else
``TracedComparisonError``. Comparing arrays of several items, Python raises ``ValueError`` --
unless the item *is* the value, and under ``jax.jit`` an array passed as two arguments is
two tracers, so that cannot be told. Where a traced answer came before, a later comparison
that is not one boolean is refused too: whether Python reaches it would depend on data. So is ``lst.remove(x)``
with a traced answer (``sought``): which item it removes would depend on data.

Any other container (a dict, a set, a string, an array) is searched as Python searches it.
"""

from __future__ import annotations

import collections
import linecache
import sys

import jax
import jax.numpy as jnp
import numpy as np

from autolax.runtime import errors, sites
from autolax.runtime.ops import checks, report
from autolax.runtime.ops.lists import StackedList, is_tracer
from autolax.runtime.ops.state import describe_aval

_SEQUENCES = (list, tuple, collections.deque, StackedList)


def _user_line():
    """``(file:line, source line)`` of the converted code calling the op."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename == __file__ or frame.f_code is report.WRAPPER_CODE):
        frame = frame.f_back
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    return f"{sites.display_filename(filename)}:{lineno}", linecache.getline(filename, lineno).strip()


def _refuse(name, index, item, value):
    where, source = _user_line()
    code = "traced-comparison" if name.isidentifier() else "traced-comparison-display"  # `x in [a, b]`
    raise errors.make(
        code,
        what=f"'{name}'",
        name=name,
        where=where,
        index=index,
        detail=f"{_describe(item)} == {_describe(value)}",
        source=source,
    )


def _describe(value) -> str:
    if is_tracer(value) or isinstance(value, jax.Array):
        return describe_aval(jax.typeof(value))
    return type(value).__name__


def _answers(container, value, name, stop_at_match: bool):
    """``(index, answer)`` for each item Python compares: ``True`` for ``item is value``,
    else ``item == value`` as a Python bool or a traced scalar bool. With ``stop_at_match``
    (``in``, ``index``) it stops after the first item that surely matches, as Python does;
    ``count`` compares every item."""
    traced_before = False
    for index, item in enumerate(container):
        if item is value:
            yield index, True
            if stop_at_match:
                return
            continue
        equal = item == value
        if is_tracer(equal):
            if np.size(equal) != 1:
                _refuse(name, index, item, value)
            traced_before = True
            yield index, jnp.reshape(equal, ())
            continue
        if traced_before and np.size(equal) != 1:
            # Python reaches this comparison (and raises for it) only where no traced answer
            # before it was True: which it does depends on data.
            _refuse(name, index, item, value)
        if equal:  # tested as Python tests it (an array of several items raises here too)
            yield index, True
            if stop_at_match:
                return


def _any(answers):
    found = False
    for _, answer in answers:
        if answer is True:
            return True
        found = answer if found is False else jnp.logical_or(found, answer)
    return found


@report.user_facing
def is_in(value, container, name: str):
    """``ops.is_in(x, lst, 'lst')`` for ``x in lst``.

    Equivalent Python::

        def is_in(value, container, name):
            return value in container

    Traced answers give a traced boolean (see the module docstring)."""
    __tracebackhide__ = True
    if not isinstance(container, _SEQUENCES):
        return value in container
    return _any(_answers(container, value, name, stop_at_match=True))


@report.user_facing
def not_in(value, container, name: str):
    """``ops.not_in(x, lst, 'lst')`` for ``x not in lst`` (see ``is_in``)."""
    __tracebackhide__ = True
    if not isinstance(container, _SEQUENCES):
        return value not in container
    found = _any(_answers(container, value, name, stop_at_match=True))
    return (not found) if not is_tracer(found) else jnp.logical_not(found)


@report.user_facing
def count(container, value, name: str):
    """``ops.count(lst, x, 'lst')`` for ``lst.count(x)``.

    Equivalent Python::

        def count(container, value, name):
            return container.count(value)

    Traced answers give a traced integer (see the module docstring)."""
    __tracebackhide__ = True
    if not isinstance(container, _SEQUENCES):
        return container.count(value)
    total = 0
    for _, answer in _answers(container, value, name, stop_at_match=False):
        total = total + (1 if answer is True else answer.astype(jnp.int32))
    return total


@report.user_facing
def index(container, value, name: str):
    """``ops.index(lst, x, 'lst')`` for ``lst.index(x)``.

    Equivalent Python::

        def index(container, value, name):
            return container.index(value)

    Traced answers give a traced integer, the position of the first item equal to ``x``;
    where no item is, the program raises ``ValueError`` when it runs (see the module
    docstring). A ``try`` that would catch that ``ValueError`` is refused
    (``StagedEffectError``): its handler would run depending on data."""
    __tracebackhide__ = True
    if not isinstance(container, _SEQUENCES):
        return container.index(value)
    found, position = False, None
    for i, answer in _answers(container, value, name, stop_at_match=True):
        if answer is True:
            if found is False:
                return i
            return jnp.where(found, position, i)
        position = jnp.where(found, position, i) if position is not None else jnp.int32(i)
        found = answer if found is False else jnp.logical_or(found, answer)
    if found is False:
        if isinstance(container, list):
            raise ValueError(f"{value!r} is not in list")
        return container.index(value)  # tuple / deque: their own message
    kind = type(container).__name__ if not isinstance(container, StackedList) else "list"
    # (inside a `try` that catches it: its handler when that always raises, else refused)
    refusal = checks.fail_or_handle(
        found, lambda: ValueError(f"the value searched for is not in {kind} '{name}'"), ValueError
    )
    if refusal:
        where, source = _user_line()
        raise errors.make(refusal, statement=f"{name}.index(...)", where=where, source=source)
    return position


__all__ = ["count", "index", "is_in", "not_in"]
