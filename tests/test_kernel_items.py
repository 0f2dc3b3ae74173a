"""Issue 41, items 4, 6 and 7 (and 5, see test_fused_updates.py): constructs of numerical
kernels, each compared with Python on every path.

* Chained item assignment (``c[i, j] = c[j, i] = s``, covariance) is the assignments Python
  performs: the value evaluated once, the targets assigned from left to right.
* Under ``jax_enable_x64`` the loop index has the default integer type (int64), the type of
  the scan's own counter: no conversion per iteration, and ``i * 2**33`` does not wrap.
* An ``if`` of a few integer bit operations (CRC-16) is a select, not a ``lax.cond``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import primitives
from test_common_idioms import standalone_agrees
from paths import check_all_paths


# ----------------------------------------------------------------------------- item 4
def covariance(d, c):
    n = d.shape[1]
    for i in range(n):
        for j in range(i, n):
            s = (d[:, i] * d[:, j]).sum()
            c[i, j] = c[j, i] = s
    return c


def alias_sees_both(a, x):
    b = a
    a[0] = a[1] = x
    return b, a


def unpacked_then_item(a, x):
    a = a.copy()
    k, a[2] = a[0:2] = x
    return a, k


def in_loop(a, n):
    a = a.copy()
    for i in range(n):
        a[i] = a[i + 1] = a[i] + a[i + 1]
    return a


def value_once(a):
    a = a.copy()

    def value():
        print("evaluated")  # printed once, as Python evaluates the value once
        return a[1] + 7.0

    a[0] = a[2] = value()
    return a


def overwritten_left_to_right(a, i):
    a = a.copy()
    a[i] = a[1] = 4.0 * a[i]  # when i == 1 both targets are one element: the last write wins
    return a


def test_chained_item_assignment_in_a_kernel(tmp_path):
    d = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    # every element of c is written, so the in-place changes of Python and of the eager path
    # do not carry from one path to the next
    check_all_paths(covariance, d, np.zeros((3, 3), np.float32), tmp_dir=tmp_path)
    standalone_agrees(covariance, d, np.zeros((3, 3), np.float32))
    got = autolax.jit(covariance)(d, jnp.zeros((3, 3)))
    np.testing.assert_allclose(got, d.T @ d)


@pytest.mark.parametrize("fn, args", [
    (alias_sees_both, (np.arange(3.0, dtype=np.float32), 5.0)),
    (unpacked_then_item, (np.arange(3.0, dtype=np.float32), (1.0, 2.0))),
    (in_loop, (np.arange(6.0, dtype=np.float32), 4)),
    (in_loop, (np.arange(6.0, dtype=np.float32), 0)),
    (value_once, (np.arange(3.0, dtype=np.float32),)),
    (overwritten_left_to_right, (np.arange(3.0, dtype=np.float32), 1)),
    (overwritten_left_to_right, (np.arange(3.0, dtype=np.float32), 2)),
], ids=lambda v: getattr(v, "__name__", None))
def test_chained_item_assignment_agrees_with_python(fn, args, tmp_path):
    check_all_paths(fn, *args, tmp_dir=tmp_path)


def test_chained_item_assignment_is_staged():
    d = jnp.ones((4, 5))
    report = autolax.trace_check(covariance, d, jnp.zeros((5, 5)))
    assert not report.unrolled and report.consistent
    counts = primitives(covariance, d, jnp.zeros((5, 5)))
    assert counts["scan"] == 1 and counts["while"] == 1  # range(i, n): a fori_loop


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


# ----------------------------------------------------------------------------- item 7
def crc16(data):
    crc = 0xFFFF
    for b in data:
        crc = crc ^ (b << 8)
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def shifts_right(xs):
    h = 0
    for x in xs:
        if x & 1:
            h = (h >> 1) ^ x
        else:
            h = ~(h | x)
    return h


def divides_when_nonzero(xs):
    h = 0
    for x in xs:
        if x != 0:
            h = h + 100 // x  # may divide by zero on the untaken side: stays a cond
    return h


@pytest.mark.parametrize("data", [[], [0], [49, 50, 51, 52, 53, 54, 55, 56, 57], [255] * 5])
def test_crc16_agrees_with_python(data, tmp_path):
    arr = np.array(data, np.int32)
    check_all_paths(crc16, arr, tmp_dir=tmp_path, python_args=([int(b) for b in data],))
    standalone_agrees(crc16, arr)
    if data == [49, 50, 51, 52, 53, 54, 55, 56, 57]:  # "123456789": CRC-16/CCITT-FALSE
        assert int(autolax.jit(crc16)(arr)) == 0x29B1


@pytest.mark.parametrize("xs", [[3, 4, -7, 10], [], [-1, -2]])
def test_bit_branches_agree_with_python(xs, tmp_path):
    arr = np.array(xs, np.int32)
    check_all_paths(shifts_right, arr, tmp_dir=tmp_path, python_args=([int(x) for x in xs],))
    check_all_paths(divides_when_nonzero, arr, tmp_dir=tmp_path, python_args=([int(x) for x in xs],))


def test_bit_operation_branches_are_selects():
    data = jnp.arange(10, dtype=jnp.int32)
    for fn in (crc16, shifts_right):
        counts = primitives(fn, data)
        assert counts.get("cond", 0) == 0 and counts["select_n"] >= 1, (fn.__name__, counts)
        report = autolax.trace_check(fn, data)
        assert [r.became for r in report.rows if r.kind == "if"] == ["lax.select"]
    # integer division by a possibly-zero value is not run where Python would not run it
    assert primitives(divides_when_nonzero, data)["cond"] == 1


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
