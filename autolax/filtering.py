"""``autolax.filter_jit``: ``autolax.jit`` with Equinox's ``filter_jit`` semantics.

Every leaf of the arguments (and of the function itself, when it is a module) that is an
array -- a JAX or NumPy array -- is traced; every other leaf (a Python number, a string, a
function, an activation held by a module) is static: part of the compilation's cache key,
compared by ``==`` and hashed. Outputs may hold non-array leaves too. Needs no Equinox.
"""

from __future__ import annotations

import jax
import numpy as np

from autolax.runtime import compat

_DYNAMIC = object()  # marks a leaf position filled by a traced value


def is_array(x) -> bool:
    """Equinox's ``is_array``: JAX and NumPy arrays (and tracers) are traced."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or compat.is_tracer(x)


class _Static:
    """Hashable holder of the static part of a pytree: its structure and non-array leaves.

    A pytree node with no children (the value travels in the tree structure), so a jitted
    function can return it."""

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return type(other) is _Static and _same(self.value, other.value)


def _same(a, b) -> bool:
    if a is b:
        return True
    result = a == b
    return result if isinstance(result, bool) else bool(np.all(result))


jax.tree_util.register_pytree_node(_Static, lambda s: ((), s.value), lambda value, _: _Static(value))


def partition(tree):
    """(the array leaves of ``tree``, a ``_Static`` of everything else)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    dynamic = [x for x in leaves if is_array(x)]
    static = tuple(_DYNAMIC if is_array(x) else x for x in leaves)
    return dynamic, _Static((treedef, static))


def combine(dynamic, static: _Static):
    treedef, leaves = static.value
    it = iter(dynamic)
    return jax.tree_util.tree_unflatten(treedef, [next(it) if x is _DYNAMIC else x for x in leaves])


# Stands for a ``FilterJit``'s own function in the static part of a call: the function
# is the run's, not the compilation cache key's (see ``FilterJit.__init__``).
_OWN_FUNCTION = object()


def _runner(own):
    """The function a ``FilterJit``'s ``jax.jit`` object traces, running ``own`` where the
    static part of a call holds ``_OWN_FUNCTION``."""

    def filter_jit_run(static, dynamic):
        fn, args, kwargs = combine(dynamic, static)
        out = (own if fn is _OWN_FUNCTION else fn)(*args, **kwargs)
        out_dynamic, out_static = partition(out)
        return out_dynamic, out_static

    return filter_jit_run


def _check_hashable(static: _Static):
    try:
        hash(static)
    except TypeError as exc:
        raise TypeError(
            f"autolax.filter_jit: a non-array argument (or a non-array field of the function) is not hashable "
            f"({exc}); non-array leaves are static and key the compilation cache. Make it hashable, or pass it "
            "as an array."
        ) from None


class FilterJit:
    """The jitted function of ``autolax.filter_jit``: partitions each call's function and
    arguments into arrays (traced) and the rest (static), as ``eqx.filter_jit`` does."""

    _DONATE = {"none": (), "all": (1,)}

    def __init__(self, fn, donate: str = "none"):
        if donate not in self._DONATE:
            raise ValueError(f"autolax.filter_jit: donate must be one of {sorted(self._DONATE)}, got {donate!r}")
        self._fn = fn
        # A function with no array leaves (a plain function, not a module holding arrays)
        # is not part of each call's static part: JAX's C++ cache keeps the static
        # arguments it compiled for, and Python's cycle collector cannot see that
        # reference, so a function defined in a notebook cell (whose globals hold this
        # object) would never be freed. Its run holds it instead, where the collector sees it.
        leaves = jax.tree_util.tree_leaves(fn)
        self._own = len(leaves) == 1 and leaves[0] is fn
        # A function object of its own: the trace cache belongs to this filter_jit object.
        run = _runner(fn if self._own else None)
        self._jitted = jax.jit(run, static_argnums=0, donate_argnums=self._DONATE[donate])

    def _split(self, args, kwargs):
        dynamic, static = partition((_OWN_FUNCTION if self._own else self._fn, args, kwargs))
        _check_hashable(static)
        return static, dynamic

    def __call__(self, *args, **kwargs):
        static, dynamic = self._split(args, kwargs)
        out_dynamic, out_static = self._jitted(static, dynamic)
        return combine(out_dynamic, out_static)

    def trace(self, *args, **kwargs):
        return self._jitted.trace(*self._split(args, kwargs))

    def lower(self, *args, **kwargs):
        return self._jitted.lower(*self._split(args, kwargs))


def filter_trace(fn, args, kwargs):
    """The closed jaxpr of ``fn(*args, **kwargs)`` traced with filter semantics (for
    ``trace_check``)."""
    return FilterJit(fn).trace(*args, **kwargs).jaxpr
