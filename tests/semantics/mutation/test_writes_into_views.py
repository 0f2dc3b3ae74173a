"""A write into a NumPy view or a list slice changes what it was taken from, as in Python
(found by the second real-program corpus, ``tests/corpus2``), on every path.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

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
