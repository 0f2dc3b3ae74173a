"""Golden emitted source: one small function per rewrite, pinned (see golden_cases.py).

These pin the readable form the README promises; a change here is a change users see in
`autolax.to_source`, the CLI output and `%%autolax --show`.
"""

import textwrap

import pytest

import autolax
import golden_cases as g

GOLDEN = {
    g.escape_count: """
        def escape_count(c_re, c_im, max_iter):
            x = y = 0.0
            n = 0

            def loop_test(x, y, n):
                return ops.and_(n < max_iter, lambda: ops.not_(x * x + y * y > 4.0))

            def loop_body(x, y, n):
                x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
                n += 1
                return (x, y, n)

            x, y, n = ops.while_loop(loop_test, loop_body, (x, y, n), at='100')
            return n
    """,
    g.collatz_steps: """
        def collatz_steps(n):
            steps = 0

            def loop_body(n, steps):
                n = ops.cond(n % 2 == 0, lambda n: n // 2, lambda n: 3 * n + 1, n, at='9')
                steps += 1
                return (n, steps)

            n, steps = ops.while_loop(lambda n, steps: n != 1, loop_body, (n, steps), at='8')
            return steps
    """,
    g.early_return: """
        def early_return(x):
            return ops.cond(x < 3, lambda: 3.0 * x ** 2, lambda: -4 * x, at='18 -> retval')
    """,
    g.loop_index_after: """
        @ops.function(checks=True)
        def loop_index_after(x, n):
            i = ops.undefined('i')

            def loop_body(index, x, i):
                i = index
                x = x + i
                return (x, i)

            x, i = ops.for_range(0, n, 1, loop_body, (x, i), at='24; index: i')
            return (x, ops.assigned(i))
    """,
    g.tuple_target: """
        def tuple_target(xs):
            total = 0.0

            def loop_body(item, total):
                i, x = item
                total += i * x
                return total

            total = ops.for_iter(ops.enumerate(xs), loop_body, total, at='31')
            return total
    """,
    g.first_negative: """
        @ops.function
        def first_negative(xs):
            idx = -1

            def loop_test(i):
                return ops.not_(xs[i] < 0)

            def loop_body(i):
                return ()

            i, exit_ = ops.for_range(0, xs.shape[0], 1, loop_body, (), loop_test, at='38; test: i')
            idx = ops.cond(exit_, lambda: ops.bound(i), lambda: idx, at='39 -> idx')
            return idx
    """,
    g.skip_negative: """
        def skip_negative(xs):
            total = 0.0

            def loop_body(x, total):
                def if_true(total):
                    total += x
                    return total

                total = ops.cond(ops.not_(x < 0), if_true, lambda total: total, total, at='48')
                return total

            total = ops.for_iter(xs, loop_body, total, at='47')
            return total
    """,
    g.return_in_loop: """
        def return_in_loop(xs, t):
            def loop_test(x):
                return ops.not_(x > t)

            def loop_body(x):
                return ()

            x, exit_ = ops.for_iter(xs, loop_body, (), loop_test, at='55; test: x')
            return ops.cond(exit_, lambda: ops.bound(x), lambda: t, at='56 -> retval')
    """,
    g.item_updates: """
        @ops.function
        def item_updates(v, i):
            v = ops.at(v)[i].set(0.0)
            v = ops.at(v)[i + 1].add(1.0)
            value, value_1 = (v[0], v[i])
            v = ops.at(v)[i].set(value)
            v = ops.at(v)[0].set(ops.view(v)[i].reread(value_1))
            return ops.hand_back(v, v=v)
    """,
    g.appends: """
        def appends(xs):
            out = []

            def loop_body(x, out):
                out = ops.append(out, x * 2)
                return out

            out = ops.for_iter(xs, loop_body, out, at='70')
            return ops.stack(jnp.stack, out)
    """,
    g.calls_and_print: """
        @ops.function(checks=True)
        def calls_and_print(x):
            y = ops.call(helper, x)
            ops.print('y =', y)
            return jnp.abs(y)
    """,
    g.expressions: """
        @ops.function(checks=True)
        def expressions(x, lo, hi):
            y = ops.if_else(x > 0, lambda: x, lambda: -x)
            ok = ops.or_(ops.and_(lo <= y, lambda: y < hi, lambda: ops.not_(y == 1.0)), lambda: x is None)
            return ok
    """,
    g.first_assigned_in_loop: """
        @ops.function(checks=True)
        def first_assigned_in_loop(xs):
            last = ops.undefined('last')

            def loop_body(x, last):
                last = x
                return last

            last = ops.for_iter(xs, loop_body, last, at='92')
            return ops.assigned(last)
    """,
}


@pytest.mark.parametrize("fn", list(GOLDEN), ids=lambda fn: fn.__name__)
def test_emitted_source(fn):
    expected = textwrap.dedent(GOLDEN[fn]).strip("\n") + "\n"
    assert autolax.to_source(fn) == expected


@pytest.mark.parametrize("fn", list(GOLDEN), ids=lambda fn: fn.__name__)
def test_emitted_source_compiles_and_is_stable(fn):
    first = autolax.to_source(fn)
    compile(first, "<golden>", "exec")
    assert autolax.to_source(fn) == first  # deterministic
