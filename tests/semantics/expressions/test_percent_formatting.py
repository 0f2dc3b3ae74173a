"""``"..." % value`` of a traced value in ``print`` prints Python's text (issue 43, item 10),
on every path -- ``autolax.jit``, ``jax.jit(convert)``, ``convert`` eagerly, the CLI's two
outputs and the ``%%autolax`` magic.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import autolax
from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- item 10: `%` in print
def prints_percent_in_a_loop(x, n):
    for i in range(n):
        t = x * i
        print("%6.3f" % t)
        print("i = %d, t = %.2f" % (i, t))
    return x


def prints_percent_in_a_branch(x):
    if x > 1.0:
        print("big: %s" % x)
    else:
        print("small: %8.4e" % (x,))
    print("%(v).1f done" % {"v": x})
    return x * 2


def prints_percent_that_does_not_fit(x):
    if x > 0:
        print("%d and %d" % (x,))
    return x


@pytest.mark.parametrize("fn, args", [
    (prints_percent_in_a_loop, (jnp.float32(1.5), 3)),
    (prints_percent_in_a_branch, (jnp.float32(1.5),)),
    (prints_percent_in_a_branch, (jnp.float32(0.25),)),
])
def test_print_of_a_percent_formatted_traced_value_prints_python_s_text(fn, args, tmp_path, ip):
    # Before: TracedValueError blaming `float()` (item 10); the f-string form worked.
    expected, got = check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)
    if expected.error is None:
        assert expected.printed.strip() and all(g.printed == expected.printed for g in got.values())


def test_a_percent_template_that_does_not_fit_raises_python_s_type_error(tmp_path, ip):
    # Under plain jax.jit the staged branch that raises is autolax's StagedEffectError (README,
    # "branches that fail while staged"); elsewhere Python's TypeError when the branch is taken.
    _, got = check_every_path(prints_percent_that_does_not_fit, jnp.float32(1.5), tmp_path=tmp_path, ip=ip,
                              refusal=True)
    for path in ("autolax.jit", "convert eagerly", "magic"):
        assert type(got[path].error) is TypeError, path


def test_percent_formatting_is_staged_only_for_print():
    source = autolax.to_source(prints_percent_in_a_loop)
    assert "ops.print(ops.percent('%6.3f', t))" in source
    assert "ops.print(ops.percent('i = %d, t = %.2f', (i, t)))" in source
