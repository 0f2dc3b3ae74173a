"""A ``return`` whose value raises inside a ``try`` has not returned (issue 43, item 8): the
handler (or ``finally``) runs as in Python, on every path and in ``--standalone`` output.

(Split from tests/test_real_code_round_two.py.)"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from paths import check_all_paths
from every_path import standalone_agrees


# ----------------------------------------------------------------------------- item 8
def raises_value_error(*args):
    raise ValueError("no value")


def return_of_a_raising_helper_caught():
    # TensorFlow AutoGraph's test_raise_during_return_caught.
    try:
        return raises_value_error()
    except ValueError:
        pass
    return 1


def return_of_a_raising_helper_caught_with_a_traced_argument(x):
    try:
        return raises_value_error(x) * 2.0
    except ValueError:
        print("caught")
    if x > 0:
        return x + 1.0
    return x - 1.0


def return_of_a_helper_that_returns(x):
    try:
        return x * 3.0
    except ValueError:
        pass
    return x


def return_of_a_raising_helper_with_finally(x):
    try:
        return raises_value_error(x)
    finally:
        print("finally")


@pytest.mark.parametrize("fn, args", [
    (return_of_a_raising_helper_caught, ()),
    (return_of_a_raising_helper_caught_with_a_traced_argument, (2.0,)),
    (return_of_a_raising_helper_caught_with_a_traced_argument, (-2.0,)),
    (return_of_a_helper_that_returns, (2.0,)),
    (return_of_a_raising_helper_with_finally, (2.0,)),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_return_whose_value_raises_inside_a_try_has_not_returned(fn, args, tmp_path):
    # 9ef3fc4: the `return`'s flag was set before its value was computed, so the function
    # returned autolax's placeholder: JAX's "Triggering __jax_array__() during
    # abstractification" through autolax.jit, `<undefined 'retval'>` called eagerly.
    args = tuple(jnp.float32(a) for a in args)
    expected = check_all_paths(fn, *args, tmp_dir=tmp_path)
    assert not repr(expected.value).startswith("<undefined")
    standalone_agrees(fn, *args)
