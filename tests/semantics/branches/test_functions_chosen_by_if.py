"""A function chosen by a traced ``if`` (issue 43, item 13): its calls are staged; results of
two shapes, or a choice under nested traced ``if``s, are refused naming the variable.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- item 13: a function chosen by a traced `if`
def slope(y, t):
    return y * t + 1.0


def integrate_backwards_when_negative(y, t_end):
    # the idiom: integrate -f(y, -t) when the interval runs backwards
    func = slope
    if t_end < 0:
        func = lambda y, t: -slope(y, -t)  # noqa: E731
    h = t_end / 4
    t = 0.0
    for i in range(4):
        y = y + h * func(y, t)
        t = t + h
    return y


def chooses_a_printing_function(x):
    def loud(v):
        print("loud", v)
        return v * 2

    def quiet(v):
        return v + 1

    f = quiet
    if x > 0:
        f = loud
    return f(x)


def chooses_functions_of_two_shapes(x):
    f = jnp.sin
    if x > 0:
        f = lambda v: jnp.stack([v, v])  # noqa: E731
    return f(x)


def chooses_in_nested_ifs(x, y):
    f = jnp.sin
    if x > 0:
        if y > 0:
            f = jnp.cos
        else:
            f = jnp.tanh
    return f(x)


@pytest.mark.parametrize("fn, args", [
    (integrate_backwards_when_negative, (jnp.float32(1.0), jnp.float32(2.0))),
    (integrate_backwards_when_negative, (jnp.float32(1.0), jnp.float32(-2.0))),
    (chooses_a_printing_function, (jnp.float32(3.0),)),
    (chooses_a_printing_function, (jnp.float32(-3.0),)),
])
def test_calls_of_a_function_rebound_under_a_traced_if_are_staged(fn, args, tmp_path, ip):
    # Before: StateMismatchError ("'func' is <function ...> in the `if` branch and <function
    # slope> in the `else` branch") on every staged path (item 13).
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)


def test_functions_whose_results_differ_in_shape_are_refused_naming_the_variable(tmp_path, ip):
    _, got = check_every_path(chooses_functions_of_two_shapes, jnp.float32(1.0), tmp_path=tmp_path, ip=ip,
                              refusal=True)
    err = str(got["autolax.jit"].error)
    assert "'f'" in err and "float32[2]" in err, err


def test_a_function_chosen_by_nested_traced_ifs_is_refused_naming_the_variable(tmp_path, ip):
    _, got = check_every_path(chooses_in_nested_ifs, jnp.float32(1.0), jnp.float32(1.0), tmp_path=tmp_path, ip=ip,
                              refusal=True)
    err = str(got["autolax.jit"].error)
    assert "'f' holds a different function in each branch of the `if`" in err, err
    assert "Fix: choose the function with one `if`" in err
