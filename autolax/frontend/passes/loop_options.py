"""``autolax.loop_options(...)`` opening a loop body becomes a fact about the loop.

    while err > tol:                                    while err > tol:  # options: max_steps=4096
        autolax.loop_options(max_steps=4096)     ->         x, err = step(x)
        x, err = step(x)

The call is a no-op in plain Python. The options are kept on the loop (``anno.LOOP_OPTIONS``,
shown as a comment here and in ``EXAMPLES``) and travel in its ``at='...'`` descriptor
(``max_steps: 4096``, see ``autolax.runtime.sites``), so the CLI's output keeps them too.
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax
from autolax.runtime.errors import ConversionError

# Runs where the function names ``loop_options`` (``pipeline.features``).
NEEDS = frozenset({"loop_options"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, err, tol):
            while err > tol:
                autolax.loop_options(max_steps=4096)
                x, err = step(x)
            return x
        """,
        """\
        def f(x, err, tol):
            while err > tol:  # options: max_steps=4096
                x, err = step(x)
            return x
        """,
    ),
)

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
    return ConversionError(
        reason,
        filename=ctx.filename,
        lineno=node.lineno,
        col=node.col_offset,
        source_line=lines[node.lineno - 1] if node.lineno <= len(lines) else None,
        fix=fix,
    )


def _options(ctx, call, local_names):
    if call.args:
        raise _error(ctx, call, "autolax.loop_options takes keyword arguments only", "write max_steps=4096")
    options = {}
    for keyword in call.keywords:
        if keyword.arg not in OPTIONS:
            raise _error(
                ctx, call, f"autolax.loop_options has no option {keyword.arg!r}", f"use one of: {', '.join(OPTIONS)}"
            )
        value = _constant(ctx, keyword.value, local_names)
        if not (type(value) is int and value >= 1):
            raise _error(
                ctx,
                keyword.value,
                f"{keyword.arg} must be a positive int written in the call or bound to "
                "a module-level name (it is part of the converted code)",
                f"write {keyword.arg}=4096, a literal number, or {keyword.arg}=MAX_STEPS with "
                "MAX_STEPS = 4096 at module level",
            )
        options[keyword.arg] = value
    return options


def _constant(ctx, node, local_names):
    """The value of ``node``: a literal, or a name of the module bound to an int, read at
    conversion as ``static_argnames`` values are. A file the CLI converts is never run: there
    the name must be bound once at module level to an int literal (``MAX_STEPS = 4096``)."""
    if isinstance(node, syntax.Constant):
        return node.value
    if not isinstance(node, syntax.Name) or node.id in local_names or node.id in ctx.closure:
        return None
    value = ctx.resolve(node.id)
    if type(value) is int:
        return value
    return _module_int_literal(ctx.source_lines, node.id) if value is ctx.MISSING else None


def _module_int_literal(source_lines, name):
    """``N`` if the module binds ``name`` once, at module level, as ``name = N`` (an int
    literal), and no function declares it ``global``; else None."""
    try:
        module = syntax.parse("".join(source_lines))
    except SyntaxError:
        return None
    if any(isinstance(node, syntax.Global) and name in node.names for node in syntax.walk(module)):
        return None
    bindings = []
    for stmt in module.body:
        if syntax.is_function(stmt) or isinstance(stmt, syntax.ClassDef):
            if stmt.name == name:
                return None
            continue
        for node in syntax.walk(stmt):
            if isinstance(node, syntax.Name) and node.id == name and not isinstance(node.ctx, syntax.Load):
                bindings.append(node)
            elif isinstance(node, (syntax.Import, syntax.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name for a in node.names
            ):
                return None
    if len(bindings) != 1:
        return None
    stmt = next(
        (
            s
            for s in module.body
            if isinstance(s, (syntax.Assign, syntax.AnnAssign))
            and any(t is bindings[0] for t in (s.targets if isinstance(s, syntax.Assign) else [s.target]))
        ),
        None,
    )
    if stmt is None or not isinstance(stmt.value, syntax.Constant) or type(stmt.value.value) is not int:
        return None
    return stmt.value.value


def _local_names(fn_node):
    names = set(syntax.param_names(fn_node.args))
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.Name) and not isinstance(node.ctx, syntax.Load):
            names.add(node.id)
    return names


def transform(fn_node, ctx):
    for node in syntax.walk(fn_node):
        if isinstance(node, (syntax.For, syntax.While)):
            for index, stmt in enumerate(node.body):
                if _is_loop_options(stmt):
                    if index != 0:
                        raise _error(
                            ctx,
                            stmt,
                            "autolax.loop_options must be the first statement of the loop body",
                            "move it to the top of the loop body",
                        )
                    anno.set(node, anno.LOOP_OPTIONS, _options(ctx, stmt.value, _local_names(fn_node)))
            node.body = [s for s in node.body if not _is_loop_options(s)] or [syntax.copy_location(syntax.Pass(), node)]
    return fn_node
