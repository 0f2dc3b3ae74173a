"""``--standalone``: statements -- the entry point, ``if``, item and attribute assignment."""

from __future__ import annotations

from autolax.errors import ConversionError
from autolax.sourcegen.standalone import breaks
from autolax.sourcegen.standalone.expressions import Expressions
from autolax.sourcegen.standalone.loops import Loops
from autolax.sourcegen.standalone.patterns import (
    OP_OF_METHOD,
    assigned_names,
    at_chain,
    python_if,
    restore_target,
    without_return,
    wrap_returned,
)
from autolax.sourcegen.standalone.values import (
    NUMERIC,
    STATIC,
    TRACED,
    UNDEFINED,
    Scope,
    Val,
    binop,
    casts,
    is_container_annotation,
    item_of,
    kind_of_constant,
    staged_output,
)
from autolax.transpile import syntax


class Refs:
    """How the output file spells ``jax``, ``jax.lax`` and ``jax.numpy`` (and which imports
    it needs for that)."""

    def __init__(self, module, local_names):
        self.module = module
        self.local_names = set(local_names)
        self.needed_imports: set = set()

    def __call__(self, target: str) -> str:
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            name = self.module.imported_as(".".join(parts[:i]))
            if name is not None and name not in self.local_names:
                return ".".join([name] + parts[i:])
        if "jax" in self.local_names:
            raise ConversionError(
                "a local variable named 'jax' hides the jax module the --standalone output needs; rename it",
                filename=self.module.path,
            )
        self.needed_imports.add(parts[0])
        return target


class Lowering(Expressions, Loops):
    """Lowers the ops calls of one converted function (``converted.node``) in place."""

    def __init__(self, converted, module, refs: Refs, static_params, is_method: bool):
        self.ctx = converted.ctx
        self.fn = converted.node
        self.module = module
        self.refs = refs
        self.ops = self.ctx.ops
        self.generated = set(self.ctx.namer.generated)
        self.static_params = set(static_params)
        self.is_method = is_method
        self.final = True
        self._carry = None

    # ------------------------------------------------------------------ entry
    def run(self):
        _drop_descriptors(self.fn, self.ops)
        params = syntax.param_names(self.fn.args)
        values = {}
        for i, p in enumerate(params):
            static = p in self.static_params or (self.is_method and i == 0 and p in ("self", "cls"))
            values[p] = STATIC if static else self._param_val(p)
        self.fn.body = self.block(self.fn.body, Scope(None, values))
        flags = {name for name, what in self.ctx.descriptions.items() if what == "the `break` flag"}
        breaks.restore(self.fn, flags)
        return self.fn

    def _param_val(self, name):
        """Traced; a Python container if annotated so; maybe a Python number (weakly typed)
        if its default is one (``jax.jit`` does not trace defaults)."""
        args = self.fn.args
        positional = args.posonlyargs + args.args
        defaults = dict(zip([a.id for a in positional[len(positional) - len(args.defaults):]], args.defaults))
        defaults.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        for a in positional + args.kwonlyargs:
            if a.id == name and a.annotation is not None and is_container_annotation(a.annotation):
                return Val(traced=True, container=True)
        default = defaults.get(name)
        if isinstance(default, syntax.Constant) and kind_of_constant(default.value) in ("int", "float", "complex"):
            return Val(traced=True, kind=kind_of_constant(default.value), weak=True)
        if args.vararg is not None and args.vararg.id == name or args.kwarg is not None and args.kwarg.id == name:
            return Val(traced=True, container=True)
        return TRACED

    # ------------------------------------------------------------------ helpers
    def error(self, node, reason, runtime_hint=True):
        lineno = getattr(node, "lineno", None)
        hint = " (drop --standalone to use the autolax runtime)" if runtime_hint else ""
        return ConversionError(
            f"{reason}{hint}",
            filename=self.ctx.filename,
            lineno=lineno,
            col=getattr(node, "col_offset", None),
        )

    def op_of(self, node):
        """``'cond'`` for a call ``ops.cond(...)``, else None."""
        if (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and isinstance(node.func.value, syntax.Name)
            and node.func.value.id == self.ops
        ):
            return node.func.attr
        return None

    def ref(self, target: str):
        return syntax.dotted(self.refs(target))

    def jnp(self, fn_name: str, args, keywords=None):
        return syntax.call(self.ref(f"jax.numpy.{fn_name}"), args, keywords)

    def carry_name(self):
        if self._carry is None:
            self._carry = self.ctx.namer.new("carry")
        return self._carry

    def dry(self, fn, *args):
        """Runs an analysis on copies, without raising errors (a loop's fixed point)."""
        saved, self.final = self.final, False
        try:
            return fn(*args)
        finally:
            self.final = saved

    # ------------------------------------------------------------------ statements
    def block(self, stmts, scope):
        out, pending = [], {}
        for s in stmts:
            if isinstance(s, syntax.FunctionDef) and s.name in self.generated:
                pending[s.name] = s
                continue
            out.extend(self.stmt(s, scope, pending))
        return out

    def stmt(self, s, scope, pending):
        value = getattr(s, "value", None) if isinstance(s, (syntax.Assign, syntax.Expr)) else None
        op = self.op_of(value)
        if op in ("cond", "while_loop", "for_range", "for_iter"):
            return getattr(self, op)(s, value, scope, pending)
        if op == "undefined" and isinstance(s, syntax.Assign):
            scope.set(s.targets[0].id, UNDEFINED)
            return []
        if op == "append" and isinstance(s, syntax.Assign):
            lst, item = value.args
            item, ival = self.expr(item, scope)
            new = syntax.expr_stmt(syntax.call(syntax.attribute(lst, "append"), [item]))
            scope.set(lst.id, Val(traced=scope.get(lst.id).traced or ival.traced, container=True))
            return [syntax.copy_location(new, s)]
        if isinstance(s, syntax.Assign) and at_chain(value, self.ops) is not None:
            return self.setitem(s, scope)
        if op == "setattr" and isinstance(s, syntax.Assign):
            return [syntax.copy_location(self.setattr(value, scope), s)]
        if isinstance(s, syntax.FunctionDef):
            self.user_function(s, scope)
            return [s]
        if isinstance(s, syntax.Assign):
            s.value, val = self.expr(s.value, scope)
            for t in s.targets:
                self.bind(t, val, scope)
            return [s]
        if isinstance(s, syntax.AnnAssign):
            if s.value is not None:
                s.value, val = self.expr(s.value, scope)
                self.bind(s.target, val, scope)
            return [s]
        if isinstance(s, syntax.AugAssign):
            s.value, val = self.expr(s.value, scope)
            if isinstance(s.target, syntax.Name):
                old = scope.get(s.target.id)
                scope.set(s.target.id, binop(old, val, s.op))
            else:
                self.target_parts(s.target, scope)
            return [s]
        if isinstance(s, (syntax.Expr, syntax.Return)):
            if s.value is not None:
                s.value, _ = self.expr(s.value, scope)
            return [s]
        if isinstance(s, (syntax.If, syntax.While)):
            s.test, _ = self.expr(s.test, scope, truth=True)
            s.body, s.orelse = self.block(s.body, scope), self.block(s.orelse, scope)
            return [s]
        if isinstance(s, syntax.For):
            s.iter, val = self.expr(s.iter, scope)
            self.bind(s.target, item_of(val), scope)
            s.body, s.orelse = self.block(s.body, scope), self.block(s.orelse, scope)
            return [s]
        if isinstance(s, syntax.With):
            for item in s.items:
                item.context_expr, val = self.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, val, scope)
            s.body = self.block(s.body, scope)
            return [s]
        if isinstance(s, syntax.Try):
            for field in ("body", "orelse", "finalbody"):
                setattr(s, field, self.block(getattr(s, field), scope))
            for handler in s.handlers:
                handler.body = self.block(handler.body, scope)
            return [s]
        self.generic(s, scope)
        return [s]

    def user_function(self, s, scope):
        """A nested ``def`` of the user's: its parameters are traced."""
        values = {p: TRACED for p in syntax.param_names(s.args)}
        s.body = self.block(s.body, scope.child(values))
        scope.set(s.name, STATIC)

    def bind(self, target, val, scope):
        if isinstance(target, syntax.Name):
            scope.set(target.id, val)
        elif isinstance(target, (syntax.Tuple, syntax.List)):
            elts = val.elts if val.elts is not None and len(val.elts) == len(target.elts) else None
            for i, elt in enumerate(target.elts):
                self.bind(elt, elts[i] if elts else item_of(val), scope)
        elif isinstance(target, syntax.Starred):
            self.bind(target.value, Val(traced=val.traced, container=True), scope)
        else:
            self.target_parts(target, scope)

    def target_parts(self, target, scope):
        """Lowers the expressions inside an assignment target (``self.buf[f(i)] = v``)."""
        if isinstance(target, syntax.Subscript):
            target.value, _ = self.expr(target.value, scope)
            target.slice, _ = self.expr(target.slice, scope)
        elif isinstance(target, syntax.Attribute):
            target.value, _ = self.expr(target.value, scope)

    # ------------------------------------------------------------------ x[i] = v
    def setitem(self, s, scope):
        chain = at_chain(s.value, self.ops)
        root = s.targets[0].id
        val = scope.get(root)
        if val.traced and not val.container:
            s.value, _ = self.at_expr(chain, scope)
            return [s]
        container, index, method, value = restore_target(chain, self.ops)
        container, _ = self.expr(container, scope)
        index, _ = self.expr(index, scope)
        value, _ = self.expr(value, scope)
        target = syntax.Subscript(value=container, slice=index, ctx=syntax.Store())
        if method == "set":
            new = syntax.assign(target, value)
        else:
            new = syntax.AugAssign(target=target, op=OP_OF_METHOD[method](), value=value)
        return [syntax.copy_location(new, s)]

    def at_expr(self, chain, scope):
        container, index, method, value = chain
        container, cval = self.expr(container, scope)
        index, _ = self.expr(index, scope)
        inner = at_chain(value, self.ops)
        value, _ = self.at_expr(inner, scope) if inner is not None else self.expr(value, scope)
        at = syntax.Subscript(value=syntax.attribute(syntax.deepcopy(container), "at"), slice=index, ctx=syntax.Load())
        if method != "set":
            current = syntax.Subscript(value=syntax.deepcopy(container), slice=syntax.deepcopy(index), ctx=syntax.Load())
            value = syntax.BinOp(left=current, op=OP_OF_METHOD[method](), right=value)
        return syntax.call(syntax.attribute(at, "set"), [value]), Val(traced=True)

    def setattr(self, call, scope):
        """``p.x = v`` from ``p = ops.setattr(p, 'x', v)`` (``p.x += v`` for ``op='add'``;
        ``p.q.x = v`` and ``p.w = p.w.at[i].set(v)`` for nested updates): objects are
        updated in place, as in Python; an array attribute gets a functional update."""
        obj, name, value = call.args[:3]
        ops = {kw.arg: kw.value for kw in call.keywords}
        obj, oval = self.expr(obj, scope)
        attribute = syntax.Attribute(value=obj, attr=name.value, ctx=syntax.Load())
        method = ops["op"].value if "op" in ops else None
        inner_op = self.op_of(value)
        if method is None and inner_op == "setattr" and syntax.dump(value.args[0]) == syntax.dump(attribute):
            return self.setattr(value, scope)
        chain = at_chain(value, self.ops) if method is None else None
        if chain is not None and syntax.dump(chain[0]) == syntax.dump(attribute) and not oval.traced:
            container, index, method, value = restore_target(chain, self.ops)
            target = syntax.Subscript(value=self.expr(container, scope)[0], slice=self.expr(index, scope)[0], ctx=syntax.Store())
        else:
            target = syntax.Attribute(value=obj, attr=name.value, ctx=syntax.Store())
        value, _ = self.expr(value, scope)
        if method in (None, "set"):
            return syntax.assign(target, value)
        return syntax.AugAssign(target=target, op=OP_OF_METHOD[method](), value=value)

    # ------------------------------------------------------------------ if
    def cond(self, s, call, scope, pending):
        test, t_ref, f_ref, *operands = call.args
        t_def, f_def = pending.pop(t_ref.id), pending.pop(f_ref.id)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        out_names = assigned_names(targets)
        test, tval = self.expr(test, scope, truth=True)
        if not tval.traced:
            t_scope, f_scope = scope.copy(), scope.copy()
            body = self.block(without_return(t_def.body), t_scope)
            orelse = self.block(without_return(f_def.body), f_scope)
            scope.merge(t_scope, f_scope)
            return [python_if(test, body, orelse, t_def)]
        params = [o.id for o in operands]
        if self.final:
            for n in params:
                if scope.get(n).undefined:
                    raise self.error(t_def, f"'{n}' is assigned in only one branch of this `if`, whose test is "
                                            f"traced, and used after it; assign '{n}' before the `if`",
                                     runtime_hint=False)
            self.check_appends([t_def, f_def], out_names, t_def, "this `if`, which stages to jax.lax.cond")
        t_scope = scope.child({p: scope.get(p) for p in params})
        f_scope = scope.child({p: scope.get(p) for p in params})
        t_def.body = self.block(t_def.body, t_scope)
        f_def.body = self.block(f_def.body, f_scope)
        t_vals = [t_scope.get(n) for n in out_names]
        f_vals = [f_scope.get(n) for n in out_names]
        for n, val in zip(out_names, self.unify_returns(t_def, f_def, out_names, t_vals, f_vals)):
            scope.set(n, val)
        new = syntax.call(self.ref("jax.lax.cond"), [test, syntax.name(t_def.name), syntax.name(f_def.name)] + operands)
        stmt = syntax.assign(targets, new) if targets is not None else syntax.expr_stmt(new)
        return [t_def, f_def, syntax.copy_location(stmt, s)]

    def unify_returns(self, t_def, f_def, names, t_vals, f_vals):
        """``lax.cond`` needs both branches to return equal types, weak types included: a
        Python number returned where the other branch returns an array becomes an array of
        its kind's default dtype. Returns the Vals of the outputs."""
        out = []
        for i, (a, b) in enumerate(zip(t_vals, f_vals)):
            cast_a, cast_b = casts(a, b)
            if cast_a is not None:
                wrap_returned(t_def, i, len(names), lambda e, k=cast_a: self.as_array(e, k))
            if cast_b is not None:
                wrap_returned(f_def, i, len(names), lambda e, k=cast_b: self.as_array(e, k))
            out.append(staged_output(a, b, cast_a, cast_b))
        return out

    def as_array(self, node, kind):
        return self.jnp("asarray", [node], {"dtype": syntax.name(kind)})

    def check_appends(self, fn_defs, names, where, what):
        for fn_def in fn_defs:
            for node in syntax.walk(fn_def):
                if self.op_of(node) == "append" and isinstance(node.args[0], syntax.Name) and node.args[0].id in names:
                    raise self.error(where, f"list '{node.args[0].id}' is appended to inside {what}; --standalone "
                                            "cannot stage appends (preallocate an array and write it with "
                                            ".at[i].set(...))")

    def initialise(self, names, vals, where):
        """Statements giving the carried variables first assigned inside a staged loop a
        value before it: a zero of their kind if the loop only assigns them Python numbers
        (as the runtime would); otherwise there is no type to give, and it is an error."""
        out = []
        for n in names:
            val = vals[n]
            if not val.undefined:
                continue
            if val.is_weak and val.kind in NUMERIC:
                zero = {"bool": False, "int": 0, "float": 0.0, "complex": 0j}[val.kind]
                out.append(syntax.copy_location(syntax.assign(syntax.name(n, "store"), syntax.constant(zero)), where))
                continue
            if "return value" in self.ctx.descriptions.get(n, ""):
                raise self.error(where, "this loop stages to jax.lax and returns a traced value early; "
                                        "--standalone needs the value's type before the loop (assign the result to "
                                        "a variable initialised before the loop and `break` instead)")
            raise self.error(where, f"'{n}' is first assigned inside this loop, which stages to jax.lax, and "
                                    f"used after it; --standalone needs '{n}' assigned before the loop")
        return out


def _drop_descriptors(tree, ops):
    """Removes the ``at='...'`` descriptors of ``ops.*`` calls: the runtime reads them, the
    standalone output has no runtime."""
    for node in syntax.walk(tree):
        if (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and isinstance(node.func.value, syntax.Name)
            and node.func.value.id == ops
        ):
            node.keywords = [kw for kw in node.keywords if kw.arg != "at"]
