"""Collision-free names for generated code (``loop_body``, ``if_true``, ``break_`` ...)."""

from __future__ import annotations

from autolax.transpile import syntax


class Namer:
    """Hands out names that no identifier of the converted function uses.

    The first request for ``loop_body`` gets ``loop_body``, the next ``loop_body_1``, and so
    on; a name the user's code already uses is skipped.
    """

    def __init__(self, tree, reserved=(), *, nodes=None):
        """``nodes``: ``syntax.nodes(tree)``, when the caller has it already."""
        self.used = set(reserved)
        for node in syntax.nodes(tree) if nodes is None else nodes:
            if isinstance(node, syntax.Name):
                self.used.add(node.id)
            elif isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
                self.used.add(node.name)
            elif isinstance(node, (syntax.Import, syntax.ImportFrom)):
                for alias in node.names:
                    self.used.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, (syntax.Global, syntax.Nonlocal)):
                self.used.update(node.names)
        self.generated: set[str] = set()

    def new(self, base: str) -> str:
        candidate, n = base, 0
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}" if not base.endswith("_") else f"{base}{n}"
        self.used.add(candidate)
        self.generated.add(candidate)
        return candidate
