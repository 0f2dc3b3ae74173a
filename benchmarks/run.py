"""Benchmarks: compile cost against trip count, steady-state call time, conversion cost.

Run from the repository root::

    python -m benchmarks.run                  # full run (several minutes on a 2-core CPU)
    python -m benchmarks.run --plot benchmarks/compile_cost.png
    python -m benchmarks.run --quick          # tiny sizes: a smoke test, numbers mean nothing

Every first-call and conversion measurement uses a fresh function object and an emptied
autolax conversion cache, so no conversion, trace or compilation cache of autolax or JAX
can serve it. Steady-state times alternate between autolax and the hand-written ``lax``
version in one process and report medians. Every variant's result is checked against the
hand-written version's before it is timed. Tables go to stdout as Markdown, progress to
stderr.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import inspect
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
import types

import jax
import numpy as np

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import autolax  # noqa: E402
from autolax import api  # noqa: E402
from autolax.check import count_equations  # noqa: E402
from benchmarks import programs  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Issue 7's first-call target against unrolled jax.jit; issue 17's against hand-written lax,
# steady state, equations and conversion.
TARGETS = {"first_call_vs_unrolled": 100.0, "first_call_vs_lax": 1.10, "steady_vs_lax": 1.05, "equations_vs_lax": 1.2,
           "convert_median_ms": 3.0, "convert_max_ms": 6.0, "jit_overhead_us": 1.0}


# --------------------------------------------------------------------------- helpers
def fresh(fn):
    """A new function object for ``fn``'s code, with autolax's conversion cache emptied.

    JAX caches traces and compilations per function object, so a new object misses them
    all; autolax caches conversions per code object (``autolax.api._CODE_CACHE``), which is
    emptied here, outside any timed region. The source is still read from ``fn``'s real
    file, as for a user's function.
    """
    api._CODE_CACHE.clear()
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def log(message):
    print(message, file=sys.stderr, flush=True)


def seconds(fn, *args):
    """Wall time of ``fn(*args)`` including waiting for the device; returns (s, result)."""
    gc.collect()
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def ms(x):
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"


def table(headers, rows):
    """A Markdown table."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:]]
    return "\n".join(lines)


def close(a, b, rtol=1e-4, atol=1e-5):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol) for x, y in zip(la, lb))


# --------------------------------------------------------------------------- 1. compile cost
VARIANTS = {  # name -> (the function, how it is jitted)
    "jax.jit (Python loop, unrolled)": (programs.energy, lambda f: jax.jit(f, static_argnums=2)),
    "autolax.jit": (programs.energy, lambda f: autolax.jit(f, static_argnums=2)),
    "hand-written lax": (programs.energy_lax, lambda f: jax.jit(f, static_argnums=2)),
}
UNROLLED = "jax.jit (Python loop, unrolled)"


def first_call(name, n):
    """Seconds for jitting a fresh copy of the variant's function and calling it once."""
    source_fn, jit = VARIANTS[name]
    fn = fresh(source_fn)
    return seconds(lambda: jit(fn)(1.0, 0.0, n))


def pair_rounds(repeats):
    """Rounds of autolax.jit and hand-written lax per N in the compile-cost part."""
    return 4 * repeats + 1


def compile_cost(trip_counts, max_unrolled, repeats):
    """First call (convert + trace + compile + run) of ``programs.energy`` per variant and N."""
    for name in VARIANTS:  # warm up JAX's backend and autolax's imports
        first_call(name, 3)
    results = {}
    for n in trip_counts:
        times = {name: [] for name in VARIANTS}
        values = {}
        # Unrolled runs take seconds to minutes each at large N: fewer repeats there.
        unrolled_reps = 0 if n > max_unrolled else repeats if n <= 100 else 2 if n <= 1000 else 1
        # The others take tens of milliseconds: more rounds steady their medians (the paired
        # ratio at N = 1,000 is a target; 11 rounds left it moving by about 0.03 run to run).
        for rep in range(pair_rounds(repeats)):
            for name in VARIANTS:
                if name == UNROLLED and rep >= unrolled_reps:
                    continue
                t, value = first_call(name, n)
                times[name].append(t)
                values[name] = float(value)
        if not all(np.isclose(v, values["hand-written lax"], rtol=1e-3) for v in values.values()):
            raise AssertionError(f"N = {n}: the variants disagree: {values}")
        row = {name: (statistics.median(ts) if ts else None) for name, ts in times.items()}
        row["runs"] = {name: len(ts) for name, ts in times.items()}
        # autolax and lax run one after the other in each round: the median of the per-round
        # ratios, which drifting machine load affects less than the ratio of the medians.
        row["paired_ratio"] = statistics.median(a / b for a, b in zip(times["autolax.jit"], times["hand-written lax"]))
        row["equations"] = {name: _equations(name, n) for name in VARIANTS if times[name]}
        results[n] = row
        log(f"  N = {n:>6}: " + ", ".join(f"{name} {ms(t)}" for name, t in row.items() if isinstance(t, float)))
    return results


def _equations(name, n):
    fn = {
        UNROLLED: programs.energy,
        "autolax.jit": autolax.convert(programs.energy),
        "hand-written lax": programs.energy_lax,
    }[name]
    return count_equations(jax.make_jaxpr(fn, static_argnums=2)(1.0, 0.0, n).jaxpr)


def compile_table(results, max_unrolled):
    rows = []
    for n, row in results.items():
        unrolled, staged, lax_t = row[UNROLLED], row["autolax.jit"], row["hand-written lax"]
        eq = row["equations"]
        rows.append(
            [
                f"{n:,}",
                ms(unrolled) if unrolled is not None else f"not run (N > {max_unrolled:,})",
                ms(staged),
                ms(lax_t),
                f"{unrolled / staged:.0f}x" if unrolled is not None else "-",
                f"{row['paired_ratio']:.2f}",
                f"{staged / lax_t:.2f}",
                f"{eq.get(UNROLLED, '-'):,}" if UNROLLED in eq else "-",
                f"{eq['autolax.jit']} / {eq['hand-written lax']}",
            ]
        )
    return table(
        ["N", "jax.jit (unrolled)", "autolax.jit", "hand-written lax", "unrolled / autolax", "autolax / lax",
         "ratio of medians", "jaxpr eqns unrolled", "jaxpr eqns autolax / lax"],
        rows,
    )


def unrolled_note(results, max_unrolled):
    """Why the unrolled variant stops where it does, from its own growth rate."""
    measured = [(n, r[UNROLLED]) for n, r in results.items() if r[UNROLLED] is not None]
    skipped = [n for n, r in results.items() if r[UNROLLED] is None]
    if len(measured) < 2 or not skipped:
        return ""
    (n0, t0), (n1, t1) = measured[-2:]
    exponent = np.log(t1 / t0) / np.log(n1 / n0)
    estimate = t1 * (skipped[0] / n1) ** exponent
    return (
        f"Unrolled jax.jit was not run above N = {max_unrolled:,}: from N = {n0:,} to {n1:,} its first call grew "
        f"as N^{exponent:.1f}, which puts N = {skipped[0]:,} at about "
        + (f"{estimate / 60:.0f} min." if estimate >= 120 else f"{estimate:.0f} s.")
    )


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for name, style in zip(VARIANTS, ("o-", "s-", "^--")):
        pts = [(n, r[name]) for n, r in results.items() if r[name] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("loop trip count N")
    ax.set_ylabel("first call: convert + trace + compile + run (s)")
    ax.set_title("Compile cost of a Python for-loop under jax.jit")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --------------------------------------------------------------------------- 2. steady state
def _devices(args, static):
    return tuple(a if i in static else jax.device_put(a) for i, a in enumerate(args))


def _jitted(prog, fn):
    if prog.wrap is not None:
        return jax.jit(prog.wrap(fn))
    return jax.jit(fn, static_argnums=prog.static_argnums)


def _autolax_jit(prog):
    """``autolax.jit`` of the program, as a user writes it (the wrapper converted with it)."""
    if prog.wrap is not None:
        return autolax.jit(prog.wrap(prog.python))
    return autolax.jit(prog.python, static_argnums=prog.static_argnums)


def _block_time(fn, args, k, clock=time.perf_counter):
    start = clock()
    for _ in range(k):
        jax.block_until_ready(fn(*args))
    return (clock() - start) / k


def steady_samples(scale, rounds, block_s):
    """Per-round times of every variant of every program, measured in this process.

    Variants: ``jax.jit(autolax.convert(f))`` ("autolax"), ``autolax.jit(f)``, the hand-written
    lax version, the same lax version under a second jax.jit (an A/A control: what the
    measurement alone gives for identical programs) and, where a program has one, its
    same-form twin."""
    samples = []
    for prog in programs.PROGRAMS:
        args = _devices(prog.inputs(scale), prog.static_argnums)
        variants = {"autolax": _jitted(prog, autolax.convert(prog.python)), "autolax.jit": _autolax_jit(prog),
                    "lax": _jitted(prog, prog.lax)}
        variants["lax again"] = _jitted(prog, fresh(prog.lax))
        if prog.twin is not None:
            variants["twin"] = _jitted(prog, prog.twin)
        outputs = {name: jax.block_until_ready(fn(*args)) for name, fn in variants.items()}
        for name, value in outputs.items():
            if not close(value, outputs["lax"]):
                raise AssertionError(f"{prog.name}: {name} gives {value}, the hand-written lax version {outputs['lax']}")
        per_call = min(_block_time(variants["lax"], args, 1) for _ in range(3))
        k = max(1, int(block_s / max(per_call, 1e-6)))
        times = {name: [] for name in variants}
        gc.collect()
        order = list(variants.items())
        for r in range(rounds):
            # Each round starts one variant later, so every variant takes every position
            # equally often (with forward and reversed rounds the middle one never ran first).
            for name, fn in order[r % len(order):] + order[:r % len(order)]:
                times[name].append(_block_time(fn, args, k))
        samples.append({"name": prog.name, "times": times, "calls_per_sample": k, "equations": _program_equations(prog, args)})
        log(f"  {prog.name}: " + ", ".join(f"{n} {statistics.median(t) * 1e3:.3f} ms" for n, t in times.items()))
    return samples


def _worker_samples(scale, rounds, block_s):
    """``steady_samples`` in a fresh Python process."""
    command = [sys.executable, "-m", "benchmarks.run", "--steady-worker", json.dumps([scale, rounds, block_s])]
    proc = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout)


def steady_state(scale, rounds, block_s, processes=1):
    """Median call time of autolax.jit vs the hand-written lax version(s), interleaved.

    With ``processes`` > 1 the rounds are shared among that many fresh processes and pooled.
    Two compilations of one program can differ by a few percent for the whole life of a
    process (where XLA placed their code and buffers); new processes draw new placements, so
    the pooled median does not rest on one draw."""
    if processes == 1:
        runs = [steady_samples(scale, rounds, block_s)]
    else:
        runs = []
        for i in range(processes):
            log(f"  process {i + 1} of {processes}")
            runs.append(_worker_samples(scale, -(-rounds // processes), block_s))
    results = []
    for prog, per_program in zip(programs.PROGRAMS, zip(*runs)):
        times = {name: [t for run in per_program for t in run["times"][name]] for name in per_program[0]["times"]}
        med = {name: statistics.median(ts) for name, ts in times.items()}
        paired = {name: statistics.median(x / y for x, y in zip(times["autolax"], times[name])) for name in times}
        jit_ratio = statistics.median(x / y for x, y in zip(times["autolax.jit"], times["lax"]))
        # Per call: each sample is the mean of calls_per_sample calls, the same in every variant.
        jit_overhead = statistics.median(x - y for x, y in zip(times["autolax.jit"], times["autolax"]))
        results.append(
            {
                "name": prog.name,
                "kind": prog.kind,
                "autolax_s": med["autolax"],
                "lax_s": med["lax"],
                "twin_s": med.get("twin"),
                "ratio": paired["lax"],
                "jit_s": med["autolax.jit"],
                "jit_ratio": jit_ratio,
                "jit_overhead_s": jit_overhead,
                "ratio_of_medians": med["autolax"] / med["lax"],
                "twin_ratio": paired.get("twin"),
                "control_ratio": statistics.median(x / y for x, y in zip(times["lax again"], times["lax"])),
                "equations": tuple(per_program[0]["equations"]),
                "calls_per_sample": [run["calls_per_sample"] for run in per_program],
                "rounds": len(times["lax"]),
                "note": prog.note,
            }
        )
        log(f"  {prog.name}: ratio {paired['lax']:.3f}, autolax.jit {jit_ratio:.3f}, A/A {results[-1]['control_ratio']:.3f}")
    return results


def _increment(x):
    return x + 1


def _first_at_or_below(xs, level):
    found = -1
    for i in range(xs.shape[0]):
        if xs[i] <= level:
            found = i
            break
    return found


def call_overhead(sizes, rounds, calls):
    """Per-call time of ``autolax.jit(f)`` and ``jax.jit(autolax.convert(f))``, alternating in
    one process, on a trivial function and on a search loop (its item at 90% of the way):
    what ``autolax.jit`` adds to each call. CPU time of the process (its threads, XLA's
    included): other processes on a shared machine inflate it less than wall time."""
    cases = [("x + 1", _increment, (jax.device_put(np.float32(1.0)),))]
    for n in sizes:
        xs = np.ones(n, np.float32)
        xs[int(0.9 * n)] = 0.0
        cases.append((f"search loop, {n:,} items", _first_at_or_below, _devices((xs, np.float32(0.5)), ())))
    results = []
    for label, fn, args in cases:
        variants = {"jax.jit(convert)": jax.jit(autolax.convert(fn)), "autolax.jit": autolax.jit(fn)}
        outputs = [jax.block_until_ready(v(*args)) for v in variants.values()]
        if not close(outputs[0], outputs[1]) or not close(outputs[0], fn(*args)):
            raise AssertionError(f"{label}: {outputs} differ from Python's {fn(*args)}")
        times = {name: [] for name in variants}
        gc.collect()
        order = list(variants.items())
        for r in range(rounds):
            for name, v in order[r % 2:] + order[:r % 2]:
                times[name].append(_block_time(v, args, calls, clock=time.process_time))
        results.append({
            "case": label,
            "convert_s": statistics.median(times["jax.jit(convert)"]),
            "jit_s": statistics.median(times["autolax.jit"]),
            "overhead_s": statistics.median(a - b for a, b in zip(times["autolax.jit"], times["jax.jit(convert)"])),
            "ratio": statistics.median(a / b for a, b in zip(times["autolax.jit"], times["jax.jit(convert)"])),
        })
        log(f"  {label}: autolax.jit adds {results[-1]['overhead_s'] * 1e6:.2f} us per call")
    return results


def overhead_table(results):
    rows = [[r["case"], f"{r['convert_s'] * 1e6:.2f}", f"{r['jit_s'] * 1e6:.2f}", f"**{r['overhead_s'] * 1e6:+.2f}**",
             f"{r['ratio']:.3f}"] for r in results]
    return table(["function", "jax.jit(autolax.convert(f)) (µs)", "autolax.jit(f) (µs)", "autolax.jit adds (µs)",
                  "autolax.jit / jax.jit(convert)"], rows)


def _program_equations(prog, args):
    def size(fn):
        fn = prog.wrap(fn) if prog.wrap is not None else fn
        return count_equations(jax.make_jaxpr(fn, static_argnums=prog.static_argnums)(*args).jaxpr)

    return size(autolax.convert(prog.python)), size(prog.lax)


def steady_table(results):
    rows = [
        [
            r["name"],
            r["kind"],
            f"{r['autolax_s'] * 1e3:.3f}",
            f"{r['lax_s'] * 1e3:.3f}",
            f"**{r['ratio']:.2f}**",
            f"**{r['jit_ratio']:.2f}**",
            f"{r['jit_overhead_s'] * 1e6:+.1f}",
            f"{r['ratio_of_medians']:.2f}",
            f"{r['twin_ratio']:.2f}" if r["twin_ratio"] is not None else "",
            f"{r['control_ratio']:.2f}",
            f"{r['equations'][0]} / {r['equations'][1]}",
        ]
        for r in results
    ]
    return table(
        ["program", "control flow", "autolax (ms)", "lax (ms)", "autolax / lax", "autolax.jit / lax",
         "autolax.jit − jax.jit(convert) (µs/call)", "ratio of medians", "vs same-form lax", "lax / lax (A/A)",
         "jaxpr eqns autolax / lax"],
        rows,
    )


# --------------------------------------------------------------------------- 3. conversion cost
def _example_functions():
    fns = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"benchmark_examples_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and fn.__module__ == module.__name__:
                fns.append((f"{path.stem}.{name}", fn))
    return fns


def conversion_cost(repeats, with_examples=True):
    """Median time of ``autolax.convert`` and ``autolax.to_source`` per function, uncached."""
    fns = [(f"programs.{p.python.__name__}", p.python) for p in programs.PROGRAMS]
    if with_examples:
        fns += _example_functions()
    for _, fn in fns[:3]:  # import and first-use costs are not per-function costs
        autolax.convert(fresh(fn))
    results = []
    for label, fn in fns:
        convert_t, source_t = [], []
        for _ in range(repeats):
            copy = fresh(fn)
            gc.collect()
            start = time.perf_counter()
            autolax.convert(copy)
            convert_t.append(time.perf_counter() - start)
            copy = fresh(fn)
            start = time.perf_counter()
            autolax.to_source(copy)
            source_t.append(time.perf_counter() - start)
        lines = len(inspect.getsource(fn).splitlines())
        results.append({"function": label, "lines": lines, "convert_s": statistics.median(convert_t), "to_source_s": statistics.median(source_t)})
    log(f"  {len(results)} functions converted {repeats} times each")
    return results


def conversion_table(results):
    rows = [[r["function"], r["lines"], f"{r['convert_s'] * 1e3:.2f}", f"{r['to_source_s'] * 1e3:.2f}"] for r in results]
    converts = [r["convert_s"] for r in results]
    rows.append(["**median over functions**", "", f"**{statistics.median(converts) * 1e3:.2f}**", f"**{statistics.median(r['to_source_s'] for r in results) * 1e3:.2f}**"])
    rows.append(["max", "", f"{max(converts) * 1e3:.2f}", f"{max(r['to_source_s'] for r in results) * 1e3:.2f}"])
    return table(["function", "lines", "convert (ms)", "to_source (ms)"], rows)


# --------------------------------------------------------------------------- targets
def targets(compile_results, steady_results, convert_results, overhead_results=()):
    """Each target of issue 7 with the measured figure and whether it is met."""
    rows = []
    if overhead_results:
        worst = max(overhead_results, key=lambda r: r["overhead_s"])
        rows.append(["autolax.jit's per-call overhead over jax.jit(autolax.convert(f))", "≤ 1 µs",
                     f"worst {worst['overhead_s'] * 1e6:.2f} µs ({worst['case']})",
                     _verdict(worst["overhead_s"] <= TARGETS["jit_overhead_us"] * 1e-6)])
    at = compile_results.get(1000)
    if at is not None:
        if at[UNROLLED] is not None:
            speedup = at[UNROLLED] / at["autolax.jit"]
            rows.append(["first call at N = 1,000 vs unrolled jax.jit", "≥ 100x faster", f"{speedup:.0f}x", _verdict(speedup >= TARGETS["first_call_vs_unrolled"])])
        ratio = at["paired_ratio"]  # (paired per-round ratios, as for the steady state)
        rows.append(["first call at N = 1,000 vs hand-written lax", "≤ 1.10x", f"{ratio:.2f}x", _verdict(ratio <= TARGETS["first_call_vs_lax"])])
    if steady_results:
        for entry, key in (("jax.jit(autolax.convert(f))", "ratio"), ("autolax.jit(f)", "jit_ratio")):
            worst = max(steady_results, key=lambda r: r[key])
            within = [r for r in steady_results if r[key] <= TARGETS["steady_vs_lax"]]
            # (paired per-round ratios; see steady_state)
            rows.append(
                [
                    f"steady-state call vs hand-written lax, {entry}",
                    "≤ 1.05x",
                    f"{len(within)}/{len(steady_results)} programs within; worst {worst['name']} {worst[key]:.2f}x",
                    _verdict(len(within) == len(steady_results)),
                ]
            )
        over = [r for r in steady_results if r["equations"][0] > TARGETS["equations_vs_lax"] * r["equations"][1]]
        rows.append(
            [
                "jaxpr equations vs hand-written lax",
                "≤ 1.2x",
                f"{len(steady_results) - len(over)}/{len(steady_results)} programs within"
                + "".join(f"; {r['name']} {r['equations'][0]} / {r['equations'][1]}" for r in over),
                _verdict(not over),
            ]
        )
    if convert_results:
        median = statistics.median(r["convert_s"] for r in convert_results) * 1e3
        worst = max(convert_results, key=lambda r: r["convert_s"])
        rows.append(["conversion per function, median", "≤ 3 ms", f"{median:.2f} ms", _verdict(median <= TARGETS["convert_median_ms"])])
        rows.append(
            [
                "conversion per function, max",
                "≤ 6 ms",
                f"{worst['convert_s'] * 1e3:.2f} ms ({worst['function']})",
                _verdict(worst["convert_s"] * 1e3 <= TARGETS["convert_max_ms"]),
            ]
        )
    return table(["target", "goal", "measured", "met"], rows)


def _verdict(ok):
    return "yes" if ok else "**no**"


# --------------------------------------------------------------------------- main
def _git(*args):
    try:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats: a smoke test, not a measurement")
    parser.add_argument("--plot", metavar="PNG", help="write the compile-cost plot (needs matplotlib: pip install '.[plot]')")
    parser.add_argument("--json", metavar="PATH", help="also write every measured number as JSON")
    parser.add_argument("--only", choices=["compile", "steady", "overhead", "convert"], action="append",
                        help="run only these parts (repeatable)")
    parser.add_argument("--max-unrolled", type=int, help="largest N timed for unrolled jax.jit (default 3000; --quick: 10)")
    parser.add_argument("--steady-worker", metavar="JSON", help=argparse.SUPPRESS)  # [scale, rounds, block_s]: print steady_samples as JSON
    args = parser.parse_args(argv)
    if args.steady_worker:
        print(json.dumps(steady_samples(*json.loads(args.steady_worker))))
        return 0
    parts = set(args.only or ["compile", "steady", "overhead", "convert"])
    if args.quick:
        trip_counts, max_unrolled, repeats = [10, 30], 10, 1
        scale, rounds, processes, block_s, convert_reps = 0.01, 2, 1, 0.001, 1
        overhead_sizes, overhead_rounds, overhead_calls = [1_000], 2, 10
    else:
        trip_counts, max_unrolled, repeats = [10, 100, 1000, 3000, 10_000], 3000, 5
        scale, rounds, processes, block_s, convert_reps = 1.0, 45, 3, 0.05, 25
        overhead_sizes, overhead_rounds, overhead_calls = [1_000, 20_000], 60, 2_000
    if args.max_unrolled is not None:
        max_unrolled = args.max_unrolled

    cpu = platform.processor() or platform.machine()
    commit = _git("rev-parse", "--short", "HEAD")
    if commit and _git("status", "--porcelain", "autolax"):
        commit += " + uncommitted changes under autolax/"
    print(f"# autolax benchmarks{' (--quick: tiny sizes, not a measurement)' if args.quick else ''}\n")
    print(
        f"autolax {commit or '(not a git checkout)'}; jax {jax.__version__}, backend {jax.default_backend()}, "
        f"{jax.local_device_count()} device(s), {os.cpu_count()} CPU cores; Python {platform.python_version()}; {cpu}\n"
    )
    compile_results, steady_results, convert_results, overhead_results = {}, [], [], []
    if "compile" in parts:
        compile_results = compile_cost(trip_counts, max_unrolled, repeats)
        print("## Compile cost against trip count\n")
        print("First call of the same loop (`benchmarks/programs.py: energy`): convert + trace + compile + run,")
        print(f"fresh function objects each time; median of {pair_rounds(repeats)} runs (unrolled: {repeats} up to N = 100,")
        print("2 at N = 1,000, 1 above). autolax and lax run one after the other in each round; \"autolax / lax\" is")
        print("the median of the per-round ratios, \"ratio of medians\" the ratio of the two columns.\n")
        print(compile_table(compile_results, max_unrolled) + "\n")
        note = unrolled_note(compile_results, max_unrolled)
        if note:
            print(note + "\n")
        if args.plot:
            plot(compile_results, args.plot)
            print(f"(plot written to {args.plot})\n")
    if "steady" in parts:
        steady_results = steady_state(scale, rounds, block_s, processes)
        print("## Steady-state call time\n")
        where = "one process" if processes == 1 else f"each of {processes} fresh processes"
        print("Time per call after compilation (median over rounds). \"autolax\" is `jax.jit(autolax.convert(f))`;")
        print("it, `autolax.jit(f)`, the hand-written lax version, that version compiled a second time (the A/A")
        print(f"control) and any same-form twin run in turn in {where}, {-(-rounds // processes)} rounds each;")
        print("\"autolax / lax\" (and \"autolax.jit / lax\") is the median of the per-round ratios, which drifting")
        print("machine load affects less than the ratio of the medians. \"lax / lax (A/A)\" is the same figure for two")
        print("compilations of the same program: how far apart the measurement puts identical code.\n")
        print(steady_table(steady_results) + "\n")
        for r in steady_results:
            if r["note"]:
                print(f"- {r['name']}: {r['note']}")
        print()
    if "overhead" in parts:
        overhead_results = call_overhead(overhead_sizes, overhead_rounds, overhead_calls)
        print("## What autolax.jit adds to a call\n")
        print(f"`autolax.jit(f)` and `jax.jit(autolax.convert(f))` in turn in one process, {overhead_rounds} rounds of")
        print(f"{overhead_calls:,} calls each (each call waited for); CPU time of the process per call (medians), and the")
        print("median of the per-round differences.\n")
        print(overhead_table(overhead_results) + "\n")
    if "convert" in parts:
        convert_results = conversion_cost(convert_reps, with_examples=not args.quick)
        print("## Conversion cost\n")
        print("`autolax.convert` (parse, analyse, rewrite, compile) and `autolax.to_source` per function, each on a fresh")
        print(f"function object so no cache applies; median of {convert_reps} runs.\n")
        print(conversion_table(convert_results) + "\n")
    print("## Targets (issues 7 and 17)\n")
    print(targets(compile_results, steady_results, convert_results, overhead_results))
    if args.json:
        data = {
            "compile": {str(n): {k: v for k, v in r.items()} for n, r in compile_results.items()},
            "steady": steady_results,
            "overhead": overhead_results,
            "convert": convert_results,
        }
        pathlib.Path(args.json).write_text(json.dumps(data, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
