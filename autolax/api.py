"""Public entry points: ``jit``, ``filter_jit``, ``convert``, ``to_source``, ``do_not_convert``.

Conversion is cached per code object (one conversion per function body) and per function
object (one converted function per function), without keeping either alive: a redefined
function (a notebook cell run again) frees the old conversion with the old function.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import threading
import types
import warnings
import weakref

import jax

from autolax import callables, filtering
from autolax.frontend import pipeline
from autolax.frontend.transpile.source import SourceChanged, SourceUnavailable
from autolax.jitted import (  # noqa: E402 - what the API builds on
    _OWN,
    JitInfo,
    Jitted,
    _checked_function,
    _traced_entry,
    jit_info,
)
from autolax.runtime import compat, libraries
from autolax.runtime import ops as _ops
from autolax.runtime.errors import (
    CallConversionWarning,
    ConversionError,
    NoSourceWarning,
    SourceChangedError,
)
from autolax.runtime.libraries import is_library_callable
from autolax.runtime.ops import calls as _calls
from autolax.runtime.ops import checkpointed as _checkpointed
from autolax.runtime.ops import report
from autolax.runtime.ops.lines import converted_nested

_lock = threading.RLock()


class _CodeCache:
    """code object -> (converted source text, compiled inner code, its ``ctx.wrapper``), held
    weakly by the key.

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
                hit = (converted.lazy_source(), pipeline.compile_converted(fn, converted), converted.ctx.wrapper)
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
        source, inner, wrapper = _converted_code(fn)
        new = pipeline.make_function(fn, inner, _ops)
        new.__dict__.pop(_CONVERSION, None)  # (copied from ``fn``: before the wrapper copies it too)
        if wrapper is not None:  # what the def's ``@ops.function`` does (``passes.runtime_checks``)
            new = _ops.function(new, checks=wrapper == "checks")
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
    if isinstance(fn, types.FunctionType) and (_CONVERTED_NESTED.get(fn.__code__) or converted_nested(fn.__code__)):
        return fn
    if not isinstance(fn, types.FunctionType) or is_library_callable(fn):
        return callables.convert_callable(
            fn, functools.partial(convert, recursive=recursive, strict=strict, max_steps=max_steps), "convert"
        )
    converted = _convert_or_warn(fn, strict)
    if converted is None:
        return fn
    if strict or not recursive or max_steps is not None:
        return _with_options(fn, converted, strict=strict, recursive=recursive, max_steps=max_steps)
    return converted


def _convert_or_warn(fn, strict: bool):
    """``convert``'s conversion of a user's function; None (with a ``NoSourceWarning`` for
    ``convert``'s caller) where its source cannot be read and ``strict`` is off."""
    try:
        return _convert_function(fn)
    except SourceChanged as exc:
        raise SourceChangedError(
            str(exc), fix="re-import the module (or run the cell again), so the function matches its file"
        ) from None
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
            stacklevel=4,  # two frames above convert, as when convert itself warned (stacklevel=3)
        )
        return None


def convert_callee(fn):
    """Conversion of a function called from converted code; on failure, ``fn`` itself
    (with a ``CallConversionWarning`` the first time)."""
    hit = _cached_conversion(fn)
    if hit is not None:
        return hit
    if _CONVERTED_NESTED.get(fn.__code__) or converted_nested(fn.__code__):
        return fn
    if _calls.written_by_autolax(fn):
        # A function of a file `autolax convert` wrote, called from another one through
        # `ops.call_writing` (a helper that writes into its argument): converted already.
        _CONVERTED_NESTED.put(fn.__code__, True)
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
# The runtime hides its own folder's frames from JAX's source locations and from the
# tracebacks of autolax's errors; the front end's and the API's are autolax's too.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
compat.hide_from_source_info(_PACKAGE_DIR + os.sep)
report.hide_frames_under(_PACKAGE_DIR)


def _forget_conversions():
    global _generation
    with _lock:
        _CODE_CACHE.clear()
        _FAILED_CALLEES.clear()
        _generation += 1


def convert_package(name: str) -> None:
    """Treats the installed package ``name`` (top-level name, e.g. ``"mypkg"``) as your own
    code: its functions called from converted code are converted, though it lives in
    site-packages. For a package of your own installed with ``pip install`` (an editable
    install outside site-packages needs nothing). Also set by the environment variable
    ``AUTOLAX_CONVERT_PACKAGES=mypkg,otherpkg``. Functions converted before the call are
    converted again when next converted (``autolax.jit`` objects made before keep their
    conversion). Packages autolax knows as libraries
    (``jax``, ``numpy``, ``equinox``, ...) cannot be named.

    Raises:
      ValueError: ``name`` is not a top-level package name, or is a known library.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"autolax.convert_package expects a top-level package name such as 'mypkg', got {name!r}")
    if name in libraries.LIBRARY_PACKAGES:
        raise ValueError(f"'{name}' is library code, which autolax never converts")
    if libraries.add_user_package(name):
        _forget_conversions()  # conversions made before decided otherwise


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


def _in_forward_mode(converted):
    """``converted`` with its bounded loops traced as plain ``while_loop``s
    (``checkpointed.forward_mode``)."""
    own = callables.own_callable(converted, _own_function)

    @functools.wraps(own)
    def forward(*args, **kwargs):
        with _checkpointed.forward_mode():
            return own(*args, **kwargs)

    return forward


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


def jit(
    fn=None,
    *,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    strict: bool = False,
    max_steps: int | None = None,
    **jit_kwargs,
):
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
    for key, value in (
        ("static_argnums", static_argnums),
        ("static_argnames", static_argnames),
        ("donate_argnums", donate_argnums),
    ):
        if value is not None:
            options[key] = value
    if fn is None:
        return functools.partial(jit, strict=strict, max_steps=max_steps, **options)
    if isinstance(fn, (staticmethod, classmethod)):
        return callables.jit_method_descriptor(fn, functools.partial(jit, strict=strict, max_steps=max_steps), options)
    if isinstance(fn, types.FunctionType) and not is_library_callable(fn):
        converted = convert(fn, strict=strict, max_steps=max_steps)
    else:
        converted = callables.convert_callable(
            fn, functools.partial(convert, strict=strict, max_steps=max_steps), "jit"
        )
    info = JitInfo(fn, options.get("static_argnums"), options.get("static_argnames"), strict, max_steps)
    return _jitted(converted, info, options)


def _jitted(converted, info: JitInfo, options: dict) -> Jitted:
    """The ``Jitted`` object of ``converted``: its ``jax.jit`` and, built on demand, the
    ``jax.jit`` of the same function returning its run-time checks too (and in forward mode)."""
    own = _jitted_function(converted, options)
    checked_options = dict(options)
    if "out_shardings" in options:  # the checks' code: where JAX puts it (a scalar: everywhere)
        checked_options["out_shardings"] = (options["out_shardings"], None)
    forward = _in_forward_mode(converted)
    return Jitted(
        jax.jit(own, **options),
        info,
        converted,
        checked=functools.cache(lambda one: jax.jit(_checked_function(own, one), **checked_options)),
        forward=functools.cache(lambda one: jax.jit(_checked_function(forward, one), **checked_options)),
        spread=any(key in options for key in ("in_shardings", "out_shardings")),
    )


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
        converted = callables.convert_callable(
            fn, functools.partial(convert, strict=strict, max_steps=max_steps), "filter_jit"
        )
    info = JitInfo(fn, None, None, strict, max_steps, filtered=True)
    return Jitted(filtering.FilterJit(callables.own_callable(converted, _own_function), donate), info)


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
        source = _converted_code(original)[0]
    except SourceUnavailable as exc:
        raise ConversionError(f"cannot read the source of '{original.__qualname__}': {exc}") from None
    return source.text
