"""Conversion work grows linearly with a function's length (issue 16).

Timings belong to the benchmark; the deterministic proxy here is the number of Python
function calls conversion makes (counted with ``sys.setprofile``).
"""

import gc
import linecache
import sys

import autolax
from autolax import api
from autolax.transpile import pipeline


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
