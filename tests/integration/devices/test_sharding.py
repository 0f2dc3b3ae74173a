"""``autolax.jit`` forwards jax.jit's options, and converted loops run on sharded arrays and
inside ``jax.shard_map`` (8 simulated CPU devices, in a subprocess: the device count must be
set before JAX starts), matching the unsharded result."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close


def scaled_sum(x, n):
    total = jnp.zeros_like(x)
    for i in range(n):
        if x.sum() > 0:
            total = total + x * i
        else:
            total = total - x
    return total


def test_static_argnums_and_static_argnames_are_forwarded():
    x = jnp.arange(3.0)
    by_num = autolax.jit(scaled_sum, static_argnums=1)
    by_name = autolax.jit(scaled_sum, static_argnames="n")
    expected = scaled_sum(np.arange(3.0), 4)
    assert_close(expected, by_num(x, 4))
    assert_close(expected, by_name(x, n=4))
    # `n` is static: a Python int, so `range(n)` is a static trip count (a scan)
    assert "scan" in str(by_num.trace(x, 4).jaxpr)


def test_donate_argnums_is_forwarded():
    jitted = autolax.jit(scaled_sum, static_argnums=1, donate_argnums=0)
    lowered = jitted.lower(jnp.arange(3.0), 2)
    assert lowered.args_info[0][0].donated and not autolax.jit(scaled_sum, static_argnums=1).lower(
        jnp.arange(3.0), 2
    ).args_info[0][0].donated
    x = jnp.arange(3.0)
    expected = scaled_sum(np.arange(3.0), 2)
    assert_close(expected, jitted(x, 2))
    # CPU honours donation: the argument's buffer is consumed
    assert x.is_deleted()


def test_device_and_shardings_are_forwarded():
    device = jax.devices()[0]
    sharding = jax.sharding.SingleDeviceSharding(device)
    x = jnp.arange(3.0)
    expected = scaled_sum(np.arange(3.0), 3)
    out = autolax.jit(scaled_sum, static_argnums=1, in_shardings=(sharding,), out_shardings=sharding)(x, 3)
    assert_close(expected, out)
    assert out.sharding == sharding
    # jax.jit's own deprecation warning for `device=` shows that it reached jax.jit
    with pytest.warns(DeprecationWarning, match="device argument on jit is deprecated"):
        out = autolax.jit(scaled_sum, static_argnums=1, device=device)(x, 3)
    assert_close(expected, out)
    assert out.devices() == {device}
    # jax.jit rejects an unknown option: autolax passes it on unchanged
    with pytest.raises(TypeError, match="no_such_option"):
        autolax.jit(scaled_sum, no_such_option=1)


def test_jit_object_keeps_jax_jit_behaviour():
    jitted = autolax.jit(scaled_sum, static_argnums=1)
    x = jnp.arange(3.0)
    assert_close(scaled_sum(np.arange(3.0), 2), jitted(x, 2))
    assert jitted.eval_shape(x, 2).shape == (3,)
    assert "stablehlo" in jitted.lower(x, 2).as_text() or "func" in jitted.lower(x, 2).as_text()


# ----------------------------------------------------------------------------- shard_map
def psum_in_loop(x):
    total = 0.0  # starts replicated, becomes the (replicated) global sum
    for i in range(3):
        total = total + jax.lax.psum(x.sum(), "d")
        x = x + total
    return x


def local_while(x):
    while jnp.max(jnp.abs(x)) < 100.0:  # a predicate that varies across devices
        x = x * 2.0
    return x


def varying_carry(x):
    acc = 0.0  # starts replicated, becomes device-varying: promoted like a dtype
    for i in range(3):
        acc = acc + x.sum() * i
    return x * acc


@pytest.fixture(scope="module")
def one_device_mesh():
    # Explicit axes, JAX's default from 0.9 on (0.8 defaults to Auto)
    return jax.make_mesh((1,), ("d",), axis_types=(jax.sharding.AxisType.Explicit,))


def _shard_mapped(fn, mesh):
    P = jax.sharding.PartitionSpec
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("d"), out_specs=P("d")))


def _on(mesh, x):
    return jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d")))


def np_psum_in_loop(x):
    total = 0.0
    for i in range(3):
        total = total + x.sum()  # on one device, psum is the identity
        x = x + total
    return x


@pytest.mark.parametrize(
    "fn,reference", [(psum_in_loop, np_psum_in_loop), (local_while, local_while), (varying_carry, varying_carry)]
)
def test_shard_map_body_replays_with_device_varying_types(fn, reference, one_device_mesh):
    # Bodies are traced once with jax.make_jaxpr and replayed: they must be traced with the
    # values' shard_map types (which axes they vary over), or the replay inserts the wrong
    # collectives ("pvary is a invariant->variant collective", "Primitive lt requires
    # varying manual axes to match").
    x = np.arange(4.0) - 1.0
    got = _shard_mapped(autolax.convert(fn), one_device_mesh)(_on(one_device_mesh, jnp.asarray(x)))
    assert_close(reference(x), got)


def rotated_break(x):
    for i in range(8):
        if x > 5.0:  # tested in the loop's predicate (loop rotation)
            break
        x = x * 1.7
    return x


def rotated_return(x):
    for i in range(8):
        if 1.0 / x < 0.25:  # divides: past the last item it runs under a lax.cond
            return x * 2.0
        x = x * 1.5 + 0.1
    return -x


@pytest.mark.parametrize("fn", [rotated_break, rotated_return])
def test_rotated_exit_test_varies_over_the_mesh_axis(fn, one_device_mesh):
    # The predicate's test varies over "d" as the carry does; the value the loop takes past
    # its last item ("not tested": False) must vary there too, or lax.cond's branches differ.
    x = np.array([0.5, 2.0, 6.0, 4.0], np.float32)
    got = _shard_mapped(jax.vmap(autolax.convert(fn)), one_device_mesh)(_on(one_device_mesh, jnp.asarray(x)))
    assert_close(np.array([fn(v) for v in x]), got)


def test_grad_through_converted_loop_inside_shard_map(one_device_mesh):
    def damped(x):
        total = 0.0
        for i in range(3):
            total = total + jax.lax.psum(x.sum(), "d")
            x = x + total
            if x.sum() > 100:
                x = x * 0.5
        return x

    def np_damped(x):
        total = 0.0
        for i in range(3):
            total = total + x.sum()
            x = x + total
            if x.sum() > 100:
                x = x * 0.5
        return x

    x = np.arange(4.0)
    sm = jax.shard_map(autolax.convert(damped), mesh=one_device_mesh, in_specs=jax.sharding.PartitionSpec("d"),
                       out_specs=jax.sharding.PartitionSpec("d"))
    grad = jax.jit(jax.grad(lambda v: sm(v).sum()))(_on(one_device_mesh, jnp.asarray(x)))
    eps = 1e-4
    fd = [(np_damped(x + eps * e).sum() - np_damped(x - eps * e).sum()) / (2 * eps) for e in np.eye(4)]
    assert_close(np.array(fd), grad, rtol=1e-4)


def rows_with_psum(xs):
    acc = jnp.zeros(xs.shape[1:])
    for row in xs:  # the rows of a device's block vary across devices, like the block
        if row.sum() > 0:
            acc = acc + row * jax.lax.psum(row.sum(), "d")
    return acc[None]


def test_loop_over_array_rows_inside_shard_map(one_device_mesh):
    x = np.arange(12.0).reshape(4, 3) - 5
    got = _shard_mapped(autolax.convert(rows_with_psum), one_device_mesh)(_on(one_device_mesh, jnp.asarray(x)))
    expected = np.zeros(3)
    for row in x:
        if row.sum() > 0:
            expected = expected + row * row.sum()
    assert_close(expected[None], got)


def test_loop_over_rows_of_a_column_sharded_array(one_device_mesh):
    def weighted_rows(xs):
        acc = jnp.zeros(xs.shape[1:])
        for i, row in enumerate(xs):
            acc = acc + row * i
        return acc

    x = np.arange(12.0).reshape(4, 3)
    cols = jax.sharding.NamedSharding(one_device_mesh, jax.sharding.PartitionSpec(None, "d"))
    with jax.set_mesh(one_device_mesh):
        got = autolax.jit(weighted_rows)(jax.device_put(jnp.asarray(x), cols))
    assert_close(weighted_rows(x), got)
    assert got.sharding.spec == jax.sharding.PartitionSpec("d")


def test_carry_takes_the_sharding_it_reaches(one_device_mesh):
    # Under a mesh with explicit axes, shardings are part of the type: `acc` starts as an
    # unsharded zeros array and becomes sharded like `x` -- promoted, as a dtype would be.
    def weighted(x):
        acc = jnp.zeros(x.shape)
        for i in range(3):
            acc = acc + x * i
        return acc

    x = np.arange(4.0)
    with jax.set_mesh(one_device_mesh):
        got = autolax.jit(weighted)(_on(one_device_mesh, jnp.asarray(x)))
    assert_close(weighted(x), got)
    assert got.sharding.spec == jax.sharding.PartitionSpec("d")


# ----------------------------------------------------------------------------- 8 devices
_MULTI_DEVICE = textwrap.dedent(
    """
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    import warnings
    import autolax

    warnings.simplefilter("error", autolax.UnrolledLoopWarning)
    assert len(jax.devices()) == 8, jax.devices()
    mesh = jax.make_mesh((8,), ("d",))

    def grow(x):
        steps = 0
        while jnp.max(jnp.abs(x)) < 100.0:
            x = x * 2.0
            steps += 1
        return x, steps

    def smooth(x):
        acc = jnp.zeros(x.shape)
        for i in range(3):
            if x.sum() > 0:
                acc = acc + x * i
            else:
                acc = acc - x
        return acc

    def global_norm_steps(x):
        # a collective inside a staged loop body, and a carry that starts replicated
        # (a Python float) and becomes device-varying
        t = 0.0
        for i in range(3):
            t = t + jax.lax.psum(x.sum(), "d")
            x = x + t
        local = 0.0
        for i in range(2):
            local = local + x.sum()
        return x * local

    def local_grow(x):
        x, steps = grow(x)
        return x, jnp.reshape(steps, (1,))

    def close(a, b):
        for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)

    x = jnp.arange(16.0) - 3.0
    xs = jax.device_put(x, NamedSharding(mesh, P("d")))

    # jit on a NamedSharding-sharded array: same values as plain Python on one device
    for fn in (grow, smooth):
        expected = fn(np.asarray(x))
        close(expected, autolax.jit(fn)(xs))
        close(expected, jax.jit(autolax.convert(fn))(xs))
    out = autolax.jit(smooth, out_shardings=NamedSharding(mesh, P("d")))(xs)
    assert out.sharding.spec == P("d"), out.sharding
    with jax.set_mesh(mesh):
        close(smooth(np.asarray(x)), autolax.jit(smooth)(xs))

    # shard_map: each device runs the converted loop on its block
    blocks = np.asarray(x).reshape(8, 2)
    sm = jax.jit(jax.shard_map(autolax.convert(local_grow), mesh=mesh, in_specs=P("d"), out_specs=(P("d"), P("d"))))
    got_x, got_steps = sm(xs)
    per_block = [grow(b) for b in blocks]
    close(np.concatenate([b for b, _ in per_block]), got_x)
    close(np.array([s for _, s in per_block]), got_steps)

    sm = jax.jit(jax.shard_map(autolax.convert(global_norm_steps), mesh=mesh, in_specs=P("d"), out_specs=P("d")))
    plain = jax.jit(jax.shard_map(global_norm_steps, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
    close(plain(xs), sm(xs))
    # by hand: the psum is the global sum
    b = blocks.copy(); t = 0.0
    for i in range(3):
        t = t + b.sum(); b = b + t
    local = b.sum(axis=1, keepdims=True) * 2
    close((b * local).reshape(-1), sm(xs))

    sm = jax.jit(jax.shard_map(autolax.convert(smooth), mesh=mesh, in_specs=P("d"), out_specs=P("d")))
    close(np.concatenate([smooth(b) for b in blocks]), sm(xs))

    # shard_map(vmap(f)): a staged `if` in a staged loop reads the loop's index or item,
    # which do not vary over "d" while x does (JAX's vmap of lax.cond failed on that:
    # "pvary is a invariant->variant collective"); the table is replicated (P()).
    def halve_past_index(x):
        for i in range(3):
            if x > 1.0:
                x = x * 0.5 + i
        return x

    def halve_past_items(x, table):
        for t in table:
            if x > t:
                x = x * 0.5 + t
        return x

    lanes = np.arange(16.0, dtype=np.float32) * 0.5
    xs = jax.device_put(jnp.asarray(lanes), NamedSharding(mesh, P("d")))
    sm = jax.jit(jax.shard_map(jax.vmap(autolax.convert(halve_past_index)), mesh=mesh, in_specs=P("d"),
                               out_specs=P("d")))
    close(np.array([halve_past_index(float(v)) for v in lanes]), sm(xs))
    table = [0.5, 1.5, 2.5]
    sm = jax.jit(jax.shard_map(jax.vmap(autolax.convert(halve_past_items), in_axes=(0, None)), mesh=mesh,
                               in_specs=(P("d"), P()), out_specs=P("d")))
    close(np.array([halve_past_items(float(v), table) for v in lanes]), sm(xs, jnp.asarray(table)))
    print("ok")
    """
)


def test_sharded_arrays_and_shard_map_on_8_devices(tmp_path):
    script = tmp_path / "multi_device.py"  # a file: autolax reads the functions' source
    script.write_text(_MULTI_DEVICE)
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env.pop("JAX_ENABLE_X64", None)
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=os.path.dirname(__file__),
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("ok")
