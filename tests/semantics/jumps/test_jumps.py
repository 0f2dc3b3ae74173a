"""break / continue / early return / loop else, staged (issue 3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.check import primitive_counts
from conftest import assert_matches, primitives

ARRAYS = [
    np.array([1.0, 2.0, -3.0, 4.0], np.float32),  # takes the break / return path
    np.array([1.0, 2.0, 3.0], np.float32),  # never does
    np.array([-1.0], np.float32),  # on the first iteration
    np.zeros((0,), np.float32),  # zero-trip
]


def first_negative_index(xs):
    idx = -1
    for i in range(xs.shape[0]):
        if xs[i] < 0:
            idx = i
            break
    return idx


def sum_until_negative(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            break
        total += x
    return total


def sum_positive(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        total += x
    return total


def first_index_above(xs, t):
    for i, x in enumerate(xs):
        if x > t:
            return i
    return -1


@pytest.mark.parametrize("xs", ARRAYS, ids=["breaks", "never", "first", "empty"])
def test_break_continue_return_in_for(xs):
    assert_matches(first_negative_index, jnp.asarray(xs))
    assert_matches(sum_until_negative, jnp.asarray(xs))
    assert_matches(sum_positive, jnp.asarray(xs))
    assert_matches(first_index_above, jnp.asarray(xs), 1.5)


def halve_until_seven(x):
    steps = 0
    while x > 1:
        if x % 7 == 0:
            break
        x = x // 2
        steps += 1
    else:
        steps = -steps
    return x, steps


@pytest.mark.parametrize("x", [1, 2, 100, 56, 7])
def test_while_break_and_else(x):
    assert_matches(halve_until_seven, x)


def for_else(xs, t):
    found = -1
    for i in range(xs.shape[0]):
        if xs[i] == t:
            found = i
            break
    else:
        found = -2
    return found


@pytest.mark.parametrize("t", [3.0, 9.0])
def test_for_else(t):
    assert_matches(for_else, jnp.array([1.0, 3.0, 5.0]), t)


def nested_break(m):
    count = 0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] < 0:
                break
            if m[i, j] == 0:
                continue
            count += 1
        if count > 4:
            break
    return count


@pytest.mark.parametrize(
    "m",
    [
        np.array([[1.0, -1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]], np.float32),
        np.ones((3, 3), np.float32),
        -np.ones((2, 2), np.float32),
    ],
)
def test_nested_loops_break_continue(m):
    assert_matches(nested_break, jnp.asarray(m))


def several_returns(x):
    if x < 0:
        return -x
    elif x > 10:
        return x / 10
    y = x * 2
    while y < 100:
        if y > 50:
            return y + 0.5
        y = y * 3
    return y


@pytest.mark.parametrize("x", [-3.0, 20.0, 1.0, 0.25, 9.0, 5.0])
def test_returns_everywhere(x):
    assert_matches(several_returns, x)


def return_in_nested_loop(m, t):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] > t:
                return i * 10 + j
    return -1


@pytest.mark.parametrize("t", [0.5, 4.5, 100.0])
def test_return_from_nested_loop(t):
    m = jnp.arange(9.0).reshape(3, 3)
    assert_matches(return_in_nested_loop, m, t)


def search_while_true(xs):
    i = 0
    while True:
        if xs[i] > 2 or i == xs.shape[0] - 1:
            return i
        i += 1


def test_while_true_with_return():
    assert_matches(search_while_true, jnp.array([1.0, 2.0, 3.0, 4.0]))
    assert_matches(search_while_true, jnp.array([1.0, 2.0]))


def zero_trip_loops(x, n):
    for i in range(n):
        if x > i:
            break
        x = x + 1.0
    while n > 100:
        n -= 1
    return x, n


@pytest.mark.parametrize("n", [0, 3])
def test_zero_trip_loops(n):
    assert_matches(zero_trip_loops, 0.5, n)
    assert_matches(zero_trip_loops, 0.5, n, jit_kwargs={"static_argnums": 1})


def accumulate_until(x):
    acc = 0.0
    for i in range(10):
        acc = acc + x * i
        if acc > 5.0:
            break
    return acc


def test_grad_through_for_with_break_matches_finite_differences():
    f = autolax.convert(accumulate_until)
    for x in [0.05, 0.45, 2.0]:
        eps = 1e-3
        fd = (accumulate_until(x + eps) - accumulate_until(x - eps)) / (2 * eps)
        assert float(jax.grad(f)(x)) == pytest.approx(fd, rel=1e-3)
        assert float(jax.grad(autolax.jit(accumulate_until))(x)) == pytest.approx(fd, rel=1e-3)
    # A plain call runs a while_loop that stops at the break; differentiation runs the
    # reverse-differentiable form, a masked scan, instead.
    prims = primitives(accumulate_until, 0.3)
    assert prims["while"] == 1 and prims["scan"] == 0 and prims["custom_jvp_call"] == 1
    grad_prims = primitive_counts(jax.make_jaxpr(jax.grad(f))(0.3).jaxpr)
    assert grad_prims["scan"] >= 1 and grad_prims["while"] == 0
    rows = autolax.trace_check(accumulate_until, 0.3).rows
    assert [r.became for r in rows if r.kind == "for"] == ["lax.while_loop (grad: masked lax.scan)"]


def search_rows(xs, w, limit):
    # Closes over `w` and scans `xs`: both must get their gradients through the early exit.
    total = 0.0
    for x in xs:
        total = total + jnp.sum(x * w)
        if total > limit:
            return total, True
    return total, False


def test_early_exit_derivatives_reach_closed_over_and_scanned_arrays():
    xs = jnp.arange(12.0).reshape(4, 3) / 10
    w = jnp.array([1.0, -0.5, 2.0])
    for limit in (0.5, 100.0):  # exits in the second row / never
        assert_matches(search_rows, xs, w, limit)
        loss = lambda xs, w: search_rows(xs, w, limit)[0] ** 2  # noqa: E731
        want = jax.grad(loss, argnums=(0, 1))(xs, w)  # JAX differentiating the Python loop
        got = jax.grad(lambda xs, w: autolax.jit(search_rows)(xs, w, limit)[0] ** 2, argnums=(0, 1))(xs, w)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6)
        # forward mode and a second derivative too
        tangent = jnp.ones_like(w)
        np.testing.assert_allclose(
            jax.jvp(lambda w: autolax.jit(search_rows)(xs, w, limit)[0], (w,), (tangent,))[1],
            jax.jvp(lambda w: search_rows(xs, w, limit)[0], (w,), (tangent,))[1],
            rtol=1e-6,
        )
        hess = jax.hessian(lambda w: autolax.jit(search_rows)(xs, w, limit)[0] ** 2)(w)
        np.testing.assert_allclose(hess, jax.hessian(lambda w: search_rows(xs, w, limit)[0] ** 2)(w), rtol=1e-5)


def accumulate_loudly(x):
    acc = 0.0
    for i in range(10):
        acc = acc + x * i
        print("acc", acc)
        if acc > 5.0:
            break
    return acc


def test_early_exit_with_print_keeps_the_masked_scan(capfd):
    # jax.custom_jvp cannot hold effects, so a loop that prints is the masked scan always.
    assert primitives(accumulate_loudly, 0.5)["scan"] == 1
    assert [r.became for r in autolax.trace_check(accumulate_loudly, 0.5).rows if r.kind == "for"] == ["lax.scan (masked)"]
    capfd.readouterr()
    jax.block_until_ready(autolax.jit(accumulate_loudly)(0.5))
    jax.effects_barrier()
    got = capfd.readouterr().out
    accumulate_loudly(0.5)
    assert got == capfd.readouterr().out
    capfd.readouterr()
    assert float(jax.grad(autolax.jit(accumulate_loudly))(0.5)) == pytest.approx(float(jax.grad(accumulate_loudly)(0.5)))


def test_integer_search_with_break_stops_early():
    # No floating-point carry: a gradient cannot flow, so the cheaper while_loop is used.
    rows = autolax.trace_check(first_negative_index, jnp.array([1.0, -1.0])).rows
    assert [r.became for r in rows if r.kind == "for"] == ["lax.while_loop"]
    assert primitives(first_negative_index, jnp.array([1.0, -1.0]))["scan"] == 0


def break_on_python_condition(xs, limit):
    total = 0.0
    for i in range(10):
        if i >= limit:
            break
        total += xs[i]
    return total


def test_break_on_static_condition_keeps_python_decision():
    xs = jnp.arange(10.0)
    for limit in [0, 3, 10]:
        assert_matches(break_on_python_condition, xs, limit, jit_kwargs={"static_argnums": 1})
