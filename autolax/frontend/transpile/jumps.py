"""Jumps (``break``, ``continue``, ``return``, a caught ``raise``): how the passes find and
lower them. A library of the passes that lower jumps (``continue_statements``,
``break_statements``, ``caught_raises``, ``return_statements``, ``loop_exits``) and of those
that look for a jump in a ``finally`` (``unsupported``, ``finally_jumps``).

Staged control flow has no jumps, so each jump becomes an assignment to a flag, and the
statements a jump would skip are moved where they only run when no jump happened:

* if one branch of an ``if`` always jumps, the rest of the block moves into the other branch
  (no flag needed for it);
* otherwise the rest of the block is guarded by ``if not flag:``.

    for x in xs:                      for x in xs:
        if x < 0:                         if x < 0:
            continue           ->             pass
        total += x                        else:
                                              total += x

The flag assignments stay only where something reads the flag (a guard or a loop test).
"""

from __future__ import annotations

from dataclasses import dataclass

from autolax.frontend.transpile import anno, syntax

_LOOPS = (syntax.For, syntax.While)
_ANY_LOOP = (syntax.For, syntax.While, syntax.AsyncFor)
_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


@dataclass
class Lowered:
    """A block after ``BlockLowering.block``: its statements, whether they may jump and
    whether every path through them does."""

    stmts: list
    may_jump: bool
    always_jumps: bool


class BlockLowering:
    """Lowers the jumps of one kind in a block.

    ``is_jump(stmt)`` says whether a statement is a jump of this kind; ``replace(stmt)``
    returns the statements standing for it (which must set ``flag``); ``into_loops`` says
    whether jumps inside nested loops belong to this lowering (true for ``return``).
    """

    def __init__(self, is_jump, replace, flag: str, into_loops: bool, on_loop=None):
        self.is_jump = is_jump
        self.replace = replace
        self.flag = flag
        self.into_loops = into_loops
        self.on_loop = on_loop  # called with a loop whose body may jump (return lowering)
        self.flag_read = False

    def contains_jump(self, stmts) -> bool:
        """Is there a jump of this kind in ``stmts``? (Not in nested scopes; in nested loops
        only with ``into_loops``.)"""
        stack = list(stmts)
        while stack:
            node = stack.pop()
            if self.is_jump(node):
                return True
            if isinstance(node, _SCOPES):
                continue
            if isinstance(node, _LOOPS) and not self.into_loops:
                stack.extend(node.orelse)  # a loop's `else` runs in the enclosing loop
                continue
            stack.extend(syntax.child_statements(node))  # a jump is a statement
        return False

    def first_jump(self, stmts):
        """The first jump of this kind in ``stmts`` (in source order), or None."""
        for node in stmts:
            if self.is_jump(node):
                return node
            if isinstance(node, _SCOPES) or (isinstance(node, _LOOPS) and not self.into_loops):
                children = node.orelse if isinstance(node, _LOOPS) else []
            else:
                children = syntax.child_statements(node)
            found = self.first_jump(children)
            if found is not None:
                return found
        return None

    def guard(self, stmts, origin):
        """``if not flag: stmts``, at ``origin``'s location."""
        self.flag_read = True
        test = syntax.unary_not(syntax.name(self.flag))
        return syntax.copy_location(syntax.if_stmt(test, stmts), origin)

    def always_jumps(self, stmts) -> bool:
        """Does every path through ``stmts`` end in a jump of this kind? (no rewriting)"""
        for stmt in stmts:
            if self.is_jump(stmt):
                return True
            if isinstance(stmt, syntax.If) and self.always_jumps(stmt.body) and self.always_jumps(stmt.orelse):
                return True
            # (A `with` whose body always jumps does not: its context manager may suppress an
            # exception raised before the jump, and the code after the `with` then runs.)
            if self.into_loops and _endless(stmt) and self.contains_jump(stmt.body):
                return True  # `while True:` left only by this kind of jump
        return False

    def block(self, stmts) -> Lowered:
        """``stmts`` with their jumps of this kind lowered (rewrites them in place)."""
        out: list = []
        for index, stmt in enumerate(stmts):
            rest = stmts[index + 1 :]
            if self.is_jump(stmt):
                out.extend(syntax.copy_locations(self.replace(stmt), stmt))
                return Lowered(out, True, True)
            if not self.contains_jump([stmt]):
                out.append(stmt)
                continue
            jump = self.first_jump([stmt]) if rest else None  # (before it is rewritten)
            ends = self._compound(stmt, rest)
            out.append(stmt)
            if ends is not None:
                return Lowered(out, True, ends)
            if rest:
                tail = self.block(rest)
                guard = self.guard(tail.stmts, rest[0])
                _skips(guard, jump, "body")
                out.append(guard)
            return Lowered(out, True, False)
        return Lowered(out, False, False)

    def _compound(self, stmt, rest):
        """Lowers the jumps inside the compound statement ``stmt`` (in place). Returns None when
        the rest of the block is still to follow it (under a guard), else whether the block
        always jumps: the rest was moved into ``stmt``, or cannot be reached."""
        if isinstance(stmt, syntax.If):
            return self._if(stmt, rest)
        if isinstance(stmt, _LOOPS) and not self.into_loops:
            # The jump is in the loop's `else` (`continue` of the enclosing loop).
            stmt.orelse = self.block(stmt.orelse).stmts
            return None
        if isinstance(stmt, _LOOPS):
            # Only reached when jumps inside loops are ours (return lowering).
            endless = _endless(stmt)
            stmt.body = self.block(stmt.body).stmts
            self.on_loop(stmt)
            return True if endless else None  # what follows `while True:` (without `break`) is unreachable
        if isinstance(stmt, syntax.Try):
            self._try(stmt)
            return None
        # with, and anything else holding a block
        lowered = self.block(stmt.body)
        stmt.body = lowered.stmts
        if lowered.always_jumps and not isinstance(stmt, (syntax.With, syntax.AsyncWith)):
            return True
        return None

    def _if(self, stmt, rest):
        """An `if` whose branch always jumps takes the rest of the block into its other
        branch (decided before either branch is rewritten); see ``_compound``."""
        body_always, orelse_always = self.always_jumps(stmt.body), self.always_jumps(stmt.orelse)
        if body_always and orelse_always:
            stmt.body, stmt.orelse = self.block(stmt.body).stmts, self.block(stmt.orelse).stmts
            return True
        if body_always:
            if rest:
                _skips(stmt, self.first_jump(stmt.body), "orelse")
            tail = self.block(stmt.orelse + rest)
            stmt.body, stmt.orelse = self.block(stmt.body).stmts, tail.stmts
            return tail.always_jumps
        if orelse_always:
            if rest:
                _skips(stmt, self.first_jump(stmt.orelse), "body")
            tail = self.block(stmt.body + rest)
            stmt.body, stmt.orelse = tail.stmts, self.block(stmt.orelse).stmts
            return tail.always_jumps
        stmt.body, stmt.orelse = self.block(stmt.body).stmts, self.block(stmt.orelse).stmts
        return None

    def _try(self, stmt) -> None:
        # The `else` runs only if the body ran to its end: not after a jump out of it.
        body_jumps = self.contains_jump(stmt.body)
        for field in ("body", "orelse", "finalbody"):
            setattr(stmt, field, self.block(getattr(stmt, field)).stmts)
        if body_jumps and stmt.orelse:
            stmt.orelse = [self.guard(stmt.orelse, stmt.orelse[0])]
        for handler in stmt.handlers:
            handler.body = self.block(handler.body).stmts


def _skips(node, jump, branch):
    """Notes on the ``if`` ``node`` that its ``branch`` holds statements ``jump`` skips
    (``anno.SKIPPED_BY``), for the runtime's errors about them."""
    if jump is not None:
        anno.set(node, anno.SKIPPED_BY, (type(jump).__name__.lower(), jump.lineno, branch))


def _endless(stmt) -> bool:
    """``while True:`` (after break lowering, a loop with a `break` has a flag in its test)."""
    return (
        isinstance(stmt, syntax.While)
        and isinstance(stmt.test, syntax.Constant)
        and bool(stmt.test.value)
        and not stmt.orelse
    )


def add_loop_test(loop, test) -> None:
    """Makes ``test`` a condition for starting each further iteration of ``loop``."""
    if isinstance(loop, syntax.While):
        loop.test = syntax.bool_and([test, loop.test])
    else:
        extra = anno.get(loop, anno.EXTRA_TEST)
        anno.set(loop, anno.EXTRA_TEST, test if extra is None else syntax.bool_and([extra, test]))
    syntax.copy_location(test, loop)


def flag_assign(flag: str, value: bool, origin=None):
    """``flag = value``, marked as generated (``remove_flag_assignments`` drops it)."""
    stmt = syntax.assign(syntax.name(flag, "store"), syntax.constant(value))
    anno.set(stmt, anno.GENERATED_FLAG, flag)
    return syntax.copy_location(stmt, origin) if origin is not None else stmt


def remove_flag_assignments(tree, flag: str) -> None:
    """Drops ``flag = ...`` statements (used when nothing ended up reading the flag), and
    tidies the blocks that emptied: ``if c: <nothing> else: B`` becomes ``if not c: B``; an
    ``if`` with two empty branches keeps only its test (for its side effects); other empty
    blocks get a ``pass``. (One walk of the statements: each step changes only the blocks of
    the statement it is at.)"""
    for node in syntax.walk_statements(tree):
        for field in _BLOCK_FIELDS:
            block = getattr(node, field, None)
            if block.__class__ is list and block:
                if field == "handlers" or field == "cases":
                    for holder in block:
                        _drop_flag_assignments(holder.body, flag)
                else:
                    _drop_flag_assignments(block, flag)
        # A block that held only the jump (`finally: continue`) is left empty: `pass` keeps it.
        for field in ("body", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and not block and (field == "body" or not node.handlers):
                setattr(node, field, [syntax.copy_location(syntax.Pass(), node)])
        for handler in getattr(node, "handlers", None) or ():
            if not handler.body:
                handler.body = [syntax.copy_location(syntax.Pass(), handler)]
        if isinstance(node, syntax.If):
            node.body = [s for s in node.body if not isinstance(s, syntax.Pass)]
            node.orelse = [s for s in node.orelse if not isinstance(s, syntax.Pass)]
            if not node.body and node.orelse:
                node.test = syntax.copy_location(syntax.unary_not(node.test), node.test)
                node.body, node.orelse = node.orelse, []
                skipped = anno.get(node, anno.SKIPPED_BY)
                if skipped is not None:
                    anno.set(node, anno.SKIPPED_BY, (*skipped[:2], "body"))
        body = getattr(node, "body", None)
        if isinstance(body, list) and not body:
            body.append(syntax.Pass())


_BLOCK_FIELDS = syntax.BLOCK_FIELDS


def _drop_flag_assignments(block, flag) -> None:
    block[:] = [s for s in block if not (s.__class__ is syntax.Assign and anno.get(s, anno.GENERATED_FLAG) == flag)]


_BLOCKS: dict = {}  # node class -> its fields that hold statements, in ``_fields`` order


def loops_in_walk_order(tree) -> list:
    """The ``for`` / ``while`` loops in ``tree``, in ``syntax.walk``'s (breadth-first) order
    -- the order in which the passes name their flags and temporaries -- found by a walk of
    the statement blocks only: expressions hold no statement, so the statements (and the
    handlers and ``case``s holding some) come in the same order as in the walk of every node."""
    out = []
    todo = [tree]
    for node in todo:
        kind = node.__class__
        if kind in _ANY_LOOP:
            out.append(node)
        fields = _BLOCKS.get(kind)
        if fields is None:
            fields = _BLOCKS[kind] = tuple(f for f in syntax.child_fields(kind) if f in syntax.BLOCK_FIELDS)
        for field in fields:
            block = getattr(node, field, None)
            if block.__class__ is list:
                todo.extend(block)
    return out


def jump_in_finally(stmts, in_loop=False):
    """A ``return``, or a ``break`` / ``continue`` of an enclosing loop, in ``stmts`` (a
    ``finally`` block), or None."""
    for stmt in stmts:
        if isinstance(stmt, syntax.Return) or (isinstance(stmt, (syntax.Break, syntax.Continue)) and not in_loop):
            return stmt
        if isinstance(stmt, _SCOPES):
            continue
        loop = in_loop or isinstance(stmt, _ANY_LOOP)
        for field in syntax.BLOCK_FIELDS:
            block = getattr(stmt, field, None)
            if block.__class__ is list:
                for child in block:
                    body = child.body if isinstance(child, (syntax.ExceptHandler, syntax.match_case)) else [child]
                    # a loop's `else` is not inside the loop: its `break` is the outer loop's
                    found = jump_in_finally(body, in_loop if field == "orelse" else loop)
                    if found is not None:
                        return found
    return None


def leaves_in_flight(try_node) -> bool:
    """Does the ``try``'s body, a handler or its ``else`` hold a ``return`` or ``raise`` --
    something in flight that a jump in the ``finally`` would discard? (A ``break`` or
    ``continue`` there is a flag once lowered, which the ``finally`` still follows.)"""
    blocks = [try_node.body, try_node.orelse] + [h.body for h in try_node.handlers]
    return any(
        isinstance(n, (syntax.Return, syntax.Raise))
        for block in blocks
        for stmt in block
        for n in syntax.walk_statements(stmt)
    )
