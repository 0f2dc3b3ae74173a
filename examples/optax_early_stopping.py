"""A training loop with early stopping, whole, under one ``autolax.jit``.

Fits a linear model with ``optax.adam`` until the loss is below ``tol`` or has not improved
for ``patience`` steps. The stopping rule depends on the losses, so ``jax.jit`` of this
Python loop fails; ``autolax.jit`` stages it as one ``lax.while_loop`` (with the ``break``s
folded into its condition), and the optimizer's own code runs as it is.

    >>> import autolax
    >>> params, best, steps = autolax.jit(train)(init_params(), *make_data(), 1e-4)
"""

import jax
import jax.numpy as jnp
import optax


def make_data(n=32, seed=0):
    xs = jax.random.normal(jax.random.key(seed), (n, 3))
    ys = xs @ jnp.array([1.5, -2.0, 0.5]) + 0.3
    return xs, ys


def init_params():
    return {"w": jnp.zeros(3), "b": jnp.float32(0.0)}


def mse(params, xs, ys):
    return jnp.mean((xs @ params["w"] + params["b"] - ys) ** 2)


def train(params, xs, ys, tol, patience=5, max_steps=1000, learning_rate=0.05):
    """Returns (params, best loss, steps taken)."""
    optimizer = optax.adam(learning_rate)
    state = optimizer.init(params)
    best = jnp.inf
    since_best = 0
    step = 0
    while step < max_steps:
        loss, grads = jax.value_and_grad(mse)(params, xs, ys)
        if loss < tol:
            break
        if loss < best:
            best = loss
            since_best = 0
        else:
            since_best += 1
            if since_best >= patience:
                break
        updates, state = optimizer.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        step += 1
    return params, best, step


if __name__ == "__main__":
    import autolax

    params, best, steps = autolax.jit(train)(init_params(), *make_data(), 1e-4)
    print(f"stopped after {int(steps)} steps, best loss {float(best):.2e}")
