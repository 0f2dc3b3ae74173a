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
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert f'version = "{autolax.__version__}"' in pyproject


def test_packaging_files_exist():
    root = Path(__file__).parent.parent
    pyproject = (root / "pyproject.toml").read_text()
    assert 'license = "Apache-2.0"' in pyproject
    assert "Apache License" in (root / "LICENSE").read_text() and "Version 2.0" in (root / "LICENSE").read_text()
    assert '"py.typed"' in pyproject and (root / "autolax" / "py.typed").is_file()
    changelog = (root / "CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog and f"## {autolax.__version__}" in changelog
