"""The object ``autolax.jit`` returns, and its call path.

``Jitted`` behaves like the ``jax.jit`` object it wraps (``.lower``, ``.trace``, caching, use
as a method). A signature's first call goes through ``Jitted._missed``, the Python path: it
traces (the conversion is ``autolax.api``'s), counts the run-time checks the program stages
and gives Python's errors. Where JAX builds it, the object is a ``_Dispatched``: the steady
state's calls of a program without checks run JAX's C++ dispatch alone. Every call that comes
back with an error goes through one outcome protocol (``_call_failed``, ``_raise_failure``,
``_runtime_error``, ``_after_trace_error``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import io
import operator
import sys
import types
import weakref
from dataclasses import dataclass

import jax
import numpy as np

from autolax.runtime import compat
from autolax.runtime.errors import (
    AutolaxError,
)
from autolax.runtime.ops import calls as _calls
from autolax.runtime.ops import checks as _checks
from autolax.runtime.ops import lists as _lists
from autolax.runtime.ops import report


@dataclass(frozen=True)
class JitInfo:
    """What ``autolax.jit`` was given; kept on the ``jax.jit`` object it returns."""

    fn: object
    static_argnums: object
    static_argnames: object
    strict: bool
    max_steps: int | None = None
    filtered: bool = False  # autolax.filter_jit: non-array leaves of the arguments are static


# Argument types that hold no tracer: a call given only these needs no look at the leaves
# of its arguments (``Jitted.__call__``). NumPy's arrays and scalars, Python's scalars and
# strings, and the types of concrete JAX arrays met in calls (``_plain_type``: found from
# arguments, since making an array at import would start JAX's backend before a
# multi-process job's ``jax.distributed.initialize``).
_PLAIN_TYPES = {
    np.ndarray,
    int,
    float,
    bool,
    complex,
    str,
    type(None),
    *(t for t in set(np.sctypeDict.values()) if issubclass(t, np.generic)),
}


def _plain_type(arg) -> bool:
    """Is ``arg`` of a type that holds no tracer? (A concrete JAX array's type is learnt.)"""
    if isinstance(arg, jax.Array) and not isinstance(arg, compat.Tracer):
        _PLAIN_TYPES.add(type(arg))
        return True
    return False


_DELEGATED: dict = {}  # type of a jax.jit object -> the names ``Jitted`` takes from it


def _delegated(jitted) -> tuple:
    """The attributes of ``jitted`` (a ``jax.jit`` object, a ``filter_jit`` object) that its
    ``Jitted`` takes as its own: its methods and fields that ``Jitted`` does not define."""
    names = _DELEGATED.get(type(jitted))
    if names is None:
        names = _DELEGATED.setdefault(type(jitted), tuple(name for name in dir(type(jitted)) if _delegable(name)))
    own = getattr(jitted, "__dict__", {})
    return (
        names
        + tuple(name for name in own if _delegable(name) and name not in names)
        + (("__annotations__",) if "__annotations__" in own else ())
    )


def _delegate(jitted, name: str):
    """``getattr(jitted, name)``, as an attribute its ``Jitted`` may keep. A method of a C++
    type (``jax.jit``'s ``_cache_size``, ``_clear_cache``: nanobind's bound methods) is an
    object Python's cycle collector does not see into: kept in the ``Jitted``'s ``__dict__``,
    its reference to ``jitted`` would keep the cycle ``Jitted`` -> ``jitted`` -> the user's
    function -> its module's namespace -> ``Jitted`` alive forever (a notebook cell
    redefining an ``@autolax.jit`` function kept every definition, issue 43 item 4). It is
    kept as a Python bound method instead, which the collector sees through."""
    value = getattr(jitted, name)
    if getattr(value, "__self__", None) is jitted and not gc.is_tracked(value):
        unbound = getattr(type(jitted), name, None)
        if unbound is not None:
            return types.MethodType(unbound, jitted)

        def method(*args, **kwargs):
            return getattr(jitted, name)(*args, **kwargs)

        return method
    return value


def _delegable(name: str) -> bool:
    return not name.startswith("__") and not hasattr(Jitted, name)


class Jitted:
    """What ``autolax.jit`` returns: the ``jax.jit`` object of the converted function, called
    through one more step that reports run-time checks as the errors Python would raise.

    Everything else -- ``.lower``, ``.trace``, ``.eval_shape``, ``.clear_cache``, caching,
    use as a method -- is the ``jax.jit`` object's. A program with run-time checks (see
    ``autolax.runtime.ops.checks``: a read of a variable a staged loop may never have assigned, a
    ``raise`` under a traced condition) waits for its result, so a failed check is raised
    by the call itself. Where JAX builds it, the object is a ``_Dispatched``: the steady
    state's calls of a program without checks are JAX's C++ dispatch alone.
    """

    def __init__(self, jitted, info: JitInfo, python=None, forward=None, checked=None, spread=False):
        # The jax.jit object's other attributes, as attributes of this object (no
        # ``__getattr__``: it would slow every attribute read of ``__call__``).
        for name in _delegated(jitted):
            setattr(self, name, _delegate(jitted, name))
        self._jitted = jitted
        self._python = python  # the converted function, run as Python (see ``_python_error``)
        # (on_one_device) -> the jax.jit object a call runs: it returns the program's checks
        # with its outputs (``checks.returning_checks``), and its prints are ordered only if
        # it runs on one device. None (filter_jit): ``jitted``, whose checks are host callbacks.
        self._checked = checked
        self._forward = forward  # the same, for jvp's tracers (see ``__call__``)
        self._spread = spread  # jax.jit was given shardings: the program may run on several devices
        # The function the jax.jit objects trace, when it is a ``_traced_entry``: its traces
        # tell this object what its calls must add (``_learn``), so a call that does not
        # trace adds nothing to jax.jit's. None (filter_jit): each call counts (``_run``).
        inner = getattr(jitted, "__wrapped__", None)
        self._entry = inner if getattr(inner, _ENTRY, False) else None
        # The jax.jit object of ``__call__``'s steady state (``_checked(True)``), once a call
        # found that JAX sees one device in all.
        self._steady = None
        self._plain = True  # no trace returned an appended list or staged a host-callback check
        self._has_checks = False  # a trace staged a check a host callback raises: calls wait
        self.__autolax_jit__ = info
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(self, attr, getattr(info.fn, attr, None))
        if checked is not None and self._entry is not None:
            dispatch = _dispatcher(self)
            if dispatch is not None:
                self._dispatch = dispatch
                self.__class__ = _Dispatched

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        # The steady state: positional arguments of types that hold no tracer, where JAX sees
        # one device: jax.jit's call, the checks' code read (a host sync only where the
        # program has checks), nothing else unless a trace asked for more (``_learn``).
        steady = self._steady
        if steady is None or kwargs:
            return self._call(args, kwargs)
        for arg in args:
            if type(arg) not in _PLAIN_TYPES:
                return self._call(args, kwargs)
        try:
            out, outcome = steady(*args)
        except Exception as exc:
            retried = self._call_failed(exc, True, args, kwargs)
            if retried is None:
                raise
            out, outcome = retried
        if outcome is not None:
            self._raise_failure(_failure_of(outcome), args, kwargs)
        return out if self._plain else self._finish(out, args, kwargs)

    def _missed(self, args, kwargs):
        """A call of a ``_Dispatched`` object that JAX's C++ code has no compiled program for
        (the first call of each argument signature, tracers, several devices): ``__call__``'s
        path, keyword arguments of the types that hold no tracer included in its steady
        state. Returns ``(what the call returns, fast-path data or None, False)``: the data
        -- only for the steady state's call of a program that returns no checks and no
        appended lists -- lets the C++ code run later calls of this signature with no
        Python at all."""
        __tracebackhide__ = True
        for arg in (*args, *kwargs.values()) if kwargs else args:
            if type(arg) not in _PLAIN_TYPES and not _plain_type(arg):
                return self._call(args, kwargs), None, False
        steady = self._steady
        if steady is None:
            # (JAX's C++ code keeps a signature's first answer: no fast-path data on its
            # first call would send every later call of it here.)
            _on_one_device(args, kwargs, self._spread)
            if not _ONE_DEVICE:
                return self._call(args, kwargs), None, False
            steady = self._steady = self._checked(True)
        try:
            (out, outcome), fast = compat.call_with_fast_path(steady, args, kwargs)
        except Exception as exc:
            retried = self._call_failed(exc, True, args, kwargs)
            if retried is None:
                raise
            (out, outcome), fast = retried, None
        if outcome is not None:
            self._raise_failure(_failure_of(outcome), args, kwargs)
            fast = None  # its checks are read on every call
        if not self._plain:
            return self._finish(out, args, kwargs), None, False
        return out, fast, False

    def _call(self, args, kwargs):
        """A call that is not ``__call__``'s steady state: keyword arguments, an argument of
        another type (whose leaves may be jvp's tracers), several devices, filter_jit."""
        __tracebackhide__ = True
        if self._checked is None or self._entry is None:
            return self._run(self._jitted, False, args, kwargs)
        plain = _PLAIN_TYPES
        for arg in args:
            if type(arg) not in plain and not _plain_type(arg):
                forward = compat.forward_mode(jax.tree_util.tree_leaves((args, kwargs)))
                break
        else:
            forward = kwargs and compat.forward_mode(jax.tree_util.tree_leaves(kwargs))
        one = _on_one_device(args, kwargs, self._spread)
        if _ONE_DEVICE:
            self._steady = self._checked(True)
        if forward:
            # jax.jvp / jacfwd of this object: its bounded loops are traced as plain
            # while_loops (a custom_vjp, their reverse-mode form, has no forward mode), in a
            # jax.jit object of their own so the two forms do not share a trace.
            return self._run(self._forward(one), True, args, kwargs)
        try:
            out, outcome = self._checked(one)(*args, **kwargs)
        except Exception as exc:
            retried = self._call_failed(exc, one, args, kwargs)
            if retried is None:
                raise
            out, outcome = retried
        if outcome is not None:
            self._raise_failure(_failure_of(outcome), args, kwargs)
        return out if self._plain else self._finish(out, args, kwargs)

    def _call_failed(self, exc, one, args, kwargs):
        """The call of the ``jax.jit`` object for ``one`` (on one device) raised ``exc``:
        raises the error Python raises instead, where that is wanted; returns the outputs of
        a call run again on several devices; else None (the caller raises ``exc``)."""
        __tracebackhide__ = True
        if isinstance(exc, jax.errors.JaxRuntimeError):
            self._runtime_error(exc, args, kwargs)
            return None
        if one and isinstance(exc, ValueError) and _ORDERED_REFUSED in str(exc):
            # JAX refuses ordered effects (a staged print) on several devices: the program
            # runs on more devices than its arguments live on (a sharded constant it
            # reads, a sharding constraint inside).
            try:
                return self._checked(False)(*args, **kwargs)
            except jax.errors.JaxRuntimeError as again:
                self._runtime_error(again, args, kwargs)
                raise
            except Exception as again:
                self._after_trace_error(again, None, args, kwargs)
                raise
        self._after_trace_error(exc, None, args, kwargs)
        return None

    def _run(self, jitted, returns_checks, args, kwargs):
        """``jitted(*args, **kwargs)`` for a ``jax.jit`` object that does not trace an entry
        (filter_jit, jvp's tracers): the checks its trace stages are counted around the call."""
        __tracebackhide__ = True
        with _checks.counting(functools.partial(self._can_rerun, args, kwargs)) as staged:
            try:
                out = jitted(*args, **kwargs)
            except jax.errors.JaxRuntimeError as exc:
                self._runtime_error(exc, args, kwargs)
                raise
            except Exception as exc:
                self._after_trace_error(exc, staged, args, kwargs)
                raise
        if returns_checks:
            out, outcome = out
            self._raise_failure(_failure_of(outcome), args, kwargs)
        self._learn(staged.callbacks > 0, False)
        return self._finish(out, args, kwargs)

    def _learn(self, checks: bool, lists: bool):
        """A trace staged checks a host callback raises (every later call waits for the
        program's result, so a failed check is raised by the call) or returned an appended
        list (made plain)."""
        if checks:
            self._has_checks = True
        if checks or lists:
            self._plain = False

    def _finish(self, out, args, kwargs):
        """What a call returns when a trace staged host-callback checks or returned appended
        lists."""
        __tracebackhide__ = True
        out = _lists.plain_lists(out)
        if self._has_checks:
            try:
                out = jax.block_until_ready(out)
            except jax.errors.JaxRuntimeError as exc:
                self._runtime_error(exc, args, kwargs)
                raise
        return out

    def _raise_failure(self, error, args, kwargs):
        """Raises ``error``, a failed check's (None: nothing failed), or the error Python
        raises on these arguments where that is wanted."""
        __tracebackhide__ = True
        if error is None:
            return
        if _checks.python_error_wanted(error) and self._can_rerun(args, kwargs):
            # The program ran up to the error and printed what Python prints before it: the
            # run that finds Python's error prints nothing again.
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self._raise_python_error(args, kwargs)
        raise error from None

    def _runtime_error(self, exc, args, kwargs):
        """The running program raised ``exc``: if a check failed, the error Python raises
        is raised instead (else the caller raises ``exc``)."""
        __tracebackhide__ = True
        error = _checks.pop_failure(str(exc))
        if error is None:
            return
        compat.drop_failed_effects()  # the runtime stays usable: no error again at exit
        self._raise_failure(error, args, kwargs)

    def trace(self, *args, **kwargs):
        """``jax.jit(...).trace``; a user error raised while tracing after checks were staged is
        the error Python raises on these arguments, as for a call."""
        __tracebackhide__ = True
        return self._staging("trace", args, kwargs)

    def lower(self, *args, **kwargs):
        """``jax.jit(...).lower``; errors while tracing as for ``trace``."""
        __tracebackhide__ = True
        return self._staging("lower", args, kwargs)

    def eval_shape(self, *args, **kwargs):
        """``jax.jit(...).eval_shape``; errors while tracing as for ``trace``."""
        __tracebackhide__ = True
        return self._staging("eval_shape", args, kwargs)

    @property
    def __wrapped__(self):
        """The function the ``jax.jit`` object runs (the converted function)."""
        inner = self._jitted.__wrapped__
        return inner.__wrapped__ if getattr(inner, _ENTRY, False) else inner

    @property
    def __signature__(self):
        """The ``jax.jit`` object's signature (what ``inspect.signature`` shows)."""
        return self._jitted.__signature__

    def _staging(self, method, args, kwargs):
        __tracebackhide__ = True
        with _checks.counting(functools.partial(self._can_rerun, args, kwargs)) as staged:
            try:
                out = getattr(self._jitted, method)(*args, **kwargs)
            except Exception as exc:
                self._after_trace_error(exc, staged, args, kwargs)
                raise
        # A later call may run this trace (jax.jit keeps it) without tracing again.
        self._learn(staged.callbacks > 0, False)
        return out

    def _after_trace_error(self, exc, staged, args, kwargs):
        """Tracing raised ``exc``: JAX's tracer error out of the user's code is autolax's
        ``TracedValueError``; if it is the user's and checks were staged before it (in
        ``staged``, or by a trace of the entry, which marked ``exc``), the error Python raises
        is raised instead (``_raise_python_error``)."""
        __tracebackhide__ = True
        marked = exc.__dict__.pop(_RERUN, False)
        refusal = report.escaped_tracer_error(exc)
        if refusal is not None:
            raise refusal from exc
        if marked or (staged is not None and staged.count and _user_error(exc) and self._can_rerun(args, kwargs)):
            self._raise_python_error(args, kwargs)

    def _can_rerun(self, args, kwargs) -> bool:
        """Can the function run as Python on these arguments (concrete values: not tracers of
        a trace around this call, not only shapes)?"""
        return self._python is not None and not _any_tracer(args, kwargs) and _all_concrete(args, kwargs)

    def _raise_python_error(self, args, kwargs):
        """Tracing raised an error of the user's code after it staged checks (an ``assert``
        in a staged loop) that the running program would make first: Python raises the first
        of them that fails, else this error, which only running the function can tell. It
        runs as Python on these concrete arguments and its error, if any, is raised."""
        __tracebackhide__ = True
        try:
            self._python(*args, **kwargs)
        except Exception as error:
            raise error from error.__cause__  # not shown as raised while handling the trace's error

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return f"<autolax.jit of {self.__qualname__}>"


class _Dispatched(Jitted):
    """A ``Jitted`` whose calls JAX's C++ code dispatches (``compat.dispatcher``): a call
    of an argument signature whose program returns no checks and no appended lists, made
    in the steady state (one device in all, arguments of the types that hold no tracer),
    runs that program with no Python; any other call is ``Jitted._missed``. JAX's C++ code
    checks what ``jax.jit``'s own fast path checks (shapes, dtypes, shardings, static
    values, JAX's configuration, tracers): a call it cannot match is a miss."""

    __call__ = property(operator.attrgetter("_dispatch"), doc="The object's C++ dispatcher (``_dispatcher``).")


def _dispatcher(jitted: Jitted):
    """The C++ dispatcher of ``jitted`` (None where JAX does not build it). It holds
    ``jitted`` weakly: ``jitted`` holds it."""
    ref = weakref.ref(jitted)

    def alive():
        held = ref()
        if held is None:
            raise ReferenceError(
                f"the autolax.jit object of '{jitted_name}' was freed; keep the object, not its __call__ alone"
            )
        return held

    def missed(*args, **kwargs):
        __tracebackhide__ = True
        return alive()._missed(args, kwargs)

    def call(*args, **kwargs):  # under jax.disable_jit
        __tracebackhide__ = True
        return alive()._call(args, kwargs)

    jitted_name = jitted.__qualname__

    return compat.dispatcher(jitted._checked(True), call, missed)


# The start of JAX's error for an ordered effect (a staged print) in a program on several devices.
_ORDERED_REFUSED = "ordered effects are not supported for more than 1 device"


_ONE_DEVICE = None  # does JAX see one device in all (decided on the first call)?


def _on_one_device(args, kwargs, spread) -> bool:
    """Does a call on ``args``, ``kwargs`` run on one device, as far as its arguments tell
    (``spread``: jax.jit was given shardings)? True at once where JAX sees one device in all."""
    global _ONE_DEVICE
    if _ONE_DEVICE is None:
        _ONE_DEVICE = jax.device_count() == 1
    if _ONE_DEVICE:
        return True
    if spread or jax.process_count() > 1:
        return False
    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        if isinstance(leaf, compat.Tracer):
            return False  # called inside another trace, whose devices it cannot see
        sharding = getattr(leaf, "sharding", None)
        if sharding is not None and len(sharding.device_set) > 1:
            return False
    return True


_CHECKED = "__autolax_checked__"


def _checked_function(own, one_device: bool):
    """``own`` returning its run-time checks with its outputs (``checks.returning_checks``),
    its staged prints ordered when ``one_device``; kept on ``own`` (so JAX's caches for it
    live as long as ``own`` does, see ``_jitted_function``)."""
    kept = own.__dict__.setdefault(_CHECKED, {}) if isinstance(own, types.FunctionType) else {}
    hit = kept.get(one_device)
    if hit is not None and hit.__wrapped__ is own:  # (not one copied from ``own`` by functools.wraps)
        return hit
    returning = _checks.returning_checks(own)

    @functools.wraps(own)
    def checked(*args, **kwargs):
        __tracebackhide__ = True
        with _calls.printing_in_order(one_device):
            return returning(*args, **kwargs)

    kept[one_device] = checked
    return checked


_OWN = "__autolax_own__"


_ENTRY = "__autolax_entry__"


_RERUN = "__autolax_rerun_as_python__"  # on an error of a trace: Python's error is wanted


def _traced_entry(own):
    """``own`` as the function of an ``autolax.jit`` object's ``jax.jit`` object. A trace of
    it started by a call of that object (``Jitted.__call__``, ``.lower`` ...) counts the
    checks it stages, for that call's arguments, as the call itself would, and tells the
    object what every call must add to ``jax.jit``'s (``Jitted._learn``). So a call that
    does not trace -- the steady state -- is ``jax.jit``'s call and nothing more."""

    @functools.wraps(own)
    def entry(*args, **kwargs):
        call = _call_tracing(entry)
        if call is None:
            return own(*args, **kwargs)
        jitted, call_args, call_kwargs = call
        with _checks.counting(functools.partial(jitted._can_rerun, call_args, call_kwargs)) as staged:
            try:
                out = own(*args, **kwargs)
            except Exception as exc:
                if staged.count and _user_error(exc) and jitted._can_rerun(call_args, call_kwargs):
                    # Python's error is found outside the trace (``Jitted._after_trace_error``).
                    exc.__dict__[_RERUN] = True
                raise
        jitted._learn(staged.callbacks > 0, _holds_appended(out))
        return out

    setattr(entry, _ENTRY, True)
    return entry


def _call_tracing(entry):
    """The call of the ``autolax.jit`` object whose ``jax.jit`` object traces ``entry`` (the
    object, the call's arguments), the innermost on this thread's stack; None if none is."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in _CALL_CODES:
            local = frame.f_locals
            jitted = local.get("self")
            if isinstance(jitted, Jitted) and jitted._entry is entry:
                return jitted, local["args"], local["kwargs"]
        frame = frame.f_back
    return None


# The frames of the calls that may start a trace of an entry.
_CALL_CODES = frozenset({Jitted.__call__.__code__, Jitted._missed.__code__, Jitted._staging.__code__})


def _user_error(exc) -> bool:
    """An error Python could raise too: neither autolax's nor JAX's own."""
    return not isinstance(exc, AutolaxError) and type(exc).__module__.split(".")[0] not in ("jax", "jaxlib")


def _any_tracer(args, kwargs) -> bool:
    return any(isinstance(leaf, compat.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def _all_concrete(args, kwargs) -> bool:
    """No argument is only a shape and dtype (``jax.ShapeDtypeStruct``, for ``.trace`` / ``.lower``)."""
    return not any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def jit_info(fn) -> JitInfo | None:
    """What ``autolax.jit`` was given, for an object it returned (else None)."""
    info = getattr(fn, "__autolax_jit__", None)
    return info if isinstance(info, JitInfo) else None


def _failure_of(outcome: _checks.Outcome | None):
    """The error of the check that failed first in the run that returned ``outcome``, or None.
    Its ``code`` is a replicated scalar: every process reads its own copy (a host sync, the
    cost of one device-to-host copy of four bytes). Given a tracer (the call was itself
    traced: ``jax.vmap`` or ``jax.grad`` of an ``autolax.jit`` function, or a call from
    another traced function), the checks are handed to the function being traced
    (``defer``)."""
    if outcome is None or outcome.code is None:
        return None
    if _lists.is_tracer(outcome.code):
        _checks.defer(_checks.Failures(outcome.code, outcome.makers))
        return None
    code = int(np.asarray(outcome.code))
    if code == 0:
        return None
    return copy.copy(outcome.makers[code - 1]())


def _holds_appended(value) -> bool:
    """Does ``value`` (a traced function's result) hold a list appended to in a staged loop
    where ``plain_lists`` looks for one? (A ``StackedList`` comes back from ``jax.jit`` as an
    ``AppendedList``.)"""
    if isinstance(value, (_lists.StackedList, _lists.AppendedList)):
        return True
    if type(value) in (list, tuple):
        return any(_holds_appended(v) for v in value)
    if type(value) is dict:
        return any(_holds_appended(v) for v in value.values())
    return False
