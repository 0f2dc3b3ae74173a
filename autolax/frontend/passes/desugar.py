"""``match`` statements and assignment expressions in ``while`` tests, written with ``if``
and ``break`` (which the later passes stage).

    match k:                          if k == 0:
        case 0:                           y = x
            y = x                 ->  elif ops.is_sequence(k, 2) and k[0] > k[1]:
        case [a, b] if a > b:             a = k[0]
            y = a                         b = k[1]
        case _:                           y = a
            y = -x                    else:
                                          y = -x

    while (y := f(x)) < 10:           while True:
        x = y                 ->          if not (y := f(x)) < 10:
                                              break
                                          x = y

``case None`` / ``True`` / ``False`` test identity, for a traced subject as for the Python
scalar it stands for (``ops.is_singleton``). Supported ``case`` patterns: literals and
constants (``case 0``, ``case Color.RED``),
``None`` / ``True`` / ``False``, captures and ``_``, ``as``, ``|`` without captures, and
sequences of a fixed length (``case [a, b]``), each with an optional guard. The subject is
evaluated once. Class, mapping and star patterns are refused with a ``ConversionError``.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax
from autolax.runtime.errors import ConversionError

# Runs where there is a ``match`` or a ``:=`` (``pipeline.features``).
NEEDS = frozenset({"Match", "NamedExpr"})

# Before / after: what this pass makes of each function (a third item: the passes run
# first, whose work it reads). tests/test_pass_examples.py runs them.
EXAMPLES = (
    (
        """\
        def f(k, x):
            match k:
                case 0:
                    y = x
                case [a, b] if a > b:
                    y = a
                case _:
                    y = -x
            return y
        """,
        """\
        def f(k, x):
            if k == 0:
                y = x
            elif ops.is_sequence(k, 2) and k[0] > k[1]:
                a = k[0]
                b = k[1]
                y = a
            else:
                y = -x
            return y
        """,
    ),
    (
        """\
        def f(x):
            while (y := g(x)) < 10:
                x = y
            return x
        """,
        """\
        def f(x):
            while True:
                if not (y := g(x)) < 10:
                    break
                x = y
            return x
        """,
    ),
    (
        """\
        def f(k, x):
            match k:
                case None:
                    y = x
                case 1 | 2:
                    y = -x
                case _:
                    y = 0.0
            return y
        """,
        """\
        def f(k, x):
            if ops.is_singleton(k, None):
                y = x
            elif k == 1 or k == 2:
                y = -x
            else:
                y = 0.0
            return y
        """,
    ),
)

_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


class _Desugar:
    def __init__(self, ctx):
        self.ctx = ctx

    def error(self, node, reason, fix):
        lineno = getattr(node, "lineno", None)
        lines = self.ctx.source_lines
        return ConversionError(
            reason,
            filename=self.ctx.filename,
            lineno=lineno,
            col=getattr(node, "col_offset", None),
            source_line=lines[lineno - 1] if lineno and lineno <= len(lines) else None,
            fix=fix,
        )

    def block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(self.stmt(stmt))
        return out

    def stmt(self, node):
        if isinstance(node, syntax.FunctionDef):
            node.body = self.block(node.body)
            return [node]
        if isinstance(node, _SCOPES):
            return [node]
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], syntax.stmt):
                setattr(node, field, self.block(block))
        for handler in getattr(node, "handlers", None) or []:
            handler.body = self.block(handler.body)
        for case in getattr(node, "cases", None) or []:  # a `match` or `while (y := ...)` inside a case
            case.body = self.block(case.body)
        if isinstance(node, syntax.Match):
            return self.match(node)
        if isinstance(node, syntax.While) and any(isinstance(n, syntax.NamedExpr) for n in syntax.walk(node.test)):
            return [self.while_walrus(node)]
        return [node]

    # ------------------------------------------------------------------ while
    def while_walrus(self, node):
        if node.orelse:
            raise self.error(
                node,
                "a `while` loop whose condition assigns a variable (`:=`) cannot have an `else` clause here",
                "assign the variable before the loop and again at the end of its body",
            )
        exit_test = syntax.copy_location(syntax.if_stmt(syntax.unary_not(node.test), [syntax.Break()]), node.test)
        node.test = syntax.copy_location(syntax.constant(True), node.test)
        node.body = [exit_test] + node.body
        return node

    # ------------------------------------------------------------------ match
    def match(self, node):
        prelude = []
        subject = node.subject
        if not isinstance(subject, syntax.Name):
            temp = self.ctx.namer.new("subject")
            prelude.append(syntax.copy_location(syntax.assign(syntax.name(temp, "store"), subject), node))
            subject = syntax.name(temp)
        orelse = []
        for case in reversed(node.cases):
            test, captures = self.pattern(case.pattern, subject)
            if case.guard is not None:
                guard = _substitute(case.guard, dict(captures))
                test = guard if test is None else syntax.BoolOp(op=syntax.And(), values=[test, guard])
            binds = [
                syntax.copy_location(syntax.assign(syntax.name(n, "store"), syntax.deepcopy(e)), case.pattern)
                for n, e in captures
            ]
            body = binds + case.body
            if test is None:  # irrefutable (Python allows it only as the last case)
                orelse = body
            else:
                orelse = [
                    syntax.copy_location(
                        syntax.if_stmt(syntax.copy_location(test, case.pattern), body, orelse), case.pattern
                    )
                ]
        return prelude + (orelse or [syntax.copy_location(syntax.Pass(), node)])

    def pattern(self, p, subject):
        """(test or None for "always", [(captured name, expression)]) of pattern ``p``."""
        if isinstance(p, syntax.MatchValue):
            return _compare(subject, syntax.Eq(), p.value), []
        if isinstance(p, syntax.MatchSingleton):
            return syntax.call(f"{self.ctx.ops}.is_singleton", [syntax.deepcopy(subject), syntax.constant(p.value)]), []
        if isinstance(p, syntax.MatchAs):
            test, captures = (None, []) if p.pattern is None else self.pattern(p.pattern, subject)
            return test, captures + ([(p.name, subject)] if p.name is not None else [])
        if isinstance(p, syntax.MatchOr):
            tests = []
            for sub in p.patterns:
                test, captures = self.pattern(sub, subject)
                if captures:
                    raise self.error(
                        p,
                        "an `|` pattern that captures names is not supported yet",
                        "write the alternatives as separate `case`s",
                    )
                if test is None:
                    return None, []
                tests.append(test)
            return syntax.BoolOp(op=syntax.Or(), values=tests), []
        if isinstance(p, syntax.MatchSequence) and not any(isinstance(s, syntax.MatchStar) for s in p.patterns):
            tests = [
                syntax.call(f"{self.ctx.ops}.is_sequence", [syntax.deepcopy(subject), syntax.constant(len(p.patterns))])
            ]
            captures = []
            for i, sub in enumerate(p.patterns):
                item = syntax.Subscript(value=syntax.deepcopy(subject), slice=syntax.constant(i), ctx=syntax.Load())
                test, sub_captures = self.pattern(sub, item)
                if test is not None:
                    tests.append(test)
                captures += sub_captures
            return (tests[0] if len(tests) == 1 else syntax.BoolOp(op=syntax.And(), values=tests)), captures
        raise self.error(
            p,
            "this kind of `case` pattern (class, mapping or star pattern) is not supported yet",
            "write the case as an `if` / `elif` test (isinstance, key and length checks)",
        )


def _compare(left, op, right):
    return syntax.Compare(left=syntax.deepcopy(left), ops=[op], comparators=[syntax.deepcopy(right)])


class _Substitute(syntax.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if isinstance(node.ctx, syntax.Load) and node.id in self.names:
            return syntax.copy_location(syntax.deepcopy(self.names[node.id]), node)
        return node


def _substitute(expr, names):
    """``expr`` with the captured names replaced by what they capture (a guard is tested
    before the captures are assigned, in the body)."""
    return _Substitute(names).visit(expr) if names else expr


def transform(fn_node, ctx):
    fn_node.body = _Desugar(ctx).block(fn_node.body)
    return fn_node
