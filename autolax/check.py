"""``autolax.trace_check``: trace once and report what every control-flow statement became."""

from __future__ import annotations

import inspect
import os
import re
import types
from collections import Counter
from dataclasses import dataclass, field

import jax

from autolax import api, filtering
from autolax.runtime import plan, sites
from autolax.runtime.errors import UnrolledLoopError
from autolax.runtime.ops import report as recording

# The jaxpr primitive each staged form shows up as (the trace report's consistency check).
PRIMITIVE = {
    plan.COND: "cond",
    plan.SELECT: "select_n",
    plan.WHILE: "while",
    plan.EARLY_EXIT: "while",
    plan.FORI: "while",
    plan.SCAN: "scan",
    plan.MASKED_SCAN: "scan",
    plan.BOUNDED: "while",
}


@dataclass
class Recorder:
    """What the runtime records while ``trace_check`` traces (``report.recording``): one
    event per staging decision and how many times each body was traced."""

    events: list = field(default_factory=list)
    traces: dict = field(default_factory=dict)  # site -> number of body traces

    def mark(self):
        return len(self.events), dict(self.traces)

    def rollback(self, mark):
        self.events = self.events[: mark[0]]
        self.traces = mark[1]

    def drop_events_since(self, mark):
        """Forget the staging decisions of a discarded trace (keeping its trace count)."""
        self.events = self.events[: mark[0]]


@dataclass
class Row:
    """One statement of the report."""

    filename: str
    lineno: int
    kind: str  # "if", "while", "for", "ternary", "and", "or", "not"
    became: str  # "lax.cond", "lax.while_loop", "lax.scan", "python (static)", ...
    times: int  # how many times the statement was reached while tracing
    traces: int  # how many times its body (branches) was traced into a jaxpr
    source: str = ""
    reason: str | None = None

    @property
    def location(self) -> str:
        return f"{os.path.basename(sites.display_filename(self.filename))}:{self.lineno}"

    @property
    def unrolled(self) -> bool:
        return self.became.startswith("python (unrolled")


@dataclass
class TraceReport:
    """What ``trace_check`` found: one ``Row`` per (statement, outcome), the jaxpr, and the
    count of each control-flow primitive in it (nested jaxprs included)."""

    rows: list
    jaxpr: object
    primitives: dict = field(default_factory=dict)

    @property
    def unrolled(self) -> list:
        return [r for r in self.rows if r.unrolled]

    @property
    def consistent(self) -> bool:
        """Every staged statement appears in the jaxpr as its primitive."""
        expected = Counter()
        for r in self.rows:
            prim = PRIMITIVE.get(r.became)
            if prim:
                expected[prim] += r.times
            if r.became == plan.MASKED_SCAN:  # each iteration's body sits in a cond
                expected["cond"] += r.times
        return all(self.primitives.get(p, 0) >= n for p, n in expected.items())

    def to_dicts(self) -> list:
        return [
            {
                "location": f"{r.filename}:{r.lineno}",
                "kind": r.kind,
                "became": r.became,
                "times": r.times,
                "traces": r.traces,
                "source": r.source,
                "reason": r.reason,
            }
            for r in self.rows
        ]

    def __str__(self) -> str:
        header = ("where", "statement", "became", "reached", "traced")
        body = [
            (r.location, _clip(r.source or r.kind, 38), r.became, str(r.times), str(r.traces) if r.traces else "-")
            for r in self.rows
        ]
        widths = [max(len(x) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body]
        prims = (
            ", ".join(f"{self.primitives[p]} {p}" for p in ("cond", "while", "scan") if self.primitives.get(p))
            or "no control-flow primitives"
        )
        verdict = "no loop was unrolled" if not self.unrolled else f"{len(self.unrolled)} loop(s) UNROLLED"
        lines.append(f"jaxpr: {prims} ({self.n_equations} equations); {verdict}")
        return "\n".join(lines)

    @property
    def n_equations(self) -> int:
        return count_equations(self.jaxpr.jaxpr) if self.jaxpr is not None else 0

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _clip(text, n):
    return text if len(text) <= n else text[: n - 3] + "..."


def _subjaxprs(eqn):
    for value in eqn.params.values():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if hasattr(v, "jaxpr") and hasattr(v, "consts"):  # ClosedJaxpr
                yield v.jaxpr
            elif hasattr(v, "eqns"):  # Jaxpr
                yield v


def primitive_counts(jaxpr) -> Counter:
    """How many times each primitive appears in ``jaxpr`` and its nested jaxprs."""
    counts = Counter()
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for sub in _subjaxprs(eqn):
            counts.update(primitive_counts(sub))
    return counts


def count_equations(jaxpr) -> int:
    """Equations in ``jaxpr`` including nested jaxprs: the size of the traced program."""
    return sum(1 + sum(count_equations(s) for s in _subjaxprs(e)) for e in jaxpr.eqns)


def _target(fn):
    """(what ``autolax.jit`` was given -- or a ``JitInfo`` for a plain callable --, the
    arguments bound before the call's own: a method's ``self``)."""
    bound = ()
    if isinstance(fn, types.MethodType) and api.jit_info(fn.__func__) is not None:  # autolax.jit as a method
        bound, fn = (fn.__self__,), fn.__func__
    info = api.jit_info(fn)
    if info is None:
        info = api.JitInfo(api._original(fn), None, None, False)
    if not callable(info.fn):
        raise TypeError(f"autolax.trace_check expects a function or another callable, got {fn!r}")
    return info, bound


def trace_check(fn, *args, **kwargs) -> TraceReport:
    """Traces ``fn(*args, **kwargs)`` once and reports every control-flow statement.

    ``fn`` is a function -- or any callable ``autolax.jit`` takes (a ``functools.partial``,
    a bound method, a callable object or module) --, a converted function, an
    ``autolax.jit`` object (its static arguments are honoured) or an
    ``autolax.filter_jit`` object (non-array arguments are static). Each row gives the
    statement's ``file:line``, what it became (``lax.cond``, ``lax.select``,
    ``lax.while_loop``, ``lax.while_loop (grad: masked lax.scan)``, ``lax.scan``,
    ``lax.scan (masked)``, ``lax.fori_loop``, ``python (static)`` or
    ``python (unrolled: <reason>)``), how many times it was reached and how many times its
    body was traced. ``print(report)`` shows a table.

    Raises:
      UnrolledLoopError: a loop carrying traced values ran as a Python loop (the error's
        ``report`` attribute holds the report).
    """
    info, bound = _target(fn)
    args = (*bound, *args)
    converted = api.convert(info.fn, max_steps=info.max_steps)

    def traced(*a, **k):  # a fresh function: jax.jit's trace cache cannot skip the Python
        return converted(*a, **k)

    # The function's own signature: jax.jit finds the position of each of ``static_argnames``
    # (and the name of each of ``static_argnums``) from it, so an argument named static is
    # static whether it is passed by position or by keyword, as for the jitted function.
    try:
        traced.__signature__ = inspect.signature(converted)
    except (TypeError, ValueError):  # a callable without a signature Python can read
        pass

    recorder = Recorder()
    with recording.recording(recorder):
        if info.filtered:
            jaxpr = filtering.filter_trace(traced, args, kwargs)
        else:
            jitted = jax.jit(traced, static_argnums=info.static_argnums, static_argnames=info.static_argnames)
            try:
                jaxpr = jitted.trace(*args, **kwargs).jaxpr
            except Exception as exc:
                refusal = recording.escaped_tracer_error(exc)
                if refusal is None:
                    raise
                raise refusal from exc
    report = TraceReport(_rows(recorder), jaxpr, dict(primitive_counts(jaxpr.jaxpr)))
    if report.unrolled:
        lines = [f"{r.location}: {r.became}" for r in report.unrolled]
        err = UnrolledLoopError(
            "loops carrying traced values ran as Python loops (unrolled into the trace):\n  "
            + "\n  ".join(lines)
            + "\n\n"
            + str(report)
        )
        err.report = report
        raise err
    return report


_KEYWORD = {"and": "and", "or": "or", "not": "not", "ternary": "else"}


def _written_by_user(site) -> bool:
    """Jump lowering adds `not break_`-style tests on the user's lines; an operator row is
    kept only if the line really has that operator."""
    keyword = _KEYWORD.get(site.kind)
    return keyword is None or re.search(rf"\b{keyword}\b", site.source or "") is not None


def _rows(recorder) -> list:
    grouped: dict = {}
    order = []
    for event in recorder.events:
        c = event.site
        if isinstance(c, recording.ExpressionSite) and not _written_by_user(c):
            continue
        key = (c.filename, c.lineno, c.kind, event.outcome)
        if key not in grouped:
            grouped[key] = [c, event, 0]
            order.append(key)
        grouped[key][2] += 1
    rows = []
    for key in order:
        c, event, times = grouped[key]
        traces = recorder.traces.get(c, 0) if not event.outcome.startswith("python") else 0
        rows.append(Row(c.filename, c.lineno, c.kind, event.outcome, times, traces, c.source, event.reason))
    rows.sort(key=lambda r: (r.filename, r.lineno))
    return rows
