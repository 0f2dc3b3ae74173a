"""What ``--standalone``'s static analysis knows about a value (the lattice), and how
values combine. This is knowledge, not decisions: ``autolax.plan`` decides from it.

A ``Val`` says whether a value is traced, and what else is known: its Python number kind
(the dtype's kind for arrays), its number of dimensions, whether it is a Python
container, whether it may be unbound, whether it is weakly typed, and for lists whether
they are empty or hold a staged loop's appends as one stacked array. A ``Scope`` maps the
names of one function scope to ``Val``s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autolax.transpile import syntax

NUMERIC = ("bool", "int", "float", "complex")
INEXACT = ("float", "complex")
STATIC_ATTRS = {"shape": None, "ndim": "int", "dtype": None, "size": "int", "itemsize": "int", "nbytes": "int",
                "weak_type": "bool", "sharding": None, "aval": None}
STATIC_BUILTINS = {"len": "int", "isinstance": "bool", "issubclass": "bool", "type": None, "callable": "bool",
                   "hasattr": "bool", "id": "int", "str": None, "repr": None, "format": None}
CONTAINER_BUILTINS = {"list", "tuple", "dict", "set", "frozenset", "sorted", "reversed", "zip", "enumerate",
                      "map", "filter", "range"}
KIND_BUILTINS = {"int": "int", "float": "float", "bool": "bool", "complex": "complex"}
CONTAINER_METHODS = {"items", "keys", "values"}
# JAX functions whose result is static even for traced arguments (they read types, not values).
JAX_STATIC = {"shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iinfo", "finfo", "promote_types",
              "isdtype", "can_cast", "eval_shape", "tree_structure", "typeof"}
# What jnp functions and array methods give: a result kind ...
_BOOL = {"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "isclose", "any",
         "all", "signbit", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal", "isin"}
_FLOAT = {"sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arctan2", "exp", "exp2", "expm1",
          "log", "log1p", "log2", "log10", "sqrt", "cbrt", "mean", "std", "var", "hypot", "sigmoid", "true_divide",
          "divide", "median", "rsqrt", "logaddexp"}
_INT = {"argmax", "argmin", "argsort", "count_nonzero", "searchsorted"}
_JOIN = {"minimum", "maximum", "abs", "absolute", "negative", "clip", "where", "square", "copy", "ravel", "reshape",
         "squeeze", "flatten", "transpose", "max", "min", "amax", "amin", "sort", "roll", "flip", "asarray", "array",
         "zeros_like", "ones_like", "add", "subtract", "multiply", "power", "remainder", "mod", "floor", "ceil",
         "round", "sign", "cumsum", "cumprod", "sum", "prod", "dot", "matmul", "concatenate", "stack", "take",
         "expand_dims", "broadcast_to", "tile", "repeat", "diff", "outer", "einsum", "real", "imag"}
# ... and dimensions: elementwise (the operands' broadcast), or a scalar for a reduction of a
# whole array (no axis argument).
_ELEMENTWISE = (_BOOL | _FLOAT | _JOIN) - {"any", "all", "mean", "std", "var", "median", "ravel", "reshape", "squeeze",
                                           "flatten", "transpose", "max", "min", "amax", "amin", "sort", "cumsum",
                                           "cumprod", "sum", "prod", "dot", "matmul", "concatenate", "stack", "take",
                                           "expand_dims", "broadcast_to", "tile", "repeat", "diff", "outer", "einsum"}
_REDUCTIONS = {"sum", "prod", "max", "min", "mean", "std", "var", "any", "all", "argmax", "argmin", "amax", "amin",
               "count_nonzero", "median"}


@dataclass(frozen=True)
class Val:
    """What the analysis knows about a value."""

    traced: bool = False
    kind: str | None = None  # "bool" / "int" / "float" / "complex" when known
    ndim: int | None = None  # number of dimensions when known (0: a scalar)
    container: bool = False  # a Python list / tuple / dict (iterated in Python)
    undefined: bool = False  # may be unbound (an `ops.undefined` initialisation)
    elts: tuple | None = None  # Vals of the items of a tuple display
    weak: bool = False  # traced, and computed from Python numbers (and bools) only
    empty: bool = False  # the empty list `[]`
    stacked: bool = False  # a list appended to in a staged loop: one stacked array of its items
    like: str | None = None  # has the dtype of this parameter, whose dtype nothing declares
    none: bool = False  # the constant None
    ctype: str | None = None  # "list" / "tuple" / "set" / "dict": a container made by a display
    # The number of items of a list display held by no variable of the user's (a return
    # value): no alias can change it. (A user's variable forgets it: ``without_items``.)
    items: int | None = None
    # A float computed from a value whose dtype nothing declares (`a * 0.5` for an argument
    # `a`): float32 or float64, weakly typed or not, as that argument turns out.
    unsized: bool = False
    # (name, flag): the variable ``name`` is bound in the output (zeros, maybe) but Python may
    # find it unbound, exactly where the output's boolean variable ``flag`` is False -- the
    # flag a staged one-sided ``if`` gives (``Lowering.one_sided``); flag ``CHECKED``: a read
    # of it at the top of the function checked it, so it is bound from there on. Kept only
    # where both values agree (``join``) and by the variable it is about (``Scope.set``):
    # where it is lost, a read of the variable is refused.
    flag: tuple | None = None
    text: bool = False  # a string (or bytes) constant: no JAX type, lax cannot carry it
    # A Python or NumPy value that Python indexes (a module's tuple, a NumPy array made by a
    # NumPy call): indexing it with a traced value needs a concrete index.
    host: bool = False

    @property
    def is_weak(self) -> bool:
        """A Python scalar, or traced and computed from Python scalars only (a JAX weak type,
        except for booleans)."""
        return self.weak or (not self.traced and self.kind in NUMERIC)

    @property
    def is_number(self) -> bool:
        """A Python number or an array (not a container, None or another object)."""
        return self.kind in NUMERIC or (self.traced and not self.container)

    def join(self, other: "Val") -> "Val":
        if self == UNDEFINED or other == UNDEFINED:  # unbound on one path: the other's type
            return replace(other if self == UNDEFINED else self, undefined=True, flag=None)
        elts = None
        if self.elts is not None and other.elts is not None and len(self.elts) == len(other.elts):
            elts = tuple(a.join(b) for a, b in zip(self.elts, other.elts))
        return Val(
            traced=self.traced or other.traced,
            kind=self.kind if self.kind == other.kind else join_kinds(self.kind, other.kind),
            ndim=self.ndim if self.ndim == other.ndim else None,
            container=self.container and other.container,
            undefined=self.undefined or other.undefined,
            elts=elts,
            weak=(self.traced or other.traced) and self.is_weak and other.is_weak,
            empty=self.empty and other.empty,
            stacked=self.stacked or other.stacked,
            like=self.like if self.like == other.like else None,
            none=self.none and other.none,
            ctype=self.ctype if self.ctype == other.ctype else None,
            items=self.items if self.items == other.items else None,
            unsized=self.unsized or other.unsized,
            flag=self.flag if self.flag == other.flag else None,
            text=self.text and other.text,
            host=self.host and other.host,
        )


STATIC = Val()
CHECKED = ""  # see Val.flag

TRACED = Val(traced=True)

UNDEFINED = Val(undefined=True)


def join_kinds(a, b):
    """The wider of two Python number kinds (None unless both are known)."""
    if a in NUMERIC and b in NUMERIC:
        return NUMERIC[max(NUMERIC.index(a), NUMERIC.index(b))]
    return None


def join_ndims(vals):
    """The number of dimensions of values broadcast together (None unless all known)."""
    ndims = [v.ndim for v in vals]
    return None if any(n is None for n in ndims) else max(ndims, default=0)


def inexact(vals) -> bool | None:
    """Do these values include a floating-point one (None: not known, some kinds are not)?"""
    kinds = [v.kind for v in vals]
    if any(k in INEXACT for k in kinds):
        return True
    return False if all(k in NUMERIC for k in kinds) else None


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
        if val.flag is not None and val.flag[0] != name:  # another variable's flag (`y = q`)
            val = replace(val, flag=None)
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
def constant(value) -> Val:
    for kind, t in (("bool", bool), ("int", int), ("float", float), ("complex", complex)):
        if type(value) is t:
            return Val(kind=kind, ndim=0)
    if isinstance(value, (str, bytes)):
        return Val(text=True)
    return Val(none=True) if value is None else STATIC


def _structure(v: Val):
    """What is known of a value's pytree structure: "None", "a number or array" (a known
    numeric kind), ("items", n) for a display of n items, or None when not known."""
    if v.none:
        return "None"
    if v.container:
        if v.elts is not None:
            return ("items", len(v.elts))
        return ("items", v.items) if v.items is not None else "a container"
    return "a number or array" if v.kind in NUMERIC else None


def structures_differ(a: Val, b: Val):
    """(a's, b's) description when the two branches of a staged ``if`` surely give a value
    of different pytree structures (``lax.cond`` rejects them; so does the runtime), else None."""
    if a == UNDEFINED or b == UNDEFINED or a.undefined or b.undefined:
        return None
    sa, sb = _structure(a), _structure(b)
    if sa is None or sb is None:
        return None
    if a.container and b.container:  # two containers: of two types, or of different numbers of items
        if a.ctype is not None and b.ctype is not None and a.ctype != b.ctype:
            return f"a {a.ctype}", f"a {b.ctype}"
        if not (isinstance(sa, tuple) and isinstance(sb, tuple)):
            return None
        if sa[1] == sb[1]:
            if a.elts is None or b.elts is None:
                return None
            return next(filter(None, (structures_differ(x, y) for x, y in zip(a.elts, b.elts))), None)
    elif sa == sb:
        return None
    def describe(d, v):
        return d if isinstance(d, str) else f"a {v.ctype or 'container'} of {d[1]} item{'s' if d[1] != 1 else ''}"

    return describe(sa, a), describe(sb, b)


def _count(v: Val):
    """A container's number of items where known, else None."""
    return len(v.elts) if v.elts is not None else v.items


def _opaque(v: Val) -> bool:
    """A value whose type nothing here knows (an argument nothing declares, a global, what
    an unknown function returns): an array or a number, unless it is a container."""
    return not (v.container or v.none or v.kind in NUMERIC)


def _describe(v: Val) -> str:
    if v.none:
        return "None"
    if _opaque(v):
        return "a value whose type --standalone cannot tell at conversion (an array, unless it is a container)"
    if not v.container:
        return "a number or array"
    n = _count(v)
    if n is None:
        return f"a {v.ctype or 'container'} of a number of items --standalone cannot tell at conversion"
    return f"a {v.ctype or 'container'} of {n} item{'s' if n != 1 else ''}"


def structures_unknown(a: Val, b: Val):
    """(a's, b's) description when nothing here tells whether the two branches of a staged
    ``if`` give a value of one pytree structure, which ``lax.cond`` needs (call it where
    ``structures_differ`` found none): a container or None beside a value of a type not
    known (an argument may be an array or a tuple), or a display of a known number of items
    beside a container of a number not known. Two values of types not known are taken to be
    arrays, as an argument nothing declares is; else None."""
    if a == UNDEFINED or b == UNDEFINED or a.undefined or b.undefined:
        return None
    if a.container and b.container:
        ca, cb = _count(a), _count(b)
        if (ca is None) != (cb is None):
            return _describe(a), _describe(b)
        if a.elts is not None and b.elts is not None and len(a.elts) == len(b.elts):
            return next(filter(None, (structures_unknown(x, y) for x, y in zip(a.elts, b.elts))), None)
        return None
    if _opaque(a) != _opaque(b) and (a.container or a.none or b.container or b.none):
        return _describe(a), _describe(b)
    return None


def binop(a: Val, b: Val, op) -> Val:
    traced = a.traced or b.traced
    if isinstance(op, syntax.Mult) and a.container != b.container:  # `[0.0] * n`: a list, as Python repeats it
        seq, times = (a, b) if a.container else (b, a)
        if seq.ctype in ("list", "tuple") and not times.traced and times.kind in ("int", "bool"):
            return Val(traced=seq.traced, container=True, ctype=seq.ctype)
    kind = join_kinds(a.kind, b.kind)
    unsized = a.unsized or b.unsized
    if traced and kind is None and "float" in (a.kind, b.kind):
        # An array of any real dtype and a float give a float: of the array's width, or of
        # the Python float's (weakly typed) for an integer array.
        sized = [v for v in (a, b) if v.kind == "float" and not v.is_weak and not v.unsized]
        kind, unsized = "float", not sized
    if isinstance(op, syntax.Div) and (kind in ("bool", "int") or traced and kind is None):
        unsized = unsized or kind is None
        kind = "float"
    elif kind == "bool" and not isinstance(op, (syntax.BitAnd, syntax.BitOr, syntax.BitXor)):
        kind = "int"
    container = a.container and b.container and isinstance(op, syntax.Add)
    ndim = None if container or isinstance(op, syntax.MatMult) else join_ndims([a, b])
    return Val(traced=traced, kind=kind, container=container, ndim=ndim, weak=traced and a.is_weak and b.is_weak,
               like=None if container else _dtype_kept(a, b, op), unsized=unsized and kind == "float" and not container)


# Operations whose result has the dtype of an array operand when the other operand is a
# Python int (or an array of the same dtype): `x + 1`, `3 * n + 1`, `x // 2`, `x ** 2`.
# (Not so for a bool array, `x * 2` being an int: lax.cond then raises JAX's type error when
# the file is traced, never a wrong value. Declaring the argument's type avoids it.)
_DTYPE_KEEPING = (syntax.Add, syntax.Sub, syntax.Mult, syntax.FloorDiv, syntax.Mod, syntax.Pow)


def _dtype_kept(a: Val, b: Val, op):
    if not isinstance(op, _DTYPE_KEEPING):
        return None
    for x, y in ((a, b), (b, a)):
        if x.like is not None and (y.like == x.like or y.is_weak and y.kind in ("int", "bool") and not y.container):
            return x.like
    return None


def call_result(name: str, vals, traced: bool, method_of: Val | None = None, n_args: int = 0) -> Val:
    """The Val of ``jnp.<name>(*args)`` (or the array method ``x.<name>(*args)``)."""
    operands = ([method_of] if method_of is not None else []) + list(vals)
    unsized = False
    if name in _BOOL:
        kind = "bool"
    elif name in _FLOAT:
        kind = "float" if all(v.kind != "complex" for v in operands) else None
        unsized = any(v.kind is None or v.unsized for v in operands)
    elif name in _INT:
        kind = "int"
    elif name in _JOIN and operands:
        kind = operands[0].kind
        for v in operands[1:]:
            kind = kind if kind == v.kind else join_kinds(kind, v.kind)
        if name in ("sum", "prod", "cumsum", "cumprod") and kind == "bool":
            kind = "int"
    else:
        kind = None
    if name in _REDUCTIONS and (n_args == 0 if method_of is not None else n_args == 1):
        ndim = 0
    else:
        ndim = join_ndims(operands) if name in _ELEMENTWISE and operands else None
    unsized = kind == "float" and (unsized if name in _FLOAT else any(v.unsized for v in operands))
    return Val(traced=traced, kind=kind, ndim=ndim, unsized=unsized)


def subscript(a: Val, index: Val, index_node) -> Val:
    """The Val of ``a[index]``."""
    if a.elts is not None and isinstance(index_node, syntax.Constant) and isinstance(index_node.value, int):
        if -len(a.elts) <= index_node.value < len(a.elts):
            return a.elts[index_node.value]
    if a.container and isinstance(index_node, syntax.Slice) and a.ctype in ("list", "tuple", None):
        return Val(traced=a.traced or index.traced, container=True, ctype=a.ctype)  # `args[1:]`: a tuple still
    if a.container:
        return Val(traced=a.traced or index.traced)
    ndim = a.ndim - 1 if a.ndim and index.kind == "int" and index.ndim == 0 else None
    # No `like`: an argument nothing declares may be a tuple or dict of values of other dtypes.
    return Val(traced=a.traced or index.traced, kind=a.kind, weak=a.weak, ndim=ndim, unsized=a.unsized)


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


def may_differ(a: Val, b: Val) -> bool:
    """May the two branches of a staged ``if`` give this output different dtypes, which
    ``lax.cond`` rejects? A Python number beside an array (whose dtype, float32 or float64,
    nothing here knows), values of two kinds or of a kind not known (an argument nothing
    declares), or containers whose items are not known."""
    if a == UNDEFINED or b == UNDEFINED:
        return False
    if a.like is not None and a.like == b.like and not (a.container or b.container):
        return False  # both have the dtype of one parameter (`x if c else -x`)
    if (a.unsized or b.unsized) and not (a.container or b.container):
        return True  # a float of an argument's unknown dtype: float32 or float64, weak or not
    if a.container or b.container:
        if a.elts is None or b.elts is None or len(a.elts) != len(b.elts):
            return True  # items not known
        return any(may_differ(x, y) for x, y in zip(a.elts, b.elts))
    cast_a, cast_b = casts(a, b)
    return cast_a is not None or cast_b is not None or a.kind is None or a.kind != b.kind


def carry_may_change(entry: Val, final: Val) -> bool:
    """May a staged loop's iterations give a value it carries a dtype its value before the
    loop does not have, where the kinds are not known (known kinds are promoted before the
    loop, ``Loops.promote``)?"""
    if entry == UNDEFINED or entry.undefined:
        return False
    if entry.container or final.container:  # items of unknown (or changing) types
        return may_differ(entry, final)
    if entry.kind in NUMERIC and final.kind in NUMERIC:
        return promoted_width_unknown(entry, final)
    return may_differ(entry, final)


def promoted_width_unknown(entry: Val, final: Val) -> bool:
    """Does a loop turn an array it carries into a float (or complex) of a width nothing here
    knows (``u`` an int array before ``u = xs[-1]`` for an argument ``xs``)?
    ``Loops.promote`` cannot write that type before the loop: ``jnp.asarray(u, dtype=float)``
    is a float64 under x64 beside a float32 ``xs``. (A Python number it writes as
    ``float(u)``, weakly typed: the lax loop gives it the body's width.)"""
    return (entry.traced and entry.kind in NUMERIC and final.kind in NUMERIC and entry.kind != final.kind
            and final.unsized and not entry.container and not final.container)


def traced_weak_first(entry: Val, final: Val) -> bool:
    """Does a Python number (weakly typed) enter a staged loop that makes it a float of an
    argument's width, which nothing here knows (``z = 2.0`` before ``z += xs[4]``)? The lax
    loop traces its body first with the weak value (a float64 under x64), then again with
    the width the body gives it: in the body, its dtype is not one known here, so a staged
    ``if`` there whose other side gives the body's width calls ``promoting_cond``."""
    return (entry.is_weak and not entry.container and not entry.undefined and not final.container
            and final.kind in ("float", "complex") and final.unsized)


def weak_into_strong(entry: Val, out: Val) -> bool:
    """Does an iteration give a Python number (weakly typed) to a variable that enters the
    loop as an array of a numeric kind, whose width nothing here knows? ``lax`` loops need
    the carry's dtype back, and under x64 ``0.25`` is a float64 beside a float32 array."""
    return (entry.traced and not entry.is_weak and not entry.container and not entry.undefined
            and out.is_weak and out.kind in ("int", "float", "complex") and not out.container and not out.undefined)


def staged_output(a: Val, b: Val, cast_a=None, cast_b=None) -> Val:
    """The Val of a staged ``if``'s output whose branches give ``a`` and ``b``."""
    a_given, b_given = a, b
    if a == UNDEFINED:
        a = b
    if b == UNDEFINED:
        b = a
    kinds = {cast_a or a.kind, cast_b or b.kind}
    kind = kinds.pop() if len(kinds) == 1 else join_kinds(*kinds)
    weak = (a.is_weak and cast_a is None) and (b.is_weak and cast_b is None)
    elts = None
    if a.elts is not None and b.elts is not None and len(a.elts) == len(b.elts):
        elts = tuple(staged_output(x, y) for x, y in zip(a.elts, b.elts))
    return Val(traced=True, kind=kind, weak=weak, container=a.container and b.container, elts=elts,
               ndim=a.ndim if a.ndim == b.ndim else None, stacked=a.stacked or b.stacked,
               like=a.like if a.like == b.like else None, items=a.items if a.items == b.items else None,
               unsized=kind == "float" and (a.unsized or b.unsized or None in (a.kind, b.kind)),
               flag=a.flag if a.flag == b.flag and UNDEFINED not in (a_given, b_given) else None)


def flat(scope: Scope) -> dict:
    """Every name ``scope`` sees (its own and its parents'), as one dict: what is known of
    them now, kept from later changes."""
    chain = []
    while scope is not None:
        chain.append(scope)
        scope = scope.parent
    out = {}
    for s in reversed(chain):
        out.update(s.values)
    return out


def without_items(val: Val) -> Val:
    """``val`` bound to a variable of the user's: the lengths of the lists it holds are no
    longer known (an alias may append to them)."""
    if val.items is None and val.elts is None:
        return val
    elts = tuple(without_items(v) for v in val.elts) if val.elts is not None else None
    return replace(val, items=None, elts=elts)


def carried(val: Val, sized: bool = False) -> Val:
    """The Val of a variable carried by a staged loop (an array of the value's type);
    ``sized``: by a loop whose carry keeps one dtype (not a ``promoting_*`` loop), so a
    float of an argument's unknown dtype has the carry's, as every value it is given must.
    An empty list is carried as it is, an empty pytree: still known to be empty (a staged
    body reading ``items[0]`` fails while traced; fuzz seed 9027). None is carried as it is
    too (a pytree with no leaves): a branch that gives it a number gives another structure."""
    if val.empty or val.none:
        return val
    elts = tuple(carried(v, sized) for v in val.elts) if val.container and val.elts is not None else None
    return Val(traced=True, kind=val.kind, container=val.container, weak=val.is_weak, ndim=val.ndim, elts=elts,
               like=val.like, unsized=val.unsized and not sized, flag=val.flag)


def item_of(val: Val) -> Val:
    """The Val of an item of an iterable with Val ``val``."""
    if not val.traced and val.kind == "int":
        return Val(kind="int", ndim=0)
    if val.traced and not val.container:  # a row of an array
        return Val(traced=True, kind=val.kind, ndim=val.ndim - 1 if val.ndim else None)
    return Val(traced=val.traced)
