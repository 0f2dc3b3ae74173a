"""The ``autolax`` command line (also ``python -m autolax``)."""

from __future__ import annotations

import argparse
import sys


def _demo(args) -> int:
    from autolax import demo

    demo.run(n_steps=args.steps)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autolax",
        description="Stage Python control flow (if/for/while, break, return, appends) into jax.lax.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="convert a bundled example, show the trace check and time it against jax.jit")
    demo.add_argument("--steps", type=int, default=1000, help="trip count of the timed loop (default: 1000)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
