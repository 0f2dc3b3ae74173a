"""Python's errors (``%`` formatting, ``math``) in a staged branch that is never taken are not
raised (issue 43), on every path.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import math

import jax.numpy as jnp

from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


def formats_badly_in_a_branch_not_taken(x):
    if x > 100.0:
        print("%d and %d" % (x,))
        print(math.sqrt(-1.0))
    return x


def test_python_s_errors_of_percent_and_math_in_a_branch_never_taken_are_not_raised(tmp_path, ip):
    # Staged as raising them when taken (under plain jax.jit only in a function that stages
    # another check: elsewhere autolax's StagedEffectError says so, README "branches that fail
    # while staged").
    _, got = check_every_path(formats_badly_in_a_branch_not_taken, jnp.float32(1.0), tmp_path=tmp_path, ip=ip,
                              refusal=True)
    for path in ("autolax.jit", "convert eagerly", "magic"):
        assert got[path].error is None and float(got[path].value) == 1.0, path
