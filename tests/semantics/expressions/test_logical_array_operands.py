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
