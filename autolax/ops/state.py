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

import types
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autolax.errors import StateMismatchError, UndefinedVariableError

PY_SCALARS = (bool, int, float, complex)


class Undefined:
    """The value of a variable that has not been assigned yet (``ops.undefined('y')``).

    Any use of it raises ``UndefinedVariableError``, as Python raises ``UnboundLocalError``.
    """

    __slots__ = ("name", "pending")

    def __init__(self, name: str, pending: bool = False):
        self.name = name
        # pending: a loop-carried variable first assigned inside the loop, while the loop
        # body is traced to find its type. An `if` in the body may then leave it unassigned
        # on one side: the type comes from the other side.
        self.pending = pending

    def __repr__(self):
        return f"<undefined '{self.name}'>"

    def _fail(self, *args, **kwargs):
        __tracebackhide__ = True
        import linecache
        import sys

        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        where = ""
        if frame is not None:
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            from autolax.transpile.context import display_filename

            where = f" at {display_filename(frame.f_code.co_filename)}:{frame.f_lineno}\n    {line}\n"
        raise UndefinedVariableError(
            f"local variable '{self.name}' is used before it is assigned{where or ': '}"
            f"No statement that ran so far gave it a value.\nFix: assign '{self.name}' before this point "
            "(before the loop or `if` that first assigns it)."
        )

    __bool__ = __len__ = __iter__ = __getitem__ = __call__ = __index__ = _fail
    __int__ = __float__ = __array__ = __jax_array__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = _fail
    __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = __lt__ = __le__ = __gt__ = _fail
    __ge__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __invert__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()


def undefined(name: str, pending: bool = False) -> Undefined:
    """``y = ops.undefined('y')``: a carried variable with no value yet.

    ``pending=True`` (used for the function's return value) lets a staged ``if`` that
    assigns it on one side only take that side's type: every path assigns it before it is read.
    """
    return Undefined(name, pending=pending)


def is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


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
    return isinstance(leaf, (jax.Array, jax.core.Tracer, np.ndarray, np.generic)) or type(leaf) in PY_SCALARS


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

    def same(self, other: "Leaf") -> bool:
        if self.dynamic != other.dynamic:
            return False
        if self.dynamic:
            return _same_aval(self.aval, other.aval)
        return _static_equal(self.value, other.value)


def _same_aval(a, b) -> bool:
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and a.weak_type == b.weak_type
        and _placement(a) == _placement(b)
    )


def _placement(aval):
    """(sharding, varying manual axes) of ``aval``: its sharding when it lives on a mesh
    with explicit axes (else None), and the ``shard_map`` axes it varies over."""
    sharding = getattr(aval, "sharding", None)
    if getattr(getattr(sharding, "mesh", None), "empty", True):
        sharding = None
    mat = getattr(aval, "manual_axis_type", None)
    return sharding, (mat.varying if mat is not None else frozenset())


def abstract(aval, *, weak_type=None) -> jax.ShapeDtypeStruct:
    """``aval`` as a ShapeDtypeStruct that keeps its placement (see ``_placement``).

    A body traced from shape and dtype alone would not know that a value varies across
    ``shard_map`` devices or is sharded: it would be traced with the wrong collectives
    (``psum`` of a replicated value) and out-shardings, and fail when replayed on the real
    values.
    """
    sharding, _ = _placement(aval)
    mat = getattr(aval, "manual_axis_type", None)
    return jax.ShapeDtypeStruct(
        aval.shape,
        aval.dtype,
        weak_type=aval.weak_type if weak_type is None else weak_type,
        sharding=sharding,
        manual_axis_type=None if mat is None or mat.empty else mat,
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
    weak = aval.weak_type and not strong_numbers
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

    def same(self, other: "VarSpec") -> bool:
        return self.treedef == other.treedef and all(a.same(b) for a, b in zip(self.leaves, other.leaves))

    def describe(self) -> str:
        """``float32[3]``, ``None``, ``{'w': float32[2,2], 'b': float32[2]}`` ..."""
        if self.is_undefined:
            return "undefined"
        if not self.leaves and self.treedef == jax.tree_util.tree_structure(None):
            return "None"
        parts = [_Repr(describe_leaf(leaf)) for leaf in self.leaves]
        return repr(jax.tree_util.tree_unflatten(self.treedef, parts))


class _Repr:
    def __init__(self, text):
        self.text = text

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
            kind = type(leaf).__name__
            raise StateMismatchError(
                f"'{name}' is a {kind} object holding traced values: a staged loop or `if` can only carry "
                f"arrays, Python numbers and registered pytrees, and would leak the traced values it "
                f"stores in the object.\nFix: register {kind} as a pytree (jax.tree_util.register_dataclass "
                f"or register_pytree_node_class), or carry its traced fields as separate variables."
            )
    return VarSpec(name, treedef, tuple(leaf_spec(x, strong_numbers) for x in leaves), key_order(value))


def key_order(value):
    """The insertion order of each dict in ``value`` (through nested lists, tuples and
    dicts), or None if there is none to keep. A pytree round trip sorts a dict's keys, but
    Python code sees insertion order (``for v in d.values()``, ``print(d)``): ``restore_order``
    puts it back."""
    if type(value) is dict:
        subs = tuple((k, key_order(v)) for k, v in value.items())
        try:
            in_order = list(value) == sorted(value)
        except TypeError:
            in_order = False
        if in_order and all(sub is None for _, sub in subs):
            return None
        return (dict, subs)
    if isinstance(value, (list, tuple)):
        subs = tuple(key_order(v) for v in value)
        return (type(value), subs) if any(sub is not None for sub in subs) else None
    return None


def restore_order(value, order):
    """``value`` (rebuilt from leaves) with the dict orders ``key_order`` recorded."""
    if order is None:
        return value
    kind, subs = order
    if kind is dict:
        if type(value) is not dict or len(value) != len(subs) or any(k not in value for k, _ in subs):
            return value
        return {k: restore_order(value[k], sub) for k, sub in subs}
    if type(value) is not kind or len(value) != len(subs):
        return value
    items = [restore_order(v, sub) for v, sub in zip(value, subs)]
    if kind is list:
        return items
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


@dataclass
class State:
    """The carried variables of one staged statement."""

    specs: list
    construct: object = None  # autolax.transpile.context.Construct (for messages)
    extras: list = field(default_factory=list)  # per-iteration outputs (list appends)

    @classmethod
    def of(cls, names, values, construct=None, strong_numbers=False):
        return cls([var_spec(n, v, strong_numbers) for n, v in zip(names, values)], construct)

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

    def pending(self) -> "State":
        """This state with its undefined variables marked pending (see Undefined.pending)."""
        specs = [
            VarSpec(s.name, s.treedef, (Leaf(False, value=Undefined(s.name, pending=True)),), s.order) if s.is_undefined else s
            for s in self.specs
        ]
        return State(specs, self.construct, self.extras)

    def dynamic(self, values) -> list:
        """The dynamic leaves of ``values``, each cast to its spec's type (``Undefined``
        leaves become zeros of the spec's type: a loop-first-assigned variable)."""
        out = []
        for spec, value in zip(self.specs, values):
            if isinstance(value, Undefined):
                out.extend(cast(jnp.zeros(leaf.aval.shape, leaf.aval.dtype), leaf.aval) for leaf in spec.leaves if leaf.dynamic)
                continue
            leaves = jax.tree_util.tree_leaves(value, is_leaf=_is_leaf)
            for leaf, x in zip(spec.leaves, leaves):
                if leaf.dynamic:
                    out.append(cast(x, leaf.aval))
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
        return self.construct.describe(name) if self.construct is not None else f"'{name}'"


def cast(x, aval):
    """``x`` as a value of type ``aval``: dtype promotion, and the placement ``aval`` has
    (varying over more ``shard_map`` axes, another sharding); shapes already match."""
    sharding, varying = _placement(aval)
    if type(x) in PY_SCALARS:
        if aval.weak_type and sharding is None and not varying:
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
    mat = getattr(b, "manual_axis_type", None) or getattr(a, "manual_axis_type", None)
    if varying_a != varying_b:
        mat = mat.update(varying=varying_a | varying_b)
    return jax.ShapeDtypeStruct(
        a.shape,
        dtype,
        weak_type=weak_type,
        sharding=sharding_b if sharding_b is not None else sharding_a,
        manual_axis_type=None if mat is None or mat.empty else mat,
    )


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
        dtype, weak = jax.dtypes.result_type(a.aval, b.aval, return_weak_type_flag=True)
        return Leaf(True, _join_placement(a.aval, b.aval, dtype, weak))
    if not a.dynamic and not b.dynamic:
        return a if _static_equal(a.value, b.value) else None
    return None


def _mismatch(construct, name, first, second, rule, fix, where_first, where_second):
    what = construct.describe(name) if construct is not None else f"'{name}'"
    where = f" at {construct.where}" if construct is not None else ""
    kind = construct.kind if construct is not None else "statement"
    head = {
        "if": f"the `if`{where}",
        "while": f"the `while` loop{where}",
        "for": f"the `for` loop{where}",
        "ternary": f"the conditional expression{where}",
    }.get(kind, f"the statement{where}")
    src = f"\n    {construct.source}" if construct is not None and construct.source else ""
    return StateMismatchError(
        f"{what} is {first} {where_first} and {second} {where_second} of {head}{src}\n{rule}\nFix: {fix}"
    )


def _is_list(spec: VarSpec) -> bool:
    from autolax.ops.data import StackedList

    node = spec.treedef.node_data()
    return node is not None and node[0] in (list, StackedList)


def join_branches(true_state: State, false_state: State, construct) -> State:
    """The output type of a staged ``if``: both branches' outputs, reconciled."""
    __tracebackhide__ = True
    specs = []
    for a, b in zip(true_state.specs, false_state.specs):
        if a.is_undefined or b.is_undefined:
            if a.is_undefined and b.is_undefined:
                specs.append(a)
                continue
            # Undefined.pending; or Python binds it before every read, so the unbound side is
            # a path that jumped (`return`, `break`, `continue`) and never reads it.
            if a.is_pending or b.is_pending or (construct is not None and a.name in construct.always_bound):
                specs.append(b if a.is_undefined else a)
                continue
            side = "`if`" if b.is_undefined else "`else`"
            other = "`else`" if b.is_undefined else "`if`"
            what = construct.describe(a.name) if construct is not None else f"'{a.name}'"
            raise UndefinedVariableError(
                f"{what} is assigned only in the {side} branch of the `if` at {construct.where}, "
                f"and used after it:\n    {construct.source}\n"
                f"The condition is traced, so both branches are staged with lax.cond and each must give "
                f"{what} a value.\nFix: assign {what} before the `if` (for example {a.name} = "
                f"jnp.zeros_like(...)), or in the {other} branch too."
            )
        if a.treedef != b.treedef or len(a.leaves) != len(b.leaves):
            if _is_list(a) and _is_list(b):
                raise _mismatch(construct, a.name, a.describe(), b.describe(),
                                "The condition is traced, so appending to a list in one branch only would make "
                                "the list's length depend on data.",
                                f"append in both branches (for example a masked value), or write into a "
                                f"preallocated array with .at[i].set(...) instead of {construct.describe(a.name) if construct else a.name}.",
                                "in the `if` branch", "in the `else` branch")
            raise _mismatch(construct, a.name, a.describe(), b.describe(),
                            "The condition is traced, so lax.cond needs both branches to give it the same structure.",
                            f"give {construct.describe(a.name) if construct else a.name} the same structure (same container, same number of items) in both branches.",
                            "in the `if` branch", "in the `else` branch")
        leaves = []
        for la, lb in zip(a.leaves, b.leaves):
            joined = _join_leaf(la, lb, loop=False)
            if joined is None:
                raise _mismatch(construct, a.name, a.describe(), b.describe(),
                                "The condition is traced, so lax.cond needs both branches to give it the same shape; "
                                "non-array values (strings, objects) must be equal.",
                                "compute values of one shape in both branches (pad, mask, or use jnp.where), "
                                "or move the non-array value out of the `if`.",
                                "in the `if` branch", "in the `else` branch")
            leaves.append(joined)
        specs.append(VarSpec(a.name, a.treedef, tuple(leaves), a.order))
    return State(specs, construct)


def join_iterations(before: State, after: State, construct) -> State:
    """The carry type of a staged loop: the state before an iteration reconciled with the
    state after one. A variable with no value before the loop takes the body's type."""
    __tracebackhide__ = True
    specs = []
    for a, b in zip(before.specs, after.specs):
        if a.is_undefined:
            specs.append(b if not b.is_undefined else a)
            continue
        if b.is_undefined:
            raise UndefinedVariableError(
                f"{construct.describe(a.name)} loses its value in the loop at {construct.where}."
            )
        if a.treedef != b.treedef or len(a.leaves) != len(b.leaves):
            rule = "A staged loop carries each variable with one structure for every iteration."
            fix = f"give {construct.describe(a.name)} its final structure before the loop."
            if not a.leaves and a.treedef == jax.tree_util.tree_structure(None):
                rule = "A staged loop cannot carry None: each carried variable needs an array value before the loop."
                fix = (f"initialise {construct.describe(a.name)} before the loop with a value of its final type "
                       f"(for example -jnp.inf, 0.0 or jnp.zeros(...)), and a separate flag if 'no value yet' matters.")
            raise _mismatch(construct, a.name, a.describe(), b.describe(), rule, fix,
                            "before the loop", "after one iteration")
        leaves = []
        for la, lb in zip(a.leaves, b.leaves):
            joined = _join_leaf(la, lb, loop=True)
            if joined is None:
                raise _mismatch(construct, a.name, a.describe(), b.describe(),
                                "A staged loop carries each variable with one shape for every iteration.",
                                f"give {construct.describe(a.name)} a fixed shape (preallocate and write with "
                                f".at[i].set(...), or mask), or keep the loop in Python over a static range.",
                                "before the loop", "after one iteration")
            leaves.append(joined)
        specs.append(VarSpec(a.name, a.treedef, tuple(leaves), a.order))
    return State(specs, construct)
