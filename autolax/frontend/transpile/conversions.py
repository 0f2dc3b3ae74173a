"""The front end's own ``ast`` <-> gast conversions, behind ``syntax`` (its only importer).

gast's ``ast_to_gast`` / ``gast_to_ast`` rewritten without its generic visitor, which is most
of the cost of converting a function: one converter per node class (``_FROM_AST`` /
``_TO_AST``), made on first use from the class's fields, reading and writing the nodes'
``__dict__``. The result is the same tree, node for node and attribute for attribute
(``tests/test_conversion_output.py`` pins the emitted code and its compiled form, and checks
that these give exactly what gast's give). ``FAST`` is False on a Python or gast whose
conversions differ from the ones rewritten here: ``syntax`` then uses gast's own.
"""

from __future__ import annotations

import ast
import operator
import sys

import gast
from gast import Assign, AsyncFunctionDef, ClassDef, ExceptHandler, FunctionDef, Name, Param, Store, arguments
from gast.ast3 import Ast3ToGAst, GAstToAst3

_MISSING = object()
# Fields that hold a string, a number or a flag in every node class having them: never a
# child node (``ExceptHandler.name`` and ``alias.name`` differ in gast, so ``name`` is not here).
SCALAR_FIELDS = frozenset(
    {"id", "attr", "arg", "type_comment", "kind", "level", "module", "asname", "is_async", "conversion", "simple"}
)


def from_ast(node: ast.AST):
    """A stdlib ``ast`` tree as gast (``gast.ast_to_gast``'s result)."""
    return _from_ast(node)


def to_ast(node, fix_locations: bool = False) -> ast.AST:
    """A gast tree as a stdlib ``ast`` tree (``gast.gast_to_ast``'s result); ``fix_locations``:
    also as ``ast.fix_missing_locations`` leaves it."""
    return _to_ast(node, _TOP if fix_locations else None)


# gast's own conversions (``gast.ast_to_gast`` / ``gast_to_ast``), rewritten
# without its generic visitor, which is most of the cost of converting a function: one
# converter per node class (``_FROM_AST`` / ``_TO_AST``), made on first use from the class's
# fields, reading and writing the nodes' ``__dict__``. The result is the same tree, node for
# node and attribute for attribute (tests/test_conversion_output.py pins the emitted code and
# its compiled form). Other Pythons or gasts use gast's.
_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_TOP = (1, 0, 1, 0)  # where ast.fix_missing_locations starts


def _from_ast_value(value):
    if isinstance(value, ast.AST):
        return _from_ast(value)
    if isinstance(value, list):
        return _from_ast_list(value)
    return value


def _from_ast_list(values):
    """``[_from_ast_value(v) for v in values]``, a name converted without the dispatch."""
    out = []
    add = out.append
    for value in values:
        kind = value.__class__
        if kind is ast.Name:
            add(_from_ast_name(value))
        elif isinstance(value, ast.AST):
            add((_FROM_AST.get(kind) or _from_ast_converter(kind))(value))
        elif isinstance(value, list):
            add(_from_ast_list(value))
        else:
            add(value)
    return out


def _from_ast(node):
    kind = node.__class__
    return (_FROM_AST.get(kind) or _from_ast_converter(kind))(node)


# ``ast`` node class -> the function converting its nodes to gast (made on first use).
_FROM_AST: dict = {}


def _from_ast_converter(kind):
    """The converter of ``ast`` class ``kind``: ``_FROM_AST_SPECIAL``'s, or gast's generic
    conversion (every field converted, every location attribute copied) made for its fields."""
    special = _FROM_AST_SPECIAL.get(kind)
    target = _GAST_CLASS.get(kind, _MISSING)
    if target is _MISSING:
        target = _GAST_CLASS[kind] = getattr(gast, kind.__name__, None)
    if target is None:
        generic = _none  # gast: a node that is not part of the tree
    else:
        generic = _from_ast_generic(kind, target)
    if special is None:
        convert = generic
    elif kind is ast.ExceptHandler:  # gast's conversion of a handler without a name is the generic one

        def convert(node):
            return special(node) if node.name else generic(node)
    else:
        convert = special
    _FROM_AST[kind] = convert
    return convert


def _none(*_):
    return None


def _from_ast_generic(kind, target):
    """gast's generic conversion of ``ast`` class ``kind`` to gast class ``target``."""
    names = kind._fields + kind._attributes
    every = frozenset(names)
    # The fields that may hold nodes, in ``_fields`` order. (A node's value of one of the
    # others is a string, a number or a flag: copied as it is.)
    children = tuple(f for f in kind._fields if f not in SCALAR_FIELDS and not (kind is ast.Constant and f == "value"))

    def convert(node):
        new = target.__new__(target)
        fields = new.__dict__
        values = node.__dict__
        if values.keys() != every:  # not as ``ast.parse`` makes nodes: each value as getattr finds it
            for field in names:
                value = getattr(node, field, _MISSING)
                if value is not _MISSING:
                    fields[field] = value
        else:
            fields.update(values)  # ``ast.parse``'s nodes hold their fields, then their location
        for field in children:
            value = fields.get(field, _MISSING)
            value_kind = value.__class__
            if value_kind is list:
                fields[field] = _from_ast_list(value)
            elif value_kind is ast.Name:
                fields[field] = _from_ast_name(value)
            elif value_kind in _FIELDLESS:  # a context or an operator: a new one, as its converter gives
                value_kind = _FIELDLESS[value_kind]
                fields[field] = value_kind.__new__(value_kind)
            elif isinstance(value, ast.AST):
                fields[field] = (_FROM_AST.get(value_kind) or _from_ast_converter(value_kind))(value)
            elif isinstance(value, list):
                fields[field] = _from_ast_list(value)
        return new

    return convert


def _ast_copy_location(new, old):
    """``ast.copy_location``."""
    fields = new.__dict__
    for attr in _LOCATION:
        value = getattr(old, attr, None)
        if value is not None or (attr[0] == "e" and hasattr(old, attr)):
            fields[attr] = value
    return new


def _gast_copy_location(new, old):
    """``gast.copy_location``."""
    fields = new.__dict__
    for attr in _LOCATION:
        value = getattr(old, attr, _MISSING)
        if value is not _MISSING:
            fields[attr] = value
    return new


def gast_node(cls, **fields):
    """A gast node of class ``cls`` holding ``fields``, made without its constructor."""
    new = cls.__new__(cls)
    new.__dict__.update(fields)
    return new


def _from_ast_name(node):
    ctx = _FIELDLESS.get(node.ctx.__class__)
    ctx = ctx.__new__(ctx) if ctx is not None else _from_ast(node.ctx)
    new = Name.__new__(Name)
    fields = new.__dict__
    values = node.__dict__
    lineno, col = values.get("lineno"), values.get("col_offset")
    if lineno is not None and col is not None:  # as ``ast.parse`` makes them: the loop below, unrolled
        fields.update(
            id=node.id,
            ctx=ctx,
            annotation=None,
            type_comment=None,
            lineno=lineno,
            col_offset=col,
            end_lineno=values.get("end_lineno"),
            end_col_offset=values.get("end_col_offset"),
        )
        return new
    fields.update(id=node.id, ctx=ctx, annotation=None, type_comment=None)
    for attr in _LOCATION:  # _ast_copy_location, inlined
        value = getattr(node, attr, None)
        if value is not None or (attr[0] == "e" and hasattr(node, attr)):
            fields[attr] = value
    return new


def _from_ast_arg(node):
    new = gast_node(
        Name, id=node.arg, ctx=Param(), annotation=_from_ast_value(node.annotation), type_comment=node.type_comment
    )
    return _ast_copy_location(new, node)


def _from_ast_handler(node):
    new = gast_node(
        ExceptHandler,
        type=_from_ast_value(node.type),
        name=gast_node(Name, id=node.name, ctx=Store(), annotation=None, type_comment=None),
        body=_from_ast_value(node.body),
    )
    return _ast_copy_location(new, node)


def _from_ast_def(node):
    new = gast_node(
        _GAST_CLASS[node.__class__],
        name=node.name,
        args=_from_ast(node.args),
        body=_from_ast_value(node.body),
        decorator_list=_from_ast_value(node.decorator_list),
        returns=_from_ast_value(node.returns),
        type_comment=node.type_comment,
        type_params=[],
    )
    return _gast_copy_location(new, node)


def _from_ast_class(node):
    new = gast_node(
        ClassDef,
        name=node.name,
        bases=_from_ast_value(node.bases),
        keywords=_from_ast_value(node.keywords),
        body=_from_ast_value(node.body),
        decorator_list=_from_ast_value(node.decorator_list),
        type_params=[],
    )
    return _gast_copy_location(new, node)


def _from_ast_type_param(node):
    new = gast_node(
        getattr(gast, node.__class__.__name__),
        **{field: _from_ast_value(getattr(node, field)) for field in node._fields},
        default_value=None,
    )
    return _gast_copy_location(new, node)


def _locate(fields, attributes, where):
    """``ast.fix_missing_locations`` for one node whose location attributes are in
    ``fields``, below a parent at ``where``; returns where its children are."""
    lineno, col, end_lineno, end_col = where
    if "lineno" in attributes:
        if "lineno" in fields:
            lineno = fields["lineno"]
        else:
            fields["lineno"] = lineno
    if "end_lineno" in attributes:
        if fields.get("end_lineno") is None:
            fields["end_lineno"] = end_lineno
        else:
            end_lineno = fields["end_lineno"]
    if "col_offset" in attributes:
        if "col_offset" in fields:
            col = fields["col_offset"]
        else:
            fields["col_offset"] = col
    if "end_col_offset" in attributes:
        if fields.get("end_col_offset") is None:
            fields["end_col_offset"] = end_col
        else:
            end_col = fields["end_col_offset"]
    return lineno, col, end_lineno, end_col


def _to_ast_value(value, where):
    if isinstance(value, ast.AST):
        return _to_ast(value, where)
    if isinstance(value, list):
        return _to_ast_list(value, where)
    return value


def _to_ast_list(values, where):
    """``[_to_ast_value(v, where) for v in values]``, with contexts and operators shared."""
    out = []
    add = out.append
    for value in values:
        kind = value.__class__
        if kind is Name:
            add(_to_ast_name(value, where))
        elif isinstance(value, ast.AST):
            shared = _SHARED_BY_GAST.get(kind)
            if shared is not None and not value.__dict__:
                add(shared)
            else:
                add((_TO_AST.get(kind) or _to_ast_converter(kind))(value, where))
        elif isinstance(value, list):
            add(_to_ast_list(value, where))
        else:
            add(value)
    return out


def _located(fields, old, where, copy):
    """Location attributes of a new ``ast`` node for gast node ``old``: ``copy`` as
    ``ast.copy_location`` (else all of ``old``'s, as gast's generic conversion), then fixed
    (``where`` not None). Returns where the node's children are."""
    location = _location(old)
    if location is not None:  # located already (nearly every node): copied and kept as they are
        fields["lineno"], fields["col_offset"], fields["end_lineno"], fields["end_col_offset"] = location
        return where if where is None else location
    for attr in _LOCATION:
        value = getattr(old, attr, _MISSING)
        if value is _MISSING:
            continue
        if copy and value is None and attr[0] != "e":
            continue
        fields[attr] = value
    return where if where is None else _locate(fields, _LOCATION, where)


_LOCATION_OF = operator.itemgetter(*_LOCATION)


def _location(node):
    """``node``'s own ``(lineno, col_offset, end_lineno, end_col_offset)``, or None unless
    it has all four and none is None."""
    try:
        location = _LOCATION_OF(node.__dict__)
    except KeyError:
        return None
    return None if None in location else location


def _ast_node(cls, fields):
    new = cls.__new__(cls)  # (a call without the required fields warns on Python 3.13)
    new.__dict__.update(fields)
    return new


def _to_ast(node, where):
    """gast -> ast; ``where``: the parent's location, or None to leave locations as they are."""
    kind = node.__class__
    return (_TO_AST.get(kind) or _to_ast_converter(kind))(node, where)


# gast node class -> the function converting its nodes to ``ast`` (made on first use).
_TO_AST: dict = {}


def _to_ast_converter(kind):
    """The converter of gast class ``kind``: ``_TO_AST_SPECIAL``'s, or gast's generic
    conversion (every field converted, every location attribute copied) made for its class."""
    target = _AST_CLASS.get(kind, _MISSING)
    if target is _MISSING:
        target = _AST_CLASS[kind] = getattr(ast, kind.__name__, None)
    if target is None:
        generic = _none  # gast: a node that is not part of the tree
    elif not target._fields and not target._attributes:
        generic = _to_ast_fieldless(kind, target)
    elif kind._attributes == target._attributes == _LOCATION and not any(
        hasattr(kind, f) for f in kind._fields + ("lineno", "col_offset")
    ):
        generic = _to_ast_located(kind, target)  # a statement, an expression (nearly every node)
    else:
        generic = _to_ast_generic(kind, target)
    special = _TO_AST_SPECIAL.get(kind)
    if special is None:
        convert = generic
    elif kind is ExceptHandler:  # gast's conversion of a handler without a name is the generic one

        def convert(node, where):
            return special(node, where) if node.name else generic(node, where)
    else:
        convert = special
    _TO_AST[kind] = convert
    return convert


def _to_ast_fieldless(kind, target):
    """A context or an operator: one shared instance per class, as ``ast.parse`` gives
    (``compile`` and ``unparse`` read it only)."""
    shared = _SHARED.get(target)
    if shared is None:
        shared = _SHARED[target] = target()
    _SHARED_BY_GAST[kind] = shared  # (its converters' callers use it without a call)

    def convert(node, where):
        if node.__dict__:  # annotated: the generic conversion's new node (it drops what is no field)
            return target.__new__(target)
        return shared

    return convert


def _to_ast_located(kind, target):
    """The generic conversion of a class located as its ``ast`` class is (a statement, an
    expression), read from a node's ``__dict__``: the class itself holds none of its fields
    and no line or column, so that is what ``getattr`` would find."""
    fields = kind._fields

    def convert(node, where):
        new = target.__new__(target)
        out = new.__dict__
        values = node.__dict__
        try:  # _location(node), inlined
            location = _LOCATION_OF(values)
        except KeyError:
            location = None
        if location is None or None in location:  # a location to complete
            location = None
            to_fix = {}
            inner = _located(to_fix, node, where, copy=False)
        else:  # located already (nearly every node): nothing to fix
            inner = where if where is None else location
        for field in fields:  # _to_ast_fields, inlined
            try:
                value = values[field]
            except KeyError:  # a field deleted (the generic conversion leaves it out)
                continue
            value_kind = value.__class__
            if value_kind is list:
                value = _to_ast_list(value, inner)
            elif value_kind is Name:
                value = _to_ast_name(value, inner)
            elif isinstance(value, ast.AST):
                shared = _SHARED_BY_GAST.get(value_kind)
                if shared is None or value.__dict__:
                    value = (_TO_AST.get(value_kind) or _to_ast_converter(value_kind))(value, inner)
                else:
                    value = shared
            elif isinstance(value, list):
                value = [_to_ast_value(v, inner) for v in value]
            out[field] = value
        if location is None:
            out.update(to_fix)
        else:
            out["lineno"], out["col_offset"], out["end_lineno"], out["end_col_offset"] = location
        return new

    return convert


def _to_ast_generic(kind, target):
    """The generic conversion of any other class."""
    attributes = target._attributes
    fields = kind._fields

    def convert(node, where):
        new = target.__new__(target)
        location = {}
        for attr in kind._attributes:
            value = getattr(node, attr, _MISSING)
            if value is not _MISSING:
                location[attr] = value
        inner = where if where is None or not attributes else _locate(location, attributes, where)
        values = {field: getattr(node, field) for field in fields if hasattr(node, field)}
        _to_ast_fields(new.__dict__, values, fields, inner)
        new.__dict__.update(location)
        return new

    return convert


def _to_ast_fields(out, values, fields, where):
    """Sets ``out[field]`` to gast ``values[field]`` converted, for each of ``fields`` in
    ``values``, the children of the node being at ``where``."""
    for field in fields:
        value = values.get(field, _MISSING)
        if value is _MISSING:
            continue
        kind = value.__class__
        if kind is list:
            value = _to_ast_list(value, where)
        elif kind is Name:
            value = _to_ast_name(value, where)
        elif isinstance(value, ast.AST):
            shared = _SHARED_BY_GAST.get(kind)
            if shared is None or value.__dict__:
                value = (_TO_AST.get(kind) or _to_ast_converter(kind))(value, where)
            else:
                value = shared
        elif isinstance(value, list):
            value = [_to_ast_value(v, where) for v in value]
        out[field] = value


def _to_ast_name(node, where):
    new = _AST_NAME.__new__(_AST_NAME)
    fields = new.__dict__
    values = node.__dict__
    ctx = values["ctx"]
    shared = _SHARED_BY_GAST.get(ctx.__class__)
    if shared is None or ctx.__dict__:
        shared = _to_ast(ctx, where)
    try:  # _location(node), inlined
        location = _LOCATION_OF(values)
    except KeyError:
        location = None
    if location is not None and None not in location:  # located already (nearly every name): the rest, unrolled
        fields["id"], fields["ctx"] = values["id"], shared
        fields["lineno"], fields["col_offset"], fields["end_lineno"], fields["end_col_offset"] = location
        return new
    fields["id"] = node.id
    fields["ctx"] = shared
    for attr in _LOCATION:  # _located(fields, node, where, copy=True), inlined
        value = getattr(node, attr, _MISSING)
        if value is not _MISSING and (value is not None or attr[0] == "e"):
            fields[attr] = value
    if where is not None:  # _locate(fields, _LOCATION, where), inlined
        if "lineno" not in fields:
            fields["lineno"] = where[0]
        if fields.get("end_lineno") is None:
            fields["end_lineno"] = where[2]
        if "col_offset" not in fields:
            fields["col_offset"] = where[1]
        if fields.get("end_col_offset") is None:
            fields["end_col_offset"] = where[3]
    return new


def _to_ast_arg(node, where):
    if node is None:
        return None
    location = {}
    inner = _located(location, node, where, copy=True)
    annotation, type_comment = node.annotation, node.type_comment
    new = _AST_ARG.__new__(_AST_ARG)
    new.__dict__.update(
        arg=node.id,
        annotation=annotation if annotation is None else _to_ast_value(annotation, inner),
        type_comment=type_comment if type_comment is None else _to_ast_value(type_comment, inner),
        **location,
    )
    return new


def _to_ast_arguments(node, where):
    return _ast_node(
        ast.arguments,
        {
            "posonlyargs": [_to_ast_arg(a, where) for a in node.posonlyargs],
            "args": [_to_ast_arg(a, where) for a in node.args],
            "vararg": _to_ast_arg(node.vararg, where),
            "kwonlyargs": [_to_ast_arg(a, where) for a in node.kwonlyargs],
            "kw_defaults": _to_ast_value(node.kw_defaults, where),
            "kwarg": _to_ast_arg(node.kwarg, where),
            "defaults": _to_ast_value(node.defaults, where),
        },
    )


def _to_ast_copied(target, fields):
    """A converter building ``target`` from gast ``fields`` and ``ast.copy_location``."""

    def convert(node, where):
        location = {}
        inner = _located(location, node, where, copy=True)
        new = target.__new__(target)
        values = new.__dict__
        for field in fields:
            value = getattr(node, field)
            if isinstance(value, ast.AST):
                value = _to_ast(value, inner)
            elif isinstance(value, list):
                value = _to_ast_list(value, inner)
            values[field] = value
        values.update(location)
        return new

    return convert


def _to_ast_handler(node, where):
    location = {}
    inner = _located(location, node, where, copy=True)
    return _ast_node(
        ast.ExceptHandler,
        {
            "type": _to_ast_value(node.type, inner),
            "name": node.name.id,
            "body": _to_ast_value(node.body, inner),
            **location,
        },
    )


_FROM_AST_SPECIAL = {
    ast.Name: _from_ast_name,
    ast.arg: _from_ast_arg,
    ast.ExceptHandler: _from_ast_handler,
}
_DEF_FIELDS = ("name", "args", "body", "decorator_list", "returns", "type_comment")
_TO_AST_SPECIAL = {
    Name: _to_ast_name,
    arguments: _to_ast_arguments,
    ExceptHandler: _to_ast_handler,
    Assign: _to_ast_copied(ast.Assign, ("targets", "value")),
}
if sys.version_info < (3, 12):  # ast has no type parameters: gast adds empty ones, and drops them
    _FROM_AST_SPECIAL.update(
        {ast.FunctionDef: _from_ast_def, ast.AsyncFunctionDef: _from_ast_def, ast.ClassDef: _from_ast_class}
    )
    _TO_AST_SPECIAL.update(
        {
            ClassDef: _to_ast_copied(ast.ClassDef, ("name", "bases", "keywords", "body", "decorator_list")),
            FunctionDef: _to_ast_copied(ast.FunctionDef, _DEF_FIELDS),
            AsyncFunctionDef: _to_ast_copied(ast.AsyncFunctionDef, _DEF_FIELDS),
        }
    )
elif sys.version_info < (3, 13):  # type parameters without defaults (PEP 696 is 3.13): gast adds None
    for _kind, _fields in ((ast.TypeVar, ("name", "bound")), (ast.TypeVarTuple, ("name",)), (ast.ParamSpec, ("name",))):
        _FROM_AST_SPECIAL[_kind] = _from_ast_type_param
        _TO_AST_SPECIAL[getattr(gast, _kind.__name__)] = _to_ast_copied(_kind, _fields)
_GAST_CLASS: dict = {ast.FunctionDef: FunctionDef, ast.AsyncFunctionDef: AsyncFunctionDef}
# ``ast`` context and operator classes (no fields, no location) -> their gast class.
_FIELDLESS = {
    kind: getattr(gast, kind.__name__)
    for kind in (
        ast.Load,
        ast.Store,
        ast.Del,
        ast.And,
        ast.Or,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.MatMult,
        ast.Div,
        ast.Mod,
        ast.Pow,
        ast.LShift,
        ast.RShift,
        ast.BitOr,
        ast.BitXor,
        ast.BitAnd,
        ast.FloorDiv,
        ast.Invert,
        ast.Not,
        ast.UAdd,
        ast.USub,
        ast.Eq,
        ast.NotEq,
        ast.Lt,
        ast.LtE,
        ast.Gt,
        ast.GtE,
        ast.Is,
        ast.IsNot,
        ast.In,
        ast.NotIn,
    )
}
# gast context and operator classes: no fields, no location.
CONTEXTS_AND_OPERATORS = frozenset(_FIELDLESS.values()) | {Param}
_AST_CLASS: dict = {}
_SHARED: dict = {}
# gast context / operator class -> the shared ``ast`` instance ``_to_ast`` gives for it
# (filled as they are met), so a field holding one is converted without a call.
_SHARED_BY_GAST: dict = {}
_AST_NAME = ast.Name
_AST_ARG = ast.arg


# The visitors of gast 0.6 / 0.7 that differ from ``ast.NodeTransformer``'s, per Python: the
# conversions above rewrite exactly these (ast -> gast, gast -> ast).
_GAST_VISITORS = {
    (3, 11): (
        {
            "visit_AsyncFunctionDef",
            "visit_ClassDef",
            "visit_ExceptHandler",
            "visit_FunctionDef",
            "visit_Name",
            "visit_arg",
        },
        {
            "visit_Assign",
            "visit_AsyncFunctionDef",
            "visit_ClassDef",
            "visit_ExceptHandler",
            "visit_FunctionDef",
            "visit_Name",
            "visit_arguments",
        },
    ),
    (3, 12): (
        {"visit_ExceptHandler", "visit_Name", "visit_ParamSpec", "visit_TypeVar", "visit_TypeVarTuple", "visit_arg"},
        {
            "visit_Assign",
            "visit_ExceptHandler",
            "visit_Name",
            "visit_ParamSpec",
            "visit_TypeVar",
            "visit_TypeVarTuple",
            "visit_arguments",
        },
    ),
    (3, 13): (
        {"visit_ExceptHandler", "visit_Name", "visit_arg"},
        {"visit_Assign", "visit_ExceptHandler", "visit_Name", "visit_arguments"},
    ),
}


def _gast_is_as_expected() -> bool:
    """The rewritten conversions are gast 0.6 / 0.7's on Python 3.11 - 3.13; on another
    Python or gast, gast's own conversions run."""

    def visitors(cls):
        return {
            m
            for m in dir(cls)
            if m.startswith("visit_") and getattr(cls, m) is not getattr(ast.NodeTransformer, m, None)
        }

    expected = _GAST_VISITORS.get(sys.version_info[:2])
    if expected is None or (visitors(Ast3ToGAst), visitors(GAstToAst3)) != expected:
        return False
    if sys.version_info < (3, 12):
        fields_match = FunctionDef._fields == _DEF_FIELDS + ("type_params",) and ClassDef._fields[-1] == "type_params"
    else:
        fields_match = FunctionDef._fields == ast.FunctionDef._fields and ClassDef._fields == ast.ClassDef._fields
    return fields_match and Name._fields == ("id", "ctx", "annotation", "type_comment")


FAST = _gast_is_as_expected()
