"""Converts the selected functions of one source file and splices them back into its text.

Only the selected ``def`` statements change (and the imports they need); every other line
of the file is kept byte for byte. A converted function keeps its header (signature,
annotations, comments) as written; its decorators change as ``autolax.jit`` would run it:
``@autolax.jit(...)`` becomes ``@jax.jit(...)`` and ``@autolax.convert`` is removed; the
options of theirs that ``jax.jit`` lacks (``strict``, ``max_steps``) become
``@ops.options(...)`` under it (``autolax_only_options``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import jax

from autolax import api
from autolax.cli.module import Module, import_targets, source_lines
from autolax.cli.runtime_copy import PACKAGE as RUNTIME_COPY
from autolax.frontend import emit, pipeline
from autolax.frontend.analysis import activity
from autolax.frontend.emit import converted_def
from autolax.frontend.passes import writeback
from autolax.frontend.transpile import syntax
from autolax.frontend.transpile.context import Context
from autolax.runtime import errors
from autolax.runtime.errors import ConversionError
from autolax.runtime.ops import report
from autolax.runtime.sites import lines_text


def autolax_only_options(kind: str = "jit") -> tuple:
    """The keyword options of ``autolax.jit`` that ``jax.jit`` does not have (``kind="jit"``),
    or all of ``autolax.convert``'s (``"convert"``), read from the two signatures so that a
    new option cannot be forgotten here: the CLI moves them to ``@ops.options(...)``
    (``_carried``), or refuses an option the runtime cannot take."""

    def keywords(fn):
        return {
            name
            for name, p in inspect.signature(fn).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        }

    mine = keywords(api.jit if kind == "jit" else api.convert) - {"fn"}
    if kind == "jit":
        mine -= keywords(jax.jit)
    return tuple(sorted(mine))


def _carried() -> set:
    """The options ``@ops.options(...)`` takes (the runtime's ``report.options``)."""
    return set(inspect.signature(report.options).parameters)


@dataclass
class Options:
    """What ``autolax convert`` was asked to do (see ``autolax convert --help``)."""

    standalone: bool = False  # the runtime imported from its copy (``runtime_copy``), not from autolax
    all: bool = False
    only: tuple = ()


@dataclass
class Result:
    text: str
    matched: set = field(default_factory=set)  # --only names found in this file
    warnings: list = field(default_factory=list)  # `file:line:col: warning: ...` lines


def convert_source(text: str, path: str, options: Options, *, written_as: str | None = None) -> Result:
    """The converted text of a whole file. Raises ``ConversionError`` for bad input.
    ``written_as``: how the converted code names the source file in its run-time messages
    (``at='model.py:6'``; the CLI gives its path relative to the file it writes), else
    ``path``."""
    module = Module(text, path)
    converter = _FileConverter(module, options, written_as)
    return Result(converter.run(), converter.matched, converter.warnings)


class _FileConverter:
    def __init__(self, module: Module, options: Options, written_as: str | None = None):
        self.module = module
        self.written_as = written_as or module.path
        self.options = options
        self.matched: set = set()
        self.globals = module.static_globals()
        self.ops_alias = (
            module.imported_as("autolax.runtime.ops")
            or module.imported_as("autolax.ops")
            or module.imported_as(f"{RUNTIME_COPY}.ops")
            or _free_name(module, "ops", "autolax_ops")
        )
        self.needs_jax = False  # the output needs an added ``import jax`` (for ``@jax.jit``)
        self.converted_names: set = set()  # module-level functions that run converted code
        self.explicit: set = set()  # sites selected by decorator or --only (errors are errors)
        self.warnings: list = []
        self._calls = None  # function name -> names it calls (``_reaches``)
        # module-level functions by name: what a helper of the file writes into is read from
        # its ``def`` (passes/writeback.py); a call of one that does stays ``ops.call``
        self.defs = {
            s.node.name: s.node for s in module.sites if not s.is_method and isinstance(s.node, syntax.FunctionDef)
        }
        self._writers = None
        self.callee_of: dict = {}  # id(site) -> the function calling it, for the callees converted with it

    # ------------------------------------------------------------------ selection
    def selected(self):
        only = set(self.options.only)
        out = []
        for site in self.module.sites:
            names = {site.qualname, site.node.name} & only
            self.matched |= names
            kind = site.autolax_kind
            if kind == "do_not_convert":
                if names:
                    raise self._error(site.node, f"'{site.qualname}' is marked @autolax.do_not_convert")
                continue
            explicit = kind in ("jit", "convert") or bool(names)
            if explicit:
                self.explicit.add(id(site))
            if not (explicit or self.options.all):
                continue
            if not explicit and (isinstance(site.node, syntax.AsyncFunctionDef) or _is_generator(site.node)):
                continue  # --all: functions autolax cannot convert are left as they are
            if not explicit and self._calls_runtime(site.node):
                if not site.is_method:
                    self.converted_names.add(site.node.name)
                continue  # already converted (autolax convert output)
            out.append(site)
        return out + self.callees(out)

    def callees(self, selected) -> list:
        """The module-level functions of the file that the selected functions call by name,
        and the methods of the file's classes they instantiate that they call by attribute
        (``Cls(...)`` and ``obj.method(...)``), directly or through one another (their static
        call graph), not selected already: converted with them, so that both outputs run the
        program ``autolax.jit`` runs (which converts each user function or method that
        converted code calls; ``--standalone`` output has no converter to do that when the
        program runs). Methods Python calls by itself (``__init__``, ``__next__``, ...) are
        not: ``autolax.jit`` runs them as written too. Like ``--all``, leaves as they are
        (with a warning) those it cannot convert."""
        functions, methods = {}, {}  # name -> its functions; class name -> {method name: [sites]}
        for site in self.module.sites:
            if not site.is_method and "." not in site.qualname:
                functions.setdefault(site.node.name, []).append(site)
            elif site.is_method and site.qualname.count(".") == 1 and not site.node.name.startswith("__"):
                methods.setdefault(site.qualname.split(".")[0], {}).setdefault(site.node.name, []).append(site)
        chosen = {id(s) for s in selected}
        found, todo = [], list(selected)
        names, attributes = set(), set()  # called by name / by attribute, in all of them
        while todo:
            site = todo.pop()
            for n in syntax.walk(site.node):
                if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Name):
                    names.add(n.func.id)
                elif isinstance(n, syntax.Call) and isinstance(n.func, syntax.Attribute):
                    attributes.add(n.func.attr)
            candidates = [c for name in sorted(names) for c in functions.get(name, ())]
            candidates += [
                c
                for cls in sorted(names & set(methods))
                for attr in sorted(attributes)
                for c in methods[cls].get(attr, ())
            ]
            for callee in candidates:
                if id(callee) in chosen:
                    continue
                chosen.add(id(callee))
                node = callee.node
                if callee.autolax_kind is not None or isinstance(node, syntax.AsyncFunctionDef) or _is_generator(node):
                    continue  # autolax's decorators say; or autolax.jit runs it as written too
                if self._calls_runtime(node):
                    if not callee.is_method:
                        self.converted_names.add(node.name)
                    continue
                self.callee_of[id(callee)] = site.qualname
                found.append(callee)
                todo.append(callee)
        return found

    def _calls_runtime(self, node) -> bool:
        """Does the function call the runtime already (``autolax convert`` output)?"""
        aliases = {
            self.module.imported_as(name) for name in ("autolax.runtime.ops", "autolax.ops", f"{RUNTIME_COPY}.ops")
        }
        aliases.discard(None)
        return bool(aliases) and any(isinstance(n, syntax.Name) and n.id in aliases for n in syntax.walk(node))

    def _error(self, node, reason):
        return ConversionError(reason, filename=self.module.path, lineno=node.lineno, col=node.col_offset)

    # ------------------------------------------------------------------ file
    def run(self) -> str:
        sites = self.selected()
        if not sites:
            return self.unconverted()
        already = set(self.converted_names)
        while True:  # again without the functions --all could not convert, if any
            self.converted_names = already | {s.node.name for s in sites if not s.is_method}
            edits, failed = [], []
            for site in sites:
                try:
                    edits.append(self.convert_site(site))
                except ConversionError as exc:
                    if id(site) in self.explicit:
                        raise
                    failed.append((site, exc))
            if not failed:
                break
            for site, exc in failed:
                sites.remove(site)
                why = f"called by '{self.callee_of[id(site)]}'" if id(site) in self.callee_of else "--all"
                self.warnings.append(
                    f"{exc.location or self.module.path}: warning: '{site.qualname}' is left as it "
                    f"is ({why}): {exc.reason}"
                )
            if not sites:
                return self.unconverted()
        edits.append(self.line_map_edit(sites))
        lines, srcs = _apply_mapped(self.module.lines, edits)
        text, srcs = self.fix_imports("".join(lines), sites, srcs)
        # (the map starts with the line it is on: ``ops.source_lines`` checks it, so that a
        # written file edited since, whose lines moved, keeps its own lines)
        own = 1 + text[: text.index(_MAP_PLACEHOLDER)].count("\n")
        return text.replace(_MAP_PLACEHOLDER, repr(f"{own}:{lines_text(srcs)}"), 1)

    def line_map_edit(self, sites):
        """The file's one line of bookkeeping, after the last module-level statement that
        holds a converted function (before the code that runs the file: ``if __name__ ==
        "__main__":``): ``ops.source_lines('model.py', '<map>')``, which gives the functions
        above it the source's line numbers when the file runs (``runtime/ops/lines.py``), so
        that tracebacks and messages name the user's lines, as under ``autolax.jit``. The map
        is written last (``_MAP_PLACEHOLDER``), once the file's lines are known."""
        ends = [
            stmt.end_lineno
            for stmt in self.module.tree.body
            if any(stmt.lineno <= site.node.lineno <= stmt.end_lineno for site in sites)
        ]
        end = max(ends)
        line = f"{self.ops_alias}.source_lines({self.written_as!r}, {_MAP_PLACEHOLDER})"
        return end + 1, end, [("", None), ("", None), (line, None)]

    def unconverted(self) -> str:
        """The file when no function of it is converted here: as it is; with
        ``--standalone``, its imports still made the runtime's copy's (a file ``autolax
        convert`` wrote before, whose functions already call ``ops``)."""
        return self.fix_imports(self.module.text, []) if self.options.standalone else self.module.text

    def convert_site(self, site):
        module = self.module
        node = site.node
        fn = syntax.deepcopy(node)
        fn.decorator_list = []
        originals = emit.originals(fn)
        original_body = [syntax.dump(s) for s in fn.body]
        classes = _local_classes(fn, site.qualname)
        closure = {"__class__": Context.MISSING} if site.is_method else {}
        converted = self.convert_def(fn, closure, node, site.qualname)
        self.convert_local_classes(converted.node, classes)
        # A call of a function that (through others) calls this one stays ``ops.call``: its
        # guard stops a recursion under a traced condition (TracedRecursionError), where a
        # direct call would recurse without end while tracing.
        direct = (
            {g for g in self.converted_names if node.name not in self._reaches(g)}
            if not site.is_method
            else self.converted_names
        )
        # A helper that writes into its parameters hands them back to ``ops.call`` /
        # ``ops.call_writing`` (passes/writeback.py), not to a plain call.
        direct = direct - self.writers()
        _DirectCalls(self.ops_alias, direct, _bound_names(converted.node)).visit(converted.node)
        new = converted.node

        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        wrapper = syntax.unparse(new.decorator_list[-1]).strip() if converted.ctx.wrapper is not None else None
        lines = converted_def(
            module, node, new, originals, original_body, lambda end: self.header_lines(site, first, end), wrapper
        )
        # each written line with the source line it stands for (``line_map_edit``)
        return first, node.end_lineno, lines

    def convert_local_classes(self, tree, classes):
        """Converts in place the methods of the classes defined inside the converted
        function ``tree``, which its conversion left as written (``pipeline``'s
        ``_set_class_bodies_aside``: ``autolax.jit`` converts them when they are called; the
        written file has no converter to do that). ``classes``: ``_local_classes``."""
        for cls in _outermost(tree, syntax.ClassDef, stop=syntax.ClassDef):
            if (cls.lineno, cls.col_offset) in classes:
                self._convert_class_body(cls.body, classes)

    def _convert_class_body(self, block, classes):
        for i, stmt in enumerate(block):
            if isinstance(stmt, syntax.ClassDef):
                self._convert_class_body(stmt.body, classes)
            elif isinstance(stmt, syntax.FunctionDef):
                found = classes.get((stmt.lineno, stmt.col_offset))
                if found is not None:
                    block[i] = self._convert_method(stmt, *found, classes)
            elif not isinstance(stmt, syntax.AsyncFunctionDef):
                for inner in _blocks(stmt):
                    self._convert_class_body(inner, classes)

    def _convert_method(self, node, qualname, outer, classes):
        """The converted ``def`` of a method of a local class, or ``node`` as written for
        one ``autolax.jit`` would not convert either (a generator; one marked by autolax's
        decorators, or converted already) or one that cannot be converted (with a warning,
        as ``autolax.jit`` warns when it runs one as written)."""
        if (
            _is_generator(node)
            or self._calls_runtime(node)
            or any(self.module.decorator_kind(d) for d in node.decorator_list)
        ):
            return node
        fn = syntax.deepcopy(node)
        fn.decorator_list = []
        # Its free names are the enclosing functions' variables (read from their cells, as
        # written) or globals: the passes may assume nothing of the first kind.
        closure = dict.fromkeys(outer, Context.MISSING)
        closure["__class__"] = Context.MISSING
        try:
            converted = self.convert_def(fn, closure, node, qualname)
        except ConversionError as exc:
            self.warnings.append(
                f"{exc.location or self.module.path}: warning: '{qualname}' is left as it is: {exc.reason}"
            )
            return node
        new = converted.node
        new.decorator_list = node.decorator_list + new.decorator_list  # (``@ops.function`` last)
        self.convert_local_classes(new, classes)
        return new

    def convert_def(self, fn, closure, node, qualname):
        """``fn`` (a copy of ``node`` without its decorators) through the passes, calling the
        runtime by the file's name for it."""
        converted = pipeline.convert_node(
            fn,
            filename=self.module.path,
            source_lines=self.module.lines,
            globals=self.globals,
            closure=closure,
            ops_name_hint=self.ops_alias,
            spec_filename=self.written_as,
            defs=self.defs,
            methods=self._methods(qualname),
        )
        if converted.ctx.ops != self.ops_alias:
            raise self._error(
                node,
                f"'{self.ops_alias}' is a local name in '{qualname}'; the converted code "
                f"needs it for autolax's runtime: rename the local variable",
            )
        return converted

    def _methods(self, qualname) -> dict:
        """The ``def``s of the module-level class whose method ``qualname`` is, by name."""
        owner = qualname.rsplit(".", 1)[0] if "." in qualname else None
        return {
            s.node.name: s.node
            for s in self.module.sites
            if s.is_method
            and owner
            and s.qualname.rsplit(".", 1)[0] == owner
            and isinstance(s.node, syntax.FunctionDef)
        }

    def writers(self) -> set:
        """The file's module-level functions that write into a parameter."""
        if self._writers is None:
            self._writers = {
                name for name, node in self.defs.items() if writeback.writes_into_parameters(node, self.defs)
            }
        return self._writers

    def _reaches(self, name) -> set:
        """The module-level functions of the file that the function ``name`` calls, directly
        or through others (by name, as written)."""
        if getattr(self, "_calls", None) is None:
            self._calls = {}
            for stmt in syntax.walk(self.module.tree):
                if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                    self._calls.setdefault(stmt.name, set()).update(
                        n.func.id
                        for n in syntax.walk(stmt)
                        if isinstance(n, syntax.Call) and isinstance(n.func, syntax.Name)
                    )
        seen, todo = set(), [name]
        while todo:
            for callee in self._calls.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    def header_lines(self, site, first, header_end):
        """Decorator and ``def`` lines, with autolax's decorators rewritten: ``@autolax.jit``
        becomes ``@jax.jit`` and ``@autolax.convert`` is removed; their options that
        ``jax.jit`` lacks (``strict``, ``max_steps``, ...) become ``@ops.options(...)`` below.
        With the source line each stands for."""
        module = self.module
        lines = [module.line(i).rstrip("\r\n") for i in range(first, header_end + 1)]
        srcs = list(range(first, header_end + 1))
        for dec in reversed(site.decorators):
            if dec.kind not in ("jit", "convert"):
                continue
            d = dec.node
            lo, hi = d.lineno - first, d.end_lineno - first
            indent = emit.indent_of(lines[lo])
            own = self.own_options(d, dec.kind)
            options = [f"{indent}@{self.ops_alias}.options({', '.join(own)})"] if own else []
            if dec.kind == "convert":
                lines[lo : hi + 1] = options
                srcs[lo : hi + 1] = [d.lineno] * len(options)
                continue
            new = self.jit_decorator(d, lines[lo : hi + 1]) + options
            lines[lo : hi + 1] = new
            srcs[lo : hi + 1] = [d.lineno] * len(new)
        return lines, srcs

    def own_options(self, d, kind) -> list:
        """``name=value`` of each option of autolax's decorator ``d`` that ``jax.jit`` lacks
        (all of them for ``autolax.convert``); refuses one the runtime cannot carry, and a
        ``**mapping`` (which options it holds is known only when the file runs)."""
        if not isinstance(d, syntax.Call):
            return []
        name = "autolax.jit" if kind == "jit" else "autolax.convert"
        only = autolax_only_options(kind)
        out = []
        for kw in d.keywords:
            if kw.arg is None:
                raise self._error(
                    kw.value,
                    f"'**{syntax.unparse(kw.value)}' in @{name}(...): autolax convert must know "
                    f"which options it holds, since {', '.join(only)} "
                    f"{'is' if len(only) == 1 else 'are'} autolax's own (not jax.jit's); "
                    "write the options out",
                )
            if kw.arg in only:
                if kw.arg not in _carried():
                    raise self._error(
                        kw.value,
                        f"@{name}({kw.arg}=...) has no equivalent in a converted file "
                        f"(autolax's runtime cannot carry it); remove it or convert this "
                        f"function with {name} instead of autolax convert",
                    )
                out.append(f"{kw.arg}={syntax.unparse(kw.value)}")
        return out

    def jit_decorator(self, d, text_lines):
        jit = self.jit_name()
        if isinstance(d, syntax.Call) and self.module.dotted(d.func) == "functools.partial":
            # @partial(autolax.jit, static_argnums=...) -> @partial(jax.jit, static_argnums=...)
            func = d.args[0]
            drop = any(kw.arg in autolax_only_options() for kw in d.keywords)
            if not drop and func.lineno == func.end_lineno:
                row = func.lineno - d.lineno
                line = text_lines[row]
                return (
                    text_lines[:row]
                    + [line[: func.col_offset] + jit + line[func.end_col_offset :]]
                    + text_lines[row + 1 :]
                )
            keywords = [kw for kw in d.keywords if kw.arg not in autolax_only_options()]
            call = syntax.Call(func=d.func, args=[syntax.dotted(jit)] + d.args[1:], keywords=keywords)
            return [f"{emit.indent_of(text_lines[0])}@{syntax.unparse(call)}"]
        func = d.func if isinstance(d, syntax.Call) else d
        drop = isinstance(d, syntax.Call) and any(kw.arg in autolax_only_options() for kw in d.keywords)
        if not drop and func.lineno == func.end_lineno:
            first = text_lines[0]
            return [first[: func.col_offset] + jit + first[func.end_col_offset :]] + text_lines[1:]
        keywords = [kw for kw in d.keywords if kw.arg not in autolax_only_options()]
        if not d.args and not keywords:
            text = jit
        else:
            text = syntax.unparse(syntax.Call(func=syntax.dotted(jit), args=d.args, keywords=keywords))
        indent = emit.indent_of(text_lines[0])
        return [f"{indent}@{text}"]

    def jit_name(self) -> str:
        """How the converted file spells ``jax.jit`` (adding ``import jax`` if need be)."""
        name = self.module.imported_as("jax.jit")
        if name is not None:
            return name
        jax = self.module.imported_as("jax")
        if jax is not None:
            return f"{jax}.jit"
        self.needs_jax = True
        return "jax.jit"

    # ------------------------------------------------------------------ imports
    def fix_imports(self, text: str, sites, srcs=None):
        """Drops autolax imports the converted code no longer uses and adds the ones it
        needs (``from autolax.runtime import ops``, ``import jax``). ``--standalone``: the runtime is
        imported from its copy (``from autolax_runtime import ops``), and no other use of
        autolax may remain."""
        try:
            tree = syntax.parse(text)
        except SyntaxError as exc:  # a bug of ours, not of the input
            raise ConversionError(
                f"internal error: the converted file does not parse ({exc.msg} at line {exc.lineno})",
                filename=self.module.path,
            ) from None
        runtime = RUNTIME_COPY if self.options.standalone else "autolax.runtime"
        used_after = _used_names(tree)
        lines = source_lines(text)
        edits, removed_at, bound_after = self._import_edits(tree, lines, runtime, used_after)
        edits = self._add_needed_imports(edits, tree, runtime, used_after, bound_after, removed_at)
        edits = [(a, _swallow_blank(lines, a, b) if not e else b, e) for a, b, e in edits]
        if srcs is None:
            return "".join(_apply(lines, edits, keep_ends=True))
        # (``srcs``: the source line of each line of ``text``, kept with its line)
        edits = [(a, b, [(line, None) for line in e]) for a, b, e in edits]
        lines, srcs = _apply_mapped(list(zip(lines, srcs)), edits, keep_ends=True)
        return "".join(lines), srcs

    def _import_edits(self, tree, lines, runtime: str, used_after: set):
        """The edits ``(first line, last line, new lines)`` of the top-level imports whose
        names change, the line of the first import removed whole (None if none), and the
        names the imports bind afterwards."""
        used_before = _used_names(self.module.tree)
        edits, removed_at = [], None
        bound_after = set()
        for stmt in tree.body:
            if not isinstance(stmt, (syntax.Import, syntax.ImportFrom)):
                continue
            pairs = list(zip(stmt.names, import_targets(stmt))) if _aligned(stmt) else []
            keep = [alias for alias, pair in pairs if self._keeps_import(pair, runtime, used_after, used_before)]
            if not pairs or len(keep) == len(stmt.names):
                bound_after |= {b for b, _ in import_targets(stmt)}
                continue
            bound_after |= {b for a, (b, _) in pairs if a in keep}
            if keep:
                new = syntax.deepcopy(stmt)
                new.names = keep
                new_lines = [emit.indent_of(lines[stmt.lineno - 1]) + syntax.unparse(new) + "\n"]
            else:
                new_lines = []
                removed_at = stmt.lineno if removed_at is None else removed_at
            edits.append((stmt.lineno, stmt.end_lineno, new_lines))
        return edits, removed_at, bound_after

    def _keeps_import(self, pair, runtime: str, used_after: set, used_before: set) -> bool:
        """Whether the converted file keeps one imported name (``pair``: the name bound and
        the module or object imported). ``--standalone``: a use of autolax left is an error."""
        bound, target = pair
        top = target.split(".")[0]
        if top not in ("autolax", RUNTIME_COPY):
            return True
        if target == f"{runtime}.ops" or top == "autolax" and not self.options.standalone and target != "autolax.ops":
            return bound in used_after or bound not in used_before
        if target.endswith(".ops") and bound == self.ops_alias:
            return False  # the runtime imported from the other place: added below
        if bound in used_after:
            if self.options.standalone:
                raise self._still_used(bound)
            return True
        return False

    def _add_needed_imports(self, edits, tree, runtime: str, used_after: set, bound_after: set, removed_at):
        """``edits`` with the imports the converted code needs and lacks (``import jax``, the
        runtime's ``ops``): in place of the first import removed, else at the top."""
        needed = []
        if self.needs_jax and "jax" not in self.module.bindings:
            needed.append("import jax\n")
        if self.ops_alias in used_after and self.ops_alias not in bound_after:
            alias = "" if self.ops_alias == "ops" else f" as {self.ops_alias}"
            needed.append(f"from {runtime} import ops{alias}\n")
        at, before, after = _import_anchor(tree)
        if needed and removed_at is not None:
            return [(a, b, needed + e if a == removed_at else e) for a, b, e in edits]
        if needed:
            edits.append((at, at - 1, before + needed + after))
        return edits

    def _still_used(self, bound):
        for node in syntax.walk(self.module.tree):
            if isinstance(node, syntax.Name) and node.id == bound and not self._in_autolax_decorator(node):
                return _standalone_uses_autolax(self.module.path, bound, node.lineno, node.col_offset)
        return _standalone_uses_autolax(self.module.path, bound)

    def _in_autolax_decorator(self, name_node):
        for site in self.module.sites:
            for dec in site.decorators:
                if dec.kind and any(n is name_node for n in syntax.walk(dec.node)):
                    return True
        return False


class _DirectCalls(syntax.NodeTransformer):
    """``ops.call(helper, x)`` -> ``helper(x)`` when ``helper`` is converted in the same file
    (the runtime would otherwise convert it again when it is called)."""

    def __init__(self, ops, functions, bound):
        self.ops = ops
        self.functions = functions - bound

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, syntax.Attribute)
            and func.attr == "call"
            and isinstance(func.value, syntax.Name)
            and func.value.id == self.ops
            and node.args
            and isinstance(node.args[0], syntax.Name)
            and node.args[0].id in self.functions
        ):
            new = syntax.Call(func=node.args[0], args=node.args[1:], keywords=node.keywords)
            return syntax.copy_location(new, node)
        return node


# ----------------------------------------------------------------------------- helpers
def _apply(lines, edits, keep_ends=False):
    """Replaces 1-based inclusive line ranges (``end == start - 1``: insert before start)."""
    out = list(lines) if keep_ends else [ln for ln in lines]
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if not keep_ends:
            new = [ln + "\n" for ln in new]
        out[start - 1 : end] = new
    return out if keep_ends else "".join(out)


def _apply_mapped(lines, edits, keep_ends=False):
    """``_apply`` on lines that carry the source line they stand for: ``lines`` are the
    source's lines (line ``k`` stands for ``k``) or ``(text, source line)`` pairs, as the
    new lines of ``edits`` are. The written lines and, apart, their source lines."""
    pairs = [ln if isinstance(ln, tuple) else (ln, k) for k, ln in enumerate(lines, 1)]
    out = list(pairs)
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        # (one entry per line as ``source_lines`` splits the text: a line's text may hold
        # a line end of its own)
        out[start - 1 : end] = [
            (piece, src) for text, src in new for piece in source_lines(text if keep_ends else text + "\n")
        ]
    return [text for text, _ in out], [src for _, src in out]


# Stands for the line map in the file's last line until the file's lines are known.
_MAP_PLACEHOLDER = "'<the line map>'"


def _swallow_blank(lines, start, end) -> int:
    """The end of a removed line range, extended over the blank line after it when a blank
    line also precedes it (so removing an import leaves no double gap)."""
    before_blank = start == 1 or not lines[start - 2].strip()
    if before_blank and end < len(lines) and not lines[end].strip():
        return end + 1
    return end


def _free_name(module, *candidates) -> str:
    used = {n.id for n in syntax.walk(module.tree) if isinstance(n, syntax.Name)} | module.module_names()
    for node in syntax.walk(module.tree):
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            used.add(node.name)
            used |= set(syntax.param_names(node.args)) if not isinstance(node, syntax.ClassDef) else set()
    for name in candidates:
        if name not in used:
            return name
    n = 1
    while f"{candidates[-1]}_{n}" in used:
        n += 1
    return f"{candidates[-1]}_{n}"


def _bound_names(fn_node) -> set:
    out = set()
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.Name) and not isinstance(node.ctx, syntax.Load):
            out.add(node.id)
        elif isinstance(node, (syntax.FunctionDef, syntax.ClassDef)) and node is not fn_node:
            out.add(node.name)
    return out


def _used_names(tree) -> set:
    return {n.id for n in syntax.walk(tree) if isinstance(n, syntax.Name) and isinstance(n.ctx, syntax.Load)}


def _aligned(stmt) -> bool:
    return isinstance(stmt, syntax.Import) or (
        not stmt.level and stmt.module and all(a.name != "*" for a in stmt.names)
    )


def _import_anchor(tree):
    """(the line before which new imports go, blank lines before and after them): after the
    leading docstring, ``__future__`` imports and imports of the module."""
    body = tree.body
    i = 0
    if (
        body
        and isinstance(body[0], syntax.Expr)
        and isinstance(body[0].value, syntax.Constant)
        and isinstance(body[0].value.value, str)
    ):
        i = 1
    last = body[i - 1] if i else None
    imports = False
    while i < len(body) and isinstance(body[i], (syntax.Import, syntax.ImportFrom)):
        last = body[i]
        imports = imports or not (isinstance(last, syntax.ImportFrom) and last.module == "__future__")
        i += 1
    if last is not None:
        return last.end_lineno + 1, [] if imports else ["\n"], []
    if not body:
        return 1, [], []
    first = body[0]
    definition = isinstance(first, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef))
    return (
        min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])]),
        [],
        ["\n"] * (2 if definition else 1),
    )


def _local_classes(fn_node, qualname) -> dict:
    """(line, column) of each class defined inside the function ``fn_node``, at any depth
    (in nested functions, in methods of its classes), and of each ``def`` in such a class's
    body -> (its qualified name, the names local to the functions around it: what its
    methods' free names may be)."""
    out = {}
    functions = (syntax.FunctionDef, syntax.AsyncFunctionDef)

    def visit(block, prefix, outer):
        for stmt in block:
            if isinstance(stmt, functions):
                visit(stmt.body, f"{prefix}{stmt.name}.<locals>.", outer | activity.local_names(stmt))
            elif isinstance(stmt, syntax.ClassDef):
                out[(stmt.lineno, stmt.col_offset)] = (prefix + stmt.name, outer)
                for method in _outermost(stmt, functions, stop=_SCOPES):
                    out[(method.lineno, method.col_offset)] = (f"{prefix}{stmt.name}.{method.name}", outer)
                visit(stmt.body, f"{prefix}{stmt.name}.", outer)
            else:
                for inner in _blocks(stmt):
                    visit(inner, prefix, outer)

    if any(isinstance(node, syntax.ClassDef) for node in syntax.walk(fn_node)):
        visit(fn_node.body, f"{qualname}.<locals>.", frozenset(activity.local_names(fn_node)))
    return out


_SCOPES = (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)


def _outermost(tree, kinds, stop) -> list:
    """The nodes of classes ``kinds`` inside ``tree`` (not ``tree`` itself), not looking
    into those found nor into nodes of classes ``stop``."""
    out = []
    stack = syntax.iter_child_nodes(tree)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            out.append(node)
        elif not isinstance(node, stop):
            stack.extend(syntax.iter_child_nodes(node))
    return out


def _blocks(stmt):
    """The statement lists inside a compound statement (``if``, ``try``, ``with``, loops,
    ``match``)."""
    holders = (syntax.ExceptHandler, syntax.match_case)
    for name in syntax.BLOCK_FIELDS:
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            if any(isinstance(item, holders) for item in block):
                yield from (item.body for item in block)
            else:
                yield block


def _is_generator(node) -> bool:
    stack = list(node.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (syntax.Yield, syntax.YieldFrom)):
            return True
        if not isinstance(n, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef, syntax.Lambda)):
            stack.extend(syntax.iter_child_nodes(n))
    return False


# ``--standalone``'s own error, kept with its only user (the runtime never raises it, so its
# copy need not hold it); worded as the runtime's catalogue (``errors.MESSAGES``) words its own.
_STANDALONE_USES_AUTOLAX = errors.Message(
    ConversionError,
    "'{name}' is still used here, but --standalone output imports no autolax",
    "remove this use, or drop --standalone.",
    "#command-line",
)


def _standalone_uses_autolax(filename, name: str, lineno=None, col=None) -> ConversionError:
    """``ConversionError`` for a use of autolax that ``--standalone`` output cannot keep."""
    entry = _STANDALONE_USES_AUTOLAX
    exc = ConversionError(
        entry.text.format(name=name).rstrip(),
        filename=filename,
        lineno=lineno,
        col=col,
        source_line=None,
        fix=entry.fix.format(name=name),
    )
    exc.code = "standalone-uses-autolax"
    exc.docs = entry.docs
    return exc
