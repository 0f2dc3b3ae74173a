"""What the handlers around a statement catch: the exception types that a branch, loop body
or operand failing while staged must not raise when the program runs (the ``caught_by`` of
``ops.cond``, ``ops.and_``, ``ops.or_``). A library of ``passes.exceptions``, which marks
them, and ``passes.control_flow``, which emits them.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax


def handler_types(handlers, ops=None):
    """The exception type expressions of a ``try``'s handlers (bare ``except``: BaseException);
    with ``ops``, without the ``except ops.AutolaxError: raise`` that ``passes.exceptions``
    puts first."""
    out = []
    for handler in handlers:
        if ops is not None and handler.type is not None and syntax.unparse(handler.type) == f"{ops}.AutolaxError":
            continue
        if handler.type is None:
            out.append(syntax.name("BaseException"))
        elif isinstance(handler.type, syntax.Tuple):
            out.extend(syntax.deepcopy(e) for e in handler.type.elts)
        else:
            out.append(syntax.deepcopy(handler.type))
    return out


def staged_caught(node, outer, ops):
    """For the statements of ``try`` statement ``node`` in each of its blocks ("body",
    "orelse", "handlers", "finalbody"): the exception types a branch or operand that fails
    while staged must not raise when the program runs (``caught_by`` of ``ops.cond``,
    ``ops.and_``, ``ops.or_``; ``outer``: those of the blocks around ``node``). The
    handlers' types in the body; and ``ops.FinallyRaises`` wherever a ``finally`` runs
    after (or is) the block: its own failure, which a staged program would check after the
    block's, replaces it in Python."""
    after = [syntax.dotted(f"{ops}.FinallyRaises")] if node.finalbody else []
    return {
        "body": distinct(outer + handler_types(node.handlers, ops) + after),
        "orelse": distinct(outer + after),
        "handlers": distinct(outer + after),
        "finalbody": distinct(outer + [syntax.dotted(f"{ops}.FinallyRaises")]),
    }


def with_caught(outer):
    """``staged_caught`` for the body of a ``with`` statement: its context manager may
    suppress any exception (``contextlib.suppress``)."""
    return distinct(outer + [syntax.name("BaseException")])


def distinct(types):
    """``types`` (expressions), each written once."""
    seen, out = set(), []
    for t in types:
        text = syntax.unparse(t)
        if text not in seen:
            seen.add(text)
            out.append(t)
    return out
