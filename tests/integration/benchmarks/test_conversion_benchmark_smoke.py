"""``python -m benchmarks.conversion_compare`` keeps working (one round against this same
tree; no timing is asserted)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_conversion_compare_runs_against_a_baseline():
    cmd = [sys.executable, "-m", "benchmarks.conversion_compare", "--baseline", str(ROOT), "--rounds", "1",
           "--repeats", "1"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| function | baseline (ms) | this (ms) | this / baseline | calls baseline | calls this |" in proc.stdout
    assert "| kmeans.kmeans |" in proc.stdout and "| **max** |" in proc.stdout
    assert "load average" in proc.stdout


def test_conversion_compare_needs_a_baseline():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.conversion_compare"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "--baseline ROOT is required" in proc.stderr
