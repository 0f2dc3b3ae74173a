"""Issue 2's promises: data-dependent if/while/for under autolax.jit match plain Python,
static trip counts stage to one scan whose jaxpr does not grow, static code is untouched."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_matches, equations, primitives


def piecewise(x):
    if x < 3:
        return 3.0 * x**2
    else:
        return -4 * x


@pytest.mark.parametrize("x", [-1.0, 2.5, 3.0, 7.0])
def test_if_else_with_returns(x):
    assert_matches(piecewise, x)
    assert primitives(piecewise, x)["cond"] == 1


def add_range(x):
    for i in range(5):
        x += i
    return x


def test_for_range_accumulates():
    assert_matches(add_range, 1.5)
    assert_matches(add_range, jnp.arange(3.0))
    assert primitives(add_range, 1.5)["scan"] == 1


def count_to_twenty(i):
    while i < 20:
        i = i + 1
    return i


@pytest.mark.parametrize("i", [0, 19, 20, 35])
def test_while_counts(i):
    assert_matches(count_to_twenty, i)


def digit_count(n):
    count = 0
    while n > 0:
        n //= 10
        count += 1
    return count


@pytest.mark.parametrize("n", [0, 7, 10, 12345, 2**31 - 1])
def test_digit_count(n):
    assert_matches(digit_count, n)


def years_to_target(balance, rate, target):
    years = 0
    while balance < target:
        balance = balance * (1 + rate)
        years += 1
    return years, balance


@pytest.mark.parametrize("balance,rate,target", [(100.0, 0.05, 200.0), (100.0, 0.1, 50.0), (1.0, 0.5, 1000.0)])
def test_compound_interest(balance, rate, target):
    assert_matches(years_to_target, balance, rate, target)


def power_iteration(A, tol, max_iter):
    v = jnp.ones(A.shape[0]) / jnp.sqrt(A.shape[0])
    lam = 0.0
    err = 1.0
    k = 0
    while err > tol and k < max_iter:
        w = A @ v
        lam_new = jnp.linalg.norm(w)
        v = w / lam_new
        err = jnp.abs(lam_new - lam)
        lam = lam_new
        k += 1
    return lam, k


@pytest.mark.parametrize("max_iter", [0, 3, 200])
def test_power_iteration(max_iter):
    A = jnp.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    lam, k = assert_matches(power_iteration, A, 1e-6, max_iter)
    if max_iter == 200:
        assert abs(float(lam) - float(jnp.max(jnp.linalg.eigvalsh(A)))) < 1e-3


def running_max(xs):
    best = xs[0]
    total = 0.0
    for x in xs:
        if x > best:
            best = x
        total = total + x
    return best, total


def test_scan_over_array():
    xs = jnp.array([3.0, -1.0, 7.0, 2.0])
    assert_matches(running_max, xs)
    assert primitives(running_max, xs)["scan"] == 1


def checkerboard(n, x):
    acc = 0.0
    for i in range(n):
        for j in range(n):
            if (i + j) % 2 == 0:
                acc = acc + x * i
            else:
                acc = acc - j
    return acc


@pytest.mark.parametrize("n", [0, 1, 4])
def test_nested_loops_with_if(n):
    assert_matches(checkerboard, n, 1.5, jit_kwargs={"static_argnums": 0})
    assert_matches(checkerboard, n, 1.5)  # n traced: fori_loops with traced bounds


def sum_first(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i
    return total


def test_static_trip_count_is_one_scan_of_constant_size():
    small = jax.make_jaxpr(autolax.convert(sum_first), static_argnums=1)(2.0, 10)
    large = jax.make_jaxpr(autolax.convert(sum_first), static_argnums=1)(2.0, 10_000)
    from autolax.check import count_equations, primitive_counts

    assert primitive_counts(small.jaxpr)["scan"] == 1
    assert primitive_counts(large.jaxpr)["scan"] == 1
    assert count_equations(small.jaxpr) == count_equations(large.jaxpr)
    # Plain jax.jit unrolls the same loop: its program grows with n.
    unrolled = count_equations(jax.make_jaxpr(sum_first, static_argnums=1)(2.0, 100).jaxpr)
    assert unrolled > 10 * count_equations(small.jaxpr)


def test_grad_through_static_trip_loop():
    f = autolax.jit(sum_first, static_argnums=1)
    assert float(jax.grad(f)(2.0, 10)) == pytest.approx(sum(range(10)))
    g = jax.grad(autolax.convert(sum_first), argnums=0)
    assert float(g(2.0, 10)) == pytest.approx(45.0)


def static_conditions(x, mode):
    if x.ndim == 2:
        x = x.sum(axis=0)
    if mode == "double":
        x = x * 2
    out = []
    for i in range(x.shape[0]):
        out.append(x[i] + i)
    return sum(out)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("mode", ["double", "single"])
def test_static_conditions_behave_as_before(shape, mode):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    assert_matches(static_conditions, x, mode, jit_kwargs={"static_argnames": "mode"})
    report = autolax.trace_check(autolax.jit(static_conditions, static_argnames="mode"), x, mode=mode)
    assert {r.became for r in report.rows if r.kind == "if"} == {"python (static)"}


def test_convert_run_eagerly_equals_original():
    for fn, args in [(piecewise, (1.0,)), (digit_count, (4321,)), (years_to_target, (100.0, 0.05, 200.0))]:
        assert autolax.convert(fn)(*args) == fn(*args)
    x = np.arange(6.0).reshape(2, 3)
    assert autolax.convert(static_conditions)(x, "double") == static_conditions(x, "double")


def promote(xs):
    total = 0
    for x in xs:
        total += x
    return total


def test_carry_promotes_python_int_to_float():
    xs = jnp.array([0.5, 1.25, 2.0], dtype=jnp.float32)
    assert_matches(promote, xs)
    assert autolax.jit(promote)(xs).dtype == jnp.float32


def first_assigned_inside(xs):
    for x in xs:
        last = x * 2
    return last


def test_variable_first_assigned_in_loop_is_available_after():
    assert_matches(first_assigned_inside, jnp.array([1.0, 2.0, 3.0]))


def loop_variable_after(n):
    k = -1
    for k in range(n):
        pass
    return k


def loop_index_after(x):
    for i in range(4):
        x = x + 1.0
    return x, i


@pytest.mark.parametrize("n", [0, 1, 5])
def test_loop_variable_keeps_last_value(n):
    assert_matches(loop_variable_after, n)
    assert_matches(loop_index_after, 2.0)


def negative_step(x):
    for i in range(10, 0, -3):
        x = x * 2 + i
    return x


def traced_negative_step(x, hi, step):
    for i in range(hi, 0, step):
        x = x * 2 + i
    return x


def test_negative_steps():
    assert_matches(negative_step, 1.0)
    for hi, step in [(10, -3), (9, -3), (0, -1), (5, -1)]:
        assert_matches(traced_negative_step, 1.0, hi, step)


def test_jit_accepts_jax_jit_keywords():
    from autolax.check import primitive_counts

    f = autolax.jit(sum_first, static_argnames="n", donate_argnums=())
    assert float(f(2.0, n=4)) == 12.0
    assert "stablehlo.while" in f.lower(2.0, n=4).as_text()  # the scan, lowered
    assert primitive_counts(f.trace(2.0, n=4).jaxpr.jaxpr)["scan"] == 1


def test_bare_and_called_decorator_forms():
    @autolax.jit
    def bare(x):
        return x * 2 if x > 0 else -x

    @autolax.jit(static_argnums=1)
    def called(x, n):
        for _ in range(n):
            x = x + 1
        return x

    assert float(bare(-3.0)) == 3.0
    assert float(called(1.0, 3)) == 4.0


# ----------------------------------------------------------------------------- if -> select
def bisect_step(lo, hi, f_lo, f_mid, mid):
    # Both sides only assign values already computed: nothing to skip, so a select.
    if (f_mid < 0) == (f_lo < 0):
        lo = mid
        f_lo = f_mid
    else:
        hi = mid
    return lo, hi, f_lo


def clipped_sqrt(x):
    # A side computes (sqrt of a negative is NaN; its gradient too): stays a lax.cond.
    if x > 0:
        y = jnp.sqrt(x)
    else:
        y = 0.0
    return y


def loud_flag(x):
    # A side has an effect (print): only the taken side may run, so a lax.cond.
    flag = False
    if x > 0:
        print("positive")
        flag = True
    return flag


@pytest.mark.parametrize("f_mid", [-1.0, 2.0])
def test_if_that_only_moves_values_becomes_select(f_mid):
    args = (0.0, 1.0, -3.0, f_mid, 0.5)
    assert_matches(bisect_step, *args)
    counts = primitives(bisect_step, *args)
    assert counts["cond"] == 0 and counts["select_n"] >= 3
    report = autolax.trace_check(bisect_step, *args)
    assert [r.became for r in report.rows] == ["lax.select"] and report.consistent
    # Same gradients as the Python `if` (the chosen side's inputs get them).
    grad = jax.grad(lambda m: sum(autolax.jit(bisect_step)(0.0, 1.0, -3.0, f_mid, m)))
    py_grad = jax.grad(lambda m: sum(bisect_step(0.0, 1.0, -3.0, f_mid, m)))
    assert grad(0.5) == py_grad(0.5)


def skip_negatives(xs):
    # A `continue` leaves `total += x * x` under `if not x < 0`: a few scalar operations.
    total = 0.0
    for x in xs:
        if x < 0.0:
            continue
        total += x * x
    return total


def divides_or_works_on_arrays(x, v):
    if x > 0.0:
        x = 1.0 / x  # can divide by zero on the untaken side
    if x > 1.0:
        v = v * 2.0  # an array: a select would do the work on every call
    return x, v


def test_if_with_a_few_scalar_operations_becomes_select():
    xs = np.array([1.0, -2.0, 3.0, -0.5], np.float32)
    assert_matches(skip_negatives, xs)
    counts = primitives(skip_negatives, xs)
    assert counts["cond"] == 0 and counts["select_n"] == 1
    # The untaken side's derivative does not leak: d/dx of x*x only where x >= 0.
    grad = jax.grad(autolax.jit(skip_negatives))(xs)
    np.testing.assert_array_equal(np.asarray(grad), np.where(xs < 0, 0.0, 2 * xs))


def test_if_that_divides_or_works_on_arrays_stays_cond():
    v = np.ones(3, np.float32)
    for x in (0.5, -1.0, 0.0):
        assert_matches(divides_or_works_on_arrays, x, v)
    assert primitives(divides_or_works_on_arrays, 0.5, v)["cond"] == 2


def test_if_that_computes_or_has_effects_stays_cond(capsys):
    for x in (4.0, -4.0):
        assert_matches(clipped_sqrt, x)
        assert primitives(clipped_sqrt, x)["cond"] == 1
    assert jax.grad(autolax.jit(clipped_sqrt))(-4.0) == 0.0  # no NaN from the untaken sqrt
    assert primitives(loud_flag, 1.0)["cond"] == 1
    capsys.readouterr()
    assert bool(autolax.jit(loud_flag)(-1.0)) is False
    jax.effects_barrier()
    assert capsys.readouterr().out == ""
