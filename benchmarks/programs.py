"""The programs the benchmarks time: each written as plain Python (what ``autolax.jit``
converts) next to the ``lax`` code a JAX user would write by hand for it.

A ``Program`` bundles the two with inputs of a size that makes one call take roughly a
millisecond on a CPU, so the steady-state comparison measures the loops, not dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

K, DAMPING, DT, GRAVITY = 4.0, 0.3, 0.01, 9.81


# --------------------------------------------------------------------------- for range
def energy(x, v, n_steps):
    """Total energy along a damped-spring trajectory (the compile-cost loop)."""
    total = 0.0
    for i in range(n_steps):
        a = -K * x - DAMPING * v
        v = v + DT * a
        x = x + DT * v
        total += 0.5 * (K * x * x + v * v)
    return total


def energy_lax(x, v, n_steps):
    def body(i, carry):
        x, v, total = carry
        a = -K * x - DAMPING * v
        v = v + DT * a
        x = x + DT * v
        return x, v, total + 0.5 * (K * x * x + v * v)

    return lax.fori_loop(0, n_steps, body, (x, v, 0.0))[2]


# --------------------------------------------------------------------------- for over array
def running_moments(xs, decay):
    """Exponentially weighted mean and variance of a stream."""
    mean = 0.0
    var = 0.0
    for x in xs:
        delta = x - mean
        mean = mean + (1 - decay) * delta
        var = decay * (var + (1 - decay) * delta * delta)
    return mean, var


def running_moments_lax(xs, decay):
    def step(carry, x):
        mean, var = carry
        delta = x - mean
        mean = mean + (1 - decay) * delta
        var = decay * (var + (1 - decay) * delta * delta)
        return (mean, var), None

    zero = jnp.zeros((), xs.dtype)
    return lax.scan(step, (zero, zero), xs)[0]


# --------------------------------------------------------------------------- while
def power_iteration(a, tol, max_iter):
    """Largest eigenvalue of ``a`` and the iterations it took."""
    v = jnp.ones(a.shape[0]) / jnp.sqrt(a.shape[0])
    lam = 0.0
    err = jnp.inf
    k = 0
    while err > tol and k < max_iter:
        w = a @ v
        lam_new = jnp.linalg.norm(w)
        v = w / lam_new
        err = jnp.abs(lam_new - lam)
        lam = lam_new
        k += 1
    return lam, k


def power_iteration_lax(a, tol, max_iter):
    def cond(carry):
        _, _, err, k = carry
        return (err > tol) & (k < max_iter)

    def body(carry):
        v, lam, _, k = carry
        w = a @ v
        lam_new = jnp.linalg.norm(w)
        return w / lam_new, lam_new, jnp.abs(lam_new - lam), k + 1

    v0 = jnp.ones(a.shape[0]) / jnp.sqrt(a.shape[0])
    _, lam, _, k = lax.while_loop(cond, body, (v0, jnp.float32(0.0), jnp.float32(jnp.inf), 0))
    return lam, k


# --------------------------------------------------------------------------- nested loops
def pair_energy(pos):
    """Lennard-Jones energy summed over all pairs ``i < j``."""
    n = pos.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = jnp.dot(d, d)
            inv6 = 1.0 / (r2 * r2 * r2)
            total += 4.0 * (inv6 * inv6 - inv6)
    return total


def pair_energy_lax(pos):
    n = pos.shape[0]

    def outer(i, total):
        def inner(j, total):
            d = pos[i] - pos[j]
            r2 = jnp.dot(d, d)
            inv6 = 1.0 / (r2 * r2 * r2)
            return total + 4.0 * (inv6 * inv6 - inv6)

        return lax.fori_loop(i + 1, n, inner, total)

    return lax.fori_loop(0, n, outer, jnp.float32(0.0))


# --------------------------------------------------------------------------- cond-heavy
def bounce(x, v, n_steps):
    """A ball in a unit box under gravity; counts the bounces."""
    bounces = 0
    for i in range(n_steps):
        x = x + DT * v
        if x < 0.0:
            x = -x
            v = -v
            bounces += 1
        elif x > 1.0:
            x = 2.0 - x
            v = -v
            bounces += 1
        else:
            v = v - DT * GRAVITY
    return x, v, bounces


def bounce_lax(x, v, n_steps):
    def body(i, carry):
        x, v, bounces = carry
        x = x + DT * v

        def floor(c):
            x, v, b = c
            return -x, -v, b + 1

        def inside_or_ceiling(c):
            return lax.cond(c[0] > 1.0, lambda c: (2.0 - c[0], -c[1], c[2] + 1), lambda c: (c[0], c[1] - DT * GRAVITY, c[2]), c)

        return lax.cond(x < 0.0, floor, inside_or_ceiling, (x, v, bounces))

    return lax.fori_loop(0, n_steps, body, (jnp.float32(x), jnp.float32(v), 0))


# --------------------------------------------------------------------------- break (search)
def first_crossing(xs, level):
    """Index of the first item above ``level``, or -1."""
    found = -1
    for i in range(xs.shape[0]):
        if xs[i] > level:
            found = i
            break
    return found


def first_crossing_lax(xs, level):
    n = xs.shape[0]

    def cond(i):
        return (i < n) & (xs[jnp.minimum(i, n - 1)] <= level)

    i = lax.while_loop(cond, lambda i: i + 1, 0)
    return jnp.where(i < n, i, -1)


def first_crossing_flag_lax(xs, level):
    """The same search written the way autolax lowered it before it tested the item in the
    loop's predicate: a ``found`` flag, set in the body
    with selects (the ``if`` only assigns values), tested by the loop condition."""
    n = xs.shape[0]

    def cond(carry):
        i, _, found = carry
        return (i < n) & ~found

    def body(carry):
        i, index, found = carry
        hit = xs[i] > level
        return i + 1, jnp.where(hit, i, index), hit | found

    return lax.while_loop(cond, body, (0, -1, False))[1]


# --------------------------------------------------------------------------- early return
def escape_time(x, v, limit, n_steps):
    """Steps until a driven oscillator leaves ``[-limit, limit]``: an early ``return``
    from a fixed-trip loop that carries floats (autolax: a while_loop that stops at the
    ``return``, differentiated as a masked scan)."""
    for step in range(n_steps):
        v = v + DT * (-K * x + 0.3 * v)
        x = x + DT * v
        if abs(x) > limit:
            return step, x
    return n_steps, x


def escape_time_lax(x, v, limit, n_steps):
    def cond(carry):
        step, x, _ = carry
        return (step < n_steps) & (jnp.abs(x) <= limit)

    def body(carry):
        step, x, v = carry
        v = v + DT * (-K * x + 0.3 * v)
        x = x + DT * v
        return step + 1, x, v

    step, x, _ = lax.while_loop(cond, body, (0, jnp.float32(x), jnp.float32(v)))
    # The Python loop returns the index of the step that crossed, not the count.
    return jnp.where(jnp.abs(x) > limit, step - 1, n_steps), x


def escape_time_flag_lax(x, v, limit, n_steps):
    """The same loop written the way autolax lowered it for a plain call before it tested the
    exit in the loop's predicate: a ``lax.while_loop``
    that carries the ``return`` flag and value, set with selects (under ``jax.grad`` autolax
    differentiates ``escape_time_masked_lax`` instead)."""

    def cond(carry):
        step, _, _, done, _, _ = carry
        return (step < n_steps) & ~done

    def body(carry):
        step, x, v, done, out_step, out_x = carry
        v = v + DT * (-K * x + 0.3 * v)
        x = x + DT * v
        hit = jnp.abs(x) > limit
        return step + 1, x, v, hit | done, jnp.where(hit, step, out_step), jnp.where(hit, x, out_x)

    init = (0, jnp.float32(x), jnp.float32(v), False, 0, jnp.float32(x))
    step, x, _, done, out_step, out_x = lax.while_loop(cond, body, init)
    return jnp.where(done, out_step, n_steps), jnp.where(done, out_x, x)


def escape_time_masked_lax(x, v, limit, n_steps):
    """The same loop as a masked ``lax.scan`` (the form autolax differentiates):
    all ``n_steps`` iterations run, those after the exit skip their work with a ``lax.cond``."""

    def body(carry, _):
        def run(carry):
            step, x, v, done, out_step, out_x = carry
            v = v + DT * (-K * x + 0.3 * v)
            x = x + DT * v
            hit = jnp.abs(x) > limit
            return step + 1, x, v, hit, jnp.where(hit, step, out_step), x

        return lax.cond(carry[3], lambda c: c, run, carry), None

    init = (0, jnp.float32(x), jnp.float32(v), False, n_steps, jnp.float32(x))
    return tuple(lax.scan(body, init, length=n_steps)[0][4:])


# --------------------------------------------------------------------------- list appends
def rnn(w_in, w_rec, xs, h):
    """Hidden states of an Elman RNN, collected with ``list.append``."""
    states = []
    for x in xs:
        h = jnp.tanh(w_in @ x + w_rec @ h)
        states.append(h)
    return jnp.stack(states)


def rnn_lax(w_in, w_rec, xs, h):
    def step(h, x):
        h = jnp.tanh(w_in @ x + w_rec @ h)
        return h, h

    return lax.scan(step, h, xs)[1]


# --------------------------------------------------------------------------- index assignment
def insertion_sort(v):
    for i in range(1, len(v)):
        key = v[i]
        j = i - 1
        while j >= 0 and v[j] > key:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = key
    return v


def insertion_sort_lax(v):
    def outer(i, v):
        key = v[i]

        def cond(c):
            j, v = c
            return (j >= 0) & (v[jnp.maximum(j, 0)] > key)

        def shift(c):
            j, v = c
            return j - 1, v.at[j + 1].set(v[j])

        j, v = lax.while_loop(cond, shift, (i - 1, v))
        return v.at[j + 1].set(key)

    return lax.fori_loop(1, v.shape[0], outer, v)


# --------------------------------------------------------------------------- vmapped while
def escape_count(c_re, c_im, max_iter):
    x = y = 0.0
    n = 0
    while n < max_iter:
        if x * x + y * y > 4.0:
            break
        x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
        n += 1
    return n


def escape_count_lax(c_re, c_im, max_iter):
    def cond(carry):
        x, y, n = carry
        return (n < max_iter) & (x * x + y * y <= 4.0)

    def body(carry):
        x, y, n = carry
        return x * x - y * y + c_re, 2.0 * x * y + c_im, n + 1

    return lax.while_loop(cond, body, (jnp.float32(0.0), jnp.float32(0.0), 0))[2]


def mandelbrot_grid(escape):
    """``escape`` (a scalar function of (c_re, c_im, max_iter)) vmapped over a grid."""

    def grid(re, im):
        per_row = jax.vmap(lambda r, i: escape(r, i, 50), in_axes=(0, None))
        return jax.vmap(per_row, in_axes=(None, 0))(re, im)

    return grid



# --------------------------------------------------------------------------- while + continue
def positive_energy(xs, limit):
    """Sum of squares of the positive items until it passes ``limit``: a ``while`` whose
    body skips negative items with ``continue``."""
    total = 0.0
    i = 0
    while i < xs.shape[0] and total < limit:
        x = xs[i]
        i += 1
        if x < 0.0:
            continue
        total += x * x
    return total, i


def positive_energy_lax(xs, limit):
    n = xs.shape[0]

    def cond(carry):
        total, i = carry
        return (i < n) & (total < limit)

    def body(carry):
        total, i = carry
        x = xs[i]
        return total + jnp.where(x < 0.0, 0.0, x * x), i + 1

    return lax.while_loop(cond, body, (jnp.float32(0.0), 0))


# --------------------------------------------------------------------------- return from a for
def first_negative_prefix(xs):
    """The first index where the running sum goes below zero, and that sum; (-1, total) if
    it never does: a ``return`` from inside a ``for``."""
    total = 0.0
    for i in range(xs.shape[0]):
        total += xs[i]
        if total < 0.0:
            return i, total
    return -1, total


def first_negative_prefix_lax(xs):
    n = xs.shape[0]

    def cond(carry):
        i, total = carry
        return (i < n) & (total >= 0.0)

    def body(carry):
        i, total = carry
        return i + 1, total + xs[i]

    i, total = lax.while_loop(cond, body, (0, jnp.float32(0.0)))
    return jnp.where(total < 0.0, i - 1, -1), total


def escape_times(escape):
    """``escape`` (x, v, limit, n_steps) vmapped over a batch of starting points."""

    def batch(x0s, v, limit, n_steps):
        return jax.vmap(lambda x: escape(x, v, limit, n_steps))(x0s)

    return batch


# --------------------------------------------------------------------------- exit at the top (loop rotation)
def escape_top(x, z, limit, n_steps):
    """Steps until ``x -> x * x / 2 + z`` leaves ``[-limit, limit]``: the exit opens the body
    and tests what the body changes (autolax: the test in the ``lax.while_loop`` predicate,
    on the state each iteration starts with)."""
    for k in range(n_steps):
        if jnp.abs(x) > limit:
            return k, x
        x = x * x * 0.5 + z
    return -1, x


def escape_top_lax(x, z, limit, n_steps):
    def cond(carry):
        k, x = carry
        return (k < n_steps) & (jnp.abs(x) <= limit)

    def body(carry):
        k, x = carry
        return k + 1, x * x * 0.5 + z

    k, x = lax.while_loop(cond, body, (0, jnp.float32(x)))
    return jnp.where(k < n_steps, k, -1), x


def first_below(xs, level):
    """Index of the first item at or below ``level``, or -1."""
    found = -1
    for i in range(xs.shape[0]):
        if xs[i] <= level:
            found = i
            break
    return found


def first_below_lax(xs, level):
    n = xs.shape[0]

    def cond(i):
        return (i < n) & (xs[jnp.minimum(i, n - 1)] > level)

    i = lax.while_loop(cond, lambda i: i + 1, 0)
    return jnp.where(i < n, i, -1)


def orbit_escape(c_re, c_im, max_iter):
    """Iterations until the orbit of ``z -> z * z + c`` leaves the disk of radius 2, and
    where it left: a ``while`` whose body opens with a ``return`` over its carried values."""
    x = y = 0.0
    n = 0
    while n < max_iter:
        if x * x + y * y > 4.0:
            return n, x, y
        x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
        n += 1
    return -1, x, y


def orbit_escape_lax(c_re, c_im, max_iter):
    def cond(carry):
        x, y, n = carry
        return (n < max_iter) & (x * x + y * y <= 4.0)

    def body(carry):
        x, y, n = carry
        return x * x - y * y + c_re, 2.0 * x * y + c_im, n + 1

    x, y, n = lax.while_loop(cond, body, (jnp.float32(0.0), jnp.float32(0.0), 0))
    return jnp.where(n < max_iter, n, -1), x, y


def _below_input(n):
    xs = _rng(11).uniform(1.0, 2.0, n).astype(np.float32)
    xs[int(0.9 * n)] = 0.5  # the first item at or below 0.75 is 90% of the way in
    return xs, np.float32(0.75)


# --------------------------------------------------------------------------- the catalogue
@dataclass
class Program:
    """One steady-state benchmark: the Python function, its hand-written lax twin, how to
    make inputs of size ``scale`` (1 = full, smaller for ``--quick``), and static args."""

    name: str
    kind: str  # the control flow it exercises
    python: object
    lax: object
    inputs: object  # scale -> tuple of arguments
    static_argnums: tuple = ()
    wrap: object = None  # fn -> fn applied to both versions (e.g. vmap over a grid)
    note: str = ""
    twin: object = None  # optional: hand-written lax in the same form autolax emits


def _rng(seed=0):
    return np.random.default_rng(seed)


def _symmetric(n):
    a = _rng(1).normal(size=(n, n)).astype(np.float32)
    return (a @ a.T / n + np.eye(n, dtype=np.float32))


def _positions(n):
    side = int(np.ceil(n ** (1 / 3)))
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3), -1).reshape(-1, 3)[:n]
    return (1.2 * grid + 0.05 * _rng(2).normal(size=(n, 3))).astype(np.float32)


def _signed_input(n):
    xs = _rng(9).normal(size=n).astype(np.float32)
    return xs, np.float32(0.4 * n)  # passes the limit about 80% of the way in


def _prefix_input(n):
    xs = _rng(10).uniform(0.0, 1.0, n).astype(np.float32)
    xs[int(0.9 * n)] = -1e7  # the running sum goes negative 90% of the way in
    return (xs,)


def _crossing_input(n):
    xs = _rng(3).uniform(0.0, 1.0, n).astype(np.float32)
    xs[int(0.9 * n)] = 2.0  # the first item above 1.5 is 90% of the way in
    return xs, np.float32(1.5)


def _grid(n):
    return np.linspace(-2.0, 0.6, 2 * n, dtype=np.float32), np.linspace(-1.2, 1.2, n, dtype=np.float32)


PROGRAMS = [
    Program("energy", "for range (static N)", energy, energy_lax, lambda s: (1.0, 0.0, max(10, int(250_000 * s))), static_argnums=(2,)),
    Program(
        "running_moments", "for x in array", running_moments, running_moments_lax,
        lambda s: (_rng(4).normal(size=max(10, int(250_000 * s))).astype(np.float32), np.float32(0.99)),
    ),
    Program(
        "power_iteration", "while (tolerance)", power_iteration, power_iteration_lax,
        lambda s: (_symmetric(max(4, int(400 * s))), np.float32(1e-7), max(5, int(2_000 * s))),
    ),
    Program("pair_energy", "nested for (traced inner bounds)", pair_energy, pair_energy_lax, lambda s: (_positions(max(4, int(800 * s))),)),
    Program("bounce", "if/elif/else in a loop", bounce, bounce_lax, lambda s: (0.5, 3.0, max(10, int(250_000 * s))), static_argnums=(2,)),
    Program(
        "first_crossing", "for + break (search)", first_crossing, first_crossing_lax, lambda s: _crossing_input(max(20, int(1_200_000 * s))),
        twin=first_crossing_flag_lax,
        note="autolax tests `xs[i] > level` with each item in the `lax.while_loop` predicate, as the "
        "hand-written loop does (the `break` opens the body). \"vs same-form\" compares with "
        "`first_crossing_flag_lax`, the form autolax emitted before: a flag set in the body.",
    ),
    Program(
        "escape_time", "early return, float state, vmapped", escape_time, escape_time_lax,
        lambda s: (np.geomspace(1e-25, 1e-20, max(2, int(64 * s))).astype(np.float32), 0.0, 1.0, max(10, int(100_000 * s))),
        static_argnums=(3,), wrap=escape_times,
        twin=escape_time_flag_lax,
        note="a batch of 64 starting points, vmapped; the loop stops when the last one leaves (step 38,448 of "
        "100,000 at full size); the `return` ends the body, so autolax tests `abs(x) > limit` in the "
        "`lax.while_loop` predicate after each iteration and returns after the loop, as the hand-written loop "
        "does. \"vs same-form\" compares with `escape_time_flag_lax`, the form autolax emitted before (the "
        "`return` flag and value carried, set with selects). (Under `jax.grad` autolax differentiates the "
        "masked `lax.scan` form, where all 100,000 iterations run.)",
    ),
    Program(
        "positive_energy", "while + continue", positive_energy, positive_energy_lax,
        lambda s: _signed_input(max(20, int(400_000 * s))),
    ),
    Program(
        "first_negative_prefix", "return from inside a for", first_negative_prefix, first_negative_prefix_lax,
        lambda s: _prefix_input(max(20, int(400_000 * s))),
    ),
    Program(
        "rnn", "list appends", rnn, rnn_lax,
        lambda s: (
            _rng(5).normal(size=(32, 8)).astype(np.float32) / 3,
            _rng(6).normal(size=(32, 32)).astype(np.float32) / 6,
            _rng(7).normal(size=(max(5, int(8_000 * s)), 8)).astype(np.float32),
            np.zeros(32, np.float32),
        ),
    ),
    Program("insertion_sort", "for + while + x[i] = v", insertion_sort, insertion_sort_lax, lambda s: (_rng(8).normal(size=max(5, int(1_400 * s))).astype(np.float32),)),
    Program(
        "mandelbrot", "while + break, vmapped", escape_count, escape_count_lax, lambda s: _grid(max(4, int(128 * s))),
        wrap=mandelbrot_grid,
    ),
    Program(
        "escape_top", "early return opening a for body", escape_top, escape_top_lax,
        lambda s: (0.0, np.float32(0.5000001), 2.0, max(10, int(14_500 * s))), static_argnums=(3,),
        note="the exit opens the body and reads `x`, which the body changes: autolax tests it in the "
        "`lax.while_loop` predicate on the state each iteration starts with (loop rotation); it leaves at "
        "step 13,030 of 14,500 at full size",
    ),
    Program(
        "first_below", "for + break, exit at the top", first_below, first_below_lax,
        lambda s: _below_input(max(20, int(1_200_000 * s))),
    ),
    Program(
        "orbit_escape", "while, return opening the body", orbit_escape, orbit_escape_lax,
        lambda s: (np.float32(0.25000006), np.float32(0.0), max(10, int(14_500 * s))),
        note="the `return` opens the body and reads the carried `x`, `y`: autolax tests it in the "
        "`lax.while_loop` predicate (`n < max_iter and not ...`) and returns after the loop where "
        "`n < max_iter` still holds; it leaves at "
        "iteration 13,032 of 14,500 at full size",
    ),
]
