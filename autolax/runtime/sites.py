"""The descriptor of a user's statement that converted code hands to the runtime.

Every ``ops.cond`` / ``ops.while_loop`` / ``ops.for_range`` / ``ops.for_iter`` call in
converted code ends with ``at='...'``: one short literal saying where the user's statement
is and the few static facts the runtime needs about it. Everything else (the carried names
of a loop, the operands of an ``if``) is in the call itself. Since the descriptor is part of
the emitted text, code written by ``autolax convert`` and imported later behaves exactly as
code converted by ``autolax.jit`` in the same process: there is no side table.

Grammar (clauses separated by ``;``)::

    at='6'                      line 6 of the file the code was compiled from
    at='model.py:6'             line 6 of model.py (code written by ``autolax convert``,
                                which runs from another file; the path is relative to
                                the written file, see ``resolve``)
    at='7'                      an ``if`` whose branches produce what they are given: the
                                call's operands, the branch functions' parameters (most do)
    at='7 -> n'                 an ``if`` whose branches produce ``n`` (outputs, in order),
                                written where they differ from the operands
    at='7 ->'                   an ``if`` with operands whose branches produce nothing
    at='9 -> retval, y; return: retval; bound: y; reads: out[0], seen'

``return: NAME``  the generated variable holding the function's return value (errors call
                  it "the return value"), where it is not ``retval`` (``RETURN_NAME``): a
                  statement carrying or producing ``retval`` without the clause has it as
                  the return value. Where ``retval`` is a variable of the user's, the clause
                  names autolax's own (a fresh name, also where the statement lacks it);
``bound: NAMES``  outputs Python always binds before reading them (a staged ``if`` that
                  leaves one unbound on a path that jumped takes the other side's type);
``reads: ...``    lists a loop appends to and also reads: ``out[0]`` (only constant
                  indices up to 0), ``seen`` (any other read);
``inserts: NAMES``  lists a loop body may grow elsewhere than at their end
                  (``lst.insert(0, v)``, a slice assignment): never collected as appends;
``max_steps: N``  the loop's bound from ``autolax.loop_options(max_steps=N)``;
``maybe: NAMES``  a loop's carried names its body may read before binding them
                  (``ops.assigned``): first assigned in the loop, they are carried with the
                  flag saying whether an iteration bound them;
``cell: P=NAME``  a loop body's or branch's parameter ``P`` stands for the user's ``NAME``
                  (a variable closures capture: the function assigns it to the cell ``NAME``);
``test: NAME``    a ``for`` loop over ``NAME`` whose test runs before each iteration with
                  its item (the loop's ``if c: break`` at the top of the body,
                  ``passes.loop_exits``): ``loop_test(NAME, *state)``; the call returns
                  ``NAME`` (not carried) and whether the test stopped the loop after the state;
``test: after NAME``  the same, with the test run after each iteration on the state it
                  leaves (``if c: break`` at the end of the body): ``loop_test(*state)`` is
                  ``c``, true to stop;
``index: NAME``   a ``for i in range(...)`` without exits whose body does not assign
                  ``i``: after a loop over a static range, ``i`` is the range's last item;
``after: KIND N``  an ``if`` one of whose branches holds statements that the jump
                  ``KIND`` (``break``, ``continue``, ``return``) at line N skips, among them
                  a list append (for the error when that list's length would depend on
                  data).
``elif: N, M``    an ``if`` / ``elif`` chain made one ``ops.cases`` call: the lines of its
                  ``elif`` arms (the descriptor's own line is its ``if``'s); each arm is the
                  ``if`` at its line with the same facts otherwise (``arm_specs``).

The record behind the text is ``Facts``: the front end builds one and writes ``facts.text()``;
the runtime reads ``Facts.parse(text)`` (through ``site``). Both directions come from one
clause table (``_CLAUSES``), so adding a fact is one row and one field. This module is shared
by the front end and the runtime; it imports nothing else of autolax.
"""

from __future__ import annotations

import bisect
import functools
import linecache
import os
import sys
from dataclasses import dataclass, field, replace

RETURN_VALUE = "the return value"
# The name of the variable holding the return value in converted code, unless the user's
# function has a variable of that name (the descriptor's ``return:`` clause then says which).
RETURN_NAME = "retval"


def display_filename(filename: str) -> str:
    """How a user knows this file: ``In[3]`` for an IPython/Jupyter cell, else the path."""
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        shell = ipython.get_ipython()
        format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
        if format_code_name is not None:
            named = format_code_name(filename)
            if named:
                return named[1]
    return filename


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def resolve(filename: str, code_filename: str) -> str:
    """The file a descriptor's ``filename`` names, for code compiled from ``code_filename``:
    ``autolax convert`` writes the source's path relative to the file it writes (an
    absolute path would end up in committed files); a path that names no file there is
    taken as it is (relative to the working directory). Code that ``ops.source_lines`` gave
    its source's lines runs as ``code_filename`` = the source: the name is that file."""
    if (filename, code_filename) in _MAPPED:
        return code_filename
    if os.path.isabs(filename) or not os.path.isabs(code_filename):
        return filename
    beside = os.path.normpath(os.path.join(os.path.dirname(code_filename), filename))
    return beside if os.path.exists(beside) else filename


@dataclass(frozen=True, eq=False)
class Site:
    """One statement of the user's (``if``, ``while``, ``for``) as the runtime sees it."""

    kind: str  # "if", "while", "for", "ternary"
    filename: str
    lineno: int
    names: tuple = ()  # carried state (loops) or outputs (if), in order
    roles: dict = field(default_factory=dict)  # generated name -> what it stands for
    always_bound: frozenset = frozenset()
    # Lists a loop body appends to and also reads: name -> the largest constant index read
    # (`lst[0]`), or None for any other read.
    reads_appended: dict = field(default_factory=dict)
    # Lists a loop body may grow elsewhere than at their end (`lst.insert(0, v)`, a slice
    # assignment): never collected as appends (`inserts: lst`)
    inserts: frozenset = frozenset()
    max_steps: int | None = None  # autolax.loop_options(max_steps=...)
    # `for` loops tested with each item first: the loop target's name
    item_test: str | None = None
    test_after: bool = False  # ... tested after each iteration instead (`test: after NAME`)
    read_unbound: frozenset = frozenset()  # see the `maybe:` clause
    # `for i in range(...)` without exits whose body does not assign `i`: after a loop over
    # a static range, `i` is the range's last item, a Python int (`index: i`)
    index_target: str | None = None
    # Generated parameters that stand for a variable closures capture (`cell: P=NAME`)
    cells: dict = field(default_factory=dict)
    # An `if` with a branch of statements a jump skips, appending to a list (`after: KIND N`):
    # (the jump's keyword, its line)
    after_jump: tuple | None = None
    not_the_source: bool = False  # the file name found the converted file itself (``site``)

    @property
    def where(self) -> str:
        return f"{display_filename(self.filename)}:{self.lineno}"

    @property
    def source(self) -> str:
        """The statement's first line as written ('' if the file cannot be read)."""
        return self.source_line(self.lineno)

    def where_line(self, lineno: int) -> str:
        """``f.py:9``: another line of the statement's file."""
        return f"{display_filename(self.filename)}:{lineno}"

    def source_line(self, lineno: int) -> str:
        """Line ``lineno`` of the statement's file as written ('' if it cannot be read, or if
        the name found the converted file itself: see ``site``)."""
        if self.not_the_source:
            return ""
        return linecache.getline(self.filename, lineno).strip()

    def describe(self, name: str) -> str:
        """``'y'`` for a user variable, or what a generated one stands for."""
        return self.roles.get(name, f"'{name}'")

    @property
    def what(self) -> str:
        """``the `while` loop at f.py:3``."""
        noun = {
            "if": "the `if`",
            "while": "the `while` loop",
            "for": "the `for` loop",
            "ternary": "the conditional expression",
        }.get(self.kind, "the statement")
        return f"{noun} at {self.where}"


def _names(text: str) -> tuple:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _reads_text(reads: dict) -> str:
    return ", ".join(name if k is None else f"{name}[{k}]" for name, k in reads.items())


def _reads_parse(text: str) -> dict:
    out = {}
    for item in _names(text):
        name, _, index = item.partition("[")
        out[name] = int(index.rstrip("]")) if index else None
    return out


def _test_text(facts) -> str:
    return f"after {facts.item_test}" if facts.test_after else facts.item_test


def _test_parse(text: str) -> dict:
    after, _, name = text.strip().rpartition(" ")
    return {"item_test": name, "test_after": after == "after"}


def _after_parse(text: str) -> tuple:
    kind, _, line = text.strip().partition(" ")
    return kind, int(line)


# One row per clause of the descriptor, in the order they are written: (key, the field of
# ``Facts`` it says, whether the statement has it, its text, the fields read back from the
# text). Adding a fact is one row here and one field of ``Facts``.
_CLAUSES = (
    (
        "return",
        "return_value",
        lambda f: f.return_value,
        lambda f: f.return_value,
        lambda s: {"return_value": _names(s)[0]},
    ),
    (
        "bound",
        "always_bound",
        lambda f: f.always_bound,
        lambda f: ", ".join(f.always_bound),
        lambda s: {"always_bound": _names(s)},
    ),
    (
        "reads",
        "reads_appended",
        lambda f: f.reads_appended,
        lambda f: _reads_text(f.reads_appended),
        lambda s: {"reads_appended": _reads_parse(s)},
    ),
    ("inserts", "inserts", lambda f: f.inserts, lambda f: ", ".join(f.inserts), lambda s: {"inserts": _names(s)}),
    (
        "max_steps",
        "max_steps",
        lambda f: f.max_steps is not None,
        lambda f: str(f.max_steps),
        lambda s: {"max_steps": int(s)},
    ),
    (
        "maybe",
        "read_unbound",
        lambda f: f.read_unbound,
        lambda f: ", ".join(f.read_unbound),
        lambda s: {"read_unbound": _names(s)},
    ),
    ("test", "item_test", lambda f: f.item_test is not None, _test_text, _test_parse),
    (
        "index",
        "index_target",
        lambda f: f.index_target is not None,
        lambda f: f.index_target,
        lambda s: {"index_target": s.strip()},
    ),
    (
        "after",
        "after_jump",
        lambda f: f.after_jump is not None,
        lambda f: f"{f.after_jump[0]} {f.after_jump[1]}",
        lambda s: {"after_jump": _after_parse(s)},
    ),
    (
        "cell",
        "cells",
        lambda f: f.cells,
        lambda f: ", ".join(f"{p}={n}" for p, n in f.cells),
        lambda s: {"cells": tuple(tuple(item.split("=", 1)) for item in _names(s))},
    ),
    (
        "elif",
        "elif_lines",
        lambda f: f.elif_lines,
        lambda f: ", ".join(str(n) for n in f.elif_lines),
        lambda s: {"elif_lines": tuple(int(n) for n in _names(s))},
    ),
)
_CLAUSE = {row[0]: row for row in _CLAUSES}


@dataclass(frozen=True)
class Facts:
    """The facts of one statement that the front end writes into converted code and the
    runtime reads back: the record behind the ``at='...'`` descriptor (the grammar above).
    ``Facts.parse(facts.text()) == facts`` for every record (``tests/test_sites.py``)."""

    lineno: int
    filename: str | None = None  # None: the file the code is compiled from
    # An ``if``'s outputs, in order (written after ``->``); None: not written (a loop, whose
    # carried names are its body's parameters, or an ``if`` whose outputs are its operands).
    outputs: tuple | None = None
    return_value: str | None = None  # ``return:``
    always_bound: tuple = ()  # ``bound:``
    reads_appended: dict = field(default_factory=dict)  # ``reads:`` name -> constant index or None
    inserts: tuple = ()  # ``inserts:``
    max_steps: int | None = None  # ``max_steps:``
    read_unbound: tuple = ()  # ``maybe:``
    item_test: str | None = None  # ``test:`` (the loop target's name) ...
    test_after: bool = False  # ... ``test: after NAME``
    index_target: str | None = None  # ``index:``
    after_jump: tuple | None = None  # ``after:`` (jump keyword, line)
    cells: tuple = ()  # ``cell:`` (parameter, user's name) pairs
    elif_lines: tuple = ()  # ``elif:`` the lines of an ``if`` chain's later arms

    def text(self) -> str:
        """The descriptor: ``LINE`` or ``FILE:LINE``, ``-> OUTPUTS``, then one clause per fact."""
        head = f"{self.filename}:{self.lineno}" if self.filename else str(self.lineno)
        if self.outputs is not None:
            head += " -> " + ", ".join(self.outputs) if self.outputs else " ->"
        return "; ".join([head] + [f"{key}: {write(self)}" for key, _, has, write, _ in _CLAUSES if has(self)])

    @classmethod
    def parse(cls, spec: str) -> "Facts":
        """The record a descriptor says (the inverse of ``text``)."""
        return _parse(spec)

    def with_cells(self, pairs) -> "Facts":
        """This record with more ``cell:`` pairs."""
        return replace(self, cells=self.cells + tuple(pairs))


@functools.lru_cache(maxsize=1024)
def arm_specs(spec: str) -> tuple:
    """The descriptors of the ``if`` statements an ``if`` / ``elif`` chain's descriptor
    stands for (``elif:``), first to last: each is the chain's own with the line of its arm."""
    facts = Facts.parse(spec)
    arm = replace(facts, elif_lines=())
    return tuple(replace(arm, lineno=n).text() for n in (facts.lineno, *facts.elif_lines))


@functools.lru_cache(maxsize=1024)
def _parse(spec: str) -> Facts:
    head, *clauses = [c.strip() for c in spec.split(";")]
    location, arrow, outs = head.partition("->")
    filename, _, line = location.strip().rpartition(":")
    fields = {"lineno": int(line), "filename": filename or None, "outputs": _names(outs) if arrow else None}
    for clause in clauses:
        key, _, value = clause.partition(":")
        fields.update(_CLAUSE[key.strip()][4](value))
    return Facts(**fields)


@functools.lru_cache(maxsize=2048)
def site(kind: str, spec: str, code_filename: str, names: tuple | None = None) -> Site:
    """The ``Site`` of a statement from its descriptor (one object per statement, so the trace
    report can count per statement). ``names``: the carried names (loops, read off the body
    function's parameters) or an ``if``'s operands (its branch functions' parameters), which
    are its outputs unless the spec lists them (``->``)."""
    facts = Facts.parse(spec)
    cells = dict(facts.cells)
    resolved = resolve(facts.filename, code_filename) if facts.filename else code_filename
    if facts.outputs is not None:
        names = facts.outputs
    elif names is None:
        raise ValueError(f"autolax: the descriptor {spec!r} of an `{kind}` names no outputs and the op gave none")
    elif cells:
        names = tuple(cells.get(n, n) for n in names)
    return_value = facts.return_value or (RETURN_NAME if RETURN_NAME in names else None)
    return Site(
        kind=kind,
        filename=resolved,
        # A file the CLI wrote names its source relative to the converted tree
        # (``pkg/model.py``); run from the folder holding the converted tree, that name finds
        # the converted file itself, whose lines are not the user's: never quoted.
        not_the_source=bool(facts.filename)
        and (facts.filename, code_filename) not in _MAPPED
        and same_file(resolved, code_filename),
        lineno=facts.lineno,
        names=tuple(names),
        roles={return_value: RETURN_VALUE} if return_value else {},
        always_bound=frozenset(facts.always_bound),
        reads_appended=dict(facts.reads_appended),
        inserts=frozenset(facts.inserts),
        max_steps=facts.max_steps,
        item_test=facts.item_test,
        test_after=facts.test_after,
        read_unbound=frozenset(facts.read_unbound),
        index_target=facts.index_target,
        cells=cells,
        after_jump=facts.after_jump,
    )


# ----------------------------------------------------------------------------- line maps
# A file ``autolax convert`` wrote has lines of its own: conversion adds some (``def
# loop_body``, ``try:``) and moves others. Its one bookkeeping line,
# ``ops.source_lines('model.py', '<map>')``, gives the line of ``model.py`` each of its lines
# stands for, so that its functions run with the source's line numbers, as ``autolax.jit``
# compiles them (``ops.source_lines``). The map is a list of runs: from written line ``w``
# on, line ``w + k`` stands for source line ``s + k`` (lines copied as written), or ``s``
# for every ``k`` (the lines generated for one statement), until the next run. A run is two
# numbers: how many lines after the previous run it starts (less one, times two, plus one
# for a run of one source line), and how far its source line is from where the previous
# run would have gone on; written as base-64 VLQ digits, as JavaScript source maps write
# theirs: two characters for most runs.

_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_DIGIT = {c: i for i, c in enumerate(_DIGITS)}

# (name as a descriptor writes it, the source file it was found to be) of each file given its
# source's lines in this process (``resolve``).
_MAPPED: set = set()


def _vlq(value: int, out: list) -> None:
    value = (-value << 1) | 1 if value < 0 else value << 1
    while True:
        digit, value = value & 31, value >> 5
        out.append(_DIGITS[digit | (32 if value else 0)])
        if not value:
            return


def lines_text(lines) -> str:
    """The map of ``lines`` (``lines[i]``: the source line that written line ``i + 1``
    stands for, or None for one that holds no code: a blank line, a comment)."""
    known = [(w, s) for w, s in enumerate(lines, 1) if s is not None]
    out, run = [], (0, 0, 1)  # (written line, source line, step)
    for k, (w, s) in enumerate(known):
        prev_w, prev_s, step = run
        went_on = prev_s + (w - prev_w) * step
        if s == went_on:
            continue
        flat = int(k + 1 < len(known) and known[k + 1][1] == s)
        _vlq((w - prev_w - 1) * 2 + flat, out)
        _vlq(s - went_on, out)
        run = (w, s, 1 - flat)
    return "".join(out)


def lines_parse(text: str) -> tuple:
    """The runs of a map (``lines_text``): ((written line, source line, step), ...), in
    order, starting with (0, 0, 1)."""
    numbers, value, shift = [], 0, 0
    if not set(text) <= _DIGIT.keys():
        raise ValueError(f"not a line map: {text!r}")
    for c in text:
        digit = _DIGIT[c]
        value |= (digit & 31) << shift
        shift += 5
        if not digit & 32:
            numbers.append(-(value >> 1) if value & 1 else value >> 1)
            value, shift = 0, 0
    if shift or len(numbers) % 2 or any(n < 0 for n in numbers[::2]):
        raise ValueError(f"not a line map: {text!r}")
    runs = [(0, 0, 1)]
    for gap, ds in zip(numbers[::2], numbers[1::2]):
        w, s, step = runs[-1]
        new_w = w + gap // 2 + 1
        runs.append((new_w, s + (new_w - w) * step + ds, 1 - gap % 2))
    return tuple(runs)


def line_of(runs: tuple, starts: list, w: int) -> int:
    """The source line of written line ``w`` (``runs``: ``lines_parse``; ``starts``: their
    written lines)."""
    k = bisect.bisect_right(starts, w) - 1
    first_w, first_s, step = runs[k]
    return first_s + (w - first_w) * step


def mapped_as(name: str, source: str) -> None:
    """Records that code naming its source ``name`` in descriptors now runs as ``source``."""
    _MAPPED.add((name, source))
