"""x[i] = v and list appends (issue 3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.check import count_equations
from conftest import assert_matches, primitives


def scatter(x, i, j, v):
    x[i] = v
    x[i + 1] += v
    x[j:] = 0.0
    return x


def scatter_2d(m, i, j):
    m[i, j] = -1.0
    m[i, :] *= 2.0
    m[0][j] = 7.0
    return m


@pytest.mark.parametrize("i,j", [(0, 3), (2, 4)])
def test_item_assignment_on_arrays(i, j):
    x = np.arange(5.0, dtype=np.float32)
    # A slice bound must be static in JAX (`x[j:]`), so `j` is a static argument.
    assert_matches(scatter, jnp.asarray(x), i, j, 9.0, python_args=(x, i, j, 9.0), jit_kwargs={"static_argnums": 2})
    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_matches(scatter_2d, jnp.asarray(m), i % 3, j % 4, python_args=(m, i % 3, j % 4))


def augmented_ops(x):
    x[0] -= 1.0
    x[1] *= 3.0
    x[2] /= 2.0
    x[3] **= 2.0
    return x


def test_augmented_item_assignment():
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    assert_matches(augmented_ops, jnp.asarray(x), python_args=(x,))


def python_containers(a):
    buf = np.zeros(3)
    for i in range(3):
        buf[i] = i * 2.0
    d = {"k": 1.0}
    d["k"] += a
    lst = [0.0, 0.0]
    lst[1] = a
    nested = [[0.0, 0.0], [0.0, 0.0]]
    nested[1][0] = a
    return a + buf.sum() + d["k"] + lst[1] + nested[1][0]


def test_python_containers_keep_python_semantics():
    assert_matches(python_containers, 2.0)


def test_numpy_array_is_mutated_in_place_eagerly():
    def fill(buf):
        for i in range(3):
            buf[i] = i + 1
        return buf

    buf = np.zeros(3)
    out = autolax.convert(fill)(buf)
    assert out is buf and buf.tolist() == [1.0, 2.0, 3.0]


def insertion_sort(v):
    for i in range(1, v.shape[0]):
        key = v[i]
        j = i - 1
        while j >= 0 and v[j] > key:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = key
    return v


def selection_sort(v):
    n = v.shape[0]
    for i in range(n):
        smallest = i
        for j in range(i + 1, n):
            if v[j] < v[smallest]:
                smallest = j
        v[i], v[smallest] = v[smallest], v[i]
    return v


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorts_match_numpy(seed):
    v = np.random.default_rng(seed).normal(size=7).astype(np.float32)
    for sort in (insertion_sort, selection_sort):
        got = autolax.jit(sort)(jnp.asarray(v))
        np.testing.assert_array_equal(np.asarray(got), np.sort(v))
        assert_matches(sort, jnp.asarray(v), python_args=(v.copy(),))
    assert primitives(insertion_sort, jnp.asarray(v))["while"] == 1
    assert primitives(selection_sort, jnp.asarray(v))["scan"] == 1  # outer: static trip


def rnn(xs, h):
    hs = []
    for x in xs:
        h = jnp.tanh(0.5 * h + x)
        hs.append(h)
    return jnp.stack(hs), jnp.asarray(hs), len(hs), hs[0], hs[-1]


@pytest.mark.parametrize("n", [1, 5])
def test_list_append_rnn(n):
    xs = np.linspace(-1, 1, n).astype(np.float32)
    assert_matches(rnn, jnp.asarray(xs), 0.1)


def rnn_stack_only(xs, h):
    hs = []
    for x in xs:
        h = jnp.tanh(0.5 * h + x)
        hs.append(h)
    return jnp.stack(hs)


def test_list_append_jaxpr_does_not_grow():
    small = jax.make_jaxpr(autolax.convert(rnn_stack_only))(jnp.zeros(10), 0.0)
    large = jax.make_jaxpr(autolax.convert(rnn_stack_only))(jnp.zeros(1000), 0.0)
    assert count_equations(small.jaxpr) == count_equations(large.jaxpr)
    assert count_equations(large.jaxpr) < 25
    assert primitives(rnn_stack_only, jnp.zeros(1000), 0.0)["scan"] == 1


def test_stack_of_the_appended_list_is_the_loops_output():
    # jnp.stack along axis 0 of the stacked outputs is those outputs: no expand/reshape after
    # the scan (the scan and nothing else).
    jaxpr = jax.make_jaxpr(autolax.convert(rnn_stack_only))(jnp.zeros(10), 0.0).jaxpr
    assert jaxpr.eqns[-1].primitive.name == "scan"
    assert jaxpr.outvars == [jaxpr.eqns[-1].outvars[-1]]


def stack_variants(xs, h):
    hs = []
    for x in xs:
        h = jnp.tanh(0.5 * h + x)
        hs.append(h * jnp.ones(2))
    return jnp.stack(hs, axis=1), jnp.stack(hs, 0), jnp.stack(hs, dtype=jnp.int32), jnp.stack(hs + [h * jnp.ones(2)])


@pytest.mark.parametrize("n", [1, 4])
def test_stack_of_an_appended_list_with_arguments(n):
    assert_matches(stack_variants, jnp.linspace(-1.0, 1.0, n), 0.1)


def appends_in_range(x, n):
    out = [x]
    for i in range(n):
        out.append(out[0] * i)
        out.append(x + i)
    return jnp.stack(out), len(out), out[3]


def test_several_appends_per_iteration_and_existing_items():
    assert_matches(appends_in_range, 2.0, 3, jit_kwargs={"static_argnums": 1})


def nested_appends(x):
    out = []
    for i in range(3):
        for j in range(2):
            out.append(x * i + j)
    return jnp.stack(out), out[4]


def test_appends_from_nested_loops():
    assert_matches(nested_appends, 1.5)
    assert primitives(nested_appends, 1.5)["scan"] == 2


def iterate_appended(xs):
    hs = []
    for x in xs:
        hs.append(x * 2)
    total = 0.0
    for h in hs:
        total += h
    return total


def test_loop_over_an_appended_list():
    assert_matches(iterate_appended, jnp.arange(4.0))
    assert primitives(iterate_appended, jnp.arange(4.0))["scan"] == 2


def append_after_break(xs):
    out = []
    for x in xs:
        if x < 0:
            break
        out.append(x)
    return len(out)


def test_append_with_traced_break_is_a_clear_error():
    # The list's length would depend on data, so the loop cannot be staged; its bounds are
    # static, so it runs as a Python loop, where the traced `break` comes before the append:
    # the message names the `break` (issue 34, item 10).
    with pytest.raises(autolax.StateMismatchError, match="'out' is appended to after the `break` at ") as info:
        autolax.jit(append_after_break)(jnp.array([1.0, -1.0, 2.0]))
    assert ("Whether the program takes the `break` depends on a traced value, so the number of items "
            "appended to 'out' would depend on data.") in str(info.value)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "could not be staged" in notes


def append_in_while(x):
    out = []
    while x < 10:
        out.append(x)
        x = x * 2
    return len(out)


def test_append_in_traced_while_is_a_clear_error():
    with pytest.raises(autolax.StateMismatchError) as info:
        autolax.jit(append_in_while)(1.0)
    message = str(info.value)
    assert "'out' is appended to in the `while` loop at" in message
    assert "test_mutation.py" in message and "would depend on data" in message
