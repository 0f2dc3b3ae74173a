"""Writes a converted function back as text, keeping what it can of the original: the one
printer of converted code (``autolax convert`` writes each function with ``converted_def``;
``autolax.to_source`` and ``%%autolax --show`` show ``shown``, the same text).

A statement that conversion left as it was (same syntax tree, same position) is copied from
the file verbatim, with its own formatting, string quotes and comments; everything else is
unparsed. Comments between statements stay before the statement that follows them in the
file (or the code generated from it), and blank lines the author left between statements
are kept. Nested ``def`` blocks get a blank line before and after, as a person writes them.
"""

from __future__ import annotations

import copy
import io
import tokenize
from dataclasses import dataclass

from autolax.frontend.transpile import syntax

_COMPOUND = (syntax.If, syntax.For, syntax.While, syntax.With, syntax.Try, syntax.FunctionDef, syntax.ClassDef)


@dataclass
class Original:
    """A statement of the file before conversion."""

    dump: str
    node: object


def originals(fn_node) -> dict:
    """(line, column) -> Original, for every statement inside ``fn_node`` (taken before the
    passes run: they change nodes in place)."""
    out = {}
    for node in syntax.walk(fn_node):
        if isinstance(node, syntax.stmt) and node is not fn_node and getattr(node, "lineno", None) is not None:
            out[(node.lineno, node.col_offset)] = Original(syntax.dump(node), syntax.deepcopy(node))
    return out


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


class Emitter:
    """Emits statements of one function body; ``module`` gives the file's lines and comments."""

    def __init__(self, module, first_line: int, last_line: int, originals_map: dict, unit: str):
        self.module = module
        self.first_line = first_line
        self.pending = sorted(ln for ln in module.comments if first_line <= ln <= last_line)
        self.originals = originals_map
        self.unit = unit
        self.out: list[str] = []
        # the source line each line of ``out`` stands for (None: no code, a blank line), for
        # the written file's line map (``ops.source_lines``)
        self.src: list = []
        self.line = first_line  # the line of the statement being written
        self.last = "open"  # "open" (after a block header), "blank", "code", "def_end"
        self.seen_lines: set = set()

    # ------------------------------------------------------------------ entry points
    def body(self, stmts, indent: str) -> list[str]:
        self.block(stmts, indent)
        self.flush(None, indent)
        return self.out

    def add(self, line: str, src) -> None:
        self.out.append(line)
        self.src.append(src)

    def block(self, stmts, indent: str) -> None:
        self.last = "open"
        for s in stmts:
            self.stmt(s, indent)

    # ------------------------------------------------------------------ comments, blanks
    def flush(self, upto, indent: str) -> None:
        """Emits the pending comments on lines before ``upto`` (all of them for None)."""
        while self.pending and (upto is None or self.pending[0] < upto):
            line = self.pending.pop(0)
            self.add(indent + self.module.comments[line][1], None)
            self.last = "code"

    def consume(self, start: int, end: int) -> None:
        self.pending = [ln for ln in self.pending if not start <= ln <= end]

    def blank(self) -> None:
        if self.last not in ("open", "blank"):
            self.add("", None)
            self.last = "blank"

    def _blank_before_in_file(self, lineno: int) -> bool:
        ln = lineno - 1
        while ln > self.first_line and self.module.line(ln).lstrip().startswith("#"):
            ln -= 1
        return ln > self.first_line and not self.module.line(ln).strip()

    # ------------------------------------------------------------------ statements
    def stmt(self, s, indent: str) -> None:
        lineno = _first_line(s)
        is_def = isinstance(s, (syntax.FunctionDef, syntax.ClassDef))
        if is_def or self.last == "def_end":
            self.blank()
        elif lineno is not None and lineno not in self.seen_lines and self._blank_before_in_file(lineno):
            self.blank()
        if lineno is not None:
            self.seen_lines.add(lineno)
            if self._verbatim(s):
                self.flush(lineno, indent)
            elif isinstance(s, _COMPOUND):
                self.flush(s.lineno + 1, indent)
            else:
                # A statement that stands for several (a branch written as a lambda in its
                # ``ops.cond``): the comments of the lines it holds come before it.
                self.flush(_last_line(s) + 1, indent)
        text = self._verbatim_text(s, indent)
        if text is not None:
            start = _first_line(self._verbatim(s))
            for k, line in enumerate(text):
                self.add(line, start + k)
            self.last = "def_end" if is_def else "code"
            return
        outer = self.line
        self.line = getattr(s, "lineno", None) or outer  # (a generated statement has its statement's line)
        if isinstance(s, _COMPOUND):
            self.compound(s, indent)
            self.last = "def_end" if is_def else "code"
        else:
            for line in _lines(s, indent):
                self.add(indent + line, self.line)
            self.last = "code"
        self.line = outer

    def compound(self, s, indent: str, keyword: str | None = None) -> None:
        inner = indent + self.unit
        line = getattr(s, "lineno", None) or self.line
        if isinstance(s, syntax.If):
            self.add(f"{indent}{keyword or 'if'} {_expr(s.test)}:", line)
            self.block(s.body, inner)
            if len(s.orelse) == 1 and isinstance(s.orelse[0], syntax.If) and self._verbatim(s.orelse[0]) is None:
                outer, self.line = self.line, s.orelse[0].lineno or line
                self.compound(s.orelse[0], indent, keyword="elif")
                self.line = outer
            elif s.orelse:
                self.add(f"{indent}else:", None)
                self.block(s.orelse, inner)
            return
        if isinstance(s, syntax.Try):
            self.add(f"{indent}try:", line)
            self.block(s.body, inner)
            for handler in s.handlers:
                for h in _header(handler):
                    self.add(indent + h, getattr(handler, "lineno", None) or line)
                self.block(handler.body, inner)
            if s.orelse:
                self.add(f"{indent}else:", None)
                self.block(s.orelse, inner)
            if s.finalbody:
                self.add(f"{indent}finally:", None)
                self.block(s.finalbody, inner)
            return
        for h in _header(s):
            self.add(indent + h, line)
        self.block(s.body, inner)
        if getattr(s, "orelse", None):
            self.add(f"{indent}else:", None)
            self.block(s.orelse, inner)

    # ------------------------------------------------------------------ verbatim copies
    def _verbatim(self, s):
        key = (getattr(s, "lineno", None), getattr(s, "col_offset", None))
        orig = self.originals.get(key)
        if orig is None or orig.dump != syntax.dump(s):
            return None
        return orig.node

    def _verbatim_text(self, s, indent: str):
        """The statement's own text from the file, re-indented to ``indent``, or None."""
        node = self._verbatim(s)
        if node is None:
            return None
        lines = self.module.lines
        # A decorated ``def`` or ``class`` starts at its first decorator (``node.lineno`` is
        # its ``def`` line): the decorators are part of the statement.
        start, end = _first_line(node), node.end_lineno
        first = lines[start - 1].rstrip("\r\n")
        last = lines[end - 1].rstrip("\r\n")
        own_indent = first[: node.col_offset]
        if first[node.col_offset :].startswith("elif"):  # an `elif` the passes made an `if`
            return None
        if own_indent.strip():  # shares its first line with other code (`if c: x = 1`)
            if end != start:
                return None
            own_indent = indent_of(first)
        tail = last[node.end_col_offset :]
        if tail.strip() and not tail.strip().startswith("#"):
            return None  # `a = 1; b = 2`: take no part of the next statement
        if start == end:
            text = [indent + first[node.col_offset :].rstrip()]
        else:
            delta = len(indent) - len(own_indent)
            if delta and (_has_multiline_string(node) or not _same_kind(indent, own_indent)):
                return None
            text = [indent + first[node.col_offset :].rstrip()]
            for raw in lines[start:end]:
                line = raw.rstrip("\r\n").rstrip()
                if not line.strip():
                    text.append("")
                elif delta >= 0:
                    text.append((indent[:1] or " ") * delta + line)
                elif indent_of(line)[:-delta].strip() == "" and len(indent_of(line)) >= -delta:
                    text.append(line[-delta:])
                else:
                    return None
        self.consume(start, end)
        return text


def _first_line(node):
    """The first line of a statement: of its first decorator, if it has any."""
    lineno = getattr(node, "lineno", None)
    decorators = getattr(node, "decorator_list", None)
    if lineno is not None and decorators:
        return min([lineno] + [d.lineno for d in decorators])
    return lineno


# Lines of generated code are kept about this wide: a longer call of an ``ops`` function
# (``ops.cases`` with its arms, ``ops.cond`` with branches written as lambdas) is broken
# after its arguments, aligned after its parenthesis, one ``ops.cases`` arm per line.
_WIDTH = 120


def _lines(s, indent: str) -> list[str]:
    """``s`` printed, a long ``ops`` call broken over lines (``_WIDTH``). A descriptor
    (``at='...'``) counts as empty: where the text breaks does not depend on the file's name
    (``to_source`` and the CLI break the same statement alike)."""
    text = syntax.unparse(s)
    call = getattr(s, "value", None)
    at = next(
        (
            k.value.value
            for k in getattr(call, "keywords", ())
            if k.arg == "at" and isinstance(k.value, syntax.Constant) and isinstance(k.value.value, str)
        ),
        None,
    )
    if "\n" in text or len(indent) + len(text) - len(repr(at or "")) <= _WIDTH:
        return text.splitlines()
    if isinstance(s, syntax.Assign):
        head = " = ".join(_target(t) for t in s.targets) + " = "
    elif isinstance(s, (syntax.Return, syntax.Expr)):
        head = "return " if isinstance(s, syntax.Return) else ""
    else:
        return [text]
    if not (
        isinstance(call, syntax.Call)
        and isinstance(call.func, syntax.Attribute)
        and isinstance(call.func.value, syntax.Name)
        and not any(isinstance(a, syntax.Starred) for a in call.args)
        and all(k.arg is not None for k in call.keywords)
    ):
        return [text]
    head += syntax.unparse(call.func) + "("
    pad = " " * len(head)
    # (text, width it counts for, whether it is lines of its own: ``ops.cases``' arms)
    items = []
    for k, arg in enumerate(call.args):
        if k == 0 and isinstance(arg, syntax.List) and call.func.attr == "cases":
            arms = [syntax.unparse(e) for e in arg.elts]  # one arm per line, aligned after `[`
            items.append(("[" + (",\n" + pad + " ").join(arms) + "]", len(arms[0]) + 2 if arms else 2, True))
        else:
            piece = syntax.unparse(arg)
            items.append((piece, len(piece), False))
    for k in call.keywords:
        piece = f"{k.arg}={syntax.unparse(k.value)}"
        items.append((piece, len("at=''") if k.arg == "at" else len(piece), False))
    lines, line = [], head
    for n, (piece, width, own_lines) in enumerate(items):
        piece += ")" if n == len(items) - 1 else ","
        if line not in (head, pad) and len(indent) + len(line) + 2 + width > _WIDTH:
            lines.append(line.rstrip())
            line = pad
        elif line not in (head, pad):
            line += " "
        line += piece
        if own_lines:
            *done, line = line.split("\n")
            lines.extend(done)
    lines.append(line)
    return lines


def _target(node) -> str:
    """An assignment's target as written: ``a, b``, not ``(a, b)``."""
    if isinstance(node, syntax.Tuple) and node.elts:
        return ", ".join(syntax.unparse(e) for e in node.elts)
    return syntax.unparse(node)


def _last_line(node) -> int:
    """The last line any part of a (generated) statement was located at."""
    return max(n.lineno for n in syntax.walk(node) if getattr(n, "lineno", None) is not None)


def _same_kind(a: str, b: str) -> bool:
    chars = set(a) | set(b)
    return chars <= {" "} or chars <= {"\t"}


def _has_multiline_string(node) -> bool:
    return any(
        isinstance(n, (syntax.Constant,))
        and isinstance(n.value, (str, bytes))
        and n.end_lineno != n.lineno
        or type(n).__name__ == "JoinedStr"
        and n.end_lineno != n.lineno
        for n in syntax.walk(node)
        if getattr(n, "lineno", None) is not None
    )


def _expr(node) -> str:
    return syntax.unparse(node)


def _header(node) -> list[str]:
    """The header line(s) of a compound statement (decorators included), unparsed."""
    stub = copy.copy(node)
    stub.body = [syntax.Pass()]
    for field in ("orelse", "finalbody", "handlers"):
        if hasattr(stub, field):
            setattr(stub, field, [])
    lines = syntax.unparse(stub).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines[:-1]


def converted_def(module, node, new, originals, original_body, header_for, wrapper=None, *, dedent=False) -> list:
    """The lines of the converted ``def`` ``new`` of ``node`` (a ``def`` of ``module``'s file,
    ``originals`` / ``original_body`` its statements before conversion), each with the source
    line it stands for (None: a comment or blank line; the written file's line map,
    ``ops.source_lines``): ``header_for(line of the header's ``:``)`` gives its decorator and
    ``def`` lines as written, and the source line of each; ``@wrapper``
    (``@ops.function``, ``passes.runtime_checks``) goes right above the ``def`` line, under
    the user's decorators and ``@jax.jit``; the body is copied as written where conversion
    left it, else written by ``emit.Emitter`` (comments and blank lines kept). ``dedent``:
    at column 0 (``autolax.to_source`` of a method or nested function). The one printer of
    converted code: ``autolax convert`` writes each function with it, and ``to_source``
    (also ``%%autolax --show``) shows it."""
    header_end, inline_body = _header_end(module, node)
    header, header_src = header_for(header_end)
    def_indent = indent_of(module.line(node.lineno))
    if wrapper is not None:
        at = len(header) - (header_end - node.lineno) - 1
        header.insert(at, def_indent + "@" + wrapper)
        header_src.insert(at, node.lineno)
    if inline_body:
        body_indent = def_indent + "    "
    else:
        body_indent = indent_of(module.line(node.body[0].lineno))
    unit = (
        body_indent[len(def_indent) :] if body_indent.startswith(def_indent) and body_indent != def_indent else "    "
    )
    if dedent and def_indent:
        header = [line[len(def_indent) :] if line.startswith(def_indent) else line for line in header]
        body_indent = unit
    if not inline_body and not (dedent and def_indent) and [syntax.dump(s) for s in new.body] == original_body:
        body = [ln.rstrip("\r\n") for ln in module.lines[header_end : node.end_lineno]]
        body_src = list(range(header_end + 1, node.end_lineno + 1))
    else:
        if inline_body:
            inline = _inline_header(module, node, header_end)
            header = header[:-1] + [inline[len(def_indent) :] if dedent else inline]
        emitter = Emitter(module, header_end + 1, node.end_lineno, originals, unit)
        body = emitter.body(new.body, body_indent)
        body_src = emitter.src
    return list(zip(header + body, header_src + body_src))


def _header_end(module, node):
    """(line of the ``:`` ending the ``def`` header, whether the body starts on that line)."""
    start = node.lineno
    source = "".join(module.lines[start - 1 :])
    depth = 0
    seen_def = False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME and tok.string == "def":
                seen_def = True
            elif tok.type == tokenize.OP and seen_def:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    line = tok.start[0] + start - 1
                    rest = tok.line[tok.end[1] :].strip()
                    return line, bool(rest) and not rest.startswith("#")
    except (tokenize.TokenError, SyntaxError):  # IndentationError: the file was parsed already
        pass
    return node.body[0].lineno - 1, False


def _inline_header(module, node, header_end):
    """``def f(x):`` of a one-line function (``def f(x): return x``)."""
    line = module.line(header_end).rstrip("\r\n")
    body_col = node.body[0].col_offset
    return line[:body_col].rstrip()


class SourceFile:
    """The file a function was converted from, as ``Emitter`` and ``converted_def`` read it
    (``cli.module.Module`` without the parse of its imports and functions)."""

    def __init__(self, lines: list):
        self.lines = lines
        self.comments = {}
        try:
            for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
                if tok.type == tokenize.COMMENT:
                    self.comments[tok.start[0]] = (tok.start[1], tok.string)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 1 <= lineno <= len(self.lines) else ""


def shown(converted, lines: list) -> str | None:
    """``autolax.to_source``'s text of the converted ``def`` ``converted`` (an ``ast`` tree,
    located in the file whose ``lines`` it was converted from): what ``autolax convert``
    writes for it (``converted_def``), at column 0, without the user's decorators. None where
    the file holds no ``def`` of that name at its place (a lambda, a changed file)."""
    try:
        tree = syntax.parse("".join(lines))
    except SyntaxError:
        return None
    node = next(
        (
            n
            for n in syntax.walk(tree)
            if isinstance(n, syntax.FunctionDef)
            and n.lineno == converted.lineno
            and n.col_offset == converted.col_offset
            and n.name == converted.name
        ),
        None,
    )
    if node is None or not node.body:
        return None
    new = syntax.from_ast(converted)
    module = SourceFile(lines)
    wrapper = syntax.unparse(new.decorator_list[-1]).strip() if new.decorator_list else None
    out = converted_def(
        module,
        node,
        new,
        originals(node),
        [syntax.dump(s) for s in node.body],
        lambda end: (
            [module.line(i).rstrip("\r\n") for i in range(node.lineno, end + 1)],
            list(range(node.lineno, end + 1)),
        ),
        wrapper,
        dedent=True,
    )
    return "\n".join(line for line, _ in out) + "\n"
