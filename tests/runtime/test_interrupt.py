"""Ctrl-C during a staged infinite loop returns to the prompt (issue 16, item 4).

Each test starts a process that runs a computation that never ends (`while x > 0: x = x +
1.0`, staged as a `lax.while_loop`), sends it SIGINT one second after the call started,
and asserts that the prompt is back (or the process has exited) within 2 s more. Without
autolax.interrupt the call never returns: XLA runs the loop on the calling thread (on CPU)
and Python cannot see the signal there.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")

SPIN = "def spin(x):\n    while x > 0:\n        x = x + 1.0\n    return x\n"

SHELL = textwrap.dedent('''
    import sys, time
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_cell("%load_ext autolax").raise_error()
    ip.run_cell({magic!r}).raise_error()
    ip.run_cell("spin(-1.0)").raise_error()  # compiled already: only the loop runs below
    print("CALLING", flush=True)
    result = ip.run_cell("y = spin(1.0)")
    print("RETURNED", type(result.error_in_exec).__name__, flush=True)
    ip.run_cell("print('PROMPT', spin(-2.0))").raise_error()
    print("DONE", flush=True)
''')


@pytest.fixture(autouse=True)
def _sigint_not_ignored():
    # A suite started in the background (`pytest &` from a shell without job control) runs
    # with SIGINT ignored, which children inherit: Python then installs no Ctrl-C handler.
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def start(code):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def wait_for(proc, marker, timeout):
    """The stdout lines up to the one starting with ``marker``."""
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(marker):
            return lines
    return lines


def interrupt_after_one_second(proc, calling_marker):
    """Sends SIGINT 1 s after the child says it is calling; the seconds until the child
    answers (its line starting with RETURNED) and that line."""
    lines = wait_for(proc, calling_marker, timeout=120)
    assert lines and lines[-1].startswith(calling_marker), (lines, proc.stderr.read() if proc.poll() else "")
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    # The answer is read on this thread; a child that never answers is killed after 20 s.
    killer = subprocess.Popen([sys.executable, "-c", f"import os, signal, time; time.sleep(20); "
                               f"os.kill({proc.pid}, signal.SIGKILL)"])
    try:
        answer = ""
        for answer in iter(proc.stdout.readline, ""):  # IPython prints the traceback first
            if answer.startswith("RETURNED"):
                break
        elapsed = time.monotonic() - sent
    finally:
        killer.kill()
        killer.wait()
    return elapsed, answer


@pytest.mark.parametrize("flags", ["", " --static n"])
def test_ctrl_c_returns_to_the_ipython_prompt(flags):
    if flags:
        magic = "%%autolax" + flags + "\ndef spin(x, n=1):\n    while x > 0:\n        x = x + n\n    return x\n"
    else:
        magic = "%%autolax\n" + SPIN
    proc = start(SHELL.format(magic=magic))
    try:
        elapsed, answer = interrupt_after_one_second(proc, "CALLING")
        assert answer.strip() == "RETURNED KeyboardInterrupt", (answer, proc.stderr.read() if not answer else "")
        assert elapsed < 2.0
        rest = wait_for(proc, "DONE", timeout=60)
        assert [line.split()[0] for line in rest] == ["PROMPT", "DONE"], rest
        assert rest[0].split()[1] == "-2.0"
        assert proc.wait(timeout=30) == 0  # the process can still exit
    finally:
        proc.kill()
        proc.wait()


DEMO = textwrap.dedent('''
    from autolax import demo

    def out(text):  # `autolax demo`'s output; section 5 times a staged loop of 2e9 steps
        print(text, flush=True)
        if text.startswith("5. "):
            print("CALLING", flush=True)

    try:
        demo.run(n_steps=2_000_000_000, out=out)
    except KeyboardInterrupt:
        print("RETURNED KeyboardInterrupt", flush=True)
        raise
''')


def test_ctrl_c_stops_the_demo_in_a_staged_loop():
    proc = start(DEMO)
    try:
        elapsed, answer = interrupt_after_one_second(proc, "CALLING")
        assert answer.strip() == "RETURNED KeyboardInterrupt", (answer, proc.stderr.read() if not answer else "")
        assert elapsed < 2.0
        assert proc.wait(timeout=30) != 0  # exits with the KeyboardInterrupt, does not hang
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_stops_the_autolax_demo_command():
    proc = subprocess.Popen([sys.executable, "-m", "autolax", "demo", "--steps", "2000000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = wait_for(proc, "5. ", timeout=120)
        assert lines and lines[-1].startswith("5. "), (lines, proc.stderr.read() if proc.poll() else "")
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        code = proc.wait(timeout=20)
        elapsed = time.monotonic() - sent
        err = proc.stderr.read()
        assert code == 130, err
        assert elapsed < 2.0
        assert "autolax demo: interrupted (KeyboardInterrupt)" in err and "Traceback" not in err
        assert "may keep running on the device" in err
    finally:
        proc.kill()
        proc.wait()


# ----------------------------------------------------------------------------- in process
def test_interruptible_call_is_the_jit_call():
    """What %%autolax binds behaves as the autolax.jit object: same values, static
    arguments by position or name, this thread's JAX settings, tracers, and the
    autolax API (jit_info, to_source, trace_check) sees through it."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import autolax
    from autolax.api import jit_info
    from autolax.interrupt import Interruptible

    def power_sum(x, n, *, scale=1.0):
        total = 0.0
        for i in range(n):
            if x > 0:
                total = total + scale * x**i
        return total

    jitted = autolax.jit(power_sum, static_argnames=("n",))
    f = Interruptible(jitted, ("n",))
    for args, kwargs in [((2.0, 3), {}), ((2.0,), {"n": 3}), ((2.0, 3), {"scale": 0.5}), ((-1.0,), {"n": 2})]:
        np.testing.assert_allclose(f(*args, **kwargs), power_sum(*args, **kwargs), rtol=1e-6)
    assert f(2.0, 3).dtype == jnp.float32
    with jax.enable_x64(True):  # a per-thread setting: traced on this thread, it holds
        assert f(2.0, 3).dtype == jnp.float64 == jitted(2.0, 3).dtype
    np.testing.assert_allclose(jax.vmap(lambda x: f(x, 3))(jnp.array([1.0, 2.0])), [3.0, 7.0])
    assert jit_info(f).fn is power_sum and jit_info(f).static_argnames == ("n",)
    assert "ops.for_range" in autolax.to_source(f) or "ops." in autolax.to_source(f)
    assert autolax.trace_check(f, 2.0, 3).rows
    assert f.lower(2.0, 3).compile()(2.0) == jitted(2.0, 3)
    assert f.__name__ == "power_sum" and repr(f) == repr(jitted)


def test_interruptible_call_reraises_errors():
    import pytest as _pytest

    import autolax
    from autolax.interrupt import Interruptible, run

    def bad(x):
        if x > 0:
            y = x
        return y

    # x <= 0: 'y' is unbound at the `return` (Python's UnboundLocalError), which the running
    # program finds; the error reaches the caller through the interruptible call.
    with _pytest.raises(autolax.UndefinedVariableError):
        Interruptible(autolax.jit(bad))(-1.0)
    assert float(Interruptible(autolax.jit(bad))(1.0)) == 1.0
    with _pytest.raises(ZeroDivisionError):
        run(lambda: 1 / 0)
