"""Lists built by appending inside staged loops: ``StackedList`` and the bookkeeping that moves
appended items out of a loop's carry into its stacked outputs."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from autolax.runtime import compat, errors
from autolax.runtime.ops import report
from autolax.runtime.plan import Unstageable


def is_tracer(x) -> bool:
    return isinstance(x, compat.Tracer)


def key_order(value):
    """The insertion order of each dict in ``value`` (through nested lists, tuples and
    dicts), or None if there is none to keep. A pytree round trip sorts a dict's keys, but
    Python code sees insertion order (``for v in d.values()``, ``print(d)``): ``restore_order``
    puts it back."""
    if type(value) is dict:
        subs = tuple((k, key_order(v)) for k, v in value.items())
        try:
            in_order = list(value) == sorted(value)
        except TypeError:
            in_order = False
        if in_order and all(sub is None for _, sub in subs):
            return None
        return (dict, subs)
    if isinstance(value, (list, tuple)):
        subs = tuple(key_order(v) for v in value)
        return (type(value), subs) if any(sub is not None for sub in subs) else None
    return None


def restore_order(value, order):
    """``value`` (rebuilt from leaves) with the dict orders ``key_order`` recorded."""
    if order is None:
        return value
    kind, subs = order
    if kind is dict:
        if type(value) is not dict or len(value) != len(subs) or any(k not in value for k, _ in subs):
            return value
        return {k: restore_order(value[k], sub) for k, sub in subs}
    if type(value) is not kind or len(value) != len(subs):
        return value
    items = [restore_order(v, sub) for v, sub in zip(value, subs)]
    if kind is list:
        return items
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def tree_map_ordered(fn, tree, *rest):
    """``jax.tree_util.tree_map`` that keeps ``tree``'s dict insertion order."""
    return restore_order(jax.tree_util.tree_map(fn, tree, *rest), key_order(tree))


def _block_length(block) -> int:
    return jax.tree_util.tree_leaves(block)[0].shape[0]


def _row(block, k):
    return tree_map_ordered(lambda a: a[k], block)


def _stack_items(items):
    try:
        return tree_map_ordered(lambda *xs: jnp.stack(xs), *items)
    except (TypeError, ValueError) as exc:
        raise Unstageable(errors.make("appended-items-differ", detail=exc)) from None


def _concatenate(blocks):
    return tree_map_ordered(lambda *bs: jnp.concatenate(bs), *blocks)


class StackedList:
    """A list whose items were appended inside a staged loop.

    It behaves like the list the original Python would have built -- ``len(lst)``,
    ``lst[i]``, ``lst[-1]``, iteration, ``lst.append(x)``, the other list methods -- but the items from a loop are
    held as one stacked array, so ``jnp.stack(lst)`` / ``jnp.asarray(lst)`` cost no
    per-item operations.
    """

    def __init__(self, segments):
        self._segments = list(segments)  # [("items", list) | ("stacked", pytree of arrays)]
        # (The other list methods -- insert, pop, remove, item assignment ... -- turn it into
        # one plain list of its items first.)
        self.extends = None  # the list a staged loop appended to, to give this one

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
                return payload[k] if kind == "items" else self._row(payload, k)
            k -= length
        raise IndexError("list index out of range")

    def _row(self, block, k):
        """Row ``k`` of a stacked block, one object per row (``lst[-1] is lst[-1]``, as for a
        list's items: ``lst.remove(lst[-1])`` finds it by identity) within one trace: a row
        read while a staged body is traced is a value of that trace only (a body traced and
        dropped, then traced again, must not see the first trace's rows)."""
        rows = self.__dict__.setdefault("_rows", {})
        where = report.current_staging()
        key = (id(block), k, id(where))
        if key not in rows:
            rows[key] = (block, where, _row(block, k))  # block and trace kept: their ids stay their own
        return rows[key][2]

    def _items(self) -> list:
        """The list as one plain list of its items (rows of the stacked blocks), which it now
        holds: for the list methods other than ``append`` / ``extend``, which change items
        before the end (they then cost one operation per item, as in Python)."""
        if len(self._segments) != 1 or self._segments[0][0] != "items":
            self._segments = [("items", list(self))]
        return self._segments[0][1]

    def __setitem__(self, index, value):
        self._items()[index] = value

    def __delitem__(self, index):
        del self._items()[index]

    def insert(self, index, value):
        self._items().insert(index, value)

    def pop(self, index=-1):
        return self._items().pop(index)

    def remove(self, value):
        self._items().remove(value)

    def clear(self):
        self._segments = []

    def reverse(self):
        self._items().reverse()

    def sort(self, *, key=None, reverse=False):
        self._items().sort(key=key, reverse=reverse)

    def index(self, value, *args):
        return list(self).index(value, *args)

    def count(self, value):
        return list(self).count(value)

    def copy(self):
        return StackedList([(k, list(p) if k == "items" else p) for k, p in self._segments])

    def __iadd__(self, other):
        self.extend(other)
        return self

    def __mul__(self, times):
        return StackedList([("items", list(self) * times)])

    __rmul__ = __mul__

    def __imul__(self, times):
        items = self._items()
        items *= times
        return self

    def __iter__(self):
        for kind, payload in self._segments:
            if kind == "items":
                yield from payload
            else:
                for k in range(_block_length(payload)):
                    yield self._row(payload, k)

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
        return _concatenate(blocks)

    def __jax_array__(self):
        tree = self.stacked_tree()
        if tree is None:
            return jnp.zeros((0,))
        rows = _rows_array(tree)
        if rows is None:
            # Items that are not rows of arrays of one shape (dicts, ragged rows): what
            # `jnp.asarray` of the plain list does, its error included.
            return jnp.asarray(list(self))
        return rows

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.__jax_array__(), dtype=dtype)

    def __repr__(self):
        return f"[{len(self)} items]"  # how errors show a list a loop appended to


def _rows_array(tree):
    """The array ``jnp.asarray`` makes of a list whose items are the rows of ``tree``
    (stacked blocks): an array item is its block; an item that is a list or tuple of arrays
    (``rows.append([x, y])``) is a row whose fields stack along the second axis, as
    ``jnp.asarray([[x0, y0], [x1, y1]])`` does. None if the items are not such rows (a
    dict, fields of different shapes)."""
    if isinstance(tree, (jax.Array, compat.Tracer)):
        return tree
    if not isinstance(tree, (list, tuple)) or not tree:
        return None
    fields = [_rows_array(t) for t in tree]
    if any(f is None for f in fields) or len({f.shape for f in fields}) != 1:
        return None
    return jnp.stack(fields, axis=1)


def _flatten(lst):
    # Each stacked block's rank, as traced: a block with one more axis when it comes back is
    # batched (``jax.vmap``'s outputs carry the batch axis first).
    kinds = tuple(
        (k, None if k == "items" else getattr(jax.tree_util.tree_leaves(p)[0], "ndim", None)) for k, p in lst._segments
    )
    return tuple(p for _, p in lst._segments), kinds


def _unflatten(kinds, payloads):
    if _computed(payloads):
        return AppendedList(_plain_list(kinds, payloads), ("stacked", kinds), payloads)
    return StackedList([(k, list(p) if k == "items" else p) for (k, _), p in zip(kinds, payloads)])


def _computed(payloads) -> bool:
    """Are these the values a program computed (concrete arrays, as ``jax.jit`` or
    ``jax.vmap`` return them), not tracers or shapes?"""
    leaves = jax.tree_util.tree_leaves(payloads)
    return all(isinstance(x, (jax.Array, np.ndarray, np.generic)) and not isinstance(x, compat.Tracer) for x in leaves)


def _plain_list(kinds, payloads) -> list:
    """The Python list a list appended to in a staged loop is, once the program has run: what
    the original Python returns (``jax.jit(f)(...)`` of a function returning such a list gives
    a ``list``, not autolax's ``StackedList``). Its items are the rows of the stacked blocks
    (under ``jax.vmap``, along their second axis: each item holds every lane)."""
    out = []
    for (kind, ndim), payload in zip(kinds, payloads):
        if kind == "items":
            out.extend(payload)
            continue
        first = jax.tree_util.tree_leaves(payload)[0]
        batched = ndim is not None and first.ndim == ndim + 1
        length = first.shape[1] if batched else first.shape[0]
        for k in range(length):
            out.append(tree_map_ordered((lambda a, k=k: a[:, k]) if batched else (lambda a, k=k: a[k]), payload))
    return out


class AppendedList(list):
    """A list appended to in a staged loop, as the program returned it: a ``list`` of its
    items (what the original Python returns), which flattens as a pytree to the stacked
    arrays the compiled program computed. JAX relies on that round trip: it unflattens a
    jitted function's outputs and may flatten them again (the fast path of a second call
    does), expecting the same structure. Once changed (an item appended, replaced or
    removed), it flattens as the list of its items."""

    def __init__(self, items, aux, children):
        super().__init__(items)
        self._flat = (children, aux, tuple(self))

    def _unchanged(self) -> bool:
        items = self._flat[2]
        return len(self) == len(items) and all(a is b for a, b in zip(self, items))


def plain_lists(value):
    """``value`` with each ``AppendedList`` in it (through lists, tuples and dicts) made a plain
    ``list``, pytree and all (``autolax.jit`` returns these, as the original Python does)."""
    if isinstance(value, AppendedList):
        return [plain_lists(v) for v in value]
    if type(value) in (list, tuple):
        new = [plain_lists(v) for v in value]
        return value if all(a is b for a, b in zip(new, value)) else type(value)(new)
    if type(value) is dict:
        new = {k: plain_lists(v) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new
    return value


def _flatten_appended(lst):
    if lst._unchanged():
        return lst._flat[:2]
    return tuple(lst), ("items", len(lst))


def _unflatten_appended(aux, children):
    how, kinds = aux
    if how == "items":  # a list changed after it was returned: its items, as a list flattens
        return AppendedList(children, aux, tuple(children))
    return _unflatten(kinds, children)


jax.tree_util.register_pytree_node(StackedList, _flatten, _unflatten)
jax.tree_util.register_pytree_node(AppendedList, _flatten_appended, _unflatten_appended)


def _chunks(value):
    if isinstance(value, StackedList):
        return list(value._segments)
    return [("items", list(value))]


def list_shape(value):
    """``(length, is_plain_list, value, segments)`` of a list-like value, else None (taken
    before a loop body runs, since appends mutate the list in place; ``segments`` are its
    parts as they were, to tell appends from other changes)."""
    if isinstance(value, (list, StackedList)):
        return len(value), isinstance(value, list), value, _parts(value)
    return None


def appended_block(before, after):
    """If ``after`` is the list described by ``before`` (a ``list_shape``) with items
    appended: ``(prefix, block, single)`` -- its first items (in the original type) and the
    new ones stacked into one block, or (``single``) the one new item itself. Else None."""
    if before is None or not isinstance(after, (list, StackedList)):
        return None
    n_before, was_list, original, segments = before
    if after is not original and getattr(after, "extends", None) is not original:
        return None  # a new list bound to the name (`lst = []` in the body), not appends
    if not _starts_with(after, segments):
        return None  # items before the end changed (`insert`, `lst[0] = v`): not only appends
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
    before_ids = {id(p) for p in segments}
    if any(id(x) in before_ids for kind, p in new_chunks for x in (p if kind == "items" else [p])):
        return None  # an item it held before, again (`lst *= 2`, `lst += lst`): not appends of new values
    single = (
        len(new_chunks) == 1
        and new_chunks[0][0] == "items"
        and len(new_chunks[0][1]) == 1
        and all(isinstance(leaf, (jax.Array, compat.Tracer)) for leaf in jax.tree_util.tree_leaves(new_chunks[0][1][0]))
    )
    if single:  # one array item: the loop stacks it as is (no block of one row to reshape)
        block = new_chunks[0][1][0]
    else:
        blocks = [_stack_items(p) if k == "items" else p for k, p in new_chunks]
        block = blocks[0] if len(blocks) == 1 else _concatenate(blocks)
    if was_list and all(k == "items" for k, _ in prefix_chunks):
        prefix = [x for _, p in prefix_chunks for x in p]
    else:
        prefix = StackedList([(k, list(p) if k == "items" else p) for k, p in prefix_chunks])
    return prefix, block, single


def _parts(lst) -> list:
    """The list's items and stacked blocks, in order (compared by identity)."""
    out = []
    for kind, payload in _chunks(lst):
        out.extend(payload if kind == "items" else [payload])
    return out


def _starts_with(lst, parts) -> bool:
    """Does ``lst`` begin with exactly these items and blocks (the same objects)?"""
    now = _parts(lst)
    return len(now) >= len(parts) and all(a is b for a, b in zip(now, parts))


def append_block(prefix, block, extends=None):
    """``prefix`` followed by the rows of ``block``, as a StackedList. ``extends``: the list
    a loop started from, which this one continues (see ``appended_block``)."""
    segments = _chunks(prefix) if len(prefix) else []
    new = StackedList(segments + [("stacked", block)])
    new.extends = extends
    return new
