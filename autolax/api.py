"""Public entry points: ``jit``, ``filter_jit``, ``convert``, ``to_source``, ``do_not_convert``.

Conversion is cached per code object (one conversion per function body) and per function
object (one converted function per function), without keeping either alive: a redefined
function (a notebook cell run again) frees the old conversion with the old function.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import inspect
import operator
import sys
import threading
import types
import warnings
import weakref
from dataclasses import dataclass

import jax
import numpy as np

from autolax import callables, compat, filtering, libraries, pipeline
from autolax import ops as _ops
from autolax.errors import (
    AutolaxError,
    CallConversionWarning,
    ConversionError,
    NoSourceWarning,
    SourceChangedError,
)
from autolax.libraries import is_library_callable
from autolax.ops import calls as _calls
from autolax.ops import checkpointed as _checkpointed
from autolax.ops import checks as _checks
from autolax.ops import lists as _lists
from autolax.ops import report
from autolax.transpile.source import SourceChanged, SourceUnavailable

_lock = threading.RLock()


class _CodeCache:
    """code object -> (converted source text, compiled inner code), held weakly by the key.

    Keyed by identity: equal code objects from two files (or two definitions) are distinct
    functions whose sources may differ."""

    def __init__(self):
        self._entries: dict = {}

    def get(self, code):
        hit = self._entries.get(id(code))
        return hit[1] if hit is not None and hit[0]() is code else None

    def put(self, code, value):
        key = id(code)
        self._entries[key] = (weakref.ref(code, lambda _, key=key: self._entries.pop(key, None)), value)

    def __len__(self):
        return len(self._entries)

    def clear(self):
        self._entries.clear()


_CODE_CACHE = _CodeCache()
# The code of every function (a nested `def` or a lambda) that a conversion compiled: it is
# converted already (the conversion of the function around it rewrote its body, knowing that
# function's variables). Called from converted code it runs as it is -- as in a file written
# by `autolax convert`, whose nested functions are that same converted code.
_CONVERTED_NESTED = _CodeCache()
_FAILED_CALLEES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

# A function's converted function is kept on the function itself (``__autolax_conversion__``),
# not in a table: the converted function shares the original's globals, which usually hold
# the original, so a table entry would keep both alive for ever. On the function, the two
# form a cycle that the garbage collector frees with the function.
_CONVERSION = "__autolax_conversion__"


_generation = 0  # bumped when what counts as library code changes (autolax.convert_package)


def _cached_conversion(fn):
    entry = getattr(fn, "__dict__", {}).get(_CONVERSION)
    # (weak reference to the function, converted, generation): a wrapper that copied the
    # function's __dict__ (functools.wraps) does not pass for it.
    return entry[1] if entry is not None and entry[0]() is fn and entry[2] == _generation else None


@dataclass(frozen=True)
class JitInfo:
    """What ``autolax.jit`` was given; kept on the ``jax.jit`` object it returns."""

    fn: object
    static_argnums: object
    static_argnames: object
    strict: bool
    max_steps: int | None = None
    filtered: bool = False  # autolax.filter_jit: non-array leaves of the arguments are static


def loop_options(*, max_steps: int | None = None) -> None:
    """Options for the loop whose body it opens; a no-op when the function runs as Python.

    ``max_steps``: a bound on the loop's iterations (a literal int). A staged ``while`` loop
    (or ``for`` over a traced range) with a bound has a reverse-mode derivative: ``jax.grad``,
    ``jax.value_and_grad``, ``jax.vjp`` work through it, at a cost proportional to the
    iterations the loop ran (checkpoints, recomputed backwards). The bound never caps a call
    that is not differentiated; a differentiated call that needs more iterations raises
    ``autolax.RuntimeCheckError``. Forward mode (``jax.jvp``) of a bounded loop is not
    available. Example::

        while t < t_end:
            autolax.loop_options(max_steps=4096)
            y, t = step(y, t)

    ``autolax.jit(fn, max_steps=...)`` gives every loop of ``fn`` without its own a bound.
    """
    del max_steps


def do_not_convert(fn):
    """Marks ``fn`` so autolax never converts it (as a decorator or when called from
    converted code); it runs exactly as written."""
    fn.__autolax_do_not_convert__ = True
    return fn


def _original(fn):
    """The user's function behind a converted function or an ``autolax.jit`` object."""
    info = jit_info(fn)
    if info is not None:
        return info.fn
    ref = getattr(fn, "__autolax_original__", None)
    original = ref() if isinstance(ref, weakref.ref) else None
    return original if original is not None else fn


def _converted_code(fn):
    """Converts and compiles ``fn``'s body once per code object: (source text, code)."""
    code = fn.__code__
    with _lock:
        hit = _CODE_CACHE.get(code)
        if hit is None:
            with _collector_paused():
                converted = pipeline.convert_function(fn)
                hit = (converted.lazy_source(), pipeline.compile_converted(fn, converted))
                # Freed now, by reference counting: the collection that may start when the
                # collector is back on then need not look at the whole gast tree.
                del converted
            _CODE_CACHE.put(code, hit)
            for nested in pipeline.nested_functions(hit[1]):
                _CONVERTED_NESTED.put(nested, True)
        return hit


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while one function is converted. A conversion
    makes some ten thousand short-lived nodes, freed by reference counting; each few hundred
    start a collection, and after an import of JAX a full one walks hundreds of thousands of
    objects (several milliseconds, about as long as the conversion). The collector is turned
    back on after, if it was on: collections only move to later."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _convert_function(fn):
    with _lock:
        hit = _cached_conversion(fn)
        if hit is not None:
            return hit
        source, inner = _converted_code(fn)
        new = pipeline.make_function(fn, inner, _ops)
        new.__dict__.pop(_CONVERSION, None)
        new.__autolax_converted__ = True
        new.__autolax_original__ = weakref.ref(fn)
        new.__autolax_source__ = source
        fn.__dict__[_CONVERSION] = (weakref.ref(fn), new, _generation)
        return new


def _with_options(fn, converted, *, strict: bool, recursive: bool, max_steps: int | None):
    """``converted`` run with non-default options (they hold for the whole call, including
    the functions it calls)."""

    @functools.wraps(converted)
    def with_options(*args, **kwargs):
        with contextlib.ExitStack() as options:
            if strict:
                options.enter_context(report.strict_mode(True))
            if not recursive:
                options.enter_context(report.calls_converted(False))
            if max_steps is not None:
                options.enter_context(report.loop_bound(max_steps))
            return converted(*args, **kwargs)

    # (jax.jit reads the signature to find static_argnames passed by position: kept)
    with_options.__signature__ = inspect.signature(converted)
    del with_options.__wrapped__  # it would keep a strong reference chain to the original
    with_options.__autolax_converted__ = True
    return with_options


def convert(fn=None, *, recursive: bool = True, strict: bool = False, max_steps: int | None = None):
    """Returns ``fn`` with its Python control flow rewritten to decide at trace time.

    The result is a plain Python function with the same signature, globals, closure and
    defaults. Run eagerly on concrete values it behaves exactly like ``fn``; under
    ``jax.jit``, ``grad``, ``vmap`` and other transforms, statements whose conditions,
    bounds or carried values are traced become ``lax.cond`` / ``while_loop`` / ``scan`` /
    ``fori_loop``. User functions it calls are converted too (once per function).

    ``fn`` may also be any other callable ``jax.jit`` takes, converted part by part (see
    ``autolax.callables``): a ``functools.partial`` (of the converted function), a bound
    method, a callable object or module (a ``jax.tree_util.Partial`` of its converted
    ``__call__``, so its arrays stay leaves), a ``staticmethod`` / ``classmethod``, a
    ``jax.custom_jvp`` / ``custom_vjp`` of your function, a Flax Linen method. Library code
    is returned as it is; a library's wrapper of your function (``jax.vmap(f)``) is a
    ``ConversionError`` that shows the rewrite (``jax.vmap(autolax.convert(f))``).

    Args:
      fn: the function (also usable as ``@autolax.convert`` or ``@autolax.convert(...)``).
      recursive: convert the user functions ``fn`` calls (on their first call). With
        ``False`` they run as written (their own ``if``/loops then behave as under plain
        ``jax.jit``). Library functions are never converted.
      strict: raise ``UnrolledLoopError`` instead of warning when a loop carrying traced
        values has to run as a Python loop; raise ``ConversionError`` if the source of
        ``fn`` is unavailable.
      max_steps: a bound on the iterations of every staged ``while`` loop (and ``for`` over
        a traced range) without ``autolax.loop_options``, so ``jax.grad`` can differentiate
        it (see ``loop_options``).

    Raises:
      ConversionError: ``fn`` uses syntax that cannot be staged (see its message).
    """
    if fn is None:
        return functools.partial(convert, recursive=recursive, strict=strict, max_steps=max_steps)
    if getattr(fn, "__autolax_converted__", False) or getattr(fn, "__autolax_do_not_convert__", False):
        return fn
    if isinstance(fn, types.FunctionType) and _CONVERTED_NESTED.get(fn.__code__):
        return fn
    if not isinstance(fn, types.FunctionType) or is_library_callable(fn):
        return callables.convert_callable(
            fn, functools.partial(convert, recursive=recursive, strict=strict, max_steps=max_steps), "convert")
    try:
        converted = _convert_function(fn)
    except SourceChanged as exc:
        raise SourceChangedError(str(exc), fix="re-import the module (or run the cell again), so the function "
                                 "matches its file") from None
    except SourceUnavailable as exc:
        if strict:
            raise ConversionError(
                f"cannot read the source of '{fn.__qualname__}': {exc}",
                fix="define the function in a file or notebook cell, or use jax.jit directly",
            ) from None
        warnings.warn(
            f"autolax could not read the source of '{fn.__qualname__}' ({exc}); it runs unconverted, "
            "as under plain jax.jit.",
            NoSourceWarning,
            stacklevel=3,
        )
        return fn
    if strict or not recursive or max_steps is not None:
        return _with_options(fn, converted, strict=strict, recursive=recursive, max_steps=max_steps)
    return converted


def convert_callee(fn):
    """Conversion of a function called from converted code; on failure, ``fn`` itself
    (with a ``CallConversionWarning`` the first time)."""
    hit = _cached_conversion(fn)
    if hit is not None:
        return hit
    if _CONVERTED_NESTED.get(fn.__code__):
        return fn
    if fn in _FAILED_CALLEES:
        return fn
    try:
        return _convert_function(fn)
    except (SourceUnavailable, ConversionError) as exc:
        _FAILED_CALLEES[fn] = exc.one_line() if isinstance(exc, ConversionError) else str(exc)
        if isinstance(exc, ConversionError) or report.is_strict():
            warnings.warn(
                f"autolax could not convert '{fn.__qualname__}', called from converted code; it runs "
                f"as written:\n{exc}",
                CallConversionWarning,
                stacklevel=4,
            )
        return fn


_calls.set_converter(convert_callee, _FAILED_CALLEES.get)


def _forget_conversions():
    global _generation
    with _lock:
        _CODE_CACHE.clear()
        _FAILED_CALLEES.clear()
        _generation += 1


libraries.on_change(_forget_conversions)


def _own_function(converted):
    """A new function object running ``converted``'s code. ``jax.jit`` caches traces per
    function object and static argument values -- not per set of static positions -- so two
    ``autolax.jit`` wrappers of one function with different ``static_argnums`` must not
    share a function object."""
    own = types.FunctionType(
        converted.__code__, converted.__globals__, converted.__name__, converted.__defaults__, converted.__closure__
    )
    own.__kwdefaults__ = converted.__kwdefaults__
    own.__dict__.update(converted.__dict__)
    own.__dict__.pop(_OWN, None)
    for attr in ("__doc__", "__module__", "__qualname__", "__annotations__"):
        setattr(own, attr, getattr(converted, attr))
    return own


# Argument types that hold no tracer: a call given only these needs no look at the leaves
# of its arguments (``Jitted.__call__``). NumPy's arrays and scalars, Python's scalars and
# strings, and the types of concrete JAX arrays met in calls (``_plain_type``: found from
# arguments, since making an array at import would start JAX's backend before a
# multi-process job's ``jax.distributed.initialize``).
_PLAIN_TYPES = {
    np.ndarray, int, float, bool, complex, str, type(None),
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
        names = _DELEGATED.setdefault(
            type(jitted), tuple(name for name in dir(type(jitted)) if _delegable(name)))
    own = getattr(jitted, "__dict__", {})
    return names + tuple(name for name in own if _delegable(name) and name not in names) + (
        ("__annotations__",) if "__annotations__" in own else ())


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
    ``autolax.ops.checks``: a read of a variable a staged loop may never have assigned, a
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
            self._raise_failure(_checks.failure_of(outcome), args, kwargs)
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
            self._raise_failure(_checks.failure_of(outcome), args, kwargs)
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
            self._raise_failure(_checks.failure_of(outcome), args, kwargs)
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
            self._raise_failure(_checks.failure_of(outcome), args, kwargs)
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
            raise ReferenceError(f"the autolax.jit object of '{jitted_name}' was freed; keep the object, "
                                 "not its __call__ alone")
        return held

    def missed(*args, **kwargs):
        __tracebackhide__ = True
        return alive()._missed(args, kwargs)

    def call(*args, **kwargs):  # under jax.disable_jit
        __tracebackhide__ = True
        return alive()._call(args, kwargs)

    jitted_name = jitted.__qualname__

    return compat.dispatcher(jitted._checked(True), call, missed)


def jit(fn=None, *, static_argnums=None, static_argnames=None, donate_argnums=None, strict: bool = False,
        max_steps: int | None = None, **jit_kwargs):
    """``jax.jit`` of ``autolax.convert(fn)``.

    ``fn`` is any callable ``jax.jit`` takes: a function, a ``functools.partial``, a bound
    method, a callable object or module (its ``__call__`` is converted), a
    ``staticmethod`` / ``classmethod`` (``cls`` is a static argument).

    Use as ``@autolax.jit`` or ``@autolax.jit(static_argnums=..., strict=True, ...)``. Every
    keyword except ``strict`` and ``max_steps`` (see ``convert``) is passed to ``jax.jit`` (``static_argnums``,
    ``static_argnames``, ``donate_argnums``, ``in_shardings``, ``out_shardings``,
    ``device``, ...). The result (a ``Jitted``) behaves as the ``jax.jit`` object: it caches
    compilations and has ``.lower``, ``.trace``, ``.eval_shape``; a check that fails when
    the program runs raises the error Python would raise (``UnboundLocalError``, the user's
    own exception).

    Example::

        @autolax.jit
        def collatz_steps(n):
            steps = 0
            while n != 1:
                n = n // 2 if n % 2 == 0 else 3 * n + 1
                steps += 1
            return steps

        collatz_steps(27)   # 111, compiled once; the loop is a lax.while_loop
    """
    options = dict(jit_kwargs)
    if static_argnums is not None:
        options["static_argnums"] = static_argnums
    if static_argnames is not None:
        options["static_argnames"] = static_argnames
    if donate_argnums is not None:
        options["donate_argnums"] = donate_argnums
    if fn is None:
        return functools.partial(jit, strict=strict, max_steps=max_steps, **options)
    if isinstance(fn, (staticmethod, classmethod)):
        return callables.jit_method_descriptor(fn, functools.partial(jit, strict=strict, max_steps=max_steps), options)
    if isinstance(fn, types.FunctionType) and not is_library_callable(fn):
        converted = convert(fn, strict=strict, max_steps=max_steps)
    else:
        converted = callables.convert_callable(fn, functools.partial(convert, strict=strict, max_steps=max_steps), "jit")
    info = JitInfo(fn, options.get("static_argnums"), options.get("static_argnames"), strict, max_steps)
    own = _jitted_function(converted, options)
    checked_options = dict(options)
    if "out_shardings" in options:  # the checks' code: where JAX puts it (a scalar: everywhere)
        checked_options["out_shardings"] = (options["out_shardings"], None)
    forward = _in_forward_mode(converted)
    return Jitted(
        jax.jit(own, **options), info, converted,
        checked=functools.cache(lambda one: jax.jit(_checked_function(own, one), **checked_options)),
        forward=functools.cache(lambda one: jax.jit(_checked_function(forward, one), **checked_options)),
        spread=any(key in options for key in ("in_shardings", "out_shardings")),
    )


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


def _in_forward_mode(converted):
    """``converted`` with its bounded loops traced as plain ``while_loop``s
    (``checkpointed.forward_mode``)."""
    own = callables.own_callable(converted, _own_function)

    @functools.wraps(own)
    def forward(*args, **kwargs):
        with _checkpointed.forward_mode():
            return own(*args, **kwargs)

    return forward


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
        jitted._learn(staged.callbacks > 0, _lists.holds_appended(out))
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


def _jitted_function(converted, options):
    """The function ``jax.jit`` is given: ``_traced_entry`` of a new function object running
    ``converted`` (``_own_function``). Where ``converted`` is a function's cached conversion and the
    options are hashable, the newest one per set of ``jax.jit`` options is also kept on
    ``converted``.

    So JAX's caches for it (traces, the compiled program) live as long as the user's
    function, as they do for ``jax.jit(fn)``, and not only as long as the wrapper: a
    wrapper made and called in one expression (``autolax.jit(f)(x)``) would otherwise free
    its compiled program within the call (about a millisecond of the first call;
    ``jax.jit(f)(x)`` frees it later, with ``f``). Each wrapper still has its own function
    object (see ``_own_function``); one kept is replaced by the next wrapper's."""
    own = _traced_entry(callables.own_callable(converted, _own_function))
    if not isinstance(converted, types.FunctionType) or _cached_conversion(_original(converted)) is not converted:
        return own
    key = tuple(sorted(options.items()))
    try:
        hash(key)
    except TypeError:
        return own
    with _lock:
        converted.__dict__.setdefault(_OWN, {})[key] = own
    return own


def filter_jit(fn=None, *, donate: str = "none", strict: bool = False, max_steps: int | None = None):
    """``autolax.jit`` with Equinox's ``filter_jit`` semantics: the array leaves of the
    arguments -- and of ``fn`` itself, when it is a module -- are traced, every other leaf
    (Python numbers, strings, functions, a module's non-array fields) is static (hashed,
    part of the compilation's cache key). Non-array outputs are returned as they are.

    For Equinox modules and other pytrees holding arrays next to Python values; works
    without Equinox. ``donate``: ``"none"`` (default) or ``"all"`` (donate every array
    argument's buffer). ``strict`` and ``max_steps`` as for ``autolax.jit``. Example::

        class Solver(eqx.Module):
            tol: float
            w: jax.Array

            def __call__(self, x):
                while jnp.abs(x).max() > self.tol:
                    x = self.w * x
                return x

        solve = autolax.filter_jit(Solver(1e-3, w))   # w traced, tol static
        solve(x)

    ``autolax.trace_check`` takes the result (and traces with the same filtering).
    """
    if fn is None:
        return functools.partial(filter_jit, donate=donate, strict=strict, max_steps=max_steps)
    if isinstance(fn, types.FunctionType) and not is_library_callable(fn):
        converted = convert(fn, strict=strict, max_steps=max_steps)
    else:
        converted = callables.convert_callable(fn, functools.partial(convert, strict=strict, max_steps=max_steps),
                                               "filter_jit")
    info = JitInfo(fn, None, None, strict, max_steps, filtered=True)
    return Jitted(filtering.FilterJit(callables.own_callable(converted, _own_function), donate), info)


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


def to_source(fn) -> str:
    """The converted source of ``fn`` (a function, a converted function or an
    ``autolax.jit`` object), as autolax runs it."""
    source = getattr(fn, "__autolax_source__", None)
    if isinstance(source, pipeline.SourceText):
        return source.text
    original = _original(fn)
    if not isinstance(original, types.FunctionType) or is_library_callable(original):
        original = callables.user_function(original, "to_source")
        source = getattr(original, "__autolax_source__", None)
        if isinstance(source, pipeline.SourceText):
            return source.text
    try:
        source, _ = _converted_code(original)
    except SourceUnavailable as exc:
        raise ConversionError(f"cannot read the source of '{original.__qualname__}': {exc}") from None
    return source.text
