"""A ``raise`` that its own ``try`` catches becomes a jump to the handler.

    try:                                  caught = False
        if x < 0:                         try:
            raise ValueError('neg')  ->       if x < 0:
        y = x * 2                                 caught = ops.caught(ValueError('neg'), ValueError)
    except ValueError:                        else:
        y = -1.0                                  y = x * 2
                                          except ops.AutolaxError:
                                              raise
                                          except ValueError:
                                              y = -1.0
                                          if caught:
                                              y = -1.0

The ``raise`` sets a flag and skips the rest of the ``try`` body (as ``return`` lowering
does: assignments made before it persist), and the handler it reaches runs again after the
``try`` when the flag is set -- a staged ``if`` when the ``raise`` happened under a traced
condition. ``ops.caught`` raises the exception for real where Python decides the path, so
the real ``try`` (kept for errors raised by calls in its body) catches it there, and the
flag stays False.

Scope (everything else keeps the ``raise-in-try`` refusal of ``ops.raising``): ``raise E``
or ``raise E(<literals>)`` of a builtin exception class, written in the ``try`` body (under
``if`` and loops; not in a nested ``try``, ``with`` or function), where the first handler
that catches it is known from the builtin hierarchy (handlers naming builtin exception
classes, or bare ``except``), binds no name the function uses (``except E as e`` with ``e``
read or assigned anywhere), holds no bare ``raise``, and the ``finally`` (if any) neither
raises nor asserts, nor follows a ``return``. ``ops.caught`` checks the match again when it
runs (a module may rebind ``ValueError``) and refuses if it fails.

Runs after ``break`` lowering (loops have no ``else`` left, and a ``while True:`` left by
a ``break`` has the flag in its test) and before ``return`` lowering, which then sees the
handler's copy as ordinary code.
"""

from __future__ import annotations

import builtins

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.blocks import StatementRewriter
from autolax.frontend.transpile.jumps import BlockLowering, add_loop_test, flag_assign

# Runs where there is a ``try`` (``pipeline.features``).
NEEDS = frozenset({"Try"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x):
            try:
                if x < 0:
                    raise ValueError('neg')
                y = x * 2
            except ValueError:
                y = -1.0
            return y
        """,
        """\
        def f(x):
            caught = False
            try:
                if x < 0:
                    caught = ops.caught(ValueError('neg'), ValueError)
                else:
                    y = x * 2
            except ops.AutolaxError:
                raise
            except ValueError:
                y = -1.0
            if caught:
                y = -1.0
            return y
        """,
        ("exceptions",),
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)
_UNKNOWN = object()


def _builtin_exception(node, ctx, local):
    """The builtin exception class a ``Name`` stands for, or None."""
    if not isinstance(node, syntax.Name) or node.id in local:
        return None
    value = getattr(builtins, node.id, None)
    if not (isinstance(value, type) and issubclass(value, BaseException)):
        return None
    if ctx.resolve(node.id) is not value:  # rebound in the module or a closure
        return None
    return value


def _raised_class(raise_node, ops, ctx, local):
    """For ``raise ops.raising(E(<literals>), caught_by=...)`` (passes.exceptions): E, else None."""
    if raise_node.cause is not None:
        return None
    call = raise_node.exc
    if not (isinstance(call, syntax.Call) and syntax.unparse(call.func) == f"{ops}.raising" and call.args):
        return None
    exc = call.args[0]
    if isinstance(exc, syntax.Call):
        if exc.keywords or not all(isinstance(a, syntax.Constant) for a in exc.args):
            return None
        exc = exc.func
    return _builtin_exception(exc, ctx, local)


def _handler_classes(handler, ctx, local):
    """The builtin classes a handler catches (bare ``except``: BaseException), or _UNKNOWN."""
    if handler.type is None:
        return (BaseException,)
    elts = handler.type.elts if isinstance(handler.type, syntax.Tuple) else [handler.type]
    classes = tuple(_builtin_exception(e, ctx, local) for e in elts)
    return _UNKNOWN if None in classes else classes


def _is_passthrough(handler, ops):
    """The ``except ops.AutolaxError: raise`` that passes.exceptions puts first."""
    return handler.type is not None and syntax.unparse(handler.type) == f"{ops}.AutolaxError"


def _has(stmts, kinds, ops, bare_raise=False) -> bool:
    """Do these statements hold a node of ``kinds`` (with ``bare_raise``: a bare ``raise``),
    not counting nested functions and the ``except ops.AutolaxError: raise`` handlers?"""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, kinds) and not (bare_raise and node.exc is not None):
            return True
        if not isinstance(node, _SCOPES) and not (
            isinstance(node, syntax.ExceptHandler) and _is_passthrough(node, ops)
        ):
            todo.extend(syntax.iter_child_nodes(node))
    return False


def _raises_in_body(stmts):
    """The ``raise`` statements of a ``try`` body, not inside a nested ``try``, scope or
    ``with`` (whose context manager may suppress the exception)."""
    out, todo = [], list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, syntax.Raise):
            out.append(node)
        elif not isinstance(node, _SCOPES + (syntax.Try, syntax.With, syntax.AsyncWith)):
            todo.extend(syntax.child_statements(node))
    return out


def _names_used(fn_node) -> set:
    """The names the function (nested functions included) uses, not counting the names
    ``except E as name`` binds."""
    bound_by_handlers = {id(n.name) for n in syntax.walk(fn_node) if isinstance(n, syntax.ExceptHandler) and n.name}
    return {n.id for n in syntax.walk(fn_node) if isinstance(n, syntax.Name) and id(n) not in bound_by_handlers}


class _Transformer(StatementRewriter):
    def __init__(self, fn_node, ctx):
        self.ctx = ctx
        self.ops = ctx.ops
        self.local = local_names(fn_node)
        self.used = _names_used(fn_node)

    def function(self, node):
        self.local, outer = local_names(node), self.local
        node.body = self.block(node.body)
        self.local = outer
        return node

    def rewrite(self, node):
        if isinstance(node, syntax.Try):  # inner ones first: a handler's copy may raise to this one
            return self.lower(node)
        return [node]

    def match(self, node, error_class):
        """The index of the first handler of ``node`` that catches ``error_class`` and the
        classes of the handlers before it, or None if that is not known statically."""
        earlier = []
        for index, handler in enumerate(node.handlers):
            if _is_passthrough(handler, self.ops):
                continue
            classes = _handler_classes(handler, self.ctx, self.local)
            if classes is _UNKNOWN:
                return None
            if issubclass(error_class, classes):
                return index, earlier
            earlier.extend(handler.type.elts if isinstance(handler.type, syntax.Tuple) else [handler.type])
        return None

    def lower(self, node):
        if not node.handlers or _has(node.finalbody, (syntax.Raise, syntax.Assert), self.ops):
            return [node]
        # A `return` that a `finally` follows: Python returns the object, which the `finally`
        # may still change in place (`ys[3] = 1` on a NumPy array), and the staged program
        # returns the value it had (fuzzer seed 5177 of `--focus try`). Not staged here.
        if node.finalbody and _has(node.body + node.orelse + list(node.handlers), syntax.Return, self.ops):
            return [node]
        chosen, earlier, sites = None, None, []
        for site in _raises_in_body(node.body):
            error_class = _raised_class(site, self.ops, self.ctx, self.local)
            found = self.match(node, error_class) if error_class is not None else None
            if found is None or (chosen is not None and found[0] != chosen):
                continue
            chosen, earlier = found
            sites.append(site)
        if chosen is None:
            return [node]
        handler = node.handlers[chosen]
        # `except E as err:` binds `err` and unbinds it after the handler: the handler's copy
        # binds nothing, which is the same only if nothing reads or assigns that name.
        named = handler.name is not None and handler.name.id is not None
        if (named and handler.name.id in self.used) or _has(handler.body, syntax.Raise, self.ops, bare_raise=True):
            return [node]
        flag = self.ctx.namer.new("caught")
        self.ctx.descriptions[flag] = "the flag of a `raise` its `try` catches"
        ops = self.ops
        caught_type = syntax.deepcopy(handler.type) if handler.type is not None else syntax.name("BaseException")
        keywords = {"not_by": syntax.Tuple(elts=syntax.deepcopy(earlier), ctx=syntax.Load())} if earlier else None

        def replace(site):
            value = syntax.call(
                f"{ops}.caught",
                [site.exc.args[0], syntax.deepcopy(caught_type)],
                keywords and {k: syntax.deepcopy(v) for k, v in keywords.items()},
            )
            return [syntax.assign(syntax.name(flag, "store"), value)]

        ids = {id(s) for s in sites}
        lowering = BlockLowering(
            is_jump=lambda s: id(s) in ids,
            replace=replace,
            flag=flag,
            into_loops=True,
            on_loop=lambda loop: add_loop_test(loop, syntax.unary_not(syntax.name(flag))),
        )
        node.body = lowering.block(node.body).stmts
        if node.orelse:  # runs only when the body ran to its end
            node.orelse = [lowering.guard(node.orelse, node.orelse[0])]
        again = syntax.copy_location(syntax.if_stmt(syntax.name(flag), syntax.deepcopy(handler.body)), handler)
        init = flag_assign(flag, False, node)
        if not node.finalbody:
            return [init, node, again]
        # The handler runs before the `finally`: both inside a `try` that keeps it.
        finalbody, node.finalbody = node.finalbody, []
        outer = syntax.copy_location(syntax.Try(body=[node, again], handlers=[], orelse=[], finalbody=finalbody), node)
        return [init, outer]


def transform(fn_node, ctx):
    fn_node.body = _Transformer(fn_node, ctx).block(fn_node.body)
    return fn_node
