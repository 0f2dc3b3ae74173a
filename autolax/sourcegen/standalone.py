"""``--standalone``: lowers the ``ops.*`` calls of converted code to ``jax.lax``, ``jnp`` and Python.

The default output calls autolax's runtime, which decides each statement when it runs. A
standalone file has no runtime, so the decisions are made here by static analysis, with
the rules ``autolax.jit`` applies when it traces:

* a function's parameters are traced, unless declared static (``static_argnames`` /
  ``static_argnums`` of its decorator, or ``--static``); ``self`` / ``cls`` are static;
* Python literals, ``x.shape`` / ``ndim`` / ``dtype`` / ``size``, ``len()``, ``isinstance()``,
  ``type()`` and ``is`` / ``is not`` comparisons are static, as are the results of NumPy,
  ``math`` and user calls whose arguments are all static;
* JAX calls and anything computed from a traced value are traced.

A traced ``if`` test becomes ``jax.lax.cond``; a loop whose condition, bounds or carried state
is traced becomes ``jax.lax.while_loop`` / ``fori_loop`` / ``scan``; everything else is
written back as the Python statement it was. What cannot be expressed without the runtime
(an append to a list carried by a staged loop, a variable first assigned inside a staged loop,
``print(..., end=...)`` of traced values ...) is a ``ConversionError`` that says to drop
``--standalone``: never code that runs differently.

    n = ops.cond(n % 2 == 0, if_true, if_false, n)      ->   n = jax.lax.cond(n % 2 == 0, if_true, if_false, n)
    done = ops.and_(a < b, lambda: c)                    ->   done = jnp.logical_and(a < b, c)
    x = ops.at(x)[i].set(v)                              ->   x = x.at[i].set(v)
"""

from __future__ import annotations

import builtins
import types
from dataclasses import dataclass, replace

from autolax.errors import ConversionError
from autolax.passes.setitem import AUG_METHODS
from autolax.sourcegen import breaks
from autolax.transpile import syntax

_NUMERIC = ("bool", "int", "float", "complex")
_STATIC_ATTRS = {"shape": None, "ndim": "int", "dtype": None, "size": "int", "itemsize": "int", "nbytes": "int",
                 "weak_type": "bool", "sharding": None, "aval": None}
_STATIC_BUILTINS = {"len": "int", "isinstance": "bool", "issubclass": "bool", "type": None, "callable": "bool",
                    "hasattr": "bool", "id": "int", "str": None, "repr": None, "format": None}
_CONTAINER_BUILTINS = {"list", "tuple", "dict", "set", "frozenset", "sorted", "reversed", "zip", "enumerate",
                       "map", "filter", "range"}
_KIND_BUILTINS = {"int": "int", "float": "float", "bool": "bool", "complex": "complex"}
# JAX functions whose result is static even for traced arguments (they read types, not values).
_JAX_STATIC = {"shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iinfo", "finfo", "promote_types",
               "isdtype", "can_cast", "eval_shape", "tree_structure", "typeof"}
_JAX_BOOL = {"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "isclose",
             "allclose", "array_equal", "array_equiv", "any", "all", "signbit", "isneginf", "isposinf", "iscomplex",
             "isreal", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal", "isin"}
_CONTAINER_METHODS = {"items", "keys", "values"}
_OP_OF_METHOD = {method: op for op, method in AUG_METHODS.items()}


@dataclass(frozen=True)
class Val:
    """What the analysis knows about a value."""

    traced: bool = False
    kind: str | None = None  # "bool" / "int" / "float" / "complex" when known
    container: bool = False  # a Python list / tuple / dict (iterated in Python)
    undefined: bool = False  # may be unbound (an `ops.undefined` initialisation)
    elts: tuple | None = None  # Vals of the items of a tuple display
    weak: bool = False  # traced, and computed from Python numbers (and bools) only

    @property
    def is_weak(self) -> bool:
        """A Python scalar, or traced and computed from Python scalars only (a JAX weak type,
        except for booleans)."""
        return self.weak or (not self.traced and self.kind in _NUMERIC)

    def join(self, other: "Val") -> "Val":
        if self == UNDEFINED or other == UNDEFINED:  # unbound on one path: the other's type
            return replace(other if self == UNDEFINED else self, undefined=True)
        elts = None
        if self.elts is not None and other.elts is not None and len(self.elts) == len(other.elts):
            elts = tuple(a.join(b) for a, b in zip(self.elts, other.elts))
        return Val(
            traced=self.traced or other.traced,
            kind=self.kind if self.kind == other.kind else _join_kinds(self.kind, other.kind),
            container=self.container and other.container,
            undefined=self.undefined or other.undefined,
            elts=elts,
            weak=(self.traced or other.traced) and self.is_weak and other.is_weak,
        )


STATIC = Val()
TRACED = Val(traced=True)
UNDEFINED = Val(undefined=True)


def _join_kinds(a, b):
    """The wider of two Python number kinds (None unless both are known)."""
    if a in _NUMERIC and b in _NUMERIC:
        return _NUMERIC[max(_NUMERIC.index(a), _NUMERIC.index(b))]
    return None


class Scope:
    """Names bound in one function scope (``parent``: the enclosing one)."""

    def __init__(self, parent=None, values=None):
        self.parent = parent
        self.values = dict(values or {})

    def get(self, name: str) -> Val:
        scope = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return STATIC  # a global, builtin or module

    def bound(self, name: str) -> bool:
        scope = self
        while scope is not None:
            if name in scope.values:
                return True
            scope = scope.parent
        return False

    def set(self, name: str, val: Val) -> None:
        self.values[name] = val

    def copy(self) -> "Scope":
        return Scope(self.parent, self.values)

    def child(self, values) -> "Scope":
        return Scope(self, values)

    def merge(self, a: "Scope", b: "Scope") -> None:
        """This scope after one of two branches ran (``a`` or ``b``, copies of it)."""
        def value(branch, name):
            if name in branch.values:
                return branch.values[name]
            return self.get(name) if self.bound(name) else UNDEFINED

        for name in sorted(set(a.values) | set(b.values)):
            self.values[name] = value(a, name).join(value(b, name))


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


class Lowering:
    """Lowers the ops calls of one converted function (``converted.node``) in place."""

    def __init__(self, converted, module, refs: Refs, static_params, is_method: bool):
        self.ctx = converted.ctx
        self.fn = converted.node
        self.module = module
        self.refs = refs
        self.ops = self.ctx.ops
        self.generated = set(self.ctx.constructs)
        self.static_params = set(static_params)
        self.is_method = is_method
        self.final = True
        self._carry = None

    # ------------------------------------------------------------------ entry
    def run(self):
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
            if a.id == name and a.annotation is not None and _is_container_annotation(a.annotation):
                return Val(traced=True, container=True)
        default = defaults.get(name)
        if isinstance(default, syntax.Constant) and _kind_of_constant(default.value) in ("int", "float", "complex"):
            return Val(traced=True, kind=_kind_of_constant(default.value), weak=True)
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
        if isinstance(s, syntax.Assign) and _at_chain(value, self.ops) is not None:
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
                scope.set(s.target.id, _binop(old, val, s.op))
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
            self.bind(s.target, _item_of(val), scope)
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
                self.bind(elt, elts[i] if elts else _item_of(val), scope)
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
        chain = _at_chain(s.value, self.ops)
        root = s.targets[0].id
        val = scope.get(root)
        if val.traced and not val.container:
            s.value, _ = self.at_expr(chain, scope)
            return [s]
        container, index, method, value = _restore_target(chain, self.ops)
        container, _ = self.expr(container, scope)
        index, _ = self.expr(index, scope)
        value, _ = self.expr(value, scope)
        target = syntax.Subscript(value=container, slice=index, ctx=syntax.Store())
        if method == "set":
            new = syntax.assign(target, value)
        else:
            new = syntax.AugAssign(target=target, op=_OP_OF_METHOD[method](), value=value)
        return [syntax.copy_location(new, s)]

    def at_expr(self, chain, scope):
        container, index, method, value = chain
        container, cval = self.expr(container, scope)
        index, _ = self.expr(index, scope)
        inner = _at_chain(value, self.ops)
        value, _ = self.at_expr(inner, scope) if inner is not None else self.expr(value, scope)
        at = syntax.Subscript(value=syntax.attribute(syntax.deepcopy(container), "at"), slice=index, ctx=syntax.Load())
        if method != "set":
            current = syntax.Subscript(value=syntax.deepcopy(container), slice=syntax.deepcopy(index), ctx=syntax.Load())
            value = syntax.BinOp(left=current, op=_OP_OF_METHOD[method](), right=value)
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
        chain = _at_chain(value, self.ops) if method is None else None
        if chain is not None and syntax.dump(chain[0]) == syntax.dump(attribute) and not oval.traced:
            container, index, method, value = _restore_target(chain, self.ops)
            target = syntax.Subscript(value=self.expr(container, scope)[0], slice=self.expr(index, scope)[0], ctx=syntax.Store())
        else:
            target = syntax.Attribute(value=obj, attr=name.value, ctx=syntax.Store())
        value, _ = self.expr(value, scope)
        if method in (None, "set"):
            return syntax.assign(target, value)
        return syntax.AugAssign(target=target, op=_OP_OF_METHOD[method](), value=value)

    # ------------------------------------------------------------------ if
    def cond(self, s, call, scope, pending):
        test, t_ref, f_ref, *operands = call.args
        t_def, f_def = pending.pop(t_ref.id), pending.pop(f_ref.id)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        out_names = _names(targets)
        test, tval = self.expr(test, scope, truth=True)
        if not tval.traced:
            t_scope, f_scope = scope.copy(), scope.copy()
            body = self.block(_without_return(t_def.body), t_scope)
            orelse = self.block(_without_return(f_def.body), f_scope)
            scope.merge(t_scope, f_scope)
            return [_python_if(test, body, orelse, t_def)]
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
            cast_a, cast_b = _casts(a, b)
            if cast_a is not None:
                _wrap_returned(t_def, i, len(names), lambda e, k=cast_a: self.as_array(e, k))
            if cast_b is not None:
                _wrap_returned(f_def, i, len(names), lambda e, k=cast_b: self.as_array(e, k))
            out.append(_staged_output(a, b, cast_a, cast_b))
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
            if val.is_weak and val.kind in _NUMERIC:
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

    # ------------------------------------------------------------------ loops: analysis
    def fixpoint(self, scope, names, run):
        """Values of the carried ``names`` at the top of an iteration, if the loop ran as a
        Python loop: joined until they settle. ``run(child_scope)`` analyses one iteration."""
        vals = {n: scope.get(n) for n in names}
        for _ in range(32):
            child = scope.child(dict(vals))
            self.dry(run, child)
            new = {n: vals[n].join(child.get(n)) for n in names}
            if new == vals:
                break
            vals = new
        return vals

    def carried_vals(self, vals):
        return {
            n: Val(traced=True, kind=v.kind, container=v.container, weak=v.is_weak)
            for n, v in vals.items()
        }

    def loop_function(self, fn_def, params, body, returns):
        fn_def.args = syntax.function_def("f", params, []).args
        fn_def.body = body + ([returns] if returns is not None else [])
        return fn_def

    def unpack(self, names, origin):
        """``a, b = carry`` (nothing for zero or one carried name)."""
        if len(names) < 2:
            return []
        stmt = syntax.assign(syntax.names_tuple(names, "store"), syntax.name(self.carry_name()))
        return [syntax.copy_location(stmt, origin)]

    def carry_param(self, names):
        return names[0] if len(names) == 1 else self.carry_name()

    # ------------------------------------------------------------------ while
    def while_loop(self, s, call, scope, pending):
        t_ref, b_ref, init = call.args
        t_def, b_def = pending.pop(t_ref.id), pending.pop(b_ref.id)
        names = syntax.param_names(b_def.args)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        test = t_def.body[-1].value

        def run(child):
            self.expr(syntax.deepcopy(test), child, truth=True)
            self.block(syntax.deepcopy(b_def.body), child)

        vals = self.fixpoint(scope, names, run)
        probe = scope.child(dict(vals))
        _, tval = self.dry(self.expr, syntax.deepcopy(test), probe, True)
        if not tval.traced and not any(v.traced for v in vals.values()):
            for n, v in vals.items():
                scope.set(n, v)
            test, _ = self.expr(test, scope, truth=True)
            body = self.block(_without_return(b_def.body), scope)
            loop = syntax.While(test=test, body=body or [syntax.Pass()], orelse=[])
            setattr(loop, breaks.PYTHON_LOOP, True)
            return [syntax.copy_location(loop, t_def)]
        inits = self.initialise(names, vals, t_def) if self.final else []
        if self.final:
            self.check_appends([b_def], names, t_def, "this loop, which stages to jax.lax")
        carried = self.carried_vals(vals)
        test_scope, body_scope = scope.child(dict(carried)), scope.child(dict(carried))
        test, tval = self.expr(test, test_scope, truth=True)
        test = self.boolean(test, tval)
        body = self.block(b_def.body, body_scope)
        param = self.carry_param(names)
        self.loop_function(t_def, [param], self.unpack(names, t_def), syntax.ret(test))
        self.loop_function(b_def, [param], self.unpack(names, b_def) + body[:-1], body[-1])
        new = syntax.call(self.ref("jax.lax.while_loop"), [syntax.name(t_def.name), syntax.name(b_def.name), init])
        for n, v in carried.items():
            scope.set(n, v)
        stmt = syntax.assign(targets, new) if targets is not None else syntax.expr_stmt(new)
        return inits + [t_def, b_def, syntax.copy_location(stmt, s)]

    def boolean(self, test, val):
        """``lax.while_loop`` needs a boolean test: ``while n:`` becomes ``n != 0``."""
        if val.kind == "bool":
            return test
        return syntax.Compare(left=test, ops=[syntax.NotEq()], comparators=[syntax.constant(0)])

    # ------------------------------------------------------------------ for
    def for_range(self, s, call, scope, pending):
        start, stop, step, b_ref, init, *rest = call.args
        return self.for_loop(s, scope, pending, b_ref, init, rest, ("range", start, stop, step))

    def for_iter(self, s, call, scope, pending):
        iterable, b_ref, init, *rest = call.args
        return self.for_loop(s, scope, pending, b_ref, init, rest, ("iter", iterable))

    def for_loop(self, s, scope, pending, b_ref, init, rest, source):
        b_def = pending.pop(b_ref.id)
        t_def = pending.pop(rest[0].id) if rest else None
        item, *names = syntax.param_names(b_def.args)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        test = t_def.body[-1].value if t_def is not None else None
        seq = self.sequence(source, scope)
        item_val = seq.item_val

        def run(child):
            child.set(item, item_val)
            if test is not None:
                self.expr(syntax.deepcopy(test), child, truth=True)
            self.block(syntax.deepcopy(b_def.body), child)

        vals = self.fixpoint(scope, names, run)
        staged = seq.array or seq.traced or any(v.traced for v in vals.values())
        if not staged or seq.python_only:
            for n, v in vals.items():
                scope.set(n, v)
            scope.set(item, item_val)
            return [self.python_for(b_def, item, test, seq, scope)]
        prelude = self.initialise(names, vals, b_def) if self.final else []
        if self.final:
            self.check_appends([b_def], names, b_def, "this loop, which stages to jax.lax")
        carried = self.carried_vals(vals)
        body_scope = scope.child(dict(carried))
        body_scope.set(item, Val(traced=True, elts=seq.item_val.elts and tuple(TRACED for _ in seq.item_val.elts)))
        if test is not None:
            test_scope = scope.child(dict(carried))
            test, tval = self.expr(test, test_scope, truth=True)
            out = self.while_for(s, b_def, t_def, item, names, init, test, seq, body_scope, targets, prelude)
        elif seq.kind == "range" and _is_const(seq.step, 1):
            out = self.fori(s, b_def, item, names, init, seq, body_scope, targets)
        else:
            out = self.scan(s, b_def, item, names, init, seq, body_scope, targets)
        for n, v in carried.items():
            scope.set(n, v)
        return prelude + out

    def python_for(self, b_def, item, test, seq, scope):
        body = _without_return(b_def.body)
        target = syntax.name(item, "store")
        if item in self.ctx.namer.generated and body and isinstance(body[0], syntax.Assign):
            first = body[0]
            if isinstance(first.value, syntax.Name) and first.value.id == item and len(first.targets) == 1:
                target, body = first.targets[0], body[1:]
        self.bind(target, seq.item_val, scope)
        body = self.block(body, scope)
        if test is not None:
            test, _ = self.expr(test, scope, truth=True)
            body.append(syntax.copy_location(syntax.if_stmt(_negate(test), [syntax.Break()]), b_def))
        loop = syntax.For(target=target, iter=seq.python_iter, body=body or [syntax.Pass()], orelse=[], type_comment=None)
        setattr(loop, breaks.PYTHON_LOOP, True)
        return syntax.copy_location(loop, b_def)

    def sequence(self, source, scope):
        if source[0] == "range":
            _, start, stop, step = source
            start, a = self.expr(start, scope)
            stop, b = self.expr(stop, scope)
            step, c = self.expr(step, scope)
            traced = a.traced or b.traced or c.traced
            args = [stop] if _is_const(start, 0) and _is_const(step, 1) else [start, stop] if _is_const(step, 1) else [start, stop, step]
            python_iter = syntax.call(syntax.name("range"), args)
            item = Val(traced=True) if traced else Val(kind="int")
            return _Seq("range", traced, False, False, item, python_iter, start=start, stop=stop, step=step, step_val=c)
        iterable = source[1]
        node, val, array = self.iterable(iterable, scope)
        item = Val(traced=True, elts=_item_elts(node, self.ops)) if array else _item_of(val)
        python = _as_builtin_iter(syntax.deepcopy(node), self.ops)
        return _Seq("iter", val.traced, array, not array, item, python, xs=node)

    def iterable(self, node, scope):
        """(lowered node, Val, is an array sequence) of a ``for`` iterable. ``ops.enumerate`` /
        ``ops.zip`` of arrays scan; of anything else, iterate in Python."""
        op = self.op_of(node)
        if op in ("enumerate", "zip"):
            parts = []
            args = node.args if op == "zip" else node.args[:1]
            for a in args:
                parts.append(self.iterable(a, scope))
            node.args = [p[0] for p in parts] + [self.expr(a, scope)[0] for a in node.args[len(args):]]
            array = all(p[2] for p in parts)
            val = Val(traced=any(p[1].traced for p in parts), container=not array)
            return node, val, array
        node, val = self.expr(node, scope)
        return node, val, val.traced and not val.container

    def range_items(self, seq):
        """(xs for scan, item expression) for a range with a static step other than 1."""
        return self.jnp("arange", [seq.start, seq.stop, seq.step])

    def scan_xs(self, node):
        op = self.op_of(node)
        if op == "zip":
            return syntax.Tuple(elts=[self.scan_xs(a) for a in node.args], ctx=syntax.Load())
        if op == "enumerate":
            inner = node.args[0]
            length = self.length(inner)
            if len(node.args) > 1:
                start = node.args[1]
                index = self.jnp("arange", [start, syntax.BinOp(left=syntax.deepcopy(start), op=syntax.Add(), right=length)])
            else:
                index = self.jnp("arange", [length])
            return syntax.Tuple(elts=[index, self.scan_xs(inner)], ctx=syntax.Load())
        return node

    def length(self, node):
        op = self.op_of(node)
        if op == "zip":
            return syntax.call(syntax.name("min"), [self.length(a) for a in node.args])
        if op == "enumerate":
            return self.length(node.args[0])
        return syntax.call(syntax.name("len"), [syntax.deepcopy(node)])

    def item_at(self, node, index):
        op = self.op_of(node)
        if op == "zip":
            return syntax.Tuple(elts=[self.item_at(a, index) for a in node.args], ctx=syntax.Load())
        if op == "enumerate":
            k = syntax.name(index)
            if len(node.args) > 1:
                k = syntax.BinOp(left=syntax.deepcopy(node.args[1]), op=syntax.Add(), right=k)
            return syntax.Tuple(elts=[k, self.item_at(node.args[0], index)], ctx=syntax.Load())
        return syntax.Subscript(value=syntax.deepcopy(node), slice=syntax.name(index), ctx=syntax.Load())

    def fori(self, s, b_def, item, names, init, seq, body_scope, targets):
        body = self.block(b_def.body, body_scope)
        param = self.carry_param(names)
        self.loop_function(b_def, [item, param], self.unpack(names, b_def) + body[:-1], body[-1])
        new = syntax.call(self.ref("jax.lax.fori_loop"), [seq.start, seq.stop, syntax.name(b_def.name), init])
        stmt = syntax.assign(targets, new) if targets is not None else syntax.expr_stmt(new)
        return [b_def, syntax.copy_location(stmt, s)]

    def scan(self, s, b_def, item, names, init, seq, body_scope, targets):
        if seq.kind == "range":
            if seq.step_val.traced:
                raise self.error(b_def, "the step of this `range` is traced; --standalone stages ranges with a "
                                        "static step only")
            xs = self.range_items(seq)
        else:
            xs = self.scan_xs(seq.xs)
        body = self.block(b_def.body, body_scope)
        returned = body[-1]
        returned.value = syntax.Tuple(elts=[returned.value, syntax.constant(None)], ctx=syntax.Load())
        param = self.carry_param(names)
        self.loop_function(b_def, [param, item], self.unpack(names, b_def) + body[:-1], returned)
        new = syntax.call(self.ref("jax.lax.scan"), [syntax.name(b_def.name), init, xs])
        if targets is None:
            stmt = syntax.expr_stmt(new)
        else:
            unused = "_" if "_" not in self.ctx.namer.used else self.ctx.namer.new("ys")
            stmt = syntax.assign(syntax.Tuple(elts=[targets, syntax.name(unused, "store")], ctx=syntax.Store()), new)
        return [b_def, syntax.copy_location(stmt, s)]

    def while_for(self, s, b_def, t_def, item, names, init, test, seq, body_scope, targets, prelude):
        """A staged ``for`` that can stop early (``break`` / ``return``): a ``while_loop`` over
        an index, which stops at the exit (the runtime may use a masked ``scan`` instead)."""
        body_writes = _writes(b_def.body)
        if seq.kind == "range":
            if seq.step_val.traced:
                raise self.error(b_def, "the step of this `range` is traced; --standalone stages ranges with a "
                                        "static step only")
            if item in self.ctx.namer.generated or item not in body_writes:
                index = item
            else:
                index = self.ctx.namer.new("index")
            start = seq.start
            stop = self.once(seq.stop, "stop", body_writes, names, prelude, s)
            step = seq.step
            bound = _range_test(index, stop, step)
            item_stmts = [] if index == item else [syntax.assign(syntax.name(item, "store"), syntax.name(index))]
        else:
            index = self.ctx.namer.new("index")
            xs = self.once_iterable(seq.xs, body_writes, names, prelude, s)
            start, step = syntax.constant(0), syntax.constant(1)
            bound = syntax.Compare(left=syntax.name(index), ops=[syntax.Lt()], comparators=[self.length(xs)])
            item_stmts = [syntax.assign(syntax.name(item, "store"), self.item_at(xs, index))]
        body = self.block(b_def.body, body_scope)
        next_index = syntax.BinOp(left=syntax.name(index), op=syntax.Add(), right=syntax.deepcopy(step))
        if names:
            param = self.carry_name()
            state = [index] + list(names)
            unpack = [syntax.copy_location(syntax.assign(syntax.names_tuple(state, "store"), syntax.name(param)), b_def)]
            returned = syntax.ret(syntax.Tuple(elts=[next_index] + [syntax.name(n) for n in names], ctx=syntax.Load()))
            init_values = [start] + (list(init.elts) if isinstance(init, syntax.Tuple) else [init])
            init = syntax.Tuple(elts=init_values, ctx=syntax.Load())
        else:
            param, unpack, returned, init = index, [], syntax.ret(next_index), start
        full_test = self.jnp("logical_and", [bound, test])
        self.loop_function(t_def, [param], list(unpack), syntax.ret(full_test))
        item_stmts = [syntax.copy_location(x, b_def) for x in item_stmts]
        self.loop_function(b_def, [param], syntax.deepcopy(unpack) + item_stmts + body[:-1],
                           syntax.copy_location(returned, body[-1]))
        new = syntax.call(self.ref("jax.lax.while_loop"), [syntax.name(t_def.name), syntax.name(b_def.name), init])
        if names:
            unused = "_" if "_" not in self.ctx.namer.used else self.ctx.namer.new("ys")
            out_targets = syntax.Tuple(elts=[syntax.name(unused, "store")] + [syntax.name(n, "store") for n in names],
                                       ctx=syntax.Store())
            stmt = syntax.assign(out_targets, new)
        else:
            stmt = syntax.expr_stmt(new)
        return [syntax.copy_location(t_def, b_def), b_def, syntax.copy_location(stmt, s)]

    def once(self, node, hint, body_writes, names, prelude, origin):
        """``node`` if reading it again in each iteration gives the same value, else a
        temporary bound to it before the loop (``range(n)`` reads ``n`` once)."""
        if _rereadable(node, set(body_writes) | set(names)):
            return node
        temp = self.ctx.namer.new(hint)
        prelude.append(syntax.copy_location(syntax.assign(syntax.name(temp, "store"), node), origin))
        return syntax.name(temp)

    def once_iterable(self, node, body_writes, names, prelude, origin):
        op = self.op_of(node)
        if op in ("zip", "enumerate"):
            n_seq = len(node.args) if op == "zip" else 1
            node.args = [self.once_iterable(a, body_writes, names, prelude, origin) for a in node.args[:n_seq]] + [
                self.once(a, "start", body_writes, names, prelude, origin) for a in node.args[n_seq:]
            ]
            return node
        return self.once(node, "xs", body_writes, names, prelude, origin)

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
            if _at_chain(e, self.ops) is not None:
                return self.at_expr(_at_chain(e, self.ops), scope)
            return self.call(e, scope)
        if isinstance(e, syntax.Name):
            return e, scope.get(e.id)
        if isinstance(e, syntax.Constant):
            return e, Val(kind=_kind_of_constant(e.value))
        if isinstance(e, syntax.Attribute):
            e.value, val = self.expr(e.value, scope)
            if e.attr in _STATIC_ATTRS:
                return e, Val(kind=_STATIC_ATTRS[e.attr], container=e.attr == "shape")
            return e, Val(traced=val.traced)
        if isinstance(e, syntax.Subscript):
            e.value, a = self.expr(e.value, scope)
            e.slice, b = self.expr(e.slice, scope)
            if a.elts is not None and isinstance(e.slice, syntax.Constant) and isinstance(e.slice.value, int):
                if -len(a.elts) <= e.slice.value < len(a.elts):
                    return e, a.elts[e.slice.value]
            if not a.traced and not b.traced and _is_shape(e.value):
                return e, Val(kind="int")
            return e, Val(traced=a.traced or b.traced, weak=a.weak)
        if isinstance(e, syntax.BinOp):
            e.left, a = self.expr(e.left, scope)
            e.right, b = self.expr(e.right, scope)
            return e, _binop(a, b, e.op)
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
                self.bind(gen.target, _item_of(v), inner)
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
            if name in _STATIC_BUILTINS:
                return e, Val(kind=_STATIC_BUILTINS[name])
            if name in _CONTAINER_BUILTINS:
                return e, Val(traced=traced, container=True)
            if name in _KIND_BUILTINS:
                return e, Val(traced=traced, kind=_KIND_BUILTINS[name])
            kind = None
            for v in vals:
                kind = v.kind if kind is None else _join_kinds(kind, v.kind)
            return e, Val(traced=traced, kind=kind if name in ("abs", "min", "max", "sum", "round", "pow") else None)
        module = getattr(value, "__module__", None) or getattr(value, "__name__", None) if value is not None else None
        if module and module.split(".")[0] in ("jax", "jaxlib"):
            name = getattr(value, "__name__", "")
            if name in _JAX_STATIC:
                return e, STATIC
            if name == "tree_leaves":
                return e, Val(traced=traced, container=True)
            return e, Val(traced=True, kind="bool" if name in _JAX_BOOL else None)
        if isinstance(e.func, syntax.Attribute) and value is None:
            if e.func.attr in _CONTAINER_METHODS:
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
        kind_a, kind_b = _casts(aval, bval)
        if kind_a is not None:
            a = self.as_array(a, kind_a)
        if kind_b is not None:
            b = self.as_array(b, kind_b)
        new = syntax.call(self.ref("jax.lax.cond"), [test, syntax.lambda_(a), syntax.lambda_(b)])
        return syntax.copy_location(new, e), _staged_output(aval, bval, kind_a, kind_b)

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


@dataclass
class _Seq:
    """What a ``for`` iterates over."""

    kind: str  # "range" / "iter"
    traced: bool  # bounds or iterable traced
    array: bool  # scanned over its leading axis when staged
    python_only: bool  # a Python iterable: always a Python loop
    item_val: Val
    python_iter: object
    start: object = None
    stop: object = None
    step: object = None
    step_val: Val = STATIC
    xs: object = None


# ----------------------------------------------------------------------------- helpers
def _kind_of_constant(value):
    for kind, t in (("bool", bool), ("int", int), ("float", float), ("complex", complex)):
        if type(value) is t:
            return kind
    return None


def _binop(a: Val, b: Val, op) -> Val:
    traced = a.traced or b.traced
    weak = a.is_weak and b.is_weak
    container = a.container and b.container and isinstance(op, syntax.Add)
    if not traced:
        kind = _join_kinds(a.kind, b.kind)
        if kind is not None and isinstance(op, syntax.Div):
            kind = "float" if kind in ("bool", "int") else kind
        if kind == "bool" and not isinstance(op, (syntax.BitAnd, syntax.BitOr, syntax.BitXor)):
            kind = "int"
        return Val(kind=kind, container=container)
    kinds = {a.kind, b.kind}
    if isinstance(op, syntax.Div) or "float" in kinds:
        return Val(traced=True, kind="float", weak=weak)
    return Val(traced=True, kind=a.kind if a.kind == b.kind and a.kind != "bool" else None, weak=weak)


def _casts(a: Val, b: Val):
    """The kinds to turn each branch's value into an array of (or None), so both branches of
    a staged ``if`` give equal types. Python numbers are weakly typed: beside a strongly
    typed array they become an array of their kind's default dtype (float32 for a float);
    beside another weak value of a different kind, both become the wider kind."""
    if a == UNDEFINED or b == UNDEFINED or a.container or b.container:
        return None, None
    numbers = ("int", "float", "complex")
    weak_a, weak_b = a.is_weak and a.kind in numbers, b.is_weak and b.kind in numbers
    if a.is_weak and b.is_weak:
        if weak_a and weak_b and a.kind != b.kind:
            kind = _join_kinds(a.kind, b.kind)
            return kind, kind
        return None, None
    if weak_a:
        return (_join_kinds(a.kind, b.kind) if b.kind in numbers else a.kind), None
    if weak_b:
        return None, (_join_kinds(b.kind, a.kind) if a.kind in numbers else b.kind)
    return None, None


def _staged_output(a: Val, b: Val, cast_a, cast_b) -> Val:
    """The Val of a staged ``if``'s output whose branches give ``a`` and ``b``."""
    if a == UNDEFINED:
        a = b
    if b == UNDEFINED:
        b = a
    kinds = {cast_a or a.kind, cast_b or b.kind}
    kind = kinds.pop() if len(kinds) == 1 else _join_kinds(*kinds)
    weak = (a.is_weak and cast_a is None) and (b.is_weak and cast_b is None)
    return Val(traced=True, kind=kind, weak=weak, container=a.container and b.container)


def _wrap_returned(fn_def, index, n, wrap):
    ret = fn_def.body[-1]
    if not isinstance(ret, syntax.Return) or ret.value is None:
        return
    if n == 1:
        ret.value = wrap(ret.value)
    elif isinstance(ret.value, syntax.Tuple):
        ret.value.elts[index] = wrap(ret.value.elts[index])


def _names(target):
    if target is None:
        return []
    if isinstance(target, syntax.Name):
        return [target.id]
    return [e.id for e in target.elts]


def _without_return(body):
    body = list(body)
    if body and isinstance(body[-1], syntax.Return):
        body.pop()
    return body


def _python_if(test, body, orelse, origin):
    if not body and orelse:
        test, body, orelse = _negate(test), orelse, []
    new = syntax.if_stmt(test, body or [syntax.Pass()], orelse)
    return syntax.copy_location(new, origin)


def _negate(test):
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        return test.operand
    if isinstance(test, syntax.BoolOp) and all(isinstance(v, syntax.UnaryOp) and isinstance(v.op, syntax.Not) for v in test.values):
        other = syntax.Or() if isinstance(test.op, syntax.And) else syntax.And()
        return syntax.BoolOp(op=other, values=[v.operand for v in test.values])
    return syntax.unary_not(test)


def _is_const(node, value) -> bool:
    return isinstance(node, syntax.Constant) and type(node.value) is int and node.value == value


def _is_shape(node) -> bool:
    return isinstance(node, syntax.Attribute) and node.attr == "shape"


def _item_of(val: Val) -> Val:
    """The Val of an item of an iterable with Val ``val``."""
    return Val(traced=val.traced, kind="int" if not val.traced and val.kind == "int" else None)


def _item_elts(node, ops):
    """Val structure of one item of a scanned iterable (``enumerate`` / ``zip`` give tuples)."""
    if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and node.func.attr in ("enumerate", "zip"):
        if isinstance(node.func.value, syntax.Name) and node.func.value.id == ops:
            n = 2 if node.func.attr == "enumerate" else len(node.args)
            return tuple(TRACED for _ in range(n))
    return None


def _as_builtin_iter(node, ops):
    """``ops.enumerate`` / ``ops.zip`` back to the builtins (for a Python loop)."""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and n.func.attr in ("enumerate", "zip"):
            if isinstance(n.func.value, syntax.Name) and n.func.value.id == ops:
                n.func = syntax.name(n.func.attr)
    return node


def _range_test(index, stop, step):
    """``index < stop`` (or ``>`` for a negative step) as an expression."""
    up = syntax.Compare(left=syntax.name(index), ops=[syntax.Lt()], comparators=[syntax.deepcopy(stop)])
    down = syntax.Compare(left=syntax.name(index), ops=[syntax.Gt()], comparators=[syntax.deepcopy(stop)])
    if isinstance(step, syntax.Constant) and isinstance(step.value, int):
        return up if step.value > 0 else down
    positive = syntax.Compare(left=syntax.deepcopy(step), ops=[syntax.Gt()], comparators=[syntax.constant(0)])
    return syntax.IfExp(test=positive, body=up, orelse=down)


def _rereadable(node, changing) -> bool:
    """Does evaluating ``node`` again give the same value (names the loop does not change,
    constants, attributes, subscripts and arithmetic of those, no calls)?"""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Name):
            if n.id in changing:
                return False
        elif isinstance(n, syntax.expr) and not isinstance(
            n, (syntax.Constant, syntax.Attribute, syntax.Subscript, syntax.BinOp, syntax.UnaryOp, syntax.Tuple, syntax.Slice)
        ):
            return False
    return True


def _writes(stmts):
    from autolax.analysis.activity import writes

    return writes(stmts)


def _at_chain(node, ops):
    """``(container, index, method, value)`` of ``ops.at(container)[index].method(value)``."""
    if not (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and len(node.args) == 1):
        return None
    sub = node.func.value
    if not isinstance(sub, syntax.Subscript):
        return None
    at = sub.value
    if (
        isinstance(at, syntax.Call)
        and isinstance(at.func, syntax.Attribute)
        and at.func.attr == "at"
        and isinstance(at.func.value, syntax.Name)
        and at.func.value.id == ops
        and len(at.args) == 1
    ):
        return at.args[0], sub.slice, node.func.attr, node.args[0]
    return None


def _restore_target(chain, ops):
    """``x[i][j] = v`` from ``ops.at(x)[i].set(ops.at(x[i])[j].set(v))``: the innermost
    (container, index, method, value)."""
    container, index, method, value = chain
    inner = _at_chain(value, ops) if method == "set" else None
    if inner is not None:
        expected = syntax.Subscript(value=container, slice=index, ctx=syntax.Load())
        if syntax.dump(inner[0]) == syntax.dump(expected):
            return _restore_target(inner, ops)
    return chain


def _is_container_annotation(node) -> bool:
    """``list``, ``tuple[...]``, ``dict``, ``Sequence[...]``, ``typing.Mapping`` ..."""
    if isinstance(node, syntax.Subscript):
        node = node.value
    if isinstance(node, syntax.Attribute):
        name = node.attr
    elif isinstance(node, syntax.Name):
        name = node.id
    elif isinstance(node, syntax.Constant) and isinstance(node.value, str):
        name = node.value.split("[")[0].split(".")[-1]
    else:
        return False
    return name in {"list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence", "Mapping", "Iterable",
                    "MutableSequence", "MutableMapping", "Collection"}
