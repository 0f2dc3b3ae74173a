"""What an error raised while a loop's body was traced for lax means, and what the loop does
about it: the twin of ``autolax.runtime.plan``, which decides before tracing whether a loop
is staged; this decides after its body failed to stage.

``classify(exc)`` names the error's kind from the exception alone (its type, its code, its
message, whether the user's code raised it): no tracing, no site. ``POLICY`` says per kind
what the loop does when its bounds are static, so that it may run as a Python loop instead
(``FALL_BACK``: its iterations run one by one while tracing, and autolax warns afterwards),
and when they are traced, so that it may not (autolax's refusal, or the error raised again
with a note naming the loop). ``decide`` applies the table to one error at one loop.
``tests/test_meaning.py`` checks the table row by row without tracing anything.

    kind                  bounds static   bounds traced
    unstageable           FALL_BACK       ITS_ERROR       a statement the plan refused to stage
    tracer                FALL_BACK       TRACED_VALUE    JAX's tracer error (float(i), lst[i])
    unbound-read          FALL_BACK       BODY_FAILS      a read of a variable with no value
    inner-refusal         FALL_BACK       NOTE            autolax's error for a statement inside
    branch-unbound-read   FALL_BACK       NOTE            the same read, in a staged branch
    tracer-as-key         FALL_BACK       TRACED_KEY      d[i], i in seen, PARAMS[f"w{i}"]
    traced-slice          FALL_BACK       TRACED_VALUE    xs[i:i + w] with the loop index
    after-check           FALL_BACK       BODY_FAILS      raised after a check staged earlier
    other                 NOTE            BODY_FAILS      anything else

The other ops ask here too what an error means, each a pure function of the exception:
``python_loop_failure`` (the loop then run in Python failed as well), ``branch_failure``
(a branch, a side or an operand Python runs only on some paths failed while traced:
``ops.control``, ``ops.logical``), ``jit_recursion`` and ``immutable_write`` (a call's
error: ``ops.calls``). What an error leaving the user's own statements means
(``report.escaped_tracer_error``) stays with the messages in ``ops.report``, which this
module builds on.
"""

from __future__ import annotations

import dataclasses

import jax

from autolax.runtime import errors, plan
from autolax.runtime.errors import StateMismatchError, UndefinedVariableError
from autolax.runtime.ops import report
from autolax.runtime.ops.tracing import raised_after_check

# Errors that mean "this body cannot be staged" whatever raised them: the loop runs in Python
# instead when it can.
UNSTAGEABLE = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
    jax.errors.NonConcreteBooleanIndexError,
    errors.TracedValueError,  # a statement inside could not be staged: this one may run in Python
    StateMismatchError,
    UndefinedVariableError,
    plan.Unstageable,
)

# What the loop does.
FALL_BACK = "run the loop in Python"
ITS_ERROR = "raise autolax's error the statement planned not to stage carries"
TRACED_VALUE = "TracedValueError: its bounds or condition are traced"
TRACED_KEY = "TracedValueError: a traced value used as a key, with its bounds or condition traced"
BODY_FAILS = "body-fails where the user's code raised it (Python raises it only if an iteration runs), else NOTE"
NOTE = "raise the error again, with a note naming the loop"

# kind -> (bounds static: the loop may run in Python, bounds traced)
POLICY = {
    "unstageable": (FALL_BACK, ITS_ERROR),
    "tracer": (FALL_BACK, TRACED_VALUE),
    "unbound-read": (FALL_BACK, BODY_FAILS),
    "inner-refusal": (FALL_BACK, NOTE),
    "branch-unbound-read": (FALL_BACK, NOTE),
    "tracer-as-key": (FALL_BACK, TRACED_KEY),
    "traced-slice": (FALL_BACK, TRACED_VALUE),
    "after-check": (FALL_BACK, BODY_FAILS),
    "other": (NOTE, BODY_FAILS),
}


def classify(exc: BaseException) -> str:
    """The kind of ``exc`` (a key of ``POLICY``), raised while a loop's body was traced."""
    if isinstance(exc, UNSTAGEABLE):
        if isinstance(exc, plan.Unstageable):
            return "unstageable"
        if isinstance(exc, report.TRACER_ERRORS):
            return "tracer"
        if report.unbound_read(exc):
            return "unbound-read"
        return "inner-refusal"
    if report.failed_at_unbound_read(exc):
        return "branch-unbound-read"
    if report.unhashable_tracer(exc) or report.tracer_in_message(exc):
        return "tracer-as-key"
    if report.traced_slice(exc):
        return "traced-slice"
    if raised_after_check(exc) and report.raised_by_user_code(exc):
        return "after-check"
    return "other"


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a loop does about the error its body raised while staged: run in Python
    (``fall_back``, with ``reason`` and ``rewrite`` for its warning), raise ``error`` (from
    the body's error, or from nothing when ``chained`` is False), or raise the body's error
    again with a note (neither)."""

    fall_back: bool = False
    reason: str | None = None
    rewrite: str | None = None
    error: BaseException | None = None
    chained: bool = True


def decide(exc: BaseException, site, can_fall_back: bool, in_user_code) -> Decision:
    """``POLICY`` applied to ``exc``, raised while the body of the loop ``site`` was traced;
    ``in_user_code(exc)``: did the user's code raise it (not autolax, not a library)?"""
    kind = classify(exc)
    action = POLICY[kind][0 if can_fall_back else 1]
    if action == FALL_BACK:
        reason, rewrite = _why(kind, exc, site)
        return Decision(fall_back=True, reason=reason, rewrite=rewrite)
    if action == ITS_ERROR:
        return Decision(error=exc.error, chained=False)
    if action == TRACED_VALUE:
        return Decision(error=report.traced_value_error(exc, site, "its bounds or condition are traced"))
    if action == TRACED_KEY:
        reason, rewrite = _why(kind, exc, site)
        error = errors.make(
            "traced-value",
            stmt=site.what,
            why="its bounds or condition are traced",
            reason=reason,
            source=site.source,
            fix=rewrite,
        )
        return Decision(error=error)
    if (
        action == BODY_FAILS
        and site.kind in ("for", "while")
        and (report.unbound_read(exc) or not isinstance(exc, errors.AutolaxError))
        and in_user_code(exc)
    ):
        # The loop may run no iteration (its bounds or condition are traced): Python would
        # raise this only if one runs.
        error = report.python_error(exc).split("\n")[0]
        return Decision(error=errors.make("body-fails", stmt=site.what, source=site.source, error=error))
    return Decision()


def _why(kind: str, exc: BaseException, site) -> tuple[str, str | None]:
    """Why the body could not be staged, and how to change it so that it can."""
    if kind == "branch-unbound-read":
        # A staged `if` in the body read a variable with no value: as for such a read in the
        # body itself, the loop runs in Python (where the variable a later statement of the
        # body assigns has one from the second iteration on).
        return report.unstageable_reason(exc.__cause__, site), report.unstageable_fix(exc.__cause__)
    if kind == "tracer-as-key":
        # `TABLE[i]` of a dict (or `i in seen` of a set) with the loop index: Python hashes the
        # key, which a tracer cannot give; `PARAMS[f"w{i}"]`: the key holds the tracer's text,
        # not the number. As a Python loop the index is a number.
        reason = (
            "uses a traced value as a dict key or set item (e.g. looks up a Python dict with the loop index)"
            if report.unhashable_tracer(exc)
            else f"raised `{report.python_error(exc)}` with a traced value where Python has a number "
            "(e.g. formats the loop index into a dict key)"
        )
        rewrite = (
            "make the dict an array indexed by the loop index before the loop "
            "(`table = jnp.asarray([d[k] for k in range(n)])`), or loop over its items."
        )
        return reason, rewrite
    if kind == "after-check":
        # The body raised this while staged, after a `raise` / `assert` it stages as a check:
        # when the program runs, the check may fail first. As a Python loop, each iteration's
        # checks come before its later statements, and the error of whichever fails first is
        # raised (or refused: `fails-after-check`).
        return f"`{report.python_error(exc)}` was raised while staging its body, after a check", None
    return report.unstageable_reason(exc, site), report.unstageable_fix(exc)


# ----------------------------------------------------------------------------- the Python loop's error
def underlying(failure: BaseException) -> BaseException:
    """The error the body raised while staged, under autolax's ``TracedValueError`` that
    says a statement inside could not be staged (that error itself otherwise)."""
    return failure.__cause__ if isinstance(failure, errors.TracedValueError) else failure


def autolax_cause(failure: BaseException) -> BaseException | None:
    """Autolax's own reason why the body could not be staged, if it gave one: the error
    itself (one of ``UNSTAGEABLE``), or the error a ``plan.Unstageable`` carries."""
    if not isinstance(failure, UNSTAGEABLE):
        return None
    return failure if isinstance(failure, errors.AutolaxError) else getattr(failure, "error", None)


def python_loop_failure(exc, failure, *, checked_before: bool, under_trace: bool, by_user_code: bool) -> str:
    """What ``exc`` means, raised by a loop run in Python because its body failed to stage
    with ``failure``:

    ``condition-became-traced``  a ``while`` whose condition became traced, because of the
                                 concrete use that stopped its staging: ``while-needs-concrete``
    ``after-check``              the user's code raised it while tracing after a check was
                                 staged (``checked_before``), which may fail first when the
                                 program runs: ``fails-after-check``
    ``tracer``                   JAX's tracer error out of the user's code while tracing:
                                 ``TracedValueError``
    ``same-list-again``          the loop's staged ``if`` met the list whose appends stopped
                                 the staging: that first error, raised again
    ``note``                     anything else: ``exc`` with a note that the loop ran in Python

    ``by_user_code``: did the user's code raise ``exc``?"""
    if getattr(exc, "code", None) == "while-became-traced" and report.concrete_use(underlying(failure)) is not None:
        return "condition-became-traced"
    if checked_before and under_trace and not isinstance(exc, errors.AutolaxError) and by_user_code:
        return "after-check"
    if isinstance(exc, report.TRACER_ERRORS) and under_trace and by_user_code:
        return "tracer"
    cause = autolax_cause(failure)
    if (
        isinstance(exc, StateMismatchError)
        and getattr(cause, "code", None) == "append-length-depends-on-data"
        and getattr(exc, "code", None) != cause.code
    ):
        return "same-list-again"
    return "note"


# ----------------------------------------------------------------------------- a branch's error
# What an error raised while a branch of a traced `if`, a side of a traced conditional
# expression or an operand after a traced `and` / `or` was traced means:
#
#     kind          the branch does                                                  e.g.
#     traced        TracedValueError: its condition is traced                        float(i), xs[i:i + w]
#     taken-only    raises it when the program takes the branch, else refused        items[5], del x; x
#     own           raises it again (autolax's or JAX's own, a loop may fall back)   a shape mismatch


def branch_failure(exc: BaseException) -> str:
    """The kind of ``exc`` (see the table above), raised while a branch Python runs only
    on some paths was traced: ``traced``, ``taken-only`` or ``own``."""
    if traced_use(exc):
        return "traced"
    if taken_only(exc):
        return "taken-only"
    return "own"


def taken_only(exc: BaseException) -> bool:
    """Is ``exc``, raised while a branch or operand Python runs only on some paths was traced,
    an error Python raises only on the runs that take it: an error of the user's code, or a
    read of a variable with no value (Python's ``UnboundLocalError``)? Otherwise it is
    autolax's or JAX's own, which says what went wrong (and lets a loop around fall back)."""
    return report.raised_by_user_code(exc) or report.unbound_read(exc)


def python_type(exc: BaseException) -> type:
    """The type of the exception Python raises where ``exc`` was raised, as an ``except``
    clause would match it: ``UnboundLocalError`` for autolax's unbound read."""
    return UnboundLocalError if report.unbound_read(exc) else type(exc)


def traced_use(exc: BaseException) -> bool:
    """Is ``exc`` JAX's error for a traced value used where Python needs a concrete one
    (``report.TRACER_ERRORS``), or for a slice with traced bounds?"""
    return isinstance(exc, report.TRACER_ERRORS) or report.traced_slice(exc)


# ----------------------------------------------------------------------------- a call's error
def jit_recursion(exc: BaseException) -> bool:
    """Is ``exc`` ``jax.jit``'s error for a jitted function called again inside its own
    trace ("Recursively calling ...": an ``@autolax.jit`` function calling itself under a
    traced condition)?"""
    return isinstance(exc, RecursionError) and str(exc).startswith("Recursively calling")


def immutable_write(exc: BaseException) -> bool:
    """Is ``exc`` JAX's error for an item assigned into a JAX array (``v[i] = 0.0``: "JAX
    arrays are immutable")?"""
    return isinstance(exc, TypeError) and "immutable" in str(exc)
