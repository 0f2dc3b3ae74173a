"""Builds code from readable string templates.

    replace('''
        def body_fn(params):
            body
            return outputs
    ''', body_fn='loop_body', params=['i', 'x'], body=stmts, outputs=syntax.names_tuple(['x']))

A placeholder is any name in the template that is a keyword of ``replace``. What it becomes
depends on the value given:

* ``str``: the name is renamed (also works for ``def`` names);
* an AST node: the node (deep-copied, with its load/store context fixed for the position);
* a list: spliced into the surrounding list (statements, call arguments, parameters, tuple
  elements); a list of strings becomes names;
* ``None``: removed -- ``return None_placeholder`` becomes ``return``, an assignment to it
  becomes a plain expression statement, a call argument or statement disappears.
"""

from __future__ import annotations

import functools
import textwrap

from autolax.frontend.transpile import syntax

_MISSING = object()
_CTX = {"load": syntax.Load, "store": syntax.Store, "param": syntax.Param}


def _new_ctx(ctx: str):
    kind = _CTX[ctx]
    return kind.__new__(kind)  # as ``kind()``, without gast's constructor call


def _set_ctx(node, ctx: str):
    if isinstance(node, syntax.Name):
        kind = _CTX[ctx]
        node.ctx = kind.__new__(kind)  # _new_ctx(ctx), inlined
    elif isinstance(node, (syntax.Tuple, syntax.List)):
        node.ctx = _new_ctx("load" if ctx == "param" else ctx)
        for elt in node.elts:
            _set_ctx(elt, ctx)
    elif isinstance(node, (syntax.Attribute, syntax.Subscript)):
        node.ctx = _new_ctx("load" if ctx == "param" else ctx)
    elif isinstance(node, syntax.Starred):
        node.ctx = _new_ctx("load" if ctx == "param" else ctx)
        _set_ctx(node.value, ctx)
    return node


_CTX_NAME = {syntax.Load: "load", syntax.Store: "store", syntax.Param: "param"}
# The nodes whose context ``_set_ctx`` sets other than a name's.
_NESTED_CTX = frozenset({syntax.Attribute, syntax.Subscript, syntax.Starred, syntax.Tuple, syntax.List})


def _renamed(template_node, value: str, is_name: bool):
    """A copy of the placeholder ``template_node`` (a name, or an expression statement of
    one) that names ``value``."""
    if is_name and template_node.annotation is None:  # the template's name, renamed
        new = syntax.Name.__new__(syntax.Name)
        fields = new.__dict__
        fields.update(template_node.__dict__)
        fields["id"] = value
        kind = template_node.ctx.__class__
        fields["ctx"] = kind.__new__(kind)
        return new
    new = syntax.deepcopy(template_node)
    if is_name:
        new.id = value
    else:
        new.value.id = value
    return new


class _Replacer:
    def __init__(self, subs, location=None):
        self.subs = subs
        self.used: set[int] = set()  # values already placed once: later uses get a copy
        # ``syntax.generated_location`` of the statement the code is for: what
        # ``syntax.copy_location`` would give the result, given while it is built (one walk).
        self.location = location

    def _located(self, result):
        """``syntax.locate`` of what a placeholder turned into (a node or a list)."""
        location = self.location
        if location is None or result is None:
            return result
        for item in result if result.__class__ is list else (result,):
            if getattr(item, "lineno", _MISSING) is not _MISSING and item.lineno is not None:
                continue  # located, and so is its subtree (as ``syntax.locate`` stops there)
            if item.__class__ is syntax.Name and item.annotation is None:
                # A new name (``syntax.name``): its context holds no location. ``locate``, inlined.
                item.lineno, item.col_offset = location[0], location[1]
                item.end_lineno, item.end_col_offset = location[2], location[3]
            elif isinstance(item, syntax.AST):
                syntax.locate(item, location)
        return result

    def _place(self, template_node, value):
        """What a placeholder turns into -- None, a node or a list of nodes --, located as
        ``syntax.locate(..., self.location)`` would locate it. ``template_node``: the
        placeholder, a name (whose context the result takes: store, param or load) or an
        expression statement (a statement position: nothing to fix)."""
        if value is None:
            return None
        is_name = template_node.__class__ is not syntax.Expr
        ctx = template_node.ctx.__class__ if is_name else syntax.Load
        if ctx not in _CTX_NAME:
            ctx = syntax.Load  # as ``_set_ctx`` would treat a `del` position
        if value.__class__ is str:
            return self._located(_renamed(template_node, value, is_name))
        if value.__class__ is not list:
            new = self._own(value)
            if is_name:
                _set_ctx(new, _CTX_NAME[ctx])
            return self._located(new)
        return self._place_list(value, ctx, is_name)

    def _place_list(self, value, ctx, is_name: bool) -> list:
        """``_place`` of a list: each item (a name to make, or a node, copied if placed
        before) in the placeholder's context ``ctx``, located."""
        location = self.location
        used = self.used
        item_ctx = syntax.Load if ctx is syntax.Param else ctx  # of an attribute, a tuple...
        placed = []
        for v in value:
            if v.__class__ is str:
                v = syntax.name(v)
                v.ctx = ctx.__new__(ctx)
            else:
                if id(v) in used:  # ``_own(v)``, inlined
                    v = syntax.deepcopy(v)
                else:
                    used.add(id(v))
                if is_name and v.__class__ is syntax.Name:
                    v.ctx = ctx.__new__(ctx)  # ``_set_ctx``, inlined
                elif is_name and v.__class__ in _NESTED_CTX:
                    v.ctx = item_ctx.__new__(item_ctx)
                    if v.__class__ is syntax.Starred:
                        _set_ctx(v.value, _CTX_NAME[ctx])
                    elif v.__class__ is syntax.Tuple or v.__class__ is syntax.List:
                        for elt in v.elts:
                            _set_ctx(elt, _CTX_NAME[ctx])
            placed.append(v)
        if location is not None:  # ``_located``, inlined
            for v in placed:
                if getattr(v, "lineno", None) is not None:
                    continue  # located, and so is its subtree (as ``syntax.locate`` stops there)
                if v.__class__ is syntax.Name and v.annotation is None:
                    v.lineno, v.col_offset, v.end_lineno, v.end_col_offset = location
                elif isinstance(v, syntax.AST):
                    syntax.locate(v, location)
        return placed

    def _own(self, node):
        """``node`` itself the first time it is placed, a copy after that (a tree must not
        share nodes: later passes rewrite nodes in place)."""
        if id(node) in self.used:
            return syntax.deepcopy(node)
        self.used.add(id(node))
        return node

    def _value_for(self, node):
        """(matched, value) for a placeholder node."""
        if isinstance(node, syntax.Name) and node.id in self.subs:
            return True, self.subs[node.id]
        if isinstance(node, syntax.Expr) and isinstance(node.value, syntax.Name):
            if node.value.id in self.subs and isinstance(self.subs[node.value.id], (list, type(None))):
                return True, self.subs[node.value.id]
        return False, None

    def build(self, plan):
        """A copy of a template node with its placeholders substituted, from its ``_plan``
        (one walk: the template is copied as it is substituted, not copied whole first)."""
        kind, children, assemble, locatable, is_def, is_assign = plan
        new_fields = {}
        for field, mode, data in children:  # the child fields, in order
            if mode is _LIST:
                new_fields[field] = self._build_list(data) if data else []
            elif mode is _MAYBE:
                matched, value = self._value_for(data[0])
                new_fields[field] = self._placed_child(data[0], value) if matched else self.build(data[1])
            else:
                new_fields[field] = self.build(data)
        new = kind.__new__(kind)
        fields = new.__dict__
        for key, how, value in assemble:  # in the template's order, as deepcopy
            if how is _CHILD:
                value = new_fields[key]
            elif how is _FRESH:  # a context: deepcopy, inlined
                value = value.__new__(value)
            elif how is _COPY:
                value = (
                    syntax.deepcopy(value)
                    if not isinstance(value, dict)
                    else {k: syntax.deepcopy(v) for k, v in value.items()}
                )
            fields[key] = value
        location = self.location
        if location is not None and locatable:  # a template node: unlocated
            fields["lineno"], fields["col_offset"], fields["end_lineno"], fields["end_col_offset"] = location
        if is_def and new.name in self.subs:
            new.name = self.subs[new.name]
        # An assignment whose target vanished is kept for its value's side effects.
        if is_assign and not [t for t in new.targets if t is not None]:
            return self._located(syntax.expr_stmt(new.value))
        return new

    def _build_list(self, data) -> list:
        """A list field's new items: each placeholder's replacement (spliced in; None drops
        it), each other node built from its plan, each non-node kept."""
        new_list = []
        for item_mode, item, item_plan in data:
            if item_mode is _MAYBE:
                matched, value = self._value_for(item)
                if matched:
                    result = self._place(item, value)
                    if result is None:
                        continue
                    if isinstance(result, list):
                        new_list.extend(result)
                    else:
                        new_list.append(result)
                else:
                    new_list.append(self.build(item_plan))
            elif item_mode is _NODE:
                new_list.append(self.build(item_plan))
            else:
                new_list.append(item)
        return new_list

    def _placed_child(self, placeholder, value):
        """What the placeholder of a single-node field turns into (``_place``), a list of
        nodes as one node or a tuple of them."""
        result = self._place(placeholder, value)
        if isinstance(result, list):
            result = self._located(
                syntax.names_tuple([])
                if not result
                else (result[0] if len(result) == 1 else syntax.Tuple(elts=result, ctx=syntax.Load()))
            )
        return result


# How ``_Replacer.build`` makes a field of a template node (see ``_plan``).
_LIST, _MAYBE, _NODE, _CONST = "list", "maybe", "node", "const"
_CHILD, _FRESH, _COPY = "child", "fresh", "copy"


def _plan(node):
    """What ``_Replacer.build`` does with template ``node``, decided once per template: the
    substitution depends only on which names are placeholders (the keywords of ``replace``).
    ``(class, children, assemble, locatable, is_def, is_assign)``: ``children`` are
    ``(field, mode, data)`` for the child fields (a list, a node that may be a placeholder --
    a name or an expression statement --, or another node), ``assemble`` ``(key, how,
    value)`` for every attribute, in the template's order."""
    kind = node.__class__
    children = []
    for field in syntax.child_fields(kind):
        old = getattr(node, field, _MISSING)
        if old.__class__ is list:
            items = []
            for item in old:
                item_kind = item.__class__
                if item_kind is syntax.Name or item_kind is syntax.Expr:
                    items.append((_MAYBE, item, _plan(item)))
                elif isinstance(item, syntax.AST):
                    items.append((_NODE, None, _plan(item)))
                else:
                    items.append((_CONST, item, None))
            children.append((field, _LIST, items))
        elif isinstance(old, syntax.AST):
            if not old._fields:
                continue  # a context or an operator: copied below
            if old.__class__ is syntax.Name or old.__class__ is syntax.Expr:
                children.append((field, _MAYBE, (old, _plan(old))))
            else:
                children.append((field, _NODE, _plan(old)))
    built = {field for field, _, _ in children}
    assemble = []
    for key, value in node.__dict__.items():
        if key in built:
            assemble.append((key, _CHILD, None))
        elif isinstance(value, (syntax.AST, list, dict)):
            if isinstance(value, syntax.AST) and not value.__dict__:
                assemble.append((key, _FRESH, value.__class__))
            else:
                assemble.append((key, _COPY, value))
        else:
            assemble.append((key, _CONST, value))
    return (
        kind,
        tuple(children),
        tuple(assemble),
        "lineno" in kind._attributes,
        issubclass(kind, (syntax.FunctionDef, syntax.AsyncFunctionDef)),
        issubclass(kind, syntax.Assign),
    )


@functools.lru_cache(maxsize=None)
def _parsed(template: str):
    module = syntax.parse(textwrap.dedent(template))
    for node in syntax.walk(module):  # generated code takes its location from the user's
        for field in syntax.LOCATION_FIELDS:
            if hasattr(node, field):
                setattr(node, field, None)
    return module


def replace(template: str, *, location_of=None, **subs) -> list:
    """Parses ``template`` (a block of statements) and substitutes the placeholders.
    ``location_of``: a node whose location the result takes, as
    ``syntax.copy_locations(result, location_of)`` would give it (given while it is built)."""
    location = None if location_of is None else syntax.generated_location(location_of)
    return _Replacer(subs, location).build(_planned(template)).body


@functools.lru_cache(maxsize=None)
def _planned(template: str):
    """``_plan`` of the parsed template (made once per template: they are constants)."""
    return _plan(_parsed(template))
