"""A function that may stage a run-time check is decorated ``@ops.function(checks=True)``.

    def f(x, items):                        @ops.function(checks=True)
        if x.sum() > 0:                     def f(x, items):
            raise ValueError('positive')   ->   def if_true():
        return items[-1]                            raise ops.raising(ValueError('positive'))
                                                def if_false():
                                                    pass
                                                ops.cond(x.sum() > 0, if_true, if_false, at='2')
                                                return items[-1]

(the left side as written; the passes before this one made the ``if`` what it wraps, as in
``EXAMPLES``).

Under ``jax.jit`` the ``raise`` is checked when the program runs, after tracing. If tracing
then stops at an error of the user's code (``items[-1]`` of an empty list), Python would
have raised the check's error first whenever it fails, which only the running program
knows: the decorator runs the body inside ``ops.runtime_checks``, which turns such an error
leaving the function into autolax's refusal (``autolax.runtime.ops.checks``). Checks come
from ``raise`` and ``assert`` (``ops.raising``, ``ops.asserting``), reads of variables a
staged loop may not have assigned (``ops.assigned``), ``lst.index(x)`` of a traced value
(``ops.index``), conditional expressions (``ops.if_else``: a side that fails while traced),
calls of user code (``ops.call``: the callee's own checks) and ranges whose step is not a
literal (``ops.for_range``, ``ops.range``: Python's ``ValueError`` for a step of 0), and
``sys.exit()`` / ``exit()`` / ``quit()`` (Python's ``SystemExit`` on the path that calls them).

A function with none of these whose own code may still ask a traced value for a Python one
(``float(x)``, ``lst[i]``, the ``if`` of a comprehension: a call of anything but an op, an
item or slice, a comprehension) is decorated ``@ops.function``, which turns JAX's tracer
error leaving it while traced into autolax's ``TracedValueError`` (``ops.refuse_tracer_error``).
Any other function is left as it is. The statements of a ``finally`` block run under
``if not ops.refusing():``: a refusal of autolax's leaving the ``try`` while tracing skips
them, where an error of theirs (a variable the ``try`` had not bound yet) would replace it.
The decorator is the last one, under the user's own
(``@jax.jit`` in a file ``autolax convert`` wrote): it runs where the body runs, at trace
time. ``ctx.wrapper`` says which one it is (``autolax.api`` applies it to the function it
builds from the compiled code, which leaves decorators out).
"""

from __future__ import annotations

from autolax.frontend.transpile import anno, syntax, templates

# Always runs: it decides from the ops the other passes emitted.
NEEDS = None
# Reads ``anno.CATCHING`` (``exceptions``) and the calls of the ops that may stage a check
# (``CHECKING_OPS``), which these passes emit.
AFTER = ("exceptions", "calls", "membership", "ternary", "unbound_reads", "control_flow")

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(x, items):
            if x.sum() > 0:
                raise ValueError('positive')
            return items[-1]
        """,
        """\
        @ops.function(checks=True)
        def f(x, items):

            def if_true():
                raise ops.raising(ValueError('positive'))

            def if_false():
                pass

            ops.cond(x.sum() > 0, if_true, if_false, at='2')
            return items[-1]
        """,
        ("exceptions", "control_flow"),
    ),
    (
        """\
        def f(x, i):
            global calls
            return float(x[i])
        """,
        """\
        @ops.function
        def f(x, i):
            global calls
            return float(x[i])
        """,
    ),
    (
        """\
        def f(x):
            try:
                r = sqrt(x)
            except ValueError:
                err('negative')
            return r
        """,
        """\
        @ops.function(checks=True)
        def f(x):
            try:

                def handler():
                    ops.call(err, 'negative')

                with ops.catching(ValueError, handlers=((ValueError, handler),)):
                    r = ops.call(sqrt, x)

            except ops.AutolaxError:
                raise
            except ValueError:
                handler()
            return r
        """,
        ("exceptions", "calls"),
    ),
    (
        """\
        def f(x):
            try:
                r = x * 2
            finally:
                print(r)
            return r
        """,
        """\
        @ops.function
        def f(x):
            try:
                r = x * 2
            finally:
                if not ops.refusing():
                    print(r)
            return r
        """,
    ),
    (
        """\
        def f(x, y):
            return x * 2 + y
        """,
        """\
        def f(x, y):
            return x * 2 + y
        """,
    ),
)

# The ops whose calls may stage a check.
CHECKING_OPS = frozenset(
    {
        "raising",
        "asserting",
        "assigned",
        "if_else",
        "call",
        "call_writing",
        "index",
        "masked",
        "part",
        "span",
        "int",  # Python's ValueError / OverflowError for int() of NaN / infinity
        "math_call",  # math.sqrt's domain, math.floor of NaN
    }
)

# Ops that hand the user's code a traced number where Python's builtin gave a Python one
# (``[0.0] * int(x)``): the code after them may need its value, as after a call.
_TRACED_NUMBER_OPS = frozenset({"float"})

# ``sys.exit(...)``, ``exit(...)``, ``quit(...)``: Python's ``SystemExit``, raised when the
# program takes a staged branch or loop body that calls them (``control.fails_when_taken``).
_EXITS = frozenset({"exit", "quit"})

# ``ops.for_range(start, stop, step, ...)`` and ``ops.range(...)`` check a traced step
# (Python's ValueError for a step of 0).
_RANGE_OPS = frozenset({"for_range", "range"})


def _step_may_be_traced(call) -> bool:
    if len(call.args) < 3:
        return False
    step = call.args[2]
    if isinstance(step, syntax.UnaryOp):  # `-1`
        step = step.operand
    return not isinstance(step, syntax.Constant)


def _exits(func) -> bool:
    """Is ``func`` (a called expression) ``sys.exit``, ``exit`` or ``quit`` by its name?"""
    if isinstance(func, syntax.Name):
        return func.id in _EXITS
    return (
        isinstance(func, syntax.Attribute)
        and func.attr == "exit"
        and isinstance(func.value, syntax.Name)
        and func.value.id == "sys"
    )


# Nodes of the user's code that may ask a traced value for a Python one (``__bool__``,
# ``__index__``, ``__float__``, a static shape) in a way no op sees: a call of anything but
# an op (``float(x)``, ``x.item()``, ``jnp.argwhere(x)``), an item or slice (``lst[i]``,
# ``xs[i:j]``), a comprehension (its ``if``).
_MAY_NEED_A_VALUE = (syntax.Subscript, syntax.ListComp, syntax.SetComp, syntax.DictComp, syntax.GeneratorExp)


def _may_stage_a_check(fn_node, ops: str):
    """(may the function stage a check, may its own code need a Python value of a traced
    one): the second only found while no check is (``@ops.function(checks=True)`` translates
    JAX's tracer errors as well)."""
    # Every node, breadth first (``syntax.walk``, inlined: most functions have no such
    # call, and then this looks at the whole converted tree).
    todo = [fn_node]
    add = todo.append
    known = syntax.CHILD_FIELDS
    name = syntax.Name
    needs_value = False
    for node in todo:
        kind = node.__class__
        if kind is name and node.annotation is None:
            continue  # the most common node: it holds only its context
        if kind is syntax.Call:
            func = node.func
            if isinstance(func, syntax.Attribute) and isinstance(func.value, syntax.Name) and func.value.id == ops:
                if func.attr in CHECKING_OPS:
                    return True, False
                if func.attr in _RANGE_OPS and _step_may_be_traced(node):
                    return True, False
                if func.attr in _TRACED_NUMBER_OPS:
                    needs_value = True
            elif _exits(func):
                return True, False
            else:
                needs_value = True
        elif kind in _MAY_NEED_A_VALUE:
            needs_value = True
        fields = known.get(kind)
        for field in fields if fields is not None else syntax.child_fields(kind):
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, syntax.AST):
                        add(item)
            elif isinstance(value, syntax.AST):
                add(value)
    return False, needs_value


_CATCHING = """
with ops_catching(types):
    body
"""


def _catching(fn_node, ctx) -> None:
    """The body of a ``try`` whose handlers catch something runs inside
    ``with ops.catching(E, ...):`` -- also the functions it calls, where a ``raise`` under a
    traced condition must be refused when this ``try`` would catch it (the handler would run
    depending on data), as one written in the body itself is. The body of a ``with`` that
    calls a function of the user's runs inside ``with ops.catching(ops.MaySuppress):`` for the
    same reason: its context manager may suppress what the callee raises."""
    tries = _tries(fn_node)
    # A handler runs as a function only in a function without `with` or `finally` blocks
    # (which Python would run between the check and the handler; see _handler_functions).
    plain = not any(t.__class__ is not syntax.Try or t.finalbody for t in tries)
    for node in tries:
        handlers = None
        if node.__class__ is syntax.Try:
            types = anno.get(node, anno.CATCHING)
            if types and plain:
                handlers = _handler_functions(node, ctx)
        elif _calls_user_code(node.body, ctx.ops):
            # A `with`: its context manager may suppress what a helper the body calls raises
            # (the body's own raises are marked by ``passes.exceptions``).
            types = [syntax.dotted(f"{ctx.ops}.MaySuppress")]
        else:
            continue
        if types and node.body:
            wrapped = templates.replace(
                _CATCHING,
                ops_catching=syntax.dotted(f"{ctx.ops}.catching"),
                types=[syntax.deepcopy(t) for t in types],
                body=node.body,
            )
            node.body = syntax.copy_locations(wrapped, node)
            if handlers is not None:
                definitions, pairs = handlers
                node.body[0].items[0].context_expr.keywords.append(
                    syntax.gast_node(syntax.keyword, arg="handlers", value=pairs)
                )
                node.body[:0] = definitions


# Statements a handler may hold to be staged as a function of its own (``_handler_functions``):
# they bind no name, so the function's body means what the handler's does.
_HANDLER_STATEMENTS = (syntax.Expr, syntax.Raise, syntax.Pass)


def _handler_functions(node, ctx):
    """For a ``try`` (without ``finally``) one of whose handlers only calls, raises or passes,
    and ends with a ``raise`` or a call (``except ValueError: err('not positive')``): each such
    handler's body as a function
    (``def handler(): err('not positive')``), which the handler then calls, and the
    ``handlers=`` of ``ops.catching`` -- ``((ValueError, handler), (KeyError, None), ...)``,
    every handler in order -- so that a run-time check the ``try`` catches (``math.sqrt`` of
    a traced negative number) runs it when it fails, where it always raises
    (``checks.fail_or_handle``). None when no handler qualifies.

    Only in a function without ``with`` blocks and ``finally`` blocks (the caller checks):
    Python runs a ``with`` block's exit, which may also suppress the error, or a ``finally``
    between the check and the handler, where the staged handler runs at the check (the
    runtime lets only checks of this function's own code run it, not a helper's)."""
    definitions, pairs = [], []
    for handler in node.handlers:
        if handler.type is not None and syntax.unparse(handler.type) == f"{ctx.ops}.AutolaxError":
            continue  # ``passes.exceptions``' pass-through
        caught = syntax.name("BaseException") if handler.type is None else syntax.deepcopy(handler.type)
        if handler.name is not None or not _binds_nothing(handler.body) or not _may_raise(handler.body[-1], ctx.ops):
            pairs.append(_pair(caught, syntax.constant(None)))
            continue
        fn_name = ctx.namer.new("handler")
        definition = syntax.function_def(fn_name, [], handler.body)
        definitions.append(syntax.copy_location(definition, handler))
        handler.body = [syntax.copy_location(syntax.expr_stmt(syntax.call(syntax.name(fn_name))), handler.body[0])]
        pairs.append(_pair(caught, syntax.name(fn_name)))
    if not definitions:
        return None
    return definitions, syntax.gast_node(syntax.Tuple, elts=pairs, ctx=syntax.Load())


def _pair(*elts):
    return syntax.gast_node(syntax.Tuple, elts=list(elts), ctx=syntax.Load())


def _may_raise(last, ops: str) -> bool:
    """Can a handler ending with ``last`` end by raising: ``raise E``, or a call (of anything
    but ``print``: ``err(msg)``, ``sys.exit()``)? A handler ending otherwise (``pass``) recovers."""
    if isinstance(last, syntax.Raise):
        return True
    value = last.value if isinstance(last, syntax.Expr) else None
    return isinstance(value, syntax.Call) and syntax.unparse(value.func) != f"{ops}.print"


def _binds_nothing(stmts) -> bool:
    """Do ``stmts`` hold only expression statements, ``raise E`` and ``pass``, binding no name
    (no ``:=``, no bare ``raise``, which needs the handled exception)?"""
    for stmt in stmts:
        if not isinstance(stmt, _HANDLER_STATEMENTS) or isinstance(stmt, syntax.Raise) and stmt.exc is None:
            return False
        if any(isinstance(n, (syntax.NamedExpr, syntax.Yield, syntax.YieldFrom)) for n in syntax.walk(stmt)):
            return False
    return True


_BLOCKS: dict = {}  # statement class -> its fields in ``syntax.BLOCK_FIELDS``
_HOLDERS = (syntax.ExceptHandler, syntax.match_case)


def _calls_user_code(stmts, ops: str) -> bool:
    """Do ``stmts`` call a function through ``ops.call`` (which converts it, and may stage a
    raise in it)? Nested functions and lambdas aside."""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if (
            isinstance(node, syntax.Call)
            and isinstance(node.func, syntax.Attribute)
            and node.func.attr in ("call", "call_writing")
            and isinstance(node.func.value, syntax.Name)
            and node.func.value.id == ops
        ):
            return True
        if not isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            todo.extend(syntax.iter_child_nodes(node))
    return False


def _tries(fn_node) -> list:
    """The ``try`` and ``with`` statements in ``fn_node`` (``syntax.walk_statements``, inlined: this looks
    at every statement of the converted function, which most often holds no ``try``). Each
    ``try`` wraps its own body, so the order does not matter."""
    out = []
    stack = [fn_node]
    while stack:
        node = stack.pop()
        kind = node.__class__
        if kind is syntax.Try or kind is syntax.With or kind is syntax.AsyncWith:
            out.append(node)
        fields = _BLOCKS.get(kind)
        if fields is None:
            fields = _BLOCKS[kind] = tuple(f for f in syntax.BLOCK_FIELDS if f in kind._fields)
        for field in fields:
            for child in getattr(node, field, None) or ():
                if child.__class__ in _HOLDERS:
                    stack.extend(child.body)
                else:
                    stack.append(child)
    return out


_FINALLY = """
if not ops_refusing():
    body
"""


def _finally_guards(fn_node, ctx) -> None:
    """A ``finally`` block runs only where no refusal of autolax's is on its way out through
    it (``ops.refusing()``): while tracing, an error of the block (a variable the ``try`` had
    not bound yet, an operation on a value the refused statement left as it was) would
    replace autolax's error with one Python does not raise."""
    for node in _tries(fn_node):
        if node.__class__ is syntax.Try and node.finalbody:
            guarded = templates.replace(
                _FINALLY, ops_refusing=syntax.dotted(f"{ctx.ops}.refusing"), body=node.finalbody
            )
            node.finalbody = syntax.copy_locations(guarded, node.finalbody[0])


def transform(fn_node, ctx):
    _catching(fn_node, ctx)
    _finally_guards(fn_node, ctx)
    checks, needs_value = _may_stage_a_check(fn_node, ctx.ops)
    if not checks and not needs_value:
        return fn_node
    decorator = syntax.dotted(f"{ctx.ops}.function")
    if checks:
        decorator = syntax.call(decorator, keywords={"checks": syntax.constant(True)})
    # At the `def` line: a traceback through the decorator's wrapper shows the header.
    syntax.copy_location(decorator, fn_node)
    # Last: applied first, before any decorator of the user's (``jax.jit`` wraps the result).
    fn_node.decorator_list = list(fn_node.decorator_list) + [decorator]
    ctx.wrapper = "checks" if checks else "function"
    return fn_node
