"""A write into a NumPy view or a list slice changes what it was taken from, as in Python
(found by the second real-program corpus, ``tests/corpus2``), on every path.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paths import agrees, run
from every_path import EVERY_PATH, ip, outcome  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- corpus2: a write into a NumPy view
def writes_into_a_column_view(a, k):
    u = a[1:, k]
    u[0] = u[0] + 10.0
    s = a.sum()
    a[2, k] = -1.0
    return a, u, s


def writes_into_a_list_slice(xs):
    u = xs[1:]
    u[0] = 99
    return xs, u


@pytest.mark.parametrize("fn, args, python_args", [
    (writes_into_a_column_view, (jnp.arange(9.0).reshape(3, 3), 1), (np.arange(9.0).reshape(3, 3), 1)),
    (writes_into_a_list_slice, ([1, 2, 3],), ([1, 2, 3],)),
])
def test_a_write_into_a_view_changes_the_array_it_was_taken_from(fn, args, python_args, tmp_path, ip):
    # Householder's `u = a[k+1:n, k]; u[0] = u[0] + u_mag` (tests/corpus2): NumPy writes
    # through to `a`; converted, `u` was a JAX array of its own and `a` kept the old column.
    # A list's slice is a copy, in Python and converted.
    expected = run("python", fn, python_args)
    for path in EVERY_PATH:
        got = outcome(path, fn, args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)


# ----------------------------------------------------------------------------- a row: `r = a[k]`
def writes_into_a_row(a, k):
    r = a[k]
    r[1] = 9.0
    r *= 2.0
    return a, r


def swaps_rows_through_a_name(a):
    # NumPy's classic pitfall: `r` is a view, so both rows end as row 1.
    r = a[0]
    a[0] = a[1]
    a[1] = r
    return a


def swaps_rows_in_one_statement(a, i, j):
    a[i], a[j] = a[j], a[i]  # the same pitfall: the right side's rows are views
    return a


def rotates_rows(a):
    a[0], a[1], a[2] = a[1], a[2], a[0]
    return a


def swaps_rows_with_a_copy(a):
    r = a[0].copy()
    a[0] = a[1]
    a[1] = r
    return a


def normalises_rows_in_a_loop(a, n):
    for k in range(n):
        row = a[k]
        row /= row[k]
    return a


def reads_through_an_index_array(a, idx):
    r = a[idx]  # an advanced index: a copy
    a[0] = -1.0
    return a, r


M = np.arange(1.0, 10.0).reshape(3, 3)
V = np.arange(1.0, 4.0)


@pytest.mark.parametrize("fn, args", [
    (writes_into_a_row, (M, 1)),
    (swaps_rows_through_a_name, (M,)),
    (swaps_rows_in_one_statement, (M, 0, 2)),
    (rotates_rows, (M,)),
    (swaps_rows_with_a_copy, (M,)),
    (normalises_rows_in_a_loop, (M, 3)),
    (reads_through_an_index_array, (M, np.array([2, 0]))),
    # of a vector, `a[k]` is a number (a copy): nothing is read again
    (swaps_rows_through_a_name, (V,)),
    (swaps_rows_in_one_statement, (V, 0, 2)),
    (rotates_rows, (V,)),
])
def test_a_row_taken_by_an_integer_index_is_a_view(fn, args, tmp_path, ip):
    # Before: `r = a[k]` was a value of its own where NumPy's is a view of the row: `r[1] = 9.0`
    # left `a` as it was, and `a[0], a[1] = a[1], a[0]` swapped the rows where NumPy copies
    # row 1 into both -- wrong answers with no error.
    expected = run("python", fn, tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args))
    jax_args = tuple(jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in args)
    for path in EVERY_PATH:
        got = outcome(path, fn, jax_args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)


# ----------------------------------------------------------------------------- a row: `for row in a:`
def normalises_each_row_it_iterates(a):
    for row in a:
        row /= row.sum()
    return a


def zeroes_each_row_s_first_item(a):
    for row in a:
        row[0] = 0.0
    return a


def augments_the_items_of_a_vector(v):
    total = 0.0
    for x in v:
        x += 1.0  # a number: rebound, `v` is unchanged
        total += x
    return v, total


@pytest.mark.parametrize("fn, args", [
    (normalises_each_row_it_iterates, (M,)),
    (zeroes_each_row_s_first_item, (M,)),
    (augments_the_items_of_a_vector, (V,)),
])
def test_a_row_a_loop_iterates_is_a_view(fn, args, tmp_path, ip):
    # Before: `for row in a: row /= row.sum()` left `a` as it was (NumPy divides each row in
    # place), with no error.
    expected = run("python", fn, tuple(x.copy() for x in args))
    jax_args = tuple(jnp.asarray(x) for x in args)
    for path in EVERY_PATH:
        got = outcome(path, fn, jax_args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)


# ----------------------------------------------------------------------------- an array held by a dict or a list
def zeroes_a_weight_through_its_name(params):
    w = params["w"]
    w[0] = 0.0
    return params


def scales_a_weight_in_a_loop(params, n):
    w = params["w"]
    for i in range(n):
        w[i] = w[i] * 2.0
    return params, w


def writes_into_a_row_of_a_list(rows):
    r = rows[0]
    r[1] = 5.0
    return rows


def augments_a_number_a_list_holds(losses, x):
    best = losses[0]
    best += x  # a number is rebound: the list keeps the old one
    return losses, best


@pytest.mark.parametrize("fn, args", [
    (zeroes_a_weight_through_its_name, ({"w": V, "b": M},)),
    (scales_a_weight_in_a_loop, ({"w": V, "b": M}, 2)),
    (writes_into_a_row_of_a_list, ([V, V * 2.0],)),
    (augments_a_number_a_list_holds, ([np.float32(1.0), np.float32(2.0)], 1.0)),
])
def test_a_write_into_an_array_a_container_holds_reaches_the_container(fn, args, tmp_path, ip):
    # Before: `w = params['w']; w[0] = 0.0` left `params['w']` as it was (NumPy changes the
    # array the dict holds), with no error.
    import copy

    expected = run("python", fn, copy.deepcopy(args))
    jax_args = jax.tree_util.tree_map(jnp.asarray, args)
    for path in EVERY_PATH:
        got = outcome(path, fn, copy.deepcopy(jax_args), tmp_path, ip)  # (eager paths change the dict)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)
