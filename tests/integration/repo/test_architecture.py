"""The package's layers, checked on its import graph: one rule per folder (README "Architecture").

``ls autolax`` shows the layers. The API on top (the modules at the package's root: ``api``,
``check``, ``magic``, ``demo``, ...) uses ``cli/``, ``frontend/`` and ``runtime/``; ``cli/``
(``autolax convert`` and the command line) uses the front end and the runtime; the front end
(``frontend/``) turns source into source and uses only the runtime's declarations (``sites``,
``errors``, ``libraries``, ``transforms``: what a statement's descriptor says, what an error
says, what is library code); the runtime (``runtime/``) imports nothing of autolax outside its
folder, so ``--standalone`` copies it as it is. Inside the front end, four sub-layers, lowest
first: ``transpile``, ``analysis``, ``passes`` (no pass imports another) and ``pipeline``.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "autolax"
# The project's shared tools live beside the project (``../shared``), in CI too.
IMPORT_CIRCLES = PACKAGE.parent.parent / "shared" / "tools" / "import_circles.py"

# folder -> the folders it may import (besides itself); "api" is the package's root.
LAYERS = {
    "runtime": set(),
    "frontend": {"runtime"},
    "cli": {"frontend", "runtime", "api"},
    "api": {"cli", "frontend", "runtime"},
}
# The runtime modules the front end may import: declarations, no lowering.
RUNTIME_FOR_FRONT_END = {"autolax.runtime", "autolax.runtime.sites", "autolax.runtime.errors",
                         "autolax.runtime.libraries", "autolax.runtime.transforms", "autolax.runtime.compat"}
FRONT_END = ("transpile", "analysis", "passes", "pipeline")  # lowest first


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else "__init__"
    return first if first in LAYERS else "api"


def _sublayer(module: str) -> str | None:
    """``autolax.frontend.passes.calls`` -> ``passes`` (None outside the front end)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "frontend" else None


def test_every_folder_is_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - {"examples"} == set(LAYERS) - {"api"}, "a new folder needs its rule in LAYERS (and README)"


def _imports():
    """(importing module, imported autolax module, line, inside a function?) for every import."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autolax"):
                targets = [node.module + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "autolax":
                    out.append((module, _resolve(target), node.lineno, id(node) in nested))
                elif id(node) in nested:
                    out.append((module, target, node.lineno, True))
    return out


def _resolve(target: str) -> str:
    """``autolax.runtime.ops.report`` stays; ``autolax.runtime.errors.make`` (a name, not a module) -> ``autolax.runtime.errors``."""
    parts = target.split(".")
    while parts:
        path = PACKAGE.parent.joinpath(*parts)
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    return target


def test_every_import_goes_down_the_layers():
    bad = []
    for module, target, line, _ in _imports():
        if not target.startswith("autolax"):
            continue
        have, want = _layer(module), _layer(target)
        if have != want and want not in LAYERS[have]:
            bad.append(f"{module}:{line} ({have}) imports {target} ({want})")
    assert not bad, "\n".join(bad)


def _edges():
    """(importing module, imported module, line) for every import of one autolax module by another."""
    return [(m, t, line) for m, t, line, _ in _imports() if t.startswith("autolax") and t != m]


def test_the_front_end_imports_only_the_runtime_declarations():
    """The front end never lowers anything: of the runtime it sees the statement record,
    the errors and what is library code, never ``ops`` or ``plan``."""
    bad = [f"{m}:{line} imports {t}" for m, t, line in _edges()
           if _layer(m) == "frontend" and _layer(t) == "runtime" and t not in RUNTIME_FOR_FRONT_END]
    assert not bad, "\n".join(bad)


def test_no_pass_imports_another():
    """What two passes share lives below them (``transpile``, ``analysis``)."""
    bad = [f"{m}:{line} imports {t}" for m, t, line in _edges() if _sublayer(m) == _sublayer(t) == "passes"]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("lower, higher", [
    (FRONT_END[i], FRONT_END[j]) for i in range(len(FRONT_END)) for j in range(i + 1, len(FRONT_END))])
def test_a_front_end_layer_does_not_import_a_higher_one(lower, higher):
    bad = [f"{m}:{line} imports {t}" for m, t, line in _edges() if _sublayer(m) == lower and _sublayer(t) == higher]
    assert not bad, "\n".join(bad)


def test_only_the_cli_and_the_api_import_the_pipeline():
    importers = {m: _layer(m) for m, t, _ in _edges() if _sublayer(t) == "pipeline" and _sublayer(m) != "pipeline"}
    assert "autolax.api" in importers  # the rule below is not vacuous
    bad = [f"{m} ({layer}) imports autolax.frontend.pipeline" for m, layer in importers.items()
           if layer not in ("cli", "api")]
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(not IMPORT_CIRCLES.exists(), reason=f"{IMPORT_CIRCLES} is absent (the shared tools beside the project)")
def test_the_shared_import_circles_tool_finds_none():
    """The project's own tool, which also counts imports inside functions."""
    proc = subprocess.run([sys.executable, str(IMPORT_CIRCLES), "autolax"], cwd=PACKAGE.parent, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "circle:" not in proc.stdout and " circles=0 " in proc.stdout, proc.stdout


def test_no_import_circles():
    graph = {}
    for module, target, _, deferred in _imports():
        if target.startswith("autolax") and target != module and not deferred:  # deferred: optional deps
            graph.setdefault(module, set()).add(target)
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_imports_inside_functions_except_optional_dependencies():
    deferred = [(m, t, line) for m, t, line, inside in _imports() if inside]
    optional = {"autolax.magic", "IPython", "pygments", "pygments.formatters", "pygments.lexers"}
    assert [d for d in deferred if d[1] not in optional] == []


@pytest.mark.parametrize("module", ["autolax.runtime.sites", "autolax.runtime.plan", "autolax.runtime.errors",
                                    "autolax.runtime.ops", "autolax.frontend.pipeline", "autolax.cli"])
def test_each_layer_imports_first_in_a_fresh_interpreter(module):
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_gast_is_imported_only_behind_the_syntax_module():
    """A change of gast touches ``frontend/transpile/syntax.py`` and the conversions only it
    imports (``conversions.py``)."""
    gast_users, conversions_users = set(), set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(t.split(".")[0] == "gast" for t in targets):
                gast_users.add(_module_name(path))
            if "autolax.frontend.transpile.conversions" in targets:
                conversions_users.add(_module_name(path))
    assert gast_users == {"autolax.frontend.transpile.syntax", "autolax.frontend.transpile.conversions"}
    assert conversions_users == {"autolax.frontend.transpile.syntax"}
