"""Runs one function through every way autolax reaches users, and compares with Python.

The paths: ``autolax.jit``, ``jax.jit(autolax.convert(f))``, ``autolax.convert(f)`` called
eagerly, and the CLI's two outputs, default and ``--standalone`` (the function's source
converted by ``autolax convert`` and run under ``jax.jit``). Each gives an ``Outcome``: the value, or the
type of the exception raised, and what was printed.

The rule (README "Semantics"): each path returns what Python returns, prints what it prints
and raises what it raises -- or raises autolax's own error (``autolax.AutolaxError``).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import os
import re
import sys
import tempfile
import textwrap
from dataclasses import dataclass

import jax
import numpy as np

import autolax
from autolax.runtime import compat
from autolax.runtime.ops import lists as _lists
from autolax.cli import Options, convert_source, runtime_copy

PATHS = ("autolax.jit", "jax.jit(convert)", "convert eagerly", "cli default", "cli standalone")

_counter = itertools.count()


@dataclass
class Outcome:
    value: object = None
    error: BaseException | None = None
    printed: str = ""

    @property
    def kind(self):
        return "value" if self.error is None else type(self.error).__name__


def _capture(call):
    # A failed check of an earlier call under plain jax.jit on several devices stays in JAX's
    # runtime tokens, raised again by every jax.effects_barrier() (README, "Many devices and
    # hosts"): dropped, so that it is not taken for this call's outcome.
    compat.drop_failed_effects()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            value = call()
            value = jax.block_until_ready(value)
            jax.effects_barrier()
        return Outcome(value=value, printed=out.getvalue())
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the outcome under test (sys.exit() too)
        with contextlib.redirect_stdout(out):
            try:
                jax.effects_barrier()
            except jax.errors.JaxRuntimeError:
                # A host callback that raised on several devices (a failed check under plain
                # jax.jit): JAX raises its error again from the barrier (README, "Many
                # devices and hosts"); it is the outcome already caught.
                pass
        return Outcome(error=exc, printed=out.getvalue())


def cli_function(fn, tmp_dir, standalone=False):
    """``fn`` converted by ``autolax convert`` (default output, or ``--standalone`` importing
    the runtime's copy that ``runtime_copy_folder`` writes once per process), loaded from the
    written file with the globals of ``fn``'s module. The file holds ``fn`` and the functions
    of its module it calls (``same_file_callees``), as its own file would: ``autolax
    convert`` converts those with it."""
    if standalone:
        runtime_copy_folder()
    source_file = fn.__code__.co_filename
    path = f"{tmp_dir}/cli_{fn.__name__}_{next(_counter)}.py"
    # The source as ``autolax convert`` reads it: each function on its own lines of its
    # file, so that the written file names them (``at='...'``, ``ops.source_lines``) by
    # their place there, as ``autolax.jit`` does.
    text = convert_source(source_at_its_lines(same_file_callees(fn)), source_file,
                          Options(only=(fn.__name__,), standalone=standalone),
                          written_as=os.path.relpath(source_file, os.path.dirname(os.path.abspath(path)))).text
    with open(path, "w") as f:
        f.write(text)
    namespace = dict(fn.__globals__)
    exec(compile(text, path, "exec"), namespace)  # noqa: S102 - the test's own converted code
    return namespace[fn.__name__]


def source_at_its_lines(functions) -> str:
    """The text of ``functions`` (of one file), dedented, each on its own lines of the file
    (blank lines between them)."""
    lines = []
    for g in sorted(functions, key=lambda g: inspect.getsourcelines(g)[1]):
        own, first = inspect.getsourcelines(g)
        lines += [""] * (first - 1 - len(lines))
        lines += textwrap.dedent("".join(own)).splitlines()
    return "\n".join(lines) + "\n"


def same_file_callees(fn) -> list:
    """``fn`` and the module-level functions and classes of its file it calls by name,
    directly or through one another."""
    import ast

    out, todo = [fn], [fn]
    while todo:
        g = todo.pop()
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(g)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                h = fn.__globals__.get(node.func.id)
                if h in out or getattr(h, "__qualname__", None) != node.func.id:
                    continue
                if inspect.isfunction(h) and h.__code__.co_filename == fn.__code__.co_filename or (
                        inspect.isclass(h) and h.__module__ == fn.__module__):
                    out.append(h)
                    todo.append(h)
    return out


_RUNTIME_FOLDER = None


def runtime_copy_folder() -> str:
    """A folder holding ``autolax_runtime`` as ``--standalone`` writes it (once per test
    process), put on ``sys.path`` so that ``--standalone`` output imports it."""
    global _RUNTIME_FOLDER
    if _RUNTIME_FOLDER is None:
        folder = runtime_copy.write_to(tempfile.mkdtemp(prefix="autolax_runtime_copy_"))
        sys.path.insert(0, folder)
        _RUNTIME_FOLDER = folder
    return _RUNTIME_FOLDER


def standalone_module(source: str, filename: str = "m.py", namespace=None, **options) -> dict:
    """``source`` converted as ``autolax convert --standalone`` does
    (``Options(standalone=True, **options)``) and run as a module, importing the runtime's
    copy: its namespace (``namespace``: the globals to start from)."""
    runtime_copy_folder()
    text = convert_source(source, filename, Options(standalone=True, **options)).text
    namespace = dict(namespace or {})
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - the test's own converted code
    return namespace


def plain_lists(value):
    """``autolax.runtime.ops.lists.plain_lists``, also for the lists of the runtime's copy that
    ``--standalone`` output returns."""
    value = _lists.plain_lists(value)
    copy = sys.modules.get("autolax_runtime.ops.lists")
    return copy.plain_lists(value) if copy is not None else value


def is_autolax_error(err) -> bool:
    """An error of autolax's own: ``autolax.AutolaxError``, or the same class of the
    runtime's copy that ``--standalone`` output imports."""
    return any(c.__name__ == "AutolaxError" and c.__module__ in ("autolax.runtime.errors", "autolax_runtime.errors")
               for c in type(err).__mro__)


# A failed run-time check under plain jax.jit: JAX's runtime error holds autolax's text,
# raised in the checks module of autolax or of its copy.
_CHECKS_FILE = re.compile(r"autolax([/\\]runtime|_runtime)[/\\]ops[/\\]checks\.py")


def run(path, fn, args, *, static_argnums=(), tmp_dir=None) -> Outcome:
    if path == "python":
        return _capture(lambda: fn(*args))
    if path == "autolax.jit":
        return _capture(lambda: autolax.jit(fn, static_argnums=static_argnums)(*args))
    if path == "jax.jit(convert)":
        return _capture(lambda: jax.jit(autolax.convert(fn), static_argnums=static_argnums)(*args))
    if path == "convert eagerly":
        return _capture(lambda: autolax.convert(fn)(*args))
    if path == "cli default":
        return _capture(lambda: jax.jit(cli_function(fn, tmp_dir), static_argnums=static_argnums)(*args))
    if path == "cli standalone":
        return _capture(lambda: jax.jit(cli_function(fn, tmp_dir, standalone=True),
                                        static_argnums=static_argnums)(*args))
    raise ValueError(path)


def agrees(expected: Outcome, got: Outcome, path: str, allow_refusal: bool = True) -> str | None:
    """None if ``got`` keeps the rule, else why not. ``allow_refusal``: an autolax error
    counts as keeping it (autolax said no, clearly, instead of computing)."""
    err = got.error
    if err is not None:
        if is_autolax_error(err) and allow_refusal:
            return None
        runtime_check = isinstance(err, jax.errors.JaxRuntimeError) and bool(_CHECKS_FILE.search(str(err)))
        # (autolax's error raised when the program runs: under plain jax.jit, in JAX's runtime error)
        refused = (runtime_check and allow_refusal and path != "autolax.jit"
                   and _names_error_of_kind(str(err), autolax.AutolaxError))
        if expected.error is None and not refused:
            return f"raised {type(err).__name__}: {err}; Python returned {expected.value!r}"
        if not (refused or isinstance(err, type(expected.error)) or runtime_check and path != "autolax.jit"
                and _names_error_of_kind(str(err), type(expected.error))):
            # (plain jax.jit: a failed check surfaces as JAX's runtime error)
            return f"raised {type(err).__name__}: {err}; Python raised {type(expected.error).__name__}: {expected.error}"
        # It may stop before Python's last print (an error while tracing comes before the
        # program runs), but never prints what Python did not.
        got_lines, expected_lines = got.printed.splitlines(), expected.printed.splitlines()
        if len(got_lines) > len(expected_lines) or not _same_printed(got_lines, expected_lines[:len(got_lines)]):
            return f"printed {got.printed!r} before raising; Python printed {expected.printed!r}"
        return None
    if expected.error is not None:
        return f"returned {got.value!r}; Python raised {type(expected.error).__name__}: {expected.error}"
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected.value)
    # (A list a staged loop appended to, returned through plain jax.jit, is a list whose
    # pytree leaves are the stacked arrays: README, Known limitations. Its items are compared.)
    g_leaves, g_tree = jax.tree_util.tree_flatten(plain_lists(got.value))
    if len(e_leaves) != len(g_leaves) or e_tree != g_tree:
        return f"returned {got.value!r}; Python returned {expected.value!r}"
    for e, g in zip(e_leaves, g_leaves):
        if isinstance(e, (str, bytes)) or isinstance(g, (str, bytes)):
            if type(e) is not type(g) or e != g:
                return f"returned {got.value!r}; Python returned {expected.value!r}"
            continue
        kind = np.complex128 if np.iscomplexobj(e) or np.iscomplexobj(g) else np.float64
        if not np.allclose(np.asarray(g, dtype=kind), np.asarray(e, dtype=kind), rtol=1e-5, atol=1e-6,
                           equal_nan=True):
            return f"returned {got.value!r}; Python returned {expected.value!r}"
    if not _same_printed(got.printed.splitlines(), expected.printed.splitlines()):
        return f"printed {got.printed!r}; Python printed {expected.printed!r}"
    return None


def _same_printed(got_lines, expected_lines) -> bool:
    got, expected = "\n".join(got_lines), "\n".join(expected_lines)
    return got.split() == expected.split() or _numbers(got) == _numbers(expected)


def _names_error_of_kind(message, kind) -> bool:
    """Does a JAX runtime error's text name an error of class ``kind`` (or an autolax
    subclass of it)?"""
    import autolax.runtime.errors

    classes = [kind] + [c for c in vars(autolax.runtime.errors).values() if isinstance(c, type) and issubclass(c, kind)]
    return any(f"{c.__name__}: " in message for c in classes)


def _numbers(text):
    out = []
    for word in text.replace("[", " ").replace("]", " ").replace(",", " ").split():
        try:
            out.append(round(float(word), 4))
        except ValueError:
            out.append(word)
    return out


def check_all_paths(fn, *args, static_argnums=(), tmp_dir=None, paths=PATHS, python_args=None, refusal=False):
    """Asserts every path keeps the rule on ``args`` (an autolax refusal counts only with
    ``refusal=True``); returns Python's outcome."""
    expected = run("python", fn, args if python_args is None else python_args)
    problems = []
    for path in paths:
        got = run(path, fn, args, static_argnums=static_argnums, tmp_dir=tmp_dir)
        why = agrees(expected, got, path, allow_refusal=refusal)
        if why:
            problems.append(f"{path}: {why}")
    assert not problems, f"{fn.__name__}{args}:\n  " + "\n  ".join(problems)
    return expected
