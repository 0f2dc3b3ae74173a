"""Helpers of the tests split from the issue-43 grab-bags (``semantics/``, ``api/``): run a
program through every path -- ``paths.PATHS``, ``--standalone`` output and the ``%%autolax``
magic -- and compare with Python; ``ip`` is the magic's shell fixture (import it beside
``check_every_path``)."""

from __future__ import annotations

import inspect
import textwrap

import jax
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from paths import PATHS, _capture, agrees, run, standalone_module

EVERY_PATH = (*PATHS, "standalone", "magic")


@pytest.fixture(scope="module")
def ip():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    yield shell
    shell.extension_manager.unload_extension("autolax")
    shell.reset()


def outcome(path, fn, args, tmp_path, ip):
    source = textwrap.dedent(inspect.getsource(fn))
    if path == "standalone":
        filename = f"{tmp_path}/standalone_{fn.__name__}.py"
        with open(filename, "w") as f:  # the source lines its messages show
            f.write(source)
        namespace = standalone_module(source, filename, dict(fn.__globals__), all=True)
        return _capture(lambda: jax.jit(namespace[fn.__name__])(*args))
    if path == "magic":
        ip.user_ns.update({k: v for k, v in fn.__globals__.items() if not k.startswith("__")})
        result = ip.run_cell("%%autolax\n" + source)
        result.raise_error()
        return _capture(lambda: ip.user_ns[fn.__name__](*args))
    return run(path, fn, args, tmp_dir=tmp_path)


def check_every_path(fn, *args, tmp_path, ip, refusal=False):
    """Every path gives Python's outcome (or, with ``refusal``, autolax's error); returns
    the outcomes by path."""
    expected = run("python", fn, args)
    problems, got = [], {}
    for path in EVERY_PATH:
        got[path] = outcome(path, fn, args, tmp_path, ip)
        why = agrees(expected, got[path], path, allow_refusal=refusal)
        if why:
            problems.append(f"{path}: {why}")
    assert not problems, f"{fn.__name__}{args}:\n  " + "\n  ".join(problems)
    return expected, got


def standalone_outcome(fn, *args):
    """``fn``'s source through ``--standalone`` (importing the runtime's copy), run under ``jax.jit``."""
    source = textwrap.dedent(inspect.getsource(fn))
    namespace = standalone_module(source, "m.py", namespace=fn.__globals__, only=(fn.__name__,))
    return _capture(lambda: jax.jit(namespace[fn.__name__])(*args))


def standalone_agrees(fn, *args, refusal=False):
    expected = run("python", fn, args)
    why = agrees(expected, standalone_outcome(fn, *args), "standalone", allow_refusal=refusal)
    assert why is None, f"--standalone: {why}"
