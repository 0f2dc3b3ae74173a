"""Reaching definitions, reduced to what the rewrite needs: which names are certainly bound,
and which may be bound, right before each statement.

Forward data flow; a loop body may run zero times, so a name it binds is only "maybe" bound
after it. Results are side tables keyed by node:

* ``before[stmt] = (definitely, maybe)``
* ``assigned[(stmt, field)]``: names bound on every path through a nested block.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names, reads, target_names, writes
from autolax.frontend.transpile import anno, syntax


def _holds_lowered_jump(node) -> bool:
    """Does ``node``'s body set a flag a jump lowering made (``anno.GENERATED_FLAG``)?"""
    return any(anno.get(stmt, anno.GENERATED_FLAG) is not None for stmt in syntax.walk_statements(node))


class Definedness:
    def __init__(self, fn_node, params=None, written=writes):
        """``written``: ``writes``, or a function giving the same answers (one that
        remembers them, as ``Liveness.written`` does for the same tree)."""
        self.before: dict = {}
        self.assigned: dict = {}
        self._writes = written
        start = set(syntax.param_names(fn_node.args)) if params is None else set(params)
        self._block(fn_node.body, start, set(start))

    def _block(self, stmts, definitely: set, maybe: set):
        for stmt in stmts:
            self.before[stmt] = (definitely, maybe)
            definitely, maybe = self._stmt(stmt, definitely, maybe)
        return definitely, maybe

    def _stmt(self, node, d: set, m: set):
        # ``writes`` of a compound statement searches its blocks: asked only where used (not
        # for an `if` or a `with`, whose blocks are analysed statement by statement).
        if isinstance(node, syntax.If):
            bd, bm = self._block(node.body, d, m)
            od, om = self._block(node.orelse, d, m)
            self.assigned[(node, "body")] = bd - d
            self.assigned[(node, "orelse")] = od - d
            return (bd & od), (bm | om)
        if isinstance(node, (syntax.While, syntax.For)):
            targets = target_names(node.target) if isinstance(node, syntax.For) else set()
            d = d - _deleted(node.body)  # an earlier iteration may have deleted them
            body_m = m | self._writes(node)
            self._block(node.body, d | targets, body_m)
            od, om = self._block(node.orelse, d, body_m)
            return od, om
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            bound = set()
            for item in node.items:
                if item.optional_vars is not None:
                    bound |= target_names(item.optional_vars)
            bd, bm = self._block(node.body, d | bound, m | bound)
            # The context manager may suppress an exception raised in the body, and the code
            # after the `with` then runs. Where the body held a jump (now a flag and, for a
            # `return`, the return value), that code runs only then, so what the body binds is
            # not certain there (`with suppress(E): return g()` then `return 1`).
            return (bd - (self._writes(node) - d) if _holds_lowered_jump(node) else bd), bm
        if isinstance(node, syntax.Try):
            # What the body binds is only certain in `else` (the body finished); a `del` in
            # the body, a handler or `else` may have run before a handler / `finally` / the
            # code after the `try`, so the names it unbinds are no longer certain there.
            w = self._writes(node)
            bd, _ = self._block(node.body, d, m | w)
            for handler in node.handlers:
                self._block(handler.body, d - _deleted(node.body), m | w)
            self._block(node.orelse, bd, m | w)
            left = d - _deleted(node.body + node.handlers + node.orelse)
            fd, fm = self._block(node.finalbody, left, m | w)
            return fd, fm
        w = self._writes(node)
        if isinstance(node, syntax.Delete):
            return d - w, m - w
        return d | w, m | w


class BoundBeforeReads:
    """Which local names Python itself always binds before reading them.

    A forward pass over the original code (before jump lowering) that, unlike
    ``Definedness``, knows that nothing after a ``return`` / ``break`` / ``continue`` /
    ``raise`` runs: a branch that always jumps does not make a name "maybe unbound" after
    an ``if``. Loops may run zero times, so what a loop body binds stays unknown after it.

    * ``safe``: local names every read of which finds them bound (Python can never raise
      ``UnboundLocalError`` for them);
    * ``unsafe``: local names read somewhere they may be unbound.
    """

    def __init__(self, fn_node):
        self.local = local_names(fn_node)
        self.safe: set = set()
        self.unsafe: set = set()
        self._block(fn_node.body, set(syntax.param_names(fn_node.args)))
        self.safe -= self.unsafe

    def _check(self, names, bound):
        for name in names & self.local:
            (self.safe if name in bound else self.unsafe).add(name)

    def _block(self, stmts, bound):
        """The names bound after ``stmts`` (None: no path gets past them)."""
        for stmt in stmts:
            if bound is None:
                return None  # unreachable code: Python never runs it
            bound = self._stmt(stmt, bound)
        return bound

    def _stmt(self, node, bound):
        if isinstance(node, (syntax.Return, syntax.Break, syntax.Continue, syntax.Raise)):
            self._check(reads(node), bound)
            return None
        if isinstance(node, syntax.If):
            self._check(reads(node.test), bound)
            body, orelse = self._block(node.body, bound), self._block(node.orelse, bound)
            if body is None or orelse is None:
                return orelse if body is None else body
            return body & orelse
        if isinstance(node, (syntax.For, syntax.While)):
            bound = bound - _deleted(node.body)  # an earlier iteration may have deleted them
            if isinstance(node, syntax.For):
                self._check(reads(node.iter), bound)
                self._block(node.body, bound | target_names(node.target))
            else:
                self._check(reads(node.test), bound)
                self._block(node.body, bound)
            after = self._block(node.orelse, bound)
            has_break = _has_own_break(node.body)
            if after is None or has_break:
                return None if after is None and not has_break else bound
            return after
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            inner = set(bound)
            for item in node.items:
                self._check(reads(item.context_expr), bound)
                if item.optional_vars is not None:
                    inner |= target_names(item.optional_vars)
            after = self._block(node.body, inner)
            # A body that always leaves (`return`) may still be left by an exception its
            # context manager suppresses: the code after the `with` then runs.
            return inner if after is None else after
        if isinstance(node, syntax.Try):
            # Leaving normally: through the body and `else`, or through a handler (which may
            # start before anything in the body ran). `finally` runs after either.
            body = self._block(node.body, bound)
            exits = [self._block(node.orelse, body) if body is not None else None]
            for handler in node.handlers:
                exits.append(
                    self._block(handler.body, bound | ({handler.name.id} if handler.name is not None else set()))
                )
            exits = [e for e in exits if e is not None]
            after = set.intersection(*exits) if exits else None
            # An exception may leave the body (or a handler) before it binds anything: the
            # `finally`'s reads are checked against what was bound before the `try` too.
            if after is not None and after != bound:
                self._block(node.finalbody, bound)
            final = self._block(node.finalbody, after if after is not None else bound)
            return None if after is None or final is None else final
        self._check(reads(node), bound)
        if isinstance(node, syntax.Delete):
            self._check(writes(node), bound)  # `del y` raises if y is unbound, as a read does
            return bound - writes(node)
        return bound | writes(node)


def deleted_names(stmts) -> set:
    return _deleted(stmts)


def _deleted(stmts) -> set:
    """Names a ``del`` in ``stmts`` unbinds (not looking into nested functions)."""
    out = set()
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, syntax.Delete):
            for t in node.targets:
                out |= target_names(t) if isinstance(t, (syntax.Name, syntax.Tuple, syntax.List)) else set()
        elif not isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            for field in syntax.BLOCK_FIELDS:  # `del` is a statement: expressions hold none
                block = getattr(node, field, None)
                if block.__class__ is list:
                    for child in block:
                        stack.extend(
                            child.body if isinstance(child, (syntax.ExceptHandler, syntax.match_case)) else (child,)
                        )
    return out


def _has_own_break(stmts) -> bool:
    """Whether a loop body holds a ``break`` of its own (not looking into nested loops, whose
    ``break`` is theirs, nor into functions)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, syntax.Break):
            return True
        if isinstance(node, (syntax.For, syntax.While)):
            stack.extend(node.orelse)
        elif not isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            stack.extend(syntax.child_statements(node))  # a `break` is a statement
    return False
