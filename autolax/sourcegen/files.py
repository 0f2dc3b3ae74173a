"""``autolax convert``: inputs and outputs, ``--diff`` / ``--check``, atomic writes.

Every input is read and converted before anything is written, so an error in any input
(a syntax error, an unreadable or non-Python file, syntax autolax cannot convert) writes
nothing at all. Output files are replaced atomically (temporary file + ``os.replace``), and
only when their content changes. Inputs are never written.
"""

from __future__ import annotations

import difflib
import io
import os
import sys
import tempfile
import tokenize
from dataclasses import dataclass

from autolax.errors import ConversionError
from autolax.sourcegen.convert import Options, convert_source

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2


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

    def encode(self, text: str) -> bytes:
        return text.replace("\n", self.newline).encode(self.encoding)


@dataclass
class Job:
    src: str
    out: str | None  # None: standard output


def read_source(path: str) -> SourceFile:
    """Reads a ``.py`` file with the encoding it declares (PEP 263)."""
    if not path.endswith(".py"):
        raise InputError(path, "not a Python source file (expected a .py file)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    return decode(path, data)


def decode(path: str, data: bytes) -> SourceFile:
    if b"\0" in data:
        raise InputError(path, "not a Python source file (it contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except SyntaxError as exc:
        raise InputError(path, f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    except (UnicodeDecodeError, LookupError) as exc:
        raise InputError(path, f"cannot decode as {encoding}: {getattr(exc, 'reason', exc)}") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    return SourceFile(text.replace("\r\n", "\n"), encoding, newline)


# ----------------------------------------------------------------------------- planning
def _python_files(root: str, exclude: str | None):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d != "__pycache__"
            and (exclude is None or os.path.realpath(os.path.join(dirpath, d)) != exclude)
        )
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    if not out:
        raise InputError(root, "no .py files found in this directory")
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
            for f in _python_files(src, exclude):
                jobs.append(Job(f, os.path.join(root, os.path.relpath(f, src))))
        elif output is None:
            jobs.append(Job(src, None))
        elif several or os.path.isdir(output) or output.endswith(("/", os.sep)):
            jobs.append(Job(src, os.path.join(output, os.path.basename(src))))
        else:
            jobs.append(Job(src, output))
    seen = {}
    inputs = {os.path.realpath(j.src) for j in jobs}
    for job in jobs:
        if job.out is None:
            continue
        real = os.path.realpath(job.out)
        if real in inputs:
            raise InputError(job.out, "the output would overwrite an input file; autolax convert never modifies its input")
        if real in seen:
            raise InputError(job.out, f"two inputs ({seen[real]} and {job.src}) would be written to this output")
        seen[real] = job.src
    return jobs


# ----------------------------------------------------------------------------- running
def run(sources, output, options: Options, *, diff=False, check=False, stdout=None, stderr=None) -> int:
    """Runs ``autolax convert``; returns the exit code (0 done, 1 ``--check`` found work, 2 error)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr

    def fail(lines):
        for line in lines:
            print(line, file=stderr)
        return EXIT_ERROR

    try:
        jobs = plan(sources, output)
    except InputError as exc:
        return fail([exc.one_line()])
    if output is None and len(jobs) > 1 and not (diff or check):
        return fail([f"{sources[0]}: error: several input files: give -o OUT_DIR (or use --diff / --check)"])

    results, errors, warnings, matched = [], [], [], set()
    for job in jobs:
        try:
            source = read_source(job.src)
            result = convert_source(source.text, job.src, options)
        except (InputError, ConversionError) as exc:
            errors.append(exc.one_line())
            continue
        except RecursionError:
            errors.append(f"{job.src}: error: the file is nested too deeply to convert")
            continue
        except Exception as exc:  # a bug of autolax's: say so in one line, as for any other error
            if os.environ.get("AUTOLAX_TRACEBACK"):
                raise
            errors.append(f"{job.src}: error: internal error of autolax convert ({type(exc).__name__}: {exc}); "
                          "please report it (AUTOLAX_TRACEBACK=1 shows the traceback)")
            continue
        matched |= result.matched
        warnings += result.warnings
        results.append((job, source, result.text))
    missing = sorted(set(options.only) - matched)
    if missing and not errors:
        names = ", ".join(f"'{n}'" for n in missing)
        errors.append(f"{', '.join(sources)}: error: --only: no function named {names}")
    if errors:
        return fail(errors)
    for line in warnings:
        print(line, file=stderr)

    if diff or check:
        changed = []
        for job, source, new in results:
            target = job.out or job.src
            old = _current(job, source)
            if old == new:
                continue
            changed.append(target)
            if diff:
                stdout.writelines(_unified_diff(old, new, target, job.out is not None and old is None))
        if check:
            for target in changed:
                print(f"would change {target}", file=stderr)
            n = len(results)
            print(f"{len(changed)} of {n} file{'s' if n != 1 else ''} would change", file=stderr)
            return EXIT_CHANGES if changed else EXIT_OK
        return EXIT_OK

    if output is None:
        stdout.write(results[0][2])
        return EXIT_OK
    for job, source, new in results:
        if _current(job, source) == new:
            continue
        try:
            write_atomic(job.out, source.encode(new))
        except OSError as exc:
            return fail([f"{job.out}: error: cannot write: {exc.strerror or exc}"])
    return EXIT_OK


def _current(job, source):
    """The text the conversion is compared with: the existing output file (None if there is
    none), or the input itself when printing to standard output."""
    if job.out is None:
        return source.text
    try:
        with open(job.out, "rb") as f:
            return decode(job.out, f.read()).text
    except (OSError, InputError):
        return None


def _unified_diff(old, new, path, created):
    a = (old or "").splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    for lines in (a, b):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    return difflib.unified_diff(a, b, fromfile="/dev/null" if created else path, tofile=path)


def write_atomic(path: str, data: bytes) -> None:
    """Writes ``path`` so that readers see the old content or the new one, never a part."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
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
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
