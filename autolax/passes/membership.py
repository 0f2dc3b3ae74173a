"""Searching a list by value goes through ``ops.sought``, which refuses clearly where Python
would have to test a traced comparison.

    x in stack              ->   ops.sought(stack, x, 'stack') in stack
    stack.remove(x)         ->   stack.remove(ops.sought(stack, x, 'stack'))
    stack.index(x)          ->   stack.index(ops.sought(stack, x, 'stack'))

(also ``x not in stack`` and ``stack.count(x)``). Python compares ``x`` with the items in
turn (``item is x or item == x``) and tests each answer: with a traced item or ``x`` the
answer is traced, and JAX's ``TracerBoolConversionError`` would come out of the list's own
method. ``ops.sought`` makes the same comparisons first and returns ``x`` unchanged, or
raises ``TracedComparisonError`` naming the list, the line and the fix.

Only a plain local or global name as the searched value's container (evaluating it twice
is harmless); not in ``--standalone`` output, which needs only ``jax``.
"""

from __future__ import annotations

from autolax.transpile import syntax

SEARCHING_METHODS = frozenset({"remove", "index", "count"})


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _sought(self, container, value):
        call = syntax.call(f"{self.ctx.ops}.sought",
                           [syntax.name(container.id), value, syntax.constant(container.id)])
        return syntax.copy_location(call, value)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if (len(node.ops) == 1 and isinstance(node.ops[0], (syntax.In, syntax.NotIn))
                and isinstance(node.comparators[0], syntax.Name)):
            node.left = self._sought(node.comparators[0], node.left)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, syntax.Attribute) and func.attr in SEARCHING_METHODS
                and isinstance(func.value, syntax.Name) and func.value.id != self.ctx.ops
                and node.args and not node.keywords and not any(isinstance(a, syntax.Starred) for a in node.args)):
            node.args = [self._sought(func.value, node.args[0]), *node.args[1:]]
        return node


def transform(fn_node, ctx):
    if ctx.standalone:
        return fn_node
    return _Transformer(ctx).visit(fn_node)
