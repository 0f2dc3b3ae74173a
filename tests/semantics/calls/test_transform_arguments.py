"""User functions handed as values to JAX transforms inside converted code are converted
(issue 15 item 2): ``jax.vmap(step)`` where ``step`` has a traced ``if``, the bodies of
``lax.scan`` / ``fori_loop`` / ``while_loop`` / ``cond`` / ``switch``, ``jax.grad`` ...
Each compares with the Python program run element by element (or eagerly under ``grad``,
which Python control flow survives)."""

import functools

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import autolax
from conftest import assert_close


def step(x):
    if x > 0:
        return x * x
    return -x


def vector_step(v):
    if v.sum() > 0:
        return v * v
    return -v


def scan_body(best, x):
    if x > best:
        best = x
    return best, best * 2.0


def fori_body(i, x):
    if x > 10.0:
        return x
    return x * 2.0 + i


def below_ten(x):
    return x < 10.0


def while_body(x):
    if x > 3.0:
        return x + 5.0
    return x * 2.0


def true_branch(x):
    while x < 4.0:
        x = x * 2.0
    return x


def false_branch(x):
    if x < -1.0:
        return -x
    return x - 1.0


def scale(k, x):
    if x > k:
        return x * k
    return x


class Stepper:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x > self.k:
            return x - self.k
        return x

    def grow(self, x):
        while x < self.k:
            x = x * x + 0.5  # ends for every x
        return x


@jax.custom_jvp
def soft_clip(x):
    if x > 1.0:
        return jnp.ones_like(x)
    return x


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if x > 1.0:
        return soft_clip(x), 0.0 * t
    return soft_clip(x), t


XS = jnp.array([-2.0, 0.5, 3.0])
STEPPER = Stepper(1.0)


def each(fn, xs):
    return jnp.stack([jnp.asarray(fn(x)) for x in xs])


CASES = {
    "vmap": (lambda xs: jax.vmap(step)(xs), lambda xs: each(step, xs)),
    "vmap in_axes keyword": (lambda xs: jax.vmap(step, in_axes=0)(xs), lambda xs: each(step, xs)),
    "vmap of partial": (lambda xs: jax.vmap(functools.partial(scale, 1.5))(xs), lambda xs: each(lambda x: scale(1.5, x), xs)),
    "vmap of bound method": (lambda xs: jax.vmap(STEPPER.grow)(xs), lambda xs: each(STEPPER.grow, xs)),
    "vmap of callable object": (lambda xs: jax.vmap(STEPPER)(xs), lambda xs: each(STEPPER, xs)),
    "vmap of custom_jvp": (lambda xs: jax.vmap(soft_clip)(xs), lambda xs: each(soft_clip, xs)),
    "vmap of vmap": (lambda xs: jax.vmap(jax.vmap(step))(xs[None]), lambda xs: each(step, xs)[None]),
    "grad": (lambda xs: jax.vmap(jax.grad(step))(xs), lambda xs: each(jax.grad(step), xs)),
    "value_and_grad": (lambda xs: jax.value_and_grad(step)(xs[2]), lambda xs: jax.value_and_grad(step)(xs[2])),
    "jacobian": (lambda xs: jax.jacobian(vector_step)(xs), lambda xs: jax.jacobian(vector_step)(xs)),
    "jacrev": (lambda xs: jax.jacrev(vector_step)(xs), lambda xs: jax.jacrev(vector_step)(xs)),
    "jacfwd": (lambda xs: jax.jacfwd(vector_step)(xs), lambda xs: jax.jacfwd(vector_step)(xs)),
    "hessian": (lambda xs: jax.hessian(step)(xs[2]), lambda xs: jax.hessian(step)(xs[2])),
    "checkpoint": (lambda xs: jax.checkpoint(step)(xs[1]), lambda xs: step(xs[1])),
    "remat": (lambda xs: jax.remat(step)(xs[0]), lambda xs: step(xs[0])),
    "jit": (lambda xs: jax.jit(step)(xs[2]), lambda xs: step(xs[2])),
    "jvp": (lambda xs: jax.jvp(step, (xs[2],), (1.0,)), lambda xs: jax.jvp(step, (xs[2],), (1.0,))),
    "scan": (lambda xs: lax.scan(scan_body, -10.0, xs), lambda xs: _python_scan(scan_body, -10.0, xs)),
    "fori_loop": (lambda xs: lax.fori_loop(0, 4, fori_body, xs[1]), lambda xs: _python_fori(0, 4, fori_body, xs[1])),
    "while_loop": (lambda xs: lax.while_loop(below_ten, while_body, xs[1]), lambda xs: _python_while(below_ten, while_body, xs[1])),
    "cond": (lambda xs: lax.cond(xs[2] > 0, true_branch, false_branch, xs[1]), lambda xs: true_branch(xs[1])),
    "cond false": (lambda xs: lax.cond(xs[0] > 0, true_branch, false_branch, xs[0]), lambda xs: false_branch(xs[0])),
    "switch": (lambda xs: lax.switch(1, [true_branch, false_branch], xs[0]), lambda xs: false_branch(xs[0])),
    "map": (lambda xs: lax.map(step, xs), lambda xs: each(step, xs)),
    "tree.map": (lambda xs: jax.tree.map(step, {"a": xs[0], "b": xs[2]}), lambda xs: {"a": step(xs[0]), "b": step(xs[2])}),
    "tree_util.tree_map": (lambda xs: jax.tree_util.tree_map(step, [xs[0], xs[2]]), lambda xs: [step(xs[0]), step(xs[2])]),
    "custom_jvp call": (lambda xs: soft_clip(xs[2]) + soft_clip(xs[1]), lambda xs: soft_clip(xs[2]) + soft_clip(xs[1])),
    "grad of custom_jvp": (lambda xs: jax.grad(soft_clip)(xs[1]), lambda xs: jax.grad(soft_clip)(xs[1])),
}


def _python_scan(f, carry, xs):
    ys = []
    for x in xs:
        carry, y = f(carry, x)
        ys.append(y)
    return carry, jnp.stack(ys)


def _python_fori(lo, hi, f, x):
    for i in range(lo, hi):
        x = f(i, x)
    return x


def _python_while(test, body, x):
    while test(x):
        x = body(x)
    return x


@pytest.mark.parametrize("case", list(CASES))
def test_user_functions_given_to_transforms_are_converted(case):
    converted_code, python = CASES[case]
    expected = python(XS)
    assert_close(expected, autolax.jit(converted_code)(XS))
    assert_close(expected, jax.jit(autolax.convert(converted_code))(XS))


def vmapped_steps(xs):
    return jax.vmap(step)(xs)


def test_the_call_goes_through_ops_call_and_lambdas_are_left_alone():
    source = autolax.to_source(vmapped_steps)
    assert "ops.call(ops.call(jax.vmap, step), xs)" in source

    def only_lambdas(xs):
        return jax.vmap(lambda x: x * 2.0 if x > 0 else -x)(xs)

    assert "jax.vmap(lambda x:" in autolax.to_source(only_lambdas)
    assert_close(jnp.array([2.0, 1.0, 6.0]), autolax.jit(only_lambdas)(XS))


def test_trace_check_sees_the_staged_statements_inside_the_transformed_function():
    report = autolax.trace_check(lambda xs: lax.scan(scan_body, -10.0, xs), XS)
    assert [r.became for r in report.rows] == ["lax.select"]


def test_a_converted_function_given_to_jax_jit_traces_once_per_shape():
    traces = []

    def summed(x):
        total = 0.0
        for i in range(3):
            if x[i] > 0:
                total = total + x[i]
        return total

    converted = autolax.convert(summed)

    def counted(x):  # not converted: counts jax.jit's traces
        traces.append(1)
        return converted(x)

    f = jax.jit(counted)
    for k in range(100):
        f(jnp.arange(3.0) - k)
    assert len(traces) == 1


def test_the_decorator_form_of_a_transform_inside_converted_code():
    def run(xs):
        @functools.partial(jax.vmap, in_axes=0)
        def inner(x):
            return step(x)

        return inner(xs)

    assert_close(each(step, XS), autolax.jit(run)(XS))
