"""A staged ``if`` that only accumulates (``if c: total += x * x``) under a select is
``total + select(c, x * x, -0.0)``: the carried value stays out of the select
(``autolax.runtime.ops.tracing.accumulations``).

The rewrite must give Python's bits: every program is compared with Python on every path,
-0.0 keeps its sign, inf and NaN on the side not taken never reach the result, and the
derivatives are those of the hand-written ``jnp.where`` form.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths


def positive_energy(xs):
    total = 0.0
    for x in xs:
        if x > 0.0:
            total += x * x
    return total


def signed_parts(xs):
    neg = 0.0
    prod = 1.0
    for x in xs:
        if x < 0.0:
            neg = neg - x
        else:
            prod = prod * x
    return neg, prod


def keeps_negative_zero(xs):
    total = -0.0
    for x in xs:
        if x > 0.0:
            total += x
    return total


def counts(xs, step):
    n = 0
    for x in xs:
        if x > 0.0:
            n = n + step
    return n


INPUTS = [
    [1.0, -2.0, 3.0],
    [-1.0, -2.0],
    [],
    [np.inf, -np.inf, 2.0],
    [np.nan, 1.0],  # NaN > 0 is False: the NaN is on the side not taken
    [-0.0, 0.0, 0.5],
]


@pytest.mark.parametrize("xs", INPUTS)
@pytest.mark.parametrize("fn", [positive_energy, signed_parts, keeps_negative_zero], ids=lambda f: f.__name__)
def test_accumulating_if_agrees_with_python(fn, xs, tmp_path):
    check_all_paths(fn, np.array(xs, np.float32), tmp_dir=tmp_path)


@pytest.mark.parametrize("step", [2, -3])
def test_integer_accumulation_agrees_with_python(step, tmp_path):
    check_all_paths(counts, np.array([1.0, -1.0, 4.0], np.float32), step, tmp_dir=tmp_path)


def test_negative_zero_keeps_its_sign():
    # -0.0 + 0.0 is +0.0: the unit added on the side not taken must be -0.0.
    got = autolax.jit(keeps_negative_zero)(jnp.array([-1.0, -2.0]))
    assert float(got) == 0.0 and np.signbit(got)
    assert np.signbit(keeps_negative_zero(np.array([-1.0, -2.0], np.float32)))


def test_the_carried_value_is_not_selected():
    jaxpr = jax.make_jaxpr(autolax.convert(positive_energy))(jnp.ones(5)).jaxpr
    body = next(e for e in jaxpr.eqns if e.primitive.name in ("scan", "while")).params
    inner = (body.get("jaxpr") or body["body_jaxpr"]).jaxpr
    selects = [e for e in inner.eqns if e.primitive.name == "select_n"]
    adds = [e for e in inner.eqns if e.primitive.name == "add"]
    assert len(selects) == 1 and len(adds) == 1
    # `add total (select c x*x -0.0)`: the select's result is the add's operand.
    assert selects[0].outvars[0] in adds[0].invars
    assert any(getattr(v, "val", None) == 0.0 and np.signbit(v.val) for v in selects[0].invars)


def test_derivatives_are_those_of_the_where_form():
    xs = jnp.array([1.5, -2.0, 3.0, 0.0, -0.5])

    def where_form(xs):
        return jnp.sum(jnp.where(xs > 0.0, xs * xs, 0.0))

    converted = autolax.convert(positive_energy)
    np.testing.assert_allclose(jax.grad(converted)(xs), jax.grad(where_form)(xs))
    np.testing.assert_allclose(jax.vmap(jax.grad(converted))(jnp.stack([xs, -xs])),
                               jax.vmap(jax.grad(where_form))(jnp.stack([xs, -xs])))
    neg_grad, prod_grad = jax.jacobian(autolax.convert(signed_parts))(xs)
    np.testing.assert_allclose(neg_grad, jnp.where(xs < 0.0, -1.0, 0.0))
    nonneg = jnp.where(xs < 0.0, 1.0, xs)
    expected = jnp.where(xs < 0.0, 0.0, jnp.prod(nonneg) / jnp.where(xs == 0.0, 1.0, nonneg))
    expected = expected.at[3].set(jnp.prod(jnp.where(jnp.arange(5) == 3, 1.0, nonneg)))
    np.testing.assert_allclose(prod_grad, expected)
