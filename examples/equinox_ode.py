"""A neural ODE in Equinox with an adaptive step size: ``while t < t1`` inside a module.

The vector field is an ``eqx.nn.MLP``; the solver is an ``eqx.Module`` whose ``__call__``
takes Heun steps, estimates each step's error against an Euler step, rejects the steps
whose error is above ``tol`` and adapts the step size. The number of steps depends on the
data, so ``eqx.filter_jit`` cannot trace the loop as written; ``autolax.filter_jit`` (the
same filtering: arrays traced, everything else static) stages it as one ``lax.while_loop``.
The loop states a bound (``autolax.loop_options``), so ``jax.grad`` goes through it too.

    >>> import autolax, jax, jax.numpy as jnp
    >>> solver = make_solver(jax.random.key(0))
    >>> y1, accepted, rejected = autolax.filter_jit(solver)(jnp.array([1.0, -0.5]), 2.0)
"""

import equinox as eqx
import jax
import jax.numpy as jnp

import autolax


class AdaptiveHeun(eqx.Module):
    """Solves ``dy/dt = field(y)`` from ``t = 0`` to ``t1``; returns (y(t1), accepted, rejected)."""

    field: eqx.nn.MLP
    tol: float = eqx.field(static=True)

    def __call__(self, y, t1):
        t = 0.0
        dt = 0.1
        accepted = 0
        rejected = 0
        while t < t1:
            autolax.loop_options(max_steps=1000)  # a bound: jax.grad can go through the loop
            dt = jnp.minimum(dt, t1 - t)
            k1 = self.field(y)
            k2 = self.field(y + dt * k1)
            error = jnp.max(jnp.abs(0.5 * dt * (k2 - k1)))
            if error <= self.tol:
                y = y + 0.5 * dt * (k1 + k2)
                t = t + dt
                accepted += 1
            else:
                rejected += 1
            dt = dt * jnp.clip(0.9 * jnp.sqrt(self.tol / (error + 1e-12)), 0.2, 5.0)
        return y, accepted, rejected


def make_solver(key, tol=1e-3):
    return AdaptiveHeun(eqx.nn.MLP(2, 2, 16, 2, activation=jnp.tanh, key=key), tol)


def final_energy(solver, y0):
    """A loss through the solve: ``eqx.filter_grad`` of it gives the field's gradients."""
    y1, _, _ = solver(y0, 1.0)
    return jnp.sum(y1**2)


if __name__ == "__main__":
    solver = make_solver(jax.random.key(0))
    y0 = jnp.array([1.0, -0.5])
    print(autolax.filter_jit(solver)(y0, 2.0))
    grads = autolax.filter_jit(eqx.filter_grad(autolax.convert(final_energy)))(solver, y0)
    print(jax.tree_util.tree_leaves(grads)[0])
