"""``python -m benchmarks.run --quick`` keeps working (tiny sizes; no timing is asserted)."""

import importlib.util
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_quick_benchmark_run(tmp_path):
    out_json = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--json", str(out_json)]
    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    if has_matplotlib:
        cmd += ["--plot", str(tmp_path / "compile_cost.png")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for heading in ("## Compile cost against trip count", "## Steady-state call time", "## Conversion cost", "## Targets"):
        assert heading in proc.stdout
    assert "not run (N > 10)" in proc.stdout  # the unrolled variant is skipped above --max-unrolled

    data = json.loads(out_json.read_text())
    spec = importlib.util.spec_from_file_location("benchmark_programs", ROOT / "benchmarks" / "programs.py")
    programs = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = programs  # dataclasses look their module up there
    spec.loader.exec_module(programs)

    assert [r["name"] for r in data["steady"]] == [p.name for p in programs.PROGRAMS]
    assert all(r["autolax_s"] > 0 and r["lax_s"] > 0 for r in data["steady"])
    assert {r["function"] for r in data["convert"]} == {f"programs.{p.python.__name__}" for p in programs.PROGRAMS}
    first_calls = data["compile"]["10"]
    assert first_calls["jax.jit (Python loop, unrolled)"] > 0 and first_calls["autolax.jit"] > 0
    assert data["compile"]["30"]["jax.jit (Python loop, unrolled)"] is None
    if has_matplotlib:
        assert (tmp_path / "compile_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_early_return_program_differentiates_like_its_masked_scan():
    import jax
    import numpy as np

    import autolax

    spec = importlib.util.spec_from_file_location("benchmark_programs_2", ROOT / "benchmarks" / "programs.py")
    programs = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = programs
    spec.loader.exec_module(programs)
    fn = autolax.jit(programs.escape_time, static_argnums=3)
    for limit in (0.15, 2.0):  # exits early / runs to the end (the start, 0.1, is inside both)
        for form in (programs.escape_time_masked_lax, programs.escape_time_flag_lax, programs.escape_time_lax):
            np.testing.assert_allclose(fn(0.1, 0.0, limit, 300), form(0.1, 0.0, limit, 300), rtol=1e-6)
        got = jax.grad(lambda x: fn(x, 0.0, limit, 300)[1])(0.1)
        want = jax.grad(lambda x: programs.escape_time_masked_lax(x, 0.0, limit, 300)[1])(0.1)
        np.testing.assert_allclose(got, want, rtol=1e-6)
