"""A loop's exit test that opens its body (a ``sqrt``, a membership test, a helper's call) is
converted as any expression (found by the second real-program corpus, ``tests/corpus2``).

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

from math import sqrt

import jax.numpy as jnp
import pytest

from every_path import EVERY_PATH, check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- corpus2: a loop's exit test
def clipped(v):
    if v > 8.0:
        return 8.0
    return v


def exits_on_a_sqrt(x):
    for i in range(20):
        x = x * 0.5
        if sqrt(x) < 0.1:
            return x, i
    return x, -1


def exits_on_membership(x):
    for i in range(10):
        x = x + 1.0
        if x in [5.0, 6.0]:
            return x
    return -1.0


def exits_on_a_helper(x):
    for i in range(10):
        x = x + 1.0
        if clipped(x) >= 8.0:
            return x
    return -1.0


@pytest.mark.parametrize("fn", [exits_on_a_sqrt, exits_on_membership, exits_on_a_helper])
def test_an_exit_test_opening_a_loop_body_is_converted_as_any_expression(fn, tmp_path, ip):
    # `loop_exits` moves `if c: return` opening a `for` body into the loop's test (an
    # annotation): the calls, `in` and `is` passes did not visit it, so `sqrt(x)` of a traced
    # x, `x in [5.0, 6.0]` and a helper with a traced `if` were left as written (TracedValueError;
    # Kiusalaas' inverse power method in tests/corpus2).
    # (--standalone of this one function has no converter for the helper `clipped` of
    # another file: autolax's TracedValueError, issue 43 item 6)
    _, got = check_every_path(fn, jnp.float32(1.0), tmp_path=tmp_path, ip=ip, refusal=fn is exits_on_a_helper)
    for path in EVERY_PATH:
        assert got[path].error is None or path == "standalone", (path, got[path].error)
