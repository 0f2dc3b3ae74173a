"""The values a staged statement carries, flattened and typed, with their names.

A ``State`` is one ``VarSpec`` per carried variable. A variable's value is a pytree; its
leaves are either *dynamic* (arrays and Python numbers: they become lax operands) or
*static* (anything else: strings, functions, ``None``-free objects; they must be the same on
every path and are passed through by Python). ``Undefined`` marks a variable that has no
value yet.

``join_branches`` / ``join_iterations`` reconcile two states (promoting dtypes) or raise an
error that names the variable, the statement and both types.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import linecache
import sys
import types
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.runtime import compat, errors, sites
from autolax.runtime.ops import checks, host
from autolax.runtime.ops.lists import StackedList, is_tracer, key_order, restore_order

PY_SCALARS = (bool, int, float, complex)


_FAILING = (
    "__bool__ __len__ __iter__ __getitem__ __call__ __index__ __int__ __float__ __array__ __jax_array__"
    " __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__"
    " __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ __neg__ __pos__ __abs__"
    " __lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__ __xor__ __invert__"
).split()


def _fails_on_use(*also):
    """A class decorator: every use of an instance (the operators, ``bool``, ``len``,
    iteration, indexing, a call, an attribute) calls its ``_fail``."""

    def decorate(cls):
        for dunder in (*_FAILING, *also):
            setattr(cls, dunder, cls._fail)

        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            self._fail()

        cls.__getattr__ = __getattr__
        return cls

    return decorate


@_fails_on_use()
class Undefined:
    """The value of a variable that has not been assigned yet (``ops.undefined('y')``).

    Any use of it raises ``UndefinedVariableError``, as Python raises ``UnboundLocalError``.
    ``kind`` says what a staged statement may do with it:

    * ``"unbound"``: a user's variable: an ``if`` that assigns it on one side only is an error;
    * ``"loop"``: a user's variable first assigned inside a staged loop: an ``if`` in the body
      that assigns it on one side makes it a ``MaybeBound`` (the loop may never assign it);
    * ``"pending"``: a generated variable every path assigns before it is read (the return
      value): an ``if`` that assigns it on one side only takes that side's type.
    """

    __slots__ = ("name", "kind")

    def __init__(self, name: str, pending: bool = False, kind: str | None = None):
        self.name = name
        self.kind = kind or ("pending" if pending else "unbound")

    @property
    def pending(self) -> bool:
        return self.kind == "pending"

    def __repr__(self):
        return f"<undefined '{self.name}'>"

    def _fail(self, *args, **kwargs):
        __tracebackhide__ = True
        raise unbound_error(self.name, sys._getframe(1))


@_fails_on_use("__reversed__", "__contains__")
class Unselected:
    """The value of a loop's target after a loop that a traced condition stopped, where the
    items are objects that cannot be selected by data (``for r in (up, reversed(up)):``,
    ranges): which item Python leaves in it depends on the running program. Any use of it
    raises autolax's ``loop-target-object`` error (a ``StateMismatchError``) naming the
    variable and the loop; a program that does not read it after the loop runs as Python's."""

    __slots__ = ("name", "error")

    def __init__(self, name: str, error):
        self.name = name
        self.error = error

    def __repr__(self):
        return f"<unselected '{self.name}'>"

    def _fail(self, *args, **kwargs):
        __tracebackhide__ = True
        raise self.error


def select_target(stopped, target, item, site):
    """The loop target after an iteration whose item is ``item``, where a traced ``stopped``
    says whether the loop had stopped before it (then Python's target is ``target``, the
    item it stopped at): selected leaf by leaf for arrays and numbers; the same object
    whichever runs; otherwise ``Unselected``."""
    if target is item:
        return item
    leaves, treedef = jax.tree_util.tree_flatten(item)
    old_leaves, old_treedef = jax.tree_util.tree_flatten(target, is_leaf=_is_leaf)
    if (
        treedef == old_treedef
        and all(is_dynamic(v) for v in leaves + old_leaves)
        and all(jnp.shape(a) == jnp.shape(b) for a, b in zip(leaves, old_leaves))
    ):
        return jax.tree_util.tree_unflatten(
            treedef, [jnp.where(stopped, b, jnp.asarray(a, jnp.result_type(b))) for a, b in zip(leaves, old_leaves)]
        )
    if isinstance(target, Unselected):
        return target
    name = site.item_test
    first, second = (
        var_spec(name, v).describe() if not isinstance(v, Undefined) else "unbound" for v in (target, item)
    )
    return Unselected(name, _error("loop-target-object", site, name, first, second))


class MaybeBound:
    """A variable a staged loop may or may not have assigned: its value (zeros if not), and
    ``assigned``, a traced boolean. ``ops.assigned(x)`` -- emitted at every read Python might
    find unbound -- checks the flag when the program runs and unwraps the value.

    Python raises ``UnboundLocalError`` after ``for i in range(n): last = i`` when ``n`` is
    0; with ``n`` traced, only the running program knows.
    """

    __slots__ = ("value", "assigned", "name")

    def __init__(self, value, assigned, name: str):
        self.value = value
        self.assigned = assigned
        self.name = name

    def __repr__(self):
        return f"MaybeBound({self.name!r}, assigned={self.assigned})"


jax.tree_util.register_pytree_node(
    MaybeBound,
    lambda m: ((m.value, m.assigned), m.name),
    lambda name, children: MaybeBound(children[0], children[1], name),
)


def unbound_error(name: str, frame, where: str | None = None) -> errors.UndefinedVariableError:
    """The error for reading ``name`` unbound, located at ``where`` ("file:line", given by
    code written to a file) or else at the first frame of user code at or above ``frame``."""
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    at = ""
    if where is not None:
        filename, _, lineno = where.rpartition(":")
        if frame is not None:
            filename = sites.resolve(filename, frame.f_code.co_filename)
        line = linecache.getline(filename, int(lineno)).strip()
        at = f" at {sites.display_filename(filename)}:{lineno}\n    {line}"
    elif frame is not None:
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        at = f" at {sites.display_filename(frame.f_code.co_filename)}:{frame.f_lineno}\n    {line}"
    exc = errors.make("unbound", name=name, at=at)
    exc.name = name  # as Python's UnboundLocalError (NameError.name)
    return exc


def undefined(name: str, pending: bool = False) -> Undefined:
    """``y = ops.undefined('y')``: a carried variable with no value yet.

    ``pending=True`` (used for the function's return value) lets a staged ``if`` that
    assigns it on one side only take that side's type: every path assigns it before it is read.
    """
    return Undefined(name, pending=pending)


def any_tracer(tree) -> bool:
    """Is any leaf of ``tree`` traced, or an object (not a pytree) holding a traced value?"""
    return any(is_tracer(leaf) or _holds_tracer(leaf) for leaf in jax.tree_util.tree_leaves(tree))


def _holds_tracer(obj) -> bool:
    """A plain object (not registered as a pytree) with a traced value among its attributes."""
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict) or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
        return False
    return any(is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(list(fields.values())))


def is_dynamic(leaf) -> bool:
    return isinstance(leaf, (jax.Array, compat.Tracer, np.ndarray, np.generic)) or type(leaf) in PY_SCALARS


def _is_leaf(x):
    return isinstance(x, Undefined)


# ----------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Leaf:
    """A dynamic leaf's abstract type, or a static leaf's value."""

    dynamic: bool
    aval: jax.ShapeDtypeStruct | None = None
    value: object = None  # static leaves: the value; Python-number leaves: the number

    @property
    def is_undefined(self):
        return not self.dynamic and isinstance(self.value, Undefined)

    @property
    def is_pending(self):
        return self.is_undefined and self.value.pending

    @property
    def undefined_kind(self):
        return self.value.kind if self.is_undefined else None

    def same(self, other: "Leaf") -> bool:
        if self.dynamic != other.dynamic:
            return False
        if self.dynamic:
            return _same_aval(self.aval, other.aval)
        return _static_equal(self.value, other.value)


def _same_aval(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.weak_type == b.weak_type and _placement(a) == _placement(b)


def _placement(aval):
    """(sharding, varying manual axes) of ``aval``: its sharding when it lives on a mesh
    with explicit axes (else None), and the ``shard_map`` axes it varies over."""
    sharding = getattr(aval, "sharding", None)
    if getattr(getattr(sharding, "mesh", None), "empty", True):
        sharding = None
    return sharding, compat.varying_axes(aval)


def abstract(aval, *, weak_type=None) -> jax.ShapeDtypeStruct:
    """``aval`` as a ShapeDtypeStruct that keeps its placement (see ``_placement``).

    A body traced from shape and dtype alone would not know that a value varies across
    ``shard_map`` devices or is sharded: it would be traced with the wrong collectives
    (``psum`` of a replicated value) and out-shardings, and fail when replayed on the real
    values.
    """
    sharding, _ = _placement(aval)
    return compat.shape_dtype_struct(
        aval.shape,
        aval.dtype,
        weak_type=aval.weak_type if weak_type is None else weak_type,
        sharding=sharding,
        like=(aval,),
    )


def _static_equal(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # objects whose == is not a plain bool (e.g. array-likes)
        return False


def leaf_spec(leaf, strong_numbers: bool = False) -> Leaf:
    if isinstance(leaf, Undefined) or not is_dynamic(leaf):
        return Leaf(dynamic=False, value=leaf)
    aval = jax.typeof(leaf)
    # A loop carries a Python number (`total = 0.0`) strongly typed, so that the body's
    # arithmetic with arrays does not retype it (a second trace); a value that is already an
    # array, a weakly typed argument included, keeps its type, as the unrolled loop would.
    weak = aval.weak_type and not (strong_numbers and type(leaf) in PY_SCALARS)
    sds = abstract(aval, weak_type=weak)
    return Leaf(dynamic=True, aval=sds, value=leaf if type(leaf) in PY_SCALARS else None)


@dataclass(frozen=True)
class VarSpec:
    name: str
    treedef: object
    leaves: tuple
    order: object = field(default=None, compare=False)  # see key_order

    @property
    def is_undefined(self) -> bool:
        return len(self.leaves) == 1 and self.leaves[0].is_undefined

    @property
    def is_pending(self) -> bool:
        return len(self.leaves) == 1 and self.leaves[0].is_pending

    @property
    def undefined_kind(self):
        return self.leaves[0].undefined_kind if self.is_undefined else None

    @property
    def is_maybe_bound(self) -> bool:
        node = self.treedef.node_data()
        return node is not None and node[0] is MaybeBound

    def maybe_bound(self) -> "VarSpec":
        """This (defined) variable's type as a ``MaybeBound``: its leaves and the flag."""
        if self.is_maybe_bound:
            return self
        flag = Leaf(True, jax.ShapeDtypeStruct((), jnp.bool_))
        placeholder = jax.tree_util.tree_unflatten(self.treedef, [0] * len(self.leaves))
        treedef = jax.tree_util.tree_structure(MaybeBound(placeholder, 0, self.name))
        return VarSpec(self.name, treedef, self.leaves + (flag,), self.order)

    def same(self, other: "VarSpec") -> bool:
        return self.treedef == other.treedef and all(a.same(b) for a, b in zip(self.leaves, other.leaves))

    def describe(self) -> str:
        """``float32[3]``, ``None``, ``{'w': float32[2,2], 'b': float32[2]}`` ..."""
        if self.is_undefined:
            return "undefined"
        if not self.leaves and self.treedef == jax.tree_util.tree_structure(None):
            return "None"
        parts = [
            _Repr(describe_leaf(leaf), leaf.aval.shape if leaf.dynamic and leaf.aval is not None else ())
            for leaf in self.leaves
        ]
        return repr(jax.tree_util.tree_unflatten(self.treedef, parts))


class _Repr:
    """A leaf in a description: its text, and its shape (a list built by appends counts its
    items from its blocks' shapes)."""

    def __init__(self, text, shape=()):
        self.text = text
        self.shape = shape

    def __repr__(self):
        return self.text


def describe_aval(aval) -> str:
    dims = ",".join(str(d) for d in aval.shape)
    return f"{jnp.dtype(aval.dtype).name}[{dims}]"


def describe_leaf(leaf: Leaf) -> str:
    if leaf.dynamic:
        return describe_aval(leaf.aval)
    if leaf.is_undefined:
        return "undefined"
    text = repr(leaf.value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({type(leaf.value).__name__})"


def var_spec(name: str, value, strong_numbers: bool = False) -> VarSpec:
    leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=_is_leaf)
    for leaf in leaves:
        if not is_dynamic(leaf) and _holds_tracer(leaf):
            raise errors.make("object-holding-tracers", name=name, kind=type(leaf).__name__)
    return VarSpec(name, treedef, tuple(leaf_spec(x, strong_numbers) for x in leaves), key_order(value))


@dataclass
class State:
    """The carried variables of one staged statement."""

    specs: list
    site: object = None  # sites.Site (for messages)
    extras: list = field(default_factory=list)  # per-iteration outputs (list appends)

    @classmethod
    def of(cls, names, values, site=None, strong_numbers=False):
        return cls([var_spec(n, v, strong_numbers) for n, v in zip(names, values)], site)

    @property
    def names(self):
        return [s.name for s in self.specs]

    def same(self, other: "State") -> bool:
        return len(self.specs) == len(other.specs) and all(a.same(b) for a, b in zip(self.specs, other.specs))

    def abstract(self) -> list:
        """ShapeDtypeStructs of the dynamic leaves, in order (the traced function's inputs)."""
        return [leaf.aval for spec in self.specs for leaf in spec.leaves if leaf.dynamic]

    def n_dynamic(self) -> int:
        return sum(1 for spec in self.specs for leaf in spec.leaves if leaf.dynamic)

    def first_assigned_in_loop(self) -> "State":
        """This state for a staged loop: the user's unassigned variables become kind "loop"
        (see ``Undefined``); generated ones stay "pending"."""
        specs = [
            VarSpec(s.name, s.treedef, (Leaf(False, value=Undefined(s.name, kind="loop")),), s.order)
            if s.undefined_kind == "unbound"
            else s
            for s in self.specs
        ]
        return State(specs, self.site, self.extras)

    def dynamic(self, values) -> list:
        """The dynamic leaves of ``values``, each cast to its spec's type (``Undefined``
        leaves become zeros of the spec's type: a loop-first-assigned variable)."""
        out = []
        for spec, value in zip(self.specs, values):
            out.extend(cast_leaves(spec, value))
        return out

    def host_dynamic(self, values, max_size=host.MAX_ELEMENTS) -> list | None:
        """``dynamic(values)`` as NumPy values, computed on the host, or None when a leaf is
        traced (or larger than ``max_size``, or placed on a mesh, or a ``MaybeBound``)."""
        out = []
        for spec, value in zip(self.specs, values):
            if spec.is_maybe_bound or isinstance(value, MaybeBound):
                return None
            dynamic = [leaf for leaf in spec.leaves if leaf.dynamic]
            if any(_placement(leaf.aval)[0] is not None or _placement(leaf.aval)[1] for leaf in dynamic):
                return None
            if isinstance(value, Undefined):
                out.extend(np.zeros(leaf.aval.shape, leaf.aval.dtype) for leaf in dynamic)
                continue
            leaves = jax.tree_util.tree_leaves(value, is_leaf=_is_leaf)
            for leaf, x in zip(spec.leaves, leaves):
                if not leaf.dynamic:
                    continue
                if is_tracer(x) or isinstance(x, Undefined) or np.size(x) > max_size:
                    return None
                try:
                    with np.errstate(all="raise"):
                        out.append(
                            np.asarray(x).astype(leaf.aval.dtype)
                            if type(x) not in PY_SCALARS
                            else np.asarray(x, dtype=leaf.aval.dtype)
                        )
                except (OverflowError, FloatingPointError, TypeError, ValueError):
                    return None
        return out

    def rebuild(self, dynamic_leaves) -> list:
        """Values from dynamic leaves (static leaves come from the specs)."""
        it = iter(dynamic_leaves)
        values = []
        for spec in self.specs:
            leaves = [next(it) if leaf.dynamic else leaf.value for leaf in spec.leaves]
            values.append(restore_order(jax.tree_util.tree_unflatten(spec.treedef, leaves), spec.order))
        return values

    def describe(self, name: str) -> str:
        return self.site.describe(name) if self.site is not None else f"'{name}'"


def cast_leaves(spec: VarSpec, value) -> list:
    """The dynamic leaves of ``value`` as values of ``spec``'s types: ``Undefined`` gives
    zeros (a loop-first-assigned variable; a ``MaybeBound``'s flag is then False), and a
    plain value given a ``MaybeBound`` type gets the flag True."""
    if isinstance(value, Undefined):
        return [cast(jnp.zeros(leaf.aval.shape, leaf.aval.dtype), leaf.aval) for leaf in spec.leaves if leaf.dynamic]
    if spec.is_maybe_bound and not isinstance(value, MaybeBound):
        value = MaybeBound(value, True, spec.name)
    leaves = jax.tree_util.tree_leaves(value, is_leaf=_is_leaf)
    return [cast(x, leaf.aval) for leaf, x in zip(spec.leaves, leaves) if leaf.dynamic]


def cast(x, aval):
    """``x`` as a value of type ``aval``: dtype promotion, and the placement ``aval`` has
    (varying over more ``shard_map`` axes, another sharding); shapes already match."""
    sharding, varying = _placement(aval)
    if type(x) in PY_SCALARS:
        if aval.weak_type and sharding is None and not varying and jax.dtypes.canonicalize_dtype(type(x)) == aval.dtype:
            return x
        x = jnp.asarray(x, dtype=aval.dtype)
    if x.dtype != aval.dtype or (getattr(x, "weak_type", False) and not aval.weak_type):
        x = lax.convert_element_type(x, aval.dtype)
    if sharding is None and not varying:
        return x
    have_sharding, have_varying = _placement(jax.typeof(x))
    if varying - have_varying:
        x = lax.pcast(x, tuple(sorted(varying - have_varying)), to="varying")
    if sharding is not None and (have_sharding is None or have_sharding.spec != sharding.spec):
        x = jax.sharding.reshard(x, sharding)
    return x


# ----------------------------------------------------------------------------- joining
def _join_placement(a, b, dtype, weak_type):
    """The common abstract value of ``a`` and ``b`` (same shape): varying over the
    ``shard_map`` axes either varies over, with ``b``'s sharding if it has one."""
    sharding_a, varying_a = _placement(a)
    sharding_b, varying_b = _placement(b)
    return compat.shape_dtype_struct(
        a.shape,
        dtype,
        weak_type=weak_type,
        sharding=sharding_b if sharding_b is not None else sharding_a,
        like=(b, a),
        varying=varying_a | varying_b if varying_a != varying_b else None,
    )


def _promotes_as(aval):
    """What ``jax.dtypes.result_type`` promotes as ``aval`` does: it takes every aval as
    strongly typed, so a weakly typed one is given as a Python number of its kind (``0.0 + float16`` is float16,
    as in JAX's own arithmetic)."""
    probe = _PROBES.get(aval.dtype.kind)
    if aval.weak_type and probe is not None and jax.dtypes.canonicalize_dtype(type(probe)) == aval.dtype:
        return probe
    return aval


_PROBES = {"f": 0.0, "i": 0, "c": 0j}


def _join_leaf(a: Leaf, b: Leaf, loop: bool):
    """The common type of two leaves, or None if they cannot be reconciled."""
    if a.dynamic and b.dynamic:
        if a.aval.shape != b.aval.shape:
            return None
        if _same_aval(a.aval, b.aval):
            # Keep a Python number static only if both sides are the same number.
            if not loop and a.value is not None and b.value is not None and _static_equal(a.value, b.value):
                return a
            return Leaf(True, a.aval)
        dtype, weak = jax.dtypes.result_type(_promotes_as(a.aval), _promotes_as(b.aval), return_weak_type_flag=True)
        return Leaf(True, _join_placement(a.aval, b.aval, dtype, weak))
    if not a.dynamic and not b.dynamic:
        return a if _static_equal(a.value, b.value) else None
    return None


def _is_list(spec: VarSpec) -> bool:
    node = spec.treedef.node_data()
    return node is not None and node[0] in (list, StackedList)


def _error(code, site, name, first=None, second=None, **fields):
    """Catalogue error ``code`` about variable ``name`` of statement ``site``."""
    return errors.make(
        code,
        what=site.describe(name),
        name=name,
        stmt=site.what,
        source=site.source,
        first=first,
        second=second,
        **fields,
    )


# While a branch of a staged ``if`` is traced (``control.staged_cond``): a list that a join
# inside it appends to when it gives the function's return value ``None`` from a path that
# returned ``None`` joined with one that has not returned yet. The branch's ``None`` is then
# not the value it returns on every run (``control.returns_none``).
_UNSURE_NONE: contextvars.ContextVar = contextvars.ContextVar("autolax_unsure_none", default=None)


@contextlib.contextmanager
def watching_none_returns():
    """Collects (in the list it yields) the joins of ``_UNSURE_NONE`` made while the block runs."""
    marks: list = []
    token = _UNSURE_NONE.set(marks)
    try:
        yield marks
    finally:
        _UNSURE_NONE.reset(token)


def is_none_spec(spec: VarSpec) -> bool:
    """Is ``spec`` the spec of ``None``, or of Nones only (``(None, None)``)?"""
    if spec.leaves or spec.is_undefined or getattr(spec, "is_pending", False):
        return False
    nones = jax.tree_util.tree_leaves(jax.tree_util.tree_unflatten(spec.treedef, []), is_leaf=lambda x: x is None)
    return bool(nones) and all(n is None for n in nones)


def _note_unsure_none(site, name: str, spec: VarSpec) -> None:
    marks = _UNSURE_NONE.get()
    if (
        marks is not None
        and is_none_spec(spec)
        and site is not None
        and getattr(site, "roles", {}).get(name) == sites.RETURN_VALUE
    ):
        marks.append(name)


def join_branches(true_state: State, false_state: State, site, choose=None) -> State:
    """The output type of a staged ``if``: both branches' outputs, reconciled. ``choose(f, g,
    name)``: for a variable holding a different function on each side (``func = g`` before
    the ``if``, ``func = lambda y, t: -g(y, -t)`` in it), the value that stands for either
    (``control.FunctionChoice``: its calls are staged as a ``lax.cond`` over the two calls)."""
    __tracebackhide__ = True
    specs = []
    for a, b in zip(true_state.specs, false_state.specs):
        if a.is_undefined or b.is_undefined:
            if a.is_undefined and b.is_undefined:
                specs.append(a)
                continue
            undefined, defined = (a, b) if a.is_undefined else (b, a)
            # A generated variable every path assigns before it is read; or one Python binds
            # before every read, so the unbound side is a path that jumped (`return`, `break`,
            # `continue`) and never reads it: the type is the other side's.
            if undefined.is_pending or a.name in site.always_bound:
                _note_unsure_none(site, a.name, defined)
                specs.append(defined)
                continue
            # Python raises UnboundLocalError at a later read only when the other branch ran:
            # carry the value with a flag, and `ops.assigned` checks it when the program runs.
            specs.append(defined.maybe_bound())
            continue
        if a.is_maybe_bound != b.is_maybe_bound:
            a, b = a.maybe_bound(), b.maybe_bound()
        if a.treedef != b.treedef or len(a.leaves) != len(b.leaves):
            code = "if-list-append" if _is_list(a) and _is_list(b) else "if-structure"
            if code == "if-list-append" and getattr(site, "after_jump", None) is not None:
                kind, line = site.after_jump  # `if c: return` (or `break`), then `out.append(v)`
                raise _error(
                    "append-after-jump",
                    site,
                    a.name,
                    kind=kind,
                    jump_where=site.where_line(line),
                    jump_source=site.source_line(line),
                )
            raise _error(code, site, a.name, a.describe(), b.describe())
        leaves = []
        for la, lb in zip(a.leaves, b.leaves):
            joined = _join_leaf(la, lb, loop=False)
            if joined is None and choose is not None and _functions(la, lb):
                joined = Leaf(False, value=choose(la.value, lb.value, a.name))
            if joined is None:
                raise _error("if-shape", site, a.name, a.describe(), b.describe())
            leaves.append(joined)
        specs.append(VarSpec(a.name, a.treedef, tuple(leaves), a.order))
    return State(specs, site)


def _functions(a: Leaf, b: Leaf) -> bool:
    """Two static leaves that are both functions (or other callables that are not classes)."""
    return (
        not a.dynamic
        and not b.dynamic
        and all(callable(v) and not isinstance(v, type) and not isinstance(v, Undefined) for v in (a.value, b.value))
    )


def join_iterations(before: State, after: State, site) -> State:
    """The carry type of a staged loop: the state before an iteration reconciled with the
    state after one. A variable with no value before the loop takes the body's type."""
    __tracebackhide__ = True
    specs = []
    for a, b in zip(before.specs, after.specs):
        if a.is_undefined:
            if not b.is_undefined and a.name in getattr(site, "read_unbound", ()):
                # The body may read it before binding it (`ops.assigned`): carry the flag, so
                # a later iteration's read knows whether an earlier one bound it.
                b = b.maybe_bound()
            _note_unsure_none(site, a.name, b)
            specs.append(b if not b.is_undefined else a)
            continue
        if b.is_undefined:
            raise _error("loop-loses-value", site, a.name)
        if a.is_maybe_bound != b.is_maybe_bound:
            a, b = a.maybe_bound(), b.maybe_bound()
        if a.treedef != b.treedef or len(a.leaves) != len(b.leaves):
            none_before = not a.leaves and a.treedef == jax.tree_util.tree_structure(None)
            code = (
                "loop-none"
                if none_before
                else "list-changes-length"
                if _is_list(a) and _is_list(b)
                else "loop-structure"
            )
            raise _error(code, site, a.name, a.describe(), b.describe())
        leaves = []
        for la, lb in zip(a.leaves, b.leaves):
            joined = _join_leaf(la, lb, loop=True)
            if joined is None:
                raise _error("loop-shape", site, a.name, a.describe(), b.describe())
            leaves.append(joined)
        specs.append(VarSpec(a.name, a.treedef, tuple(leaves), a.order))
    return State(specs, site)


def assigned(value, at=None):
    """``ops.assigned(x)`` at a read of ``x`` where Python might find it unbound.

    Equivalent Python: ``x`` (which raises ``UnboundLocalError`` if ``x`` has no value).

    ``x`` holds ``Undefined`` when no statement assigned it (raises now), or a
    ``MaybeBound`` after a staged loop or ``if`` that may not have assigned it (checked when
    the program runs, see ``autolax.runtime.ops.checks``). ``at``: "file:line" of the read, written
    by the CLI (the frame of a written file has other lines than the user's).
    """
    __tracebackhide__ = True
    if isinstance(value, Undefined):
        raise unbound_error(value.name, sys._getframe(1), at)
    if isinstance(value, MaybeBound):
        frame = sys._getframe(1)
        if at is None:
            at = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        filename, _, line = at.rpartition(":")
        filename = sites.resolve(filename, frame.f_code.co_filename)
        where = f"{sites.display_filename(filename)}:{line}"
        name = value.name
        checks.fail_unless(value.assigned, lambda: errors.make("unbound-after-loop", name=name, where=where))
        return value.value
    return value


def bound(value):
    """``ops.bound(x)`` at a read of ``x``, a variable a loop assigns, in the code that ran the
    loop's exit after the loop (``passes.loop_exits``): the exit proves an iteration ran.

    Equivalent Python: ``x``.

    After a staged loop over a traced range, ``x`` is a ``MaybeBound``; here its flag is known
    to be set, so no run-time check is needed.
    """
    __tracebackhide__ = True
    if isinstance(value, Undefined):  # cannot happen: the exit ran an iteration that bound it
        raise unbound_error(value.name, sys._getframe(1))
    return value.value if isinstance(value, MaybeBound) else value


def _children(value):
    """The items of a list, dict or (not frozen) dataclass that a write back updates in place."""
    if type(value) is list:
        return list(enumerate(value))
    if type(value) is dict:
        return list(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and not type(value).__dataclass_params__.frozen:
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def received(values: dict) -> dict:
    """``{id(object): (name, path)}`` for each list, dict and dataclass in the values a
    staged body receives (``{name: value}``), for ``kept_in_place``."""
    index = {}

    def visit(value, name, path):
        children = _children(value)
        if children is not None:
            index[id(value)] = (name, path)
            for key, item in children:
                visit(item, name, (*path, key))

    for name, value in values.items():
        visit(value, name, ())
    return index


def kept_in_place(index: dict, after):
    """Which objects of the value a staged body returns (``after``) are ones it received
    (``index``, from ``received``): ``(source, {key: ...})`` for each list, dict and
    dataclass, ``source`` the ``(name, path)`` of the received object it is (the body
    changed it in place: ``coef[0] = x``; or took it: ``alias = coef``) or None (the body
    built a new one: ``coef = [x, y]``). None for anything else."""
    children = _children(after)
    if children is None:
        return None
    return index.get(id(after)), {key: kept_in_place(index, item) for key, item in children}


def merge_kept(a, b):
    """``kept_in_place`` of an ``if``: an object is one the statement received only where
    both branches keep the same one (an ``if`` that rebinds a list on one side leaves the
    alias of the old one as it was whichever side runs, unless the other side changed it
    in place)."""
    if a is None or b is None:
        return None
    source = a[0] if a[0] == b[0] else None
    return source, {key: merge_kept(a[1][key], b[1][key]) for key in a[1] if key in b[1]}


def write_back(names, originals, results, kept=None):
    """``results`` of a staged statement (rebuilt from leaves: new lists, dicts and objects),
    with each list, dict and (not frozen) dataclass written back into the object the
    variable held before, as Python would have updated it in place: another reference to it
    (an alias, an enclosing container) sees the update too.

    ``originals``: ``{name: value}`` of the statement's inputs. ``kept`` (per name, a
    ``kept_in_place`` tree of the traced body) says which objects the body kept: one it
    replaced (``coef = [x, y]``) is not written into, and an alias of the old list keeps
    the old items, as in Python. An object is written back where the body keeps the one
    the variable held (or another name's that is the same object, ``alias = coef``) and
    that one is never replaced (a loop repeats the body: ``prev = cur; cur = [...]`` leaves
    ``prev`` a list of the loop's own after two iterations).
    """
    if kept is None:
        return [_into(originals[name], value) if name in originals else value for name, value in zip(names, results)]
    writer = _WriteBack(originals, dict(zip(names, kept)))
    return [
        writer.into(originals[name], value, writer.trees[name]) if name in originals else value
        for name, value in zip(names, results)
    ]


class _WriteBack:
    """``write_back`` with the body's ``kept_in_place`` trees (``trees``, per name)."""

    def __init__(self, originals: dict, trees: dict):
        self.originals, self.trees = originals, trees

    def into(self, original, new, node):
        """``new`` written into ``original`` where the body kept it (``node``), item by item."""
        if node is None or original is new or type(original) is not type(new):
            return new
        source, items = node
        same = source is not None and self.stays(source) and _walk(self.originals.get(source[0]), source[1]) is original
        target = original if same else new
        if type(original) is list and len(original) == len(new):
            target[:] = [self.into(a, b, items.get(k)) for k, (a, b) in enumerate(zip(original, new))]
            return target
        if type(original) is dict and original.keys() == new.keys():
            for key in new:
                target[key] = self.into(original[key], new[key], items.get(key))
            return target
        if dataclasses.is_dataclass(original) and not type(original).__dataclass_params__.frozen:
            for f in dataclasses.fields(original):
                object.__setattr__(
                    target, f.name, self.into(getattr(original, f.name), getattr(new, f.name), items.get(f.name))
                )
            return target
        return new

    def stays(self, source) -> bool:
        """The received object at ``source`` is the statement's result there too."""
        name, path = source
        if name not in self.trees:  # an input the statement does not change
            return True
        node = self.tree_at(name, path)
        return node is not None and node[0] == source

    def tree_at(self, name, path):
        node = self.trees.get(name)
        for key in path:
            if node is None:
                return None
            node = node[1].get(key)
        return node


def _walk(value, path):
    """The object at ``path`` (keys, indexes, field names) inside ``value``."""
    for key in path:
        children = _children(value)
        items = dict(children) if children is not None else {}
        if key not in items:
            return _MISSING_ITEM
        value = items[key]
    return value


_MISSING_ITEM = object()


def _into(original, new):
    if original is new or type(original) is not type(new):
        return new
    if type(original) is list and len(original) == len(new):
        original[:] = [_into(a, b) for a, b in zip(original, new)]
        return original
    if type(original) is dict and original.keys() == new.keys():
        for key in new:
            original[key] = _into(original[key], new[key])
        return original
    if dataclasses.is_dataclass(original) and not type(original).__dataclass_params__.frozen:
        for f in dataclasses.fields(original):
            object.__setattr__(original, f.name, _into(getattr(original, f.name), getattr(new, f.name)))
        return original
    return new


def keep_raised_state(exc, key, fn, n_items, values, cells=None):
    """Notes on ``exc``, raised by ``fn`` (a loop body or an ``if``'s branch run in Python,
    called with ``n_items`` leading items and then ``values``), those variables as the raise
    left them, for ``raised_state(exc, key, ...)``: ``fn``'s own variables at the raise (its
    frame in the traceback), else ``values``. ``cells`` (``Site.cells``): a parameter that
    stands for a variable closures capture was copied into that variable's cell, which
    holds its value at the raise."""
    values = list(values)
    code = fn.__code__
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    if tb is not None:
        seen = tb.tb_frame.f_locals
        params = code.co_varnames[n_items : n_items + len(values)]
        cells = cells or {}
        values = [seen.get(cells[p] if cells.get(p) in code.co_freevars else p, v) for p, v in zip(params, values)]
    packed = values[0] if len(values) == 1 else tuple(values)
    with contextlib.suppress(AttributeError, TypeError):  # an exception without a __dict__
        exc.__autolax_raised_state__ = (key, packed)


def raised_state(exc, key, init):
    """The variables a loop or ``if`` carries after ``exc`` came out of it (inside a
    ``try``): ``x, y = ops.raised_state(raised, loop_body, (x, y))``.

    Equivalent Python: the variables as they were when the exception was raised. A loop
    (or branch) run in Python gives the values it left (``keep_raised_state``); otherwise
    (it raised before it ran, or while it was staged) the values before it, ``init``."""
    found = getattr(exc, "__autolax_raised_state__", None)
    if found is not None and found[0] is key:
        del exc.__autolax_raised_state__
        return found[1]
    return init
