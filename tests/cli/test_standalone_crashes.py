"""`autolax convert --standalone` (issue 33): the four classes of programs whose output
crashed with JAX's or Python's errors under the old static backend (or, for a tuple argument,
silently returned another answer). The output now runs autolax's own runtime (copied beside
it), so each gives Python's answer or the runtime's error, as `autolax.jit` does."""

import importlib.util
import re
import textwrap

import jax
import numpy as np
import pytest

import autolax
from conftest import assert_close
from paths import agrees, run, standalone_module

SOURCE = '''\
import jax.numpy as jnp


def tuple_sum(arrs):
    total = 0
    for arr in arrs:
        total += arr[0]
    return total


def pair_sum(xs, ys):
    total = 0.0
    for i, (x, y) in enumerate(zip(xs, ys)):
        total += x * y + i
    return total


def copy_rows(a, b):
    for i in range(a.shape[0]):
        b[i] = a[i]
    return b


def first_items(xs):
    total = 0.0
    for x in xs:
        total += x[0]
    return total


def ten_twenty(x):
    if x:
        return 10
    else:
        return 20


def pick(x):
    return 1.0 if x else 2.0
'''

INPUTS = {
    "tuple_sum": [((np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32)),),
                  ([np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32)],),
                  (np.array([[5.0, 1.0], [7.0, 2.0]], np.float32),)],
    "pair_sum": [(np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)),
                 (np.array([1.0, 2.0], np.float32), (3.0, 4.0))],
    "copy_rows": [(np.arange(n, dtype=np.float32), np.zeros(n, np.float32)) for n in (0, 3)],
    "first_items": [(np.ones((n, n), np.float32),) for n in (0, 3)],
    "ten_twenty": [(x,) for x in (1 + 2j, 0j, np.complex64(0.5j), np.complex64(0), np.ones((1, 1, 1), np.float32),
                                  np.zeros((1,), np.float32), np.ones((0,), np.float32), np.ones((2,), np.float32))],
    "pick": [(x,) for x in (1 + 2j, 0j, np.ones((1, 1, 1), np.float32), np.zeros((1,), np.float32),
                            np.ones((0,), np.float32), np.ones((2,), np.float32))],
}


def _original(folder, name, source) -> dict:
    """The program as Python runs it, from a file (autolax.jit reads its source)."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """(the original namespace, its --standalone conversion run as a module)."""
    original = _original(tmp_path_factory.mktemp("crashes"), "crashes", SOURCE)
    return original, standalone_module(SOURCE, "crashes.py", all=True)


def _standalone_outcome(fn, args):
    return run("python", lambda *a: jax.block_until_ready(jax.jit(fn)(*a)), args)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_each_crash_class_gives_pythons_answer_or_the_runtimes_error(modules, name):
    original, standalone = modules
    for args in INPUTS[name]:
        expected = run("python", original[name], args)
        got = _standalone_outcome(standalone[name], args)
        jitted = run("autolax.jit", original[name], args)
        assert agrees(expected, got, "cli default") is None, (name, args, got)
        assert agrees(expected, jitted, "autolax.jit") is None, (name, args, jitted)
        # the same outcome as autolax.jit: the same answer, or an error of the same class
        assert got.kind == jitted.kind, (name, args, got.error, jitted.error)
        if got.error is not None:
            assert _unplaced(got.error) == _unplaced(jitted.error)


def _unplaced(error) -> str:
    """An error's text without its ``file:line`` (the converted file's own, or the source's)."""
    return re.sub(r"\S+\.py:\d+", "FILE:LINE", str(error))


def test_a_tuple_of_arrays_is_iterated_as_python_does(modules):
    # The old backend scanned the stacked tuple (11 where Python gives 12).
    _, standalone = modules
    arrays = (np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32))
    assert float(jax.jit(standalone["tuple_sum"])(arrays)) == 12.0


@pytest.mark.parametrize("shape", [(0,), (2,)])
def test_an_array_condition_is_refused_in_the_runtimes_words(modules, shape):
    original, standalone = modules
    x = np.ones(shape, np.float32)
    with pytest.raises(autolax.ArrayConditionError) as runtime:
        autolax.jit(original["ten_twenty"])(x)
    with pytest.raises(Exception) as got:
        jax.jit(standalone["ten_twenty"])(x)
    assert type(got.value).__name__ == "ArrayConditionError"
    assert _unplaced(got.value) == _unplaced(runtime.value)
    assert f"shape {shape}" in str(got.value)


def test_none_on_one_side_of_a_staged_if_is_refused_as_the_runtime_refuses_it(tmp_path):
    source = textwrap.dedent("""\
        def f(x):
            a = None
            if x:
                a = 0
            return a == None
        """)
    namespace = _original(tmp_path, "none_side", source)
    with pytest.raises(autolax.StateMismatchError) as runtime:
        autolax.jit(namespace["f"])(True)
    standalone = standalone_module(source, "none_side.py", all=True)
    with pytest.raises(Exception) as got:
        jax.jit(standalone["f"])(True)
    assert type(got.value).__name__ == "StateMismatchError"
    assert runtime.value.code == got.value.code == "if-structure"
    # (the quoted source line is missing where the source file is not beside the output)
    assert [ln for ln in _unplaced(got.value).splitlines() if ln.strip()] == \
        [ln for ln in _unplaced(runtime.value).splitlines() if ln.strip() not in ("", "if x:")]
    assert "'a' is int32[] in the `if` branch and None in the `else` branch" in str(got.value)


APPENDS = '''\
import jax.numpy as jnp


def states_of(xs, h):
    states = []
    for x in xs:
        h = jnp.tanh(x[0] + h)
        states.append(h)
    return len(states), h


def stacked_states(xs, h):
    states = []
    for x in xs:
        h = jnp.tanh(x[0] + h)
        states.append(h)
    return jnp.stack(states)


def last_of(xs):
    for x in xs:
        y = x[0] * 2.0
    return y
'''


@pytest.mark.parametrize("n", [0, 2])
def test_a_loop_of_no_items_leaves_the_list_it_appends_to_empty(tmp_path, n):
    original = _original(tmp_path, "appends", APPENDS)
    standalone = standalone_module(APPENDS, "appends.py", all=True)
    xs, h = np.ones((n, n), np.float32), np.float32(0.5)
    for name, args in (("states_of", (xs, h)), ("stacked_states", (xs, h)), ("last_of", (xs,))):
        expected = run("python", original[name], args)
        got = _standalone_outcome(standalone[name], args)
        assert agrees(expected, got, "cli default") is None, (name, n, got)
