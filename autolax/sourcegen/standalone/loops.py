"""``--standalone``: ``while`` and ``for`` loops.

Gathers what the runtime would observe about a loop -- is its condition, range or iterable
traced, does it carry traced values, can it stop early, does it carry floating-point
values, does its body print, does it append to lists -- and writes the form
``autolax.plan`` chooses (``stages``, ``loop_form``, ``appends_forbidden``):

=====================================  ==============================================
``plan.PYTHON``                        the Python loop, as written
``lax.scan``                           ``jax.lax.scan`` over the array (or ``jnp.arange``;
                                       ``jax.lax.fori_loop`` with static bounds is one);
                                       appended items are its stacked outputs
``lax.fori_loop``                      ``jax.lax.fori_loop`` (traced bounds)
``lax.while_loop``                     ``jax.lax.while_loop`` (over an index for a ``for``)
``lax.while_loop (grad: masked ...)``  ``while_loop_with_masked_grad(...)``, a helper
``lax.scan (masked)``                  ``masked_while_loop(...)``, a helper
=====================================  ==============================================

The helpers are written once into the output file (``helpers``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autolax import plan
from autolax.analysis.activity import writes
from autolax.sourcegen.standalone import breaks, helpers, last_values
from autolax.sourcegen.standalone.patterns import (
    as_builtin_iter,
    REBOUND,
    changes_in_place,
    is_const,
    item_elts,
    length_change,
    length_text,
    NOT_LITERAL,
    literal_value,
    negate,
    range_test,
    rereadable,
    without_return,
)
from autolax.sourcegen.standalone.values import (
    NUMERIC,
    STATIC,
    TRACED,
    UNDEFINED,
    Val,
    carried,
    carry_may_change,
    inexact,
    item_of,
    promoted_width_unknown,
    traced_weak_first,
    weak_into_strong,
)
from autolax.transpile import syntax


@dataclass
class Iteration:
    """What a ``for`` iterates over."""

    kind: str  # "range" / "iter"
    traced: bool  # bounds or iterable traced (the loop's driver)
    python_only: bool  # a Python iterable: always a Python loop
    item_val: Val
    python_iter: object
    start: object = None
    stop: object = None
    step: object = None
    step_val: Val = STATIC
    xs: object = None
    start_val: Val = STATIC

    @property
    def static_trip(self) -> bool:
        return not self.traced or self.kind == "iter"  # an array's length is static

    def length(self):
        """The number of items of a range of literals (``range(3, 0, -1)``), else None."""
        bounds = [literal_value(b) for b in (self.start, self.stop, self.step)]
        if self.kind != "range" or not all(type(b) is int for b in bounds) or bounds[2] == 0:
            return None
        return len(range(*bounds))


@dataclass
class ItemTest:
    """A ``for`` loop's item test (``sites.Site.item_test``): the loop's ``if c: break`` run
    with each item before its iteration, or after each iteration (``after``). The call
    gives back the loop ``target`` and the flag saying whether the test ``stopped`` it; the
    function reads them after the loop or not (``target_read``, ``stopped_read``)."""

    after: bool
    target: str
    stopped: str
    target_read: bool
    stopped_read: bool


class Loops:
    """Loop lowering, mixed into ``Lowering``."""

    # ------------------------------------------------------------------ analysis
    def fixpoint(self, scope, names, run, outs=None):
        """Values of the carried ``names`` at the top of an iteration, if the loop ran as a
        Python loop: joined until they settle. ``run(child_scope)`` analyses one iteration;
        ``outs`` (a dict) receives the values an iteration ends with, before the join."""
        vals = {n: scope.get(n) for n in names}
        for _ in range(32):
            child = scope.child(dict(vals))
            self.dry(run, child)
            if outs is not None:
                outs.update((n, child.get(n)) for n in names)
            new = {n: vals[n].join(child.get(n)) for n in names}
            if new == vals:
                break
            vals = new
        return vals

    def reads_traced(self, fn_defs, names, scope) -> bool:
        """Does a loop function read a traced value of the enclosing code (not carried)?"""
        own = set(names)
        for fn_def in fn_defs:
            own |= set(syntax.param_names(fn_def.args)) | set(writes(fn_def.body))
        return any(isinstance(n, syntax.Name) and n.id not in own and scope.get(n.id).traced
                   for fn_def in fn_defs for n in syntax.walk(fn_def))

    def effects(self, fn_defs) -> bool:
        """Does a loop function print (``custom_jvp`` takes no effects), or call a function of
        this file that prints?"""
        printing = {f.name for f in self.module.tree.body if isinstance(f, syntax.FunctionDef)
                    and any(isinstance(n, syntax.Name) and n.id == "print" for n in syntax.walk(f))}
        for n in (n for fn_def in fn_defs for n in syntax.walk(fn_def)):
            callee = n.args[0] if self.op_of(n) == "call" else getattr(n, "func", None)
            if self.op_of(n) == "print" or isinstance(callee, syntax.Name) and callee.id in printing:
                return True
            if isinstance(n, syntax.Call) and syntax.unparse(n.func).startswith("jax.debug"):
                return True
        return False

    def initialise(self, names, vals, scope, where, site):
        """Statements giving the carried variables first assigned inside a staged loop a
        value before it: a zero of their type where Python binds them before every read
        (a return value), or where the loop only assigns them Python numbers; otherwise
        there is no type to give, and it is an error."""
        out = []
        for n in names:
            val = vals[n]
            if not val.undefined:
                continue
            code = "standalone-early-return" if n in self.ctx.return_values else "standalone-first-assigned"
            exact = n in self.ctx.pending or n in self.ctx.always_bound
            if scope.get(n) != UNDEFINED or not (exact or val.is_weak and not val.container):
                raise self.refuse(code, where, **self.about(site, n))
            out += self.initial_value(n, val, where, code, site)
            if not exact:  # Python leaves it unbound if the loop does not assign it
                self.zeroed[n] = self.about(site, n)
        return out

    def concrete_uses(self, loop_fns, test, values, scope) -> list:
        """Where the loop functions, run as a staged loop runs them (``values``: the carried
        variables and the item, traced), use a traced value where Python needs a concrete
        one (``Expressions.needs_concrete``): (node, reason) pairs."""
        uses = []
        self.concrete_stack.append(uses)
        try:
            def run():
                child = scope.child(dict(values))
                for fn_def in loop_fns:
                    if fn_def is not None:
                        self.block(syntax.deepcopy(fn_def.body), child)

            self.dry(run)
        finally:
            self.concrete_stack.remove(uses)
        return uses

    def python_when_concrete(self, needs, can_fall_back, site, why):
        """A staged loop whose body needs concrete values (a Python list or NumPy array
        indexed with the loop index, ``math.sqrt(i)``) runs as a Python loop, unrolled, as
        the runtime runs it (with an UnrolledLoopWarning) -- where it can: else it is the
        runtime's TracedValueError, up front."""
        if needs and not can_fall_back and self.final:
            node, reason = needs[0]
            raise self.refuse("traced-value", node, runtime_can=False, why=why,
                              reason=f"line {getattr(node, 'lineno', site.lineno)} {reason}",
                              fix="make the Python list or NumPy array the loop indexes a jax array before the "
                                  "loop (jnp.asarray), and use jnp in place of np / math on traced values.",
                              **self.about(site))

    def carry_mixed(self, names, vals, scope, outs) -> bool:
        """May the loop change the dtype of something it carries where ``promote`` cannot
        write the promoted type before it (kinds not known, or a Python number assigned to
        an array of a width nothing here knows: under x64 ``0.25`` is a float64 beside a
        float32 carry)? Then the file calls the ``promoting_*`` form of the loop (see
        ``helpers``), which finds the types when traced."""
        return any(carry_may_change(scope.get(n), vals[n]) or weak_into_strong(scope.get(n), outs.get(n, vals[n]))
                   for n in names)

    def length_changes(self, b_def, names, scope):
        """The carried containers a loop body changes the length of (name -> the change, an
        int or None where not known): a staged loop cannot carry them. (Items appended to
        a list the body does not change otherwise are the loop's stacked outputs, not a
        change: ``collected``.)"""
        changes = {}
        for n in names:
            if scope.get(n).container and not scope.get(n).undefined:
                change = length_change(b_def.body, n, self.ops, appends=changes_in_place(b_def.body, n))
                if change not in (0, REBOUND):
                    changes[n] = change
        return changes

    def refuse_length_change(self, changes, scope, b_def, site):
        """The runtime's error for a staged loop whose body surely changes a list's length
        (its trip count is traced, so it cannot run as a Python loop); --standalone's where
        the change is not known here."""
        name = sorted(changes)[0]
        change = changes[name]
        if change is None:
            raise self.refuse("standalone-length-change", b_def, **self.about(site, name))
        kind = scope.get(name).ctype or "list"
        code = "list-changes-length" if kind == "list" else "loop-structure"
        raise self.refuse(code, b_def, runtime_can=False, first=f"a {kind}",
                          second=f"a {kind} {length_text(change, than='')}", **self.about(site, name))

    def promote(self, names, vals, scope, where, staged=False):
        """``t = float(t)`` for a carry that starts as a narrower number than the loop makes
        it (``t = 0`` before ``t *= 0.5``): a lax loop traces its body with the types it
        starts from, and the runtime, too, starts the loop from the promoted types. (A Python
        loop over traced values is lowered once for all its iterations, so it starts so too;
        a ``staged`` loop carries a traced value even where the analysis found Python numbers.)"""
        out = []
        for n in names:
            entry, kind = scope.get(n), vals[n].kind
            if staged and promoted_width_unknown(entry, vals[n]):
                continue  # a promoting_* loop finds the type when traced (carry_may_change)
            if (vals[n].traced or staged) and entry.kind in NUMERIC and kind in NUMERIC and entry.kind != kind and not entry.container:
                if entry.traced:
                    value = self.jnp("asarray", [syntax.name(n)], {"dtype": syntax.name(kind)})
                else:
                    value = syntax.call(syntax.name(kind), [syntax.name(n)])
                out.append(syntax.copy_location(syntax.assign(syntax.name(n, "store"), value), where))
        return out

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

    def state(self, names):
        """The carry as a value: ``a``, ``(a, b)``, or ``None``."""
        return syntax.names_tuple(names) if names else syntax.constant(None)

    def unused(self):
        return "_" if "_" not in self.ctx.namer.used else self.new_name("ys")

    # ------------------------------------------------------------------ while
    def while_loop(self, s, call, scope, pending):
        t_ref, b_ref, init = call.args
        t_def, b_def = pending.pop(t_ref.id), pending.pop(b_ref.id)
        names = syntax.param_names(b_def.args)
        site = self.site(call, "while", names)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        test = t_def.body[-1].value
        _, first = self.dry(self.expr, syntax.deepcopy(test), scope, True)  # the runtime's first test

        def run(child):
            self.expr(syntax.deepcopy(test), child, truth=True)
            self.block(syntax.deepcopy(b_def.body), child)

        outs = {}
        vals = self.fixpoint(scope, names, run, outs)
        _, tval = self.dry(self.expr, syntax.deepcopy(test), scope.child(dict(vals)), True)
        state_traced = any(v.traced for v in vals.values()) or self.reads_traced([t_def, b_def], names, scope)
        staged = plan.stages(tval.traced, state_traced)
        changes = self.length_changes(b_def, names, scope) if staged else {}
        # The runtime runs a loop whose body changes a list's length as a Python loop, where
        # its condition is a Python value (and stays one).
        if changes and not (plan.can_fall_back(first.traced) and not tval.traced) and self.final:
            self.refuse_length_change(changes, scope, b_def, site)
        if staged and not changes:
            needs = self.concrete_uses([t_def, b_def], None, {n: carried(vals[n]) for n in names}, scope)
            self.python_when_concrete(needs, plan.can_fall_back(first.traced) and not tval.traced, site,
                                      "its bounds or condition are traced")
            changes = {"": None} if needs else changes  # as a body changing a list's length: a Python loop
        # A first test false by the literals its names were given (`k = 0; while k > 0:`):
        # Python runs no iteration and the runtime stages nothing (a lax loop would trace the
        # body, which may fail there). The variables keep their values.
        never = self.false_by_literals(test)
        if not staged or changes or never:
            prelude = [] if never else self.promote(names, vals, scope, t_def)
            for n, v in vals.items():
                if not never:
                    scope.set(n, v)
            test, _ = self.expr(test, scope, truth=True)
            with self.dead_if(never):
                body = self.block(without_return(b_def.body), scope.copy() if never else scope)
            loop = syntax.While(test=test, body=body or [syntax.Pass()], orelse=[])
            setattr(loop, breaks.PYTHON_LOOP, True)
            return prelude + [syntax.copy_location(loop, t_def)]
        facts = plan.LoopFacts("while")
        self.no_functions_carried(names, s, call)
        self.no_strings_carried(names * 2, [scope.get(n) for n in names] + [outs.get(n, vals[n]) for n in names], s, call)
        if self.final:
            self.collected(b_def, names, scope, site, facts, plan.can_fall_back(first.traced))
        mixed = self.carry_mixed(names, vals, scope, outs)
        inits = self.initialise(names, vals, scope, t_def, site) + self.promote(names, vals, scope, t_def, staged=True) \
            if self.final else []
        carried_vals = {n: carried(v, sized=not mixed) for n, v in vals.items()}
        # (In the body, a Python number the loop makes a float of an argument's width is of no
        # known dtype: the lax loop first traces it weakly typed.)
        body_vals = {n: carried(v, sized=not mixed and not traced_weak_first(scope.get(n), v)) for n, v in vals.items()}
        test, tval = self.expr(test, scope.child(dict(body_vals)), truth=True)
        with self.staging(("body-fails", self.about(site))), self.falling_back_if(plan.can_fall_back(first.traced)):
            body = self.staged_block(b_def.body, scope.child(dict(body_vals)), self.about(site))  # may not run
        param = self.carry_param(names)
        self.loop_function(t_def, [param], self.unpack(names, t_def), syntax.ret(self.predicate(test, tval, site.where)))
        self.loop_function(b_def, [param], self.unpack(names, b_def) + body[:-1], body[-1])
        lax_while = {plan.WHILE: "jax.lax.while_loop"}[plan.loop_form(facts)]  # the one form of a `while`
        callee = self.helper(helpers.PROMOTING_WHILE) if mixed else self.ref(lax_while)
        new = syntax.call(callee, [syntax.name(t_def.name), syntax.name(b_def.name), init])
        for n, v in carried_vals.items():
            scope.set(n, v)
        stmt = syntax.assign(targets, new) if targets is not None else syntax.expr_stmt(new)
        return inits + [t_def, b_def, syntax.copy_location(stmt, s)]

    # ------------------------------------------------------------------ for
    def for_range(self, s, call, scope, pending):
        start, stop, step, b_ref, init, *rest = call.args
        return self.for_loop(s, call, scope, pending, b_ref, rest, ("range", start, stop, step))

    def for_iter(self, s, call, scope, pending):
        iterable, b_ref, init, *rest = call.args
        return self.for_loop(s, call, scope, pending, b_ref, rest, ("iter", iterable))

    def for_loop(self, s, call, scope, pending, b_ref, rest, source):
        b_def = pending.pop(b_ref.id)
        t_def = pending.pop(rest[0].id) if rest else None
        item, *names = syntax.param_names(b_def.args)
        site = self.site(call, "for", names)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        test = t_def.body[-1].value if t_def is not None else None
        exits = None
        if site.item_test is not None:
            # `test: x` / `test: after x`: the call also gives back the target and whether
            # the test stopped the loop (the last two outputs), which are not carried.
            *outs, target_node, stopped_node = targets.elts
            targets = syntax.names_tuple([t.id for t in outs], "store")
            exits = ItemTest(site.test_after, target_node.id, stopped_node.id,
                             self.read_outside(target_node.id, [b_def, t_def]),
                             self.read_outside(stopped_node.id, [b_def, t_def]))
        seq = self.sequence(source, scope)
        if exits is None and self.never_iterates(seq, scope):
            # A Python loop over a list known to be empty (a module's `LOG = []`): its body
            # never runs, so it changes nothing the code after it sees (fuzzer seed 5040: a
            # list it appends to is still empty there) and nothing in it fails.
            with self.dead_if(True):
                return self.python_for(b_def, item, test, seq, scope.child({}), site)
        loop_fns = [b_def] + ([t_def] if t_def is not None else [])

        def run(child):
            child.set(item, seq.item_val)
            if test is not None and not (exits and exits.after):
                self.expr(syntax.deepcopy(test), child, truth=True)
            self.block(syntax.deepcopy(b_def.body), child)
            if test is not None and exits and exits.after:
                self.expr(syntax.deepcopy(test), child, truth=True)

        outs = {}
        vals = self.fixpoint(scope, names, run, outs)
        state_traced = any(v.traced for v in vals.values()) or self.reads_traced(loop_fns, [item] + names, scope)
        staged = not seq.python_only and plan.stages(seq.traced, state_traced)
        changes = self.length_changes(b_def, names, scope) if staged else {}
        if changes and not plan.can_fall_back(not seq.static_trip) and self.final:
            self.refuse_length_change(changes, scope, b_def, site)
        if staged and not changes:
            item_val = Val(traced=True, kind=seq.item_val.kind, ndim=seq.item_val.ndim,
                           elts=seq.item_val.elts and tuple(TRACED for _ in seq.item_val.elts))
            needs = self.concrete_uses(loop_fns, test, {**{n: carried(vals[n]) for n in names}, item: item_val}, scope)
            self.python_when_concrete(needs, plan.can_fall_back(not seq.static_trip), site, "its bounds or condition are traced")
            changes = {"": None} if needs else changes  # as a body changing a list's length: a Python loop
        # A range of literals with no item (`range(3, 0, 2)`): Python runs no iteration, and
        # the runtime stages nothing (a lax loop would trace the body, which may fail there).
        never = seq.kind == "range" and seq.length() == 0
        taken, _ = getattr(call, last_values.ITEMS, ((), False))
        if taken and (not staged or changes or never or not seq.static_trip or test is not None or self.staged):
            # The code after the loop reads its target from the sequence (``last_values``):
            # right for a staged loop over every item of a sequence of static length only, and
            # not in a staged body: there `if len(xs) > 0: x = xs[-1]` would leave `x` unbound
            # while tracing where Python may not run the code at all (a branch not taken), and
            # converting such a body traces code Python may never run, which --standalone
            # cannot stage as failing only when taken (fuzzer seed 3225: a `pop` of an
            # emptied list in a branch Python does not take).
            exc = self.refuse("standalone-first-assigned", b_def, **self.about(site, taken[0]))
            setattr(exc, last_values.OF_REWRITE, True)
            raise exc
        if not staged or changes or never:  # a body changing a list's length: a Python loop, as in the runtime
            prelude = self.promote(names, vals, scope, b_def)
            for n, v in vals.items():
                scope.set(n, v)
            with self.dead_if(never):
                return prelude + self.python_for(b_def, item, test, seq, scope, site, exits)
        facts = plan.LoopFacts("for", static_trip=seq.static_trip, exit_traced=test is not None)
        if seq.kind == "iter":
            self.assume_arrays(seq.xs, scope)
        self.no_functions_carried(names, s, call)
        self.no_strings_carried(names * 2, [scope.get(n) for n in names] + [outs.get(n, vals[n]) for n in names], s, call)
        # An array's length is static: the runtime can run the loop in Python (unrolled) instead.
        appends = self.collected(b_def, names, scope, site, facts, plan.can_fall_back(not seq.static_trip)) if self.final else {}
        item_vals = {}
        names = [n for n in names if n not in appends]
        mixed = self.carry_mixed(names, vals, scope, outs)
        prelude = self.initialise(names, vals, scope, b_def, site) + self.promote(names, vals, scope, b_def, staged=True) \
            if self.final else []
        carried_vals = {n: carried(vals[n], sized=not mixed) for n in names}
        # (In the body, a Python number the loop makes a float of an argument's width is of no
        # known dtype: the lax loop first traces it weakly typed.)
        body_vals = {n: carried(vals[n], sized=not mixed and not traced_weak_first(scope.get(n), vals[n]))
                     for n in names}
        # A carry of unknown dtype may be floating point: the early-exit form differentiates
        # correctly for every dtype (an integer carry's derivative is just zero).
        floats = inexact(carried_vals.values())
        facts = replace(facts, inexact=floats is not False, effects=self.effects(loop_fns))
        form = plan.loop_form(facts)
        body_scope = scope.child(dict(body_vals))
        body_scope.set(item, Val(traced=True, kind=seq.item_val.kind, ndim=seq.item_val.ndim,
                                 elts=seq.item_val.elts and tuple(TRACED for _ in seq.item_val.elts)))
        # The body may not run (traced bounds; a test before the first item): what fails
        # while it is staged is the runtime's `body-fails` (fuzzer seed 865). (Not restored
        # on an error: a refusal ends the function's lowering.)
        failing = self.failing
        if not seq.static_trip or (exits is not None and not exits.after):
            self.failing = ("body-fails", self.about(site))
        fallback = plan.can_fall_back(not seq.static_trip)
        self.falling_back += fallback
        if form in (plan.WHILE, plan.EARLY_EXIT, plan.MASKED_SCAN):
            test_scope = scope.child(dict(body_vals))
            if exits is not None and not exits.after:  # the test reads the item
                test_scope.set(item, body_scope.get(item))
            stop = None
            if exits is not None and exits.after:  # the loop goes on while the test is false
                not_test = syntax.call(syntax.dotted(f"{self.ops}.not_"), [syntax.deepcopy(test)])
                stop, sval = self.expr(test, scope.child(dict(carried_vals)), truth=True)  # after the loop
                stop, test = self.as_bool(stop, sval), not_test
            # The runtime's rule (ops.loops, `test_anyway`): an item test that could tell it ran
            # past the last item runs under a `lax.cond`, only where Python runs it.
            anyway = not (exits is not None and not exits.after) or self.evaluate_anyway(test, test_scope)
            test, tval = self.expr(test, test_scope, truth=True)
            out = self.while_for(s, b_def, t_def, item, names, self.as_bool(test, tval), seq, body_scope, targets,
                                 prelude, site, form, exits, stop, scope, mixed, anyway)
        elif form == plan.FORI or form == plan.SCAN and seq.kind == "range" and is_const(seq.step, 1) and not appends:
            out = self.fori(s, b_def, item, names, seq, body_scope, targets, prelude, site, mixed)
        elif form == plan.SCAN:
            out = self.scan(s, b_def, item, names, seq, body_scope, targets, appends, item_vals, site, mixed)
        else:
            raise NotImplementedError(f"--standalone has no form for {form!r}")
        if exits is None:
            out = self.unless_empty(out, seq)
        self.failing = failing
        self.falling_back -= fallback
        for n, v in carried_vals.items():
            scope.set(n, v)
        if exits is not None:
            target_val = body_scope.get(item)
            if seq.kind == "range":  # the while loop's index, counted from a Python int: weakly typed
                target_val = replace(target_val, weak=not seq.start_val.traced and not seq.step_val.traced)
            scope.set(exits.target, target_val)
            scope.set(exits.stopped, Val(traced=True, kind="bool", ndim=0))
        for n, item_val in item_vals.items():
            scope.set(n, Val(traced=True, stacked=True, kind=item_val.kind,
                             ndim=None if item_val.ndim is None else item_val.ndim + 1))
        return self.step_check(seq, s) + prelude + out

    def step_check(self, seq, s):
        """Python's ``ValueError`` for a ``range`` step of 0, as the runtime raises it for a
        static step (the staged forms would run no iteration): ``if step == 0: raise ...``
        before the loop, where the step is not a literal other than 0."""
        if seq.kind != "range" or seq.step_val.traced or literal_value(seq.step) not in (0, NOT_LITERAL):
            return []
        if not self.harmless(seq.step):
            raise self.refuse("standalone-op", s, call="range(...) whose static step is computed by a call (checked "
                                                       "for 0 before the loop)")
        zero = syntax.Compare(left=syntax.deepcopy(seq.step), ops=[syntax.Eq()], comparators=[syntax.constant(0)])
        error = syntax.call("ValueError", [syntax.constant("range() arg 3 must not be zero")])
        return [syntax.copy_location(syntax.if_stmt(zero, [syntax.Raise(exc=error, cause=None)]), s)]

    def unless_empty(self, out, seq):
        """The staged loop ``out`` (its loop functions, then the statements that call them) run
        only where it has an item: a static trip count of zero is a Python loop that runs
        nothing, as the runtime decides when it traces (a lax loop would trace the body, which
        may fail there: ``a[i]`` of an empty ``a``). A list the loop appends to stays the
        ``[]`` it was, as in Python. Where the trip count is known now, or its expression is
        not one to evaluate twice, ``out`` as it is."""
        if not seq.static_trip or seq.kind == "range" and seq.length() is not None:
            return out
        if seq.kind == "range":
            bounds = (seq.start, seq.stop, seq.step)
            if is_const(seq.step, 1):
                test = syntax.Compare(left=syntax.deepcopy(seq.stop), ops=[syntax.Gt()],
                                      comparators=[syntax.deepcopy(seq.start)])
            else:
                test = syntax.Compare(left=syntax.call(syntax.name("len"), [syntax.deepcopy(seq.python_iter)]),
                                      ops=[syntax.Gt()], comparators=[syntax.constant(0)])
        else:
            bounds = self.sequences(seq.xs)
            test = syntax.Compare(left=self.length(seq.xs), ops=[syntax.Gt()], comparators=[syntax.constant(0)])
        if not all(rereadable(b, set()) for b in bounds if b is not None):
            return out
        k = next((i for i, stmt in enumerate(out) if not isinstance(stmt, syntax.FunctionDef)), len(out))
        if k == len(out):
            return out
        return out[:k] + [syntax.copy_location(syntax.if_stmt(test, out[k:]), out[k])]

    def sequences(self, node) -> list:
        """The sequences iterable ``node`` runs over (those inside ``enumerate`` / ``zip``)."""
        op = self.op_of(node)
        if op == "zip":
            return [s for a in node.args for s in self.sequences(a)]
        return self.sequences(node.args[0]) if op == "enumerate" else [node]

    def never_iterates(self, seq, scope) -> bool:
        """Is the loop a Python loop over a list known to be empty: a module's list that
        nothing fills (``empty_global``), or an empty local list no alias can have filled?"""
        if seq.kind != "iter" or not seq.python_only or not isinstance(seq.xs, syntax.Name):
            return False
        name = seq.xs.id
        val = scope.get(name)
        return (self.empty_global(name, scope)
                or val.empty and not val.traced and not val.undefined and name in self.unaliased)

    def python_for(self, b_def, item, test, seq, scope, site, exits=None):
        """The Python loop. With an item test (``exits``), the ``if c: break`` is written back
        where the user wrote it (first or last in the body), setting the exit flag first
        where the code after the loop reads it."""
        body = without_return(b_def.body)
        target = syntax.name(item, "store")
        if item in self.ctx.namer.generated and body and isinstance(body[0], syntax.Assign):
            first = body[0]
            if isinstance(first.value, syntax.Name) and first.value.id == item and len(first.targets) == 1:
                target, body = first.targets[0], body[1:]
        self.bind(target, seq.item_val, scope)
        leading = []
        if exits is not None and not exits.after:
            leading = [self.python_exit(test, scope, site, b_def, exits, negated=True)]
            test = None
        body = leading + self.block(body, scope)
        if exits is not None and test is not None:
            body.append(self.python_exit(test, scope, site, b_def, exits, negated=False))
        elif test is not None:
            test, tval = self.expr(test, scope, truth=True)
            if tval.traced:  # the runtime skips the remaining iterations with lax.cond
                raise self.refuse("standalone-masked-python-loop", b_def, **self.about(site))
            body.append(syntax.copy_location(syntax.if_stmt(negate(test), [syntax.Break()]), b_def))
        loop = syntax.For(target=target, iter=seq.python_iter, body=body or [syntax.Pass()], orelse=[], type_comment=None)
        setattr(loop, breaks.PYTHON_LOOP, True)
        out = [syntax.copy_location(loop, b_def)]
        if exits is not None:
            scope.set(exits.stopped, Val(kind="bool"))
            if exits.stopped_read:
                out.insert(0, syntax.copy_location(syntax.assign(syntax.name(exits.stopped, "store"), syntax.constant(False)), b_def))
        return out

    def python_exit(self, test, scope, site, origin, exits, negated):
        """``if c: [exit_ = True;] break`` of a Python loop with an item test (``negated``:
        ``test`` says whether the loop goes on, as ``loop_test`` of ``test: x`` does)."""
        test, tval = self.expr(syntax.deepcopy(test), scope, truth=True)
        if tval.traced:  # the runtime skips the remaining iterations with lax.cond
            raise self.refuse("standalone-masked-python-loop", origin, **self.about(site))
        jump = [syntax.Break()]
        if exits.stopped_read:
            jump.insert(0, syntax.assign(syntax.name(exits.stopped, "store"), syntax.constant(True)))
        return syntax.copy_location(syntax.if_stmt(negate(test) if negated else test, jump), origin)

    def read_outside(self, name, loop_fns) -> bool:
        """Does the function read ``name`` outside the loop functions ``loop_fns``?"""
        skip = {id(n) for fn_def in loop_fns if fn_def is not None for n in syntax.walk(fn_def)}
        return any(isinstance(n, syntax.Name) and n.id == name and isinstance(n.ctx, syntax.Load) and id(n) not in skip
                   for n in syntax.walk(self.fn))

    def sequence(self, source, scope):
        if source[0] == "range":
            _, start, stop, step = source
            start, a = self.expr(start, scope)
            stop, b = self.expr(stop, scope)
            step, c = self.expr(step, scope)
            traced = a.traced or b.traced or c.traced
            args = [stop] if is_const(start, 0) and is_const(step, 1) else [start, stop] if is_const(step, 1) else [start, stop, step]
            python_iter = syntax.call(syntax.name("range"), args)
            item = Val(traced=True, kind="int", ndim=0) if traced else Val(kind="int", ndim=0)
            return Iteration("range", traced, False, item, python_iter, start=start, stop=stop, step=step, step_val=c,
                             start_val=a)
        node, val, array = self.iterable(source[1], scope)
        if array:
            item = replace(item_of(val), elts=item_elts(node, self.ops))
        else:
            item = item_of(val)
        python = as_builtin_iter(syntax.deepcopy(node), self.ops)
        return Iteration("iter", val.traced and array, not array, item, python, xs=node)

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
        node, val = self.allow_stacked(node, scope)
        return node, val, val.traced and not val.container

    # ------------------------------------------------------------------ appends
    def collected(self, b_def, names, scope, site, facts, runtime_can):
        """The lists a staged loop appends to (name -> the appended item), their appends taken
        out of the body: the loop's stacked outputs. Refuses what the runtime refuses, and
        what it runs but this cannot write as plain JAX."""
        appended = {n.args[0].id for n in syntax.walk(b_def) if self.op_of(n) == "append"} & set(names)
        if not appended:
            return {}
        forbid = plan.appends_forbidden(facts)
        items = {}
        for name in sorted(appended):
            about = self.about(site, name)
            if forbid is not None:
                raise self.refuse("append-length-depends-on-data", b_def, runtime_can, reason=forbid, **about)
            read = site.reads_appended.get(name, -1)
            if read is None or read >= 0:  # collected from an empty list: any read sees too little
                raise self.refuse("append-and-read", b_def, runtime_can, **about)
            at = [k for k, stmt in enumerate(b_def.body) if self.is_append(stmt, name)]
            nested = sum(self.op_of(n) == "append" and n.args[0].id == name for n in syntax.walk(b_def)) - len(at)
            if nested or len(at) != 1:
                how = "more than once per iteration" if len(at) > 1 else "under a condition or in an inner loop"
                raise self.refuse("standalone-append-shape", b_def, how=how, **about)
            if not scope.get(name).empty or scope.get(name).stacked:
                raise self.refuse("standalone-append-start", b_def, **about)
            k = at[0]
            item = b_def.body[k].value.args[1]
            if not self.movable(item, set(writes(b_def.body[k + 1 :]))):  # evaluate it where it was
                temp = self.new_name(f"{name}_item")
                b_def.body[k] = syntax.copy_location(syntax.assign(syntax.name(temp, "store"), item), b_def.body[k])
                item = syntax.name(temp)
            else:
                del b_def.body[k]
            items[name] = item
        if any(isinstance(n, syntax.Name) and n.id in items for s in b_def.body[:-1] for n in syntax.walk(s)):
            raise self.refuse("append-and-read", b_def, runtime_can, **self.about(site, sorted(items)[0]))
        return items

    def is_append(self, stmt, name):
        return (isinstance(stmt, syntax.Assign) and self.op_of(stmt.value) == "append"
                and stmt.value.args[0].id == name)

    def movable(self, node, changing) -> bool:
        """Does evaluating ``node`` at the end of the loop body give the value it had where it
        was appended (it reads no variable the body changes after, and has no effect)?"""
        return self.harmless(node) and not any(
            isinstance(n, syntax.Name) and n.id in changing or isinstance(n, syntax.NamedExpr) for n in syntax.walk(node))

    def ys(self, appends, item_vals, scope, origin, site):
        """The per-iteration outputs of a loop collecting ``appends`` (their Vals go to
        ``item_vals``)."""
        values = []
        for name, item in appends.items():
            with self.staged_code(self.about(site), origin.body):  # evaluated in each iteration
                node, val = self.expr(item, scope)
            if val.container or not val.is_number:
                raise self.refuse("standalone-append-shape", origin, how="with items that are not arrays",
                                  **self.about(site, name))
            if not val.traced and name in getattr(self.fn, last_values.COLLECTED, ()):
                # A Python value in Python (`k = 1`), which code after the loop may use as one.
                raise self.refuse("standalone-append-shape", origin, how="with items that are Python values",
                                  **self.about(site, name))
            item_vals[name] = val
            values.append(node)
        return values[0] if len(values) == 1 else syntax.Tuple(elts=values, ctx=syntax.Load())

    # ------------------------------------------------------------------ forms
    def fori(self, s, b_def, item, names, seq, body_scope, targets, prelude, site, mixed=False):
        """``jax.lax.fori_loop``: a static trip count makes it a scan; a range with a step
        other than 1 runs over the trip count, the item computed from it."""
        start, stop, index, item_stmts = seq.start, seq.stop, item, []
        if not is_const(seq.step, 1):
            if seq.step_val.traced:
                raise self.refuse("standalone-range-step", b_def, **self.about(site))
            changed = writes(b_def.body)
            first = self.once(seq.start, "start", changed, names, prelude, s)
            last = self.once(seq.stop, "stop", changed, names, prelude, s)
            index = self.new_name("k")
            trip = syntax.parse_expr("-((_ - _) // _)")  # ceil((stop - start) / step)
            trip.operand.left.left, trip.operand.left.right, trip.operand.right = first, last, seq.step
            start, stop = syntax.constant(0), self.jnp("maximum", [syntax.constant(0), trip])
            value = syntax.BinOp(left=syntax.deepcopy(first), op=syntax.Add(),
                                 right=syntax.BinOp(left=syntax.name(index), op=syntax.Mult(), right=syntax.deepcopy(seq.step)))
            item_stmts = [syntax.copy_location(syntax.assign(syntax.name(item, "store"), value), b_def)]
        body = self.staged_block(b_def.body, body_scope, self.about(site))
        param = self.carry_param(names) if names else self.carry_name()
        returned = syntax.copy_location(syntax.ret(self.state(names)), body[-1])
        self.loop_function(b_def, [index, param], self.unpack(names, b_def) + item_stmts + body[:-1], returned)
        callee = self.helper(helpers.PROMOTING_FORI) if mixed else self.ref("jax.lax.fori_loop")
        new = syntax.call(callee, [start, stop, syntax.name(b_def.name), self.state(names)])
        stmt = syntax.assign(targets, new) if targets is not None and names else syntax.expr_stmt(new)
        return [b_def, syntax.copy_location(stmt, s)]

    def scan(self, s, b_def, item, names, seq, body_scope, targets, appends, item_vals, site, mixed=False):
        if seq.kind == "range":
            args = [seq.stop] if is_const(seq.start, 0) and is_const(seq.step, 1) else \
                [seq.start, seq.stop] if is_const(seq.step, 1) else [seq.start, seq.stop, seq.step]
            xs = self.jnp("arange", args)
        else:
            xs = self.scan_xs(seq.xs)
        body = self.staged_block(b_def.body, body_scope, self.about(site))
        ys = self.ys(appends, item_vals, body_scope, b_def, site) if appends else syntax.constant(None)
        returned = syntax.copy_location(syntax.ret(syntax.Tuple(elts=[self.state(names), ys], ctx=syntax.Load())), body[-1])
        self.loop_function(b_def, [self.carry_param(names) if names else self.carry_name(), item],
                           self.unpack(names, b_def) + body[:-1], returned)
        callee = self.helper(helpers.PROMOTING_SCAN) if mixed else self.ref("jax.lax.scan")
        new = syntax.call(callee, [syntax.name(b_def.name), self.state(names), xs])
        carry_target = syntax.names_tuple(names, "store") if names else syntax.name(self.unused(), "store")
        ys_target = syntax.names_tuple(list(appends), "store") if appends else syntax.name(self.unused(), "store")
        if targets is None and not appends:
            stmt = syntax.expr_stmt(new)
        else:
            stmt = syntax.assign(syntax.Tuple(elts=[carry_target, ys_target], ctx=syntax.Store()), new)
        return [b_def, syntax.copy_location(stmt, s)]

    def while_for(self, s, b_def, t_def, item, names, test, seq, body_scope, targets, prelude, site, form,
                  exits=None, stop=None, scope=None, mixed=False, anyway=True):
        """A staged ``for`` that can stop early (``break`` / ``return``): a ``while_loop`` over
        an index, which stops at the exit; with a static trip count, in the helper ``form``
        names (differentiable). An item test (``exits``) is the loop's predicate, as a
        hand-written loop tests it: ``test`` with the item of the next iteration, or (after
        each iteration) ``test`` on the state, the lowered ``not stop``. ``anyway``: the test
        may run past the last item (else only under ``lax.cond`` of the bound)."""
        body_writes = writes(b_def.body)
        # The target's value before the loop, which Python keeps when the loop runs no iteration.
        keep_old = (exits is not None and exits.target_read and seq.kind == "range" and scope.bound(exits.target)
                    and not scope.get(exits.target).undefined)
        if keep_old and not scope.get(exits.target).is_number:  # not a value `jnp.where` can keep
            raise self.refuse("standalone-first-assigned", b_def, **self.about(site, exits.target))
        if seq.kind == "range":
            if seq.step_val.traced:
                raise self.refuse("standalone-range-step", b_def, **self.about(site))
            if (item in self.ctx.namer.generated or item not in body_writes) and not keep_old:
                index = item
            else:
                index = self.new_name("index")
            start = self.once(seq.start, "start", body_writes, names, prelude, s)
            stop_at = self.once(seq.stop, "stop", body_writes, names, prelude, s)
            step = seq.step
            bound = range_test(index, stop_at, step)
            length = syntax.call(syntax.name("len"), [syntax.call(syntax.name("range"), [
                syntax.deepcopy(start), syntax.deepcopy(stop_at), syntax.deepcopy(step)])])
            item_stmts = [] if index == item else [syntax.assign(syntax.name(item, "store"), syntax.name(index))]
        else:
            index = self.new_name("index")
            xs = self.once_iterable(seq.xs, body_writes, names, prelude, s)
            start, step = syntax.constant(0), syntax.constant(1)
            length = self.length(xs)
            bound = syntax.Compare(left=syntax.name(index), ops=[syntax.Lt()], comparators=[syntax.deepcopy(length)])
            item_stmts = [syntax.assign(syntax.name(item, "store"), self.item_at(xs, index))]
        body = self.staged_block(b_def.body, body_scope, self.about(site))
        next_index = syntax.BinOp(left=syntax.name(index), op=syntax.Add(), right=syntax.deepcopy(step))
        if names:
            param = self.carry_name()
            state = [index] + list(names)
            unpack = [syntax.copy_location(syntax.assign(syntax.names_tuple(state, "store"), syntax.name(param)), b_def)]
            returned = syntax.ret(syntax.Tuple(elts=[next_index] + [syntax.name(n) for n in names], ctx=syntax.Load()))
            init = syntax.Tuple(elts=[start] + [syntax.name(n) for n in names], ctx=syntax.Load())
        else:
            param, unpack, returned, init = index, [], syntax.ret(next_index), start
        item_stmts = [syntax.copy_location(x, b_def) for x in item_stmts]
        test_stmts = list(unpack)
        if exits is not None and exits.after:
            # A test after each iteration is the next one's test, except before the first.
            first = syntax.Compare(left=syntax.name(index), ops=[syntax.Eq()], comparators=[syntax.deepcopy(start)])
            test = self.jnp("logical_or", [first, test])
        elif exits is not None:  # the test reads the item of the iteration it may run
            test_stmts += syntax.deepcopy(item_stmts)
        if anyway:
            full_test = self.jnp("logical_and", [bound, test])
        else:
            full_test = syntax.call(self.ref("jax.lax.cond"), [bound, syntax.lambda_(test),
                                                                syntax.lambda_(syntax.constant(False))])
        self.loop_function(t_def, [param], test_stmts, syntax.ret(full_test))
        if exits is not None and not any(isinstance(n, syntax.Name) and n.id == item for b in body for n in syntax.walk(b)):
            item_stmts = []  # only the test reads the item
        self.loop_function(b_def, [param], syntax.deepcopy(unpack) + item_stmts + body[:-1],
                           syntax.copy_location(returned, body[-1]))
        args = [syntax.name(t_def.name), syntax.name(b_def.name), init]
        if form == plan.WHILE:
            new = syntax.call(self.helper(helpers.PROMOTING_WHILE) if mixed else self.ref("jax.lax.while_loop"), args)
        else:
            if form == plan.EARLY_EXIT:
                helper = helpers.PROMOTING_EARLY_EXIT if mixed else helpers.EARLY_EXIT
            else:
                helper = helpers.PROMOTING_MASKED if mixed else helpers.MASKED
            new = syntax.call(self.helper(helper), args + [length])
        ended = exits is not None and (exits.target_read or exits.stopped_read)  # where it ended is read
        first_out = index if ended else self.unused()
        if names:
            out_targets = syntax.Tuple(elts=[syntax.name(first_out, "store")] + [syntax.name(n, "store") for n in names],
                                       ctx=syntax.Store())
            stmt = syntax.assign(out_targets, new)
        elif ended:
            stmt = syntax.assign(syntax.name(index, "store"), new)
        else:
            stmt = syntax.expr_stmt(new)
        out = [syntax.copy_location(t_def, b_def), b_def, syntax.copy_location(stmt, s)]
        if exits is not None:
            after = self.item_test_outputs(exits, index, start, step, bound, seq, xs if seq.kind == "iter" else None,
                                           stop, keep_old, site)
            out += [syntax.copy_location(x, s) for x in after]
        return out

    def item_test_outputs(self, exits, index, start, step, bound, seq, xs, stop, keep_old, site):
        """After a staged loop with an item test, ``index`` being where it ended: the flag
        saying whether the test stopped it, and the loop target as Python leaves it (the
        item it stopped at, else the last item), where the code after the loop reads them."""
        if not (exits.target_read or exits.stopped_read):
            return []
        ran = syntax.Compare(left=syntax.name(index), ops=[syntax.NotEq()], comparators=[syntax.deepcopy(start)])
        previous = syntax.BinOp(left=syntax.name(index), op=syntax.Sub(), right=syntax.deepcopy(step))
        if exits.after:  # it stopped if the test holds on the state the last iteration left
            stopped = self.jnp("logical_and", [syntax.deepcopy(ran), stop])
            last = previous  # the item of the last iteration run
        else:  # it stopped before the end: at the item of `index`
            stopped = bound
            last = self.jnp("where", [syntax.name(exits.stopped), syntax.name(index), previous])
        out = []
        if exits.stopped_read or not exits.after:  # (the target of a test before each item reads it)
            out.append(syntax.assign(syntax.name(exits.stopped, "store"), stopped))
        if exits.target_read:
            value = last if seq.kind == "range" else self.item_at(xs, last)
            if keep_old:  # no item taken: the value it had before the loop
                # A test before each item binds the target to the item it stops at, also the first.
                bound_item = ran if exits.after else self.jnp("logical_or", [syntax.name(exits.stopped), ran])
                value = self.jnp("where", [bound_item, value, syntax.name(exits.target)])
            elif seq.kind == "range":  # no iteration: unbound (a read the runtime checks)
                self.zeroed[exits.target] = self.about(site, exits.target)
            out.append(syntax.assign(syntax.name(exits.target, "store"), value))
        return out

    def helper(self, name):
        """Helper ``name``, which the output file defines once (see ``helpers``)."""
        self.refs.needed_helpers.add(name)
        self.refs("jax")
        return syntax.name(name)

    # ------------------------------------------------------------------ iterables
    def scan_xs(self, node, limit=None):
        """What ``jax.lax.scan`` takes as ``xs`` for iterable ``node``; ``limit``: an expression
        of the number of items to take (``zip`` stops at its shortest argument, as the runtime
        does: ``xs[:len(ys)], ys[:len(xs)]``, no operation where the lengths agree)."""
        op = self.op_of(node)
        if op == "zip":
            parts = []
            for k, a in enumerate(node.args):
                others = [self.length(b) for j, b in enumerate(node.args) if j != k]
                others += [syntax.deepcopy(limit)] if limit is not None else []
                bound = others[0] if len(others) == 1 else syntax.call(syntax.name("min"), others) if others else None
                parts.append(self.scan_xs(a, bound))
            return syntax.Tuple(elts=parts, ctx=syntax.Load())
        if op == "enumerate":
            inner = node.args[0]
            if limit is not None:
                inner = self.limited(inner, limit)
            length = self.length(inner)
            if len(node.args) > 1:
                start = node.args[1]
                index = self.jnp("arange", [start, syntax.BinOp(left=syntax.deepcopy(start), op=syntax.Add(), right=length)])
            else:
                index = self.jnp("arange", [length])
            return syntax.Tuple(elts=[index, self.scan_xs(inner)], ctx=syntax.Load())
        return self.limited(node, limit) if limit is not None else node

    def limited(self, node, limit):
        """``node[:limit]``: the first ``limit`` items of an array (or of ``zip`` / ``enumerate``
        of arrays)."""
        if self.op_of(node) in ("zip", "enumerate"):
            node = syntax.deepcopy(node)
            n = len(node.args) if self.op_of(node) == "zip" else 1
            node.args = [self.limited(a, limit) for a in node.args[:n]] + node.args[n:]
            return node
        return syntax.Subscript(value=syntax.deepcopy(node), slice=syntax.Slice(lower=None, upper=syntax.deepcopy(limit), step=None),
                                ctx=syntax.Load())

    def length(self, node):
        op = self.op_of(node)
        if op == "zip":
            return syntax.call(syntax.name("min"), [self.length(a) for a in node.args])
        if op == "enumerate":
            return self.length(node.args[0])
        return syntax.call(syntax.name("len"), [syntax.deepcopy(node)])

    def item_at(self, node, index):
        """The item of iterable ``node`` at ``index`` (a name, or an expression)."""
        index = syntax.name(index) if isinstance(index, str) else index
        op = self.op_of(node)
        if op == "zip":
            return syntax.Tuple(elts=[self.item_at(a, syntax.deepcopy(index)) for a in node.args], ctx=syntax.Load())
        if op == "enumerate":
            k = syntax.deepcopy(index)
            if len(node.args) > 1:
                k = syntax.BinOp(left=syntax.deepcopy(node.args[1]), op=syntax.Add(), right=k)
            return syntax.Tuple(elts=[k, self.item_at(node.args[0], syntax.deepcopy(index))], ctx=syntax.Load())
        return syntax.Subscript(value=syntax.deepcopy(node), slice=syntax.deepcopy(index), ctx=syntax.Load())

    def once(self, node, hint, body_writes, names, prelude, origin):
        """``node`` if reading it again in each iteration gives the same value, else a
        temporary bound to it before the loop (``range(n)`` reads ``n`` once)."""
        if rereadable(node, set(body_writes) | set(names)):
            return node
        temp = self.new_name(hint)
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
