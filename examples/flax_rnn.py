"""An Elman RNN in Flax NNX with a Python loop over time that stops at saturation.

``__call__`` runs ``for x in xs`` over the time steps and ``break``s when the hidden state
saturates; it counts the steps it took. ``autolax`` stages the loop as one
``lax.while_loop`` (differentiated as a masked ``lax.scan`` over the time steps), so
``nnx.jit`` takes the converted method, and ``nnx.grad`` of a loss through it works.

    >>> import autolax, jax
    >>> from flax import nnx
    >>> model = RNN(3, 8, nnx.Rngs(0))
    >>> h, steps = nnx.jit(autolax.convert(RNN.__call__))(model, jax.numpy.ones((5, 3)))
"""

import jax
import jax.numpy as jnp
from flax import nnx


class RNN(nnx.Module):
    def __init__(self, features, hidden, rngs):
        self.cell = nnx.Linear(features + hidden, hidden, rngs=rngs)
        self.hidden = hidden

    def __call__(self, xs, saturation=0.99):
        h = jnp.zeros(self.hidden)
        steps = 0
        for x in xs:
            h = jnp.tanh(self.cell(jnp.concatenate([x, h])))
            steps += 1
            if jnp.max(jnp.abs(h)) > saturation:
                break
        return h, steps


def loss(model, xs):
    h, _ = model(xs)
    return jnp.sum(h**2)


if __name__ == "__main__":
    import autolax

    model = RNN(3, 8, nnx.Rngs(0))
    xs = jax.random.normal(jax.random.key(1), (10, 3))
    print(nnx.jit(autolax.convert(RNN.__call__))(model, xs))
    grads = nnx.jit(nnx.grad(autolax.convert(loss)))(model, xs)
    print(grads.cell.kernel[...].shape)
