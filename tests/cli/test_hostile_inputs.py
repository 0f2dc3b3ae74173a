"""Hostile and odd inputs (issue 16, item 2): `autolax convert`, `autolax.convert` and the
`%%autolax` magic each give a clear error or a correct result -- never an internal
traceback, a hang, a mangled file, or a half-written output.

The CLI reads and writes regular files only, checked before anything is written; a FIFO or
a device is refused without being opened for reading to the end (which could block or never
end); several outputs are written all or nothing. Cases that could hang or exhaust memory if
they regressed run in a subprocess with a time and memory limit.
"""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax import cli
from autolax.cli import Options, convert_source, files
from conftest import load_module

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
POSIX = sys.platform != "win32"

DECORATED = '''\
import autolax


@autolax.jit
def f(x):
    if x > 0:
        x = x + 1
    else:
        x = x * 2
    return x
'''


def write(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


load = load_module


def error_line(capsys, argv):
    """The one `file: error: ...` line of a failed run (exit 2, no traceback)."""
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) >= 1, err
    return lines


def tree_snapshot(root):
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                  for p in Path(root).rglob("*"))


def subprocess_cli(argv, cwd, timeout=60, memory_gb=4, stdout=subprocess.PIPE):
    """`python -m autolax` under a time limit and an address-space limit (a regression that
    reads a device to the end must fail, not take the machine's memory). The child sets its
    own limit: a `preexec_fn` would fork this multithreaded (JAX) process."""
    limit = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({memory_gb} << 30, {memory_gb} << 30)); "
             if POSIX else "")
    code = limit + "import runpy; runpy.run_module('autolax', run_name='__main__', alter_sys=True)"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


# ----------------------------------------------------------------------------- special files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_as_source_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    result = subprocess_cli(["convert", "pipe.py"], tmp_path)
    assert result.returncode == 2
    assert result.stderr == "pipe.py: error: not a regular file (a FIFO); autolax convert reads regular files only\n"
    os.mkdir(tmp_path / "pkg")
    write(tmp_path / "pkg" / "a.py", DECORATED)
    os.mkfifo(tmp_path / "pkg" / "b.py")
    result = subprocess_cli(["convert", "--all-or-nothing", "pkg", "-o", "out"], tmp_path)
    assert result.returncode == 2 and "pkg/b.py: error: not a regular file (a FIFO)" in result.stderr
    assert not (tmp_path / "out").exists()
    result = subprocess_cli(["convert", "pkg", "-o", "out"], tmp_path)  # the other files are written
    assert result.returncode == 2 and "pkg/b.py: error: not a regular file (a FIFO)" in result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["a.py"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_as_output_is_refused_without_blocking(tmp_path):
    write(tmp_path / "m.py", DECORATED)
    os.mkfifo(tmp_path / "out.py")
    for flags in ([], ["--diff"], ["--check"]):
        result = subprocess_cli(["convert", "m.py", "-o", "out.py", *flags], tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stderr == "out.py: error: not a regular file (a FIFO); autolax convert writes regular files only\n"
        assert stat.S_ISFIFO(os.lstat(tmp_path / "out.py").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_as_output_is_refused_without_reading_it(tmp_path):
    write(tmp_path / "m.py", DECORATED)
    result = subprocess_cli(["convert", "m.py", "-o", "/dev/full"], tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("/dev/full: error: not a regular file (a character device); autolax convert writes "
                             "regular files only\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_as_standard_output_is_an_error_line(tmp_path):
    write(tmp_path / "m.py", DECORATED)
    with open("/dev/full", "w") as full:
        result = subprocess_cli(["convert", "m.py"], tmp_path, stdout=full)
    assert result.returncode == 2
    assert result.stderr == "<stdout>: error: cannot write: No space left on device\n"


def _character_device(path):
    """A character device node like /dev/null at ``path`` (needs the right to mknod)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("cannot create a device node here")
    return path


def test_device_as_output_is_not_replaced(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    device = _character_device(tmp_path / "null")
    assert error_line(capsys, ["convert", str(src), "-o", str(device)]) == [
        f"{device}: error: not a regular file (a character device); autolax convert writes regular files only"]
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "null"]  # no temporary file left


@pytest.mark.skipif(IS_ROOT or not os.path.exists("/dev/null"), reason="as root a regression would replace /dev/null")
def test_dev_null_as_output_is_refused(tmp_path, capsys):
    src = write(tmp_path / "m.py", DECORATED)
    assert error_line(capsys, ["convert", str(src), "-o", "/dev/null"]) == [
        "/dev/null: error: not a regular file (a character device); autolax convert writes regular files only"]


def test_directory_among_outputs_writes_nothing(tmp_path, capsys):
    a = write(tmp_path / "a.py", DECORATED)
    b = write(tmp_path / "b.py", DECORATED)
    out = tmp_path / "out"
    (out / "b.py").mkdir(parents=True)
    lines = error_line(capsys, ["convert", "--all-or-nothing", str(a), str(b), "-o", str(out)])
    assert lines == [f"{out / 'b.py'}: error: not a regular file (a directory); autolax convert writes regular "
                     "files only"]
    assert sorted(p.name for p in out.iterdir()) == ["b.py"]  # a.py was not written either
    lines = error_line(capsys, ["convert", str(a), str(b), "-o", str(out)])  # without the flag: a.py is written
    assert lines[0] == f"{out / 'b.py'}: error: not a regular file (a directory); autolax convert writes regular " \
                       "files only"
    assert sorted(p.name for p in out.iterdir()) == ["a.py", "b.py"] and (out / "b.py").is_dir()


def test_unwritable_output_writes_nothing(tmp_path, capsys):
    a = write(tmp_path / "a.py", DECORATED)
    b = write(tmp_path / "b.py", DECORATED)
    out = tmp_path / "out"
    locked = write(out / "b.py", "old\n")
    locked.chmod(0o444)
    lines = error_line(capsys, ["convert", "--all-or-nothing", str(a), str(b), "-o", str(out)])
    assert lines == [f"{locked}: error: is read-only; autolax convert does not replace read-only files (make it "
                     "writable, or write elsewhere)"]
    assert sorted(p.name for p in out.iterdir()) == ["b.py"] and locked.read_text() == "old\n"
    # A read-only output that is already up to date is not an error: nothing needs writing.
    locked.chmod(0o644)
    assert cli.main(["convert", str(a), str(b), "-o", str(out)]) == 0
    locked.chmod(0o444)
    assert cli.main(["convert", str(a), str(b), "-o", str(out)]) == 0
    locked.chmod(0o644)


def test_output_under_a_regular_file_writes_nothing(tmp_path, capsys):
    src = write(tmp_path / "pkg" / "m.py", DECORATED)
    write(tmp_path / "pkg" / "sub" / "n.py", DECORATED)
    blocker = write(tmp_path / "out" / "sub", "a file where a directory must go\n")
    lines = error_line(capsys, ["convert", "--all-or-nothing", str(src.parent), "-o", str(tmp_path / "out")])
    assert lines == [f"{blocker / 'n.py'}: error: cannot create the directory: {blocker} is not a directory"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["sub"]


def test_failed_write_removes_what_it_made(tmp_path, capsys, monkeypatch):
    """A write that fails half-way (disk full on the second file) leaves no output, no
    temporary file and no new directory."""
    write(tmp_path / "pkg" / "a.py", DECORATED)
    write(tmp_path / "pkg" / "sub" / "b.py", DECORATED)
    real_mkstemp = files.tempfile.mkstemp
    made = []

    def mkstemp(*args, **kwargs):
        made.append(args)
        if len(made) == 2:
            raise OSError(28, "No space left on device")
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    out = tmp_path / "out"
    assert cli.main(["convert", str(tmp_path / "pkg"), "-o", str(out)]) == 2
    assert capsys.readouterr().err.endswith("error: cannot write: No space left on device\n")
    assert not out.exists()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symlinks(tmp_path, capsys):
    outside = write(tmp_path / "outside" / "secret.py", DECORATED)
    pkg = tmp_path / "pkg"
    write(pkg / "a.py", DECORATED)
    os.symlink(pkg / "a.py", pkg / "inside_link.py")
    out = tmp_path / "out"
    assert cli.main(["convert", str(pkg), "-o", str(out)]) == 0  # a link within the tree: converted
    # The same code; the descriptors and the line map name each file as given.
    assert (out / "inside_link.py").read_text() == (out / "a.py").read_text().replace(
        "a.py:", "inside_link.py:").replace("a.py',", "inside_link.py',")

    os.symlink(outside, pkg / "leak.py")
    before = tree_snapshot(out)
    lines = error_line(capsys, ["convert", str(pkg), "-o", str(out)])
    assert lines == [f"{pkg / 'leak.py'}: error: a symbolic link to {outside.resolve()}, outside {pkg}; autolax "
                     "convert does not follow links out of the directory it converts"]
    assert tree_snapshot(out) == before
    os.unlink(pkg / "leak.py")

    # An output that is a link is refused (replacing it would drop the link); the file it
    # points at is not written through it.
    target = write(tmp_path / "elsewhere" / "kept.py", "kept\n")
    os.unlink(out / "a.py")
    os.symlink(target, out / "a.py")
    write(pkg / "a.py", DECORATED + "\n# changed\n")
    lines = error_line(capsys, ["convert", "--all-or-nothing", str(pkg), "-o", str(out)])
    assert lines == [f"{out / 'a.py'}: error: is a symbolic link; autolax convert replaces regular files only "
                     "(remove the link, or write elsewhere)"]
    assert target.read_text() == "kept\n" and os.path.islink(out / "a.py")

    # A directory link inside OUT may not lead the output out of OUT.
    os.unlink(out / "a.py")
    write(pkg / "sub" / "c.py", DECORATED)
    os.symlink(tmp_path / "elsewhere", out / "sub")
    lines = error_line(capsys, ["convert", str(pkg), "-o", str(out)])
    assert lines[:1] == [f"{out / 'sub' / 'c.py'}: error: a symbolic link in the path leads outside {out} (to "
                         f"{(tmp_path / 'elsewhere').resolve()}); autolax convert writes inside OUT only"]
    assert lines[1].startswith("autolax convert: 1 of 3 files not converted")
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["kept.py"]


def test_source_changing_during_conversion_writes_nothing(tmp_path, capsys, monkeypatch):
    src = write(tmp_path / "m.py", DECORATED)
    real = files.convert_source

    def convert_while_edited(text, path, options, **kwargs):
        result = real(text, path, options, **kwargs)
        with open(src, "a") as f:
            f.write("\n# saved by an editor meanwhile\n")
        return result

    monkeypatch.setattr(files, "convert_source", convert_while_edited)
    out = tmp_path / "out.py"
    lines = error_line(capsys, ["convert", str(src), "-o", str(out)])
    assert lines == [f"{src}: error: the file changed while it was being converted; nothing was written (run "
                     "autolax convert again)"]
    assert not out.exists()


# ----------------------------------------------------------------------------- contents
def _converted_module(tmp_path, data, name, standalone=False):
    """The converted file (written with -o) loaded as a module, and its bytes."""
    src = write(tmp_path / f"{name}.py", data)
    out = tmp_path / f"{name}_out.py"
    argv = ["convert", str(src), "-o", str(out)] + (["--standalone"] if standalone else [])
    assert cli.main(argv) == 0
    return load(out, f"{name}_out_{int(standalone)}"), out.read_bytes()


@pytest.mark.parametrize("standalone", [False, True])
def test_cr_only_line_endings_convert_and_keep_their_line_ends(tmp_path, standalone):
    data = DECORATED.replace("\n", "\r").encode()
    module, written = _converted_module(tmp_path, data, "cr", standalone)
    assert b"\n" not in written and written.count(b"\r") > DECORATED.count("\n")
    _, lf = _converted_module(tmp_path, DECORATED.encode(), "lf", standalone)
    # descriptors and the line map name the source
    assert written == lf.replace(b"\n", b"\r").replace(b"lf.py:", b"cr.py:").replace(b"'lf.py'", b"'cr.py'")
    for x in (-2.0, 3.0):
        assert float(module.f(jnp.float32(x))) == (x + 1 if x > 0 else x * 2)


@pytest.mark.parametrize("standalone", [False, True])
def test_bom_and_declared_encodings_are_kept(tmp_path, standalone):
    module, written = _converted_module(tmp_path, b"\xef\xbb\xbf" + DECORATED.encode(), "bom", standalone)
    assert written.startswith(b"\xef\xbb\xbf") and written.count(b"\xef\xbb\xbf") == 1
    assert float(module.f(jnp.float32(3.0))) == 4.0
    latin = ("# -*- coding: latin-1 -*-\n" + DECORATED.replace("x = x * 2", "x = x * 2  # d\xe9j\xe0")).encode("latin-1")
    module, written = _converted_module(tmp_path, latin, "latin", standalone)
    # (the branch is a lambda in its `ops.cond` now: the comment stands on its own line above it)
    assert "# d\xe9j\xe0\n".encode("latin-1") in written and b"lambda x: x * 2" in written
    assert float(module.f(jnp.float32(-1.0))) == -2.0


def test_form_feeds_and_unicode_line_separators_are_not_line_ends(tmp_path):
    """Python source treats \\x0c, \\x1c-\\x1e, \\x85 and \\u2028 as ordinary characters."""
    text = ('import autolax\n\x0c\n# a comment with \u2028 and \x85 in it\nLABEL = "a\u2028b\x1cc"\n\n'
            + DECORATED.split("\n\n\n", 1)[1] + "\nTAIL = 1\n")
    for standalone in (False, True):
        module, _ = _converted_module(tmp_path, text.encode(), f"ff{int(standalone)}", standalone)
        assert module.LABEL == "a\u2028b\x1cc" and module.TAIL == 1
        assert float(module.f(jnp.float32(3.0))) == 4.0


def test_mixed_line_endings_take_the_most_frequent(tmp_path):
    text = DECORATED.replace("\n", "\r\n").replace("else:\r\n", "else:\n")
    _, written = _converted_module(tmp_path, text.encode(), "mixed")
    assert b"\r\n" in written and b"\n" not in written.replace(b"\r\n", b"")


@pytest.mark.parametrize("data, message", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "not a Python source file (it contains NUL bytes)"),
    (b"\x89PNG\r\n\x1a\n\xff\xfe\xfd", "cannot decode: invalid or missing encoding declaration"),
    (b"x = 1\n\xff\xfe\n", "cannot decode line 2 as utf-8: invalid start byte"),
    ("# -*- coding: ascii -*-\nx = '\u00e9'\n".encode("utf-8"), "cannot decode line 2 as ascii: ordinal not in range(128)"),
    (b"# -*- coding: no-such-codec -*-\nx = 1\n", "cannot decode: unknown encoding: no-such-codec"),
    ("x = 'caf\xe9'\n".encode("latin-1"), "cannot decode: invalid or missing encoding declaration"),
    (b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nx = 1\n", "cannot decode: the file starts with a UTF-8 byte order mark but declares another encoding"),
    ("x = '\u00e9'\n".encode("utf-16"), "not a Python source file (it contains NUL bytes)"),
])
def test_binary_and_undecodable_files_are_one_error_line(tmp_path, capsys, data, message):
    src = write(tmp_path / "bad.py", data)
    out = write(tmp_path / "out.py", "keep\n")
    assert error_line(capsys, ["convert", str(src), "-o", str(out)]) == [f"{src}: error: {message}"]
    assert out.read_text() == "keep\n"


@pytest.mark.parametrize("text", [
    "def f(x:\n    return x\n",
    "def f(x):\n    if x > 0:\n        y = 1\n      return y\n",
    "def f(x):\n\treturn x\n        pass\n",
    "s = '''never closed\n",
    "x = (1 +\n",
    "@autolax.jit\n",
    "return 1\n",
    "def f(x):\n    nonlocal y\n",
    "x = 1\n\x00\n",
])
def test_syntax_errors_are_one_error_line_and_write_nothing(tmp_path, capsys, text):
    src = write(tmp_path / "bad.py", text)
    out = write(tmp_path / "out.py", "keep\n")
    (line,) = error_line(capsys, ["convert", str(src), "-o", str(out)])
    assert line.startswith(f"{src}:") and ": error: " in line
    assert out.read_text() == "keep\n"


def test_empty_and_blank_files_are_kept(tmp_path):
    for name, text in [("empty", ""), ("blank", "\n\n  \n"), ("comment", "# only a comment")]:
        src = write(tmp_path / f"{name}.py", text)
        out = tmp_path / f"{name}_out.py"
        assert cli.main(["convert", "--all", str(src), "-o", str(out)]) == 0
        assert out.read_text() == text


def test_huge_file_converts_and_oversized_file_is_refused(tmp_path, capsys):
    """A few MB (embedded data and comments around one function) converts quickly and is
    kept byte for byte; a file over the size limit is refused before it is read."""
    blob = 'BLOB = """\n' + ("0123456789abcdef" * 4 + "\n") * 45_000 + '"""\n'
    comments = ("# generated " * 6 + "\n") * 15_000
    src = write(tmp_path / "huge.py", DECORATED + "\n" + blob + comments)
    assert src.stat().st_size > 3_000_000
    out = tmp_path / "huge_out.py"
    for standalone in ([], ["--standalone"]):
        assert cli.main(["convert", str(src), "-o", str(out), *standalone]) == 0
        assert out.read_text().endswith(blob + comments)
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(files.MAX_FILE_BYTES + 1)  # sparse: no disk used
    assert error_line(capsys, ["convert", str(big)]) == [
        f"{big}: error: too large ({files.MAX_FILE_BYTES + 1:,} bytes; autolax convert reads files of at most "
        f"{files.MAX_FILE_BYTES:,} bytes)"]


def _nested_ifs(depth):
    lines = ["import autolax", "", "", "@autolax.jit", "def f(x):"]
    for i in range(depth):
        lines.append("    " * (i + 1) + f"if x > {i}:")
    lines.append("    " * (depth + 1) + "x = x + 1")
    lines.append("    return x")
    return "\n".join(lines) + "\n"


def test_deep_nesting(tmp_path, capsys):
    module, _ = _converted_module(tmp_path, _nested_ifs(20), "deep")
    for x in (-1.0, 5.0, 30.0):
        assert float(module.f(jnp.float32(x))) == (x + 1 if x > 19 else x)
    # Beyond Python's own limits: the parser's error, as a line.
    (line,) = error_line(capsys, ["convert", str(write(tmp_path / "d101.py", _nested_ifs(101)))])
    assert line.endswith("error: invalid syntax: too many levels of indentation")
    parens = "import autolax\n\n@autolax.jit\ndef f(x):\n    return " + "(x + " * 250 + "1" + ")" * 250 + "\n"
    (line,) = error_line(capsys, ["convert", str(write(tmp_path / "p250.py", parens))])
    assert line.endswith("error: invalid syntax: too many nested parentheses")
    long_sum = "import autolax\n\n@autolax.jit\ndef f(x):\n    return " + " + ".join(["x"] * 20_000) + "\n"
    src = write(tmp_path / "sum.py", long_sum)
    assert error_line(capsys, ["convert", str(src)]) == [f"{src}: error: the file is nested too deeply to convert"]


# ----------------------------------------------------------------------------- autolax.convert
@pytest.mark.parametrize("data", [
    DECORATED.replace("\n", "\r").encode(),
    DECORATED.replace("\n", "\r\n").encode(),
    b"\xef\xbb\xbf" + DECORATED.encode(),
    ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + DECORATED).encode("latin-1"),
    ("import autolax\n\x0c\nS = 'a\u2028b'\n" + DECORATED.split("\n\n\n", 1)[1]).encode(),
    _nested_ifs(20).encode(),
], ids=["cr", "crlf", "bom", "latin-1", "separators", "deep"])
def test_convert_functions_from_odd_files(tmp_path, data):
    module = load(write(tmp_path / "odd.py", data), f"odd_{abs(hash(data))}")
    plain = module.f.__wrapped__ if hasattr(module.f, "__wrapped__") else module.f
    for x in (-3.0, 0.5, 25.0):
        expected = plain(x)
        assert float(module.f(x)) == expected  # autolax.jit, from the decorator
        assert float(autolax.convert(plain)(x)) == expected
        assert float(autolax.convert(plain)(jnp.float32(x))) == expected


def test_convert_never_runs_a_source_edited_after_import(tmp_path):
    """The file of an imported module is edited: Python still runs the old code, so the
    converted function may not run the new text: a SourceChangedError says so."""
    text = DECORATED.replace("@autolax.jit\n", "")  # converted only later, after the edit
    path = write(tmp_path / "edited.py", text)
    plain = load(path, "edited_module").f
    path.write_text(text.replace("x = x + 1", "x = x + 100"))
    os.utime(path, (path.stat().st_atime + 10, path.stat().st_mtime + 10))
    import linecache

    linecache.checkcache(str(path))
    for convert in (autolax.convert, autolax.jit):
        with pytest.raises(autolax.SourceChangedError) as info:
            convert(plain)
        assert str(info.value) == (
            f"{path} changed after 'f' was defined; its source no longer matches its code (define it again: "
            "re-import the module or re-run the cell)\nFix: re-import the module (or run the cell again), so the "
            "function matches its file")
    assert plain(3.0) == 4.0


KINDS = '''\
from __future__ import annotations

import functools

SCALE = 2.0


def plain(x: float, n: int = 3, *args, k=1, **kwargs) -> float:
    """A docstring."""
    total = 0.0
    for i in range(n):
        if (y := x * i) > 1.0:
            total += y
    return total + sum(v for v in args) + k + len(kwargs) + SCALE


def outer(a):
    b = a + 1

    def inner(x):
        nonlocal b
        b = b + x
        return [b * j for j in range(2)] + [lambda: a]

    return inner


class Base:
    def step(self, x):
        return x + 1


class Child(Base):
    @functools.lru_cache(maxsize=None)
    def cached(self, x):
        return x

    def step(self, x):
        try:
            with open(__file__) as f:
                f.read(0)
        except OSError:
            pass
        return super().step(x) * 2 + float(f"{x}" == "nan")
'''


def test_staleness_check_recognises_unedited_functions(tmp_path):
    """Every kind of function compiles back to its own code (closures, cells, ``super()``,
    decorators, ``from __future__`` flags, nested code); an edit of any of them is seen."""
    import ast

    from autolax.frontend.transpile import staleness

    path = write(tmp_path / "kinds.py", KINDS)
    module = load(path, "kinds_module")
    functions = {"plain": module.plain, "outer": module.outer, "inner": module.outer(1.0),
                 "step": module.Child.step, "cached": module.Child.cached.__wrapped__}

    def defs_of(tree):
        defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        defs["step"] = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Child").body[1]
        return defs

    tree = ast.parse(KINDS)
    defs = defs_of(tree)
    compiled = compile(tree, str(path), "exec", dont_inherit=True, flags=module.plain.__code__.co_flags & 0x1000000)
    for name, fn in functions.items():
        code = fn.__code__
        assert staleness._find(compiled, code.co_name, code.co_firstlineno) is not None, name  # compared, not trusted
        assert staleness.matches(code, defs[name], str(path), tree), name
        assert staleness.matches(code, defs[name], str(path)), name  # the def alone (as from a cell)
    text = KINDS.replace("b * j", "b * j * 2").replace("* 2 +", "* 3 +").replace("k + len", "k - len")
    edited = ast.parse(text)
    for name in ("plain", "outer", "inner", "step"):
        assert not staleness.matches(functions[name].__code__, defs_of(edited)[name], str(path), edited), name
    assert float(autolax.convert(module.plain)(2.0, 3)) == module.plain(2.0, 3)


def with_asserts(x):
    assert x is not None, "pytest rewrites this assert in the test module"
    if x > 0:
        x = x + 1
    return x


def test_code_rewritten_by_pytest_still_converts():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converted = autolax.convert(with_asserts)
    assert float(converted(jnp.float32(2.0))) == 3.0
    assert "ops.cond" in autolax.to_source(with_asserts)


# ----------------------------------------------------------------------------- the magic
@pytest.fixture
def ip():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.reset()
    shell.run_cell("%load_ext autolax").raise_error()
    yield shell
    shell.extension_manager.unload_extension("autolax")
    shell.reset()


@pytest.mark.parametrize("cell, error, lineno", [
    ("%%autolax\ndef f(x):\n    return x +\n", SyntaxError, 3),
    ("%%autolax\ndef f(x):\n    if x > 0:\n        y = x\n   return y\n", IndentationError, 5),
    ("%%autolax\ndef f(x):\n\treturn x\n        pass\n", TabError, 4),
    ("%%autolax\nx = 1\n\x00\n", SyntaxError, 3),
    ("%%autolax\n" + "".join("    " * i + f"if x{i}:\n" for i in range(101)) + "    " * 101 + "pass\n",
     IndentationError, 102),
])
def test_magic_syntax_errors_point_at_the_cell(ip, cell, error, lineno):
    from autolax.runtime.sites import display_filename

    result = ip.run_cell(cell, store_history=True)
    err = result.error_in_exec
    assert type(err) is error
    assert (display_filename(err.filename), err.lineno) == (f"In[{result.execution_count}]", lineno)
    assert "f" not in ip.user_ns and "x" not in ip.user_ns


def test_magic_cells_with_crlf_and_separators(ip):
    cell = "%%autolax\r\nlabel = 'a\u2028b'\r\ndef f(x):\r\n    if x > 0:\r\n        x = x + 1\r\n    return x\r\n"
    ip.run_cell(cell, store_history=True).raise_error()
    assert ip.user_ns["label"] == "a\u2028b"
    assert float(ip.user_ns["f"](3.0)) == 4.0 and float(ip.user_ns["f"](-3.0)) == -3.0
    np.testing.assert_allclose(ip.run_cell("f(2.0)").result, 3.0)
