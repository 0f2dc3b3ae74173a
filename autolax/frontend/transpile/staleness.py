"""Is the source autolax found for a function the source it was compiled from?

autolax reads a function's source from its file (``linecache``), which may have been edited
since the function was defined (a module imported before the edit, a notebook that imported
it). Converting the new text would run code the function never had, where Python runs the
old: the converted function must not silently differ from the original. So the text found is
compiled again (never run) as Python compiled it -- the whole file as one module, or, as
IPython and ``%%autolax`` do, the top-level statement alone -- and the function's code object
is compared with the one found at the same place.

Tools that rewrite a module's code on import are tolerated where they only add to it
(pytest's assertion rewriting adds names starting with ``@py``): there the names and
constants of the source must all be in the code.
"""

from __future__ import annotations
import __future__

import ast
import functools
import types

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def matches(code: types.CodeType, node: ast.AST, filename: str, tree: ast.Module | None = None) -> bool:
    """Whether ``node`` (the ``ast`` def found for ``code``, decorators included) is what
    ``code`` was compiled from. ``tree`` is the whole file's tree when the file parses."""
    if code.co_name == "<lambda>":
        return True  # found by line, arguments and columns already
    found = []
    flags = code.co_flags & _FUTURE_FLAGS
    for unit in _units(code, node, tree):
        compiled = (
            _compile_file(unit, filename, flags) if unit is tree else _compile(unit, filename, flags, tree is not None)
        )
        candidate = _find(compiled, code.co_name, code.co_firstlineno) if compiled is not None else None
        if candidate is None:
            continue
        if _same(candidate, code):
            return True
        found.append(candidate)
    if not found:
        return True  # cannot tell (the text does not compile here): trust it
    if _rewritten_by_pytest(code):
        names, consts = _pooled(code)
        fresh_names, fresh_consts = _pooled(found[0])
        return fresh_names <= names and fresh_consts <= consts
    return False


def compiled_from(code: types.CodeType, statement: ast.stmt, imports: list, filename: str) -> bool:
    """Whether compiling ``statement`` -- a top-level statement of ``code``'s file, as
    parsed -- after the file's ``imports`` gives ``code`` (as compiling the whole file would:
    the rest of the file is global names to a function, and of those the compiler only
    tells imported ones apart). False: cannot tell from this alone."""
    unit = ast.Module(body=imports + [statement], type_ignores=[])
    compiled = _compile(unit, filename, code.co_flags & _FUTURE_FLAGS, parsed=True)
    candidate = _find(compiled, code.co_name, code.co_firstlineno) if compiled is not None else None
    return candidate is not None and _same(candidate, code)


def _units(code, node, tree):
    """The modules ``code`` may have been compiled from."""
    if tree is not None:
        yield tree  # a file imported as a whole
        top = next((s for s in tree.body if s.lineno <= node.lineno <= (s.end_lineno or s.lineno)), None)
        if top is not None:
            yield ast.Module(body=[top], type_ignores=[])  # IPython: one statement at a time
        return
    if not code.co_freevars:
        yield ast.Module(body=[node], type_ignores=[])
        return
    # A nested function: its free variables (closure cells, ``__class__`` of a method) as
    # the parameters of an enclosing function.
    params = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=v) for v in code.co_freevars],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )
    where = {"lineno": node.lineno, "col_offset": 0, "end_lineno": node.end_lineno or node.lineno, "end_col_offset": 0}
    factory = ast.FunctionDef(
        name="autolax_factory", args=params, body=[node], decorator_list=[], returns=None, type_comment=None, **where
    )
    yield ast.Module(body=[factory], type_ignores=[])


@functools.lru_cache(maxsize=8)
def _compile_file(tree, filename, flags):
    """A whole file, compiled once for all its functions (keyed by its cached tree)."""
    return _compile(tree, filename, flags, parsed=True)


def _compile(unit, filename, flags, parsed=False):
    """``parsed``: ``unit`` is (part of) a tree from ``ast.parse``, located throughout."""
    try:
        if not parsed:
            ast.fix_missing_locations(unit)
        return compile(unit, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError, RecursionError):
        return None


def _find(code, name, firstlineno):
    """The code object named ``name`` starting at ``firstlineno`` inside ``code``."""
    stack = [code]
    while stack:
        c = stack.pop()
        if c.co_name == name and c.co_firstlineno == firstlineno and c is not code:
            return c
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return None


def _same(a: types.CodeType, b: types.CodeType) -> bool:
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_freevars,
        b.co_cellvars,
    ) or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same(x, y):
                return False
        elif type(x) is not type(y) or (x != y and not (x != x and y != y)):  # NaN is NaN here
            return False
    return True


def _rewritten_by_pytest(code) -> bool:
    names, _ = _pooled(code)
    return any(name.startswith("@py") for name in names)


def _pooled(code):
    """Every name and (hashable, non-code) constant of ``code`` and its nested code."""
    names, consts = set(), set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        names.update(c.co_varnames)
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
            else:
                try:
                    consts.add((type(const), const))
                except TypeError:
                    pass
    return names, consts
