"""``raise`` and ``assert`` decide when they run; ``try`` lets autolax's own errors through.

    raise ValueError('negative')        ->   raise ops.raising(ValueError('negative'))
    assert x > 0, 'x must be positive'  ->   ops.asserting(x > 0, lambda: 'x must be positive')
    try:                                     try:
        ...                                      ...
    except ValueError:              ->       except ops.AutolaxError:
        ...                                      raise
                                             except ValueError:
                                                 ...

A conditional expression inside such a ``try`` is marked with the handlers' types too
(``anno.CAUGHT_BY``, emitted by ``passes.ternary``): a side that fails while traced is staged
as raising, unless a handler would catch that error.

Run in Python, ``ops.raising(E)`` is ``E`` and ``ops.asserting`` is the ``assert``. Inside a
staged branch or loop body the condition that leads to them is traced: the error is raised
when the program runs and takes that path (``autolax.runtime.ops.checks``). A ``raise`` inside a
``try`` passes the handlers' exception types (``caught_by=(ValueError,)``): when a handler
would catch it, the handler would have to run depending on data, and autolax refuses --
unless ``passes.caught_raises`` (after ``break`` lowering) turns the ``raise`` into a jump
to that handler, as it does for the raises of builtin exceptions it can match. Its
refusal, like every autolax error, passes through the user's handlers. A ``finally`` that
can fail (it raises, asserts, or reads a name the ``try`` may leave unbound) adds
``ops.FinallyRaises``: its error would replace the one staged in the ``try``, and a staged
program cannot tell which comes last, so that is refused too. In the
body of a ``with``, ``ops.MaySuppress``: its context manager may suppress the error.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names, writes
from autolax.frontend.analysis.definedness import Definedness
from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.caught import distinct, handler_types, staged_caught, with_caught

# Runs where there is a ``raise``, an ``assert`` or a ``try`` (``pipeline.features``).
NEEDS = frozenset({"Raise", "Assert", "Try"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            if x < 0:
                raise ValueError('negative')
            assert x > 0, 'x must be positive'
            return x
        """,
        """\
        def f(x):
            if x < 0:
                raise ops.raising(ValueError('negative'))
            ops.asserting(x > 0, lambda: 'x must be positive')
            return x
        """,
    ),
    (
        """\
        def f(x):
            try:
                if x < 0:
                    raise ValueError('negative')
                y = g(x)
            except ValueError:
                y = 0.0
            return y
        """,
        """\
        def f(x):
            try:
                if x < 0:
                    raise ops.raising(ValueError('negative'), caught_by=(ValueError,))
                y = g(x)
            except ops.AutolaxError:
                raise
            except ValueError:
                y = 0.0
            return y
        """,
    ),
    (
        """\
        def f(x, path):
            with open(path) as log:
                if x < 0:
                    raise ValueError('negative')
            return x
        """,
        """\
        def f(x, path):
            with open(path) as log:
                if x < 0:
                    raise ops.raising(ValueError('negative'), caught_by=(ops.MaySuppress,))
            return x
        """,
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _raises(stmts, unsafe=frozenset()) -> bool:
    """Do these statements hold a ``raise`` or ``assert``, or read a name of ``unsafe`` (one
    Python may find unbound: ``UnboundLocalError``), not counting nested functions?"""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (syntax.Raise, syntax.Assert)):
            return True
        if isinstance(node, syntax.Name) and isinstance(node.ctx, syntax.Load) and node.id in unsafe:
            return True
        if not isinstance(node, _SCOPES):
            todo.extend(syntax.iter_child_nodes(node))
    return False


def _mark_conditional_expressions(node, caught):
    """Marks the conditional expressions ``node`` evaluates itself (not those of its nested
    statements or functions) with the exception types ``caught``."""
    todo = [child for child in syntax.iter_child_nodes(node) if not isinstance(child, syntax.stmt)]
    while todo:
        child = todo.pop()
        if isinstance(child, _SCOPES) or isinstance(child, (syntax.stmt, syntax.ExceptHandler)):
            continue
        if isinstance(child, syntax.IfExp):
            anno.set(child, anno.CAUGHT_BY, caught)
        todo.extend(syntax.iter_child_nodes(child))


def _mark_operands(node, caught):
    """Marks the ``and`` / ``or`` chains ``node`` evaluates itself with ``caught`` (see
    ``caught.staged_caught``; ``passes.logical`` emits it)."""
    todo = [child for child in syntax.iter_child_nodes(node) if not isinstance(child, syntax.stmt)]
    while todo:
        child = todo.pop()
        if isinstance(child, _SCOPES) or isinstance(child, (syntax.stmt, syntax.ExceptHandler)):
            continue
        if isinstance(child, syntax.BoolOp) or (isinstance(child, syntax.Compare) and len(child.ops) > 1):
            anno.set(child, anno.CAUGHT_BY_STAGED, caught)
        todo.extend(syntax.iter_child_nodes(child))


class _Transformer:
    def __init__(self, ctx, fn_node):
        self.ctx = ctx
        self.fn_node = fn_node
        self._defined = None  # (computed at the first `try` with a `finally`)
        self._locals = None

    def finally_fails(self, node) -> bool:
        """Can the ``finally`` of ``try`` statement ``node`` fail by itself after a ``raise``
        or ``assert`` in the ``try`` body: does it raise, assert, or read a local that may be
        unbound there (``acc[r]`` where ``r`` is bound after the ``raise``, or by a branch)?
        Bound there: what every path binds before the ``try``, and what the body's plain
        assignments before its first statement holding a ``raise`` / ``assert`` bind."""
        if not node.finalbody:
            return False
        if _raises(node.finalbody):
            return True
        if self._defined is None:
            self._defined = Definedness(self.fn_node)
            self._locals = local_names(self.fn_node)
        before = self._defined.before.get(node)
        if before is None:  # a statement this pass made: not analysed, so not known bound
            return _raises(node.finalbody, self._locals)
        bound = set(before[0])
        for stmt in node.body:
            if _raises([stmt]):
                break
            if isinstance(stmt, (syntax.Assign, syntax.AnnAssign)):
                bound |= writes(stmt)
        return _raises(node.finalbody, self._locals - bound)

    def block(self, stmts, caught, staged):
        out = []
        for stmt in stmts:
            out.extend(self.stmt(stmt, caught, staged))
        return out

    def stmt(self, node, caught, staged):
        ops = self.ctx.ops
        if caught and not isinstance(node, _SCOPES):
            _mark_conditional_expressions(node, caught)
        if staged and not isinstance(node, _SCOPES):
            _mark_operands(node, staged)
        if isinstance(node, syntax.FunctionDef):
            node.body = self.block(node.body, [], [])
            return [node]
        if isinstance(node, _SCOPES):
            return [node]
        if isinstance(node, syntax.Raise) and node.exc is not None:
            keywords = (
                {"caught_by": syntax.Tuple(elts=[syntax.deepcopy(t) for t in caught], ctx=syntax.Load())}
                if caught
                else None
            )
            node.exc = syntax.copy_location(syntax.call(f"{ops}.raising", [node.exc], keywords), node.exc)
            return [node]
        if isinstance(node, syntax.Assert):
            args = [node.test] + ([anno.thunk(node.msg)] if node.msg is not None else [])
            keywords = (
                {"caught_by": syntax.Tuple(elts=[syntax.deepcopy(t) for t in caught], ctx=syntax.Load())}
                if caught
                else None
            )
            return [syntax.copy_location(syntax.expr_stmt(syntax.call(f"{ops}.asserting", args, keywords)), node)]
        if isinstance(node, syntax.Try):
            inner = caught + handler_types(node.handlers)
            fails = self.finally_fails(node)
            if fails:
                inner.append(syntax.dotted(f"{ops}.FinallyRaises"))
            own = handler_types(node.handlers) + ([syntax.dotted(f"{ops}.FinallyRaises")] if fails else [])
            if own:
                anno.set(node, anno.CATCHING, own)
            blocks = staged_caught(node, staged, ops)
            node.body = self.block(node.body, inner, blocks["body"])
            node.orelse = self.block(node.orelse, caught, blocks["orelse"])
            node.finalbody = self.block(node.finalbody, caught, blocks["finalbody"])
            for handler in node.handlers:
                handler.body = self.block(handler.body, caught, blocks["handlers"])
            if node.handlers:
                passthrough = syntax.ExceptHandler(
                    type=syntax.dotted(f"{ops}.AutolaxError"), name=None, body=[syntax.Raise(exc=None, cause=None)]
                )
                node.handlers = [syntax.copy_location(passthrough, node.handlers[0])] + node.handlers
            return [node]
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            node.body = self.block(
                node.body, distinct(caught + [syntax.dotted(f"{ops}.MaySuppress")]), with_caught(staged)
            )
            return [node]
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], syntax.stmt):
                setattr(node, field, self.block(block, caught, staged))
        return [node]


def transform(fn_node, ctx):
    fn_node.body = _Transformer(ctx, fn_node).block(fn_node.body, [], [])
    return fn_node
