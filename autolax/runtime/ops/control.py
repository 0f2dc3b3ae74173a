"""``if`` statements and conditional expressions."""

from __future__ import annotations

import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.runtime import errors, plan, sites
from autolax.runtime.ops import calls, checks, meaning, report
from autolax.runtime.ops.state import (
    State,
    is_none_spec,
    is_tracer,
    join_branches,
    keep_raised_state,
    merge_kept,
    watching_none_returns,
    write_back,
)
from autolax.runtime.ops.tracing import Traced, accumulations, pack, trace


def predicate(pred, where: str):
    """A traced condition as a boolean scalar, with Python's truthiness (nonzero is true):
    NumPy's, for an array of one element of any rank (``bool(np.ones((1, 1)))`` is True)."""
    __tracebackhide__ = True
    shape = tuple(getattr(pred, "shape", ()))
    form = plan.condition_truth(shape, pred.dtype == jnp.bool_)
    if form == plan.EMPTY_CONDITION:
        raise errors.make("empty-condition", where=where, shape=shape)
    if form == plan.NOT_ONE_VALUE:
        raise errors.make("array-condition", where=where, shape=shape)
    if shape != ():
        pred = jnp.reshape(pred, ())
    return pred != 0 if form == plan.TRUTH_NONZERO else pred


def only_moves(traced, cheap_ok: bool = True) -> bool:
    """True when running a traced branch untaken is harmless and cheaper than a conditional
    (``plan.select_safe`` decides, given the primitives of the branch's jaxpr)."""
    jaxpr = traced.jaxpr.jaxpr
    ops = ((eqn.primitive.name, all(getattr(v.aval, "shape", None) == () for v in eqn.outvars)) for eqn in jaxpr.eqns)
    return plan.select_safe(ops, bool(jaxpr.effects), cheap_ok)


def _known_bool(value):
    """``value`` as a Python bool when it is a constant boolean scalar (``flag = True``), else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if (
        isinstance(value, (jax.Array, np.ndarray))
        and not is_tracer(value)
        and value.shape == ()
        and value.dtype == np.bool_
    ):
        return bool(value)
    return None


def _select(pred, on_true, on_false):
    if on_true is on_false:  # both sides give the value as it was: no select
        return on_true
    known_true, known_false = _known_bool(on_true), _known_bool(on_false)
    on_true, on_false = jnp.asarray(on_true), jnp.asarray(on_false)  # Python numbers stay weakly typed
    pred = jnp.broadcast_to(pred, on_true.shape)
    if on_true.dtype == jnp.bool_ and on_false.dtype == jnp.bool_ and on_true.shape == on_false.shape == ():
        # A flag set to a constant on one side (`break_ = True`): one logical operation.
        if known_true is not None:
            return pred | on_false if known_true else ~pred & on_false
        if known_false is not None:
            return ~pred | on_true if known_false else pred & on_true
    if on_true.dtype == jnp.bool_:
        # The same as a select, but XLA's CPU backend runs a select of booleans inside a
        # loop body markedly slower than this (it also folds `flag = True` to `pred | flag`).
        return (pred & on_true) | (~pred & on_false)
    return lax.select(pred, on_true, on_false)


def staged_cond(
    pred, true_fn, false_fn, operands, site, in_names=None, out_names=None, select_ok=False, caught_by=(), taken=None
):
    """Stages ``true_fn(*operands) if pred else false_fn(*operands)``.

    Each function is traced once; their outputs (``out_names``, default: the site's names)
    are reconciled to one type. Returns ``(outputs, form, kept)``: the tuple of outputs, the
    form ``plan.if_form`` chose -- ``lax.select`` when ``select_ok`` and both branches only
    move values, else ``lax.cond`` -- and per output the objects both branches changed in
    place (``state.kept_in_place``, for ``write_back``). ``caught_by``: the exception types
    the handlers of the ``try`` around the ``if`` catch (see ``fails_when_taken``).
    ``taken``: what ``true_fn`` is where it is not an ``if``'s branch (an iteration of a
    loop run as Python under its traced exit), whose error of the user's code is raised
    when the program takes it, as a branch's is.
    """
    __tracebackhide__ = True
    out_names = list(site.names if out_names is None else out_names)
    in_names = list(site.names if in_names is None else in_names)
    pred = predicate(pred, site.where)
    in_state = State.of(in_names, operands, site)
    report.count_trace(site)
    try:
        with watching_none_returns() as true_unsure:
            true_traced = _trace_branch(true_fn, in_state, out_names, site, "if", caught_by, taken)
    except errors.AutolaxError as refusal:
        if getattr(refusal, "code", None) == "branch-fails":
            _raise_if_both_fail(refusal, lambda: _trace_branch(false_fn, in_state, out_names, site, "else", caught_by))
        raise
    with watching_none_returns() as false_unsure:
        false_traced = _trace_branch(false_fn, in_state, out_names, site, "else", caught_by)
    true_traced, false_traced = returns_none(
        true_traced,
        false_traced,
        (true_unsure, false_unsure),
        in_state,
        operands,
        out_names,
        site,
        getattr(true_fn, "__code__", None),
        (true_fn, false_fn),
    )
    outputs, form = cond_of_traced(pred, true_traced, false_traced, in_state.dynamic(operands), site, select_ok)
    return outputs, form, _kept(true_traced, false_traced)


def returns_none(true_traced, false_traced, unsure, in_state, operands, out_names, site, code=None, fns=()):
    """The two traced branches of a staged ``if``, with a branch that returns ``None`` where
    the other returns a value made a branch that fails when the program takes it.

    Python's function returns a value or ``None`` depending on data (an iterative method
    that prints "did not converge" and falls off the end; a ``while True:`` loop whose only
    exit is a ``return``, whose path out of the loop Python never takes); a compiled
    program returns one structure. The program returns the value, and a run that takes
    the ``None`` path -- after what that path prints -- raises autolax's ``returns-none``
    error (a check, as a ``raise`` there is). Only where the branch returns ``None`` on every
    run that takes it: not a ``None`` the ``if`` was given (an operand), nor one a staged
    statement inside the branch joined with a path that has not returned yet
    (``unsure``: ``state.watching_none_returns``), whose runs may go on to return a value.
    A branch that gives a name back unchanged reads it from its closure (not an operand):
    ``fns``, the branch functions, give that value."""
    __tracebackhide__ = True
    if true_traced.raises or false_traced.raises:
        return true_traced, false_traced
    given = None
    for k, name in enumerate(out_names):
        if site.roles.get(name) != sites.RETURN_VALUE:
            continue
        if given is None:
            given = {**_closure_values(fns), **dict(zip(in_state.names, operands))}
        a, b = true_traced.out.specs[k], false_traced.out.specs[k]
        if is_none_spec(a) == is_none_spec(b) or a.is_undefined or b.is_undefined or a.is_pending or b.is_pending:
            continue
        side, none_traced, none_spec, value_spec, marks = (
            ("if", true_traced, a, b, unsure[0]) if is_none_spec(a) else ("else", false_traced, b, a, unsure[1])
        )
        if marks or given.get(name, False) is None:
            continue
        function = _function_of(code)
        error = errors.make(
            "returns-none",
            function=function,
            side=side,
            stmt=site.what,
            source=site.source,
            value=value_spec.describe(),
            none=none_spec.describe(),
        )

        def failing(*dynamic, traced=none_traced):
            __tracebackhide__ = True
            _, _, failures = traced(dynamic, None)
            return [checks.first([failures, checks.Failures(jnp.int32(1), (lambda: error,))]).code]

        jaxpr = jax.make_jaxpr(failing)(*in_state.abstract())
        failed = Traced(jaxpr, None, [], none_traced.makers + (lambda: error,), raises=True)
        return (failed, false_traced) if side == "if" else (true_traced, failed)
    return true_traced, false_traced


def _closure_values(fns) -> dict:
    """``{name: value}`` of the variables the branch functions ``fns`` read from the
    function that defines them (an ``elif`` chain's arms too: ``cases``' ``user_functions``)."""
    values = {}
    for fn in (f for fn in fns for f in getattr(fn, "user_functions", (fn,))):
        code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
        for name, cell in zip(code.co_freevars if code is not None else (), cells or ()):
            try:
                values.setdefault(name, cell.cell_contents)
            except ValueError:  # a cell not bound yet
                pass
    return values


def _function_of(code) -> str:
    """The qualified name of the converted function whose code holds ``code`` (a branch
    function it defines, perhaps inside a loop body): the outermost frame on the stack
    whose code holds it."""

    def holds(outer, depth=0):
        return outer is code or (
            depth < 16 and any(isinstance(c, types.CodeType) and holds(c, depth + 1) for c in outer.co_consts)
        )

    found = None
    frame = sys._getframe(1)
    while frame is not None and code is not None:
        if frame.f_code.co_filename == code.co_filename and holds(frame.f_code):
            found = frame.f_code
        frame = frame.f_back
    return found.co_qualname if found is not None else "the function"


def _kept(true_traced, false_traced):
    """Per output, the objects the ``if`` changed in place whichever side runs (a side
    that always raises leaves none)."""
    if true_traced.raises or false_traced.raises:
        return (false_traced if true_traced.raises else true_traced).kept
    return [merge_kept(a, b) for a, b in zip(true_traced.kept, false_traced.kept)]


def same_error(a, b) -> bool:
    """Are ``a`` and ``b`` the same exception as Python shows it (its class and plain
    arguments: ``KeyError('b')``)?"""
    plain = (str, bytes, int, float, bool, type(None))
    return (
        type(a) is type(b)
        and len(a.args) == len(b.args)
        and all(type(x) in plain and type(x) is type(y) and x == y for x, y in zip(a.args, b.args))
    )


def _raise_if_both_fail(refusal, trace_other) -> None:
    """The first branch of a staged ``if`` failed while traced with an error of the user's
    code (``refusal``'s cause) that could not be staged as raising when the program takes
    it. If the other branch fails with the same error, Python raises it whichever way the
    condition goes: the ``if`` is that error, raised now, as a statement without a
    condition raises it (``runtime_checks`` and ``autolax.jit`` deal with a check staged
    before it). Otherwise returns. (Not inside a ``try`` that catches it,
    ``branch-fails-in-try``: the handler would see the variables as the branch Python takes
    left them.)"""
    error = refusal.__cause__
    if error is None or report.unbound_read(error) or not report.raised_by_user_code(error):
        return
    try:
        trace_other()
    except errors.AutolaxError as other:
        if (
            getattr(other, "code", None) == refusal.code
            and other.__cause__ is not None
            and same_error(error, other.__cause__)
        ):
            raise error from None


def fails_when_taken(site, what: str, caught_by=()):
    """The ``fails`` of ``tracing.trace`` for a branch or operand Python runs only when a
    traced value says so: an error of the user's code raised while it is traced
    (``items[5]`` of a 3-item list, ``.pop()`` of an empty one, a read of a variable it
    deleted: Python's ``UnboundLocalError``) is raised when the program takes it, after what
    it did before, as a ``raise`` statement there is (``checks.raising``). ``what`` names
    it in the error's note.

    Not (the error goes on: the statement's refusal) where Python might not raise it then:
    a handler of the ``try`` or ``with`` around it may catch it, or a ``finally`` raise in
    its place (``caught_by``); a function converted code called (``calls.in_call``: the
    caller's ``try`` may catch it -- except a ``SystemExit``, ``sys.exit()`` in a helper such
    as a textbook's ``err(msg)``, which only a ``try`` catching ``SystemExit`` or
    ``BaseException`` catches: the converted callers' ``try`` statements say so,
    ``checks.catching``); a read of a variable with no value inside a staged loop
    body, which a later statement of the body may assign for the next iteration (a loop
    with static bounds then runs in Python). And only where an error of the user's code
    that tracing meets after the check is taken care of: inside ``ops.runtime_checks``
    (which refuses it; a function that stages no other check runs without it), under
    ``autolax.jit`` (which runs the function as Python to find Python's error), or outside
    ``jax.jit`` (the check is made at once)."""

    def fails(exc):
        if report.traced_slice(exc):
            return None  # not an error of the program: a slice JAX cannot trace (_trace_branch)
        unbound = report.unbound_read(exc)
        if not (unbound or report.raised_by_user_code(exc)) or (unbound and report.in_staged_loop()):
            return None
        if (calls.in_call() and not isinstance(exc, SystemExit)) or not (
            checks.checking() or checks.rerun_as_python() or not report.under_trace()
        ):
            return None
        if checks.refused_in_try(UnboundLocalError if unbound else type(exc), caught_by):
            return None
        if unbound:
            error = UnboundLocalError(
                f"cannot access local variable '{exc.name}' where it is not associated with a value"
            )
        else:
            error = exc.with_traceback(None)  # its frames hold the tracers of the abandoned trace
        error.add_note(f"(raised by {what} at {site.where}, which the program took)")
        return error

    return fails


def _trace_branch(fn, in_state, out_names, site, side, caught_by=(), taken=None):
    __tracebackhide__ = True
    if taken is not None:
        fails = fails_when_taken(site, taken, caught_by)
    else:
        fails = fails_when_taken(site, f"the `{side}` branch of the `if`", caught_by) if site.kind == "if" else None
    try:
        return trace(fn, in_state, out_names, site=site, fails=fails)
    except report.PROGRAM_ERRORS as exc:
        kind = meaning.branch_failure(exc) if site.kind in ("if", "ternary") else "own"
        if kind == "traced":
            raise report.traced_value_error(exc, site, "its condition is traced") from exc
        if kind == "taken-only":
            error = report.python_error(exc)
            if checks.refused_in_try(meaning.python_type(exc), caught_by):
                # Python runs the handler (or the `finally`) only on the runs that take it.
                raise errors.make(
                    "branch-fails-in-try", side=side, stmt=site.what, source=site.source, error=error
                ) from exc
            # Python raises it only if this branch runs, which only the running program knows
            # (also a read of a variable the branch deleted: Python's UnboundLocalError), and
            # it could not be staged as raising then (see fails_when_taken).
            raise errors.make("branch-fails", side=side, stmt=site.what, source=site.source, error=error) from exc
        report.add_staging_note(exc, site)
        raise


def cond_of_traced(pred, true_traced, false_traced, dynamic, site, select_ok=False):
    """``staged_cond`` once both branches are traced (``dynamic``: their inputs)."""
    __tracebackhide__ = True
    if true_traced.raises or false_traced.raises:
        kept, raising = (false_traced, true_traced) if true_traced.raises else (true_traced, false_traced)
        if not kept.raises and any(spec.is_pending for spec in kept.out.specs):
            # The path that does not raise has no return value (fuzzer seed 955: a `return`
            # inside a loop whose flag a staged loop carries, but never sets): the function
            # would give back a placeholder.
            raise errors.make(
                "raise-leaves-no-return", where=site.where, source=site.source, error=_first_error(raising)
            )
        return _raising_branch(pred, true_traced, false_traced, dynamic), plan.COND
    out = join_branches(
        true_traced.out, false_traced.out, site, choose=lambda f, g, name: _choice(pred, f, g, site, name)
    )
    # Arithmetic under a select only directly in a loop body or the function: an `if` inside
    # another staged `if`'s branch stays a cond (XLA's CPU backend ran the select form of the
    # `bounce` benchmark, an if/elif chain in a loop, 1.7x slower than nested conds).
    cheap_ok = not report.in_staged_branch()
    form = plan.if_form(True, select_ok and only_moves(true_traced, cheap_ok) and only_moves(false_traced, cheap_ok))
    if form == plan.SELECT:
        results = _select_outputs(pred, true_traced, false_traced, dynamic, out)
    else:
        results = _cond_with_checks(pred, true_traced, false_traced, dynamic, out)
    return tuple(out.rebuild(results)), form


def stage_handler(failed, handler) -> bool:
    """``checks.fail_or_handle``'s staging: the handler of a ``try`` (``handler()``, the
    function ``passes.runtime_checks`` wrote for its body) runs when the program runs and
    ``failed`` (a traced boolean: a run-time check the ``try`` catches failed) holds, as
    Python runs it when the check's error reaches it. Staged as the ``if`` branch of a
    traced ``if failed:`` that always raises (``_raising_branch``: its prints happen only on
    that path, then its error). False, staging nothing, when the handler does not always
    raise while traced: it may recover, and the variables after the ``try`` would depend on
    data."""
    __tracebackhide__ = True
    code = handler.__code__
    site = sites.Site("if", code.co_filename, code.co_firstlineno)
    try:
        on_failure = trace(
            handler, State([]), [], site=site, fails=fails_when_taken(site, "the `except` handler of the `try`")
        )
    except report.PROGRAM_ERRORS as exc:
        if isinstance(exc, errors.AutolaxError) or not report.raised_by_user_code(exc):
            raise
        return False  # an error the handler raised that could not be staged as raising
    if not on_failure.raises:
        return False
    passed = trace(lambda: None, State([]), [], site=site)
    cond_of_traced(failed, on_failure, passed, [], site)
    return True


checks.stage_handler = stage_handler


class FunctionChoice:
    """A variable that holds one function or another depending on a traced condition
    (``func = g``, then ``if t < 0: func = lambda y, t: -g(y, -t)``): calling it calls the
    function Python's variable holds on this run -- both calls traced, the result a
    ``lax.cond`` over them (``ops.call`` converts each, as it would the function itself).
    The results must have one type (``StateMismatchError`` otherwise, naming the variable)."""

    __slots__ = ("pred", "on_true", "on_false", "site", "name")

    def __init__(self, pred, on_true, on_false, site, name):
        self.pred, self.on_true, self.on_false, self.site, self.name = pred, on_true, on_false, site, name

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        site = sites.Site(
            "if",
            self.site.filename,
            self.site.lineno,
            names=(self.name,),
            roles={self.name: f"the result of calling '{self.name}'"},
        )
        on_true = trace(lambda: calls.call(self.on_true, *args, **kwargs), State([]), [self.name], site=site)
        on_false = trace(lambda: calls.call(self.on_false, *args, **kwargs), State([]), [self.name], site=site)
        outputs, _ = cond_of_traced(self.pred, on_true, on_false, [], site)
        return outputs[0]

    def __repr__(self):
        return f"<'{self.name}': {self.on_true!r} or {self.on_false!r}, by a traced condition>"


def _choice(pred, f, g, site, name):
    """``join_branches``'s ``choose``: the ``FunctionChoice`` of ``f`` (the ``if`` branch's
    function) and ``g``. A choice between choices (an ``if`` inside a staged branch that
    rebinds the function too) is refused: its condition is a value of that branch only."""
    if isinstance(f, FunctionChoice) or isinstance(g, FunctionChoice):
        raise errors.make("if-function-nested", name=name, where=site.where, source=site.source)
    return FunctionChoice(pred, f, g, site, name)


def _select_outputs(pred, true_traced, false_traced, dynamic, out):
    """The outputs of both branches, selected; an output one branch accumulates into
    (``total += x * x``) while the other leaves it is ``total + select(pred, x * x, -0.0)``
    (see ``tracing.accumulations``)."""
    __tracebackhide__ = True
    sunk = {}  # state leaf index -> (op, unit, True if the `if` branch accumulates)
    for changed, same, on_true in ((true_traced, false_traced, True), (false_traced, true_traced, False)):
        found = accumulations(changed, same)
        if found:
            for i, (k, k_same) in enumerate(zip(changed.sources(out), same.sources(out))):
                if k is not None and k == k_same and k in found and i not in sunk:
                    sunk[i] = (k,) + found[k] + (on_true,)
    true_outputs = {k: e for k, _, e, _, side in sunk.values() if side}
    false_outputs = {k: e for k, _, e, _, side in sunk.values() if not side}
    on_true, _, true_failures = true_traced(dynamic, out, outputs=true_outputs)
    on_false, _, false_failures = false_traced(dynamic, out, outputs=false_outputs)
    checks.defer(checks.select(pred, true_failures, false_failures))
    results = []
    for i, (t, f) in enumerate(zip(on_true, on_false)):
        if i not in sunk:
            results.append(_select(pred, t, f))
            continue
        _, op, _, unit, side = sunk[i]
        base, term = (f, t) if side else (t, f)
        unit = lax.full_like(term, unit)  # keeps a weak type
        term = lax.select(pred, term, unit) if side else lax.select(pred, unit, term)
        results.append(_UNIT_OPS[op](base, term))
    return results


_UNIT_OPS = {"add": lax.add, "sub": lax.sub, "mul": lax.mul}


def _first_error(traced) -> str:
    """The error a branch that always raises raises first, as Python names it."""
    try:
        return report.python_error(traced.makers[0]())
    except Exception:  # noqa: BLE001 - a message only
        return "an error"


def _raising_branch(pred, true_traced, false_traced, operands):
    """An ``if`` one of whose branches always raises (``raise`` under a traced condition):
    the other branch's values, and a check that raises when the program takes the raising
    branch. If both raise, the statement around this one always raises too."""
    __tracebackhide__ = True
    if true_traced.jaxpr.effects or false_traced.jaxpr.effects:
        on_true, on_false, failures = _cond_of_raising(pred, true_traced, false_traced, operands)
    else:
        on_true, _, true_failures = true_traced(operands, None if true_traced.raises else true_traced.out)
        on_false, _, false_failures = false_traced(operands, None if false_traced.raises else false_traced.out)
        failures = checks.select(pred, true_failures, false_failures)
    if true_traced.raises and false_traced.raises:
        checks.raise_from_both_branches(failures, same_error)
    checks.defer(failures)
    values, traced = (on_false, false_traced) if true_traced.raises else (on_true, true_traced)
    return tuple(traced.out.rebuild(values))


def _cond_of_raising(pred, true_traced, false_traced, operands):
    """``_raising_branch``'s values and failures when a branch has an effect (a ``print``):
    a ``lax.cond``, so that it happens only when the program takes that branch, as in Python
    (run outside one, a ``print`` before a ``raise`` would print on every call). The raising
    side returns zeros for the other side's values (never used: the program raises)."""
    __tracebackhide__ = True
    kept = false_traced if true_traced.raises else true_traced
    avals = [] if kept.raises else kept.jaxpr.out_avals[: kept.out.n_dynamic()]
    n_true = len(true_traced.makers)

    def branch(traced, offset):
        def run(*dyn):
            __tracebackhide__ = True
            leaves, _, failures = traced(dyn, None if traced.raises else traced.out)
            if traced.raises:
                leaves = [jnp.zeros(a.shape, a.dtype) for a in avals]
            code = jnp.int32(0) if failures is None else jnp.where(failures.code > 0, failures.code + offset, 0)
            return [*leaves, code.astype(jnp.int32)]

        return run

    results = lax.cond(pred, branch(true_traced, 0), branch(false_traced, n_true), *operands)
    values = list(results[:-1])
    failures = checks.Failures(results[-1], true_traced.makers + false_traced.makers)
    return values, values, failures


def _cond_with_checks(pred, true_traced, false_traced, operands, out):
    """``lax.cond`` of two traced branches; the checks of the branch that runs are handed on
    (each branch returns a failure code, 0 for the branch without checks)."""
    __tracebackhide__ = True
    n_true = len(true_traced.makers)
    has_checks = bool(true_traced.makers or false_traced.makers)

    def branch(traced, offset):
        def run(*dyn):
            __tracebackhide__ = True
            leaves, _, failures = traced(dyn, out)
            if not has_checks:
                return leaves
            code = jnp.int32(0) if failures is None else jnp.where(failures.code > 0, failures.code + offset, 0)
            return [*leaves, code.astype(jnp.int32)]

        return run

    results = lax.cond(pred, branch(true_traced, 0), branch(false_traced, n_true), *operands)
    if has_checks:
        results, code = list(results[:-1]), results[-1]
        checks.defer(checks.Failures(code, true_traced.makers + false_traced.makers))
    return results


@report.user_facing
def cond(pred, if_true, if_false, *operands, at, caught_by=()):
    """``if pred: <if_true> else: <if_false>``, decided when it runs.

    Equivalent Python::

        def cond(pred, if_true, if_false, *operands, at, caught_by=()):
            if pred:
                return if_true(*operands)
            return if_false(*operands)

    A traced ``pred`` stages both branches (``lax.cond``, or ``lax.select`` when they only
    move values); each returns the variables assigned in the ``if`` that are used after it
    (named in ``at``, see ``autolax.runtime.sites``), reconciled to one type. A branch that fails
    while traced with an error of the user's code raises it when the program takes it
    (``fails_when_taken``); inside a ``try``, ``caught_by`` holds the exception types its
    handlers catch.
    """
    __tracebackhide__ = True
    code = if_true.__code__
    params = code.co_varnames[: code.co_argcount]  # the operands' names: the outputs, unless ``at`` lists them
    site = sites.site("if", at, code.co_filename, params)
    if not is_tracer(pred):
        report.record(site, plan.PYTHON)
        branch = if_true if report.truth(pred) else if_false
        try:
            return branch(*operands)
        except BaseException as exc:
            keep_raised_state(exc, if_true, branch, 0, operands, site.cells)
            raise
    outputs, form, kept = staged_cond(
        pred, if_true, if_false, operands, site, in_names=params, select_ok=True, caught_by=caught_by
    )
    report.record(site, form)
    return pack(write_back(site.names, dict(zip(params, operands)), outputs, kept), len(site.names))


@report.user_facing
def cases(arms, otherwise, *operands, at, caught_by=()):
    """``if p0: <f0> elif p1(): <f1> ... else: <otherwise>``: an ``if`` / ``elif`` chain,
    each arm the ``ops.cond`` of its own ``if`` (the nested ``cond`` in the false branch of
    the arm before it), decided when it runs.

    Equivalent Python::

        def cases(arms, otherwise, *operands, at, caught_by=()):
            (p0, f0), *rest = arms
            if p0:
                return f0(*operands)
            for p, f in rest:
                if p(*operands) if p.__code__.co_argcount else p():
                    return f(*operands)
            return otherwise(*operands)

    ``arms``: the first arm's condition (a value) and branch function, then each later
    arm's condition as a function, called only where the arms before it were not taken:
    inside the false branch of the one before when that is staged, so a traced condition
    stages only the arms from it on. A condition that reads the names the branches take
    takes them too (``lambda y: y > 0``), and gets the false branch's operands, as the
    nested ``if_false`` of the ``elif`` did; others take nothing (``lambda: x > 0``).
    ``at``: the chain's descriptor, whose ``elif:`` clause lists the lines of the later
    arms (``sites.arm_specs``).
    """
    __tracebackhide__ = True
    specs = sites.arm_specs(at)

    def rest(k):
        if k == len(arms):
            return otherwise

        def if_false(*values):
            __tracebackhide__ = True
            test, branch = arms[k]
            pred = test(*values) if test.__code__.co_argcount else test()
            return cond(pred, branch, rest(k + 1), *values, at=specs[k], caught_by=caught_by)

        # What a staged body's closure holds (``report.outside_containers``): the user's
        # functions this one runs, as the nested ``if_false`` of the user's code held them.
        if_false.user_functions = (*(f for arm in arms[k:] for f in arm), otherwise)
        return if_false

    test, branch = arms[0]
    return cond(test, branch, rest(1), *operands, at=specs[0], caught_by=caught_by)


_TERNARY_ROLES = {"value": "the value of the conditional expression"}


def _trace_side(thunk, site, side, caught_by=()):
    """One side of a conditional expression with a traced test, traced. A side that raises
    an error of the user's code while traced (``items[-1]`` of an empty list, a read of a
    deleted variable) is staged as raising that error when the program takes it, as Python
    raises it only then (``raise``
    and ``assert`` in a staged branch are staged so too, see ``checks.raising``) -- unless
    a handler of the ``try`` around it catches it (``caught_by``): then it is refused."""
    __tracebackhide__ = True
    try:
        return trace(thunk, State([]), ["value"], site=site)
    except report.PROGRAM_ERRORS as exc:
        kind = meaning.branch_failure(exc)
        if kind == "traced":
            # As for a branch of a traced `if` (_trace_branch): autolax's TypeError, which
            # lets a loop around it fall back.
            raise report.traced_value_error(exc, site, "its condition is traced") from exc
        if kind == "own":
            raise  # autolax's and JAX's own errors say what went wrong (and let a loop fall back)
        if checks.refused_in_try(type(exc), caught_by):
            raise errors.make(
                "side-fails-in-try", side=side, where=site.where, source=site.source, error=report.python_error(exc)
            ) from None
        error = exc.with_traceback(None)  # its frames hold the tracers of the abandoned trace
        error.add_note(
            f"(raised by the `{side}` side of the conditional expression at {site.where}, which the program took)"
        )

        def raises():
            raise checks.StagedRaise(checks.Failures(jnp.int32(1), (lambda: error,)))

        return trace(raises, State([]), ["value"], site=site)


@report.user_facing
def if_else(test, if_true, if_false, caught_by=()):
    """``if_true() if test else if_false()``: a conditional expression with a traced ``test``
    becomes ``lax.cond`` (only the chosen side runs, as in Python). Inside a ``try``,
    ``caught_by`` holds the exception types its handlers catch."""
    __tracebackhide__ = True
    if plan.ternary_form(is_tracer(test)) == plan.PYTHON:
        report.record(report.expression_site("ternary"), plan.PYTHON)
        return if_true() if report.truth(test) else if_false()
    where = report.expression_site("ternary", always=True)
    site = sites.Site("ternary", where.filename, where.lineno, names=("value",), roles=_TERNARY_ROLES)
    pred = predicate(test, site.where)
    a = _trace_side(if_true, site, "if", caught_by)
    b = _trace_side(if_false, site, "else", caught_by)
    if a.raises or b.raises:
        report.record(where, plan.COND)
        return _raising_branch(pred, a, b, ())[0]
    out = join_branches(a.out, b.out, site)
    result = _cond_with_checks(pred, a, b, (), out)
    report.record(where, plan.COND)
    return out.rebuild(result)[0]


__all__ = ["cases", "cond", "cond_of_traced", "if_else", "predicate", "staged_cond"]
