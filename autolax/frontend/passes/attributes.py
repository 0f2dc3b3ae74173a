"""Attribute assignment on a local name becomes an assignment of the name, so the analyses
see the object as modified (and a staged loop or ``if`` carries it).

    p.x = v           ->   p = ops.setattr(p, 'x', v)
    p.x += v          ->   p = ops.setattr(p, 'x', v, op='add')
    p.q.x = v         ->   p = ops.setattr(p, 'q', ops.setattr(p.q, 'x', v))
    p.w[i] = v        ->   p = ops.setattr(p, 'w', ops.at(p.w)[i].set(v))
    p.x, p.y = a, b   ->   attr_x, attr_y = (a, b)
                           p = ops.setattr(p, 'x', attr_x)
                           p = ops.setattr(p, 'y', attr_y)

``ops.setattr`` sets the attribute in place and returns the object, so plain Python
behaviour is unchanged (a frozen dataclass or a ``NamedTuple`` raises as Python does). In a
staged loop a registered pytree (``jax.tree_util.register_dataclass``) is carried like any
other value.

Only names local to the function are rewritten (parameters included). The receiver of a
method (a first parameter named ``self`` or ``cls``) is left alone: its updates are what the
method does to its caller's object. Globals, ``nonlocal`` names and names of an enclosing
function are left alone too, since assigning them would make them local.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.updates import AUG_METHODS

# Runs where the function assigns an attribute, ``p.x = v`` (``pipeline.features``).
NEEDS = frozenset({"Attribute.Store"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(p, v, i):
            p.x = v
            p.x += v
            p.q.x = v
            p.w[i] = v
            return p
        """,
        """\
        def f(p, v, i):
            p = ops.setattr(p, 'x', v)
            p = ops.setattr(p, 'x', v, op='add')
            p = ops.setattr(p, 'q', ops.setattr(p.q, 'x', v))
            p = ops.setattr(p, 'w', ops.at(p.w)[i].set(v))
            return p
        """,
    ),
    (
        """\
        def f(p, a, b):
            p.x, p.y = a, b
            return p
        """,
        """\
        def f(p, a, b):
            attr_x, attr_y = (a, b)
            p = ops.setattr(p, 'x', attr_x)
            p = ops.setattr(p, 'y', attr_y)
            return p
        """,
    ),
    (
        """\
        def step(self, p, v):
            self.count = v
            p.x = v
            return p
        """,
        """\
        def step(self, p, v):
            self.count = v
            p = ops.setattr(p, 'x', v)
            return p
        """,
    ),
)


def _root(target):
    """The local name an attribute target updates: ``p`` for ``p.x``, ``p.q.x``, ``p.w[i]``
    (attributes directly on the name, then any subscripts), else None."""
    node = target
    while isinstance(node, syntax.Subscript):
        node = node.value
    if not isinstance(node, syntax.Attribute):
        return None
    while isinstance(node, syntax.Attribute):
        node = node.value
    return node if isinstance(node, syntax.Name) else None


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, names):
        self.ctx = ctx
        self.names = names  # the names whose attributes this scope may rewrite

    def _target_root(self, target):
        root = _root(target)
        return root if root is not None and root.id in self.names else None

    def _update(self, target, value, op=None):
        """Expression computing the new value of the object ``target`` is an item or an
        attribute of, after the assignment."""
        base = syntax.as_load(target.value)
        if isinstance(target, syntax.Attribute):
            keywords = {"op": syntax.constant(op)} if op is not None else None
            new = syntax.call(f"{self.ctx.ops}.setattr", [base, syntax.constant(target.attr), value], keywords)
        else:
            at = syntax.call(f"{self.ctx.ops}.at", [base])
            indexed = syntax.Subscript(value=at, slice=syntax.as_load(target.slice), ctx=syntax.Load())
            new = syntax.call(syntax.attribute(indexed, op or "set"), [value])
        if isinstance(target.value, syntax.Name):
            return new
        return self._update(target.value, new)

    def _assign_root(self, node, target, value, op=None):
        root = self._target_root(target)
        new = syntax.assign(syntax.name(root.id, "store"), self._update(target, value, op))
        return syntax.copy_location(new, node)

    def visit_Assign(self, node):
        if len(node.targets) == 1 and self._target_root(node.targets[0]) is not None:
            return self._assign_root(node, node.targets[0], node.value)
        # Several targets (`a = p.x = v`) or unpacking (`p.x, p.y = ...`): assign temporaries,
        # then each attribute in order -- unless the statement also rebinds the root name,
        # where the order of the bindings would matter.
        updates = []
        bound = set()

        def replace(target):
            if isinstance(target, (syntax.Tuple, syntax.List)):
                target.elts = [replace(e) for e in target.elts]
                return target
            if isinstance(target, syntax.Starred):
                target.value = replace(target.value)
                return target
            if isinstance(target, syntax.Name):
                bound.add(target.id)
                return target
            if self._target_root(target) is None:
                return target
            temp = self.ctx.namer.new(f"attr_{_leaf_name(target)}")
            updates.append((target, temp))
            return syntax.name(temp, "store")

        original = syntax.deepcopy(node.targets)
        node.targets = [replace(t) for t in node.targets]
        if not updates:
            return node
        if any(self._target_root(t).id in bound for t, _ in updates):
            node.targets = original
            return node
        return [node] + [self._assign_root(node, t, syntax.name(temp)) for t, temp in updates]

    def visit_AugAssign(self, node):
        if self._target_root(node.target) is not None and type(node.op) in AUG_METHODS:
            return self._assign_root(node, node.target, node.value, AUG_METHODS[type(node.op)])
        return node

    def visit_FunctionDef(self, node):
        node.body = _function_transformer(self.ctx, node).visit_block(node.body)
        return node

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node


def _leaf_name(target):
    while isinstance(target, syntax.Subscript):
        target = target.value
    return target.attr


def _function_transformer(ctx, fn_node):
    params = syntax.param_names(fn_node.args)
    receiver = {params[0]} if params and params[0] in ("self", "cls") else set()
    return _Transformer(ctx, local_names(fn_node) - receiver)


def transform(fn_node, ctx):
    fn_node.body = _function_transformer(ctx, fn_node).visit_block(fn_node.body)
    return fn_node
