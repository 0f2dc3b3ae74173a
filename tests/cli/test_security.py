"""`autolax convert` never executes code from the tree it converts (issue 16, item 1).

Library calls are told from user calls by the imports as written (``import jax.numpy as
jnp`` names library code because ``jax`` is a known library package); no module is imported
because a converted file names it. ``python -m autolax`` also takes the working directory
off ``sys.path`` before importing anything, so files named like autolax's own dependencies
(``numpy.py``, ``jax.py``) in the tree do not run either.

Each planted module writes a marker file when it runs; the tests assert none appears.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autolax.cli import Options, convert_source

# Modules a converted file imports that autolax itself never imports: before the fix the
# CLI imported the library ones by name to recognise library calls.
NAMED_BY_THE_FILE = ["optax", "flax", "equinox", "chex", "haiku", "scipy", "statistics", "pandas", "mylocal"]
# Modules autolax imports itself: only `python -m` (working directory first on sys.path)
# could pick up a planted copy.
AUTOLAX_DEPENDENCIES = ["numpy", "jax", "gast"]

MODEL = '''\
import optax
import flax.linen as nn
import equinox as eqx
import chex
import haiku as hk
import scipy.special
import statistics
import pandas as pd
import mylocal
from mylocal import helper
import jax.numpy as jnp

import autolax


@autolax.jit
def step(x, n):
    for i in range(n):
        if x > 0:
            x = x - optax.scale(x) + scipy.special.expit(x) + helper(x)
        else:
            x = x + statistics.mean([1.0]) + eqx.filter(x) + mylocal.g(x)
    return jnp.tanh(x)
'''


def plant(tree: Path, names, marker_dir: Path):
    for name in names:
        (tree / f"{name}.py").write_text(
            f"open({str(marker_dir / name)!r}, 'w').write('ran')\n"
            "def helper(x):\n    return x\n"
            "def g(x):\n    return x\n"
        )


def markers(marker_dir: Path):
    return sorted(p.name for p in marker_dir.iterdir())


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    (root / "model.py").write_text(MODEL)
    return root, marker_dir


def console_script():
    path = shutil.which("autolax", path=os.path.dirname(sys.executable))
    if path is None:
        pytest.skip("the autolax console script is not installed beside this Python")
    return path


def run_cli(command, cwd, pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_convert_source_imports_nothing_the_file_names(tree, monkeypatch):
    """In process: converting a file that imports planted modules importable from sys.path
    runs none of them and adds nothing to sys.modules."""
    root, marker_dir = tree
    plant(root, NAMED_BY_THE_FILE, marker_dir)
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    for standalone in (False, True):
        convert_source(MODEL, str(root / "model.py"), Options(standalone=standalone, all=True))
    assert markers(marker_dir) == []
    assert set(sys.modules) - before == set()


def test_library_calls_recognised_from_the_import_text():
    """Known library packages are library code by their import path: their calls are left as
    written; names from other modules may be user code and go through ops.call."""
    out = convert_source(MODEL, "model.py", Options()).text
    assert "optax.scale(x)" in out and "scipy.special.expit(x)" in out and "statistics.mean([1.0])" in out
    assert "eqx.filter(x)" in out and "jnp.tanh(x)" in out
    assert "ops.call(helper, x)" in out and "ops.call(mylocal.g, x)" in out


ENTRY_POINTS = ["python -m autolax", "autolax script"]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("where", ["inside", "inside, PYTHONPATH=.", "outside", "outside, PYTHONPATH=tree"])
def test_cli_runs_no_planted_module(tree, entry, where):
    root, marker_dir = tree
    plant(root, NAMED_BY_THE_FILE, marker_dir)
    if "PYTHONPATH" not in where:
        # A PYTHONPATH naming the tree asks Python itself to import autolax's own
        # dependencies from it; without one, no entry point may pick them up.
        plant(root, AUTOLAX_DEPENDENCIES, marker_dir)
    command = [sys.executable, "-m", "autolax"] if entry.startswith("python") else [console_script()]
    inside = where.startswith("inside")
    cwd = root if inside else root.parent
    src = "model.py" if inside else str(root / "model.py")
    pythonpath = None if "PYTHONPATH" not in where else ("." if inside else str(root))
    gen = root.parent / f"gen-{where}-{entry}".replace(" ", "_").replace(",", "").replace("=", "_")
    # (--standalone writes the runtime's copy, read from autolax's own files, beside its output)
    for flags in (["--all"], ["--standalone", "--all", "-o", str(gen / "model.py")], ["--check"]):
        result = run_cli(command + ["convert", src, *flags], cwd, pythonpath)
        assert markers(marker_dir) == [], (flags, result.stderr[-300:])
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode in (0, 1), result.stderr
    assert "optax.scale(x)" in run_cli(command + ["convert", src], cwd, pythonpath).stdout


def test_python_m_autolax_keeps_the_path_of_other_programs(tmp_path):
    """Only `python -m autolax` drops the working directory: a program importing autolax
    keeps its own sys.path (its sibling modules stay importable)."""
    (tmp_path / "sibling.py").write_text("VALUE = 42\n")
    (tmp_path / "prog.py").write_text("import autolax\nimport sibling\nprint(sibling.VALUE)\n")
    result = run_cli([sys.executable, "prog.py"], tmp_path)
    assert result.stdout.strip() == "42", result.stderr
    result = run_cli([sys.executable, "-c", "import autolax, sibling; print(sibling.VALUE)"], tmp_path)
    assert result.stdout.strip() == "42", result.stderr


def test_planted_module_would_run_without_the_protection(tree):
    """The tests above can fail: a plain `python -m` of another module in the same tree does
    import the planted file (Python's own rule), so the markers do work."""
    root, marker_dir = tree
    plant(root, ["optax"], marker_dir)
    (root / "runner.py").write_text(textwrap.dedent("import optax\n"))
    run_cli([sys.executable, "-m", "runner"], root)
    assert markers(marker_dir) == ["optax"]
