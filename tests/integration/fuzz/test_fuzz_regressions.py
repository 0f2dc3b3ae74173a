"""Bugs the differential fuzzer (tests/fuzzing) found, each as a short program compared
against plain Python (eagerly and under jax.jit)."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.cli import Options, convert_source
from conftest import assert_close, assert_matches
from paths import agrees, check_all_paths, cli_function, run, standalone_module

XS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)


def rebinds_list_in_loop(xs):
    out = []
    for i in range(3):
        out = []  # a new list each iteration: only the last iteration's item remains
        out.append(xs[i])
    return len(out), jnp.stack(out).sum()


def test_list_rebound_in_loop_is_not_an_append():
    # The loop cannot be staged ('out' changes from [] to [x]); it falls back to Python,
    # which must keep only the last iteration's list (it used to keep all three items).
    with pytest.warns(autolax.UnrolledLoopWarning, match="'out' is \\[\\] before the loop"):
        assert_matches(rebinds_list_in_loop, XS)


def nested_appends(xs):
    out = []
    for i in range(2):
        for x in xs:
            out.append(x * i)
        out.append(xs[i])
    return len(out), jnp.stack(out)


def test_nested_appends_still_stage():
    assert_matches(nested_appends, XS)


def continue_in_inner_loop_else(xs, t):
    total = 0.0
    for i in range(3):
        for x in xs:
            if x > t:
                break
        else:
            total += 1.0
            continue  # continues the outer loop
        total += 10.0
    return total


@pytest.mark.parametrize("t", [2.5, 5.0])
def test_continue_in_inner_loop_else(t):
    # The `continue` was not lowered (it belongs to the outer loop but sits in the inner
    # loop's `else`), so the converted code did not compile.
    assert_matches(continue_in_inner_loop_else, XS, t)


def chain_after_and(x, buf, v):
    total = 0.0
    for i in range(3):
        if x < 0.5 and buf[0] <= buf[i] < v:  # the middle operand is bound to a temporary
            total += buf[i]
    return total


@pytest.mark.parametrize("v", [2.5, 5.0])
def test_chained_comparison_as_later_operand_of_and(v):
    # Flattening the chain into the `and` put its `operand := buf[i]` inside a lambda, so
    # the next comparison read an unbound name (NameError / UndefinedVariableError).
    assert_matches(chain_after_and, 0.0, XS, v)


def test_walrus_of_a_chain_is_not_carried():
    # A `:=` inside a lambda binds in the lambda: the loop must not carry 'operand'.
    assert "operand = ops.undefined" not in autolax.to_source(chain_after_and)


def chain_in_branch_in_python_loop(xs, n):
    total = 0.0
    for w in (1.0, 2.0):  # a Python loop: 'operand' is not a pending loop variable
        if n > 0:
            if 1.0 <= xs[n] < 3.0:  # the middle operand is bound to a temporary
                total += w
    return total


@pytest.mark.parametrize("n", [0, 1, 3])
def test_chained_comparison_temporary_is_never_carried(n):
    # The temporary looked live across the loop's back edge, so the traced `if n > 0`
    # had to return it: "'operand' is assigned only in the `if` branch".
    assert_matches(chain_in_branch_in_python_loop, XS, n)


def reads_list_it_appends_to(xs):
    out = [0.0]
    total = 0.0
    count = 0
    for x in xs:
        total += jnp.stack(out).sum() + out[-1]  # sees every earlier iteration's item
        out.append(x)
        count += len(out)
    return total, count, len(out)


def test_loop_reading_the_list_it_appends_to():
    # A staged loop collects appends as scan outputs, so its body saw only the list as it
    # was before the loop (total 0 instead of 14, count 8 instead of 14). Such a loop
    # now runs as a Python loop, with a warning that says why.
    with pytest.warns(autolax.UnrolledLoopWarning, match="'out' is appended to in the `for` loop .* and also read there"):
        assert_matches(reads_list_it_appends_to, XS)


def defined_after_early_return(a, c):
    if a > 0:
        if c > 0:
            return 1.0  # leaves 'd' unbound, but never reaches the use
        d = 2.0
    else:
        d = 3.0
    return d + a


def defined_after_continue(xs, t):
    total = 0.0
    for x in (xs[0], xs[2], xs[3]):  # a Python loop: 'd' is not a pending loop variable
        if x > 1.5:
            if x > t:
                continue
            d = x
        else:
            d = -x
        total += d
    return total


@pytest.mark.parametrize("a, c", [(1.0, 1.0), (1.0, -1.0), (-1.0, 0.0)])
def test_variable_bound_on_every_path_that_reads_it_after_return(a, c):
    # The jumping path left 'd' unbound, and the staged `if` raised "'d' is assigned only
    # in the `else` branch" although Python never reads it there.
    assert_matches(defined_after_early_return, a, c)


@pytest.mark.parametrize("t", [2.5, 5.0])
def test_variable_bound_on_every_path_that_reads_it_after_continue(t):
    assert_matches(defined_after_continue, XS, t)


def maybe_unbound(a, c):
    if a > 0:
        if c > 0:
            d = 1.0
    else:
        d = 3.0
    return d


@pytest.mark.parametrize("a, c", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)])
def test_a_read_python_may_find_unbound_raises_only_when_it_is(a, c, tmp_path):
    # (1, 1) and (-1, 1) assign 'd'; (1, -1) takes the inner `if`'s missing `else`: Python's
    # UnboundLocalError, found when the program runs.
    check_all_paths(maybe_unbound, a, c, tmp_dir=tmp_path)
    if c < 0:
        with pytest.raises(autolax.UndefinedVariableError, match="cannot access local variable 'd'"):
            autolax.jit(maybe_unbound)(a, c)


def iterates_dict_through_staged_if(a, b, xs):
    # Found by `benchmarks.fuzz --big` (seed 310539, reduced): inside the staged `if`,
    # `box` was rebuilt from its leaves with sorted keys, so `box.values()` gave 'hi' first.
    coef = [a, 0.0]
    box = {"lo": a, "hi": b}
    if xs[1] > 0:
        for h in box.values():
            if xs[0] + h < coef[0]:
                return coef[-1]
            coef = [h, coef[-1] + 1.0]
        box = {"lo": 1.0}
    return b


def test_dict_keeps_insertion_order_through_staged_constructs():
    assert_matches(iterates_dict_through_staged_if, 1.5, -3.0, np.array([0.0, 1.5, 1.0, 4.0], np.float32))


def dict_order_after_loop(x, n):
    d = {"z": x, "a": 2.0 * x, "m": {"y": 3.0 * x, "b": 4.0 * x}}
    for i in range(n):
        d["a"] = d["a"] + i
    rows = []
    for i in range(3):
        rows.append({"q": x + 10 * i, "c": x - 10 * i})
    # Values listed in each dict's iteration order: a sorted dict would list them differently.
    return list(d.values())[:2], list(d["m"].values()), list(rows[1].values())


def test_dict_order_survives_loop_carries_and_appends():
    assert_matches(dict_order_after_loop, 1.0, 4)
    got = autolax.jit(dict_order_after_loop)(1.0, 4)
    assert [float(v) for v in got[0] + got[1] + got[2]] == [1.0, 8.0, 3.0, 4.0, 11.0, -9.0]


def prints_dict(x):
    for i in range(2):
        print({"z": x + i, "a": x})


def test_print_of_a_traced_dict_shows_insertion_order(capfd):
    autolax.jit(prints_dict)(1.0)
    jax.effects_barrier()
    got = capfd.readouterr().out
    prints_dict(jnp.float32(1.0))
    assert got == capfd.readouterr().out
    assert got.splitlines()[0].startswith("{'z'")


def selects_python_numbers(a, n):
    # Found by the fuzzer (seed 400012): a staged `if` whose sides only assign Python
    # numbers became a select of Python ints, which lax.select does not take.
    s = 0
    flag = False
    if abs(a) > 1.0:
        s = 3
        flag = True
    return s + n, flag


@pytest.mark.parametrize("a", [-2.0, 0.5])
def test_select_of_python_numbers(a):
    assert_matches(selects_python_numbers, a, 4)


def first_assigned_in_list_loop_after_return(a, n, xs):
    # Found by the fuzzer (seed 601189, reduced): the traced `return` before the loop makes
    # every iteration of the Python loop over `coef` masked; `w`, first assigned in the
    # loop, is unassigned on the masked side, which only a path that returned takes.
    coef = [0.0, 1.0]
    if a == n / 2:
        return -1.0
    for c in coef:
        w = xs[0] + c
        if w > a:
            return w
    return w * 2.0


@pytest.mark.parametrize("a", [1.0, 2.0, 10.0])
def test_variable_first_assigned_in_masked_python_loop(a):
    assert_matches(first_assigned_in_list_loop_after_return, a, 2, np.array([1.5, 0.0], np.float32))


def rebinds_aliased_list_in_loop(a, n):
    # Found by the fuzzer (seed 363, reduced): `coef` gets a new list each iteration while
    # `view` holds the old one; the staged loop wrote the new items into the old list.
    coef = [a, 0.0]
    view = coef
    for j in range(1, n):
        coef = [coef[0] + 1.0, coef[-1]]
    return sum(view), coef[0]


def rebinds_aliased_list_in_if(a, b):
    coef = [a, 0.0]
    view = coef
    if a > b:
        coef = [b, a]
    return view[0], view[1], coef[0]


def changes_aliased_list_in_place_in_loop(a, n):
    coef = [a, 0.0]
    view = coef
    for j in range(1, n):
        coef[1] = coef[1] + coef[0]
    return view[1], coef[1]


@pytest.mark.parametrize("fn, args", [
    (rebinds_aliased_list_in_loop, (1.0, 3)),
    (rebinds_aliased_list_in_if, (2.0, 1.0)),
    (rebinds_aliased_list_in_if, (1.0, 2.0)),
    (changes_aliased_list_in_place_in_loop, (1.5, 4)),
])
def test_alias_of_a_rebound_list_keeps_the_old_items(fn, args):
    assert_matches(fn, *args)
    assert_close(fn(*args), jax.jit(autolax.convert(fn))(*args))


def removes_last_item_by_value(b, xs):
    # Found by the fuzzer (seed 288, reduced): Python compares stack[-1] with stack[0]
    # first, a traced comparison (JAX's TracerBoolConversionError came out of list.remove).
    stack = [b, xs.min()]
    stack.remove(stack[-1])
    return len(stack)


@pytest.mark.parametrize("fn, line, statement", [
    (removes_last_item_by_value, "stack.remove(stack[-1])", "'stack' is searched for a value"),
])
def test_searching_a_list_of_traced_values_is_refused_clearly(fn, line, statement):
    # `remove`: which item goes would depend on data. (`in`, `count`, `index` are staged:
    # tests/runtime/test_search.py.)
    assert fn(1.5, XS) is not None  # Python, on concrete values
    assert autolax.convert(fn)(1.5, XS) == fn(1.5, XS)  # so does the converted function, eagerly
    for run in (autolax.jit(fn), jax.jit(autolax.convert(fn))):
        with pytest.raises(autolax.TracedComparisonError) as info:
            run(1.5, XS)
        message = str(info.value)
        assert statement in message and "item 0 gives a traced boolean" in message
        lines, first = inspect.getsourcelines(fn)
        lineno = first + next(k for k, text in enumerate(lines) if line in text)
        assert f"test_fuzz_regressions.py:{lineno}" in message
        assert line in message and "Fix: keep positions rather than values" in message
    assert isinstance(info.value, TypeError)


def removes_item_found_by_identity(b, xs):
    stack = [b, xs.min(), b + 1.0]
    stack.remove(stack[0])  # the first item is the value itself: no comparison
    return len(stack), stack[0], 2.0 in (1.0, 2.0)


def test_searching_finds_the_item_itself_without_comparing():
    assert_matches(removes_item_found_by_identity, 1.5, XS)


def pops_past_the_end_in_try(a, xs):
    # Found by the fuzzer (seed 1953, reduced): the second iteration raises IndexError; the
    # handler must see `a` as the first iteration left it (the loop's state was lost).
    stack = [xs[0]]
    try:
        for i in range(len(xs)):
            a += stack.pop()
    except IndexError:
        a = a * 10.0
    return a, len(stack)


def raises_mid_iteration_in_while(a, xs):
    stack = [xs[0], xs[1]]
    count = 0
    try:
        while count < 5:
            count += 1  # done before the raise in the same iteration: Python keeps it
            a = a + stack.pop()
    except IndexError:
        pass
    finally:
        a = a + count
    return a, count


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")  # the list changes length
@pytest.mark.parametrize("fn", [pops_past_the_end_in_try, raises_mid_iteration_in_while])
def test_exception_out_of_a_loop_keeps_the_finished_iterations(fn):
    assert_matches(fn, 0.5, XS)
    assert_close(fn(0.5, XS), jax.jit(autolax.convert(fn))(0.5, XS))


def raises_in_a_branch_in_try(a, xs):
    # seed 1953 itself: the loop sits in an `if` inside the `try`; the branch's values were lost.
    stack = [xs[0]]
    try:
        if xs[1] > 0:
            a = a + 1.0
            for i in range(3):
                a += stack.pop()
    except IndexError:
        pass
    return a


def test_exception_out_of_an_if_keeps_the_branch_values_eagerly():
    assert autolax.convert(raises_in_a_branch_in_try)(0.5, XS) == raises_in_a_branch_in_try(0.5, XS) == 2.5


def last_item_unless_positive(x, items):
    return x if x > 0 else items[-1]


def last_item_in_a_loop(xs, items):
    total = 0.0
    for x in xs:
        total = total + (x if x > 0 else items[-1])
    return total


@pytest.mark.parametrize("fn, args", [
    (last_item_unless_positive, (1.0, [])),  # Python never reads items[-1]: it returns x
    (last_item_unless_positive, (-1.0, [])),  # Python raises IndexError
    (last_item_unless_positive, (-1.0, [2.0])),
    (last_item_in_a_loop, (np.array([1.0, 2.0], np.float32), [])),
    (last_item_in_a_loop, (np.array([1.0, -2.0], np.float32), [])),
])
def test_untaken_side_of_a_conditional_expression_raises_only_when_taken(fn, args, tmp_path):
    # The runtime raised the IndexError of `items[-1]` while it traced the `else` side, also
    # where the program takes the other side (Python returns x).
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_the_side_taken_raises_the_error_python_raises_and_says_where():
    with pytest.raises(IndexError, match="list index out of range") as info:
        autolax.jit(last_item_unless_positive)(-1.0, [])
    lines, first = inspect.getsourcelines(last_item_unless_positive)
    (note,) = info.value.__notes__
    assert "the `else` side of the conditional expression at" in note
    assert f"test_fuzz_regressions.py:{first + 1}," in note


COUNTER = 0.0


def deletes_global_in_untaken_branch(a, ys):
    # Found by the fuzzer (seed 1708, reduced): `del` of a global in a staged branch ran while
    # tracing, bound the global to autolax's placeholder, and JAX failed on it
    # ("Triggering __jax_array__() ...") where Python never takes the branch.
    global COUNTER
    for i, y in enumerate(ys, 1):
        if i >= 1:
            pass
        else:
            del COUNTER
    return COUNTER + a


def test_del_of_a_global_in_a_staged_branch_is_refused_clearly(tmp_path):
    ys = np.array([3, 2, -2], np.int32)
    check_all_paths(deletes_global_in_untaken_branch, 1.0, ys, tmp_dir=tmp_path, refusal=True)
    assert autolax.convert(deletes_global_in_untaken_branch)(1.0, ys) == 1.0  # eagerly, as Python
    with pytest.raises(autolax.StagedEffectError) as info:
        autolax.jit(deletes_global_in_untaken_branch)(1.0, ys)
    lines, first = inspect.getsourcelines(deletes_global_in_untaken_branch)
    lineno = first + next(k for k, text in enumerate(lines) if "if i >= 1" in text)
    message = str(info.value)
    assert "'COUNTER' (declared global or nonlocal) is assigned inside the `if` at" in message
    assert f"test_fuzz_regressions.py:{lineno}," in message and "Fix: keep the values in a local variable" in message
    assert COUNTER == 0.0  # the global is still bound


def stacks_after_a_checked_loop(b, xs, ys):
    # Found by the fuzzer (seed 602, reduced): the staged loop's `assert` is checked when the
    # program runs, but tracing stopped first at `jnp.stack([])` (ValueError while tracing),
    # where Python raises the AssertionError of the first iteration.
    for y in ys:
        assert xs[1]
    else:
        rows = []
        b += jnp.stack(rows).max()
    return b


@pytest.mark.parametrize("xs", [np.array([1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32)])
def test_an_error_while_tracing_after_a_staged_check_is_the_error_python_raises_first(xs, tmp_path):
    # autolax.jit runs the function as Python to find Python's error. Plain jax.jit of
    # autolax.convert and the CLI's output have no call step of autolax's: they raised the
    # ValueError of the trace; now autolax refuses (raises-after-check), naming both lines.
    ys = np.array([1, 2], np.int32)
    check_all_paths(stacks_after_a_checked_loop, 1.0, xs, ys, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    check_all_paths(stacks_after_a_checked_loop, 1.0, xs, ys, tmp_dir=tmp_path, refusal=True)
    _assert_refused_after_check(stacks_after_a_checked_loop, (1.0, xs, ys), tmp_path, "ValueError: Need at least one "
                                "array to stack.", "b += jnp.stack(rows).max()", "for y in ys:")


def ternary_pops(x, n):
    items = [1.0, 2.0]
    y = x if x > 0 else items.pop()
    return y, len(items)


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_a_list_changed_in_a_side_of_a_traced_conditional_expression(x, tmp_path):
    # Both sides are traced whatever the test: the `pop` would run at trace time (Python's
    # len 2 came back as 1). Refused where the test is traced, Python where it is not.
    check_all_paths(ternary_pops, x, 2, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"is changed \(`\.pop`\) inside the conditional expression at "):
        autolax.jit(ternary_pops)(x, 2)
    assert autolax.convert(ternary_pops)(x, 2) == ternary_pops(x, 2)


def first_above(xs, n, level):
    i = -1
    for i in range(n):
        if xs[i] > level:
            break
    return i


def last_item_or_default(xs, level):
    x = 0.5
    for x in xs:
        if x > level:
            break
    return x


@pytest.mark.parametrize("n,level", [(0, 0.0), (3, 0.0), (3, 2.0), (3, 10.0), (1, 0.0)])
def test_a_loop_target_bound_before_a_loop_tested_with_each_item(n, level, tmp_path):
    # The runtime gave back a `MaybeBound` object (the target's value and whether the loop
    # ran) for `i` where the trip count is traced: the old value is now passed (`target=i`).
    xs = jnp.array([1.0, 3.0, 5.0])
    check_all_paths(first_above, xs, n, level, tmp_dir=tmp_path)


@pytest.mark.parametrize("size,level", [(0, 0.0), (3, 2.0), (3, 10.0)])
def test_a_loop_target_bound_before_a_loop_over_an_array(size, level, tmp_path):
    # Over an empty array the target kept autolax's placeholder for "unbound" (JAX failed on
    # it); Python keeps the value it had.
    check_all_paths(last_item_or_default, jnp.arange(1.0, 1.0 + size), level, tmp_dir=tmp_path)


REMOVABLE = 1.0


def deletes_a_global(n):
    global REMOVABLE
    if n > 2:
        del REMOVABLE
    return n


def test_del_of_a_global_in_a_branch_run_as_python_removes_it():
    # The branch's `del` became `REMOVABLE = <undefined placeholder>` (fuzz seed 4449): the
    # global was left holding autolax's placeholder instead of being removed.
    global REMOVABLE
    try:
        assert autolax.convert(deletes_a_global)(1) == 1 and REMOVABLE == 1.0
        assert autolax.convert(deletes_a_global)(3) == 3
        assert "REMOVABLE" not in globals()
        REMOVABLE = 1.0
        with pytest.raises(autolax.StagedEffectError, match="'REMOVABLE'"):
            autolax.jit(deletes_a_global)(3)
        assert REMOVABLE == 1.0
    finally:
        REMOVABLE = 1.0


def deletes_a_nonlocal(n):
    box = 1.0

    def drop():
        nonlocal box
        if n > 2:
            del box
        return n

    drop()
    try:
        return box
    except NameError:
        return -1.0


@pytest.mark.parametrize("n", [1, 3])
def test_del_of_a_nonlocal_in_a_branch_run_as_python(n):
    assert autolax.convert(deletes_a_nonlocal)(n) == deletes_a_nonlocal(n)


def first_above_or_none(xs, n, level):
    i = None
    for i in range(n):
        if xs[i] > level:
            break
    return i


def test_a_loop_target_that_was_none_before_a_traced_loop_is_refused_clearly():
    # With a traced trip count the target is the item or None: no array holds both.
    xs = jnp.array([1.0, 3.0])
    with pytest.raises(autolax.StateMismatchError, match=r"'i' is None before the loop and int32\[\] after one "
                       r"iteration of the `for` loop at .*test_fuzz_regressions\.py:\d+"):
        autolax.jit(first_above_or_none)(xs, 2, 0.0)
    for n in (0, 2):  # eagerly the loop runs in Python: Python's answer
        assert autolax.convert(first_above_or_none)(xs, n, 0.0) == first_above_or_none(xs, n, 0.0)


def first_queued_or_default(a, xs):
    queue = []
    try:
        y = queue[0] if xs[1] > a else a
    except IndexError:
        y = -1.0
    return y


def first_queued_uncaught(a, xs):
    queue = []
    try:
        y = queue[0] if xs[1] > a else a
    except ValueError:
        y = -1.0
    return y


@pytest.mark.parametrize("a", [0.0, 5.0])
def test_a_side_of_a_conditional_expression_that_fails_inside_a_try_that_catches_it(a, tmp_path):
    # Fuzz seed 169: the side's IndexError was staged as raised when the program takes it,
    # so it escaped the `except IndexError` that Python runs. Refused there; a handler that
    # does not catch it leaves the side staged as raising.
    xs = np.array([1.0, 2.0])
    check_all_paths(first_queued_or_default, a, xs, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"the `if` side of the conditional expression at "
                       r".*test_fuzz_regressions\.py:\d+ raised IndexError: list index out of range .* inside a `try` "
                       r"that catches it"):
        autolax.jit(first_queued_or_default)(a, xs)
    check_all_paths(first_queued_uncaught, a, xs, tmp_dir=tmp_path)


def checks_then_reads_past_the_end(a, ys):
    # Fuzz seed 4518 (reduced): the `raise` is checked when the program runs, but tracing
    # stops first at `LOG[1]` (IndexError), where Python raises the ValueError.
    if ys.max() != len(LOG):
        raise ValueError("too large")
    return a <= LOG[1]


LOG = []


@pytest.mark.parametrize("method", ["trace", "lower"])
def test_trace_and_lower_of_autolax_jit_raise_the_error_python_raises_first(method):
    # `autolax.jit(f).trace(...)` / `.lower(...)` went straight to jax.jit's and raised the
    # trace's error; as a call does, they raise Python's error on concrete arguments.
    ys = np.array([4, 5], np.int64)
    with pytest.raises(ValueError, match="too large"):
        checks_then_reads_past_the_end(1.0, ys)
    with pytest.raises(ValueError, match="too large"):
        getattr(autolax.jit(checks_then_reads_past_the_end), method)(1.0, ys)
    with pytest.raises(ValueError, match="too large"):
        autolax.jit(checks_then_reads_past_the_end)(1.0, ys)
    xs = np.array([1.0, 0.0], np.float32)
    with pytest.raises(AssertionError):
        getattr(autolax.jit(stacks_after_a_checked_loop), method)(1.0, xs, np.array([1, 2], np.int32))
    # Only shapes and dtypes: nothing to run as Python. The trace's IndexError is not what
    # Python raises when the check fails: autolax refuses, naming both lines.
    with pytest.raises(autolax.StagedEffectError, match=r"IndexError: list index out of range was raised at .*"
                       r"test_fuzz_regressions\.py:\d+ while jax\.jit traced the function:\n    return a <= LOG\[1\]\n"
                       r"The statement at .*test_fuzz_regressions\.py:\d+ staged a check") as info:
        getattr(autolax.jit(checks_then_reads_past_the_end), method)(1.0, jax.ShapeDtypeStruct((2,), np.int64))
    assert isinstance(info.value.__cause__, IndexError)


LOOP_BODY_FAILS = """
def reads_past_the_end(n, xs):
    total = 0.0
    for i in range(n, 0, 1):
        items = [xs[0]]
        total += items[1]
    return total
"""


@pytest.mark.parametrize("n", [0, -2])
def test_cli_output_loop_whose_body_fails_while_traced_is_refused(n, tmp_path):
    # Fuzz seed 1339 (reduced): the CLI writes the converted file elsewhere than its source,
    # whose name the loop's site holds; the body's IndexError was not recognised as the
    # user's, so it escaped with a note instead of the refusal the other paths give.
    text = convert_source(LOOP_BODY_FAILS, str(tmp_path / "source.py"), Options(all=True)).text
    out = tmp_path / "converted.py"
    out.write_text(text)
    namespace = {}
    exec(compile(text, str(out), "exec"), namespace)  # noqa: S102 - the test's own converted code
    xs = np.array([1.0, 2.0])
    if n == 0:
        assert namespace["reads_past_the_end"](n, xs) == 0.0  # eagerly, as Python
    else:
        with pytest.raises(IndexError):
            namespace["reads_past_the_end"](n, xs)
    with pytest.raises(autolax.StagedEffectError, match=r"the `for` loop at .*source\.py:4 raised IndexError"):
        jax.jit(namespace["reads_past_the_end"])(n, xs)


def changes_a_list_built_in_a_staged_loop(a, b, xs):
    queue = [xs[1]]
    for k in range(4):
        queue.extend([b * k])
    queue.insert(1, a)  # fuzz seed 3180: AttributeError ('StackedList' has no 'insert')
    last = queue.pop()
    queue.pop(0)
    queue[0] = queue[0] + 1.0
    del queue[1]
    queue.reverse()
    queue += [a]
    copied = queue.copy()
    copied.append(b)
    queue.remove(queue[0])  # found by identity: the row read is the list's item itself
    return jnp.stack(queue), last, len(queue), len(copied), queue.index(queue[0])


def clears_a_list_built_in_a_staged_loop(b, xs):
    out = []
    for x in xs:
        out.append(x * b)
    out.remove(out[0])
    first = out.index(out[0])
    last = out.pop()
    out.clear()
    out.append(last)
    return len(out), jnp.stack(out), first


def test_list_methods_on_a_list_a_staged_loop_appended_to(tmp_path):
    # After a staged loop, the list is autolax's StackedList (its items stacked): it had
    # only append / extend, so the other list methods raised AttributeError / TypeError.
    check_all_paths(changes_a_list_built_in_a_staged_loop, 1.5, 3.0, np.array([1.0, 2.0]), tmp_dir=tmp_path)
    check_all_paths(clears_a_list_built_in_a_staged_loop, 2.0, np.array([1.0, 2.0, 3.0]), tmp_dir=tmp_path)


def pops_after_a_check(a, xs):
    # Fuzz seed 3681 (reduced): the loop runs as Python (it changes the list's length); the
    # first iteration's `raise` is checked when the program runs, but tracing reached the
    # third iteration's `pop` of the empty list first.
    stack = [a, a]
    for k in range(len(xs)):
        stack.pop()
        if xs[k] > a:
            raise RuntimeError("negative")
    return a


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")
@pytest.mark.parametrize("xs", [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0]])
def test_an_error_in_a_python_loop_after_an_earlier_iterations_check(xs, tmp_path):
    # Plain jax.jit (of autolax.convert, or CLI output) refuses; autolax.jit runs the
    # function as Python and raises Python's error.
    xs = np.array(xs)
    check_all_paths(pops_after_a_check, 1.0, xs, tmp_dir=tmp_path, refusal=True)
    check_all_paths(pops_after_a_check, 1.0, xs, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    if len(xs) == 3:
        with pytest.raises(autolax.StagedEffectError, match=r"ran as a Python loop .* an iteration raised IndexError: "
                           r"pop from empty list while traced, after a `raise` / `assert` \(of this iteration or an earlier one\)"):
            jax.jit(autolax.convert(pops_after_a_check))(1.0, xs)


def raises_before_a_finally_that_asserts(a, xs):
    # Fuzz seed 3583 (reduced): the `raise` was checked when the program ran, before the
    # `finally`'s assert, whose AssertionError Python raises in its place.
    try:
        if xs.sum() > a:
            raise RuntimeError("bad value")
    except ValueError:
        pass
    finally:
        assert xs[0] > 0, "out of range"
    return a


def asserts_before_a_finally_that_asserts(a, xs):
    y = 0.0
    try:
        assert xs.sum() <= a, "too large"
        y = 10.0
    finally:
        assert y < 5.0, "finally"  # Python's y is still 0.0 when the first assert fails
    return a


def raises_before_a_finally_that_reads_an_unbound_name(a, xs):
    # Fuzz seed 41114 (reduced): Python's UnboundLocalError from the `finally` replaced the
    # RuntimeError, which a staged program checked first.
    try:
        if xs.sum() > a:
            raise RuntimeError("too large")
        r = 1
    finally:
        v = xs[r]
    return v


@pytest.mark.parametrize(
    "fn",
    [
        raises_before_a_finally_that_asserts,
        asserts_before_a_finally_that_asserts,
        raises_before_a_finally_that_reads_an_unbound_name,
    ],
)
@pytest.mark.parametrize("a,xs", [(0.0, [-2.0, 3.0]), (0.0, [2.0, 3.0]), (10.0, [-2.0, 3.0]), (10.0, [2.0, 3.0])])
def test_a_staged_raise_inside_a_try_whose_finally_raises_is_refused(fn, a, xs, tmp_path):
    xs = np.array(xs)
    check_all_paths(fn, a, xs, tmp_dir=tmp_path, refusal=True)
    check_all_paths(fn, a, xs, paths=("convert eagerly",))  # eagerly: Python's answer, not refused
    with pytest.raises(autolax.StagedEffectError, match=r"under a traced condition at .*test_fuzz_regressions\.py:\d+ "
                       r"is inside a `try` whose `finally` block can fail too \(it raises, asserts or reads a "
                       r"variable that may be unbound\)"):
        autolax.jit(fn)(a, xs)


def deletes_in_a_branch_of_a_loop_that_continues(n, x):
    # Fuzz seed 95 (reduced): 'r' is bound before every read (the `continue` made autolax
    # record that), so its `del` in the branch was left a `del` -- in the branch's own
    # function, where it raised UnboundLocalError (eagerly) or was refused (traced).
    total = 0.0
    for k in range(n):
        r = 3
        if k != r:
            total += x
        else:
            del r
        continue
    return total


@pytest.mark.parametrize("n", [2, 5])
def test_del_in_a_branch_of_a_name_bound_before_every_read(n, tmp_path):
    check_all_paths(deletes_in_a_branch_of_a_loop_that_continues, n, 1.5, tmp_dir=tmp_path)


def reads_an_appended_row_in_a_staged_operand_and_after(xs, ys):
    # Fuzz seed 259 (reduced): `out[1]`, a row of the list the staged loop appended to, was
    # read first while the traced `if`'s test (a chained comparison: a staged operand) was
    # traced; the row was kept for identity (`lst.remove(lst[1])`) and read again at the top
    # of the function: a tracer of the operand's trace (UnexpectedTracerError).
    out = []
    for k in range(1, 3):
        out.append(xs[k] * 2.0)
    zs = ys.copy()
    zs[1:] -= 2 if xs.sum() >= xs[1] < out[1] else 1
    return [out[1]], zs


@pytest.mark.parametrize("xs", [[-0.5, 2.0, -1.0, 3.0], [4.0, 1.0, 3.0, 0.5]])
def test_row_of_an_appended_list_read_in_two_traces(xs, tmp_path):
    check_all_paths(reads_an_appended_row_in_a_staged_operand_and_after, np.array(xs), np.array([-3, -2, 2, 1]),
                    tmp_dir=tmp_path)


# ----------------------------------------------------------------------------------------
# An error of the user's code that stops tracing after a check was staged (fuzz seeds 602,
# 4518, 5316, 6560, 6946): Python raises the check's error first whenever it fails, which
# only the running program knows. autolax.jit runs the function as Python on the concrete
# arguments; plain jax.jit (of autolax.convert, or the CLI's output) refuses.
def _assert_refused_after_check(fn, args, tmp_path, error, failing, check):
    """Under plain jax.jit and from the CLI's output, ``fn(*args)`` raises ``raises-after-check``
    naming the ``error`` raised at the ``failing`` source line after the ``check`` line (the
    CLI's output: the lines of the file it wrote, which the traceback shows too)."""
    for path in ("jax.jit(convert)", "cli default"):
        fn_run = autolax.convert(fn) if path == "jax.jit(convert)" else cli_function(fn, tmp_path)
        with pytest.raises(autolax.StagedEffectError) as info:
            jax.jit(fn_run)(*args)
        message = str(info.value)
        file = inspect.unwrap(fn_run).__code__.co_filename  # (under `@ops.function`'s wrapper)
        assert f"{error} was raised at {file}:" in message and " while jax.jit traced the function:\n    " in message
        assert f"The statement at {file}:" in message
        assert "staged a check that the program makes only when it runs" in message
        if path == "jax.jit(convert)":
            assert "traced the function:\n    " + failing in message and "\n    " + check + "\n" in message
        assert "If that check fails, Python raises its error instead" in message
        assert "Fix: make the code after the check safe to run whatever the values" in message
        assert "or call the function through autolax.jit" in message
        assert type(info.value.__cause__).__name__ == error.split(":")[0]


@pytest.mark.parametrize("ys", [np.array([4, 5], np.int64), np.array([0, 0], np.int64)])
def test_a_raise_checked_when_the_program_runs_then_an_error_while_tracing(ys, tmp_path):
    # Seed 4518: the `raise` under the traced condition, then `LOG[1]` of the empty list.
    check_all_paths(checks_then_reads_past_the_end, 1.0, ys, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    check_all_paths(checks_then_reads_past_the_end, 1.0, ys, tmp_dir=tmp_path, refusal=True)
    _assert_refused_after_check(checks_then_reads_past_the_end, (1.0, ys), tmp_path,
                                "IndexError: list index out of range", "return a <= LOG[1]",
                                "if ys.max() != len(LOG):")


def prints_the_loop_variable_then_reads_an_undefined_name(xs, n):
    # Seed 5316 (reduced): `i` is unbound when the loop over the traced range runs no
    # iteration (checked when the program runs); tracing stops first at the NameError.
    for i in range(n):
        xs = xs + i
    print(i)
    return xs, NOT_DEFINED_ANYWHERE  # noqa: F821 - the error under test


@pytest.mark.parametrize("n", [0, 2])
def test_an_unbound_read_checked_when_the_program_runs_then_an_error_while_tracing(n, tmp_path):
    xs = np.array([1.0, 2.0])
    check_all_paths(prints_the_loop_variable_then_reads_an_undefined_name, xs, n, tmp_dir=tmp_path,
                    paths=("autolax.jit", "convert eagerly"))
    check_all_paths(prints_the_loop_variable_then_reads_an_undefined_name, xs, n, tmp_dir=tmp_path, refusal=True)
    _assert_refused_after_check(prints_the_loop_variable_then_reads_an_undefined_name, (xs, n), tmp_path,
                                "NameError: name 'NOT_DEFINED_ANYWHERE' is not defined",
                                "return xs, NOT_DEFINED_ANYWHERE", "print(i)")


def takes_from_the_log_in_a_side_then_raises(a, xs):
    # Seed 6560 (reduced): the conditional expression's side fails while traced (staged as
    # raising when the program takes it); then the `raise` that Python runs only if it does not.
    m = LOG[0] if xs[0] > a else a
    raise ValueError("negative")


@pytest.mark.parametrize("a", [0.0, 5.0])
def test_a_failing_side_of_a_conditional_expression_then_a_raise(a, tmp_path):
    xs = np.array([1.0, 2.0])
    check_all_paths(takes_from_the_log_in_a_side_then_raises, a, xs, tmp_dir=tmp_path,
                    paths=("autolax.jit", "convert eagerly"))
    check_all_paths(takes_from_the_log_in_a_side_then_raises, a, xs, tmp_dir=tmp_path, refusal=True)
    _assert_refused_after_check(takes_from_the_log_in_a_side_then_raises, (a, xs), tmp_path, "ValueError: negative",
                                'raise ValueError("negative")', "m = LOG[0] if xs[0] > a else a")


def raises_then_asserts_in_finally(xs):
    # Seed 6946 (reduced): the `finally`'s assert, checked when the program runs, replaces
    # the IndexError raised while tracing whenever it fails.
    try:
        raise IndexError("bad value")
    finally:
        assert xs[0] > 0


@pytest.mark.parametrize("xs", [np.array([1.0, 2.0]), np.array([-1.0, 2.0])])
def test_an_error_while_tracing_then_a_finally_that_asserts(xs, tmp_path):
    check_all_paths(raises_then_asserts_in_finally, xs, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    check_all_paths(raises_then_asserts_in_finally, xs, tmp_dir=tmp_path, refusal=True)
    _assert_refused_after_check(raises_then_asserts_in_finally, (xs,), tmp_path, "IndexError: bad value",
                                'raise IndexError("bad value")', "assert xs[0] > 0")


def asserts_positive(xs):
    assert xs[0] > 0
    return xs


def calls_a_checker_then_reads_past_the_end(xs):
    xs = asserts_positive(xs)  # the callee's check, made when the program runs
    return xs * LOG[0]


def checks_then_catches_its_own_error(xs):
    assert xs[0] > 0
    try:
        y = LOG[0]
    except IndexError:  # caught inside the trace: Python's answer whatever the check does
        y = 2.0
    return xs * y


@pytest.mark.parametrize("xs", [np.array([1.0, 2.0]), np.array([-1.0, 2.0])])
def test_errors_after_a_check_in_a_callee_and_caught_ones(xs, tmp_path):
    check_all_paths(calls_a_checker_then_reads_past_the_end, xs, tmp_dir=tmp_path,
                    paths=("autolax.jit", "convert eagerly"))
    check_all_paths(calls_a_checker_then_reads_past_the_end, xs, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"IndexError: list index out of range was raised at "
                       r".*test_fuzz_regressions\.py:\d+ while jax\.jit traced the function:\n    return xs \* LOG\[0\]"
                       r"\nThe statement at .*test_fuzz_regressions\.py:\d+ staged a check .*\n    assert xs\[0\] > 0\n"):
        jax.jit(autolax.convert(calls_a_checker_then_reads_past_the_end))(xs)
    # An error the function catches itself changes nothing: every path gives Python's answer.
    check_all_paths(checks_then_catches_its_own_error, xs, tmp_dir=tmp_path)


def test_autolax_jit_inside_a_trace_refuses_an_error_after_a_check():
    # Given tracers (called inside another jax.jit), autolax.jit cannot run the function as
    # Python: it refuses as plain jax.jit does, instead of raising the trace's IndexError.
    ys = np.array([4, 5], np.int64)
    with pytest.raises(autolax.StagedEffectError, match=r"IndexError: list index out of range was raised at "):
        jax.jit(lambda a, ys: autolax.jit(checks_then_reads_past_the_end)(a, ys))(1.0, ys)


def prints_then_raises_in_a_while(a, xs):
    # Fuzz seed 6291 (reduced): a body that always raises is staged as "raises if its first
    # iteration runs"; the body was replayed outside any conditional, so its `print` printed
    # on every call, also when the loop ran no iteration.
    box = {"lo": 2.0, "hi": xs[0]}
    while xs.sum() > box["hi"]:
        print("xs:", xs[0] != box["lo"])
        raise IndexError("too large")
    return a


def prints_then_raises_in_a_range_loop(n, xs):
    for k in range(n):
        print("k:", k, xs[k])
        raise ValueError("stop")
    return xs.sum()


def prints_then_raises_in_a_branch(a, xs):
    if xs.sum() > a:
        print("too large:", xs[0])
        raise ValueError("too large")
    else:
        print("fine:", xs[1])
    return a + 1.0


@pytest.mark.parametrize("xs", [[2.5, -1.5, -2.0, 2.5], [-1.5, -3.5, -2.0, 2.5]])
def test_print_in_a_staged_loop_whose_body_always_raises(xs, tmp_path):
    xs = np.array(xs, np.float32)
    check_all_paths(prints_then_raises_in_a_while, 1.5, xs, tmp_dir=tmp_path)
    check_all_paths(prints_then_raises_in_a_while, 1.5, xs, static_argnums=(0,), tmp_dir=tmp_path)


@pytest.mark.parametrize("n", [0, 2])
def test_print_in_a_loop_with_a_traced_trip_count_whose_body_always_raises(n, tmp_path):
    check_all_paths(prints_then_raises_in_a_range_loop, n, XS, tmp_dir=tmp_path)


@pytest.mark.parametrize("a", [0.0, 20.0])
def test_print_in_a_staged_branch_that_raises(a, tmp_path):
    check_all_paths(prints_then_raises_in_a_branch, a, XS, tmp_dir=tmp_path)


def lambda_reads_a_variable_a_staged_loop_assigns(n, xs):
    # Fuzz seed 6917 (reduced): the conversion wraps the lambda's read of 'q' (maybe unbound
    # after the loop) in `ops.assigned`; called from converted code, the lambda was converted
    # again from its original source, without it, so it read the loop's MaybeBound
    # placeholder (TypeError) -- while the CLI's output, converted from the converted text,
    # worked.
    for k in range(n):
        q = xs[k] * 2.0
    g = lambda v: q / 2 + v
    return g(1.0)


def def_reads_a_variable_a_staged_loop_assigns(n, xs):
    def half():
        return q / 2

    for k in range(n):
        q = xs[k] * 2.0
    return half()


@pytest.mark.parametrize("fn", [lambda_reads_a_variable_a_staged_loop_assigns,
                                def_reads_a_variable_a_staged_loop_assigns])
@pytest.mark.parametrize("n", [0, 2])
def test_a_closure_reads_a_variable_a_staged_loop_may_not_assign(fn, n, tmp_path):
    check_all_paths(fn, n, XS, tmp_dir=tmp_path)
    check_all_paths(fn, n, XS, static_argnums=(0,), tmp_dir=tmp_path)
    if n:  # under vmap, per lane (the fuzzer's vmap path raised the same TypeError)
        got = jax.vmap(autolax.convert(fn), in_axes=(0, None))(jnp.array([n, n]), jnp.asarray(XS))
        assert_close(np.array([fn(n, XS)] * 2), got)


STACKS_AN_EMPTY_LIST = """
import jax.numpy as jnp

LOG = []


def stacks_what_a_loop_over_an_empty_list_appended(a, xs):
    # Fuzz seed 5040 (reduced): Python never takes the branch, whose `jnp.stack` of the
    # empty list fails while autolax stages it. JAX's ValueError escaped the decorator and
    # the CLI's output (a third outcome).
    buf = xs + a
    if sum(LOG) >= buf[2]:
        seen = []
        for h in LOG:
            seen.append(buf * 0.5)
        buf = buf + jnp.stack(seen)[-1]
    return buf


def stacks_an_empty_list(a, xs):
    if xs.sum() > a:
        return jnp.stack([])
    return xs
"""


@pytest.mark.parametrize("name", ["stacks_what_a_loop_over_an_empty_list_appended", "stacks_an_empty_list"])
def test_a_staged_branch_whose_library_call_fails_while_staged_raises_when_taken(name, tmp_path):
    path = tmp_path / "stacks.py"
    path.write_text(STACKS_AN_EMPTY_LIST)
    namespace = {"__name__": "stacks"}
    exec(compile(STACKS_AN_EMPTY_LIST, str(path), "exec"), namespace)  # noqa: S102 - the test's own program
    fn, xs = namespace[name], np.array([1.0, 2.0, 4.0, 1.0], np.float32)
    assert_close(fn(20.0, xs), xs + 20.0 if "loop" in name else xs)  # Python takes the other branch
    # The runtime stages the branch as raising JAX's ValueError when the program takes it
    # (it refused it: branch-fails; plain jax.jit still does, the function staging no other
    # check). --standalone output runs the same runtime: the same outcome as the CLI's.
    check_all_paths(fn, 20.0, xs, tmp_dir=tmp_path, refusal=True)
    check_all_paths(fn, 20.0, xs, paths=("autolax.jit", "convert eagerly"))
    if "loop" not in name:  # Python takes the branch: its ValueError
        check_all_paths(fn, -20.0, xs, paths=("autolax.jit", "convert eagerly"))
        with pytest.raises(ValueError, match="Need at least one array to stack"):
            autolax.jit(fn)(-20.0, xs)
    standalone = standalone_module(STACKS_AN_EMPTY_LIST, str(path), only=(name,))[name]
    got = run("python", lambda: jax.block_until_ready(jax.jit(standalone)(20.0, xs)), ())
    assert agrees(run("python", fn, (20.0, xs)), got, "cli default") is None


def def_adds_to_a_variable_a_staged_loop_assigns(n, xs):
    for k in range(n):
        q = xs[k] * 2.0

    def grow():
        nonlocal q
        q += 1.0
        return q

    return grow()


@pytest.mark.parametrize("n", [0, 2])
def test_a_closure_adds_to_a_variable_a_staged_loop_may_not_assign(n, tmp_path):
    check_all_paths(def_adds_to_a_variable_a_staged_loop_assigns, n, XS, tmp_dir=tmp_path)


def deletes_in_a_try_else(xs):
    s = xs[1]
    try:
        pass
    except IndexError:
        pass
    else:
        del s
    return {"lo": jnp.maximum(s, xs[0])}


def deletes_in_a_try_body(xs):
    s = xs[1]
    try:
        del s
    except IndexError:
        pass
    return jnp.maximum(s, xs[0])


def deletes_in_a_handler(xs, k):
    s = xs[1]
    try:
        [0.0, 1.0, 2.0][k]
    except IndexError:
        del s
    return jnp.maximum(s, xs[0])


def reads_in_else_what_the_try_body_deleted(xs):
    s = xs[1]
    try:
        del s
    except IndexError:
        pass
    else:
        return jnp.maximum(s, xs[0])
    return xs


@pytest.mark.parametrize("fn, args", [
    (deletes_in_a_try_else, ()),
    (deletes_in_a_try_body, ()),
    (deletes_in_a_handler, (7,)),  # the item 7 does not exist: the handler deletes s
    (deletes_in_a_handler, (2,)),
    (reads_in_else_what_the_try_body_deleted, ()),
])
def test_a_variable_a_try_deletes_is_unbound_after_it(fn, args, tmp_path):
    # Fuzz seed 7755: the definedness analysis took a `try` to leave every name bound that
    # was bound before it, so the read after a `del` in its `else` was not checked, and the
    # deleted variable's placeholder reached jnp.maximum (JAX's "Triggering __jax_array__()
    # during abstractification" ValueError) instead of Python's UnboundLocalError.
    static = tuple(range(1, 1 + len(args)))
    expected = check_all_paths(fn, XS, *args, static_argnums=static, tmp_dir=tmp_path)
    check_all_paths(fn, jnp.asarray(XS), *args, paths=("convert eagerly",), tmp_dir=tmp_path)
    if fn is not deletes_in_a_handler or args == (7,):
        assert expected.kind == "UnboundLocalError"
        with pytest.raises(UnboundLocalError, match=r"cannot access local variable 's' where it is not associated "
                           r"with a value at .*test_fuzz_regressions\.py:\d+\n    return"):
            autolax.convert(fn)(XS, *args)


def deletes_in_a_try_else_under_a_traced_if(a, xs):
    s = xs[1]
    if a <= xs[2]:
        try:
            s *= 1.5
        except IndexError:
            pass
        else:
            del s
        return jnp.maximum(s, xs[0])
    return xs + 1.0


@pytest.mark.parametrize("a", [1.0, 5.0])
def test_a_variable_a_try_deletes_in_a_traced_branch(a, tmp_path):
    # Eagerly the `if` runs in Python: Python's answer (the value, or UnboundLocalError).
    # Staged, both branches are traced and the branch reads the deleted variable (outside
    # the `try`): the branch is staged as raising Python's UnboundLocalError when the
    # program takes it, as for a `del` directly in the branch (it was refused:
    # branch-fails) -- not the words of a read that no statement gave a value, which Python
    # does not make where the branch is not taken.
    expected = check_all_paths(deletes_in_a_try_else_under_a_traced_if, a, XS, paths=("convert eagerly",))
    assert expected.kind == ("UnboundLocalError" if a < 3.0 else "value")
    check_all_paths(deletes_in_a_try_else_under_a_traced_if, jnp.asarray(a), jnp.asarray(XS), paths=("convert eagerly",))
    check_all_paths(deletes_in_a_try_else_under_a_traced_if, a, XS, tmp_dir=tmp_path)
    if a < 3.0:
        with pytest.raises(UnboundLocalError, match=r"cannot access local variable 's' where it is not associated") as info:
            autolax.jit(deletes_in_a_try_else_under_a_traced_if)(a, XS)
        assert not isinstance(info.value, autolax.AutolaxError)


# A `return` / `break` in a `finally` discards the exception in flight (fuzzer --focus globals,
# seed 7010: `LOG.pop()` of an empty list in the `try`, and the `finally` returned; every path
# raised the IndexError). `passes.finally_jumps` has the `try` catch it first, and the `finally`
# re-raise it unless it jumps.
FINALLY_LOG = []


def finally_returns_over_error(x, k):
    s = 0.0
    try:
        s = s + x
        s = s + FINALLY_LOG[k]
    finally:
        if x > 0:  # traced: the IndexError is raised when the program runs and does not return
            return s
        s = s * 2
    return s


def finally_breaks_over_error(x, n, key):
    total = x
    for i in range(n):
        try:
            total = total + 1.0
            total = total + {"a": 0.5}[key]  # key "b": a KeyError in every iteration
        finally:
            if total > 2.5:
                break
    return total


def finally_returns_always(a, xs):
    stack = []
    try:
        b = xs[0] + stack.pop()
    finally:
        return a, xs[-1]


def finally_returns_over_global_change(a):
    try:
        FINALLY_LOG.append(a)
    finally:
        return a


@pytest.mark.parametrize("x, k", [(1.0, 0), (-1.0, 0), (1.0, -1)])
def test_return_in_finally_discards_the_exception_only_when_it_returns(x, k, tmp_path):
    check_all_paths(finally_returns_over_error, x, k, static_argnums=(1,), tmp_dir=tmp_path)


@pytest.mark.parametrize("x, n, key", [(1.0, 3, "a"), (-5.0, 3, "a"), (2.0, 3, "b"), (1.0, 3, "b"), (1.0, 0, "b")])
def test_break_in_finally_discards_the_exception(x, n, key, tmp_path):
    check_all_paths(finally_breaks_over_error, x, n, key, static_argnums=(1, 2), tmp_dir=tmp_path)


def test_return_in_finally_after_a_failing_call(tmp_path):
    check_all_paths(finally_returns_always, 1.5, np.array([1.0, 2.0], np.float32), tmp_dir=tmp_path)
    # An autolax refusal in the `try` is no exception of the program: not discarded.
    with pytest.raises(autolax.StagedEffectError, match="is changed"):
        autolax.jit(finally_returns_over_global_change)(1.0)
    # The `try` catches the error first and keeps it; the `finally` discards it by returning.
    text = convert_source(inspect.getsource(finally_returns_always), "f.py", Options(only=("finally_returns_always",))).text
    assert "            except BaseException:\n                in_flight = ops.in_flight()\n    finally:\n" in text


# After `for i in range(2)` staged (it carries a traced `s`), `i` was the loop's traced
# index, and `coef[i]` a JAX TracerIntegerConversionError; Python has the int 1 there (found
# while reviewing --standalone's last values). The `index: i` fact gives back the last item.
def indexes_with_the_loop_variable_after_the_loop(s, coef):
    for i in range(2):
        s = s * 2
    return coef[i] * s, i


def loop_variable_reassigned_in_the_body(s):
    for i in range(3):
        s = s + i
        i = s  # the body assigns it: the last iteration's value, traced
    return i


def test_loop_variable_after_a_staged_range_loop_is_its_last_item(tmp_path):
    check_all_paths(indexes_with_the_loop_variable_after_the_loop, 1.5, [1.0, 2.0, 3.0], tmp_dir=tmp_path)
    check_all_paths(loop_variable_reassigned_in_the_body, 1.5, tmp_dir=tmp_path)
    jaxpr = str(jax.make_jaxpr(autolax.convert(indexes_with_the_loop_variable_after_the_loop))(1.5, [1.0, 2.0, 3.0]))
    assert "scan[" in jaxpr or "while[" in jaxpr  # still staged


# Fuzzer seeds 804, 955 and 1042 (seeds 1-2,000 after the stop's changes), reduced.
def deletes_in_a_staged_while(u, n, xs):
    k = 0
    while k < n and xs.max() >= u:
        k += 1
        if u:  # traced: one branch deletes u, so the next test's read may find it unbound
            del u
    return k


@pytest.mark.parametrize("u, n", [(0.0, 3), (1.0, 3), (-1.0, 1)])
def test_a_while_test_reading_a_name_the_body_may_delete(u, n, tmp_path):
    # The test's read went unchecked: a MaybeBound reached `>=` (TypeError inside autolax).
    check_all_paths(deletes_in_a_staged_while, u, n, np.array([2.0, -1.0], np.float32), tmp_dir=tmp_path, refusal=True)


def returns_from_a_loop_under_a_static_test(a, b, n, xs, ys):
    for i in range(3, 0, -2):
        pass
    k = 0
    while k < n:
        k += 1
        if i >= 3:  # i == 1: Python-decided, the loop never returns
            return k
        m = len(xs)
    return name_defined_nowhere  # noqa: F821 - Python's NameError


def test_a_failing_return_whose_other_path_returns_nothing(tmp_path):
    # The `return` path fails (NameError) and the other path has no return value: the
    # function gave JAX a placeholder ("Triggering __jax_array__"); now autolax refuses.
    args = (3.0, -4.0, 4, np.array([2.5, -2.5, -3.0, -4.0]), np.array([1, 0, 3, 4]))
    check_all_paths(returns_from_a_loop_under_a_static_test, *args, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError) as info:
        jax.jit(autolax.convert(returns_from_a_loop_under_a_static_test))(*args)
    line = returns_from_a_loop_under_a_static_test.__code__.co_firstlineno + 9
    assert (f"NameError: name 'name_defined_nowhere' is not defined is raised at {__file__}:{line} when the "
            "program reaches it, and on the other path there no statement has given the function's return value"
            in str(info.value))
    assert "Fix: make the condition a Python value (a static argument)" in str(info.value)


FIRST_CHECK_LOG = []


def two_checks_fail(a, n, xs):
    hist = []
    for j in range(3, -1, -1):
        for i in range(1, n):
            s = xs.min()
        hist.append(xs - s)  # n <= 1: unbound, Python's UnboundLocalError comes first
    return len(hist) <= -n or FIRST_CHECK_LOG.pop() > 0


def test_the_first_failing_check_is_the_error_raised(tmp_path):
    # Two checks fail when the program runs; their host callbacks may run in any order, and
    # autolax.jit raised the later one (IndexError of the `pop`).
    xs = np.array([1.0, 2.0], np.float32)
    check_all_paths(two_checks_fail, 0.0, 0, xs, static_argnums=(0,), tmp_dir=tmp_path, refusal=True)
    for _ in range(5):
        with pytest.raises(UnboundLocalError):
            autolax.jit(two_checks_fail, static_argnums=(0,))(0.0, 0, xs)


def handler_loops_then_returns(x):
    # Fuzzer seed 7373 (reduced): the handler's staged loop binds `k`; the handler's copy
    # after the `try` (`passes.caught_raises`) passed `k` to its `cond` unbound, because the
    # conversion took `k` as bound for every statement after the handler.
    try:
        if x > 1.0:
            raise ValueError("big")
    except ValueError:
        k = 0.0
        while k < x:
            k += 1.0
    return k


@pytest.mark.parametrize("x", [2.5, 0.5])
def test_a_name_a_handler_binds_is_maybe_bound_after_the_try(x, tmp_path):
    check_all_paths(handler_loops_then_returns, x, tmp_dir=tmp_path)


def breaks_in_finally(n):
    # Not convertible (`break` in `finally`): runs as written when called from converted code.
    k = 0
    while True:
        if k > n:  # n traced: JAX's TracerBoolConversionError
            pass
        try:
            pass
        except ValueError:
            return n
        finally:
            break


def calls_an_unconvertible_helper(n, xs, ys):
    # Fuzzer seed 7222 (reduced).
    return (1 if breaks_in_finally(n) == xs[ys[3]] else ys[1]) == n


def test_an_unconvertible_callee_that_needs_a_concrete_value_is_refused(tmp_path):
    # autolax.jit and jax.jit(convert) raised JAX's TracerBoolConversionError from the helper,
    # which runs as written; now autolax's TracedValueError names it and why it runs so.
    args = (np.int32(2), np.array([0.0, -2.0, -0.5, -1.5], np.float32), np.array([0, -3, 4, 3], np.int32))
    with pytest.warns(autolax.CallConversionWarning, match="could not convert 'breaks_in_finally'"):
        check_all_paths(calls_an_unconvertible_helper, *args, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(calls_an_unconvertible_helper)(*args)
    line = breaks_in_finally.__code__.co_firstlineno + 4
    assert ("'breaks_in_finally' is called from converted code with traced values, but autolax could not "
            f"convert it, so it runs as written, and line {line} uses a traced value as a Python bool" in str(info.value))
    assert "a `break` in a `finally` block discards the exception" in str(info.value)
    assert "Fix: rewrite 'breaks_in_finally' as the reason above says" in str(info.value)


def asserts_then_pops(a, xs, ys):
    # Fuzzer seed 8911 (reduced): the inner loop's `else` asserts (a check when the program
    # runs), then the outer body pops from an empty list while staged.
    queue = []
    if xs.sum() > 1.5:
        for h4 in ys:
            for h3 in ys:
                pass
            else:
                assert a < a
            queue.pop(0)
    return a


def test_an_error_staging_a_loop_body_after_its_check_runs_the_loop_in_python(tmp_path):
    # The outer loop's staged body raised IndexError (the pop) after staging the assert; the
    # error went on, and the branch was staged as raising IndexError when taken, so autolax.jit
    # raised it where Python fails the assert first. Now the loop runs in Python: autolax.jit
    # raises AssertionError, plain jax.jit refuses (`fails-after-check`).
    args = (np.float32(2.5), np.array([-4.0, 2.0, 3.5, 2.0], np.float32), np.array([0, 0, 5, 3], np.int32))
    check_all_paths(asserts_then_pops, *args, tmp_dir=tmp_path, refusal=True)
    check_all_paths(asserts_then_pops, *args, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))
    with pytest.raises(autolax.StagedEffectError, match=r"ran as a Python loop \(`IndexError: pop from empty list` "
                       r"was raised while staging its body, after a check\), and an iteration raised IndexError"):
        jax.jit(autolax.convert(asserts_then_pops))(*args)


def stacks_rows(xs):
    # Fuzzer seed 1142 (reduced): rows appended as Python lists, then `jnp.stack`.
    rows = []
    for i in range(len(xs)):
        rows.append([xs[i], xs[2]])
    return jnp.stack(rows).sum()


def stacks_rows_after_an_early_return(xs):
    # Fuzzer seed 1194 (reduced): the same after a traced early `return`, so that it is
    # staged in the branch where the function goes on.
    if xs[1] < 0.0:
        return xs[0]
    rows = []
    for i in range(2):
        rows.append([xs[i]])
    return jnp.stack(rows).sum()


@pytest.mark.parametrize("fn, xs", [
    (stacks_rows, XS),
    (stacks_rows_after_an_early_return, XS),
    (stacks_rows_after_an_early_return, np.array([1.0, -2.0, 3.0, 4.0], np.float32)),
])
def test_stack_of_rows_appended_as_lists_raises_as_jax_does(tmp_path, fn, xs):
    # Run as written, jax.numpy.stack refuses a list of lists (TypeError: its items must be
    # arrays or scalars) where NumPy stacks them; the fuzzer's oracle ran the programs with
    # NumPy and took JAX's TypeError on every path for a bug. (Under plain jax.jit a branch
    # that fails while staged may be refused: `branch-fails`.)
    check_all_paths(fn, xs, tmp_dir=tmp_path, refusal=True)
    check_all_paths(fn, xs, tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))


def test_the_fuzzers_numpy_refuses_a_stack_of_lists_as_jax_does():
    from fuzzing.paths import NUMPY_AS_JNP

    rows = [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError) as jax_says:
        jnp.stack(rows)
    with pytest.raises(TypeError) as oracle_says:
        NUMPY_AS_JNP.stack(rows)
    assert str(oracle_says.value) == str(jax_says.value)
    assert NUMPY_AS_JNP.stack([np.float32(1.0), 2.0, np.ones(())]).tolist() == jnp.stack(
        [np.float32(1.0), 2.0, np.ones(())]).tolist()
    assert NUMPY_AS_JNP.stack(np.ones((2, 3))).shape == jnp.stack(np.ones((2, 3))).shape == (2, 3)


def zero_step_in_an_untaken_branch(xs, n):
    # Fuzzer seed 1151 (reduced): with n static, `range(n, 0, 0)` fails while the `else`
    # branch is staged, which Python takes only when xs sums to 0 or less.
    total = 0.0
    if xs.sum() > 0.0:
        total = xs[0]
    else:
        for i in range(n, 0, 1 - n % 2):
            total += xs[i % 4]
    return total


@pytest.mark.parametrize("xs", [XS, -XS])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("static_argnums", [(1,), ()])
def test_range_step_zero_in_a_staged_branch_raises_when_taken(tmp_path, xs, n, static_argnums):
    # Python's ValueError came out of autolax's own frame while the branch was staged, and
    # escaped whether or not the program takes the branch; now it is raised when taken, as
    # any error of the user's code in a staged branch.
    check_all_paths(zero_step_in_an_untaken_branch, xs, n, static_argnums=static_argnums, tmp_dir=tmp_path)


def test_range_step_zero_raised_by_a_staged_branch_says_which():
    with pytest.raises(ValueError, match=r"^range\(\) arg 3 must not be zero") as info:
        autolax.jit(zero_step_in_an_untaken_branch, static_argnums=(1,))(-XS, 1)
    assert str(info.value) == "range() arg 3 must not be zero"
    line = zero_step_in_an_untaken_branch.__code__.co_firstlineno + 4
    assert (f"(raised by the `else` branch of the `if` at {__file__}:{line}, which the program took)"
            in info.value.__notes__)


def range_errors_in_an_untaken_branch(xs, n):
    # Python's other errors of `range(...)` come out of the runtime too: a range bound to a
    # name (a step of 0), a float step (TypeError).
    total = 0.0
    if xs.sum() > 0.0:
        total = xs[0]
    elif xs[0] < -1.5:
        r = range(n, 0, n - n)
        for i in r:
            total += xs[i]
    else:
        for i in range(n, 0, 0.5):
            total += xs[i]
    return total


@pytest.mark.parametrize("xs", [XS, -XS, -XS[::-1]])
@pytest.mark.parametrize("static_argnums", [(1,), ()])
def test_range_errors_in_a_staged_branch_are_raised_when_taken(tmp_path, xs, static_argnums):
    check_all_paths(range_errors_in_an_untaken_branch, xs, 1, static_argnums=static_argnums, tmp_dir=tmp_path)


def zero_step_in_a_try(xs, n):
    try:
        if xs.sum() > 0.0:
            total = xs[0]
        else:
            total = 0.0
            for i in range(n, 0, 1 - n % 2):
                total += xs[i % 4]
    except ValueError:
        total = -1.0
    return total


@pytest.mark.parametrize("xs", [XS, -XS])
def test_range_step_zero_in_a_staged_branch_inside_a_try_is_refused(tmp_path, xs):
    # Whether the handler runs would depend on data: autolax's own error, naming the line.
    check_all_paths(zero_step_in_a_try, xs, 1, static_argnums=(1,), tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError) as info:
        autolax.jit(zero_step_in_a_try, static_argnums=(1,))(xs, 1)
    line = zero_step_in_a_try.__code__.co_firstlineno + 2
    assert (f"the `else` branch of the `if` at {__file__}:{line} raised ValueError: range() arg 3 must not be "
            "zero while autolax staged it, inside a `try` that catches it") in str(info.value)


def reads_a_handlers_name_after_an_early_return(a, xs):
    # Fuzz seed 70176 (reduced): `s` is bound only by the handler; the code after the
    # early return became a branch function reading `s` from the enclosing function, where
    # it was a free variable: NameError, where Python raises UnboundLocalError.
    z = a
    try:
        w = xs[1]
    except IndexError:
        s = None
    if xs.sum() > 0.5:
        return xs[3]
    q = xs[0] if z > s else a
    return q


@pytest.mark.parametrize("xs", [[2.0, -2.0, -3.5, 2.5], [2.0, 2.0, 2.0, 2.0]])
def test_a_branch_function_reading_an_unbound_name_raises_pythons_error(xs, tmp_path):
    check_all_paths(reads_a_handlers_name_after_an_early_return, 2.0, np.array(xs), tmp_dir=tmp_path)


def calls_a_closure_after_deleting_what_it_reads(a, xs):
    # Fuzz seed 70085 (reduced): the lambda reads `g2` when it is called, after a `del` under
    # a traced condition left a MaybeBound in the cell; the lambda computed with it (TypeError
    # from inside autolax) where Python raises NameError.
    g2 = a
    g = lambda val: g2 * val  # noqa: E731
    if xs[0] >= a:
        del g2
    total = 0.0
    for y in xs:
        total = total + g(y)
    return total


@pytest.mark.parametrize("a", [0.5, 5.0])
def test_a_closure_reading_a_deleted_name_raises_pythons_error(a, tmp_path):
    check_all_paths(calls_a_closure_after_deleting_what_it_reads, a, np.array([2.5, 0.5, 2.0]), tmp_dir=tmp_path)


def refused_in_a_try_whose_finally_reads_what_the_try_left(xs, n):
    # Fuzz seed 70135 (reduced): the staged `if` was refused (a number on one side, None on
    # the other); its refusal left through the `finally`, which ran while tracing with `g2`
    # still None and raised TypeError in its place, where Python returns.
    g2 = None
    try:
        for h in [0.0]:
            if xs[1] <= 0.0:
                g2 = h
    finally:
        if xs.sum() > g2 + n:
            n = 0
    return g2


@pytest.mark.parametrize("xs", [[4.0, -2.5, 3.5], [4.0, 2.5, 3.5]])
def test_a_finally_does_not_replace_a_refusal_leaving_through_it(xs, tmp_path):
    check_all_paths(refused_in_a_try_whose_finally_reads_what_the_try_left, np.array(xs), 5, tmp_dir=tmp_path,
                    refusal=True)
    with pytest.raises(autolax.StateMismatchError):
        jax.jit(autolax.convert(refused_in_a_try_whose_finally_reads_what_the_try_left))(np.array(xs), 5)


def reads_in_a_branch_of_a_loop_what_a_try_bound(a, n, ys):
    # Fuzz seed 80015 (reduced): `r` may be unbound after the `try` (the handler binds
    # nothing); its stand-in was bound at the top of the loop body's function, where it hid
    # the value the `try` gave it: UnboundLocalError where Python returns.
    ys = ys.copy()
    try:
        r = n
    except IndexError:
        pass
    for j in range(2):
        if a:
            ys[r] -= n
    return ys


@pytest.mark.parametrize("a", [-4.0, 0.0])
def test_a_branch_inside_a_loop_reads_what_a_try_bound(a, tmp_path):
    check_all_paths(reads_in_a_branch_of_a_loop_what_a_try_bound, a, 1, np.array([-1.0, 3.0, 4.0]),
                    tmp_dir=tmp_path)


def pops_until_a_traced_return(a, xs, ys):
    # Fuzz seed 80060 (reduced): the loop runs as Python (the list changes length), each
    # iteration after the first under the traced "not returned yet"; the second iteration's
    # `pop()` of the emptied list raised while traced, where Python returned in the first.
    # It is now raised when the program gets to that iteration.
    queue = [0.5]
    m = ys[0]
    for y in ys:
        queue.pop()
        lims = {"lo": xs[len(xs) % 4], "hi": xs.max()}
        if lims["lo"] < a:
            return m


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")
@pytest.mark.parametrize("a", [-1.5, -5.0])
def test_an_iteration_after_a_traced_return_fails_only_when_the_program_gets_there(a, tmp_path):
    # Under plain jax.jit (of convert, or the CLI's output) a function that stages no other
    # check (`@ops.function` without checks=True) raises the error with autolax's note, as
    # before: its traced staged raise would have no runtime_checks to refuse what follows.
    check_all_paths(pops_until_a_traced_return, a, np.array([-3.5, -2.5, -2.0, -3.0]), np.array([1, 1, 3, -1]),
                    tmp_dir=tmp_path, paths=("autolax.jit", "convert eagerly"))


def empty_tests_in_a_try_whose_finally_continues(xs, n):
    # Fuzz seed 70280 (reduced): NumPy refuses the truth value of an empty array (and of one
    # of several items); the `finally` that `continue`s discards the error, so Python returns.
    # Run eagerly, the error came from inside `ops.cond` and was taken for autolax's own,
    # which no `finally` discards: it escaped.
    out = 0
    for i in range(n):
        try:
            if xs[0:0] != 1.0:
                out += 1
        finally:
            continue
    for i in range(n):
        try:
            while xs[0:0] > 0:
                out += 10
        finally:
            continue
    for i in range(n):
        try:
            out += 100 if (xs[0:2] > 0 and n) else 200
        finally:
            continue
    for i in range(n):
        try:
            out += not (xs[0:2] > 0)
        finally:
            continue
    for i in range(n):
        try:
            assert xs[0:0], "empty"
        finally:
            continue
    return out


def test_pythons_error_for_the_truth_of_an_array_is_the_users_statements(tmp_path):
    xs = np.array([1.0, 2.0, 3.0])
    assert empty_tests_in_a_try_whose_finally_continues(xs, 2) == 0
    assert autolax.convert(empty_tests_in_a_try_whose_finally_continues)(xs, 2) == 0
    # Traced, the conditions are autolax's ArrayConditionError (a refusal), which no
    # `finally` discards.
    check_all_paths(empty_tests_in_a_try_whose_finally_continues, xs, 2, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.ArrayConditionError, match="empty array"):
        autolax.jit(empty_tests_in_a_try_whose_finally_continues)(xs, 2)


# Fuzz seed 170146 (`--focus helper`): a `while` whose test calls a helper that prints.
# The test was evaluated once for the loop's first answer (`first`) and once more by
# `lax.while_loop` on entry: one line too many. The staged loop starts from `first` now.
def _prints_and_reads(xs):
    print("tested", len(xs))
    return xs[0]


def counts_while_a_test_prints(a, xs):
    e = xs[0]
    k = 0
    while _prints_and_reads(xs) >= e and k < 3:
        k += 1
    return k + a


def returns_from_a_loop_whose_test_prints(a, xs):
    e = xs[0]
    while _prints_and_reads(xs) >= e:
        return a
    return -a


@pytest.mark.parametrize("fn", [counts_while_a_test_prints, returns_from_a_loop_whose_test_prints])
def test_a_loop_test_that_prints_prints_as_often_as_python_evaluates_it(fn, tmp_path, capfd):
    xs = np.array([4.0, 3.0])
    check_all_paths(fn, 3.5, xs, tmp_dir=tmp_path)
    capfd.readouterr()
    want = fn(3.5, xs)
    python = capfd.readouterr().out
    assert python.count("tested 2") == (4 if fn is counts_while_a_test_prints else 1)
    got = autolax.jit(fn)(3.5, xs)
    jax.effects_barrier()
    assert float(got) == want and capfd.readouterr().out == python
