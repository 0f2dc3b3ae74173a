"""Calls from converted code: user functions are converted on first call; ``print``;
``min`` / ``max`` / ``any`` / ``all`` of traced numbers."""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import functools
import inspect
import io
import linecache
import operator
import os
import sys
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from autolax.runtime import compat, errors, libraries, plan, sites, transforms
from autolax.runtime.libraries import MATH_FUNCTIONS, host_io, host_output, is_bound_method, is_library_callable
from autolax.runtime.ops import checks, meaning, pymath, report
from autolax.runtime.ops.lists import key_order, restore_order
from autolax.runtime.ops.state import Undefined, any_tracer, is_tracer

# How a user function reached from converted code is converted: set by ``autolax.api`` when
# autolax is imported (the runtime does not import the front end). Until then -- and for code
# written by ``autolax convert`` that imports ``autolax.runtime.ops`` alone -- callees run as written.
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
    ``autolax.runtime.transforms``) the user functions among its arguments are converted."""
    __tracebackhide__ = True
    if isinstance(f, Undefined):
        f()
    if id(f) in MATH_FUNCTIONS:  # `sqrt(x)` where the converter could not tell it is math.sqrt
        return pymath.math_call(f, *args, **kwargs)
    if report.in_staged_body():
        _check_host_output(f)
    if not report.converts_calls():
        return _call_as_written(f, args, kwargs)
    if transforms.is_transform(f):
        token = _calling.set(True)
        try:
            args, kwargs = transforms.convert_arguments(f, args, kwargs, converted_argument)
            return f(*args, **kwargs)
        finally:
            _calling.reset(token)
    g = converted(f)
    if g.__class__ not in _DIRECT_KINDS:
        g = _writer_inside(f, g)
    # A converted helper that writes into its parameters hands them back to this call
    # (``hand_back``) when the call runs its code directly: not a library function (a
    # converted function it calls in turn returns as for any other caller), nor an
    # ``autolax.jit`` object (its trace, cached, must not depend on who called it first). A
    # function ``@ops.function`` made (a file ``autolax convert`` wrote) is converted code.
    token = _calling.set(
        _direct(g)
        if g.__class__ in _DIRECT_KINDS and (g is not f or not is_library_callable(f) or checks.body_of(f) is not f)
        else True
    )
    try:
        staged = report.in_staged_body()
        guard = _recursion_guard(f) if staged else contextlib.nullcontext()
        with _unconverted_callee(f, g), guard:
            try:
                result = g(*args, **kwargs)
                if result.__class__ is HandedBack:
                    # a helper that writes into its arguments, called where the caller does
                    # not rebind them (passes/writeback.py)
                    result = _unclaimed(f, result, args, kwargs, ())
                return result
            except TypeError as exc:
                if g is f:
                    _refuse_immutable_write(f, exc, args, kwargs)
                raise
            except RecursionError as exc:
                # An `@autolax.jit` function calling itself under a traced condition: jax.jit
                # finds its own trace under way and raises "Recursively calling ..." at once.
                if staged and meaning.jit_recursion(exc) and getattr(f, "__autolax_jit__", None):
                    raise errors.make(
                        "traced-recursion", name=getattr(f, "__qualname__", repr(f)), depth=_MAX_STAGED_RECURSION
                    ) from exc
                raise
    finally:
        _calling.reset(token)


def _call_as_written(f, args, kwargs):
    """``ops.call`` where nothing converts calls (the CLI's output): ``f`` as it is. Converted
    code (a function of another converted file) hands its writes back to this call, which
    refuses one it cannot rebind (``_unclaimed``); code that is not converted runs as no
    direct call, so a converted helper it calls returns its value to it, not a
    ``HandedBack`` (a caller's ``ops.call_writing`` above must not reach through it)."""
    __tracebackhide__ = True
    token = _calling.set(_direct(f) if _is_converted(f) else False)
    try:
        result = f(*args, **kwargs)
    finally:
        _calling.reset(token)
    if result.__class__ is HandedBack:
        result = _unclaimed(f, result, args, kwargs, ())
    return result


# ``_calling``'s value while ``ops.call`` / ``ops.call_writing`` runs a function directly
# (not a transform's) is ``(_DIRECT, the code of its body)``: a converted helper that writes
# into its arguments hands them back then, to that call only (``_handing_back``).
_DIRECT = "direct"
_DIRECT_KINDS = (types.FunctionType, types.MethodType)


def _direct(g) -> tuple:
    body = checks.body_of(getattr(g, "__func__", g))
    return (_DIRECT, getattr(body, "__code__", None))


def _refuse_lost_write(frame, value, written) -> None:
    """A converted helper (``@ops.function``) that wrote into a traced array it was given,
    called by a function of its own file that autolax left as written (a generator
    ``autolax convert --all`` could not convert): ``ArgumentWriteError``, unless what it
    returns holds the new array. Python changes the caller's array; that caller cannot be
    handed it. Called from elsewhere (JAX, a library, a lambda, a module's top level, the
    user's code around the converted file: a test's wrapper that never reads the array
    again cannot be told from one that does), it returns its value, as documented."""
    changed = [(n, v) for n, v in written.items() if isinstance(v, compat.Tracer) and v.ndim]
    if not changed:
        return
    while frame is not None and frame.f_code not in checks.WRAPPER_CODES:
        if frame.f_code in _CALL_CODES:
            return
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name in ("<module>", "<lambda>"):
        return
    if libraries.module_is_library(caller.f_globals.get("__name__"), caller.f_code.co_filename):
        return
    fn = frame.f_locals.get("fn")
    if caller.f_code.co_filename != getattr(getattr(fn, "__code__", None), "co_filename", None):
        return
    bound = _bind(fn, frame.f_locals.get("args", ()), frame.f_locals.get("kwargs") or {})
    held = (value, *value) if isinstance(value, (tuple, list)) else (value,)
    for name, new in changed:
        given = bound.get(name)
        if given is new or any(item is new for item in held) or not isinstance(given, (jax.Array, np.ndarray)):
            continue
        where, line = report.user_line(caller)
        raise errors.make(
            "argument-write-caller-unconverted",
            name=getattr(fn, "__qualname__", name),
            param=name,
            caller=caller.f_code.co_name,
            where=where,
            source=line,
        )


def _handing_back(frame) -> bool:
    """Is the ``ops.hand_back`` called from ``frame`` in the function an ``ops.call`` /
    ``ops.call_writing`` runs directly? The context variable alone does not say: code that
    call runs may call a converted helper in turn without either (a generator iterated in
    its body, a function of the same converted file), which must get its value. Above the
    ``hand_back`` come the function's own frames (and branch functions staged inside it, and
    JAX's), up to the call's body: a frame of another call or converted function first means
    the ``hand_back`` is that one's."""
    state = _calling.get()
    if state.__class__ is not tuple:
        return False
    body = state[1]
    while frame is not None:
        code = frame.f_code
        if code is body:
            return True
        if code in _CALL_CODES:
            return False
        frame = frame.f_back
    return False


class HandedBack:
    """What a converted helper that writes into its parameters returns when converted code
    calls it directly (``ops.hand_back``): its return value, and the parameters' final values
    by name. A pytree, so that a return inside a staged loop or branch carries it."""

    __slots__ = ("value", "names", "values", "lost")

    def __init__(self, value, names: tuple, values: tuple, lost: tuple = ()):
        self.value, self.names, self.values, self.lost = value, names, values, lost

    def written(self) -> dict:
        return dict(zip(self.names, self.values))


jax.tree_util.register_pytree_node(
    HandedBack,
    lambda h: ((h.value, h.values), (h.names, h.lost)),
    lambda aux, kids: HandedBack(kids[0], aux[0], tuple(kids[1]), aux[1]),
)


def hand_back(value, /, *lost, **written):
    """``return ops.hand_back(value, v=v)`` for ``return value`` in a function that writes
    into its parameter ``v`` (``v[i] = x``, ``v.a = y``): ``value`` itself, except when
    converted code calls the function directly (``ops.call_writing``, ``ops.call``), which
    then gets the final values of the parameters too, to rebind the caller's names.
    ``lost``: the names of parameters the function writes into and then rebinds
    (``v[0] = 1.0`` then ``v = v * 2``), whose change the caller cannot be handed.

    Equivalent Python: ``value`` (the caller's object was changed in place)."""
    if not _handing_back(sys._getframe(1)):
        if written:
            _refuse_lost_write(sys._getframe(1), value, written)
        return value
    return HandedBack(value, tuple(written), tuple(written.values()), lost)


@report.user_facing
def call_writing(names, f, /, *args, **kwargs):
    """``b, _ = ops.call_writing(('v',), set0, b, 1)`` for ``set0(b, 1)``, where ``set0``
    writes into its parameter ``v`` (``v[i] = 0.0``): calls ``f`` as ``ops.call`` does and
    returns ``(the final value of each parameter in names, ..., its value)``, so the caller
    rebinds the names it gave them, then assigns the value (``y`` of ``y = set0(b, 1)``,
    last, as Python assigns it after the call: ``b = set0(b, 1)`` binds what it returns).

    Equivalent Python: ``(*the arguments given for names, f(*args, **kwargs))`` -- the
    arguments themselves, changed in place."""
    __tracebackhide__ = True
    if isinstance(f, Undefined):
        f()
    if report.in_staged_body():
        _check_host_output(f)
    info = getattr(f, "__autolax_jit__", None)
    if getattr(info, "fn", None) is not None:
        f = info.fn  # (``%%autolax`` binds the helper to an ``autolax.jit`` object: run it inline)
    g = converted(f) if report.converts_calls() else f
    token = _calling.set(_direct(g))
    try:
        staged = report.in_staged_body()
        guard = _recursion_guard(f) if staged else contextlib.nullcontext()
        with _unconverted_callee(f, g), guard:
            try:
                result = g(*args, **kwargs)
            except TypeError as exc:
                if not _is_converted(g):
                    _refuse_immutable_write(f, exc, args, kwargs)
                raise
    finally:
        _calling.reset(token)
    bound = _bind(g, args, kwargs)
    if result.__class__ is not HandedBack:
        # Not converted, or it writes into nothing now: a NumPy array or a list was changed in
        # place (a JAX array given for a parameter it writes into cannot have been).
        name = next((n for n in names if _is_jax_array(bound.get(n))), None)
        if name is not None and not _is_converted(g):
            raise _write_error(f, name, bound[name], "not-converted", depth=2)
        return (*[bound.get(n) for n in names], result)
    result = _unclaimed(f, result, args, kwargs, names, bound)
    return result


def _refuse_immutable_write(f, exc, args, kwargs) -> None:
    """A user function that runs as written (not converted) raised JAX's error for an item
    assigned into a JAX array it was given (``v[i] = 0.0``), where Python changes the
    caller's NumPy array: ``ArgumentWriteError`` naming the function and the parameter."""
    __tracebackhide__ = True
    if (
        not meaning.immutable_write(exc)
        or not isinstance(f, (types.FunctionType, types.MethodType))
        or is_library_callable(f)
    ):
        return
    bound = _bind(f, args, kwargs)
    tb = exc.__traceback__
    while (
        tb is not None
        and tb.tb_next is not None
        and tb.tb_frame.f_code is not getattr(checks.body_of(getattr(f, "__func__", f)), "__code__", None)
    ):
        tb = tb.tb_next
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip() if tb is not None else ""
    written = line.split("[", 1)[0].strip()
    name = (
        written if _is_jax_array(bound.get(written)) else next((n for n, v in bound.items() if _is_jax_array(v)), None)
    )
    if name is not None:
        raise _write_error(f, name, bound[name], "not-converted", depth=3) from exc


def _writer_inside(f, g):
    """For an ``autolax.jit`` object ``f`` (``%%autolax`` binds a cell's functions to these)
    whose function writes into its parameters: that function, converted, to run inline, so
    that it hands them back to ``ops.call`` (which refuses a JAX array it changed); else
    ``g``. (Run as the object, its cached trace would return them to every caller.)"""
    fn = getattr(getattr(f, "__autolax_jit__", None), "fn", None)
    if not isinstance(fn, types.FunctionType):
        return g
    inner = converted(fn)
    body = checks.body_of(inner)
    return inner if isinstance(body, types.FunctionType) and _hands_back(body.__code__) else g


def _hands_back(code, depth=0) -> bool:
    """Does converted code (or a function defined in it) return through ``ops.hand_back``?"""
    if "hand_back" in code.co_names:
        return True
    return depth < 6 and any(isinstance(c, types.CodeType) and _hands_back(c, depth + 1) for c in code.co_consts)


def _is_converted(g) -> bool:
    return bool(
        getattr(g, "__autolax_converted__", False)
        or getattr(getattr(g, "__func__", None), "__autolax_converted__", False)
    )


def _number(x) -> bool:
    """A number (a Python one, or a JAX scalar): ``v += 1`` in a helper rebinds its own name
    in Python and leaves the caller's number as it was (an array is added to in place)."""
    return isinstance(x, (int, float, complex)) or isinstance(x, (jax.Array, compat.Tracer)) and x.ndim == 0


def _is_jax_array(x) -> bool:
    return isinstance(x, (jax.Array, compat.Tracer))


def _bind(g, args, kwargs) -> dict:
    """The parameters of ``g`` given ``args`` / ``kwargs``, by name ({} if unknown): read
    from its code object where it has one (``inspect.signature`` costs tens of µs a call)."""
    fn = getattr(g, "__func__", g)
    method = fn is not g
    fn = checks.body_of(fn)  # (``@ops.function``'s wrapper takes ``*args, **kwargs``)
    code = getattr(fn, "__code__", None)
    if isinstance(code, types.CodeType) and isinstance(fn, types.FunctionType):
        positional = code.co_varnames[: code.co_argcount]
        if method:  # a bound method: its receiver is not among ``args``
            positional = positional[1:]
        out = dict(zip(positional, args))
        if kwargs:
            named = code.co_varnames[code.co_posonlyargcount : code.co_argcount + code.co_kwonlyargcount]
            out.update((k, v) for k, v in kwargs.items() if k in named)
        return out
    try:
        return dict(inspect.signature(g).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {}


def _unclaimed(f, handed: HandedBack, args, kwargs, claimed, bound=None):
    """The value ``ops.call`` returns for a helper's ``HandedBack`` (``claimed=()``), or the
    tuple ``ops.call_writing`` returns. A parameter the call site does not rebind
    (``claimed``) that was given a JAX array it changed: ``ArgumentWriteError`` (Python
    would change the caller's array; converted code cannot without a rebinding). The same
    JAX array given for a written parameter and another: the same error."""
    __tracebackhide__ = True
    written = handed.written()
    if bound is None:
        bound = _bind(converted(f) if report.converts_calls() else f, args, kwargs)
    for name in handed.lost:
        if _is_jax_array(bound.get(name)):
            raise _write_error(f, name, bound[name], "rebound", depth=3)
    for name, new in written.items():
        given = bound.get(name)
        if not _is_jax_array(given) or _number(given):
            continue
        if name not in claimed and new is not given and not _number(given):
            why = "not-rebound" if claimed or not bound else "not-rebound"
            raise _write_error(f, name, given, why, depth=3)
        twin = next((other for other, x in bound.items() if other != name and x is given), None)
        if twin is not None:
            raise _write_error(f, name, given, "passed-twice", depth=3, twin=twin)
    if not claimed:
        return handed.value
    return (
        *[written[n] if n in written and not _number(bound.get(n)) else bound.get(n) for n in claimed],
        handed.value,
    )


_WHY = {
    "not-rebound": "the call does not rebind what it gave '{param}': autolax rebinds the caller's variable only "
    "for a call it can look up when it converts the caller (a function of the module, of the "
    "closure or of the same function, called by its name) that is a statement of its own "
    "(`{name}(a, ...)`, `y = {name}(a, ...)`, `return {name}(a, ...)`), given a local "
    "variable of the caller",
    "passed-twice": "the same array is given for '{param}' and '{twin}': in Python both names are one array, "
    "in converted code two values",
}


def _write_error(f, param, given, why, depth, twin=None):
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    if "autolax_factory" in name:  # a `def` inside a converted function: its own name
        name = getattr(f, "__name__", name)
    where, line = report.user_line(sys._getframe(depth))
    if why == "not-converted":
        how = (
            "the runtime alone has no converter: `autolax convert --standalone` output"
            if _converter is None
            else (_why_unconverted(f) if _why_unconverted is not None and isinstance(f, types.FunctionType) else None)
            or "autolax could not convert it"
        )
        return errors.make("argument-write-unconverted", name=name, param=param, where=where, source=line, how=how)
    if why == "rebound":
        return errors.make("argument-write-rebound", name=name, param=param, where=where, source=line)
    return errors.make(
        "argument-write",
        name=name,
        param=param,
        where=where,
        source=line,
        why=_WHY[why].format(param=param, twin=twin, name=name.rsplit(".", 1)[-1]),
    )


def _check_host_output(f) -> None:
    """Inside a staged body: ``StagedEffectError`` for a call of ``f`` that writes output
    autolax does not stage (``host_output``), naming the call, the user's line and the
    statement being staged. A loop whose bounds are static runs in Python instead."""
    name, code = host_output(f), "host-output"
    if name is None:
        name, code = host_io(f), "host-io"
    if name is None:
        return
    site = getattr(report.current_staging(), "site", None)
    where, line = report.user_line(sys._getframe(1))
    error = errors.make(
        code,
        call=name,
        where=where,
        stmt=site.what if site is not None else "a staged branch or loop body",
        source=line,
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
    if (
        why is None
        and g is f
        and _converter is None
        and isinstance(f, types.FunctionType)
        and not is_library_callable(f)
        and not _calls_runtime(f)
    ):
        # The runtime without autolax's front end (``--standalone`` output): a user
        # function of another file that was not converted with it.
        try:
            yield
        except report.TRACER_ERRORS as exc:
            filename = os.path.basename(f.__code__.co_filename)
            raise errors.make(
                "callee-not-converted",
                name=f.__qualname__,
                file=filename,
                reason=report.unstageable_reason(exc, _CalleeSite(f)),
            ) from exc
        return
    if why is None:
        yield
        return
    try:
        yield
    except report.TRACER_ERRORS as exc:
        site = _CalleeSite(f)
        raise errors.make(
            "callee-unconverted",
            name=f.__qualname__,
            why=why,
            reason=report.unstageable_reason(exc, site),
            fix=report.unstageable_fix(exc) or _STATIC_FIX,
        ) from exc


_STATIC_FIX = "mark the arguments it needs as Python values static (static_argnums / static_argnames)."


def written_by_autolax(f) -> bool:
    """Is ``f`` converted code already (a function of a file ``autolax convert`` wrote, which
    reads autolax's runtime as ``ops``)? Converting it again would take the runtime's own
    statements for the user's (``with ops.catching(...)`` for a ``with`` of theirs)."""
    return isinstance(f, types.FunctionType) and _calls_runtime(f)


def _calls_runtime(f) -> bool:
    """Is ``f`` converted code (its code, or a function defined in it, reads a global that
    is autolax's runtime, ``ops``)?"""
    codes, names = [f.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    glob = getattr(f, "__globals__", {})
    return any(
        isinstance(glob.get(n), types.ModuleType)
        and glob[n].__name__.split(".")[-1] == "ops"
        and glob[n].__name__.split(".")[0] in ("autolax", "autolax_runtime")
        for n in names
    )


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
        f = checks.body_of(getattr(f, "__func__", f))
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


jax.tree_util.register_pytree_node(
    FString, lambda f: (f.values, f.template), lambda t, values: FString(t, tuple(values))
)


def fstring(template, *values):
    """``f"..."`` given to ``print``: ``template`` is the f-string in ``str.format``'s syntax,
    ``values`` its expressions.

    Equivalent Python: ``template.format(*values)``, formatted when printed.
    """
    return FString(template, values)


class PercentString:
    """A ``%``-formatted argument of ``print`` with a traced value, formatted when it is
    printed: ``print("t = %6.3f" % t)`` shows the value the program computes (converted
    code: ``ops.print(ops.percent('t = %6.3f', t))``)."""

    __slots__ = ("template", "values")

    def __init__(self, template: str, values):
        self.template = template
        self.values = values  # the right operand of `%`: one value, a tuple or a dict

    def __str__(self):
        return self.template % self.values

    def __repr__(self):
        return repr(str(self))

    def __format__(self, spec):
        return format(str(self), spec)


jax.tree_util.register_pytree_node(
    PercentString, lambda p: ((p.values,), p.template), lambda t, children: PercentString(t, children[0])
)


def _stand_in(leaf):
    """A concrete value of a traced leaf's shape and dtype (zeros): what ``percent`` formats
    once, while tracing, to raise Python's error for a template that does not fit."""
    if isinstance(leaf, (jax.Array, compat.Tracer)):
        return np.zeros(np.shape(leaf), dtype=leaf.dtype)
    return leaf


@report.user_facing
def percent(template, values):
    """``"t = %6.3f" % t`` given to ``print``: formatted now when no value is traced (Python's
    ``str``, or Python's error), else when printed (``PercentString``). A template that does
    not fit the values (``"%d %d" % (n,)``) raises Python's ``TypeError`` / ``ValueError``
    while tracing, as ``%`` does before ``print`` runs.

    Equivalent Python: ``template % values``.
    """
    __tracebackhide__ = True
    try:
        if not isinstance(template, str) or not any_tracer(values):
            return template % values
        leaves, treedef = jax.tree_util.tree_flatten(values)
        template % jax.tree_util.tree_unflatten(treedef, [_stand_in(leaf) for leaf in leaves])
    except (TypeError, ValueError, KeyError) as exc:
        # Python's error for the user's `%` (a staged branch raises it only when taken)
        raise report.pythons_own(exc) from None
    return PercentString(template, values)


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
            raise errors.make(
                "traced-print-text",
                where=where,
                shown=leaf,
                source=linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip(),
            )


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
        return _builtin_named(
            builtin,
            (items,),
            {},
            fix=(
                f"give `{builtin.__name__}` a list (`{builtin.__name__}([x > 0 for x in xs])`: autolax stages "
                f"`any` / `all` of a list holding traced values) or test an array "
                f"(`jnp.{builtin.__name__}(xs > 0)`)."
            ),
        )
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


# Frames that start another function's call (``_handing_back`` stops there).
_CALL_CODES = frozenset(
    {call.__wrapped__.__code__, call_writing.__wrapped__.__code__, _call_as_written.__code__, *checks.WRAPPER_CODES}
)
