"""Conditional expressions decide at trace time, evaluating only the chosen side.

    a if c else b    ->    ops.if_else(c, lambda: a, lambda: b)

Inside a ``try`` whose handlers catch ``E`` (marked by ``passes.exceptions``), the call gets
``caught_by=(E,)``: a side that fails while traced with an error a handler catches is refused.
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax

# Runs where there is a conditional expression (``pipeline.features``).
NEEDS = frozenset({"IfExp"})
# Reads ``anno.CAUGHT_BY``, which ``exceptions`` sets on the conditional expressions in a ``try``.
AFTER = ("exceptions",)

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(a, b, c):
            return a if c else b
        """,
        """\
        def f(a, b, c):
            return ops.if_else(c, lambda: a, lambda: b)
        """,
    ),
    (
        """\
        def f(x):
            try:
                y = 1.0 / x if x != 0 else 0.0
            except ZeroDivisionError:
                y = 0.0
            return y
        """,
        """\
        def f(x):
            try:
                y = ops.if_else(x != 0, lambda: 1.0 / x, lambda: 0.0, caught_by=(ZeroDivisionError,))
            except ops.AutolaxError:
                raise
            except ZeroDivisionError:
                y = 0.0
            return y
        """,
        ("exceptions",),
    ),
)


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def visit_IfExp(self, node):
        self.generic_visit(node)
        caught = anno.get(node, anno.CAUGHT_BY)
        keywords = (
            {"caught_by": syntax.Tuple(elts=[syntax.deepcopy(t) for t in caught], ctx=syntax.Load())}
            if caught
            else None
        )
        new = syntax.call(
            f"{self.ctx.ops}.if_else",
            [node.test, anno.thunk(node.body), anno.thunk(node.orelse)],
            keywords,
        )
        return syntax.copy_location(new, node)


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
