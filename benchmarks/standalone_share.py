"""How many of the differential fuzzer's programs ``autolax convert --standalone`` converts,
and whether the converted ones give Python's results under plain ``jax.jit``.

Each program of the differential fuzzer (``tests.fuzzing``) is converted with
``Options(all=True, standalone=True)`` (with ``n`` declared static in a third of the
batches), written to a file, imported, and its ``f`` called under ``jax.jit`` on the fuzzer's
inputs (JAX arrays). Only the value is compared here (``python -m tests.fuzzing --paths
standalone`` also compares exceptions, printed output and globals).

    python -m benchmarks.standalone_share --n 1000

Prints: programs, valid (Python runs them), converted (``f`` converted, not left as it is),
refused (with the first words of each reason, counted), and mismatches (wrong value or an
error under ``jax.jit``), each mismatch with its seed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib.util
import io
import os
import random
import re
import sys
import tempfile

import types

from tests.fuzzing.generator import generate
from tests.fuzzing.outcome import compare_values
from tests.fuzzing.paths import python_source
from tests.fuzzing.runner import make_inputs


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reason(text: str) -> str:
    text = re.sub(r"'[^']*'", "'_'", text.split("error: ", 1)[-1].split("warning: ", 1)[-1])
    text = re.sub(r"fuzz_\d+\.py:\d+", "f.py:N", text)
    text = text.split(": ", 1)[1] if "(--all): " in text else text
    return text[:90]


# The fuzzer's argument types, declared (--declare): a, b float32 scalars, n an int32 scalar,
# xs / ys float32 / int32 vectors.
SIGNATURE = "f(a: Float[Array, ''], b: Float[Array, ''], n: Int[Array, ''], xs: Float[Array, 'k'], ys: Int[Array, 'k'])"


def _python(source, inputs_list):
    """Python's values on each input set (``jnp`` bound to NumPy), or None when Python
    raises on one of them (the program is not counted as valid)."""
    module = types.ModuleType("fuzz_python")
    exec(compile(python_source(source), "fuzz_python.py", "exec"), module.__dict__)
    values = []
    for inputs in inputs_list:
        args = [x.copy() if hasattr(x, "copy") else x for x in inputs]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                values.append(module.f(*args))
        except Exception:  # noqa: BLE001 - a program Python rejects is skipped, whatever it raises
            return None
    return values


def run(seeds, workdir, verbose=False, declare=False):
    import jax
    import jax.numpy as jnp

    from autolax.errors import ConversionError
    from autolax.sourcegen import Options, convert_source

    counts = collections.Counter()
    refusals = collections.Counter()
    mismatches = []
    for seed in seeds:
        rng = random.Random(seed * 7919 + 17)
        static_n = rng.random() < 0.3
        n_static = rng.randint(0, 5) if static_n else None
        fixed = {2: n_static} if static_n else None
        inputs_list = [make_inputs(rng, fixed=fixed) for _ in range(3)]
        source = generate(seed)
        if "def helper(" in source:  # --static applies to every function: helper's n is traced
            static_n = False
        counts["programs"] += 1
        expected = _python(source, inputs_list)
        if expected is None:
            continue
        counts["valid"] += 1
        options = Options(all=True, standalone=True, static=("n",) if static_n else (),
                          signature=(SIGNATURE,) if declare else ())
        try:
            result = convert_source(source, f"fuzz_{seed}.py", options)
        except ConversionError as exc:
            counts["refused"] += 1
            refusals[_reason(exc.one_line())] += 1
            continue
        if result.warnings:
            counts["refused"] += 1
            refusals[_reason(result.warnings[0])] += 1
            continue
        counts["converted"] += 1
        path = os.path.join(workdir, f"fuzz_sa_{seed}.py")
        with open(path, "w") as fh:
            fh.write(result.text)
        try:
            module = _load(path, f"fuzz_sa_{seed}")
            fn = jax.jit(module.f, static_argnums=(2,) if static_n else None)
            for inputs, want in zip(inputs_list, expected):
                args = [jnp.asarray(x) for x in inputs]
                if static_n:
                    args[2] = int(inputs[2])
                diff = compare_values(want, fn(*args))
                if diff:
                    raise AssertionError(diff)
        except Exception as exc:  # noqa: BLE001 - any failure of converted code is a mismatch
            counts["mismatch"] += 1
            mismatches.append((seed, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"))
            if verbose:
                print(f"--- seed {seed}\n{result.text}\n{exc}\n")
    return counts, refusals, mismatches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.standalone_share", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print each mismatching program's output")
    parser.add_argument("--declare", action="store_true", help="declare f's argument types (--signature)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        sys.path.insert(0, workdir)
        counts, refusals, mismatches = run(range(args.seed, args.seed + args.n), workdir, args.verbose,
                                            args.declare)
    valid = counts["valid"] or 1
    print(f"programs {counts['programs']}, valid {counts['valid']}, converted {counts['converted']} "
          f"({100 * counts['converted'] / valid:.1f}% of valid), refused {counts['refused']}, "
          f"mismatches {counts['mismatch']}")
    for reason, k in refusals.most_common():
        print(f"  refused {k:4d}: {reason}")
    for seed, message in mismatches:
        print(f"  mismatch seed {seed}: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
