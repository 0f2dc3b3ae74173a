"""Moves the work of an exit that opens or ends a loop body to after the loop.

An exit that opens the body (``if c: ...; break`` first) is tested in the loop's predicate
on the state each iteration starts with, whatever ``c`` reads (loop rotation): a ``for``
gets it as its item test (``anno.EXTRA_TEST``, with ``anno.ITEM_TEST`` naming the flag that
says it stopped the loop: ``ops.for_range``'s ``test: k``), a ``while t`` becomes
``while t and not c`` and, after it, ``t`` still holding says the exit stopped it (a loop's
annotations are shown as a comment, as in ``EXAMPLES``):

    for k in range(n):                for k in range(n):  # item test: not abs(x) > limit; stopped: exit_
        if abs(x) > limit:    ->          x = x * x * 0.5 + z
            return k, x               if exit_:
        x = x * x * 0.5 + z               return (ops.bound(k), x)
    return n, x                       return (n, x)

    while x < n:                      while x < n and (not abs(x) > limit):
        if abs(x) > limit:    ->          x = x * x * 0.5 + z
            return x                  if x < n:
        x = x * x * 0.5 + z               return x
    return -x                         return -x

The predicate also runs after the last iteration, where Python does not test: the runtime
lets a test run there only where that cannot tell (``plan.evaluate_anyway``), else it tests
under a ``lax.cond`` (``ops.loops``). After a staged loop over a traced range, a name the
loop binds holds a ``MaybeBound``, which the exit proves set: ``ops.bound``, no run-time check.

A loop whose body ends with ``if c: ...; break`` (or ``return``) needs the test's value to
stop, but not the statements the ``if`` runs before leaving: they see the same state after
the loop as in its last iteration (what follows the exit in the body is nothing, and the
loop target keeps its last value). So the loop only records the test, as a hand-written
``while_loop`` puts its exit test in its predicate, and carries no value chosen with a
``select`` in every iteration. A ``for`` over a name whose test reads only what is bound
before the loop or by the body's own block tests it after each iteration, on the state the
iteration leaves (``anno.TEST_AFTER``, ``ops.for_range``'s ``test: after``), and carries not
even a flag:

    for step in range(n):             for step in range(n):  # test after: abs(x) > limit; stopped: exit_
        x = x + dt * v                    x = x + dt * v
        if abs(x) > limit:    ->      if exit_:
            return step, x                return (ops.bound(step), x)
    return n, x                       return (n, x)

Other loops (a ``while``, a test that reads the target) carry a flag that records the test:

    while t < 1.0:                    exit_ = False
        x = x + dt * v                while not exit_ and t < 1.0:
        t = t + dt            ->          x = x + dt * v
        if abs(x) > limit:                t = t + dt
            return t, x                   exit_ = abs(x) > limit
    return t, x                       if exit_:
                                          return (t, x)
                                      return (t, x)

The loop's ``else`` runs when it ends without the exit: ``if exit_: ... else: <else>``. The
jump-lowering passes after this one see a ``return`` outside the loop and, where the loop
carries the flag, one more test (a ``for`` gets it as its ``anno.EXTRA_TEST``, a ``while`` as
``not exit_ and``).

Only tests that produce a bool are recorded (comparisons, ``not``, ``and``/``or`` of them):
storing another value (a float tested for truth) would change the carried type. A body that
also leaves the loop elsewhere keeps the flag lowering.
"""

from __future__ import annotations

import types

from autolax.frontend.analysis.activity import MUTATING_METHODS, local_names, reads, target_names, writes
from autolax.frontend.analysis.definedness import Definedness
from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.jumps import add_loop_test, flag_assign
from autolax.frontend.transpile.reads import Reads
from autolax.runtime.libraries import is_library_callable

# Runs where there is a ``break`` or a ``return`` before the end (``pipeline.features``).
NEEDS = frozenset({"Break", "EarlyReturn"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, z, n, limit):
            for k in range(n):
                if abs(x) > limit:
                    return k, x
                x = x * x * 0.5 + z
            return n, x
        """,
        """\
        def f(x, z, n, limit):
            for k in range(n):  # item test: not abs(x) > limit; stopped: exit_
                x = x * x * 0.5 + z
            if exit_:
                return (ops.bound(k), x)
            return (n, x)
        """,
    ),
    (
        """\
        def f(x, v, dt, n, limit):
            for step in range(n):
                x = x + dt * v
                if abs(x) > limit:
                    return step, x
            return n, x
        """,
        """\
        def f(x, v, dt, n, limit):
            for step in range(n):  # test after: abs(x) > limit; stopped: exit_
                x = x + dt * v
            if exit_:
                return (ops.bound(step), x)
            return (n, x)
        """,
    ),
    (
        """\
        def f(x, z, n, limit):
            while x < n:
                if abs(x) > limit:
                    return x
                x = x * x * 0.5 + z
            return -x
        """,
        """\
        def f(x, z, n, limit):
            while x < n and (not abs(x) > limit):
                x = x * x * 0.5 + z
            if x < n:
                return x
            return -x
        """,
    ),
    (
        """\
        def f(x, v, dt, t, limit):
            while t < 1.0:
                x = x + dt * v
                t = t + dt
                if abs(x) > limit:
                    return t, x
            return t, x
        """,
        """\
        def f(x, v, dt, t, limit):
            exit_ = False
            while not exit_ and t < 1.0:
                x = x + dt * v
                t = t + dt
                exit_ = abs(x) > limit
            if exit_:
                return (t, x)
            return (t, x)
        """,
    ),
)

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
        stack.extend(syntax.child_statements(node))  # `kinds` are statements
    return False


# What a test run as the loop's predicate may hold: the passes after this one rewrite the
# statements of the body (calls, conditional expressions, reads of maybe-unbound names), not
# the test, which stands aside as an annotation until the loop is built.
_NOT_PLAIN = frozenset(
    {
        "IfExp",
        "Lambda",
        "ListComp",
        "SetComp",
        "DictComp",
        "GeneratorExp",
        "NamedExpr",
        "Await",
        "Yield",
        "YieldFrom",
        "Starred",
    }
)


class _Test:
    """Can a loop's opening ``if`` test run in the loop's predicate?"""

    def __init__(self, ctx, fn_node, defined):
        self.ctx = ctx
        self.local = local_names(fn_node)
        self.defined = defined

    def _static(self, node):
        if isinstance(node, syntax.Name):
            return self.ctx.resolve(node.id, self.local)
        if isinstance(node, syntax.Attribute):
            base = self._static(node.value)
            if isinstance(base, types.ModuleType):
                return getattr(base, node.attr, self.ctx.MISSING)
        return self.ctx.MISSING

    def plain(self, test, loop, also_bound=frozenset()) -> bool:
        if loop not in self.defined.before:
            return False
        for node in syntax.walk(test):
            if type(node).__name__ in _NOT_PLAIN:
                return False
            if isinstance(node, syntax.Call):
                value = self._static(node.func)
                # only library functions (`abs`, `jnp.abs`): a user's function is converted
                # when called from the body, and `print` must print once per iteration
                if value is self.ctx.MISSING or value is print or not is_library_callable(value):
                    return False
        bound = self.defined.before[loop][0] | target_names(getattr(loop, "target", None)) | also_bound
        return not (reads(test) & self.local) - bound


def _leading_exit(loop, test_check):
    """The ``if`` that opens a loop's body and leaves the loop, when it is the only exit and
    its test can run in the loop's predicate, on the state each iteration starts from (with
    the item, for a ``for`` over one name the body does not assign): what Python's test
    sees, whatever it reads. The staged predicate may evaluate the test once more than
    Python does (on the state after the last iteration); the runtime lets it only where
    that cannot tell (``plan.evaluate_anyway``) and otherwise tests under a ``lax.cond``."""
    if isinstance(loop, syntax.For) and not isinstance(loop.target, syntax.Name) or not loop.body:
        return None
    first = loop.body[0]
    if not (isinstance(first, syntax.If) and not first.orelse and first.body and _yields_bool(first.test)):
        return None
    *work, jump = first.body
    if not isinstance(jump, _EXITS) or _has(work, (syntax.Break, syntax.Continue, syntax.Return), True):
        return None
    if any(isinstance(n, (syntax.NamedExpr, syntax.Lambda)) for n in syntax.walk(first.test)):
        return None
    rest = loop.body[1:]
    if _has(rest, syntax.Break, False) or _has(rest, syntax.Return, True):
        return None
    changed = set().union(*(writes(stmt) for stmt in rest)) if rest else set()
    if isinstance(loop, syntax.For) and loop.target.id in changed:
        return None  # the runtime gives the target back
    if any(
        isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and n.func.attr in MUTATING_METHODS
        for stmt in rest
        for n in syntax.walk(stmt)
    ):
        # A list the body changes: with a traced exit its length would depend on data, and
        # the error names the user's `if` only while the `if` stays in the body.
        return None
    if not test_check.plain(first.test, loop):
        return None
    if isinstance(loop, syntax.While):
        if not loop.orelse and not work and isinstance(jump, syntax.Break):
            return None  # a bare `break`: passes.break_statements folds it into the test, whatever it reads
        # Its test runs again after the loop (`if test:`): on the state Python last tested,
        # so only a test that calls library functions.
        if not _endless(loop) and not (
            test_check.plain(loop.test, loop)
            and not any(isinstance(n, (syntax.NamedExpr, syntax.Lambda)) for n in syntax.walk(loop.test))
        ):
            return None
    return first


def _endless(loop) -> bool:
    return isinstance(loop.test, syntax.Constant) and bool(loop.test.value)


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


def _tested_after(loop, exit_if, test_check):
    """Can the test of ``exit_if``, which ends ``loop``'s body, run after each iteration on
    the carried state (``ops.for_range``'s ``test: after``)? A ``for`` over one name the body
    does not assign, a plain test that does not read that name and reads only what is bound
    before the loop or by a statement of the body's own block."""
    if not isinstance(loop, syntax.For) or not isinstance(loop.target, syntax.Name):
        return False
    rest = loop.body[:-1]
    if _has(rest, syntax.Continue, False):
        return False  # an iteration that continues skips the test: Python does not test it then
    changed = set().union(*(writes(stmt) for stmt in rest)) if rest else set()
    if loop.target.id in changed or loop.target.id in reads(exit_if.test):
        return False
    own = set()
    for stmt in rest:
        if isinstance(stmt, (syntax.Assign, syntax.AugAssign, syntax.AnnAssign)):
            own |= writes(stmt)
    return test_check.plain(exit_if.test, loop, frozenset(own))


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, fn_node):
        self.ctx = ctx
        self.fn_node = fn_node
        self.defined = self.tests = None

    def _visit_loop(self, loop):
        self.generic_visit(loop)  # inner loops first
        if not _exit_at_an_end(loop):
            return loop
        if self.defined is None:
            # Of the function as written: made at the first loop that may have an exit to
            # move, before anything is rewritten (most functions have none).
            self.defined = Definedness(self.fn_node)
            self.tests = _Test(self.ctx, self.fn_node, self.defined)
        exit_if = _leading_exit(loop, self.tests)
        if exit_if is not None and isinstance(loop, syntax.While):
            # `while t and not c:`, then `if t: <exit>` on the state it stopped with (loop
            # rotation): it stopped at the exit where `t` still holds (then `c` does). Nothing
            # is carried for the exit.
            go = syntax.copy_location(syntax.unary_not(exit_if.test), exit_if.test)
            stopped = None  # `while True`: it stops only at the exit
            if not _endless(loop):
                stopped = syntax.copy_location(syntax.deepcopy(loop.test), exit_if.test)
                go = syntax.copy_location(syntax.bool_and([loop.test, go]), loop.test)
            loop.test = go
            loop.body = loop.body[1:] or [syntax.copy_location(syntax.Pass(), exit_if)]
            return self._after(loop, exit_if, stopped, [loop], leading=True)
        if exit_if is not None:
            # The loop tests `c` with each item before its iteration and reports whether
            # that stopped it (ops.for_range's item test): nothing is carried for the exit.
            flag = self.ctx.namer.new("exit_")
            self.ctx.descriptions[flag] = "the loop's exit test"
            loop.body = loop.body[1:] or [syntax.copy_location(syntax.Pass(), exit_if)]
            anno.set(loop, anno.EXTRA_TEST, syntax.copy_location(syntax.unary_not(exit_if.test), exit_if.test))
            anno.set(loop, anno.ITEM_TEST, flag)
            return self._after(loop, exit_if, syntax.name(flag), [loop], leading=True)
        exit_if = _trailing_exit(loop)
        if exit_if is None:
            return loop
        if _tested_after(loop, exit_if, self.tests):
            # The loop tests `c` after each iteration, on the state it leaves, and reports
            # whether that stopped it: nothing is carried for the exit, not even its flag.
            flag = self.ctx.namer.new("exit_")
            self.ctx.descriptions[flag] = "the loop's exit test"
            loop.body = loop.body[:-1] or [syntax.copy_location(syntax.Pass(), exit_if)]
            anno.set(loop, anno.EXTRA_TEST, exit_if.test)  # here: the test that stops it
            anno.set(loop, anno.ITEM_TEST, flag)
            anno.set(loop, anno.TEST_AFTER, True)
            return self._after(loop, exit_if, syntax.name(flag), [loop])
        flag = self.ctx.namer.new("exit_")
        self.ctx.descriptions[flag] = "the loop's exit test"
        record = syntax.copy_location(syntax.assign(syntax.name(flag, "store"), exit_if.test), exit_if)
        loop.body = loop.body[:-1] + [record]
        add_loop_test(loop, syntax.unary_not(syntax.name(flag)))
        return self._after(loop, exit_if, syntax.name(flag), [flag_assign(flag, False, loop), loop])

    def _after(self, loop, exit_if, stopped, out, leading=False):
        """``out`` followed by ``if stopped: <what the exit did>`` (``else``: the loop's
        ``else``; ``stopped`` None: it always stopped at the exit). ``leading``: the exit
        opened the body, so it proves set only the target."""
        *work, jump = exit_if.body
        after = work + ([jump] if isinstance(jump, syntax.Return) else [])
        target = target_names(loop.target) if isinstance(loop, syntax.For) else set()
        first_bound = target if leading else writes(loop) | target
        if loop in self.defined.before:
            first_bound -= self.defined.before[loop][0]
        # After a staged loop over a traced range these names hold a `MaybeBound`, which the
        # exit proves set: `ops.bound`, no run-time check.
        bound_reads = Reads(first_bound, self.ctx.ops, op="bound")
        after = [bound_reads.visit(stmt) for stmt in after]
        orelse, loop.orelse = loop.orelse, []
        if stopped is None:
            return out + after
        if not after and not orelse:
            return out
        exit_if = syntax.copy_location(syntax.if_stmt(stopped, after or [syntax.Pass()], orelse), exit_if)
        return out + [exit_if]

    visit_For = _visit_loop
    visit_While = _visit_loop


def _exit_at_an_end(loop) -> bool:
    """Does ``loop``'s body open or end with an ``if`` that may be an exit this pass moves
    (the first, structural look of ``_leading_exit`` / ``_trailing_exit``)?"""
    for stmt in (loop.body[0], loop.body[-1]) if loop.body else ():
        if (
            isinstance(stmt, syntax.If)
            and not stmt.orelse
            and stmt.body
            and isinstance(stmt.body[-1], _EXITS)
            and _yields_bool(stmt.test)
        ):
            return True
    return False


def transform(fn_node, ctx):
    return _Transformer(ctx, fn_node).visit(fn_node)
