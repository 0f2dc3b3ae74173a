"""The AST front end: the only module that imports ``gast``.

Everything else in autolax reaches the syntax tree through this module: node classes
(``syntax.If``, ``syntax.Name`` ...), keyword-only node builders that hide gast's field
lists, parsing, unparsing and the conversion to a stdlib ``ast`` tree for ``compile``.
A change of gast (or of Python's grammar) should only ever touch this file.
"""

from __future__ import annotations

import ast
import copy
import operator
import sys

import gast
from gast.ast3 import Ast3ToGAst, GAstToAst3
from gast import (  # noqa: F401  (re-exported: node classes and operators used by the passes)
    AST,
    Add,
    And,
    AnnAssign,
    Assert,
    Assign,
    AsyncFor,
    AsyncFunctionDef,
    AsyncWith,
    Attribute,
    AugAssign,
    Await,
    BinOp,
    BitAnd,
    BitOr,
    BitXor,
    BoolOp,
    Break,
    Call,
    ClassDef,
    Compare,
    FormattedValue,
    JoinedStr,
    Constant,
    Continue,
    Del,
    Delete,
    Dict,
    DictComp,
    Div,
    Eq,
    ExceptHandler,
    Expr,
    FloorDiv,
    For,
    FunctionDef,
    GeneratorExp,
    Global,
    Gt,
    GtE,
    If,
    IfExp,
    Import,
    ImportFrom,
    In,
    Invert,
    Is,
    IsNot,
    Lambda,
    List,
    ListComp,
    Load,
    LShift,
    Lt,
    LtE,
    Match,
    MatchAs,
    MatchClass,
    MatchMapping,
    MatchOr,
    MatchSequence,
    MatchSingleton,
    MatchStar,
    MatchValue,
    MatMult,
    Mod,
    Module,
    Mult,
    Name,
    NamedExpr,
    Nonlocal,
    Not,
    NotEq,
    NotIn,
    Or,
    Param,
    Pass,
    Pow,
    Raise,
    Return,
    RShift,
    Set,
    SetComp,
    Slice,
    Starred,
    Store,
    Sub,
    Subscript,
    Try,
    Tuple,
    UAdd,
    UnaryOp,
    USub,
    While,
    With,
    Yield,
    YieldFrom,
    arguments,
    comprehension,
    keyword,
    match_case,
    withitem,
)

stmt = gast.stmt
expr = gast.expr
NodeVisitor = gast.NodeVisitor
iter_fields = gast.iter_fields


# Fields that hold a string, a number or a flag in every node class having them: never a
# child node (``ExceptHandler.name`` and ``alias.name`` differ in gast, so ``name`` is not here).
_SCALAR_FIELDS = frozenset({"id", "attr", "arg", "type_comment", "kind", "level", "module", "asname", "is_async",
                            "conversion", "simple"})
_CHILD_FIELDS: dict = {}
CHILD_FIELDS = _CHILD_FIELDS  # node class -> child_fields(class), for the classes met so far


def _child_fields(kind) -> tuple:
    fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)
    return fields


def child_fields(kind) -> tuple:
    """The fields of node class ``kind`` that may hold nodes (or lists of nodes): not those
    holding a name, a number or a flag in every node of the class."""
    fields = _CHILD_FIELDS.get(kind)
    return _child_fields(kind) if fields is None else fields


def iter_child_nodes(node: AST) -> list:
    """The direct child nodes of ``node``, in ``ast.iter_child_nodes``'s order (a list: most
    callers extend a stack with it; no generator is several times faster)."""
    kind = node.__class__
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _child_fields(kind)
    out = []
    for field in fields:
        value = getattr(node, field, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, AST):
                    out.append(item)
        elif isinstance(value, AST):
            out.append(value)
    return out


def walk(node: AST):
    """Every node of the tree, breadth first, as ``ast.walk`` (which it replaces for speed:
    the nodes in one list, read as it grows; ``iter_child_nodes`` inlined)."""
    todo = [node]
    add = todo.append
    for node in todo:
        kind = node.__class__
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for field in fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        add(item)
            elif isinstance(value, AST):
                add(value)
        yield node


def nodes(node: AST) -> list:
    """``list(walk(node))``, without a generator (for callers that look at every node)."""
    todo = [node]
    add = todo.append
    for node in todo:
        kind = node.__class__
        if kind is Name:  # the most common node, without the loop over its fields
            ctx = node.ctx
            if isinstance(ctx, AST):
                add(ctx)
            annotation = getattr(node, "annotation", None)
            if isinstance(annotation, AST):
                add(annotation)
            continue
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for field in fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        add(item)
            elif isinstance(value, AST):
                add(value)
    return todo


def child_statements(node: AST) -> list:
    """The statements directly in ``node``'s blocks (a handler's or a ``case``'s included):
    where a search for a statement goes down (expressions hold none)."""
    out = []
    for field in BLOCK_FIELDS:
        block = getattr(node, field, None)
        if block.__class__ is list:
            for child in block:
                if isinstance(child, (ExceptHandler, match_case)):
                    out.extend(child.body)
                else:
                    out.append(child)
    return out


def walk_statements(node: AST):
    """``node`` and the statements nested in it (nested functions' and classes' included),
    depth first: the statements ``walk`` finds, without searching expressions."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        for field in BLOCK_FIELDS:
            block = getattr(node, field, None)
            if block.__class__ is list:
                for child in block:  # a handler or a `case` holds statements
                    stack.extend(child.body if isinstance(child, (ExceptHandler, match_case)) else (child,))


_LEGACY_VISITORS = ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant", "visit_Ellipsis")


class NodeTransformer(gast.NodeTransformer):
    """``ast.NodeTransformer`` (same visits, same results), faster: the ``visit_*`` method
    for a node class is looked up once per transformer class, and nodes without fields that
    no method handles (contexts, operators) are not visited: that would leave them as they
    are."""

    _visitors: dict = {}
    # Whether every ``visit_*`` method of the class is for a statement: then no expression
    # holds a node it rewrites, and ``generic_visit`` only goes down statement blocks
    # (visiting an expression without a method for any of its nodes leaves it as it is).
    _statements_only = False
    _plain_visit = True  # ``visit`` is this class's (a child no method handles: generic_visit)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._visitors = {}
        cls._plain_visit = cls.visit is NodeTransformer.visit
        own = cls.__mro__[:cls.__mro__.index(NodeTransformer)]  # the classes below this one
        cls._statements_only = (
            cls.visit is NodeTransformer.visit
            and cls.generic_visit is NodeTransformer.generic_visit
            and all(_is_statement_kind(attr[len("visit_"):]) for k in own for attr in vars(k) if attr.startswith("visit_"))
        )

    def _visitor(self, kind):
        cls = type(self)
        visitor = getattr(cls, "visit_" + kind.__name__, None)
        if visitor is ast.NodeVisitor.visit_Constant and not any(hasattr(cls, m) for m in _LEGACY_VISITORS):
            visitor = None  # its dispatch to the legacy methods would end in generic_visit
        cls._visitors[kind] = visitor
        return visitor

    def visit(self, node):
        kind = node.__class__
        visitor = self._visitors.get(kind, _MISSING)
        if visitor is _MISSING:
            visitor = self._visitor(kind)
        return self.generic_visit(node) if visitor is None else visitor(self, node)

    def generic_visit(self, node):
        visitors = self._visitors
        plain = self._plain_visit
        kind = node.__class__
        if self._statements_only:
            fields = _BLOCKS.get(kind)
            if fields is None:
                fields = _BLOCKS[kind] = tuple(f for f in child_fields(kind) if f in BLOCK_FIELDS)
        else:
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _child_fields(kind)
        for field in fields:  # not those that never hold a node: nothing to visit there
            old_value = getattr(node, field, _MISSING)
            if old_value.__class__ is list:
                new_values = []
                for value in old_value:
                    if isinstance(value, AST):
                        kind = value.__class__
                        if kind in _LEAVES and visitors.get(kind, _MISSING) is None and (
                                kind is Constant or (value.annotation is None and not value.ctx.__dict__
                                                     and visitors.get(value.ctx.__class__, _MISSING) is None)):
                            new_values.append(value)  # a leaf no method handles: visiting it changes nothing
                            continue
                        visitor = visitors.get(kind, _MISSING)
                        if visitor is None and plain:  # self.visit(value), its dispatch inlined
                            value = self.generic_visit(value)
                        else:
                            value = self.visit(value)
                        if value is None:
                            continue
                        elif not isinstance(value, AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old_value[:] = new_values
            elif isinstance(old_value, AST):
                kind = old_value.__class__
                if not kind._fields and visitors.get(kind, _MISSING) is None:
                    continue  # a context or operator: generic_visit would change nothing
                if kind in _LEAVES and visitors.get(kind, _MISSING) is None and (
                        kind is Constant or (old_value.annotation is None and not old_value.ctx.__dict__
                                             and visitors.get(old_value.ctx.__class__, _MISSING) is None)):
                    continue  # the same
                visitor = visitors.get(kind, _MISSING)
                new_node = self.generic_visit(old_value) if visitor is None and plain else self.visit(old_value)
                if new_node is None:
                    delattr(node, field)
                else:
                    setattr(node, field, new_node)
        return node


# Nodes that hold no other node but a context (a ``Name`` without an annotation: gast keeps a
# parameter's annotation on its ``Name``): ``generic_visit`` does not visit one that no
# method handles (nor its context), which would leave it as it is.
_LEAVES = frozenset({Name, Constant})


def _is_statement_kind(name: str) -> bool:
    kind = getattr(gast, name, None)
    return isinstance(kind, type) and issubclass(kind, gast.stmt)


# Node class -> its fields that may hold a block of statements (``_fields`` order).
_BLOCKS: dict = {}

LOCATION_FIELDS = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_MISSING = object()

# Statement kinds that hold nested statement lists, and the fields holding them.
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def parse(source: str) -> gast.Module:
    """Parses Python source into a gast module (raises SyntaxError as Python would)."""
    return gast.parse(source)


def parse_expr(source: str) -> AST:
    return gast.parse(source, mode="eval").body


def from_ast(node: ast.AST) -> AST:
    """Converts a stdlib ``ast`` tree to gast."""
    return _from_ast(node) if _FAST else gast.ast_to_gast(node)


def to_ast(node: AST, *, fix_locations: bool = False) -> ast.AST:
    """Converts a gast tree to a stdlib ``ast`` tree (for ``compile`` and ``unparse``).

    ``fix_locations``: also give every node without a location its parent's, as
    ``ast.fix_missing_locations`` does (in the same walk)."""
    if not _FAST:
        tree = gast.gast_to_ast(node)
        return ast.fix_missing_locations(tree) if fix_locations else tree
    return _to_ast(node, _TOP if fix_locations else None)


def unparse(node: AST) -> str:
    return ast.unparse(to_ast(node, fix_locations=True))


# The conversions above are gast's own (``gast.ast_to_gast`` / ``gast_to_ast``), rewritten
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
    children = tuple(f for f in kind._fields if f not in _SCALAR_FIELDS and not (kind is ast.Constant and f == "value"))

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


def _gast_node(cls, **fields):
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
        fields.update(id=node.id, ctx=ctx, annotation=None, type_comment=None, lineno=lineno, col_offset=col,
                      end_lineno=values.get("end_lineno"), end_col_offset=values.get("end_col_offset"))
        return new
    fields.update(id=node.id, ctx=ctx, annotation=None, type_comment=None)
    for attr in _LOCATION:  # _ast_copy_location, inlined
        value = getattr(node, attr, None)
        if value is not None or (attr[0] == "e" and hasattr(node, attr)):
            fields[attr] = value
    return new


def _from_ast_arg(node):
    new = _gast_node(Name, id=node.arg, ctx=Param(), annotation=_from_ast_value(node.annotation),
                     type_comment=node.type_comment)
    return _ast_copy_location(new, node)


def _from_ast_handler(node):
    new = _gast_node(ExceptHandler, type=_from_ast_value(node.type),
                     name=_gast_node(Name, id=node.name, ctx=Store(), annotation=None, type_comment=None),
                     body=_from_ast_value(node.body))
    return _ast_copy_location(new, node)


def _from_ast_def(node):
    new = _gast_node(_GAST_CLASS[node.__class__], name=node.name, args=_from_ast(node.args),
                     body=_from_ast_value(node.body), decorator_list=_from_ast_value(node.decorator_list),
                     returns=_from_ast_value(node.returns), type_comment=node.type_comment, type_params=[])
    return _gast_copy_location(new, node)


def _from_ast_class(node):
    new = _gast_node(ClassDef, name=node.name, bases=_from_ast_value(node.bases),
                     keywords=_from_ast_value(node.keywords), body=_from_ast_value(node.body),
                     decorator_list=_from_ast_value(node.decorator_list), type_params=[])
    return _gast_copy_location(new, node)


def _from_ast_type_param(node):
    new = _gast_node(getattr(gast, node.__class__.__name__),
                     **{field: _from_ast_value(getattr(node, field)) for field in node._fields}, default_value=None)
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
            hasattr(kind, f) for f in kind._fields + ("lineno", "col_offset")):
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
    new.__dict__.update(arg=node.id,
                        annotation=annotation if annotation is None else _to_ast_value(annotation, inner),
                        type_comment=type_comment if type_comment is None else _to_ast_value(type_comment, inner),
                        **location)
    return new


def _to_ast_arguments(node, where):
    return _ast_node(ast.arguments, {
        "posonlyargs": [_to_ast_arg(a, where) for a in node.posonlyargs],
        "args": [_to_ast_arg(a, where) for a in node.args],
        "vararg": _to_ast_arg(node.vararg, where),
        "kwonlyargs": [_to_ast_arg(a, where) for a in node.kwonlyargs],
        "kw_defaults": _to_ast_value(node.kw_defaults, where),
        "kwarg": _to_ast_arg(node.kwarg, where),
        "defaults": _to_ast_value(node.defaults, where),
    })


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
    return _ast_node(ast.ExceptHandler, {"type": _to_ast_value(node.type, inner), "name": node.name.id,
                                         "body": _to_ast_value(node.body, inner), **location})


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
    _FROM_AST_SPECIAL.update({ast.FunctionDef: _from_ast_def, ast.AsyncFunctionDef: _from_ast_def,
                              ast.ClassDef: _from_ast_class})
    _TO_AST_SPECIAL.update({
        ClassDef: _to_ast_copied(ast.ClassDef, ("name", "bases", "keywords", "body", "decorator_list")),
        FunctionDef: _to_ast_copied(ast.FunctionDef, _DEF_FIELDS),
        AsyncFunctionDef: _to_ast_copied(ast.AsyncFunctionDef, _DEF_FIELDS),
    })
elif sys.version_info < (3, 13):  # type parameters without defaults (PEP 696 is 3.13): gast adds None
    for _kind, _fields in ((ast.TypeVar, ("name", "bound")), (ast.TypeVarTuple, ("name",)),
                           (ast.ParamSpec, ("name",))):
        _FROM_AST_SPECIAL[_kind] = _from_ast_type_param
        _TO_AST_SPECIAL[getattr(gast, _kind.__name__)] = _to_ast_copied(_kind, _fields)
_GAST_CLASS: dict = {ast.FunctionDef: FunctionDef, ast.AsyncFunctionDef: AsyncFunctionDef}
# ``ast`` context and operator classes (no fields, no location) -> their gast class.
_FIELDLESS = {kind: getattr(gast, kind.__name__) for kind in (
    ast.Load, ast.Store, ast.Del, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.MatMult, ast.Div, ast.Mod,
    ast.Pow, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv, ast.Invert, ast.Not,
    ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn)}
# gast context and operator classes: no fields, no location.
_CONTEXTS_AND_OPERATORS = frozenset(_FIELDLESS.values()) | {Param}
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
    (3, 11): ({"visit_AsyncFunctionDef", "visit_ClassDef", "visit_ExceptHandler", "visit_FunctionDef", "visit_Name",
               "visit_arg"},
              {"visit_Assign", "visit_AsyncFunctionDef", "visit_ClassDef", "visit_ExceptHandler", "visit_FunctionDef",
               "visit_Name", "visit_arguments"}),
    (3, 12): ({"visit_ExceptHandler", "visit_Name", "visit_ParamSpec", "visit_TypeVar", "visit_TypeVarTuple",
               "visit_arg"},
              {"visit_Assign", "visit_ExceptHandler", "visit_Name", "visit_ParamSpec", "visit_TypeVar",
               "visit_TypeVarTuple", "visit_arguments"}),
    (3, 13): ({"visit_ExceptHandler", "visit_Name", "visit_arg"},
              {"visit_Assign", "visit_ExceptHandler", "visit_Name", "visit_arguments"}),
}


def _gast_is_as_expected() -> bool:
    """The rewritten conversions are gast 0.6 / 0.7's on Python 3.11 - 3.13; on another
    Python or gast, gast's own conversions run."""
    def visitors(cls):
        return {m for m in dir(cls) if m.startswith("visit_") and getattr(cls, m) is not getattr(ast.NodeTransformer, m, None)}

    expected = _GAST_VISITORS.get(sys.version_info[:2])
    if expected is None or (visitors(Ast3ToGAst), visitors(GAstToAst3)) != expected:
        return False
    if sys.version_info < (3, 12):
        fields_match = FunctionDef._fields == _DEF_FIELDS + ("type_params",) and ClassDef._fields[-1] == "type_params"
    else:
        fields_match = FunctionDef._fields == ast.FunctionDef._fields and ClassDef._fields == ast.ClassDef._fields
    return fields_match and Name._fields == ("id", "ctx", "annotation", "type_comment")


_FAST = _gast_is_as_expected()


def dump(node: AST) -> str:
    return gast.dump(node)


# ----------------------------------------------------------------------------- builders
# The builders make nodes as gast's constructors do (``Name(id=..., ctx=...)``: a new node
# whose fields are the keywords, in their order), without a call of the constructor per node.
_CONTEXTS = {"load": Load, "store": Store, "param": Param, "del": Del}


def name(id: str, ctx: str = "load") -> Name:
    kind = _CONTEXTS[ctx]
    new = Name.__new__(Name)
    new.__dict__.update(id=id, ctx=kind.__new__(kind), annotation=None, type_comment=None)
    return new


def names_tuple(ids, ctx: str = "load") -> AST | None:
    """``a`` for one name, ``(a, b)`` for several, None for none."""
    ids = list(ids)
    if not ids:
        return None
    if len(ids) == 1:
        return name(ids[0], ctx)
    kind = Store if ctx == "store" else Load
    return _gast_node(Tuple, elts=[name(i, ctx) for i in ids], ctx=kind.__new__(kind))


def constant(value) -> Constant:
    new = Constant.__new__(Constant)
    new.__dict__.update(value=value, kind=None)
    return new


def attribute(value: AST, attr: str, ctx: str = "load") -> Attribute:
    kind = Store if ctx == "store" else Load
    return _gast_node(Attribute, value=value, attr=attr, ctx=kind.__new__(kind))


def dotted(path: str) -> AST:
    """``ops.cond`` -> Attribute(Name('ops'), 'cond')."""
    head, *rest = path.split(".")
    node: AST = name(head)
    for part in rest:
        node = attribute(node, part)
    return node


def call(func: AST | str, args=(), keywords=None) -> Call:
    if isinstance(func, str):
        func = dotted(func)
    kws = [_gast_node(keyword, arg=k, value=v) for k, v in (keywords or {}).items()]
    return _gast_node(Call, func=func, args=list(args), keywords=kws)


def assign(targets: AST, value: AST) -> Assign:
    return _gast_node(Assign, targets=[targets], value=value, type_comment=None)


def expr_stmt(value: AST) -> Expr:
    return _gast_node(Expr, value=value)


def ret(value: AST | None) -> Return:
    return _gast_node(Return, value=value)


def if_stmt(test: AST, body, orelse=()) -> If:
    return _gast_node(If, test=test, body=list(body), orelse=list(orelse))


def unary_not(operand: AST) -> UnaryOp:
    return _gast_node(UnaryOp, op=Not.__new__(Not), operand=operand)


def bool_and(values) -> BoolOp:
    return _gast_node(BoolOp, op=And.__new__(And), values=list(values))


def function_def(fn_name: str, params, body) -> FunctionDef:
    args = arguments(
        args=[name(p, "param") for p in params],
        posonlyargs=[],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )
    return FunctionDef(
        name=fn_name,
        args=args,
        body=list(body) or [Pass()],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )


def lambda_(body: AST, params=()) -> Lambda:
    args = arguments(
        args=[name(p, "param") for p in params],
        posonlyargs=[],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )
    return Lambda(args=args, body=body)


def global_stmt(kind: type, ids) -> AST:
    return kind(names=list(ids))


# ----------------------------------------------------------------------------- helpers
def is_function(node: AST) -> bool:
    return isinstance(node, (FunctionDef, AsyncFunctionDef, Lambda))


def param_names(args: arguments) -> list[str]:
    """All parameter names of a function, in signature order."""
    out = [a.id for a in args.posonlyargs] + [a.id for a in args.args]
    if args.vararg is not None:
        out.append(args.vararg.id)
    out += [a.id for a in args.kwonlyargs]
    if args.kwarg is not None:
        out.append(args.kwarg.id)
    return out


def target_names(target) -> set[str]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``); subscripts bind nothing."""
    if isinstance(target, Name):
        return {target.id}
    if isinstance(target, (Tuple, List)):
        out = set()
        for elt in target.elts:
            out |= target_names(elt)
        return out
    if isinstance(target, Starred):
        return target_names(target.value)
    return set()


def copy_location(new: AST, old: AST) -> AST:
    """Gives ``new`` and every descendant without a location the location of ``old``."""
    return locate(new, generated_location(old))


def generated_location(old: AST):
    """``(lineno, col_offset, end_lineno, end_col_offset)`` that ``copy_location`` gives
    code generated for ``old``; None if ``old`` has no location."""
    if getattr(old, "lineno", None) is None or getattr(old, "col_offset", None) is None:
        return None
    # Generated code covers one line (the statement's first): a span over the whole
    # statement would make Python report its last line for some instructions.
    lineno, col = old.lineno, old.col_offset
    single_line = getattr(old, "end_lineno", None) == lineno
    end_col = old.end_col_offset if single_line and old.end_col_offset is not None else col
    return lineno, col, lineno, end_col


def locate(new: AST, location) -> AST:
    """Gives ``new`` and every descendant without a location ``location`` (from
    ``generated_location``; None: leaves them as they are)."""
    if location is None:
        return new
    lineno, col, _, end_col = location
    # A located node's subtree is located already (every pass locates what it creates), so
    # the walk stops there: user statements placed into a template are not revisited.
    stack = [new]
    add = stack.append
    while stack:
        node = stack.pop()
        values = node.__dict__  # (what getattr finds: no node class holds a line)
        if values.get("lineno") is not None:
            continue
        kind = node.__class__
        if "lineno" in kind._attributes:
            values["lineno"], values["col_offset"] = lineno, col
            values["end_lineno"], values["end_col_offset"] = lineno, end_col
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for field in fields:  # iter_child_nodes, inlined
            value = values.get(field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        add(item)
            elif isinstance(value, AST) and value.__class__ not in _CONTEXTS_AND_OPERATORS:  # (no location)
                add(value)
    return new


def copy_locations(nodes, old: AST):
    for n in nodes:
        copy_location(n, old)
    return nodes


def shift_locations(tree: AST, line_offset: int, col_offset: int) -> None:
    """Moves a tree parsed from dedented source back to its place in the original file."""
    for node in walk(tree):
        if getattr(node, "lineno", None) is not None:
            node.lineno += line_offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += line_offset
            if col_offset:
                node.col_offset += col_offset
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += col_offset


def deepcopy(node):
    """A copy of a tree (or list of trees) sharing no nodes with it; several times faster
    than ``copy.deepcopy`` on syntax trees. Annotations are copied too."""
    if isinstance(node, list):
        return [deepcopy(n) for n in node]
    if isinstance(node, AST):
        return _deepcopy_node(node)
    return node


# Classes of the values most attributes hold (a location, a name): nothing to copy.
_ATOMS = frozenset({int, str, bool, float, type(None)})


def _deepcopy_node(node):
    kind = node.__class__
    new = kind.__new__(kind)
    values = node.__dict__
    if not values:  # a context, an operator
        return new
    fields = new.__dict__
    fields.update(values)  # then the values holding nodes replaced by copies
    for key, value in values.items():
        value_kind = value.__class__
        if value_kind in _ATOMS:
            continue
        if isinstance(value, AST):
            fields[key] = _deepcopy_node(value)
        elif isinstance(value, list):
            fields[key] = [_deepcopy_node(v) if isinstance(v, AST) else deepcopy(v) for v in value]
        elif isinstance(value, dict):  # annotations (autolax.transpile.anno)
            fields[key] = {k: deepcopy(v) for k, v in value.items()}
    return new
