"""Lowers ``break`` to a flag that also ends the loop, and ``for``/``while ... else``.

    while x > 1:                      break_ = False
        if x % 7 == 0:                while not break_ and x > 1:
            break              ->         if x % 7 == 0:
        x = x // 2                            break_ = True
    else:                                 else:
        x = -1                                x = x // 2
                                      if not break_:
                                          x = -1

For ``for`` loops the exit test is attached to the loop (``anno.EXTRA_TEST``, shown as a
comment in ``EXAMPLES``: ``for x in xs:  # test: not break_``) and becomes the ``loop_test``
of the staged loop. A ``while`` loop that opens with ``if c: break`` (and breaks nowhere
else) gets ``and not c`` in its test instead, as a person writes it by hand:

    while n < max_iter:               while n < max_iter and (not x * x + y * y > 4.0):
        if x * x + y * y > 4.0:  ->       ...
            break
        ...
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.jumps import BlockLowering, add_loop_test, flag_assign

# Runs where there is a ``break`` or a loop ``else`` (``pipeline.features``).
NEEDS = frozenset({"Break", "LoopElse"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            while x > 1:
                if x % 7 == 0:
                    break
                x = x // 2
            else:
                x = -1
            return x
        """,
        """\
        def f(x):
            break_ = False
            while not break_ and x > 1:
                if x % 7 == 0:
                    break_ = True
                else:
                    x = x // 2
            if not break_:
                x = -1
            return x
        """,
    ),
    (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    break
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0
            break_ = False
            for x in xs:  # test: not break_
                if x < 0:
                    break_ = True
                else:
                    total += x
            return total
        """,
    ),
    (
        """\
        def f(x, y, n, max_iter):
            while n < max_iter:
                if x * x + y * y > 4.0:
                    break
                x, y = x * x - y * y, 2.0 * x * y
                n += 1
            return n
        """,
        """\
        def f(x, y, n, max_iter):
            while n < max_iter and (not x * x + y * y > 4.0):
                x, y = (x * x - y * y, 2.0 * x * y)
                n += 1
            return n
        """,
    ),
)


def _is_break(stmt):
    return isinstance(stmt, syntax.Break)


def _exit_test_first(loop, probe) -> bool:
    """A ``while`` loop (no ``else``) whose body opens with ``if c: break`` (nothing else in
    that ``if``) and breaks nowhere else."""
    if not isinstance(loop, syntax.While) or loop.orelse or not loop.body:
        return False
    first = loop.body[0]
    # A test that binds a name (`:=`, placed here by the desugaring of `while (y := ...)`) must
    # stay a statement of the body: the loop's test runs in a function of its own.
    return (
        isinstance(first, syntax.If)
        and not first.orelse
        and len(first.body) == 1
        and isinstance(first.body[0], syntax.Break)
        and not probe.contains_jump(loop.body[1:])
        and not any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(first.test))
    )


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _visit_loop(self, loop):
        self.generic_visit(loop)  # inner loops first; their breaks are their own
        probe = BlockLowering(_is_break, None, "", into_loops=False)
        if _exit_test_first(loop, probe):
            # `while c0: if c: break` -> `while c0 and not c:` -- the exit test is part of the
            # loop's test (evaluated in the same order as Python does), and no flag is carried.
            exit_test = loop.body[0].test
            loop.test = syntax.copy_location(syntax.bool_and([loop.test, syntax.unary_not(exit_test)]), loop.test)
            loop.body = loop.body[1:] or [syntax.copy_location(syntax.Pass(), loop)]
            return loop
        if not probe.contains_jump(loop.body):
            if loop.orelse:
                orelse, loop.orelse = loop.orelse, []
                return [loop] + orelse
            return loop
        flag = self.ctx.namer.new("break_")
        self.ctx.descriptions[flag] = "the `break` flag"
        lowering = BlockLowering(
            is_jump=_is_break,
            replace=lambda s: [flag_assign(flag, True)],
            flag=flag,
            into_loops=False,
        )
        loop.body = lowering.block(loop.body).stmts
        add_loop_test(loop, syntax.unary_not(syntax.name(flag)))
        out = [flag_assign(flag, False, loop), loop]
        if loop.orelse:
            orelse, loop.orelse = loop.orelse, []
            out.append(syntax.copy_location(syntax.if_stmt(syntax.unary_not(syntax.name(flag)), orelse), orelse[0]))
        return out

    visit_For = _visit_loop
    visit_While = _visit_loop


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
