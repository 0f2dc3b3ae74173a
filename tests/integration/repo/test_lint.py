"""The linter and the formatter pass on the tree (configured in pyproject.toml)."""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
RUFF = shutil.which("ruff")

pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (pip install '.[test]' installs it)")


def test_ruff_check_passes():
    proc = subprocess.run([RUFF, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_package_is_formatted():
    proc = subprocess.run([RUFF, "format", "--no-cache", "--check", "autolax"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, "run `ruff format autolax`:\n" + proc.stdout + proc.stderr
