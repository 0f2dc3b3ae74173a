"""A function that ends by binding its return value to a generated name and returning it
returns the value itself:

    retval = ops.cond(x < 3, lambda: 3.0 * x ** 2, lambda: -4 * x, at='18 -> retval')
    return retval
                                   ->
    return ops.cond(x < 3, lambda: 3.0 * x ** 2, lambda: -4 * x, at='18 -> retval')

Only the last two statements of a function, with a name the conversion made (``retval``
of the return lowering): nothing runs between the binding and the ``return``, and nothing
after it, so no code can tell the difference.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.blocks import map_blocks

# Runs on every function: the name it looks for, the return lowering made.
NEEDS = None

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/frontend/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            if x < 3:
                return 3.0 * x ** 2
            return -4 * x
        """,
        """\
        def f(x):

            def if_true():
                return 3.0 * x ** 2

            def if_false():
                return -4 * x

            return ops.cond(x < 3, if_true, if_false, at='2 -> retval')
        """,
        ("return_statements", "control_flow"),
    ),
)


def _returned(stmts, generated):
    """The function body ``stmts`` with ``name = value; return name`` at its end as
    ``return value`` (``name`` made by the conversion)."""
    if len(stmts) < 2:
        return stmts
    bind, ret = stmts[-2], stmts[-1]
    if not (
        isinstance(bind, syntax.Assign)
        and len(bind.targets) == 1
        and isinstance(bind.targets[0], syntax.Name)
        and bind.targets[0].id in generated
        and isinstance(ret, syntax.Return)
        and isinstance(ret.value, syntax.Name)
        and ret.value.id == bind.targets[0].id
    ):
        return stmts
    return [*stmts[:-2], syntax.copy_location(syntax.Return(value=bind.value), bind)]


def transform(fn_node, ctx):
    generated = ctx.namer.generated

    def block(stmts):  # statements only: a function is a statement of the block it is in
        for stmt in stmts:
            if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                stmt.body = _returned(block(stmt.body), generated)
            elif not isinstance(stmt, syntax.ClassDef):
                map_blocks(stmt, block)
        return stmts

    fn_node.body = _returned(block(fn_node.body), generated)
    return fn_node
