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
"""

from __future__ import annotations

from autolax.transpile import syntax

_LOOPS = {"for_range": 3, "for_iter": 1}  # op -> position of its body function


# Attribute of the rewritten function: the names of the lists collecting last values. The
# lowering refuses to collect a value that is not traced (``Loops.ys``): Python's would be a
# Python value, which code after the loop may use as one (``coef[k]``), and the array the
# output gives it may not.
COLLECTED = "_autolax_last_values"


def rewrite(fn, ops, namer) -> bool:
    """Rewrites the loops of ``fn`` (the converted function) as above; did it change any?"""
    before = set(namer.generated)
    changed = _block(fn.body, ops, namer)
    setattr(fn, COLLECTED, {n for n in set(namer.generated) - before if n.endswith("_values")})
    return changed


def _block(stmts, ops, namer) -> bool:
    changed = False
    i = 0
    while i < len(stmts):
        s = stmts[i]
        after = _loop(stmts, i, ops, namer)
        if after is not None:
            changed = True
            i = after
            continue
        if isinstance(s, (syntax.If, syntax.For, syntax.While, syntax.With, syntax.Try)):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list):
                    changed |= _block(block, ops, namer)
            for handler in getattr(s, "handlers", None) or []:
                changed |= _block(handler.body, ops, namer)
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


def _loop(stmts, i, ops, namer):
    """Rewrites the loop statement ``stmts[i]``; the index after it, or None."""
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
    counters = _counters(call.args[0], op, ops)
    names = [n for n in carried if _undefined_before(stmts[:i], n, ops)
             and _assigned_first(body_def, n, params[0].id, counters)]
    if not names:
        return None
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
