"""The text of every user-facing error (issue 4): variable in quotes, file:line, the source
line, the rule, and a fix."""

import traceback
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths

HERE = __file__


def line_of(fn, offset):
    return fn.__code__.co_firstlineno + offset


def one_sided(x):
    if x > 0:
        y = x * 2
    return y


def test_variable_defined_on_one_side_of_traced_if(tmp_path):
    # The branch that assigns 'y' ran: Python's value, on every path.
    check_all_paths(one_sided, 1.0, tmp_dir=tmp_path)
    # The other branch ran: Python's UnboundLocalError, raised when the program runs (the
    # condition is traced), with autolax's text naming the variable and the line of the read.
    check_all_paths(one_sided, -1.0, tmp_dir=tmp_path)
    with pytest.raises(autolax.UndefinedVariableError) as info:
        autolax.jit(one_sided)(-1.0)
    assert isinstance(info.value, UnboundLocalError)
    msg = str(info.value)
    assert f"cannot access local variable 'y' where it is not associated with a value (at {HERE}:{line_of(one_sided, 3)})" in msg
    assert "an `if` whose traced condition chose the branch that does not assign it" in msg
    assert "Fix: assign 'y' before the loop or the `if` (for example y = jnp.zeros_like(...)), or on every path." in msg
    # Staged, not decided while tracing: a select on the traced condition (both sides only
    # move values), and the check's callback.
    jaxpr = str(jax.make_jaxpr(autolax.convert(one_sided))(1.0))
    assert "select_n" in jaxpr and "callback" in jaxpr


def reshaping_while(x, n):
    i = 0
    while i < n:
        x = jnp.concatenate([x, x])
        i += 1
    return x


def test_carry_changing_shape():
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(reshaping_while)(jnp.ones(2), 3)
    msg = str(info.value)
    assert (
        f"'x' is float32[2] before the loop and float32[4] after one iteration of the `while` loop "
        f"at {HERE}:{line_of(reshaping_while, 2)}" in msg
    )
    assert "    while i < n:" in msg and "Fix: give 'x' a fixed shape" in msg


def changing_structure(x, n):
    state = {"a": x}
    k = 0
    while k < n:
        state = {"a": state["a"], "b": x}
        k += 1
    return state


def test_carry_changing_structure():
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(changing_structure)(1.0, 2)
    msg = str(info.value)
    assert "'state' is {'a': float32[]} before the loop and {'a': float32[], 'b': float32[]} after one iteration" in msg
    assert f"{HERE}:{line_of(changing_structure, 3)}" in msg


def branch_shapes(x):
    if x.sum() > 0:
        y = x
    else:
        y = x[:1]
    return y


def test_branches_with_different_shapes():
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(branch_shapes)(jnp.ones(3))
    msg = str(info.value)
    assert "'y' is float32[3] in the `if` branch and float32[1] in the `else` branch of the `if`" in msg
    assert f"at {HERE}:{line_of(branch_shapes, 1)}" in msg


def none_into_loop(x):
    best = None
    while x < 10:
        if best is None or x > best:
            best = x
        x = x + 1
    return best


def test_none_entering_a_staged_loop():
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(none_into_loop)(1.0)
    msg = str(info.value)
    assert "'best' is None before the loop and float32[] after one iteration of the `while` loop" in msg
    assert "cannot carry None" in msg and "initialise 'best' before the loop" in msg


def read_before_assignment(xs):
    for x in xs:
        t = t + x  # noqa: F821 - the error under test
        t = x
    return t


def test_read_before_assignment():
    with pytest.raises(autolax.UndefinedVariableError) as info:
        autolax.jit(read_before_assignment)(jnp.arange(3.0))
    msg = str(info.value)
    assert f"cannot access local variable 't' where it is not associated with a value at {HERE}:{line_of(read_before_assignment, 2)}" in msg
    assert "t = t + x" in msg and "Fix: assign 't' before this point" in msg


def test_read_before_assignment_in_python_too():
    with pytest.raises(autolax.UndefinedVariableError):
        autolax.convert(read_before_assignment)([1.0, 2.0])


def condition_on_vector(x):
    if x > 0:
        return x
    return -x


def test_ambiguous_array_condition():
    with pytest.raises(ValueError, match=r"the condition at .*test_errors.py:\d+ is a traced array of shape \(3,\)"):
        autolax.jit(condition_on_vector)(jnp.ones(3))


# --------------------------------------------------------------------------- up front
def generator(x):
    for i in range(3):
        yield x * i


async def coroutine(x):
    return x


def walrus_in_second_operand(x, ys):
    if x > 0 and (y := ys[0]) > 0:
        return y
    return x


def match_class_pattern(p):
    match p:
        case complex(real=0):
            return 1.0
    return 0.0


def continue_in_finally(n):
    k = 0
    while k < n:
        k += 1
        try:
            if k > 1:
                return k
        finally:
            continue
    return -1


def return_in_finally(x):
    try:
        if x < 0:
            raise ValueError("negative")
    finally:
        for i in range(3):
            if i > x:
                break  # the inner loop's own: not a jump out of the finally
        return 0.0


@pytest.mark.parametrize(
    "fn,offset,col,reason,fix",
    [
        (generator, 2, 9, "`yield` makes 'generator' a generator", "return a stacked array"),
        (coroutine, 0, 1, "'coroutine' is an `async def` function", "call the async code outside"),
        (walrus_in_second_operand, 1, 19, "the assignment expression to 'y' is in an operand that Python evaluates "
         "only sometimes", "assign 'y' in a statement of its own"),
        (match_class_pattern, 2, 14, "this kind of `case` pattern (class, mapping or star pattern) is not supported",
         "write the case as an `if` / `elif` test"),
        # Python runs the `continue` and drops the `return` in flight (PEP 765): refused
        (continue_in_finally, 8, 13, "a `continue` in a `finally` block discards the exception or `return` in flight",
         "move the `continue` after the `try` statement"),
        (return_in_finally, 8, 9, "a `return` in a `finally` block discards", "move the `return` after the `try`"),
    ],
)
def test_unsupported_syntax_is_rejected_up_front(fn, offset, col, reason, fix):
    with pytest.raises(autolax.ConversionError) as info:
        autolax.convert(fn)
    err = info.value
    assert reason in err.reason
    assert err.filename == HERE
    if fn.__name__ != "inner":
        assert err.lineno == line_of(fn, offset)
        assert err.col + 1 == col
    text = str(err)
    assert text.startswith(f"{HERE}:{err.lineno}:{err.col + 1}: ")
    assert "^" in text.splitlines()[2]  # caret under the construct
    assert fix in text
    assert err.one_line().startswith(f"{HERE}:{err.lineno}:{err.col + 1}: error: ")


def test_no_source_falls_back_to_plain_jit_with_warning():
    namespace = {}
    exec("def made_by_exec(x):\n    return x * 2\n", namespace)
    fn = namespace["made_by_exec"]
    with pytest.warns(autolax.NoSourceWarning, match="could not read the source of 'made_by_exec'"):
        jitted = autolax.jit(fn)
    assert float(jitted(2.0)) == 4.0
    with pytest.raises(autolax.ConversionError, match="cannot read the source of 'made_by_exec'"):
        autolax.jit(fn, strict=True)
    # Library code is never converted: it is returned as it is (issue 15).
    assert autolax.convert(jnp.sin) is jnp.sin
    with pytest.raises(TypeError, match="expects a function or another callable"):
        autolax.convert(3.0)


def calls_generator(x):
    return sum(generator(x))


def test_unconvertible_callee_runs_as_written_with_warning():
    with pytest.warns(autolax.CallConversionWarning, match="could not convert 'generator'"):
        assert autolax.convert(calls_generator)(2.0) == 6.0


# --------------------------------------------------------------------------- tracebacks
def matmul_in_loop(xs, w):
    h = jnp.zeros(3)
    for x in xs:
        h = w @ h + x  # w has the wrong shape
    return h


def test_traceback_of_shape_error_shows_original_lines():
    with pytest.raises(TypeError) as info:
        autolax.jit(matmul_in_loop)(jnp.ones((4, 3)), jnp.ones((3, 2)))
    text = "".join(traceback.format_exception(info.value))
    assert f'File "{HERE}", line {line_of(matmul_in_loop, 3)}, in loop_body' in text
    assert "h = w @ h + x  # w has the wrong shape" in text
    assert f"autolax: raised while staging the `for` loop at {HERE}:{line_of(matmul_in_loop, 2)}" in text


def test_error_classes_document_themselves():
    for cls in (
        autolax.ConversionError,
        autolax.UndefinedVariableError,
        autolax.StateMismatchError,
        autolax.UnrolledLoopError,
        autolax.UnrolledLoopWarning,
        autolax.NoSourceWarning,
        autolax.CallConversionWarning,
    ):
        assert cls.__doc__ and len(cls.__doc__.splitlines()) >= 3, cls
    assert issubclass(autolax.UndefinedVariableError, NameError)
    assert issubclass(autolax.StateMismatchError, TypeError)


class Plain:
    """Not registered as a pytree."""

    def __init__(self, x):
        self.x = x


def doubles_plain_object(x, n):
    p = Plain(x)
    for _ in range(n):
        p.x = p.x * 2
    return p.x


def test_plain_object_holding_traced_values():
    # Static bound: the loop runs in Python (correct, but unrolled) and says why.
    with pytest.warns(autolax.UnrolledLoopWarning, match="'p' is a Plain object holding traced values"):
        assert float(autolax.jit(doubles_plain_object, static_argnums=1)(1.0, 3)) == 8.0
    # Traced bound: it cannot run in Python at all.
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(doubles_plain_object)(1.0, 3)
    assert "Fix: register Plain as a pytree" in str(info.value)


def keeps_positive(xs):
    kept = []
    for x in xs:
        if x > 0:
            kept.append(x * 2.0)
    return kept


def weighted_by_table(xs):
    table = [1.0, 2.0, 3.0]
    total = 0.0
    for i in range(3):
        total += table[i] * xs[i]
    return total


def test_unrolled_warning_shows_the_rewrite():
    xs = jnp.array([1.0, -2.0, 3.0])
    with pytest.warns(autolax.UnrolledLoopWarning) as caught:
        got = autolax.jit(weighted_by_table)(xs)
    assert float(got) == weighted_by_table([1.0, -2.0, 3.0])
    text = str(caught[0].message)
    assert "line " in text and "uses a traced value as a Python int" in text
    assert "Fix: to stage the loop, make the Python list the statement indexes an array before it" in text
    assert "Or pass strict=True to make this an error." in text


def test_strict_error_for_a_data_dependent_append_count_shows_the_rewrite():
    # Python's list has as many items as positive xs: no staged loop can give that shape.
    with pytest.raises(autolax.UnrolledLoopError) as info:
        autolax.jit(keeps_positive, strict=True)(jnp.array([1.0, -2.0, 3.0]))
    text = str(info.value)
    assert "'kept' is [float32[]] in the `if` branch and [] in the `else` branch" in text
    assert "Fix: to stage the loop, append in both branches" in text
    assert "kept_buf = kept_buf.at[kept_count].set(item); kept_count += 1    # for kept.append(item)" in text
    assert "kept_buf[:kept_count] outside jax.jit" in text
    assert text.rstrip().endswith("Or drop strict=True to accept the unrolled loop.")


def test_data_dependent_append_count_in_a_while_shows_the_rewrite():
    def halvings(x):
        out = []
        while x > 1.0:
            x = x / 2.0
            out.append(x)
        return out

    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(halvings)(10.0)
    text = str(info.value)
    assert "a `while` loop's trip count is decided at run time" in text
    assert "out_buf = jnp.zeros((N, *item_shape)); out_count = 0" in text


def returns_then_changes_in_finally(xs, ys):
    for e in xs:
        try:
            if e > 0:
                return ys, e
        finally:
            ys[0] = 1.0
    return ys, 0.0


def test_finally_changing_what_a_return_computed_is_refused():
    # Python's returned tuple holds `ys`, which the `finally` then changes in place; converted
    # code would return the value from before the change (fuzzer --focus try, seed 5177).
    with pytest.raises(autolax.ConversionError) as info:
        autolax.convert(returns_then_changes_in_finally)
    msg = str(info.value)
    assert f"{HERE}:{line_of(returns_then_changes_in_finally, 6)}" in msg
    assert "this `finally` changes an object in place after a `return` in its `try` computed the returned value" in msg
    assert "Fix: make the change before the `return`, or return a new value after the `try` statement" in msg


def returns_then_augments_in_finally(xs, n):
    try:
        if n > 2:
            return xs, n
        return -xs, n
    finally:
        xs += xs


def returns_then_augments_another_name(xs, n):
    count = 0
    try:
        return xs.sum() + n, [n]
    finally:
        count += 1
        n += 1


def test_finally_augmenting_an_array_a_return_holds_is_refused_when_it_runs(tmp_path):
    # NumPy's `xs += xs` changes the array the returned tuple holds; converted code's `+=`
    # makes a new value, so the return would keep the old one (fuzz seed 80039). Whether
    # `xs` is an array is known when the function runs: traced, autolax's error; eagerly on
    # a NumPy array, `+=` is NumPy's own, in place, and the answer Python's.
    x = np.arange(3.0)
    want = returns_then_augments_in_finally(x.copy(), 3)
    assert want[0].tolist() == [0.0, 2.0, 4.0]
    for run in (autolax.jit(returns_then_augments_in_finally), jax.jit(autolax.convert(returns_then_augments_in_finally))):
        with pytest.raises(autolax.ConversionError) as info:
            run(x.copy(), 3)
        msg = str(info.value)
        assert f"the `finally` block augments 'xs' at {HERE}:{line_of(returns_then_augments_in_finally, 6)} " in msg
        assert "after a `return` in its `try` computed a value holding it:\n    xs += xs\n" in msg
        assert "Fix: make the change before the `return`, or spell it `xs = xs <op> ...`" in msg
    got = autolax.convert(returns_then_augments_in_finally)(x.copy(), 3)
    np.testing.assert_array_equal(got[0], want[0])
    # The CLI's outputs too: autolax's error or Python's answer, never the old array.
    check_all_paths(returns_then_augments_in_finally, x, 3, python_args=(x.copy(), 3), tmp_dir=tmp_path, refusal=True)


def test_finally_augmenting_a_number_a_return_holds_is_pythons(tmp_path):
    # `n += 1` rebinds a number, in Python too: the returned `[n]` keeps the old one.
    x = np.arange(3.0)
    want = returns_then_augments_another_name(x, 2)
    assert want == (5.0, [2])
    for run in (autolax.jit(returns_then_augments_another_name), jax.jit(autolax.convert(returns_then_augments_another_name))):
        got = run(x, 2)
        assert float(got[0]) == want[0] and [int(v) for v in got[1]] == want[1]
    check_all_paths(returns_then_augments_another_name, x, 2, tmp_dir=tmp_path)


# Output other than `print` in a staged body (README, Known limitations): logging, warnings.warn
# and writes to sys.stdout run once while autolax traces the body -- also for a branch never
# taken -- so inside a staged loop body or branch they are refused; elsewhere they run as in Python.

import contextlib  # noqa: E402
import io  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402

HOST_LOG = logging.getLogger("autolax.tests.host_output")


def _logger_method(msg):
    HOST_LOG.warning(msg)


def _logging_function(msg):
    logging.warning(msg)


def _warnings_warn(msg):
    warnings.warn(msg)


def _stdout_write(msg):
    sys.stdout.write(msg + "\n")


def loop_logger(x, n):
    for i in range(n):
        HOST_LOG.warning("step")
        x = x + 1.0
    return x


def loop_logging(x, n):
    for i in range(n):
        logging.warning("step")
        x = x + 1.0
    return x


def loop_warn(x, n):
    for i in range(n):
        warnings.warn("step")
        x = x + 1.0
    return x


def loop_stdout(x, n):
    for i in range(n):
        sys.stdout.write("step\n")
        x = x + 1.0
    return x


def branch_logger(x, n):
    if x > 0:
        HOST_LOG.warning("positive")
    return x + 1.0


def branch_logging(x, n):
    if x > 0:
        logging.warning("positive")
    return x + 1.0


def branch_warn(x, n):
    if x > 0:
        warnings.warn("positive")
    return x + 1.0


def branch_stdout(x, n):
    if x > 0:
        sys.stdout.write("positive\n")
    return x + 1.0


_HOST_CALLS = {
    "logger": "the `warning` method of Logger 'autolax.tests.host_output'",
    "logging": "logging.warning",
    "warn": "warnings.warn",
    "stdout": "sys.stdout.write",
}
_STAGED_HOST = [(fn, name) for fn, name in zip(
    (loop_logger, loop_logging, loop_warn, loop_stdout, branch_logger, branch_logging, branch_warn, branch_stdout),
    list(_HOST_CALLS) * 2)]


@contextlib.contextmanager
def _host_output():
    """Everything the host calls above write: log records (HOST_LOG's and the root logger's),
    warnings and stdout, as one list of lines."""
    lines = []

    class Collect(logging.Handler):
        def emit(self, record):
            lines.append(f"log {record.name} {record.levelname} {record.getMessage()}")

    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
            yield lines
    finally:
        root.removeHandler(handler)
    lines += [f"warning {w.category.__name__} {w.message}" for w in caught]
    lines += [f"stdout {line}" for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("path", ["autolax.jit", "jax.jit(convert)", "cli default"])
@pytest.mark.parametrize(("fn", "kind"), _STAGED_HOST, ids=[fn.__name__ for fn, _ in _STAGED_HOST])
def test_host_output_in_a_staged_body_is_refused(fn, kind, path, tmp_path):
    # A traced trip count (the loop) or condition (the `if`, never taken for x = -1.0): Python
    # writes nothing for x = -1.0 and n = 0; autolax would have written once, while tracing.
    from paths import cli_function

    run = {"autolax.jit": lambda: autolax.jit(fn), "jax.jit(convert)": lambda: jax.jit(autolax.convert(fn)),
           "cli default": lambda: jax.jit(cli_function(fn, tmp_path))}[path]()
    with _host_output() as written, pytest.raises(autolax.StagedEffectError) as info:
        run(jnp.float32(-1.0), jnp.int32(0))
    assert written == []
    msg = str(info.value)
    statement = "`for` loop" if fn.__name__.startswith("loop") else "`if`"
    assert f"{_HOST_CALLS[kind]} writes output at {HERE}:{line_of(fn, 2)} inside the {statement} at {HERE}:" \
        f"{line_of(fn, 1)}, which is staged" in msg
    assert "it would run once, while autolax traces the body" in msg
    assert "Fix: use print(...), which autolax stages, or jax.debug.callback(...)" in msg


def top_level_host(x):
    HOST_LOG.warning("start")
    logging.warning("root start")
    warnings.warn("careful")
    sys.stdout.write("written\n")
    sys.stderr.write("")
    return x * 2.0


def python_loop_host(x):
    for name in ["a", "b"]:
        HOST_LOG.warning("name %s", name)
        logging.warning("root %s", name)
        warnings.warn(f"warn {name}")
        sys.stdout.write(f"out {name}\n")
        x = x + 1.0
    return x


def static_range_host(x):
    for i in range(3):  # staging refused (host output): runs as a Python loop instead
        sys.stdout.write("step\n")
        HOST_LOG.warning("step")
        x = x * 2.0
    return x


def calls_a_logging_helper(x):
    for name in ["a", "b"]:
        _logger_method(name)
        _logging_function(name)
        _warnings_warn(name)
        _stdout_write(name)
    return x + 1.0


@pytest.mark.parametrize("fn", [top_level_host, python_loop_host, static_range_host, calls_a_logging_helper])
@pytest.mark.parametrize("path", ["autolax.jit", "jax.jit(convert)", "convert eagerly", "cli default"])
def test_host_output_outside_staged_bodies_runs_as_python(fn, path, tmp_path):
    from paths import cli_function

    with _host_output() as expected:
        want = fn(1.0)
    assert expected  # the calls wrote something
    run = {"autolax.jit": lambda: autolax.jit(fn), "jax.jit(convert)": lambda: jax.jit(autolax.convert(fn)),
           "convert eagerly": lambda: autolax.convert(fn),
           "cli default": lambda: jax.jit(cli_function(fn, tmp_path))}[path]()
    with _host_output() as written:
        got = run(jnp.float32(1.0))
    assert float(got) == want
    assert written == expected


def test_host_output_through_a_called_function_in_a_staged_branch_is_refused():
    def f(x):
        if x > 0:
            _logging_function("positive")
        return x

    with pytest.raises(autolax.StagedEffectError) as info:
        autolax.jit(f)(-1.0)
    assert f"logging.warning writes output at {HERE}:{line_of(_logging_function, 1)}" in str(info.value)


# ----------------------------------------------------------------------------- tracer errors
# JAX's tracer error raised by a function's own statements (no staged statement around them)
# while JAX traces it: autolax's TracedValueError naming the line, the argument the value
# depends on and a fix, JAX's error as its cause (real programs: Newton's `float(x0)`, a
# Dijkstra's `dist[s] = 0`, `jnp.argwhere`, a slice with traced bounds).
def newton_step(f, x0):
    x = complex(x0)
    return x - f(x) / 2.0


def halve(x):
    return x / 2.0


def mark_visited(weights, s):
    seen = [0.0, 0.0, 0.0]
    seen[s] = 1.0
    return weights * seen[0]


def first_peak(x):
    return jnp.argwhere(x == jnp.max(x)).min()


def calls_first_peak(x):
    return first_peak(x) + 1


def window_sum(xs, i):
    # (a mean needs the slice's length: a sum of it is computed under a mask, see
    # tests/runtime/test_slices.py)
    j = i + 1 if i < 2 else i
    return jnp.mean(xs[i:j + 1])


def halving_search(arr, key):
    lo = 0
    hi = len(arr)
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if arr[mid] <= key:
            lo = mid
        else:
            hi = mid
    return lo


def _jit_paths(fn, static_argnums=(), tmp_path=None):
    """The paths where autolax controls the trace: ``autolax.jit``, ``jax.jit`` of
    ``autolax.convert`` and of the CLI's default output (``--standalone``: ``test_every_path_names_the_source_line``)."""
    from paths import cli_function

    yield "autolax.jit", autolax.jit(fn, static_argnums=static_argnums)
    yield "jax.jit(convert)", jax.jit(autolax.convert(fn), static_argnums=static_argnums)
    yield "cli default", jax.jit(cli_function(fn, tmp_path), static_argnums=static_argnums)


def test_float_of_a_traced_argument_is_traced_value_error(tmp_path):
    check_all_paths(newton_step, halve, jnp.float32(3.0), static_argnums=(0,), tmp_dir=tmp_path, refusal=True)
    for path, jitted in _jit_paths(newton_step, (0,), tmp_path):
        with pytest.raises(autolax.TracedValueError) as info:
            jitted(halve, jnp.float32(3.0))
        message = str(info.value)
        assert "needs the concrete value of a traced expression (`complex()` of a traced value) while JAX traces " \
               "the function; the value depends on the argument 'x0', which is traced" in message, path
        assert "\n    x = complex(x0)\n" in message, path
        assert "Fix: compute with jnp in place of the Python builtin: `jnp.asarray(v, dtype=complex)` for " \
               "`complex(v)`; or mark 'x0' static (`static_argnames=('x0',)`" in message, path
        assert isinstance(info.value.__cause__, jax.errors.ConcretizationTypeError), path
        assert f"the statement at {HERE}:{line_of(newton_step, 1)} " in message, path
    # Outside jit, Python's answer.
    assert autolax.convert(newton_step)(halve, 3.0) == newton_step(halve, 3.0) == 2.25


def test_a_python_list_indexed_with_a_traced_argument_is_traced_value_error(tmp_path):
    check_all_paths(mark_visited, jnp.float32(2.0), 1, tmp_dir=tmp_path, refusal=True)
    for path, jitted in _jit_paths(mark_visited, (), tmp_path):
        with pytest.raises(autolax.TracedValueError) as info:
            jitted(jnp.float32(2.0), 1)
        message = str(info.value)
        assert "uses a traced value as a Python int (e.g. indexes a Python list with it) while JAX traces the " \
               "function; the value depends on the argument 's', which is traced" in message, path
        assert "Fix: make the Python list the statement indexes an array before it (`table = jnp.asarray(table)`" \
               in message, path
        assert "or mark 's' static (`static_argnames=('s',)`" in message, path
        assert isinstance(info.value.__cause__, jax.errors.TracerIntegerConversionError), path
        assert f"the statement at {HERE}:{line_of(mark_visited, 2)} " in message, path
        assert "\n    seen[s] = 1.0\n" in message, path


def test_a_data_dependent_shape_in_a_called_function_names_its_line(tmp_path):
    x = jnp.array([1.0, 3.0, 2.0])
    check_all_paths(calls_first_peak, x, tmp_dir=tmp_path, refusal=True)
    for path, jitted in _jit_paths(calls_first_peak, (), tmp_path):
        with pytest.raises(autolax.TracedValueError) as info:
            jitted(x)
        message = str(info.value)
        assert "needs the concrete value of a traced expression (`jnp.nonzero` without a static `size=`: its " \
               "result's shape would depend on data)" in message, path
        # the innermost line of the user's code: the callee's (the CLI's outputs convert the
        # callee with it, and run with the source's lines: issue 43 item 16)
        assert f"the statement at {HERE}:{line_of(first_peak, 1)} needs" in message, path
        assert "Fix: give the function a static `size=` (`jnp.argwhere(c, size=k)`" in message, path


def test_a_slice_with_traced_bounds_among_the_functions_statements(tmp_path):
    xs = jnp.arange(4.0)
    check_all_paths(window_sum, xs, 1, tmp_dir=tmp_path, refusal=True)
    for path, jitted in _jit_paths(window_sum, (), tmp_path):
        with pytest.raises(autolax.TracedValueError) as info:
            jitted(xs, 1)
        message = str(info.value)
        assert "slices an array with traced bounds (the slice's length would depend on data) while JAX traces the " \
               "function" in message, path
        assert "Fix: slice with `lax.dynamic_slice(xs, (i,), (size,))` (a fixed `size`)" in message, path
        assert isinstance(info.value.__cause__, IndexError), path
    assert float(autolax.jit(window_sum, static_argnums=1)(xs, 1)) == 1.5  # the fix: a static bound


def scaled_by_itself(x):
    # `int(x)` and `float(x)` of a traced number are staged (ops.int / ops.float):
    # `complex(x)` is not
    return x * complex(x)


def positives_doubled(xs):
    return sum([x * 2 for x in xs if x > 0])


def as_hex(n):
    return hex(n)


def test_every_path_says_so_in_a_function_that_stages_nothing(tmp_path):
    # A function that stages no check is decorated `@ops.function` (its wrapper's `try` costs
    # nothing until an error is raised): JAX's tracer error leaving its own statements is
    # autolax's TracedValueError under plain jax.jit too (was JAX's error).
    assert autolax.to_source(scaled_by_itself).startswith("@ops.function\ndef scaled_by_itself(x):\n")
    assert autolax.to_source(scaled_by_itself).endswith("\n    return x * complex(x)\n")
    cases = [
        (scaled_by_itself, jnp.float32(2.0), 3, "(`complex()` of a traced value)", jax.errors.ConcretizationTypeError),
        (positives_doubled, jnp.arange(3.0), 1, "uses a traced value as a Python bool",
         jax.errors.TracerBoolConversionError),
        (as_hex, jnp.int32(4), 1, "uses a traced value as a Python int", jax.errors.TracerIntegerConversionError),
    ]
    for fn, arg, line, says, cause in cases:
        check_all_paths(fn, arg, tmp_dir=tmp_path, refusal=True)
        for path, jitted in _jit_paths(fn, (), tmp_path):
            with pytest.raises(autolax.TracedValueError) as info:
                jitted(arg)
            assert says in str(info.value), (fn.__name__, path)
            assert isinstance(info.value.__cause__, cause), (fn.__name__, path)
            assert f"the statement at {HERE}:{line_of(fn, line)} " in str(info.value), (fn.__name__, path)
    # Run as Python (no trace), the function is the user's: Python's value, Python's errors.
    assert autolax.convert(scaled_by_itself)(3.0) == 9.0
    assert autolax.convert(as_hex)(4) == as_hex(4) == "0x4"
    with pytest.raises(ValueError, match="complex\\(\\) arg is a malformed string"):
        autolax.convert(scaled_by_itself)("a")


def test_an_error_inside_a_staged_statement_is_named_by_the_statement(tmp_path):
    # A callee that stages nothing, called inside a staged loop body: the loop names the
    # error (its context says why a Python value was needed), not the callee's `try`.
    def caller(xs):
        total = 0.0
        for x in xs:
            total = total + scaled_by_itself(x)
        return total

    with pytest.raises(autolax.TracedValueError, match=r"the `for` loop at .* is staged .*`complex\(\)` of a "
                       r"traced value"):
        jax.jit(autolax.convert(caller))(jnp.arange(3.0))


def test_autolax_jit_and_trace_check_say_so_in_any_function():
    # autolax.jit and trace_check, which run the trace, translate JAX's error whatever the
    # function's body holds.
    with pytest.raises(autolax.TracedValueError, match=rf"the statement at {HERE}:{line_of(scaled_by_itself, 3)} "
                       r"needs the concrete value of a traced expression \(`complex\(\)` of a traced value\) while "
                       r"JAX traces the function; the value depends on the argument 'x'"):
        autolax.jit(scaled_by_itself)(jnp.float32(2.0))
    with pytest.raises(autolax.TracedValueError, match=r"`complex\(\)` of a traced value"):
        autolax.trace_check(scaled_by_itself, 2.0)
    with pytest.raises(autolax.TracedValueError, match=r"`complex\(\)` of a traced value"):
        autolax.trace_check(autolax.jit(newton_step, static_argnums=0), halve, 3.0)


def any_negative(xs):
    if any(x < 0 for x in xs):
        return 1
    return 0


def all_positive_rows(xs):
    return all(row.sum() > 0 for row in xs)


def test_any_and_all_of_a_generator_of_traced_values_say_so(tmp_path):
    # `any` / `all` of a generator ask Python's truth of each item as it comes (autolax
    # stages them for lists, tuples and arrays only): autolax's error naming the line and the
    # rewrite on every path, where `jax.jit` of the converted function gave JAX's
    # TracerBoolConversionError.
    xs = np.array([1.5, -2.0, 3.0], np.float32)
    check_all_paths(any_negative, xs, tmp_dir=tmp_path, refusal=True)
    check_all_paths(all_positive_rows, np.ones((2, 3), np.float32), tmp_dir=tmp_path, refusal=True)
    for fn, name, arg in ((any_negative, "any", xs), (all_positive_rows, "all", np.ones((2, 3), np.float32))):
        for path, jitted in _jit_paths(fn, (), tmp_path):
            with pytest.raises(autolax.TracedValueError) as info:
                jitted(arg)
            message = str(info.value)
            assert "uses a traced value as a Python bool while JAX traces the function; the value depends on the " \
                   "argument 'xs', which is traced" in message, path
            assert f"Fix: give `{name}` a list (`{name}([x > 0 for x in xs])`: autolax stages `any` / `all` of a " \
                   f"list holding traced values) or test an array (`jnp.{name}(xs > 0)`)" in message, path
            assert isinstance(info.value.__cause__, jax.errors.TracerBoolConversionError), path
            assert f"the statement at {HERE}:{line_of(fn, 1)} " in message, path
    # The rewrite the message gives: Python's answer.
    def any_negative_of_a_list(xs):
        return any([x < 0 for x in xs])

    check_all_paths(any_negative_of_a_list, xs, tmp_dir=tmp_path)
    assert autolax.convert(any_negative)(xs) == any_negative(xs) == 1


def own_type_error(x):
    if isinstance(x, jax.Array):
        raise TypeError("expected a Python number")
    return x


def test_errors_python_raises_are_unchanged(tmp_path):
    # The function's own TypeError stays itself on every path.
    check_all_paths(own_type_error, jnp.float32(1.0), tmp_dir=tmp_path)
    with pytest.raises(TypeError, match="expected a Python number") as info:
        autolax.jit(own_type_error)(jnp.float32(1.0))
    assert not isinstance(info.value, autolax.AutolaxError)


def test_a_while_loop_that_cannot_be_staged_says_why_first(tmp_path):
    # Issue 34 item 11: was "make the loop's carried values keep one shape", while the cause
    # is a Python list indexed by a traced value.
    arr = [1, 3, 5, 7, 9, 11]
    check_all_paths(halving_search, arr, 7, tmp_dir=tmp_path, refusal=True)
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(halving_search)(arr, 7)
    message = str(info.value)
    assert message.startswith(f"the `while` loop at {HERE}:{line_of(halving_search, 3)} cannot be staged: line "
                              f"{line_of(halving_search, 5)} uses a traced value as a Python int (e.g. indexes a "
                              "Python list with the loop index). It cannot run as a Python loop instead either: its "
                              "condition became traced after 1 iteration(s).")
    assert "Fix: make the Python list the statement indexes an array before it (`table = jnp.asarray(table)`" \
           in message
    assert "carried values keep one shape" not in message
    assert isinstance(info.value.__cause__, jax.errors.TracerIntegerConversionError)


# ----------------------------------------------------------------------------- the source's lines on every path
# (issue 43 item 16) A file `autolax convert` writes has lines of its own; its last line,
# `ops.source_lines(...)`, gives its functions the source's lines, so that an error raised
# among a function's own statements names the user's file and line on every path, as
# `autolax.jit` (which compiles with the source's lines) does.
def int_of_a_traced_argument(x):
    y = x * 2.0
    n = complex(y)  # (`int(y)` is staged: ops.int)
    return y + n


def loop_converting_each_item(xs, n):
    total = 0.0
    for i in range(n):
        total = total * complex(xs[i])
    for i in range(n):  # (the same line again: the written file's text alone cannot say which)
        total = total * complex(xs[i])
    return total


def reads_a_list_at(x, k):
    table = [1.0, 2.0, 3.0]
    return table[k] * x


def calls_reads_a_list_at(x, k):
    y = x + 1.0
    return reads_a_list_at(y, k) * 2.0


def picks_of_two_shapes(x):
    y = x * 2.0
    z = y if x > 0 else jnp.zeros(3)
    return z


def splits_into_groups(x, groups):
    total = x * 0.0
    size = 6 // groups
    return total + size


def _every_line_path(fn, tmp_path, static_argnums=()):
    from paths import cli_function

    yield "autolax.jit", autolax.jit(fn, static_argnums=static_argnums)
    yield "cli default", jax.jit(cli_function(fn, tmp_path), static_argnums=static_argnums)
    yield "cli standalone", jax.jit(cli_function(fn, tmp_path, standalone=True), static_argnums=static_argnums)


@pytest.mark.parametrize(("fn", "args", "static", "kind", "where", "source", "says"), [
    # a TracedValueError from `complex()` of a traced value in a plain statement
    (int_of_a_traced_argument, (jnp.float32(2.0),), (), "TracedValueError", (int_of_a_traced_argument, 2),
     "n = complex(y)  # (`int(y)` is staged: ops.int)", "(`complex()` of a traced value)"),
    # a refusal inside a staged loop's body: the loop, and the body's line (was "the body")
    (loop_converting_each_item, (jnp.arange(3.0), jnp.int32(3)), (), "TracedValueError",
     (loop_converting_each_item, 2), "for i in range(n):", f"line {line_of(loop_converting_each_item, 3)} needs"),
    # inside a callee of the same file, which the CLI converts with its caller
    (calls_reads_a_list_at, (jnp.float32(2.0), jnp.int32(1)), (), "TracedValueError", (reads_a_list_at, 2),
     "return table[k] * x", "uses a traced value as a Python int"),
    # a conditional expression (its site is found from the calling frame)
    (picks_of_two_shapes, (jnp.float32(1.0),), (), "StateMismatchError", (picks_of_two_shapes, 2),
     "z = y if x > 0 else jnp.zeros(3)", "float32[] in the `if` branch and float32[3] in the `else` branch"),
])
def test_every_path_names_the_source_line(fn, args, static, kind, where, source, says, tmp_path):
    from paths import is_autolax_error

    messages = {}
    for path, jitted in _every_line_path(fn, tmp_path, static):
        with pytest.raises(Exception) as info:  # noqa: PT011 - the class is checked by name (the copy's own)
            jitted(*args)
        assert type(info.value).__name__ == kind and is_autolax_error(info.value), (path, info.value)
        message = str(info.value)
        assert f" at {HERE}:{line_of(*where)}" in message, (path, message)
        assert f"\n    {source}\n" in message, (path, message)
        assert says in message, (path, message)
        messages[path] = message.split("\n--------------------")[0]  # (JAX's note on its frames)
    assert messages["cli default"] == messages["cli standalone"] == messages["autolax.jit"]


def test_every_path_s_traceback_names_the_source_line(tmp_path):
    # Python's own exception (a Python int divided by a static 0): the traceback's frame of
    # the user's function is the source's file and line, with its text.
    line = line_of(splits_into_groups, 2)
    for path, jitted in _every_line_path(splits_into_groups, tmp_path, static_argnums=(1,)):
        with pytest.raises(ZeroDivisionError) as info:
            jitted(jnp.float32(1.0), 0)
        frames = [(f.filename, f.lineno, f.line) for f in traceback.extract_tb(info.value.__traceback__)]
        assert (HERE, line, "size = 6 // groups") in frames, (path, frames)
    assert int(autolax.jit(splits_into_groups, static_argnums=1)(jnp.float32(1.0), 2)) == 3
