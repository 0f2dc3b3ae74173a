"""A small jaxpr evaluated on the host with NumPy, for facts known while tracing.

JAX evaluates a constant expression inside ``jax.jit`` only by dispatching each primitive on
its own, which compiles a program per primitive the first time: tens of milliseconds, more
than a whole conversion. The few facts autolax wants while tracing (is a loop's exit test
false on the constants a loop starts from?) need a handful of comparisons and arithmetic on
scalars, which NumPy computes as XLA does. Only primitives whose NumPy form gives XLA's
result are evaluated (no division, no float-to-int conversion, no transcendental
functions), and only on finite floats: XLA's simplifier may rewrite ``0 * x`` or
``convert(p) * x`` so that a NaN or an infinity does not spread as IEEE arithmetic spreads it.
Anything else gives ``None``: not known.
"""

from __future__ import annotations

import numpy as np

MAX_EQUATIONS = 64
MAX_ELEMENTS = 4096


class _Unknown(Exception):
    pass


def _convert(x, new_dtype, **_):
    new_dtype = np.dtype(new_dtype)
    if x.dtype.kind == "f" and new_dtype.kind in "iub":  # float -> int: NaN and overflow differ
        if new_dtype.kind != "b":
            raise _Unknown
    return x.astype(new_dtype)


def _select_n(which, *cases):
    return np.choose(np.asarray(which, np.int64), cases)


_NUMPY = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "not": np.invert,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "neg": np.negative,
    "abs": np.abs,
    "max": np.maximum,
    "min": np.minimum,
    "select_n": _select_n,
    "copy": np.copy,
}
_CALLS = ("jit", "pjit", "closed_call")


def evaluate(closed_jaxpr, args):
    """The outputs of ``closed_jaxpr`` on ``args`` (NumPy values), or None when an input is
    not a host value or a primitive is outside the few evaluated here."""
    try:
        consts = [_host(c) for c in closed_jaxpr.consts]
        return _run(closed_jaxpr.jaxpr, consts, [_host(a) for a in args], [0])
    except _Unknown:
        return None


def _host(x):
    if not isinstance(x, (np.ndarray, np.generic, bool, int, float)):
        raise _Unknown  # a tracer, or an array JAX would have to fetch
    x = np.asarray(x)
    if x.size > MAX_ELEMENTS:
        raise _Unknown
    return _finite(x)


def _finite(x):
    if x.dtype.kind in "fc" and not np.all(np.isfinite(x)):
        raise _Unknown
    return x


def _run(jaxpr, consts, args, count):
    env = {}

    def read(v):
        return _finite(np.asarray(v.val, v.aval.dtype)) if hasattr(v, "val") else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        count[0] += 1
        if count[0] > MAX_EQUATIONS or eqn.effects:
            raise _Unknown
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name in _CALLS:
            sub = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr")
            inner = getattr(sub, "jaxpr", sub)
            outs = _run(inner, [_host(c) for c in getattr(sub, "consts", ())], ins, count)
        elif name == "convert_element_type":
            outs = [_convert(ins[0], **eqn.params)]
        elif name in _NUMPY:
            with np.errstate(all="ignore"):  # integers wrap, as in XLA
                outs = [_NUMPY[name](*ins)]
        else:
            raise _Unknown
        for var, value in zip(eqn.outvars, outs):
            value = np.asarray(value)
            if value.dtype != var.aval.dtype:
                value = value.astype(var.aval.dtype)
            env[var] = _finite(value)
    return [read(v) for v in jaxpr.outvars]
