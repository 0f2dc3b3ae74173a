"""``python -m benchmarks.grad_while --quick`` keeps working (tiny sizes; no timing is asserted)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_quick_grad_while_benchmark():
    cmd = [sys.executable, "-m", "benchmarks.grad_while", "--quick"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for heading in ("## Summary:", "## ode:", "## ode, cheap body:", "## ode, vmap:", "## fixed point:"):
        assert heading in proc.stdout
    for variant in ("| bounded_while_loop: grad", "| autolax.convert(Python while): grad"):
        rows = [line for line in proc.stdout.splitlines() if line.startswith(variant)]
        assert len(rows) == 4 and all(row.rstrip(" |").endswith("ok") for row in rows), rows
