"""Runs programs through every path and compares each outcome with Python's.

For each program (``check_program``):

1. Plans of arguments: every numeric argument traced (three input sets; the scalars
   sometimes as Python numbers, weakly typed when traced), then a static mix (some of
   ``a``, ``b``, ``n`` static, with values shared by its two input sets), and for some
   programs (tagged ``static_argnums``) the same function under ``static_argnums=(0,)`` and
   ``(1,)`` with ``a == b``, where a cache keyed on the static values alone would collide.
   Arrays are float32/int32 or float64/int64 (``jax_enable_x64`` is on). The traced paths
   are traced with ``.trace(*args)`` and their jaxprs interpreted, except on those last two
   plans: ``.trace`` does not share the call path's cache, so they are called.
2. The oracle: the program as plain Python with ``jnp`` bound to NumPy (``paths.NUMPY_AS_JNP``:
   ``stack`` refuses lists as ``jax.numpy`` does), on copies of the same arguments: the
   value it returns or the exception it raises, what it prints, and its globals after the
   call (reset before every call, on every path).
3. Every path of ``paths.ALL_PATHS`` on every plan (the eager paths and ``vmap`` on the
   traced plan only; ``vmap`` only where Python returns on every input set and nothing is
   printed), compared with ``outcome.verdict``.
4. ``autolax.trace_check`` on the traced plan: which constructs were staged to lax and which
   ran as Python.
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from . import outcome as oc
from .constructs import construct_lines
from .generator import K, generate
from .interpret import evaluate
from .paths import ALL_PATHS, EAGER, PARAM_NAMES, ProgramPaths, Refused, Workspace, make_shell

STATIC_MIXES = [(2,), (0,), (0, 2), (0, 1, 2), (1, 2)]


@dataclass
class Plan:
    static: tuple
    inputs: list  # argument tuples; static positions hold Python numbers
    label: str = ""
    called: bool = False  # call the traced paths even when interpreting (see make_plans)


@dataclass
class Failure:
    """One mismatch: enough to reproduce it by hand."""

    seed: int
    source: str
    path: str
    category: str
    static: tuple
    inputs: tuple  # reprs of the arguments
    python: str  # what Python did
    got: str  # what the path did
    detail: str
    error: str = ""  # the path's exception, `Type: message`, if it raised

    @property
    def signature(self) -> str:
        """The failure with names, numbers and paths blanked out: failures with one
        signature are most likely one bug."""
        what = self.error or f"{self.got.split(' ')[0]}; Python {self.python.split(' ')[0]} {self.python.split(' ')[1]}"
        return f"{self.path} {self.category}: {_normalise(what)}"

    def report(self) -> str:
        static = f", static_argnums={self.static}" if self.static else ""
        return (
            f"--- program {self.seed} [{self.path}{static}] {self.category}: {oc.CATEGORIES.get(self.category, '')} ---\n"
            f"{self.source}"
            f"inputs: f({', '.join(self.inputs)})\n"
            f"Python: {self.python}\n{self.path}: {self.got}\n{self.detail.rstrip()}\n"
        )


@dataclass
class ProgramResult:
    """What happened to one program (plain data: results travel between processes)."""

    seed: int
    constructs: set
    python: Counter = field(default_factory=Counter)  # "value" / "raise ValueError" / "skip"
    runs: Counter = field(default_factory=Counter)  # (path, verdict) -> count
    refusals: Counter = field(default_factory=Counter)  # (path, exception type, message pattern) -> count
    # path -> ok runs whose exception is an autolax error that is an instance of the one Python
    # raised (``UndefinedVariableError`` where Python raises ``UnboundLocalError``)
    refused_as_python: Counter = field(default_factory=Counter)
    warnings: Counter = field(default_factory=Counter)  # (path, warning category) -> count
    staging: dict = field(default_factory=dict)  # construct -> staged / python / refused / error
    path_seconds: Counter = field(default_factory=Counter)  # path -> time spent on it
    failures: list = field(default_factory=list)  # one Failure per (path, category)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def categories(self) -> set:
        return {v for (_, v) in self.runs if v not in ("ok", "refused")}


def _reason(exc_text: str) -> str:
    """The message of an autolax error without its ``file:line:col:`` prefix."""
    line = oc.first_line(exc_text)
    return line.split(": ", 1)[-1] if ": " in line else line


def _normalise(text: str) -> str:
    import re

    text = re.sub(r"(?:/[\w.\-<>]+){2,}(?::\d+)*", "<file>", text)
    text = re.sub(r"'[^']*'", "'X'", text)
    text = re.sub(r"`(del|global|nonlocal) [^`]*`", r"`\1 X`", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:160]


# ----------------------------------------------------------------------------- environment
@contextlib.contextmanager
def configured():
    """``jax_enable_x64`` on and JAX's traceback filtering off (so an exception's innermost
    frame says whether JAX raised it); both restored after."""
    import jax

    saved = {k: getattr(jax.config, k) for k in ("jax_enable_x64", "jax_traceback_filtering")}
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_traceback_filtering", "off")
    try:
        yield
    finally:
        for k, v in saved.items():
            jax.config.update(k, v)


# ----------------------------------------------------------------------------- inputs
def _scalar(rng, kind, bits, weak):
    if kind == "f":
        x = rng.randint(-8, 8) / 2  # halves: exact in float32
        return x if weak else (np.float32 if bits == 32 else np.float64)(x)
    x = rng.randint(-1, 5)
    return x if weak else (np.int32 if bits == 32 else np.int64)(x)


def make_inputs(rng, bits=32, weak=False, fixed=None):
    """One argument tuple ``(a, b, n, xs, ys)``; ``fixed``: {position: Python value}."""
    ftype, itype = (np.float32, np.int32) if bits == 32 else (np.float64, np.int64)
    args = [_scalar(rng, "f", bits, weak), _scalar(rng, "f", bits, weak), _scalar(rng, "i", bits, weak)]
    args.append(np.array([rng.randint(-8, 8) / 2 for _ in range(K)], ftype))
    args.append(np.array([rng.randint(-3, 5) for _ in range(K)], itype))
    for i, v in (fixed or {}).items():
        args[i] = v
    return tuple(args)


def make_plans(seed: int, collide: bool | None = None) -> list:
    rng = random.Random(seed * 7919 + 17)
    bits = rng.choice([32, 64])
    weak = rng.random() < 0.3
    plans = [Plan((), [make_inputs(rng, bits, weak) for _ in range(3)], "all traced" + (", weak scalars" if weak else ""))]
    static = rng.choice(STATIC_MIXES)
    fixed = {i: (rng.randint(-4, 4) / 2 if i < 2 else rng.randint(0, 4)) for i in static}
    plans.append(Plan(static, [make_inputs(rng, bits, False, fixed) for _ in range(2)], f"static {static}"))
    if collide if collide is not None else rng.random() < 0.1:
        # Called, not traced with `.trace()`: the collision is in jax.jit's call-path cache.
        v = rng.randint(-4, 4) / 2
        plans.append(Plan((0,), [make_inputs(rng, bits, False, {0: v})], f"static (0,), a == {v}", called=True))
        plans.append(Plan((1,), [make_inputs(rng, bits, False, {1: v})], f"static (1,), b == {v}", called=True))
    return plans


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _show(x) -> str:
    if isinstance(x, np.ndarray):
        return f"np.array({x.tolist()}, np.{x.dtype})"
    return f"np.{type(x).__name__}({x.item()!r})" if isinstance(x, np.generic) else repr(x)


# ----------------------------------------------------------------------------- calling
def _args_for(path, args):
    import jax.numpy as jnp

    args = _copy(args)
    if path == "eager-jax":
        return tuple(jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args)
    return args


def _call(target, args, compile):
    """Calls the target; a traced one without ``compile`` is traced and interpreted."""
    import jax
    import jax.numpy as jnp

    if not target.traced or compile:
        return target.fn(*args)
    traced = target.fn.trace(*args)
    dynamic = [a for i, a in enumerate(args) if i not in target.static]
    leaves = jax.tree_util.tree_leaves(dynamic)
    closed = traced.jaxpr
    leaves = [jnp.asarray(x, dtype=aval.dtype) for x, aval in zip(leaves, closed.in_avals)]
    return jax.tree_util.tree_unflatten(traced.out_tree, evaluate(closed, *leaves))


# ----------------------------------------------------------------------------- one program
def check_program(
    seed,
    *,
    source=None,
    paths=ALL_PATHS,
    compile=False,
    big=False,
    focus=None,
    idioms=False,
    collide=None,
    plans=None,
    stats=True,
    workspace=None,
    shell=None,
    log=None,
) -> ProgramResult:
    """Runs program ``seed`` (or ``source``) through ``paths``; see the module docstring.
    ``log``: a list that receives ``(path, plan, inputs, python label, label, verdict)`` for
    every compared call."""
    start, cpu = time.perf_counter(), time.process_time()
    source = source if source is not None else generate(seed, big, focus, idioms)
    lines = construct_lines(source)
    plans = plans if plans is not None else make_plans(seed, collide)
    if len(plans) > 2:
        lines["static_argnums"] = []
    result = ProgramResult(seed, set(lines))
    own_ws = workspace is None
    ws = workspace or Workspace()
    if "magic" in paths and shell is None:
        shell = make_shell()
    program = ProgramPaths(seed, source, ws, shell)
    try:
        _check(program, source, plans, paths, compile, stats, lines, result, log)
    finally:
        program.forget()
        if own_ws:
            ws.close()
    result.seconds = time.perf_counter() - start
    result.cpu_seconds = time.process_time() - cpu
    return result


def _check(program, source, plans, paths, compile, stats, lines, result, log):
    python = program.python()
    initial = oc.initial_globals(python.namespace)
    expected = []
    for plan in plans:
        outs = [oc.observe(lambda a=args: python.fn(*_copy(a)), python.namespace, initial, python=True) for args in plan.inputs]
        expected.append(outs)
        for o in outs:
            result.python[o.kind if o.kind != "raise" else f"raise {o.exc_type.__name__}"] += 1
    if stats:
        t0 = time.perf_counter()
        result.staging = _staging(program, plans[0].inputs[0], lines)
        result.path_seconds["trace_check"] += time.perf_counter() - t0

    seen = set()  # (path, category): one failure report each

    def record(path, plan, args, want, got):
        if want.kind == "skip":
            return
        eager = path in EAGER
        verdict, detail = oc.verdict(want, got, eager)
        result.runs[(path, verdict)] += 1
        if log is not None:
            log.append((path, plan, args, want.label, got.label, verdict))
        for w in got.warnings:
            result.warnings[(path, w)] += 1
        if verdict == "refused":
            result.refusals[(path, got.exc_type.__name__, _normalise(_reason(got.exc_text)))] += 1
        elif verdict == "ok":
            if got.kind == "raise" and got.refused:
                result.refused_as_python[path] += 1
        elif (path, verdict) not in seen:
            seen.add((path, verdict))
            result.failures.append(
                Failure(result.seed, source, path, verdict, plan.static, tuple(_show(a) for a in args), want.label, got.label,
                        detail, oc.first_line(got.exc_text) if got.kind == "raise" else "")
            )

    for path in paths:
        t0 = time.perf_counter()
        _check_path(program, path, plans, expected, initial, compile, record, result)
        result.path_seconds[path] += time.perf_counter() - t0


def _check_path(program, path, plans, expected, initial, compile, record, result):
    if path == "vmap":
        _check_vmap(program, plans[0], expected[0], compile, record)
        return
    for plan, want_list in zip(plans, expected):
        if path in EAGER and plan.static:
            continue
        with oc.record_warnings() as caught, contextlib.redirect_stdout(io.StringIO()):
            try:
                target = program.target(path, plan.static)
                failed = None
            except Refused as exc:
                failed = oc.exception_outcome(exc.exc)
            except Exception as exc:  # noqa: BLE001 - e.g. autolax.convert raising: an outcome
                failed = oc.exception_outcome(exc)
        for w in caught:
            result.warnings[(path, w.category.__name__)] += 1
        for args, want in zip(plan.inputs, want_list):
            if failed is not None:
                record(path, plan, args, want, failed)
                continue
            got = oc.observe(lambda a=args: _call(target, _args_for(path, a), compile or plan.called), target.namespace, initial)
            record(path, plan, args, want, got)


def _check_vmap(program, plan, expected, compile, record):
    """``jax.vmap(autolax.convert(f))`` over the traced plan's input sets, compared per set
    (only where Python returns on every set and prints nothing)."""
    import jax
    import jax.numpy as jnp
    import autolax

    if any(o.kind != "value" or o.printed for o in expected) or any(o.globals for o in expected):
        return
    base = program.base()
    stacked = [jnp.stack([jnp.asarray(args[i]) for args in plan.inputs]) for i in range(5)]

    def run():
        fn = jax.vmap(autolax.convert(base.f))
        if compile:
            return jax.jit(fn)(*stacked)
        closed, shape = jax.make_jaxpr(fn, return_shape=True)(*stacked)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), evaluate(closed, *stacked))

    batched = oc.observe(run)
    for k, (args, want) in enumerate(zip(plan.inputs, expected)):
        got = batched
        if batched.kind == "value":
            got = oc.Outcome("value", value=jax.tree_util.tree_map(lambda x, k=k: np.asarray(x)[k], batched.value), warnings=batched.warnings)
        record("vmap", plan, args, want, got)


def _staging(program, args, lines) -> dict:
    """{construct: "staged" | "python" | "refused" | "error"} from ``autolax.trace_check``."""
    import ast

    import autolax

    with oc.record_warnings(), contextlib.redirect_stdout(io.StringIO()):
        try:
            rows = autolax.trace_check(program.base().f, *_copy(args)).rows
        except autolax.UnrolledLoopError as exc:
            rows = exc.report.rows
        except Exception as exc:  # noqa: BLE001 - an outcome: refused or an error
            verdict = "refused" if oc.is_refusal(exc) else "error"
            return {c: verdict for c in lines}
    ends = {}
    for node in ast.walk(ast.parse(program.source)):
        if isinstance(node, ast.stmt):
            ends[node.lineno] = max(ends.get(node.lineno, 0), node.end_lineno)
    staged = set()
    for r in rows:
        if r.filename == program.filename and r.became.startswith("lax"):
            staged.update(range(r.lineno, ends.get(r.lineno, r.lineno) + 1))
    return {c: ("staged" if staged.intersection(ls) else "python") for c, ls in lines.items()}


# ----------------------------------------------------------------------------- many programs
SUBSET_PATHS = ("magic", "vmap", "eager-jax")  # slow or mostly redundant: every `every`-th program


def paths_for(seed, paths, every):
    return tuple(p for p in paths if p not in SUBSET_PATHS or seed % every == 0)


def run(
    seeds, *, paths=ALL_PATHS, compile=False, big=False, focus=None, idioms=False, every=4, stats=True, jobs=1,
    accept_notes=False, on_result=None,
):  # fmt: skip
    """Checks the programs with the given seeds; returns a ``report.Summary``. ``every``: the
    paths in ``SUBSET_PATHS`` run on programs whose seed is a multiple of it. ``jobs``:
    worker processes. ``accept_notes``: see ``outcome.ACCEPT_NOTES``. ``on_result
    (ProgramResult)`` is called as results come in (raise ``KeyboardInterrupt`` from it to
    stop)."""
    from .report import Summary

    seeds = list(seeds)
    start = time.perf_counter()
    summary = Summary()
    options = dict(paths=paths, compile=compile, big=big, focus=focus, idioms=idioms, every=every, stats=stats,
                   accept_notes=accept_notes)
    if jobs <= 1:
        for r in _results(seeds, options):
            summary.add(r)
            if on_result:
                on_result(r)
    else:
        import multiprocessing

        chunk = max(1, min(25, len(seeds) // (jobs * 4) or 1))
        chunks = [(seeds[i : i + chunk], options) for i in range(0, len(seeds), chunk)]
        # A worker's memory grows with every program converted: start fresh ones now and then.
        context = multiprocessing.get_context("spawn")
        with context.Pool(jobs, maxtasksperchild=max(1, 200 // chunk)) as pool:
            for results in pool.imap(_run_chunk, chunks):
                for r in results:
                    summary.add(r)
                    if on_result:
                        on_result(r)
    summary.seconds = time.perf_counter() - start
    return summary


def _results(seeds, options):
    options = dict(options)
    every = options.pop("every")
    paths = options.pop("paths")
    oc.ACCEPT_NOTES = options.pop("accept_notes")
    with configured():
        ws = Workspace()
        shell = make_shell() if "magic" in paths else None
        try:
            for seed in seeds:
                yield check_program(seed, paths=paths_for(seed, paths, every), workspace=ws, shell=shell, **options)
        finally:
            ws.close()


def _run_chunk(task):
    seeds, options = task
    return list(_results(seeds, options))
