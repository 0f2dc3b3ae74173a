"""``--standalone``: loops that stay Python get their ``break`` back.

Jump lowering turns ``break`` into a flag so a loop can be staged. When ``--standalone``
decides a loop runs in Python after all, the flag is only noise -- and converting the output
again would lower the restored Python ``break`` into a second flag. So the flag becomes a
``break`` again:

    break_ = False                         for i in range(10):
    for i in range(10):                        if i >= n:
        if i >= n:                                 break
            break_ = True            ->        else:
        else:                                      total += i
            total += i
        if break_:
            break

This is exact: after ``break_ = True`` jump lowering leaves nothing else to run in that
iteration (the rest sits in ``else`` branches or under ``if not break_:`` guards, which are
always true while the loop runs). A flag read after the loop (``for ... else``) is kept.

A loop whose item test (``passes.loop_exits``) stays Python gets ``if c: exit_ = True;
break`` where the user's ``if`` was; the work of the exit, which ``loop_exits`` moved after
the loop, goes back before the ``break``, and the loop's ``else`` back to the loop
(``restore_exits``):

    exit_ = False                          for k in range(10):
    for k in range(10):                        if k * k > limit:
        if k * k > limit:                          found = k
            exit_ = True           ->              break
            break                              total += k
        total += k                         else:
    if exit_:                                  total = -1
        found = k
    else:
        total = -1

Exact too: what the exit runs after the loop sees the state of the iteration that left it.
"""

from __future__ import annotations

from autolax.analysis.activity import reads
from autolax.transpile import syntax

PYTHON_LOOP = "_autolax_python_loop"  # attribute set on loops --standalone keeps in Python


class _Keep(Exception):
    """The flag is used in a way this rewrite does not handle: leave the loop as it is."""


def restore(fn_node, flags) -> None:
    """Rewrites the Python loops of ``fn_node`` whose ``break`` flags are in ``flags``."""
    for node in list(syntax.walk(fn_node)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], syntax.stmt):
                setattr(node, field, _block(block, flags))
        for handler in getattr(node, "handlers", None) or []:
            handler.body = _block(handler.body, flags)


def _is_flag_assign(stmt, flag, value) -> bool:
    return (
        isinstance(stmt, syntax.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], syntax.Name)
        and stmt.targets[0].id == flag
        and isinstance(stmt.value, syntax.Constant)
        and stmt.value.value is value
    )


def _is_not(test, flag) -> bool:
    return (
        isinstance(test, syntax.UnaryOp)
        and isinstance(test.op, syntax.Not)
        and isinstance(test.operand, syntax.Name)
        and test.operand.id == flag
    )


def _loop_flag(loop, flags):
    """The break flag a Python loop tests, or None."""
    if isinstance(loop, syntax.For) and loop.body:
        tail = loop.body[-1]
        if isinstance(tail, syntax.If) and not tail.orelse and [type(s) for s in tail.body] == [syntax.Break]:
            tests = tail.test.values if isinstance(tail.test, syntax.BoolOp) and isinstance(tail.test.op, syntax.Or) else [tail.test]
            for t in tests:
                if isinstance(t, syntax.Name) and t.id in flags:
                    return t.id
    if isinstance(loop, syntax.While):
        tests = loop.test.values if isinstance(loop.test, syntax.BoolOp) and isinstance(loop.test.op, syntax.And) else [loop.test]
        for t in tests:
            if isinstance(t, syntax.UnaryOp) and isinstance(t.operand, syntax.Name) and t.operand.id in flags and _is_not(t, t.operand.id):
                return t.operand.id
    return None


def _block(block, flags):
    out = list(block)
    k = 1
    while k < len(out):
        loop = out[k]
        flag = _loop_flag(loop, flags) if getattr(loop, PYTHON_LOOP, False) else None
        if flag is None or not _is_flag_assign(out[k - 1], flag, False) or flag in reads(out[k + 1 :]):
            k += 1
            continue
        is_for = isinstance(loop, syntax.For)
        body = syntax.deepcopy(loop.body[:-1] if is_for else loop.body)
        try:
            body = _breakify(body, flag)
        except _Keep:
            k += 1
            continue
        if is_for:
            body += _drop_tail_test(loop.body[-1], flag)
        else:
            loop.test = _drop_while_test(loop.test, flag)
        loop.body = body or [syntax.Pass()]
        del out[k - 1]
    return out


def _breakify(stmts, flag):
    out = []
    for s in stmts:
        if _is_flag_assign(s, flag, True):
            out.append(syntax.copy_location(syntax.Break(), s))
        elif isinstance(s, syntax.If) and _is_not(s.test, flag) and not s.orelse:
            out.extend(_breakify(s.body, flag))  # a guard: the flag is unset while the loop runs
        elif isinstance(s, syntax.If) and flag not in reads(s.test):
            s.body = _breakify(s.body, flag) or [syntax.Pass()]
            s.orelse = _breakify(s.orelse, flag)
            out.append(s)
        elif flag in reads(s) or any(_is_flag_assign(n, flag, True) for n in syntax.walk(s)):
            raise _Keep
        else:
            out.append(s)
    return out


def _drop_tail_test(tail, flag):
    """``if flag: break`` -> nothing; ``if flag or do_return: break`` -> ``if do_return: break``."""
    if isinstance(tail.test, syntax.Name):
        return []
    rest = [t for t in tail.test.values if not (isinstance(t, syntax.Name) and t.id == flag)]
    tail.test = rest[0] if len(rest) == 1 else syntax.BoolOp(op=syntax.Or(), values=rest)
    return [tail]


def _drop_while_test(test, flag):
    if _is_not(test, flag):
        return syntax.constant(True)
    rest = [t for t in test.values if not _is_not(t, flag)]
    return rest[0] if len(rest) == 1 else syntax.BoolOp(op=syntax.And(), values=rest)


def restore_exits(fn_node, flags) -> None:
    """Rewrites the Python loops of ``fn_node`` whose item-test flags are in ``flags``."""
    for node in list(syntax.walk(fn_node)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], syntax.stmt):
                setattr(node, field, _exits_block(block, flags))
        for handler in getattr(node, "handlers", None) or []:
            handler.body = _exits_block(handler.body, flags)


def _exit_ifs(loop, flag):
    """The ``if c: flag = True; break`` statements of ``loop``'s body."""
    return [s for s in loop.body if isinstance(s, syntax.If) and not s.orelse and len(s.body) == 2
            and _is_flag_assign(s.body[0], flag, True) and isinstance(s.body[1], syntax.Break)]


def _exits_block(block, flags):
    out = list(block)
    k = 1
    while k < len(out):
        loop, init = out[k], out[k - 1]
        flag = init.targets[0].id if isinstance(init, syntax.Assign) and len(init.targets) == 1 and \
            isinstance(init.targets[0], syntax.Name) else None
        after = out[k + 1] if k + 1 < len(out) else None
        if not (isinstance(loop, syntax.For) and getattr(loop, PYTHON_LOOP, False) and flag in flags
                and _is_flag_assign(init, flag, False) and not loop.orelse and len(_exit_ifs(loop, flag)) == 1
                and isinstance(after, syntax.If) and isinstance(after.test, syntax.Name) and after.test.id == flag):
            k += 1
            continue
        rest = out[k + 2 :] + after.body + after.orelse
        if flag in reads(rest) or sum(_is_flag_assign(n, flag, True) for n in syntax.walk(loop)) != 1:
            k += 1
            continue
        exit_if = _exit_ifs(loop, flag)[0]
        work = [s for s in after.body if not isinstance(s, syntax.Pass)]
        exit_if.body = work + [exit_if.body[1]]
        loop.orelse = [s for s in after.orelse if not isinstance(s, syntax.Pass)]
        del out[k + 1]
        del out[k - 1]
    return out
