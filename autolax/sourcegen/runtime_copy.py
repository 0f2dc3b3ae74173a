"""The runtime that ``autolax convert --standalone`` output imports: autolax's own.

``--standalone`` output is the default output with one import changed: ``from autolax import
ops`` becomes ``from autolax_runtime import ops``, and the package ``autolax_runtime`` is written
beside it. That package is a copy of the modules the runtime (``autolax.ops``) is made of,
with their imports renamed and nothing else changed. So a ``--standalone`` file runs the same
lax program as ``autolax.jit``: every construct is lowered by one piece of code and every
staging decision is made by one function (``autolax.plan``), whichever way the code came in.

The copy is taken from the installed package's source files (the runtime never imports the
front end, so the closure of its imports is small: ``ops`` and the shared modules it uses).
"""

from __future__ import annotations

import ast
import os
import re
from importlib import metadata

PACKAGE = "autolax_runtime"

# The first line of every file of the copy: how ``autolax convert`` knows a package it wrote
# (and may replace) from one it did not (which it never touches).
MARKER = "# Written by `autolax convert --standalone`"

_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../autolax
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)autolax(?=[.\s,])", re.MULTILINE)

_INIT_DOC = '''"""autolax's runtime, copied by ``autolax convert --standalone`` (autolax {version}).

The converted files beside this package call it as ``ops``: one function per construct
(``ops.cond``, ``ops.for_range``, ``ops.while_loop``, ...) that decides when the program is
traced what the construct becomes (``jax.lax.cond``, ``fori_loop``, ``while_loop``, ``scan``,
or plain Python for Python values) and builds it. It is the same code as ``autolax.ops`` of
autolax {version}, with its imports renamed: the converted files run the program
``autolax.jit`` runs, with nothing of autolax installed. It needs JAX and NumPy only, in the
versions autolax {version} supports.

Each run of ``autolax convert --standalone`` writes it again; edits here are lost.
"""
'''


def _version() -> str:
    try:
        return metadata.version("autolax")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "(source tree)"


def _module_path(dotted: str) -> str | None:
    """``autolax.ops.loops`` -> its file, relative to the package (None: not a module)."""
    parts = dotted.split(".")[1:]
    if not parts:
        return None
    base = os.path.join(_SOURCE_ROOT, *parts)
    if os.path.isfile(base + ".py"):
        return os.path.join(*parts) + ".py"
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(*parts, "__init__.py")
    return None


def _imported(relpath: str, text: str) -> set:
    """The autolax modules the file imports, anywhere in it (at the top or in a function)."""
    out = set()
    for node in ast.walk(ast.parse(text, relpath)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "autolax":
            found = _module_path(node.module)
            if found:
                out.add(found)
            for alias in node.names:  # `from autolax import errors`: a module, or a name in one
                found = _module_path(f"{node.module}.{alias.name}")
                if found:
                    out.add(found)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "autolax":
                    found = _module_path(alias.name)
                    if found:
                        out.add(found)
    return out


def _read(relpath: str) -> str:
    with open(os.path.join(_SOURCE_ROOT, relpath), encoding="utf-8") as f:
        return f.read()


def modules() -> list:
    """The runtime's modules, as paths relative to the package: every module of ``ops`` and
    the modules they import, transitively."""
    ops = os.path.join(_SOURCE_ROOT, "ops")
    todo = sorted(os.path.join("ops", name) for name in os.listdir(ops) if name.endswith(".py"))
    seen = set()
    while todo:
        relpath = todo.pop()
        if relpath in seen:
            continue
        seen.add(relpath)
        todo.extend(sorted(_imported(relpath, _read(relpath)) - seen))
    seen.discard("__init__.py")  # autolax's own (the API); the copy gets its own
    return sorted(seen)


def renamed(relpath: str, text: str) -> str:
    """One runtime module as the copy holds it: the marker line, then the module with its
    ``autolax`` imports renamed."""
    new = _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{PACKAGE}", text)
    left = _imported(relpath, new)
    if left:  # an import form the rename does not know: a bug of autolax's, caught here
        raise RuntimeError(f"autolax convert --standalone: {relpath} still imports autolax ({sorted(left)})")
    origin = "autolax/" + relpath.replace(os.sep, "/")
    return f"{MARKER} from {origin} (autolax {_version()}); do not edit.\n{new}"


def files() -> dict:
    """``{path relative to the output folder: text}`` of the whole ``autolax_runtime`` package."""
    version = _version()
    out = {os.path.join(PACKAGE, "__init__.py"): f"{MARKER} (autolax {version}); do not edit.\n"
                                                  + _INIT_DOC.format(version=version)}
    for relpath in modules():
        out[os.path.join(PACKAGE, relpath)] = renamed(relpath, _read(relpath))
    return out


def write_to(folder: str) -> str:
    """Writes the package into ``folder`` (made if need be; for tests and tools that run
    ``--standalone`` output in-process) and returns ``folder``."""
    for relpath, text in files().items():
        path = os.path.join(folder, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return folder


def written_by_autolax(path: str) -> bool:
    """Does the file at ``path`` start with the marker line (a copy an earlier run wrote)?"""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(MARKER)
    except OSError:
        return False
