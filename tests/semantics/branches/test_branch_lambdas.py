"""Branches written as lambdas (``frontend/passes/branch_lambdas.py``): what the converted
program computes, raises and prints is Python's, on every path, where the pass inlines a
branch and where it must not (values whose order shows, statements of other kinds)."""

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths


def clamp(x, lo):
    if x < lo:
        x = lo
    return x


def pair(x, n):
    if x < 0:
        s, n = -1, n - 1
    elif x == 0:
        s = 0
    else:
        s = 1
    return s, n


def order_shows(x, xs):
    a = b = 0.0
    if x > 0:
        b = xs[5]  # IndexError first, as Python computes it
        a = {}["k"]
    return a, b


def reads_what_it_assigned(x):
    y = 1.0
    if x > 0:
        y = x * 2
        z = y + 1
    else:
        z = 0.0
    return y, z


def prints_in_a_branch(x):
    r = 0.0
    if x > 1:
        r = x - 1
        print("big")
    elif x > 0:
        r = x
    return r


def shifted(v, at):
    return v + at


def a_keyword_named_at(x, y):
    # The printer reads the descriptor from an ops call's `at=`: a user's own `at=` keyword
    # (a name, not a descriptor) is printed as it is.
    if x > 0:
        x = x + 1
    w = shifted(x, at=y)
    return w


CASES = [
    (clamp, (jnp.float32(-2.0), 0.5)),
    (clamp, (jnp.float32(2.0), 0.5)),
    (pair, (jnp.float32(-1.0), 3)),
    (pair, (jnp.float32(0.0), 3)),
    (pair, (jnp.float32(4.0), 3)),
    (reads_what_it_assigned, (jnp.float32(3.0),)),
    (reads_what_it_assigned, (jnp.float32(-3.0),)),
    (prints_in_a_branch, (jnp.float32(3.0),)),
    (prints_in_a_branch, (jnp.float32(0.5),)),
    (a_keyword_named_at, (jnp.float32(1.0), 2.0)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{fn.__name__}-{k}" for k, (fn, _) in enumerate(CASES)])
def test_the_converted_program_is_pythons(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_a_users_at_keyword_is_printed_as_written():
    assert "shifted, x, at=y)" in autolax.to_source(a_keyword_named_at)


def test_values_are_computed_in_pythons_order(tmp_path):
    # The branch raises while it is staged: autolax.jit raises it when the program takes the
    # branch, the other paths may refuse (StagedEffectError); none may raise the KeyError.
    check_all_paths(order_shows, jnp.float32(1.0), [1.0, 2.0], tmp_dir=tmp_path, refusal=True)
    check_all_paths(order_shows, 1.0, [1.0, 2.0], tmp_dir=tmp_path, static_argnums=(0,))


def test_a_branch_that_only_computes_is_a_lambda_and_the_rest_stay_functions():
    assert "x = ops.cond(x < lo, lambda: lo, lambda: x, at=" in autolax.to_source(clamp)
    text = autolax.to_source(pair)
    assert "lambda n: (n - 1, -1)" in text
    assert "lambda: 0, lambda: 1" in text  # the `elif`, inside the `else` branch
    # Two values that may raise, given back in another order than computed: functions.
    assert "def if_true" in autolax.to_source(order_shows)
    # `z = y + 1` reads the `y` the branch assigned.
    assert "def if_true" in autolax.to_source(reads_what_it_assigned)
    text = autolax.to_source(prints_in_a_branch)
    assert "def if_true" in text and "lambda: x" in text


def test_a_lambda_branch_stages_the_same_cond():
    jaxpr = str(autolax.jit(clamp).lower(jnp.float32(1.0), jnp.float32(0.5)).as_text())
    assert "case" in jaxpr or "select" in jaxpr or "cond" in jaxpr
    np.testing.assert_allclose(autolax.jit(clamp)(jnp.float32(-1.0), jnp.float32(0.5)), 0.5)
