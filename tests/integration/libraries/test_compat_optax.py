"""Optax (issue 15): a training loop with early stopping, whole, under one ``autolax.jit``.
Compared with the same loop run as plain Python; ``trace_check`` shows the loop staged.
Optax is a test dependency (the ``compat`` extra)."""

import jax
import jax.numpy as jnp
import pytest

import autolax
from conftest import assert_close

optax = pytest.importorskip("optax")

XS = jnp.linspace(-1.0, 1.0, 16)
YS = 3.0 * XS - 0.5


def mse(params, xs, ys):
    return jnp.mean((params["w"] * xs + params["b"] - ys) ** 2)


def train(params, xs, ys, tol):
    """Adam until the loss is below ``tol`` or stops improving for 5 steps (at most 500)."""
    optimizer = optax.adam(0.1)
    state = optimizer.init(params)
    best = jnp.inf
    since_best = 0
    step = 0
    while step < 500:
        loss, grads = jax.value_and_grad(mse)(params, xs, ys)
        if loss < tol:
            break
        if loss < best:
            best = loss
            since_best = 0
        else:
            since_best += 1
            if since_best >= 5:
                break
        updates, state = optimizer.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        step += 1
    return params, best, step


PARAMS = {"w": jnp.float32(0.0), "b": jnp.float32(0.0)}


@pytest.mark.parametrize("tol", [1e-2, 1e-4, 0.0])
def test_early_stopping_under_one_jit(tol):
    expected = train(PARAMS, XS, YS, tol)
    got = autolax.jit(train)(PARAMS, XS, YS, tol)
    assert int(got[2]) == int(expected[2])
    assert_close(expected, got, rtol=1e-4, atol=1e-5)
    report = autolax.trace_check(train, PARAMS, XS, YS, tol)
    assert [r.became for r in report.rows if r.kind == "while"] == ["lax.while_loop"]


def test_the_stopping_rule_decides_at_run_time():
    fit = autolax.jit(train)
    fast = fit(PARAMS, XS, YS, 1e-1)
    slow = fit(PARAMS, XS, YS, 1e-3)
    assert 0 < int(fast[2]) < int(slow[2])


def train_scheduled(params, xs, ys):
    """A learning-rate schedule and gradient clipping chained; the epoch loop is a
    ``for`` with a data-dependent ``break``."""
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(optax.exponential_decay(0.5, 10, 0.9)))
    state = optimizer.init(params)
    loss = jnp.inf
    for _ in range(40):
        loss, grads = jax.value_and_grad(mse)(params, xs, ys)
        if loss < 0.05:
            break
        updates, state = optimizer.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, loss


def test_a_for_loop_with_break_and_an_optax_chain():
    expected = train_scheduled(PARAMS, XS, YS)
    assert_close(expected, autolax.jit(train_scheduled)(PARAMS, XS, YS), rtol=1e-4, atol=1e-5)
    report = autolax.trace_check(train_scheduled, PARAMS, XS, YS)
    loops = [r.became for r in report.rows if r.kind == "for"]
    assert loops and not any(b.startswith("python") for b in loops), str(report)


def test_optax_is_called_not_converted():
    source = autolax.to_source(train)
    assert "optimizer.update(grads, state, params)" in source
    assert "optax.apply_updates(params, updates)" in source
    autolax.jit(train)(PARAMS, XS, YS, 1e-2)
    for fn in (optax.apply_updates, optax.adam, optax.sgd, optax.chain):
        assert autolax.convert(fn) is fn
        assert "__autolax_conversion__" not in vars(fn)  # called from converted code, never converted
