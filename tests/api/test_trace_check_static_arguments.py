"""``trace_check`` honours ``static_argnames`` / ``static_argnums`` whether the static argument
is passed by position or by keyword (issue 43, item 15).

(Split from tests/test_real_code_round_two.py.)"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import autolax


# ----------------------------------------------------------------------------- item 15
def weighted_sum(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i
    return total


def zeros_of_length(x, n):
    out = jnp.zeros(n)
    for i in range(n):
        out = out.at[i].set(x * i)
    return out


@pytest.mark.parametrize("fn", [weighted_sum, zeros_of_length], ids=lambda f: f.__name__)
@pytest.mark.parametrize("static", [{"static_argnames": "n"}, {"static_argnums": 1}],
                         ids=["static_argnames", "static_argnums"])
@pytest.mark.parametrize("by", ["position", "keyword"])
def test_trace_check_honours_static_arguments_passed_either_way(fn, static, by):
    # 9ef3fc4: trace_check(j, 2.0, 3) of static_argnames="n" traced `n`: a report of a
    # `lax.fori_loop` where the jitted function runs `lax.scan` (weighted_sum), or JAX's
    # error (zeros_of_length: `jnp.zeros` of a traced length).
    jitted = autolax.jit(fn, **static)
    args, kwargs = ((2.0, 3), {}) if by == "position" else ((2.0,), {"n": 3})
    report = autolax.trace_check(jitted, *args, **kwargs)
    assert [row.became for row in report.rows] == ["lax.scan"]
    ran = jitted.trace(*args, **kwargs).jaxpr
    from autolax.check import count_equations, primitive_counts

    assert dict(primitive_counts(report.jaxpr.jaxpr)) == dict(primitive_counts(ran.jaxpr))
    assert report.n_equations == count_equations(ran.jaxpr)
    np.testing.assert_allclose(jitted(*args, **kwargs), fn(2.0, 3))
