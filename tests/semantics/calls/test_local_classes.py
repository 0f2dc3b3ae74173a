"""`autolax convert` converts the methods of a class defined inside a converted function, in
place: `--standalone` output has no converter to convert them when they are called, as
`autolax.jit` and the default output do. Each program runs converted (default and
`--standalone` output, `--all` and `--only`) under plain `jax.jit` and as Python on the same
inputs (tests/paths.py). Also: a loop that the passes copy keeps its class whole (every path)."""

import inspect
import itertools
import re
import textwrap

import jax
import jax.numpy as jnp
import pytest

from autolax.cli import Options, convert_source
from paths import _capture, agrees, check_all_paths, standalone_module

# Methods with a traced `if`, a `for` with `break`, a `@staticmethod` with a traced `while`,
# reading a variable of the function that a staged loop changes (`offset`).
CLIP = '''\
import jax.numpy as jnp


def clipped(xs, n, limit):
    offset = 0.0

    class Clip:
        def __init__(self, limit):
            self.limit = limit

        def apply(self, v):
            # above the limit: the limit
            if v > self.limit:
                return self.limit + offset
            return v + offset

        def first_above(self, values):
            found = -1
            for i in range(values.shape[0]):
                if values[i] > self.limit:
                    found = i
                    break
            return found

        @staticmethod
        def halvings(v):
            count = 0
            while v > 1.0:
                v = v / 2.0
                count += 1
            return count

    for i in range(n):
        offset = offset + xs[i] * 0.5
    clip = Clip(limit)
    total = 0.0
    for i in range(xs.shape[0]):
        total = total + clip.apply(xs[i])
    return total, clip.first_above(xs), Clip.halvings(total), offset
'''
CLIP_ARGS = [
    (jnp.array([1.0, 5.0, -2.0, 3.0]), 2, 2.5),
    (jnp.array([1.0, 5.0, -2.0, 3.0]), 0, 10.0),
    (jnp.array([0.5, 0.25, 4.0]), 3, 0.0),
]

# A class inside a method of a local class, and one inside a nested function.
NESTED = '''\
def nested(x, k):
    class Outer:
        def make(self):
            class Inner:
                def sign(self, v):
                    if v > 0:
                        return 1.0
                    return -1.0

            return Inner()

    def helper(v):
        class Steps:
            def count(self, v):
                steps = 0
                while v > 1:
                    v = v - k
                    steps = steps + 1
                return steps

        return Steps().count(v)

    return Outer().make().sign(x) * x, helper(x)
'''
NESTED_ARGS = [(3.0, 1.0), (-2.0, 0.5), (7.5, 2.0)]

# A local function shadowing a builtin: the method's `range` is the function's, not
# Python's (its `for` iterates a tuple).
SHADOWED = '''\
def shadowed(x):
    def range(k):
        return (1.0, 2.0, 3.0)[:k]

    class Sum:
        def total(self, v):
            out = 0.0
            for w in range(2):
                if v > w:
                    out = out + w
            return out

    return Sum().total(x)
'''
SHADOWED_ARGS = [(0.5,), (1.5,), (2.5,)]



def split_loop(x):
    """A loop that appends in one branch of `if i < 2` is split in two loops (each with its
    copy of the class)."""
    out = []
    y = 0.0
    for i in range(4):
        class Double:
            def twice(self, v):
                if v > 0:
                    return v * 2
                return v

        if i < 2:
            out.append(x * i)
        y = y + Double().twice(x)
    return out, y


SPLIT_LOOP_ARGS = [(1.0,), (-3.0,)]

PROGRAMS = [("clipped", CLIP, CLIP_ARGS), ("nested", NESTED, NESTED_ARGS), ("shadowed", SHADOWED, SHADOWED_ARGS),
            ("split_loop", textwrap.dedent(inspect.getsource(split_loop)), SPLIT_LOOP_ARGS)]
_counter = itertools.count()


def python_function(source, name):
    namespace = {}
    exec(compile(source, f"{name}_python.py", "exec"), namespace)  # noqa: S102 - the test's own program
    return namespace[name]


def converted_function(source, name, tmp_path, standalone, selection):
    options = {"all": True} if selection == "all" else {"only": (name,)}
    filename = f"{name}_{next(_counter)}.py"
    if standalone:
        return standalone_module(source, filename, **options)[name]
    path = tmp_path / filename
    path.write_text(convert_source(source, str(path), Options(**options)).text)
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the test's own converted code
    return namespace[name]


@pytest.mark.parametrize("selection", ["all", "only"])
@pytest.mark.parametrize("standalone", [False, True], ids=["default", "standalone"])
@pytest.mark.parametrize("name,source,inputs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_local_class_methods_run_converted(tmp_path, name, source, inputs, standalone, selection):
    original = python_function(source, name)
    fn = jax.jit(converted_function(source, name, tmp_path, standalone, selection))
    for args in inputs:
        expected = _capture(lambda: original(*args))
        assert expected.error is None
        got = _capture(lambda: fn(*args))
        why = agrees(expected, got, "cli standalone" if standalone else "cli default", allow_refusal=False)
        assert why is None, f"{name}{args}: {why}"


@pytest.mark.parametrize("args", SPLIT_LOOP_ARGS)
def test_a_copied_loop_copies_the_class_whole(tmp_path, args):
    """On every path (the class's body stands aside while the passes run; the copy of the
    loop gets it back too)."""
    check_all_paths(split_loop, *args, tmp_dir=tmp_path)


def test_methods_are_converted_in_place():
    """The converted methods stand in the class body; what conversion leaves alone (the
    method without a staged statement, the decorator, comments) is as written."""
    text = convert_source(CLIP, "m.py", Options(only=("clipped",))).text
    assert re.search(r"\n( +)@staticmethod\n\1def halvings\(v\):\n", text)
    assert re.search(r"\n( +)class Clip:\n\1    def __init__\(self, limit\):\n", text)
    assert re.search(r"\n +# above the limit: the limit\n", text)
    assert "ops.cond(v > self.limit" in text
    assert "ops.while_loop(" in text
    assert text.count("class Clip:") == 1
    assert convert_source(text, "m.py", Options(all=True)).text == text  # converted again: unchanged


def test_a_method_autolax_cannot_convert_is_left_with_a_warning():
    """As `autolax.jit` runs it as written, with a warning; the rest is converted."""
    source = textwrap.dedent('''\
        def f(x):
            class Shape:
                def area(self, v):
                    match v:
                        case complex(real=0):
                            return 0.0
                    return v

                def sign(self, v):
                    if v > 0:
                        return 1.0
                    return -1.0

            return Shape().sign(x)
    ''')
    result = convert_source(source, "m.py", Options(all=True))
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("m.py:5:")
    assert "warning: 'f.<locals>.Shape.area' is left as it is: " in result.warnings[0]
    assert "\n                case complex(real=0):\n" in result.text
    fn = standalone_module(source, "m_warned.py", all=True)["f"]
    assert float(jax.jit(fn)(2.0)) == 1.0 and float(jax.jit(fn)(-2.0)) == -1.0


def test_methods_autolax_would_not_convert_are_left_as_written():
    """Generators, async methods and methods marked by autolax's decorators: no warning."""
    source = textwrap.dedent('''\
        import autolax


        def f(x):
            class Odd:
                def items(self):
                    if x > 0:
                        yield x

                async def later(self):
                    if x > 0:
                        return x

                @autolax.do_not_convert
                def plain(self, v):
                    if v > 0:
                        return v
                    return -v

            return list(Odd().items())
    ''')
    result = convert_source(source, "m.py", Options(all=True))
    assert result.warnings == []
    def class_text(text):
        return textwrap.dedent(text[text.index("class Odd:"):text.index("return list")].split("\n", 1)[1])

    assert class_text(result.text) == class_text(source)
