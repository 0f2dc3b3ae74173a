"""Item assignment on a local name becomes a functional update that works on JAX arrays.

    x[i] = v          ->   x = ops.at(x)[i].set(v)
    x[i, j] += v      ->   x = ops.at(x)[i, j].add(v)
    x[i][j] = v       ->   x = ops.at(x)[i].put(ops.at(x[i])[j].set(v))
    x[i] = x[j] = v   ->   value = v; x = ops.at(x)[i].set(value); x = ops.at(x)[j].set(value)
    x[i] += v         ->   x = ops.at(x)[i].steps(('add', v), ('divide', 9.0))
    x[i] /= 9.0            (consecutive updates of one element: one update, see _fold_block)

``ops.at`` uses ``x.at[...]`` for JAX arrays and mutates in place (returning ``x``) for
NumPy arrays, lists, dicts and anything else, so plain Python behaviour is unchanged.
Targets rooted in an attribute (``self.buf[i] = v``, see the attributes pass) or in a name
that is not local to the function (a global or free variable) are left alone.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.updates import AUG_METHODS

# Runs where the function assigns an item, ``x[i] = v`` (``pipeline.features``).
NEEDS = frozenset({"Subscript.Store"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, i, j, v):
            x[i] = v
            x[i, j] += v
            x[i][j] = v
            return x
        """,
        """\
        def f(x, i, j, v):
            x = ops.at(x)[i].set(v)
            x = ops.at(x)[i, j].add(v)
            x = ops.at(x)[i].put(ops.at(x[i])[j].set(v))
            return x
        """,
    ),
    (
        """\
        def f(self, x, i, v):
            BUF[i] = v
            self.buf[i] = v
            x[i] = v
            return x
        """,
        """\
        def f(self, x, i, v):
            BUF[i] = v
            self.buf[i] = v
            x = ops.at(x)[i].set(v)
            return x
        """,
    ),
)


def _is_name(node, name) -> bool:
    return isinstance(node, syntax.Name) and node.id == name


def _root_name(target):
    while isinstance(target, syntax.Subscript):
        target = target.value
    return target if isinstance(target, syntax.Name) else None


# What the index of a read `_unpack` may read again after an update holds (and contexts
# and operators, which have no fields).
_INDEX_NODES = (
    syntax.Name,
    syntax.Constant,
    syntax.Slice,
    syntax.Tuple,
    syntax.BinOp,
    syntax.UnaryOp,
)


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, local_names):
        self.ctx = ctx
        # Only names local to the function are rewritten: assigning a global or a free
        # variable would make it local (and unbound).
        self.local_names = local_names

    def visit_FunctionDef(self, node):
        inner = _Transformer(self.ctx, local_names(node))
        _fold(node, self.ctx, inner.local_names)
        node.body = inner.visit_block(node.body)
        return node

    def _update(self, target, method, value):
        """Expression computing the new value of ``target.value`` after the update."""
        container = syntax.as_load(target.value)
        at = syntax.call(f"{self.ctx.ops}.at", [container])
        indexed = syntax.Subscript(value=at, slice=syntax.as_load(target.slice), ctx=syntax.Load())
        new = syntax.call(syntax.attribute(indexed, method), [value])
        if isinstance(target.value, syntax.Subscript):
            return self._update(target.value, "put", new)  # (Python changes x[i] in place)
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
            isinstance(e, syntax.Subscript)
            and self._local_root(e)
            or isinstance(e, (syntax.Tuple, syntax.List))
            and self._has_item_target(e)
            for e in target.elts
        )

    def _unpack(self, node, target):
        """``v[i], v[j] = v[j], v[i]`` -> ``value, value_1 = v[j], v[i]`` and one update per
        item target, in order (Python evaluates the right side first, then assigns left to right)."""
        updates = []  # (temp, the name the update writes, the update)

        def temps(t):
            if isinstance(t, syntax.Subscript) and self._local_root(t):
                temp = self.ctx.namer.new("value")
                updates.append((temp, _root_name(t).id, self._rewrite(node, t, "set", syntax.name(temp))))
                return syntax.name(temp, "store")
            if isinstance(t, (syntax.Tuple, syntax.List)):
                return type(t)(elts=[temps(e) for e in t.elts], ctx=syntax.Store())
            return t

        unpacked = syntax.copy_location(syntax.assign(temps(target), node.value), node)
        views = self._views(target, node.value, [temp for temp, _, _ in updates])
        written = set()
        for temp, root, update in updates:
            # `a[0], a[1] = a[1], a[0]` of a matrix: NumPy's `a[0]` on the right is a view of
            # the row, which the first update changes before the second stores it: the value
            # is read again where it is stored (`ops.view(a)[0].reread(value_1)`).
            if temp in views and views[temp][0] in written:
                ref = syntax.Subscript(
                    value=syntax.call(f"{self.ctx.ops}.view", [syntax.name(views[temp][0])]),
                    slice=syntax.deepcopy(views[temp][1]),
                    ctx=syntax.Load(),
                )
                reread = syntax.copy_location(syntax.call(syntax.attribute(ref, "reread"), [syntax.name(temp)]), node)
                update.value.args = [reread if _is_name(a, temp) else a for a in update.value.args]
            written.add(root)
        return [unpacked] + [update for _, _, update in updates]

    def _views(self, target, value, temps) -> dict:
        """``temp -> (name, index)`` for the items of ``value`` that read an item of a local
        name (``a[i]``, maybe a NumPy view) and go to an item target (``temps``, in order),
        where the targets are a flat tuple as long as ``value``'s and the index reads names
        and constants only, none of them a target."""
        if not (
            isinstance(value, (syntax.Tuple, syntax.List))
            and len(value.elts) == len(target.elts)
            and not any(isinstance(e, (syntax.Tuple, syntax.List, syntax.Starred)) for e in target.elts)
        ):
            return {}
        assigned = {e.id for e in target.elts if isinstance(e, syntax.Name)}
        views, remaining = {}, iter(temps)
        for t, v in zip(target.elts, value.elts):
            temp = next(remaining) if isinstance(t, syntax.Subscript) and self._local_root(t) else None
            if temp is None or not (
                isinstance(v, syntax.Subscript) and isinstance(v.value, syntax.Name) and v.value.id in self.local_names
            ):
                continue
            index = list(syntax.walk(v.slice))
            if all(isinstance(n, _INDEX_NODES) or not n._fields for n in index) and not assigned & {
                n.id for n in index if isinstance(n, syntax.Name)
            }:
                views[temp] = (v.value.id, v.slice)
        return views

    def _chained(self, node):
        """``a[0] = a[1] = x`` -> ``value = x``, then ``a[0] = value`` and ``a[1] = value``,
        each rewritten as a single assignment is: Python evaluates the value once and assigns
        it to the targets from left to right. Left alone without an item target."""
        if not any(
            isinstance(t, syntax.Subscript)
            and self._local_root(t)
            or isinstance(t, (syntax.Tuple, syntax.List))
            and self._has_item_target(t)
            for t in node.targets
        ):
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


# What may stand in the index of folded updates (evaluated once, it must not change or fail
# between them) and in the values of the updates after the first (evaluated before the first
# update is stored: nothing in them may fail, have an effect or read the array); their names
# must be locals only the function's own statements rebind (`_stable_names`).
_PURE = (
    syntax.Name,
    syntax.Constant,
    syntax.BinOp,
    syntax.UnaryOp,
    syntax.Tuple,
    syntax.Slice,
    syntax.Load,
    syntax.USub,
    syntax.UAdd,
    syntax.Invert,
    *AUG_METHODS,
)


def _pure(node, array: str, stable) -> bool:
    """Made of ``_PURE`` nodes, reading names in ``stable`` other than ``array``."""
    return all(
        isinstance(n, _PURE) and not (isinstance(n, syntax.Name) and (n.id == array or n.id not in stable))
        for n in syntax.walk(node)
    )


def _stable_names(fn_node, local) -> set:
    """The function's local names that only its own statements can rebind: not a global (a
    call could rebind it between two statements) nor a name a nested function declares
    ``nonlocal``."""
    rebound = {name for n in syntax.walk(fn_node) if isinstance(n, syntax.Nonlocal) for name in n.names}
    return set(local) - rebound


def _same_element(stmt, local, stable):
    """(array name, index, method, value) of ``a[idx] = v`` / ``a[idx] op= v`` on a local
    array name with a pure index, else None."""
    if isinstance(stmt, syntax.Assign) and len(stmt.targets) == 1:
        target, method = stmt.targets[0], "set"
    elif isinstance(stmt, syntax.AugAssign) and type(stmt.op) in AUG_METHODS:
        target, method = stmt.target, AUG_METHODS[type(stmt.op)]
    else:
        return None
    if not (
        isinstance(target, syntax.Subscript)
        and isinstance(target.value, syntax.Name)
        and target.value.id in local
        and _pure(target.slice, target.value.id, stable)
    ):
        return None
    return target.value.id, syntax.dump(syntax.as_load(target.slice)), method, stmt.value


def _fold_block(stmts, ctx, local, stable):
    """Consecutive updates of one element (``A[i, j] += s; A[i, j] /= 9.0``) as one:
    ``A = ops.at(A)[i, j].steps(('add', s), ('divide', 9.0))``, when the index is pure and
    the values after the first are too and do not read the array (they are then evaluated
    before the first update is stored, which nothing can tell)."""
    out, k = [], 0
    while k < len(stmts):
        first = _same_element(stmts[k], local, stable)
        run = [stmts[k]]
        if first is not None:
            while k + len(run) < len(stmts):
                nxt = _same_element(stmts[k + len(run)], local, stable)
                if nxt is None or nxt[:2] != first[:2] or not _pure(nxt[3], first[0], stable):
                    break
                run.append(stmts[k + len(run)])
        if len(run) > 1 and any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(run[0].value)):
            run = run[:1]  # `A[i] += (i := k)`: the next statement's index is another element
        if len(run) == 1:
            out.append(stmts[k])
            k += 1
            continue
        target = run[0].targets[0] if isinstance(run[0], syntax.Assign) else run[0].target
        at = syntax.call(f"{ctx.ops}.at", [syntax.as_load(target.value)])
        indexed = syntax.Subscript(value=at, slice=syntax.as_load(target.slice), ctx=syntax.Load())
        steps = [
            syntax.Tuple(elts=[syntax.constant(_same_element(s, local, stable)[2]), s.value], ctx=syntax.Load())
            for s in run
        ]
        new = syntax.assign(syntax.name(first[0], "store"), syntax.call(syntax.attribute(indexed, "steps"), steps))
        out.append(syntax.copy_location(new, run[0]))
        k += len(run)
    return out


def _fold(node, ctx, local, stable=None):
    """``_fold_block`` in every statement block of ``node`` (a function) outside nested
    scopes."""
    if stable is None:
        stable = _stable_names(node, local)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], syntax.stmt):
            for stmt in block:
                if not isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
                    _fold(stmt, ctx, local, stable)
            setattr(node, field, _fold_block(block, ctx, local, stable))
    for handler in getattr(node, "handlers", None) or []:
        _fold(handler, ctx, local, stable)
    for case in getattr(node, "cases", None) or []:
        _fold(case, ctx, local, stable)


def transform(fn_node, ctx):
    return _Transformer(ctx, local_names(fn_node)).visit_FunctionDef(fn_node)
