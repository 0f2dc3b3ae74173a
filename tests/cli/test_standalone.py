"""`autolax convert --standalone` (issue 33): one lowering.

The output is the default output importing the runtime from its copy, ``autolax_runtime``,
written beside it. These tests prove it is the program ``autolax.jit`` runs:

* the copy is autolax's runtime, line for line, with its imports renamed, and needs nothing
  of autolax (a process where ``import autolax`` fails runs it);
* on the programs of ``examples/``, the golden cases, the CLI examples and fuzzer programs,
  ``jax.make_jaxpr`` of the output and of ``autolax.jit`` hold the same tree of control-flow
  primitives with the same primitives in each body, also under ``jax.grad``;
* a staging decision changed in ``autolax.runtime.plan`` changes both programs the same way;
* the command writes the copy with the output, all or nothing, and never replaces a folder
  of that name it did not write.
"""

from __future__ import annotations

import ast
import collections
import importlib.util
import inspect
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax import cli
from autolax.runtime import plan
from autolax.cli import Options, convert_source, runtime_copy
from paths import standalone_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autolax"
RUNTIME = PACKAGE / "runtime"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- the copy
def test_the_copy_is_the_runtime_folder_with_its_imports_renamed():
    files = runtime_copy.files()
    on_disk = {str(p.relative_to(RUNTIME)) for p in RUNTIME.rglob("*.py") if "__pycache__" not in p.parts}
    assert set(files) == {os.path.join("autolax_runtime", m) for m in on_disk}
    import_line = re.compile(r"^\s*(from|import)\s+autolax_runtime\b")
    for relpath, text in files.items():
        lines = text.split("\n")
        assert lines[0].startswith(runtime_copy.MARKER)
        copied = [line for line in lines[1:] if not (relpath.endswith("__init__.py") and line.startswith("# "))]
        original = (RUNTIME / os.path.relpath(relpath, "autolax_runtime")).read_text().split("\n")
        if relpath == os.path.join("autolax_runtime", "__init__.py"):
            original = [line for line in original if not line.startswith("# ")]
        assert len(copied) == len(original), relpath
        for mine, theirs in zip(copied, original):
            if mine != theirs:  # only the package's name in an import changes
                assert import_line.match(mine) and mine.replace("autolax_runtime", "autolax.runtime", 1) == theirs, (
                    relpath, mine)


def test_the_copy_holds_the_runtime_and_no_front_end():
    modules = set(runtime_copy.modules())
    assert os.path.join("ops", "loops.py") in modules and "plan.py" in modules
    text = "\n".join(runtime_copy.files().values())
    assert "autolax.frontend" not in text.replace("``autolax.frontend", "")
    assert not any(m.startswith(("frontend", "cli", "api")) for m in modules)


PROGRAM = '''\
import jax
import jax.numpy as jnp

import autolax


@autolax.jit
def settle(x, tol):
    steps = 0
    while abs(x) > tol:
        x = x * 0.5
        steps += 1
        if steps > 100:
            break
    return x, steps


@autolax.jit
def positives(xs):
    out = []
    for x in xs:
        if x > 0:
            print("positive", x)
        out.append(x * 2.0)
    return jnp.stack(out)


@autolax.jit
def checked_log(x):
    if x <= 0:
        raise ValueError("x must be positive")
    return jnp.log(x)


if __name__ == "__main__":
    x, steps = settle(jnp.float32(40.0), 0.01)
    print(float(x), int(steps))
    print(positives(jnp.array([1.0, -2.0, 3.0])).tolist())
    jax.effects_barrier()
    print(float(checked_log(jnp.float32(2.0))))
    try:
        checked_log(jnp.float32(-1.0))
        jax.effects_barrier()
    except Exception as exc:  # under plain jax.jit: JAX's runtime error holding the ValueError
        print("raised", "x must be positive" in str(exc))
'''


def test_the_output_runs_where_autolax_is_not_installed(tmp_path):
    src = tmp_path / "src" / "prog.py"
    src.parent.mkdir()
    src.write_text(PROGRAM)
    gen = tmp_path / "gen"
    assert cli.main(["convert", "--standalone", str(src), "-o", str(gen / "prog.py")]) == 0
    text = (gen / "prog.py").read_text()
    assert "from autolax_runtime import ops\n" in text and "import autolax\n" not in text
    # `import autolax` fails in the child: the output and its copy must not need it
    poison = tmp_path / "poison" / "autolax"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('autolax is not installed here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(poison.parent), str(gen)]), JAX_PLATFORMS="cpu")
    run = subprocess.run([sys.executable, str(gen / "prog.py")], capture_output=True, text=True, env=env,
                         timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"{40.0 / 2 ** 12} 12"  # Python's: twelve halvings to 0.0098
    assert lines[1:3] == ["positive 1.0", "positive 3.0"]
    assert lines[3] == "[2.0, -4.0, 6.0]"
    assert float(lines[4]) == pytest.approx(np.log(2.0), rel=1e-6)
    assert lines[5] == "raised True"


# ----------------------------------------------------------------------------- the same program
CONTROL_FLOW = {"cond", "while", "scan", "select_n"}
INLINED = {"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call", "custom_vjp_call"}
HOST = {"debug_callback", "io_callback", "pure_callback", "debug_print"}


def _inner(eqn):
    for value in eqn.params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if hasattr(v, "jaxpr") and hasattr(v, "consts"):
                yield v.jaxpr
            elif hasattr(v, "eqns"):
                yield v


def _is_var(v) -> bool:
    return type(v).__name__ not in ("Literal", "DropVar")


def _flat(jaxpr, env):
    """The equations of ``jaxpr`` with the calls in ``INLINED`` inlined: (primitive name,
    input variables, output variables, equation); ``env`` renames an inlined jaxpr's
    variables to the caller's."""
    out = []

    def get(v):
        while _is_var(v) and v in env:
            v = env[v]
        return v

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        ins = [get(v) for v in eqn.invars]
        if name in INLINED:
            inner = next(_inner(eqn))
            env.update((i, v) for i, v in zip(inner.invars, ins) if i is not v)
            inner_equations, inner_results = _flat(inner, env)
            out += inner_equations
            env.update((o, r) for o, r in zip(eqn.outvars, inner_results) if _is_var(o) and o is not r)
            continue
        out.append((name, ins, [o for o in eqn.outvars if _is_var(o)], eqn))
    return out, [get(v) for v in jaxpr.outvars]


def structure(jaxpr):
    """(the tree of control-flow primitives, each with its bodies' structures; the multiset
    of primitives) of the equations a jaxpr's results need, with calls inlined,
    ``convert_element_type`` to the same dtype dropped, and host callbacks (prints and
    run-time checks) counted as one kind, whatever carries their operands there: a check
    may be raised where it is made (plain ``jax.jit``) or from the function's result
    (``autolax.jit``), which the README allows ("may differ in kind, not in where they
    run")."""
    equations, results = _flat(jaxpr, {})
    live = {v for v in results if _is_var(v)}
    kept = []
    for name, ins, outs, eqn in reversed(equations):
        if name in HOST or name in ("cond", "while", "scan") or any(o in live for o in outs):
            if name not in HOST:
                live |= {v for v in ins if _is_var(v)}
            kept.append((name, eqn))
    tree, counts = [], collections.Counter()
    for name, eqn in reversed(kept):
        if name == "convert_element_type" and eqn.invars[0].aval.dtype == eqn.outvars[0].aval.dtype:
            continue
        name = "host callback" if name in HOST else name
        counts[name] += 1
        if name in CONTROL_FLOW:
            tree.append((name, tuple(structure(inner) for inner in _inner(eqn))))
    return tuple(tree), tuple(sorted(counts.items()))


def _same_program(fn, alone, args, static=()):
    """Asserts ``autolax.jit(fn)`` and ``jax.jit(alone)`` (the --standalone output) trace to
    the same structure on ``args``, and under ``jax.grad`` where ``fn`` is differentiable
    in its first argument."""
    params = list(inspect.signature(fn).parameters)
    nums = tuple(params.index(s) for s in static)
    ours = jax.make_jaxpr(autolax.jit(fn, static_argnames=static or None), static_argnums=nums)(*args)
    theirs = jax.make_jaxpr(jax.jit(alone, static_argnames=static or None), static_argnums=nums)(*args)
    assert structure(ours.jaxpr) == structure(theirs.jaxpr)
    first = jax.tree_util.tree_leaves(args[0])
    if static or not first or not all(np.issubdtype(np.asarray(leaf).dtype, np.floating) for leaf in first):
        return
    try:
        grad_ours = jax.make_jaxpr(jax.grad(_loss(autolax.jit(fn))))(*args)
    except Exception:  # noqa: BLE001 - not differentiable (an integer result, a refusal): nothing to compare
        return
    grad_theirs = jax.make_jaxpr(jax.grad(_loss(jax.jit(alone))))(*args)
    assert structure(grad_ours.jaxpr) == structure(grad_theirs.jaxpr)


def _loss(fn):
    """A scalar of ``fn``'s result to differentiate: the sum of its first leaf."""

    def loss(*args):
        return jnp.sum(jax.tree_util.tree_leaves(fn(*args))[0])

    return loss


def _function_standalone(fn, filename):
    """``fn``'s source, after its module's imports (but autolax's), converted with
    ``--standalone --only``, run with ``fn``'s globals."""
    module = ast.parse(pathlib.Path(inspect.getsourcefile(fn)).read_text())
    imports = [ast.unparse(n) for n in module.body if isinstance(n, (ast.Import, ast.ImportFrom))
               and not any(a.name.split(".")[0] == "autolax" for a in n.names)
               and not (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "autolax")]
    source = "\n".join(imports) + "\n\n\n" + textwrap.dedent(inspect.getsource(fn))
    return standalone_module(source, filename, namespace=fn.__globals__, only=(fn.__name__,))[fn.__name__]


CLI_EXAMPLES = ROOT / "tests" / "data" / "cli_examples.py"


@pytest.fixture(scope="module")
def cli_examples():
    original = _load(CLI_EXAMPLES, "standalone_cli_examples")
    alone = standalone_module(CLI_EXAMPLES.read_text(), "cli_examples.py", all=True)
    return original, alone


@pytest.mark.parametrize("name", sorted(n for n in _load(CLI_EXAMPLES, "names_of_cli_examples").INPUTS if "." not in n))
def test_cli_examples_trace_to_the_same_program(cli_examples, name):
    original, alone = cli_examples
    static = original.STATIC_ARGNAMES.get(name, ())
    for args in original.INPUTS[name]:
        _same_program(getattr(original, name), alone[name], args, static)


def _golden_inputs():
    xs = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    return {
        "collatz_steps": (jnp.int32(27),),
        "early_return": (jnp.float32(2.0),),
        "loop_index_after": (jnp.float32(1.0), 4),
        "tuple_target": (xs,),
        "first_negative": (xs,),
        "skip_negative": (xs,),
        "return_in_loop": (xs, jnp.float32(2.5)),
        "item_updates": (xs, jnp.int32(1)),
        "appends": (xs,),
        "calls_and_print": (jnp.float32(1.5),),
        "expressions": (jnp.float32(0.5), jnp.float32(0.0), jnp.float32(1.0)),
        "first_assigned_in_loop": (xs,),
        "escape_count": (jnp.float32(0.1), jnp.float32(0.2), 30),
    }


def test_golden_cases_trace_to_the_same_program():
    import golden_cases

    source = pathlib.Path(golden_cases.__file__).read_text()
    alone = standalone_module(source, "golden_cases.py", all=True)
    inputs = _golden_inputs()
    functions = {n for n, v in vars(golden_cases).items() if inspect.isfunction(v) and v.__module__ == "golden_cases"}
    assert functions - {"helper"} == set(inputs)  # every case (helper is called by one)
    for name, args in sorted(inputs.items()):
        static = ("n",) if name == "loop_index_after" else ("max_iter",) if name == "escape_count" else ()
        _same_program(getattr(golden_cases, name), alone[name], args, static)


def _example(name):
    return _load(ROOT / "examples" / f"{name}.py", f"standalone_examples_{name}")


# Every program of examples/ with its arguments. Not here: equinox_ode and flax_rnn, whose
# programs are methods of library modules called through library transforms (their
# --standalone form is a whole-file conversion; see README "Command line").
def _example_calls():
    rnn = _example("rnn")
    optax = _example("optax_early_stopping")
    kmeans_points = np.array([[0.0, 0.1], [0.2, 0.0], [5.0, 5.1], [5.2, 4.9]], np.float32)
    return [
        ("root_finding", "bisection", (0.0, 3.0)),
        ("root_finding", "newton_sqrt", (2.0,)),
        ("adaptive_ode", "integrate", (jnp.array([10.0, 5.0]), 1.0)),
        ("insertion_sort", "insertion_sort", (jnp.array([3, 1, 2]),)),
        ("integers", "gcd", (jnp.int32(1071), jnp.int32(462))),
        ("integers", "collatz_steps", (jnp.int32(27),)),
        ("integers", "binary_search", (jnp.arange(0, 100, 3), jnp.int32(42))),
        ("kmeans", "kmeans", (kmeans_points, kmeans_points[[0, 2]])),
        ("mandelbrot", "escape_count", (jnp.float32(-0.5), jnp.float32(0.5))),
        ("particles", "first_escape", (jnp.zeros((3, 2)) + 0.5, jnp.array([[1.0, 0.0], [0.0, 3.0], [-2.0, 0.5]]))),
        ("rnn", "run_rnn", (rnn.init_params(0, 3, 4), jnp.ones((5, 3)), jnp.zeros(4))),
        ("optax_early_stopping", "train", (optax.init_params(), *optax.make_data(), 1e-4)),
    ]


@pytest.mark.parametrize("module,name,args", _example_calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_examples_trace_to_the_same_program(module, name, args):
    fn = getattr(_example(module), name)
    _same_program(fn, _function_standalone(fn, f"{module}.py"), args)


def test_fuzzer_programs_trace_to_the_same_program(tmp_path):
    """Programs of the differential fuzzer (seeds 0-59) that autolax.jit traces, on their
    first input set, all arguments traced."""
    from fuzzing.generator import generate
    from fuzzing.runner import make_plans

    compared = 0
    for seed in range(60):
        source = generate(seed)
        path = tmp_path / f"fuzz_parity_{seed}.py"
        path.write_text(source)
        original = _load(path, f"fuzz_parity_{seed}")
        args = make_plans(seed)[0].inputs[0]
        try:
            jax.make_jaxpr(autolax.jit(original.f))(*args)
        except Exception:  # noqa: BLE001 - refused, or raised while traced: no program to compare
            continue
        alone = standalone_module(source, f"fuzz_parity_{seed}.py", all=True)
        _same_program(original.f, alone["f"], args)
        compared += 1
    assert compared >= 30


# ----------------------------------------------------------------------------- decisions
DECIDED = '''\
import jax.numpy as jnp


def f(x, xs):
    if x > 0:
        y = x * 2.0
    else:
        y = x + 1.0
    total = 0.0
    for v in xs:
        if v > 1.0:
            break
        total += v
    z = 1.0 if x > 0 else 2.0
    return y + total + z + jnp.where(x > 0 or x < -5, 1.0, 0.0)
'''

# (plan function, the decision it is forced to, a primitive that shows the change; None:
# the forced decision refuses the program, in the same words on both paths)
FORCED = [
    ("if_form", lambda *a, **k: plan.COND, "cond"),
    ("select_safe", lambda *a, **k: False, "cond"),
    ("logical_form", lambda *a, **k: plan.COND, "cond"),
    ("evaluate_anyway", lambda *a, **k: False, "cond"),
    ("ternary_form", lambda *a, **k: plan.PYTHON, None),
    ("condition_truth", lambda *a, **k: plan.NOT_ONE_VALUE, None),
    ("loop_form", lambda facts: plan.MASKED_SCAN, "scan"),
]


@pytest.mark.parametrize("decision,forced,shows", FORCED, ids=[d for d, _, _ in FORCED])
def test_a_decision_changed_in_plan_changes_both_programs_the_same_way(tmp_path, monkeypatch, decision, forced, shows):
    path = tmp_path / "decided.py"
    path.write_text(DECIDED)
    original = _load(path, f"decided_{decision}")
    alone = standalone_module(DECIDED, "decided.py", all=True)["f"]
    args = (jnp.float32(0.5), jnp.array([0.5, 2.0, 0.25], jnp.float32))
    before = structure(jax.make_jaxpr(autolax.jit(original.f))(*args).jaxpr)
    assert structure(jax.make_jaxpr(jax.jit(alone))(*args).jaxpr) == before
    import autolax_runtime.plan  # the copy the output imports

    monkeypatch.setattr(plan, decision, forced)
    monkeypatch.setattr(autolax_runtime.plan, decision, forced)
    outcomes = []
    # (programs loaded again: jax.jit keeps the traces of a function it has seen)
    again = standalone_module(DECIDED, "decided.py", all=True)["f"]
    for fn in (autolax.jit(_load(path, f"decided_{decision}_again").f), jax.jit(again)):
        try:
            outcomes.append(structure(jax.make_jaxpr(fn)(*args).jaxpr))
        except Exception as exc:  # noqa: BLE001 - a decision to refuse: both must refuse alike
            outcomes.append((type(exc).__name__, re.sub(r"\S+\.py:\d+", "F:N", str(exc).split("\n")[0])))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] != before  # the decision matters here
    if shows is not None:
        assert sum(n for p, n in outcomes[0][1] if p == shows) > sum(n for p, n in before[1] if p == shows)


# ----------------------------------------------------------------------------- the command
DECORATED = '''\
import autolax


@autolax.jit
def halve_until(x):
    while x > 1.0:
        x = x / 2
    return x
'''


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(pathlib.Path(folder).rglob("*")) if p.is_file()}


def test_standalone_needs_an_output_path(tmp_path, capsys):
    src = tmp_path / "m.py"
    src.write_text(DECORATED)
    assert cli.main(["convert", "--standalone", str(src)]) == 2
    assert capsys.readouterr().err == (
        f"{src}: error: --standalone writes autolax's runtime (the package autolax_runtime) beside its output: "
        "give -o FILE.py or -o OUT_DIR\n")
    assert cli.main(["convert", "--standalone", "--check", str(src)]) == 1  # compares with SRC, writes nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_the_copy_goes_beside_a_file_or_into_a_folder(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "model.py").write_text(DECORATED)
    (src / "top.py").write_text(DECORATED)
    assert cli.main(["convert", "--standalone", str(src), "-o", str(tmp_path / "gen")]) == 0
    gen = _files(tmp_path / "gen")
    assert pathlib.Path("autolax_runtime/ops/loops.py") in gen and pathlib.Path("pkg/model.py") in gen
    assert not (tmp_path / "gen" / "pkg" / "autolax_runtime").exists()  # one copy, at the root of OUT
    assert cli.main(["convert", "--standalone", str(src / "top.py"), "-o", str(tmp_path / "one" / "top.py")]) == 0
    assert (tmp_path / "one" / "autolax_runtime" / "__init__.py").is_file()


def test_a_folder_of_that_name_autolax_did_not_write_is_never_touched(tmp_path, capsys):
    src = tmp_path / "m.py"
    src.write_text(DECORATED)
    gen = tmp_path / "gen"
    (gen / "autolax_runtime").mkdir(parents=True)
    (gen / "autolax_runtime" / "__init__.py").write_text("# my own package\n")
    before = _files(gen)
    assert cli.main(["convert", "--standalone", str(src), "-o", str(gen / "m.py")]) == 2
    err = capsys.readouterr().err
    assert err == (f"{gen / 'autolax_runtime'}: error: exists and was not written by autolax convert --standalone, "
                   "which writes its runtime there; autolax convert never replaces what it did not write (rename "
                   "it, or write the output elsewhere)\n")
    assert _files(gen) == before  # nothing written, not even m.py


def test_a_copy_an_earlier_run_wrote_is_brought_up_to_date_and_checked(tmp_path, capsys):
    src = tmp_path / "m.py"
    src.write_text(DECORATED)
    gen = tmp_path / "gen"
    assert cli.main(["convert", "--standalone", str(src), "-o", str(gen / "m.py")]) == 0
    assert cli.main(["convert", "--standalone", "--check", str(src), "-o", str(gen / "m.py")]) == 0
    loops = gen / "autolax_runtime" / "ops" / "loops.py"
    fresh = loops.read_bytes()
    loops.write_bytes(fresh.replace(b"def ", b"def  ", 1))  # stale (another autolax version, or edited)
    capsys.readouterr()
    assert cli.main(["convert", "--standalone", "--check", str(src), "-o", str(gen / "m.py")]) == 1
    assert capsys.readouterr().err == f"would change {loops}\n1 of {len(runtime_copy.files()) + 1} files would change\n"
    assert cli.main(["convert", "--standalone", str(src), "-o", str(gen / "m.py")]) == 0
    assert loops.read_bytes() == fresh


def test_converting_a_tree_that_holds_a_copy_leaves_the_copy_out(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(DECORATED)
    assert cli.main(["convert", "--standalone", str(src / "m.py"), "-o", str(src / "gen.py")]) == 0
    assert (src / "autolax_runtime").is_dir()
    assert cli.main(["convert", "--all", str(src), "-o", str(tmp_path / "out")]) == 0
    assert not (tmp_path / "out" / "autolax_runtime").exists()  # autolax's own code: not the user's to convert
    assert (tmp_path / "out" / "gen.py").read_text() == (src / "gen.py").read_text()


def test_a_file_still_using_autolax_is_refused():
    text = "import autolax\n\n\n@autolax.jit\ndef f(x):\n    return x\n\n\nprint(autolax.trace_check(f, 1.0))\n"
    with pytest.raises(autolax.ConversionError) as info:
        convert_source(text, "m.py", Options(standalone=True))
    assert info.value.one_line() == "m.py:9:7: error: 'autolax' is still used here, but --standalone output imports no autolax"


def test_default_output_converted_with_standalone_imports_the_copy(tmp_path):
    """A file `autolax convert` wrote before (its functions already call `ops`, so none is
    converted again) still gets the runtime's copy, not autolax, with --standalone."""
    src = tmp_path / "m.py"
    src.write_text(DECORATED)
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "default.py")]) == 0
    default = (tmp_path / "default.py").read_text()
    assert "from autolax.runtime import ops\n" in default
    assert cli.main(["convert", "--standalone", "--all", str(tmp_path / "default.py"),
                     "-o", str(tmp_path / "gen" / "m.py")]) == 0
    assert (tmp_path / "gen" / "m.py").read_text() == default.replace("from autolax.runtime import ops\n",
                                                                      "from autolax_runtime import ops\n")
    namespace = standalone_module(default, "m.py", all=True)
    assert float(jax.jit(namespace["halve_until"])(jnp.float32(10.0))) == 0.625
