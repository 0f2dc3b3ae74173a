"""Conversion cost per function, against the floor of ``ast.parse`` + ``compile``.

Run from the repository root::

    python -m benchmarks.conversion               # caches emptied in one process (about 1 minute)
    python -m benchmarks.conversion --fresh 3     # each conversion in a new process (slower)
    python -m benchmarks.conversion --profile     # cProfile of all conversions, top functions
    python -m benchmarks.conversion --cpu         # thread CPU time, for a loaded machine

For each of the benchmark's functions (the programs of ``benchmarks/programs.py`` and the
functions of ``examples/``) it prints the median time of ``autolax.convert`` (read
the source, check it is the code running, parse, analyse, rewrite, unparse, compile), the
floor -- ``ast.parse`` and ``compile`` of the same function's source, timed in the same
process -- and autolax as a multiple of it, with the number of Python function calls one
conversion makes (deterministic, unlike times on a shared machine).

Every conversion starts from what a new process has: no cache keyed on code or on source
text applies (autolax's conversion cache, its parsed and compiled files, ``linecache``).
autolax itself is imported and warmed first (on a function of this file): import and
first-use costs are not per-function costs. ``--fresh N`` instead converts each function
once in each of N new processes and takes the median, to check that nothing carried over.
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import gc
import inspect
import json
import linecache
import pstats
import statistics
import subprocess
import sys
import textwrap
import time
import types

import autolax
from autolax import api
from autolax.frontend.transpile import source, staleness
from benchmarks import programs
from benchmarks.run import ROOT, _example_functions


def functions():
    """(label, function) for the functions the conversion target is measured on."""
    return [(f"programs.{p.python.__name__}", p.python) for p in programs.PROGRAMS] + _example_functions()


def clear_caches():
    """Empties every cache keyed on code or on source text, as in a new process."""
    api._CODE_CACHE.clear()
    linecache.clearcache()
    for module in (source, staleness):
        for value in vars(module).values():
            if hasattr(value, "cache_clear") and hasattr(value, "__wrapped__"):
                value.cache_clear()


def fresh(fn):
    """A new function object for ``fn``'s code, with every source and code cache emptied."""
    clear_caches()
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _warm_up(x, n):
    total = 0.0
    for i in range(n):
        if x > i:
            total += x
        else:
            total -= i
    while total > 1.0:
        total = total / 2
    return total


# What is timed: wall time, or with ``--cpu`` the thread's CPU time (which waiting for a
# core on a loaded machine does not inflate).
_clock = time.perf_counter


def time_convert(fn) -> float:
    copy = fresh(fn)
    gc.collect()
    start = _clock()
    autolax.convert(copy)
    return _clock() - start


def time_floor(fn) -> float:
    """``ast.parse`` + ``compile`` of ``fn``'s source (its text read outside the clock)."""
    text = textwrap.dedent(inspect.getsource(fn))
    filename = fn.__code__.co_filename
    gc.collect()
    start = _clock()
    compile(ast.parse(text, filename), filename, "exec", dont_inherit=True)
    return _clock() - start


def count_calls(fn) -> int:
    """Python function calls made by one conversion of ``fn`` (caches emptied)."""
    copy = fresh(fn)
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event == "call"

    sys.setprofile(profile)
    try:
        autolax.convert(copy)
    finally:
        sys.setprofile(None)
    return count


def measure(fn, repeats: int) -> dict:
    convert, floor = [], []
    for _ in range(repeats):  # in turn, so that a change of the machine's load hits both
        convert.append(time_convert(fn))
        floor.append(time_floor(fn))
    return {"convert_s": statistics.median(convert), "floor_s": statistics.median(floor), "calls": count_calls(fn)}


def _child(label: str) -> int:
    """``--child``: one conversion of ``label`` in this new process, as JSON on stdout."""
    autolax.convert(_warm_up)
    fn = dict(functions())[label]
    # Importing the benchmark's modules needs no source (they run from bytecode), so the
    # file and its parse are not cached yet: clear anyway, in case the import read them.
    clear_caches()
    gc.collect()
    start = time.perf_counter()
    autolax.convert(fn)
    convert = time.perf_counter() - start
    floor = statistics.median(time_floor(fn) for _ in range(5))
    print(json.dumps({"convert_s": convert, "floor_s": floor}))
    return 0


def measure_fresh(label: str, processes: int) -> dict:
    runs = []
    for _ in range(processes):
        done = subprocess.run([sys.executable, "-m", "benchmarks.conversion", "--child", label], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in ("convert_s", "floor_s")}


def table(results) -> str:
    lines = ["| function | lines | convert (ms) | floor (ms) | multiple | calls |", "|---|---|---|---|---|---|"]
    for r in results:
        calls = f"{r['calls']:,}" if "calls" in r else ""
        lines.append(f"| {r['function']} | {r['lines']} | {r['convert_s'] * 1e3:.2f} | {r['floor_s'] * 1e3:.3f} | "
                     f"{r['convert_s'] / r['floor_s']:.0f}× | {calls} |")
    for what, pick in (("median", statistics.median), ("max", max)):
        convert = pick(r["convert_s"] for r in results)
        floor = pick(r["floor_s"] for r in results)
        multiple = pick(r["convert_s"] / r["floor_s"] for r in results)
        calls = f"{pick(r['calls'] for r in results):,}" if all("calls" in r for r in results) else ""
        lines.append(f"| **{what}** | | **{convert * 1e3:.2f}** | {floor * 1e3:.3f} | {multiple:.0f}× | {calls} |")
    return "\n".join(lines)


def profile(repeats: int, top: int) -> None:
    fns = functions()
    profiler = cProfile.Profile()
    for _ in range(repeats):
        for _, fn in fns:
            copy = fresh(fn)
            profiler.enable()
            autolax.convert(copy)
            profiler.disable()
    stats = pstats.Stats(profiler)
    print(f"{stats.total_calls:,} calls for {repeats * len(fns)} conversions")
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conversion", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25, help="conversions per function (default 25)")
    parser.add_argument("--fresh", type=int, metavar="N", help="convert each function once in each of N new processes")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the conversions instead")
    parser.add_argument("--top", type=int, default=40, help="--profile: rows to print")
    parser.add_argument("--cpu", action="store_true", help="the thread's CPU time instead of wall time")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu:
        global _clock
        _clock = time.thread_time
    if args.child:
        return _child(args.child)
    autolax.convert(_warm_up)
    if args.profile:
        profile(max(1, args.repeats // 5), args.top)
        return 0
    results = []
    for label, fn in functions():
        print(f"  {label}", file=sys.stderr, flush=True)
        r = measure_fresh(label, args.fresh) if args.fresh else measure(fn, args.repeats)
        r.update(function=label, lines=len(inspect.getsource(fn).splitlines()))
        results.append(r)
    how = f"one conversion in each of {args.fresh} new processes" if args.fresh else f"median of {args.repeats}, caches emptied"
    clock = "thread CPU time" if args.cpu and not args.fresh else "wall time"
    print(f"`autolax.convert` per function ({how}, {clock}); floor: `ast.parse` + `compile` of the same source.\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
