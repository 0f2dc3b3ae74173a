"""What a source file says about itself, read without importing it.

A ``Module`` holds the parsed file and answers the questions conversion asks: which names
the imports bind (``jnp`` is ``jax.numpy``, ``al`` is ``autolax``), what the passes may
assume about a free name (``Module.static_globals``), and which functions are selected
(decorated ``@autolax.jit`` / ``@autolax.convert``, all of them, or some by name).
"""

from __future__ import annotations

import io
import sys
import tokenize
import types
from dataclasses import dataclass, field

from autolax.frontend.analysis.activity import writes
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.context import Context
from autolax.runtime.errors import ConversionError
from autolax.runtime.libraries import LIBRARY_PACKAGES as _RUNTIME_LIBRARY_PACKAGES

# Top-level packages whose names are library code (never converted), decided from the import
# as written: nothing is imported, so converting a file never runs code from it or from the
# directory it is in (a planted ``optax.py`` beside it stays unread). Names imported from other
# modules stay unknown, which the passes treat as possibly user code (exact, only wordier).
# The runtime's list (``autolax.runtime.ops.calls``) plus the standard library, which the runtime
# recognises by its location.
LIBRARY_PACKAGES = _RUNTIME_LIBRARY_PACKAGES | frozenset(sys.stdlib_module_names) | {"ml_dtypes", "opt_einsum"}


class LibraryRef(types.ModuleType):
    """Stands in for a library module or one of its attributes, known only by the dotted path
    the file imports it under (``jax.numpy``, ``jax.numpy.where``): nothing is imported.

    It is a module object so the passes treat it as library code and look attributes up on
    it (``jnp.where`` is ``LibraryRef('jax.numpy.where')``); dunder attributes are absent.
    """

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return LibraryRef(f"{self.__name__}.{name}")

    def __repr__(self):
        return f"<library {self.__name__}>"


def is_library_path(target: str) -> bool:
    """Whether a dotted import target (``jax.numpy``) belongs to a known library package."""
    return target.split(".")[0] in LIBRARY_PACKAGES


AUTOLAX_DECORATORS = {"autolax.jit": "jit", "autolax.convert": "convert", "autolax.do_not_convert": "do_not_convert"}


@dataclass
class Decorator:
    node: object  # the decorator expression
    kind: str | None  # "jit" / "convert" / "do_not_convert" for autolax's, else None
    index: int


@dataclass
class FunctionSite:
    """A ``def`` the command may convert: module-level, or a method of a module-level class."""

    node: object
    qualname: str
    is_method: bool
    decorators: list = field(default_factory=list)

    @property
    def autolax_kind(self) -> str | None:
        kinds = [d.kind for d in self.decorators if d.kind]
        return kinds[0] if kinds else None


class _DoNotConvert:
    """Stands in for a module-level function marked ``@autolax.do_not_convert``."""

    __autolax_do_not_convert__ = True


class _UserClass:
    """Stands in for a class defined in the file (calling a class is never converted)."""


class Module:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.lines = source_lines(text)
        try:
            self.tree = syntax.parse(text)
            # Errors Python finds only when compiling ('return' outside a function, a
            # `nonlocal` without a binding): compiled, never run.
            compile(text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            reason = exc.msg if exc.msg.startswith("invalid syntax") else f"invalid syntax: {exc.msg}"
            raise ConversionError(
                reason, filename=path, lineno=exc.lineno or 1, col=max((exc.offset or 1) - 1, 0)
            ) from None
        self.bindings = self._import_bindings()
        self.comments = _comments(text)
        self.sites = self._sites()

    # ------------------------------------------------------------------ imports
    def _import_bindings(self) -> dict:
        """Module-level name -> the dotted path it is imported as (``{'jnp': 'jax.numpy'}``)."""
        out = {}
        for stmt in self.tree.body:
            for name, target in import_targets(stmt):
                out[name] = target
        return out

    def imported_as(self, target: str) -> str | None:
        """The module-level name bound to ``target`` by an import (``'jnp'`` for jax.numpy)."""
        for name, t in sorted(self.bindings.items()):
            if t == target:
                return name
        return None

    def dotted(self, node) -> str | None:
        """``'autolax.jit'`` for ``al.jit`` when ``import autolax as al``, else None."""
        if isinstance(node, syntax.Name):
            return self.bindings.get(node.id)
        if isinstance(node, syntax.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def module_names(self) -> set:
        """Names bound at module level (by any statement)."""
        return writes(self.tree.body)

    def static_globals(self) -> dict:
        """What the passes may know about free names: library modules and functions as
        imported, ``MISSING`` for other module-level names (they may be user code)."""
        out = {name: Context.MISSING for name in self.module_names()}
        for stmt in self.tree.body:
            if isinstance(stmt, syntax.ClassDef):
                out[stmt.name] = _UserClass
            elif isinstance(stmt, syntax.FunctionDef) and any(
                self.decorator_kind(d) == "do_not_convert" for d in stmt.decorator_list
            ):
                out[stmt.name] = _DoNotConvert()
        for name, target in self.bindings.items():
            value = _library_value(target)
            if value is not Context.MISSING:
                out[name] = value
        return out

    # ------------------------------------------------------------------ functions
    def decorator_kind(self, dec) -> str | None:
        func = dec.func if isinstance(dec, syntax.Call) else dec
        if isinstance(dec, syntax.Call) and self.dotted(func) == "functools.partial" and dec.args:
            # @partial(autolax.jit, static_argnums=...), as with jax.jit
            kind = AUTOLAX_DECORATORS.get(self.dotted(dec.args[0]) or "")
            return kind if kind in ("jit", "convert") else None
        return AUTOLAX_DECORATORS.get(self.dotted(func) or "")

    def _sites(self) -> list:
        """Functions and methods defined at module level or in a module-level class, also
        inside ``if`` / ``try`` / ``with`` / loop / ``match`` blocks there."""
        out = []

        def visit(body, prefix, in_class):
            for stmt in body:
                if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                    decs = [Decorator(d, self.decorator_kind(d), i) for i, d in enumerate(stmt.decorator_list)]
                    out.append(FunctionSite(stmt, prefix + stmt.name, in_class, decs))
                elif isinstance(stmt, syntax.ClassDef):
                    visit(stmt.body, f"{prefix}{stmt.name}.", True)
                else:
                    for block in _blocks(stmt):
                        visit(block, prefix, in_class)

        visit(self.tree.body, "", False)
        return out

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 1 <= lineno <= len(self.lines) else ""


def _blocks(stmt):
    """The statement lists inside a compound statement other than a def or a class (``if``,
    ``try``, ``with``, loops, ``match``)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            yield block
    for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
        yield part.body


def source_lines(text: str) -> list:
    """The lines of a source text, each with its ``"\\n"``. Unlike ``str.splitlines``, a form
    feed, ``"\\x1c"``-``"\\x1e"``, ``"\\x85"`` or ``"\\u2028"`` does not end a line: Python
    source treats them as ordinary characters, and line numbers must agree with the parser's."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def import_targets(stmt):
    """(bound name, dotted target) pairs of an import statement (relative imports: none)."""
    if isinstance(stmt, syntax.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                root = alias.name.split(".")[0]
                yield root, root
    elif isinstance(stmt, syntax.ImportFrom) and not stmt.level and stmt.module:
        for alias in stmt.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{stmt.module}.{alias.name}"


def _library_value(target: str):
    """A stand-in for the library object ``target`` names, or MISSING if it may be user code."""
    return LibraryRef(target) if is_library_path(target) else Context.MISSING


def _comments(text: str) -> dict:
    """line number -> (column, text) of each ``#`` comment in the file."""
    out = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out
