"""What differs between the JAX releases autolax supports, in one place.

JAX 0.10 describes the ``shard_map`` axes a value varies over with ``aval.manual_axis_type``
(``.varying``, ``.empty``, ``.update``) and ``jax.ShapeDtypeStruct(manual_axis_type=...)``;
JAX 0.8 and 0.9 with ``aval.vma`` (a frozenset of axis names) and
``jax.ShapeDtypeStruct(vma=...)``.
"""

from __future__ import annotations

import inspect

import jax
import jax.extend.core
import jax.interpreters.ad
import jax.numpy

try:
    from jax.extend import source_info_util as _source_info_util
except ImportError:  # a JAX without it: locations keep autolax's frames
    _source_info_util = None

MANUAL_AXIS_TYPE = "manual_axis_type" in inspect.signature(jax.ShapeDtypeStruct.__init__).parameters


def varying_axes(aval) -> frozenset:
    """The ``shard_map`` axes ``aval`` varies over (empty outside ``shard_map``)."""
    if MANUAL_AXIS_TYPE:
        mat = getattr(aval, "manual_axis_type", None)
        return mat.varying if mat is not None else frozenset()
    return frozenset(getattr(aval, "vma", None) or ())


def shape_dtype_struct(shape, dtype, *, weak_type, sharding, like, varying=None) -> jax.ShapeDtypeStruct:
    """A ``jax.ShapeDtypeStruct`` whose manual-axis type is that of the first of the avals
    ``like`` that has one, varying over ``varying`` axes where given."""
    if MANUAL_AXIS_TYPE:
        mat = None
        for aval in like:
            mat = mat or getattr(aval, "manual_axis_type", None)
        if mat is not None and varying is not None and mat.varying != varying:
            mat = mat.update(varying=varying)
        extra = {"manual_axis_type": None if mat is None or mat.empty else mat}
    else:
        if varying is None:
            varying = next((varying_axes(a) for a in like if varying_axes(a)), frozenset())
        extra = {"vma": frozenset(varying) or None}
    return jax.ShapeDtypeStruct(shape, dtype, weak_type=weak_type, sharding=sharding, **extra)


# The base class of every tracer (jax.core.Tracer is public and stable in 0.8 - 0.10; JAX
# has been trimming jax.core, so it is named here once).
Tracer = jax.core.Tracer


def is_tracer(x) -> bool:
    """Is ``x`` a tracer (a value being traced by ``jit``, ``grad``, ``vmap`` ...)?"""
    return isinstance(x, Tracer)


_JVP_TRACER = getattr(jax.interpreters.ad, "JVPTracer", None)


def forward_mode(values) -> bool:
    """Is one of ``values`` being differentiated in forward mode (``jax.jvp``, ``jacfwd``)
    rather than linearized for reverse mode (``grad``, ``vjp``)? Reverse mode traces with
    ``LinearizeTracer`` while JAX linearizes directly (its default since 0.5; with
    ``jax_use_direct_linearize`` off, reverse mode traces with ``JVPTracer`` too, so the
    answer is always no)."""
    if _JVP_TRACER is None:
        return False
    for v in values:  # (on every call of an autolax.jit object: a loop, not a generator)
        if isinstance(v, _JVP_TRACER):
            return getattr(jax.config, "jax_use_direct_linearize", True)
    return False


def jaxprs_in_params(params):
    """The jaxprs among an equation's params (a ``cond``'s branches, a ``scan``'s body):
    ``jax.extend.core.jaxprs_in_params`` from JAX 0.10, the same walk before it."""
    public = getattr(jax.extend.core, "jaxprs_in_params", None)
    if public is not None:
        return public(params)
    found = []

    def walk(value):
        if isinstance(value, jax.extend.core.ClosedJaxpr):
            found.append(value.jaxpr)
        elif isinstance(value, jax.extend.core.Jaxpr):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)

    for value in params.values():
        walk(value)
    return found


def scan_counts(params) -> tuple[int, int]:
    """``(num_consts, num_carry)`` of a ``scan`` equation's params: named so up to JAX 0.10;
    from 0.11 the operands' grouping is a flat tree, ``ft_in`` = (consts, carry, xs)."""
    if "num_consts" in params:
        return params["num_consts"], params["num_carry"]
    consts, carry, _ = params["ft_in"].unpack()
    return len(consts), len(carry)


def bind_equation(eqn, invals):
    """Applies one equation of a jaxpr to ``invals`` (what ``jax.core.eval_jaxpr`` does for
    each equation). ``Primitive.get_bind_params`` returned ``(subfuns, params)`` before JAX
    0.10 and the params alone since."""
    bound = eqn.primitive.get_bind_params(eqn.params)
    if isinstance(bound, tuple) and len(bound) == 2 and isinstance(bound[1], dict):
        subfuns, params = bound
    else:
        subfuns, params = (), bound
    manager = getattr(getattr(eqn, "ctx", None), "manager", None)
    if manager is None:
        return eqn.primitive.bind(*subfuns, *invals, **params)
    with manager:
        return eqn.primitive.bind(*subfuns, *invals, **params)


def rebuild_custom_jvp(f, convert):
    """``f`` (a ``jax.custom_jvp``) made again from ``convert(f.fun)`` and ``convert`` of its
    JVP rule."""
    new = jax.custom_jvp(convert(f.fun), nondiff_argnums=tuple(getattr(f, "nondiff_argnums", ())))
    rule = getattr(f, "jvp", None)
    if rule is not None:
        new.defjvp(convert(rule), symbolic_zeros=getattr(f, "symbolic_zeros", False))
    return new


def rebuild_custom_vjp(f, convert):
    """``f`` (a ``jax.custom_vjp``) made again from ``convert`` of its function and rules."""
    new = jax.custom_vjp(convert(f.fun), nondiff_argnums=tuple(getattr(f, "nondiff_argnums", ())))
    if getattr(f, "fwd", None) is not None:
        options = {k: getattr(f, k) for k in ("symbolic_zeros", "optimize_remat") if hasattr(f, k)}
        new.defvjp(convert(f.fwd), convert(f.bwd), **options)
    return new


def hide_from_source_info(path: str) -> None:
    """Leaves the frames of files under ``path`` out of the source locations JAX records for
    each equation (``jax.extend.source_info_util``): a staged statement's equations point at
    the user's line, not at autolax's runtime, and lowering writes a location per user frame
    only (a quarter of a small program's lowering time went to autolax's frames)."""
    register = getattr(_source_info_util, "register_exclusion", None)
    if register is not None:
        register(path)


# ``jax.extend.core`` exports it from JAX 0.9; 0.8 has it in ``jax.core`` only.
_OPAQUE_TRACE_STATE = getattr(jax.extend.core, "get_opaque_trace_state", None) or jax.core.get_opaque_trace_state


def trace_state():
    """An opaque token for the trace now under way (equal tokens: the same trace), from
    ``get_opaque_trace_state``."""
    return _OPAQUE_TRACE_STATE(convention="autolax")


def in_shard_map() -> bool:
    """Is the function being traced a ``shard_map`` body (its mesh has manual axes)?"""
    mesh = jax.sharding.get_abstract_mesh()
    return bool(getattr(mesh, "manual_axes", ()))


def shard_map_devices() -> int:
    """The number of devices the ``shard_map`` being traced runs on (its mesh's size)."""
    return int(getattr(jax.sharding.get_abstract_mesh(), "size", 0) or 0)


try:  # reverse mode's tracer (JAX linearizes directly since 0.5); not exported by jax.interpreters.ad
    from jax._src.interpreters.ad import LinearizeTracer as _LINEARIZE_TRACER
except ImportError:
    _LINEARIZE_TRACER = None


def differentiated(values) -> bool:
    """Is one of ``values`` being differentiated by the innermost transform (a ``jax.grad``,
    ``vjp`` or ``jvp`` tracer)? False where another transform's tracers wrap them."""
    kinds = tuple(k for k in (_JVP_TRACER, _LINEARIZE_TRACER) if k is not None)
    return bool(kinds) and any(isinstance(v, kinds) for v in values)


def drop_failed_effects() -> None:
    """After a host callback raised inside a computation: JAX keeps that computation's
    runtime token, and every later ``jax.effects_barrier()`` -- also the one JAX runs at
    exit, after which a multi-process job aborts in its distributed shutdown -- raises the
    error again, until another computation with effects runs on the same devices. Waits
    for the dispatched computations' tokens, and forgets them if one holds an error."""
    from jax._src import dispatch

    try:
        dispatch.runtime_tokens.block_until_ready()
    except jax.errors.JaxRuntimeError:
        dispatch.runtime_tokens.clear()


try:  # JAX 0.10 evaluates a jaxpr's literal outputs to these (earlier releases: plain scalars)
    from jax._src.literals import TypedComplex as _TypedComplex
    from jax._src.literals import TypedFloat as _TypedFloat
    from jax._src.literals import TypedInt as _TypedInt
    from jax._src.literals import TypedNdArray as _TypedNdArray
except ImportError:
    _TYPED_SCALARS, _TypedNdArray = {}, None
else:
    _TYPED_SCALARS = {_TypedInt: int, _TypedFloat: float, _TypedComplex: complex}


def plain_constant(x):
    """A constant that evaluating a jaxpr gave back, as the user's code made it: JAX's typed
    scalar literals (which print as ``TypedInt(2, dtype=int32)``) as Python's scalars, its
    host arrays (NumPy arrays that ``.at`` fails on) as JAX arrays; anything else unchanged."""
    convert = _TYPED_SCALARS.get(type(x))
    if convert is not None:
        return convert(x)
    if _TypedNdArray is not None and type(x) is _TypedNdArray:
        return jax.numpy.asarray(x)
    return x


def dispatcher(jitted, fun, cache_miss):
    """A callable of JAX's C++ ``jax.jit`` machinery with the options of the ``jax.jit``
    object ``jitted``, or None where this JAX does not build it as expected. A call whose
    argument signature a previous ``cache_miss`` call returned fast-path data for runs that
    compiled program with no Python; every other call (a new signature, tracers, keyword or
    static arguments it has not seen) is ``cache_miss(*args, **kwargs)``, which returns
    ``(outputs, fast-path data or None, False)``; under ``jax.disable_jit`` it is
    ``fun(*args, **kwargs)``. Its cache is keyed by ``fun``: no other object shares it."""
    try:
        from jax._src import pjit, tree_util
        from jax._src.interpreters import pxla
        from jax._src.lib import _jax

        info = jitted._jit_info
        jitted._cache_miss  # noqa: B018 - ``call_with_fast_path`` calls it: no dispatcher without it
        key = pxla.JitGlobalCppCacheKeys(
            donate_argnums=info.donate_argnums,
            donate_argnames=info.donate_argnames,
            device=info.device,
            backend=info.backend,
            in_shardings_treedef=info.in_shardings_treedef,
            in_shardings_leaves=info.in_shardings_leaves,
            out_shardings_treedef=info.out_shardings_treedef,
            out_shardings_leaves=info.out_shardings_leaves,
            in_layouts_treedef=info.in_layouts_treedef,
            in_layouts_leaves=info.in_layouts_leaves,
            out_layouts_treedef=info.out_layouts_treedef,
            out_layouts_leaves=info.out_layouts_leaves,
            compiler_options_kvs=info.compiler_options_kvs,
        )
        cache = pjit._get_cpp_global_cache(key.contains_explicit_attributes)
        return _jax.pjit(
            pjit.fun_name(fun),
            fun,
            cache_miss,
            info.static_argnums,
            info.static_argnames,
            key,
            tree_util.dispatch_registry,
            pxla.cc_shard_arg,
            cache,
        )
    except (ImportError, AttributeError, TypeError):
        return None


def call_with_fast_path(jitted, args, kwargs):
    """``jitted(*args, **kwargs)`` for a ``jax.jit`` object whose function returns a pair ``(out,
    None)``: ``(the pair, fast-path data for a ``dispatcher`` that returns ``out`` alone,
    or None)``. The data is JAX's for the program ``jitted`` ran; only the tree of its
    outputs changes (``None`` has no leaves, so the program's outputs are ``out``'s)."""
    pair, data, rebuild = jitted._cache_miss(*args, **kwargs)
    if data is None or rebuild or not isinstance(data, tuple) or not hasattr(data, "out_pytree_def"):
        return pair, None
    children = data.out_pytree_def.children()
    if len(children) != 2 or children[1].num_leaves != 0:
        return pair, None
    return pair, data._replace(out_pytree_def=children[0])
