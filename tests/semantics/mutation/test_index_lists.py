"""A list written in an index (``a[[k, p]] = a[[p, k]]``): NumPy's index array, which JAX
takes only as an array (``passes/list_indices.py``, ``ops.index_list``), on every path."""

from __future__ import annotations

from typing import Callable, cast

import jax.numpy as jnp
import numpy as np
import pytest

from paths import agrees, run
from every_path import EVERY_PATH, ip, outcome  # noqa: F401 - ip: the magic's shell fixture


def swaps_rows_by_an_index_list(a, k, p):
    a[[k, p]] = a[[p, k]]
    return a


def swaps_columns_by_an_index_list(a):
    a[:, [0, 2]] = a[:, [2, 0]]
    return a


def picks_rows_by_a_list_of_bools(a):
    return a[[True, False, True]]


def indexes_a_python_list_by_a_list(xs):
    return xs[[0, 1]]  # Python's TypeError (list indices must be integers or slices)


def double(n):
    return 2 * n


def names_a_type_with_a_list(x):
    g = cast(Callable[[int], int], double)  # a list in a subscript that is no index
    return g(x)


M = np.arange(9.0).reshape(3, 3)


@pytest.mark.parametrize("fn, args", [
    (swaps_rows_by_an_index_list, (M, 0, 2)),
    (swaps_rows_by_an_index_list, (np.arange(4.0), 1, 3)),
    (swaps_columns_by_an_index_list, (M,)),
    (picks_rows_by_a_list_of_bools, (M,)),
])
def test_a_list_in_an_index_is_numpy_s_index_array(fn, args, tmp_path, ip):
    # Before: JAX's TypeError ("Using a non-tuple sequence for multidimensional indexing is
    # not allowed") where NumPy swaps the rows.
    expected = run("python", fn, tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args))
    assert expected.error is None
    jax_args = tuple(jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in args)
    for path in EVERY_PATH:
        got = outcome(path, fn, jax_args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)


@pytest.mark.parametrize("fn, args", [
    (indexes_a_python_list_by_a_list, ([1.0, 2.0, 3.0],)),
    (names_a_type_with_a_list, (3.0,)),
])
def test_a_list_in_a_subscript_of_something_else_is_left_to_python(fn, args, tmp_path, ip):
    expected = run("python", fn, args)
    for path in EVERY_PATH:
        got = outcome(path, fn, args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)
