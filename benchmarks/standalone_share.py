"""Of the differential fuzzer's runs where ``autolax.jit`` gives Python's outcome, how many
``autolax convert --standalone`` output gives too, and what it does with the others.

Each program of the differential fuzzer (``tests.fuzzing``) runs through two of its paths on
the same input sets (``tests.fuzzing.paths``): ``jit`` (``autolax.jit``) and ``standalone``
(``--standalone --all`` output, written to a file, importing the runtime's copy
``autolax_runtime``, its ``f`` under plain ``jax.jit``). Each run is paired with the
``autolax.jit`` run of the same input set and classified by the fuzzer's verdict (value,
exception type, printed output and globals compared with Python).

    python -m benchmarks.standalone_share --n 300 [--seed 0] [--idioms]

Prints the table of paired verdicts, the share of ``autolax.jit``'s Python-answer runs
that ``--standalone`` refuses, and the reasons of those refusals.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from tests.fuzzing.paths import Workspace  # noqa: E402
from tests.fuzzing.runner import check_program  # noqa: E402


def _reason(label: str) -> str:
    """A refusal's first line without its file names, line numbers and quoted names."""
    line = label.split("\n")[0]
    line = re.sub(r"\S*fuzz_\d+(_standalone)?\.py:\d+(:\d+)?:?", "<file>", line)
    line = re.sub(r"'[^']*'", "'_'", line)
    return line[:120]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.standalone_share",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="number of programs (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--idioms", action="store_true", help="also write the fuzzer's idioms (--idioms)")
    args = parser.parse_args(argv)

    pairs = collections.Counter()  # (jit verdict, standalone verdict) -> runs
    refused_after_jit_ok = collections.Counter()  # first line of the standalone refusal -> runs
    started = time.perf_counter()
    ws = Workspace()
    try:
        for seed in range(args.seed, args.seed + args.n):
            log = []
            check_program(seed, paths=("jit", "standalone"), idioms=args.idioms, stats=False, workspace=ws, log=log)
            jit = [entry for entry in log if entry[0] == "jit"]
            alone = [entry for entry in log if entry[0] == "standalone"]
            assert len(jit) == len(alone), seed  # the same plans and input sets, in the same order
            for j, s in zip(jit, alone):
                pairs[(j[5], s[5])] += 1
                if j[5] == "ok" and s[5] == "refused":
                    refused_after_jit_ok[_reason(s[4])] += 1
    finally:
        ws.close()
    seconds = time.perf_counter() - started

    total = sum(pairs.values())
    verdicts = sorted({v for pair in pairs for v in pair})
    print(f"{args.n} programs (seeds {args.seed}-{args.seed + args.n - 1}{', idioms' if args.idioms else ''}), "
          f"{total} paired runs, {seconds:.0f} s\n")
    width = max(len(v) for v in verdicts) + 2
    print("autolax.jit \\ --standalone".ljust(28) + "".join(v.rjust(width) for v in verdicts))
    for j in verdicts:
        print(j.ljust(28) + "".join(str(pairs[(j, s)]).rjust(width) for s in verdicts))
    jit_ok = sum(n for (j, _), n in pairs.items() if j == "ok")
    refused = pairs[("ok", "refused")]
    other = jit_ok - pairs[("ok", "ok")] - refused
    print(f"\nof the {jit_ok} runs where autolax.jit gives Python's outcome, --standalone gives it too on "
          f"{pairs[('ok', 'ok')]}, refuses {refused} ({100 * refused / max(jit_ok, 1):.1f}%), and does anything "
          f"else on {other}")
    mismatched = sum(n for (_, s), n in pairs.items() if s not in ("ok", "refused"))
    print(f"--standalone runs that are neither Python's outcome nor autolax's error: {mismatched}")
    if refused_after_jit_ok:
        print("\nwhy --standalone refused where autolax.jit gave Python's outcome:")
        for reason, n in refused_after_jit_ok.most_common():
            print(f"  {n:5d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
