"""Changes a helper makes to its arguments reach the caller (issue 43, items 1, 3 and 12).

Python passes objects by reference: ``swap(b, 0, p)`` changes the caller's NumPy array.
Converted code updates a JAX array as a value, so a converted helper that writes into a
parameter hands its final value back (``ops.hand_back``) and the call site rebinds the
caller's name (``ops.call_writing``: ``passes/writeback.py``). Where autolax cannot follow
the array, it raises ``ArgumentWriteError`` -- never the old value.

Every case runs the module below as Python (NumPy arrays, fresh for each run) and through
every path: ``autolax.jit``, ``jax.jit(autolax.convert(f))``, ``autolax.convert(f)`` eagerly
on NumPy arrays (which must then be changed in place as Python changes them), the CLI's
default output (the file converted with ``--only`` the function, and with ``--all``) and
``--standalone`` output (the same two ways), each run under ``jax.jit``; ``%%autolax`` at the
end.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.cli import Options, convert_source
from paths import _capture, agrees, is_autolax_error, runtime_copy_folder

SOURCE = textwrap.dedent('''
    import sys
    import jax
    import jax.numpy as jnp
    import numpy as np


    def set0(v, i):
        v[i] = 0.0


    def swap(v, i, j):
        v[i], v[j] = v[j], v[i]


    def f(b):
        set0(b, 1)
        return b


    def given_copies(b):
        # a helper's writes into a value the call made (a copy, an operator's result) are
        # lost in Python too: the caller's array stays as it was
        set0(b.copy(), 1)
        doubles_first(-b)
        r = returns_what_it_wrote(b * 1.0)
        return b, r


    def returns_what_it_wrote(v):
        v[0] = 7.0
        return v


    def g(b, p):
        if p != 0:
            swap(b, 0, p)
        return b


    def doubles_first(a):
        a[0] = a[0] * 2.0
        return a


    def result_is_the_argument(b):
        L = doubles_first(b)
        set0(L, 1)
        return b, L


    def by_keyword(b):
        set0(i=2, v=b)
        return b


    def bump_and_sum(v, i):
        v[i] = v[i] + 10.0
        return v.sum()


    def writes_and_returns(b):
        total = bump_and_sum(b, 0)
        return b, total


    def set_and_count(v, i):
        v[i] = 0.0
        return i + 1


    def assigns_the_result_to_the_array(b):
        b = set_and_count(b, 1)
        return b


    def add_into(v, x):
        v += x


    def augmented_in_a_helper(b):
        add_into(b, 1.0)
        return b


    def bump(n):
        n += 1.0
        return n * 2.0


    def a_number_is_rebound_not_changed(k, b):
        m = bump(k)
        first = bump(b[0])
        return k, m, first, b


    def swap_first(v, p):
        swap(v, 0, p)


    def helper_of_helper(b, p):
        swap_first(b, p)
        return b


    def nested_def(b):
        def put(w, k):
            w[k] = -1.0
        put(b, 0)
        return b


    def through_alias(b):
        a = b
        set0(a, 0)
        return b


    def in_a_staged_loop(b, n):
        for k in range(n):
            set0(b, k)
        return b


    def selection_sort(a):
        n = a.shape[0]
        for i in range(n):
            m = i
            for j in range(i + 1, n):
                if a[j] < a[m]:
                    m = j
            if m != i:
                swap(a, i, m)
        return a


    def returns_the_call(b, p):
        return swap_first(b, p)


    class Stepper:
        def step(self, v, i):
            v[i] = v[i] * 2.0

        def run(self, v):
            for i in range(v.shape[0]):
                if v[i] > 1.5:
                    self.step(v, i)
            return v


    def method_on_self(b):
        return Stepper().run(b)


    def same_array_twice(b):
        def copy_into(dst, src):
            dst[0] = src[1]
        copy_into(b, b)
        return b


    def through_a_list(b):
        rows = [b]
        set0(rows[0], 0)
        return rows[0]


    import dataclasses


    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Point:
        x: jax.Array
        y: jax.Array


    def set_x(p, v):
        p.x = v


    def attribute_in_a_staged_if(t):
        p = Point(jnp.float32(0.0), jnp.float32(1.0))
        if t > 0:
            set_x(p, t)
        return p.x + p.y


    def zero_down(v, n):
        if n > 0:
            v[n] = 0.0
            zero_down(v, n - 1)


    def recursive_helper(b):
        zero_down(b, 2)
        return b


    def copy_then_write(v):
        v = v * 1.0
        v[0] = 100.0
        return v


    def helper_writes_a_copy(b):
        c = copy_then_write(b)
        return b, c


    def write_then_rebind(v):
        v[0] = 100.0
        v = v * 2.0
        return v


    def helper_writes_then_rebinds(b):
        c = write_then_rebind(b)
        return b, c


    def check(v, i):
        if v[i] < 0:
            sys.exit("negative")
        v[i] = v[i] * 2.0


    def exits_in_a_helper(b):
        check(b, 0)
        return b


    def set_in_first(v, i):
        v[0][i] = 5.0


    def bump_second(v):
        v[1] += 2.0


    def set_first_item(v):
        v[0] = 5.0


    def writes_into_and_replaces(v):
        v[0][1] = 5.0
        v[1] = 3.0


    def through_set_in_first(w):
        set_in_first(w, 2)


    def display_of_arrays(a, b):
        set_in_first([a, b], 1)
        return a, b


    def display_augmented_item(a, b):
        bump_second([a, b])
        return a, b


    def display_item_replaced(a, b):
        set_first_item([a, b])
        return a, b


    def display_with_a_fresh_item(a):
        set_in_first([a * 2.0, a], 0)
        return a


    def display_through_a_helper(a, b):
        through_set_in_first([b, a])
        return a, b


    def display_in_a_staged_if(a, n):
        if n > 0:
            set_in_first([a], 1)
        return a


    def display_item_changed_and_replaced(a, b):
        writes_into_and_replaces([a, b])
        return a


    def line_search(x):
        fc = [0]

        def phi(a):
            fc[0] += 1
            return a * a

        for i in range(5):
            x = x - 0.1 * phi(x)
        return x, fc[0]
''')

_count = itertools.count()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The module written to a file and imported (its functions' source is that file), and
    a loader of its CLI outputs."""
    folder = tmp_path_factory.mktemp("writeback")
    path = folder / "helpers_mod.py"
    path.write_text(SOURCE)
    module = _import(path, f"writeback_helpers_{next(_count)}")
    return folder, path, module


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cli_output(folder, path, options) -> object:
    """The module converted as ``autolax convert`` writes it (``options``), imported from
    the written file."""
    if options.standalone:
        runtime_copy_folder()
    text = convert_source(SOURCE, str(path), options).text
    out = folder / f"out_{next(_count)}.py"
    out.write_text(text)
    return _import(out, out.stem + f"_{next(_count)}")


CLI_OPTIONS = {
    "cli default --only": lambda name: Options(only=(name,)),
    "cli default --all": lambda name: Options(all=True),
    "standalone --only": lambda name: Options(standalone=True, only=(name,)),
    "standalone --all": lambda name: Options(standalone=True, all=True),
}


def outcomes(files, name, *args):
    """Python's outcome on NumPy copies of ``args``, and each path's (fresh copies each)."""
    folder, path, module = files
    fn = getattr(module, name)

    def numpy_args():
        return [np.array(a, dtype=np.float32) if isinstance(a, list) else a for a in args]

    def jax_args():
        return [jnp.array(a, dtype=jnp.float32) if isinstance(a, list) else a for a in args]

    python_args = numpy_args()
    expected = _capture(lambda: fn(*python_args))
    got = {
        "autolax.jit": _capture(lambda: autolax.jit(fn)(*jax_args())),
        "jax.jit(convert)": _capture(lambda: jax.jit(autolax.convert(fn))(*jax_args())),
    }
    eager_args = numpy_args()
    got["convert eagerly"] = _capture(lambda: autolax.convert(fn)(*eager_args))
    for label, options in CLI_OPTIONS.items():
        got[label] = _capture(lambda: jax.jit(getattr(cli_output(folder, path, options(name)), name))(*jax_args()))
    return expected, got, (python_args, eager_args)


def _unconverted_refusal(path, outcome) -> bool:
    """``--standalone --only f``: the output holds no converter, and the helpers ``f`` calls
    are left as written (issue 43 item 6): autolax's error naming the unconverted helper is
    the outcome there, never the old value."""
    return (path == "standalone --only" and outcome.error is not None
            and type(outcome.error).__name__ == "ArgumentWriteError"
            and "was not converted: the runtime alone has no converter" in str(outcome.error)
            and "Fix: have autolax convert '" in str(outcome.error))


def assert_pythons_answer(files, name, *args):
    expected, got, (python_args, eager_args) = outcomes(files, name, *args)
    assert expected.error is None, expected.error
    problems = [f"{path}: {why}" for path, outcome in got.items()
                if (why := agrees(expected, outcome, path, allow_refusal=False)) and not _unconverted_refusal(path, outcome)]
    assert not problems, "\n".join(problems)
    # Eagerly on NumPy arrays, the caller's arrays are changed in place, as Python changes them.
    for p, e in zip(python_args, eager_args):
        np.testing.assert_array_equal(np.asarray(e), np.asarray(p))
    return expected


# ----------------------------------------------------------------------------- item 1: Python's answer
@pytest.mark.parametrize("name, args, want", [
    ("f", ([1.0, 2.0, 3.0],), [1.0, 0.0, 3.0]),
    ("g", ([1.0, 2.0, 3.0], 2), [3.0, 2.0, 1.0]),
    ("g", ([1.0, 2.0, 3.0], 0), [1.0, 2.0, 3.0]),
    ("by_keyword", ([1.0, 2.0, 3.0],), [1.0, 2.0, 0.0]),
    ("assigns_the_result_to_the_array", ([1.0, 2.0, 3.0],), 2),
    ("augmented_in_a_helper", ([1.0, 2.0, 3.0],), [2.0, 3.0, 4.0]),
    ("helper_of_helper", ([1.0, 2.0, 3.0], 1), [2.0, 1.0, 3.0]),
    ("nested_def", ([1.0, 2.0, 3.0],), [-1.0, 2.0, 3.0]),
    ("through_alias", ([1.0, 2.0, 3.0],), [0.0, 2.0, 3.0]),
    ("in_a_staged_loop", ([1.0, 2.0, 3.0], 2), [0.0, 0.0, 3.0]),
    ("selection_sort", ([3.0, 1.0, 2.0, 0.5],), [0.5, 1.0, 2.0, 3.0]),
    ("attribute_in_a_staged_if", (2.0,), 3.0),
    ("attribute_in_a_staged_if", (-2.0,), 1.0),
    ("recursive_helper", ([1.0, 2.0, 3.0],), [1.0, 0.0, 0.0]),
    ("helper_writes_a_copy", ([1.0, 2.0, 3.0],), [[1.0, 2.0, 3.0], [100.0, 2.0, 3.0]]),
    # The helper returns the parameter it wrote (Choleski's `return a`): the result is the
    # caller's array, so a later write through it changes both names (corpus2's std_form).
    ("result_is_the_argument", ([1.0, 2.0, 3.0],), [[2.0, 0.0, 3.0], [2.0, 0.0, 3.0]]),
    ("given_copies", ([1.0, 2.0, 3.0],), [[1.0, 2.0, 3.0], [7.0, 2.0, 3.0]]),
    # A list display of the caller's arrays: a write into an item changes the array itself
    # (`a`), a replaced item is lost with the list, as in Python.
    ("display_of_arrays", ([1.0, 2.0], [3.0, 4.0]), [[1.0, 5.0], [3.0, 4.0]]),
    ("display_augmented_item", ([1.0, 2.0], [3.0, 4.0]), [[1.0, 2.0], [5.0, 6.0]]),
    ("display_item_replaced", ([1.0, 2.0], [3.0, 4.0]), [[1.0, 2.0], [3.0, 4.0]]),
    ("display_with_a_fresh_item", ([1.0, 2.0],), [1.0, 2.0]),
    ("display_through_a_helper", ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]), [[1.0, 2.0, 3.0], [4.0, 5.0, 5.0]]),
    ("display_in_a_staged_if", ([1.0, 2.0], 1), [1.0, 5.0]),
    ("display_in_a_staged_if", ([1.0, 2.0], 0), [1.0, 2.0]),
])
def test_a_helper_writing_into_its_argument_changes_the_callers_array(files, name, args, want):
    expected = assert_pythons_answer(files, name, *args)
    np.testing.assert_array_equal(expected.value, want)  # (the case is what it says)


def test_a_display_whose_items_are_changed_and_replaced_is_refused_by_name_and_line(files):
    """`writes_into_and_replaces([a, b])`: Python changes `a` through the list and loses the
    replaced item; no rebinding says both, so autolax refuses the call, on every path
    (`autolax convert --all` leaves the function as written, with the reason as a warning)."""
    name = "display_item_changed_and_replaced"
    expected, got, _ = outcomes(files, name, [1.0, 2.0], [3.0, 4.0])
    assert expected.error is None
    reason = "'writes_into_and_replaces' changes the items of its parameter 'v' in place"
    for path, outcome in got.items():
        if path.endswith("--all"):
            continue
        message = str(outcome.error)
        assert type(outcome.error).__name__ == "ConversionError", (path, outcome)
        assert reason in message, path
        assert "writes_into_and_replaces([a, b])" in message, path
        assert "v = [a, b]; writes_into_and_replaces(v, ...); a, b = v" in message, path
    _, path, _ = files
    for standalone in (False, True):
        warnings = convert_source(SOURCE, str(path), Options(all=True, standalone=standalone)).warnings
        assert any(f"'{name}' is left as it is (--all): {reason}" in w for w in warnings), warnings


def test_augmented_assignment_of_a_number_parameter_leaves_the_callers_number(files):
    """`n += 1.0` in a helper: NumPy adds into an array in place (the caller sees it), a
    Python number is rebound (the caller's is unchanged): each as Python does."""
    expected = assert_pythons_answer(files, "a_number_is_rebound_not_changed", 3.0, [1.0, 2.0])
    assert [float(v) for v in expected.value[:3]] == [3.0, 8.0, 4.0]
    np.testing.assert_array_equal(expected.value[3], [1.0, 2.0])


def test_a_helper_that_writes_and_returns_a_value(files):
    expected = assert_pythons_answer(files, "writes_and_returns", [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(expected.value[0], [11.0, 2.0, 3.0])
    assert expected.value[1] == 16.0


def test_a_method_writing_through_a_method_of_self(files):
    module = files[2]
    b = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    Stepper = module.Stepper
    want = Stepper().run(b.copy())
    np.testing.assert_array_equal(want, [1.0, 4.0, 6.0])
    np.testing.assert_array_equal(autolax.jit(Stepper().run)(jnp.asarray(b)), want)
    np.testing.assert_array_equal(jax.jit(autolax.convert(Stepper().run))(jnp.asarray(b)), want)
    eager = b.copy()
    autolax.convert(Stepper().run)(eager)
    np.testing.assert_array_equal(eager, want)


def test_the_emitted_calls(files):
    """A call of a helper that writes into its argument rebinds the caller's name; a call of
    one that writes nothing is ``ops.call`` as before; the helper hands its parameter back."""
    module = files[2]
    assert "b, _ = ops.call_writing(('v',), set0, b, 1)" in autolax.to_source(module.f)
    assert "return ops.hand_back(None, v=v)" in autolax.to_source(module.swap)
    assert "y = ops.call(_pure_helper, x)" in autolax.to_source(_calls_a_pure_helper)
    assert "hand_back" not in autolax.to_source(_pure_helper)


def _pure_helper(v):
    return v[0] + 1.0


def _calls_a_pure_helper(x):
    y = _pure_helper(x)
    return y



def test_a_helper_called_in_a_staged_loop_is_not_unrolled(files):
    module = files[2]

    def eqns(n):
        jaxpr = jax.make_jaxpr(autolax.convert(module.selection_sort))(jnp.arange(n, dtype=jnp.float32))
        return [e.primitive.name for e in jaxpr.jaxpr.eqns]

    small, large = eqns(4), eqns(32)
    assert small == large  # the program does not grow with the length
    assert any(p in ("scan", "while") for p in small)
    report = autolax.trace_check(module.in_a_staged_loop, jnp.ones(3), 2)
    assert "lax.fori_loop" in [row.became for row in report.rows]


def test_eager_jax_array_is_updated_as_under_jit(files):
    """A JAX array cannot be changed in place (Python raises TypeError at `v[i] = 0.0`);
    converted code updates it as a value on every path (README, "Mutation"), so a helper's
    write reaches the caller eagerly as under ``jit``."""
    module = files[2]
    with pytest.raises(TypeError):
        module.f(jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(autolax.convert(module.f)(jnp.array([1.0, 2.0, 3.0])), [1.0, 0.0, 3.0])


# ----------------------------------------------------------------------------- item 1: refusals
@pytest.mark.parametrize("name, args, param, why", [
    ("same_array_twice", ([1.0, 2.0, 3.0],), "dst", "the same array is given for 'dst' and 'src'"),
    ("through_a_list", ([1.0, 2.0, 3.0],), "v", "the call does not rebind what it gave 'v'"),
    ("method_on_self", ([1.0, 2.0, 3.0],), "v", "the call does not rebind what it gave 'v'"),
    ("helper_writes_then_rebinds", ([1.0, 2.0, 3.0],), "v", "and then assigns 'v' anew"),
])
def test_a_write_autolax_cannot_follow_is_refused_never_the_old_value(files, name, args, param, why):
    expected, got, (python_args, eager_args) = outcomes(files, name, *args)
    assert expected.error is None
    for path, outcome in got.items():
        if path == "convert eagerly":  # NumPy arrays: changed in place, Python's answer
            assert agrees(expected, outcome, path, allow_refusal=False) is None
            continue
        if path == "standalone --only":  # the helpers run as written there (item 6): refused too
            assert outcome.error is not None and is_autolax_error(outcome.error), (path, outcome)
            continue
        assert outcome.error is not None and is_autolax_error(outcome.error), (path, outcome)
        assert type(outcome.error).__name__ == "ArgumentWriteError", (path, outcome.error)
        text = str(outcome.error)
        assert f"writes into its parameter '{param}'" in text and why in text, (path, text)
        assert "helpers_mod.py:" in text or "out_" in text, (path, text)  # the call's line
        assert "Fix: call '" in text or "Fix: copy the array first in 'write_then_rebind'" in text, (path, text)


def test_a_refusal_names_the_helper_the_parameter_and_the_line(files):
    module = files[2]
    with pytest.raises(autolax.ArgumentWriteError) as info:
        autolax.jit(module.through_a_list)(jnp.array([1.0, 2.0, 3.0]))
    text = str(info.value)
    line = next(i for i, ln in enumerate(SOURCE.splitlines(), 1) if "set0(rows[0], 0)" in ln)
    assert text.startswith("'set0' writes into its parameter 'v' (an item or an attribute), which was given a "
                           "JAX array at ")
    assert f"helpers_mod.py:{line}:\n    set0(rows[0], 0)\n" in text
    assert "Fix: call 'set0' as a statement of its own, with the array in a local variable" in text


# ----------------------------------------------------------------------------- item 3: one program, one outcome
@pytest.mark.parametrize("x", [[1.0, 2.0, 3.0], [-1.0, 2.0, 3.0]])
def test_sys_exit_in_a_staged_branch_of_a_helper_is_python_s_on_every_path(files, x):
    # Refused on every path once (issue 43 item 3, so that all paths agreed); now the
    # helper's branch raises Python's SystemExit when the program takes it, on every path.
    expected, got, _ = outcomes(files, "exits_in_a_helper", x)
    assert (expected.error is None) == (x[0] >= 0)
    for path, outcome in got.items():
        assert agrees(expected, outcome, path, allow_refusal=False) is None, (path, outcome)
        if expected.error is not None and path in ("autolax.jit", "convert eagerly"):
            assert type(outcome.error) is SystemExit and outcome.error.code == "negative", (path, outcome)


# ----------------------------------------------------------------------------- item 12: a closure's counter
def test_a_closure_counting_calls_from_a_staged_loop_names_the_variable_and_the_line(files):
    module = files[2]
    assert module.line_search(1.0)[1] == 5  # Python
    lines = SOURCE.splitlines()
    change = next(i for i, ln in enumerate(lines, 1) if "fc[0] += 1" in ln)
    loop = next(i for i, ln in enumerate(lines, 1) if "for i in range(5):" in ln)
    for run in (lambda: autolax.jit(module.line_search)(1.0), lambda: jax.jit(autolax.convert(module.line_search))(1.0)):
        with pytest.raises(autolax.StagedEffectError) as info:
            run()
        text = str(info.value)
        assert text.startswith("a list ([0]) is changed inside the `for` loop at ")
        assert f"helpers_mod.py:{loop}, through 'fc' at " in text
        assert f"helpers_mod.py:{change} (`fc[0] += 1`), which is staged" in text
        assert "'fc' is not a variable of the function that runs the staged statement" in text
        assert "Fix: keep what 'fc' collects in a local variable of the function that runs the staged statement" in text
    assert module.line_search(1.0)[1] == 5  # (the refused trace left the list as it was)


# ----------------------------------------------------------------------------- %%autolax
def test_the_magic_rebinds_the_callers_array():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    try:
        shell.run_cell("%load_ext autolax").raise_error()
        cell = "%%autolax\nimport jax.numpy as jnp\n" + textwrap.dedent('''
            def swap(v, i, j):
                v[i], v[j] = v[j], v[i]

            def g(b, p):
                if p != 0:
                    swap(b, 0, p)
                return b
        ''') + "out = g(jnp.array([1.0, 2.0, 3.0]), 2)\n"
        shell.run_cell(cell, store_history=True).raise_error()
        np.testing.assert_array_equal(shell.user_ns["out"], [3.0, 2.0, 1.0])
        # item 3 in a notebook: `sys.exit()` in a staged branch of a helper
        cell = "%%autolax\nimport sys\nimport jax.numpy as jnp\n" + textwrap.dedent('''
            def check(v, i):
                if v[i] < 0:
                    sys.exit("negative")
                v[i] = v[i] * 2.0

            def exits_in_a_helper(b):
                check(b, 0)
                return b
        ''')
        shell.run_cell(cell, store_history=True).raise_error()
        # item 3 again: Python's SystemExit when the program takes the branch, else the value
        with pytest.raises(SystemExit, match="negative"):
            shell.user_ns["exits_in_a_helper"](jnp.array([-1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(shell.user_ns["exits_in_a_helper"](jnp.array([1.0, 2.0, 3.0])), [2.0, 2.0, 3.0])
    finally:
        shell.extension_manager.unload_extension("autolax")
        shell.reset()


# ----------------------------------------------------------------------------- the command itself
def test_the_command_writes_programs_that_rebind_the_callers_array(tmp_path):
    """``autolax convert --all`` and ``--standalone --all`` of the issue's example: the
    written files give Python's answer under ``jax.jit``."""
    from autolax import cli

    src = tmp_path / "pivot.py"
    src.write_text(textwrap.dedent('''
        def set0(v, i):
            v[i] = 0.0


        def swap(v, i, j):
            v[i], v[j] = v[j], v[i]


        def f(b):
            set0(b, 1)
            return b


        def g(b, p):
            if p != 0:
                swap(b, 0, p)
            return b
    '''))
    python = _import(src, f"writeback_pivot_{next(_count)}")
    want_f = python.f(np.array([1.0, 2.0, 3.0]))
    want_g = python.g(np.array([1.0, 2.0, 3.0]), 2)
    for flags in ([], ["--standalone"]):
        out = tmp_path / ("standalone" if flags else "default")
        out.mkdir()
        assert cli.main(["convert", *flags, "--all", str(src), "-o", str(out / "pivot.py")]) == 0
        if flags:
            sys.path.insert(0, str(out))
        try:
            written = _import(out / "pivot.py", f"writeback_pivot_out_{next(_count)}")
            np.testing.assert_array_equal(jax.jit(written.f)(jnp.array([1.0, 2.0, 3.0])), want_f)
            np.testing.assert_array_equal(jax.jit(written.g)(jnp.array([1.0, 2.0, 3.0]), 2), want_g)
            text = (out / "pivot.py").read_text()
            assert "b, _ = ops.call_writing(('v',), swap, b, 0, p)" in text
        finally:
            if flags:
                sys.path.remove(str(out))
    np.testing.assert_array_equal(want_f, [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(want_g, [3.0, 2.0, 1.0])


PLAIN_CALLERS = textwrap.dedent('''
    def set0(v, x):
        v[0] = x
        return v.sum()


    def fill(v, x):
        v[1] = x
        return v


    def gen(b, x):
        s = set0(b, x)
        yield s


    def through_a_generator(b, x):
        b[1] = 2.0
        t = list(gen(b, x))[0] * 2
        return b, t
''')


def _plain_callers(tmp_path, standalone):
    from autolax import cli

    src = tmp_path / "plain_callers.py"
    src.write_text(PLAIN_CALLERS)
    out = tmp_path / ("standalone" if standalone else "default")
    out.mkdir()
    flags = ["--standalone"] if standalone else []
    assert cli.main(["convert", *flags, "--all", str(src), "-o", str(out / "plain_callers.py")]) == 0
    if standalone:
        sys.path.insert(0, str(out))
    return _import(src, f"plain_callers_{next(_count)}"), _import(out / "plain_callers.py", f"plain_out_{next(_count)}")


@pytest.mark.parametrize("standalone", [False, True])
def test_code_left_as_written_gets_a_converted_helpers_value_not_its_hand_back(tmp_path, standalone):
    """A generator (left as written by `--all`) calls a converted writer, and a converted writer
    iterates it: the helper returns its value to the generator (it once got the
    `HandedBack` meant for `ops.call_writing`, and `* 2` raised TypeError). Under `jax.jit`
    the helper's write into the generator's traced array cannot reach it: autolax's error
    names both functions, never the old array."""
    python, written = _plain_callers(tmp_path, standalone)
    try:
        want = python.through_a_generator(np.zeros(3), 5.0)
        got = written.through_a_generator(np.zeros(3), 5.0)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] == 14.0
        np.testing.assert_array_equal(want[0], [5.0, 2.0, 0.0])
        with pytest.raises(Exception) as info:  # (--standalone: the runtime copy's class)
            jax.jit(written.through_a_generator)(np.zeros(3), 5.0)
        assert type(info.value).__name__ == "ArgumentWriteError" and is_autolax_error(info.value)
        msg = str(info.value)
        assert "'set0' writes into its parameter 'v' (an item or an attribute), which was given a traced array" in msg
        assert "'gen' runs as written (it was not converted), so its variable would keep the old array" in msg
        assert "s = set0(b, x)" in msg
        assert "Fix: have 'set0' return the array and assign it in 'gen' (`a = set0(a, ...)`)" in msg
    finally:
        if standalone:
            sys.path.remove(str(tmp_path / "standalone"))


def test_a_converted_writer_called_from_code_around_the_converted_file(tmp_path):
    """The user's own code (here: this test's functions) calling the CLI's output under
    `jax.jit` gets the helper's value, as README documents: a wrapper that never reads the
    array again cannot be told from one that does, so only the converted file's own
    functions left as written are refused (above)."""
    python, written = _plain_callers(tmp_path, False)

    def a_wrapper(b, x):
        return written.set0(b, x)

    def assigns_the_result(b, x):
        b = written.fill(b, x)
        return b

    assert float(jax.jit(a_wrapper)(np.zeros(3), 5.0)) == python.set0(np.zeros(3), 5.0) == 5.0
    want = python.fill(np.zeros(3), 5.0)
    np.testing.assert_array_equal(jax.jit(assigns_the_result)(np.zeros(3), 5.0), want)
    np.testing.assert_array_equal(jax.jit(written.fill)(np.zeros(3), 5.0), want)
    assert float(jax.jit(lambda b: written.set0(b, 5.0))(np.zeros(3))) == 5.0
    # Eagerly, the NumPy array is changed in place, as in Python.
    b = np.zeros(3)
    assert a_wrapper(b, 5.0) == 5.0 and b[0] == 5.0


# ----------------------------------------------------------------------------- a helper that is an autolax.jit object
@autolax.jit
def _jitted_set0(v, i):
    v[i] = 0.0


def _calls_the_jitted_helper_by_name(b):
    _jitted_set0(b, 1)
    return b


def _calls_the_jitted_helper_from_a_list(b):
    helpers = [_jitted_set0]
    helpers[0](b, 1)
    return b


def test_a_helper_decorated_with_autolax_jit():
    """By name, its change reaches the caller; through a list, autolax's error (its trace,
    cached, is the object's own: it never returns the parameters to a later caller)."""
    np.testing.assert_array_equal(autolax.jit(_calls_the_jitted_helper_by_name)(jnp.array([1.0, 2.0, 3.0])),
                                  [1.0, 0.0, 3.0])
    with pytest.raises(autolax.ArgumentWriteError, match="'_jitted_set0' writes into its parameter 'v'"):
        autolax.jit(_calls_the_jitted_helper_from_a_list)(jnp.array([1.0, 2.0, 3.0]))
    assert _jitted_set0(jnp.array([1.0, 2.0, 3.0]), 1) is None  # called by itself: what it returns


def test_the_closure_counter_refusal_is_the_same_on_every_path(files):
    expected, got, _ = outcomes(files, "line_search", 1.0)
    assert expected.error is None and expected.value[1] == 5
    for path, outcome in got.items():
        if path == "convert eagerly":  # no trace: Python's answer, the count included
            assert agrees(expected, outcome, path, allow_refusal=False) is None, (path, outcome)
            continue
        assert outcome.error is not None and type(outcome.error).__name__ == "StagedEffectError", (path, outcome)
        text = str(outcome.error)
        assert text.startswith("a list ([0]) is changed inside the `for` loop at "), (path, text)
        assert "through 'fc' at " in text, (path, text)
        assert "helpers_mod.py:" in text and "(`fc[0] += 1`)" in text, (path, text)
        assert "Fix: keep what 'fc' collects in a local variable" in text, (path, text)
