"""Interpolation (chapter 3) and numerical integration (chapter 6)."""

from math import cos, pi

import jax.numpy as jnp


# after Numerical_Eng_Python/neville.py: neville
def neville(x_data, y_data, x):
    m = len(x_data)
    y = y_data.copy()
    for k in range(1, m):
        y[0:m - k] = ((x - x_data[k:m]) * y[0:m - k] + (x_data[0:m - k] - x) * y[1:m - k + 1]) / \
            (x_data[0:m - k] - x_data[k:m])
    return y[0]


# after Numerical_Eng_Python/gaussNodes.py: gaussNodes
def gauss_nodes(m, tol=10e-9):

    def legendre(t, m):
        p0 = 1.0
        p1 = t
        for k in range(1, m):
            p = ((2.0 * k + 1.0) * t * p1 - k * p0) / (1.0 + k)
            p0 = p1
            p1 = p
        dp = m * (p0 - t * p1) / (1.0 - t ** 2)
        return p, dp

    A = jnp.zeros(m)
    x = jnp.zeros(m)
    n_roots = (m + 1) // 2
    for i in range(n_roots):
        t = cos(pi * (i + 0.75) / (m + 0.5))
        for j in range(30):
            p, dp = legendre(t, m)
            dt = -p / dp
            t = t + dt
            if abs(dt) < tol:
                x[i] = t
                x[m - i - 1] = -t
                A[i] = 2.0 / (1.0 - t ** 2) / (dp ** 2)
                A[m - i - 1] = A[i]
                break
    return x, A


# after Numerical_Eng_Python/gaussQuad.py: gaussQuad
def gauss_quad(f, a, b, m):
    c1 = (b + a) / 2.0
    c2 = (b - a) / 2.0
    x, A = gauss_nodes(m)
    sum = 0.0  # noqa: A001 - the book's name
    for i in range(len(x)):
        sum = sum + A[i] * f(c1 + c2 * x[i])  # noqa: A001
    return c2 * sum


# after Numerical_Eng_Python/gaussQuad2.py: gaussQuad2
def gauss_quad2(f, x, y, m):

    def jac(x, y, s, t):
        J = jnp.zeros((2, 2))
        J[0, 0] = -(1.0 - t) * x[0] + (1.0 - t) * x[1] + (1.0 + t) * x[2] - (1.0 + t) * x[3]
        J[0, 1] = -(1.0 - t) * y[0] + (1.0 - t) * y[1] + (1.0 + t) * y[2] - (1.0 + t) * y[3]
        J[1, 0] = -(1.0 - s) * x[0] - (1.0 + s) * x[1] + (1.0 + s) * x[2] + (1.0 - s) * x[3]
        J[1, 1] = -(1.0 - s) * y[0] - (1.0 + s) * y[1] + (1.0 + s) * y[2] + (1.0 - s) * y[3]
        return (J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]) / 16.0

    def map(x, y, s, t):  # noqa: A001 - the book's name
        N = jnp.zeros(4)
        N[0] = (1.0 - s) * (1.0 - t) / 4.0
        N[1] = (1.0 + s) * (1.0 - t) / 4.0
        N[2] = (1.0 + s) * (1.0 + t) / 4.0
        N[3] = (1.0 - s) * (1.0 + t) / 4.0
        x_coord = jnp.dot(N, x)
        y_coord = jnp.dot(N, y)
        return x_coord, y_coord

    s, A = gauss_nodes(m)
    sum = 0.0  # noqa: A001
    for i in range(m):
        for j in range(m):
            x_coord, y_coord = map(x, y, s[i], s[j])
            sum = sum + A[i] * A[j] * jac(x, y, s[i], s[j]) * f(x_coord, y_coord)  # noqa: A001
    return sum


# after Numerical_Eng_Python/triangleQuad.py: triangleQuad
def triangle_quad(f, xc, yc):
    alpha = jnp.array([[1.0 / 3, 1.0 / 3.0, 1.0 / 3.0],
                       [0.2, 0.2, 0.6],
                       [0.6, 0.2, 0.2],
                       [0.2, 0.6, 0.2]])
    W = jnp.array([-27.0 / 48.0, 25.0 / 48.0, 25.0 / 48.0, 25.0 / 48.0])
    x = jnp.dot(alpha, xc)
    y = jnp.dot(alpha, yc)
    A = (xc[1] * yc[2] - xc[2] * yc[1] - xc[0] * yc[2] + xc[2] * yc[0] + xc[0] * yc[1] - xc[1] * yc[0]) / 2.0
    sum = 0.0  # noqa: A001
    for i in range(4):
        sum = sum + W[i] * f(x[i], y[i])  # noqa: A001
    return A * sum
