"""``math.sqrt(x)`` and the other functions of the standard ``math`` module that return a
number, given a traced number (converted code: ``ops.math_call(math.sqrt, x)``).

Python's ``math.sqrt`` needs a Python float, which a traced value has only when the program
runs (``float()`` of a tracer is JAX's error). Textbook numerics call it on every step
(``if sqrt(dot(r, r)) < tol: break``). A traced argument gives the ``jnp`` function's traced
result instead (a number of the argument's floating type: float32 unless x64 is on), and
Python's errors are run-time checks: ``ValueError('math domain error')`` where Python's
domain ends (``sqrt`` of a negative number, ``log`` of zero, ``asin(2)``, ``sin(inf)``),
``math.floor`` / ``ceil`` / ``trunc`` of NaN or infinity Python's ``ValueError`` /
``OverflowError``. A ``try`` that would catch such an error runs its handler when the check
fails, if the handler always raises (``checks.fail_or_handle``: ``except ValueError:
err('not positive definite')``); otherwise it is refused (the handler would run, and the
variables after the ``try`` be its, depending on data). ``floor`` / ``ceil`` / ``trunc``
return a traced integer of JAX's default integer type; a value outside its range is
autolax's ``TracedValueError`` when the program runs, where Python's integer would be exact.

``exp`` is Python's ``OverflowError('math range error')`` above float64's range, and
autolax's ``TracedValueError`` when the program runs where the argument's float type
(float32 without x64) overflows but float64 does not. Other functions that may overflow
(``pow``, ``cosh``...) are not among them: they stay Python's, and a traced argument is
``TracedValueError`` as before. Without a traced argument, every call is Python's.
"""

from __future__ import annotations

import math
import sys

import jax.numpy as jnp
import numpy as np

from autolax.runtime import errors
from autolax.runtime.libraries import MATH_PATHS
from autolax.runtime.ops import checks, report
from autolax.runtime.ops.lists import is_tracer

_DOMAIN = "math domain error"

# name -> (jnp function, the arguments for which Python returns (None: all))
_FLOAT_FUNCTIONS = {
    "sqrt": (jnp.sqrt, lambda x: ~(x < 0)),
    "log10": (jnp.log10, lambda x: ~(x <= 0)),
    "log2": (jnp.log2, lambda x: ~(x <= 0)),
    "sin": (jnp.sin, lambda x: ~jnp.isinf(x)),
    "cos": (jnp.cos, lambda x: ~jnp.isinf(x)),
    "tan": (jnp.tan, lambda x: ~jnp.isinf(x)),
    "asin": (jnp.arcsin, lambda x: ~(jnp.abs(x) > 1)),
    "acos": (jnp.arccos, lambda x: ~(jnp.abs(x) > 1)),
    "atan": (jnp.arctan, None),
    "fabs": (jnp.abs, None),
}
_INT_FUNCTIONS = {"floor": jnp.floor, "ceil": jnp.ceil, "trunc": jnp.trunc}

assert {f"math.{name}" for name in [*_FLOAT_FUNCTIONS, *_INT_FUNCTIONS, "log", "atan2", "exp"]} == MATH_PATHS

# The largest x whose exp is a finite float64: Python's `math.exp` raises OverflowError above.
_EXP_MAX = 709.782712893384


def _scalar(x, name):
    """``x`` as a traced number of shape (): Python's ``TypeError`` for an array of several
    items or a complex number, as ``math`` raises for them."""
    if jnp.iscomplexobj(x):
        raise TypeError(f"must be real number, not {type(x).__name__}")
    size = int(np.prod(jnp.shape(x)))
    if size != 1:
        raise TypeError(f"only length-1 arrays can be converted to Python scalars (math.{name})")
    x = jnp.reshape(x, ())
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.result_type(float))


def _check(ok, error, name, call=None):
    refusal = checks.fail_or_handle(ok, lambda: error, type(error))
    if refusal:
        where, source = report.user_line(sys._getframe())
        raise errors.make(refusal, statement=f"{call or 'math.' + name}(...)", where=where, source=source)


@report.user_facing
def like(f, a, *args, **kwargs):
    """``ops.like(np.zeros_like, x)`` for ``np.zeros_like(x)`` (``ones_like``, ``empty_like``,
    ``full_like``): NumPy's array of ``x``'s shape and dtype. A traced ``x`` stands for such
    an array, whose values NumPy would ask JAX for: it is given a NumPy array of its shape
    and dtype in its place (a traced value written into the result later makes it the JAX
    array it stands for, see ``ops.at``).

    Equivalent Python: ``f(a, *args, **kwargs)``."""
    __tracebackhide__ = True
    if is_tracer(a) and any(f is g for g in _NUMPY_LIKE):  # (another `zeros_like`, `jnp`'s, takes `a` as it is)
        a = np.zeros(a.shape, dtype=np.dtype(a.dtype))
    return f(a, *args, **kwargs)


_NUMPY_LIKE = (np.zeros_like, np.ones_like, np.empty_like, np.full_like)


@report.user_facing
def math_call(f, *args, **kwargs):
    """``ops.math_call(math.sqrt, x)`` for ``math.sqrt(x)``: Python's call, or with a traced
    argument the ``jnp`` function's result (see the module docstring).

    Equivalent Python: ``f(*args, **kwargs)``.

    Python's own errors raised here (``math.sqrt(-1.0)`` of a Python number, a ``TypeError``
    for an array of several items) are the user's statement's (``report.pythons_own``): in a
    staged branch the program may not take, they are raised only when it takes it.
    """
    __tracebackhide__ = True
    try:
        return _math_call(f, *args, **kwargs)
    except errors.AutolaxError:
        raise
    except Exception as exc:  # noqa: BLE001 - Python's error for the user's call, marked as such
        raise report.pythons_own(exc) from exc.__cause__


def _math_call(f, *args, **kwargs):
    __tracebackhide__ = True
    name = getattr(f, "__name__", None)
    if kwargs or not any(is_tracer(a) for a in args) or getattr(math, name or "", None) is not f:
        return f(*args, **kwargs)
    if name in _FLOAT_FUNCTIONS and len(args) == 1:
        fn, domain = _FLOAT_FUNCTIONS[name]
        x = _scalar(args[0], name)
        if domain is not None:
            _check(domain(x), ValueError(_DOMAIN), name)
        return fn(x)
    if name == "exp" and len(args) == 1:
        return _exp(_scalar(args[0], name))
    if name == "log" and len(args) in (1, 2):
        x = _scalar(args[0], name)
        _check(~(x <= 0), ValueError(_DOMAIN), name)
        if len(args) == 1:
            return jnp.log(x)
        # Python's order: log(x) (ValueError), log(base) (ValueError), the division
        # (ZeroDivisionError for base 1).
        base = _scalar(args[1], name) if is_tracer(args[1]) else args[1]
        if not is_tracer(base) and base <= 0:
            raise ValueError(_DOMAIN)  # whichever check fails first, Python's error is this one
        _check(~(base <= 0), ValueError(_DOMAIN), name)
        never = (x != x) & (x == x)  # a traced False: fails wherever the program gets here
        _check(
            never if not is_tracer(base) and base == 1 else base != 1, ZeroDivisionError("float division by zero"), name
        )
        return jnp.log(x) / jnp.log(base)
    if name == "atan2" and len(args) == 2:
        return jnp.arctan2(
            _scalar(args[0], name) if is_tracer(args[0]) else float(args[0]),
            _scalar(args[1], name) if is_tracer(args[1]) else float(args[1]),
        )
    if name in _INT_FUNCTIONS and len(args) == 1:
        return _integer(args[0], _INT_FUNCTIONS[name], f"math.{name}", name)
    return f(*args, **kwargs)


def _integer(x, rounding, call, short):
    """``x`` (traced) as a traced integer of JAX's default integer type, rounded by
    ``rounding`` (``jnp.floor`` / ``ceil`` / ``trunc``): Python's ``TypeError`` for a complex
    number or an array of several items, its ``ValueError`` / ``OverflowError`` for NaN and
    infinity, and autolax's ``TracedValueError`` for a number outside the integer type's
    range (Python's integer would be exact), each a run-time check."""
    if jnp.iscomplexobj(x):
        raise TypeError(
            f"must be real number, not {type(x).__name__}"
            if call != "int"
            else "int() argument must be a string, a bytes-like object or a real number, not 'complex'"
        )
    if int(np.prod(jnp.shape(x))) != 1:
        raise TypeError(f"only length-1 arrays can be converted to Python scalars ({call})")
    x = jnp.reshape(x, ())
    int_type = jnp.result_type(int)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x.astype(int_type)
    _check(~jnp.isnan(x), ValueError("cannot convert float NaN to integer"), short, call)
    _check(~jnp.isinf(x), OverflowError("cannot convert float infinity to integer"), short, call)
    y = rounding(x)
    info = jnp.iinfo(int_type)
    where, source = report.user_line(sys._getframe())
    in_range = jnp.isinf(x) | jnp.isnan(x) | ((y >= info.min) & (y <= info.max))
    dtype = np.dtype(int_type).name
    checks.fail_unless(
        in_range,
        lambda: errors.make("math-int-range", call=call, short=short, where=where, source=source, dtype=dtype),
    )
    return y.astype(int_type)


@report.user_facing
def to_int(*args, **kwargs):
    """``ops.int(x)`` for the builtin ``int(x)``: Python's call, or for one traced number a
    traced integer of JAX's default integer type, truncated toward zero as Python's ``int``
    truncates a float (``p = int(jnp.argmax(col)) + k``, then ``a[p]``). Python's errors for
    NaN and infinity are run-time checks, and a number outside the integer type's range is
    autolax's ``TracedValueError`` when the program runs, where Python's integer is exact. A
    later use that needs a Python int (indexing a list, ``range`` of a Python-only loop) is
    autolax's ``TracedValueError`` there, naming that statement.

    Equivalent Python: ``int(*args, **kwargs)``.
    """
    __tracebackhide__ = True
    return _pythons(_to_int, args, kwargs)


def _to_int(*args, **kwargs):
    __tracebackhide__ = True
    if kwargs or len(args) != 1 or not is_tracer(args[0]):
        return int(*args, **kwargs)
    return _integer(args[0], jnp.trunc, "int", "trunc")


@report.user_facing
def to_float(*args, **kwargs):
    """``ops.float(x)`` for the builtin ``float(x)``: Python's call, or for one traced real
    number the traced number as JAX's default floating type (float32 unless x64 is on, as
    ``ops.math_call`` computes; Python's float is float64).

    Equivalent Python: ``float(*args, **kwargs)``.
    """
    __tracebackhide__ = True
    return _pythons(_to_float, args, kwargs)


def _to_float(*args, **kwargs):
    __tracebackhide__ = True
    if kwargs or len(args) != 1 or not is_tracer(args[0]):
        return float(*args, **kwargs)
    x = args[0]
    if jnp.iscomplexobj(x):
        raise TypeError("float() argument must be a string or a real number, not 'complex'")
    if int(np.prod(jnp.shape(x))) != 1:
        raise TypeError("only length-1 arrays can be converted to Python scalars (float)")
    return jnp.reshape(x, ()).astype(jnp.result_type(float))


def _pythons(builtin, args, kwargs):
    """``builtin(*args, **kwargs)``, Python's errors marked as the user's statement's."""
    __tracebackhide__ = True
    try:
        return builtin(*args, **kwargs)
    except errors.AutolaxError:
        raise
    except Exception as exc:  # noqa: BLE001 - Python's error for the user's call, marked as such
        raise report.pythons_own(exc) from exc.__cause__


def _exp(x):
    """``math.exp`` of a traced number: ``jnp.exp``, with Python's ``OverflowError('math range
    error')`` where float64 overflows (x above about 709.78), and, in a narrower float type
    (float32 without x64), autolax's ``TracedValueError`` where that type overflows but
    Python's float64 does not -- each a run-time check; never an infinity Python would not
    give."""
    y = jnp.exp(x)
    _check(~(x > _EXP_MAX), OverflowError("math range error"), "exp")
    if jnp.finfo(x.dtype).max < np.finfo(np.float64).max:
        where, source = report.user_line(sys._getframe())
        dtype = np.dtype(x.dtype).name
        checks.fail_unless(
            ~(jnp.isinf(y) & jnp.isfinite(x)) | (x > _EXP_MAX),
            lambda: errors.make("math-float-range", call="math.exp", where=where, source=source, dtype=dtype),
        )
    return y
