"""Many processes: a job of 2 processes x 2 CPU devices on JAX's multi-controller runtime
(``jax.distributed.initialize`` with a coordinator on 127.0.0.1, gloo collectives), started
here as subprocesses and bounded in time, runs ``tests/multiprocess_job.py``: an Optax
training loop with early stopping over a globally sharded batch, a program whose run-time
check fails and then passes (a staged loop, appends, a ``print``), and ``jax.grad`` of a
loop past its ``max_steps``. Each process's results are compared with the Python program
run here on the whole batch in one process. The job is run twice: once ending with
``jax.distributed.shutdown()`` and once without it (as users write it both ways; that run
runs the composition matrix's constructs in place of the training loop, to stay short);
every process must exit 0.

README "Many devices and hosts" states what each process prints and raises.
"""

import json
import os
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close

pytest.importorskip("optax")

import multiprocess_job as job  # noqa: E402 - after the importorskip (the job imports optax)
from integration.transforms import test_composition as tc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(job.__file__))  # tests/, where the job lives
PROCESSES = 2
TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(tmp_path, ending, parts):
    """Starts the job's processes; returns each one's (exit status, results, stderr)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={job.DEVICES_PER_PROCESS}").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH")) if p)
    port = str(_free_port())
    outs = [tmp_path / f"{ending}-{i}.json" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen([sys.executable, os.path.join(HERE, "multiprocess_job.py"), str(i), str(PROCESSES), port,
                          str(outs[i]), ending, parts], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(PROCESSES)
    ]
    finished = []
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=TIMEOUT_S)
            finished.append((proc.returncode, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = [json.loads(out.read_text()) if out.exists() else None for out in outs]
    return [(rc, res, err) for (rc, err), res in zip(finished, results)]


def python_outcome(call):
    return job.outcome(call)


@pytest.fixture(scope="module")
def expected():
    """The programs run as Python, in this process, on the whole batch."""
    xs, ys = jnp.asarray(job.XS), jnp.asarray(job.YS)
    batch = jnp.asarray(job.BATCH)
    return {
        "train": python_outcome(lambda: job.train(job.PARAMS, xs, ys, 1e-2)),
        "train_stalls": python_outcome(lambda: job.train(job.PARAMS, xs, ys, 0.0)),
        "sums_fails": python_outcome(lambda: job.checked_sums(batch, 10.0)),
        "sums_passes": python_outcome(lambda: job.checked_sums(batch, 100.0)),
        "slope_fits": python_outcome(lambda: jax.grad(job.bounded)(jnp.float32(30.0))),
    }


@pytest.mark.parametrize("ending,parts", [("shutdown", "train"), ("no-shutdown", "matrix")])
def test_two_processes_match_python(tmp_path, expected, ending, parts):
    ran = run_job(tmp_path, ending, parts)
    for i, (rc, results, err) in enumerate(ran):
        assert rc == 0, f"process {i} exited {rc}:\n{err[-3000:]}"
        assert results is not None, err[-3000:]
        assert results["devices"] == PROCESSES * job.DEVICES_PER_PROCESS and results["process"] == i
        first = i == 0
        # (a) the training loop: the same parameters, best loss and step count as Python
        for name in ("train", "train_stalls") if parts == "train" else ():
            got, want = results[name], expected[name]
            assert "error" not in got, got
            assert got["value"][2] == want["value"][2]
            assert_close(want["value"], got["value"], rtol=1e-4, atol=1e-5)
        # (b) the failed check raises the user's exception on every process, before the print
        want = expected["sums_fails"]
        assert want["error"] == "ValueError: the total is over the limit" and want["printed"] == ""
        assert results["sums_fails"] == want
        # ... and the next call works: process 0 prints what Python prints, the others nothing
        got, want = results["sums_passes"], expected["sums_passes"]
        assert want["printed"] == "total is 24.0\n"
        assert got["printed"] == (want["printed"] if first else "")
        assert_close(want["value"], got["value"])
        # (c) jax.grad of a loop past its max_steps: the bound's error on every process, then
        # a call within the bound works
        assert results["slope_exceeds"]["error"].startswith("LoopBoundExceededError"), results["slope_exceeds"]
        assert_close(expected["slope_fits"]["value"], results["slope_fits"]["value"])
        # plain jax.jit of the converted function: JAX's runtime error, holding the user's
        # error, on every process; then the next call works
        error = results["convert_fails"]["error"]
        assert error.startswith("JaxRuntimeError") and "ValueError: the total is over the limit" in error
        assert results["convert_passes"]["printed"] == (expected["sums_passes"]["printed"] if first else "")
        assert_close(expected["sums_passes"]["value"], results["convert_passes"]["value"])
        if parts != "matrix":
            continue
        # (d) the composition matrix's "2 processes" column: jit(vmap(f)) of each construct,
        # print and the run-time check among them
        matrix = results["matrix"]
        assert "error" not in matrix, matrix
        for name, construct in {**tc.CONSTRUCTS, **tc.EFFECTS}.items():
            lanes = matrix["lanes"][name]
            assert_close(np.array([construct.reference(jnp.float32(x)) for x in lanes]),
                         np.array(matrix["value"][name]), rtol=1e-4, atol=1e-5)
        want = tc.python_lines(tc.print_, matrix["lanes"]["print"]) if first else []
        assert sorted(matrix["printed"].splitlines()) == want
        # a failing lane: the user's error from autolax.jit; JAX's runtime error holding it
        # from plain jax.jit; each time the next call works
        assert matrix["check failing"]["error"] == "ValueError: y is over 10"
        error = matrix["check failing jax.jit"]["error"]
        assert error.startswith("JaxRuntimeError") and "ValueError: y is over 10" in error
        for passing in ("check passing", "check passing jax.jit"):
            assert_close(np.array([tc.check_(jnp.float32(x)) for x in matrix["lanes"]["check"]]),
                         np.array(matrix[passing]["value"]), rtol=1e-4)


def test_single_process_matches_python(expected):
    """The same programs through ``autolax.jit`` on this process's one device."""
    # the two training runs stop differently: at the tolerance, and when the loss stalls
    assert expected["train"]["value"][2] != expected["train_stalls"]["value"][2]
    xs, ys = jnp.asarray(job.XS), jnp.asarray(job.YS)
    got = job.outcome(lambda: autolax.jit(job.train)(job.PARAMS, xs, ys, 1e-2))
    assert_close(expected["train"]["value"], got["value"], rtol=1e-4, atol=1e-5)
    sums = autolax.jit(job.checked_sums)
    assert job.outcome(lambda: sums(jnp.asarray(job.BATCH), 10.0)) == expected["sums_fails"]
    got = job.outcome(lambda: sums(jnp.asarray(job.BATCH), 100.0))
    assert got["printed"] == expected["sums_passes"]["printed"]
    assert_close(expected["sums_passes"]["value"], got["value"])
