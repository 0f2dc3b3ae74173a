"""``int(x)`` and ``float(x)`` of a traced number (``ops.int`` / ``ops.float``): a traced
integer truncated toward zero as Python truncates, and a traced float, where the builtin
would ask JAX for a Python number. Textbook pivoting (``p = int(jnp.argmax(col)) + k``)
needs it. Each program runs through every path and is compared with Python: value,
exception type, printed output."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from every_path import check_every_path, ip  # noqa: F401 - the magic's shell fixture


def pivot_rows(a):
    a = a.copy()
    n = a.shape[0]
    for k in range(n - 1):
        p = int(jnp.argmax(jnp.abs(a[:, k]) * (jnp.arange(n) >= k)))
        if p != k:
            row = a[k].copy()
            a[k] = a[p]
            a[p] = row
    return a


def truncates(x):
    return int(x), int(-x), int(x * 0.0)


def counts_to(x):
    total = 0
    for i in range(int(x)):
        total += i
    return total


def halves(n):
    return float(n) / 2, float(n > 3)


def picks_from_a_list(x):
    table = [10, 20, 30]
    return table[int(x)]


def halving_search(arr, key):
    lo = 0
    hi = len(arr)
    while lo < hi - 1:
        mid = int((lo + hi) / 2)
        if arr[mid] <= key:
            lo = mid
        else:
            hi = mid
    return lo


def in_a_conditional_expression(y):
    return int(y) if y > 0 else -1


def python_numbers(s):
    return int("12") + int("ff", 16) + int(3.9) + float("2.5") + s


def of_nan(x):
    if x > 100.0:
        return 0
    return int(x / x - 1.0 + jnp.nan)


def of_infinity(x):
    if x > 100.0:
        return 0
    return int(x / 0.0)


A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 9.0], [7.0, 8.0, 0.5]], np.float32)


@pytest.mark.parametrize("fn, args", [
    (pivot_rows, (A,)),
    (truncates, (np.float32(2.7),)),
    (truncates, (np.float32(-3.5),)),
    (truncates, (np.int32(7),)),
    (truncates, (np.bool_(True),)),
    (counts_to, (np.float32(4.9),)),
    (halves, (np.int32(7),)),
    (python_numbers, (np.float32(1.0),)),
    (in_a_conditional_expression, (np.float32(1.5),)),
    (in_a_conditional_expression, (np.float32(-1.5),)),
    (halving_search, (np.array([1, 3, 5, 7, 9, 11]), np.int32(7))),
    (halving_search, (np.array([1, 3, 5, 7, 9, 11]), np.int32(0))),
    (of_nan, (np.float32(1.0),)),
    (of_infinity, (np.float32(1.0),)),
])
def test_int_and_float_of_a_traced_number_give_python_s_outcome(fn, args, tmp_path, ip):  # noqa: F811
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)


def test_python_s_errors_for_nan_and_infinity_are_raised_when_the_program_runs():
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        autolax.jit(of_nan)(np.float32(1.0))
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        autolax.jit(of_infinity)(np.float32(1.0))
    assert autolax.jit(of_nan)(np.float32(200.0)) == 0  # the check holds only where Python gets


def test_a_traced_int_where_python_needs_its_value_is_autolax_s_error(tmp_path, ip):  # noqa: F811
    check_every_path(picks_from_a_list, np.float32(1.0), tmp_path=tmp_path, ip=ip, refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"indexes a Python list") as caught:
        autolax.jit(picks_from_a_list)(np.float32(1.0))
    assert "return table[int(x)]" in str(caught.value)


def test_the_pivot_loop_is_staged_and_does_not_grow_with_n():
    sizes = {}
    for n in (4, 8):
        a = np.eye(n, dtype=np.float32)[::-1].copy()
        jaxpr = jax.make_jaxpr(autolax.convert(pivot_rows))(a)
        text = str(jaxpr)
        assert "while" in text or "scan" in text
        sizes[n] = len(jaxpr.jaxpr.eqns)
    assert sizes[4] == sizes[8]


def test_int_is_emitted_as_ops_int_only_for_the_builtin():
    source = autolax.to_source(truncates)
    assert "ops.int(x)" in source and "ops.int(-x)" in source
    def shadows(x):
        int = float  # noqa: A001
        return int(x)
    assert "ops.int" not in autolax.to_source(shadows)


def repeats_a_list(x):
    return [0.0] * int(x)


def looks_up_a_dict(x):
    return {3: 1.0}[int(x)]


@pytest.mark.parametrize("fn, says", [
    (repeats_a_list, "raised `TypeError: unsupported operand type(s) for *: 'list' and 'DynamicJaxprTracer'` with a "
                     "traced value where Python has a number"),
    (looks_up_a_dict, "uses a traced value as a dict key or set item"),
])
def test_python_s_types_given_a_traced_int_are_autolax_s_error(fn, says, tmp_path, ip):  # noqa: F811
    # Python's own TypeError showing a tracer was the program's error on these paths before:
    # now autolax's TracedValueError naming the statement, on every path that traces.
    check_every_path(fn, np.float32(3.0), tmp_path=tmp_path, ip=ip, refusal=True)
    with pytest.raises(autolax.TracedValueError) as caught:
        jax.jit(autolax.convert(fn))(np.float32(3.0))
    assert says in str(caught.value)
    assert f"test_int_float.py:{fn.__code__.co_firstlineno + 1}" in str(caught.value)
