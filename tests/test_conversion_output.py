"""The front end's output on a fixed corpus is what was recorded (see conversion_corpus.py).

Speed-ups of conversion must not change a byte of what it emits: the converted source of
every function of the examples and the benchmark programs, the code compiled from it (line
numbers and columns included), ``autolax convert``'s files, and the fuzzer's programs.
"""

import json

import conversion_corpus


def test_conversion_output_is_unchanged():
    expected = json.loads(conversion_corpus.SNAPSHOT.read_text())
    got = conversion_corpus.snapshot_in_subprocess()
    for section in ("functions", "files", "fuzz"):
        assert got[section].keys() == expected[section].keys(), section
        differ = [label for label in expected[section] if got[section][label] != expected[section][label]]
        assert not differ, (
            f"{section}: the output changed for {differ}; if that is meant, record it again with "
            "`python tests/conversion_corpus.py --record` and review the diff"
        )
    for label, want in expected["functions"].items():  # a readable diff for the first difference
        assert got["functions"][label] == want, label
