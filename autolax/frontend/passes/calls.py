"""Calls that may reach user code go through ``ops.call``, which converts the callee.

    y = helper(x)          ->   y = ops.call(helper, x)
    y = self.step(x)       ->   y = ops.call(self.step, x)
    print('x =', x)        ->   ops.print('x =', x)
    min(a, b)              ->   ops.min(a, b)       (also max, any, all)
    super().f(x)           ->   ops.call(super(__class__, self).f, x)
    logging.warning(m)     ->   ops.host_call(logging.warning, m)

``ops.host_call`` (and ``ops.call``) refuse output other than ``print`` -- logging,
``warnings.warn``, ``sys.stdout.write`` -- inside a staged body, where it would run once,
while tracing (``libraries.host_output``); elsewhere the call runs as written.

A call is left as it is when its callee is known at conversion time to be library code: a
builtin, or a name or module attribute that resolves to a function, class or module of JAX,
NumPy, the standard library or another installed package, or when it is a method call
whose name is a method of arrays or builtin containers (``x.sum()``, ``lst.pop()``,
``d.items()``). Other method calls (``self.step(x)``, ``model.apply(x)``) are converted.

A call of a library transform that takes functions goes through ``ops.call`` too, which
converts the user functions among its arguments (``autolax.runtime.transforms``), unless those are
only lambdas (converted with this function):

    ys = jax.vmap(step)(xs)  ->   ys = ops.call(ops.call(jax.vmap, step), xs)
"""

from __future__ import annotations

import builtins
import string
import types

import jax
import numpy as np

from autolax.frontend.analysis.activity import local_names
from autolax.frontend.transpile import anno, syntax
from autolax.runtime.libraries import (
    HOST_OUTPUT_PATHS,
    host_io,
    host_output,
    is_host_io_path,
    is_library_callable,
    is_math_function,
)
from autolax.runtime.transforms import is_rebuilt, is_transform

# Always runs (``pipeline.features``): almost every function calls something.
NEEDS = None

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(self, x, a, b, m):
            y = helper(x)
            y = self.step(y)
            print('x =', x)
            z = min(a, b)
            logging.warning(m)
            return super().f(y + z)
        """,
        """\
        def f(self, x, a, b, m):
            y = ops.call(helper, x)
            y = ops.call(self.step, y)
            ops.print('x =', x)
            z = ops.min(a, b)
            ops.host_call(logging.warning, m)
            return ops.call(super(__class__, self).f, y + z)
        """,
    ),
    (
        """\
        def f(step, xs):
            ys = jax.vmap(step)(xs)
            return jnp.sum(ys) + xs.sum()
        """,
        """\
        def f(step, xs):
            ys = ops.call(ops.call(jax.vmap, step), xs)
            return jnp.sum(ys) + xs.sum()
        """,
    ),
)

# Methods of arrays and builtin containers: `x.sum()`, `lst.pop()`, `d.items()` are library
# calls. A call of another method on a local value (`model.step(x)`) may be user code -- also
# one named like a method of strings or numbers only (`finder.find(xs)`, `parser.split(x)`):
# it goes through `ops.call`, which calls a builtin's method as it is.
_LIBRARY_METHODS = frozenset().union(*(dir(t) for t in (jax.Array, np.ndarray, list, dict, set, tuple)))


def _literal_format(node) -> bool:
    """Is ``node`` ``"...".format(a, b)``: a string literal's ``format`` with positional
    arguments only, whose fields are all automatic (``{}``) or all numbered (``{0}``), each
    naming one of them, with no field in a format spec -- what ``ops.fstring`` formats
    exactly as ``str.format`` does?"""
    if not (
        isinstance(node, syntax.Call)
        and isinstance(node.func, syntax.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, syntax.Constant)
        and isinstance(node.func.value.value, str)
        and node.args
        and not node.keywords
        and not any(isinstance(a, syntax.Starred) for a in node.args)
    ):
        return False
    try:
        fields = [
            (name, spec) for _, name, spec, _ in string.Formatter().parse(node.func.value.value) if name is not None
        ]
    except ValueError:
        return False
    names = {name for name, _ in fields}
    if not fields or any("{" in (spec or "") for _, spec in fields):
        return False
    if names == {""}:
        return len(fields) <= len(node.args)
    return all(name.isdigit() and int(name) < len(node.args) for name in names)


def _escaped(text) -> str:
    """Literal text of an f-string in ``str.format``'s syntax."""
    return str(text).replace("{", "{{").replace("}", "}}")


def _field(part, spec=None) -> str | None:
    """An f-string's field in ``str.format``'s syntax (``{x!r:>8}`` -> ``{!r:>8}``), with
    ``spec`` for its format spec; without ``spec``, a field inside a format spec, whose own
    spec must be literal text (None if not)."""
    conversion = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[part.conversion]
    if spec is None:
        pieces = part.format_spec.values if part.format_spec is not None else ()
        if not all(isinstance(p, syntax.Constant) for p in pieces):
            return None
        spec = "".join(str(p.value) for p in pieces)
    return "{" + conversion + (":" + spec if spec else "") + "}"


class _Transformer(anno.ProgramTransformer):
    def __init__(self, ctx, local_names, first_param, callees):
        self.loop_ranges: set = set()
        self.ctx = ctx
        self.local_names = local_names
        self.first_param = first_param
        self.callees = callees  # id(callee) -> (callee, what _callee says of it)

    def _static_value(self, node):
        """The value of a ``name`` / ``module.attr`` callee, or MISSING if not known now."""
        missing = self.ctx.MISSING
        if isinstance(node, syntax.Name):
            return self.ctx.resolve(node.id, self.local_names)
        if isinstance(node, syntax.Attribute):
            base = self._static_value(node.value)
            if base is missing or not isinstance(base, types.ModuleType):
                return missing
            return getattr(base, node.attr, missing)
        return missing

    def _fstring(self, node):
        """``f"x = {x:.2f}"`` -> ``ops.fstring('x = {:.2f}', x)``, formatted when printed (a
        traced ``x`` has its value only then). A field's value that is an f-string itself
        (``f"{f'{x:.1f}'!s:>8}"``) is one too; a field in a format spec (``{x:>{width}}``)
        is a field of the template (``'{:>{}}'``, ``x, width``). Left as it is without a
        field. ``"x = {:.2f}".format(x)`` (a string literal's ``format`` with positional
        arguments for its fields) is the same."""
        if (
            isinstance(node, syntax.BinOp)
            and isinstance(node.op, syntax.Mod)
            and isinstance(node.left, syntax.Constant)
            and isinstance(node.left.value, str)
        ):
            # `"t = %6.3f" % t`: formatted when printed where `t` is traced (ops.percent)
            call = syntax.call(f"{self.ctx.ops}.percent", [node.left, node.right])
            return syntax.copy_location(call, node)
        if _literal_format(node):
            call = syntax.call(f"{self.ctx.ops}.fstring", [syntax.deepcopy(node.func.value), *node.args])
            return syntax.copy_location(call, node)
        if not isinstance(node, syntax.JoinedStr):
            return node
        template, values = [], []
        for part in node.values:
            if isinstance(part, syntax.Constant):
                template.append(_escaped(part.value))
                continue
            text, spec_values = "", []
            for piece in part.format_spec.values if part.format_spec is not None else ():
                if isinstance(piece, syntax.Constant):
                    text += str(piece.value)
                    continue
                inner = _field(piece)
                if inner is None:
                    return node
                text += inner
                spec_values.append(self._fstring(piece.value))
            template.append(_field(part, text))
            values += [self._fstring(part.value), *spec_values]
        if not values:
            return node
        call = syntax.call(f"{self.ctx.ops}.fstring", [syntax.constant("".join(template)), *values])
        return syntax.copy_location(call, node)

    def _rooted_in_self(self, node) -> bool:
        while isinstance(node, syntax.Attribute):
            node = node.value
        return isinstance(node, syntax.Name) and node.id == self.first_param

    def _callee(self, value) -> str:
        """What a call of ``value`` (known now) becomes: "host_call" (library output),
        "transform" (a library transform), "convert" (``ops.call``) or "library" (left as
        it is). The same callee is asked about once per conversion (``jnp.zeros`` ...)."""
        known = self.callees.get(id(value))
        if known is not None:
            return known[1]
        if _host_output(value):
            answer = "host_call"
        elif is_transform(value):
            answer = "transform"
        elif not is_library_callable(value) or is_rebuilt(value, lambda fn: not is_library_callable(fn)):
            answer = "convert"  # a `jax.custom_jvp` of a user function is converted too
        else:
            answer = "library"
        self.callees[id(value)] = (value, answer)
        return answer

    def _wants_conversion(self, func) -> bool:
        """Whether a call of ``func``, whose value is not known now, goes through ``ops.call``."""
        if isinstance(func, syntax.Name):
            return True  # local function, parameter, or a global defined later
        if isinstance(func, syntax.Attribute):
            if isinstance(func.value, (syntax.Constant, syntax.JoinedStr)):
                return False  # `", ".join(names)`: a literal's method is a builtin's
            return self._rooted_in_self(func) or func.attr not in _LIBRARY_METHODS
        return True  # fs[i](x), make()(x), (lambda: ...)()

    def _emitted(self, func) -> bool:
        """Is this the runtime, called by code an earlier pass emitted (``ops.append``,
        ``ops.at(x)[i].set``)? -- not a method of what a user call returned
        (``ops.call(Local).step``: ``Local().step(x)``)."""
        while isinstance(func, (syntax.Attribute, syntax.Subscript, syntax.Call)):
            if isinstance(func, syntax.Call):
                callee = func.func
                if isinstance(callee, syntax.Attribute) and callee.attr == "call" and self._is_ops(callee.value):
                    return False
                func = callee
            else:
                func = func.value
        return self._is_ops(func)

    def _is_ops(self, node) -> bool:
        return isinstance(node, syntax.Name) and node.id == self.ctx.ops

    def visit_For(self, node):
        self.loop_ranges.add(id(node.iter))  # `for i in range(...)` itself: ops.for_range
        return super().visit_For(node)

    def visit_FunctionDef(self, node):
        inner = _function_transformer(self.ctx, node, self.callees, self.local_names)
        node.body = [inner.visit(s) for s in node.body]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        ops = self.ctx.ops
        if self._emitted(func):
            return node
        value = self._static_value(func)
        if isinstance(func, syntax.Name):
            if func.id == "print" and value is builtins.print:
                node.func = syntax.copy_location(syntax.dotted(f"{ops}.print"), func)
                node.args = [self._fstring(a) for a in node.args]
                return node
            if func.id in ("min", "max", "any", "all", "int", "float") and value is getattr(builtins, func.id):
                # Python's answer for traced numbers (`peak = max(peak, x)`, `any([a > 0, b > 0])`,
                # `p = int(jnp.argmax(col)) + k`), where the builtin would ask JAX for a Python value
                node.func = syntax.copy_location(syntax.dotted(f"{ops}.{func.id}"), func)
                return node
            if func.id == "range" and value is builtins.range and id(node) not in self.loop_ranges:
                # `r = range(n)` then `for i in r`: a range whose bounds may be traced
                node.func = syntax.copy_location(syntax.dotted(f"{ops}.range"), func)
                return node
            if func.id == "super" and not node.args and self.first_param and "__class__" in self.ctx.closure:
                node.args = [syntax.name("__class__"), syntax.name(self.first_param)]
                return node
        if node.args and (is_like_function(value) if value is not self.ctx.MISSING else _numpy_like_by_name(func)):
            # `np.zeros_like(x)`: NumPy's array of x's shape, also for a traced `x` (ops.like)
            new = syntax.Call(func=syntax.dotted(f"{ops}.like"), args=[func] + node.args, keywords=node.keywords)
            return syntax.copy_location(new, node)
        if value is not self.ctx.MISSING and is_math_function(value):
            # `math.sqrt(x)`: Python's call, or jnp's for a traced `x` (ops/pymath.py)
            new = syntax.Call(func=syntax.dotted(f"{ops}.math_call"), args=[func] + node.args, keywords=node.keywords)
            return syntax.copy_location(new, node)
        callee = self._callee(value) if value is not self.ctx.MISSING else None
        if callee == "host_call":
            # `logging.warning(...)`, `warnings.warn(...)`: library code, but output that a
            # staged body must not write while traced (ops.host_call refuses it there)
            new = syntax.Call(func=syntax.dotted(f"{ops}.host_call"), args=[func] + node.args, keywords=node.keywords)
            return syntax.copy_location(new, node)
        if callee == "transform":
            if all(isinstance(a, (syntax.Lambda, syntax.Constant)) for a in _arguments(node)):
                return node  # nothing to convert: a lambda here is converted with this function
        elif callee == "library" or callee is None and not self._wants_conversion(func):
            return node
        new = syntax.Call(func=syntax.dotted(f"{ops}.call"), args=[func] + node.args, keywords=node.keywords)
        return syntax.copy_location(new, node)


def _host_output(value) -> bool:
    """Is ``value`` a library callable that writes output autolax does not stage
    (``libraries.host_output``): the function itself, or, for ``autolax convert``, the
    stand-in for its dotted path (a module object named ``logging.warning``)?"""
    if isinstance(value, types.ModuleType):
        name = getattr(value, "__name__", None)
        return name in HOST_OUTPUT_PATHS or (isinstance(name, str) and "." in name and is_host_io_path(name))
    return host_output(value) is not None or host_io(value) is not None


# NumPy's `*_like` functions, which read only the shape and dtype of their first argument:
# for a traced one (`out = np.zeros_like(x)`) NumPy would ask JAX for its values, so their
# calls go through `ops.like`. Known by identity, or (`autolax convert`) by the dotted path
# the file imports them under.
LIKE_PATHS = frozenset(f"numpy.{name}" for name in ("zeros_like", "ones_like", "empty_like", "full_like"))
_LIKE_FUNCTIONS = frozenset(id(getattr(np, path[len("numpy.") :])) for path in LIKE_PATHS)


def is_like_function(value) -> bool:
    """Is ``value`` one of ``LIKE_PATHS`` (the function, or the CLI's stand-in for its path)?"""
    if isinstance(value, types.ModuleType):
        return getattr(value, "__name__", None) in LIKE_PATHS
    return id(value) in _LIKE_FUNCTIONS


def _numpy_like_by_name(func) -> bool:
    """``np.zeros_like`` where ``np`` is not known when converting (a file's fragment): by
    the name NumPy goes by (``ops.like`` calls it as it is unless it is NumPy's)."""
    return (
        isinstance(func, syntax.Attribute)
        and isinstance(func.value, syntax.Name)
        and func.value.id in ("np", "numpy", "onp")
        and f"numpy.{func.attr}" in LIKE_PATHS
    )


def _arguments(call):
    return [a.value if isinstance(a, syntax.Starred) else a for a in call.args] + [k.value for k in call.keywords]


def _function_transformer(ctx, node, callees, outer_locals=frozenset()):
    params = syntax.param_names(node.args)
    first = params[0] if params and params[0] in ("self", "cls") else None
    return _Transformer(ctx, set(outer_locals) | local_names(node), first, callees)


def transform(fn_node, ctx):
    transformer = _function_transformer(ctx, fn_node, {})
    fn_node.body = [transformer.visit(s) for s in fn_node.body]
    return fn_node
