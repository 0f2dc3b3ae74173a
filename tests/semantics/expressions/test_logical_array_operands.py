"""``a and v`` / ``a or v`` where the last operand is an array (issue 43, item 11): Python's
short-circuit on every path; as a value of two shapes, autolax's error naming the shapes.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- item 11: `a and v`, v an array
def if_and_array(x, v):
    if x > 0 and v:
        return 1
    return 0


def while_and_array(x, v):
    n = 0
    while x < 3.0 and v:
        x = x + 1.0
        n += 1
    return n


def if_or_array(x, v):
    if x > 0 or v:
        return 1
    return 0


def and_array_as_a_value(x, v):
    r = x > 0 and v
    return r


V = jnp.array([1.0, 2.0])


@pytest.mark.parametrize("fn, x", [
    (if_and_array, -1.0),  # Python: 0, never asks for the truth of `v`
    (if_and_array, 1.0),  # Python: ValueError (the truth value of an array ... is ambiguous)
    (while_and_array, 5.0),
    (while_and_array, 1.0),
    (if_or_array, 1.0),
    (if_or_array, -1.0),
])
def test_a_condition_whose_last_operand_is_an_array_is_python_s_short_circuit(fn, x, tmp_path, ip):
    # Before: ArrayConditionError for every x (item 11).
    check_every_path(fn, jnp.float32(x), V, tmp_path=tmp_path, ip=ip)


def test_and_as_a_value_of_two_shapes_is_refused_naming_the_shapes(tmp_path, ip):
    # Before: jnp.where broadcast the first operand to v's shape: [0., 0.] where Python
    # returns False -- a wrong value with no error.
    _, got = check_every_path(and_array_as_a_value, jnp.float32(-1.0), V, tmp_path=tmp_path, ip=ip, refusal=True)
    for path in ("autolax.jit", "jax.jit(convert)", "cli default", "standalone", "magic"):
        err = str(got[path].error)
        assert "is its first operand (shape ()) where that is false, else the next one (shape (2,))" in err, path
        assert "Fix: give the operands one shape" in err
        if path != "standalone":  # (this file's harness compiles that output under its source's name)
            assert "r = x > 0 and v" in err, path
    assert got["convert eagerly"].error is None


# ----------------------------------------------------------------------------- a comparison, an empty array
def if_and_comparison_of_an_array(x, v):
    if x > 0 and v >= 1.5:
        return 1
    return 0


def while_and_comparison_of_an_empty_slice(x, v):
    n = 0
    while x < 3.0 and v[1:1] >= 0.5:
        x = x + 1.0
        n += 1
    return n


def while_with_return_over_an_empty_slice(x, v):
    while v[1:1] >= 0.5:
        return 1
    return 2


@pytest.mark.parametrize("fn, x", [
    (if_and_comparison_of_an_array, -1.0),  # Python: 0, never asks for the truth of `v >= 1.5`
    (if_and_comparison_of_an_array, 1.0),  # Python: ValueError (more than one element)
    (while_and_comparison_of_an_empty_slice, 5.0),  # Python: 0
    (while_and_comparison_of_an_empty_slice, 1.0),  # Python: ValueError (an empty array)
])
def test_a_comparison_of_an_array_as_the_last_operand_is_python_s_short_circuit(fn, x, tmp_path, ip):
    # Before: autolax refused every x, saying the `and`'s value had two shapes, where Python
    # returns 0 for the x that stops at the first operand.
    check_every_path(fn, jnp.float32(x), V, tmp_path=tmp_path, ip=ip)


def test_the_test_of_a_while_with_a_return_that_is_an_empty_array_is_refused_as_a_condition(tmp_path, ip):
    # Before: "the value of the `and` ... is its first operand": an `and` the user never wrote
    # (the one the `return` adds to the loop's test).
    _, got = check_every_path(
        while_with_return_over_an_empty_slice, jnp.float32(1.0), V, tmp_path=tmp_path, ip=ip, refusal=True
    )
    for path in ("autolax.jit", "jax.jit(convert)", "cli default", "standalone", "magic"):
        err = str(got[path].error)
        assert "is a traced array of shape (0,); the truth value of an empty array is ambiguous" in err, path
        assert "`and`" not in err, path


# ----------------------------------------------------------------------------- assert
def assert_an_empty_comparison(x, v):
    assert v[1:1] >= x, "unexpected value"
    return 1


def assert_a_comparison_of_several_items(x, v):
    assert v >= x
    return 1


def assert_a_comparison_of_one_item(x, v):
    assert v[1:] >= x, "too small"
    return 1


@pytest.mark.parametrize("fn", [assert_an_empty_comparison, assert_a_comparison_of_several_items])
def test_assert_of_an_array_that_is_not_one_value_is_refused_as_a_condition(fn, tmp_path, ip):
    # Before: `jnp.all` of the test: an empty (or all-true) array passed the assert, where
    # Python raises ValueError, and the function returned 1.
    _, got = check_every_path(fn, jnp.float32(0.5), V, tmp_path=tmp_path, ip=ip, refusal=True)
    shape = "(0,)" if fn is assert_an_empty_comparison else "(2,)"
    for path in ("autolax.jit", "jax.jit(convert)", "cli default", "standalone", "magic"):
        err = str(got[path].error)
        assert f"(assert) is a traced array of shape {shape}" in err, path
        assert type(got[path].error).__name__ == "ArrayConditionError", path


@pytest.mark.parametrize("x", [0.5, 3.0])
def test_assert_of_one_item_is_its_truth(x, tmp_path, ip):
    check_every_path(assert_a_comparison_of_one_item, jnp.float32(x), V, tmp_path=tmp_path, ip=ip)
