"""``autolax convert`` on real trees (issue 43, items 2, 5, 6, 16, 18, 19, 20): each case
runs the original module as Python and both CLI outputs (default, ``--standalone``) and
compares what they return, raise and print."""

import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax import cli
from conftest import load_module

OUTPUTS = ("default", "standalone")


def write(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def convert(tmp_path, src, output, *flags, out_name=None):
    """Converts ``src`` (a file) with ``autolax convert --all`` into a fresh folder: the
    written module, loaded."""
    folder = tmp_path / output
    out = folder / (out_name or src.name)
    argv = ["convert", "--all", *flags, str(src), "-o", str(out)]
    if output == "standalone":
        argv.insert(1, "--standalone")
    assert cli.main(argv) == 0
    return load_module(out, f"cli_real_{output}_{src.stem}_{abs(hash(str(tmp_path)))}")


def outcome(call):
    try:
        return "value", np.asarray(jax.block_until_ready(call()))
    except Exception as exc:  # noqa: BLE001 - the outcome compared
        return "raised", type(exc).__name__


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "raised":
        return a[1] == b[1]
    return a[1].shape == b[1].shape and np.allclose(a[1], b[1])


# ----------------------------------------------------------------------------- item 2
NESTED_DECORATORS = """\
    import functools

    import jax
    import jax.numpy as jnp
    from jax import jit, vmap


    def no_branch(x):
        @vmap
        def per_row(p):
            return jnp.sum(p)
        return per_row(x)


    def stacked(x):
        # comment before
        @jit  # comment on the decorator
        # comment between
        @vmap
        def per_row(p):
            return jnp.sum(p) * 2
        return per_row(x)


    def with_partial(x):
        @functools.partial(jnp.vectorize, signature="(n)->()")
        def norm(p):
            return jnp.sqrt(jnp.sum(p * p))
        return norm(x)


    def with_branch(x):
        @vmap
        def per_row(p):
            total = 0.0
            for v in p:
                total = total + v * v
            return total
        return per_row(x)


    def local_class(x):
        @functools.total_ordering
        class Box:
            def __init__(self, v):
                self.v = v

            def __eq__(self, other):
                return self.v == other.v

            def __lt__(self, other):
                return self.v < other.v
        return Box(1) <= Box(2), x
"""


@pytest.mark.parametrize("output", OUTPUTS)
def test_nested_decorators_are_kept(tmp_path, output):
    src = write(tmp_path / "nested.py", NESTED_DECORATORS)
    original = load_module(src, f"nested_original_{output}")
    converted = convert(tmp_path, src, output)
    x = jnp.arange(6.0).reshape(3, 2) - 2.0
    for name in ("no_branch", "stacked", "with_partial", "with_branch"):
        expected = outcome(lambda: getattr(original, name)(x))
        assert expected[0] == "value" and expected[1].shape == (3,)
        for call in (lambda: getattr(converted, name)(x), lambda: jax.jit(getattr(converted, name))(x)):
            got = outcome(call)
            assert same(got, expected), (name, got, expected)
    assert converted.local_class(1.0)[0] is True
    text = (tmp_path / output / "nested.py").read_text()
    assert "@functools.total_ordering" in text and "@functools.partial(jnp.vectorize" in text
    assert "# comment on the decorator\n" in text and "# comment between\n" in text


# ----------------------------------------------------------------------------- item 20
def test_version():
    result = subprocess.run([sys.executable, "-m", "autolax", "--version"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"autolax {autolax.__version__} (jax {jax.__version__}, Python ")
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'version = "{autolax.__version__}"' in pyproject


def test_packaging_files_exist():
    root = Path(__file__).parents[2]
    pyproject = (root / "pyproject.toml").read_text()
    assert 'license = "Apache-2.0"' in pyproject
    assert "Apache License" in (root / "LICENSE").read_text() and "Version 2.0" in (root / "LICENSE").read_text()
    assert '"py.typed"' in pyproject and (root / "autolax" / "py.typed").is_file()
    changelog = (root / "CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog and f"## {autolax.__version__}" in changelog


# ----------------------------------------------------------------------------- item 5
OPTIONS_SOURCE = """\
    import functools

    import jax
    import jax.numpy as jnp

    import autolax


    @autolax.jit(max_steps=100)
    def grows(x):
        while x < 10.0:
            x = x * 1.5
        return x


    @functools.partial(autolax.jit, static_argnames=("n",), strict=True)
    def picks(x, n):
        weights = [1.0, 2.0, 3.0]
        for i in range(n):
            x = x * weights[i]   # a Python list indexed by the loop index: unrolled
        return x


    @autolax.convert(max_steps=50, strict=False)
    def grows_too(x):
        while x < 10.0:
            x = x * 1.5
        return x
"""


def test_autolax_only_options_come_from_the_signatures():
    from autolax.cli.convert import _carried, autolax_only_options

    assert set(autolax_only_options("jit")) == {"strict", "max_steps"}
    assert set(autolax_only_options("convert")) == {"recursive", "strict", "max_steps"}
    # every one of them is carried by the runtime (else the CLI refuses it, tested below)
    assert set(autolax_only_options("jit")) | set(autolax_only_options("convert")) <= _carried()


@pytest.mark.parametrize("output", OUTPUTS)
def test_options_of_autolax_jit_are_carried(tmp_path, output):
    src = write(tmp_path / "opts.py", OPTIONS_SOURCE)
    original = load_module(src, f"opts_original_{output}")
    converted = convert(tmp_path, src, output)
    text = (tmp_path / output / "opts.py").read_text()
    assert "@jax.jit\n@ops.options(max_steps=100)\ndef grows" in text
    assert "@ops.options(max_steps=50, strict=False)\ndef grows_too" in text
    # 2.0 -> 3.0 -> 4.5 -> 6.75 -> 10.125: the value is 10.125 and its derivative 1.5 ** 4
    for module in (original, converted):
        assert float(module.grows(2.0)) == 10.125
        assert float(jax.grad(module.grows)(2.0)) == 1.5 ** 4
        assert float(jax.grad(jax.jit(module.grows_too))(2.0)) == 1.5 ** 4
    # strict=True: the loop that must be unrolled is an error on both, not a warning
    for module in (original, converted):
        with pytest.raises(Exception) as info:
            module.picks(1.0, 3)
        assert type(info.value).__name__ == "UnrolledLoopError"
        assert "opts.py:19" in str(info.value)


def test_options_the_runtime_cannot_carry_are_refused(tmp_path, capsys, monkeypatch):
    from autolax.cli import convert as convert_module

    src = write(tmp_path / "opts.py", OPTIONS_SOURCE)
    monkeypatch.setattr(convert_module, "_carried", lambda: {"strict"})
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "out.py")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{src}:9:24: error: @autolax.jit(max_steps=...) has no equivalent in a converted file (autolax's runtime "
        "cannot carry it); remove it or convert this function with autolax.jit instead of autolax convert"]
    assert not (tmp_path / "out.py").exists()


def test_a_mapping_of_options_is_refused(tmp_path, capsys):
    src = write(tmp_path / "opts.py", """\
        import autolax

        OPTS = {"max_steps": 10}


        @autolax.jit(**OPTS)
        def f(x):
            return x
    """)
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "out.py")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{src}:6:16: error: '**OPTS' in @autolax.jit(...): autolax convert must know which options it holds, "
        "since max_steps, strict are autolax's own (not jax.jit's); write the options out"]


# ----------------------------------------------------------------------------- item 19
PACKAGE_MODEL = """\
    import json
    import os

    import jax.numpy as jnp


    def load_table():
        with open(os.path.join(os.path.dirname(__file__), "data", "table.json")) as f:
            return json.load(f)


    def run(x):
        if x > 0:
            y = x * 2
        else:
            y = -x
        return y + load_table()["offset"]


    def half(x):
        if x > 0:
            z = jnp.ones(3)
        else:
            z = 1.0
        return z
"""

RUN_PACKAGE = """\
import sys
sys.path.insert(0, sys.argv[1])
import dataclasses, json  # the standard library's, not the package's dataclasses.py
import jax
import pkg
from pkg import model
out = [float(model.run(2.0)), float(model.run(-3.0))]
if sys.argv[2] == "jit":
    out += [float(jax.jit(model.run)(2.0)), float(jax.jit(model.run)(-3.0))]
    try:
        jax.jit(model.half)(1.0)
    except Exception as exc:
        out.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
print(json.dumps(out))
"""


def _package(tmp_path):
    src = tmp_path / "src" / "pkg"
    write(src / "__init__.py", "from pkg.model import run\n")
    write(src / "dataclasses.py", "raise ImportError('the package dataclasses.py shadowed the standard library')\n")
    write(src / "model.py", PACKAGE_MODEL)
    write(src / "data" / "table.json", '{"offset": 1.0}\n')
    (src / "data" / "weights.npy").write_bytes(bytes(range(256)) * 4)
    return src


def _run_package(folder, mode):
    result = subprocess.run([sys.executable, "-c", RUN_PACKAGE, str(folder), mode], capture_output=True, text=True,
                            timeout=300, cwd=folder)
    assert result.returncode == 0, result.stderr
    return __import__("json").loads(result.stdout)


@pytest.mark.parametrize("output", OUTPUTS)
def test_a_converted_package_imports_with_its_data_and_no_shadowing(tmp_path, output):
    src = _package(tmp_path)
    out = tmp_path / output
    argv = ["convert", "--all", str(src), "-o", str(out / "pkg")] + (["--standalone"] if output == "standalone" else [])
    assert cli.main(argv) == 0
    # the package's data is copied; the runtime is beside the package, not in it
    assert (out / "pkg" / "data" / "table.json").read_text() == '{"offset": 1.0}\n'
    assert (out / "pkg" / "data" / "weights.npy").read_bytes() == (src / "data" / "weights.npy").read_bytes()
    assert not (out / "pkg" / "autolax_runtime").exists()
    assert (out / "autolax_runtime" / "ops" / "loops.py").is_file() == (output == "standalone")
    # the descriptors name the source by its path in the converted tree
    text = (out / "pkg" / "model.py").read_text()
    assert "at='pkg/model.py:13 -> y'" in text and "../" not in text
    expected = _run_package(tmp_path / "src", "python")
    assert expected == [5.0, 4.0]
    got = _run_package(out, "jit")
    assert got[:4] == expected * 2
    assert got[4].startswith("StateMismatchError: 'z' is float32[3] in the `if` branch and float32[] in the `else` "
                             "branch of the `if` at pkg/model.py:21")
    # converting again changes nothing, the data included
    assert cli.main(argv + ["--check"]) == 0


# ----------------------------------------------------------------------------- item 6
CALLEES = """\
    import jax.numpy as jnp

    import autolax


    def helper(x):
        if x > 0:
            return x * 2.0
        return -x


    def twice(x):
        return helper(x) + helper(-x)


    class Scale:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            while x < self.k:
                x = x * 2.0
            return x


    def unused(x):
        if x > 0:
            return 1
        return 2


    @autolax.jit
    def f(x):
        return helper(x) + 1.0


    @autolax.jit
    def g(x):
        return twice(x) + Scale(10.0).apply(x)
"""


@pytest.mark.parametrize("output", OUTPUTS)
def test_functions_a_converted_function_calls_in_its_file_are_converted_with_it(tmp_path, output):
    src = write(tmp_path / "callees.py", CALLEES)
    original = load_module(src, f"callees_original_{output}")
    argv = ["convert", str(src), "-o", str(tmp_path / output / "callees.py")]
    assert cli.main(argv + (["--standalone"] if output == "standalone" else [])) == 0
    converted = load_module(tmp_path / output / "callees.py", f"callees_{output}_{abs(hash(str(tmp_path)))}")
    text = (tmp_path / output / "callees.py").read_text()
    assert "def unused(x):\n    if x > 0:\n        return 1" in text  # not called: as written
    python = {"f": lambda x: (x * 2.0 if x > 0 else -x) + 1.0}
    for x in (3.0, -3.0, 0.5):
        assert float(converted.f(x)) == float(original.f(x)) == python["f"](x)
    for x in (3.0, 0.5):  # (Scale.apply loops forever on x <= 0, in Python too)
        assert float(converted.g(x)) == float(original.g(x))
    # g(3.0): twice(3.0) = 6 + 3 = 9; Scale(10).apply(3.0) = 12: 21
    assert float(converted.g(3.0)) == 21.0


def test_a_callee_of_another_file_in_standalone_output_is_named_with_the_fix(tmp_path):
    write(tmp_path / "other.py", """\
        def helper2(x):
            if x > 0:
                return x * 2.0
            return -x
    """)
    src = write(tmp_path / "main.py", """\
        import autolax
        from other import helper2


        @autolax.jit
        def g(x):
            return helper2(x) + 1.0
    """)
    out = tmp_path / "out"
    assert cli.main(["convert", "--standalone", str(src), "-o", str(out / "main.py")]) == 0
    (out / "other.py").write_text((tmp_path / "other.py").read_text())
    script = "import sys; sys.path.insert(0, sys.argv[1]); import main; print(float(main.g(3.0)))"
    result = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=300,
                            cwd=out)
    assert result.returncode == 1
    assert ("autolax_runtime.errors.TracedValueError: 'helper2' (other.py) is called from converted code with "
            "traced values, but it was not converted: this program runs autolax's runtime without its converter "
            "(`autolax convert --standalone` output), which converts only the functions of a file it converts and "
            "those they call in that file, so 'helper2' runs as written, and line 2 uses a traced value as a Python "
            "bool: JAX has no concrete value to give Python there.\n"
            "Fix: convert other.py too (`autolax convert --standalone --all other.py -o ...`, or `--only helper2`), "
            "or use the default output (without --standalone), which converts 'helper2' when it is called"
            ) in result.stderr
    # converting other.py too gives Python's answer
    assert cli.main(["convert", "--standalone", "--all", str(tmp_path / "other.py"), "-o", str(out / "other.py")]) == 0
    result = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=300,
                            cwd=out)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == 7.0
