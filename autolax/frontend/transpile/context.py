"""What the passes share while converting one function."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from autolax.frontend.transpile.naming import Namer

_MISSING = object()


@dataclass
class Context:
    namer: Namer
    filename: str
    source_lines: list  # the whole file's lines (for constructs' source text)
    ops: str  # name under which generated code reaches autolax.runtime.ops
    globals: dict = field(default_factory=dict)
    closure: dict = field(default_factory=dict)  # free variable name -> value
    descriptions: dict = field(default_factory=dict)  # generated name -> words for errors
    return_values: set = field(default_factory=set)  # generated names holding the return value
    # The file named in the emitted descriptors (``at='model.py:6'``) when the converted code
    # runs from another file (``autolax convert``); None: the file it is compiled from.
    spec_filename: str | None = None
    # Generated names whose first value may come from any one path (the return value): an
    # `if` assigning them on one side only takes that side's type.
    pending: set = field(default_factory=set)
    # Generated names bound and read within one expression (a chained comparison's middle
    # operand): never carried by a loop or returned by an `if`.
    temporaries: set = field(default_factory=set)
    # Local names Python always binds before reading them, in the code as written.
    always_bound: set = field(default_factory=set)
    # ``autolax convert``: the file's module-level functions (name -> ``def`` node), which
    # ``resolve`` does not give (MISSING): what a helper of the same file writes into is read
    # from its ``def`` (passes/writeback.py).
    defs: dict = field(default_factory=dict)
    # The methods of the class the function is a method of (name -> function, or ``def`` node
    # for ``autolax convert``): what ``self.step(v)`` writes into (passes/writeback.py).
    methods: dict = field(default_factory=dict)
    # Whether the writeback pass rebound a name after a call (``aliases`` then runs).
    wrote_back: bool = False
    # The decorator ``passes.runtime_checks`` put on the function: None, "function" (``@ops.function``)
    # or "checks" (``@ops.function(checks=True)``).
    wrapper: str | None = None

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
