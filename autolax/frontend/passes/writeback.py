"""Changes a helper makes to its arguments reach the caller (write-back calls).

A helper that writes into a parameter (``analysis/writes.py``) hands the parameter's final
value back with its return value, and a call site that gives it a local name rebinds that
name -- as a loop body hands back what it changed:

    def set0(v, i):                    def set0(v, i):
        v[i] = 0.0             ->          v[i] = 0.0
                                           return ops.hand_back(None, v=v)

    set0(b, 1)                 ->      b, _ = ops.call_writing(('v',), set0, b, 1)
    y = swap(b, 0, p)          ->      b, y = ops.call_writing(('v',), swap, b, 0, p)
    return swap(b, 0, p)       ->      b, returned = ops.call_writing(('v',), swap, b, 0, p)
                                       return returned

(The call's own target comes last: Python binds what the call returns after the call ran,
so ``b = swap(b, 0, p)`` binds its return value.) A fresh value given for the parameter
(``set0(b.copy(), 1)``, ``-f0``) is bound to a throwaway name: Python loses the change too.
A list or tuple display is fresh, but its items are the caller's: where the helper changes
an item in place (``v[0][i] = x``), the display's names are rebound to the items handed back:

    set_in_first([a, b], 1)    ->      [a, b], _ = ops.call_writing(('v',), set_in_first, [a, b], 1)

and a display the helper also replaces items of, or holding other expressions, is refused.

The decision, and why it is made this way:

- The callee's fact (which parameters it writes into) is static: it is read from the
  callee's syntax when the caller is converted, for a callee the caller names and autolax
  can find now -- a function of the module or the closure (its source), a ``def`` of the
  same function, a method called on ``self`` (the class's, by the method's qualified name),
  or, for ``autolax convert``, a function or a method of the same file. So a call of a
  helper that writes nothing is exactly what it was (``ops.call(f, x)``), and a write-back
  call is an assignment the analyses see: in a staged loop or branch the rebound name is
  carried like any other.
- ``ops.hand_back(value, v=v)`` returns ``value`` itself, except when ``ops.call_writing``
  or ``ops.call`` called the function directly: then a ``HandedBack`` (the value and the
  written parameters' final values). Called from Python, by ``jax.jit`` or by a transform
  (``jax.vmap(helper)``) the function returns what it always returned.
- Where the change cannot be followed -- the helper called through ``ops.call`` with no
  rebinding (a method, a function held in a container or a parameter, a call inside a larger
  expression), the argument not a local name (``set0(rows[0], 1)``, a global), the same array
  given for two parameters, a helper that writes into a parameter and then rebinds it
  (``ops.hand_back(value, 'v')`` names it), or the helper not converted where a write-back
  was expected --
  the runtime raises ``ArgumentWriteError`` naming the helper, the parameter and the line
  when the argument is a JAX array (which only a rebinding can update). A NumPy array, list
  or object argument is changed in place, as in Python, and needs nothing.
"""

from __future__ import annotations

import types
import weakref

from autolax.frontend.analysis import writes as writes_analysis
from autolax.frontend.analysis.activity import declared_names, local_names, writes
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.source import SourceUnavailable, function_source
from autolax.runtime.errors import ConversionError
from autolax.runtime.libraries import is_library_callable

# A helper that writes into a parameter, or a call (of one, maybe).
NEEDS = frozenset({"Subscript.Store", "Attribute.Store", "Call", "AugAssign"})

# Before / after (tests/test_pass_examples.py runs them).
EXAMPLES = (
    (
        """\
        def set0(v, i):
            v[i] = 0.0
        """,
        """\
        def set0(v, i):
            v[i] = 0.0
            return ops.hand_back(None, v=v)
        """,
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)

# function -> (positional params, keyword-only params, written params) of its source, or None
_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_DEPTH = 8  # how deep helpers of helpers are followed when finding what a callee writes


class _Facts:
    __slots__ = ("positional", "keyword_only", "written", "has_varargs", "returns", "into_items", "replaces_items")

    def __init__(self, node, written, inner=((), ())):
        args = node.args
        self.positional = [a.id for a in args.posonlyargs] + [a.id for a in args.args]
        self.keyword_only = [a.id for a in args.kwonlyargs]
        self.written = written
        self.has_varargs = args.vararg is not None
        # The written parameters whose items it changes in place (`v[0][1] = x`), and those whose
        # items it replaces (`v[0] = x`), its own or through the helpers it passes them to.
        into, replaced = writes_analysis.item_writes(node, written)
        self.into_items = frozenset(into | set(inner[0]))
        self.replaces_items = frozenset(replaced | set(inner[1]))
        # The written parameter every `return` gives back (`def choleski(a): ...; return a`):
        # the call's result is the caller's argument itself, one object under two names.
        self.returns = _returned_param(node, written)


def _returned_param(node, written):
    returned = {
        stmt.value.id if isinstance(stmt.value, syntax.Name) else None
        for stmt in _own_statements(node)
        if isinstance(stmt, syntax.Return)
    }
    if len(returned) == 1:
        (name,) = returned
        if name in written:
            return name
    return None


def function_facts(fn, depth=0):
    """What a user function object writes into (``_Facts``), from its source; None if its
    source cannot be read or it writes nothing."""
    if depth > _DEPTH:
        return None
    try:
        known = _FACTS.get(fn, False)
    except TypeError:
        return None
    if known is not False:
        return known
    _FACTS[fn] = None  # (a recursive helper: what it writes through itself is not followed)
    try:
        node = function_source(fn).node
    except (SourceUnavailable, OSError, TypeError, SyntaxError):
        return None
    if not isinstance(node, syntax.FunctionDef):
        return None
    closure = {}
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            closure[var] = cell.cell_contents
        except ValueError:
            pass

    def resolve(name):
        if name in closure:
            return closure[name]
        return fn.__globals__.get(name, _MISSING)

    facts = _node_facts(node, resolve, {}, depth + 1, methods_of_owner(fn))
    _FACTS[fn] = facts
    return facts


_MISSING = object()


def methods_of_owner(fn) -> dict:
    """The functions of the class whose method ``fn`` is (found by its qualified name in its
    module, through the class's bases), by name; {} for a function that is no method."""
    parts = fn.__qualname__.split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return {}
    owner = fn.__globals__.get(parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part, None)
    if not isinstance(owner, type):
        return {}
    out = {}
    for klass in reversed(owner.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, types.FunctionType):
                out[name] = value
    return out


def _node_facts(node, resolve, defs, depth, methods=None, lost_too=False):
    """``_Facts`` of a ``def`` (None if it writes nothing), its free names looked up with
    ``resolve`` (and ``defs``: name -> ``def`` node of functions not yet defined)."""
    local = local_names(node)
    nested = _nested_defs(node)
    params = syntax.param_names(node.args)
    receiver = params[0] if params and params[0] == "self" else None
    also = set()
    inner = (set(), set())  # (its names whose items helpers change in place, replace)
    for stmt in _own_statements(node):
        call = _call_of(stmt)
        if call is None:
            continue
        facts = _callee_facts(call.func, local, nested, resolve, defs, depth, receiver, methods)
        if facts is not None:
            for param, arg in _bound_names(call, facts):
                if isinstance(arg, syntax.Name):
                    also.add(arg.id)
                    if param in facts.into_items:
                        inner[0].add(arg.id)
                    if param in facts.replaces_items:
                        inner[1].add(arg.id)
    written, lost = writes_analysis.params_written(node, also)
    if lost_too and lost:
        return _Facts(node, written, inner)
    return _Facts(node, written, inner) if written else None


def writes_into_parameters(node, defs) -> bool:
    """Does the ``def`` ``node`` of a file ``autolax convert`` converts write into a
    parameter (``defs``: the file's module-level functions)?"""
    return _node_facts(node, lambda n: _MISSING, defs, 0, lost_too=True) is not None


def _callee_facts(func, local, nested, resolve, defs, depth, receiver=None, methods=None):
    """``_Facts`` of the function a call's ``func`` names, if known now: a name (a ``def``
    of the function, a function of the closure or the module, or one of ``defs``), or
    ``self.m`` of the method's ``receiver`` (one of ``methods``); None otherwise."""
    if (
        receiver is not None
        and methods
        and isinstance(func, syntax.Attribute)
        and isinstance(func.value, syntax.Name)
        and func.value.id == receiver
        and depth <= _DEPTH
    ):
        method = methods.get(func.attr)
        if isinstance(method, types.FunctionType):
            facts = function_facts(method, depth)
        elif isinstance(method, syntax.FunctionDef):
            facts = _node_facts(method, lambda n: _MISSING, defs, depth + 1)
        else:
            return None
        return _Bound(facts) if facts is not None else None
    if not isinstance(func, syntax.Name):
        return None
    name = func.id
    if name in local:
        found = nested.get(name)
        return _node_facts(found, resolve, defs, depth + 1) if found is not None and depth <= _DEPTH else None
    value = resolve(name)
    if value is _MISSING:
        found = defs.get(name)
        if found is not None and depth <= _DEPTH:
            return _node_facts(found, lambda n: _MISSING, defs, depth + 1)
        return None
    info = getattr(value, "__autolax_jit__", None)  # `%%autolax` binds a cell's functions to these
    if isinstance(getattr(info, "fn", None), types.FunctionType):
        value = info.fn
    if isinstance(value, types.FunctionType) and not _is_library(value):
        return function_facts(value, depth)
    return None


class _Bound:
    """The ``_Facts`` of a method called through its receiver (``self.step(v)``): its first
    parameter is the receiver, not an argument of the call."""

    __slots__ = _Facts.__slots__

    def __init__(self, facts):
        for slot in self.__slots__:
            setattr(self, slot, getattr(facts, slot))
        self.positional = facts.positional[1:]


def _is_library(fn) -> bool:
    return is_library_callable(fn)


def _nested_defs(node) -> dict:
    """``def``s directly in the function's statements (not inside other scopes), by name,
    when the name is bound by that ``def`` alone."""
    out, counts = {}, {}
    for stmt in _own_statements(node):
        if isinstance(stmt, syntax.FunctionDef):
            out[stmt.name] = stmt
        for n in _bound_by(stmt):
            counts[n] = counts.get(n, 0) + 1
    return {n: d for n, d in out.items() if counts.get(n) == 1}


def _bound_by(stmt):
    if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
        return [stmt.name]
    # (the names a compound statement's own header binds: its body is walked on its own)
    if isinstance(stmt, (syntax.For, syntax.AsyncFor)):
        return list(syntax.target_names(stmt.target))
    if isinstance(
        stmt, (syntax.Assign, syntax.AugAssign, syntax.AnnAssign, syntax.Import, syntax.ImportFrom, syntax.Delete)
    ):
        return list(writes(stmt))
    if isinstance(stmt, (syntax.With, syntax.AsyncWith)):
        return [
            n for item in stmt.items if item.optional_vars is not None for n in syntax.target_names(item.optional_vars)
        ]
    return []


def _call_of(stmt):
    """The call a statement consists of: ``f(...)``, ``y = f(...)``, ``return f(...)``."""
    if isinstance(stmt, syntax.Expr) and isinstance(stmt.value, syntax.Call):
        return stmt.value
    if isinstance(stmt, syntax.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, syntax.Call):
        return stmt.value
    if isinstance(stmt, syntax.Return) and isinstance(stmt.value, syntax.Call):
        return stmt.value
    return None


def _bound_names(call, facts):
    """``[(param, argument node)]`` for the written parameters a call gives an argument,
    matched as Python binds them; [] where that is not known statically (``*args``,
    ``**kwargs`` in the call)."""
    if any(isinstance(a, syntax.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return []
    out = []
    for param, arg in zip(facts.positional, call.args):
        if param in facts.written:
            out.append((param, arg))
    for k in call.keywords:
        if k.arg in facts.written:
            out.append((k.arg, k.value))
    return out


# Calls that return a new object (``gauss(a.copy(), b.copy())``, ``np.array(rows)``): a
# helper's writes into it change nothing the caller holds.
_COPYING_FUNCTIONS = frozenset(
    {"np.copy", "numpy.copy", "jnp.copy", "np.array", "numpy.array", "jnp.array", "copy.copy", "copy.deepcopy"}
)
_FRESH_DISPLAYS = (
    syntax.BinOp,
    syntax.UnaryOp,
    syntax.Compare,
    syntax.Constant,
    syntax.List,
    syntax.Tuple,
    syntax.Dict,
    syntax.Set,
    syntax.ListComp,
    syntax.SetComp,
    syntax.DictComp,
    syntax.JoinedStr,
)


_DISPLAYS = (syntax.List, syntax.Tuple, syntax.Set, syntax.Dict, syntax.ListComp, syntax.SetComp, syntax.DictComp)


def _display_error(ctx, call, param):
    lineno = getattr(call, "lineno", None)
    name = syntax.unparse(call.func)
    return ConversionError(
        f"'{name}' changes the items of its parameter '{param}' in place, and this call gives it a "
        "new container holding them: Python changes the caller's arrays through it, which autolax can "
        "follow only for a list or tuple of local variables whose items the helper does not replace",
        filename=ctx.filename,
        lineno=lineno,
        col=getattr(call, "col_offset", None),
        source_line=ctx.source_lines[lineno - 1] if lineno and lineno <= len(ctx.source_lines) else None,
        fix=f"put the container in a local variable first and read the arrays back from it after the call "
        f"(`v = [a, b]; {name}(v, ...); a, b = v`)",
    )


def _fresh(arg) -> bool:
    """Is the argument expression ``arg`` a value made by the call's own expression, which
    no name of the caller holds: an operator's result (``-f0``, ``a + b``), a literal or a
    display, a copy (``a.copy()``, ``np.array(x)``)? A helper's writes into it are lost in
    Python too, so the call site needs no rebinding. (``a or b``, an item ``x[0]`` -- a
    NumPy view -- and other calls may be an object the caller holds: not fresh.)"""
    if isinstance(arg, _FRESH_DISPLAYS):
        return True
    if not isinstance(arg, syntax.Call) or any(isinstance(a, syntax.Starred) for a in arg.args):
        return False
    func = arg.func
    if isinstance(func, syntax.Attribute) and func.attr == "copy" and not arg.args and not arg.keywords:
        return True
    if isinstance(func, syntax.Name):
        return func.id in ("list", "dict", "set") and len(arg.args) <= 1
    return (
        isinstance(func, syntax.Attribute)
        and isinstance(func.value, syntax.Name)
        and f"{func.value.id}.{func.attr}" in _COPYING_FUNCTIONS
    )


class _Function:
    """Rewrites one function (and, on their own, the ``def``s inside it)."""

    def __init__(self, ctx, node, resolve, defs, methods=None, nested=False):
        self.is_nested = nested
        self.methods = methods or {}
        self.ctx = ctx
        self.node = node
        self.resolve = resolve
        self.defs = defs
        self.local = local_names(node)
        self._declared = None
        self.nested = None  # (the function's own `def`s by name: found when a call names a local)
        self.written = self.lost = ()
        self.returning = {}  # id(call statement) -> the parameter its helper returns
        self.unpacked = set()  # id(display argument) whose names the call rebinds to its items
        params = syntax.param_names(node.args)
        self.receiver = params[0] if params and params[0] == "self" else None

    def run(self):
        calls = []
        for stmt in _own_statements(self.node):
            if stmt.__class__ is syntax.FunctionDef:
                outer = self

                def resolve(name, outer=outer):
                    if name in outer.local:
                        return _MISSING
                    return outer.resolve(name)

                _Function(self.ctx, stmt, resolve, self.defs, nested=True).run()
            else:
                call = _call_of(stmt)
                if call is not None and (call.func.__class__ is syntax.Name or self.receiver is not None):
                    calls.append((stmt, call))
        sites = {}
        also = set()
        for stmt, call in calls:
            if self.nested is None and call.func.__class__ is syntax.Name and call.func.id in self.local:
                self.nested = _nested_defs(self.node)
            facts = _callee_facts(
                call.func, self.local, self.nested or {}, self.resolve, self.defs, 0, self.receiver, self.methods
            )
            if facts is None:
                continue
            pairs = [(p, a) for p, a in _bound_names(call, facts) if self._followed(a, p, facts, call)]
            if pairs:
                sites[id(stmt)] = pairs
                if facts.returns is not None:
                    self.returning[id(stmt)] = facts.returns
                also |= {a.id for _, a in pairs if isinstance(a, syntax.Name)}
        self.written, self.lost = writes_analysis.params_written(self.node, also, augmented=not self.is_nested)
        if not (sites or self.written or self.lost):
            return
        self.node.body = self.block(self.node.body, sites)
        if (self.written or self.lost) and not (self.node.body and isinstance(self.node.body[-1], syntax.Return)):
            end = syntax.ret(syntax.constant(None))
            self.node.body.append(
                syntax.copy_location(self._return(end), self.node.body[-1] if self.node.body else self.node)
            )

    def _rebindable(self, arg) -> bool:
        return isinstance(arg, syntax.Name) and arg.id in self.local and arg.id not in self.declared

    def _followed(self, arg, param, facts, call) -> bool:
        """Does the call site hand back what the helper writes into ``param`` through ``arg``:
        a local name (rebound), or a fresh value (bound to a throwaway name)? A display whose
        items the helper changes in place (``h([a, b])`` with ``v[0][1] = x``) changes the
        caller's ``a`` in Python: its names are rebound (``[a, b], _ = ...``), or, where that
        cannot say what Python does, autolax refuses the call."""
        if self._rebindable(arg):
            return True
        if not _fresh(arg):
            return False
        if param not in facts.into_items or not isinstance(arg, _DISPLAYS):
            return True
        items = arg.elts if isinstance(arg, (syntax.List, syntax.Tuple)) else None
        if (
            param in facts.replaces_items
            or items is None
            or not all(self._rebindable(item) or _fresh(item) and not isinstance(item, _DISPLAYS) for item in items)
        ):
            raise _display_error(self.ctx, call, param)
        self.unpacked.add(id(arg))
        return True

    @property
    def declared(self) -> set:
        """Names the function declares ``global`` / ``nonlocal`` (never rebound here)."""
        if self._declared is None:
            globals_, nonlocals = declared_names(self.node.body)
            self._declared = globals_ | nonlocals
        return self._declared

    def block(self, stmts, sites):
        out = []
        for stmt in stmts:
            if isinstance(stmt, _SCOPES):
                out.append(stmt)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, self.block(inner, sites))
            for handler in getattr(stmt, "handlers", None) or ():
                handler.body = self.block(handler.body, sites)
            for case in getattr(stmt, "cases", None) or ():
                case.body = self.block(case.body, sites)
            pairs = sites.get(id(stmt))
            if pairs:
                self.ctx.wrote_back = True
            new = self._write_back(stmt, pairs) if pairs else [stmt]
            out.extend(self._return(s) if isinstance(s, syntax.Return) else s for s in new)
        return out

    def _target(self, arg):
        if isinstance(arg, syntax.Name):
            return syntax.name(arg.id, "store")
        if id(arg) in self.unpacked:
            items = [self._target(item) if self._rebindable(item) else self._target(None) for item in arg.elts]
            return arg.__class__(elts=items, ctx=syntax.Store())
        return syntax.name(self.ctx.namer.new("_"), "store")

    def _write_back(self, stmt, pairs):
        call = _call_of(stmt)
        ops = self.ctx.ops
        names = syntax.Tuple(elts=[syntax.constant(p) for p, _ in pairs], ctx=syntax.Load())
        new_call = syntax.copy_location(
            syntax.Call(
                func=syntax.dotted(f"{ops}.call_writing"), args=[names, call.func, *call.args], keywords=call.keywords
            ),
            call,
        )
        # (a fresh value's change is Python's too, and nobody sees it: bound to a throwaway name;
        # a display's names are rebound to its items, `[a, b], _ = ...`)
        rebound = [self._target(a) for _, a in pairs]
        returned = self.returning.get(id(stmt))
        argument = next((a.id for p, a in pairs if p == returned and isinstance(a, syntax.Name)), None)
        if isinstance(stmt, syntax.Assign) and argument is not None:
            # `L = choleski(b)` of a helper that returns the parameter it wrote: `L` is `b`'s
            # object, as in Python (`b, _ = ...` then `L = b`; the aliases pass then rebinds
            # either name after a change through the other).
            temp = syntax.name(self.ctx.namer.new("_"), "store")
            target = syntax.Tuple(elts=[*rebound, temp], ctx=syntax.Store())
            alias = syntax.assign(stmt.targets[0], syntax.name(argument))
            return [syntax.copy_location(syntax.assign(target, new_call), stmt), syntax.copy_location(alias, stmt)]
        if isinstance(stmt, syntax.Assign):
            first = stmt.targets[0]
            after = []
        else:
            temp = self.ctx.namer.new("_" if isinstance(stmt, syntax.Expr) else "returned")
            first = syntax.name(temp, "store")
            after = (
                [syntax.copy_location(syntax.ret(syntax.name(temp)), stmt)] if isinstance(stmt, syntax.Return) else []
            )
        target = syntax.Tuple(elts=[*rebound, first], ctx=syntax.Store())
        return [syntax.copy_location(syntax.assign(target, new_call), stmt), *after]

    def _return(self, stmt):
        if not (self.written or self.lost):
            return stmt
        value = stmt.value if stmt.value is not None else syntax.constant(None)
        if (
            isinstance(value, syntax.Call)
            and isinstance(value.func, syntax.Attribute)
            and value.func.attr == "hand_back"
        ):
            return stmt  # converted code converted again (``autolax convert`` output run with autolax)
        keywords = {p: syntax.name(p) for p in self.written}
        # (a parameter written into, then rebound: named, so that a JAX array given for it is refused)
        lost = [syntax.constant(p) for p in self.lost]
        stmt.value = syntax.copy_location(syntax.call(f"{self.ctx.ops}.hand_back", [value, *lost], keywords), stmt)
        return stmt


def _own_statements(node):
    """The statements of a function's own scope (a nested ``def`` or class itself, not its
    body), depth first."""
    stack = list(syntax.child_statements(node))
    while stack:
        stmt = stack.pop()
        yield stmt
        if not isinstance(stmt, _SCOPES):
            stack.extend(syntax.child_statements(stmt))


def _already_converted(ctx) -> bool:
    """Is the function converted code already (``autolax convert`` output, converted again
    when the default output runs with autolax installed)? Its ``def``s are the lowering's
    bodies, which autolax's own ops call: nothing to hand back there."""
    for name in ("ops", "autolax_ops"):
        # (the function's own code names the runtime: the generated code got another name)
        if name != ctx.ops and name in ctx.namer.used:
            value = ctx.resolve(name)
            if getattr(value, "__name__", "") in ("autolax.runtime.ops", "autolax_runtime.ops"):
                return True
    return False


def transform(fn_node, ctx):
    if _already_converted(ctx):
        return fn_node

    def resolve(name):
        value = ctx.resolve(name)
        return _MISSING if value is ctx.MISSING else value

    _Function(ctx, fn_node, resolve, ctx.defs, ctx.methods).run()
    return fn_node
