"""Every benchmark program's jaxpr stays close to its hand-written lax twin (issue 17).

Equation counts are deterministic, so they are asserted here; timings live in
``benchmarks/run.py``. Each program is traced at two sizes: the count must not grow with
the size (nothing unrolled), must stay within 1.2x of the twin, and must not exceed the
ceiling recorded below (a lowering that starts emitting more fails here first).
"""

import importlib.util
import pathlib
import sys

import jax
import pytest

import autolax
from autolax.runtime import compat
from autolax.check import count_equations

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _programs():
    spec = importlib.util.spec_from_file_location("benchmark_programs_eqns", ROOT / "benchmarks" / "programs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


PROGRAMS = {p.name: p for p in _programs().PROGRAMS}

# autolax's equation count per program (the twin's in the comment). Lower is fine: lower the
# ceiling with the change that earns it.
CEILING = {
    "energy": 16,  # 15: `total = 0.0` is carried strongly typed (see ops.state.leaf_spec), so
    # `total += <weakly typed>` converts that operand
    "running_moments": 10,  # 10
    # 18: Python evaluates a while loop's test before its first iteration; autolax must, to
    # know whether the loop is staged at all. Its 3 equations (two comparisons and their
    # `and`) are unused once the loop is staged; XLA removes them.
    "power_iteration": 21,
    "pair_energy": 34,  # 33
    "bounce": 19,  # 19
    "first_crossing": 14,  # 16: tests each item in the loop's predicate, as the twin does
    "escape_time": 27,  # 25: the exit test in the predicate, skipped before the first iteration (2)
    "positive_energy": 16,  # 18
    "first_negative_prefix": 16,  # 17: the exit test in the predicate, from the first iteration
    # on (it is false on the constant start); `not (total < 0.0)`, not `total >= 0.0` (NaN)
    "rnn": 5,  # 5: `jnp.stack` of the appended list is the loop's stacked output itself
    "insertion_sort": 44,  # 42
    "mandelbrot": 24,  # 24
    # 15: the exit opens the body and reads the carried `x`: tested in the predicate (loop
    # rotation); the `custom_jvp` around the loop for `jax.grad`
    "escape_top": 16,
    "first_below": 14,  # 16
    # 19: the while's test before its first iteration (2, see power_iteration) and again
    # after the loop, where `n < max_iter` says the `return` stopped it
    "orbit_escape": 22,
}

def _count(prog, fn, scale):
    fn = prog.wrap(fn) if prog.wrap is not None else fn
    args = prog.inputs(scale)
    return count_equations(jax.make_jaxpr(fn, static_argnums=prog.static_argnums)(*args).jaxpr)


def test_the_catalogue_is_covered():
    assert set(CEILING) == set(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_equations_stay_near_the_hand_written_twin(name):
    prog = PROGRAMS[name]
    converted = autolax.convert(prog.python)
    small, larger = _count(prog, converted, 0.002), _count(prog, converted, 0.01)
    twin = _count(prog, prog.lax, 0.002)
    assert small == larger, f"{name}: the jaxpr grows with the input size ({small} -> {larger} equations)"
    assert small <= CEILING[name], f"{name}: {small} equations, ceiling {CEILING[name]} (twin: {twin})"
    assert small <= 1.2 * twin, f"{name}: {small} equations against the twin's {twin}"


def _whiles(jaxpr):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            yield eqn
        for sub in compat.jaxprs_in_params(eqn.params):
            yield from _whiles(sub)


@pytest.mark.parametrize("name", ["insertion_sort", "first_crossing", "power_iteration"])
def test_a_while_loop_carries_its_scalars_before_its_arrays(name):
    # As a hand-written loop carries its index: XLA's CPU backend ran insertion_sort 6 %
    # slower with the array first (benchmarks/results.md).
    program = PROGRAMS[name]
    args = program.inputs(0.05)
    jaxpr = jax.make_jaxpr(autolax.convert(program.python), static_argnums=program.static_argnums)(*args).jaxpr
    whiles = list(_whiles(jaxpr))
    assert whiles
    for eqn in whiles:
        carry = eqn.invars[eqn.params["cond_nconsts"] + eqn.params["body_nconsts"]:]
        ranks = [len(v.aval.shape) > 0 for v in carry]
        assert ranks == sorted(ranks), ranks
