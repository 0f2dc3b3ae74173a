"""The ``autolax`` command line (also ``python -m autolax``)."""

from __future__ import annotations

import argparse
import platform
import sys

import jax

from autolax import __version__, demo
from autolax.cli.convert import Options
from autolax.cli.files import run


def _demo(args) -> int:
    demo.run(n_steps=args.steps)
    return 0


def _names(value):
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


def _convert(args) -> int:
    for flag, value in (("--static", args.static), ("--signature", args.signature)):
        if value:
            # Options of the static --standalone backend, which --standalone no longer has: its
            # output decides what is traced when the program runs, as autolax.jit does.
            print(
                f"autolax convert: warning: {flag} is no longer needed and is ignored: the output decides what "
                "is traced when the program runs (use static_argnames on jax.jit for Python values)",
                file=sys.stderr,
            )
    options = Options(standalone=args.standalone, all=args.all, only=_names(args.only))
    return run(args.sources, args.output, options, diff=args.diff, check=args.check, all_or_nothing=args.all_or_nothing)


_CONVERT_EPILOG = """\
which functions: those decorated @autolax.jit (which becomes @jax.jit; its options jax.jit
lacks become @ops.options(...)) or @autolax.convert (removed), plus every function with
--all, or the named ones with --only, and the functions of the file they call. Everything
else in the file is kept as it is. A directory SRC is mirrored into OUT, its files that are
not .py copied as they are.

--standalone: the output is the default output importing the runtime from autolax_runtime/,
which is written into OUT (a directory) or beside OUT (a file, or a package: SRC a
directory with an __init__.py): keep that folder on the import path. It is rewritten by
each run, and a folder of that name autolax did not write is never touched (an error).

exit status: 0 done, 1 --check found files that would change, 2 error (one line
'file:line:col: error: ...' per problem on stderr). A file that cannot be converted is
not written; the others are (each atomically), unless --all-or-nothing."""


def _version() -> str:
    return f"autolax {__version__} (jax {jax.__version__}, Python {platform.python_version()})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autolax",
        description="Stage Python control flow (if/for/while, break, return, appends) into jax.lax.",
    )
    parser.add_argument(
        "--version", action="version", version=_version(), help="print autolax's version (and JAX's, Python's) and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="convert a bundled example, show the trace check and time it against jax.jit")
    demo.add_argument("--steps", type=int, default=1000, help="trip count of the timed loop (default: 1000)")
    demo.set_defaults(run=_demo)

    conv = sub.add_parser(
        "convert",
        help="write converted .py files that run under plain jax.jit",
        description="Convert the control flow of Python source files into jax.lax (source to source).",
        epilog=_CONVERT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    conv.add_argument("sources", nargs="+", metavar="SRC", help="a .py file, or a directory of them")
    conv.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file or directory (a directory SRC is mirrored into OUT); default: stdout",
    )
    conv.add_argument(
        "--standalone",
        action="store_true",
        help="output imports no autolax: the same program, with autolax's runtime copied beside it as "
        "the package autolax_runtime (needs -o; the output needs only jax and numpy)",
    )
    conv.add_argument(
        "--diff",
        action="store_true",
        help="print a unified diff against the current output (or SRC without -o); write nothing",
    )
    conv.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the conversion would change any output (or SRC without -o)",
    )
    conv.add_argument(
        "--all-or-nothing",
        action="store_true",
        help="if any file cannot be converted, write nothing (default: write every file that can be, "
        "report the others, exit 2)",
    )
    select = conv.add_mutually_exclusive_group()
    select.add_argument("--all", action="store_true", help="convert every function and method, not only decorated ones")
    select.add_argument("--only", metavar="NAME,...", help="also convert these functions (NAME or Class.method)")
    # Accepted and ignored (see _convert): scripts written for earlier versions keep working.
    conv.add_argument("--static", metavar="NAME,...", help=argparse.SUPPRESS)
    conv.add_argument("--signature", action="append", help=argparse.SUPPRESS)
    conv.set_defaults(run=_convert)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, no traceback; 130 as shells report it
        print(f"\nautolax {args.command}: interrupted (KeyboardInterrupt)", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(note, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
