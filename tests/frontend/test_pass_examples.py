"""Every pass's before/after examples, executed: a pass's documentation cannot drift from
what it emits (Pythran's ``test_doc.py``, LibCST's ``assertCodemod``).

Each pass module in ``pipeline.PASSES`` carries ``EXAMPLES``: ``(before, after)`` or
``(before, after, first)`` -- the source of a small function, what the pass makes of it, and
the names of the passes that run before it in the example (those whose work it reads:
``anno.CAUGHT_BY``, lowered jumps). The test runs those passes and then the pass on
``before``, with a ``Context`` made as ``pipeline.convert_node`` makes it, and compares the
result printed as ``Converted.source`` prints it with ``after``. What a pass attaches to a
loop rather than writes in the tree (``anno.EXTRA_TEST``, ``ITEM_TEST``, ``LOOP_OPTIONS``) is
printed as a comment on the loop's line. A pass that refuses the function: ``after`` is
autolax's error, ``"<class>: <message>"``. Each example must also have what the pass
``NEEDS``, or the pipeline would skip the pass on it.

Each pass also declares when it runs: ``NEEDS`` (the features of ``pipeline.features``
that make it run; ``None``: always) and ``AFTER`` (the passes whose annotations it reads),
which ``PASSES``' order must satisfy.
"""

from __future__ import annotations

import ast
import logging
import math
import textwrap
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax.frontend import pipeline
from autolax.frontend.analysis import activity
from autolax.runtime.errors import AutolaxError
from autolax.frontend.transpile import anno, syntax
from autolax.frontend.transpile.context import Context
from autolax.frontend.transpile.naming import Namer

FILENAME = "example.py"
# What free names of the examples resolve to (``calls`` and ``lists`` ask, for instance), and
# the closure: the examples' ``def``s are methods' (``__class__``, for ``super()``).
GLOBALS = {"jax": jax, "jnp": jnp, "np": np, "autolax": autolax, "logging": logging, "math": math}
CLOSURE = {"__class__": object}


def _name(rewrite: types.ModuleType) -> str:
    return rewrite.__name__.rsplit(".", 1)[-1]


BY_NAME = {_name(rewrite): rewrite for rewrite in pipeline.PASSES}


def run_example(rewrite: types.ModuleType, before: str, first=(), *, reached: list | None = None) -> str:
    """``before`` (a function's source) through the passes named in ``first`` and then
    ``rewrite``, printed; or autolax's error, as ``"<class>: <message>"``. ``reached``: gets
    whether the pipeline would run ``rewrite`` on what the passes in ``first`` leave (its
    ``NEEDS``)."""
    source = textwrap.dedent(before)
    node = syntax.parse(source).body[0]
    namer = Namer(node)
    namer.used.add("ops")
    ctx = Context(namer=namer, filename=FILENAME, source_lines=source.splitlines(True), ops="ops",
                  globals=dict(GLOBALS), closure=dict(CLOSURE))
    try:
        with activity.caching(walrus="NamedExpr" in pipeline.features(node)):
            for step in [BY_NAME[n] for n in first]:
                node = step.transform(node, ctx)
            if reached is not None:
                present = pipeline.features(node)
                if any(BY_NAME[n] in pipeline._LOWERS_JUMPS for n in first):
                    present.add("lowered")
                reached.append(rewrite.NEEDS is None or bool(rewrite.NEEDS & present))
            node = rewrite.transform(node, ctx)
    except AutolaxError as e:  # the example shows the error
        return f"{type(e).__name__}: {e}\n"
    text = pipeline.format_source(ast.unparse(syntax.to_ast(node, fix_locations=True)))
    return _with_loop_annotations(text, node)


def _with_loop_annotations(text: str, fn_node) -> str:
    """``text`` with what a pass attached to each loop (``anno``: an extra test, an item
    test, options), which the printed source does not show, as a comment on the loop's line:
    ``for x in xs:  # test: not break_``."""
    loops = [n for n in _in_source_order(fn_node) if isinstance(n, (syntax.For, syntax.While))]
    lines = text.split("\n")
    headers = [i for i, line in enumerate(lines) if line.lstrip().startswith(("for ", "while "))]
    assert len(headers) == len(loops), text
    for i, loop in zip(headers, loops):
        notes = []
        extra = anno.get(loop, anno.EXTRA_TEST)
        if extra is not None:
            kind = "test after" if anno.get(loop, anno.TEST_AFTER) else "item test" if anno.has(loop, anno.ITEM_TEST) else "test"
            notes.append(f"{kind}: {syntax.unparse(extra).strip()}")
        if anno.has(loop, anno.ITEM_TEST):
            notes.append(f"stopped: {anno.get(loop, anno.ITEM_TEST)}")
        if anno.get(loop, anno.LOOP_OPTIONS):
            notes.append("options: " + ", ".join(f"{k}={v!r}" for k, v in anno.get(loop, anno.LOOP_OPTIONS).items()))
        if notes:
            lines[i] += "  # " + "; ".join(notes)
    return "\n".join(lines)


def _in_source_order(node):
    yield node
    for child in syntax.iter_child_nodes(node):
        yield from _in_source_order(child)


def _examples():
    for rewrite in pipeline.PASSES:
        for i, example in enumerate(getattr(rewrite, "EXAMPLES", ())):
            before, after, *first = example
            yield pytest.param(rewrite, before, after, tuple(first[0]) if first else (), id=f"{_name(rewrite)}-{i}")


@pytest.mark.parametrize("rewrite, before, after, first", list(_examples()))
def test_example(rewrite, before, after, first):
    reached = []
    assert run_example(rewrite, before, first, reached=reached) == textwrap.dedent(after)
    assert reached == [True], f"the pipeline skips {_name(rewrite)} on this function: it has none of its NEEDS"


@pytest.mark.parametrize("rewrite", pipeline.PASSES, ids=_name)
def test_every_pass_has_examples(rewrite):
    examples = getattr(rewrite, "EXAMPLES", ())
    assert 1 <= len(examples), f"{rewrite.__name__}: add EXAMPLES (before, after) of its main rewrites"
    for example in examples:
        assert len(example) in (2, 3), example
        first = example[2] if len(example) == 3 else ()
        for name in first:
            assert name in BY_NAME, f"{rewrite.__name__}: an example runs {name!r} first, which is not a pass"
        order = [pipeline.PASSES.index(BY_NAME[name]) for name in first] + [pipeline.PASSES.index(rewrite)]
        assert order == sorted(set(order)), f"{rewrite.__name__}: an example runs {first} first, out of the pipeline's order"


@pytest.mark.parametrize("rewrite", pipeline.PASSES, ids=_name)
def test_each_pass_declares_when_it_runs(rewrite):
    assert hasattr(rewrite, "NEEDS"), f"{rewrite.__name__}: declare NEEDS (None: it always runs)"
    needs = rewrite.NEEDS
    assert needs is None or (isinstance(needs, frozenset) and needs), needs


def test_the_order_of_the_passes_satisfies_every_after():
    bad = []
    for i, rewrite in enumerate(pipeline.PASSES):
        for name in getattr(rewrite, "AFTER", ()):
            if name not in BY_NAME:
                bad.append(f"{rewrite.__name__}: AFTER names {name!r}, which is not a pass")
            elif pipeline.PASSES.index(BY_NAME[name]) >= i:
                bad.append(f"{rewrite.__name__} runs before {name}, which it reads (AFTER)")
    assert not bad, "\n".join(bad)
