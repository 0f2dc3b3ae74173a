"""Run-time checks: errors whose condition only the running program knows.

``fail_unless(ok, error)`` raises ``error`` now when ``ok`` is a Python value, and when the
program runs when ``ok`` is traced (under ``jit``, ``vmap``, ``grad``, inside loops and
branches): a ``jax.debug.callback`` raises it on the host. The user wraps nothing.

How the failure reaches the caller:

* through ``autolax.jit``: the error itself (``UnboundLocalError`` for a variable a loop
  never assigned, the user's own exception for a ``raise`` under a traced condition);
* through plain ``jax.jit``: JAX's ``jax.errors.JaxRuntimeError``, whose message contains
  the error's text (and ``autolax-check-<n>``).

Every construct that needs a run-time error uses this module.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import logging
import threading

import jax
import numpy as np

from autolax.ops.lists import is_tracer

MARKER = "autolax-check-"

# Errors raised by failed checks, by number, until the caller that can raise them in the
# user's thread collects them (``pop_failure``). Bounded: failures nobody collects (plain
# jax.jit) are dropped oldest first.
_FAILURES: dict = {}
_MAX_FAILURES = 64
_lock = threading.Lock()
_counter = itertools.count()


class CheckFailed(Exception):
    """Raised inside the host callback; JAX wraps it into its own runtime error."""


def _record(error) -> int:
    with _lock:
        number = next(_counter)
        _FAILURES[number] = error
        while len(_FAILURES) > _MAX_FAILURES:
            _FAILURES.pop(next(iter(_FAILURES)))
    return number


def pop_failure(message: str):
    """The error of a failed check named in ``message`` (a JAX runtime error's text), or None."""
    start = message.find(MARKER)
    if start < 0:
        return None
    digits = "".join(itertools.takewhile(str.isdigit, message[start + len(MARKER):]))
    with _lock:
        return _FAILURES.pop(int(digits), None) if digits else None


def _kind(error) -> str:
    """``UnboundLocalError (autolax.UndefinedVariableError)``: the builtin class first."""
    builtin = next((c for c in type(error).__mro__ if c.__module__ == "builtins"), type(error))
    if builtin is type(error):
        return builtin.__name__
    return f"{builtin.__name__} ({type(error).__module__.split('.')[0]}.{type(error).__name__})"


def _raise_unless(make_error, ok):
    if not np.all(np.asarray(ok)):
        error = make_error()
        raise CheckFailed(f"{MARKER}{_record(error)}: {_kind(error)}: {error}")


class _Count:
    count = 0


_staged: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_staged", default=None)


@contextlib.contextmanager
def counting():
    """Counts the checks staged while the block runs (``autolax.jit`` then waits for the
    program's result, so a failed check is raised by the call)."""
    counter = _Count()
    token = _staged.set(counter)
    try:
        yield counter
    finally:
        _staged.reset(token)


def fail_unless(ok, make_error) -> None:
    """Raises ``make_error()`` unless ``ok`` -- now, or when the program runs if ``ok`` is
    traced (under ``vmap``, unless it holds in every lane)."""
    if not is_tracer(ok):
        if not np.all(np.asarray(ok)):
            raise make_error()
        return
    counter = _staged.get()
    if counter is not None:
        counter.count += 1
    jax.debug.callback(functools.partial(_raise_unless, make_error), ok)


class _QuietFailedChecks(logging.Filter):
    """JAX logs every exception raised in a debug callback with its traceback; a failed check
    is reported to the caller as an error, so its log record is dropped."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CheckFailed)


# The logger of JAX's debug callbacks (by name: nothing of JAX's internals is imported).
logging.getLogger("jax._src.debugging").addFilter(_QuietFailedChecks())
