"""Root finding by bisection and by Newton's method, written as plain Python loops.

Both loops stop on a tolerance or after ``max_iter`` iterations, and both return from
inside the loop as soon as they have an answer -- the shape these algorithms have in every
textbook. Under plain ``jax.jit`` neither can be traced (the loop conditions depend on
data); ``autolax.jit`` stages each ``while`` as a ``lax.while_loop`` and the early
``return`` as a flag in its carried state.

    >>> import autolax
    >>> autolax.jit(bisection)(0.0, 3.0)       # the real root of x**3 - 2x - 5
    >>> autolax.jit(newton_sqrt)(2.0)          # sqrt(2)
"""

import jax.numpy as jnp


def f(x):
    """Wallis's cubic, the classic test equation: one real root near 2.0946."""
    return x**3 - 2.0 * x - 5.0


def bisection(lo, hi, tol=1e-5, max_iter=60):
    """A root of ``f`` in ``[lo, hi]`` by bisection; returns (root, iterations used).

    If ``f`` does not change sign on the interval there is no bracketed root and the
    result is (nan, 0).
    """
    f_lo = f(lo)
    if f_lo * f(hi) > 0:
        return jnp.nan, 0
    it = 0
    while hi - lo > tol and it < max_iter:
        mid = 0.5 * (lo + hi)
        f_mid = f(mid)
        if f_mid == 0.0:
            return mid, it + 1
        if (f_mid < 0) == (f_lo < 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
        it += 1
    return 0.5 * (lo + hi), it


def newton_sqrt(a, x0=1.0, tol=1e-6, max_iter=50):
    """``sqrt(a)`` by Newton's method on ``x**2 - a``; returns (root, iterations, converged)."""
    x = x0
    it = 0
    while it < max_iter:
        slope = 2.0 * x
        if slope == 0.0:
            return x, it, False
        step = (x * x - a) / slope
        x = x - step
        it += 1
        if abs(step) <= tol * abs(x):
            return x, it, True
    return x, it, False
