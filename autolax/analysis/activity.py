"""Which names a piece of code reads and which it binds, at the scope of the function.

Nested scopes (``def``, ``lambda``, comprehensions, ``class``) contribute their free names
as reads and their own name (for ``def``/``class``) as a write; names local to them are not
visible outside. ``global``/``nonlocal`` names are not local state and are reported
separately by ``declared_nonlocal``.
"""

from __future__ import annotations

import contextlib
import contextvars

from autolax.transpile import anno, syntax

_COMPREHENSIONS = (syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)


def target_names(target) -> set[str]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``); subscripts bind nothing."""
    if isinstance(target, syntax.Name):
        return {target.id}
    if isinstance(target, (syntax.Tuple, syntax.List)):
        out = set()
        for elt in target.elts:
            out |= target_names(elt)
        return out
    if isinstance(target, syntax.Starred):
        return target_names(target.value)
    return set()


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
    if node is None:
        return set()
    if isinstance(node, list):
        out = set()
        for n in node:
            out |= reads(n)
        return out
    if isinstance(node, syntax.Name):
        return {node.id} if isinstance(node.ctx, syntax.Load) else set()
    if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Lambda)):
        return _function_free_reads(node)
    if isinstance(node, _COMPREHENSIONS):
        return _comprehension_reads(node)
    if isinstance(node, syntax.ClassDef):
        out = reads(node.bases) | reads(node.keywords) | reads(node.decorator_list)
        for stmt in node.body:
            out |= reads(stmt)
        return out
    if isinstance(node, syntax.AugAssign):
        return reads(node.value) | _target_reads(node.target) | target_names(node.target)
    if isinstance(node, (syntax.Assign, syntax.AnnAssign)):
        targets = node.targets if isinstance(node, syntax.Assign) else [node.target]
        out = reads(node.value)
        for t in targets:
            out |= _target_reads(t)
        return out
    if isinstance(node, (syntax.For, syntax.AsyncFor)):
        out = reads(node.iter) | _target_reads(node.target) | reads(node.body) | reads(node.orelse)
        extra = anno.get(node, anno.EXTRA_TEST)
        return out | reads(extra)
    if isinstance(node, syntax.Delete):
        return set().union(*(_target_reads(t) for t in node.targets)) if node.targets else set()
    if isinstance(node, (syntax.Global, syntax.Nonlocal)):
        return set()
    out = set()
    for child in syntax.iter_child_nodes(node):
        out |= reads(child)
    return out


def writes(node) -> set[str]:
    """Names bound by ``node`` (statement or list of statements) in the function's scope."""
    if node is None:
        return set()
    if isinstance(node, syntax.expr) and not isinstance(node, syntax.NamedExpr) and _walrus_free():
        return set()  # only `:=` binds inside an expression, and there is none
    if isinstance(node, list):
        out = set()
        for n in node:
            out |= writes(n)
        return out
    if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
        return {node.name}
    if isinstance(node, syntax.Lambda):
        return set()  # a `:=` in a lambda binds in the lambda's own scope
    if isinstance(node, _COMPREHENSIONS):
        # Only assignment expressions escape these scopes.
        return {n.target.id for n in syntax.walk(node) if isinstance(n, syntax.NamedExpr)}
    if isinstance(node, syntax.Assign):
        out = set()
        for t in node.targets:
            out |= target_names(t)
        return out | writes(node.value)
    if isinstance(node, (syntax.AugAssign, syntax.AnnAssign)):
        if isinstance(node, syntax.AnnAssign) and node.value is None:
            return set()
        return target_names(node.target) | writes(node.value)
    if isinstance(node, (syntax.For, syntax.AsyncFor)):
        return target_names(node.target) | writes(node.iter) | writes(node.body) | writes(node.orelse)
    if isinstance(node, (syntax.With, syntax.AsyncWith)):
        out = writes(node.body)
        for item in node.items:
            out |= target_names(item.optional_vars) if item.optional_vars is not None else set()
            out |= writes(item.context_expr)
        return out
    if isinstance(node, syntax.ExceptHandler):
        return ({node.name.id} if node.name is not None else set()) | writes(node.body)
    if isinstance(node, (syntax.Import, syntax.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, syntax.NamedExpr):
        return {node.target.id} | writes(node.value)
    if isinstance(node, syntax.Delete):
        out = set()
        for t in node.targets:
            out |= target_names(t)
        return out
    if isinstance(node, (syntax.Global, syntax.Nonlocal)):
        return set()
    out = set()
    for child in syntax.iter_child_nodes(node):
        out |= writes(child)
    return out


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


def _walrus_free() -> bool:
    cache = _cache.get()
    return cache is not None and not cache["walrus"]


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
    out = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (syntax.Global, syntax.Nonlocal)):
            out |= set(node.names)
        elif isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            continue
        else:
            stack.extend(syntax.iter_child_nodes(node))
    return out


def declared_names(body) -> tuple[set[str], set[str]]:
    """(``global`` names, ``nonlocal`` names) declared directly in a function body."""
    globals_, nonlocals = set(), set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, syntax.Global):
            globals_ |= set(node.names)
        elif isinstance(node, syntax.Nonlocal):
            nonlocals |= set(node.names)
        elif not isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            stack.extend(syntax.iter_child_nodes(node))
    return globals_, nonlocals


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


def _nested_nonlocals(body) -> set[str]:
    """``nonlocal`` names declared in a function body or in functions nested in it."""
    out = set()
    for node in syntax.walk(syntax.Module(body=list(body), type_ignores=[])):
        if isinstance(node, syntax.Nonlocal):
            out |= set(node.names)
    return out


# Methods that change a list, dict or set in place.
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
     "popitem", "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update"}
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
    while stack:
        node = stack.pop()
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            continue
        if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and node.func.attr in MUTATING_METHODS:
            root = mutation_root(node.func.value)
            if root is not None:
                out.add(root.id)
        elif isinstance(node, syntax.Delete):
            for target in node.targets:
                if isinstance(target, (syntax.Attribute, syntax.Subscript)):
                    root = mutation_root(target)
                    if root is not None:
                        out.add(root.id)
        stack.extend(syntax.iter_child_nodes(node))
    return out
