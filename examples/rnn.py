"""A recurrent network over a sequence, collecting its hidden states with ``list.append``.

This is how an RNN is written in plain Python: loop over the time steps, update the hidden
state, append it to a list, and stack the list at the end. Under plain ``jax.jit`` the loop
is unrolled -- the program grows with the sequence length and so does its compile time.
``autolax.jit`` turns it into one ``lax.scan`` whose appended states are the scan's stacked
outputs, so ``jnp.stack(states)`` costs nothing and the program has the same size for 10
time steps or 10,000. The scan is reverse-differentiable: ``jax.grad(loss)`` works.

    >>> import autolax
    >>> states, last = autolax.jit(run_rnn)(params, xs, h0)
"""

import jax.numpy as jnp
import numpy as np


def init_params(seed, n_in, n_hidden):
    """Small random float32 weights ``(w_in, w_rec, bias, w_out)``."""
    rng = np.random.default_rng(seed)
    w_in = rng.normal(size=(n_hidden, n_in)) / np.sqrt(n_in)
    w_rec = rng.normal(size=(n_hidden, n_hidden)) / np.sqrt(n_hidden)
    w_out = rng.normal(size=n_hidden) / np.sqrt(n_hidden)
    return tuple(w.astype(np.float32) for w in (w_in, w_rec, np.zeros(n_hidden), w_out))


def run_rnn(params, xs, h):
    """Runs an Elman RNN over ``xs`` (time, features); returns (all hidden states, last state)."""
    w_in, w_rec, bias, _ = params
    states = []
    for x in xs:
        h = jnp.tanh(w_in @ x + w_rec @ h + bias)
        states.append(h)
    return jnp.stack(states), h


def loss(params, xs, targets, h0):
    """Mean squared error of a linear readout of every hidden state."""
    states, _ = run_rnn(params, xs, h0)
    predictions = states @ params[3]
    return jnp.mean((predictions - targets) ** 2)
