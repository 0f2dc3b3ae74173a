"""Slices whose bounds follow a traced loop index, at fixed shapes (issue 41 items 1-3;
``autolax/runtime/ops/slices.py``, ``autolax/frontend/passes/slices.py``).

Each kernel is the loops a NumPy user writes; Python's answer is the kernel run on NumPy
arrays (float32, as the converted paths compute), compared through every path
(``paths.check_all_paths``: ``autolax.jit``, ``jax.jit(convert)``, ``convert`` eagerly, the
CLI's default output; plus ``--standalone`` output and the ``%%autolax`` magic here). Trace
checks: the loops are staged (``scan`` / ``while`` in the jaxpr, ``trace_check`` passes) and the
equation count is the same at N = 5 and N = 20.
"""

from __future__ import annotations

import inspect
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import autolax
from autolax.check import count_equations, primitive_counts
from paths import check_all_paths, run, standalone_module, agrees

RNG = np.random.default_rng(41)


# --- kernels (PolyBench/C 4.2 and textbook linear algebra, as NumPy users write them) -----

def lu(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - A[i, :i] @ A[:i, j]
    return A


def lu_functional(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A = A.at[i, j].set((A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j])
        for j in range(i, n):
            A = A.at[i, j].set(A[i, j] - A[i, :i] @ A[:i, j])
    return A


def lu_partial_pivoting(A):
    # Gaussian elimination with row pivoting as NumPy users write it: the pivot is the argmax
    # of a column's tail, the rows are swapped by an index list.
    n = A.shape[0]
    perm = np.arange(n)
    for k in range(n - 1):
        p = k + jnp.argmax(jnp.abs(A[k:, k]))
        A[[k, p]] = A[[p, k]]
        perm[[k, p]] = perm[[p, k]]
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            A[i, k + 1:] = A[i, k + 1:] - A[i, k] * A[k, k + 1:]
    return A, perm


def tail_extremes(x, k):
    return x[k:].argmin(), jnp.argmax(x[k:]), jnp.argmax(x[k::2]), jnp.argmin(x[:k])


def cholesky(A):
    n = A.shape[0]
    L = A * 0.0
    for k in range(n):
        s = (L[k, :k] * L[k, :k]).sum()
        L[k, k] = jnp.sqrt(A[k, k] - s)
        for i in range(k + 1, n):
            L[i, k] = (A[i, k] - jnp.dot(L[i, :k], L[k, :k])) / L[k, k]
    return L


def trisolv(L, b):
    n = b.shape[0]
    x = b * 0.0
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def durbin(r):
    n = r.shape[0]
    y = r * 0.0
    z = r * 0.0
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = r[k - 1::-1] @ y[:k]
        alpha = -(r[k] + s) / beta
        z[:k] = y[:k] + alpha * y[k - 1::-1]
        y[:k] = z[:k]
        y[k] = alpha
    return y


def durbin_as_written(r):
    # PolyBench's own form: a slice of a slice (`r[:k][::-1]`), read and written back
    n = r.shape[0]
    y = r * 0.0
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = r[:k][::-1] @ y[:k]
        alpha = -(r[k] + s) / beta
        y[:k] = y[:k] + alpha * y[:k][::-1]
        y[k] = alpha
    return y


def slices_of_slices(x, A):
    # each inner slice over a length that follows the loop index: empty at j = 0, wrapping
    # negative bounds, steps both ways, three slices deep, a row of a matrix
    n = x.shape[0]
    total = 0.0
    for j in range(n + 2):
        total += x[:j][::-1].sum() + x[:j][1:].sum() * 10.0 + x[:j][-2:].sum() * 100.0
        total += x[j:][::2].sum() * 0.5 + x[j:][::-3].sum() * 0.25
        total += x[j:][:-1].sum() * 1000.0 + x[:j][::-1][1:].sum() * 0.125 + x[1:j][::-2].sum() * 0.0625
        total += A[1, :j][::-1] @ x[:j] + A[:j, 2][1:].sum() * 3.0
    return total


def symm(alpha, beta, C, A, B):
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2
    return C


def syrk(alpha, beta, C, A):
    n = C.shape[0]
    for i in range(n):
        C[i, :i + 1] *= beta
        for j in range(i + 1):
            C[i, j] += alpha * jnp.sum(A[i, :] * A[j, :])
    return C


def syrk_sliced(alpha, beta, C, A):
    # the row scaled through a slice of traced length, the products over a traced slice
    n = C.shape[0]
    m = A.shape[1]
    for i in range(n):
        C[i, :i + 1] *= beta
        for j in range(i + 1):
            C[i, j] += alpha * (A[i, :m - j] @ A[j, :m - j])
    return C


def trmm(alpha, A, B):
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            B[i, j] += A[i + 1:, i] @ B[i + 1:, j]
            B[i, j] = alpha * B[i, j]
    return B


def gramschmidt_norms(A):
    n = A.shape[1]
    out = A[0] * 0.0
    for k in range(n):
        out[k] = jnp.linalg.norm(A[:k + 1, k]) + np.linalg.norm(A[k:, k])
    return out


def reductions(A):
    n = A.shape[0]
    out = A[0] * 0.0
    for k in range(n):
        out[k] = (A[k, :k].sum() + jnp.max(A[k, k:]) + sum(A[:k, k] * 2.0) - A[k:, k].min()
                  + jnp.prod(A[k, :k] + 1.0) + A[:k, k].any() + jnp.all(A[k, k:] > 0.0))
    return out


def prefix_sums_printed(x):
    n = x.shape[0]
    total = 0.0
    for j in range(n + 1):  # :0 (empty) up to :n (the whole array)
        s = x[:j].sum()
        print("prefix", j, s)
        total += s
    return total


def clipped_bounds(x):
    # bounds past the end, negative bounds and negative steps: NumPy's clipping
    n = x.shape[0]
    total = 0.0
    for j in range(n + 3):
        total += x[:j].sum() * 1.0 + x[j - 3:].sum() * 10.0 + x[j::-1].sum() * 100.0 + x[:j - n:2].sum() * 1000.0
        total += x[-j:].sum() * 0.5 + x[j:1:-2].sum() * 0.25
    return total


def masked_write_back(A):
    n = A.shape[0]
    for i in range(n):
        A[i, :i] = 0.0
        A[i, i + 1:] -= A[i - 1, i + 1:] * 0.5
    return A


def max_of_a_slice(x, k):
    total = 0.0
    for j in range(k):
        total += x[:j].max()
    return total


def unequal_lengths(r, y, k):
    total = 0.0
    for j in range(1, k):
        total += r[j - 1::-1] @ y[:j + 1]
    return total


def mean_of_a_slice(x):
    total = 0.0
    for j in range(1, x.shape[0]):
        total += jnp.mean(x[:j])
    return total


def all_paths(fn, *args, python_args=None, refusal=False, tmp_path=None, standalone=True, as_numpy=True):
    """Python's outcome (``python_args``: NumPy copies; default ``args``) against every path,
    ``--standalone`` output included."""
    python_args = args if python_args is None else python_args
    kinds = (np.ndarray, jax.Array) if as_numpy else np.ndarray
    copies = lambda: [np.array(a) if isinstance(a, kinds) else a for a in python_args]  # noqa: E731
    expected = check_all_paths(fn, *args, tmp_dir=tmp_path, python_args=copies(), refusal=refusal)
    if standalone:
        alone = _standalone(fn)
        got = run("python", jax.jit(alone), args)
        why = agrees(run("python", fn, copies()), got, "--standalone", allow_refusal=refusal)
        assert why is None, why
    return expected


def _standalone(fn):
    source = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n\n" + textwrap.dedent(inspect.getsource(fn))
    return standalone_module(source, f"slices_{fn.__name__}.py", namespace=fn.__globals__,
                             only=(fn.__name__,))[fn.__name__]


def f32(a):
    return np.asarray(a, dtype=np.float32)


def spd(n):
    a = RNG.random((n, n))
    return f32(a @ a.T + n * np.eye(n))


@pytest.fixture(autouse=True)
def _no_unrolling():
    with warnings.catch_warnings():
        warnings.simplefilter("error", autolax.UnrolledLoopWarning)
        yield


# --- item 1: slices consumed by reductions and write-backs --------------------------------

@pytest.mark.parametrize("fn", [lu, lu_functional])
def test_lu_matches_numpy_on_every_path(fn, tmp_path):
    A = spd(6)
    out = all_paths(fn, jnp.asarray(A), as_numpy=fn is lu, tmp_path=tmp_path)  # (`.at` needs a JAX array)
    assert np.abs(out.value).max() > 1.0  # (a real factorisation was compared, not zeros)


def test_slices_of_slices_match_numpy(tmp_path):
    x = f32([3.0, -1.0, 4.0, 1.5, -5.0, 9.0])
    A = np.arange(36, dtype=np.float32).reshape(6, 6) / 7.0
    out = all_paths(slices_of_slices, jnp.asarray(x), jnp.asarray(A), tmp_path=tmp_path)
    assert abs(out.value) > 100.0  # (sums of non-empty slices were compared)
    source = autolax.to_source(slices_of_slices)
    assert "ops.part(x)[:j][::-1][1:]" in source and "ops.part(A)[1, :j][::-1]" in source


def test_durbin_as_polybench_writes_it(tmp_path):
    r = f32(np.linspace(0.5, 0.01, 7))
    out = all_paths(durbin_as_written, jnp.asarray(r), python_args=[r], tmp_path=tmp_path)
    assert np.abs(out.value).max() > 0.1
    assert "ops.masked('matmul', ops.part(r)[:k][::-1], ops.part(y)[:k])" in autolax.to_source(durbin_as_written)


def test_cholesky_trisolv_durbin_match_numpy(tmp_path):
    A = spd(5)
    L = all_paths(cholesky, jnp.asarray(A), tmp_path=tmp_path).value
    np.testing.assert_allclose(np.asarray(L) @ np.asarray(L).T, A, rtol=1e-4)  # it is a Cholesky factor
    Lt, b = f32(np.tril(RNG.random((6, 6))) + 3 * np.eye(6)), f32(RNG.random(6))
    all_paths(trisolv, jnp.asarray(Lt), jnp.asarray(b), python_args=[Lt, b], tmp_path=tmp_path)
    r = f32([0.5, 0.2, 0.1, 0.05, 0.02, 0.01])
    all_paths(durbin, jnp.asarray(r), python_args=[r], tmp_path=tmp_path)


def test_symm_syrk_trmm_match_numpy(tmp_path):
    C, A, B = f32(RNG.random((4, 5))), f32(RNG.random((4, 4))), f32(RNG.random((4, 5)))
    all_paths(symm, 1.5, 1.2, jnp.asarray(C), jnp.asarray(A), jnp.asarray(B), python_args=[1.5, 1.2, C, A, B],
              tmp_path=tmp_path)
    C2, A2 = f32(RNG.random((5, 5))), f32(RNG.random((5, 3)))
    for fn in (syrk, syrk_sliced):
        all_paths(fn, 1.5, 1.2, jnp.asarray(C2), jnp.asarray(A2), python_args=[1.5, 1.2, C2, A2], tmp_path=tmp_path)
    A3, B3 = f32(RNG.random((4, 4))), f32(RNG.random((4, 3)))
    all_paths(trmm, 1.5, jnp.asarray(A3), jnp.asarray(B3), python_args=[1.5, A3, B3], tmp_path=tmp_path)


def test_every_reduction_with_an_identity_keeps_pythons_value(tmp_path):
    A = f32(RNG.random((5, 5)) - 0.3)
    all_paths(reductions, jnp.asarray(A), tmp_path=tmp_path)
    all_paths(gramschmidt_norms, jnp.asarray(A), tmp_path=tmp_path)


def test_empty_and_full_slices_print_what_python_prints(tmp_path):
    x = f32(RNG.random(5))
    out = all_paths(prefix_sums_printed, jnp.asarray(x), tmp_path=tmp_path)
    assert "prefix 0 0.0" in out.printed and out.printed.count("prefix") == 6


def test_out_of_range_bounds_and_negative_steps_clip_as_numpy(tmp_path):
    x = f32(RNG.random(6))
    all_paths(clipped_bounds, jnp.asarray(x), tmp_path=tmp_path)


def test_masked_write_backs(tmp_path):
    A = f32(RNG.random((5, 5)))
    all_paths(masked_write_back, jnp.asarray(A), python_args=[A], tmp_path=tmp_path)


def test_max_of_an_empty_slice_raises_pythons_error(tmp_path):
    x = f32(RNG.random(4))
    all_paths(max_of_a_slice, jnp.asarray(x), 3, python_args=[x, 3], tmp_path=tmp_path)  # j = 0: empty
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        autolax.jit(max_of_a_slice)(jnp.asarray(x), 3)
    x = f32([3.0, 1.0, 2.0])  # slices that are never empty: a value

    def tail_maxima(x):
        total = 0.0
        for j in range(x.shape[0]):
            total += x[j:].max()
        return total

    assert float(autolax.jit(tail_maxima)(jnp.asarray(x))) == pytest.approx(tail_maxima(x))


def test_slices_of_different_lengths_are_autolaxs_runtime_error(tmp_path):
    r, y = f32(RNG.random(5)), f32(RNG.random(5))
    # (Python on JAX arrays, as the eager path computes: NumPy's matmul raises ValueError, JAX's TypeError)
    all_paths(unequal_lengths, jnp.asarray(r), jnp.asarray(y), 3, refusal=True, as_numpy=False, tmp_path=tmp_path)
    with pytest.raises(autolax.runtime.errors.RuntimeCheckError) as info:
        autolax.jit(unequal_lengths)(jnp.asarray(r), jnp.asarray(y), 3)
    message = str(info.value)
    assert "test_slices.py:" in message and "had different lengths when the program ran" in message
    assert "total += r[j - 1::-1] @ y[:j + 1]" in message
    assert "Fix: slice both operands with the same bounds" in message


def test_a_consumer_that_needs_the_length_unrolls_and_says_why(tmp_path):
    x = f32(RNG.random(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        check_all_paths(mean_of_a_slice, jnp.asarray(x), tmp_dir=tmp_path)
    with pytest.warns(autolax.UnrolledLoopWarning, match="slices an array with traced bounds"):
        autolax.jit(mean_of_a_slice)(jnp.asarray(x))
    with pytest.raises(autolax.UnrolledLoopError) as info:
        autolax.jit(mean_of_a_slice, strict=True)(jnp.asarray(x))
    message = str(info.value)
    line = mean_of_a_slice.__code__.co_firstlineno + 3  # total += jnp.mean(x[:j])
    assert f"line {line} slices an array with traced bounds (the slice's length would depend on data)" in message
    assert "consume the slice only by a sum, product, max, min, any, all, norm, `@` / `dot` or a write-back " \
           "(autolax computes those at full length under a mask)" in message


def test_the_game_of_life_neighbour_count_is_staged(tmp_path):
    # a sum of a slice whose bounds call `max` / `min` of the loop index (tests/corpus)
    from corpus import simulations

    a = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]])
    all_paths(simulations.life_step_counting, jnp.asarray(a), 0, python_args=[a, 0], tmp_path=tmp_path,
              standalone=False)  # (--standalone: tests/integration/programs/test_real_programs.py)
    autolax.trace_check(simulations.life_step_counting, jnp.asarray(a), 0)


def trisolv_functional(L, b):
    n = b.shape[0]
    x = b * 0.0
    for i in range(n):
        x = x.at[i].set((b[i] - L[i, :i] @ x[:i]) / L[i, i])
    return x


def write_back_functional(A):  # masked_write_back in plain JAX (Python's answer under grad)
    n = A.shape[0]
    for i in range(n):
        A = A.at[i, :i].set(0.0)
        A = A.at[i, i + 1:].set(A[i, i + 1:] - A[i - 1, i + 1:] * 0.5)
    return A


def test_gradients_are_pythons():
    # (A loop `for j in range(i)` of a traced `i` is a fori_loop, which JAX cannot reverse:
    # these kernels loop over static ranges.) Python's answer: plain JAX, Python loops.
    L = jnp.asarray(np.tril(spd(5)))
    b = jnp.ones(5)

    def loss(f):
        return lambda L, b: jnp.sum(f(L, b) ** 2)

    expected = jax.grad(loss(trisolv_functional), argnums=(0, 1))(L, b)
    got = jax.jit(jax.grad(loss(autolax.convert(trisolv_functional)), argnums=(0, 1)))(L, b)
    np.testing.assert_allclose(got[0], expected[0], rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], expected[1], rtol=2e-4, atol=1e-5)
    A = jnp.asarray(spd(5))
    expected = jax.grad(lambda a: jnp.sum(write_back_functional(a) ** 2))(A)
    got = jax.jit(jax.grad(lambda a: jnp.sum(autolax.convert(masked_write_back)(a) ** 2)))(A)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-5)
    assert primitive_counts(jax.make_jaxpr(jax.grad(lambda a: jnp.sum(autolax.convert(masked_write_back)(a))))(
        A).jaxpr)["scan"] >= 2  # forward and reverse scans


def test_lu_with_partial_pivoting_matches_numpy_on_every_path(tmp_path):
    # Before: `A[k:, k]`'s argmax unrolled the loop (compile time grew with n), and JAX
    # refused the row swap's index list (TypeError) where NumPy swaps the rows.
    A = f32(RNG.random((6, 6)) - 0.5)
    out = all_paths(lu_partial_pivoting, jnp.asarray(A), tmp_path=tmp_path)
    assert list(out.value[1]) != list(range(6))  # (rows were swapped)


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_argmax_and_argmin_of_a_traced_tail_count_from_its_start(k, tmp_path):
    x = f32([3.0, 1.0, -2.0, 5.0, -2.0, 7.0])  # ties (-2.0 twice): the first one, as NumPy
    all_paths(tail_extremes, jnp.asarray(x), k, tmp_path=tmp_path)


def test_argmax_of_an_empty_slice_raises_pythons_error(tmp_path):
    x = f32([3.0, 1.0, 2.0])
    all_paths(tail_extremes, jnp.asarray(x), 0, tmp_path=tmp_path)  # x[:0].argmin(): ValueError
    with pytest.raises(ValueError, match="empty"):
        autolax.jit(tail_extremes)(jnp.asarray(x), 0)


def _jaxpr(fn, *args):
    return jax.make_jaxpr(autolax.convert(fn))(*args).jaxpr


@pytest.mark.parametrize("fn, make", [
    (lu, lambda n: (jnp.asarray(spd(n)),)),
    (cholesky, lambda n: (jnp.asarray(spd(n)),)),
    (trisolv, lambda n: (jnp.asarray(spd(n)), jnp.ones(n))),
    (durbin, lambda n: (jnp.linspace(0.5, 0.01, n),)),
    (durbin_as_written, lambda n: (jnp.linspace(0.5, 0.01, n),)),
    (masked_write_back, lambda n: (jnp.asarray(spd(n)),)),
    (lu_partial_pivoting, lambda n: (jnp.asarray(spd(n)),)),
])
def test_kernels_are_staged_and_do_not_grow_with_n(fn, make):
    small, large = _jaxpr(fn, *make(5)), _jaxpr(fn, *make(20))
    counts = primitive_counts(large)
    assert counts["scan"] + counts["while"] >= 1, counts
    assert count_equations(small) == count_equations(large)
    autolax.trace_check(fn, *make(20))  # raises UnrolledLoopError if a loop unrolled


def test_lu_is_one_masked_product_per_loop():
    source = autolax.to_source(lu)
    assert "ops.masked('matmul', ops.part(A)[i, :j], ops.part(A)[:j, j])" in source
    eqns = count_equations(_jaxpr(lu, jnp.asarray(spd(20))))
    assert eqns < 200, eqns  # (144 now; 3,449 unrolled at N = 20 on main 9ef3fc4, counted the same way)


# --- item 2: windows ------------------------------------------------------------------------

def conv2d(x, w):
    K = w.shape[0]
    n = x.shape[0] - K + 1
    out = x[:n, :n] * 0.0
    for i in range(n):
        for j in range(n):
            out[i, j] = jnp.sum(x[i:i + K, j:j + K] * w)
    return out


def window_writes(x, v):
    K = 3
    for i in range(x.shape[0] - K + 1):
        x[i:i + K] += v * i
        x[i:i + 1] = x[i:i + 1] * 0.5
    return x


def windows_past_the_end(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += jnp.sum(x[i:i + 3])
    return total


def empty_windows(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += jnp.sum(x[i:i + 0]) + 1.0
    return total


def test_conv2d_windows_are_dynamic_slices(tmp_path):
    x, w = f32(RNG.random((7, 7))), f32(RNG.random((3, 3)))
    all_paths(conv2d, jnp.asarray(x), jnp.asarray(w), python_args=[x, w], tmp_path=tmp_path)
    counts = primitive_counts(_jaxpr(conv2d, jnp.asarray(x), jnp.asarray(w)))
    assert counts["dynamic_slice"] >= 1 and counts["scan"] >= 1, counts
    small = count_equations(_jaxpr(conv2d, jnp.ones((7, 7)), jnp.ones((3, 3))))
    large = count_equations(_jaxpr(conv2d, jnp.ones((22, 22)), jnp.ones((3, 3))))
    assert small == large
    grad = jax.jit(jax.grad(lambda w: jnp.sum(autolax.convert(conv2d)(jnp.asarray(x), w))))(jnp.asarray(w))
    expected = jax.grad(lambda w: jnp.sum(_conv2d_jnp(jnp.asarray(x), w)))(jnp.asarray(w))
    np.testing.assert_allclose(grad, expected, rtol=1e-4)


def _conv2d_jnp(x, w):
    K = w.shape[0]
    n = x.shape[0] - K + 1
    return jnp.stack([jnp.stack([jnp.sum(x[i:i + K, j:j + K] * w) for j in range(n)]) for i in range(n)])


def test_window_writes(tmp_path):
    x = f32(RNG.random(6))
    all_paths(window_writes, jnp.asarray(x), 2.0, python_args=[x, 2.0], tmp_path=tmp_path)
    assert primitive_counts(_jaxpr(window_writes, jnp.asarray(x), 2.0))["dynamic_update_slice"] >= 1


def test_a_window_past_the_end_is_autolaxs_runtime_error(tmp_path):
    x = f32(RNG.random(5))
    all_paths(windows_past_the_end, jnp.asarray(x), refusal=True, tmp_path=tmp_path)
    with pytest.raises(autolax.runtime.errors.RuntimeCheckError) as info:
        autolax.jit(windows_past_the_end)(jnp.asarray(x))
    message = str(info.value)
    assert "(width 3) started outside 0..2 when the program ran: on an axis of length 5" in message
    assert "total += jnp.sum(x[i:i + 3])" in message and "test_slices.py:" in message
    assert "Fix: keep the start in range(0, 5 - 3 + 1), or pad the array" in message
    all_paths(empty_windows, jnp.asarray(x), tmp_path=tmp_path)


# --- item 3: writes through a boolean mask --------------------------------------------------

def clamp_small(x):
    for t in range(3):
        x[x <= 0.1] = 1.0
        x = x * 0.5
    return x


def nbody_softening(d2, m):
    for t in range(2):
        near = d2 > 0.25
        d2[near] = d2[near] ** -1.5
        d2[near] += m[near] * t
        d2[~near] = jnp.sqrt(d2[~near]) * 2.0
    return d2


def rows_through_a_mask(x, keep):
    for t in range(2):
        x[keep > 0.5] = x[keep > 0.5] * 2.0 + 1.0
        x[keep <= 0.5] = 0.0
    return x


def mask_values_of_the_count(x, y):
    for t in range(2):
        m = x > 0.5
        x[m] = y[:3]
    return x


def mask_read_mean(x):
    total = 0.0
    for t in range(2):
        total += x[x > 0.5].mean()
    return total


@pytest.mark.parametrize("x", [f32([0.05, 0.3, 0.09, 0.8]), f32([0.5, 0.6, 0.7, 0.8]),
                               f32([0.01, 0.02, 0.03, 0.04])], ids=["some", "none", "all"])
def test_mask_writes_with_empty_and_full_masks(x, tmp_path):
    all_paths(clamp_small, jnp.asarray(x), python_args=[x], tmp_path=tmp_path)
    m = f32(RNG.random(4))
    all_paths(nbody_softening, jnp.asarray(x + 0.2), jnp.asarray(m), python_args=[x + 0.2, m], tmp_path=tmp_path)


def test_a_mask_over_rows(tmp_path):
    x, keep = f32(RNG.random((4, 3))), f32([0.9, 0.1, 0.7, 0.2])
    all_paths(rows_through_a_mask, jnp.asarray(x), jnp.asarray(keep), python_args=[x, keep], tmp_path=tmp_path)
    counts = primitive_counts(_jaxpr(rows_through_a_mask, jnp.asarray(x), jnp.asarray(keep)))
    assert counts["select_n"] >= 1 and counts["scan"] == 1, counts


def test_mask_write_gradient_is_pythons():
    x = jnp.asarray(f32([0.05, 0.3, 0.09, 0.8]))
    m = jnp.asarray(f32(RNG.random(4)))

    def plain(d2):  # what Python computes for these values, as jnp.where
        for t in range(2):
            near = d2 > 0.25
            d2 = jnp.where(near, jnp.where(near, d2, 1.0) ** -1.5, d2)
            d2 = jnp.where(near, d2 + m * t, d2)
            d2 = jnp.where(~near, jnp.sqrt(jnp.where(~near, d2, 1.0)) * 2.0, d2)
        return jnp.sum(d2)

    got = jax.jit(jax.grad(lambda d2: jnp.sum(autolax.convert(nbody_softening)(d2, m))))(x + 0.2)
    np.testing.assert_allclose(got, jax.grad(plain)(x + 0.2), rtol=1e-5)
    assert np.all(np.isfinite(got))


def test_mask_writes_that_need_the_count_are_refused(tmp_path):
    x, y = f32([0.9, 0.1, 0.7, 0.8]), f32([0.6, 0.7, 0.8, 0.9])  # three items selected each time
    all_paths(mask_values_of_the_count, jnp.asarray(x), jnp.asarray(y), python_args=[x, y], refusal=True,
              tmp_path=tmp_path)
    with pytest.raises(autolax.TracedValueError) as info:
        autolax.jit(mask_values_of_the_count)(jnp.asarray(x), jnp.asarray(y))
    message = str(info.value)
    assert "the write through a traced boolean mask at" in message and "x[m] = y[:3]" in message
    assert "Fix: assign a scalar, or values computed item by item from reads through the same mask" in message
    with pytest.raises(autolax.TracedValueError):
        autolax.jit(mask_read_mean)(jnp.asarray(x))


# --- the %%autolax magic --------------------------------------------------------------------

@pytest.fixture(scope="module")
def ip():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    shell.run_cell("import jax\nimport jax.numpy as jnp\nimport numpy as np").raise_error()
    yield shell
    shell.extension_manager.unload_extension("autolax")
    shell.reset()


@pytest.mark.parametrize("fn, make", [
    (lu, lambda: (spd(5),)),
    (durbin, lambda: (f32([0.5, 0.2, 0.1, 0.05, 0.02]),)),
    (conv2d, lambda: (f32(RNG.random((6, 6))), f32(RNG.random((3, 3))))),
    (nbody_softening, lambda: (f32([0.05, 0.3, 0.09, 0.8]), f32(RNG.random(4)))),
])
def test_the_magic_returns_pythons_value(ip, fn, make):
    args = make()
    expected = fn(*[a.copy() for a in args])
    ip.run_cell("%%autolax\n" + textwrap.dedent(inspect.getsource(fn))).raise_error()
    got = ip.user_ns[fn.__name__](*[jnp.asarray(a) for a in args])
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-6)


def float_bound(x, t):
    total = 0.0
    for j in range(3):
        total += x[:t * j].sum() + jnp.sum(x[t:t + 2])
    return total


def test_a_float_bound_is_pythons_type_error(tmp_path):
    # (never cast to an int: Python's TypeError, or JAX's own error for the traced slice)
    x = f32(RNG.random(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autolax.UnrolledLoopWarning)
        out = check_all_paths(float_bound, jnp.asarray(x), 1.0, tmp_dir=tmp_path, refusal=True)
    assert isinstance(out.error, TypeError)


def windows_of_odd_widths(x, v):
    total = 0.0
    for i in range(x.shape[0] - 1):
        x[i:i + 0] = 5.0          # an empty window: nothing written
        total += x[i:i + 1].sum() + jnp.sum(x[i:i + 0])
        x[i:i + 1] = v[:1] * i    # a length-1 value
    return x, total


def mask_writes_of_one_item_arrays(x, v):
    for t in range(2):
        x[x > 0.5] = v[:1] * t    # a length-1 array broadcasts over the selected items
    return x


def test_empty_windows_and_length_one_values(tmp_path):
    x, v = f32(RNG.random(5)), f32([2.0, 3.0])
    all_paths(windows_of_odd_widths, jnp.asarray(x), jnp.asarray(v), python_args=[x, v], tmp_path=tmp_path)
    all_paths(mask_writes_of_one_item_arrays, jnp.asarray(x), jnp.asarray(v), python_args=[x, v],
              tmp_path=tmp_path)


def mandelbrot(c, maxiter):
    z = c * 0
    div = (c.real * 0).astype(jnp.int32) + maxiter
    for k in range(maxiter):
        m = abs(z) <= 2
        z[m] = z[m] ** 2 + c[m]
        div[m & (abs(z) > 2)] = k
    return div


def lenet_conv(x, w):
    C, H, W = x.shape
    O, _, K, _ = w.shape
    out = w[:, 0, :1, :1] * 0.0 + x[0, :H - K + 1, :W - K + 1] * 0.0  # (O, H - K + 1, W - K + 1)
    for o in range(O):
        for i in range(H - K + 1):
            for j in range(W - K + 1):
                out[o, i, j] = jnp.sum(x[:, i:i + K, j:j + K] * w[o])
    return out


def test_mandelbrot_and_a_conv_layer(tmp_path):
    c = f32(RNG.random((4, 4)) * 3 - 2) + 1j * f32(RNG.random((4, 4)) * 3 - 1.5)
    c = c.astype(np.complex64)
    all_paths(mandelbrot, jnp.asarray(c), 6, python_args=[c, 6], tmp_path=tmp_path)
    x, w = f32(RNG.random((2, 6, 6))), f32(RNG.random((3, 2, 3, 3)))
    all_paths(lenet_conv, jnp.asarray(x), jnp.asarray(w), python_args=[x, w], tmp_path=tmp_path)
    small = count_equations(_jaxpr(lenet_conv, jnp.ones((2, 6, 6)), jnp.ones((3, 2, 3, 3))))
    large = count_equations(_jaxpr(lenet_conv, jnp.ones((2, 16, 16)), jnp.ones((3, 2, 3, 3))))
    assert small == large


def lu_outer(A):
    # right-looking LU (Gaussian elimination): a column scaled, the trailing block updated
    n = A.shape[0]
    for k in range(n):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def dot_methods(A):
    s = 0.0
    for j in range(A.shape[0]):
        s += A[j, :j].dot(A[:j, j])
    return s


def test_outer_products_and_dot_methods(tmp_path):
    A = spd(6)
    all_paths(lu_outer, jnp.asarray(A), python_args=[A], tmp_path=tmp_path)
    all_paths(dot_methods, jnp.asarray(A), python_args=[A], tmp_path=tmp_path)
    source = autolax.to_source(lu_outer)
    # the bound written twice is computed once: the slices pair their items in place
    assert "bound = k + 1" in source and "ops.part(A)[bound:, k], ops.part(A)[k, bound:]" in source
    counts = primitive_counts(_jaxpr(lu_outer, jnp.asarray(A)))
    assert counts["gather"] == 0 and counts["scan"] == 1, counts
    assert count_equations(_jaxpr(lu_outer, jnp.asarray(spd(5)))) == count_equations(_jaxpr(lu_outer, jnp.asarray(spd(20))))
