"""Flax (issue 15): an NNX RNN with a Python loop over time, an NNX module that mutates
``self.x[...]`` (``self.x.value`` before Flax 0.12) in a staged loop, and a Linen method
(the user's method is converted, not Flax's wrapper around it). Each compares with the same
program as plain Python and asserts with ``trace_check`` that the loop was staged. Flax is a
test dependency (the ``compat`` extra)."""

import jax
import jax.numpy as jnp
import pytest

import autolax
from conftest import assert_close

flax = pytest.importorskip("flax")
from flax import linen, nnx  # noqa: E402


def loops(fn, *args, **kwargs):
    report = autolax.trace_check(fn, *args, **kwargs)
    return [r.became for r in report.rows if r.kind in ("for", "while")]


class RNN(nnx.Module):
    """An Elman RNN: a Python ``for`` over the time steps of the input, stopping early when
    the hidden state saturates."""

    def __init__(self, features, hidden, rngs):
        self.cell = nnx.Linear(features + hidden, hidden, rngs=rngs)
        self.hidden = hidden

    def __call__(self, xs):
        h = jnp.zeros(self.hidden)
        steps = 0
        for x in xs:
            h = jnp.tanh(self.cell(jnp.concatenate([x, h])))
            steps += 1
            if jnp.max(jnp.abs(h)) > 0.99:
                break
        return h, steps


RNN_ = RNN(3, 4, nnx.Rngs(0))
XS = jax.random.normal(jax.random.key(1), (6, 3))


@pytest.mark.parametrize("scale", [0.1, 20.0])
def test_nnx_rnn_with_a_python_loop_over_time(scale):
    xs = XS * scale
    expected = RNN_(xs)
    assert_close(expected, autolax.jit(RNN_)(xs), rtol=1e-4, atol=1e-5)
    assert_close(expected, nnx.jit(autolax.convert(RNN_))(xs), rtol=1e-4, atol=1e-5)
    assert loops(RNN_, xs) == ["lax.while_loop (grad: masked lax.scan)"]


def test_nnx_rnn_loss_under_nnx_grad():
    def loss(model, xs):
        h, _ = model(xs)
        return jnp.sum(h**2)

    expected = nnx.grad(loss)(RNN_, XS)
    got = nnx.jit(nnx.grad(autolax.convert(loss)))(RNN_, XS)
    assert_close(nnx.state(expected), nnx.state(got), rtol=1e-4, atol=1e-5)


class Accumulator(nnx.Module):
    """Mutates ``self.total[...]`` inside a loop on traced data."""

    def __init__(self):
        self.total = nnx.Variable(jnp.float32(0.0))
        self.count = nnx.Variable(jnp.int32(0))

    def __call__(self, xs):
        for x in xs:
            if x > 0:
                self.total[...] = self.total[...] + x
                self.count[...] = self.count[...] + 1
        return self.total[...]


def test_nnx_variable_mutated_in_a_staged_loop_is_refused_never_a_trace_time_update():
    xs = jnp.array([1.0, -2.0, 3.0, 0.5])
    model = Accumulator()
    with pytest.raises(autolax.StagedEffectError) as info:
        nnx.jit(autolax.convert(model))(xs)
    text = str(info.value)
    assert "Accumulator object is changed inside the `if`" in text and "test_compat_flax.py:" in text
    assert "Fix: keep the values in a local variable" in text
    assert float(model.total[...]) == 0.0  # no trace-time update left behind


def test_nnx_variable_mutated_in_a_staged_while():
    class Halver(nnx.Module):
        def __init__(self):
            self.steps = nnx.Variable(jnp.int32(0))

        def __call__(self, x):
            while x > 1.0:
                x = x / 2.0
                self.steps[...] = self.steps[...] + 1
            return x

    python, model = Halver(), Halver()
    python(jnp.float32(37.0))
    assert int(python.steps[...]) == 6
    with pytest.raises(autolax.StagedEffectError, match="Halver object is changed inside the `while` loop"):
        nnx.jit(autolax.convert(model))(jnp.float32(37.0))
    assert int(model.steps[...]) == 0


def test_the_rewrite_of_an_nnx_variable_update_carries_it():
    class Halver(nnx.Module):
        def __init__(self):
            self.steps = nnx.Variable(jnp.int32(0))

        def __call__(self, x):
            steps = self.steps[...]  # a local, carried through the staged loop
            while x > 1.0:
                x = x / 2.0
                steps = steps + 1
            self.steps[...] = steps
            return x

    python, model = Halver(), Halver()
    expected = python(jnp.float32(37.0))
    # The module is an argument of nnx.jit (NNX refuses updates of a module closed over).
    assert_close(expected, nnx.jit(autolax.convert(Halver.__call__))(model, jnp.float32(37.0)))
    assert int(model.steps[...]) == int(python.steps[...]) == 6

    def functional(graphdef, state, x):  # NNX's functional form, for trace_check
        m = nnx.merge(graphdef, state)
        return m(x), nnx.state(m)

    graphdef, state = nnx.split(Halver())
    assert loops(autolax.filter_jit(functional), graphdef, state, jnp.float32(37.0)) == ["lax.while_loop"]


class Decoder(linen.Module):
    """A Linen module whose method has a ``while`` on traced data."""

    features: int = 2

    @linen.compact
    def __call__(self, x):
        dense = linen.Dense(self.features)
        n = 0
        while jnp.sum(x) < 10.0 and n < 50:
            x = jnp.abs(dense(x)) + 1.0
            n += 1
        return x, n


def test_linen_method_is_converted_not_flaxs_wrapper():
    module = Decoder()
    x = jnp.array([0.1, 0.2])
    variables = module.init(jax.random.key(0), x)
    expected = module.apply(variables, x)
    converted = autolax.convert(Decoder.__call__)
    assert getattr(converted, "method_handler_wrapped", False)  # Flax's wrapper around the converted method
    got = jax.jit(lambda v, x: module.apply(v, x, method=converted))(variables, x)
    assert_close(expected, got, rtol=1e-4, atol=1e-5)
    source = autolax.to_source(Decoder.__call__)
    assert "def __call__(self, x):" in source and "ops.while_loop" in source


def test_linen_apply_of_a_converted_method_under_jax_jit():
    class Stepper(linen.Module):
        @linen.compact
        def __call__(self, x):
            scale = self.param("scale", lambda key: jnp.float32(1.5))
            for _ in range(4):
                if x > 2.0:
                    x = x - scale
                else:
                    x = x * scale
            return x

    module = Stepper()
    variables = module.init(jax.random.key(0), 1.0)
    expected = module.apply(variables, 1.0)
    converted = autolax.convert(Stepper.__call__)
    got = jax.jit(lambda v, x: module.apply(v, x, method=converted))(variables, 1.0)
    assert_close(expected, got)


def test_flax_is_called_not_converted():
    def uses_flax(x):
        if jnp.sum(x) > 0:
            x = nnx.relu(x)
        return linen.softmax(x)

    source = autolax.to_source(uses_flax)
    assert "nnx.relu(x)" in source and "linen.softmax(x)" in source
    assert_close(uses_flax(XS[0]), autolax.jit(uses_flax)(XS[0]))
    for fn in (nnx.relu, linen.softmax, nnx.Linear.__call__, nnx.split, nnx.merge):
        assert autolax.convert(fn) is fn
        assert "__autolax_conversion__" not in vars(fn)  # called from converted code, never converted


def test_linen_apply_runs_the_converted_method():
    """``autolax.jit(module.apply)``: Flax calls the method from its own code, so autolax
    hands ``apply`` the converted method (``__call__``, or the one named by ``method=``)."""
    module = Decoder()
    x = jnp.array([0.1, 0.2])
    variables = module.init(jax.random.key(0), x)
    expected = module.apply(variables, x)
    assert_close(expected, autolax.jit(module.apply)(variables, x), rtol=1e-4, atol=1e-5)
    assert_close(expected, jax.jit(autolax.convert(module.apply))(variables, x), rtol=1e-4, atol=1e-5)
    by_name = autolax.jit(module.apply, static_argnames="method")(variables, x, method="__call__")
    assert_close(expected, by_name, rtol=1e-4, atol=1e-5)
    assert loops(module.apply, variables, x) == ["lax.while_loop"]
    assert "def __call__(self, x):" in autolax.to_source(module.apply)


def test_linen_apply_called_from_converted_code():
    module = Decoder()
    x = jnp.array([0.1, 0.2])
    variables = module.init(jax.random.key(0), x)

    def loss(variables, x):
        y, n = module.apply(variables, x)
        return jnp.sum(y) + n

    assert_close(loss(variables, x), autolax.jit(loss)(variables, x), rtol=1e-4, atol=1e-5)
    assert loops(loss, variables, x) == ["lax.while_loop"]


def test_linen_init_of_a_method_with_a_staged_loop():
    class Scaled(linen.Module):
        @linen.compact
        def __call__(self, x):
            scale = self.param("scale", lambda key: jnp.float32(0.5))
            while jnp.sum(x) > 1.0:
                x = x * scale
            return x

    module = Scaled()
    x = jnp.array([3.0, 4.0])
    expected = module.init_with_output(jax.random.key(0), x)
    got = autolax.jit(module.init_with_output)(jax.random.key(0), x)
    assert_close(expected[0], got[0])
    assert_close(expected[1]["params"]["scale"], got[1]["params"]["scale"])


def test_linen_apply_of_a_submodule_by_name_is_flaxs():
    class Outer(linen.Module):
        def setup(self):
            self.inner = linen.Dense(2)

        def __call__(self, x):
            while jnp.sum(x) > 1.0:
                x = x * 0.5
            return self.inner(x)

    module = Outer()
    x = jnp.array([3.0, 4.0])
    variables = module.init(jax.random.key(0), x)
    # Flax resolves the name itself; where it refuses (a setup submodule is not an
    # attribute of the unbound module here), autolax raises what Flax raises.
    try:
        expected = module.apply(variables, x, method="inner")
    except AttributeError as err:
        with pytest.raises(AttributeError, match="no attribute \"inner\""):
            autolax.jit(module.apply, static_argnames="method")(variables, x, method="inner")
        assert "inner" in str(err)
    else:
        got = autolax.jit(module.apply, static_argnames="method")(variables, x, method="inner")
        assert_close(expected, got, rtol=1e-5)
    assert_close(module.apply(variables, x), autolax.jit(module.apply)(variables, x), rtol=1e-5)
