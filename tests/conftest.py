"""Shared helpers: run a function as plain Python and converted, and compare."""

from __future__ import annotations

import importlib.util
import os
import sys

# On a GPU, each test process (pytest-xdist workers included) would otherwise take most of the
# device memory up front; on CPU the setting changes nothing. It must precede the jax import.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax
import numpy as np
import autolax
from autolax.check import count_equations, primitive_counts


def _to_numpy(tree):
    return jax.tree_util.tree_map(lambda x: np.asarray(x), tree)


def assert_close(expected, got, rtol=1e-5, atol=1e-6):
    expected_leaves, expected_tree = jax.tree_util.tree_flatten(expected)
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    assert len(expected_leaves) == len(got_leaves), (expected, got)
    for e, g in zip(expected_leaves, got_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=atol)


def assert_matches(fn, *args, python_args=None, jit_kwargs=None, **kwargs):
    """``fn`` as plain Python on ``python_args`` (default: ``args``) gives the same values as
    ``autolax.jit(fn)`` and, eagerly, ``autolax.convert(fn)`` on ``args``."""
    py_args = args if python_args is None else python_args
    expected = fn(*[_copy(a) for a in py_args], **kwargs)
    got_jit = autolax.jit(fn, **(jit_kwargs or {}))(*[_copy(a) for a in args], **kwargs)
    assert_close(expected, got_jit)
    if not jit_kwargs:
        got_eager = autolax.convert(fn)(*[_copy(a) for a in py_args], **kwargs)
        assert_close(expected, got_eager)
    return expected


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def jaxpr_of(fn, *args, **kwargs):
    return jax.make_jaxpr(autolax.convert(fn), **kwargs)(*args)


def equations(fn, *args, **kwargs) -> int:
    return count_equations(jaxpr_of(fn, *args, **kwargs).jaxpr)


def primitives(fn, *args, **kwargs):
    return primitive_counts(jaxpr_of(fn, *args, **kwargs).jaxpr)


def load_module(path, name):
    """The module at ``path`` (imported from its file, so autolax reads its real source),
    with its folder on the import path while it loads: where ``autolax convert
    --standalone`` writes ``autolax_runtime``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module
