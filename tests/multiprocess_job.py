"""One process of the multi-process job that ``tests/integration/devices/test_multiprocess.py`` starts: JAX's
multi-controller runtime on localhost (gloo collectives over 127.0.0.1), each process with
its own CPU devices. Run as ``python multiprocess_job.py PROCESS_ID PROCESS_COUNT PORT
OUT.json {shutdown,no-shutdown} {train,matrix}`` (``train``: (a), (b), (c); ``matrix``: (b),
(c), (d)); the test imports the programs to run them as Python.

(a) ``train``: an Optax loop with early stopping, data-parallel over a batch sharded over
    every device of the job.
(b) ``checked_sums``: a staged loop, appends, a ``raise`` under a traced condition and a
    ``print``; called once where the check fails, then again where it passes.
(c) ``slope``: ``jax.grad`` of a loop bounded by ``max_steps`` that needs more steps (the
    bound's check), then a call that fits.
(d) the composition matrix's constructs (``tests/integration/transforms/test_composition.py``), ``print`` and the
    run-time check among them, under ``jax.jit(jax.vmap(...))`` on 8 lanes sharded over the
    job's devices: its "2 processes" column.
"""

import contextlib
import io
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

import autolax

DEVICES_PER_PROCESS = 2


def mse(params, xs, ys):
    return jnp.mean((params["w"] * xs + params["b"] - ys) ** 2)


def train(params, xs, ys, tol):
    """Adam until the loss is below ``tol`` or stops improving for 5 steps (at most 200)."""
    optimizer = optax.adam(0.1)
    state = optimizer.init(params)
    best = jnp.inf
    since_best = 0
    step = 0
    while step < 200:
        loss, grads = jax.value_and_grad(mse)(params, xs, ys)
        if loss < tol:
            break
        if loss < best:
            best = loss
            since_best = 0
        else:
            since_best += 1
            if since_best >= 5:
                break
        updates, state = optimizer.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        step += 1
    return params, best, step


def checked_sums(x, limit):
    sums = []
    total = 0.0
    for i in range(4):
        s = jnp.sum(x * i)
        sums.append(s)
        total = total + s
    if total > limit:
        raise ValueError("the total is over the limit")
    print("total is", total)
    return jnp.stack(sums)


def bounded(x):
    while x < 100.0:
        autolax.loop_options(max_steps=4)
        x = x * 2.0
    return x


def slope(x):
    return jax.grad(bounded)(x)


def lanes_checked(xs):
    from integration.transforms import test_composition as tc

    return jax.vmap(tc.check_)(xs)


XS = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
YS = 3.0 * XS - 0.5
BATCH = np.arange(8.0, dtype=np.float32) - 3.0
PARAMS = {"w": np.float32(0.0), "b": np.float32(0.0)}


def _gathered(v):
    """``v``, gathered from every process where it is sharded across them."""
    if isinstance(v, jax.Array) and not v.is_fully_addressable and not v.is_fully_replicated:
        from jax.experimental import multihost_utils

        return multihost_utils.process_allgather(v, tiled=True)
    return v


def outcome(call):
    """What a call returned (as lists) or raised, and what it printed."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = jax.tree_util.tree_map(lambda v: np.asarray(_gathered(v)).tolist(), call())
            jax.effects_barrier()
        return {"value": value, "printed": printed.getvalue()}
    except Exception as exc:  # noqa: BLE001 - the outcome under test
        with contextlib.redirect_stdout(printed):
            try:
                jax.effects_barrier()
            except jax.errors.JaxRuntimeError:  # plain jax.jit: JAX raises a failed callback again
                pass
        return {"error": f"{type(exc).__name__}: {exc}", "printed": printed.getvalue()}


def matrix(sharded):
    """(d): every construct under ``jax.vmap``, in one ``jax.jit`` program (one compilation),
    on sharded lanes; then a failing lane of the check."""
    from integration.transforms import test_composition as tc

    constructs = {**tc.CONSTRUCTS, **tc.EFFECTS}
    lanes = {name: np.concatenate([c.lanes, np.asarray(c.lanes) * 1.1]).astype(np.float32)
             for name, c in constructs.items()}

    @jax.jit
    def every_construct(xs):
        return {name: jax.vmap(autolax.convert(c.fn))(xs[name]) for name, c in constructs.items()}

    cells = outcome(lambda: every_construct({name: sharded(v) for name, v in lanes.items()}))
    cells["lanes"] = {name: v.tolist() for name, v in lanes.items()}
    failing = np.concatenate([tc.FAILING_LANES, tc.FAILING_LANES]).astype(np.float32)
    checked = jax.jit(jax.vmap(autolax.convert(tc.check_)))
    cells["check failing jax.jit"] = outcome(lambda: checked(sharded(failing)))
    cells["check passing jax.jit"] = outcome(lambda: checked(sharded(lanes["check"])))
    cells["check failing"] = outcome(lambda: autolax.jit(lanes_checked)(sharded(failing)))
    cells["check passing"] = outcome(lambda: autolax.jit(lanes_checked)(sharded(lanes["check"])))
    return cells


def main(process_id, process_count, port, out_path, ending, parts):
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=process_count,
                               process_id=process_id, initialization_timeout=60)
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("batch",), axis_types=(AxisType.Auto,))

    def sharded(values):
        """``values`` sharded over every device of the job: this process gives its part."""
        local = np.asarray(values).reshape(process_count, -1)[process_id]
        return jax.make_array_from_process_local_data(NamedSharding(mesh, P("batch")), local, np.shape(values))

    def replicated(value):
        return jax.make_array_from_process_local_data(NamedSharding(mesh, P()), np.asarray(value), np.shape(value))

    results = {"devices": n, "local_devices": jax.local_device_count(), "process": jax.process_index()}
    xs, ys = sharded(XS), sharded(YS)
    params = jax.tree_util.tree_map(replicated, PARAMS)
    if parts == "train":
        fit = autolax.jit(train)
        results["train"] = outcome(lambda: fit(params, xs, ys, 1e-2))
        results["train_stalls"] = outcome(lambda: fit(params, xs, ys, 0.0))

    sums = autolax.jit(checked_sums)
    batch = sharded(BATCH)
    results["sums_fails"] = outcome(lambda: sums(batch, 10.0))
    results["sums_passes"] = outcome(lambda: sums(batch, 100.0))

    grad = autolax.jit(slope)
    results["slope_exceeds"] = outcome(lambda: grad(replicated(np.float32(1.0))))
    results["slope_fits"] = outcome(lambda: grad(replicated(np.float32(30.0))))

    converted = jax.jit(autolax.convert(checked_sums))
    results["convert_fails"] = outcome(lambda: converted(batch, 10.0))
    results["convert_passes"] = outcome(lambda: converted(batch, 100.0))

    if parts == "matrix":
        results["matrix"] = matrix(sharded)

    with open(out_path, "w") as f:
        json.dump(results, f)
    if ending == "shutdown":
        jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6])
