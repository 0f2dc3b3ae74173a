"""The shapes of converted code that ``--standalone`` matches and builds."""

from __future__ import annotations

from autolax.analysis.activity import local_names
from autolax.analysis.definedness import Definedness
from autolax.passes.setitem import AUG_METHODS
from autolax.sourcegen.standalone.values import TRACED
from autolax.transpile import syntax

OP_OF_METHOD = {method: op for op, method in AUG_METHODS.items()}


def assigned_names(target):
    if target is None:
        return []
    if isinstance(target, syntax.Name):
        return [target.id]
    return [e.id for e in target.elts]


def without_cells(body, params, operands):
    """A branch function's body to inline as a Python ``if``: without the prologue that
    hands a renamed parameter to a variable closures capture (``nonlocal ys; ys = ys_1``,
    see ``control_flow``): inlined, ``ys`` already holds the value."""
    given = {p: o.id for p, o in zip(params, operands) if isinstance(o, syntax.Name)}
    body = list(body)
    while body and (isinstance(body[0], syntax.Nonlocal) or (
            isinstance(body[0], syntax.Assign) and len(body[0].targets) == 1
            and isinstance(body[0].targets[0], syntax.Name) and isinstance(body[0].value, syntax.Name)
            and given.get(body[0].value.id) == body[0].targets[0].id != body[0].value.id)):
        body.pop(0)
    return body


def without_return(body):
    body = list(body)
    if body and isinstance(body[-1], syntax.Return):
        body.pop()
    return body


def python_if(test, body, orelse, origin):
    orelse = [] if all(isinstance(s, syntax.Pass) for s in orelse) else orelse
    if not body and orelse:
        test, body, orelse = negate(test), orelse, []
    new = syntax.if_stmt(test, body or [syntax.Pass()], orelse)
    return syntax.copy_location(new, origin)


def negate(test):
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        return test.operand
    if isinstance(test, syntax.BoolOp) and all(isinstance(v, syntax.UnaryOp) and isinstance(v.op, syntax.Not) for v in test.values):
        other = syntax.Or() if isinstance(test.op, syntax.And) else syntax.And()
        return syntax.BoolOp(op=other, values=[v.operand for v in test.values])
    return syntax.unary_not(test)


NOT_LITERAL = object()


def literal_value(node):
    """The value of an expression made of number literals and operators only (``-1``,
    ``2 // 2 > 3``), or ``NOT_LITERAL``."""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Constant) and not isinstance(n.value, (bool, int, float, complex, type(None))):
            return NOT_LITERAL
        if isinstance(n, (syntax.Pow, syntax.LShift)) or isinstance(n, syntax.expr) and not isinstance(
                n, (syntax.Constant, syntax.UnaryOp, syntax.BinOp, syntax.BoolOp, syntax.Compare, syntax.IfExp)):
            return NOT_LITERAL
    try:
        return eval(syntax.unparse(node), {"__builtins__": {}}, {})  # noqa: S307 - literals and operators only
    except Exception:  # noqa: BLE001 - 1 // 0: not known here (Python raises when it runs)
        return NOT_LITERAL


def is_const(node, value) -> bool:
    return isinstance(node, syntax.Constant) and type(node.value) is int and node.value == value


def item_elts(node, ops):
    """Val structure of one item of a scanned iterable (``enumerate`` / ``zip`` give tuples)."""
    if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and node.func.attr in ("enumerate", "zip"):
        if isinstance(node.func.value, syntax.Name) and node.func.value.id == ops:
            n = 2 if node.func.attr == "enumerate" else len(node.args)
            return tuple(TRACED for _ in range(n))
    return None


def as_builtin_iter(node, ops):
    """``ops.enumerate`` / ``ops.zip`` back to the builtins (for a Python loop)."""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute) and n.func.attr in ("enumerate", "zip"):
            if isinstance(n.func.value, syntax.Name) and n.func.value.id == ops:
                n.func = syntax.name(n.func.attr)
    return node


def range_test(index, stop, step):
    """``index < stop`` (or ``>`` for a negative step) as an expression."""
    up = syntax.Compare(left=syntax.name(index), ops=[syntax.Lt()], comparators=[syntax.deepcopy(stop)])
    down = syntax.Compare(left=syntax.name(index), ops=[syntax.Gt()], comparators=[syntax.deepcopy(stop)])
    if isinstance(step, syntax.Constant) and isinstance(step.value, int):
        return up if step.value > 0 else down
    if isinstance(step, syntax.UnaryOp) and isinstance(step.op, syntax.USub) and is_const(step.operand, step.operand.value):
        return down if step.operand.value > 0 else up  # `-2`
    positive = syntax.Compare(left=syntax.deepcopy(step), ops=[syntax.Gt()], comparators=[syntax.constant(0)])
    return syntax.IfExp(test=positive, body=up, orelse=down)


def rereadable(node, changing) -> bool:
    """Does evaluating ``node`` again give the same value (names the loop does not change,
    constants, attributes, subscripts and arithmetic of those, no calls)?"""
    for n in syntax.walk(node):
        if isinstance(n, syntax.Name):
            if n.id in changing:
                return False
        elif isinstance(n, syntax.expr) and not isinstance(
            n, (syntax.Constant, syntax.Attribute, syntax.Subscript, syntax.BinOp, syntax.UnaryOp, syntax.Tuple, syntax.Slice,
                syntax.Compare, syntax.BoolOp)
        ):
            return False
    return True


def at_chain(node, ops):
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


def restore_target(chain, ops):
    """``x[i][j] = v`` from ``ops.at(x)[i].set(ops.at(x[i])[j].set(v))``: the innermost
    (container, index, method, value)."""
    container, index, method, value = chain
    inner = at_chain(value, ops) if method == "set" else None
    if inner is not None:
        expected = syntax.Subscript(value=container, slice=index, ctx=syntax.Load())
        if syntax.dump(inner[0]) == syntax.dump(expected):
            return restore_target(inner, ops)
    return chain


# The ops through which converted code hands a list on without another name holding it.
_PASSING_OPS = {"cond", "while_loop", "for_range", "for_iter", "append", "stacked", "assigned", "bound", "undefined"}


# List methods that neither hand the list on nor lengthen it (``sort`` and ``reverse``
# reorder it in place, fuzz seed 9027; ``clear`` leaves an empty list empty, fuzz seed 9994).
_KEEPING_METHODS = {"pop", "index", "count", "copy", "sort", "reverse", "clear"}


def unaliased_lists(fn, ops, readers=frozenset(), generated=frozenset(), reading_calls=frozenset()) -> set:
    """Names of ``fn`` that no other variable, call or container can come to hold: every
    read is ``name[...]``, ``len(name)``, ``name.pop()`` (``index``, ``count``, ``copy``),
    an argument of a call of ``readers`` (builtins that only read it: ``sum(name)``), or
    hands it to a staged statement or an append (``ops.cond(..., name)``). What the
    analysis knows of such a list's length (empty) holds until the function assigns or
    appends to it. (A function of ``generated``, a branch or loop body, returning it hands it
    back to the ``ops`` call. ``reading_calls``: ids of other calls that only read their
    arguments, such as ``jnp.stack(name)``.)"""
    parents = {id(c): n for n in syntax.walk(fn) for c in syntax.iter_child_nodes(n)}

    def handed_back(node):
        parent = parents.get(id(node))
        if isinstance(parent, syntax.Tuple):
            node, parent = parent, parents.get(id(parent))
        if not isinstance(parent, syntax.Return):
            return False
        while parent is not None and not isinstance(parent, (syntax.FunctionDef, syntax.Lambda)):
            parent = parents.get(id(parent))
        return isinstance(parent, syntax.FunctionDef) and parent.name in generated

    def passed(node):
        parent = parents.get(id(node))
        if isinstance(parent, syntax.Tuple):
            node, parent = parent, parents.get(id(parent))
        return (isinstance(parent, syntax.Call) and node in parent.args and isinstance(parent.func, syntax.Attribute)
                and isinstance(parent.func.value, syntax.Name) and parent.func.value.id == ops
                and parent.func.attr in _PASSING_OPS)

    names, aliased = set(), set()
    copies = {}  # name -> the names `alias = name` gives the list to
    changing = set()  # names a use of which changes a list's length (`.pop()`, `del x[i]`, ...)
    for node in syntax.walk(fn):
        if isinstance(node, syntax.AugAssign) and isinstance(node.target, syntax.Name):
            changing.add(node.target.id)
        if not isinstance(node, syntax.Name):
            continue
        names.add(node.id)
        if not isinstance(node.ctx, syntax.Load):
            continue
        parent = parents.get(id(node))
        if _changes_length(node, parent, parents, ops):
            changing.add(node.id)
        if isinstance(parent, syntax.Subscript) and parent.value is node:
            continue
        if (isinstance(parent, syntax.Assign) and parent.value is node and len(parent.targets) == 1
                and isinstance(parent.targets[0], syntax.Name)):
            copies.setdefault(node.id, set()).add(parent.targets[0].id)
            continue
        if (isinstance(parent, syntax.Call) and isinstance(parent.func, syntax.Name) and parent.func.id == "len"
                and parent.args == [node]):
            continue
        if passed(node) or handed_back(node) or node is getattr(parent, "func", None):
            continue
        if (isinstance(parent, syntax.Call) and isinstance(parent.func, syntax.Name) and parent.func.id in readers
                and node in parent.args):
            continue
        if isinstance(parent, syntax.Call) and id(parent) in reading_calls and node in parent.args:
            continue
        if isinstance(parent, syntax.Attribute) and parent.attr in _KEEPING_METHODS and isinstance(
                parents.get(id(parent)), syntax.Call) and parents.get(id(parent)).func is parent:
            continue
        aliased.add(node.id)
    # A copy that is itself held by nothing else and never changes the list's length
    # (`alias = queue`, then only `alias[0]`; fuzz seed 7521) leaves what is known of the
    # original's length true; what is known of the copy's holds while the original, too,
    # keeps its length.
    while True:
        more = {name for name, targets in copies.items() if targets & (aliased | changing)} - aliased
        if not more:
            break
        aliased |= more
    stale = {t for name, targets in copies.items() if name in aliased or name in changing for t in targets}
    return names - aliased - stale


def _changes_length(node, parent, parents, ops) -> bool:
    """Does this read of ``node`` change the length of the list it holds: ``x.pop()``,
    ``del x[i]``, ``x[a:b] = v``, ``ops.append(x, v)``?"""
    if isinstance(parent, syntax.Attribute) and parent.attr == "pop":
        return True
    if isinstance(parent, syntax.Subscript) and parent.value is node:
        return isinstance(parent.ctx, syntax.Del) or isinstance(parent.ctx, syntax.Store) and isinstance(
            parent.slice, syntax.Slice)
    return (isinstance(parent, syntax.Call) and isinstance(parent.func, syntax.Attribute)
            and isinstance(parent.func.value, syntax.Name) and parent.func.value.id == ops
            and parent.func.attr == "append" and parent.args and parent.args[0] is node)


# How a container's methods change its length (its number of items, or of keys).
_LENGTH_BY_METHOD = {"append": 1, "insert": 1, "add": 1, "pop": -1, "remove": -1, "popitem": -1, "discard": None,
                     "clear": None, "update": None, "setdefault": None, "extend": None}
_KEEPS_LENGTH = {"sort", "reverse", "copy", "index", "count", "get", "keys", "values", "items"}
REBOUND = "rebound"


def length_change(stmts, name, ops, appends=True):
    """How much ``stmts`` (converted code) change the length of the container ``name``
    holds when they start: an int, ``REBOUND`` where they assign ``name`` another value
    (and change that no further), or None where it is not known (``extend`` of a value that
    is not a display, a slice assigned or deleted, a change in a Python loop or in only one
    branch of a Python ``if``). ``appends``: count ``ops.append`` (a staged loop collects
    them as its outputs instead)."""
    functions = {s.name: s for s in stmts if isinstance(s, syntax.FunctionDef)}
    total = 0
    for s in stmts:
        if isinstance(s, syntax.FunctionDef):
            continue  # the functions of a staged statement: counted where it calls them
        d = _stmt_length_change(s, name, ops, functions, appends)
        if d is None or (total == REBOUND and d != 0):
            return None
        total = REBOUND if d == REBOUND else total if total == REBOUND else total + d
    return total


def changes_in_place(stmts, name) -> bool:
    """Do ``stmts`` change the length of the container ``name`` in place other than by
    appends (``pop``, ``insert``, ``del name[i]``, ``+=``, ...)?"""
    for node in (n for s in stmts for n in syntax.walk(s)):
        if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) \
                and isinstance(node.func.value, syntax.Name) and node.func.value.id == name \
                and node.func.attr in _LENGTH_BY_METHOD and node.func.attr != "append":
            return True
        if isinstance(node, syntax.AugAssign) and isinstance(node.target, syntax.Name) and node.target.id == name:
            return True
        if isinstance(node, syntax.Delete) and any(
                isinstance(t, syntax.Subscript) and isinstance(t.value, syntax.Name) and t.value.id == name
                for t in node.targets):
            return True
    return False


def length_text(change, than=" than before") -> str:
    """``change`` (an int from ``length_change``) in words."""
    if change == 0:
        return "as long as before"
    items = f"{abs(change)} item{'s' if abs(change) != 1 else ''}"
    return f"{items} {'longer' if change > 0 else 'shorter'}{than}"


def _either(t, f):
    """The change of an ``if`` whose branches change the length by ``t`` and ``f``."""
    if t == f:
        return t
    return REBOUND if {t, f} == {0, REBOUND} else None  # a new value on one path: the Vals compare them


def _is_op(node, ops, *names):
    return (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute)
            and isinstance(node.func.value, syntax.Name) and node.func.value.id == ops and node.func.attr in names)


def _display_length(node):
    if isinstance(node, (syntax.List, syntax.Tuple)) and not any(isinstance(e, syntax.Starred) for e in node.elts):
        return len(node.elts)
    return None


def _stmt_length_change(s, name, ops, functions, appends):
    def is_name(node):
        return isinstance(node, syntax.Name) and node.id == name

    def body_change(fn_name):
        fn = functions.get(fn_name.id) if isinstance(fn_name, syntax.Name) else None
        return None if fn is None else length_change(fn.body, name, ops, appends)

    total = 0
    if isinstance(s, syntax.Assign):
        targets = [t for target in s.targets for t in ([target] if not isinstance(target, (syntax.Tuple, syntax.List))
                                                        else target.elts)]
        if any(is_name(t) for t in targets):
            value = s.value
            if _is_op(value, ops, "append") and is_name(value.args[0]):
                return 1 if appends else 0
            if _is_op(value, ops, "cond"):
                return _either(body_change(value.args[1]), body_change(value.args[2]))
            if _is_op(value, ops, "while_loop", "for_iter"):
                return 0 if body_change(value.args[1]) == 0 else None
            if _is_op(value, ops, "for_range"):
                return 0 if body_change(value.args[3]) == 0 else None
            chain = at_chain(value, ops)
            if chain is not None and is_name(chain[0]):
                return None if isinstance(chain[1], syntax.Slice) else 0
            if (len(targets) == 1 and isinstance(value, syntax.BinOp) and isinstance(value.op, syntax.Add)
                    and (is_name(value.left) or is_name(value.right))):
                added = _display_length(value.right if is_name(value.left) else value.left)
                if added is not None:  # `t = t + (v,)`: as `t += (v,)`
                    return added
            total = REBOUND
    elif isinstance(s, syntax.AugAssign) and is_name(s.target):
        n = _display_length(s.value) if isinstance(s.op, syntax.Add) else None
        return n  # `+=` of a display; `*=`, or `+=` of something else: not known
    elif isinstance(s, syntax.Delete):
        for t in s.targets:
            if is_name(t) or isinstance(t, syntax.Subscript) and is_name(t.value) and isinstance(t.slice, syntax.Slice):
                return None
            if isinstance(t, syntax.Subscript) and is_name(t.value):
                total -= 1
        return total
    elif isinstance(s, syntax.If):
        return _either(length_change(s.body, name, ops, appends), length_change(s.orelse, name, ops, appends))
    elif isinstance(s, (syntax.For, syntax.While, syntax.With, syntax.Try)):
        parts = [getattr(s, f, None) or [] for f in ("body", "orelse", "finalbody")]
        parts += [h.body for h in getattr(s, "handlers", [])]
        changes = [length_change(p, name, ops, appends) for p in parts]
        if isinstance(s, syntax.With) and all(c == 0 for c in changes[1:]):
            return changes[0]
        return 0 if all(c == 0 for c in changes) else None
    # Method calls anywhere in the statement (not in nested functions: run where called).
    stack = [c for c in syntax.iter_child_nodes(s) if not isinstance(c, syntax.stmt)]
    while stack:
        node = stack.pop()
        if isinstance(node, syntax.Lambda):
            continue
        stack.extend(syntax.iter_child_nodes(node))
        if (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute)
                and node.func.attr in _LENGTH_BY_METHOD and _rooted_in(node.func.value, name)):
            return None  # `d["a"].append(v)`: a container it holds changes length (its structure)
        if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) and is_name(node.func.value):
            method = node.func.attr
            if method in _KEEPS_LENGTH:
                continue
            d = _LENGTH_BY_METHOD.get(method)
            if method == "extend" and len(node.args) == 1:
                d = _display_length(node.args[0])
            if d is None or total == REBOUND:
                return None
            total += d
    return total


def _rooted_in(node, name) -> bool:
    """Is ``node`` an item or attribute of the variable ``name`` (``name[k]``, ``name.a[i]``),
    not ``name`` itself?"""
    if not isinstance(node, (syntax.Subscript, syntax.Attribute)):
        return False
    while isinstance(node, (syntax.Subscript, syntax.Attribute)):
        node = node.value
    return isinstance(node, syntax.Name) and node.id == name


_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)
_COMPREHENSIONS = (syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)


def unbound_reads(fn) -> tuple[set, str | None]:
    """The local names the user's function ``fn`` may read (or ``del``) where Python finds
    them unbound (``analysis.definedness``: after a ``del``, or where no statement bound them
    on some path), outside a ``try`` that handles errors; and the first one it reads so on
    every call (None if none): a name no statement bound, read by a statement of ``fn``'s own
    body that every call reaches (no statement before it returns, raises or loops).

        def helper(xs):
            v = xs[0]
            del v
            if xs.sum() > v:      ->   ({'v'}, 'v')
                ...
    """
    defined = Definedness(fn)
    local = local_names(fn)
    maybe = set()
    for stmt in _unguarded(fn.body):
        definitely, _ = defined.before.get(stmt, (None, None))
        if definitely is not None:
            maybe |= (_own_reads(stmt) & local) - definitely
    surely = None
    for stmt in fn.body:
        _, bound = defined.before[stmt]
        unbound = sorted((_own_reads(stmt) & local) - bound)
        if unbound:
            surely = unbound[0]
            break
        if isinstance(stmt, (syntax.While, syntax.Try)) or any(
                isinstance(n, (syntax.Return, syntax.Raise, syntax.Assert)) for n in walk_own(stmt)):
            break
    return maybe, surely


def _unguarded(stmts):
    """The statements of ``stmts`` and of their blocks, except nested functions' and those
    a ``try`` with handlers runs (an error there may be caught)."""
    for s in stmts:
        yield s
        if isinstance(s, _SCOPES):
            continue
        for field in syntax.BLOCK_FIELDS:
            block = getattr(s, field, None) or []
            if field == "body" and getattr(s, "handlers", None):
                continue
            for item in block:
                yield from _unguarded(item.body if isinstance(item, syntax.AST) and not isinstance(item, syntax.stmt)
                                      else [item])


def _own_reads(stmt) -> set:
    """Names a statement reads itself (not its blocks, not in nested functions or lambdas,
    not a comprehension's own variables); a ``del`` and ``x += v`` read their target."""
    out = set()
    for field, value in syntax.iter_fields(stmt):
        if field in syntax.BLOCK_FIELDS:
            continue
        for node in value if isinstance(value, list) else [value]:
            if isinstance(node, syntax.AST):
                out |= _loads(node)
    if isinstance(stmt, syntax.Delete):
        out |= {t.id for t in stmt.targets if isinstance(t, syntax.Name)}
    if isinstance(stmt, syntax.AugAssign) and isinstance(stmt.target, syntax.Name):
        out.add(stmt.target.id)
    return out


def _loads(node) -> set:
    if isinstance(node, _SCOPES):
        return set()
    if isinstance(node, syntax.Name):
        return {node.id} if isinstance(node.ctx, syntax.Load) else set()
    out = set()
    for child in syntax.iter_child_nodes(node):
        out |= _loads(child)
    if isinstance(node, _COMPREHENSIONS):
        for gen in node.generators:
            out -= {n.id for n in syntax.walk(gen.target) if isinstance(n, syntax.Name)}
    return out


def walk_own(stmt):
    """The nodes of a statement and its blocks, not of nested functions or lambdas."""
    yield stmt
    for child in syntax.iter_child_nodes(stmt):
        if not isinstance(child, _SCOPES):
            yield from walk_own(child)


# ----------------------------------------------------------------------------- evaluation order
_FOUND, _CLEAN, _EFFECT = "found", "clean", "effect"


def evaluated_first(stmt, target, harmless) -> bool:
    """Is ``target``, an expression of ``stmt``, evaluated on every run of ``stmt`` before
    anything of it that may raise or have an effect? Only loads of names and constants,
    displays of them and nodes ``harmless(node)`` allows (``jnp.abs``) may come first; not
    under an operand that short-circuits, a side of a conditional expression, a lambda or a
    comprehension. (A check put before ``stmt`` then fails where Python's read does.)

        y = abs(q) + g(x)     -> True for q          y = g(x) + q     -> False for q
    """
    if isinstance(stmt, (syntax.Assign, syntax.AnnAssign, syntax.Expr, syntax.Return)):
        root = stmt.value
    elif isinstance(stmt, syntax.AugAssign) and isinstance(stmt.target, syntax.Name):
        root = stmt.value  # (the target's load comes first: a name)
    elif isinstance(stmt, (syntax.If, syntax.While)):
        root = stmt.test
    elif isinstance(stmt, syntax.For):
        root = stmt.iter
    else:
        return False
    return root is not None and _first(root, target, harmless) == _FOUND


def _first(node, target, harmless):
    if node is target:
        return _FOUND
    if isinstance(node, (syntax.Name, syntax.Constant)) or harmless(node):
        return _CLEAN
    order = _in_order(node)
    if order is None:
        return _EFFECT
    for child, always in order:
        if not always:
            return _EFFECT  # evaluated only sometimes, before the target or holding it
        found = _first(child, target, harmless)
        if found != _CLEAN:
            return found
    return _CLEAN if isinstance(node, (syntax.Tuple, syntax.List, syntax.NamedExpr)) else _EFFECT


def _in_order(node):
    """The children of an expression in the order Python evaluates them, each with whether
    it is evaluated whenever the node is; None for a node not modelled here."""
    if isinstance(node, syntax.BinOp):
        return [(node.left, True), (node.right, True)]
    if isinstance(node, syntax.UnaryOp):
        return [(node.operand, True)]
    if isinstance(node, syntax.Call):
        if any(isinstance(a, syntax.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        return [(node.func, True)] + [(a, True) for a in node.args] + [(k.value, True) for k in node.keywords]
    if isinstance(node, syntax.Subscript):
        return [(node.value, True), (node.slice, True)]
    if isinstance(node, syntax.Attribute):
        return [(node.value, True)]
    if isinstance(node, syntax.Compare):
        return [(node.left, True)] + [(c, i == 0) for i, c in enumerate(node.comparators)]
    if isinstance(node, syntax.BoolOp):
        return [(v, i == 0) for i, v in enumerate(node.values)]
    if isinstance(node, syntax.IfExp):
        return [(node.test, True), (node.body, False), (node.orelse, False)]
    if isinstance(node, (syntax.Tuple, syntax.List)):
        return None if any(isinstance(e, syntax.Starred) for e in node.elts) else [(e, True) for e in node.elts]
    if isinstance(node, syntax.Slice):
        return [(p, True) for p in (node.lower, node.upper, node.step) if p is not None]
    if isinstance(node, syntax.NamedExpr):
        return [(node.value, True)]
    return None
