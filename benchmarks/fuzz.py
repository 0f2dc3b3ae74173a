"""Differential fuzzer: random Python programs run as plain Python and through autolax.

Each program is a function ``f(a, b, n, xs, ys)`` of two float32 scalars, an int32 scalar
and two length-4 arrays (float32, int32) that reads like code a person writes: nested
``if``/``elif``/``else``, ``for`` over ranges (static or argument-dependent bounds, negative
steps), over arrays, ``enumerate`` and ``zip``, ``while`` loops with a bounded counter,
``break``, ``continue``, early ``return``, ``for/while ... else``, ``and``/``or``/``not``,
chained comparisons, conditional expressions, ``x[i] = v`` / ``x[i] += v`` and list appends
followed by ``jnp.stack`` / ``len``.

The oracle is Python itself. Every program runs three ways on the same inputs:

* plain Python on NumPy values, with ``jnp`` bound to NumPy (so arrays stay mutable, as
  the source expects);
* eagerly through ``autolax.convert`` (``jnp`` is ``jax.numpy``) on the same NumPy values;
* traced as ``jax.jit`` traces it, on JAX arrays, with ``n`` static or traced; and
  under ``jax.vmap`` over all input sets at once (``--no-vmap`` skips it). Several
  programs are traced side by side; the result is either compiled with ``jax.jit`` or
  (``--interpret``, and most of CI) its jaxpr is evaluated one primitive at a time with
  ``cond`` / ``while`` / ``scan`` interpreted in Python, which skips XLA compilation.

Results must agree up to float32 rounding (dtype promotion is allowed). Any difference,
crash or warning is a failure, printed with the program and its inputs.

The generator only writes programs that the contract says must stage: every variable has
one type (a carried variable keeps its shape), is bound on every path before it is read,
loops terminate (bounded trip counts, ``while`` loops with a counter the body cannot
touch), arrays that are mutated in place are never aliased, and lists are appended to only
unconditionally, in loops with a static trip count and no ``break`` or ``return``.

Run it long::

    python -m benchmarks.fuzz --n 10000 --seed 1 [--interpret]
    python -m benchmarks.fuzz --show 1234      # print one program

``tests/test_fuzz.py`` runs a few hundred programs with fixed seeds.
"""

from __future__ import annotations

import argparse
import contextlib
import linecache
import random
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

K = 4  # length of the array arguments
PARAMS = (("a", "f"), ("b", "f"), ("n", "i"), ("xs", "F"), ("ys", "I"))
ELEMENT = {"F": "f", "I": "i"}

# Names by type, so every name keeps one type in a program (and the code reads naturally).
POOLS = {
    "f": ["s", "t", "u", "v", "w", "z", "g", "d"],
    "i": ["c", "m", "p", "q", "r"],
    "b": ["found", "flag", "done", "ok"],
    "F": ["buf", "acc", "vals"],
    "I": ["cnt", "pos"],
    "P": ["pts", "coef"],  # a Python list of three floats
    "D": ["box", "lims"],  # a dict of two floats
}
CONTAINER_ITEMS = {"P": ["0", "1", "2", "-1"], "D": ['"lo"', '"hi"']}
RANGE_VARS = ["i", "j", "l", "i2", "j2", "l2"]
ITEM_VARS = {"f": ["x", "y", "e", "x2", "y2"], "i": ["h", "h2", "h3"]}
COUNTERS = ["k", "k2", "k3", "k4"]
LISTS = ["out", "hist", "seen", "rows"]

F_LITERALS = ["0.0", "0.5", "1.0", "1.5", "2.0", "3.0", "-1.0", "-0.5", "-2.0", "0.25"]
I_LITERALS = ["0", "1", "2", "3", "-1", "4"]
COMPARE = ["<", "<=", ">", ">=", "==", "!="]

# Operator precedence levels (lower binds tighter); a child is parenthesised when its
# level is above what the context allows.
ATOM, UNARY, MUL, ADD, CMP, NOT, AND, OR, TERNARY = range(9)


@dataclass
class Scope:
    """What a statement may use at its position in the program."""

    vars: dict  # name -> type, bound on every path reaching this point
    readonly: frozenset = frozenset()  # `n`, loop targets, `while` counters
    frozen: frozenset = frozenset()  # arrays an enclosing loop iterates: no in-place mutation
    small: frozenset = frozenset()  # int names known to lie in [0, K)
    lists: frozenset = frozenset()  # lists being appended to by enclosing loops
    block: int = 0  # which block (a list is appended to again only in the block that made it)
    in_loop: bool = False  # `break` / `continue` allowed (innermost loop lets them)
    can_return: bool = True  # False inside a loop that appends to a list
    depth: int = 0  # nesting of compound statements
    loops: int = 0  # nesting of loops

    def child(self, **changes) -> "Scope":
        values = dict(self.__dict__)
        values["vars"] = dict(self.vars)
        values.update(changes)
        return Scope(**values)

    def of_type(self, t, writable=False):
        names = [n for n, ty in self.vars.items() if ty == t]
        if writable:
            names = [n for n in names if n not in self.readonly]
        return names


class Generator:
    """Writes one random program (see the module docstring for the rules it follows)."""

    def __init__(self, rng: random.Random, size: int = 12):
        self.rng = rng
        self.lines: list[str] = []
        self.budget = size  # statements left to write
        self.break_seen: list[bool] = []  # per enclosing loop: does its body `break`?
        self.returns: list[str] = []
        self.helper = False  # is there a `helper(a, b, n, xs, ys)` to call?
        self.blocks = 0
        self.ever: set[str] = set()  # every name given out by fresh_name so far
        self.max_depth, self.max_loops = 3, 2  # nesting of compound statements / of loops
        self.list_home: dict[str, int] = {}  # list name -> the block that made it

    # ------------------------------------------------------------------ helpers
    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def fresh_name(self, pool, scope: Scope, avoid=()) -> str | None:
        free = [n for n in pool if n not in scope.vars and n not in avoid]
        if not free:
            return None
        name = self.pick(free)
        self.ever.add(name)
        return name

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def wrap(expr, limit):
        text, level = expr
        return text if level <= limit else f"({text})"

    def literal(self, t):
        if t == "f":
            text = self.pick(F_LITERALS)
        elif t == "i":
            text = self.pick(I_LITERALS)
        else:
            text = self.pick(["True", "False"])
        return text, (UNARY if text.startswith("-") else ATOM)

    def index(self, scope: Scope):
        small = [n for n in scope.small if n in scope.vars]
        roll = self.rng.random()
        if small and roll < 0.45:
            return self.pick(small)
        if roll < 0.75:
            return str(self.rng.randint(-K, K - 1))
        return f"{self.wrap(self.expr('i', scope, 2), MUL)} % {K}"

    def atom(self, t, scope: Scope):
        names = scope.of_type(t)
        if t in ("f", "i"):
            arrays = scope.of_type("F" if t == "f" else "I")
            roll = self.rng.random()
            if names and roll < 0.5:
                return self.pick(names), ATOM
            if arrays and roll < 0.75:
                return f"{self.pick(arrays)}[{self.index(scope)}]", ATOM
            if t == "i" and roll < 0.8:
                sized = scope.of_type("F") + scope.of_type("I") + scope.of_type("P") + self.lists(scope)
                return f"len({self.pick(sized)})", ATOM
            lists = self.lists(scope, t)
            if lists and roll < 0.85:
                return f"{self.pick(lists)}[{self.pick(['0', '-1'])}]", ATOM
            containers = scope.of_type("P") + scope.of_type("D")
            if t == "f" and containers and roll < 0.9:
                c = self.pick(containers)
                return f"{c}[{self.pick(CONTAINER_ITEMS[scope.vars[c]])}]", ATOM
            return self.literal(t)
        if t == "b":
            if names and self.chance(0.4):
                return self.pick(names), ATOM
            return self.compare(scope, 1)
        return self.pick(names), ATOM  # arrays: `xs` and `ys` are always in scope

    @staticmethod
    def lists(scope, elems="fiF"):
        """Lists made by appends (not those an enclosing loop is appending to: a staged loop
        cannot show its body the items earlier iterations appended)."""
        return [x for x in scope.vars if scope.vars[x] in {"L" + e for e in elems} and x not in scope.lists]

    def compare(self, scope: Scope, depth: int):
        t = self.pick("ffi")
        left = self.wrap(self.expr(t, scope, depth + 1), ADD)
        right = self.wrap(self.expr(t, scope, depth + 1), ADD)
        text = f"{left} {self.pick(COMPARE)} {right}"
        if self.chance(0.2):  # chained: lo < x <= hi
            text += f" {self.pick(['<', '<='])} {self.wrap(self.expr(t, scope, depth + 1), ADD)}"
        return text, CMP

    def expr(self, t, scope: Scope, depth: int = 0):
        """A random expression of type ``t`` as ``(text, precedence level)``."""
        if depth >= 3 or self.chance(0.3 + 0.2 * depth):
            return self.atom(t, scope)
        return getattr(self, f"expr_{t}")(scope, depth + 1)

    def ternary(self, t, scope, depth):
        body = self.wrap(self.expr(t, scope, depth), OR)
        test = self.wrap(self.cond(scope, depth), OR)
        orelse = self.wrap(self.expr(t, scope, depth), TERNARY)
        return f"{body} if {test} else {orelse}", TERNARY

    def expr_f(self, scope, depth):
        e = lambda limit, t="f": self.wrap(self.expr(t, scope, depth), limit)  # noqa: E731
        arrays = scope.of_type("F")
        forms = [
            lambda: (f"{e(ADD)} + {e(MUL)}", ADD),
            lambda: (f"{e(ADD)} - {e(MUL)}", ADD),
            lambda: (f"{e(MUL)} * {self.pick(['0.5', '-1.0', '-0.5'])}", MUL),
            lambda: (f"{e(MUL)} / 2.0", MUL),
            lambda: (f"-{e(ATOM)}", UNARY),
            lambda: (f"abs({e(TERNARY)})", ATOM),
            lambda: (f"jnp.{self.pick(['maximum', 'minimum'])}({e(TERNARY)}, {e(TERNARY)})", ATOM),
            lambda: (f"{self.pick(arrays)}.{self.pick(['sum', 'max', 'min'])}()", ATOM),
            lambda: self.ternary("f", scope, depth),
            lambda: (f"{e(ADD)} + {e(MUL, 'i')}", ADD),
            lambda: (f"{e(MUL)} % 3.0", MUL),
            lambda: (f"{e(MUL, 'i')} / 2", MUL),
            lambda: (f"{e(OR)} or {e(AND)}", OR) if self.chance(0.3) else self.atom("f", scope),
        ]
        if self.helper:
            forms.append(lambda: (f"helper({self.call_args(scope, depth)})", ATOM))
        if self.lists(scope, "fF"):
            forms.append(lambda: (f"jnp.stack({self.pick(self.lists(scope, 'fF'))}).{self.pick(['sum', 'max'])}()", ATOM))
        if scope.of_type("P"):
            forms.append(lambda: (f"sum({self.pick(scope.of_type('P'))})", ATOM))
        return self.pick(forms)()

    def call_args(self, scope, depth):
        e = lambda t: self.wrap(self.expr(t, scope, depth + 1), TERNARY)  # noqa: E731
        return f"{e('f')}, {e('f')}, {e('i')}, {self.pick(scope.of_type('F'))}, {self.pick(scope.of_type('I'))}"

    def expr_i(self, scope, depth):
        e = lambda limit: self.wrap(self.expr("i", scope, depth), limit)  # noqa: E731
        arrays = scope.of_type("I")
        forms = [
            lambda: (f"{e(ADD)} + {e(MUL)}", ADD),
            lambda: (f"{e(ADD)} - {e(MUL)}", ADD),
            lambda: (f"{e(MUL)} // 2", MUL),
            lambda: (f"{e(MUL)} % 3", MUL),
            lambda: (f"-{e(ATOM)}", UNARY),
            lambda: (f"abs({e(TERNARY)})", ATOM),
            lambda: (f"{self.pick(arrays)}.{self.pick(['sum', 'max', 'min'])}()", ATOM),
            lambda: self.ternary("i", scope, depth),
        ]
        if self.lists(scope, "i"):
            forms.append(lambda: (f"jnp.stack({self.pick(self.lists(scope, 'i'))}).sum()", ATOM))
        return self.pick(forms)()

    def cond(self, scope, depth=0):
        """A condition (``b`` expression)."""
        return self.expr("b", scope, depth) if depth < 2 else self.atom("b", scope)

    def expr_b(self, scope, depth):
        e = lambda limit: self.wrap(self.cond(scope, depth), limit)  # noqa: E731
        forms = [
            lambda: self.compare(scope, depth),
            lambda: self.compare(scope, depth),
            lambda: (f"not {e(NOT)}", NOT),
            lambda: (f"{e(AND)} and {e(NOT)}", AND),
            lambda: (f"{e(OR)} or {e(AND)}", OR),
            lambda: (f"{self.pick(scope.of_type('F'))}.sum() > {self.wrap(self.expr('f', scope, depth), ADD)}", CMP),
            lambda: self.expr(self.pick("fi"), scope, depth + 1),  # truthiness: `if s:`
        ]
        return self.pick(forms)()

    def array_expr(self, t, scope, depth=1):
        """A new array of type ``t`` (never an alias of an existing one)."""
        names = scope.of_type(t)
        x = self.pick(names)
        elem = ELEMENT[t]
        s = lambda: self.wrap(self.expr(elem, scope, depth + 1), MUL)  # noqa: E731
        if t == "F":
            forms = [
                lambda: (f"{x} + {s()}", ADD),
                lambda: (f"{x} - {s()}", ADD),
                lambda: (f"{x} * {self.pick(['0.5', '-1.0'])}", MUL),
                lambda: (f"{x} + {self.pick(names)}", ADD),
                lambda: (f"{x} - {self.pick(names)}", ADD),
                lambda: (f"-{x}", UNARY),
                lambda: (f"{x}.copy()", ATOM),
            ]
        else:
            forms = [
                lambda: (f"{x} + {s()}", ADD),
                lambda: (f"{x} - {self.pick(names)}", ADD),
                lambda: (f"{x} * -1", MUL),
                lambda: (f"{x}.copy()", ATOM),
            ]
        if depth < 2 and self.chance(0.15):
            body = self.wrap(self.array_expr(t, scope, depth + 1), OR)
            orelse = self.wrap(self.array_expr(t, scope, depth + 1), TERNARY)
            return f"{body} if {self.wrap(self.cond(scope, 1), OR)} else {orelse}", TERNARY
        return self.pick(forms)()

    def value(self, t, scope):
        """An expression whose value may be stored in a variable of type ``t``."""
        e = lambda: self.wrap(self.expr("f", scope, 1), TERNARY)  # noqa: E731
        if t == "P":
            return f"[{e()}, {e()}, {e()}]"
        if t == "D":
            return f'{{"lo": {e()}, "hi": {e()}}}'
        if t in ("F", "I"):
            return self.array_expr(t, scope)[0]
        if t == "b":
            return self.cond(scope)[0]
        return self.expr(t, scope)[0]

    # ------------------------------------------------------------------ statements
    def program(self) -> str:
        """A program: ``f(a, b, n, xs, ys)``, sometimes after a ``helper`` with the same
        parameters that ``f`` calls (it returns one float and mutates no argument)."""
        if self.chance(0.25):
            helper = Generator(self.rng, self.rng.randint(2, 5))
            helper.max_depth, helper.max_loops = self.max_depth, self.max_loops
            helper.function("helper", ["f"], frozen=frozenset({"xs", "ys"}))
            self.lines = helper.lines + ["", ""]
            self.helper = True
        self.function("f", self.rng.sample(["f", "f", "i", "F", "b", "I", "P", "D"], self.rng.randint(1, 3)))
        return "\n".join(self.lines) + "\n"

    def function(self, name, returns, frozen=frozenset()):
        scope = Scope(vars=dict(PARAMS), readonly=frozenset({"n"}), frozen=frozen)
        self.returns = returns
        self.emit(0, f"def {name}(a, b, n, xs, ys):")
        inits = {
            "f": ["0.0", "0", "a", "a + b", "1.5", "xs[0]"],
            "i": ["0", "n", "1", "ys[0]", "len(xs)"],
            "b": ["False", "True", "a > b"],
            "F": ["xs.copy()", "xs * 0.0", "xs + a"],
            "I": ["ys.copy()", "ys * 0", "ys + 1"],
            "P": ["[a, b, 0.0]", "[0.0, 0.0, 0.0]", "[xs[0], a, 1.0]"],
            "D": ['{"lo": a, "hi": b}', '{"lo": 0.0, "hi": 1.0}'],
        }
        for t in self.rng.sample(["f", "f", "i", "b", "F", "I", "f", "i", "P", "D"], self.rng.randint(2, 5)):
            var = self.fresh_name(POOLS[t], scope)
            if var is not None:
                self.emit(1, f"{var} = {self.pick(inits[t])}")
                scope.vars[var] = t
        end = self.block(scope, 1, self.rng.randint(3, 7))
        if end is not None:
            self.emit(1, self.return_stmt(end))

    def return_stmt(self, scope: Scope) -> str:
        values = []
        for t in self.returns:
            names = scope.of_type(t)
            if names and self.chance(0.6):
                values.append(self.pick(names))
            elif t in ("F", "I"):
                values.append(self.wrap(self.array_expr(t, scope), TERNARY))
            elif t in ("P", "D"):
                values.append(self.value(t, scope))
            else:
                values.append(self.wrap(self.expr(t, scope) if t != "b" else self.cond(scope), TERNARY))
        return "return " + ", ".join(values)

    def block(self, scope: Scope, indent: int, n: int) -> Scope | None:
        """Writes up to ``n`` statements; returns the scope after them, or None if the block
        always jumps (``return`` / ``break`` / ``continue``)."""
        self.blocks += 1
        scope = scope.child(block=self.blocks)
        wrote = False
        for _ in range(n):
            if self.budget <= 0 and wrote:
                break
            self.budget -= 1
            scope = self.statement(scope, indent)
            wrote = True
            if scope is None:
                return None
        if not wrote:
            self.emit(indent, "pass")
        return scope

    def statement(self, scope: Scope, indent: int) -> Scope | None:
        nested = scope.depth < self.max_depth and self.budget > 1
        loops = nested and scope.loops < self.max_loops
        choices = [
            (self.assign, 3.0),
            (self.augassign, 2.0),
            (self.setitem, 2.0 if self.mutable_arrays(scope) else 0.0),
            (self.tuple_assign, 0.6),
            (self.if_stmt, 2.5 if nested else 0.0),
            (self.for_range, 1.5 if loops else 0.0),
            (self.for_array, 1.2 if loops else 0.0),
            (self.while_stmt, 1.0 if loops else 0.0),
            (self.append_loop, 0.8 if loops else 0.0),
            (self.jump, 1.2 if scope.in_loop else 0.0),
            (self.early_return, 0.6 if scope.can_return else 0.0),
        ]
        fns, weights = zip(*choices)
        return self.rng.choices(fns, weights)[0](scope, indent)

    def mutable_arrays(self, scope):
        """Arrays and containers that may be mutated in place here."""
        names = scope.of_type("F", True) + scope.of_type("I", True) + scope.of_type("P", True) + scope.of_type("D", True)
        return [n for n in names if n not in scope.frozen]

    def assign(self, scope, indent):
        t = self.pick("fffiibFIPD")
        targets = scope.of_type(t, writable=True)
        if t in ("F", "I", "P", "D"):
            targets = [x for x in targets if x not in scope.frozen]
        if not targets or self.chance(0.3):
            name = self.fresh_name(POOLS[t], scope)
            if name is None:
                return self.augassign(scope, indent)
        else:
            name = self.pick(targets)
        self.emit(indent, f"{name} = {self.value(t, scope)}")
        scope.vars[name] = t
        return scope

    def augassign(self, scope, indent):
        t = self.pick("ffiiF")
        targets = scope.of_type(t, writable=True)
        if t == "F":
            targets = [x for x in targets if x not in scope.frozen]
        if not targets:
            return self.assign_first(scope, indent)
        name = self.pick(targets)
        op = self.pick(["+=", "+=", "-="])
        if t == "F":
            rhs = self.pick([self.expr("f", scope)[0], self.pick(scope.of_type("F"))])
            if self.chance(0.2):
                op, rhs = "*=", self.pick(["0.5", "-1.0"])
        else:
            rhs = self.expr(t, scope)[0]
            if self.chance(0.15):
                op, rhs = self.pick([("*=", "0.5"), ("*=", "-1.0"), ("%=", "3.0")] if t == "f" else [("//=", "2"), ("%=", "3")])
        self.emit(indent, f"{name} {op} {rhs}")
        return scope

    def assign_first(self, scope, indent):
        name = self.fresh_name(POOLS["f"], scope)
        if name is None:
            self.emit(indent, "pass")
            return scope
        self.emit(indent, f"{name} = {self.value('f', scope)}")
        scope.vars[name] = "f"
        return scope

    def setitem(self, scope, indent):
        arrays = self.mutable_arrays(scope)
        if not arrays:
            return self.assign(scope, indent)
        name = self.pick(arrays)
        if scope.vars[name] in CONTAINER_ITEMS:
            key = self.pick(CONTAINER_ITEMS[scope.vars[name]])
            self.emit(indent, f"{name}[{key}] {self.pick(['=', '+=', '-='])} {self.expr('f', scope)[0]}")
            return scope
        elem = ELEMENT[scope.vars[name]]
        op = self.pick(["=", "=", "+=", "-="])
        index = self.pick(["1:3", ":2", "2:", "::2", "-2:", "1:"]) if self.chance(0.2) else self.index(scope)
        self.emit(indent, f"{name}[{index}] {op} {self.expr(elem, scope)[0]}")
        return scope

    def tuple_assign(self, scope, indent):
        """``s, t = t, s`` or ``s, c = <float>, <int>``."""
        scalars = [x for x in scope.vars if scope.vars[x] in ("f", "i", "b") and x not in scope.readonly]
        if len(scalars) < 2:
            return self.assign(scope, indent)
        x, y = self.rng.sample(scalars, 2)
        if scope.vars[x] == scope.vars[y] and self.chance(0.5):
            self.emit(indent, f"{x}, {y} = {y}, {x}")
        else:
            self.emit(indent, f"{x}, {y} = {self.value(scope.vars[x], scope)}, {self.value(scope.vars[y], scope)}")
        return scope

    def if_stmt(self, scope, indent):
        inner = scope.child(depth=scope.depth + 1)
        self.emit(indent, f"if {self.cond(scope)[0]}:")
        ends = [self.block(inner, indent + 1, self.rng.randint(1, 3))]
        while self.chance(0.3) and self.budget > 0:
            self.emit(indent, f"elif {self.cond(scope)[0]}:")
            ends.append(self.block(inner, indent + 1, self.rng.randint(1, 3)))
        if self.chance(0.6) and self.budget > 0:
            self.emit(indent, "else:")
            ends.append(self.block(inner, indent + 1, self.rng.randint(1, 3)))
        else:
            ends.append(scope)  # falling through without taking a branch
        return self.merge(scope, ends)

    @staticmethod
    def merge(scope, ends):
        """The scope after several paths join: names bound (with one type) on every path
        that reaches the join. None if no path does."""
        live = [e for e in ends if e is not None]
        if not live:
            return None
        out = scope.child()
        out.vars = {n: t for n, t in live[0].vars.items() if all(e.vars.get(n) == t for e in live[1:])}
        return out

    def loop_body(self, scope, indent, inner: Scope, orelse: bool, trips=None, targets=(), known=()):
        """Writes a loop body (and maybe an ``else``); returns the scope after the loop.

        A loop with a static trip count of at least one leaves its targets, and a variable
        its body assigns first thing, bound after it (Python keeps the last values). Only in
        the function's own block, and only names never bound before (``known``): autolax's
        analysis must assume a loop may run zero times, so where a traced ``if`` joins a
        path that skips the loop (a jump, or an earlier binding on one side) the name counts
        as possibly unbound, which is an error by the contract.
        """
        after = scope.child()
        if trips and scope.depth == 0:
            for var in targets:
                if var not in known:
                    after.vars[var] = inner.vars[var]
            t = self.pick("fi")
            var = self.fresh_name(POOLS[t], inner) if self.chance(0.3) else None
            if var is not None:
                self.emit(indent + 1, f"{var} = {self.value(t, inner)}")
                inner.vars[var] = t
                if var not in known:
                    after.vars[var] = t
        self.break_seen.append(False)
        self.block(inner, indent + 1, self.rng.randint(1, 4))
        broke = self.break_seen.pop()
        if orelse and self.chance(0.25) and self.budget > 0:
            self.emit(indent, "else:")
            end = self.block(after.child(depth=scope.depth + 1), indent + 1, self.rng.randint(1, 2))
            if end is None and not broke:
                return None
        return after

    def loop_scope(self, scope, **changes):
        return scope.child(**{"depth": scope.depth + 1, "loops": scope.loops + 1, "in_loop": True, **changes})

    def range_args(self, scope):
        """``range(...)`` arguments, whether every index lies in [0, K), and the trip count
        if it is static."""
        ints = [x for x in scope.of_type("i") if x not in ("n",)]
        lo, hi = self.rng.randint(0, 2), self.rng.randint(2, K)
        stop = self.rng.randint(0, K)
        forms = [
            (f"{stop}", True, stop),
            (f"{lo}, {hi}", True, len(range(lo, hi))),
            ("len(xs)", True, K),
            (f"{K - 1}, -1, -1", True, K),
            (f"{K - 1}, 0, -2", True, len(range(K - 1, 0, -2))),
            ("n", False, None),
            ("n + 1", False, None),
            ("1, n", False, None),
            ("n, 0, -1", False, None),
            ("n - 1, -1, -2", False, None),
            (f"{self.rng.randint(0, 3)}, n, 2", False, None),
        ]
        if ints:
            x = self.pick(ints)
            forms.append((f"{x} % {K}", True, None))
            forms.append((f"{K - 1}, {x} % {K} - 1, -1", True, None))
        return self.pick(forms)

    def for_range(self, scope, indent):
        known = set(self.ever)
        var = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
        if var is None:
            return self.assign(scope, indent)
        args, small, trips = self.range_args(scope)
        self.emit(indent, f"for {var} in range({args}):")
        inner = self.loop_scope(scope, readonly=scope.readonly | {var}, small=(scope.small | {var}) if small else scope.small)
        inner.vars[var] = "i"
        if self.chance(0.08):  # Python rebinds the target at the next iteration anyway
            self.emit(indent + 1, f"{var} = {var} + 1")
            inner.small = inner.small - {var}
        return self.loop_body(scope, indent, inner, orelse=True, trips=trips, targets=(var,), known=known)

    def iteration(self, scope):
        """``for`` targets and iterable over arrays: (header text, {name: type}, small, iterated)."""
        arrays = scope.of_type("F") + scope.of_type("I")
        arr = self.pick(arrays)
        t = ELEMENT[scope.vars[arr]]
        item = self.fresh_name(ITEM_VARS[t], scope, avoid=scope.readonly)
        idx = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
        other = self.pick(arrays)
        ot = ELEMENT[scope.vars[other]]
        item2 = self.fresh_name(ITEM_VARS[ot], scope, avoid=set(scope.readonly) | {item})
        if item is None or idx is None or item2 is None:
            return None
        roll = self.rng.random()
        lists = self.lists(scope, "fi")
        if lists and roll < 0.3:
            lst = self.pick(lists)
            lt = scope.vars[lst][1]
            item = self.fresh_name(ITEM_VARS[lt], scope, avoid=scope.readonly)
            if item is not None:
                if self.chance(0.5):
                    return f"{item} in {lst}", {item: lt}, set(), {lst}
                return f"{idx}, {item} in enumerate({lst})", {idx: "i", item: lt}, set(), {lst}
        containers = scope.of_type("P") + scope.of_type("D")
        if containers and 0.3 <= roll < 0.4:
            c = self.pick(containers)
            items = f"{c}.values()" if scope.vars[c] == "D" else c
            return f"{item} in {items}", {item: "f"}, set(), {c}
        if roll > 0.93 and t == "f":
            values = ", ".join(self.wrap(self.expr("f", scope, 1), TERNARY) for _ in range(self.rng.randint(2, 3)))
            return f"{item} in ({values})", {item: "f"}, set(), set()
        if roll < 0.4:
            return f"{item} in {arr}", {item: t}, set(), {arr}
        if roll < 0.65:
            start = self.pick(["", "", ", 1"])
            return f"{idx}, {item} in enumerate({arr}{start})", {idx: "i", item: t}, ({idx} if not start else set()), {arr}
        if roll < 0.9:
            return f"{item}, {item2} in zip({arr}, {other})", {item: t, item2: ot}, set(), {arr, other}
        return (
            f"{idx}, ({item}, {item2}) in enumerate(zip({arr}, {other}))",
            {idx: "i", item: t, item2: ot},
            {idx},
            {arr, other},
        )

    def for_array(self, scope, indent):
        known = set(self.ever)
        it = self.iteration(scope)
        if it is None:
            return self.assign(scope, indent)
        header, targets, small, iterated = it
        self.emit(indent, f"for {header}:")
        inner = self.loop_scope(
            scope,
            readonly=scope.readonly | set(targets),
            small=scope.small | small,
            frozen=scope.frozen | iterated,
        )
        inner.vars.update(targets)
        trips = None if iterated & set(self.lists(scope)) or not iterated else K
        return self.loop_body(scope, indent, inner, orelse=True, trips=trips, targets=tuple(targets), known=known)

    def while_stmt(self, scope, indent):
        k = self.fresh_name(COUNTERS, scope)
        if k is None:
            return self.assign(scope, indent)
        bound = self.pick([str(self.rng.randint(0, 5)), "n"])
        roll = self.rng.random()
        inner_ro = scope.readonly | {k}
        if roll < 0.2:  # `while True` ended by a `break` on the counter
            self.emit(indent, f"{k} = 0")
            self.emit(indent, "while True:")
            self.emit(indent + 1, f"{k} += 1")
            self.emit(indent + 1, f"if {k} > {bound}:")
            self.emit(indent + 2, "break")
            inner = self.loop_scope(scope, readonly=inner_ro)
            inner.vars[k] = "i"
            self.break_seen.append(True)
            self.block(inner, indent + 1, self.rng.randint(1, 3))
            self.break_seen.pop()
            out = scope.child()
            out.vars[k] = "i"
            return out
        if roll < 0.4:  # counting down
            self.emit(indent, f"{k} = {bound}")
            test = f"{k} > 0"
            step = f"{k} -= 1"
        else:
            self.emit(indent, f"{k} = 0")
            test = f"{k} < {bound}"
            step = f"{k} += 1"
        if self.chance(0.5):
            test += f" and {self.wrap(self.cond(scope, 1), NOT)}"
        self.emit(indent, f"while {test}:")
        self.emit(indent + 1, step)
        inner = self.loop_scope(scope, readonly=inner_ro)
        inner.vars[k] = "i"
        after = scope.child()
        after.vars[k] = "i"
        end = self.loop_body(after, indent, inner, orelse=True)
        return end

    def append_loop(self, scope, indent):
        again = [x for x in self.lists(scope) if self.list_home.get(x) == scope.block]
        lst = self.pick(again) if again and self.chance(0.5) else self.fresh_name(LISTS, scope, avoid=scope.lists)
        if lst is None:
            return self.assign(scope, indent)
        roll = self.rng.random()
        if roll < 0.5:
            var = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
            if var is None:
                return self.assign(scope, indent)
            bounds = self.pick([f"{self.rng.randint(1, K)}", "len(xs)", f"{K - 1}, -1, -1", "1, 3"])
            header, targets, small, iterated = f"{var} in range({bounds})", {var: "i"}, {var}, set()
        else:
            it = self.iteration(scope)
            if it is None:
                return self.assign(scope, indent)
            header, targets, small, iterated = it
            if lst in iterated:
                return self.assign(scope, indent)
        if lst in scope.vars:
            elem = scope.vars[lst][1]
        else:
            elem = self.pick("ffiF")
            self.emit(indent, f"{lst} = []")
        self.emit(indent, f"for {header}:")
        inner = self.loop_scope(
            scope,
            readonly=scope.readonly | set(targets),
            small=scope.small | small,
            frozen=scope.frozen | iterated,
            in_loop=False,
            can_return=False,
            lists=scope.lists | {lst},
        )
        inner.vars.update(targets)
        before = self.rng.randint(0, 2)
        end = self.block(inner, indent + 1, before) if before else inner
        item = self.wrap(self.array_expr("F", end), TERNARY) if elem == "F" else self.expr(elem, end)[0]
        self.emit(indent + 1, f"{lst}.append({item})")
        if self.chance(0.4):
            self.block(end, indent + 1, 1)
        # use the list right after the loop
        out = scope.child()
        out.vars[lst] = "L" + elem
        self.list_home[lst] = scope.block
        targets_f = out.of_type("f", writable=True)
        targets_i = out.of_type("i", writable=True)
        uses = []  # each a list of lines (indented relative to the loop)
        if elem == "F":
            if targets_f:
                uses.append([f"{self.pick(targets_f)} += jnp.stack({lst}).sum()"])
                uses.append([f"{self.pick(targets_f)} += {lst}[-1].sum()"])
            arrays = [x for x in self.mutable_arrays(out) if out.vars[x] == "F"]
            if arrays:
                a = self.pick(arrays)
                uses.append([f"{a} = {a} + jnp.stack({lst})[{self.pick(['0', '-1'])}]"])
        else:
            acc = targets_f if elem == "f" or not targets_i else targets_i
            if acc:
                a = self.pick(acc)
                uses.append([f"{a} += jnp.stack({lst}).{self.pick(['sum', 'max'])}()"])
                uses.append([f"{a} += {lst}[{self.pick(['0', '-1'])}]"])
                v = self.fresh_name(ITEM_VARS[elem], out, avoid=out.readonly)
                if v is not None:
                    uses.append([f"for {v} in {lst}:", f"    {a} += {v}"])
        if targets_i:
            uses.append([f"{self.pick(targets_i)} += len({lst})"])
        name = self.fresh_name(POOLS["i"], out)
        if not uses or (name is not None and self.chance(0.15)):
            name = name or "size"
            uses = [[f"{name} = len({lst})"]]
            out.vars[name] = "i"
        for use in self.rng.sample(uses, min(len(uses), self.rng.randint(1, 2))):
            for line in use:
                self.emit(indent, line)
        return out

    def jump(self, scope, indent):
        word = self.pick(["break", "continue"])
        if word == "break":
            self.break_seen[-1] = True
        if self.chance(0.8):
            self.emit(indent, f"if {self.cond(scope)[0]}:")
            self.emit(indent + 1, word)
            return scope
        self.emit(indent, word)
        return None

    def early_return(self, scope, indent):
        if self.chance(0.85):
            self.emit(indent, f"if {self.cond(scope)[0]}:")
            self.emit(indent + 1, self.return_stmt(scope))
            return scope
        self.emit(indent, self.return_stmt(scope))
        return None


def generate(seed: int, big: bool = False) -> str:
    """The source of program number ``seed`` (deterministic). ``big``: programs about twice
    as long, nested one level deeper."""
    rng = random.Random(seed)
    generator = Generator(rng, rng.randint(12, 40) if big else rng.randint(4, 14))
    if big:
        generator.max_depth, generator.max_loops = 4, 3
    return generator.program()


# ----------------------------------------------------------------------------- inputs
def make_inputs(rng: random.Random, n_static: int | None = None):
    """One set of arguments ``(a, b, n, xs, ys)`` as NumPy values (float32 / int32)."""
    halves = lambda: np.float32(rng.randint(-8, 8) / 2)  # noqa: E731 - exact in float32
    n = n_static if n_static is not None else rng.randint(-1, 6)
    xs = np.array([rng.randint(-8, 8) / 2 for _ in range(K)], np.float32)
    ys = np.array([rng.randint(-3, 5) for _ in range(K)], np.int32)
    return (halves(), halves(), np.int32(n), xs, ys)


# ----------------------------------------------------------------------------- running
@dataclass
class Program:
    seed: int
    source: str
    fn: object = None  # `jnp` is jax.numpy: the function autolax converts
    python_fn: object = None  # `jnp` is numpy: the oracle


@dataclass
class Failure:
    program: Program
    mode: str  # "python" (the generator's fault), "eager", "jit"
    inputs: tuple | None
    message: str

    def report(self) -> str:
        args = ""
        if self.inputs is not None:
            args = "f(" + ", ".join(_show(x) for x in self.inputs) + ")"
        return (
            f"--- program {self.program.seed} [{self.mode}] ---\n{self.program.source}"
            f"inputs: {args}\n{self.message.rstrip()}\n"
        )


def _show(x) -> str:
    if isinstance(x, np.ndarray):
        return f"np.array({x.tolist()}, np.{x.dtype})"
    return f"np.{type(x).__name__}({x.item()!r})" if isinstance(x, np.generic) else repr(x)


def load(program: Program):
    """Compiles the program's source as a file ``<fuzz N>`` (registered in ``linecache``, so
    autolax can read its source and tracebacks show its lines), twice: ``program.fn`` sees
    ``jnp`` as ``jax.numpy`` (the function autolax converts), ``program.python_fn`` sees
    NumPy instead (the oracle: a NumPy array stays mutable after ``jnp.maximum`` etc.)."""
    import jax.numpy as jnp

    filename = f"<fuzz {program.seed}>"
    linecache.cache[filename] = (len(program.source), None, program.source.splitlines(True), filename)
    code = compile(program.source, filename, "exec")
    for attr, module in (("fn", jnp), ("python_fn", np)):
        namespace = {"jnp": module, "np": np, "__name__": f"fuzz_{program.seed}"}
        exec(code, namespace)
        setattr(program, attr, namespace["f"])
    return program.fn


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def compare(expected, got, rtol=1e-5, atol=1e-5) -> str | None:
    """None if ``got`` equals ``expected`` up to float32 rounding (and dtype promotion), else
    a description of the difference."""
    import jax

    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    g_leaves, g_tree = jax.tree_util.tree_flatten(got)
    if len(e_leaves) != len(g_leaves) or e_tree != g_tree:
        return f"structure differs: expected {expected!r}, got {got!r}"
    for i, (e, g) in enumerate(zip(e_leaves, g_leaves)):
        e, g = np.asarray(e), np.asarray(g)
        if e.shape != g.shape:
            return f"output {i}: shape {g.shape} instead of {e.shape} (expected {e!r}, got {g!r})"
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        if not np.allclose(g64, e64, rtol=rtol, atol=atol, equal_nan=True):
            return f"output {i}: expected {e.tolist()!r}, got {g.tolist()!r}"
    return None


def _error_text(exc) -> str:
    text = "".join(traceback.format_exception(exc, limit=-8))
    return text[-4000:]


@contextlib.contextmanager
def _record_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield caught


def _autolax_warnings(caught):
    import autolax

    kinds = (autolax.UnrolledLoopWarning, getattr(autolax, "NoSourceWarning", Warning))
    return [w for w in caught if issubclass(w.category, UserWarning) and (issubclass(w.category, kinds) or "autolax" in str(w.filename) or "fuzz" in str(w.filename))]


def check_python(program: Program, inputs_list):
    """Expected results (plain Python) per input set, or a Failure if the program itself
    misbehaves (a generator bug: it must only write valid, terminating programs)."""
    expected = []
    for inputs in inputs_list:
        with np.errstate(all="raise"):
            try:
                expected.append(program.python_fn(*_copy(inputs)))
            except (FloatingPointError, OverflowError):  # values outgrew float32 / int32
                return None
            except Exception as exc:  # noqa: BLE001 - any error is the generator's fault
                return Failure(program, "python", inputs, _error_text(exc))
    if _too_large(expected):
        return None
    return expected


def _too_large(tree) -> bool:
    """Values beyond float32's exact integers: rounding (or int32 wrap-around) makes a
    comparison with Python's wider numbers meaningless."""
    import jax

    return any(np.any(np.abs(np.asarray(x, np.float64)) > 2.0**24) for x in jax.tree_util.tree_leaves(tree))


def check_eager(program: Program, inputs_list, expected, jax_arrays: bool = False) -> Failure | None:
    """``autolax.convert(fn)`` run eagerly on the inputs (NumPy values, or concrete JAX
    arrays with ``jax_arrays``: then ``x[i] = v`` takes the functional ``.at`` path)."""
    import jax.numpy as jnp
    import autolax

    mode = "eager-jax" if jax_arrays else "eager"
    for inputs, want in zip(inputs_list, expected):
        args = [jnp.asarray(x) for x in inputs] if jax_arrays else _copy(inputs)
        with _record_warnings() as caught:
            try:
                got = autolax.convert(program.fn)(*args)
            except Exception as exc:  # noqa: BLE001
                return Failure(program, mode, inputs, _error_text(exc))
        bad = _autolax_warnings(caught)
        if bad:
            return Failure(program, mode, inputs, f"warning: {bad[0].category.__name__}: {bad[0].message}")
        diff = compare(want, got)
        if diff:
            return Failure(program, mode, inputs, diff)
    return None


def check_jit(
    programs, inputs_list, expected, static_n: bool, compile: bool = True, vmap: bool = False, weak: bool = False
):
    """Runs ``programs`` traced together (their converted functions side by side, as
    ``jax.jit`` traces them) on each input set; returns Failures. ``compile``: run the
    trace with ``jax.jit`` (XLA); else evaluate its jaxpr with ``evaluate`` (no XLA
    compilation, several times faster). ``vmap``: trace ``jax.vmap`` of the programs once,
    over all input sets stacked, instead. ``weak``: pass the scalars as Python numbers
    (weakly typed when traced). A batch that fails to trace is retried one program at a
    time, to find the culprit."""
    import jax
    import jax.numpy as jnp
    import autolax

    def run(batch):
        converted = [autolax.convert(p.fn) for p in batch]

        def together(*args):
            return [fn(*args) for fn in converted]

        static = (2,) if static_n else ()
        results = []
        with _record_warnings() as caught:
            arg_sets = []
            for inputs in inputs_list:
                args = [jnp.asarray(x) for x in inputs]
                if weak and not vmap:
                    args[:3] = [float(inputs[0]), float(inputs[1]), int(inputs[2])]
                if static_n:
                    args[2] = int(inputs[2])
                arg_sets.append(args)
            if vmap:
                n = arg_sets[0][2]

                def batched(a, b, *rest):
                    return together(a, b, *(((n,) + rest) if static_n else rest))

                stacked = [jnp.stack([args[i] for args in arg_sets]) for i in range(5) if i not in static]
                if compile:
                    out = jax.block_until_ready(jax.jit(jax.vmap(batched))(*stacked))
                else:
                    closed, shape = jax.make_jaxpr(jax.vmap(batched), return_shape=True)(*stacked)
                    out = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), evaluate(closed, *stacked))
                results = [jax.tree_util.tree_map(lambda x, k=k: x[k], out) for k in range(len(arg_sets))]
            elif compile:
                jitted = jax.jit(together, static_argnums=static)
                for args in arg_sets:
                    results.append(jax.block_until_ready(jitted(*args)))
            else:
                # n is the same in every input set when it is static: trace once.
                closed, shape = jax.make_jaxpr(together, static_argnums=static, return_shape=True)(*arg_sets[0])
                tree = jax.tree_util.tree_structure(shape)
                for args in arg_sets:
                    dynamic = [a for i, a in enumerate(args) if i not in static]
                    results.append(jax.tree_util.tree_unflatten(tree, evaluate(closed, *dynamic)))
        return results, _autolax_warnings(caught)

    mode = _mode(compile, vmap)
    retry = lambda: [  # noqa: E731 - one program at a time, each failure blamed on its own program
        f
        for i, p in enumerate(programs)
        for f in _check_jit_safely([p], inputs_list, [[e[i]] for e in expected], static_n, compile, vmap, weak)
    ]
    try:
        results, bad = run(programs)
    except Exception:  # noqa: BLE001 - find which program fails
        if len(programs) == 1:
            raise
        return retry()
    if bad and len(programs) > 1:
        return retry()
    failures = []
    for i, p in enumerate(programs):
        if bad:
            failures.append(Failure(p, mode, inputs_list[0], f"warning: {bad[0].category.__name__}: {bad[0].message}"))
            continue
        for inputs, got, want in zip(inputs_list, results, expected):
            diff = compare(want[i], got[i])
            if diff:
                failures.append(Failure(p, mode, inputs, diff + _how(static_n, weak and not vmap)))
                break
    return failures


# ----------------------------------------------------------------------------- jaxprs
MAX_WHILE_ITERATIONS = 10_000
_CALLS = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"}


def evaluate(closed, *args):
    """The outputs of a closed jaxpr on concrete ``args``, computed one primitive at a time
    (each dispatched eagerly) with ``cond``, ``while`` and ``scan`` interpreted in Python --
    the reference semantics of the lax control-flow primitives, without compiling the
    whole program."""
    return _eval(closed.jaxpr, closed.consts, args)


def _eval(jaxpr, consts, args):
    import jax.numpy as jnp
    from jax.extend.core import Literal

    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        inputs = [read(v) for v in eqn.invars]
        name, params = eqn.primitive.name, eqn.params
        if name == "cond":
            index, *operands = inputs
            branches = params["branches"]
            branch = branches[min(max(int(index), 0), len(branches) - 1)]
            outputs = _eval_closed(branch, operands)
        elif name == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            cond_consts, body_consts, carry = inputs[:nc], inputs[nc : nc + nb], inputs[nc + nb :]
            for _ in range(MAX_WHILE_ITERATIONS):
                pred = _eval_closed(params["cond_jaxpr"], cond_consts + carry)[0]
                if not bool(jnp.any(pred)):
                    break
                new = _eval_closed(params["body_jaxpr"], body_consts + carry)
                if jnp.ndim(pred):  # a batched predicate (vmap): only its true rows step
                    new = [jnp.where(pred.reshape(pred.shape + (1,) * (jnp.ndim(x) - pred.ndim)), x, c) for x, c in zip(new, carry)]
                carry = new
            else:  # every generated loop ends far sooner: the lowering is wrong
                raise RuntimeError(f"a lax.while_loop ran {MAX_WHILE_ITERATIONS} iterations without ending")
            outputs = carry
        elif name == "scan":
            n_consts, n_carry, length = params["num_consts"], params["num_carry"], params["length"]
            body = params["jaxpr"]
            consts_, carry, xs = inputs[:n_consts], inputs[n_consts : n_consts + n_carry], inputs[n_consts + n_carry :]
            steps = range(length - 1, -1, -1) if params["reverse"] else range(length)
            ys = []
            for k in steps:
                out = _eval_closed(body, consts_ + carry + [x[k] for x in xs])
                carry, y = out[:n_carry], out[n_carry:]
                ys.append(y)
            if params["reverse"]:
                ys.reverse()
            y_avals = body.out_avals[n_carry:]
            stacked = [
                jnp.stack([y[j] for y in ys]) if ys else jnp.zeros((0,) + aval.shape, aval.dtype)
                for j, aval in enumerate(y_avals)
            ]
            outputs = carry + stacked
        elif name in _CALLS and ("jaxpr" in params or "call_jaxpr" in params):
            outputs = _eval_closed(params.get("jaxpr", params.get("call_jaxpr")), inputs)
        else:
            outputs = eqn.primitive.bind(*inputs, **params)
            if not eqn.primitive.multiple_results:
                outputs = [outputs]
        for var, value in zip(eqn.outvars, outputs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _eval_closed(fn, args):
    if hasattr(fn, "consts"):  # a ClosedJaxpr
        return _eval(fn.jaxpr, fn.consts, list(args))
    return _eval(fn, [], list(args))


def _how(static_n, weak):
    notes = (["n static"] if static_n else []) + (["scalars passed as Python numbers"] if weak else [])
    return f"  ({', '.join(notes)})" if notes else ""


def _mode(compile, vmap):
    return ("vmap" if vmap else "jit") + ("" if compile else "-interpreted")


def _check_jit_safely(programs, inputs_list, expected, static_n, compile=True, vmap=False, weak=False):
    try:
        return check_jit(programs, inputs_list, expected, static_n, compile, vmap, weak)
    except Exception as exc:  # noqa: BLE001 - a single program's trace/run failed
        p = programs[0]
        mode = _mode(compile, vmap)
        return [Failure(p, mode, inputs_list[0], _error_text(exc) + _how(static_n, weak and not vmap))]


@dataclass
class Summary:
    programs: int = 0
    invalid: int = 0  # the generator wrote a program plain Python rejects
    skipped: int = 0  # values outgrew float32 / int32 in the Python run (nothing to compare)
    failures: list = field(default_factory=list)
    seconds: float = 0.0

    def text(self) -> str:
        kinds = {}
        for f in self.failures:
            kinds[f.mode] = kinds.get(f.mode, 0) + 1
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) or "none"
        return (
            f"{self.programs} programs in {self.seconds:.1f} s ({self.skipped} skipped: values beyond float32); "
            f"failures: {len(self.failures)} ({detail})"
        )


def run(
    seeds,
    *,
    batch: int = 8,
    inputs_per_program: int = 3,
    compile: bool = True,
    vmap: bool = True,
    big: bool = False,
    on_failure=None,
) -> Summary:
    """Generates, runs and checks the programs with the given seeds (``compile``: see
    ``check_jit``; ``vmap``: also check ``jax.vmap`` of each batch over its input sets;
    ``big``: see ``generate``)."""
    start = time.perf_counter()
    summary = Summary()
    seeds = list(seeds)
    for first in range(0, len(seeds), batch):
        group = seeds[first : first + batch]
        rng = random.Random(group[0] * 7919 + 17)
        static_n = rng.random() < 0.3
        n_static = rng.randint(0, 5) if static_n else None
        weak = rng.random() < 0.3  # scalars passed to jit as Python numbers
        eager_jax = rng.random() < 0.25  # the eager run also on concrete JAX arrays
        inputs_list = [make_inputs(rng, n_static) for _ in range(inputs_per_program)]
        ready, expected = [], []
        for seed in group:
            program = Program(seed, generate(seed, big))
            load(program)
            summary.programs += 1
            result = check_python(program, inputs_list)
            if result is None:
                summary.skipped += 1
                continue
            if isinstance(result, Failure):
                summary.failures.append(result)
                summary.invalid += 1
                if on_failure:
                    on_failure(result)
                continue
            failure = check_eager(program, inputs_list, result)
            if failure is None and eager_jax:
                failure = check_eager(program, inputs_list, result, jax_arrays=True)
            if failure is not None:
                summary.failures.append(failure)
                if on_failure:
                    on_failure(failure)
                continue
            ready.append(program)
            expected.append(result)
        if ready:
            per_input = [[e[k] for e in expected] for k in range(len(inputs_list))]
            failures = _check_jit_safely(ready, inputs_list, per_input, static_n, compile, weak=weak)
            if vmap:
                failed = {f.program.seed for f in failures}
                rest = [(k, p) for k, p in enumerate(ready) if p.seed not in failed]
                if rest:
                    per_input_rest = [[e[k] for k, _ in rest] for e in per_input]
                    failures += _check_jit_safely([p for _, p in rest], inputs_list, per_input_rest, static_n, compile, vmap=True)
            for failure in failures:
                summary.failures.append(failure)
                if on_failure:
                    on_failure(failure)
        for seed in group:
            linecache.cache.pop(f"<fuzz {seed}>", None)
    summary.seconds = time.perf_counter() - start
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of programs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--batch", type=int, default=8, help="programs compiled together (default 8)")
    parser.add_argument(
        "--interpret",
        action="store_true",
        help="evaluate the traced jaxprs primitive by primitive instead of compiling them (faster)",
    )
    parser.add_argument("--no-vmap", action="store_true", help="skip the jax.vmap check")
    parser.add_argument("--big", action="store_true", help="larger, more deeply nested programs")
    parser.add_argument("--show", type=int, metavar="SEED", help="print the program with this seed and exit")
    parser.add_argument("--max-failures", type=int, default=50, help="stop after this many failures")
    args = parser.parse_args(argv)
    if args.show is not None:
        print(generate(args.show, args.big), end="")
        return 0
    failures = []

    def on_failure(failure):
        failures.append(failure)
        print(failure.report(), flush=True)
        if len(failures) >= args.max_failures:
            raise KeyboardInterrupt

    seeds = range(args.seed, args.seed + args.n)
    try:
        summary = run(
            seeds, batch=args.batch, compile=not args.interpret, vmap=not args.no_vmap, big=args.big, on_failure=on_failure
        )
    except KeyboardInterrupt:
        print(f"stopped after {len(failures)} failures")
        return 1
    print(summary.text())
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
