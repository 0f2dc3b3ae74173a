"""Golden tests of the source `autolax convert` writes: one construct per case, before/after.

The cases convert `@autolax.jit def f...` in a file; the expected text is the converted
function (its decorator becomes `@jax.jit`). DEFAULT is the default output (calls to
autolax's runtime ops); STANDALONE is `--standalone` (jax.lax / jnp / Python only). What the
converted code computes is tested in test_cli.py (converted module vs plain Python).
"""

import textwrap

import pytest

from autolax.errors import ConversionError
from autolax.sourcegen import Options, convert_source

HEADER = "import jax.numpy as jnp\n\nimport autolax\n\n\n@autolax.jit\n"

DEFAULT = {
    "if_elif_else": (
        """\
        def f(x):
            if x > 0:
                y = x
            elif x < -1:
                y = -x
            else:
                y = 0.0
            return y
        """,
        """\
        def f(x):
            def if_true():
                y = x
                return y

            def if_false():
                def if_true_1():
                    y = -x
                    return y

                def if_false_1():
                    y = 0.0
                    return y

                y = ops.cond(x < -1, if_true_1, if_false_1, at='golden.py:10 -> y')
                return y

            y = ops.cond(x > 0, if_true, if_false, at='golden.py:8 -> y')
            return y
        """,
    ),
    "while": (
        """\
        def f(n):
            steps = 0
            while n > 1:
                n = n // 2
                steps += 1
            return steps
        """,
        """\
        def f(n):
            steps = 0

            def loop_test(n, steps):
                return n > 1

            def loop_body(n, steps):
                n = n // 2
                steps += 1
                return (n, steps)

            n, steps = ops.while_loop(loop_test, loop_body, (n, steps), at='golden.py:9')
            return steps
        """,
    ),
    "for_range": (
        """\
        def f(x, n):
            for i in range(n):
                x = x * 2 + i
            return x
        """,
        """\
        def f(x, n):
            def loop_body(i, x):
                x = x * 2 + i
                return x

            x = ops.for_range(0, n, 1, loop_body, x, at='golden.py:8')
            return x
        """,
    ),
    "for_array": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_body(x, total):
                total += x
                return total

            total = ops.for_iter(xs, loop_body, total, at='golden.py:9')
            return total
        """,
    ),
    "enumerate_zip": (
        """\
        def f(xs, ys):
            acc = 0.0
            for i, (x, y) in enumerate(zip(xs, ys)):
                acc += i * x * y
            return acc
        """,
        """\
        def f(xs, ys):
            acc = 0.0

            def loop_body(item, acc):
                i, (x, y) = item
                acc += i * x * y
                return acc

            acc = ops.for_iter(ops.enumerate(ops.zip(xs, ys)), loop_body, acc, at='golden.py:9')
            return acc
        """,
    ),
    "break": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    break
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_test(x, total):
                return ops.not_(x < 0)

            def loop_body(x, total):
                total += x
                return total

            total, x, exit_ = ops.for_iter(xs, loop_body, total, loop_test, at='golden.py:9; test: x')
            return total
        """,
    ),
    "continue": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    continue
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_body(x, total):
                def if_true(total):
                    total += x
                    return total

                def if_false(total):
                    return total

                total = ops.cond(ops.not_(x < 0), if_true, if_false, total, at='golden.py:10 -> total')
                return total

            total = ops.for_iter(xs, loop_body, total, at='golden.py:9')
            return total
        """,
    ),
    "early_return": (
        """\
        def f(xs, t):
            for x in xs:
                if x > t:
                    return 1
            return 0
        """,
        """\
        def f(xs, t):
            def loop_test(x):
                return ops.not_(x > t)

            def loop_body(x):
                return ()

            x, exit_ = ops.for_iter(xs, loop_body, (), loop_test, at='golden.py:8; test: x')

            def if_true():
                retval = 1
                return retval

            def if_false():
                retval = 0
                return retval

            retval = ops.cond(exit_, if_true, if_false, at='golden.py:9 -> retval; return: retval')
            return retval
        """,
    ),
    "and_or_not": (
        """\
        def f(x, y):
            if x > 0 and not y > 0 or x == y:
                x = x + 1
            return x
        """,
        """\
        def f(x, y):
            def if_true(x):
                x = x + 1
                return x

            def if_false(x):
                return x

            x = ops.cond(ops.or_(ops.and_(x > 0, lambda: ops.not_(y > 0)), lambda: x == y), if_true, if_false, x, at='golden.py:8 -> x')
            return x
        """,
    ),
    "ternary": (
        """\
        def f(x):
            return x if x > 0 else -x
        """,
        """\
        def f(x):
            with ops.runtime_checks():
                return ops.if_else(x > 0, lambda: x, lambda: -x)
        """,
    ),
    "setitem": (
        """\
        def f(x, i):
            x[i] = 0.0
            x[i + 1] += 2.0
            return x
        """,
        """\
        def f(x, i):
            x = ops.at(x)[i].set(0.0)
            x = ops.at(x)[i + 1].add(2.0)
            return x
        """,
    ),
    "append": (
        """\
        def f(x):
            out = []
            for i in range(3):
                out.append(x * i)
            return jnp.stack(out)
        """,
        """\
        def f(x):
            out = []

            def loop_body(i, out):
                out = ops.append(out, x * i)
                return out

            out = ops.for_range(0, 3, 1, loop_body, out, at='golden.py:9')
            return ops.stack(jnp.stack, out)
        """,
    ),
}

STANDALONE = {
    "loop_targets_after": (  # the loop's targets after it: the sequence's last item and count
        """\
        def f(xs):
            total = 0.0
            for k, x in enumerate(xs, 1):
                total = total + x * k
            for i in range(3):
                total = total * 2
            return total, k, x, i
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_body(total, item):
                k, x = item
                total = total + x * k
                return (total, None)

            if len(xs) > 0:
                total, _ = jax.lax.scan(loop_body, total, (jnp.arange(1, 1 + len(xs)), xs))
            if len(xs) > 0:
                k = len(xs)
                x = xs[-1]

            def loop_body_1(i, total):
                total = total * 2
                return total

            total = jax.lax.fori_loop(0, 3, loop_body_1, total)
            i = 2
            return total, k, x, i
        """,
    ),
    "one_sided_if": (  # the `if` also gives whether it bound `y`; the read checks it when the program runs
        """\
        def f(x: float):
            if x > 0:
                y = 1
            return y
        """,
        """\
        def f(x: float):
            check_argument(x, 'f', 'x', 'float', dtype='floating', ndim=0)

            def if_true():
                y = 1
                return (y, True)

            def if_false():
                y = 0
                return (y, False)

            y, y_bound = jax.lax.cond(x > 0, if_true, if_false)
            with raise_if(jnp.logical_not(y_bound), lambda: UnboundLocalError("cannot access local variable 'y' where it is not associated with a value (at golden.py:10): the staged statement that assigns it did not (a loop that ran zero times or never reached the assignment, or an `if` whose traced condition chose the branch that does not assign it), which the running program found\\nFix: assign 'y' before the loop or the `if` (for example y = jnp.zeros_like(...)), or on every path."), 'golden.py:10'):
                return y
        """,
    ),
    "one_sided_if_of_a_type_not_known": (  # zeros of the type jax.eval_shape finds for the other side
        """\
        def f(x, xs):
            if x > 0:
                y = xs * x
            return y
        """,
        """\
        def f(x, xs):
            def if_true():
                y = xs * x
                return (y, True)

            def if_false():
                if_true_types = jax.eval_shape(if_true)
                y = jax.tree.map(jnp.zeros_like, if_true_types[0])
                return (y, False)

            y, y_bound = jax.lax.cond(cond_predicate(x > 0, 'golden.py:8'), if_true, if_false)
            with raise_if(jnp.logical_not(y_bound), lambda: UnboundLocalError("cannot access local variable 'y' where it is not associated with a value (at golden.py:10): the staged statement that assigns it did not (a loop that ran zero times or never reached the assignment, or an `if` whose traced condition chose the branch that does not assign it), which the running program found\\nFix: assign 'y' before the loop or the `if` (for example y = jnp.zeros_like(...)), or on every path."), 'golden.py:10'):
                return y
        """,
    ),
    "last_value_of_loop": (  # each iteration assigns `last` first: its last value is collected
        """\
        def f(xs):
            for x in xs:
                last = x * 2
            return last
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            last_values = []

            def loop_body(carry, x):
                last = x * 2
                return (None, last)

            if len(xs) > 0:
                _, last_values = jax.lax.scan(loop_body, None, xs)
            if len(last_values) > 0:
                last = last_values[-1]
            return last
        """,
    ),
    "if_elif_else": (
        """\
        def f(x):
            if x > 0:
                y = x
            elif x < -1:
                y = -x
            else:
                y = 0.0
            return y
        """,
        """\
        def f(x):
            def if_true():
                y = x
                return y

            def if_false():
                def if_true_1():
                    y = -x
                    return y

                def if_false_1():
                    y = 0.0
                    return y

                y = promoting_cond(cond_predicate(x < -1, 'golden.py:10'), if_true_1, if_false_1)
                return y

            y = promoting_cond(cond_predicate(x > 0, 'golden.py:8'), if_true, if_false)
            return y
        """,
    ),
    "while": (
        """\
        def f(n):
            steps = 0
            while n > 1:
                n = n // 2
                steps += 1
            return steps
        """,
        """\
        def f(n):
            steps = 0

            def loop_test(carry):
                n, steps = carry
                return cond_predicate(n > 1, 'golden.py:9')

            def loop_body(carry):
                n, steps = carry
                n = n // 2
                steps += 1
                return (n, steps)

            n, steps = jax.lax.while_loop(loop_test, loop_body, (n, steps))
            return steps
        """,
    ),
    "for_range": (
        """\
        def f(x, n):
            for i in range(n):
                x = x * 2 + i
            return x
        """,
        """\
        def f(x, n):
            def loop_body(i, x):
                x = x * 2 + i
                return x

            x = promoting_fori_loop(0, n, loop_body, x)
            return x
        """,
    ),
    "for_array": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                total += x
            return total
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_body(total, x):
                total += x
                return (total, None)

            if len(xs) > 0:
                total, _ = jax.lax.scan(loop_body, total, xs)
            return total
        """,
    ),
    "enumerate_zip": (
        """\
        def f(xs, ys):
            acc = 0.0
            for i, (x, y) in enumerate(zip(xs, ys)):
                acc += i * x * y
            return acc
        """,
        """\
        def f(xs, ys):
            check_argument(xs, 'f', 'xs', None)
            check_argument(ys, 'f', 'ys', None)
            acc = 0.0

            def loop_body(acc, item):
                i, (x, y) = item
                acc += i * x * y
                return (acc, None)

            if min(len(xs), len(ys)) > 0:
                acc, _ = jax.lax.scan(loop_body, acc, (jnp.arange(min(len(xs), len(ys))), (xs[:len(ys)], ys[:len(xs)])))
            return acc
        """,
    ),
    "break": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    break
                total += x
            return total
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_test(carry):
                index, total = carry
                x = xs[index]
                return jnp.logical_and(index < len(xs), jnp.logical_not(x < 0))

            def loop_body(carry):
                index, total = carry
                x = xs[index]
                total += x
                return (index + 1, total)

            _, total = while_loop_with_masked_grad(loop_test, loop_body, (0, total), len(xs))
            return total
        """,
    ),
    "continue": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    continue
                total += x
            return total
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_body(total, x):
                def if_true(total):
                    total += x
                    return total

                def if_false(total):
                    return total

                total = promoting_cond(cond_predicate(jnp.logical_not(x < 0), 'golden.py:10'), if_true, if_false, total)
                return (total, None)

            if len(xs) > 0:
                total, _ = jax.lax.scan(loop_body, total, xs)
            return total
        """,
    ),
    "early_return": (
        """\
        def f(xs, t):
            for x in xs:
                if x > t:
                    return 1
            return 0
        """,
        """\
        def f(xs, t):
            check_argument(xs, 'f', 'xs', None)

            def loop_test(index):
                x = xs[index]
                return jnp.logical_and(index < len(xs), jnp.logical_not(x > t))

            def loop_body(index):
                return index + 1

            index = jax.lax.while_loop(loop_test, loop_body, 0)
            exit_ = index < len(xs)
            retval = jnp.where(exit_, 1, 0)
            return retval
        """,
    ),
    "and_or_not": (
        """\
        def f(x, y):
            if x > 0 and not y > 0 or x == y:
                x = x + 1
            return x
        """,
        """\
        def f(x, y):
            def if_true(x):
                x = x + 1
                return x

            def if_false(x):
                return x

            x = jax.lax.cond(cond_predicate(jnp.logical_or(jnp.logical_and(x > 0, jnp.logical_not(y > 0)), x == y), 'golden.py:8'), if_true, if_false, x)
            return x
        """,
    ),
    "ternary": (
        """\
        def f(x):
            return x if x > 0 else -x
        """,
        """\
        def f(x):
            return jax.lax.cond(cond_predicate(x > 0, 'golden.py:8'), lambda: x, lambda: -x)
        """,
    ),
    "setitem": (
        """\
        def f(x, i):
            x[i] = 0.0
            x[i + 1] += 2.0
            return x
        """,
        """\
        def f(x, i):
            x = x.at[i].set(0.0)
            x = x.at[i + 1].set(x[i + 1] + 2.0)
            return x
        """,
    ),
    "static_if": (
        """\
        def f(x, axis):
            # static: axis is declared static
            if axis is None:
                x = x.ravel()  # flatten
            elif axis < 0:
                axis = x.ndim + axis
            return x.sum(axis)
        """,
        """\
        def f(x, axis):
            # static: axis is declared static
            if axis is None:
                x = x.ravel()  # flatten
            elif axis < 0:
                axis = x.ndim + axis
            return x.sum(axis)
        """,
    ),
    "static_loop_break": (
        """\
        def f(x, n):
            total = 0
            for i in range(10):
                if i >= n:
                    break
                total += i
            return x * total
        """,
        """\
        def f(x, n):
            total = 0
            for i in range(10):
                if i >= n:
                    break
                total += i
            return x * total
        """,
    ),
    "print": (
        """\
        def f(x):
            print("x is", x, "{braces}")
            print("static")
            return x
        """,
        """\
        def f(x):
            jax.debug.print('x is {} {{braces}}', x, ordered=jax.device_count() == 1)
            jax.debug.print('static', ordered=jax.device_count() == 1)
            return x
        """,
    ),
    "list_param": (
        """\
        def f(x, layers: list):
            for w in layers:
                x = jnp.tanh(x @ w)
            return x
        """,
        """\
        def f(x, layers: list):
            check_argument(layers, 'f', 'layers', 'list', types=(list,))
            for w in layers:
                x = jnp.tanh(x @ w)
            return x
        """,
    ),
    "nested": (
        """\
        def f(xs):
            total = 0.0
            for row in xs:
                for v in row:
                    if v > 0:
                        total = total + v
            return total
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_body(total, row):
                def loop_body_1(total, v):
                    def if_true(total):
                        total = total + v
                        return total

                    def if_false(total):
                        return total

                    total = jax.lax.cond(cond_predicate(v > 0, 'golden.py:11'), if_true, if_false, total)
                    return (total, None)

                if len(row) > 0:
                    total, _ = jax.lax.scan(loop_body_1, total, row)
                return (total, None)

            if len(xs) > 0:
                total, _ = jax.lax.scan(loop_body, total, xs)
            return total
        """,
    ),
    "while_static_test": (
        """\
        def f(x):
            i = 0
            while i < 3:
                x = x * 2
                i += 1
            return x, i
        """,
        """\
        def f(x):
            i = 0

            def loop_test(carry):
                x, i = carry
                return i < 3

            def loop_body(carry):
                x, i = carry
                x = x * 2
                i += 1
                return (x, i)

            x, i = jax.lax.while_loop(loop_test, loop_body, (x, i))
            return x, i
        """,
    ),
    "range_break_traced": (
        """\
        def f(x, n):
            for i in range(n):
                if x > 100:
                    break
                x = x * 2
            return x
        """,
        """\
        def f(x, n):
            def loop_test(carry):
                i, x = carry
                return jnp.logical_and(i < n, jnp.logical_not(x > 100))

            def loop_body(carry):
                i, x = carry
                x = x * 2
                return (i + 1, x)

            _, x = jax.lax.while_loop(loop_test, loop_body, (0, x))
            return x
        """,
    ),
    "break_int_carries": (  # nothing to differentiate: a plain while_loop
        """\
        def f(xs):
            count = 0
            for x in xs:
                if x < 0:
                    break
                count += 1
            return count
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            count = 0

            def loop_test(carry):
                index, count = carry
                x = xs[index]
                return jnp.logical_and(index < len(xs), jnp.logical_not(x < 0))

            def loop_body(carry):
                index, count = carry
                count += 1
                return (index + 1, count)

            _, count = jax.lax.while_loop(loop_test, loop_body, (0, count))
            return count
        """,
    ),
    "break_print": (  # custom_jvp takes no effects: the masked scan itself
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    break
                print(x)
                total += x
            return total
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0

            def loop_test(carry):
                index, total = carry
                x = xs[index]
                return jnp.logical_and(index < len(xs), jnp.logical_not(x < 0))

            def loop_body(carry):
                index, total = carry
                x = xs[index]
                jax.debug.print('{}', x, ordered=jax.device_count() == 1)
                total += x
                return (index + 1, total)

            _, total = masked_while_loop(loop_test, loop_body, (0, total), len(xs))
            return total
        """,
    ),
    "break_after": (  # the exit ends the body: tested after each iteration, in the predicate
        """\
        def f(n, limit):
            total = 0
            for i in range(n):
                total += i
                if total > limit:
                    break
            return total
        """,
        """\
        def f(n, limit):
            total = 0

            def loop_test(carry):
                i, total = carry
                return jnp.logical_and(i < n, jnp.logical_or(i == 0, jnp.logical_not(total > limit)))

            def loop_body(carry):
                i, total = carry
                total += i
                return (i + 1, total)

            _, total = jax.lax.while_loop(loop_test, loop_body, (0, total))
            return total
        """,
    ),
    "break_target_read": (  # the loop target read after the loop: the item it stopped at, else the last
        """\
        def f(xs, level):
            i = -1
            for i in range(len(xs)):
                if xs[i] > level:
                    break
            return i
        """,
        """\
        def f(xs, level):
            i = -1
            stop = len(xs)

            def loop_test(index):
                i = index
                return jnp.logical_and(index < stop, jnp.logical_not(xs[i] > level))

            def loop_body(index):
                return index + 1

            index = jax.lax.while_loop(loop_test, loop_body, 0)
            exit_ = index < stop
            i = jnp.where(jnp.logical_or(exit_, index != 0), jnp.where(exit_, index, index - 1), i)
            return i
        """,
    ),
    "append_scan": (
        """\
        def f(xs, h):
            states = []
            for x in xs:
                h = jnp.tanh(x + h)
                states.append(h)
            return jnp.stack(states), h
        """,
        """\
        def f(xs, h):
            check_argument(xs, 'f', 'xs', None)
            states = []

            def loop_body(h, x):
                h = jnp.tanh(x + h)
                return (h, h)

            if len(xs) > 0:
                h, states = promoting_scan(loop_body, h, xs)
            return jnp.stack(states), h
        """,
    ),
    "append_range": (
        """\
        def f(x):
            out = []
            for i in range(4):
                out.append(x * i)
            return jnp.stack(out), len(out), out[-1]
        """,
        """\
        def f(x):
            out = []

            def loop_body(carry, i):
                return (None, x * i)

            _, out = jax.lax.scan(loop_body, None, jnp.arange(4))
            return jnp.stack(out), len(out), out[-1]
        """,
    ),
    "append_before_change": (  # the item is computed where it was appended
        """\
        def f(xs):
            total = 0.0
            out = []
            for x in xs:
                out.append(jnp.sin(total))
                total = total + x
            return total, jnp.stack(out)
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            total = 0.0
            out = []

            def loop_body(total, x):
                out_item = jnp.sin(total)
                total = total + x
                return (total, out_item)

            if len(xs) > 0:
                total, out = jax.lax.scan(loop_body, total, xs)
            return total, jnp.stack(out)
        """,
    ),
    "select_declared": (  # branches that only move values, a condition known to be one value
        """\
        def f(xs: Float[Array, "n"], t: float):
            found = False
            for x in xs:
                if x > t:
                    found = True
                    break
            return found
        """,
        """\
        def f(xs: Float[Array, "n"], t: float):
            check_argument(xs, 'f', 'xs', "Float[Array, 'n']", dtype='floating', ndim=1)
            check_argument(t, 'f', 't', 'float', dtype='floating', ndim=0)
            found = False

            def loop_test(index):
                x = xs[index]
                return jnp.logical_and(index < len(xs), jnp.logical_not(x > t))

            def loop_body(index):
                return index + 1

            index = jax.lax.while_loop(loop_test, loop_body, 0)
            exit_ = index < len(xs)
            found = jnp.where(exit_, True, found)
            return found
        """,
    ),
    "range_traced_bounds_step": (
        """\
        def f(x, n):
            for i in range(n, 0, -2):
                x = x + i
            return x
        """,
        """\
        def f(x, n):
            def loop_body(k, x):
                i = n + k * -2
                x = x + i
                return x

            x = promoting_fori_loop(0, jnp.maximum(0, -((n - 0) // -2)), loop_body, x)
            return x
        """,
    ),
    "promoted_carry": (  # the loop starts from the type it gives `t`, as lax.scan traces it
        """\
        def f(xs):
            t = 0
            for x in xs:
                t += x * 0.5
            return t
        """,
        """\
        def f(xs):
            check_argument(xs, 'f', 'xs', None)
            t = 0
            t = float(t)

            def loop_body(t, x):
                t += x * 0.5
                return (t, None)

            if len(xs) > 0:
                t, _ = jax.lax.scan(loop_body, t, xs)
            return t
        """,
    ),
    "and_calls": (  # a later operand that calls a function runs only where Python runs it
        """\
        def f(x, y):
            if x > 0 and g(y) > 1:
                x = x + 1
            return x
        """,
        """\
        def f(x, y):
            def if_true(x):
                x = x + 1
                return x

            def if_false(x):
                return x

            x = jax.lax.cond(jax.lax.cond(x > 0, lambda: g(y) > 1, lambda: False), if_true, if_false, x)
            return x
        """,
    ),
    "static_elif_in_staged_if": (  # the `elif` becomes the `if` of the else branch
        """\
        def f(x, mode):
            if x > 0:
                x = x + 1
            elif mode == "a":
                x = x - 1
            return x
        """,
        """\
        def f(x, mode):
            def if_true(x):
                x = x + 1
                return x

            def if_false(x):
                if mode == 'a':
                    x = x - 1
                return x

            x = jax.lax.cond(cond_predicate(x > 0, 'golden.py:8'), if_true, if_false, x)
            return x
        """,
    ),
}

STATIC = {"static_if": ("axis",), "static_loop_break": ("n",), "static_elif_in_staged_if": ("mode",)}


def convert_function(before, **options):
    text = convert_source(HEADER + textwrap.dedent(before), "golden.py", Options(**options)).text
    header, function = text.split("@jax.jit\n", 1)
    return function


@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_default_output(name):
    before, after = DEFAULT[name]
    assert convert_function(before) == textwrap.dedent(after)


@pytest.mark.parametrize("name", sorted(STANDALONE))
def test_standalone_output(name):
    before, after = STANDALONE[name]
    assert convert_function(before, standalone=True, static=STATIC.get(name, ())) == textwrap.dedent(after)



# A whole file: decorators, imports, comments, methods; other code is kept as it is.
FILE_BEFORE = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp
from autolax import convert, jit


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        if x > 0:
            x = x * self.scale  # scaled
        return x


@convert
def clamp(x, lo=0.0):
    """Clamp below."""
    if x < lo:  # too small
        x = lo
    return x


@jit(strict=True, static_argnames=("n",))
def poly(x, n: int):
    total = jnp.zeros_like(x)
    for i in range(n):
        total = total + x ** i
    return total


@partial(jax.jit, static_argnames="k")
@convert(strict=True)
def pick(x, k):
    if k == "a":
        return x + 1
    return x - 1


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''

FILE_DEFAULT = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp
from autolax import ops


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jax.jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        def if_true(x):
            x = x * self.scale  # scaled
            return x

        def if_false(x):
            return x

        x = ops.cond(x > 0, if_true, if_false, x, at='model.py:16 -> x')
        return x


def clamp(x, lo=0.0):
    """Clamp below."""

    # too small
    def if_true(x):
        x = lo
        return x

    def if_false(x):
        return x

    x = ops.cond(x < lo, if_true, if_false, x, at='model.py:24 -> x')
    return x


@jax.jit(static_argnames=('n',))
def poly(x, n: int):
    total = jnp.zeros_like(x)

    def loop_body(i, total):
        total = total + x ** i
        return total

    total = ops.for_range(0, n, 1, loop_body, total, at='model.py:32')
    return total


@partial(jax.jit, static_argnames="k")
def pick(x, k):
    def if_true():
        retval = x + 1
        return retval

    def if_false():
        retval = x - 1
        return retval

    retval = ops.cond(k == 'a', if_true, if_false, at='model.py:40 -> retval; return: retval')
    return retval


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''

FILE_STANDALONE = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp


def promoted_dtype(a, b):
    """The dtype values of types ``a`` and ``b`` (``jax.ShapeDtypeStruct``) promote to; a
    weakly typed value promotes as the Python number it stands for (a float32 array and
    ``0.5`` give float32). (Written by ``autolax convert --standalone``.)"""
    def promotes_as(t):
        if not t.weak_type:
            return t.dtype
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[jax.numpy.dtype(t.dtype).kind]

    return jax.dtypes.result_type(promotes_as(a), promotes_as(b))


def carry_types(step, init_val, *args):
    """The types of a staged loop's carry: ``init_val``'s, each promoted with the type one
    iteration (``step(val, *args)``) gives it, until no iteration changes them -- a Python
    loop may turn an int it carries into the float it assigns.
    (Written by ``autolax convert --standalone``.)"""
    def join(a, b):
        return jax.ShapeDtypeStruct(a.shape, promoted_dtype(a, b), weak_type=a.weak_type and b.weak_type)

    types = jax.eval_shape(lambda val: val, init_val)
    while True:
        joined = jax.tree.map(join, types, jax.eval_shape(step, types, *args))
        if jax.tree.leaves(joined) == jax.tree.leaves(types):  # (a pytree class may have no `==`)
            return types
        types = joined


def as_types(val, types):
    """``val`` with the dtypes of ``types``. (Written by ``autolax convert --standalone``.)"""
    return jax.tree.map(lambda x, t: x if jax.numpy.result_type(x) == t.dtype else jax.numpy.asarray(x, t.dtype),
                        val, types)


def promoting_fori_loop(lower, upper, body_fun, init_val):
    """``jax.lax.fori_loop(lower, upper, body_fun, init_val)`` for a body that may change the
    dtypes of what it carries (see ``promoting_while_loop``).
    (Written by ``autolax convert --standalone``.)"""
    types = carry_types(lambda val, i: body_fun(i, val), init_val, jax.numpy.asarray(lower))
    return jax.lax.fori_loop(lower, upper, lambda i, val: as_types(body_fun(i, val), types),
                             as_types(init_val, types))


def promoting_cond(pred, true_fun, false_fun, *operands):
    """``jax.lax.cond(pred, true_fun, false_fun, *operands)`` for branches whose results may
    differ in dtype, as the two sides of a Python ``if`` may (a Python number on one side, a
    float32 array on the other): each result takes the dtype both sides promote to.
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        return true_fun(*operands) if pred else false_fun(*operands)
    """
    from jax.extend.core import jaxpr_as_fun

    # Each branch is traced once (a chain of `elif`s stays linear), then replayed in the cond.
    (true_jaxpr, true_types), (false_jaxpr, false_types) = (
        jax.make_jaxpr(fun, return_shape=True)(*operands) for fun in (true_fun, false_fun))
    if jax.tree.structure(true_types) != jax.tree.structure(false_types):
        return jax.lax.cond(pred, true_fun, false_fun, *operands)  # JAX's error names the difference

    leaves, tree = jax.tree.flatten(true_types)
    dtypes = [promoted_dtype(a, b) for a, b in zip(leaves, jax.tree.leaves(false_types))]

    def promoted(jaxpr):
        # A value that already has the dtype is left as it is (a weakly typed one stays so).
        run = jaxpr_as_fun(jaxpr)
        return lambda *args: tree.unflatten(
            [x if jax.numpy.result_type(x) == dtype else jax.numpy.asarray(x, dtype)
             for x, dtype in zip(run(*jax.tree.leaves(args)), dtypes)])

    return jax.lax.cond(pred, promoted(true_jaxpr), promoted(false_jaxpr), *operands)


def cond_predicate(pred, where):
    """``pred`` as the boolean scalar ``jax.lax`` takes, with Python's (NumPy's) truth value
    (nonzero is true; one element of any rank is its value), as the runtime stages a traced
    condition; an empty array or one of several elements is refused in the runtime's words
    (its ArrayConditionError, a ValueError).
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        return bool(pred)
    """
    pred = jax.numpy.asarray(pred)
    if pred.size == 0:
        raise ValueError("the condition at {where} is a traced array of shape {shape}; the truth value of an empty array is ambiguous.\\nFix: use `array.size > 0` to check that an array is not empty. (the runtime's ArrayConditionError, in a file written by autolax convert --standalone)".format(where=where, shape=pred.shape))
    if pred.size != 1:
        raise ValueError("the condition at {where} is a traced array of shape {shape}; the truth value of an array with more than one element is ambiguous.\\nFix: reduce it to one value first, e.g. `if jnp.any(c):` or `if jnp.all(c):`. (the runtime's ArrayConditionError, in a file written by autolax convert --standalone)".format(where=where, shape=pred.shape))
    pred = pred.reshape(())
    return pred if pred.dtype == bool else pred != 0


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jax.jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        def if_true(x):
            x = x * self.scale  # scaled
            return x

        def if_false(x):
            return x

        x = promoting_cond(cond_predicate(x > 0, 'model.py:16'), if_true, if_false, x)
        return x


def clamp(x, lo=0.0):
    """Clamp below."""

    # too small
    def if_true(x):
        x = lo
        return x

    def if_false(x):
        return x

    x = promoting_cond(cond_predicate(x < lo, 'model.py:24'), if_true, if_false, x)
    return x


@jax.jit(static_argnames=('n',))
def poly(x, n: int):
    total = jnp.zeros_like(x)

    def loop_body(i, total):
        total = total + x ** i
        return total

    if n > 0:
        total = promoting_fori_loop(0, n, loop_body, total)
    return total


@partial(jax.jit, static_argnames="k")
def pick(x, k):
    if k == 'a':
        retval = x + 1
    else:
        retval = x - 1
    return retval


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''


def test_whole_file_default():
    assert convert_source(FILE_BEFORE, "model.py", Options()).text == FILE_DEFAULT


def test_whole_file_standalone():
    assert convert_source(FILE_BEFORE, "model.py", Options(standalone=True)).text == FILE_STANDALONE


def test_converting_output_again_changes_nothing():
    for text, options in ((FILE_DEFAULT, Options()), (FILE_STANDALONE, Options(standalone=True))):
        assert convert_source(text, "model.py", options).text == text


# --standalone rejects what it cannot express: `file:line:col: error: ...`, in the words of the
# runtime's error where the runtime refuses the program too, else saying to drop --standalone.
STANDALONE_ERRORS = {
    "append_in_while": (
        """\
        def f(x):
            out = []
            while x > 0:
                out.append(x)
                x = x - 1
            return out
        """,
        "golden.py:9:5: error: 'out' is appended to in the `while` loop at golden.py:9, but a `while` loop's trip "
        "count is decided at run time, so the length of 'out' would depend on data.\n    while x > 0:",
    ),
    "append_and_read": (
        """\
        def f(xs):
            out = []
            for x in xs:
                out.append(x * 2)
                x = x + len(out)
            return jnp.stack(out)
        """,
        "golden.py:9:5: error: 'out' is appended to in the `for` loop at golden.py:9 and also read there; a staged "
        "loop collects appended items as its outputs, so the body would not see the items earlier iterations "
        "appended. (drop --standalone to use the autolax runtime)\n    for x in xs:",
    ),
    "stacked_list_returned": (
        """\
        def f(xs):
            out = []
            for x in xs:
                out.append(x * 2)
            return out
        """,
        "golden.py:11:12: error: 'out' holds the items appended in a staged loop as one stacked array: --standalone "
        "supports jnp.stack(out), len(out), out[i] and `for` over it, not this use (drop --standalone to use the "
        "autolax runtime)",
    ),
    "append_to_nonempty": (
        """\
        def f(xs):
            out = [xs[0]]
            for x in xs:
                out.append(x * 2)
            return jnp.stack(out)
        """,
        "golden.py:9:5: error: 'out' is appended to in the `for` loop at golden.py:9, which is staged, but is not the "
        "empty list `[]` when the loop starts: --standalone collects the appended items as the loop's stacked "
        "outputs (drop --standalone to use the autolax runtime)",
    ),
    "first_assigned_in_loop": (  # from the loop's count, a Python int in Python (see "last_value_of_loop")
        """\
        def f(xs):
            for i in range(3):
                last = xs * i
            return last
        """,
        "golden.py:8:5: error: 'last' is first assigned inside the `for` loop at golden.py:8, which is staged, and "
        "used after it: --standalone needs its type before the loop (drop --standalone to use the autolax runtime)",
    ),
    "early_return_of_traced": (
        """\
        def f(xs):
            for x in xs:
                y = x * 2
                if y > 0:
                    return y
            return 0.0
        """,
        "golden.py:8:5: error: 'y' is first assigned inside the `for` loop at golden.py:8, which is staged, and "
        "used after it: --standalone needs its type before the loop (drop --standalone to use the autolax runtime)",
    ),
    "one_branch": (  # read after what may raise first (a read first in its statement is checked)
        """\
        def f(x):
            if x > 0:
                y = 1.0
            return jnp.sin(x) + y
        """,
        "golden.py:10:25: error: 'y' may be unbound here: the `if` at golden.py:8 assigns it in the `if` branch "
        "only, and --standalone checks whether it is bound only where a read comes first in a statement among the "
        "function's own statements (not in a staged body, a loop, a `try` or a nested function, nor in a function "
        "the file calls) (drop --standalone to use the autolax runtime)",
    ),
    "one_branch_in_a_try": (  # an exception before the `if` would leave its flag unset
        """\
        def f(x):
            try:
                if x > 0:
                    y = 1.0
            except ValueError:
                pass
            return y
        """,
        "golden.py:9:9: error: 'y' is assigned only in the `if` branch of the `if` at golden.py:9, and used after "
        "it: (drop --standalone to use the autolax runtime)\n    if x > 0:\nThe condition is traced, so both "
        "branches are staged with lax.cond and each must give 'y' a value.",
    ),
    "or_calls_value": (
        """\
        def f(x, y):
            return jnp.sin(x) or g(y)
        """,
        "golden.py:8:12: error: `or` of traced values that may not be booleans, used as a value: --standalone writes "
        "it with jnp.where only when its later operands may run where Python skips them (no division, unknown call "
        "or effect), and with lax.cond only when the operands are known to have one shape (drop --standalone to "
        "use the autolax runtime)",
    ),
    "break_in_python_loop": (
        """\
        def f(x, ws: list):
            for w in ws:
                if x > w:
                    break
                x = x * w
            return x
        """,
        "golden.py:8:5: error: the `for` loop at golden.py:8 iterates over a Python value (it stays a Python loop) "
        "and can stop at a `break` or `return` whose condition is traced: --standalone cannot skip the remaining "
        "iterations (drop --standalone to use the autolax runtime)",
    ),
    "print_end": (
        """\
        def f(x):
            print(x, end="")
            return x
        """,
        "golden.py:8:5: error: `print` of traced values (or in a staged body) with `end`, `file`, `flush`, a "
        "non-constant `sep` or *args has no jax.debug.print form (drop --standalone to use the autolax runtime)",
    ),
    "traced_step": (
        """\
        def f(x, s):
            for i in range(0, 10, s):
                x = x + i
            return x
        """,
        "golden.py:8:5: error: the step of the `range` of the `for` loop at golden.py:8 is traced: --standalone "
        "stages ranges with a static step only (drop --standalone to use the autolax runtime)",
    ),
}


@pytest.mark.parametrize("name", sorted(STANDALONE_ERRORS))
def test_standalone_errors(name):
    before, message = STANDALONE_ERRORS[name]
    with pytest.raises(ConversionError) as info:
        convert_source(HEADER + textwrap.dedent(before), "golden.py", Options(standalone=True))
    assert info.value.one_line() == message


def test_standalone_rejects_files_that_still_use_autolax():
    text = "import autolax\n\n\n@autolax.jit\ndef f(x):\n    return x\n\n\nprint(autolax.trace_check(f, 1.0))\n"
    with pytest.raises(ConversionError) as info:
        convert_source(text, "golden.py", Options(standalone=True))
    assert info.value.one_line() == (
        "golden.py:9:7: error: 'autolax' is still used here, but --standalone output imports no autolax"
    )
    assert info.value.fix == "remove this use, or drop --standalone."


# Outputs that define the `raise_if` helper class, whose methods a second conversion with
# --all (every function) converts too: not their own conversion.
DEFINE_RAISE_IF = {"one_sided_if", "one_sided_if_of_a_type_not_known"}


@pytest.mark.parametrize("mode", ["default", "standalone"])
def test_every_golden_output_converts_to_itself(mode):
    cases = DEFAULT if mode == "default" else STANDALONE
    for name, (before, _) in sorted(cases.items()):
        if mode == "standalone" and name in DEFINE_RAISE_IF:
            continue
        options = Options(standalone=mode == "standalone", static=STATIC.get(name, ()))
        once = convert_source(HEADER + textwrap.dedent(before), "golden.py", options).text
        options.all = True  # the decorator is gone: select every function
        assert convert_source(once, "golden.py", options).text == once, name
