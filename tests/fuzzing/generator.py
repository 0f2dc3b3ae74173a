"""Writes random programs that read like code a person writes.

A program is a small module: ``import jax.numpy as jnp``, sometimes a few globals
(``SCALE = 1.5``, ``LOG = []``, ``TOTAL = 0.0``) and a module-level ``helper``, then
``def f(a, b, n, xs, ys)`` of two float scalars, an int scalar and two length-4 arrays
(float, int). Its body mixes:

* the control flow autolax stages: nested ``if``/``elif``/``else``, ``for`` over ranges
  (static or argument-dependent bounds, negative steps), over arrays, ``enumerate`` and
  ``zip``, ``while`` loops with a counter, ``break``, ``continue``, early ``return``,
  ``for``/``while ... else``, ``and``/``or``/``not``, chained comparisons, conditional
  expressions, ``x[i] = v`` and list appends followed by ``jnp.stack`` / ``len``;
* Python's semantics around it: closures and lambdas over variables a loop changes
  (defined before the loop and called inside it, or defined inside and called after it),
  nested functions, ``try``/``except``/``else``/``finally`` with ``raise`` (under
  conditions on traced and on Python values, around ``return``), loops that may run zero
  times followed by reads of what they assign, list methods (``pop``, ``insert``,
  ``extend``, ``remove``, ``clear``, ``+=``, ``del l[i]``), ``del`` of names, globals (read,
  appended to, and declared ``global`` and assigned), aliases of lists and dicts, reads of a
  name on a path where it is unbound, ``print`` and ``assert``, reads of a list inside the
  loop that appends to it, ``or`` with a side effect on its right, ``range`` objects bound
  to a name.

Every loop terminates (bounded trip counts; ``while`` loops count with a variable the body
cannot touch; no loop changes the list it iterates). Programs need not stage: the contract
is Python's answer or autolax's own clear error, and the oracle is Python itself. Names
keep one type per program (``s`` is always a float, ``stack`` always a list of floats), so
most programs run in Python without a ``TypeError``; a read of a name that may be unbound,
an ``assert``, a ``raise`` or a ``pop`` of an empty list make some inputs raise, on purpose.

With ``idioms=True`` (``--idioms``) programs also use idioms of real code that the grammar
above never wrote (issue 34; ``IDIOMS`` lists them): ``is`` / ``is not`` against ``True``,
``False`` and ``None`` (of flags bound to literals and of computed ones), a variable that
starts as ``None``, a class defined in ``f`` whose method reads ``f``'s variables, ``range``
steps that may be 0 (static and traced), a lambda over a variable that a loop in a ``try``
changes before it raises, rows appended as lists (``rows.append([u, v])``) then
``jnp.array(rows)`` / ``jnp.stack(rows)``, membership in literal lists and tuples, and
conditions on arrays of one element (or none). Programs without ``idioms`` are the same as
before the option existed.

``generate(seed)`` is deterministic. ``generate(seed, focus="try")`` writes a program that
has the construct (``CONSTRUCTS`` lists them), for tests that select one construct.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

K = 4  # length of the array arguments
PARAMS = (("a", "f"), ("b", "f"), ("n", "i"), ("xs", "F"), ("ys", "I"))
ELEMENT = {"F": "f", "I": "i"}

# Names by type, so every name keeps one type in a program (and the code reads naturally).
POOLS = {
    "f": ["s", "t", "u", "v", "w", "z", "g2", "d"],
    "i": ["c", "m", "p", "q", "r"],
    "b": ["found", "flag", "done", "ok"],
    "F": ["buf", "acc", "vals"],
    "I": ["cnt", "pos"],
    "P": ["pts", "coef"],  # a Python list of three floats
    "D": ["box", "lims"],  # a dict of two floats
    "S": ["stack", "queue", "items"],  # a Python list of floats whose length changes
    "C": ["g", "h", "scale", "shift", "step"],  # a function of one float
}
ALIASES = {"P": ["view", "same"], "D": ["other", "cfg"], "S": ["alias", "ref"]}
CONTAINER_ITEMS = {"P": ["0", "1", "2", "-1"], "D": ['"lo"', '"hi"']}
RANGE_VARS = ["i", "j", "l", "i2", "j2", "l2"]
ITEM_VARS = {"f": ["x", "y", "e", "x2", "y2"], "i": ["h2", "h3", "h4"]}
COUNTERS = ["k", "k2", "k3", "k4"]
LISTS = ["out", "hist", "seen", "rows"]
EXCEPTIONS = ["ValueError", "ValueError", "RuntimeError", "IndexError"]

F_LITERALS = ["0.0", "0.5", "1.0", "1.5", "2.0", "3.0", "-1.0", "-0.5", "-2.0", "0.25"]
I_LITERALS = ["0", "1", "2", "3", "-1", "4"]
COMPARE = ["<", "<=", ">", ">=", "==", "!="]

# The constructs a program can have: what ``constructs`` finds in a program's text and what
# ``generate(..., focus=...)`` can ask for.
CONSTRUCTS = (
    "if", "while", "for-range", "for-array", "break", "continue", "return", "appends",
    "setitem", "boolops", "ternary", "helper", "closures", "nested-def", "try", "raise",
    "zero-trip", "list-methods", "del", "globals", "aliases", "undefined", "print", "assert",
)  # fmt: skip

# Idioms of real code (issue 34), written only with ``idioms=True``; ``constructs`` tags them.
IDIOMS = ("identity", "local-class", "range-step", "closure-try", "row-lists", "membership", "size-one")
ROW_LISTS = ["table", "grid"]
CLASS_NAMES = ["Reader", "Scaler"]

# Operator precedence levels (lower binds tighter); a child is parenthesised when its
# level is above what the context allows.
ATOM, UNARY, MUL, ADD, CMP, NOT, AND, OR, TERNARY = range(9)


@dataclass
class Scope:
    """What a statement may use at its position in the program."""

    vars: dict  # name -> type, bound on every path reaching this point
    maybe: dict = field(default_factory=dict)  # name -> type, bound on some paths only
    readonly: frozenset = frozenset()  # `n`, loop targets, `while` counters, captured names
    frozen: frozenset = frozenset()  # containers an enclosing loop iterates: no mutation
    small: frozenset = frozenset()  # int names known to lie in [0, K)
    lists: frozenset = frozenset()  # lists being appended to by enclosing loops
    block: int = 0  # which block (a list is appended to again only in the block that made it)
    in_loop: bool = False  # `break` / `continue` allowed (innermost loop lets them)
    can_return: bool = True  # False inside a loop that appends to a list
    in_def: bool = False  # inside a nested `def`: `return` returns one float
    caught: frozenset = frozenset()  # exception types an enclosing `try` handles
    depth: int = 0  # nesting of compound statements
    loops: int = 0  # nesting of loops

    def child(self, **changes) -> "Scope":
        values = dict(self.__dict__)
        values["vars"] = dict(self.vars)
        values["maybe"] = dict(self.maybe)
        values.update(changes)
        return Scope(**values)

    def of_type(self, t, writable=False):
        names = [n for n, ty in self.vars.items() if ty == t]
        if writable:
            names = [n for n in names if n not in self.readonly]
        return names

    def bind(self, name, t):
        self.vars[name] = t
        self.maybe.pop(name, None)


class Generator:
    """Writes one random program (see the module docstring)."""

    def __init__(self, rng: random.Random, size: int = 12, focus: str | None = None, idioms=False):
        self.rng = rng
        self.idioms = frozenset(IDIOMS if idioms is True else idioms or ())  # the idioms it may write
        # Choices added after the corpus of pinned programs was written draw from their own
        # stream, so the programs without them stay as they were.
        self.later = random.Random(sum(rng.getstate()[1]))
        self.focus = focus
        self.lines: list[str] = []
        self.budget = size  # statements left to write
        self.break_seen: list[bool] = []  # per enclosing loop: does its body `break`?
        self.returns: list[str] = []
        self.helper = False  # is there a `helper(a, b, n, xs, ys)` to call?
        self.blocks = 0
        self.types: dict[str, str] = {}  # every name given out so far -> its type
        self.max_depth, self.max_loops = 3, 2  # nesting of compound statements / of loops
        self.list_home: dict[str, int] = {}  # list name -> the block that made it
        self.globals: dict[str, str] = {}  # module-level names f may use -> type
        self.declared_global = False  # f starts with `global TOTAL`

    # ------------------------------------------------------------------ helpers
    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def boost(self, *constructs) -> float:
        """Weight factor: the focused construct is written about five times as often."""
        return 5.0 if self.focus in constructs else 1.0

    def fresh_name(self, pool, scope: Scope, avoid=()) -> str | None:
        free = [n for n in pool if n not in scope.vars and n not in scope.maybe and n not in avoid]
        if not free:
            return None
        name = self.pick(free)
        return name

    def name_for(self, t, scope: Scope, avoid=()) -> str | None:
        name = self.fresh_name(POOLS[t], scope, avoid)
        if name is not None:
            self.types[name] = t
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
        small = sorted(n for n in scope.small if n in scope.vars)  # (sorted: a set's order varies by process)
        roll = self.rng.random()
        if small and roll < 0.45:
            return self.pick(small)
        if roll < 0.75:
            return str(self.rng.randint(-K, K - 1))
        return f"{self.wrap(self.expr('i', scope, 2), MUL)} % {K}"

    def unbound_read(self, t, scope: Scope):
        """A name of type ``t`` that is unbound on some path here (or None)."""
        names = [x for x, ty in scope.maybe.items() if ty == t]
        p = 0.35 if self.focus in ("undefined", "zero-trip", "del") else 0.04
        if names and self.chance(p):
            return self.pick(names)
        return None

    def atom(self, t, scope: Scope):
        unbound = self.unbound_read(t, scope)
        if unbound is not None:
            return unbound, ATOM
        names = scope.of_type(t)
        if t in ("f", "i"):
            arrays = scope.of_type("F" if t == "f" else "I")
            roll = self.rng.random()
            if names and roll < 0.45:
                return self.pick(names), ATOM
            if arrays and roll < 0.68:
                return f"{self.pick(arrays)}[{self.index(scope)}]", ATOM
            growing = sorted(x for x in scope.lists if x in scope.vars)  # appended to by an enclosing loop
            if growing and self.chance(0.08 * self.boost("appends")):
                lst = self.pick(growing)
                if t == "i":
                    return f"len({lst})", ATOM
                if scope.vars[lst] == "Lf":  # the items earlier iterations appended
                    return f"({lst}[-1] if {lst} else {self.literal('f')[0]})", ATOM
            if t == "i" and roll < 0.76:
                sized = scope.of_type("F") + scope.of_type("I") + scope.of_type("P") + scope.of_type("S") + self.lists(scope)
                return f"len({self.pick(sized)})", ATOM
            lists = self.lists(scope, t)
            if lists and roll < 0.8:
                return f"{self.pick(lists)}[{self.pick(['0', '-1'])}]", ATOM
            containers = scope.of_type("P") + scope.of_type("D")
            if t == "f" and containers and roll < 0.85:
                c = self.pick(containers)
                return f"{c}[{self.pick(CONTAINER_ITEMS[scope.vars[c]])}]", ATOM
            stacks = scope.of_type("S")
            if t == "f" and stacks and roll < 0.88:
                return f"{self.pick(stacks)}[{self.pick(['0', '-1'])}]", ATOM
            funcs = scope.of_type("C")
            if t == "f" and funcs and roll < 0.88 + 0.06 * self.boost("closures", "nested-def"):
                return f"{self.pick(funcs)}({self.wrap(self.expr('f', scope, 3), TERNARY)})", ATOM
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
        sized = scope.of_type("S") + self.lists(scope)
        if sized and self.chance(0.12):  # a condition on a Python value
            return f"len({self.pick(sized)}) {self.pick(['>', '<', '>=', '=='])} {self.rng.randint(0, 3)}", CMP
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
        if scope.of_type("S"):
            forms.append(lambda: (f"sum({self.pick(scope.of_type('S'))})", ATOM))
        if "SCALE" in self.globals:
            forms.append(lambda: (f"{e(MUL)} * SCALE", MUL))
        if "TOTAL" in self.globals:
            forms.append(lambda: (f"{e(ADD)} + TOTAL", ADD))
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
        if "LOG" in self.globals:
            forms.append(lambda: ("len(LOG)", ATOM))
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
        stacks = self.stacks(scope)
        if stacks and not scope.in_def:  # a right operand with a side effect: short-circuit matters
            x = self.pick(stacks)
            forms.append(lambda: (f"{e(OR)} or {x}.pop() > 0", OR))
        if self.idioms:
            forms += self.idiom_conditions(scope, depth)
        return self.pick(forms)()

    def idiom_conditions(self, scope, depth):
        """Conditions of real code (``IDIOMS``): identity, literal membership, arrays of one
        element (or none) as conditions."""
        b = self.boost
        forms = []
        flags = scope.of_type("b")
        scalars = scope.of_type("f") + scope.of_type("i")
        if "identity" in self.idioms:
            if flags:
                for _ in range(round(b("identity"))):
                    forms.append(lambda: (f"{self.pick(flags)} {self.pick(['is', 'is not'])} {self.pick(['True', 'False', 'None'])}", CMP))
            if scalars:
                forms.append(lambda: (f"{self.pick(scalars)} {self.pick(['is', 'is not'])} None", CMP))
        if "membership" in self.idioms:
            for _ in range(round(b("membership"))):
                forms.append(lambda: self.membership(scope, depth))
        arrays = scope.of_type("F")
        if "size-one" in self.idioms:
            for _ in range(round(b("size-one"))):
                forms.append(lambda: self.size_one(arrays, scope, depth))
        return forms

    def membership(self, scope, depth):
        t = self.pick("fi")
        item = self.wrap(self.expr(t, scope, depth + 1), ADD)
        values = [self.wrap(self.expr(t, scope, 2) if self.chance(0.3) else self.literal(t), TERNARY)
                  for _ in range(self.rng.randint(1, 3))]
        container = f"[{', '.join(values)}]" if self.chance(0.5) else f"({', '.join(values)}{',' if len(values) == 1 else ''})"
        return f"{item} {self.pick(['in', 'not in'])} {container}", CMP

    def size_one(self, arrays, scope, depth):
        x = self.pick(arrays)
        k = self.rng.randint(0, K - 1)
        part = self.pick([f"{x}[{k}:{k + 1}]", f"{x}[:1].reshape(1, 1, 1)", f"{x}[-1:]", f"{x}[{k}:{k}]"])
        if self.chance(0.4):
            return part, ATOM  # truthiness: `if xs[1:2]:`
        return f"{part} {self.pick(COMPARE)} {self.wrap(self.expr('f', scope, depth + 1), ADD)}", CMP

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
        if t == "S":
            return "[" + ", ".join(e() for _ in range(self.rng.randint(0, 3))) + "]"
        if t in ("F", "I"):
            return self.array_expr(t, scope)[0]
        if t == "b":
            return self.cond(scope)[0]
        return self.expr(t, scope)[0]

    # ------------------------------------------------------------------ program
    def program(self) -> str:
        """The module: imports, maybe globals and a ``helper``, then ``f(a, b, n, xs, ys)``."""
        header = ["import jax.numpy as jnp", ""]
        if self.chance(0.2 * self.boost("globals")):
            for name, t, init in self.rng.sample(
                [("SCALE", "f", "1.5"), ("LOG", "S", "[]"), ("TOTAL", "f", "0.0"), ("LOG", "S", "[1.0]")], 2
            ):
                if name not in self.globals:
                    self.globals[name] = t
                    header.append(f"{name} = {init}")
            header.append("")
        if self.chance(0.25 * self.boost("helper")):
            helper = Generator(self.rng, self.rng.randint(2, 5))
            helper.max_depth, helper.max_loops = self.max_depth, self.max_loops
            helper.function("helper", ["f"], frozen=frozenset({"xs", "ys"}))
            header += ["", *helper.lines, ""]
            self.helper = True
        self.lines = []
        self.function("f", self.rng.sample(["f", "f", "i", "F", "b", "I", "P", "D", "S"], self.rng.randint(1, 3)))
        return "\n".join(header + [""] + self.lines) + "\n"

    def function(self, name, returns, frozen=frozenset()):
        scope = Scope(vars=dict(PARAMS), readonly=frozenset({"n"}), frozen=frozen)
        self.returns = returns
        self.emit(0, f"def {name}(a, b, n, xs, ys):")
        if "TOTAL" in self.globals and name == "f" and self.chance(0.7):
            self.emit(1, "global TOTAL")
            self.declared_global = True
        if "LOG" in self.globals and name == "f":
            scope.vars["LOG"] = "S"
        if "TOTAL" in self.globals and name == "f":
            scope.vars["TOTAL"] = "f"
            if not self.declared_global:
                scope.readonly |= {"TOTAL"}
        inits = {
            "f": ["0.0", "0", "a", "a + b", "1.5", "xs[0]"],
            "i": ["0", "n", "1", "ys[0]", "len(xs)"],
            "b": ["False", "True", "a > b"],
            "F": ["xs.copy()", "xs * 0.0", "xs + a"],
            "I": ["ys.copy()", "ys * 0", "ys + 1"],
            "P": ["[a, b, 0.0]", "[0.0, 0.0, 0.0]", "[xs[0], a, 1.0]"],
            "D": ['{"lo": a, "hi": b}', '{"lo": 0.0, "hi": 1.0}'],
            "S": ["[a, b, 1.0]", "[]", "[0.5]", "[xs[0], xs[1]]"],
        }
        kinds = ["f", "f", "i", "b", "F", "I", "f", "i", "P", "D"]
        if name == "f" and self.chance(0.3 * self.boost("list-methods", "aliases")):
            kinds.append("S")
        for t in self.rng.sample(kinds, self.rng.randint(2, 5)):
            var = self.name_for(t, scope)
            if var is not None:
                self.emit(1, f"{var} = {self.pick(inits[t])}")
                scope.bind(var, t)
        end = self.block(scope, 1, self.rng.randint(3, 7))
        if end is not None:
            self.emit(1, self.return_stmt(end, name == "f"))

    def return_stmt(self, scope: Scope, top: bool = False) -> str:
        if scope.in_def:
            return f"return {self.expr('f', scope)[0]}"
        values = []
        for t in self.returns:
            names = scope.of_type(t)
            unbound = self.unbound_read(t, scope) if t in ("f", "i") else None
            if unbound is not None:
                values.append(unbound)
            elif names and self.chance(0.6):
                values.append(self.pick(names))
            elif t in ("F", "I"):
                values.append(self.wrap(self.array_expr(t, scope), TERNARY))
            elif t in ("P", "D", "S"):
                values.append(self.value(t, scope))
            else:
                values.append(self.wrap(self.expr(t, scope) if t != "b" else self.cond(scope), TERNARY))
        appended = self.lists(scope) if top else []
        if appended and self.later.random() < 0.3:  # a list a loop appended to, returned as it is
            values.append(self.later.choice(appended))
        if "LOG" in self.globals and self.chance(0.5):
            values.append(self.pick(["len(LOG)", "sum(LOG)"]))
        if "TOTAL" in self.globals and self.declared_global and self.chance(0.5):
            values.append("TOTAL")
        return "return " + ", ".join(values)

    # ------------------------------------------------------------------ statements
    def block(self, scope: Scope, indent: int, n: int) -> Scope | None:
        """Writes up to ``n`` statements; returns the scope after them, or None if the block
        always jumps (``return`` / ``break`` / ``continue`` / ``raise``)."""
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
        top = not scope.in_def
        b = self.boost
        choices = [
            (self.assign, 3.0),
            (self.augassign, 2.0),
            (self.setitem, 2.0 * b("setitem") if self.mutable_arrays(scope) and top else 0.0),
            (self.tuple_assign, 0.6),
            (self.if_stmt, 2.5 * b("if") if nested else 0.0),
            (self.for_range, 1.5 * b("for-range", "zero-trip") if loops else 0.0),
            (self.for_array, 1.2 * b("for-array") if loops else 0.0),
            (self.while_stmt, 1.0 * b("while") if loops else 0.0),
            (self.append_loop, 0.8 * b("appends") if loops and top else 0.0),
            (self.jump, 1.2 * b("break", "continue") if scope.in_loop else 0.0),
            (self.early_return, 0.6 * b("return") if scope.can_return else 0.0),
            (self.closure, 0.35 * b("closures", "nested-def") if top and scope.depth < 2 else 0.0),
            (self.try_stmt, 0.35 * b("try", "raise") if nested and top else 0.0),
            (self.guard, 0.15 * b("raise", "assert") if top else 0.0),
            (self.list_method, 0.8 * b("list-methods", "aliases") if top and self.stacks(scope) else 0.0),
            (self.new_stack, 0.25 * b("list-methods", "aliases") if top else 0.0),
            (self.alias, 0.2 * b("aliases") if top else 0.0),
            (self.del_stmt, 0.15 * b("del", "undefined") if top else 0.0),
            (self.global_stmt, 0.6 * b("globals") if top and self.globals else 0.0),
            (self.print_stmt, 0.3 * b("print") if top else 0.0),
        ]
        if self.idioms:  # (appended: without idioms the draws above are unchanged)
            on = self.idioms.__contains__
            choices += [
                (self.none_default, 0.3 * b("identity") if on("identity") and loops and top else 0.0),
                (self.flag_loop, 0.3 * b("identity") if on("identity") and loops and top else 0.0),
                (self.local_class, 0.3 * b("local-class", "closures") if on("local-class") and top and scope.depth < 2 else 0.0),
                (self.stepped_range, 0.3 * b("range-step") if on("range-step") and loops else 0.0),
                (self.closure_try, 0.25 * b("closure-try", "try")
                 if on("closure-try") and nested and top and scope.loops < self.max_loops else 0.0),
                (self.row_list, 0.3 * b("row-lists", "appends") if on("row-lists") and loops and top else 0.0),
            ]
        fns, weights = zip(*choices)
        return self.rng.choices(fns, weights)[0](scope, indent)

    def mutable_arrays(self, scope):
        """Arrays and containers that may be mutated in place here."""
        names = scope.of_type("F", True) + scope.of_type("I", True) + scope.of_type("P", True) + scope.of_type("D", True)
        return [n for n in names if n not in scope.frozen]

    def stacks(self, scope):
        """Lists of floats whose length may change here (none while a loop iterates one:
        an alias may name the same list, and changing a list under iteration may not end)."""
        if any(scope.vars.get(x) == "S" or x == "LOG" for x in scope.frozen):
            return []
        return [x for x in scope.of_type("S") if x not in scope.readonly or x == "LOG"]

    def assign(self, scope, indent):
        t = self.pick("fffiibFIPD")
        targets = scope.of_type(t, writable=True) + [x for x, ty in scope.maybe.items() if ty == t and x not in scope.readonly]
        if t in ("F", "I", "P", "D"):
            targets = [x for x in targets if x not in scope.frozen]
        if not targets or self.chance(0.3):
            name = self.name_for(t, scope)
            if name is None:
                return self.augassign(scope, indent)
        else:
            name = self.pick(targets)
        self.emit(indent, f"{name} = {self.value(t, scope)}")
        scope.bind(name, t)
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
            stacks = self.stacks(scope)
            if t == "f" and stacks and self.chance(0.25 * self.boost("list-methods")):
                rhs = f"{self.pick(stacks)}.pop()"  # s += stack.pop()
        self.emit(indent, f"{name} {op} {rhs}")
        return scope

    def assign_first(self, scope, indent):
        name = self.name_for("f", scope)
        if name is None:
            self.emit(indent, "pass")
            return scope
        self.emit(indent, f"{name} = {self.value('f', scope)}")
        scope.bind(name, "f")
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
        swap = [z for z, ty in scope.maybe.items() if ty == scope.vars[x] and z not in scope.readonly]
        if swap and self.chance(0.5 * self.boost("undefined") / 5):  # `s, t = t, s` with `t` maybe unbound
            y = self.pick(swap)
            self.emit(indent, f"{x}, {y} = {y}, {x}")
            scope.bind(y, scope.vars[x])
        elif scope.vars[x] == scope.vars[y] and self.chance(0.5):
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
        that reaches the join; names bound on only some of them may be unbound. None if no
        path reaches it."""
        live = [e for e in ends if e is not None]
        if not live:
            return None
        out = scope.child()
        out.vars = {n: t for n, t in live[0].vars.items() if all(e.vars.get(n) == t for e in live[1:])}
        out.maybe = {}
        for e in live:
            for n, t in list(e.vars.items()) + list(e.maybe.items()):
                if n not in out.vars:
                    out.maybe[n] = t
        return out

    def loop_body(self, scope, indent, inner: Scope, orelse: bool, trips=None, targets=()):
        """Writes a loop body (and maybe an ``else``); returns the scope after the loop.

        A loop with a static trip count of at least one leaves its targets, and a variable
        its body assigns first thing, bound after it (Python keeps the last values); other
        names the body binds first may be unbound after it (the loop may run zero times,
        or jump before the assignment).
        """
        after = scope.child()
        if trips:
            for var in targets:
                after.bind(var, inner.vars[var])
            t = self.pick("fi")
            var = self.name_for(t, inner) if self.chance(0.3) else None
            if var is not None:
                self.emit(indent + 1, f"{var} = {self.value(t, inner)}")
                inner.bind(var, t)
                after.bind(var, t)
        else:
            for var in targets:
                after.maybe[var] = inner.vars[var]
        self.break_seen.append(False)
        before = dict(self.types)
        end = self.block(inner, indent + 1, self.rng.randint(1, 4))
        broke = self.break_seen.pop()
        for var, t in self.types.items():  # first bound in the body
            if var not in before and var not in after.vars:
                after.maybe[var] = t
        if end is not None:
            for var, t in end.vars.items():
                if var not in after.vars:
                    after.maybe[var] = t
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
        if self.focus == "zero-trip":
            forms += [("n", False, None), ("n - 2", False, None), ("0", True, 0), ("1, n", False, None)]
        if ints:
            x = self.pick(ints)
            forms.append((f"{x} % {K}", True, None))
            forms.append((f"{K - 1}, {x} % {K} - 1, -1", True, None))
        return self.pick(forms)

    def for_range(self, scope, indent):
        var = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
        if var is None:
            return self.assign(scope, indent)
        self.types[var] = "i"
        args, small, trips = self.range_args(scope)
        if self.chance(0.08) and "steps" not in scope.vars:
            self.emit(indent, f"steps = range({args})")
            self.emit(indent, f"for {var} in steps:")
        else:
            self.emit(indent, f"for {var} in range({args}):")
        inner = self.loop_scope(scope, readonly=scope.readonly | {var}, small=(scope.small | {var}) if small else scope.small)
        inner.bind(var, "i")
        if self.chance(0.08):  # Python rebinds the target at the next iteration anyway
            self.emit(indent + 1, f"{var} = {var} + 1")
            inner.small = inner.small - {var}
        return self.loop_body(scope, indent, inner, orelse=True, trips=trips, targets=(var,))

    def iteration(self, scope):
        """``for`` targets and iterable: (header text, {name: type}, small, iterated)."""
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
        containers = scope.of_type("P") + scope.of_type("D") + scope.of_type("S")
        if containers and 0.3 <= roll < 0.42:
            c = self.pick(containers)
            items = f"{c}.values()" if scope.vars[c] == "D" else c
            return f"{item} in {items}", {item: "f"}, set(), {c}
        if roll > 0.93 and t == "f":
            values = ", ".join(self.wrap(self.expr("f", scope, 1), TERNARY) for _ in range(self.rng.randint(2, 3)))
            return f"{item} in ({values})", {item: "f"}, set(), set()
        if roll < 0.42:
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
        it = self.iteration(scope)
        if it is None:
            return self.assign(scope, indent)
        header, targets, small, iterated = it
        self.types.update(targets)
        self.emit(indent, f"for {header}:")
        inner = self.loop_scope(
            scope,
            readonly=scope.readonly | set(targets),
            small=scope.small | small,
            frozen=scope.frozen | iterated,
        )
        for var, t in targets.items():
            inner.bind(var, t)
        static = iterated and not iterated & set(self.lists(scope)) and all(scope.vars[c] in "FIPD" for c in iterated)
        trips = K if static and all(scope.vars[c] in "FI" for c in iterated) else (3 if static else None)
        return self.loop_body(scope, indent, inner, orelse=True, trips=trips, targets=tuple(targets))

    def while_stmt(self, scope, indent):
        k = self.fresh_name(COUNTERS, scope)
        if k is None:
            return self.assign(scope, indent)
        self.types[k] = "i"
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
            inner.bind(k, "i")
            self.break_seen.append(True)
            before = dict(self.types)
            self.block(inner, indent + 1, self.rng.randint(1, 3))
            self.break_seen.pop()
            out = scope.child()
            out.bind(k, "i")
            for var, t in self.types.items():
                if var not in before and var not in out.vars:
                    out.maybe[var] = t
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
        inner.bind(k, "i")
        after = scope.child()
        after.bind(k, "i")
        return self.loop_body(after, indent, inner, orelse=True)

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
        self.types.update(targets)
        if lst in scope.vars:
            elem = scope.vars[lst][1]
        else:
            elem = self.pick("ffiF")
            self.emit(indent, f"{lst} = []")
        self.types[lst] = "L" + elem
        self.emit(indent, f"for {header}:")
        scope = scope.child()
        scope.bind(lst, "L" + elem)
        inner = self.loop_scope(
            scope,
            readonly=scope.readonly | set(targets),
            small=scope.small | small,
            frozen=scope.frozen | iterated,
            in_loop=False,
            can_return=False,
            lists=scope.lists | {lst},
        )
        for var, t in targets.items():
            inner.bind(var, t)
        before = self.rng.randint(0, 2)
        end = self.block(inner, indent + 1, before) if before else inner
        item = self.wrap(self.array_expr("F", end), TERNARY) if elem == "F" else self.expr(elem, end)[0]
        self.emit(indent + 1, f"{lst}.append({item})")
        if self.chance(0.4):
            self.block(end, indent + 1, 1)
        # use the list right after the loop
        out = scope.child()
        out.bind(lst, "L" + elem)
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
        name = self.name_for("i", out)
        if not uses or (name is not None and self.chance(0.15)):
            name = name or "size"
            uses = [[f"{name} = len({lst})"]]
            out.bind(name, "i")
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

    # ------------------------------------------------------------------ Python semantics
    def closure(self, scope, indent):
        """A lambda or nested ``def`` of one float that reads variables of ``f`` (which later
        statements may change: a closure reads their values when it is called)."""
        name = self.name_for("C", scope)
        if name is None:
            return self.assign(scope, indent)
        param = self.pick(["val", "v0", "arg"])
        outer = {x for x, t in scope.vars.items()} | set(scope.maybe)
        inner = scope.child(
            readonly=frozenset(outer) | {param},
            frozen=frozenset(outer),
            in_def=True,
            in_loop=False,
            can_return=True,
            depth=scope.depth + 1,
            loops=scope.loops,
            lists=frozenset(),
            caught=frozenset(),
        )
        inner.bind(param, "f")
        inner.vars.pop(name, None)
        if self.chance(0.5):
            self.emit(indent, f"{name} = lambda {param}: {self.expr('f', inner, 1)[0]}")
        else:
            self.emit(indent, f"def {name}({param}):")
            saved = self.budget
            self.budget = self.rng.randint(1, 3)
            end = self.block(inner, indent + 1, self.rng.randint(1, 3))
            self.budget = saved
            if end is not None:
                self.emit(indent + 1, self.return_stmt(end))
        scope.bind(name, "C")
        return scope

    def try_stmt(self, scope, indent):
        """``try`` / ``except`` / ``else`` / ``finally``; the body may raise what the handler
        catches (or not)."""
        kind = self.pick(["ValueError", "ValueError", "IndexError", "(ValueError, IndexError)"])
        inner = scope.child(depth=scope.depth + 1, caught=scope.caught | set(kind.strip("()").split(", ")))
        self.emit(indent, "try:")
        before = dict(self.types)
        body = self.block(inner, indent + 1, self.rng.randint(1, 3))
        if body is not None and self.chance(0.5):
            exc = self.pick(kind.strip("()").split(", ")) if self.chance(0.85) else "RuntimeError"
            self.emit(indent + 1, f"if {self.cond(body)[0]}:")
            self.emit(indent + 2, f'raise {exc}("{self.pick(["too large", "bad value", "negative"])}")')
        # The handler and `finally` may run after any prefix of the body.
        started = self.merge(scope, [scope, body if body is not None else scope])
        for var, t in self.types.items():
            if var not in before and var not in started.vars:
                started.maybe[var] = t
        ends = [body]
        if self.chance(0.8):
            self.emit(indent, f"except {kind}:" if self.chance(0.8) else f"except {kind} as err:")
            ends.append(self.block(started.child(depth=scope.depth + 1), indent + 1, self.rng.randint(1, 2)))
            if body is not None and self.chance(0.2) and self.budget > 0:
                self.emit(indent, "else:")
                ends[0] = self.block(body.child(depth=scope.depth + 1), indent + 1, 1)
            final = self.chance(0.35)
        else:
            final = True
        after = self.merge(scope, ends)
        if final:
            self.emit(indent, "finally:")
            end = self.block(started.child(depth=scope.depth + 1), indent + 1, self.rng.randint(1, 2))
            if end is None:
                return None
            if after is not None:
                for var, t in end.vars.items():
                    if var not in after.vars:
                        after.bind(var, t)
        return after

    def guard(self, scope, indent):
        """``assert`` or ``if ...: raise`` (outside any ``try``: the program raises)."""
        if self.chance(0.5 if self.focus != "raise" else 0.1):
            msg = f', "{self.pick(["out of range", "unexpected value"])}"' if self.chance(0.4) else ""
            self.emit(indent, f"assert {self.cond(scope)[0]}{msg}")
        else:
            self.emit(indent, f"if {self.cond(scope)[0]}:")
            self.emit(indent + 1, f'raise {self.pick(["ValueError", "RuntimeError"])}("{self.pick(["too large", "no solution"])}")')
        return scope

    def new_stack(self, scope, indent):
        name = self.name_for("S", scope)
        if name is None:
            return self.assign(scope, indent)
        self.emit(indent, f"{name} = {self.value('S', scope)}")
        scope.bind(name, "S")
        return scope

    def list_method(self, scope, indent):
        """A list method that changes the length (or the order) of a list of floats."""
        stacks = self.stacks(scope)
        if not stacks:
            return self.assign(scope, indent)
        x = self.pick(stacks)
        e = lambda: self.expr("f", scope, 1)[0]  # noqa: E731
        forms = [
            lambda: f"{x}.append({e()})",
            lambda: f"{x}.pop()",
            lambda: f"{x}.pop(0)",
            lambda: f"{x}.insert(0, {e()})",
            lambda: f"{x}.insert({self.rng.randint(-1, 2)}, {e()})",
            lambda: f"{x}.extend([{e()}, {e()}])",
            lambda: f"{x} += [{e()}]",
            lambda: f"{x}.remove({x}[{self.pick(['0', '-1'])}])",
            lambda: f"{x}.clear()",
            lambda: f"del {x}[{self.pick(['0', '-1'])}]",
            lambda: f"{x}.reverse()",
        ]
        if x == "LOG":  # (`LOG += ...` or `del LOG[0]` would make LOG a local name of f)
            forms = [form for i, form in enumerate(forms) if i not in (6, 9)] + forms[:1] * 3
        elif x in ALIASES["S"]:
            forms = forms[:1] * 3 + forms[1:]
        text = self.pick(forms)()
        floats = scope.of_type("f", writable=True)
        if ".pop(" in text and floats and self.chance(0.5):
            text = f"{self.pick(floats)} = {text}"
        self.emit(indent, text)
        return scope

    def alias(self, scope, indent):
        """A second name for a list or dict (both see every change)."""
        containers = [x for x in scope.of_type("P") + scope.of_type("D") + scope.of_type("S") if x != "LOG"]
        if not containers:
            return self.new_stack(scope, indent)
        x = self.pick(containers)
        t = scope.vars[x]
        name = self.fresh_name(ALIASES[t], scope)
        if name is None:
            return self.list_method(scope, indent) if self.stacks(scope) else self.assign(scope, indent)
        self.types[name] = t
        self.emit(indent, f"{name} = {x}")
        scope.bind(name, t)
        return scope

    def del_stmt(self, scope, indent):
        """``del`` of a name (later reads of it raise), sometimes under a condition."""
        names = [x for x, t in scope.vars.items() if t in "fibC" and x not in scope.readonly and x not in dict(PARAMS)]
        if not names:
            return self.assign(scope, indent)
        x = self.pick(names)
        t = scope.vars[x]
        if self.chance(0.5) and scope.depth < self.max_depth:
            self.emit(indent, f"if {self.cond(scope)[0]}:")
            self.emit(indent + 1, f"del {x}")
        else:
            self.emit(indent, f"del {x}")
        del scope.vars[x]
        scope.maybe[x] = t
        return scope

    def global_stmt(self, scope, indent):
        """Uses of module-level names: ``LOG.append(...)``, ``TOTAL += ...``."""
        forms = []
        if "LOG" in self.globals and "LOG" not in scope.frozen:
            forms.append(lambda: f"LOG.append({self.expr('f', scope, 1)[0]})")
        if "TOTAL" in self.globals and self.declared_global:
            forms.append(lambda: f"TOTAL += {self.expr('f', scope, 1)[0]}")
        floats = scope.of_type("f", writable=True)
        if floats and "SCALE" in self.globals:
            forms.append(lambda: f"{self.pick(floats)} *= SCALE")
        if not forms:
            return self.assign(scope, indent)
        self.emit(indent, self.pick(forms)())
        return scope

    def print_stmt(self, scope, indent):
        values = [self.expr(self.pick("ffib"), scope, 2)[0] for _ in range(self.rng.randint(1, 2))]
        roll = self.rng.random()
        if roll < 0.15:
            self.emit(indent, f'print(f"{values[0]} = {{{values[0]}}}")' if '"' not in values[0] else f"print({values[0]})")
        elif roll < 0.6:
            label = values[0].split("[")[0].split("(")[0].strip() or "value"
            self.emit(indent, f'print("{label}:", {", ".join(values)})')
        else:
            self.emit(indent, f"print({', '.join(values)})")
        return scope


    # ------------------------------------------------------------------ idioms of real code (issue 34)
    def none_default(self, scope, indent):
        """``best = None``, a loop that may bind it, then ``if best is None:``."""
        name = self.name_for("f", scope)
        it = self.iteration(scope)
        if name is None or it is None:
            return self.assign(scope, indent)
        header, targets, small, iterated = it
        self.types.update(targets)
        self.emit(indent, f"{name} = None")
        self.emit(indent, f"for {header}:")
        inner = self.loop_scope(scope, readonly=scope.readonly | set(targets) | {name}, small=scope.small | small,
                                frozen=scope.frozen | iterated, in_loop=False, can_return=False)
        for var, t in targets.items():
            inner.bind(var, t)
        self.emit(indent + 1, f"if {self.cond(inner)[0]}:")
        value = self.pick([v for v, t in targets.items() if t == "f"] or [self.expr("f", inner)[0]])
        self.emit(indent + 2, f"{name} = {value}")
        self.emit(indent, f"if {name} {self.pick(['is', '=='])} None:")
        self.emit(indent + 1, f"{name} = {self.expr('f', scope)[0]}")
        scope.bind(name, "f")
        return scope

    def flag_loop(self, scope, indent):
        """A ``while`` loop ended by a flag set to a literal: ``while done is False:``."""
        flag = self.name_for("b", scope)
        k = self.fresh_name(COUNTERS, scope)
        targets = scope.of_type("f", writable=True)
        if flag is None or k is None or not targets:
            return self.assign(scope, indent)
        self.types[k] = "i"
        start = self.pick(["False", "True"])
        stop = "True" if start == "False" else "False"
        test = self.pick([f"{flag} is {start}", f"{flag} is not {stop}", f"not {flag}" if start == "False" else flag])
        self.emit(indent, f"{flag} = {start}")
        self.emit(indent, f"{k} = 0")
        self.emit(indent, f"while {test} and {k} < {self.pick(['n', str(self.rng.randint(1, 6))])}:")
        self.emit(indent + 1, f"{k} += 1")
        inner = self.loop_scope(scope, readonly=scope.readonly | {k, flag}, in_loop=False, can_return=False)
        inner.bind(k, "i")
        s = self.pick(targets)
        self.emit(indent + 1, f"{s} = {self.wrap(self.expr('f', inner, 1), ADD)} + {s} * {self.pick(['2.0', '0.5', '-1.0'])}")
        self.emit(indent + 1, f"if {self.cond(inner)[0]}:")
        self.emit(indent + 2, f"{flag} = {stop}")
        scope.bind(flag, "b")
        scope.bind(k, "i")
        return scope

    def local_class(self, scope, indent):
        """A class defined in ``f`` whose method reads ``f``'s variables (which later
        statements may change), used through a bound method of one float."""
        name = self.name_for("C", scope)
        cls = self.fresh_name(CLASS_NAMES, scope)
        if name is None or cls is None:
            return self.assign(scope, indent)
        scope.vars[cls] = "K"  # (a type no expression asks for: the name is only taken)
        outer = set(scope.vars) | set(scope.maybe)
        inner = scope.child(readonly=frozenset(outer) | {"val"}, frozen=frozenset(outer), in_def=True, in_loop=False,
                            can_return=True, depth=scope.depth + 1, lists=frozenset(), caught=frozenset())
        inner.bind("val", "f")
        inner.vars.pop(name, None)
        method = self.pick(["value", "__call__", "apply"])
        self.emit(indent, f"class {cls}:")
        self.emit(indent + 1, f"def {method}(self, val):")
        self.emit(indent + 2, f"return {self.expr('f', inner, 1)[0]}")
        self.emit(indent, f"{name} = {cls}()" if method == "__call__" else f"{name} = {cls}().{method}")
        scope.bind(name, "C")
        return scope

    def stepped_range(self, scope, indent):
        """``for i in range(start, stop, step)`` with a step that may be 0: static (``0``)
        or traced (``n % 3``)."""
        var = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
        if var is None:
            return self.assign(scope, indent)
        self.types[var] = "i"
        ints = [x for x in scope.of_type("i") if x != "n"]
        step = self.pick(["n % 3", "n - 1", "0", "1 - n % 2", *(f"{x} % 2" for x in ints[:1])])
        start, stop = self.pick([("0", str(K)), (str(K - 1), "-1"), ("n", "0"), ("1", "n")])
        self.emit(indent, f"for {var} in range({start}, {stop}, {step}):")
        inner = self.loop_scope(scope, readonly=scope.readonly | {var})
        inner.bind(var, "i")
        return self.loop_body(scope, indent, inner, orelse=False, trips=None, targets=(var,))

    def closure_try(self, scope, indent):
        """A lambda over a variable that a loop in a ``try`` changes and then leaves with a
        ``raise`` (issue 34 item 4: concrete inputs, ``convert`` called eagerly)."""
        floats = scope.of_type("f", writable=True)
        name = self.name_for("C", scope)
        it = self.iteration(scope)
        if not floats or name is None or it is None:
            return self.assign(scope, indent)
        header, targets, small, iterated = it
        self.types.update(targets)
        s = self.pick(floats)
        exc = self.pick(["ValueError", "IndexError"])
        self.emit(indent, f"{name} = lambda val: {s} + val")
        self.emit(indent, "try:")
        self.emit(indent + 1, f"for {header}:")
        inner = self.loop_scope(scope, readonly=scope.readonly | set(targets), small=scope.small | small,
                                frozen=scope.frozen | iterated, in_loop=False, can_return=False, depth=scope.depth + 2)
        for var, t in targets.items():
            inner.bind(var, t)
        self.emit(indent + 2, f"{s} = {s} + {self.pick([s, *[v for v, t in targets.items() if t == 'f'], '1.0'])}")
        if self.chance(0.5):
            self.emit(indent + 2, f'raise {exc}("stop")')
        else:
            self.emit(indent + 2, f"if {self.cond(inner)[0]}:")
            self.emit(indent + 3, f'raise {exc}("stop")')
        self.emit(indent, f"except {exc}:")
        self.emit(indent + 1, self.pick(["pass", f"{s} = {name}({self.literal('f')[0]})"]))
        scope.bind(name, "C")
        return scope

    def row_list(self, scope, indent):
        """Rows appended as Python lists, then ``jnp.array(rows)`` (or ``jnp.stack(rows)``,
        which Python refuses: a list is not an array)."""
        rows = self.fresh_name(ROW_LISTS, scope)
        targets = scope.of_type("f", writable=True)
        if rows is None or not targets:
            return self.assign(scope, indent)
        it = self.iteration(scope) if self.chance(0.5) else None
        if it is None:
            var = self.fresh_name(RANGE_VARS, scope, avoid=scope.readonly)
            if var is None:
                return self.assign(scope, indent)
            bound = self.pick([str(self.rng.randint(0, K)), "n", "len(xs)"])
            it = (f"{var} in range({bound})", {var: "i"}, {var} if bound != "n" else set(), set())
        header, targets_, small, iterated = it
        self.types.update(targets_)
        self.types[rows] = "R"
        self.emit(indent, f"{rows} = []")
        self.emit(indent, f"for {header}:")
        inner = self.loop_scope(scope, readonly=scope.readonly | set(targets_), small=scope.small | small,
                                frozen=scope.frozen | iterated, in_loop=False, can_return=False)
        for var, t in targets_.items():
            inner.bind(var, t)
        width = self.rng.randint(1, 3)
        items = ", ".join(self.wrap(self.expr("f", inner, 1), TERNARY) for _ in range(width))
        self.emit(indent + 1, f"{rows}.append([{items}])")
        s = self.pick(targets)
        use = self.pick(["jnp.array", "jnp.array", "jnp.asarray", "jnp.stack"])
        self.emit(indent, f"{s} += {use}({rows}).{self.pick(['sum', 'max'])}()" if self.chance(0.5)
                  else f"{s} += {use}({rows}).reshape(-1, {width})[-1, 0]")
        scope.bind(rows, "R")
        return scope

def generate(seed: int, big: bool = False, focus: str | None = None, idioms=False) -> str:
    """The source of program number ``seed`` (deterministic). ``big``: programs about twice
    as long, nested one level deeper. ``focus``: a construct of ``CONSTRUCTS`` (or, with
    ``idioms``, of ``IDIOMS``) the program must have (written more often, and the first of a
    few tries that has it). ``idioms``: also write the idioms of ``IDIOMS`` (``True``: all of
    them; or a collection of their names)."""
    unknown = set(IDIOMS if idioms is True else idioms or ()) - set(IDIOMS)
    if unknown:
        raise ValueError(f"unknown idiom(s) {', '.join(sorted(unknown))}; choose from {', '.join(IDIOMS)}")
    known = (*CONSTRUCTS, *(IDIOMS if idioms is True else idioms or ()))
    if focus is not None and focus not in known:
        hint = " (an idiom: pass idioms=True, or --idioms)" if focus in IDIOMS else ""
        raise ValueError(f"unknown construct {focus!r}{hint}; choose from {', '.join(known)}")
    from .constructs import constructs

    source = ""
    for attempt in range(20):
        rng = random.Random(seed if attempt == 0 else seed * 1_000_003 + attempt)
        generator = Generator(rng, rng.randint(12, 40) if big else rng.randint(4, 14), focus, idioms)
        if big:
            generator.max_depth, generator.max_loops = 4, 3
        source = generator.program()
        if focus is None or focus in constructs(source):
            break
    return source
