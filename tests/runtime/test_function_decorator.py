"""``@ops.function``: the one decorator line a converted function that may need a Python value
of a traced one (or stage a check) gets, instead of a ``try`` / ``with`` around its body
(passes/runtime_checks.py, ``autolax.runtime.ops.checks.function``)."""

from __future__ import annotations

import inspect
import pathlib
import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.cli import Options, convert_source

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = __file__


def pick(xs, i, scale=2.0, *, shift=0.0):
    return xs[i] * scale + shift


def magnitude(x, n):
    return x * x if x > 0 else -x * n


def scaled_by_itself(x):
    return x * complex(x)  # (`float(x)` is staged: ops.float)


def test_the_decorator_is_one_line_above_the_def():
    assert (
        autolax.to_source(pick)
        == "@ops.function\ndef pick(xs, i, scale=2.0, *, shift=0.0):\n    return xs[i] * scale + shift\n"
    )
    assert autolax.to_source(magnitude).startswith(
        "@ops.function(checks=True)\ndef magnitude(x, n):\n    return ops.if_else(x > 0,"
    )


def test_signature_and_static_argnames_pass_through():
    converted = autolax.convert(pick)
    assert inspect.signature(converted) == inspect.signature(pick)
    assert converted.__name__ == "pick" and converted.__qualname__ == pick.__qualname__
    xs = jnp.arange(5.0)
    # `i` static, passed by position and by name: jax.jit reads the wrapped signature
    jitted = jax.jit(converted, static_argnames="i")
    assert float(jitted(xs, 3)) == float(jitted(xs, i=3)) == pick(np.arange(5.0), 3) == 6.0
    assert float(autolax.jit(pick, static_argnames="scale")(xs, 1, 3.0, shift=1.0)) == 4.0
    m = autolax.convert(magnitude)
    assert inspect.signature(m) == inspect.signature(magnitude)
    assert float(jax.jit(m, static_argnums=1)(jnp.float32(-2.0), 3)) == magnitude(-2.0, 3) == 6.0


def test_grad_and_vmap_through_the_decorated_function():
    m = autolax.convert(magnitude)
    assert float(jax.grad(m)(jnp.float32(3.0), 2.0)) == 6.0
    assert float(jax.grad(m)(jnp.float32(-3.0), 2.0)) == -2.0
    out = jax.vmap(m, in_axes=(0, None))(jnp.array([-1.0, 2.0]), 4.0)
    np.testing.assert_allclose(out, [4.0, 4.0])
    p = autolax.convert(pick)
    np.testing.assert_allclose(jax.grad(lambda xs: p(xs, 1))(jnp.ones(3)), [0.0, 2.0, 0.0])


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, xs, i):
        return xs[i] * self.k if xs[i] > 0 else -xs[i]


def make_counter():
    calls = 0

    def counted(xs, i):
        nonlocal calls
        calls += 1
        return xs[i] + calls

    return counted, lambda: calls


def test_methods_and_closures_with_nonlocal():
    s = Scaler(3.0)
    assert "@ops.function(checks=True)\ndef apply(self, xs, i):" in autolax.to_source(Scaler.apply)
    assert float(autolax.jit(s.apply)(jnp.array([1.0, -2.0]), 0)) == s.apply(np.array([1.0, -2.0]), 0) == 3.0
    assert float(autolax.convert(Scaler.apply)(s, np.array([1.0, -2.0]), 1)) == 2.0
    counted, calls = make_counter()
    converted = autolax.convert(counted)
    assert "nonlocal calls" in autolax.to_source(counted)
    assert converted([1.0, 5.0], 1) == 6.0 and calls() == 1  # the user's cell, changed
    assert float(jax.jit(converted)(jnp.array([1.0, 5.0]), 0)) == 3.0 and calls() == 2


def test_the_refusal_names_the_users_line_and_hides_the_wrapper():
    for path, fn in (
        ("autolax.jit", autolax.jit(scaled_by_itself)),
        ("jax.jit(convert)", jax.jit(autolax.convert(scaled_by_itself))),
    ):
        with pytest.raises(autolax.TracedValueError) as info:
            fn(jnp.float32(2.0))
        lineno = scaled_by_itself.__code__.co_firstlineno + 1
        assert f"the statement at {HERE}:{lineno} " in str(info.value), path
        text = "".join(traceback.format_exception(info.value))
        assert "return x * complex(x)" in text, path  # the user's line, in the traceback of the cause
    # Run eagerly, the function is the user's: Python's value and error, no autolax frame between.
    assert autolax.convert(scaled_by_itself)(3.0) == 9.0
    with pytest.raises(ValueError, match=r"complex\(\) arg is a malformed string"):
        autolax.convert(scaled_by_itself)("a")


def test_no_converted_function_body_is_wrapped_in_the_cli_output_of_the_corpus():
    decorated = 0
    for path in sorted((ROOT / "tests" / "corpus").glob("*.py")):
        text = convert_source(path.read_text(), f"corpus/{path.name}", Options(all=True)).text
        assert "TracerErrors" not in text and "runtime_checks()" not in text, path
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith("@ops.function"):
                decorated += 1
                assert lines[i + 1].lstrip().startswith("def "), (path, i)  # the last decorator
    assert decorated >= 10


def test_a_decorated_conversion_is_converted_code_to_every_api():
    converted = autolax.convert(pick)
    assert autolax.convert(converted) is converted
    assert autolax.to_source(converted) == autolax.to_source(pick)
    xs = jnp.arange(4.0)
    # not "a library's wrapper of your function": its __wrapped__ is the converted body
    assert float(autolax.jit(converted, static_argnums=1)(xs, 2)) == 4.0
    np.testing.assert_allclose(autolax.jit(jax.vmap(converted, in_axes=(0, None)))(xs[:, None], 0), xs * 2)
