"""``ops.source_lines``: the functions of a file ``autolax convert`` wrote run with the
line numbers of the file it was written from.

``autolax.jit`` compiles converted code with the source's file name and line numbers, so a
traceback, and every message of the runtime that names the line it was called from (it
reads the calling frame), names the user's line. A written file has lines of its own:
conversion adds some (``def loop_body``, ``try:``) and moves the rest. Its one bookkeeping
line, after its last converted function::

    ops.source_lines('model.py', '57:AAgBC...')

gives the functions defined above it the source's file name and line numbers: each code
object is replaced by the same code with the source's line of each instruction
(``sites.lines_text`` writes the map; columns are dropped, since the written file indents
code differently). Nothing else changes: the same bytecode, constants and names.

(``57:`` is the line the call is on.) When the source cannot be found where the program
runs (the name, relative to the written file, finds no file, or finds the written file
itself), or the file was edited since it was written so that this line moved, nothing is
changed: the functions name the written file's own lines, which are the code that runs.

Why this shape: every place that names a line (tracebacks, JAX's source info, and the ~45
messages of the runtime that read a frame's ``f_lineno`` or a traceback's ``tb_lineno``)
reads the code object, so giving the code the source's lines fixes them all at once, as
``autolax.jit`` does by compiling with them; a map the runtime consulted instead would fix
only the messages that ask it, never Python's own tracebacks. The map lives in the written
file (``--standalone`` output has no front end to ask) as one line, not a comment per
statement, so that the file still reads like hand-written JAX. It runs after the last
converted function because the functions must exist, and before the code that runs the
file (``if __name__ == "__main__":``), which would otherwise run with the written lines.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
import weakref

from autolax.runtime import sites
from autolax.runtime.ops import calls


def source_lines(name: str, lines: str) -> None:
    """Gives the functions of the calling module (a file ``autolax convert`` wrote from
    ``name``, relative to it) the lines of ``name`` that ``lines`` (``sites.lines_text``) says
    each of its lines stands for.

    Equivalent Python: nothing (the line numbers in tracebacks differ)."""
    frame = sys._getframe(1)
    written = frame.f_code.co_filename
    own, _, lines = lines.partition(":")
    if not own.isdigit() or frame.f_lineno != int(own):
        return  # the file was edited since autolax wrote it, moving its lines: its own lines
    source = sites.resolve(name, os.path.abspath(written))
    if not os.path.isfile(source) or sites.same_file(source, written):
        return
    source = os.path.abspath(source)
    try:
        runs = sites.lines_parse(lines)
    except ValueError:  # (an edited map)
        return
    starts = [w for w, _, _ in runs]

    def line_of(w):
        return None if w is None else sites.line_of(runs, starts, w)

    done: dict = {}
    changed = [(fn, _remapped(fn.__code__, source, line_of, done)) for fn in _functions(frame.f_globals, written)]
    if any(new is None for _, new in changed):
        return  # a line table this Python writes otherwise (see ``_line_table``): all as written
    sites.mapped_as(name, source)
    for fn, new in changed:
        if calls._calls_runtime(fn):  # a converted function: what it defines is converted code
            _CONVERTED_NESTED.update(_nested(new))
        fn.__code__ = new


# The code of each function defined inside a converted function of a written file (a nested
# ``def``, a lambda), once it has the source's lines: converted already, as the nested code
# of a conversion by ``autolax.jit`` is (``autolax.api``'s ``_CONVERTED_NESTED``). Called from
# converted code it runs as it is: converting it again would read its source lines, the
# function as the user wrote it, not as its converted parent defines it (``ops.assigned``).
_CONVERTED_NESTED: weakref.WeakSet = weakref.WeakSet()


def converted_nested(code) -> bool:
    """Is ``code`` that of a function defined inside a converted function of a file
    ``autolax convert`` wrote?"""
    return code in _CONVERTED_NESTED


def _nested(code) -> list:
    out, todo = [], [code]
    while todo:
        for const in todo.pop().co_consts:
            if isinstance(const, types.CodeType):
                out.append(const)
                todo.append(const)
    return out


def _functions(namespace: dict, filename: str) -> list:
    """The functions compiled from ``filename`` that the module's names reach: functions,
    the methods of its classes (static, class, properties), through the wrappers of
    decorators (``__wrapped__``, ``functools.partial``, a closure's cells)."""
    out, seen = [], set()
    todo = [(v, 0) for v in namespace.values()]
    module = namespace.get("__name__")
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 4:
            continue
        seen.add(id(obj))
        inner = []
        if isinstance(obj, types.FunctionType):
            if obj.__code__.co_filename == filename:
                out.append(obj)
            inner.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
        elif isinstance(obj, type):
            if getattr(obj, "__module__", None) == module:
                inner.extend(vars(obj).values())
        elif isinstance(obj, (staticmethod, classmethod)):
            inner.append(obj.__func__)
        elif isinstance(obj, property):
            inner.extend(f for f in (obj.fget, obj.fset, obj.fdel) if f is not None)
        elif isinstance(obj, functools.partial):
            inner.append(obj.func)
        if not isinstance(obj, (type, types.ModuleType)):
            # a decorator's wrapper (``functools.wraps``, ``jax.jit``), read without running
            # the object's own attribute code
            wrapped = inspect.getattr_static(obj, "__wrapped__", None)
            if wrapped is not None:
                inner.append(wrapped)
        todo.extend((x, depth + 1) for x in inner)
    return out


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _remapped(code, source: str, line_of, done: dict):
    """``code`` with the source's file name and lines (its nested code too), or None if
    this Python reads the line table written otherwise."""
    if id(code) in done:
        return done[id(code)][1]
    consts = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            const = _remapped(const, source, line_of, done)
            if const is None:
                return None
        consts.append(const)
    lines = [line_of(start) for start, *_ in code.co_positions()]
    first = line_of(code.co_firstlineno)
    new = code.replace(
        co_filename=source, co_firstlineno=first, co_linetable=_line_table(lines, first), co_consts=tuple(consts)
    )
    if [start for start, *_ in new.co_positions()] != lines:
        new = None
    done[id(code)] = (code, new)  # (keeps ``code`` alive: its id stays its own)
    return new


def _line_table(lines: list, first: int) -> bytes:
    """The line table (``co_linetable``, the format of CPython 3.11 and later:
    ``Objects/locations.md``) of code whose code units are on ``lines`` (None: no line),
    without columns."""
    out, current, i = bytearray(), first, 0
    while i < len(lines):
        line, n = lines[i], 1
        while n < 8 and i + n < len(lines) and lines[i + n] == line:
            n += 1
        if line is None:
            out.append(0x80 | (15 << 3) | (n - 1))  # no location
        else:
            out.append(0x80 | (13 << 3) | (n - 1))  # a line, no columns: the delta as a signed varint
            delta = line - current
            value = (-delta << 1) | 1 if delta < 0 else delta << 1
            while value >= 64:
                out.append((value & 63) | 64)
                value >>= 6
            out.append(value)
            current = line
        i += n
    return bytes(out)
