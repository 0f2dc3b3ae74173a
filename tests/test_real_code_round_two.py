"""Issue 43 (real code, round two): programs that failed with a refusal or JAX's own error,
each compared with Python on every path (``paths.check_all_paths``: ``autolax.jit``,
``jax.jit(convert)``, ``convert`` run eagerly, the CLI's default output) and with
``--standalone`` output.

Item 9: a function that returns a value on one path and ``None`` on another (an iterative
method that prints "did not converge" and falls off the end; a ``while True:`` loop whose
only exit is a ``return``). The run that takes the ``None`` path raises autolax's
``returns-none`` error (after what Python prints before it); every other run returns
Python's value; an eager call returns Python's ``None``.
"""

from __future__ import annotations

import inspect
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import _capture, agrees, check_all_paths, run, standalone_module


def standalone_outcome(fn, *args):
    """``fn``'s source through ``--standalone`` (importing the runtime's copy), run under ``jax.jit``."""
    source = textwrap.dedent(inspect.getsource(fn))
    namespace = standalone_module(source, "m.py", namespace=fn.__globals__, only=(fn.__name__,))
    return _capture(lambda: jax.jit(namespace[fn.__name__])(*args))


def standalone_agrees(fn, *args, refusal=False):
    expected = run("python", fn, args)
    why = agrees(expected, standalone_outcome(fn, *args), "standalone", allow_refusal=refusal)
    assert why is None, f"--standalone: {why}"


# ----------------------------------------------------------------------------- item 9
def halve_until_small(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x, i
    print("did not converge")


def halve_until_small_or_none(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x
    print("did not converge after", 30, "steps")
    return None


def halve_forever(x):
    while True:
        x = x * 0.5
        if x < 1e-3:
            return x


def positive_part(x):
    if x > 0:
        return x * 2.0
    print("not positive")


def newton_sqrt(a):
    x = a
    n = 0
    while abs(x * x - a) > 1e-4 * a:
        x = 0.5 * (x + a / x)
        n += 1
        if n > 3:
            print("too many steps:", n)
            return None
    return x


CONVERGING = [(halve_until_small, 1.0), (halve_until_small, 0.3), (halve_until_small_or_none, 5.0),
              (halve_forever, 1.0), (halve_forever, 1e20), (positive_part, 3.0), (newton_sqrt, 2.0)]
NOT_CONVERGING = [(halve_until_small, 1e12), (halve_until_small_or_none, 1e12), (positive_part, -1.0),
                  (newton_sqrt, 1e6)]


@pytest.mark.parametrize("fn, x", CONVERGING, ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_run_on_the_value_path_returns_pythons_value(fn, x, tmp_path):
    # 9ef3fc4: refused on every path with StateMismatchError ("the return value is float32[]
    # in the `if` branch and None in the `else` branch"), whatever the input.
    expected = check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path)
    assert expected.value is not None
    standalone_agrees(fn, jnp.float32(x))


@pytest.mark.parametrize("fn, x", NOT_CONVERGING, ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_run_on_the_none_path_raises_autolax_error_after_pythons_prints(fn, x, tmp_path):
    expected = run("python", fn, (jnp.float32(x),))
    assert expected.error is None and expected.value is None and expected.printed
    # Eager calls are Python's: None, and what Python prints.
    eager = run("convert eagerly", fn, (jnp.float32(x),))
    assert eager.error is None and eager.value is None and eager.printed == expected.printed
    # autolax.jit: autolax's error naming the function and the `if`'s line, after the prints.
    got = run("autolax.jit", fn, (jnp.float32(x),))
    assert isinstance(got.error, autolax.RuntimeCheckError), got
    message = str(got.error)
    lines, first = inspect.getsourcelines(fn)
    (line,) = [first + k for k, text in enumerate(lines) if text.strip().startswith("if ") and "return" in
               "".join(lines[k + 1:k + 3]) and "while" not in text]
    assert f"'{fn.__name__}' returned None on this run" in message
    assert f"{__file__}:{line}" in message
    assert "Fix: return a value of one structure on every path" in message
    assert got.printed == expected.printed
    # The other paths: the same error, inside JAX's runtime error (a failed check under jax.jit).
    check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path, refusal=True, paths=("jax.jit(convert)", "cli default"))
    for path in ("jax.jit(convert)", "cli default"):
        other = run(path, fn, (jnp.float32(x),), tmp_dir=tmp_path)
        assert "RuntimeCheckError: " in str(other.error) and "returned None on this run" in str(other.error)
        assert other.printed == expected.printed
    standalone = standalone_outcome(fn, jnp.float32(x))
    assert "RuntimeCheckError: " in str(standalone.error) and standalone.printed == expected.printed


def test_the_none_path_in_a_vmapped_call_raises_only_when_a_lane_takes_it():
    jitted = autolax.jit(halve_until_small)
    values, steps = jax.vmap(jitted)(jnp.array([1.0, 0.3, 4.0], jnp.float32))
    expected = [halve_until_small(jnp.float32(v)) for v in (1.0, 0.3, 4.0)]
    np.testing.assert_allclose(values, [float(v) for v, _ in expected])
    assert steps.tolist() == [i for _, i in expected]
    with pytest.raises(autolax.RuntimeCheckError, match="returned None on this run"):
        jax.block_until_ready(jax.vmap(jitted)(jnp.array([1.0, 1e12], jnp.float32)))


def halve_until_tiny(x):
    for i in range(300):
        x = x * 0.5
        if x < 1e-30:
            return x, i
    print("did not converge")


def test_the_none_path_stages_the_loop_and_does_not_grow_with_the_trip_count():
    short = autolax.trace_check(autolax.jit(halve_until_small), jnp.float32(1.0))
    long = autolax.trace_check(autolax.jit(halve_until_tiny), jnp.float32(1.0))
    for report in (short, long):
        assert report.rows[0].became.startswith("lax.while_loop") and report.primitives.get("while") == 1
        assert report.primitives.get("cond") == 1  # the print of the None path runs only when taken
    assert short.n_equations == long.n_equations


def mixed_returns_in_a_loop(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x, i
        if x > 100.0:
            return None
    return x, 30


def test_a_none_joined_with_a_path_that_has_not_returned_is_still_refused():
    # The branch's None here comes from an inner `if` whose other side has not returned yet:
    # not the value every run of that branch returns. Still the clear StateMismatchError.
    with pytest.raises(autolax.StateMismatchError, match="the return value is"):
        autolax.jit(mixed_returns_in_a_loop)(jnp.float32(1.0))
    assert mixed_returns_in_a_loop(1e6) is None  # (Python's None, for the record)


def test_the_none_path_in_a_magic_cell():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    try:
        cell = "%%autolax\n" + textwrap.dedent(inspect.getsource(halve_until_small))
        shell.run_cell(cell).raise_error()
        step = shell.user_ns["halve_until_small"]
        value, i = step(1.0)
        assert (float(value), int(i)) == (float(halve_until_small(jnp.float32(1.0))[0]), 9)
        with capture_output() as captured:
            result = shell.run_cell("halve_until_small(1e12)")
        assert isinstance(result.error_in_exec, autolax.RuntimeCheckError)
        assert "'halve_until_small' returned None on this run" in str(result.error_in_exec)
        assert captured.stdout.startswith("did not converge")
    finally:
        shell.extension_manager.unload_extension("autolax")
        shell.reset()


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


# ----------------------------------------------------------------------------- item 15
def weighted_sum(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i
    return total


def zeros_of_length(x, n):
    out = jnp.zeros(n)
    for i in range(n):
        out = out.at[i].set(x * i)
    return out


@pytest.mark.parametrize("fn", [weighted_sum, zeros_of_length], ids=lambda f: f.__name__)
@pytest.mark.parametrize("static", [{"static_argnames": "n"}, {"static_argnums": 1}],
                         ids=["static_argnames", "static_argnums"])
@pytest.mark.parametrize("by", ["position", "keyword"])
def test_trace_check_honours_static_arguments_passed_either_way(fn, static, by):
    # 9ef3fc4: trace_check(j, 2.0, 3) of static_argnames="n" traced `n`: a report of a
    # `lax.fori_loop` where the jitted function runs `lax.scan` (weighted_sum), or JAX's
    # error (zeros_of_length: `jnp.zeros` of a traced length).
    jitted = autolax.jit(fn, **static)
    args, kwargs = ((2.0, 3), {}) if by == "position" else ((2.0,), {"n": 3})
    report = autolax.trace_check(jitted, *args, **kwargs)
    assert [row.became for row in report.rows] == ["lax.scan"]
    ran = jitted.trace(*args, **kwargs).jaxpr
    from autolax.check import count_equations, primitive_counts

    assert dict(primitive_counts(report.jaxpr.jaxpr)) == dict(primitive_counts(ran.jaxpr))
    assert report.n_equations == count_equations(ran.jaxpr)
    np.testing.assert_allclose(jitted(*args, **kwargs), fn(2.0, 3))



# ----------------------------------------------------------------------------- item 17
def set_item(x, v):
    x[1] = v
    return x


def add_to_item(x, v):
    x[1] += v
    return x


def set_slice(x, v):
    x[0:2] = v
    return x


def add_to_slice(x, v):
    x[0:2] += v
    return x


def set_items_in_a_loop(x, v):
    for i in range(x.shape[0]):
        if v > i:
            x[i] = v * i
    return x


CASTS = [(np.float32, 1.25), (np.int32, 2.7), (np.int32, -2.7), (np.int32, np.float32(-2.7)), (np.bool_, 2.5),
         (np.int32, 3)]


@pytest.mark.parametrize("fn", [set_item, add_to_item, set_slice, add_to_slice, set_items_in_a_loop],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype, v", CASTS, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_item_assignment_casts_to_the_arrays_dtype_as_numpy_does(fn, dtype, v, tmp_path):
    # 9ef3fc4: `ints[i] = 2.7` (and a float64 into a float32 array under x64) was JAX's
    # FutureWarning "scatter inputs have incompatible types" (a future error); NumPy casts.
    import warnings

    x = np.zeros(3, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        expected = check_all_paths(fn, jnp.asarray(x), v, tmp_dir=tmp_path, python_args=(x.copy(), v))
        standalone_outcome_ = standalone_outcome(fn, jnp.asarray(x), v)
        got = autolax.jit(fn)(jnp.asarray(x), v) if expected.error is None else None
    assert agrees(expected, standalone_outcome_, "standalone", allow_refusal=False) is None
    if expected.error is None:
        assert got.dtype == expected.value.dtype
        np.testing.assert_array_equal(np.asarray(got), expected.value)
    else:  # `ints[0:2] += 2.7`: NumPy's in-place ufunc refuses to cast its float output
        assert isinstance(expected.error, TypeError) and "casting rule 'same_kind'" in str(expected.error)


def test_a_float64_value_into_a_float32_array_under_x64(tmp_path):
    import subprocess
    import sys

    script = textwrap.dedent('''
        import warnings
        import jax, jax.numpy as jnp, numpy as np, autolax
        warnings.simplefilter("error")
        def f(x, v):
            x[1] = v
            x[0] += v
            x[1:] *= v
            return x
        with jax.enable_x64(True):
            expected = f(np.zeros(3, np.float32), np.float64(1.1))
            for run in (autolax.jit(f), jax.jit(autolax.convert(f))):
                got = run(jnp.zeros(3, jnp.float32), jnp.float64(1.1))
                assert got.dtype == expected.dtype == np.float32, (got.dtype, expected.dtype)
                np.testing.assert_array_equal(np.asarray(got), expected)
        print("ok")
    ''')
    path = tmp_path / "x64_cast.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
