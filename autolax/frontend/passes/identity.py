"""``is`` / ``is not`` go through ops that know a traced value has no Python identity
(``autolax.runtime.ops.logical.is_``).

    done is False           ->   ops.is_(done, False, 'done is False', flag='done')
    node is not last        ->   ops.is_not(node, last, 'node is not last')

A traced value stands for an array, so ``tracer is False`` answers a question about the
tracer, not about the value Python would hold. Where every assignment to ``done`` in the
function is one of the literals ``True``, ``False``, ``None`` (``flag='done'``), a traced
``done`` can only be a flag a staged ``if`` or loop set (``done = True`` under a traced
condition): Python's value is one of those literals, so ``done is False`` means
``done == False``, which the op stages. A traced value compared with an object that is not
a bool, a number or an array (``x is SENTINEL``) is not it. Otherwise a traced operand is
refused (``TracedValueError``): whether Python's object is ``False`` depends on where it
came from. ``x is None`` is left as it is: a traced value is never ``None``, which is
Python's answer.
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax

# Runs where there is an ``is`` / ``is not`` (``pipeline.features``).
# (`lowered`: also where a jump lowering moved a loop's exit test, `if x in (a, b): return x`,
# into an annotation, which ``features`` does not see)
NEEDS = frozenset({"identity", "lowered"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, node, last):
            done = False
            if x > 0:
                done = True
            a = done is False
            b = node is not last
            c = node is None
            return a, b, c
        """,
        """\
        def f(x, node, last):
            done = False
            if x > 0:
                done = True
            a = ops.is_(done, False, 'done is False', flag='done')
            b = ops.is_not(node, last, 'node is not last')
            c = node is None
            return (a, b, c)
        """,
    ),
)

_LITERALS = (True, False, None)


def _is_literal(node, values=_LITERALS) -> bool:
    return isinstance(node, syntax.Constant) and any(node.value is v for v in values)


def literal_flags(fn_node) -> set[str]:
    """The names every binding of which in ``fn_node`` (nested functions included: a
    conservative reading) is ``name = True`` / ``False`` / ``None``."""
    literal, other = set(), set()
    literal_targets = set()
    for node in syntax.walk(fn_node):
        if isinstance(node, (syntax.Assign, syntax.AnnAssign)) and node.value is not None and _is_literal(node.value):
            for target in node.targets if isinstance(node, syntax.Assign) else [node.target]:
                if isinstance(target, syntax.Name):
                    literal_targets.add(id(target))
                    literal.add(target.id)
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.Name) and isinstance(node.ctx, (syntax.Store, syntax.Param)):
            if id(node) not in literal_targets:
                other.add(node.id)
        elif isinstance(node, (syntax.Global, syntax.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            other.add(node.name)
        elif isinstance(node, (syntax.Import, syntax.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (syntax.MatchAs, syntax.MatchStar)) and node.name:
            other.add(node.name)
        elif isinstance(node, syntax.MatchMapping) and node.rest:
            other.add(node.rest)
    return literal - other


class _Transformer(anno.ProgramTransformer):
    def __init__(self, ctx, flags):
        self.ctx = ctx
        self.flags = flags

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (syntax.Is, syntax.IsNot)):
            return node
        left, right = node.left, node.comparators[0]
        if _is_literal(left, (None,)) or _is_literal(right, (None,)):
            return node  # Python's answer: a traced value is never None
        keywords = None
        for name, other in ((left, right), (right, left)):
            if isinstance(name, syntax.Name) and name.id in self.flags and _is_literal(other, (True, False)):
                keywords = {"flag": syntax.constant(name.id)}
        op = "is_" if isinstance(node.ops[0], syntax.Is) else "is_not"
        text = syntax.unparse(node).strip()
        call = syntax.call(f"{self.ctx.ops}.{op}", [left, right, syntax.constant(text)], keywords)
        return syntax.copy_location(call, node)


def transform(fn_node, ctx):
    return _Transformer(ctx, literal_flags(fn_node)).visit(fn_node)
