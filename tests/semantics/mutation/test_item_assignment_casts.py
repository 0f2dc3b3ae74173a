"""Item assignment casts the value to the array's dtype as NumPy does (issue 43, item 17), on
every path and in ``--standalone`` output.

(Split from tests/test_real_code_round_two.py.)"""

from __future__ import annotations

import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import agrees, check_all_paths
from every_path import standalone_outcome


# ----------------------------------------------------------------------------- item 17
def set_item(x, v):
    x[1] = v
    return x


def add_to_item(x, v):
    x[1] += v
    return x


def set_slice(x, v):
    x[0:2] = v
    return x


def add_to_slice(x, v):
    x[0:2] += v
    return x


def set_items_in_a_loop(x, v):
    for i in range(x.shape[0]):
        if v > i:
            x[i] = v * i
    return x


CASTS = [(np.float32, 1.25), (np.int32, 2.7), (np.int32, -2.7), (np.int32, np.float32(-2.7)), (np.bool_, 2.5),
         (np.int32, 3)]


@pytest.mark.parametrize("fn", [set_item, add_to_item, set_slice, add_to_slice, set_items_in_a_loop],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype, v", CASTS, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_item_assignment_casts_to_the_arrays_dtype_as_numpy_does(fn, dtype, v, tmp_path):
    # 9ef3fc4: `ints[i] = 2.7` (and a float64 into a float32 array under x64) was JAX's
    # FutureWarning "scatter inputs have incompatible types" (a future error); NumPy casts.
    import warnings

    x = np.zeros(3, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        expected = check_all_paths(fn, jnp.asarray(x), v, tmp_dir=tmp_path, python_args=(x.copy(), v))
        standalone_outcome_ = standalone_outcome(fn, jnp.asarray(x), v)
        got = autolax.jit(fn)(jnp.asarray(x), v) if expected.error is None else None
    assert agrees(expected, standalone_outcome_, "standalone", allow_refusal=False) is None
    if expected.error is None:
        assert got.dtype == expected.value.dtype
        np.testing.assert_array_equal(np.asarray(got), expected.value)
    else:  # `ints[0:2] += 2.7`: NumPy's in-place ufunc refuses to cast its float output
        assert isinstance(expected.error, TypeError) and "casting rule 'same_kind'" in str(expected.error)


def test_a_float64_value_into_a_float32_array_under_x64(tmp_path):
    import subprocess
    import sys

    script = textwrap.dedent('''
        import warnings
        import jax, jax.numpy as jnp, numpy as np, autolax
        warnings.simplefilter("error")
        def f(x, v):
            x[1] = v
            x[0] += v
            x[1:] *= v
            return x
        with jax.enable_x64(True):
            expected = f(np.zeros(3, np.float32), np.float64(1.1))
            for run in (autolax.jit(f), jax.jit(autolax.convert(f))):
                got = run(jnp.zeros(3, jnp.float32), jnp.float64(1.1))
                assert got.dtype == expected.dtype == np.float32, (got.dtype, expected.dtype)
                np.testing.assert_array_equal(np.asarray(got), expected)
        print("ok")
    ''')
    path = tmp_path / "x64_cast.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
