"""What the front end produces for a fixed corpus, as one snapshot to compare against.

The corpus: every module-level function of ``examples/*.py``, ``benchmarks/programs.py``
and ``tests/golden_cases.py`` (its converted source and a digest of its compiled code),
those files converted by ``autolax convert`` (default and ``--standalone --all``), and the
differential fuzzer's programs for fixed seeds (digests of source and code). A change of
the front end that is meant to be invisible (a speed-up) must leave it byte for byte as it
was: ``tests/frontend/test_conversion_output.py`` compares.

    python tests/conversion_corpus.py --record   # rewrite tests/data/conversion_snapshot.json

Record again (and review the diff) only when the emitted code is meant to change.

Code digests (bytecode, positions, exception tables) change with every Python minor while
the converted source does not: the snapshot records the Python it was taken on, and another
Python compares sources only. On every Python, ``--print --gast`` takes the snapshot with
gast's own ast <-> gast conversions instead of the front end's faster rewrite of them, and
the two must agree byte for byte (code digests included).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "data" / "conversion_snapshot.json"
FUZZ_SEEDS = range(120)
FUZZ_BIG_SEEDS = range(40)


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def files():
    return sorted((ROOT / "examples").glob("*.py")) + [ROOT / "benchmarks" / "programs.py", ROOT / "tests" / "golden_cases.py"]


def functions():
    """(label, function) for every module-level function of the corpus files."""
    out = []
    for path in files():
        module = _load(path, f"conversion_corpus_{path.parent.name}_{path.stem}")
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and fn.__module__ == module.__name__:
                out.append((f"{path.parent.name}/{path.stem}.{name}", fn))
    return out


def code_digest(code: types.CodeType) -> str:
    """Everything of a code object but its file name (nested code objects included)."""

    def describe(c):
        consts = tuple(describe(k) if isinstance(k, types.CodeType) else (type(k).__name__, repr(k)) for k in c.co_consts)
        return (
            c.co_name, c.co_qualname, c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_flags,
            c.co_stacksize, c.co_code, c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars, consts,
            c.co_firstlineno, tuple(c.co_positions()), c.co_exceptiontable,
        )

    return hashlib.sha256(repr(describe(code)).encode()).hexdigest()[:16]


def _convert(fn):
    """(converted source, code digest) of ``fn``, or the error autolax raised."""
    import autolax

    try:
        converted = autolax.convert(fn)
        return {"source": autolax.to_source(fn), "code": code_digest(converted.__code__)}
    except autolax.AutolaxError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _convert_file(path: pathlib.Path, options):
    from autolax.runtime.errors import ConversionError
    from autolax.cli import convert_source

    try:
        result = convert_source(path.read_text(), path.name, options)
        return {"text": _digest(result.text), "warnings": result.warnings}
    except ConversionError as exc:
        return {"error": str(exc)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def python_minor() -> str:
    return "%d.%d" % sys.version_info[:2]


def snapshot(*, gast_conversions: bool = False) -> dict:
    import warnings

    from autolax.cli import Options
    from autolax.frontend.transpile import conversions

    if gast_conversions:
        conversions.FAST = False
    out = {"python": python_minor(), "functions": {}, "files": {}, "fuzz": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fn in functions():
            out["functions"][label] = _convert(fn)
        for path in files():
            label = f"{path.parent.name}/{path.name}"
            out["files"][label + " default"] = _convert_file(path, Options(all=True))
            out["files"][label + " standalone"] = _convert_file(path, Options(standalone=True, all=True))
        sys.path.insert(0, str(ROOT))
        from tests.fuzzing import generator
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="autolax-corpus-"))
        for big, seeds in ((False, FUZZ_SEEDS), (True, FUZZ_BIG_SEEDS)):
            for seed in seeds:
                path = workdir / f"fuzz_{'big_' if big else ''}{seed}.py"
                path.write_text(generator.generate(seed, big=big))
                fn = _load(path, f"conversion_corpus_{path.stem}").f
                got = _convert(fn)
                if "source" in got:
                    got["source"] = _digest(got["source"])
                out["fuzz"][f"{'big ' if big else ''}{seed}"] = got
    return out


def snapshot_in_subprocess(*, gast_conversions: bool = False) -> dict:
    """``snapshot()`` taken in a new Python with a fixed hash seed: the fuzzer's programs
    depend on the iteration order of sets of strings."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = [sys.executable, __file__, "--print"] + (["--gast"] if gast_conversions else [])
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"conversion_corpus.py --print failed:\n{done.stderr}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--print"] and sys.argv[2:] in ([], ["--gast"]):
        print(json.dumps(snapshot(gast_conversions=sys.argv[2:] == ["--gast"]), indent=1, sort_keys=True))
    elif sys.argv[1:] == ["--record"]:
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(snapshot_in_subprocess(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT.relative_to(ROOT)}")
    else:
        sys.exit("usage: python tests/conversion_corpus.py --record")
