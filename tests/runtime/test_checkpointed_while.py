"""``autolax.runtime.ops.checkpointed.bounded_while_loop``: a while loop that reverse mode can
differentiate. Gradients are compared with the unrolled Python program run for the exact trip
count (``jax.grad`` of a Python loop) and with float64 finite differences."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close
from jax import lax
from jax.extend.core import jaxpr_as_fun

from autolax.runtime.ops.checkpointed import (
    JVP_UNSUPPORTED,
    LoopBoundExceededError,
    bounded_while_loop,
    chunking,
)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def unrolled(cond, body, init, steps):
    """The loop as straight-line Python for a known trip count (differentiable by JAX)."""
    val = init
    for _ in range(steps):
        val = body(val)
    assert not bool(cond(val))
    return val


def trip_count(cond, body, init, limit=10_000):
    n = 0
    while bool(cond(init)):
        init, n = body(init), n + 1
        assert n < limit, "the test program does not terminate"
    return n


def finite_difference(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# --------------------------------------------------------------------------- programs
def newton_sqrt(a, max_steps=64, tol=1e-6):
    """Newton's iteration for sqrt(a), stopping at a relative tolerance."""

    def cond(s):
        x, _ = s
        return jnp.abs(x * x - a) > tol * a

    def body(s):
        x, n = s
        return 0.5 * (x + a / x), n + 1

    return cond, body, (a + 1.0, 0)


def ode(k, y0, t_end=1.0, tol=1e-3):
    """Adaptive Euler/Heun integration of y' = -k y (``k`` closed over), ``while t < t_end``."""

    def cond(s):
        return s["t"] < t_end

    def body(s):
        t, y, dt = s["t"], s["y"], s["dt"]
        dt = jnp.minimum(dt, t_end - t)
        k1 = -k * y
        y_euler = y + dt * k1
        y_heun = y + 0.5 * dt * (k1 - k * y_euler)
        err = jnp.sqrt(jnp.mean((y_heun - y_euler) ** 2)) + 1e-12
        accept = err <= tol
        return {
            "t": jnp.where(accept, t + dt, t),
            "y": jnp.where(accept, y_heun, y),
            "dt": dt * jnp.clip(0.9 * jnp.sqrt(tol / err), 0.2, 5.0),
            "steps": s["steps"] + 1,
        }

    init = {"t": jnp.zeros((), y0.dtype), "y": y0, "dt": jnp.asarray(0.05, y0.dtype), "steps": jnp.int32(0)}
    return cond, body, init


def fixed_point(w, b, x0, tol=1e-5):
    """x = tanh(W x + b) to a tolerance; W and b closed over."""

    def cond(s):
        return s[1] > tol

    def body(s):
        x, _ = s
        new = jnp.tanh(w @ x + b)
        return new, jnp.max(jnp.abs(new - x))

    return cond, body, (x0, jnp.asarray(jnp.inf, x0.dtype))


def bounded_sqrt(a, max_steps=64):
    cond, body, init = newton_sqrt(a)
    return bounded_while_loop(cond, body, init, max_steps=max_steps)[0]


def python_sqrt(a):
    cond, body, init = newton_sqrt(a)
    return unrolled(cond, body, init, trip_count(cond, body, init))[0]


# --------------------------------------------------------------------------- not differentiated
def test_undifferentiated_call_is_a_plain_while_loop():
    cond, body, init = newton_sqrt(2.0)
    f = lambda a: bounded_sqrt(a, max_steps=64)  # noqa: E731
    jaxpr = str(jax.make_jaxpr(f)(2.0))
    assert "while" in jaxpr and "scan" not in jaxpr
    assert_close(lax.while_loop(cond, body, init)[0], jax.jit(f)(2.0))


def test_undifferentiated_call_ignores_max_steps():
    cond, body, init = newton_sqrt(1e6)
    steps = trip_count(cond, body, init)
    assert steps > 3
    out = bounded_while_loop(cond, body, init, max_steps=2)
    assert int(out[1]) == steps
    assert int(jax.jit(lambda: bounded_while_loop(cond, body, init, max_steps=2))()[1]) == steps


# --------------------------------------------------------------------------- gradients
def test_grad_newton_matches_unrolled_and_finite_differences(x64):
    for a in (0.3, 2.0, 50.0):
        got = jax.grad(bounded_sqrt)(a)
        assert_close(jax.grad(python_sqrt)(a), got, rtol=1e-10)
        assert_close(finite_difference(python_sqrt, a, 1e-6), got, rtol=1e-6)
        assert_close(0.5 / np.sqrt(a), got, rtol=1e-6)


def test_grad_adaptive_ode_wrt_initial_state_and_closed_over_parameter(x64):
    y0 = jnp.linspace(1.0, 2.0, 6)
    k0 = jnp.linspace(0.5, 1.5, 6)

    def loss(loop, k, y0):
        cond, body, init = ode(k, y0)
        return jnp.sum(loop(cond, body, init)["y"] ** 2)

    def bounded(cond, body, init):
        return bounded_while_loop(cond, body, init, max_steps=200)

    def python(cond, body, init):
        return unrolled(cond, body, init, trip_count(cond, body, init))

    got = jax.grad(lambda k, y: loss(bounded, k, y), argnums=(0, 1))(k0, y0)
    want = jax.grad(lambda k, y: loss(python, k, y), argnums=(0, 1))(k0, y0)
    assert_close(want, got, rtol=1e-10, atol=1e-12)
    cond, body, init = ode(k0, y0)
    steps = trip_count(cond, body, init)
    assert 10 < steps < 100
    # Finite differences along a direction small enough to keep the trip count.
    direction = jnp.linspace(-1.0, 1.0, 6)
    fd = finite_difference(lambda e: loss(python, k0 + e * direction, y0), 0.0, 1e-7)
    assert_close(fd, jnp.dot(got[0], direction), rtol=1e-5)
    assert_close(jax.jit(jax.grad(lambda k, y: loss(bounded, k, y), argnums=(0, 1)))(k0, y0), got, rtol=1e-10)


def test_grad_fixed_point_wrt_closed_over_matrix(x64):
    rng = np.random.default_rng(0)
    w0 = jnp.asarray(rng.standard_normal((5, 5)) * 0.15)
    b0 = jnp.asarray(rng.standard_normal(5))
    x0 = jnp.zeros(5)

    def loss(w, b, bounded):
        cond, body, init = fixed_point(w, b, x0)
        if bounded:
            out = bounded_while_loop(cond, body, init, max_steps=100)
        else:
            out = unrolled(cond, body, init, trip_count(cond, body, init))
        return jnp.sum(out[0] * jnp.arange(5.0))

    got = jax.grad(loss, argnums=(0, 1))(w0, b0, True)
    want = jax.grad(loss, argnums=(0, 1))(w0, b0, False)
    assert_close(want, got, rtol=1e-10, atol=1e-12)
    fd = finite_difference(lambda e: loss(w0, b0 + e, False), 0.0, 1e-7)
    assert_close(fd, jnp.sum(got[1]), rtol=1e-5)

    # The last change (a part of the state the body writes but never reads) used too, and
    # a derivative with respect to one of the closed-over values only.
    def loss2(b, bounded):
        cond, body, init = fixed_point(w0, b, x0)
        if bounded:
            out = bounded_while_loop(cond, body, init, max_steps=100)
        else:
            out = unrolled(cond, body, init, trip_count(cond, body, init))
        return jnp.sum(out[0]) + 1e3 * out[1]

    assert_close(jax.grad(loss2)(b0, False), jax.grad(loss2)(b0, True), rtol=1e-10, atol=1e-12)


def test_closed_over_tracer_of_an_enclosing_jit_gets_its_gradient():
    def f(scale, x):
        # `scale` is a tracer of the outer jit and of grad, read but not carried.
        cond = lambda s: s[0] < 10.0  # noqa: E731
        body = lambda s: (s[0] * scale + 0.5, s[1] + 1)  # noqa: E731
        return bounded_while_loop(cond, body, (x, 0), max_steps=50)[0]

    def python(scale, x):
        s = (x, 0)
        while s[0] < 10.0:
            s = (s[0] * scale + 0.5, s[1] + 1)
        return s[0]

    assert_close(jax.grad(python, argnums=(0, 1))(1.3, 1.0), jax.jit(jax.grad(f, argnums=(0, 1)))(1.3, 1.0), rtol=1e-5)


def test_pytree_carry_with_integer_and_bool_leaves():
    def loop(x, bounded):
        cond = lambda s: jnp.logical_and(s["n"] < 7, ~s["done"])  # noqa: E731

        def body(s):
            x, y = s["xy"]
            return {"xy": (jnp.sin(x) + y, y * 1.1), "n": s["n"] + 1, "done": x > 5.0}

        init = {"xy": (x, x * 0.5), "n": jnp.int32(0), "done": jnp.bool_(False)}
        if bounded:
            return bounded_while_loop(cond, body, init, max_steps=7)
        return unrolled(cond, body, init, trip_count(cond, body, init))

    f = lambda x, b: jnp.sum(jnp.stack(loop(x, b)["xy"]))  # noqa: E731
    assert_close(jax.grad(f)(0.7, False), jax.grad(f)(0.7, True), rtol=1e-6)
    out = loop(0.7, True)
    assert out["n"].dtype == jnp.int32 and out["done"].dtype == jnp.bool_


def test_zero_iterations():
    cond = lambda x: x > 100.0  # noqa: E731
    f = lambda x, p: bounded_while_loop(cond, lambda x: x * p, x, max_steps=4)  # noqa: E731
    assert_close((1.0, 0.0), jax.grad(f, argnums=(0, 1))(2.0, 3.0))
    assert_close((1.0, 0.0), jax.jit(jax.grad(f, argnums=(0, 1)))(2.0, 3.0))


def test_exactly_max_steps_iterations_is_allowed():
    f = lambda x: bounded_while_loop(lambda x: x < 8.0, lambda x: x * 2.0, x, max_steps=3)  # noqa: E731
    assert_close(8.0, jax.grad(f)(1.0))  # three doublings
    assert_close(8.0, jax.jit(jax.grad(f))(1.0))


def test_exceeding_max_steps_under_grad_is_a_runtime_error():
    f = lambda x: bounded_while_loop(lambda x: x < 8.0, lambda x: x * 2.0, x, max_steps=2)  # noqa: E731
    expected = re.escape(
        "bounded_while_loop: the loop needed more than max_steps=2 iterations while being "
        "differentiated, so its derivative would be that of a truncated loop. Raise max_steps"
    )
    with pytest.raises(LoopBoundExceededError, match=expected):
        jax.grad(f)(1.0)
    # Under jit JAX wraps the callback's exception; its text carries ours.
    with pytest.raises(jax.errors.JaxRuntimeError, match="LoopBoundExceededError: " + expected):
        jax.jit(jax.grad(f))(1.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match=expected):
        jax.jit(jax.vmap(jax.grad(f)))(jnp.array([4.0, 1.0]))  # one lane of two exceeds
    assert_close(np.array([2.0, 4.0]), jax.jit(jax.vmap(jax.grad(f)))(jnp.array([4.0, 3.0])))


def test_custom_error_message():
    f = lambda x: bounded_while_loop(lambda x: x < 8.0, lambda x: x * 2.0, x, max_steps=1, error_message="too slow")  # noqa: E731
    with pytest.raises(LoopBoundExceededError, match="^too slow"):
        jax.grad(f)(1.0)


# --------------------------------------------------------------------------- vmap
def _lanes_program(bounded):
    def run(x, p):
        cond = lambda s: s[0] < 10.0  # noqa: E731
        body = lambda s: (s[0] * p + jnp.sin(s[0]), s[1] + 1)  # noqa: E731
        if bounded:
            return bounded_while_loop(cond, body, (x, 0), max_steps=40)[0]
        return unrolled(cond, body, (x, 0), trip_count(cond, body, (x, 0)))[0]

    return run


def test_vmap_of_grad_with_different_trip_counts():
    xs = jnp.array([0.1, 1.0, 4.0, 9.5, 12.0])  # 12.0: zero iterations
    p = 1.5
    want = [jax.grad(_lanes_program(False), argnums=(0, 1))(float(x), p) for x in xs]
    got = jax.jit(jax.vmap(jax.grad(_lanes_program(True), argnums=(0, 1)), in_axes=(0, None)))(xs, p)
    assert_close(np.array(want).T, np.array(got), rtol=1e-5)


def test_grad_of_vmap_with_different_trip_counts():
    xs = jnp.array([0.1, 1.0, 4.0, 9.5, 12.0])
    weights = jnp.arange(1.0, 6.0)
    p = 1.5

    def loss(xs, p, bounded):
        if bounded:
            outs = jax.vmap(_lanes_program(True), in_axes=(0, None))(xs, p)
        else:
            outs = jnp.stack([_lanes_program(False)(x, p) for x in xs])
        return jnp.sum(outs * weights)

    want = jax.grad(loss, argnums=(0, 1))(xs, p, False)
    assert_close(want, jax.grad(loss, argnums=(0, 1))(xs, p, True), rtol=1e-5)
    assert_close(want, jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)(xs, p, True), rtol=1e-5)


def test_grad_of_vmap_with_a_batched_closed_over_parameter():
    xs = jnp.array([0.1, 1.0, 4.0])
    ps = jnp.array([1.5, 1.7, 2.0])  # read by the body, different in each lane

    def loss(xs, ps, bounded):
        if bounded:
            outs = jax.vmap(_lanes_program(True))(xs, ps)
        else:
            outs = jnp.stack([_lanes_program(False)(x, p) for x, p in zip(xs, ps)])
        return jnp.sum(outs * jnp.arange(1.0, 4.0))

    want = jax.grad(loss, argnums=(0, 1))(xs, ps, False)
    assert_close(want, jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)(xs, ps, True), rtol=1e-5)


def _decay(loop, read_by):
    """y' = -rate * y stepped until t reaches an end, with a per-lane value ``v`` that is
    batched under vmap but not differentiated, read without being carried by the cond only
    (``t < v``, fixed steps), by the body only (``t < 1``, steps of ``0.1 * v``) or by both
    (``t < v``, steps cut short at ``v``). ``loop(cond, body, init)`` runs the loop."""

    def run(y, rate, v):
        def cond(s):
            return s[1] < (1.0 if read_by == "body" else v)

        def body(s):
            y, t = s
            h = {"cond": 0.1, "body": 0.1 * v, "both": jnp.minimum(0.1, v - t)}[read_by]
            return y - h * rate * y, t + h

        return loop(cond, body, (y, jnp.float32(0.0)))[0]

    return run


def _python_while(cond, body, val):
    while cond(val):
        val = body(val)
    return val


RATES = jnp.array([0.5, 1.0, 2.0])
ENDS = jnp.array([0.35, 1.0, 2.05])  # a different trip count in each lane


@pytest.mark.parametrize("read_by", ["cond", "body", "both"])
def test_batched_undifferentiated_closed_over_value(read_by):
    # A closed-over value batched by vmap but not differentiated reaches the custom_vjp as
    # an argument, so its backward pass (run outside that vmap) has no escaped BatchTracer.
    f = _decay(functools.partial(bounded_while_loop, max_steps=64), read_by)
    python = _decay(_python_while, read_by)
    want = np.array([jax.grad(python, argnums=(0, 1))(1.0, r, e) for r, e in zip(RATES, ENDS)]).T

    weights = np.arange(1.0, 4.0)

    def loss(y, rates):
        return jnp.sum(jax.vmap(f, in_axes=(None, 0, 0))(y, rates, ENDS) * weights)

    grad_of_vmap = jax.grad(loss, argnums=(0, 1))
    for got in (grad_of_vmap(1.0, RATES), jax.jit(grad_of_vmap)(1.0, RATES)):
        assert_close((np.sum(want[0] * weights), want[1] * weights), got, rtol=1e-4)
    vmap_of_grad = jax.vmap(jax.grad(f, argnums=(0, 1)), in_axes=(None, 0, 0))
    for got in (vmap_of_grad(1.0, RATES, ENDS), jax.jit(vmap_of_grad)(1.0, RATES, ENDS)):
        assert_close(want, np.array(got), rtol=1e-4)


def test_batched_tracers_in_the_constants_of_evaluated_jaxprs():
    # autolax's runtime evaluates jaxprs made inside the vmap (jax.make_jaxpr); their
    # constants are then BatchTracers the loop reads through jaxpr_as_fun.
    def f(y, rate, v):
        init = (y, jnp.float32(0.0))
        cond_jaxpr = jax.make_jaxpr(lambda s: s[1] < v)(init)

        def step(s):
            y, t = s
            h = jnp.minimum(0.1, v - t)
            return y - h * rate * y, t + h

        body_jaxpr = jax.make_jaxpr(step)(init)
        cond = lambda s: jaxpr_as_fun(cond_jaxpr)(*s)[0]  # noqa: E731
        body = lambda s: tuple(jaxpr_as_fun(body_jaxpr)(*s))  # noqa: E731
        return bounded_while_loop(cond, body, init, max_steps=64)[0]

    python = _decay(_python_while, "both")
    want = np.array([jax.grad(python, argnums=1)(1.0, r, e) for r, e in zip(RATES, ENDS)])
    loss = lambda rates: jnp.sum(jax.vmap(f, in_axes=(None, 0, 0))(1.0, rates, ENDS))  # noqa: E731
    assert_close(want, jax.grad(loss)(RATES), rtol=1e-4)
    assert_close(want, jax.jit(jax.grad(loss))(RATES), rtol=1e-4)
    assert_close(want, jax.jit(jax.vmap(jax.grad(f, argnums=1), in_axes=(None, 0, 0)))(1.0, RATES, ENDS), rtol=1e-4)


def test_closed_over_integer_tracer_of_an_enclosing_jit():
    # An integer tracer (never perturbed) read by cond and body is an argument too.
    def f(x, n):
        cond = lambda s: s[1] < n  # noqa: E731
        body = lambda s: (s[0] * 1.5 + n.astype(jnp.float32), s[1] + 1)  # noqa: E731
        return bounded_while_loop(cond, body, (x, jnp.int32(0)), max_steps=16)[0]

    want = [jax.grad(f)(2.0, jnp.int32(n)) for n in (5, 2)]  # eager: n is concrete
    assert_close(1.5**5, want[0], rtol=1e-6)
    assert_close(want[0], jax.jit(jax.grad(f))(2.0, jnp.int32(5)), rtol=1e-6)
    got = jax.jit(jax.vmap(jax.grad(f), in_axes=(None, 0)))(2.0, jnp.array([5, 2], jnp.int32))
    assert_close(np.array(want), got, rtol=1e-6)


# --------------------------------------------------------------------------- derivative matrix
def _cubic(x):
    """A loop whose result depends nonlinearly on x: x -> x**3 / 10 + x until above 5."""
    cond = lambda s: s[0] < 5.0  # noqa: E731
    body = lambda s: (s[0] ** 3 / 10 + s[0] + s[1], s[1])  # noqa: E731
    return bounded_while_loop(cond, body, (x[0], x[1]), max_steps=20)[0]


def _cubic_python(x):
    s = (x[0], x[1])
    while s[0] < 5.0:
        s = (s[0] ** 3 / 10 + s[0] + s[1], s[1])
    return s[0]


X = jnp.array([1.0, 0.3])


@pytest.mark.parametrize(
    "transform",
    [
        jax.grad,
        lambda f: lambda x: jax.value_and_grad(f)(x),
        lambda f: lambda x: jax.vjp(f, x)[1](1.0),
        jax.jacrev,
        jax.hessian,
        lambda f: jax.jacfwd(jax.grad(f)),
    ],
    ids=["grad", "value_and_grad", "vjp", "jacrev", "hessian", "jacfwd_of_grad"],
)
def test_supported_derivatives(transform):
    want = transform(_cubic_python)(X)
    assert_close(want, transform(_cubic)(X), rtol=1e-5)
    assert_close(want, jax.jit(transform(_cubic))(X), rtol=1e-5)


@pytest.mark.parametrize(
    "transform",
    [lambda f: lambda x: jax.jvp(f, (x,), (x,)), jax.jacfwd],
    ids=["jvp", "jacfwd"],
)
def test_forward_mode_runs_the_plain_while_loop(transform):
    # A custom_vjp has no forward mode: under jvp the loop is lax.while_loop, whose forward
    # derivative is exact whatever the trip count.
    want = transform(_cubic_python)(X)
    assert_close(want, transform(_cubic)(X), rtol=1e-5)
    assert_close(want, jax.jit(transform(_cubic))(X), rtol=1e-5)
    assert_close(want, jax.jit(lambda x: transform(_cubic)(x))(X), rtol=1e-5)


JAX_JVP_ERROR = "can't apply forward-mode autodiff \\(jvp\\) to a custom_vjp function"


def test_forward_mode_of_a_batched_loop_is_a_clear_error():
    # Under jvp(vmap(f)) the loop sees vmap's tracers, not jvp's: the custom_vjp is kept and
    # forward mode of it is the error that names the fix.
    with pytest.raises(TypeError, match=re.escape(JVP_UNSUPPORTED)):
        jax.jvp(jax.vmap(_cubic), (jnp.stack([X, X]),), (jnp.stack([X, X]),))


def test_linearize_succeeds_but_its_linear_function_is_jax_s_error():
    out, f_jvp = jax.linearize(_cubic, X)
    assert_close(_cubic_python(X), out, rtol=1e-6)
    with pytest.raises(TypeError, match=JAX_JVP_ERROR):
        f_jvp(X)


def test_grad_of_grad_is_jax_s_while_loop_error():
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(lambda x: jax.grad(_cubic)(x)[0])(X)


# --------------------------------------------------------------------------- effects
def test_body_effects_run_again_in_the_backward_pass():
    seen = []

    def f(x):
        def body(x):
            jax.debug.callback(lambda v: seen.append(float(v)), x)
            return x * 2.0

        return bounded_while_loop(lambda x: x < 10.0, body, x, max_steps=8)

    jax.block_until_ready(f(1.0))
    assert seen == [1.0, 2.0, 4.0, 8.0]
    seen.clear()
    assert_close(16.0, jax.grad(f)(1.0))
    # The forward pass runs each iteration once, in order; the backward pass runs each twice
    # more: chunk by chunk from the last, recomputing the chunk's states in order, then
    # pulling back through its iterations in reverse.
    assert seen[:4] == [1.0, 2.0, 4.0, 8.0]
    assert all(seen.count(v) == 3 for v in (1.0, 2.0, 4.0, 8.0)) and len(seen) == 12


# --------------------------------------------------------------------------- memory
def _temp_bytes(max_steps, budget=None, n=4096):
    def loss(y0, k):
        cond = lambda s: s[0] < 1.0  # noqa: E731
        body = lambda s: (s[0] + 0.01, s[1] * (1.0 - 0.01 * k))  # noqa: E731
        out = bounded_while_loop(cond, body, (0.0, y0), max_steps=max_steps, budget_bytes=budget)
        return jnp.sum(out[1])

    args = (jnp.ones(n), jnp.ones(n))
    return jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*args).compile().memory_analysis().temp_size_in_bytes


def test_memory_is_set_by_the_budget_not_by_max_steps():
    state = 4096 * 4
    small, large = _temp_bytes(1024), _temp_bytes(4096)
    # Storing every step would take max_steps states: 16 MiB and 64 MiB here.
    assert large < 4096 * state / 10
    assert large < 2.5 * small  # about 2x for 4x the bound (square root)
    with pytest.raises(ValueError, match=r"needs at least [\d,]+ bytes for its derivative"):
        _temp_bytes(4096, budget=100_000)


def test_chunking_takes_the_least_memory():
    assert chunking(4096, state_bytes=1000, budget_bytes=10**9) == (64, 64)
    steps, chunks = chunking(1000, state_bytes=10, budget_bytes=10**9)
    assert steps * chunks >= 1000 and (steps, chunks) == (32, 32)
    assert chunking(1, 8, 100) == (1, 1)
    assert chunking(2, 8, 100) == (2, 1)
    # (64 checkpoints + 65 states of one chunk) x 8 bytes
    with pytest.raises(ValueError, match=re.escape("Pass budget_bytes=1032 or more, or lower max_steps.")):
        chunking(4096, 8, budget_bytes=1000)


# --------------------------------------------------------------------------- errors
def test_body_changing_a_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match=re.escape("init_val[1] is int32[] but body_fun returns float32[] for it")):
        bounded_while_loop(lambda s: s[0] < 3.0, lambda s: (s[0] + 1.0, s[1] * 1.5), (0.0, jnp.int32(1)), max_steps=8)


def test_max_steps_must_be_a_positive_int():
    with pytest.raises(TypeError, match="max_steps must be a Python int"):
        bounded_while_loop(lambda x: x < 1.0, lambda x: x + 1.0, 0.0, max_steps=jnp.int32(3))
    with pytest.raises(ValueError, match="max_steps must be at least 1, got 0"):
        bounded_while_loop(lambda x: x < 1.0, lambda x: x + 1.0, 0.0, max_steps=0)
