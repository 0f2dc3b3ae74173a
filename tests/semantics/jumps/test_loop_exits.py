"""A loop whose body ends with ``if c: ...; break`` / ``return`` runs that work after the loop
(``autolax.frontend.passes.loop_exits``): the loop only records ``c``.

Every program is compared with Python on every path (``paths.check_all_paths``), on inputs
where the exit is taken at the first, a middle and no iteration, and where the loop runs
zero times; the emitted code and the jaxpr show that nothing but the test is carried.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.runtime import compat
from paths import check_all_paths


def first_negative_prefix(xs):
    total = 0.0
    for i in range(xs.shape[0]):
        total += xs[i]
        if total < 0.0:
            return i, total
    return -1, total


PREFIX_INPUTS = [[-1.0, 2.0], [1.0, 2.0, -5.0, 3.0], [1.0, 2.0, 3.0], []]


@pytest.mark.parametrize("xs", PREFIX_INPUTS)
def test_return_at_the_end_of_a_for_body(xs, tmp_path):
    check_all_paths(first_negative_prefix, np.array(xs, np.float32), tmp_dir=tmp_path)


def bounded_prefix(xs, n):
    total = 0.0
    for i in range(n):
        total += xs[i]
        if total < 0.0:
            return i, total
    return -1, total


@pytest.mark.parametrize("n", [0, 1, 3, 4])
def test_return_from_a_loop_over_a_traced_range_that_may_run_zero_times(n, tmp_path):
    # After the loop `i` may be unbound (n == 0); the exit proves it is not where it is read.
    check_all_paths(bounded_prefix, np.array([1.0, 2.0, -5.0, 3.0], np.float32), n, tmp_dir=tmp_path)


def search_with_else(xs, level):
    for i in range(xs.shape[0]):
        if xs[i] > level:
            found = i * 10
            break
    else:
        found = -1
    return found, i


@pytest.mark.parametrize("level", [-10.0, 2.5, 10.0])
def test_break_with_work_and_a_loop_else(level, tmp_path):
    check_all_paths(search_with_else, np.array([1.0, 3.0, 2.0, 5.0], np.float32), level, tmp_dir=tmp_path)


def last_doubled(xs):
    for x in xs:
        y = x * 2.0
        if y > 3.0 and not x > 10.0:
            break
    return y


@pytest.mark.parametrize("xs", [[1.0, 2.0, 0.5], [0.5, 1.0], []])
def test_value_first_bound_in_the_body_is_read_after_the_loop(xs, tmp_path):
    # [] : Python raises UnboundLocalError; every path must too.
    check_all_paths(last_doubled, np.array(xs, np.float32), tmp_dir=tmp_path)


def halve_until(x, limit):
    steps = 0
    while x > 1.0:
        x = x / 2.0
        steps += 1
        if steps >= limit:
            print("limit reached at", steps)
            break
    return x, steps


@pytest.mark.parametrize("x, limit", [(100.0, 3), (100.0, 50), (0.5, 3)])
def test_while_with_an_exit_at_the_end_prints_once(x, limit, tmp_path):
    check_all_paths(halve_until, np.float32(x), limit, tmp_dir=tmp_path)


def loud(i):
    print("testing", i)
    return True


def while_test_not_run_after_the_exit(x):
    i = 0
    while loud(i) and i < 10:
        i += 1
        if i >= 3:
            break
    return i + x


def test_while_test_is_not_evaluated_after_the_exit(tmp_path):
    # Python does not evaluate the `while` test again after `break`: "testing" three times.
    expected = check_all_paths(while_test_not_run_after_the_exit, np.float32(0.5), tmp_dir=tmp_path)
    assert expected.printed == "testing 0\ntesting 1\ntesting 2\n"


def nested(xss):
    hits = 0
    for row in xss:
        for x in row:
            if x < 0.0:
                hits += 1
                break
    return hits


def test_exit_of_an_inner_loop(tmp_path):
    xss = np.array([[1.0, -1.0, 2.0], [1.0, 2.0, 3.0], [-4.0, 0.0, 0.0]], np.float32)
    check_all_paths(nested, xss, tmp_dir=tmp_path)


def escape(x, v, limit, n):
    for step in range(n):
        v = v - 0.1 * x
        x = x + 0.1 * v
        if abs(x) > limit:
            return step, x
    return n, x


def test_the_loop_tests_after_each_iteration_and_carries_no_exit_value():
    source = autolax.to_source(escape)
    assert "def loop_test(x, v):\n        return abs(x) > limit" in source
    assert "at='%d; test: after step')" % (escape.__code__.co_firstlineno + 1) in source
    jaxpr = jax.make_jaxpr(autolax.convert(escape))(1.0, 0.0, 1.5, 100).jaxpr
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    # The counter, x and v: neither the exit flag nor the returned values nor `step`.
    assert len(loop.outvars) == 3


def _exit_predicate(fn, *args):
    """The primitives of the predicate of ``fn``'s one staged while loop."""
    jaxpr = jax.make_jaxpr(autolax.convert(fn))(*args).jaxpr
    loops = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    while not loops:  # (inside the loop's derivative rule)
        jaxpr = next(sub for e in jaxpr.eqns for sub in compat.jaxprs_in_params(e.params))
        loops = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    (loop,) = loops
    return [e.primitive.name for e in loop.params["cond_jaxpr"].jaxpr.eqns]


def test_a_test_false_on_the_constant_start_needs_no_first_iteration_clause():
    # `total` starts at 0.0, where `total < 0.0` is false: the predicate is the test itself
    # from the first iteration on, as a hand-written loop's is.
    assert _exit_predicate(first_negative_prefix, jnp.ones(4)) == ["lt", "lt", "not", "and"]
    # `x` starts traced: Python runs the first iteration whatever the test says there.
    assert "eq" in _exit_predicate(escape, 1.0, 0.0, 1.5, 100)


def first_stop_at_start(xs):
    total = 0.0
    count = 0
    for i in range(xs.shape[0]):
        total += xs[i]
        count += 1
        if total <= 0.5 or count > 100:  # true on the start
            return i, total
    return -1, total


def first_ratio_above(xs):
    total = 0
    count = 0
    for i in range(xs.shape[0]):
        total += xs[i]
        count += 1
        if total // count > 2:  # 0 // 0 on the start: Python never divides there
            return i, total
    return -1, total


def test_a_test_true_or_not_known_on_the_start_keeps_the_first_iteration_clause():
    assert "eq" in _exit_predicate(first_stop_at_start, jnp.ones(4))
    # A division is not evaluated when tracing (`0 // 0` there): not known, so kept.
    assert "eq" in _exit_predicate(first_ratio_above, jnp.ones(4, jnp.int32))


@pytest.mark.parametrize("xs", [[1.0, 2.0], [-1.0, 2.0], [3.0, 1.0], [1.0, 1.0, 9.0], []])
def test_tests_after_each_iteration_on_constant_starts_match_python(xs, tmp_path):
    xs = np.array(xs, np.float32)
    check_all_paths(first_stop_at_start, xs, tmp_dir=tmp_path)
    check_all_paths(first_ratio_above, (xs * 3).astype(np.int32), tmp_dir=tmp_path)


def halve_or_stop(x, limit):
    steps = 0
    while x > 1.0:
        x = x / 2.0
        steps += 1
        if steps >= limit:
            break
    return x, steps


def test_a_while_loop_records_its_exit_test():
    # A `while` loop has no item: the test ending its body is recorded in a flag its
    # predicate reads (no select of the values the exit would have kept).
    source = autolax.to_source(halve_or_stop)
    assert "exit_ = steps >= limit" in source
    assert "def if_true" not in source


@pytest.mark.parametrize("n", [0, 5, 100])
def test_escape_matches_python(n, tmp_path):
    check_all_paths(escape, np.float32(1.0), np.float32(0.0), np.float32(1.5), n, tmp_dir=tmp_path)


def test_gradient_of_a_return_at_the_end_matches_the_unrolled_program():
    xs = jnp.array([1.0, 2.0, -5.0, 3.0])
    converted = jax.grad(lambda xs: autolax.convert(first_negative_prefix)(xs)[1])
    unrolled = jax.grad(lambda xs: first_negative_prefix(xs)[1])
    np.testing.assert_allclose(converted(xs), unrolled(xs))
    batch = jnp.stack([xs, -xs, jnp.ones(4)])
    np.testing.assert_allclose(jax.vmap(converted)(batch), jnp.stack([unrolled(x) for x in batch]))


# ----------------------------------------------------------------------------- exit at the top
# `for i in ...: if c: ...; break`: the loop tests c with each item before its iteration, on
# the state the iteration starts with (ops.for_range's item test), as a hand-written
# `lax.while_loop` tests it in its predicate (tests/semantics/jumps/test_loop_rotation.py: tests over the carry).
def search(xs, level, n):
    for i in range(n):
        if xs[i] > level:
            break
    return i


@pytest.mark.parametrize("level, n", [(-10.0, 4), (2.5, 4), (10.0, 4), (2.5, 0), (2.5, 1)])
def test_search_leaves_the_target_where_python_does(level, n, tmp_path):
    # n == 0: Python raises UnboundLocalError for `i`; without a hit `i` is the last index.
    check_all_paths(search, np.array([1.0, 3.0, 2.0, 5.0], np.float32), level, n, tmp_dir=tmp_path)


def sum_before(xs, t):
    total = 0.0
    for x in xs:
        if x > t:
            return total, x
        total += x * x
    return total, -1.0


@pytest.mark.parametrize("t", [-10.0, 1.5, 10.0])
def test_return_at_the_top_of_a_loop_over_rows(t, tmp_path):
    check_all_paths(sum_before, np.array([1.0, -1.0, 2.0, 0.5], np.float32), t, tmp_dir=tmp_path)


def test_gradient_of_a_loop_tested_with_each_item_matches_the_unrolled_program():
    xs = jnp.array([1.0, -1.0, 2.0, 0.5])
    for t in (-10.0, 1.5, 10.0):
        converted = jax.grad(lambda xs, t=t: autolax.convert(sum_before)(xs, t)[0])
        unrolled = jax.grad(lambda xs, t=t: sum_before(xs, t)[0])
        np.testing.assert_allclose(converted(xs), unrolled(xs))
        batch = jnp.stack([xs, xs[::-1], jnp.full(4, 3.0)])
        np.testing.assert_allclose(jax.vmap(converted)(batch), jnp.stack([unrolled(x) for x in batch]))


def test_vmap_lanes_stop_at_different_items():
    lanes = jnp.array([[1.0, 3.0, 2.0, 5.0], [9.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    got = jax.vmap(lambda xs: autolax.convert(search)(xs, 2.5, 4))(lanes)
    assert got.tolist() == [search(np.asarray(x), 2.5, 4) for x in lanes] == [1, 0, 3]


def first_positive(a, b, c):
    found = 0.0
    for v in [a, b, c]:
        if v > 0.0:
            found = v * 10.0
            break
    else:
        found = -1.0
    return found, v


@pytest.mark.parametrize("args", [(1.0, 2.0, 3.0), (-1.0, 2.0, 3.0), (-1.0, -2.0, -3.0)])
def test_unrolled_loop_over_a_list_with_a_traced_test(args, tmp_path):
    check_all_paths(first_positive, *(np.float32(a) for a in args), tmp_dir=tmp_path)


def first_pair(xs, t):
    for pair in enumerate(xs):
        if pair[1] > t:
            break
    return pair[0], pair[1]


@pytest.mark.parametrize("t", [0.0, 10.0])
def test_item_that_is_a_tuple(t, tmp_path):
    check_all_paths(first_pair, np.array([-1.0, 2.0, 3.0], np.float32), t, tmp_dir=tmp_path)


def running_until(xs, t):
    total = 0.0
    for x in xs:
        if total > t:  # reads what the body changes: tested on the carry each iteration starts with
            break
        total += x
    return total


@pytest.mark.parametrize("t", [-1.0, 2.0, 100.0])
def test_test_on_the_carry_is_folded(t, tmp_path):
    # Loop rotation (tests/semantics/jumps/test_loop_rotation.py): the predicate tests the carry as it enters.
    check_all_paths(running_until, np.array([1.0, 2.0, 3.0], np.float32), t, tmp_dir=tmp_path)
    assert "test: x" in autolax.to_source(running_until)


def test_the_search_loop_carries_only_its_counter():
    source = autolax.to_source(search)
    assert source.startswith("@ops.function(checks=True)\ndef search(xs, level, n):\n")
    assert "def loop_test(i):\n        return ops.not_(xs[i] > level)" in source
    assert "i, exit_ = ops.for_range(0, n, 1, loop_body, (), loop_test, at=" in source
    jaxpr = jax.make_jaxpr(autolax.convert(search))(jnp.ones(4), 0.5, 4).jaxpr
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    assert len(loop.outvars) == 1  # the counter: the test is the loop's predicate
    rows = autolax.trace_check(search, jnp.ones(4), 0.5, 4).rows
    assert [r.became for r in rows if r.kind == "for"] == ["lax.while_loop"]


def loud_sum(xs, t):
    total = 0.0
    for x in xs:
        if x > t:
            break
        print("adding", x)
        total += x
    return total


@pytest.mark.parametrize("t", [-10.0, 1.5, 10.0])
def test_item_test_of_a_loop_that_prints(t, tmp_path):
    # A body with effects is staged as the masked scan (every iteration runs, masked): the
    # test must stay stopped once it stopped, and print only for the iterations Python runs.
    check_all_paths(loud_sum, np.array([1.0, -1.0, 2.0, 0.5], np.float32), t, tmp_dir=tmp_path)


def is_big(v):
    if v > 2.0:  # a traced `if`: the function must be converted to be called in the test
        return True
    return False


def search_with_helper(xs):
    for i in range(xs.shape[0]):
        if is_big(xs[i]) or (xs[i] if i > 10 else -xs[i]) > 100.0:
            break
    return i


@pytest.mark.parametrize("xs", [[1.0, 3.0, 2.0], [0.0, -500.0, 0.0], [0.0, 0.0, 0.0]])
def test_test_calling_a_user_function_or_a_conditional_expression(xs, tmp_path):
    # Not run as the loop's predicate (a user function and `x if c else y` are rewritten in
    # the body's statements only): it stays an `if` of the body, with the same results.
    check_all_paths(search_with_helper, np.array(xs, np.float32), tmp_dir=tmp_path)
    assert "test: i" not in autolax.to_source(search_with_helper)


def stop_on_python_value(xs, n):
    total = 0.0
    for x in xs:
        if n > 3:  # a Python value: the test is the same for every item
            break
        total += x
    return total, x


@pytest.mark.parametrize("n", [1, 5])
def test_test_that_does_not_depend_on_the_item(n, tmp_path):
    check_all_paths(stop_on_python_value, np.array([1.0, 2.0, 3.0], np.float32), n, static_argnums=(1,),
                    tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- test after each iteration
def grow_until(a, b, c, t):
    total = 0.0
    for v in [a, b, c]:
        doubled = v * 2.0
        total = total + doubled
        if doubled > t:
            break
    return total, v


@pytest.mark.parametrize("t", [0.0, 3.0, 100.0])
def test_unrolled_loop_over_a_list_tested_after_each_iteration(t, tmp_path):
    check_all_paths(grow_until, np.float32(1.0), np.float32(2.0), np.float32(3.0), np.float32(t), tmp_dir=tmp_path)


def loud_until(xs, t):
    total = 0.0
    for x in xs:
        print("adding", x)
        total = total + x
        if total > t:
            return total
    return -total


@pytest.mark.parametrize("t", [-10.0, 1.5, 100.0])
def test_test_after_each_iteration_of_a_loop_that_prints(t, tmp_path):
    # The masked scan (a body that prints): iterations after the exit print nothing.
    check_all_paths(loud_until, np.array([1.0, 2.0, 3.0], np.float32), t, tmp_dir=tmp_path)


def exit_reads_the_item(xs):
    total = 0.0
    for x in xs:
        total = total + x
        if x > total:  # reads the loop variable: recorded in a flag instead
            break
    return total


def test_test_reading_the_loop_variable_is_recorded(tmp_path):
    check_all_paths(exit_reads_the_item, np.array([1.0, -3.0, 5.0], np.float32), tmp_dir=tmp_path)
    assert "test: after" not in autolax.to_source(exit_reads_the_item)


def skipped_exit(xs, t):
    for x in xs:
        continue
        if t <= 0.0:  # never reached: every iteration continues first
            return 1.0, x
    return 0.0, t


def sometimes_skipped_exit(xs, t):
    total = 0.0
    for x in xs:
        total = total + x
        if x < 0.0:
            continue
        if total > t:
            return 1.0, total
    return 0.0, total


@pytest.mark.parametrize("t", [-1.0, 2.0])
def test_exit_that_a_continue_skips_is_not_tested(t, tmp_path):
    # Fuzzer seed 2240: testing after every iteration ran the `return` an earlier `continue`
    # skips in Python. Such a loop records its test in the body instead.
    with warnings.catch_warnings():  # the never-set flag leaves a test Python decides: unrolled, correctly
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        check_all_paths(skipped_exit, np.array([1.0, 2.0], np.float32), t, tmp_dir=tmp_path)
    check_all_paths(sometimes_skipped_exit, np.array([1.0, -5.0, 3.0], np.float32), t, tmp_dir=tmp_path)
    assert "test: after" not in autolax.to_source(sometimes_skipped_exit)


def triangle(x):
    # The inner loop's exit, tested with each item, reads the outer loop's index: a traced
    # integer (the outer scan's) that carries no tangent.
    acc = 0.0
    for i in range(3):
        for j in range(4):
            if j > i:
                break
            acc = acc + x ** (i + 1) * (j + 1) * 0.1
    return acc


@pytest.mark.parametrize("x", [-1.0, 0.5, 1.0])
def test_derivative_of_an_exit_reading_an_enclosing_loop_index(x, tmp_path):
    # Was JAX's "No constant handler for type DynamicJaxprTracer" (jit) or
    # UnexpectedTracerError (eager): the masked scan's custom_jvp kept the outer index in a
    # closure.
    check_all_paths(triangle, x, tmp_dir=tmp_path)
    x = jnp.float32(x)
    want = jax.grad(triangle)(x)
    for f in (autolax.jit(triangle), autolax.convert(triangle), jax.jit(autolax.convert(triangle))):
        np.testing.assert_allclose(jax.grad(f)(x), want, rtol=1e-5)
        np.testing.assert_allclose(jax.jvp(f, (x,), (jnp.float32(1.0),)), jax.jvp(triangle, (x,), (jnp.float32(1.0),)),
                                   rtol=1e-5)
    xs = jnp.array([-1.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(jax.vmap(jax.grad(autolax.convert(triangle)))(xs),
                               [jax.grad(triangle)(v) for v in xs], rtol=1e-5)
