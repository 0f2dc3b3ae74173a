"""Item assignment on a local name becomes a functional update that works on JAX arrays.

    x[i] = v          ->   x = ops.at(x)[i].set(v)
    x[i, j] += v      ->   x = ops.at(x)[i, j].add(v)
    x[i][j] = v       ->   x = ops.at(x)[i].set(ops.at(x[i])[j].set(v))
    x[i] = x[j] = v   ->   value = v; x = ops.at(x)[i].set(value); x = ops.at(x)[j].set(value)

``ops.at`` uses ``x.at[...]`` for JAX arrays and mutates in place (returning ``x``) for
NumPy arrays, lists, dicts and anything else, so plain Python behaviour is unchanged.
Targets rooted in an attribute (``self.buf[i] = v``, see the attributes pass) or in a name
that is not local to the function (a global or free variable) are left alone.
"""

from __future__ import annotations

from autolax.analysis.activity import local_names
from autolax.transpile import syntax
from autolax.transpile.updates import AUG_METHODS


def _root_name(target):
    while isinstance(target, syntax.Subscript):
        target = target.value
    return target if isinstance(target, syntax.Name) else None


def _as_load(node):
    node = syntax.deepcopy(node)
    for n in syntax.walk(node):
        if hasattr(n, "ctx") and isinstance(n.ctx, (syntax.Store, syntax.Del)):
            n.ctx = syntax.Load()
    return node


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, local_names):
        self.ctx = ctx
        # Only names local to the function are rewritten: assigning a global or a free
        # variable would make it local (and unbound).
        self.local_names = local_names

    def visit_FunctionDef(self, node):
        inner = _Transformer(self.ctx, local_names(node))
        body = []
        for stmt in node.body:
            new = inner.visit(stmt)
            body.extend(new if isinstance(new, list) else [new])
        node.body = body
        return node

    def _update(self, target, method, value):
        """Expression computing the new value of ``target.value`` after the update."""
        container = _as_load(target.value)
        at = syntax.call(f"{self.ctx.ops}.at", [container])
        indexed = syntax.Subscript(value=at, slice=_as_load(target.slice), ctx=syntax.Load())
        new = syntax.call(syntax.attribute(indexed, method), [value])
        if isinstance(target.value, syntax.Subscript):
            return self._update(target.value, "set", new)
        return new

    def _rewrite(self, node, target, method, value):
        root = _root_name(target)
        if root is None or root.id not in self.local_names:
            return node
        new = syntax.assign(syntax.name(root.id, "store"), self._update(target, method, value))
        return syntax.copy_location(new, node)

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            return self._chained(node)
        target = node.targets[0]
        if isinstance(target, syntax.Subscript):
            return self._rewrite(node, target, "set", node.value)
        if isinstance(target, (syntax.Tuple, syntax.List)) and self._has_item_target(target):
            return self._unpack(node, target)
        return node

    def _local_root(self, target) -> bool:
        root = _root_name(target)
        return root is not None and root.id in self.local_names

    def _has_item_target(self, target):
        return any(
            isinstance(e, syntax.Subscript) and self._local_root(e)
            or isinstance(e, (syntax.Tuple, syntax.List)) and self._has_item_target(e)
            for e in target.elts
        )

    def _unpack(self, node, target):
        """``v[i], v[j] = v[j], v[i]`` -> ``value, value_1 = v[j], v[i]`` and one update per
        item target, in order (Python evaluates the right side first, then assigns left to right)."""
        updates = []

        def temps(t):
            if isinstance(t, syntax.Subscript) and self._local_root(t):
                temp = self.ctx.namer.new("value")
                updates.append(self._rewrite(node, t, "set", syntax.name(temp)))
                return syntax.name(temp, "store")
            if isinstance(t, (syntax.Tuple, syntax.List)):
                return type(t)(elts=[temps(e) for e in t.elts], ctx=syntax.Store())
            return t

        unpacked = syntax.copy_location(syntax.assign(temps(target), node.value), node)
        return [unpacked] + updates

    def _chained(self, node):
        """``a[0] = a[1] = x`` -> ``value = x``, then ``a[0] = value`` and ``a[1] = value``,
        each rewritten as a single assignment is: Python evaluates the value once and assigns
        it to the targets from left to right. Left alone without an item target."""
        if not any(isinstance(t, syntax.Subscript) and self._local_root(t)
                   or isinstance(t, (syntax.Tuple, syntax.List)) and self._has_item_target(t) for t in node.targets):
            return node
        temp = self.ctx.namer.new("value")
        out = [syntax.copy_location(syntax.assign(syntax.name(temp, "store"), node.value), node)]
        for target in node.targets:
            one = syntax.copy_location(syntax.assign(target, syntax.name(temp)), node)
            new = self.visit_Assign(one)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def visit_AugAssign(self, node):
        if isinstance(node.target, syntax.Subscript) and type(node.op) in AUG_METHODS:
            return self._rewrite(node, node.target, AUG_METHODS[type(node.op)], node.value)
        return node


def transform(fn_node, ctx):
    return _Transformer(ctx, local_names(fn_node)).visit_FunctionDef(fn_node)
