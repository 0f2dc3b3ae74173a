"""Branch functions take only what they use (issue 42, item 4): an ``if``'s ``if_true`` /
``if_false`` take a carried name as a parameter only where one of them assigns it and may read
its value from before the ``if``; the rest they read from the enclosing function, as
Python's closures do. Each program is run through every path -- ``autolax.jit``,
``jax.jit(autolax.convert(f))``, ``convert`` called eagerly, the CLI's default output,
``--standalone`` output and the ``%%autolax`` magic -- and compared with Python; the emitted
signatures are checked as text."""

from __future__ import annotations

import ast
import inspect
import textwrap

import jax.numpy as jnp
import pytest

import autolax
from autolax.cli import Options, convert_source
from every_path import check_every_path, ip  # noqa: F401 (ip: the magic's shell fixture)


# ----------------------------------------------------------------------------- the programs
def each_assigns_what_the_other_keeps(x, n):
    a = 0.0
    b = 1.0
    c = 2.0
    if x > 0:
        a = x + 1
    else:
        b = x - 1
    for i in range(n):
        if a > 3:
            break
        a = a + i
    return a + b + c


def clamps_a_parameter(x, lo=0.0):
    if x < lo:
        x = lo
    return x


def bound_on_both_sides_only(x):
    if x > 0:
        y = x * 2
    else:
        y = -x
    return y


def bound_on_one_side(x):
    if x > 0:
        y = x * 2
    return y


def one_path_of_a_branch_assigns(x, y):
    a = y
    b = y * 2
    if x > 0:
        if x > 1:
            a = x * 3
    else:
        b = a + x
    return a, b


def reads_then_assigns(x, y):
    total = y
    other = y + 1
    if x > 0:
        total = total * x
    else:
        other = x
    return total, other


def deletes_in_a_branch(x):
    a = x
    b = x + 1
    if x > 0:
        del a
        a = x * 2
    else:
        b = x * 3
    return a + b


def deletes_what_is_read_later(x):
    a = x
    b = x + 1
    if x > 0:
        del a
    else:
        b = x * 3
    return a + b


def nested_function_and_comprehension(x):
    a = x
    b = x + 1
    if x > 0:
        scale = lambda t: t * b  # noqa: E731 - the closure under test
        a = scale(a)
        c = [a * i for i in range(3)]
        a = c[2]
    else:
        b = sum([b for _ in range(2)])
    return a, b


def closure_defined_before(x):
    a = x
    b = x * 2
    twice = lambda: a * 2  # noqa: E731 - reads `a` when called
    if x > 0:
        a = x + 1
    else:
        b = x - 1
    return twice() + b


def assigns_a_nonlocal(x):
    s = x
    t = x + 2

    def inner():
        nonlocal s
        if x > 0:
            s = t * 2
        else:
            s = t

    inner()
    return s


def reads_a_nonlocal(x):
    s = x
    t = x + 2

    def inner():
        nonlocal s
        a = t
        b = s
        if x > 0:
            a = s * 2
        else:
            b = t
        s = a + b

    inner()
    return s


def branch_in_a_loop(x, n):
    lo = x
    hi = x + 10.0
    for i in range(n):
        mid = (lo + hi) / 2
        if mid * mid > 30.0:
            hi = mid
        else:
            lo = mid
    return lo, hi


def first_big(x, n):
    k = 0
    while k < n:
        if x * k > 3:
            found = k * x
            break
        k = k + 1
    return found


def elif_chain(x, y):
    a = y
    b = y + 1
    if x < 0:
        a = -x
    elif x < 1:
        b = a * x
    elif x < 2:
        a = b
    else:
        a = x
        b = x
    return a, b


def early_returns(x, y):
    if x > 2:
        return y * 2
    s = y
    if x > 1:
        s = s + x
    elif x > 0:
        return s - x
    return s


def try_in_a_branch(x, y):
    a = y
    b = y * 2
    if x > 0:
        try:
            a = x / 2
        except ZeroDivisionError:
            a = 0.0
    else:
        b = x
    return a + b


def if_in_a_try(x, y):
    a = y
    b = y + 1
    try:
        if x > 0:
            a = x * 2
        else:
            b = x
    except ValueError:
        a = -1.0
    return a + b


F32 = jnp.float32


@pytest.mark.parametrize(
    "fn, args",
    [
        (each_assigns_what_the_other_keeps, (F32(1.0), 4)),
        (each_assigns_what_the_other_keeps, (F32(-1.0), 4)),
        (clamps_a_parameter, (F32(-1.0),)),
        (clamps_a_parameter, (F32(2.0),)),
        (bound_on_both_sides_only, (F32(-3.0),)),
        (one_path_of_a_branch_assigns, (F32(0.5), F32(2.0))),
        (one_path_of_a_branch_assigns, (F32(1.5), F32(2.0))),
        (one_path_of_a_branch_assigns, (F32(-1.5), F32(2.0))),
        (reads_then_assigns, (F32(3.0), F32(2.0))),
        (reads_then_assigns, (F32(-3.0), F32(2.0))),
        (deletes_in_a_branch, (F32(1.0),)),
        (deletes_in_a_branch, (F32(-1.0),)),
        (nested_function_and_comprehension, (F32(2.0),)),
        (nested_function_and_comprehension, (F32(-2.0),)),
        (closure_defined_before, (F32(2.0),)),
        (closure_defined_before, (F32(-2.0),)),
        (reads_a_nonlocal, (F32(1.0),)),
        (reads_a_nonlocal, (F32(-1.0),)),
        (branch_in_a_loop, (F32(1.0), 6)),
        (elif_chain, (F32(-1.0), F32(3.0))),
        (elif_chain, (F32(0.5), F32(3.0))),
        (elif_chain, (F32(1.5), F32(3.0))),
        (elif_chain, (F32(2.5), F32(3.0))),
        (early_returns, (F32(3.0), F32(1.0))),
        (early_returns, (F32(1.5), F32(1.0))),
        (early_returns, (F32(0.5), F32(1.0))),
        (early_returns, (F32(-0.5), F32(1.0))),
        (try_in_a_branch, (F32(2.0), F32(1.0))),
        (try_in_a_branch, (F32(-2.0), F32(1.0))),
        (if_in_a_try, (F32(2.0), F32(1.0))),
        (if_in_a_try, (F32(-2.0), F32(1.0))),
    ],
)
def test_every_path_returns_what_python_returns(fn, args, tmp_path, ip):
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip)


@pytest.mark.parametrize(
    "fn, args",
    [
        # Python: UnboundLocalError where the branch is not taken; autolax names `y`.
        (bound_on_one_side, (F32(-1.0),)),
        (bound_on_one_side, (F32(1.0),)),
        # Python: UnboundLocalError where the branch that deletes `a` is taken.
        (deletes_what_is_read_later, (F32(1.0),)),
        (deletes_what_is_read_later, (F32(-1.0),)),
        # `found` is bound in a branch inside a loop, or never (Python: UnboundLocalError).
        (first_big, (F32(2.0), 5)),
        (first_big, (F32(0.1), 5)),
        # A staged branch assigning a `nonlocal` name is refused (StagedEffectError).
        (assigns_a_nonlocal, (F32(1.0),)),
        (assigns_a_nonlocal, (F32(-1.0),)),
    ],
)
def test_python_s_outcome_or_autolax_s_error(fn, args, tmp_path, ip):
    check_every_path(fn, *args, tmp_path=tmp_path, ip=ip, refusal=True)


def test_unbound_on_one_side_still_names_the_variable():
    # `if_false` gives back the stand-in it reads from the enclosing function: the run that
    # takes it raises autolax's UnboundLocalError, naming `y`.
    with pytest.raises(autolax.AutolaxError, match="'y'"):
        autolax.jit(bound_on_one_side)(F32(-1.0))


# ----------------------------------------------------------------------------- emitted text
def emitted(fn) -> str:
    return convert_source(textwrap.dedent(inspect.getsource(fn)), "m.py", Options(all=True)).text


def branch_params(out: str) -> list:
    """The parameters of each branch of the ``ops.cond`` / ``ops.cases`` calls in ``out``,
    in order: a lambda's (a branch written inline) or its function's."""
    tree = ast.parse(out)
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    found = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("cond", "cases")):
            continue
        if call.func.attr == "cond":
            branches = call.args[1:3]
        else:
            branches = [arm.elts[1] for arm in call.args[0].elts] + [call.args[1]]
        for b in branches:
            fn = b if isinstance(b, ast.Lambda) else defs[b.id]
            found.append([a.arg for a in fn.args.args])
    return found


def test_a_branch_takes_no_name_it_does_not_read_before_assigning():
    out = emitted(each_assigns_what_the_other_keeps)
    # Each branch assigns what the other gives back unchanged: neither takes anything.
    assert "a, b = ops.cond(x > 0, lambda: (x + 1, b), lambda: (a, x - 1), at='m.py:" in out, out
    assert branch_params(out) == [[], []], out


def test_a_branch_takes_a_name_it_reads_before_assigning_or_assigns_on_one_path():
    out = emitted(reads_then_assigns)
    assert branch_params(out) == [["total"], ["total"]], out
    out = emitted(one_path_of_a_branch_assigns)
    # `a` may keep its value in `if_true` (assigned on one path); `b` is read by nobody first
    # (the inner `if` of `if_true`, found second, takes nothing: its branches only read `a`)
    assert branch_params(out) == [["a"], ["a"], [], []], out


def test_an_elif_chain_stays_one_cases_call_whose_arms_take_the_same_names():
    out = emitted(elif_chain)
    assert out.count("ops.cases(") == 1 and "ops.cond(" not in out, out
    params = branch_params(out)
    assert len(params) == 4 and all(p == params[0] for p in params), params
