"""Linear systems (chapter 2) and the programs that call their solvers."""

import sys
from math import sqrt

import jax.numpy as jnp


# after Numerical_Eng_Python/error.py: err (without its wait for Return)
def err(string):
    print(string)
    sys.exit()


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


# after Numerical_Eng_Python/LUdecomp.py: LUdecomp, LUsolve
def lu_decomp(a):
    n = len(a)
    for k in range(0, n - 1):
        for i in range(k + 1, n):
            if a[i, k] != 0.0:
                lam = a[i, k] / a[k, k]
                a[i, k + 1:n] = a[i, k + 1:n] - lam * a[k, k + 1:n]
                a[i, k] = lam
    return a


def lu_solve(a, b):
    n = len(a)
    for k in range(1, n):
        b[k] = b[k] - jnp.dot(a[k, 0:k], b[0:k])
    for k in range(n - 1, -1, -1):
        b[k] = (b[k] - jnp.dot(a[k, k + 1:n], b[k + 1:n])) / a[k, k]
    return b


def lu_decomp_solve(a, b):
    a = lu_decomp(a)
    return lu_solve(a, b)


# after Numerical_Eng_Python/LUdecomp5.py: LUdecomp5, LUsolve5
def lu_decomp5(d, e, f):
    n = len(d)
    for k in range(n - 2):
        lam = e[k] / d[k]
        d[k + 1] = d[k + 1] - lam * e[k]
        e[k + 1] = e[k + 1] - lam * f[k]
        e[k] = lam
        lam = f[k] / d[k]
        d[k + 2] = d[k + 2] - lam * f[k]
        f[k] = lam
    lam = e[n - 2] / d[n - 2]
    d[n - 1] = d[n - 1] - lam * e[n - 2]
    e[n - 2] = lam
    return d, e, f


def lu_solve5(d, e, f, b):
    n = len(d)
    b[1] = b[1] - e[0] * b[0]
    for k in range(2, n):
        b[k] = b[k] - e[k - 1] * b[k - 1] - f[k - 2] * b[k - 2]

    b[n - 1] = b[n - 1] / d[n - 1]
    b[n - 2] = b[n - 2] / d[n - 2] - e[n - 2] * b[n - 1]
    for k in range(n - 3, -1, -1):
        b[k] = b[k] / d[k] - e[k] * b[k + 1] - f[k] * b[k + 2]
    return b


def lu_decomp5_solve(d, e, f, b):
    d, e, f = lu_decomp5(d, e, f)
    return lu_solve5(d, e, f, b)


# after Numerical_Eng_Python/LUpivot.py: LUdecomp, LUsolve
def lu_pivot_decomp(a, tol=1.0e-9):
    n = len(a)
    seq = jnp.array(range(n))

    s = jnp.zeros(n)
    for i in range(n):
        s[i] = max(abs(a[i, :]))

    for k in range(0, n - 1):
        p = int(jnp.argmax(abs(a[k:n, k]) / s[k:n])) + k
        if abs(a[p, k]) < tol:
            err('Matrix is singular')
        if p != k:
            swap_rows(s, k, p)
            swap_rows(a, k, p)
            swap_rows(seq, k, p)

        for i in range(k + 1, n):
            if a[i, k] != 0.0:
                lam = a[i, k] / a[k, k]
                a[i, k + 1:n] = a[i, k + 1:n] - lam * a[k, k + 1:n]
                a[i, k] = lam
    return a, seq


def lu_pivot_solve(a, b, seq):
    n = len(a)
    x = b.copy()
    for i in range(n):
        x[i] = b[seq[i]]

    for k in range(1, n):
        x[k] = x[k] - jnp.dot(a[k, 0:k], x[0:k])
    for k in range(n - 1, -1, -1):
        x[k] = (x[k] - jnp.dot(a[k, k + 1:n], x[k + 1:n])) / a[k, k]
    return x


def lu_pivot_decomp_solve(a, b):
    a, seq = lu_pivot_decomp(a)
    return lu_pivot_solve(a, b, seq)


# after Numerical_Eng_Python/choleski.py: choleski
def choleski(a):
    n = len(a)
    for k in range(n):
        try:
            a[k, k] = sqrt(a[k, k] - jnp.dot(a[k, 0:k], a[k, 0:k]))
        except ValueError:
            err('Matrix is not positive definite')
        for i in range(k + 1, n):
            a[i, k] = (a[i, k] - jnp.dot(a[i, 0:k], a[k, 0:k])) / a[k, k]
    for k in range(1, n):
        a[0:k, k] = 0.0
    return a


# after Numerical_Eng_Python/conjGrad.py: conjGrad
def conj_grad(av, x, b, tol=1.0e-9):
    n = len(b)
    r = b - av(x)
    s = r.copy()
    for i in range(n):
        u = av(s)
        alpha = jnp.dot(s, r) / jnp.dot(s, u)
        x = x + alpha * s
        r = b - av(x)
        if (sqrt(jnp.dot(r, r))) < tol:
            break
        else:
            beta = -jnp.dot(r, u) / jnp.dot(s, u)
            s = r + beta * s
    return x, i


# after Numerical_Eng_Python/gaussElimin.py: gaussElimin
def gauss_elimin(a, b):
    n = len(b)
    for k in range(0, n - 1):
        for i in range(k + 1, n):
            if a[i, k] != 0.0:
                lam = a[i, k] / a[k, k]
                a[i, k + 1:n] = a[i, k + 1:n] - lam * a[k, k + 1:n]
                b[i] = b[i] - lam * b[k]
    for k in range(n - 1, -1, -1):
        b[k] = (b[k] - jnp.dot(a[k, k + 1:n], b[k + 1:n])) / a[k, k]
    return b


# after Numerical_Eng_Python/gaussJordan.py: gaussJordan
def gauss_jordan(a):
    n = len(a)
    for i in range(n):
        temp = a[i, i]
        a[i, i] = 1.0
        a[i, 0:n] = a[i, 0:n] / temp
        for k in range(n):
            if k != i:
                temp = a[k, i]
                a[k, i] = 0.0
                a[k, 0:n] = a[k, 0:n] - a[i, 0:n] * temp
    return a


# after Numerical_Eng_Python/gaussJordanPivot.py: gaussJordanPivot
def gauss_jordan_pivot(a, tol=1.0e-9):
    n = len(a)
    seq = jnp.array(range(n))

    s = jnp.zeros(n)
    for i in range(n):
        s[i] = max(abs(a[i, :]))

    for i in range(n):
        p = int(jnp.argmax(abs(a[i:n, i]) / s[i:n])) + i
        if abs(a[p, i]) < tol:
            err('Matrix is singular')
        if p != i:
            swap_rows(s, i, p)
            swap_rows(a, i, p)
            swap_rows(seq, i, p)

        temp = a[i, i]
        a[i, i] = 1.0
        a[i, 0:n] = a[i, 0:n] / temp
        for k in range(n):
            if k != i:
                temp = a[k, i]
                a[k, i] = 0.0
                a[k, 0:n] = a[k, 0:n] - a[i, 0:n] * temp

    for i in range(n):
        swap_cols(a, i, seq[i])
        swap_rows(seq, i, seq[i])
    return a


# after Numerical_Eng_Python/gaussPivot.py: gaussPivot
def gauss_pivot(a, b, tol=1.0e-12):
    n = len(b)

    s = jnp.zeros(n)
    for i in range(n):
        s[i] = max(abs(a[i, :]))

    for k in range(0, n - 1):
        p = int(jnp.argmax(abs(a[k:n, k]) / s[k:n])) + k
        if abs(a[p, k]) < tol:
            err('Matrix is singular')
        if p != k:
            swap_rows(b, k, p)
            swap_rows(s, k, p)
            swap_rows(a, k, p)

        for i in range(k + 1, n):
            if a[i, k] != 0.0:
                lam = a[i, k] / a[k, k]
                a[i, k + 1:n] = a[i, k + 1:n] - lam * a[k, k + 1:n]
                b[i] = b[i] - lam * b[k]
    if abs(a[n - 1, n - 1]) < tol:
        err('Matrix is singular')

    for k in range(n - 1, -1, -1):
        b[k] = (b[k] - jnp.dot(a[k, k + 1:n], b[k + 1:n])) / a[k, k]
    return b


# after Numerical_Eng_Python/gaussSeidel.py: gaussSeidel
def gauss_seidel(iter_eqs, x, tol=1.0e-9):

    omega = 1.0
    k = 10
    p = 1
    for i in range(1, 501):
        x_old = x.copy()
        x = iter_eqs(x, omega)
        dx = sqrt(jnp.dot(x - x_old, x - x_old))
        if dx < tol:
            return x, i, omega
        if i == k:
            dx1 = dx
        if i == k + p:
            dx2 = dx
            omega = 2.0 / (1.0 + sqrt(1.0 - (dx2 / dx1) ** (1.0 / p)))
    print('Gauss-Seidel failed to converge')


# after Numerical_Eng_Python/polyFit.py: polyFit, stdDev
def poly_fit(x_data, y_data, m):
    a = jnp.zeros((m + 1, m + 1))
    b = jnp.zeros(m + 1)
    s = jnp.zeros(2 * m + 1)
    for i in range(len(x_data)):
        temp = y_data[i]
        for j in range(m + 1):
            b[j] = b[j] + temp
            temp = temp * x_data[i]
        temp = 1.0
        for j in range(2 * m + 1):
            s[j] = s[j] + temp
            temp = temp * x_data[i]
    for i in range(m + 1):
        for j in range(m + 1):
            a[i, j] = s[i + j]
    return gauss_pivot(a, b)


def std_dev(c, x_data, y_data):

    def eval_poly(c, x):
        m = len(c) - 1
        p = c[m]
        for j in range(m):
            p = p * x + c[m - j - 1]
        return p

    n = len(x_data) - 1
    m = len(c) - 1
    sigma = 0.0
    for i in range(n + 1):
        p = eval_poly(c, x_data[i])
        sigma = sigma + (y_data[i] - p) ** 2
    sigma = sqrt(sigma / (n - m))
    return sigma


def poly_fit_deviation(x_data, y_data, m):
    c = poly_fit(x_data, y_data, m)
    return c, std_dev(c, x_data, y_data)


# after Numerical_Eng_Python/newtonRaphson2.py: newtonRaphson2
def newton_raphson2(f, x, tol=1.0e-9):

    def jacobian(f, x):
        h = 1.0e-4
        n = len(x)
        jac = jnp.zeros((n, n))
        f0 = f(x)
        for i in range(n):
            temp = x[i]
            x[i] = temp + h
            f1 = f(x)
            x[i] = temp
            jac[:, i] = (f1 - f0) / h
        return jac, f0

    for i in range(30):
        jac, f0 = jacobian(f, x)
        if sqrt(jnp.dot(f0, f0) / len(x)) < tol:
            return x
        dx = gauss_pivot(jac, -f0)
        x = x + dx
        if sqrt(jnp.dot(dx, dx)) < tol * max(max(abs(x)), 1.0):
            return x
    print('Too many iterations')


# after Numerical_Eng_Python/inversePower.py: inversePower (random() drawn into `seed`)
def inverse_power(a, s, seed, tol=1.0e-6):
    n = len(a)
    a_star = a - jnp.identity(n) * s
    a_star = lu_decomp(a_star)
    x = jnp.zeros(n)
    for i in range(n):
        x[i] = seed[i]
    x_mag = sqrt(jnp.dot(x, x))
    x = x / x_mag
    for i in range(50):
        x_old = x.copy()
        x = lu_solve(a_star, x)
        x_mag = sqrt(jnp.dot(x, x))
        x = x / x_mag
        if jnp.dot(x_old, x) < 0.0:
            sign = -1.0
            x = -x
        else:
            sign = 1.0
        if sqrt(jnp.dot(x_old - x, x_old - x)) < tol:
            return s + sign / x_mag, x
    print('Inverse power method did not converge')


# after Numerical_Eng_Python/inversePower5.py: inversePower5 (random() drawn into `seed`)
def inverse_power5(bv, d, e, f, seed, tol=1.0e-6):
    n = len(d)
    d, e, f = lu_decomp5(d, e, f)
    x = jnp.zeros(n)
    for i in range(n):
        x[i] = seed[i]
    x_mag = sqrt(jnp.dot(x, x))
    x = x / x_mag
    for i in range(30):
        x_old = x.copy()
        x = bv(x_old)
        x = lu_solve5(d, e, f, x)
        x_mag = sqrt(jnp.dot(x, x))
        x = x / x_mag
        if jnp.dot(x_old, x) < 0.0:
            sign = -1.0
            x = -x
        else:
            sign = 1.0
        if sqrt(jnp.dot(x_old - x, x_old - x)) < tol:
            return sign / x_mag, x
    print('Inverse power method did not converge')


# after Numerical_Eng_Python/stdForm.py: stdForm
def std_form(a, b):

    def invert(L):
        n = len(L)
        for j in range(n - 1):
            L[j, j] = 1.0 / L[j, j]
            for i in range(j + 1, n):
                L[i, j] = -jnp.dot(L[i, j:i], L[j:i, j]) / L[i, i]
        L[n - 1, n - 1] = 1.0 / L[n - 1, n - 1]

    n = len(a)
    L = choleski(b)
    invert(L)
    h = jnp.dot(b, jnp.dot(a, jnp.transpose(L)))
    return h, jnp.transpose(L)
