"""``--standalone``: the entry point, statements, ``if``, item and attribute assignment.

Owns the walk over one converted function: which ``ops.*`` calls it may contain (anything
else is refused up front), the statement-level lowering, and the ``if``: Python ``if``,
``jnp.where`` or ``jax.lax.cond`` as ``autolax.plan.if_form`` decides (with
``plan.select_safe`` on what each branch traces to: ``primitives``).
"""

from __future__ import annotations

import builtins
import contextlib
from dataclasses import dataclass, replace

from autolax import errors, plan, sites
from autolax.sourcegen.standalone import breaks, declarations, helpers, primitives
from autolax.sourcegen.standalone.expressions import JOINING, READERS, Expressions
from autolax.sourcegen.standalone.loops import Loops
from autolax.sourcegen.standalone.patterns import (
    NOT_LITERAL,
    OP_OF_METHOD,
    REBOUND,
    assigned_names,
    at_chain,
    length_change,
    length_text,
    evaluated_first,
    literal_value,
    python_if,
    rereadable,
    restore_target,
    unaliased_lists,
    without_cells,
    without_return,
)
from autolax.sourcegen.standalone.values import (
    CHECKED,
    NUMERIC,
    STATIC,
    TRACED,
    UNDEFINED,
    Scope,
    Val,
    binop,
    carried,
    casts,
    flat,
    item_of,
    join_kinds,
    may_differ,
    staged_output,
    structures_differ,
    structures_unknown,
    without_items,
)
from autolax.analysis.activity import writes
from autolax.transpile import syntax

HINT = " (drop --standalone to use the autolax runtime)"
ANY = None
# The ops converted code may call: (fewest, most positional arguments, keywords).
OPS = {
    "cond": (3, None, {"at", "caught_by"}), "while_loop": (3, 3, {"at"}), "for_range": (5, 6, {"at", "target"}),
    "for_iter": (3, 4, {"at", "target"}), "if_else": (3, 3, {"caught_by"}), "and_": (2, None, {"caught_by"}), "or_": (2, None, {"caught_by"}),
    "not_": (1, 1, ()), "undefined": (1, 1, {"pending"}), "append": (2, 2, ()), "stacked": (1, 1, ()),
    "stack": (2, None, ANY),
    "at": (1, 1, ()), "setattr": (3, 3, {"op"}), "call": (1, None, ANY), "enumerate": (1, 2, ()),
    "zip": (0, None, ()), "print": (0, None, {"sep", "end", "file", "flush"}), "assigned": (1, 1, {"at"}),
    "bound": (1, 1, ()), "outside": (1, 2, ()), "raising": (1, 1, {"caught_by"}), "caught": (2, 2, {"not_by"}), "asserting": (1, 2, ()),
    "range": (1, 3, ()), "is_": (3, 3, {"flag"}), "is_not": (3, 3, {"flag"}),
}


CHECK = "_autolax_raise_if"  # attribute of a `with raise_if(...):` whose block is still to fill


def with_checks(stmts):
    """``stmts`` with the statements after each ``with raise_if(...):`` moved into its block."""
    out = []
    for s in reversed(stmts):
        if getattr(s, CHECK, False):
            delattr(s, CHECK)
            s.body = out or [syntax.Pass()]
            out = [s]
        else:
            out.insert(0, s)
    return out


def folded(test):
    """The truth of a test made of number literals and operators only (``not 3``,
    ``2 // 2 > 3``), or None."""
    value = literal_value(test)
    return None if value is NOT_LITERAL else bool(value)


def substituted(node, env):
    """``node`` with each name ``env`` maps replaced by (a copy of) its expression."""
    if isinstance(node, syntax.Name) and node.id in env:
        return syntax.deepcopy(env[node.id])
    node = syntax.deepcopy(node)
    for field, value in syntax.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [substituted(v, env) if isinstance(v, syntax.AST) else v for v in value])
        elif isinstance(value, syntax.expr):
            setattr(node, field, substituted(value, env))
    return node


def strong_kind(a: Val, b: Val):
    """The kind (``"float"``) to make a select of ``a`` and ``b`` an array of, as the
    runtime's select gives it: a Python number beside an array of a narrower kind (``1.5``
    beside an int32) gives an array of the number's kind, of its default dtype, not weakly
    typed (``jnp.where`` would keep it weak); so do Python numbers of two kinds (``1`` and
    ``0.5``: a float array). None: ``jnp.where``'s type is the runtime's."""
    numbers = ("int", "float", "complex")
    if a.is_weak and b.is_weak and a.kind in numbers and b.kind in numbers and a.kind != b.kind:
        return join_kinds(a.kind, b.kind)
    for weak, strong in ((a, b), (b, a)):
        if (weak.is_weak and not strong.is_weak and weak.kind in ("int", "float", "complex")
                and strong.kind in NUMERIC and strong.kind != weak.kind and join_kinds(weak.kind, strong.kind) == weak.kind):
            return weak.kind
    return None


class Refs:
    """What the output file needs: how it spells ``jax``, ``jax.lax`` and ``jax.numpy``,
    which imports that takes, and which helper functions (``helpers``) it defines."""

    def __init__(self, module, local_names):
        self.module = module
        self.local_names = set(local_names)
        self.needed_imports: set = set()
        self.needed_helpers: set = set()

    def __call__(self, target: str) -> str:
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            name = self.module.imported_as(".".join(parts[:i]))
            if name is not None and name not in self.local_names:
                return ".".join([name] + parts[i:])
        if "jax" in self.local_names:
            raise errors.conversion_error("standalone-jax-shadowed", filename=self.module.path)
        self.needed_imports.add(parts[0])
        return target


@dataclass(frozen=True)
class Flagged:
    """An output of a staged ``if`` that Python may leave unbound (``Lowering.one_sided``):
    per side (true, false), whether it bound it (``True`` / ``False``) or the name of the flag
    that says so; ``given``: the Val the binding side gives it, where one side leaves it
    unbound (that side gives zeros of its type), else None."""

    name: str
    bound_true: object
    bound_false: object
    given: Val | None
    flag: bool = True  # False: Python binds it before every read (zeros only, no flag)

    @property
    def bound(self):
        return self.bound_true, self.bound_false


class Lowering(Expressions, Loops):
    """Lowers the ops calls of one converted function (``converted.node``) in place."""

    def __init__(self, converted, module, refs: Refs, static_params, is_method: bool, declared=None,
                 static_callees=None):
        self.ctx = converted.ctx
        self.fn = converted.node
        self.module = module
        self.refs = refs
        self.ops = self.ctx.ops
        self.generated = set(self.ctx.namer.generated)
        self.static_params = set(static_params)
        self.is_method = is_method
        self.declared = declared or {}
        self.static_callees = static_callees or {}  # see Converter.static_by_option
        self.final = True  # False while a loop's fixed point is analysed (dry runs)
        self.staged = 0  # depth of staged bodies being lowered (a print there prints at run time)
        self.staged_about = []  # per staged body being lowered: (its statement's fields, names it binds)
        self.zeroed = {}  # variables given a zero before a staged loop that may not assign them
        # The catalogue error (code, fields) for code that raises while it is staged although
        # Python may not run it (a branch of a staged `if`, an operand after a traced `and`),
        # as the runtime raises it; None where the output runs the code as Python would.
        self.failing = None
        # Depth of staged loop bodies the runtime runs as a Python loop where they cannot be
        # staged (static bounds, or a first test that is a Python value; see `op_assigned`).
        self.falling_back = 0
        self.dead = False  # lowering code that never runs (see `dead_if`)
        self.concrete_stack = []  # per loop being checked: where its body needs concrete values
        readers = {n for n in READERS if self.ctx.resolve(n) is getattr(builtins, n)}
        self.unaliased = unaliased_lists(self.fn, self.ops, readers, self.generated, self.joining_calls())
        self.functions = {}  # local names bound to a nested `def` or a lambda -> its node
        # id(that node) -> (its body before lowering, what was known of the names it saw then)
        self.definitions = {}
        self._carry = None
        self.literals = {}  # names the statements before, in this block, gave a number literal
        self.nonlocals = {n for node in syntax.walk(self.fn) if isinstance(node, syntax.Nonlocal) for n in node.names}
        self.depth = 0  # of the blocks being lowered (1: the function's own statements)
        # Depth of the blocks being lowered that may run other than once when the function's
        # own statements reach them (loops, a Python `if`, `try`, `with`, a nested function):
        # a one-sided staged `if` gives a flag only outside them (see `one_sided`).
        self.crooked = 0
        # Names a staged `if` assigns on one side only -> the catalogue fields of the
        # `if-one-sided` refusal, for a read that cannot check the flag (`checked_read`).
        self.flagged = {}
        self.checks = []  # `with raise_if(...)` checks of reads in the statement being lowered
        # Parameters nothing declares that a staged loop iterates over as arrays (checked at entry).
        self.assumed_arrays = set()
        self.current = None  # the statement being lowered

    # ------------------------------------------------------------------ entry
    def run(self):
        self.drop_passthrough_handlers()
        self.check_ops()
        values = declarations.param_vals(self.fn, self.static_params, self.is_method, self.declared)
        rebound = writes(self.fn.body)
        self.fn.body = self.block(self.fn.body, Scope(None, values))
        self.fn.body = insert_after_docstring(self.fn.body, self.argument_checks(rebound))
        flags = {name for name, what in self.ctx.descriptions.items() if what == "the `break` flag"}
        breaks.restore(self.fn, flags)
        exits = {name for name, what in self.ctx.descriptions.items() if what == "the loop's exit test"}
        breaks.restore_exits(self.fn, exits)
        return self.fn

    def argument_checks(self, rebound) -> list:
        """``check_argument(...)`` of each argument whose type the output relies on: each
        declared one (the function is written for its type), and each that nothing declares
        but a staged loop iterates over as an array (``rebound``: parameters the function
        assigns, which it does not iterate as given) -- a tuple there would be scanned as the
        stacked array of its items."""
        checks = declarations.argument_checks(self.fn, self.static_params, self.is_method, self.declared)
        declared = {c.name for c in checks}
        params = syntax.param_names(self.fn.args)
        checks += [declarations.ArgumentCheck(n, None) for n in params
                   if n in self.assumed_arrays and n not in declared and n not in rebound]
        checks.sort(key=lambda c: params.index(c.name))
        out = []
        for c in checks:
            keywords = {}
            if c.types is not None:
                keywords["types"] = syntax.Tuple(elts=[syntax.name(t) for t in c.types], ctx=syntax.Load())
            else:
                keywords.update({k: syntax.constant(v) for k, v in (("dtype", c.dtype), ("ndim", c.ndim)) if v is not None})
            args = [syntax.name(c.name)] + [syntax.constant(v) for v in (self.fn.name, c.name, c.declared)]
            out.append(syntax.copy_location(syntax.expr_stmt(syntax.call(self.helper(helpers.CHECK_ARGUMENT), args,
                                                                          keywords)), self.fn))
        return out

    def assume_arrays(self, node, scope):
        """Records the parameters nothing declares that the iterable ``node`` of a staged loop
        takes for arrays (itself, or inside ``enumerate`` / ``zip``)."""
        op = self.op_of(node)
        if op in ("enumerate", "zip"):
            for part in node.args[:1] if op == "enumerate" else node.args:
                self.assume_arrays(part, scope)
        elif isinstance(node, syntax.Name) and node.id in syntax.param_names(self.fn.args) \
                and scope.get(node.id).like == node.id:
            self.assumed_arrays.add(node.id)

    def drop_passthrough_handlers(self):
        """Removes the ``except ops.AutolaxError: raise`` the front end puts first in each
        ``try`` with handlers (``passes.exceptions``), so that autolax's errors pass through
        the user's handlers: the output raises no autolax error, and its ``try`` is the
        user's own.

            try:                                 try:
                ...                                  ...
            except ops.AutolaxError:      ->     except ValueError:
                raise                                ...
            except ValueError:
                ...
        """
        for node in syntax.walk(self.fn):
            if isinstance(node, syntax.Try) and len(node.handlers) > 1 and self._passthrough(node.handlers[0]):
                node.handlers = node.handlers[1:]

    def _passthrough(self, handler) -> bool:
        kind, body = handler.type, handler.body
        return (handler.name is None and isinstance(kind, syntax.Attribute) and kind.attr == "AutolaxError"
                and isinstance(kind.value, syntax.Name) and kind.value.id == self.ops and len(body) == 1
                and isinstance(body[0], syntax.Raise) and body[0].exc is None and body[0].cause is None)

    def check_ops(self):
        """Refuses any use of ``ops`` that is not a call this module knows, with the
        arguments it knows: the front end grows faster than this module, and an ``ops``
        call lowered by guesswork would run differently."""
        # `caught_by=(...)` tells the runtime which handlers catch a staged error; the output
        # stages none there, so it drops the argument (and the `ops.FinallyRaises` it names).
        for node in syntax.walk(self.fn):
            if (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute)
                    and isinstance(node.func.value, syntax.Name) and node.func.value.id == self.ops
                    and node.func.attr != "raising"):
                node.keywords = [kw for kw in node.keywords if kw.arg != "caught_by"]
        parents = {id(c): n for n in syntax.walk(self.fn) for c in syntax.iter_child_nodes(n)}
        for node in syntax.walk(self.fn):
            if not (isinstance(node, syntax.Name) and node.id == self.ops):
                continue
            attr = parents.get(id(node))
            call = parents.get(id(attr))
            name = attr.attr if isinstance(attr, syntax.Attribute) else ""
            if not isinstance(call, syntax.Call) or call.func is not attr or name not in OPS:
                raise self.refuse("standalone-op", parents.get(id(call), node), call=f"{self.ops}.{name}" if name else self.ops)
            fewest, most, keywords = OPS[name]
            n = len(call.args)
            starred = any(isinstance(a, syntax.Starred) for a in call.args)
            extra = [kw.arg for kw in call.keywords if keywords is not ANY and kw.arg not in keywords]
            if extra or n < fewest and not starred or most is not None and (n > most or starred):
                shown = f"{self.ops}.{name}(..., {extra[0]}=...)" if extra else f"{self.ops}.{name}(<{n} arguments>)"
                raise self.refuse("standalone-op", call, call=shown)

    # ------------------------------------------------------------------ helpers
    def refuse(self, code, node, runtime_can=True, **fields):
        """The catalogue's ``ConversionError`` for ``code`` at ``node``'s line; ``runtime_can``:
        the autolax runtime would run this program (the message says to drop --standalone)."""
        source_line = None if "source" in fields else self.ctx.line_text(getattr(node, "lineno", 0)) or None
        exc = errors.conversion_error(code, filename=self.ctx.filename, lineno=getattr(node, "lineno", None),
                                      col=getattr(node, "col_offset", None), source_line=source_line, **fields)
        if not runtime_can:
            return exc
        first, newline, rest = exc.reason.partition("\n")
        hinted = errors.ConversionError(first + HINT + newline + rest, filename=exc.filename, lineno=exc.lineno,
                                        col=exc.col, source_line=exc.source_line, fix=exc.fix)
        hinted.code, hinted.docs = exc.code, exc.docs
        return hinted

    def site(self, call, kind, names=None):
        """The statement's ``sites.Site``, from the call's ``at='...'`` descriptor (removed:
        the output has no runtime to read it)."""
        spec = next((getattr(kw.value, "value", None) for kw in call.keywords if kw.arg == "at"), None)
        if not isinstance(spec, str):
            raise self.refuse("standalone-op", call, call=f"{self.ops}.{call.func.attr}(...) without at='...'")
        # `target=`: the value the loop target had before the loop; the output reads the
        # target's variable itself.
        call.keywords = [kw for kw in call.keywords if kw.arg not in ("at", "target", "caught_by")]
        if sites.parse_spec(spec)[10]:  # `cell: P=NAME`: a closure captures a variable the loop carries
            raise self.refuse("standalone-op", call, call=f"{self.ops}.{call.func.attr}(...) carrying a variable that "
                                                          "a nested function or lambda captures")
        return sites.site(kind, spec, self.ctx.filename, None if names is None else tuple(names))

    def about(self, site, name=None):
        """The catalogue fields naming a statement (and one of its variables)."""
        fields = {"stmt": site.what, "where": site.where, "source": self.ctx.line_text(site.lineno)}
        if name is not None:
            fields.update(what=site.describe(name), name=name)
        return fields

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

    def new_name(self, base: str) -> str:
        """A fresh name for generated code (in a dry run, a stand-in that takes no name)."""
        return self.ctx.namer.new(base) if self.final else base

    def carry_name(self):
        if self._carry is None:
            self._carry = self.ctx.namer.new("carry")  # one per function: taken in dry runs too
        return self._carry

    def dry(self, fn, *args):
        """Runs an analysis on copies, without raising errors (a loop's fixed point)."""
        saved, self.final = self.final, False
        try:
            return fn(*args)
        finally:
            self.final = saved

    def joining_calls(self) -> set:
        """Ids of the calls ``jnp.stack(...)`` (and the other functions of ``JOINING``, also as
        ``ops.stack(jnp.stack, ...)``) in the function: they read the list they are given,
        and keep no reference to it."""
        out = set()
        for node in syntax.walk(self.fn):
            if (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and node.func.attr in JOINING
                    and isinstance(node.func.value, syntax.Name)
                    and (node.func.value.id == self.ops
                         or getattr(self.ctx.resolve(node.func.value.id), "__name__", None) == "jax.numpy")):
                out.add(id(node))
        return out

    @contextlib.contextmanager
    def staging(self, failing):
        """Lowers code the output stages where Python may not run it (``failing``: the error
        the runtime raises if it fails while staged; None: the output runs it as Python)."""
        saved, self.failing = self.failing, failing
        try:
            yield
        finally:
            self.failing = saved

    @contextlib.contextmanager
    def dead_if(self, dead):
        """Lowers code that never runs, if ``dead`` (the side of a Python ``if`` whose test is
        a constant: ``elif not 3:``): nothing there fails while traced."""
        saved = self.failing, self.dead
        if dead:
            self.failing, self.dead = None, True
        try:
            yield
        finally:
            self.failing, self.dead = saved

    @contextlib.contextmanager
    def falling_back_if(self, fallback):
        """Lowers the body of a staged loop that the runtime runs as a Python loop where its
        body cannot be staged, if ``fallback`` (see ``op_assigned``)."""
        self.falling_back += fallback
        try:
            yield
        finally:
            self.falling_back -= fallback

    def fails_while_staged(self, node, error):
        """The runtime's error for ``node``, which surely raises ``error`` when the output
        stages it, where Python may not run it."""
        code, fields = self.failing
        return self.refuse(code, node, runtime_can=False, error=error, **fields)

    def staged_block(self, stmts, scope, about, branch=False):
        """Lowers a staged branch or loop body (``about``: the statement's catalogue fields;
        ``branch``: a side of an ``if``, see ``block``)."""
        with self.staged_code(about, stmts):
            # A function needs a statement: a branch that only unbinds a name (`del z`) has none left.
            return self.block(stmts, scope, branch) or [syntax.Pass()]

    @contextlib.contextmanager
    def staged_code(self, about, stmts):
        """Lowers code of a staged body (``stmts``: the body, whose names it binds)."""
        self.staged += 1
        self.staged_about.append((about, writes(stmts)))
        try:
            yield
        finally:
            self.staged -= 1
            self.staged_about.pop()

    # ------------------------------------------------------------------ statements
    def block(self, stmts, scope, branch=False):
        """Lowers ``stmts``; ``branch``: a side of an ``if``, which starts with the literals
        the statements before the ``if`` gave (``self.literals``; a loop body or a function
        may start with others)."""
        out, pending = [], {}
        checked = None  # the name the previous statement checked is bound (`x = ops.assigned(x)`)
        outer, self.literals = self.literals, dict(self.literals) if branch else {}
        outer_checks, outer_current = self.checks, self.current
        self.depth += 1
        try:
            for s in stmts:
                if isinstance(s, syntax.FunctionDef) and s.name in self.generated:
                    pending[s.name] = s
                    continue
                deleting = checked is not None and self.op_of(getattr(s, "value", None)) == "undefined" \
                    and isinstance(s, syntax.Assign) and s.targets[0].id == checked
                checked = self._checked_name(s)
                written, given = writes(s), self._literal_given(s)
                self.checks, self.current = [], s
                lowered = self.stmt(s, scope, pending, deleting)
                if self.checks and checked is not None and len(lowered) == 1 and isinstance(lowered[0], syntax.Assign) \
                        and isinstance(lowered[0].value, syntax.Name) and lowered[0].value.id == checked:
                    lowered = []  # `q = q` after the check that `q` is bound
                out.extend(self.checks)  # reads of `s` checked when the program runs, before it
                out.extend(lowered)
                for name in written:
                    self.literals.pop(name, None)
                if given is not None:
                    self.literals[given[0]] = given[1]
        finally:
            self.literals = outer
            self.checks, self.current = outer_checks, outer_current
            self.depth -= 1
        return with_checks(out)

    def _literal_given(self, s):
        """(name, value) for ``name = <number literal>`` (``k = 0``), of a name no nested
        function declares ``nonlocal`` (a call could change it), else None."""
        if not (isinstance(s, syntax.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], syntax.Name)):
            return None
        value = literal_value(s.value)
        if type(value) not in (bool, int, float) or s.targets[0].id in self.nonlocals:
            return None
        return s.targets[0].id, value

    def false_by_literals(self, test) -> bool:
        """Is ``test`` false when its names hold the number literals the statements before it
        in this block gave them (``k > 0`` after ``k = 0``)?"""
        names = {n.id for n in syntax.walk(test) if isinstance(n, syntax.Name)}
        if not names or not names <= set(self.literals):
            return False
        values = {name: syntax.constant(self.literals[name]) for name in names}
        replaced = syntax.deepcopy(test)
        for node in syntax.walk(replaced):
            for field, value in syntax.iter_fields(node):
                if isinstance(value, syntax.Name) and value.id in values:
                    setattr(node, field, values[value.id])
                elif isinstance(value, list):
                    value[:] = [values[v.id] if isinstance(v, syntax.Name) and v.id in values else v for v in value]
        if isinstance(replaced, syntax.Name):
            replaced = values[replaced.id]
        value = literal_value(replaced)
        return value is not NOT_LITERAL and not value

    def _checked_name(self, s):
        value = getattr(s, "value", None) if isinstance(s, syntax.Assign) else None
        if self.op_of(value) == "assigned" and value.args and isinstance(value.args[0], syntax.Name) \
                and len(s.targets) == 1 and isinstance(s.targets[0], syntax.Name) and s.targets[0].id == value.args[0].id:
            return value.args[0].id
        return None

    def stmt(self, s, scope, pending, deleting=False):
        value = getattr(s, "value", None) if isinstance(s, (syntax.Assign, syntax.Expr)) else None
        op = self.op_of(value)
        if op == "cond":
            return self.cond(s, value, scope, pending)
        if op in ("while_loop", "for_range", "for_iter"):
            with self.crooked_code():
                return getattr(self, op)(s, value, scope, pending)
        if isinstance(s, (syntax.If, syntax.While, syntax.For, syntax.With, syntax.Try)):
            with self.crooked_code():
                return self.python_stmt(s, scope, pending, deleting)
        return self.python_stmt(s, scope, pending, deleting)

    @contextlib.contextmanager
    def crooked_code(self):
        """Lowers code that may run other than once where the function's own statements reach
        it (see ``self.crooked``)."""
        self.crooked += 1
        try:
            yield
        finally:
            self.crooked -= 1

    def python_stmt(self, s, scope, pending, deleting=False):
        value = getattr(s, "value", None) if isinstance(s, (syntax.Assign, syntax.Expr)) else None
        op = self.op_of(value)
        if op == "undefined" and isinstance(s, syntax.Assign):
            name = s.targets[0].id
            bound = scope.bound(name) and not scope.get(name).undefined
            scope.set(name, UNDEFINED)
            # `del y` in code the output runs as Python: unbind it. Right after the read that
            # checks `y` is bound (the front end's `del y`), whatever this analysis knows of `y`
            # here: in a Python loop it may be bound on one iteration and not on the next
            # (fuzzer seed 4644: a second `del r` must raise UnboundLocalError).
            if (bound or deleting) and not self.staged:
                return [syntax.copy_location(syntax.Delete(targets=[syntax.name(name, "del")]), s)]
            return []
        if op == "append" and isinstance(s, syntax.Assign):  # in Python code (staged loops collect theirs)
            lst, item = value.args
            if scope.get(lst.id).stacked:
                raise self.refuse("standalone-stacked-use", s, what=f"'{lst.id}'", name=lst.id)
            item, ival = self.expr(item, scope)
            new = syntax.expr_stmt(syntax.call(syntax.attribute(lst, "append"), [item]))
            scope.set(lst.id, Val(traced=scope.get(lst.id).traced or ival.traced, container=True))
            return [syntax.copy_location(new, s)]
        if op == "asserting" and isinstance(s, syntax.Expr):
            return [syntax.copy_location(self.asserting(value, scope), s)]
        if op == "caught" and isinstance(s, syntax.Assign):
            # `caught = ops.caught(E, H)`: a `raise E` its own `try` catches (passes.caught_raises).
            # In code the output runs as Python it is that `raise` (the kept `try` catches it,
            # and the flag stays False); staged, the runtime's jump to the handler has no
            # --standalone form yet.
            if self.staged and not self.dead:
                raise self.refuse("standalone-op", s, call=f"{self.ops}.caught (a `raise` in a staged body that its `try` catches)")
            exc, _ = self.expr(value.args[0], scope)
            return [syntax.copy_location(syntax.Raise(exc=exc, cause=None), s)]
        if isinstance(s, syntax.Raise) and self.op_of(s.exc) == "raising":
            if self.staged and not self.dead:  # the runtime raises when the program runs, if the branch is taken
                raise self.refuse("standalone-op", s, call=f"{self.ops}.raising (a `raise` in a staged body)")
            s.exc, _ = self.expr(s.exc.args[0], scope)
            if s.cause is not None:
                s.cause, _ = self.expr(s.cause, scope)
            return [s]
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
                if isinstance(t, syntax.Name) and isinstance(s.value, syntax.Lambda):
                    self.functions[t.id] = s.value
            return [s]
        if isinstance(s, syntax.AnnAssign):
            if s.value is not None:
                s.value, val = self.expr(s.value, scope)
                self.bind(s.target, val, scope)
            return [s]
        if isinstance(s, syntax.AugAssign):
            s.value, val = self.expr(s.value, scope)
            if isinstance(s.target, syntax.Name):
                _, old = self.expr(syntax.deepcopy(s.target), scope)
                scope.set(s.target.id, binop(old, val, s.op))
            else:
                self.target_parts(s.target, scope)
            return [s]
        if isinstance(s, (syntax.Expr, syntax.Return)):
            if s.value is not None:
                s.value, _ = self.expr(s.value, scope)
            return [s]
        if isinstance(s, syntax.If):
            s.test, _ = self.expr(s.test, scope, truth=True)
            # Runs as Python does, when Python does -- within code staged where Python may not
            # run it, that holds still (`self.failing` stays), except on a side that never runs.
            # After it, a name one side binds may be unbound (the other side ran): the scope
            # joins both sides (fuzzer seed 8259: `if len(range(n)) > 0: i2 = range(n)[-1]`
            # left `i2` taken as bound, and a later operand of a traced `or`, which Python
            # does not evaluate, read it unbound).
            known = folded(s.test)
            t_scope, f_scope = scope.copy(), scope.copy()
            with self.dead_if(known is False):
                s.body = self.block(s.body, t_scope, branch=True)
            with self.dead_if(known is True):
                s.orelse = self.block(s.orelse, f_scope, branch=True)
            ran = t_scope if known is True else f_scope if known is False else None
            if ran is not None:
                scope.values.update(ran.values)
            else:
                scope.merge(t_scope, f_scope)
            return [s]
        if isinstance(s, (syntax.While, syntax.For)):
            # A Python loop may run its body no time, and its `else` not at all (a `break`):
            # after it, what they bind may be unbound.
            if isinstance(s, syntax.While):
                s.test, _ = self.expr(s.test, scope, truth=True)
            else:
                s.iter, val = self.expr(s.iter, scope)
            body = scope.copy()
            if isinstance(s, syntax.For):
                self.bind(s.target, item_of(val), body)
            s.body = self.block(s.body, body)
            after = scope.copy()
            after.merge(scope.copy(), body)
            orelse = after.copy()
            s.orelse = self.block(s.orelse, orelse)
            scope.merge(after, orelse)
            return [s]
        if isinstance(s, syntax.With):
            for item in s.items:
                item.context_expr, val = self.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, val, scope)
            s.body = self.block(s.body, scope)
            return [s]
        if isinstance(s, syntax.Try):
            # The body may stop at any statement, and a handler runs only on an exception:
            # a handler starts from what was bound before the body or after it, and after
            # the `try` a name the body, the `else` or a handler binds may be unbound
            # (fuzzer seed 7374: the return value given a zero in a handler that did not
            # run was read after the `try`). The `finally` runs on every path.
            done = scope.copy()
            s.body = self.block(s.body, done)
            started = scope.copy()
            started.merge(scope.copy(), done)
            s.orelse = self.block(s.orelse, done)
            for handler in s.handlers:
                caught = started.copy()
                handler.body = self.block(handler.body, caught)
                joined = done.copy()
                joined.merge(done.copy(), caught)
                done = joined
            scope.values.update(done.values)
            s.finalbody = self.block(s.finalbody, scope)
            return [s]
        if isinstance(s, syntax.Delete) and self.staged:
            self.staged_delete(s, scope)
        self.generic(s, scope)
        return [s]

    def staged_delete(self, s, scope):
        """``del name`` left as it is in a staged body (the front end keeps a ``del`` of a
        variable a closure reads): the body's function neither carries nor assigns ``name``,
        so the ``del`` raises UnboundLocalError while it is traced (fuzzer seed 2069), where
        Python deletes the function's variable -- and only when it runs that code."""
        for t in s.targets:
            if not isinstance(t, syntax.Name) or t.id in scope.values or self.dead:
                continue
            error = f"UnboundLocalError: cannot access local variable '{t.id}' where it is not associated with a value"
            if self.failing is not None:
                raise self.fails_while_staged(s, error)
            raise self.refuse("standalone-op", s, runtime_can=False,
                              call=f"del {t.id} (in a staged body, which would raise {error} while traced)")

    def asserting(self, call, scope):
        """``assert test, message`` from ``ops.asserting(test, lambda: message)``: with a
        Python test; with a traced one among the function's own statements and a constant
        message, ``with raise_if(...):`` (see ``checks_when_run``); elsewhere only the runtime
        checks a traced one when the program runs."""
        test, tval = self.expr(call.args[0], scope, truth=True)
        message = call.args[1].body if len(call.args) > 1 else None
        if tval.traced and not self.dead and self.checks_when_run() and (message is None or isinstance(message, syntax.Constant)):
            error = syntax.call("AssertionError", [message] if message is not None else [])
            return self.raise_if(self.jnp("logical_not", [test]), error, call)
        if tval.traced and not self.dead:
            raise self.refuse("standalone-op", call, call=f"{self.ops}.asserting (an `assert` of a traced value)")
        if self.failing is not None:  # the runtime checks it when the program runs that code (seed 237)
            raise self.refuse("standalone-op", call, call=f"{self.ops}.asserting (an `assert` in code staged where "
                                                          "Python may not run it)")
        message = self.expr(call.args[1].body, scope)[0] if len(call.args) > 1 else None
        return syntax.Assert(test=test, msg=message)

    # ------------------------------------------------------------------ checks when run
    def checks_when_run(self) -> bool:
        """Can a ``raise`` / ``assert`` under a traced condition here be checked when the
        program runs (``helpers.RAISE_IF``)? Among the function's own statements only: there
        the rest of the function is the ``with`` block, and Python runs them (in a staged
        body the check would have to count only where the body runs, as the runtime's do)."""
        return self.depth == 1 and not self.staged and self.failing is None and not self.dead and not self.called_here()

    def called_here(self) -> bool:
        """Is the function named elsewhere in its file? A caller may call it in a staged
        branch, which ``jax.vmap`` runs for every lane (a select): a check there would fail
        for lanes that never call it, where the runtime's count only where the branch runs."""
        name = self.fn.name
        return any((isinstance(n, syntax.Name) and n.id == name or isinstance(n, syntax.Attribute) and n.attr == name)
                   and not (n is self.fn) for n in syntax.walk(self.module.tree))

    def raised_on_one_side(self, t_def, f_def, s, operands):
        """``(error, on_true)`` for a staged ``if`` whose one side is ``raise E(constants)``
        of a builtin exception E, outside any ``try`` with handlers, and whose other side is
        empty; else None."""
        if not isinstance(s, syntax.Expr) or operands:
            return None
        for raising, other, on_true in ((t_def, f_def, True), (f_def, t_def, False)):
            if any(not isinstance(x, syntax.Pass) for x in other.body) or len(raising.body) != 1:
                continue
            r = raising.body[0]
            if not (isinstance(r, syntax.Raise) and r.cause is None and self.op_of(r.exc) == "raising"
                    and not r.exc.keywords and len(r.exc.args) == 1):
                continue
            error = r.exc.args[0]
            if not (isinstance(error, syntax.Call) and isinstance(error.func, syntax.Name) and not error.keywords
                    and all(isinstance(a, syntax.Constant) for a in error.args)):
                continue
            kind = self.ctx.resolve(error.func.id)
            if isinstance(kind, type) and issubclass(kind, Exception) and getattr(builtins, kind.__name__, None) is kind:
                return error, on_true
        return None

    def raise_if(self, pred, error, call, where=None):
        """``with raise_if(pred, lambda: error, 'file:line'):``, its block the statements
        after it (``with_checks``)."""
        where = where or f"{self.ctx.filename}:{getattr(call, 'lineno', 0)}"
        check = syntax.call(self.helper(helpers.RAISE_IF), [pred, syntax.lambda_(error), syntax.constant(where)])
        new = syntax.With(items=[syntax.withitem(context_expr=check, optional_vars=None)], body=[], type_comment=None)
        setattr(new, CHECK, True)
        return syntax.copy_location(new, call)

    def checked_read(self, e, scope, truth):
        """``ops.assigned(q)``, a read of ``q``, which a staged ``if`` assigns on one side only
        (``one_sided``): where the read is among the function's own statements and comes
        first in its statement (``evaluated_first``), the statement and the rest of the
        function run in ``with raise_if(jnp.logical_not(q_bound), lambda: UnboundLocalError(...)):``,
        which raises what the runtime raises where Python raises (a Python flag decides now;
        a traced one is checked when the program runs, see ``helpers.RAISE_IF``); from there
        on ``q`` is bound. Elsewhere the check would count where that code does not run, or
        after what Python does first: refused (``standalone-unbound-read``)."""
        name = e.args[0].id
        val = scope.get(name)
        if val.flag is not None and val.flag[0] == name and val.flag[1] == CHECKED:
            return self.expr(e.args[0], scope, truth)
        harmless = self.harmless_load
        if not (val.flag is not None and val.flag[0] == name and self.checks_when_run() and self.current is not None
                and evaluated_first(self.current, e, harmless)):
            raise self.refuse("standalone-unbound-read", e, **self.flagged[name])
        at = next((kw.value.value for kw in e.keywords if kw.arg == "at" and isinstance(kw.value, syntax.Constant)), None)
        at = at or f"{self.ctx.filename}:{getattr(e, 'lineno', 0)}"
        filename, _, line = at.rpartition(":")
        message = str(errors.make("unbound-after-loop", name=name, where=f"{sites.display_filename(filename)}:{line}"))
        error = syntax.call("UnboundLocalError", [syntax.constant(message)])
        self.checks.append(self.raise_if(self.jnp("logical_not", [syntax.name(val.flag[1])]), error, e, where=at))
        scope.set(name, replace(val, flag=(name, CHECKED)))
        return self.expr(e.args[0], scope, truth)

    def harmless_load(self, node) -> bool:
        """An attribute of a module (``jnp.abs``) or an expression of number literals that
        Python evaluates without error (``0.25 or 2.0``): no error, no effect."""
        if isinstance(node, (syntax.UnaryOp, syntax.BinOp, syntax.BoolOp, syntax.Compare, syntax.IfExp)):
            return literal_value(node) is not NOT_LITERAL
        while isinstance(node, syntax.Attribute):
            node = node.value
        if not isinstance(node, syntax.Name):
            return False
        return node.id == self.ops or type(self.ctx.resolve(node.id)).__name__ == "module"

    def user_function(self, s, scope):
        """A nested ``def`` of the user's: its parameters are traced."""
        values = {p: TRACED for p in syntax.param_names(s.args)}
        self.definitions[id(s)] = (syntax.deepcopy(s.body), flat(scope))
        with self.staging(None), self.crooked_code():  # runs when it is called
            s.body = self.block(s.body, scope.child(values))
        scope.set(s.name, STATIC)
        self.functions[s.name] = s

    def bind(self, target, val, scope):
        if isinstance(target, syntax.Name):
            self.functions.pop(target.id, None)  # (`stmt` notes a lambda again)
            scope.set(target.id, val if target.id in self.generated else without_items(val))
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
        if val.stacked:
            raise self.refuse("standalone-stacked-use", s, what=f"'{root}'", name=root)
        if val.traced and not val.container:
            s.value, _ = self.at_expr(chain, scope)
            return [s]
        container, index, method, value = restore_target(chain, self.ops)
        container, _ = self.expr(container, scope)
        index, ival = self.expr(index, scope)
        value, vval = self.expr(value, scope)
        if ival.traced and val.container and not isinstance(index, syntax.Slice):
            # `xs[i] = v`, `grid[i][j] = v` of a Python list with the loop index: as a read is
            self.needs_concrete(s, "uses a traced value as a dict key or set item (e.g. looks up a Python dict "
                                   "with the loop index)" if val.ctype == "dict" else "uses a traced value as a "
                                   "Python int (e.g. indexes a Python list with the loop index)")
        if (vval.traced or ival.traced) and not val.traced:  # a traced item: reads of the container's items are traced
            scope.set(root, replace(val, traced=True, elts=None))
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
        return syntax.call(syntax.attribute(at, "set"), [value]), Val(traced=True, kind=cval.kind, ndim=cval.ndim)

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
        site = self.site(call, "if")
        t_def, f_def = pending.pop(t_ref.id), pending.pop(f_ref.id)
        targets = s.targets[0] if isinstance(s, syntax.Assign) else None
        out_names = assigned_names(targets)
        test, tval = self.expr(test, scope, truth=True)
        moves = self.moves(t_def, f_def, out_names, operands, scope)
        # A select does not check that the condition is one value, as Python and lax.cond do:
        # branches are selected only under a condition known to be one. Arithmetic under a
        # select only outside another staged `if`'s branch, as the runtime decides.
        cheap_ok = not (self.failing and self.failing[0] == "branch-fails")
        form = plan.if_form(tval.traced, only_moves=moves is not None and tval.ndim == 0
                            and all(plan.select_safe(ops, False, cheap_ok) for ops in moves[1]))
        moves = moves and moves[0]
        if form == plan.PYTHON:
            t_scope, f_scope = scope.copy(), scope.copy()
            # Runs as Python does, when Python does (within staged code, `self.failing` stays).
            known = folded(test)
            with self.dead_if(known is False), self.crooked_code():
                body = self.block(without_cells(without_return(t_def.body), syntax.param_names(t_def.args), operands),
                                  t_scope, branch=True)
            with self.dead_if(known is True), self.crooked_code():
                orelse = self.block(without_cells(without_return(f_def.body), syntax.param_names(f_def.args), operands),
                                    f_scope, branch=True)
            scope.merge(t_scope, f_scope)
            return [python_if(test, body, orelse, t_def)]
        raised = self.raised_on_one_side(t_def, f_def, s, operands)
        if raised is not None and self.checks_when_run():
            error, on_true = raised
            return [self.raise_if(test if on_true else self.jnp("logical_not", [test]), error, call)]
        if self.final:
            self.check_branch_appends(t_def, f_def, out_names, site)
        if form == plan.SELECT:
            return self.select(s, test, moves, out_names, scope)
        # Found on the branches as written, raised after lowering them: where a branch fails
        # while staged, that is the error the runtime gives (it traces both, then compares).
        length_refusal = self.branch_length_refusal(t_def, f_def, out_names, scope, site, s) if self.final else None
        params = [o.id for o in operands]
        # (An empty list enters a branch as it is, an empty pytree: still known to be empty there.)
        inputs = {p: scope.get(p) if scope.get(p).undefined or scope.get(p).empty else carried(scope.get(p))
                  for p in params}
        # Operands arrive traced, under the branch function's parameter names (``xs_1`` where a
        # closure captures ``xs``: the body hands it to ``xs``, see ``without_cells``).
        t_scope = scope.child({fp: inputs[p] for fp, p in zip(syntax.param_names(t_def.args), params)})
        f_scope = scope.child({fp: inputs[p] for fp, p in zip(syntax.param_names(f_def.args), params)})
        with self.staging(("branch-fails", {"side": "if", **self.about(site)})):
            t_def.body = self.staged_block(t_def.body, t_scope, self.about(site), branch=True)
        with self.staging(("branch-fails", {"side": "else", **self.about(site)})):
            f_def.body = self.staged_block(f_def.body, f_scope, self.about(site), branch=True)
        if length_refusal is not None:
            raise length_refusal
        self.no_functions_carried(params + list(out_names), s, call)
        t_vals = [t_scope.get(n) for n in out_names]
        f_vals = [f_scope.get(n) for n in out_names]
        self.no_strings_carried(list(out_names) * 2, t_vals + f_vals, s, call)
        prelude, flagged = self.one_sided(site, out_names, t_vals, f_vals, s, (t_def, f_def)) if self.final else ([], [])
        for n, a, b in zip(out_names, t_vals, f_vals):
            differ = structures_differ(a, b)
            if differ is None:
                # Not known to be one structure: the runtime compares them when it traces.
                unknown = structures_unknown(a, b)
                if unknown is not None and self.final:
                    raise self.refuse("if-structure", s, runtime_can=False, first=unknown[0], second=unknown[1],
                                      **self.about(site, n))
            elif self.final:
                code = "if-list-append" if a.ctype == b.ctype == "list" else "if-structure"
                raise self.refuse(code, s, runtime_can=False, first=differ[0], second=differ[1],
                                  **self.about(site, n))
        given = {stmt.targets[0].id for stmt in prelude}
        unbound = {p for p in params if scope.get(p) == UNDEFINED and p not in given}
        if unbound:  # both branches assign it before reading it: not an operand
            operands = [o for o in operands if o.id not in unbound]
            for fn_def in (t_def, f_def):
                fn_def.args.args = [a for a in fn_def.args.args if a.id not in unbound]
        for n, val in zip(out_names, self.unify_returns(t_def, f_def, out_names, t_vals, f_vals)):
            scope.set(n, val)
        if flagged:
            targets = self.flag_outputs(t_def, f_def, targets, out_names, flagged, s)
            for n, flag in zip([n for n in flagged if n.flag], assigned_names(targets)[len(out_names):]):
                scope.set(n.name, replace(scope.get(n.name), flag=(n.name, flag)))
        callee = self.cond_callee(t_vals, f_vals)
        test = self.predicate(test, tval, site.where)
        new = syntax.call(callee, [test, syntax.name(t_def.name), syntax.name(f_def.name)] + operands)
        stmt = syntax.assign(targets, new) if targets is not None else syntax.expr_stmt(new)
        return prelude + [t_def, f_def, syntax.copy_location(stmt, s)]

    def no_functions_carried(self, names, where, call):
        """Refuses a staged ``if`` or loop that carries a local function (a branch assigns or
        deletes it): lax takes arrays only (JAX's "not a valid JAX type", fuzzer seed 1603);
        the runtime refuses such an ``if`` too unless both sides keep the same function."""
        for n in names:
            if n in self.functions and self.final:
                raise self.refuse("standalone-op", where, runtime_can=False,
                                  call=f"{self.ops}.{call.func.attr}(...) carrying the function '{n}' (jax.lax "
                                       "carries arrays only)")

    def no_strings_carried(self, names, vals, where, call):
        """Refuses a staged ``if`` or loop that gives a variable a string: lax takes arrays
        only (JAX's "not a valid JAX type" when the program is traced); the runtime keeps a
        string both sides give equal, and refuses different ones (StateMismatchError)."""
        for n, v in zip(names, vals):
            if v.text and self.final:
                raise self.refuse("standalone-op", where, call=f"{self.ops}.{call.func.attr}(...) carrying the "
                                                              f"string '{n}' (jax.lax carries arrays only)")

    def moves(self, t_def, f_def, out_names, operands, scope):
        """If both branches only assign names (``flag = True``, ``y = x``, ``total += x * x``):
        for each output, the (true, false) expressions it ends up with (a name a branch
        assigned, read later in it, stands for the expression it was given), and per branch
        what its statements trace to (``primitives.traced_to``: ``plan.select_safe`` decides
        with it). Else None."""
        pairs, work = [], []
        for fn_def in (t_def, f_def):
            params = syntax.param_names(fn_def.args)
            env = {p: syntax.name(o.id) for p, o in zip(params, operands)}
            known = {p: self.number_facts(o.id, scope) for p, o in zip(params, operands)}
            facts = lambda n: known[n] if n in known else self.number_facts(n, scope)  # noqa: E731
            ops = []
            for stmt in without_return(fn_def.body):
                if isinstance(stmt, syntax.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], syntax.Name):
                    value = stmt.value
                elif isinstance(stmt, syntax.AugAssign) and isinstance(stmt.target, syntax.Name):
                    value = syntax.BinOp(left=syntax.name(stmt.target.id), op=stmt.op, right=stmt.value)
                else:
                    return None  # does something else than assign a name
                target = stmt.targets[0].id if isinstance(stmt, syntax.Assign) else stmt.target.id
                callee = lambda func: self.callee_name(func, scope)  # noqa: E731
                ops += primitives.traced_to(value, facts, self.ops, callee)
                if not plan.select_safe(ops, False):
                    return None  # no select: nothing to write out
                known[target] = primitives.result(value, facts, self.ops, callee)
                env[target] = substituted(value, env)
                if sum(1 for _ in syntax.walk(env[target])) > 40:
                    return None  # too complicated to write out
            pairs.append([env.get(n) for n in out_names])
            work.append(ops)
        out = list(zip(*pairs))
        for v in (v for pair in out for v in pair):
            val = None if v is None else scope.get(v.id) if isinstance(v, syntax.Name) else self.expr(syntax.deepcopy(v), scope)[1]
            if val is None or val.undefined or not val.is_number or val.stacked:
                return None
        return out, work

    def select(self, s, test, moves, out_names, scope):
        """``a, b = jnp.where(test, a1, a0), jnp.where(test, b1, b0)``: both branches only move
        values or do a little scalar arithmetic (``total = jnp.where(test, total + x * x,
        total)``), so both are evaluated (``plan.SELECT``)."""
        prelude = []
        selects = sum(syntax.dump(t) != syntax.dump(f) for t, f in moves)
        if selects > 1 and not rereadable(test, set(out_names)):  # evaluate the condition once
            pred = self.new_name("pred")
            prelude.append(syntax.copy_location(syntax.assign(syntax.name(pred, "store"), test), s))
            test = syntax.name(pred)
        targets, values, known = [], [], []
        # Each side is lowered with what is known before the `if` (the outputs are assigned at once).
        sides = [[(v, scope.get(v.id)) if isinstance(v, syntax.Name) else self.expr(v, scope) for v in pair]
                 for pair in moves]
        for name, lowered in zip(out_names, sides):
            (t, f), vals = zip(*lowered)
            if syntax.dump(t) == syntax.dump(f):
                value, val = t, vals[0]
            else:
                value, val = self.jnp("where", [syntax.deepcopy(test), t, f]), staged_output(*vals)
                kind = strong_kind(*vals)
                if kind is not None:
                    value = self.jnp("asarray", [value], {"dtype": syntax.name(kind)})
            known.append((name, val))
            if not (isinstance(value, syntax.Name) and value.id == name):
                targets.append(syntax.name(name, "store"))
                values.append(value)
        for name, val in known:
            scope.set(name, val)
        if not targets:
            return prelude
        if len(targets) == 1:
            stmt = syntax.assign(targets[0], values[0])
        else:
            stmt = syntax.assign(syntax.Tuple(elts=targets, ctx=syntax.Store()), syntax.Tuple(elts=values, ctx=syntax.Load()))
        return prelude + [syntax.copy_location(stmt, s)]

    def one_sided(self, site, names, t_vals, f_vals, s, defs):
        """Outputs a branch may leave unbound. Where Python binds them before every read (the
        unbound side left by a jump: a return value, ...), a value of the other side's type
        before the ``if``. Else, as the runtime does (it carries a ``MaybeBound``), a flag:
        the ``if`` also gives whether the branch it ran bound the variable, and a read of it
        checks the flag when the program runs (``checked_read``); the side that does not
        bind it gives zeros of the other side's type (``flag_outputs``). Returns the
        statements before the ``if`` and the ``Flagged`` outputs.

        A flag is sound only where the ``if`` runs once when the function's own statements
        reach it -- among them or in branches of staged ``if``s among them, not in a loop,
        a Python ``if`` (whose other side leaves the flag unset), a ``try`` or a nested
        function -- and where what this analysis knows of the branches is sure (``unsure``);
        elsewhere this refuses it as before (``if-one-sided``, the runtime's words)."""
        prelude, flagged = [], []
        for n, a, b in zip(names, t_vals, f_vals):
            jumped = n in site.always_bound or n in self.ctx.pending
            unsure = self.unsure(defs, n)
            if not jumped and n not in self.generated and self._flag_of(a) != self._flag_of(b) \
                    and not (a.undefined and a != UNDEFINED or b.undefined and b != UNDEFINED):
                if UNDEFINED in (a, b):  # one side never assigns it
                    side, other = ("`if`", "`else`") if b.undefined else ("`else`", "`if`")
                    refusal = dict(side=side, other=other, **self.about(site, n))
                    if self.crooked or unsure:
                        raise self.refuse("if-one-sided", s, **refusal)
                    self.flagged.setdefault(n, refusal)
                    given = b if a == UNDEFINED else a
                    if not self.zero_typed(given):
                        raise self.refuse("if-one-sided", s, **refusal)
                    flagged.append(Flagged(n, self._flag_of(a), self._flag_of(b), given))
                elif not self.crooked and not unsure:  # bound on both sides, on one side by its flag only
                    flagged.append(Flagged(n, self._flag_of(a), self._flag_of(b), None))
                continue  # (in crooked code the output loses the flag: a read is refused)
            if not (a.undefined or b.undefined):
                continue
            known = UNDEFINED in (a, b) and not (a.undefined and b.undefined)  # one side never assigns it
            if not jumped and known:
                side, other = ("`if`", "`else`") if b.undefined else ("`else`", "`if`")
                raise self.refuse("if-one-sided", s, side=side, other=other, **self.about(site, n))
            if not known:  # unbound on some paths only, which the runtime tells apart when it runs
                raise self.refuse("standalone-one-sided", s, **self.about(site, n))
            given = b if a.undefined else a
            if (self.zero(given) is None and self.zero_typed(given) and a.undefined != b.undefined and not unsure
                    and not self.crooked):
                # A type --standalone does not know: the jumping side gives zeros of the other's.
                # Not where the `if` may not run when the function's statements reach it (a
                # `try` handler, a Python `if`, a loop: fuzzer seed 2464): the value read after
                # the jump's `cond` would be unbound on the path that skips it.
                flagged.append(Flagged(n, a != UNDEFINED, b != UNDEFINED, given, flag=False))
                continue
            prelude += self.initial_value(n, given, s, "standalone-one-sided", site)
        shaped = [any(n.given is not None and n.bound[side] is False and self.python_zero(n.given) is None
                      for n in flagged) for side in (0, 1)]
        if all(shaped):  # each side would trace the other to find its types, without end
            n = next(n for n in flagged if n.given is not None)
            code, fields = ("if-one-sided", self.flagged[n.name]) if n.flag else \
                ("standalone-one-sided", self.about(site, n.name))
            raise self.refuse(code, s, **fields)
        return prelude, flagged

    @staticmethod
    def unsure(defs, name) -> bool:
        """Do the branch functions ``defs`` hold code after which this analysis may take
        ``name`` to be bound where Python may not have bound it -- a ``try`` (an exception
        skips the rest of its body), a Python loop (it may run no iteration), a ``with`` --
        or hand ``name`` to a closure (``nonlocal name``)? A flag there could say True for
        an unbound variable, and the variable, no longer an operand, be unbound in the
        output; the old form (a value given before the ``if``) is kept or refused."""
        kinds = (syntax.Try, syntax.For, syntax.While, syntax.With)
        return any(isinstance(node, kinds) or isinstance(node, syntax.Nonlocal) and name in node.names
                   for fn_def in defs for node in syntax.walk(fn_def))

    @staticmethod
    def _flag_of(val):
        """What the output knows of whether Python bound a variable of Val ``val``: False
        (unbound), True (bound), or the name of its flag."""
        if val == UNDEFINED:
            return False
        if val.flag is not None and val.flag[1] != CHECKED:
            return val.flag[1]
        return True

    def zero_typed(self, val) -> bool:
        """Can the branch that leaves a variable unbound give zeros of ``val``'s type (an
        array, a number, None or a container of them; not a string or a function)?"""
        if val.container:
            return val.elts is not None and all(self.zero_typed(v) for v in val.elts) or val.traced and val.ctype != "dict"
        return val.traced or val.kind in NUMERIC or val.none

    def flag_outputs(self, t_def, f_def, targets, names, flagged, where):
        """Each branch of the staged ``if`` also returns, for each ``Flagged`` output, whether
        it bound the variable (``True``, ``False`` or a flag it got from an ``if`` inside);
        the side that leaves one unbound gives zeros of the other side's type: a Python
        zero where that is a Python number (weakly typed, as the other side's value), else
        from ``jax.eval_shape`` of the other branch, called at its start with the branch's
        operands (the other branch is traced once more; nothing it does while traced runs
        twice that the output would show -- a staged body has no such effects). Returns the
        ``if``'s targets with the flags' names added::

            def if_true(a):                          def if_false(a):
                q = a * 2.0                              q = 0.0
                return (a, q, True)                      return (a, q, False)

            a, q, q_bound = jax.lax.cond(a > 0, if_true, if_false, a)
        """
        flags = [syntax.name(self.new_name(f"{n.name}_bound"), "store") for n in flagged if n.flag]
        for fn_def, other, side in ((t_def, f_def, 0), (f_def, t_def, 1)):
            ret = fn_def.body[-1] if fn_def.body else None
            if not isinstance(ret, syntax.Return) or ret.value is None or (
                    len(names) > 1 and not (isinstance(ret.value, syntax.Tuple) and len(ret.value.elts) == len(names))):
                raise self.refuse("standalone-op", where, call=f"{self.ops}.cond(...) whose branch does not return its outputs")
            values = list(ret.value.elts) if len(names) > 1 else [ret.value]
            zeros, types = [], None
            for n in flagged:
                if n.given is None or n.bound[side] is not False:
                    continue
                zero = self.python_zero(n.given)
                if zero is None:
                    if types is None:
                        types = self.new_name(f"{other.name}_types")
                        params = [syntax.name(p) for p in syntax.param_names(fn_def.args)]
                        shapes = syntax.call(self.ref("jax.eval_shape"), [syntax.name(other.name)] + params)
                        fn_def.body.insert(0, syntax.copy_location(syntax.assign(syntax.name(types, "store"), shapes), ret))
                    item = syntax.Subscript(value=syntax.name(types), slice=syntax.constant(names.index(n.name)),
                                            ctx=syntax.Load())
                    zero = syntax.call(self.ref("jax.tree.map"), [self.ref("jax.numpy.zeros_like"), item])
                zeros.append(syntax.copy_location(syntax.assign(syntax.name(n.name, "store"), zero), ret))
            flag_values = [syntax.name(b) if isinstance(b, str) else syntax.constant(b)
                           for b in (n.bound[side] for n in flagged if n.flag)]
            ret.value = syntax.Tuple(elts=values + flag_values, ctx=syntax.Load())
            fn_def.body[-1:-1] = zeros
        outputs = [targets] if isinstance(targets, syntax.Name) else list(targets.elts)
        return syntax.Tuple(elts=outputs + flags, ctx=syntax.Store())

    def python_zero(self, val):
        """A Python zero of ``val``'s kind where ``val`` is a Python number or weakly typed, else None."""
        if val.container or val.undefined or val.kind not in NUMERIC or not val.is_weak:
            return None
        return syntax.constant({"bool": False, "int": 0, "float": 0.0, "complex": 0j}[val.kind])

    def initial_value(self, name, val, where, code, site):
        """``name = 0.0``: a first value for a variable the staged code carries before Python
        binds it, of the type it will have (the runtime starts from zeros of the type the
        body gives it); ``code`` if the type is not known."""
        zero = self.zero(val)
        if zero is None:
            raise self.refuse(code, where, **self.about(site, name))
        return [syntax.copy_location(syntax.assign(syntax.name(name, "store"), zero), where)]

    def zero(self, val):
        """A zero of ``val``'s type (a tuple of them), or None if its type is not known."""
        if val.container:
            parts = [self.zero(v) for v in val.elts] if val.elts is not None else [None]
            return None if None in parts else syntax.Tuple(elts=parts, ctx=syntax.Load())
        if val.kind not in NUMERIC:
            return None
        zero = syntax.constant({"bool": False, "int": 0, "float": 0.0, "complex": 0j}[val.kind])
        if val.is_weak:
            return zero
        if val.ndim == 0:  # an array of the kind's default dtype (float32 for a float)
            return self.jnp("zeros", [syntax.Tuple(elts=[], ctx=syntax.Load())], {"dtype": syntax.name(val.kind)})
        return None

    def unify_returns(self, t_def, f_def, names, t_vals, f_vals):
        """The Vals of a staged ``if``'s outputs. ``lax.cond`` needs both branches to return
        equal types: where they may differ (``cond_callee``), the file calls
        ``promoting_cond``, which gives each output the dtype both sides promote to when the
        program is traced (a Python number beside a float32 array becomes float32, as in
        ``autolax.jit``; a default dtype written here would be float64 under x64)."""
        return [staged_output(a, b, *casts(a, b)) for a, b in zip(t_vals, f_vals)]

    def cond_callee(self, t_vals, f_vals):
        """``jax.lax.cond``, or ``promoting_cond`` where the branches' output dtypes may differ."""
        if any(may_differ(a, b) for a, b in zip(t_vals, f_vals)):
            return self.helper(helpers.PROMOTING_COND)
        return self.ref("jax.lax.cond")

    def branch_length_refusal(self, t_def, f_def, out_names, scope, site, s):
        """A container the two branches of a staged ``if`` change in place to two lengths
        (``stack += [z]`` on one side only) is two structures, which ``lax.cond`` rejects:
        the runtime's error where the lengths surely differ, else --standalone's, where
        what the branches do to the length is not known here (the runtime compares the
        lengths when it traces). Returns the refusal (None: one length)."""
        for n in out_names:
            entry = scope.get(n)
            if not entry.container or entry.undefined:
                continue
            t, f = (length_change(fn_def.body, n, self.ops) for fn_def in (t_def, f_def))
            if t == f and t is not None or REBOUND in (t, f) and 0 in (t, f):
                continue  # one length; or a new value on one side, which the Vals compare
            if isinstance(t, int) and isinstance(f, int):
                code = "if-list-append" if entry.ctype == "list" else "if-structure"  # the runtime's
                return self.refuse(code, s, runtime_can=False, first=length_text(t), second=length_text(f),
                                   **self.about(site, n))
            return self.refuse("standalone-length-change", s, **self.about(site, n))
        return None

    def check_branch_appends(self, t_def, f_def, out_names, site):
        counts = []
        for fn_def in (t_def, f_def):
            appended = [n.args[0].id for n in syntax.walk(fn_def) if self.op_of(n) == "append"]
            counts.append(sorted(n for n in appended if n in out_names))
        for name in counts[0] + counts[1]:
            # Appending equally in both branches keeps the list's length independent of data.
            raise self.refuse("standalone-append-in-if", t_def, runtime_can=counts[0] == counts[1],
                              **self.about(site, name))


def insert_after_docstring(body: list, statements: list) -> list:
    """``body`` with ``statements`` first, after its docstring if it has one."""
    first = body[0] if body else None
    doc = isinstance(first, syntax.Expr) and isinstance(first.value, syntax.Constant) and isinstance(first.value.value, str)
    return body[:1] + statements + body[1:] if doc else statements + body
