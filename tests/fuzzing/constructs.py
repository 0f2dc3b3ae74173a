"""Which constructs a program has, read from its text (so a reduced program is tagged by what
is left of it, not by what the generator meant to write).

``constructs(source)`` returns a set of names from ``generator.CONSTRUCTS`` and
``generator.IDIOMS``;
``construct_lines(source)`` maps each construct to the lines it occupies (for matching the
rows of ``autolax.trace_check``).
"""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict

_LIST_METHODS = {"pop", "insert", "extend", "remove", "clear", "reverse"}
_ALIAS_NAMES = {"view", "same", "other", "cfg", "alias", "ref"}
_STACK_NAMES = {"stack", "queue", "items", "LOG"}
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def constructs(source: str) -> set:
    return set(construct_lines(source))


def construct_lines(source: str) -> dict:
    """{construct: sorted list of line numbers}."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f"), None)
    found: dict = defaultdict(set)
    if fn is None:
        return {}

    def add(name, node):
        found[name].update(range(node.lineno, getattr(node, "end_lineno", node.lineno) + 1))

    module_names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    helper = any(isinstance(n, ast.FunctionDef) and n.name == "helper" for n in tree.body)
    for node in _walk_own(fn):
        if isinstance(node, ast.If):
            add("if", node)
        elif isinstance(node, ast.While):
            add("while", node)
        elif isinstance(node, ast.For):
            is_range = isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
            add("for-range" if is_range else "for-array", node)
        elif isinstance(node, ast.Break):
            add("break", node)
        elif isinstance(node, ast.Continue):
            add("continue", node)
        elif isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            add("boolops", node)
        elif isinstance(node, ast.IfExp):
            add("ternary", node)
        elif isinstance(node, (ast.Lambda, ast.FunctionDef)) and node is not fn:
            add("closures", node)
            if isinstance(node, ast.FunctionDef):
                add("nested-def", node)
        elif isinstance(node, ast.Try):
            add("try", node)
        elif isinstance(node, ast.Raise):
            add("raise", node)
        elif isinstance(node, ast.Assert):
            add("assert", node)
        elif isinstance(node, ast.Delete):
            if any(isinstance(t, ast.Name) for t in node.targets):
                add("del", node)
            if any(isinstance(t, ast.Subscript) for t in node.targets):
                add("list-methods", node)
        elif isinstance(node, ast.Global):
            add("globals", node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "print":
                add("print", node)
            elif node.func.id == "helper" and helper:
                add("helper", node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            if attr in _LIST_METHODS or (attr == "append" and isinstance(owner, ast.Name) and owner.id in _STACK_NAMES):
                add("list-methods", node)
            elif attr == "append":
                add("appends", node)
        elif isinstance(node, ast.AugAssign) and isinstance(node.value, ast.List):
            add("list-methods", node)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and any(
            isinstance(t, ast.Name) and t.id in _ALIAS_NAMES for t in node.targets
        ):
            add("aliases", node)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) for t in targets):
                add("setitem", node)
        if isinstance(node, ast.Return) and not _is_last(fn, node):
            add("return", node)
        for idiom in _idioms(node, fn):
            add(idiom, node)
        if isinstance(node, ast.Name) and node.id in module_names and node.id.isupper():
            add("globals", node)
    for node, kind in _Definedness(fn).run():
        add(kind, node)
    return {k: sorted(v) for k, v in found.items()}


def _idioms(node, fn):
    """The idioms of real code (``generator.IDIOMS``) ``node`` is."""
    if isinstance(node, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            yield "identity"
        if any(isinstance(op, (ast.In, ast.NotIn)) and isinstance(c, (ast.List, ast.Tuple))
               for op, c in zip(node.ops, node.comparators)):
            yield "membership"
    elif isinstance(node, ast.ClassDef):
        yield "local-class"
    elif isinstance(node, ast.For) and _is_range(node.iter) and len(node.iter.args) == 3:
        step = node.iter.args[2]
        if isinstance(step, ast.Constant) and step.value == 0 or not _is_number(step):
            yield "range-step"
    elif isinstance(node, ast.Try) and any(isinstance(n, ast.Lambda) for n in ast.walk(fn)) and any(
        isinstance(loop, (ast.For, ast.While)) and any(isinstance(r, ast.Raise) for r in ast.walk(loop)) for loop in node.body
    ):
        yield "closure-try"
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
          and node.args and isinstance(node.args[0], ast.List)):
        yield "row-lists"
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)) and any(
        isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Slice) for sub in ast.walk(node.test)
    ):
        yield "size-one"


def _is_range(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def _is_number(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant)


def _walk_own(fn):
    """The nodes of ``fn``, with nested functions included (their bodies are f's code too)."""
    return ast.walk(fn)


def _is_last(fn, node) -> bool:
    return bool(fn.body) and fn.body[-1] is node


class _Definedness:
    """Reads of a name that may be unbound (``undefined``), and those right after a loop that
    may run zero times and binds the name (``zero-trip``): a must-be-bound analysis over
    ``f``'s statements in order (approximate: enough to tag programs)."""

    def __init__(self, fn):
        self.fn = fn
        self.found = []
        self.loop_bound: set = set()  # names first bound in a loop that may run zero times
        params = {a.arg for a in fn.args.args}
        self.globals = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
        self.start = params

    def run(self):
        self.block(self.fn.body, set(self.start))
        return self.found

    def block(self, stmts, bound):
        """Returns the names bound after ``stmts`` (None if they always jump)."""
        for stmt in stmts:
            bound = self.stmt(stmt, bound)
            if bound is None:
                return None
        return bound

    def reads(self, node, bound):
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Lambda, ast.FunctionDef)):
                continue
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                self.read(sub, sub.id, bound)

    def read(self, node, name, bound):
        if name in bound or name in self.globals or hasattr(builtins, name) or name in ("jnp", "helper"):
            return
        if not name.isupper() and self._local(name):
            self.found.append((node, "zero-trip" if name in self.loop_bound else "undefined"))

    def _local(self, name):
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
            or isinstance(n, (ast.FunctionDef,)) and n.name == name and n is not self.fn
            for n in ast.walk(self.fn)
        )

    def stmt(self, stmt, bound):
        bound = set(bound)
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Assert, ast.Raise)):
            value = getattr(stmt, "value", None) if not isinstance(stmt, ast.Assert) else stmt
            if isinstance(stmt, ast.Raise):
                value = stmt.exc
            if value is not None:
                self.reads(value, bound)
            if isinstance(stmt, ast.AugAssign):
                target = stmt.target
                if isinstance(target, ast.Name):
                    self.read(target, target.id, bound)
                else:
                    self.reads(target, bound)
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if not isinstance(t, (ast.Name, ast.Tuple)):
                        self.reads(t, bound)
                    bound |= _stored(t)
            elif isinstance(stmt, ast.AugAssign):
                bound |= _stored(stmt.target)
            if isinstance(stmt, _JUMPS):
                return None
            return bound
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            return bound | {stmt.name}
        if isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    bound.discard(t.id)
                else:
                    self.reads(t, bound)
            return bound
        if isinstance(stmt, ast.If):
            self.reads(stmt.test, bound)
            ends = [self.block(stmt.body, bound), self.block(stmt.orelse, bound)]
            return _join(ends)
        if isinstance(stmt, (ast.For, ast.While)):
            if isinstance(stmt, ast.For):
                self.reads(stmt.iter, bound)
                inner = bound | _stored(stmt.target)
            else:
                self.reads(stmt.test, bound)
                inner = bound
            self.block(stmt.body, inner)
            newly = {sub.id for sub in ast.walk(stmt) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}
            after = bound
            if isinstance(stmt, ast.For) and _runs(stmt.iter):
                after = bound | _stored(stmt.target) | _leading_bound(stmt.body)
            else:
                self.loop_bound |= newly - bound
            self.block(stmt.orelse, after)
            return after
        if isinstance(stmt, ast.Try):
            body = self.block(stmt.body, bound)
            ends = [self.block(stmt.orelse, body) if body is not None else None]
            for handler in stmt.handlers:
                ends.append(self.block(handler.body, bound))
            after = _join(ends) if ends else body
            if stmt.finalbody:
                fin = self.block(stmt.finalbody, bound)
                if fin is None:
                    return None
                if after is not None:
                    after = after | (fin - bound)
            return after
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.reads(child, bound)
        return bound


def _join(ends):
    live = [e for e in ends if e is not None]
    if not live:
        return None
    out = set(live[0])
    for e in live[1:]:
        out &= e
    return out


def _stored(target) -> set:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        out = set()
        for elt in target.elts:
            out |= _stored(elt)
        return out
    return set()


def _runs(iterable) -> bool:
    """A loop over this runs at least once, whatever the arguments (an approximation)."""
    if isinstance(iterable, ast.Name):
        return iterable.id in ("xs", "ys")
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        name, args = iterable.func.id, iterable.args
        if name in ("enumerate", "zip"):
            return all(_runs(a) for a in args if not isinstance(a, ast.Constant))
        if name == "range":
            try:
                values = [ast.literal_eval(a) for a in args]
            except ValueError:
                return len(args) == 1 and ast.unparse(args[0]) == "len(xs)"
            return len(values) < 3 or values[2] != 0 and len(range(*values)) > 0
    return False


def _leading_bound(body) -> set:
    """Names the first simple statements of a loop body bind, before anything can jump."""
    out = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                out |= _stored(t)
        elif isinstance(stmt, (ast.AugAssign, ast.Expr)):
            continue
        else:
            break
    return out
