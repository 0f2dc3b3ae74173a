"""Ordinary Python idioms from real programs (issue 34, items 4, 5, 7, 8, 10-13).

Each program is run as plain Python and through every path in ``paths.PATHS`` on the same
inputs (``paths.check_all_paths``); refusals and messages are asserted by their text. Each
test failed on 9646ae6 (the failure is quoted in its comment).
"""

import jax
import jax.numpy as jnp
import pytest

import autolax
from paths import check_all_paths, standalone_module


# ----------------------------------------------------------------------------- item 4: eager convert, raise in a try
def doubles_then_raises(a, xs):
    s = a
    g = lambda: s  # noqa: E731, F841 - the lambda makes `s` a cell
    try:
        for v in xs:
            s = s + s
            raise ValueError("stop")
    except ValueError:
        pass
    return s


def triples_until_the_second_raise(a, n):
    s = a
    i = 0
    g = lambda: s  # noqa: E731
    try:
        while i < n:
            s = s * 3
            i += 1
            if i == 2:
                raise ValueError("stop")
    except ValueError:
        pass
    return s, i, g()


def counts_until_key_error(a, n):
    s = a
    g = lambda: s  # noqa: E731
    try:
        for i in range(n):
            s = s + 1
            if i == 1:
                raise KeyError("k")
    except KeyError:
        s = s * 10
    return s + g()


def adds_then_raises_in_a_branch(a):
    s = a
    g = lambda: s  # noqa: E731
    try:
        if a > 0:
            s = s + 5
            raise ValueError
    except ValueError:
        pass
    return s, g()


@pytest.mark.parametrize("fn, args", [
    (doubles_then_raises, (1.5, jnp.array([1.0, 2.0]))),
    (triples_until_the_second_raise, (1.5, 4)),
    (counts_until_key_error, (1.0, 4)),
    (adds_then_raises_in_a_branch, (2.0,)),
    (adds_then_raises_in_a_branch, (-2.0,)),
])
def test_a_variable_a_closure_captures_keeps_its_value_at_a_raise_inside_a_try(fn, args, tmp_path):
    # 9646ae6: convert eagerly returned 1.5 for doubles_then_raises (Python: 3.0); (4.5, 2, 4.5)
    # for triples_until_the_second_raise (Python: (13.5, 2, 13.5)); 40.0 for
    # counts_until_key_error (Python: 60.0); (2.0, 2.0) for adds_then_raises_in_a_branch(2.0)
    # (Python: (7.0, 7.0)). The body's parameter stands for the cell, which held the value.
    check_all_paths(fn, *args, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- items 5, 7: rows appended as lists
def stacks_rows(xs):
    rows = []
    a = 0.0
    for x in xs:
        r = x * 2
        a = a + x
        rows.append([x, r, a])
    return jnp.stack(rows)


def stacks_tuple_rows_along_axis_1(xs):
    rows = []
    for x in xs:
        rows.append((x, x))
    return jnp.stack(rows, axis=1)


def vstacks_rows(xs):
    rows = []
    for x in xs:
        rows.append([x, x + 1])
    return jnp.vstack(rows)


def arrays_rows(xs):
    rows = []
    a = 0.0
    for x in xs:
        r = x * 2
        a = a + x
        rows.append([x, r, a])
    return jnp.array(rows)


def asarrays_tuple_rows(xs):
    rows = []
    for x in xs:
        rows.append((x, x + 1))
    return jnp.asarray(rows)


def arrays_nested_rows_after_a_first_row(xs):
    rows = [[[0.0, 1.0], [2.0, 3.0]]]
    for x in xs:
        rows.append([[x, x * 2], [x + 1, 7]])
    return jnp.array(rows)


def arrays_rows_of_vectors(xs):
    rows = []
    for x in xs:
        rows.append((jnp.stack([x, x]), jnp.stack([x + 1, x * 3])))
    return jnp.asarray(rows)


def arrays_rows_of_an_int_and_a_float(xs):
    rows = []
    i = 0
    for x in xs:
        i += 1
        rows.append([i, x])
    return jnp.array(rows)


def arrays_ragged_rows(xs):
    rows = []
    for x in xs:
        rows.append([x, jnp.stack([x, x])])
    return jnp.asarray(rows)


def arrays_dict_rows(xs):
    rows = []
    for x in xs:
        rows.append({"a": x})
    return jnp.array(rows)


@pytest.mark.parametrize("fn", [stacks_rows, stacks_tuple_rows_along_axis_1, vstacks_rows])
def test_stacking_rows_appended_as_lists_raises_what_jax_raises(fn, tmp_path):
    # 9646ae6: autolax.jit and jax.jit(convert) returned the stack of the columns (the
    # transpose of the rows) where Python raises JAX's TypeError "stack requires ndarray or
    # scalar arguments, got <class 'list'>".
    expected = check_all_paths(fn, jnp.array([1.0, 2.0, 3.0]), tmp_dir=tmp_path)
    assert isinstance(expected.error, TypeError)


@pytest.mark.parametrize("fn", [arrays_rows, asarrays_tuple_rows, arrays_nested_rows_after_a_first_row,
                                arrays_rows_of_vectors, arrays_rows_of_an_int_and_a_float])
def test_an_array_of_rows_appended_as_lists_is_python_s(fn, tmp_path):
    # 9646ae6: TypeError "a list of non-array items cannot be converted to an array" (from
    # autolax/ops/lists.py) on autolax.jit, jax.jit(convert) and the CLI's output.
    expected = check_all_paths(fn, jnp.array([1.0, 2.0, 3.0]), tmp_dir=tmp_path)
    assert expected.error is None
    got = autolax.jit(fn)(jnp.array([1.0, 2.0, 3.0]))
    assert got.shape == expected.value.shape and got.dtype == expected.value.dtype


@pytest.mark.parametrize("fn", [arrays_ragged_rows, arrays_dict_rows])
def test_rows_jax_cannot_make_an_array_of_raise_what_jax_raises(fn, tmp_path):
    expected = check_all_paths(fn, jnp.array([1.0, 2.0, 3.0]), tmp_dir=tmp_path)
    assert isinstance(expected.error, TypeError)


def test_an_array_of_rows_costs_no_operation_per_row():
    def equations(n):
        return len(jax.make_jaxpr(autolax.convert(arrays_rows))(jnp.ones(n)).jaxpr.eqns)

    assert equations(3) == equations(50)


_ROWS_SOURCE = '''import jax.numpy as jnp
from jaxtyping import Array, Float


def arrays_rows(xs: Float[Array, "n"]):
    rows = []
    a = 0.0
    for x in xs:
        a = a + x
        rows.append([x, x * 2, a])
    return jnp.array(rows)


def stacks_rows(xs: Float[Array, "n"]):
    rows = []
    for x in xs:
        rows.append([x, x * 2])
    return jnp.stack(rows)
'''


def test_standalone_rows_appended_as_lists():
    namespace = standalone_module(_ROWS_SOURCE, all=True)
    xs = jnp.array([1.0, 2.0, 3.0])
    assert jnp.array_equal(jax.jit(namespace["arrays_rows"])(xs), arrays_rows(xs))
    with pytest.raises(TypeError, match="stack requires ndarray or scalar arguments"):
        jax.jit(namespace["stacks_rows"])(xs)


# ----------------------------------------------------------------------------- item 8: every path raises
def sets_an_item_of_a_missing_key(x, d):
    if x > 0:
        d["b"]["a"] = 1
    else:
        d["b"]["a"] = -1
    return d


def raises_the_same_in_both_branches(x):
    if x > 0:
        raise ValueError("no")
    else:
        raise ValueError("no")


def catches_a_missing_key_of_both_branches(x, d):
    try:
        if x > 0:
            d["b"]["a"] = 1
        else:
            d["b"]["a"] = -1
    except KeyError:
        x = x + 100
    return x


def raises_a_different_error_in_each_branch(x):
    if x > 0:
        raise ValueError("positive")
    else:
        raise KeyError("negative")


def reads_a_different_missing_key_in_each_branch(x, d):
    if x > 0:
        y = d["b"]
    else:
        y = d["c"]
    return y


@pytest.mark.parametrize("fn, args", [
    (sets_an_item_of_a_missing_key, ({"a": 1.0},)),
    (raises_the_same_in_both_branches, ()),
    (catches_a_missing_key_of_both_branches, ({"a": 1.0},)),
])
@pytest.mark.parametrize("x", [1.0, -1.0])
def test_both_branches_raising_the_same_error_raise_it(fn, args, x, tmp_path):
    # 9646ae6: sets_an_item_of_a_missing_key raised StagedEffectError "both branches of a
    # staged `if` raise" (autolax.jit) and "the `if` branch ... raised KeyError: 'b' while
    # autolax staged it" (jax.jit(convert), the CLI's output), where Python raises KeyError: 'b'.
    check_all_paths(fn, x, *args, tmp_dir=tmp_path)


@pytest.mark.parametrize("fn, args, error", [
    (raises_a_different_error_in_each_branch, (), {1.0: ValueError, -1.0: KeyError}),
    (reads_a_different_missing_key_in_each_branch, ({"a": 1.0},), {1.0: KeyError, -1.0: KeyError}),
])
@pytest.mark.parametrize("x", [1.0, -1.0])
def test_branches_raising_different_errors_raise_the_path_s_under_autolax_jit(fn, args, error, x, tmp_path):
    # 9646ae6: autolax.jit raised StagedEffectError "both branches ... raise". Plain jax.jit
    # cannot tell which error Python raises until the program runs: autolax refuses there.
    check_all_paths(fn, x, *args, tmp_dir=tmp_path, refusal=True)
    check_all_paths(fn, x, *args, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    with pytest.raises(error[x], match="positive|negative|'b'|'c'"):
        autolax.jit(fn)(x, *args)
