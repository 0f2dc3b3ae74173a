"""A branch, or a ``while`` loop's test, that only computes what it gives back becomes a
``lambda`` at its call, as one writes ``lax.cond`` and ``lax.while_loop`` by hand:

    def if_true():
        y = -x
        return y               ->      y = ops.cond(x < 0, lambda: -x, lambda: y, at='2 -> y')

    def if_false():
        return y

    y = ops.cond(x < 0, if_true, if_false, at='2 -> y')

    def loop_test(n, steps):
        return n != 1          ->      n, steps = ops.while_loop(lambda n, steps: n != 1, loop_body, ...)

A function ``control_flow`` made (``if_true`` / ``if_false``, an ``elif`` arm, a ``while``
loop's ``loop_test``) qualifies where its body is assignments of names (``a = v``,
``a, b = v, w``) and its ``return``: each value reads only what the function was given or
reads from outside (nothing the body assigned), each assigned name is given back once, and
the function is named nowhere but in its ``ops.cond`` / ``ops.cases`` / loop call
(``anno.ONLY_IN_CALL``, which ``control_flow`` sets). Values
are computed in the order they are given back, so that order must be the order Python
computes them in, unless all of them but one are names or constants (``s, n = -1, n - 1``
given back as ``(n - 1, -1)``). The ``lambda`` takes the function's parameters and is
located where the function was: the same calls run with the same operands (the jaxpr is the
same). A function with a statement of any other kind, or whose lambda would print longer
than ``_MAX_WIDTH``, stays a function.
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.blocks import map_blocks

# Runs on every function (what it looks for, control_flow made: ``features`` cannot see it).
NEEDS = None

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/frontend/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            y = x
            if x < 0:
                y = -x
            return y
        """,
        """\
        def f(x):
            y = x
            y = ops.cond(x < 0, lambda: -x, lambda: y, at='3 -> y')
            return y
        """,
        ("control_flow",),
    ),
    (
        # An `elif` chain's arms; a branch with another kind of statement stays a function.
        """\
        def sign(x):
            if x < 0:
                s = -1
            elif x == 0:
                s = 0
            else:
                s = 1
                print(s)
            return s
        """,
        """\
        def sign(x):

            def if_false_1():
                s = 1
                ops.print(s)
                return s

            s = ops.cases([(x < 0, lambda: -1), (lambda: x == 0, lambda: 0)], if_false_1, at='2 -> s; elif: 4')
            return s
        """,
        ("calls", "control_flow"),
    ),
    (
        # `s, n = -1, n - 1` is two assignments; given back in another order than they were
        # computed, all but one of the values must be names or constants.
        """\
        def f(x, n):
            if x < 0:
                s, n = -1, n - 1
            else:
                s = 1
            return s, n
        """,
        """\
        def f(x, n):
            n, s = ops.cond(x < 0, lambda n: (n - 1, -1), lambda n: (n, 1), n, at='2 -> n, s')
            return (s, n)
        """,
        ("control_flow",),
    ),
)

# A branch is written inline when what it gives back is at most this many nodes (``a + b``
# is four): a longer expression reads better as the function it was.
_MAX_NODES = 24
# ... and when the lambda prints in at most this many characters (the printer puts each
# ``ops.cases`` arm on a line of its own: ``emit._lines``).
_MAX_WIDTH = 60
# The loop ops: a ``while`` loop's test (``loop_test``: ``return <test>`` alone, on the loop's
# own line) is written inline.
_LOOPS = frozenset({"while_loop", "for_iter", "for_range"})
_NOT_IN_LAMBDA = (syntax.NamedExpr, syntax.Yield, syntax.YieldFrom, syntax.Await)


def _inline(fn) -> syntax.Lambda | None:
    """``fn`` as a ``lambda`` with its parameters, if it qualifies (see the module's doc)."""
    args = fn.args
    if (
        fn.decorator_list
        or args.posonlyargs
        or args.vararg
        or args.kwonlyargs
        or args.kwarg
        or args.defaults
        or not isinstance(fn.body[-1], syntax.Return)
        or fn.body[-1].value is None
    ):
        return None
    all_pairs = [_pairs(stmt) for stmt in fn.body[:-1]]
    if None in all_pairs:
        return None
    # A name the body assigns is the function's own: read before its assignment, it is the
    # parameter (a lambda reads the same), else Python's UnboundLocalError (a lambda would
    # read the enclosing function's: not inlined).
    params = set(syntax.param_names(args))
    local = {target for pairs in all_pairs for target, _ in pairs} - params
    values, order = {}, []
    for pairs in all_pairs:
        for _, value in pairs:
            for n in syntax.walk(value):
                if isinstance(n, _NOT_IN_LAMBDA) or isinstance(n, syntax.Name) and (n.id in values or n.id in local):
                    return None  # reads a name the body assigned (or cannot stand in a lambda)
        for target, value in pairs:
            if target in values:
                return None
            values[target] = value
            order.append(target)
    result = fn.body[-1].value
    if not values:  # `return <expression>` alone (a loop's test)
        if any(isinstance(n, _NOT_IN_LAMBDA) for n in syntax.walk(result)) or _size(result) > _MAX_NODES:
            return None
        return syntax.copy_location(syntax.lambda_(result, syntax.param_names(args)), fn)
    given = result.elts if isinstance(result, syntax.Tuple) else [result]
    if not all(isinstance(g, syntax.Name) for g in given):
        return None
    returned = [g.id for g in given if g.id in values]
    if sorted(returned) != sorted(order):
        return None  # a value given back twice, or never
    if returned != order and sum(not _plain(values[t]) for t in order) > 1:
        return None  # computed in another order than Python's, where the order may show
    if isinstance(result, syntax.Tuple):
        body = syntax.Tuple(elts=[values.get(g.id, g) for g in given], ctx=syntax.Load())
    else:
        body = values.get(result.id, result)
    if _size(body) > _MAX_NODES:
        return None
    return syntax.copy_location(syntax.lambda_(body, syntax.param_names(args)), fn)


def _width(node) -> int:
    """About how many characters ``node`` prints as (without printing it: conversion time)."""
    width = 0
    for n in syntax.walk(node):
        kind = n.__class__
        if kind is syntax.Name:
            width += len(n.id) + 2  # (`, ` or an operator around it)
        elif kind is syntax.Constant:
            width += len(repr(n.value))
        elif kind is syntax.Attribute:
            width += len(n.attr) + 1
        elif kind is syntax.Lambda:
            width += 8
        elif kind in (syntax.Call, syntax.Tuple, syntax.Subscript, syntax.BinOp, syntax.Compare, syntax.UnaryOp):
            width += 2
    return width


def _size(node) -> int:
    return sum(1 for _ in syntax.walk(node))


def _plain(value) -> bool:
    """A value whose computation nothing can observe (no call, no error): a name, a
    constant, ``-1``. Values of this kind may be computed in any order."""
    if isinstance(value, syntax.UnaryOp) and isinstance(value.op, syntax.USub):
        value = value.operand
    return isinstance(value, (syntax.Name, syntax.Constant))


def _pairs(stmt):
    """``[(name, value)]`` of ``a = v`` or ``a, b = v, w`` (distinct names), else None."""
    if not (isinstance(stmt, syntax.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, syntax.Name):
        return [(target.id, value)]
    if not (isinstance(target, syntax.Tuple) and isinstance(value, syntax.Tuple)):
        return None
    if len(target.elts) != len(value.elts) or not all(isinstance(t, syntax.Name) for t in target.elts):
        return None
    if any(isinstance(v, syntax.Starred) for v in value.elts) or len({t.id for t in target.elts}) != len(target.elts):
        return None
    return [(t.id, v) for t, v in zip(target.elts, value.elts)]


class _Inliner:
    def __init__(self, ops):
        self.ops = ops

    def block(self, stmts) -> list:
        for stmt in stmts:
            if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                stmt.body = self.block(stmt.body)
            elif not isinstance(stmt, syntax.ClassDef):
                map_blocks(stmt, self.block)
        candidates = {s.name: s for s in stmts if isinstance(s, syntax.FunctionDef) and anno.get(s, anno.ONLY_IN_CALL)}
        if not candidates:
            return stmts
        inlined = set()
        for stmt in stmts:
            call = getattr(stmt, "value", None)
            for slot, ref in _branch_refs(call, self.ops):
                fn = candidates.get(ref.id)
                if (
                    fn is not None
                    and call.func.attr in _LOOPS
                    and (call.func.attr != "while_loop" or len(fn.body) != 1)
                ):
                    # A loop's body, and a `for` loop's exit test (an `if` of its body), stay
                    # functions: an error in them names their own lines (the CLI's line map
                    # gives the lines of the written file, one source line each).
                    continue
                new = _inline(fn) if fn is not None else None
                if new is None:
                    continue
                if _width(new) > _MAX_WIDTH:
                    continue  # a long lambda reads better as the function it was
                slot(new)
                inlined.add(fn.name)
        return [s for s in stmts if not (isinstance(s, syntax.FunctionDef) and s.name in inlined)]


def _branch_refs(call, ops):
    """``(set, name)`` for each branch function ``call`` names: ``ops.cond``'s two,
    ``ops.cases``' arms and its last; ``set(node)`` puts ``node`` in that place."""
    if not (
        isinstance(call, syntax.Call)
        and isinstance(call.func, syntax.Attribute)
        and isinstance(call.func.value, syntax.Name)
        and call.func.value.id == ops
    ):
        return []
    args = call.args
    places = []
    if call.func.attr in _LOOPS:
        places = [(args, k) for k in range(len(args))]  # its test (``loop_test``)
    elif call.func.attr == "cond" and len(args) >= 3:
        places = [(args, 1), (args, 2)]
    elif call.func.attr == "cases" and len(args) >= 2 and isinstance(args[0], syntax.List):
        places = [(arm.elts, 1) for arm in args[0].elts if isinstance(arm, syntax.Tuple) and len(arm.elts) == 2]
        places.append((args, 1))
    out = []
    for seq, k in places:
        if isinstance(seq[k], syntax.Name):
            out.append((lambda node, seq=seq, k=k: seq.__setitem__(k, node), seq[k]))
    return out


def transform(fn_node, ctx):
    fn_node.body = _Inliner(ctx.ops).block(fn_node.body)
    return fn_node
