"""The AST front end: the only module that imports ``gast``.

Everything else in autolax reaches the syntax tree through this module: node classes
(``syntax.If``, ``syntax.Name`` ...), keyword-only node builders that hide gast's field
lists, parsing, unparsing and the conversion to a stdlib ``ast`` tree for ``compile``.
A change of gast (or of Python's grammar) should only ever touch this file.
"""

from __future__ import annotations

import ast
import copy

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
    withitem,
)

stmt = gast.stmt
expr = gast.expr
NodeVisitor = gast.NodeVisitor
NodeTransformer = gast.NodeTransformer
walk = gast.walk
iter_child_nodes = gast.iter_child_nodes
iter_fields = gast.iter_fields

LOCATION_FIELDS = ("lineno", "col_offset", "end_lineno", "end_col_offset")

# Statement kinds that hold nested statement lists, and the fields holding them.
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def parse(source: str) -> gast.Module:
    """Parses Python source into a gast module (raises SyntaxError as Python would)."""
    return gast.parse(source)


def parse_expr(source: str) -> AST:
    return gast.parse(source, mode="eval").body


def from_ast(node: ast.AST) -> AST:
    """Converts a stdlib ``ast`` tree to gast."""
    return gast.ast_to_gast(node)


def to_ast(node: AST) -> ast.AST:
    """Converts a gast tree to a stdlib ``ast`` tree (for ``compile`` and ``unparse``)."""
    return gast.gast_to_ast(node)


def unparse(node: AST) -> str:
    tree = to_ast(copy.deepcopy(node))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def dump(node: AST) -> str:
    return gast.dump(node)


# ----------------------------------------------------------------------------- builders
def name(id: str, ctx: str = "load") -> Name:
    ctx_node = {"load": Load, "store": Store, "param": Param, "del": Del}[ctx]()
    return Name(id=id, ctx=ctx_node, annotation=None, type_comment=None)


def names_tuple(ids, ctx: str = "load") -> AST | None:
    """``a`` for one name, ``(a, b)`` for several, None for none."""
    ids = list(ids)
    if not ids:
        return None
    if len(ids) == 1:
        return name(ids[0], ctx)
    ctx_node = Store() if ctx == "store" else Load()
    return Tuple(elts=[name(i, ctx) for i in ids], ctx=ctx_node)


def constant(value) -> Constant:
    return Constant(value=value, kind=None)


def attribute(value: AST, attr: str, ctx: str = "load") -> Attribute:
    return Attribute(value=value, attr=attr, ctx=Store() if ctx == "store" else Load())


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
    kws = [keyword(arg=k, value=v) for k, v in (keywords or {}).items()]
    return Call(func=func, args=list(args), keywords=kws)


def assign(targets: AST, value: AST) -> Assign:
    return Assign(targets=[targets], value=value, type_comment=None)


def expr_stmt(value: AST) -> Expr:
    return Expr(value=value)


def ret(value: AST | None) -> Return:
    return Return(value=value)


def if_stmt(test: AST, body, orelse=()) -> If:
    return If(test=test, body=list(body), orelse=list(orelse))


def unary_not(operand: AST) -> UnaryOp:
    return UnaryOp(op=Not(), operand=operand)


def bool_and(values) -> BoolOp:
    return BoolOp(op=And(), values=list(values))


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


def copy_location(new: AST, old: AST) -> AST:
    """Gives ``new`` and every descendant without a location the location of ``old``."""
    if not all(hasattr(old, f) and getattr(old, f) is not None for f in LOCATION_FIELDS[:2]):
        return new
    # Generated code covers one line (the statement's first): a span over the whole
    # statement would make Python report its last line for some instructions.
    lineno, col = old.lineno, old.col_offset
    single_line = getattr(old, "end_lineno", None) == lineno
    end_col = old.end_col_offset if single_line and old.end_col_offset is not None else col
    # A located node's subtree is located already (every pass locates what it creates), so
    # the walk stops there: user statements placed into a template are not revisited.
    stack = [new]
    while stack:
        node = stack.pop()
        if getattr(node, "lineno", None) is not None:
            continue
        if "lineno" in node._attributes:
            node.lineno, node.col_offset = lineno, col
            node.end_lineno, node.end_col_offset = lineno, end_col
        stack.extend(iter_child_nodes(node))
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
        new = node.__class__.__new__(node.__class__)
        fields = new.__dict__
        for key, value in node.__dict__.items():
            if isinstance(value, (AST, list)):
                value = deepcopy(value)
            elif isinstance(value, dict):  # annotations (autolax.transpile.anno)
                value = {k: deepcopy(v) for k, v in value.items()}
            fields[key] = value
        return new
    return node
