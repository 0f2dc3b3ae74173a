"""Library functions that take the user's functions as arguments: JAX, Equinox, Flax.

``jax.vmap(step)`` inside converted code calls ``step`` from JAX's code, where autolax
cannot see it; so a call of one of these transforms converts the user functions among its
function arguments first (``ops.call``; the front end routes such calls there). The table
is keyed by the transform function objects and names, for each one, the parameters that
take functions. It covers the libraries that are already imported: a library that is not
installed (or not imported yet, so not used) is never imported from here.

Shared by the front end and the runtime; imports only JAX.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types

import jax

from autolax.runtime import compat

# module -> {function name: the parameters that take functions}. `*` before a name: the
# parameter holds a sequence of functions (`lax.switch`'s branches).
_FUNCTION_PARAMETERS = {
    "jax": {
        "vmap": ("fun",),
        "pmap": ("fun",),
        "grad": ("fun",),
        "value_and_grad": ("fun",),
        "jacobian": ("fun",),
        "jacrev": ("fun",),
        "jacfwd": ("fun",),
        "hessian": ("fun",),
        "jvp": ("fun",),
        "vjp": ("fun",),
        "linearize": ("fun",),
        "checkpoint": ("fun",),
        "remat": ("fun",),
        "jit": ("fun",),
        "eval_shape": ("fun",),
        "make_jaxpr": ("fun",),
        "named_call": ("fun",),
        "shard_map": ("f",),
        "custom_jvp": ("fun",),
        "custom_vjp": ("fun",),
    },
    "jax.lax": {
        "scan": ("f",),
        "fori_loop": ("body_fun",),
        "while_loop": ("cond_fun", "body_fun"),
        "cond": ("true_fun", "false_fun"),
        "switch": ("*branches",),
        "map": ("f",),
        "associative_scan": ("fn",),
        "custom_root": ("f", "solve", "tangent_solve"),
        "custom_linear_solve": ("matvec", "solve", "transpose_solve"),
    },
    "jax.tree_util": {"tree_map": ("f",)},
    "jax.tree": {"map": ("f",)},
    "equinox": {
        "filter_jit": ("fun",),
        "filter_vmap": ("fun",),
        "filter_pmap": ("fun",),
        "filter_grad": ("fun",),
        "filter_value_and_grad": ("fun",),
        "filter_jvp": ("fn",),
        "filter_vjp": ("fun",),
        "filter_checkpoint": ("fun",),
        "filter_eval_shape": ("fun",),
        "filter_closure_convert": ("fn",),
        "filter_make_jaxpr": ("fun",),
        "filter_custom_jvp": ("fn",),
        "filter_custom_vjp": ("fn",),
    },
    "flax.nnx": {
        "jit": ("fun",),
        "vmap": ("f",),
        "pmap": ("f",),
        "scan": ("f",),
        "grad": ("f",),
        "value_and_grad": ("f",),
        "remat": ("f",),
        "fori_loop": ("body_fun",),
        "while_loop": ("cond_fun", "body_fun"),
        "cond": ("true_fun", "false_fun"),
        "switch": ("*branches",),
        "eval_shape": ("f",),
        "shard_map": ("f",),
        "custom_vjp": ("fun",),
    },
    "flax.linen": {
        "jit": ("target",),
        "vmap": ("target",),
        "scan": ("target",),
        "remat": ("target",),
        "checkpoint": ("target",),
        "while_loop": ("cond_fn", "body_fn"),
        "cond": ("true_fun", "false_fun"),
        "switch": ("*branches",),
    },
}

# Methods that take functions: `f.defjvp(rule)` on a `jax.custom_jvp` object.
_METHOD_PARAMETERS = {
    ("jax", "custom_jvp"): {"defjvp": ("jvp",), "defjvps": ("*jvps",)},
    ("jax", "custom_vjp"): {"defvjp": ("fwd", "bwd")},
}


@functools.lru_cache(maxsize=None)
def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature
        return None


class _Table:
    """id(transform) -> (transform, parameters); rebuilt when another listed library has
    been imported since."""

    def __init__(self):
        self._lock = threading.Lock()
        self._present: tuple = ()
        self._entries: dict = {}

    def entries(self) -> dict:
        present = tuple(filter(sys.modules.__contains__, _FUNCTION_PARAMETERS))
        if present != self._present:
            with self._lock:
                entries = {}
                for module_name in present:
                    module = sys.modules[module_name]
                    for name, params in _FUNCTION_PARAMETERS[module_name].items():
                        fn = getattr(module, name, None)
                        if fn is not None:
                            entries[id(fn)] = (fn, params)
                for (module_name, class_name), methods in _METHOD_PARAMETERS.items():
                    cls = getattr(sys.modules.get(module_name), class_name, None)
                    for name, params in methods.items():
                        fn = getattr(cls, name, None)
                        if fn is not None:
                            entries[id(fn)] = (fn, params)
                self._entries, self._present = entries, present
        return self._entries


_TABLE = _Table()


def _lookup(fn):
    hit = _TABLE.entries().get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


def transform_parameters(f):
    """The parameters of transform ``f`` that take functions (``("fun",)`` for
    ``jax.vmap``), or None if ``f`` is not a known transform. Sees through
    ``functools.partial`` (``eqx.filter_vmap(in_axes=...)``) and bound methods
    (``f.defjvp``)."""
    while isinstance(f, functools.partial):
        f = f.func
    params = _lookup(f)
    if params is None and hasattr(f, "__func__") and hasattr(f, "__self__"):
        params = _lookup(f.__func__)
    return params


def is_transform(f) -> bool:
    """Is ``f`` a library function that takes user functions as arguments?"""
    return transform_parameters(f) is not None


def convert_arguments(f, args, kwargs, convert):
    """``(args, kwargs)`` for calling transform ``f``, with ``convert`` applied to the
    arguments of its function parameters (to each item of a sequence of functions)."""
    params = transform_parameters(f)
    target, head, head_kwargs = f, (), {}
    while isinstance(target, functools.partial):
        head, head_kwargs = tuple(target.args) + head, {**target.keywords, **head_kwargs}
        target = target.func
    if hasattr(target, "__func__") and hasattr(target, "__self__") and _lookup(target) is None:
        head, target = (target.__self__,) + head, target.__func__
    sig = _signature(target)
    if sig is None:
        return args, kwargs
    try:
        bound = sig.bind_partial(*head, *args, **{**head_kwargs, **kwargs})
    except TypeError:
        return args, kwargs  # the call itself will say what is wrong
    n_head = len(head)
    args, kwargs = list(args), dict(kwargs)
    names = list(sig.parameters)
    for param in params:
        many = param.startswith("*")
        name = param.lstrip("*")
        if name not in bound.arguments:
            continue
        kind = sig.parameters[name].kind
        fix = (lambda v: type(v)(convert(x) for x in v) if isinstance(v, (list, tuple)) else v) if many else convert
        if kind == inspect.Parameter.VAR_POSITIONAL:  # `*jvps`
            start = names.index(name) - n_head
            args[start:] = [convert(a) for a in args[start:]]
        elif name in kwargs:
            kwargs[name] = fix(kwargs[name])
        else:
            position = names.index(name) - n_head
            if 0 <= position < len(args):
                args[position] = fix(args[position])
    return tuple(args), kwargs


def is_rebuilt(f, is_user) -> bool:
    """Does ``rebuild`` make ``f`` again (is it a library object made from user functions)?"""
    return rebuild(f, None, is_user) is not None


def rebuild(f, convert, is_user):
    """A library object made from user functions (``jax.custom_jvp(f)``, the wrapper Flax
    Linen puts around each method of a module class), made again from ``convert`` of those
    functions, so the library's own code still runs around them; None for anything else.
    ``is_user(fn)``: is ``fn`` user code (to convert)? With ``convert=None`` it only says
    whether it would (``True``), making nothing."""
    if isinstance(f, jax.custom_jvp) and is_user(f.fun):
        return True if convert is None else compat.rebuild_custom_jvp(f, convert)
    if isinstance(f, jax.custom_vjp) and is_user(f.fun):
        return True if convert is None else compat.rebuild_custom_vjp(f, convert)
    linen = sys.modules.get("flax.linen.module")
    if linen is None:
        return None
    if getattr(f, "method_handler_wrapped", False) and isinstance(f, types.FunctionType):
        inner = getattr(f, "__wrapped__", None)
        if isinstance(inner, types.FunctionType) and is_user(inner):
            return True if convert is None else linen.wrap_method_once(convert(inner))
    if linen_entry_module(f) is not None:
        return True if convert is None else _linen_entry(f, convert, is_user)
    return None


# The methods of a Flax Linen module that run one of its methods on variables.
_LINEN_ENTRIES = ("apply", "init", "init_with_output")


def linen_entry_module(f):
    """The Linen module ``f`` is the bound ``apply`` / ``init`` / ``init_with_output`` of,
    else None."""
    linen = sys.modules.get("flax.linen.module")
    if linen is None or not isinstance(f, types.MethodType) or not isinstance(f.__self__, linen.Module):
        return None
    name = getattr(f.__func__, "__name__", None)
    if name not in _LINEN_ENTRIES or getattr(linen.Module, name, None) is not f.__func__:
        return None
    return f.__self__


def linen_method(module, method):
    """The method ``module.apply(..., method=method)`` runs, unbound (Flax's own rule:
    a name, a method or function, or None for ``__call__``). A name is looked up on the
    class: a submodule ``setup`` makes exists only inside ``apply`` (then None)."""
    if isinstance(method, str):
        return getattr(type(module), method, None)
    chosen = module.__call__ if method is None else method
    if isinstance(chosen, types.MethodType) and chosen.__self__ is module:
        chosen = chosen.__func__
    return chosen


def _linen_entry(f, convert, is_user):
    """``module.apply`` (or ``init``) that runs the converted method: Flax calls the method
    from its own code, where a converted caller cannot reach it."""
    module, entry = f.__self__, f

    def run(*args, method=None, **kwargs):
        chosen = linen_method(module, method)
        if rebuild(chosen, None, is_user) or (isinstance(chosen, types.FunctionType) and is_user(chosen)):
            method = convert(chosen)
        # else Flax gets what the caller gave (a submodule's name, which Flax resolves itself)
        return entry(*args, method=method, **kwargs)

    run.__name__, run.__qualname__, run.__doc__ = entry.__name__, entry.__qualname__, entry.__doc__
    return run


def is_jit_object(f) -> bool:
    """Is ``f`` what ``jax.jit`` returns?"""
    return isinstance(f, _JIT_TYPE)


_JIT_TYPE = type(jax.jit(lambda: None))
