"""Conversion time of this tree against another checkout (a baseline), measured in one run.

Run from the repository root::

    git worktree add --detach /tmp/autolax-main main   # a checkout of main's commit
    python -m benchmarks.conversion_compare --baseline /tmp/autolax-main

On a shared machine absolute times move with the load; what this compares is the two
trees under the same load: new processes alternate between them (round after round, the
tree going first alternating too), each converting the benchmark's functions (the programs
of ``benchmarks/programs.py`` and the functions of ``examples/``) with every cache emptied
before each conversion, as ``benchmarks.conversion`` does. Per function it reports the
median wall time of all the conversions of each tree, their ratio, and the Python function
calls of one conversion (deterministic); then the median and the maximum over the
functions, and the load average before and after. ``--cpu`` reports thread CPU time
instead of wall time (it leaves out the time the process waited for a core, not the
slowdown of sharing one).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent.parent


def _child(root: str, repeats: int) -> None:
    """In a new process: converts each function ``repeats`` times with the autolax of
    ``root``; prints {label: {"wall": [...], "cpu": [...], "calls": n}} as JSON."""
    sys.path.insert(0, root)
    import gc
    import linecache
    import time
    import types

    import autolax
    from autolax import api
    from autolax.frontend.transpile import source, staleness
    from benchmarks import programs
    from benchmarks.run import _example_functions

    assert pathlib.Path(autolax.__file__).resolve().is_relative_to(pathlib.Path(root).resolve()), autolax.__file__

    def clear_caches():
        api._CODE_CACHE.clear()
        linecache.clearcache()
        for module in (source, staleness):
            for value in vars(module).values():
                if hasattr(value, "cache_clear") and hasattr(value, "__wrapped__"):
                    value.cache_clear()

    def fresh(fn):
        clear_caches()
        new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        return new

    def warm_up(x, n):
        total = 0.0
        for i in range(n):
            if x > i:
                total += x
            else:
                total -= i
        return total

    autolax.convert(warm_up)
    fns = [(f"programs.{p.python.__name__}", p.python) for p in programs.PROGRAMS] + _example_functions()
    out = {}
    for label, fn in fns:
        walls, cpus = [], []
        for _ in range(repeats):
            copy = fresh(fn)
            gc.collect()
            start, cpu = time.perf_counter(), time.thread_time()
            autolax.convert(copy)
            cpus.append(time.thread_time() - cpu)
            walls.append(time.perf_counter() - start)
        calls = 0

        def count(frame, event, arg):
            nonlocal calls
            calls += event == "call"

        copy = fresh(fn)
        sys.setprofile(count)
        try:
            autolax.convert(copy)
        finally:
            sys.setprofile(None)
        out[label] = {"wall": walls, "cpu": cpus, "calls": calls}
    print(json.dumps(out))


def _run(root: pathlib.Path, repeats: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", str(root), "--repeats", str(repeats)],
                          cwd=root, capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conversion_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="root of the checkout to compare against (required)")
    parser.add_argument("--rounds", type=int, default=6, help="processes per tree, alternating (default 6)")
    parser.add_argument("--repeats", type=int, default=7, help="conversions per function per process (default 7)")
    parser.add_argument("--cpu", action="store_true", help="thread CPU time instead of wall time")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.repeats)
        return 0
    if not args.baseline:
        parser.error("--baseline ROOT is required (a checkout of the tree to compare against)")
    trees = {"baseline": pathlib.Path(args.baseline).resolve(), "this": HERE}
    key = "cpu" if args.cpu else "wall"
    load_before = os.getloadavg()
    samples = {name: {} for name in trees}
    calls = {name: {} for name in trees}
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for name in order:
            for label, got in _run(trees[name], args.repeats).items():
                samples[name].setdefault(label, []).extend(got[key])
                calls[name][label] = got["calls"]
        print(f"  round {r + 1}/{args.rounds}, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    med = {name: {label: statistics.median(v) for label, v in samples[name].items()} for name in trees}
    labels = list(med["this"])
    lines = ["| function | baseline (ms) | this (ms) | this / baseline | calls baseline | calls this |",
             "|---|---|---|---|---|---|"]
    for label in labels:
        b, t = med["baseline"][label], med["this"][label]
        lines.append(f"| {label} | {b * 1e3:.2f} | {t * 1e3:.2f} | {t / b:.2f} | "
                     f"{calls['baseline'][label]:,} | {calls['this'][label]:,} |")
    for what, pick in (("median", statistics.median), ("max", max)):
        b = pick(med["baseline"].values())
        t = pick(med["this"].values())
        cb = pick(calls["baseline"].values())
        ct = pick(calls["this"].values())
        lines.append(f"| **{what}** | **{b * 1e3:.2f}** | **{t * 1e3:.2f}** | {t / b:.2f} | {cb:,} | {ct:,} |")
    print(f"{'thread CPU' if args.cpu else 'wall'} time of `autolax.convert` per function, median of "
          f"{args.rounds} x {args.repeats} conversions per tree (caches emptied); baseline: {trees['baseline']}")
    print(f"load average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)}; "
          f"after {', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
