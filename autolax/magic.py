"""IPython front end: ``%load_ext autolax`` and the ``%%autolax`` cell magic."""

from __future__ import annotations

import ast
import functools
import linecache
import sys
import types

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

import autolax
from autolax.cli.module import source_lines
from autolax.interrupt import Interruptible
from autolax.runtime.errors import ConversionError

_UNBOUND = object()


class ConvertedSource:
    """A converted function's source: highlighted HTML in Jupyter, plain text in a terminal."""

    def __init__(self, source: str):
        self.source = source

    def __repr__(self):
        return self.source

    def _repr_html_(self):
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        # Inline styles: class-based pygments CSS is not loaded by every front end.
        return highlight(self.source, PythonLexer(), HtmlFormatter(noclasses=True))


@magics_class
class AutolaxMagics(Magics):
    """The ``%%autolax`` cell magic (registered by ``%load_ext autolax``)."""

    @magic_arguments("%autolax")  # usage line reads %%autolax
    @argument("--show", action="store_true", help="display the converted source of each function")
    @argument("--no-jit", action="store_true", help="use autolax.convert instead of autolax.jit")
    @argument("--strict", action="store_true", help="a loop carrying traced values that would be unrolled is an error")
    @argument("--static", metavar="NAME,...", default="", help="argument names passed to jax.jit as static_argnames")
    @cell_magic
    def autolax(self, line, cell):
        """Runs the cell; each function defined at its top level is replaced, right after
        its ``def`` runs, by ``autolax.jit(fn)`` (``autolax.convert(fn)`` with --no-jit).

        Errors and tracebacks give the cell's own line numbers (the magic line is line 1).
        """
        __tracebackhide__ = True
        args = parse_argstring(self.autolax, line)
        static = [name.strip() for name in args.static.split(",") if name.strip()]
        if static and args.no_jit:
            raise UsageError("%%autolax: --static applies to autolax.jit; drop it or --no-jit")
        tree, filename = self._parse_cell(line, cell)
        defs = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        params = {a.arg for d in defs for a in d.args.posonlyargs + d.args.args + d.args.kwonlyargs}
        unknown = [name for name in static if name not in params]
        if unknown:
            raise UsageError(f"%%autolax: --static {','.join(unknown)}: no function in the cell has such an argument")
        self._run_cell(tree, defs, filename, args, static)

    def _parse_cell(self, line, cell):
        """The cell's tree (IPython's transforms applied) and the file name it is cached and
        compiled under."""
        __tracebackhide__ = True
        shell = self.shell
        text = cell
        if not _parses(cell):  # IPython syntax (`%time`, `!ls`) in the cell
            try:
                text = _keep_leading_lines(cell, shell.transform_cell(cell))
            except SyntaxError:  # its tokenizer's IndentationError: the parser's below says where
                pass
        # The cell is cached as the user sees it (magic line included) and compiled one line
        # down, so linecache, tracebacks and autolax's messages agree on the cell's numbering.
        cached = f"%%autolax {line}".rstrip() + "\n" + text
        filename = shell.compile.cache(cached, _cell_number(shell))
        # IPython splits the cell with str.splitlines, which also breaks lines at "\u2028",
        # "\x0c" ...; Python does not, and autolax reads the function's source from here.
        linecache.cache[filename] = (
            len(cached),
            None,
            [ln if ln.endswith("\n") else ln + "\n" for ln in source_lines(cached)],
            filename,
        )
        try:
            tree = shell.transform_ast(shell.compile.ast_parse("\n" + text, filename))
        except SyntaxError as exc:
            raise _at_cell_line(exc, filename, "\n" + text) from None
        return tree, filename

    def _run_cell(self, tree, defs, filename, args, static):
        """Runs the cell statement by statement, replacing each function right after its
        ``def``. A cell that fails leaves the namespace as it was: no half-defined state, and
        no unconverted function left under the name of a converted one."""
        __tracebackhide__ = True
        shell = self.shell
        ns = shell.user_ns
        saved = {name: ns.get(name, _UNBOUND) for name in _bound_names(tree)}
        try:
            for i, node in enumerate(tree.body):
                last_expr = i == len(tree.body) - 1 and isinstance(node, ast.Expr)
                mode, unit = ("single", ast.Interactive([node])) if last_expr else ("exec", ast.Module([node], []))
                exec(shell.compile(unit, filename, mode), shell.user_global_ns, shell.user_ns)
                if node in defs:
                    self._replace(node.name, filename, args, static)
        except BaseException as exc:
            for name, value in saved.items():
                if value is _UNBOUND:
                    ns.pop(name, None)
                else:
                    ns[name] = value
            if isinstance(exc, ConversionError):
                label = (shell.compile.format_code_name(filename) or ("", filename))[1]
                rendered = [f"{type(exc).__name__}: " + str(exc).replace(filename, label)]
                exc._render_traceback_ = lambda: rendered  # IPython shows this instead of a traceback
                raise exc from None
            raise

    def _replace(self, name, filename, args, static):
        __tracebackhide__ = True
        ns = self.shell.user_ns
        fn = ns.get(name)
        if not (isinstance(fn, types.FunctionType) and fn.__code__.co_filename == filename):
            print(f"%%autolax: '{name}' is not a plain function after its decorators; left as it is", file=sys.stderr)
            return
        if args.no_jit:
            new = autolax.convert(fn, strict=args.strict)
        else:
            own = tuple(n for n in static if n in fn.__code__.co_varnames[: _n_params(fn.__code__)])
            new = Interruptible(
                autolax.jit(fn, static_argnames=own or None, strict=args.strict),
                own,
                unjitted=functools.partial(autolax.convert, fn, strict=args.strict),
            )
        if args.show:
            display(ConvertedSource(autolax.to_source(new)))
        ns[name] = new


def _cell_number(shell) -> int:
    """The N of the running cell's In[N]: the number IPython cached the calling cell's code
    under (IPython 8 and 9 differ in when they advance ``execution_count``)."""
    numbers = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename in numbers:
            return numbers[frame.f_code.co_filename]
        frame = frame.f_back
    return shell.execution_count


def _bound_names(tree) -> set:
    """The names a cell may bind in the namespace: assigned, defined, imported or declared
    ``global`` anywhere in it (a superset: restoring an unchanged name changes nothing)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
    return out


def _at_cell_line(exc: SyntaxError, filename: str, source: str) -> SyntaxError:
    """``exc`` (from parsing the cell) located in the cell, as IPython shows a cell's own
    syntax errors: ``Cell In[N], line L``. A NUL byte, which the parser reports without a
    line, is given its line."""
    new = type(exc)(exc.msg, (filename, exc.lineno, exc.offset, exc.text, exc.end_lineno, exc.end_offset))
    if exc.lineno is None and "\0" in source:
        lineno = source.count("\n", 0, source.index("\0")) + 1
        new = type(exc)(
            exc.msg, (filename, lineno, None, source.splitlines()[lineno - 1].replace("\0", ""), None, None)
        )
    return new


def _n_params(code):
    return code.co_argcount + code.co_kwonlyargcount


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _keep_leading_lines(raw: str, transformed: str) -> str:
    """IPython's input transforms drop leading blank lines; put them back so line numbers
    still match the cell."""

    def leading_blank(text):
        lines = text.splitlines()
        return next((i for i, ln in enumerate(lines) if ln.strip()), len(lines))

    return "\n" * (leading_blank(raw) - leading_blank(transformed)) + transformed


def load_ipython_extension(ipython):
    """``%load_ext autolax``: registers the ``%%autolax`` cell magic."""
    ipython.register_magics(AutolaxMagics)


def unload_ipython_extension(ipython):
    """``%unload_ext autolax``: removes the ``%%autolax`` cell magic."""
    manager = ipython.magics_manager
    manager.magics["cell"].pop("autolax", None)
    manager.registry.pop(AutolaxMagics.__name__, None)
