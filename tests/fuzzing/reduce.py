"""Shrinks a failing program: deletes statements, inlines blocks and simplifies
expressions while the same mismatch persists (greedy delta debugging over the AST).

"The same mismatch" is the same path and category (and, for an exception, the same
exception type), on the same plans of arguments (they depend on the seed only).
``reduce_seed(seed)`` returns a report: the reduced program, its inputs, and what Python
and every path did on them.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import signal

from .generator import generate
from .paths import ALL_PATHS, Workspace, make_shell
from .runner import check_program, configured


def reduce_seed(seed, *, paths=ALL_PATHS, big=False, focus=None, idioms=False, source=None, max_checks=600,
                show=ALL_PATHS) -> str:
    """Shrinks program ``seed`` while the first mismatch found on ``paths`` persists; the
    report shows what every path of ``show`` does with the result."""
    source = source if source is not None else generate(seed, big, focus, idioms)
    with configured():
        ws = Workspace()
        shell = make_shell() if "magic" in paths else None
        try:
            first = check_program(seed, source=source, paths=paths, workspace=ws, shell=shell)
            if not first.failures:
                return f"program {seed} has no mismatch on {', '.join(paths)}"
            target = first.failures[0]
            want = _key(target)

            def still_fails(text):
                try:
                    compile(text, "<reduce>", "exec")
                except SyntaxError:
                    return False
                try:
                    with _time_limit(20):  # a cut can make a `while` loop endless
                        r = check_program(seed, source=text, paths=(target.path,), workspace=ws, shell=shell, stats=False)
                except _TimeUp:
                    return False
                return any(_key(f) == want for f in r.failures)

            reduced = shrink(source, still_fails, max_checks)
            log = []
            if "magic" in show and shell is None:
                shell = make_shell()
            check_program(seed, source=reduced, paths=show, workspace=ws, shell=shell, stats=False, log=log)
        finally:
            ws.close()
    return describe(seed, target, reduced, log)


def _key(failure):
    """What must stay the same while a program shrinks: the path, the category, the type of
    the exception the path raised and what Python did (returned, or raised which type)."""
    python = failure.python.split(":")[0]
    return failure.path, failure.category, failure.error.split(":")[0], python if python.startswith("raised") else "returned"


class _TimeUp(BaseException):
    """Raised by ``_time_limit`` (a BaseException: the runner records Exceptions as outcomes)."""


@contextlib.contextmanager
def _time_limit(seconds):
    def up(signum, frame):
        raise _TimeUp()

    previous = signal.signal(signal.SIGALRM, up)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def explain(source: str, inputs, static=(), paths=ALL_PATHS) -> str:
    """What Python and every path do with ``source`` on each argument tuple of ``inputs``
    (``static``: the static_argnums of a second plan on the same inputs)."""
    from .runner import Plan

    plans = [Plan((), list(inputs), "all traced")]
    if static:
        plans.append(Plan(tuple(static), list(inputs), f"static {tuple(static)}"))
    return explain_plans(source, plans, paths)


def explain_plans(source: str, plans, paths=ALL_PATHS) -> str:
    """What Python and every path do with ``source`` on each plan of arguments."""
    log = []
    with configured():
        ws = Workspace()
        shell = make_shell() if "magic" in paths else None
        try:
            check_program(0, source=source, paths=paths, plans=plans, workspace=ws, shell=shell, stats=False, log=log)
        finally:
            ws.close()
    return describe(None, None, source, log, everything=True)


def describe(seed, target, reduced, log, everything=False) -> str:
    from .runner import _show

    lines = [f"program {seed}, reduced; the mismatch: [{target.path}] {target.category}", ""] if target else []
    lines += [reduced.rstrip(), ""]
    by_plan: dict = {}
    for path, plan, args, python, got, verdict in log:
        by_plan.setdefault((plan.label, tuple(_show(a) for a in args)), []).append((path, python, got, verdict))
    for (label, args), rows in by_plan.items():
        if all(v == "ok" for *_, v in rows) and not everything:
            continue
        static = f"  ({label})" if label else ""
        lines.append(f"f({', '.join(args)}){static}")
        lines.append(f"  Python: {rows[0][1]}")
        groups: dict = {}
        for path, _, got, verdict in rows:
            groups.setdefault((_tidy(got), verdict), []).append(path)
        for (got, verdict), paths in groups.items():
            lines.append(f"  {', '.join(paths)}: {got}" + ("" if verdict == "ok" else f"   <- {verdict}"))
        lines.append("")
    return "\n".join(lines)


def _tidy(label: str) -> str:
    """A path's outcome without what differs between paths but says nothing: temporary file
    names, JAX's typed Python scalars."""
    import re

    label = re.sub(r"/tmp/autolax-fuzz-[^/]+/fuzz_\d+(_\w+)?\.py", "<file>", label)
    label = re.sub(r"In\[\d+\]", "<file>", label)
    label = re.sub(r"Typed(?:Float|Int)\(([^,]+), dtype=\w+\)", r"\1", label)
    return label


def shrink(source: str, still_fails, max_checks=600) -> str:
    """The smallest text found by repeatedly applying one simplification that keeps
    ``still_fails(text)`` true."""
    checks = 0
    best = ast.unparse(ast.parse(source)) + "\n"
    if not still_fails(best):
        best = source
    changed = True
    while changed and checks < max_checks:
        changed = False
        for candidate in _candidates(best):
            if checks >= max_checks:
                break
            checks += 1
            if len(candidate) < len(best) and still_fails(candidate):
                best = candidate
                changed = True
                break
    return best


def _candidates(source: str):
    """Simpler variants of ``source``, biggest cuts first."""
    tree = ast.parse(source)
    n = sum(1 for _ in ast.walk(tree))
    for index in range(n):
        for variant in _variants(tree, index):
            try:
                yield ast.unparse(ast.fix_missing_locations(variant)) + "\n"
            except (AttributeError, TypeError, ValueError):
                continue


def _variants(tree, index):
    """Trees with node number ``index`` (in ``ast.walk`` order) deleted or simplified."""
    node = _nth(tree, index)
    # statements: delete them, or replace a compound statement by one of its bodies
    for parent_index, field in _containers(tree, node):
        t = copy.deepcopy(tree)
        parent = _nth(t, parent_index)
        body = getattr(parent, field)
        i = next(k for k, s in enumerate(body) if ast.dump(s) == ast.dump(node))
        if isinstance(node, ast.Import):
            continue
        if isinstance(node, ast.FunctionDef) and node.name == "f":
            continue
        for replacement in _replacements(node):
            t2 = copy.deepcopy(t)
            body2 = getattr(_nth(t2, parent_index), field)
            body2[i : i + 1] = copy.deepcopy(replacement)
            if not body2 and field in ("body", "finalbody") or (field == "handlers" and not body2):
                body2.append(ast.Pass())
            yield t2
    # expressions: a part in place of the whole
    if isinstance(node, ast.expr):
        for part in _parts(node):
            t = copy.deepcopy(tree)
            target = _nth(t, index)
            _replace_expr(t, target, copy.deepcopy(part))
            yield t


def _replacements(stmt):
    yield []
    if isinstance(stmt, ast.If):
        yield stmt.body
        if stmt.orelse:
            yield stmt.orelse
            yield [ast.If(stmt.test, stmt.body, [])]
    elif isinstance(stmt, (ast.For, ast.While)):
        yield stmt.body
        if stmt.orelse:
            yield [type(stmt)(**{**{f: getattr(stmt, f) for f in stmt._fields}, "orelse": []})]
    elif isinstance(stmt, ast.Try):
        yield stmt.body
        if stmt.finalbody:
            yield stmt.finalbody
        if stmt.orelse:
            yield [ast.Try(stmt.body, stmt.handlers, [], stmt.finalbody)]
    elif isinstance(stmt, ast.FunctionDef):
        pass
    elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple):
        for elt in stmt.value.elts:
            yield [ast.Return(elt)]


def _parts(expr):
    if isinstance(expr, ast.BinOp):
        yield expr.left
        yield expr.right
    elif isinstance(expr, ast.BoolOp):
        yield from expr.values
    elif isinstance(expr, ast.IfExp):
        yield expr.body
        yield expr.orelse
    elif isinstance(expr, ast.UnaryOp):
        yield expr.operand
    elif isinstance(expr, ast.Compare) and len(expr.comparators) > 1:
        yield ast.Compare(expr.left, expr.ops[:1], expr.comparators[:1])
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("abs",) and expr.args:
        yield expr.args[0]
    elif isinstance(expr, ast.Tuple) and len(expr.elts) > 1 and isinstance(expr.ctx, ast.Load):
        for elt in expr.elts:
            yield elt
    elif isinstance(expr, ast.List) and len(expr.elts) > 1:
        for k in range(len(expr.elts)):
            yield ast.List(expr.elts[:k] + expr.elts[k + 1 :], ast.Load())


def _nth(tree, index):
    for k, node in enumerate(ast.walk(tree)):
        if k == index:
            return node
    raise IndexError(index)


def _containers(tree, node):
    """(index of the parent, field) of every statement list holding ``node``."""
    for k, parent in enumerate(ast.walk(tree)):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(parent, field, None)
            if isinstance(stmts, list) and any(s is node for s in stmts):
                yield k, field


def _replace_expr(tree, target, new):
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is target:
                        value[i] = new
                        return
