"""Chained item assignment (``c[i, j] = c[j, i] = s``, covariance; issue 41, item 4) is the
assignments Python performs: the value evaluated once, the targets assigned from left to
right; compared with Python on every path.

(Split from tests/test_kernel_items.py.)"""

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import primitives
from semantics.idioms.test_common_idioms import standalone_agrees
from paths import check_all_paths


# ----------------------------------------------------------------------------- item 4
def covariance(d, c):
    n = d.shape[1]
    for i in range(n):
        for j in range(i, n):
            s = (d[:, i] * d[:, j]).sum()
            c[i, j] = c[j, i] = s
    return c


def alias_sees_both(a, x):
    b = a
    a[0] = a[1] = x
    return b, a


def unpacked_then_item(a, x):
    a = a.copy()
    k, a[2] = a[0:2] = x
    return a, k


def in_loop(a, n):
    a = a.copy()
    for i in range(n):
        a[i] = a[i + 1] = a[i] + a[i + 1]
    return a


def value_once(a):
    a = a.copy()

    def value():
        print("evaluated")  # printed once, as Python evaluates the value once
        return a[1] + 7.0

    a[0] = a[2] = value()
    return a


def overwritten_left_to_right(a, i):
    a = a.copy()
    a[i] = a[1] = 4.0 * a[i]  # when i == 1 both targets are one element: the last write wins
    return a


def test_chained_item_assignment_in_a_kernel(tmp_path):
    d = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    # every element of c is written, so the in-place changes of Python and of the eager path
    # do not carry from one path to the next
    check_all_paths(covariance, d, np.zeros((3, 3), np.float32), tmp_dir=tmp_path)
    standalone_agrees(covariance, d, np.zeros((3, 3), np.float32))
    got = autolax.jit(covariance)(d, jnp.zeros((3, 3)))
    np.testing.assert_allclose(got, d.T @ d)


@pytest.mark.parametrize("fn, args", [
    (alias_sees_both, (np.arange(3.0, dtype=np.float32), 5.0)),
    (unpacked_then_item, (np.arange(3.0, dtype=np.float32), (1.0, 2.0))),
    (in_loop, (np.arange(6.0, dtype=np.float32), 4)),
    (in_loop, (np.arange(6.0, dtype=np.float32), 0)),
    (value_once, (np.arange(3.0, dtype=np.float32),)),
    (overwritten_left_to_right, (np.arange(3.0, dtype=np.float32), 1)),
    (overwritten_left_to_right, (np.arange(3.0, dtype=np.float32), 2)),
], ids=lambda v: getattr(v, "__name__", None))
def test_chained_item_assignment_agrees_with_python(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_chained_item_assignment_is_staged():
    d = jnp.ones((4, 5))
    report = autolax.trace_check(covariance, d, jnp.zeros((5, 5)))
    assert not report.unrolled and report.consistent
    counts = primitives(covariance, d, jnp.zeros((5, 5)))
    assert counts["scan"] == 1 and counts["while"] == 1  # range(i, n): a fori_loop
