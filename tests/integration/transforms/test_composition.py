"""The composition matrix: every converted construct (if, while, for over a range, for over an
array, break, continue, early return, list appends, item assignment) under every transform
(grad, vmap, grad∘vmap, vmap∘grad, jvp, jax.checkpoint, sharding over 8 devices, typed PRNG
keys, jax.export, .lower().compile(), jax.jit tracing once).

Each cell
- proves with ``autolax.trace_check``, run on the transformed function, that the construct
  was lowered to lax (not decided by Python while tracing);
- uses vmap lanes that take different branches and run different numbers of iterations;
- compares with the Python program run on each lane's concrete value: its values, and for
  derivatives JAX's derivative of the Python program itself (``jax.grad`` / ``jax.jvp`` of
  the unconverted function follow Python's control flow on the concrete primal, i.e. they
  differentiate the unrolled program).

A cell that is a documented limitation asserts the error; a cell that is a known bug is an
``xfail(strict=True)``, so that fixing it makes the test suite say so.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close


# ----------------------------------------------------------------------------- constructs
def if_(x):
    if x > 1.0:
        y = x**3
    elif x > -1.0:
        y = jnp.sin(x) * 2.0
    else:
        y = -x * 5.0
    return y


def while_(x):
    n = 0.0
    while x < 10.0:
        autolax.loop_options(max_steps=64)  # bounded: reverse-differentiable
        x = x * 1.5 + 0.3
        n = n + 1.0
    return x + n


def for_range(x):
    n = jnp.floor(x).astype(jnp.int32)  # a traced trip count
    acc = 0.0
    for i in range(n):
        autolax.loop_options(max_steps=16)
        acc = acc * 0.5 + jnp.sin(x * i)
    return acc


def for_array(x):
    acc = 0.0
    for v in jnp.arange(-2.0, 3.0) * x:
        if v > 1.0:
            acc = acc + v * v
        else:
            acc = acc - jnp.sin(v)
    return acc


def break_(x):
    for i in range(8):
        if x > 5.0:
            break
        x = x * 1.7
    return x


def continue_(x):
    for i in range(6):
        x = x * 1.2
        if x > 3.0:
            continue
        x = x + jnp.cos(x)
    return x


def early_return(x):
    for i in range(8):
        if x > 4.0:
            return x * 2.0
        x = x * 1.5 + 0.1
    return -x


def appends(x):
    out = []
    for i in range(5):
        if x > i:
            y = x * i
        else:
            y = jnp.sin(x)
        out.append(y)
        x = x * 0.9
    ys = jnp.stack(out)
    return ys.sum() + ys[-1]


def setitem(x):
    v = jnp.zeros(4)
    for i in range(4):
        if x > i:
            v[i] = x * i
        else:
            v[i] = -x
        x = x * 0.8
    return (v * jnp.arange(1.0, 5.0)).sum()


def python_setitem(x):
    """``setitem`` as Python runs it: a JAX array is immutable, so the item assignment is
    written with ``.at`` (what autolax rewrites it to)."""
    v = jnp.zeros(4)
    for i in range(4):
        if x > i:
            v = v.at[i].set(x * i)
        else:
            v = v.at[i].set(-x)
        x = x * 0.8
    return (v * jnp.arange(1.0, 5.0)).sum()


@dataclass(frozen=True)
class Construct:
    fn: object
    lanes: tuple  # vmap lanes: different branches, different trip counts
    kinds: frozenset  # statement kinds trace_check must show lowered to lax
    python: object = None  # the Python program, where it is not `fn` itself

    @property
    def reference(self):
        return self.python or self.fn


CONSTRUCTS = {
    "if": Construct(if_, (-3.0, 0.3, 2.0, 0.7), frozenset({"if"})),
    # trip counts 6, 4, 1, 0
    "while": Construct(while_, (0.5, 2.0, 9.0, 12.0), frozenset({"while"})),
    # trip counts 0, 2, 3, 5
    "for-range": Construct(for_range, (0.5, 2.0, 3.5, 5.2), frozenset({"for"})),
    "for-array": Construct(for_array, (-1.5, 0.3, 0.8, 2.0), frozenset({"for", "if"})),
    # breaks after 4, 2, 0 and 1 iterations
    "break": Construct(break_, (0.5, 2.0, 6.0, 4.0), frozenset({"for", "if"})),
    "continue": Construct(continue_, (-1.0, 0.5, 2.0, 4.0), frozenset({"for", "if"})),
    # returns in iterations 4, 2, 0; never
    "early-return": Construct(early_return, (0.5, 2.0, 5.0, -1.0), frozenset({"for", "if"})),
    "appends": Construct(appends, (-0.5, 1.5, 2.5, 6.0), frozenset({"for", "if"})),
    "setitem": Construct(setitem, (-0.5, 1.5, 2.5, 6.0), frozenset({"for", "if"}), python_setitem),
}

# Cells that are documented limitations: (construct, cell) -> (error type, message). None
# today: a bounded loop (loop_options(max_steps=...)) is reverse-differentiable through a
# jax.custom_vjp, which has no forward mode, so under jvp it runs as a plain while_loop.
LIMITATIONS: dict = {}

# Cells that are bugs: xfail(strict=True) until fixed.
_STOP_GRADIENT = (
    "issue 15: grad of vmap of an early exit from a fixed-trip for (break, return) fails in JAX's "
    "transpose: NotImplementedError: Transpose rule (for reverse-mode differentiation) for "
    "'stop_gradient' not implemented (grad and vmap of grad work)"
)
KNOWN_BUGS: dict = {}  # (construct, cell) -> why it fails; empty since grad(vmap) of early exits works


def lowered(report, kinds):
    """Every statement of ``kinds`` in ``report`` was lowered to lax, and each kind is there."""
    rows = [r for r in report.rows if r.filename == __file__]
    assert kinds <= {r.kind for r in rows}, str(report)
    for r in rows:
        assert r.became.startswith("lax."), str(report)
    return report


def lanes_of(construct):
    return jnp.asarray(construct.lanes, jnp.float32)


def run_cell(name, cell, body):
    """Runs ``body()``; a documented limitation must raise its error instead."""
    if (name, cell) in KNOWN_BUGS:
        pytest.xfail(KNOWN_BUGS[name, cell])
    if (name, cell) in LIMITATIONS:
        kind, message = LIMITATIONS[name, cell]
        with pytest.raises(kind, match=message):
            body()
    else:
        body()


def cells(*names):
    params = []
    for name in CONSTRUCTS:
        for cell in names:
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[name, cell])] if (name, cell) in KNOWN_BUGS else []
            params.append(pytest.param(name, cell, marks=marks, id=f"{name}-{cell}"))
    return pytest.mark.parametrize("name,cell", params)


# ----------------------------------------------------------------------------- values, derivatives
@cells("jit")
def test_jit(name, cell):
    construct = CONSTRUCTS[name]
    jitted = autolax.jit(construct.fn)
    lowered(autolax.trace_check(jitted, 0.0), construct.kinds)
    for x in construct.lanes:
        assert_close(construct.reference(x), jitted(x), rtol=1e-5)


def transformed(construct, cell):
    """The cell's transform of the converted function, a function of the lanes array."""
    c = autolax.convert(construct.fn)
    forms = {
        # per lane, one scalar call each: the plain transform, no vmap
        "grad": lambda xs: jnp.stack([jax.grad(c)(x) for x in xs]),
        "jvp": lambda xs: jnp.stack([jnp.stack(jax.jvp(c, (x,), (jnp.ones_like(x),))) for x in xs]),
        "checkpoint": lambda xs: jnp.stack([jax.grad(jax.checkpoint(c))(x) for x in xs]),
        "vmap": jax.vmap(c),
        "grad-vmap": jax.grad(lambda xs: jax.vmap(c)(xs).sum()),
        "vmap-grad": jax.vmap(jax.grad(c)),
    }
    form = forms[cell]

    def run(xs):  # a plain function: trace_check traces it as written
        return form(xs)

    return run


def expected(construct, cell):
    ref = construct.reference
    xs = [jnp.float32(x) for x in construct.lanes]
    if cell == "vmap":
        return np.array([ref(x) for x in xs])
    if cell == "jvp":
        return np.array([np.array(jax.jvp(ref, (x,), (jnp.ones_like(x),))) for x in xs])
    # every other cell is the derivative of each lane's Python program
    return np.array([jax.grad(ref)(x) for x in xs])


@cells("grad", "vmap", "grad-vmap", "vmap-grad", "jvp", "checkpoint")
def test_transform(name, cell):
    construct = CONSTRUCTS[name]
    fn = transformed(construct, cell)
    xs = lanes_of(construct)

    def body():
        lowered(autolax.trace_check(fn, xs), construct.kinds)
        assert_close(expected(construct, cell), jax.jit(fn)(xs), rtol=1e-4, atol=1e-5)

    run_cell(name, cell, body)


def unbounded_while(x):
    n = 0.0
    while x < 10.0:
        x = x * 1.5 + 0.3
        n = n + 1.0
    return x + n


def test_while_without_bound_has_forward_mode_not_reverse():
    """The other side of the ``while``/``jvp`` limitation: without ``max_steps`` the loop is
    a plain ``lax.while_loop``, forward-differentiable, and ``jax.grad`` is JAX's error."""
    c = autolax.convert(unbounded_while)
    xs = jnp.asarray(CONSTRUCTS["while"].lanes, jnp.float32)
    got = jax.jit(jax.vmap(lambda x: jax.jvp(c, (x,), (1.0,))))(xs)
    want = [jax.jvp(unbounded_while, (x,), (1.0,)) for x in np.asarray(xs)]
    assert_close(np.array(want).T, np.array(got))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(c)(0.5)


def append_in_branches(x):
    out = []
    for i in range(5):
        if x > i:
            out.append(x * i)
        else:
            out.append(jnp.sin(x))
        x = x * 0.9
    return jnp.stack(out).sum()


@pytest.mark.parametrize("x", [2.5, -1.0, 9.0])
def test_append_in_both_branches_of_a_traced_if_is_staged(x):
    # One item on every path: the appends are one append after the `if` (passes/lists.py).
    lowered(autolax.trace_check(append_in_branches, 2.5), frozenset({"for", "if"}))
    assert_close(append_in_branches(x), autolax.jit(append_in_branches)(x))
    assert_close(jax.grad(append_in_branches)(x), jax.grad(autolax.jit(append_in_branches))(x))


# ----------------------------------------------------------------------------- export, compile, tracing
@cells("export")
def test_export_round_trip(name, cell):
    construct = CONSTRUCTS[name]
    jitted = autolax.jit(construct.fn)
    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    exported = jax.export.deserialize(jax.export.export(jitted)(scalar).serialize())
    batched = jax.export.export(jax.jit(jax.vmap(autolax.convert(construct.fn))))(
        jax.ShapeDtypeStruct((len(construct.lanes),), jnp.float32)
    )
    assert "while" in batched.mlir_module() or "case" in batched.mlir_module() or "select" in batched.mlir_module()
    for x in construct.lanes:
        assert_close(construct.reference(x), exported.call(jnp.float32(x)), rtol=1e-5)
    assert_close(np.array([construct.reference(x) for x in construct.lanes]), batched.call(lanes_of(construct)), rtol=1e-5)


@cells("lower-compile")
def test_lower_compile(name, cell):
    construct = CONSTRUCTS[name]
    compiled = autolax.jit(construct.fn).lower(jnp.float32(0.0)).compile()
    for x in construct.lanes:
        assert_close(construct.reference(x), compiled(jnp.float32(x)), rtol=1e-5)


@cells("traces-once")
def test_jax_jit_of_converted_traces_once_over_100_calls(name, cell):
    construct = CONSTRUCTS[name]
    traces = []

    @autolax.do_not_convert  # a trace counter: once per trace on purpose (autolax refuses it in converted code)
    def note_trace():
        traces.append(1)

    def counted(x):
        note_trace()  # runs only while tracing
        return construct.fn(x)

    for jitted in (jax.jit(autolax.convert(counted)), autolax.jit(counted)):
        traces.clear()
        outs = [jitted(jnp.float32(construct.lanes[i % len(construct.lanes)])) for i in range(100)]
        assert len(traces) == 1
        assert_close([construct.reference(x) for x in construct.lanes], outs[: len(construct.lanes)], rtol=1e-5)


# ----------------------------------------------------------------------------- typed PRNG keys
def key_if(key, x):
    key, sub = jax.random.split(key)
    if x > 0.0:
        key, sub = jax.random.split(key)
        x = x + jax.random.normal(sub)
    else:
        key = jax.random.fold_in(key, 7)
    return x * 2.0, key


def key_while(key, x):
    while x < 10.0:
        autolax.loop_options(max_steps=64)
        key, sub = jax.random.split(key)
        x = jnp.abs(x) * 1.5 + jax.random.uniform(sub)
    return x, key


def key_for_range(key, x):
    for i in range(jnp.floor(jnp.abs(x)).astype(jnp.int32)):
        autolax.loop_options(max_steps=16)
        key, sub = jax.random.split(key)
        x = x + jax.random.uniform(sub)
    return x, key


def key_for_array(key, x):
    for v in jnp.arange(3.0) * x:
        key, sub = jax.random.split(key)
        if v > 1.0:
            x = x + v * jax.random.uniform(sub)
    return x, key


def key_break(key, x):
    for i in range(8):
        if x > 5.0:
            break
        key, sub = jax.random.split(key)
        x = x * 1.7 + jax.random.uniform(sub)
    return x, key


def key_continue(key, x):
    for i in range(6):
        key, sub = jax.random.split(key)
        if jax.random.uniform(sub) > 0.5:
            continue
        x = x * 1.3
    return x, key


def key_return(key, x):
    for i in range(8):
        key, sub = jax.random.split(key)
        if x > 4.0:
            return x * 2.0, key
        x = x * 1.5 + jax.random.uniform(sub)
    return -x, key


def key_appends(key, x):
    draws = []
    for i in range(4):
        key, sub = jax.random.split(key)
        if x > i:
            d = x * jax.random.normal(sub)
        else:
            d = x
        draws.append(d)
    return jnp.stack(draws).sum(), key


def key_setitem(key, x):
    keys = jax.random.split(key, 3)
    for i in range(3):
        if x > i:
            keys[i] = jax.random.fold_in(keys[i], 1)
    return x * 1.0, keys


def python_key_setitem(key, x):
    keys = jax.random.split(key, 3)
    for i in range(3):
        if x > i:
            keys = keys.at[i].set(jax.random.fold_in(keys[i], 1))
    return x * 1.0, keys


KEYED = {
    "if": (key_if, key_if, frozenset({"if"})),
    "while": (key_while, key_while, frozenset({"while"})),
    "for-range": (key_for_range, key_for_range, frozenset({"for"})),
    "for-array": (key_for_array, key_for_array, frozenset({"for", "if"})),
    "break": (key_break, key_break, frozenset({"for", "if"})),
    "continue": (key_continue, key_continue, frozenset({"for", "if"})),
    "early-return": (key_return, key_return, frozenset({"for", "if"})),
    "appends": (key_appends, key_appends, frozenset({"for", "if"})),
    "setitem": (key_setitem, python_key_setitem, frozenset({"for", "if"})),
}
KEY_LANES = (-1.0, 0.5, 2.0, 4.5)


def _key_values(out):
    x, key = out
    return np.asarray(x), np.asarray(jax.random.key_data(key))


@pytest.mark.parametrize("name", KEYED)
def test_typed_prng_key_carried(name):
    fn, python, kinds = KEYED[name]
    keys = jax.random.split(jax.random.key(0), len(KEY_LANES))
    xs = jnp.asarray(KEY_LANES, jnp.float32)
    assert jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
    lowered(autolax.trace_check(fn, keys[0], xs[0]), kinds)
    batched = jax.jit(jax.vmap(autolax.convert(fn)))(keys, xs)
    assert jax.dtypes.issubdtype(batched[1].dtype, jax.dtypes.prng_key)
    jitted = autolax.jit(fn)
    for i in range(len(KEY_LANES)):
        want = _key_values(python(keys[i], xs[i]))
        assert_close(want, _key_values(jitted(keys[i], xs[i])))
        assert_close(want, _key_values((batched[0][i], batched[1][i])))
    # the key is not differentiated; x is, through the branches and loops the key rides
    grad = jax.jit(jax.vmap(jax.grad(lambda k, x: autolax.convert(fn)(k, x)[0], argnums=1)))(keys, xs)
    want = [jax.grad(lambda x, k=keys[i]: python(k, x)[0])(xs[i]) for i in range(len(KEY_LANES))]
    assert_close(np.array(want), grad, rtol=1e-4)


# ----------------------------------------------------------------------------- sharding
SHARDED = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    import autolax
    import test_composition as tc

    assert jax.device_count() == 8, jax.devices()
    # Auto axes: with Explicit axes JAX itself cannot vmap a hand-written lax.while_loop over
    # the sharded axis (ValueError: Resource axis: d of P('d',) is not found in mesh: ()).
    mesh = jax.make_mesh((8,), ("d",), axis_types=(AxisType.Auto,))
    results = {}
    for name, construct in tc.CONSTRUCTS.items():
        c = autolax.convert(construct.fn)
        # 8 lanes, one per device: each device runs its own trip count / branch
        lanes = np.concatenate([construct.lanes, np.asarray(construct.lanes) * 1.1]).astype(np.float32)
        xs = jax.device_put(jnp.asarray(lanes), NamedSharding(mesh, P("d")))
        report = autolax.trace_check(lambda v: jax.vmap(c)(v), xs)
        rows = [r for r in report.rows if r.filename == tc.__file__]
        out = results[name] = {
            "lanes": lanes.tolist(),
            "lowered": bool(rows) and all(r.became.startswith("lax.") for r in rows),
        }
        forms = {
            "vmap": jax.jit(jax.vmap(c)),
            "vmap-grad": jax.jit(jax.vmap(jax.grad(c))),
            "shard_map": jax.jit(jax.shard_map(jax.vmap(c), mesh=mesh, in_specs=P("d"), out_specs=P("d"))),
        }
        for form, fn in forms.items():
            try:
                got = fn(xs)
            except Exception as err:  # reported to the test, which names the cells that fail
                out[form] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
            else:
                out[form] = {"values": np.asarray(got).tolist(), "by_lane": got.sharding.spec == P("d"),
                             "devices": len(got.sharding.device_set)}
    # print and run-time checks: what each form printed (sorted lines) or raised
    import contextlib, io
    effects = results["effects"] = {}
    for name, construct in tc.EFFECTS.items():
        c = autolax.convert(construct.fn)
        lanes = np.concatenate([construct.lanes, np.asarray(construct.lanes) * 1.1]).astype(np.float32)
        failing = np.concatenate([tc.FAILING_LANES, tc.FAILING_LANES]).astype(np.float32)
        forms = {
            "vmap": jax.jit(jax.vmap(c)),
            "vmap-grad": jax.jit(jax.vmap(jax.grad(c))),
            "shard_map": autolax.jit(jax.shard_map(jax.vmap(c), mesh=mesh, in_specs=P("d"), out_specs=P("d"))),
        }
        for form, fn in forms.items():
            for label, values in (("lanes", lanes), ("failing", failing)):
                printed = io.StringIO()
                try:
                    with contextlib.redirect_stdout(printed):
                        got = np.asarray(fn(jax.device_put(jnp.asarray(values), NamedSharding(mesh, P("d"))))).tolist()
                        jax.effects_barrier()
                    cell = {"values": got}
                except Exception as err:
                    autolax.runtime.compat.drop_failed_effects()
                    cell = {"error": f"{type(err).__name__}: {err}"}
                cell["lines"] = sorted(printed.getvalue().splitlines())
                cell["lanes"] = values.tolist()
                effects[f"{name} {form} {label}"] = cell
    json.dump(results, sys.stdout)
    """
)

# Sharded cells that are bugs: (construct, form) -> the start of the error. None today.
# (shard_map(vmap(f)) of a staged `if` in a staged `for` reading the loop index failed with
# JAX's "pvary is a invariant->variant collective" until the index was made to vary over the
# axes the carry varies over: see ops.loops._item_state.)
SHARDED_BUGS = {}


def test_sharded_over_8_cpu_devices():
    """jit(vmap), jit(vmap(grad)) and shard_map(vmap) of every construct on 8 lanes sharded
    over 8 CPU devices (a subprocess: the device count is fixed when JAX starts)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    env["JAX_PLATFORMS"] = "cpu"
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.path.dirname(os.path.dirname(here)), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    failing = {}
    for name, construct in CONSTRUCTS.items():
        got = results[name]
        assert got["lowered"], name
        xs = [jnp.float32(x) for x in got["lanes"]]
        values = np.array([construct.reference(x) for x in xs])
        grads = np.array([jax.grad(construct.reference)(x) for x in xs])
        for form, want in (("vmap", values), ("shard_map", values), ("vmap-grad", grads)):
            cell = got[form]
            if "error" in cell:
                failing[name, form] = cell["error"]
                continue
            assert_close(want, np.array(cell["values"]), rtol=1e-4, atol=1e-5)
            assert cell["devices"] == 8 and cell["by_lane"], (name, form, cell)
    assert set(failing) == set(SHARDED_BUGS), failing
    for cell, error in failing.items():
        assert error.startswith(SHARDED_BUGS[cell]), (cell, error)
    effects = results["effects"]
    for form in ("vmap", "vmap-grad", "shard_map"):
        got = effects[f"print {form} lanes"]
        assert got["lines"] == python_lines(print_, got["lanes"]), form
        reference = print_ if form != "vmap-grad" else jax.grad(print_)
        assert_close(np.array([reference(jnp.float32(x)) for x in got["lanes"]]), np.array(got["values"]), rtol=1e-4)
        got = effects[f"check {form} lanes"]
        assert_close(np.array([(check_ if form != "vmap-grad" else jax.grad(check_))(jnp.float32(x))
                               for x in got["lanes"]]), np.array(got["values"]), rtol=1e-4)
        # a failing lane: the user's error (autolax.jit), or JAX's runtime error holding it
        error = effects[f"check {form} failing"]["error"]
        assert error == "ValueError: y is over 10" if form == "shard_map" else (
            error.startswith("JaxRuntimeError") and "ValueError: y is over 10" in error), (form, error)


# ----------------------------------------------------------------------------- print and run-time checks
def print_(x):
    for i in range(3):  # a static trip count: every vmap lane runs every iteration
        x = x * 1.5
        print("step", i, x)
    if x > 2.0:
        x = x * x
    return x


def check_(x):
    y = x * 2.0
    if y > 10.0:
        raise ValueError("y is over 10")
    return y * y


def key_print(key, x):
    for i in range(2):
        key, sub = jax.random.split(key)
        x = x + jax.random.uniform(sub)
        print("step", i, x)
    return x, key


def key_check(key, x):
    key, sub = jax.random.split(key)
    y = x + jax.random.uniform(sub)
    if y > 4.0:
        raise ValueError("y is over 4")
    return y, key


# lanes: with a failing lane for the check (its derivative cells too)
EFFECTS = {
    "print": Construct(print_, (-1.0, 0.5, 2.0, 0.25), frozenset({"for", "if"})),
    "check": Construct(check_, (-3.0, 0.3, 2.0, 0.7), frozenset({"if"})),
}
FAILING_LANES = (1.0, 6.0, -2.0, 0.5)  # 6.0: y = 12 > 10


def python_lines(fn, xs, lane=jnp.float32):
    """What ``fn`` prints run as Python on each lane ``lane(x)`` in turn, as a sorted list of
    lines (under ``vmap`` each ``print`` prints every lane in turn, so lines of different
    lanes interleave)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for x in xs:
            fn(lane(x))
    return sorted(out.getvalue().splitlines())


def printed_lines(call):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = jax.block_until_ready(call())
        jax.effects_barrier()
    return value, sorted(out.getvalue().splitlines())


# jax.checkpoint runs the forward pass again in the backward pass, its prints too (JAX's rule
# for effects under rematerialization): README's composition matrix, footnote 4.
PRINTS_TWICE = {"checkpoint"}


@pytest.mark.parametrize("cell", ["grad", "vmap", "grad-vmap", "vmap-grad", "jvp", "checkpoint"])
def test_print_under_transforms(cell):
    construct = EFFECTS["print"]
    fn = transformed(construct, cell)
    xs = lanes_of(construct)
    lowered(autolax.trace_check(fn, xs), construct.kinds)
    for jitted in (autolax.jit(fn), jax.jit(fn)):
        value, lines = printed_lines(lambda: jitted(xs))
        assert_close(expected(construct, cell), value, rtol=1e-4, atol=1e-5)
        want = python_lines(construct.fn, construct.lanes)
        assert lines == (sorted(want * 2) if cell in PRINTS_TWICE else want)


@pytest.mark.parametrize("cell", ["grad", "vmap", "grad-vmap", "vmap-grad", "jvp", "checkpoint"])
def test_check_under_transforms(cell):
    construct = EFFECTS["check"]
    fn = transformed(construct, cell)
    xs = lanes_of(construct)
    lowered(autolax.trace_check(fn, xs), construct.kinds)
    jitted = autolax.jit(fn)
    assert_close(expected(construct, cell), jitted(xs), rtol=1e-4, atol=1e-5)
    failing = jnp.asarray(FAILING_LANES, jnp.float32)
    with pytest.raises(ValueError, match="y is over 10"):
        check_(jnp.float32(6.0))  # Python raises on the failing lane
    with pytest.raises(ValueError, match="y is over 10"):
        jitted(failing)
    with pytest.raises(jax.errors.JaxRuntimeError, match="ValueError: y is over 10"):
        jax.block_until_ready(jax.jit(fn)(failing))
    # the next call works
    assert_close(expected(construct, cell), jitted(xs), rtol=1e-4, atol=1e-5)


def test_print_and_check_with_prng_keys():
    keys = jax.random.split(jax.random.key(0), len(KEY_LANES))
    xs = jnp.asarray(KEY_LANES, jnp.float32)
    batched = autolax.jit(lambda k, v: jax.vmap(autolax.convert(key_print))(k, v))
    (values, _), lines = printed_lines(lambda: batched(keys, xs))
    want = python_lines(lambda i: key_print(keys[i], xs[i]), range(len(KEY_LANES)), lane=int)
    assert lines == want
    assert_close(np.array([key_print(keys[i], xs[i])[0] for i in range(len(KEY_LANES))]), values)
    checked = autolax.jit(lambda k, v: jax.vmap(autolax.convert(key_check))(k, v))
    python = [key_check(keys[i], xs[i]) if xs[i] < 3.0 else None for i in range(len(KEY_LANES))]
    with pytest.raises(ValueError, match="y is over 4"):
        key_check(keys[3], xs[3])
    with pytest.raises(ValueError, match="y is over 4"):
        checked(keys, xs)
    got = checked(keys[:3], xs[:3])
    assert_close(np.array([p[0] for p in python[:3]]), got[0])
