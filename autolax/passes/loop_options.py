"""``autolax.loop_options(...)`` opening a loop body becomes a fact about the loop.

    while err > tol:                                    while err > tol:
        autolax.loop_options(max_steps=4096)     ->         x, err = step(x)
        x, err = step(x)                                (the loop's descriptor: max_steps: 4096)

The call is a no-op in plain Python. The options travel in the loop's ``at='...'``
descriptor (see ``autolax.sites``), so the CLI's output keeps them too.
"""

from __future__ import annotations

from autolax.errors import ConversionError
from autolax.transpile import anno, syntax

OPTIONS = ("max_steps",)


def _is_loop_options(stmt) -> bool:
    if not (isinstance(stmt, syntax.Expr) and isinstance(stmt.value, syntax.Call)):
        return False
    func = stmt.value.func
    return (isinstance(func, syntax.Name) and func.id == "loop_options") or (
        isinstance(func, syntax.Attribute) and func.attr == "loop_options"
    )


def _error(ctx, node, reason, fix):
    lines = ctx.source_lines
    return ConversionError(reason, filename=ctx.filename, lineno=node.lineno, col=node.col_offset,
                           source_line=lines[node.lineno - 1] if node.lineno <= len(lines) else None, fix=fix)


def _options(ctx, call):
    if call.args:
        raise _error(ctx, call, "autolax.loop_options takes keyword arguments only", "write max_steps=4096")
    options = {}
    for keyword in call.keywords:
        if keyword.arg not in OPTIONS:
            raise _error(ctx, call, f"autolax.loop_options has no option {keyword.arg!r}",
                         f"use one of: {', '.join(OPTIONS)}")
        value = keyword.value
        if not (isinstance(value, syntax.Constant) and type(value.value) is int and value.value >= 1):
            raise _error(ctx, keyword.value, f"{keyword.arg} must be a positive int written in the call (it is "
                         "part of the converted code)", f"write {keyword.arg}=4096, a literal number")
        options[keyword.arg] = value.value
    return options


def transform(fn_node, ctx):
    for node in syntax.walk(fn_node):
        if isinstance(node, (syntax.For, syntax.While)):
            for index, stmt in enumerate(node.body):
                if _is_loop_options(stmt):
                    if index != 0:
                        raise _error(ctx, stmt, "autolax.loop_options must be the first statement of the loop body",
                                     "move it to the top of the loop body")
                    anno.set(node, anno.LOOP_OPTIONS, _options(ctx, stmt.value))
            node.body = [s for s in node.body if not _is_loop_options(s)] or [syntax.copy_location(syntax.Pass(), node)]
    return fn_node
