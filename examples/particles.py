"""A particle simulation that stops as soon as a particle leaves the box.

Particles move under gravity and bounce off the floor; the simulation reports the first
step at which any particle crosses a wall, and which particle it was -- by returning from
inside the nested loops, the natural way to write "stop at the first one". ``autolax.jit``
lowers the early ``return`` to flags in the carried state: both loops become
``lax.while_loop``s that stop once a particle is out (differentiated as masked
``lax.scan``s under ``jax.grad``), and the ``or`` of two traced comparisons a
``jnp.logical_or``.

    >>> import autolax
    >>> step, particle, pos = autolax.jit(first_escape)(pos, vel)
"""

import jax.numpy as jnp

GRAVITY = -9.81
RESTITUTION = 0.9  # fraction of speed kept by a bounce


def first_escape(pos, vel, n_steps=200, dt=0.01, width=1.0):
    """Simulates particles at ``pos`` (n, 2) with velocities ``vel`` (n, 2) in the box
    ``[0, width] x [0, inf)``. Returns (step, particle, positions) for the first particle
    that leaves through a side wall, or (-1, -1, positions) if none does in ``n_steps``.

    ``vel`` is updated in place when it is a NumPy array (under ``autolax.jit`` the caller's
    array is left alone, as always in JAX)."""
    for step in range(n_steps):
        vel[:, 1] += dt * GRAVITY
        pos = pos + dt * vel
        # Bounce off the floor: reflect the height and the vertical speed.
        below = pos[:, 1] < 0.0
        pos[:, 1] = jnp.where(below, -pos[:, 1], pos[:, 1])
        vel[:, 1] = jnp.where(below, -RESTITUTION * vel[:, 1], vel[:, 1])
        for i in range(pos.shape[0]):
            if pos[i, 0] < 0.0 or pos[i, 0] > width:
                return step, i, pos
    return -1, -1, pos
