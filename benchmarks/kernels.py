"""The kernel suite of issue 41: PolyBench/C 4.2 loop nests (and a conv2d and a CRC-16) as a
NumPy user writes them, through ``autolax.jit``, against the JAX an expert writes by hand.

Run from the repository root::

    python -m benchmarks.kernels                                   # the whole suite
    python -m benchmarks.kernels --kernels lu,seidel-2d --sizes 8,16,32
    python -m benchmarks.kernels --out benchmarks/results_kernels.md
    python -m benchmarks.kernels --fused-updates                   # item 5: seidel-2d, before/after
    python -m benchmarks.kernels --x64 --kernels deriche,adi       # item 6: loop indices under x64

The kernels are in ``benchmarks/kernel_suite.py``. Per kernel (a Markdown table on stdout,
progress on stderr):

- **verdict**: ``autolax.trace_check`` at the smallest size: ``staged`` (every loop is a lax
  loop), ``unrolled: <reason>`` (a loop ran as Python: its first call grows with the size)
  or ``refused: <error class>`` (autolax raised its own error);
- **eqns**: equations of the traced program (nested jaxprs included), autolax / twin, at the
  smallest size; for a staged kernel also at the largest, shown only where it differs (it
  should not: the trace does not grow with the size);
- **first call**: seconds from a new function object (autolax's conversion caches and JAX's
  caches emptied) to the blocked result -- conversion, trace, compile and run -- for autolax
  at each size (a kernel that unrolls is measured at the smallest only: "skipped: unrolls");
  **first ×**: autolax over the twin's first call at the largest size measured;
- **steady ×**: the compiled autolax function's call time over the twin's, at the largest
  size measured, each the fastest of ``--repeats`` calls (the two alternate; on a shared
  machine a median catches other processes' bursts -- a 40 us call measured 3 ms);
- **check**: the autolax result equals the twin's (``np.allclose``) at every size measured,
  and the NumPy reference's (the same loops run by Python on NumPy arrays) at the smallest.
  A mismatch is printed as ``MISMATCH`` and on stderr.

The summary gives the geometric means and the worst steady-state ratio over the staged
kernels. Timings on a shared machine are noisy; ``--repeats`` sets the steady-state calls.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import time
import warnings

import jax
import numpy as np

import autolax
from autolax.check import count_equations
from benchmarks import kernel_suite
from benchmarks.conversion import fresh

_STAGED, _UNROLLED, _REFUSED = "staged", "unrolled", "refused"


def _close(a, b, rtol) -> bool:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(
        np.shape(x) == np.shape(y) and np.allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol,
                                                   atol=1e-4)
        for x, y in zip(la, lb))


def _block(tree):
    return jax.tree_util.tree_map(lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x, tree)


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def verdict(kernel, args):
    """(kind, text, autolax equations or None)."""
    try:
        with _quiet():
            report = autolax.trace_check(autolax.jit(fresh(kernel.loops)), *args)
    except autolax.UnrolledLoopError as exc:
        rows = exc.report.unrolled
        reason = rows[0].became[len("python (unrolled: "):-1] if rows else "?"
        reason = reason.split(" (")[0]  # "line 127 slices an array with traced bounds"
        return _UNROLLED, f"unrolled (loop at line {rows[0].lineno}): {reason}", count_equations(exc.report.jaxpr.jaxpr)
    except autolax.AutolaxError as exc:
        return _REFUSED, f"refused: {type(exc).__name__}", None
    except Exception as exc:  # noqa: BLE001 - JAX's own error escaping is what the table must show
        return _REFUSED, f"CRASH: {type(exc).__name__}", None
    return _STAGED, "staged", count_equations(report.jaxpr.jaxpr)


def first_call(fn, args, autolax_jit: bool) -> tuple[float, object]:
    jax.clear_caches()
    f = fresh(fn)
    start = time.perf_counter()
    with _quiet():
        out = _block((autolax.jit(f) if autolax_jit else jax.jit(f))(*args))
    return time.perf_counter() - start, out


def steady(fa, ft, args, repeats: int) -> tuple[float, float]:
    ta, tt = [], []
    for _ in range(repeats):
        for f, times in ((fa, ta), (ft, tt)):
            start = time.perf_counter()
            _block(f(*args))
            times.append(time.perf_counter() - start)
    return min(ta), min(tt)


def run_kernel(kernel, sizes, repeats: int) -> dict:
    sizes = sizes or kernel.sizes
    row = {"name": kernel.name, "source": kernel.source, "sizes": list(sizes), "problems": []}
    small = kernel.args(sizes[0])
    kind, text, eqns = verdict(kernel, small)
    row.update(kind=kind, verdict=text, eqns=eqns)
    row["twin_eqns"] = count_equations(jax.make_jaxpr(kernel.twin)(*small).jaxpr)
    reference = kernel_suite.reference(kernel.loops)(*[np.array(a) for a in small])
    twin_small = jax.jit(kernel.twin)(*small)
    if not _close(reference, twin_small, kernel.rtol):
        row["problems"].append(f"twin != NumPy reference at n={sizes[0]}")
    if kind == _REFUSED:
        return row
    measured = sizes[:1] if kind == _UNROLLED else sizes
    row["first"] = {}
    for n in sizes:
        if n not in measured:
            row["first"][n] = None
            continue
        args = kernel.args(n)
        t_auto, out = first_call(kernel.loops, args, True)
        t_twin, twin_out = first_call(kernel.twin, args, False)
        row["first"][n] = t_auto
        row["first_twin"] = (n, t_twin)
        if not _close(out, twin_out, kernel.rtol):
            row["problems"].append(f"autolax != twin at n={n}")
        if n == sizes[0] and not _close(out, reference, kernel.rtol):
            row["problems"].append(f"autolax != NumPy reference at n={n}")
        print(f"  {kernel.name} n={n}: first call {t_auto:.3f} s (twin {t_twin:.3f} s)", file=sys.stderr, flush=True)
    n, t_twin = row["first_twin"]
    row["first_ratio"] = row["first"][n] / t_twin
    args = [jax.numpy.asarray(a) for a in kernel.args(n)]  # on the device: no transfer is timed
    with _quiet():
        fa = autolax.jit(kernel.loops)
        ft = jax.jit(kernel.twin)
        _block(fa(*args)), _block(ft(*args))
        ta, tt = steady(fa, ft, args, repeats)
    row.update(steady_n=n, steady_autolax=ta, steady_twin=tt, steady_ratio=ta / tt)
    if kind == _STAGED and n != sizes[0]:  # a staged kernel's trace does not grow with the size
        with _quiet():
            big = count_equations(jax.make_jaxpr(autolax.convert(kernel.loops))(*args).jaxpr)
        if big != eqns:
            row["eqns_big"] = (n, big)
    for p in row["problems"]:
        print(f"MISMATCH {kernel.name}: {p}", file=sys.stderr, flush=True)
    return row


def _fmt_s(t):
    return "—" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(rows) -> str:
    lines = [
        "| kernel | verdict | eqns autolax / twin | first call × twin | steady × twin | first call (s) at sizes | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eq = f"{r['eqns'] if r['eqns'] is not None else '—'} / {r['twin_eqns']}"
        if "eqns_big" in r:
            eq += f" ({r['eqns_big'][1]} at n={r['eqns_big'][0]})"
        if r["kind"] == _REFUSED:
            first, ratio_f, ratio_s = "—", "—", "—"
        else:
            first = ", ".join(f"n={n}: " + ("skipped: unrolls" if t is None else _fmt_s(t)) for n, t in r["first"].items())
            ratio_f = f"{r['first_ratio']:.2f}"
            ratio_s = f"{r['steady_ratio']:.2f} (n={r['steady_n']})"
        check = "MISMATCH: " + "; ".join(r["problems"]) if r["problems"] else "ok"
        lines.append(f"| {r['name']} | {r['verdict']} | {eq} | {ratio_f} | {ratio_s} | {first} | {check} |")
    staged = [r for r in rows if r["kind"] == _STAGED]
    by_kind = {k: sum(r["kind"] == k for r in rows) for k in (_STAGED, _UNROLLED, _REFUSED)}
    lines.append("")
    lines.append(f"{len(rows)} kernels: {by_kind[_STAGED]} staged, {by_kind[_UNROLLED]} unrolled, "
                 f"{by_kind[_REFUSED]} refused; {sum(bool(r['problems']) for r in rows)} mismatches.")
    if staged:
        worst = max(staged, key=lambda r: r["steady_ratio"])
        lines.append(f"Staged kernels: steady state geomean {geomean([r['steady_ratio'] for r in staged]):.2f}× the twins "
                     f"(worst {worst['steady_ratio']:.2f}×, {worst['name']}); first call geomean "
                     f"{geomean([r['first_ratio'] for r in staged]):.2f}×.")
    return "\n".join(lines)


def fused_updates(n: int, repeats: int) -> str:
    """Item 5 on seidel-2d in one run: autolax's one update per point against the two
    updates per point autolax emitted before (``A = A.at[i, j].set(A[i, j] + s)`` then
    ``A = A.at[i, j].set(A[i, j] / 9.0)``, written out as it was), and the twin."""
    import jax.numpy as jnp
    from jax import lax

    def before(A):  # what autolax emitted before the fold, as lax loops
        m = A.shape[0]

        def j_loop(j, c):
            A, i = c
            s = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j - 1]
                 + A[i + 1, j] + A[i + 1, j + 1])
            A = A.at[i, j].set(A[i, j] + s)
            return A.at[i, j].set(A[i, j] / 9.0), i

        def i_loop(i, A):
            return lax.fori_loop(1, m - 1, j_loop, (A, i))[0]

        return lax.fori_loop(0, kernel_suite.TSTEPS, lambda t, A: lax.fori_loop(1, m - 1, i_loop, A), A)

    A = jnp.asarray(kernel_suite.BY_NAME["seidel-2d"].args(n)[0])
    fa, fb, ft = autolax.jit(kernel_suite.seidel_2d), jax.jit(before), jax.jit(kernel_suite.seidel_2d_twin)
    outs = [_block(f(A)) for f in (fa, fb, ft)]
    assert _close(outs[0], outs[2], 1e-3) and _close(outs[1], outs[2], 1e-3)
    times = {}
    for _ in range(repeats):
        for name, f in (("autolax (one update)", fa), ("two updates (before)", fb), ("twin", ft)):
            start = time.perf_counter()
            _block(f(A))
            times.setdefault(name, []).append(time.perf_counter() - start)
    med = {k: min(v) for k, v in times.items()}
    lines = [f"seidel-2d, n={n}, {kernel_suite.TSTEPS} time steps, fastest of {repeats} calls:", "",
             "| form | steady (ms) | × twin |", "|---|---|---|"]
    for k, v in med.items():
        lines.append(f"| {k} | {v * 1e3:.3f} | {v / med['twin']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", help="comma-separated names (default: all)")
    parser.add_argument("--sizes", help="comma-separated problem sizes (default: each kernel's own three)")
    parser.add_argument("--repeats", type=int, default=15, help="steady-state calls per variant (default 15)")
    parser.add_argument("--out", help="also write the Markdown table to this file")
    parser.add_argument("--fused-updates", action="store_true", help="only item 5's seidel-2d before/after")
    parser.add_argument("--list", action="store_true", help="list the kernels and exit")
    parser.add_argument("--x64", action="store_true", help="run with jax_enable_x64 (inputs stay float32)")
    ns = parser.parse_args(argv)
    if ns.x64:
        jax.config.update("jax_enable_x64", True)
    if ns.list:
        for k in kernel_suite.KERNELS:
            print(f"{k.name:16s} {k.source:16s} sizes {k.sizes}")
        return 0
    if ns.fused_updates:
        n = int(ns.sizes.split(",")[-1]) if ns.sizes else 64
        print(fused_updates(n, ns.repeats))
        return 0
    names = ns.kernels.split(",") if ns.kernels else [k.name for k in kernel_suite.KERNELS]
    unknown = [n for n in names if n not in kernel_suite.BY_NAME]
    if unknown:
        parser.error(f"unknown kernels: {', '.join(unknown)} (see --list)")
    sizes = tuple(int(s) for s in ns.sizes.split(",")) if ns.sizes else None
    rows = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        rows.append(run_kernel(kernel_suite.BY_NAME[name], sizes, ns.repeats))
    header = (f"JAX {jax.__version__}, {jax.default_backend().upper()} ({jax.devices()[0].device_kind}); "
              f"`python -m benchmarks.kernels{' ' + ' '.join(argv if argv is not None else sys.argv[1:]) if (argv or sys.argv[1:]) else ''}`")
    text = header + "\n\n" + table(rows)
    print(text)
    if ns.out:
        with open(ns.out, "w") as fh:
            fh.write(text + "\n")
    return 1 if any(r["problems"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
