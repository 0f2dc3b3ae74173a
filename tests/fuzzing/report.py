"""Adds up ``ProgramResult``s and prints the tables: outcomes per path, per construct, what
Python did, warnings, and where the time went."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .generator import CONSTRUCTS
from .outcome import CATEGORIES, SILENT
from .paths import ALL_PATHS


@dataclass
class Summary:
    programs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # summed over the processes that ran programs
    python: Counter = field(default_factory=Counter)
    runs: Counter = field(default_factory=Counter)  # (path, verdict)
    refusals: Counter = field(default_factory=Counter)  # (path, exception type)
    refused_as_python: Counter = field(default_factory=Counter)  # path (see ``runner.Result``)
    warnings: Counter = field(default_factory=Counter)  # (path, category)
    path_seconds: Counter = field(default_factory=Counter)
    constructs: dict = field(default_factory=dict)  # construct -> Counter of column -> programs
    failures: list = field(default_factory=list)  # every Failure (one per program, path, category)
    failed_programs: int = 0
    silent_programs: int = 0
    refused_programs: int = 0

    def add(self, r) -> None:
        self.programs += 1
        self.cpu_seconds += r.cpu_seconds
        self.python.update(r.python)
        self.runs.update(r.runs)
        self.refusals.update(r.refusals)
        self.refused_as_python.update(r.refused_as_python)
        self.warnings.update(r.warnings)
        self.path_seconds.update(r.path_seconds)
        self.failures.extend(r.failures)
        cats = r.categories
        refused = any(v == "refused" for (_, v) in r.runs)
        self.failed_programs += bool(cats)
        self.silent_programs += bool(cats & set(SILENT))
        self.refused_programs += refused
        for c in r.constructs:
            row = self.constructs.setdefault(c, Counter())
            row["programs"] += 1
            row[r.staging.get(c, "-")] += 1
            row["any path refused"] += refused
            row["failed"] += bool(cats)
            row["silent"] += bool(cats & set(SILENT))
            row["jax-internal"] += "jax-internal" in cats

    def merge(self, other: "Summary") -> None:
        for name in ("python", "runs", "refusals", "refused_as_python", "warnings", "path_seconds"):
            getattr(self, name).update(getattr(other, name))
        for c, row in other.constructs.items():
            self.constructs.setdefault(c, Counter()).update(row)
        self.failures.extend(other.failures)
        self.programs += other.programs
        self.cpu_seconds += other.cpu_seconds
        for name in ("failed_programs", "silent_programs", "refused_programs"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    # ------------------------------------------------------------------ figures
    @property
    def compared_runs(self) -> int:
        return sum(self.runs.values())

    @property
    def refused_runs(self) -> int:
        return sum(v for (_, verdict), v in self.runs.items() if verdict == "refused")

    def mismatches(self) -> Counter:
        out = Counter()
        for (_, verdict), v in self.runs.items():
            if verdict not in ("ok", "refused"):
                out[verdict] += v
        return out

    def text(self) -> str:
        out = []
        runs = self.compared_runs
        mism = self.mismatches()
        share = self.refused_runs / runs if runs else 0.0
        out.append(
            f"{self.programs} programs in {self.seconds:.0f} s ({self.cpu_seconds:.0f} CPU-s in the runs); {runs} compared runs: "
            f"{runs - self.refused_runs - sum(mism.values())} ok, {self.refused_runs} refused ({share:.1%}), "
            f"{sum(mism.values())} mismatched"
        )
        out.append(
            f"programs: {self.failed_programs} with a mismatch ({self.silent_programs} silent), "
            f"{self.refused_programs} refused on some path"
        )
        as_python = sum(self.refused_as_python.values())
        if as_python:
            out.append(f"of the ok runs, {as_python} raised an autolax error of the exception type Python raised "
                       f"({as_python / runs:.1%} of all runs; UndefinedVariableError for UnboundLocalError, ...)")
        out.append("")
        out.append(self.path_table())
        out.append("")
        out.append(self.construct_table())
        out.append("")
        py = ", ".join(f"{k}: {v}" for k, v in sorted(self.python.items(), key=lambda kv: -kv[1]))
        out.append(f"Python outcomes (program x input set): {py}")
        refused = Counter()
        for (_, exc, _), v in self.refusals.items():
            refused[exc] += v
        out.append("refusals by error: " + (", ".join(f"{k}: {v}" for k, v in refused.most_common()) or "none"))
        warned = Counter()
        for (_, w), v in self.warnings.items():
            warned[w] += v
        out.append("warnings: " + (", ".join(f"{k}: {v}" for k, v in warned.most_common()) or "none"))
        out.append("time per path (s): " + ", ".join(f"{k} {v:.0f}" for k, v in self.path_seconds.most_common()))
        return "\n".join(out)

    def path_table(self) -> str:
        paths = [p for p in ALL_PATHS if any(k[0] == p for k in self.runs)]
        cats = [c for c in CATEGORIES if any(k[1] == c for k in self.runs)]
        header = ["path", "runs", "ok", "refused", *cats]
        rows = []
        for p in paths:
            counts = {v: n for (q, v), n in self.runs.items() if q == p}
            rows.append([p, str(sum(counts.values())), str(counts.get("ok", 0)), str(counts.get("refused", 0))]
                        + [str(counts.get(c, 0)) for c in cats])
        return _table(header, rows)

    def construct_table(self) -> str:
        header = ["construct", "programs", "staged", "python", "refused", "any path refused", "failed", "silent", "jax-internal"]
        rows = []
        for c in [*CONSTRUCTS, "static_argnums"]:
            row = self.constructs.get(c)
            if not row:
                continue
            rows.append([c] + [str(row.get(h, 0)) for h in header[1:]])
        return _table(header, rows) + "\n(staged / python / refused: autolax.trace_check on the all-traced arguments; a program counts once per construct)"

    def refusal_reasons(self, top=25) -> str:
        """The most frequent refusals: runs, path, error and its message (names and numbers
        blanked out)."""
        counts = Counter()
        for (path, exc, reason), v in self.refusals.items():
            counts[(exc, reason)] += v
        paths: dict = {}
        for (path, exc, reason), v in self.refusals.items():
            paths.setdefault((exc, reason), Counter())[path] += v
        lines = []
        for (exc, reason), v in counts.most_common(top):
            where = ", ".join(f"{p} {n}" for p, n in paths[(exc, reason)].most_common())
            lines.append(f"{v:6d}  {exc}: {reason[:110]}  [{where}]")
        return "refusals (runs, error, message):\n" + "\n".join(lines)

    def signatures(self) -> str:
        """Distinct failure signatures (see ``Failure.signature``), most frequent first."""
        groups: dict = {}
        for f in self.failures:
            groups.setdefault(f.signature, []).append(f.seed)
        lines = [f"{len(seeds):5d}  {sig}   (seeds {_seed_list(seeds)})"
                 for sig, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
        return "failure signatures (programs, signature):\n" + "\n".join(lines)

    def failure_counts(self) -> str:
        """Mismatched programs per (category, path)."""
        counts = Counter((f.category, f.path) for f in self.failures)
        return "\n".join(f"  {cat:<16} {path:<18} {n}" for (cat, path), n in sorted(counts.items()))


def _table(header, rows) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _seed_list(seeds, most: int = 12) -> str:
    """The seeds of a signature, each once, in order; a long list ends with how many more
    (a run stopped early still names every program to re-run)."""
    seeds = sorted(set(seeds))
    shown = ", ".join(str(s) for s in seeds[:most])
    return shown if len(seeds) <= most else f"{shown} and {len(seeds) - most} more"
