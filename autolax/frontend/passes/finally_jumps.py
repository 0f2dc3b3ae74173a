"""A ``return`` (or a loop's ``break`` / ``continue``) in a ``finally`` block discards the
exception in flight; the ``try`` catches it first, so that the jump lowering keeps that.

    try:                                  in_flight = None
        B                                 try:
    finally:                                  try:
        if c:                     ->              B
            return x                          except BaseException:
        y = 1                                     in_flight = ops.in_flight()
                                          finally:
                                              if c:
                                                  return x
                                              y = 1
                                              if in_flight is not None:
                                                  raise in_flight

The later passes turn the ``return`` into a flag that skips the rest of the function, the
final ``raise`` included: the exception is discarded exactly when the ``finally`` jumps, also
when ``c`` is traced (the ``raise`` is then staged, raised when the program runs and does not
take the ``return``). A ``try`` with handlers or an ``else`` keeps them, inside. A ``try``
whose body, handlers or ``else`` hold a ``return`` or ``raise`` (in flight too) is refused by
``passes.unsupported``. ``ops.in_flight`` lets autolax's own errors through (a refusal is not
the program's exception).
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.blocks import StatementRewriter
from autolax.frontend.transpile.jumps import jump_in_finally, leaves_in_flight

# Runs where there is a ``try`` (``pipeline.features``).
NEEDS = frozenset({"Try"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, c):
            try:
                x = g(x)
            finally:
                if c:
                    return x
                y = 1
            return y
        """,
        """\
        def f(x, c):
            in_flight = None
            try:
                try:
                    x = g(x)
                except BaseException:
                    in_flight = ops.in_flight()
            finally:
                if c:
                    return x
                y = 1
                if in_flight is not None:
                    raise in_flight
            return y
        """,
    ),
)


class _Rewrite(StatementRewriter):
    def __init__(self, ctx):
        self.ctx = ctx

    def rewrite(self, node):
        if (
            isinstance(node, syntax.Try)
            and node.finalbody
            and jump_in_finally(node.finalbody) is not None
            and not leaves_in_flight(node)
        ):
            return self.lower(node)
        return [node]

    def lower(self, node):
        ops = self.ctx.ops
        held = self.ctx.namer.new("in_flight")
        body = node.body
        if node.handlers or node.orelse:
            inner = syntax.Try(body=node.body, handlers=node.handlers, orelse=node.orelse, finalbody=[])
            body = [syntax.copy_location(inner, node)]
        # No `as` name: Python unbinds it after the handler, which a staged loop body would
        # carry as a variable; `ops.in_flight()` reads the exception being handled.
        keep = syntax.assign(syntax.name(held, "store"), syntax.call(f"{ops}.in_flight"))
        handler = syntax.ExceptHandler(
            type=syntax.name("BaseException"), name=None, body=[syntax.copy_location(keep, node)]
        )
        caught = syntax.Try(body=body, handlers=[syntax.copy_location(handler, node)], orelse=[], finalbody=[])
        test = syntax.Compare(left=syntax.name(held), ops=[syntax.IsNot()], comparators=[syntax.constant(None)])
        reraise = syntax.If(test=test, body=[syntax.Raise(exc=syntax.name(held), cause=None)], orelse=[])
        # The `finally` stays one: a `break` / `continue` flag of the body does not skip it.
        node.body = [syntax.copy_location(caught, node)]
        node.handlers, node.orelse = [], []
        node.finalbody = node.finalbody + [syntax.copy_location(reraise, node.finalbody[-1])]
        start = syntax.assign(syntax.name(held, "store"), syntax.constant(None))
        return [syntax.copy_location(start, node), node]


def transform(fn_node, ctx):
    fn_node.body = _Rewrite(ctx).block(fn_node.body)
    return fn_node
