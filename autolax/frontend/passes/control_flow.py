"""``if`` / ``while`` / ``for`` become calls of runtime ops with named inner functions.

    def collatz_steps(n):                  def collatz_steps(n):
        steps = 0                              steps = 0
        while n != 1:                          def loop_test(n, steps):
            if n % 2 == 0:                         return n != 1
                n = n // 2                     def loop_body(n, steps):
            else:                                  def if_true(n):
                n = 3 * n + 1     ->                   n = n // 2
            steps += 1                                 return n
        return steps                               def if_false(n):
                                                       n = 3 * n + 1
                                                       return n
                                                   n = ops.cond(n % 2 == 0, if_true, if_false, n, at='4')
                                                   steps += 1
                                                   return (n, steps)
                                               n, steps = ops.while_loop(loop_test, loop_body, (n, steps), at='3')
                                               return steps

(printed with a blank line before each ``def``, as in ``EXAMPLES``). ``at=`` is the statement's
descriptor: its line, and the names an ``if`` returns where they are not its operands
(``-> n``, see ``autolax.runtime.sites``).

What is passed and returned comes from the analyses:

* a loop carries the names its body assigns that are live at the top of an iteration or
  after the loop (``loop_test`` and ``loop_body`` take them, ``loop_body`` returns them);
* an ``if`` returns the names its branches assign that are live after it; its branch
  functions take only the names one of them assigns and may read the value of from before
  (read first, or assigned on some paths only). A name a branch only reads, or gives back
  unchanged, it reads from the enclosing function, as Python's closures do: ``ops.cond``
  calls the branch right where it is defined.

A carried name that may be unbound before the statement starts as ``ops.undefined('y')``.
The runtime op decides, when it runs, between Python and ``lax`` (see ``autolax.runtime.ops``).

An ``if`` / ``elif`` chain (also the one an early-return chain becomes) is one
``ops.cases`` call with its arms' functions side by side, its later conditions thunks that
the runtime calls only where the arms before were not taken (``chain``):

    if x < 0:                              s = ops.cases([(x < 0, if_true), (lambda: x == 0, if_true_1)],
        s = -1                                           if_false_1, at='2 -> s; elif: 4')
    elif x == 0:          ->
        s = 0
    else:
        s = 1
"""

from __future__ import annotations

import builtins
from dataclasses import replace

from autolax.frontend.analysis.activity import (
    MUTATING_METHODS,
    captured_names,
    declared_names,
    local_names,
    mutated_names,
    target_names,
    writes,
)
from autolax.frontend.analysis.definedness import Definedness
from autolax.frontend.analysis.liveness import Liveness
from autolax.frontend.transpile import anno, syntax, templates
from autolax.frontend.transpile.caught import staged_caught, with_caught
from autolax.runtime import sites

# Always runs: it stages every ``if`` / ``while`` / ``for``.
NEEDS = None
# Reads what these leave: ``anno.LOOP_OPTIONS``, ``ctx.always_bound``, the loops' extra and item
# tests (``anno.EXTRA_TEST`` / ``ITEM_TEST`` / ``TEST_AFTER``), the flags the jump lowerings
# assign (``anno.GENERATED_FLAG``, ``SKIPPED_BY``), the return value (``ctx.return_values``)
# and the names bound within one expression (``ctx.temporaries``).
AFTER = (
    "loop_options",
    "bound_names",
    "loop_exits",
    "continue_statements",
    "break_statements",
    "caught_raises",
    "return_statements",
    "logical",
)

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def collatz_steps(n):
            steps = 0
            while n != 1:
                if n % 2 == 0:
                    n = n // 2
                else:
                    n = 3 * n + 1
                steps += 1
            return steps
        """,
        """\
        def collatz_steps(n):
            steps = 0

            def loop_test(n, steps):
                return n != 1

            def loop_body(n, steps):

                def if_true(n):
                    n = n // 2
                    return n

                def if_false(n):
                    n = 3 * n + 1
                    return n

                n = ops.cond(n % 2 == 0, if_true, if_false, n, at='4')
                steps += 1
                return (n, steps)

            n, steps = ops.while_loop(loop_test, loop_body, (n, steps), at='3')
            return steps
        """,
    ),
    (
        """\
        def f(x, n):
            for i in range(n):
                x = x + i
            return x
        """,
        """\
        def f(x, n):

            def loop_body(i, x):
                x = x + i
                return x

            x = ops.for_range(0, n, 1, loop_body, x, at='2')
            return x
        """,
    ),
    (
        """\
        def f(x):
            if x > 0:
                y = x
            return y
        """,
        """\
        def f(x):
            y = ops.undefined('y')

            def if_true():
                y = x
                return y

            def if_false():
                return y

            y = ops.cond(x > 0, if_true, if_false, at='2 -> y')
            return y
        """,
    ),
    (
        # Each branch assigns what the other gives back unchanged: neither reads a value
        # from before the `if` that it assigns, so they take nothing.
        """\
        def f(x):
            a = 0.0
            b = 1.0
            if x > 0:
                a = x + 1
            else:
                b = x - 1
            return a + b
        """,
        """\
        def f(x):
            a = 0.0
            b = 1.0

            def if_true():
                a = x + 1
                return (a, b)

            def if_false():
                b = x - 1
                return (a, b)

            a, b = ops.cond(x > 0, if_true, if_false, at='4 -> a, b')
            return a + b
        """,
    ),
    (
        """\
        def sign(x):
            if x < 0:
                s = -1
            elif x == 0:
                s = 0
            else:
                s = 1
            return s
        """,
        """\
        def sign(x):

            def if_true():
                s = -1
                return s

            def if_true_1():
                s = 0
                return s

            def if_false_1():
                s = 1
                return s

            s = ops.cases([(x < 0, if_true), (lambda: x == 0, if_true_1)], if_false_1, at='2 -> s; elif: 4')
            return s
        """,
    ),
    (
        # The `elif`'s test reads `y`, which the branches take: the test takes it too.
        """\
        def f(x, y):
            if x > 1:
                y = y + 1
            elif y > 0:
                y = y * 2
            return y
        """,
        """\
        def f(x, y):

            def if_true(y):
                y = y + 1
                return y

            def if_true_1(y):
                y = y * 2
                return y

            def if_false_1(y):
                return y

            y = ops.cases([(x > 1, if_true), (lambda y: y > 0, if_true_1)], if_false_1, y, at='2; elif: 4')
            return y
        """,
    ),
)

_IF = """
def if_true(params):
    body
    return outputs
def if_false(params):
    orelse
    return outputs
targets = ops_cond(test, if_true, if_false, params, at=spec)
"""

_WHILE = """
def loop_test(state):
    return test
def loop_body(state):
    body
    return outputs
targets = ops_while_loop(loop_test, loop_body, init, at=spec)
"""

# A loop or `if` inside a `try`: an exception out of it leaves the variables as the code
# before the raise left them (finished iterations, the raising one up to the raise), as in
# Python.
_KEEP_ON_RAISE = """
try:
    call
except BaseException as raised:
    state = ops_raised_state(raised, key, state)
    raise
"""

_FOR_TEST = """
def loop_test(state):
    return test
"""

# A test that runs with each item first (`if c: break` at the top of the body).
_FOR_ITEM_TEST = """
def loop_test(item, state):
    return test
"""

_FOR = """
def loop_body(item, state):
    body
    return outputs
targets = ops_call(iter_args, loop_body, init, loop_test, at=spec)
"""


def _state_expr(names):
    """``x`` / ``(x, y)`` / ``()`` for the values passed to or returned from a loop body."""
    if len(names) == 1:
        return syntax.name(names[0])
    return syntax.Tuple(elts=[syntax.name(n) for n in names], ctx=syntax.Load())


def _strip_bare_returns(fn_defs, origin):
    for fn in fn_defs:
        if isinstance(fn, syntax.FunctionDef) and fn.body and isinstance(fn.body[-1], syntax.Return):
            if fn.body[-1].value is None:
                fn.body.pop()
                if not fn.body:
                    fn.body.append(syntax.copy_location(syntax.Pass(), origin))


# The ops that update an object in place: ``x = ops.at(x)[i].set(v)``, ``ops.append(lst, v)``,
# ``ops.setattr(p, 'a', v)``.
_UPDATES = ("at", "append", "setattr")
_CLOSURES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Lambda)
_CLOSURE_CLASSES = frozenset(_CLOSURES)


def _survey(fn_node, ops):
    """One walk of ``fn_node``: ``(rank, closures, deletes, sets_slice, attributes,
    ops_attributes)`` -- each name's first-seen order, whether it has a closure (a nested
    ``def`` or a lambda other than a generated thunk), a ``del``, a slice set
    (``ops.at(lst)[a:b].set(...)``), and the attributes read (``x.attr``; ``ops.attr``)."""
    rank = {}
    closures = deletes = sets_slice = False
    attributes, ops_attributes = set(), set()
    name, attribute, ast = syntax.Name, syntax.Attribute, syntax.AST
    todo = [fn_node]
    add, known_fields = todo.append, syntax.CHILD_FIELDS
    # The nodes of ``syntax.nodes(fn_node)``, in its order, less the contexts and operators
    # (leaves that none of the tests below looks at), walked as they are found.
    for node in todo:
        kind = node.__class__  # the exact class (no node class is subclassed): no isinstance chain
        if kind is name:
            if node.id not in rank:
                rank[node.id] = len(rank)
            if node.annotation is not None:  # a parameter's
                add(node.annotation)
            continue
        fields = known_fields.get(kind)
        for field in fields if fields is not None else syntax.child_fields(kind):
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast) and item._fields:
                        add(item)
            elif isinstance(value, ast) and value._fields:
                add(value)
        if kind is attribute:
            attributes.add(node.attr)
            if node.value.__class__ is name and node.value.id == ops:
                ops_attributes.add(node.attr)
            elif (
                node.attr == "set"
                and node.value.__class__ is syntax.Subscript
                and node.value.slice.__class__ is syntax.Slice
            ):
                sets_slice = True
        elif kind is syntax.Delete:
            deletes = True
        elif kind in _CLOSURE_CLASSES:
            closures = closures or node is not fn_node and not anno.get(node, anno.THUNK)
    return rank, closures, deletes, sets_slice, attributes, ops_attributes


def _checked_reads(nodes, ops) -> set:
    """The names ``nodes`` read through ``ops.assigned(name)``."""
    found = set()
    for node in nodes:
        for n in syntax.nodes(node):
            func = n.func if isinstance(n, syntax.Call) else None
            if (
                isinstance(func, syntax.Attribute)
                and func.attr == "assigned"
                and isinstance(func.value, syntax.Name)
                and func.value.id == ops
                and n.args
                and isinstance(n.args[0], syntax.Name)
            ):
                found.add(n.args[0].id)
    return found


class _Scope:
    """A Python function scope of the emitted code: the user's function or a generated
    ``if_true`` / ``loop_body``. Tracks names certainly bound in it by our own rewrite."""

    def __init__(self, bound):
        self.bound = set(bound)  # parameters, and names assigned by emitted op calls
        self.hoisted: list[str] = []  # maybe-unbound names initialised at the scope's top


class _FunctionConverter:
    """Converts the control flow of one function (nested user functions get their own)."""

    def __init__(self, fn_node, ctx):
        self.fn = fn_node
        self.ctx = ctx
        self.scopes = [_Scope(syntax.param_names(fn_node.args))]
        self.in_try = False  # inside the body of a `try` (an exception may be caught)
        # Inside a `try`: what a branch that fails while staged must not raise when the
        # program runs (``caught.staged_caught``, the ``caught_by`` of ``ops.cond``).
        self.caught = []
        self.arm_params = {}  # an `elif` -> the parameters of its `if`'s branch functions
        if not _has_control_flow(fn_node):
            return  # nothing asks for the analyses below: ``run`` only goes through the blocks
        self.live = Liveness(fn_node)
        self.defined = Definedness(fn_node, written=self.live.written)  # the writes liveness found
        self.declared_globals, self.declared_nonlocals = declared_names(fn_node.body)
        self.nonlocal_names = self.declared_globals | self.declared_nonlocals  # declared_nonlocal(fn_node.body)
        params = syntax.param_names(fn_node.args)
        self.receiver = {params[0]} if params and params[0] in ("self", "cls") else set()
        self._mutated = {}
        self._in_place_found = {}
        self.rank, closures, deletes, sets_slice, attributes, ops_attributes = _survey(fn_node, ctx.ops)
        # Whether the function changes objects in place (``lst.pop()``, ``del x[i]``) or
        # appends to a list at all: most do not, and then no block of it needs searching.
        self.mutates = deletes or not attributes.isdisjoint(MUTATING_METHODS)
        self.appends = "append" in ops_attributes
        self.has_append = "append" in attributes  # (else ``appends_after_jump`` finds none)
        # Whether it updates an object through ``ops.at`` / ``ops.append`` / ``ops.setattr``
        # (else ``_in_place`` finds no update, and ``changed_in_place`` needs no search).
        self.updates = not ops_attributes.isdisjoint(_UPDATES)
        # Whether it reads a name through ``ops.assigned`` (else ``read_unbound`` finds none).
        self.reads_assigned = "assigned" in attributes
        # Whether it has an ``.insert`` attribute or sets a slice (else ``inserted_into`` finds none).
        self.inserts = "insert" in attributes or sets_slice
        # Read by closures: kept in the function's cells (none without closures).
        self.captured = captured_names(fn_node) if closures else set()

    def mutated(self, stmts):
        """``mutated_names(stmts)``, known to be empty where the function mutates nothing
        (``stmts`` are its own statements, not yet rewritten: control flow emits no such call)."""
        if not self.mutates:
            return set()
        out = set()
        for stmt in stmts:
            out |= self._mutated_in(stmt)
        return out

    def _mutated_in(self, stmt):
        """``mutated_names([stmt])``, found once per statement: a block is asked about before
        its statements are converted (outer statements first), and each nested block again,
        so without this the statements of a loop nest would be searched once per level. The
        entry holds the statement, so its id stays its own while the entry lives."""
        entry = self._mutated.get(id(stmt))
        if entry is not None and entry[0] is stmt:
            return entry[1]
        out = set()
        if not isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            stack = syntax.iter_child_nodes(stmt)
            out |= mutated_names([stmt]) if isinstance(stmt, syntax.Delete) else set()
            while stack:
                node = stack.pop()
                if isinstance(node, syntax.stmt):
                    out |= self._mutated_in(node)
                elif isinstance(node, syntax.expr):
                    out |= mutated_names([node])
                else:  # a handler, a `case`, a `with` item, a context
                    stack.extend(syntax.iter_child_nodes(node))
        self._mutated[id(stmt)] = (stmt, out)
        return out

    # ------------------------------------------------------------------ helpers
    def order(self, names):
        return sorted(names, key=lambda n: (self.rank.get(n, len(self.rank)), n))

    def modified(self, stmts):
        """Names ``stmts`` bind, and local names whose objects they change in place
        (``stack.pop()``): a staged statement carries both."""
        mutated = self.mutated(stmts) & self.fn_locals - self.receiver
        return (writes(stmts) | mutated) - self.nonlocal_names - self.ctx.temporaries

    def changed_in_place(self, stmts):
        """Local names whose object ``stmts`` change in place (``x[i] = v``, ``p.a = v``,
        ``lst.append(v)``, ``stack.pop()``) and do not bind to a new object: even when no
        later statement reads the name, an alias of the object may, so a staged statement
        returns it (and the runtime writes it back into the object)."""
        if not (self.mutates or self.updates):
            return set()
        names, rebound = self.mutated(stmts), set()
        for stmt in stmts:
            updated, bound = self._in_place(stmt)
            names |= updated
            rebound |= bound
        return (names - rebound) & self.fn_locals - self.receiver

    def _in_place(self, stmt):
        """(names ``stmt`` and the statements in it update in place -- ``x = ops.at(x)...`` --,
        names they bind otherwise), found once per statement as ``_mutated_in`` is."""
        entry = self._in_place_found.get(id(stmt))
        if entry is not None and entry[0] is stmt:
            return entry[1]
        updated, rebound = set(), set()
        if isinstance(stmt, (syntax.Assign, syntax.AugAssign, syntax.AnnAssign, syntax.For)):
            target = stmt.targets[0] if isinstance(stmt, syntax.Assign) and len(stmt.targets) == 1 else None
            name = target.id if isinstance(target, syntax.Name) else None
            if name is not None and self._updates(stmt.value, name):
                updated.add(name)
            else:
                rebound |= writes(stmt) if not isinstance(stmt, syntax.For) else target_names(stmt.target)
        for child in syntax.child_statements(stmt):  # the statements ``walk_statements`` finds
            child_updated, child_rebound = self._in_place(child)
            updated |= child_updated
            rebound |= child_rebound
        self._in_place_found[id(stmt)] = (stmt, (updated, rebound))
        return updated, rebound

    def _updates(self, value, name) -> bool:
        """Is ``value`` an update of ``name``'s object (``ops.at(name)...``, ``ops.append(name,
        v)``, ``ops.setattr(name, ...)``)?"""
        while isinstance(value, (syntax.Call, syntax.Attribute, syntax.Subscript)):
            if (
                isinstance(value, syntax.Call)
                and isinstance(value.func, syntax.Attribute)
                and value.func.attr in _UPDATES
                and self._is_ops(value.func.value)
            ):
                first = value.args[0] if value.args else None
                return isinstance(first, syntax.Name) and first.id == name
            value = value.func if isinstance(value, syntax.Call) else value.value
        return False

    def kept(self, node, stmts):
        """Names a staged statement returns (carries) even when nothing reads them later:
        those closures capture, and objects from before it that it changes in place."""
        return self.captured | (self.changed_in_place(stmts) & self.defined.before[node][1])

    def _is_ops(self, node) -> bool:
        return isinstance(node, syntax.Name) and node.id == self.ctx.ops

    def undefined_inits(self, names, node):
        """``y = ops.undefined('y')`` for carried names that may be unbound before ``node``
        (at the scope's top if some path binds them, else right before ``node``)."""
        scope = self.scopes[-1]
        definitely, maybe = self.defined.before[node]
        out = []
        for n in names:
            if n in definitely or n in scope.bound:
                continue
            if n in maybe:
                scope.hoisted.append(n)
            else:
                out.append(self.undefined_stmt(n, node))
            scope.bound.add(n)
        return out

    def hoist_free_reads(self, stmts, node, taken, test=None) -> None:
        """Binds the stand-in (``ops.undefined``) at the top of the user's function for the
        names ``stmts`` read through ``ops.assigned`` that their generated function does not
        take (``taken``) and no generated function around it binds: read from the user's
        function, an unbound one would be a free variable there (``NameError`` where Python
        raises ``UnboundLocalError``)."""
        if not self.reads_assigned:
            return
        if self._checked_reads is None:  # the names read through ops.assigned anywhere
            self._checked_reads = _checked_reads([self.fn], self.ctx.ops) & self.fn_locals
        if not self._checked_reads - set(taken):
            return  # (most often: no walk of the blocks)
        found = _checked_reads([*stmts, test] if test is not None else stmts, self.ctx.ops)
        free = (found & self._checked_reads) - set(taken) - self.modified(stmts)
        definitely = self.defined.before[node][0]
        top = self.scopes[0]
        for n in self.order(free):
            # Read through the generated functions around it, from the one that binds it, or
            # else from the user's function, whose top binds the stand-in (nothing is bound
            # there yet: the same as leaving it unbound until Python binds it).
            if n in definitely or any(n in scope.bound for scope in self.scopes):
                continue
            top.hoisted.append(n)
            top.bound.add(n)

    def scoped_block(self, stmts, params):
        """Converts a block that becomes the body of a generated function."""
        self.scopes.append(_Scope(params))
        body = self.block(stmts)
        scope = self.scopes.pop()
        return self.with_hoisted(body, scope)

    def with_hoisted(self, body, scope):
        if not scope.hoisted:
            return body
        docstring = []
        if (
            body
            and isinstance(body[0], syntax.Expr)
            and isinstance(body[0].value, syntax.Constant)
            and isinstance(body[0].value.value, str)
        ):
            docstring, body = body[:1], body[1:]
        origin = body[0] if body else self.fn
        # (a name may be hoisted twice: once as carried, once as a free read)
        return docstring + [self.undefined_stmt(n, origin) for n in dict.fromkeys(scope.hoisted)] + body

    def bind(self, names):
        self.scopes[-1].bound.update(names)

    def undefined_stmt(self, n, origin):
        keywords = {"pending": syntax.constant(True)} if n in self.ctx.pending else None
        stmt = syntax.assign(
            syntax.name(n, "store"), syntax.call(f"{self.ctx.ops}.undefined", [syntax.constant(n)], keywords)
        )
        return syntax.copy_location(stmt, origin)

    def read_unbound(self, stmts, names):
        """The ``names`` read through ``ops.assigned`` in ``stmts``: a loop body may read them
        before binding them (``sites``' ``maybe:`` clause)."""
        if not names or not self.reads_assigned:
            return []
        found = _checked_reads(stmts, self.ctx.ops)
        return [n for n in names if n in found]

    def spec(
        self,
        node,
        names,
        outputs=False,
        reads_appended=None,
        item_test=None,
        read_unbound=(),
        test_after=False,
        index_target=None,
        inserts=(),
        after_jump=None,
        operands=None,
    ):
        """The ``at='...'`` descriptor of a statement (see ``autolax.runtime.sites``): ``names`` are its
        carried variables (loops) or outputs (an ``if``, which lists them: ``outputs``, unless
        they are its ``operands``, the branch functions' parameters, which ``ops.cond`` reads)."""
        facts = sites.Facts(
            node.lineno,
            filename=self.ctx.spec_filename,
            outputs=tuple(names) if outputs and tuple(names) != operands else None,
            return_value=self.return_value(names),
            # Only names that may be unbound when the statement starts need the fact.
            always_bound=tuple(
                n for n in names if n in self.ctx.always_bound and n not in self.defined.before[node][0]
            ),
            reads_appended=reads_appended or {},
            inserts=tuple(inserts),
            max_steps=(anno.get(node, anno.LOOP_OPTIONS) or {}).get("max_steps"),
            item_test=item_test,
            test_after=test_after,
            read_unbound=tuple(read_unbound),
            index_target=index_target,
            after_jump=after_jump,
        )
        return syntax.constant(facts.text())

    def return_value(self, names):
        """The descriptor's ``return:`` clause for a statement carrying or producing ``names``:
        None where the runtime's rule gives the return value (``sites.RETURN_NAME``, if among
        ``names``, is it); else the name holding it -- or, where ``retval`` is the user's own
        variable and the return value is not among ``names``, a fresh name (none is)."""
        found = next((n for n in names if n in self.ctx.return_values), None)
        if found == sites.RETURN_NAME or (found is None and sites.RETURN_NAME not in names):
            return None
        return found if found is not None else self.ctx.namer.new(sites.RETURN_NAME)

    def appends_after_jump(self, node, outputs):
        """``(keyword, line)`` of the jump whose skipped statements are a branch of the ``if``
        ``node`` (``anno.SKIPPED_BY``) if that branch appends to a list among ``outputs``
        (``ops.append(out, v)``), else None."""
        skipped = anno.get(node, anno.SKIPPED_BY)
        if skipped is None or not self.has_append:
            return None
        kind, line, branch = skipped
        for n in (n for stmt in getattr(node, branch) for n in syntax.nodes(stmt)):
            func = getattr(n, "func", None) if isinstance(n, syntax.Call) else None
            if not (isinstance(func, syntax.Attribute) and func.attr == "append"):
                continue
            target = n.args[0] if self._is_ops(func.value) and n.args else func.value
            if isinstance(target, syntax.Name) and target.id in outputs:
                return kind, line
        return None

    def inserted_into(self, stmts):
        """Lists a block may grow elsewhere than at their end: ``lst.insert(k, v)``, a slice
        assignment of a list display (``lst[0:0] = [v]``: ``ops.at(lst)[0:0].set([v])``). One traced iteration
        of such a body may look like appends (``insert(0, v)`` on an empty list) where later
        iterations put their items elsewhere, so the loop must not collect them as appends."""
        if not self.inserts:
            return []
        found = set()
        for n in (n for stmt in stmts for n in syntax.nodes(stmt)):
            func = getattr(n, "func", None) if isinstance(n, syntax.Call) else None
            if not isinstance(func, syntax.Attribute):
                continue
            if func.attr == "insert" and isinstance(func.value, syntax.Name) and func.value.id != self.ctx.ops:
                found.add(func.value.id)
            elif func.attr == "set" and n.args and isinstance(n.args[0], (syntax.List, syntax.ListComp, syntax.Tuple)):
                sub = func.value  # ops.at(lst)[a:b]
                at = sub.value if isinstance(sub, syntax.Subscript) and isinstance(sub.slice, syntax.Slice) else None
                if (
                    isinstance(at, syntax.Call)
                    and isinstance(at.func, syntax.Attribute)
                    and at.func.attr == "at"
                    and self._is_ops(at.func.value)
                    and at.args
                    and isinstance(at.args[0], syntax.Name)
                ):
                    found.add(at.args[0].id)
        return sorted(found)

    def appended_and_read(self, stmts):
        """Lists a block appends to (``lst = ops.append(lst, v)``) and also reads otherwise:
        name -> the largest constant index read (``lst[0]``), or None for any other read."""
        if not self.appends:
            return {}
        appended, own, subscripted = set(), set(), {}
        nodes = [n for stmt in stmts for n in syntax.nodes(stmt)]
        for n in nodes:
            if isinstance(n, syntax.Subscript):
                subscripted[id(n.value)] = n  # the subscript whose value `n.value` is
                continue
            func = getattr(n, "func", None) if isinstance(n, syntax.Call) else None
            if (
                isinstance(func, syntax.Attribute)
                and func.attr == "append"
                and isinstance(func.value, syntax.Name)
                and func.value.id == self.ctx.ops
                and n.args
                and isinstance(n.args[0], syntax.Name)
            ):
                appended.add(n.args[0].id)
                own.add(id(n.args[0]))
        reads = {}
        if not appended:
            return reads
        for n in nodes:
            if (
                not (isinstance(n, syntax.Name) and isinstance(n.ctx, syntax.Load))
                or id(n) in own
                or n.id not in appended
            ):
                continue
            up = subscripted.get(id(n))
            index = up.slice if up is not None else None
            if (
                isinstance(index, syntax.Constant)
                and type(index.value) is int
                and index.value >= 0
                and reads.get(n.id, 0) is not None
            ):
                reads[n.id] = max(reads.get(n.id, 0), index.value)
            else:
                reads[n.id] = None
        return reads

    def sync_cells(self, fn_defs):
        """In generated functions, a parameter that closures capture is the function's cell:

            def loop_body(x, scale_1, total):
                nonlocal scale
                scale = scale_1
                ...

        so a closure called in the body (or after it) reads the current value, as in Python."""
        if not (self.captured or self.declared_globals or self.declared_nonlocals):
            return  # most functions: nothing to declare or sync
        for fn in fn_defs:
            if not isinstance(fn, syntax.FunctionDef):
                continue
            self.declare_outside_names(fn)
            captured = [a for a in fn.args.args if a.id in self.captured]
            if not captured:
                continue
            prologue = [syntax.global_stmt(syntax.Nonlocal, [a.id for a in captured])]
            for a in captured:
                value = self.ctx.namer.new(a.id)
                prologue.append(syntax.assign(syntax.name(a.id, "store"), syntax.name(value)))
                a.id = value
            fn.body = syntax.copy_locations(prologue, fn) + fn.body

    def declare_outside_names(self, fn):
        """A generated function assigning a name the user's function declares ``global`` or
        ``nonlocal`` declares it too (a declaration does not reach nested functions)."""
        assigned = writes(fn.body)
        declarations = [
            syntax.global_stmt(kind, sorted(assigned & names))
            for kind, names in ((syntax.Global, self.declared_globals), (syntax.Nonlocal, self.declared_nonlocals))
            if assigned & names
        ]
        fn.body = syntax.copy_locations(declarations, fn) + fn.body

    def name_cells(self, stmts, branches=False):
        """``_name_cells``, where a generated function may declare a name ``nonlocal``: the
        user's function declares one, or closures capture one (``sync_cells``)."""
        if self.captured or self.declared_nonlocals:
            _name_cells(stmts, branches)

    def ops_name(self, op):
        return syntax.dotted(f"{self.ctx.ops}.{op}")

    # ------------------------------------------------------------------ traversal
    def run(self):
        body = self.block(self.fn.body)
        self.fn.body = self.with_hoisted(body, self.scopes[0])
        return self.fn

    def block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(self.stmt(stmt))
        return out

    def stmt(self, node):
        flag = anno.get(node, anno.GENERATED_FLAG)
        if flag is not None and flag not in self.live.live_out.get(node, {flag}):
            return []  # a jump flag nothing reads afterwards
        if isinstance(node, syntax.FunctionDef):
            _FunctionConverter(node, self.ctx).run()
            return [node]
        if isinstance(node, syntax.If):
            return self.convert_if(node)
        if isinstance(node, syntax.While):
            return self.convert_while(node)
        if isinstance(node, syntax.For):
            return self.convert_for(node)
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            caught, self.caught = self.caught, with_caught(self.caught)
            node.body = self.block(node.body)
            self.caught = caught
        elif isinstance(node, syntax.Try):
            # What the body, the `else` or a handler binds may not be bound after the `try`
            # (the body may stop at an exception; a handler runs only on one): for the
            # statements after it the scope knows only what was bound before it and what the
            # `finally` binds (fuzzer seed 7373: a handler's `k3`, then a staged read).
            scope = self.scopes[-1]
            before = set(scope.bound)
            in_try, self.in_try = self.in_try, True
            caught = self.caught
            blocks = staged_caught(node, caught, self.ctx.ops)
            self.caught = blocks["body"]
            node.body = self.block(node.body)
            self.in_try = in_try
            self.caught = blocks["orelse"]
            node.orelse = self.block(node.orelse)
            scope.bound = set(before)
            self.caught = blocks["finalbody"]
            node.finalbody = self.block(node.finalbody)
            after = set(scope.bound)
            self.caught = blocks["handlers"]
            for handler in node.handlers:
                scope.bound = set(before)
                handler.body = self.block(handler.body)
            scope.bound = after
            self.caught = caught
        return [node]

    # ------------------------------------------------------------------ if
    def if_names(self, node):
        """``(outputs, params, inits)`` of an ``if``: the names it gives back, those its
        branch functions take, and the statements binding the stand-in for those that may
        be unbound before it."""
        in_body, in_orelse = self.modified(node.body), self.modified(node.orelse)
        assigned = in_body | in_orelse
        # A closure may read a captured name at any time: both branches start from its value
        # and the `if` always returns it, so the cell holds the taken branch's value.
        kept = self.kept(node, node.body + node.orelse)
        outputs = self.order(assigned & (self.live.live_out[node] | kept))
        body_entry, orelse_entry = self.live.entry[(node, "body")], self.live.entry[(node, "orelse")]
        # The branches take a name where one of them assigns it and may read its value from
        # before the `if` (reads it first, or assigns it on some paths only): assigned there,
        # the name is that function's own. A name a branch only reads, or gives back as it
        # was, it reads from the enclosing function (``ops.cond`` calls it right away).
        taken = (in_body & body_entry) | (in_orelse & orelse_entry)
        if self.in_try:
            # A branch may raise after it assigned a variable the handlers (or the code after
            # the `try`) read: the branches take it, so that the branch run in Python gives
            # back its value at the raise (``ops.raised_state``), or the value before the `if`.
            taken = taken | set(outputs)
        # An `elif` takes what its `if` takes (of what it assigns), so that the chain is one
        # ``ops.cases`` whose arms take the same operands (``chain``).
        params = self.order(assigned & (taken | kept | self.arm_params.pop(node, set())))
        # A name a branch gives back unassigned may be unbound before the `if`: the enclosing
        # function binds it to the stand-in (``ops.undefined``), as it does a parameter.
        inits = self.undefined_inits(self.order(assigned & (body_entry | orelse_entry | kept | taken)), node)
        self.hoist_free_reads(node.body + node.orelse, node, params)
        return outputs, params, inits

    def convert_if(self, node):
        outputs, params, inits = self.if_names(node)
        after_jump = self.appends_after_jump(node, outputs)
        if_true, if_false = self.ctx.namer.new("if_true"), self.ctx.namer.new("if_false")
        body = self.scoped_block(node.body, params)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], syntax.If):
            self.arm_params[node.orelse[0]] = set(params)
        orelse = self.scoped_block(node.orelse, params)
        self.bind(outputs)
        # Located while built (every node the rewrite adds below is located where it is added).
        stmts = templates.replace(
            _IF,
            location_of=node,
            if_true=if_true,
            if_false=if_false,
            params=list(params),
            body=body,
            orelse=orelse,
            outputs=syntax.names_tuple(outputs),
            targets=syntax.names_tuple(outputs),  # a node of its own (a second use is copied)
            ops_cond=self.ops_name("cond"),
            test=node.test,
            # (Outputs equal to the operands go unwritten, unless ``sync_cells`` renames a branch
            # parameter: then ``ops.cond`` would read the new name.)
            spec=self.spec(
                node,
                outputs,
                outputs=True,
                after_jump=after_jump,
                operands=None if self.captured & set(params) else tuple(params),
            ),
        )
        if self.caught:
            caught_by = syntax.Tuple(elts=[syntax.deepcopy(t) for t in self.caught], ctx=syntax.Load())
            stmts[2].value.keywords.append(syntax.copy_location(syntax.keyword(arg="caught_by", value=caught_by), node))
        _strip_bare_returns(stmts[:2], node)
        self.sync_cells(stmts[:2])
        if self.in_try:  # for ops.raised_state (keep_on_raise)
            self.name_cells(stmts, branches=True)
        else:
            for fn in stmts[:2]:
                anno.set(fn, anno.ONLY_IN_CALL, True)
        return inits + self.keep_on_raise(self.chain(node, stmts, params, orelse), params, if_true, node)

    def _chained_call(self, node, stmts, params, orelse):
        """The ``ops.cond`` / ``ops.cases`` call of the ``elif`` that ``chain`` may join to
        ``node``'s, or None where the forms differ (see ``chain``)."""
        if (
            len(node.orelse) != 1
            or not isinstance(node.orelse[0], syntax.If)
            or self.in_try
            or self.caught
            or self.captured
            or self.declared_globals
            or self.declared_nonlocals
            or len(orelse) < 3
            or not all(isinstance(d, syntax.FunctionDef) for d in orelse[:-1])
        ):
            return None
        last = orelse[-1]
        inner = last.value if isinstance(last, (syntax.Assign, syntax.Expr)) else None
        if not (
            isinstance(inner, syntax.Call)
            and isinstance(inner.func, syntax.Attribute)
            and self._is_ops(inner.func.value)
            and inner.func.attr in ("cond", "cases")
            and [k.arg for k in inner.keywords] == ["at"]
            and isinstance(inner.keywords[0].value, syntax.Constant)
            and _target_text(last) == _target_text(stmts[2])
        ):
            return None
        operands = inner.args[3 if inner.func.attr == "cond" else 2 :]
        if [getattr(a, "id", None) for a in operands] != list(params):
            return None
        return inner

    def chain(self, node, stmts, params, orelse):
        """An ``if`` whose ``else`` is only an ``elif`` (its converted ``orelse``: the
        ``ops.cond`` -- or ``ops.cases`` -- of the ``elif`` and its branch functions) as one
        ``ops.cases`` call, its arms' functions side by side instead of one level deeper per
        arm::

            retval = ops.cases([(n < 2, if_true), (lambda: n < 4, if_true_1)], if_false_1, at='4 -> retval; elif: 6')

        The same calls of ``ops.cond`` run (the runtime nests them). The ``elif``'s
        condition becomes a thunk beside the first one that reads what it read in
        ``if_false``: the names outside, and the branches' parameters as its own (``lambda
        y: y > 0``, called with the false branch's operands) where it reads one. Only where
        the ``elif`` has this ``if``'s parameters, outputs and facts (its descriptor but the
        line), and its condition binds no name (``:=``). Not inside a ``try`` or where
        closures or declarations make the branch functions sync cells (their extra
        statements keep the nested form)."""
        inner = self._chained_call(node, stmts, params, orelse)
        if inner is None:
            return stmts
        call = stmts[2].value
        n_fns = 3 if inner.func.attr == "cond" else 2
        operands = inner.args[n_fns:]
        if inner.func.attr == "cond":
            arms = [syntax.Tuple(elts=inner.args[:2], ctx=syntax.Load())]
        else:
            arms = list(inner.args[0].elts)
        test = arms[0].elts[0]
        reads = {n.id for n in syntax.nodes(test) if isinstance(n, syntax.Name)}
        if not reads.isdisjoint(d.name for d in orelse[:-1]):
            return stmts
        if any(isinstance(n, _NOT_IN_THUNK) for n in syntax.nodes(test)):
            return stmts
        facts = sites.Facts.parse(call.keywords[0].value.value)
        inner_facts = sites.Facts.parse(inner.keywords[0].value.value)
        if replace(inner_facts, lineno=facts.lineno, elif_lines=()) != facts:
            return stmts
        # Where the test reads what the branches take, it takes them too, as `if_false` did.
        thunk = syntax.lambda_(test, params if not reads.isdisjoint(params) else ())
        anno.set(thunk, anno.THUNK, True)
        arms[0].elts[0] = syntax.copy_location(thunk, test)
        first = syntax.Tuple(elts=[call.args[0], call.args[1]], ctx=syntax.Load())
        facts = replace(facts, elif_lines=(inner_facts.lineno, *inner_facts.elif_lines))
        cases = syntax.call(
            self.ops_name("cases"),
            [syntax.List(elts=[first, *arms], ctx=syntax.Load()), inner.args[n_fns - 1], *operands],
            {"at": syntax.constant(facts.text())},
        )
        stmts[2].value = syntax.copy_locations([cases], node)[0]
        return [stmts[0], *orelse[:-1], stmts[2]]

    # ------------------------------------------------------------------ while
    def convert_while(self, node):
        kept = self.kept(node, node.body)
        state = self.order(self.modified(node.body) & (self.live.header[node] | kept))
        inits = self.undefined_inits(state, node)
        self.hoist_free_reads(node.body, node, state, node.test)
        loop_test, loop_body = self.ctx.namer.new("loop_test"), self.ctx.namer.new("loop_body")
        body = self.scoped_block(node.body, state)
        self.bind(state)
        stmts = templates.replace(
            _WHILE,
            location_of=node,
            loop_test=loop_test,
            loop_body=loop_body,
            state=list(state),
            test=node.test,
            body=body,
            outputs=_state_expr(state),
            init=_state_expr(state),
            targets=syntax.names_tuple(state),
            ops_while_loop=self.ops_name("while_loop"),
            spec=self.spec(node, state, read_unbound=self.read_unbound(node.body, state)),
        )
        self.sync_cells(s for s in stmts if isinstance(s, syntax.FunctionDef))
        self.name_cells(stmts)
        if not self.in_try:
            anno.set(stmts[0], anno.ONLY_IN_CALL, True)  # loop_test (only the while loop's is inlined)
        return inits + self.keep_on_raise(stmts, state, loop_body, node)

    # ------------------------------------------------------------------ for
    def _builtin(self, node, name):
        return (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Name)
            and node.func.id == name
            and self.ctx.resolve(name, self.fn_locals) is getattr(builtins, name)
            and not node.keywords
            and not any(isinstance(a, syntax.Starred) for a in node.args)
        )

    def _iterable(self, node):
        """``enumerate(...)``/``zip(...)`` become ``ops.enumerate``/``ops.zip`` (recursively),
        so a staged loop can scan over the arrays inside them."""
        if self._builtin(node, "enumerate") or self._builtin(node, "zip"):
            node.func = syntax.copy_location(self.ops_name(node.func.id), node.func)
            node.args = [self._iterable(a) for a in node.args]
        return node

    _checked_reads = None  # (hoist_free_reads: set at its first use)

    @property
    def fn_locals(self):
        if not hasattr(self, "_fn_locals"):
            self._fn_locals = local_names(self.fn)
        return self._fn_locals

    def for_names(self, node):
        """``(targets, state, stopped, index_target)`` of a ``for``: the names its target
        binds, the names the loop carries, the flag saying its item test stopped it (or
        None), and the range's loop variable given back as an int (or None)."""
        targets = target_names(node.target)
        kept = self.kept(node, node.body)
        stopped = anno.get(node, anno.ITEM_TEST)  # the flag saying the item test stopped it
        if stopped is not None:
            # The runtime gives back the target (passes.loop_exits folds only loops over one
            # name, which the body does not assign): it is not carried.
            targets = set()
        modified = self.modified(node.body)
        state = self.order((modified | targets) & (self.live.header[node] | kept))
        # The loop variable of a range, carried (read after the loop) and not assigned by the
        # body, without exits: after a loop over a static range it is the last item, an int.
        index_target = None
        if (
            self._is_range(node.iter)
            and anno.get(node, anno.EXTRA_TEST) is None
            and stopped is None
            and isinstance(node.target, syntax.Name)
            and node.target.id in state
            and node.target.id not in modified
        ):
            index_target = node.target.id
        return targets, state, stopped, index_target

    def _is_range(self, iterable):
        return self._builtin(iterable, "range") and 1 <= len(iterable.args) <= 3

    def _for_call(self, node):
        """The ``ops`` function running a ``for`` and its iteration arguments: ``for_range``
        with ``(start, stop, step)``, or ``for_iter`` with the iterable."""
        if not self._is_range(node.iter):
            return "for_iter", [self._iterable(node.iter)]
        args = list(node.iter.args)
        if len(args) == 1:
            args = [syntax.constant(0), args[0]]
        if len(args) == 2:
            args.append(syntax.constant(1))
        return "for_range", args

    def _for_test(self, node, loop_test, item, state, stopped):
        """The ``loop_test`` function of a ``for`` with an exit test, or no statement."""
        extra = anno.get(node, anno.EXTRA_TEST)
        if stopped is not None:
            template = _FOR_TEST if anno.get(node, anno.TEST_AFTER) else _FOR_ITEM_TEST
            return templates.replace(
                template, location_of=node, loop_test=loop_test, item=item, state=list(state), test=extra
            )
        if extra is not None:
            return templates.replace(_FOR_TEST, location_of=node, loop_test=loop_test, state=list(state), test=extra)
        return []

    def convert_for(self, node):
        targets, state, stopped, index_target = self.for_names(node)
        inits = self.undefined_inits(state, node)
        self.hoist_free_reads(node.body, node, [*state, *targets])
        op, args = self._for_call(node)
        if isinstance(node.target, syntax.Name) and node.target.id not in state:
            item, prelude = node.target.id, []
        else:
            item = self.ctx.namer.new("index" if op == "for_range" else "item")
            target = syntax.deepcopy(node.target)
            prelude = [syntax.copy_location(syntax.assign(target, syntax.name(item)), node.target)]
        loop_body = self.ctx.namer.new("loop_body")
        loop_test = self.ctx.namer.new("loop_test") if anno.get(node, anno.EXTRA_TEST) is not None else None
        reads_appended = self.appended_and_read(node.body)
        inserts = self.inserted_into(node.body)
        body = self.scoped_block(node.body, set(state) | {item} | targets)
        if stopped is not None:  # a body that was only the exit (`pass` stands for it)
            body = [stmt for stmt in body if not isinstance(stmt, syntax.Pass)]
        outputs = list(state) + ([node.target.id, stopped] if stopped is not None else [])
        self.bind(outputs)
        stmts = self._for_test(node, loop_test, item, state, stopped)
        stmts += templates.replace(
            _FOR,
            location_of=node,
            loop_body=loop_body,
            item=item,
            state=list(state),
            body=prelude + body,
            outputs=_state_expr(state),
            ops_call=self.ops_name(op),
            iter_args=args,
            init=_state_expr(state),
            loop_test=loop_test,
            targets=syntax.names_tuple(outputs),
            spec=self.spec(
                node,
                state,
                reads_appended=reads_appended,
                item_test=node.target.id if stopped is not None else None,
                test_after=bool(anno.get(node, anno.TEST_AFTER)),
                read_unbound=self.read_unbound(node.body, state),
                index_target=index_target,
                inserts=inserts,
            ),
        )
        if stopped is not None and node.target.id in self.defined.before[node][0]:
            # The target has a value before the loop: the op gives it back where no iteration
            # rebinds it (a loop over nothing, or a traced trip count of 0).
            target = syntax.keyword(arg="target", value=syntax.name(node.target.id))
            stmts[-1].value.keywords.append(syntax.copy_location(target, node))
        self.sync_cells(s for s in stmts if isinstance(s, syntax.FunctionDef))
        self.name_cells(stmts)
        return inits + self.keep_on_raise(stmts, state, loop_body, node)

    def keep_on_raise(self, stmts, state, key, node):
        """Inside a ``try``, the op's call in ``_KEEP_ON_RAISE`` (``key``: the body function
        or ``if_true``): an exception out of a loop or branch run in Python gives back the
        variables (``state``: passed to it) as the raise left them
        (``ops.raised_state``). ``stmts`` are located (at ``node``), and so is what this adds."""
        if not self.in_try or not state:
            return stmts
        wrapped = templates.replace(
            _KEEP_ON_RAISE,
            location_of=node,
            call=[stmts[-1]],
            raised=self.ctx.namer.new("raised"),
            state=_state_expr(state),
            ops_raised_state=self.ops_name("raised_state"),
            key=key,
        )
        return stmts[:-1] + wrapped


def _target_text(stmt) -> str:
    """What an op's call statement assigns, as text ('' for none)."""
    return syntax.dump(stmt.targets[0]) if isinstance(stmt, syntax.Assign) else ""


def _has_control_flow(fn_node) -> bool:
    """Whether the function's own statements (not those of functions nested in it, which
    are converted on their own) hold an ``if``, a loop or a jump flag's assignment: else the
    pass changes nothing in it, and needs no analysis of it."""
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        kind = node.__class__
        if kind in _CONTROL_FLOW or anno.get(node, anno.GENERATED_FLAG) is not None:
            return True
        if kind not in _SCOPE_STATEMENTS:
            stack.extend(syntax.child_statements(node))
    return False


_CONTROL_FLOW = frozenset({syntax.If, syntax.While, syntax.For})
# What an ``elif``'s condition may not hold to become a thunk (``chain``): a name it binds
# (``:=``) would be the thunk's own, and a ``yield`` / ``await`` the thunk's.
_NOT_IN_THUNK = (syntax.NamedExpr, syntax.Yield, syntax.YieldFrom, syntax.Await)
_SCOPE_STATEMENTS = frozenset({syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef})


def _name_cells(stmts, branches=False):
    """A loop body's (``branches``: an ``if``'s branches') parameter renamed for a closure's
    cell (``sync_cells``: ``out_1`` for ``out``) stands for the user's variable: the
    descriptor says so (``cell: out_1=out``), so the runtime's facts and errors use the
    user's name, and a raise in Python reads the cell's value."""
    fns = [s for s in stmts if isinstance(s, syntax.FunctionDef)]
    fns = fns[:2] if branches else [next((f for f in fns if f.name.startswith("loop_body")), None)]
    call = next((s.value for s in stmts if isinstance(getattr(s, "value", None), syntax.Call)), None)
    if None in fns or call is None:
        return
    renames = []
    for body in fns:
        for stmt in body.body:
            if (
                isinstance(stmt, syntax.Assign)
                and isinstance(stmt.value, syntax.Name)
                and stmt.value.id in syntax.param_names(body.args)
                and isinstance(stmt.targets[0], syntax.Name)
                and any(isinstance(d, syntax.Nonlocal) and stmt.targets[0].id in d.names for d in body.body)
            ):
                renames.append((stmt.value.id, stmt.targets[0].id))
    at = next((k for k in call.keywords if k.arg == "at"), None)
    if renames and at is not None and isinstance(at.value, syntax.Constant):
        facts = sites.Facts.parse(at.value.value).with_cells(renames)
        at.value = syntax.copy_location(syntax.constant(facts.text()), at.value)


def transform(fn_node, ctx):
    return _FunctionConverter(fn_node, ctx).run()
