"""Benchmark: reverse-mode gradients through while loops with a data-dependent trip count.

Run from the repository root::

    python -m benchmarks.grad_while            # full sizes (about two minutes on a 2-core CPU)
    python -m benchmarks.grad_while --quick    # tiny sizes: a smoke test, numbers mean nothing

Programs (``jax.grad`` of a scalar loss with respect to the initial state and the values the
loop reads without carrying them):

* ``ode``: an adaptive-step integration of the decay ODE ``y' = -k * y`` (Euler/Heun pair,
  step size control, step rejections) written as ``while t < t_end``: a 16,384-float state,
  about 300 iterations, ``max_steps=4096``.
* ``ode, vmap``: the same under ``jax.vmap``, 8 lanes with different ``t_end`` (so different
  trip counts), 2,048 floats a lane, ``max_steps=1024``.
* ``fixed point``: ``x = tanh(W x + b)`` iterated to a tolerance (512-dim, ``W`` 0.95 times
  an orthogonal matrix: about 140 iterations), ``max_steps=2048``.

Variants: the forward ``lax.while_loop`` alone (not differentiated; the baseline),
``autolax.ops.checkpointed.bounded_while_loop`` under ``jax.grad``, a masked ``lax.scan``
over ``max_steps`` (what users write by hand today), a ``lax.scan`` over the exact trip count
(an oracle: it needs the count before the loop runs), and Equinox's
``eqx.internal.while_loop(kind="checkpointed" | "bounded")`` when Equinox is installed.
Every gradient is checked against the bounded loop's before it is timed. Times are medians
over interleaved rounds (every variant once per round); "x forward" is the median of the
per-round ratios to the forward loop. Memory is the compiled program's temporary buffer size
(``memory_analysis().temp_size_in_bytes``), which is deterministic.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.ops.checkpointed import bounded_while_loop

HAS_EQUINOX = importlib.util.find_spec("equinox") is not None


# --------------------------------------------------------------------------- programs
def ode_step(s, k, t_end, tol=1e-5):
    """One step of the Euler/Heun pair with step size control (rejected steps keep ``t``)."""
    t, y, dt, steps = s
    dt = jnp.minimum(dt, t_end - t)
    k1 = -k * y
    y_euler = y + dt * k1
    k2 = -k * y_euler
    y_heun = y + 0.5 * dt * (k1 + k2)
    err = jnp.sqrt(jnp.mean((y_heun - y_euler) ** 2)) + 1e-12
    accept = err <= tol
    t = jnp.where(accept, t + dt, t)
    y = jnp.where(accept, y_heun, y)
    dt = dt * jnp.clip(0.9 * jnp.sqrt(tol / err), 0.2, 5.0)
    return t, y, dt, steps + 1


def ode_problem(n, t_end):
    """The adaptive decay ODE: ``(cond, make_body, init, args)``; the body reads ``k``."""

    def cond(s):
        return s[0] < t_end

    def make_body(k):
        return lambda s: ode_step(s, k, t_end)

    k = jnp.linspace(0.5, 1.5, n, dtype=jnp.float32)
    y0 = jnp.ones(n, jnp.float32)
    init = lambda y0: (jnp.float32(0.0), y0, jnp.float32(1e-3), jnp.int32(0))  # noqa: E731
    return cond, make_body, init, (y0, k)


def ode_lanes_problem(n, lanes, t_max):
    """The ODE for ``vmap``: each lane integrates to its own ``t_end`` (carried in the
    state), so the lanes run different numbers of steps."""

    def cond(s):
        return s[0] < s[4]

    def make_body(k):
        return lambda s: (*ode_step(s[:4], k, s[4]), s[4])

    k = jnp.linspace(0.5, 1.5, n, dtype=jnp.float32)
    y0 = jnp.ones((lanes, n), jnp.float32)
    t_ends = jnp.linspace(t_max / lanes, t_max, lanes, dtype=jnp.float32)
    init = lambda x0: (jnp.float32(0.0), x0[0], jnp.float32(1e-3), jnp.int32(0), x0[1])  # noqa: E731
    return cond, make_body, init, ((y0, t_ends), k)


def fixed_point_problem(n, tol=1e-6, seed=0):
    """``x = tanh(W x + b)`` to a tolerance; the body reads ``W`` and ``b``."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = (0.95 * q).astype(np.float32)  # every direction contracts by about 0.95
    b = (0.1 * rng.standard_normal(n)).astype(np.float32)

    def cond(s):
        return s[1] > tol  # the last change, max |x_new - x|

    def make_body(params):
        w, b = params

        def body(s):
            x, _ = s
            new = jnp.tanh(w @ x + b)
            return new, jnp.max(jnp.abs(new - x))

        return body

    init = lambda x0: (x0, jnp.float32(jnp.inf))  # noqa: E731
    return cond, make_body, init, (jnp.zeros(n, jnp.float32), (jnp.asarray(w), jnp.asarray(b)))


# --------------------------------------------------------------------------- loop forms
def masked_scan(cond, body, init, max_steps):
    """What users write by hand: ``max_steps`` steps, each skipped after the exit."""

    def step(s, _):
        return lax.cond(cond(s), body, lambda s: s, s), None

    return lax.scan(step, init, None, length=max_steps)[0]


def exact_scan(steps):
    def loop(cond, body, init, max_steps):
        return lax.scan(lambda s, _: (body(s), None), init, None, length=steps)[0]

    return loop


def bounded(cond, body, init, max_steps):
    return bounded_while_loop(cond, body, init, max_steps=max_steps)


def equinox(kind):
    def loop(cond, body, init, max_steps):
        import equinox as eqx

        return eqx.internal.while_loop(cond, body, init, max_steps=max_steps, kind=kind)

    return loop


def plain_while(cond, body, init, max_steps):
    return lax.while_loop(cond, body, init)


# --------------------------------------------------------------------------- harness
def loss_fn(problem, loop, max_steps, out_leaf):
    cond, make_body, init, _ = problem

    def loss(x0, params):
        final = loop(cond, make_body(params), init(x0), max_steps)
        return jnp.sum(final[out_leaf])

    return loss


def trip_count(problem, vmapped=False):
    """The loop's number of iterations (per lane, under ``vmap``)."""
    cond, make_body, init, (x0, params) = problem

    def count(x0, params):
        step = lambda c: (c[0] + 1, make_body(params)(c[1]))  # noqa: E731
        return lax.while_loop(lambda c: cond(c[1]), step, (0, init(x0)))[0]

    if vmapped:
        count = jax.vmap(count, in_axes=(0, None))
    return np.asarray(jax.jit(count)(x0, params)).tolist()


def close(a, b, rtol=2e-3, atol=1e-5):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return all(np.allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol) for x, y in zip(la, lb))


def run_case(title, problem, max_steps, out_leaf, rounds, vmapped=False, skip=()):
    """Compiles every variant, checks its gradient, times interleaved rounds; returns rows."""
    _, _, _, args = problem
    steps = trip_count(problem, vmapped)
    variants = {
        "lax.while_loop, forward only": (plain_while, False),
        "bounded_while_loop, forward only": (bounded, False),
        "bounded_while_loop: grad": (bounded, True),
        f"masked lax.scan over max_steps={max_steps}: grad": (masked_scan, True),
    }
    if not vmapped:
        variants[f"lax.scan over the exact trip count ({steps}): grad"] = (exact_scan(steps), True)
    if HAS_EQUINOX:
        variants['equinox while_loop kind="checkpointed": grad'] = (equinox("checkpointed"), True)
        variants['equinox while_loop kind="bounded": grad'] = (equinox("bounded"), True)
    variants = {k: v for k, v in variants.items() if not any(s in k for s in skip)}

    compiled, temp, compile_s = {}, {}, {}
    for name, (loop, differentiate) in variants.items():
        fn = loss_fn(problem, loop, max_steps, out_leaf)
        if differentiate:
            fn = jax.grad(fn, argnums=(0, 1))
        if vmapped:
            fn = jax.vmap(fn, in_axes=(0, None))
        start = time.perf_counter()
        c = jax.jit(fn).lower(*args).compile()
        compile_s[name] = time.perf_counter() - start
        compiled[name] = c
        temp[name] = c.memory_analysis().temp_size_in_bytes
        log(f"  compiled {name}: temp {temp[name] / 2**20:.1f} MiB")

    # Every gradient is checked against the masked scan's (plain JAX autodiff).
    reference = jax.block_until_ready(compiled[next(n for n in compiled if n.startswith("masked"))](*args))
    check = {}
    for name, c in compiled.items():
        out = jax.block_until_ready(c(*args))
        if not name.endswith(": grad"):
            check[name] = "-"
        elif not all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(out)):
            check[name] = "NaN"
        else:
            check[name] = "ok" if close(out, reference) else "differs"

    times = {name: [] for name in compiled}
    for _ in range(rounds):
        for name, c in compiled.items():
            gc.collect()
            start = time.perf_counter()
            jax.block_until_ready(c(*args))
            times[name].append(time.perf_counter() - start)
    base = times["lax.while_loop, forward only"]
    rows = []
    for name in compiled:
        ratio = statistics.median(t / b for t, b in zip(times[name], base))
        rows.append([name, f"{statistics.median(times[name]) * 1e3:.2f}", f"{ratio:.1f}", f"{temp[name] / 2**20:.2f}", f"{compile_s[name]:.2f}", check[name]])
    return {"title": title, "steps": steps, "max_steps": max_steps, "rows": rows, "times": times}


def log(message):
    print(message, file=sys.stderr, flush=True)


def table(headers, rows):
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:]]
    return "\n".join(lines)


def machine():
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    eqx = "not installed"
    if HAS_EQUINOX:
        import equinox

        eqx = equinox.__version__
    return (
        f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, {platform.machine()}; equinox {eqx}; "
        f"load average at start {load:.1f}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 2 rounds: a smoke test")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 15; quick: 2)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 15)
    if args.quick:
        ode = ode_problem(256, t_end=0.3)
        ode_max, lanes, lane_n, vmax = 256, 3, 64, 128
        fixed, fixed_max = fixed_point_problem(32), 256
    else:
        ode = ode_problem(16384, t_end=1.6)
        ode_max, lanes, lane_n, vmax = 4096, 8, 2048, 1024
        fixed, fixed_max = fixed_point_problem(512), 2048

    vmap_problem = ode_lanes_problem(lane_n, lanes, t_max=1.6 if not args.quick else 0.3)

    log(machine())
    results = []
    log("ode")
    results.append(run_case("ode", ode, ode_max, 1, rounds))
    log("ode, vmap")
    results.append(run_case("ode, vmap", vmap_problem, vmax, 1, rounds, vmapped=True))
    log("fixed point")
    results.append(run_case("fixed point", fixed, fixed_max, 0, rounds))

    print("# Gradients through while loops with a data-dependent trip count\n")
    print(machine() + f"; {rounds} interleaved rounds.\n")
    print("Time: median per call after compilation. x forward: median over rounds of the call's")
    print("time divided by the forward `lax.while_loop`'s in the same round. Temp: the compiled")
    print("program's temporary buffers (deterministic). Trace+compile: one measurement, under")
    print("the same load. Gradient: ok = agrees with the masked scan's (rtol 2e-3); NaN = not")
    print("finite.\n")
    for r in results:
        head = f"## {r['title']}: {r['steps']} iterations, max_steps={r['max_steps']}"
        print(head + "\n")
        print(table(["variant", "time (ms)", "x forward", "temp (MiB)", "trace+compile (s)", "gradient"], r["rows"]) + "\n")
    return results


if __name__ == "__main__":
    main()
