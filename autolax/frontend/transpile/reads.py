"""Reads of some names, wrapped in an ops call that checks them (``ops.assigned(x)``) or
says they are bound (``ops.bound(x)``). A library of ``passes.unbound_reads`` and
``passes.loop_exits``.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax


class Reads(syntax.NodeTransformer):
    """Wraps loads of ``names`` in one statement (not inside nested ``def``/``class``) in
    ``ops.<op>(name)``: ``ops.assigned`` for ``passes.unbound_reads``, ``ops.bound`` for
    ``passes.loop_exits``."""

    def __init__(self, names, ops, op="assigned", at_file=None, later=frozenset()):
        """``later``: names also wrapped inside a lambda, which reads them when it is called
        (a ``del`` after the lambda may unbind them)."""
        self.names = names
        self.ops = ops
        self.op = op
        self.at_file = at_file
        self.later = later

    def visit_Name(self, node):
        if isinstance(node.ctx, syntax.Load) and node.id in self.names:
            return syntax.copy_location(read_call(self.ops, self.op, node, self.at_file), node)
        return node

    def visit_Lambda(self, node):
        params = set(syntax.param_names(node.args))
        inner = Reads((self.names | self.later) - params, self.ops, self.op, self.at_file, self.later - params)
        node.body = inner.visit(node.body)
        return node

    def _comprehension(self, node):
        bound = set()
        for gen in node.generators:
            bound |= syntax.target_names(gen.target)
        self.generic_visit(node) if not bound & (self.names | self.later) else Reads(
            self.names - bound, self.ops, self.op, self.at_file, self.later - bound
        ).generic_visit(node)
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def read_call(ops, op, name_node, at_file, located=None):
    """``ops.<op>(x)``; in code written to a file (the CLI), ``ops.assigned(x, at='F:L')``
    names the user's file and line, which the frame of the written file does not."""
    located = located if located is not None else name_node
    keywords = None
    if at_file and op == "assigned" and getattr(located, "lineno", None):
        keywords = {"at": syntax.constant(f"{at_file}:{located.lineno}")}
    return syntax.call(f"{ops}.{op}", [name_node], keywords)
