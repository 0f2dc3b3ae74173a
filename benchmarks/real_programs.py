"""The real-program corpus (``tests/corpus``, issue 34): what autolax staged in each program,
and its first call against plain ``jax.jit``.

Run from the repository root::

    python -m benchmarks.real_programs            # 3 rounds (a few minutes on a loaded machine)
    python -m benchmarks.real_programs --rounds 1

Per program (the cases of ``tests/integration/programs/test_real_programs.py``, on their inputs, x64 on):

- **staged**: the rows of ``autolax.trace_check`` by what each statement became
  (``cond``, ``while``, ``scan``, ``fori``, ``python`` for static Python, ``unrolled`` for a
  loop that carried traced values but ran as Python), or the error class autolax refused with;
- **autolax first call** / **jax.jit first call**: seconds from a new function object (every
  code and source cache emptied, as ``benchmarks.conversion`` does) to the blocked result of
  ``autolax.jit(f)(*args)`` (conversion, trace and compile) and of ``jax.jit(f)(*args)``
  (trace and compile), median of the rounds; the two alternate within each round, in one
  process, so both see the same load;
- **ratio**: autolax over ``jax.jit``, where plain ``jax.jit`` runs the program (most of the
  corpus raises ``TracerBoolConversionError`` there: that is why the corpus exists).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
import warnings
from collections import Counter

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import autolax  # noqa: E402
from benchmarks.conversion import fresh  # noqa: E402

SHORT = {"lax.cond": "cond", "lax.select": "select", "lax.while_loop": "while", "lax.scan": "scan",
         "lax.fori_loop": "fori", "python (static)": "python"}


def staged(case, args) -> str:
    """What each statement became, counted; or the error autolax stopped at."""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            report = autolax.trace_check(autolax.jit(fresh(case.fn), static_argnums=case.static), *args)
    except autolax.UnrolledLoopError as exc:
        report = exc.report
    except Exception as exc:  # noqa: BLE001 - the outcome being reported
        return f"error: {type(exc).__name__}"
    kinds = Counter("unrolled" if r.unrolled else SHORT.get(r.became, r.became.split(" ")[0].replace("lax.", ""))
                    for r in report.rows)
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "no control flow"


def first_call(make, fn, static, args):
    """Seconds of the first call of ``make(fresh fn)``, or the exception's class name."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # (the programs' prints)
            warnings.simplefilter("ignore")
            jax.block_until_ready(make(fresh(fn), static_argnums=static)(*args))
    except Exception as exc:  # noqa: BLE001 - the outcome being reported
        return type(exc).__name__
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of first calls (default 3)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    import test_real_programs as corpus

    cases = corpus.CASES
    times = {c.id: {"autolax": [], "jax": []} for c in cases}
    load = os.getloadavg()[0]
    for r in range(args.rounds):
        for case in cases:
            inputs = corpus.jax_args(case.args)
            order = [("autolax", autolax.jit), ("jax", jax.jit)]
            for label, make in order if r % 2 == 0 else order[::-1]:
                times[case.id][label].append(first_call(make, case.fn, case.static, inputs))
    print(f"{len(cases)} programs; first calls: median of {args.rounds} round(s); load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}\n")
    header = ("program", "staged (trace_check)", "autolax s", "jax.jit s", "ratio")
    rows = []
    for case in cases:
        t = times[case.id]

        def med(values):
            numbers = [v for v in values if isinstance(v, float)]
            return statistics.median(numbers) if len(numbers) == len(values) else values[0]

        a, j = med(t["autolax"]), med(t["jax"])
        cell = lambda v: f"{v:.3f}" if isinstance(v, float) else v  # noqa: E731
        ratio = f"{a / j:.2f}" if isinstance(a, float) and isinstance(j, float) else "-"
        rows.append((case.id, staged(case, corpus.jax_args(case.args)), cell(a), cell(j), ratio))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
