"""and / or / not, chained comparisons and conditional expressions (issue 2)."""

import jax
import jax.numpy as jnp
import pytest

import autolax
from conftest import assert_matches


def logic(x, y):
    a = x > 0 and y > 0
    b = x > 0 or y > 0
    c = not x > y
    d = 0 < x < 10
    e = x if x > y else y
    return a, b, c, d, e


@pytest.mark.parametrize("x,y", [(1.0, 2.0), (-1.0, 2.0), (1.0, -2.0), (-1.0, -2.0), (20.0, 3.0)])
def test_boolean_operators_match_python(x, y):
    assert_matches(logic, x, y)


def value_semantics(x, y):
    # `and`/`or` return an operand, not a bool
    return (x and y), (x or y)


@pytest.mark.parametrize("x,y", [(0.0, 2.0), (3.0, 2.0), (3.0, 0.0)])
def test_and_or_return_operands(x, y):
    assert_matches(value_semantics, x, y)


def test_concrete_operands_short_circuit():
    calls = []

    def side(v):
        calls.append(v)
        return v

    def f(x):
        return x > 0 and side(x) > 1

    converted = autolax.convert(f)
    assert converted(-1.0) is False and calls == []
    assert converted(2.0) is True and calls == [2.0]


def test_chained_comparison_evaluates_middle_operand_once():
    calls = []

    def mid(v):
        calls.append(v)
        return v

    def f(x):
        return 0 < mid(x) < 10

    assert autolax.convert(f)(5) is True
    assert calls == [5]
    assert "operand" in autolax.to_source(f)  # bound once with :=


def safe_sqrt(x):
    return jnp.sqrt(x) if x > 0 else 0.0 * x


def test_traced_ternary_is_lax_cond_not_where():
    # With jnp.where both sides would run and the gradient at x < 0 would be NaN.
    g = jax.grad(autolax.jit(safe_sqrt))
    assert float(g(-4.0)) == 0.0
    assert float(g(4.0)) == pytest.approx(0.25)
    rows = autolax.trace_check(safe_sqrt, 1.0).rows
    assert [r.became for r in rows if r.kind == "ternary"] == ["lax.cond"]


def test_not_of_vector_condition_is_an_error():
    def f(x):
        return not x

    with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
        autolax.jit(f)(jnp.ones(3))


def or_where(a, x):
    return a or jnp.where(x > 0, x, 1.0)


def or_norm(a, x):
    return a or jnp.linalg.norm(x)


@pytest.mark.parametrize("fn,became", [(or_where, "jnp.logical_or"), (or_norm, "lax.cond")])
def test_operand_calling_a_jitted_jnp_function_counts_by_what_it_runs(fn, became):
    # `jnp.where` and `jnp.linalg.norm` trace to a `jit` call: what decides is what runs inside
    # it (a select: harmless, evaluated anyway; a `sqrt`: under a cond, so the gradient at 0,
    # where the `sqrt`'s derivative is infinite, stays Python's).
    rows = autolax.trace_check(fn, 0.0, 1.0).rows
    assert [r.became for r in rows if r.kind == "or"] == [became]
    for a, x in [(0.0, 0.0), (0.0, 2.0), (3.0, 0.0), (3.0, -2.0)]:
        assert_matches(fn, a, x)
        expected = jax.grad(fn, argnums=1)(a, x)
        assert float(jax.grad(autolax.jit(fn), argnums=1)(a, x)) == pytest.approx(float(expected), nan_ok=True)
