"""Carries of every dtype: float64 under ``jax_enable_x64`` (a context manager, so x64 does
not leak into other tests), integer and boolean state, complex numbers; each compared with
plain Python on the same inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close, assert_matches, primitives


# ----------------------------------------------------------------------------- float64
def tiny_steps(x, n):
    total = 1.0
    for i in range(n):
        total = total + x
    return total


def newton_sqrt(a):
    y = a
    steps = 0
    while abs(y * y - a) > 1e-13 * a and steps < 100:
        y = 0.5 * (y + a / y)
        steps += 1
    return y, steps


def test_float64_carries_keep_double_precision():
    with jax.enable_x64(True):
        got = autolax.jit(tiny_steps, static_argnums=1)(jnp.float64(1e-9), 1000)
        assert got.dtype == jnp.float64
        # Python floats are doubles: 1 + 1000 * 1e-9; float32 would stay at exactly 1.0
        np.testing.assert_allclose(float(got), tiny_steps(1e-9, 1000), rtol=1e-15)
        assert float(got) != 1.0
        assert primitives(tiny_steps, jnp.float64(1e-9), 1000, static_argnums=1)["scan"] == 1

        y, steps = autolax.jit(newton_sqrt)(jnp.float64(2.0))
        py_y, py_steps = newton_sqrt(2.0)
        assert y.dtype == jnp.float64 and int(steps) == py_steps
        np.testing.assert_allclose(float(y), py_y, rtol=1e-15)
        assert_close(jax.grad(tiny_steps)(1e-9, 3), jax.grad(autolax.convert(tiny_steps))(jnp.float64(1e-9), 3))
    # the context is gone: default precision again
    assert autolax.jit(tiny_steps, static_argnums=1)(1e-9, 10).dtype == jnp.float32


def test_float64_integer_carries_are_int64():
    def count_down(n):
        k = 0
        while n > 2**33:  # beyond int32
            n = n - 2**32
            k += 1
        return n, k

    with jax.enable_x64(True):
        n, k = autolax.jit(count_down)(jnp.int64(2**40 + 5))
        assert n.dtype == jnp.int64
        assert (int(n), int(k)) == count_down(2**40 + 5)


# ----------------------------------------------------------------------------- integers
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


@pytest.mark.parametrize("a,b", [(48, 18), (17, 5), (0, 9), (1071, 462)])
def test_integer_while_carries(a, b):
    assert_matches(gcd, a, b)
    assert jnp.issubdtype(autolax.jit(gcd)(a, b).dtype, jnp.integer)


def popcount_and_parity(n):
    bits = 0
    parity = False
    while n > 0:
        if n & 1:
            bits += 1
            parity = not parity
        n >>= 1
    return bits, parity


@pytest.mark.parametrize("n", [0, 1, 6, 255, 1023, 12345])
def test_bitwise_integer_and_bool_carries(n):
    assert_matches(popcount_and_parity, n)
    bits, parity = autolax.jit(popcount_and_parity)(n)
    assert jnp.issubdtype(bits.dtype, jnp.integer) and parity.dtype == jnp.bool_


def first_above(xs, threshold):
    found = False
    index = -1
    for i, x in enumerate(xs):
        if x > threshold and not found:
            found = True
            index = i
    return found, index


@pytest.mark.parametrize("threshold", [0.5, 2.5, 10.0])
def test_bool_flag_and_int_index_over_array(threshold):
    xs = np.array([0.1, 3.0, 0.7, 5.0])
    assert_matches(first_above, jnp.asarray(xs), threshold, python_args=(xs, threshold))
    found, index = autolax.jit(first_above)(jnp.asarray(xs), threshold)
    assert found.dtype == jnp.bool_ and jnp.issubdtype(index.dtype, jnp.integer)


def int8_accumulate(xs):
    total = jnp.int8(0)
    for x in xs:
        total = total + x
    return total


def test_narrow_integer_dtype_is_kept():
    xs = np.array([1, 2, 3, 125], dtype=np.int8)
    got = autolax.jit(int8_accumulate)(jnp.asarray(xs))
    assert got.dtype == jnp.int8
    # 6 + 125 wraps around, as int8 arithmetic does in NumPy (the carry is not widened)
    assert int(got) == int(xs.sum(dtype=np.int8)) == -125


def int_to_float_promotion(x):
    total = 0
    for i in range(4):
        total += x * i
    return total


def test_int_carry_promoted_to_float():
    assert_matches(int_to_float_promotion, 0.25)
    assert autolax.jit(int_to_float_promotion)(0.25).dtype == jnp.float32


# ----------------------------------------------------------------------------- complex
def rotate(z, n):
    for i in range(n):
        if z.real > 0:
            z = z * 1j
        else:
            z = z + 1
    return z


@pytest.mark.parametrize("z", [1 + 2j, -1 - 1j, 0.5 - 3j])
def test_complex_carry_under_traced_if(z):
    assert_matches(rotate, z, 5, jit_kwargs={"static_argnums": 1})
    assert_close(rotate(z, 5), autolax.convert(rotate)(jnp.complex64(z), 5))
    assert autolax.jit(rotate, static_argnums=1)(jnp.complex64(z), 5).dtype == jnp.complex64


def escape_time(c):
    z = 0.0
    k = 0
    while abs(z) <= 2.0 and k < 50:
        z = z * z + c
        k += 1
    return k


def test_complex_while_vmapped_matches_python():
    cs = np.array([0.0 + 0.0j, 1.0 + 1.0j, -1.0 + 0.0j, 0.3 + 0.5j, -0.75 + 0.1j], dtype=np.complex64)
    got = jax.vmap(autolax.convert(escape_time))(jnp.asarray(cs))
    assert_close(np.array([escape_time(complex(c)) for c in cs]), got)


def phase_sum(x):
    z = 0.0  # a float carry that becomes complex: promoted like any dtype
    for i in range(3):
        z = z + jnp.exp(1j * x * i)
    return z


def test_float_to_complex_promotion_and_jvp():
    assert_matches(phase_sum, 0.7)
    primal, tangent = jax.jvp(autolax.convert(phase_sum), (0.7,), (1.0,))
    e_primal, e_tangent = jax.jvp(phase_sum, (0.7,), (1.0,))
    assert_close((e_primal, e_tangent), (primal, tangent))
    # hand-computed derivative: sum_i i * 1j * exp(1j * 0.7 * i)
    assert_close(sum(i * 1j * np.exp(1j * 0.7 * i) for i in range(3)), tangent, rtol=1e-5)
    # reverse mode through the complex scan, for a real loss
    grad = jax.grad(lambda x: jnp.abs(autolax.convert(phase_sum)(x)) ** 2)(0.7)
    assert_close(jax.grad(lambda x: jnp.abs(phase_sum(x)) ** 2)(0.7), grad)


# ----------------------------------------------------------------------------- weak types
def decay(x, xs, n):
    for i in range(n):
        x = x * 0.5 + xs[i]
    return x


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32])
def test_a_weakly_typed_argument_carried_keeps_the_unrolled_loops_type(dtype):
    # A Python float argument is weakly typed under jit; carried by a staged loop it takes
    # the type JAX gives the unrolled loop: float16 items make it float16, float32 items a
    # (strong) float32.
    xs = jnp.arange(1, 4, dtype=dtype)
    want = jax.jit(decay, static_argnums=2)(2.0, xs, 3)  # static n: the loop unrolls
    got = autolax.jit(decay, static_argnums=2)(2.0, xs, 3)
    assert primitives(decay, 2.0, xs, 3, static_argnums=2)["scan"] == 1
    assert jax.typeof(got) == jax.typeof(want) and got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32))


def halve(x, n):
    for _ in range(n):
        x = x * 0.5
    return x


def test_a_weakly_typed_argument_stays_weak():
    want = jax.jit(halve, static_argnums=1)(3.0, 4)
    got = autolax.jit(halve, static_argnums=1)(3.0, 4)
    assert jax.typeof(want).weak_type and jax.typeof(got) == jax.typeof(want)
    assert float(got) == halve(3.0, 4)
    # its weak type then promotes as JAX promotes it: with float16, float16
    assert (got + jnp.float16(1)).dtype == jnp.float16
