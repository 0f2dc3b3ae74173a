"""The statement record behind the ``at='...'`` descriptor (``autolax.runtime.sites.Facts``): the text
is generated from the record and parsed back into it by one clause table."""

import itertools
import pathlib
import re

import pytest

from autolax.runtime import sites
from autolax.runtime.sites import Facts

TESTS = pathlib.Path(__file__).resolve().parent

VALUES = {
    "filename": (None, "model.py", "../pkg/m.py"),
    "outputs": (None, (), ("n",), ("retval", "y")),
    "return_value": (None, "retval"),
    "always_bound": ((), ("y",), ("a", "b")),
    "reads_appended": ({}, {"out": 0}, {"out": 0, "seen": None}),
    "inserts": ((), ("lst",)),
    "max_steps": (None, 4096),
    "read_unbound": ((), ("last",)),
    "item_test": (None, "k"),
    "test_after": (False, True),
    "index_target": (None, "i"),
    "after_jump": (None, ("break", 12)),
    "cells": ((), (("out_1", "out"),), (("a_1", "a"), ("a_1", "a"))),
}


def _records():
    """Every value of each field, with the other fields at their first value, and a few
    records with every field set."""
    for name, values in VALUES.items():
        for value in values[1:]:
            if name == "test_after" and value:
                yield Facts(7, item_test="x", test_after=True)
            else:
                yield Facts(7, **{name: value})
    for combo in itertools.islice(itertools.product(*(v[-1:] for v in VALUES.values())), 1):
        yield Facts(9, **dict(zip(VALUES, combo)))


@pytest.mark.parametrize("facts", list(_records()), ids=lambda f: f.text())
def test_every_record_round_trips(facts):
    assert Facts.parse(facts.text()) == facts


def test_the_text_of_a_plain_statement_is_its_line():
    assert Facts(6).text() == "6"
    assert Facts(6, filename="model.py").text() == "model.py:6"
    assert Facts(7, outputs=("n",)).text() == "7 -> n"
    # an `if` with operands whose branches produce nothing (None: not written, the operands)
    assert Facts(7, outputs=()).text() == "7 ->"


def test_clauses_are_written_in_the_table_s_order():
    facts = Facts(9, outputs=("retval", "y"), return_value="retval", always_bound=("y",),
                  reads_appended={"out": 0, "seen": None})
    assert facts.text() == "9 -> retval, y; return: retval; bound: y; reads: out[0], seen"


def _emitted_descriptors():
    """The descriptors in the emitted code the golden tests pin."""
    found = set()
    for name in ("test_golden.py", "test_sourcegen_golden.py"):
        found.update(re.findall(r"at='([^']*)'", (TESTS / name).read_text()))
    return sorted(found)


def test_the_golden_descriptors_round_trip():
    descriptors = _emitted_descriptors()
    assert len(descriptors) > 20  # the goldens hold many; the test is not vacuous
    for text in descriptors:
        assert Facts.parse(text).text() == text


def test_every_clause_is_in_the_grammar():
    doc = sites.__doc__
    for key, *_ in sites._CLAUSES:
        assert f"``{key}:" in doc, f"the clause {key!r} is missing from autolax/runtime/sites.py's grammar"


def test_a_site_reads_the_record():
    site = sites.site("for", "m.py:4; max_steps: 100; test: after k; cell: out_1=out", "/tmp/x.py",
                      ("out_1", "k"))
    assert (site.lineno, site.max_steps, site.item_test, site.test_after) == (4, 100, "k", True)
    assert site.names == ("out", "k") and site.cells == {"out_1": "out"}


# ----------------------------------------------------------------------------- line maps
@pytest.mark.parametrize("lines", [
    [],
    [1, 2, 3],  # the source's own lines: nothing to write
    [None, 1, 2, None, 5, 5, 5, 6, 7, 4, None, 4, 19, 20],
    [3, 3, 3, 1, 200, 199, None, None, 5],
    [10_000, 1, 10_001],
])
def test_a_line_map_round_trips(lines):
    runs = sites.lines_parse(sites.lines_text(lines))
    starts = [w for w, _, _ in runs]
    assert [sites.line_of(runs, starts, w) for w, s in enumerate(lines, 1) if s is not None] == \
        [s for s in lines if s is not None]


def test_a_line_map_is_short():
    # Lines copied as written, and the lines generated for one statement, are one run each:
    # two characters for most runs.
    assert sites.lines_text([1, 2, 3]) == ""
    assert sites.lines_text([None, None, 3, 4, 5, 5, 5, 5, None, 6, 7]) == "WDMC"  # two runs
    for edited in ("F", "W:M", "WDM C"):
        with pytest.raises(ValueError, match="not a line map"):
            sites.lines_parse(edited)


def _users_retval(x, y):
    retval = x
    if y > 0:
        retval = retval * 2
        if y > 5:
            return -retval
    return retval


def _operands_out(x, y):
    if y > 0:
        x = x * 2
    return x


def test_clauses_the_call_already_says_are_left_out(tmp_path):
    """An ``if`` whose outputs are its operands writes no ``->``; the return value named
    ``retval`` needs no ``return:`` -- but where ``retval`` is the user's own variable, the
    clause names autolax's (and the paths still agree with Python)."""
    import autolax
    from paths import check_all_paths

    line = _operands_out.__code__.co_firstlineno
    assert f"x = ops.cond(y > 0, lambda x: x * 2, lambda x: x, x, at='{line + 1}')" in autolax.to_source(_operands_out)
    source = autolax.to_source(_users_retval)
    found = re.findall(r"at='([^']*)'", source)
    assert found and all(text.endswith("; return: retval_1") for text in found), found
    assert sites.site("if", found[0], "f.py", ("do_return", "retval", "retval_1")).roles == {
        "retval_1": sites.RETURN_VALUE
    }
    assert sites.site("if", "7", "f.py", ("do_return", "retval")).roles == {"retval": sites.RETURN_VALUE}
    for y in (1, 7, -1):
        check_all_paths(_users_retval, 3.0, y, static_argnums=(1,), tmp_dir=tmp_path)
        check_all_paths(_operands_out, 3.0, y, tmp_dir=tmp_path)
