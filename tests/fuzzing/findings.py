"""The minimal programs behind ``FINDINGS.md``: each distinct bug the fuzzer found, reduced
by hand (after ``--reduce``) to a few lines, with the arguments that show it.

``python -m tests.fuzzing.findings [NAME ...]`` runs them through Python and every path
and prints what each did (``<- category`` marks a mismatch), so the list can be checked
again as autolax changes.
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass, field

import numpy as np

XS = np.array([1.0, 1.0, 1.0, 1.0])
YS = np.array([0, 1, 2, 3])


@dataclass
class Repro:
    name: str
    title: str
    source: str  # the body of the module after `import jax.numpy as jnp`
    inputs: list  # argument tuples (a, b, n, xs, ys)
    static: tuple = ()  # a second plan: these static_argnums, same inputs
    plans: list = field(default_factory=list)  # or explicit [(static, [inputs], called)]

    @property
    def module(self) -> str:
        return "import jax.numpy as jnp\n\n" + textwrap.dedent(self.source).strip() + "\n"


def _args(a=1.0, b=2.0, n=3, xs=XS, ys=YS):
    return (a, b, n, xs.copy(), ys.copy())


REPROS = [
    # ------------------------------------------------------------------ silent
    Repro("closure-before-loop", "A lambda defined before a loop sees the values from before the loop", """
        def f(a, b, n, xs, ys):
            scale = 1.0
            g = lambda v: v * scale
            total = 0.0
            for x in xs:
                scale = scale + 1.0
                total = total + g(x)
            return total
        """, [_args()]),
    Repro("try-handler-always-runs", "`except` runs though the traced condition raised nothing", """
        def f(a, b, n, xs, ys):
            y = 1.0
            try:
                if a < 0:
                    raise ValueError("negative")
                y = a * 2.0
            except ValueError:
                y = -1.0
            return y
        """, [_args(a=3.0)]),
    Repro("try-assignment-lost", "An assignment made in `try` before the exception is lost (eagerly too)", """
        def f(a, b, n, xs, ys):
            try:
                if a > 0:
                    b = a
                    raise ValueError("stop")
            except ValueError:
                pass
            return b
        """, [_args(a=1.0, b=2.0)]),
    Repro("try-return-in-loop", "`return` inside `try` (after a caught exception) in a staged loop is lost", """
        def f(a, b, n, xs, ys):
            for i in range(n):
                try:
                    if i >= 1:
                        return a
                    raise ValueError("first")
                except ValueError:
                    pass
            return b
        """, [_args(a=1.0, b=2.0, n=3)]),
    Repro("pop-under-traced-if", "`list.pop()` under a traced `if` runs whatever the condition", """
        def f(a, b, n, xs, ys):
            stack = [a, b]
            if xs.sum() > 10.0:
                stack.pop()
            return len(stack)
        """, [_args()]),
    Repro("pop-in-staged-loop", "`list.pop()` in a staged loop runs once, at trace time", """
        def f(a, b, n, xs, ys):
            stack = [1.0, 2.0, 3.0, 4.0]
            s = 0.0
            for _ in range(n):
                s += stack.pop()
            return s, len(stack)
        """, [_args(n=2)]),
    Repro("global-append-in-loop", "A global list appended to in a staged loop: once, at trace time", """
        LOG = []

        def f(a, b, n, xs, ys):
            for x in xs:
                LOG.append(x)
            return len(LOG)
        """, [_args()]),
    Repro("zero-trip-read", "A variable first assigned in a loop that ran zero times reads as zeros", """
        def f(a, b, n, xs, ys):
            for i in range(n):
                last = i * 2
            return last
        """, [_args(n=0)], static=(2,)),
    Repro("zero-trip-for-else", "The loop variable read in `for ... else` after zero trips", """
        def f(a, b, n, xs, ys):
            for i in range(n):
                pass
            else:
                i = i + 1
            return i
        """, [_args(n=0)]),
    Repro("static-argnums-collision", "Two wrappers with different static_argnums share a trace", """
        def f(a, b, n, xs, ys):
            return a - 2.0 * b
        """, [], plans=[((0,), [_args(a=1.5, b=np.float64(0.5))], True), ((1,), [_args(a=np.float64(0.5), b=1.5)], True)]),
    Repro("print-once-per-trace", "A `print` of Python values under jit prints once per trace, not per call", """
        def f(a, b, n, xs, ys):
            print("len(xs) =", len(xs))
            return a + b
        """, [_args(a=1.0), _args(a=2.0)]),
    Repro("global-append-at-top", "A global list appended to outside any staged statement: once per trace", """
        LOG = []

        def f(a, b, n, xs, ys):
            LOG.append(1.0)
            return a
        """, [_args(a=1.0), _args(a=2.0)]),
    Repro("or-side-effect", "A traced `or` evaluates its right operand (a `pop`) even when the left is true", """
        def f(a, b, n, xs, ys):
            stack = [1.0, 2.0]
            if a > 0 or stack.pop() > 0:
                a = a + 1.0
            return a, len(stack)
        """, [_args(a=1.0)]),
    Repro("alias-of-carried-list", "An alias of a list updated in a staged loop does not see the update", """
        def f(a, b, n, xs, ys):
            pts = [0.0, 0.0]
            view = pts
            for x in xs:
                pts[0] = pts[0] + x
            return view[0]
        """, [_args()]),
    Repro("range-object", "A `range` bound to a name, then iterated", """
        def f(a, b, n, xs, ys):
            total = 0.0
            steps = range(n)
            for i in steps:
                total += xs[i % 4]
            return total
        """, [_args(n=3)]),
    Repro("cli-reads-appended-list", "A loop that reads the list it appends to: the CLI's output differs", """
        def f(a, b, n, xs, ys):
            seen = [0.0]
            for x in xs:
                seen.append(jnp.maximum(seen[-1], x))
            return seen[-1]
        """, [_args(xs=np.array([1.0, 3.0, 2.0, 0.0]))]),
    Repro("del-in-loop", "`del y` in a loop: the second iteration's `del` found y deleted, nobody checked", """
        def f(a, b, n, xs, ys):
            y = 1.0
            for x in xs:
                a = a + x
                del y
            return a
        """, [_args()]),
    Repro("global-store-at-top", "`global T; T += a` at the top of a jitted function: once per trace, a tracer kept", """
        TOTAL = 0.0

        def f(a, b, n, xs, ys):
            global TOTAL
            TOTAL += a
            return b
        """, [_args(a=1.0), _args(a=2.0)]),
    # ------------------------------------------------------------------ errors that are not autolax's
    Repro("traced-assert", "`assert` of a traced condition: TracerBoolConversionError", """
        def f(a, b, n, xs, ys):
            assert a < b, "a must be below b"
            return b - a
        """, [_args(a=1.0, b=2.0)]),
    Repro("assert-untaken-branch", "A failing `assert` on Python values in an untaken traced branch", """
        def f(a, b, n, xs, ys):
            r = 0
            if a > 100.0:
                assert r > 3
                a = a + 1.0
            return a
        """, [_args(a=1.0)]),
    Repro("loop-always-raises", "A loop whose body always raises leaves an empty list; what follows fails while tracing", """
        def f(a, b, n, xs, ys):
            out = []
            for x in xs:
                if len(out) == 0:
                    raise ValueError("no solution")
                out.append(x)
            return jnp.stack(out).sum()
        """, [_args()]),
    Repro("list-remove-traced", "`list.remove` of a list holding traced values compares tracers", """
        def f(a, b, n, xs, ys):
            stack = [a, b]
            stack.remove(stack[-1])
            return len(stack)
        """, [_args()]),
    Repro("traced-raise-untaken", "`raise` under a traced condition fires at trace time", """
        def f(a, b, n, xs, ys):
            if a < 0:
                raise ValueError("negative")
            return a * 2.0
        """, [_args(a=3.0)]),
    Repro("error-in-untaken-branch", "Python errors in the untaken side of a traced `if` fire at trace time", """
        def f(a, b, n, xs, ys):
            items = []
            if a > 0:
                return a
            return items[0]
        """, [_args(a=1.0)]),
    Repro("undefined-name-untaken", "A name that is never defined, read in an untaken traced branch", """
        def f(a, b, n, xs, ys):
            if a > 100.0:
                return missing_name
            return a
        """, [_args(a=1.0)]),
    Repro("global-early-return", "`global` and a traced early `return`: UnboundLocalError", """
        TOTAL = 0.0

        def f(a, b, n, xs, ys):
            global TOTAL
            if a > b:
                return a
            TOTAL += b
            return b
        """, [_args(a=3.0, b=2.0)]),
    Repro("global-read-back-in-loop", "A global list appended to in a staged loop and read after it", """
        LOG = []

        def f(a, b, n, xs, ys):
            for x in xs:
                LOG.append(x)
            return sum(LOG)
        """, [_args()]),
    Repro("undefined-into-numpy", "Eagerly, the unbound-variable placeholder is stored into a NumPy array", """
        def f(a, b, n, xs, ys):
            if xs.sum() > 100.0:
                w = a
            xs[0] = w
            return xs
        """, [_args()]),
    Repro("nameerror-in-and", "`and` of traced values reads a later-bound local: NameError, not UnboundLocalError", """
        def f(a, b, n, xs, ys):
            ok = a > 0 and b > len(log)
            log = []
            return ok
        """, [_args(a=1.0)]),
    Repro("magic-static-helper", "`%%autolax --static a` also makes `a` static in a helper called with a traced value", """
        def helper(a, b, n, xs, ys):
            return a + n

        def f(a, b, n, xs, ys):
            return helper(b, a, n, xs, ys)
        """, [_args()], static=(0,)),
    # ------------------------------------------------------------------ --standalone
    Repro("standalone-cond-dtype", "--standalone: the branches of a lax.cond disagree on dtype (x64)", """
        def f(a, b, n, xs, ys):
            y = 0.0
            if xs.sum() > a:
                y = jnp.maximum(a, 2.0)
            return y
        """, [_args(a=np.float32(1.0), xs=XS.astype(np.float32))]),
    Repro("standalone-range-traced-down", "--standalone: `range(n, 0, -1)` with a traced n", """
        def f(a, b, n, xs, ys):
            total = 0
            for i in range(n, 0, -1):
                total += i
            return total
        """, [_args(n=3)]),
    Repro("standalone-return-none", "--standalone: `if` that returns on one side only gives JAX's error", """
        def f(a, b, n, xs, ys):
            if a > 0:
                return 2
        """, [_args(a=1.0)]),
]


def run(names=()) -> str:
    from .reduce import explain_plans
    from .runner import Plan

    out = []
    for r in REPROS:
        if names and r.name not in names:
            continue
        if r.plans:
            plans = [Plan(tuple(s), list(inputs), f"static {tuple(s)}", called=c) for s, inputs, c in r.plans]
        else:
            plans = [Plan((), list(r.inputs), "all traced")]
            if r.static:
                plans.append(Plan(tuple(r.static), [_static(args, r.static) for args in r.inputs], f"static {r.static}"))
        out.append(f"## {r.name}: {r.title}\n")
        out.append(explain_plans(r.module, plans))
    return "\n".join(out)


def _static(args, static):
    return tuple(a.item() if i in static and isinstance(a, np.generic) else a for i, a in enumerate(args))


if __name__ == "__main__":
    print(run(sys.argv[1:]))
