"""Equinox (issue 15): modules with Python control flow in ``__call__``, ``autolax.filter_jit``
with Equinox's semantics, ``eqx.filter_jit`` / ``eqx.filter_grad`` of converted code, and an
adaptive-step ODE solver. Each compares with the same program run as plain Python (eagerly,
where Python decides every loop) and asserts with ``trace_check`` that the loops were staged.

Equinox is a test dependency (the ``compat`` extra); the import guard only keeps a bare
``pip install autolax`` able to run the rest of the suite.
"""

import importlib.util
import pathlib

import jax
import jax.numpy as jnp
import pytest

import autolax
from conftest import assert_close

eqx = pytest.importorskip("equinox")


def became(fn, *args, kind=None, **kwargs):
    """What each loop / if that ``trace_check`` saw became (``kind``: only those)."""
    report = autolax.trace_check(fn, *args, **kwargs)
    return [r.became for r in report.rows if kind is None or r.kind == kind]


class Doubler(eqx.Module):
    """A module whose ``__call__`` runs a ``while`` until a threshold."""

    scale: jax.Array
    limit: float = eqx.field(static=True)

    def __call__(self, x):
        steps = 0
        while x < self.limit:
            x = x * self.scale + 1.0
            steps += 1
        return x, steps


DOUBLER = Doubler(jnp.float32(2.0), 100.0)


@pytest.mark.parametrize("x", [0.5, 3.0, 250.0])
def test_a_module_with_a_while_in_call(x):
    expected = DOUBLER(jnp.float32(x))
    assert_close(expected, autolax.jit(DOUBLER)(jnp.float32(x)))
    assert_close(expected, eqx.filter_jit(autolax.convert(DOUBLER))(jnp.float32(x)))
    assert_close(expected, autolax.filter_jit(DOUBLER)(jnp.float32(x)))
    assert became(DOUBLER, jnp.float32(x), kind="while") == ["lax.while_loop"]


class MLP(eqx.Module):
    """A small MLP applied a data-dependent number of times (a fixed point iteration)."""

    layers: list
    activation: object  # a function: a non-array leaf, static under filter_jit
    depth: int

    def __init__(self, key, width=4, depth=2):
        keys = jax.random.split(key, depth)
        self.layers = [eqx.nn.Linear(width, width, key=k) for k in keys]
        self.activation = jnp.tanh
        self.depth = depth

    def __call__(self, x):
        for layer in self.layers:  # a Python list of modules: Python's loop
            x = self.activation(layer(x))
            if jnp.linalg.norm(x) > 1.0:
                x = x / jnp.linalg.norm(x)
        return x


MLP_ = MLP(jax.random.key(0))
X4 = jnp.array([0.3, -1.2, 2.0, 0.1])


def test_filter_jit_makes_non_array_fields_static():
    expected = MLP_(X4)
    assert_close(expected, autolax.filter_jit(MLP_)(X4))
    assert_close(expected, eqx.filter_jit(autolax.convert(MLP_))(X4))
    # `self.activation` (a function) is static; the loop over the list of layers is
    # Python's, the `if` on the norm in it is staged (once per layer).
    ifs = became(autolax.filter_jit(MLP_), X4, kind="if")
    assert ifs and set(ifs) <= {"lax.cond", "lax.select"}, ifs
    # As an argument, a module with a function-valued field needs filtering (as with Equinox).
    apply = lambda model, x: model(x)  # noqa: E731
    assert_close(expected, autolax.filter_jit(apply)(MLP_, X4))
    with pytest.raises(TypeError):
        autolax.jit(apply)(MLP_, X4)


def test_filter_jit_of_a_function_taking_a_module():
    def apply_until_small(model, x):
        n = 0
        while jnp.abs(x).max() > 0.2 and n < 20:
            x = 0.5 * model(x)
            n += 1
        return x, n

    expected = apply_until_small(MLP_, X4)
    assert_close(expected, autolax.filter_jit(apply_until_small)(MLP_, X4))
    assert_close(expected, eqx.filter_jit(autolax.convert(apply_until_small))(MLP_, X4))
    assert "lax.while_loop" in became(autolax.filter_jit(apply_until_small), MLP_, X4, kind="while")


def loss(model, x):
    y = x
    for _ in range(3):
        y = model(y)
        if jnp.sum(y) > 0:  # traced: staged as a cond (or select)
            y = y * 0.5
    return jnp.sum(y**2)


def test_filter_grad_inside_converted_code():
    expected = eqx.filter_grad(loss)(MLP_, X4)  # Python control flow on concrete values

    def grads(model, x):
        return eqx.filter_grad(loss)(model, x)  # `loss` handed to Equinox: converted

    got = autolax.filter_jit(grads)(MLP_, X4)
    assert_close(eqx.filter(expected, eqx.is_array), eqx.filter(got, eqx.is_array), rtol=1e-4)
    rows = became(autolax.filter_jit(grads), MLP_, X4, kind="if")
    assert rows and all(r in ("lax.cond", "lax.select") for r in rows), rows


def test_filter_value_and_grad_of_a_converted_loss_under_eqx_filter_jit():
    expected_value, expected_grad = eqx.filter_value_and_grad(loss)(MLP_, X4)
    value, grad = eqx.filter_jit(eqx.filter_value_and_grad(autolax.convert(loss)))(MLP_, X4)
    assert_close(expected_value, value, rtol=1e-4)
    assert_close(eqx.filter(expected_grad, eqx.is_array), eqx.filter(grad, eqx.is_array), rtol=1e-4)


def _example(name):
    """examples/<name>.py, imported from its file (autolax reads its real source)."""
    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"compat_examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The example's adaptive-step solver: Heun's method with an embedded Euler error estimate;
# the number of steps, and which are accepted, depend on the data.
AdaptiveHeun = _example("equinox_ode").AdaptiveHeun

SOLVER = AdaptiveHeun(eqx.nn.MLP(2, 2, 8, 1, key=jax.random.key(1)), 1e-3)


@pytest.mark.parametrize("t1", [0.5, 2.0])
def test_adaptive_step_solver(t1):
    y0 = jnp.array([1.0, -0.5])
    expected = SOLVER(y0, t1)
    got = autolax.filter_jit(SOLVER)(y0, jnp.float32(t1))
    assert_close(expected[0], got[0], rtol=1e-4, atol=1e-5)
    assert (int(got[1]), int(got[2])) == (int(expected[1]), int(expected[2]))
    assert expected[1] > 3  # several steps, some data-dependent
    assert [b.split(" (")[0] for b in became(autolax.filter_jit(SOLVER), y0, jnp.float32(t1), kind="while")] == [
        "lax.while_loop"]  # "lax.while_loop (grad: checkpointed)": its bound lets jax.grad through


def test_the_solver_is_differentiable_through_a_bounded_loop():
    def final_norm(solver, y0):
        y, _, _ = solver(y0, 1.0)
        return jnp.sum(y**2)

    y0 = jnp.array([1.0, -0.5])
    expected = jax.grad(final_norm, argnums=1)(SOLVER, y0)
    got = autolax.filter_jit(eqx.filter_grad(autolax.convert(lambda y: final_norm(SOLVER, y))))(y0)
    assert_close(expected, got, rtol=1e-3, atol=1e-5)


def test_equinox_is_called_not_converted():
    def uses_equinox(model, x):
        if jnp.sum(x) > 0:
            x = eqx.nn.Lambda(jnp.tanh)(x)
        params, static = eqx.partition(model, eqx.is_array)
        return eqx.combine(params, static)(x)

    source = autolax.to_source(uses_equinox)
    assert "eqx.partition(model, eqx.is_array)" in source and "eqx.combine(params, static)" in source
    assert_close(uses_equinox(MLP_, X4), autolax.filter_jit(uses_equinox)(MLP_, X4))
    for fn in (eqx.partition, eqx.combine, eqx.filter, eqx.is_array, eqx.nn.Linear.__call__):
        assert autolax.convert(fn) is fn
        assert "__autolax_conversion__" not in vars(fn)  # called from converted code, never converted
