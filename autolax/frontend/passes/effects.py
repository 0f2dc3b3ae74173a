"""Mutations of values the function does not carry go through ``ops.outside``.

    G.append(x)             ->   ops.outside(G, 'append').append(x)
    self.items.append(x)    ->   ops.outside(self.items, 'append').append(x)
    self.count = n          ->   ops.outside(self).count = n
    CACHE[k] = v            ->   ops.outside(CACHE)[k] = v
    total = n               ->   ops.outside_store('total', 'global')   (`global total`)
                                 total = n

A global, a variable of an enclosing function or a method's ``self`` is not part of any
staged statement's state: mutated inside a staged branch or loop body, the change would
happen once, while tracing, instead of each time the statement runs. ``ops.outside``
returns its argument unchanged, except inside a staged body, where it raises
``StagedEffectError`` (for a method call: only when the object is a list, dict or set,
whose methods of that name change it; ``opt.update(...)`` of an optimizer is not a
mutation). Mutations of the function's own variables are rewritten by the setitem,
attributes and lists passes, and carried.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import (
    MUTATING_METHODS,
    declared_names,
    local_names,
    mutation_root,
    target_names,
)
from autolax.frontend.transpile import syntax

# Runs where the function changes something in place, deletes, or declares ``global`` /
# ``nonlocal`` (``pipeline.features``).
NEEDS = frozenset({"Subscript.Store", "Attribute.Store", "Delete", "mutating_call", "Global", "Nonlocal"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(self, x, k, v):
            G.append(x)
            self.items.append(x)
            self.count = x
            CACHE[k] = v
            return x
        """,
        """\
        def f(self, x, k, v):
            ops.outside(G, 'append').append(x)
            ops.outside(self.items, 'append').append(x)
            ops.outside(self).count = x
            ops.outside(CACHE)[k] = v
            return x
        """,
    ),
    (
        """\
        def f(n):
            global total
            total = n
            return n
        """,
        """\
        def f(n):
            global total
            ops.outside_store('total', 'global')
            total = n
            return n
        """,
    ),
)


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, owned, declared, globals_=frozenset()):
        self.ctx = ctx
        self.owned = owned  # local names whose mutations other passes handle
        self.declared = declared  # names declared global or nonlocal
        self.globals = globals_  # ... of them, those declared global

    def _store_checks(self, node, targets):
        """``ops.outside_store('total')`` before a statement assigning declared names."""
        names = sorted(set().union(*(target_names(t) for t in targets)) & self.declared) if targets else []
        checks = [
            syntax.copy_location(
                syntax.expr_stmt(
                    syntax.call(
                        f"{self.ctx.ops}.outside_store",
                        [syntax.constant(n)] + ([syntax.constant("global")] if n in self.globals else []),
                    )
                ),
                node,
            )
            for n in names
        ]
        return checks + [node] if checks else node

    def _outside(self, root_holder, field, method=None):
        """Wraps the root name at ``root_holder.<field>`` (the innermost ``.value``)."""
        root = getattr(root_holder, field)
        args = [root] + ([syntax.constant(method)] if method else [])
        setattr(root_holder, field, syntax.copy_location(syntax.call(f"{self.ctx.ops}.outside", args), root))

    def _wrap_target(self, target, method=None):
        """Wraps the root of ``a.b[i]`` if it is not one of the function's own variables."""
        root = mutation_root(target)
        if root is None or root.id in self.owned or self._is_module(root.id):
            return
        holder = target
        while isinstance(holder.value, (syntax.Attribute, syntax.Subscript)):
            holder = holder.value
        self._outside(holder, "value", method)

    def _is_module(self, name):
        """A module (``jnp.append``) or autolax's runtime, called by code a pass emitted."""
        return name == self.ctx.ops or type(self.ctx.resolve(name, self.owned)).__name__ == "module"

    def visit_Assign(self, node):
        self.generic_visit(node)
        for target in node.targets:
            for t in _item_and_attribute_targets(target):
                self._wrap_target(t)
        return self._store_checks(node, node.targets)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, (syntax.Attribute, syntax.Subscript)):
            self._wrap_target(node.target)
        return self._store_checks(node, [node.target])

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        return self._store_checks(node, [node.target] if node.value is not None else [])

    def visit_For(self, node):
        self.generic_visit(node)
        if target_names(node.target) & self.declared:
            checks = self._store_checks(node, [node.target])
            node.body = checks[:-1] + node.body  # each iteration assigns the target
        return node

    def visit_Delete(self, node):
        for target in node.targets:
            if isinstance(target, (syntax.Attribute, syntax.Subscript)):
                self._wrap_target(target)
        # `del total` of a declared name unbinds the user's variable: checked as an assignment.
        return self._store_checks(node, node.targets)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, syntax.Attribute) and func.attr in MUTATING_METHODS:
            root = mutation_root(func.value)
            if root is not None and root.id not in self.owned and not self._is_module(root.id):
                self._outside(func, "value", func.attr)  # the receiver: `ops.outside(self.items, 'append')`
        return node

    def visit_BoolOp(self, node):
        # A later operand of a traced `and`/`or` is traced once, whatever the first operand
        # turns out to be: a list method there (`a > 0 or stack.pop()`) would change the
        # function's own list at trace time too. Treated as an outside mutation, it is
        # refused inside that trace and stays plain Python when the operand is concrete.
        first, *rest = node.values
        node.values = [self.visit(first)]
        owned, self.owned = self.owned, set()
        try:
            node.values += [self.visit(v) for v in rest]
        finally:
            self.owned = owned
        return node

    def visit_IfExp(self, node):
        # Both sides of a conditional expression with a traced test are traced, whichever the
        # program takes: `x if x > 0 else stack.pop()` would pop at trace time. As for the
        # operands of `and`/`or`, a change of the function's own list there is refused in
        # that trace and plain Python when the test is concrete.
        node.test = self.visit(node.test)
        owned, self.owned = self.owned, set()
        try:
            node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        finally:
            self.owned = owned
        return node

    def visit_FunctionDef(self, node):
        node.body = _transformer(self.ctx, node).visit_block(node.body)
        return node

    def visit_Lambda(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda


def _item_and_attribute_targets(target):
    if isinstance(target, (syntax.Attribute, syntax.Subscript)):
        return [target]
    if isinstance(target, (syntax.Tuple, syntax.List)):
        return [t for elt in target.elts for t in _item_and_attribute_targets(elt)]
    if isinstance(target, syntax.Starred):
        return _item_and_attribute_targets(target.value)
    return []


def _transformer(ctx, fn_node):
    params = syntax.param_names(fn_node.args)
    receiver = {params[0]} if params and params[0] in ("self", "cls") else set()
    globals_, nonlocals = declared_names(fn_node.body)
    return _Transformer(ctx, local_names(fn_node) - receiver, globals_ | nonlocals, globals_)


def transform(fn_node, ctx):
    fn_node.body = _transformer(ctx, fn_node).visit_block(fn_node.body)
    return fn_node
