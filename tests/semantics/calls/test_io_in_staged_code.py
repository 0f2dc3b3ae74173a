"""I/O (``input``, ``time.sleep``, ``os.path.exists``) in a staged branch or loop (issue 43,
item 14): refused, and never run while tracing; pure ``os.path`` functions are not refused.

(Split from tests/test_issue43_items.py.)"""

from __future__ import annotations

import builtins
import os
import time

import jax.numpy as jnp
import pytest

from paths import is_autolax_error
from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture


# ----------------------------------------------------------------------------- item 14: I/O in staged code
def asks_in_a_branch_never_taken(x):
    if x > 100.0:
        name = input("name? ")
        x = x + len(name)
    return x


def sleeps_in_a_loop(x):
    while x < 10.0:
        x = x + 1.0
        time.sleep(0.5)
    return x


def checks_a_file_in_a_branch(x):
    if x > 0:
        if os.path.exists("/nonexistent-autolax-file"):
            x = x + 1
    return x


def joins_a_path_in_a_branch(x):
    if x > 0:
        x = x + len(os.path.join("a", "b"))
    return x


@pytest.fixture
def no_input(monkeypatch):
    asked = []

    def never(prompt=""):
        asked.append(prompt)
        return "abc"

    monkeypatch.setattr(builtins, "input", never)
    return asked


@pytest.mark.parametrize("fn, call", [
    (asks_in_a_branch_never_taken, "input"),
    (sleeps_in_a_loop, "time.sleep"),
    (checks_a_file_in_a_branch, "os.path.exists"),
])
def test_io_in_a_staged_branch_or_loop_is_refused_and_never_run_while_tracing(fn, call, tmp_path, ip, no_input,
                                                                             monkeypatch):
    slept = []
    monkeypatch.setattr(time, "sleep", lambda s: slept.append(s))
    _, got = check_every_path(fn, jnp.float32(1.0), tmp_path=tmp_path, ip=ip, refusal=True)
    # Python (eagerly, convert called eagerly) asks for no input for x = 1; a staged path
    # refuses before anything runs, naming the call, the line and the fix.
    assert no_input == []
    for path in ("autolax.jit", "jax.jit(convert)", "cli default", "standalone", "magic"):
        err = got[path].error
        assert is_autolax_error(err), (path, err)
        assert f"`{call}(...)`" in str(err) and "reads or writes outside the program" in str(err)
        assert "Fix: call it outside the staged statement" in str(err)
    if fn is sleeps_in_a_loop:
        assert len(slept) == 18  # Python's 9 and `convert` called eagerly's 9; no staged path slept
    else:
        assert slept == []


def test_a_pure_os_path_function_in_a_staged_branch_is_not_refused(tmp_path, ip):
    check_every_path(joins_a_path_in_a_branch, jnp.float32(1.0), tmp_path=tmp_path, ip=ip)
