"""Under ``jax_enable_x64`` the loop index has the default integer type (int64), the type of
the scan's own counter (issue 41, item 6): no conversion per iteration, and ``i * 2**33``
does not wrap; loops with an exit agree with Python under x64.

(Split from tests/test_kernel_items.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths


# ----------------------------------------------------------------------------- item 6
def big_steps(x, n):
    for i in range(n):
        x = x + i * 2**33  # wraps to 0 in int32
    return x


def recursive_filter(x, a):
    y = jnp.zeros_like(x)
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + x[i]
    for i in range(x.shape[0] - 2, -1, -1):
        y[i] = y[i] + a * y[i + 1]
    return y


def test_loop_index_is_int64_under_x64():
    with jax.enable_x64(True):
        for static in ((), (1,)):
            got = autolax.jit(big_steps, static_argnums=static)(jnp.int64(1), 5)
            assert got.dtype == jnp.int64 and int(got) == big_steps(1, 5)
        got = autolax.jit(big_steps)(jnp.int64(1), jnp.int64(4))  # a traced trip count: fori
        assert int(got) == big_steps(1, 4)
        x = jnp.linspace(0.0, 1.0, 9)
        np.testing.assert_allclose(autolax.jit(recursive_filter)(x, 0.5), _filter_np(x, 0.5))
        jaxpr = jax.make_jaxpr(autolax.convert(recursive_filter))(x, 0.5).jaxpr
        counters = [v.aval.dtype for e in jaxpr.eqns if e.primitive.name == "scan" for v in e.outvars
                    if jnp.issubdtype(v.aval.dtype, jnp.integer)]
        assert counters and all(d == jnp.int64 for d in counters)
        body = next(e for e in jaxpr.eqns if e.primitive.name == "scan").params["jaxpr"].jaxpr
        # no int64 -> int32 conversion of the index before it is used (JAX's scatter converts
        # its own indices: those are the only ones allowed)
        reads = [e for e in body.eqns if e.primitive.name == "convert_element_type"
                 and e.params["new_dtype"] == jnp.int32 and not any(
                     u.primitive.name == "broadcast_in_dim" for u in body.eqns if e.outvars[0] in u.invars)]
        assert not reads
    # the context is gone: int32 again
    jaxpr = jax.make_jaxpr(autolax.convert(recursive_filter))(jnp.ones(5), 0.5).jaxpr
    scan = next(e for e in jaxpr.eqns if e.primitive.name == "scan")
    assert scan.outvars[0].aval.dtype == jnp.int32


def _filter_np(x, a):
    x = np.asarray(x)
    y = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + x[i]
    for i in range(x.shape[0] - 2, -1, -1):
        y[i] = y[i] + a * y[i + 1]
    return y


def test_loop_index_under_x64_on_every_path(tmp_path):
    with jax.enable_x64(True):
        check_all_paths(big_steps, np.int64(3), 6, tmp_dir=tmp_path)
        check_all_paths(big_steps, np.int64(3), 0, tmp_dir=tmp_path)


def first_above(xs, t):
    total = 0.0
    found = -1
    for i in range(xs.shape[0]):
        if xs[i] > t:
            found = i
            break
        total = total + xs[i] * xs[i]
    return total, found


def scan_with_exit(xs, t):
    total = 0.0
    for k, x in enumerate(xs):
        if x > t:
            break
        total = total + x * k
    return total


@pytest.mark.parametrize("t", [0.5, 10.0])
def test_exits_under_x64(t, tmp_path):
    xs = np.array([0.1, 0.2, 0.9, 0.3], np.float64)
    with jax.enable_x64(True):
        check_all_paths(first_above, xs, t, tmp_dir=tmp_path)
        check_all_paths(scan_with_exit, xs, t, tmp_dir=tmp_path)
        got = jax.grad(lambda v: autolax.convert(first_above)(v, t)[0])(jnp.asarray(xs))
        found = first_above(xs, t)[1]
        stop = found if found >= 0 else len(xs)
        want = jax.grad(lambda v: sum(v[i] * v[i] for i in range(stop)))(jnp.asarray(xs))
        np.testing.assert_allclose(got, want)
