"""Optimization (chapter 10)."""

from math import ceil, log, sqrt

import jax.numpy as jnp


# after Numerical_Eng_Python/goldSearch.py: bracket, search
def bracket(f, x1, h):
    c = 1.618033989
    f1 = f(x1)
    x2 = x1 + h
    f2 = f(x2)
    if f2 > f1:
        h = -h
        x2 = x1 + h
        f2 = f(x2)
        if f2 > f1:
            return x2, x1 - h
    for i in range(100):
        h = c * h
        x3 = x2 + h
        f3 = f(x3)
        if f3 > f2:
            return x1, x3
        x1 = x2
        x2 = x3
        f1 = f2
        f2 = f3
    print("Bracket did not find a mimimum")


def search(f, a, b, tol=1.0e-9):
    n_iter = ceil(-2.078087 * log(tol / abs(b - a)))
    R = 0.618033989
    C = 1.0 - R
    x1 = R * a + C * b
    x2 = C * a + R * b
    f1 = f(x1)
    f2 = f(x2)
    for i in range(n_iter):
        if f1 > f2:
            a = x1
            x1 = x2
            f1 = f2
            x2 = C * a + R * b
            f2 = f(x2)
        else:
            b = x2
            x2 = x1
            f2 = f1
            x1 = R * a + C * b
            f1 = f(x1)
    if f1 < f2:
        return x1, f1
    else:
        return x2, f2


def gold_bracket_search(f, x_start, h):
    a, b = bracket(f, x_start, h)
    return search(f, a, b)


# after Numerical_Eng_Python/fletcherReeves.py: optimize
def fletcher_reeves(F, grad_f, x, h=0.1, tol=1.0e-6):

    def f(s):
        return F(x + s * v)

    n = len(x)  # noqa: F841 - the book's line
    g0 = -grad_f(x)
    v = g0.copy()
    F0 = F(x)
    for i in range(200):
        a, b = bracket(f, 0.0, h)
        s, f_min = search(f, a, b)
        x = x + s * v
        F1 = F(x)
        g1 = -grad_f(x)
        if (sqrt(jnp.dot(g1, g1)) <= tol) or (abs(F0 - F1) < tol):
            return x, i + 1
        gamma = jnp.dot((g1 - g0), g1) / jnp.dot(g0, g0)
        v = g1 + gamma * v
        g0 = g1.copy()
        F0 = F1
    print("fletcherReeves did not converge")


# after Numerical_Eng_Python/powell.py: powell
def powell(F, x, h=0.1, tol=1.0e-6):

    def f(s):
        return F(x + s * v)

    n = len(x)
    df = jnp.zeros(n)
    u = jnp.identity(n) * 1.0
    for j in range(30):
        x_old = x.copy()
        f_old = F(x_old)
        for i in range(n):
            v = u[i]
            a, b = bracket(f, 0.0, h)
            s, f_min = search(f, a, b)
            df[i] = f_old - f_min
            f_old = f_min
            x = x + s * v
        v = x - x_old
        a, b = bracket(f, 0.0, h)
        s, f_last = search(f, a, b)
        x = x + s * v
        if sqrt(jnp.dot(x - x_old, x - x_old) / n) < tol:
            return x, j + 1
        i_max = int(jnp.argmax(df))
        for i in range(i_max, n - 1):
            u[i] = u[i + 1]
            u[n - 1] = v
    print("Powell did not converge")
