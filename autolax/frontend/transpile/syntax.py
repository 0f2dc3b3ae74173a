"""The AST front end: the only module that imports ``gast`` (with ``conversions``, its own
fast ``ast`` <-> gast conversions, which only this module imports).

Everything else in autolax reaches the syntax tree through this module: node classes
(``syntax.If``, ``syntax.Name`` ...), keyword-only node builders that hide gast's field
lists, parsing, unparsing and the conversion to a stdlib ``ast`` tree for ``compile``.
A change of gast (or of Python's grammar) should only ever touch this file.
"""

from __future__ import annotations

import ast

import gast
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
    FormattedValue,
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
    JoinedStr,
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

from autolax.frontend.transpile import conversions
from autolax.frontend.transpile.conversions import CONTEXTS_AND_OPERATORS, SCALAR_FIELDS, gast_node

stmt = gast.stmt
expr = gast.expr
NodeVisitor = gast.NodeVisitor
iter_fields = gast.iter_fields


_CHILD_FIELDS: dict = {}
CHILD_FIELDS = _CHILD_FIELDS  # node class -> child_fields(class), for the classes met so far


def _child_fields(kind) -> tuple:
    fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in SCALAR_FIELDS)
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
        own = cls.__mro__[: cls.__mro__.index(NodeTransformer)]  # the classes below this one
        cls._statements_only = (
            cls.visit is NodeTransformer.visit
            and cls.generic_visit is NodeTransformer.generic_visit
            and all(
                _is_statement_kind(attr[len("visit_") :]) for k in own for attr in vars(k) if attr.startswith("visit_")
            )
        )

    def _visitor(self, kind):
        cls = type(self)
        visitor = getattr(cls, "visit_" + kind.__name__, None)
        if visitor is ast.NodeVisitor.visit_Constant and not any(hasattr(cls, m) for m in _LEGACY_VISITORS):
            visitor = None  # its dispatch to the legacy methods would end in generic_visit
        cls._visitors[kind] = visitor
        return visitor

    def visit_block(self, stmts) -> list:
        """The statements ``stmts`` become once each is visited (a visit may give a list)."""
        out = []
        for stmt in stmts:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def visit(self, node):
        kind = node.__class__
        visitor = self._visitors.get(kind, _MISSING)
        if visitor is _MISSING:
            visitor = self._visitor(kind)
        return self.generic_visit(node) if visitor is None else visitor(self, node)

    def generic_visit(self, node):
        kind = node.__class__
        fields = (_BLOCKS if self._statements_only else _CHILD_FIELDS).get(kind)
        if fields is None:
            fields = self._fields_of(kind)
        visitors = self._visitors
        for field in fields:  # not those that never hold a node: nothing to visit there
            old_value = getattr(node, field, _MISSING)
            if old_value.__class__ is list:
                if old_value:
                    old_value[:] = self._visit_list(old_value)
            elif isinstance(old_value, AST):
                kind = old_value.__class__
                if not kind._fields and visitors.get(kind, _MISSING) is None:
                    continue  # a context or operator: generic_visit would change nothing
                if (
                    kind in _LEAVES
                    and visitors.get(kind, _MISSING) is None
                    and (
                        kind is Constant
                        or (
                            old_value.annotation is None
                            and not old_value.ctx.__dict__
                            and visitors.get(old_value.ctx.__class__, _MISSING) is None
                        )
                    )
                ):
                    continue  # a leaf no method handles: visiting it changes nothing
                visitor = visitors.get(kind, _MISSING)
                new_node = (
                    self.generic_visit(old_value) if visitor is None and self._plain_visit else self.visit(old_value)
                )
                if new_node is None:
                    delattr(node, field)
                else:
                    setattr(node, field, new_node)
        return node

    def _fields_of(self, kind) -> tuple:
        """The fields of ``kind`` that may hold a node this transformer changes (found once
        per class: ``generic_visit`` reads the tables these fill)."""
        if self._statements_only:
            fields = _BLOCKS[kind] = tuple(f for f in child_fields(kind) if f in BLOCK_FIELDS)
            return fields
        return _child_fields(kind)

    def _visit_list(self, values) -> list:
        """A list field's new items: each node visited (a result of None drops it, a list is
        spliced in); leaves no method handles, and non-nodes, are kept as they are."""
        visitors = self._visitors
        plain = self._plain_visit
        new_values = []
        for value in values:
            if isinstance(value, AST):
                kind = value.__class__
                if (
                    kind in _LEAVES
                    and visitors.get(kind, _MISSING) is None
                    and (
                        kind is Constant
                        or (
                            value.annotation is None
                            and not value.ctx.__dict__
                            and visitors.get(value.ctx.__class__, _MISSING) is None
                        )
                    )
                ):
                    new_values.append(value)  # a leaf no method handles: the same
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
        return new_values


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


def from_ast(node: ast.AST) -> AST:
    """Converts a stdlib ``ast`` tree to gast."""
    return conversions.from_ast(node) if conversions.FAST else gast.ast_to_gast(node)


def to_ast(node: AST, *, fix_locations: bool = False) -> ast.AST:
    """Converts a gast tree to a stdlib ``ast`` tree (for ``compile`` and ``unparse``).

    ``fix_locations``: also give every node without a location its parent's, as
    ``ast.fix_missing_locations`` does (in the same walk)."""
    if not conversions.FAST:
        tree = gast.gast_to_ast(node)
        return ast.fix_missing_locations(tree) if fix_locations else tree
    return conversions.to_ast(node, fix_locations)


def unparse(node: AST) -> str:
    return ast.unparse(to_ast(node, fix_locations=True))


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
    return gast_node(Tuple, elts=[name(i, ctx) for i in ids], ctx=kind.__new__(kind))


def constant(value) -> Constant:
    new = Constant.__new__(Constant)
    new.__dict__.update(value=value, kind=None)
    return new


def attribute(value: AST, attr: str, ctx: str = "load") -> Attribute:
    kind = Store if ctx == "store" else Load
    return gast_node(Attribute, value=value, attr=attr, ctx=kind.__new__(kind))


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
    kws = [gast_node(keyword, arg=k, value=v) for k, v in (keywords or {}).items()]
    return gast_node(Call, func=func, args=list(args), keywords=kws)


def assign(targets: AST, value: AST) -> Assign:
    return gast_node(Assign, targets=[targets], value=value, type_comment=None)


def expr_stmt(value: AST) -> Expr:
    return gast_node(Expr, value=value)


def ret(value: AST | None) -> Return:
    return gast_node(Return, value=value)


def if_stmt(test: AST, body, orelse=()) -> If:
    return gast_node(If, test=test, body=list(body), orelse=list(orelse))


def unary_not(operand: AST) -> UnaryOp:
    return gast_node(UnaryOp, op=Not.__new__(Not), operand=operand)


def bool_and(values) -> BoolOp:
    return gast_node(BoolOp, op=And.__new__(And), values=list(values))


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


def as_load(node: AST) -> AST:
    """A copy of ``node`` read rather than assigned (an assignment's target as a value)."""
    node = deepcopy(node)
    for n in walk(node):
        if hasattr(n, "ctx") and isinstance(n.ctx, (Store, Del)):
            n.ctx = Load()
    return node


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
            elif isinstance(value, AST) and value.__class__ not in CONTEXTS_AND_OPERATORS:  # (no location)
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
        elif isinstance(value, dict):  # annotations (autolax.frontend.transpile.anno)
            fields[key] = {k: deepcopy(v) for k, v in value.items()}
    return new
