"""What the runtime knows about the user's statements, and what it reports about them.

* ``CONSTRUCTS`` maps the code object of each generated function (``loop_body``,
  ``if_true`` ...) to the ``Construct`` it stands for, so an op can name the user's
  variables and line without the emitted code spelling them out.
* A ``Recorder`` (active inside ``autolax.trace_check``) collects one event per staging
  decision; ``strict`` mode turns fallbacks into errors.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import warnings
from dataclasses import dataclass, field

from autolax.errors import UnrolledLoopError, UnrolledLoopWarning

CONSTRUCTS: dict = {}

_recorder: contextvars.ContextVar = contextvars.ContextVar("autolax_recorder", default=None)
_strict: contextvars.ContextVar = contextvars.ContextVar("autolax_strict", default=False)


def register(code, construct) -> None:
    CONSTRUCTS[code] = construct


def construct_of(fn):
    code = getattr(fn, "__code__", None)
    return CONSTRUCTS.get(code)


@dataclass
class Event:
    construct: object  # Construct, or an ExpressionSite for and/or/not/ternaries
    outcome: str  # "lax.cond", "lax.while_loop", "lax.scan", "lax.fori_loop", "python (static)", ...
    reason: str | None = None
    iterations: int | None = None  # Python loops: how many times the body ran


@dataclass(frozen=True)
class ExpressionSite:
    kind: str  # "and", "or", "not", "ternary"
    filename: str
    lineno: int
    source: str = ""

    @property
    def where(self):
        return f"{self.filename}:{self.lineno}"


@dataclass
class Recorder:
    events: list = field(default_factory=list)
    traces: dict = field(default_factory=dict)  # construct -> number of body traces

    def mark(self):
        return len(self.events), dict(self.traces)

    def rollback(self, mark):
        self.events = self.events[: mark[0]]
        self.traces = mark[1]


def active_recorder():
    return _recorder.get()


@contextlib.contextmanager
def recording(recorder: Recorder):
    token = _recorder.set(recorder)
    try:
        yield recorder
    finally:
        _recorder.reset(token)


@contextlib.contextmanager
def strict_mode(on: bool = True):
    token = _strict.set(on)
    try:
        yield
    finally:
        _strict.reset(token)


def is_strict() -> bool:
    return _strict.get()


def record(construct, outcome: str, reason: str | None = None, iterations: int | None = None) -> None:
    rec = _recorder.get()
    if rec is not None and construct is not None:
        rec.events.append(Event(construct, outcome, reason, iterations))


def count_trace(construct) -> None:
    rec = _recorder.get()
    if rec is not None and construct is not None:
        rec.traces[construct] = rec.traces.get(construct, 0) + 1


def expression_site(kind: str, depth: int = 2, always: bool = False):
    """Where the calling converted code is (computed only while recording, or if asked)."""
    if _recorder.get() is None and not always:
        return None
    frame = sys._getframe(depth)
    import linecache

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return ExpressionSite(kind, frame.f_code.co_filename, frame.f_lineno, line)


def unrolled(construct, reason: str) -> None:
    """A loop carrying traced values could not be staged: warn, or raise under strict."""
    record(construct, f"python (unrolled: {reason})", reason)
    message = (
        f"the loop at {construct.where} carries traced values but ran as a Python loop "
        f"(unrolled into the trace): {reason}.\n    {construct.source}\n"
        "The result is correct, but the traced program grows with the trip count. "
        "Pass strict=True to make this an error."
    )
    if is_strict():
        raise UnrolledLoopError(message)
    warnings.warn_explicit(message, UnrolledLoopWarning, construct.filename, construct.lineno)


def add_staging_note(exc: BaseException, construct) -> None:
    """Notes, on an error raised while a body was traced for lax, which statement of the
    user's was being staged (errors autolax raises itself already say so)."""
    from autolax.errors import AutolaxError

    if construct is None or isinstance(exc, AutolaxError) or not hasattr(exc, "add_note"):
        return
    kind = {"if": "`if`", "while": "`while` loop", "for": "`for` loop", "ternary": "conditional expression"}
    exc.add_note(f"autolax: raised while staging the {kind.get(construct.kind, 'statement')} at "
                 f"{construct.where}: {construct.source}")
