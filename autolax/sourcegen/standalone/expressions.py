"""``--standalone``: expressions, and the ``ops.*`` calls inside them.

    ops.and_(a < b, lambda: c)        ->   jnp.logical_and(a < b, c)       (traced)
                                      ->   a < b and c                     (static)
    ops.and_(a < b, lambda: c / d > 1)  ->  jax.lax.cond(a < b, lambda: c / d > 1, lambda: False)
    ops.if_else(c, lambda: a, lambda: b)  ->  jax.lax.cond(c, lambda: a, lambda: b)
    ops.call(helper, x)               ->   helper(x)
    ops.print('x =', x)               ->   jax.debug.print('x = {}', x, ordered=True)

Each expression is lowered together with its ``Val`` (what is known about its value); the
forms come from ``autolax.plan`` (``logical_form`` with ``evaluate_anyway``, fed by
``primitives``; ``ternary_form``, ``print_form``).
"""

from __future__ import annotations

import builtins
import types
from dataclasses import replace

from autolax import errors, plan, sites
from autolax.sites import display_filename
from autolax.sourcegen.module import LibraryRef
from autolax.sourcegen.standalone import helpers, patterns, primitives
from autolax.sourcegen.standalone.patterns import at_chain
from autolax.sourcegen.standalone.values import (
    CONTAINER_BUILTINS,
    CONTAINER_METHODS,
    JAX_STATIC,
    KIND_BUILTINS,
    STATIC,
    STATIC_ATTRS,
    STATIC_BUILTINS,
    TRACED,
    UNDEFINED,
    Scope,
    Val,
    binop,
    call_result,
    casts,
    constant,
    flat,
    item_of,
    join_kinds,
    join_ndims,
    staged_output,
    subscript,
    without_items,
)
from autolax.analysis.activity import MUTATING_METHODS, writes
from autolax.transpile import syntax

# Calls with an effect: evaluating them on a path Python does not take would be visible.
_EFFECTS = {"call", "print", "append", "setattr"}
# Builtins that read a list without keeping it or changing it (see ``unaliased_lists``).
READERS = ("sum", "min", "max", "sorted", "list", "tuple", "any", "all", "len", "print", "str", "repr", "bool")
_SEARCHING = {"remove", "index", "count"}  # list methods that compare a value with the items
# jax.numpy functions that join a sequence of arrays, and refuse an empty one (the verb of
# JAX's message).
JOINING = {"stack": "stack", "vstack": "stack", "hstack": "stack", "dstack": "stack", "column_stack": "stack",
            "concatenate": "concatenate"}

_MUTATING = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "sort", "reverse",
             "add", "discard", "popitem"}


def free_names(node) -> set:
    """Names a function or lambda reads but neither takes as a parameter nor assigns."""
    own, loads = set(), set()
    for n in syntax.walk(node):
        if isinstance(n, syntax.arguments):
            own |= set(syntax.param_names(n))
        elif isinstance(n, syntax.Name):
            (loads if isinstance(n.ctx, syntax.Load) else own).add(n.id)
    return loads - own


class Expressions:
    """Expression lowering, mixed into ``Lowering``."""

    stacked_ok = None  # the one Name node where a stacked list may be read (see `allow_stacked`)
    # The callee being lowered: a function bound nowhere in the file is taken to come from
    # elsewhere (a snippet's helper), not to be a NameError (see `never_defined`).
    callee = None

    # ------------------------------------------------------------------ expressions
    def expr(self, e, scope, truth=False):
        """(lowered expression, Val); ``truth``: the value is used for its truth (a test)."""
        node, val = self._expr(e, scope, truth)
        if truth and val.container:  # a list's truth is its length: static
            val = Val(kind="bool", ndim=0)
        return node, val

    def allow_stacked(self, e, scope, truth=False):
        """``expr`` of an operand that may be a stacked list (``len(out)``, ``out[i]``)."""
        self.stacked_ok = e
        return self.expr(e, scope, truth)

    def _expr(self, e, scope, truth):
        if isinstance(e, syntax.Call):
            op = self.op_of(e)
            if op is not None:
                handler = getattr(self, f"op_{op.rstrip('_')}", None)
                if handler is None:  # an op known only as a statement (`ops.asserting`)
                    raise self.refuse("standalone-op", e, call=f"{self.ops}.{op}")
                return handler(e, scope, truth)
            if at_chain(e, self.ops) is not None:
                return self.at_expr(at_chain(e, self.ops), scope)
            return self.call(e, scope)
        if isinstance(e, syntax.Name):
            val = scope.get(e.id)
            if not scope.bound(e.id) and e.id in self.module_containers():  # a module-level list
                val = Val(container=True, ctype=self.module_containers()[e.id])
            elif not scope.bound(e.id) and e.id in self.module_hosts():  # a module-level tuple, NumPy array
                val = Val(host=True)
            if val.stacked and e is not self.stacked_ok:
                raise self.refuse("standalone-stacked-use", e, what=f"'{e.id}'", name=e.id)
            if (self.failing is not None and isinstance(e.ctx, syntax.Load) and e is not self.callee
                    and self.never_defined(e.id, scope)):
                raise self.fails_while_staged(e, f"NameError: name '{e.id}' is not defined")
            return e, val
        if isinstance(e, syntax.Constant):
            return e, constant(e.value)
        if isinstance(e, syntax.Attribute):
            e.value, val = self.expr(e.value, scope)
            if (not val.traced and isinstance(e.value, syntax.Name) and e.value.id == self.self_name()
                    and e.attr in self.class_hosts()):
                return e, Val(host=True)  # `self.weights`, a list or NumPy array the class made
            if e.attr in STATIC_ATTRS:
                return e, Val(kind=STATIC_ATTRS[e.attr], container=e.attr == "shape", ndim=0 if STATIC_ATTRS[e.attr] else None)
            if e.attr in ("T", "real", "imag") and not val.container:
                return e, replace(val, elts=None)
            return e, Val(traced=val.traced)
        if isinstance(e, syntax.Subscript):
            if self.formats_traced(e.slice, scope):  # `PARAMS[f"w{i}"]`: the key would hold a tracer's text
                self.needs_concrete(e, "formats a traced value into a key (e.g. `d[f\"w{i}\"]` with the loop index)")
            # (`out[i]` of a stacked list is a row of the stack; `out[1:]` would be an array, not a list)
            e.value, a = (self.expr if isinstance(e.slice, syntax.Slice) else self.allow_stacked)(e.value, scope)
            e.slice, b = self.expr(e.slice, scope)
            if not a.traced and not b.traced and isinstance(e.value, syntax.Attribute) and e.value.attr == "shape":
                return e, Val(kind="int", ndim=0)
            if (self.failing is not None and not isinstance(e.slice, syntax.Slice) and isinstance(e.value, syntax.Name)
                    and (a.empty and not a.traced and e.value.id in self.unaliased or self.empty_global(e.value.id, scope))):
                raise self.fails_while_staged(e, "IndexError: list index out of range")
            if b.traced and not a.traced and (a.container or a.host):
                self.needs_concrete(e, "uses a traced value as a dict key or set item (e.g. looks up a Python dict "
                                       "with the loop index)" if a.ctype == "dict" else "uses a traced value as a "
                                       "Python int (e.g. indexes a Python list with the loop index)")
            out = subscript(a, b, e.slice)
            return e, replace(out, host=True) if a.host and not out.traced else out
        if isinstance(e, syntax.BinOp):
            e.left, a = self.expr(e.left, scope)
            e.right, b = self.expr(e.right, scope)
            return e, binop(a, b, e.op)
        if isinstance(e, syntax.UnaryOp):
            e.operand, a = self.expr(e.operand, scope, truth=isinstance(e.op, syntax.Not))
            if isinstance(e.op, syntax.Not):
                return e, Val(traced=a.traced, kind="bool", ndim=a.ndim)
            return e, replace(a, container=False, elts=None, kind="int" if a.kind == "bool" else a.kind,
                              like=None if a.container or a.kind == "bool" else a.like)
        if isinstance(e, syntax.Compare):
            e.left, a = self.expr(e.left, scope)
            vals = [a]
            for i, c in enumerate(e.comparators):
                e.comparators[i], v = self.expr(c, scope)
                vals.append(v)
            if all(isinstance(op, (syntax.Is, syntax.IsNot)) for op in e.ops):
                return e, Val(kind="bool", ndim=0)
            nodes = [e.left] + e.comparators
            for i, op in enumerate(e.ops):
                if (isinstance(op, (syntax.In, syntax.NotIn)) and vals[i].traced and not vals[i + 1].traced
                        and vals[i + 1].ctype in ("set", "dict")):
                    self.needs_concrete(e, "uses a traced value as a dict key or set item (e.g. looks up a Python "
                                           "dict with the loop index)")
                if isinstance(op, (syntax.In, syntax.NotIn)):
                    self.searched(nodes[i + 1], vals[i + 1], nodes[i], vals[i], e, staged_by_runtime=True)
            return e, Val(traced=any(v.traced for v in vals), kind="bool", ndim=join_ndims(vals))
        if isinstance(e, syntax.Lambda):
            values = {p: TRACED for p in syntax.param_names(e.args)}
            self.definitions[id(e)] = (syntax.deepcopy(e.body), flat(scope))
            with self.staging(None):  # runs when it is called
                e.body, _ = self.expr(e.body, scope.child(values))
            return e, STATIC
        if isinstance(e, (syntax.Tuple, syntax.List, syntax.Set)):
            vals = []
            for i, elt in enumerate(e.elts):
                e.elts[i], v = self.expr(elt, scope)
                vals.append(v)
            starred = any(isinstance(x, syntax.Starred) for x in e.elts)
            elts = tuple(vals) if isinstance(e, syntax.Tuple) and not starred else None
            items = len(vals) if isinstance(e, syntax.List) and not starred else None
            ctype = {syntax.Tuple: "tuple", syntax.List: "list", syntax.Set: "set"}[type(e)]
            return e, Val(traced=any(v.traced for v in vals), container=True, elts=elts,
                          empty=isinstance(e, syntax.List) and not e.elts, ctype=ctype, items=items)
        if isinstance(e, syntax.Dict):
            traced = False
            for field in ("keys", "values"):
                items = getattr(e, field)
                for i, x in enumerate(items):
                    if x is not None:
                        items[i], v = self.expr(x, scope)
                        traced = traced or v.traced
            return e, Val(traced=traced, container=True, ctype="dict")
        if isinstance(e, (syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)):
            inner = scope.child({})
            traced = False
            for gen in e.generators:
                gen.iter, v = self.allow_stacked(gen.iter, inner)
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
            scope.set(e.target.id, without_items(val))
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
        value = self.static_value(e.func, scope)
        builtin = isinstance(value, (types.BuiltinFunctionType, type)) and getattr(
            builtins, getattr(value, "__name__", ""), None) is value
        owner = None
        if isinstance(e.func, syntax.Attribute) and value is None:  # a method call
            e.func.value, owner = self.expr(e.func.value, scope)
            fval = Val(traced=owner.traced)
        else:
            self.callee = e.func
            e.func, fval = self.expr(e.func, scope)
        vals = []
        for i, a in enumerate(e.args):
            e.args[i], v = self.allow_stacked(a, scope) if builtin and value is len else self.expr(a, scope)
            vals.append(v)
        for kw in e.keywords:
            kw.value, v = self.expr(kw.value, scope)
            vals.append(v)
        traced = any(v.traced for v in vals)
        if isinstance(e.func, syntax.Name) and scope.bound(e.func.id) and e.func.id in self.functions:
            traced = traced or self.reads_traced_free(e.func.id, scope, set())
            self.check_late_reads(e.func.id, scope, e)
        if self.failing is not None and isinstance(e.func, syntax.Name) and self.may_raise(e.func.id, scope, set()):
            # The runtime checks an `assert` / `raise` there when the program runs that code
            # (fuzzer seed 237: a helper's assert fired while the untaken branch was traced).
            raise self.refuse("standalone-op", e, call=f"{e.func.id} (it may `assert` or `raise`, in code staged "
                                                       "where Python may not run it)")
        if self.failing is not None and isinstance(e.func, syntax.Name):
            self.check_unbound_reads(e, scope)
        if self.staged and isinstance(e.func, syntax.Name) and not self.is_method and not scope.bound(e.func.id) \
                and self.fn.name in self.module_reaches(e.func.id):
            # A staged body traces whatever its statement's condition, so a function of the
            # file calling itself there (directly or through others) recurses without end
            # while traced: the runtime's TracedRecursionError, up front.
            raise self.refuse("traced-recursion", e, runtime_can=False, name=self.fn.name,
                              depth=plan.MAX_STAGED_RECURSION)
        if self.staged and self.staged_about and isinstance(e.func, syntax.Name):
            self.check_call_effect(e, scope)
        self.check_static_arguments(e, vals, scope)
        if builtin:
            name = value.__name__
            if name in STATIC_BUILTINS:
                return e, Val(kind=STATIC_BUILTINS[name], ndim=0 if STATIC_BUILTINS[name] else None)
            if name == "sorted" and traced:
                self.needs_concrete(e, "sorts traced values (Python compares them)")
            if name in CONTAINER_BUILTINS:
                return e, Val(traced=traced, container=True)
            if name in KIND_BUILTINS:
                return e, Val(traced=traced, kind=KIND_BUILTINS[name], ndim=0)
            kind = None
            for v in vals:
                kind = v.kind if kind is None else join_kinds(kind, v.kind)
            elementwise = name in ("abs", "round", "pow") or name in ("min", "max") and len(vals) > 1
            return e, Val(traced=traced, kind=kind if elementwise or name in ("min", "max", "sum") else None,
                          ndim=join_ndims(vals) if elementwise else None)
        if isinstance(value, LibraryRef):  # known by its import path only (nothing is imported)
            module, _, name = value.__name__.rpartition(".")
        else:
            module = getattr(value, "__module__", None) or getattr(value, "__name__", None) if value is not None else None
            name = getattr(value, "__name__", "")
        if module and module.split(".")[0] in ("jax", "jaxlib"):
            if (self.failing is not None and name in JOINING and e.args and vals[0].empty and not vals[0].traced
                    and (isinstance(e.args[0], syntax.List) or self.joined_list(e.args[0]) in self.unaliased)):
                # `jnp.stack(seen)` of a list known to be empty (fuzzer seed 5040): JAX raises
                # while the output stages it, where Python may not run it.
                raise self.fails_while_staged(e, f"ValueError: Need at least one array to {JOINING[name]}.")
            if name in JAX_STATIC:
                return e, STATIC
            if name == "tree_leaves":
                return e, Val(traced=traced, container=True)
            return e, call_result(name, vals, True, n_args=len(e.args))
        if owner is not None:
            if (e.func.attr == "pop" and self.failing is not None and owner.empty and not owner.traced
                    and isinstance(e.func.value, syntax.Name) and e.func.value.id in self.unaliased):
                raise self.fails_while_staged(e, "IndexError: pop from empty list")
            if (e.func.attr == "clear" and not e.args and owner.ctype == "list" and not owner.traced
                    and isinstance(e.func.value, syntax.Name) and e.func.value.id in self.unaliased):
                # A list nothing else holds is empty after `clear()` (as after `= []`).
                scope.set(e.func.value.id, replace(owner, empty=True, elts=None, items=None))
            if e.func.attr == "sort" and owner.traced and owner.container:  # (a carried list is traced)
                self.needs_concrete(e, "sorts traced values (Python compares them)")
            if e.func.attr in _SEARCHING and e.args and not isinstance(e.args[0], syntax.Starred):
                self.searched(e.func.value, owner, e.args[0], vals[0], e,
                              staged_by_runtime=e.func.attr != "remove" and len(e.args) == 1)
            if e.func.attr in CONTAINER_METHODS:
                return e, Val(traced=fval.traced or traced, container=True)
            if owner.traced and not owner.container:  # an array method (x.sum())
                return e, call_result(e.func.attr, vals, True, method_of=owner, n_args=len(e.args))
            return e, Val(traced=fval.traced or traced)
        if module and module.split(".")[0] in ("numpy", "math") and name not in JAX_STATIC:
            if traced:  # np.sin(i), math.sqrt(i) of a traced value: Python needs a concrete one
                self.needs_concrete(e, "converts a traced value to a NumPy array (or a Python number)")
            elif module.split(".")[0] == "numpy":
                return e, Val(host=True)  # a NumPy value: indexed by Python
        return e, Val(traced=traced or fval.traced)

    def self_name(self):
        """The name of a method's first parameter (``self``), or None."""
        if not self.is_method:
            return None
        params = self.fn.args.posonlyargs + self.fn.args.args
        return params[0].id if params else None

    def class_hosts(self) -> set:
        """Attributes the method's class gives, in every assignment ``self.X = ...`` of its
        methods, a list, tuple or dict display or a NumPy call: values Python indexes."""
        found = getattr(self, "_class_hosts", None)
        if found is not None:
            return found
        found, other = set(), set()
        owner = next((c for c in syntax.walk(self.module.tree) if isinstance(c, syntax.ClassDef)
                      and any(isinstance(f, syntax.FunctionDef) and f.name == self.fn.name
                              and f.lineno == self.fn.lineno for f in c.body)), None)
        for method in (owner.body if owner is not None else []):
            if not isinstance(method, syntax.FunctionDef) or not (method.args.posonlyargs + method.args.args):
                continue
            me = (method.args.posonlyargs + method.args.args)[0].id
            for n in syntax.walk(method):
                targets = n.targets if isinstance(n, syntax.Assign) else [n.target] if isinstance(
                    n, (syntax.AugAssign, syntax.AnnAssign)) else []
                for t in targets:
                    if isinstance(t, syntax.Attribute) and isinstance(t.value, syntax.Name) and t.value.id == me:
                        value = getattr(n, "value", None)
                        host = isinstance(n, syntax.Assign) and (
                            isinstance(value, (syntax.List, syntax.Tuple, syntax.Dict)) or isinstance(value, syntax.Call)
                            and (self.module.dotted(value.func) or "").split(".")[0] == "numpy")
                        (found if host else other).add(t.attr)
        self._class_hosts = found = found - other
        return found

    def formats_traced(self, node, scope) -> bool:
        """Does ``node`` make text of a traced variable (an f-string field, ``str(i)``)?"""
        for n in syntax.walk(node):
            parts = []
            if isinstance(n, syntax.FormattedValue):
                parts = [n.value]
            elif isinstance(n, syntax.Call) and isinstance(n.func, syntax.Name) and n.func.id in ("str", "repr", "format") \
                    and not scope.bound(n.func.id):
                parts = n.args
            if any(isinstance(m, syntax.Name) and scope.get(m.id).traced for p in parts for m in syntax.walk(p)):
                return True
        return False

    def needs_concrete(self, e, reason):
        """``e`` uses a traced value where Python needs a concrete one: a staged loop whose
        body does so runs as a Python loop, as the runtime's does (``Loops.concrete_uses``)."""
        for uses in self.concrete_stack:
            uses.append((e, reason))

    def module_hosts(self) -> set:
        """Module-level names bound to a tuple display or a NumPy call (``C = np.array(...)``)
        by every module-level assignment to them: values Python indexes."""
        found = getattr(self.module, "_hosts", None)
        if found is None:
            found, other = set(), set()
            for stmt in self.module.tree.body:
                if not isinstance(stmt, (syntax.Assign, syntax.AnnAssign)) or stmt.value is None:
                    other |= writes([stmt])
                    continue
                value = stmt.value
                host = isinstance(value, syntax.Tuple) or isinstance(value, syntax.Call) and (
                    self.module.dotted(value.func) or "").split(".")[0] == "numpy"
                targets = stmt.targets if isinstance(stmt, syntax.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, syntax.Name):
                        (found if host else other).add(t.id)
            self.module._hosts = found = found - other
        return found

    def check_call_effect(self, e, scope):
        """A function of the file called in a staged body that changes a list, dict or set it
        is handed (``push(out, v)``), which the body did not make: the change would happen
        once, while tracing. The runtime refuses it (``call-effect``) when it sees the
        container change; here the callee's own code says so."""
        node = self.functions.get(e.func.id) if scope.bound(e.func.id) else next(
            (f for f in self.module.tree.body if isinstance(f, syntax.FunctionDef) and f.name == e.func.id), None)
        if node is None or not hasattr(node, "args"):
            return
        changed = _changed_parameters(node)
        if not changed:
            return
        params = syntax.param_names(node.args)
        handed = [(params[i], a) for i, a in enumerate(e.args[:len(params)])]
        handed += [(kw.arg, kw.value) for kw in e.keywords if kw.arg is not None]
        about, made_here = self.staged_about[-1]
        for param, arg in handed:
            if param not in changed or not isinstance(arg, syntax.Name) or arg.id in made_here:
                continue
            val = scope.get(arg.id)
            if val is None or not val.container:
                continue
            kind = val.ctype if val.ctype in ("list", "dict", "set") else "list"
            example = errors.CHANGED_HERE[kind].format(name=arg.id)
            # (The runtime refuses it too under a traced `if`; a loop with static bounds it runs in Python.)
            raise self.refuse("call-effect", e, runtime_can=not about["stmt"].startswith("the `if`"),
                              target=f"'{arg.id}', a {kind},", name=arg.id, example=example,
                              stmt=about["stmt"], source=about["source"])

    def may_raise(self, name, scope, seen) -> bool:
        """Does the function ``name`` (nested, or a function of the module) hold an ``assert``
        or a ``raise``, also in the functions it calls by name? The output runs it while
        tracing, where the runtime raises only when the program runs it."""
        seen.add(name)
        if not scope.bound(name):
            return name in self.module_raising()
        node = self.functions.get(name)
        for n in syntax.walk(node) if node is not None else ():
            if isinstance(n, (syntax.Assert, syntax.Raise)):
                return True
            if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Name) and n.func.id not in seen \
                    and self.may_raise(n.func.id, scope, seen):
                return True
        return False

    def check_unbound_reads(self, e, scope):
        """A function called in code staged where Python may not run it, which reads a
        variable Python finds unbound there (after ``del``; fuzz seed 5244): the output would
        raise UnboundLocalError while tracing. Where every call surely raises it, the
        runtime's error for the staged code (``branch-fails``, ...); where it may, --standalone
        cannot tell (the runtime raises it while staging, on the runs that find it unbound)."""
        name = e.func.id
        if scope.bound(name):
            node = self.functions.get(name)
            before = self.definitions.get(id(node)) if node is not None else None
            body = before[0] if before is not None else []
            maybe = any(self.op_of(n) == "assigned" for part in (body if isinstance(body, list) else [body])
                        for n in patterns.walk_own(part))  # a def's statements, or a lambda's expression
            surely = None
        else:
            maybe, surely = self.module_unbound().get(name, (False, None))
        if surely is not None:
            raise self.fails_while_staged(e, f"UnboundLocalError: cannot access local variable '{surely}' where it is "
                                             "not associated with a value")
        if maybe:
            raise self.refuse("standalone-op", e, call=f"{name} (it may read a variable where it is unbound, in code "
                                                       "staged where Python may not run it)")

    def module_unbound(self) -> dict:
        """The module's functions that may read a variable where it is unbound, or call one
        that does (by name): name -> (True, the name every call reads unbound, or None)."""
        found = getattr(self.module, "_unbound", None)
        if found is None:
            defs = {f.name: f for f in self.module.tree.body if isinstance(f, syntax.FunctionDef)}
            calls = {name: {n.func.id for n in syntax.walk(f) if isinstance(n, syntax.Call)
                            and isinstance(n.func, syntax.Name) and n.func.id in defs} for name, f in defs.items()}
            found = {}
            for name, f in defs.items():
                maybe, surely = patterns.unbound_reads(f)
                if maybe:
                    found[name] = (True, surely)
            while True:
                more = {name for name in defs if calls[name] & set(found)} - set(found)
                if not more:
                    break
                found.update((name, (True, None)) for name in more)
            self.module._unbound = found
        return found

    def module_reaches(self, name) -> set:
        """Names of the module's functions that its function ``name`` calls, directly or
        through others (by name), ``name`` itself where it is called again."""
        calls = getattr(self.module, "_calls", None)
        if calls is None:
            defs = {f.name: f for f in self.module.tree.body if isinstance(f, syntax.FunctionDef)}
            calls = {name: {n.func.id for n in syntax.walk(f) if isinstance(n, syntax.Call)
                            and isinstance(n.func, syntax.Name) and n.func.id in defs} for name, f in defs.items()}
            self.module._calls = calls
        seen, todo = set(), [name]
        while todo:
            for callee in calls.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    def module_raising(self) -> frozenset:
        """Names of the module's functions that hold an ``assert`` or ``raise``, or call one
        that does (by name)."""
        found = getattr(self.module, "_raising", None)
        if found is None:
            defs = {f.name: f for f in self.module.tree.body if isinstance(f, syntax.FunctionDef)}
            calls = {name: {n.func.id for n in syntax.walk(f) if isinstance(n, syntax.Call)
                            and isinstance(n.func, syntax.Name) and n.func.id in defs} for name, f in defs.items()}
            found = {name for name, f in defs.items()
                     if any(isinstance(n, (syntax.Assert, syntax.Raise)) for n in syntax.walk(f))}
            while True:
                more = {name for name in defs if calls[name] & found} - found
                if not more:
                    break
                found |= more
            self.module._raising = found = frozenset(found)
        return found

    def joined_list(self, arg):
        """The name of the list ``jnp.stack(arg)`` joins: ``arg``, or ``lst`` of
        ``ops.stacked(lst)`` (see ``op_stack``); None for anything else."""
        if (isinstance(arg, syntax.Call) and isinstance(arg.func, syntax.Attribute) and arg.func.attr == "stacked"
                and isinstance(arg.func.value, syntax.Name) and arg.func.value.id == self.ops and len(arg.args) == 1):
            arg = arg.args[0]
        return arg.id if isinstance(arg, syntax.Name) else None

    def empty_global(self, name, scope) -> bool:
        """Is ``name`` a module's list bound once, to ``[]``, that no code of the module
        changes or hands to a function (only indexes it, reads it with a builtin such as
        ``len``, iterates over it, or returns it)? Then it is taken to be empty (fuzzer seed
        2079: ``LOG[0]`` after a traced ``and``; seed 5040: a loop over it never runs). (Code
        outside the module could fill it: at worst a refusal of what would run, or a body
        analysed as never running.)"""
        if scope.bound(name) or name in self.ctx.closure:
            return False
        empty = getattr(self.module, "_empty_lists", None)
        if empty is None:
            tree = self.module.tree
            parents = {id(c): n for n in syntax.walk(tree) for c in syntax.iter_child_nodes(n)}
            starts = {t.id for stmt in tree.body if isinstance(stmt, syntax.Assign)
                      and isinstance(stmt.value, syntax.List) and not stmt.value.elts
                      for t in stmt.targets if isinstance(t, syntax.Name)}
            empty, changed = set(), set()
            for n in syntax.walk(tree):
                if isinstance(n, (syntax.Global, syntax.Nonlocal)):
                    changed.update(n.names)
                if not isinstance(n, syntax.Name) or n.id not in starts:
                    continue
                parent = parents.get(id(n))
                if not isinstance(n.ctx, syntax.Load):
                    if n.id in empty:
                        changed.add(n.id)  # bound twice
                    empty.add(n.id)
                    continue
                if isinstance(parent, syntax.Subscript) and parent.value is n or isinstance(parent, syntax.Return):
                    continue
                if isinstance(parent, syntax.Tuple) and isinstance(parents.get(id(parent)), syntax.Return):
                    continue
                if isinstance(parent, (syntax.For, syntax.comprehension)) and parent.iter is n:  # iterated over
                    continue
                if (isinstance(parent, syntax.Call) and n in parent.args and isinstance(parent.func, syntax.Name)
                        and parent.func.id in READERS and parent.func.id not in starts):
                    continue
                changed.add(n.id)
            self.module._empty_lists = empty = frozenset(empty - changed)
        return name in empty and self.ctx.resolve(name) is self.ctx.MISSING

    def never_defined(self, name, scope) -> bool:
        """Is ``name`` bound nowhere: not in this function, not anywhere in the module (a
        global, also one a function declares), not a builtin? Reading it raises NameError
        (fuzzer seed 3500, in a staged branch)."""
        if scope.bound(name) or name in self.ctx.globals or name in self.ctx.closure or hasattr(builtins, name):
            return False
        if name.startswith("__") or name in (self.ops, "jax") or name in self.refs.needed_imports \
                or name in self.refs.needed_helpers:
            return False
        bound = getattr(self.module, "_bound_anywhere", None)
        if bound is None:  # every name the module binds anywhere (None: `from m import *`, any name)
            bound = set()
            for n in syntax.walk(self.module.tree):
                if isinstance(n, syntax.Name) and not isinstance(n.ctx, syntax.Load):
                    bound.add(n.id)
                elif isinstance(n, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
                    bound.add(n.name)
                elif isinstance(n, (syntax.Global, syntax.Nonlocal)):
                    bound.update(n.names)
                elif isinstance(n, (syntax.Import, syntax.ImportFrom)):
                    bound.update((a.asname or a.name).split(".")[0] for a in n.names)
            star = any(isinstance(n, syntax.ImportFrom) and any(a.name == "*" for a in n.names)
                       for n in syntax.walk(self.module.tree))
            self.module._bound_anywhere = bound = frozenset() if star else frozenset(bound)
        if not bound:
            return False
        # (and not in the converted function, whose generated names the module does not bind)
        return name not in bound and not any(isinstance(n, syntax.Name) and n.id == name and not isinstance(
            n.ctx, syntax.Load) or isinstance(n, syntax.FunctionDef) and n.name == name for n in syntax.walk(self.fn))

    def check_late_reads(self, name, scope, call):
        """A nested function is lowered where it is defined, with what is known then of the
        variables it reads; Python reads them when it is called. Refuses a call where one of
        them is traced now but was not (or the reverse) and that lowers the function
        differently (fuzzer seed 1421: ``a if flag else 0.0`` in ``step``, and ``flag``
        traced after the ``def``): the runtime decides when the call runs."""
        node = self.functions[name]
        if id(node) not in self.definitions:
            return
        original, then = self.definitions[id(node)]
        changed = [n for n in sorted(free_names(node)) if scope.get(n).traced != then.get(n, STATIC).traced]
        if not changed:
            return
        lowered = [syntax.dump(self.dry(self.lower_definition, node, original, where)) for where in (Scope(None, then), scope)]
        if lowered[0] != lowered[1]:
            raise self.refuse("standalone-op", call, call=f"{name} (it reads '{changed[0]}', which is "
                                                          f"{'traced' if scope.get(changed[0]).traced else 'a Python value'} "
                                                          f"here but not where '{name}' is defined)")

    def lower_definition(self, node, original, scope):
        """A copy of the body of the nested function or lambda ``node``, lowered in ``scope``."""
        params = {p: TRACED for p in syntax.param_names(node.args)}
        with self.staging(None):
            if isinstance(node, syntax.Lambda):
                return self.expr(syntax.deepcopy(original), scope.child(params))[0]
            return syntax.Module(body=self.block(syntax.deepcopy(original), scope.child(params)), type_ignores=[])

    def reads_traced_free(self, name, scope, seen) -> bool:
        """Does the local function ``name`` (a nested ``def`` or a lambda) read a variable of
        the enclosing function that is traced now (also through another local function it
        calls)? Then its result is traced whatever its arguments (fuzzer seed 3435:
        ``g = lambda val: xs[-1]``, then ``g(a) or ...`` with a static ``a``)."""
        seen.add(name)
        for free in sorted(free_names(self.functions[name])):
            if scope.get(free).traced:
                return True
            if free in self.functions and free not in seen and self.reads_traced_free(free, scope, seen):
                return True
        return False

    def searched(self, container, cval, value, vval, node, staged_by_runtime=False):
        """Refuses ``value in container`` (``container.remove(value)``, ``.index``, ``.count``)
        where Python compares a traced value with the items of a list or tuple and tests the
        answer (JAX's TracerBoolConversionError): the runtime's ``TracedComparisonError``
        (``ops.sought``, fuzzer seed 288). Not for dicts and sets (hashed, not compared), an
        empty list, or ``lst.remove(lst[0])`` (the first item *is* the value: no comparison).
        ``staged_by_runtime``: the runtime stages the search when the answers are traced
        numbers (``ops.search``), which --standalone does not write: the error says to drop
        --standalone."""
        if not cval.container or cval.ctype in ("dict", "set") or cval.empty:
            return
        if not (vval.traced or cval.traced and cval.ctype in ("list", "tuple")):  # (a dict's keys are hashed)
            return
        if (isinstance(value, syntax.Subscript) and isinstance(value.value, syntax.Name)
                and isinstance(container, syntax.Name) and value.value.id == container.id
                and isinstance(value.slice, syntax.Constant) and value.slice.value == 0):
            return
        name = container.id if isinstance(container, syntax.Name) else syntax.unparse(container)
        lineno = getattr(node, "lineno", 0)
        # A traced value is compared with item 0 first; a Python value with each item in turn.
        detail = f"{'a traced item' if cval.traced else 'an item'} == {'a traced value' if vval.traced else 'the value'}"
        code = "traced-comparison" if name.isidentifier() else "traced-comparison-display"  # `x in [a, b]`
        raise self.refuse(code, node, runtime_can=staged_by_runtime, what=f"'{name}'", name=name,
                          where=f"{display_filename(self.ctx.filename)}:{lineno}",
                          index="0" if vval.traced else "that holds a traced value", detail=detail,
                          source=self.ctx.line_text(lineno))

    def check_static_arguments(self, e, vals, scope):
        """Refuses a call of a converted function of the module that passes a traced value to
        a parameter --static makes a Python value there (fuzzer seed 259: `range(n)` of a
        helper given `ys.min()` was written as a static scan)."""
        if not (isinstance(e.func, syntax.Name) and e.func.id in self.static_callees and not scope.bound(e.func.id)):
            return
        positional, static = self.static_callees[e.func.id]
        if any(isinstance(a, syntax.Starred) for a in e.args) or any(kw.arg is None for kw in e.keywords):
            names = sorted(static) if any(v.traced for v in vals) else []
        else:
            names = [n for n, v in zip(positional, vals[:len(e.args)]) if v.traced and n in static]
            names += [kw.arg for kw, v in zip(e.keywords, vals[len(e.args):]) if v.traced and kw.arg in static]
        if names:
            raise self.refuse("standalone-static-traced", e, name=names[0], callee=e.func.id)

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
                return getattr(base, node.attr, None)
        return None

    def as_bool(self, node, val):
        """A traced value's truth as a boolean (``n != 0``), as lax tests need."""
        if val.kind == "bool":
            return node
        return syntax.Compare(left=node, ops=[syntax.NotEq()], comparators=[syntax.constant(0)])

    def predicate(self, node, val, where):
        """A traced condition as ``jax.lax.cond`` / ``while_loop`` take it, made as the runtime's
        ``ops.control.predicate`` makes it (``plan.condition_truth`` decides): as it is, ``!= 0``,
        or -- where it is not known to be a scalar -- ``cond_predicate(node, where)``, which
        checks that when the program is traced and refuses an array in the runtime's words."""
        form = plan.condition_truth(() if val.ndim == 0 else None, None if val.kind is None else val.kind == "bool")
        if form not in (plan.TRUTH_AS_IS, plan.TRUTH_NONZERO):  # not known, or refused: checked when traced
            return syntax.call(self.helper(helpers.PREDICATE), [node, syntax.constant(where)])
        return node if form == plan.TRUTH_AS_IS else self.as_bool(node, Val(kind=None))

    def harmless(self, node) -> bool:
        """Evaluating ``node`` (in converted code) where Python would not has no effect: it
        calls no user code, prints nothing, mutates no container."""
        for n in syntax.walk(node):
            if self.op_of(n) in _EFFECTS:
                return False
            if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and (
                    n.func.attr in _MUTATING or syntax.unparse(n.func).startswith(("jax.debug", "debug."))):
                return False
        return True

    def evaluate_anyway(self, node, scope) -> bool:
        """May ``node`` (an operand after a traced one of ``and`` / ``or``) be evaluated where
        Python would skip it? ``plan.evaluate_anyway`` decides, with its effects (``harmless``)
        and what it traces to (``primitives``)."""
        found = primitives.traced_to(node, lambda name: self.number_facts(name, scope), self.ops,
                                     lambda func: self.callee_name(func, scope))
        return plan.evaluate_anyway((name for name, _ in found), not self.harmless(node))

    def callee_name(self, func, scope):
        """``"abs"`` for the builtin, ``"jnp.minimum"`` for a function of jax.numpy, else None
        (the names ``primitives.traced_to`` knows)."""
        value = self.static_value(func, scope)
        if value is None:
            return None
        if isinstance(func, syntax.Name) and value is getattr(builtins, func.id, None):
            return func.id
        if isinstance(func, syntax.Attribute) and isinstance(func.value, syntax.Name) \
                and getattr(self.static_value(func.value, scope), "__name__", None) == "jax.numpy":
            return f"jnp.{func.attr}"
        return None

    def number_facts(self, name, scope):
        """``(traced, scalar)`` for a variable that holds a number, else None (the facts
        ``primitives.traced_to`` takes). A Python value of a type not known (a static
        argument) is taken to be a number that may not be a scalar: Python computes what
        code does with it (as when the runtime traces it), and that is not known to be
        scalar work."""
        val = scope.get(name)
        if val is None or val.undefined or val.stacked or val.container or val.none or val.ctype is not None:
            return None
        if val.is_number:
            return val.traced, val.ndim == 0
        if not val.traced and val.kind is None and name not in self.functions:
            return False, False
        return None

    # ------------------------------------------------------------------ ops in expressions
    def op_and(self, e, scope, truth):
        return self.logical(e, scope, truth, "and")

    def op_or(self, e, scope, truth):
        return self.logical(e, scope, truth, "or")

    def logical(self, e, scope, truth, which):
        operands = [e.args[0]] + [lam.body for lam in e.args[1:]]
        cheap = [self.evaluate_anyway(o, scope) for o in operands]
        # Python short-circuits while the value so far is static; from the first traced one on, the
        # plan decides how each later operand combines. Those later operands are traced whatever
        # the value turns out to be: lowered as a staged body (`ops.outside` there is refused).
        lowered, first_traced = [], None
        where = f"{display_filename(self.ctx.filename)}:{getattr(e, 'lineno', '?')}"
        failing = ("operand-fails", {"kind": which, "where": where, "source": self.ctx.line_text(getattr(e, "lineno", 0)),
                                     "needed": "true" if which == "and" else "false"})
        for i, o in enumerate(operands):
            self.staged += first_traced is not None
            try:
                with self.staging(failing if first_traced is not None else self.failing):
                    lowered.append(self.expr(o, scope, truth))
            finally:
                self.staged -= first_traced is not None
            if first_traced is None and plan.logical_form(lowered[-1][1].traced, True) != plan.PYTHON:
                first_traced = i
        py_op = syntax.And() if which == "and" else syntax.Or()
        if first_traced is None:
            kind = lowered[0][1].kind
            for _, v in lowered[1:]:
                kind = kind if kind == v.kind else None
            new = syntax.BoolOp(op=py_op, values=[n for n, _ in lowered])
            return syntax.copy_location(new, e), Val(kind=kind)
        head, tail = lowered[:first_traced], lowered[first_traced:]
        node, val = tail[0]
        for (other, oval), harmless in zip(tail[1:], cheap[first_traced + 1:]):
            form = plan.logical_form(True, harmless)
            booleans = truth or (val.kind == "bool" and oval.kind == "bool")
            ndim = None if None in (val.ndim, oval.ndim) else max(val.ndim, oval.ndim)
            if form == plan.COND and booleans:  # `other` runs only where Python runs it
                if oval.kind != "bool":
                    other = self.jnp("asarray", [other], {"dtype": syntax.name("bool")})
                branches = [syntax.lambda_(other), syntax.lambda_(syntax.constant(which == "or"))]
                node = syntax.call(self.ref("jax.lax.cond"), [self.as_bool(node, val)] + branches[:: 1 if which == "and" else -1])
                val = Val(traced=True, kind="bool", ndim=0)
            elif form == plan.COND:
                # Python's value, `other if a else a` (`and`), under lax.cond: one shape on both
                # sides, as the runtime's cond needs (else it refuses it), `a` read twice.
                if val.ndim is None or val.ndim != oval.ndim:
                    raise self.refuse("standalone-logical-value", e, op=which,
                                      why="its later operands may run where Python skips them (no division, "
                                          "unknown call or effect), and with lax.cond only when the operands are "
                                          "known to have one shape")
                first = node
                if not isinstance(node, (syntax.Name, syntax.Constant)):
                    temp = self.new_name("operand")
                    first, node = syntax.NamedExpr(target=syntax.name(temp, "store"), value=node), syntax.name(temp)
                sides = [(other, oval), (node, val)][:: 1 if which == "and" else -1]
                callee = self.cond_callee([sides[0][1]], [sides[1][1]])
                node = syntax.call(callee, [self.as_bool(first, val)] + [syntax.lambda_(n) for n, _ in sides])
                val = staged_output(sides[0][1], sides[1][1], *casts(sides[0][1], sides[1][1]))
            elif booleans:
                node = self.jnp(f"logical_{which}", [node, other])
                val = Val(traced=True, kind="bool", ndim=ndim)
            else:  # Python's value, the first falsy (truthy) operand: `a` is read twice
                first = node
                if not isinstance(node, (syntax.Name, syntax.Constant)):
                    temp = self.new_name("operand")
                    first, node = syntax.NamedExpr(target=syntax.name(temp, "store"), value=node), syntax.name(temp)
                args = [first, other, node] if which == "and" else [first, node, other]
                node = self.jnp("where", args)
                val = Val(traced=True, ndim=ndim, kind=join_kinds(val.kind, oval.kind))
        if head:
            node = syntax.BoolOp(op=py_op, values=[n for n, _ in head] + [node])
            val = Val(traced=True, kind="bool" if val.kind == "bool" and all(v.kind == "bool" for _, v in head) else None)
        return syntax.copy_location(node, e), val

    def op_not(self, e, scope, truth):
        operand, val = self.expr(e.args[0], scope, truth=True)
        if not val.traced:
            return syntax.copy_location(syntax.unary_not(operand), e), Val(kind="bool", ndim=0)
        return syntax.copy_location(self.jnp("logical_not", [operand]), e), Val(traced=True, kind="bool", ndim=val.ndim)

    def op_is(self, e, scope, truth):
        return self.identity(e, scope, negate=False)

    def op_is_not(self, e, scope, truth):
        return self.identity(e, scope, negate=True)

    def identity(self, e, scope, negate):
        """``ops.is_(a, b, text, flag=...)``: the runtime's decisions (``ops.logical.is_``) from
        what is known to be traced: Python's ``is`` of values that are not; a flag bound only
        to literals compared with ``True`` / ``False`` as its value; else the runtime's refusal."""
        (left, lval), (right, rval) = self.expr(e.args[0], scope), self.expr(e.args[1], scope)
        op = syntax.IsNot() if negate else syntax.Is()
        if not (lval.traced or rval.traced):
            return syntax.copy_location(syntax.Compare(left=left, ops=[op], comparators=[right]), e), Val(kind="bool", ndim=0)
        flag = next((k.value.value for k in e.keywords if k.arg == "flag"), None)
        (traced, tval), (other, oval) = ((left, lval), (right, rval)) if lval.traced else ((right, rval), (left, lval))
        both = lval.traced and rval.traced
        if not both and isinstance(other, syntax.Constant) and not isinstance(other.value, (bool, int, float, complex)):
            return syntax.copy_location(syntax.constant(negate), e), Val(kind="bool", ndim=0)  # never a string
        known = other.value if isinstance(other, syntax.Constant) and isinstance(other.value, bool) else None
        if flag is not None and known is not None and not both and tval.kind in ("bool", None) and tval.ndim in (0, None):
            node = traced if known != negate else self.jnp("logical_not", [traced])
            return syntax.copy_location(node, e), Val(traced=True, kind="bool", ndim=0)
        lineno = getattr(e, "lineno", 0)
        why = (f"Python's answer depends on whether the object is `{known}` itself or a NumPy or JAX bool (which never "
               "is), and a traced value stands for an array, not for one Python object." if known is not None and not both
               else "both operands are traced, and whether Python would hold one object or two is not known while "
                    "tracing." if both else "a traced value stands for an array, not for one Python object.")
        raise self.refuse("traced-identity", e, text=e.args[2].value, what=f"'{flag}'" if flag else "an operand",
                          where=f"{display_filename(self.ctx.filename)}:{lineno}", why=why,
                          source=self.ctx.line_text(lineno))

    def op_if_else(self, e, scope, truth):
        test, a_fn, b_fn = e.args
        test, tval = self.expr(test, scope, truth=True)
        if plan.ternary_form(tval.traced) == plan.PYTHON:
            a, aval = self.expr(a_fn.body, scope, truth)
            b, bval = self.expr(b_fn.body, scope, truth)
            return syntax.copy_location(syntax.IfExp(test=test, body=a, orelse=b), e), aval.join(bval)
        site = sites.Site("ternary", self.ctx.filename, getattr(e, "lineno", 0))
        self.staged += 1
        try:
            with self.staging(("branch-fails", {"side": "if", **self.about(site)})):
                a, aval = self.expr(a_fn.body, scope, truth)
            with self.staging(("branch-fails", {"side": "else", **self.about(site)})):
                b, bval = self.expr(b_fn.body, scope, truth)
        finally:
            self.staged -= 1
        if (aval.text or bval.text) and self.final:  # lax.cond gives arrays only
            raise self.refuse("standalone-op", e, call=f"{self.ops}.if_else(...) giving a string (jax.lax carries "
                                                       "arrays only)")
        test = self.predicate(test, tval, site.where)
        new = syntax.call(self.cond_callee([aval], [bval]), [test, syntax.lambda_(a), syntax.lambda_(b)])
        return syntax.copy_location(new, e), staged_output(aval, bval, *casts(aval, bval))

    def op_assigned(self, e, scope, truth):
        """``ops.assigned(x)``: a read of ``x`` where Python might find it unbound. The output
        reads ``x``, which Python finds unbound exactly where the original does -- unless it
        was given a zero before a staged loop (the runtime checks that read when it runs)."""
        name = e.args[0]
        if isinstance(name, syntax.Name) and name.id in self.flagged:  # a staged `if` assigns it on one side
            return self.checked_read(e, scope, truth)
        if isinstance(name, syntax.Name) and name.id in self.zeroed:
            raise self.refuse("standalone-first-assigned", e, **self.zeroed[name.id])
        if self.staged and isinstance(name, syntax.Name) and scope.get(name.id).undefined:
            # In a staged body the name is a parameter of the body's function: reading it never
            # raises there, where Python raises UnboundLocalError (after `del`, or before any
            # assignment on this path); the runtime checks it when the program runs. Unbound
            # on every path (`del s`, then `s`, in a staged branch or the body of a loop with
            # traced bounds), the runtime refuses it while staging (`branch-fails`,
            # `body-fails`, ...), unless a loop around it can run as Python.
            if self.failing is not None and not self.falling_back and scope.get(name.id) == UNDEFINED:
                raise self.fails_while_staged(e, f"UnboundLocalError: cannot access local variable '{name.id}' where "
                                                 "it is not associated with a value")
            raise self.refuse("standalone-op", e, call=f"{self.ops}.assigned (a read of '{name.id}' in a staged body, "
                                                       "where Python may find it unbound)")
        return self.expr(name, scope, truth)

    def op_bound(self, e, scope, truth):
        """``ops.bound(x)``: a read of ``x`` after a loop, where the loop's exit proves that an
        iteration assigned it."""
        return self.expr(e.args[0], scope, truth)

    def op_outside(self, e, scope, truth):
        """``ops.outside(obj)``: ``obj``, a value the function changes but does not carry;
        changing it in a staged body would happen once, while tracing -- and anywhere in
        the function, under jax.jit, for a module's list, dict or set (``LOG.append(x)``),
        which the runtime refuses too."""
        if self.staged:
            raise self.refuse("standalone-op", e, call=f"{self.ops}.outside (a change of a value not carried, in a "
                                                       "staged body)")
        target = e.args[0]
        kind = self.module_containers().get(target.id) if isinstance(target, syntax.Name) else None
        if kind is not None:
            method = e.args[1].value if len(e.args) > 1 and isinstance(e.args[1], syntax.Constant) else None
            raise self.refuse("traced-effect", e, runtime_can=False, target=f"the global {kind} '{target.id}'",
                              action=f"changed (`.{method}`)" if method else "changed")
        return self.expr(target, scope, truth)

    def module_containers(self) -> dict:
        """Module-level names bound to a list, dict or set (a display, a comprehension or a
        call of ``list`` / ``dict`` / ``set``): name -> its kind."""
        found = getattr(self.module, "_containers", None)
        if found is None:
            found = {}
            kinds = {syntax.List: "list", syntax.ListComp: "list", syntax.Dict: "dict", syntax.DictComp: "dict",
                     syntax.Set: "set", syntax.SetComp: "set"}
            for stmt in self.module.tree.body:
                value = getattr(stmt, "value", None) if isinstance(stmt, (syntax.Assign, syntax.AnnAssign)) else None
                kind = kinds.get(type(value))
                if kind is None and isinstance(value, syntax.Call) and isinstance(value.func, syntax.Name) \
                        and value.func.id in ("list", "dict", "set"):
                    kind = value.func.id
                targets = stmt.targets if isinstance(stmt, syntax.Assign) else [getattr(stmt, "target", None)]
                for t in targets:
                    if isinstance(t, syntax.Name):
                        if kind is None:
                            found.pop(t.id, None)
                        else:
                            found[t.id] = kind
            self.module._containers = found
        return found

    def op_call(self, e, scope, truth):
        new = syntax.Call(func=e.args[0], args=e.args[1:], keywords=e.keywords)
        return self.call(syntax.copy_location(new, e), scope)

    def op_stacked(self, e, scope, truth):
        return self.allow_stacked(e.args[0], scope, truth)

    def op_stack(self, e, scope, truth):
        # ops.stack(jnp.stack, out, ...): here a stacked list is already its stacked array,
        # which jnp.stack along axis 0 returns unchanged.
        lst = syntax.copy_location(syntax.call(f"{self.ops}.stacked", [e.args[1]]), e.args[1])
        new = syntax.Call(func=e.args[0], args=[lst, *e.args[2:]], keywords=e.keywords)
        return self.call(syntax.copy_location(new, e), scope)

    def op_enumerate(self, e, scope, truth):
        e.func = syntax.copy_location(syntax.name("enumerate"), e.func)
        return self.call(e, scope)

    def op_range(self, e, scope, truth):
        """``ops.range(...)``, a range not written in a ``for`` (``r = range(n)``): the
        builtin, where its bounds are Python values. With traced bounds only the runtime can
        stage a loop over it."""
        e.func = syntax.copy_location(syntax.name("range"), e.func)
        node, val = self.call(e, scope)
        if val.traced:
            raise self.refuse("standalone-op", e, call=f"{self.ops}.range (a range with traced bounds)")
        return node, val

    def op_zip(self, e, scope, truth):
        e.func = syntax.copy_location(syntax.name("zip"), e.func)
        return self.call(e, scope)

    def op_print(self, e, scope, truth):
        vals = []
        for i, a in enumerate(e.args):
            e.args[i], v = self.expr(a, scope)
            vals.append(v)
        for kw in e.keywords:
            kw.value, _ = self.expr(kw.value, scope)
        # The output is meant for jax.jit, which runs Python's print once per trace: as in a
        # function autolax.jit traces, every print is written to print when the program runs.
        if plan.print_form(any(v.traced for v in vals), in_staged_body=True) == plan.PYTHON:
            e.func = syntax.copy_location(syntax.name("print"), e.func)
            return e, STATIC
        keywords = {kw.arg: kw.value for kw in e.keywords}
        sep = keywords.pop("sep", syntax.constant(" "))
        if keywords or any(isinstance(a, syntax.Starred) for a in e.args) or not (
            isinstance(sep, syntax.Constant) and isinstance(sep.value, str)
        ):
            raise self.refuse("standalone-print", e, what="`end`, `file`, `flush`, a non-constant `sep` or *args")
        parts, args = [], []
        for a, v in zip(e.args, vals):
            if isinstance(a, syntax.Constant) and isinstance(a.value, str):
                parts.append(a.value.replace("{", "{{").replace("}", "}}"))
            elif v.is_number:
                parts.append("{}")
                args.append(a)
            else:  # jax.debug.print takes arrays only
                raise self.refuse("standalone-print", a, what="a value that is neither a string constant nor a "
                                                               "number or array")
        fmt = sep.value.replace("{", "{{").replace("}", "}}").join(parts)
        # In program order where JAX sees one device, as the runtime's rule for a program that
        # cannot see where its arguments live (ops.calls.print_in_order); JAX orders effects
        # on one device only.
        one_device = syntax.parse_expr(f"{self.refs('jax.device_count')}() == 1")
        new = syntax.call(self.ref("jax.debug.print"), [syntax.constant(fmt)] + args, {"ordered": one_device})
        return syntax.copy_location(new, e), STATIC


def _changed_parameters(fn) -> set:
    """The parameters of ``fn`` (a def or lambda) whose object its own code changes in place:
    a list/dict/set method that changes it, item or attribute assignment, ``del p[i]``."""
    params = set(syntax.param_names(fn.args))
    out = set()
    for n in syntax.walk(fn):
        if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and n.func.attr in MUTATING_METHODS \
                and isinstance(n.func.value, syntax.Name) and n.func.value.id in params:
            out.add(n.func.value.id)
        targets = n.targets if isinstance(n, (syntax.Assign, syntax.Delete)) else \
            [n.target] if isinstance(n, (syntax.AugAssign, syntax.AnnAssign)) else []
        for t in targets:
            if isinstance(t, (syntax.Subscript, syntax.Attribute)) and isinstance(t.value, syntax.Name) \
                    and t.value.id in params:
                out.add(t.value.id)
    return out
