"""Rewriting a function statement by statement, innermost blocks first.

Several passes replace statements (a ``try`` by the code that stands for it, a ``raise`` by a
jump) and must first rewrite the blocks nested in each: ``map_blocks`` is that recursion,
``StatementRewriter`` the usual walk built on it.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax

_DEFS = (syntax.FunctionDef, syntax.AsyncFunctionDef)
_SCOPES = (syntax.ClassDef, syntax.Lambda)


def map_blocks(node, rewrite) -> None:
    """Replaces each block of statements directly in ``node`` -- its ``body``, ``orelse``,
    ``finalbody``, and the body of each handler and ``case`` -- with ``rewrite(block)``."""
    for field in syntax.BLOCK_FIELDS:
        block = getattr(node, field, None)
        if block.__class__ is list and block:
            if isinstance(block[0], syntax.stmt):
                setattr(node, field, rewrite(block))
            else:
                for child in block:  # handlers, match cases
                    child.body = rewrite(child.body)


class StatementRewriter:
    """Rewrites every statement of a function, inner blocks first: ``rewrite(stmt)`` returns
    the statements that replace ``stmt``, whose own blocks are rewritten already. A nested
    ``def`` is walked too (``function``: its own scope); classes and lambdas are left alone.
    ``transform``: ``fn_node.body = Rewriter(...).block(fn_node.body)``."""

    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            out.extend(self.stmt(stmt))
        return out

    def stmt(self, node) -> list:
        if isinstance(node, _DEFS):
            return [self.function(node)]
        if isinstance(node, _SCOPES):
            return [node]
        map_blocks(node, self.block)
        return self.rewrite(node)

    def function(self, node):
        """A nested ``def``, its body rewritten."""
        node.body = self.block(node.body)
        return node

    def rewrite(self, node) -> list:
        return [node]
