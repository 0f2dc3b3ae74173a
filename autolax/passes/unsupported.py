"""Rejects, before anything is rewritten, the syntax autolax cannot stage.

Each rejection is a ``ConversionError`` with ``file:line:col``, the source line with a
caret, the rule and a fix. Everything not listed here is either converted or left to run as
plain Python.
"""

from __future__ import annotations

from autolax.analysis.activity import declared_nonlocal, target_names
from autolax.errors import ConversionError
from autolax.transpile import syntax

_BLOCKS = (syntax.If, syntax.For, syntax.While)
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


class _Checker:
    def __init__(self, ctx):
        self.ctx = ctx

    def function(self, fn_node, top: bool):
        name = fn_node.name
        if isinstance(fn_node, syntax.AsyncFunctionDef):
            raise _error(self.ctx, fn_node, f"'{name}' is an `async def` function; autolax converts plain functions only",
                         "call the async code outside the converted function, or mark it @autolax.do_not_convert")
        for node in _own_nodes(fn_node):
            if isinstance(node, (syntax.Yield, syntax.YieldFrom)):
                raise _error(self.ctx, node, f"`yield` makes '{name}' a generator; autolax converts plain functions only",
                             "return a stacked array (or a list) instead of yielding, or mark the function @autolax.do_not_convert")
            if isinstance(node, (syntax.Await, syntax.AsyncFor, syntax.AsyncWith)):
                raise _error(self.ctx, node, f"async syntax in '{name}' cannot be staged",
                             "move the async code out of the converted function")
            if isinstance(node, syntax.Match):
                raise _error(self.ctx, node, "`match` statements are not supported yet",
                             "write the cases as `if` / `elif` / `else`")
            if isinstance(node, syntax.While) and any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(node.test)):
                walrus = next(n for n in syntax.walk(node.test) if isinstance(n, syntax.NamedExpr))
                raise _error(self.ctx, walrus, f"the assignment expression to '{walrus.target.id}' in a `while` condition cannot be staged",
                             f"assign '{walrus.target.id}' before the loop and again at the end of its body")
        self.block_rules(fn_node)
        for node in _own_nodes(fn_node):
            if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                self.function(node, top=False)

    def block_rules(self, fn_node):
        outer = declared_nonlocal(fn_node.body)
        if not outer:
            outer = set()

        def visit(stmts, inside):
            for stmt in stmts:
                if inside is not None:
                    self.check_stmt_in_block(stmt, inside, outer)
                if isinstance(stmt, _SCOPES):
                    continue
                for field in syntax.BLOCK_FIELDS:
                    block = getattr(stmt, field, None)
                    if isinstance(block, list) and block and isinstance(block[0], (syntax.stmt, syntax.ExceptHandler)):
                        visit(block if field != "handlers" else [s for h in block for s in h.body],
                              stmt if isinstance(stmt, _BLOCKS) else inside)

        visit(fn_node.body, None)

    def check_stmt_in_block(self, stmt, block, outer):
        kind = {syntax.If: "an `if`", syntax.For: "a `for` loop", syntax.While: "a `while` loop"}[type(block)]
        written = set()
        if isinstance(stmt, syntax.Assign):
            for t in stmt.targets:
                written |= target_names(t)
        elif isinstance(stmt, (syntax.AugAssign, syntax.AnnAssign)):
            written |= target_names(stmt.target)
        elif isinstance(stmt, syntax.For):
            written |= target_names(stmt.target)
        bad = sorted(written & outer)
        if bad:
            raise _error(self.ctx, stmt, f"'{bad[0]}' is declared global/nonlocal and assigned inside {kind}; "
                         "a staged block cannot write to variables outside the function",
                         f"compute the new value of '{bad[0]}' in the block, return it, and assign it after the call")
        if isinstance(stmt, syntax.Delete):
            names = sorted(set().union(*(target_names(t) for t in stmt.targets)))
            if names:
                raise _error(self.ctx, stmt, f"`del {names[0]}` inside {kind} cannot be staged",
                             f"assign '{names[0]}' a placeholder value (or leave it) instead of deleting it")


def transform(fn_node, ctx):
    _Checker(ctx).function(fn_node, top=True)
    return fn_node
