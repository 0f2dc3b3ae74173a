"""What the passes share while converting one function."""

from __future__ import annotations

import builtins
import sys
from dataclasses import dataclass, field

from autolax.transpile.naming import Namer

_MISSING = object()


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


@dataclass(eq=False)
class Construct:
    """One user-visible control-flow statement and what the rewrite made of it.

    Runtime ops find it through the code object of the generated function they receive
    (``loop_body``, ``if_true`` ...), to name variables in errors and rows of the trace report.
    """

    kind: str  # "if", "while", "for"
    filename: str
    lineno: int
    col: int
    source: str  # the statement's first line, as written
    names: tuple = ()  # carried state (loops) or outputs (if), in order
    descriptions: dict = field(default_factory=dict)  # generated name -> words for errors
    # Lists a loop body appends to and also reads: name -> the largest constant index read
    # (`lst[0]`), or None for any other read (`len(lst)`, `lst[-1]`, `jnp.stack(lst)`).
    reads_appended: dict = field(default_factory=dict)
    # Outputs Python always binds before reading (see analysis.definedness.BoundBeforeReads):
    # a staged `if` that leaves one unbound on one side takes the other side's type.
    always_bound: frozenset = frozenset()

    @property
    def where(self) -> str:
        return f"{display_filename(self.filename)}:{self.lineno}"

    def describe(self, name: str) -> str:
        """``'y'`` for a user variable, or what a generated one stands for."""
        return self.descriptions.get(name, f"'{name}'")


@dataclass
class Context:
    namer: Namer
    filename: str
    source_lines: list  # the whole file's lines (for constructs' source text)
    ops: str  # name under which generated code reaches autolax.ops
    globals: dict = field(default_factory=dict)
    closure: dict = field(default_factory=dict)  # free variable name -> value
    constructs: dict = field(default_factory=dict)  # generated function name -> Construct
    descriptions: dict = field(default_factory=dict)  # generated name -> words for errors
    first_params: set = field(default_factory=set)  # "self"/"cls" of methods
    # Generated names whose first value may come from any one path (the return value): an
    # `if` assigning them on one side only takes that side's type.
    pending: set = field(default_factory=set)
    # Generated names bound and read within one expression (a chained comparison's middle
    # operand): never carried by a loop or returned by an `if`.
    temporaries: set = field(default_factory=set)
    # Local names Python always binds before reading them, in the code as written.
    always_bound: set = field(default_factory=set)

    def line_text(self, lineno: int) -> str:
        if 1 <= lineno <= len(self.source_lines):
            return self.source_lines[lineno - 1].strip()
        return ""

    def resolve(self, name: str, local_names=()):
        """The value a free name has now (closure, then globals, then builtins), or
        ``_MISSING`` if it is local to the function or not defined yet."""
        if name in local_names:
            return _MISSING
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    MISSING = _MISSING
