"""Collision-free names for generated code (``loop_body``, ``if_true``, ``break_`` ...)."""

from __future__ import annotations

from autolax.frontend.transpile import syntax

# The node classes other than ``Name`` that bind a name, and where it is.
_NAMING = {
    syntax.FunctionDef: "name",
    syntax.AsyncFunctionDef: "name",
    syntax.ClassDef: "name",
    syntax.Import: "import",
    syntax.ImportFrom: "import",
    syntax.Global: "names",
    syntax.Nonlocal: "names",
}


class Namer:
    """Hands out names that no identifier of the converted function uses.

    The first request for ``loop_body`` gets ``loop_body``, the next ``loop_body_1``, and so
    on; a name the user's code already uses is skipped.
    """

    def __init__(self, tree, reserved=(), *, nodes=None):
        """``nodes``: ``syntax.nodes(tree)``, when the caller has it already."""
        self.used = used = set(reserved)
        name = syntax.Name
        for node in syntax.nodes(tree) if nodes is None else nodes:
            kind = node.__class__  # the exact class (no node class is subclassed): no isinstance chain
            if kind is name:
                used.add(node.id)
            elif kind in _NAMING:
                how = _NAMING[kind]
                if how == "name":
                    used.add(node.name)
                elif how == "import":
                    for alias in node.names:
                        used.add((alias.asname or alias.name).split(".")[0])
                else:
                    used.update(node.names)
        self.generated: set[str] = set()

    def new(self, base: str) -> str:
        candidate, n = base, 0
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}" if not base.endswith("_") else f"{base}{n}"
        self.used.add(candidate)
        self.generated.add(candidate)
        return candidate
