"""Benchmark: reverse-mode gradients through while loops with a data-dependent trip count.

Run from the repository root::

    python -m benchmarks.grad_while            # full sizes (about two minutes on a 2-core CPU)
    python -m benchmarks.grad_while --quick    # tiny sizes: a smoke test, numbers mean nothing

    python -m benchmarks.grad_while --profile  # where the gradient's time goes (both ODE bodies)
    python -m benchmarks.grad_while --memory   # memory against max_steps and vmap lanes

Programs (``jax.grad`` of a scalar loss with respect to the initial state and the values the
loop reads without carrying them):

* ``ode``: an adaptive-step integration of the decay ODE ``y' = -k * y`` (Euler/Heun pair,
  step size control, step rejections) written as ``while t < t_end``: a 16,384-float state,
  about 300 iterations, ``max_steps=4096``. An expensive body: two right-hand sides, an error
  norm (a reduction) and selects over the state.
* ``ode, cheap body``: the same state and bound with a memory-bound body,
  ``y = y + dt * (-k * y + sin(t))`` (one pass over the state; the step size is controlled by
  a scalar error estimate): 271 iterations.
* ``ode, vmap``: the same under ``jax.vmap``, 8 lanes with different ``t_end`` (so different
  trip counts), 2,048 floats a lane, ``max_steps=1024``.
* ``fixed point``: ``x = tanh(W x + b)`` iterated to a tolerance (512-dim, ``W`` 0.95 times
  an orthogonal matrix: about 140 iterations), ``max_steps=2048``.

Variants: the forward ``lax.while_loop`` alone (not differentiated; the baseline),
``autolax.runtime.ops.checkpointed.bounded_while_loop`` under ``jax.grad``, the same loop written as a
Python ``while`` and converted by ``autolax.convert(..., max_steps=...)``, a masked ``lax.scan``
over ``max_steps`` (what users write by hand today), a ``lax.scan`` over the exact trip count
(an oracle: it needs the count before the loop runs), and Equinox's
``eqx.internal.while_loop(kind="checkpointed" | "bounded")`` when Equinox is installed.
Every gradient is checked against the bounded loop's before it is timed. Times are medians
over interleaved rounds (every variant once per round); "x forward" is the median of the
per-round ratios to the forward loop; "cpu x forward" is the same with the process's CPU time
(``time.process_time``), which a machine loaded by other jobs inflates less. Memory is the
compiled program's temporary buffer size (``memory_analysis().temp_size_in_bytes``), which is
deterministic.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import os
import platform
import re
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import autolax
from autolax.runtime.ops.checkpointed import bounded_while_loop

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


def cheap_ode_step(s, k, t_end, tol=3e-5):
    """One step of ``y' = -k * y + sin(t)``: a single pass over the state. The step size is
    controlled by a scalar error estimate (no reduction over the state)."""
    t, y, dt = s
    h = jnp.minimum(dt, t_end - t)
    err = h * h * (jnp.abs(jnp.cos(t)) + 0.1) + 1e-12
    accept = err <= tol
    y = jnp.where(accept, y + h * (-k * y + jnp.sin(t)), y)
    t = jnp.where(accept, t + h, t)
    dt = h * jnp.clip(0.9 * jnp.sqrt(tol / err), 0.2, 5.0)
    return t, y, dt


def cheap_ode_problem(n, t_end):
    """The cheap-bodied ODE: ``(cond, make_body, init, args)``; the body reads ``k``."""

    def cond(s):
        return s[0] < t_end

    def make_body(k):
        return lambda s: cheap_ode_step(s, k, t_end)

    k = jnp.linspace(0.5, 1.5, n, dtype=jnp.float32)
    y0 = jnp.ones(n, jnp.float32)
    init = lambda y0: (jnp.float32(0.0), y0, jnp.float32(1e-3))  # noqa: E731
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


def python_while(cond, body, init, max_steps):
    """The loop as users write it, converted by autolax with a bound."""

    def run(state):
        while cond(state):
            state = body(state)
        return state

    return autolax.convert(run, max_steps=max_steps)(init)


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
        "autolax.convert(Python while): grad": (python_while, True),
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
    cpu = {name: [] for name in compiled}
    for _ in range(rounds):
        for name, c in compiled.items():
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(c(*args))
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    base, base_cpu = times["lax.while_loop, forward only"], cpu["lax.while_loop, forward only"]
    rows, ratios = [], {}
    for name in compiled:
        ratios[name] = statistics.median(t / b for t, b in zip(times[name], base))
        cpu_ratio = statistics.median(t / b for t, b in zip(cpu[name], base_cpu))
        rows.append([name, f"{statistics.median(times[name]) * 1e3:.2f}", f"{ratios[name]:.1f}", f"{cpu_ratio:.1f}",
                     f"{temp[name] / 2**20:.2f}", f"{compile_s[name]:.2f}", check[name]])
    return {"title": title, "steps": steps, "max_steps": max_steps, "rows": rows, "times": times, "ratios": ratios}


# --------------------------------------------------------------------------- profile
_TRIVIAL = {"parameter", "get-tuple-element", "tuple", "constant", "bitcast"}


def _computations(hlo):
    """``{computation: [(instruction, opcode, output elements, called, op_name)]}`` read off
    the text of a compiled HLO module; ``called`` names a loop's ``body`` and ``condition`` and
    a conditional's ``branches``."""
    comps, current = {}, None
    for line in hlo.splitlines():
        head = re.match(r"^(?:ENTRY )?%(\S+) .*\{$", line)
        if head:
            current = comps.setdefault(head.group(1), [])
            continue
        if line.startswith("}"):
            current = None
            continue
        m = re.match(r"^\s*(?:ROOT )?%(\S+) = (.*?) ([a-z][a-z0-9\-]*)\(", line)
        if current is None or not m:
            continue
        shape = re.match(r"^[a-z0-9]+\[([0-9,]*)\]", m.group(2))
        size = int(np.prod([int(d) for d in shape.group(1).split(",") if d])) if shape else 0
        called = dict(re.findall(r"(body|condition)=%([^,}\s]+)", line))
        called["branches"] = re.findall(r"%([^,}\s]+)", (re.search(r"branch_computations=\{([^}]*)\}", line) or [""])[0])
        op_name = re.search(r'op_name="([^"]*)"', line)
        current.append((m.group(1), m.group(3), size, called, op_name.group(1) if op_name else ""))
    return comps


def _loops(comps):
    """The ``while`` instructions of the gradient program: ``{role: (name, body, condition)}``
    for the forward pass's chunk loop and its steps, and the backward pass's chunk loop, its
    recompute and its pull loops (the recompute comes first in the chunk's body)."""
    whiles = {}
    for comp, instructions in comps.items():
        for name, opcode, _, called, op_name in instructions:
            if opcode == "while":
                whiles[name] = (comp, called["body"], called["condition"], "transpose(" in op_name)
    inner = {c: [n for n, (parent, *_rest) in whiles.items() if parent == c] for c in comps}
    roles = {}
    for name, (parent, body, cond, backward) in whiles.items():
        nested = inner[body]
        if not backward and len(nested) == 1:
            roles["forward pass: chunk loop"] = (name, body, cond)
            roles["forward pass: steps"] = (nested[0], *whiles[nested[0]][1:3])
        if backward and len(nested) == 2:
            roles["backward pass: chunk loop"] = (name, body, cond)
            roles["backward pass: recompute"] = (nested[0], *whiles[nested[0]][1:3])
            roles["backward pass: pull back"] = (nested[1], *whiles[nested[1]][1:3])
    return roles


def _ops(comps, comp, state_size, seen=None):
    """XLA operations one run of ``comp`` executes (nested conditionals counted in full,
    nested loops not), and how many of them produce an array of the state's size or more."""
    seen = set() if seen is None else seen
    total = big = 0
    for _, opcode, size, called, _ in comps.get(comp, []):
        if opcode in _TRIVIAL:
            continue
        if opcode == "conditional":
            for c in called["branches"]:
                t, b = _ops(comps, c, state_size, seen)
                total, big = total + t, big + b
        total += 1
        big += size >= state_size and opcode != "while"
    return total, big


def _traced_times(fn, args, calls):
    """Seconds per call spent in each XLA operation (by name), from ``jax.profiler``."""
    import glob
    import gzip
    import json
    import tempfile

    jax.block_until_ready(fn(*args))
    with tempfile.TemporaryDirectory() as out:
        with jax.profiler.trace(out):
            for _ in range(calls):
                jax.block_until_ready(fn(*args))
        trace = json.load(gzip.open(glob.glob(f"{out}/**/*.trace.json.gz", recursive=True)[0]))
    totals, counts = {}, {}
    for event in trace["traceEvents"]:
        if event.get("ph") == "X":
            totals[event["name"]] = totals.get(event["name"], 0) + event["dur"] / 1e6 / calls
            counts[event["name"]] = counts.get(event["name"], 0) + 1
    return totals, counts


def profile_case(title, problem, max_steps, out_leaf, calls=3):
    """Where the gradient's time goes: per loop, the XLA operations per iteration (from the
    compiled program, deterministic) and the time ``jax.profiler`` records in it."""
    _, _, init, args = problem
    steps = trip_count(problem)
    state_size = max(int(np.size(leaf)) for leaf in jax.tree_util.tree_leaves(jax.eval_shape(init, args[0])))
    forward = jax.jit(loss_fn(problem, plain_while, max_steps, out_leaf))
    grad = jax.jit(jax.grad(loss_fn(problem, bounded, max_steps, out_leaf), argnums=(0, 1)))
    fwd_comps = _computations(forward.lower(*args).compile().as_text())
    comps = _computations(grad.lower(*args).compile().as_text())
    roles = _loops(comps)
    fwd_loop = next((n, called["body"], called["condition"]) for comp in fwd_comps
                    for n, op, _, called, _ in fwd_comps[comp] if op == "while")
    fwd_times, _ = _traced_times(forward, args, calls)
    grad_times, _ = _traced_times(grad, args, calls)
    rows = []

    def row(label, times, comps_, loop, iterations):
        name, body, cond = loop
        ops, big = _ops(comps_, body, state_size)
        cond_ops, _ = _ops(comps_, cond, state_size)
        seconds = times.get(name, 0.0)
        rows.append([label, f"{ops + cond_ops}", f"{big}", f"{seconds * 1e3:.2f}", f"{seconds / max(iterations, 1) * 1e6:.1f}"])
        return seconds

    base = row("forward `lax.while_loop` (baseline)", fwd_times, fwd_comps, fwd_loop, steps)
    parts = {}
    for role in ("forward pass: chunk loop", "forward pass: steps", "backward pass: chunk loop",
                 "backward pass: recompute", "backward pass: pull back"):
        if role in roles:
            iterations = -(-steps // (math.isqrt(max_steps - 1) + 1)) if "chunk" in role else steps
            parts[role] = row(role, grad_times, comps, roles[role], iterations)
    # the costliest operations inside the pull-back loop
    top = []
    if "backward pass: pull back" in roles:
        body = roles["backward pass: pull back"][1]
        names = {n for n, op, *_ in comps[body] if op not in _TRIVIAL}
        for c in (c for n, op, _, called, _ in comps[body] if op == "conditional" for c in called["branches"]):
            names |= {n for n, op, *_ in comps.get(c, []) if op not in _TRIVIAL}
        top = sorted(((grad_times.get(n, 0.0), n) for n in names), reverse=True)[:5]
    return {"title": title, "steps": steps, "rows": rows, "base": base, "parts": parts,
            "top": [(n, t / max(steps, 1) * 1e6) for t, n in top]}


def print_profile(profiles):
    print("# Where the gradient's time goes (`python -m benchmarks.grad_while --profile`)\n")
    print(machine() + ".\n")
    print("ops/iter: XLA operations one iteration of the loop executes (its body and test, from the")
    print("compiled program: deterministic); full-size: how many of them write an array the size of")
    print("the state. ms/call and us/iter: time `jax.profiler` records in the loop (it adds a cost")
    print("to every operation, so it inflates loops of many small operations; use the shares, not")
    print("the absolute times). Chunk loops: per chunk, their inner loops included.\n")
    for p in profiles:
        print(f"## {p['title']}: {p['steps']} iterations\n")
        print(table(["loop", "ops/iter", "full-size", "ms/call", "us/iter"], p["rows"]) + "\n")
        if p["top"]:
            print("Costliest operations of the pull-back loop (us per iteration): "
                  + ", ".join(f"`{n}` {t:.1f}" for n, t in p["top"]) + "\n")


# --------------------------------------------------------------------------- memory
def memory_tables():
    """The gradient's compiled temporary buffers against ``max_steps`` and ``vmap`` lanes
    (deterministic: no timing)."""

    def temp(fn, *args):
        return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes / 2**20

    ode = ode_problem(16384, t_end=1.6)
    state = 16384 * 4 + 12
    print("## Memory against max_steps (compiled temporary buffers, deterministic)\n")
    print("ODE above, `jax.jit(jax.grad(loss))`, default budget (64 MiB):\n")
    rows = []
    for max_steps in (1024, 4096, 16384):
        k = math.isqrt(max_steps - 1) + 1
        c = -(-max_steps // k)
        bounded_temp = temp(jax.grad(loss_fn(ode, bounded, max_steps, 1), argnums=(0, 1)), *ode[3])
        masked = "not compiled"
        if max_steps <= 4096:
            masked = f"{temp(jax.grad(loss_fn(ode, masked_scan, max_steps, 1), argnums=(0, 1)), *ode[3]):.1f}"
        rows.append([max_steps, f"{bounded_temp:.2f}", f"{(c + k + 1) * state / 2**20:.2f}", masked])
    print(table(["max_steps", "bounded_while_loop grad temp (MiB)", "(C + K + 1) x state (MiB)", "masked scan grad temp (MiB)"], rows) + "\n")
    rows = []
    for lanes in (1, 8, 32):
        problem = ode_lanes_problem(2048, lanes, t_max=1.6)
        fn = jax.vmap(jax.grad(loss_fn(problem, bounded, 1024, 1), argnums=(0, 1)), in_axes=(0, None))
        rows.append([lanes, f"{temp(fn, *problem[3]):.2f}"])
    print(table(["vmap lanes (2,048 floats each, max_steps=1024)", "temp (MiB)"], rows) + "\n")


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
    parser.add_argument("--profile", action="store_true", help="where the gradient's time goes, both ODE bodies")
    parser.add_argument("--memory", action="store_true", help="the gradient's memory against max_steps and lanes")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 15)
    if args.quick:
        ode = ode_problem(256, t_end=0.3)
        cheap = cheap_ode_problem(256, t_end=0.3)
        ode_max, lanes, lane_n, vmax = 256, 3, 64, 128
        fixed, fixed_max = fixed_point_problem(32), 256
    else:
        ode = ode_problem(16384, t_end=1.6)
        cheap = cheap_ode_problem(16384, t_end=1.6)
        ode_max, lanes, lane_n, vmax = 4096, 8, 2048, 1024
        fixed, fixed_max = fixed_point_problem(512), 2048

    if args.memory:
        memory_tables()
        return None
    if args.profile:
        log(machine())
        profiles = [profile_case("ode, cheap body", cheap, ode_max, 1), profile_case("ode", ode, ode_max, 1)]
        print_profile(profiles)
        return profiles

    vmap_problem = ode_lanes_problem(lane_n, lanes, t_max=1.6 if not args.quick else 0.3)

    log(machine())
    results = []
    log("ode")
    results.append(run_case("ode", ode, ode_max, 1, rounds))
    log("ode, cheap body")
    results.append(run_case("ode, cheap body", cheap, ode_max, 1, rounds))
    log("ode, vmap")
    results.append(run_case("ode, vmap", vmap_problem, vmax, 1, rounds, vmapped=True))
    log("fixed point")
    results.append(run_case("fixed point", fixed, fixed_max, 0, rounds))

    print("# Gradients through while loops with a data-dependent trip count\n")
    print(machine() + f"; {rounds} interleaved rounds.\n")
    print("Time: median per call after compilation. x forward: median over rounds of the call's")
    print("time divided by the forward `lax.while_loop`'s in the same round; cpu x forward: the")
    print("same with the process's CPU time. Temp: the compiled program's temporary buffers")
    print("(deterministic). Trace+compile: one measurement, under the same load. Gradient: ok =")
    print("agrees with the masked scan's (rtol 2e-3); NaN = not finite.\n")
    summary = [
        ("bounded_while_loop", "bounded_while_loop: grad"),
        ("autolax.convert (Python while)", "autolax.convert(Python while): grad"),
        ('equinox "checkpointed"', 'equinox while_loop kind="checkpointed": grad'),
        ('equinox "bounded"', 'equinox while_loop kind="bounded": grad'),
        ("masked lax.scan", "masked lax.scan over max_steps="),
    ]
    print("## Summary: gradient time / forward `lax.while_loop` time (x forward)\n")
    cells = []
    for r in results:
        row = [f"{r['title']} ({r['steps']} iterations, max_steps={r['max_steps']})"]
        for _, key in summary:
            found = [v for k, v in r["ratios"].items() if k.startswith(key)]
            row.append(f"{found[0]:.1f}" if found else "-")
        cells.append(row)
    print(table(["program"] + [label for label, _ in summary], cells) + "\n")
    for r in results:
        head = f"## {r['title']}: {r['steps']} iterations, max_steps={r['max_steps']}"
        print(head + "\n")
        print(table(["variant", "time (ms)", "x forward", "cpu x forward", "temp (MiB)", "trace+compile (s)", "gradient"],
                    r["rows"]) + "\n")
    return results


if __name__ == "__main__":
    main()
