"""``for`` over a tuple of ranges (or of number tuples) with an exit inside a staged loop
(issue 43, item 7): Python's results; a target of ranges the data chose, read after the
loop, is autolax's error.

(Split from tests/test_real_code_round_two.py.)"""

from __future__ import annotations

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths
from every_path import standalone_agrees


# ----------------------------------------------------------------------------- item 7
def cocktail_sort(A):
    # Rosetta Code's cocktail sort (the "shorter" Python version), ported to jnp arrays.
    up = range(len(A) - 1)
    while True:
        for indices in (up, reversed(up)):
            swapped = False
            for i in indices:
                if A[i] > A[i + 1]:
                    A = A.at[i].set(A[i + 1]).at[i + 1].set(A[i])
                    swapped = True
            if not swapped:
                return A


def sweep_reading_the_target_after(A):
    up = range(len(A) - 1)
    for indices in (up, reversed(up)):
        swapped = False
        for i in indices:
            if A[i] > A[i + 1]:
                A = A.at[i].set(A[i + 1]).at[i + 1].set(A[i])
                swapped = True
        if not swapped:
            break
    return A, len(indices)


def first_pass_stopping_at_a_tuple(A):
    for pair in ((0, 1), (1, 2), (0, 2)):
        if A[pair[0]] > A[pair[1]]:
            break
    return pair[0] + pair[1]


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0], [1.0, 2.0, 3.0], [5.0, 4.0, 3.0, 2.0, 1.0], [2.0, 2.0]])
def test_a_for_over_a_tuple_of_ranges_with_an_exit_inside_a_staged_loop(values, tmp_path):
    # 9ef3fc4: JAX's "TypeError: Cannot determine dtype of range(0, 2)" on every jit path.
    A = jnp.array(values, jnp.float32)
    expected = check_all_paths(cocktail_sort, A, tmp_dir=tmp_path)
    np.testing.assert_array_equal(expected.value, sorted(values))
    standalone_agrees(cocktail_sort, A)


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
def test_reading_a_target_of_ranges_the_data_chose_is_autolax_error(values, tmp_path):
    A = jnp.array(values, jnp.float32)
    check_all_paths(sweep_reading_the_target_after, A, tmp_dir=tmp_path, refusal=True)
    standalone_agrees(sweep_reading_the_target_after, A, refusal=True)
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(sweep_reading_the_target_after)(A)
    assert info.value.code == "loop-target-object"
    line = inspect.getsourcelines(sweep_reading_the_target_after)[1] + 2
    assert f"'indices', the target of the `for` loop at {__file__}:{line}, is read after the loop" in str(info.value)
    assert "its items are not arrays or numbers (range(0, 2) (range), then <range_iterator" in str(info.value)
    assert "Fix: read 'indices' inside the loop body only" in str(info.value)


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]])
def test_a_target_of_number_tuples_the_data_chose_is_selected(values, tmp_path):
    check_all_paths(first_pass_stopping_at_a_tuple, jnp.array(values, jnp.float32), tmp_dir=tmp_path)
    standalone_agrees(first_pass_stopping_at_a_tuple, jnp.array(values, jnp.float32))
