"""trace_check, TraceReport and strict mode (issue 4)."""

import warnings

import jax
import jax.numpy as jnp
import pytest

import autolax
from autolax.check import count_equations, primitive_counts


def mixed(x, xs, n):
    total = 0.0
    for i in range(n):  # static n: lax.scan
        total = total + x * i
    k = 0
    while total > 1.0 and k < 100:  # traced condition: lax.while_loop
        total = total / 2
        k += 1
    for v in xs:  # array: lax.scan
        total = total + v if v > 0 else total - v  # ternary: lax.cond
    if xs.ndim == 1:  # static: python
        total = -total
    for w in [1.0, 2.0]:  # Python list: static structure
        total = total * w
    return total, k


def test_report_rows_say_what_each_statement_became():
    jitted = autolax.jit(mixed, static_argnums=2)
    report = autolax.trace_check(jitted, 3.0, jnp.array([1.0, -2.0]), 4)
    became = {(r.lineno - mixed.__code__.co_firstlineno, r.kind): r.became for r in report.rows}
    assert became[(2, "for")] == "lax.scan"
    assert became[(5, "while")] == "lax.while_loop"
    assert became[(5, "and")] == "jnp.logical_and"
    assert became[(8, "for")] == "lax.scan"
    assert became[(9, "ternary")] == "lax.cond"
    assert became[(10, "if")] == "python (static)"
    assert became[(12, "for")] == "python (static)"
    for row in report.rows:
        assert row.filename == __file__
        assert row.source  # the statement as written
    staged = [r for r in report.rows if r.became.startswith("lax.") and r.kind in ("for", "while")]
    assert all(r.traces == 1 for r in staged)
    assert report.consistent
    assert report.primitives["scan"] == 2 and report.primitives["while"] == 1 and report.primitives["cond"] == 1
    assert not report.unrolled
    text = str(report)
    assert "lax.while_loop" in text and "no loop was unrolled" in text
    assert report.to_dicts()[0]["location"].startswith(__file__)


def test_report_as_jaxpr_proof_is_independent_of_trip_count():
    jitted = autolax.jit(mixed, static_argnums=2)
    small = autolax.trace_check(jitted, 3.0, jnp.array([1.0, -2.0]), 10)
    large = autolax.trace_check(jitted, 3.0, jnp.array([1.0, -2.0]), 10_000)
    assert small.n_equations == large.n_equations


def by_list_index(x):
    weights = [1.0, 2.0, 3.0]
    for i in range(3):
        x = x * weights[i]
    return x


def test_unstageable_loop_warns_reports_and_errors_in_strict_mode():
    with pytest.warns(autolax.UnrolledLoopWarning) as record:
        assert float(autolax.jit(by_list_index)(2.0)) == 12.0
    message = str(record[0].message)
    assert "test_trace_check.py:" in message
    assert "indexes a Python list with the loop index" in message
    assert record[0].filename == __file__ and record[0].lineno == by_list_index.__code__.co_firstlineno + 2

    with pytest.raises(autolax.UnrolledLoopError) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
            autolax.trace_check(by_list_index, 2.0)
    report = info.value.report
    (row,) = report.unrolled
    assert row.kind == "for" and row.became.startswith("python (unrolled: ")
    assert "indexes a Python list" in row.became

    with pytest.raises(autolax.UnrolledLoopError, match="indexes a Python list with the loop index"):
        autolax.jit(by_list_index, strict=True)(2.0)
    with pytest.raises(autolax.UnrolledLoopError):
        jax.jit(autolax.convert(by_list_index, strict=True))(2.0)


def test_jaxpr_primitives_agree_with_report():
    def f(x):
        while x < 10:
            x = x * 2 if x > 0 else 1.0
        return x

    report = autolax.trace_check(f, 0.5)
    counts = primitive_counts(jax.make_jaxpr(autolax.convert(f))(0.5).jaxpr)
    assert counts["while"] == 1 and counts["cond"] == 1
    assert report.primitives["while"] == counts["while"]


def unrolled_python_loop(x, n):
    for i in range(n):
        x = x + i
    return x


def test_equation_count_counts_nested_jaxprs():
    unrolled = jax.make_jaxpr(unrolled_python_loop, static_argnums=1)(1.0, 50)
    staged = jax.make_jaxpr(autolax.convert(unrolled_python_loop), static_argnums=1)(1.0, 50)
    assert count_equations(unrolled.jaxpr) >= 50
    assert count_equations(staged.jaxpr) < 15


def test_trace_check_does_not_reuse_a_cached_trace():
    jitted = autolax.jit(mixed, static_argnums=2)
    args = (3.0, jnp.array([1.0, -2.0]), 4)
    jitted(*args)
    first = autolax.trace_check(jitted, *args)
    second = autolax.trace_check(jitted, *args)
    assert [r.became for r in first.rows] == [r.became for r in second.rows] and first.rows


def early_return_in_while(x):
    n = 0
    while n < 10:
        if x > 0:
            return x
        n += 1
    return -x


def test_report_counts_only_kept_traces():
    # The while body is traced twice (the return value's type is found in the first round);
    # only the kept round's decisions are reported, so the report matches the jaxpr.
    report = autolax.trace_check(autolax.jit(early_return_in_while), 3.0)
    ifs = [r for r in report.rows if r.kind == "if"]
    assert all(r.times == 1 for r in ifs)
    assert report.consistent
