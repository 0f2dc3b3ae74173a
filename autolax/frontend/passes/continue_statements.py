"""Lowers ``continue`` to a flag; the rest of the iteration runs only when it is unset.

    for x in xs:                      for x in xs:
        if x < 0:                         if not x < 0:
            continue           ->             total += x
        total += x

When the skipped statements cannot simply move into an ``else`` branch, a flag reset at the
top of each iteration guards them: ``continue_ = False`` ... ``if not continue_: ...``.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.jumps import BlockLowering, flag_assign, loops_in_walk_order, remove_flag_assignments

# Runs where there is a ``continue`` (``pipeline.features``).
NEEDS = frozenset({"Continue"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    continue
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if not x < 0:
                    total += x
            return total
        """,
    ),
    (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    total -= 1
                    if x < -10:
                        continue
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                continue_ = False
                if x < 0:
                    total -= 1
                    if x < -10:
                        continue_ = True
                if not continue_:
                    total += x
            return total
        """,
    ),
)


def transform(fn_node, ctx):
    for loop in loops_in_walk_order(fn_node):
        if not isinstance(loop, (syntax.For, syntax.While)):
            continue
        probe = BlockLowering(lambda s: isinstance(s, syntax.Continue), None, "", into_loops=False)
        if not probe.contains_jump(loop.body):
            continue
        flag = ctx.namer.new("continue_")
        ctx.descriptions[flag] = "the `continue` flag"
        lowering = BlockLowering(
            is_jump=lambda s: isinstance(s, syntax.Continue),
            replace=lambda s, flag=flag: [flag_assign(flag, True)],
            flag=flag,
            into_loops=False,
        )
        body = lowering.block(loop.body).stmts
        if lowering.flag_read:
            loop.body = [flag_assign(flag, False, loop.body[0])] + body
        else:
            loop.body = body
            remove_flag_assignments(loop, flag)
    return fn_node
