"""Which names a piece of code reads and which it binds, at the scope of the function.

Nested scopes (``def``, ``lambda``, comprehensions, ``class``) contribute their free names
as reads and their own name (for ``def``/``class``) as a write; names local to them are not
visible outside. ``global``/``nonlocal`` names are not local state and are reported
separately by ``declared_nonlocal``.
"""

from __future__ import annotations

import contextlib
import contextvars

from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.syntax import target_names

_COMPREHENSIONS = (syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)
_CHILD_FIELDS = syntax.CHILD_FIELDS


def _target_reads(target) -> set[str]:
    """Names read while assigning to a target (the ``x`` and ``i`` of ``x[i] = v``)."""
    if isinstance(target, syntax.Name):
        return set()
    if isinstance(target, (syntax.Tuple, syntax.List)):
        out = set()
        for elt in target.elts:
            out |= _target_reads(elt)
        return out
    if isinstance(target, syntax.Starred):
        return _target_reads(target.value)
    return reads(target)


def _function_free_reads(node) -> set[str]:
    """Free names of a nested function or lambda (read when it runs; we count them here)."""
    args = node.args
    params = set(syntax.param_names(args))
    outer = set()
    for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
        outer |= reads(d)
    if isinstance(node, syntax.Lambda):
        return outer | (reads(node.body) - params - writes(node.body))
    for dec in node.decorator_list:
        outer |= reads(dec)
    body_reads = set()
    local = set(params)
    for stmt in node.body:
        body_reads |= reads(stmt)
        local |= writes(stmt)
    local -= declared_nonlocal(node.body)
    return outer | (body_reads - local)


def _comprehension_reads(node) -> set[str]:
    gens = node.generators
    out = reads(gens[0].iter)
    local = set()
    inner = set()
    for i, gen in enumerate(gens):
        local |= target_names(gen.target)
        if i:
            inner |= reads(gen.iter)
        for cond in gen.ifs:
            inner |= reads(cond)
    if isinstance(node, syntax.DictComp):
        inner |= reads(node.key) | reads(node.value)
    else:
        inner |= reads(node.elt)
    return out | (inner - local)


def reads(node) -> set[str]:
    """Names whose value ``node`` reads from the enclosing function's scope."""
    out = set()
    _add_reads(node, out)
    return out


def _add_reads(node, out: set) -> None:
    """The reads of ``node`` into ``out``: names and nodes without a rule of their own are
    handled in one loop (no call per node)."""
    stack = [node]
    pop, add = stack.pop, stack.append
    while stack:
        node = pop()
        kind = node.__class__
        if kind is syntax.Name:
            if isinstance(node.ctx, syntax.Load):
                out.add(node.id)
            continue
        special = _READS.get(kind)
        if special is not None:
            special(node, out)
            continue
        fields = _CHILD_FIELDS.get(kind)
        for field in fields if fields is not None else syntax.child_fields(kind):  # as syntax.iter_child_nodes
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, syntax.AST) and item._fields:  # not a context or an operator
                        add(item)
            elif isinstance(value, syntax.AST) and value._fields:
                add(value)


def _reads_of_list(nodes, out):
    for n in nodes:
        _add_reads(n, out)


def _reads_of_name(node, out):
    if isinstance(node.ctx, syntax.Load):
        out.add(node.id)


def _reads_of_class(node, out):
    _reads_of_list(node.bases, out)
    _reads_of_list(node.keywords, out)
    _reads_of_list(node.decorator_list, out)
    _reads_of_list(node.body, out)


def _reads_of_augassign(node, out):
    _add_reads(node.value, out)
    out |= _target_reads(node.target)
    out |= target_names(node.target)


def _reads_of_assign(node, out):
    _add_reads(node.value, out)
    for t in node.targets if isinstance(node, syntax.Assign) else [node.target]:
        out |= _target_reads(t)


def _reads_of_for(node, out):
    _add_reads(node.iter, out)
    out |= _target_reads(node.target)
    _reads_of_list(node.body, out)
    _reads_of_list(node.orelse, out)
    _add_reads(anno.get(node, anno.EXTRA_TEST), out)


def _reads_of_delete(node, out):
    for t in node.targets:
        out |= _target_reads(t)


def _reads_nothing(node, out):
    pass


# What ``reads`` does for these node classes (the others: their children's reads).
_READS = {
    type(None): _reads_nothing,
    list: _reads_of_list,
    syntax.Name: _reads_of_name,
    syntax.FunctionDef: lambda node, out: out.update(_function_free_reads(node)),
    syntax.AsyncFunctionDef: lambda node, out: out.update(_function_free_reads(node)),
    syntax.Lambda: lambda node, out: out.update(_function_free_reads(node)),
    **{kind: lambda node, out: out.update(_comprehension_reads(node)) for kind in _COMPREHENSIONS},
    syntax.ClassDef: _reads_of_class,
    syntax.AugAssign: _reads_of_augassign,
    syntax.Assign: _reads_of_assign,
    syntax.AnnAssign: _reads_of_assign,
    syntax.For: _reads_of_for,
    syntax.AsyncFor: _reads_of_for,
    syntax.Delete: _reads_of_delete,
    syntax.Global: _reads_nothing,
    syntax.Nonlocal: _reads_nothing,
}


def writes(node) -> set[str]:
    """Names bound by ``node`` (statement or list of statements) in the function's scope."""
    out = set()
    cache = _cache.get()
    if cache is None or cache["walrus"]:  # not _walrus_free(), inlined
        _add_writes(node, out, False)
        return out
    # In a function without `:=` (most), the most common statements are handled in one loop
    # (no call per statement); the others go to ``_add_writes``.
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = node.__class__
        if kind is list:
            push(node)
        elif kind is syntax.Assign:
            for target in node.targets:
                if target.__class__ is syntax.Name:
                    out.add(target.id)
                else:
                    out |= target_names(target)
            if node.value.__class__ is syntax.NamedExpr:  # as `_add_writes` (its only binding expression)
                _writes_of_named(node.value, out, True)
        elif kind is syntax.If or kind is syntax.While:
            if node.test.__class__ is syntax.NamedExpr:
                _writes_of_named(node.test, out, True)
            push(node.body)
            push(node.orelse)
        elif kind is syntax.For:
            out |= target_names(node.target)
            if node.iter.__class__ is syntax.NamedExpr:
                _writes_of_named(node.iter, out, True)
            push(node.body)
            push(node.orelse)
        elif kind is syntax.FunctionDef:
            out.add(node.name)
        elif kind is syntax.Expr or kind is syntax.Return:
            if node.value.__class__ is syntax.NamedExpr:
                _writes_of_named(node.value, out, True)
        elif kind is syntax.AugAssign:
            out |= target_names(node.target)
            if node.value.__class__ is syntax.NamedExpr:
                _writes_of_named(node.value, out, True)
        else:
            _add_writes(node, out, True)
    return out


def _add_writes(node, out: set, walrus_free: bool) -> None:
    """``walrus_free``: the function holds no ``:=``, the only binding inside an expression."""
    kind = node.__class__
    special = _WRITES.get(kind)
    if special is not None:
        special(node, out, walrus_free)
        return
    if walrus_free and isinstance(node, syntax.expr):
        return
    for child in syntax.iter_child_nodes(node):
        if child._fields:  # not a context or an operator
            _add_writes(child, out, walrus_free)


def _writes_of_list(nodes, out, walrus_free):
    for n in nodes:
        _add_writes(n, out, walrus_free)


def _writes_of_def(node, out, walrus_free):
    out.add(node.name)


def _writes_of_comprehension(node, out, walrus_free):
    # Only assignment expressions escape these scopes.
    if not walrus_free:
        out.update(n.target.id for n in syntax.walk(node) if isinstance(n, syntax.NamedExpr))


def _writes_of_assign(node, out, walrus_free):
    for t in node.targets:
        out |= target_names(t)
    _add_writes(node.value, out, walrus_free)


def _writes_of_annassign(node, out, walrus_free):
    if isinstance(node, syntax.AnnAssign) and node.value is None:
        return
    out |= target_names(node.target)
    _add_writes(node.value, out, walrus_free)


def _writes_of_for(node, out, walrus_free):
    out |= target_names(node.target)
    _add_writes(node.iter, out, walrus_free)
    _writes_of_list(node.body, out, walrus_free)
    _writes_of_list(node.orelse, out, walrus_free)


def _writes_of_with(node, out, walrus_free):
    _writes_of_list(node.body, out, walrus_free)
    for item in node.items:
        if item.optional_vars is not None:
            out |= target_names(item.optional_vars)
        _add_writes(item.context_expr, out, walrus_free)


def _writes_of_handler(node, out, walrus_free):
    if node.name is not None:
        out.add(node.name.id)
    _writes_of_list(node.body, out, walrus_free)


def _writes_of_import(node, out, walrus_free):
    out.update((a.asname or a.name).split(".")[0] for a in node.names)


def _writes_of_named(node, out, walrus_free):
    out.add(node.target.id)
    _add_writes(node.value, out, walrus_free)


def _writes_of_delete(node, out, walrus_free):
    for t in node.targets:
        out |= target_names(t)


def _writes_nothing(node, out, walrus_free):
    pass


# What ``writes`` does for these node classes (the others: their children's writes, none
# for an expression in a function without ``:=``).
_WRITES = {
    type(None): _writes_nothing,
    list: _writes_of_list,
    syntax.FunctionDef: _writes_of_def,
    syntax.AsyncFunctionDef: _writes_of_def,
    syntax.ClassDef: _writes_of_def,
    syntax.Lambda: _writes_nothing,  # a `:=` in a lambda binds in the lambda's own scope
    **{kind: _writes_of_comprehension for kind in _COMPREHENSIONS},
    syntax.Assign: _writes_of_assign,
    syntax.AugAssign: _writes_of_annassign,
    syntax.AnnAssign: _writes_of_annassign,
    syntax.For: _writes_of_for,
    syntax.AsyncFor: _writes_of_for,
    syntax.With: _writes_of_with,
    syntax.AsyncWith: _writes_of_with,
    syntax.ExceptHandler: _writes_of_handler,
    syntax.Import: _writes_of_import,
    syntax.ImportFrom: _writes_of_import,
    syntax.NamedExpr: _writes_of_named,
    syntax.Delete: _writes_of_delete,
    syntax.Global: _writes_nothing,
    syntax.Nonlocal: _writes_nothing,
}


_cache: contextvars.ContextVar = contextvars.ContextVar("autolax_activity_cache", default=None)


@contextlib.contextmanager
def caching(walrus: bool = True):
    """Memoises ``local_names`` / ``declared_nonlocal`` per node while converting one
    function: several passes ask, and the answers do not change between them
    (the only names passes add -- jump flags, temporaries -- are irrelevant to the askers).

    ``walrus``: whether the function holds an assignment expression (``:=``). Most do not,
    and then ``writes`` need not search expressions, which is most of its work. A pass that
    emits one calls ``walrus_emitted``."""
    token = _cache.set({"walrus": walrus})
    try:
        yield
    finally:
        _cache.reset(token)


def walrus_emitted() -> None:
    """Tells ``writes`` that the function being converted now holds a ``:=``."""
    cache = _cache.get()
    if cache is not None:
        cache["walrus"] = True


def _memo(kind, node, compute):
    cache = _cache.get()
    if cache is None:
        return compute()
    key = (kind, id(node))
    if key not in cache:
        cache[key] = (node, compute())  # keeps node alive so its id is not reused
    return cache[key][1]


def declared_nonlocal(body) -> set[str]:
    return _memo("nonlocal", body, lambda: _declared_nonlocal(body))


def _declared_nonlocal(body) -> set[str]:
    """Names declared ``global`` or ``nonlocal`` directly in a function body (any depth of
    blocks, not nested functions)."""
    globals_, nonlocals = declared_names(body)
    return globals_ | nonlocals


def declared_names(body) -> tuple[set[str], set[str]]:
    """(``global`` names, ``nonlocal`` names) declared directly in a function body."""
    globals_, nonlocals = set(), set()
    for node in own_statements(body):
        if isinstance(node, syntax.Global):
            globals_.update(node.names)
        elif isinstance(node, syntax.Nonlocal):
            nonlocals.update(node.names)
    return globals_, nonlocals


def own_statements(body):
    """The statements of a function body at any depth of blocks, not in nested functions or
    classes (statements are found in blocks only: expressions are not searched)."""
    out = []
    stack = list(body)
    scopes = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)
    holders = (syntax.ExceptHandler, syntax.match_case)
    while stack:  # a list, not a generator: no call per statement
        node = stack.pop()
        out.append(node)
        if isinstance(node, scopes):
            continue
        for field in syntax.BLOCK_FIELDS:
            block = getattr(node, field, None)
            if block:
                for child in block:  # a handler or a `case` holds statements
                    if isinstance(child, holders):
                        stack.extend(child.body)
                    else:
                        stack.append(child)
    return out


def local_names(fn_node) -> set[str]:
    """Every name local to a function: parameters and names it binds."""
    return set(_memo("locals", fn_node, lambda: _local_names(fn_node)))


def _local_names(fn_node) -> set[str]:
    out = set(syntax.param_names(fn_node.args))
    out |= writes(fn_node.body)
    return out - declared_nonlocal(fn_node.body)


def captured_names(fn_node) -> set[str]:
    """Local names of a function that a nested ``def`` or ``lambda`` reads or writes
    (``nonlocal``) -- Python's cell variables, except those of comprehensions and generator
    expressions (evaluated where they stand) and of the generated thunks of ``and`` / ``or``
    / ternaries. A closure reads such a name's current value when it is called."""
    local = local_names(fn_node)
    out = set()
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef)) or (
            isinstance(node, syntax.Lambda) and not anno.get(node, anno.THUNK)
        ):
            out |= _function_free_reads(node)
            if not isinstance(node, syntax.Lambda):
                out |= _nested_nonlocals(node.body)
            stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            stack.extend(getattr(node, "decorator_list", []))
            continue
        if isinstance(node, syntax.ClassDef):
            stack.extend(node.body)  # methods close over the function's names
            continue
        stack.extend(syntax.iter_child_nodes(node))
    return out & local


def methods_free_names(class_node) -> set[str]:
    """The names the functions defined in a class body (its methods, and what they nest)
    read or write (``nonlocal``) from the scopes around the class: those a method reads when
    it is called, not when the class is made."""
    out = set()
    for node in syntax.walk(syntax.Module(body=list(class_node.body), type_ignores=[])):
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Lambda)):
            out |= _function_free_reads(node)
            if not isinstance(node, syntax.Lambda):
                out |= _nested_nonlocals(node.body)
    return out


def _nested_nonlocals(body) -> set[str]:
    """``nonlocal`` names declared in a function body or in functions nested in it."""
    out = set()
    for node in syntax.walk(syntax.Module(body=list(body), type_ignores=[])):
        if isinstance(node, syntax.Nonlocal):
            out |= set(node.names)
    return out


# Methods that change a list, dict or set in place.
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "sort",
        "reverse",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)


def mutation_root(node):
    """The name at the root of ``a.b[i].c`` (the ``Name`` node), or None."""
    while isinstance(node, (syntax.Attribute, syntax.Subscript)):
        node = node.value
    return node if isinstance(node, syntax.Name) else None


def mutated_names(stmts) -> set[str]:
    """Names whose objects ``stmts`` change in place without rebinding them: the receiver's
    root of a mutating method call (``stack.pop()``, ``d['k'].append(x)``) and the root of a
    ``del x[i]`` / ``del x.a`` (not looking into nested functions)."""
    out = set()
    stack = list(stmts) if isinstance(stmts, list) else [stmts]
    call, delete = syntax.Call, syntax.Delete
    while stack:
        node = stack.pop()
        kind = node.__class__  # the exact class (no node class is subclassed): no isinstance chain
        if kind in _SCOPES:
            continue
        if kind is call:
            if node.func.__class__ is syntax.Attribute and node.func.attr in MUTATING_METHODS:
                root = mutation_root(node.func.value)
                if root is not None:
                    out.add(root.id)
        elif kind is delete:
            for target in node.targets:
                if isinstance(target, (syntax.Attribute, syntax.Subscript)):
                    root = mutation_root(target)
                    if root is not None:
                        out.add(root.id)
        fields = _CHILD_FIELDS.get(kind)
        for field in fields if fields is not None else syntax.child_fields(kind):
            value = getattr(node, field, None)  # stack.extend(syntax.iter_child_nodes(node)), inlined
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, syntax.AST) and item._fields:  # not a context or an operator
                        stack.append(item)
            elif isinstance(value, syntax.AST) and value._fields:
                stack.append(value)
    return out


_SCOPES = frozenset({syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda})
