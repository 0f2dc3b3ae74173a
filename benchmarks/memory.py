"""Memory per redefinition: a notebook cell defining and calling a function, run again and
again, with autolax.jit and with plain jax.jit of the same program written with lax.

    python -m benchmarks.memory                 # 10,000 runs of each cell (about 30 minutes)
    python -m benchmarks.memory --runs 500      # a quick look

Each mode runs in a fresh process. Printed: Python's traced memory (tracemalloc) and the
process's resident memory, before and after, per run. The test tests/api/test_memory.py checks a
short run of the traced figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import linecache
import subprocess
import sys
import time
import tracemalloc

CELLS = {
    "autolax.jit": '''
import autolax

@autolax.jit
def step(x, n):
    total = 0.0
    for i in range(3):
        if x > i:
            total = total + x
    return total
''',
    "jax.jit (lax by hand)": '''
@jax.jit
def step(x, n):
    def body(i, total):
        return jax.lax.cond(x > i, lambda t: t + x, lambda t: t, total)
    return jax.lax.fori_loop(0, 3, body, 0.0)
''',
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def measure(mode: str, runs: int, warm: int = 50) -> dict:
    import jax
    import jax.numpy as jnp

    source = CELLS[mode]
    filename = "<memory-benchmark-cell>"

    def run_cell():
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {"jax": jax, "jnp": jnp}
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the benchmark's own cell
        jax.block_until_ready(namespace["step"](1.5, 3))

    for _ in range(warm):
        run_cell()
    gc.collect()
    tracemalloc.start()
    traced0, rss0, start = tracemalloc.get_traced_memory()[0], _rss_mb(), time.perf_counter()
    for _ in range(runs):
        run_cell()
    gc.collect()
    traced1, rss1 = tracemalloc.get_traced_memory()[0], _rss_mb()
    return {"mode": mode, "runs": runs, "traced_kb_per_run": (traced1 - traced0) / runs / 1024,
            "traced_kb_total": (traced1 - traced0) / 1024, "rss_mb_per_run": (rss1 - rss0) / runs,
            "rss_mb_total": rss1 - rss0, "ms_per_run": (time.perf_counter() - start) / runs * 1e3}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--mode", choices=list(CELLS), help=argparse.SUPPRESS)  # one mode, in this process
    args = parser.parse_args(argv)
    if args.mode:
        print(json.dumps(measure(args.mode, args.runs)))
        return 0
    results = []
    for mode in CELLS:
        out = subprocess.run([sys.executable, "-m", "benchmarks.memory", "--runs", str(args.runs), "--mode", mode],
                             capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    print(f"{args.runs} runs of a cell defining and calling a function (after 50 warm-up runs)\n")
    print("| cell | traced memory per run | traced memory, all runs | resident memory per run | resident, all runs | ms per run |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['mode']} | {r['traced_kb_per_run']:.3f} KB | {r['traced_kb_total']:.0f} KB | "
              f"{r['rss_mb_per_run'] * 1024:.2f} KB | {r['rss_mb_total']:.1f} MB | {r['ms_per_run']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
