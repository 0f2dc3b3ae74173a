"""What ``--standalone`` assumes about a function's arguments: what annotations (or
``--signature``) declare.

Under ``jax.jit`` every argument is traced unless it is declared static. Some forms depend
on more than that -- a loop that can stop early is written to be reverse-differentiable
when it carries floating-point values; the two branches of a staged ``if`` must give one
dtype -- so the declared kind (and number of dimensions) of each argument is read from:

==============================================  ==========================================
``x: float`` / ``int`` / ``bool`` / ``complex``   a Python number (a weakly typed scalar)
``xs: Float[Array, "n"]`` (jaxtyping; also       an array of that kind; the shape string
``Float32``, ``Inexact``, ``Int``, ``Bool``,      gives its dimensions (``""``: a scalar,
``Complex`` ..., as written or in a string)       ``"..."``: any)
``jax.Array``, ``jnp.ndarray``, ``np.ndarray``    an array of unknown dtype
``list``, ``tuple``, ``dict``, ``Sequence``,     a Python container (iterated in Python)
``Mapping`` ...
no annotation, a Python number as default        that number's kind, weakly typed
anything else                                    an array of unknown dtype and shape
==============================================  ==========================================

``--signature "f(x: float, xs: Float[Array, 'n'])"`` declares the same for ``f`` without
editing the file; it overrides the annotations of the parameters it names. The output is
written for these types and checks them at entry (``argument_checks``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autolax import errors
from autolax.sourcegen.standalone.values import STATIC, TRACED, Val, constant
from autolax.transpile import syntax

_PYTHON_NUMBERS = {"float": "float", "int": "int", "bool": "bool", "complex": "complex"}
_CONTAINERS = {"list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence", "Mapping", "Iterable",
               "MutableSequence", "MutableMapping", "Collection"}
# jaxtyping's dtype markers, by prefix (``Float32`` is a ``Float``, ``UInt8`` an ``Int``).
_JAXTYPING = (("Float", "float"), ("BFloat", "float"), ("Inexact", "float"), ("Complex", "complex"),
              ("UInt", "int"), ("Int", "int"), ("Integer", "int"), ("Bool", "bool"), ("Shaped", None),
              ("Num", None), ("Real", None), ("Key", None))
_ARRAYS = {"Array", "ndarray", "ArrayLike"}


def parse_signature(text: str):
    """``("f", {"x": <annotation>, ...})`` from ``--signature "f(x: float, ...)"`` (``f`` may
    be ``Class.method``)."""
    name, paren, rest = text.partition("(")
    name = name.strip()
    try:
        if not paren or not all(part.isidentifier() for part in name.split(".")):
            raise SyntaxError("expected NAME(PARAMETERS)")
        fn = syntax.parse(f"def _({rest}: pass\n").body[0]
    except SyntaxError as exc:
        raise errors.conversion_error("standalone-signature", text=text, why=exc.msg) from None
    args = fn.args
    params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return name, {a.id: a.annotation for a in params if a.annotation is not None}


def param_vals(fn, static: set, is_method: bool, declared: dict) -> dict:
    """The Val of each parameter of ``fn`` (``declared``: annotations from ``--signature``)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = _defaults(args)
    out = {}
    for i, a in enumerate(positional + args.kwonlyargs):
        if a.id in static or (is_method and i == 0 and a.id in ("self", "cls")):
            out[a.id] = STATIC
            continue
        annotation = declared.get(a.id, a.annotation)
        default = defaults.get(a.id)
        val = _annotated(annotation) if annotation is not None else None
        if val is None and isinstance(default, syntax.Constant) and constant(default.value).kind in ("int", "float",
                                                                                                     "complex"):
            val = Val(traced=True, kind=constant(default.value).kind, weak=True, ndim=0)  # jit does not trace defaults
        out[a.id] = replace(TRACED, like=a.id) if val in (None, TRACED) else val
    for a, ctype in ((args.vararg, "tuple"), (args.kwarg, "dict")):
        if a is not None:
            out[a.id] = STATIC if a.id in static else Val(traced=True, container=True, ctype=ctype)
    return out


# What the output checks a declared argument against (``helpers.CHECK_ARGUMENT``): the
# ``jax.numpy`` dtype class of a number or array, or the Python types of a container.
_DTYPES = {"float": "floating", "int": "integer", "bool": "bool_", "complex": "complexfloating"}
_CONTAINER_TYPES = {"list": ("list",), "List": ("list",), "MutableSequence": ("list",), "tuple": ("tuple",),
                    "Tuple": ("tuple",), "Sequence": ("list", "tuple"), "dict": ("dict",), "Dict": ("dict",),
                    "Mapping": ("dict",), "MutableMapping": ("dict",)}


@dataclass(frozen=True)
class ArgumentCheck:
    """What the output checks an argument against at entry: it was written for this type.
    ``declared``: the annotation as written (None: nothing declared, taken for an array);
    ``types``: the Python containers it may be, else an array or number of ``dtype`` (a
    ``jax.numpy`` dtype class, None: any) with ``ndim`` dimensions (None: any)."""

    name: str
    declared: str | None
    dtype: str | None = None
    ndim: int | None = None
    types: tuple | None = None


def argument_checks(fn, static: set, is_method: bool, declared: dict) -> list:
    """The ``ArgumentCheck`` of each parameter of ``fn`` whose type is declared (an annotation,
    or ``declared``: from ``--signature``) as one that ``param_vals`` reads and the output can
    check (not the static ones, nor one whose default is None: ``mask: jax.Array = None``)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = _defaults(args)
    out = []
    for i, a in enumerate(positional + args.kwonlyargs):
        if a.id in static or (is_method and i == 0 and a.id in ("self", "cls")):
            continue
        default = defaults.get(a.id)
        if isinstance(default, syntax.Constant) and default.value is None:
            continue
        annotation = declared.get(a.id, a.annotation)
        check = _declared_check(a.id, annotation) if annotation is not None else None
        if check is not None:
            out.append(check)
    return out


def _defaults(args) -> dict:
    """Parameter name -> its default's node."""
    positional = args.posonlyargs + args.args
    out = dict(zip([a.id for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    out.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return out


def _declared_check(name, annotation) -> ArgumentCheck | None:
    written = annotation.value if isinstance(annotation, syntax.Constant) and isinstance(annotation.value, str) \
        else syntax.unparse(annotation)
    val = _annotated(annotation)
    if val is None:
        return None
    node = annotation
    if isinstance(node, syntax.Constant):
        node = syntax.parse_expr(node.value)
    head = node.value if isinstance(node, syntax.Subscript) else node
    head_name = head.attr if isinstance(head, syntax.Attribute) else getattr(head, "id", None)
    if val.container:
        types = _CONTAINER_TYPES.get(head_name)
        return None if types is None else ArgumentCheck(name, written, types=types)
    dtype = _DTYPES.get(val.kind)
    if head_name is not None and head_name.startswith("Inexact"):
        dtype = "inexact"
    return ArgumentCheck(name, written, dtype=dtype, ndim=val.ndim)


def _annotated(node) -> Val | None:
    """The Val an annotation declares (None: it declares nothing ``--standalone`` uses)."""
    if isinstance(node, syntax.Constant) and isinstance(node.value, str):  # "Float[Array, 'n']"
        try:
            node = syntax.parse_expr(node.value)
        except SyntaxError:
            return None
    head = node.value if isinstance(node, syntax.Subscript) else node
    name = head.attr if isinstance(head, syntax.Attribute) else getattr(head, "id", None)
    if name in _PYTHON_NUMBERS and head is node:
        kind = _PYTHON_NUMBERS[name]
        return Val(traced=True, kind=kind, weak=kind != "bool", ndim=0)
    if name in _CONTAINERS:
        return Val(traced=True, container=True)
    if name in _ARRAYS and head is node:
        return TRACED
    if isinstance(node, syntax.Subscript) and name is not None:
        for prefix, kind in _JAXTYPING:
            if name.startswith(prefix) and name[len(prefix):].isdigit() or name == prefix:
                return Val(traced=True, kind=kind, ndim=_dims(node.slice))
    return None


def _dims(index):
    """The number of dimensions of a jaxtyping shape string (``"n m"``: 2), None for ``...``
    or ``*batch``."""
    if isinstance(index, syntax.Tuple) and len(index.elts) == 2:
        shape = index.elts[1]
        if isinstance(shape, syntax.Constant) and isinstance(shape.value, str):
            dims = shape.value.split()
            if not any("..." in d or d.startswith("*") for d in dims):
                return len(dims)
    return None
