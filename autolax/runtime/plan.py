"""Staging decisions, made in one place: what each statement becomes.

The runtime (``autolax.runtime.ops``) calls these functions at trace time with what it sees (is the
condition traced? does the loop carry floating-point values?), and names each decision with
the words of the trace report ("became" column). Every path runs the runtime, so each
decision is made here, once: ``autolax.jit``, ``autolax.convert``, the magic, ``autolax
convert`` output, and ``--standalone`` output, whose ``autolax_runtime`` package is a copy of
these modules (``cli.runtime_copy``).

The functions here are pure: they take facts and return a form (or a reason). Among them:

* ``if_form`` with ``select_safe``: may an ``if``'s untaken branch run anyway, so that the
  ``if`` becomes a ``lax.select`` (``jnp.where``) rather than a ``lax.cond``? The runtime
  passes the primitives of each branch's jaxpr.
* ``logical_form`` with ``evaluate_anyway``: may the operand after a traced ``a`` in
  ``a and b`` / ``a or b`` be evaluated although Python would skip it (``jnp.logical_*``), or
  must it run under a ``lax.cond``?
"""

from __future__ import annotations

from dataclasses import dataclass

# ----------------------------------------------------------------------------- forms
PYTHON = "python (static)"
COND = "lax.cond"
SELECT = "lax.select"
WHILE = "lax.while_loop"
EARLY_EXIT = "lax.while_loop (grad: masked lax.scan)"
SCAN = "lax.scan"
MASKED_SCAN = "lax.scan (masked)"
FORI = "lax.fori_loop"
BOUNDED = "lax.while_loop (grad: checkpointed)"
LOGICAL = "jnp.logical"  # `and` / `or` / `not` of traced values, both operands evaluated


def unrolled(reason: str) -> str:
    return f"python (unrolled: {reason})"


# How deep a function may call itself inside staged bodies: a staged `if` traces both
# branches, so a recursion that stops on a traced condition would never stop while tracing
# (the runtime's TracedRecursionError past this depth).
MAX_STAGED_RECURSION = 32


class Unstageable(Exception):
    """A loop body cannot be expressed as a lax loop. Carries the autolax error that says
    why: raised as is when the loop cannot run in Python instead (its bounds are traced)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


# ----------------------------------------------------------------------------- untaken code
# Primitives that only move or retype values: a branch made of these computes nothing that
# could fail, loop, produce a NaN or have an effect, so running it untaken is harmless.
MOVES = frozenset({"convert_element_type", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "copy", "copy_p"})

# Scalar arithmetic whose derivatives are finite wherever its inputs are: run untaken under a
# select, it can overflow to inf but never raises, and the select's zero cotangent keeps the
# untaken side out of gradients (unlike `div`, `log`, `sqrt`, `pow`: the `jnp.where` trap).
CHEAP = frozenset(
    {
        "add",
        "sub",
        "mul",
        "neg",
        "max",
        "min",
        "abs",
        "sign",
        "select_n",
        "not",
        "and",
        "or",
        "xor",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "floor",
        "ceil",
        "round",
        # integer bit operations (`crc = (crc << 1) ^ 0x1021`): a shift by any
        # amount is defined in XLA (never fails), and integers have no gradient
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
    }
)
MAX_CHEAP = 4  # more work than this on the untaken side costs more than the cond it saves

# Primitives that cannot fail, loop, have an effect or turn a finite value into a NaN:
# evaluating an operand made of these although Python would skip it changes nothing. (A
# call of a jitted function -- `jnp.where`, `jnp.clip` -- counts by the primitives inside it.)
HARMLESS = frozenset(
    {
        "lt",
        "le",
        "gt",
        "ge",
        "eq",
        "ne",
        "and",
        "or",
        "not",
        "xor",
        "convert_element_type",
        "broadcast_in_dim",
        "reshape",
        "squeeze",
        "expand_dims",
        "copy",
        "copy_p",
        "select_n",
        "add",
        "sub",
        "mul",
        "neg",
        "abs",
        "max",
        "min",
        "sign",
        "slice",
        "dynamic_slice",
        "gather",
        "concatenate",
        "iota",
        "reduce_and",
        "reduce_or",
        "reduce_max",
        "reduce_min",
        "reduce_sum",
        "is_finite",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
    }
)


def select_safe(ops, effects: bool, cheap_ok: bool = True) -> bool:
    """May a branch of a traced ``if`` run although the condition does not take it (the
    ``if`` then becomes a select of both branches' values)? ``ops``: the branch's work, as
    ``(primitive name, result is a scalar)`` pairs (a name that is not a primitive, such as
    ``"unknown"``, is never safe); ``effects``: it prints or checks something.

    Yes when it only moves values (``found = i; break_ = True``, the flags that
    ``break``/``return`` lower to: ``MOVES``), or (``cheap_ok``) also computes at most
    ``MAX_CHEAP`` scalar sums, products, comparisons and integer bit operations (``total +=
    x * x``, ``crc = (crc << 1) ^ 0x1021``: ``CHEAP``; integer ``//`` and ``%`` are not
    among them, as they can divide by zero).
    Not with an effect (a print would repeat, a check fire on the path Python does not
    take), nor with anything that can fail or divide (``div``, ``log``, ``sqrt``, ``pow``:
    under a ``jnp.where`` their NaN on the untaken side poisons the gradient), nor with
    work on arrays (then a conditional costs less). ``cheap_ok`` is false inside another
    staged ``if``'s branch (XLA's CPU backend ran the select form of an if/elif chain in a
    loop 1.7x slower than nested conds)."""
    if effects:
        return False
    work = 0 if cheap_ok else MAX_CHEAP
    for name, scalar in ops:
        if name in MOVES:
            continue
        if name not in CHEAP or not scalar:
            return False
        work += 1
    return work <= MAX_CHEAP


def evaluate_anyway(primitives, effects: bool) -> bool:
    """May the operand after a traced ``a`` in ``a and b`` / ``a or b`` be evaluated where
    Python would skip it (both combined with ``jnp.logical_*`` / ``jnp.where``)? Only when
    nothing in it can tell: no effect (a print would repeat, a check fire, a list change)
    and every primitive it traces to is ``HARMLESS`` (no ``div``, ``log``, ``sqrt``,
    ``pow``: their NaN or error where Python would not evaluate them). Otherwise it runs
    under ``lax.cond``, only where Python runs it."""
    return not effects and all(name in HARMLESS for name in primitives)


# ----------------------------------------------------------------------------- conditions
TRUTH_AS_IS = "as is"  # a boolean of one element
TRUTH_NONZERO = "!= 0"  # a number of another kind: Python's truth value is `!= 0` (complex too)
EMPTY_CONDITION = "empty-condition"  # refused (ArrayConditionError), as NumPy refuses it
NOT_ONE_VALUE = "array-condition"  # refused (ArrayConditionError)


def condition_truth(shape: tuple | None, boolean: bool | None) -> str | None:
    """How a traced condition (of an ``if``, ``while``, conditional expression, ``and`` /
    ``or`` / ``not``) becomes the boolean scalar lax takes, with Python's (NumPy's) truth
    value: ``TRUTH_AS_IS`` for a boolean of one element, ``TRUTH_NONZERO`` for one element
    of another kind (or of a kind not known) -- one element of any rank is its value, as
    ``bool(np.ones((1, 1)))`` is -- ``EMPTY_CONDITION`` for an empty array and
    ``NOT_ONE_VALUE`` for several elements: both refused (``ArrayConditionError``).
    ``shape`` None: not known (no decision)."""
    if shape is None:
        return None
    size = 1
    for n in shape:
        size *= n
    if size == 0:
        return EMPTY_CONDITION
    if size != 1:
        return NOT_ONE_VALUE
    return TRUTH_AS_IS if boolean else TRUTH_NONZERO


# ----------------------------------------------------------------------------- if
def if_form(pred_traced: bool, only_moves: bool = False) -> str:
    """``if``: Python for a concrete condition; ``lax.select`` when running the untaken
    branch is harmless and cheap (``only_moves``: ``select_safe`` of both branches -- they
    assign existing values or do a few scalar sums and comparisons; nothing can fail, loop,
    divide or have an effect, and a select costs less than a conditional); otherwise
    ``lax.cond``, which runs only the taken branch."""
    if not pred_traced:
        return PYTHON
    return SELECT if only_moves else COND


def ternary_form(pred_traced: bool) -> str:
    """``a if c else b``: only the chosen side runs, as in Python."""
    return COND if pred_traced else PYTHON


def logical_form(value_traced: bool, rest_is_cheap: bool) -> str:
    """``a and b`` / ``a or b`` once ``a`` is known: Python short-circuit for a concrete
    ``a``; for a traced one, both operands combined with ``jnp`` when evaluating ``b`` on
    the untaken path is harmless (``rest_is_cheap``: ``evaluate_anyway`` -- no effect,
    nothing that can fail or produce NaNs);
    otherwise ``lax.cond``, so ``b`` runs only when Python would run it."""
    if not value_traced:
        return PYTHON
    return LOGICAL if rest_is_cheap else COND


# ----------------------------------------------------------------------------- loops
@dataclass(frozen=True)
class LoopFacts:
    """What is known about a loop when its form is chosen (after its body was traced)."""

    kind: str  # "while" or "for"
    static_trip: bool = False  # a `for` whose trip count is a Python int
    exit_traced: bool = False  # a `break` / `return` under a traced condition
    inexact: bool = False  # carries floating-point values (so it may be differentiated)
    effects: bool = False  # the body prints (custom_jvp takes no effects)
    max_steps: int | None = None  # a stated bound (autolax.loop_options, autolax.jit(max_steps=))


def stages(driver_traced: bool, state_traced: bool) -> bool:
    """Is a loop staged at all? Yes when anything it depends on is traced: its condition,
    bounds or iterable (the driver), or the values it carries or its body reads. A loop
    over static state computes Python values and stays a Python loop."""
    return driver_traced or state_traced


def can_fall_back(driver_traced: bool) -> bool:
    """A loop whose body cannot be staged runs as a Python loop (unrolled into the trace,
    with a warning) -- possible only when its condition or bounds are Python values."""
    return not driver_traced


def loop_form(facts: LoopFacts) -> str:
    """The lax form of a staged loop.

    ==========================================  ============================================
    ``while``                                   ``lax.while_loop``
    ``for``, static trip count                  ``lax.scan`` (reverse-differentiable)
    ``for``, static trip count, traced exit,    ``lax.while_loop`` that stops at the exit,
    floating-point carries                      differentiated as the masked ``lax.scan``
    ... and a body with effects (``print``)     the masked ``lax.scan`` (custom_jvp takes no
                                                effects)
    ``for``, static trip count, traced exit,    ``lax.while_loop`` (nothing to differentiate)
    no floating-point carries
    ``for``, traced trip count                  ``lax.fori_loop``; with a traced exit
                                                ``lax.while_loop``
    ``while`` or traced trip count, with a      a ``lax.while_loop`` whose reverse-mode
    bound (``max_steps``) and floating-point    derivative is checkpointed (bounded by
    carries                                     ``max_steps``; the plain loop when not
                                                differentiated)
    ==========================================  ============================================
    """
    bounded = facts.max_steps is not None and facts.inexact
    if facts.kind == "while":
        return BOUNDED if bounded else WHILE
    if facts.static_trip:
        if not facts.exit_traced:
            return SCAN
        if facts.inexact:
            return MASKED_SCAN if facts.effects else EARLY_EXIT
        return WHILE
    if bounded:
        return BOUNDED
    return WHILE if facts.exit_traced else FORI


def appends_forbidden(facts: LoopFacts) -> str | None:
    """Why a staged loop cannot collect list appends as stacked outputs (None: it can).
    The number of items must not depend on data."""
    if facts.kind == "while":
        return "a `while` loop's trip count is decided at run time"
    if not facts.static_trip:
        return "the loop's trip count is traced"
    if facts.exit_traced:
        return "the loop can end early (`break` or `return`)"
    return None


# ----------------------------------------------------------------------------- print
DEBUG_PRINT = "jax.debug print"


def print_form(args_traced: bool, in_staged_body: bool) -> str:
    """``print(*args)``: Python's ``print`` for concrete arguments outside staged code;
    otherwise printed when the program runs (``jax.debug``), once per executed iteration
    or branch. Inside a staged branch or loop body (or a traced function: ``in_staged_body``
    is then true for its top level too) even concrete arguments are printed so: Python would
    print them once, while tracing, instead of each time the statement runs."""
    return DEBUG_PRINT if args_traced or in_staged_body else PYTHON
