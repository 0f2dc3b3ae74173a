"""A damped spring, integrated with explicit Euler steps -- written as plain Python.

``settle`` has a data-dependent ``while`` loop with an early exit: plain ``jax.jit`` cannot
trace it at all. ``trajectory_energy`` has a fixed-length loop: plain ``jax.jit`` traces it,
but unrolls all ``n_steps`` iterations into the program.
"""

STIFFNESS = 4.0
DAMPING = 0.3
DT = 0.01


def settle(x, v, tol):
    """Steps until the spring's energy drops below ``tol``; returns the state and step count."""
    steps = 0
    while 0.5 * (STIFFNESS * x * x + v * v) > tol:
        a = -STIFFNESS * x - DAMPING * v
        v = v + DT * a
        x = x + DT * v
        steps += 1
        if steps >= 100_000:
            break
    return x, v, steps


def trajectory_energy(x, v, n_steps):
    """Total energy summed along a trajectory of ``n_steps`` steps."""
    total = 0.0
    for i in range(n_steps):
        a = -STIFFNESS * x - DAMPING * v
        v = v + DT * a
        x = x + DT * v
        total += 0.5 * (STIFFNESS * x * x + v * v)
    return total
