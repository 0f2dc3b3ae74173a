"""Mutation: item and attribute assignment, and list appends."""

from __future__ import annotations

import builtins
import operator

import jax
import jax.numpy as jnp
import numpy as np

from autolax.ops.state import is_tracer, key_order, restore_order

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


class _Ref:
    """``ops.at(x)[index]``: ``.set(v)`` and one method per augmented operator."""

    def __init__(self, container, index):
        self.container = container
        self.index = index

    def set(self, value):
        x, i = self.container, self.index
        if isinstance(x, (jax.Array, jax.core.Tracer)):
            return x.at[i].set(value)
        x[i] = value
        return x

    def _update(self, op, value):
        x, i = self.container, self.index
        if isinstance(x, (jax.Array, jax.core.Tracer)):
            # x[i] = x[i] <op> v, exactly as NumPy's `x[i] += v` (no accumulation of repeated
            # indices, unlike `.at[i].add`).
            return x.at[i].set(op(x[i], value))
        x[i] = op(x[i], value)
        return x

    def __getattr__(self, name):
        if name in _OPS:
            return lambda value: self._update(_OPS[name], value)
        raise AttributeError(name)


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


# ----------------------------------------------------------------------------- StackedList
def _block_length(block) -> int:
    return jax.tree_util.tree_leaves(block)[0].shape[0]


def _row(block, k):
    return restore_order(jax.tree_util.tree_map(lambda a: a[k], block), key_order(block))


def _stack_items(items):
    try:
        return restore_order(jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *items), key_order(items[0]))
    except (TypeError, ValueError) as exc:
        from autolax.ops.loops import Unstageable

        raise Unstageable(f"the items appended to a list differ in structure, shape or dtype ({exc})") from None


class StackedList:
    """A list whose items were appended inside a staged loop.

    It behaves like the list the original Python would have built -- ``len(lst)``,
    ``lst[i]``, ``lst[-1]``, iteration, ``lst.append(x)`` -- but the items from a loop are
    held as one stacked array, so ``jnp.stack(lst)`` / ``jnp.asarray(lst)`` cost no
    per-item operations.
    """

    def __init__(self, segments):
        self._segments = list(segments)  # [("items", list) | ("stacked", pytree of arrays)]
        self.extends = None  # the list a staged loop appended to, to give this one

    @classmethod
    def from_value(cls, value):
        if isinstance(value, StackedList):
            return cls(list(value._segments))
        return cls([("items", list(value))])

    def _lengths(self):
        return [len(p) if kind == "items" else _block_length(p) for kind, p in self._segments]

    def __len__(self):
        return sum(self._lengths())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        if is_tracer(index):
            return _row(self.stacked_tree(), index)
        k = operator.index(index)
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("list index out of range")
        for (kind, payload), length in zip(self._segments, self._lengths()):
            if k < length:
                return payload[k] if kind == "items" else _row(payload, k)
            k -= length
        raise IndexError("list index out of range")

    def __setitem__(self, index, value):
        raise TypeError(
            "items of a list built by appending in a staged loop cannot be reassigned; "
            "use `arr = jnp.stack(lst)` and `arr = arr.at[i].set(v)` instead"
        )

    def __iter__(self):
        for kind, payload in self._segments:
            if kind == "items":
                yield from payload
            else:
                for k in range(_block_length(payload)):
                    yield _row(payload, k)

    def append(self, value):
        if self._segments and self._segments[-1][0] == "items":
            self._segments[-1][1].append(value)
        else:
            self._segments.append(("items", [value]))

    def extend(self, values):
        for v in values:
            self.append(v)

    def __add__(self, other):
        return StackedList(self._segments + [("items", list(other))])

    def __radd__(self, other):
        return StackedList([("items", list(other))] + self._segments)

    def stacked_tree(self):
        """All items stacked along a new leading axis (None for an empty list)."""
        blocks = []
        for kind, payload in self._segments:
            if kind == "items":
                if payload:
                    blocks.append(_stack_items(payload))
            else:
                blocks.append(payload)
        if not blocks:
            return None
        if len(blocks) == 1:
            return blocks[0]
        return restore_order(jax.tree_util.tree_map(lambda *bs: jnp.concatenate(bs), *blocks), key_order(blocks[0]))

    def __jax_array__(self):
        tree = self.stacked_tree()
        if tree is None:
            return jnp.zeros((0,))
        if not isinstance(tree, (jax.Array, jax.core.Tracer)):
            raise TypeError("a list of non-array items cannot be converted to an array")
        return tree

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.__jax_array__(), dtype=dtype)

    def __repr__(self):
        return f"StackedList(len={len(self)})"


def _flatten(lst):
    return tuple(p for _, p in lst._segments), tuple(k for k, _ in lst._segments)


def _unflatten(kinds, payloads):
    return StackedList([(k, list(p) if k == "items" else p) for k, p in zip(kinds, payloads)])


jax.tree_util.register_pytree_node(StackedList, _flatten, _unflatten)


def stacked(lst):
    """``jnp.stack(ops.stacked(lst))``: the stacked array of a list built in a staged loop
    (``jnp.stack`` of an array is that array), or ``lst`` itself for any other value."""
    if isinstance(lst, StackedList):
        tree = lst.stacked_tree()
        return lst if tree is None else tree
    return lst


def _chunks(value):
    if isinstance(value, StackedList):
        return list(value._segments)
    return [("items", list(value))]


def list_shape(value):
    """``(length, is_plain_list, value)`` of a list-like value, else None (taken before a loop
    body runs, since appends mutate the list in place)."""
    if isinstance(value, (list, StackedList)):
        return len(value), isinstance(value, list), value
    return None


def appended_block(before, after):
    """If ``after`` is the list described by ``before`` (a ``list_shape``) with items
    appended: ``(prefix, block)`` -- its first items (in the original type) and the new ones
    stacked into one block. Else None."""
    if before is None or not isinstance(after, (list, StackedList)):
        return None
    n_before, was_list, original = before
    if after is not original and getattr(after, "extends", None) is not original:
        return None  # a new list bound to the name (`lst = []` in the body), not appends
    n_after = len(after)
    if n_after <= n_before:
        return None
    prefix_chunks, new_chunks, remaining = [], [], n_before
    for kind, payload in _chunks(after):
        length = len(payload) if kind == "items" else _block_length(payload)
        if remaining >= length:
            prefix_chunks.append((kind, payload))
            remaining -= length
        elif remaining > 0:
            if kind != "items":
                return None
            prefix_chunks.append(("items", payload[:remaining]))
            new_chunks.append(("items", payload[remaining:]))
            remaining = 0
        else:
            new_chunks.append((kind, payload))
    blocks = [_stack_items(p) if k == "items" else p for k, p in new_chunks]
    block = blocks[0] if len(blocks) == 1 else restore_order(jax.tree_util.tree_map(lambda *bs: jnp.concatenate(bs), *blocks), key_order(blocks[0]))
    if was_list and all(k == "items" for k, _ in prefix_chunks):
        prefix = [x for _, p in prefix_chunks for x in p]
    else:
        prefix = StackedList([(k, list(p) if k == "items" else p) for k, p in prefix_chunks])
    return prefix, block


def append_block(prefix, block, extends=None):
    """``prefix`` followed by the rows of ``block``, as a StackedList. ``extends``: the list
    a loop started from, which this one continues (see ``appended_block``)."""
    segments = _chunks(prefix) if len(prefix) else []
    new = StackedList(segments + [("stacked", block)])
    new.extends = extends
    return new
