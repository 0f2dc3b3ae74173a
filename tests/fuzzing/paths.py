"""The ways a user runs a converted program, each given the program and a set of static
arguments and returning something to call.

=====================  ==================================================================
``jit``                ``autolax.jit(f, static_argnums=S)``
``jax.jit(convert)``   ``jax.jit(autolax.convert(f), static_argnums=S)``
``eager``              ``autolax.convert(f)`` called without a trace, on NumPy arguments
``eager-jax``          the same on concrete JAX arrays (``x[i] = v`` takes the ``.at`` path)
``cli``                ``autolax convert --all`` output (``convert_source(text, path,
                       Options(all=True))``), written to a file, imported, its ``f`` under
                       ``jax.jit(static_argnums=S)``
``standalone``         ``--standalone`` output (``Options(all=True, standalone=True)``),
                       importing the runtime's copy ``autolax_runtime``, the same way
``magic``              ``%%autolax [--static names]`` run in an IPython shell, its ``f``
``vmap``               ``jax.vmap(autolax.convert(f))`` over all input sets at once
=====================  ==================================================================

A traced path (every path but the eager ones) is either compiled and called (``compile``),
or traced with ``.trace(*args)`` and its jaxpr evaluated by ``interpret.evaluate`` (no XLA
compile). Either way what runs is what the path traced.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import os
import shutil
import sys
import tempfile
import types

import numpy as np

PARAM_NAMES = ("a", "b", "n", "xs", "ys")
ALL_PATHS = ("jit", "jax.jit(convert)", "eager", "eager-jax", "cli", "standalone", "magic", "vmap")
TRACED = {"jit", "jax.jit(convert)", "cli", "standalone", "magic"}
EAGER = {"eager", "eager-jax"}


class Refused(Exception):
    """A path refused the program before any call (wraps the path's own exception)."""

    def __init__(self, exc):
        super().__init__(str(exc))
        self.exc = exc


class Target:
    """What a path gives for one static set: the function to call and the namespace that
    holds the program's globals."""

    def __init__(self, fn, namespace, static=(), traced=True):
        self.fn = fn
        self.namespace = namespace
        self.static = static
        self.traced = traced


class Workspace:
    """A temporary folder of program files, imported as modules (as a user's files are)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="autolax-fuzz-")
        self.modules: list[str] = []
        self.files: list[str] = []

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name + ".py")

    def write(self, name: str, text: str) -> str:
        path = self.path(name)
        with open(path, "w") as fh:
            fh.write(text)
        self.files.append(path)
        return path

    def load(self, name: str, text: str):
        path = self.write(name, text)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        self.modules.append(name)
        spec.loader.exec_module(module)
        return module

    def forget(self):
        """Drops the program's modules and files (between programs)."""
        for name in self.modules:
            sys.modules.pop(name, None)
        for path in self.files:
            linecache.cache.pop(path, None)
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        self.modules, self.files = [], []

    def close(self):
        self.forget()
        shutil.rmtree(self.dir, ignore_errors=True)


class _NumpyAsJnp(types.ModuleType):
    """The oracle's ``jnp``: NumPy (arrays stay mutable, as the programs expect), except
    where NumPy accepts what ``jax.numpy`` refuses and the programs call it so: ``stack``
    of rows appended as Python lists (``jnp.stack([[1.0, 2.0], [3.0, 4.0]])``), which JAX
    refuses with a ``TypeError`` (its items must be arrays or scalars) where NumPy stacks
    them. The user's program run eagerly with JAX is the ground truth."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def stack(arrays, *args, **kwargs):
        if not isinstance(arrays, np.ndarray):
            for pos, item in enumerate(arrays):
                if not (isinstance(item, np.ndarray) or np.isscalar(item)):
                    raise TypeError(f"stack requires ndarray or scalar arguments, got {type(item)} at position {pos}.")
        return np.stack(arrays, *args, **kwargs)


NUMPY_AS_JNP = _NumpyAsJnp("numpy_as_jnp")


def python_source(source: str) -> str:
    """The oracle's text: ``jnp`` is NumPy, refusing what JAX refuses (``NUMPY_AS_JNP``)."""
    assert source.startswith("import jax.numpy as jnp\n")
    return f"from {__name__} import NUMPY_AS_JNP as jnp\n" + source[len("import jax.numpy as jnp\n") :]


class ProgramPaths:
    """Builds each path's target for one program (modules are loaded once and reused)."""

    def __init__(self, seed: int, source: str, workspace: Workspace, shell=None):
        self.seed = seed
        self.source = source
        self.ws = workspace
        self.shell = shell
        self.base_name = f"fuzz_{seed}"
        self._base = None
        self._cli = None
        self._standalone = None
        self._own_modules: dict = {}
        self.shell_names: set = set()

    @property
    def filename(self) -> str:
        return self.ws.path(self.base_name)

    def python(self):
        """The oracle: the program run as plain Python (``jnp`` bound to NumPy, see
        ``NUMPY_AS_JNP``)."""
        module = types.ModuleType(self.base_name + "_python")
        module.__file__ = self.filename
        code = compile(python_source(self.source), self.filename, "exec")
        exec(code, module.__dict__)
        return Target(module.f, module.__dict__, traced=False)

    def base(self):
        if self._base is None:
            self._base = self.ws.load(self.base_name, self.source)
        return self._base

    def _own(self, name):
        """The program loaded once more, for one path: ``autolax.convert(f)`` of the same
        function is the function ``autolax.jit(f)`` jits, so the two would share jax.jit's
        trace cache, and the second path would never trace (nor run its trace-time Python)."""
        if name not in self._own_modules:
            self._own_modules[name] = self.ws.load(f"{self.base_name}_{name}", self.source)
        return self._own_modules[name]

    def target(self, path: str, static: tuple) -> Target:
        """Raises ``Refused`` when the path rejects the program before it runs."""
        import jax
        import autolax

        if path == "jit":
            m = self.base()
            return Target(autolax.jit(m.f, static_argnums=static or None), m.__dict__, static)
        if path == "jax.jit(convert)":
            m = self._own("convert")
            return Target(jax.jit(_fresh(autolax.convert(m.f)), static_argnums=static or None), m.__dict__, static)
        if path in EAGER:
            m = self.base()
            return Target(autolax.convert(m.f), m.__dict__, traced=False)
        if path == "cli":
            m = self._cli_module()
            return Target(jax.jit(_fresh(m.f), static_argnums=static or None), m.__dict__, static)
        if path == "standalone":
            m = self._standalone_module()
            return Target(jax.jit(_fresh(m.f), static_argnums=static or None), m.__dict__, static)
        if path == "magic":
            return self._magic(static)
        raise ValueError(f"unknown path {path!r}")

    def _convert(self, options):
        """The converted text. ``--all`` leaves a function it cannot convert as it is, with a
        warning: that is the CLI's refusal (raised here as a ``ConversionError``)."""
        from autolax import ConversionError
        from autolax.cli import convert_source

        try:
            result = convert_source(self.source, self.filename, options)
        except Exception as exc:  # noqa: BLE001 - ConversionError (refused) or a crash: both are outcomes
            raise Refused(exc) from None
        left = [w for w in result.warnings if "is left as it is" in w]
        if left:
            raise Refused(ConversionError("; ".join(left)))
        return result.text

    def _cli_module(self):
        from autolax.cli import Options

        if self._cli is None:
            text = self._convert(Options(all=True))
            self._cli = self._load(f"{self.base_name}_cli", text)
        return self._cli

    def _standalone_module(self):
        from autolax.cli import Options

        if self._standalone is None:
            _runtime_copy_on_path()
            text = self._convert(Options(all=True, standalone=True))
            self._standalone = self._load(f"{self.base_name}_standalone", text)
        return self._standalone

    def _load(self, name, text):
        try:
            return self.ws.load(name, text)
        except Exception as exc:  # noqa: BLE001 - the converted file does not import: an outcome
            raise Refused(exc) from None

    def _magic(self, static):
        shell = self.shell
        names = ",".join(PARAM_NAMES[i] for i in static)
        line = "%%autolax" + (f" --static {names}" if names else "")
        before = set(shell.user_ns)
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            result = shell.run_cell(line + "\n" + self.source, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise Refused(error)
        self.shell_names |= set(shell.user_ns) - before
        return Target(shell.user_ns["f"], shell.user_ns, static)

    def forget(self):
        if self.shell is not None:
            for name in self.shell_names:
                self.shell.user_ns.pop(name, None)
        self.ws.forget()


_RUNTIME_COPY = None


def _runtime_copy_on_path():
    """``autolax_runtime`` as ``--standalone`` writes it, in a folder on ``sys.path`` (once
    per process)."""
    global _RUNTIME_COPY
    if _RUNTIME_COPY is None:
        from autolax.cli import runtime_copy

        folder = runtime_copy.write_to(tempfile.mkdtemp(prefix="autolax_runtime_copy_"))
        sys.path.insert(0, folder)
        _RUNTIME_COPY = folder
    return _RUNTIME_COPY


def _fresh(fn):
    """A new function object calling ``fn``: each ``jax.jit`` of it has its own trace cache.
    (JAX's cache keys on the function and the static values, not on which positions are
    static; two wrappers of one function with different ``static_argnums`` share traces.
    That pitfall is JAX's -- plain ``jax.jit(f, static_argnums=(0,))(1.5, 0.5)`` then
    ``jax.jit(f, static_argnums=(1,))(0.5, 1.5)`` returns the first call's value -- so the
    harness keeps it away from the paths that are plain ``jax.jit`` of a converted function:
    ``jax.jit(convert)``, ``cli`` and ``standalone``. ``autolax.jit`` keys its own cache on
    the static positions and is tested without this shield.)"""

    def entry(*args):
        return fn(*args)

    return entry


def make_shell():
    """An IPython shell with ``%load_ext autolax`` (one per process)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        shell.run_line_magic("load_ext", "autolax")
    return shell
