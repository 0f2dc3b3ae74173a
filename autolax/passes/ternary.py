"""Conditional expressions decide at trace time, evaluating only the chosen side.

    a if c else b    ->    ops.if_else(c, lambda: a, lambda: b)
"""

from __future__ import annotations

from autolax.transpile import anno, syntax


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def visit_IfExp(self, node):
        self.generic_visit(node)
        new = syntax.call(
            f"{self.ctx.ops}.if_else",
            [node.test, anno.thunk(node.body), anno.thunk(node.orelse)],
        )
        return syntax.copy_location(new, node)


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
