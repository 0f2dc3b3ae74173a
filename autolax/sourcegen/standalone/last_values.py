"""``--standalone``: a variable first assigned in a staged ``for`` loop and used after it
keeps the value of the last iteration, as in Python.

A staged loop must carry such a variable from before its first iteration, where it has no
value and ``--standalone`` knows no type to give it (the runtime finds it when traced). When
each iteration assigns the variable before anything reads it, no iteration reads what the
one before left, so the loop need not carry it: it collects its value at the end of each
iteration, as it collects a list's appended items (``jax.lax.scan``'s stacked outputs), and
the last one is the variable's value after the loop. A loop that runs no iteration leaves
the variable unbound, as Python does: its read raises ``UnboundLocalError``.

    y = ops.undefined('y')                           y = ops.undefined('y')
    def loop_body(i, s, y):                          y_values = []
        s = s + i                                    def loop_body(i, s, y_values):
        y = xs * i                                       s = s + i
        return (s, y)                         ->         y = xs * i
    s, y = ops.for_range(0, n, 1, loop_body,             y_values = ops.append(y_values, y)
                         (s, y), at='f.py:7')            return (s, y_values)
                                                     s, y_values = ops.for_range(0, n, 1, loop_body,
                                                                                 (s, y_values), at='f.py:7')
                                                     if len(y_values) > 0:
                                                         y = y_values[-1]

The trip count of such a loop is known when it is traced (the lowering refuses collected
values otherwise), so the ``if`` is a Python ``if``. Only loops the function runs as
Python does -- not inside a staged branch or loop body, where the output traces code that
Python may not run -- are rewritten; a loop that can stop early (``loop_test``) is not.
``rewrite`` is tried first; where the lowering refuses the rewritten function, it lowers the
function as the front end wrote it (and refuses it in its own words).

The loop's own target (``for h in xs``, ``for l, x in enumerate(xs, 1)``, ``for i in range(3)``)
that the body does not assign again needs no collecting: after the loop it is the last item,
which the code after the loop reads from the sequence itself, as Python's value (a count of
``enumerate`` or an index of ``range`` stays a Python int)::

    h = ops.undefined('h')                           h = ops.undefined('h')
    def loop_body(item, s, h):                       def loop_body(h, s):
        h = item                              ->         s = s + h
        s = s + h                                        return s
        return (s, h)
    s, h = ops.for_iter(xs, loop_body,               s = ops.for_iter(xs, loop_body, s, at='f.py:7')
                        (s, h), at='f.py:7')         if len(xs) > 0:
                                                         h = xs[-1]

(``zip(xs, ys)``: the item at ``min(len(xs), len(ys)) - 1``; a range of literals: its last
number, with no ``if`` when it is not empty.) This holds only where the loop runs every
iteration -- no ``loop_test`` -- over a sequence whose length is known when traced (an array;
a range with Python bounds), and where the names the sequence is written with are not changed
by the loop (they are not carried): the lowering refuses a loop so rewritten (``ITEMS``) that
it does not stage as such a loop (a Python loop, whose iterable may be a list the body
changes, or a range with traced bounds), and the function is then lowered with values
collected only (and, refused again, as written).

Unlike collecting, this is done also in the functions the front end writes (loop bodies,
branches), but not where the output stages such a function (``Loops.for_loop`` refuses it
there): ``if len(xs) > 0: h = xs[-1]`` would leave ``h`` unbound while tracing a branch
Python may not take, and converting such a body traces code Python may never run, which
--standalone cannot stage as failing only when taken (fuzzer seed 3225).
"""

from __future__ import annotations

from autolax.sourcegen.standalone.patterns import literal_value
from autolax.transpile import syntax

_LOOPS = {"for_range": 3, "for_iter": 1}  # op -> position of its body function


# Attribute of the rewritten function: the names of the lists collecting last values. The
# lowering refuses to collect a value that is not traced (``Loops.ys``): Python's would be a
# Python value, which code after the loop may use as one (``coef[k]``), and the array the
# output gives it may not.
COLLECTED = "_autolax_last_values"

# The lowering's refusals that may come of the rewrite itself: a collected value it cannot
# write, and a loop it does not stage as ``ITEMS`` needs (that refusal has the attribute
# ``OF_REWRITE``). Where the rewritten function is refused otherwise, that refusal is reported
# rather than the function's as written (``convert``).
REFUSALS_OF_THE_REWRITE = frozenset({
    "standalone-append-shape", "standalone-append-start", "append-and-read", "append-length-depends-on-data",
})
OF_REWRITE = "_autolax_of_rewrite"

# Attribute of the call of a loop whose targets the code after it reads from the sequence: (their
# names, whether an ``if`` guards them). The lowering must stage the loop as one that runs every
# item of a sequence of static length, and not write a guarded one in a staged body
# (``Loops.for_loop``).
ITEMS = "_autolax_last_items"


def rewrite(fn, ops, namer, items=True) -> bool:
    """Rewrites the loops of ``fn`` (the converted function) as above; did it change any?
    (``items=False``: collects values only, reading no target from its sequence.)"""
    before = set(namer.generated)
    unbound = {s.targets[0].id for s in syntax.walk(fn) if isinstance(s, syntax.Assign) and len(s.targets) == 1
               and isinstance(s.targets[0], syntax.Name) and _op(s.value, ops) == "undefined"} if items else set()
    changed = _block(fn.body, ops, namer, unbound, False)
    setattr(fn, COLLECTED, {n for n in set(namer.generated) - before if n.endswith("_values")})
    return changed


def _block(stmts, ops, namer, unbound, nested) -> bool:
    """Rewrites the loops of ``stmts``; ``nested``: in a function the front end wrote (a loop
    body, a branch), which the output may stage, where only targets are read from sequences."""
    changed = False
    i = 0
    while i < len(stmts):
        s = stmts[i]
        after = _loop(stmts, i, ops, namer, unbound, nested)
        if after is not None:
            changed = True
            i = after
            continue
        if isinstance(s, (syntax.If, syntax.For, syntax.While, syntax.With, syntax.Try)):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list):
                    changed |= _block(block, ops, namer, unbound, nested)
            for handler in getattr(s, "handlers", None) or []:
                changed |= _block(handler.body, ops, namer, unbound, nested)
        elif isinstance(s, syntax.FunctionDef):
            changed |= _block(s.body, ops, namer, unbound, True)
        i += 1
    return changed


def _op(node, ops):
    if (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute)
            and isinstance(node.func.value, syntax.Name) and node.func.value.id == ops):
        return node.func.attr
    return None


def _names(node):
    """The names of a tuple of names, or of one name (a loop that carries one variable)."""
    if isinstance(node, syntax.Name):
        return [node.id]
    if isinstance(node, syntax.Tuple) and all(isinstance(e, syntax.Name) for e in node.elts):
        return [e.id for e in node.elts]
    return None


def _rename(node, k, new):
    """Renames the ``k``-th name of ``node`` (a tuple of names, or one name)."""
    (node.elts[k] if isinstance(node, syntax.Tuple) else node).id = new


def _loop(stmts, i, ops, namer, unbound, nested):
    """Rewrites the loop statement ``stmts[i]``; the index after it, or None. (``unbound``:
    the variables the front end marks as having no value at the start of the function,
    ``x = ops.undefined('x')``, which it writes there where the loop is in a ``try``.)"""
    s = stmts[i]
    if not (isinstance(s, syntax.Assign) and len(s.targets) == 1):
        return None
    call = s.value
    op = _op(call, ops)
    if op not in _LOOPS or len(call.args) != _LOOPS[op] + 2 or any(kw.arg != "at" for kw in call.keywords):
        return None  # a `loop_test` (the loop can stop early) or a `target=`
    body_ref, init = call.args[_LOOPS[op]], call.args[_LOOPS[op] + 1]
    targets, carried = _names(s.targets[0]), _names(init)
    if not isinstance(body_ref, syntax.Name) or targets is None or targets != carried:
        return None
    body_def = next((d for d in stmts[:i] if isinstance(d, syntax.FunctionDef) and d.name == body_ref.id), None)
    if body_def is None or not _plain_body(body_def, carried):
        return None
    params = body_def.args.args
    returned = _names(body_def.body[-1].value)
    if returned != carried or [p.id for p in params[1:]] != carried:
        return None
    # (Reading the target from the sequence is right whether or not it had a value before the
    # loop -- an empty loop leaves it as it was -- but where it had one, carrying it works too.)
    last = _last_items(body_def, call, op, ops, carried, [n for n in carried if n in unbound])
    counters = _counters(call.args[0], op, ops)
    names = [n for n in carried if n not in last and not nested and _undefined_before(stmts[:i], n, ops)
             and _assigned_first(body_def, n, params[0].id, counters)]
    if not names and not last:
        return None
    if last:
        i = _take_last_items(stmts, i, body_def, last, call, namer)
        if not names:
            return i + 1
        carried, init = _names(s.targets[0]), call.args[_LOOPS[op] + 1]
    inserted_before, inserted_after = [], []
    for n in names:
        values = namer.new(f"{n}_values")
        k = carried.index(n)
        params[k + 1].id = values
        for node in (body_def.body[-1].value, init, s.targets[0]):
            _rename(node, k, values)
        append = syntax.assign(syntax.name(values, "store"),
                               syntax.call(f"{ops}.append", [syntax.name(values), syntax.name(n)]))
        body_def.body.insert(len(body_def.body) - 1, syntax.copy_location(append, body_def.body[-1]))
        inserted_before.append(syntax.copy_location(
            syntax.assign(syntax.name(values, "store"), syntax.List(elts=[], ctx=syntax.Load())), s))
        last = syntax.Subscript(value=syntax.name(values), slice=syntax.constant(-1), ctx=syntax.Load())
        ran = syntax.Compare(left=syntax.call("len", [syntax.name(values)]), ops=[syntax.Gt()],
                             comparators=[syntax.constant(0)])
        inserted_after.append(syntax.copy_location(
            syntax.if_stmt(ran, [syntax.copy_location(syntax.assign(syntax.name(n, "store"), last), s)]), s))
    at = stmts.index(body_def)
    stmts[at:at] = inserted_before
    i += len(inserted_before)
    stmts[i + 1:i + 1] = inserted_after
    return i + 1 + len(inserted_after)


def _last_items(body_def, call, op, ops, carried, undefined):
    """The loop's targets among ``undefined`` (carried, first assigned by the loop) that the
    body does not assign again, and that code after the loop can read from the sequence: name
    -> its last value. The ``if`` that guards them is under the key None (absent where the
    sequence is a range of literals with items)."""
    first = body_def.body[0] if body_def.body else None
    index = body_def.args.args[0].id
    if not (isinstance(first, syntax.Assign) and len(first.targets) == 1 and isinstance(first.value, syntax.Name)
            and first.value.id == index):
        return {}  # the front end names the target itself where the loop carries nothing
    targets = _target_paths(first.targets[0], ())
    wanted = {n: path for n, path in (targets or {}).items() if n in undefined and not _stored(body_def.body[1:], n)}
    if not wanted:
        return {}
    if op == "for_range":
        guard, item = _range_last(call.args[:3], carried)
    else:
        guard, item = _sequence_last(call.args[0], ops, carried)
    if item is None:
        return {}
    out = {n: _at(item, path) for n, path in wanted.items()}
    if any(v is None for v in out.values()):
        return {}
    if guard is not None:
        out[None] = guard
    return out


def _target_paths(target, path):
    """Name -> its position in the item (a tuple of indexes) of a target of names."""
    if isinstance(target, syntax.Name):
        return {target.id: path}
    if isinstance(target, syntax.Tuple) and not any(isinstance(e, syntax.Starred) for e in target.elts):
        out = {}
        for k, e in enumerate(target.elts):
            inner = _target_paths(e, path + (k,))
            if inner is None:
                return None
            out.update(inner)
        return out
    return None


def _stored(stmts, name) -> bool:
    """Do ``stmts`` assign or delete ``name`` (a nested function of that name included)?"""
    for node in _own_nodes(stmts):
        if isinstance(node, syntax.Name) and node.id == name and not isinstance(node.ctx, syntax.Load):
            return True
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)) and node.name == name:
            return True
    return False


def _at(item, path):
    """The part of ``item`` at ``path``: ``item`` is an expression, or a list of the parts of a
    tuple the code builds (``enumerate``'s count and item)."""
    for k in path:
        if isinstance(item, list):
            if k >= len(item):
                return None  # Python's unpacking raises in the loop
            item = item[k]
        else:
            item = syntax.Subscript(value=item, slice=syntax.constant(k), ctx=syntax.Load())
    return syntax.deepcopy(item) if not isinstance(item, list) else None


def _reread(node, carried) -> bool:
    """Can the code after the loop evaluate ``node`` again and get the loop's value: constants
    and names the loop does not change, with arithmetic (and ``len``) between them?"""
    if isinstance(node, syntax.Constant):
        return True
    if isinstance(node, syntax.Name):
        return node.id not in carried
    if isinstance(node, syntax.BinOp):
        return _reread(node.left, carried) and _reread(node.right, carried)
    if isinstance(node, syntax.UnaryOp):
        return _reread(node.operand, carried)
    return (isinstance(node, syntax.Call) and isinstance(node.func, syntax.Name) and node.func.id == "len"
            and "len" not in carried and len(node.args) == 1 and not node.keywords and _reread(node.args[0], carried))


def _range_last(bounds, carried):
    """(guard, last number) of ``range(start, stop, step)``."""
    values = [literal_value(b) for b in bounds]
    if all(type(v) is int for v in values):
        numbers = range(*values) if values[2] else ()
        return (None, syntax.constant(numbers[-1])) if len(numbers) else (None, None)
    if not all(_reread(b, carried) for b in bounds):
        return None, None
    text = syntax.unparse(syntax.call("range", [syntax.deepcopy(b) for b in _range_args(bounds)]))
    return syntax.parse_expr(f"len({text}) > 0"), syntax.parse_expr(f"{text}[-1]")


def _range_args(bounds):
    start, stop, step = bounds
    one = isinstance(step, syntax.Constant) and step.value == 1
    if one and isinstance(start, syntax.Constant) and start.value == 0:
        return [stop]
    return [start, stop] if one else [start, stop, step]


def _sequence_last(node, ops, carried):
    """(guard, last item) of the sequence ``node`` of a ``for``: an array named by a name the
    loop does not change, in ``enumerate`` (with a literal start) and ``zip`` (no keywords)."""
    length, item = _length_and_last(node, ops, carried)
    if item is None:
        return None, None
    return syntax.Compare(left=length, ops=[syntax.Gt()], comparators=[syntax.constant(0)]), item


def _length_and_last(node, ops, carried):
    if isinstance(node, syntax.Name):
        if node.id in carried:
            return None, None
        return (syntax.call("len", [syntax.name(node.id)]),
                syntax.Subscript(value=syntax.name(node.id), slice=syntax.constant(-1), ctx=syntax.Load()))
    op = _op(node, ops)
    if op == "enumerate" and not node.keywords and len(node.args) in (1, 2):
        start = literal_value(node.args[1]) if len(node.args) == 2 else 0
        if type(start) is not int:
            return None, None
        length, item = _length_and_last(node.args[0], ops, carried)
        if item is None:
            return None, None
        last = start - 1  # the count of the last item: start + length - 1
        count = syntax.deepcopy(length) if last == 0 else syntax.BinOp(
            left=syntax.deepcopy(length), op=syntax.Add() if last > 0 else syntax.Sub(), right=syntax.constant(abs(last)))
        return length, [count, item]
    if op == "zip" and not node.keywords and node.args and all(isinstance(a, syntax.Name) for a in node.args):
        if any(a.id in carried for a in node.args):
            return None, None
        if len({a.id for a in node.args}) == 1:
            length = syntax.call("len", [syntax.name(node.args[0].id)])
            return length, [syntax.Subscript(value=syntax.name(a.id), slice=syntax.constant(-1), ctx=syntax.Load())
                            for a in node.args]
        length = syntax.call("min", [syntax.call("len", [syntax.name(a.id)]) for a in node.args])
        at = syntax.BinOp(left=length, op=syntax.Sub(), right=syntax.constant(1))
        return length, [syntax.Subscript(value=syntax.name(a.id), slice=syntax.deepcopy(at), ctx=syntax.Load())
                        for a in node.args]
    return None, None


def _take_last_items(stmts, i, body_def, last, call, namer):
    """Takes the targets in ``last`` out of the loop's carry and assigns them after it; the
    index of the loop statement. (A body that starts ``i = index``, ``index`` a name the front
    end made up, takes ``i`` as its parameter instead.)"""
    s = stmts[i]
    guard = last.pop(None, None)
    keep = [n for n in _names(s.targets[0]) if n not in last]
    params = body_def.args.args
    first = body_def.body[0]
    if (isinstance(first.targets[0], syntax.Name) and params[0].id in namer.generated
            and not any(_mentions(stmt, params[0].id) for stmt in body_def.body[1:])):
        params[0].id = first.targets[0].id
        del body_def.body[0]
    params[1:] = [p for p in params[1:] if p.id in keep]
    ret = body_def.body[-1]
    ret.value = syntax.names_tuple(keep) or syntax.Tuple(elts=[], ctx=syntax.Load())
    call.args[-1] = syntax.names_tuple(keep) or syntax.Tuple(elts=[], ctx=syntax.Load())
    if keep:
        s.targets[0] = syntax.names_tuple(keep, "store")
    else:
        stmts[i] = syntax.copy_location(syntax.expr_stmt(call), s)
    assigns = [syntax.copy_location(syntax.assign(syntax.name(n, "store"), value), s) for n, value in last.items()]
    stmts[i + 1:i + 1] = [syntax.copy_location(syntax.if_stmt(guard, assigns), s)] if guard is not None else assigns
    setattr(call, ITEMS, (sorted(last), guard is not None))
    return i


def _plain_body(body_def, carried) -> bool:
    """One ``return`` of the carried names, at the end; no ``nonlocal`` / ``global``."""
    if not body_def.body or not isinstance(body_def.body[-1], syntax.Return):
        return False
    for node in _own_nodes(body_def.body[:-1]):
        if isinstance(node, (syntax.Return, syntax.Nonlocal, syntax.Global, syntax.Yield, syntax.YieldFrom)):
            return False
    return body_def.body[-1].value is not None


def _own_nodes(stmts):
    """The nodes of ``stmts``, not counting nested functions' bodies."""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Lambda, syntax.ClassDef)):
            todo.extend(syntax.iter_child_nodes(node))


def _undefined_before(stmts, name, ops) -> bool:
    """Is ``name = ops.undefined('name')`` among the statements before the loop (the front
    end's mark of a variable the loop gives a first value)?"""
    return any(isinstance(s, syntax.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], syntax.Name)
               and s.targets[0].id == name and _op(s.value, ops) == "undefined" for s in stmts)


def _mentions(node, name) -> bool:
    return any(isinstance(n, syntax.Name) and n.id == name for n in syntax.walk(node))


def _counters(iterable, op, ops):
    """Where the loop's index or item holds Python ints (a range's index, ``enumerate``'s
    count): None for a ``range``; the positions of the item that are counts (``enumerate``:
    ``(0,)``); ``"all"`` for an item that may hold one anywhere (a ``range`` inside ``zip``);
    ``()`` where it holds none."""
    if op == "for_range":
        return None
    if _op(iterable, ops) == "enumerate" and not _counts(iterable.args[0], ops):
        return (0,)
    return "all" if _counts(iterable, ops) else ()


def _counts(node, ops) -> bool:
    return any(isinstance(n, syntax.Call) and (_op(n, ops) in ("range", "enumerate")
                                               or isinstance(n.func, syntax.Name) and n.func.id in ("range", "enumerate"))
               for n in syntax.walk(node))


def _assigned_first(body_def, name, index, counters) -> bool:
    """Does the loop body assign ``name`` at its top level before any statement mentions it
    (so no iteration reads the value the one before left), with a value that does not and
    that is not computed from a Python int the loop counts (``index``: the body's index or
    item parameter; ``counters``: see ``_counters``)?"""
    if name in _counted(body_def, index, counters):
        return False
    for s in body_def.body[:-1]:
        if isinstance(s, syntax.Assign) and len(s.targets) == 1 and name in (_names(s.targets[0]) or ()):
            return not _mentions(s.value, name)  # `y = ...`, `l, x = item`
        if _mentions(s, name):
            return False
    return False


def _counted(body_def, index, counters) -> set:
    """The names of the body (nested functions included) whose value may be computed from a
    count of the loop: in Python a Python int, which code after the loop may use as one
    (``coef[i]``), where the collected value is an array. ``enumerate``'s ``l, x = item``
    counts ``l`` only."""
    if counters == ():
        return set()
    counted, split = {index}, None
    first = body_def.body[0] if body_def.body else None
    if (counters not in (None, "all") and isinstance(first, syntax.Assign) and len(first.targets) == 1
            and isinstance(first.targets[0], syntax.Tuple) and isinstance(first.value, syntax.Name)
            and first.value.id == index and _names(first.targets[0]) is not None):
        split = first  # `l, x = item`: only the counts' positions
        counted |= {n for k, n in enumerate(_names(first.targets[0])) if k in counters}
    functions = {d.name: d for d in syntax.walk(body_def) if isinstance(d, syntax.FunctionDef) and d is not body_def}
    changed = True
    while changed:
        changed = False
        for fn_name, d in functions.items():
            if fn_name not in counted and any(_mentions(s, c) for s in d.body for c in counted):
                counted.add(fn_name)
                changed = True
        for node in syntax.walk(body_def):
            if node is split or not isinstance(node, (syntax.Assign, syntax.AugAssign, syntax.AnnAssign, syntax.For)):
                continue
            source = node.iter if isinstance(node, syntax.For) else node.value
            targets = node.targets if isinstance(node, syntax.Assign) else [node.target]
            if source is None or not any(_mentions(source, c) for c in counted):
                continue
            for t in targets:
                for n in syntax.walk(t):
                    if isinstance(n, syntax.Name) and n.id not in counted:
                        counted.add(n.id)
                        changed = True
    return counted


__all__ = ["rewrite"]
