"""Every kind of callable ``jax.jit`` takes, as an entry point of ``autolax.convert``,
``jit``, ``to_source`` and ``trace_check``.

A Python function is converted by ``autolax.api``; anything else is taken apart into the
function(s) it holds, each converted, and put together again the same way:

=====================================  ==================================================
``functools.partial(f, a)``            ``functools.partial(convert(f), a)`` (same class:
                                       a ``jax.tree_util.Partial`` stays one)
bound method ``obj.f``                 ``types.MethodType(convert(f), obj)``
a library's bound method (Equinox)     ``jax.tree_util.Partial(convert(f), obj)``
callable object, module                ``jax.tree_util.Partial(convert(type(obj).__call__),
                                       obj)``: a pytree with the object's leaves, so
                                       ``eqx.filter_jit`` still sees its arrays; the
                                       methods ``__call__`` calls on ``self`` are converted
                                       when called
``staticmethod(f)``, ``classmethod(f)``  the same descriptor of ``convert(f)``
``jax.custom_jvp(f)`` / ``custom_vjp``   made again from the converted function and rules
a Flax Linen method (Flax's wrapper)   Flax's wrapper around ``convert(user's method)``
``linen_module.apply`` / ``.init``     runs ``convert(the method it is given)``
library code (``jnp.sin``)             itself: library code is never converted
a library's wrapper of your function   ``ConversionError`` with the rewrite
(``jax.vmap(f)``, ``jax.jit(f)``)      (``jax.vmap(autolax.convert(f))``)
=====================================  ==================================================
"""

from __future__ import annotations

import functools
import types

import jax

from autolax.runtime import errors, transforms
from autolax.runtime.libraries import is_bound_method, is_library_callable


def _is_user(fn) -> bool:
    return not is_library_callable(fn)


def convert_callable(fn, convert, api: str):
    """``fn`` (not a plain function) with the user functions it holds converted by
    ``convert``; see the module docstring."""
    if isinstance(fn, staticmethod):
        return staticmethod(convert(fn.__func__))
    if isinstance(fn, classmethod):
        return classmethod(convert(fn.__func__))
    rebuilt = transforms.rebuild(fn, convert, _is_user)
    if rebuilt is not None:
        return rebuilt
    if isinstance(fn, functools.partial):
        return type(fn)(convert(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if is_bound_method(fn):
        return jax.tree_util.Partial(convert(fn.__func__), fn.__self__)
    if not callable(fn):
        raise _error("not-callable", api=api, kind=type(fn).__name__, value=_short(fn))
    if is_library_callable(fn):
        _refuse_library_wrapper(fn, api)
        return fn
    call = type(fn).__call__
    return jax.tree_util.Partial(convert(call), fn)


def user_function(fn, api: str) -> types.FunctionType:
    """The user's own function inside ``fn`` (what ``to_source`` shows)."""
    if not callable(fn):
        raise _error("not-callable", api=api, kind=type(fn).__name__, value=_short(fn))
    inner = fn
    for _ in range(16):
        if isinstance(inner, types.FunctionType) and _is_user(inner):
            return inner
        module = transforms.linen_entry_module(inner)
        if module is not None:  # `module.apply`: the method it runs by default
            inner = transforms.linen_method(module, None)
            continue
        if (
            isinstance(inner, (staticmethod, classmethod))
            or isinstance(inner, types.MethodType)
            or is_bound_method(inner)
        ):
            inner = inner.__func__
        elif isinstance(inner, functools.partial):
            inner = inner.func
        elif isinstance(inner, (jax.custom_jvp, jax.custom_vjp)):
            inner = inner.fun
        elif getattr(inner, "__autolax_converted__", False):
            original = getattr(inner, "__autolax_original__", None)
            inner = original() if original is not None else None
        elif is_library_callable(inner):
            wrapped = _wrapped_user_function(inner, is_library_callable)
            if wrapped is None:
                raise _error("no-user-function", api=api, value=_short(fn), why="it is library code")
            if not transforms.is_rebuilt(inner, _is_user):
                _refuse_library_wrapper(inner, api)
            inner = wrapped
        elif callable(inner):
            inner = type(inner).__call__
        else:
            break
    raise _error("not-callable", api=api, kind=type(fn).__name__, value=_short(fn))


def _refuse_library_wrapper(fn, api: str) -> None:
    """Raises the ``transformed-function`` error if ``fn`` is a library's wrapper of a user
    function that is not converted (``jax.vmap(f)``); a wrapper of a converted function
    (``jax.vmap(autolax.convert(f))``) is library code like any other."""
    inner = _wrapped_user_function(fn, is_library_callable)
    if inner is None:
        return
    name = getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or repr(inner)
    short = getattr(inner, "__name__", name)
    if transforms.is_jit_object(fn):
        rewrite = (
            f"autolax.jit({short}, ...) in place of jax.jit({short}, ...) (it takes the same options), "
            f"or jax.jit(autolax.convert({short}))"
        )
        what = f"jax.jit({short})"
    else:
        rewrite = (
            f"jax.vmap(autolax.convert({short})) in place of jax.vmap({short}) -- the same for jax.grad, "
            f"jax.jacobian, jax.checkpoint and other transforms -- then autolax.jit or jax.jit of that"
        )
        what = f"The callable given to autolax.{api}"
    raise _error("transformed-function", name=what, inner=name, rewrite=rewrite)


def own_callable(converted, own_function):
    """A callable running ``converted`` whose function object is new (``own_function``): two
    ``autolax.jit`` wrappers of one function must not share ``jax.jit``'s trace cache."""
    if isinstance(converted, types.FunctionType):
        return own_function(converted)
    if isinstance(converted, functools.partial) and isinstance(converted.func, types.FunctionType):
        return type(converted)(own_function(converted.func), *converted.args, **converted.keywords)
    if isinstance(converted, types.MethodType) and isinstance(converted.__func__, types.FunctionType):
        return types.MethodType(own_function(converted.__func__), converted.__self__)
    return converted


def jit_method_descriptor(fn, jit, options):
    """``autolax.jit`` of a ``staticmethod`` / ``classmethod`` object: the same descriptor of
    ``autolax.jit`` of its function. A class is not a JAX type, so a classmethod's ``cls``
    (argument 0, counted as a method's ``self`` is) is static."""
    if isinstance(fn, staticmethod):
        return staticmethod(jit(fn.__func__, **options))
    options = dict(options)
    nums = options.get("static_argnums")
    nums = () if nums is None else (nums,) if isinstance(nums, int) else tuple(nums)
    options["static_argnums"] = tuple(sorted({0, *nums}))
    return classmethod(jit(fn.__func__, **options))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# The errors only the API raises, kept with it (the runtime's copy need not hold them);
# worded as the runtime's catalogue (``errors.MESSAGES``) words its own.
_MESSAGES = {
    "transformed-function": errors.Message(
        errors.ConversionError,
        "{name} is a library's wrapper around your function '{inner}' (made by a JAX transform such as "
        "jax.vmap, jax.grad or jax.jit, or by another library): autolax converts your own code, never a "
        "library's, and cannot reach '{inner}' inside the wrapper",
        "convert the function before transforming it: {rewrite}.",
        "#callables-and-libraries",
    ),
    "not-callable": errors.Message(
        TypeError,
        "autolax.{api} expects a function or another callable (a functools.partial, a bound method, a "
        "callable object such as a module), got {kind}: {value}",
        "pass the function itself.",
        "#callables-and-libraries",
    ),
    "no-user-function": errors.Message(
        TypeError,
        "autolax.{api}: {value} holds no Python function of yours to convert ({why})",
        "pass the function itself.",
        "#callables-and-libraries",
    ),
}


def _error(code: str, **fields):
    return errors.from_message(code, _MESSAGES[code], **fields)


def _wrapped_user_function(fn, is_library):
    """The user function a library wrapper was made from (``jax.vmap(step)`` ->
    ``step``), following ``__wrapped__``; None if ``fn`` wraps none."""
    seen = set()
    inner = fn
    while is_library(inner) and id(inner) not in seen:
        if getattr(inner, "__autolax_converted__", False):
            return None  # converted code (``ops.function`` wraps the converted body): none to convert
        seen.add(id(inner))
        inner = getattr(inner, "__wrapped__", None)
        if inner is None or not callable(inner):
            return None
    return inner if inner is not fn else None
