"""The analyses the rewrite relies on: reads/writes, liveness, definedness."""

import textwrap

import pytest

from autolax.frontend.analysis.activity import local_names, reads, writes
from autolax.frontend.analysis.definedness import BoundBeforeReads, Definedness
from autolax.frontend.analysis.liveness import Liveness
from autolax.frontend.transpile import syntax


def fn(source):
    return syntax.parse(textwrap.dedent(source)).body[0]


def stmt(source):
    return syntax.parse(textwrap.dedent(source)).body[0]


@pytest.mark.parametrize(
    "source,expected_reads,expected_writes",
    [
        ("x = y + z", {"y", "z"}, {"x"}),
        ("x += y", {"x", "y"}, {"x"}),
        ("a, (b, *c) = t", {"t"}, {"a", "b", "c"}),
        ("x[i] = v", {"x", "i", "v"}, set()),
        ("f = lambda a: a + b", {"b"}, {"f"}),
        ("ys = [y * k for y in xs if y > t]", {"xs", "k", "t"}, {"ys"}),
        ("if (m := g(x)) > 0: pass", {"g", "x"}, {"m"}),
        ("for i, x in enumerate(xs): s = s + x", {"enumerate", "xs", "s", "x"}, {"i", "x", "s"}),  # flow-insensitive
        ("import numpy as np", set(), {"np"}),
        ("with open(p) as fh: data = fh.read()", {"open", "p", "fh"}, {"fh", "data"}),
    ],
)
def test_reads_and_writes(source, expected_reads, expected_writes):
    node = stmt(source)
    assert reads(node) == expected_reads
    assert writes(node) == expected_writes


def test_nested_function_reads_its_free_names_only():
    node = stmt(
        """
        def inner(a):
            b = a + c
            return b + d
        """
    )
    assert reads(node) == {"c", "d"}
    assert writes(node) == {"inner"}


def test_local_names_exclude_global_and_nonlocal():
    node = fn(
        """
        def f(x):
            global g
            y = 1
            g = 2
            return x
        """
    )
    assert local_names(node) == {"x", "y"}


def test_liveness_of_loops_and_branches():
    node = fn(
        """
        def f(x, n):
            total = 0
            tmp = 5
            for i in range(n):
                tmp = x * i
                total = total + tmp
            if total > 0:
                y = total
            else:
                y = -total
            return y
        """
    )
    live = Liveness(node)
    loop, branch = node.body[2], node.body[3]
    assert live.header[loop] == {"total", "x"}  # `tmp` is written before read each iteration
    assert live.live_out[loop] == {"total"}
    assert live.entry[(branch, "body")] == {"total"}
    assert live.live_out[branch] == {"y"}


def test_liveness_of_while_test():
    node = fn(
        """
        def f(x):
            k = 0
            while x > 1 and k < 10:
                x = x / 2
                k += 1
            return x
        """
    )
    live = Liveness(node)
    assert live.header[node.body[1]] == {"x", "k"}
    assert live.live_out[node.body[1]] == {"x"}


def test_definedness():
    node = fn(
        """
        def f(x, xs):
            if x > 0:
                y = 1
                z = 1
            else:
                y = 2
            for v in xs:
                w = v
            return y
        """
    )
    defined = Definedness(node)
    branch, loop, ret = node.body
    assert defined.before[loop][0] == {"x", "xs", "y"}  # definitely
    assert defined.before[loop][1] == {"x", "xs", "y", "z"}  # maybe
    assert "w" not in defined.before[ret][0] and "w" in defined.before[ret][1]
    assert defined.assigned[(branch, "body")] == {"y", "z"}


def test_definedness_of_a_try_that_deletes():
    # A `del` in a `try`'s body, handler or `else` may have run before the code after the
    # `try` (and a handler / `finally`): the name is no longer certainly bound there. What
    # the body binds is certain in `else` (fuzz seed 7755).
    node = fn(
        """
        def f(x):
            a = b = c = d = 1
            try:
                del a
                e = 1
            except IndexError:
                h = b
                del b
            else:
                k = e
                del c
            finally:
                m = d
            return x
        """
    )
    defined = Definedness(node)
    _, block, ret = node.body
    handler_first = block.handlers[0].body[0]
    assert "a" not in defined.before[handler_first][0] and "b" in defined.before[handler_first][0]
    assert "e" in defined.before[block.orelse[0]][0] and "a" not in defined.before[block.orelse[0]][0]
    assert defined.before[block.finalbody[0]][0] == {"x", "d"}
    assert defined.before[ret][0] == {"x", "d", "m"}
    assert {"a", "b", "c", "e", "h", "k"} <= defined.before[ret][1]


def test_a_finally_reading_what_the_try_binds_may_find_it_unbound():
    # An exception may leave the `try` body before `r = 1`: Python's `finally` then raises
    # UnboundLocalError (fuzz seed 41114). Only `a`, bound before the `try`, is safe there.
    node = fn(
        """
        def f(x):
            a = 1
            try:
                if x > 0:
                    raise ValueError
                r = 1
            finally:
                v = a + r
            return v + r
        """
    )
    bound = BoundBeforeReads(node)
    assert "r" in bound.unsafe and "a" in bound.safe
    # Read after the `try` only, `r` is found bound (an exception leaves the function).
    node.body[1].finalbody = [syntax.parse("v = a").body[0]]
    assert "r" in BoundBeforeReads(node).safe


# ----------------------------------------------------------------------------- pass gating
def _features(src):
    from autolax.frontend.pipeline import features

    return features(syntax.parse(textwrap.dedent(src)).body[0])


def test_features_decide_which_passes_run():
    plain = _features("""
        def f(x, xs):
            y = x.w
            for v in xs:
                y = y + v
            def g(a):
                return a
            return y if x else -y
    """)
    assert {"For", "IfExp"} <= plain
    assert not plain & {"EarlyReturn", "Break", "Continue", "LoopElse", "Subscript.Store", "Attribute.Store", "append", "Compare.chain"}
    busy = _features("""
        def f(x, xs, p):
            out = []
            for v in xs:
                if v > 0:
                    continue
                while 0 < v < 1:
                    break
                else:
                    out.append(v)
                xs[0] = v
                p.w = v
                if v:
                    return v
            return out
    """)
    assert {"EarlyReturn", "Break", "Continue", "LoopElse", "Subscript.Store", "Attribute.Store", "append", "Compare.chain"} <= busy
    # a `return` that is not its function's last statement is early, also in nested functions
    assert "EarlyReturn" in _features("""
        def f(x):
            def g(a):
                if a:
                    return 1
                return 2
            return g(x)
    """)
