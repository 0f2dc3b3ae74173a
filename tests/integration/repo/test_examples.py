"""The programs in examples/: each, under ``autolax.jit``, gives what the plain Python
original gives on the same inputs, and ``trace_check`` shows every loop staged."""

import importlib.util
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.check import count_equations
from conftest import assert_close, assert_matches, primitives

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"


def load(name):
    """Imports examples/<name>.py from its file (so autolax reads its real source)."""
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


root_finding = load("root_finding")
adaptive_ode = load("adaptive_ode")
rnn = load("rnn")
insertion_sort = load("insertion_sort")
mandelbrot = load("mandelbrot")
kmeans = load("kmeans")
particles = load("particles")
integers = load("integers")
# Library examples: Equinox, Flax and Optax are test dependencies (the compat extra).
equinox_ode = load("equinox_ode")
flax_rnn = load("flax_rnn")
optax_early_stopping = load("optax_early_stopping")


def became(fn, *args, **kwargs):
    """{statement source: what it became} for the loops and ``if``s ``trace_check`` saw."""
    report = autolax.trace_check(fn, *args, **kwargs)
    return {r.source: r.became for r in report.rows if r.kind in ("for", "while", "if")}


def test_every_example_has_a_test_and_a_docstring():
    for path in EXAMPLES.glob("*.py"):
        assert path.stem in globals(), f"examples/{path.name} is not exercised here"
        assert load(path.stem).__doc__.strip(), f"examples/{path.name} has no module docstring"


# --------------------------------------------------------------------------- root finding
@pytest.mark.parametrize("lo,hi", [(0.0, 3.0), (2.0, 2.5), (-4.0, 10.0), (3.0, 4.0)])
def test_bisection(lo, hi):
    root, iterations = assert_matches(root_finding.bisection, lo, hi)
    if iterations:  # a bracketed root: f(root) is (nearly) zero
        assert abs(root_finding.f(root)) < 1e-3
    else:
        assert np.isnan(root)  # (3, 4) brackets no root


@pytest.mark.parametrize("a,x0", [(2.0, 1.0), (9.0, 1.0), (1e-4, 1.0), (1e6, 1.0), (2.0, 0.0), (0.0, 1.0)])
def test_newton_sqrt(a, x0):
    root, iterations, converged = assert_matches(root_finding.newton_sqrt, a, x0)
    if converged:
        assert root == pytest.approx(np.sqrt(a), rel=1e-5)


def test_root_finding_loops_are_staged():
    assert became(autolax.jit(root_finding.bisection), 0.0, 3.0) == {
        "if f_lo * f(hi) > 0:": "lax.cond",
        "while hi - lo > tol and it < max_iter:": "lax.while_loop",
        "if f_mid == 0.0:": "lax.cond",
        "if (f_mid < 0) == (f_lo < 0):": "lax.select",
        # the return after the loop takes effect only if the loop did not return: a cond on
        # the flag (the rest of the function is the first `if`'s staged else branch)
        "return 0.5 * (lo + hi), it": "lax.cond",
    }
    assert became(autolax.jit(root_finding.newton_sqrt), 2.0) == {
        "while it < max_iter:": "lax.while_loop",
        "if slope == 0.0:": "lax.cond",
        "if abs(step) <= tol * abs(x):": "lax.select",
        "return x, it, False": "lax.select",
    }


# --------------------------------------------------------------------------- adaptive ODE
@pytest.mark.parametrize(
    "y0,t_end",
    [([10.0, 5.0], 2.0), ([2.0, 1.0], 1.0), ([10.0, 5.0], 0.0), ([1.0, 1.0], 0.05)],
)
def test_adaptive_ode(y0, t_end):
    y0 = np.array(y0, np.float32)
    y, accepted, rejected = assert_matches(adaptive_ode.integrate, y0, t_end)
    if t_end > 0.5:
        assert accepted > 5 and rejected >= 1  # the step control really acts


def test_adaptive_ode_rejected_steps_shrink_the_step():
    # A huge first step is rejected repeatedly until h is small enough.
    y0 = np.array([10.0, 5.0], np.float32)
    _, accepted, rejected = assert_matches(adaptive_ode.integrate, y0, 1.0, 1e-3, 5.0)
    assert rejected >= 2


def test_adaptive_ode_loop_is_staged():
    assert became(autolax.jit(adaptive_ode.integrate), jnp.array([10.0, 5.0]), 4.0) == {
        "while t < t_end and accepted + rejected < max_steps:": "lax.while_loop",
        # both sides only add scalars or move values (the step's work is before the `if`)
        "if t + h > t_end:": "lax.select",
        "if err <= tol:": "lax.select",
    }


# --------------------------------------------------------------------------- RNN
def rnn_inputs(length, n_in=3, n_hidden=8, seed=0):
    params = rnn.init_params(seed, n_in, n_hidden)
    xs = np.random.default_rng(seed + 1).normal(size=(length, n_in)).astype(np.float32)
    return params, xs, np.zeros(n_hidden, np.float32)


@pytest.mark.parametrize("length,seed", [(1, 0), (7, 1), (20, 2)])
def test_rnn_matches_python(length, seed):
    params, xs, h0 = rnn_inputs(length, seed=seed)
    states, last = assert_matches(rnn.run_rnn, params, xs, h0)
    assert states.shape == (length, 8)


def test_rnn_gradient_matches_python():
    params, xs, h0 = rnn_inputs(6)
    targets = np.sin(np.arange(6.0, dtype=np.float32))
    expected = jax.jit(jax.grad(rnn.loss))(params, xs, targets, h0)  # the Python loop, unrolled
    got = jax.jit(jax.grad(autolax.convert(rnn.loss)))(params, xs, targets, h0)
    assert_close(expected, got)


def test_rnn_program_does_not_grow_with_the_sequence():
    assert became(autolax.jit(rnn.run_rnn), *rnn_inputs(5)) == {"for x in xs:": "lax.scan"}
    sizes = {length: count_equations(jax.make_jaxpr(autolax.convert(rnn.run_rnn))(*rnn_inputs(length)).jaxpr) for length in (5, 500)}
    assert sizes[5] == sizes[500]
    assert primitives(rnn.run_rnn, *rnn_inputs(500))["scan"] == 1
    unrolled = count_equations(jax.make_jaxpr(rnn.run_rnn)(*rnn_inputs(30)).jaxpr)
    assert unrolled > 10 * sizes[500]


# --------------------------------------------------------------------------- insertion sort
@pytest.mark.parametrize(
    "values",
    [
        np.array([5, 2, 9, 1, 5, 6, -3, 0, 2]),
        np.random.default_rng(0).normal(size=8).astype(np.float32),
        np.arange(6)[::-1].copy(),  # reversed: the inner loop runs all the way to j = -1
        np.arange(6),  # already sorted: the inner loop never runs
        np.array([4.0]),
    ],
)
def test_insertion_sort(values):
    got = assert_matches(insertion_sort.insertion_sort, jnp.asarray(values), python_args=(values.copy(),))
    np.testing.assert_array_equal(got, np.sort(values))


def test_insertion_sort_loops_are_staged():
    assert became(autolax.jit(insertion_sort.insertion_sort), jnp.array([3, 1, 2])) == {
        "for i in range(1, len(v)):": "lax.scan",
        "while j >= 0 and v[j] > key:": "lax.while_loop",
    }


# --------------------------------------------------------------------------- Mandelbrot
def test_mandelbrot_grid_matches_python_point_by_point():
    re = np.linspace(-2.0, 0.6, 27, dtype=np.float32)
    im = np.linspace(-1.2, 1.2, 11, dtype=np.float32)
    got = jax.jit(mandelbrot.escape_grid)(re, im)
    # Plain Python, one point at a time, in float32 as the staged version computes.
    expected = np.array([[mandelbrot.escape_count(r, i) for r in re] for i in im])
    np.testing.assert_array_equal(got, expected)
    assert 0 < (expected == 40).sum() < expected.size  # inside and outside points both present
    assert "@" in mandelbrot.render(got)


@pytest.mark.parametrize("c", [(0.0, 0.0), (1.0, 1.0), (-0.75, 0.1), (0.3, 0.5), (-2.0, 0.0)])
def test_mandelbrot_single_point(c):
    assert_matches(mandelbrot.escape_count, *c)


def test_mandelbrot_loop_is_staged_and_vmapped():
    # The `if ...: break` that opens the body is folded into the loop's test (no flag).
    assert became(mandelbrot.escape_count, 0.1, 0.2) == {
        "while n < max_iter:": "lax.while_loop",
        "if x * x + y * y > 4.0:": "lax.while_loop predicate",
    }
    grid = jax.make_jaxpr(mandelbrot.escape_grid)(np.zeros(4, np.float32), np.zeros(3, np.float32))
    from autolax.check import primitive_counts

    assert primitive_counts(grid.jaxpr)["while"] == 1


# --------------------------------------------------------------------------- k-means
def clustered_points(seed, n=40):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [0.0, 5.0]], np.float32)
    return (centers[rng.integers(0, 3, n)] + rng.normal(size=(n, 2))).astype(np.float32)


@pytest.mark.parametrize(
    "seed,init",
    [
        (0, [0, 1, 2]),  # three clusters, started from three of the points
        (1, [5, 6, 7]),
        (2, "far"),  # one centroid no point chooses: the empty-cluster branch
    ],
)
def test_kmeans(seed, init):
    points = clustered_points(seed)
    far = np.array([[0.0, 0.0], [4.0, 4.0], [100.0, 100.0]], np.float32)
    centroids = far if init == "far" else points[init]
    new_centroids, labels, iterations = assert_matches(kmeans.kmeans, points, centroids)
    assert 1 <= iterations < 50  # converged before the budget ran out
    if init == "far":
        assert 2 not in set(np.asarray(labels).tolist())
        np.testing.assert_array_equal(new_centroids[2], far[2])


def test_kmeans_budget_exhausted():
    points = clustered_points(3)
    _, _, iterations = assert_matches(kmeans.kmeans, points, points[:3], 2)
    assert iterations == 2


def test_kmeans_loops_are_staged():
    points = clustered_points(0)
    assert became(autolax.jit(kmeans.kmeans), points, points[:3]) == {
        "for iteration in range(max_iter):": "lax.while_loop (grad: masked lax.scan)",
        "for j in range(centroids.shape[0]):": "lax.scan",
        "if count > 0:": "lax.cond",
        # `if shift <= tol: break` ends the body: the loop tests it in its predicate.
        "if shift <= tol:": "lax.while_loop predicate",
    }


# --------------------------------------------------------------------------- particles
def particle_state(seed, speed, n=5):
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.2, 0.8, (n, 2)).astype(np.float32)
    vel = (rng.normal(size=(n, 2)) * speed).astype(np.float32)
    return pos, vel


@pytest.mark.parametrize("seed,speed", [(1, 0.5), (2, 1.5), (3, 0.05), (4, 0.0)])
def test_particles(seed, speed):
    pos, vel = particle_state(seed, speed)
    step, particle, final = assert_matches(particles.first_escape, pos, vel)
    if step >= 0:  # the reported particle is the first one outside
        outside = (final[:, 0] < 0) | (final[:, 0] > 1.0)
        assert outside[particle] and not outside[:particle].any()


def test_particles_outcomes_cover_both_exits():
    outcomes = {particles.first_escape(*particle_state(seed, speed))[0] >= 0 for seed, speed in [(1, 0.5), (3, 0.05)]}
    assert outcomes == {True, False}


def test_particle_loops_are_staged():
    assert became(autolax.jit(particles.first_escape), *particle_state(1, 0.5)) == {
        "for step in range(n_steps):": "lax.while_loop (grad: masked lax.scan)",
        # The inner loop only records its exit test (the `return` runs after it): nothing it
        # carries has a derivative.
        "for i in range(pos.shape[0]):": "lax.while_loop",
        "if pos[i, 0] < 0.0 or pos[i, 0] > width:": "lax.select",
        "return -1, -1, pos": "lax.select",
    }


# --------------------------------------------------------------------------- integers
@pytest.mark.parametrize("a,b", [(1071, 462), (0, 5), (5, 0), (17, 13), (2**20, 3 * 2**12)])
def test_gcd(a, b):
    assert assert_matches(integers.gcd, a, b) == np.gcd(a, b)


@pytest.mark.parametrize("n", [1, 2, 27, 97])
def test_collatz(n):
    assert_matches(integers.collatz_steps, n)


@pytest.mark.parametrize("target", [1, 7, 15, 0, 8, 16])
def test_binary_search(target):
    xs = np.array([1, 3, 4, 7, 9, 12, 15])
    index = assert_matches(integers.binary_search, xs, target)
    assert index == (list(xs).index(target) if target in xs else -1)


def test_integer_loops_are_staged_and_batch():
    assert became(autolax.jit(integers.gcd), 12, 18) == {"while b != 0:": "lax.while_loop"}
    assert became(autolax.jit(integers.collatz_steps), 27) == {
        "while n != 1:": "lax.while_loop",
        "if n % 2 == 0:": "lax.cond",
    }
    assert became(autolax.jit(integers.binary_search), np.arange(5), 3) == {
        "while lo <= hi:": "lax.while_loop",
        "if xs[mid] == target:": "lax.cond",
        "elif xs[mid] < target:": "lax.cond",  # inside the `if`'s else branch: stays a cond
        "return -1": "lax.select",
    }
    a, b = np.array([12, 35, 7, 0]), np.array([18, 14, 0, 9])
    got = jax.jit(jax.vmap(autolax.convert(integers.gcd)))(a, b)
    np.testing.assert_array_equal(got, [integers.gcd(int(x), int(y)) for x, y in zip(a, b)])


# --------------------------------------------------------------------------- Equinox, Flax, Optax
def test_equinox_ode():
    import equinox as eqx

    solver = equinox_ode.make_solver(jax.random.key(0))
    y0 = jnp.array([1.0, -0.5])
    expected = solver(y0, 2.0)
    got = autolax.filter_jit(solver)(y0, jnp.float32(2.0))
    assert_close(expected[0], got[0], rtol=1e-4, atol=1e-5)
    assert (int(got[1]), int(got[2])) == (int(expected[1]), int(expected[2]))
    rows = became(autolax.filter_jit(solver), y0, jnp.float32(2.0))
    assert rows["while t < t1:"].startswith("lax.while_loop"), rows
    expected_grad = eqx.filter_grad(equinox_ode.final_energy)(solver, y0)
    grad = autolax.filter_jit(eqx.filter_grad(autolax.convert(equinox_ode.final_energy)))(solver, y0)
    assert_close(eqx.filter(expected_grad, eqx.is_array), eqx.filter(grad, eqx.is_array), rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("scale", [0.1, 10.0])
def test_flax_rnn(scale):
    from flax import nnx

    model = flax_rnn.RNN(3, 8, nnx.Rngs(0))
    xs = jax.random.normal(jax.random.key(1), (10, 3)) * scale
    expected = model(xs)
    assert_close(expected, nnx.jit(autolax.convert(flax_rnn.RNN.__call__))(model, xs), rtol=1e-4, atol=1e-5)
    graphdef, state = nnx.split(model)

    def functional(state, xs):
        return nnx.merge(graphdef, state)(xs)

    rows = became(functional, state, xs)
    assert rows["for x in xs:"] == "lax.while_loop (grad: masked lax.scan)", rows
    expected_grad = nnx.grad(flax_rnn.loss)(model, xs)
    grad = nnx.jit(nnx.grad(autolax.convert(flax_rnn.loss)))(model, xs)
    assert_close(nnx.state(expected_grad), nnx.state(grad), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tol", [1e-1, 1e-4])
def test_optax_early_stopping(tol):
    data = optax_early_stopping.make_data()
    params = optax_early_stopping.init_params()
    expected = assert_matches(optax_early_stopping.train, params, *data, tol)
    assert 0 < int(expected[2]) < 1000
    rows = became(autolax.jit(optax_early_stopping.train), params, *data, tol)
    assert rows["while step < max_steps:"] == "lax.while_loop", rows
