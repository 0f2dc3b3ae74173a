"""``--standalone``: ``while`` and ``for`` loops.

A loop whose condition, bounds or iterable, or whose carried values (once they settle), are
traced becomes ``jax.lax.while_loop`` / ``fori_loop`` / ``scan``; otherwise it is written back
as the Python loop. ``for`` with ``break`` or an early ``return`` becomes a ``while_loop``
over an index, which stops at the exit.
"""

from __future__ import annotations

from dataclasses import dataclass

from autolax.sourcegen.standalone import breaks
from autolax.sourcegen.standalone.patterns import (
    as_builtin_iter,
    is_const,
    item_elts,
    negate,
    range_test,
    rereadable,
    without_return,
    writes_of,
)
from autolax.sourcegen.standalone.values import STATIC, TRACED, Val, item_of
from autolax.transpile import syntax


class Loops:
    """Loop lowering, mixed into ``Lowering``."""

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
            body = self.block(without_return(b_def.body), scope)
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
        elif seq.kind == "range" and is_const(seq.step, 1):
            out = self.fori(s, b_def, item, names, init, seq, body_scope, targets)
        else:
            out = self.scan(s, b_def, item, names, init, seq, body_scope, targets)
        for n, v in carried.items():
            scope.set(n, v)
        return prelude + out

    def python_for(self, b_def, item, test, seq, scope):
        body = without_return(b_def.body)
        target = syntax.name(item, "store")
        if item in self.ctx.namer.generated and body and isinstance(body[0], syntax.Assign):
            first = body[0]
            if isinstance(first.value, syntax.Name) and first.value.id == item and len(first.targets) == 1:
                target, body = first.targets[0], body[1:]
        self.bind(target, seq.item_val, scope)
        body = self.block(body, scope)
        if test is not None:
            test, _ = self.expr(test, scope, truth=True)
            body.append(syntax.copy_location(syntax.if_stmt(negate(test), [syntax.Break()]), b_def))
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
            args = [stop] if is_const(start, 0) and is_const(step, 1) else [start, stop] if is_const(step, 1) else [start, stop, step]
            python_iter = syntax.call(syntax.name("range"), args)
            item = Val(traced=True) if traced else Val(kind="int")
            return Iteration("range", traced, False, False, item, python_iter, start=start, stop=stop, step=step, step_val=c)
        iterable = source[1]
        node, val, array = self.iterable(iterable, scope)
        item = Val(traced=True, elts=item_elts(node, self.ops)) if array else item_of(val)
        python = as_builtin_iter(syntax.deepcopy(node), self.ops)
        return Iteration("iter", val.traced, array, not array, item, python, xs=node)

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
        body_writes = writes_of(b_def.body)
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
            bound = range_test(index, stop, step)
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
        if rereadable(node, set(body_writes) | set(names)):
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


@dataclass
class Iteration:
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
