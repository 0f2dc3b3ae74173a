"""``autolax.plan``'s rules for code that may run untaken, and the facts --standalone hands
them (``sourcegen.standalone.primitives``): one rule for both paths."""

import pytest

from autolax import plan
from autolax.sourcegen.standalone.primitives import UNKNOWN, traced_to
from autolax.transpile import syntax

SCALAR = {"x": (True, True), "y": (True, True), "n": (False, True), "xs": (True, False)}.get


def test_select_safe_takes_moves_and_a_few_cheap_scalar_ops():
    assert plan.select_safe([], effects=False)
    assert plan.select_safe([("convert_element_type", False), ("broadcast_in_dim", False)], effects=False)
    assert plan.select_safe([("mul", True), ("add", True)], effects=False)
    assert plan.select_safe([("add", True)] * plan.MAX_CHEAP, effects=False)
    assert not plan.select_safe([("add", True)] * (plan.MAX_CHEAP + 1), effects=False)  # costs more than a cond
    assert not plan.select_safe([("mul", False)], effects=False)  # work on arrays
    assert not plan.select_safe([("div", True)], effects=False)  # the jnp.where NaN-gradient trap
    assert not plan.select_safe([(UNKNOWN, True)], effects=False)
    assert not plan.select_safe([], effects=True)  # a print would repeat, a check fire
    # Inside another staged `if`'s branch: moves only.
    assert plan.select_safe([("copy", True)], effects=False, cheap_ok=False)
    assert not plan.select_safe([("add", True)], effects=False, cheap_ok=False)


def test_evaluate_anyway_takes_only_harmless_primitives_and_no_effect():
    assert plan.evaluate_anyway(["lt", "and", "gather", "reduce_sum"], effects=False)
    assert not plan.evaluate_anyway(["div", "gt"], effects=False)
    assert not plan.evaluate_anyway(["log"], effects=False)
    assert not plan.evaluate_anyway([UNKNOWN], effects=False)
    assert not plan.evaluate_anyway([], effects=True)


@pytest.mark.parametrize("source, expected", [
    ("x * x + n", [("mul", True), ("add", True)]),
    ("n * 2 - 1", []),  # Python computes it
    ("x / y > 1", [("div", True), ("gt", True)]),
    ("xs * 2", [("mul", False)]),
    ("-x < y", [("neg", True), ("lt", True)]),
    ("n // 0", [("div", True)]),  # Python would raise: not harmless, even of Python numbers
    ("f(x)", [(UNKNOWN, False)]),
    ("xs[0] > 1", [("dynamic_slice", False), ("gt", False)]),
    ("xs[z] > 1", [(UNKNOWN, False), ("gt", False)]),  # an index not known to be a number
    ("z is None", []),
    ("box['hi'] + 1", [(UNKNOWN, False)]),  # an item of a container, of a type not known
    ("box['hi']", []),
    ("jnp.minimum(x, y) + abs(n)", [("min", True), ("add", True)]),
    ("jnp.sqrt(x)", [(UNKNOWN, False)]),
    ("z", []),  # a read, whatever it holds
    ("n % 4 + 0.5 / 2", []),  # Python computes it, and cannot fail
    ("n % 0", [("rem", True)]),
    ("z + 1", [(UNKNOWN, False)]),  # of a name not known to hold a number
    ("ops.not_(x < y)", [("lt", True), ("ne", True), ("not", True)]),
])
def test_the_primitives_standalone_finds(source, expected):
    callee = lambda func: syntax.unparse(func) if syntax.unparse(func) in ("abs", "jnp.minimum") else None  # noqa: E731
    assert traced_to(syntax.parse_expr(source), SCALAR, callee=callee) == expected


def test_standalone_asks_the_same_rules():
    # `total += x * x`: a select on both paths; `a and x / y > 1`: a cond on both.
    assert plan.select_safe(traced_to(syntax.parse_expr("total + x * x"), {"total": (False, True), **{"x": (True, True)}}.get),
                            effects=False)
    assert not plan.evaluate_anyway([n for n, _ in traced_to(syntax.parse_expr("x / y > 1"), SCALAR)], effects=False)
