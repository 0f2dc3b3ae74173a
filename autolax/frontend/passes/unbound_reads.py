"""Reads that Python might find unbound go through ``ops.assigned``.

    for i in range(n):                for i in range(n):
        last = i * 2          ->          last = i * 2
    return last                       return ops.assigned(last)

Python raises ``UnboundLocalError`` when it reads a local variable no statement assigned.
Converted code passes carried variables around as values, so an unassigned one holds a
placeholder (``ops.undefined('last')``) -- or, after a staged loop over a traced range that
may have run zero times, a ``MaybeBound`` whose flag only the running program knows.
``ops.assigned`` raises for the placeholder and checks the flag (``autolax.runtime.ops.checks``).

Only reads where the variable may be unbound are wrapped: a local that is not bound on every
path to the read (``analysis.definedness``) and that Python does not always bind before
reading it (``ctx.always_bound``; jump lowering makes paths that look unbound but never
read). Generated names are bound by construction.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.analysis.definedness import Definedness, deleted_names
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.reads import Reads, read_call

# Always runs: any function may read a name no path assigned.
NEEDS = None
# Reads ``ctx.always_bound`` (``bound_names``) and ``ctx.temporaries`` (``logical``'s names,
# bound where they are read).
AFTER = ("bound_names", "logical")

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(n):
            for i in range(n):
                last = i * 2
            return last
        """,
        """\
        def f(n):
            for i in range(n):
                last = i * 2
            return ops.assigned(last)
        """,
    ),
    (
        """\
        def f(a, c):
            if a > 0:
                if c > 0:
                    return 1.0
                d = 2.0
            else:
                d = 3.0
            return d + a
        """,
        """\
        def f(a, c):
            do_return = False
            if a > 0:
                if c > 0:
                    do_return = True
                    retval = 1.0
                else:
                    d = 2.0
            else:
                d = 3.0
            if not do_return:
                do_return = True
                retval = ops.assigned(d) + a
            return retval
        """,
        ("return_statements",),
    ),
    (
        """\
        def f(a, c):
            if a > 0:
                if c > 0:
                    return 1.0
                d = 2.0
            else:
                d = 3.0
            return d + a
        """,
        """\
        def f(a, c):
            do_return = False
            if a > 0:
                if c > 0:
                    do_return = True
                    retval = 1.0
                else:
                    d = 2.0
            else:
                d = 3.0
            if not do_return:
                do_return = True
                retval = d + a
            return retval
        """,
        ("bound_names", "return_statements"),
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)


class FreeReads(Reads):
    """``Reads`` in the body of a nested ``def``, of the enclosing function's variables that
    may be unbound where the ``def`` stands (``ops.undefined``, or a ``MaybeBound`` a staged
    loop left): the ``def`` reads them through their cells when it is called, as a lambda
    does (see ``Reads.visit_Lambda``)."""

    def visit_FunctionDef(self, node):
        FreeReads(self.names - local_names(node), self.ops, self.op, self.at_file).body(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def body(self, fn_node):
        fn_node.body = self.visit_block(fn_node.body)

    def visit_AugAssign(self, node):
        """``x += v`` of a ``nonlocal x`` reads ``x`` first: ``x = ops.assigned(x)`` before it."""
        node = self.generic_visit(node)
        if not (isinstance(node.target, syntax.Name) and node.target.id in self.names):
            return node
        name = node.target.id
        check = syntax.assign(
            syntax.name(name, "store"), read_call(self.ops, self.op, syntax.name(name), self.at_file, node)
        )
        return [syntax.copy_location(check, node), node]


class _Function:
    def __init__(self, fn_node, ctx):
        self.ctx = ctx
        skip = set(ctx.always_bound) | set(ctx.namer.generated) | set(ctx.temporaries)
        self.candidates = local_names(fn_node) - skip
        # Without candidates no read may be unbound, wherever it stands (often so after jump
        # lowering: ``always_bound``), and the analysis is not needed.
        self.defined = Definedness(fn_node) if self.candidates else None
        # Locals a `del` in a branch or loop body unbinds (also those every read finds bound)
        self.deletable = local_names(fn_node) - set(ctx.namer.generated) - set(ctx.temporaries)
        self.nested = False  # inside an `if` / loop (a generated function, later)
        # Locals a `del` unbinds: a closure made before it reads them unbound when called.
        self.deleted = frozenset(deleted_names(fn_node.body) & self.deletable)

    def block(self, stmts, nested=False):
        out = []
        for stmt in stmts:
            new = self.stmt(stmt)
            if isinstance(stmt, syntax.Delete) and (nested or self.read_in_a_body(stmt)):
                new = new[:-1] + self.unbind(stmt)
            out.extend(new)
        return out

    def read_in_a_body(self, stmt) -> bool:
        """``del y`` outside any ``if`` / loop, of a local that a later branch or loop body may
        read: that body becomes a function of its own, where a deleted ``y`` would be a free
        variable (``NameError``, not ``UnboundLocalError``). The placeholder keeps Python's
        error."""
        return any(isinstance(t, syntax.Name) and t.id in self.candidates for t in stmt.targets) and all(
            isinstance(t, syntax.Name) and t.id in self.candidates or not isinstance(t, syntax.Name)
            for t in stmt.targets
        )

    def unbind(self, stmt):
        """``del y`` inside an ``if`` / loop: ``y = ops.undefined('y')``. The branch or body is a
        function of its own there, whose ``del`` would not unbind the user's variable; the
        placeholder makes every later read raise as after ``del`` (reads are checked: the
        definedness analysis saw the ``del``)."""
        # A name declared `global` / `nonlocal` is no local of the branch's function (which
        # declares it too): its `del` stays one, and removes the user's variable.
        names = [t for t in stmt.targets if isinstance(t, syntax.Name) and t.id in self.deletable]
        others = [t for t in stmt.targets if not (isinstance(t, syntax.Name) and t.id in self.deletable)]
        out = [syntax.copy_location(syntax.Delete(targets=others), stmt)] if others else []
        definitely = self.defined.before[stmt][0] if self.candidates else set()
        for name in names:
            if name.id in self.candidates - definitely:
                # `del y` raises when y is unbound (deleted by an earlier iteration): a read.
                check = read_call(self.ctx.ops, "assigned", syntax.name(name.id), self.ctx.spec_filename, stmt)
                out.append(syntax.copy_location(syntax.assign(syntax.name(name.id, "store"), check), stmt))
            placeholder = syntax.call(f"{self.ctx.ops}.undefined", [syntax.constant(name.id)])
            out.append(syntax.copy_location(syntax.assign(syntax.name(name.id, "store"), placeholder), stmt))
        return out

    def wrap_reads(self, stmt, maybe_unbound, later) -> list:
        """Wraps the reads of ``maybe_unbound`` in ``stmt`` (outside its blocks) and those of
        ``later`` in its lambdas in ``ops.assigned``; returns the statements to put before
        it (``x = ops.assigned(x)`` for ``x += v``)."""
        if _loads_one_of(stmt, maybe_unbound | later):  # (most statements read none of them)
            reads = Reads(maybe_unbound, self.ctx.ops, at_file=self.ctx.spec_filename, later=later)
            for field, value in syntax.iter_fields(stmt):
                if field in syntax.BLOCK_FIELDS or field in ("target", "targets"):
                    continue
                if isinstance(value, syntax.AST):
                    setattr(stmt, field, reads.visit(value))
                elif isinstance(value, list):
                    setattr(stmt, field, [reads.visit(v) if isinstance(v, syntax.AST) else v for v in value])
            for target in _targets(stmt):  # `x[i] = v` reads x and i
                Reads(maybe_unbound, self.ctx.ops, at_file=self.ctx.spec_filename).visit(target)
        target = stmt.target if isinstance(stmt, syntax.AugAssign) else None
        if isinstance(target, syntax.Name) and target.id in maybe_unbound:
            # `x += v` reads x first: `x = ops.assigned(x)` before it.
            name = target.id
            check = syntax.assign(
                syntax.name(name, "store"),
                read_call(self.ctx.ops, "assigned", syntax.name(name), self.ctx.spec_filename, stmt),
            )
            return [syntax.copy_location(check, stmt)]
        return []

    def stmt(self, stmt):
        if isinstance(stmt, _SCOPES):
            if isinstance(stmt, syntax.FunctionDef):
                free = (self.candidates - self.defined.before[stmt][0] if self.candidates else set()) | self.deleted
                free = free - local_names(stmt) if free else free
                transform(stmt, self.ctx)
                if free:  # read when it is called: Python's NameError then, or the value
                    FreeReads(free, self.ctx.ops, at_file=self.ctx.spec_filename).body(stmt)
            return [stmt]
        maybe_unbound = self.candidates
        if maybe_unbound:
            definitely = self.defined.before[stmt][0]
            if isinstance(stmt, syntax.While):
                # The test runs again after each iteration, which may have deleted a name.
                definitely = definitely - deleted_names(stmt.body)
            maybe_unbound = maybe_unbound - definitely
        later = self.deleted if self.deleted and _has_lambda(stmt) else frozenset()
        prefix = self.wrap_reads(stmt, maybe_unbound, later) if maybe_unbound or later else []
        kind = stmt.__class__
        fields = _BLOCKS.get(kind)
        if fields is None:
            fields = _BLOCKS[kind] = tuple(f for f in syntax.BLOCK_FIELDS if f in kind._fields)
        if not fields:
            return prefix + [stmt] if prefix else [stmt]
        nested = isinstance(stmt, (syntax.If, syntax.For, syntax.While))
        for field in fields:
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block:
                if field == "handlers":
                    for handler in block:
                        handler.body = self.block(handler.body, self.nested)
                elif isinstance(block[0], syntax.stmt):
                    saved, self.nested = self.nested, self.nested or nested
                    setattr(stmt, field, self.block(block, self.nested))
                    self.nested = saved
        return prefix + [stmt]


_BLOCKS: dict = {}  # statement class -> its fields in ``syntax.BLOCK_FIELDS`` (in that order)


def _has_lambda(stmt) -> bool:
    """Does ``stmt``, outside its blocks, hold a lambda?"""
    stack = [getattr(stmt, f, None) for f in syntax.child_fields(stmt.__class__) if f not in syntax.BLOCK_FIELDS]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, syntax.Lambda):
            return True
        elif isinstance(node, syntax.AST):
            stack.extend(syntax.iter_child_nodes(node))
    return False


def _loads_one_of(stmt, names) -> bool:
    """Does ``stmt``, outside its blocks, load one of ``names`` anywhere (also in a nested
    lambda or comprehension, which may bind it: a first look, before ``Reads``)?"""
    stack = [
        getattr(stmt, field, None) for field in syntax.child_fields(stmt.__class__) if field not in syntax.BLOCK_FIELDS
    ]
    known = syntax.CHILD_FIELDS
    while stack:
        node = stack.pop()
        kind = node.__class__
        if kind is syntax.Name:
            if node.id in names and isinstance(node.ctx, syntax.Load):
                return True
        elif kind is list:
            stack.extend(node)
        elif isinstance(node, syntax.AST):
            fields = known.get(kind)
            for field in fields if fields is not None else syntax.child_fields(kind):
                stack.append(getattr(node, field, None))
    return False


def _targets(stmt):
    if isinstance(stmt, syntax.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (syntax.AugAssign, syntax.AnnAssign, syntax.For)):
        targets = [stmt.target]
    else:
        return []
    out = []
    for target in targets:
        stack = [target]
        while stack:
            t = stack.pop()
            if isinstance(t, (syntax.Tuple, syntax.List)):
                stack.extend(t.elts)
            elif isinstance(t, syntax.Starred):
                stack.append(t.value)
            elif isinstance(t, (syntax.Subscript, syntax.Attribute)):
                out.append(t)
    return out


def transform(fn_node, ctx):
    fn_node.body = _Function(fn_node, ctx).block(fn_node.body)
    return fn_node
