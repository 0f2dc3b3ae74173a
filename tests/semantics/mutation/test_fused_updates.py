"""Issue 41, item 5: consecutive updates of one element in an iteration (``A[i, j] += s;
A[i, j] /= 9.0``, the Gauss-Seidel stencil) are one update, ``ops.at(A)[i, j].steps(...)``,
so the carried array is updated in place (XLA's CPU backend copied the whole array for the
second update: 190x slower at 60x60). Each step's result is stored as Python stores it (the
array's dtype) before the next step reads it; compared with Python on every path."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from semantics.idioms.test_common_idioms import standalone_agrees
from paths import check_all_paths


def seidel_2d(A, tsteps):
    A = A.copy()
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] += A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j + 1]
                A[i, j] /= 9.0
    return A


def stored_between_steps(a, k):
    a = a.copy()
    a[k] += 0.7  # an integer array stores int(a[k] + 0.7) before the next step reads it
    a[k] *= 3
    a[k] -= 1
    return a


def set_then_update(a, i, v):
    a = a.copy()
    a[i, :] = v
    a[i, :] /= 2.0
    return a


def second_reads_array(a, i):
    a = a.copy()
    a[i] += 1.0
    a[i] *= a[i]  # reads the array: not folded
    return a


def index_changes(a, i):
    a = a.copy()
    a[i] += 1.0
    i = i + 1
    a[i] += 1.0
    return a


def with_a_call(a, i):
    a = a.copy()

    def scale():
        print("scale")
        return 2.0

    a[i] += 1.0
    a[i] *= scale()  # a call may have an effect: not folded
    return a


def on_a_list(xs, i):
    xs = list(xs)
    xs[i] += 1
    xs[i] *= 2
    return xs


def row_of_leading_ones(a, v):
    a = a.copy()
    a[1, :] = v  # v of shape (1, n): NumPy and JAX drop the leading axis
    a[1, :] *= 2.0
    return a


def in_branches(a, xs):
    a = a.copy()
    for k in range(a.shape[0]):
        if xs[k] > 0:
            a[k] += xs[k]
            a[k] *= 2.0
        else:
            a[k] -= 1.0
            a[k] /= 4.0
    return a


def around_continue(a):
    a = a.copy()
    for k in range(a.shape[0]):
        a[k] += 1.0
        a[k] *= 1.5
        if a[k] > 3.0:
            continue
        a[k] *= 3.0
        a[k] -= 0.5
    return a


G = 1


def bump():
    global G
    G = 2
    return 1.0


def global_index(a):
    a = a.copy()
    a[G] += bump()  # Python: the next statement's G is 2
    a[G] *= 3.0
    return a


def nonlocal_index(a):
    a = a.copy()
    i = 0

    def move():
        nonlocal i
        i = 1
        return 1.0

    a[i] += move()  # Python: the next statement's i is 1
    a[i] *= 3.0
    return a


def out_of_bounds(a):
    a = a.copy()
    a[5] += 1.0
    a[5] /= 2.0
    return a


def test_seidel_agrees_with_python(tmp_path):
    A = np.random.RandomState(0).rand(6, 6).astype(np.float32)
    check_all_paths(seidel_2d, A, 2, static_argnums=(1,), tmp_dir=tmp_path)
    check_all_paths(seidel_2d, A, 0, static_argnums=(1,), tmp_dir=tmp_path)
    standalone_agrees(seidel_2d, A, 2, static=("tsteps",))
    standalone_agrees(stored_between_steps, np.array([1, -4, 7], np.int32), 1)


@pytest.mark.parametrize("fn, args", [
    (stored_between_steps, (np.array([1, -4, 7], np.int32), 1)),
    (stored_between_steps, (np.array([1.5, -4.0, 7.0], np.float32), 2)),
    (set_then_update, (np.ones((3, 4), np.float32), 1, np.arange(4.0, dtype=np.float32))),
    (second_reads_array, (np.arange(3.0, dtype=np.float32), 1)),
    (index_changes, (np.arange(4.0, dtype=np.float32), 1)),
    (with_a_call, (np.arange(4.0, dtype=np.float32), 2)),
    (out_of_bounds, (np.arange(3.0, dtype=np.float32),)),
    (in_branches, (np.arange(4.0, dtype=np.float32), np.array([1.0, -1.0, 2.0, -3.0], np.float32))),
    (around_continue, (np.arange(4.0, dtype=np.float32),)),
    (around_continue, (np.zeros(0, np.float32),)),
    (row_of_leading_ones, (np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32))),
], ids=lambda v: getattr(v, "__name__", None))
def test_folded_updates_agree_with_python(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_names_a_call_may_rebind_are_not_folded(tmp_path):
    global G
    for fn in (global_index, nonlocal_index):
        G = 1
        want = fn(np.arange(3.0, dtype=np.float32))
        G = 1
        got = autolax.convert(fn)(np.arange(3.0, dtype=np.float32))
        np.testing.assert_allclose(got, want)
        np.testing.assert_allclose(want, [0.0, 2.0, 6.0] if fn is global_index else [1.0, 3.0, 2.0])
    G = 1
    check_all_paths(nonlocal_index, np.arange(3.0, dtype=np.float32), tmp_dir=tmp_path)


def test_a_list_keeps_python_updates():
    assert autolax.convert(on_a_list)([1, 2, 3], 1) == on_a_list([1, 2, 3], 1) == [1, 6, 3]


def test_what_is_folded():
    assert ".steps(('add'" in autolax.to_source(seidel_2d)
    assert ".steps(" in autolax.to_source(stored_between_steps)
    assert ".steps(('set'" in autolax.to_source(set_then_update)
    for fn in (second_reads_array, index_changes, with_a_call, global_index, nonlocal_index):
        assert ".steps(" not in autolax.to_source(fn), fn.__name__


def _scatters(jaxpr):
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "scatter"
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                count += _scatters(inner)
    return count


def test_one_update_per_iteration_and_staged():
    A = jnp.ones((6, 6))
    report = autolax.trace_check(lambda A: seidel_2d(A, 2), A)
    assert not report.unrolled
    jaxpr = jax.make_jaxpr(autolax.convert(seidel_2d), static_argnums=1)(A, 2).jaxpr
    assert _scatters(jaxpr) == 1


def test_gradient_is_the_unfused_one():
    def unfused(A):
        n = A.shape[0]
        for i in range(1, n - 1):
            A = A.at[i, i].set(A[i, i] + A[i - 1, i])
            A = A.at[i, i].set(A[i, i] / 9.0)
        return A.sum()

    def fused(A):
        n = A.shape[0]
        for i in range(1, n - 1):
            A[i, i] += A[i - 1, i]
            A[i, i] /= 9.0
        return A.sum()

    A = jnp.arange(16.0).reshape(4, 4)
    np.testing.assert_allclose(jax.grad(autolax.convert(fused))(A), jax.grad(unfused)(A), rtol=1e-6)


def test_vmap_of_folded_updates():
    A = np.random.RandomState(1).rand(3, 5, 5).astype(np.float32)
    batched = jax.vmap(autolax.convert(seidel_2d), in_axes=(0, None))(A, 1)
    for k in range(3):
        np.testing.assert_allclose(batched[k], seidel_2d(A[k].copy(), 1), rtol=1e-5)
