"""A loop whose body ends with ``if c: ...; break`` / ``return`` runs that work after the loop
(``autolax.passes.loop_exits``): the loop only records ``c``.

Every program is compared with Python on every path (``paths.check_all_paths``), on inputs
where the exit is taken at the first, a middle and no iteration, and where the loop runs
zero times; the emitted code and the jaxpr show that nothing but the test is carried.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
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


def test_the_loop_carries_the_test_not_the_returned_values():
    source = autolax.to_source(escape)
    assert "exit_ = abs(x) > limit" in source
    assert "retval" not in source.split("ops.for_range")[0].split("def loop_body")[1]
    jaxpr = jax.make_jaxpr(autolax.convert(escape))(1.0, 0.0, 1.5, 100).jaxpr
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "while"]
    # counter, x, v, the exit test and the loop target: the return value is not carried.
    assert len(loop.outvars) == 5


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
