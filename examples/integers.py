"""Three integer algorithms with data-dependent loops: Euclid's GCD, Collatz steps and
binary search.

Each is the version from an introductory course. None can run under plain ``jax.jit``
(every loop condition depends on the input values); under ``autolax.jit`` each ``while``
becomes a ``lax.while_loop`` and each ``if`` a ``lax.cond``, and the functions work on
batches through ``jax.vmap``.

    >>> import autolax
    >>> autolax.jit(gcd)(1071, 462)               # 21
    >>> autolax.jit(collatz_steps)(27)            # 111
    >>> autolax.jit(binary_search)(sorted_array, 42)
"""


def gcd(a, b):
    """Greatest common divisor of two non-negative integers (Euclid)."""
    while b != 0:
        a, b = b, a % b
    return a


def collatz_steps(n):
    """Steps of the 3n + 1 map until ``n`` reaches 1."""
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def binary_search(xs, target):
    """Index of ``target`` in the sorted array ``xs``, or -1 if it is not there."""
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        elif xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
