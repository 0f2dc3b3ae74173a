"""`autolax convert` (issue 5): converted modules run under plain `jax.jit` like the original
Python; bad input is one line on stderr, exit 2, and writes nothing; --check / --diff;
directories; output converted again is unchanged. Most tests call `cli.main` in-process; a
few run the installed command to check the process boundary (exit codes, no traceback)."""

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autolax import cli
from autolax.cli import files
from autolax.frontend.transpile import syntax
from conftest import assert_close, load_module

DATA = Path(__file__).parents[1] / "data"
EXAMPLES = DATA / "cli_examples.py"

DECORATED = '''\
import jax.numpy as jnp

import autolax


@autolax.jit
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
'''


load = load_module


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write(path, text, mode="w"):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def copy_args(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


# ----------------------------------------------------------------------------- behaviour
@pytest.fixture(scope="module")
def original():
    return load(EXAMPLES, "cli_examples_original")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("default") / "cli_examples_default.py"
    assert cli.main(["convert", "--all", str(EXAMPLES), "-o", str(out)]) == 0
    return load(out, "cli_examples_default"), out.read_text()


@pytest.fixture(scope="module")
def standalone(tmp_path_factory, original):
    out = tmp_path_factory.mktemp("standalone") / "cli_examples_standalone.py"
    assert cli.main(["convert", "--standalone", "--all", str(EXAMPLES), "-o", str(out)]) == 0
    return load(out, "cli_examples_standalone"), out.read_text()


def _jit(module, original, name):
    return jax.jit(getattr(module, name), static_argnames=original.STATIC_ARGNAMES.get(name))


@pytest.mark.parametrize("name", sorted(load(EXAMPLES, "cli_examples_names").INPUTS))
def test_default_output_matches_python_under_plain_jit(original, converted, name):
    module, _ = converted
    for args in original.INPUTS[name]:
        expected = getattr(original, name)(*copy_args(args))
        assert_close(expected, _jit(module, original, name)(*copy_args(args)))


@pytest.mark.parametrize("name", sorted(load(EXAMPLES, "cli_examples_names").INPUTS))
def test_standalone_output_matches_python_under_plain_jit(original, standalone, name):
    module, _ = standalone
    for args in original.INPUTS[name]:
        expected = getattr(original, name)(*copy_args(args))
        assert_close(expected, _jit(module, original, name)(*copy_args(args)))


def test_standalone_output_imports_no_autolax(standalone):
    _, text = standalone
    imports = [n for n in syntax.walk(syntax.parse(text)) if isinstance(n, (syntax.Import, syntax.ImportFrom))]
    modules = [a.name for n in imports for a in n.names] + [n.module for n in imports if isinstance(n, syntax.ImportFrom)]
    assert not [m for m in modules if m and m.split(".")[0] == "autolax"]
    assert "autolax_runtime" in modules


def test_standalone_output_is_the_default_output_with_the_runtime_copied(converted, standalone):
    """One lowering: the two outputs differ in the runtime's import only."""
    (_, default), (_, alone) = converted, standalone
    assert "from autolax.runtime import ops\n" in default
    assert alone == default.replace("from autolax.runtime import ops\n", "from autolax_runtime import ops\n")


def test_converted_loops_are_staged_not_unrolled(original, converted, standalone):
    for module, _ in (converted, standalone):
        jaxpr = str(jax.make_jaxpr(module.collatz_steps)(jnp.int32(27)))
        assert "while[" in jaxpr and "cond[" in jaxpr
        jaxpr = str(jax.make_jaxpr(module.relu_sum)(jnp.arange(5.0)))
        assert "scan[" in jaxpr


def test_default_output_keeps_runtime_error_messages(tmp_path):
    # Code loaded from a converted file carries its statements' descriptors: the runtime
    # names the variable and the user's original file and line, as the decorator does.
    src = write(tmp_path / "shapes.py", "import autolax\nimport jax.numpy as jnp\n\n\n@autolax.jit\ndef f(x):\n"
                "    if x > 0:\n        y = jnp.ones(2)\n    else:\n        y = jnp.ones(3)\n    return y\n")
    out = tmp_path / "shapes_conv.py"
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    module = load(out, "shapes_conv")
    with pytest.raises(Exception) as info:
        module.f(2.0)  # @jax.jit now: x is traced
    assert type(info.value).__name__ == "StateMismatchError"
    assert f"'y' is float32[2] in the `if` branch and float32[3] in the `else` branch of the `if` at {src}:7" in str(info.value)
    assert "    if x > 0:" in str(info.value)  # the source line, read from the original file


def test_default_output_names_the_users_line_in_run_time_errors(tmp_path):
    # A read Python may find unbound (the `if` assigns 'y' on one side) is checked when the
    # program runs; the check names the original file's line, not the written file's.
    src = write(tmp_path / "onebranch.py", "import autolax\n\n\n@autolax.jit\ndef f(x):\n    if x > 0:\n"
                "        y = 1.0\n    return y\n")
    out = tmp_path / "onebranch_conv.py"
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    assert "return ops.assigned(y, at='onebranch.py:8')" in out.read_text()  # relative to the written file
    module = load(out, "onebranch_conv")
    assert float(module.f(2.0)) == 1.0  # the branch that assigns 'y' ran: Python's value
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        module.f(-2.0)  # Python: UnboundLocalError; under plain jax.jit, JAX's run-time error
    assert "UndefinedVariableError: cannot access local variable 'y'" in str(info.value)
    assert f"(at {src}:8)" in str(info.value)


# ----------------------------------------------------------------------------- output
def test_stdout_without_output(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    before = digest(src)
    assert cli.main(["convert", str(src)]) == 0
    out = capsys.readouterr().out
    assert "@jax.jit\ndef collatz_steps(n):" in out
    assert "n, steps = ops.while_loop(lambda n, steps: n != 1, loop_body, (n, steps), at='m.py:9')" in out  # beside the source
    assert "from autolax.runtime import ops\n" in out and "import autolax\n" not in out
    assert digest(src) == before  # the input is never modified


def test_output_file_and_idempotency(tmp_path):
    src = write(tmp_path / "m.py", DECORATED)
    first = tmp_path / "out1.py"
    second = tmp_path / "out2.py"
    assert cli.main(["convert", str(src), "-o", str(first)]) == 0
    assert cli.main(["convert", str(first), "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    third = tmp_path / "out3.py"
    assert cli.main(["convert", "--all", str(first), "-o", str(third)]) == 0
    assert first.read_bytes() == third.read_bytes()


def test_idempotent_on_the_example_module(tmp_path, original, converted, standalone):
    _, text = converted
    again = tmp_path / "again.py"
    assert cli.main(["convert", "--all", str(write(tmp_path / "d.py", text)), "-o", str(again)]) == 0
    assert again.read_text() == text
    _, text = standalone
    argv = ["convert", "--standalone", "--all", str(write(tmp_path / "s.py", text)), "-o", str(tmp_path / "s2.py")]
    assert cli.main(argv) == 0
    assert (tmp_path / "s2.py").read_text() == text


def test_output_into_existing_directory(tmp_path):
    src = write(tmp_path / "m.py", DECORATED)
    (tmp_path / "build").mkdir()
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "build")]) == 0
    assert "ops.while_loop" in (tmp_path / "build" / "m.py").read_text()


def test_directory_is_mirrored(tmp_path):
    root = tmp_path / "pkg"
    write(root / "__init__.py", "")
    write(root / "sub" / "mod.py", DECORATED)
    write(root / "plain.py", "def f(x):\n    return x\n")
    write(root / "notes.txt", "not python")
    write(root / "__pycache__" / "cached.py", "syntax error (")
    write(root / ".hidden" / "h.py", "syntax error (")
    out = tmp_path / "out"
    assert cli.main(["convert", str(root), "-o", str(out)]) == 0
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    # notes.txt is the package's data: copied as it is (issue 43, item 19)
    assert written == ["__init__.py", "notes.txt", "plain.py", os.path.join("sub", "mod.py")]
    assert (out / "notes.txt").read_text() == "not python"
    assert "ops.while_loop" in (out / "sub" / "mod.py").read_text()
    assert (out / "plain.py").read_text() == "def f(x):\n    return x\n"


def test_several_inputs_go_into_output_directory(tmp_path):
    a = write(tmp_path / "a.py", DECORATED)
    b = write(tmp_path / "lib" / "b.py", DECORATED)
    assert cli.main(["convert", str(a), str(tmp_path / "lib"), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "a.py").exists()
    # The same code, whose descriptors and line map name each one's own source file: a file
    # given as SRC relative to the written file, a file of a converted directory by its path in it.
    assert (tmp_path / "out" / "lib" / "b.py").read_text() == (tmp_path / "out" / "a.py").read_text().replace(
        "'../a.py:", "'lib/b.py:").replace("source_lines('../a.py',", "source_lines('lib/b.py',")
    assert b.read_text() == DECORATED


def test_line_endings_and_encoding_are_kept(tmp_path):
    text = "# -*- coding: latin-1 -*-\n" + DECORATED.replace("steps = 0\n", "steps = 0  # caf\xe9\n")
    src = write(tmp_path / "m.py", text.replace("\n", "\r\n").encode("latin-1"))
    out = tmp_path / "o.py"
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert "steps = 0  # caf\xe9".encode("latin-1") in data


def test_unchanged_output_is_not_rewritten(tmp_path):
    src = write(tmp_path / "m.py", DECORATED)
    out = tmp_path / "o.py"
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    os.utime(out, (1_000_000, 1_000_000))
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    assert out.stat().st_mtime == 1_000_000


def test_write_is_atomic(tmp_path, monkeypatch, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    out = write(tmp_path / "o.py", "previous content\n")

    def fail(a, b):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", fail)
    assert cli.main(["convert", str(src), "-o", str(out)]) == 2
    assert out.read_text() == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "o.py"]  # no temporary left
    assert capsys.readouterr().err == f"{out}: error: cannot write: No space left on device\n"


# ----------------------------------------------------------------------------- --check / --diff
def test_check_exit_codes(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    plain = write(tmp_path / "plain.py", "def f(x):\n    return x\n")
    assert cli.main(["convert", "--check", str(plain)]) == 0
    assert cli.main(["convert", "--check", str(src)]) == 1
    err = capsys.readouterr().err
    assert f"would change {src}" in err
    out = tmp_path / "o.py"
    assert cli.main(["convert", "--check", str(src), "-o", str(out)]) == 1
    assert not out.exists()  # --check writes nothing
    assert cli.main(["convert", str(src), "-o", str(out)]) == 0
    assert cli.main(["convert", "--check", str(src), "-o", str(out)]) == 0  # up to date
    write(out, out.read_text() + "# edited\n")
    assert cli.main(["convert", "--check", str(src), "-o", str(out)]) == 1


def test_diff(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    assert cli.main(["convert", "--diff", str(src)]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith(f"--- {src}\n+++ {src}\n@@ ")
    assert "\n-@autolax.jit\n+@jax.jit\n" in diff
    assert "\n-import autolax\n+import jax\n+from autolax.runtime import ops\n" in diff
    assert "\n+    n, steps = ops.while_loop(lambda n, steps: n != 1, loop_body, (n, steps), at='m.py:9')\n" in diff
    out = tmp_path / "o.py"
    assert cli.main(["convert", "--diff", str(src), "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"--- /dev/null\n+++ {out}\n")
    assert not out.exists()
    assert cli.main(["convert", "--diff", "--check", str(src)]) == 1


# ----------------------------------------------------------------------------- errors
def _error(capsys, argv):
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("existing", [True, False])
def test_syntax_error(tmp_path, capsys, existing):
    src = write(tmp_path / "bad.py", "import autolax\n\n@autolax.jit\ndef f(x:\n    return x\n")
    out = tmp_path / "out.py"
    if existing:
        write(out, "keep me\n")
    line = _error(capsys, ["convert", str(src), "-o", str(out)])
    assert line.startswith(f"{src}:4:")
    assert ": error: invalid syntax" in line
    assert (out.read_text() == "keep me\n") if existing else not out.exists()


def test_unsupported_construct_leaves_output_intact(tmp_path, capsys):
    src = write(tmp_path / "gen.py", "import autolax\n\n\n@autolax.jit\ndef f(xs):\n    for x in xs:\n"
                "        yield x\n")
    out = write(tmp_path / "out.py", "keep me\n")
    line = _error(capsys, ["convert", str(src), "-o", str(out)])
    assert line == f"{src}:7:9: error: `yield` makes 'f' a generator; autolax converts plain functions only"
    assert out.read_text() == "keep me\n"


def test_missing_file(tmp_path, capsys):
    line = _error(capsys, ["convert", str(tmp_path / "missing.py")])
    assert line == f"{tmp_path / 'missing.py'}: error: cannot read: No such file or directory"


def test_not_a_python_file(tmp_path, capsys):
    notes = write(tmp_path / "notes.txt", "hello\n")
    assert _error(capsys, ["convert", str(notes)]) == f"{notes}: error: not a Python source file (expected a .py file)"
    binary = write(tmp_path / "blob.py", b"\x7fELF\x00\x01")
    assert _error(capsys, ["convert", str(binary)]) == f"{binary}: error: not a Python source file (it contains NUL bytes)"
    latin = write(tmp_path / "latin.py", "x = 'caf\xe9'\n".encode("latin-1"))
    assert _error(capsys, ["convert", str(latin)]) == (
        f"{latin}: error: cannot decode: invalid or missing encoding declaration"
    )


def test_one_bad_file_writes_nothing_with_all_or_nothing(tmp_path, capsys):
    root = tmp_path / "pkg"
    write(root / "a.py", DECORATED)
    write(root / "b.py", "def broken(:\n")
    line = _error(capsys, ["convert", "--all-or-nothing", str(root), "-o", str(tmp_path / "out")])
    assert line.startswith(f"{root / 'b.py'}:1:")
    assert not (tmp_path / "out").exists()


def test_one_bad_file_is_reported_and_the_others_are_written(tmp_path, capsys):
    root = tmp_path / "pkg"
    write(root / "a.py", DECORATED)
    write(root / "b.py", "def broken(:\n")
    write(root / "c.py", "x = 1\n")
    assert cli.main(["convert", str(root), "-o", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{root / 'b.py'}:1:") and ": error: invalid syntax" in lines[0]
    assert lines[1:] == ["autolax convert: 1 of 3 files not converted (errors above); the other 2 were converted "
                         "(--all-or-nothing writes nothing when a file fails)"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.py", "c.py"]
    assert "ops.while_loop" in (tmp_path / "out" / "a.py").read_text()
    assert (tmp_path / "out" / "c.py").read_text() == "x = 1\n"


def test_output_may_not_overwrite_input(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    line = _error(capsys, ["convert", str(src), "-o", str(src)])
    assert line == f"{src}: error: the output would overwrite an input file; autolax convert never modifies its input"
    assert src.read_text() == DECORATED


def test_only_names_must_exist(tmp_path, capsys):
    src = write(tmp_path / "m.py", "def f(x):\n    return x\n")
    assert _error(capsys, ["convert", "--only", "f,g", str(src)]) == f"{src}: error: --only: no function named 'g'"


def test_several_inputs_need_an_output_directory(tmp_path, capsys):
    a = write(tmp_path / "a.py", DECORATED)
    b = write(tmp_path / "b.py", DECORATED)
    assert _error(capsys, ["convert", str(a), str(b)]) == (
        f"{a}: error: several input files: give -o OUT_DIR (or use --diff / --check)"
    )


def test_only_and_all_select_functions(tmp_path, capsys):
    src = write(tmp_path / "m.py", textwrap.dedent('''\
        def f(x):
            if x > 0:
                x = -x
            return x


        class C:
            def g(self, x):
                while x > 1:
                    x = x / 2
                return x
        '''))
    assert cli.main(["convert", "--only", "C.g", str(src)]) == 0
    out = capsys.readouterr().out
    assert "ops.while_loop" in out and "ops.cond" not in out
    assert cli.main(["convert", "--all", str(src)]) == 0
    out = capsys.readouterr().out
    assert "ops.while_loop" in out and "ops.cond" in out


# ----------------------------------------------------------------------------- the command
def _autolax(*args):
    return subprocess.run([sys.executable, "-m", "autolax", *args], capture_output=True, text=True, timeout=300)


def test_python_m_autolax_convert(tmp_path):
    src = write(tmp_path / "m.py", DECORATED)
    out = tmp_path / "o.py"
    result = _autolax("convert", "--standalone", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "ops.while_loop(lambda n, steps: n != 1, loop_body, (n, steps)" in out.read_text()
    assert (tmp_path / "autolax_runtime" / "ops" / "loops.py").is_file()
    bad = write(tmp_path / "bad.py", "def f(:\n")
    result = _autolax("convert", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith(f"{bad}:1:") and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    assert "convert" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["convert", "--help"])
    text = capsys.readouterr().out
    for flag in ("-o OUT", "--standalone", "--diff", "--check", "--all", "--only NAME,..."):
        assert flag in text
    assert "--static" not in text and "--signature" not in text  # accepted, ignored (see test_standalone.py)


def test_internal_errors_are_one_line_too(tmp_path, capsys, monkeypatch):
    src = write(tmp_path / "m.py", DECORATED)

    def broken(text, path, options, written_as=None):
        raise TypeError("unexpected node")

    monkeypatch.setattr(files, "convert_source", broken)
    monkeypatch.delenv("AUTOLAX_TRACEBACK", raising=False)
    assert _error(capsys, ["convert", str(src)]) == (
        f"{src}: error: internal error of autolax convert (TypeError: unexpected node); please report it "
        "(AUTOLAX_TRACEBACK=1 shows the traceback)"
    )
    monkeypatch.setenv("AUTOLAX_TRACEBACK", "1")
    with pytest.raises(TypeError):
        cli.main(["convert", str(src)])


def test_all_leaves_what_it_cannot_convert(tmp_path, capsys):
    text = textwrap.dedent('''\
        def pairs(xs):
            def gen():
                for x in xs:
                    yield x, x
            return list(gen())


        def halve(x):
            while x > 1:
                x = x / 2
            return x
        ''')
    src = write(tmp_path / "m.py", text)
    assert cli.main(["convert", "--all", str(src)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"{src}:4:13: warning: 'pairs' is left as it is (--all): `yield` makes 'gen' a generator; autolax "
        "converts plain functions only\n"
    )
    assert captured.out.startswith("from autolax.runtime import ops\n\n\n" + text[: text.index("def halve")])
    assert "ops.while_loop" in captured.out
    # Asked for by name, the same function is an error.
    assert _error(capsys, ["convert", "--only", "pairs", str(src)]).startswith(f"{src}:4:13: error: `yield`")


NESTED = '''\
import sys


class Outer:
    class Inner:
        def step(self, x):
            if x > 0:
                x = x + 1
            return x


if sys.version_info >= (3, 8):
    def guarded(x):
        if x > 0:
            x = x * 4
        return x
else:
    def guarded(x):
        return x

try:
    class Optional:
        def step(self, x):
            if x > 0:
                x = x * 3
            return x
except ImportError:
    pass


def factory():
    class Local:
        def step(self, x):
            if x > 0:
                x = x * 2
            return x

    return Local
'''


@pytest.mark.parametrize("standalone", [False, True])
def test_all_reaches_every_method(tmp_path, capsys, standalone):
    """--all converts methods of nested classes, definitions inside module-level `if` /
    `try` blocks, and the methods of a class defined inside a function (in place: the
    `--standalone` output has no converter to convert them when they are called)."""
    src = write(tmp_path / "nested.py", NESTED)
    out = tmp_path / "nested_out.py"
    assert cli.main(["convert", "--all", str(src), "-o", str(out)] + (["--standalone"] if standalone else [])) == 0
    assert capsys.readouterr().err == ""
    module = load(out, f"nested_out_{standalone}")
    for x in (-2.0, 3.0):
        assert float(jax.jit(module.Outer.Inner().step)(jnp.float32(x))) == (x + 1 if x > 0 else x)
        assert float(jax.jit(module.guarded)(jnp.float32(x))) == (x * 4 if x > 0 else x)
        assert float(jax.jit(module.Optional().step)(jnp.float32(x))) == (x * 3 if x > 0 else x)
        assert float(jax.jit(module.factory()().step)(jnp.float32(x))) == (x * 2 if x > 0 else x)


RECURSIVE = '''\
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


def uses(n):
    return fact(n) + 1
'''


def test_recursion_under_a_traced_condition_is_the_runtimes_error_not_a_crash(tmp_path):
    """A function of the file calling itself (directly or through another) keeps the
    runtime's recursion guard (`ops.call`): under plain jax.jit the default output raised
    no error but recursed while tracing until the process crashed (a segmentation fault),
    where `autolax.jit` raises TracedRecursionError."""
    import autolax

    src = write(tmp_path / "rec.py", RECURSIVE)
    out = tmp_path / "rec_out.py"
    assert cli.main(["convert", "--all", str(src), "-o", str(out)]) == 0
    text = out.read_text()
    assert "ops.call(fact, n - 1)" in text and "ops.call(is_odd, n - 1)" in text and "ops.call(is_even, n - 1)" in text
    assert "return fact(n) + 1" in text  # not in a cycle: called directly
    module = load(out, "rec_out")
    for name in ("fact", "is_even", "uses"):
        with pytest.raises(autolax.TracedRecursionError):
            jax.jit(getattr(module, name))(5)
    assert module.fact(5) == 120 and module.is_even(5) is False and module.uses(4) == 25
    assert int(jax.jit(module.fact, static_argnums=0)(5)) == 120


def test_partial_of_autolax_jit_is_a_decorator_of_autolax(tmp_path):
    """`@partial(autolax.jit, static_argnums=...)` (as people write it for jax.jit) is
    converted like `@autolax.jit(static_argnums=...)`: it becomes `@partial(jax.jit, ...)`
    without autolax-only options; the default output kept autolax.jit around the converted
    code."""
    source = textwrap.dedent('''\
        from functools import partial
        import functools

        import autolax


        @partial(autolax.jit, static_argnums=(1,))
        def settle(x, n_max):
            steps = 0
            while abs(x) > 0.01 and steps < n_max:
                x = x * 0.5
                steps += 1
            return x, steps


        @functools.partial(
            autolax.jit,
            static_argnames=("n",),
            strict=True,
        )
        def g(x, n):
            for i in range(n):
                if x > 0:
                    x = x - 1.0
            return x


        @partial(autolax.convert)
        def h(x):
            if x > 0:
                return x
            return -x
        ''')
    src = write(tmp_path / "part.py", source)
    for flag in ([], ["--standalone"]):
        out = tmp_path / f"out{len(flag)}.py"
        assert cli.main(["convert", *flag, str(src), "-o", str(out)]) == 0
        text = out.read_text()
        # (`abs(x)` may need a Python value: the converted function's own decorator, the last)
        assert "@partial(jax.jit, static_argnums=(1,))\n@ops.function\ndef settle" in text
        assert "@functools.partial(jax.jit, static_argnames=('n',))\n@ops.options(strict=True)\ndef g" in text
        assert "\n\ndef h(x):" in text and "autolax.jit" not in text and "autolax.convert" not in text
        module = load(out, f"part_out{len(flag)}")
        x, steps = module.settle(5.0, 3)
        assert_close(x, 0.625) and int(steps) == 3
        assert_close(module.g(2.5, 4), -0.5)
        assert_close(module.h(-2.0), 2.0)


def test_standalone_all_output_converted_again_is_unchanged(tmp_path):
    """`--standalone --all` of its own output: the functions already call the runtime (from
    its copy) and are left as they are; the copy is rewritten as it was."""
    source = textwrap.dedent('''\
        import jax.numpy as jnp


        def safe_log(x):
            assert x > 0, "x must be positive"
            return jnp.log(x)


        def sign(x, y):
            if x > y:
                z = x
            else:
                z = 1
            return z
        ''')
    src = write(tmp_path / "m.py", source)
    once, twice = tmp_path / "once.py", tmp_path / "twice.py"
    assert cli.main(["convert", "--standalone", "--all", str(src), "-o", str(once)]) == 0
    assert "from autolax_runtime import ops\n" in once.read_text() and "ops.asserting(" in once.read_text()
    runtime = {p: p.read_bytes() for p in (tmp_path / "autolax_runtime").rglob("*.py")}
    assert cli.main(["convert", "--standalone", "--all", str(once), "-o", str(twice)]) == 0
    assert twice.read_text() == once.read_text()
    assert {p: p.read_bytes() for p in (tmp_path / "autolax_runtime").rglob("*.py")} == runtime


@pytest.mark.parametrize("flags", [["--static", "n"], ["--signature", "f(x: float)"]])
def test_options_of_the_old_static_backend_are_ignored_with_a_warning(tmp_path, capsys, flags):
    """--static and --signature told the static --standalone backend what it could not know;
    --standalone output now decides when traced, as autolax.jit does. Scripts that pass them
    keep working: a warning, the same output."""
    src = write(tmp_path / "m.py", DECORATED)
    plain, flagged = tmp_path / "plain.py", tmp_path / "flagged.py"
    assert cli.main(["convert", "--standalone", str(src), "-o", str(plain)]) == 0
    capsys.readouterr()
    assert cli.main(["convert", "--standalone", *flags, str(src), "-o", str(flagged)]) == 0
    assert capsys.readouterr().err == (
        f"autolax convert: warning: {flags[0]} is no longer needed and is ignored: the output decides what is "
        "traced when the program runs (use static_argnames on jax.jit for Python values)\n")
    assert flagged.read_text() == plain.read_text()


# ----------------------------------------------------------------------------- the source's lines
LINES_SOURCE = '''\
import jax.numpy as jnp

import autolax


@autolax.jit(static_argnums=1)
def split(x, groups):
    total = x * 0.0
    for i in range(3):
        total = total + x
    size = 6 // groups
    return total + size


if __name__ == "__main__":
    split(jnp.float32(1.0), 0)
'''


def _user_frames(exc, name):
    import traceback

    return [(f.filename, f.lineno, f.line) for f in traceback.extract_tb(exc.__traceback__)
            if os.path.basename(f.filename) == name]


@pytest.mark.parametrize("standalone", [False, True])
def test_the_written_file_runs_with_the_source_s_lines(tmp_path, standalone):
    # (issue 43 item 16) Its one line of bookkeeping, before the `__main__` block, gives its
    # functions the source's file and lines: the traceback names `m.py:11` and its text.
    import runpy

    src = write(tmp_path / "src" / "m.py", LINES_SOURCE)
    out = tmp_path / "gen" / "m.py"
    assert cli.main(["convert", str(src), "-o", str(out)] + (["--standalone"] if standalone else [])) == 0
    written = out.read_text()
    [line] = [ln for ln in written.splitlines() if "source_lines(" in ln]
    assert line.startswith("ops.source_lines('../src/m.py', '") and len(line) < 80, line
    assert written.index(line) < written.index('if __name__ == "__main__":')
    sys.path.insert(0, str(out.parent))
    try:
        with pytest.raises(ZeroDivisionError) as info:
            runpy.run_path(str(out), run_name="__main__")
        assert _user_frames(info.value, "m.py")[-1] == (str(src), 11, "size = 6 // groups")
        # Without the source where the file runs, the written file's own lines: the code that runs.
        src.rename(tmp_path / "src" / "moved.py")
        with pytest.raises(ZeroDivisionError) as info:
            runpy.run_path(str(out), run_name="__main__")
        filename, lineno, text = _user_frames(info.value, "m.py")[-1]
        assert filename == str(out) and lineno != 11
        assert text == "size = 6 // groups" == written.splitlines()[lineno - 1].strip()
        # Edited since it was written (a line added above: the map no longer fits), the same.
        (tmp_path / "src" / "moved.py").rename(src)
        out.write_text("# edited\n" + written)
        with pytest.raises(ZeroDivisionError) as info:
            runpy.run_path(str(out), run_name="__main__")
        assert _user_frames(info.value, "m.py")[-1] == (str(out), lineno + 1, "size = 6 // groups")
    finally:
        sys.path.remove(str(out.parent))


METHODS_SOURCE = '''\
import jax.numpy as jnp


def logged(fn):
    def wrapper(*args):
        return fn(*args)
    return wrapper


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        y = x * self.k
        return y / complex(y)

    @staticmethod
    def halve(x):
        return x / complex(x)


@logged
def wrapped(x):
    y = x + 1.0
    return y / complex(y)
'''


@pytest.mark.parametrize("standalone", [False, True])
def test_methods_and_wrapped_functions_run_with_the_source_s_lines(tmp_path, standalone):
    # The functions the module's names reach: a class's methods (a static one too), and a
    # function a decorator wrapped (held in the wrapper's closure).
    src = write(tmp_path / "src" / "m.py", METHODS_SOURCE)
    out = tmp_path / "gen" / "m.py"
    assert cli.main(["convert", "--all", str(src), "-o", str(out)] + (["--standalone"] if standalone else [])) == 0
    module = load_module(out, f"methods_lines_{int(standalone)}")
    calls = [(lambda x: module.Scaler(2.0).scale(x), 16, "return y / complex(y)"),
             (module.Scaler.halve, 20, "return x / complex(x)"),
             (module.wrapped, 26, "return y / complex(y)")]
    for call, line, text in calls:
        with pytest.raises(Exception) as info:  # noqa: PT011 - the runtime's class, or its copy's
            jax.jit(call)(jnp.float32(3.0))
        assert type(info.value).__name__ == "TracedValueError", info.value
        assert f"the statement at {src}:{line} " in str(info.value) and f"\n    {text}\n" in str(info.value), \
            (line, str(info.value))
