"""The front end's output on a fixed corpus is what was recorded (see conversion_corpus.py).

Speed-ups of conversion must not change a byte of what it emits: the converted source of
every function of the examples and the benchmark programs, the code compiled from it (line
numbers and columns included, on the Python the snapshot was recorded on), ``autolax
convert``'s files, and the fuzzer's programs. On every Python the front end's own ast <-> gast
conversions must give exactly what gast's give.
"""

import functools
import json

import conversion_corpus


@functools.cache
def _snapshot():
    return conversion_corpus.snapshot_in_subprocess()


def _without_code(section: dict) -> dict:
    return {label: {k: v for k, v in entry.items() if k != "code"} for label, entry in section.items()}


def test_conversion_output_is_unchanged():
    expected = json.loads(conversion_corpus.SNAPSHOT.read_text())
    got = _snapshot()
    # Code digests hold bytecode, which changes with every Python minor: compared on the
    # Python the snapshot was recorded on (the sources are compared on every Python).
    same_python = expected.get("python") == got["python"]
    for section in ("functions", "files", "fuzz"):
        want, have = expected[section], got[section]
        if not same_python:
            want, have = _without_code(want), _without_code(have)
        assert have.keys() == want.keys(), section
        differ = [label for label in want if have[label] != want[label]]
        assert not differ, (
            f"{section}: the output changed for {differ}; if that is meant, record it again with "
            "`python tests/conversion_corpus.py --record` and review the diff"
        )


def test_fast_conversions_give_what_gast_gives():
    """The front end's rewrite of gast's ast <-> gast conversions (transpile/syntax.py) runs
    on each supported Python; it must give gast's trees, so the same source and code."""
    fast = _snapshot()
    slow = conversion_corpus.snapshot_in_subprocess(gast_conversions=True)
    for section in ("functions", "files", "fuzz"):
        differ = [label for label in slow[section] if fast[section].get(label) != slow[section][label]]
        assert not differ, f"{section}: the fast conversions differ from gast's for {differ}"
