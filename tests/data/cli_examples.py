"""Functions with Python control flow, converted by `autolax convert --all` in tests/cli/test_cli.py.

Each converted function is checked under plain `jax.jit` against the original Python on the
`INPUTS`, as written by `autolax convert` and by `autolax convert --standalone`.
"""

import jax.numpy as jnp
import numpy as np


def collatz_steps(n):
    """Steps of the Collatz sequence from n down to 1."""
    steps = 0
    while n != 1:
        if n % 2 == 0:  # even
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def sign_class(x):
    if x > 0:
        label = 1
    elif x < 0:
        label = -1
    else:
        label = 0
    return label


def relu_sum(xs):
    total = 0.0
    for x in xs:
        if x > 0:
            total += x
    return total


def power_series(x, n):
    # sum of x**k for k < n, with a traced trip count
    acc = 0.0
    term = 1.0
    for k in range(n):
        acc = acc + term
        term = term * x
    return acc


def static_range(x):
    for i in range(1, 6, 2):
        x = x * 2 + i
    return x


def weighted(xs, ws):
    out = 0.0
    for i, (x, w) in enumerate(zip(xs, ws)):
        out = out + i * x * w
    return out


def first_negative(xs):
    index = -1
    for i in range(xs.shape[0]):
        if xs[i] < 0:
            index = i
            break
    return index


def skip_odd(n):
    total = 0
    i = 0
    while i < n:
        i += 1
        if i % 2 == 1:
            continue
        total += i
    return total


def find_value(xs, target):
    for x in xs:
        if x == target:
            return 1.0
    return 0.0


def in_band(x, lo, hi):
    if lo < x < hi and not x == 0.5:
        return x
    return lo or hi


def either(a, b):
    return a > 0 or b > 0


def clip_ternary(x):
    y = x if x < 1.0 else 1.0
    return y * 2


def scatter(x, i, v):
    x = x.copy()
    x[i] = v
    x[0] += 1.0
    return x


def squares(x):
    out = []
    for i in range(4):
        out.append(x * i)
    return jnp.stack(out)


def static_mode(x, mode):
    if mode == "double":
        x = x * 2
    else:
        x = x + 1
    return x


def shape_branch(x):
    if x.ndim == 1:
        x = x[None, :]
    return x.sum(axis=1)


def numpy_table(x):
    table = np.zeros(3)
    for i in range(3):
        table[i] = i * 2.0
    return x * table.sum()


def count_down(n, x):
    while n > 0:
        x = x * 0.5
        n = n - 1
    return x


def static_search(x, limit):
    # a Python loop (static state), with `break` and `for ... else`
    total = 0
    for k in range(10):
        if k * k > limit:
            break
        total += k
    else:
        total = -1
    return x * total


def escape(z, c, n_max):
    n = 0
    while n < n_max:
        if abs(z) > 2.0:
            break
        z = z * z + c
        n += 1
    return n


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def apply(self, xs):
        out = xs * 0.0
        for i in range(xs.shape[0]):
            if xs[i] > 0:
                out[i] = xs[i] * self.factor
        return out


def scaled(xs):
    return Scaler(3.0).apply(xs)


def nested_function(xs):
    def clip(v):
        if v > 1.0:
            return 1.0
        return v

    total = 0.0
    for x in xs:
        total = total + clip(x)
    return total


def helper(x):
    if x > 1.0:
        return x - 1.0
    return x


def calls_helper(x):
    return helper(x) * 2


INPUTS = {
    "collatz_steps": [(27,), (1,), (6,)],
    "sign_class": [(2.5,), (-1.0,), (0.0,)],
    "relu_sum": [(np.array([1.0, -2.0, 3.5]),), (np.array([-1.0, -2.0]),)],
    "power_series": [(0.5, 4), (2.0, 0), (1.5, 3)],
    "static_range": [(1.0,), (-2.5,)],
    "weighted": [(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])),],
    "first_negative": [(np.array([1.0, 2.0, -3.0, -4.0]),), (np.array([1.0, 2.0]),)],
    "skip_odd": [(7,), (0,), (10,)],
    "find_value": [(np.array([1.0, 2.0, 3.0]), 2.0), (np.array([1.0, 2.0]), 5.0)],
    "in_band": [(0.3, 0.0, 1.0), (0.5, 0.0, 1.0), (2.0, 1.0, 3.0), (5.0, 0.0, 1.0)],
    "either": [(1.0, -1.0), (-1.0, -1.0), (-1.0, 2.0)],
    "clip_ternary": [(0.25,), (3.0,)],
    "scatter": [(np.zeros(4), 2, 5.0), (np.ones(3), 1, -1.0)],
    "squares": [(1.5,), (-2.0,)],
    "static_mode": [(1.5, "double"), (1.5, "add")],
    "shape_branch": [(np.ones(3),), (np.ones((2, 3)),)],
    "numpy_table": [(2.0,)],
    "count_down": [(3, 1.0), (0, 2.0)],
    "calls_helper": [(0.5,), (3.0,)],
    "static_search": [(2.0, 20), (2.0, 1000)],
    "escape": [(0.0, 0.3, 50), (0.0, -0.5, 20), (0.0, 1.0, 50)],
    "scaled": [(np.array([1.0, -2.0, 0.5]),)],
    "nested_function": [(np.array([0.5, 2.0, -1.0]),)],
}

STATIC_ARGNAMES = {"static_mode": ("mode",), "static_search": ("limit",)}
