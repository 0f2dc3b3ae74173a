"""The kernels of ``benchmarks.kernels`` (issue 41): loop nests of PolyBench/C 4.2, a small
conv2d and a CRC-16, each written twice.

* ``loops``: the Python loops a NumPy user writes from the C loop nest -- the loops kept,
  ``x[i, j] = ...`` writes, the innermost loop vectorized where NumPy makes that natural
  (``A[i, :j] @ A[:j, j]`` where C loops over ``k < j``). Array creation goes through the
  module global ``xp``: ``jax.numpy`` for autolax, NumPy for the reference, which runs the
  same function object's code in plain Python on NumPy arrays (``reference``).
* ``twin``: the JAX an expert writes by hand for the same kernel (vectorized, or
  ``lax.fori_loop`` / ``lax.scan``, masked where the C bounds vary with a loop index).

Time-step counts are Python constants (``TSTEPS``), as PolyBench's are compile-time ones;
loop bounds come from the arrays' shapes. ``Kernel.args(n)`` builds float32 inputs of
problem size ``n`` (deterministic).
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import numpy as np
from jax import lax

xp = jnp  # the array module of the loop versions (NumPy for the reference: see `reference`)

TSTEPS = 4
ALPHA, BETA = 1.5, 1.2


@dataclass
class Kernel:
    name: str
    loops: Callable  # the NumPy user's Python loops (autolax converts them)
    twin: Callable  # the expert's JAX
    args: Callable  # n -> tuple of np.float32 arrays
    sizes: tuple = (8, 24, 64)  # problem sizes of the first-call column (the last: steady state)
    source: str = "PolyBench/C 4.2"
    rtol: float = 2e-3


def reference(fn):
    """``fn``'s code run by plain Python with ``xp = numpy`` (the NumPy reference)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "xp": np}, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def _rand(n, *shape, seed=0):
    rng = np.random.RandomState(seed + 7 * n)
    return rng.uniform(0.0, 1.0, shape).astype(np.float32)


def _spd(n):
    a = _rand(n, n, n)
    return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def _lower_unit(n):
    a = np.tril(_rand(n, n, n, seed=3), -1) / n
    return (a + np.eye(n, dtype=np.float32)).astype(np.float32)


def _under(i, n):
    """Mask of the first ``i`` positions of ``n`` (``k < i``)."""
    return jnp.arange(n) < i


# ============================================================================ BLAS-like
def gemm(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :] *= BETA
        for k in range(A.shape[1]):
            C[i, :] += ALPHA * A[i, k] * B[k, :]
    return C


def gemm_twin(A, B, C):
    return ALPHA * A @ B + BETA * C


def gemver(A, u1, v1, u2, v2, y, z):
    A = A.copy()
    n = A.shape[0]
    x = xp.zeros(n, dtype=A.dtype)
    w = xp.zeros(n, dtype=A.dtype)
    for i in range(n):
        A[i, :] = A[i, :] + u1[i] * v1 + u2[i] * v2
    for i in range(n):
        x[i] = x[i] + BETA * (A[:, i] @ y)
    x = x + z
    for i in range(n):
        w[i] = w[i] + ALPHA * (A[i, :] @ x)
    return A, x, w


def gemver_twin(A, u1, v1, u2, v2, y, z):
    A = A + jnp.outer(u1, v1) + jnp.outer(u2, v2)
    x = BETA * (A.T @ y) + z
    w = ALPHA * (A @ x)
    return A, x, w


def gesummv(A, B, x):
    n = A.shape[0]
    y = xp.zeros(n, dtype=A.dtype)
    for i in range(n):
        tmp = A[i, :] @ x
        y[i] = B[i, :] @ x
        y[i] = ALPHA * tmp + BETA * y[i]
    return y


def gesummv_twin(A, B, x):
    return ALPHA * (A @ x) + BETA * (B @ x)


def symm(A, B, C):
    C = C.copy()
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            C[:i, j] += ALPHA * B[i, j] * A[i, :i]
            temp2 = B[:i, j] @ A[i, :i]
            C[i, j] = BETA * C[i, j] + ALPHA * B[i, j] * A[i, i] + ALPHA * temp2
    return C


def symm_twin(A, B, C):
    m = C.shape[0]

    def row(i, C):
        a = jnp.where(_under(i, m), A[i], 0.0)  # A[i, :i], masked to full length
        C = C + ALPHA * a[:, None] * B[i][None, :]
        temp2 = a @ B
        return C.at[i].set(BETA * C[i] + ALPHA * B[i] * A[i, i] + ALPHA * temp2)

    return lax.fori_loop(0, m, row, C)


def syrk(A, C):
    C = C.copy()
    n, m = A.shape
    for i in range(n):
        C[i, :i + 1] *= BETA
        for k in range(m):
            C[i, :i + 1] += ALPHA * A[i, k] * A[:i + 1, k]
    return C


def syrk_twin(A, C):
    n = C.shape[0]
    lower = jnp.tril(jnp.ones((n, n), bool))
    return jnp.where(lower, BETA * C + ALPHA * (A @ A.T), C)


def syr2k(A, B, C):
    C = C.copy()
    n, m = A.shape
    for i in range(n):
        C[i, :i + 1] *= BETA
        for k in range(m):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
    return C


def syr2k_twin(A, B, C):
    n = C.shape[0]
    lower = jnp.tril(jnp.ones((n, n), bool))
    return jnp.where(lower, BETA * C + ALPHA * (B @ A.T + A @ B.T), C)


def trmm(A, B):
    B = B.copy()
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            B[i, j] += A[i + 1:, i] @ B[i + 1:, j]
            B[i, j] *= ALPHA
    return B


def trmm_twin(A, B):
    return ALPHA * (B + jnp.tril(A, -1).T @ B)


def two_mm(A, B, C, D):
    ni, nj = A.shape[0], B.shape[1]
    nl = C.shape[1]
    tmp = xp.zeros((ni, nj), dtype=A.dtype)
    D = D.copy()
    for i in range(ni):
        for j in range(nj):
            tmp[i, j] = ALPHA * (A[i, :] @ B[:, j])
    for i in range(ni):
        for j in range(nl):
            D[i, j] = BETA * D[i, j] + tmp[i, :] @ C[:, j]
    return D


def two_mm_twin(A, B, C, D):
    return ALPHA * (A @ B) @ C + BETA * D


def three_mm(A, B, C, D):
    E = xp.zeros((A.shape[0], B.shape[1]), dtype=A.dtype)
    F = xp.zeros((C.shape[0], D.shape[1]), dtype=A.dtype)
    G = xp.zeros((A.shape[0], D.shape[1]), dtype=A.dtype)
    for i in range(E.shape[0]):
        for j in range(E.shape[1]):
            E[i, j] = A[i, :] @ B[:, j]
    for i in range(F.shape[0]):
        for j in range(F.shape[1]):
            F[i, j] = C[i, :] @ D[:, j]
    for i in range(G.shape[0]):
        for j in range(G.shape[1]):
            G[i, j] = E[i, :] @ F[:, j]
    return G


def three_mm_twin(A, B, C, D):
    return (A @ B) @ (C @ D)


def atax(A, x):
    n = A.shape[1]
    y = xp.zeros(n, dtype=A.dtype)
    for i in range(A.shape[0]):
        tmp = A[i, :] @ x
        y = y + tmp * A[i, :]
    return y


def atax_twin(A, x):
    return A.T @ (A @ x)


def bicg(A, p, r):
    s = xp.zeros(A.shape[1], dtype=A.dtype)
    q = xp.zeros(A.shape[0], dtype=A.dtype)
    for i in range(A.shape[0]):
        s = s + r[i] * A[i, :]
        q[i] = A[i, :] @ p
    return s, q


def bicg_twin(A, p, r):
    return r @ A, A @ p


def doitgen(A, C4):
    A = A.copy()
    for r in range(A.shape[0]):
        for q in range(A.shape[1]):
            A[r, q, :] = A[r, q, :] @ C4
    return A


def doitgen_twin(A, C4):
    return jnp.einsum("rqs,sp->rqp", A, C4)


def mvt(A, y1, y2):
    n = A.shape[0]
    x1 = xp.zeros(n, dtype=A.dtype)
    x2 = xp.zeros(n, dtype=A.dtype)
    for i in range(n):
        x1[i] += A[i, :] @ y1
    for i in range(n):
        x2[i] += A[:, i] @ y2
    return x1, x2


def mvt_twin(A, y1, y2):
    return A @ y1, A.T @ y2


# ============================================================================ solvers
def cholesky(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = xp.sqrt(A[i, i])
    return A


def cholesky_twin(A):
    n = A.shape[0]

    def row(i, A):
        def col(j, A):
            s = jnp.where(_under(j, n), A[i] * A[j], 0.0).sum()
            return A.at[i, j].set((A[i, j] - s) / A[j, j])

        A = lax.fori_loop(0, i, col, A)
        s = jnp.where(_under(i, n), A[i] * A[i], 0.0).sum()
        return A.at[i, i].set(jnp.sqrt(A[i, i] - s))

    return lax.fori_loop(0, n, row, A)


def durbin(r):
    n = r.shape[0]
    y = xp.zeros(n, dtype=r.dtype)
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


def durbin_twin(r):
    n = r.shape[0]
    idx = jnp.arange(n)

    def step(k, carry):
        y, alpha, beta = carry
        beta = (1 - alpha * alpha) * beta
        mask = idx < k
        rev = jnp.clip(k - 1 - idx, 0, n - 1)  # y[:k][::-1][i] = y[k - 1 - i]
        s = jnp.where(mask, r[rev] * y, 0.0).sum()
        alpha = -(r[k] + s) / beta
        y = jnp.where(mask, y + alpha * y[rev], y)
        return y.at[k].set(alpha), alpha, beta

    y0 = jnp.zeros(n, r.dtype).at[0].set(-r[0])
    return lax.fori_loop(1, n, step, (y0, -r[0], jnp.asarray(1.0, r.dtype)))[0]


def gramschmidt(A):
    A = A.copy()
    m, n = A.shape
    R = xp.zeros((n, n), dtype=A.dtype)
    Q = xp.zeros((m, n), dtype=A.dtype)
    for k in range(n):
        nrm = A[:, k] @ A[:, k]
        R[k, k] = xp.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = Q[:, k] @ A[:, j]
            A[:, j] = A[:, j] - Q[:, k] * R[k, j]
    return A, R, Q


def gramschmidt_twin(A):
    m, n = A.shape
    cols = jnp.arange(n)

    def step(k, carry):
        A, R, Q = carry
        rkk = jnp.sqrt(A[:, k] @ A[:, k])
        q = A[:, k] / rkk
        r = jnp.where(cols > k, q @ A, 0.0)
        R = R.at[k].set(jnp.where(cols == k, rkk, r))
        return A - q[:, None] * r[None, :], R, Q.at[:, k].set(q)

    return lax.fori_loop(0, n, step, (A, jnp.zeros((n, n), A.dtype), jnp.zeros((m, n), A.dtype)))


def lu(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def _lu_twin(A):
    n = A.shape[0]

    def row(i, A):
        def col(j, A):
            s = jnp.where(_under(j, n), A[i], 0.0) @ A[:, j]
            return A.at[i, j].set((A[i, j] - s) / A[j, j])

        A = lax.fori_loop(0, i, col, A)
        s = jnp.where(_under(i, n), A[i], 0.0) @ A  # A[i, :i] @ A[:i, j] for every j
        return A.at[i].set(jnp.where(jnp.arange(n) >= i, A[i] - s, A[i]))

    return lax.fori_loop(0, n, row, A)


lu_twin = _lu_twin


def ludcmp(A, b):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    y = xp.zeros(n, dtype=A.dtype)
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = xp.zeros(n, dtype=A.dtype)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def ludcmp_twin(A, b):
    A = _lu_twin(A)
    n = A.shape[0]
    idx = jnp.arange(n)

    def forward(i, y):
        return y.at[i].set(b[i] - jnp.where(idx < i, A[i], 0.0) @ y)

    def backward(k, x):
        i = n - 1 - k
        return x.at[i].set((y[i] - jnp.where(idx > i, A[i], 0.0) @ x) / A[i, i])

    y = lax.fori_loop(0, n, forward, jnp.zeros(n, A.dtype))
    return lax.fori_loop(0, n, backward, jnp.zeros(n, A.dtype))


def trisolv(L, b):
    n = L.shape[0]
    x = xp.zeros(n, dtype=L.dtype)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def trisolv_twin(L, b):
    n = L.shape[0]

    def row(i, x):
        return x.at[i].set((b[i] - jnp.where(_under(i, n), L[i], 0.0) @ x) / L[i, i])

    return lax.fori_loop(0, n, row, jnp.zeros(n, L.dtype))


# ============================================================================ data mining
def correlation(data):
    n, m = data.shape
    eps = 0.1
    mean = xp.zeros(m, dtype=data.dtype)
    stddev = xp.zeros(m, dtype=data.dtype)
    for j in range(m):
        mean[j] = data[:, j].sum() / n
    for j in range(m):
        stddev[j] = xp.sqrt(((data[:, j] - mean[j]) ** 2).sum() / n)
    stddev[stddev <= eps] = 1.0
    data = (data - mean) / (math.sqrt(n) * stddev)
    corr = xp.zeros((m, m), dtype=data.dtype)
    for i in range(m - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, m):
            corr[i, j] = corr[j, i] = data[:, i] @ data[:, j]
    corr[m - 1, m - 1] = 1.0
    return corr


def correlation_twin(data):
    n, m = data.shape
    mean = data.mean(0)
    stddev = jnp.sqrt(((data - mean) ** 2).mean(0))
    stddev = jnp.where(stddev <= 0.1, 1.0, stddev)
    d = (data - mean) / (math.sqrt(n) * stddev)
    corr = d.T @ d
    return jnp.where(jnp.eye(m, dtype=bool), 1.0, corr)


def covariance(data):
    n, m = data.shape
    mean = xp.zeros(m, dtype=data.dtype)
    for j in range(m):
        mean[j] = data[:, j].sum() / n
    data = data - mean
    cov = xp.zeros((m, m), dtype=data.dtype)
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = cov[j, i] = (data[:, i] @ data[:, j]) / (n - 1.0)
    return cov


def covariance_twin(data):
    d = data - data.mean(0)
    return d.T @ d / (data.shape[0] - 1.0)


# ============================================================================ medley
def _deriche_coefficients(alpha=0.25):
    k = (1.0 - math.exp(-alpha)) ** 2 / (1.0 + 2.0 * alpha * math.exp(-alpha) - math.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * math.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * math.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * math.exp(-2.0 * alpha)
    b1 = 2.0 ** (-alpha)
    b2 = -math.exp(-2.0 * alpha)
    return a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, 1.0, 1.0


DERICHE = _deriche_coefficients()


def deriche(img):
    a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, c1, c2 = DERICHE
    w, h = img.shape
    y1 = xp.zeros((w, h), dtype=img.dtype)
    y2 = xp.zeros((w, h), dtype=img.dtype)
    ym1 = xp.zeros(w, dtype=img.dtype)
    ym2 = xp.zeros(w, dtype=img.dtype)
    xm1 = xp.zeros(w, dtype=img.dtype)
    for j in range(h):  # the rows filtered together: the recursion runs along j
        y1[:, j] = a1 * img[:, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
        xm1 = img[:, j]
        ym2 = ym1
        ym1 = y1[:, j]
    yp1 = xp.zeros(w, dtype=img.dtype)
    yp2 = xp.zeros(w, dtype=img.dtype)
    xp1 = xp.zeros(w, dtype=img.dtype)
    xp2 = xp.zeros(w, dtype=img.dtype)
    for j in range(h - 1, -1, -1):
        y2[:, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
        xp2 = xp1
        xp1 = img[:, j]
        yp2 = yp1
        yp1 = y2[:, j]
    out = c1 * (y1 + y2)
    tm1 = xp.zeros(h, dtype=img.dtype)
    ym1 = xp.zeros(h, dtype=img.dtype)
    ym2 = xp.zeros(h, dtype=img.dtype)
    for i in range(w):
        y1[i, :] = a5 * out[i, :] + a6 * tm1 + b1 * ym1 + b2 * ym2
        tm1 = out[i, :]
        ym2 = ym1
        ym1 = y1[i, :]
    tp1 = xp.zeros(h, dtype=img.dtype)
    tp2 = xp.zeros(h, dtype=img.dtype)
    yp1 = xp.zeros(h, dtype=img.dtype)
    yp2 = xp.zeros(h, dtype=img.dtype)
    for i in range(w - 1, -1, -1):
        y2[i, :] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
        tp2 = tp1
        tp1 = out[i, :]
        yp2 = yp1
        yp1 = y2[i, :]
    return c2 * (y1 + y2)


def deriche_twin(img):
    a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, c1, c2 = DERICHE

    def causal(x, ca, cb):  # y[t] = ca * x[t] + cb * x[t-1] + b1 y[t-1] + b2 y[t-2], along axis 0
        def step(c, xt):
            xm1, ym1, ym2 = c
            y = ca * xt + cb * xm1 + b1 * ym1 + b2 * ym2
            return (xt, y, ym1), y
        z = jnp.zeros_like(x[0])
        return lax.scan(step, (z, z, z), x)[1]

    def anticausal(x, ca, cb):  # y[t] = ca * x[t+1] + cb * x[t+2] + b1 y[t+1] + b2 y[t+2]
        def step(c, xt):
            xp1, xp2, yp1, yp2 = c
            y = ca * xp1 + cb * xp2 + b1 * yp1 + b2 * yp2
            return (xt, xp1, y, yp1), y
        z = jnp.zeros_like(x[0])
        return lax.scan(step, (z, z, z, z), x, reverse=True)[1]

    cols = img.T  # the recursion along j: scan over columns
    out = c1 * (causal(cols, a1, a2) + anticausal(cols, a3, a4)).T
    return c2 * (causal(out, a5, a6) + anticausal(out, a7, a8))


def floyd_warshall(path):
    path = path.copy()
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            path[i, :] = xp.minimum(path[i, :], path[i, k] + path[k, :])
    return path


def floyd_warshall_twin(path):
    def step(k, p):
        return jnp.minimum(p, p[:, k, None] + p[None, k, :])

    return lax.fori_loop(0, path.shape[0], step, path)


# ============================================================================ stencils
def adi(u):
    # PolyBench's ADI: column sweeps then row sweeps, each a tridiagonal (Thomas) solve whose
    # recursion runs along one axis; the other axis vectorized, as NumPy users write it.
    n = u.shape[0]
    dx = 1.0 / n
    dt = 1.0 / TSTEPS
    b1, b2 = 2.0, 1.0
    mul1 = b1 * dt / (dx * dx)
    mul2 = b2 * dt / (dx * dx)
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    u = u.copy()
    v = xp.zeros((n, n), dtype=u.dtype)
    p = xp.zeros((n, n), dtype=u.dtype)
    q = xp.zeros((n, n), dtype=u.dtype)
    for t in range(TSTEPS):
        v[0, 1:n - 1] = 1.0
        p[1:n - 1, 0] = 0.0
        q[1:n - 1, 0] = v[0, 1:n - 1]
        for j in range(1, n - 1):
            p[1:n - 1, j] = -c / (a * p[1:n - 1, j - 1] + b)
            q[1:n - 1, j] = (-d * u[1:n - 1, j - 1] + (1.0 + 2.0 * d) * u[1:n - 1, j] - f * u[1:n - 1, j + 1]
                             - a * q[1:n - 1, j - 1]) / (a * p[1:n - 1, j - 1] + b)
        v[n - 1, 1:n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1:n - 1] = p[1:n - 1, j] * v[j + 1, 1:n - 1] + q[1:n - 1, j]
        u[1:n - 1, 0] = 1.0
        p[1:n - 1, 0] = 0.0
        q[1:n - 1, 0] = u[1:n - 1, 0]
        for j in range(1, n - 1):
            p[1:n - 1, j] = -f / (d * p[1:n - 1, j - 1] + e)
            q[1:n - 1, j] = (-a * v[1:n - 1, j - 1] + (1.0 + 2.0 * a) * v[1:n - 1, j] - c * v[1:n - 1, j + 1]
                             - d * q[1:n - 1, j - 1]) / (d * p[1:n - 1, j - 1] + e)
        u[1:n - 1, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
    return u


def adi_twin(u):
    n = u.shape[0]
    dx = 1.0 / n
    dt = 1.0 / TSTEPS
    mul1 = 2.0 * dt / (dx * dx)
    mul2 = 1.0 * dt / (dx * dx)
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    inner = slice(1, n - 1)

    def sweep(src, lo, pa, pb, pc, qa, qb, qc):
        # forward: p, q along axis 1 of `src` (rows 1..n-2 together); back substitution: the
        # columns j = n-2 .. 1 of the result, with the boundary `lo` at column 0 and 1 at n-1
        def fwd(carry, j):
            pm, qm = carry
            den = pa * pm + pb
            pj = -pc / den
            qj = (qa * src[inner, j - 1] + qb * src[inner, j] + qc * src[inner, j + 1] - pa * qm) / den
            return (pj, qj), (pj, qj)

        zero = jnp.zeros(n - 2, src.dtype)
        _, (ps, qs) = lax.scan(fwd, (zero, lo), jnp.arange(1, n - 1))

        def back(x_next, pq):
            pj, qj = pq
            x = pj * x_next + qj
            return x, x

        _, xs = lax.scan(back, jnp.ones(n - 2, src.dtype), (ps, qs), reverse=True)
        return xs  # xs[j - 1] = the solution at column j, j = 1 .. n-2

    def step(_, u):
        # column sweep: v[j, 1:n-1] solved along j from u's rows
        xs = sweep(u, jnp.ones(n - 2, u.dtype), a, b, c, -d, 1.0 + 2.0 * d, -f)
        v = jnp.zeros((n, n), u.dtype).at[0, inner].set(1.0).at[n - 1, inner].set(1.0).at[inner, inner].set(xs)
        # row sweep: u[1:n-1, j] solved along j from v's rows
        xs = sweep(v, jnp.ones(n - 2, u.dtype), d, e, f, -a, 1.0 + 2.0 * a, -c)
        return u.at[inner, 0].set(1.0).at[inner, n - 1].set(1.0).at[inner, inner].set(xs.T)

    return lax.fori_loop(0, TSTEPS, step, u)


def fdtd_2d(ex, ey, hz):
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    nx, ny = ex.shape
    for t in range(TSTEPS):
        ey[0, :] = t
        for i in range(1, nx):
            ey[i, :] = ey[i, :] - 0.5 * (hz[i, :] - hz[i - 1, :])
        for i in range(nx):
            ex[i, 1:] = ex[i, 1:] - 0.5 * (hz[i, 1:] - hz[i, :-1])
        for i in range(nx - 1):
            hz[i, :-1] = hz[i, :-1] - 0.7 * (ex[i, 1:] - ex[i, :-1] + ey[i + 1, :-1] - ey[i, :-1])
    return ex, ey, hz


def fdtd_2d_twin(ex, ey, hz):
    def step(t, c):
        ex, ey, hz = c
        ey = ey.at[1:].add(-0.5 * (hz[1:] - hz[:-1])).at[0].set(t.astype(ey.dtype))
        ex = ex.at[:, 1:].add(-0.5 * (hz[:, 1:] - hz[:, :-1]))
        hz = hz.at[:-1, :-1].add(-0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]))
        return ex, ey, hz

    return lax.fori_loop(0, TSTEPS, step, (ex, ey, hz))


def heat_3d(A):
    A = A.copy()
    B = A.copy()
    n = A.shape[0]
    for t in range(TSTEPS):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j, 1:-1] = (0.125 * (A[i + 1, j, 1:-1] - 2.0 * A[i, j, 1:-1] + A[i - 1, j, 1:-1])
                                 + 0.125 * (A[i, j + 1, 1:-1] - 2.0 * A[i, j, 1:-1] + A[i, j - 1, 1:-1])
                                 + 0.125 * (A[i, j, 2:] - 2.0 * A[i, j, 1:-1] + A[i, j, :-2]) + A[i, j, 1:-1])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j, 1:-1] = (0.125 * (B[i + 1, j, 1:-1] - 2.0 * B[i, j, 1:-1] + B[i - 1, j, 1:-1])
                                 + 0.125 * (B[i, j + 1, 1:-1] - 2.0 * B[i, j, 1:-1] + B[i, j - 1, 1:-1])
                                 + 0.125 * (B[i, j, 2:] - 2.0 * B[i, j, 1:-1] + B[i, j, :-2]) + B[i, j, 1:-1])
    return A


def _heat_step(A):
    c = A[1:-1, 1:-1, 1:-1]
    new = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * c + A[:-2, 1:-1, 1:-1])
           + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * c + A[1:-1, :-2, 1:-1])
           + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * c + A[1:-1, 1:-1, :-2]) + c)
    return new


def heat_3d_twin(A):
    def step(_, c):
        A, B = c
        B = B.at[1:-1, 1:-1, 1:-1].set(_heat_step(A))
        A = A.at[1:-1, 1:-1, 1:-1].set(_heat_step(B))
        return A, B

    return lax.fori_loop(0, TSTEPS, step, (A, A))[0]


def jacobi_1d(A):
    A = A.copy()
    B = A.copy()
    n = A.shape[0]
    for t in range(TSTEPS):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A


def jacobi_1d_twin(A):
    def step(_, c):
        A, B = c
        B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
        A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
        return A, B

    return lax.fori_loop(0, TSTEPS, step, (A, A))[0]


def jacobi_2d(A):
    A = A.copy()
    B = A.copy()
    n = A.shape[0]
    for t in range(TSTEPS):
        for i in range(1, n - 1):
            B[i, 1:-1] = 0.2 * (A[i, 1:-1] + A[i, :-2] + A[i, 2:] + A[i + 1, 1:-1] + A[i - 1, 1:-1])
        for i in range(1, n - 1):
            A[i, 1:-1] = 0.2 * (B[i, 1:-1] + B[i, :-2] + B[i, 2:] + B[i + 1, 1:-1] + B[i - 1, 1:-1])
    return A


def jacobi_2d_twin(A):
    def sweep(A):
        return 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])

    def step(_, c):
        A, B = c
        B = B.at[1:-1, 1:-1].set(sweep(A))
        A = A.at[1:-1, 1:-1].set(sweep(B))
        return A, B

    return lax.fori_loop(0, TSTEPS, step, (A, A))[0]


def seidel_2d(A):
    A = A.copy()
    n = A.shape[0]
    for t in range(TSTEPS):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] += (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j + 1]
                            + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1])
                A[i, j] /= 9.0
    return A


def seidel_2d_twin(A):
    n = A.shape[0]

    def point(k, A):  # the in-place dependencies allow no vectorization: one update per point
        i, j = 1 + k // (n - 2), 1 + k % (n - 2)
        w = lax.dynamic_slice(A, (i - 1, j - 1), (3, 3))
        return A.at[i, j].set(w.sum() / 9.0)

    return lax.fori_loop(0, TSTEPS * (n - 2) ** 2, lambda k, A: point(k % ((n - 2) ** 2), A), A)


# ============================================================================ extras
K = 3


def conv2d(x, w):
    h, wd = x.shape
    out = xp.zeros((h - K + 1, wd - K + 1), dtype=x.dtype)
    for i in range(h - K + 1):
        for j in range(wd - K + 1):
            out[i, j] = (x[i:i + K, j:j + K] * w).sum()
    return out


def conv2d_twin(x, w):
    return lax.conv_general_dilated(x[None, None], w[None, None], (1, 1), "VALID")[0, 0]


def crc16(data):
    crc = 0xFFFF
    for b in data:
        crc = crc ^ (b << 8)
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def crc16_twin(data):
    def byte(crc, b):
        crc = crc ^ (b << 8)

        def bit(_, crc):
            shifted = (crc << 1) & 0xFFFF
            return jnp.where(crc & 0x8000, shifted ^ 0x1021, shifted)

        return lax.fori_loop(0, 8, bit, crc), None

    return lax.scan(byte, jnp.int32(0xFFFF), data)[0]


# ============================================================================ the suite
def _mats(*shapes):
    return lambda n: tuple(_rand(n, *[n if s == "n" else s for s in shape], seed=k) for k, shape in enumerate(shapes))


KERNELS = [
    Kernel("gemm", gemm, gemm_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("gemver", gemver, gemver_twin, _mats(("n", "n"), ("n",), ("n",), ("n",), ("n",), ("n",), ("n",))),
    Kernel("gesummv", gesummv, gesummv_twin, _mats(("n", "n"), ("n", "n"), ("n",))),
    Kernel("symm", symm, symm_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("syr2k", syr2k, syr2k_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("syrk", syrk, syrk_twin, _mats(("n", "n"), ("n", "n"))),
    Kernel("trmm", trmm, trmm_twin, lambda n: (_lower_unit(n), _rand(n, n, n, seed=1))),
    Kernel("2mm", two_mm, two_mm_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("3mm", three_mm, three_mm_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("atax", atax, atax_twin, _mats(("n", "n"), ("n",))),
    Kernel("bicg", bicg, bicg_twin, _mats(("n", "n"), ("n",), ("n",))),
    Kernel("doitgen", doitgen, doitgen_twin, _mats(("n", "n", "n"), ("n", "n")), sizes=(4, 12, 24)),
    Kernel("mvt", mvt, mvt_twin, _mats(("n", "n"), ("n",), ("n",))),
    Kernel("cholesky", cholesky, cholesky_twin, lambda n: (_spd(n),)),
    Kernel("durbin", durbin, durbin_twin, lambda n: ((0.5 ** np.arange(1, n + 1)).astype(np.float32) * 0.5,)),
    Kernel("gramschmidt", gramschmidt, gramschmidt_twin, lambda n: (_spd(n),)),
    Kernel("lu", lu, lu_twin, lambda n: (_spd(n),)),
    Kernel("ludcmp", ludcmp, ludcmp_twin, lambda n: (_spd(n), _rand(n, n, seed=2))),
    Kernel("trisolv", trisolv, trisolv_twin, lambda n: (_lower_unit(n), _rand(n, n, seed=2))),
    Kernel("correlation", correlation, correlation_twin, _mats(("n", "n"))),
    Kernel("covariance", covariance, covariance_twin, _mats(("n", "n"))),
    Kernel("deriche", deriche, deriche_twin, _mats(("n", "n"))),
    Kernel("floyd-warshall", floyd_warshall, floyd_warshall_twin,
           lambda n: ((_rand(n, n, n) * (1 - np.eye(n))).astype(np.float32),)),
    Kernel("adi", adi, adi_twin, _mats(("n", "n")), rtol=1e-2),
    Kernel("fdtd-2d", fdtd_2d, fdtd_2d_twin, _mats(("n", "n"), ("n", "n"), ("n", "n"))),
    Kernel("heat-3d", heat_3d, heat_3d_twin, _mats(("n", "n", "n")), sizes=(6, 12, 24)),
    Kernel("jacobi-1d", jacobi_1d, jacobi_1d_twin, _mats(("n",)), sizes=(16, 128, 512)),
    Kernel("jacobi-2d", jacobi_2d, jacobi_2d_twin, _mats(("n", "n"))),
    Kernel("seidel-2d", seidel_2d, seidel_2d_twin, _mats(("n", "n"))),
    Kernel("conv2d", conv2d, conv2d_twin, lambda n: (_rand(n, n, n), _rand(n, K, K, seed=1)), source="extra"),
    Kernel("crc16", crc16, crc16_twin,
           lambda n: (np.random.RandomState(n).randint(0, 256, 4 * n).astype(np.int32),), source="extra"),
]

BY_NAME = {k.name: k for k in KERNELS}
