"""Root finders and ODE integrators (queries 1, 11 and 16 of SELECTION.md)."""

import jax.numpy as jnp

NEWTON_TOL = 10 ** (-3)
NEWTON_STEPS = 100
NEWTON_H = 0.001
NEWTON_EPS = 1e-4


# after sdrave/braunschweig09 bisec/c/bisec.py (query 1): bisec
def bisect_until_small(fun, lo, hi, tol=1e-4):
    while True:
        mid = (lo + hi) / 2
        val = fun(mid)
        if abs(val) < 1e-4:
            break
        if val > 0:
            hi = mid
        else:
            lo = mid

    return val


# after Rudra-Dhara/NM-Assignment assignment2/Self_defined_functions/root_fn.py (query 16): NR_rt
def newton_root(fun, dfun, x, x_tol, *extra):
    while abs(fun(x, *extra)) > x_tol:
        x = x - fun(x, *extra) / dfun(x, *extra)

    return x


# after lylatraylor/newton-practice newton.py (query 16): newton_method, derivative
def forward_difference(fun, x, step):
    slope = (fun(x + step) - fun(x)) / step
    return slope


def newton_optimum(fun, x_first, tol):
    xs = jnp.array([x_first])
    for k in jnp.arrange(0, NEWTON_STEPS):
        d1 = forward_difference(fun, xs[k], NEWTON_H)
        d2 = forward_difference(d1, xs[k], NEWTON_H)
        x_next = xs[k] - d1 / d2
        xs = jnp.append(xs, x_next)
        if abs(xs[k + 1] - xs[k]) < tol:
            answer = xs[-1]
            break
        if NEWTON_STEPS == 100:
            answer = xs[-1]
            break
    return answer


# after JeongKyeongHwan/16ECA_JeongKyeongHwan 과제/method과제.py (query 16): newton
def newton_one_step(fun, dfun, x0, epsilon=NEWTON_EPS, verbose=False):

    x = float(x0)

    count = 0

    while True:
        fx = fun(x)

        if abs(fx) < epsilon:
            break

        else:
            x += (-fx / dfun(x))

        return x


# after alexaoh/meeting diffeqns/eulers_method.py (query 11): eulers_method, euler_step
def euler_step(fun, t, y, h):
    return y + h * fun(t, y)


def euler_fixed_steps(fun, t0, y0, h, nsteps):
    dim = len(y0)
    ys = jnp.zeros((nsteps + 1, dim))
    ts = jnp.zeros(nsteps + 1)
    ts[0] = t0
    ys[0] = y0
    for i in range(nsteps):
        ys[i + 1] = euler_step(fun, ts[i], ys[i], h)
        ts[i + 1] = ts[i] + h
    return ts, ys


# after elizabethg60/A577 A577_package/ODE.py (query 11): Euler
def euler_until(x_now, y, step, x_end, fun):

    while x_now < x_end:
        y = y + step * fun(x_end, y)
        x_now = x_now + step

    return y


# after woraseth/numer euler_ivp.py (query 11): euler
def euler_to(fun, x0, y0, h, x):
    while x0 < x:
        y0 += fun(x0, y0) * h
        x0 += h
    return y0
