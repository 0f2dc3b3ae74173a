"""``ys += v`` where ``ys = xs``: NumPy adds into the one array both names hold, so ``xs``
changes too; a number, a tuple or a NumPy scalar is rebound and ``xs`` keeps its value. So
does a tuple or list that holds the array (``state = (xs, n)``). On
every path, against Python run on NumPy arrays (a JAX array stands for a NumPy one, as for
``x[i] = v``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from paths import agrees, run
from every_path import EVERY_PATH, ip, outcome  # noqa: F401 - ip: the magic's shell fixture


def adds_through_an_alias(xs, n):
    ys = xs
    ys += 1.0
    return xs.sum() + n


def adds_through_an_alias_in_a_loop(xs, n):
    ys = xs
    for i in range(n):
        ys *= 2.0
        if ys[0] > 5.0:
            ys -= 1.0
    return xs, ys


def adds_into_the_name_an_alias_holds(xs, n):
    ys = xs
    while n > 0:
        xs += ys[0]
        n -= 1
    return ys


def adds_to_an_alias_of_a_number(x, n):
    y = x
    y += n
    return x, y


def extends_an_alias_of_a_list(xs, n):
    out = [n]
    same = out
    for x in xs:
        same += [x]
    return len(out), out[-1]


def extends_an_alias_of_a_tuple(xs, n):
    t = (n,)
    same = t
    same += (xs[0],)
    return len(t), len(same)


def adds_to_an_array_a_tuple_holds(xs, n):
    state = (xs, n)
    xs += 1.0
    return state


def writes_into_an_array_a_tuple_holds(xs, n):
    t = (xs, n * 2.0)
    xs[0] = 5.0
    return t


def adds_to_an_array_a_list_holds_in_a_loop(xs, n):
    pair = [xs, 0.0]
    for i in range(n):
        xs *= 2.0
        if xs[1] > 5.0:
            xs -= 1.0
    return pair[0].sum(), pair[1]


def adds_to_a_number_then_writes_the_array(x, xs):
    # `x += 1` rebinds `x`: the tuple keeps the old number while it sees the array's change
    t = (x, xs)
    x += 1.0
    xs[0] = 7.0
    return t, x


V = np.array([1.0, 2.0, 3.0])


@pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")  # the list's loop changes its length
@pytest.mark.parametrize("fn, args", [
    (adds_through_an_alias, (V, 2)),
    (adds_through_an_alias_in_a_loop, (V, 3)),
    (adds_through_an_alias_in_a_loop, (V, 0)),
    (adds_into_the_name_an_alias_holds, (V, 2)),
    (adds_to_an_alias_of_a_number, (1.5, 2)),
    (extends_an_alias_of_a_list, (V, 4)),
    (extends_an_alias_of_a_tuple, (V, 4)),
    (adds_to_an_array_a_tuple_holds, (V, 2)),
    (writes_into_an_array_a_tuple_holds, (V, 2)),
    (adds_to_an_array_a_list_holds_in_a_loop, (V, 3)),
    (adds_to_a_number_then_writes_the_array, (1.5, V)),
])
def test_an_augmented_alias_changes_what_numpy_changes(fn, args, tmp_path, ip):
    # Before: `ys += 1.0` rebound `ys` only, and `xs` kept the old array (a wrong answer with
    # no error) where NumPy adds in place.
    expected = run("python", fn, tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args))
    jax_args = tuple(jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in args)
    for path in EVERY_PATH:
        got = outcome(path, fn, jax_args, tmp_path, ip)
        assert not agrees(expected, got, path, allow_refusal=False), (path, got)
