"""What the runtime reports about the user's statements, and the modes it runs in.

* A recorder (``autolax.check.Recorder``, active inside ``autolax.trace_check``) collects one event per staging
  decision and counts how many times each body was traced.
* ``strict`` mode turns a loop that must be unrolled into an error; ``recursive=False``
  stops ``ops.call`` from converting callees; ``staging()`` marks the tracing of a body that
  lax runs later (where Python side effects must be staged too).
* ``user_facing`` decorates the public ops so an autolax error shows only the user's frames.

Modes are context variables: they hold for one call (and the calls it makes), per thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import linecache
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass, field

import jax

from autolax.runtime import compat, errors, libraries, plan, sites
from autolax.runtime.errors import AutolaxError, UnrolledLoopWarning

_recorder: contextvars.ContextVar = contextvars.ContextVar("autolax_recorder", default=None)
_strict: contextvars.ContextVar = contextvars.ContextVar("autolax_strict", default=False)
_recursive: contextvars.ContextVar = contextvars.ContextVar("autolax_recursive", default=True)
_staging: contextvars.ContextVar = contextvars.ContextVar("autolax_staging", default=())
_max_steps: contextvars.ContextVar = contextvars.ContextVar("autolax_max_steps", default=None)


@dataclass
class Event:
    site: object  # sites.Site, or an ExpressionSite for and/or/not
    outcome: str  # a plan form: "lax.cond", "lax.scan", "python (static)", ...
    reason: str | None = None
    iterations: int | None = None  # Python loops: how many times the body ran


@dataclass(frozen=True)
class ExpressionSite:
    """Where an ``and`` / ``or`` / ``not`` / conditional expression is (found from the calling
    frame: these ops carry no descriptor)."""

    kind: str  # "and", "or", "not", "ternary"
    filename: str
    lineno: int
    source: str = ""

    @property
    def where(self):
        return f"{sites.display_filename(self.filename)}:{self.lineno}"


def active_recorder():
    """The recorder of ``autolax.trace_check`` (``autolax.check.Recorder``) collecting this
    trace's events, or None: ``events`` and ``traces`` are what the runtime writes,
    ``mark`` / ``rollback`` / ``drop_events_since`` undo what a discarded trace wrote."""
    return _recorder.get()


@contextlib.contextmanager
def _setting(var, value):
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def recording(recorder):
    return _setting(_recorder, recorder)


def strict_mode(on: bool = True):
    return _setting(_strict, on)


def is_strict() -> bool:
    return _strict.get()


def loop_bound(max_steps: int | None):
    """The bound of loops without ``autolax.loop_options`` (``autolax.jit(max_steps=...)``)."""
    return _setting(_max_steps, max_steps)


def default_max_steps() -> int | None:
    return _max_steps.get()


def calls_converted(on: bool):
    """Whether ``ops.call`` converts user functions (``convert(..., recursive=False)``)."""
    return _setting(_recursive, on)


def converts_calls() -> bool:
    return _recursive.get()


def options(*, strict: bool = False, recursive: bool = True, max_steps: int | None = None):
    """``@ops.options(...)`` under ``@jax.jit`` in a file ``autolax convert`` wrote, for the
    options of ``@autolax.jit(...)`` / ``@autolax.convert(...)`` that ``jax.jit`` does not
    have: each call of the decorated function runs with them, as under ``autolax.jit`` (they
    hold for the whole call, including the functions it calls).

    Equivalent Python: nothing (the function as it is)."""

    def decorate(fn):
        @functools.wraps(fn)
        def with_options(*args, **kwargs):
            with contextlib.ExitStack() as stack:
                if strict:
                    stack.enter_context(strict_mode(True))
                if not recursive:
                    stack.enter_context(calls_converted(False))
                if max_steps is not None:
                    stack.enter_context(loop_bound(max_steps))
                return fn(*args, **kwargs)

        return with_options

    return decorate


@dataclass
class _Staging:
    site: object  # the statement whose body is being traced
    # ids of the objects the body was given as they are (not rebuilt from leaves): objects
    # that are not pytrees, carried as static values
    originals: set = field(default_factory=set)


def staging(site=None):
    """Marks the tracing of a branch or loop body that ``lax`` runs later, maybe many times
    or not at all: Python side effects there (``print``) must be staged too, and mutating a
    value the body does not own is an error (``check_mutable``)."""
    return _setting(_staging, _staging.get() + (_Staging(site),))


def in_staged_body() -> bool:
    return bool(_staging.get())


def in_staged_branch() -> bool:
    """Is the innermost body being traced a branch of a staged ``if`` (not a loop body)?"""
    stack = _staging.get()
    return bool(stack) and getattr(stack[-1].site, "kind", None) in ("if", "ternary")


def in_staged_loop() -> bool:
    """Is a loop body (or anything but a branch or operand) among the bodies being traced?
    There a Python value the trace sees may differ from one iteration to the next (a
    variable assigned later in the body is bound from the second iteration on)."""
    return any(getattr(frame.site, "kind", None) not in ("if", "ternary", "and", "or") for frame in _staging.get())


def current_staging():
    """The innermost staged body being traced (an object of its own per trace), or None."""
    frames = _staging.get()
    return frames[-1] if frames else None


def staging_depth() -> int:
    """How many staged bodies are being traced, one inside the other."""
    return len(_staging.get())


_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset, type)


def given_to_body(values) -> None:
    """Records the objects a body being traced was given as they are: a carried object that
    is not a pytree is one static value, the caller's own. (Lists, dicts and registered
    pytrees are rebuilt from their leaves for the trace: the body owns those copies.)"""
    frames = _staging.get()
    if frames:
        leaves = jax.tree_util.tree_leaves(values)
        frames[-1].originals |= {id(x) for x in leaves if not isinstance(x, _IMMUTABLE + (jax.Array, compat.Tracer))}


def under_trace() -> bool:
    """Is ``jax.jit`` (or another staging trace) tracing the function? Then an operation on
    no traced input is recorded too: a fresh constant is a tracer. (``grad``, ``vmap`` and
    ``jvp`` run the Python code on every call: False.)"""
    return isinstance(jax.numpy.zeros((), bool), compat.Tracer)


def check_mutable(obj, what: str, outside: bool = False) -> None:
    """Raises ``StagedEffectError`` when ``obj`` is mutated (``what``: how) inside a staged
    body and the body does not own it -- a global, a method's ``self``, a closure's object
    (``outside``), or a carried object that is not a pytree: the change would happen once,
    while tracing, not each time the statement runs. The same for an ``outside`` list, dict
    or set anywhere in a function ``jax.jit`` traces: once per trace, not once per call.
    (Objects' attributes are left alone there: a method of a registered pytree updating
    ``self`` is common and harmless.)"""
    frames = _staging.get()
    if not frames and outside and isinstance(obj, (list, dict, set)) and under_trace():
        raise errors.make("traced-effect", target=_describe(obj), action=what)
    if frames and (outside or id(obj) in frames[-1].originals):
        site = frames[-1].site
        named = _changed_by(obj, sys._getframe(1)) if outside else None
        if named is not None:
            # a closure's or a global container (SciPy's `fc[0] += 1` call counter): the
            # variable, the line that changes it, and the staged statement
            name, where, line = named
            raise errors.make(
                "staged-outside-effect",
                name=name,
                target=_describe(obj),
                action=what,
                where=where,
                line=f" (`{line}`)" if line else "",
                stmt=site.what if site is not None else "a staged branch or loop body",
                source=site.source if site is not None else "",
            )
        raise errors.make(
            "staged-effect",
            target=_describe(obj),
            action=what,
            stmt=site.what if site is not None else "a staged branch or loop body",
            source=site.source if site is not None else "",
        )


def _changed_by(obj, frame):
    """``(name, file:line, source line)`` of the user's statement changing ``obj`` (the
    first frame above ``frame`` outside autolax and JAX), with a name that holds ``obj``
    there: a variable of an enclosing function (the closure's) or a global; None if no
    such name holds it (a method's ``self``, a local)."""
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        frame = frame.f_back
    if frame is None:
        return None
    free = set(frame.f_code.co_freevars) - {"self", "cls"}  # (a method's receiver, read by a staged body)
    name = next((n for n, v in frame.f_locals.items() if n in free and v is obj), None)
    if name is None:
        name = next((n for n in frame.f_code.co_names if frame.f_globals.get(n, None) is obj), None)
    if name is None:
        return None
    filename = frame.f_code.co_filename
    return (
        name,
        f"{sites.display_filename(filename)}:{frame.f_lineno}",
        linecache.getline(filename, frame.f_lineno).strip(),
    )


def check_store(name: str) -> None:
    """Raises ``StagedEffectError`` when a ``global`` / ``nonlocal`` variable is assigned inside
    a staged body (the assignment would happen once, while tracing)."""
    frames = _staging.get()
    if frames:
        site = frames[-1].site
        raise errors.make(
            "staged-effect",
            target=f"'{name}' (declared global or nonlocal)",
            action="assigned",
            stmt=site.what if site is not None else "a staged branch or loop body",
            source=site.source if site is not None else "",
        )


# A staged body's closure is searched this far (items) for the containers it may change.
_WATCH_BUDGET = 4096


def outside_containers(fn) -> list:
    """The lists, dicts and sets a staged body ``fn`` reads through its closure or as globals
    (and those nested in them), each with its items: ``(name, whether it is the variable's
    own value, object, items)``. The body changes the
    ones it owns through ops that check it (``check_mutable``) or carries them; a function it
    calls (``push(out, v)``) may change the others too, once while tracing where Python does
    it on every run (``check_unchanged``). A body the runtime made (``ops.cases``: the rest
    of an ``if`` / ``elif`` chain) names the user's functions it runs in ``user_functions``."""
    out, seen, budget = [], set(), _WATCH_BUDGET
    outside = []
    for part in getattr(fn, "user_functions", (fn,)):
        code = getattr(part, "__code__", None)
        if code is None:
            continue
        for name, cell in zip(code.co_freevars, getattr(part, "__closure__", None) or ()):
            try:
                outside.append((name, cell.cell_contents))
            except ValueError:  # an empty cell
                continue
        module = getattr(part, "__globals__", {})
        outside += [
            (name, module[name])
            for name in code.co_names
            if type(module.get(name)) in (list, dict, set) or _iterator_state(module.get(name)) is not None
        ]
    for name, value in outside:
        stack = [(value, True)]
        while stack and budget > 0:
            value, direct = stack.pop()
            kind = type(value)
            state = _iterator_state(value) if kind not in (tuple, list, dict, set) else None
            if state is not None:
                if id(value) not in seen:
                    seen.add(id(value))
                    budget -= 1
                    out.append((name, direct, value, _Position(state)))
                continue
            if kind is tuple:
                stack.extend((v, False) for v in value)
                continue
            if kind not in (list, dict, set) or id(value) in seen:
                continue
            seen.add(id(value))
            items = list(value.items()) if kind is dict else list(value)
            budget -= 1 + len(items)
            out.append((name, direct, value, items))
            stack.extend((v, False) for v in (value.values() if kind is dict else value if kind is list else ()))
    return out


class _Position:
    """Where an iterator a staged body may advance (``next(it)``) stands (``_iterator_state``)."""

    def __init__(self, state):
        self.state = state


def _iterator_state(value, depth: int = 0):
    """A snapshot of where a builtin iterator or a generator stands, to tell (``_same``)
    whether something advanced it; None for other objects (and iterators it cannot read).
    Builtin iterators give it through ``__reduce__`` (a list iterator: its index; a ``zip``
    or ``map``: its iterators'); a generator through its frame (the instruction and the
    objects its variables hold, which a ``yield`` in a loop changes)."""
    if depth > 8:
        return None
    if isinstance(value, types.GeneratorType):
        frame = value.gi_frame
        if frame is None:
            return ("done",)
        locals_ = frame.f_locals
        return ("gen", frame.f_lasti, tuple((k, v, _iterator_state(v, depth + 1)) for k, v in locals_.items()))
    kind = type(value)
    if not hasattr(kind, "__next__") or isinstance(value, type):
        return None
    fields = getattr(value, "__dict__", None)
    if kind.__module__ not in ("builtins", "itertools"):
        # an iterator class of the program's own: where it stands is in its attributes
        if not isinstance(fields, dict):
            return None
        return ("fields", tuple((k, v, _iterator_state(v, depth + 1)) for k, v in fields.items()))
    try:
        reduced = value.__reduce__()
    except Exception:
        return None
    if not isinstance(reduced, tuple) or len(reduced) < 2 or not isinstance(reduced[1], tuple):
        return None
    return (
        "reduce",
        reduced[0],
        tuple((a, _iterator_state(a, depth + 1)) for a in reduced[1]),
        reduced[2] if len(reduced) > 2 else None,
    )


def _same(a, b) -> bool:
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a is b or (type(a) is type(b) and type(a) in (int, str) and a == b)


def _put_back(obj, state) -> None:
    """Moves an iterator back to ``state`` where it can (builtin iterators with
    ``__setstate__``, and those of a ``zip`` or ``map``); a generator cannot go back."""
    if state is not None and state[0] == "fields":
        obj.__dict__.clear()
        obj.__dict__.update({k: v for k, v, _ in state[1]})
        for _, v, inner in state[1]:
            if inner is not None:
                _put_back(v, inner)
        return
    if state is None or state[0] != "reduce":
        return
    for arg, inner in state[2]:
        if inner is not None:
            _put_back(arg, inner)
    if state[3] is not None and hasattr(obj, "__setstate__"):
        try:
            obj.__setstate__(state[3])
        except Exception:
            pass


def _items_changed(obj, items) -> bool:
    if isinstance(items, _Position):
        return not _same(_iterator_state(obj), items.state)
    now = list(obj.items()) if type(obj) is dict else list(obj)
    if len(now) != len(items):
        return True
    if type(obj) is dict:
        return any(k is not k0 and k != k0 or v is not v0 for (k, v), (k0, v0) in zip(now, items))
    return any(a is not b for a, b in zip(now, items))


def _restore(obj, items) -> None:
    if isinstance(items, _Position):
        _put_back(obj, items.state)
    elif type(obj) is list:
        obj[:] = items
    else:
        obj.clear()
        obj.update(dict(items) if type(obj) is dict else items)


def check_unchanged(watched, site, failed: bool = False) -> None:
    """After a staged body ran while traced: puts back every container of ``watched``
    (``outside_containers``) the body changed, then raises ``StagedEffectError`` naming the
    first (unless the body ``failed``: its own error goes on). Returns whether it changed any."""
    changed = [(name, direct, obj, items) for name, direct, obj, items in watched if _items_changed(obj, items)]
    for _, _, obj, items in changed:
        _restore(obj, items)
    if changed and not failed:
        stuck = [c for c in changed if _items_changed(c[2], c[3])]  # iterators that cannot go back
        name, direct, obj, items = (stuck or changed)[0]
        if isinstance(items, _Position):
            error = errors.make(
                "iterator-effect",
                name=name,
                kind=type(obj).__name__,
                stmt=site.what if site is not None else "a staged branch or loop body",
                source=site.source if site is not None else "",
            )
            if not stuck and site is not None and site.kind in ("for", "while"):
                raise plan.Unstageable(error)  # a loop with static bounds runs in Python instead
            raise error
        target = f"'{name}', {_describe(obj)}," if direct else f"{_describe(obj)} inside '{name}'"
        error = errors.make(
            "call-effect",
            target=target,
            name=name,
            example=errors.CHANGED_HERE[type(obj).__name__].format(name=name),
            stmt=site.what if site is not None else "a staged branch or loop body",
            source=site.source if site is not None else "",
        )
        if site is not None and site.kind in ("for", "while"):
            raise plan.Unstageable(error)  # a loop with static bounds runs in Python instead
        raise error
    return bool(changed)


def _describe(obj) -> str:
    kind = type(obj).__name__
    return f"a {kind} object" if not isinstance(obj, (list, dict, set)) else f"a {kind} ({_short(obj)})"


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 40 else text[:37] + "..."


def record(site, outcome: str, reason: str | None = None, iterations: int | None = None) -> None:
    rec = _recorder.get()
    if rec is not None and site is not None:
        rec.events.append(Event(site, outcome, reason, iterations))


def record_tested_exits(site, loop_test, outcome: str) -> None:
    """Rows for the ``if`` lines whose exits a staged loop tests in its predicate (an exit
    opening or ending the body: ``loop_test`` holds their tests), so that the report still
    accounts for each of them: ``lax.while_loop predicate``, or ``lax.scan mask``."""
    rec = _recorder.get()
    if rec is None or site is None or loop_test is None:
        return
    code = getattr(loop_test, "__code__", None)
    if code is None or code.co_filename != site.filename:
        return
    base = outcome.split(" (")[0]
    became = f"{base} predicate" if base == plan.WHILE else f"{base} mask"  # a masked scan: it masks the steps
    lines, codes = set(), [code]
    while codes:  # the test's own lines and those of its lambdas (`ops.and_(t, lambda: ...)`)
        c = codes.pop()
        lines.update(line for _, _, line in c.co_lines() if line and line != site.lineno)
        codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    for lineno in sorted(lines):
        source = linecache.getline(code.co_filename, lineno).strip()
        if re.match(r"if\b", source):
            rec.events.append(Event(ExpressionSite("if", code.co_filename, lineno, source), became))


def count_trace(site) -> None:
    rec = _recorder.get()
    if rec is not None and site is not None:
        rec.traces[site] = rec.traces.get(site, 0) + 1


def expression_site(kind: str, depth: int = 2, always: bool = False):
    """Where the calling converted code is (computed only while recording, or if asked)."""
    if _recorder.get() is None and not always:
        return None
    frame = _past_wrappers(sys._getframe(depth))
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return ExpressionSite(kind, frame.f_code.co_filename, frame.f_lineno, line)


def unrolled(site, reason: str, rewrite: str | None = None) -> None:
    """A loop carrying traced values could not be staged: warn, or raise under strict.
    ``rewrite``: how to change the loop so that it can be staged (the fix of the error that
    stopped it), if known."""
    record(site, plan.unrolled(reason), reason)
    rewrite = f"to stage the loop, {rewrite}" if rewrite else "stage the loop (see the reason)."
    if is_strict():
        raise errors.make("unrolled", where=site.where, reason=reason, source=site.source, rewrite=rewrite)
    message = (
        f"the loop at {site.where} carries traced values but ran as a Python loop "
        f"(unrolled into the trace): {reason}.\n    {site.source}\n"
        "Its iterations ran in Python while tracing, one by one, so the traced program grows with the trip count.\n"
        f"Fix: {rewrite}\nOr pass strict=True to make this an error."
    )
    warnings.warn_explicit(message, UnrolledLoopWarning, site.filename, site.lineno)


def add_staging_note(exc: BaseException, site) -> None:
    """Notes, on an error raised while a body was traced for lax, which statement of the
    user's was being staged (errors autolax raises itself already say so)."""
    if site is None or isinstance(exc, AutolaxError) or not hasattr(exc, "add_note"):
        return
    exc.add_note(f"autolax: raised while staging {site.what}: {site.source}")


# What a program's code may raise while a statement Python runs only on some paths is
# staged: ``Exception``s, and ``SystemExit`` (``sys.exit()`` in a branch, a ``BaseException``
# that would otherwise end the trace -- and the process -- on a path the program never takes).
PROGRAM_ERRORS = (Exception, SystemExit)

# JAX's errors for a traced value used where Python needs a concrete one.
TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerArrayConversionError,
    jax.errors.NonConcreteBooleanIndexError,
)


def unhashable_tracer(exc) -> bool:
    """Python's error for a tracer used as a dict key or set item."""
    return isinstance(exc, TypeError) and str(exc).startswith("unhashable type") and "Tracer" in str(exc)


def tracer_in_message(exc) -> bool:
    """An error of the user's code whose text shows a tracer (`KeyError: 'wJitTracer(int32[])'`
    for `PARAMS[f"w{i}"]`, `TypeError: unsupported operand type(s) for *: 'list' and
    'DynamicJaxprTracer'` for `[0] * n`): a traced value was used as Python text, a key or a
    number Python's own types needed."""
    return (
        isinstance(exc, (KeyError, AttributeError, ValueError, TypeError))
        and raised_by_user_code(exc)
        and "Tracer" in str(exc)
    )


# The errors of Python's own types that show a traced value used where Python needs a number
# (`unhashable_tracer`, `tracer_in_message`): what `except ops.TracerErrors` catches beside
# JAX's tracer errors, then leaves as they were unless they show a tracer.
PYTHON_TYPES_ERRORS = (TypeError, KeyError, AttributeError, ValueError)


def traced_slice(exc) -> bool:
    """Is ``exc`` JAX's ``IndexError`` for a slice with traced bounds (``xs[i:i + w]`` with a
    traced ``i``)? A plain ``IndexError``, not one of ``TRACER_ERRORS``; its text differs
    between JAX releases ("Slice entries must be static integers", "Array slice indices
    must have static start/stop/step")."""
    if type(exc) is not IndexError:
        return False
    text = str(exc).lower()
    return "slice" in text and "static" in text


_DESCRIPTOR = re.compile(r"at='([^':;]+):(\d+)")


def source_line(tb, site) -> int | None:
    """The line of the user's source file that traceback ``tb`` ran last inside ``site``'s
    statement: a frame of that file, or of the file ``autolax convert`` wrote from it (which
    runs from another file). A line of the written file holds the descriptor of the
    statement it stands for (``at='model.py:7'``), or is a statement copied as written: the
    one source line after the statement's own with that text. Else None."""
    line = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == site.filename:
            line = tb.tb_lineno
        elif not filename.startswith(_INTERNAL_DIRS) and _written_from(filename, site.filename):
            text = linecache.getline(filename, tb.tb_lineno)
            found = _DESCRIPTOR.search(text)
            if found and sites.resolve(found.group(1), filename) == site.filename:
                line = int(found.group(2))
            else:
                line = _copied_line(text.strip(), site)
        tb = tb.tb_next
    return line


def _written_from(filename: str, source: str) -> bool:
    """Is ``filename`` code ``autolax convert`` wrote from the file ``source`` (its
    descriptors name it)?"""
    return any(
        found and sites.resolve(found.group(1), filename) == source
        for found in map(_DESCRIPTOR.search, linecache.getlines(filename))
    )


def _copied_line(text: str, site) -> int | None:
    """The line after ``site``'s own in its source file that reads ``text``, if exactly one does."""
    lines = linecache.getlines(site.filename)[site.lineno :]
    matches = [k for k, source in enumerate(lines, site.lineno + 1) if source.strip() == text]
    return matches[0] if text and len(matches) == 1 else None


def unstageable_reason(exc, site) -> str:
    """Why a body could not be staged, pointing at the user's line if possible."""
    if isinstance(exc, errors.TracedValueError) and exc.__cause__ is not None:
        exc = exc.__cause__
    line = source_line(exc.__traceback__, site)
    at = f"line {line} " if line is not None else "the body "
    use = concrete_use(exc, "the loop index" if site.kind in ("for", "while") else "it")
    if use is not None:
        return at + use
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first.rstrip(":.")


# JAX's words (its messages, not its internals) for the builtin that wanted a Python value
# (`float(x)`: "The problem arose with the `float` function"), for a function whose result's
# shape depends on data ("The size argument of jnp.nonzero must be statically specified"), and
# for the arguments a traced value comes from ("depends on the value of the argument x0").
_BUILTIN_WORDS = re.compile(r"The problem arose with the `(\w+)` function")
_SIZE_WORDS = re.compile(r"The size argument of (jnp\.\w+) must be statically specified")
_ARGUMENT_WORDS = re.compile(r"depends on the values? of the arguments? (.+?)\.(?:\s|$)")
_NUMBER_BUILTINS = ("int", "float", "complex")


def _builtin(exc) -> str | None:
    found = _BUILTIN_WORDS.search(str(exc))
    return found.group(1) if found else None


def concrete_use(exc, index: str = "it") -> str | None:
    """What the user's code did with a traced value, for JAX's tracer error ``exc`` (one of
    ``TRACER_ERRORS``, or a slice with traced bounds): "uses a traced value as a Python int
    (e.g. indexes a Python list with ``index``)"; None for another error."""
    if isinstance(exc, jax.errors.TracerIntegerConversionError):
        return f"uses a traced value as a Python int (e.g. indexes a Python list with {index})"
    if isinstance(exc, jax.errors.TracerBoolConversionError):
        return "uses a traced value as a Python bool"
    if isinstance(exc, jax.errors.TracerArrayConversionError):
        return "converts a traced value to a NumPy array"
    if isinstance(exc, jax.errors.NonConcreteBooleanIndexError):
        return "uses a boolean mask, so its result's shape depends on data"
    if unhashable_tracer(exc):
        return "uses a traced value as a dict key or set item (e.g. looks up a Python dict with it)"
    if tracer_in_message(exc):
        return (
            f"raised `{python_error(exc)}` with a traced value where Python has a number (e.g. repeats a list "
            "by it or formats it into a dict key)"
        )
    if isinstance(exc, jax.errors.ConcretizationTypeError):
        builtin, size = _builtin(exc), _SIZE_WORDS.search(str(exc))
        detail = (
            f" (`{builtin}()` of a traced value)"
            if builtin
            else f" (`{size.group(1)}` without a static `size=`: its result's shape would depend on data)"
            if size
            else ""
        )
        return f"needs the concrete value of a traced expression{detail}"
    if traced_slice(exc):
        return "slices an array with traced bounds (the slice's length would depend on data)"
    return None


def traced_arguments(exc) -> list[str]:
    """The arguments of the traced function that the value in JAX's tracer error ``exc``
    depends on, as JAX's message names them (none if it does not)."""
    found = _ARGUMENT_WORDS.search(str(exc))
    if not found:
        return []
    return [name for name in re.split(r",\s*(?:and\s+)?|\s+and\s+", found.group(1)) if name]


# How to change a body that raised one of these while staged, so that it can be staged.
_REWRITES = (
    (
        jax.errors.TracerIntegerConversionError,
        "make the Python list the statement indexes an array before it (`table = jnp.asarray(table)`, "
        "or `jnp.stack(table)` for a list of arrays) and index that, or loop over its items.",
    ),
    (
        jax.errors.TracerBoolConversionError,
        "decide with `jnp.where(c, a, b)` or `lax.cond` in the function that tests the traced value (autolax "
        "does not convert library code or functions marked @autolax.do_not_convert).",
    ),
    (jax.errors.TracerArrayConversionError, "use `jnp` in place of `np` on the traced values."),
    (
        jax.errors.NonConcreteBooleanIndexError,
        "use `jnp.where(mask, x, 0)` (or a masked sum) in place of `x[mask]`: it keeps the shape.",
    ),
    (
        jax.errors.ConcretizationTypeError,
        "make shapes and Python decisions depend on static values only (mark such arguments static with "
        "static_argnums / static_argnames).",
    ),
)


def unstageable_fix(exc) -> str | None:
    """How to change the statement so that it can be staged: the fix of autolax's own
    error, or one for JAX's tracer errors."""
    if isinstance(exc, plan.Unstageable):
        exc = exc.error
    fix = getattr(exc, "fix", None)
    if fix is not None:
        return fix
    if traced_slice(exc):
        return (
            "slice with `lax.dynamic_slice(xs, (i,), (size,))` (a fixed `size`; autolax does so for "
            "`xs[i:i + K]` of a Python int `K`), consume the slice only by a sum, product, max, min, any, all, "
            "norm, `@` / `dot` or a write-back (autolax computes those at full length under a mask), or loop "
            "over a static range that needs no traced index."
        )
    if isinstance(exc, jax.errors.TracerBoolConversionError) and not _raised_in_library(exc):
        return _BOOL_IN_USER_CODE
    if isinstance(exc, jax.errors.ConcretizationTypeError) and _builtin(exc) in _NUMBER_BUILTINS:
        name = _builtin(exc)
        return (
            f"compute with jnp in place of the Python builtin: `jnp.asarray(v, dtype={name})` for "
            f"`{name}(v)`"
            + (", `jnp.floor(v).astype(int)` or `a // b` for `int(a / b)`" if name == "int" else "")
            + "."
        )
    if isinstance(exc, jax.errors.ConcretizationTypeError) and _SIZE_WORDS.search(str(exc)):
        return (
            "give the function a static `size=` (`jnp.argwhere(c, size=k)`, `jnp.nonzero(c, size=k)`: "
            "the result then has k items, padded with `fill_value`), or compute with `jnp.where` / "
            "`jnp.argmax`, whose results keep their shape."
        )
    return next((text for kind, text in _REWRITES if isinstance(exc, kind)), None)


# A traced value tested as a Python bool by the converted code itself: by a construct
# autolax does not stage (a builtin, a comprehension's condition), not by library code.
_BOOL_IN_USER_CODE = (
    "compute the test with jnp (`jnp.where(c, a, b)`, `jnp.sort`, `jnp.isin(x, jnp.array(values))`, "
    "`(x > a).astype(float)`) and test its result with `if`, `while`, `and` / `or` / `not` or `a if c else b`, "
    "which autolax stages in the functions it converts (not in library code or functions marked "
    "@autolax.do_not_convert): Python's `bool()`, `sorted()`, `in` of a list or tuple and other builtins "
    "that compare need a concrete value."
)


def _raised_in_library(exc) -> bool:
    """Was ``exc`` raised in library code (its innermost frame that is neither autolax's nor
    JAX's belongs to a library, or there is none), not in the converted code?"""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
            found = tb.tb_frame
        tb = tb.tb_next
    return found is None or libraries.module_is_library(found.f_globals.get("__name__"), found.f_code.co_filename)


def traced_value_error(exc, site, why: str) -> AutolaxError:
    """``TracedValueError`` for JAX's tracer error ``exc`` (one of ``TRACER_ERRORS``) out of
    the body of ``site``, which cannot run in Python instead (``why``)."""
    return errors.make(
        "traced-value",
        stmt=site.what,
        why=why,
        reason=unstageable_reason(exc, site),
        source=site.source,
        fix=unstageable_fix(exc),
    )


def escaped_tracer_error(exc: BaseException, frame=None, fix: str | None = None) -> AutolaxError | None:
    """``TracedValueError`` for JAX's tracer error ``exc`` leaving the user's code while JAX
    traces it -- among a function's own statements, where no staged statement translates it
    -- or None for any other error. It names the innermost line of the user's code in the
    traceback (converted code keeps the original file and line), what that line did and the
    arguments the value depends on (as JAX's message names them); the caller raises it
    ``from exc``. Called where the runtime sees an error leave a converted function
    (``ops.runtime_checks``), by ``autolax.jit`` and ``trace_check``, and by an op that the
    user's statement called (``frame``: the op's caller), which names that statement, and
    may say how to rewrite it (``fix``)."""
    if isinstance(exc, AutolaxError) or exc.__traceback__ is None:
        return None
    # (JAX's slice error shows the tracer: `slice(JitTracer(~int32[]), ...)`.)
    if not (
        isinstance(exc, TRACER_ERRORS)
        or (traced_slice(exc) and "Trace" in str(exc))
        or unhashable_tracer(exc)
        or tracer_in_message(exc)
    ):
        return None
    if frame is not None:
        where, source = user_line(frame)
    elif ran_user_code(exc):
        where, source = innermost_user_line(exc.__traceback__)
    else:
        return None
    names = traced_arguments(exc)
    quoted = ", ".join(f"'{name}'" for name in names)
    depends = (
        f"; the value depends on the argument{'s' if len(names) > 1 else ''} {quoted}, which "
        f"{'are' if len(names) > 1 else 'is'} traced"
        if names
        else ""
    )
    static = (
        f"mark {quoted} static (`static_argnames=({', '.join(repr(n) for n in names)},)`; each new value "
        "then traces the function again)"
        if names
        else "mark the arguments the value depends on static (static_argnums / static_argnames; each new value "
        "then traces the function again)"
    )
    slicing = (
        "slice with `lax.dynamic_slice(xs, (i,), (size,))` (a fixed `size`), or consume the slice only by a "
        "sum, product, max, min, any, all, norm, `@` / `dot` or a write-back (computed under a mask)."
    )
    if fix is None:
        fix = slicing if traced_slice(exc) else unstageable_fix(exc)
    fix = f"{fix[:-1] if fix.endswith('.') else fix}; or {static}." if fix else f"{static}."
    return errors.make(
        "traced-python-value", where=where, use=concrete_use(exc), depends=depends, source=source, fix=fix
    )


def unbound_read(exc: BaseException) -> bool:
    """Is ``exc`` autolax's ``UndefinedVariableError`` for a read of a variable with no value
    (``ops.assigned`` of a deleted or never assigned one; ``state.unbound_error``)? Python
    raises ``UnboundLocalError`` there, on the runs that reach the read."""
    return isinstance(exc, errors.UndefinedVariableError) and getattr(exc, "code", None) == "unbound"


def python_error(exc: BaseException) -> str:
    """``exc`` as Python would name it in one line (``IndexError: list index out of range``):
    an unbound read is Python's ``UnboundLocalError`` and its words."""
    if unbound_read(exc):
        return f"UnboundLocalError: cannot access local variable '{exc.name}' where it is not associated with a value"
    return f"{type(exc).__name__}: {exc}"


def failed_at_unbound_read(exc: BaseException) -> bool:
    """Is ``exc`` the error of a staged branch or operand that read a variable with no value
    (``branch-fails`` / ``operand-fails`` from ``unbound_read``)? A loop with static bounds
    around it runs in Python instead, as for an unbound read directly in its body (the
    variable a loop assigns later in its body has a value from the second iteration on)."""
    return getattr(exc, "code", None) in ("branch-fails", "operand-fails") and unbound_read(exc.__cause__)


_PYTHONS_OWN = "__autolax_pythons_own__"


def pythons_own(exc: BaseException) -> BaseException:
    """``exc``, marked as the error Python itself raises for the user's statement where an op
    raises it in the builtin's place (``range(5, 0, 0)``'s ``ValueError``, from
    ``ops.for_range``): ``raised_by_user_code`` counts it as the user's code's, so that a
    staged branch the program may not take raises it only when taken, as Python does."""
    setattr(exc, _PYTHONS_OWN, True)
    return exc


def truth(value) -> bool:
    """``bool(value)`` where the user's ``if`` / ``while`` / ``not`` asks it of a Python value;
    its error (NumPy's for an empty or a longer array) is the user's statement's
    (``pythons_own``), so that a ``finally`` that discards errors discards it too."""
    __tracebackhide__ = True
    try:
        return bool(value)
    except AutolaxError:
        raise
    except Exception as exc:  # noqa: BLE001 - Python's error for the user's test, marked as such
        pythons_own(exc)
        raise


def raised_by_user_code(exc: BaseException) -> bool:
    """Did ``exc`` come from the user's code -- its innermost frame is the user's, or a
    library function the user's code called refused its arguments (``jnp.stack([])``, a
    builtin error raised by JAX or NumPy, not by autolax), or an op raised Python's own
    error for the statement (``pythons_own``) -- and is it not an error autolax or JAX
    raise to say why something cannot be staged?"""
    if isinstance(exc, AutolaxError) or type(exc).__module__.split(".")[0] in ("jax", "jaxlib"):
        return False
    if getattr(exc, _PYTHONS_OWN, False):
        return True
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename
    if not filename.startswith(_INTERNAL_DIRS):
        return True
    if filename == _CALLS_FILE and tb.tb_frame.f_code.co_name == "call":
        # A function without Python frames (a builtin: `math.sqrt(-1.0)`) that the user's
        # code called through `ops.call` (the CLI's output calls so what it does not convert).
        return ran_user_code(exc)
    return not filename.startswith(_OWN_DIRS) and ran_user_code(exc)


def ran_user_code(exc: BaseException) -> bool:
    """Did ``exc`` pass through a frame of the user's code (not library code: autolax's, JAX's,
    the standard library's), such as the converted function wherever its file is (the CLI
    writes it next to the source)?"""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if not libraries.module_is_library(frame.f_globals.get("__name__"), frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def user_line(frame) -> tuple[str, str]:
    """(``file:line``, source line) of the first frame at or above ``frame`` that is neither
    autolax's nor JAX's: the user's statement that called into the runtime."""
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        frame = frame.f_back
    filename = frame.f_code.co_filename
    return (f"{sites.display_filename(filename)}:{frame.f_lineno}", linecache.getline(filename, frame.f_lineno).strip())


def innermost_user_line(tb) -> tuple[str, str]:
    """(``file:line``, source line) of the innermost frame of traceback ``tb`` that runs the
    user's code (not library code), else of ``tb``'s own frame: where an error was raised."""
    found = tb
    while tb is not None:
        frame = tb.tb_frame
        if not libraries.module_is_library(frame.f_globals.get("__name__"), frame.f_code.co_filename):
            found = tb
        tb = tb.tb_next
    filename = found.tb_frame.f_code.co_filename
    return (
        f"{sites.display_filename(filename)}:{found.tb_lineno}",
        linecache.getline(filename, found.tb_lineno).strip(),
    )


def _past_wrappers(frame):
    """The first frame at or above ``frame`` that is not a ``user_facing`` wrapper."""
    while frame is not None and frame.f_code is _WRAPPER_CODE:
        frame = frame.f_back
    return frame


_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CALLS_FILE = os.path.join(_RUNTIME_DIR, "ops", "calls.py")
_OWN_DIRS = (_RUNTIME_DIR + os.sep,)  # autolax's code (more with hide_frames_under)
_INTERNAL_DIRS = (*_OWN_DIRS, os.path.dirname(jax.__file__) + os.sep)


def internal_dirs() -> tuple:
    """The folders of autolax's and JAX's own code (their frames are not the user's)."""
    return _INTERNAL_DIRS


def hide_frames_under(path: str) -> None:
    """Leaves the frames of files under ``path`` out of the tracebacks of autolax's errors, as
    the runtime's own are (``autolax.api`` adds the whole package; a ``--standalone`` copy has
    only the runtime)."""
    global _OWN_DIRS, _INTERNAL_DIRS
    path = os.path.abspath(path) + os.sep
    if path not in _OWN_DIRS:
        _OWN_DIRS = (*_OWN_DIRS, path)
        _INTERNAL_DIRS = (*_INTERNAL_DIRS, path)


def user_facing(op):
    """Decorates a public op: an autolax error raised inside it keeps only the user's frames in
    its traceback (the internal ones say nothing about the user's mistake)."""

    @functools.wraps(op)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        try:
            return op(*args, **kwargs)
        except AutolaxError as exc:
            kept = []
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # skip this frame
            while tb is not None:
                if not tb.tb_frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
                    kept.append(tb)
                tb = tb.tb_next
            for a, b in zip(kept, kept[1:] + [None]):
                a.tb_next = b
            raise exc.with_traceback(kept[0] if kept else None) from exc.__cause__

    return wrapper


_WRAPPER_CODE = WRAPPER_CODE = user_facing(lambda: None).__code__  # public: ops.search walks past it
