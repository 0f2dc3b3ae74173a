"""``autolax.runtime.ops.host``: a small jaxpr on host values gives what XLA gives, or None."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autolax.runtime.ops import host

SPECIAL = [0.0, -0.0, 1.5, -2.25, 1e30, np.nan, np.inf, -np.inf]
INTS = [0, 1, -1, 7, 2**31 - 1, -(2**31)]


def _same(fn, *args):
    args = [np.asarray(a) for a in args]
    closed = jax.make_jaxpr(fn)(*args)
    got = host.evaluate(closed, args)
    if not all(np.isfinite(a) for a in args if a.dtype.kind == "f"):
        # XLA may not spread a NaN or an infinity as IEEE arithmetic does (it gives 0 for
        # `float32(x > 0) * nan` with x <= 0): not evaluated.
        assert got is None
        return
    assert got is not None, closed
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_array_equal(g, np.asarray(w))


FLOAT_TESTS = [
    lambda x, y: x < y,
    lambda x, y: ~(x >= y),
    lambda x, y: (abs(x) > y) | (x == y),
    lambda x, y: jnp.logical_not(x + y * 2.0 > 1.0),
    lambda x, y: jnp.maximum(x, y) - jnp.minimum(x, -y),
    lambda x, y: jnp.where(x > y, x, -y) != 0.0,
    lambda x, y: (x != x) ^ (y <= 0.5),
    lambda x, y: jnp.float32(x > 0) * y,
]


@pytest.mark.parametrize("k", range(len(FLOAT_TESTS)))
def test_float_expressions_match_xla_on_special_values(k):
    for x in SPECIAL:
        for y in SPECIAL:
            _same(FLOAT_TESTS[k], np.float32(x), np.float32(y))


def test_integer_arithmetic_wraps_as_in_xla():
    for x in INTS:
        for y in INTS:
            _same(lambda a, b: (a + b, a - b, a * b, -a, abs(a), a < b), np.int32(x), np.int32(y))


def test_unknown_primitives_and_inputs_give_none():
    x = np.float32(2.0)
    assert host.evaluate(jax.make_jaxpr(lambda a: a / 3.0 > 1.0)(x), [x]) is None
    assert host.evaluate(jax.make_jaxpr(lambda a: a.astype(jnp.int32) > 1)(x), [x]) is None
    assert host.evaluate(jax.make_jaxpr(lambda a: jnp.sin(a) > 0)(x), [x]) is None
    closed = jax.make_jaxpr(lambda a: a > 1.0)(x)
    assert host.evaluate(closed, [jnp.float32(2.0)]) is None  # a JAX array: not a host value
    assert host.evaluate(closed, [np.zeros(host.MAX_ELEMENTS + 1, np.float32)]) is None


def test_an_intermediate_infinity_gives_none():
    x = np.float32(3e38)
    assert host.evaluate(jax.make_jaxpr(lambda a: a * 2.0 > 0.0)(x), [x]) is None


def test_a_jaxpr_over_the_size_limit_gives_none():
    def long(a):
        for _ in range(host.MAX_EQUATIONS + 1):
            a = a + 1.0
        return a > 0

    x = np.float32(0.0)
    assert host.evaluate(jax.make_jaxpr(long)(x), [x]) is None
