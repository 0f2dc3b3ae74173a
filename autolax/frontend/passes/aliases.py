"""Rebinds a local container after a change made through an alias of it.

    same = coef                       same = coef
    same[1] = -b           ->         same[1] = -b
                                      coef = same

(and ``coef[1] = -b`` rebinds ``same``); so do the items of a list or tuple of names:

    t = (a, b)                        t = (a, b)
    t[0][1] = 5.0          ->         t[0][1] = 5.0
                                      a, b = t
    a[0] = 1.0                        a[0] = 1.0
                                      t = (a, t[1])
Python changes the one object both names hold. Converted code passes carried variables as
values, and a staged statement carries only the names it binds or changes: without the
rebinding ``coef`` would not be carried, and a staged body would write its traced value
into the caller's list (the tracer leaks out of the trace). With it, ``coef`` is carried
and holds the changed object, as in Python.

``ys += v`` through either name of ``ys = xs`` rebinds the other to what ``ops.augmented``
says: the result, where the object changed in place (an array, a list), else its own value
(a number, a tuple).

Only a plain ``a = b`` of two local names, followed in the same block (or a block nested
in it) by a change through ``a`` or ``b`` (an item or attribute assignment, or a mutating method
call) with neither name bound again in between: then ``a`` is ``b``'s object for certain.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import MUTATING_METHODS, local_names, mutation_root, writes
from autolax.frontend.analysis.liveness import Liveness
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.blocks import map_blocks

# Runs where the function changes something in place, or deletes, or augments a name
# (``row /= p`` of a view ``row = a[k]``) (``pipeline.features``).
NEEDS = frozenset({"Subscript.Store", "Attribute.Store", "mutating_call", "Delete", "write_back", "AugAssign"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(coef, b):
            same = coef
            same[1] = -b
            return coef
        """,
        """\
        def f(coef, b):
            same = coef
            same[1] = -b
            coef = same
            return coef
        """,
    ),
    (
        """\
        def f(coef, b):
            same = coef
            coef[1] = -b
            return same
        """,
        """\
        def f(coef, b):
            same = coef
            coef[1] = -b
            same = coef
            return same
        """,
    ),
    (
        """\
        def f(a, b):
            t = (a, b)
            t[0][1] = 5.0
            a[0] = 1.0
            return t
        """,
        """\
        def f(a, b):
            t = (a, b)
            t[0][1] = 5.0
            a, b = t
            a[0] = 1.0
            t = (a, t[1])
            return t
        """,
    ),
    (
        """\
        def f(a, b, c):
            t = [a, b]
            t[0] = c
            t[1][0] = 5.0
            return b
        """,
        """\
        def f(a, b, c):
            t = [a, b]
            t[0] = c
            t[1][0] = 5.0
            c, b = t
            return b
        """,
    ),
    (
        """\
        def f(xs):
            ys = xs
            ys += 1.0
            return xs
        """,
        """\
        def f(xs):
            ys = xs
            ys += 1.0
            xs = ops.augmented(xs, ys)
            return xs
        """,
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _changed_through(stmt) -> tuple[set, set]:
    """Local names whose object ``stmt`` changes in place (at any depth, not in nested defs),
    and among them those whose object itself changes (``t[0] = v``, ``t.append(v)``), not
    only an object it holds (``t[0][1] = v``, ``t[0].append(v)``)."""
    out, direct = set(), set()
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and node is not stmt:
            continue
        targets = []
        if isinstance(node, syntax.Assign):
            targets = node.targets
        elif isinstance(node, (syntax.AugAssign, syntax.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, syntax.Delete):
            targets = node.targets
        for target in targets:
            for t in target.elts if isinstance(target, (syntax.Tuple, syntax.List)) else [target]:
                if isinstance(t, (syntax.Subscript, syntax.Attribute)):
                    root = mutation_root(t)
                    if root is not None:
                        out.add(root.id)
                        if t.value is root:
                            direct.add(root.id)
        if (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and node.func.attr in MUTATING_METHODS
        ):
            root = mutation_root(node.func.value)
            if root is not None:
                out.add(root.id)
                if node.func.value is root:
                    direct.add(root.id)
        stack.extend(syntax.iter_child_nodes(node))
    return out, direct


def _handed_back(stmt) -> set:
    """The names a write-back call rebinds to the object its helper changed
    (``b, _ = ops.call_writing(('v',), set0, b, 1)``: ``b``)."""
    if not (
        isinstance(stmt, syntax.Assign)
        and isinstance(stmt.value, syntax.Call)
        and isinstance(stmt.value.func, syntax.Attribute)
        and stmt.value.func.attr == "call_writing"
        and isinstance(stmt.targets[0], syntax.Tuple)
    ):
        return set()
    return {t.id for t in stmt.targets[0].elts[:-1] if isinstance(t, syntax.Name)}


class _ViewOf:
    """``u = a[k:n, k]``, ``u = a[k]``: ``u`` may be a NumPy view of ``a``. A change
    through ``u`` is written back into ``a`` (``a = ops.view(a)[k:n, k].written(u)``), a
    change of ``a`` read again into ``u`` -- for JAX arrays only, at run time: a NumPy view
    shares ``a``'s memory already, a list's slice is a copy."""

    def __init__(self, base: str, index, names: frozenset):
        self.base, self.index, self.names = base, index, names

    def after(self, alias, changed, stmt, ops):
        if alias in changed:
            ref = self._ref(ops)
            call = syntax.call(syntax.attribute(ref, "written"), [syntax.name(alias)])
            return [syntax.copy_location(syntax.assign(syntax.name(self.base, "store"), call), stmt)]
        if self.base in changed:
            ref = self._ref(ops)
            call = syntax.call(syntax.attribute(ref, "reread"), [syntax.name(alias)])
            return [syntax.copy_location(syntax.assign(syntax.name(alias, "store"), call), stmt)]
        return []

    def _ref(self, ops):
        return syntax.Subscript(
            value=syntax.call(f"{ops}.view", [syntax.name(self.base)]),
            slice=syntax.deepcopy(self.index),
            ctx=syntax.Load(),
        )


class _ItemsOf:
    """``t = [a, b]`` / ``t = (a, b)`` of distinct local names: ``t``'s items are the objects
    ``a`` and ``b`` hold. A change through an item (``t[0][1] = v``, ``t[1].append(v)``)
    rebinds the names (``a, b = t``); a change of ``a``'s object rebuilds the tuple
    (``t = (a, t[1])``) or stores the item back into the list (``t = ops.at(t)[0].set(a)``:
    others may hold the list); ``a += v`` stores ``ops.augmented(t[0], a)`` (a number is
    rebound, so ``t`` keeps it). Items that are not names are ``None`` in ``names``. A
    list's own change is followed where it keeps the positions: ``t[0] = c`` (``t`` holds
    ``c`` there now, or an unknown object: ``None``),
    ``t.append(c)``, ``t.extend(cs)`` (then its length is not ``exact``); after any other
    (``t.pop()``, ``t.insert(0, c)``) its items are no longer known: the alias ends."""

    def __init__(self, names: tuple, kind, exact: bool = True):
        self.names, self.kind, self.exact = names, kind, exact

    def after(self, alias, changed, stmt, summed=frozenset(), ops="ops"):
        """``summed``: the name ``stmt`` augments (``a += v``): its item is what
        ``ops.augmented(t[i], a)`` says (the result where the object changed in place)."""
        whole = self.exact and None not in self.names
        known = [(i, n) for i, n in enumerate(self.names) if n is not None]
        if alias in changed:
            if whole:
                targets = syntax.Tuple(elts=[syntax.name(n, "store") for n in self.names], ctx=syntax.Store())
                return [syntax.copy_location(syntax.assign(targets, syntax.name(alias)), stmt)]
            return [
                syntax.copy_location(syntax.assign(syntax.name(n, "store"), _item(alias, i)), stmt) for i, n in known
            ]
        if changed.isdisjoint(self.names) and summed.isdisjoint(self.names):
            return []

        def item(i, n):
            # An item no name of it changed is read from `t` itself: after `n += 1` of a
            # number, `n` is no longer the object `t` holds.
            if n in summed:
                return syntax.call(f"{ops}.augmented", [_item(alias, i), syntax.name(n)])
            return syntax.name(n) if n in changed else _item(alias, i)

        if self.kind is syntax.Tuple:
            items = syntax.Tuple(elts=[item(i, n) for i, n in enumerate(self.names)], ctx=syntax.Load())
            return [syntax.copy_location(syntax.assign(syntax.name(alias, "store"), items), stmt)]
        # A list is changed in place (others may hold it), as the setitem pass writes
        # `t[i] = a` (which may not run: the function itself need not assign an item).
        return [
            syntax.copy_location(
                syntax.assign(
                    syntax.name(alias, "store"),
                    syntax.call(syntax.attribute(_at(alias, i, ops), "set"), [item(i, n)]),
                ),
                stmt,
            )
            for i, n in known
            if n in changed or n in summed
        ]

    def moved_by(self, stmt, alias, local):
        """What ``t`` holds after ``stmt`` changed the list itself, or None: not known."""
        if self.kind is not syntax.List:
            return None
        if (
            isinstance(stmt, syntax.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], syntax.Subscript)
            and _is_name(stmt.targets[0].value, alias)
            and isinstance(stmt.targets[0].slice, syntax.Constant)
            and type(stmt.targets[0].slice.value) is int
        ):
            k = stmt.targets[0].slice.value
            k = k + len(self.names) if k < 0 and self.exact else k
            if not 0 <= k < len(self.names):
                return None
            names = list(self.names)
            names[k] = _fresh_name(stmt.value, local, names, alias)
            return _ItemsOf(tuple(names), self.kind, self.exact)
        if (
            isinstance(stmt, syntax.Expr)
            and isinstance(stmt.value, syntax.Call)
            and isinstance(stmt.value.func, syntax.Attribute)
            and _is_name(stmt.value.func.value, alias)
            and stmt.value.func.attr in ("append", "extend")
            and len(stmt.value.args) == 1
            and not stmt.value.keywords
        ):
            if stmt.value.func.attr == "extend":
                return _ItemsOf(self.names, self.kind, exact=False)
            added = _fresh_name(stmt.value.args[0], local, self.names, alias) if self.exact else None
            return _ItemsOf(self.names + (added,), self.kind, self.exact)
        return None


def _is_name(node, name) -> bool:
    return isinstance(node, syntax.Name) and node.id == name


def _fresh_name(value, local, names, alias):
    """The name ``value`` is, where it can join ``names`` (a local, not among them), else None."""
    if isinstance(value, syntax.Name) and value.id in local and value.id not in names and value.id != alias:
        return value.id
    return None


def _at(alias, index, ops):
    """``ops.at(t)[index]``."""
    at = syntax.call(f"{ops}.at", [syntax.name(alias)])
    return syntax.Subscript(value=at, slice=syntax.constant(index), ctx=syntax.Load())


def _item(alias, index, ctx="load"):
    kind = syntax.Store if ctx == "store" else syntax.Load
    return syntax.Subscript(value=syntax.name(alias), slice=syntax.constant(index), ctx=kind())


def _items_of(stmt, local) -> _ItemsOf | None:
    """``t = [a, b]`` / ``t = (a, 1.0)``: items that are distinct local names (at least one)
    or other values (``None`` in ``names``), ``t`` not among them."""
    if not (
        isinstance(stmt, syntax.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], syntax.Name)
        and isinstance(stmt.value, (syntax.List, syntax.Tuple))
        and not any(isinstance(e, syntax.Starred) for e in stmt.value.elts)
    ):
        return None
    names = tuple(e.id if isinstance(e, syntax.Name) and e.id in local else None for e in stmt.value.elts)
    known = [n for n in names if n is not None]
    if not known or len(set(known)) != len(known) or stmt.targets[0].id in known:
        return None
    return _ItemsOf(names, type(stmt.value))


def _ended(aliases, direct) -> set:
    """The ``_ItemsOf`` aliases whose list or tuple itself changes (``direct``): once it
    does, which objects it holds is no longer known (in a loop, from its first statement)."""
    return {a for a, s in aliases.items() if isinstance(s, _ItemsOf) and a in direct}


def _moved(aliases, direct, stmt, local) -> dict:
    """For each ``_ItemsOf`` alias that ``stmt`` changes itself (``direct``): what it holds
    after (``_ItemsOf.moved_by``), or None where that is no longer known."""
    return {a: s.moved_by(stmt, a, local) for a, s in aliases.items() if isinstance(s, _ItemsOf) and a in direct}


def _source_bound(source, bound) -> bool:
    if isinstance(source, _ItemsOf):
        return not (set(source.names) - {None}).isdisjoint(bound)
    if isinstance(source, _ViewOf):
        return source.base in bound or bool(source.names & set(bound))
    return source in bound


def _augmented_view(stmt, aliases) -> set:
    """``{u}`` for ``u += x`` of a view alias ``u`` (NumPy adds in place, through the view;
    a number or a copy is rebound, which ``ops.view(a)[k].written(u)`` tells apart when it
    runs), else nothing."""
    if (
        isinstance(stmt, syntax.AugAssign)
        and isinstance(stmt.target, syntax.Name)
        and isinstance(aliases.get(stmt.target.id), _ViewOf)
    ):
        return {stmt.target.id}
    return set()


def _augmented_name(stmt, aliases) -> set:
    """``{u}`` for ``u += x`` where ``u`` is a plain alias (``u = a``) or the name one aliases,
    else nothing."""
    if isinstance(stmt, syntax.AugAssign) and isinstance(stmt.target, syntax.Name):
        name = stmt.target.id
        if isinstance(aliases.get(name), str) or name in _augmentable(aliases):
            return {name}
    return set()


def _augmentable(aliases) -> set:
    """The names whose ``+=`` may change an object an alias holds: the source of a plain
    alias, an item of a list or tuple of names."""
    out = set()
    for source in aliases.values():
        if isinstance(source, str):
            out.add(source)
        elif isinstance(source, _ItemsOf):
            out.update(n for n in source.names if n is not None)
    return out


def _augmented_only(stmt, aliases) -> set:
    """The names of plain aliases (``ys = xs``: either name) that ``stmt`` binds only by
    ``ys += v`` and the like (at any depth, not in nested functions): in place for an array,
    so the alias holds across ``stmt``."""
    plain = {a for a, s in aliases.items() if isinstance(s, str)} | _augmentable(aliases)
    if not plain:
        return set()
    augmented, other, targets = set(), set(), set()
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and node is not stmt:
            other.add(getattr(node, "name", None))
            continue
        if isinstance(node, syntax.AugAssign) and isinstance(node.target, syntax.Name):
            augmented.add(node.target.id)
            targets.add(id(node.target))
        elif isinstance(node, syntax.Name) and not isinstance(node.ctx, syntax.Load) and id(node) not in targets:
            other.add(node.id)
        stack.extend(syntax.iter_child_nodes(node))
    return (augmented - other) & plain


def _view_of(stmt, local) -> _ViewOf | None:
    """``u = a[<index>]`` of two local names, whose index reads names only (no call: it is
    evaluated again where the view is written back). Whether ``u`` is a view (a basic index
    leaving an array: ``a[k]`` of a matrix, ``a[k:n, k]``) is decided when it runs."""
    if not (
        isinstance(stmt, syntax.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], syntax.Name)
        and isinstance(stmt.value, syntax.Subscript)
        and isinstance(stmt.value.value, syntax.Name)
        and stmt.value.value.id in local
        and stmt.value.value.id != stmt.targets[0].id
    ):
        return None
    index = stmt.value.slice
    nodes = list(syntax.walk(index))
    if any(isinstance(n, (syntax.Call, syntax.NamedExpr, syntax.List, syntax.ListComp, syntax.Await)) for n in nodes):
        return None
    names = frozenset(n.id for n in nodes if isinstance(n, syntax.Name))
    if stmt.targets[0].id in names:
        return None
    return _ViewOf(stmt.value.value.id, index, names)


class _Function:
    def __init__(self, fn_node, ops="ops", namer=None):
        self.fn = fn_node
        self.local = local_names(fn_node)
        self.ops = ops
        self.namer = namer
        self._live = None

    def live_after(self, stmt, name) -> bool:
        """Whether ``name`` may be read after ``stmt`` (the liveness of the function as it
        is when the first view needs it: a view read again only where it is read later)."""
        if self._live is None:
            self._live = Liveness(self.fn)
        after = self._live.live_out.get(stmt)
        return after is None or name in after

    def block(self, stmts, aliases=None):
        aliases = dict(aliases or {})  # alias -> the name whose object it holds
        out = []
        for stmt in stmts:
            self.nested(stmt, aliases)
            out.append(stmt)
            if aliases:  # (without any, nothing below needs what the statement binds)
                bound = writes(stmt) - _augmented_only(stmt, aliases)
                changed, direct = _changed_through(stmt)
                handed = _handed_back(stmt)
                # `b, _ = ops.call_writing(...)`: a helper changed `b`'s object (writeback pass;
                # whether only through its items, this pass does not know)
                bound, changed, direct = bound - handed, changed | handed, direct | handed
                augmented = _augmented_view(stmt, aliases)
                # `row /= p` of a view `row = a[k]`: NumPy divides in place, into `a`
                bound, changed = bound - augmented, changed | augmented
                # `ys += 1.0` where `ys = xs`: NumPy adds into the one array (a number is rebound)
                summed = _augmented_name(stmt, aliases)
                bound = bound - summed
                moved = _moved(aliases, direct, stmt, self.local)
                ended = {a for a, m in moved.items() if m is None}
                for alias, source in sorted(aliases.items(), key=lambda item: item[0]):
                    if not (alias in bound or alias in moved or _source_bound(source, bound)):
                        out.extend(self.after(stmt, alias, source, changed, summed))
                aliases = {
                    a: moved.get(a) or s
                    for a, s in aliases.items()
                    if a not in bound and a not in ended and not _source_bound(s, bound)
                }
            if (
                isinstance(stmt, syntax.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], syntax.Name)
                and isinstance(stmt.value, syntax.Name)
                and stmt.value.id in self.local
                and stmt.targets[0].id != stmt.value.id
            ):
                aliases[stmt.targets[0].id] = stmt.value.id
            view = _view_of(stmt, self.local) or _items_of(stmt, self.local)
            if view is not None:
                aliases[stmt.targets[0].id] = view
        return out

    def after(self, stmt, alias, source, changed, summed) -> list:
        """The statements after ``stmt`` that keep ``alias`` and the object it shares with
        ``source`` one (``changed``: the names whose object ``stmt`` changed in place;
        ``summed``: the name ``stmt`` augments, ``ys += v``)."""
        if isinstance(source, _ItemsOf):
            # `t = [a, b]`, then a change through an item of `t`, or of `a` / `b` (`a += v`:
            # where `t` is read later, as for a plain alias)
            if summed and not self.live_after(stmt, alias):
                summed = set()
            return source.after(alias, changed, stmt, summed, self.ops)
        if isinstance(source, _ViewOf):
            # `u = a[k:n, k]` (a NumPy view of `a`), then a change through either
            if alias in changed or self.live_after(stmt, alias):
                return source.after(alias, changed, stmt, self.ops)
            return []
        if summed & {alias, source}:
            # `ys += v` of either name: the other holds the result if the object changed in
            # place (``ops.augmented`` tells when it runs), where it is read later
            # (`total = start; total += x` leaves `start` alone)
            (changer,) = summed & {alias, source}
            other = source if changer == alias else alias
            if not self.live_after(stmt, other):
                return []
            call = syntax.call(f"{self.ops}.augmented", [syntax.name(other), syntax.name(changer)])
            return [syntax.copy_location(syntax.assign(syntax.name(other, "store"), call), stmt)]
        # Either name changes the one object: the other is rebound to it.
        if alias in changed:
            return [syntax.copy_location(syntax.assign(syntax.name(source, "store"), syntax.name(alias)), stmt)]
        if source in changed:
            return [syntax.copy_location(syntax.assign(syntax.name(alias, "store"), syntax.name(source)), stmt)]
        return []

    def nested(self, stmt, aliases):
        """The blocks of ``stmt``, knowing the aliases made before it that nothing in it
        rebinds (a loop body may run again after a rebinding later in it)."""
        if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
            stmt.body = _Function(stmt, self.ops, self.namer).block(stmt.body)  # its own locals
            return
        if isinstance(stmt, syntax.ClassDef):
            return
        if aliases:
            handed = _handed_back(stmt)
            bound = writes(stmt) - handed - _augmented_only(stmt, aliases)
            ended = _ended(aliases, _changed_through(stmt)[1] | handed)
            inherited = {
                a: s for a, s in aliases.items() if a not in bound and a not in ended and not _source_bound(s, bound)
            }
        else:
            inherited = aliases
        row = self._rows_changed(stmt)
        if row is not None:
            # `for row in a:` whose body changes `row` in place: NumPy's `row` is a view of
            # `a`'s row, as `row = a[index]` is (`for index, row in ops.enumerate(a):`).
            index = self.namer.new("index")
            stmt.target = syntax.Tuple(elts=[syntax.name(index, "store"), stmt.target], ctx=syntax.Store())
            base = stmt.iter.id
            stmt.iter = syntax.copy_location(syntax.call(f"{self.ops}.enumerate", [stmt.iter]), stmt.iter)
            inherited = {**inherited, row: _ViewOf(base, syntax.name(index), frozenset({index}))}
        map_blocks(stmt, lambda block: self.block(block, inherited))

    def _rows_changed(self, stmt) -> str | None:
        """The target of ``for row in a:`` (two local names) whose body changes ``row`` in
        place (``row[0] = v``, ``row /= s``, ``row.sort()``), or None."""
        if not (
            self.namer is not None
            and isinstance(stmt, syntax.For)
            and isinstance(stmt.target, syntax.Name)
            and isinstance(stmt.iter, syntax.Name)
            and stmt.iter.id in self.local
            and stmt.iter.id != stmt.target.id
        ):
            return None
        row = stmt.target.id
        for inner in stmt.body:
            if row in _changed_through(inner)[0] or any(
                isinstance(n, syntax.AugAssign) and isinstance(n.target, syntax.Name) and n.target.id == row
                for n in syntax.walk_statements(inner)
            ):
                return row
        return None


def transform(fn_node, ctx):
    fn_node.body = _Function(fn_node, ctx.ops, ctx.namer).block(fn_node.body)
    return fn_node
