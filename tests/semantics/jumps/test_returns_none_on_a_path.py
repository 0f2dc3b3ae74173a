"""A function that returns a value on one path and ``None`` on another (issue 43, item 9): an
iterative method that prints "did not converge" and falls off the end; a ``while True:``
loop whose only exit is a ``return``. The run that takes the ``None`` path raises autolax's
``returns-none`` error (after what Python prints before it); every other run returns
Python's value; an eager call returns Python's ``None``. Compared with Python on every path
(``paths.check_all_paths``, the ``%%autolax`` magic) and with ``--standalone`` output.

(Split from tests/test_issue43_items.py, tests/test_real_code_round_two.py.)"""

from __future__ import annotations

import inspect
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from paths import check_all_paths, is_autolax_error, run
from every_path import check_every_path, ip  # noqa: F401 - ip: the magic's shell fixture
from every_path import standalone_agrees, standalone_outcome


# ----------------------------------------------------------------------------- item 9: a `None` path beside values
def halves_until_small(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x, i
    print("did not converge")


def brackets_or_nones(x, limit):
    a = x
    while a < 2.0:
        if a > limit:
            return None, None
        a = a + 0.25
    return a - 0.25, a


@pytest.mark.parametrize("fn, args", [
    (halves_until_small, (jnp.float32(1.0),)),
    (brackets_or_nones, (jnp.float32(0.0), jnp.float32(5.0))),
])
def test_a_function_that_returns_none_on_other_runs_returns_python_s_value(fn, args, tmp_path, ip):
    # Before: StateMismatchError for every input ("the return value is None in the `if`
    # branch and ..."), also for the inputs that converge (item 9).
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)


@pytest.mark.parametrize("fn, args, none", [
    (halves_until_small, (jnp.float32(1e12),), "None"),
    (brackets_or_nones, (jnp.float32(0.0), jnp.float32(1.0)), "(None, None)"),
])
def test_the_run_that_takes_the_none_path_raises_autolax_s_error_naming_the_line(fn, args, none, tmp_path, ip):
    expected, got = check_every_path(fn, *args, tmp_path=tmp_path, ip=ip, refusal=True)
    assert expected.error is None and expected.value in (None, (None, None))
    err = got["autolax.jit"].error
    assert is_autolax_error(err), err
    assert f"'{fn.__name__}' returned {none} on this run" in str(err) and "Fix: return a value of one structure" in str(err)
    # it prints what Python printed before returning None, then raises
    assert got["autolax.jit"].printed == expected.printed


# ----------------------------------------------------------------------------- item 9
def halve_until_small(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x, i
    print("did not converge")


def halve_until_small_or_none(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x
    print("did not converge after", 30, "steps")
    return None


def halve_forever(x):
    while True:
        x = x * 0.5
        if x < 1e-3:
            return x


def positive_part(x):
    if x > 0:
        return x * 2.0
    print("not positive")


def newton_sqrt(a):
    x = a
    n = 0
    while abs(x * x - a) > 1e-4 * a:
        x = 0.5 * (x + a / x)
        n += 1
        if n > 3:
            print("too many steps:", n)
            return None
    return x


CONVERGING = [(halve_until_small, 1.0), (halve_until_small, 0.3), (halve_until_small_or_none, 5.0),
              (halve_forever, 1.0), (halve_forever, 1e20), (positive_part, 3.0), (newton_sqrt, 2.0)]
NOT_CONVERGING = [(halve_until_small, 1e12), (halve_until_small_or_none, 1e12), (positive_part, -1.0),
                  (newton_sqrt, 1e6)]


@pytest.mark.parametrize("fn, x", CONVERGING, ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_run_on_the_value_path_returns_pythons_value(fn, x, tmp_path):
    # 9ef3fc4: refused on every path with StateMismatchError ("the return value is float32[]
    # in the `if` branch and None in the `else` branch"), whatever the input.
    expected = check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path)
    assert expected.value is not None
    standalone_agrees(fn, jnp.float32(x))


@pytest.mark.parametrize("fn, x", NOT_CONVERGING, ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_run_on_the_none_path_raises_autolax_error_after_pythons_prints(fn, x, tmp_path):
    expected = run("python", fn, (jnp.float32(x),))
    assert expected.error is None and expected.value is None and expected.printed
    # Eager calls are Python's: None, and what Python prints.
    eager = run("convert eagerly", fn, (jnp.float32(x),))
    assert eager.error is None and eager.value is None and eager.printed == expected.printed
    # autolax.jit: autolax's error naming the function and the `if`'s line, after the prints.
    got = run("autolax.jit", fn, (jnp.float32(x),))
    assert isinstance(got.error, autolax.RuntimeCheckError), got
    message = str(got.error)
    lines, first = inspect.getsourcelines(fn)
    (line,) = [first + k for k, text in enumerate(lines) if text.strip().startswith("if ") and "return" in
               "".join(lines[k + 1:k + 3]) and "while" not in text]
    assert f"'{fn.__name__}' returned None on this run" in message
    assert f"{__file__}:{line}" in message
    assert "Fix: return a value of one structure on every path" in message
    assert got.printed == expected.printed
    # The other paths: the same error, inside JAX's runtime error (a failed check under jax.jit).
    check_all_paths(fn, jnp.float32(x), tmp_dir=tmp_path, refusal=True, paths=("jax.jit(convert)", "cli default"))
    for path in ("jax.jit(convert)", "cli default"):
        other = run(path, fn, (jnp.float32(x),), tmp_dir=tmp_path)
        assert "RuntimeCheckError: " in str(other.error) and "returned None on this run" in str(other.error)
        assert other.printed == expected.printed
    standalone = standalone_outcome(fn, jnp.float32(x))
    assert "RuntimeCheckError: " in str(standalone.error) and standalone.printed == expected.printed


def test_the_none_path_in_a_vmapped_call_raises_only_when_a_lane_takes_it():
    jitted = autolax.jit(halve_until_small)
    values, steps = jax.vmap(jitted)(jnp.array([1.0, 0.3, 4.0], jnp.float32))
    expected = [halve_until_small(jnp.float32(v)) for v in (1.0, 0.3, 4.0)]
    np.testing.assert_allclose(values, [float(v) for v, _ in expected])
    assert steps.tolist() == [i for _, i in expected]
    with pytest.raises(autolax.RuntimeCheckError, match="returned None on this run"):
        jax.block_until_ready(jax.vmap(jitted)(jnp.array([1.0, 1e12], jnp.float32)))


def halve_until_tiny(x):
    for i in range(300):
        x = x * 0.5
        if x < 1e-30:
            return x, i
    print("did not converge")


def test_the_none_path_stages_the_loop_and_does_not_grow_with_the_trip_count():
    short = autolax.trace_check(autolax.jit(halve_until_small), jnp.float32(1.0))
    long = autolax.trace_check(autolax.jit(halve_until_tiny), jnp.float32(1.0))
    for report in (short, long):
        assert report.rows[0].became.startswith("lax.while_loop") and report.primitives.get("while") == 1
        assert report.primitives.get("cond") == 1  # the print of the None path runs only when taken
    assert short.n_equations == long.n_equations


def mixed_returns_in_a_loop(x):
    for i in range(30):
        x = x * 0.5
        if x < 1e-3:
            return x, i
        if x > 100.0:
            return None
    return x, 30


def test_a_none_joined_with_a_path_that_has_not_returned_is_still_refused():
    # The branch's None here comes from an inner `if` whose other side has not returned yet:
    # not the value every run of that branch returns. Still the clear StateMismatchError.
    with pytest.raises(autolax.StateMismatchError, match="the return value is"):
        autolax.jit(mixed_returns_in_a_loop)(jnp.float32(1.0))
    assert mixed_returns_in_a_loop(1e6) is None  # (Python's None, for the record)


def test_the_none_path_in_a_magic_cell():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    try:
        cell = "%%autolax\n" + textwrap.dedent(inspect.getsource(halve_until_small))
        shell.run_cell(cell).raise_error()
        step = shell.user_ns["halve_until_small"]
        value, i = step(1.0)
        assert (float(value), int(i)) == (float(halve_until_small(jnp.float32(1.0))[0]), 9)
        with capture_output() as captured:
            result = shell.run_cell("halve_until_small(1e12)")
        assert isinstance(result.error_in_exec, autolax.RuntimeCheckError)
        assert "'halve_until_small' returned None on this run" in str(result.error_in_exec)
        assert captured.stdout.startswith("did not converge")
    finally:
        shell.extension_manager.unload_extension("autolax")
        shell.reset()
