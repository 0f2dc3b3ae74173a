"""An ODE integrator with adaptive step size: ``while t < t_end`` with step rejection.

It integrates the Lotka-Volterra predator-prey equations with Heun's method, using the
difference between the Heun and Euler steps as the local error estimate. A step whose error
is too large is rejected (``t`` and ``y`` stay put) and retried with a smaller ``h``; an
accepted step lets ``h`` grow. How many steps that takes depends on the data, so plain
``jax.jit`` cannot trace the loop; ``autolax.jit`` stages it as one ``lax.while_loop`` with
the accept/reject ``if`` inside it as a ``lax.cond``.

    >>> import autolax, jax.numpy as jnp
    >>> autolax.jit(integrate)(jnp.array([10.0, 5.0]), 5.0)
"""

import jax.numpy as jnp

ALPHA, BETA, DELTA, GAMMA = 1.1, 0.4, 0.1, 0.4


def lotka_volterra(t, y):
    """Prey ``y[0]`` and predators ``y[1]``."""
    prey, predators = y[0], y[1]
    return jnp.stack([ALPHA * prey - BETA * prey * predators, DELTA * prey * predators - GAMMA * predators])


def integrate(y0, t_end, rtol=1e-3, h=0.1, max_steps=10_000):
    """Integrates from ``t = 0`` to ``t_end``; returns (y(t_end), accepted steps, rejected steps)."""
    t = 0.0
    y = y0
    accepted = 0
    rejected = 0
    while t < t_end and accepted + rejected < max_steps:
        if t + h > t_end:
            h = t_end - t  # land exactly on t_end
        k1 = lotka_volterra(t, y)
        y_euler = y + h * k1
        k2 = lotka_volterra(t + h, y_euler)
        y_heun = y + 0.5 * h * (k1 + k2)
        err = jnp.max(jnp.abs(y_heun - y_euler))
        tol = rtol * jnp.maximum(1.0, jnp.max(jnp.abs(y)))
        if err <= tol:
            t = t + h
            y = y_heun
            accepted += 1
        else:
            rejected += 1
        # The usual controller: aim at err == tol, but never change h by more than 5x.
        h = h * jnp.clip(0.9 * jnp.sqrt(tol / jnp.maximum(err, 1e-12)), 0.2, 5.0)
    return y, accepted, rejected
