"""Mandelbrot escape counts: a per-point ``while`` loop with ``break``, vmapped over a grid.

``escape_count`` is written for one point, the way the definition reads: iterate
``z = z**2 + c`` until ``|z| > 2`` or the iteration budget runs out. Each point needs a
different number of iterations, so the loop is data dependent. ``autolax.convert`` stages
it as a ``lax.while_loop``; ``jax.vmap`` of the converted function then runs it for a whole
grid at once (the batched loop runs until every point is done, and each point keeps the
count at which it escaped).

    >>> import autolax, jax
    >>> counts = jax.jit(escape_grid)(re, im)
"""

import jax

import autolax


def escape_count(c_re, c_im, max_iter=40):
    """How many iterations of ``z = z**2 + c`` keep ``|z| <= 2`` (``max_iter`` if all do)."""
    x = y = 0.0
    n = 0
    while n < max_iter:
        if x * x + y * y > 4.0:
            break
        x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
        n += 1
    return n


def escape_grid(re, im):
    """Escape counts for every point of the grid ``re[j] + i * im[i]``: shape (len(im), len(re))."""
    per_row = jax.vmap(autolax.convert(escape_count), in_axes=(0, None))
    return jax.vmap(per_row, in_axes=(None, 0))(re, im)


def render(counts, max_iter=40):
    """The grid as text, darker characters for points that stay bounded longer."""
    shades = " .:-=+*#%@"
    return "\n".join("".join(shades[min(int(c) * len(shades) // (max_iter + 1), len(shades) - 1)] for c in row) for row in counts)
