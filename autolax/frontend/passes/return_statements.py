"""Gives every function a single ``return`` at its end.

    def f(x):                         def f(x):
        if x < 3:                         if x < 3:
            return 3.0 * x ** 2   ->          retval = 3.0 * x ** 2
        return -4 * x                     else:
                                              retval = -4 * x
                                          return retval

A ``return`` inside a loop also sets ``do_return``, which ends the loop and guards what
follows it. A function that can fall off its end returns ``None`` explicitly.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import own_statements
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.blocks import map_blocks
from autolax.frontend.transpile.jumps import (
    BlockLowering,
    add_loop_test,
    flag_assign,
    remove_flag_assignments,
)
from autolax.runtime import sites

# Runs where a ``return`` is not the last statement of its function (``pipeline.features``).
NEEDS = frozenset({"EarlyReturn"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            if x < 3:
                return 3.0 * x ** 2
            return -4 * x
        """,
        """\
        def f(x):
            if x < 3:
                retval = 3.0 * x ** 2
            else:
                retval = -4 * x
            return retval
        """,
    ),
    (
        """\
        def f(xs, limit):
            total = 0.0
            for x in xs:
                if total > limit:
                    return total
                total += x
            return -1.0
        """,
        """\
        def f(xs, limit):
            do_return = False
            total = 0.0
            for x in xs:  # test: not do_return
                if total > limit:
                    do_return = True
                    retval = total
                else:
                    total += x
            if not do_return:
                do_return = True
                retval = -1.0
            return retval
        """,
    ),
    (
        """\
        def f(x):
            if x > 0:
                return x
        """,
        """\
        def f(x):
            if x > 0:
                retval = x
            else:
                retval = None
            return retval
        """,
    ),
)


def _needs_lowering(fn_node) -> bool:
    body = fn_node.body
    probe = BlockLowering(lambda s: isinstance(s, syntax.Return), None, "", into_loops=True)
    return probe.contains_jump(body[:-1]) or (
        bool(body) and not isinstance(body[-1], syntax.Return) and probe.contains_jump(body[-1:])
    )


def _returns_in_try_or_with(fn_node) -> set:
    """The ids of the ``return`` statements of ``fn_node`` inside a ``try`` or ``with``
    statement, where an exception raised by the returned expression may be caught and the
    function go on."""
    found = set()
    for stmt in syntax.walk_statements(fn_node):
        if isinstance(stmt, (syntax.Try, syntax.With)):
            found.update(id(inner) for inner in syntax.walk_statements(stmt) if isinstance(inner, syntax.Return))
    return found


def _held(value, out: set) -> set:
    """The names whose objects ``value`` holds as it is, or as an item of a display
    (``xs``, ``(xs, n)``, ``{"a": [xs]}``): not ``xs + 1`` or ``f(xs)``, new objects."""
    if isinstance(value, syntax.Name):
        out.add(value.id)
    elif isinstance(value, (syntax.Tuple, syntax.List, syntax.Set)):
        for item in value.elts:
            _held(item, out)
    elif isinstance(value, syntax.Dict):
        for item in value.values:
            _held(item, out)
    elif (
        isinstance(value, syntax.Call)
        and isinstance(value.func, syntax.Attribute)
        and value.func.attr == "hand_back"
        and value.args
    ):
        _held(value.args[0], out)  # (passes.writeback: `return ops.hand_back(value, v=v)`)
    return out


def _guard_finally_augments(fn_node, retval, ops) -> None:
    """Before ``xs += v`` in a ``finally`` whose ``try`` returns a value holding ``xs``:
    ``ops.returned_augmented(retval, xs, 'xs')``, which refuses an array (NumPy's ``+=``
    changes the returned object in place; converted code's makes a new value)."""
    for stmt in own_statements(fn_node.body):
        if not (isinstance(stmt, syntax.Try) and stmt.finalbody):
            continue
        held = set()
        for block in [stmt.body, stmt.orelse] + [h.body for h in stmt.handlers]:
            for node in own_statements(block):
                if isinstance(node, syntax.Return) and node.value is not None:
                    _held(node.value, held)
        if held:
            stmt.finalbody = _guarded(stmt.finalbody, held, retval, ops)


def _guarded(stmts, held, retval, ops) -> list:
    out = []
    for stmt in stmts:
        if isinstance(stmt, syntax.AugAssign) and isinstance(stmt.target, syntax.Name) and stmt.target.id in held:
            name = stmt.target.id
            call = syntax.call(
                f"{ops}.returned_augmented", [syntax.name(retval), syntax.name(name), syntax.constant(name)]
            )
            out.append(syntax.copy_location(syntax.Expr(value=call), stmt))
        elif not isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            map_blocks(stmt, lambda block: _guarded(block, held, retval, ops))
        out.append(stmt)
    return out


def _lower_function(fn_node, ctx):
    if not _needs_lowering(fn_node):
        return
    flag = ctx.namer.new("do_return")
    retval = ctx.namer.new(sites.RETURN_NAME)  # (the descriptors' ``return:`` clause: none for this name)
    ctx.descriptions[flag] = "the early-`return` flag"
    ctx.descriptions[retval] = "the return value"
    ctx.return_values.add(retval)
    ctx.pending.add(retval)  # every path assigns it before the final `return`

    caught = _returns_in_try_or_with(fn_node)
    if caught:
        _guard_finally_augments(fn_node, retval, ctx.ops)

    def replace(stmt):
        value = stmt.value if stmt.value is not None else syntax.constant(None)
        if id(stmt) in caught:
            # Python evaluates the value first: a `return g()` whose `g()` raises, caught by
            # a handler (or suppressed by a context manager), has not returned.
            return [syntax.assign(syntax.name(retval, "store"), value), flag_assign(flag, True)]
        return [flag_assign(flag, True), syntax.assign(syntax.name(retval, "store"), value)]

    tested_by = []  # the loops whose test reads the flag

    def on_loop(loop):
        add_loop_test(loop, syntax.unary_not(syntax.name(flag)))
        tested_by.append(loop)

    lowering = BlockLowering(
        is_jump=lambda s: isinstance(s, syntax.Return),
        replace=replace,
        flag=flag,
        into_loops=True,
        on_loop=on_loop,
    )
    body = list(fn_node.body)
    if not lowering.always_jumps(body):  # it can fall off its end: make `return None` explicit
        last = body[-1] if body else fn_node
        body.append(syntax.copy_location(syntax.ret(None), last))
    docstring = []
    if (
        body
        and isinstance(body[0], syntax.Expr)
        and isinstance(getattr(body[0], "value", None), syntax.Constant)
        and isinstance(body[0].value.value, str)
    ):
        docstring, body = body[:1], body[1:]
    lowered = lowering.block(body).stmts
    final = syntax.copy_location(syntax.ret(syntax.name(retval)), fn_node.body[-1])
    if lowering.flag_read or tested_by:
        init = [flag_assign(flag, False, lowered[0] if lowered else fn_node)]
    else:
        init = []
    fn_node.body = docstring + init + lowered + [final]
    if not init:
        remove_flag_assignments(fn_node, flag)


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def visit_FunctionDef(self, node):
        self.generic_visit(node)  # nested functions first: their returns are their own
        _lower_function(node, self.ctx)
        return node


def transform(fn_node, ctx):
    return _Transformer(ctx).visit(fn_node)
