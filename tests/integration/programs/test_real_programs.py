"""The real-program corpus (issue 34): programs from public code, ported minimally
(``tests/corpus``; chosen by the fixed rule of ``tests/corpus/SELECTION.md``, all kept), each
run through every path -- ``autolax.jit``, ``jax.jit(autolax.convert(f))``,
``autolax.convert(f)`` called eagerly, the CLI's default output and ``--standalone`` (which
runs the same runtime, copied) -- and compared with Python on the same inputs: value,
exception type and printed output (``paths.agrees``).

Python here is the program as written for NumPy: the corpus module's ``jnp`` is NumPy for
the oracle, and array arguments are NumPy copies (a program that writes ``a[i] = v`` into
its argument is run as its author ran it). x64 is on for the module, so Python's float64
and the paths' arithmetic agree (a tolerance loop runs the same number of times).

Each case expects, of every path (``expect``), one of:

- ``PYTHON``: every path gives Python's outcome;
- ``refused(reason)``: some paths raise autolax's own error (an ``AutolaxError``) instead,
  for the reason given; every other path gives Python's outcome;
- ``Known(error, reason)``: some paths raise that error of JAX or Python where Python does
  not (a gap left for later; ``convert`` called eagerly still gives Python's outcome).

README ("Real programs") lists the refusals and the gaps. Any other outcome -- a silent
difference, another error -- fails the test, and so does an expectation that no path shows
any more (update the data when a gap closes).
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from corpus import dynamic, graphs, linalg, number_theory, roots, searching, simulations, sorting
from paths import PATHS, Outcome, _capture, agrees, is_autolax_error, run, standalone_module

# Real programs fall back to Python loops where a loop cannot be staged (the warning says
# so); the outcome is what is compared here. benchmarks/real_programs.py shows what staged.
pytestmark = pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")

PYTHON = "python"


def refused(reason: str) -> str:
    """Some paths raise autolax's own error, for this reason; the others give Python's outcome."""
    return "refused: " + reason


@dataclass(frozen=True)
class Known:
    """A path raises ``error`` (an exception class name, not autolax's) where Python does not:
    a known gap, listed in README and left for a later change. The test fails when the gap
    closes (or changes), so the data is updated with it."""

    error: str
    reason: str


@dataclass
class Case:
    fn: object
    args: tuple
    static: tuple = ()
    expect: object = PYTHON  # every path (paths.PATHS and --standalone)
    id: str = ""

    def __post_init__(self):
        self.id = self.id or self.fn.__name__


# ----------------------------------------------------------------------------- the functions passed in
def square_minus_two(x):
    return x * x - 2.0


def cube_minus(x, c):
    return x ** 3 - c


def cube_slope(x, c):
    return 3.0 * x ** 2


def twice(x):
    return 2.0 * x


def decay(t, y):
    return -0.5 * y + t


def quadratic_gradient(v):
    return 2.0 * v


F = np.float64
DRAWS = np.random.default_rng(34).integers(0, 2, size=6)

CASES = [
    # roots and ODEs
    Case(roots.bisect_until_small, (square_minus_two, F(0.0), F(2.0)), static=(0,)),
    Case(roots.newton_root, (cube_minus, cube_slope, F(1.5), F(1e-9), F(2.0)), static=(0, 1)),
    Case(roots.newton_optimum, (square_minus_two, F(1.0), F(1e-3)), static=(0,)),
    Case(roots.newton_one_step, (square_minus_two, twice, F(2.0)), static=(0, 1)),
    Case(roots.euler_fixed_steps, (decay, F(0.0), np.array([1.0, 2.0]), F(0.1), 5), static=(0, 4)),
    Case(roots.euler_until, (F(0.0), F(1.0), F(0.25), F(1.0), decay), static=(4,)),
    Case(roots.euler_to, (decay, F(0.0), F(1.0), F(0.5), F(2.0)), static=(0,)),
    # sorting
    Case(sorting.sink_sort, (np.array([3.0, 1.0, 2.0, 5.0, 4.0]),)),
    Case(sorting.bubble_while, (np.array([4.0, 3.0, 2.0, 1.0]),)),
    Case(sorting.selection_sort_swap, (np.array([3, 1, 4, 1, 5]),)),
    Case(sorting.selection_sort_min, (np.array([2.0, 9.0, 3.0, 1.0]),)),
    Case(sorting.lomuto_partition, (np.array([5, 2, 8, 1, 4]), 0, 4)),
    # binary search
    Case(searching.bin_search_or_message, (np.array([1, 3, 5, 7, 9, 11]), 7),
         expect=refused("returns an index or the string 'Not found' by a traced test: StateMismatchError (`int((lo + hi) / 2)` of a traced value, refused before, is staged)")),
    Case(searching.bisect_index, (np.array([1, 3, 5, 7, 9]), 9)),
    Case(searching.recursive_search, (np.array([2, 3, 5, 6, 10]), 6)),
    Case(searching.search_low_high, (np.array([2, 4, 10, 10, 18, 20]), 18)),
    # shortest paths
    Case(graphs.dijkstra_heap, (np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 2.0], [4.0, 2.0, 0.0]]), 0),
         expect=refused("a Python list indexed with a traced vertex popped from the heap (`done[v]`)")),
    Case(graphs.dijkstra_greedy, (np.array([[0, 3, 1, 0], [3, 0, 1, 2], [1, 1, 0, 5], [0, 2, 5, 0]]), 0),
         expect=refused("`nodes.remove(s)` searches a list for a traced value")),
    Case(graphs.dijkstra_relax, (np.array([[0, 4, 1, 9], [4, 0, 2, 5], [1, 2, 0, 8], [9, 5, 8, 0]]), 0),
         expect=refused("`dist[s] = 0`: a Python list indexed with a traced argument among the function's own statements (TracedValueError)")),
    # dynamic programming
    Case(dynamic.knapsack_table, (np.array([5, 6, 2]), np.array([3, 4, 1]), 6), static=(2,),
         expect=refused("a Python list indexed with a traced column (`table[i - 1][j - weight[i - 1]]`) in a staged `if`")),
    Case(dynamic.edit_distance_table, (np.array([1, 2, 3, 4]), np.array([1, 3, 3]))),
    Case(dynamic.levenshtein_swap, ("kitten", "sitting"), static=(0, 1)),
    Case(dynamic.levenshtein_grid, (np.array([0, 1, 2, 2]), np.array([0, 2, 2]))),
    # linear algebra, gradient descent
    Case(linalg.gauss_seidel_script, (np.array([[4.0, 0.0, 1.0], [1.0, 4.0, 1.0], [1.0, 0.0, 4.0]]), np.array([3.0, -1.0, 2.0]), 3),
         static=(2,)),
    Case(linalg.jacobi_sweeps, (np.array([[2.0, 1.0], [5.0, 7.0]]), np.array([11.0, 13.0]), 25, np.array([1.0, 1.0])),
         static=(2,)),
    Case(linalg.power_until_flag, (np.array([[2.0, 1.0], [4.0, 5.0]]), np.array([1.0, 1.0]), F(1e-10))),
    Case(linalg.power_with_none, (np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([[1.0], [1.0]]), F(1e-6), 50), static=(3,)),
    Case(linalg.inverse_iteration, (np.array([[1.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 5.0]]),)),
    Case(linalg.power_printing, (np.array([[2.0, 1.0], [1.0, 3.0]]),),
         expect=refused("`jnp.argwhere` without `size=` (the shape of its result depends on data): TracedValueError")),
    Case(linalg.least_squares_descent, (np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]]), np.array([1.0, 2.0, 2.5]),
                                        np.array([0.0, 0.0]), F(0.1), 20), static=(4,)),
    Case(linalg.descent_until_small, (quadratic_gradient, F(10.0), F(0.2)), static=(0,),
         expect=refused("a module-level list appended to in a staged loop")),
    # simulations
    Case(simulations.walk_positions, (DRAWS, 6), static=(1,)),
    Case(simulations.running_trend, (np.array([1, -2, 3, 4]),)),
    Case(simulations.life_step_counting, (np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]]), 0)),
    # (refused until slices with traced bounds read by a sum were masked: issue 41)
    Case(simulations.live_neighbours, (2, 0)),
    Case(simulations.life_step_rolled, (simulations.life_board,)),
    # number theory, sequences
    Case(number_theory.gcd_swapping, (12, 18),
         expect=refused("a recursion that stops on a traced condition")),
    Case(number_theory.gcd_recursive, (12, 18),
         expect=refused("a recursion that stops on a traced condition")),
    Case(number_theory.is_prime_6k, (97,)),
    Case(number_theory.fibonacci_list, (8,),
         expect=refused("appends in a `while` loop whose trip count is traced: the list's length would depend on data")),
    Case(number_theory.fib_pair, (10,)),
]


# ----------------------------------------------------------------------------- running
@pytest.fixture(scope="module", autouse=True)
def x64():
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", saved)


def as_numpy_program(fn):
    """``fn`` with its module's ``jnp`` bound to NumPy (and the module's functions and JAX
    arrays rebound likewise): the program as its author ran it."""
    module = inspect.getmodule(fn)
    namespace = dict(vars(module))
    namespace["jnp"] = np
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            namespace[name] = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__,
                                                 value.__closure__)
        elif isinstance(value, jax.Array):
            namespace[name] = np.asarray(value)
    return namespace[fn.__name__]


def numpy_args(args):
    return tuple(np.array(a) if isinstance(a, (np.ndarray, jax.Array)) else a for a in args)


def jax_args(args):
    """The arguments the paths get: JAX arrays (made here, after x64 is on: float64)."""
    return tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def python_outcome(case) -> Outcome:
    return _capture(lambda: as_numpy_program(case.fn)(*numpy_args(case.args)))


def path_outcome(case, path, tmp_path) -> Outcome:
    if path == "standalone":
        return _capture(lambda: jax.jit(standalone_function(case), static_argnums=case.static)(*jax_args(case.args)))
    return run(path, case.fn, jax_args(case.args), static_argnums=case.static, tmp_dir=tmp_path)


def standalone_function(case):
    """``case.fn`` as ``autolax convert --standalone --all`` writes its module (the helpers
    it calls converted too, as autolax.jit converts them when called)."""
    source = inspect.getsource(inspect.getmodule(case.fn))
    return standalone_module(source, inspect.getsourcefile(case.fn), all=True)[case.fn.__name__]


def is_refusal(expected, got) -> bool:
    """autolax said no (its own error) where Python returned or raised something else."""
    err = got.error
    return is_autolax_error(err) and (expected.error is None or not isinstance(err, type(expected.error)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_real_program(case, tmp_path):
    expected = python_outcome(case)
    problems, seen = [], {PYTHON: [], "refused": [], "known": []}
    for path in (*PATHS, "standalone"):
        expect = case.expect
        got = path_outcome(case, path, tmp_path)
        why = agrees(expected, got, path, allow_refusal=expect != PYTHON)
        if isinstance(expect, Known) and why and type(got.error).__name__ == expect.error and path != "convert eagerly":
            seen["known"].append(path)
        elif why:
            problems.append(f"{path}: {why}")
        elif is_refusal(expected, got):
            seen["refused"].append(path)
    assert not problems, f"{case.id} (Python: {expected.kind}):\n  " + "\n  ".join(problems)
    for expect, paths in ((case.expect, (*PATHS, "standalone")),):
        if isinstance(expect, Known):
            assert set(paths) & set(seen["known"]), f"{case.id}: no path raised {expect.error} any more: update the data"
        elif expect != PYTHON:
            assert set(paths) & set(seen["refused"]), f"{case.id} is recorded as {expect!r} but no path refused: update the data"


def test_the_corpus_has_every_program():
    # SELECTION.md: every file the queries named that is eligible is in the corpus.
    import corpus

    ported = {line for module in (dynamic, graphs, linalg, number_theory, roots, searching, simulations, sorting)
              for line in inspect.getsource(module).splitlines() if line.startswith("# after ")}
    assert len(ported) == 41
    assert len({c.fn for c in CASES}) == len(CASES) and len(CASES) == len(ported)
    assert "smriti-kumar" in corpus.__doc__  # the files passed over, with the reason
