"""Searching a list or tuple by value where Python compares traced values: ``x in lst``,
``x not in lst``, ``lst.count(x)`` and ``lst.index(x)`` are staged (``autolax.runtime.ops.search``)
and agree with Python on every path; ``lst.remove(x)`` is refused (test_fuzz_regressions)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths

XS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)


def finds(b, xs):
    items = [xs[0], xs[1]]
    return b in items


def misses(b, xs):
    items = (xs[0], 1.5, xs[2])
    if b not in items:
        y = xs.sum()
    else:
        y = -b
    return y


def counts(b, xs):
    items = [xs[0], b, xs[1], 2.0]  # `b` itself counts without a comparison
    return items.count(b), items.count(xs[3])


def locates(b, xs):
    items = [xs[0], xs[1], 3.0]
    return items.index(b) * 10


def counts_in_a_loop(b, xs):
    seen = [b, b + 1.0]
    total = 0
    for x in xs:
        if x in seen:
            total += 1
    return total


@pytest.mark.parametrize("fn, b", [
    (finds, 1.0), (finds, 2.0), (finds, 5.0),
    (misses, 1.5), (misses, 3.0), (misses, 7.0),
    (counts, 2.0), (counts, 7.0), (counts, 4.0),
    (locates, 1.0), (locates, 2.0), (locates, 3.0), (locates, 9.0),
    (counts_in_a_loop, 1.0), (counts_in_a_loop, 3.0), (counts_in_a_loop, 9.0),
])
def test_search_agrees_with_python_on_every_path(fn, b, tmp_path):
    check_all_paths(fn, np.float32(b), XS, tmp_dir=tmp_path)


def test_a_missing_value_raises_pythons_value_error_when_the_program_runs():
    f = autolax.jit(locates)
    assert int(f(2.0, XS)) == 10
    with pytest.raises(ValueError, match="the value searched for is not in list 'items'"):
        f(9.0, XS)


def test_search_is_staged_not_refused():
    jaxpr = str(jax.make_jaxpr(autolax.convert(finds))(1.0, XS))
    assert "eq" in jaxpr and "or" in jaxpr
    # under vmap each lane searches its own value
    got = jax.vmap(autolax.convert(counts), in_axes=(0, None))(jnp.array([2.0, 7.0, 4.0]), XS)
    want = [counts(b, XS) for b in (2.0, 7.0, 4.0)]
    assert [tuple(int(v[k]) for v in got) for k in range(3)] == want


def locates_in_try(b, xs):
    items = [xs[0], xs[1]]
    try:
        k = items.index(b)
    except ValueError:
        k = -1
    return k


def test_index_inside_a_try_that_catches_value_error_is_refused():
    assert locates_in_try(9.0, XS) == -1
    with pytest.raises(autolax.StagedEffectError) as info:
        autolax.jit(locates_in_try)(9.0, XS)
    message = str(info.value)
    assert "`items.index(...)` under a traced condition at" in message
    assert "test_search.py:" in message and "is inside a `try` that catches it" in message
    assert "k = items.index(b)" in message


def compares_arrays(ys, xs):
    items = [xs, xs * 2.0]
    return ys in items


def compares_arrays_after_a_scalar(b, xs):
    items = [xs[0], xs]
    return b in items


def test_comparing_arrays_of_several_items_is_refused(tmp_path):
    # Python raises ValueError (bool() of an array), or finds the array by identity, which
    # jax.jit does not keep (one array passed twice is two tracers): refused
    check_all_paths(compares_arrays, XS.copy(), XS, tmp_dir=tmp_path, refusal=True)
    check_all_paths(compares_arrays, XS, XS, tmp_dir=tmp_path, refusal=True)
    for args in ((XS.copy(), XS), (XS, XS)):
        with pytest.raises(autolax.TracedComparisonError, match=r"'items' is searched for a value at .*item 0"):
            autolax.jit(compares_arrays)(*args)
    # after a traced answer, whether Python reaches the array comparison depends on data
    with pytest.raises(autolax.TracedComparisonError, match=r"'items' is searched for a value at .*item 1"):
        autolax.jit(compares_arrays_after_a_scalar)(5.0, XS)
