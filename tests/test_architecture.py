"""The package's layers, checked on its import graph (README "Architecture").

The API on top (``api``, ``check``, ``cli``, ``magic``, ``demo``) uses ``sourcegen``, the front
end and the runtime (``ops``). The front end is four sub-layers, lowest first: ``transpile``
(the tree, and the libraries the passes share), ``analysis``, ``passes`` (one rewrite each;
no pass imports another) and ``pipeline`` (runs the passes in order); each imports only those
below it. The front end and the runtime share only the small modules ``errors``, ``sites``,
``libraries``, ``plan``, ``compat`` and ``transforms``; the runtime never imports the front
end, and nothing imports the API.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "autolax"
# The project's shared tools live beside the project (``../shared``), in CI too.
IMPORT_CIRCLES = PACKAGE.parent.parent / "shared" / "tools" / "import_circles.py"

SHARED = {"errors", "sites", "libraries", "plan", "compat", "transforms"}
FRONT_END = ("transpile", "analysis", "passes", "pipeline")  # lowest first
TOP = {"api", "jitted", "callables", "check", "filtering", "cli", "magic", "demo", "interrupt", "__init__", "__main__", "examples"}

# layer -> the layers it may import (besides itself)
ALLOWED = {
    "shared": set(),
    "transpile": {"shared"},
    "analysis": {"transpile", "shared"},
    "passes": {"analysis", "transpile", "shared"},
    "pipeline": {"passes", "analysis", "transpile", "shared"},
    "runtime": {"shared"},
    "sourcegen": {*FRONT_END, "shared"},
    "top": {*FRONT_END, "runtime", "sourcegen", "shared"},
}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else "__init__"
    if first in SHARED:
        return "shared"
    if first in FRONT_END:
        return first
    if first == "ops":
        return "runtime"
    if first == "sourcegen":
        return "sourcegen"
    assert first in TOP, f"{module}: add it to a layer in this test (and to README's architecture)"
    return "top"


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
    """``autolax.ops.report`` stays; ``autolax.errors.make`` (a name, not a module) -> ``autolax.errors``."""
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
        if have != want and want not in ALLOWED[have]:
            bad.append(f"{module}:{line} ({have}) imports {target} ({want})")
    assert not bad, "\n".join(bad)


def _edges():
    """(importing module, imported module, line) for every import of one autolax module by another."""
    return [(m, t, line) for m, t, line, _ in _imports() if t.startswith("autolax") and t != m]


def test_no_pass_imports_another():
    """What two passes share lives below them (``transpile``, ``analysis``)."""
    bad = [f"{m}:{line} imports {t}" for m, t, line in _edges() if _layer(m) == _layer(t) == "passes"]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("lower, higher", [
    ("transpile", "analysis"), ("transpile", "passes"), ("transpile", "pipeline"),
    ("analysis", "passes"), ("analysis", "pipeline"),
    ("passes", "pipeline"),
])
def test_a_front_end_layer_does_not_import_a_higher_one(lower, higher):
    bad = [f"{m}:{line} imports {t}" for m, t, line in _edges() if _layer(m) == lower and _layer(t) == higher]
    assert not bad, "\n".join(bad)


def test_only_sourcegen_and_the_api_import_the_pipeline():
    importers = {m: _layer(m) for m, t, _ in _edges() if _layer(t) == "pipeline" and _layer(m) != "pipeline"}
    assert "autolax.api" in importers  # the rule below is not vacuous
    bad = [f"{m} ({layer}) imports autolax.pipeline" for m, layer in importers.items() if layer not in ("sourcegen", "top")]
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


@pytest.mark.parametrize("module", ["autolax.sites", "autolax.plan", "autolax.errors", "autolax.ops",
                                    "autolax.pipeline", "autolax.sourcegen", "autolax.cli"])
def test_each_layer_imports_first_in_a_fresh_interpreter(module):
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
