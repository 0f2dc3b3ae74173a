"""``autolax.jit``'s call: a call that does not trace is ``jax.jit``'s call and nothing more;
what a trace finds (a run-time check, an appended list returned) holds for the call that
traced and every later one, whichever call, ``.lower`` or ``.trace`` made the trace."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax


def raises_when_asked(x, check):
    if check:  # static: only the trace with check=True stages the `raise`
        if x > 0:
            raise ValueError(f"positive: {x}")
    return x * 2


def outcome(fn, *args):
    """What ``fn(*args)`` returns, or its error's class and first line (pytest adds lines to
    the message of an ``assert`` in this file when it runs as Python)."""
    try:
        return "returns", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the outcome compared
        return type(exc), str(exc).split("\n")[0]


python_outcome = outcome


def test_a_later_trace_that_stages_a_check_raises_pythons_error():
    f = autolax.jit(raises_when_asked, static_argnums=1)
    for _ in range(2):  # traced, then the steady state
        assert float(f(1.0, False)) == raises_when_asked(1.0, False)
    # This call traces again (check=True) and stages the check: the call itself raises.
    assert outcome(f, 1.0, True) == python_outcome(raises_when_asked, 1.0, True)
    assert float(f(-1.0, True)) == raises_when_asked(-1.0, True)
    assert outcome(f, 3.0, True) == python_outcome(raises_when_asked, 3.0, True)
    assert float(f(1.0, False)) == raises_when_asked(1.0, False)


@pytest.mark.parametrize("method", ["lower", "trace"])
def test_a_check_staged_by_lower_or_trace_is_raised_by_the_calls_after(method):
    f = autolax.jit(raises_when_asked, static_argnums=1)
    getattr(f, method)(1.0, True)  # the trace jax.jit keeps: the call below does not trace
    assert outcome(f, 1.0, True) == python_outcome(raises_when_asked, 1.0, True)
    assert float(f(-2.0, True)) == raises_when_asked(-2.0, True)


def doubles_when_asked(xs, collect):
    out = []
    if collect:  # static: only the trace with collect=True returns an appended list
        for x in xs:
            out.append(x * 2)
    return out


def test_a_later_trace_that_returns_an_appended_list_returns_a_list():
    f = autolax.jit(doubles_when_asked, static_argnums=1)
    xs = jnp.arange(3.0)
    for _ in range(2):
        assert f(xs, False) == [] and type(f(xs, False)) is list
    for _ in range(2):
        got = f(xs, True)
        assert type(got) is list
        assert [float(v) for v in got] == [float(v) for v in doubles_when_asked(np.arange(3.0), True)]


def checks_then_stacks_nothing(xs, check):
    if check:
        for x in xs:
            assert x > 0, "not positive"
        rows = []
        return jnp.stack(rows).max()  # fails while tracing, after the staged assert
    return xs.sum()


@pytest.mark.parametrize("xs", [np.array([1.0, -1.0], np.float32), np.array([1.0, 2.0], np.float32)])
def test_a_later_trace_that_fails_after_a_check_raises_pythons_error(xs):
    # Python raises the assert's error where an item is not positive, else the ValueError of
    # `jnp.stack([])`: only running the function as Python on the arguments tells which.
    f = autolax.jit(checks_then_stacks_nothing, static_argnums=1)
    for _ in range(2):
        assert float(f(xs, False)) == float(checks_then_stacks_nothing(xs, False))
    expected = python_outcome(checks_then_stacks_nothing, xs, True)
    assert expected[0] in (AssertionError, ValueError)
    assert outcome(f, xs, True) == expected


def inner_check(x):
    if x > 0:
        raise ValueError(f"inner: {x}")
    return x


def test_an_autolax_jit_object_called_inside_another_ones_trace():
    inner = autolax.jit(inner_check)
    outer = autolax.jit(lambda x, y: inner(x) + inner(y))
    assert float(inner(-1.0)) == -1.0  # inner's steady state, before it is called while tracing outer
    assert float(outer(-1.0, -2.0)) == -3.0
    assert float(outer(-1.0, -2.0)) == -3.0
    assert outcome(inner, 2.0) == python_outcome(inner_check, 2.0)


def test_wrapped_is_the_converted_function():
    f = autolax.jit(raises_when_asked, static_argnums=1)
    assert f.__wrapped__.__autolax_converted__
    assert f.__wrapped__(2.0, False) == raises_when_asked(2.0, False)
    assert outcome(f.__wrapped__, 2.0, True) == python_outcome(raises_when_asked, 2.0, True)


def test_eval_shape():
    f = autolax.jit(raises_when_asked, static_argnums=1)
    shape = f.eval_shape(jax.ShapeDtypeStruct((), jnp.float32), True)
    assert shape.shape == () and shape.dtype == jnp.float32
    assert outcome(f, 1.0, True) == python_outcome(raises_when_asked, 1.0, True)


def add(x, k=1):
    return x + k


def test_a_steady_call_runs_no_python_of_autolax(monkeypatch):
    # JAX's C++ code runs the program of a signature it has seen (argument types, shapes,
    # keyword names): the Python path runs once per signature, then never.
    from autolax import api

    misses = []
    missed = api.Jitted._missed

    def counted(self, args, kwargs):
        misses.append(args)
        return missed(self, args, kwargs)

    monkeypatch.setattr(api.Jitted, "_missed", counted)
    f = autolax.jit(add)
    x = jnp.ones(3)
    for k in range(4):
        assert float(f(x)[0]) == add(1.0)
        assert float(f(np.float32(k))) == add(np.float32(k))
        assert float(f(x, k=3)[0]) == add(1.0, k=3)
    assert len(misses) == 3


def doubles_with_a_check(x, n):
    if x > 100:
        raise ValueError(f"too large: {x}")
    for _ in range(n):
        x = x * 2
    return x


def test_a_program_with_checks_reads_them_on_every_call():
    # The C++ code never runs a program that returns checks on its own: each call reads them.
    f = autolax.jit(doubles_with_a_check, static_argnums=1)
    for v in (1.0, 2.0, 3.0, 4.0):
        assert float(f(jnp.float32(v), 2)) == doubles_with_a_check(v, 2)
    for v in (101.0, 1.0, 200.0):
        assert outcome(f, jnp.float32(v), 2) == python_outcome(doubles_with_a_check, v, 2)


def doubles_while_below(x, limit):
    while x < limit:
        autolax.loop_options(max_steps=16)
        x = x * 2
    return x


def test_transforms_after_the_steady_state():
    # Tracers (jvp's, grad's, vmap's) are never the C++ code's: each such call takes the
    # Python path, jvp's with the loop's forward form.
    f = autolax.jit(doubles_while_below)
    for _ in range(3):
        assert float(f(jnp.float32(1.5), 10.0)) == doubles_while_below(1.5, 10.0)
    primal, tangent = jax.jvp(lambda x: f(x, 10.0), (jnp.float32(1.5),), (jnp.float32(1.0),))
    assert (float(primal), float(tangent)) == (12.0, 8.0)  # 1.5 doubled three times
    assert float(jax.grad(lambda x: f(x, 10.0))(jnp.float32(1.5))) == 8.0
    assert [float(v) for v in jax.vmap(lambda x: f(x, 10.0))(jnp.array([1.5, 6.0]))] == [12.0, 12.0]
    assert float(f(jnp.float32(1.5), 10.0)) == 12.0


def test_the_object_holds_its_dispatcher_not_the_reverse():
    import weakref

    f = autolax.jit(add)
    assert float(f(jnp.float32(1.0))) == 2.0
    ref = weakref.ref(f)
    del f
    assert ref() is None  # freed as a jax.jit object is, with no collection
