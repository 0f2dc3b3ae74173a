"""Calls from converted code: user functions are converted on first call; ``print``;
``min`` / ``max`` / ``any`` / ``all`` of traced numbers."""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import functools
import io
import linecache
import os
import operator
import sys
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from autolax import compat, errors, plan, sites, transforms
from autolax.libraries import host_output, is_bound_method, is_library_callable
from autolax.ops import checks, report
from autolax.ops.lists import key_order, restore_order
from autolax.ops.state import Undefined, any_tracer, is_tracer

# How a user function reached from converted code is converted: set by ``autolax.api`` when
# autolax is imported (the runtime does not import the front end). Until then -- and for code
# written by ``autolax convert`` that imports ``autolax.ops`` alone -- callees run as written.
_converter = None
# ``why_unconverted(fn)``: why autolax could not convert the user function ``fn``, which then
# runs as written (None: it was converted, or never tried).
_why_unconverted = None


def set_converter(convert, why_unconverted=None) -> None:
    """Installs ``convert(fn) -> converted fn`` for ``ops.call`` (done by ``autolax.api``),
    and ``why_unconverted(fn) -> str | None`` for a callee that could not be converted."""
    global _converter, _why_unconverted
    _converter = convert
    _why_unconverted = why_unconverted


def converted(f):
    """The converted version of a callable reached from converted code (or ``f`` itself)."""
    if _converter is None:
        return f
    rebuilt = _rebuilt(f)
    if rebuilt is not None:
        return rebuilt
    if is_library_callable(f):
        return f
    if isinstance(f, types.MethodType):
        fn = converted(f.__func__)
        return f if fn is f.__func__ else types.MethodType(fn, f.__self__)
    if isinstance(f, functools.partial):
        fn = converted(f.func)
        return f if fn is f.func else type(f)(fn, *f.args, **f.keywords)
    if isinstance(f, types.FunctionType):
        return _converter(f)
    if is_bound_method(f):  # a method bound by a library, as a pytree (Equinox)
        fn = converted(f.__func__)
        return f if fn is f.__func__ else jax.tree_util.Partial(fn, f.__self__)
    call = type(f).__call__
    fn = converted(call)
    return f if fn is call else types.MethodType(fn, f)


def converted_argument(f):
    """``converted(f)`` for a function handed to a transform (``jax.vmap(step)``): a callable
    object (an Equinox or NNX module) stays a pytree with the same leaves, as
    ``jax.tree_util.Partial(converted __call__, f)``, so ``eqx.filter_jit`` and friends
    still see its arrays."""
    if not callable(f):
        return f
    g = converted(f)
    if isinstance(g, types.MethodType) and not isinstance(f, types.MethodType):
        return jax.tree_util.Partial(g.__func__, f)
    if report.active_recorder() is not None and isinstance(g, types.FunctionType):
        g = _fresh(g)
    return g


def _fresh(fn):
    """A new function object running ``fn``'s code. Under ``trace_check``: JAX caches the
    trace of a function given to ``lax.scan`` (and others) by the function object, and a
    cached trace records none of its statements."""
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__dict__.update(fn.__dict__)
    return new


# Library objects made from user functions (a `jax.custom_jvp`, Flax Linen's method wrapper)
# -> the same made from their conversions: one per object, so `jax.jit` caches still hit.
_REBUILT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _rebuilt(f):
    try:
        hit = _REBUILT.get(f)
    except TypeError:  # not weakly referable (nor hashable)
        return None
    if hit is not None:
        return hit
    new = transforms.rebuild(f, converted, lambda fn: not is_library_callable(fn))
    if new is not None:
        new.__autolax_converted__ = True
        _REBUILT[f] = new
    return new


@report.user_facing
def call(f, *args, **kwargs):
    """``ops.call(f, *args)`` for ``f(*args)``: converts ``f`` first if it is user code
    (cached per function), then calls it. For a transform that takes functions
    (``jax.vmap(step)``, ``lax.scan(body, ...)``, ``eqx.filter_grad(loss)``; see
    ``autolax.transforms``) the user functions among its arguments are converted."""
    __tracebackhide__ = True
    if isinstance(f, Undefined):
        f()
    if report.in_staged_body():
        _check_host_output(f)
    if not report.converts_calls():
        return f(*args, **kwargs)
    token = _calling.set(True)
    try:
        if transforms.is_transform(f):
            args, kwargs = transforms.convert_arguments(f, args, kwargs, converted_argument)
            return f(*args, **kwargs)
        g = converted(f)
        staged = report.in_staged_body()
        guard = _recursion_guard(f) if staged else contextlib.nullcontext()
        with _unconverted_callee(f, g), guard:
            try:
                return g(*args, **kwargs)
            except RecursionError as exc:
                # An `@autolax.jit` function calling itself under a traced condition: jax.jit
                # finds its own trace under way and raises "Recursively calling ..." at once.
                if staged and str(exc).startswith("Recursively calling") and getattr(f, "__autolax_jit__", None):
                    raise errors.make("traced-recursion", name=getattr(f, "__qualname__", repr(f)),
                                      depth=_MAX_STAGED_RECURSION) from exc
                raise
    finally:
        _calling.reset(token)


def _check_host_output(f) -> None:
    """Inside a staged body: ``StagedEffectError`` for a call of ``f`` that writes output
    autolax does not stage (``host_output``), naming the call, the user's line and the
    statement being staged. A loop whose bounds are static runs in Python instead."""
    name = host_output(f)
    if name is None:
        return
    site = getattr(report.current_staging(), "site", None)
    where, line = report.user_line(sys._getframe(1))
    error = errors.make(
        "host-output", call=name, where=where,
        stmt=site.what if site is not None else "a staged branch or loop body", source=line,
    )
    if site is not None and getattr(site, "kind", None) in ("for", "while"):
        raise plan.Unstageable(error)  # a loop with static bounds runs in Python instead
    raise error


@report.user_facing
def host_call(f, *args, **kwargs):
    """``ops.host_call(logging.warning, ...)`` for ``logging.warning(...)``: a call of a
    library function that writes output autolax does not stage (``host_output``). Inside a
    staged branch or loop body it is ``StagedEffectError``; elsewhere it runs as written.

    Equivalent Python: ``f(*args, **kwargs)``.
    """
    __tracebackhide__ = True
    if report.in_staged_body():
        _check_host_output(f)
    return f(*args, **kwargs)


@contextlib.contextmanager
def _unconverted_callee(f, g):
    """A user function that autolax could not convert (``g is f``) runs as written: JAX's
    error for a traced value it uses as a Python value (``if n > 0:`` with ``n`` traced) is
    ``TracedValueError`` naming the function and why it was not converted."""
    why = None
    if g is f and _why_unconverted is not None and isinstance(f, types.FunctionType):
        try:
            why = _why_unconverted(f)
        except TypeError:
            why = None
    if why is None and g is f and _converter is None and isinstance(f, types.FunctionType) \
            and not is_library_callable(f) and not _calls_runtime(f):
        # The runtime without autolax's front end (``--standalone`` output): a user
        # function of another file that was not converted with it.
        try:
            yield
        except report.TRACER_ERRORS as exc:
            filename = os.path.basename(f.__code__.co_filename)
            raise errors.make("callee-not-converted", name=f.__qualname__, file=filename,
                              reason=report.unstageable_reason(exc, _CalleeSite(f))) from exc
        return
    if why is None:
        yield
        return
    try:
        yield
    except report.TRACER_ERRORS as exc:
        site = _CalleeSite(f)
        raise errors.make("callee-unconverted", name=f.__qualname__, why=why,
                          reason=report.unstageable_reason(exc, site),
                          fix=report.unstageable_fix(exc) or _STATIC_FIX) from exc


_STATIC_FIX = "mark the arguments it needs as Python values static (static_argnums / static_argnames)."


def _calls_runtime(f) -> bool:
    """Is ``f`` converted code (its code, or a function defined in it, reads a global that
    is autolax's runtime, ``ops``)?"""
    codes, names = [f.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    glob = getattr(f, "__globals__", {})
    return any(isinstance(glob.get(n), types.ModuleType) and glob[n].__name__.split(".")[-1] == "ops"
               and glob[n].__name__.split(".")[0] in ("autolax", "autolax_runtime") for n in names)



class _CalleeSite:
    """Where ``report.unstageable_reason`` looks for the user's line: the callee's file."""

    kind = "call"

    def __init__(self, f):
        self.filename = f.__code__.co_filename


# Whether converted code is calling a function (``ops.call``), which may be converted code too.
_calling: contextvars.ContextVar = contextvars.ContextVar("autolax_calling", default=False)


def in_call() -> bool:
    """Does the code running run inside a call from converted code (``ops.call``: a user
    function, or one a transform such as ``jax.vmap`` or ``lax.scan`` calls)? The caller
    may have made the call inside a ``try`` whose handler catches what it raises."""
    return _calling.get()


# Calls of each function (by code) under way inside staged bodies. A function calling itself
# under a traced condition traces both branches, each of which calls it again: tracing would
# never end, so past this depth it is an error naming the function.
_MAX_STAGED_RECURSION = plan.MAX_STAGED_RECURSION
_active: contextvars.ContextVar = contextvars.ContextVar("autolax_staged_calls", default={})


def _code_of(f):
    """The code object of the user function ``f`` runs: through a bound method, and through
    what ``autolax.jit`` returns (``%%autolax`` binds each function of the cell to one, which
    runs the converted function inline when called from another trace)."""
    for _ in range(8):
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if isinstance(code, types.CodeType):
            return code
        info = getattr(f, "__autolax_jit__", None)
        if info is None or getattr(info, "fn", None) is None:
            return None
        f = info.fn
    return None


@contextlib.contextmanager
def _recursion_guard(f):
    code = _code_of(f)
    active = _active.get()
    depth = active.get(code, 0) + 1
    if code is not None and depth > _MAX_STAGED_RECURSION:
        raise errors.make("traced-recursion", name=getattr(f, "__qualname__", repr(f)), depth=_MAX_STAGED_RECURSION)
    token = _active.set({**active, code: depth})
    try:
        yield
    finally:
        _active.reset(token)


class FString:
    """An f-string argument of ``print``, formatted when it is printed: ``print(f"x = {x}")``
    with a traced ``x`` shows the value the program computes, not the tracer (converted code:
    ``ops.print(ops.fstring('x = {}', x))``)."""

    __slots__ = ("template", "values")

    def __init__(self, template: str, values: tuple):
        self.template = template  # str.format's syntax: f"{x!r:>8}" -> "{!r:>8}"
        self.values = values

    def __str__(self):
        return self.template.format(*self.values)

    def __repr__(self):  # `!r` of an f-string inside another: the text's repr, as Python's
        return repr(str(self))

    def __format__(self, spec):  # f"{f'{x:.1f}':>8}": the text, formatted with the spec
        return format(str(self), spec)


jax.tree_util.register_pytree_node(FString, lambda f: (f.values, f.template), lambda t, values: FString(t, tuple(values)))


def fstring(template, *values):
    """``f"..."`` given to ``print``: ``template`` is the f-string in ``str.format``'s syntax,
    ``values`` its expressions.

    Equivalent Python: ``template.format(*values)``, formatted when printed.
    """
    return FString(template, values)


def print(*args, sep=" ", end="\n", file=None, flush=False):  # noqa: A001 - replaces builtins.print
    """``print`` that shows runtime values of traced arguments (via ``jax.debug.callback``),
    once per executed iteration or branch, like the original Python. Inside a staged
    branch or loop body, or anywhere in a function ``jax.jit`` traces, every ``print`` is
    staged, static arguments too (printing while tracing would print once per trace, or for
    a branch that never runs)."""
    __tracebackhide__ = True
    traced = any_tracer(args)
    if plan.print_form(traced, traced or report.in_staged_body() or report.under_trace()) == plan.PYTHON:
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
        return
    leaves, treedef = jax.tree_util.tree_flatten(args)
    _refuse_tracer_text(leaves)
    order = key_order(args)  # the flattening sorts dict keys; print shows insertion order
    dynamic = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, compat.Tracer))]

    def show(failed, *values):
        if failed is not None and bool(np.any(np.asarray(failed))):
            return  # a check before it failed: Python stopped there and never printed this
        out = list(leaves)
        for i, v in zip(dynamic, values):
            out[i] = v
        # One write per print: the prints of several shards (threads) keep their lines whole.
        text = io.StringIO()
        builtins.print(*restore_order(jax.tree_util.tree_unflatten(treedef, out), order), sep=sep, end=end, file=text)
        builtins.print(text.getvalue(), end="", file=file or sys.stdout, flush=flush)

    jax.debug.callback(show, checks.failed_so_far(), *[leaves[i] for i in dynamic], ordered=print_in_order())


# How staged prints of the program being traced are ordered (``print_in_order``): set by
# ``autolax.jit``, which sees where its arguments live; None where it is not calling.
_in_order: contextvars.ContextVar = contextvars.ContextVar("autolax_print_in_order", default=None)


@contextlib.contextmanager
def printing_in_order(ordered: bool):
    """While a function is traced: its staged prints are ordered (``True``: the program runs
    on one device) or not (``False``: it runs on several)."""
    token = _in_order.set(ordered)
    try:
        yield
    finally:
        _in_order.reset(token)


def print_in_order() -> bool:
    """The rule for a staged ``print``: in program order (an ordered ``jax.debug.callback``)
    when the program runs on one device; otherwise -- JAX orders effects on one device only
    -- unordered: once per run, by the process that holds the first device, with the global
    values (prints of one run may then come out of order), and in a ``shard_map`` body once
    per shard. ``autolax.jit`` knows where its arguments live (``printing_in_order``);
    elsewhere (``jax.jit`` of ``autolax.convert``, the CLI's output) one device means JAX
    sees one device in all (``jax.device_count() == 1``)."""
    if compat.in_shard_map():
        return compat.shard_map_devices() == 1
    chosen = _in_order.get()
    return chosen if chosen is not None else jax.device_count() == 1


def _refuse_tracer_text(leaves):
    """A staged ``print`` given a string that shows a tracer (``"n = " + str(n)`` of a traced
    ``n``, made while autolax traced it) would print that text where Python prints the
    number: autolax's ``traced-print-text`` error instead."""
    for leaf in leaves:
        if isinstance(leaf, str) and checks.shows_tracer(leaf):
            frame = sys._getframe(2)
            where = f"{sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}"
            raise errors.make("traced-print-text", where=where, shown=leaf,
                              source=linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip())


@report.user_facing
def min(*args, **kwargs):  # noqa: A001 - replaces builtins.min
    """``min(a, b, ...)``, ``min(items, key=...)`` where an item (or its key) is a traced
    number: Python's answer -- the first item, replaced by each later one that is smaller
    (so ``min(nan, 1.0)`` is nan and ``min(1.0, nan)`` is 1.0) -- as
    ``jnp.where(b < m, b, m)`` in turn (a traced value of the type the items promote to).
    ``min(xs)`` of a traced 1-D array: the same over its items. Without a traced value, the
    builtin ``min``."""
    __tracebackhide__ = True
    return _extreme(builtins.min, operator.lt, args, kwargs)


@report.user_facing
def max(*args, **kwargs):  # noqa: A001 - replaces builtins.max
    """``max(...)`` where an item is a traced number: as ``min``, with ``b > m``."""
    __tracebackhide__ = True
    return _extreme(builtins.max, operator.gt, args, kwargs)


_NO_DEFAULT = object()


def _extreme(builtin, replaces, args, kwargs):
    __tracebackhide__ = True
    if len(args) == 1 and is_tracer(args[0]) and getattr(args[0], "ndim", 0) >= 1 and not kwargs:
        return _extreme_item(builtin, args[0])
    if set(kwargs) - {"key", "default"} or not args or len(args) > 1 and "default" in kwargs:
        return builtin(*args, **kwargs)  # Python's TypeError
    if len(args) == 1 and not isinstance(args[0], (list, tuple)):
        if is_tracer(args[0]):
            return builtin(*args, **kwargs)  # a traced scalar: Python's TypeError (not iterable)
        args = (list(args[0]),)  # an iterator is read once, as the builtin would
    items = args[0] if len(args) == 1 else args
    key = kwargs.get("key")
    keys = [key(item) for item in items] if key is not None and any_tracer(items) else None
    if not any_tracer(items) and not any_tracer(keys):
        return _builtin_named(builtin, args, kwargs)
    if not items:
        if "default" in kwargs:
            return kwargs["default"]
        raise ValueError(f"{builtin.__name__}() iterable argument is empty")
    if keys is None:
        keys = [key(item) for item in items] if key is not None else list(items)
    best, best_key = items[0], keys[0]
    for item, item_key in zip(items[1:], keys[1:]):
        if not (is_tracer(item_key) or is_tracer(best_key)):
            if replaces(item_key, best_key):
                best, best_key = item, item_key
            continue
        test = replaces(item_key, best_key)
        if getattr(test, "shape", ()) != ():
            # Python: "the truth value of an array with more than one element is ambiguous"
            raise _array_condition(builtin, tuple(test.shape), depth=4)
        best = jax.tree.map(lambda a, b: jnp.where(test, a, b), item, best)
        best_key = best if key is None else jnp.where(test, item_key, best_key)
    return best


def _builtin_named(builtin, args, kwargs, fix=None):
    """``builtin(*args, **kwargs)``, where JAX's tracer error -- a traced value the builtin
    asks Python's truth of, e.g. the items of a generator (``any(x > 0 for x in xs)``) --
    becomes autolax's ``TracedValueError`` naming the user's statement, where no staged
    statement around it names one (inside a staged body the statement decides, as for any
    error of its body). Python's own errors pass as they are."""
    __tracebackhide__ = True
    try:
        return builtin(*args, **kwargs)
    except report.TRACER_ERRORS as exc:
        if not report.in_staged_body() and report.under_trace():
            refusal = report.escaped_tracer_error(exc, sys._getframe(1), fix)  # (it looks up to the user's frame)
            if refusal is not None:
                raise refusal from exc
        raise


def _extreme_item(builtin, xs):
    """``min(xs)`` / ``max(xs)`` of a traced array: Python iterates its leading axis."""
    __tracebackhide__ = True
    if xs.shape[0] == 0:
        raise ValueError(f"{builtin.__name__}() iterable argument is empty")
    if xs.shape[0] == 1:
        return xs[0]  # no comparison
    if xs.ndim > 1:
        raise _array_condition(builtin, tuple(xs.shape[1:]), depth=5)
    if not jnp.issubdtype(xs.dtype, jnp.floating):
        return jnp.min(xs) if builtin is builtins.min else jnp.max(xs)
    # The first item stays when nothing compares below (above) it: NaN first gives NaN, a
    # later NaN is passed over.
    rest = jnp.nanmin(xs) if builtin is builtins.min else jnp.nanmax(xs)
    return jnp.where(jnp.isnan(xs[0]), xs[0], rest)


def _array_condition(builtin, shape, depth):
    """Python's ValueError for comparing arrays of several elements, as autolax's
    ``ArrayConditionError`` naming the user's line (``depth``: of the frame that called
    ``ops.min`` / ``ops.max``, counted from here)."""
    where = report.expression_site(builtin.__name__, depth=depth, always=True)
    return errors.make("array-condition", where=f"{where.filename}:{where.lineno} ({builtin.__name__}())", shape=shape)


@report.user_facing
def any(*args, **kwargs):  # noqa: A001 - replaces builtins.any
    """``any(items)`` of a list or tuple holding traced numbers, or of a traced array:
    Python's answer -- True at the first true item -- as a traced ``bool`` (the ``or`` of
    ``item != 0``; a Python item that is true gives True, as Python stops there). Other
    iterables (a generator's items may not all run in Python), or none traced: the builtin."""
    __tracebackhide__ = True
    return _truth(builtins.any, args, kwargs)


@report.user_facing
def all(*args, **kwargs):  # noqa: A001 - replaces builtins.all
    """``all(items)``: as ``any``, False at the first false item (the ``and`` of ``item != 0``)."""
    __tracebackhide__ = True
    return _truth(builtins.all, args, kwargs)


def _truth(builtin, args, kwargs):
    __tracebackhide__ = True
    if len(args) != 1 or kwargs:
        return builtin(*args, **kwargs)  # Python's TypeError
    items = args[0]
    stop_at = builtin is builtins.any  # the truth value that ends the search
    if is_tracer(items) and getattr(items, "ndim", 0) >= 1:
        if items.shape[0] == 0:
            return not stop_at
        if items.ndim > 1 and int(np.prod(items.shape[1:])) != 1:
            raise _array_condition(builtin, tuple(items.shape[1:]), depth=4)
        truth = items.reshape(items.shape[0]) != 0
        return jnp.any(truth) if stop_at else jnp.all(truth)
    if not isinstance(items, (list, tuple)) or not any_tracer(items):
        return _builtin_named(builtin, (items,), {}, fix=(
            f"give `{builtin.__name__}` a list (`{builtin.__name__}([x > 0 for x in xs])`: autolax stages "
            f"`any` / `all` of a list holding traced values) or test an array "
            f"(`jnp.{builtin.__name__}(xs > 0)`)."))
    found = None  # the traced items' `or` (any) / `and` (all) so far
    for item in items:
        if not is_tracer(item):
            if bool(item) == stop_at:
                return stop_at  # Python stops here whatever the traced items before gave
            continue
        if getattr(item, "shape", ()) != () and int(np.prod(item.shape)) != 1:
            raise _array_condition(builtin, tuple(item.shape), depth=4)
        truth = jnp.reshape(item, ()) != 0
        found = truth if found is None else (found | truth if stop_at else found & truth)
    return (not stop_at) if found is None else found
