"""What ``--standalone``'s static analysis knows about a value, and how values combine.

A ``Val`` says whether a value is traced, and what else is known: its Python number kind,
whether it is a Python container, whether it may be unbound, whether it is weakly typed.
A ``Scope`` maps the names of one function scope to ``Val``s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autolax.transpile import syntax

NUMERIC = ("bool", "int", "float", "complex")
STATIC_ATTRS = {"shape": None, "ndim": "int", "dtype": None, "size": "int", "itemsize": "int", "nbytes": "int",
                "weak_type": "bool", "sharding": None, "aval": None}
STATIC_BUILTINS = {"len": "int", "isinstance": "bool", "issubclass": "bool", "type": None, "callable": "bool",
                   "hasattr": "bool", "id": "int", "str": None, "repr": None, "format": None}
CONTAINER_BUILTINS = {"list", "tuple", "dict", "set", "frozenset", "sorted", "reversed", "zip", "enumerate",
                      "map", "filter", "range"}
KIND_BUILTINS = {"int": "int", "float": "float", "bool": "bool", "complex": "complex"}
# JAX functions whose result is static even for traced arguments (they read types, not values).
JAX_STATIC = {"shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iinfo", "finfo", "promote_types",
              "isdtype", "can_cast", "eval_shape", "tree_structure", "typeof"}
JAX_BOOL = {"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "isclose",
            "allclose", "array_equal", "array_equiv", "any", "all", "signbit", "isneginf", "isposinf", "iscomplex",
            "isreal", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal", "isin"}
CONTAINER_METHODS = {"items", "keys", "values"}


@dataclass(frozen=True)
class Val:
    """What the analysis knows about a value."""

    traced: bool = False
    kind: str | None = None  # "bool" / "int" / "float" / "complex" when known
    container: bool = False  # a Python list / tuple / dict (iterated in Python)
    undefined: bool = False  # may be unbound (an `ops.undefined` initialisation)
    elts: tuple | None = None  # Vals of the items of a tuple display
    weak: bool = False  # traced, and computed from Python numbers (and bools) only

    @property
    def is_weak(self) -> bool:
        """A Python scalar, or traced and computed from Python scalars only (a JAX weak type,
        except for booleans)."""
        return self.weak or (not self.traced and self.kind in NUMERIC)

    def join(self, other: "Val") -> "Val":
        if self == UNDEFINED or other == UNDEFINED:  # unbound on one path: the other's type
            return replace(other if self == UNDEFINED else self, undefined=True)
        elts = None
        if self.elts is not None and other.elts is not None and len(self.elts) == len(other.elts):
            elts = tuple(a.join(b) for a, b in zip(self.elts, other.elts))
        return Val(
            traced=self.traced or other.traced,
            kind=self.kind if self.kind == other.kind else join_kinds(self.kind, other.kind),
            container=self.container and other.container,
            undefined=self.undefined or other.undefined,
            elts=elts,
            weak=(self.traced or other.traced) and self.is_weak and other.is_weak,
        )

STATIC = Val()

TRACED = Val(traced=True)

UNDEFINED = Val(undefined=True)


def join_kinds(a, b):
    """The wider of two Python number kinds (None unless both are known)."""
    if a in NUMERIC and b in NUMERIC:
        return NUMERIC[max(NUMERIC.index(a), NUMERIC.index(b))]
    return None


class Scope:
    """Names bound in one function scope (``parent``: the enclosing one)."""

    def __init__(self, parent=None, values=None):
        self.parent = parent
        self.values = dict(values or {})

    def get(self, name: str) -> Val:
        scope = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return STATIC  # a global, builtin or module

    def bound(self, name: str) -> bool:
        scope = self
        while scope is not None:
            if name in scope.values:
                return True
            scope = scope.parent
        return False

    def set(self, name: str, val: Val) -> None:
        self.values[name] = val

    def copy(self) -> "Scope":
        return Scope(self.parent, self.values)

    def child(self, values) -> "Scope":
        return Scope(self, values)

    def merge(self, a: "Scope", b: "Scope") -> None:
        """This scope after one of two branches ran (``a`` or ``b``, copies of it)."""
        def value(branch, name):
            if name in branch.values:
                return branch.values[name]
            return self.get(name) if self.bound(name) else UNDEFINED

        for name in sorted(set(a.values) | set(b.values)):
            self.values[name] = value(a, name).join(value(b, name))


# ----------------------------------------------------------------------------- helpers
def kind_of_constant(value):
    for kind, t in (("bool", bool), ("int", int), ("float", float), ("complex", complex)):
        if type(value) is t:
            return kind
    return None


def binop(a: Val, b: Val, op) -> Val:
    traced = a.traced or b.traced
    weak = a.is_weak and b.is_weak
    container = a.container and b.container and isinstance(op, syntax.Add)
    if not traced:
        kind = join_kinds(a.kind, b.kind)
        if kind is not None and isinstance(op, syntax.Div):
            kind = "float" if kind in ("bool", "int") else kind
        if kind == "bool" and not isinstance(op, (syntax.BitAnd, syntax.BitOr, syntax.BitXor)):
            kind = "int"
        return Val(kind=kind, container=container)
    kinds = {a.kind, b.kind}
    if isinstance(op, syntax.Div) or "float" in kinds:
        return Val(traced=True, kind="float", weak=weak)
    return Val(traced=True, kind=a.kind if a.kind == b.kind and a.kind != "bool" else None, weak=weak)


def casts(a: Val, b: Val):
    """The kinds to turn each branch's value into an array of (or None), so both branches of
    a staged ``if`` give equal types. Python numbers are weakly typed: beside a strongly
    typed array they become an array of their kind's default dtype (float32 for a float);
    beside another weak value of a different kind, both become the wider kind."""
    if a == UNDEFINED or b == UNDEFINED or a.container or b.container:
        return None, None
    numbers = ("int", "float", "complex")
    weak_a, weak_b = a.is_weak and a.kind in numbers, b.is_weak and b.kind in numbers
    if a.is_weak and b.is_weak:
        if weak_a and weak_b and a.kind != b.kind:
            kind = join_kinds(a.kind, b.kind)
            return kind, kind
        return None, None
    if weak_a:
        return (join_kinds(a.kind, b.kind) if b.kind in numbers else a.kind), None
    if weak_b:
        return None, (join_kinds(b.kind, a.kind) if a.kind in numbers else b.kind)
    return None, None


def staged_output(a: Val, b: Val, cast_a, cast_b) -> Val:
    """The Val of a staged ``if``'s output whose branches give ``a`` and ``b``."""
    if a == UNDEFINED:
        a = b
    if b == UNDEFINED:
        b = a
    kinds = {cast_a or a.kind, cast_b or b.kind}
    kind = kinds.pop() if len(kinds) == 1 else join_kinds(*kinds)
    weak = (a.is_weak and cast_a is None) and (b.is_weak and cast_b is None)
    return Val(traced=True, kind=kind, weak=weak, container=a.container and b.container)


def item_of(val: Val) -> Val:
    """The Val of an item of an iterable with Val ``val``."""
    return Val(traced=val.traced, kind="int" if not val.traced and val.kind == "int" else None)


def is_container_annotation(node) -> bool:
    """``list``, ``tuple[...]``, ``dict``, ``Sequence[...]``, ``typing.Mapping`` ..."""
    if isinstance(node, syntax.Subscript):
        node = node.value
    if isinstance(node, syntax.Attribute):
        name = node.attr
    elif isinstance(node, syntax.Name):
        name = node.id
    elif isinstance(node, syntax.Constant) and isinstance(node.value, str):
        name = node.value.split("[")[0].split(".")[-1]
    else:
        return False
    return name in {"list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence", "Mapping", "Iterable",
                    "MutableSequence", "MutableMapping", "Collection"}
