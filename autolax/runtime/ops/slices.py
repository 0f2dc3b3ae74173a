"""Slices whose bounds follow a traced loop index, at fixed shapes (DESIGN: "Fixed shapes by
masking"). The front end (``autolax.frontend.passes.slices``) marks the reads and writes; this module
decides, when the program is traced, what each becomes.

    A[i, :j] @ A[:j, j]            ->  ops.masked('matmul', ops.part(A)[i, :j], ops.part(A)[:j, j])
    jnp.sum(L[i, :k] * L[k, :k])   ->  ops.masked(jnp.sum, ops.part(L)[i, :k] * ops.part(L)[k, :k])
    A[k, :k].sum()                 ->  ops.masked('sum', ops.part(A)[k, :k])
    A[i, j:] -= A[k, j:] * f       ->  A = ops.at(A)[i, j:].subtract(ops.part(A)[k, j:] * f)
    x[i:i + K, j:j + K]            ->  ops.window(x)[ops.span(i, K), ops.span(j, K)]
    x[m] = x[m] ** -1.5            ->  x = ops.at(x)[m].set(ops.part(x)[m] ** -1.5)

With Python values for the bounds each does exactly what Python does (the plain slice).
With a traced bound:

* a slice consumed by a reduction with an identity -- ``@`` / ``dot`` / ``matmul`` over the
  sliced (contracted) axis, ``sum``, ``prod``, ``max``, ``min``, ``any``, ``all`` (function or
  method, no ``axis``), ``jnp.linalg.norm`` (its default order), the builtin ``sum`` over
  axis 0 -- or by a write-back (``A[i, :j] = v``, ``A[i, j:] -= v``), possibly through
  elementwise arithmetic (``+ - * / // % **``, unary ``-``, elementwise ``jnp``/``np``
  functions): the slice is read at full length and the positions outside it are replaced by
  the reduction's identity (0, 1, -inf, +inf, False, True) or left as they were (a write).
  ``max`` / ``min`` of an empty slice raise the error Python raises, when the program runs.
  Slices of different positions (``r[k-1::-1] @ y[:k]``) are gathered into the slice's own
  order first, and must have equal lengths when the program runs (checked). A slice of such
  a slice (``ops.part(r)[:k][::-1]``) is one read (``Chained``: the positions both pick).
* a window of static width ``K`` at a traced start (``x[i:i + K]``) is
  ``lax.dynamic_slice`` (``dynamic_update_slice`` for a write). NumPy returns a shorter
  window where ``i + K`` passes the end (and ``lax.dynamic_slice`` would move the start): the
  program checks ``0 <= i <= n - K`` when it runs, and fails with autolax's error otherwise.
* a write through a traced boolean mask (``x[m] = v``, ``x[m] += v``, ``x[m] = g(x[m])``)
  is ``jnp.where(m, ..., x)``; ``v`` must be a scalar (or broadcast along the axes the mask
  does not cover) or computed elementwise from reads through the same mask.

Anything else (a consumer that needs the slice's length -- ``len``, ``mean``, a shape, a
concatenation, returning the slice --, a traced step, advanced indexing) is the plain slice,
which with a traced bound is JAX's error: the loop around it runs in Python, and the
``UnrolledLoopWarning`` says why.
"""

from __future__ import annotations

import builtins
import linecache
import operator
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.runtime import compat, errors, sites
from autolax.runtime.ops import checks
from autolax.runtime.ops.lists import is_tracer

_ARRAYS = (jax.Array, compat.Tracer)


# --- windows --------------------------------------------------------------------------------


class Span:
    """``ops.span(i, K)``: the slice ``i:i + K`` written by the user (``K`` decides the width)."""

    __slots__ = ("start", "width")

    def __init__(self, start, width):
        self.start = start
        self.width = width

    def as_slice(self):
        return slice(self.start, self.start + self.width)


def span(start, width):
    """``ops.span(i, K)`` for the slice ``i:i + K`` in an item (``x[i:i + K]``).

    Equivalent Python: ``slice(i, i + K)``."""
    return Span(start, width)


def plain(index):
    """The index Python sees (every ``Span`` its slice)."""
    if isinstance(index, Span):
        return index.as_slice()
    if isinstance(index, tuple):
        return tuple(plain(k) for k in index)
    return index


def _items(index):
    return index if isinstance(index, tuple) else (index,)


def _int_like(k) -> bool:
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return isinstance(k, _ARRAYS) and k.shape == () and jnp.issubdtype(k.dtype, jnp.integer)


def _traced_slice(k) -> bool:
    if isinstance(k, Chained):
        return True
    return isinstance(k, slice) and (is_tracer(k.start) or is_tracer(k.stop) or is_tracer(k.step))


def _layout(x, items, dynamic):
    """``(full, axes)``: the index with each item ``dynamic(item)`` picks replaced by ``:``, and
    ``(axis of the result, item, length of x's axis)`` for each; None where the index is not
    made of ints, slices, ``None`` and ``...`` alone (advanced indexing)."""
    ndim = x.ndim
    consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
    if consumed > ndim or sum(1 for k in items if k is Ellipsis) > 1:
        return None
    full, axes = [], []
    inp = out = 0
    for k in items:
        if k is None:
            full.append(None)
            out += 1
        elif k is Ellipsis:
            rest = ndim - consumed
            full.append(Ellipsis)
            inp += rest
            out += rest
        elif isinstance(k, (slice, Span, Chained)):
            if dynamic(k):
                full.append(slice(None))
                axes.append((out, k, x.shape[inp]))
            else:
                full.append(plain(k))
            inp += 1
            out += 1
        elif _int_like(k):
            full.append(k)
            inp += 1
        else:
            return None
    return tuple(full), axes


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _site():
    """(where, source) of the converted code that called the op (the first frame outside the
    runtime's ops)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_RUNTIME_DIR):
        frame = frame.f_back
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() if frame else ""
    where = f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else "?"
    return where, line


def _window_plan(x, index):
    if not isinstance(x, _ARRAYS):
        return None
    items = _items(index)
    spans = [k for k in items if isinstance(k, Span)]
    if not any(is_tracer(k.start) for k in spans):
        return None
    for k in spans:
        if is_tracer(k.width) or not isinstance(k.width, (int, np.integer)) or isinstance(k.width, bool):
            return None
        if k.width < 0:
            return None  # `x[i:i - 1]` wraps around for some starts (`x[0:-1]`): the plain slice
        if not is_tracer(k.start) and not isinstance(k.start, (int, np.integer)):
            return None
        if is_tracer(k.start) and not (k.start.shape == () and jnp.issubdtype(k.start.dtype, jnp.integer)):
            return None
    if any(_traced_slice(k) for k in items):
        return None
    return _layout(x, items, lambda k: isinstance(k, Span))


def _check_window(k: Span, n: int, where, source):
    width = int(k.width)
    ok = (k.start >= 0) & (k.start + width <= n)
    checks.fail_unless(
        ok, lambda: errors.make("window-range", where=where, source=source, n=n, width=width, last=n - width)
    )


class _Window:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        x = self.x
        plan = _window_plan(x, index)
        if plan is None:
            return x[plain(index)]
        full, axes = plan
        where, source = _site()
        view = x[full]
        for axis, k, n in axes:
            view = _dynamic_read(view, axis, k, n, where, source)
        return view


def _dynamic_read(view, axis, k, n, where, source):
    width = int(k.width)
    if width == 0:  # `x[i:i + 0]`: empty wherever it starts
        return lax.slice_in_dim(view, 0, 0, axis=axis)
    _check_window(k, n, where, source)
    return lax.dynamic_slice_in_dim(view, jnp.asarray(k.start), width, axis=axis)


def window(x):
    """``ops.window(x)[ops.span(i, K)]`` for ``x[i:i + K]``.

    Equivalent Python: ``x[i:i + K]``. With a traced ``i`` and a Python int ``K`` (a JAX
    array ``x``) the window is ``lax.dynamic_slice``, checked to lie inside the axis when the
    program runs (NumPy's shorter window past the end has no fixed shape)."""
    return _Window(x)


def write_window(x, index, value, op):
    """``x`` after ``x[i:i + K] = value`` (``op``: ``x[i:i + K] = op(x[i:i + K], value)``), or
    NotImplemented where the index is not a window at a traced start."""
    plan = _window_plan(x, index)
    if plan is None:
        return NotImplemented
    full, axes = plan
    where, source = _site()
    view = x[full]
    window_shape = list(view.shape)
    starts = [0] * view.ndim
    for axis, k, n in axes:
        window_shape[axis] = int(k.width)
    if 0 in [int(k.width) for _, k, _ in axes]:
        # an empty window: nothing is written (a value that does not fit raises, as in NumPy)
        jnp.broadcast_to(jnp.asarray(evaluate(value)), tuple(window_shape))
        return x
    for axis, k, n in axes:
        _check_window(k, n, where, source)
        starts[axis] = jnp.asarray(k.start)
    current = view
    for axis, k, n in axes:
        current = lax.dynamic_slice_in_dim(current, starts[axis], int(k.width), axis=axis)
    value = evaluate(value)
    new = op(current, value) if op is not None else value
    new = jnp.broadcast_to(jnp.asarray(new), tuple(window_shape)).astype(view.dtype)
    starts = [jnp.asarray(s).astype(jnp.int32) for s in starts]
    updated = lax.dynamic_update_slice(view, new, starts)
    return _put_back(x, full, updated)


def _put_back(x, full, view):
    if all(isinstance(k, slice) and k == slice(None) for k in full) and view.shape == x.shape:
        return view
    return x.at[full].set(view)


# --- lazy reads -------------------------------------------------------------------------------


class _Lazy:
    """A read (``ops.part``) or elementwise arithmetic of reads that a consumer evaluates."""

    __array_ufunc__ = None  # NumPy defers to our operators
    __array_priority__ = 1000

    def __neg__(self):
        return Expr(operator.neg, (self,))

    def __pos__(self):
        return Expr(operator.pos, (self,))

    def __abs__(self):
        return Expr(builtins.abs, (self,))


def _binary(op):
    return (lambda self, other: Expr(op, (self, other)), lambda self, other: Expr(op, (other, self)))


for _name, _op in (
    ("add", operator.add),
    ("sub", operator.sub),
    ("mul", operator.mul),
    ("truediv", operator.truediv),
    ("floordiv", operator.floordiv),
    ("mod", operator.mod),
    ("pow", operator.pow),
    ("and", operator.and_),
    ("or", operator.or_),
    ("xor", operator.xor),
):
    _left, _right = _binary(_op)
    setattr(_Lazy, f"__{_name}__", _left)
    setattr(_Lazy, f"__r{_name}__", _right)
for _name, _op in (
    ("lt", operator.lt),
    ("le", operator.le),
    ("gt", operator.gt),
    ("ge", operator.ge),
    ("eq", operator.eq),
    ("ne", operator.ne),
):
    setattr(_Lazy, f"__{_name}__", _binary(_op)[0])
_Lazy.__hash__ = object.__hash__
_Lazy.__invert__ = lambda self: Expr(operator.invert, (self,))


class Part(_Lazy):
    """The read ``x[index]``; ``reads``: the indexes Python applies one after another where
    ``index`` is their composition (``x[:k][::-1]``), else None."""

    __slots__ = ("x", "index", "reads")

    def __init__(self, x, index, reads=None):
        self.x = x
        self.index = index
        self.reads = reads

    def __getitem__(self, index):
        """``ops.part(r)[:k][::-1]``: one read where the second index is slices (a slice of a
        traced slice stays lazy), else the plain first read indexed (Python's order)."""
        if _traced_part(self):
            composed = _compose(self.x, self.index, index)
            if composed is not None:
                return Part(self.x, composed, (self.reads or (self.index,)) + (index,))
        return Part(evaluate(self), index)


class Expr(_Lazy):
    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = args


class _Parts:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        return Part(self.x, index)


def part(x):
    """``ops.part(x)[i, :j]``: the read ``x[i, :j]``, evaluated by the consumer around it
    (``ops.masked``, an item write). Equivalent Python: ``x[i, :j]``."""
    return _Parts(x)


# Elementwise functions a lazy read may go through (``jnp.sqrt(x[m])``).
_ELEMENTWISE_NAMES = (
    "abs",
    "absolute",
    "sqrt",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "arctan",
    "arcsin",
    "arccos",
    "square",
    "negative",
    "reciprocal",
    "sign",
    "floor",
    "ceil",
    "round",
    "conj",
    "real",
    "imag",
    "maximum",
    "minimum",
    "where",
    "clip",
    "power",
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "isnan",
    "isfinite",
    "logical_not",
    "exp2",
    "log2",
    "log10",
    "cbrt",
    "fabs",
)
_ELEMENTWISE = {id(getattr(mod, name)) for mod in (jnp, np) for name in _ELEMENTWISE_NAMES if hasattr(mod, name)}
_ELEMENTWISE.add(id(builtins.abs))


_OUTER = {id(np.outer), id(jnp.outer)}


def apply(fn, *args):
    """``ops.apply(jnp.sqrt, ops.part(x)[m])`` for ``jnp.sqrt(x[m])`` inside a masked
    expression. Equivalent Python: ``fn(*args)`` (an elementwise ``jnp`` / ``np`` function
    is kept lazy, so the read is taken at full length where its bounds are traced; so is
    ``outer`` of two 1-D reads: ``a[:, None] * b[None, :]``)."""
    if any(isinstance(a, _Lazy) for a in args) and id(fn) in _ELEMENTWISE:
        return Expr(fn, args)
    if id(fn) in _OUTER and len(args) == 2 and all(isinstance(a, Part) and _one_axis(a) for a in args):
        left, right = args
        return Expr(
            operator.mul,
            (Part(left.x, _items(plain(left.index)) + (None,)), Part(right.x, (None,) + _items(plain(right.index)))),
        )
    return fn(*[evaluate(a) for a in args])


def _one_axis(p: Part) -> bool:
    """Is the read 1-D (ints and one slice of an array)?"""
    if not isinstance(p.x, _ARRAYS):
        return False
    items = _items(plain(p.index))
    if any(k is None or k is Ellipsis for k in items) or len(items) > p.x.ndim:
        return False
    slices = sum(1 for k in items if isinstance(k, slice))
    return slices + (p.x.ndim - len(items)) == 1 and all(isinstance(k, slice) or _int_like(k) for k in items)


def evaluate(value):
    """The value Python computes for ``value`` (a lazy read is the plain read)."""
    if isinstance(value, Part):
        if value.reads is not None:
            result = value.x
            for index in value.reads:
                result = result[plain(index)]
            return result
        return value.x[plain(value.index)]
    if isinstance(value, Expr):
        return value.fn(*[evaluate(a) for a in value.args])
    return value


def _parts(value, out):
    if isinstance(value, Part):
        out.append(value)
    elif isinstance(value, Expr):
        for a in value.args:
            _parts(a, out)
    return out


def _traced_part(p: Part) -> bool:
    if not isinstance(p.x, _ARRAYS):
        return False
    for k in _items(p.index):
        if _traced_slice(k) or isinstance(k, Span) and is_tracer(k.start):
            return True
        if isinstance(k, _ARRAYS) and is_tracer(k) and k.dtype == jnp.bool_:
            return True
    return False


# --- slice arithmetic (Python's slice.indices, for traced bounds) ----------------------------


def _scalar_int(v):
    """A traced bound as a 0-d integer array (lax's scalar operations below keep the program
    small: no `jnp` wrappers around index arithmetic)."""
    v = jnp.asarray(v)
    return v if jnp.issubdtype(v.dtype, jnp.integer) else v.astype(jnp.int32)


def _bound(v, n, lo, hi):
    if is_tracer(n) or is_tracer(hi):  # an axis whose length is traced (a slice of a slice)
        v = jnp.where(v < 0, v + n, v)
        return jnp.clip(v, lo, hi)
    if is_tracer(v):
        v = _scalar_int(v)
        v = lax.select(v < 0, v + n, v)
        return lax.clamp(jnp.asarray(lo, v.dtype), v, jnp.asarray(hi, v.dtype))
    v = v + n if v < 0 else v
    return builtins.min(builtins.max(v, lo), hi)


def _max0(v):
    if is_tracer(v):
        v = _scalar_int(v)
        return lax.max(v, jnp.zeros((), v.dtype))
    return builtins.max(v, 0)


def _normalise(k: slice, n: int):
    """(first position, number of items, step) of ``k`` on an axis of length ``n``."""
    step = 1 if k.step is None else int(k.step)
    if step > 0:
        s = 0 if k.start is None else _bound(k.start, n, 0, n)
        e = n if k.stop is None else _bound(k.stop, n, 0, n)
        length = _max0(e - s if step == 1 else (e - s + step - 1) // step)
    else:
        s = n - 1 if k.start is None else _bound(k.start, n, -1, n - 1)
        e = -1 if k.stop is None else _bound(k.stop, n, -1, n - 1)
        length = _max0(s - e if step == -1 else (s - e - step - 1) // (-step))
    return s, length, step


def _same(a, b) -> bool:
    if a is b:
        return True
    if is_tracer(a) or is_tracer(b):
        return False
    return a == b


def _integer_bounds(k: slice) -> bool:
    """No traced bound but integer scalars (a float bound is Python's TypeError: the plain
    slice raises it)."""
    return all(
        not is_tracer(b) or b.shape == () and jnp.issubdtype(b.dtype, jnp.integer) for b in (k.start, k.stop, k.step)
    )


class Chained:
    """A slice of a slice on one axis (``x[:k][::-1]``), as Python's ``slice.indices`` would
    give it: the first position, the number of items, the step."""

    __slots__ = ("slices", "start", "length", "step")

    def __init__(self, slices, start, length, step):
        self.slices, self.start, self.length, self.step = slices, start, length, step


def _static_step(k: slice) -> bool:
    return k.step is None or isinstance(k.step, (int, np.integer)) and k.step != 0


def _compose(x, first, second):
    """The index of ``x[first][second]`` as one index (each slice of a sliced axis a
    ``Chained``), or None where either is more than ints and slices with steps known."""
    if not isinstance(x, _ARRAYS):
        return None
    items, more = list(_items(plain(first))), list(_items(second))
    if len(items) > x.ndim or not all(_int_like(k) or isinstance(k, (slice, Chained)) for k in items):
        return None
    if not all(isinstance(k, slice) and _static_step(k) and _integer_bounds(k) for k in more):
        return None
    items += [slice(None)] * (x.ndim - len(items))
    axes = [a for a, k in enumerate(items) if not _int_like(k)]
    if len(more) > len(axes):
        return None
    for axis, k in zip(axes, more):
        outer = items[axis]
        if isinstance(outer, slice) and not (_static_step(outer) and _integer_bounds(outer)):
            return None
        if isinstance(outer, slice):
            outer = Chained((outer,), *_normalise(outer, x.shape[axis]))
        s, length, step = _normalise(k, outer.length)
        items[axis] = Chained(outer.slices + (k,), outer.start + s * outer.step, length, outer.step * step)
    return tuple(items)


class _Dim:
    """A sliced axis of one read: the slice (or ``Chained``) and the axis's length."""

    def __init__(self, k, n: int):
        self.k, self.n = k, n
        if isinstance(k, Chained):
            self.start, self.length, self.step = k.start, k.length, k.step
            return
        if not _integer_bounds(k):
            raise _Unsupported
        self.start, self.length, self.step = _normalise(k, n)

    def bounds(self):
        if isinstance(self.k, Chained):
            return tuple(b for k in self.k.slices for b in (k.start, k.stop, k.step))
        return self.k.start, self.k.stop, self.k.step

    def same_as(self, other) -> bool:
        mine, theirs = self.bounds(), other.bounds()
        return self.n == other.n and len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs))

    def in_place_mask(self):
        """Which positions of the axis the slice covers."""
        q = jnp.arange(self.n)
        s, step = self.start, self.step
        if step > 0 and not is_tracer(s) and s == 0:
            mask = q < self.length * step
        elif step > 0:
            mask = (q >= s) & (q < s + self.length * step)
        else:
            mask = (q <= s) & (q > s + self.length * step)
        if builtins.abs(step) != 1:
            mask = mask & ((q - s) % step == 0)
        return mask

    def gather_positions(self, size):
        """The axis's positions of the slice's items 0..size-1 (clipped past its end)."""
        p = jnp.arange(size)
        if not is_tracer(self.start) and self.start == 0 and self.step == 1:
            return None  # the slice's own order is the axis's
        return jnp.clip(self.start + p * self.step, 0, self.n - 1)


class _Unsupported(Exception):
    """This use cannot be masked: the plain read (and its error) instead."""


def _expand(vec, r):
    """A 1-D vector placed at the ``r``-th axis from the right."""
    return vec.reshape(vec.shape + (1,) * (r - 1))


class _Aligned:
    """The reads of one consumer, read at full length and aligned axis by axis.

    ``keys(part)`` gives, for each sliced axis of the part's view (by its position from the
    right), the slot it shares with other parts. Per slot: when every part slices it the same
    way (and the target of a write too) the positions stay where they are ("in place");
    otherwise each part is gathered into the slice's own order (item 0 first) and the
    lengths must agree when the program runs."""

    def __init__(self, parts, keys, target=None):
        self.views = {}
        self.dims = {}  # id(part) -> {r: _Dim}
        slots = {}  # slot -> [(part or 'target', r, _Dim)]
        for p in parts:
            layout = _layout(p.x, _items(plain(p.index)), _traced_slice)
            if layout is None:
                raise _Unsupported
            full, axes = layout
            view = p.x[full]
            dims = {}
            for axis, k, n in axes:
                if not isinstance(k.step, (type(None), int, np.integer)) or k.step == 0:
                    raise _Unsupported
                r = view.ndim - axis
                dims[r] = _Dim(k, n)
                slots.setdefault(keys(p, r, view.ndim), []).append((p, r, dims[r]))
            self.views[id(p)] = view
            self.dims[id(p)] = dims
        if target is not None:
            for r, dim in target.items():
                slots.setdefault(r, []).append(("target", r, dim))
        self.slots = slots
        self.mode = {}
        self.size = {}
        where, source = None, None
        for slot, members in slots.items():
            first = members[0][2]
            if all(m[2].same_as(first) for m in members):
                self.mode[slot] = "in place"
                self.size[slot] = first.n
                continue
            self.mode[slot] = "gathered"
            sources = [m for m in members if isinstance(m[0], Part)]
            size = builtins.min(m[2].n for m in sources) if sources else first.n
            self.size[slot] = size
            length = sources[0][2].length if sources else None
            others = [m[2].length for m in members[1:] if isinstance(m[0], Part)] if sources else []
            if target is not None and slot in target:
                others.append(target[slot].length)
            if others:
                ok = jnp.all(jnp.stack([jnp.asarray(length == o) for o in others]))
                if where is None:
                    where, source = _site()
                w, s = where, source
                checks.fail_unless(ok, lambda w=w, s=s: errors.make("masked-lengths", where=w, source=s))
            for p, r, dim in sources:
                view = self.views[id(p)]
                positions = dim.gather_positions(size)
                axis = view.ndim - r
                if positions is None:
                    view = lax.slice_in_dim(view, 0, size, axis=axis) if size != dim.n else view
                else:
                    view = jnp.take(view, positions, axis=axis)
                self.views[id(p)] = view
        self.slot_of = {}
        for slot, members in slots.items():
            for p, r, dim in members:
                self.slot_of[(id(p) if isinstance(p, Part) else "target", r)] = slot

    def slot_mask(self, slot):
        members = self.slots[slot]
        dim = members[0][2]
        if self.mode[slot] == "in place":
            return dim.in_place_mask()
        sources = [m for m in members if isinstance(m[0], Part)]
        length = sources[0][2].length if sources else dim.length
        return jnp.arange(self.size[slot]) < length

    def mask_for(self, slot_positions, ndim):
        """The mask of a value of ``ndim`` axes whose slots sit at ``{slot: r}``."""
        mask = None
        for slot, r in slot_positions.items():
            m = _expand(self.slot_mask(slot), r)
            mask = m if mask is None else mask & m
        return mask

    def value(self, tree, top=True):
        """``tree`` evaluated on the full-length views; (value, {slot: r}). ``top=False``: a
        read alone is filled with 1 outside its slice too (an operand of the write's operator)."""
        slots = {}

        def run(node, top):
            if isinstance(node, Part):
                view = self.views[id(node)]
                own = {self.slot_of[(id(node), r)]: r for r in self.dims[id(node)]}
                slots.update(own)
                if not top and own and jnp.issubdtype(view.dtype, jnp.inexact):
                    # outside the slice the arithmetic sees 1, not the array's other items
                    # (so their infinities or zeros leave no NaN in a gradient)
                    view = jnp.where(self.mask_for(own, view.ndim), view, jnp.ones((), view.dtype))
                return view
            if isinstance(node, Expr):
                return node.fn(*[run(a, False) for a in node.args])
            return node

        result = jnp.asarray(run(tree, top))
        # Operands that are not reads must not span a sliced axis (Python would broadcast
        # them against the slice's length).
        for other in _others(tree):
            shape = jnp.shape(other)
            for r in slots.values():
                if len(shape) >= r and shape[-r] != 1:
                    raise _Unsupported
        return result, slots


def _others(tree):
    if isinstance(tree, Expr):
        for a in tree.args:
            if isinstance(a, _Lazy):
                yield from _others(a)
            else:
                yield a


# --- consumers --------------------------------------------------------------------------------

_KINDS = {}
for _mod in (jnp, np):
    for _fname, _kind in (
        ("sum", "sum"),
        ("prod", "prod"),
        ("max", "max"),
        ("amax", "max"),
        ("min", "min"),
        ("amin", "min"),
        ("argmax", "argmax"),
        ("argmin", "argmin"),
        ("any", "any"),
        ("all", "all"),
        ("dot", "dot"),
        ("matmul", "matmul"),
    ):
        if hasattr(_mod, _fname):
            _KINDS[id(getattr(_mod, _fname))] = _kind
    _KINDS[id(_mod.linalg.norm)] = "norm"
_KINDS[id(builtins.sum)] = "builtin sum"
_METHODS = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "matmul", "dot"}

_REDUCE = {
    "sum": jnp.sum,
    "prod": jnp.prod,
    "max": jnp.max,
    "min": jnp.min,
    "any": jnp.any,
    "all": jnp.all,
    "norm": jnp.linalg.norm,
}


def _identity(kind, dtype):
    if kind in ("sum", "norm", "builtin sum"):
        return jnp.zeros((), dtype)
    if kind == "prod":
        return jnp.ones((), dtype)
    if kind in ("any", "all"):  # (False / True as the item's type: 0 / 1)
        return jnp.asarray(kind == "all").astype(dtype)
    low = kind in ("min", "argmin")
    if dtype == jnp.bool_:  # max: False, min: True
        return jnp.asarray(low)
    if jnp.issubdtype(dtype, jnp.inexact):
        return jnp.asarray(np.inf if low else -np.inf, dtype)
    info = jnp.iinfo(dtype)
    return jnp.asarray(info.max if low else info.min, dtype)


def _plain_call(fn, args):
    values = [evaluate(a) for a in args]
    if fn == "matmul":
        return operator.matmul(*values)
    if isinstance(fn, str):
        return getattr(values[0], fn)(*values[1:])
    return fn(*values)


def _kind(fn, nargs):
    kind = fn if isinstance(fn, str) and fn in _METHODS else _KINDS.get(id(fn)) if not isinstance(fn, str) else None
    if kind is None:
        return None
    if (nargs == 2) != (kind in ("dot", "matmul")):
        return None
    return kind


def masked(fn, *args):
    """``ops.masked(jnp.sum, ops.part(x)[:j])`` for ``jnp.sum(x[:j])``; ``ops.masked('sum',
    ...)`` for ``x[:j].sum()``; ``ops.masked('matmul', a, b)`` for ``a @ b``.

    Equivalent Python: ``fn(*args)`` (the method ``fn`` of the first argument, ``a @ b``).
    Where a slice's bound is traced the slice is read at full length and the positions
    outside it hold the reduction's identity (see this module's docstring)."""
    parts = []
    for a in args:
        _parts(a, parts)
    kind = _kind(fn, len(args))
    if kind is None or not any(_traced_part(p) for p in parts):
        return _plain_call(fn, args)
    try:
        return _masked(kind, fn, args, parts)
    except _Unsupported:
        return _plain_call(fn, args)


def _masked(kind, fn, args, parts):
    if any(_mask_index(p) is not None for p in parts):
        raise _Unsupported  # a read through a boolean mask: its count is the shape
    if kind in ("dot", "matmul"):
        return _masked_dot(kind, args, parts)

    def keys(p, r, ndim):
        return r

    aligned = _Aligned(parts, keys)
    value, slots = aligned.value(args[0])
    if not slots:
        raise _Unsupported
    if kind == "builtin sum" and (value.ndim == 0 or builtins.any(r != value.ndim for r in slots.values())):
        raise _Unsupported  # Python's sum adds the items of axis 0
    mask = aligned.mask_for(slots, value.ndim)
    if kind in ("argmax", "argmin") and not _forward_vector(value, aligned, parts):
        raise _Unsupported  # (before a check is staged for a form that is not used)
    if kind in ("max", "min", "argmax", "argmin"):
        _check_not_empty(kind, fn, args[0], aligned, slots, value.dtype)
    filled = jnp.where(mask, value, _identity(kind, value.dtype))
    if kind in ("argmax", "argmin"):
        return _masked_arg(kind, filled, mask)
    if kind == "builtin sum":
        return jnp.sum(filled, axis=0)
    return _REDUCE[kind](filled)


def _forward_vector(value, aligned, parts) -> bool:
    """Whether ``value`` is a vector read by slices whose steps are known and forward."""
    steps = [dim.k.step for p in parts for dim in aligned.dims[id(p)].values()]
    return value.ndim == 1 and all(step is None or (not is_tracer(step) and step > 0) for step in steps)


def _masked_arg(kind, filled, mask):
    """``jnp.argmax(x[k:])`` of a ``_forward_vector``: the position of the first extreme item
    in the slice, counted from its start (a position outside the slice, the first one, comes
    only from a tie with the fill, where the slice's own first item is the answer)."""
    found = (jnp.argmax if kind == "argmax" else jnp.argmin)(filled)
    found = jnp.where(mask[found], found, jnp.argmax(mask))
    return (jnp.cumsum(mask) - 1)[found]


def _check_not_empty(kind, fn, tree, aligned, slots, dtype):
    lengths = [aligned.slot_mask(slot).any() for slot in slots]
    ok = jnp.all(jnp.stack(lengths))
    try:
        empty = jnp.zeros((0,), dtype)
        _plain_call(fn, [empty])
    except Exception as exc:  # noqa: BLE001 - the error Python raises for an empty slice
        error = exc
    else:
        return
    checks.fail_unless(ok, lambda: type(error)(*error.args))


def _masked_dot(kind, args, parts):
    left, right = args
    left_parts = _parts(left, [])
    right_parts = _parts(right, [])
    if not left_parts or not right_parts or {id(p) for p in left_parts} & {id(p) for p in right_parts}:
        raise _Unsupported
    ndims = {}
    for side, ps in (("left", left_parts), ("right", right_parts)):
        for p in ps:
            ndims[id(p)] = side

    def keys(p, r, ndim):
        side = ndims[id(p)]
        return (side, r)

    aligned = _Aligned(parts, keys)
    lv, lslots = aligned.value(left)
    rv, rslots = aligned.value(right)
    if lv.ndim not in (1, 2) or rv.ndim not in (1, 2):
        raise _Unsupported
    contracted_right = 1 if rv.ndim == 1 else 2
    if set(lslots.values()) != {1} or set(rslots.values()) != {contracted_right}:
        raise _Unsupported  # a sliced axis the product keeps: its length is the result's shape
    (lslot,), (rslot,) = lslots, rslots
    ldims = [m[2] for m in aligned.slots[lslot]]
    rdims = [m[2] for m in aligned.slots[rslot]]
    if all(d.same_as(ldims[0]) for d in ldims + rdims):
        lmask = _expand(ldims[0].in_place_mask(), 1)
        rmask = _expand(ldims[0].in_place_mask(), contracted_right)
    else:
        # gather both into the slices' own order, lengths checked equal when it runs
        size = builtins.min(d.n for d in ldims + rdims)
        where, source = _site()
        ok = ldims[0].length == rdims[0].length
        checks.fail_unless(ok, lambda: errors.make("masked-lengths", where=where, source=source))
        lv = _gathered(left, aligned, lslot, size, 1)
        rv = _gathered(right, aligned, rslot, size, contracted_right)
        lmask = _expand(jnp.arange(size) < ldims[0].length, 1)
        rmask = _expand(jnp.arange(size) < rdims[0].length, contracted_right)
    lv = jnp.where(lmask, lv, jnp.zeros((), lv.dtype))
    rv = jnp.where(rmask, rv, jnp.zeros((), rv.dtype))
    return jnp.dot(lv, rv) if kind == "dot" else jnp.matmul(lv, rv)


def _gathered(tree, aligned, slot, size, r):
    """``tree`` (one side of a product) in its slice's own order, ``size`` long."""
    members = aligned.slots[slot]
    dim = members[0][2]
    if not all(m[2].same_as(dim) for m in members):
        raise _Unsupported  # the reads of one side slice differently (not how kernels are written)
    value, _ = aligned.value(tree)
    positions = dim.gather_positions(size)
    axis = value.ndim - r
    if positions is None:
        return lax.slice_in_dim(value, 0, size, axis=axis) if size != value.shape[axis] else value
    return jnp.take(value, positions, axis=axis)


# --- writes -----------------------------------------------------------------------------------


def _mask_index(p: Part):
    index = p.index
    if isinstance(index, _ARRAYS) and is_tracer(index) and index.dtype == jnp.bool_ and index.ndim >= 1:
        return index
    return None


def _traced_mask(x, index):
    if not isinstance(x, _ARRAYS):
        return None
    if isinstance(index, _ARRAYS) and is_tracer(index) and index.dtype == jnp.bool_ and index.ndim >= 1:
        if index.shape == x.shape[: index.ndim]:
            return index
    return None


def write(x, index, value, op=None):
    """``x`` after ``x[index] = value`` (``op``: ``x[index] = op(x[index], value)``) for a JAX
    array ``x`` whose index is a window at a traced start, a slice with a traced bound or a
    traced boolean mask; NotImplemented for any other index (the caller's plain update)."""
    result = write_window(x, index, value, op)
    if result is not NotImplemented:
        return result
    mask = _traced_mask(x, index)
    if mask is not None:
        return _write_through_mask(x, mask, value, op)
    if not isinstance(x, _ARRAYS) or not any(_traced_slice(k) for k in _items(plain(index))):
        return NotImplemented
    try:
        return _write_slice(x, index, value, op)
    except _Unsupported:
        return NotImplemented


def _write_slice(x, index, value, op):
    layout = _layout(x, _items(plain(index)), _traced_slice)
    if layout is None:
        raise _Unsupported
    full, axes = layout
    view = x[full]
    target = {}
    for axis, k, n in axes:
        if not isinstance(k.step, (type(None), int, np.integer)) or k.step == 0:
            raise _Unsupported
        target[view.ndim - axis] = _Dim(k, n)
    parts = _parts(value, [])
    if any(_mask_index(p) is not None for p in parts):
        raise _Unsupported
    if parts:
        aligned = _Aligned(parts, lambda p, r, ndim: r, target=target)
        new, slots = aligned.value(value, top=op is None)
        if set(slots) - set(target):
            raise _Unsupported  # a sliced axis of the value where the target has none
        gathered = [r for r in target if aligned.mode.get(r) == "gathered"]
    else:
        aligned = None
        new = jnp.asarray(value)
        for r in target:
            if new.ndim >= r and new.shape[-r] != 1:
                raise _Unsupported  # an array the slice's length long: not expressible at full length
        gathered = []
    # Values in the target's positions: a gathered slot is scattered back through the
    # target's own slice (item p of the value goes to position start + p * step).
    mask = None
    for r, dim in target.items():
        if r in gathered:
            q = jnp.arange(dim.n)
            d = q - dim.start
            p = d // dim.step
            valid = (d % dim.step == 0) & (p >= 0) & (p < dim.length)
            if new.ndim >= r and new.shape[-r] != 1:
                new = jnp.take(new, jnp.clip(p, 0, new.shape[-r] - 1), axis=new.ndim - r)
            m = _expand(valid, r)
        else:
            m = _expand(dim.in_place_mask(), r)
        mask = m if mask is None else mask & m
    if op is not None:
        new = op(view, new)
    new = jnp.where(
        mask, jnp.broadcast_to(new, jnp.broadcast_shapes(jnp.shape(new), view.shape)).astype(view.dtype), view
    )
    if new.shape != view.shape:
        raise _Unsupported
    return _put_back(x, full, new)


def _write_through_mask(x, mask, value, op):
    parts = _parts(value, [])
    expanded = _expand(mask, 1 + x.ndim - mask.ndim) if x.ndim > mask.ndim else mask
    expanded = mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    if parts:
        for p in parts:
            if _mask_index(p) is not mask or not isinstance(p.x, _ARRAYS) or p.x.shape != x.shape:
                return _refuse_mask_values(x, value)
        for other in _others(value):
            if jnp.ndim(other) != 0:
                return _refuse_mask_values(x, value)

        def run(node, top):
            if isinstance(node, Part):
                v = node.x
                if not top and jnp.issubdtype(v.dtype, jnp.inexact):
                    v = jnp.where(expanded, v, jnp.ones((), v.dtype))
                return v
            if isinstance(node, Expr):
                return node.fn(*[run(a, False) for a in node.args])
            return node

        new = jnp.asarray(run(value, True))
    else:
        new = jnp.asarray(value)
        extra = new.ndim - (x.ndim - mask.ndim)
        if extra > 0:
            if any(d != 1 for d in new.shape[:extra]):
                return _refuse_mask_values(x, value)  # an array of the selected count
            new = new.reshape(new.shape[extra:])  # a length-1 axis broadcasts over the selected items
    if op is not None:
        new = op(x, new)
    new = jnp.broadcast_to(new, x.shape).astype(x.dtype)
    return jnp.where(expanded, new, x)


def _refuse_mask_values(x, value):
    where, source = _site()
    raise errors.make("mask-write-values", where=where, source=source)
