"""A ``for i in range(...)`` loop whose body appends in one branch of ``if i < C`` is split
at ``C`` (index-set splitting), so each part appends the same number of items on every
iteration and both parts are staged:

    for i in range(n):                  split = ops.range_split(0, n, lambda: WARMUP, False)
        x = step(x)                     for i in range(0, split):
        if i < WARMUP:           ->         x = step(x)
            x = adapt(x)                    x = adapt(x)
        else:                           for i in range(split, n):
            samples.append(x)               x = step(x)
                                            samples.append(x)

Without the split the ``if`` would have a traced condition (the loop index) and branches
that build lists of different lengths: the loop could not be staged and would be unrolled.
``C`` must not change in the loop (names the body does not assign, constants and arithmetic
of them); it is evaluated once, and only when the loop runs at all. Only loops with a unit
step, no ``break`` / ``continue`` / ``return`` / ``else`` and an index the body does not
assign are split; after the two loops ``i`` holds the last index, as in Python.
"""

from __future__ import annotations

import copy

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax

# Runs where the function appends (``pipeline.features``): it splits only loops that do.
NEEDS = frozenset({"append"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, n, samples):
            for i in range(n):
                x = step(x)
                if i < WARMUP:
                    x = adapt(x)
                else:
                    samples.append(x)
            return samples
        """,
        """\
        def f(x, n, samples):
            split = ops.range_split(0, n, lambda: WARMUP, False)
            for i in range(0, split):
                x = step(x)
                x = adapt(x)
            for i in range(split, n):
                x = step(x)
                samples.append(x)
            return samples
        """,
    ),
)

# `i OP C` with the loop index on the left: (low indices take the `if` branch, C is included)
_LEFT = {syntax.Lt: (True, False), syntax.LtE: (True, True), syntax.Gt: (False, True), syntax.GtE: (False, False)}
# `C OP i`, the same comparisons mirrored (`C > i` is `i < C`)
_RIGHT = {syntax.Gt: (True, False), syntax.GtE: (True, True), syntax.Lt: (False, True), syntax.LtE: (False, False)}
_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _walk_scope(nodes):
    """The nodes under ``nodes``, not entering nested functions or classes."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(syntax.iter_child_nodes(node))


def _jumps_out(body) -> bool:
    """Does ``body`` leave the loop it is in early (``return``, or a ``break`` / ``continue``
    not inside a nested loop)?"""
    stack = [(s, False) for s in body]
    while stack:
        node, nested = stack.pop()
        if isinstance(node, (syntax.Return, syntax.Yield, syntax.YieldFrom)):
            return True
        if isinstance(node, (syntax.Break, syntax.Continue)) and not nested:
            return True
        if isinstance(node, _SCOPES):
            continue
        inner = nested or isinstance(node, (syntax.For, syntax.While, syntax.AsyncFor))
        stack.extend((child, inner) for child in syntax.iter_child_nodes(node))
    return False


def _assigned(body) -> set[str]:
    return {n.id for n in _walk_scope(body) if isinstance(n, syntax.Name) and not isinstance(n.ctx, syntax.Load)}


def _invariant(expr, assigned) -> bool:
    """Is ``expr`` a value the loop cannot change (constants, names it does not assign, and
    arithmetic of them)?"""
    if isinstance(expr, syntax.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    if isinstance(expr, syntax.Name):
        return expr.id not in assigned
    if isinstance(expr, syntax.UnaryOp) and isinstance(expr.op, (syntax.USub, syntax.UAdd)):
        return _invariant(expr.operand, assigned)
    if isinstance(expr, syntax.BinOp) and isinstance(expr.op, (syntax.Add, syntax.Sub, syntax.Mult, syntax.FloorDiv)):
        return _invariant(expr.left, assigned) and _invariant(expr.right, assigned)
    return False


def _appends(stmts) -> bool:
    return any(isinstance(n, syntax.Attribute) and n.attr == "append" for n in _walk_scope(stmts))


def _same_appends(a, b) -> bool:
    """Do the branches ``a`` and ``b`` append to the same lists the same number of times,
    each an unconditional ``lst.append(...)`` statement of the branch itself?"""

    def top(stmts):
        return sorted(
            s.value.func.value.id
            for s in stmts
            if isinstance(s, syntax.Expr)
            and isinstance(s.value, syntax.Call)
            and isinstance(s.value.func, syntax.Attribute)
            and s.value.func.attr == "append"
            and isinstance(s.value.func.value, syntax.Name)
        )

    def count(stmts):
        return sum(isinstance(n, syntax.Attribute) and n.attr == "append" for n in _walk_scope(stmts))

    return top(a) == top(b) and len(top(a)) == count(a) and len(top(b)) == count(b)


def _boundary(test, index, assigned):
    """For ``if test`` with ``test`` comparing the loop index to an invariant: (bound, low
    indices take the `if` branch, bound included); else None."""
    if not (isinstance(test, syntax.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, type(test.ops[0]), test.comparators[0]
    if isinstance(left, syntax.Name) and left.id == index and op in _LEFT and _invariant(right, assigned):
        return (right, *_LEFT[op])
    if isinstance(right, syntax.Name) and right.id == index and op in _RIGHT and _invariant(left, assigned):
        return (left, *_RIGHT[op])
    return None


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, fn_node):
        self.ctx = ctx
        self.locals = local_names(fn_node)

    def visit_FunctionDef(self, node):
        inner = _Transformer(self.ctx, node)
        node.body = inner.visit_block(node.body)
        return node

    def visit_For(self, node):
        self.generic_visit(node)  # inner loops first
        split = self._split(node)
        return node if split is None else split

    def _range_bounds(self, node):
        it = node.iter
        if not (
            isinstance(it, syntax.Call)
            and isinstance(it.func, syntax.Name)
            and it.func.id == "range"
            and not it.keywords
            and 1 <= len(it.args) <= 2
            and not any(isinstance(a, syntax.Starred) for a in it.args)
        ):
            return None
        if self.ctx.resolve("range", self.locals) is not range:
            return None
        if len(it.args) == 1:
            return syntax.constant(0), it.args[0]
        return it.args[0], it.args[1]

    def _split(self, node):
        if node.orelse or not isinstance(node.target, syntax.Name):
            return None
        index = node.target.id
        if not any(
            isinstance(s, syntax.If)
            and isinstance(s.test, syntax.Compare)
            and any(isinstance(n, syntax.Name) and n.id == index for n in (s.test.left, *s.test.comparators))
            for s in node.body
        ):
            return None  # the common case, decided without walking the body
        bounds = self._range_bounds(node)
        if bounds is None or _jumps_out(node.body):
            return None
        assigned = _assigned(node.body)
        if index in assigned:
            return None
        found = [
            (k, stmt, b)
            for k, stmt in enumerate(node.body)
            if isinstance(stmt, syntax.If)
            and _appends([stmt])
            and (b := _boundary(stmt.test, index, assigned | {index})) is not None
        ]
        if len(found) != 1:
            return None
        k, if_stmt, (bound, low_takes_if, inclusive) = found[0]
        if _same_appends(if_stmt.body, if_stmt.orelse):
            return None  # each iteration appends the same either way: the loop stages as it is
        prelude = []
        start, stop = bounds
        if not (isinstance(start, syntax.Constant) and isinstance(stop, (syntax.Constant, syntax.Name))):
            # Python evaluates range's arguments once, before the loop: so do the two loops.
            ids = [self.ctx.namer.new("start"), self.ctx.namer.new("stop")]
            prelude = [
                syntax.copy_location(syntax.assign(syntax.name(i, "store"), v), node)
                for i, v in zip(ids, (start, stop))
            ]
            start, stop = syntax.name(ids[0]), syntax.name(ids[1])
        point = self.ctx.namer.new("split")
        if_branch, else_branch = list(if_stmt.body), list(if_stmt.orelse)
        low, high = (if_branch, else_branch) if low_takes_if else (else_branch, if_branch)
        first, second = node, copy.deepcopy(node)
        first.body = node.body[:k] + low + node.body[k + 1 :] or [syntax.copy_location(syntax.Pass(), node)]
        second.body = second.body[:k] + copy.deepcopy(high) + second.body[k + 1 :] or [
            syntax.copy_location(syntax.Pass(), node)
        ]
        first.iter = syntax.copy_location(syntax.call("range", [start, syntax.name(point)]), node.iter)
        second.iter = syntax.copy_location(syntax.call("range", [syntax.name(point), copy.deepcopy(stop)]), node.iter)
        compute = syntax.assign(
            syntax.name(point, "store"),
            syntax.call(
                f"{self.ctx.ops}.range_split",
                [copy.deepcopy(start), copy.deepcopy(stop), syntax.lambda_(bound), syntax.constant(inclusive)],
            ),
        )
        return [*prelude, syntax.copy_location(compute, node), first, second]


def transform(fn_node, ctx):
    return _Transformer(ctx, fn_node).visit(fn_node)
