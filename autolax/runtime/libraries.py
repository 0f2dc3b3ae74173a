"""Which callables are library code, never converted: decided by where their code lives.

Shared by the front end (a call whose callee is known at conversion time) and the runtime
(``ops.call``). Nothing here imports or runs user code.
"""

from __future__ import annotations

import builtins
import functools
import logging
import math
import os
import site
import sys
import sysconfig
import time
import types
import warnings

# Packages whose functions are never converted wherever they are installed: a development
# (editable) install of one of them lives outside site-packages. Everything else is decided
# by location: the standard library and site-packages are library code.
LIBRARY_PACKAGES = frozenset(
    {
        "autolax",
        "jax",
        "jaxlib",
        "numpy",
        "scipy",
        "optax",
        "flax",
        "equinox",
        "haiku",
        "chex",
        "pandas",
        "torch",
        "tensorflow",
        "sklearn",
        "matplotlib",
        "IPython",
        "ipykernel",
        "pytest",
        "_pytest",
        "builtins",
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


# Packages installed into site-packages (or the standard library's directory) whose code is
# the user's own, converted like a script's: `autolax.convert_package("mypkg")`, or the
# environment variable AUTOLAX_CONVERT_PACKAGES="mypkg,otherpkg" read when autolax is imported.
_USER_PACKAGES: set = {p.strip() for p in os.environ.get("AUTOLAX_CONVERT_PACKAGES", "").split(",") if p.strip()}


def add_user_package(name: str) -> bool:
    """Counts the top-level package ``name`` as the user's own code from now on
    (``autolax.convert_package``); whether it was not already."""
    if name in _USER_PACKAGES:
        return False
    _USER_PACKAGES.add(name)
    return True


def module_is_library(module_name: str | None, filename: str | None) -> bool:
    """Is code of this module (and file) library code?"""
    top = module_name.split(".")[0] if module_name else None
    if top in _USER_PACKAGES or (module_name or "").startswith("autolax.examples"):  # the demo's programs
        return False
    if top in LIBRARY_PACKAGES or top in sys.stdlib_module_names:  # frozen modules have no file
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
    if is_bound_method(value):
        return is_library_callable(value.__func__)
    if callable(value):
        call = getattr(type(value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return module_is_library(call.__module__, call.__code__.co_filename)
        return True
    return True


def is_bound_method(value) -> bool:
    """A method bound to an object by a library, not a ``types.MethodType``: Equinox's
    ``model.method`` (a pytree holding ``__func__`` and ``__self__``)."""
    return (
        not isinstance(value, types.MethodType)
        and isinstance(getattr(value, "__func__", None), types.FunctionType)
        and hasattr(value, "__self__")
    )


# Output that is not `print`: logging's module functions and logger methods, `warnings.warn`,
# and writes to `sys.stdout` / `sys.stderr`. Run while a body is staged, such a call would
# happen once, while tracing (also for a branch never taken), not when the program runs.
_LOGGING_FUNCTIONS = {
    id(getattr(logging, name)): f"logging.{name}"
    for name in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
    if hasattr(logging, name)
}
_WARNING_FUNCTIONS = {id(warnings.warn): "warnings.warn", id(warnings.warn_explicit): "warnings.warn_explicit"}
_LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
_STREAM_METHODS = frozenset({"write", "writelines"})


# The same by dotted path, for ``autolax convert`` (which imports nothing: it knows library
# callees by the path the file imports them under).
HOST_OUTPUT_PATHS = frozenset(
    [*_LOGGING_FUNCTIONS.values(), *_WARNING_FUNCTIONS.values()]
    + [f"sys.{stream}.{method}" for stream in ("stdout", "stderr") for method in _STREAM_METHODS]
)


def host_output(f) -> str | None:
    """How to name ``f`` if calling it writes output that autolax does not stage (``print``
    is staged): ``logging.warning``, a ``logging.Logger`` (or ``LoggerAdapter``) method
    ``warning`` / ``info`` / ..., ``warnings.warn``, ``sys.stdout.write`` (the stream
    ``sys.stdout`` / ``sys.stderr`` is when called); None for any other callable."""
    name = _LOGGING_FUNCTIONS.get(id(f)) or _WARNING_FUNCTIONS.get(id(f))
    if name is not None:
        return name
    if not isinstance(f, types.MethodType) and not isinstance(f, types.BuiltinMethodType):
        return None
    owner, method = getattr(f, "__self__", None), getattr(f, "__name__", None)
    if isinstance(owner, (logging.Logger, logging.LoggerAdapter)) and method in _LOGGER_METHODS:
        return f"the `{method}` method of {type(owner).__name__} {getattr(owner, 'name', '')!r}"
    if method in _STREAM_METHODS and owner is not None:
        for stream in ("stdout", "stderr"):
            if owner is getattr(sys, stream, None):
                return f"sys.{stream}.{method}"
    return None


# The functions of the standard `math` module that `ops.math_call` computes with `jnp` for a
# traced argument (`math.sqrt(x)`), by dotted path and by identity: the front end sends their
# calls there (`autolax convert` knows them by the path the file imports them under).
MATH_PATHS = frozenset(
    f"math.{name}"
    for name in (
        "sqrt",
        "exp",
        "log",
        "log10",
        "log2",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "atan2",
        "fabs",
        "floor",
        "ceil",
        "trunc",
    )
)
MATH_FUNCTIONS = frozenset(id(getattr(math, path[len("math.") :])) for path in MATH_PATHS)


def is_math_function(value) -> bool:
    """Is ``value`` one of ``MATH_PATHS``: the function, or (``autolax convert``) the stand-in
    for its dotted path (a module object named ``math.sqrt``)?"""
    if isinstance(value, types.ModuleType):
        return getattr(value, "__name__", None) in MATH_PATHS
    return id(value) in MATH_FUNCTIONS


# Calls that read or write outside the program -- the terminal (`input`), files (`open`,
# `os.remove`, `os.path.exists`, `shutil`), other processes (`subprocess`), the clock
# (`time.sleep`, `time.time`), the environment (`os.getenv`): run while a body is staged,
# such a call would happen once, while tracing -- also for a branch the program never takes
# (`input()` waits for Return) -- not when the program runs (issue 43 item 14).
_IO_TIME = (
    "sleep",
    "time",
    "time_ns",
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "process_time",
    "process_time_ns",
)
_IO_MODULES = ("os", "posix", "nt", "shutil", "subprocess", "socket", "urllib", "http", "io", "glob", "pathlib")
_PURE_OS = frozenset({"fspath", "fsencode", "fsdecode", "get_terminal_size"})
_OS_PATH_FILESYSTEM = frozenset(
    {
        "exists",
        "lexists",
        "isfile",
        "isdir",
        "islink",
        "ismount",
        "getsize",
        "getmtime",
        "getatime",
        "getctime",
        "realpath",
        "samefile",
        "expanduser",
        "expandvars",
        "abspath",
    }
)
_OS_PATH_MODULES = ("posixpath", "ntpath", "genericpath", "os.path")


def host_io(f) -> str | None:
    """How to name ``f`` if calling it reads or writes outside the program (``input``,
    ``open``, ``time.sleep``, a function of ``os`` / ``shutil`` / ``subprocess``, a
    filesystem query of ``os.path``); None for any other callable (``os.path.join`` is pure)."""
    # By identity with what the names hold now (a test or a debugger may have replaced them).
    for name in ("input", "open"):
        if f is getattr(builtins, name, None):
            return name
    for name in _IO_TIME:
        if f is getattr(time, name, None):
            return f"time.{name}"
    if not callable(f) or isinstance(f, type):
        return None
    module, qualname = getattr(f, "__module__", None), getattr(f, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module in _OS_PATH_MODULES:
        return f"os.path.{qualname}" if qualname in _OS_PATH_FILESYSTEM else None
    if module.split(".")[0] in _IO_MODULES and qualname not in _PURE_OS:
        if module in ("posix", "nt"):
            module = "os"
        return f"{module}.{qualname}"
    return None


def is_host_io_path(path: str) -> bool:
    """``host_io`` by dotted path (``autolax convert``, which imports nothing):
    ``time.sleep``, ``os.remove``, ``os.path.exists``, ``shutil.copy``, ..."""
    parts = path.split(".")
    if path in ("builtins.input", "builtins.open", "io.open") or (
        parts[0] == "time" and len(parts) == 2 and parts[1] in _IO_TIME
    ):
        return True
    if parts[:2] == ["os", "path"] or parts[0] in _OS_PATH_MODULES:
        return len(parts) >= 2 and parts[-1] in _OS_PATH_FILESYSTEM
    return len(parts) >= 2 and parts[0] in _IO_MODULES and parts[-1] not in _PURE_OS and parts[0] != "io"
