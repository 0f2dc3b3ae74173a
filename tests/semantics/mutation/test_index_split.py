"""A loop that appends in one branch of ``if i < C`` is split at ``C`` and staged in two
parts (index-set splitting, ``autolax.frontend.passes.index_split``), with Python's results.

Before the split such a loop could not be staged (the branches build lists of different
lengths) and was unrolled: a 300-step warm-up compiled for over a minute.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from paths import check_all_paths

import autolax
from autolax.check import count_equations

WARMUP = 5


def warm_up_then_sample(x, n):
    samples = []
    for i in range(n):
        x = 0.9 * x + 0.1
        if i < WARMUP:
            x = x * 1.01
        else:
            samples.append(x)
    return jnp.stack(samples), x


def sample_after(x, n, cut):
    # `C > i`, a bound from the arguments, a statement after the `if`, and the index read
    # after the loop.
    kept = []
    for i in range(2, n):
        x = x * 0.5 + 1.0
        if cut > i:
            x = x + 1.0
        else:
            kept.append(x * i)
        x = x - 0.25
    return jnp.stack(kept), x, i


def inclusive_float_bound(x, n):
    out = []
    for i in range(n):
        if i <= 2.5:
            out.append(x + i)
        x = x * 1.5
    return jnp.stack(out), x


def split_at_the_top_of_the_range(x, n):
    out = []
    for i in range(n):
        x = x + 1.0
        if i >= n - 2:  # the last two: a bound computed from the loop's own stop
            out.append(x)
    return jnp.stack(out)


@pytest.mark.parametrize("n", [6, 7, 30])
def test_warm_up_loop_matches_python(n, tmp_path):
    check_all_paths(warm_up_then_sample, 1.0, n, static_argnums=(1,), tmp_dir=tmp_path)


@pytest.mark.parametrize("n, cut", [(9, 5), (9, 0), (9, 2), (9, 3), (4, 40), (12, -3)])
def test_bounds_from_arguments_and_the_index_after_the_loop(n, cut, tmp_path):
    check_all_paths(sample_after, 2.0, n, cut, static_argnums=(1, 2), tmp_dir=tmp_path)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_inclusive_float_bound(n, tmp_path):
    check_all_paths(inclusive_float_bound, 1.0, n, static_argnums=(1,), tmp_dir=tmp_path)


@pytest.mark.parametrize("n", [2, 5])
def test_bound_from_the_range_stop(n, tmp_path):
    check_all_paths(split_at_the_top_of_the_range, 1.0, n, static_argnums=(1,), tmp_dir=tmp_path)


def test_no_sample_raises_as_python_does(tmp_path):
    # jnp.stack of an empty list: the same ValueError on every path.
    check_all_paths(warm_up_then_sample, 1.0, 3, static_argnums=(1,), tmp_dir=tmp_path)


def test_both_parts_are_staged_and_nothing_grows_with_the_trip_count():
    jitted = autolax.jit(warm_up_then_sample, static_argnums=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no UnrolledLoopWarning
        report = autolax.trace_check(jitted, 1.0, 300)
    assert report.consistent
    assert [r.became for r in report.rows] == ["lax.scan"]
    assert report.primitives["scan"] == 2
    sizes = {count_equations(jax.make_jaxpr(autolax.convert(warm_up_then_sample), static_argnums=1)(1.0, n).jaxpr)
             for n in (10, 300)}
    assert len(sizes) == 1


def test_emitted_code_shows_the_two_loops():
    text = autolax.to_source(warm_up_then_sample)
    assert "split = ops.range_split(0, n, lambda: WARMUP, False)" in text
    assert "ops.for_range(0, split, 1," in text and "ops.for_range(split, n, 1," in text


def warm_up_with_traced_length(x, warmup):
    samples = []
    for i in range(10):
        x = x + 1.0
        if i < warmup:
            x = x * 2.0
        else:
            samples.append(x)
    return jnp.stack(samples)


def test_a_traced_bound_is_a_clear_error():
    # How many items the list gets depends on a traced value: no Python list can say.
    assert np.asarray(warm_up_with_traced_length(1.0, 8)).shape == (2,)
    with pytest.raises(autolax.AutolaxError, match="samples"):
        autolax.jit(warm_up_with_traced_length)(1.0, 8)


def with_break(x, n):
    out = []
    for i in range(n):
        if i < 3:
            x = x + 1.0
        else:
            out.append(x)
        if i > 5:
            break
    return jnp.stack(out)


def test_a_loop_that_breaks_is_not_split(tmp_path):
    assert "range_split" not in autolax.to_source(with_break)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unrolled, with autolax's warning
        check_all_paths(with_break, 1.0, 9, static_argnums=(1,), tmp_dir=tmp_path)


def appends_either_way(x):
    out = []
    for i in range(4):
        if x > i:
            out.append(x - i)
        else:
            out.append(jnp.zeros_like(x))
    return jnp.sum(jnp.stack(out) ** 2)


@pytest.mark.parametrize("x", [0.0, 1.0, 2.5, 5.0])
def test_a_loop_appending_in_both_branches_is_not_split(x, tmp_path):
    # Each iteration appends one item either way: the loop stages as it is (a scan with a
    # cond). Split at a traced `x` it was refused (two loops with traced trip counts), and
    # called eagerly on a JAX array range_split raised TypeError.
    assert "range_split" not in autolax.to_source(appends_either_way)
    check_all_paths(appends_either_way, jnp.float32(x), tmp_dir=tmp_path)
    np.testing.assert_allclose(jax.grad(autolax.jit(appends_either_way))(jnp.float32(x)),
                               jax.grad(appends_either_way)(jnp.float32(x)), rtol=1e-5)


def sample_after_cut(x, cut):
    kept = []
    for i in range(6):
        x = x * 0.5
        if i < cut:
            x = x + 1.0
        else:
            kept.append(x)
    return jnp.stack(kept)


def test_split_at_a_concrete_array_called_eagerly():
    # Called eagerly (no jit), the bound is a concrete JAX array (was a TypeError "a loop
    # index is compared with a ArrayImpl"): compared as its number, as Python compares it.
    x, cut = jnp.float32(1.0), jnp.float32(2.5)
    assert "range_split" in autolax.to_source(sample_after_cut)
    np.testing.assert_allclose(autolax.convert(sample_after_cut)(x, cut), sample_after_cut(x, cut), rtol=1e-6)
