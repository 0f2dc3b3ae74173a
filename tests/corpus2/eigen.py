"""Symmetric eigenvalue problems by transformation (chapter 9)."""

from math import sqrt

import jax.numpy as jnp


# after Numerical_Eng_Python/swap.py: swapRows, swapCols
def swap_rows(v, i, j):
    if len(v.shape) == 1:
        v[i], v[j] = v[j], v[i]
    else:
        temp = v[i].copy()
        v[i] = v[j]
        v[j] = temp


def swap_cols(v, i, j):
    temp = v[:, j].copy()
    v[:, j] = v[:, i]
    v[:, i] = temp


# after Numerical_Eng_Python/householder.py: householder, computeP
def householder(a):
    n = len(a)
    for k in range(n - 2):
        u = a[k + 1:n, k]
        u_mag = sqrt(jnp.dot(u, u))
        if u[0] < 0.0:
            u_mag = -u_mag
        u[0] = u[0] + u_mag
        h = jnp.dot(u, u) / 2.0
        v = jnp.dot(a[k + 1:n, k + 1:n], u) / h
        g = jnp.dot(u, v) / (2.0 * h)
        v = v - g * u
        a[k + 1:n, k + 1:n] = a[k + 1:n, k + 1:n] - jnp.outer(v, u) - jnp.outer(u, v)
        a[k, k + 1] = -u_mag
    return jnp.diagonal(a), jnp.diagonal(a, 1)


def compute_p(a):
    n = len(a)
    p = jnp.identity(n) * 1.0
    for k in range(n - 2):
        u = a[k + 1:n, k]
        h = jnp.dot(u, u) / 2.0
        v = jnp.dot(p[1:n, k + 1:n], u) / h
        p[1:n, k + 1:n] = p[1:n, k + 1:n] - jnp.outer(v, u)
    return p


def householder_and_p(a):
    d, c = householder(a)
    return d, c, compute_p(a)


# after Numerical_Eng_Python/jacobi.py: jacobi
def jacobi(a, tol=1.0e-9):

    def max_elem(a):
        n = len(a)
        a_max = 0.0
        for i in range(n - 1):
            for j in range(i + 1, n):
                if abs(a[i, j]) >= a_max:
                    a_max = abs(a[i, j])
                    k = i
                    l = j  # noqa: E741 - the book's name
        return a_max, k, l

    def rotate(a, p, k, l):  # noqa: E741
        n = len(a)
        a_diff = a[l, l] - a[k, k]
        if abs(a[k, l]) < abs(a_diff) * 1.0e-36:
            t = a[k, l] / a_diff
        else:
            phi = a_diff / (2.0 * a[k, l])
            t = 1.0 / (abs(phi) + sqrt(phi ** 2 + 1.0))
            if phi < 0.0:
                t = -t
        c = 1.0 / sqrt(t ** 2 + 1.0)
        s = t * c
        tau = s / (1.0 + c)
        temp = a[k, l]
        a[k, l] = 0.0
        a[k, k] = a[k, k] - t * temp
        a[l, l] = a[l, l] + t * temp
        for i in range(k):
            temp = a[i, k]
            a[i, k] = temp - s * (a[i, l] + tau * temp)
            a[i, l] = a[i, l] + s * (temp - tau * a[i, l])
        for i in range(k + 1, l):
            temp = a[k, i]
            a[k, i] = temp - s * (a[i, l] + tau * a[k, i])
            a[i, l] = a[i, l] + s * (temp - tau * a[i, l])
        for i in range(l + 1, n):
            temp = a[k, i]
            a[k, i] = temp - s * (a[l, i] + tau * temp)
            a[l, i] = a[l, i] + s * (temp - tau * a[l, i])
        for i in range(n):
            temp = p[i, k]
            p[i, k] = temp - s * (p[i, l] + tau * p[i, k])
            p[i, l] = p[i, l] + s * (temp - tau * p[i, l])

    n = len(a)
    max_rot = 5 * (n ** 2)
    p = jnp.identity(n) * 1.0
    for i in range(max_rot):
        a_max, k, l = max_elem(a)
        if a_max < tol:
            return jnp.diagonal(a), p
        rotate(a, p, k, l)
    print('Jacobi method did not converge')


# after Numerical_Eng_Python/sortJacobi.py: sortJacobi (returns its arguments, sorted in place)
def sort_jacobi(lam, x):
    n = len(lam)
    for i in range(n - 1):
        index = i
        val = lam[i]
        for j in range(i + 1, n):
            if lam[j] < val:
                index = j
                val = lam[j]
        if index != i:
            swap_rows(lam, i, index)
            swap_cols(x, i, index)
    return lam, x
