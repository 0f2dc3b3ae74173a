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
    at='7 -> n'                 an ``if`` whose branches produce ``n`` (outputs, in order)
    at='9 -> retval, y; return: retval; bound: y; reads: out[0], seen'

``return: NAME``  the generated variable holding the function's return value (errors call
                  it "the return value");
``bound: NAMES``  outputs Python always binds before reading them (a staged ``if`` that
                  leaves one unbound on a path that jumped takes the other side's type);
``reads: ...``    lists a loop appends to and also reads: ``out[0]`` (only constant
                  indices up to 0), ``seen`` (any other read);
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
``after: KIND N``  an ``if`` one of whose branches holds statements that the jump
                  ``KIND`` (``break``, ``continue``, ``return``) at line N skips, among them
                  a list append (for the error when that list's length would depend on
                  data).

This module is shared by the front end (which writes descriptors) and the runtime (which
reads them); it imports nothing else of autolax.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from dataclasses import dataclass, field

RETURN_VALUE = "the return value"


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


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def resolve(filename: str, code_filename: str) -> str:
    """The file a descriptor's ``filename`` names, for code compiled from ``code_filename``:
    ``autolax convert`` writes the source's path relative to the file it writes (an
    absolute path would end up in committed files); a path that names no file there is
    taken as it is (relative to the working directory)."""
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
        noun = {"if": "the `if`", "while": "the `while` loop", "for": "the `for` loop",
                "ternary": "the conditional expression"}.get(self.kind, "the statement")
        return f"{noun} at {self.where}"


def format_spec(lineno: int, *, filename: str | None = None, outputs=None, return_value=None,
                always_bound=(), reads_appended=None, inserts=(), max_steps=None, item_test=None, read_unbound=(),
                test_after=False, index_target=None, after_jump=None) -> str:
    """The ``at='...'`` literal for a statement (the inverse of ``parse_spec``)."""
    head = f"{filename}:{lineno}" if filename else str(lineno)
    if outputs is not None and len(outputs):
        head += " -> " + ", ".join(outputs)
    clauses = [head]
    if return_value:
        clauses.append(f"return: {return_value}")
    if always_bound:
        clauses.append("bound: " + ", ".join(always_bound))
    if reads_appended:
        reads = [name if k is None else f"{name}[{k}]" for name, k in reads_appended.items()]
        clauses.append("reads: " + ", ".join(reads))
    if inserts:
        clauses.append("inserts: " + ", ".join(inserts))
    if max_steps is not None:
        clauses.append(f"max_steps: {max_steps}")
    if read_unbound:
        clauses.append("maybe: " + ", ".join(read_unbound))
    if item_test is not None:
        clauses.append(f"test: after {item_test}" if test_after else f"test: {item_test}")
    if index_target is not None:
        clauses.append(f"index: {index_target}")
    if after_jump is not None:
        clauses.append(f"after: {after_jump[0]} {after_jump[1]}")
    return "; ".join(clauses)


@functools.lru_cache(maxsize=1024)
def parse_spec(spec: str):
    """``(filename or None, lineno, outputs, roles, always_bound, reads_appended, max_steps,
    item_test, test_after, read_unbound, cells, index_target, inserts, after_jump)``."""
    head, *clauses = [c.strip() for c in spec.split(";")]
    location, _, outs = head.partition("->")
    location = location.strip()
    filename, _, line = location.rpartition(":")
    outputs = tuple(n.strip() for n in outs.split(",") if n.strip())
    roles, bound, reads, max_steps, item_test, maybe = {}, frozenset(), {}, None, None, frozenset()
    test_after = False
    cells = {}
    index_target = None
    inserts = frozenset()
    after_jump = None
    for clause in clauses:
        key, _, value = clause.partition(":")
        items = [v.strip() for v in value.split(",") if v.strip()]
        if key == "return":
            roles.update({n: RETURN_VALUE for n in items})
        elif key == "bound":
            bound = frozenset(items)
        elif key == "reads":
            for item in items:
                name, _, index = item.partition("[")
                reads[name] = int(index.rstrip("]")) if index else None
        elif key == "max_steps":
            max_steps = int(items[0])
        elif key == "test":
            after, _, name = items[0].rpartition(" ")
            item_test, test_after = name, after == "after"
        elif key == "maybe":
            maybe = frozenset(items)
        elif key == "cell":
            cells.update(item.split("=", 1) for item in items)
        elif key == "index":
            index_target = items[0]
        elif key == "inserts":
            inserts = frozenset(items)
        elif key == "after":
            kind, _, jump_line = items[0].partition(" ")
            after_jump = (kind, int(jump_line))
    return (filename or None, int(line), outputs, roles, bound, reads, max_steps, item_test, test_after, maybe, cells,
            index_target, inserts, after_jump)


@functools.lru_cache(maxsize=2048)
def site(kind: str, spec: str, code_filename: str, names: tuple | None = None) -> Site:
    """The ``Site`` of a statement from its descriptor (one object per statement, so the trace
    report can count per statement). ``names``: the carried names (loops, read off the body
    function's parameters); an ``if`` takes its outputs from the spec."""
    (filename, lineno, outputs, roles, bound, reads, max_steps, item_test, test_after, maybe, cells, index,
     inserts, after_jump) = parse_spec(spec)
    resolved = resolve(filename, code_filename) if filename else code_filename
    if names is not None and cells:
        names = tuple(cells.get(n, n) for n in names)
    return Site(
        kind=kind,
        filename=resolved,
        # A file the CLI wrote names its source relative to the converted tree
        # (``pkg/model.py``); run from the folder holding the converted tree, that name finds
        # the converted file itself, whose lines are not the user's: never quoted.
        not_the_source=bool(filename) and _same_file(resolved, code_filename),
        lineno=lineno,
        names=tuple(outputs if names is None else names),
        roles=roles,
        always_bound=bound,
        reads_appended=reads,
        inserts=inserts,
        max_steps=max_steps,
        item_test=item_test,
        test_after=test_after,
        read_unbound=maybe,
        index_target=index,
        cells=cells,
        after_jump=after_jump,
    )
