"""Ordinary Python idioms from real programs (issue 34, items 4, 5, 7, 8, 10-13).

Each program is run as plain Python and through every path in ``paths.PATHS`` on the same
inputs (``paths.check_all_paths``); refusals and messages are asserted by their text. Each
test failed on 9646ae6 (the failure is quoted in its comment).
"""

import jax
import jax.numpy as jnp
import pytest

import autolax
import paths
from paths import PATHS, check_all_paths, standalone_module


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


# ----------------------------------------------------------------------------- an `if` that raises inside a `try`
def keeps_the_branch_s_assignment_at_a_raise(x):
    y = 0
    try:
        if x > 0:
            y = 1
            raise ValueError
        else:
            y = 2
    except ValueError:
        pass
    return y


def first_assigns_in_the_branches(x):
    try:
        if x > 0:
            y = 1
            raise ValueError
        else:
            y = 2
    except ValueError:
        pass
    return y


def raises_in_a_nested_if(x):
    y = 0
    try:
        if x > 0:
            if x > 1:
                y = 1
                raise ValueError
            else:
                y = 3
        else:
            y = 2
    except ValueError:
        pass
    return y


def raises_in_an_if_in_a_loop(xs):
    y = 0.0
    try:
        for v in xs:
            if v > 1.5:
                y = v
                raise ValueError
            else:
                y = -v
    except ValueError:
        pass
    return y


def raises_in_an_if_in_a_range_loop(n):
    total = 0
    try:
        for k in range(n):
            if k == 2:
                total = total + 100
                last = k
                raise ValueError
            else:
                last = -k
                total = total + 1
    except ValueError:
        pass
    return total, last


def a_handler_reads_what_the_branch_assigned(x):
    y = 0
    try:
        if x > 0:
            y = 1
            raise ValueError
        else:
            y = 2
        y = 5
    except ValueError:
        return y * 10
    return y


def assigns_two_then_raises(x):
    y = 0
    z = 0
    try:
        if x > 0:
            y = 1
            z = 1
            raise ValueError
        else:
            y = 2
    except ValueError:
        pass
    return y, z


def raises_in_an_elif(x):
    y = 0
    try:
        if x > 1:
            y = 1
        elif x > 0:
            y = 5
            raise ValueError
        else:
            y = 2
    except ValueError:
        pass
    return y


def raises_in_an_inner_try_an_outer_one_catches(x):
    y = 0
    try:
        try:
            if x > 0:
                y = 1
                raise ValueError
            y = 2
        except KeyError:
            y = 3
    except ValueError:
        y = y + 10
    return y


def a_function_the_branch_calls_raises(x):
    y = 0

    def fails():
        raise ValueError

    try:
        if x > 0:
            y = 1
            fails()
        else:
            y = 2
    except ValueError:
        pass
    return y


def prints_in_finally(x):
    y = 0
    try:
        if x > 0:
            y = 1
            raise ValueError
        else:
            y = 2
    finally:
        print("y", y, 1j * y)
    return y


@pytest.mark.parametrize("fn, args", [
    (keeps_the_branch_s_assignment_at_a_raise, (jnp.float32(1.0),)),
    (keeps_the_branch_s_assignment_at_a_raise, (jnp.float32(-1.0),)),
    (first_assigns_in_the_branches, (jnp.float32(1.0),)),
    (first_assigns_in_the_branches, (jnp.float32(-1.0),)),
    (raises_in_a_nested_if, (jnp.float32(2.0),)),
    (raises_in_a_nested_if, (jnp.float32(0.5),)),
    (raises_in_an_if_in_a_loop, (jnp.array([1.0, 2.0, 3.0]),)),
    (raises_in_an_if_in_a_loop, (jnp.array([1.0, 0.5]),)),
    (raises_in_an_if_in_a_range_loop, (5,)),
    (raises_in_an_if_in_a_range_loop, (jnp.int32(5),)),
    (raises_in_an_if_in_a_range_loop, (jnp.int32(1),)),
    (a_handler_reads_what_the_branch_assigned, (jnp.float32(1.0),)),
    (assigns_two_then_raises, (jnp.float32(1.0),)),
    (raises_in_an_elif, (jnp.float32(0.5),)),
    (raises_in_an_elif, (jnp.float32(2.0),)),
])
def test_an_if_that_raises_inside_a_try_keeps_what_its_branch_assigned(fn, args, tmp_path):
    # f0dca31: convert eagerly returned 0 for keeps_the_branch_s_assignment_at_a_raise(1.0)
    # (Python: 1), raised UnboundLocalError for first_assigns_in_the_branches(1.0), returned
    # (102, -1) for raises_in_an_if_in_a_range_loop(5) (Python: (102, 2)), 0 for
    # a_handler_reads_what_the_branch_assigned(1.0) (Python: 10) and 0 for
    # raises_in_an_elif(0.5) (Python: 5). A variable the `if` assigns that only its branches
    # set was not given back at the raise.
    check_all_paths(fn, *args, tmp_dir=tmp_path)


@pytest.mark.parametrize("fn", [raises_in_an_inner_try_an_outer_one_catches, a_function_the_branch_calls_raises])
@pytest.mark.parametrize("x", [1.0, -1.0])
def test_an_if_whose_raise_a_try_catches_keeps_its_assignment_when_run_eagerly(fn, x, tmp_path):
    # f0dca31: convert eagerly returned 10 (Python: 11) and 0 (Python: 1) for x = 1.0. Under
    # jit these are refused (`raise` under a traced condition that a `try` catches).
    check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path, paths=("convert eagerly",))
    check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path, refusal=True)


def test_a_constant_from_the_branch_that_does_not_raise_prints_as_python_prints(tmp_path):
    # f0dca31: autolax.jit, jax.jit(convert) and the CLI's output printed
    # "y TypedInt(2, dtype=int32) ..." (JAX's literal): the branch that raises is dropped and the
    # other's value is a constant.
    expected = check_all_paths(prints_in_finally, jnp.float32(-1.0), tmp_dir=tmp_path)
    assert expected.printed == "y 2 2j\n"


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
    # autolax/runtime/ops/lists.py) on autolax.jit, jax.jit(convert) and the CLI's output.
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
    with pytest.raises(TypeError, match="stack requires ndarray or scalar arguments"):  # as Python
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


def counts_then_catches_a_missing_key_of_both_branches(x, d):
    n = 0
    try:
        if x > 0:
            n = 1
            d["b"]["a"] = 1
        else:
            n = 2
            d["b"]["a"] = -1
    except KeyError:
        pass
    return x + n


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
])
@pytest.mark.parametrize("x", [1.0, -1.0])
def test_both_branches_raising_the_same_error_raise_it(fn, args, x, tmp_path):
    # 9646ae6: sets_an_item_of_a_missing_key raised StagedEffectError "both branches of a
    # staged `if` raise" (autolax.jit) and "the `if` branch ... raised KeyError: 'b' while
    # autolax staged it" (jax.jit(convert), the CLI's output), where Python raises KeyError: 'b'.
    check_all_paths(fn, x, *args, tmp_dir=tmp_path)


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_both_branches_raising_an_error_a_try_catches_are_refused(x, tmp_path):
    # The handler sees `n` as the branch Python takes left it, which only the running
    # program knows: autolax's refusal, not the error raised while tracing (which would give 0).
    fn = counts_then_catches_a_missing_key_of_both_branches
    check_all_paths(fn, x, {"a": 1.0}, tmp_dir=tmp_path, refusal=True, paths=PATHS[:2] + PATHS[3:])
    with pytest.raises(autolax.StagedEffectError, match=r"raised KeyError: 'b' while autolax staged it"):
        autolax.jit(fn)(x, {"a": 1.0})


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


# ----------------------------------------------------------------------------- item 10: the real cause first
def appends_then_returns_early(x):
    out = []
    for i in range(4):
        out.append(x * i)
        if x > i:
            return out, i
    return out, 4


def appends_items_then_returns_early(xs):
    out = []
    for x in xs:
        out.append(x)
        if x > 2:
            return jnp.array(out)
    return jnp.array(out)


def appends_then_breaks(x):
    out = []
    for i in range(4):
        out.append(x * i)
        if x > i:
            break
    return out


@pytest.mark.parametrize("fn, arg", [(appends_then_returns_early, 1.5),
                                     (appends_items_then_returns_early, jnp.array([1.0, 2.0, 3.0])),
                                     (appends_then_breaks, 1.5)])
def test_an_append_in_a_loop_with_a_traced_return_says_the_length_depends_on_data(fn, arg):
    # 9646ae6: "'out' is [float32[], float32[]] in the `if` branch and [float32[]] in the `else`
    # branch of the `for` loop ..." (the Python loop's second failure, whose fix the user cannot
    # apply); the real cause was only in a note.
    line = fn.__code__.co_firstlineno + 2
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(fn)(arg)
    message = str(info.value)
    assert message.startswith(
        f"'out' is appended to in the `for` loop at {__file__}:{line}, but the loop can end early (`break` or "
        "`return`), so the length of 'out' would depend on data.")
    assert "keep a buffer and a count in place of the list" in message
    assert any("run as a Python loop instead, it failed too" in note for note in info.value.__notes__)


def returns_early_then_appends(x):
    out = []
    for i in range(4):
        if x > i:
            return out, i
        out.append(x * i)
    return out, 4


def breaks_then_appends(x):
    out = []
    for i in range(4):
        if x > i:
            break
        out.append(x * i)
    return out


def continues_then_appends(x):
    out = []
    for i in range(4):
        if x < i:
            continue
        out.append(x * i)
    return out


def breaks_in_a_nested_if_then_appends(x):
    out = []
    for i in range(4):
        if x > i:
            out = out
            if x > 2 * i:
                break
        out.append(x * i)
    return out


def returns_early_then_appends_outside_a_loop(x):
    out = [x]
    if x > 0:
        return out
    out.append(x)
    return out


@pytest.mark.parametrize("fn, offset, jump", [(returns_early_then_appends, 4, "return out, i"),
                                              (breaks_then_appends, 4, "break"),
                                              (continues_then_appends, 4, "continue"),
                                              (breaks_in_a_nested_if_then_appends, 6, "break"),
                                              (returns_early_then_appends_outside_a_loop, 3, "return out")])
def test_an_append_after_a_traced_exit_names_the_exit(fn, offset, jump, tmp_path):
    # f0dca31: "'out' is [] in the `if` branch and [float32[]] in the `else` branch of the `if`
    # at ... The condition is traced, so appending to a list in one branch only ..." with the fix
    # "append in both branches", where the user's code appends in no branch.
    kind = jump.split()[0]
    for path in ("autolax.jit", "jax.jit(convert)", "cli default"):
        got = paths.run(path, fn, (1.5,), tmp_dir=tmp_path)
        assert isinstance(got.error, autolax.StateMismatchError), (path, got)
        message = str(got.error)
        where, line = __file__, fn.__code__.co_firstlineno + offset
        assert message.startswith(f"'out' is appended to after the `{kind}` at "), message
        assert f":{line}:\n" in message and where in message.splitlines()[0], message
        assert (f"Whether the program takes the `{kind}` depends on a traced value, so the number of items appended "
                "to 'out' would depend on data.") in message
        assert "Fix: keep a buffer and a count in place of the list:" in message
        assert "append in both branches" not in message
    message = str(paths.run("autolax.jit", fn, (1.5,)).error)
    assert f"{__file__}:{fn.__code__.co_firstlineno + offset}:\n    {jump}\n" in message
    check_all_paths(fn, 1.5, tmp_dir=tmp_path, refusal=True)
    check_all_paths(fn, -1.5, tmp_dir=tmp_path, paths=("convert eagerly",))


# ----------------------------------------------------------------------------- f-strings nested in print
def prints_nested_f_strings(x):
    print(f"{f'{x:.1f}'!s}")
    print(f"{f'{x}'}")
    print(f"{f'{x:.1f}'!r} {f'{x:.2f}'!a:>9} <{f'{x:.3f}':^12}>")
    return x


def prints_a_field_in_a_format_spec(x, width):
    align = ">9"
    print(f"{x:>{width}.2f}|{{{x:{width}}}}|{x:>8}|{x!s:>10}")
    print(f"{x:{align!s}}|{x:{f'{align}'}}|{x=:.2f}|{x:{'^'}{width}.{2}f}")
    return x


def prints_nested_f_strings_in_a_loop(xs):
    total = 0.0
    for x in xs:
        total = total + x
        print(f"{f'{total:.1f}':>6}/{f'{x}'!r}")
    return total


@pytest.mark.parametrize("fn, args", [
    (prints_nested_f_strings, (jnp.float32(1.25),)),
    (prints_a_field_in_a_format_spec, (jnp.float32(1.25), 8)),
    (prints_a_field_in_a_format_spec, (jnp.float32(-2.5), jnp.int32(7))),
    (prints_nested_f_strings_in_a_loop, (jnp.array([1.5, 2.25]),)),
])
def test_f_strings_nested_in_print_print_what_python_prints(fn, args, tmp_path):
    # f0dca31: `f"{f'{x:.1f}'!s}"` and `f"{x:>{width}.2f}"` of a traced `x` raised JAX's
    # TypeError "unsupported format string passed to DynamicJaxprTracer.__format__" under
    # autolax.jit, jax.jit(convert) and the CLI's output (the inner f-string, or the field in
    # the spec, was formatted while tracing), and `f"{f'{x}'}"` was refused (`traced-print-text`).
    expected = check_all_paths(fn, *args, tmp_dir=tmp_path)
    assert expected.printed
    for path in PATHS:
        got = paths.run(path, fn, args, tmp_dir=tmp_path)
        assert got.printed == expected.printed, (path, got.printed, expected.printed)


# ----------------------------------------------------------------------------- item 11: Fix lines that apply; CLI lines
_SORTS_IN_A_LOOP = '''import jax.numpy as jnp


def smallest_sum(x, a):
    y = 0.0
    for i in range(3):
        y = y + sorted([x, a])[0]
    return y
'''


def _cli_module(tmp_path, source, name, *args):
    from autolax import cli
    import importlib.util

    src = tmp_path / f"{name}.py"
    src.write_text(source)
    out = tmp_path / "written" / f"{name}_conv.py"
    assert cli.main(["convert", str(src), "--all", "-o", str(out), *args]) == 0
    spec = importlib.util.spec_from_file_location(f"{name}_conv", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return src, out, module


def test_a_python_bool_of_a_traced_value_in_the_user_s_code_names_its_line_and_a_fix_that_applies(tmp_path):
    # 9646ae6: the CLI's output said "but the body uses a traced value as a Python bool" (no
    # line), and both paths gave the fix "decide with `jnp.where(c, a, b)` or `lax.cond` in
    # the function that tests the traced value (autolax does not convert library code ...)",
    # which is about library code.
    src, _, module = _cli_module(tmp_path, _SORTS_IN_A_LOOP, "sorts")
    namespace = {}
    exec(compile(_SORTS_IN_A_LOOP, str(src), "exec"), namespace)  # the decorator's path, same file
    for fn in (jax.jit(module.smallest_sum), autolax.jit(namespace["smallest_sum"])):
        with pytest.raises(autolax.TracedValueError) as info:
            fn(1.0, 2.0)
        message = str(info.value)
        assert f"the `for` loop at {src}:6 is staged" in message
        assert "but line 7 uses a traced value as a Python bool" in message
        assert "Fix: compute the test with jnp (" in message and "`sorted()`" in message
        assert "autolax does not convert library code" not in message


# ----------------------------------------------------------------------------- item 12: max_steps from a module constant
MAX_STEPS = 4096


def doubles_past_a_hundred(x):
    while x < 100.0:
        autolax.loop_options(max_steps=MAX_STEPS)
        x = x * 2.0
    return x


def test_max_steps_may_name_a_module_level_int(tmp_path):
    # 9646ae6: ConversionError "max_steps must be a positive int written in the call ...
    # Fix: write max_steps=4096, a literal number".
    assert "max_steps: 4096" in autolax.to_source(doubles_past_a_hundred)
    # (The CLI's path, which converts this function's source alone, is in the test below.)
    check_all_paths(doubles_past_a_hundred, 1.5, tmp_dir=tmp_path, paths=PATHS[:3])
    assert float(jax.grad(autolax.jit(doubles_past_a_hundred))(1.5)) == float(jax.grad(doubles_past_a_hundred)(1.5))


_MAX_STEPS_SOURCE = '''import autolax

MAX_STEPS = 64
RATE = 0.5
TWICE = 8
TWICE = 16


def bounded(x):
    while x < 100.0:
        autolax.loop_options(max_steps=MAX_STEPS)
        x = x * 2.0
    return x
'''


@pytest.mark.parametrize("name", ["RATE", "TWICE", "UNKNOWN"])
def test_the_cli_reads_max_steps_from_a_module_level_int_literal_only(tmp_path, name):
    from autolax.cli import Options, convert_source

    text = convert_source(_MAX_STEPS_SOURCE, "m.py", Options(all=True)).text
    assert "at='m.py:10; max_steps: 64'" in text
    namespace = {}
    exec(compile(text, str(tmp_path / "m_conv.py"), "exec"), namespace)
    bounded = jax.jit(namespace["bounded"])
    assert float(bounded(1.5)) == 192.0 and float(jax.grad(bounded)(1.5)) == 128.0
    with pytest.raises(autolax.ConversionError, match="m.py:11:40: max_steps must be a positive int written in "
                                                      "the call or bound to a module-level name"):
        convert_source(_MAX_STEPS_SOURCE.replace("=MAX_STEPS", f"={name}"), "m.py", Options(only=("bounded",)))


def test_max_steps_may_not_name_a_local_variable():
    def local_bound(x):
        MAX_STEPS = 8  # noqa: N806
        while x < 100.0:
            autolax.loop_options(max_steps=MAX_STEPS)
            x = x * 2.0
        return x

    with pytest.raises(autolax.ConversionError, match="max_steps=MAX_STEPS with MAX_STEPS = 4096 at module level"):
        autolax.convert(local_bound)


# ----------------------------------------------------------------------------- item 13: the path the CLI writes
_ONE_BRANCH = '''import autolax


@autolax.jit
def f(x):
    if x > 0:
        y = x.reshape(1) * 2
    else:
        y = x.reshape(1, 1)
    return y
'''


def test_the_cli_writes_the_source_path_relative_to_the_written_file(tmp_path, monkeypatch):
    # 9646ae6: `at='/tmp/.../shapes.py:6 -> y'`, the path as given on the command line.
    src, out, module = _cli_module(tmp_path, _ONE_BRANCH, "shapes")
    text = out.read_text()
    assert "at='../shapes.py:6 -> y'" in text and str(tmp_path) not in text
    monkeypatch.chdir(tmp_path / "written")  # messages still find the source, from anywhere
    with pytest.raises(autolax.StateMismatchError) as info:
        module.f(2.0)
    assert f"of the `if` at {src}:6\n    if x > 0:" in str(info.value)


def test_the_cli_on_standard_output_names_the_source_by_its_file_name(tmp_path, capsys):
    from autolax import cli

    src = tmp_path / "shapes.py"
    src.write_text(_ONE_BRANCH)
    assert cli.main(["convert", str(src)]) == 0
    out = capsys.readouterr().out
    assert "at='shapes.py:6 -> y'" in out and str(tmp_path) not in out
