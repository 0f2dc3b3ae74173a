"""Conversion work grows linearly with a function's length (issue 16).

Timings belong to the benchmark; the deterministic proxy here is the number of Python
function calls conversion makes (counted with ``sys.setprofile``).
"""

import gc
import linecache
import sys

import autolax
import numpy as np
from autolax import api
from autolax.frontend import pipeline


def long_function(n: int) -> str:
    lines = ["def long_function(x, xs):", "    total = 0.0"]
    for i in range(n):
        if i % 3 == 0:
            lines += [f"    if x > {i}:", f"        total = total + x * {i}", "    else:", f"        total = total - {i}"]
        elif i % 3 == 1:
            lines += ["    for v in xs:", f"        total = total + v * {i}"]
        else:
            lines += [f"    y{i} = total * 2", f"    total = total + y{i}"]
    return "\n".join(lines + ["    return total"]) + "\n"


def calls_to_convert(n: int) -> int:
    source, filename = long_function(n), f"<long-function-{n}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the test's own function
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event == "call"

    sys.setprofile(profile)
    try:
        pipeline.convert_function(namespace["long_function"])
    finally:
        sys.setprofile(None)
    return count


def test_conversion_calls_grow_linearly_with_length():
    counts = [calls_to_convert(n) for n in (50, 100, 200)]
    # Measured: 96,931 / 192,424 / 383,181 calls -- a ratio of 1.99 per doubling.
    assert counts[1] / counts[0] < 2.2 and counts[2] / counts[1] < 2.2, counts


def test_conversion_runs_with_the_cyclic_collector_paused_and_restores_it():
    seen = []

    def spy(fn):
        seen.append(gc.isenabled())
        return real(fn)

    def halve(x):
        while x > 1.0:
            x = x / 2
        return x

    real = pipeline.convert_function
    pipeline.convert_function = spy
    was = gc.isenabled()
    try:
        gc.enable()
        api._CODE_CACHE.clear()
        autolax.convert(halve)
        assert seen == [False] and gc.isenabled()
        gc.disable()  # the user's choice is kept
        api._CODE_CACHE.clear()
        autolax.convert(lambda x: halve(x))
        assert seen == [False, False] and not gc.isenabled()
    finally:
        pipeline.convert_function = real
        gc.enable() if was else gc.disable()


MODULE_WITH_IMPORTS = '''\
import math
import numpy as np
import jax.numpy as jnp
from functools import (
    partial,
    reduce,
)
import collections, itertools


def uses_an_imported_module(xs):
    total = 0.0
    for x in xs:
        total = total + jnp.sum(x) * math.pi
    return total


def uses_no_import(x):
    while x > 1.0:
        x = x / 2
    return x
'''


def test_source_is_found_from_its_statement_with_only_the_imports_it_uses(tmp_path, monkeypatch):
    """The quick way to a function's source parses only its top-level statement and the
    imports of names it uses (a method call on an imported module compiles differently);
    the whole file is parsed only when that does not settle it."""
    from autolax.frontend.transpile import source, staleness

    path = tmp_path / "with_imports.py"
    path.write_text(MODULE_WITH_IMPORTS)
    namespace = {"__name__": "with_imports"}
    exec(compile(MODULE_WITH_IMPORTS, str(path), "exec"), namespace)  # noqa: S102 - the test's own module
    linecache.checkcache(str(path))
    lines = linecache.getlines(str(path))
    seen = []
    real = staleness.compiled_from

    def spy(code, statement, imports, filename):
        seen.append(sorted(alias.asname or alias.name for s in imports for alias in s.names))
        return real(code, statement, imports, filename)

    monkeypatch.setattr(staleness, "compiled_from", spy)
    whole_file, parse_file = [], source._parsed_file
    monkeypatch.setattr(source, "_parsed_file", lambda *a: whole_file.append(a) or parse_file(*a))
    for name in ("uses_an_imported_module", "uses_no_import"):
        assert source._def_in_statement(namespace[name].__code__, lines).name == name
    # The names each statement binds: `import jax.numpy as jnp` binds jnp (the filter is by word).
    assert seen == [["jnp", "math"], []]
    assert whole_file == []
    fn = namespace["uses_an_imported_module"]
    api._CODE_CACHE.clear()
    assert float(autolax.jit(fn)(np.arange(4.0))) == float(fn(np.arange(4.0)))
