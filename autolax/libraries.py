"""Which callables are library code, never converted: decided by where their code lives.

Shared by the front end (a call whose callee is known at conversion time) and the runtime
(``ops.call``). Nothing here imports or runs user code.
"""

from __future__ import annotations

import functools
import os
import site
import sysconfig
import types

# Packages whose functions are never converted wherever they are installed: a development
# (editable) install of one of them lives outside site-packages. Everything else is decided
# by location: the standard library and site-packages are library code.
LIBRARY_PACKAGES = frozenset(
    {
        "autolax", "jax", "jaxlib", "numpy", "scipy", "optax", "flax", "equinox", "haiku", "chex",
        "pandas", "torch", "tensorflow", "sklearn", "matplotlib", "IPython", "ipykernel", "pytest",
        "_pytest", "builtins",
    }
)


def _library_dirs() -> tuple:
    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        paths |= set(site.getsitepackages())
    except AttributeError:  # some embedded interpreters
        pass
    user = getattr(site, "USER_SITE", None)
    if user:
        paths.add(user)
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_LIBRARY_DIRS = _library_dirs()


@functools.lru_cache(maxsize=4096)
def _path_is_library(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_LIBRARY_DIRS)


def module_is_library(module_name: str | None, filename: str | None) -> bool:
    """Is code of this module (and file) library code?"""
    if module_name and module_name.split(".")[0] in LIBRARY_PACKAGES:
        return True
    return bool(filename) and _path_is_library(filename)


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
        return module_is_library(value.__module__, value.__code__.co_filename)
    if callable(value):
        call = getattr(type(value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return module_is_library(call.__module__, call.__code__.co_filename)
        return True
    return True
