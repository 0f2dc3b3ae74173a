"""Insertion sort, exactly as the textbook writes it: shift larger items right, in place.

The inner ``while j >= 0 and v[j] > key:`` runs a data-dependent number of times, and
``v[j + 1] = v[j]`` mutates the array. On a NumPy array this is ordinary Python. Under
``autolax.jit`` the inner loop becomes a ``lax.while_loop``, the outer ``for`` a
``lax.scan``, and each index assignment ``v = v.at[j + 1].set(v[j])``. The ``and`` keeps
Python's meaning: once ``j`` is -1 the loop stops, whatever ``v[-1]`` holds.

    >>> import autolax, jax.numpy as jnp
    >>> autolax.jit(insertion_sort)(jnp.array([3, 1, 2]))
"""


def insertion_sort(v):
    """Sorts ``v`` in place (a NumPy array or list) and returns it; under ``autolax.jit``,
    returns the sorted copy of a JAX array."""
    for i in range(1, len(v)):
        key = v[i]
        j = i - 1
        while j >= 0 and v[j] > key:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = key
    return v
