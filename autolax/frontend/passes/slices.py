"""Slices whose bounds may follow a traced loop index are marked for the runtime
(``autolax.runtime.ops.slices``), which decides at trace time: the plain slice for Python bounds,
a fixed-shape form for traced ones.

    s = A[i, :j] @ A[:j, j]          ->  s = ops.masked('matmul', ops.part(A)[i, :j], ops.part(A)[:j, j])
    t = jnp.sum(L[i, :k] * L[k, :k]) ->  t = ops.masked(jnp.sum, ops.part(L)[i, :k] * ops.part(L)[k, :k])
    u = A[k, :k].sum()               ->  u = ops.masked('sum', ops.part(A)[k, :k])
    A[i, j:] -= A[k, j:] * f         ->  A[i, j:] -= ops.part(A)[k, j:] * f     (then the setitem pass)
    w = x[i:i + K, j:j + K]          ->  w = ops.window(x)[ops.span(i, K), ops.span(j, K)]
    x[m] = x[m] ** -1.5              ->  x[m] = ops.part(x)[m] ** -1.5           (m a boolean mask)

Which consumers are marked (the decision, also in README "The rules"): a slice with a
bound that is not a literal, read directly -- or through elementwise arithmetic
(``+ - * / // % ** & | ^ ~``, unary ``-``, one comparison, a ``jnp.``/``np.`` function call:
the runtime keeps elementwise ones and ``outer`` of two 1-D reads lazy), or sliced again
(``r[:k][::-1]``: ``ops.part(r)[:k][::-1]``, one read) -- by ``@``,
``jnp.dot`` / ``np.dot`` / ``matmul`` / the ``.dot`` method, ``sum`` / ``prod`` / ``max`` / ``amax`` / ``min`` /
``amin`` / ``any`` / ``all`` (a ``jnp.``/``np.`` function with the one argument, or the
method with none), ``jnp.linalg.norm(v)``, the builtin ``sum``; or assigned to (a
write-back). These do not depend on the slice's length, so a full-length computation under a
mask gives Python's value. Any other use (``len``, ``mean``, ``axis=``, a shape, a
concatenation, returning the slice) is left as written: with a traced bound that is JAX's
error, so the loop runs in Python and the ``UnrolledLoopWarning`` names the line.

A slice ``s:s + K`` (the same expression ``s`` twice) is a window wherever it is read or
written. Writes whose index is a comparison (``x[x <= 0.1] = 1.0``), a ``~`` / ``&`` / ``|``
of comparisons, or a name assigned one, read ``x[m]`` on the right lazily too.
Operands beside the marked reads must be plain (names, constants, attributes, items: no
call); the index of a marked read may call (it is evaluated where Python evaluates it, only
the read itself is left to the consumer).
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax

# A slice (read, or written back) or an item assignment (a boolean-mask write).
NEEDS = frozenset({"Slice", "Subscript.Store"})

# Before / after (tests/test_pass_examples.py runs them).
EXAMPLES = (
    (
        """\
        def f(A, k, i, j):
            u = A[k, :k].sum()
            s = A[i, :j] @ A[:j, j]
            return u + s
        """,
        """\
        def f(A, k, i, j):
            u = ops.masked('sum', ops.part(A)[k, :k])
            s = ops.masked('matmul', ops.part(A)[i, :j], ops.part(A)[:j, j])
            return u + s
        """,
    ),
    (
        """\
        def f(x, i, K):
            w = x[i:i + K]
            return w
        """,
        """\
        def f(x, i, K):
            w = ops.window(x)[ops.span(i, K)]
            return w
        """,
    ),
)

_FUNCTIONS = frozenset({"sum", "prod", "max", "amax", "min", "amin", "argmax", "argmin", "any", "all", "norm"})
_PRODUCTS = frozenset({"dot", "matmul"})
_METHODS = frozenset({"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"})
_ELEMENTWISE_OPS = (
    syntax.Add,
    syntax.Sub,
    syntax.Mult,
    syntax.Div,
    syntax.FloorDiv,
    syntax.Mod,
    syntax.Pow,
    syntax.BitAnd,
    syntax.BitOr,
    syntax.BitXor,
)
_COMPARISONS = (syntax.Lt, syntax.LtE, syntax.Gt, syntax.GtE, syntax.Eq, syntax.NotEq)
_MASK_OPS = (syntax.BitAnd, syntax.BitOr, syntax.BitXor)
_MASK_CALLS = frozenset({"isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor"})
_SCOPED = (
    syntax.Lambda,
    syntax.NamedExpr,
    syntax.Yield,
    syntax.YieldFrom,
    syntax.Await,
    syntax.ListComp,
    syntax.SetComp,
    syntax.DictComp,
    syntax.GeneratorExp,
)
_NOT_PLAIN = (
    syntax.Call,
    syntax.Lambda,
    syntax.NamedExpr,
    syntax.Yield,
    syntax.YieldFrom,
    syntax.Await,
    syntax.ListComp,
    syntax.SetComp,
    syntax.DictComp,
    syntax.GeneratorExp,
    syntax.Slice,
    syntax.IfExp,
)


def _literal(node) -> bool:
    if node is None or isinstance(node, syntax.Constant):
        return True
    return (
        isinstance(node, syntax.UnaryOp)
        and isinstance(node.op, (syntax.USub, syntax.UAdd))
        and isinstance(node.operand, syntax.Constant)
    )


def _elements(index):
    return list(index.elts) if isinstance(index, syntax.Tuple) else [index]


def _same(a, b) -> bool:
    return syntax.dump(a) == syntax.dump(b)


def _window_width(sl):
    """``K`` of a slice ``s:s + K`` (or ``s:K + s``), else None."""
    if not isinstance(sl, syntax.Slice) or sl.step is not None or _literal(sl.lower):
        return None
    upper = sl.upper
    if not isinstance(upper, syntax.BinOp) or not isinstance(upper.op, syntax.Add):
        return None
    if _same(upper.left, sl.lower):
        return upper.right
    if _same(upper.right, sl.lower):
        return upper.left
    return None


def _dynamic(sl) -> bool:
    return isinstance(sl, syntax.Slice) and not (_literal(sl.lower) and _literal(sl.upper) and _literal(sl.step))


def _load(node):
    node = syntax.deepcopy(node)
    for n in syntax.walk(node):
        if hasattr(n, "ctx") and isinstance(n.ctx, (syntax.Store, syntax.Del)):
            n.ctx = syntax.Load()
    return node


def _evaluable(node) -> bool:
    """No construct with a scope or an effect on evaluation order (lambda, `:=`, `yield`,
    a comprehension) in ``node``."""
    return not any(isinstance(n, _SCOPED) for n in syntax.walk(node))


def _plain(node) -> bool:
    """No call and no slice with bounds that are not literals anywhere in ``node``."""
    return not any(
        isinstance(n, _NOT_PLAIN) and not (isinstance(n, syntax.Slice) and not _dynamic(n)) for n in syntax.walk(node)
    )


def _spans(index, ops):
    """``index`` with each window ``s:s + K`` as ``ops.span(s, K)``."""
    elements = _elements(index)
    new = []
    for e in elements:
        width = _window_width(e)
        new.append(syntax.call(f"{ops}.span", [e.lower, width]) if width is not None else e)
    if isinstance(index, syntax.Tuple):
        return syntax.Tuple(elts=new, ctx=syntax.Load())
    return new[0]


class _Transformer(syntax.NodeTransformer):
    def __init__(self, ctx, fn_node):
        self.ctx = ctx
        self.ops = ctx.ops
        self.local_names = local_names(fn_node)
        self.masks = _mask_names(fn_node)

    def visit_FunctionDef(self, node):
        inner = _Transformer(self.ctx, node)
        node.body = [inner.visit(s) for s in node.body]
        return node

    # -- reads -------------------------------------------------------------------------------

    def _lazy(self, node, same_index=None):
        """(``node`` with its marked reads as ``ops.part``, whether it has one), or None when
        it is not elementwise arithmetic of reads and plain values."""
        if isinstance(node, syntax.Subscript) and isinstance(node.ctx, syntax.Load):
            elements = _elements(node.slice)
            if isinstance(node.value, syntax.Subscript) and all(
                isinstance(e, syntax.Slice) and self._plain_slice(e) for e in elements
            ):
                inner = self._lazy(node.value, same_index)  # a slice of a marked read: `r[:k][::-1]`
                if inner is not None and inner[1] and isinstance(inner[0], syntax.Subscript):
                    return syntax.Subscript(value=inner[0], slice=node.slice, ctx=syntax.Load()), True
            sliced = any(_dynamic(e) and _window_width(e) is None for e in elements)
            if not sliced and any(_window_width(e) is not None for e in elements):
                return self.visit(syntax.deepcopy(node)), False  # a window: a read of a fixed shape
            marked = sliced or (same_index is not None and _same(node.slice, same_index))
            if marked and _plain(node.value):
                if not all(self._plain_slice(e) for e in elements):
                    return None
                part = syntax.call(f"{self.ops}.part", [node.value])
                return syntax.Subscript(value=part, slice=node.slice, ctx=syntax.Load()), True
        if isinstance(node, syntax.BinOp) and isinstance(node.op, _ELEMENTWISE_OPS):
            left, right = self._lazy(node.left, same_index), self._lazy(node.right, same_index)
            if left is None or right is None or not (left[1] or right[1]):
                return None if left is None or right is None else (node, False)
            return syntax.BinOp(left=left[0], op=node.op, right=right[0]), True
        if isinstance(node, syntax.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _COMPARISONS):
            left, right = self._lazy(node.left, same_index), self._lazy(node.comparators[0], same_index)
            if left is None or right is None or not (left[1] or right[1]):
                return None if left is None or right is None else (node, False)
            return syntax.Compare(left=left[0], ops=node.ops, comparators=[right[0]]), True
        if isinstance(node, syntax.UnaryOp) and isinstance(node.op, (syntax.USub, syntax.UAdd, syntax.Invert)):
            inner = self._lazy(node.operand, same_index)
            if inner is None or not inner[1]:
                return inner if inner is None else (node, False)
            return syntax.UnaryOp(op=node.op, operand=inner[0]), True
        if (
            isinstance(node, syntax.Call)
            and not node.keywords
            and _library_function(node.func)
            and not any(isinstance(a, syntax.Starred) for a in node.args)
        ):
            args = [self._lazy(a, same_index) for a in node.args]
            if any(a is None for a in args) or not any(a[1] for a in args):
                return None if any(a is None for a in args) else (node, False)
            return syntax.call(f"{self.ops}.apply", [node.func] + [a[0] for a in args]), True
        return (node, False) if _plain(node) else None

    @staticmethod
    def _plain_slice(e):
        # An index is evaluated where Python evaluates it (only the read is left to the
        # consumer): calls are fine there (`a[max(x - 1, 0):min(x + 2, n)]`).
        if isinstance(e, syntax.Slice):
            return all(b is None or _evaluable(b) for b in (e.lower, e.upper, e.step))
        return _evaluable(e)

    def _marked(self, node, same_index=None):
        found = self._lazy(node, same_index)
        return found[0] if found is not None and found[1] else None

    def _consumer(self, node):
        """``ops.masked(...)`` for a consumer of marked reads, else None."""
        if isinstance(node, syntax.BinOp) and isinstance(node.op, syntax.MatMult):
            left, right = self._marked(node.left), self._marked(node.right)
            if left is not None and right is not None:
                return syntax.call(f"{self.ops}.masked", [syntax.constant("matmul"), left, right])
            return None
        if not isinstance(node, syntax.Call) or node.keywords or any(isinstance(a, syntax.Starred) for a in node.args):
            return None
        func = node.func
        if isinstance(func, syntax.Attribute) and func.attr == "dot" and len(node.args) == 1:
            value, arg = self._marked(func.value), self._marked(node.args[0])
            if value is not None and arg is not None:  # `a[:j].dot(b[:j])`
                return syntax.call(f"{self.ops}.masked", [syntax.constant("dot"), value, arg])
        if isinstance(func, syntax.Attribute) and func.attr in _METHODS and not node.args:
            value = self._marked(func.value)
            if value is not None:
                return syntax.call(f"{self.ops}.masked", [syntax.constant(func.attr), value])
        if isinstance(func, syntax.Attribute) and _library_function(func):
            if func.attr in _FUNCTIONS and len(node.args) == 1 or func.attr in _PRODUCTS and len(node.args) == 2:
                args = [self._marked(a) for a in node.args]
                if all(a is not None for a in args):
                    return syntax.call(f"{self.ops}.masked", [func] + args)
        if isinstance(func, syntax.Name) and func.id == "sum" and len(node.args) == 1:
            arg = self._marked(node.args[0])
            if arg is not None:
                return syntax.call(f"{self.ops}.masked", [func, arg])
        return None

    def visit_BinOp(self, node):
        new = self._consumer(node)
        if new is not None:
            return syntax.copy_location(new, node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        new = self._consumer(node)
        if new is not None:
            return syntax.copy_location(new, node)
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        if (
            isinstance(node.ctx, syntax.Load)
            and any(_window_width(e) is not None for e in _elements(node.slice))
            and _plain(node.value)
        ):
            index = self.visit(_spans(syntax.deepcopy(node.slice), self.ops))
            window = syntax.call(f"{self.ops}.window", [self.visit(syntax.deepcopy(node.value))])
            return syntax.copy_location(syntax.Subscript(value=window, slice=index, ctx=syntax.Load()), node)
        return self.generic_visit(node)

    # -- writes ------------------------------------------------------------------------------

    def _target(self, target):
        """Is ``target`` an item of a local name that this pass marks (a slice with bounds
        that are not literals, a window, a mask)? Its window slices become spans."""
        if not isinstance(target, syntax.Subscript) or not isinstance(target.value, syntax.Name):
            return None
        if target.value.id not in self.local_names:
            return None
        elements = _elements(target.slice)
        if any(_window_width(e) is not None for e in elements):
            target.slice = _spans(target.slice, self.ops)
            return "window"
        if any(_dynamic(e) for e in elements):
            return "slice"
        if self._mask_like(target.slice):
            return "mask"
        return None

    def _mask_like(self, index) -> bool:
        return _mask_expression(index, self.masks)

    def _write(self, node, target):
        index = _load(target.slice)
        kind = self._target(target)
        if kind in ("slice", "mask"):
            value = self._marked(node.value, index if kind == "mask" else None)
            if value is not None:
                node.value = syntax.copy_location(value, node.value)
                if kind == "mask" and not isinstance(index, syntax.Name) and self._reads_index(value, index):
                    # `x[c > 0] = x[c > 0] * 2`: the mask is computed once, so that the
                    # runtime sees the write and the read go through the same one.
                    temp = self.ctx.namer.new("mask")
                    first = syntax.copy_location(syntax.assign(syntax.name(temp, "store"), index), node)
                    _replace_index(value, index, temp)
                    target.slice = syntax.name(temp)
                    return [first, node]
                return node
        node.value = self.visit(node.value)
        return node

    def _reads_index(self, value, index) -> bool:
        return any(isinstance(n, syntax.Subscript) and _same(n.slice, index) for n in syntax.walk(value))

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], syntax.Subscript):
            return self._hoist(self._write(node, node.targets[0]))
        return self._hoist(self.generic_visit(node))

    def visit_AugAssign(self, node):
        if isinstance(node.target, syntax.Subscript):
            return self._hoist(self._write(node, node.target))
        return self._hoist(self.generic_visit(node))

    def visit_Expr(self, node):
        return self._hoist(self.generic_visit(node))

    def visit_Return(self, node):
        return self._hoist(self.generic_visit(node))

    def _hoist(self, result):
        """A bound written twice among the marked slices of one simple statement
        (`B[i, j] += A[i + 1:, i] @ B[i + 1:, j]`) is computed once before it (`bound = i + 1`),
        so that the runtime sees the same slice and pairs the items where they are (no
        gather, no run-time check of the lengths). Python computes the same value twice."""
        statements = result if isinstance(result, list) else [result]
        node = statements[-1]
        slices = [n.slice for n in syntax.walk(node) if isinstance(n, syntax.Subscript) and _is_part(n.value, self.ops)]
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, syntax.Assign) else None)
        if isinstance(target, syntax.Subscript) and slices:
            slices.append(target.slice)
        bounds = {}
        for index in slices:
            for e in _elements(index):
                if isinstance(e, syntax.Slice):
                    for b in (e.lower, e.upper, e.step):
                        if b is not None and not isinstance(b, syntax.Name) and not _literal(b) and _plain(b):
                            bounds.setdefault(syntax.dump(b), []).append(b)
        repeated = {key: found for key, found in bounds.items() if len(found) > 1}
        if not repeated:
            return result
        names = {key: self.ctx.namer.new("bound") for key in repeated}
        first = [
            syntax.copy_location(syntax.assign(syntax.name(names[key], "store"), syntax.deepcopy(found[0])), node)
            for key, found in repeated.items()
        ]
        for index in slices:
            for e in _elements(index):
                if isinstance(e, syntax.Slice):
                    for field in ("lower", "upper", "step"):
                        b = getattr(e, field)
                        if b is not None and syntax.dump(b) in names:
                            setattr(e, field, syntax.name(names[syntax.dump(b)]))
        return statements[:-1] + first + [node]


# The names a NumPy user's modules go by: a call of anything else may reach the user's own
# code, which the `calls` pass converts (``ops.call``), so it is not marked. (The runtime
# checks the function itself: a name here only decides what is emitted.)
_MODULES = frozenset({"jnp", "np", "numpy", "onp", "jax"})


def _library_function(func) -> bool:
    """``jnp.sum``, ``np.linalg.norm``, the builtin ``abs``."""
    if isinstance(func, syntax.Name):
        return func.id == "abs"
    while isinstance(func, syntax.Attribute):
        func = func.value
    return isinstance(func, syntax.Name) and func.id in _MODULES


def _mask_expression(node, masks=frozenset()) -> bool:
    if isinstance(node, syntax.Compare):
        return True
    if isinstance(node, syntax.Name):
        return node.id in masks
    if isinstance(node, syntax.UnaryOp) and isinstance(node.op, (syntax.Invert, syntax.Not)):
        return _mask_expression(node.operand, masks)
    if isinstance(node, syntax.BinOp) and isinstance(node.op, _MASK_OPS):
        return _mask_expression(node.left, masks) or _mask_expression(node.right, masks)
    if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute):
        return node.func.attr in _MASK_CALLS
    return False


def _is_part(node, ops) -> bool:
    """``ops.part(x)``."""
    return (
        isinstance(node, syntax.Call)
        and isinstance(node.func, syntax.Attribute)
        and node.func.attr == "part"
        and isinstance(node.func.value, syntax.Name)
        and node.func.value.id == ops
    )


def _replace_index(value, index, temp):
    for n in syntax.walk(value):
        if isinstance(n, syntax.Subscript) and _same(n.slice, index):
            n.slice = syntax.name(temp)


def _mask_names(fn_node) -> set[str]:
    """Names the function assigns a comparison (or ``~`` / ``&`` / ``|`` of comparisons)."""
    out = set()
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], syntax.Name):
            if _mask_expression(node.value, out):
                out.add(node.targets[0].id)
    return out


def transform(fn_node, ctx):
    return _Transformer(ctx, fn_node).visit_FunctionDef(fn_node)
