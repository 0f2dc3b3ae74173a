"""``autolax convert``: inputs and outputs, ``--diff`` / ``--check``, atomic writes.

Every input is read and converted, and every output checked, before anything is written.
A file with an error (a syntax error, an unreadable, non-Python or non-regular file, syntax
autolax cannot convert, an output that is a directory, a device, a link or read-only) is
reported and not written; the others are written (``--all-or-nothing``: nothing is). A
problem with the paths given, or with the runtime's copy, writes nothing at all. Only
regular files are read or replaced: a FIFO or a device is refused before it is opened for
anything that could block or never end. Output files are replaced atomically (temporary
file + ``os.replace``), all of them only once every temporary file is written, and only
when their content changes. Inputs are never written.

``--standalone`` writes one more output: the package ``autolax_runtime`` (``runtime_copy``) in
OUT, or beside the output file. It is checked and written with the converted files, all or
nothing; a folder of that name that an earlier run did not write is never touched.
"""

from __future__ import annotations

import codecs
import difflib
import filecmp
import io
import os
import shutil
import stat
import sys
import tempfile
import tokenize
from dataclasses import dataclass

from autolax.cli import runtime_copy
from autolax.cli.convert import Options, convert_source
from autolax.cli.module import source_lines
from autolax.runtime.errors import ConversionError

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2

# Larger files are refused (inputs) or taken as different without being read (outputs).
MAX_FILE_BYTES = 32 * 2**20


class InputError(Exception):
    """A problem with a path given to ``autolax convert`` (reported as ``path: error: ...``)."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message

    def one_line(self) -> str:
        return f"{self.path}: error: {self.message}"


@dataclass
class SourceFile:
    text: str  # with "\n" line ends
    encoding: str
    newline: str
    stat: os.stat_result | None = None  # of the file when it was read

    def encode(self, text: str) -> bytes:
        return text.replace("\n", self.newline).encode(self.encoding)


@dataclass
class Job:
    src: str
    out: str | None  # None: standard output
    root: str | None = None  # the OUT directory this output must stay inside (a link may not lead out)
    data: bool = False  # a file of a converted directory that is not Python (package data): copied as it is
    tree: str | None = None  # the SRC directory it belongs to (how the written code names it: ``written_as``)


def read_source(path: str) -> SourceFile:
    """Reads a ``.py`` file with the encoding it declares (PEP 263)."""
    if not path.endswith(".py"):
        raise InputError(path, "not a Python source file (expected a .py file)")
    data, info = read_regular(path)
    source = decode(path, data)
    source.stat = info
    return source


def read_regular(path: str, limit: int = MAX_FILE_BYTES):
    """(content, ``os.stat_result``) of a regular file of at most ``limit`` bytes.

    Opened without blocking and checked on the open descriptor, so a FIFO (which would
    block until a writer comes) or a device (``/dev/zero`` never ends) is refused, even if
    it replaced a regular file after the path was looked at."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                path, f"not a regular file ({file_kind(info.st_mode)}); autolax convert reads regular files only"
            )
        if info.st_size > limit:
            raise InputError(
                path, f"too large ({info.st_size:,} bytes; autolax convert reads files of at most {limit:,} bytes)"
            )
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(path, f"too large (more than {limit:,} bytes; it grew while being read)")
    return data, info


def file_kind(mode: int) -> str:
    """``'a directory'``, ``'a FIFO'``, ... for a file mode."""
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def decode(path: str, data: bytes) -> SourceFile:
    if b"\0" in data:
        raise InputError(path, "not a Python source file (it contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except SyntaxError as exc:
        if data.startswith(codecs.BOM_UTF8):
            raise InputError(
                path, "cannot decode: the file starts with a UTF-8 byte order mark but declares another encoding"
            ) from None
        raise InputError(path, f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, f"cannot decode line {line} as {encoding}: {exc.reason}") from None
    except LookupError as exc:
        raise InputError(path, f"cannot decode as {encoding}: {exc}") from None
    # Python reads "\r\n" and a lone "\r" as line ends too. The output uses the file's own
    # (the most frequent one, if it mixes them).
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    newline = max(counts, key=counts.get)
    return SourceFile(text.replace("\r\n", "\n").replace("\r", "\n"), encoding, newline)


# ----------------------------------------------------------------------------- planning
def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _python_files(root: str, exclude: str | None, data: list | None = None):
    """The ``.py`` files under ``root``; ``data``: a list to which the other files are added
    (package data: ``.json``, ``.npy``, ...; not compiled files or hidden ones)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):  # links to directories are not followed
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d != "__pycache__"
            and (exclude is None or os.path.realpath(os.path.join(dirpath, d)) != exclude)
            and not _runtime_copy(os.path.join(dirpath, d))
        )
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not name.endswith(".py"):
                if data is not None and not name.startswith(".") and not name.endswith((".pyc", ".pyo")):
                    if os.path.islink(path) and not _inside(path, root):
                        raise InputError(
                            path,
                            f"a symbolic link to {os.path.realpath(path)}, outside {root}; autolax "
                            "convert does not follow links out of the directory it converts",
                        )
                    data.append(path)
                continue
            if os.path.islink(path) and not _inside(path, root):
                raise InputError(
                    path,
                    f"a symbolic link to {os.path.realpath(path)}, outside {root}; autolax "
                    "convert does not follow links out of the directory it converts",
                )
            out.append(path)
    if not out:
        raise InputError(root, "no .py files found in this directory")
    return out


def _runtime_copy(directory: str) -> bool:
    """Is ``directory`` an ``autolax_runtime`` package an earlier ``--standalone`` run wrote
    (not the user's code: never converted)?"""
    return os.path.basename(directory) == runtime_copy.PACKAGE and runtime_copy.written_by_autolax(
        os.path.join(directory, "__init__.py")
    )


def runtime_folder(sources, jobs, output) -> str:
    """Where ``--standalone`` writes the runtime's copy: in OUT when OUT is a directory, else
    beside the output file -- and beside OUT when OUT is a package (one SRC directory with an
    ``__init__.py``, mirrored into OUT), so that the folder put on the import path for the
    runtime is the one the package is imported from: the package's own modules
    (``dataclasses.py``) never shadow top-level ones."""
    if len(sources) == 1 and os.path.isdir(sources[0]) and os.path.isfile(os.path.join(sources[0], "__init__.py")):
        return os.path.dirname(os.path.normpath(output)) or "."
    return output if any(job.root is not None for job in jobs) else (os.path.dirname(output) or ".")


def runtime_jobs(jobs, output, sources=()) -> list:
    """``--standalone``: (job, text) of each file of the runtime's copy (``runtime_folder``).
    Refuses a folder of that name that autolax did not write, and a copy that would
    overwrite an input."""
    folder = runtime_folder(list(sources), jobs, output)
    package = os.path.join(folder, runtime_copy.PACKAGE)
    if os.path.lexists(package):
        init = os.path.join(package, "__init__.py")
        if os.path.islink(package) or not os.path.isdir(package) or not runtime_copy.written_by_autolax(init):
            raise InputError(
                package,
                "exists and was not written by autolax convert --standalone, which writes its "
                "runtime there; autolax convert never replaces what it did not write (rename "
                "it, or write the output elsewhere)",
            )
    inputs = {os.path.realpath(j.src) for j in jobs}
    out = []
    for relpath, text in runtime_copy.files().items():
        path = os.path.join(folder, relpath)
        if os.path.realpath(path) in inputs:
            raise InputError(path, "the output would overwrite an input file; autolax convert never modifies its input")
        if os.path.lexists(path) and not runtime_copy.written_by_autolax(path):
            raise InputError(
                path,
                "exists and was not written by autolax convert --standalone; autolax convert never "
                "replaces what it did not write (remove it, or write the output elsewhere)",
            )
        out.append((Job(None, path, folder), text))
    return out


def plan(sources, output) -> list[Job]:
    """The (input, output) pairs: a file goes to OUT (or into OUT if it is a directory); a
    single directory is mirrored into OUT; several inputs go into OUT under their names."""
    jobs = []
    several = len(sources) > 1
    exclude = os.path.realpath(output) if output is not None else None
    for src in sources:
        if os.path.isdir(src):
            if output is None:
                jobs.extend(Job(f, None) for f in _python_files(src, None))
                continue
            root = os.path.join(output, os.path.basename(os.path.normpath(src))) if several else output
            data = []
            for f in _python_files(src, exclude, data):
                jobs.append(Job(f, os.path.join(root, os.path.relpath(f, src)), output, tree=src))
            jobs.extend(Job(f, os.path.join(root, os.path.relpath(f, src)), output, data=True, tree=src) for f in data)
        elif output is None:
            jobs.append(Job(src, None))
        elif several or os.path.isdir(output) or output.endswith(("/", os.sep)):
            jobs.append(Job(src, os.path.join(output, os.path.basename(src)), output))
        else:
            jobs.append(Job(src, output))
    seen = {}
    inputs = {os.path.realpath(j.src) for j in jobs}
    for job in jobs:
        if job.out is None:
            continue
        real = os.path.realpath(job.out)
        if real in inputs:
            raise InputError(
                job.out, "the output would overwrite an input file; autolax convert never modifies its input"
            )
        if real in seen:
            raise InputError(job.out, f"two inputs ({seen[real]} and {job.src}) would be written to this output")
        seen[real] = job.src
    return jobs


def _existing_ancestor(path: str) -> str:
    directory = os.path.dirname(path) or "."
    while not os.path.lexists(directory):
        parent = os.path.dirname(directory) or "."
        if parent == directory:
            break
        directory = parent
    return directory


def check_output(job: Job) -> None:
    """Refuses an output that is not a regular file (a directory, a FIFO, a device, a
    symbolic link), whose directory cannot be made, or that a link would put outside OUT.
    Only looks (``lstat``): nothing is opened."""
    path = job.out
    try:
        info = os.lstat(path)
    except OSError:  # absent, or a parent is not a directory (reported below)
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise InputError(
            path,
            "is a symbolic link; autolax convert replaces regular files only (remove the link, or write elsewhere)",
        )
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise InputError(
            path, f"not a regular file ({file_kind(info.st_mode)}); autolax convert writes regular files only"
        )
    ancestor = _existing_ancestor(path)
    if not os.path.isdir(ancestor):
        raise InputError(path, f"cannot create the directory: {ancestor} is not a directory")
    if job.root is not None and not _inside(os.path.dirname(path) or ".", job.root):
        raise InputError(
            path,
            f"a symbolic link in the path leads outside {job.root} (to "
            f"{os.path.realpath(os.path.dirname(path))}); autolax convert writes inside OUT only",
        )


def check_writable(path: str) -> None:
    """Refuses to replace a read-only file or to write into a directory this process may
    not write to (checked before anything is written)."""
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise InputError(
            path,
            "is read-only; autolax convert does not replace read-only files (make it writable, or write elsewhere)",
        )
    ancestor = _existing_ancestor(path)
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(path, f"cannot write: permission denied (directory {ancestor})")


def _changed_since_read(source: SourceFile, path: str) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return True
    then = source.stat
    return then is not None and (now.st_ino, now.st_size, now.st_mtime_ns) != (
        then.st_ino,
        then.st_size,
        then.st_mtime_ns,
    )


# ----------------------------------------------------------------------------- running
def written_as(job: Job) -> str:
    """How the converted file names its source in run-time messages: for a file of a
    converted directory, its path in that directory, under the directory's name
    (``pkg/sub/model.py``: what the user knows it as, wherever the output goes); for a single
    file, its path relative to the written file (an absolute path, or one relative to where
    the command ran, would not hold once the files are committed or moved together); on
    standard output, as if the output were beside the source: its file name."""
    if job.out is None:
        return os.path.basename(job.src)
    if job.tree is not None:
        top = os.path.basename(os.path.normpath(os.path.abspath(job.tree)))
        return "/".join([top] + os.path.relpath(job.src, job.tree).split(os.sep))
    try:
        return os.path.relpath(os.path.abspath(job.src), os.path.dirname(os.path.abspath(job.out)))
    except ValueError:  # another drive (Windows)
        return os.path.abspath(job.src)


def run(
    sources, output, options: Options, *, diff=False, check=False, stdout=None, stderr=None, all_or_nothing=False
) -> int:
    """Runs ``autolax convert``; returns the exit code (0 done, 1 ``--check`` found work, 2 error).

    A file that cannot be converted (a syntax error, a construct autolax cannot convert, an
    output it may not replace) is reported (``file:line:col: error: ...``) and not written;
    every other file is converted and written (each atomically), and the exit status is 2.
    ``all_or_nothing`` (``--all-or-nothing``): any error writes nothing at all. A problem
    with the paths themselves, or with ``--standalone``'s runtime copy, writes nothing."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        jobs, runtime = _jobs(sources, output, options, listing=diff or check)
    except InputError as exc:
        return _fail(stderr, [exc.one_line()])
    # errors: (the job it stops, or None for a problem that stops everything, the line)
    errors = _output_errors(jobs + [job for job, _ in runtime])
    results, warnings = _convert_jobs(jobs, options, errors, sources)
    if errors and (all_or_nothing or any(job is None for job, _ in errors) or not results):
        return _fail(stderr, (line for _, line in errors))
    for line in warnings:
        print(line, file=stderr)
    _check_unchanged(results, jobs, errors, all_or_nothing)
    if errors and (all_or_nothing or len({id(job) for job, _ in errors}) == len(jobs)):
        return _fail(stderr, (line for _, line in errors))
    results = [r for r in results if not any(job is r[0] for job, _ in errors)]
    outputs = results + [(job, None, text) for job, text in runtime]
    if diff or check:
        return _compare(outputs, errors, diff=diff, check=check, stdout=stdout, stderr=stderr)
    if output is None:
        problem = _emit(stdout, results[0][2])  # (no data files without -o)
        return _fail(stderr, [problem]) if problem else EXIT_OK
    return _write_outputs(outputs, jobs, errors, stderr, all_or_nothing)


def _fail(stderr, lines) -> int:
    """Reports each error line; the exit code of an error."""
    for line in lines:
        print(line, file=stderr)
    return EXIT_ERROR


def _jobs(sources, output, options: Options, *, listing: bool):
    """The files to convert and ``--standalone``'s runtime copy ((job, text) of each of its
    files); ``InputError`` for a problem that stops everything. ``listing``: ``--diff`` or
    ``--check``, which need no ``-o``."""
    jobs = plan(sources, output)
    if output is None and len(jobs) > 1 and not listing:
        raise InputError(sources[0], "several input files: give -o OUT_DIR (or use --diff / --check)")
    runtime = []
    if options.standalone and output is not None:
        runtime = runtime_jobs(jobs, output, sources)
    elif options.standalone and not listing:
        raise InputError(
            sources[0],
            f"--standalone writes autolax's runtime (the package {runtime_copy.PACKAGE}) beside its "
            "output: give -o FILE.py or -o OUT_DIR",
        )
    return jobs, runtime


def _output_errors(jobs) -> list:
    """(job, line) for each output that may not be written (``check_output``); the job is None
    for the runtime's copy, whose problems stop everything."""
    errors = []
    for job in jobs:
        if job.out is not None:
            try:
                check_output(job)
            except InputError as exc:
                errors.append((job if job.src is not None else None, exc.one_line()))
    return errors


def _convert_jobs(jobs, options: Options, errors: list, sources) -> tuple:
    """Converts every job that has no error yet: (results, warnings), where each result is
    (job, source, text) (a data file's text is its ``_Copy``). Adds to ``errors`` the files
    that cannot be converted, and ``--only``'s names that match no function."""
    results, warnings, matched = [], [], set()
    for job in jobs:
        if any(bad is job for bad, _ in errors):
            continue
        if job.data:
            results.append((job, None, _Copy(job.src)))
            continue
        try:
            source = read_source(job.src)
            result = convert_source(source.text, job.src, options, written_as=written_as(job))
        except (InputError, ConversionError) as exc:
            errors.append((job, exc.one_line()))
            continue
        except RecursionError:
            errors.append((job, f"{job.src}: error: the file is nested too deeply to convert"))
            continue
        except Exception as exc:  # a bug of autolax's: say so in one line, as for any other error
            if os.environ.get("AUTOLAX_TRACEBACK"):
                raise
            errors.append((job, _internal_error(job, exc)))
            continue
        matched |= result.matched
        warnings += result.warnings
        results.append((job, source, result.text))
    missing = sorted(set(options.only) - matched)
    if missing and not errors:
        names = ", ".join(f"'{n}'" for n in missing)
        errors.append((None, f"{', '.join(sources)}: error: --only: no function named {names}"))
    return results, warnings


def _internal_error(job: Job, exc: Exception) -> str:
    return (
        f"{job.src}: error: internal error of autolax convert ({type(exc).__name__}: {exc}); "
        "please report it (AUTOLAX_TRACEBACK=1 shows the traceback)"
    )


def _check_unchanged(results, jobs, errors: list, all_or_nothing: bool) -> None:
    """Adds to ``errors`` each input that changed on disk while it was being converted."""
    several = len(jobs) > 1
    for job, source, _ in results:
        if source is not None and _changed_since_read(source, job.src):
            what = "its output was not written" if several and not all_or_nothing else "nothing was written"
            errors.append(
                (
                    job,
                    f"{job.src}: error: the file changed while it was being converted; {what} (run "
                    "autolax convert again)",
                )
            )


def _compare(outputs, errors, *, diff: bool, check: bool, stdout, stderr) -> int:
    """``--diff`` / ``--check``: prints the unified diff of each output that would change
    (``--diff``), or lists them (``--check``); writes nothing."""
    changed = []
    for job, source, new in outputs:
        target = job.out or job.src
        if isinstance(new, _Copy):
            if not new.same_as(job.out):
                changed.append(target)
            continue
        old = _current(job, source)
        if old == new:
            continue
        changed.append(target)
        if diff:
            problem = _emit(stdout, "".join(_unified_diff(old, new, target, job.out is not None and old is None)))
            if problem:
                return _fail(stderr, [problem])
    if check:
        for target in changed:
            print(f"would change {target}", file=stderr)
        n = len(outputs)
        print(f"{len(changed)} of {n} file{'s' if n != 1 else ''} would change", file=stderr)
        if errors:
            return _fail(stderr, (line for _, line in errors))
        return EXIT_CHANGES if changed else EXIT_OK
    return _fail(stderr, (line for _, line in errors)) if errors else EXIT_OK


def _write_outputs(outputs, jobs, errors: list, stderr, all_or_nothing: bool) -> int:
    """Writes every output whose content changes, all at once (``write_all``), unless an
    output may not be replaced and that stops everything."""
    writes = []
    for job, source, new in outputs:
        if new.same_as(job.out) if isinstance(new, _Copy) else _current(job, source) == new:
            continue
        try:
            check_writable(job.out)
        except InputError as exc:
            errors.append((job if job.src is not None else None, exc.one_line()))
            continue
        if isinstance(new, _Copy):
            writes.append((job.out, new))
        else:
            writes.append((job.out, source.encode(new) if source is not None else new.encode("utf-8")))
    failed = {id(job) for job, _ in errors if job is not None}
    if errors and (all_or_nothing or any(job is None for job, _ in errors) or len(failed) == len(jobs)):
        return _fail(stderr, (line for _, line in errors))
    try:
        write_all(writes)
    except WriteError as exc:
        return _fail(stderr, [line for _, line in errors] + [f"{exc.path}: error: cannot write: {exc.reason}"])
    if errors:
        n = len(failed)
        return _fail(
            stderr,
            [line for _, line in errors]
            + [
                f"autolax convert: {n} of {len(jobs)} files not converted (errors above); the other {len(jobs) - n} "
                "were converted (--all-or-nothing writes nothing when a file fails)"
            ],
        )
    return EXIT_OK


def _emit(stream, text: str) -> str | None:
    """Writes to standard output; on failure (``/dev/full``, a closed pipe) the error line,
    and the stream's descriptor is pointed at the null device so that Python's own flush
    at exit fails no more."""
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return f"<stdout>: error: cannot write: {exc.strerror or exc}"
    return None


def _current(job, source):
    """The text the conversion is compared with: the existing output file (None if there is
    none, or if it is not a readable regular file of sane size), or the input itself when
    printing to standard output."""
    if job.out is None:
        return source.text
    try:
        data, _ = read_regular(job.out)
        return decode(job.out, data).text
    except InputError:
        return None


def _unified_diff(old, new, path, created):
    a = source_lines(old or "")
    b = source_lines(new)
    for lines in (a, b):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    return difflib.unified_diff(a, b, fromfile="/dev/null" if created else path, tofile=path)


class _Copy:
    """The content of a data file (``Job.data``), copied as it is (read when written)."""

    def __init__(self, src: str):
        self.src = src

    def same_as(self, path: str) -> bool:
        """Does the regular file ``path`` hold the same bytes already?"""
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size != os.stat(self.src).st_size:
                return False
            return filecmp.cmp(self.src, path, shallow=False)
        except OSError:
            return False

    def copy_to(self, f) -> None:
        """Copies the source (a regular file: refused otherwise, without blocking) into ``f``."""
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(self.src, flags)
        with os.fdopen(fd, "rb") as src:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(0, f"{self.src} is not a regular file")
            shutil.copyfileobj(src, f, 2**20)


class WriteError(Exception):
    """Writing an output failed (nothing was replaced, or see ``write_all``)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def write_all(items) -> None:
    """Writes each ``(path, data)``, all or nothing: every new content first goes to a
    temporary file beside its target, and targets are replaced (``os.replace``, atomic) only
    once all of them are written. On a failure the temporary files and the directories made
    for them are removed. (Only a failure of ``os.replace`` itself after the first target is
    replaced, which leaves the earlier ones replaced, is not undone.)"""
    made_dirs, temps = [], []
    path = None
    try:
        for path, data in items:
            directory = os.path.dirname(path) or "."
            _makedirs(directory, made_dirs)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "wb") as f:
                if isinstance(data, _Copy):
                    data.copy_to(f)
                else:
                    f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                mode = os.stat(path).st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
        for (path, _), tmp in zip(items, list(temps)):
            os.replace(tmp, path)
            temps.remove(tmp)
    except BaseException as exc:
        for tmp in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        for directory in reversed(made_dirs):
            try:
                os.rmdir(directory)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise WriteError(path, exc.strerror or str(exc)) from None
        raise


def _makedirs(directory: str, made: list) -> None:
    """``os.makedirs``, recording each directory it makes (to remove them on failure)."""
    missing = []
    while directory and not os.path.lexists(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for d in reversed(missing):
        os.mkdir(d)
        made.append(d)
