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


def _key(code):
    # Code objects compare equal across files when their bodies are identical, so the file
    # name is part of the key.
    return (code, code.co_filename)


def register(code, construct) -> None:
    CONSTRUCTS[_key(code)] = construct


def construct_of(fn):
    """The ``Construct`` a generated function stands for.

    Code converted in this process is registered when it is compiled. Code that reaches an op
    without being registered was converted ahead of time (``autolax convert`` writes files
    that call ``autolax.ops``): its construct is read off the generated function and the
    op's call site, once per code object.
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    construct = CONSTRUCTS.get(_key(code))
    if construct is None:
        construct = CONSTRUCTS[_key(code)] = _construct_from_code(code, sys._getframe(1), _past_wrappers(sys._getframe(2)))
    return construct


_KIND_OF_OP = {"cond": "if", "while_loop": "while", "for_range": "for", "for_iter": "for"}


def _construct_from_code(code, op_frame, call_frame):
    """A Construct for a generated function loaded from a converted file: a loop carries its
    ``loop_body``'s parameters (after the item, for ``for``); an ``if`` returns the names of
    its ``if_true``'s final ``return``."""
    import linecache

    from autolax.transpile.context import Construct

    kind = _KIND_OF_OP.get(op_frame.f_code.co_name, "if")
    params = code.co_varnames[: code.co_argcount]
    if kind == "while":
        names = tuple(params)
    elif kind == "for":
        names = tuple(params[1:])
    else:
        names = _returned_names(code)
    filename, lineno = call_frame.f_code.co_filename, call_frame.f_lineno
    source = linecache.getline(filename, lineno).strip()
    return Construct(kind=kind, filename=filename, lineno=lineno, col=0, source=source, names=names)


def _returned_names(code):
    """``('x', 'y')`` for a function ending in ``return (x, y)``, ``()`` for one that returns
    nothing; one output named ``value`` if its source cannot be read."""
    import inspect
    import textwrap

    from autolax.transpile import syntax

    try:
        tree = syntax.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError):
        return ("value",)
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, syntax.FunctionDef):
        return ("value",)
    last = fn.body[-1]
    if not isinstance(last, syntax.Return) or last.value is None:
        return ()
    value = last.value
    elts = value.elts if isinstance(value, syntax.Tuple) else [value]
    if all(isinstance(e, syntax.Name) for e in elts):
        return tuple(e.id for e in elts)
    return ("value",)


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
        from autolax.transpile.context import display_filename

        return f"{display_filename(self.filename)}:{self.lineno}"


@dataclass
class Recorder:
    events: list = field(default_factory=list)
    traces: dict = field(default_factory=dict)  # construct -> number of body traces

    def mark(self):
        return len(self.events), dict(self.traces)

    def rollback(self, mark):
        self.events = self.events[: mark[0]]
        self.traces = mark[1]

    def drop_events_since(self, mark):
        """Forget the staging decisions of a discarded trace (keeping its trace count)."""
        self.events = self.events[: mark[0]]


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


_recursive: contextvars.ContextVar = contextvars.ContextVar("autolax_recursive", default=True)


@contextlib.contextmanager
def calls_converted(on: bool):
    """Whether ``ops.call`` converts user functions (``convert(..., recursive=False)``)."""
    token = _recursive.set(on)
    try:
        yield
    finally:
        _recursive.reset(token)


def converts_calls() -> bool:
    return _recursive.get()


_staging: contextvars.ContextVar = contextvars.ContextVar("autolax_staging", default=0)


@contextlib.contextmanager
def staging():
    """Marks the tracing of a branch or loop body that ``lax`` runs later, maybe many times
    or not at all: Python side effects there (``print``) must be staged too."""
    token = _staging.set(_staging.get() + 1)
    try:
        yield
    finally:
        _staging.reset(token)


def in_staged_body() -> bool:
    return _staging.get() > 0


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
    frame = _past_wrappers(sys._getframe(depth))
    import linecache

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return ExpressionSite(kind, frame.f_code.co_filename, frame.f_lineno, line)


def unrolled(construct, reason: str) -> None:
    """A loop carrying traced values could not be staged: warn, or raise under strict."""
    record(construct, f"python (unrolled: {reason})", reason)
    message = (
        f"the loop at {construct.where} carries traced values but ran as a Python loop "
        f"(unrolled into the trace): {reason}.\n    {construct.source}\n"
    )
    if is_strict():
        raise UnrolledLoopError(message + "strict=True forbids unrolling a loop that carries traced values.")
    message += (
        "The result is correct, but the traced program grows with the trip count. "
        "Pass strict=True to make this an error."
    )
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


def _past_wrappers(frame):
    """The first frame at or above ``frame`` that is not a ``user_facing`` wrapper."""
    while frame is not None and frame.f_code is _WRAPPER_CODE:
        frame = frame.f_back
    return frame


def _internal_dirs():
    import os

    import jax

    import autolax

    return tuple(os.path.dirname(m.__file__) + os.sep for m in (autolax, jax))


def user_facing(op):
    """Decorates a public op: an autolax error raised inside it keeps only the user's frames in
    its traceback (the internal ones say nothing about the user's mistake)."""
    import functools

    from autolax.errors import AutolaxError

    @functools.wraps(op)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        try:
            return op(*args, **kwargs)
        except AutolaxError as exc:
            internal = _internal_dirs()
            kept = []
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # skip this frame
            while tb is not None:
                if not tb.tb_frame.f_code.co_filename.startswith(internal):
                    kept.append(tb)
                tb = tb.tb_next
            for a, b in zip(kept, kept[1:] + [None]):
                a.tb_next = b
            raise exc.with_traceback(kept[0] if kept else None) from exc.__cause__
    return wrapper


_WRAPPER_CODE = user_facing(lambda: None).__code__
