"""``math`` functions of a traced number (found refused by the second real-program corpus,
``tests/corpus2``): Python's outcome on every path, or autolax's error naming the call.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import math
from math import ceil, log, sqrt

import jax
import jax.numpy as jnp
import pytest

import autolax
from paths import is_autolax_error
from every_path import check_every_path, ip, outcome  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- math of a traced number
def norm_until_small(r, tol):
    n = 0
    while sqrt(r @ r) > tol:
        r = r * 0.5
        n += 1
    return n, math.sqrt(r @ r)


def halvings_by_log(lo, hi):
    steps = ceil(log(abs(hi - lo) / 1e-6) / log(2.0))
    for i in range(steps):
        lo = 0.5 * (lo + hi)
    return lo, steps


def sqrt_of_a_negative_in_a_branch(x):
    if x < 10.0:
        x = math.sqrt(x - 5.0)
    return x


def log_with_a_base(x, b):
    if x > -5:
        return math.log(x, b)
    return 0.0


def decays_until_small(y, k):
    steps = 0
    while y > 1e-3:
        y = y * math.exp(-k)
        steps += 1
    return y, steps


def exp_of(x):
    if x > 0:
        return math.exp(x)
    return 0.0


@pytest.mark.parametrize("fn, args", [
    (decays_until_small, (jnp.float32(0.5), jnp.float32(0.5))),
    (decays_until_small, (jnp.float32(1.0), jnp.float32(0.01))),
    (exp_of, (jnp.float32(800.0),)),  # Python: OverflowError('math range error')
    (exp_of, (jnp.float32(3.0),)),
    (log_with_a_base, (jnp.float32(8.0), jnp.float32(2.0))),
    (log_with_a_base, (jnp.float32(-1.0), jnp.float32(1.0))),  # Python: ValueError (log(x) first)
    (log_with_a_base, (jnp.float32(2.0), jnp.float32(1.0))),  # Python: ZeroDivisionError
    (log_with_a_base, (jnp.float32(2.0), jnp.float32(-1.0))),  # Python: ValueError
    (norm_until_small, (jnp.array([3.0, 4.0]), 0.1)),
    (halvings_by_log, (jnp.float32(0.0), jnp.float32(2.0))),
    (sqrt_of_a_negative_in_a_branch, (jnp.float32(9.0),)),
    (sqrt_of_a_negative_in_a_branch, (jnp.float32(1.0),)),  # Python: ValueError('math domain error')
])
def test_math_functions_of_a_traced_number_give_python_s_outcome(fn, args, tmp_path, ip):
    # Before: TracedValueError ("float() of a traced value") on every path but eager.
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)


def sqrt_inside_a_try(x):
    for i in range(3):
        try:
            x = math.sqrt(x) + i
        except ValueError:
            x = 0.0
    return x


def test_a_math_domain_error_a_try_would_catch_is_refused_naming_the_call(tmp_path, ip):
    _, got = check_every_path(sqrt_inside_a_try, jnp.float32(4.0), tmp_path=tmp_path, ip=ip, refusal=True)
    err = got["autolax.jit"].error
    assert is_autolax_error(err) and "`math.sqrt(...)`" in str(err) and "inside a `try` that catches it" in str(err)
    assert "x = math.sqrt(x) + i" in str(err)


def test_exp_beyond_float32_where_float64_has_it_is_autolax_s_error():
    # exp(100.0) is 2.7e43 in Python: float32 (x64 off) has no such number.
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(exp_of)(jnp.float32(100.0))
    message = str(info.value)
    assert "`math.exp(...)` at " in message and "gives a number beyond the range of float32" in message
    assert "return math.exp(x)" in message and "jax_enable_x64" in message
    # (through plain jax.jit a run-time check is JAX's JaxRuntimeError holding the error: checks.py)
    with pytest.raises(jax.errors.JaxRuntimeError, match="TracedValueError: `math.exp"):
        jax.jit(autolax.convert(exp_of))(jnp.float32(100.0))
    assert float(jax.jit(autolax.convert(exp_of))(jnp.float32(80.0))) == pytest.approx(math.exp(80.0), rel=1e-5)


def test_math_of_python_numbers_stays_python():
    assert autolax.convert(sqrt_of_a_negative_in_a_branch)(9.0) == 2.0
    with pytest.raises(ValueError, match="math domain error"):
        autolax.convert(sqrt_of_a_negative_in_a_branch)(1.0)
