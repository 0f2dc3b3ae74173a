"""Golden tests of the source `autolax convert` writes: one construct per case, before/after.

The cases convert `@autolax.jit def f...` in a file; the expected text is the converted
function (its decorator becomes `@jax.jit`). DEFAULT is the default output (calls to
autolax's runtime ops); `--standalone` writes the same functions, importing the runtime from
its copy (`autolax_runtime`). What the converted code computes is tested in test_cli.py
(converted module vs plain Python).
"""

import pathlib
import re
import textwrap

import pytest

from autolax.runtime.errors import ConversionError
from autolax.cli import Options, convert_source

HEADER = "import jax.numpy as jnp\n\nimport autolax\n\n\n@autolax.jit\n"

DEFAULT = {
    "if_elif_else": (
        """\
        def f(x):
            if x > 0:
                y = x
            elif x < -1:
                y = -x
            else:
                y = 0.0
            return y
        """,
        """\
        def f(x):
            y = ops.cases([(x > 0, lambda: x), (lambda: x < -1, lambda: -x)], lambda: 0.0, at='golden.py:8 -> y; elif: 10')
            return y
        """,
    ),
    "while": (
        """\
        def f(n):
            steps = 0
            while n > 1:
                n = n // 2
                steps += 1
            return steps
        """,
        """\
        def f(n):
            steps = 0

            def loop_body(n, steps):
                n = n // 2
                steps += 1
                return (n, steps)

            n, steps = ops.while_loop(lambda n, steps: n > 1, loop_body, (n, steps), at='golden.py:9')
            return steps
        """,
    ),
    "for_range": (
        """\
        def f(x, n):
            for i in range(n):
                x = x * 2 + i
            return x
        """,
        """\
        def f(x, n):
            def loop_body(i, x):
                x = x * 2 + i
                return x

            x = ops.for_range(0, n, 1, loop_body, x, at='golden.py:8')
            return x
        """,
    ),
    "for_array": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_body(x, total):
                total += x
                return total

            total = ops.for_iter(xs, loop_body, total, at='golden.py:9')
            return total
        """,
    ),
    "enumerate_zip": (
        """\
        def f(xs, ys):
            acc = 0.0
            for i, (x, y) in enumerate(zip(xs, ys)):
                acc += i * x * y
            return acc
        """,
        """\
        def f(xs, ys):
            acc = 0.0

            def loop_body(item, acc):
                i, (x, y) = item
                acc += i * x * y
                return acc

            acc = ops.for_iter(ops.enumerate(ops.zip(xs, ys)), loop_body, acc, at='golden.py:9')
            return acc
        """,
    ),
    "break": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    break
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_test(x, total):
                return ops.not_(x < 0)

            def loop_body(x, total):
                total += x
                return total

            total, x, exit_ = ops.for_iter(xs, loop_body, total, loop_test, at='golden.py:9; test: x')
            return total
        """,
    ),
    "continue": (
        """\
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    continue
                total += x
            return total
        """,
        """\
        def f(xs):
            total = 0.0

            def loop_body(x, total):
                def if_true(total):
                    total += x
                    return total

                total = ops.cond(ops.not_(x < 0), if_true, lambda total: total, total, at='golden.py:10')
                return total

            total = ops.for_iter(xs, loop_body, total, at='golden.py:9')
            return total
        """,
    ),
    "early_return": (
        """\
        def f(xs, t):
            for x in xs:
                if x > t:
                    return 1
            return 0
        """,
        """\
        def f(xs, t):
            def loop_test(x):
                return ops.not_(x > t)

            def loop_body(x):
                return ()

            x, exit_ = ops.for_iter(xs, loop_body, (), loop_test, at='golden.py:8; test: x')
            return ops.cond(exit_, lambda: 1, lambda: 0, at='golden.py:9 -> retval')
        """,
    ),
    "and_or_not": (
        """\
        def f(x, y):
            if x > 0 and not y > 0 or x == y:
                x = x + 1
            return x
        """,
        """\
        def f(x, y):
            x = ops.cond(ops.or_(ops.and_(x > 0, lambda: ops.not_(y > 0)), lambda: x == y, tested=True), lambda x: x + 1,
                         lambda x: x, x, at='golden.py:8')
            return x
        """,
    ),
    "ternary": (
        """\
        def f(x):
            return x if x > 0 else -x
        """,
        """\
        @ops.function(checks=True)
        def f(x):
            return ops.if_else(x > 0, lambda: x, lambda: -x)
        """,
    ),
    "setitem": (
        """\
        def f(x, i):
            x[i] = 0.0
            x[i + 1] += 2.0
            return x
        """,
        """\
        @ops.function
        def f(x, i):
            x = ops.at(x)[i].set(0.0)
            x = ops.at(x)[i + 1].add(2.0)
            return ops.hand_back(x, x=x)
        """,
    ),
    "append": (
        """\
        def f(x):
            out = []
            for i in range(3):
                out.append(x * i)
            return jnp.stack(out)
        """,
        """\
        def f(x):
            out = []

            def loop_body(i, out):
                out = ops.append(out, x * i)
                return out

            out = ops.for_range(0, 3, 1, loop_body, out, at='golden.py:9')
            return ops.stack(jnp.stack, out)
        """,
    ),
}

def convert_function(before, **options):
    text = convert_source(HEADER + textwrap.dedent(before), "golden.py", Options(**options)).text
    header, function = text.split("@jax.jit\n", 1)
    # (the file's line map, its last line: ``test_whole_file_default``)
    function, line_map = function.rsplit("\n\n\nops.source_lines('golden.py', '", 1)
    assert re.fullmatch(r"\d+:[A-Za-z0-9+/]*'\)\n", line_map), line_map
    return function + "\n"


@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_default_output(name):
    before, after = DEFAULT[name]
    assert convert_function(before) == textwrap.dedent(after)


@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_standalone_output_is_the_default_output(name):
    """One lowering: --standalone writes each function as the default output does."""
    before, after = DEFAULT[name]
    assert convert_function(before, standalone=True) == textwrap.dedent(after)


# A whole file: decorators, imports, comments, methods; other code is kept as it is.
FILE_BEFORE = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp
from autolax import convert, jit


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        if x > 0:
            x = x * self.scale  # scaled
        return x


@convert
def clamp(x, lo=0.0):
    """Clamp below."""
    if x < lo:  # too small
        x = lo
    return x


@jit(strict=True, static_argnames=("n",))
def poly(x, n: int):
    total = jnp.zeros_like(x)
    for i in range(n):
        total = total + x ** i
    return total


@partial(jax.jit, static_argnames="k")
@convert(strict=True)
def pick(x, k):
    if k == "a":
        return x + 1
    return x - 1


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''

FILE_DEFAULT = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp
from autolax.runtime import ops


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jax.jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        # scaled
        x = ops.cond(x > 0, lambda x: x * self.scale, lambda x: x, x, at='model.py:16')
        return x


def clamp(x, lo=0.0):
    """Clamp below."""
    # too small
    x = ops.cond(x < lo, lambda: lo, lambda: x, at='model.py:24 -> x')
    return x


@jax.jit(static_argnames=('n',))
@ops.options(strict=True)
@ops.function
def poly(x, n: int):
    total = jnp.zeros_like(x)

    def loop_body(i, total):
        total = total + x ** i
        return total

    total = ops.for_range(0, n, 1, loop_body, total, at='model.py:32')
    return total


@partial(jax.jit, static_argnames="k")
@ops.options(strict=True)
def pick(x, k):
    return ops.cond(k == 'a', lambda: x + 1, lambda: x - 1, at='model.py:40 -> retval')


ops.source_lines('model.py', '48:gCDACICIDACMDEDIDGFIEkBD')


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''

FILE_STANDALONE = '''\
"""Doc."""
from functools import partial

import jax
import jax.numpy as jnp
from autolax_runtime import ops


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jax.jit(static_argnums=0)
    def apply(self, x):
        # scale positives only
        # scaled
        x = ops.cond(x > 0, lambda x: x * self.scale, lambda x: x, x, at='model.py:16')
        return x


def clamp(x, lo=0.0):
    """Clamp below."""
    # too small
    x = ops.cond(x < lo, lambda: lo, lambda: x, at='model.py:24 -> x')
    return x


@jax.jit(static_argnames=('n',))
@ops.options(strict=True)
@ops.function
def poly(x, n: int):
    total = jnp.zeros_like(x)

    def loop_body(i, total):
        total = total + x ** i
        return total

    total = ops.for_range(0, n, 1, loop_body, total, at='model.py:32')
    return total


@partial(jax.jit, static_argnames="k")
@ops.options(strict=True)
def pick(x, k):
    return ops.cond(k == 'a', lambda: x + 1, lambda: x - 1, at='model.py:40 -> retval')


ops.source_lines('model.py', '48:gCDACICIDACMDEDIDGFIEkBD')


def untouched(x):
    if x > 0:  # stays Python
        return x
    return -x
'''


def test_whole_file_default():
    assert convert_source(FILE_BEFORE, "model.py", Options()).text == FILE_DEFAULT


def test_whole_file_standalone():
    assert convert_source(FILE_BEFORE, "model.py", Options(standalone=True)).text == FILE_STANDALONE


def test_converting_output_again_changes_nothing():
    for text, options in ((FILE_DEFAULT, Options()), (FILE_STANDALONE, Options(standalone=True))):
        assert convert_source(text, "model.py", options).text == text


def test_standalone_rejects_files_that_still_use_autolax():
    text = "import autolax\n\n\n@autolax.jit\ndef f(x):\n    return x\n\n\nprint(autolax.trace_check(f, 1.0))\n"
    with pytest.raises(ConversionError) as info:
        convert_source(text, "golden.py", Options(standalone=True))
    assert info.value.one_line() == (
        "golden.py:9:7: error: 'autolax' is still used here, but --standalone output imports no autolax"
    )
    assert info.value.fix == "remove this use, or drop --standalone."


@pytest.mark.parametrize("mode", ["default", "standalone"])
def test_every_golden_output_converts_to_itself(mode):
    for name, (before, _) in sorted(DEFAULT.items()):
        options = Options(standalone=mode == "standalone")
        once = convert_source(HEADER + textwrap.dedent(before), "golden.py", options).text
        options.all = True  # the decorator is gone: select every function
        assert convert_source(once, "golden.py", options).text == once, name


def test_the_line_map_gives_each_written_line_its_source_line():
    # ``ops.source_lines('model.py', ...)``, after the last converted function: a line that
    # stages a statement stands for the line its descriptor names, a line copied as written
    # (one of a kind in both files) for the source's line that reads the same.
    from autolax.runtime import sites

    written = FILE_DEFAULT.splitlines()
    source = FILE_BEFORE.splitlines()
    [line_map] = [ln for ln in written if ln.startswith("ops.source_lines(")]
    assert written.index(line_map) == written.index("def untouched(x):") - 3
    own, runs = line_map.split("'")[3].split(":")
    assert int(own) == written.index(line_map) + 1
    runs = sites.lines_parse(runs)
    starts = [w for w, _, _ in runs]
    checked = 0
    for w, text in enumerate(written[: written.index(line_map)], 1):
        found = re.search(r"at=[']model\.py:(\d+)", text)
        if found:
            assert sites.line_of(runs, starts, w) == int(found.group(1)), (w, text)
            checked += 1
        elif text.strip() and [ln.strip() for ln in source].count(text.strip()) == 1 == \
                [ln.strip() for ln in written].count(text.strip()):
            assert sites.line_of(runs, starts, w) == [ln.strip() for ln in source].index(text.strip()) + 1, (w, text)
            checked += 1
    assert checked >= 20


def test_to_source_shows_what_the_cli_writes():
    """One printer (``autolax.frontend.emit``): ``autolax.to_source`` (and so ``%%autolax
    --show``) shows a function as ``autolax convert`` writes it -- its comments, blank lines
    and statements left as written -- less the file's imports, the user's decorators and
    the file name the CLI's descriptors carry (its output runs from another file)."""
    import importlib
    import re
    import sys

    import autolax

    corpus = pathlib.Path(__file__).resolve().parents[1] / "corpus"
    sys.path.insert(0, str(corpus.parent))
    try:
        module = importlib.import_module("corpus.dynamic")
    finally:
        sys.path.remove(str(corpus.parent))
    written = convert_source((corpus / "dynamic.py").read_text(), "corpus/dynamic.py", Options(all=True)).text
    compared = 0
    for name in ("knapsack_table", "edit_distance_table", "levenshtein_swap", "levenshtein_grid"):
        shown = autolax.to_source(getattr(module, name))
        lines = written.splitlines(keepends=True)
        first = header = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
        while lines[first - 1].startswith("@ops."):
            first -= 1
        end = next((i for i in range(header + 1, len(lines)) if lines[i].strip() and lines[i][0] not in " @"),
                   len(lines))
        text = "".join(lines[first:end]).rstrip("\n") + "\n"
        assert re.sub(r"\bat=(')corpus/dynamic\.py:", r"at=\1", text) == shown, name
        compared += "#" in shown or shown.count("\n\n") > 2
    assert compared  # the functions hold comments or the author's blank lines, kept by both
