"""The runtime that ``autolax convert --standalone`` output imports: autolax's own.

``--standalone`` output is the default output with one import changed: ``from autolax.runtime
import ops`` becomes ``from autolax_runtime import ops``, and the package ``autolax_runtime`` is
written beside it. That package is the folder ``autolax/runtime/`` copied as it is, with its
imports of ``autolax.runtime`` renamed and nothing else changed. So a ``--standalone`` file runs
the same lax program as ``autolax.jit``: every construct is lowered by one piece of code and
every staging decision is made by one function (``autolax.runtime.plan``), whichever way the
code came in. The runtime imports nothing of autolax outside its folder
(``tests/test_architecture.py``), so the copy needs JAX and NumPy only.
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

_RUNTIME_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime")
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)autolax\.runtime(?=[.\s,])", re.MULTILINE)

_INIT_HEADER = (
    "# The converted files beside this package call it as ``ops``. It is ``autolax.runtime`` of\n"
    "# autolax {version} with its imports renamed: the converted files run the program\n"
    "# ``autolax.jit`` runs, with JAX and NumPy only (in the versions autolax {version} supports).\n"
    "# Each run of ``autolax convert --standalone`` writes it again; edits here are lost.\n"
)


def _version() -> str:
    try:
        return metadata.version("autolax")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "(source tree)"


def _imported(relpath: str, text: str) -> set:
    """The autolax modules the file imports, anywhere in it (at the top or in a function)."""
    out = set()
    for node in ast.walk(ast.parse(text, relpath)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "autolax":
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "autolax")
    return out


def _read(relpath: str) -> str:
    with open(os.path.join(_RUNTIME_ROOT, relpath), encoding="utf-8") as f:
        return f.read()


def modules() -> list:
    """The runtime's modules, as paths relative to ``autolax/runtime/``: every ``.py`` file of
    the folder, its ``__init__.py`` included."""
    out = []
    for dirpath, dirnames, filenames in os.walk(_RUNTIME_ROOT):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        out.extend(
            os.path.relpath(os.path.join(dirpath, name), _RUNTIME_ROOT) for name in filenames if name.endswith(".py")
        )
    return sorted(out)


def renamed(relpath: str, text: str) -> str:
    """One runtime module as the copy holds it: the marker line, then the module with its
    ``autolax.runtime`` imports renamed."""
    new = _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{PACKAGE}", text)
    left = _imported(relpath, new)
    if left:  # an import of autolax outside the runtime: a bug of autolax's, caught here
        raise RuntimeError(f"autolax convert --standalone: {relpath} still imports autolax ({sorted(left)})")
    origin = "autolax/runtime/" + relpath.replace(os.sep, "/")
    header = f"{MARKER} from {origin} (autolax {_version()}); do not edit.\n"
    if relpath == "__init__.py":
        header += _INIT_HEADER.format(version=_version())
    return header + new


def files() -> dict:
    """``{path relative to the output folder: text}`` of the whole ``autolax_runtime`` package."""
    return {os.path.join(PACKAGE, relpath): renamed(relpath, _read(relpath)) for relpath in modules()}


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
