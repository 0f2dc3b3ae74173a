"""Reverse-mode gradients through converted `while` loops and `for` loops over traced ranges
(issue 18): `autolax.loop_options(max_steps=...)` in the loop, or `autolax.jit(max_steps=...)`.

Gradients are compared with JAX differentiating the Python program (the loop unrolled by
plain Python on concrete values, so the exact trip count) and, in float64, with finite
differences. The algorithm itself is tested in test_checkpointed_while.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close


def decay(y, rate, t_end):
    t = 0.0
    while t < t_end:
        autolax.loop_options(max_steps=256)
        h = jnp.minimum(0.1, t_end - t)
        y = y - h * rate * y
        t = t + h
    return y


def newton_sqrt(a, x):
    err = jnp.abs(x * x - a)
    while err > 1e-5:
        autolax.loop_options(max_steps=64)
        x = 0.5 * (x + a / x)
        err = jnp.abs(x * x - a)
    return x


def power_sum(x, n):
    total = 0.0
    for i in range(n):
        autolax.loop_options(max_steps=32)
        total = total + x ** i
    return total


def unrolled_grad(fn, *args, argnums=0):
    """JAX differentiating the Python program: the loop runs in Python on concrete values."""
    return jax.grad(fn, argnums=argnums)(*args)


@pytest.mark.parametrize("args,argnums", [((1.0, 0.7, 2.05), (0, 1)), ((2.0, 1.5), (0, 1)), ((0.9, 5), 0)],
                         ids=["decay", "newton", "power_sum"])
def test_grad_equals_the_python_programs(args, argnums):
    fn = {3: decay, 2: newton_sqrt}[len(args)] if not isinstance(args[1], int) else power_sum
    expected = unrolled_grad(fn, *args, argnums=argnums)
    got = jax.grad(autolax.convert(fn), argnums=argnums)(*args)
    assert_close(expected, got, rtol=1e-4)
    jitted = jax.jit(jax.grad(autolax.convert(fn), argnums=argnums))(*args)
    assert_close(expected, jitted, rtol=1e-4)


def test_grad_matches_finite_differences_in_float64():
    with jax.enable_x64(True):
        f = autolax.convert(decay)
        y, rate, t_end = 1.0, 0.7, 2.05
        g = jax.grad(f, argnums=1)(y, rate, t_end)
        eps = 1e-6
        fd = (f(y, rate + eps, t_end) - f(y, rate - eps, t_end)) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_trace_check_names_the_form():
    report = autolax.trace_check(autolax.jit(decay), 1.0, 0.7, 2.0)
    assert [r.became for r in report.rows if r.kind == "while"] == ["lax.while_loop (grad: checkpointed)"]


def test_the_bound_does_not_cap_a_call_that_is_not_differentiated():
    def long_loop(x):
        k = 0.0
        while k < 100.0:
            autolax.loop_options(max_steps=4)
            x = x * 1.01
            k = k + 1.0
        return x

    np.testing.assert_allclose(autolax.jit(long_loop)(1.0), 1.01 ** 100, rtol=1e-4)
    with pytest.raises(autolax.RuntimeCheckError, match=r"the `while` loop at .*test_grad_while.py:\d+ ran more "
                                                        r"than max_steps=4 iterations while being differentiated"):
        autolax.jit(jax.grad(autolax.convert(long_loop)))(1.0)


def plain_decay(y, rate):
    t = jnp.float32(0.0)  # float32 in Python too: the same trip count
    while t < 1.0:
        y = y - 0.1 * rate * y
        t = t + 0.1
    return y


def test_jit_max_steps_bounds_every_loop():
    expected = unrolled_grad(plain_decay, 1.0, 2.0, argnums=1)
    f = autolax.jit(jax.grad(autolax.convert(plain_decay, max_steps=64), argnums=1))
    np.testing.assert_allclose(f(1.0, 2.0), expected, rtol=1e-3)
    g = autolax.jit(plain_decay, max_steps=64)
    assert "checkpointed" in str(autolax.trace_check(g, 1.0, 2.0))


def test_without_a_bound_reverse_mode_is_jaxs_error():
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(autolax.convert(plain_decay))(1.0, 2.0)


def test_vmap_lanes_with_different_trip_counts_and_grad_compositions():
    rates = jnp.array([0.5, 1.0, 2.0])
    ends = jnp.array([0.35, 1.0, 2.05])
    f = autolax.convert(decay)
    expected = jnp.array([unrolled_grad(decay, 1.0, float(r), float(e), argnums=1) for r, e in zip(rates, ends)])
    assert_close(expected, jax.vmap(jax.grad(f, argnums=1), in_axes=(None, 0, 0))(1.0, rates, ends), rtol=1e-4)
    total = jax.grad(lambda r: jax.vmap(f, in_axes=(None, 0, 0))(1.0, r, ends).sum())(rates)
    assert_close(expected, total, rtol=1e-4)


def test_closed_over_parameters_get_gradients():
    def solve(y, params):
        t = jnp.float32(0.0)
        while t < 1.0:
            autolax.loop_options(max_steps=32)
            y = y + 0.1 * (params["a"] * y + params["b"])
            t = t + 0.1
        return y

    params = {"a": -0.5, "b": 0.3}
    expected = unrolled_grad(solve, 1.0, params, argnums=1)
    got = jax.jit(jax.grad(autolax.convert(solve), argnums=1))(1.0, params)
    assert_close(expected, got, rtol=1e-4)


def test_loop_options_must_open_the_body_and_take_literals():
    def late(x):
        while x > 1:
            x = x / 2
            autolax.loop_options(max_steps=8)
        return x

    with pytest.raises(autolax.ConversionError, match="must be the first statement of the loop body"):
        autolax.convert(late)

    def computed(x, n):
        while x > 1:
            autolax.loop_options(max_steps=n)
            x = x / 2
        return x

    with pytest.raises(autolax.ConversionError, match="max_steps must be a positive int written in the call"):
        autolax.convert(computed)


@pytest.mark.parametrize("transform", [
    lambda f: lambda a, x: jax.jvp(f, (a, x), (1.0, 0.5)),
    lambda f: jax.jacfwd(f, argnums=(0, 1)),
    lambda f: jax.hessian(f, argnums=0),
    lambda f: lambda a, x: jax.grad(f, argnums=(0, 1))(a, x),
], ids=["jvp", "jacfwd", "hessian", "grad"])
def test_derivatives_of_an_autolax_jit_object_with_a_bounded_loop(transform):
    # jax.jvp(autolax.jit(f)): the jit hides jvp's tracers from the loop, whose reverse-mode
    # form (a custom_vjp) has no forward mode; autolax.jit sees them and traces the loop as
    # a plain while_loop (jax.jit(autolax.convert(f)) stays JAX's TypeError: README).
    f = autolax.jit(newton_sqrt)
    want = transform(newton_sqrt)(2.0, 1.5)
    assert_close(want, transform(f)(2.0, 1.5), rtol=1e-4)
    assert_close(want, transform(f)(2.0, 1.5), rtol=1e-4)  # the cached program
    assert_close(newton_sqrt(2.0, 1.5), f(2.0, 1.5), rtol=1e-6)  # plain calls keep their form


def test_forward_mode_of_jax_jit_of_a_conversion_is_jax_s_error():
    with pytest.raises(TypeError, match="forward-mode autodiff \\(jvp\\) to a custom_vjp"):
        jax.jvp(jax.jit(autolax.convert(newton_sqrt)), (2.0, 1.5), (1.0, 0.0))
