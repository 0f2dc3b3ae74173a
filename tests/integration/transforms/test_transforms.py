"""Converted functions are ordinary JAX functions: grad, value_and_grad, jvp, vmap and
checkpoint compose with them, in both forms (``jax.grad(autolax.jit(f))`` and
``jax.grad(autolax.convert(f))``), and give the derivatives of the original Python."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.check import primitive_counts
from conftest import assert_close, primitives


def branchy(x):
    if x > 1.0:
        y = x**3
    elif x > -1.0:
        y = jnp.sin(x) * 2.0
    else:
        y = -x * 5.0
    return y


def static_for(x):
    for i in range(4):
        x = x * 1.5 + jnp.sin(x) * i
    return x


def over_array(w, xs):
    acc = 0.0
    for x in xs:
        acc = acc + jnp.tanh(w * x)
    return acc


def halving_while(x):
    steps = 0
    while x > 1.0:
        x = x * 0.5 + 0.1
        steps += 1
    return x * 3.0


def masked_break(x):
    for i in range(6):
        if x > 5.0:
            break
        x = x * 1.7
    return x


FORMS = {"jit": autolax.jit, "convert": autolax.convert}


def finite_difference(fn, args, argnum=0, eps=1e-3):
    """Central difference of ``fn`` in float64 NumPy arithmetic through plain Python."""
    args = [np.float64(a) if np.ndim(a) == 0 else np.asarray(a, np.float64) for a in args]
    plus, minus = list(args), list(args)
    plus[argnum] = args[argnum] + eps
    minus[argnum] = args[argnum] - eps
    return (float(fn(*plus)) - float(fn(*minus))) / (2 * eps)


def np_branchy(x):
    return x**3 if x > 1.0 else (np.sin(x) * 2.0 if x > -1.0 else -x * 5.0)


def np_static_for(x):
    for i in range(4):
        x = x * 1.5 + np.sin(x) * i
    return x


def np_over_array(w, xs):
    return sum(np.tanh(w * x) for x in xs)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("x", [2.0, 0.3, -3.0])
def test_grad_through_if(form, x):
    converted = FORMS[form](branchy)
    expected = jax.grad(branchy)(x)  # plain Python `if` on a concrete primal
    assert_close(expected, jax.grad(converted)(x))
    assert abs(float(jax.grad(converted)(x)) - finite_difference(np_branchy, [x])) < 1e-2
    value, grad = jax.value_and_grad(converted)(x)
    assert_close((branchy(x), expected), (value, grad))


@pytest.mark.parametrize("form", FORMS)
def test_grad_through_static_for_is_scan(form):
    converted = FORMS[form](static_for)
    x = 0.4
    assert_close(jax.grad(static_for)(x), jax.grad(converted)(x))
    assert abs(float(jax.grad(converted)(x)) - finite_difference(np_static_for, [x])) < 1e-2 * abs(
        finite_difference(np_static_for, [x])
    )
    assert primitives(static_for, x)["scan"] == 1
    # reverse mode through the scan: the gradient's jaxpr holds the transposed scan
    grad_jaxpr = jax.make_jaxpr(jax.grad(autolax.convert(static_for)))(x)
    assert "scan" in str(grad_jaxpr) and "while" not in str(grad_jaxpr)


@pytest.mark.parametrize("form", FORMS)
def test_grad_over_array_loop_both_arguments(form):
    converted = FORMS[form](over_array)
    w, xs = 0.7, jnp.array([0.5, -1.0, 2.0, 0.25])
    gw, gxs = jax.grad(converted, argnums=(0, 1))(w, xs)
    ew, exs = jax.grad(over_array, argnums=(0, 1))(w, xs)
    assert_close((ew, exs), (gw, gxs))
    assert abs(float(gw) - finite_difference(np_over_array, [w, np.asarray(xs)])) < 1e-3
    # hand-computed: d/dw sum tanh(w x) = sum x (1 - tanh(w x)^2)
    assert_close(np.sum(np.asarray(xs) * (1 - np.tanh(w * np.asarray(xs)) ** 2)), gw)


@pytest.mark.parametrize("form", FORMS)
def test_jvp_matches_plain_python(form):
    for fn, x in [(branchy, 0.3), (static_for, 0.4), (halving_while, 7.0)]:
        converted = FORMS[form](fn)
        primal, tangent = jax.jvp(converted, (x,), (1.0,))
        e_primal, e_tangent = jax.jvp(fn, (x,), (1.0,))
        assert_close((e_primal, e_tangent), (primal, tangent))


@pytest.mark.parametrize("form", FORMS)
def test_while_forward_mode_works(form):
    converted = FORMS[form](halving_while)
    x = 7.0
    # 7 -> 3.6 -> 1.9 -> 1.05 -> 0.625: four steps x/2 + 0.1, so d(3x)/dx0 = 3 / 2**4
    _, tangent = jax.jvp(converted, (x,), (1.0,))
    assert_close(3.0 / 2**4, tangent)
    assert_close(3.0 / 2**4, jax.jacfwd(converted)(x))
    assert primitives(halving_while, x)["while"] == 1


@pytest.mark.parametrize("form", FORMS)
def test_while_reverse_mode_raises_jax_error(form):
    converted = FORMS[form](halving_while)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(converted)(7.0)


@pytest.mark.parametrize("form", FORMS)
def test_grad_through_masked_break(form):
    converted = FORMS[form](masked_break)
    for x in [0.5, 2.0, 6.0]:
        assert_close(jax.grad(masked_break)(x), jax.grad(converted)(x))


@pytest.mark.parametrize("form", FORMS)
def test_checkpoint_composes(form):
    for fn, x in [(branchy, 2.0), (static_for, 0.4), (masked_break, 0.5)]:
        converted = jax.checkpoint(FORMS[form](fn))
        assert_close(jax.grad(fn)(x), jax.grad(converted)(x))
    # checkpoint inside a converted loop body
    def remat_body(x):
        step = jax.checkpoint(lambda v: jnp.sin(v) * 1.5)
        for i in range(3):
            x = step(x)
        return x

    assert_close(jax.grad(remat_body)(0.3), jax.grad(FORMS[form](remat_body))(0.3))


def test_grad_of_jit_of_converted_and_jit_of_grad():
    x = 0.4
    expected = jax.grad(static_for)(x)
    assert_close(expected, jax.jit(jax.grad(autolax.convert(static_for)))(x))
    assert_close(expected, jax.grad(jax.jit(autolax.convert(static_for)))(x))
    assert_close(jax.hessian(static_for)(x), jax.hessian(autolax.convert(static_for))(x))


# ----------------------------------------------------------------------------- vmap
def classify(x):
    if x > 0:
        y = x * 2.0
    else:
        y = x - 10.0
    return y


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("form", FORMS)
def test_vmap_data_dependent_if(form):
    xs = jnp.array([-2.0, 0.0, 0.5, 3.0])
    got = jax.vmap(FORMS[form](classify))(xs)
    assert_close(np.array([classify(float(x)) for x in xs]), got)


@pytest.mark.parametrize("form", FORMS)
def test_vmap_data_dependent_while(form):
    ns = jnp.array([1, 6, 7, 27, 97])
    got = jax.vmap(FORMS[form](collatz_steps))(ns)
    assert_close(np.array([collatz_steps(int(n)) for n in ns]), got)


def test_vmap_of_jit_and_jit_of_vmap_and_in_axes():
    ns = jnp.array([3, 12, 27])
    expected = np.array([collatz_steps(int(n)) for n in ns])
    assert_close(expected, jax.jit(jax.vmap(autolax.convert(collatz_steps)))(ns))
    assert_close(expected, jax.vmap(autolax.jit(collatz_steps))(ns))
    # batched array loop with an unbatched weight
    xs = jnp.arange(12.0).reshape(3, 4) / 10
    got = jax.vmap(autolax.convert(over_array), in_axes=(None, 0))(0.7, xs)
    assert_close(np.array([over_array(0.7, np.asarray(row)) for row in xs]), got)


def test_vmap_of_grad_with_batched_predicates():
    xs = jnp.array([-3.0, 0.3, 2.0])
    got = jax.vmap(jax.grad(autolax.convert(branchy)))(xs)
    assert_close(np.array([jax.grad(branchy)(float(x)) for x in xs]), got)


def test_vmap_with_axis_name_collective_in_loop_body():
    def normalise(x):
        for i in range(2):
            x = x / jax.lax.psum(jnp.abs(x), "batch")
        return x

    xs = jnp.array([1.0, -2.0, 3.0])
    got = jax.vmap(autolax.convert(normalise), axis_name="batch")(xs)
    expected = np.asarray(xs)
    for _ in range(2):
        expected = expected / np.abs(expected).sum()
    assert_close(expected, got)
    assert_close(expected, jax.vmap(normalise, axis_name="batch")(xs))


# ----------------------------------------------------------------------------- README rule
def sqrt_while(a):
    x = a
    err = 1.0
    while err > 1e-6:
        new = 0.5 * (x + a / x)
        err = abs(new - x)
        x = new
    return x


def sqrt_bounded(a):
    x = a
    err = 1.0
    for _ in range(30):
        if err <= 1e-6:
            break
        new = 0.5 * (x + a / x)
        err = abs(new - x)
        x = new
    return x


def test_static_trip_alternative_to_while_is_reverse_differentiable():
    a = 2.0
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(autolax.convert(sqrt_while))(a)
    assert_close(sqrt_while(a), autolax.jit(sqrt_bounded)(a))
    # d sqrt(a) / da = 1 / (2 sqrt(a))
    for form in FORMS.values():
        assert_close(1 / (2 * np.sqrt(a)), jax.grad(form(sqrt_bounded))(a), rtol=1e-4)
    # A plain call stops at the break (while_loop); jax.grad differentiates a masked scan.
    assert primitives(sqrt_bounded, a)["while"] == 1 and primitives(sqrt_bounded, a)["scan"] == 0
    grad_prims = primitive_counts(jax.make_jaxpr(jax.grad(autolax.convert(sqrt_bounded)))(a).jaxpr)
    assert grad_prims["scan"] >= 1 and grad_prims["while"] == 0


def builtin_extremes(x, y):
    return abs(x) * max(x, y) + min(x * 2.0, y, 3.0)


def running_max(xs):
    best = xs[0]
    for x in xs:
        best = max(best, x * x)
    return best


@pytest.mark.parametrize("args", [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (-1.0, 0.5), (0.0, 0.0), (2.0, 4.0)])
def test_builtin_max_and_min_of_traced_numbers(args, tmp_path):
    # Python's max/min compare (`item > best`): with traced numbers that was JAX's
    # TracerBoolConversionError. The pick is a select, so the gradient goes to the item
    # Python returns (the first of equal items).
    from paths import check_all_paths

    check_all_paths(builtin_extremes, *map(jnp.float32, args), tmp_dir=tmp_path)
    args = tuple(map(jnp.float32, args))
    want = jax.grad(builtin_extremes, argnums=(0, 1))(*args)
    for form in FORMS.values():
        assert_close(want, jax.grad(form(builtin_extremes), argnums=(0, 1))(*args))
    xs = jnp.array([[1.0, -3.0, 2.0], [0.5, 0.5, -0.5], [0.0, 1.0, -1.0]])
    assert_close(jnp.stack([running_max(r) for r in xs]), jax.vmap(autolax.convert(running_max))(xs))
    assert_close(jnp.stack([jax.grad(running_max)(r) for r in xs]), jax.vmap(jax.grad(autolax.jit(running_max)))(xs))


def test_builtin_max_of_a_list_and_with_a_key_keep_python_behaviour():
    def f(x, y):
        return max([x, y * 2.0]), min(x, y, key=lambda v: 0), max([], default=1.0)

    assert_close(f(1.0, 2.0), autolax.jit(f)(1.0, 2.0))
