"""Python's answer or autolax's own clear error, on every path (issue 13).

Each test is a program that returned a silently different value (or a JAX-internal error)
on some path at 480ca60. Every test runs the program as plain Python and through every path
in ``paths.PATHS`` (``autolax.jit``, ``jax.jit(autolax.convert(f))``, ``autolax.convert``
eagerly, the CLI's default output) on the same inputs, and compares value, exception type
and printed output (``paths.check_all_paths``).
"""

import jax
import jax.numpy as jnp
import pytest

import autolax
from paths import check_all_paths


# ----------------------------------------------------------------------------- unbound reads
def last_item(n):
    for i in range(n):
        last = i * 2
    return last


@pytest.mark.parametrize("n", [0, 1, 3])
def test_variable_of_a_loop_that_ran_zero_times_is_unbound(n, tmp_path):
    # 480ca60: autolax.jit returned 0 for n = 0; convert eagerly returned <undefined 'last'>.
    check_all_paths(last_item, n, tmp_dir=tmp_path)


def test_zero_trip_error_names_the_variable_and_is_an_unbound_local_error():
    with pytest.raises(UnboundLocalError, match=r"cannot access local variable 'last'.*test_python_semantics.py:\d+"):
        autolax.jit(last_item)(0)


def last_positive(xs):
    for i in range(xs.shape[0]):
        if xs[i] > 0:
            last = i
    return last


@pytest.mark.parametrize("xs", [[-1.0, 2.0, -3.0], [-1.0, -2.0, -3.0]])
def test_variable_assigned_under_a_traced_if_in_a_loop(xs, tmp_path):
    # 480ca60: 0 instead of UnboundLocalError when no item is positive.
    check_all_paths(last_positive, jnp.array(xs), tmp_dir=tmp_path)


def last_in_while(x):
    while x > 0:
        y = x
        x = x - 1.0
    return y


@pytest.mark.parametrize("x", [2.0, -1.0])
def test_while_loop_that_never_runs(x, tmp_path):
    check_all_paths(last_in_while, x, tmp_dir=tmp_path)


def swap_unbound(n):
    s = 1.0
    for i in range(n):
        s, t = t, s
    return s


@pytest.mark.parametrize("static", [(), (0,)])
def test_name_read_before_any_assignment(static, tmp_path):
    # 480ca60: UndefinedVariableError "'s' loses its value in the loop" (traced n).
    check_all_paths(swap_unbound, 2, static_argnums=static, tmp_dir=tmp_path)


def test_maybe_unbound_read_under_vmap_with_lanes_that_ran():
    assert jax.vmap(autolax.convert(last_item))(jnp.array([1, 2])).tolist() == [0, 2]


# ----------------------------------------------------------------------------- static_argnums
def grid(rows, cols):
    count = 0
    for _ in rows:
        cs = cols
        for c in cs:
            count += c
    return count


def test_wrappers_with_different_static_argnums_do_not_share_traces():
    # 480ca60: b returned 3 (a's trace) where Python returns 0.
    a = autolax.jit(grid, static_argnums=(1,))
    b = autolax.jit(grid, static_argnums=(0,))
    assert a(jnp.arange(1), range(3)) == grid(jnp.arange(1), range(3)) == 3
    assert b(range(3), jnp.arange(1)) == grid(range(3), jnp.arange(1)) == 0
