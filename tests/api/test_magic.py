"""The IPython front end: ``%load_ext autolax`` and ``%%autolax``, driven through a real
``InteractiveShell``, plus the example notebook run in a real Jupyter kernel."""

from __future__ import annotations

import json
import linecache
import os
import pathlib
import re
import site
import sys
import types

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

import autolax
from autolax.runtime.sites import display_filename  # In[N] for a cell
from autolax.api import jit_info
from autolax.magic import ConvertedSource

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

HALVINGS = """\
def halvings(x):
    n = 0
    while x > 1.0:
        x = x / 2
        n += 1
    return n
"""


@pytest.fixture
def ip():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # no shared history database
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    shell.run_cell("import jax\nimport jax.numpy as jnp").raise_error()
    yield shell
    shell.extension_manager.unload_extension("autolax")
    shell.reset()


def run(shell, cell):
    return shell.run_cell(cell, store_history=True)


def ok(shell, cell):
    result = run(shell, cell)
    result.raise_error()
    return result


def cell_line(cell: str, text: str) -> int:
    """1-based line of the cell (the ``%%autolax`` line is line 1) that holds ``text``."""
    return next(i for i, line in enumerate(cell.splitlines(), 1) if text in line)


def test_load_ext_registers_the_cell_magic_with_documented_flags(ip):
    magic = ip.magics_manager.magics["cell"]["autolax"]
    usage = magic.__doc__
    assert "%%autolax [--show] [--no-jit] [--strict] [--static NAME,...]" in usage
    for flag in ("--show", "--no-jit", "--strict", "--static"):
        assert flag in usage
    ip.extension_manager.unload_extension("autolax")
    assert "autolax" not in ip.magics_manager.magics["cell"]
    result = run(ip, "%%autolax\nx = 1\n")
    assert isinstance(result.error_in_exec, UsageError)
    ok(ip, "%load_ext autolax")
    assert "autolax" in ip.magics_manager.magics["cell"]


def test_data_dependent_while_matches_plain_python(ip):
    ok(ip, HALVINGS)
    plain = ip.user_ns["halvings"]
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(plain)(10.0)

    # The last line runs after the replacement: vmap of the plain function would fail.
    result = ok(ip, "%%autolax\n" + HALVINGS + "jax.vmap(halvings)(jnp.array([0.5, 3.0, 37.0, 1024.0]))\n")
    staged = ip.user_ns["halvings"]
    assert staged is not plain and jit_info(staged).fn.__name__ == "halvings"
    for x in (0.5, 1.0, 3.0, 37.0, 1024.0, 1e6):
        assert int(staged(x)) == plain(x)
    np.testing.assert_array_equal(result.result, [plain(x) for x in (0.5, 3.0, 37.0, 1024.0)])
    report = autolax.trace_check(staged, 37.0)
    assert [row.became for row in report.rows] == ["lax.while_loop"]


def test_show_displays_the_converted_source(ip):
    with capture_output() as captured:
        ok(ip, "%%autolax --show\n" + HALVINGS)
    shown = [out.data for out in captured.outputs]
    assert len(shown) == 1
    expected = autolax.to_source(ip.user_ns["halvings"])
    assert "ops.while_loop(lambda x, n: x > 1.0, loop_body" in expected
    assert shown[0]["text/plain"] == expected.rstrip("\n")
    # One printer: what `autolax convert` writes for the cell's function, comments and blank
    # lines as the cell has them (the CLI's descriptors name the file it was converted from).
    from autolax.cli import Options, convert_source

    written = convert_source(HALVINGS, "cell.py", Options(all=True)).text
    written = re.sub(r"\n*ops\.source_lines\(.*\)\n", "\n", written)  # the file's line map (item 16)
    assert re.sub(r"at='cell.py:\d+'", "at=LINE", written[written.index("def halvings") :]) == re.sub(
        r"at='\d+'", "at=LINE", expected
    )
    html = shown[0]["text/html"]
    assert "<span style=" in html and "loop_body" in html
    assert ConvertedSource(expected)._repr_html_() == html


def test_no_jit_gives_the_converted_python_function(ip):
    ok(ip, HALVINGS)
    plain = ip.user_ns["halvings"]
    ok(ip, "%%autolax --no-jit\n" + HALVINGS)
    converted = ip.user_ns["halvings"]
    assert isinstance(converted, types.FunctionType) and converted is not plain
    assert jit_info(converted) is None
    for x in (0.5, 37.0, 1e6):
        assert converted(x) == plain(x)
        assert int(jax.jit(converted)(x)) == plain(x)


def test_static_marks_argument_names_static(ip):
    cell = """\
def ramp(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    return jnp.stack(out)

def scale(x, k):
    return x * k
"""
    ok(ip, cell)
    plain_ramp = ip.user_ns["ramp"]
    ok(ip, "%%autolax --static n\n" + cell)
    ramp, scale = ip.user_ns["ramp"], ip.user_ns["scale"]
    assert jit_info(ramp).static_argnames == ("n",)
    assert jit_info(scale).static_argnames is None  # `scale` has no argument `n`
    np.testing.assert_allclose(ramp(1.5, 5), plain_ramp(1.5, 5))
    assert float(scale(2.0, 3.0)) == 6.0

    result = run(ip, "%%autolax --static m\n" + cell)
    assert isinstance(result.error_in_exec, UsageError)
    assert "--static m: no function in the cell has such an argument" in str(result.error_in_exec)


def test_a_function_of_the_cell_called_with_a_traced_static_argument_runs_in_the_callers_trace(ip):
    # `--static n` makes `n` static in every function of the cell; `total` passes `helper` a
    # traced `n`, as plain Python may: it runs inside `total`'s trace instead of failing to
    # hash the tracer (fuzzer seed 32).
    cell = """\
def helper(x, n):
    if x > n:
        return x - n
    return x

def total(xs, n):
    acc = 0.0
    for x in xs:
        acc += helper(x, x * n)
    return acc + n
"""
    ok(ip, cell)
    plain = ip.user_ns["total"]
    ok(ip, "%%autolax --static n\n" + cell)
    xs = np.array([1.0, -2.0, 3.0], np.float32)
    assert float(ip.user_ns["total"](xs, 2)) == pytest.approx(plain(xs, 2))
    assert float(ip.user_ns["helper"](3.0, 2)) == 1.0  # called alone: static, jitted

    result = run(ip, "%%autolax --static m\n" + cell)
    assert isinstance(result.error_in_exec, UsageError)
    assert "--static m: no function in the cell has such an argument" in str(result.error_in_exec)


def test_a_helper_of_the_cell_raising_under_a_traced_condition_raises_from_the_callers_loop(ip):
    # `helper` is the cell's too (an autolax.jit object); called from `total`'s staged loop,
    # its `raise` under a traced condition was lost in its own nested jit (fuzz seed 4616):
    # it now runs in `total`'s trace, whose call raises Python's error.
    cell = """\
def helper(x):
    if x < 0:
        raise ValueError("negative item")
    return 2 * x

def total(xs):
    acc = 0.0
    for x in xs:
        acc += helper(x)
    return acc
"""
    ok(ip, cell)
    plain = ip.user_ns["total"]
    ok(ip, "%%autolax\n" + cell)
    good = np.array([1.0, 2.0], np.float32)
    assert float(ip.user_ns["total"](good)) == plain(good) == 6.0
    bad = np.array([1.0, -2.0], np.float32)
    with pytest.raises(ValueError, match="negative item"):
        plain(bad)
    with pytest.raises(ValueError, match="negative item"):
        ip.user_ns["total"](bad)


UNROLLS = """\
def apply_all(x):
    scales = [1.0, 2.0, 3.0]
    for i in range(len(scales)):
        x = x * scales[i]
    return x
"""


def test_strict_makes_an_unrolled_loop_an_error(ip):
    ok(ip, "%%autolax\n" + UNROLLS)
    with pytest.warns(autolax.UnrolledLoopWarning):
        result = ok(ip, "apply_all(2.0)")
    assert float(result.result) == 12.0

    cell = "%%autolax --strict\n" + UNROLLS.replace("2.0, 3.0", "2.0, 4.0")
    ok(ip, cell)
    result = run(ip, "apply_all(2.0)")
    err = result.error_in_exec
    assert isinstance(err, autolax.UnrolledLoopError)
    filename = display_filename(jit_info(ip.user_ns["apply_all"]).fn.__code__.co_filename)
    assert f"the loop at {filename}:{cell_line(cell, 'for i in')} " in str(err)


def test_error_when_called_points_at_the_cells_own_line(ip):
    cell = """\
%%autolax
def safe_sqrt(x):
    if x > 0:
        root = jnp.sqrt(x)
    return root
"""
    defined = ok(ip, cell)
    assert float(run(ip, "safe_sqrt(4.0)").result) == 2.0  # the branch that assigns 'root' ran
    with capture_output() as captured:
        result = run(ip, "safe_sqrt(-4.0)")  # Python: UnboundLocalError at `return root`
    err = result.error_in_exec
    assert isinstance(err, autolax.UndefinedVariableError) and isinstance(err, UnboundLocalError)
    filename = jit_info(ip.user_ns["safe_sqrt"]).fn.__code__.co_filename
    line = cell_line(cell, "return root")
    assert line == 5
    assert f"cannot access local variable 'root' where it is not associated with a value (at {display_filename(filename)}:{line})" in str(err)
    assert linecache.getline(filename, line).strip() == "return root"
    assert "UndefinedVariableError" in ANSI.sub("", captured.stdout)


def test_error_while_tracing_shows_the_cells_own_line_in_the_traceback(ip):
    cell = """\
%%autolax
def pad(x):
    if x > 0:
        out = jnp.ones(2)
    else:
        out = jnp.ones(3)
    return out
"""
    defined = ok(ip, cell)
    with capture_output() as captured:
        result = run(ip, "pad(4.0)")
    err = result.error_in_exec
    assert isinstance(err, autolax.StateMismatchError)
    filename = jit_info(ip.user_ns["pad"]).fn.__code__.co_filename
    line = cell_line(cell, "if x > 0:")
    assert line == 3
    assert f"of the `if` at {display_filename(filename)}:{line}\n" in str(err)
    # IPython's traceback shows the frame as the magic cell's own line.
    frame = f"Cell In[{defined.execution_count}], line {line}, in pad"
    assert frame in ANSI.sub("", captured.stdout)


def test_conversion_error_is_a_clean_message_at_the_cell_line(ip):
    cell = """\
%%autolax

def running_max(xs):
    best = xs[0]
    for x in xs:
        best = max(best, x)
        yield best
"""
    with capture_output() as captured:
        result = run(ip, cell)
    err = result.error_in_exec
    assert isinstance(err, autolax.ConversionError)
    assert err.lineno == cell_line(cell, "yield best") == 7
    shown = ANSI.sub("", captured.stdout)
    assert shown.startswith(f"ConversionError: In[{result.execution_count}]:7:9: `yield` makes 'running_max' a generator")
    assert "    yield best\n    ^\nFix: " in shown
    assert "Traceback" not in shown and "magic.py" not in shown and "api.py" not in shown


def test_syntax_error_and_ipython_syntax_keep_cell_lines(ip):
    result = run(ip, "%%autolax\ndef f(x):\n    return x +\n")
    assert isinstance(result.error_in_exec, SyntaxError) and result.error_in_exec.lineno == 3

    cell = "%%autolax\n\nfiles = !echo one\ndef g(x):\n    if x > 0:\n        y = x\n    return y\n"
    ok(ip, cell)
    assert ip.user_ns["files"] == ["one"]
    err = run(ip, "g(-1.0)").error_in_exec
    filename = display_filename(jit_info(ip.user_ns["g"]).fn.__code__.co_filename)
    assert f"(at {filename}:{cell_line(cell, 'return y')})" in str(err)


def test_failed_cell_leaves_the_namespace_as_it_was(ip):
    """A failed %%autolax cell binds nothing: the converted function stays under its name
    (not the raw function the failed redefinition's `def` bound), new names are not bound,
    reassigned ones get their old values back."""
    ok(ip, "%%autolax\n" + HALVINGS)
    staged = ip.user_ns["halvings"]
    ok(ip, "limit = 1")
    generator = "%%autolax\nlimit = 2\ndef halvings(x):\n    while x > 1.0:\n        x = x / 2\n        yield x\n"
    result = run(ip, generator)
    assert isinstance(result.error_in_exec, autolax.ConversionError)
    assert ip.user_ns["halvings"] is staged
    assert ip.user_ns["limit"] == 1
    assert int(ok(ip, "halvings(37.0)").result) == 6
    assert jit_info(ip.user_ns["halvings"]) is not None

    result = run(ip, "%%autolax\nimport math as m\ndef fresh(x):\n    return x\nlimit = 3\nraise ValueError('late')\n")
    assert isinstance(result.error_in_exec, ValueError)
    assert "fresh" not in ip.user_ns and "m" not in ip.user_ns and ip.user_ns["limit"] == 1


def test_indentation_error_points_at_the_cells_own_line(ip):
    cell = "%%autolax\ndef f(x):\n    if x > 0:\n        x = x + 1\n   return x\n"
    result = run(ip, cell)
    err = result.error_in_exec
    assert isinstance(err, IndentationError)
    assert display_filename(err.filename) == f"In[{result.execution_count}]"
    assert err.lineno == cell_line(cell, "   return x") == 5
    assert "f" not in ip.user_ns

    cell = "%%autolax\ndef f(x):\n    if x > 0:\n    x = x + 1\n    return x\n"
    result = run(ip, cell)
    err = result.error_in_exec
    assert isinstance(err, IndentationError) and err.lineno == 4
    assert display_filename(err.filename) == f"In[{result.execution_count}]"

    result = run(ip, "%%autolax\nx = 1\ny = 2\0\n")
    err = result.error_in_exec
    assert isinstance(err, SyntaxError) and "null bytes" in err.msg and err.lineno == 3
    assert display_filename(err.filename) == f"In[{result.execution_count}]"


def test_decorator_in_a_plain_cell(ip):
    cell = """\
def first_above(xs, threshold):
    for i, x in enumerate(xs):
        if x > threshold:
            return i
    return -1
"""
    ok(ip, cell)
    plain = ip.user_ns["first_above"]
    ok(ip, "import autolax\n\n@autolax.jit\n" + cell)
    staged = ip.user_ns["first_above"]
    xs = [0.5, 1.5, 3.0, 0.2]
    for threshold in (0.0, 1.0, 2.0, 5.0):
        assert int(staged(jnp.array(xs), threshold)) == plain(xs, threshold)
    report = autolax.trace_check(staged, jnp.array(xs), 1.0)
    assert [(row.lineno, row.became.split()[0]) for row in report.rows if row.kind == "for"] == [(5, "lax.while_loop")]


# --- the example notebook, executed in a real Jupyter kernel -----------------------------


def _outputs(nb, tag):
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell


def _text(cell, kind):
    """The cell's stdout (kind "stream") or the text/plain of its outputs of that kind."""
    return "".join(
        o["text"] if o["output_type"] == "stream" else o["data"].get("text/plain", "")
        for o in cell.outputs
        if o["output_type"] in kind and o.get("name", "stdout") == "stdout"
    )


def test_tour_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    # A "python3" kernelspec that runs this very interpreter (and so this autolax), ahead of
    # any user-level "python3" spec: JUPYTER_PATH comes first in the kernelspec search.
    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "autolax test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    # The kernel imports the autolax this process imported (a source tree under
    # `python -m pytest`, else the installed package).
    package_parent = str(pathlib.Path(autolax.__file__).resolve().parents[1])
    if package_parent not in site.getsitepackages():
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])))

    path = ROOT / "examples" / "autolax_tour.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    probe = nbformat.v4.new_code_cell("import sys, autolax\nprint(sys.executable)\nprint(autolax.__file__)")
    probe.metadata["tags"] = ["probe"]
    nb.cells.insert(0, probe)
    NotebookClient(nb, kernel_name="python3", timeout=60, startup_timeout=60,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    assert _text(_outputs(nb, "probe"), ["stream"]).split() == [sys.executable, autolax.__file__]

    plain = _text(_outputs(nb, "plain-jit"), ["stream"])
    assert "plain jax.jit: TracerBoolConversionError" in plain
    python_steps = int(re.search(r"plain Python: (\d+)", plain).group(1))
    staged = _text(_outputs(nb, "magic-while"), ["execute_result"])
    assert re.fullmatch(r"Array\((\d+), dtype=int32\)", staged).group(1) == str(python_steps)

    show = _outputs(nb, "show")
    displayed = [o["data"] for o in show.outputs if o["output_type"] == "display_data"]
    assert len(displayed) == 1
    assert "x = ops.while_loop(lambda x: jnp.abs(x * x - a) > tol * a, loop_body, x, at=" in displayed[0]["text/plain"]
    assert "<span" in displayed[0]["text/html"]
    root, expected = re.findall(r"Array\(([\d.]+)", _text(show, ["execute_result"]))
    assert abs(float(root) - float(expected)) < 1e-5

    report = _text(_outputs(nb, "trace-check"), ["stream"])
    assert re.search(r"In\[\d+\]:4 +while n != 1: +lax\.while_loop", report)
    assert re.search(r"In\[\d+\]:5 +if n % 2 == 0: +lax\.cond", report)
    assert "no loop was unrolled" in report

    euler = _text(_outputs(nb, "static"), ["execute_result"])
    assert euler.startswith("((1000,), Array(")
    assert abs(float(re.search(r"Array\(([\d.]+)", euler).group(1)) - (1 + 1 / 1000) ** 1000) < 1e-3

    define = _outputs(nb, "error-define")
    line = cell_line(define.source, "if x > 0:")
    message = _text(_outputs(nb, "error-message"), ["stream"])
    assert re.search(rf"'out' is float32\[2\] in the `if` branch and float32\[3\] in the `else` branch of the `if` "
                     rf"at In\[\d+\]:{line}\n", message)
    assert "Fix: compute values of one shape in both branches" in message

    xs, thresholds = [0.5, 1.5, 3.0, 0.2], (1.0, 5.0)
    expected = [next((i for i, x in enumerate(xs) if x > t), -1) for t in thresholds]
    found = re.findall(r"Array\((-?\d+)", _text(_outputs(nb, "decorator"), ["execute_result"]))
    assert [int(v) for v in found] == expected

    failing = _outputs(nb, "conversion-error")
    (error,) = [o for o in failing.outputs if o["output_type"] == "error"]
    assert error["ename"] == "ConversionError"
    shown = ANSI.sub("", "\n".join(error["traceback"]))
    yield_line = cell_line(failing.source, "yield best")
    assert re.match(rf"ConversionError: In\[\d+\]:{yield_line}:9: `yield` makes 'running_max' a generator", shown)
    assert "Traceback" not in shown and "magic.py" not in shown
    errors = [c for c in nb.cells if c.cell_type == "code" and any(o["output_type"] == "error" for o in c.outputs)]
    assert errors == [failing]


def test_a_recursive_function_of_the_cell_is_the_runtimes_error_not_a_crash(ip):
    """The cell binds `fact` to what autolax.jit returns, which the converted body calls
    back with traced values: ops.call's recursion guard did not see through it (no
    `__code__`), and tracing recursed until the process crashed (a segmentation fault)."""
    cell = "%%autolax\ndef fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n"
    ok(ip, cell)
    result = run(ip, "fact(5)")
    assert isinstance(result.error_in_exec, autolax.TracedRecursionError)
    assert "'fact' calls itself" in str(result.error_in_exec)
    ok(ip, cell.replace("%%autolax", "%%autolax --static n"))
    assert ok(ip, "fact(5)").result == 120


KERNEL_ITEMS = """
def stencil(A, c, n: int):
    A = A.copy()
    for i in range(1, n - 1):
        A[i] += A[i - 1] + A[i + 1]
        A[i] /= 3.0
        c[i, 0] = c[0, i] = A[i]
    return A, c

def crc(data):
    crc = 0xFFFF
    for b in data:
        crc = crc ^ (b << 8)
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc
"""


def test_issue_41_items_in_a_cell(ip):
    # Items 4, 5, 7 of issue 41 through %%autolax: chained item assignment, folded updates of
    # one element, a select for a branch of bit operations; Python's values.
    ok(ip, KERNEL_ITEMS)
    plain_stencil, plain_crc = ip.user_ns["stencil"], ip.user_ns["crc"]
    ok(ip, "%%autolax --static n\n" + KERNEL_ITEMS)
    A = np.arange(6.0, dtype=np.float32)
    want_a, want_c = plain_stencil(A.copy(), np.zeros((6, 6), np.float32), 6)
    got_a, got_c = ip.user_ns["stencil"](A, np.zeros((6, 6), np.float32), 6)
    np.testing.assert_allclose(got_a, want_a, rtol=1e-6)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-6)
    data = [49, 50, 51, 52, 53, 54, 55, 56, 57]
    assert int(ip.user_ns["crc"](np.array(data, np.int32))) == plain_crc(data) == 0x29B1
    report = autolax.trace_check(ip.user_ns["crc"], np.array(data, np.int32))
    assert [r.became for r in report.rows if r.kind == "if"] == ["lax.select"]
