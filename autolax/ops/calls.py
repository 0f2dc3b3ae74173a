"""Calls from converted code: user functions are converted on first call; ``print``."""

from __future__ import annotations

import builtins
import functools
import os
import sys
import sysconfig
import types

import jax

from autolax.ops import registry
from autolax.ops.state import Undefined, any_tracer, key_order, restore_order

# Packages whose functions are never converted, whatever their install location.
LIBRARY_PACKAGES = frozenset(
    {
        "autolax", "jax", "jaxlib", "numpy", "scipy", "optax", "flax", "equinox", "haiku", "chex",
        "pandas", "torch", "tensorflow", "sklearn", "matplotlib", "IPython", "ipykernel", "pytest",
        "_pytest", "builtins", "typing", "functools", "operator", "math", "cmath",
    }
)

_LIBRARY_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if p
)


def _module_is_library(module_name: str | None, filename: str | None) -> bool:
    if module_name and module_name.split(".")[0] in LIBRARY_PACKAGES:
        return True
    if filename:
        path = os.path.realpath(filename)
        if any(path.startswith(d) for d in _LIBRARY_DIRS):
            return True
    return False


def is_library_callable(value) -> bool:
    """True for callables autolax never converts: builtins, classes, modules, jitted
    functions, and functions of JAX, NumPy, the standard library or installed packages."""
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType, types.ModuleType, type)):
        return True
    if getattr(value, "__autolax_do_not_convert__", False) or getattr(value, "__autolax_converted__", False):
        return True
    if isinstance(value, functools.partial):
        return is_library_callable(value.func)
    if isinstance(value, types.MethodType):
        return is_library_callable(value.__func__)
    if isinstance(value, types.FunctionType):
        return _module_is_library(value.__module__, value.__code__.co_filename)
    if callable(value):
        call = getattr(type(value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return _module_is_library(call.__module__, call.__code__.co_filename)
        return True
    return True


def converted(f):
    """The converted version of a callable reached from converted code (or ``f`` itself)."""
    if is_library_callable(f):
        return f
    from autolax import api

    if isinstance(f, types.MethodType):
        fn = converted(f.__func__)
        return f if fn is f.__func__ else types.MethodType(fn, f.__self__)
    if isinstance(f, functools.partial):
        fn = converted(f.func)
        return f if fn is f.func else functools.partial(fn, *f.args, **f.keywords)
    if isinstance(f, types.FunctionType):
        return api.convert_callee(f)
    call = type(f).__call__
    fn = converted(call)
    return f if fn is call else types.MethodType(fn, f)


@registry.user_facing
def call(f, *args, **kwargs):
    """``ops.call(f, *args)`` for ``f(*args)``: converts ``f`` first if it is user code
    (cached per function), then calls it."""
    __tracebackhide__ = True
    if isinstance(f, Undefined):
        f()
    if not registry.converts_calls():
        return f(*args, **kwargs)
    return converted(f)(*args, **kwargs)


def print(*args, sep=" ", end="\n", file=None, flush=False):  # noqa: A001 - replaces builtins.print
    """``print`` that shows runtime values of traced arguments (via ``jax.debug.callback``),
    once per executed iteration or branch, like the original Python. Inside a staged
    branch or loop body every ``print`` is staged, static arguments too (printing while
    tracing would print once, or for a branch that never runs)."""
    __tracebackhide__ = True
    if not any_tracer(args) and not registry.in_staged_body():
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
        return
    leaves, treedef = jax.tree_util.tree_flatten(args)
    order = key_order(args)  # the flattening sorts dict keys; print shows insertion order
    dynamic = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, jax.core.Tracer))]

    def show(*values):
        out = list(leaves)
        for i, v in zip(dynamic, values):
            out[i] = v
        builtins.print(*restore_order(jax.tree_util.tree_unflatten(treedef, out), order), sep=sep, end=end, file=file or sys.stdout, flush=flush)

    jax.debug.callback(show, *[leaves[i] for i in dynamic], ordered=True)
