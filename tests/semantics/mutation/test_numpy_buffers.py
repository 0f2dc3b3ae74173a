"""A NumPy array the function makes (``out = np.zeros(n)``) written a traced value, or at a
traced index, outside any staged loop: the JAX array it stands for, as a staged loop carries
it. Before, NumPy's ``ValueError`` ("setting an array element with a sequence") escaped from
inside autolax, or a traced index was refused. ``np.zeros_like(x)`` (and ``ones_like``,
``empty_like``, ``full_like``) of a traced ``x``: NumPy's array of its shape and dtype
(``ops.like``); before, autolax's ``TracedValueError`` (NumPy asked for ``x``'s values). On
every path, against Python on NumPy."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from paths import check_all_paths


def first_row_then_loop(y0, h):
    # an ODE solver's buffer: the first row written before the loop
    n = 5
    ys = np.zeros((n, 2))
    ys[0] = y0
    for i in range(n - 1):
        ys[i + 1] = ys[i] + h * ys[i][::-1] * np.array([1.0, -1.0])
    return ys


def writes_and_adds_at_the_top(x):
    out = np.zeros(3)
    out[0] = x[0] * 2.0
    out[1:] += x[1:]
    out[2] *= x[0] + 1.0
    return out


def an_alias_sees_the_write(x):
    out = np.ones(3)
    view = out
    out[1] = x[2] - x[0]
    return view, out


def at_a_traced_index(x, k):
    hits = np.zeros(4, dtype=np.int32)
    hits[k] = 7
    hits[k - 1] += 1
    return hits, x[k]


def nested_item(x):
    grid = np.zeros((2, 3))
    grid[1][2] = x.sum()
    return grid


def running_mean(xs):
    out = np.zeros_like(xs)
    acc = 0.0
    for i, x in enumerate(xs):
        acc = 0.9 * acc + x
        out[i] = acc
    return out


def centroids(X, C, labels):
    # k-means' update: sums at a traced index, then a division guarded by the count
    newC = np.zeros_like(C)
    counts = np.zeros(C.shape[0])
    for i in range(X.shape[0]):
        newC[labels[i]] += X[i]
        counts[labels[i]] += 1
    for j in range(C.shape[0]):
        if counts[j] > 0:
            newC[j] /= counts[j]
        else:
            newC[j] = C[j]
    return newC


def likes_read_only(x):
    ones = np.ones_like(x, dtype=np.int32)
    filled = np.full_like(x, 2.5)
    blank = np.empty_like(x)
    blank[:] = x * 3.0
    return ones.sum() + (filled * x).sum() + blank, ones.dtype == np.int32


X = np.array([1.5, -2.0, 4.0], np.float32)


@pytest.mark.parametrize("fn, args", [
    (first_row_then_loop, (np.array([1.0, 0.5], np.float32), 0.1)),
    (writes_and_adds_at_the_top, (X,)),
    (an_alias_sees_the_write, (X,)),
    (at_a_traced_index, (np.array([1.0, 2.0, 3.0, 4.0], np.float32), 2)),
    (nested_item, (X,)),
    (running_mean, (X,)),
    (centroids, (np.arange(10.0, dtype=np.float32).reshape(5, 2), np.ones((3, 2), np.float32),
                 np.array([0, 2, 0, 2, 2], np.int32))),
    (likes_read_only, (X,)),
])
def test_a_numpy_buffer_written_a_traced_value_is_a_jax_array(fn, args, tmp_path):
    jax_args = tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    python_args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    out = check_all_paths(fn, *jax_args, python_args=python_args, tmp_dir=tmp_path)
    assert out.error is None, out  # (Python's answer is a value on each: compared above)


def test_the_cli_knows_numpys_like_functions_by_the_files_imports(tmp_path):
    from autolax.cli import Options, convert_source

    source = (
        "import numpy\nfrom numpy import ones_like as ol\n\n\n"
        "def f(xs):\n    out = numpy.zeros_like(xs)\n    for i in range(3):\n        out[i] = xs[i] * 2.0\n"
        "    return out + ol(xs)\n"
    )
    text = convert_source(source, "f.py", Options(all=True)).text
    assert "ops.like(numpy.zeros_like, xs)" in text and "ops.like(ol, xs)" in text
    namespace = {}
    exec(compile(text, str(tmp_path / "f.py"), "exec"), namespace)  # noqa: S102 - the test's own converted code
    import jax

    got = jax.jit(namespace["f"])(jnp.asarray(X))
    assert np.allclose(np.asarray(got), X * 2.0 + 1.0)
