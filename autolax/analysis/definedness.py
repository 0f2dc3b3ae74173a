"""Reaching definitions, reduced to what the rewrite needs: which names are certainly bound,
and which may be bound, right before each statement.

Forward data flow; a loop body may run zero times, so a name it binds is only "maybe" bound
after it. Results are side tables keyed by node:

* ``before[stmt] = (definitely, maybe)``
* ``assigned[(stmt, field)]``: names bound on every path through a nested block.
"""

from __future__ import annotations

from autolax.analysis.activity import target_names, writes
from autolax.transpile import syntax


class Definedness:
    def __init__(self, fn_node, params=None):
        self.before: dict = {}
        self.assigned: dict = {}
        start = set(syntax.param_names(fn_node.args)) if params is None else set(params)
        self._block(fn_node.body, start, set(start))

    def _block(self, stmts, definitely: set, maybe: set):
        for stmt in stmts:
            self.before[stmt] = (definitely, maybe)
            definitely, maybe = self._stmt(stmt, definitely, maybe)
        return definitely, maybe

    def _stmt(self, node, d: set, m: set):
        w = writes(node)
        if isinstance(node, syntax.If):
            bd, bm = self._block(node.body, d, m)
            od, om = self._block(node.orelse, d, m)
            self.assigned[(node, "body")] = bd - d
            self.assigned[(node, "orelse")] = od - d
            return (bd & od), (bm | om)
        if isinstance(node, (syntax.While, syntax.For)):
            targets = target_names(node.target) if isinstance(node, syntax.For) else set()
            body_m = m | w
            self._block(node.body, d | targets, body_m)
            od, om = self._block(node.orelse, d, body_m)
            return od, om
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            bound = set()
            for item in node.items:
                if item.optional_vars is not None:
                    bound |= target_names(item.optional_vars)
            return self._block(node.body, d | bound, m | bound)
        if isinstance(node, syntax.Try):
            self._block(node.body, d, m | w)
            for handler in node.handlers:
                self._block(handler.body, d, m | w)
            self._block(node.orelse, d, m | w)
            fd, fm = self._block(node.finalbody, d, m | w)
            return fd, fm
        if isinstance(node, syntax.Delete):
            return d - w, m - w
        return d | w, m | w
