"""The primitives an expression of converted code traces to, as far as static analysis knows.

This module supplies facts; ``autolax.plan`` decides with them (``select_safe``: may an
``if``'s untaken branch run under a select; ``evaluate_anyway``: may the operand after a
traced ``a`` in ``a and b`` run where Python skips it), with the rules the runtime applies to
the jaxpr it traces. What is not known here is ``UNKNOWN``, a name outside every set of the
plan: the answer is then "not allowed", which gives a ``lax.cond`` (always correct).

Known: names and number literals (no primitive: a read only moves a value), ``+ - * & | ^``,
unary ``- ~``, one comparison (``<``, ``==``, ...; ``is`` is Python's, nothing traced),
an item of a traced array at a place a number gives (``dynamic_slice``: jnp clamps it), and
``ops.not_`` / ``and_`` / ``or_`` of those. A division, ``//``, ``%`` or ``**`` gives its
primitive (outside the sets; of Python numbers by a nonzero literal, none: Python computes
it). A call, an attribute, a conditional expression, an operation on a value not known to
be a number, or anything else gives ``UNKNOWN``.

    >>> from autolax.transpile import syntax
    >>> facts = {"x": (True, True), "n": (False, True)}.get
    >>> traced_to(syntax.parse_expr("x * x + n"), facts)
    [('mul', True), ('add', True)]
    >>> traced_to(syntax.parse_expr("2 * n"), facts)  # Python computes it
    []
    >>> traced_to(syntax.parse_expr("x / n > 1"), facts)
    [('div', True), ('gt', True)]
"""

from __future__ import annotations

from autolax import plan
from autolax.transpile import syntax

UNKNOWN = "unknown"  # no primitive: what static analysis cannot tell (never allowed)

_BINARY = {syntax.Add: "add", syntax.Sub: "sub", syntax.Mult: "mul", syntax.BitAnd: "and", syntax.BitOr: "or",
           syntax.BitXor: "xor", syntax.Div: "div", syntax.FloorDiv: "div", syntax.Mod: "rem", syntax.Pow: "pow"}
_UNARY = {syntax.USub: "neg", syntax.Invert: "not"}
# Functions (as ``callee`` names them) that trace to one primitive of their arguments.
_CALLS = {"abs": "abs", "jnp.abs": "abs", "jnp.absolute": "abs", "jnp.minimum": "min", "jnp.maximum": "max",
          "jnp.sign": "sign"}
_COMPARE = {syntax.Lt: "lt", syntax.LtE: "le", syntax.Gt: "gt", syntax.GtE: "ge", syntax.Eq: "eq", syntax.NotEq: "ne"}


def traced_to(node, facts, ops: str = "ops", callee=None) -> list[tuple[str, bool]]:
    """The ``(primitive name, result is a scalar)`` pairs evaluating ``node`` traces to, as
    ``plan.select_safe`` takes them (``plan.evaluate_anyway`` takes their names).
    ``facts(name)``: ``(traced, scalar)`` for a variable holding a number, None when that is
    not known (or it is no number: a list, a function...). ``ops``: the name converted code
    gives autolax's runtime module. ``callee(func)``: what a call's function is, ``"abs"``
    for the builtin, ``"jnp.minimum"`` for jax.numpy's (None: not known)."""
    found = []
    _walk(node, _Known(facts, ops, callee), found)
    return found


def result(node, facts, ops: str = "ops", callee=None) -> tuple[bool, bool] | None:
    """``(traced, scalar)`` for the value of ``node`` (``traced_to``'s facts), as far as
    known (None: not known to be a number)."""
    return _walk(node, _Known(facts, ops, callee), [])


class _Known:
    """What ``_walk`` is told: ``facts``, ``ops`` and ``callee`` of ``traced_to``."""

    def __init__(self, facts, ops, callee):
        self.facts, self.ops, self.callee = facts, ops, callee or (lambda func: None)


def _walk(node, known, found) -> tuple[bool, bool] | None:
    """Appends to ``found`` what ``node`` traces to; returns (traced, scalar) for its value
    (None: a value that is not known to be a number, such as a name of a list or of None,
    whose read traces nothing, but whose use in an operation is ``UNKNOWN``)."""
    if isinstance(node, syntax.Constant):
        return (False, True) if isinstance(node.value, (bool, int, float)) else None
    elif isinstance(node, syntax.Name):
        return known.facts(node.id)
    elif isinstance(node, syntax.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (syntax.Is, syntax.IsNot)):
        for operand in [node.left] + node.comparators:  # Python's `is`: nothing is traced
            _walk(operand, known, found)
        return False, True
    elif isinstance(node, syntax.BinOp):
        name = _BINARY.get(type(node.op), UNKNOWN)
        # Python computes arithmetic of Python numbers: by a nonzero literal it cannot fail.
        computed = name in ("div", "rem", "pow") and _literal(node.right) not in (None, 0) \
            and not (name == "pow" and _literal(node.right) < 0)
        return _apply(name, [node.left, node.right], known, found, computed=computed)
    elif isinstance(node, syntax.UnaryOp):
        return _apply(_UNARY.get(type(node.op), UNKNOWN), [node.operand], known, found)
    elif isinstance(node, syntax.Compare) and len(node.ops) == 1:
        return _apply(_COMPARE.get(type(node.ops[0]), UNKNOWN), [node.left] + node.comparators, known, found)
    elif isinstance(node, syntax.Subscript) and isinstance(node.value, syntax.Name) \
            and known.facts(node.value.id) == (True, False) \
            and not isinstance(node.slice, (syntax.Slice, syntax.Tuple)):
        index = _walk(node.slice, known, found)
        # An item of a traced array at a place a number gives (jnp indexing clamps it).
        found.append(("dynamic_slice" if index is not None else UNKNOWN, False))
        return True, False
    elif isinstance(node, syntax.Subscript) and isinstance(node.value, syntax.Name) \
            and known.facts(node.value.id) is None and (_literal(node.slice) is not None or _text(node.slice)):
        return None  # an item of a Python list or tuple, or of a value not known: Python's
    elif isinstance(node, syntax.Call) and not node.keywords and known.callee(node.func) in _CALLS \
            and not any(isinstance(a, syntax.Starred) for a in node.args):
        return _apply(_CALLS[known.callee(node.func)], node.args, known, found)
    elif isinstance(node, syntax.Call) and not node.keywords and _op(node, known.ops) in ("not_", "and_", "or_"):
        op = _op(node, known.ops)
        operands = [node.args[0]] + [a.body if isinstance(a, syntax.Lambda) else None for a in node.args[1:]]
        if op != "not_" and None not in operands:
            # The runtime's traced `a and b`: `b` itself, then both combined (a logical
            # operation, or a `jnp.where` of `a != 0` for numbers): counted at the most.
            return _apply(op[:-1], operands, known, found, also=("ne", "select_n"))
        if op == "not_" and len(operands) == 1:
            return _apply("not", operands, known, found, also=("ne",))  # `x != 0` first for numbers
    found.append((UNKNOWN, False))
    return True, False


def _apply(name, operands, known, found, also=(), computed=False):
    """``computed``: of Python numbers, Python computes it without fail (else only the
    operations of ``plan.CHEAP`` are taken to)."""
    results = [_walk(o, known, found) for o in operands]
    if None in results:  # of a value not known to be a number
        found.append((UNKNOWN, False))
        return True, False
    traced = any(t for t, _ in results)
    scalar = all(s for _, s in results)
    if traced or not (computed or name in plan.CHEAP):
        found.extend((n, scalar) for n in (*also, name))
    return traced, scalar


def _literal(node):
    """The number a literal (``3``, ``-0.5``) gives, else None."""
    if isinstance(node, syntax.UnaryOp) and isinstance(node.op, syntax.USub):
        value = _literal(node.operand)
        return None if value is None else -value
    if isinstance(node, syntax.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _text(node) -> bool:
    return isinstance(node, syntax.Constant) and isinstance(node.value, str)


def _op(node, ops):
    """``'not_'`` for a call ``ops.not_(...)`` of converted code, else None."""
    func = node.func
    if isinstance(func, syntax.Attribute) and isinstance(func.value, syntax.Name) and func.value.id == ops:
        return func.attr
    return None
