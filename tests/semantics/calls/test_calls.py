"""Calls from converted code: user functions are converted, libraries are not (issue 3)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_matches


def clip_positive(x):
    if x > 0:
        return x
    return 0.0 * x


def grow(z):
    while z < 10:
        z = z * 2
    return z


class Stepper:
    def __init__(self, w):
        self.w = w

    def step(self, x):
        if x > self.w:
            return x - self.w
        return x + self.w

    def run(self, x, n):
        for _ in range(n):
            x = self.step(x)
        return x

    def __call__(self, x):
        return self.step(x)


def calls_everything(x):
    a = clip_positive(x)  # module-level function
    square = lambda v: v * v if v > 1 else v  # lambda with a ternary  # noqa: E731
    b = square(x)

    def double_until_big(z):  # nested def with a while
        while z < 5:
            z = z * 2
        return z

    c = double_until_big(x)
    d = functools.partial(grow)(x)
    s = Stepper(1.0)
    e = s.run(x, 3)  # method of a local object
    f = s(x)  # callable object
    return a + b + c + d + e + f


@pytest.mark.parametrize("x", [0.5, 3.0, 12.0])
def test_user_callees_are_converted(x):
    assert_matches(calls_everything, x)


def test_callees_are_converted_once():
    from autolax import api

    autolax.jit(calls_everything)(2.0)
    converted_grow = api._cached_conversion(grow)
    assert converted_grow is not None
    autolax.jit(calls_everything)(4.0)
    assert api._cached_conversion(grow) is converted_grow


def uses_libraries(x):
    y = jnp.sum(jnp.sort(jnp.array([x, 2.0 * x])))
    z = np.float32(3.0)
    return jax.nn.relu(y) + float(z) + abs(-1.0) + max(1.0, 2.0)


def test_library_calls_are_left_alone():
    source = autolax.to_source(uses_libraries)
    assert "ops.call" not in source
    assert_matches(uses_libraries, 1.5)


def test_to_source_wraps_only_user_calls():
    source = autolax.to_source(calls_everything)
    assert "ops.call(clip_positive, x)" in source
    assert "ops.call(s.run, x, 3)" in source
    assert "ops.call(square, x)" in source


@autolax.do_not_convert
def python_only(x):
    # Would raise under tracing if converted code staged it; marked, it is called as written.
    return x + 1


def calls_marked(x):
    return python_only(x) * 2


def test_do_not_convert():
    assert autolax.convert(python_only) is python_only
    assert float(autolax.jit(calls_marked)(1.0)) == 4.0
    from autolax import api

    assert api._cached_conversion(python_only) is None


def recursive_sum(n):
    if n <= 0:
        return 0
    return n + recursive_sum(n - 1)


def test_recursion_on_static_values():
    assert autolax.convert(recursive_sum)(5) == 15
    assert int(autolax.jit(recursive_sum, static_argnums=0)(5)) == 15


def printer(xs):
    total = 0.0
    for x in xs:
        if x > 1:
            print("big", x, sep=": ")
        total += x
    print("total", total)
    return total


def test_print_shows_runtime_values_once_per_iteration(capfd):
    xs = jnp.array([0.5, 2.0, 3.0])
    jax.block_until_ready(autolax.jit(printer)(xs))
    jax.effects_barrier()
    got = capfd.readouterr().out.splitlines()
    printer(np.asarray(xs))
    expected = capfd.readouterr().out.splitlines()
    assert got == expected == ["big: 2.0", "big: 3.0", "total 5.5"]


def ticker(xs):
    total = 0.0
    for x in xs:
        if x > 1:
            print("tick")  # nothing traced, but it runs once per taken branch
        total += x
    return total


def test_print_of_static_values_in_a_staged_body_runs_when_the_body_runs(capfd):
    xs = jnp.array([0.5, 2.0, 3.0, 0.0])
    jax.block_until_ready(autolax.jit(ticker)(xs))
    jax.effects_barrier()
    got = capfd.readouterr().out
    ticker(np.asarray(xs))
    assert got == capfd.readouterr().out == "tick\ntick\n"


def test_print_of_static_values_is_plain_print(capfd):
    def greet(x, name):
        print("hello", name)
        return x

    autolax.jit(greet, static_argnums=1)(1.0, "world")
    assert capfd.readouterr().out == "hello world\n"


def test_recursive_false_runs_callees_as_written():
    def outer(x):
        return clip_positive(x)

    assert float(autolax.convert(outer, recursive=False)(2.0)) == 2.0  # eager: plain Python
    # JAX's error for the callee's `if` on a traced value, as autolax's (it leaves `outer`).
    with pytest.raises(autolax.TracedValueError, match="uses a traced value as a Python bool") as info:
        jax.jit(autolax.convert(outer, recursive=False))(2.0)
    assert isinstance(info.value.__cause__, jax.errors.TracerBoolConversionError)
    assert float(jax.jit(autolax.convert(outer))(2.0)) == 2.0


@autolax.jit
def _jitted_fact(n):
    if n <= 1:
        return 1
    return n * _jitted_fact(n - 1)


@autolax.jit(static_argnums=0)
def _jitted_static_fact(n):
    if n <= 1:
        return 1
    return n * _jitted_static_fact(n - 1)


def test_an_autolax_jit_function_calling_itself_under_a_traced_condition_is_traced_recursion():
    """Its global name is the autolax.jit object, so the recursive call nests jax.jit, which
    raised its own `RecursionError: Recursively calling ...` (no autolax error)."""
    with pytest.raises(autolax.TracedRecursionError, match="'_jitted_fact' calls itself"):
        _jitted_fact(5)
    assert _jitted_static_fact(5) == 120  # a Python condition: the recursion ends
