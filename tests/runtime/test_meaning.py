"""What an error raised while a loop's body was staged means, and what the loop does about it
(``autolax.runtime.ops.meaning``): each row of ``POLICY``, checked on an exception made here,
with no loop traced. The behaviour each row stands for is checked through every path by the
semantics tests (test_errors.py, test_core.py, test_loop_exits.py...)."""

from __future__ import annotations

import types

import jax
import pytest

from autolax.runtime import errors, plan
from autolax.runtime.ops import meaning

SITE = types.SimpleNamespace(
    kind="for",
    what="the `for` loop at f.py:3",
    where="f.py:3",
    source="for i in range(n):",
    filename="f.py",
    names=("total",),
)


def raised(make):
    """The exception ``make()`` raises, with its traceback (this file's frame: the user's)."""
    try:
        make()
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("nothing raised")


def jax_error(use):
    """JAX's error for ``use(x)`` of a traced ``x`` (one line traced: the error's type and
    text are JAX's own, which differ between releases)."""
    return raised(lambda: jax.jit(use)(1))


def fail(exc):
    raise exc


def unbound():
    exc = errors.make("unbound", name="total", at="")
    exc.name = "total"  # as the runtime's `state.unbound_error` makes it
    return exc


def after_check():
    exc = ValueError("bad")
    exc.__autolax_after_check__ = True
    return exc


def branch_unbound():
    exc = errors.make("branch-fails", side="if", stmt="the `if` at f.py:4", error="UnboundLocalError", source="")
    exc.__cause__ = unbound()
    return exc


CASES = [
    ("unstageable", lambda: fail(plan.Unstageable(errors.make("unbound", name="y", at="")))),
    ("tracer", lambda: fail(jax_error(lambda x: [1, 2, 3][x]))),
    ("tracer", lambda: fail(jax_error(lambda x: float(x)))),
    ("unbound-read", lambda: fail(unbound())),
    ("inner-refusal", lambda: fail(errors.TracedValueError("a statement inside could not be staged"))),
    ("inner-refusal", lambda: fail(errors.StateMismatchError("shapes"))),
    ("branch-unbound-read", lambda: fail(branch_unbound())),
    ("tracer-as-key", lambda: fail(TypeError("unhashable type: 'DynamicJaxprTracer'"))),
    ("tracer-as-key", lambda: {"w0": 1}["wJitTracer(int32[])"]),  # PARAMS[f"w{i}"]
    ("traced-slice", lambda: fail(IndexError("Array slice indices must have static start/stop/step"))),
    ("after-check", lambda: fail(after_check())),
    ("other", lambda: [][1]),
    ("other", lambda: fail(errors.make("body-fails", stmt="x", source="", error="E"))),
]


@pytest.mark.parametrize("kind, make", CASES)
def test_each_error_has_its_kind(kind, make):
    assert meaning.classify(raised(make)) == kind


def test_the_policy_has_a_row_per_kind_and_an_action_per_bounds():
    assert {kind for kind, _ in CASES} == set(meaning.POLICY)
    actions = {meaning.FALL_BACK, meaning.ITS_ERROR, meaning.TRACED_VALUE, meaning.TRACED_KEY, meaning.BODY_FAILS,
               meaning.NOTE}
    for static, traced in meaning.POLICY.values():
        assert static in actions and traced in actions and traced != meaning.FALL_BACK
    # Only an error of no known kind keeps a loop with static bounds from running in Python.
    assert [k for k, (static, _) in meaning.POLICY.items() if static != meaning.FALL_BACK] == ["other"]


@pytest.mark.parametrize("kind, make", [c for c in CASES if c[0] != "other"])
def test_a_loop_with_static_bounds_runs_in_python_and_says_why(kind, make):
    decision = meaning.decide(raised(make), SITE, True, lambda e: True)
    assert decision.fall_back and decision.error is None
    assert decision.reason


def test_what_a_loop_with_traced_bounds_raises():
    def decided(make, in_user_code=True):
        return meaning.decide(raised(make), SITE, False, lambda e: in_user_code)

    inner = errors.make("unbound", name="y", at="")
    d = decided(lambda: fail(plan.Unstageable(inner)))
    assert d.error is inner and not d.chained
    d = decided(lambda: fail(jax_error(lambda x: [1, 2, 3][x])))
    assert isinstance(d.error, errors.TracedValueError)
    assert str(d.error).startswith("the `for` loop at f.py:3 is staged (its bounds or condition are traced), but ")
    d = decided(lambda: fail(TypeError("unhashable type: 'DynamicJaxprTracer'")))
    assert "uses a traced value as a dict key or set item" in str(d.error)
    assert "make the dict an array indexed by the loop index" in str(d.error)
    d = decided(lambda: fail(IndexError("Array slice indices must have static start/stop/step")))
    assert isinstance(d.error, errors.TracedValueError)
    # Python raises the body's own error only if an iteration runs: autolax's body-fails.
    d = decided(lambda: [][1])
    assert d.error.code == "body-fails"
    assert "raised IndexError: list index out of range while autolax staged it" in str(d.error)
    d = decided(unbound_raising := lambda: fail(unbound()))
    assert d.error.code == "body-fails" and "UnboundLocalError: cannot access local variable 'total'" in str(d.error)
    # ...unless it is not the user's code that raised it, or it is autolax's own refusal:
    # raised again, with a note naming the loop.
    assert decided(lambda: [][1], in_user_code=False) == meaning.Decision()
    assert decided(unbound_raising, in_user_code=False) == meaning.Decision()
    assert decided(lambda: fail(errors.StateMismatchError("shapes"))) == meaning.Decision()
    assert decided(lambda: fail(branch_unbound())) == meaning.Decision()


def test_a_while_or_for_only_says_body_fails():
    # An `if` (or another statement that is not a loop) raising in its staged body: the note.
    site = types.SimpleNamespace(**{**vars(SITE), "kind": "if"})
    assert meaning.decide(raised(lambda: [][1]), site, False, lambda e: True) == meaning.Decision()


# The loop then run in Python failed too (meaning.python_loop_failure): what that error means.
def appends_differ():
    return plan.Unstageable(
        errors.make("append-length-depends-on-data", what="'out'", name="out", stmt="x", reason="r", source="")
    )


def python_loop_failure(exc, failure, checked_before=False, under_trace=True, by_user_code=True):
    return meaning.python_loop_failure(
        exc, failure, checked_before=checked_before, under_trace=under_trace, by_user_code=by_user_code
    )


def test_what_the_python_loops_error_means():
    float_of_traced = jax_error(lambda x: float(x))
    index_error = raised(lambda: [][1])
    became_traced = errors.make("while-became-traced", stmt="x", count=1, source="")
    assert python_loop_failure(became_traced, float_of_traced) == "condition-became-traced"
    # ...only where the staging failed on a concrete use of a traced value.
    assert python_loop_failure(became_traced, index_error) == "note"
    assert python_loop_failure(index_error, float_of_traced, checked_before=True) == "after-check"
    assert python_loop_failure(index_error, float_of_traced, checked_before=True, under_trace=False) == "note"
    assert python_loop_failure(index_error, float_of_traced, checked_before=True, by_user_code=False) == "note"
    refusal = raised(lambda: fail(errors.StateMismatchError("shapes")))
    assert python_loop_failure(refusal, float_of_traced, checked_before=True) == "note"  # autolax's own
    assert python_loop_failure(float_of_traced, index_error) == "tracer"
    assert python_loop_failure(float_of_traced, index_error, under_trace=False) == "note"
    assert python_loop_failure(float_of_traced, index_error, by_user_code=False) == "note"
    # The list whose appends stopped the staging met again: that first error is the cause.
    assert python_loop_failure(refusal, appends_differ()) == "same-list-again"
    again = errors.make("append-length-depends-on-data", what="'out'", name="out", stmt="x", reason="r", source="")
    assert python_loop_failure(again, appends_differ()) == "note"
    assert python_loop_failure(index_error, index_error) == "note"


def test_the_error_under_autolaxs_refusal():
    inner = errors.make("unbound", name="y", at="")
    assert meaning.autolax_cause(plan.Unstageable(inner)) is inner
    refusal = errors.StateMismatchError("shapes")
    assert meaning.autolax_cause(refusal) is refusal
    assert meaning.autolax_cause(raised(lambda: [][1])) is None
    cause = ValueError("bad")
    wrapped = errors.TracedValueError("a statement inside could not be staged")
    wrapped.__cause__ = cause
    assert meaning.underlying(wrapped) is cause and meaning.underlying(cause) is cause


# A branch, a conditional expression's side or an `and` / `or` operand failed while traced
# (meaning.branch_failure): each row of its table.
BRANCH_CASES = [
    ("traced", lambda: fail(jax_error(lambda x: float(x)))),
    ("traced", lambda: fail(jax_error(lambda x: [1, 2, 3][x]))),
    ("traced", lambda: fail(IndexError("Array slice indices must have static start/stop/step"))),
    ("taken-only", lambda: [][1]),
    ("taken-only", lambda: {}["k"]),
    ("taken-only", lambda: fail(unbound())),
    ("own", lambda: fail(errors.StateMismatchError("shapes"))),
    ("own", lambda: fail(errors.make("body-fails", stmt="x", source="", error="E"))),
]


@pytest.mark.parametrize("kind, make", BRANCH_CASES)
def test_each_branch_error_has_its_kind(kind, make):
    exc = raised(make)
    assert meaning.branch_failure(exc) == kind
    assert meaning.traced_use(exc) == (kind == "traced")
    if kind != "traced":
        assert meaning.taken_only(exc) == (kind == "taken-only")


def test_an_error_the_library_raised_is_not_the_branchs_own():
    exc = ValueError("bad")  # no traceback through this file: raised by no user code
    assert meaning.branch_failure(exc) == "own"


def test_the_type_an_except_clause_sees():
    assert meaning.python_type(raised(lambda: fail(unbound()))) is UnboundLocalError
    assert meaning.python_type(raised(lambda: [][1])) is IndexError
    assert meaning.python_type(errors.StateMismatchError("shapes")) is errors.StateMismatchError


def test_a_calls_errors():
    @jax.jit
    def itself(x):
        return itself(x)

    def assign_into_jax_array():
        a = jax.numpy.zeros(3)
        a[0] = 1.0

    assert meaning.jit_recursion(raised(lambda: itself(1)))
    assert not meaning.jit_recursion(RecursionError("maximum recursion depth exceeded"))
    assert not meaning.jit_recursion(ValueError("Recursively calling"))
    assert meaning.immutable_write(raised(assign_into_jax_array))
    assert not meaning.immutable_write(TypeError("'tuple' object does not support item assignment"))
    assert not meaning.immutable_write(ValueError("immutable"))
