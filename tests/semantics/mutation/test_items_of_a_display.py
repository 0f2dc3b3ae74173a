"""Writes through the items of a list or tuple made of names (``t = (a, b)``, then
``t[0][1] = v``): Python changes the object ``a`` holds, so ``a`` and ``t[0]`` both see
it; converted code updates a JAX array as a value, and the names are rebound from the
container (and the container from the names). Compared with Python on every path, with
NumPy arguments (what the program was written for) and staged loops around the writes."""

import numpy as np
import pytest

import autolax
from paths import PATHS, check_all_paths


def through_a_tuple(a, b):
    t = (a, b)
    t[0][1] = 5.0
    return a, b, t[0]


def through_a_list(a, b):
    t = [a, b]
    t[1][0] = -1.0
    t[0][2] += t[1][0]
    return a + b, t


def a_name_changes_what_the_tuple_holds(a, b):
    t = (a, b)
    a[0] = 7.0
    return t[0], t[1]


def a_name_changes_what_a_shared_list_holds(a, b):
    t = [a, b]
    shared = [t]
    b[1] = 3.0
    return shared[0][1]


def in_a_staged_loop(a, b, n):
    t = [a, b]
    for i in range(n):
        t[0][i] = i * 2.0
        t[1][i] += t[0][i]
    return a, b


def only_the_tuple_is_read(a, b):
    pair = (a, b)
    pair[1][0] = pair[0][0] + 1.0
    return pair


def the_list_changes_itself_first(a, b, c):
    t = [a, b]
    t[0] = c
    t[0][1] = 9.0
    return a, t[0]


def holds_another_name_after_an_item_assignment(a, b, c):
    # Before: `t[0] = c` ended what autolax knew of `t`, and `t[1][0] = 5.0` left `b` as it
    # was (a silent wrong answer).
    t = [a, b]
    t[0] = c
    t[1][0] = 5.0
    t[0][1] = 7.0
    return a, b, c


def follows_an_appended_name(a, b, c):
    t = [a, b]
    t.append(c)
    t[1][0] = 5.0
    t[-1][0] = 6.0
    c[1] = 8.0
    return b, c, t[2]


def follows_the_items_before_an_extend(a, b, c):
    t = [a, b]
    t.extend([c, c])
    t[1][0] = 5.0
    a[1] = 3.0
    return b, t[0], len(t)


def a_list_slice_is_a_copy(a, b):
    t = [a, b]
    t[0:1][0] = b
    return t[0]


def helper_writes_into_a_tuple_item(v):
    v[0][1] = 5.0


def calls_with_a_tuple(a, b):
    helper_writes_into_a_tuple_item((a, b))
    return a + b


def vec(*values):
    return np.array(values, dtype=np.float32)


CASES = [
    (through_a_tuple, lambda: (vec(0, 0, 0), vec(1, 1, 1))),
    (through_a_list, lambda: (vec(1, 2, 3), vec(4, 5, 6))),
    (a_name_changes_what_the_tuple_holds, lambda: (vec(0, 0), vec(1, 1))),
    (a_name_changes_what_a_shared_list_holds, lambda: (vec(0, 0), vec(1, 1))),
    (in_a_staged_loop, lambda: (vec(0, 0, 0, 0), vec(1, 1, 1, 1), 3)),
    (only_the_tuple_is_read, lambda: (vec(2, 2), vec(0, 0))),
    (the_list_changes_itself_first, lambda: (vec(0, 0), vec(1, 1), vec(2, 2))),
    (holds_another_name_after_an_item_assignment, lambda: (vec(0, 0), vec(1, 1), vec(2, 2))),
    (follows_an_appended_name, lambda: (vec(0, 0), vec(1, 1), vec(2, 2))),
    (follows_the_items_before_an_extend, lambda: (vec(0, 0), vec(1, 1), vec(2, 2))),
    (a_list_slice_is_a_copy, lambda: (vec(0, 0), vec(1, 1))),
    (calls_with_a_tuple, lambda: (vec(0, 0, 0), vec(1, 1, 1))),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fn, args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_a_write_through_an_item_reaches_the_name_holding_it(fn, args, path, tmp_path):
    # Fresh arguments for each path: Python (and converted code run eagerly) change them.
    check_all_paths(fn, *args(), python_args=args(), tmp_dir=tmp_path, paths=(path,))


def test_the_names_are_rebound_from_the_container_and_the_tuple_rebuilt():
    text = autolax.to_source(through_a_tuple)
    assert "t = ops.at(t)[0].put(ops.at(t[0])[1].set(5.0))" in text
    assert "a, b = t" in text
    text = autolax.to_source(a_name_changes_what_the_tuple_holds)
    # (the item no name changed is read from the tuple: `b` may have been rebound by `+=`)
    assert "t = (a, t[1])" in text.split("a = ops.at(a)[0].set(7.0)")[1]
    text = autolax.to_source(a_name_changes_what_a_shared_list_holds)
    assert "t = ops.at(t)[1].set(b)" in text  # in place: others may hold the list


def test_a_direct_write_into_a_tuple_is_pythons_type_error():
    # `put` rebuilds a tuple only for the outer step of a nested write; `t[0] = v` is not one.
    def direct(a, b):
        t = (a, b)
        t[0] = b
        return t

    with pytest.raises(TypeError, match="'tuple' object does not support item assignment"):
        autolax.jit(direct)(vec(0, 0), vec(1, 1))
