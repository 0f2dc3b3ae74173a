"""Searching a list by value goes through ops that stage what Python would decide from a
traced comparison (``autolax.runtime.ops.search``), and refuse clearly what cannot be staged.

    x in stack              ->   ops.is_in(x, stack, 'stack')
    x not in stack          ->   ops.not_in(x, stack, 'stack')
    x in [24, 12]           ->   ops.is_in(x, [24, 12], '[24, 12]')
    stack.count(x)          ->   ops.count(stack, x, 'stack')
    stack.index(x)          ->   ops.index(stack, x, 'stack')
    stack.remove(x)         ->   stack.remove(ops.sought(stack, x, 'stack'))

Python compares ``x`` with the items in turn (``item is x or item == x``) and tests each
answer: with a traced item or ``x`` the answer is traced, and JAX's
``TracerBoolConversionError`` would come out of the list's own method. The search ops
combine traced answers into a traced result; ``ops.sought`` (for ``remove``, and ``index``
/ ``count`` with more arguments) makes the same comparisons first and returns ``x``
unchanged, or raises ``TracedComparisonError`` naming the list, the line and the fix.

Only a plain local or global name as the searched value's container (evaluating it twice
is harmless), or a list or tuple display (``x in (a, b)``: its items are evaluated once,
before the search, as Python evaluates them).
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax

# Runs where the function searches by value: ``in``, ``.remove`` / ``.index`` / ``.count``
# (``pipeline.features``).
# (`lowered`: also where a jump lowering moved a loop's exit test, `if x in (a, b): return x`,
# into an annotation, which ``features`` does not see)
NEEDS = frozenset({"membership", "lowered"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, stack):
            a = x in stack
            b = x not in stack
            c = x in [24, 12]
            d = stack.count(x)
            e = stack.index(x)
            stack.remove(x)
            return a, b, c, d, e
        """,
        """\
        def f(x, stack):
            a = ops.is_in(x, stack, 'stack')
            b = ops.not_in(x, stack, 'stack')
            c = ops.is_in(x, [24, 12], '[24, 12]')
            d = ops.count(stack, x, 'stack')
            e = ops.index(stack, x, 'stack')
            stack.remove(ops.sought(stack, x, 'stack'))
            return (a, b, c, d, e)
        """,
    ),
)

SEARCHING_METHODS = frozenset({"remove", "index", "count"})
STAGED_METHODS = frozenset({"index", "count"})  # with one argument: ops of the same name


class _Transformer(anno.ProgramTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _sought(self, container, value):
        call = syntax.call(f"{self.ctx.ops}.sought", [syntax.name(container.id), value, syntax.constant(container.id)])
        return syntax.copy_location(call, value)

    def _op(self, op, args, node):
        return syntax.copy_location(syntax.call(f"{self.ctx.ops}.{op}", args), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (syntax.In, syntax.NotIn)):
            container = node.comparators[0]
            op = "is_in" if isinstance(node.ops[0], syntax.In) else "not_in"
            if isinstance(container, syntax.Name):
                return self._op(op, [node.left, syntax.name(container.id), syntax.constant(container.id)], node)
            if isinstance(container, (syntax.List, syntax.Tuple)) and not any(
                isinstance(e, syntax.Starred) for e in container.elts
            ):
                # A list or tuple display is built once, as Python builds it, then searched.
                return self._op(op, [node.left, container, syntax.constant(syntax.unparse(container))], node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, syntax.Attribute)
            and func.attr in SEARCHING_METHODS
            and isinstance(func.value, syntax.Name)
            and func.value.id != self.ctx.ops
            and node.args
            and not node.keywords
            and not any(isinstance(a, syntax.Starred) for a in node.args)
        ):
            if func.attr in STAGED_METHODS and len(node.args) == 1:
                return self._op(
                    func.attr, [syntax.name(func.value.id), node.args[0], syntax.constant(func.value.id)], node
                )
            node.args = [self._sought(func.value, node.args[0]), *node.args[1:]]
        return node


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
