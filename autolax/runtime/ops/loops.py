"""``while`` and ``for`` loops, decided when they run.

A loop is staged (``lax.while_loop`` / ``scan`` / ``fori_loop``) when anything it depends on
is traced: its condition or bounds, the values it carries, or the values its body reads.
Otherwise it is the plain Python loop. A loop that carries traced values but whose body
cannot be staged (it indexes a Python list with the loop index, changes a shape ...) runs
as a Python loop with an ``UnrolledLoopWarning`` -- or ``UnrolledLoopError`` under
``strict=True``. Loops whose condition or bounds are traced cannot fall back.

Which lax form a ``for`` takes:

================================  ====================================================
static trip count                 ``lax.scan`` (reverse-differentiable)
static trip count + ``break``     ``lax.while_loop`` (stops early); if the loop carries
(or ``return``) under a traced    floating-point values, inside a ``jax.custom_jvp`` whose
condition                         derivative is the masked ``lax.scan`` (so ``jax.grad``
                                  works); a body that prints: the masked scan itself
traced ``range`` bounds           ``lax.fori_loop``; with ``break``: ``lax.while_loop``
================================  ====================================================
"""

from __future__ import annotations

import builtins
import collections.abc
import dataclasses
import functools
import math
import operator
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.runtime import compat, errors, plan, sites
from autolax.runtime.ops import checkpointed, checks, host, meaning, report
from autolax.runtime.ops.control import predicate, staged_cond
from autolax.runtime.ops.lists import (
    StackedList,
    append_block,
    appended_block,
    key_order,
    restore_order,
)
from autolax.runtime.ops.logical import harmless
from autolax.runtime.ops.state import (
    Leaf,
    MaybeBound,
    State,
    Undefined,
    VarSpec,
    abstract,
    any_tracer,
    cast,
    is_dynamic,
    is_tracer,
    join_iterations,
    keep_raised_state,
    select_target,
    var_spec,
    write_back,
)
from autolax.runtime.ops.tracing import Traced, cast_to, pack, run_body, staging, trace, unpack

_MAX_TYPE_ROUNDS = 4


# ----------------------------------------------------------------------------- iterables
class enumerate:  # noqa: N801 - stands in for the builtin in `for ... in enumerate(...)`
    """``enumerate(xs, start)`` that a staged loop can scan over when ``xs`` is an array."""

    def __init__(self, iterable, start=0):
        self.iterable = iterable
        self.start = start

    def __iter__(self):
        return iter(builtins.enumerate(self.iterable, self.start))


class zip:  # noqa: N801 - stands in for the builtin in `for ... in zip(...)`
    """``zip(a, b, ...)`` that a staged loop can scan over when its arguments are arrays."""

    def __init__(self, *iterables):
        self.iterables = iterables

    def __iter__(self):
        return iter(builtins.zip(*self.iterables))


def range_split(start, stop, bound, inclusive: bool):
    """Where ``if i < C`` (``inclusive``: ``i <= C``) stops holding in ``range(start, stop)``:
    the first index ``i`` for which it is false, clamped into ``[start, stop]``. ``bound`` is
    ``lambda: C``, called only if the loop runs at all (as Python evaluates ``C`` only then).

    Equivalent Python::

        def range_split(start, stop, bound, inclusive):
            for i in range(start, stop):
                if not (i <= bound() if inclusive else i < bound()):
                    return i
            return max(start, stop)

    Written by the index-set splitting of loops (``autolax.frontend.passes.index_split``).
    """
    __tracebackhide__ = True
    if not any_tracer((start, stop)) and operator.index(start) >= operator.index(stop):
        return start
    c = bound()
    if is_tracer(c) or any_tracer((start, stop)):
        c = jnp.asarray(c)
        first = (
            (jnp.floor(c) + 1 if inclusive else jnp.ceil(c))
            if jnp.issubdtype(c.dtype, jnp.floating)
            else c + int(inclusive)
        )
        first = jnp.where(jnp.isnan(c), start, first) if jnp.issubdtype(c.dtype, jnp.floating) else first
        return jnp.clip(first, start, jnp.maximum(start, stop)).astype(_counter_type(start, stop))
    if isinstance(c, (jax.Array, np.ndarray)) and np.ndim(c) == 0 and jnp.issubdtype(c.dtype, jnp.number):
        c = c.item()  # a concrete array (called eagerly): compared as its number
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.integer, np.floating)):
        start < c  # noqa: B015 - raises Python's TypeError for a bound that is not a number
        raise TypeError(f"a loop index is compared with a {type(c).__name__} ({c!r})")
    if c != c:  # NaN: `i < nan` is never true
        first = start
    elif c in (float("inf"), float("-inf")):
        first = stop if c > 0 else start
    elif isinstance(c, (float, np.floating)):
        first = math.floor(c) + 1 if inclusive else math.ceil(c)
    else:
        first = int(c) + int(inclusive)
    return max(start, min(first, stop))


class range:  # noqa: N801 - stands in for the builtin outside `for ... in range(...)`
    """``range(start, stop, step)`` whose bounds may be traced (``r = range(n)``, then
    ``for i in r``): a Python ``range`` when they are Python ints, else a range a staged
    loop can run over."""

    def __new__(cls, *bounds):
        if not any(is_tracer(b) for b in bounds):
            return _python_range(*bounds)
        return super().__new__(cls)

    def __init__(self, *bounds):
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
        frame = sys._getframe(1)
        _step_not_zero(step, lambda: f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}")
        self.start, self.stop, self.step = start, stop, step

    def _traced(self, what):
        raise errors.make("range-traced", what=what)

    def __len__(self):
        self._traced("len()")

    def __iter__(self):
        self._traced("iterating in Python")

    def __reversed__(self):
        """``reversed(range(start, stop, step))``: ``range(last, start - step, -step)``, the
        same items backwards (none when the range is empty), with traced bounds."""
        start, stop, step = self.start, self.stop, self.step
        if is_tracer(step):
            self._traced("reversed()")
        step = operator.index(step)
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        if step > 0:
            length = jnp.maximum(0, (stop - start + step - 1) // step)
        else:
            length = jnp.maximum(0, (start - stop - step - 1) // (-step))
        return range(start + (length - 1) * step, start - step, -step)

    def __repr__(self):
        return f"range({self.start}, {self.stop}, {self.step})"


class _Sequence:
    """An iterable a staged loop can index: ``item(k)`` for k in ``range(length)``."""

    def __init__(self, length, xs, make_item, traced, item_type, counter=None, indexed=True):
        self.length = length  # int (static) or a traced scalar
        # (start, stop) of a unit-step range with traced bounds: a loop can count k from start
        # to stop and use k as the item, as `lax.fori_loop(start, stop, ...)` does by hand.
        self.counter = counter
        self.indexed = indexed  # does an item need its index k (ranges, enumerate) or only x?
        self.xs = xs  # pytree of arrays with leading axis `length`, or None (ranges)
        self.make_item = make_item  # (k, slice of xs or None) -> item
        self.traced = traced
        self.item_type = item_type  # () -> pytree of ShapeDtypeStruct: the type of an item

    def item(self, k, x=None):
        if x is None and self.xs is not None:
            x = jax.tree_util.tree_map(lambda a: a[k], self.xs)
        return self.make_item(k, x)


def _array_sequence(value):
    if isinstance(value, range):
        return _range_sequence(value.start, value.stop, value.step)
    if isinstance(value, StackedList):
        value = value.stacked_tree()
        if value is None:
            return None
        leaves = jax.tree_util.tree_leaves(value)
        return _Sequence(
            leaves[0].shape[0], value, lambda k, x: x, any_tracer(leaves), lambda: _row_type(value), indexed=False
        )
    if isinstance(value, (jax.Array, compat.Tracer, np.ndarray)) and np.ndim(value) >= 1:
        return _Sequence(
            value.shape[0], value, lambda k, x: x, is_tracer(value), lambda: _row_type(value), indexed=False
        )
    if isinstance(value, enumerate):
        inner = _array_sequence(value.iterable)
        if inner is None:
            return None
        start = value.start
        return _Sequence(
            inner.length,
            inner.xs,
            lambda k, x: (start + k, inner.make_item(k, x)),
            inner.traced or is_tracer(start),
            lambda: (_index_type(start), inner.item_type()),
        )
    if isinstance(value, zip):
        inners = [_array_sequence(v) for v in value.iterables]
        if not inners or any(s is None for s in inners):
            return None
        length = min(s.length for s in inners)
        xs = tuple(jax.tree_util.tree_map(lambda a: a[:length], s.xs) for s in inners)

        def make_item(k, x):
            return tuple(s.make_item(k, xi) for s, xi in builtins.zip(inners, x))

        return _Sequence(
            length,
            xs,
            make_item,
            any(s.traced for s in inners),
            lambda: tuple(s.item_type() for s in inners),
            indexed=any(s.indexed for s in inners),
        )
    return None


def _row_type(xs):
    """The type of ``xs[k]``: each leaf without its leading axis (and that axis's entry of
    its sharding; a row varies over the same ``shard_map`` axes as ``xs``)."""

    def row(a):
        aval = jax.typeof(a)
        sharding = aval.sharding.update(spec=jax.sharding.PartitionSpec(*aval.sharding.spec[1:]))
        return abstract(aval.update(shape=aval.shape[1:], sharding=sharding))

    return jax.tree_util.tree_map(row, xs)


def _default_int():
    """JAX's default integer: int64 under ``jax_enable_x64``, else int32. A loop counter has
    this type, the type of ``lax.scan``'s own counter (and of ``lax.fori_loop``'s index for
    Python bounds): the index is not converted from another type in each iteration, and
    ``i * 2**33`` does not wrap under x64."""
    return jax.dtypes.canonicalize_dtype(np.int64)


def _counter_zero():
    """The first value of a counter a staged loop carries (``_default_int``)."""
    return np.zeros((), _default_int())


def _counter_type(*bounds):
    """The dtype of a loop counter running between ``bounds`` (the default integer unless
    they are wider)."""
    return jnp.result_type(_default_int(), *(b for b in bounds if is_tracer(b) or isinstance(b, jax.Array)))


def _index_type(*bounds):
    """The type of ``start + k * step`` for a counter ``k`` of ``_counter_type(*bounds)``."""
    return jax.ShapeDtypeStruct((), _counter_type(*bounds))


_STEP_ZERO = "range() arg 3 must not be zero"


def _python_range(*bounds):
    """``builtins.range(*bounds)``, whose errors (a step of 0, a bound that is not an int)
    are Python's own for the user's ``range(...)`` (``report.pythons_own``)."""
    try:
        return builtins.range(*bounds)
    except (TypeError, ValueError) as exc:
        report.pythons_own(exc)
        raise


def _step_not_zero(step, where) -> None:
    """Python's ``ValueError`` for ``range(start, stop, 0)``: now for a Python step (and its
    ``TypeError`` for a step that is not an int), when the program runs for a traced one
    (``checks.fail_unless``). Inside a ``try`` that catches
    ``ValueError`` a traced step runs the handler when it is 0, if that always raises
    (``checks.fail_or_handle``); otherwise it is refused: whether the handler runs would
    depend on data.
    ``where``: () -> the user's ``file:line``, for the refusal."""
    __tracebackhide__ = True
    if not is_tracer(step):
        _python_range(0, 0, step)
        return
    refusal = checks.fail_or_handle(step != 0, lambda: ValueError(_STEP_ZERO), ValueError)
    if refusal == "raise-in-try":
        raise errors.make("range-step-in-try", where=where())
    if refusal:  # a `finally` that raises too, a `with` that may suppress it
        raise errors.make(refusal, statement="range(..., step)", where=where(), source="")


def _range_sequence(start, stop, step):
    if any(is_tracer(b) for b in (start, stop, step)):
        # Python ints stay Python ints: under a trace `jnp.asarray(1)` is staged, and the
        # tests on it would be equations of the program.
        start, stop, step = (b if isinstance(b, int) else jnp.asarray(b) for b in (start, stop, step))
        if is_tracer(step):
            up = jnp.maximum(0, (stop - start + step - 1) // jnp.where(step == 0, 1, step))
            down = jnp.maximum(0, (start - stop - step - 1) // jnp.where(step == 0, 1, -step))
            length = jnp.where(step > 0, up, jnp.where(step < 0, down, 0))
        elif int(step) == 1:
            length = jnp.maximum(0, stop - start)
            return _Sequence(
                length,
                None,
                lambda k, x: start + k,
                True,
                lambda: _index_type(start, stop, step),
                counter=(start, stop),
            )
        elif int(step) > 0:
            length = jnp.maximum(0, (stop - start + step - 1) // step)
        else:
            length = jnp.maximum(0, (start - stop - step - 1) // (-step))
        return _Sequence(length, None, lambda k, x: start + k * step, True, lambda: _index_type(start, stop, step))
    r = _python_range(start, stop, step)
    return _Sequence(len(r), None, lambda k, x: _affine(r.start, k, r.step), False, lambda: _index_type()), r


def _affine(start: int, k, step: int):
    """``start + k * step`` without the equations a 0 or a 1 would cost."""
    k = k if step == 1 else k * step
    return k if start == 0 else start + k


# ----------------------------------------------------------------------------- helpers
def _closure_traced(*fns) -> bool:
    """Does any of these functions read a traced value through its closure?"""
    seen = set()
    stack = [f for f in fns if f is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(value, types.FunctionType):
                stack.append(value)
            elif not isinstance(value, (types.ModuleType, type, collections.abc.Iterator)) and any_tracer(value):
                # (an iterator is no pytree: JAX warns it is taken as a leaf, which holds no tracer)
                return True
    return False


@dataclasses.dataclass(frozen=True)
class _WhileForms:
    """A ``while`` loop that has to be staged, as ``_dispatch`` runs it: staged, or as the
    Python loop (``first``: its condition on the initial state)."""

    site: sites.Site
    loop_test: object
    loop_body: object
    values: list
    names: list
    first: object

    def staged(self):
        __tracebackhide__ = True
        return _staged_while(self.site, self.loop_test, self.loop_body, self.values, self.names, self.first)

    def python(self):
        __tracebackhide__ = True
        return _python_while(self.site, self.loop_test, self.loop_body, self.values, self.first, static=False)


@dataclasses.dataclass(frozen=True)
class _ForForms:
    """A ``for`` loop over ``seq`` that has to be staged, as ``_dispatch`` runs it: staged,
    or as the Python loop over ``items`` (None where its bounds are traced: it cannot)."""

    site: sites.Site
    seq: _Sequence
    loop_body: object
    loop_test: object
    values: list
    names: list
    items: object = None

    def staged(self):
        __tracebackhide__ = True
        return _staged_for(self.site, self.seq, self.loop_body, self.loop_test, self.values, self.names)

    def python(self):
        __tracebackhide__ = True
        return _python_for(self.site, self.items, self.loop_body, self.loop_test, self.values, static=False)


def _dispatch(loop, bounds_traced: bool):
    """Runs a loop that has to be staged (``loop``: ``_WhileForms`` / ``_ForForms``), staged.
    If its body cannot be staged, what the error means decides (``meaning.decide``): with
    static bounds the loop runs in Python (``loop.python()``), warning afterwards or raising
    first under strict mode; with traced bounds (``bounds_traced``: its bounds or condition)
    it cannot, and autolax's error or the body's own is raised."""
    __tracebackhide__ = True
    site = loop.site
    rec = report.active_recorder()
    mark = rec.mark() if rec is not None else None
    try:
        return loop.staged()
    except Exception as exc:
        decision = _refuse(exc, site, plan.can_fall_back(bounds_traced))
        if not decision.fall_back:
            report.add_staging_note(exc, site)
            raise
        failure = exc
    if rec is not None:
        rec.rollback(mark)
    return _fall_back(site, loop.python, failure, decision.reason, decision.rewrite)


def _refuse(exc, site, can_fall_back: bool):
    """What ``exc``, raised while the body of ``site`` was staged, means for the loop
    (``meaning.decide``): raises autolax's error if that is it, else returns the decision
    (run in Python, or raise ``exc`` again with a note)."""
    __tracebackhide__ = True
    decision = meaning.decide(exc, site, can_fall_back, lambda e: _in_user_code(e, site))
    if decision.error is not None:
        if decision.chained:
            raise decision.error from exc
        raise decision.error from None
    return decision


def _fall_back(site, python, failure, reason, rewrite):
    """Runs the loop ``site`` in Python (``python()``), its body having failed to stage with
    ``failure`` (``reason``, ``rewrite``: why, and how to change it): warns afterwards, or
    raises ``UnrolledLoopError`` first under strict mode."""
    __tracebackhide__ = True
    if report.is_strict():
        report.unrolled(site, reason, rewrite)  # raises UnrolledLoopError
    checked = checks.mark()
    try:
        result = python()
    except Exception as exc:  # the Python loop fails too: show its error, and why we tried it
        _python_loop_failed(exc, site, failure, reason, rewrite, checked)
        raise
    report.unrolled(site, reason, rewrite)
    return result


def _python_loop_failed(exc, site, failure, reason, rewrite, checked) -> None:
    """The loop ``site`` failed with ``exc`` as a Python loop, run because its body failed to
    stage with ``failure`` (``checked``: ``checks.mark()`` before it ran). Raises what
    ``meaning.python_loop_failure`` says that means, else notes on ``exc`` why the loop ran
    in Python and returns (the caller raises ``exc``)."""
    __tracebackhide__ = True
    underlying, cause = meaning.underlying(failure), meaning.autolax_cause(failure)
    kind = meaning.python_loop_failure(
        exc,
        failure,
        checked_before=checks.staged_since(checked) and not checks.rerun_as_python(),
        under_trace=report.under_trace(),
        by_user_code=_in_user_code(exc, site),
    )
    if kind == "condition-became-traced":
        # Why the loop could not be staged comes first: the traced condition is its consequence.
        fix = rewrite or report.unstageable_fix(underlying)
        error = errors.make(
            "while-needs-concrete", stmt=site.what, reason=reason, count=exc.count, source=site.source, fix=fix
        )
        raise error from underlying
    if kind == "after-check":
        # An earlier iteration's check may fail first when the program runs (Python would
        # then never get here): which error Python raises only the running program knows.
        error = f"{type(exc).__name__}: {exc}".split("\n")[0]
        raise errors.make("fails-after-check", stmt=site.what, reason=reason, source=site.source, error=error) from exc
    if kind == "tracer":
        # Its items or carried values are traced in Python too (`peak = max(peak, x)`
        # over a traced array): JAX's tracer error out of a staged body is autolax's.
        raise report.traced_value_error(exc, site, "it carries traced values, also as a Python loop") from exc
    if kind == "same-list-again":
        # The Python loop's staged `if` meets the same list again (its branches leave it
        # with different lengths): the cause to fix is the first.
        cause.add_note(f"autolax: run as a Python loop instead, it failed too: {str(exc).splitlines()[0]}")
        raise cause.with_traceback(None) from exc
    if hasattr(exc, "add_note"):
        exc.add_note(
            f"autolax: the loop at {site.where} could not be staged ({reason}), so it ran "
            "as a Python loop, where this error occurred."
        )


def _in_user_code(exc, site) -> bool:
    """Was ``exc`` raised while running the user's code (a frame of the loop's file, or of
    the converted file the CLI wrote, which ``site`` does not name)?"""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == site.filename:
            return True
        tb = tb.tb_next
    return report.ran_user_code(exc)


def _inexact(state: State) -> bool:
    return any(
        leaf.dynamic and jnp.issubdtype(leaf.aval.dtype, jnp.inexact) for spec in state.specs for leaf in spec.leaves
    )


class _Appends:
    """Moves list appends out of a loop's carried state into per-iteration outputs.

    After one iteration, a carried list that is longer than before contributes its prefix
    to the carry and its new items, stacked into one block, to the loop's outputs.
    """

    def __init__(self, site, forbid: str | None = None):
        self.site = site
        self.forbid = forbid  # why the loop cannot collect appends (plan.appends_forbidden)
        self.layout: list = []  # (state index, treedef of the block, number of leaves, key order)

    def __call__(self, inputs, outputs):
        __tracebackhide__ = True
        extras = []
        self.layout = []
        site = self.site
        for i, (before, after) in enumerate(builtins.zip(inputs, outputs)):
            split = appended_block(before, after)
            if split is None:
                continue
            name = site.names[i]
            if self.forbid is not None:
                raise plan.Unstageable(
                    errors.make(
                        "append-length-depends-on-data",
                        what=site.describe(name),
                        name=name,
                        stmt=site.what,
                        reason=self.forbid,
                        source=site.source,
                    )
                )
            if name in site.inserts:  # one iteration's inserts may look like appends (at the end)
                raise plan.Unstageable(
                    errors.make("list-grows-inside", what=site.describe(name), stmt=site.what, source=site.source)
                )
            read = site.reads_appended.get(name, -1)
            if read is None or read >= inputs[i][0]:
                raise plan.Unstageable(
                    errors.make("append-and-read", what=site.describe(name), stmt=site.what, source=site.source)
                )
            prefix, block, single = split
            outputs[i] = prefix
            leaves, treedef = jax.tree_util.tree_flatten(block)
            self.layout.append((i, treedef, len(leaves), key_order(block), single))
            extras.extend(leaves)
        return outputs, extras

    def attach(self, values, stacked_extras, inputs):
        """Puts the stacked per-iteration blocks back on their lists after the loop
        (``inputs``: the lists the loop started from)."""
        values = list(values)
        it = iter(stacked_extras)
        for i, treedef, n, order, single in self.layout:
            leaves = [next(it) for _ in builtins.range(n)]
            if not single:  # (iterations, items per iteration, ...) -> (items, ...)
                leaves = [leaf.reshape((leaf.shape[0] * leaf.shape[1],) + leaf.shape[2:]) for leaf in leaves]
            block = restore_order(jax.tree_util.tree_unflatten(treedef, leaves), order)
            values[i] = append_block(values[i], block, extends=inputs[i])
        return values


def _fixpoint(body, state: State, names, site, *, prefix=None, split=None):
    """Traces ``body`` until the carried types settle (dtype promotion, first assignment)."""
    __tracebackhide__ = True
    state = state.first_assigned_in_loop()
    rec = report.active_recorder()
    for _ in builtins.range(_MAX_TYPE_ROUNDS):
        mark = rec.mark() if rec is not None else None
        report.count_trace(site)
        traced = trace(body, state, names, site=site, prefix=prefix, strong_numbers=True, split=split)
        if traced.raises:
            return traced, state
        joined = join_iterations(state, traced.out, site)
        if joined.same(state):
            return traced, state
        if rec is not None:  # this round's jaxpr is discarded, and so are its decisions
            rec.drop_events_since(mark)
        state = joined
    raise errors.make("loop-types-unsettled", stmt=site.what, source=site.source)


def _item_state(seq: _Sequence, state: State) -> State:
    """The abstract type of one item of ``seq`` (a loop body's first argument).

    Under ``shard_map`` an item varies over the axes the carried ``state`` varies over (a
    ``range`` index is device-invariant, the carry is not). JAX's ``vmap`` of a ``lax.cond``
    fails on an operand that varies over fewer axes than its predicate ("pvary is a
    invariant->variant collective"), even when written by hand: ``if x > i: x = x * i``
    in the loop body, ``x`` varying and ``i`` not, would reach it.
    """
    leaves, treedef = jax.tree_util.tree_flatten(seq.item_type())
    carried = [a for a in state.abstract() if compat.varying_axes(a)]
    axes = frozenset().union(*(compat.varying_axes(a) for a in carried))
    specs = tuple(Leaf(True, _varying_over(abstract(x), axes, carried)) for x in leaves)
    return State([VarSpec("item", treedef, specs)])


def _varying_over(aval, axes: frozenset, like):
    """``aval`` varying over the ``shard_map`` axes ``axes`` too (``like``: values that do)."""
    if axes <= compat.varying_axes(aval):
        return aval
    sharding = aval.sharding
    if sharding is None and like[0].sharding is not None:  # a manual axis type needs its mesh
        sharding = like[0].sharding.update(spec=jax.sharding.PartitionSpec(*[None] * len(aval.shape)))
    return compat.shape_dtype_struct(
        aval.shape,
        aval.dtype,
        weak_type=aval.weak_type,
        sharding=sharding,
        like=(aval, *like),
        varying=axes | compat.varying_axes(aval),
    )


def _traced_test(loop_test, state, site, prefix=None):
    """The loop's exit test traced as a function of the carry (a boolean scalar); with
    ``prefix`` (a ``for`` loop's item state), of the next item and the carry."""
    test = trace(loop_test, state, ["the loop condition"], site=site, prefix=prefix)
    leaf = test.out.specs[0].leaves
    if len(leaf) != 1 or not leaf[0].dynamic or leaf[0].value is not None:
        raise plan.Unstageable(errors.make("loop-condition-static", stmt=site.what, source=site.source))
    return test


def _flag_first_assigned(values, results, names, ran):
    """A variable first assigned in a staged loop whose body always assigns it has a value
    after the loop exactly when the loop ran (``ran``): a ``MaybeBound`` if that is traced.
    (One the body assigns only sometimes is a ``MaybeBound`` already.) That holds for a loop
    nested in another staged loop too, where the variable enters as ``Undefined`` of kind
    "loop": the outer loop carries the flag."""
    if not is_tracer(ran):
        return results
    out = list(results)
    for i, (before, after) in enumerate(builtins.zip(values, results)):
        if (
            isinstance(before, Undefined)
            and before.kind in ("unbound", "loop")
            and not isinstance(after, (Undefined, MaybeBound))
        ):
            out[i] = MaybeBound(after, ran, names[i])
    return out


def _loop_site(kind, at, loop_body, skip):
    code = loop_body.__code__
    return sites.site(kind, at, code.co_filename, code.co_varnames[skip : code.co_argcount])


# ----------------------------------------------------------------------------- while
@report.user_facing
def while_loop(loop_test, loop_body, init, *, at):
    """``while loop_test(*state): state = loop_body(*state)``, decided when it runs.

    Equivalent Python::

        def while_loop(loop_test, loop_body, init, *, at):
            state = init
            while loop_test(*state):
                state = loop_body(*state)
            return state

    ``init`` (and what ``loop_body`` returns) is the single carried value when there is one
    carried variable, else a tuple. ``at`` describes the statement (``autolax.runtime.sites``).
    """
    __tracebackhide__ = True
    site = _loop_site("while", at, loop_body, 0)
    names = list(site.names)
    values = list(unpack(init, len(names)))
    first = loop_test(*values)
    if not is_tracer(first):
        if not report.truth(first):
            report.record(site, plan.PYTHON, iterations=0)
            return init
        if not plan.stages(False, any_tracer(values) or _closure_traced(loop_test, loop_body)):
            return _python_while(site, loop_test, loop_body, values, first, static=True)
    return _dispatch(_WhileForms(site, loop_test, loop_body, values, names, first), is_tracer(first))


def _python_while(site, loop_test, loop_body, values, first, static):
    __tracebackhide__ = True
    n = len(values)
    state, pred, count = list(values), first, 0
    while True:
        if is_tracer(pred):
            error = errors.make("while-became-traced", stmt=site.what, count=count, source=site.source)
            error.count = count
            raise error
        if not report.truth(pred):
            break
        try:
            state = list(unpack(loop_body(*state), n))
        except BaseException as exc:
            keep_raised_state(exc, loop_body, loop_body, 0, state, site.cells)
            raise
        count += 1
        pred = loop_test(*state)
    if static:
        report.record(site, plan.PYTHON, iterations=count)
    return pack(state, n)


def _scalars_first_while(cond_fun, body_fun, init_val):
    """``lax.while_loop`` with the scalars of its carry ahead of its arrays, as a hand-written
    loop carries its index: ``(j, v)``. XLA's CPU backend runs some loops measurably slower
    with an array first (the insertion sort benchmark: 6 % on a 2-core x86-64 CPU,
    ``benchmarks/results.md``). The same values and equations; only the order of the loop's
    operands changes."""
    leaves, tree = jax.tree_util.tree_flatten(init_val)
    order = sorted(range(len(leaves)), key=lambda k: np.ndim(leaves[k]) > 0)  # stable
    if order == list(range(len(leaves))):
        return lax.while_loop(cond_fun, body_fun, init_val)
    place = {k: i for i, k in enumerate(order)}

    def carry(flat):
        return tree.unflatten([flat[place[k]] for k in range(len(flat))])

    def flat(value):
        out = jax.tree_util.tree_leaves(value)
        return [out[k] for k in order]

    def body(c):
        __tracebackhide__ = True
        return flat(body_fun(carry(c)))

    def cond(c):
        __tracebackhide__ = True
        return cond_fun(carry(c))

    return carry(lax.while_loop(cond, body, [leaves[k] for k in order]))


def _bounded_while(site, max_steps):
    """``lax.while_loop``, or for the ``BOUNDED`` form the checkpointed loop that ``jax.grad``
    differentiates (``autolax.runtime.ops.checkpointed``)."""
    if max_steps is None:
        return _scalars_first_while
    message = str(errors.make("loop-bound-exceeded", stmt=site.what, max_steps=max_steps))
    return functools.partial(checkpointed.bounded_while_loop, max_steps=max_steps, error_message=message)


@dataclasses.dataclass
class _WhileLoop:
    """A ``while`` loop whose body's types have settled: what its forms read."""

    site: sites.Site
    state: State  # the carried types (``_fixpoint``)
    body: Traced
    test: Traced

    def go_on(self, leaves):
        """The loop test on the carried ``leaves``: (its boolean, its checks' failures)."""
        __tracebackhide__ = True
        pred_leaves, _, failures = self.test(leaves)
        return predicate(pred_leaves[0], self.site.where), failures


def _staged_while(site, loop_test, loop_body, values, names, first):
    __tracebackhide__ = True
    facts = plan.LoopFacts("while")
    state = State.of(names, values, site, strong_numbers=True)
    appends = _Appends(site, forbid=plan.appends_forbidden(facts))
    body_traced, state = _fixpoint(loop_body, state, names, site, split=appends)
    if body_traced.raises:
        ran = predicate(first, site.where) if is_tracer(first) else bool(first)
        return _raises_when_it_runs(site, body_traced, state.dynamic(values), ran, values, names)
    loop = _WhileLoop(site, state, body_traced, _traced_test(loop_test, state, site))
    facts = dataclasses.replace(facts, inexact=_inexact(state), max_steps=site.max_steps or report.default_max_steps())
    form = plan.loop_form(facts)
    while_loop = _bounded_while(site, facts.max_steps if form == plan.BOUNDED else None)
    if loop.test.jaxpr.jaxpr.effects and is_tracer(first):
        # A test with effects (a `print` in a helper it calls) ran once already, for `first`:
        # the loop starts from that answer and tests again after each iteration, as Python
        # does (`lax.while_loop` would evaluate it once more on entry).
        out = _while_with_checks(loop, while_loop, state.dynamic(values), predicate(first, site.where))
    elif body_traced.makers or loop.test.makers:
        out = _while_with_checks(loop, while_loop, state.dynamic(values))
    else:
        out = while_loop(lambda c: loop.go_on(c)[0], lambda c: body_traced(c, state)[0], state.dynamic(values))
    report.record(site, form)
    report.record_tested_exits(site, loop_test, form)
    ran = predicate(first, site.where) if is_tracer(first) else bool(first)
    result = write_back(names, dict(zip(names, values)), state.rebuild(out), body_traced.kept)
    return pack(_flag_first_assigned(values, result, names, ran), len(names))


def _while_with_checks(loop, while_loop, init, first=None):
    """The while form of a loop with checks: it carries ``(*state, pred, code)``, the first
    failure's code, and stops there. The test runs at the end of each iteration (and before
    the first, unless ``first`` is its answer there already), so its checks are carried too.
    Returns the final state's leaves."""
    __tracebackhide__ = True
    n = loop.state.n_dynamic()
    if first is None:
        pred0, code0 = _while_test_and_code(loop, init, np.int32(0))
    else:
        pred0, code0 = first, np.int32(0)
    carry = while_loop(lambda c: c[n] & (c[n + 1] == 0), lambda c: _while_checked_body(loop, c), (*init, pred0, code0))
    checks.defer(checks.Failures(carry[n + 1], loop.body.makers + loop.test.makers))
    return list(carry[:n])


def _while_test_and_code(loop, leaves, code):
    """The loop test on ``leaves``, and the failure code after its checks."""
    pred, failures = loop.go_on(leaves)
    return pred, _first_code(code, failures, len(loop.body.makers))


def _while_checked_body(loop, carry):
    __tracebackhide__ = True
    n = loop.state.n_dynamic()
    leaves, code = list(carry[:n]), carry[n + 1]
    leaves, _, failures = loop.body(leaves, loop.state)
    pred, code = _while_test_and_code(loop, leaves, _first_code(code, failures, 0))
    return (*leaves, pred, code)


def _raises_when_it_runs(site, body_traced, first_inputs, ran, values, names):
    """A loop whose body always raises (``raise`` under a traced condition outside any
    ``if`` of the body): it raises at its first iteration, if it runs one; the values it
    leaves are never used then."""
    __tracebackhide__ = True
    if not is_tracer(ran):
        if ran:  # it raises: what follows it never runs
            checks.raise_every_time(body_traced(first_inputs)[2], site.what)
        report.record(site, plan.PYTHON, iterations=0)
        return pack(values, len(names))
    if body_traced.jaxpr.effects:  # a `print` in it prints only if the iteration runs
        code = lax.cond(
            ran, lambda *dyn: body_traced(dyn)[2].code.astype(jnp.int32), lambda *dyn: jnp.int32(0), *first_inputs
        )
    else:
        code = jnp.where(ran, body_traced(first_inputs)[2].code, 0).astype(jnp.int32)
    checks.defer(checks.Failures(code, body_traced.makers))
    report.record(site, plan.PYTHON)
    return pack(values, len(names))


def _first_code(code, failures, offset):
    """The carried failure code after one more check: the first failure wins."""
    if failures is None:
        return code
    return jnp.where((code == 0) & (failures.code > 0), failures.code + offset, code).astype(jnp.int32)


# ----------------------------------------------------------------------------- for
def _no_trip(site, values, names, init):
    """What a loop that runs no iteration returns."""
    if site.item_test is None:
        return init
    return pack(list(values) + [Undefined(site.item_test), False], len(names) + 2)


def _constant_test(loop_test, state, item_state, site):
    """An item test's value when it depends on neither the item nor traced values (True,
    False), else None."""
    probe = trace(loop_test, state, ["the loop condition"], site=site, prefix=item_state)
    leaves = probe.out.specs[0].leaves
    if len(leaves) == 1 and not leaves[0].is_undefined and (not leaves[0].dynamic or leaves[0].value is not None):
        return bool(leaves[0].value)  # a Python value (a Python number's leaf holds it too)
    return None


def _first_bound(site, seq, item):
    """The loop target after a loop that bound it to ``item`` if it ran an iteration."""
    return MaybeBound(item, seq.length > 0, site.item_test) if is_tracer(seq.length) else item


_NO_TARGET = object()  # for_range / for_iter without `target=`: the target had no value


def _target_or(site, names, before, result):
    """A loop with an item test returns its target; ``before`` (the ``target=`` argument:
    the value the target had before the loop, when it had one) is the target's value where
    the loop ran no iteration, as in Python."""
    __tracebackhide__ = True
    if before is _NO_TARGET or site.item_test is None:
        return result
    *state, target, stopped = unpack(result, len(names) + 2)
    if isinstance(target, Undefined):  # no iteration, known now
        target = before
    elif isinstance(target, MaybeBound):  # traced trip count: ran an iteration when `assigned`
        name = site.item_test
        value, before_leaves = target.value, jax.tree_util.tree_leaves(before)
        if jax.tree_util.tree_structure(value) != jax.tree_util.tree_structure(before) or not all(
            is_dynamic(b) for b in before_leaves
        ):
            code = "loop-none" if before is None else "loop-structure"
            raise errors.make(
                code,
                what=site.describe(name),
                name=name,
                stmt=site.what,
                source=site.source,
                first=var_spec(name, before).describe(),
                second=var_spec(name, value).describe(),
            )
        target = jax.tree_util.tree_map(lambda v, b: jnp.where(target.assigned, v, b), value, before)
    return pack(state + [target, stopped], len(names) + 2)


def _with_target(names, result, target, stopped):
    """The outputs of a loop with an item test (``sites.Site.item_test``): its state, its
    target (the item it stopped at, else the last item) and whether the test stopped it."""
    return pack(list(result) + [target, stopped], len(names) + 2)


@report.user_facing
def for_range(start, stop, step, loop_body, init, loop_test=None, *, at, target=_NO_TARGET):
    """``for i in range(start, stop, step)``, decided when it runs.

    Equivalent Python::

        def for_range(start, stop, step, loop_body, init, loop_test=None, *, at):
            state = init
            for i in range(start, stop, step):
                if loop_test is not None and not loop_test(*state):
                    break
                state = loop_body(i, *state)
            return state

    ``loop_test`` comes from ``break`` / ``return`` inside the loop. With ``test: i`` in
    ``at`` (``sites``), ``loop_test(i, *state)`` runs with each item before its iteration,
    as ``if c: break`` at the top of the body does (the body does not assign ``i``), and
    the call returns ``(*state, i, stopped)``: ``i`` as Python leaves it (the item the test
    stopped at, else the last item) and whether the test stopped the loop.
    """
    __tracebackhide__ = True
    site = _loop_site("for", at, loop_body, 1)
    names = list(site.names)
    values = list(unpack(init, len(names)))
    if any(is_tracer(b) for b in (start, stop, step)):
        _step_not_zero(step, lambda: site.where)
        seq = _range_sequence(start, stop, step)
        result = _dispatch(_ForForms(site, seq, loop_body, loop_test, values, names), True)
        return _target_or(site, names, target, result)
    seq, r = _range_sequence(start, stop, step)
    result = _for(site, seq, r, loop_body, loop_test, values, names, init)
    if site.index_target in names and loop_test is None and len(r):
        # `index: i`: the body never assigns `i` but through the loop (a staged loop gives it
        # back traced); Python leaves the last item, an int a later `xs[i]` may index with.
        out = list(unpack(result, len(names)))
        out[names.index(site.index_target)] = r[-1]
        result = pack(out, len(names))
    return _target_or(site, names, target, result)


@report.user_facing
def for_iter(iterable, loop_body, init, loop_test=None, *, at, target=_NO_TARGET):
    """``for item in iterable``, decided when it runs.

    Equivalent Python::

        def for_iter(iterable, loop_body, init, loop_test=None, *, at):
            state = init
            for item in iterable:
                if loop_test is not None and not loop_test(*state):
                    break
                state = loop_body(item, *state)
            return state

    Arrays (also inside ``ops.enumerate`` / ``ops.zip``) are scanned over their leading axis
    when anything is traced; lists, tuples, dicts and other iterables are iterated in Python.
    """
    __tracebackhide__ = True
    site = _loop_site("for", at, loop_body, 1)
    names = list(site.names)
    return _target_or(site, names, target, _for_iter(site, names, iterable, loop_body, init, loop_test))


def _for_iter(site, names, iterable, loop_body, init, loop_test):
    __tracebackhide__ = True
    values = list(unpack(init, len(names)))
    seq = _array_sequence(iterable)
    if seq is None:
        return _python_for(site, iterable, loop_body, loop_test, values, static=True)
    if is_tracer(seq.length):  # a range with traced bounds (`r = range(n)`)
        return _dispatch(_ForForms(site, seq, loop_body, loop_test, values, names), True)
    if seq.traced:
        if seq.length == 0:  # a static length: nothing to stage, exactly as Python
            report.record(site, plan.PYTHON, iterations=0)
            return _no_trip(site, values, names, init)
        items = (seq.item(k) for k in builtins.range(seq.length))
        return _dispatch(_ForForms(site, seq, loop_body, loop_test, values, names, items), False)
    return _for(site, seq, iterable, loop_body, loop_test, values, names, init)


def _for(site, seq, iterable, loop_body, loop_test, values, names, init):
    __tracebackhide__ = True
    if seq.length == 0:
        report.record(site, plan.PYTHON, iterations=0)
        return _no_trip(site, values, names, init)
    if not plan.stages(False, any_tracer(values) or _closure_traced(loop_body, loop_test)):
        return _python_for(site, iterable, loop_body, loop_test, values, static=True)
    return _dispatch(_ForForms(site, seq, loop_body, loop_test, values, names, iterable), False)


def _masked_iteration(pred, item, state, loop_body, site):
    """One iteration of an unrolled loop run where the traced ``pred`` holds."""
    # The masked side is a path that already left the loop (`break` or `return`): a
    # variable still unassigned there is one Python never reads on it (after a `return`)
    # or would fail to read. It takes the type the iteration gives it. (``item`` is a
    # default, not a closure cell, which the staged-effect check would read as the body's.)
    n = len(state)
    state = [
        Undefined(v.name, kind="loop" if v.kind == "unbound" else v.kind) if isinstance(v, Undefined) else v
        for v in state
    ]
    # An error of the user's code in the iteration is Python's where the program gets to it
    # (``taken``): raised then, as a branch's is.
    body = lambda *s, item=item: loop_body(item, *s)  # noqa: E731
    return list(staged_cond(pred, body, lambda *s: pack(list(s), n), state, site, taken="an iteration of the loop")[0])


def _python_for(site, iterable, loop_body, loop_test, values, static):
    __tracebackhide__ = True
    n = len(values)
    state, count = list(values), 0
    item_test = site.item_test is not None
    stopped = False  # item tests: has the test stopped the loop (maybe traced)
    target = Undefined(site.item_test) if item_test else None  # the loop target, as Python binds it
    it = iter(iterable)
    while True:
        pred = True if loop_test is None or item_test else loop_test(*state)
        if not is_tracer(pred) and not pred:
            break
        try:
            item = next(it)
        except StopIteration:
            break
        if item_test:
            # Python binds the target, then tests: a test that stops leaves the target bound
            # to this item.
            target = item if stopped is False else select_target(stopped, target, item, site)
            if site.test_after:  # tested after the iteration (below); a stopped loop is masked
                pred = True if stopped is False else jnp.logical_not(stopped)
            else:
                test = loop_test(item, *state)
                pred = test if stopped is False else jnp.logical_and(jnp.logical_not(stopped), test)
                if not is_tracer(pred) and not pred:
                    stopped = True
                    break
                stopped = False if not is_tracer(pred) else jnp.logical_not(pred)
        if is_tracer(pred):  # a traced `break` in an unrolled loop: mask the iteration
            state = _masked_iteration(pred, item, state, loop_body, site)
        else:
            try:
                state = list(unpack(loop_body(item, *state), n))
            except BaseException as exc:
                keep_raised_state(exc, loop_body, loop_body, 1, state, site.cells)
                raise
        count += 1
        if item_test and site.test_after:
            stop = loop_test(*state)
            if not is_tracer(stop) and not is_tracer(stopped):
                if stop:
                    stopped = True
                    break
            else:
                stopped = jnp.logical_or(stopped, stop)
    if static:
        report.record(site, plan.PYTHON, iterations=count)
    if item_test:
        return pack(state + [target, stopped], n + 2)
    return pack(state, n)


class _Unsettled(Exception):
    """The one-trace scan's body did not return the carried types (see _scan_in_one_trace)."""


_RETRACE = object()  # what _scan_in_one_trace returns when the loop must be traced first


def _scan_in_one_trace(site, seq, loop_body, state, item_state, names, values, appends):
    """A ``for`` loop with a static trip count and no exit is a ``lax.scan``, whatever its
    body holds (``plan.loop_form``). Its body is traced once, inside the scan, when it
    returns the types it was given (the common case); ``_fixpoint``'s trace first and replay
    inside the scan would cost about as much again as the body's own trace (the first
    call's cost over hand-written lax). Returns the loop's result, or ``_RETRACE`` where the
    body changes a carried type, has a check or always raises, or fails: then nothing of
    this attempt is kept and the caller traces first, as for every other loop.
    """
    __tracebackhide__ = True
    state = state.first_assigned_in_loop()
    if any(spec.is_undefined or spec.is_maybe_bound for spec in state.specs):
        return _RETRACE
    rec = report.active_recorder()
    mark = rec.mark() if rec is not None else None
    n = state.n_dynamic()
    item_avals = item_state.abstract()
    captured = {}

    def step(k, x, carry):
        __tracebackhide__ = True
        item = [cast(v, aval) for v, aval in builtins.zip(jax.tree_util.tree_leaves(seq.item(k, x)), item_avals)]
        leaves = run_body(
            loop_body,
            state,
            names,
            item + list(carry),
            captured,
            site=site,
            prefix_state=item_state,
            strong_numbers=True,
            split=appends,
        )
        out = captured.get("out")
        if captured.get("raises") or captured["makers"] or not join_iterations(state, out, site).same(state):
            raise _Unsettled
        return cast_to(out, state, leaves[: out.n_dynamic()]), leaves[out.n_dynamic() :]

    init = state.dynamic(values)
    try:
        report.count_trace(site)
        with staging(site):
            out, ys = (_scan_indexed if seq.indexed else _scan_rows)(step, init, seq)
    except Exception:  # noqa: BLE001 - the usual path traces again and raises what it raises
        if rec is not None:
            rec.rollback(mark)
        return _RETRACE
    result = write_back(names, dict(zip(names, values)), state.rebuild(list(out)[:n]), captured.get("kept"))
    if ys:
        result = appends.attach(result, ys, values)
    report.record(site, plan.SCAN)
    result = _flag_first_assigned(values, result, names, seq.length > 0)
    return pack(result, len(names))


def _scan_rows(step, init, seq):
    """``lax.scan`` of ``step(None, row, carry) -> (carry, per-iteration outputs)`` over the
    rows of ``seq.xs``; returns (final carry, stacked outputs)."""

    def body(carry, x):
        __tracebackhide__ = True
        new, extras = step(None, x, carry)
        return tuple(new), extras

    out, ys = lax.scan(body, tuple(init), xs=seq.xs, length=seq.length)
    return list(out), ys


def _scan_indexed(step, init, seq):
    """``_scan_rows`` with a counter carried first: ``step(k, x, carry)``."""

    def body(carry, x):
        __tracebackhide__ = True
        new, extras = step(carry[0], x, carry[1:])
        return (carry[0] + 1, *new), extras

    (_, *out), ys = lax.scan(body, (_counter_zero(), *init), xs=seq.xs, length=seq.length)
    return out, ys


def _false_at_start(test_traced, state, values) -> bool:
    """Is the loop's exit test, run on the state the loop starts from, known to be false
    when tracing?

    ``total = 0.0; for x in xs: total += x; if total > cap: break`` tests after each
    iteration; the staged predicate tests the carry before the next one, so before the first
    it must not test (Python does not) -- unless the test is false there anyway, which a
    start of constants shows. The test runs on the host (``ops.host``), and only when it has
    no effects or checks."""
    if test_traced.jaxpr.effects or test_traced.makers:
        return False
    start = state.host_dynamic(values)
    outs = host.evaluate(test_traced.jaxpr, start) if start is not None else None
    if not outs or outs[0].shape != ():
        return False
    return not bool(outs[0])


@dataclasses.dataclass
class _ForLoop:
    """A ``for`` loop whose body's types have settled, staged in one of its forms
    (``_for_scan``, ``_for_masked``, ``_for_selected``, ``_for_while``, ``_for_fori``).

    The carry every form threads: the ``n`` dynamic leaves of ``state``, then, when the body
    has checks (``checked``, see ``autolax.runtime.ops.checks``), the code of the first one that failed.
    """

    site: sites.Site
    seq: _Sequence
    names: list  # the carried variables
    values: list  # their values when the loop starts
    state: State  # their settled types (``_fixpoint``)
    body: Traced
    test: Traced | None  # the exit test (``loop_test``), if the loop has one
    item_avals: list  # the types of an item's leaves (``_item_state``)
    item_test: bool  # the test runs with each item (``sites.Site.item_test``) ...
    after: bool  # ... after each iteration, on the state it leaves (``sites.Site.test_after``)
    # (start, stop) when the loop counts k from start to stop and takes k as the item, as
    # `lax.fori_loop(start, stop, ...)` does by hand (``_Sequence.counter``), else None: k
    # counts from 0 and the item of iteration k is ``seq.item(k, x)``.
    counter: tuple | None = None
    n: int = dataclasses.field(init=False)
    checked: bool = dataclasses.field(init=False)
    # An item test in the predicate also runs on the state after the last iteration (past the
    # last item, or a clamped one), where Python does not test: only a test that cannot tell
    # runs there (this is True); another runs under a `lax.cond`, only where Python runs it.
    test_anyway: bool = dataclasses.field(init=False)

    def __post_init__(self):
        self.n = self.state.n_dynamic()
        self.checked = bool(self.body.makers)
        self.test_anyway = self.test is None or self.after or not self.item_test or harmless(self.test)

    @property
    def k0(self):
        return 0 if self.counter is None else self.counter[0]

    @property
    def k_end(self):
        return self.seq.length if self.counter is None else self.counter[1]

    def item(self, k, x) -> list:
        """The leaves of iteration ``k``'s item (``x``: the row of ``seq.xs`` a scan gives)."""
        item = k if self.counter is not None else self.seq.item(k, x)
        return [cast(v, aval) for v, aval in builtins.zip(jax.tree_util.tree_leaves(item), self.item_avals)]


def _staged_for(site, seq, loop_body, loop_test, values, names):
    """Stages a ``for`` loop in the form ``plan.loop_form`` chooses."""
    __tracebackhide__ = True
    facts = plan.LoopFacts("for", static_trip=not is_tracer(seq.length), exit_traced=loop_test is not None)
    state = State.of(names, values, site, strong_numbers=True)
    item_state = _item_state(seq, state)
    appends = _Appends(site, forbid=plan.appends_forbidden(facts))
    if facts.static_trip and loop_test is None and site.item_test is None:
        done = _scan_in_one_trace(site, seq, loop_body, state, item_state, names, values, appends)
        if done is not _RETRACE:
            return done
    body_traced, state = _fixpoint(loop_body, state, names, site, prefix=item_state, split=appends)
    item_test = site.item_test is not None
    after = site.test_after  # the test runs after each iteration, on the state it leaves
    if item_test and not after:
        constant = _constant_test(loop_test, state, item_state, site)
        if constant is False:  # it stops at the first item, if there is one
            report.record(site, plan.PYTHON, iterations=0)
            return _with_target(names, values, _first_bound(site, seq, seq.item(0)), seq.length > 0)
        if constant is True:  # it never stops the loop: a loop without a test
            loop_test, item_test = None, False
            facts = dataclasses.replace(facts, exit_traced=False)
    test_traced = (
        _traced_test(loop_test, state, site, item_state if item_test and not after else None)
        if loop_test is not None
        else None
    )
    loop = _ForLoop(site, seq, names, values, state, body_traced, test_traced, item_state.abstract(), item_test, after)
    if body_traced.raises:
        return _for_that_raises(loop)
    effects = bool(body_traced.jaxpr.effects) or bool(test_traced is not None and test_traced.jaxpr.effects)
    facts = dataclasses.replace(
        facts, inexact=_inexact(state), effects=effects, max_steps=site.max_steps or report.default_max_steps()
    )
    form = plan.loop_form(facts)
    if seq.counter is not None and form in (plan.FORI, plan.WHILE, plan.BOUNDED):
        loop = dataclasses.replace(loop, counter=seq.counter)
    init = state.dynamic(values) + ([np.int32(0)] if loop.checked else [])
    ys = None
    if form == plan.SCAN:
        out, ys = _for_scan(loop, init)
    elif form == plan.MASKED_SCAN:
        out = _for_masked(loop, init)
    elif form == plan.WHILE:
        out = _for_while(loop, init)
    elif form == plan.FORI:
        out = _for_fori(loop, init)
    elif form == plan.EARLY_EXIT:
        out = _early_exit_with_masked_derivative(
            lambda *a: _for_while(loop, a), lambda *a: _for_selected(loop, a), init
        )
    else:  # plan.BOUNDED
        out = _for_while(loop, init, while_loop=_bounded_while(site, facts.max_steps))
    return _for_result(loop, form, out, ys, loop_test, appends)


def _for_that_raises(loop):
    """A loop whose body always raises (``_raises_when_it_runs``): in its first iteration,
    if it runs one and its test lets it."""
    __tracebackhide__ = True
    site, seq, names, values, state = loop.site, loop.seq, loop.names, loop.values, loop.state
    if loop.item_test and loop.after:  # it raises in its first iteration, if it runs one
        _raises_when_it_runs(site, loop.body, loop.item(0, None) + state.dynamic(values), seq.length > 0, values, names)
        return _with_target(names, values, _first_bound(site, seq, seq.item(0)), False)
    first_item = loop.item(0, None)
    ran = seq.length > 0
    if not loop.item_test:
        return _raises_when_it_runs(site, loop.body, first_item + state.dynamic(values), ran, values, names)
    # The first iteration raises unless the test stops the loop at the first item.
    go = predicate(loop.test(first_item + state.dynamic(values))[0][0], site.where)
    _raises_when_it_runs(site, loop.body, first_item + state.dynamic(values), jnp.logical_and(ran, go), values, names)
    return _with_target(names, values, _first_bound(site, seq, seq.item(0)), jnp.logical_and(ran, jnp.logical_not(go)))


def _for_result(loop, form, out, ys, loop_test, appends):
    """What the staged loop leaves (``out``: its final carry; ``ys``: the scan's stacked
    per-iteration outputs, or None), as ``_staged_for`` returns it."""
    __tracebackhide__ = True
    site, seq, names, values, n = loop.site, loop.seq, loop.names, loop.values, loop.n
    if loop.item_test:  # (stopped, the index of the item it stopped at) come first
        (stopped, stop_k), out = out[:2], out[2:]
        # the item it stopped at; a test after each iteration: the last item it ran
        last = stop_k if loop.after else lax.select(stopped, stop_k, jnp.asarray(seq.length - 1, stop_k.dtype))
        target = _first_bound(site, seq, seq.item(last))
    elif site.item_test is not None:  # a test that never stops it: the target is the last item
        stopped, target = False, _first_bound(site, seq, seq.item(seq.length - 1))
    if loop.checked:
        checks.defer(checks.Failures(out[n], loop.body.makers))
    result = write_back(names, dict(zip(names, values)), loop.state.rebuild(out[:n]), loop.body.kept)
    if ys is not None:
        result = appends.attach(result, ys, values)
    report.record(site, form)
    report.record_tested_exits(site, loop_test, form)
    ran = seq.length > 0  # ran the body at least once (not so if the item test stopped it first)
    if loop.item_test and not loop.after and any(isinstance(v, Undefined) for v in values):
        ran = jnp.where(stopped, stop_k > 0, ran)
    result = _flag_first_assigned(values, result, names, ran)
    if site.item_test is not None:
        return _with_target(names, result, target, stopped)
    return pack(result, len(names))


def _for_iterate(loop, k, x, carry):
    """Iteration ``k`` of the body: (new carry, per-iteration outputs)."""
    __tracebackhide__ = True
    new, extras, failures = loop.body(loop.item(k, x) + list(carry[: loop.n]), loop.state)
    if loop.checked:
        new = [*new, _first_code(carry[loop.n], failures, 0)]
    return list(new), list(extras)


def _for_skip(loop, k, x, carry):
    """An iteration that does not run the body."""
    return list(carry), [jnp.zeros(a.shape, a.dtype) for a in loop.body.extras]


def _for_step(loop, k, x, carry):
    """One iteration: (new carry, per-iteration outputs). A body that checks and prints is
    skipped once a check failed (the loop forms that go on after it: scan, fori_loop):
    Python stopped there, and never printed what the later iterations print."""
    __tracebackhide__ = True
    if loop.checked and loop.body.jaxpr.effects:
        return lax.cond(
            carry[loop.n] == 0,
            lambda k, x, c: _for_iterate(loop, k, x, c),
            lambda k, x, c: _for_skip(loop, k, x, c),
            k,
            x,
            list(carry),
        )
    return _for_iterate(loop, k, x, carry)


def _stop_test(loop, carry, guard=False):
    """A test run after each iteration (``test: after``): does ``carry`` stop the loop?"""
    __tracebackhide__ = True
    return predicate(loop.test(list(carry[: loop.n]), guard=True if guard else None)[0][0], loop.site.where)


def _go_on(loop, carry, guard=False, k=None, x=None):
    """The loop test on ``carry`` (with an item test: and on the item of iteration k)."""
    __tracebackhide__ = True
    item = loop.item(k, x) if loop.item_test and not loop.after else []
    leaves = loop.test(item + list(carry[: loop.n]), guard=True if guard else None)[0]
    pred = predicate(leaves[0], loop.site.where)
    return pred & (carry[loop.n] == 0) if loop.checked else pred


def _go_on_if(loop, more, carry, k=None, x=None):
    """``more and _go_on(...)``: the test runs where ``more`` is false too when that cannot
    tell (``_ForLoop.test_anyway``), else under a ``lax.cond``."""
    __tracebackhide__ = True
    if loop.test_anyway:
        return jnp.logical_and(more, _go_on(loop, carry, k=k, x=x))

    def test(c, k, x):
        __tracebackhide__ = True
        return _go_on(loop, c, k=k, x=x)

    # Under shard_map the test varies over the axes the carry does: so must the False.
    tested = jax.eval_shape(test, list(carry), k, x)
    return lax.cond(more, test, lambda c, k, x: cast(False, tested), list(carry), k, x)


def _for_scan(loop, init):
    """The ``lax.scan`` form: (final carry, stacked per-iteration outputs). The items are the
    rows of ``seq.xs`` (no counter to carry), or indexed by a counter."""
    return (_scan_indexed if loop.seq.indexed else _scan_rows)(lambda k, x, c: _for_step(loop, k, x, c), init, loop.seq)


def _for_masked(loop, init):
    """The masked ``lax.scan`` form: all iterations run; those after the exit skip the body.
    Unlike a while_loop, it is reverse-differentiable."""
    extra = [np.bool_(False), _counter_zero()] if loop.item_test else []
    (_, *out), _ = lax.scan(
        lambda c, x: _for_masked_body(loop, c, x),
        (_counter_zero(), *extra, *init),
        xs=loop.seq.xs,
        length=loop.seq.length,
    )
    return list(out)


def _for_masked_body(loop, carry, x):
    __tracebackhide__ = True
    k, rest = carry[0], list(carry[1:])
    if not loop.item_test:
        new = lax.cond(_go_on(loop, rest), lambda c: _for_step(loop, k, x, c)[0], lambda c: list(c), rest)
        return (k + 1, *new), None
    # An item test runs before each iteration; once it stops the loop, it stays stopped.
    (stopped, stop_k), rest = rest[:2], rest[2:]
    if loop.after:  # the test runs on what the iteration leaves; stop_k: the last item run
        go = jnp.logical_not(stopped)
        new = lax.cond(go, lambda c: _for_step(loop, k, x, c)[0], lambda c: list(c), rest)
        stops = jnp.logical_and(go, _stop_test(loop, new))
        return (k + 1, jnp.logical_or(stopped, stops), jnp.where(go, k, stop_k), *new), None
    go = _go_on_if(loop, jnp.logical_not(stopped), rest, k=k, x=x)
    new = lax.cond(go, lambda c: _for_step(loop, k, x, c)[0], lambda c: list(c), rest)
    stop_k = jnp.where(jnp.logical_or(go, stopped), stop_k, k)
    return (k + 1, jnp.logical_not(go), stop_k, *new), None


def _for_selected(loop, init):
    """The masked scan for the derivative of the early exit (``plan.EARLY_EXIT``): every
    iteration runs the body (its `if`s as selects, see tracing.selecting) and a select keeps
    its result while the loop goes on; an iteration that does not run has no derivative.
    Unlike ``_for_masked`` it has no ``lax.cond``, which `vmap` would batch after
    differentiation: `jax.grad(jax.vmap(f))` could not transpose it (jax-ml/jax#22011)."""
    carry = (_counter_zero(), *([np.bool_(False), _counter_zero()] if loop.item_test else []), *init)
    # Under shard_map the selects vary over the axes the exit test varies over: start the
    # carry varying there too, or the scan's carry types differ.
    x0 = None if loop.seq.xs is None else jax.tree_util.tree_map(lambda a: a[0], loop.seq.xs)
    for _ in builtins.range(3):
        out_types = jax.eval_shape(lambda c: _for_selected_body(loop, c, x0)[0], carry)
        widened = tuple(cast(v, t) for v, t in builtins.zip(carry, out_types))
        if all(jax.typeof(a) == jax.typeof(b) for a, b in builtins.zip(widened, carry)):
            break
        carry = widened
    (_, *out), _ = lax.scan(lambda c, x: _for_selected_body(loop, c, x), carry, xs=loop.seq.xs, length=loop.seq.length)
    return list(out)


def _for_selected_body(loop, carry, x):
    __tracebackhide__ = True
    k, rest = carry[0], list(carry[1:])
    if loop.item_test and loop.after:
        (stopped, stop_k), rest = rest[:2], rest[2:]
        go = jnp.logical_not(stopped)
    elif loop.item_test:
        (stopped, stop_k), rest = rest[:2], rest[2:]
        go = jnp.logical_and(jnp.logical_not(stopped), _go_on(loop, rest, guard=True, k=k, x=x))
        flags = [jnp.logical_not(go), jnp.where(jnp.logical_or(go, stopped), stop_k, k)]
    else:
        go, flags = _go_on(loop, rest, guard=True), []
    new, _, failures = loop.body(loop.item(k, x) + rest[: loop.n], loop.state, guard=go)
    if loop.checked:
        new = [*new, _first_code(rest[loop.n], failures, 0)]
    new = [lax.select(go, a, b) for a, b in builtins.zip(new, rest)]
    if loop.item_test and loop.after:
        stops = jnp.logical_and(go, _stop_test(loop, new, guard=True))
        flags = [jnp.logical_or(stopped, stops), jnp.where(go, k, stop_k)]
    return (k + 1, *flags, *new), None


def _for_while(loop, init, while_loop=_scalars_first_while):
    """The ``lax.while_loop`` form, which stops at the exit: carries the counter k first.
    With an item test, its final carry starts with (stopped, the index of the item it
    stopped at), counted from 0 as the masked forms count."""
    __tracebackhide__ = True
    # A test after each iteration is the next one's test, except before the first: unless
    # it is known false on the starting state, the predicate skips it there (`k == k0 or`).
    first_free = (
        loop.test is not None and loop.item_test and loop.after and _false_at_start(loop.test, loop.state, loop.values)
    )
    k0, k_end = loop.k0, loop.k_end
    k, *out = while_loop(
        lambda c: _for_while_test(loop, first_free, c),
        lambda c: _for_while_step(loop, c),
        (jnp.asarray(k0, _counter_type(k0, k_end)), *init),
    )
    index = k if isinstance(k0, int) and k0 == 0 else k - k0
    if loop.item_test and loop.after:  # the test on the state the last iteration left; its item
        stopped = _stop_test(loop, list(out))
        if is_tracer(loop.seq.length) or not loop.seq.length:  # did it run an iteration?
            stopped = jnp.logical_and(index > 0, stopped)
        return [stopped, (index - 1).astype(_default_int()), *out]
    if loop.item_test:  # it stopped before the end (a failed check stops it too: then it raises)
        return [k < k_end, index.astype(_default_int()), *out]
    return list(out)


def _for_while_test(loop, first_free, carry):
    """``_for_while``'s predicate on ``(k, *carry)``."""
    __tracebackhide__ = True
    more = carry[0] < loop.k_end
    if loop.test is not None and loop.item_test and loop.after:
        go = jnp.logical_not(_stop_test(loop, list(carry[1:])))
        go = go if first_free else jnp.logical_or(carry[0] == loop.k0, go)
        go = jnp.logical_and(go, carry[1 + loop.n] == 0) if loop.checked else go
        return jnp.logical_and(more, go)
    if loop.test is not None:
        return _go_on_if(loop, more, list(carry[1:]), k=carry[0])
    return jnp.logical_and(more, carry[1 + loop.n] == 0) if loop.checked else more


def _for_while_step(loop, carry):
    __tracebackhide__ = True
    k, rest = carry[0], list(carry[1:])
    return (k + 1, *_for_step(loop, k, None, rest)[0])


def _for_fori(loop, init):
    """The ``lax.fori_loop`` form (traced ``range`` bounds, no exit)."""
    return list(lax.fori_loop(loop.k0, loop.k_end, lambda k, c: _for_fori_step(loop, k, c), tuple(init)))


def _for_fori_step(loop, k, carry):
    __tracebackhide__ = True
    return tuple(_for_step(loop, k, None, carry)[0])


def _early_exit_with_masked_derivative(early, masked, init):
    """Runs ``early`` (a ``while_loop`` that stops at the ``break``/``return``), except under
    differentiation, where ``masked`` (the same loop as a masked ``scan``) supplies the
    derivative, so ``jax.grad`` works and a plain call does not pay for the iterations after
    the exit.

    ``jax.custom_jvp`` picks the form: its primal rule is the while loop, its JVP rule the
    masked scan's JVP (reverse mode transposes that). Both loops close over tracers (the
    values the body reads); ``checkpointed.closure_convert`` turns all of them into explicit
    arguments, so their tangents reach the JVP and none that carries no tangent (an enclosing
    loop's integer index: ``jax.closure_convert`` leaves those in the closure) escapes its
    trace into the rules.
    """
    __tracebackhide__ = True
    early_c, early_consts = checkpointed.closure_convert(lambda xs: early(*xs), tuple(init))
    masked_c, masked_consts = checkpointed.closure_convert(lambda xs: masked(*xs), tuple(init))
    n_init, n_early = len(init), len(early_consts)

    def early_fn(*args):
        return early_c(args[:n_init], *args[n_init:])

    def masked_fn(*args):
        return masked_c(args[:n_init], *args[n_init:])

    @jax.custom_jvp
    def loop(*args):
        return early_fn(*args[:n_init], *args[n_init : n_init + n_early])

    @loop.defjvp
    def loop_jvp(primals, tangents):
        pick = lambda xs: list(xs[:n_init]) + list(xs[n_init + n_early :])  # noqa: E731
        return jax.jvp(masked_fn, pick(primals), pick(tangents))

    return loop(*init, *early_consts, *masked_consts)
