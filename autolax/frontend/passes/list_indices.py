"""A list written in an index (NumPy's advanced index) becomes an index array, which JAX
takes (it refuses a list):

    a[[k, p]] = a[[p, k]]       ->   a[ops.index_list([k, p])] = a[ops.index_list([p, k])]
    b = a[:, [0, 2]]            ->   b = a[:, ops.index_list([0, 2])]

``ops.index_list`` gives back the list itself unless every item is an integer or a bool
(``Callable[[int], int]`` stays as it is), so a Python list or a dict indexed by a list
raises Python's ``TypeError`` still.
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax

# Runs where an index holds a list literal (``pipeline.features``).
NEEDS = frozenset({"list_index"})

# Before / after (tests/frontend/test_pass_examples.py runs them).
EXAMPLES = (
    (
        """\
        def f(a, k, p):
            a[[k, p]] = a[[p, k]]
            return a[:, [0, 2]]
        """,
        """\
        def f(a, k, p):
            a[ops.index_list([k, p])] = a[ops.index_list([p, k])]
            return a[:, ops.index_list([0, 2])]
        """,
    ),
)


def is_list_index(index) -> bool:
    """Whether a subscript's index is a list literal or a tuple holding one."""
    return index.__class__ is syntax.List or (
        index.__class__ is syntax.Tuple and any(e.__class__ is syntax.List for e in index.elts)
    )


class _Transformer(anno.ProgramTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _wrapped(self, node):
        if node.__class__ is not syntax.List or not node.elts or isinstance(node.ctx, syntax.Store):
            return node
        return syntax.copy_location(syntax.call(f"{self.ctx.ops}.index_list", [node]), node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, syntax.Del) or not is_list_index(node.slice):
            return node
        if node.slice.__class__ is syntax.Tuple:
            node.slice.elts = [self._wrapped(e) for e in node.slice.elts]
        else:
            node.slice = self._wrapped(node.slice)
        return node


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
