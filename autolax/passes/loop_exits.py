"""Moves the work of an exit at the end of a loop body to after the loop.

A loop whose body ends with ``if c: ...; break`` (or ``return``) needs the test's value to
stop, but not the statements the ``if`` runs before leaving: they see the same state after
the loop as in its last iteration (what follows the exit in the body is nothing, and the
loop target keeps its last value). So the loop only records the test, as a hand-written
``while_loop`` puts its exit test in its predicate, and carries no flag and no value chosen
with a ``select`` in every iteration:

    for step in range(n):             exit_ = False
        x = x + dt * v                for step in range(n):       # stops once exit_ is set
        if abs(x) > limit:    ->          x = x + dt * v
            return step, x                exit_ = abs(x) > limit
    return n, x                       if exit_:
                                          return step, x
                                      return n, x

The loop's ``else`` runs when it ends without the exit: ``if exit_: ... else: <else>``. The
jump-lowering passes after this one see a ``return`` outside the loop and a loop with one
more test (a ``for`` gets it as its ``anno.EXTRA_TEST``, a ``while`` as ``not exit_ and``).

Only tests that produce a bool are recorded (comparisons, ``not``, ``and``/``or`` of them):
storing another value (a float tested for truth) would change the carried type. A body that
also leaves the loop elsewhere keeps the flag lowering.
"""

from __future__ import annotations

from autolax.analysis.activity import target_names, writes
from autolax.analysis.definedness import Definedness
from autolax.passes.jumps import add_loop_test, flag_assign
from autolax.transpile import syntax

_EXITS = (syntax.Break, syntax.Return)
_LOOPS = (syntax.For, syntax.While)
_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _yields_bool(test) -> bool:
    if isinstance(test, syntax.Compare):
        return True
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        return True
    if isinstance(test, syntax.BoolOp):
        return all(_yields_bool(v) for v in test.values)
    return False


def _has(stmts, kinds, into_loops: bool) -> bool:
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _LOOPS) and not into_loops:
            stack.extend(node.orelse)  # a nested loop's `else` runs in this loop
            continue
        stack.extend(syntax.iter_child_nodes(node))
    return False


def _trailing_exit(loop):
    """The ``if`` that ends ``loop``'s body and leaves the loop, when it is the only exit."""
    if not loop.body:
        return None
    last = loop.body[-1]
    if not (isinstance(last, syntax.If) and not last.orelse and last.body and _yields_bool(last.test)):
        return None
    *work, jump = last.body
    if not isinstance(jump, _EXITS) or _has(work, (syntax.Break, syntax.Continue, syntax.Return), True):
        return None
    if any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(last.test)):
        return None  # a test that binds a name would bind it in another function once staged
    rest = loop.body[:-1]
    if _has(rest, syntax.Break, False) or _has(rest, syntax.Return, True):
        return None
    return last


class _BoundReads(syntax.NodeTransformer):
    """Reads ``ops.bound(x)`` for the ``names`` the loop may be the first to bind: after a
    staged loop over a traced range they hold a ``MaybeBound``, which the exit proves set."""

    def __init__(self, names, ops):
        self.names = names
        self.ops = ops

    def visit_Name(self, node):
        if isinstance(node.ctx, syntax.Load) and node.id in self.names:
            return syntax.copy_location(syntax.call(f"{self.ops}.bound", [node]), node)
        return node

    def visit_Lambda(self, node):
        inner = _BoundReads(self.names - set(syntax.param_names(node.args)), self.ops)
        node.body = inner.visit(node.body)
        return node

    def visit_FunctionDef(self, node):
        return node  # reads when called, maybe after something rebinds the name

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, defined):
        self.ctx = ctx
        self.defined = defined  # Definedness of the function as written, before any rewrite

    def _visit_loop(self, loop):
        self.generic_visit(loop)  # inner loops first
        exit_if = _trailing_exit(loop)
        if exit_if is None:
            return loop
        flag = self.ctx.namer.new("exit_")
        self.ctx.descriptions[flag] = "the loop's exit test"
        record = syntax.copy_location(syntax.assign(syntax.name(flag, "store"), exit_if.test), exit_if)
        loop.body = loop.body[:-1] + [record]
        add_loop_test(loop, syntax.unary_not(syntax.name(flag)))
        *work, jump = exit_if.body
        after = work + ([jump] if isinstance(jump, syntax.Return) else [])
        first_bound = writes(loop) | (target_names(loop.target) if isinstance(loop, syntax.For) else set())
        if loop in self.defined.before:
            first_bound -= self.defined.before[loop][0]
        reads = _BoundReads(first_bound, self.ctx.ops)
        after = [reads.visit(stmt) for stmt in after]
        orelse, loop.orelse = loop.orelse, []
        if not after and not orelse:
            return [flag_assign(flag, False, loop), loop]
        exit_if.test = syntax.copy_location(syntax.name(flag), exit_if.test)
        exit_if.body = after or [syntax.copy_location(syntax.Pass(), exit_if)]
        exit_if.orelse = orelse
        return [flag_assign(flag, False, loop), loop, exit_if]

    visit_For = _visit_loop
    visit_While = _visit_loop


def transform(fn_node, ctx):
    return _Transformer(ctx, Definedness(fn_node)).visit(fn_node)
