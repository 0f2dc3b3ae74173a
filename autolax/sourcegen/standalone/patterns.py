"""The shapes of converted code that ``--standalone`` matches and builds."""

from __future__ import annotations

from autolax.passes.setitem import AUG_METHODS
from autolax.sourcegen.standalone.values import TRACED
from autolax.transpile import syntax

OP_OF_METHOD = {method: op for op, method in AUG_METHODS.items()}


def assigned_names(target):
    if target is None:
        return []
    if isinstance(target, syntax.Name):
        return [target.id]
    return [e.id for e in target.elts]


def without_cells(body, params, operands):
    """A branch function's body to inline as a Python ``if``: without the prologue that
    hands a renamed parameter to a variable closures capture (``nonlocal ys; ys = ys_1``,
    see ``control_flow``): inlined, ``ys`` already holds the value."""
    given = {p: o.id for p, o in zip(params, operands) if isinstance(o, syntax.Name)}
    body = list(body)
    while body and (isinstance(body[0], syntax.Nonlocal) or (
            isinstance(body[0], syntax.Assign) and len(body[0].targets) == 1
            and isinstance(body[0].targets[0], syntax.Name) and isinstance(body[0].value, syntax.Name)
            and given.get(body[0].value.id) == body[0].targets[0].id != body[0].value.id)):
        body.pop(0)
    return body


def without_return(body):
    body = list(body)
    if body and isinstance(body[-1], syntax.Return):
        body.pop()
    return body


def python_if(test, body, orelse, origin):
    orelse = [] if all(isinstance(s, syntax.Pass) for s in orelse) else orelse
    if not body and orelse:
        test, body, orelse = negate(test), orelse, []
    new = syntax.if_stmt(test, body or [syntax.Pass()], orelse)
    return syntax.copy_location(new, origin)


def negate(test):
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        return test.operand
    if isinstance(test, syntax.BoolOp) and all(isinstance(v, syntax.UnaryOp) and isinstance(v.op, syntax.Not) for v in test.values):
        other = syntax.Or() if isinstance(test.op, syntax.And) else syntax.And()
        return syntax.BoolOp(op=other, values=[v.operand for v in test.values])
    return syntax.unary_not(test)


def is_const(node, value) -> bool:
    return isinstance(node, syntax.Constant) and type(node.value) is int and node.value == value


def item_elts(node, ops):
    """Val structure of one item of a scanned iterable (``enumerate`` / ``zip`` give tuples)."""
    if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and node.func.attr in ("enumerate", "zip"):
        if isinstance(node.func.value, syntax.Name) and node.func.value.id == ops:
            n = 2 if node.func.attr == "enumerate" else len(node.args)
            return tuple(TRACED for _ in range(n))
    return None


def as_builtin_iter(node, ops):
    """``ops.enumerate`` / ``ops.zip`` back to the builtins (for a Python loop)."""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and n.func.attr in ("enumerate", "zip"):
            if isinstance(n.func.value, syntax.Name) and n.func.value.id == ops:
                n.func = syntax.name(n.func.attr)
    return node


def range_test(index, stop, step):
    """``index < stop`` (or ``>`` for a negative step) as an expression."""
    up = syntax.Compare(left=syntax.name(index), ops=[syntax.Lt()], comparators=[syntax.deepcopy(stop)])
    down = syntax.Compare(left=syntax.name(index), ops=[syntax.Gt()], comparators=[syntax.deepcopy(stop)])
    if isinstance(step, syntax.Constant) and isinstance(step.value, int):
        return up if step.value > 0 else down
    if isinstance(step, syntax.UnaryOp) and isinstance(step.op, syntax.USub) and is_const(step.operand, step.operand.value):
        return down if step.operand.value > 0 else up  # `-2`
    positive = syntax.Compare(left=syntax.deepcopy(step), ops=[syntax.Gt()], comparators=[syntax.constant(0)])
    return syntax.IfExp(test=positive, body=up, orelse=down)


def rereadable(node, changing) -> bool:
    """Does evaluating ``node`` again give the same value (names the loop does not change,
    constants, attributes, subscripts and arithmetic of those, no calls)?"""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Name):
            if n.id in changing:
                return False
        elif isinstance(n, syntax.expr) and not isinstance(
            n, (syntax.Constant, syntax.Attribute, syntax.Subscript, syntax.BinOp, syntax.UnaryOp, syntax.Tuple, syntax.Slice,
                syntax.Compare, syntax.BoolOp)
        ):
            return False
    return True


def at_chain(node, ops):
    """``(container, index, method, value)`` of ``ops.at(container)[index].method(value)``."""
    if not (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and len(node.args) == 1):
        return None
    sub = node.func.value
    if not isinstance(sub, syntax.Subscript):
        return None
    at = sub.value
    if (
        isinstance(at, syntax.Call)
        and isinstance(at.func, syntax.Attribute)
        and at.func.attr == "at"
        and isinstance(at.func.value, syntax.Name)
        and at.func.value.id == ops
        and len(at.args) == 1
    ):
        return at.args[0], sub.slice, node.func.attr, node.args[0]
    return None


def restore_target(chain, ops):
    """``x[i][j] = v`` from ``ops.at(x)[i].set(ops.at(x[i])[j].set(v))``: the innermost
    (container, index, method, value)."""
    container, index, method, value = chain
    inner = at_chain(value, ops) if method == "set" else None
    if inner is not None:
        expected = syntax.Subscript(value=container, slice=index, ctx=syntax.Load())
        if syntax.dump(inner[0]) == syntax.dump(expected):
            return restore_target(inner, ops)
    return chain


# The ops through which converted code hands a list on without another name holding it.
_PASSING_OPS = {"cond", "while_loop", "for_range", "for_iter", "append", "stacked", "assigned", "bound", "undefined"}


# List methods that neither hand the list on nor lengthen it.
_KEEPING_METHODS = {"pop", "index", "count", "copy"}


def unaliased_lists(fn, ops, readers=frozenset(), generated=frozenset()) -> set:
    """Names of ``fn`` that no other variable, call or container can come to hold: every
    read is ``name[...]``, ``len(name)``, ``name.pop()`` (``index``, ``count``, ``copy``),
    an argument of a call of ``readers`` (builtins that only read it: ``sum(name)``), or
    hands it to a staged statement or an append (``ops.cond(..., name)``). What the
    analysis knows of such a list's length (empty) holds until the function assigns or
    appends to it. (A function of ``generated``, a branch or loop body, returning it hands it
    back to the ``ops`` call.)"""
    parents = {id(c): n for n in syntax.walk(fn) for c in syntax.iter_child_nodes(n)}

    def handed_back(node):
        parent = parents.get(id(node))
        if isinstance(parent, syntax.Tuple):
            node, parent = parent, parents.get(id(parent))
        if not isinstance(parent, syntax.Return):
            return False
        while parent is not None and not isinstance(parent, (syntax.FunctionDef, syntax.Lambda)):
            parent = parents.get(id(parent))
        return isinstance(parent, syntax.FunctionDef) and parent.name in generated

    def passed(node):
        parent = parents.get(id(node))
        if isinstance(parent, syntax.Tuple):
            node, parent = parent, parents.get(id(parent))
        return (isinstance(parent, syntax.Call) and node in parent.args and isinstance(parent.func, syntax.Attribute)
                and isinstance(parent.func.value, syntax.Name) and parent.func.value.id == ops
                and parent.func.attr in _PASSING_OPS)

    names, aliased = set(), set()
    for node in syntax.walk(fn):
        if not isinstance(node, syntax.Name):
            continue
        names.add(node.id)
        if not isinstance(node.ctx, syntax.Load):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, syntax.Subscript) and parent.value is node:
            continue
        if (isinstance(parent, syntax.Call) and isinstance(parent.func, syntax.Name) and parent.func.id == "len"
                and parent.args == [node]):
            continue
        if passed(node) or handed_back(node) or node is getattr(parent, "func", None):
            continue
        if (isinstance(parent, syntax.Call) and isinstance(parent.func, syntax.Name) and parent.func.id in readers
                and node in parent.args):
            continue
        if isinstance(parent, syntax.Attribute) and parent.attr in _KEEPING_METHODS and isinstance(
                parents.get(id(parent)), syntax.Call) and parents.get(id(parent)).func is parent:
            continue
        aliased.add(node.id)
    return names - aliased
