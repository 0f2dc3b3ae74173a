"""``sys.exit()`` (and ``exit()``, ``quit()``, ``raise SystemExit``) in a staged branch or loop
body, written there or in a converted helper called there, and ``try: ... except E: <handler>``
around a run-time check (``math.sqrt`` of a traced number) whose handler ends by raising:
Python's exception when the program takes that path, after what it printed on the way, and
the function's value when it does not -- through every path (``autolax.jit``,
``jax.jit(autolax.convert(f))``, ``convert`` called eagerly, the CLI's default and
``--standalone`` outputs, ``%%autolax``)."""

from __future__ import annotations

import contextlib
import inspect
import sys
import textwrap
from math import sqrt

import jax
import jax.numpy as jnp

import autolax
import pytest

from paths import _capture, agrees, run, same_file_callees, standalone_module
from every_path import EVERY_PATH, ip  # noqa: F401 - the magic's shell fixture
from every_path import outcome as path_outcome


def outcome(path, fn, args, tmp_path, ip):  # noqa: F811
    if path != "standalone":
        return path_outcome(path, fn, args, tmp_path, ip)
    # ``--standalone`` output of the file holding ``fn`` and the helpers it calls, converted
    # with it (a helper of another file runs as written there, its print while tracing)
    source = "\n\n".join(textwrap.dedent(inspect.getsource(g)) for g in same_file_callees(fn))
    filename = f"{tmp_path}/standalone_{fn.__name__}.py"
    with open(filename, "w") as f:
        f.write(source)
    namespace = standalone_module(source, filename, dict(fn.__globals__), all=True)
    return _capture(lambda: jax.jit(namespace[fn.__name__])(*args))


# IPython binds ``exit`` and ``quit`` to its own objects (they ask the shell to end, raising
# nothing): a cell calling them means something else than the module does.
IPYTHON_EXITS = ("exits_by_the_builtin", "quits")


def check_every_path(fn, *args, tmp_path, ip, refusal=False):  # noqa: F811
    expected = run("python", fn, args)
    problems, got = [], {}
    for path in EVERY_PATH:
        if path == "magic" and fn.__name__ in IPYTHON_EXITS:
            continue
        got[path] = outcome(path, fn, args, tmp_path, ip)
        why = agrees(expected, got[path], path, allow_refusal=refusal)
        if why:
            problems.append(f"{path}: {why}")
    assert not problems, f"{fn.__name__}{args}:\n  " + "\n  ".join(problems)
    return expected, got


def err(string):
    # The textbook's error.err (tests/corpus2): print, then end the program.
    print(string)
    sys.exit()


def exits_with(code):
    print("exiting with", code)
    sys.exit(code)


def solve(x):
    # a helper whose staged branch exits (roots.brent's shape)
    if x < 0.0:
        err("Root is not bracketed")
    return x * 2.0


def exits_in_a_branch(x):
    print("start")
    if x > 1.0:
        err("too big")
    return x + 1.0


def exits_in_a_helper_s_branch(x):
    print("start")
    y = solve(x - 1.0)
    return y + 1.0


def exits_with_a_code(x):
    if x > 1.0:
        exits_with(3)
    return x


def exits_with_a_message(x):
    if x > 1.0:
        sys.exit("x is too big")
    return x


def raises_system_exit(x):
    if x > 1.0:
        raise SystemExit(2)
    return x


def exits_by_the_builtin(x):
    if x > 1.0:
        print("leaving")
        exit(4)
    return x


def quits(x):
    if x > 1.0:
        quit()
    return x


def exits_in_a_loop(xs):
    total = 0.0
    for i in range(xs.shape[0]):
        if xs[i] < 0.0:
            err("negative item")
        total = total + xs[i]
    return total


def exits_in_a_while_loop(x):
    n = 0
    while x > 1.0:
        x = x / 2.0
        n += 1
        if n > 3:
            err("too many halvings")
    return x


CASES = [
    (exits_in_a_branch, (jnp.float32(0.5),)),
    (exits_in_a_branch, (jnp.float32(2.0),)),
    (exits_in_a_helper_s_branch, (jnp.float32(3.0),)),
    (exits_in_a_helper_s_branch, (jnp.float32(0.5),)),
    (exits_with_a_code, (jnp.float32(0.5),)),
    (exits_with_a_code, (jnp.float32(2.0),)),
    (exits_with_a_message, (jnp.float32(0.5),)),
    (exits_with_a_message, (jnp.float32(2.0),)),
    (raises_system_exit, (jnp.float32(0.5),)),
    (raises_system_exit, (jnp.float32(2.0),)),
    (exits_by_the_builtin, (jnp.float32(0.5),)),
    (exits_by_the_builtin, (jnp.float32(2.0),)),
    (quits, (jnp.float32(0.5),)),
    (quits, (jnp.float32(2.0),)),
    (exits_in_a_loop, (jnp.array([1.0, 2.0, 3.0]),)),
    (exits_in_a_loop, (jnp.array([1.0, -2.0, 3.0]),)),
    (exits_in_a_while_loop, (jnp.float32(4.0),)),
    (exits_in_a_while_loop, (jnp.float32(100.0),)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_sys_exit_on_a_staged_path_is_python_s_system_exit(fn, args, tmp_path, ip):  # noqa: F811
    expected, got = check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)
    for path, outcome in got.items():
        assert outcome.printed == expected.printed or outcome.error is not None and expected.printed.startswith(
            outcome.printed), path
    if isinstance(expected.error, SystemExit):
        for path in ("autolax.jit", "convert eagerly", "magic"):
            if path not in got:
                continue
            assert type(got[path].error) is SystemExit, path
            assert got[path].error.code == expected.error.code, path
            assert got[path].printed == expected.printed, path


def catches_the_helper_s_exit(x):
    try:
        y = solve(x)
    except SystemExit:
        y = 0.0
    return y


def catches_everything_around_the_helper(x):
    try:
        y = solve(x)
    except:  # noqa: E722 - a bare except catches SystemExit too
        y = 0.0
    return y


@pytest.mark.parametrize("fn", [catches_the_helper_s_exit, catches_everything_around_the_helper])
def test_a_helper_s_exit_that_the_caller_s_try_catches_is_refused(fn):
    # Python runs the caller's handler only on the runs that take the helper's branch
    for call in (autolax.jit(fn), jax.jit(autolax.convert(fn))):
        with pytest.raises(autolax.StagedEffectError, match=r"(?s)raised SystemExit.*if x < 0\.0:"):
            call(jnp.float32(-1.0))
    assert autolax.convert(fn)(jnp.float32(-1.0)) == 0.0


# ----------------------------------------------------------------------------- a handler around a run-time check
def choleski(a):
    # tests/corpus2/linsys.py's choleski: the handler prints and exits
    n = len(a)
    for k in range(n):
        try:
            a = a.at[k, k].set(sqrt(a[k, k] - jnp.dot(a[k, 0:k], a[k, 0:k])))
        except ValueError:
            err("Matrix is not positive definite")
        for i in range(k + 1, n):
            a = a.at[i, k].set((a[i, k] - jnp.dot(a[i, 0:k], a[k, 0:k])) / a[k, k])
    return a


def root_or_raise(x):
    print("root of", x)
    try:
        r = sqrt(x - 1.0)
        print("got", r)
    except ValueError:
        print("no real root")
        raise ArithmeticError("x must be at least 1")
    else:
        print("no error")
    print("after")
    return r * 2.0


def root_in_a_branch(x):
    y = x
    if x > 0.0:
        try:
            y = sqrt(x - 2.0)
        except ValueError:
            sys.exit(5)
    return y


def first_handler_that_matches(x):
    try:
        r = sqrt(x)
    except ZeroDivisionError:
        r = 0.0
    except ValueError:
        exits_with(7)
    return r


def two_roots(x, y):
    try:
        a = sqrt(x)
        b = sqrt(y)
    except ValueError:
        err("a negative number")
    return a + b


def nested_tries(x):
    try:
        try:
            r = sqrt(x)
        except ZeroDivisionError:
            sys.exit("not this one")
    except ValueError:
        exits_with(9)
    return r


def index_or_exit(x):
    items = [1.0, 2.0, 3.0]
    try:
        i = items.index(x)
    except ValueError:
        err("not found")
    return i


def range_or_exit(x, step):
    total = x
    try:
        for i in range(0, 4, step):
            total = total + i
    except ValueError:
        err("zero step")
    return total


SPD = jnp.array([[4.0, -2.0, 2.0], [-2.0, 2.0, -4.0], [2.0, -4.0, 11.0]])
NOT_SPD = jnp.array([[4.0, -2.0, 2.0], [-2.0, 0.5, -4.0], [2.0, -4.0, 11.0]])

HANDLED = [
    (choleski, (SPD,)),
    (choleski, (NOT_SPD,)),
    (root_or_raise, (jnp.float32(5.0),)),
    (root_or_raise, (jnp.float32(0.5),)),
    (root_in_a_branch, (jnp.float32(6.0),)),
    (root_in_a_branch, (jnp.float32(1.0),)),
    (root_in_a_branch, (jnp.float32(-1.0),)),
    (first_handler_that_matches, (jnp.float32(4.0),)),
    (first_handler_that_matches, (jnp.float32(-4.0),)),
    (two_roots, (jnp.float32(4.0), jnp.float32(9.0))),
    (two_roots, (jnp.float32(-4.0), jnp.float32(-9.0))),
    (two_roots, (jnp.float32(4.0), jnp.float32(-9.0))),
    (nested_tries, (jnp.float32(4.0),)),
    (nested_tries, (jnp.float32(-4.0),)),
    (index_or_exit, (jnp.float32(2.0),)),
    (index_or_exit, (jnp.float32(5.0),)),
    (range_or_exit, (jnp.float32(1.0), jnp.int32(1))),
    (range_or_exit, (jnp.float32(1.0), jnp.int32(0))),
]


@pytest.mark.parametrize("fn, args", HANDLED, ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_a_handler_that_raises_runs_when_the_check_it_catches_fails(fn, args, tmp_path, ip):  # noqa: F811
    expected, got = check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)
    for path, outcome in got.items():
        assert outcome.printed == expected.printed or outcome.error is not None and expected.printed.startswith(
            outcome.printed), path
    if expected.error is not None:
        for path in ("autolax.jit", "convert eagerly", "magic"):
            assert type(got[path].error) is type(expected.error), path
            assert got[path].error.args == expected.error.args, path
            assert got[path].printed == expected.printed, path


def recovers(x):
    try:
        r = sqrt(x)
    except ValueError:
        r = 0.0
    return r


def handler_calls_a_helper_that_returns(x):
    try:
        r = sqrt(x)
    except ValueError:
        print("negative")
    return x


def note(string):
    print(string)


def handler_calls_a_helper_that_returns_too(x):
    try:
        r = sqrt(x)
    except ValueError:
        note("negative")
    return x


def with_a_finally(x):
    try:
        r = sqrt(x)
    except ValueError:
        err("negative")
    finally:
        print("done")
    return r


@pytest.mark.parametrize("fn", [recovers, handler_calls_a_helper_that_returns, handler_calls_a_helper_that_returns_too,
                                with_a_finally])
def test_a_handler_that_may_recover_is_still_refused(fn):
    # Whether the variables after the `try` are the handler's would depend on data
    for call in (autolax.jit(fn), jax.jit(autolax.convert(fn))):
        with pytest.raises(autolax.StagedEffectError, match=r"`math\.sqrt\(\.\.\.\)` under a traced condition .* "
                                                            r"inside a `try` that catches it"):
            call(jnp.float32(-1.0))


def test_only_a_handler_that_may_end_by_raising_is_written_as_a_function():
    assert "def handler():" in autolax.to_source(choleski)
    assert "handlers=((ValueError, handler),)" in autolax.to_source(handler_calls_a_helper_that_returns_too)
    for fn in (recovers, handler_calls_a_helper_that_returns, with_a_finally):
        assert "handlers=" not in autolax.to_source(fn), fn.__name__


# Python runs a `finally` or a `with` block's exit between the check and the handler: the
# handler is not staged there (refused, or Python's answer), never printed out of order.
def cleanup_between(x):
    try:
        try:
            r = sqrt(x)
        finally:
            print("cleanup")
    except ValueError:
        err("bad")
    return r


def suppressed_between(x):
    r = x
    try:
        with contextlib.suppress(ValueError):
            r = sqrt(x)
    except ValueError:
        err("bad")
    return r


def root_with_cleanup(x):
    try:
        return sqrt(x)
    finally:
        print("cleanup")


def helper_with_cleanup_between(x):
    try:
        r = root_with_cleanup(x)
    except ValueError:
        err("bad")
    return r


def root_of_a_helper(x):
    return sqrt(x)


def helper_between(x):
    try:
        r = root_of_a_helper(x)
    except ValueError:
        err("bad")
    return r


@pytest.mark.parametrize("fn", [cleanup_between, suppressed_between, helper_with_cleanup_between, helper_between])
@pytest.mark.parametrize("x", [4.0, -4.0])
def test_a_handler_is_not_staged_past_a_finally_a_with_or_a_helper(fn, x, tmp_path, ip):  # noqa: F811
    check_every_path(fn, jnp.float32(x), tmp_path=tmp_path, ip=ip, refusal=True)
    assert "handlers=" not in autolax.to_source(fn) or fn in (helper_with_cleanup_between, helper_between)
