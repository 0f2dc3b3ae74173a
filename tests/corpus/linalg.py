"""Iterative linear algebra and gradient descent (queries 8, 9 and 14 of SELECTION.md).
``from numpy import f`` and ``np.f`` are written ``jnp.f``; ``np.matrix`` products are ``@``."""

import copy

import jax.numpy as jnp

INVERSE_TOLERANCE = 0.000000000001
descent_cost = []


# after ogulcano/Numerical-Python Gauss-Siedel.py (query 8): module-level script, as a function
def gauss_seidel_script(A, b, sweeps=10):
    n = len(b)

    x0 = jnp.ones(n)
    x1 = jnp.zeros(n)
    for _ in range(sweeps):
        print(x0.round(10))
        for i in range(n):
            lower = 0
            for j in range(i):
                lower += A[i, j] * x1[j]
            upper = 0
            for j in range(i + 1, n):
                upper += A[i, j] * x0[j]
            x1[i] = (1 / A[i, i]) * (b[i] - lower - upper)
        x0 = x1
    return x0


# after maitreyim/PyStuff jacobi.py (query 8): jacobi
def jacobi_sweeps(A, b, N=25, x=None):
    if x is None:
        x = jnp.zeros(len(A[0]))

    D = jnp.diag(A)
    R = A - jnp.diagflat(D)

    for i in range(N):
        x = (b - jnp.dot(R, x)) / D
    return x


# after WangXueFei11/homework 04.py (query 9): eig_power
def power_until_flag(A, v0, eps):
    u = v0
    flag = 1
    old = 0
    n = 0
    while flag:
        n = n + 1
        w = A @ u
        val = w[jnp.argmax(jnp.abs(w))]
        u = w / val
        if (jnp.abs(val - old) < eps):
            flag = 0
        old = val
    return val, u, n


# after gmiles3/Math2605Project powerMethod.py (query 9): power_method, normalize, matrixMult
def power_with_none(matrix_a, v, tolerance, max):
    n = len(matrix_a)
    w_t = jnp.zeros(n)
    i = 0
    while i < n:
        if i % 2 == 0:
            w_t[i] = 1
        i += 1
    its = 0
    old_eigenvalue = 0
    eigenvalue = 0
    while its < max:
        new_v = matrix_times(matrix_a, v)
        eigenvalue = jnp.amax(jnp.divide((jnp.dot(w_t, new_v)), jnp.dot(w_t, v)))
        if jnp.absolute(jnp.subtract(eigenvalue, old_eigenvalue)) < tolerance:
            break
        else:
            its += 1
            v = new_v
            old_eigenvalue = eigenvalue
    if its >= max:
        return None
    else:
        eigenvector = unit_length(new_v)
        return eigenvalue, eigenvector, its


def unit_length(vector):
    n = len(vector)
    total = 0
    for x in range(n):
        total += (pow(vector[x], 2))
    total = jnp.sqrt(total)
    total = 1 / total
    return jnp.multiply(total, vector)


def matrix_times(A, B):
    rows = A.shape[0]
    cols = B.shape[1]
    if (A.shape[1] == B.shape[0]):
        out = jnp.zeros([rows, cols], dtype=float)
        for i in range(0, cols):
            col = B[0:, i:i + 1]
            for j in range(0, rows):
                row = A[j:j + 1, 0:]
                out[j, i] = jnp.dot(row, col)
        return out


# after tiantian0347/Tian code/Numerial-linear-algebra/part4/Inverse.py (query 9): power
# (the tolerance is the module's global, as in the original)
def inverse_iteration(a):
    k = 0
    n, n = a.shape
    x = jnp.ones(n) / jnp.sqrt(n)
    y1, y2 = 0, 1
    shift = 0.1
    eye = jnp.identity(n)
    while abs(y2 - y1) > INVERSE_TOLERANCE:
        y1 = copy.deepcopy(y2)
        t = jnp.matmul(jnp.linalg.inv(a - shift * eye), x)
        x = t / jnp.linalg.norm(t, ord=2)
        y2 = jnp.matmul(x, jnp.matmul(a, x))
        k += 1
    return y2, x


# after rohandubey/Numerical_Analysis power.py (query 9): power_method, __find_p, __iterate
def __find_p(x):
    return jnp.argwhere(jnp.isclose(jnp.abs(x), jnp.linalg.norm(x, jnp.inf))).min()


def __iterate(A, x, p):

    y = jnp.dot(A, x)
    mu = y[p]
    p = __find_p(y)
    error = jnp.linalg.norm(x - y / y[p], jnp.inf)
    x = y / y[p]

    return (error, p, mu, x)


def power_printing(A, tolerance=1e-10, max_iterations=20):

    n = A.shape[0]
    x = [1, -1]
    x = jnp.asarray(x)
    p = __find_p(x)

    error = 1

    x = x / x[p]

    for _ in range(max_iterations):

        if error < tolerance:
            break
        error, p, mu, x = __iterate(A, x, p)
        print("Iteration :", _ + 1, "\tEigenvalue :", mu, "\tEigenvector :", x)
    return (mu, x)


# after fanyang1997/Algorithm gradient_decent_using_np.py (query 14): gradient_decent, linear_model
def linear_model(x, theta):
    return jnp.dot(x, theta)


def least_squares_descent(x, y, theta, rate, iterations):
    m = len(y)
    for i in range(iterations):
        gradient = (1 / m) * jnp.dot(x.T, linear_model(x, theta) - y)
        theta = theta - rate * gradient
    return theta


# after LDeng0205/DigitReader test.py (query 14): gradient_descent (it appends to a global list)
def descent_until_small(gradient, start, learn_rate, n_iter=50, tolerance=1e-06):
    vector = start
    for _ in range(n_iter):
        diff = -learn_rate * gradient(vector)
        if jnp.all(jnp.abs(diff) <= tolerance):
            break
        vector += diff
        descent_cost.append(vector)
    return vector
