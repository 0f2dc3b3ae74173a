"""``--standalone``: expressions, and the ``ops.*`` calls inside them.

    ops.and_(a < b, lambda: c)        ->   jnp.logical_and(a < b, c)       (traced)
                                      ->   a < b and c                     (static)
    ops.if_else(c, lambda: a, lambda: b)  ->  jax.lax.cond(c, lambda: a, lambda: b)
    ops.call(helper, x)               ->   helper(x)
    ops.print('x =', x)               ->   jax.debug.print('x = {}', x, ordered=True)

Each expression is lowered together with its ``Val`` (what is known about its value).
"""

from __future__ import annotations

import builtins
import types
from dataclasses import replace

from autolax.sourcegen.module import LibraryRef
from autolax.sourcegen.standalone.patterns import at_chain, is_shape
from autolax.sourcegen.standalone.values import (
    CONTAINER_BUILTINS,
    CONTAINER_METHODS,
    JAX_BOOL,
    JAX_STATIC,
    KIND_BUILTINS,
    STATIC,
    STATIC_ATTRS,
    STATIC_BUILTINS,
    TRACED,
    Val,
    binop,
    casts,
    item_of,
    join_kinds,
    kind_of_constant,
    staged_output,
)
from autolax.transpile import syntax


class Expressions:
    """Expression lowering, mixed into ``Lowering``."""

    # ------------------------------------------------------------------ expressions
    def expr(self, e, scope, truth=False):
        """(lowered expression, Val); ``truth``: the value is used for its truth (a test)."""
        node, val = self._expr(e, scope, truth)
        if truth and val.container:  # a list's truth is its length: static
            val = Val(kind="bool")
        return node, val

    def _expr(self, e, scope, truth):
        if isinstance(e, syntax.Call):
            op = self.op_of(e)
            if op is not None:
                handler = getattr(self, f"op_{op.rstrip('_')}", None)
                if handler is None:
                    raise self.error(e, f"`{self.ops}.{op}` has no standalone form")
                return handler(e, scope, truth)
            if at_chain(e, self.ops) is not None:
                return self.at_expr(at_chain(e, self.ops), scope)
            return self.call(e, scope)
        if isinstance(e, syntax.Name):
            return e, scope.get(e.id)
        if isinstance(e, syntax.Constant):
            return e, Val(kind=kind_of_constant(e.value))
        if isinstance(e, syntax.Attribute):
            e.value, val = self.expr(e.value, scope)
            if e.attr in STATIC_ATTRS:
                return e, Val(kind=STATIC_ATTRS[e.attr], container=e.attr == "shape")
            return e, Val(traced=val.traced)
        if isinstance(e, syntax.Subscript):
            e.value, a = self.expr(e.value, scope)
            e.slice, b = self.expr(e.slice, scope)
            if a.elts is not None and isinstance(e.slice, syntax.Constant) and isinstance(e.slice.value, int):
                if -len(a.elts) <= e.slice.value < len(a.elts):
                    return e, a.elts[e.slice.value]
            if not a.traced and not b.traced and is_shape(e.value):
                return e, Val(kind="int")
            return e, Val(traced=a.traced or b.traced, weak=a.weak)
        if isinstance(e, syntax.BinOp):
            e.left, a = self.expr(e.left, scope)
            e.right, b = self.expr(e.right, scope)
            return e, binop(a, b, e.op)
        if isinstance(e, syntax.UnaryOp):
            e.operand, a = self.expr(e.operand, scope, truth=isinstance(e.op, syntax.Not))
            if isinstance(e.op, syntax.Not):
                return e, Val(traced=a.traced, kind="bool")
            return e, replace(a, container=False, elts=None, kind="int" if a.kind == "bool" else a.kind)
        if isinstance(e, syntax.Compare):
            e.left, a = self.expr(e.left, scope)
            vals = [a]
            for i, c in enumerate(e.comparators):
                e.comparators[i], v = self.expr(c, scope)
                vals.append(v)
            if all(isinstance(op, (syntax.Is, syntax.IsNot)) for op in e.ops):
                return e, Val(kind="bool")
            return e, Val(traced=any(v.traced for v in vals), kind="bool")
        if isinstance(e, syntax.Lambda):
            values = {p: TRACED for p in syntax.param_names(e.args)}
            e.body, _ = self.expr(e.body, scope.child(values))
            return e, STATIC
        if isinstance(e, (syntax.Tuple, syntax.List, syntax.Set)):
            vals = []
            for i, elt in enumerate(e.elts):
                e.elts[i], v = self.expr(elt, scope)
                vals.append(v)
            elts = tuple(vals) if isinstance(e, syntax.Tuple) and not any(isinstance(x, syntax.Starred) for x in e.elts) else None
            return e, Val(traced=any(v.traced for v in vals), container=True, elts=elts)
        if isinstance(e, syntax.Dict):
            traced = False
            for field in ("keys", "values"):
                items = getattr(e, field)
                for i, x in enumerate(items):
                    if x is not None:
                        items[i], v = self.expr(x, scope)
                        traced = traced or v.traced
            return e, Val(traced=traced, container=True)
        if isinstance(e, (syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)):
            inner = scope.child({})
            traced = False
            for gen in e.generators:
                gen.iter, v = self.expr(gen.iter, inner)
                traced = traced or v.traced
                self.bind(gen.target, item_of(v), inner)
                for i, cond in enumerate(gen.ifs):
                    gen.ifs[i], _ = self.expr(cond, inner, truth=True)
            for field in ("elt", "key", "value"):
                if getattr(e, field, None) is not None:
                    new, v = self.expr(getattr(e, field), inner)
                    setattr(e, field, new)
                    traced = traced or v.traced
            return e, Val(traced=traced, container=True)
        if isinstance(e, syntax.NamedExpr):
            e.value, val = self.expr(e.value, scope)
            scope.set(e.target.id, val)
            return e, val
        if isinstance(e, syntax.Starred):
            e.value, val = self.expr(e.value, scope)
            return e, val
        if isinstance(e, syntax.IfExp):
            e.test, t = self.expr(e.test, scope, truth=True)
            e.body, a = self.expr(e.body, scope)
            e.orelse, b = self.expr(e.orelse, scope)
            return e, a.join(b) if not t.traced else TRACED
        if isinstance(e, syntax.Slice):
            traced = False
            for field in ("lower", "upper", "step"):
                if getattr(e, field) is not None:
                    new, v = self.expr(getattr(e, field), scope)
                    setattr(e, field, new)
                    traced = traced or v.traced
            return e, Val(traced=traced)
        self.generic(e, scope)
        return e, STATIC  # strings (f-strings show a tracer's repr, as under jax.jit)

    def generic(self, node, scope):
        for field, value in syntax.iter_fields(node):
            if isinstance(value, syntax.expr):
                setattr(node, field, self.expr(value, scope)[0])
            elif isinstance(value, list):
                for i, x in enumerate(value):
                    if isinstance(x, syntax.expr):
                        value[i] = self.expr(x, scope)[0]
                    elif isinstance(x, syntax.keyword):
                        x.value = self.expr(x.value, scope)[0]

    def call(self, e, scope):
        e.func, fval = self.expr(e.func, scope)
        vals = []
        for i, a in enumerate(e.args):
            e.args[i], v = self.expr(a, scope)
            vals.append(v)
        for kw in e.keywords:
            kw.value, v = self.expr(kw.value, scope)
            vals.append(v)
        traced = any(v.traced for v in vals)
        value = self.static_value(e.func, scope)
        if isinstance(value, types.BuiltinFunctionType) or isinstance(value, type) and getattr(builtins, getattr(value, "__name__", ""), None) is value:
            name = value.__name__
            if name in STATIC_BUILTINS:
                return e, Val(kind=STATIC_BUILTINS[name])
            if name in CONTAINER_BUILTINS:
                return e, Val(traced=traced, container=True)
            if name in KIND_BUILTINS:
                return e, Val(traced=traced, kind=KIND_BUILTINS[name])
            kind = None
            for v in vals:
                kind = v.kind if kind is None else join_kinds(kind, v.kind)
            return e, Val(traced=traced, kind=kind if name in ("abs", "min", "max", "sum", "round", "pow") else None)
        if isinstance(value, LibraryRef):  # known by its import path only (nothing is imported)
            module, _, name = value.__name__.rpartition(".")
        else:
            module = getattr(value, "__module__", None) or getattr(value, "__name__", None) if value is not None else None
            name = getattr(value, "__name__", "")
        if module and module.split(".")[0] in ("jax", "jaxlib"):
            if name in JAX_STATIC:
                return e, STATIC
            if name == "tree_leaves":
                return e, Val(traced=traced, container=True)
            return e, Val(traced=True, kind="bool" if name in JAX_BOOL else None)
        if isinstance(e.func, syntax.Attribute) and value is None:
            if e.func.attr in CONTAINER_METHODS:
                return e, Val(traced=fval.traced or traced, container=True)
            return e, Val(traced=fval.traced or traced)
        return e, Val(traced=traced or fval.traced)

    def static_value(self, node, scope):
        """The library object a callee names (``jnp.sum``, ``len``), or None."""
        if isinstance(node, syntax.Name):
            if scope.bound(node.id):
                return None
            value = self.ctx.resolve(node.id)
            return None if value is self.ctx.MISSING else value
        if isinstance(node, syntax.Attribute):
            base = self.static_value(node.value, scope)
            if isinstance(base, types.ModuleType):
                value = getattr(base, node.attr, None)
                return value
        return None

    # ------------------------------------------------------------------ ops in expressions
    def op_and(self, e, scope, truth):
        return self.logical(e, scope, truth, "and")

    def op_or(self, e, scope, truth):
        return self.logical(e, scope, truth, "or")

    def logical(self, e, scope, truth, which):
        operands = [e.args[0]] + [lam.body for lam in e.args[1:]]
        lowered = [self.expr(o, scope, truth) for o in operands]
        first_traced = next((i for i, (_, v) in enumerate(lowered) if v.traced), None)
        py_op = syntax.And() if which == "and" else syntax.Or()
        if first_traced is None:
            kind = lowered[0][1].kind
            for _, v in lowered[1:]:
                kind = kind if kind == v.kind else None
            new = syntax.BoolOp(op=py_op, values=[n for n, _ in lowered])
            return syntax.copy_location(new, e), Val(kind=kind)
        head, tail = lowered[:first_traced], lowered[first_traced:]
        node, val = tail[0]
        for other, oval in tail[1:]:
            if truth or (val.kind == "bool" and oval.kind == "bool"):
                node = self.jnp(f"logical_{which}", [node, other])
                val = Val(traced=True, kind="bool")
            elif isinstance(node, (syntax.Name, syntax.Constant)):
                args = [node, other, syntax.deepcopy(node)] if which == "and" else [node, syntax.deepcopy(node), other]
                node = self.jnp("where", args)
                val = Val(traced=True)
            else:
                raise self.error(e, f"`{which}` of traced values that may not be booleans, used as a value; "
                                    f"--standalone writes it with jnp.where only when the first operand is a name "
                                    f"(bind it to a variable first)")
        if head:
            node = syntax.BoolOp(op=py_op, values=[n for n, _ in head] + [node])
            val = Val(traced=True, kind="bool" if val.kind == "bool" and all(v.kind == "bool" for _, v in head) else None)
        return syntax.copy_location(node, e), val

    def op_not(self, e, scope, truth):
        operand, val = self.expr(e.args[0], scope, truth=True)
        if not val.traced:
            return syntax.copy_location(syntax.unary_not(operand), e), Val(kind="bool")
        return syntax.copy_location(self.jnp("logical_not", [operand]), e), Val(traced=True, kind="bool")

    def op_if_else(self, e, scope, truth):
        test, a_fn, b_fn = e.args
        test, tval = self.expr(test, scope, truth=True)
        a, aval = self.expr(a_fn.body, scope, truth)
        b, bval = self.expr(b_fn.body, scope, truth)
        if not tval.traced:
            return syntax.copy_location(syntax.IfExp(test=test, body=a, orelse=b), e), aval.join(bval)
        kind_a, kind_b = casts(aval, bval)
        if kind_a is not None:
            a = self.as_array(a, kind_a)
        if kind_b is not None:
            b = self.as_array(b, kind_b)
        new = syntax.call(self.ref("jax.lax.cond"), [test, syntax.lambda_(a), syntax.lambda_(b)])
        return syntax.copy_location(new, e), staged_output(aval, bval, kind_a, kind_b)

    def op_call(self, e, scope, truth):
        new = syntax.Call(func=e.args[0], args=e.args[1:], keywords=e.keywords)
        return self.call(syntax.copy_location(new, e), scope)

    def op_stacked(self, e, scope, truth):
        return self.expr(e.args[0], scope, truth)

    def op_enumerate(self, e, scope, truth):
        e.func = syntax.copy_location(syntax.name("enumerate"), e.func)
        return self.call(e, scope)

    def op_zip(self, e, scope, truth):
        e.func = syntax.copy_location(syntax.name("zip"), e.func)
        return self.call(e, scope)

    def op_append(self, e, scope, truth):
        raise self.error(e, "a list append used as a value")

    def op_print(self, e, scope, truth):
        vals = []
        for i, a in enumerate(e.args):
            e.args[i], v = self.expr(a, scope)
            vals.append(v)
        for kw in e.keywords:
            kw.value, _ = self.expr(kw.value, scope)
        if not any(v.traced for v in vals):
            e.func = syntax.copy_location(syntax.name("print"), e.func)
            return e, STATIC
        keywords = {kw.arg: kw.value for kw in e.keywords}
        sep = keywords.pop("sep", syntax.constant(" "))
        if keywords or any(isinstance(a, syntax.Starred) for a in e.args) or not (
            isinstance(sep, syntax.Constant) and isinstance(sep.value, str)
        ):
            raise self.error(e, "`print` of traced values with `end`, `file`, `flush`, a non-constant `sep` or "
                                "*args has no jax.debug.print form")
        parts, args = [], []
        for a in e.args:
            if isinstance(a, syntax.Constant) and isinstance(a.value, str):
                parts.append(a.value.replace("{", "{{").replace("}", "}}"))
            else:
                parts.append("{}")
                args.append(a)
        fmt = sep.value.replace("{", "{{").replace("}", "}}").join(parts)
        new = syntax.call(self.ref("jax.debug.print"), [syntax.constant(fmt)] + args, {"ordered": syntax.constant(True)})
        return syntax.copy_location(new, e), STATIC
