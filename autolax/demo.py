"""``autolax demo``: convert a bundled program, show the result, prove it, time it."""

from __future__ import annotations

import inspect
import time

import jax
import numpy as np

import autolax
from autolax import interrupt
from autolax.check import count_equations
from autolax.examples import spring


def _first_call(fn, *args):
    start = time.perf_counter()
    out = interrupt.run(lambda: fn(*args))  # Ctrl-C stops the demo even inside XLA
    return out, time.perf_counter() - start


def run(n_steps: int = 1000, out=print) -> dict:
    """Runs the demo; returns the measured numbers (also printed through ``out``)."""
    out("autolax demo: plain Python control flow, staged for jax.jit\n")
    out("1. The program (autolax/examples/spring.py):\n")
    out(inspect.getsource(spring.settle))
    out("2. What autolax.jit runs (autolax.to_source):\n")
    out(autolax.to_source(spring.settle))

    out("3. Plain jax.jit cannot trace the data-dependent `while`:")
    try:
        jax.jit(spring.settle)(1.0, 0.0, 1e-3)
        out("   (it could)")
    except jax.errors.TracerBoolConversionError as exc:
        out(f"   {type(exc).__name__}: {str(exc).splitlines()[0]}")
    settle = autolax.jit(spring.settle)
    x, v, steps = interrupt.run(lambda: settle(1.0, 0.0, 1e-3))
    px, pv, psteps = spring.settle(1.0, 0.0, 1e-3)
    out(f"   autolax.jit: {int(steps)} steps, x = {float(x):.6f}   (plain Python: {psteps} steps, x = {px:.6f})\n")

    out("4. autolax.trace_check proves nothing was unrolled:\n")
    out(str(autolax.trace_check(settle, 1.0, 0.0, 1e-3)) + "\n")

    out(f"5. A fixed {n_steps}-step loop: first call (trace + compile + run)")
    plain = jax.jit(spring.trajectory_energy, static_argnums=2)
    staged = autolax.jit(spring.trajectory_energy, static_argnums=2)
    staged_value, staged_s = _first_call(staged, 1.0, 0.0, n_steps)
    plain_value, plain_s = _first_call(plain, 1.0, 0.0, n_steps)
    report = autolax.trace_check(staged, 1.0, 0.0, n_steps)
    unrolled_eqns = _equations(jax.make_jaxpr(spring.trajectory_energy, static_argnums=2)(1.0, 0.0, n_steps))
    out(f"   jax.jit (Python loop, unrolled): {plain_s:8.3f} s   {unrolled_eqns:6d} jaxpr equations")
    out(f"   autolax.jit (lax.scan):          {staged_s:8.3f} s   {report.n_equations:6d} jaxpr equations")
    out(
        f"   speed-up: {plain_s / staged_s:.0f}x;  "
        f"same result: {bool(np.allclose(plain_value, staged_value, rtol=1e-4))}"
    )
    return {"plain_s": plain_s, "autolax_s": staged_s, "steps": int(steps), "python_steps": psteps}


def _equations(closed_jaxpr) -> int:
    return count_equations(closed_jaxpr.jaxpr)
