"""Which parameters a function writes into: the static fact behind write-back calls.

Python passes objects by reference: ``def set0(v, i): v[i] = 0.0`` changes the caller's
NumPy array. Converted code updates a JAX array as a value (``v = v.at[i].set(0.0)``), so
the change reaches the caller only if the helper hands the new value back and the call site
rebinds its name (``passes/writeback.py``). This module finds, from a function's syntax
alone, the parameters it writes into:

- an item or attribute assignment rooted in the parameter (``v[i] = x``, ``v[i] += x``,
  ``v[i], v[j] = ...``, ``p.x = y``, ``p.w[i] = y``), in the function's own statements (not
  in a nested ``def`` or lambda);
- the parameter passed, as a plain name, where a function that writes into it is called
  (``swap(v, 0, p)`` in a helper of a helper), as far as ``callee_writes`` can tell.

A method's receiver (a first parameter named ``self`` or ``cls``) is left out: its attribute
updates change the caller's object in place (``passes/attributes.py``). So is a parameter the
function rebinds (``v = v.copy()``): from there on it no longer names the caller's object.
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import MUTATING_METHODS, mutation_root, writes
from autolax.frontend.transpile import syntax

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def candidates(fn_node) -> list[str]:
    """The parameters a write-back can name: positional and keyword ones (not ``*args`` /
    ``**kwargs``), without a method's receiver."""
    args = fn_node.args
    names = [a.id for a in args.posonlyargs] + [a.id for a in args.args] + [a.id for a in args.kwonlyargs]
    if names and names[0] in ("self", "cls") and (args.posonlyargs or args.args):
        names = names[1:]
    return names


def stored_roots(fn_node) -> dict[str, int]:
    """Local names with an item or attribute assignment rooted in them, in the function's
    own statements: name -> the line of the first such assignment."""
    out: dict[str, int] = {}
    stack = list(syntax.child_statements(fn_node))  # (only statements assign: no expression is searched)
    assign, augmented = syntax.Assign, (syntax.AugAssign, syntax.AnnAssign)
    while stack:
        node = stack.pop()
        kind = node.__class__
        if kind is assign:
            targets = node.targets
        elif kind in augmented:
            targets = (node.target,)
        else:
            if not isinstance(node, _SCOPES):
                stack.extend(syntax.child_statements(node))
            continue
        for target in targets:
            for t in _flat(target):
                if isinstance(t, (syntax.Subscript, syntax.Attribute)):
                    root = mutation_root(t)
                    if root is not None:
                        line = getattr(node, "lineno", 0) or 0
                        out[root.id] = min(out.get(root.id, line), line)
    return out


def _flat(target):
    if isinstance(target, (syntax.Tuple, syntax.List)):
        return [t for e in target.elts for t in _flat(e)]
    if isinstance(target, syntax.Starred):
        return _flat(target.value)
    return [target]


def params_written(fn_node, also=(), augmented=True) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(written, lost)``: the parameters ``fn_node`` writes into, and those it writes into
    and also rebinds, with a write before the first rebinding (``v[0] = 1.0`` then
    ``v = v * 2``): the caller's array changed there, which no hand-back can say.

    An augmented assignment of the parameter itself (``v += x``) writes into it too: NumPy
    adds in place, into the caller's array (a Python number is rebound instead, which
    ``ops.call_writing`` tells apart when it runs: it keeps the caller's number). Not for a
    ``def`` inside a converted function (``augmented=False``): such a function may be given
    to a library (``map(step, xs)``) while a call hands back, and ``v += x`` is mostly a
    number there."""
    params = candidates(fn_node)
    if not params:
        return (), ()
    stored = stored_roots(fn_node)
    for name in also:
        stored.setdefault(name, 0)
    plain, augmenting = _first_bindings(fn_node)
    for name, line in augmenting.items() if augmented else ():
        stored[name] = min(stored.get(name, line), line)
    written, lost = [], []
    for p in params:
        if p not in stored:
            continue
        if p not in plain and (augmented or p not in augmenting):
            written.append(p)
        elif stored[p] < plain[p]:
            lost.append(p)
    return tuple(written), tuple(lost)


def _first_bindings(fn_node) -> tuple[dict[str, int], dict[str, int]]:
    """Local name -> the first line of the function's own statements that binds it, and
    (apart) -> the first line of an augmented assignment of the name itself (``v += x``)."""
    out: dict[str, int] = {}
    augmented: dict[str, int] = {}
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        line = getattr(node, "lineno", 0) or 0
        if isinstance(node, _SCOPES):
            if hasattr(node, "name"):
                out[node.name] = min(out.get(node.name, line), line)
            continue
        if isinstance(node, syntax.AugAssign) and isinstance(node.target, syntax.Name):
            augmented[node.target.id] = min(augmented.get(node.target.id, line), line)
            continue
        if isinstance(node, syntax.stmt):
            for name in writes(node) if not _compound(node) else _header_binds(node):
                out[name] = min(out.get(name, line), line)
        stack.extend(syntax.child_statements(node))
    return out, augmented


def _compound(node) -> bool:
    return any(isinstance(getattr(node, f, None), list) and getattr(node, f) for f in ("body", "orelse", "handlers"))


def _header_binds(node) -> set:
    if isinstance(node, (syntax.For, syntax.AsyncFor)):
        return syntax.target_names(node.target)
    if isinstance(node, (syntax.With, syntax.AsyncWith)):
        return set().union(*(syntax.target_names(i.optional_vars) for i in node.items if i.optional_vars is not None))
    return set()


def item_writes(fn_node, params) -> tuple[set, set]:
    """``(into, replaced)`` for the parameters ``params``: those whose *items* the function
    changes in place (``v[0][1] = x``, ``v[0].w = x``, ``v[0] += x``, ``v[0].append(x)``: a
    NumPy array or an object the list holds is changed), and those whose items it replaces
    or whose length it changes (``v[0] = x``, ``del v[0]``, ``v.append(x)``: the list itself
    is changed). A caller passing a display (``h([a, b])``) loses the second kind in Python
    too, but not the first: its ``a`` itself changed."""
    params = set(params)
    into, replaced = set(), set()

    def note(changed, levels: int) -> None:
        # `changed` is changed `levels` item/attribute levels below the root name
        while isinstance(changed, (syntax.Attribute, syntax.Subscript)):
            changed, levels = changed.value, levels + 1
        if isinstance(changed, syntax.Name) and changed.id in params and levels:
            (into if levels >= 2 else replaced).add(changed.id)

    stack = list(syntax.child_statements(fn_node))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, (syntax.Assign, syntax.Delete)):
            for target in node.targets:
                for t in _flat(target):
                    note(t, 0)
        elif isinstance(node, syntax.AnnAssign):
            note(node.target, 0)
        elif isinstance(node, syntax.AugAssign):  # `v[0] += x`: in place, into the item itself
            note(node.target, 1)
        elif (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and node.func.attr in MUTATING_METHODS
        ):
            note(node.func.value, 1)  # `v.append(x)` changes `v`; `v[0].append(x)` an item
        stack.extend(syntax.iter_child_nodes(node))
    return into, replaced
