"""Small functions whose converted source tests/test_golden.py pins down (one per rewrite)."""

import jax.numpy as jnp


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def early_return(x):
    if x < 3:
        return 3.0 * x**2
    return -4 * x


def loop_index_after(x, n):
    for i in range(n):
        x = x + i
    return x, i


def tuple_target(xs):
    total = 0.0
    for i, x in enumerate(xs):
        total += i * x
    return total


def first_negative(xs):
    idx = -1
    for i in range(xs.shape[0]):
        if xs[i] < 0:
            idx = i
            break
    return idx


def skip_negative(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        total += x
    return total


def return_in_loop(xs, t):
    for x in xs:
        if x > t:
            return x
    return t


def item_updates(v, i):
    v[i] = 0.0
    v[i + 1] += 1.0
    v[i], v[0] = v[0], v[i]
    return v


def appends(xs):
    out = []
    for x in xs:
        out.append(x * 2)
    return jnp.stack(out)


def helper(x):
    return x + 1


def calls_and_print(x):
    y = helper(x)
    print("y =", y)
    return jnp.abs(y)


def expressions(x, lo, hi):
    y = x if x > 0 else -x
    ok = lo <= y < hi and not y == 1.0 or x is None
    return ok


def first_assigned_in_loop(xs):
    for x in xs:
        last = x
    return last


def escape_count(c_re, c_im, max_iter):
    x = y = 0.0
    n = 0
    while n < max_iter:
        if x * x + y * y > 4.0:
            break
        x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
        n += 1
    return n
