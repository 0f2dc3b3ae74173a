"""``autolax.runtime.plan``'s rules for code that may run untaken (the runtime hands them the
primitives of a branch's or operand's jaxpr; ``--standalone`` output runs the same runtime,
so the same rules: tests/cli/test_standalone.py)."""


from autolax.runtime import plan

UNKNOWN = "unknown"  # a name that is not a primitive: never safe


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
