"""``and``, ``or``, ``not`` and chained comparisons accept traced operands.

    a and b          ->   ops.and_(a, lambda: b)
    a or b or c      ->   ops.or_(a, lambda: b, lambda: c)
    not a            ->   ops.not_(a)
    lo <= x < hi     ->   ops.and_(lo <= x, lambda: x < hi)

Later operands are wrapped in lambdas so concrete operands keep Python's short-circuiting;
each operand is still evaluated at most once (a middle operand of a chain that is not a
plain name is bound to a temporary first). Inside a ``try`` (marked by ``passes.exceptions``)
the call gets ``caught_by=(E,)``: an operand that fails while staged with an error a handler
catches is refused, not raised when the program runs.
"""

from __future__ import annotations

from autolax.frontend.analysis import activity
from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.jumps import loops_in_walk_order

# Runs where there is an ``and`` / ``or`` / ``not`` or a chained comparison, or a jump lowering
# ran (``lowered``: it may have left loop tests with a ``not`` in annotations, which
# ``pipeline.features`` does not see) -- then only on those tests (``tree=False``).
NEEDS = frozenset({"BoolOp", "Not", "Compare.chain", "lowered"})
# Reads ``anno.CAUGHT_BY_STAGED`` (set by ``exceptions``) and the loop tests the lowerings put
# in ``anno.EXTRA_TEST``.
AFTER = ("exceptions", "loop_exits", "break_statements", "caught_raises")

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(a, b, c, lo, x, hi):
            p = a and b
            q = a or b or c
            r = not a
            s = lo <= x < hi
            return p, q, r, s
        """,
        """\
        def f(a, b, c, lo, x, hi):
            p = ops.and_(a, lambda: b)
            q = ops.or_(a, lambda: b, lambda: c)
            r = ops.not_(a)
            s = ops.and_(lo <= x, lambda: x < hi)
            return (p, q, r, s)
        """,
    ),
    (
        """\
        def f(lo, x, hi):
            return lo < x + 1 < hi
        """,
        """\
        def f(lo, x, hi):
            return ops.and_(lo < (operand := (x + 1)), lambda: operand < hi)
        """,
    ),
    (
        """\
        def f(x, y):
            try:
                ok = x > 0 and 1.0 / x < y
            except ZeroDivisionError:
                ok = False
            return ok
        """,
        """\
        def f(x, y):
            try:
                ok = ops.and_(x > 0, lambda: 1.0 / x < y, caught_by=(ZeroDivisionError,))
            except ops.AutolaxError:
                raise
            except ZeroDivisionError:
                ok = False
            return ok
        """,
        ("exceptions",),
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
            for x in xs:  # test: ops.not_(break_)
                if x < 0:
                    break_ = True
                else:
                    total += x
            return total
        """,
        ("break_statements",),
    ),
)

_SIMPLE = (syntax.Name, syntax.Constant)


def _binds_name(node) -> bool:
    return any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(node))


def _caught_by(node):
    """``caught_by`` of an ``and`` / ``or`` chain inside a ``try`` (a tuple expression), or None."""
    caught = anno.get(node, anno.CAUGHT_BY_STAGED)
    return syntax.Tuple(elts=[syntax.deepcopy(t) for t in caught], ctx=syntax.Load()) if caught else None


def _keywords(caught):
    return {"caught_by": caught} if caught is not None else None


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx
        self.tests = set()  # ids of the `and` / `or` chains that are an `if` / `while` / `assert` condition

    def _visit_tested(self, node):
        # `if a and v:`: Python asks for the truth of the chain's last operand only where the
        # chain reaches it (ops.and_(..., tested=True)); so for a chain inside it, as that
        # last operand (`if a or (b and v):`) -- unless that operand is a `not` or a literal,
        # one value. (A comparison may be an array: `if n > 0 and xs >= 0.5:`.)
        chains, test = [], node.test
        while isinstance(test, syntax.BoolOp):
            chains.append(id(test))
            test = test.values[-1]
        if not isinstance(test, (syntax.UnaryOp, syntax.Constant)):
            self.tests.update(chains)
        return self.generic_visit(node)

    visit_If = visit_While = visit_Assert = _visit_tested

    def _is_op(self, node, op):
        return (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and node.func.attr == op
            and isinstance(node.func.value, syntax.Name)
            and node.func.value.id == self.ctx.ops
        )

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, syntax.And) else "or_"
        operands = []  # (expression, already a thunk?)
        caught = _caught_by(node)
        for index, value in enumerate(node.values):
            # `a and (b and c)`, `lo < x < hi and c`: one flat chain -- unless the inner chain's
            # first operand binds a temporary (`lo < (operand := f(x))`): as a later operand it
            # would become a lambda, whose `:=` binds inside the lambda, not for its siblings.
            if self._is_op(value, op) and (index == 0 or not _binds_name(value.args[0])):
                first, *rest = value.args
                operands.append((first, False))
                operands.extend((thunk, True) for thunk in rest)
                caught = caught or next((kw.value for kw in value.keywords if kw.arg == "caught_by"), None)
            else:
                operands.append((value, False))
        (first, _), *rest = operands
        args = [first] + [v if is_thunk else anno.thunk(v) for v, is_thunk in rest]
        keywords = _keywords(caught) or {}
        if id(node) in self.tests:
            keywords["tested"] = syntax.constant(True)
        return syntax.copy_location(syntax.call(f"{self.ctx.ops}.{op}", args, keywords or None), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, syntax.Not):
            return syntax.copy_location(syntax.call(f"{self.ctx.ops}.not_", [node.operand]), node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        parts = []
        left = node.left
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i < len(node.ops) - 1 and not isinstance(right, _SIMPLE):
                temp = self.ctx.namer.new("operand")
                self.ctx.temporaries.add(temp)
                bound = syntax.NamedExpr(target=syntax.name(temp, "store"), value=right)
                activity.walrus_emitted()
                parts.append(syntax.Compare(left=left, ops=[op], comparators=[bound]))
                left = syntax.name(temp)
            else:
                parts.append(syntax.Compare(left=left, ops=[op], comparators=[right]))
                left = syntax.deepcopy(right)
        first, *rest = parts
        new = syntax.call(f"{self.ctx.ops}.and_", [first] + [anno.thunk(p) for p in rest], _keywords(_caught_by(node)))
        return syntax.copy_location(new, node)


def transform(fn_node, ctx, *, tree=True):
    """``tree``: False where the tree itself holds no ``and`` / ``or`` / ``not`` / chained
    comparison (``pipeline.features``): only the loop tests in annotations are rewritten."""
    transformer = _Transformer(ctx)
    if tree:
        fn_node = transformer.visit(fn_node)
    # Loop exit tests left by break/return lowering (only loops have one: jumps.add_loop_test,
    # loop_exits), in ``walk``'s order (it names temporaries).
    for node in loops_in_walk_order(fn_node):
        extra = anno.get(node, anno.EXTRA_TEST)
        if extra is not None:
            anno.set(node, anno.EXTRA_TEST, transformer.visit(extra))
    return fn_node
