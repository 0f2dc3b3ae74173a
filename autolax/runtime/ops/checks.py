"""Run-time checks: errors whose condition only the running program knows.

``fail_unless(ok, make_error)`` raises ``make_error()`` now when ``ok`` is a Python value,
and when the program runs when ``ok`` is traced (under ``jit``, ``vmap``, ``grad``, inside
loops and branches). The user wraps nothing.

A check inside a staged branch or loop body must only count when that branch or iteration
runs -- and under ``vmap`` JAX runs both sides of a ``lax.cond`` (as a select), so an effect
there would fire for lanes that never took the branch. So checks inside staged bodies are
data: each body returns a ``Failures`` code (0: passed, k: the k-th error), the op that
stages the body selects or accumulates the codes (``select``, ``first``) and hands the
result to the statement around it. At the top of the function ``autolax.jit`` traces, the
code is returned with the program's outputs (``returning_checks``) and the call raises the
error it names after the program returns; elsewhere (plain ``jax.jit``, the body of a
transform the function calls) a ``jax.debug.callback`` raises it inside the program.

How the failure reaches the caller:

* through ``autolax.jit``: the error itself (``UnboundLocalError`` for a variable a loop
  never assigned, the user's own exception for a ``raise`` under a traced condition), on
  every process of a multi-process job;
* through plain ``jax.jit``: JAX's ``jax.errors.JaxRuntimeError``, whose message holds the
  error's class and text (and the ``autolax/runtime/ops/checks.py`` frame that raised it); with
  several processes the callback runs on every device (``_partitioned``), so every process
  raises;
* called eagerly (no ``jit``, e.g. under ``jax.vmap`` alone): the error itself.

Every construct that needs a run-time error uses this module.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import itertools
import linecache
import logging
import re
import sys
import threading
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from autolax.runtime import compat, errors, libraries, plan, sites
from autolax.runtime.ops import report
from autolax.runtime.ops.lists import is_tracer

# Errors raised by failed checks, by number, until the caller that can raise them in the
# user's thread collects them (``pop_failure``). Bounded: failures nobody collects (plain
# jax.jit) are dropped oldest first.
_FAILURES: dict = {}
_MAX_FAILURES = 64
_lock = threading.Lock()
_counter = itertools.count()


def _record(error) -> int:
    with _lock:
        number = next(_counter)
        _FAILURES[number] = error
        while len(_FAILURES) > _MAX_FAILURES:
            _FAILURES.pop(next(iter(_FAILURES)))
    return number


def pop_failure(message: str):
    """The error of a failed check that JAX's runtime error ``message`` reports, or None.
    (JAX's message holds the error's class and text; the newest such failure is it.)"""
    with _lock:
        for number in reversed(list(_FAILURES)):
            error = _FAILURES[number]
            if f"{type(error).__name__}: {error}" in message:
                return _FAILURES.pop(number)
    return None


class _Count:
    """Checks staged while ``autolax.jit`` traced (``counting``); ``can_rerun()``: can it run
    the function as Python on this call's arguments (they are concrete), to find Python's
    error when tracing fails after a check (``rerun_as_python``)? ``callbacks``: how many of
    them a host callback raises (not returned with the program's outputs: ``returning_checks``)."""

    count = 0
    callbacks = 0

    def __init__(self, can_rerun=None):
        self.can_rerun = can_rerun


# Checks handed to a host callback at the top of a traced function, ever, per thread (see
# ``mark`` / ``staged_since``).
_top = threading.local()


_staged: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_staged", default=None)


@contextlib.contextmanager
def counting(can_rerun=None):
    """Counts the checks staged while the block runs (``autolax.jit`` then waits for the
    program's result, so a failed check is raised by the call). ``can_rerun``: see ``_Count``
    (None: it always can)."""
    counter = _Count(can_rerun)
    token = _staged.set(counter)
    try:
        yield counter
    finally:
        _staged.reset(token)


@dataclass(frozen=True)
class Failures:
    """Checks deferred as data: ``code`` (an int32 scalar, traced) is 0 when all passed, k when
    the k-th of ``makers`` (functions making the error) failed first."""

    code: object
    makers: tuple


_collector: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_collector", default=None)


# Per staged body being traced, innermost last: (the enclosing body's pending checks, how
# many it had when this body began; or, for a body at the top of the traced function,
# None and the flag ``_Running.failed`` held then). ``failed_so_far`` reads it.
_enclosing: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_enclosing", default=())


@contextlib.contextmanager
def collecting():
    """While a staged body is traced: its checks are collected (a list of ``Failures``)."""
    pending: list = []
    outer = _collector.get()
    if outer is not None:
        level = (outer, len(outer))
    else:
        running = _running.get()
        level = (None, running.failed if running is not None else None)
    token = _collector.set(pending)
    level_token = _enclosing.set(_enclosing.get() + (level,))
    try:
        yield pending
    finally:
        _enclosing.reset(level_token)
        _collector.reset(token)


def failed_so_far():
    """Did a check staged before this point, on the path the program takes to it, fail? A
    traced boolean, or None where no check comes before. (A staged ``print`` prints only if
    not: Python stopped at that check.) Checks of a loop's earlier iterations are not among
    them: a staged loop whose body checks and prints skips its body once one failed."""
    parts = []
    pending = _collector.get()
    if pending is None:
        running = _running.get()
        return running.failed if running is not None else None
    parts.append(first(pending))
    for outer, held in reversed(_enclosing.get()):
        if outer is None:
            if held is not None:
                parts.append(held)
            break
        parts.append(first(outer[:held]))
    flags = [p if not isinstance(p, Failures) else p.code > 0 for p in parts if p is not None]
    if not flags:
        return None
    failed = flags[0]
    for flag in flags[1:]:
        try:
            failed = jnp.logical_or(failed, flag)
        except Exception:  # noqa: BLE001 - a value of another trace (a transform's body)
            pass
    return failed


def mark():
    """Where the checks staged so far end (for ``staged_since``)."""
    pending = _collector.get()
    return getattr(_top, "count", 0), pending, len(pending) if pending is not None else 0


def staged_since(mark) -> bool:
    """Was a check staged (at the top of the traced function, or in the body being staged)
    since ``mark``?"""
    count, pending, length = mark
    now = _collector.get()
    return getattr(_top, "count", 0) > count or (now is pending and now is not None and len(now) > length)


def rerun_as_python() -> bool:
    """Does the caller (``autolax.jit``) run the function as Python when tracing raises an
    error of the user's code after a check was staged (``autolax.jitted.Jitted``)? Not when it was
    given tracers (it is called inside another trace) or only shapes."""
    counter = _staged.get()
    return counter is not None and (counter.can_rerun is None or counter.can_rerun())


def fail_unless(ok, make_error) -> None:
    """Raises ``make_error()`` unless ``ok`` -- now, or when the program runs if ``ok`` is
    traced (under ``vmap``, unless it holds in every lane)."""
    if not is_tracer(ok):
        if not np.all(np.asarray(ok)):
            raise make_error()
        return
    defer(Failures(jnp.where(ok, 0, 1).astype(jnp.int32), (make_error,)))


def fail_at_once_unless(ok, make_error) -> None:
    """Raises ``make_error()`` when the program runs and ``ok`` does not hold (in every lane),
    by a host callback right here -- for computations whose outputs cannot carry a failure
    code (a custom derivative rule). Elsewhere use ``fail_unless``."""
    if not is_tracer(ok):
        if not np.all(np.asarray(ok)):
            raise make_error()
        return
    counter = _staged.get()
    if counter is not None:
        counter.count += 1
        counter.callbacks += 1
    _top.count = getattr(_top, "count", 0) + 1
    jax.debug.callback(
        functools.partial(_raise_code, (make_error,)), jnp.where(ok, 0, 1).astype(jnp.int32), partitioned=_partitioned()
    )


def defer(failures) -> None:
    """Hands ``failures`` (None: nothing to check) to the statement being staged around this
    one, or -- at the top of the traced function -- to the host callback that raises."""
    if failures is None:
        return
    pending = _collector.get()
    if pending is not None:
        pending.append(failures)
        return
    counter = _staged.get()
    if counter is not None:
        counter.count += 1
    _top.count = getattr(_top, "count", 0) + 1
    _note_pending_check()
    outcome = _outcome.get()
    if outcome is not None and outcome.trace == compat.trace_state():
        outcome.failures.append(Failures(_after_earlier_checks(failures.code), failures.makers))
        return
    if counter is not None:
        counter.callbacks += 1
    jax.debug.callback(
        functools.partial(_raise_code, failures.makers),
        _after_earlier_checks(failures.code),
        partitioned=_partitioned(),
    )


def _after_earlier_checks(code):
    """``code``, or 0 where a check handed to a host callback earlier in the same function
    failed: Python stopped at that one. (Host callbacks may run in any order, and the first
    to raise is the error the caller sees: only the earliest failure may raise.)"""
    running = _running.get()
    if running is None:
        return code
    failed = code > 0
    if running.failed is not None:
        try:
            code = jnp.where(running.failed, 0, code)
            failed = running.failed | failed
        except Exception:  # noqa: BLE001 - the flag is a value of another trace (a transform's body)
            pass
    running.failed = failed
    return code


def _partitioned() -> bool:
    """Whether a check's host callback runs on every device (``partitioned=True``) rather
    than once, on the device that holds the first shard. In a job of several processes
    every process must raise, so on each of its devices; within one process once is
    enough."""
    return jax.process_count() > 1


# ------------------------------------------------------------ checks returned with the outputs
class _Outcome:
    """Where the checks staged at the top of a function ``returning_checks`` traces go:
    ``failures`` (in the order the program makes them), for the trace ``trace`` only (a
    check at the top of a function a transform inside it traces, ``jax.vmap(step)``, is
    that transform's: a host callback)."""

    __slots__ = ("failures", "trace")

    def __init__(self, trace):
        self.failures: list = []
        self.trace = trace


_outcome: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_outcome", default=None)


class Outcome:
    """The checks of one run, returned with the program's outputs: ``code`` (an int32 scalar,
    0 when every check passed, k when the k-th of ``makers`` failed first; None when the
    program has no checks). A pytree whose only leaf is ``code``: ``makers`` ride in its
    structure, which ``jax.jit`` keeps with the compiled program. A program without checks
    returns None in its place (no Python call to rebuild it on every call)."""

    __slots__ = ("code", "makers")

    def __init__(self, code, makers):
        self.code = code
        self.makers = makers


jax.tree_util.register_pytree_node(
    Outcome,
    lambda o: (() if o.code is None else (o.code,), o.makers),
    lambda makers, leaves: Outcome(leaves[0] if leaves else None, makers),
)


def returning_checks(fn):
    """``fn`` returning ``(its outputs, Outcome or None)``: the checks staged at the top of the traced
    function are returned as an output of the program instead of raised by a host callback,
    so that the caller (``autolax.jit``) raises the error after the program returns -- on
    every process of a multi-process job, each reading its copy of the code, with JAX's
    runtime left as after any call (a host callback that raises fails the computation on
    one process only). Checks inside staged branches and loops are data already
    (``Failures``); the ones a host callback still raises: a loop bound exceeded while
    differentiated (``fail_at_once_unless``), a check in the body of a transform the
    function calls (``jax.vmap(step)``)."""

    @functools.wraps(fn)
    def with_checks(*args, **kwargs):
        __tracebackhide__ = True
        outcome = _Outcome(compat.trace_state())
        tokens = (_outcome.set(outcome), _collector.set(None), _enclosing.set(()))
        try:
            out = fn(*args, **kwargs)
        finally:
            for var, token in zip((_enclosing, _collector, _outcome), reversed(tokens)):
                var.reset(token)
        failures = first(outcome.failures)
        if failures is None:
            return out, None
        return out, Outcome(failures.code, failures.makers)

    return with_checks


def first(failures) -> Failures | None:
    """The failures of several checks as one: the first that failed wins."""
    failures = [f for f in failures if f is not None]
    if not failures:
        return None
    code, makers = jnp.int32(0), ()
    for f in failures:
        code = jnp.where((code == 0) & (f.code > 0), f.code + len(makers), code)
        makers += f.makers
    return Failures(code, makers)


def select(pred, on_true, on_false) -> Failures | None:
    """The failures of the branch ``pred`` chose."""
    if on_true is None and on_false is None:
        return None
    t = on_true.code if on_true is not None else jnp.int32(0)
    n_true = len(on_true.makers) if on_true is not None else 0
    f = jnp.where(on_false.code > 0, on_false.code + n_true, 0) if on_false is not None else jnp.int32(0)
    makers = (on_true.makers if on_true is not None else ()) + (on_false.makers if on_false is not None else ())
    return Failures(jnp.where(pred, t, f).astype(jnp.int32), makers)


def _raise_code(makers, code):
    codes = np.atleast_1d(np.asarray(code))
    failed = codes[codes > 0]
    if failed.size:
        error = makers[int(failed[0]) - 1]()
        # The error itself (what an eager, un-jitted caller sees), marked so that a compiled
        # caller, which sees JAX's runtime error wrapping its text, can find it again.
        _record(error)
        raised = copy.copy(error)
        raised.__autolax_check__ = True
        raise raised


class _QuietFailedChecks(logging.Filter):
    """JAX logs every exception raised in a debug callback with its traceback; a failed check
    is reported to the caller as an error, so its log record is dropped."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        return not getattr(exc, "__autolax_check__", False)


# The logger of JAX's debug callbacks (by name: nothing of JAX's internals is imported).
logging.getLogger("jax._src.debugging").addFilter(_QuietFailedChecks())


# ------------------------------------------------------------ errors raised after a pending check
class _Running:
    """The outermost converted function running (in this thread or task), and where it
    staged the first check that the program ``jax.jit`` is tracing makes when it runs."""

    __slots__ = ("check", "failed")

    def __init__(self):
        self.check = None  # (file:line, source line) of the statement that staged it
        self.failed = None  # did a check handed to a host callback earlier fail (traced)?


_running: contextvars.ContextVar = contextvars.ContextVar("autolax_checks_running", default=None)


def checking() -> bool:
    """Is a converted function that may stage a check running (inside ``runtime_checks``,
    which refuses an error of the user's code raised while tracing after a check)?"""
    return _running.get() is not None


class _RuntimeChecks:
    __slots__ = ("_running", "_token")

    def __enter__(self):
        if _running.get() is None:  # the outermost: only an error leaving it leaves the trace
            self._running = _Running()
            self._token = _running.set(self._running)
        else:
            self._token = None

    def __exit__(self, exc_type, exc, tb):
        __tracebackhide__ = True
        if self._token is None:
            return False
        _running.reset(self._token)
        if exc is not None and report.under_trace():
            refusal = report.escaped_tracer_error(exc)  # JAX's tracer error out of the user's code
            if refusal is not None:
                raise refusal from exc
        check = self._running.check
        if (
            check is None
            or exc is None
            or not isinstance(exc, Exception)
            or isinstance(exc, errors.AutolaxError)
            or type(exc).__module__.split(".")[0] in ("jax", "jaxlib")
            or rerun_as_python()
            or not report.under_trace()
        ):
            return False
        where, source = report.innermost_user_line(tb)
        raise errors.make(
            "raises-after-check",
            where=where,
            source=source,
            check_where=check[0],
            check_source=check[1],
            error=f"{type(exc).__name__}: {exc}".split("\n")[0],
        ) from exc


def runtime_checks():
    """``with ops.runtime_checks():`` around the body of a converted function that may stage
    a check (a ``raise`` or ``assert`` under a traced condition, a read of a variable a
    staged loop may not have assigned, a conditional expression, a call of user code).

    Equivalent Python: nothing (``contextlib.nullcontext()``).

    Under ``jax.jit`` a staged check is made when the program runs, after tracing; if tracing
    then stops at an error of the user's code (``items[-1]`` of an empty list) that leaves
    the outermost converted function, Python would raise the check's error instead when it
    fails first -- which only the running program knows. autolax refuses then
    (``raises-after-check``), unless ``autolax.jit`` is calling, which runs the function as
    Python on the concrete arguments to find Python's error (``autolax.jitted.Jitted``). JAX's tracer
    error leaving the function while it is traced (``float(x)`` of a traced argument) is
    autolax's ``TracedValueError`` (``report.escaped_tracer_error``), checks or not. An
    error that the user's code catches inside the trace changes nothing.
    """
    return _RuntimeChecks()


# What ``except ops.TracerErrors:`` around a function's body catches: JAX's tracer errors,
# the ``IndexError`` of a slice with traced bounds (``report.traced_slice``) and Python's own
# errors that show a tracer (``report.tracer_in_message``); any other error of those types is
# raised again as it was.
TracerErrors = report.TRACER_ERRORS + (IndexError,) + report.PYTHON_TYPES_ERRORS


@report.user_facing
def refuse_tracer_error() -> None:
    """``ops.refuse_tracer_error()`` in ``except ops.TracerErrors:`` around the body of a
    converted function that stages no check (the others run inside ``runtime_checks``, which
    does the same), followed by ``raise``.

    Equivalent Python: nothing (the handler re-raises the error as it was).

    While JAX traces the function, JAX's tracer error leaving its own statements
    (``float(x)`` of a traced argument, ``if any(x > 0 for x in xs)``) is autolax's
    ``TracedValueError`` naming the user's line (``report.escaped_tracer_error``), through
    plain ``jax.jit`` of the converted function as through ``autolax.jit``. Called from a
    converted function (inside its ``runtime_checks``) or inside a staged body, the error
    is left to the caller's statement, which says more (the loop that needed the value)."""
    __tracebackhide__ = True
    exc = sys.exc_info()[1]
    if exc is None or checking() or report.in_staged_body() or not report.under_trace():
        return
    refusal = report.escaped_tracer_error(exc)
    if refusal is not None:
        raise refusal from exc


def function(fn=None, *, checks: bool = False):
    """``@ops.function`` (or ``@ops.function(checks=True)``) on a converted function whose
    own code may ask a traced value for a Python one (``float(x)``, ``lst[i]``), or that may
    stage a check (``checks=True``: a ``raise`` or ``assert`` under a traced condition, a
    read of a variable a staged loop may not have assigned, a conditional expression, a
    call of user code). Listed last, under the function's other decorators and ``jax.jit``:
    it runs where the function's body runs, at trace time under ``jax.jit``.

    Equivalent Python: ``fn`` itself (the decorator changes no result).

    While JAX traces the function, JAX's tracer error leaving it (``float(x)`` of a traced
    argument) is autolax's ``TracedValueError`` naming the user's line
    (``refuse_tracer_error``). With ``checks``, the call runs inside ``runtime_checks``,
    which also refuses an error of the user's code raised while tracing after a check
    (``raises-after-check``). The result has ``fn``'s name, signature (``__wrapped__``, read
    by ``inspect.signature`` and ``jax.jit``'s ``static_argnames``) and attributes; it is
    marked converted, and ``__autolax_body__`` is ``fn`` (the code the runtime reads)."""
    if fn is None:
        return _function_with_checks if checks else function
    if checks:

        def converted_fn(*args, **kwargs):
            __tracebackhide__ = True
            with _RuntimeChecks():
                return fn(*args, **kwargs)

    else:

        def converted_fn(*args, **kwargs):
            __tracebackhide__ = True
            try:
                return fn(*args, **kwargs)
            except TracerErrors:
                refuse_tracer_error()
                raise

    functools.update_wrapper(converted_fn, fn)
    converted_fn.__autolax_converted__ = True
    converted_fn.__autolax_body__ = fn
    return converted_fn


def _function_with_checks(fn):
    return function(fn, checks=True)


# The code of ``@ops.function``'s wrappers: a frame of one starts a converted function's call
# (its locals ``fn``, ``args``, ``kwargs`` are read by ``calls._refuse_lost_write``).
WRAPPER_CODES = (function(lambda: None).__code__, function(lambda: None, checks=True).__code__)


def body_of(fn):
    """The function ``@ops.function`` made ``fn`` from (its code is the converted body),
    else ``fn``."""
    return getattr(fn, "__autolax_body__", fn)


def _note_pending_check() -> None:
    """A check is handed to the program being traced: the outermost converted function notes
    where its first one is (``runtime_checks``)."""
    running = _running.get()
    if running is not None and running.check is None and report.under_trace():
        running.check = report.user_line(sys._getframe(2))


# ----------------------------------------------------------------------------- raise / assert
class StagedRaise(BaseException):
    """Internal: a ``raise`` ran while a staged branch or loop body was traced, so that path
    always raises. It travels up to the op staging the body (through the user's ``except
    Exception`` handlers, which must not see it), which turns it into a check: the error is
    raised when the program runs and takes that path. ``failures``: the path's checks, the
    raise among them."""

    def __init__(self, failures: Failures):
        super().__init__("autolax: a `raise` under a traced condition (internal)")
        self.failures = failures


class FinallyRaises:
    """In ``caught_by``: the ``try`` has a ``finally`` block that can fail (it raises, asserts
    or reads a name the ``try`` may leave unbound). An error staged in the ``try`` (raised
    when the program runs) would come before the ``finally``'s own, which Python raises in
    its place: such a ``try`` refuses it (``raise-before-finally``)."""


class MaySuppress:
    """In ``caught_by``: the statement is in the body of a ``with``, whose context manager may
    suppress the error (``contextlib.suppress(ValueError)``, an ``__exit__`` returning
    True): whether it reaches the caller would depend on data (``raise-in-with``)."""


def _refuse_in_try(statement: str, depth: int, message: str = "raise-in-try"):
    """The ``raise-in-try`` (or ``message``) refusal, at the user's line ``depth`` frames up."""
    frame = sys._getframe(depth + 1)
    where = f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}"
    raise errors.make(
        message,
        statement=statement,
        where=where,
        source=linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip(),
    )


# How a tracer shows in text (``f"{x}"``, ``str(x)``, ``"%s" % x`` while traced:
# ``JitTracer(~float32[])``, ``VmapTracer(...)``; older JAX: ``Traced<ShapedArray(...)>``).
_TRACER_TEXT = re.compile(r"\b\w*Tracer\(|\bTraced<")


def shows_tracer(text: str) -> bool:
    """Does ``text`` show a tracer (made from a traced value while tracing)?"""
    return _TRACER_TEXT.search(text) is not None


def traced_message(statement: str, error, depth: int):
    """``error``, or -- where its arguments hold a traced value or text made from one
    (``raise ValueError(f"bad {x}")`` under a traced condition) -- autolax's
    ``traced-message`` error in its place: the error is raised when the program runs, but
    its message is made while tracing, so it would show a tracer where Python shows the
    number. ``autolax.jit`` then runs the function as Python on the call's arguments to
    raise Python's own error (``python_error_wanted``)."""
    if isinstance(error, errors.AutolaxError):
        return error
    for leaf in jax.tree_util.tree_leaves(getattr(error, "args", ())):
        shown = str(leaf) if is_tracer(leaf) else leaf if isinstance(leaf, str) and _TRACER_TEXT.search(leaf) else None
        if shown is not None:
            frame = sys._getframe(depth + 1)
            where = f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}"
            refusal = errors.make(
                "traced-message",
                statement=statement,
                where=where,
                shown=shown,
                source=linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip(),
            )
            refusal.__autolax_python_error__ = True
            return refusal
    return error


def python_error_wanted(error) -> bool:
    """Is ``error`` (a failed check's) one that stands for an error whose exact form only
    Python can make (``traced_message``), which ``autolax.jit`` finds by running the
    function as Python?"""
    return getattr(error, "__autolax_python_error__", False)


# The exception types the handlers of the ``try`` statements whose bodies are running catch
# (``catching``): a function they call stages its errors as if written in those bodies.
_catching: contextvars.ContextVar = contextvars.ContextVar("autolax_catching", default=())


# The ``try`` statements whose bodies are running, innermost last (``_Level``): which of
# their handlers a failed run-time check may run when the program runs (``handler_for``).
_levels: contextvars.ContextVar = contextvars.ContextVar("autolax_catching_levels", default=())


@dataclass(frozen=True)
class _Level:
    types: tuple  # what the ``try``'s handlers catch (``catching``'s types)
    handlers: tuple | None  # (exception type or tuple, handler function or None), in order
    outside: tuple  # ``_catching`` and ``_levels`` around the ``try``, where its handlers run
    frame: object = None  # the frame of the function holding the ``try`` (with handlers only)


@contextlib.contextmanager
def catching(*types, handlers=None):
    """``with ops.catching(ValueError):`` around the body of a ``try`` whose handlers catch
    ``ValueError``.

    Equivalent Python: nothing (``contextlib.nullcontext()``).

    A ``raise`` / ``assert`` under a traced condition, or a branch failing while staged, in
    a function called from that body is refused when the ``try`` would catch it, as one
    written in the body is: the handler would have to run depending on data.

    ``handlers=((ValueError, handler), ...)``: the ``try``'s handlers in order, each with
    the function that runs its body (``passes.runtime_checks`` writes one for a handler
    that only calls, raises or passes: ``except ValueError: err('not positive')``), or None.
    A run-time check that this ``try`` would catch (``math.sqrt`` of a traced negative
    number) runs that handler when it fails, if the handler always raises
    (``fail_or_handle``).
    """
    # (the frame of the `with ops.catching(...)`: past this generator's and contextlib's)
    frame = sys._getframe(2) if handlers else None
    level = _Level(types, handlers, (_catching.get(), _levels.get()), frame)
    token = _catching.set(_catching.get() + types)
    level_token = _levels.set(_levels.get() + (level,))
    try:
        yield
    finally:
        _levels.reset(level_token)
        _catching.reset(token)


def handler_for(error_type):
    """The handler function (and the ``_Level`` of its ``try``) that Python would run for an
    error of ``error_type`` raised here: when the innermost ``try`` that catches it wrote one
    for it (``catching``'s ``handlers``) and the code running is that of the function holding
    the ``try`` (``_within``). Otherwise None (also inside a ``with`` body, whose context
    manager may suppress it, or a ``try`` whose ``finally`` raises)."""
    for level in reversed(_levels.get()):
        if MaySuppress in level.types or FinallyRaises in level.types:
            return None
        if not issubclass(error_type, level.types):
            continue
        for caught, handler in level.handlers or ():
            if issubclass(error_type, caught):
                return (handler, level) if handler is not None and _within(level.frame) else None
        return None
    return None


def _within(frame) -> bool:
    """Is the code running (a check) part of the function running in ``frame`` (the one
    holding the ``try``): every frame between them autolax's, JAX's, a library's, or a
    function defined inside that function (a loop body, a branch, a lambda)? Not where a
    helper it calls runs the check: the helper may run a ``finally`` or a ``with`` block's
    exit between the check and the handler (which ``passes.runtime_checks`` rules out only
    in the function itself), which a staged handler would run before."""
    outer = frame.f_code
    here = sys._getframe(2)
    while here is not None and here is not frame:
        code = here.f_code
        if not (
            code.co_filename.startswith(report.internal_dirs())
            or libraries.module_is_library(here.f_globals.get("__name__"), code.co_filename)
            or _nested(code, outer)
        ):
            return False
        here = here.f_back
    return here is frame


def _nested(code, outer) -> bool:
    """Is ``code`` the code of a function defined (at any depth) inside ``outer``'s?"""
    todo = [outer]
    while todo:
        for const in todo.pop().co_consts:
            if const is code:
                return True
            if isinstance(const, type(code)):
                todo.append(const)
    return False


@contextlib.contextmanager
def outside(level):
    """While a handler of ``level``'s ``try`` is staged: the ``try`` statements around that
    ``try`` only (its own handlers do not catch what the handler raises)."""
    caught, levels = level.outside
    tokens = (_catching.set(caught), _levels.set(levels))
    try:
        yield
    finally:
        _levels.reset(tokens[1])
        _catching.reset(tokens[0])


# ``control.stage_handler`` (set by that module, which imports this one): stages a handler
# that runs when a traced condition holds, if it always raises.
stage_handler = None


def fail_or_handle(ok, make_error, error_type, caught_by=()) -> str | None:
    """``fail_unless(ok, make_error)`` for a check inside a ``try`` whose handler catches
    ``error_type``: when the handler ends by raising (a ``raise``, ``sys.exit()``, a call of
    a helper that prints and exits), the check is staged as Python runs it -- when ``ok``
    fails, the handler's effects and its error, otherwise the body's values. Returns None
    when staged so, else the refusal (a message name, ``refused_in_try``): the handler may
    recover (its effects on the variables would depend on data), or it is not known."""
    refusal = refused_in_try(error_type, caught_by)
    if not refusal:
        fail_unless(ok, make_error)
        return None
    if not is_tracer(ok) or caught_by or stage_handler is None:
        return refusal
    found = handler_for(error_type)
    if found is None:
        return refusal
    handler, level = found
    with outside(level):
        staged = stage_handler(jnp.logical_not(jnp.all(ok)), handler)
    return None if staged else refusal


def refused_in_try(error_type, caught_by) -> str | None:
    """The refusal (a message name) for an error of ``error_type`` staged inside a ``try``
    whose handlers catch ``caught_by`` (or one around the running call, ``catching``), or
    None."""
    caught_by = tuple(caught_by) + _catching.get()
    if not caught_by:
        return None
    if issubclass(error_type, tuple(t for t in caught_by if t not in (FinallyRaises, MaySuppress))):
        return "raise-in-try"
    if MaySuppress in caught_by:
        return "raise-in-with"
    if FinallyRaises in caught_by:
        return "raise-before-finally"
    return None


def refusing() -> bool:
    """``if not ops.refusing():`` around the statements of a ``finally`` block: is an error
    autolax raised while tracing (a refusal: ``errors.REFUSALS``) on its way out of the
    ``try`` through this block? Then the block is skipped: an error it raised (a variable
    the ``try`` had not bound yet) would replace autolax's with one Python does not raise.

    Equivalent Python: ``False``.
    """
    exc = sys.exc_info()[1]
    if not isinstance(exc, errors.REFUSALS):
        return False
    frame = sys._getframe(1)  # the function running the `finally`: did the error leave it?
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame is frame:
            return True
        tb = tb.tb_next
    return False


def in_flight():
    """``held = ops.in_flight()`` in the ``except BaseException:`` that stands for a
    ``finally`` holding a ``return`` (``passes.finally_jumps``): the exception being handled,
    which the ``finally`` may discard.

    Equivalent Python: ``sys.exc_info()[1]``.

    An error autolax or JAX raise while tracing (a refusal, a tracer error) and autolax's
    internal ``StagedRaise`` are not the program's exception: raised again, not discarded.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, StagedRaise) or not report.raised_by_user_code(exc):
        raise exc
    return exc


def raising(exception, caught_by=(), _depth=1):
    """``raise ops.raising(E)`` for ``raise E``; inside ``try`` blocks, ``caught_by`` holds the
    exception types their handlers catch (and ``FinallyRaises`` for a ``finally`` that raises;
    ``MaySuppress`` in the body of a ``with``).

    Equivalent Python: ``E`` (the ``raise`` statement raises it).

    Inside a staged branch or loop body, whether the ``raise`` happens depends on traced
    values: the branch is staged as raising ``E`` when the program runs (``StagedRaise``).
    A ``raise`` that an enclosing ``try`` would catch is refused (``StagedEffectError``):
    whether the handler runs would depend on data (``passes.caught_raises`` turns the raises
    it can match to their handler into a jump instead: ``caught``). So is one inside a ``try`` whose
    ``finally`` can fail: whether its error replaces this one would too.
    """
    if not report.in_staged_body():
        return exception
    error = exception() if isinstance(exception, type) else exception
    refusal = refused_in_try(type(error), caught_by)
    if refusal:
        _refuse_in_try("raise", _depth, refusal)
    error = traced_message("raise", error, _depth)
    pending = _collector.get()
    prior = first(pending) if pending else None
    raise StagedRaise(first([prior, Failures(jnp.int32(1), (lambda: error,))]))


def caught(exception, handler, not_by=()):
    """``caught = ops.caught(E, H)`` for ``raise E`` inside a ``try`` whose first handler that
    catches it is ``except H:`` (``not_by``: the types of the handlers before it), written by
    ``passes.caught_raises``: the rest of the ``try`` body is skipped once ``caught`` is set,
    and the handler runs again after the ``try`` when it is.

    Equivalent Python: ``raise E`` (the real ``try`` catches it).

    Where Python decides the path (outside a staged branch or loop body) it raises ``E``,
    which the real ``try`` catches. Inside one, whether the ``raise`` happens depends on
    traced values: it returns True, the value of the flag on this path. The handler the
    front end chose from the names is checked here (a module may rebind ``ValueError``);
    if it is not the one Python would run, autolax refuses (``raise-in-try``).
    """
    error = exception() if isinstance(exception, type) else exception
    if not report.in_staged_body():
        raise error
    if not isinstance(error, handler) or isinstance(error, not_by):
        _refuse_in_try("raise", 1)
    return True


def asserting(test, message=None, caught_by=()):
    """``ops.asserting(test, lambda: message)`` for ``assert test, message``; inside ``try``
    blocks, ``caught_by`` holds the exception types their handlers catch.

    Equivalent Python::

        def asserting(test, message=None, caught_by=()):
            if __debug__ and not test:
                raise AssertionError(message()) if message else AssertionError

    A traced ``test`` is checked when the program runs (``autolax.runtime.ops.checks``); the message
    is made while tracing (one that shows a traced value is ``traced_message``'s). An ``assert`` that decides when
    the program runs, inside a
    ``try`` that catches ``AssertionError``, is refused as such a ``raise`` is
    (``StagedEffectError``): whether the handler runs would depend on data.
    """
    if sys.flags.optimize:
        return
    if not is_tracer(test):
        if not report.truth(test):
            error = AssertionError(message()) if message is not None else AssertionError()
            # In a staged body (a branch Python may not take) the failure is the path's, as
            # for `raise`: raised when the program runs and takes it.
            if not report.in_staged_body():
                raise error
            refusal = refused_in_try(AssertionError, caught_by)
            if refusal:
                _refuse_in_try("assert", 1, refusal)
            raise raising(traced_message("assert", error, 1))
        return
    refusal = refused_in_try(AssertionError, caught_by)
    if refusal:
        _refuse_in_try("assert", 1, refusal)
    # Python takes the truth value of the test, which NumPy refuses for an empty array or
    # one of several elements: autolax's ArrayConditionError, as for an `if`'s condition.
    shape = tuple(test.shape)
    form = plan.condition_truth(shape, test.dtype == jnp.bool_)
    if form in (plan.EMPTY_CONDITION, plan.NOT_ONE_VALUE):
        frame = sys._getframe(1)
        where = f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno} (assert)"
        raise errors.make(form, where=where, shape=shape)
    text = message() if message is not None else None
    error = traced_message("assert", AssertionError(text) if text is not None else AssertionError(), 1)
    ok = jnp.reshape(test, ()) if form == plan.TRUTH_AS_IS else jnp.reshape(test, ()) != 0
    fail_unless(ok, lambda: error)


def raise_every_time(failures, stmt: str) -> None:
    """``stmt`` (a loop whose body always raises, and which always runs) raises on every
    path: nothing after it runs. Inside a staged body, that body's path raises
    (``StagedRaise``). At the top of the traced function its one exception is raised now,
    if no check staged earlier in the function could fail first (``autolax.jit`` counts
    them); otherwise autolax refuses (tracing on would run code Python never reaches)."""
    if _collector.get() is not None:
        raise StagedRaise(failures)
    counter = _staged.get()
    if len(failures.makers) == 1 and counter is not None and counter.count == 0:
        raise failures.makers[0]()
    raise errors.make("raise-every-time", stmt=stmt)


def raise_from_both_branches(failures, same_error) -> None:
    """Both branches of a staged ``if`` raise: the path to it always raises. Inside a staged
    body, that body's path raises (``StagedRaise``). At the top of the traced function there
    is nothing left to compute: if every error the branches may raise is the same
    (``same_error``), Python raises it whichever branch runs, and it is raised now (as a
    statement without a condition raises it: ``runtime_checks`` and ``autolax.jit`` deal
    with a check staged before it). Otherwise ``autolax.jit`` runs the function as Python to
    raise the error of the path the arguments take (the branches count as a check staged);
    elsewhere autolax refuses."""
    if _collector.get() is not None:
        raise StagedRaise(failures)
    raised = [make() for make in failures.makers]
    if raised and all(same_error(raised[0], e) for e in raised[1:]):
        raise raised[0]
    counter = _staged.get()
    if raised and rerun_as_python() and not any(isinstance(e, errors.AutolaxError) for e in raised):
        counter.count += 1
        raise raised[0]
    raise errors.make("raise-both-branches")
