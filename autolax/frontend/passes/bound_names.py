"""Records the local names Python itself always binds before reading them.

Jump lowering (the next passes) turns ``return`` / ``break`` / ``continue`` into flags and
guards, which makes paths on which a variable stays unbound although Python never reads
it there:

    if a > 0:
        if c > 0:
            return 1.0        # this path leaves 'd' unbound ...
        d = 2.0
    else:
        d = 3.0
    return d + a              # ... but never gets here

A staged ``if`` must give each of its outputs a value on both sides. For a name that every
read finds bound in the code as written (``analysis.definedness.BoundBeforeReads``), the
unbound side can only be such a jumping path, so the ``if`` takes the other side's type
instead of raising ``UndefinedVariableError``. Names Python might read unbound keep the
error.

The pass only records (``ctx.always_bound``): its ``EXAMPLES`` leave the code as it is, and
those of ``passes.unbound_reads`` show what the record changes (``d + a`` above is not
wrapped in ``ops.assigned``).
"""

from __future__ import annotations

from autolax.frontend.analysis.definedness import BoundBeforeReads
from autolax.frontend.transpile import syntax

# Runs where a jump will be lowered (``pipeline.features``): only jump lowering makes the
# paths that look unbound.
NEEDS = frozenset({"Break", "Continue", "EarlyReturn", "Raise"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(a, c):
            if a > 0:
                if c > 0:
                    return 1.0
                d = 2.0
            else:
                d = 3.0
            return d + a
        """,
        """\
        def f(a, c):
            if a > 0:
                if c > 0:
                    return 1.0
                d = 2.0
            else:
                d = 3.0
            return d + a
        """,
    ),
)


def transform(fn_node, ctx):
    safe, unsafe = set(), set()
    for node in syntax.walk_statements(fn_node):
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
            analysis = BoundBeforeReads(node)
            safe |= analysis.safe
            unsafe |= analysis.unsafe
    ctx.always_bound |= safe - unsafe  # names are per function: a clash keeps the error
    return fn_node
