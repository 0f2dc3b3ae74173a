"""An ``if`` of a few integer bit operations (CRC-16) is a select, not a ``lax.cond`` (issue 41,
item 7), and agrees with Python on every path.

(Split from tests/test_kernel_items.py.)"""

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import primitives
from semantics.idioms.test_common_idioms import standalone_agrees
from paths import check_all_paths


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
