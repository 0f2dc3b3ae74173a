"""Finds a function's source and parses it with its real positions in its file.

Positions matter: converted code is compiled with the original file name and line numbers,
so tracebacks, warnings and the trace report point at the user's own lines.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import linecache
import re
import textwrap
from dataclasses import dataclass

from autolax.frontend.transpile import staleness, syntax


class SourceUnavailable(Exception):
    """Internal: the source of a function cannot be found or parsed (see NoSourceWarning)."""


class SourceChanged(SourceUnavailable):
    """Internal: the source found is not the code running (see autolax.SourceChangedError)."""


@dataclass
class FunctionSource:
    node: object  # syntax.FunctionDef; lambdas are turned into one
    filename: str
    file_lines: list
    is_lambda: bool


def _lambda_to_def(lam, name: str):
    fn = syntax.function_def(name, [], [syntax.copy_location(syntax.ret(lam.body), lam.body)])
    fn.args = lam.args
    return syntax.copy_location(fn, lam)


def _pick_lambda(tree, code):
    n_args = code.co_argcount + code.co_kwonlyargcount
    arg_names = list(code.co_varnames[:n_args])
    candidates = [
        node
        for node in syntax.walk(tree)
        if isinstance(node, syntax.Lambda)
        and node.lineno == code.co_firstlineno
        and [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs] == arg_names
    ]
    if len(candidates) > 1:
        cols = {p[2] for p in code.co_positions() if p[0] == code.co_firstlineno and p[2] is not None}
        candidates = [c for c in candidates if c.body.col_offset in cols]
    if len(candidates) != 1:
        raise SourceUnavailable("cannot tell which lambda on its line this is")
    return candidates[0]


@functools.lru_cache(maxsize=64)
def _parsed_file(filename: str, text: str):
    """The whole file's syntax tree (cached: every function of a file shares one parse)."""
    return ast.parse(text, filename)


def _def_in_file(code):
    """The ``def`` of ``code`` found in its whole file's tree, with real positions; None if
    the file does not parse as a whole (e.g. a notebook cell holding IPython syntax)."""
    lines = linecache.getlines(code.co_filename)
    if not lines or code.co_name == "<lambda>":
        return None
    found = _def_in_statement(code, lines)
    if found is not None:
        return syntax.from_ast(found), lines
    try:
        tree = _parsed_file(code.co_filename, "".join(lines))
    except (SyntaxError, ValueError):
        return None
    node = _find_def(tree, code)
    if node is None:
        return None
    _check_fresh(code, node, tree)
    return syntax.from_ast(node), lines


def _find_def(tree, code):
    # The top-level statements first: ast.walk goes breadth first, so it meets them first
    # too, and a top-level function (the usual case) is found without a walk of the tree.
    for node in itertools.chain(tree.body, ast.walk(tree)):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == code.co_name
            and min([d.lineno for d in node.decorator_list] + [node.lineno]) == code.co_firstlineno
        ):
            return node
    return None


def _def_in_statement(code, lines):
    """The quick way to what ``_def_in_file`` finds: parse only the top-level statement
    around ``code``'s first line, and take its ``def`` if compiling that statement (after
    the file's imports) gives ``code`` (see ``staleness.compiled_from``). None where that
    does not settle it; the whole file then decides, as before: parsing and compiling a long
    file costs many times converting one function of it.

    The statement's lines are guessed from the indentation: from the last line at column 0
    at or above the ``def`` to the next one below it (closing brackets and ``else``-like
    clauses continue a statement). A wrong guess cuts a string, a bracket or a block, so it
    does not parse, or it does not compile to ``code``."""
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return None
    start = first
    while start >= 0 and not _starts_statement(lines[start]):
        start -= 1
    if start < 0:
        return None
    end = first + 1
    while end < len(lines) and not _starts_statement(lines[end]):
        end += 1
    # Blank lines before the statement keep its line numbers those of the file.
    text = "\n" * start + "".join(lines[start:end])
    try:
        tree = ast.parse(text, code.co_filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1:
        return None
    node = _find_def(tree, code)
    if node is None or not staleness.compiled_from(
        code, tree.body[0], _imports(lines, _global_names(code)), code.co_filename
    ):
        return None
    return node


# An import statement (at any depth: only those of the module's own scope matter, the
# others may make the comparison fail, which only costs the slow way).
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t][^\n]*)", re.MULTILINE
)


def _imports(lines, names=None) -> list:
    """The import statements of a file, parsed (without ``from __future__``, whose flags
    the code object carries): the compiler calls a method of an imported module
    differently (Python 3.11: ``LOAD_ATTR``, not ``LOAD_METHOD``). ``names``: if given,
    only the statements that may bind one of them (a word of the statement is one, or a
    ``*`` import): the
    compiler asks only about the names the code uses, so the others change nothing, and
    most functions use few of a file's imports (parsing them all cost about 5% of a
    conversion)."""
    found = [m.group().strip() for m in _import_matches(lines)]
    if names is not None:
        found = [text for text in found if "*" in text or not names.isdisjoint(_WORD.findall(text))]
    try:
        stmts = ast.parse("\n".join(found)).body
    except (SyntaxError, ValueError):
        stmts = []
        for text in found:
            try:
                stmts += ast.parse(text).body
            except (SyntaxError, ValueError):
                pass
    return [
        s for s in stmts if isinstance(s, ast.Import) or (isinstance(s, ast.ImportFrom) and s.module != "__future__")
    ]


_WORD = re.compile(r"\w+")


def _global_names(code) -> set:
    """The names ``code`` and the code nested in it look up as attributes or globals
    (``co_names``): the only names an import can matter to when compiling it."""
    names = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, type(code)))
    return names


def _import_matches(lines):
    """``_IMPORT.finditer("".join(lines))``, trying the pattern only at the start of the lines
    that hold the word ``import`` (a search at every character of a long file costs more
    than the rest of finding a function's source): a match starts at a line's start (``^``)
    and has ``import`` on its first line."""
    text = "".join(lines)
    end = 0  # where the last match ended: finditer's matches do not overlap
    at = text.find("import")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        if start >= end:
            match = _IMPORT.match(text, start)
            if match is not None:
                end = match.end()
                yield match
        next_line = text.find("\n", at)
        if next_line == -1:
            break
        at = text.find("import", next_line + 1)


_CONTINUATION = re.compile(r"(else|elif|except|finally)\b")


def _starts_statement(line: str) -> bool:
    """Does ``line`` look like the first line of a top-level statement?"""
    return bool(line) and line[0] not in " \t\r\n\f#)]}" and not _CONTINUATION.match(line)


def function_source(fn) -> FunctionSource:
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailable(f"{fn!r} is not a Python function")
    found = _def_in_file(code)
    if found is not None:
        node, file_lines = found
        node.decorator_list = []
        return FunctionSource(node=node, filename=code.co_filename, file_lines=file_lines, is_lambda=False)
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise SourceUnavailable(str(exc)) from None
    filename = code.co_filename
    file_lines = linecache.getlines(filename) or lines
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = next((ln for ln in lines if ln.strip()), "")
    indent = len(first) - len(first.lstrip())
    is_lambda = code.co_name == "<lambda>"
    try:
        tree = syntax.parse(dedented)
    except SyntaxError:
        if not is_lambda:
            raise SourceUnavailable("its source does not parse on its own") from None
        try:  # a lambda inside a multi-line expression: parse just that expression
            tree = syntax.parse("(\n" + dedented + "\n)")
            start -= 1
        except SyntaxError:
            node = _lambda_in_file(code)  # e.g. a lambda in a dict entry, whose line alone does not parse
            if node is None:
                raise SourceUnavailable("the source line of this lambda does not parse on its own") from None
            return FunctionSource(node=node, filename=filename, file_lines=file_lines, is_lambda=True)
    syntax.shift_locations(tree, start - 1, indent)
    if is_lambda:
        node = _lambda_to_def(_pick_lambda(tree, code), "lambda_fn")
    else:
        defs = [n for n in tree.body if isinstance(n, (syntax.FunctionDef, syntax.AsyncFunctionDef))]
        if not defs or defs[0].name != code.co_name:
            raise SourceUnavailable("its source is not a `def` statement")
        node = defs[0]
        _check_fresh(code, syntax.to_ast(node))
    node.decorator_list = []
    return FunctionSource(node=node, filename=filename, file_lines=file_lines, is_lambda=is_lambda)


def _lambda_in_file(code):
    """The lambda of ``code`` found in its whole file's tree, turned into a ``def``; None if
    the file does not parse or the lambda cannot be told from others on its line."""
    lines = linecache.getlines(code.co_filename)
    try:
        tree = _parsed_file(code.co_filename, "".join(lines))
    except (SyntaxError, ValueError):
        return None
    on_line = [
        syntax.expr_stmt(syntax.from_ast(n))
        for n in ast.walk(tree)
        if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
    ]
    try:
        return _lambda_to_def(_pick_lambda(syntax.Module(body=on_line, type_ignores=[]), code), "lambda_fn")
    except SourceUnavailable:
        return None


def _check_fresh(code, ast_node, tree=None):
    """Refuses a source edited since the function was defined (see autolax.frontend.transpile.staleness)."""
    if not staleness.matches(code, ast_node, code.co_filename, tree):
        raise SourceChanged(
            f"{code.co_filename} changed after '{code.co_qualname}' was defined; its source no "
            "longer matches its code (define it again: re-import the module or re-run the cell)"
        )
