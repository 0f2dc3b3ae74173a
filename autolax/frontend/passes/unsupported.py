"""Rejects, before anything is rewritten, the syntax autolax cannot stage.

Each rejection is a ``ConversionError`` with ``file:line:col``, the source line with a
caret, the rule and a fix. Everything not listed here is either converted or left to run as
plain Python.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import MUTATING_METHODS
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.jumps import jump_in_finally, leaves_in_flight
from autolax.runtime.errors import ConversionError

# Runs where the function holds what it rejects (``pipeline.features``): nothing else can
# make it raise.
NEEDS = frozenset({"Yield", "YieldFrom", "Await", "AsyncFor", "AsyncWith", "AsyncFunctionDef", "NamedExpr", "Try"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(xs):
            for x in xs:
                yield x
        """,
        """\
        ConversionError: example.py:3:9: `yield` makes 'f' a generator; autolax converts plain functions only
            yield x
            ^
        Fix: return a stacked array (or a list) instead of yielding, or mark the function @autolax.do_not_convert
        """,
    ),
    (
        """\
        def f(x, y):
            if x > 0 and (z := y * 2) > 1:
                return z
            return x
        """,
        """\
        ConversionError: example.py:2:19: the assignment expression to 'z' is in an operand that Python evaluates only sometimes (after `and` / `or`, or in a branch of `... if ... else ...`)
            if x > 0 and (z := y * 2) > 1:
                          ^
        Fix: assign 'z' in a statement of its own before this expression
        """,  # noqa: E501 - the error's text, one line as printed
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _error(ctx, node, reason, fix):
    lineno = getattr(node, "lineno", None)
    return ConversionError(
        reason,
        filename=ctx.filename,
        lineno=lineno,
        col=getattr(node, "col_offset", None),
        source_line=ctx.source_lines[lineno - 1] if lineno and lineno <= len(ctx.source_lines) else None,
        fix=fix,
    )


def _own_nodes(fn_node):
    """Nodes of a function's own scope: not inside nested functions, lambdas or classes."""
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(syntax.iter_child_nodes(node))


def _walrus_in_later_operand(node):
    """A ``:=`` in an operand that conversion evaluates in a thunk (a lambda, where it would
    bind a variable of the lambda): a later operand of ``and`` / ``or`` or a branch of a
    conditional expression."""
    if isinstance(node, syntax.BoolOp):
        operands = node.values[1:]
    elif isinstance(node, syntax.IfExp):
        operands = [node.body, node.orelse]
    else:
        return None
    for operand in operands:
        for n in syntax.walk(operand):
            if isinstance(n, syntax.NamedExpr):
                return n
    return None


def _changed_in_place(stmts):
    """The first statement of ``stmts`` (not counting nested functions) that changes an object
    in place: ``x[i] = v``, ``x.a = v`` (also augmented), ``x.append(v)`` and the other
    mutating methods; or None."""
    for stmt in stmts:
        for node in syntax.walk_statements(stmt):
            targets = (
                node.targets
                if isinstance(node, syntax.Assign)
                else [node.target]
                if isinstance(node, (syntax.AugAssign, syntax.AnnAssign))
                else []
            )
            if any(isinstance(t, (syntax.Subscript, syntax.Attribute)) for t in targets):
                return node
            if isinstance(node, syntax.Expr) and isinstance(node.value, syntax.Call):
                func = node.value.func
                if isinstance(func, syntax.Attribute) and func.attr in MUTATING_METHODS:
                    return node
    return None


def _returns(try_node) -> bool:
    blocks = [try_node.body, try_node.orelse] + [h.body for h in try_node.handlers]
    return any(isinstance(n, syntax.Return) for block in blocks for stmt in block for n in syntax.walk_statements(stmt))


class _Checker:
    def __init__(self, ctx):
        self.ctx = ctx

    def function(self, fn_node, top: bool):
        name = fn_node.name
        if isinstance(fn_node, syntax.AsyncFunctionDef):
            raise _error(
                self.ctx,
                fn_node,
                f"'{name}' is an `async def` function; autolax converts plain functions only",
                "call the async code outside the converted function, or mark it @autolax.do_not_convert",
            )
        for node in _own_nodes(fn_node):
            self._check(node, name)
        for node in _own_nodes(fn_node):
            if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                self.function(node, top=False)

    def _check(self, node, name: str) -> None:
        """Refuses ``node``, a node of the function ``name`` (not of a function nested in it),
        if it is syntax that cannot be converted."""
        if isinstance(node, (syntax.Yield, syntax.YieldFrom)):
            raise _error(
                self.ctx,
                node,
                f"`yield` makes '{name}' a generator; autolax converts plain functions only",
                "return a stacked array (or a list) instead of yielding, or mark the function @autolax.do_not_convert",
            )
        if isinstance(node, (syntax.Await, syntax.AsyncFor, syntax.AsyncWith)):
            raise _error(
                self.ctx,
                node,
                f"async syntax in '{name}' cannot be staged",
                "move the async code out of the converted function",
            )
        if isinstance(node, syntax.Try) and node.finalbody:
            self._check_finally(node, name)
        walrus = _walrus_in_later_operand(node)
        if walrus is not None:
            raise _error(
                self.ctx,
                walrus,
                f"the assignment expression to '{walrus.target.id}' is in an operand that "
                "Python evaluates only sometimes (after `and` / `or`, or in a branch of `... if ... else ...`)",
                f"assign '{walrus.target.id}' in a statement of its own before this expression",
            )

    def _check_finally(self, node, name: str) -> None:
        """Refuses a `finally` block whose meaning converted code cannot keep."""
        if leaves_in_flight(node):
            # (`passes.finally_jumps` rewrites a jump in a `finally` with nothing else in flight)
            jump = jump_in_finally(node.finalbody)
            if jump is not None:
                word = type(jump).__name__.lower()
                raise _error(
                    self.ctx,
                    jump,
                    f"a `{word}` in a `finally` block discards the exception or `return` "
                    "in flight; autolax cannot keep that meaning (Python 3.14 warns about it: PEP 765)",
                    f"move the `{word}` after the `try` statement, or mark '{name}' @autolax.do_not_convert",
                )
        if _returns(node):
            change = _changed_in_place(node.finalbody)
            if change is not None:
                # Python's returned value holds the objects the `finally` then changes;
                # converted code changes them as new values (`x = x.at[i].set(v)`), which
                # the value computed by the `return` would not see.
                raise _error(
                    self.ctx,
                    change,
                    "this `finally` changes an object in place after a `return` in its "
                    "`try` computed the returned value, which holds that object in Python; converted "
                    "code updates arrays as new values, so the return would not see the change",
                    "make the change before the `return`, or return a new value after the `try` statement",
                )


def transform(fn_node, ctx):
    _Checker(ctx).function(fn_node, top=True)
    return fn_node
