"""Syntax of the newer Pythons in converted functions and in files the CLI converts: PEP 695
generic functions and ``type`` aliases (3.12), PEP 701 f-strings (3.12: nested quotes of the
same kind, fields over several lines, comments in fields), PEP 696 type-parameter defaults
(3.13). Each program is compared with Python on every path (tests/paths.py).

The sources are strings, written to files and imported: a 3.12 ``def f[T]`` is a syntax
error for the Python 3.11 parser that reads this file. CI runs these on the newest Python
(.ci/run); on 3.11 they are not collected (there is no such syntax to convert there).
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax import cli
from conftest import assert_close
from paths import check_all_paths

if sys.version_info < (3, 12):
    pytest.skip("Python 3.12 syntax: runs on 3.12+ (CI's newest Python)", allow_module_level=True)

PY312 = '''
import jax.numpy as jnp

type Vector = list[float]


def clip_steps[T](x: T, n: int) -> T:
    s = x
    for i in range(n):
        if s > 2.0:
            s = s - 1.0
        else:
            s = s * 2.0
    return s


def generic_reads_its_parameter[T: float](x: T):
    total = x
    while total < 10.0:
        total = total * 2.0
    return total, T.__name__


class Scaled[T]:
    def __init__(self, k: T):
        self.k = k

    def apply[U](self, x: U) -> U:
        y = x
        while y < 100.0:
            y = y * self.k
        return y


def method_of_a_generic_class(x):
    return Scaled(3.0).apply(x)


def label(x, y):
    kind = f"{"pos" if x > 0 else 'neg'}:{
        x + y  # the sum
    }"
    return kind


def nested_quotes(x):
    if x > 0:
        size = "big"
        print(f"{x:.1f} is {size + "!"} {"quoted: "}{x}")
    return x
'''

PY313 = '''
def with_default[T = float](x: T) -> T:
    while x < 8.0:
        x = x + x
    return x
'''


def _module(tmp_path, source, name):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def py312(tmp_path_factory):
    return _module(tmp_path_factory.mktemp("py312"), PY312, "py312_syntax")


@pytest.mark.parametrize("name, args", [
    ("clip_steps", (1.5, 5)),
    ("method_of_a_generic_class", (1.5,)),
])
def test_generic_functions_match_python_on_every_path(py312, tmp_path, name, args):
    fn = getattr(py312, name)
    check_all_paths(fn, *args, static_argnums=(1,) if len(args) > 1 else (), tmp_dir=tmp_path)


def test_a_generic_function_reads_its_type_parameter(py312):
    fn = py312.generic_reads_its_parameter
    expected = fn(1.5)
    got = autolax.convert(fn)(1.5)
    assert got == expected == (12.0, "T")
    value, type_name = autolax.convert(fn)(jnp.float32(1.5))
    assert type_name == "T"
    assert_close(expected[0], value)


def test_pep701_fstrings_match_python(py312, tmp_path):
    assert autolax.convert(py312.label)(2, 3) == py312.label(2, 3) == "pos:5"
    check_all_paths(py312.nested_quotes, 7.0, tmp_dir=tmp_path)


def test_no_warning_from_autolax_on_this_python(py312):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        autolax.convert(py312.clip_steps)
        autolax.to_source(py312.method_of_a_generic_class)


def test_cli_converts_a_file_with_312_syntax(tmp_path):
    src = tmp_path / "generic_src.py"
    src.write_text(textwrap.dedent(PY312))
    out = tmp_path / "generic_out.py"
    assert cli.main(["convert", "--all", str(src), "-o", str(out)]) == 0
    converted = _module(tmp_path, out.read_text(), "generic_out")
    original = _module(tmp_path, PY312, "generic_orig")
    import jax
    assert_close(original.clip_steps(1.5, 5), jax.jit(converted.clip_steps, static_argnums=1)(1.5, 5))
    assert converted.label(2, 3) == "pos:5"


@pytest.mark.skipif(sys.version_info < (3, 13), reason="PEP 696 type-parameter defaults are Python 3.13 syntax")
def test_type_parameter_defaults(tmp_path):
    module = _module(tmp_path, PY313, "py313_syntax")
    check_all_paths(module.with_default, 1.5, tmp_dir=tmp_path)
    assert np.asarray(autolax.jit(module.with_default)(1.5)) == module.with_default(1.5)
