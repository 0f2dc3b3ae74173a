"""Roots of equations (chapter 4) and the tridiagonal eigenvalue programs (chapter 9) that
call Brent's method."""

import sys
from math import ceil, log, sqrt  # noqa: F401 - sqrt as the book's modules import it

import jax.numpy as jnp


# after Numerical_Eng_Python/error.py: err (without its wait for Return)
def err(string):
    print(string)
    sys.exit()


# after Numerical_Eng_Python/bisect.py: bisect
def bisect(f, x1, x2, switch=0, epsilon=1.0e-9):
    f1 = f(x1)
    if f1 == 0.0:
        return x1
    f2 = f(x2)
    if f2 == 0.0:
        return x2
    if f1 * f2 > 0.0:
        err('Root is not bracketed')
    n = ceil(log(abs(x2 - x1) / epsilon) / log(2.0))
    for i in range(n):
        x3 = 0.5 * (x1 + x2)
        f3 = f(x3)
        if (switch == 1) and (abs(f3) > abs(f1)) and (abs(f3) > abs(f2)):
            return None
        if f3 == 0.0:
            return x3
        if f2 * f3 < 0.0:
            x1 = x3
            f1 = f3
        else:
            x2 = x3
            f2 = f3
    return (x1 + x2) / 2.0


# after Numerical_Eng_Python/brent.py: brent
def brent(f, a, b, tol=1.0e-9):
    x1 = a
    x2 = b
    f1 = f(x1)
    if f1 == 0.0:
        return x1
    f2 = f(x2)
    if f2 == 0.0:
        return x2
    if f1 * f2 > 0.0:
        err('Root is not bracketed')
    x3 = 0.5 * (a + b)
    for i in range(30):
        f3 = f(x3)
        if abs(f3) < tol:
            return x3
        if f1 * f3 < 0.0:
            b = x3
        else:
            a = x3
        if (b - a) < tol * max(abs(b), 1.0):
            return 0.5 * (a + b)
        denom = (f2 - f1) * (f3 - f1) * (f2 - f3)
        numer = x3 * (f1 - f2) * (f2 - f3 + f1) + f2 * x1 * (f2 - f3) + f1 * x2 * (f3 - f1)
        try:
            dx = f3 * numer / denom
        except ZeroDivisionError:
            dx = b - a
        x = x3 + dx
        if (b - x) * (x - a) < 0.0:
            dx = 0.5 * (b - a)
            x = a + dx
        if x < x3:
            x2 = x3
            f2 = f3
        else:
            x1 = x3
            f1 = f3
        x3 = x
    print('Too many iterations in brent')


# after Numerical_Eng_Python/newtonRaphson.py: newtonRaphson
def newton_raphson(f, df, a, b, tol=1.0e-9):
    fa = f(a)
    if fa == 0.0:
        return a
    fb = f(b)
    if fb == 0.0:
        return b
    if fa * fb > 0.0:
        err('Root is not bracketed')
    x = 0.5 * (a + b)
    for i in range(30):
        fx = f(x)
        if abs(fx) < tol:
            return x
        if fa * fx < 0.0:
            b = x
        else:
            a = x
            fa = fx
        dfx = df(x)
        try:
            dx = -fx / dfx
        except ZeroDivisionError:
            dx = b - a
        x = x + dx
        if (b - x) * (x - a) < 0.0:
            dx = 0.5 * (b - a)
            x = a + dx
        if abs(dx) < tol * max(abs(b), 1.0):
            return x
    print('Too many iterations in Newton-Raphson')


# after Numerical_Eng_Python/rootsearch.py: rootsearch
def rootsearch(f, a, b, dx):
    x1 = a
    f1 = f(a)
    x2 = a + dx
    f2 = f(x2)
    while f1 * f2 > 0.0:
        if x1 >= b:
            return None, None
        x1 = x2
        f1 = f2
        x2 = x1 + dx
        f2 = f(x2)
    else:
        return x1, x2


# after Numerical_Eng_Python/sturmSeq.py: sturmSeq, numLambdas
def sturm_seq(d, c, lam):
    n = len(d) + 1
    p = jnp.ones(n)
    p[1] = d[0] - lam
    for i in range(2, n):
        p[i] = (d[i - 1] - lam) * p[i - 1] - (c[i - 2] ** 2) * p[i - 2]
    return p


def num_lambdas(p):
    n = len(p)
    sign_old = 1
    num_lam = 0
    for i in range(1, n):
        if p[i] > 0.0:
            sign = 1
        elif p[i] < 0.0:
            sign = -1
        else:
            sign = -sign_old
        if sign * sign_old < 0:
            num_lam = num_lam + 1
        sign_old = sign
    return num_lam


def sturm_count(d, c, lam):
    p = sturm_seq(d, c, lam)
    return num_lambdas(p)


# after Numerical_Eng_Python/gerschgorin.py: gerschgorin
def gerschgorin(d, c):
    n = len(d)
    lam_min = d[0] - abs(c[0])
    lam_max = d[0] + abs(c[0])
    for i in range(1, n - 1):
        lam = d[i] - abs(c[i]) - abs(c[i - 1])
        if lam < lam_min:
            lam_min = lam
        lam = d[i] + abs(c[i]) + abs(c[i - 1])
        if lam > lam_max:
            lam_max = lam
    lam = d[n - 1] - abs(c[n - 2])
    if lam < lam_min:
        lam_min = lam
    lam = d[n - 1] + abs(c[n - 2])
    if lam > lam_max:
        lam_max = lam
    return lam_min, lam_max


# after Numerical_Eng_Python/lamRange.py: lamRange
def lam_range(d, c, N):
    lam_min, lam_max = gerschgorin(d, c)
    r = jnp.ones(N + 1)
    r[0] = lam_min
    for k in range(N, 0, -1):
        lam = (lam_max + lam_min) / 2.0
        h = (lam_max - lam_min) / 2.0
        for i in range(1000):
            p = sturm_seq(d, c, lam)
            num_lam = num_lambdas(p)
            h = h / 2.0
            if num_lam < k:
                lam = lam + h
            elif num_lam > k:
                lam = lam - h
            else:
                break
        lam_max = lam
        r[k] = lam
    return r


# after Numerical_Eng_Python/eigenvals3.py: eigenvals3
def eigenvals3(d, c, N):

    def f(x):
        p = sturm_seq(d, c, x)
        return p[len(p) - 1]

    lam = jnp.zeros(N)
    r = lam_range(d, c, N)
    for i in range(N):
        lam[i] = brent(f, r[i], r[i + 1])
    return lam
