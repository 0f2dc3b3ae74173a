"""Public entry points: ``jit``, ``convert``, ``to_source``, ``do_not_convert``."""

from __future__ import annotations

import contextlib
import functools
import threading
import types
import warnings
import weakref

import jax

from autolax import ops as _ops
from autolax.errors import CallConversionWarning, ConversionError, NoSourceWarning
from autolax.ops import registry
from autolax.transpile import pipeline
from autolax.transpile.source import SourceUnavailable

_lock = threading.RLock()
# code object -> (Converted, compiled inner code); one conversion per function body.
_CODE_CACHE: dict = {}
# function object -> converted function
_FN_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# autolax.jit object -> (original function, static_argnums, static_argnames)
_JIT_INFO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FAILED_CALLEES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def do_not_convert(fn):
    """Marks ``fn`` so autolax never converts it (as a decorator or when called from
    converted code); it runs exactly as written."""
    fn.__autolax_do_not_convert__ = True
    return fn


def _original(fn):
    """The user's function behind a converted function or an ``autolax.jit`` object."""
    fn = getattr(fn, "__autolax_jit__", fn)  # autolax.interrupt.Interruptible (%%autolax)
    info = _JIT_INFO.get(fn) if _weakrefable(fn) else None
    if info is not None:
        return info[0]
    return getattr(fn, "__autolax_original__", fn)


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


def _converted_code(fn):
    """Converts and compiles ``fn``'s body once per code object."""
    code = fn.__code__
    key = (code, code.co_filename)  # equal code objects from different files must not share
    with _lock:
        hit = _CODE_CACHE.get(key)
        if hit is not None:
            return hit
        converted = pipeline.convert_function(fn)
        inner = pipeline.compile_converted(fn, converted)
        for nested in pipeline.code_objects(inner):
            construct = converted.ctx.constructs.get(nested.co_name)
            if construct is not None:
                registry.register(nested, construct)
        _CODE_CACHE[key] = (converted, inner)
        return converted, inner


def _convert_function(fn):
    with _lock:
        hit = _FN_CACHE.get(fn)
        if hit is not None:
            return hit
        converted, inner = _converted_code(fn)
        new = pipeline.make_function(fn, converted, inner, _ops)
        new.__autolax_converted__ = True
        new.__autolax_original__ = fn
        _FN_CACHE[fn] = new
        return new


def _with_options(fn, converted, *, strict: bool, recursive: bool):
    """``converted`` run with non-default options (they hold for the whole call, including
    the functions it calls)."""

    @functools.wraps(fn)
    def with_options(*args, **kwargs):
        with contextlib.ExitStack() as options:
            if strict:
                options.enter_context(registry.strict_mode(True))
            if not recursive:
                options.enter_context(registry.calls_converted(False))
            return converted(*args, **kwargs)

    with_options.__autolax_converted__ = True
    with_options.__autolax_original__ = fn
    return with_options


def convert(fn=None, *, recursive: bool = True, strict: bool = False):
    """Returns ``fn`` with its Python control flow rewritten to decide at trace time.

    The result is a plain Python function with the same signature, globals, closure and
    defaults. Run eagerly on concrete values it behaves exactly like ``fn``; under
    ``jax.jit``, ``grad``, ``vmap`` and other transforms, statements whose conditions,
    bounds or carried values are traced become ``lax.cond`` / ``while_loop`` / ``scan`` /
    ``fori_loop``. User functions it calls are converted too (once per function).

    Args:
      fn: the function (also usable as ``@autolax.convert`` or ``@autolax.convert(...)``).
      recursive: convert the user functions ``fn`` calls (on their first call). With
        ``False`` they run as written (their own ``if``/loops then behave as under plain
        ``jax.jit``). Library functions are never converted.
      strict: raise ``UnrolledLoopError`` instead of warning when a loop carrying traced
        values has to run as a Python loop; raise ``ConversionError`` if the source of
        ``fn`` is unavailable.

    Raises:
      ConversionError: ``fn`` uses syntax that cannot be staged (see its message).
    """
    if fn is None:
        return functools.partial(convert, recursive=recursive, strict=strict)
    if getattr(fn, "__autolax_converted__", False) or getattr(fn, "__autolax_do_not_convert__", False):
        return fn
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"autolax.convert expects a Python function, got {type(fn).__name__}: {fn!r}")
    try:
        converted = _convert_function(fn)
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
    if strict or not recursive:
        return _with_options(fn, converted, strict=strict, recursive=recursive)
    return converted


def convert_callee(fn):
    """Conversion of a function called from converted code; on failure, ``fn`` itself
    (with a ``CallConversionWarning`` the first time)."""
    hit = _FN_CACHE.get(fn)
    if hit is not None:
        return hit
    if fn in _FAILED_CALLEES:
        return fn
    try:
        return _convert_function(fn)
    except (SourceUnavailable, ConversionError) as exc:
        _FAILED_CALLEES[fn] = True
        if isinstance(exc, ConversionError) or registry.is_strict():
            warnings.warn(
                f"autolax could not convert '{fn.__qualname__}', called from converted code; it runs "
                f"as written:\n{exc}",
                CallConversionWarning,
                stacklevel=4,
            )
        return fn


def jit(fn=None, *, static_argnums=None, static_argnames=None, donate_argnums=None, strict: bool = False, **jit_kwargs):
    """``jax.jit`` of ``autolax.convert(fn)``.

    Use as ``@autolax.jit`` or ``@autolax.jit(static_argnums=..., strict=True, ...)``. Every
    keyword except ``strict`` is passed to ``jax.jit`` (``static_argnums``,
    ``static_argnames``, ``donate_argnums``, ``in_shardings``, ``out_shardings``,
    ``device``, ...). The result is the ``jax.jit`` object itself: it caches compilations
    and has ``.lower``, ``.trace``, ``.eval_shape``.

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
        return functools.partial(jit, strict=strict, **options)
    converted = convert(fn, strict=strict)
    jitted = jax.jit(converted, **options)
    if _weakrefable(jitted):
        _JIT_INFO[jitted] = (fn, options.get("static_argnums"), options.get("static_argnames"), strict)
    return jitted


def jit_info(fn):
    """(original function, static_argnums, static_argnames, strict) of an autolax.jit object."""
    fn = getattr(fn, "__autolax_jit__", fn)  # autolax.interrupt.Interruptible (%%autolax)
    return _JIT_INFO.get(fn) if _weakrefable(fn) else None


def to_source(fn) -> str:
    """The converted source of ``fn`` (a function, a converted function or an
    ``autolax.jit`` object), as autolax runs it."""
    original = _original(fn)
    if not isinstance(original, types.FunctionType):
        raise TypeError(f"autolax.to_source expects a Python function, got {type(fn).__name__}")
    try:
        converted, _ = _converted_code(original)
    except SourceUnavailable as exc:
        raise ConversionError(f"cannot read the source of '{original.__qualname__}': {exc}") from None
    return converted.source()
