"""Mutation: item and attribute assignment, and list appends."""

from __future__ import annotations

import builtins
import collections
import collections.abc
import operator
import sys

import jax
import jax.numpy as jnp
import numpy as np

from autolax.runtime import compat, errors
from autolax.runtime.ops import report, slices
from autolax.runtime.ops.lists import StackedList, is_tracer
from autolax.runtime.ops.state import Undefined, describe_aval

_OPS = {
    "add": operator.iadd,
    "subtract": operator.isub,
    "multiply": operator.imul,
    "divide": operator.itruediv,
    "floor_divide": operator.ifloordiv,
    "remainder": operator.imod,
    "power": operator.ipow,
    "matmul": operator.imatmul,
    "bitwise_and": operator.iand,
    "bitwise_or": operator.ior,
    "bitwise_xor": operator.ixor,
    "left_shift": operator.ilshift,
    "right_shift": operator.irshift,
}


def _check_bounds(x, index):
    """NumPy's ``IndexError`` for a Python int index out of bounds of a JAX array's axis
    (``x[5] = v`` of a 4-item array): ``x.at[5].set(v)`` would drop the update silently."""
    for axis, k in enumerate(index if isinstance(index, tuple) else (index,)):
        if isinstance(k, slice):
            continue
        if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)) or axis >= x.ndim:
            return  # a traced or advanced index, None, ...: JAX's semantics (or its error)
        n = x.shape[axis]
        if not -n <= k < n:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")


def _refuse_traced_item(exc) -> None:
    """``lst[i] = v`` of a Python list with a traced ``i`` among a function's own statements
    (no staged statement around it to name) raised JAX's tracer error ``exc``: autolax's
    ``TracedValueError`` naming the user's statement instead, as where such an error leaves
    a function (``report.escaped_tracer_error``). Inside a staged body the statement decides."""
    if not report.in_staged_body() and report.under_trace():
        refusal = report.escaped_tracer_error(exc, sys._getframe(1))  # (it looks up to the user's frame)
        if refusal is not None:
            raise refusal from exc


def _stored(value, shape, dtype):
    """``value`` as ``x.at[i].set(value)`` stores it where ``x[i]`` has ``shape`` and
    ``x`` has ``dtype``: converted, leading axes of length 1 dropped, broadcast."""
    value = jnp.asarray(value)
    extra = value.ndim - len(shape)
    if extra > 0 and all(d == 1 for d in value.shape[:extra]):
        value = value.reshape(value.shape[extra:])
    return jax.lax.convert_element_type(jnp.broadcast_to(value, shape), dtype)


def _traced_in(obj) -> bool:
    """Does ``obj`` (an index, a value, a lazy read of ``slices``) hold a traced value?"""
    if is_tracer(obj):
        return True
    if isinstance(obj, (tuple, list)):
        return builtins.any(_traced_in(k) for k in obj)
    if isinstance(obj, slice):
        return _traced_in((obj.start, obj.stop, obj.step))
    if isinstance(obj, slices.Span):
        return _traced_in(obj.start)
    if isinstance(obj, slices.Part):
        return _traced_in((obj.x, obj.index))
    if isinstance(obj, slices.Expr):
        return _traced_in(obj.args)
    return False


class _Ref:
    """``ops.at(x)[index]``: ``.set(v)`` and one method per augmented operator."""

    def __init__(self, container, index):
        self.container = container
        self.index = index

    def _target(self, *values):
        """The container written into. A NumPy array the function made (``out = np.zeros(n)``)
        given a traced value or written at a traced index while JAX traces it is taken for the
        JAX array it stands for, as a staged loop carries it (NumPy cannot hold a traced
        value: its ``ValueError`` otherwise); the names that hold it are rebound to the
        result, as for a JAX array."""
        x = self.container
        if isinstance(x, np.ndarray) and _traced_in((self.index, values)):
            return jnp.asarray(x)
        return x

    def set(self, value):
        x, i = self._target(value), self.index
        if isinstance(x, (jax.Array, compat.Tracer)):
            new = slices.write(x, i, value)
            if new is not NotImplemented:
                return new
            i, value = slices.plain(i), slices.evaluate(value)
            _check_bounds(x, i)
            return x.at[i].set(_as_item_of(x, value))
        i, value = slices.plain(i), slices.evaluate(value)
        report.check_mutable(x, "assigned an item")
        try:
            x[i] = value
        except report.TRACER_ERRORS as exc:
            _refuse_traced_item(exc)
            raise
        return x

    def put(self, value):
        """The outer step of a nested write, ``x[i][j] = v``: ``value`` is ``x[i]`` after the
        inner write. Python changes ``x[i]`` in place and never assigns to ``x``, so where
        the inner write did too (``value`` is ``x[i]``: a NumPy array, a list) ``x`` is left
        as it is -- a tuple included. Where it made a new value (a JAX array's ``.at``
        update), that value takes the item's place: in a JAX array, a list or a dict as
        ``set`` stores it, and in a tuple (or a named tuple) by building it anew, which is
        what Python's in-place change looks like to whoever reads ``x`` afterwards."""
        x, i = self.container, self.index
        if isinstance(x, (jax.Array, compat.Tracer)):
            return self.set(value)
        if isinstance(x, list) and isinstance(i, slice):
            return x  # the inner write changed a copy (`lst[0:2][1] = v`): so does Python's
        if not isinstance(x, tuple):
            return x if x[i] is value else self.set(value)
        if x[i] is value:
            return x
        items = list(x)
        items[i] = value
        return type(x)._make(items) if hasattr(type(x), "_make") else type(x)(items)

    def _update(self, op, value, name):
        x, i = self._target(value), self.index
        if isinstance(x, (jax.Array, compat.Tracer)):
            new = slices.write(x, i, value, op)
            if new is not NotImplemented:
                return new
            i, value = slices.plain(i), slices.evaluate(value)
            # x[i] = x[i] <op> v, exactly as NumPy's `x[i] += v` (no accumulation of repeated
            # indices, unlike `.at[i].add`).
            _check_bounds(x, i)
            part = x[i]
            new = op(part, value)
            if jnp.ndim(part) and not _same_kind(new, x.dtype):
                # NumPy's in-place ufunc on the selected part (a view): `ints[0:2] += 2.5`
                # raises (its casting rule is 'same_kind'); one item is cast as `ints[0] = ...`.
                _raise_numpys_casting_error(name, jnp.result_type(new), x.dtype)
            return x.at[i].set(_as_item_of(x, new))
        i, value = slices.plain(i), slices.evaluate(value)
        report.check_mutable(x, "assigned an item")
        try:
            x[i] = op(x[i], value)
        except report.TRACER_ERRORS as exc:
            _refuse_traced_item(exc)
            raise
        return x

    def steps(self, *steps):
        """``x[i] op= v; x[i] op2= w; ...`` (each step ``(method, value)``, ``"set"`` for
        ``x[i] = v``): for a JAX array one update, ``x.at[i].set(...)`` of the value the
        last step leaves, each step's result converted to what the array stores (its dtype
        and the indexed shape), as Python stores it before the next step reads it. One
        update per iteration keeps a loop's carried array updated in place (XLA's CPU
        backend copies the whole array for a second update). Anything else: the steps in
        turn, as Python runs them."""
        x, i = self._target(*(value for _, value in steps)), self.index
        if not isinstance(x, (jax.Array, compat.Tracer)):
            for method, value in steps:
                x = self.set(value) if method == "set" else self._update(_OPS[method], value, method)
            return x
        _check_bounds(x, i)
        current = x[i]
        for method, value in steps:
            current = value if method == "set" else _OPS[method](current, value)
            current = _stored(current, x[i].shape, x.dtype)
        return x.at[i].set(current)

    def __getattr__(self, name):
        if name in _OPS:
            return lambda value: self._update(_OPS[name], value, name)
        raise AttributeError(name)


def _as_item_of(x, value):
    """``value`` cast to the dtype of the JAX array ``x`` it is written into, as NumPy casts
    on item assignment (``floats32[i] = float64_value`` rounds to float32, ``ints[i] = 2.7``
    truncates to 2, ``bools[i] = 2.5`` is True); JAX's ``.at[i].set`` warns instead
    (``FutureWarning``: a future error). A complex value into a real array is left to JAX
    (NumPy raises for Python's complex, drops the imaginary part of NumPy's)."""
    if isinstance(value, (StackedList, list, tuple)):
        return value
    try:
        dtype = jnp.result_type(value)
    except TypeError:
        return value  # not a value with a dtype: JAX's own error, or its semantics
    if dtype == x.dtype or (
        jnp.issubdtype(dtype, jnp.complexfloating) and not jnp.issubdtype(x.dtype, jnp.complexfloating)
    ):
        return value
    return jnp.asarray(value).astype(x.dtype)


def _raise_numpys_casting_error(name: str, result, dtype):
    """NumPy's own error (``UFuncTypeError``, a ``TypeError``) for the in-place ufunc
    ``name`` whose output of dtype ``result`` cannot be cast to ``dtype``."""
    ufunc = getattr(np, name, None)
    if isinstance(ufunc, np.ufunc):
        ufunc(np.zeros(1, dtype), np.zeros(1, result), out=np.zeros(1, dtype))  # raises it
    raise TypeError(
        f"Cannot cast ufunc '{name}' output from dtype('{result}') to dtype('{dtype}') with casting rule 'same_kind'"
    )


def _same_kind(value, dtype) -> bool:
    """Can NumPy cast ``value``'s dtype to ``dtype`` under its 'same_kind' rule?"""
    try:
        return np.can_cast(jnp.result_type(value), dtype, casting="same_kind")
    except TypeError:
        return True


class _At:
    def __init__(self, container):
        self.container = container

    def __getitem__(self, index):
        return _Ref(self.container, index)


def at(x):
    """``x = ops.at(x)[i].set(v)`` for ``x[i] = v``; ``.add(v)`` etc. for ``x[i] += v``.

    Equivalent Python (for anything but a JAX array)::

        def set(x, i, v):
            x[i] = v
            return x

    A JAX array (which Python cannot mutate) gets ``x.at[i].set(v)`` instead.
    """
    return _At(x)


def _basic_part(part) -> bool:
    if part is None or part is Ellipsis or isinstance(part, slice):
        return True
    if isinstance(part, bool):
        return False  # a mask: NumPy copies
    if isinstance(part, (int, np.integer)):
        return True
    # A 0-d integer array is an integer to NumPy (a traced index too); any other array is
    # an advanced index, whose result is a copy.
    return getattr(part, "ndim", None) == 0 and jnp.issubdtype(jnp.result_type(part), jnp.integer)


def index_list(items):
    """``a[ops.index_list([k, p])]`` for ``a[[k, p]]``: NumPy takes a list of integers (or
    bools) as an index array, JAX an array only.

    Equivalent Python: ``items``.

    Items that are not all integers or bools (``Callable[[int], int]``) give back the list.
    """
    if not all(
        isinstance(x, (int, np.integer, np.bool_)) or (getattr(x, "ndim", None) == 0 and _integral(x)) for x in items
    ):
        return items
    if any(is_tracer(x) for x in items):
        return jnp.stack([jnp.asarray(x) for x in items])
    return np.asarray(items)


def _integral(x) -> bool:
    dtype = jnp.result_type(x)
    return jnp.issubdtype(dtype, jnp.integer) or dtype == jnp.bool_


class _ViewRef:
    def __init__(self, base, index):
        self.base, self.index = base, index

    def _is_view(self, view) -> bool:
        """Whether NumPy's ``base[index]`` is a view of a JAX array ``base``: a basic index
        (integers, slices, ``None``, ``...``) that leaves an array, not one number."""
        if not (isinstance(self.base, jax.Array) and isinstance(view, jax.Array)) or not jnp.ndim(view):
            return False
        parts = self.index if isinstance(self.index, tuple) else (self.index,)
        return all(_basic_part(p) for p in parts)

    def written(self, view):
        """The base after a write into ``view`` (taken as ``view = base[index]``)."""
        if self._is_view(view):
            return self.base.at[self.index].set(view)
        if (
            isinstance(view, jax.Array)
            and jnp.ndim(view)
            and isinstance(self.base, (list, dict))
            and not isinstance(self.index, slice)
        ):
            # `w = params['w']; w[0] = 0.0`: the item is the array Python changes in place (a
            # number, or a NumPy scalar, is rebound by `+=`: the container keeps it)
            return at(self.base)[self.index].set(view)
        return self.base  # a NumPy view already wrote through; a list's slice, a number, a copy

    def reread(self, view):
        """``view`` after a write into the base it was taken from."""
        if self._is_view(view):
            return self.base[self.index]
        return view


class _View:
    def __init__(self, base):
        self.base = base

    def __getitem__(self, index):
        return _ViewRef(self.base, index)


def view(base):
    """``u = a[k:n, k]`` (or a row, ``u = a[k]``) then ``u[0] = v``: NumPy's ``u`` is a view,
    and the write changes ``a`` too. Converted, a JAX array is a value, so the ``aliases`` pass writes the change
    back: ``a = ops.view(a)[k:n, k].written(u)`` (and, after a change of ``a``,
    ``u = ops.view(a)[k:n, k].reread(u)``).

    Equivalent Python: ``base`` (``written``) / ``view`` (``reread``) unchanged -- a NumPy
    view shares the memory, a list's slice is a copy; for JAX arrays the write is made.
    """
    return _View(base)


def augmented(other, changed):
    """``xs = ops.augmented(xs, ys)`` after ``ys += v`` where ``ys = xs`` (``passes.aliases``):
    NumPy's ``+=`` changes the one array both names hold, and so do a list's ``+=`` and a
    dict's or set's ``|=``: ``xs`` holds the result too. A number, a tuple, a string or a
    NumPy scalar is rebound, and ``xs`` keeps its value. A JAX array is taken for the NumPy
    array it stands for (one with at least one axis), as ``x[i] = v`` is; a list a staged
    loop built (``StackedList``) for the list it stands for.

    Equivalent Python: ``changed if changed is other else other``.
    """
    if changed is other:
        return changed
    if isinstance(other, jax.Array) and isinstance(changed, jax.Array) and jnp.ndim(other):
        return changed
    if isinstance(other, (list, dict, set, StackedList)) and isinstance(changed, (list, dict, set, StackedList)):
        return changed
    return other


def returned_augmented(returned, value, name):
    """``ops.returned_augmented(retval, xs, 'xs')`` before ``xs += v`` in a ``finally``
    whose ``try`` has a ``return`` holding ``xs`` (``return xs, n``: passes.return_statements).
    Python's ``+=`` of a NumPy array changes the object the return computed; converted code
    adds into a JAX array as a new value, which the return would not hold. Where the ``try``
    may have returned (``returned`` is not the stand-in for "not yet") and ``xs`` is a JAX
    array that stands for a NumPy one (at least one axis), ``ConversionError``. A number is
    rebound, in Python too; a NumPy array or a list is changed in place here as there.

    Equivalent Python: ``None``."""
    if isinstance(value, jax.Array) and jnp.ndim(value) and not isinstance(returned, Undefined):
        where, line = report.user_line(sys._getframe(1))
        raise errors.make("finally-augments-returned", name=name, where=where, source=line)


_MISSING = object()


def setattr(obj, name, value, op=None):  # noqa: A001 - the builtin, for converted code
    """``p = ops.setattr(p, 'x', v)`` for ``p.x = v``; ``op='add'`` etc. for ``p.x += v``.

    Equivalent Python::

        def setattr(obj, name, value, op=None):
            if op is not None:                  # p.x += v
                value = getattr(obj, name).__iadd__(value)   # or __add__
            elif getattr(obj, name) is value:   # p.w[i] = v mutated p.w itself
                return obj
            builtins.setattr(obj, name, value)
            return obj

    The object is updated in place, so a frozen dataclass or a ``NamedTuple`` raises as in
    Python. In a staged loop or ``if``, a registered pytree is carried like any other value
    (its attributes are leaves), so the update shows through the name ``p`` after the
    statement; other references to the same object see it only when the statement runs in
    Python.
    """
    if op is not None:
        value = _OPS[op](getattr(obj, name), value)
    elif getattr(obj, name, _MISSING) is value:
        return obj
    report.check_mutable(obj, f"given a new attribute value ('{name}')")
    builtins.setattr(obj, name, value)
    return obj


def append(lst, value):
    """``lst = ops.append(lst, value)`` for ``lst.append(value)``.

    Equivalent Python::

        def append(lst, value):
            lst.append(value)
            return lst

    Inside a staged loop the appended values become the loop's stacked outputs.
    """
    lst.append(value)
    return lst


_CONTAINERS = (list, dict, set, bytearray, collections.deque)


@report.user_facing
def sought(container, value, name: str):
    """``ops.sought(lst, x, 'lst') in lst`` for ``x in lst``; ``lst.remove(ops.sought(lst,
    x, 'lst'))`` for ``lst.remove(x)`` (also ``.index``, ``.count``).

    Equivalent Python::

        def sought(container, value, name):
            return value

    Python searches a list, tuple or deque by comparing ``value`` with each item in turn
    (``item is value or item == value``) and testing the answer. Where an answer is traced
    (a traced item or value), that test is JAX's ``TracerBoolConversionError``: this makes
    the same comparisons first and raises ``TracedComparisonError`` naming the list
    instead. Anything else (a dict, a set, a string) is searched as Python does.
    """
    __tracebackhide__ = True
    if isinstance(container, (list, tuple, collections.deque, StackedList)):
        for index, item in enumerate(container):
            if item is value:
                break
            equal = item == value
            if is_tracer(equal):
                where = report.expression_site("sought", always=True)
                raise errors.make(
                    "traced-comparison",
                    what=f"'{name}'",
                    name=name,
                    where=where.where,
                    index=index,
                    detail=f"{_describe(item)} == {_describe(value)}",
                    source=where.source,
                )
            if equal:  # a concrete answer: tested as Python tests it (an array's raises here too)
                break
    return value


def _describe(value) -> str:
    if is_tracer(value) or isinstance(value, jax.Array):
        return describe_aval(jax.typeof(value))
    return type(value).__name__


# Methods that leave an empty list, dict or set as it is (raising, or returning a default).
_TAKE_ITEM = frozenset({"pop", "popitem", "remove"})


def outside(obj, method=None):
    """``ops.outside(obj)`` marks a mutation of a value the function does not carry: a
    global, a closure's variable, a method's ``self`` (``self.x = v``, ``G[k] = v``);
    ``ops.outside(obj, 'append')`` a call of a method that changes lists, dicts and sets.

    Equivalent Python: ``obj``.

    Inside a staged branch or loop body the mutation would happen once, while tracing, not
    each time the statement runs: ``StagedEffectError``. (A method call is a mutation only
    when ``obj`` is a list, dict or set: ``optimizer.update(...)`` is not. Nor is taking
    an item out of an empty one, which changes nothing: ``[].pop()`` raises ``IndexError``,
    which a staged branch raises when the program takes it.)
    """
    if method in _TAKE_ITEM and isinstance(obj, _CONTAINERS) and not obj:
        return obj
    if method is None or isinstance(obj, _CONTAINERS):
        report.check_mutable(obj, f"changed (`.{method}`)" if method else "changed", outside=True)
    return obj


def stacked(lst):
    """``jnp.stack(ops.stacked(lst))``: the stacked array of a list built in a staged loop
    (``jnp.stack`` of an array is that array), or ``lst`` itself for any other value.

    A list whose items are not arrays (``rows.append([x, y])``) is given as the plain list
    of its items, so the stacking function does what it does with them in Python
    (``jnp.stack`` of lists raises ``TypeError``; ``np.vstack`` stacks the rows)."""
    if isinstance(lst, StackedList):
        tree = lst.stacked_tree()
        if tree is None:
            return lst
        return tree if isinstance(tree, (jax.Array, compat.Tracer)) else list(lst)
    return lst


def stack(func, lst, *args, **kwargs):
    """``ops.stack(jnp.stack, lst)`` for ``jnp.stack(lst)`` of a list the function appends to.

    Equivalent Python: ``func(lst, *args, **kwargs)``. The items a staged loop appended are
    already one array stacked along a new leading axis, and ``jnp.stack`` along axis 0 of
    that array is the array itself: it is returned as is (``jnp.stack`` would copy it through
    an expand and a reshape).
    """
    value = stacked(lst)
    if (
        func is jnp.stack
        and value is not lst
        and not args
        and set(kwargs) <= {"axis"}
        and kwargs.get("axis", 0) == 0
        and isinstance(value, (jax.Array, compat.Tracer))
    ):
        return value
    return func(value, *args, **kwargs)


def outside_store(name: str, declared: str = "nonlocal") -> None:
    """``ops.outside_store('total')`` before an assignment to ``total``, declared ``nonlocal``
    (``ops.outside_store('total', 'global')``: declared ``global``).

    Equivalent Python: nothing. Inside a staged branch or loop body the assignment would
    happen once, while tracing: ``StagedEffectError``. So would a global's anywhere in a
    function ``jax.jit`` traces: once per trace, not once per call.
    """
    report.check_store(name)
    if declared == "global" and report.under_trace():
        raise errors.make("traced-effect", target=f"the global '{name}'", action="assigned")


def is_singleton(value, singleton) -> bool:
    """``ops.is_singleton(x, True)``: does ``case True`` (``None``, ``False``) match ``x``?

    Equivalent Python: ``x is True``. A traced value stands for a Python scalar: it is
    ``True`` / ``False`` exactly when it is a boolean with that value, and never ``None``.
    """
    if isinstance(value, compat.Tracer):
        if singleton is None or getattr(value, "dtype", None) != jax.numpy.bool_ or value.shape != ():
            return False
        return value == singleton
    return value is singleton


def is_sequence(value, length: int) -> bool:
    """``ops.is_sequence(x, 2)``: does ``case [a, b]`` match ``x``? (A sequence -- not a
    string or bytes -- of that length, as Python's ``match`` decides.)"""
    return (
        isinstance(value, collections.abc.Sequence)
        and not isinstance(value, (str, bytes, bytearray))
        and len(value) == length
    )
