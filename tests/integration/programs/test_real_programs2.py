"""The second real-program corpus (issue 43): the 39 library programs of a numerical-methods
textbook (``tests/corpus2``; chosen by the fixed rule of ``tests/corpus2/SELECTION.md``,
all kept), each run through every path -- ``autolax.jit``, ``jax.jit(autolax.convert(f))``,
``autolax.convert(f)`` called eagerly, the CLI's default output and ``--standalone`` -- and
compared with the program as its author ran it (NumPy: the corpus module's ``jnp`` bound to
NumPy, array arguments as NumPy copies) on the same inputs: value, exception type and
printed output. The machinery and the meaning of ``PYTHON`` / ``refused`` / ``Known`` are
``tests/integration/programs/test_real_programs.py``'s.

The inputs were written with the programs, before any was run: the problem of the book's
worked example where it has one, else a small problem of the kind the docstring describes.
The functions the programs take (``f``, ``F``, ``Av``...) are static arguments, as the user
passes a Python function.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from corpus2 import eigen, linsys, odes, optimize, quadrature, roots
from paths import PATHS, agrees
from integration.programs.test_real_programs import PYTHON, Case, Known, is_refusal, path_outcome, python_outcome, refused  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore::autolax.UnrolledLoopWarning")

F = np.float64
A3 = np.array([[4.0, -2.0, 1.0], [-2.0, 4.0, -2.0], [1.0, -2.0, 4.0]])
B3 = np.array([11.0, -16.0, 17.0])
PIVOTING = np.array([[2.0, -2.0, 6.0], [-2.0, 4.0, 3.0], [-1.0, 8.0, 4.0]])
PIVOTING_B = np.array([16.0, 0.0, -1.0])
SPD = np.array([[4.0, -2.0, 2.0], [-2.0, 2.0, -4.0], [2.0, -4.0, 11.0]])
SEED3 = np.random.default_rng(43).random(3)
SEED5 = np.random.default_rng(43).random(5)
TRI_D = np.array([2.0, 2.0, 2.0, 2.0, 2.0])
TRI_C = np.array([-1.0, -1.0, -1.0, -1.0])


# ----------------------------------------------------------------------------- the functions passed in
def cubic(x):
    return x ** 3 - 10.0 * x ** 2 + 5.0


def cubic_slope(x):
    return 3.0 * x ** 2 - 20.0 * x


def cos_minus_x(x):
    return np.cos(x) - x if isinstance(x, (float, np.floating, np.ndarray)) else jax.numpy.cos(x) - x


def tridiagonal_av(v):
    return A3 @ v


def spring_iterations(x, omega):
    # the book's example 2.17 kind: x_i from a 1-2-1 tridiagonal system (4x4), relaxed
    n = len(x)
    x0 = omega * (x[1] + 1.0) / 2.0 + (1.0 - omega) * x[0]
    x = x.at[0].set(x0) if hasattr(x, "at") else _set(x, 0, x0)
    for i in range(1, n - 1):
        xi = omega * (x[i - 1] + x[i + 1]) / 2.0 + (1.0 - omega) * x[i]
        x = x.at[i].set(xi) if hasattr(x, "at") else _set(x, i, xi)
    xl = omega * (x[n - 2] + 1.0) / 2.0 + (1.0 - omega) * x[n - 1]
    return x.at[n - 1].set(xl) if hasattr(x, "at") else _set(x, n - 1, xl)


def _set(x, i, v):
    x = x.copy()
    x[i] = v
    return x


def two_equations(x):
    return (x[0] ** 2 + x[1] ** 2 - 3.0) * np.array([1.0, 0.0]) + (x[0] * x[1] - 1.0) * np.array([0.0, 1.0])


def pentadiagonal_bv(v):
    return v * 2.0


def oscillator(x, y):
    return np.array([0.0, 1.0]) * y[0] * -1.0 + np.array([1.0, 0.0]) * y[1]


def oscillator_derivatives(x, y):
    # rows: y', y'', y''', y'''' of y'' = -y
    first = np.array([0.0, -1.0]) * y[0] + np.array([1.0, 0.0]) * y[1]
    second = -y
    return [first, second, -first, y]


def bowl(x):
    return (x[0] - 1.0) ** 2 + 2.0 * (x[1] + 0.5) ** 2 + 0.5 * x[0] * x[1]


def bowl_gradient(x):
    return np.array([1.0, 0.0]) * (2.0 * (x[0] - 1.0) + 0.5 * x[1]) + \
        np.array([0.0, 1.0]) * (4.0 * (x[1] + 0.5) + 0.5 * x[0])


def parabola(x):
    return (x - 1.5) ** 2 + 0.25


def plane(x, y):
    return x * x + 2.0 * y


# The reasons autolax refuses (autolax's own error on the staged paths; `convert` called
# eagerly gives Python's answer), each with the issue item that would lift it.
WHILE_APPENDS = refused("appends in a `while` loop whose trip count is traced: the lists' length would "
                        "depend on data (StateMismatchError)")
BRANCH_APPENDS = refused("appends in one branch of a staged `if` in a loop: the lists' length would depend "
                         "on data (StateMismatchError)")

CASES = [
    # chapter 2: linear systems
    Case(linsys.lu_decomp_solve, (A3, B3)),
    Case(linsys.lu_decomp5_solve, (np.array([6.0, 7.0, 7.0, 7.0, 6.0]), np.array([-4.0, -4.0, -4.0, -4.0]),
                                   np.array([1.0, 1.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0, 1.0]))),
    Case(linsys.lu_pivot_decomp_solve, (PIVOTING, PIVOTING_B)),
    Case(linsys.choleski, (SPD,)),
    Case(linsys.conj_grad, (tridiagonal_av, np.zeros(3), B3), static=(0,)),
    Case(linsys.gauss_elimin, (A3, B3)),
    Case(linsys.gauss_jordan, (A3,)),
    Case(linsys.gauss_jordan_pivot, (PIVOTING,)),
    Case(linsys.gauss_pivot, (PIVOTING, PIVOTING_B)),
    Case(linsys.gauss_seidel, (spring_iterations, np.zeros(4)), static=(0,)),
    Case(linsys.poly_fit_deviation, (np.array([0.0, 1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.1, 4.9, 10.2, 16.8]), 2),
         static=(2,)),
    Case(linsys.newton_raphson2, (two_equations, np.array([1.5, 0.5])), static=(0,)),
    Case(linsys.inverse_power, (A3, F(1.0), SEED3)),
    Case(linsys.inverse_power5, (pentadiagonal_bv, np.array([6.0, 7.0, 7.0, 7.0, 6.0]),
                                 np.array([-4.0, -4.0, -4.0, -4.0]), np.array([1.0, 1.0, 1.0]), SEED5), static=(0,)),
    Case(linsys.std_form, (A3, SPD)),
    # chapter 4: roots; chapter 9: tridiagonal eigenvalues by Sturm sequences
    Case(roots.bisect, (cubic, F(0.0), F(1.0)), static=(0,)),
    Case(roots.brent, (cubic, F(0.0), F(1.0)), static=(0,)),
    Case(roots.newton_raphson, (cubic, cubic_slope, F(0.0), F(1.0)), static=(0, 1)),
    Case(roots.rootsearch, (cubic, F(0.0), F(1.0), F(0.2)), static=(0,)),
    Case(roots.sturm_count, (TRI_D, TRI_C, F(1.0))),
    Case(roots.gerschgorin, (TRI_D, TRI_C)),
    Case(roots.lam_range, (TRI_D, TRI_C, 3), static=(2,)),
    Case(roots.eigenvals3, (TRI_D, TRI_C, 3), static=(2,)),
    # chapter 9: eigenvalues by transformation
    Case(eigen.householder_and_p, (np.array([[7.0, 2.0, 3.0, -1.0], [2.0, 8.0, 5.0, 1.0], [3.0, 5.0, 12.0, 9.0],
                                             [-1.0, 1.0, 9.0, 7.0]]),)),
    Case(eigen.jacobi, (A3,)),
    Case(eigen.sort_jacobi, (np.array([3.0, 1.0, 2.0]), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]))),
    # chapter 3 and 6: interpolation and integration
    Case(quadrature.neville, (np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 8.0, 27.0, 64.0]), F(2.5))),
    Case(quadrature.gauss_nodes, (4,), static=(0,)),
    Case(quadrature.gauss_quad, (parabola, F(0.0), F(3.0), 3), static=(0, 3)),
    Case(quadrature.gauss_quad2, (plane, np.array([0.0, 2.0, 2.0, 0.0]), np.array([0.0, 0.0, 1.0, 1.0]), 2),
         static=(0, 3)),
    Case(quadrature.triangle_quad, (plane, np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])), static=(0,)),
    # chapter 7: initial value problems
    Case(odes.midpoint_integrate, (oscillator, F(0.0), np.array([1.0, 0.0]), F(1.0), F(1e-6)), static=(0,)),
    Case(odes.bul_stoer, (oscillator, F(0.0), np.array([1.0, 0.0]), F(1.0), F(0.5)), static=(0,),
         expect=WHILE_APPENDS),
    Case(odes.run_kut4_integrate, (oscillator, F(0.0), np.array([1.0, 0.0]), F(1.0), F(0.25)), static=(0,),
         expect=WHILE_APPENDS),
    Case(odes.run_kut5_integrate, (oscillator, F(0.0), np.array([1.0, 0.0]), F(1.0), F(0.25)), static=(0,),
         expect=BRANCH_APPENDS),
    Case(odes.taylor, (oscillator_derivatives, F(0.0), np.array([1.0, 0.0]), F(1.0), F(0.25)), static=(0,),
         expect=WHILE_APPENDS),
    # chapter 10: optimization
    Case(optimize.gold_bracket_search, (parabola, F(0.0), F(0.1)), static=(0,)),
    Case(optimize.fletcher_reeves, (bowl, bowl_gradient, np.array([0.0, 0.0])), static=(0, 1)),
    Case(optimize.powell, (bowl, np.array([0.0, 0.0])), static=(0,)),
]


# Wrong answers with no error, found by this corpus and not fixed yet: each is a
# strict xfail, so that the test fails once the cause is fixed (then update the data).
ITEM_1 = ("a helper that writes into its array argument ({}): the caller keeps the old array, also "
          "through `convert` called eagerly (issue 43 item 1)")
SILENT: dict = {}


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=SILENT[case.id])] if case.id in SILENT else []
    return pytest.param(case, marks=marks, id=case.id)


@pytest.fixture(scope="module", autouse=True)
def x64():
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", saved)


def outcomes(case, tmp_path):
    """Python's outcome and, per path, why it breaks the rule (None: it keeps it) and
    whether it was a refusal."""
    expected = python_outcome(case)
    per_path = {}
    for path in (*PATHS, "standalone"):
        got = path_outcome(case, path, tmp_path)
        per_path[path] = (got, agrees(expected, got, path, allow_refusal=case.expect != PYTHON))
    return expected, per_path


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_real_program(case, tmp_path):
    expected, per_path = outcomes(case, tmp_path)
    problems, refusals, known = [], [], []
    for path, (got, why) in per_path.items():
        if isinstance(case.expect, Known) and why and type(got.error).__name__ == case.expect.error \
                and path != "convert eagerly":
            known.append(path)
        elif why:
            problems.append(f"{path}: {why}")
        elif is_refusal(expected, got):
            refusals.append(path)
    assert not problems, f"{case.id} (Python: {expected.kind}):\n  " + "\n  ".join(problems)
    if isinstance(case.expect, Known):
        assert known, f"{case.id}: no path raised {case.expect.error} any more: update the data"
    elif case.expect != PYTHON:
        assert refusals, f"{case.id} is recorded as {case.expect!r} but no path refused: update the data"


def test_the_corpus_has_every_program():
    # SELECTION.md: every eligible module is in the corpus (39), each once.
    assert len({c.fn for c in CASES}) == len(CASES) == 39
    assert set(SILENT) <= {c.id for c in CASES}
