"""Staged ``print`` and run-time checks on one device and on four (simulated CPU devices, in
a subprocess: the device count is fixed when JAX starts), on every path, with the input
sharded over the devices; and the same program under ``jax.shard_map``, where print and
checks run per shard. README "Many devices and hosts" states the rules tested here; the
2-process job is ``tests/integration/devices/test_multiprocess.py``."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
import paths


def halve_until_small(x):
    s = jnp.sum(x)
    while s > 1.0:
        s = s * 0.5
    print("s is", s)
    return s


def raise_if_positive(x):
    if jnp.sum(x) > 0:
        raise ValueError("the sum is positive")
    print("no error")
    return x * 2


def block_steps(x):
    """Per shard: a staged loop, appends, a check and a print."""
    sums = []
    s = jnp.sum(x)
    for i in range(3):
        s = s * 0.5 + i
        sums.append(s)
    if s > 4.0:
        raise ValueError("a block's sum is over 4")
    print("block", s)
    return jnp.stack(sums)


INPUT = np.arange(8.0, dtype=np.float32) - 3.0


@pytest.mark.parametrize("fn,x", [(halve_until_small, INPUT), (raise_if_positive, INPUT),
                                  (raise_if_positive, INPUT - 10.0)])
def test_one_device_every_path(fn, x, tmp_path):
    paths.check_all_paths(fn, jnp.asarray(x), tmp_dir=str(tmp_path))


FOUR_DEVICES = textwrap.dedent(
    """
    import json, sys, tempfile
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    import autolax, paths
    import test_many_devices as t

    assert jax.device_count() == 4, jax.devices()
    mesh = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,))
    sharded = lambda v: jax.device_put(jnp.asarray(v), NamedSharding(mesh, P("d")))
    tmp = tempfile.mkdtemp()
    report = {"problems": [], "printed": {}, "raised": {}}
    for fn, x in ((t.halve_until_small, t.INPUT), (t.raise_if_positive, t.INPUT), (t.raise_if_positive, t.INPUT - 10)):
        expected = paths.run("python", fn, (x,))
        for path in paths.PATHS:
            got = paths.run(path, fn, (sharded(x),), tmp_dir=tmp)
            why = paths.agrees(expected, got, path, allow_refusal=False)
            if why:
                report["problems"].append(f"{fn.__name__} {path}: {why}")
            report["printed"][f"{fn.__name__} {path} {float(x.sum())}"] = got.printed
            report["raised"][f"{fn.__name__} {path} {float(x.sum())}"] = got.kind

    # shard_map: each of the four blocks runs the function
    def per_shard(fn):
        return jax.shard_map(autolax.convert(fn), mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    for name, jitted in (("autolax.jit", autolax.jit(per_shard(t.block_steps))),
                         ("jax.jit", jax.jit(per_shard(t.block_steps)))):
        for label, x in (("passes", t.INPUT), ("fails", t.INPUT + 4.0), ("again", t.INPUT)):
            got = paths._capture(lambda: jitted(sharded(x)))
            report[f"shard_map {name} {label}"] = {
                "printed": got.printed, "kind": got.kind, "error": str(got.error) if got.error else None,
                "value": None if got.error else np.asarray(got.value).tolist()}
    json.dump(report, sys.stdout)
    """
)


def python_blocks(x):
    """``block_steps`` run as Python on each of the four blocks of ``x``: what each printed,
    the first error (in block order), and the values."""
    outs = [paths.run("python", block_steps, (jnp.asarray(block),)) for block in np.split(x, 4)]
    return outs


@pytest.fixture(scope="module")
def four_devices():
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env["JAX_PLATFORMS"] = "cpu"
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.path.dirname(os.path.dirname(here)), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", FOUR_DEVICES], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_four_devices_every_path_prints_and_raises_as_python(four_devices):
    assert four_devices["problems"] == []
    # the reproducers exactly: Python's printed text, and the user's exception from autolax.jit
    assert four_devices["printed"]["halve_until_small autolax.jit 4.0"] == "s is 1.0\n"
    assert four_devices["raised"]["raise_if_positive autolax.jit 4.0"] == "ValueError"
    assert four_devices["printed"]["raise_if_positive autolax.jit 4.0"] == ""
    # a second call after the failure works and prints
    assert four_devices["printed"]["raise_if_positive autolax.jit -76.0"] == "no error\n"


@pytest.mark.parametrize("name", ["autolax.jit", "jax.jit"])
def test_shard_map_prints_and_checks_per_shard(four_devices, name):
    passes, fails, again = (four_devices[f"shard_map {name} {label}"] for label in ("passes", "fails", "again"))
    for got, x in ((passes, INPUT), (again, INPUT)):
        blocks = python_blocks(x)
        assert all(b.error is None for b in blocks)
        # one line per shard, in any order (the shards run at once)
        assert sorted(got["printed"].splitlines()) == sorted(b.printed.strip() for b in blocks)
        np.testing.assert_allclose(np.concatenate([np.asarray(b.value) for b in blocks]), got["value"], rtol=1e-6)
    blocks = python_blocks(INPUT + 4.0)
    failing = [b for b in blocks if b.error is not None]
    assert failing and len(failing) < len(blocks)
    # the shards whose check passed print; the failed check's error is raised
    assert sorted(fails["printed"].splitlines()) == sorted(b.printed.strip() for b in blocks if b.error is None)
    if name == "autolax.jit":
        assert fails["kind"] == "ValueError" and fails["error"] == "a block's sum is over 4"
    else:  # plain jax.jit: JAX's runtime error holding the user's
        assert fails["kind"] == "JaxRuntimeError" and "ValueError: a block's sum is over 4" in fails["error"]


def test_autolax_jit_called_inside_your_own_transform():
    """A check of an ``autolax.jit`` function called inside a user's ``jax.jit`` or
    ``jax.vmap`` is handed to the enclosing trace: JAX's runtime error holding the user's
    (plain ``jax.jit`` around it), the user's error (``vmap`` run eagerly, an ``autolax.jit``
    around it)."""
    inner = autolax.jit(raise_if_positive)
    x = jnp.asarray(INPUT)
    with pytest.raises(jax.errors.JaxRuntimeError, match="ValueError: the sum is positive"):
        jax.block_until_ready(jax.jit(lambda v: inner(v))(x))
    with pytest.raises(ValueError, match="the sum is positive"):
        jax.vmap(inner)(jnp.stack([x - 10.0, x]))
    with pytest.raises(ValueError, match="the sum is positive"):
        autolax.jit(lambda v: inner(v))(x)
    np.testing.assert_allclose(jax.jit(lambda v: inner(v))(x - 10.0), (INPUT - 10.0) * 2)
    np.testing.assert_allclose(autolax.jit(lambda v: inner(v))(x - 10.0), (INPUT - 10.0) * 2)
