"""The differential fuzzer (``benchmarks/fuzz.py``) on fixed seeds.

Each program is run as plain Python, eagerly through ``autolax.convert``, traced as
``jax.jit`` traces it and (one group in four) under ``jax.vmap`` over its input sets; all
must agree. Most batches evaluate the traced jaxpr one primitive at a time
(``fuzz.evaluate``: no XLA compilation, so a few hundred programs fit in CI); one batch is
compiled with ``jax.jit`` for real. ``python -m benchmarks.fuzz --n 10000`` runs the long
version.
"""

import importlib.util
import pathlib
import random
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("benchmarks_fuzz", ROOT / "benchmarks" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz()

PROGRAMS_PER_TEST = 24


def _run(seeds, compile, vmap=False, big=False):
    failures = []
    summary = fuzz.run(seeds, batch=8, compile=compile, vmap=vmap, big=big, on_failure=failures.append)
    assert summary.programs == len(seeds)
    assert not failures, "\n".join(f.report() for f in failures)
    return summary


@pytest.mark.parametrize("first", range(0, 8 * PROGRAMS_PER_TEST, PROGRAMS_PER_TEST))
def test_random_programs_match_python(first):
    _run(range(first, first + PROGRAMS_PER_TEST), compile=False, vmap=first % (4 * PROGRAMS_PER_TEST) == 0)


def test_random_programs_match_python_under_jax_jit_and_vmap():
    _run(range(100_000, 100_008), compile=True, vmap=True)


def test_big_random_programs_match_python():
    # Twice the text, one more level of nesting: the shapes of state that only
    # deep nests produce (a loop's carry set computed inside a loop inside a loop).
    _run(range(300_000, 300_008), compile=False, big=True)


def test_big_programs_nest_deeper():
    def depth(source):
        return max(len(line) - len(line.lstrip()) for line in source.splitlines()) // 4

    seeds = range(40)
    assert max(depth(fuzz.generate(s, big=True)) for s in seeds) > max(depth(fuzz.generate(s)) for s in seeds)
    assert sum(len(fuzz.generate(s, big=True)) for s in seeds) > 1.5 * sum(len(fuzz.generate(s)) for s in seeds)


# ----------------------------------------------------------------------------- the generator
def test_generation_is_deterministic():
    assert fuzz.generate(7) == fuzz.generate(7)
    assert fuzz.generate(7) != fuzz.generate(8)


FEATURES = {
    "if/elif/else": ("elif ", "else:"),
    "for over a static range": ("in range(4)",),
    "for over an argument-dependent range": ("in range(n)",),
    "negative step": (", -1):", ", -2):"),
    "for over an array": (" in xs:",),
    "enumerate / zip": ("enumerate(", "zip("),
    "while with a counter": ("while k",),
    "while True": ("while True:",),
    "break / continue": ("break", "continue"),
    "loop else": ("    else:\n",),
    "early return": ("        return ",),
    "and / or / not": (" and ", " or ", "not "),
    "chained comparison": (),  # checked below
    "conditional expression": (" if ",),
    "item assignment": ("] = ", "] += ", "] -= "),
    "list append, jnp.stack, len": (".append(", "jnp.stack(", "len("),
}


def test_generator_covers_the_features():
    sources = [fuzz.generate(seed) for seed in range(300)]
    text = "\n".join(sources)
    for feature, needles in FEATURES.items():
        for needle in needles:
            assert needle in text, f"no program has {feature} ({needle!r})"
    assert any(_has_chained_comparison(src) for src in sources)
    # returns inside nested loops (a return indented two loops deep)
    assert any("            return " in src for src in sources)


def _has_chained_comparison(src):
    import ast

    return any(isinstance(n, ast.Compare) and len(n.ops) > 1 for n in ast.walk(ast.parse(src)))


def test_generated_programs_are_valid_python_that_terminates():
    rng = random.Random(0)
    inputs = [fuzz.make_inputs(rng) for _ in range(3)]
    for seed in range(200):
        program = fuzz.Program(seed, fuzz.generate(seed))
        fuzz.load(program)
        result = fuzz.check_python(program, inputs)
        assert not isinstance(result, fuzz.Failure), result.report()


# ----------------------------------------------------------------------------- the oracle
def test_compare_allows_promotion_but_not_other_differences():
    assert fuzz.compare((np.float32(1.5), 2), (jnp.float32(1.5), jnp.int32(2))) is None
    assert fuzz.compare(np.float64(0.1), jnp.float32(0.1)) is None
    assert "expected" in fuzz.compare((1.0, 2), (1.0, 3))
    assert "shape" in fuzz.compare(np.zeros(3), np.zeros(4))
    assert "structure" in fuzz.compare((1, 2), (1, 2, 3))


def _control_flow(x, xs, n):
    def body(carry, x_k):
        return carry * 0.5 + x_k, carry - x_k

    total, ys = lax.scan(body, x, xs, reverse=True)
    _, none = lax.scan(body, x, xs[:0])
    i, acc = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + jnp.sin(c[1])), (0, total))
    picked = lax.cond(acc > 1.0, lambda a: a * 2.0, lambda a: -a, acc)
    return total, ys, none, i, picked, jnp.remainder(picked, 3.0)


@pytest.mark.parametrize("x, n", [(1.5, 3), (-2.0, 0), (0.25, 5)])
def test_evaluate_agrees_with_jax_jit(x, n):
    xs = jnp.array([1.0, -2.0, 0.5, 3.0])
    _agree(_control_flow, x, xs, n)


def test_evaluate_agrees_with_jax_jit_under_vmap():
    # vmap makes a while loop's predicate a vector: it runs while any row is true, and only
    # those rows step.
    xs = jnp.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, 2.0, -1.0], [2.0, 2.0, -3.0, 0.5]])
    _agree(jax.vmap(_control_flow), jnp.array([1.5, -2.0, 0.25]), xs, jnp.array([3, 0, 5]))


def _agree(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    got = fuzz.evaluate(closed, *args)
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_the_fuzzer_catches_a_wrong_lowering(monkeypatch):
    # A deliberately broken runtime: a traced `not x` gives `x`. Plain Python and the eager
    # run are unaffected, so only the traced run can notice. (Every generated loop still
    # ends: `while` tests keep their counter bound.)
    import autolax.ops

    not_ = autolax.ops.not_
    monkeypatch.setattr(autolax.ops, "not_", lambda x: x if isinstance(x, jax.core.Tracer) else not_(x))
    failures = []
    fuzz.run(range(500, 516), batch=8, compile=False, vmap=False, on_failure=failures.append)
    assert failures and all(f.mode == "jit-interpreted" for f in failures)
    report = failures[0].report()
    assert "def f(a, b, n, xs, ys):" in report and "inputs: f(" in report
