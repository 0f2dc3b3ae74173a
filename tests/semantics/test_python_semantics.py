"""Python's answer or autolax's own clear error, on every path (issue 13).

Each test is a program that returned a silently different value (or a JAX-internal error)
on some path at 480ca60. Every test runs the program as plain Python and through every path
in ``paths.PATHS`` (``autolax.jit``, ``jax.jit(autolax.convert(f))``, ``autolax.convert``
eagerly, the CLI's default output) on the same inputs, and compares value, exception type
and printed output (``paths.check_all_paths``).
"""

import contextlib
import heapq
import math
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import PATHS, check_all_paths, standalone_module


# ----------------------------------------------------------------------------- unbound reads
def last_item(n):
    for i in range(n):
        last = i * 2
    return last


@pytest.mark.parametrize("n", [0, 1, 3])
def test_variable_of_a_loop_that_ran_zero_times_is_unbound(n, tmp_path):
    # 480ca60: autolax.jit returned 0 for n = 0; convert eagerly returned <undefined 'last'>.
    check_all_paths(last_item, n, tmp_dir=tmp_path)


def test_zero_trip_error_names_the_variable_and_is_an_unbound_local_error():
    with pytest.raises(UnboundLocalError, match=r"cannot access local variable 'last'.*test_python_semantics.py:\d+"):
        autolax.jit(last_item)(0)


def assigned_in_a_nested_loop(n):
    for _ in range(2):
        for _ in range(n):
            w = 1.0
    return w


@pytest.mark.parametrize("n", [-1, 0, 2])
def test_variable_first_assigned_in_a_nested_loop_that_ran_zero_times(n, tmp_path):
    # Fuzzer seed 9010 (`--focus for-range`): the inner loop over a traced range did not
    # flag `w` as maybe unbound inside the staged outer loop, so n <= 0 returned 0.0.
    check_all_paths(assigned_in_a_nested_loop, n, tmp_dir=tmp_path)


def read_before_bound_in_an_outer_loop(n, ys):
    for _ in ys:
        for k in range(n, 1, 2):
            pass
        k = k + 1
    return 1


@pytest.mark.parametrize("n", [4, -3])
def test_read_that_may_precede_the_first_binding_in_a_staged_loop(n, tmp_path):
    # Fuzzer seed 11014 (`--focus zero-trip`): the outer loop carried `k` as bound after its
    # first iteration's trace, so the first iteration's read of an unbound `k` (n >= 1: the
    # inner loop runs no iteration) went unchecked and the function returned.
    check_all_paths(read_before_bound_in_an_outer_loop, n, np.array([1, 2], np.int32), tmp_dir=tmp_path)


def read_after_del_in_a_loop(b, n):
    z = 1.5
    del z
    for _ in range(2, n, 2):
        b = b + z
    return b


@pytest.mark.parametrize("n", [1, 5])
def test_read_in_a_loop_after_del_is_an_unbound_local_error(n, tmp_path):
    # Fuzzer seed 11000 (`--focus undefined`): the loop body, a function of its own, read the
    # deleted `z` as a free variable: NameError, where Python raises UnboundLocalError. With
    # n traced the staged body reads `z` even when it would run no iteration (n = 1): the
    # loop's failure (body-fails, naming Python's UnboundLocalError for `z`) whatever n is,
    # not a read that "no statement that ran so far gave a value" (Python returns for n = 1).
    check_all_paths(read_after_del_in_a_loop, np.float32(-3.0), n, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"the `for` loop at .*:\d+ raised UnboundLocalError: cannot "
                       r"access local variable 'z' where it is not associated with a value while autolax staged it"):
        autolax.jit(read_after_del_in_a_loop)(np.float32(-3.0), n)
    # Eagerly, or with n static, the loop runs in Python: Python's answer.
    check_all_paths(read_after_del_in_a_loop, np.float32(-3.0), n, static_argnums=(1,), tmp_dir=tmp_path)


def last_positive(xs):
    for i in range(xs.shape[0]):
        if xs[i] > 0:
            last = i
    return last


@pytest.mark.parametrize("xs", [[-1.0, 2.0, -3.0], [-1.0, -2.0, -3.0]])
def test_variable_assigned_under_a_traced_if_in_a_loop(xs, tmp_path):
    # 480ca60: 0 instead of UnboundLocalError when no item is positive.
    check_all_paths(last_positive, jnp.array(xs), tmp_dir=tmp_path)


def last_in_while(x):
    while x > 0:
        y = x
        x = x - 1.0
    return y


@pytest.mark.parametrize("x", [2.0, -1.0])
def test_while_loop_that_never_runs(x, tmp_path):
    check_all_paths(last_in_while, x, tmp_dir=tmp_path)


def swap_unbound(n):
    s = 1.0
    for i in range(n):
        s, t = t, s
    return s


@pytest.mark.parametrize("static", [(), (0,)])
def test_name_read_before_any_assignment(static, tmp_path):
    # 480ca60: UndefinedVariableError "'s' loses its value in the loop" (traced n). With n
    # traced the staged body reads `t` whether or not an iteration runs: body-fails.
    check_all_paths(swap_unbound, 2, static_argnums=static, tmp_dir=tmp_path, refusal=not static)
    check_all_paths(swap_unbound, 0, static_argnums=static, tmp_dir=tmp_path, refusal=not static)
    if not static:
        with pytest.raises(autolax.StagedEffectError,
                           match="raised UnboundLocalError: cannot access local variable 't'"):
            autolax.jit(swap_unbound)(0)


def test_maybe_unbound_read_under_vmap_with_lanes_that_ran():
    assert jax.vmap(autolax.convert(last_item))(jnp.array([1, 2])).tolist() == [0, 2]


# ----------------------------------------------------------------------------- static_argnums
def grid(rows, cols):
    count = 0
    for _ in rows:
        cs = cols
        for c in cs:
            count += c
    return count


def test_wrappers_with_different_static_argnums_do_not_share_traces():
    # 480ca60: b returned 3 (a's trace) where Python returns 0.
    a = autolax.jit(grid, static_argnums=(1,))
    b = autolax.jit(grid, static_argnums=(0,))
    assert a(jnp.arange(1), range(3)) == grid(jnp.arange(1), range(3)) == 3
    assert b(range(3), jnp.arange(1)) == grid(range(3), jnp.arange(1)) == 0


# ----------------------------------------------------------------------------- closures
def accumulate(xs):
    scale = 1.0
    f = lambda v: v * scale  # noqa: E731 - the closure under test
    total = 0.0
    for x in xs:
        scale = scale + 1.0
        total = total + f(x)
    return total


def test_closure_called_in_a_loop_sees_the_current_value(tmp_path):
    # 480ca60: autolax.jit gave 3.0 (the closure saw scale = 1.0), Python 9.0.
    check_all_paths(accumulate, jnp.ones(3), python_args=([1.0, 1.0, 1.0],), tmp_dir=tmp_path)


def late_binding(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)
    return [f() for f in fs]


def test_closures_made_in_a_loop_bind_late(tmp_path):
    check_all_paths(late_binding, 3, static_argnums=(0,), tmp_dir=tmp_path)


def closure_after_return(x):
    s = 1.0
    g = lambda: s * x  # noqa: E731
    if x > 5:
        return g()
    s = 2.0
    return g()


@pytest.mark.parametrize("x", [3.0, 7.0])
def test_closure_after_an_early_return(x, tmp_path):
    # The rest of the function becomes a branch: its closure must see s = 2.0.
    check_all_paths(closure_after_return, x, tmp_dir=tmp_path)


def closure_in_both_branches(x):
    s = 1.0
    g = lambda: s + x  # noqa: E731
    if x > 0:
        s = 10.0
        y = g()
    else:
        y = g()
    return y + g()


@pytest.mark.parametrize("x", [-1.0, 1.0])
def test_each_branch_starts_from_the_value_before_the_if(x, tmp_path):
    check_all_paths(closure_in_both_branches, x, tmp_dir=tmp_path)


class Scaler:
    def __init__(self):
        self.k = 2.0

    def scaled(self, v):
        return v * self.k


def bound_method_in_loop(xs):
    m = Scaler()
    f = m.scaled
    total = 0.0
    for x in xs:
        total = total + f(x)
        m.k = m.k + 1.0
    return total


def test_bound_method_sees_its_object_updated(tmp_path):
    # Python: 2 + 3 + 4 = 9 on ones.
    check_all_paths(bound_method_in_loop, jnp.ones(3), python_args=([1.0, 1.0, 1.0],), tmp_dir=tmp_path, refusal=True)


def appends_and_reads_a_list_a_closure_captures(xs, ys):
    out = []
    for _ in xs:
        out.append(0.5)
        flag = ys[len(out) % 4]

    def total():
        return jnp.stack(out).sum()
    return flag, total()


def test_list_a_closure_captures_appended_and_read_in_a_loop(tmp_path):
    # Fuzzer seed 12050 (`--focus nested-def`): the loop body's parameter for the captured
    # `out` is renamed (`out_1`), so the fact "the body reads what it appends to" did not
    # reach it: the loop was staged and len(out) read 1 in every iteration.
    xs, ys = np.ones(4, np.float32), np.array([-1, 1, 2, 2], np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)  # runs as a Python loop, correctly
        check_all_paths(appends_and_reads_a_list_a_closure_captures, xs, ys, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- list methods
def pop_sum(n):
    stack = [1.0, 2.0, 3.0, 4.0]
    s = 0.0
    for _ in range(n):
        s += stack.pop()
    return s, len(stack)


def test_pop_in_a_loop_over_a_static_range(tmp_path):
    # 480ca60: (8.0, 3) -- the pop ran once, while tracing. Python: (7.0, 2).
    check_all_paths(pop_sum, 2, static_argnums=(0,), tmp_dir=tmp_path)


def test_pop_in_a_loop_over_a_traced_range_is_refused_with_the_rule():
    check_all_paths(pop_sum, 2, refusal=True, paths=("autolax.jit",))
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(pop_sum)(2)
    message = str(info.value)
    assert "'stack' is [float32[], float32[], float32[], float32[]] before the loop and [float32[], float32[], " \
           "float32[]] after one iteration of the `for` loop at" in message
    assert "carries a list with one length" in message and "Fix: use a fixed-size array" in message


def extend_pairs(xs):
    out = []
    for x in xs:
        out.extend([x, 2 * x])
    return jnp.stack(out)


def insert_front(xs):
    out = [0.0]
    for x in xs:
        out.insert(0, x)
    return jnp.stack(out)


def add_in_place(xs):
    out = []
    for x in xs:
        out += [x]
    return jnp.stack(out)


def remove_first(xs):
    out = [1.0, 2.0, 3.0]
    t = 0.0
    for x in xs:
        out.remove(out[0])
        t += x
    return t, len(out)


def clear_and_append(xs):
    out = [1.0]
    for x in xs:
        out.clear()
        out.append(x)
    return out[0]


def delete_item(xs):
    out = [1.0, 2.0, 3.0]
    for x in xs:
        del out[0]
    return len(out)


@pytest.mark.parametrize("fn", [extend_pairs, insert_front, add_in_place, remove_first, clear_and_append, delete_item])
def test_list_methods_in_a_staged_loop(fn, tmp_path):
    # 480ca60: insert, remove, clear and del ran once while tracing (wrong lengths and sums).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)  # may run unrolled; values must match
        check_all_paths(fn, jnp.array([1.0, 2.0]), python_args=([1.0, 2.0],), tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- effects
LOG = []


def append_to_global(xs):
    for x in xs:
        LOG.append(x)
    return len(LOG)


def test_appending_to_a_global_in_a_staged_loop_is_refused():
    # 480ca60: returned 1 (the append ran once, while tracing).
    LOG.clear()
    with pytest.raises(autolax.StagedEffectError, match=r"a list \(\[\]\) is changed \(`.append`\) inside the `for` loop at"):
        autolax.jit(append_to_global)(jnp.ones(3))
    assert LOG == []
    assert autolax.convert(append_to_global)([1.0, 2.0]) == 2  # eagerly: Python's loop


def log_and_double(x):
    LOG.append(x)
    return x * 2


def test_appending_to_a_global_at_the_top_of_a_jitted_function_is_refused(tmp_path):
    # Fuzzer (`--n 300 --seed 1`, seeds 15, 18, 117, 190): the append ran once, while
    # tracing, and left a tracer in the global list; the next call appended nothing.
    LOG.clear()
    check_all_paths(log_and_double, 1.0, tmp_dir=tmp_path, refusal=True, paths=("autolax.jit", "jax.jit(convert)"))
    LOG.clear()  # Python's own call appended
    with pytest.raises(autolax.StagedEffectError, match=r"a list \(\[\]\) is changed \(`.append`\) in a function that jax.jit is tracing"):
        autolax.jit(log_and_double)(1.0)
    assert LOG == []
    assert autolax.convert(log_and_double)(1.0) == 2.0 and LOG == [1.0]  # eagerly: Python's append
    LOG.clear()


class Plain:
    def __init__(self):
        self.k = 1.0


def setattr_plain_object(xs):
    m = Plain()
    t = 0.0
    for x in xs:
        t = t + m.k * x
        m.k = m.k + 1.0
    return t


def test_setting_an_attribute_of_a_plain_object_in_a_staged_loop_is_refused(tmp_path):
    check_all_paths(setattr_plain_object, jnp.ones(3), python_args=([1.0, 1.0, 1.0],), tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match="a Plain object is given a new attribute value"):
        autolax.jit(setattr_plain_object)(jnp.ones(3))


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def add_all(self, xs):
        for x in xs:
            self.total = self.total + x
        return self.total


def test_mutating_self_in_a_staged_loop_is_refused():
    acc = Accumulator()
    with pytest.raises(autolax.StagedEffectError, match="is changed inside the `for` loop"):
        jax.jit(autolax.convert(Accumulator.add_all), static_argnums=0)(acc, jnp.array([1.0, 2.0]))


def prints_f_strings(a, xs):
    print(f"a = {a}, {{braces}} {a * 2:.3f} [{'text'}]")
    total = 0.0
    for x in xs:
        total = total + x
        if x > a:
            print(f"over: {x} (total {total:.1f})")
    return total


@pytest.mark.parametrize("a", [0.5, 10.0])
def test_print_of_an_f_string_shows_the_values(a, tmp_path):
    # Fuzzer seed 9060 (`--focus for-array`): an f-string was formatted while tracing, so
    # print showed the tracer ("JitTracer(...)") instead of the number.
    expected = check_all_paths(prints_f_strings, np.float32(a), np.array([1.0, 2.0], np.float32), tmp_dir=tmp_path)
    assert expected.printed.startswith(f"a = {a}, {{braces}} {a * 2:.3f} [text]\n")


RUNNING = 0.0


def adds_to_a_global(a):
    global RUNNING
    RUNNING += a
    return a


def test_global_number_assigned_under_jit_is_a_clear_error():
    # Fuzzer seed 276: `RUNNING += a` at the top of a jitted function ran once per trace, so
    # a second call with the same shapes left RUNNING as it was (and a traced `a` would have
    # left a tracer in it). Eagerly it runs as Python does.
    global RUNNING
    RUNNING = 0.0
    with pytest.raises(autolax.StagedEffectError, match=r"the global 'RUNNING' is assigned in a function that "
                                                        r"jax.jit is tracing.*\nFix: .*@autolax.do_not_convert"):
        autolax.jit(adds_to_a_global)(1.0)
    assert RUNNING == 0.0
    autolax.convert(adds_to_a_global)(2.0)
    autolax.convert(adds_to_a_global)(2.0)
    assert RUNNING == 4.0


# ----------------------------------------------------------------------------- raise, assert, try
def guarded(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * 2
    except ValueError:
        y = -1.0
    return y


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_caught_by_a_handler_under_a_traced_condition_is_staged(x, tmp_path):
    # 480ca60: -1.0 for 3.0 (the handler always ran, while tracing); then refused
    # (`raise-in-try`). Now the `raise` is a jump to the handler, which runs under `if caught:`.
    check_all_paths(guarded, x, tmp_dir=tmp_path)
    assert float(autolax.jit(guarded)(x)) == guarded(x)
    jaxpr = str(jax.make_jaxpr(autolax.convert(guarded))(x))
    assert "select_n" in jaxpr or "cond[" in jaxpr  # a staged `if` (a cheap one is a select)


def test_raise_caught_by_a_handler_reads_like_a_jump():
    source = autolax.to_source(guarded)
    assert "caught = ops.caught(ValueError('negative'), ValueError)" in source
    assert "ops.cond(caught, " in source


def caught_in_a_loop(xs):
    i = -1
    total = 0.0
    try:
        for k in range(xs.shape[0]):
            total += xs[k]
            if xs[k] < 0:
                i = k
                raise ValueError("negative")
            total += 1.0
    except ValueError:
        total = -total
    return i, total


@pytest.mark.parametrize("xs", [[1.0, 2.0, 3.0], [1.0, -2.0, 3.0], [-1.0, -2.0, 3.0]])
def test_raise_in_a_loop_caught_by_its_try_ends_the_loop(xs, tmp_path):
    # The assignments made before the `raise` persist; the loop stops at it.
    check_all_paths(caught_in_a_loop, np.array(xs, np.float32), tmp_dir=tmp_path)
    jaxpr = str(jax.make_jaxpr(autolax.convert(caught_in_a_loop))(np.array(xs, np.float32)))
    assert "while[" in jaxpr or "scan[" in jaxpr


def caught_with_else_and_finally(x):
    y = x + 1.0
    try:
        if x > 2:
            raise KeyError
        y = y * 3
        if x < -2:
            raise IndexError("low")
        y = y + 1
    except ValueError:
        y = y - 1000.0
    except (TypeError, LookupError):  # the first handler that catches KeyError and IndexError
        y = y - 100.0
        print("caught", y)
    else:
        y = y + 0.5
    finally:
        y = y * 2
    return y


@pytest.mark.parametrize("x", [3.0, 0.0, -3.0])
def test_raise_caught_with_else_and_finally(x, tmp_path):
    # `else` runs only when nothing was raised; the handler runs before the `finally`.
    check_all_paths(caught_with_else_and_finally, x, tmp_dir=tmp_path)


def caught_by_an_outer_try(x):
    try:
        try:
            if x < 0:
                raise ValueError("negative")
            y = x
        except ValueError:
            if x < -5:
                raise ArithmeticError("very negative")
            y = 0.0
    except ArithmeticError:
        y = -1.0
    return y


@pytest.mark.parametrize("x", [3.0, -3.0, -7.0])
def test_raise_in_a_handler_caught_by_an_outer_try(x, tmp_path):
    check_all_paths(caught_by_an_outer_try, x, tmp_dir=tmp_path)


def caught_with_jumps(xs):
    out = 0.0
    for x in xs:
        try:
            if x > 10:
                break
            if x < 0:
                raise ValueError("negative")
            if x == 0:
                return -5.0
            out += x
        except ValueError:
            out -= 1.0
            continue
        out *= 2
    return out


@pytest.mark.parametrize("xs", [[1.0, -1.0, 2.0], [1.0, 0.0, 2.0], [3.0, 11.0, -1.0], [-1.0, -2.0, 5.0]])
def test_raise_caught_next_to_break_continue_and_return(xs, tmp_path):
    check_all_paths(caught_with_jumps, np.array(xs, np.float32), tmp_dir=tmp_path)


def caught_and_returned(x):
    y = 1.0
    try:
        y = x * 3
        if x < 0:
            raise ZeroDivisionError
        y = y + 1
    except Exception:
        if x < -5:
            return y
        y = 0.0
    return y * 2


@pytest.mark.parametrize("x", [3.0, -3.0, -7.0])
def test_raise_caught_by_a_handler_that_returns(x, tmp_path):
    check_all_paths(caught_and_returned, x, tmp_dir=tmp_path)


def caught_inside_a_with(x):
    import contextlib

    y = 1.0
    try:
        with contextlib.suppress(ValueError):
            if x < 0:
                raise ValueError("suppressed by the `with`, not caught by the `try`")
            y = 2.0
        y = y + 10
    except ValueError:
        y = -1.0
    return y


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_inside_a_with_is_not_a_jump_to_the_handler(x, tmp_path):
    # The context manager may swallow the exception: such a `raise` keeps the refusal.
    check_all_paths(caught_inside_a_with, x, tmp_dir=tmp_path, refusal=True)


def returned_then_changed_by_finally(x, ys):
    try:
        if x < 0:
            raise ValueError("negative")
        return ys
    except ValueError:
        pass
    finally:
        ys[0] = 1
    return ys


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_caught_in_a_try_with_a_return_and_a_finally_is_still_refused(x, tmp_path):
    # Fuzzer seed 5177 (`--focus try`): Python returns the NumPy array that the `finally`
    # then changes in place; the staged program would return the value before the change.
    # (Each path gets its own copy of `ys`: the function changes it.)
    for path in PATHS:
        check_all_paths(returned_then_changed_by_finally, x, np.array([4, 3], np.int32), paths=[path],
                        python_args=(x, np.array([4, 3], np.int32)), tmp_dir=tmp_path, refusal=True)


def caught_as_an_unused_name(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * 2
    except ValueError as err:  # `err` is read nowhere: the handler's copy need not bind it
        y = -1.0
    return y


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_caught_by_a_handler_that_names_the_exception_but_never_reads_it(x, tmp_path):
    check_all_paths(caught_as_an_unused_name, x, tmp_dir=tmp_path)


def caught_and_named(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * 2
    except ValueError as e:
        y = float(len(str(e)))
    return y


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_caught_by_a_handler_that_reads_the_exception_is_still_refused(x, tmp_path):
    # The handler reads the exception object: outside what autolax stages.
    check_all_paths(caught_and_named, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"`raise` under a traced condition at .*:\d+ is inside a `try` that catches it"):
        autolax.jit(caught_and_named)(x)


def caught_by_a_rebound_name(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * 2
    except ValueError:
        y = -1.0
    return y


def test_raise_caught_by_a_handler_whose_name_is_rebound_is_refused(tmp_path):
    # `ValueError` names another class in this function's globals: not matched from the name.
    fn = type(caught_by_a_rebound_name)(caught_by_a_rebound_name.__code__,
                                        {**caught_by_a_rebound_name.__globals__, "ValueError": KeyError})
    assert fn(-3.0) == -1.0
    with pytest.raises(autolax.StagedEffectError, match=r"is inside a `try` that catches it"):
        autolax.jit(fn)(-3.0)


def assert_caught(x):
    y = 0.0
    if x > 0:
        try:
            assert x < 5, "big"
            y = x
        except AssertionError:
            y = -1.0
    return y


@pytest.mark.parametrize("x", [1.0, 7.0, -1.0])
def test_assert_caught_by_a_handler_is_refused_when_the_condition_is_traced(x, tmp_path):
    # Before: AssertionError when the program ran with 7.0, where Python's handler returns -1.0.
    check_all_paths(assert_caught, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"`assert` under a traced condition at .*:\d+ is inside a `try` that catches it"):
        autolax.jit(assert_caught)(x)


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_raise_caught_by_a_handler_under_a_python_condition(x, tmp_path):
    check_all_paths(guarded, x, static_argnums=(0,), tmp_dir=tmp_path)


def checked_sqrt(x):
    if x < 0:
        raise ValueError("negative")
    return jnp.sqrt(x)


@pytest.mark.parametrize("x", [4.0, -4.0])
def test_raise_under_a_traced_condition_raises_when_the_program_runs(x, tmp_path):
    check_all_paths(checked_sqrt, x, tmp_dir=tmp_path)


def test_raise_under_a_traced_condition_raises_the_users_exception_through_autolax_jit():
    f = autolax.jit(checked_sqrt)
    assert f(4.0) == 2.0
    with pytest.raises(ValueError, match="^negative$"):
        f(-4.0)
    assert f(9.0) == 3.0  # compiled once; the check only fires when the path is taken


def sum_positive(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            raise ValueError("negative item")
        total += x
    return total


@pytest.mark.parametrize("xs", [[1.0, 2.0, 3.0], [1.0, -2.0, 3.0]])
def test_raise_in_a_staged_loop(xs, tmp_path):
    check_all_paths(sum_positive, jnp.array(xs), python_args=(xs,), tmp_dir=tmp_path)


def halve_until_small(x):
    while x > 1.0:
        if x > 1000.0:
            raise OverflowError("too large")
        x = x / 2
    return x


@pytest.mark.parametrize("x", [40.0, 4000.0])
def test_raise_in_a_while_loop(x, tmp_path):
    check_all_paths(halve_until_small, x, tmp_dir=tmp_path)


def validate(v):
    if v > 10.0:
        raise ValueError("too big")
    return v


def uses_validate(x):
    if x > 0:
        return validate(x) * 2
    return -x


@pytest.mark.parametrize("x", [-1.0, 3.0, 30.0])
def test_raise_in_a_function_called_from_a_staged_branch(x, tmp_path):
    check_all_paths(uses_validate, x, tmp_dir=tmp_path)


def test_raise_under_vmap_counts_only_the_lanes_that_take_the_path():
    assert jax.vmap(autolax.convert(uses_validate))(jnp.array([-1.0, 3.0])).tolist() == [1.0, 6.0]
    with pytest.raises(Exception, match="too big"):
        jax.vmap(autolax.convert(uses_validate))(jnp.array([-1.0, 30.0]))


def uncaught_type(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x
    except KeyError:
        y = 0.0
    return y


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_raise_a_handler_does_not_catch(x, tmp_path):
    check_all_paths(uncaught_type, x, tmp_dir=tmp_path)


def both_raise(x):
    if x > 0:
        raise ValueError("positive")
    else:
        raise KeyError("not positive")


def test_both_branches_raising_at_the_top_is_refused(tmp_path):
    check_all_paths(both_raise, 1.0, tmp_dir=tmp_path, refusal=True)


def positive_only(x):
    assert x > 0, "x must be positive"
    return x * 2


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_traced_assert_is_checked_when_the_program_runs(x, tmp_path):
    # 480ca60: TracerBoolConversionError for every input.
    check_all_paths(positive_only, x, tmp_dir=tmp_path)


def failing_assert_in_a_branch(x):
    r = 0
    if x > 100.0:
        assert r > 3, "r too small"
        x = x + 1.0
    return x


@pytest.mark.parametrize("x", [1.0, 200.0])
def test_failing_static_assert_in_a_traced_branch_fails_only_when_taken(x, tmp_path):
    # Fuzzer (seed 237 of `--n 300 --seed 1`): the assert's test is a Python value, so it
    # failed while the branch was traced -- an AssertionError though Python never runs it.
    check_all_paths(failing_assert_in_a_branch, x, tmp_dir=tmp_path)


def assert_in_every_iteration(xs, n):
    seen = []
    for x in xs:
        assert n, "out of range"
        seen.append(x)
    return seen[-1]


def test_loop_that_always_raises_raises_and_runs_nothing_after_it(tmp_path):
    # Fuzzer (seed 251 of `--n 300 --seed 1`): the loop's body raises on every path, so
    # autolax staged it as "raises when it runs" and traced on: `seen[-1]` of the list the
    # loop never appended to was an IndexError while tracing, not Python's AssertionError.
    check_all_paths(assert_in_every_iteration, jnp.ones(3), 0, static_argnums=(1,), python_args=([1.0] * 3, 0),
                    tmp_dir=tmp_path, refusal=True)
    with pytest.raises(AssertionError, match="out of range"):
        autolax.jit(assert_in_every_iteration, static_argnums=(1,))(jnp.ones(3), 0)
    assert autolax.jit(assert_in_every_iteration, static_argnums=(1,))(jnp.ones(3), 1) == 1.0


def return_in_try_finally(x):
    try:
        if x > 0:
            return x * 2
        y = 1.0
    finally:
        z = 3.0
    return y + z


@pytest.mark.parametrize("x", [2.0, -2.0])
def test_return_inside_try_finally_under_a_traced_if(x, tmp_path):
    # 480ca60: UndefinedVariableError ('y' is assigned only in the `else` branch).
    check_all_paths(return_in_try_finally, x, tmp_dir=tmp_path)


def finally_reads_loop_result(n):
    r = 0
    try:
        for j in range(2):
            r = 4
    finally:
        if n - r == n:
            return 1
    return 2


def handler_reads_loop_result(xs, k):
    count = 0
    try:
        for x in xs:
            count = count + x
        [0.0][k]  # IndexError for k > 0
    except IndexError:
        return count
    return -count


@pytest.mark.parametrize("n", [-1, 3])
def test_finally_sees_what_a_loop_in_the_try_changed(n, tmp_path):
    # Fuzzer seed 7078 (`--focus return`): the loop in the `try` did not give back `r`,
    # which only the `finally` reads, so the `finally` saw r == 0 and returned 1.
    check_all_paths(finally_reads_loop_result, n, tmp_dir=tmp_path)


@pytest.mark.parametrize("k", [0, 1])
def test_handler_sees_what_a_loop_in_the_try_changed(k, tmp_path):
    check_all_paths(handler_reads_loop_result, np.array([1.0, 2.0, 3.0], np.float32), k, static_argnums=(1,), tmp_dir=tmp_path)


def continue_in_finally(n):
    t = 0
    for _ in range(n, 1, 2):
        try:
            t += 1
        finally:
            continue
    return t


@pytest.mark.parametrize("n", [-3, 5])
def test_finally_that_only_continues(n, tmp_path):
    # Fuzzer seed 11065 (`--focus try`): lowering the `continue` left the `finally` empty,
    # an AST that does not compile ("Try has neither except handlers nor finalbody").
    check_all_paths(continue_in_finally, n, tmp_dir=tmp_path)


def pop_in_a_branch_under_try(b, xs):
    queue = []
    try:
        if xs.sum() > 0:
            pass
        else:
            b = queue.pop(0)
    except IndexError:
        b = -1.0
    return b


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_python_error_in_a_staged_branch_is_not_caught_by_the_user_s_handler(x, tmp_path):
    # Fuzzer seed 12028 (`--focus list-methods`): staging the untaken branch raised
    # IndexError while tracing, the user's handler caught it, and the function returned
    # -1.0 where Python (x > 0) returns b. The branch's error is autolax's own now.
    check_all_paths(pop_in_a_branch_under_try, np.float32(2.0), np.array([x], np.float32), tmp_dir=tmp_path,
                    refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"the `else` branch of the `if` at .*raised IndexError: "
                                                        r"pop from empty list while autolax staged it"):
        autolax.jit(pop_in_a_branch_under_try)(np.float32(2.0), np.array([x], np.float32))


def reads_what_its_branch_deleted(x):
    s = x * 2.0
    y = 0.0
    if x > 0:
        del s
        y = s + 1.0
    return y


def reads_a_deleted_name_in_a_later_operand(x):
    s = x * 2.0
    del s
    y = 0.0
    if x > 0 and s > 1.0:
        y = 1.0
    return y


def reads_a_deleted_name_in_a_loop_with_traced_bounds(x, n):
    s = x
    for i in range(n):
        del s
        x = x + s
    return x


UNBOUND_WHILE_STAGED = r"raised UnboundLocalError: cannot access local variable 's' where it is not associated " \
    r"with a value while autolax staged it"


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_a_staged_branch_reading_what_it_deleted_raises_when_taken(x, tmp_path):
    # A traced `if` whose branch reads what it deleted: Python raises UnboundLocalError only
    # when the branch runs (x > 0), and returns 0.0 otherwise. The branch is staged as
    # raising it when the program takes it, as a `raise` there is (it was refused:
    # branch-fails).
    check_all_paths(reads_what_its_branch_deleted, x, tmp_dir=tmp_path)
    if x > 0:  # Python's error, not autolax's
        with pytest.raises(UnboundLocalError, match="cannot access local variable 's'") as raised:
            autolax.jit(reads_what_its_branch_deleted)(x)
        assert not isinstance(raised.value, autolax.AutolaxError)


def test_an_operand_reading_a_deleted_name_raises_when_evaluated(tmp_path):
    # The same for an operand after a traced `and`: Python evaluates it only when the traced
    # value before it is true (it was refused: operand-fails).
    for x in (1.0, -1.0):
        check_all_paths(reads_a_deleted_name_in_a_later_operand, x, tmp_dir=tmp_path)


def reads_a_deleted_name_in_a_helper(x):
    s = x * 2.0
    y = 0.0
    if x > 0:
        del s
        y = s + 1.0
    return y


def calls_a_helper_that_reads_what_it_deleted(x):
    return reads_a_deleted_name_in_a_helper(x) + 1.0


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_a_branch_of_a_called_function_reading_what_it_deleted_is_refused(x, tmp_path):
    # Called by converted code, whose `try` might catch the error: still the branch's
    # failure (branch-fails), naming Python's error, not a read "no statement that ran so
    # far gave a value".
    check_all_paths(calls_a_helper_that_reads_what_it_deleted, x, tmp_dir=tmp_path, refusal=True)
    for fn in (autolax.jit(calls_a_helper_that_reads_what_it_deleted),
               jax.jit(autolax.convert(calls_a_helper_that_reads_what_it_deleted))):
        with pytest.raises(autolax.StagedEffectError,
                           match=r"the `if` branch of the `if` at .*:\d+ " + UNBOUND_WHILE_STAGED) as info:
            fn(x)
        assert info.value.code == "branch-fails" and "No statement that ran so far" not in str(info.value)


def test_a_loop_body_reading_a_deleted_name_is_the_loop_s_failure(tmp_path):
    # The same for the body of a loop with traced bounds (body-fails): Python raises only if
    # an iteration runs.
    for n in (0, 2):
        check_all_paths(reads_a_deleted_name_in_a_loop_with_traced_bounds, 1.0, n, tmp_dir=tmp_path, refusal=True)
        with pytest.raises(autolax.StagedEffectError,
                           match=r"the `for` loop at .*:\d+ " + UNBOUND_WHILE_STAGED) as info:
            autolax.jit(reads_a_deleted_name_in_a_loop_with_traced_bounds)(1.0, n)
        assert info.value.code == "body-fails" and "No statement that ran so far" not in str(info.value)


def reads_a_deleted_name_on_one_side(x):
    s = x * 2.0
    del s
    return s + 1.0 if x > 0 else 0.0


def deletes_in_a_branch_a_static_loop_never_takes(x):
    s = x
    y = 0.0
    for i in range(3):
        if i > 5:
            del s
            y = s
        y = y + x
    return y


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")
def test_reads_of_deleted_names_python_may_skip_keep_python_s_answer(tmp_path):
    # A side of a conditional expression with a traced test is staged as raising Python's
    # UnboundLocalError when the program takes it. A staged `if` in a loop with static bounds
    # that reads what it deleted: the loop runs in Python, where `i > 5` is a Python test.
    for x in (1.0, -1.0):
        check_all_paths(reads_a_deleted_name_on_one_side, x, tmp_dir=tmp_path)
        check_all_paths(deletes_in_a_branch_a_static_loop_never_takes, x, tmp_dir=tmp_path)
    assert autolax.jit(reads_a_deleted_name_on_one_side)(-1.0) == 0.0
    with pytest.raises(UnboundLocalError, match="cannot access local variable 's'"):
        autolax.jit(reads_a_deleted_name_on_one_side)(1.0)


# ----------------------------------------------------------------------------- and / or
def noisy(x):
    print("evaluated", x)
    return x > 1


def short_circuit(x):
    return x > 0 and noisy(x)


@pytest.mark.parametrize("x", [-1.0, 2.0])
def test_and_with_a_traced_operand_keeps_pythons_short_circuit(x, tmp_path):
    # 480ca60: the right operand was always evaluated (it printed for x = -1.0 too).
    check_all_paths(short_circuit, x, tmp_dir=tmp_path)


def in_bounds(i, xs):
    return i < 3 and xs[i] > 0


def test_harmless_operands_are_combined_without_a_conditional():
    report = autolax.trace_check(autolax.jit(in_bounds), 1, jnp.ones(3))
    assert [r.became for r in report.rows if r.kind == "and"] == ["jnp.logical_and"]
    report = autolax.trace_check(autolax.jit(short_circuit), 2.0)
    assert [r.became for r in report.rows if r.kind == "and"] == ["lax.cond"]


def or_pops(x):
    stack = [1.0, 2.0]
    if x > 0 or stack.pop() > 0:
        x = x + 1.0
    return x, len(stack)


@pytest.mark.parametrize("x", [-1.0, 1.0])
def test_list_method_in_a_later_operand_of_a_traced_or_is_refused(x, tmp_path):
    # Fuzzer (tests/fuzzing/findings.py, or-side-effect): the right operand is traced once
    # whatever `x` is, so `stack.pop()` ran at trace time: len(stack) was 1 for x = 1.0.
    check_all_paths(or_pops, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"a list \(\[1.0, 2.0\]\) is changed \(`.pop`\)"):
        autolax.jit(or_pops)(x)
    assert autolax.convert(or_pops)(x) == or_pops(x)  # concrete: Python's short circuit


def test_list_method_in_a_later_operand_of_a_traced_or_is_refused_by_standalone_as_by_the_runtime():
    source = "def or_pops(x):\n    stack = [1.0]\n    return x > 0 or stack.pop() > 0\n"
    namespace = standalone_module(source, all=True)
    with pytest.raises(Exception) as info:  # the class of the runtime's copy
        jax.jit(namespace["or_pops"])(jnp.float32(1.0))
    assert type(info.value).__name__ == "StagedEffectError"
    assert "a list ([1.0]) is changed (`.pop`)" in str(info.value)


def announce(x, n):
    print("n:", n)
    return x * n


@pytest.mark.parametrize("make", [lambda f: autolax.jit(f, static_argnums=(1,)),
                                  lambda f: jax.jit(autolax.convert(f), static_argnums=(1,))])
def test_print_of_python_values_at_the_top_of_a_traced_function_prints_on_every_call(make, capsys):
    # Fuzzer (`--n 300 --seed 1`, seeds 21, 42, 166): printed while tracing, so once per
    # trace; the second call with the same static values printed nothing.
    fn = make(announce)
    for x in (1.0, 2.0):
        assert fn(x, 3) == announce(x, 3)
    jax.effects_barrier()
    assert capsys.readouterr().out == "n: 3\n" * 4


def guarded_by_a_traced_and(a, xs):
    if xs[0] <= 1.0 and a <= undefined_anywhere:  # noqa: F821 - Python never evaluates it here
        return 1
    return 0


def test_failing_operand_after_a_traced_one_is_autolax_s_error(tmp_path):
    # Fuzzer seed 11073 (`--focus closures`): Python skips the right operand (xs[0] > 1); a
    # staged `and` evaluates it on every run, and it raised a bare NameError.
    # Now autolax.jit stages it as raising NameError when the program evaluates it (Python's
    # answer); plain jax.jit (no other check in the function) still refuses it.
    args = (np.float32(0.5), np.array([3.0], np.float32))
    check_all_paths(guarded_by_a_traced_and, *args, tmp_dir=tmp_path, refusal=True)
    check_all_paths(guarded_by_a_traced_and, *args, paths=("autolax.jit",))
    with pytest.raises(NameError, match="undefined_anywhere"):
        autolax.jit(guarded_by_a_traced_and)(np.float32(0.5), np.array([0.5], np.float32))
    with pytest.raises(autolax.StagedEffectError, match=r"(?s)the operand after `and` at .*raised NameError: name "
                                                        r"'undefined_anywhere' is not defined.*Python evaluates it only "
                                                        r"when the traced value before it is true"):
        jax.jit(autolax.convert(guarded_by_a_traced_and))(*args)


# ----------------------------------------------------------------------------- classes in functions
def method_of_a_local_class(x):
    class Local:
        def step(self, v):
            if v > 0:
                return v
            return -v

    return Local().step(x)


@pytest.mark.parametrize("x", [-2.0, 3.0])
def test_methods_of_a_class_defined_inside_the_function_are_converted(x, tmp_path):
    # Its body stays as written; the method is converted when called (480ca60: the call
    # was taken for autolax's own, and ran unconverted: TracerBoolConversionError).
    check_all_paths(method_of_a_local_class, x, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- constructs
def delete_in_branch(x, flag):
    y = 1.0
    if flag:
        del y
    return x + y


@pytest.mark.parametrize("flag", [True, False])
def test_del_under_a_python_condition(flag, tmp_path):
    # 480ca60: ConversionError up front (`del` inside an `if`).
    check_all_paths(delete_in_branch, 1.0, flag, static_argnums=(1,), tmp_dir=tmp_path)


def delete_in_loop(x, xs):
    y = 1.0
    for v in xs:
        x = x + v
        del y
    return x


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")  # y's placeholder: a Python loop
@pytest.mark.parametrize("k", [0, 1, 3])
def test_del_in_a_loop_raises_on_the_second_iteration(k, tmp_path):
    # Fuzzer (seed 219 of `--n 300 --seed 1`): the second `del y` found y deleted, but the
    # loop never checked it -- every path, eager too, returned a value.
    check_all_paths(delete_in_loop, 1.0, jnp.ones(k), python_args=(1.0, [1.0] * k), tmp_dir=tmp_path)


COUNT = [0]
TOTAL = 0.0


def set_global(x, flag):
    global TOTAL
    if flag:
        TOTAL = 5.0
    return x + TOTAL


def test_global_assigned_under_a_python_condition(tmp_path):
    # 480ca60: ConversionError up front. Eagerly it runs as Python does; under jax.jit the
    # store would happen once per trace (a later call after TOTAL changed would not set it
    # again): StagedEffectError, as under a traced condition.
    global TOTAL
    TOTAL = 0.0
    check_all_paths(set_global, 1.0, True, static_argnums=(1,), tmp_dir=tmp_path, paths=("convert eagerly",))
    assert TOTAL == 5.0
    TOTAL = 0.0
    with pytest.raises(autolax.StagedEffectError, match="the global 'TOTAL' is assigned in a function that jax.jit"):
        autolax.jit(set_global, static_argnums=(1,))(1.0, True)
    assert TOTAL == 0.0
    with pytest.raises(autolax.StagedEffectError, match="'TOTAL' .declared global or nonlocal. is assigned inside the `if`"):
        autolax.jit(set_global)(1.0, True)


def match_kind(x, k):
    match k:
        case 0:
            return x
        case 1 | 2:
            return 2 * x
        case [a, b] if a > b:
            return a - b
        case None:
            return -x
        case _:
            return 0 * x


@pytest.mark.parametrize("k", [0, 1, 2, 3, None, (3, 1), (1, 3)])
def test_match_statement(k, tmp_path):
    # 480ca60: ConversionError (`match` statements are not supported yet).
    check_all_paths(match_kind, 2.0, k, static_argnums=(1,), tmp_dir=tmp_path)


def match_traced(x):
    match x > 0:
        case True:
            return x
        case _:
            return -x


@pytest.mark.parametrize("x", [-2.0, 3.0])
def test_match_on_a_traced_subject(x, tmp_path):
    check_all_paths(match_traced, x, tmp_dir=tmp_path)


def match_in_a_case(k, j):
    match k > 0:
        case True:
            match j > 0:
                case True:
                    return k + j
                case _:
                    while (y := j * 2) > -10:
                        j = y - 1.0
                    return j
        case _:
            return -k


@pytest.mark.parametrize("k, j", [(1.0, 2.0), (1.0, -2.0), (-1.0, 2.0)])
def test_match_and_walrus_loop_inside_a_case(k, j, tmp_path):
    # Before: the desugaring did not look inside `case` bodies, so the inner `match` ran as
    # Python on a traced subject (TracedValueError).
    check_all_paths(match_in_a_case, k, j, tmp_dir=tmp_path)


def _fails_when_negative(x):
    if x < 0:
        raise ValueError("negative")
    return x * 2.0


def return_in_a_suppressing_with(x):
    with contextlib.suppress(ValueError):
        return _fails_when_negative(x)
    return x + 1.0


def return_in_a_suppressing_with_in_a_loop(xs):
    total = 0.0
    for x in xs:
        with contextlib.suppress(ValueError):
            total = total + _fails_when_negative(x)
            if total > 5.0:
                return total
    return -total


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_a_return_in_a_with_whose_manager_suppresses_the_error(x, tmp_path):
    # Before: the code after the `with` was dropped (a `with` whose body returns was taken to
    # always return): UnboundLocalError on every path where Python returns x + 1.
    check_all_paths(return_in_a_suppressing_with, x, static_argnums=(0,), tmp_dir=tmp_path)


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_a_traced_raise_a_with_may_suppress_is_refused(x, tmp_path):
    # The helper's `raise` under a traced condition, inside a `with` whose manager may
    # suppress it: whether the code after the `with` runs would depend on data.
    check_all_paths(return_in_a_suppressing_with, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match="is inside a `with` block, whose context manager may suppress"):
        autolax.jit(return_in_a_suppressing_with)(x)


@pytest.mark.parametrize("xs", [(1.0, 2.0), (1.0, 4.0, 9.0), (-1.0, 2.0)])
def test_a_return_in_a_suppressing_with_inside_a_loop(xs, tmp_path):
    check_all_paths(return_in_a_suppressing_with_in_a_loop, xs, static_argnums=(0,), tmp_dir=tmp_path)
    check_all_paths(return_in_a_suppressing_with_in_a_loop, np.array(xs), tmp_dir=tmp_path, refusal=True)


def walrus_test(x):
    while (y := x * 2) < 10:
        x = y
    return x


@pytest.mark.parametrize("x", [1.0, 20.0])
def test_assignment_expression_in_a_while_test(x, tmp_path):
    # 480ca60: ConversionError.
    check_all_paths(walrus_test, x, tmp_dir=tmp_path)


def range_bound_to_a_name(x, n):
    r = range(n)
    for i in r:
        x = x + i
    return x


@pytest.mark.parametrize("n", [0, 4])
def test_range_object_bound_to_a_name(n, tmp_path):
    # 480ca60: TracerIntegerConversionError (range() of a traced bound).
    check_all_paths(range_bound_to_a_name, 1.0, n, tmp_dir=tmp_path)


def range_argument(x, r):
    for i in r:
        x = x + i
    return x


def test_range_object_passed_in(tmp_path):
    check_all_paths(range_argument, 1.0, range(2, 5), static_argnums=(1,), tmp_dir=tmp_path)


def digits_backwards(xs, n):
    out = 0.0
    for i in reversed(range(n)):
        out = out * 10 + xs[i]
    return out


def reversed_stepped_range(a, b):
    total = 0
    for i in reversed(range(a, b, 3)):
        total = total * 10 + i
    return total


def reversed_downward_range(a, b):
    total = 0
    for i in reversed(range(a, b, -2)):
        total = total * 10 + i
    return total


@pytest.mark.parametrize("fn, args", [
    (digits_backwards, (np.arange(1.0, 5.0, dtype=np.float32), 3)),
    (digits_backwards, (np.arange(1.0, 5.0, dtype=np.float32), 0)),
    (digits_backwards, (np.arange(1.0, 5.0, dtype=np.float32), -2)),
    (reversed_stepped_range, (-2, 7)), (reversed_stepped_range, (1, 1)), (reversed_stepped_range, (5, 2)),
    (reversed_downward_range, (5, -2)), (reversed_downward_range, (0, 0)), (reversed_downward_range, (-2, 3)),
])
def test_reversed_range_with_traced_bounds(fn, args, tmp_path):
    # The hunt for third outcomes: `for i in reversed(range(n))` with a traced n raised
    # TypeError ('range' object is not reversible) on every traced path.
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def length_of_a_traced_range(n):
    r = range(n)
    return len(r)


def test_length_of_a_range_with_traced_bounds_is_traced_value_error(tmp_path):
    # Was a plain TypeError (Python returns the length).
    check_all_paths(length_of_a_traced_range, 3, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"len\(\) of a range whose bounds are traced"):
        autolax.jit(length_of_a_traced_range)(3)


def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def test_traced_recursion_is_a_clear_error():
    # 480ca60: RecursionError from deep inside JAX.
    with pytest.raises(autolax.TracedRecursionError, match=r"'factorial' calls itself more than 32 levels deep"):
        autolax.jit(factorial)(5)
    assert autolax.jit(factorial, static_argnums=0)(5) == 120  # a Python-decided recursion is fine


ELIF_CHAIN = "def chain(x):\n" + "".join(
    f"    {'if' if i == 0 else 'elif'} x < {i}:\n        return {i}.0\n" for i in range(100)) + "    return -1.0\n"


@pytest.mark.skipif(jax.__version_info__[:2] == (0, 9), reason="jaxlib 0.9 crashes (segmentation fault) compiling "
                    "100 nested lax.conds; 0.8 and 0.10 pass (README: JAX versions)")
@pytest.mark.parametrize("x", [-5.0, 50.5, 500.0])
def test_elif_chain_of_100_branches(x, tmp_path):
    # 480ca60: RecursionError from about 70 branches. The CLI's outputs nested one branch
    # function per arm (100 levels: "too many levels of indentation") until the chain became
    # one `ops.cases` call.
    path = tmp_path / "chain.py"
    path.write_text(ELIF_CHAIN)
    namespace = {}
    exec(compile(ELIF_CHAIN, str(path), "exec"), namespace)  # noqa: S102 - the test's own program
    check_all_paths(namespace["chain"], x, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- if / elif chains
# An `if` / `elif` chain is one `ops.cases` call whose later conditions are thunks: each is
# evaluated only where Python evaluates it (the arms before it not taken).
def chain_guarded_by_none(x, scale):
    if scale is None:
        return -x
    elif scale > 0:
        return x * scale
    elif scale < -10:
        return 0.0 * x
    return x


@pytest.mark.parametrize("scale", [None, 2.0, -20.0, -1.0])
def test_elif_condition_valid_only_where_the_earlier_ones_are_false(scale, tmp_path):
    # `scale > 0` of None would raise TypeError: evaluated only when `scale is None` is false.
    check_all_paths(chain_guarded_by_none, 3.0, scale, tmp_dir=tmp_path)


def chain_whose_test_may_fail(x):
    if x < 0:
        return 0.0
    elif math.sqrt(x) > 2.0:
        return 1.0
    elif math.log(x) > 0.0:
        return 2.0
    return 3.0


@pytest.mark.parametrize("x", [-4.0, 9.0, 2.0, 0.5, 0.0])
def test_elif_condition_that_fails_runs_only_where_python_runs_it(x, tmp_path):
    # sqrt(-4.0) and log(0.0) raise Python's ValueError only where the program reaches them:
    # x = -4.0 returns 0.0 and x = 0.0 raises (log), as in Python.
    check_all_paths(chain_whose_test_may_fail, x, tmp_dir=tmp_path)


def noisy_test(x, label):
    print("testing", label)
    return x > label


def chain_with_printing_tests(x):
    if x > 5.0:
        y = 5.0
    elif noisy_test(x, 2.0):
        y = 2.0
    elif noisy_test(x, 0.0):
        y = 0.0
    else:
        y = -1.0
    return y


@pytest.mark.parametrize("x", [6.0, 3.0, 1.0, -1.0])
def test_elif_conditions_print_only_when_reached(x, tmp_path):
    # Under a traced `x`, each later test's print runs inside the false branch of the arm
    # before it: printed when the program reaches it, as Python prints.
    check_all_paths(chain_with_printing_tests, x, tmp_dir=tmp_path)


def chain_of_static_then_traced_tests(x, mode):
    if mode == "zero":
        return 0.0 * x
    elif mode == "neg":
        return -x
    elif x > 0:
        return x * 2.0
    else:
        return x - 1.0


@pytest.mark.parametrize("mode", ["zero", "neg", "other"])
@pytest.mark.parametrize("x", [1.5, -1.5])
def test_elif_chain_of_static_then_traced_tests(mode, x, tmp_path):
    check_all_paths(chain_of_static_then_traced_tests, x, mode, static_argnums=(1,), tmp_dir=tmp_path)
    report = autolax.trace_check(autolax.jit(chain_of_static_then_traced_tests, static_argnums=(1,)), x, mode)
    became = [r.became for r in report.rows]
    # A static test decides as Python's `if` (the later arms not reached); only the traced
    # test after the static ones is staged.
    static = ["python (static)"]
    assert became == {"zero": static, "neg": static * 2, "other": static * 2 + ["lax.select"]}[mode], became


def elif_chain_updating_state(xs):
    total, count = 0.0, 0
    for x in xs:
        if x > 1.0:
            total += x
        elif x > 0.0:
            count += 1
        elif x > -1.0:
            total -= 1.0
            count -= 1
    return total, count


def test_elif_chain_in_a_loop_body_carries_what_its_arms_change(tmp_path):
    xs = np.array([2.0, 0.5, -0.5, -3.0, 1.5], np.float32)
    check_all_paths(elif_chain_updating_state, xs, tmp_dir=tmp_path)


def test_elif_chain_is_one_cases_call_with_its_arms_side_by_side():
    source = autolax.to_source(chain_with_printing_tests)
    # One call, its arms side by side (one per line: a branch that only gives back a value
    # is a lambda), nothing nested.
    assert "ops.cases([(x > 5.0, lambda: 5.0),\n" in source, source
    assert "(lambda: ops.call(noisy_test, x, 2.0), lambda: 2.0),\n" in source, source
    assert "elif: " in source and source.count("ops.cases(") == 1 and "ops.cond(" not in source
    assert "def if_" not in source, source


def elif_test_reading_a_branch_parameter(x, y):
    if x > 1.0:
        y = y + 1.0
    elif y > 0.0:
        y = y * 2.0
    else:
        y = -y
    return y


@pytest.mark.parametrize("x, y", [(2.0, 1.0), (0.0, 1.0), (0.0, -1.0)])
def test_elif_test_reading_what_the_branches_take_gets_the_false_branch_operands(x, y, tmp_path):
    # `y > 0.0` reads `y`, which the branches take: the test takes it too, as the nested
    # `if_false` of the `elif` did.
    check_all_paths(elif_test_reading_a_branch_parameter, x, y, tmp_dir=tmp_path)
    assert "(lambda y: y > 0.0, lambda y: y * 2.0)" in autolax.to_source(elif_test_reading_a_branch_parameter)


def elif_test_changing_a_local_list(x):
    heap = [3.0, 5.0]
    if x > 1:
        y = 1.0
    elif heapq.heappop(heap) > 0:
        y = 2.0
    else:
        y = 3.0
    return y, len(heap)


def test_elif_test_that_a_library_call_changes_a_list_in_is_refused_when_staged():
    # The test, a thunk of `ops.cases`, runs in the false branch of the first arm: its
    # closure's lists are watched there as the nested `if_false`'s were (before that, the
    # `heappop` ran once while tracing: 1 item left on every run where Python leaves 2).
    assert elif_test_changing_a_local_list(2.0) == (1.0, 2)
    with pytest.raises(autolax.runtime.errors.StagedEffectError,
                       match=r"'heap', a list \(\[3.0, 5.0\]\), is changed by a function called inside the `if` at "):
        autolax.jit(elif_test_changing_a_local_list)(2.0)


def elif_arms_with_other_outputs(x):
    y = z = 0.0
    if x > 1.0:
        y = x
    elif x > 0.0:
        z = x
    return y, z


@pytest.mark.parametrize("x", [2.0, 0.5, -1.0])
def test_elif_that_returns_fewer_names_than_its_if_stays_nested(x, tmp_path):
    check_all_paths(elif_arms_with_other_outputs, x, tmp_dir=tmp_path)
    assert "ops.cases" not in autolax.to_source(elif_arms_with_other_outputs)


# ----------------------------------------------------------------------------- aliases
def alias_of_a_carried_dict(xs):
    d = {"a": 0.0}
    alias = d
    for x in xs:
        d["a"] = d["a"] + x
    return alias["a"], d is alias


def test_alias_of_a_container_a_staged_loop_updates(tmp_path):
    # 480ca60: the alias kept the value from before the loop (0.0).
    check_all_paths(alias_of_a_carried_dict, jnp.array([1.0, 2.0]), python_args=([1.0, 2.0],), tmp_dir=tmp_path)


def alias_through_an_enclosing_list(x):
    buf = [0.0, 0.0]
    rows = [buf]
    if x > 0:
        buf[0] = x
    return rows[0][0]


@pytest.mark.parametrize("x", [2.0, -2.0])
def test_container_changed_in_a_staged_if_is_seen_through_another_reference(x, tmp_path):
    # `buf` is not read after the `if`, but the list it holds is, through `rows`.
    check_all_paths(alias_through_an_enclosing_list, x, tmp_dir=tmp_path)


def change_through_an_alias_in_a_loop(b, n):
    coef = [b, 0.0, 0.0]
    for i in range(n):
        same = coef
        same[1] = -b
        same[2] += i
    return coef[1], coef[2]


def append_through_an_alias_in_a_loop(xs):
    out = []
    for x in xs:
        view = out
        view.append(x * 2.0)
    return out[-1], len(out)


@pytest.mark.parametrize("n", [0, 3])
def test_change_through_an_alias_made_in_a_staged_body(n, tmp_path):
    # Fuzzer seed 9125 (`--focus for-range`): only the alias looked changed, so the loop
    # did not carry `coef` and wrote its traced value into the list (a leaked tracer).
    check_all_paths(change_through_an_alias_in_a_loop, np.float32(-2.5), n, tmp_dir=tmp_path)


def test_append_through_an_alias_made_in_a_staged_body(tmp_path):
    check_all_paths(append_through_an_alias_in_a_loop, np.array([1.0, 2.0, 3.0], np.float32), tmp_dir=tmp_path)


def change_through_an_alias_of_an_argument(xs):
    acc = xs
    try:
        acc[0] += 3.0
        if xs[0] <= 1.0:
            raise RuntimeError("too large")
    except IndexError:
        pass
    return xs


def test_argument_changed_through_an_alias_in_a_try(tmp_path):
    # Fuzzer seed 12046 (`--focus raise`): `xs` kept its old value inside the `try` (the
    # rebinding came after the whole statement), so the `raise` fired where Python's does not.
    # A JAX array on autolax's paths (NumPy's would be changed in place by the eager path);
    # Python gets a NumPy array of its own, which it changes in place.
    check_all_paths(change_through_an_alias_of_an_argument, jnp.array([1.0, 2.0]), tmp_dir=tmp_path,
                    python_args=(np.array([1.0, 2.0], np.float32),))


def change_of_the_aliased_name(xs, a):
    ys = xs
    for i in range(3):
        xs[i] = xs[i] + a
    return ys


def test_alias_sees_a_change_made_through_the_original_name(tmp_path):
    check_all_paths(change_of_the_aliased_name, jnp.array([1.0, 2.0, 3.0]), np.float32(1.0), tmp_dir=tmp_path,
                    python_args=(np.array([1.0, 2.0, 3.0], np.float32), np.float32(1.0)))


class Record:
    pass


def key_in_one_branch(x, flag):
    d = {"a": x}
    if flag:
        d["b"] = 2 * x
    return d


def attribute_in_one_branch(x, flag):
    p = Record()
    p.a = x
    if flag:
        p.b = 2 * x
    return p.a + getattr(p, "b", 0.0)


@pytest.mark.parametrize("fn", [key_in_one_branch, attribute_in_one_branch])
@pytest.mark.parametrize("flag", [True, False])
def test_key_or_attribute_created_in_a_python_decided_branch(fn, flag, tmp_path):
    check_all_paths(fn, 1.0, flag, static_argnums=(1,), tmp_dir=tmp_path)


def append_in_a_loop_in_one_branch(xs, ys):
    queue = [1.0]
    if ys[0] > 3:
        pass
    else:
        for x, y in zip(xs, ys):
            queue.append(0.0)
    return len(queue)


def test_append_in_a_loop_in_one_branch_is_a_clear_error():
    # Fuzzer seed 11005 (`--focus aliases`): describing the appended list for the error
    # crashed inside autolax (AttributeError: '_Repr' object has no attribute 'shape').
    with pytest.raises(autolax.StateMismatchError, match=r"'queue' is \[float32\[\]\] in the `if` branch and "
                                                         r"\[4 items\] in the `else` branch"):
        autolax.jit(append_in_a_loop_in_one_branch)(jnp.ones(3), jnp.array([2, 3, 4]))


# ----------------------------------------------------------------------------- appends on every path
def append_on_every_path(xs):
    out = []
    for x in xs:
        if x > 1.0:
            y = x * 2.0
            out.append(y)
        elif x < -1.0:
            out.append(-x)
        else:
            out.append(x * x)
    return jnp.stack(out), len(out)


@pytest.mark.parametrize("xs", [np.array([2.0, -3.0, 0.5], np.float32), np.array([0.0], np.float32)])
def test_an_append_on_every_path_of_an_if_is_staged(xs, tmp_path):
    # Each path appends one item, so the loop around it is a scan (before: unrolled).
    check_all_paths(append_on_every_path, xs, tmp_dir=tmp_path)
    report = autolax.trace_check(append_on_every_path, xs)
    assert "lax.scan" in [r.became for r in report.rows]


def unpacks_in_loop(b, n):
    for i in range(n):
        k, b = i  # TypeError in Python, but only if an iteration runs
    return b


def test_a_loop_body_that_fails_while_staged_is_autolax_error_naming_it(tmp_path):
    # Fuzzer seed 236: the staged body raised JAX's "iteration over a 0-d array", where
    # Python (n = 0) returns b.
    assert unpacks_in_loop(2.0, 0) == 2.0
    with pytest.raises(autolax.runtime.errors.StagedEffectError) as info:
        autolax.jit(unpacks_in_loop)(2.0, 0)
    message = str(info.value)
    assert "the `for` loop at" in message and "raised TypeError: iteration over a 0-d array" in message
    assert "Python raises this only if an iteration runs" in message
    assert isinstance(info.value.__cause__, TypeError)


# A function called in a staged body that changes a container the body reads from outside
# (not carried: the body itself does not change it) would change it once, while tracing.
def _push(items, v):
    items.append(v)


def _double(d):
    d["a"] = d["a"] * 2.0


def pushes_through_a_call(x, n):
    out = [0.0]
    total = 0.0
    for i in range(n):
        _push(out, x * i)
        total = total + out[-1]
    return total, len(out)


def doubles_under_an_if(x):
    d = {"a": 1.0}
    if x > 0:
        _double(d)
    return d["a"] + x


def pushes_into_a_nested_list(x, n):
    state = ([], 1.0)
    for i in range(n):
        _push(state[0], x)
    return len(state[0])


@pytest.mark.parametrize("n", [0, 3])
def test_call_changing_an_outside_list_in_a_staged_loop(n, tmp_path):
    # Python: (sum of x*i, n + 1); a staged loop would append once. Eagerly: Python's answer.
    check_all_paths(pushes_through_a_call, 1.5, n, tmp_dir=tmp_path, refusal=True)
    assert autolax.convert(pushes_through_a_call)(1.5, n) == pushes_through_a_call(1.5, n)
    with pytest.raises(autolax.StagedEffectError) as info:
        autolax.jit(pushes_through_a_call)(1.5, n)
    message = str(info.value)
    assert "'out', a list ([0.0])," in message  # put back as it was before the trace
    assert "is changed by a function called inside the `for` loop at" in message
    assert "_push(out, x * i)" not in message and "for i in range(n):" in message
    assert "Fix: change it in the statement itself (`out.append(v)`, `out[i] = v`" in message


def test_call_changing_a_dict_in_a_staged_if_hands_it_back(tmp_path):
    # `_double(d)` assigns an item of its parameter: the call rebinds `d` (writeback pass),
    # which the staged `if` then carries -- Python's answer on every path (issue 43 item 1;
    # refused as an outside change before). The CLI path here converts the function's source
    # alone, without `_double` beside it: refused there (tests/semantics/calls/test_writeback.py converts whole files).
    for x in (2.0, -2.0):
        check_all_paths(doubles_under_an_if, x, tmp_dir=tmp_path, paths=("autolax.jit", "jax.jit(convert)",
                                                                          "convert eagerly"))
        check_all_paths(doubles_under_an_if, x, tmp_dir=tmp_path, paths=("cli default",), refusal=True)


def test_call_changing_a_list_nested_in_an_outside_tuple(tmp_path):
    check_all_paths(pushes_into_a_nested_list, 1.0, 3, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"a list \(\[\]\) inside 'state' is changed by a function"):
        autolax.jit(pushes_into_a_nested_list)(1.0, 3)


def test_call_that_only_reads_an_outside_list_is_staged(tmp_path):
    def weighted(x, n):
        weights = [0.5, 2.0]
        total = 0.0
        for i in range(n):
            total = total + x * sum(weights)
        return total

    check_all_paths(weighted, 1.5, 4, tmp_dir=tmp_path)
    assert "while" in str(jax.make_jaxpr(autolax.convert(weighted))(1.5, 4)) or \
        "scan" in str(jax.make_jaxpr(autolax.convert(weighted))(1.5, 4))


# A staged statement whose body needs a concrete value of a traced one (a Python list
# indexed with the loop index): autolax's TracedValueError, which names the statement and
# the line, in place of JAX's tracer error; where the statement can run in Python, it does.
def indexes_a_list_with_a_traced_index(x, n):
    table = [1.0, 2.0, 3.0]
    total = x
    for i in range(n):
        total = total + table[i]
    return total


def indexes_a_list_in_a_traced_branch(x):
    table = [1.0, 2.0, 3.0]
    if x > 0:
        x = x + table[jnp.argmax(jnp.array(table))]
    return x


def test_list_indexed_with_a_traced_loop_index_is_traced_value_error(tmp_path):
    check_all_paths(indexes_a_list_with_a_traced_index, 1.0, 3, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(indexes_a_list_with_a_traced_index)(1.0, 3)
    message = str(info.value)
    assert "is staged (its bounds or condition are traced), but line" in message
    assert "uses a traced value as a Python int (e.g. indexes a Python list with the loop index)" in message
    assert "    for i in range(n):" in message
    assert "Fix: make the Python list the statement indexes an array before it (`table = jnp.asarray(table)`" in message
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value.__cause__, jax.errors.TracerIntegerConversionError)
    # With the trip count static, the loop runs in Python (and warns it was unrolled).
    with pytest.warns(autolax.UnrolledLoopWarning):
        assert float(autolax.jit(indexes_a_list_with_a_traced_index, static_argnums=1)(1.0, 3)) == 7.0


def test_list_indexed_with_a_traced_value_in_a_traced_branch(tmp_path):
    check_all_paths(indexes_a_list_in_a_traced_branch, 1.0, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"the `if` at .* is staged \(its condition is traced\), but "
                       r"line \d+ uses a traced value as a Python int"):
        autolax.jit(indexes_a_list_in_a_traced_branch)(1.0)


# A slice with traced bounds (`xs[i:i + w]` with the loop index) is JAX's plain IndexError,
# not one of its tracer errors: the loop (static bounds) runs in Python as for those, and a
# staged statement that cannot run in Python is autolax's TracedValueError.
def moving_average(xs, w):
    out = []
    for i in range(len(xs) - w + 1):
        out.append(jnp.mean(xs[i:i + w]))
    return out


def window_sums_in_a_branch(xs, flag):
    total = 0.0
    for i in range(len(xs) - 1):
        if flag > 0:
            total += jnp.sum(xs[i:i + 2])
    return total


def window_sums_in_a_conditional_expression(xs, flag):
    total = 0.0
    for i in range(len(xs) - 1):
        total += jnp.sum(xs[i:i + 2]) if flag > 0 else 1.0
    return total


def window_sums_over_a_traced_range(xs, n):
    total = 0.0
    for i in range(n):
        total += jnp.sum(xs[i:i + 2])
    return total


def window_in_a_traced_branch(xs, n):
    if n > 0:
        return jnp.sum(xs[n:n + 2])
    return 0.0


# A slice whose length the consumer needs (a mean divides by it) has no fixed-shape form.
def running_means(xs):
    out = []
    for i in range(len(xs)):
        out.append(jnp.mean(xs[:i + 1]))
    return out


def tail_means_in_a_branch(xs, flag):
    total = 0.0
    for i in range(len(xs) - 1):
        if flag > 0:
            total += jnp.mean(xs[i:])
    return total


def tail_means_in_a_conditional_expression(xs, flag):
    total = 0.0
    for i in range(len(xs) - 1):
        total += jnp.mean(xs[i:]) if flag > 0 else 1.0
    return total


def tail_means_over_a_traced_range(xs, n):
    total = 0.0
    for i in range(n):
        total += jnp.mean(xs[i:])
    return total


def tail_mean_in_a_traced_branch(xs, n):
    if n > 0:
        return jnp.mean(xs[n:])
    return 0.0


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")
@pytest.mark.parametrize("fn, args, static", [
    (running_means, (np.arange(4.0, dtype=np.float32),), ()),
    (tail_means_in_a_branch, (np.arange(4.0, dtype=np.float32), 1.0), ()),
    (tail_means_in_a_branch, (np.arange(4.0, dtype=np.float32), -1.0), ()),
    (tail_means_in_a_conditional_expression, (np.arange(4.0, dtype=np.float32), 1.0), ()),
])
def test_a_slice_with_the_loop_index_runs_the_loop_in_python(fn, args, static, tmp_path):
    # The hunt for third outcomes: IndexError "Slice entries must be static integers" on
    # every path but eager; in a branch, staged as raising when taken.
    check_all_paths(fn, *args, static_argnums=static, tmp_dir=tmp_path)
    with pytest.warns(autolax.UnrolledLoopWarning, match="slices an array with traced bounds"):
        autolax.jit(fn, static_argnums=static)(*args)


@pytest.mark.parametrize("fn", [tail_means_over_a_traced_range, tail_mean_in_a_traced_branch])
def test_a_slice_with_traced_bounds_in_a_staged_statement_is_traced_value_error(fn, tmp_path):
    check_all_paths(fn, np.arange(4.0, dtype=np.float32), 2, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"slices an array with traced bounds.*\n.*\n"
                       r"Fix: slice with `lax.dynamic_slice"):
        autolax.jit(fn)(np.arange(4.0, dtype=np.float32), 2)


@pytest.mark.parametrize("fn, args, static", [
    (moving_average, (np.arange(4.0, dtype=np.float32), 2), (1,)),
    (moving_average, (np.arange(3.0, dtype=np.float32), 3), (1,)),
    (window_sums_in_a_branch, (np.arange(4.0, dtype=np.float32), 1.0), ()),
    (window_sums_in_a_branch, (np.arange(4.0, dtype=np.float32), -1.0), ()),
    (window_sums_in_a_conditional_expression, (np.arange(4.0, dtype=np.float32), 1.0), ()),
    (window_sums_over_a_traced_range, (np.arange(4.0, dtype=np.float32), 2), ()),
    (window_in_a_traced_branch, (np.arange(4.0, dtype=np.float32), 2), ()),
])
def test_a_window_at_the_loop_index_is_staged(fn, args, static, tmp_path):
    # `xs[i:i + w]` of a static width is `lax.dynamic_slice` (these ran as Python loops, or
    # were refused, before windows were lowered: tests/runtime/test_slices.py has the rest).
    check_all_paths(fn, *args, static_argnums=static, tmp_dir=tmp_path)
    autolax.trace_check(autolax.jit(fn, static_argnums=static), *args)  # raises UnrolledLoopError if unrolled


# A loop body that needs a Python bool of a traced item fails as a Python loop too: autolax's
# TracedValueError naming the loop and the line (was JAX's TracerBoolConversionError; found
# with `peak = max(peak, x)`, which autolax now computes).
def count_positive_with_bool(xs):
    count = 0
    for x in xs:
        count += bool(x > 0)
    return count


def test_a_loop_body_needing_a_bool_of_a_traced_item_is_traced_value_error(tmp_path):
    xs = np.array([3.0, -1.0, 4.0], dtype=np.float32)
    check_all_paths(count_positive_with_bool, xs, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"the `for` loop at .* is staged \(it carries traced "
                       r"values, also as a Python loop\), but line \d+ uses a traced value as a Python bool") as info:
        autolax.jit(count_positive_with_bool)(xs)
    assert isinstance(info.value.__cause__, jax.errors.TracerBoolConversionError)


# The builtins `min` / `max` of traced numbers (the hunt for third outcomes: collatz_max,
# running extremes): JAX's TracerBoolConversionError on every traced path; now Python's answer.
def collatz_peak(n):
    steps = 0
    peak = n
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        peak = max(peak, n)
        steps += 1
    return steps, peak


def clamp_with_builtins(x, lo, hi):
    return min(max(x, lo), hi), max(x, lo, hi), min(x, 2)


def extremes_of_items(xs):
    return min(xs), max(xs), min([xs[0], 0.5]), max((xs[-1], xs[0]), key=abs), max([], default=xs[0])


def min_of_two_arrays(a, b):
    return min(a, b)


F = np.float32


@pytest.mark.parametrize("fn, args", [
    (collatz_peak, (27,)), (collatz_peak, (1,)), (collatz_peak, (-4,)),
    (clamp_with_builtins, (F(1.5), F(0), F(1))), (clamp_with_builtins, (F(-1), F(0), F(1))),
    (clamp_with_builtins, (F(np.nan), F(0), F(1))), (clamp_with_builtins, (F(0.5), F(np.nan), F(1))),
    (clamp_with_builtins, (3, 0, 5)),
    (extremes_of_items, (np.array([3, -5, 2], np.float32),)),
    (extremes_of_items, (np.array([np.nan, 1, 0], np.float32),)),
    (extremes_of_items, (np.array([1, np.nan, 0], np.float32),)),
    (extremes_of_items, (np.array([4], np.float32),)),
    (extremes_of_items, (np.array([3, 1, 2], np.int32),)),
])
def test_min_and_max_of_traced_numbers(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


@pytest.mark.parametrize("fn, args, error", [
    (extremes_of_items, (np.zeros(0, np.float32),), ValueError),  # min() of an empty sequence
    (min_of_two_arrays, (np.ones(2, np.float32), np.zeros(2, np.float32)), ValueError),  # ambiguous truth value
    (extremes_of_items, (np.ones((2, 2), np.float32),), ValueError),
])
def test_min_and_max_fail_as_python_does(fn, args, error, tmp_path):
    assert check_all_paths(fn, *args, tmp_dir=tmp_path, refusal=True).error.__class__ is error


def test_min_of_arrays_names_the_line():
    with pytest.raises(autolax.ArrayConditionError, match=r"the condition at .*test_python_semantics.py:\d+ "
                       r"\(min\(\)\) is a traced array of shape \(2,\)"):
        autolax.jit(min_of_two_arrays)(np.ones(2, np.float32), np.zeros(2, np.float32))
    with pytest.raises(autolax.ArrayConditionError, match=r"the condition at .*test_python_semantics.py:\d+ "
                       r"\(min\(\)\) is a traced array of shape \(2,\)"):
        autolax.jit(extremes_of_items)(np.ones((2, 2), np.float32))


# `any` / `all` of a list, tuple or array of traced numbers: Python's answer as a traced bool
# (was JAX's TracerBoolConversionError on every traced path).
def validated(x, y):
    if any([x < 0, y < 0, x != x]):
        raise ValueError("negative or nan input")
    return all((x > 1, y > 1)), any([x, 0]), all([x, 1, y])


def truth_of_items(xs):
    return any(xs), all(xs), any(xs > 1), all(xs > -1)


def decided_by_a_python_item(x):
    return any([0, x > 0, 1]), all([1, x > 0, 0]), any([x > 0, 1]), all([x > 0, 0])


def any_of_rows(m):
    return any(m)


@pytest.mark.parametrize("fn, args", [
    (validated, (F(2), F(3))), (validated, (F(0.5), F(3))), (validated, (F(0), F(0))),
    (validated, (F(-1), F(3))), (validated, (F(np.nan), F(3))), (validated, (2, 3)),
    (truth_of_items, (np.array([0, 2, 3], np.float32),)), (truth_of_items, (np.array([1, 2], np.float32),)),
    (truth_of_items, (np.zeros(0, np.float32),)), (truth_of_items, (np.array([0, 0], np.int32),)),
    (truth_of_items, (np.array([np.nan], np.float32),)),
    (decided_by_a_python_item, (F(1),)), (decided_by_a_python_item, (F(-1),)),
    (any_of_rows, (np.zeros((2, 1), np.float32),)),
])
def test_any_and_all_of_traced_items(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_any_of_rows_of_several_elements_fails_as_python_does(tmp_path):
    assert isinstance(check_all_paths(any_of_rows, np.ones((2, 2), np.float32), tmp_dir=tmp_path,
                                      refusal=True).error, ValueError)
    with pytest.raises(autolax.ArrayConditionError, match=r"test_python_semantics.py:\d+ \(any\(\)\) is a traced "
                       r"array of shape \(2,\)"):
        autolax.jit(any_of_rows)(np.ones((2, 2), np.float32))


# A side of a conditional expression with a traced test that needs a concrete value: as for
# a branch of an `if`, autolax's TracedValueError (was JAX's ConcretizationTypeError).
def int_of_a_traced_value_in_a_conditional_expression(y):
    # (`int(y)` is staged, tests/semantics/numbers/test_int_float.py: `complex(y)` is not)
    return complex(y) if y > 0 else -1


def test_a_side_of_a_conditional_expression_needing_a_concrete_value(tmp_path):
    check_all_paths(int_of_a_traced_value_in_a_conditional_expression, np.float32(1.5), tmp_dir=tmp_path,
                    refusal=True)
    with pytest.raises(autolax.TracedValueError, match=r"the conditional expression at .* is staged \(its "
                       r"condition is traced\), but line \d+ needs the concrete value of a traced expression"):
        autolax.jit(int_of_a_traced_value_in_a_conditional_expression)(np.float32(1.5))


def test_statement_inside_one_that_can_run_in_python_still_lets_it():
    # The inner loop's bound is traced while the outer loop is staged; the outer loop (static
    # bounds) then runs in Python, where the inner bound is a Python int: Python's answer.
    def nested(x):
        table = [1.0, 2.0, 3.0]
        total = x
        for i in range(3):
            for j in range(i):
                total = total + table[j]
        return total

    with pytest.warns(autolax.UnrolledLoopWarning):
        assert float(autolax.jit(nested)(1.0)) == nested(1.0) == 5.0


def test_call_changing_an_outside_list_in_a_loop_with_static_bounds_runs_it_in_python():
    def pushes_three_times(x):
        out = [0.0]
        for i in range(3):
            _push(out, x * i)
        return len(out), out[-1]

    with pytest.warns(autolax.UnrolledLoopWarning, match=r"'out', a list \(\[0.0\]\), is changed by a function"):
        got = autolax.jit(pushes_three_times)(2.0)
    assert [float(v) for v in got] == [4.0, 4.0] == list(pushes_three_times(2.0))


LOG = []


def logs_through_a_call(x, n):
    total = 0.0
    for i in range(n):
        _push(LOG, i)
        total = total + x
    return total


def test_call_changing_a_global_list_in_a_staged_loop(tmp_path):
    with pytest.raises(autolax.StagedEffectError, match=r"'LOG', a list \(\[\]\), is changed by a function called"):
        autolax.jit(logs_through_a_call)(1.0, 3)
    assert LOG == []  # put back as it was


# A `try`'s `else` runs only if its body ran to the end: not after a `return`, `break` or
# `continue` out of the body (fuzz seed 6406: the `else` changed the returned array).
def returns_from_a_try_with_an_else(x, xs):
    ys = xs.copy()
    try:
        if x > 0:
            return ys
    except ValueError:
        pass
    else:
        ys[0] = 99.0  # eagerly, in place: it would change the array returned
    return ys * 2


def breaks_from_a_try_with_an_else(x, n):
    total = 0.0
    for i in range(n):
        try:
            if x > i:
                break
            if x < -i:
                continue
        except ValueError:
            total -= 100.0
        else:
            total += 1.0
        total += 10.0
    return total


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_try_else_does_not_run_after_a_return_from_the_body(x, tmp_path):
    check_all_paths(returns_from_a_try_with_an_else, x, np.array([1.0, 2.0]), tmp_dir=tmp_path)


@pytest.mark.parametrize("x", [2.5, -1.5, 0.0])
def test_try_else_does_not_run_after_a_break_or_continue_from_the_body(x, tmp_path):
    check_all_paths(breaks_from_a_try_with_an_else, x, 5, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- branches that fail while staged
# A branch of a traced `if` (or an operand after a traced `and` / `or`) that raises an error
# of the user's code while autolax traces it raises that error when the program takes it, as
# a `raise` there does: Python raises it only then. The functions call a helper of their own
# (`_half`), so they run inside ops.runtime_checks and every path stages them.
def _half(v):
    return v * 0.5


def indexes_past_the_end_when_positive(x):
    items = [1.0, 2.0, 3.0]
    if x > 0:
        y = _half(x) + items[5]
    else:
        y = _half(x)
    return y


def prints_then_indexes_past_the_end(x):
    items = [1.0, 2.0, 3.0]
    y = _half(x)
    if x > 0:
        print("taking the branch", x)
        y = y + items[5]
    return y


def asserts_then_indexes_past_the_end(x):
    items = [1.0, 2.0, 3.0]
    y = _half(x)
    if x > 0:
        assert x < 5.0, "too big"
        y = y + items[5]
    return y


def reads_a_missing_key_in_an_operand(x):
    table = {"a": 1.0}
    if x > 0 or table["b"] > 0:
        return _half(x)
    return -x


def deletes_then_reads_in_a_branch(x):
    s = _half(x)
    y = 0.0
    if x > 0:
        del s
        y = s
    return y


POPPED = []


def pops_an_empty_global_list(x):
    y = _half(x)
    if x > 0:
        y = y + POPPED.pop()
    return y


@pytest.mark.parametrize("fn", [indexes_past_the_end_when_positive, prints_then_indexes_past_the_end,
                                asserts_then_indexes_past_the_end, reads_a_missing_key_in_an_operand,
                                deletes_then_reads_in_a_branch, pops_an_empty_global_list])
@pytest.mark.parametrize("x", [1.0, 7.0, -1.0])
def test_a_branch_that_fails_while_staged_raises_only_when_taken(fn, x, tmp_path):
    # Python's value, printed output or exception on every path (no refusal): the error for
    # x > 0 (AssertionError first for x = 7 where the branch asserts), the value otherwise.
    expected = check_all_paths(fn, x, tmp_dir=tmp_path)
    assert (expected.kind == "value") == ((x < 0) != (fn is reads_a_missing_key_in_an_operand))
    check_all_paths(fn, jnp.float32(x), paths=("autolax.jit", "jax.jit(convert)"))


def test_a_branch_that_fails_while_staged_is_a_check_in_the_program():
    # Trace check: the `if` is staged (the failing branch returns only a failure code, the
    # other branch's values are taken) and the failure is raised by the host callback of
    # autolax's checks when the program takes the branch.
    text = str(jax.make_jaxpr(autolax.convert(indexes_past_the_end_when_positive))(1.0))
    assert "debug_callback" in text and "gt a 0.0" in text
    report = autolax.trace_check(indexes_past_the_end_when_positive, 1.0)
    assert [r.became for r in report.rows if r.kind == "if"] == ["lax.cond"]
    with pytest.raises(IndexError, match="list index out of range") as info:
        autolax.jit(indexes_past_the_end_when_positive)(1.0)
    assert any("which the program took" in note for note in getattr(info.value, "__notes__", []))


def catches_what_its_branch_raises(x):
    items = [1.0, 2.0, 3.0]
    try:
        if x > 0:
            y = _half(x) + items[5]
        else:
            y = _half(x)
    except IndexError:
        y = -x
    return y


def catches_what_its_operand_raises(x):
    items = [1.0]
    try:
        ok = x > 0 and items[3] > _half(x)
    except LookupError:
        ok = x < -10
    return ok


def fails_in_a_try_with_a_finally(x):
    items = [1.0, 2.0, 3.0]
    y = _half(x)
    try:
        if x > 0:
            y = y + items[5]
    finally:
        y = y + 1.0
    return y


def branch_in_a_helper_fails(x, items):
    if x > 0:
        return items[5]
    return _half(x)


def calls_a_failing_helper_in_a_try(x):
    try:
        y = branch_in_a_helper_fails(x, [1.0, 2.0])
    except IndexError:
        y = x * 10.0
    return y


@pytest.mark.parametrize("fn, code", [
    (catches_what_its_branch_raises, "branch-fails-in-try"),
    (catches_what_its_operand_raises, "operand-fails-in-try"),
    (fails_in_a_try_with_a_finally, "branch-fails-in-try"),
    (calls_a_failing_helper_in_a_try, "branch-fails-in-try"),  # the caller's try: ops.catching
])
def test_a_branch_failing_where_python_would_handle_it_is_refused(fn, code, tmp_path):
    # A handler of the `try` around it catches the error, a `finally` runs after it, or the
    # function is called by converted code whose `try` may catch it: Python would run the
    # handler (or the `finally`) depending on data, which a staged program cannot decide.
    for x in (1.0, -1.0):
        check_all_paths(fn, x, tmp_dir=tmp_path, refusal=True)
        for staged in (autolax.jit(fn), jax.jit(autolax.convert(fn))):
            with pytest.raises(autolax.StagedEffectError) as info:
                staged(x)
            assert info.value.code == code


def test_a_branch_failing_in_a_try_that_does_not_catch_it_raises_when_taken(tmp_path):
    # `except KeyError` does not catch the IndexError: staged as raising it.
    def catches_another_error(x):
        items = [1.0, 2.0, 3.0]
        try:
            if x > 0:
                y = _half(x) + items[5]
            else:
                y = _half(x)
        except KeyError:
            y = -x
        return y

    for x in (1.0, -1.0):
        check_all_paths(catches_another_error, x, paths=("autolax.jit", "jax.jit(convert)", "convert eagerly"))


def suppresses_what_its_branch_raises(x):
    items = [1.0, 2.0, 3.0]
    y = _half(x)
    with contextlib.suppress(IndexError):
        if x > 0:
            y = y + items[5]
    return y


def test_a_branch_failing_in_a_with_block_is_refused(tmp_path):
    # A context manager may suppress the error (Python then goes on after the `with`).
    for x in (1.0, -1.0):
        check_all_paths(suppresses_what_its_branch_raises, x, tmp_dir=tmp_path, refusal=True)
        with pytest.raises(autolax.StagedEffectError) as info:
            autolax.jit(suppresses_what_its_branch_raises)(x)
        assert info.value.code == "branch-fails-in-try"


def _checked_helper(x):
    if x < 0:
        raise ValueError("negative")
    return x * 2


def catches_what_a_helper_raises(x):
    try:
        y = _checked_helper(x)
    except ValueError:
        y = -1.0
    return y


def raises_what_a_helper_raises_past_a_try(x):
    try:
        y = _checked_helper(x)
    except KeyError:
        y = -1.0
    return y


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_a_raise_in_a_helper_that_the_callers_try_catches_is_refused(x, tmp_path):
    # Python runs the caller's handler when x < 0; a raise staged in the helper would be
    # raised when the program runs, past the handler (autolax.jit gave ValueError, Python
    # -1.0). The caller's `try` runs its body in `with ops.catching(ValueError):`, so the
    # helper's staged raise is refused as one written in the body is.
    check_all_paths(catches_what_a_helper_raises, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match="is inside a `try` that catches it"):
        autolax.jit(catches_what_a_helper_raises)(x)
    # A try that does not catch it leaves the staged raise alone: Python's answer.
    check_all_paths(raises_what_a_helper_raises_past_a_try, x, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- prints after a failed check
def prints_after_a_raise(x):
    print("start", x)
    if x > 0:
        raise ValueError("positive")
    print("after", x)
    return x


def prints_in_a_loop_after_a_raise(xs):
    total = 0.0
    for x in xs:
        if x > 2:
            raise ValueError("too big")
        print("item", x)
        total = total + x
    print("total", total)
    return total


def prints_then_reads_unbound(x):
    if x > 0:
        y = x * 2
    print("between")  # Python prints this, then fails at the read
    return y + 1


def prints_after_a_helper_raises(x):
    y = _checked_helper(x)
    print("after the helper", y)
    return y


@pytest.mark.parametrize("fn, args", [
    (prints_after_a_raise, (1.0,)), (prints_after_a_raise, (-1.0,)),
    (prints_in_a_loop_after_a_raise, (np.array([1.0, 3.0, 1.0, 5.0], np.float32),)),
    (prints_in_a_loop_after_a_raise, (np.array([1.0, 2.0, 1.0], np.float32),)),
    (prints_then_reads_unbound, (1.0,)), (prints_then_reads_unbound, (-1.0,)),
    (prints_after_a_helper_raises, (3.0,)), (prints_after_a_helper_raises, (-3.0,)),
])
def test_a_program_that_fails_a_check_prints_only_what_python_printed(fn, args, tmp_path):
    # autolax.jit printed "after 1.0" (and every later iteration's line) before raising the
    # check's error: the check fails when the program runs, and the prints after it ran too.
    # A staged print now prints only where no check before it failed; a staged loop whose
    # body checks and prints skips its body once one failed.
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_prints_after_a_failed_check_under_vmap_follow_each_lane(capsys):
    # Compiled, every lane runs on: a lane whose check failed prints nothing after it (the
    # call raises; whether the other lanes' later prints appear first depends on when the
    # failed check's callback stops the program)
    for _ in range(3):
        with pytest.raises(Exception, match="positive"):
            jax.jit(jax.vmap(autolax.convert(prints_after_a_raise)))(jnp.array([1.0, -1.0, 2.0]))
        jax.effects_barrier()
        printed = [p for p in capsys.readouterr().out.split("\n") if p]
        assert "after 1.0" not in printed and "after 2.0" not in printed
        assert set(printed) <= {"start 1.0", "start -1.0", "start 2.0", "after -1.0"}
    jax.jit(jax.vmap(autolax.convert(prints_after_a_raise)))(jnp.array([-1.0, -2.0]))
    jax.effects_barrier()
    assert sorted(p for p in capsys.readouterr().out.split("\n") if p) == ["after -1.0", "after -2.0",
                                                                           "start -1.0", "start -2.0"]


# ----------------------------------------------------------------------------- a returned list of appends
def returns_the_list(xs, n):
    out = []
    for i in range(n):
        out.append(xs[i] * 2.0)
    return out, [len(out)]


def returns_the_list_in_a_tuple(xs):
    rows, last = [], 0.0
    for x in xs:
        rows.append(x + last)
        last = x
    rows.append(-1.0)
    return (rows, last)


@pytest.mark.parametrize("fn, args", [
    (returns_the_list, (np.arange(4.0, dtype=np.float32), 3)),
    (returns_the_list, (np.arange(4.0, dtype=np.float32), 0)),
    (returns_the_list_in_a_tuple, (np.arange(3.0, dtype=np.float32),)),
])
def test_a_returned_list_of_appends_is_a_list(fn, args, tmp_path):
    # 12b6a96: autolax.jit returned autolax's StackedList (shown as "[3 items]", not a list)
    static = (1,) if fn is returns_the_list else ()
    check_all_paths(fn, *args, static_argnums=static, tmp_dir=tmp_path)
    out = autolax.jit(fn, static_argnums=static)(*args)
    assert type(out[0]) is list and type(fn(*args)[0]) is list
    assert jax.tree.structure(out) == jax.tree.structure(fn(*args))
    # under vmap each item holds every lane, as vmap of the Python function gives
    batch = np.stack([args[0], args[0] + 10.0])
    got = jax.vmap(autolax.convert(fn), in_axes=(0,) + (None,) * (len(args) - 1))(batch, *args[1:])
    want = [fn(row, *args[1:]) for row in batch]
    assert isinstance(got[0], list) and len(got[0]) == len(want[0][0])  # (a list subclass: Known limitations)
    for k, item in enumerate(got[0]):
        np.testing.assert_allclose(np.asarray(item), [w[0][k] for w in want])


@pytest.mark.parametrize("n", [3, 0])
def test_a_returned_list_of_appends_survives_a_second_call(n):
    # A second call of the same jax.jit object (its fast path) raised "Too few leaves for
    # PyTreeDef": the list JAX unflattened the outputs into flattened to another structure.
    xs = np.arange(4.0, dtype=np.float32)
    want = returns_the_list(xs, n)
    for jitted in (jax.jit(autolax.convert(returns_the_list), static_argnums=1),
                   autolax.jit(returns_the_list, static_argnums=1)):
        for _ in range(3):
            got = jitted(xs, n)
            assert isinstance(got[0], list) and [float(v) for v in got[0]] == [float(v) for v in want[0]]
    # a second jax.jit object over the same converted function (JAX shares its caches)
    converted = autolax.convert(returns_the_list)
    first, second = jax.jit(converted, static_argnums=1), jax.jit(converted, static_argnums=1)
    assert [float(v) for v in first(xs, n)[0]] == [float(v) for v in second(xs, n)[0]] == [float(v) for v in want[0]]
    # the pytree round trip gives the same structure, also once the list was changed
    out = first(xs, n)
    for value in (out, out[0] + [], out[0]):
        tree = jax.tree.structure(value)
        assert jax.tree.structure(jax.tree.unflatten(tree, jax.tree.leaves(value))) == tree
    out[0].append(np.float32(9.0))
    tree = jax.tree.structure(out)
    assert jax.tree.structure(jax.tree.unflatten(tree, jax.tree.leaves(out))) == tree
    assert [float(v) for v in jax.tree.map(lambda a: a + 1, out)[0]] == [float(v) + 1 for v in want[0]] + [10.0]


_RATES = {0: 1.0, 1: 2.0, 2: 0.5}
_SKIP = {0, 2}


def looks_up_a_dict_with_the_loop_index(x):
    for k in range(3):
        x = x * _RATES[k]
    return x


def set_tested_with_the_loop_index(x):
    for k in range(3):
        if k in _SKIP:
            x = x + 1.0
    return x


def looks_up_a_dict_with_a_traced_trip_count(x, n):
    for k in range(n):
        x = x * _RATES[k]
    return x


def _agree_as_python_loops(tmp_path, *fns):
    """Each of ``fns`` (one argument, 3.0) agrees with Python on every path, its loop run as
    Python (the tests assert the UnrolledLoopWarning once, on autolax.jit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        for fn in fns:
            check_all_paths(fn, 3.0, tmp_dir=tmp_path)


def test_a_dict_or_set_keyed_by_the_loop_index_runs_the_loop_in_python(tmp_path):
    """Python's `TypeError: unhashable type: '...Tracer'` out of a staged body was not one of
    the errors that make a loop run as Python (as a list indexed with the loop index does):
    every path raised it, where Python returns the value."""
    _agree_as_python_loops(tmp_path, looks_up_a_dict_with_the_loop_index, set_tested_with_the_loop_index)
    with pytest.warns(autolax.UnrolledLoopWarning, match="uses a traced value as a dict key or set item"):
        autolax.jit(looks_up_a_dict_with_the_loop_index)(3.0)
    with pytest.raises(autolax.TracedValueError, match=r"is staged \(its bounds or condition are traced\), but uses "
                                                       "a traced value as a dict key or set item"):
        autolax.jit(looks_up_a_dict_with_a_traced_trip_count)(3.0, 2)


def test_standalone_runs_a_loop_keyed_into_a_dict_or_set_as_python(tmp_path):
    source = ("RATES = {0: 1.0, 1: 2.0, 2: 0.5}\nSKIP = {0, 2}\n\n\ndef f(x):\n    for k in range(3):\n"
              "        x = x * RATES[k]\n    return x\n\n\ndef g(x):\n    for k in range(3):\n        if k in SKIP:\n"
              "            x = x + 1.0\n    return x\n")
    namespace = standalone_module(source, all=True)
    assert float(jax.jit(namespace["f"])(3.0)) == 3.0 and float(jax.jit(namespace["g"])(3.0)) == 5.0


_LAYERS = {"w0": 1.0, "w1": 2.0}


def formats_the_loop_index_into_a_key(x):
    for i in range(2):
        x = x * _LAYERS[f"w{i}"]
    return x


def concatenates_the_loop_index_into_a_key(x):
    for i in range(2):
        x = x * _LAYERS["w" + str(i)]
    return x


def test_a_key_made_from_the_loop_index_runs_the_loop_in_python(tmp_path):
    """`PARAMS[f"w{i}"]` in a staged loop looked up 'wJitTracer(int32[])': Python's KeyError
    on every path, where Python returns the value. An error of the user's code whose text
    shows a tracer makes the loop run as Python (it can: its trip count is static)."""
    _agree_as_python_loops(tmp_path, formats_the_loop_index_into_a_key, concatenates_the_loop_index_into_a_key)
    with pytest.warns(autolax.UnrolledLoopWarning, match="with a traced value where Python has a number"):
        autolax.jit(formats_the_loop_index_into_a_key)(3.0)
    source = ('PARAMS = {"w0": 1.0, "w1": 2.0}\n\n\ndef f(x):\n    for i in range(2):\n'
              '        x = x * PARAMS[f"w{i}"]\n    return x\n\n\ndef g(x):\n    for i in range(2):\n'
              '        x = x * PARAMS["w" + str(i)]\n    return x\n')
    namespace = standalone_module(source, all=True)
    assert float(jax.jit(namespace["f"])(3.0)) == 6.0 and float(jax.jit(namespace["g"])(3.0)) == 6.0


# ----------------------------------------------------------------------------- effects of the user's code while staged
def exits_when_negative(x):
    if x < 0:
        sys.exit(2)
    return x * 2


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_sys_exit_in_a_branch_python_does_not_take_does_not_exit(x, tmp_path):
    # `sys.exit()` raises SystemExit, a BaseException: staging the branch let it through, so
    # every path raised SystemExit (ended the program) where Python returns 2.0 for x = 1.0.
    # autolax.jit stages it as raised when the branch runs; plain jax.jit (a function that
    # stages no other check) refuses the branch.
    check_all_paths(exits_when_negative, np.float32(x), tmp_dir=tmp_path, refusal=True)
    if x > 0:
        assert float(autolax.jit(exits_when_negative)(np.float32(x))) == 2.0
    else:
        with pytest.raises(SystemExit):
            autolax.jit(exits_when_negative)(np.float32(x))


def takes_a_root_when_negative(x):
    if x < 0:
        return math.sqrt(-1.0)
    return x


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_a_builtin_failing_in_a_branch_of_the_cli_output(x, tmp_path):
    # The CLI's output calls library functions through `ops.call`; a builtin's error
    # (`math.sqrt(-1.0)`: ValueError, no Python frame of its own) had `ops.call` as its
    # innermost frame, so it did not count as the user's code's: it left the trace, and the
    # CLI's output raised ValueError where Python returns 1.0.
    check_all_paths(takes_a_root_when_negative, np.float32(x), tmp_dir=tmp_path, refusal=True)


def raises_with_the_value(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            raise ValueError(f"negative value {x}")
        total += x
    return total


def asserts_with_the_value(x):
    assert x > 0, f"expected positive, got {x}"
    return x


def counts_then_raises_with_the_count(x):
    n = 0
    while x > 0:
        x = x - 1.5
        n += 1
        if n > 5:
            raise RuntimeError("no convergence after", n, "steps")
    return n


def prints_then_raises_with_the_value(xs):
    for i, x in enumerate(xs):
        print("checking", i)
        if x < 0:
            raise ValueError(f"negative entry {x}")
    return xs


@pytest.mark.parametrize("fn, args", [
    (prints_then_raises_with_the_value, (np.array([1.0, -2.0, 3.0], np.float32),)),
    (raises_with_the_value, (np.array([1.0, 2.0], np.float32),)),
    (raises_with_the_value, (np.array([1.0, -2.0, 3.0], np.float32),)),
    (asserts_with_the_value, (np.float32(1.0),)),
    (asserts_with_the_value, (np.float32(-1.0),)),
    (counts_then_raises_with_the_count, (np.float32(3.0),)),
    (counts_then_raises_with_the_count, (np.float32(30.0),)),
])
def test_an_error_whose_message_shows_traced_values(fn, args, tmp_path):
    # The message was made while tracing: "negative value JitTracer(~float32[])" where
    # Python says "negative value -2.0". autolax.jit now raises Python's own error (it runs
    # the function as Python on the call's arguments); plain jax.jit raises autolax's
    # `traced-message` error when the program takes that path. (What the program printed
    # before the error is printed once: the run as Python prints nothing.)
    expected = check_all_paths(fn, *args, tmp_dir=tmp_path, refusal=True)
    if expected.error is None:
        return
    with pytest.raises(type(expected.error)) as raised:
        autolax.jit(fn)(*args)
    # (the first line: pytest adds its own text to the message of an `assert` in a test module)
    assert str(raised.value).split("\n")[0] == str(expected.error).split("\n")[0]
    assert "Tracer" not in str(raised.value)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"StagedEffectError: `(raise|assert)` under a traced "
                       r"condition at .*test_python_semantics.py:\d+ makes its error from traced values"):
        jax.block_until_ready(jax.jit(autolax.convert(fn))(*args))


def raises_in_a_suppressing_with(x):
    with contextlib.suppress(ValueError):
        if x < 0:
            raise ValueError("negative")
        x = x + 1
    return x


class _SwallowsKeyErrors:
    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        return kind is not None and issubclass(kind, KeyError)


def asserts_in_a_with(x):
    with _SwallowsKeyErrors():
        assert x > 0, "positive"
    return x


@pytest.mark.parametrize("fn", [raises_in_a_suppressing_with, asserts_in_a_with])
@pytest.mark.parametrize("x", [1.0, -1.0])
def test_raise_under_a_traced_condition_in_a_with_block(fn, x, tmp_path):
    # `with contextlib.suppress(ValueError): if x < 0: raise ValueError(...)` raised
    # ValueError when the program ran (the context manager saw only autolax's staging, while
    # tracing), where Python suppresses it and returns -1.0. A context manager may suppress
    # any error: a `raise` or `assert` under a traced condition in a `with` body is refused.
    check_all_paths(fn, np.float32(x), tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"inside a `with` block, whose context manager may suppress"):
        autolax.jit(fn)(np.float32(x))


def prints_with_str_format(xs):
    total = 0.0
    for i, x in enumerate(xs):
        total += x
        if x > 2:
            print("{0:>3} {1:.2f} (total {2})".format(i, x, total))
        else:
            print("{} {:+.1f}".format(i, x))
    return total


def test_print_of_a_literal_str_format_shows_the_values(tmp_path):
    # `print("{:.2f}".format(x))` formatted the tracer while tracing: JAX's TypeError
    # ("unsupported format string passed to ...Tracer.__format__") where Python prints the
    # numbers. A literal's `format` with positional arguments is formatted when printed, as
    # an f-string is.
    expected = check_all_paths(prints_with_str_format, np.array([1.0, 2.5, -3.0], np.float32), tmp_dir=tmp_path)
    assert expected.printed == "0 +1.0\n  1 2.50 (total 3.5)\n2 -3.0\n"
# ----------------------------------------------------------------------------- lists grown by insert
def inserts_at_the_front(x):
    xs = []
    for i in range(4):
        xs.insert(0, x * i)
    return xs


def inserts_at_a_fixed_index(x):
    xs = [x, x]
    for i in range(3):
        xs.insert(2, x * i)
    return xs


def assigns_an_empty_slice_at_the_front(x):
    xs = []
    for i in range(3):
        xs[0:0] = [x * i]
    return xs


def test_a_list_grown_by_insert_in_a_staged_loop_is_not_collected_as_appends(tmp_path):
    """One traced iteration of `xs.insert(0, v)` on an empty list (or `insert(2, v)` on a
    2-item one, `xs[0:0] = [v]`) looks like an append: the loop collected the items as its
    stacked outputs, in append order -- [0, x, 2x, 3x] where Python builds [3x, 2x, x, 0]."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        for fn in (inserts_at_the_front, inserts_at_a_fixed_index, assigns_an_empty_slice_at_the_front):
            for x in (1.0, -2.5):
                check_all_paths(fn, x, tmp_dir=tmp_path)
    with pytest.warns(autolax.UnrolledLoopWarning, match="'xs' grows in the `for` loop .* which also inserts into it"):
        autolax.jit(inserts_at_the_front)(1.0)


# ----------------------------------------------------------------------------- str.format in print
def prints_a_formatted_count(x):
    n = 0
    for i in range(3):
        n += i
        x = x + n
    print("n={} x={:.1f}".format(n, x), "{0}-{0}".format(n))
    return x


def test_str_format_of_a_carried_number_in_print_shows_its_value(tmp_path):
    """`"n={}".format(n)` of a number a staged loop carries printed 'n=JitTracer(int32[])'
    where Python prints 'n=3': it is formatted when printed, as an f-string argument is."""
    check_all_paths(prints_a_formatted_count, 1.0, tmp_dir=tmp_path)


def prints_a_count_made_into_text(x):
    n = 0
    for i in range(3):
        if x > i:
            n += 1
    print("n = " + str(n))
    return n


def test_print_of_text_made_from_a_traced_value_is_refused_not_printed_as_a_tracer():
    """`print("n = " + str(n))` of a number a staged loop carries: the text is made while
    autolax traces, so it would print `n = JitTracer(int32[])` where Python prints `n = 2`.
    autolax refuses it and says how to write it (an f-string or the value itself)."""
    expected = (
        "`print` at {where} is given text made from a traced value while autolax traced it "
        "(`n = JitTracer(int32[])`): Python prints the number there.\n"
        '    print("n = " + str(n))\n'
        'Fix: give `print` the value itself or an f-string (`print("n =", n)`, `print(f"n = {{n}}")`, '
        '`print("n = {{}}".format(n))`): autolax formats those when the program runs. `str(n)`, `"%d" % n` and '
        '`"n = " + str(n)` are evaluated while tracing.')
    line = prints_a_count_made_into_text.__code__.co_firstlineno + 5
    where = f"{__file__}:{line}"
    for run in (autolax.jit(prints_a_count_made_into_text), jax.jit(autolax.convert(prints_a_count_made_into_text))):
        with pytest.raises(autolax.StagedEffectError) as info:
            run(2.0)
        assert str(info.value) == expected.format(where=where)
    assert autolax.convert(prints_a_count_made_into_text)(2.0) == 2  # no trace: Python prints the number


def repeats_a_list(x):
    xs = [x]
    for _ in range(2):
        xs *= 2
    return xs


def extends_a_list_by_itself(x):
    xs = [x, x + 1]
    for _ in range(2):
        xs += xs
    return xs


def test_a_list_repeated_in_a_staged_loop_is_not_collected_as_appends(tmp_path):
    """`xs *= 2` (or `xs += xs`) doubles the list each iteration; one traced iteration
    looked like one append, so the loop returned 3 items where Python has 4 (6 for 8)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        for fn in (repeats_a_list, extends_a_list_by_itself):
            check_all_paths(fn, 1.5, tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- array item out of bounds
def assigns_past_the_end(x):
    for i in range(3):
        x[5] = x[i]
    return x


def adds_past_the_end_of_a_row(m):
    for i in range(2):
        m[1, 3] += 1.0
        m[1, -5] += i
    return m


def test_an_item_assigned_out_of_bounds_is_numpys_index_error(tmp_path):
    """`x[5] = v` of a 4-item array given as a NumPy array raises NumPy's IndexError in
    Python; as `x.at[5].set(v)` the update was dropped silently and the call returned x."""
    check_all_paths(assigns_past_the_end, np.arange(4.0), tmp_dir=tmp_path)
    check_all_paths(adds_past_the_end_of_a_row, np.zeros((2, 4)), tmp_dir=tmp_path)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 4"):
        autolax.jit(assigns_past_the_end)(jnp.arange(4.0))
# ----------------------------------------------------------------------------- methods named like str's
class _Finder:
    def __init__(self, threshold):
        self.threshold = threshold

    def find(self, xs):  # also the name of `str.find`
        for i, x in enumerate(xs):
            if x > self.threshold:
                return i
        return -1

    def split(self, x):  # `str.split`
        if x > self.threshold:
            return x - self.threshold
        return x


def first_above(xs, t):
    finder = _Finder(t)
    return finder.find(xs), finder.split(xs[0]), _Finder(2.0).find(xs)


@pytest.mark.parametrize("xs", [jnp.array([1.0, 5.0, 2.0]), jnp.array([1.0, 2.0])])
def test_a_user_method_named_like_a_string_method_is_converted(xs, tmp_path):
    # The hunt for objects: `finder.find(xs)` was left as a library call (`find` is a method
    # of `str`), so its `if` on a traced value raised TracerBoolConversionError.
    check_all_paths(first_above, xs, jnp.float32(4.0), tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- next() of an iterator
# A staged loop's body was traced once, so `next(it)` advanced the iterator only while
# tracing: autolax.jit returned 2.0 for `iterator_next_default(2.0)` (Python: 12.0). A body
# (or test) that advances an iterator it does not own now puts it back and runs the loop as
# Python when its trip count is Python's; else autolax refuses (StagedEffectError).
def iterator_next_default(x):
    it = iter([1.0, 2.0, 3.0])
    t = x
    while True:
        v = next(it, None)
        if v is None:
            break
        t = t * v
    return t


def iterator_next_stop_iteration(x):
    it = iter([1.0, 2.0, 3.0])
    t = x
    while True:
        try:
            v = next(it)
        except StopIteration:
            break
        t = t * v
    return t


def iterator_next_in_the_test(x):
    it = iter([1.0, 2.0, 3.0])
    t = x
    while (v := next(it, None)) is not None:
        t = t * v
    return t


def iterator_next_in_a_for(x):
    it = iter([1.0, 2.0, 3.0])
    t = x
    for _ in range(2):
        t = t + next(it)
    return t


def iterator_next_of_a_zip(x):
    it = zip([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    t = x
    while True:
        p = next(it, None)
        if p is None:
            break
        t = t * p[0] + p[1]
    return t


def iterator_next_of_a_map(x):
    it = map(float, [1, 2, 3])
    t = x
    for _ in range(3):
        t = t * next(it)
    return t


def iterator_next_runs_out(x):
    it = iter([1.0, 2.0])
    t = x
    for _ in range(3):
        t = t + next(it)
    return t


def iterator_for_over_the_rest(x):
    it = iter([1.0, 2.0, 3.0])
    next(it)
    t = x
    for v in it:
        t = t * v
    return t


class _Counting:
    def __init__(self):
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.i += 1
        if self.i > 3:
            raise StopIteration
        return float(self.i)


def iterator_of_a_class(x):
    it = _Counting()
    t = x
    while True:
        v = next(it, None)
        if v is None:
            break
        t = t * v
    return t


def iterator_passed_in(x, it):
    t = x
    while True:
        v = next(it, None)
        if v is None:
            break
        t = t * v
    return t


def iterator_made_by_the_caller(x):
    return iterator_passed_in(x, iter([1.0, 2.0, 3.0]))




def _array_iterator_kind() -> str:
    """``iter`` of a JAX array while tracing: a generator up to JAX 0.10, which cannot be put
    back (refused); a tuple_iterator from 0.11, which can (the loop runs as Python)."""
    kinds = []
    jax.make_jaxpr(lambda x: kinds.append(type(iter(jnp.array([1.0, 2.0]))).__name__) or x)(0.0)
    return kinds[0]


_ARRAY_ITERATOR = _array_iterator_kind()


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")  # runs as a Python loop, correctly
@pytest.mark.parametrize("fn", [iterator_next_default, iterator_next_stop_iteration, iterator_next_in_the_test,
                                iterator_next_in_a_for, iterator_next_of_a_zip, iterator_next_of_a_map,
                                iterator_next_runs_out, iterator_for_over_the_rest, iterator_made_by_the_caller,
                                iterator_of_a_class])
def test_next_of_an_iterator_in_a_loop_is_pythons(fn, tmp_path):
    check_all_paths(fn, np.float32(2.0), tmp_dir=tmp_path)


@pytest.mark.skipif(_ARRAY_ITERATOR == "generator", reason="JAX < 0.11: iter of an array is a generator (refused, above)")
def test_next_of_an_array_iterator_that_can_be_put_back_runs_as_python(tmp_path):
    with pytest.warns(autolax.UnrolledLoopWarning, match=f"{_ARRAY_ITERATOR} 'it' is advanced"):
        assert autolax.jit(iterator_next_of_an_array)(np.float32(2.0)) == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        check_all_paths(iterator_next_of_an_array, np.float32(2.0), tmp_dir=tmp_path)


def test_next_of_an_iterator_in_a_loop_runs_it_as_python():
    with pytest.warns(autolax.UnrolledLoopWarning, match="list_iterator 'it' is advanced"):
        assert autolax.jit(iterator_next_default)(np.float32(2.0)) == 12.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        assert autolax.convert(iterator_passed_in)(np.float32(2.0), iter([1.0, 2.0, 3.0])) == 12.0


def iterator_next_traced_trip_count(x):
    it = iter([1.0, 2.0, 3.0, 4.0, 5.0])
    t = x
    while t < 10.0:
        t = t + next(it)
    return t


def iterator_next_under_a_traced_if(x):
    it = iter([1.0, 2.0])
    t = x
    if x > 0:
        t = t + next(it)
    return t + next(it)


@autolax.do_not_convert
def _three():
    yield 1.0
    yield 2.0
    yield 3.0


def iterator_next_of_a_generator(x):
    it = _three()
    t = x
    for _ in range(2):
        t = t + next(it)
    return t


def iterator_next_of_an_array(x):
    it = iter(jnp.array([1.0, 2.0, 3.0]))
    t = x
    for _ in range(2):
        t = t + next(it)
    return t


def iterator_next_of_an_enumerate(x):
    it = enumerate([1.0, 2.0, 3.0])
    t = x
    while True:
        p = next(it, None)
        if p is None:
            break
        t = t * p[1] + p[0]
    return t


@pytest.mark.parametrize("fn, kind, stmt", [
    (iterator_next_traced_trip_count, "list_iterator", "`while` loop"),  # its trip count is traced
    (iterator_next_under_a_traced_if, "list_iterator", "`if`"),
    (iterator_next_of_a_generator, "generator", "`for` loop"),  # a generator cannot be put back
    *([(iterator_next_of_an_array, "generator", "`for` loop")] if _ARRAY_ITERATOR == "generator" else []),
    (iterator_next_of_an_enumerate, "enumerate", "`while` loop"),  # nor an enumerate's count
])
def test_next_of_an_iterator_that_cannot_run_as_python_is_refused(fn, kind, stmt, tmp_path):
    check_all_paths(fn, np.float32(2.0), tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=rf"the {kind} 'it' is advanced \(`next`\) inside the {stmt} "
                       rf"at .*test_python_semantics.py:\d+, which is staged(.|\n)*Fix: take its items before the "
                       rf"statement \(`items = list\(it\)`\)"):
        autolax.jit(fn)(np.float32(2.0))
