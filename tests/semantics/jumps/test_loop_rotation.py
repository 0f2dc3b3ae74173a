"""Loop rotation: an exit that opens a loop body, whatever its test reads, is tested in the
loop's predicate on the state each iteration starts from (``autolax.frontend.passes.loop_exits``).

A hand-written ``lax.while_loop`` tests ``(k < n) & (abs(x) <= limit)`` on the carry before
each iteration: exactly the state Python's ``if`` sees. The staged predicate also runs once
more than Python's test (on the state after the last iteration): only a test that cannot
tell (``plan.evaluate_anyway``) runs there; another runs under a ``lax.cond``.

Every program is compared with Python on every path (``paths.check_all_paths``), on inputs
where the exit is taken at the first, a middle and no iteration, and where the loop runs zero
times; the jaxpr shows the predicate form.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.runtime import compat
from paths import check_all_paths, standalone_module


def _loops(fn, *args):
    """The staged while loops of ``fn``'s jaxpr (inside the derivative rule's call too)."""
    jaxpr = jax.make_jaxpr(autolax.convert(fn))(*args).jaxpr
    out, todo = [], [jaxpr]
    while todo:
        j = todo.pop()
        for e in j.eqns:
            if e.primitive.name == "while":
                out.append(e)
            else:
                todo.extend(compat.jaxprs_in_params(e.params))
    return out


def _primitives(jaxpr):
    names = []
    for e in jaxpr.eqns:
        names.append(e.primitive.name)
        for sub in compat.jaxprs_in_params(e.params):
            names += _primitives(sub)
    return names


# ----------------------------------------------------------------------------- escape time
def escape_time(x, z, limit, n):
    for k in range(n):
        if jnp.abs(x) > limit:
            return k, x
        x = x * x * 0.5 + z
    return -1, x


ESCAPE_INPUTS = [(3.0, 0.3, 2.0, 50), (0.1, 0.9, 4.0, 50), (0.1, 0.1, 4.0, 50), (0.1, 0.9, 4.0, 0), (3.0, 0.3, 2.0, 0)]


@pytest.mark.parametrize("x, z, limit, n", ESCAPE_INPUTS)
def test_escape_time_with_the_exit_at_the_top_matches_python(x, z, limit, n, tmp_path):
    # Exits at the first iteration, a later one, never; and loops that run zero times.
    check_all_paths(escape_time, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)


@pytest.mark.parametrize("n", [0, 1, 7, 50])
def test_escape_time_over_a_traced_trip_count(n, tmp_path):
    check_all_paths(escape_time, np.float32(0.1), np.float32(0.9), np.float32(4.0), n, tmp_dir=tmp_path,
                    paths=("autolax.jit", "jax.jit(convert)"))


def test_the_test_is_the_predicate_and_the_body_selects_nothing():
    source = autolax.to_source(escape_time)
    assert "def loop_test(k, x):\n        return ops.not_(jnp.abs(x) > limit)" in source
    assert "test: k')" in source
    (loop,) = _loops(escape_time, 0.1, 0.9, 4.0, 50)
    body = _primitives(loop.params["body_jaxpr"].jaxpr)
    assert "select_n" not in body and "abs" not in body  # no flag, no returned value, no test
    assert sorted(body) == ["add", "add", "mul", "mul"]  # the counter and x * x * 0.5 + z
    assert {"abs", "gt", "lt"} <= set(_primitives(loop.params["cond_jaxpr"].jaxpr))
    assert len(loop.outvars) == 2  # the counter and x


def escape_time_twin(x, z, limit, n):
    """The loop a JAX user writes by hand."""
    def cond(c):
        k, x = c
        return (k < n) & (jnp.abs(x) <= limit)

    def body(c):
        k, x = c
        return k + 1, x * x * 0.5 + z

    k, x = jax.lax.while_loop(cond, body, (0, x))
    return jnp.where(k < n, k, -1), x


def test_escape_time_has_the_equations_of_the_hand_written_loop():
    args = (np.float32(0.1), np.float32(0.9), np.float32(4.0), 50)
    (loop,) = _loops(escape_time, *args)
    twin = jax.make_jaxpr(escape_time_twin, static_argnums=3)(*args).jaxpr
    (twin_loop,) = [e for e in twin.eqns if e.primitive.name == "while"]
    assert len(loop.params["body_jaxpr"].jaxpr.eqns) <= len(twin_loop.params["body_jaxpr"].jaxpr.eqns)
    assert len(loop.params["cond_jaxpr"].jaxpr.eqns) <= len(twin_loop.params["cond_jaxpr"].jaxpr.eqns) + 2


def test_gradient_through_the_rotated_loop_matches_the_unrolled_program():
    # A fixed trip count carrying floats: the while loop's derivative is the masked scan.
    jaxpr = jax.make_jaxpr(autolax.convert(escape_time), static_argnums=3)(0.1, 0.9, 4.0, 50).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns if e.primitive.name.startswith("custom")] == ["custom_jvp_call"]
    for z in (0.3, 0.9):
        converted = jax.grad(lambda z: autolax.convert(escape_time)(0.1, z, 4.0, 20)[1])
        unrolled = jax.grad(lambda z: escape_time(0.1, z, 4.0, 20)[1])
        np.testing.assert_allclose(converted(z), unrolled(z), rtol=1e-5)
    batch = jnp.array([0.3, 0.9, 0.1])
    got = jax.vmap(jax.grad(lambda z: autolax.convert(escape_time)(0.1, z, 4.0, 20)[1]))(batch)
    np.testing.assert_allclose(got, [unrolled(z) for z in batch], rtol=1e-5)


def test_vmap_lanes_leave_at_different_iterations():
    xs = jnp.array([3.0, 0.1, 0.1, -0.5], jnp.float32)
    zs = jnp.array([0.3, 0.9, 0.1, 0.7], jnp.float32)
    k, x = jax.vmap(lambda x, z: autolax.convert(escape_time)(x, z, 4.0, 50))(xs, zs)
    want = [escape_time(np.float32(a), np.float32(b), np.float32(4.0), 50) for a, b in zip(xs, zs)]
    assert k.tolist() == [w[0] for w in want] and k.tolist()[:3] == [1, 6, -1]
    np.testing.assert_allclose(x, [w[1] for w in want], rtol=1e-6)


# ----------------------------------------------------------------------------- tests that could tell
def escape_by_ratio(x, z, limit, n):
    for k in range(n):
        if 1.0 / x < limit:  # divides: Python never tests the state after the last iteration
            return k, x
        x = x * x * 0.5 + z
    return -1, x


@pytest.mark.parametrize("x, z, limit, n", [(3.0, 0.3, 0.5, 20), (0.5, 0.9, 0.25, 20), (0.5, 0.1, 0.25, 20),
                                            (0.5, 0.1, 0.25, 0)])
def test_a_test_that_divides_runs_only_where_python_runs_it(x, z, limit, n, tmp_path):
    check_all_paths(escape_by_ratio, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)
    (loop,) = _loops(escape_by_ratio, np.float32(x), np.float32(z), np.float32(limit), 20)
    predicate = _primitives(loop.params["cond_jaxpr"].jaxpr)
    assert "cond" in predicate and "div" in predicate  # the test under a lax.cond on `k < n`


def shrink_until(xs, t):
    total = 0.0
    for v in xs:
        if v * total > t:  # reads the item and what the body changes
            break
        total += v
    return total, v


@pytest.mark.parametrize("t", [-1.0, 2.0, 5.0, 100.0])
def test_a_test_reading_the_item_and_the_carry(t, tmp_path):
    check_all_paths(shrink_until, np.array([1.0, 2.0, 3.0, 4.0], np.float32), t, tmp_dir=tmp_path)
    assert "test: v" in autolax.to_source(shrink_until)


def test_a_loop_over_no_items_leaves_the_target_unbound(tmp_path):
    check_all_paths(shrink_until, np.zeros(0, np.float32), 1.0, tmp_dir=tmp_path)


def noisy_test(x):
    print("test", x)
    return jnp.abs(x)


def escape_printing(x, z, limit, n):
    for k in range(n):
        if noisy_test(x) > limit:  # prints: tested in the body, once per iteration Python runs
            print("stop at", k)
            return k, x
        x = x * x * 0.5 + z
        print("x", x)
    return -1, x


@pytest.mark.parametrize("x, z, limit, n", [(3.0, 0.3, 2.0, 5), (0.1, 0.9, 4.0, 9), (0.1, 0.1, 4.0, 3),
                                            (0.1, 0.1, 4.0, 0)])
def test_a_test_or_an_exit_that_prints(x, z, limit, n, tmp_path):
    check_all_paths(escape_printing, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)


def escape_printing_after(x, z, limit, n):
    for k in range(n):
        if jnp.abs(x) > limit:
            print("stop at", k, x)
            return k, x
        x = x * x * 0.5 + z
    return -1, x


@pytest.mark.parametrize("x, z, limit, n", [(3.0, 0.3, 2.0, 5), (0.1, 0.9, 4.0, 9), (0.1, 0.1, 4.0, 3)])
def test_the_exit_prints_once_after_a_rotated_loop(x, z, limit, n, tmp_path):
    check_all_paths(escape_printing_after, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)
    assert "test: k" in autolax.to_source(escape_printing_after)


def escape_or_raise(x, z, limit, n):
    for k in range(n):
        if jnp.abs(x) > limit:
            return k, x
        if x < -1.0:
            raise ValueError("went negative")
        x = x * x * 0.5 + z
    return -1, x


@pytest.mark.parametrize("x, z, limit, n", [(3.0, 0.3, 2.0, 5), (0.1, 0.9, 4.0, 9), (0.1, -1.5, 4.0, 9),
                                            (-2.0, 0.3, 4.0, 9), (-2.0, 0.3, 4.0, 0)])
def test_a_body_that_raises(x, z, limit, n, tmp_path):
    check_all_paths(escape_or_raise, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)


def search_with_else(x, z, limit, n):
    for k in range(n):
        if jnp.abs(x) > limit:
            found = k
            break
        x = x * x * 0.5 + z
    else:
        found = -k
    return found, x, k


@pytest.mark.parametrize("x, z, limit, n", [(3.0, 0.3, 2.0, 5), (0.1, 0.9, 4.0, 9), (0.1, 0.1, 4.0, 3),
                                            (0.1, 0.1, 4.0, 0)])
def test_for_else_and_the_loop_variable(x, z, limit, n, tmp_path):
    # n == 0: `k` is unbound after the loop, as in Python.
    check_all_paths(search_with_else, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)


def first_bound_in_the_body(x, limit, n):
    for k in range(n):
        if x > limit:
            return y  # noqa: F821 - unbound when the first test already exits
        y = x
        x = x * 2.0
    return -1.0


@pytest.mark.parametrize("x, n", [(3.0, 5), (0.5, 5), (0.5, 1), (0.5, 0)])
def test_a_value_the_body_binds_is_unbound_where_the_first_test_exits(x, n, tmp_path):
    check_all_paths(first_bound_in_the_body, np.float32(x), np.float32(2.0), n, tmp_dir=tmp_path, refusal=True)
    check_all_paths(first_bound_in_the_body, np.float32(x), np.float32(2.0), n, tmp_dir=tmp_path,
                    paths=("autolax.jit", "jax.jit(convert)"), refusal=True)


def read_after_the_loop(xs, limit):
    for i in range(3):
        if xs[i] > limit:
            break
        y = xs[i]
    return y  # noqa: F821 - unbound when the first test already stops the loop


@pytest.mark.parametrize("limit", [-1.0, 0.5, 5.0])
def test_a_value_the_body_binds_is_unbound_after_a_loop_stopped_at_its_first_test(limit, tmp_path):
    # At 9646ae6 autolax.jit returned 0.0 for limit = -1.0, where Python raises UnboundLocalError.
    check_all_paths(read_after_the_loop, np.arange(3.0, dtype=np.float32), np.float32(limit), tmp_dir=tmp_path,
                    refusal=True)


# ----------------------------------------------------------------------------- while
def while_escape(x, z, limit, n):
    k = 0
    while k < n:
        if jnp.abs(x) > limit:
            return k, x
        x = x * x * 0.5 + z
        k += 1
    return -1, x


@pytest.mark.parametrize("x, z, limit, n", ESCAPE_INPUTS)
def test_while_whose_body_opens_with_an_exit(x, z, limit, n, tmp_path):
    check_all_paths(while_escape, np.float32(x), np.float32(z), np.float32(limit), n, tmp_dir=tmp_path)


def test_the_while_loop_tests_the_exit_in_its_predicate():
    source = autolax.to_source(while_escape)
    assert "exit_" not in source and "do_return" not in source
    (loop,) = _loops(while_escape, 0.1, 0.9, 4.0, 50)
    assert "select_n" not in _primitives(loop.params["body_jaxpr"].jaxpr)
    assert "abs" in _primitives(loop.params["cond_jaxpr"].jaxpr)
    assert len(loop.outvars) == 2


def exit_ending_the_body(x, n):
    for k in range(n):
        x = x * 1.5
        if x > 5.0:
            break
    return x


@pytest.mark.parametrize("fn, args", [(escape_time, (0.1, 0.9, 4.0, 50)), (while_escape, (0.1, 0.9, 4.0, 50)),
                                      (exit_ending_the_body, (1.0, 8))])
def test_the_trace_report_shows_the_exit_tested_in_the_predicate(fn, args):
    # The `if` became part of the loop's predicate: the report still has a row for its line.
    import inspect
    lines, first = inspect.getsourcelines(fn)
    loop = first + next(i for i, t in enumerate(lines) if t.lstrip().startswith(("for ", "while ")))
    exit_line = first + next(i for i, t in enumerate(lines) if t.lstrip().startswith("if "))
    rows = autolax.trace_check(fn, *args).rows
    assert any(r.lineno == loop and r.kind in ("for", "while") and r.became.startswith("lax.while_loop") for r in rows)
    (row,) = [r for r in rows if r.lineno == exit_line and r.became == "lax.while_loop predicate"]
    assert row.kind == "if" and row.source.startswith("if ")


def endless_with_else(x, z, limit):
    steps = 0
    while True:
        if x > limit or steps >= 30:
            break
        x = x * x * 0.5 + z
        steps += 1
    return steps, x


@pytest.mark.parametrize("x, z", [(3.0, 0.3), (0.1, 0.9), (0.1, 0.1)])
def test_while_true_whose_body_opens_with_an_exit(x, z, tmp_path):
    check_all_paths(endless_with_else, np.float32(x), np.float32(z), np.float32(2.0), tmp_dir=tmp_path)


def while_else(x, limit):
    while x < 100.0:
        if x > limit:
            found = x
            break
        x = x * 2.0
    else:
        found = -x
    return found


@pytest.mark.parametrize("x, limit", [(3.0, 2.0), (1.0, 5.0), (1.0, 500.0), (200.0, 5.0)])
def test_while_else_after_a_rotated_loop(x, limit, tmp_path):
    check_all_paths(while_else, np.float32(x), np.float32(limit), tmp_dir=tmp_path)


def while_printing_exit(x, limit):
    while x < 100.0:
        if noisy_test(x) > limit:  # prints: tested in the body, once per iteration Python runs
            found = x
            break
        x = x * 2.0
    else:
        found = -x
    return found


@pytest.mark.parametrize("x, limit", [(3.0, 2.0), (1.0, 5.0), (1.0, 500.0)])
def test_while_whose_exit_test_prints_is_not_rotated(x, limit, tmp_path):
    check_all_paths(while_printing_exit, np.float32(x), np.float32(limit), tmp_dir=tmp_path)


# ----------------------------------------------------------------------------- --standalone
ROTATED_SOURCE = '''\
import jax.numpy as jnp


def escape_time(x, z, limit, n):
    for k in range(n):
        if jnp.abs(x) > limit:
            return k, x
        x = x * x * 0.5 + z
    return -1, x


def escape_by_ratio(x, z, limit, n):
    for k in range(n):
        if 1.0 / x < limit:
            return k, x
        x = x * x * 0.5 + z
    return -1, x
'''


def test_standalone_runs_the_rotated_loop_and_the_same_rule():
    # --standalone output runs the runtime (its copy): the same rotation, decided the same way
    namespace = standalone_module(ROTATED_SOURCE, all=True)
    args = (np.float32(0.5), np.float32(0.3), np.float32(2.0), 20)
    for name in ("escape_time", "escape_by_ratio"):
        ours = str(jax.make_jaxpr(jax.jit(autolax.convert(globals()[name])), static_argnums=3)(*args))
        theirs = str(jax.make_jaxpr(jax.jit(namespace[name]), static_argnums=3)(*args))
        assert ours.count("while[") == theirs.count("while[") == 1
        assert ours.count("cond[") == theirs.count("cond[")
    for name, args in (("escape_time", ESCAPE_INPUTS[:3]), ("escape_by_ratio", [(3.0, 0.3, 0.5, 20), (0.5, 0.9, 0.25, 20),
                                                                                (0.5, 0.1, 0.25, 20)])):
        for x, z, limit, n in args:
            args = (np.float32(x), np.float32(z), np.float32(limit), n)
            k, value = jax.jit(namespace[name])(*args)
            want = globals()[name](*args)
            assert int(k) == want[0] and np.isclose(value, want[1]), (name, args)
