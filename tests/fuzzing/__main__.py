"""``python -m tests.fuzzing``: the differential fuzzer's command line (see ``--help``)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from . import __doc__ as PACKAGE_DOC
from .generator import CONSTRUCTS, IDIOMS, generate
from .paths import ALL_PATHS

PROGRESS_EVERY = 500  # programs between progress lines (and --partial summaries)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzzing", description=PACKAGE_DOC.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of programs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--paths", default=",".join(ALL_PATHS), help=f"comma-separated subset of {', '.join(ALL_PATHS)}")
    parser.add_argument("--focus", choices=(*CONSTRUCTS, *IDIOMS), help="write only programs that have this construct "
                        "(an idiom of IDIOMS needs --idioms)")
    parser.add_argument("--idioms", nargs="?", const=",".join(IDIOMS), default="", metavar="IDIOM,...",
                        help="also write idioms of real code (all of generator.IDIOMS, or those named: "
                        f"{', '.join(IDIOMS)})")
    parser.add_argument("--big", action="store_true", help="larger, more deeply nested programs")
    parser.add_argument("--compile", action="store_true", help="compile each traced program with XLA instead of interpreting its jaxpr (slower)")
    parser.add_argument("--every", type=int, default=4, metavar="K", help="run magic, vmap and eager-jax on every K-th program (default 4; 1: all)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--accept-notes", action="store_true", help="count exceptions with an `autolax:` note as refused (see outcome.py)")
    parser.add_argument("--signatures", action="store_true", help="after the summary, list the most frequent refusals and the distinct failure signatures")
    parser.add_argument("--no-stats", action="store_true", help="skip autolax.trace_check (the staged/python columns)")
    parser.add_argument("--show", type=int, metavar="SEED", help="print the program with this seed and exit")
    parser.add_argument("--reduce", type=int, metavar="SEED", help="shrink program SEED while its first mismatch persists, and print it")
    parser.add_argument("--quiet", action="store_true", help="print the summary only, not each failing program")
    parser.add_argument("--partial", metavar="FILE",
                        help="every 500 programs, write the summary so far to FILE (a long run stopped early keeps it)")
    parser.add_argument("--top", type=int, default=25, help="with --signatures: list this many refusal reasons (default 25)")
    parser.add_argument("--max-reports", type=int, default=30, help="print at most this many failing programs (default 30)")
    args = parser.parse_args(argv)
    paths = tuple(p.strip() for p in args.paths.split(",") if p.strip())
    unknown = [p for p in paths if p not in ALL_PATHS]
    if unknown:
        parser.error(f"unknown path(s) {', '.join(unknown)}; choose from {', '.join(ALL_PATHS)}")
    idioms = tuple(i.strip() for i in args.idioms.split(",") if i.strip())
    if set(idioms) - set(IDIOMS):
        parser.error(f"unknown idiom(s) {', '.join(sorted(set(idioms) - set(IDIOMS)))}; choose from {', '.join(IDIOMS)}")
    if args.focus in IDIOMS and args.focus not in idioms:
        parser.error(f"--focus {args.focus} is an idiom of real code: add --idioms (or --idioms {args.focus})")
    args.idioms = idioms
    if args.show is not None:
        print(generate(args.show, args.big, args.focus, args.idioms), end="")
        return 0
    if args.reduce is not None:
        from .reduce import reduce_seed

        print(reduce_seed(args.reduce, paths=paths, big=args.big, focus=args.focus, idioms=args.idioms))
        return 0

    from .report import Summary
    from .runner import run

    printed = [0]
    done = [0]
    start = time.perf_counter()

    so_far = Summary()

    def on_result(r):
        done[0] += 1
        if args.partial:
            so_far.add(r)
        if done[0] % PROGRESS_EVERY == 0:
            print(f"[{done[0]} programs, {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
            if args.partial:
                so_far.seconds = time.perf_counter() - start
                text = f"{done[0]} of {args.n} programs\n{so_far.text()}\n\n{so_far.signatures()}\n"
                with open(args.partial + ".tmp", "w") as f:
                    f.write(text)
                os.replace(args.partial + ".tmp", args.partial)
        for f in r.failures:
            if not args.quiet and printed[0] < args.max_reports:
                print(f.report(), flush=True)
                printed[0] += 1

    seeds = range(args.seed, args.seed + args.n)
    summary = run(
        seeds, paths=paths, compile=args.compile, big=args.big, focus=args.focus, idioms=args.idioms, every=args.every,
        stats=not args.no_stats, jobs=args.jobs, accept_notes=args.accept_notes, on_result=on_result,
    )
    print(summary.text())
    if args.signatures:
        print()
        print(summary.refusal_reasons(top=args.top))
        print()
        print(summary.signatures())
    return 1 if summary.failed_programs else 0


if __name__ == "__main__":
    sys.exit(main())
