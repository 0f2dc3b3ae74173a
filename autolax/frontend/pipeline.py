"""parse -> check -> rewrite (one pass per feature) -> emit -> load.

The order of the passes, and why, lives in ``PASSES`` below and nowhere else. The top of
the front end: it imports every pass, and only ``autolax.cli`` and the API import it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import types
from dataclasses import dataclass

from autolax.frontend import emit
from autolax.frontend.analysis import activity
from autolax.frontend.analysis.activity import MUTATING_METHODS
from autolax.frontend.passes import (
    aliases,
    attributes,
    bound_names,
    branch_lambdas,
    break_statements,
    calls,
    caught_raises,
    continue_statements,
    control_flow,
    desugar,
    direct_returns,
    effects,
    exceptions,
    finally_jumps,
    identity,
    index_split,
    list_indices,
    lists,
    logical,
    loop_exits,
    loop_options,
    membership,
    return_statements,
    runtime_checks,
    setitem,
    slices,
    ternary,
    unbound_reads,
    unsupported,
    writeback,
)
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.context import Context
from autolax.frontend.transpile.naming import Namer
from autolax.frontend.transpile.source import function_source

PASSES = (
    # Reject what cannot be staged before touching anything, so errors show user code.
    unsupported,
    # A helper that writes into its parameters hands them back; a call of one rebinds the
    # caller's names (before the jump lowerings rewrite its returns, and before `aliases`,
    # which sees the rebinding as a change of the names' object).
    writeback,
    # `match` and `while` tests with `:=` become `if` / `break`, which the passes below lower.
    desugar,
    # A jump in a `finally` discards the exception in flight: the `finally` becomes code after
    # the `try` that re-raises unless it jumped (before `exceptions` converts the `raise`).
    finally_jumps,
    # Before jump lowering puts flag assignments at the top of loop bodies.
    loop_options,
    # A loop that appends in one branch of `if i < C` becomes two loops (before `lists`
    # rewrites the appends; it splits only loops without jumps).
    index_split,
    # `raise` / `assert` become ops calls (still a `raise` statement: a jump for the analyses).
    exceptions,
    # Before jump lowering adds paths that skip code: which names Python always binds first.
    bound_names,
    # An exit that ends a loop body leaves its work to after the loop (the loop then only
    # records the test): before the jump lowering, which would carry a flag and the values.
    loop_exits,
    # Jumps become flags. `continue` first: its guards may hold `break`s; `break` before
    # `return`, because it also removes loop `else` clauses, which `return` lowering assumes.
    continue_statements,
    break_statements,
    # A `raise` its own `try` catches becomes a jump to the handler: after `break` lowering
    # (no loop `else` left; `while True:` left by a `break` has a flag in its test), before
    # `return` lowering, which then sees the handler's copy after the `try` as plain code.
    caught_raises,
    return_statements,
    # A change through `a = b`'s alias rebinds `b` too: before mutation becomes assignment.
    aliases,
    # `a[[k, p]]`: NumPy's index list, as the index array JAX takes (before `slices` and
    # `setitem`, which keep the index as it is).
    list_indices,
    # Slices whose bounds may be traced, read by a reduction or written back, and windows
    # (`x[i:i + K]`): marked for the runtime (`ops.masked`, `ops.part`, `ops.window`) before
    # setitem turns the writes into `ops.at(x)[...]` (which keeps the marks in the index and
    # value) and before `calls`, which leaves ops calls alone.
    slices,
    # Mutation becomes assignment, so the analyses see a carried variable.
    setitem,
    # After setitem, which leaves `p.w[i] = v` (rooted in an attribute) to this pass.
    attributes,
    lists,
    # Mutations of what the function does not carry (globals, `self`): after the passes that
    # rewrite mutations of its own variables.
    effects,
    # Calls next: the passes below emit `ops.*` calls that must not be wrapped again.
    calls,
    # After the passes that read `lst.remove(x)` as a change of `lst` (it still is one).
    membership,
    # `a is b` of a value that may be traced (after `calls`, which would wrap its op call).
    identity,
    ternary,
    logical,
    # After jump lowering (which adds guarded paths) and every expression rewrite: reads the
    # final statements' definedness. Before control_flow, which moves them into functions.
    unbound_reads,
    # Needs the final form of every statement for its liveness/definedness analysis.
    control_flow,
    # `retval = <value>; return retval` ending a function (made by the return lowering and
    # control_flow) becomes `return <value>`: before branch_lambdas, which then sees
    # `def if_true(): return <value>`.
    direct_returns,
    # A branch function that only computes what it gives back becomes a lambda at its call.
    branch_lambdas,
    # Last: wraps the whole body (once every op that may stage a check is in place).
    runtime_checks,
)

# A pass with nothing to rewrite leaves the tree as it is, so it is skipped unless the
# function has one of the features its module's ``NEEDS`` names (see ``features``; ``None``:
# it always runs). Most functions have no `continue`, ternary or item assignment: this saves
# about 15% of the conversion time. A pass's ``AFTER`` names the passes whose annotations it
# reads (checked against the order above by tests/test_pass_examples.py).

# What ``logical`` rewrites in the tree (``lowered``: a jump lowering ran, and may have left
# loop tests with a ``not`` in annotations, which ``features`` does not see).
_LOGICAL = frozenset({"BoolOp", "Not", "Compare.chain"})
# Passes after which the features present are found again: they add jumps (desugar), or
# flags and guards and `not flag` loop tests (those live in annotations, unseen).
_LOWERS_JUMPS = (
    desugar,
    finally_jumps,
    loop_exits,
    continue_statements,
    break_statements,
    caught_raises,
    return_statements,
)


def features(tree, nodes=None) -> set[str]:
    """The node class names in ``tree``, plus: ``Subscript.Store`` / ``Attribute.Store``
    (item / attribute assignment), ``append`` (an ``.append`` attribute), ``Compare.chain``
    (``a < b < c``), ``membership`` (``x in y``, ``.remove`` / ``.index`` / ``.count``),
    ``identity`` (``a is b``), ``list_index`` (``a[[k, p]]``),
    ``LoopElse`` (``for``/``while ... else``) and ``EarlyReturn`` (a ``return`` other than
    the last statement of its function). ``nodes``: ``syntax.nodes(tree)``, if known."""
    out = set()
    final_returns = set()
    returns = []
    kinds = set()
    add_kind = kinds.add
    name, attribute, subscript = syntax.Name, syntax.Attribute, syntax.Subscript
    compare, ret = syntax.Compare, syntax.Return
    for node in syntax.nodes(tree) if nodes is None else nodes:
        cls = node.__class__
        add_kind(cls)
        # The classes below by how often they occur (a name is about one node in three).
        if cls is name:
            if node.id == "loop_options":
                out.add("loop_options")
        elif cls is attribute:
            if node.ctx.__class__ is syntax.Store:
                out.add("Attribute.Store")
            attr = node.attr
            if attr in _ATTRIBUTE_FEATURES:
                out.update(_ATTRIBUTE_FEATURES[attr])
        elif cls is subscript:
            if node.ctx.__class__ is syntax.Store:
                out.add("Subscript.Store")
            if list_indices.is_list_index(node.slice):
                out.add("list_index")
        elif cls is compare:
            if len(node.ops) > 1:
                out.add("Compare.chain")
            for op in node.ops:
                found = _COMPARE_FEATURES.get(op.__class__)
                if found is not None:
                    out.add(found)
        elif cls is ret:
            returns.append(node)
        elif cls in _LOOPS:
            if node.orelse:
                out.add("LoopElse")
        elif cls in _DEFS:
            if node.body and isinstance(node.body[-1], syntax.Return):
                final_returns.add(id(node.body[-1]))
    out.update([cls.__name__ for cls in kinds])
    if any(id(r) not in final_returns for r in returns):
        out.add("EarlyReturn")
    return out


# What ``features`` notes for an attribute of each of these names (``x.append``, ...).
_ATTRIBUTE_FEATURES: dict = {}
for _attr in MUTATING_METHODS:
    _ATTRIBUTE_FEATURES.setdefault(_attr, set()).add("mutating_call")
for _attr in membership.SEARCHING_METHODS:
    _ATTRIBUTE_FEATURES.setdefault(_attr, set()).add("membership")
_ATTRIBUTE_FEATURES.setdefault("append", set()).add("append")
_ATTRIBUTE_FEATURES.setdefault("loop_options", set()).add("loop_options")
_ATTRIBUTE_FEATURES.setdefault("call_writing", set()).add("write_back")
_COMPARE_FEATURES = {
    syntax.In: "membership",
    syntax.NotIn: "membership",
    syntax.Is: "identity",
    syntax.IsNot: "identity",
}
_LOOPS = frozenset({syntax.For, syntax.While, syntax.AsyncFor})
_DEFS = frozenset({syntax.FunctionDef, syntax.AsyncFunctionDef})


# The features ``features`` finds in statements alone (``statement_features``): what the
# jump lowerings and the passes between them decide on.
_STATEMENT_FEATURES = frozenset(
    {
        "Break",
        "Continue",
        "Return",
        "EarlyReturn",
        "Raise",
        "Assert",
        "Try",
        "LoopElse",
        "Match",
        "Global",
        "Nonlocal",
        "Delete",
    }
)
_STATEMENT_CLASSES = frozenset(getattr(syntax, kind) for kind in _STATEMENT_FEATURES if hasattr(syntax, kind))


def statement_features(tree) -> set[str]:
    """``features(tree) & _STATEMENT_FEATURES``, from a walk of the statements only."""
    out = set()
    final_returns = set()
    returns = []
    loops = (syntax.For, syntax.While, syntax.AsyncFor)
    defs = (syntax.FunctionDef, syntax.AsyncFunctionDef)
    handlers = (syntax.ExceptHandler, syntax.match_case)
    blocks = syntax.BLOCK_FIELDS
    stack = [tree]
    while stack:  # syntax.walk_statements, inlined (a generator costs a call per statement)
        node = stack.pop()
        for field in blocks:
            block = getattr(node, field, None)
            if block.__class__ is list:
                for child in block:
                    if isinstance(child, handlers):
                        stack.extend(child.body)
                    else:
                        stack.append(child)
        cls = node.__class__
        if cls in _STATEMENT_CLASSES:
            out.add(cls.__name__)
            if cls is syntax.Return:
                returns.append(node)
        elif cls in loops:
            if node.orelse:
                out.add("LoopElse")
        elif cls in defs:
            if node.body and isinstance(node.body[-1], syntax.Return):
                final_returns.add(id(node.body[-1]))
    if any(id(r) not in final_returns for r in returns):
        out.add("EarlyReturn")
    return out


@dataclass
class Converted:
    """The result of converting one function's source."""

    node: object  # the converted FunctionDef
    ctx: Context
    name: str  # name of the def in the generated source

    @functools.cached_property
    def ast_node(self) -> ast.FunctionDef:
        """``node`` as an ``ast`` tree with every location filled in (made once, for both
        ``source`` and ``compile_converted``: ``node`` must not change after)."""
        return syntax.to_ast(self.node, fix_locations=True)

    def source(self) -> str:
        return format_source(ast.unparse(self.ast_node))

    def lazy_source(self) -> "SourceText":
        """The text ``autolax.to_source`` shows, printed only when first read (most
        conversions are never shown)."""
        return SourceText(self.ast_node, self.ctx.source_lines)


class SourceText:
    """A converted function's source text, printed on first use from its ``ast`` tree and
    the lines of the file it was converted from: as ``autolax convert`` writes it
    (``emit.shown``: one printer), else (a lambda, a file changed since) as ``source()``."""

    __slots__ = ("_lines", "_node", "_text")

    def __init__(self, node: ast.AST, lines: list):
        self._node, self._lines, self._text = node, lines, None

    @property
    def text(self) -> str:
        if self._text is None:
            shown = emit.shown(self._node, self._lines)
            self._text = shown if shown is not None else format_source(ast.unparse(self._node))
            self._node = self._lines = None
        return self._text


def convert_function(fn, *, ops_name_hint: str = "ops") -> Converted:
    """Parses ``fn``'s source and runs every pass over it."""
    src = function_source(fn)
    node = src.node
    closure = {}
    code = fn.__code__
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            closure[var] = cell.cell_contents
        except ValueError:  # an empty cell (defined later in the enclosing function)
            pass
    return convert_node(
        node,
        filename=src.filename,
        source_lines=src.file_lines,
        globals=fn.__globals__,
        closure=closure,
        reserved=set(code.co_freevars) | set(code.co_names),
        ops_name_hint=ops_name_hint,
        methods=writeback.methods_of_owner(fn),
    )


def convert_node(
    node,
    *,
    filename,
    source_lines,
    globals,
    closure=None,
    reserved=(),
    ops_name_hint="ops",
    spec_filename=None,
    defs=None,
    methods=None,
) -> Converted:
    """Runs every pass over a parsed ``def`` (with its real positions in ``filename``).

    ``globals`` and ``closure`` are what free names resolve to when the passes ask (a
    source file converted without importing it passes the values it can know statically).
    ``spec_filename``: the file the emitted descriptors name, when the converted code will
    run from another file (``autolax convert``).
    """
    everything = syntax.nodes(node)  # read by the namer and the first ``features``
    namer = Namer(node, reserved=reserved, nodes=everything)
    ops_name = namer.new(ops_name_hint) if ops_name_hint in namer.used else ops_name_hint
    namer.used.add(ops_name)
    ctx = Context(
        namer=namer,
        filename=filename,
        source_lines=source_lines,
        ops=ops_name,
        globals=globals,
        closure=dict(closure or {}),
        spec_filename=spec_filename,
        defs=dict(defs or {}),
        methods=dict(methods or {}),
    )
    present = features(node, everything)
    del everything
    set_aside = _set_class_bodies_aside(node) if "ClassDef" in present else []
    node = _run_passes(node, ctx, present)
    if set_aside:
        _put_class_bodies_back(node, set_aside)
    return Converted(node=node, ctx=ctx, name=node.name)


def _run_passes(node, ctx: Context, present: set):
    """Runs each pass of ``PASSES`` that the tree's features (``present``) call for.

    After a jump lowering only the features in statements are found again, with a walk of
    the statements: the lowerings and the passes between them decide on those alone. The
    whole tree is searched again only where a pass needs more, or before a pass other than
    a lowering rewrites it (so ``present`` is as found right after the last lowering)."""
    stale = False
    with activity.caching(walrus="NamedExpr" in present):
        for rewrite in PASSES:
            needs = rewrite.NEEDS
            lowers = rewrite in _LOWERS_JUMPS
            if stale and (needs is None or not needs <= _STATEMENT_FEATURES or (not lowers and needs & present)):
                present = features(node) | {"lowered"}
                stale = False
            if needs is not None and not needs & present:
                continue
            if rewrite is logical and not _LOGICAL & present:
                # Only the loop tests the lowerings left in annotations (``not flag``): the
                # tree holds nothing the pass rewrites.
                node = logical.transform(node, ctx, tree=False)
            else:
                node = rewrite.transform(node, ctx)
            if rewrite is writeback and ctx.wrote_back:
                present.add("write_back")  # (a call rebinding a name: a change `aliases` follows)
            if lowers:
                present = (present - _STATEMENT_FEATURES) | statement_features(node)
                stale = True
    return node


def _set_class_bodies_aside(fn_node):
    """A class defined inside the function keeps its body as written: its methods are the
    user's functions, converted on their own when called (``ops.call``). While the passes run,
    the body stands aside, replaced by one statement reading the names it reads (a class
    body runs where it stands), with a lambda reading the names its methods read from the
    function (they read them when called: the function's cells, which staged loops and
    branches keep current, as for a nested ``def``). Returns ``[(class node, body)]`` to put
    back."""
    out = []
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.ClassDef) and not any(node is c for c, _ in out):
            names = sorted(set().union(*(activity.reads(stmt) for stmt in node.body)) if node.body else ())
            elts = [syntax.name(n) for n in names]
            later = sorted(activity.methods_free_names(node))
            if later:
                elts.append(syntax.lambda_(syntax.Tuple(elts=[syntax.name(n) for n in later], ctx=syntax.Load())))
            placeholder = syntax.expr_stmt(syntax.Tuple(elts=elts, ctx=syntax.Load()))
            out.append((node, node.body))
            node.body = [syntax.copy_location(placeholder, node)]
    return out


def _put_class_bodies_back(fn_node, set_aside):
    """Undoes ``_set_class_bodies_aside``. A pass that copies statements (``index_split``
    copies a loop) copied a class among them with the stand-in body: each copy gets a copy
    of the body."""
    for cls, body in set_aside:
        cls.body = body
    bodies = {(cls.lineno, cls.col_offset): (cls, body) for cls, body in set_aside}
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.ClassDef):
            found = bodies.get((node.lineno, node.col_offset))
            if found is not None and found[0] is not node:
                node.body = syntax.deepcopy(found[1])


def compile_converted(fn, converted: Converted) -> types.CodeType:
    """Compiles the converted def with the original file name and line numbers, so
    tracebacks and warnings point at the user's own lines. Returns its code object."""
    ctx = converted.ctx
    # Defaults and annotations are taken from the original function object instead. Shallow
    # copies of the ``ast`` tree ``source`` printed: the body is shared (``compile`` does not
    # modify it). Its locations were filled in from the def's own: the def has them all.
    assert all(getattr(converted.node, f, None) is not None for f in syntax.LOCATION_FIELDS), "an unlocated def"
    node = _shallow_copy(converted.ast_node)
    # The decorator ``passes.runtime_checks`` put on it is applied by the caller
    # (``ctx.wrapper``) to the function it makes of the code.
    node.decorator_list = []
    args = node.args = _shallow_copy(node.args)
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)

    def unannotated(a):
        if a is None or a.annotation is None:
            return a
        a = _shallow_copy(a)
        a.annotation = None
        return a

    args.posonlyargs = [unannotated(a) for a in args.posonlyargs]
    args.args = [unannotated(a) for a in args.args]
    args.kwonlyargs = [unannotated(a) for a in args.kwonlyargs]
    args.vararg, args.kwarg = unannotated(args.vararg), unannotated(args.kwarg)
    node.returns = None
    # A generic def (``def f[T](x: T)``, Python 3.12+) compiles into a scope of its type
    # parameters around the function; the parameters only serve annotations, dropped above,
    # and a body that reads one finds it among the free variables (the factory's parameters).
    if getattr(node, "type_params", None):
        node.type_params = []
    # The def is compiled inside a factory whose parameters are the function's free
    # variables (and the ops module), so the code object has the same free variables. It is
    # compiled under a name of its own: under its real name, a recursive call would find the
    # factory's local instead of the global, as a free variable.
    name, node.name = node.name, ctx.namer.new("converted_fn")
    tree = ast.Module(body=[_factory(node, [ctx.ops, *fn.__code__.co_freevars])], type_ignores=[])
    module_code = compile(tree, ctx.filename, "exec", dont_inherit=True)
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    return inner.replace(co_name=name, co_qualname=getattr(fn, "__qualname__", name))


def _factory(node: ast.FunctionDef, params) -> ast.FunctionDef:
    """``def autolax_factory(<params>): <node>; return <node's name>``, located where code
    generated for ``node`` is (built as ``ast`` nodes: it is compiled only)."""
    lineno, col, end_lineno, end_col = syntax.generated_location(node)
    where = {"lineno": lineno, "col_offset": col, "end_lineno": end_lineno, "end_col_offset": end_col}
    args = ast.arguments(
        posonlyargs=[],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
        args=[ast.arg(arg=p, annotation=None, type_comment=None, **where) for p in params],
    )
    returned = ast.Return(value=ast.Name(id=node.name, ctx=ast.Load(), **where), **where)
    factory = ast.FunctionDef(
        name="autolax_factory",
        args=args,
        body=[node, returned],
        decorator_list=[],
        returns=None,
        type_comment=None,
        **where,
    )
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        factory.type_params = []
    return factory


def _shallow_copy(node: ast.AST) -> ast.AST:
    """``copy.copy(node)`` (an ``ast`` node: a new one with the same attributes), without
    ``copy``'s generic machinery."""
    new = node.__class__.__new__(node.__class__)  # not __init__: it warns of missing fields on 3.13
    new.__dict__.update(node.__dict__)
    return new


def nested_functions(code: types.CodeType):
    """The code objects of the functions defined in ``code`` (nested ``def``s, lambdas), at
    any depth -- not those of classes defined there, nor their methods (their bodies are left
    as written, see ``_set_class_bodies_aside``)."""
    out = []
    stack = [iter(code.co_consts)]  # depth first, each function before those inside it
    while stack:
        const = next(stack[-1], stack)
        if const is stack:
            stack.pop()
        elif isinstance(const, types.CodeType) and const.co_flags & inspect.CO_OPTIMIZED:
            out.append(const)
            stack.append(iter(const.co_consts))
    return out


def make_function(fn, inner: types.CodeType, ops_module) -> types.FunctionType:
    """A function running ``inner`` with ``fn``'s globals, closure cells, defaults and
    metadata (the ops module fills the one extra free variable)."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[var] if var in cells else types.CellType(ops_module) for var in inner.co_freevars)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__qualname__ = fn.__qualname__
    new.__dict__.update(getattr(fn, "__dict__", {}))
    return new


_DEF = re.compile(r"^(\s*)(def |class |@)")


def format_source(text: str) -> str:
    """Blank lines around nested ``def`` blocks, as a person would write them."""
    lines = text.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if m and out:
            prev = out[-1]
            prev_indent = len(prev) - len(prev.lstrip())
            opens_block = prev.rstrip().endswith(":") and prev_indent < len(m.group(1))
            if prev.strip() and not opens_block and not prev.lstrip().startswith("@"):
                out.append("")
        elif out and out[-1].strip() and line.strip():
            # first statement after a nested block that is less indented than the block
            prev = out[-1]
            indent = len(line) - len(line.lstrip())
            if len(prev) - len(prev.lstrip()) > indent:  # a dedent: only then look for the def
                block_start = _enclosing_def_indent(out)
                if block_start is not None and indent <= block_start:
                    out.append("")
        out.append(line)
    return "\n".join(out) + "\n"


def _enclosing_def_indent(lines):
    """Indent of the last ``def`` line whose block the last line belongs to, if any."""
    last = lines[-1]
    last_indent = len(last) - len(last.lstrip())
    for line in reversed(lines):
        m = _DEF.match(line)
        if m and len(m.group(1)) < last_indent:
            return len(m.group(1))
    return None
