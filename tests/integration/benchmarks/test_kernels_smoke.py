"""``python -m benchmarks.kernels`` keeps working, and its kernels compute what they should:
autolax's result equals the expert twin's and the NumPy reference's (the same loops run by
Python on NumPy arrays) at a tiny size. Correctness only: no timing is asserted."""

import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

import autolax

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from benchmarks import kernel_suite  # noqa: E402
from benchmarks.kernels import _close  # noqa: E402

# staged on this branch, one of each kind of loop nest (a BLAS-like one, a stencil with the
# fused update of item 5, chained assignment of item 4, a recursive filter, bit operations
# of item 7)
CHECKED = ["gemm", "seidel-2d", "covariance", "deriche", "crc16", "gramschmidt"]


@pytest.mark.parametrize("name", CHECKED)
def test_kernel_values(name):
    kernel = kernel_suite.BY_NAME[name]
    args = kernel.args(5)
    reference = kernel_suite.reference(kernel.loops)(*[np.array(a) for a in args])
    twin = jax.jit(kernel.twin)(*args)
    got = autolax.jit(kernel.loops)(*args)
    assert _close(twin, reference, kernel.rtol), "the twin is not the kernel"
    assert _close(got, reference, kernel.rtol)
    assert not autolax.trace_check(autolax.jit(kernel.loops), *args).unrolled


def test_suite_is_large_enough():
    polybench = [k for k in kernel_suite.KERNELS if k.source.startswith("PolyBench")]
    assert len(polybench) >= 25
    assert {"conv2d", "crc16"} <= set(kernel_suite.BY_NAME)


def test_command_line(tmp_path):
    out = tmp_path / "kernels.md"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.kernels", "--kernels", "jacobi-1d,crc16", "--sizes",
                           "4,5,6", "--repeats", "1", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| kernel | verdict |" in proc.stdout and "MISMATCH" not in proc.stdout
    assert "| jacobi-1d | staged |" in proc.stdout and "| crc16 | staged |" in proc.stdout
    assert "0 mismatches" in out.read_text()
