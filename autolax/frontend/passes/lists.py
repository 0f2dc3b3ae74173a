"""List appends become assignments, so a staged loop can carry the list as scan outputs.

    out.append(y)       ->   out = ops.append(out, y)
    jnp.stack(out)      ->   ops.stack(jnp.stack, out)       (only for appended lists)
    np.vstack(out)      ->   np.vstack(ops.stacked(out))

``ops.append`` appends in place and returns the list, so plain Python behaviour is
unchanged. In a staged loop the appended values become the loop's stacked outputs;
``ops.stacked`` hands ``vstack`` that stacked array instead of one slice per element, and
``ops.stack`` returns it as ``jnp.stack``'s answer.
"""

from __future__ import annotations

import numpy as np

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax

# Runs where the function appends (``pipeline.features``).
NEEDS = frozenset({"append"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(xs):
            out = []
            for x in xs:
                out.append(x * 2)
            return jnp.stack(out)
        """,
        """\
        def f(xs):
            out = []
            for x in xs:
                out = ops.append(out, x * 2)
            return ops.stack(jnp.stack, out)
        """,
    ),
    (
        """\
        def f(xs):
            out = []
            for x in xs:
                out.append(x * 2)
            return np.vstack(out)
        """,
        """\
        def f(xs):
            out = []
            for x in xs:
                out = ops.append(out, x * 2)
            return np.vstack(ops.stacked(out))
        """,
    ),
)

_STACKING = {"stack", "vstack"}


def _append_target(stmt, local_names):
    """``name`` for a statement ``name.append(value)`` on a local list, else None."""
    call = stmt.value if isinstance(stmt, syntax.Expr) else None
    if (
        isinstance(call, syntax.Call)
        and isinstance(call.func, syntax.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, syntax.Name)
        and call.func.value.id in local_names
        and len(call.args) == 1
        and not isinstance(call.args[0], syntax.Starred)
        and not call.keywords
    ):
        return call.func.value.id
    return None


def _tail_appends(block, local_names):
    """The list that every path through ``block`` appends to as its last step (``if`` / ``elif``
    / ``else`` chains included), or None."""
    if not block:
        return None
    last = block[-1]
    if isinstance(last, syntax.If):
        name = _tail_appends(last.body, local_names)
        return name if name is not None and _tail_appends(last.orelse, local_names) == name else None
    return _append_target(last, local_names)


def _replace_tail_appends(block, temp):
    """Makes each path's final ``lst.append(value)`` an assignment ``temp = value``."""
    last = block[-1]
    if isinstance(last, syntax.If):
        _replace_tail_appends(last.body, temp)
        _replace_tail_appends(last.orelse, temp)
    else:
        block[-1] = syntax.copy_location(syntax.assign(syntax.name(temp, "store"), last.value.args[0]), last)


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, local_names):
        self.ctx = ctx
        self.local_names = local_names
        self.appended: set[str] = set()

    def visit_If(self, node):
        # `if c: ...; out.append(a) else: ...; out.append(b)` appends one item on every path:
        # written as one append after the `if` (`item = a` / `item = b`), so a staged loop
        # around it sees a list growing by one item per iteration, not two different lists.
        name = _tail_appends([node], self.local_names)
        if name is None:
            return self.generic_visit(node)
        temp = self.ctx.namer.new(f"{name}_item")
        _replace_tail_appends([node], temp)
        hoisted = syntax.copy_location(
            syntax.expr_stmt(
                syntax.call(
                    syntax.Attribute(value=syntax.name(name), attr="append", ctx=syntax.Load()), [syntax.name(temp)]
                )
            ),
            node,
        )
        return [self.generic_visit(node), self.visit(hoisted)]

    def visit_FunctionDef(self, node):
        inner = _Transformer(self.ctx, local_names(node))
        node.body = [inner.visit(s) for s in node.body]
        self.appended |= inner.appended
        return node

    def visit_Expr(self, node):
        call = node.value
        if (
            isinstance(call, syntax.Call)
            and isinstance(call.func, syntax.Attribute)
            and call.func.attr == "append"
            and isinstance(call.func.value, syntax.Name)
            and call.func.value.id in self.local_names  # assigning a free variable would unbind it
            and len(call.args) == 1
            and not call.keywords
        ):
            lst = call.func.value.id
            self.appended.add(lst)
            new = syntax.assign(
                syntax.name(lst, "store"),
                syntax.call(f"{self.ctx.ops}.append", [syntax.name(lst), call.args[0]]),
            )
            return syntax.copy_location(new, node)
        return self.generic_visit(node)


class _StackCalls(syntax.NodeTransformer):
    def __init__(self, ctx, appended, local_names):
        self.ctx = ctx
        self.appended = appended
        self.local_names = local_names

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, syntax.Attribute)
            and func.attr in _STACKING
            and isinstance(func.value, syntax.Name)
            and node.args
            and isinstance(node.args[0], syntax.Name)
            and node.args[0].id in self.appended
        ):
            module = self.ctx.resolve(func.value.id, self.local_names)
            name = getattr(module, "__name__", None)
            if name == "jax.numpy" and func.attr == "stack":
                new = syntax.call(f"{self.ctx.ops}.stack", [func, *node.args])
                new.keywords = node.keywords
                return syntax.copy_location(new, node)
            if name in ("jax.numpy", "numpy") or module is np:
                node.args[0] = syntax.copy_location(
                    syntax.call(f"{self.ctx.ops}.stacked", [node.args[0]]), node.args[0]
                )
        return node


def transform(fn_node, ctx):
    locals_ = local_names(fn_node)
    appends = _Transformer(ctx, locals_)
    fn_node.body = [appends.visit(s) for s in fn_node.body]
    if appends.appended:
        fn_node = _StackCalls(ctx, appends.appended, locals_).visit(fn_node)
    return fn_node
