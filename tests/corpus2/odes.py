"""Initial value problems (chapter 7)."""

from math import sqrt

import jax.numpy as jnp


# after Numerical_Eng_Python/midpoint.py: integrate
def midpoint_integrate(F, x, y, x_stop, tol):

    def midpoint(F, x, y, x_stop, n_steps):
        h = (x_stop - x) / n_steps
        y0 = y
        y1 = y0 + h * F(x, y0)
        for i in range(n_steps - 1):
            x = x + h
            y2 = y0 + 2.0 * h * F(x, y1)
            y0 = y1
            y1 = y2
        return 0.5 * (y1 + y0 + h * F(x, y2))

    def richardson(r, k):
        for j in range(k - 1, 0, -1):
            const = 4.0 ** (k - j)
            r[j] = (const * r[j + 1] - r[j]) / (const - 1.0)
        return

    k_max = 51
    n = len(y)
    r = jnp.zeros((k_max, n))
    n_steps = 2
    r[1] = midpoint(F, x, y, x_stop, n_steps)
    r_old = r[1].copy()
    for k in range(2, k_max):
        n_steps = n_steps * 2
        r[k] = midpoint(F, x, y, x_stop, n_steps)
        richardson(r, k)
        e = sqrt(jnp.sum((r[1] - r_old) ** 2) / n)
        if e < tol:
            return r[1]
        r_old = r[1].copy()
    print("Midpoint method did not converge")


# after Numerical_Eng_Python/bulStoer.py: bulStoer
def bul_stoer(F, x, y, x_stop, H, tol=1.0e-6):
    X = []
    Y = []
    X.append(x)
    Y.append(y)
    while x < x_stop:
        H = min(H, x_stop - x)
        y = midpoint_integrate(F, x, y, x + H, tol)
        x = x + H
        X.append(x)
        Y.append(y)
    return jnp.array(X), jnp.array(Y)


# after Numerical_Eng_Python/run_kut4.py: integrate
def run_kut4_integrate(F, x, y, x_stop, h):

    def run_kut4(F, x, y, h):
        K0 = h * F(x, y)
        K1 = h * F(x + h / 2.0, y + K0 / 2.0)
        K2 = h * F(x + h / 2.0, y + K1 / 2.0)
        K3 = h * F(x + h, y + K2)
        return (K0 + 2.0 * K1 + 2.0 * K2 + K3) / 6.0

    X = []
    Y = []
    X.append(x)
    Y.append(y)
    while x < x_stop:
        h = min(h, x_stop - x)
        y = y + run_kut4(F, x, y, h)
        x = x + h
        X.append(x)
        Y.append(y)
    return jnp.array(X), jnp.array(Y)


# after Numerical_Eng_Python/run_kut5.py: integrate
def run_kut5_integrate(F, x, y, x_stop, h, tol=1.0e-6):

    def run_kut5(F, x, y, h):
        C = jnp.array([37. / 378, 0., 250. / 621, 125. / 594, 0., 512. / 1771])
        D = jnp.array([2825. / 27648, 0., 18575. / 48384, 13525. / 55296, 277. / 14336, 1. / 4])
        n = len(y)
        K = jnp.zeros((6, n))
        K[0] = h * F(x, y)
        K[1] = h * F(x + 1. / 5 * h, y + 1. / 5 * K[0])
        K[2] = h * F(x + 3. / 10 * h, y + 3. / 40 * K[0] + 9. / 40 * K[1])
        K[3] = h * F(x + 3. / 5 * h, y + 3. / 10 * K[0] - 9. / 10 * K[1] + 6. / 5 * K[2])
        K[4] = h * F(x + h, y - 11. / 54 * K[0] + 5. / 2 * K[1] - 70. / 27 * K[2] + 35. / 27 * K[3])
        K[5] = h * F(x + 7. / 8 * h, y + 1631. / 55296 * K[0] + 175. / 512 * K[1] + 575. / 13824 * K[2]
                     + 44275. / 110592 * K[3] + 253. / 4096 * K[4])
        E = jnp.zeros(n)
        dy = jnp.zeros(n)
        for i in range(6):
            dy = dy + C[i] * K[i]
            E = E + (C[i] - D[i]) * K[i]
        e = sqrt(jnp.sum(E ** 2) / n)
        return dy, e

    X = []
    Y = []
    X.append(x)
    Y.append(y)
    stopper = 0

    for i in range(10000):
        dy, e = run_kut5(F, x, y, h)
        if e <= tol:
            y = y + dy
            x = x + h
            X.append(x)
            Y.append(y)
            if stopper == 1:
                break
        if e != 0.0:
            h_next = 0.9 * h * (tol / e) ** 0.2
        else:
            h_next = h
        if (h > 0.0) == ((x + h_next) >= x_stop):
            h_next = x_stop - x
            stopper = 1
        h = h_next
    return jnp.array(X), jnp.array(Y)


# after Numerical_Eng_Python/taylor.py: taylor
def taylor(deriv, x, y, x_stop, h):
    X = []
    Y = []
    X.append(x)
    Y.append(y)
    while x < x_stop:
        h = min(h, x_stop - x)
        D = deriv(x, y)
        H = 1.0
        for j in range(4):
            H = H * h / (j + 1)
            y = y + D[j] * H
        x = x + h
        X.append(x)
        Y.append(y)
    return jnp.array(X), jnp.array(Y)
