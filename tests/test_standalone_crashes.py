"""`autolax convert --standalone` (issue 33): the four classes of programs whose output
crashed with JAX's or Python's errors (or, for a tuple argument, silently returned another
answer) give Python's answer or the runtime's error, and the output checks at entry that
its arguments are of the types it was written for."""

import importlib.util
import textwrap

import jax
import numpy as np
import pytest

import autolax
from autolax.sourcegen import Options, convert_source
from conftest import assert_close

SOURCE = '''\
import jax.numpy as jnp


def tuple_sum(arrs):
    total = 0
    for arr in arrs:
        total += arr[0]
    return total


def declared_tuple_sum(arrs: tuple):
    total = 0
    for arr in arrs:
        total += arr[0]
    return total


def declared_list_sum(arrs: list):
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


def ten_twenty_complex(x: complex):
    if x:
        return 10
    else:
        return 20


def pick(x):
    return 1.0 if x else 2.0


def declared(xs: "Float[Array, 'n']", t: float, n: int, flags: "Bool[Array, '...']", rest: dict):
    total = 0.0
    for x in xs:
        if x > t:
            total += x
    return total * n, flags, rest
'''


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """(the original module, its --standalone conversion, the converted text), from files."""
    tmp = tmp_path_factory.mktemp("crashes")
    path = tmp / "crashes.py"
    path.write_text(SOURCE)
    out = tmp / "crashes_standalone.py"
    out.write_text(convert_source(SOURCE, str(path), Options(all=True, standalone=True)).text)
    return _load(path, "crashes"), _load(out, "crashes_standalone"), out.read_text()


def _both(modules, name, *args):
    original, standalone, _ = modules
    return getattr(original, name)(*args), jax.jit(getattr(standalone, name))(*args)


# ----------------------------------------------------------------------------- tuple and list arguments
def test_a_tuple_where_an_array_was_taken_is_a_type_error_at_entry(modules):
    # The loop is a scan over an array; a tuple of two arrays was scanned as the stacked
    # array of its items (11 where Python gives 12), a list failed inside JAX.
    original, standalone, _ = modules
    arrays = (np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32))
    assert float(original.tuple_sum(arrays)) == 12.0
    for arrs, kind in ((arrays, "tuple"), (list(arrays), "list")):
        for call in (jax.jit(standalone.tuple_sum), standalone.tuple_sum):
            with pytest.raises(TypeError) as info:
                call(arrs)
            assert str(info.value) == (
                f"tuple_sum() argument 'arrs' is a {kind}, where no type was declared for it and the function "
                "takes it for an array: autolax convert --standalone wrote the function for that type.\nFix: "
                "pass a value of that type, or declare the type it takes (an annotation, or --signature "
                "'tuple_sum(arrs: TYPE)') and convert again.")
    rows = np.array([[5.0, 1.0], [7.0, 2.0]], np.float32)  # an array: its rows, as in Python
    assert_close(*_both(modules, "tuple_sum", rows))


def test_a_declared_tuple_or_list_is_iterated_as_python_does(modules):
    arrays = (np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32))
    expected, got = _both(modules, "declared_tuple_sum", arrays)
    assert float(expected) == 12.0
    assert_close(expected, got)
    assert_close(*_both(modules, "declared_list_sum", list(arrays)))
    _, standalone, _ = modules
    with pytest.raises(TypeError, match=r"declared_tuple_sum\(\) argument 'arrs' is float32\[2, 2\], where "
                                        r"'arrs: tuple' was declared"):
        jax.jit(standalone.declared_tuple_sum)(np.stack(arrays))
    with pytest.raises(TypeError, match=r"argument 'arrs' is a tuple, where 'arrs: list' was declared"):
        jax.jit(standalone.declared_list_sum)(arrays)


def test_signature_declares_a_container(tmp_path):
    source = SOURCE.split("\n\n\ndef declared_tuple_sum")[0] + "\n"
    text = convert_source(source, "sig.py", Options(all=True, standalone=True,
                                                    signature=("tuple_sum(arrs: tuple)",))).text
    namespace = {}
    exec(compile(text, "sig.py", "exec"), namespace)  # noqa: S102 - the test's own converted code
    arrays = (np.array([5.0, 1.0], np.float32), np.array([7.0, 2.0], np.float32))
    assert float(jax.jit(namespace["tuple_sum"])(arrays)) == 12.0


def test_arrays_inside_enumerate_and_zip_are_checked(modules):
    xs, ys = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    assert_close(*_both(modules, "pair_sum", xs, ys))
    _, standalone, _ = modules
    with pytest.raises(TypeError, match=r"pair_sum\(\) argument 'ys' is a tuple, where no type was declared"):
        jax.jit(standalone.pair_sum)(xs, (3.0, 4.0))


def test_an_argument_no_loop_iterates_is_not_checked(modules):
    _, _, text = modules
    for name in ("ten_twenty", "pick", "copy_rows"):
        body = text.split(f"def {name}(")[1].split("\ndef ")[0]
        assert "check_argument" not in body


# ----------------------------------------------------------------------------- loops that run zero times
@pytest.mark.parametrize("n", [0, 3])
def test_a_loop_over_an_empty_range_or_array_runs_no_iteration(modules, n):
    # A lax loop traces its body even when it runs zero times: `a[i]` of an empty `a` was an
    # IndexError; the runtime runs such a loop as Python (nothing).
    a = np.arange(n, dtype=np.float32)
    expected = autolax.jit(_load_original(modules).copy_rows)(a, np.zeros(n, np.float32))
    assert_close(_load_original(modules).copy_rows(a, np.zeros(n, np.float32)), expected)
    assert_close(expected, jax.jit(modules[1].copy_rows)(a, np.zeros(n, np.float32)))
    xs = np.ones((n, n), np.float32)
    assert_close(*_both(modules, "first_items", xs))


def _load_original(modules):
    return modules[0]


# ----------------------------------------------------------------------------- None beside a number
def test_none_on_one_side_of_a_staged_if_is_refused_as_the_runtime_refuses_it(tmp_path):
    source = textwrap.dedent("""\
        def f(x):
            a = None
            if x:
                a = 0
            return a == None
        """)
    path = tmp_path / "none_side.py"
    path.write_text(source)
    module = _load(path, "none_side")
    with pytest.raises(autolax.StateMismatchError) as runtime:
        autolax.jit(module.f)(True)
    with pytest.raises(autolax.ConversionError) as standalone:
        convert_source(source, str(path), Options(only=("f",), standalone=True))
    assert runtime.value.code == standalone.value.code == "if-structure"
    assert "'a' is a number or array in the `if` branch and None in the `else` branch" in str(standalone.value)
    assert "lax.cond needs both branches to give it the same structure" in str(standalone.value)
    assert "drop --standalone" not in str(standalone.value)


# ----------------------------------------------------------------------------- conditions
@pytest.mark.parametrize("x", [1 + 2j, 0j, np.complex64(0.5j), np.complex64(0)])
def test_a_complex_condition_takes_pythons_truth_value(modules, x):
    assert_close(*_both(modules, "ten_twenty", x))
    assert_close(*_both(modules, "ten_twenty_complex", x))
    assert_close(*_both(modules, "pick", x))


def test_a_declared_scalar_condition_needs_no_check(modules):
    _, _, text = modules
    body = text.split("def ten_twenty_complex")[1].split("\ndef ")[0]
    assert "cond_predicate" not in body


@pytest.mark.parametrize("name", ["ten_twenty", "pick"])
def test_a_one_element_array_condition_takes_numpys_truth_value(modules, name):
    for x in (np.ones((1, 1, 1), np.float32), np.zeros((1,), np.float32)):
        assert_close(*_both(modules, name, x))


@pytest.mark.parametrize("shape", [(0,), (2,)])
@pytest.mark.parametrize("name", ["ten_twenty", "pick"])
def test_an_array_condition_is_refused_in_the_runtimes_words(modules, shape, name):
    original, standalone, _ = modules
    x = np.ones(shape, np.float32)
    with pytest.raises(autolax.ArrayConditionError) as runtime:
        autolax.jit(getattr(original, name))(x)
    with pytest.raises(ValueError) as got:
        jax.jit(getattr(standalone, name))(x)
    assert str(got.value).startswith(f"{runtime.value}")
    assert f"shape {shape}" in str(got.value) and "autolax convert --standalone" in str(got.value)


# ----------------------------------------------------------------------------- declared types
def test_declared_arguments_are_checked_at_entry(modules):
    _, standalone, _ = modules
    f = jax.jit(standalone.declared)
    xs, flags = np.array([1.0, 3.0], np.float32), np.array([True])
    good = (xs, np.float32(2.0), 2, flags, {"k": 1.0})
    expected = _load_original(modules).declared(*good)
    assert_close(expected, f(*good))
    for k, bad, words in [
        (0, (1.0, 3.0), "argument 'xs' is a tuple, where 'xs: Float[Array, 'n']' was declared"),
        (0, np.ones((2, 2), np.float32), "argument 'xs' is float32[2, 2], where 'xs: Float[Array, 'n']' was declared"),
        (0, np.array([1, 3], np.int32), "argument 'xs' is int32[2], where 'xs: Float[Array, 'n']' was declared"),
        (1, xs, "argument 't' is float32[2], where 't: float' was declared"),
        (2, np.float32(2.0), "argument 'n' is float32[], where 'n: int' was declared"),
        (3, np.array([1.0]), "argument 'flags' is float"),
        (4, [1.0], "argument 'rest' is a list, where 'rest: dict' was declared"),
    ]:
        args = list(good)
        args[k] = bad
        with pytest.raises(TypeError) as info:
            f(*args)
        assert str(info.value).startswith("declared() " + words), str(info.value)


def test_the_condition_rule_is_decided_once_for_both_paths(monkeypatch, tmp_path):
    # plan.condition_truth decides for the runtime (ops.control.predicate) and for
    # --standalone: made to refuse every condition, both refuse a scalar one.
    from autolax import plan

    source = "def f(x: float):\n    if x > 0:\n        y = 1.0\n    else:\n        y = jnp.sin(x)\n    return y\n"
    before = convert_source("import jax.numpy as jnp\n\n\n" + source, "m.py", Options(all=True, standalone=True)).text
    assert "cond_predicate" not in before
    monkeypatch.setattr(plan, "condition_truth", lambda ndim, boolean: plan.NOT_ONE_VALUE)
    after = convert_source("import jax.numpy as jnp\n\n\n" + source, "m.py", Options(all=True, standalone=True)).text
    assert "cond(cond_predicate(x > 0, 'm.py:5')" in after
    path = tmp_path / "decided_once.py"
    path.write_text("import jax.numpy as jnp\n\n\n" + source)
    with pytest.raises(autolax.ArrayConditionError, match=r"is a traced array of shape \(\)"):
        autolax.jit(_load(path, "decided_once").f)(1.0)


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
    path = tmp_path / "appends.py"
    path.write_text(APPENDS)
    out = tmp_path / "appends_standalone.py"
    out.write_text(convert_source(APPENDS, str(path), Options(all=True, standalone=True)).text)
    original, standalone = _load(path, "appends"), _load(out, "appends_standalone")
    xs, h = np.ones((n, n), np.float32), np.float32(0.5)
    assert_close(original.states_of(xs, h), jax.jit(standalone.states_of)(xs, h))
    for name, args in (("stacked_states", (xs, h)), ("last_of", (xs,))):
        try:
            expected = getattr(original, name)(*args)
        except (ValueError, UnboundLocalError) as exc:  # jnp.stack([]); `y` never assigned
            with pytest.raises(type(exc)):
                jax.jit(getattr(standalone, name))(*args)
        else:
            assert_close(expected, jax.jit(getattr(standalone, name))(*args))


def test_an_argument_whose_default_is_none_is_not_checked():
    source = "def f(x: float, mask: 'Float[Array, \\'n\\']' = None):\n    return x if mask is None else x * mask\n"
    text = convert_source(source, "m.py", Options(all=True, standalone=True)).text
    assert "check_argument(x, 'f', 'x', 'float'" in text and "check_argument(mask" not in text
