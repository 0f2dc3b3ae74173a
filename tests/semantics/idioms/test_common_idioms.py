"""Ordinary Python idioms from real programs (issue 34, items 1, 2, 3, 6 and 9), each compared
with Python on every path (``paths.check_all_paths``) and, for items 1, 2, 3 and 6, with
``--standalone`` output (Python's answer, or its refusal in the runtime's words).

Each test failed on 9646ae6: ``is False`` of a flag a staged ``if`` set returned after one
iteration; a method of a local class read a stale loop variable; ``range`` with a step of 0
ran no iteration; ``x in [24, 12]`` of a traced ``x`` was JAX's ``TracerBoolConversionError``;
an ``if`` of a one-element array was refused as having "more than one element".
"""

import inspect
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import Outcome, _capture, agrees, check_all_paths, run, standalone_module


def standalone_agrees(fn, *args, static=()):
    """``fn``'s source through ``--standalone`` (importing the runtime's copy), run under
    ``jax.jit`` with ``static`` as ``static_argnames``: Python's outcome, or autolax's
    refusal -- never a wrong answer or JAX's own error."""
    source = textwrap.dedent(inspect.getsource(fn))
    expected = run("python", fn, args)
    namespace = standalone_module(source, "m.py", namespace=fn.__globals__, only=(fn.__name__,))
    names = list(inspect.signature(fn).parameters)
    jitted = jax.jit(namespace[fn.__name__], static_argnums=[names.index(s) for s in static])
    got = _capture(lambda: jitted(*args))
    why = agrees(expected, got, "standalone")
    assert why is None, f"--standalone: {why}"


# ----------------------------------------------------------------------------- item 1: `is` / `is not`
def doubles_until_done(x):
    done = False
    n = 0
    while done is False:
        x = x * 2.0
        n += 1
        if x > 100.0:
            done = True
    return x, n


def doubles_until_not_running(x):
    running = True
    n = 0
    while running is not False:
        x = x * 2.0
        n += 1
        if x > 100.0:
            running = False
    return x, n


def flag_is_true_after_an_if(x):
    found = None
    found = False
    if x > 1.0:
        found = True
    if found is True:
        return x + 1.0
    return x - 1.0


@pytest.mark.parametrize("fn, x", [(doubles_until_done, 1.0), (doubles_until_done, 200.0),
                                   (doubles_until_not_running, 3.0), (flag_is_true_after_an_if, 2.0),
                                   (flag_is_true_after_an_if, 0.5)])
def test_identity_of_a_flag_bound_only_to_literals(fn, x, tmp_path):
    # 9646ae6: doubles_until_done(1.0) returned (2.0, 1) where Python returns (128.0, 7), with
    # an UnrolledLoopWarning saying "The result is correct".
    with warnings.catch_warnings():
        warnings.simplefilter("error", autolax.UnrolledLoopWarning)
        check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path)
    standalone_agrees(fn, jnp.float32(x))


def test_identity_of_a_flag_is_a_staged_loop():
    report = autolax.trace_check(doubles_until_done, jnp.float32(1.0))
    assert "lax.while_loop" in str(report)


def computed_flag_is_false(x):
    done = False
    n = 0
    while done is False and n < 20:
        x = x * 2.0
        n += 1
        done = x > 100.0
    return x, n


def two_traced_values_are_one(x, y):
    if x is y:
        return 1.0
    return 2.0


def traced_value_is_none(x):
    if x is None:
        return 0.0
    return x + 1.0


@pytest.mark.parametrize("fn, args", [(computed_flag_is_false, (1.0,)), (two_traced_values_are_one, (1.0, 2.0))])
def test_identity_of_another_traced_value_is_refused(fn, args, tmp_path):
    # Python's `done is False` after `done = x > 100.0` depends on the object (a NumPy or JAX
    # bool is never `False`): refused, never answered from the tracer.
    args = tuple(jnp.float32(a) for a in args)
    check_all_paths(fn, *args, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(fn)(*args)
    text = str(info.value)
    assert "test_common_idioms.py:" in text and "tests the identity of an operand, which is traced:" in text
    assert "Fix: compare values instead" in text
    standalone_agrees(fn, *args)


def test_identity_refusal_names_the_flag_and_the_line():
    def flag_from_a_loop(x):
        done = False
        while done is False:
            x = x * 2.0
            done = jnp.float32(1.0)  # not a literal: the flag is a number
            if x > 100.0:
                done = True
        return x

    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(flag_from_a_loop)(jnp.float32(1.0))
    text = str(info.value)
    assert "`done is False` at " in text and "test_common_idioms.py:" in text


_MISSING = object()
_MODE = "mode"


def default_unless_given(x, scale=_MISSING):
    if scale is _MISSING:
        scale = 2.0
    if _MODE is not scale:
        x = x * scale
    return x


def test_a_traced_value_is_never_none(tmp_path):
    check_all_paths(traced_value_is_none, jnp.float32(1.0), tmp_dir=tmp_path)
    standalone_agrees(traced_value_is_none, jnp.float32(1.0))


@pytest.mark.parametrize("args", [(1.5,), (1.5, 3.0)])
def test_a_traced_value_is_no_sentinel_object(args, tmp_path):
    # A traced value stands for an array or a number: never an `object()` or a string.
    check_all_paths(default_unless_given, *(jnp.float32(a) for a in args), tmp_dir=tmp_path)


def identity_of_python_values(n):
    marker = None
    count = 0
    for i in range(n):
        if marker is None:
            marker = i
        if marker is not i:
            count += 1
    return count, marker is None


def test_identity_of_python_values_is_pythons(tmp_path):
    check_all_paths(identity_of_python_values, 4, static_argnums=(0,), tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- item 2: methods of a local class
def method_reads_the_loop_variable(n):
    i = 0

    class Callable:
        def __call__(self):
            return i

    c = Callable()
    s = 0
    while i < n:
        s = s * 10 + c()
        i += 1
    return s


def method_reads_a_variable_a_for_loop_assigns(xs):
    scale = 1.0

    class Scaler:
        def apply(self, v):
            return v * scale

    total = 0.0
    for x in xs:
        total = total + Scaler().apply(x)
        scale = scale * 2.0
    return total


@pytest.mark.parametrize("n", [0, 2, 3])
def test_method_of_a_local_class_reads_the_current_value(n, tmp_path):
    # 9646ae6: 0 for n = 2 on every path (Python: 1), also with a Python int n (the loop ran
    # as Python and still read a stale i).
    check_all_paths(method_reads_the_loop_variable, n, tmp_dir=tmp_path)
    check_all_paths(method_reads_the_loop_variable, jnp.int32(n), tmp_dir=tmp_path)
    standalone_agrees(method_reads_the_loop_variable, jnp.int32(n))


def test_method_of_a_local_class_in_a_staged_for_loop(tmp_path):
    xs = jnp.array([1.0, 2.0, 3.0], jnp.float32)
    check_all_paths(method_reads_a_variable_a_for_loop_assigns, xs, tmp_dir=tmp_path)
    standalone_agrees(method_reads_a_variable_a_for_loop_assigns, xs)


# ----------------------------------------------------------------------------- item 3: range step 0
def sum_of_range(a, b, c):
    t = 0
    for i in range(a, b, c):
        t += i
    return t


def sum_of_a_range_object(a, b, c):
    r = range(a, b, c)
    t = 0
    for i in r:
        t += i
    return t


@pytest.mark.parametrize("fn", [sum_of_range, sum_of_a_range_object])
@pytest.mark.parametrize("step", [0, 2, -1])
def test_range_with_a_static_step(fn, step, tmp_path):
    # 9646ae6: autolax.jit(f, static_argnums=2)(0, 5, 0) returned 0; Python raises ValueError.
    check_all_paths(fn, jnp.int32(0), jnp.int32(5), step, static_argnums=(2,), tmp_dir=tmp_path)
    standalone_agrees(fn, jnp.int32(0), jnp.int32(5), step, static=("c",))


@pytest.mark.parametrize("fn", [sum_of_range, sum_of_a_range_object])
@pytest.mark.parametrize("step", [0, 2, -1])
def test_range_with_a_traced_step(fn, step, tmp_path):
    # 9646ae6: a traced step of 0 returned 0 on every jitted path.
    check_all_paths(fn, jnp.int32(0), jnp.int32(5), jnp.int32(step), tmp_dir=tmp_path)
    standalone_agrees(fn, jnp.int32(0), jnp.int32(5), jnp.int32(step))


def test_a_traced_step_of_zero_raises_pythons_value_error_itself():
    with pytest.raises(ValueError, match=r"^range\(\) arg 3 must not be zero$"):
        autolax.jit(sum_of_range)(jnp.int32(0), jnp.int32(5), jnp.int32(0))


def range_in_a_try(a, b, c):
    t = 0
    try:
        for i in range(a, b, c):
            t += i
    except ValueError:
        t = -1
    return t


def test_a_traced_step_inside_a_try_that_catches_value_error_is_refused(tmp_path):
    check_all_paths(range_in_a_try, 0, 5, 0, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.StagedEffectError, match=r"the `range\(\)` at .*test_common_idioms.py:\d+ has a "
                                                          r"traced step and is inside a `try` that catches ValueError"):
        autolax.jit(range_in_a_try)(jnp.int32(0), jnp.int32(5), jnp.int32(1))
    assert autolax.jit(range_in_a_try, static_argnums=2)(jnp.int32(0), jnp.int32(5), 0) == -1


# ----------------------------------------------------------------------------- item 6: membership in a list or tuple display
def in_a_list_display(x):
    if x in [24, 12]:
        return x + 1
    return x - 1


def not_in_a_tuple_display(x, fa, fb):
    fc = x * 2.0
    if fc not in (fa, fb):
        return fc
    return -fc


def in_a_display_in_a_loop(xs):
    hits = 0
    for x in xs:
        if x in (1.0, 3.0):
            hits += 1
    return hits


def shown(v):
    print("item", v)
    return v


def display_evaluated_once(x):
    return x in [shown(x + 1.0), shown(x)]


@pytest.mark.parametrize("x", [24, 12, 5])
def test_membership_in_a_list_display(x, tmp_path):
    # 9646ae6: JAX's TracerBoolConversionError on every jitted path.
    check_all_paths(in_a_list_display, jnp.int32(x), tmp_dir=tmp_path)
    standalone_agrees(in_a_list_display, jnp.int32(x))


@pytest.mark.parametrize("x", [1.0, 1.5, 2.0])
def test_membership_in_a_tuple_display(x, tmp_path):
    args = (jnp.float32(x), jnp.float32(2.0), jnp.float32(3.0))
    check_all_paths(not_in_a_tuple_display, *args, tmp_dir=tmp_path)
    standalone_agrees(not_in_a_tuple_display, *args)


def test_membership_in_a_display_inside_a_loop(tmp_path):
    # 9646ae6: TracedValueError in a loop, with a Fix that did not apply.
    xs = jnp.array([1.0, 2.0, 3.0, 3.0], jnp.float32)
    check_all_paths(in_a_display_in_a_loop, xs, tmp_dir=tmp_path)
    standalone_agrees(in_a_display_in_a_loop, xs)
    assert "lax.scan" in str(autolax.trace_check(in_a_display_in_a_loop, xs))


def test_a_display_is_evaluated_once(tmp_path):
    # Each item once, before the search, as Python builds the list: two prints, not four.
    assert check_all_paths(display_evaluated_once, jnp.float32(2.0), tmp_dir=tmp_path).printed.count("item") == 2


def vector_in_a_display(x, y):
    if x in [y, y + 1.0]:
        return 1.0
    return 2.0


def test_membership_of_a_vector_in_a_display_is_refused_with_a_fix_that_applies(tmp_path):
    args = (jnp.ones((2,), jnp.float32), jnp.zeros((2,), jnp.float32))
    check_all_paths(vector_in_a_display, *args, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedComparisonError) as info:
        autolax.jit(vector_in_a_display)(*args)
    text = str(info.value)
    assert "'[y, y + 1.0]' is searched for a value at " in text and "test_common_idioms.py:" in text
    assert text.endswith("Fix: compare with jnp: `jnp.any(jnp.stack([y, y + 1.0]) == x)` for `x in [y, y + 1.0]` "
                         "(items of one shape).")
    standalone_agrees(vector_in_a_display, *args)


# ----------------------------------------------------------------------------- item 9: size-1 conditions
def branch_on(x):
    if x:
        return 1.0
    return 2.0


def loop_while(x):
    n = 0
    while x:
        x = x - 1.0
        n += 1
    return n


@pytest.mark.parametrize("shape", [(1,), (1, 1, 1)])
@pytest.mark.parametrize("value", [0.0, 1.0])
def test_a_one_element_array_is_a_condition(shape, value, tmp_path):
    # 9646ae6: ArrayConditionError "the truth value of an array with more than one element".
    x = jnp.full(shape, value, jnp.float32)
    check_all_paths(branch_on, x, tmp_dir=tmp_path)
    check_all_paths(loop_while, x * 3.0, tmp_dir=tmp_path)


def test_an_empty_array_as_a_condition_says_what_python_says(tmp_path):
    x = jnp.zeros((0,), jnp.float32)
    check_all_paths(branch_on, x, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.ArrayConditionError) as info:
        autolax.jit(branch_on)(x)
    text = str(info.value)
    assert "is a traced array of shape (0,); the truth value of an empty array is ambiguous" in text
    assert "more than one element" not in text and "test_common_idioms.py:" in text
    assert isinstance(info.value, ValueError)


def test_an_array_of_several_elements_is_still_refused():
    with pytest.raises(autolax.ArrayConditionError, match="more than one element"):
        autolax.jit(branch_on)(jnp.ones((2,), jnp.float32))
