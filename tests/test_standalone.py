"""`autolax convert --standalone` (issue 14): the output, under plain `jax.jit`, gives what
Python gives on the same inputs; it differentiates like the decorator; what it refuses it
refuses in the runtime's words (or says to drop --standalone); its decisions come from
`autolax.plan`. The emitted text of each form is in test_sourcegen_golden.py."""

import importlib.util
import sys
import textwrap
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from autolax import errors, pipeline, plan
from autolax.errors import ConversionError
from autolax.sourcegen import Options, convert_source
from autolax.sourcegen.standalone import helpers
from autolax.sourcegen.standalone.declarations import param_vals, parse_signature
from autolax.transpile import syntax
from conftest import assert_close
from paths import standalone_module

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

PROGRAMS = '''\
import jax.numpy as jnp


def rnn(xs, h):
    states = []
    for x in xs:
        h = jnp.tanh(0.5 * x + h)
        states.append(h)
    return jnp.stack(states), h


def squares(x):
    out = []
    for i in range(4):
        out.append(x * i)
    total = 0.0
    for y in out:
        total = total + y
    return jnp.stack(out), len(out), out[-1], total


def appended_before_change(xs):
    total = 0.0
    out = []
    for x in xs:
        out.append(total * 2)
        total = total + x
    return total, jnp.stack(out)


def sum_below(xs, t):
    total = 0.0
    for x in xs:
        if x > t:
            break
        total += x * x
    return total


def count_below(xs, t):
    count = 0
    for x in xs:
        if x > t:
            break
        count += 1
    return count


def printing_sum_below(xs, t):
    total = 0.0
    for x in xs:
        if x > t:
            break
        print(x)
        total += x
    return total


def first_above(xs: "Float[Array, 'n']", t: float):
    for x in xs:
        if x > t:
            return x * 2
    return -1.0


def sign(x: float):
    if x > 0:
        y = 1.0
    else:
        y = -1.0
    return y


def countdown(x, n):
    for i in range(n, 0, -2):
        x = x + i
    return x


def half_sums(xs):
    t = 0
    for x in xs:
        t += x * 0.5
    return t


def positive(v):
    return v > 1


def checked(x, y):
    if x > 0 and positive(y):
        x = x + 1
    return x


def pick(a, b):
    return (a - 1) or b
'''

INPUTS = {
    "rnn": [(np.array([0.5, -1.0, 2.0], np.float32), np.float32(0.1))],
    "squares": [(np.float32(1.5),), (np.float32(-2.0),)],
    "appended_before_change": [(np.array([1.0, 2.0, 3.0], np.float32),)],
    "sum_below": [(np.array([0.5, 1.0, 3.0, 0.2], np.float32), np.float32(2.0)),
                  (np.array([0.5, 1.0], np.float32), np.float32(9.0))],
    "count_below": [(np.array([0.5, 1.0, 3.0, 0.2], np.float32), np.float32(2.0))],
    "printing_sum_below": [(np.array([0.5, 1.0, 3.0, 0.2], np.float32), np.float32(2.0))],
    "first_above": [(np.array([0.5, 1.0, 3.0, 0.2], np.float32), np.float32(0.7)),
                    (np.array([0.5, 1.0], np.float32), np.float32(5.0))],
    "sign": [(np.float32(2.5),), (np.float32(-1.0),)],
    "countdown": [(np.float32(1.0), np.int32(5)), (np.float32(1.0), np.int32(0)), (np.float32(2.0), np.int32(6))],
    "half_sums": [(np.array([1.0, 2.0, 3.0], np.float32),)],
    "checked": [(np.float32(1.0), np.float32(2.0)), (np.float32(1.0), np.float32(0.5)), (np.float32(-1.0), np.float32(2.0))],
    "pick": [(np.float32(1.0), np.float32(7.0)), (np.float32(3.0), np.float32(7.0))],
}


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """(the original module, its --standalone conversion), both imported from files."""
    return _file_and_standalone(tmp_path_factory.mktemp("programs"), "programs", PROGRAMS)


def test_every_program_is_converted_and_imports_no_autolax(modules):
    _, _, text = modules
    assert "autolax" not in text.replace("autolax convert --standalone", "")
    assert text.count("def while_loop_with_masked_grad(") == 1 and text.count("def masked_while_loop(") == 1


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_standalone_output_matches_python_under_plain_jit(modules, name, capfd):
    original, standalone, _ = modules
    for args in INPUTS[name]:
        expected = getattr(original, name)(*args)
        python_printed = capfd.readouterr().out
        got = jax.jit(getattr(standalone, name))(*args)
        jax.effects_barrier()
        assert_close(expected, got)
        assert capfd.readouterr().out == python_printed


def test_forms_come_from_the_plan(modules):
    _, standalone, _ = modules
    xs, t = jnp.array([0.5, 1.0, 3.0]), jnp.float32(2.0)
    assert "custom_jvp_call" in str(jax.make_jaxpr(standalone.sum_below)(xs, t))  # plan.EARLY_EXIT
    jaxpr = str(jax.make_jaxpr(standalone.count_below)(xs, t))  # plan.WHILE: nothing to differentiate
    assert "while[" in jaxpr and "custom_jvp_call" not in jaxpr
    jaxpr = str(jax.make_jaxpr(standalone.printing_sum_below)(xs, t))  # plan.MASKED_SCAN: it prints
    assert "scan[" in jaxpr and "while[" not in jaxpr
    jaxpr = str(jax.make_jaxpr(standalone.rnn)(xs, jnp.float32(0.0)))  # appends: scan outputs
    assert "scan[" in jaxpr and "concatenate" not in jaxpr
    assert "select_n" in str(jax.make_jaxpr(standalone.sign)(jnp.float32(1.0)))  # plan.SELECT


@pytest.mark.parametrize("name", ["sum_below", "first_above", "rnn"])
def test_gradients_equal_the_decorators(modules, name):
    original, standalone, _ = modules
    for args in INPUTS[name]:
        args = [jnp.asarray(a) for a in args]
        loss = (lambda f: lambda *a: jnp.sum(jax.tree_util.tree_leaves(f(*a))[0]))
        expected = jax.grad(loss(autolax.jit(getattr(original, name))), argnums=(0, 1))(*args)
        got = jax.jit(jax.grad(loss(getattr(standalone, name)), argnums=(0, 1)))(*args)
        assert_close(expected, got)


# ----------------------------------------------------------------------------- examples
def test_examples_convert(tmp_path):
    """Every file in examples/ converts with --standalone --all (a function it cannot write as
    plain JAX is left as it is, with a warning); the converted ones match Python."""
    left = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text().replace("import autolax\n", "")
        signature = ("bisection(lo: float, hi: float)", "newton_sqrt(a: float)")
        result = convert_source(text, path.name, Options(all=True, standalone=True, signature=signature))
        left[path.stem] = sorted(w.split("'")[1] for w in result.warnings)
        (tmp_path / path.name).write_text(result.text)
    assert left == {"adaptive_ode": [], "insertion_sort": [], "integers": [], "kmeans": ["kmeans"],
                    "mandelbrot": [], "particles": ["first_escape"], "rnn": [], "root_finding": [],
                    "equinox_ode": [], "flax_rnn": [], "optax_early_stopping": []}
    sys.path.insert(0, str(tmp_path))
    try:
        rnn, rnn_sa = load(EXAMPLES / "rnn.py", "ex_rnn"), load(tmp_path / "rnn.py", "ex_rnn_sa")
        roots, roots_sa = load(EXAMPLES / "root_finding.py", "ex_roots"), load(tmp_path / "root_finding.py", "ex_roots_sa")
    finally:
        sys.path.remove(str(tmp_path))
    params = rnn.init_params(0, 3, 5)
    xs, h0, targets = np.ones((7, 3), np.float32), np.zeros(5, np.float32), np.zeros(7, np.float32)
    assert_close(rnn.run_rnn(params, xs, h0), jax.jit(rnn_sa.run_rnn)(params, xs, h0), rtol=1e-4)
    expected = jax.grad(autolax.jit(rnn.loss))(params, xs, targets, h0)
    assert_close(expected, jax.jit(jax.grad(rnn_sa.loss))(params, xs, targets, h0), rtol=1e-4)
    for lo, hi in [(0.0, 3.0), (3.0, 4.0)]:
        assert_close(roots.bisection(lo, hi), jax.jit(roots_sa.bisection)(lo, hi))
    for a in (2.0, 0.0, 9.0):
        assert_close(roots.newton_sqrt(a), jax.jit(roots_sa.newton_sqrt)(a))


# ----------------------------------------------------------------------------- refusals
def _file_and_standalone(tmp_path, name, source):
    """(the module ``source`` as written to ``name``.py, its --standalone --all conversion,
    the converted text), both imported from files."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    out = tmp_path / f"{name}_standalone.py"
    out.write_text(convert_source(source, str(path), Options(all=True, standalone=True)).text)
    return load(path, name), load(out, f"{name}_standalone"), out.read_text()


def _runtime_and_standalone(tmp_path, source, *args):
    """(the error autolax.jit raises calling ``f``, the ConversionError --standalone raises)."""
    path = tmp_path / "refused.py"
    path.write_text("import jax.numpy as jnp\n\n\n" + textwrap.dedent(source))
    module = load(path, f"refused_{abs(hash(source))}")
    with pytest.raises(Exception) as runtime:
        autolax.jit(module.f)(*args)
    with pytest.raises(ConversionError) as standalone:
        convert_source(path.read_text(), str(path), Options(only=("f",), standalone=True))
    return runtime.value, standalone.value


REFUSED_BY_BOTH = {
    "append-length-depends-on-data": ("""\
        def f(x):
            out = []
            while x > 0:
                out.append(x)
                x = x - 1
            return out
        """, 3.0),
}


@pytest.mark.parametrize("code", sorted(REFUSED_BY_BOTH))
def test_refusals_say_the_runtimes_words(tmp_path, code):
    source, arg = REFUSED_BY_BOTH[code]
    runtime, standalone = _runtime_and_standalone(tmp_path, source, arg)
    assert runtime.code == standalone.code == code
    assert f"{standalone.reason}\nFix: {standalone.fix}" == str(runtime)
    assert "drop --standalone" not in str(standalone)  # the runtime refuses it too


ONE_SIDED = '''\
def f(x):
    if x > 0:
        y = x * 2.0
    return y


def counted(x: float):
    if x > 0:
        k = 3
    return k


def twice(x, z):
    if x > 0:
        q = x * 2.0
    if z > 0:
        q = z * 3.0
    return q


def nested(x, z):
    if x > 0:
        if z > 0:
            q = x + z
        z = z + 1.0
    return q * z


def printed(x):
    if x > 0:
        q = x * 2.0
    q += 1.0
    print("q", q)
    return q


def deleted(x, w):
    if x > 0:
        del w
    return w + 1.0


def each_side(x):
    if x > 0:
        q = 1
    else:
        r = 2.0
    return q + r
'''


def test_one_sided_if_carries_a_flag_that_a_read_checks_when_the_program_runs(tmp_path, capfd):
    # Fuzzer seeds 30, 170, 221, 278: a variable a staged `if` assigns on one side only, read
    # after it. As the runtime does (a MaybeBound), the `if` also gives whether the branch it
    # ran bound it; a read among the function's own statements checks that flag when the
    # program runs (`raise_if`), raising the runtime's UnboundLocalError where Python raises.
    original, standalone, text = _python_and_standalone(tmp_path, ONE_SIDED, "one_sided")
    assert "y, y_bound = jax.lax.cond(cond_predicate(x > 0, " in text  # x may be an array: checked when traced
    assert "if_true_types = jax.eval_shape(if_true)" in text  # zeros of the other side's type
    assert "        k = 0\n        return (k, False)" in text  # a Python number: a Python zero
    assert "return (q, q_bound)" in text  # the second `if` keeps the first one's flag on its other side
    message = str(errors.make("unbound-after-loop", name="y", where=f"{tmp_path / 'one_sided.py'}:8"))
    assert f"with raise_if(jnp.logical_not(y_bound), lambda: UnboundLocalError({message!r})" in text
    cases = {"f": [(1.0,), (-1.0,)], "counted": [(1.0,), (-1.0,)],
             "twice": [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)],
             "nested": [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)], "printed": [(1.0,), (-1.0,)],
             "deleted": [(1.0, 2.0), (-1.0, 2.0)], "each_side": [(1.0,), (-1.0,)]}
    for name, arg_sets in cases.items():
        for args in arg_sets:
            args = tuple(np.float32(a) for a in args)
            # Eagerly the flag is a concrete value: Python's value, or its error, where it raises it.
            _same_outcome(getattr(original, name), getattr(standalone, name), args, capfd)
            jitted = jax.jit(getattr(standalone, name))
            try:
                expected = getattr(original, name)(*args)
            except UnboundLocalError:
                with pytest.raises(jax.errors.JaxRuntimeError) as info:  # checked when the program runs
                    jax.block_until_ready(jitted(*args))
                assert "cannot access local variable" in str(info.value) and "autolax convert --standalone" in str(info.value)
            else:
                assert_close(expected, jitted(*args))
    capfd.readouterr()
    with pytest.raises(UnboundLocalError) as info:
        standalone.f(np.float32(-1.0))
    assert str(info.value) == message
    # In a `try` (an exception before the `if` would leave the flag unset), a loop, a Python
    # `if` or a nested function, the `if` may run other than once: refused, as before.
    with pytest.raises(ConversionError) as info:
        convert_source("def f(x):\n    try:\n        if x > 0:\n            y = 1.0\n    except ValueError:\n"
                       "        pass\n    return y\n", "m.py", Options(only=("f",), standalone=True))
    assert info.value.code == "if-one-sided" and info.value.lineno == 3


def test_a_return_value_of_a_type_not_known_takes_zeros_of_the_other_branchs_type(tmp_path, capfd):
    # Fuzzer seeds 42, 131, 300: an early `return` under a traced condition whose value's
    # type --standalone does not know (an argument's array): the side that returns nothing
    # gives zeros of the type `jax.eval_shape` finds for the other side.
    source = """\
        def g(x, xs):
            if x > 0:
                if xs[0] > 1:
                    return xs, x
                x = x + 1
            return xs * 2, x
        """
    original, standalone, text = _python_and_standalone(tmp_path, source, "jumped")
    assert "retval = jax.tree.map(jnp.zeros_like, if_true_1_types[2])" in text
    xs = np.arange(3, dtype=np.float32)
    for args in [(np.float32(1.0), xs), (np.float32(1.0), xs + 2), (np.float32(-1.0), xs)]:
        _same_outcome(original.g, standalone.g, args, capfd)
        _same_outcome(original.g, jax.jit(standalone.g), args, capfd)
    # Not where the branches hold a `try` (an exception skips the assignment the analysis
    # counts on) or hand the variable to a closure (fuzzer seeds 1033, 678: it was unbound
    # in the output): those keep the old form, here refused.
    for source in ("def f(x, xs):\n    if x > 0:\n        return xs\n    g2 = xs[0]\n    step = lambda: g2\n    return xs\n",
                   "def f(x, xs):\n    if x > 0:\n        try:\n            xs = xs + 1\n        except ValueError:\n"
                   "            if x > 1:\n                return xs\n    return xs * 2\n"):
        with pytest.raises(ConversionError) as info:
            convert_source(source, "m.py", Options(only=("f",), standalone=True))
        assert info.value.code == "standalone-one-sided"


@pytest.mark.parametrize("source, line", [
    # The read is not the first thing its statement evaluates (Python raises `xs[5]`'s error first).
    ("def f(x, xs):\n    if x > 0:\n        y = 1.0\n    return xs[5] + y\n", 4),
    # In a staged body (the check would count where that body does not run).
    ("def f(x, z):\n    if x > 0:\n        y = 1.0\n    if z > 0:\n        z = z + y\n    return z\n", 5),
    # In a function that another calls (under vmap a check would count for lanes that do not run it).
    ("def f(x):\n    if x > 0:\n        y = 1.0\n    return y\n\n\ndef g(x):\n    return f(x)\n", 4),
])
def test_a_one_sided_if_whose_read_cannot_be_checked_is_refused(source, line):
    with pytest.raises(ConversionError) as info:
        convert_source(source, "m.py", Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-unbound-read" and info.value.lineno == line
    assert info.value.reason.startswith(
        "'y' may be unbound here: the `if` at m.py:2 assigns it in the `if` branch only, and --standalone checks "
        "whether it is bound only where a read comes first in a statement among the function's own statements "
        "(not in a staged body, a loop, a `try` or a nested function, nor in a function the file calls) "
        "(drop --standalone to use the autolax runtime)")


def test_refusal_of_what_the_runtime_unrolls_says_its_reason_and_to_drop_standalone(tmp_path):
    path = tmp_path / "unrolled.py"
    path.write_text(textwrap.dedent("""\
        import jax.numpy as jnp


        def f(xs):
            out = []
            for x in xs:
                out.append(x * 2)
                x = x + len(out)
            return jnp.stack(out)
        """))
    module = load(path, "unrolled")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        autolax.jit(module.f)(jnp.arange(3.0))
    (warning,) = [w for w in caught if issubclass(w.category, autolax.UnrolledLoopWarning)]
    with pytest.raises(ConversionError) as info:
        convert_source(path.read_text(), str(path), Options(only=("f",), standalone=True))
    first_line, _, rest = info.value.reason.partition("\n")
    assert info.value.code == "append-and-read"
    assert first_line.endswith(" (drop --standalone to use the autolax runtime)")
    assert first_line.removesuffix(" (drop --standalone to use the autolax runtime)").rstrip(".") in str(warning.message)


@pytest.mark.parametrize("extra", ["x = ops.frobnicate(x)", "x = ops.not_(x, at='1')", "y = ops.Undefined"])
def test_unknown_ops_are_refused(monkeypatch, extra):
    """The front end's vocabulary grows faster than --standalone: an ops call (or keyword) it
    does not know is an error, never a guess."""
    convert_node = pipeline.convert_node

    def with_extra(*args, **kwargs):
        converted = convert_node(*args, **kwargs)
        stmt = syntax.parse(extra.replace("ops.", f"{converted.ctx.ops}.")).body[0]
        syntax.copy_location(stmt, converted.node.body[0])
        converted.node.body.insert(0, stmt)
        return converted

    monkeypatch.setattr(pipeline, "convert_node", with_extra)
    with pytest.raises(ConversionError) as info:
        convert_source("import autolax\n\n\n@autolax.jit\ndef f(x):\n    return x\n", "m.py", Options(standalone=True))
    assert info.value.code == "standalone-op"
    assert "--standalone cannot write as plain JAX (drop --standalone to use the autolax runtime)" in info.value.reason


# ----------------------------------------------------------------------------- declarations
def test_signature_declares_argument_types():
    name, declared = parse_signature("Model.step(self, x: float, xs: Float[Array, 'n m'], flag: bool, rest: list)")
    assert name == "Model.step" and sorted(declared) == ["flag", "rest", "x", "xs"]
    fn = syntax.parse("def step(self, x, xs, flag, rest, n=3, *args): pass").body[0]
    vals = param_vals(fn, static=set(), is_method=True, declared=declared)
    assert not vals["self"].traced
    assert (vals["x"].kind, vals["x"].ndim, vals["x"].weak) == ("float", 0, True)
    assert (vals["xs"].kind, vals["xs"].ndim) == ("float", 2)
    assert vals["flag"].kind == "bool" and vals["rest"].container and vals["args"].container
    assert (vals["n"].kind, vals["n"].traced) == ("int", True)  # jax.jit traces what is passed


def test_signature_option_changes_the_form():
    source = "import autolax\n\n\n@autolax.jit\ndef f(x):\n    if x > 0:\n        y = 1.0\n    else:\n        y = -1.0\n    return y\n"
    plain = convert_source(source, "m.py", Options(standalone=True)).text
    declared = convert_source(source, "m.py", Options(standalone=True, signature=("f(x: float)",))).text
    # x might be an array: the runtime's check that it is one value, when the program is traced
    assert "jax.lax.cond(cond_predicate(x > 0, 'm.py:6')" in plain
    assert "y = jax.numpy.where(x > 0, 1.0, -1.0)" in declared


def test_bad_signature():
    with pytest.raises(ConversionError) as info:
        parse_signature("f(x: float")
    assert info.value.code == "standalone-signature"
    assert info.value.reason.startswith("--signature 'f(x: float' is not a function signature")


def test_helpers_are_plain_jax_documented_by_python():
    for name in (helpers.MASKED, helpers.EARLY_EXIT):
        text = helpers.text(name, "jax")
        assert text.startswith(f"def {name}(cond_fun, body_fun, init_val, max_steps):\n")
        compile(text, name, "exec")
    assert helpers.closure([helpers.EARLY_EXIT]) == [helpers.MASKED, helpers.EARLY_EXIT]
    for name in (helpers.PROMOTING_MASKED, helpers.PROMOTING_EARLY_EXIT):
        compile(helpers.text(name, "jax"), name, "exec")
        assert {helpers.MASKED, helpers.CARRY_TYPES, helpers.AS_TYPES} <= set(helpers.closure([name]))


def test_print_form():
    assert plan.print_form(False, False) == plan.PYTHON
    assert plan.print_form(True, False) == plan.print_form(False, True) == plan.DEBUG_PRINT


@pytest.mark.skipif(not hasattr(autolax.ops, "asserting"), reason="a front end that writes ops.asserting")
def test_checks_and_outside_changes_in_python_code():
    head = "import jax.numpy as jnp\nimport autolax\n\nLOG = []\n\n\n"
    text = convert_source(head + textwrap.dedent('''\
        @autolax.jit(static_argnames="n")
        def f(x, n):
            assert n > 0, "n must be positive"
            if n > 5:
                raise ValueError("too big")
            return x * n
        '''), "m.py", Options(standalone=True)).text
    assert '    assert n > 0, "n must be positive"\n    if n > 5:\n        raise ValueError("too big")\n    return' in text
    # A module's list changed under jax.jit: once per trace, static value or not (the runtime refuses it too).
    with pytest.raises(ConversionError) as info:
        convert_source(head + '@autolax.jit(static_argnames="n")\ndef f(x, n):\n    LOG.append(n)\n    return x\n',
                       "m.py", Options(standalone=True))
    assert info.value.code == "traced-effect" and "drop --standalone" not in info.value.reason
    refused = {
        # checked when the program runs, in a staged branch (at the top of the function: `raise_if`)
        "def g(x):\n    if x < 1:\n        assert x > 0\n        x = x + 1\n    return x\n": "standalone-op",
        "def h(xs):\n    for x in xs:\n        last = 1\n    return last\n": "standalone-first-assigned",
    }
    for source, code in refused.items():
        with pytest.raises(ConversionError) as info:
            convert_source(head + "@autolax.jit\n" + source, "m.py", Options(standalone=True))
        assert info.value.code == code and "(drop --standalone to use the autolax runtime)" in info.value.reason


# ----------------------------------------------------------------------------- dtypes
# Python's `if` and loops let a value change dtype; lax.cond and lax loops do not. Where the
# output's dtype is not known at conversion, --standalone calls the promoting_* helpers,
# which find it when traced, as autolax.jit does (fuzzer seeds 3, 114: under x64 the
# default dtype written before was float64 beside float32 arguments).
PROMOTING = '''\
import jax.numpy as jnp


def ternary_number(b, xs):
    t = 1.5
    b += b if xs[1] != xs[0] else t
    return b


def piecewise(x):
    if x < -5:
        y = 0.0
    elif x < -4:
        y = 1.0
    elif x < -3:
        y = 2
    elif x < -2:
        y = x * 2
    elif x < -1:
        y = 4.0
    elif x < 0:
        y = 5.0
    elif x < 1:
        y = 6.0
    elif x < 2:
        y = 7.0
    elif x < 3:
        y = 8.0
    elif x < 4:
        y = 9.0
    elif x < 5:
        y = 10.0
    elif x < 6:
        y = 11.0
    else:
        y = x
    return y


def assigns_int(b):
    k = 2
    while k > 0:
        k -= 1
        b = k
    return b


def int_to_float(n, xs):
    total = n
    for i in range(n):
        total = total + xs[i]
    return total


def scan_to_float(c, xs):
    for x in xs:
        c = c * 0.5 + x
    return c


def ternary_in_loop(xs):  # fuzzer seed 947: `u` is 0 before the loop and a float in it
    u = 0
    k = 0
    ok = False
    while k < 2:
        ok = xs.sum() > (u if xs[0] < 2.0 else 1.0)
        u %= 3.0
        k += 1
    return u, ok


def assigns_number(xs, n):  # fuzzer seed 3339: a Python float given to a float32 carry (float64 under x64)
    w = xs[2] * 2.0
    k = 0
    while k < n:
        k += 1
        w = 0.25
    for x in xs:
        w = 0.5
    return w


def dict_carry_breaks(xs, n):  # fuzzer seed 4422: a dict's items change dtype in a loop that can stop early
    lims = {"lo": 0.0, "hi": 0.0}
    for j in range(1, n):
        if xs.sum() > 10.0:
            break
        lims = {"lo": xs[j], "hi": lims["lo"]}
    return lims["lo"], lims["hi"]


def mixed_widths(a, xs):  # fuzzer seed 956: `a * 0.5` has the dtype of `a`, a Python float or an array
    b = a * 0.5
    if xs[0] > 0:
        b += xs[1]
    return b


def early_exit_promotes(a, b, xs, ys):  # fuzzer seed 5221: `b` turns float64 in the second iteration under x64
    s = a
    for i in range(3, 0, -2):
        if a > xs[0]:
            break
        if b == xs[i]:
            s = abs(b) % 3.0
        b = b - ys[i] * 0.5
    return s, b


def masked_early_exit_promotes(a, b, xs, ys):  # the same loop printing: masked_while_loop's form
    s = a
    for i in range(3, 0, -2):
        if a > xs[0]:
            break
        if b == xs[i]:
            print("equal")
            s = abs(b) % 3.0
        b = b - ys[i] * 0.5
    return s, b


def int_to_float_of_argument(xs, n):  # fuzzer seed 5825: `u` becomes a float of xs's width, not float64
    u = 0
    if xs[0] > 0:
        u = 1
    xs = xs + n / 2
    k = 0
    while k < 2:
        k += 1
        u = xs[-1]
    return u


def number_made_float_in_loop(xs):
    # Fuzz seed 6361: the scan first traces its body with z weakly typed (a float64 under
    # x64), the branch gives xs's width: the cond promotes.
    z = 2.0
    for x in xs:
        if x > 0:
            z += xs[1]
    return z


def number_made_float_in_while(xs, limit):
    total = 0.0
    i = 0
    while i < xs.shape[0] and total < limit:
        x = xs[i]
        i += 1
        if x > 0:
            total += x * x
    return total
'''

PROMOTING_INPUTS = {
    "ternary_number": [(np.float32(-4.0), np.array([-0.5, -2.0], np.float32)),
                       (np.float32(-4.0), np.array([1.0, 1.0], np.float32))],
    "piecewise": [(v,) for v in (np.float32(-6), np.float32(-3.5), np.float32(-2.5), np.float32(0.5),
                                 np.float32(7.0), np.int32(-3), np.int32(7))],
    "assigns_int": [(np.float32(2.0),), (np.int32(5),)],
    "int_to_float": [(np.int32(3), np.array([0.5, 1.5, 2.5, 9.0], np.float32)), (np.int32(0), np.zeros(2, np.float32))],
    "scan_to_float": [(np.int32(3), np.array([0.5, 1.5], np.float32))],
    "ternary_in_loop": [(np.array([0.5, 1.5], np.float32),), (np.array([2.5, 1.5], np.float32),)],
    "assigns_number": [(np.array([0.5, 1.5, 2.0], np.float32), np.int32(2)),
                       (np.array([0.5, 1.5, 2.0], np.float32), np.int32(0))],
    "dict_carry_breaks": [(np.array([0.5, 1.5, 2.0], np.float32), np.int32(3)),
                          (np.array([0.5, 1.5, 20.0], np.float32), np.int32(3))],
    "mixed_widths": [(1.5, np.array([0.5, 1.5], np.float32)), (np.float32(1.5), np.array([-0.5, 1.5], np.float32))],
    "early_exit_promotes": [(np.float32(-4.0), 2.0, np.array([3.5, -0.5, 0.0, -1.0], np.float32),
                             np.array([-2, -1, 4, 5], np.int32))],
    "masked_early_exit_promotes": [(np.float32(-4.0), 2.0, np.array([3.5, -0.5, 0.0, -1.0], np.float32),
                                    np.array([-2, -1, 4, 5], np.int32))],
    "number_made_float_in_loop": [(np.array([3.5, -0.5, 0.0], np.float32),), (np.array([-3.5, -0.5], np.float32),)],
    "number_made_float_in_while": [(np.array([3.5, -0.5, 2.0], np.float32), np.float32(100.0)),
                                   (np.array([3.5, -0.5, 2.0], np.float32), np.float32(1.0))],
    "int_to_float_of_argument": [(np.array([3.5, -0.5, 0.0, -1.0], np.float32), np.int32(3)),
                                 (np.array([-3.5, -0.5, 0.0, -1.0], np.float32), np.int32(0))],
}


@pytest.fixture(scope="module")
def promoting(tmp_path_factory):
    folder = tmp_path_factory.mktemp("promoting")
    source = folder / "promoting.py"
    source.write_text(PROMOTING)
    converted = folder / "promoting_standalone.py"
    converted.write_text(convert_source(PROMOTING, str(source), Options(all=True, standalone=True)).text)
    return load(source, "promoting"), load(converted, "promoting_standalone"), converted.read_text()


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name", sorted(PROMOTING_INPUTS))
def test_branches_and_iterations_of_other_dtypes_agree_with_python(promoting, name, x64):
    original, standalone, _ = promoting
    with jax.enable_x64(x64):
        for args in PROMOTING_INPUTS[name]:
            assert_close(getattr(original, name)(*args), jax.jit(getattr(standalone, name))(*args))


def test_promoting_forms_are_written_only_where_a_dtype_may_change(promoting):
    _, _, text = promoting
    assert "promoting_cond(cond_predicate(x < -5" in text and "promoting_cond(cond_predicate(xs[1] != xs[0]" in text
    assert "promoting_while_loop(" in text and "promoting_fori_loop(" in text and "promoting_scan(" in text
    assert "promoting_while_loop_with_masked_grad(" in text and "promoting_masked_while_loop(" in text
    for name in (helpers.PROMOTING_COND, helpers.CARRY_TYPES, helpers.PROMOTING_WHILE):
        assert text.count(f"def {name}(") == 1
    plain = convert_source("def f(x, n):\n    y = x if n > 0 else -x\n    return y * y if x > 0 else x\n", "plain.py",
                           Options(all=True, standalone=True)).text
    assert "promoting" not in plain and plain.count("jax.lax.cond(") == 2  # x, -x, y * y: x's dtype
    # An argument nothing declares may be a tuple of values of two dtypes.
    for body in ("y = x[0] if n > 0 else x[1]",):
        assert "promoting_cond(" in convert_source(f"def f(x, n):\n    {body}\n    return y\n", "p.py",
                                                   Options(all=True, standalone=True)).text


def test_an_elif_chain_is_traced_once_per_branch(promoting):
    _, standalone, _ = promoting
    calls = []
    real = jax.make_jaxpr

    def counting(fun, *args, **kwargs):
        calls.append(fun)
        return real(fun, *args, **kwargs)

    jax.make_jaxpr = counting
    try:
        jaxpr = real(lambda x: standalone.piecewise(x))(np.float32(1.0))  # a new function: traced afresh
    finally:
        jax.make_jaxpr = real
    # 12 staged `if`s, each tracing its two branches once: 24, not 2 ** 12.
    assert len(calls) == 24
    assert str(jaxpr).count("cond[") == 12


# ----------------------------------------------------------------------------- effects
def test_a_print_of_static_values_prints_on_every_call_under_jit(tmp_path, capfd):
    # Python's print under jax.jit runs once per trace (fuzzer seed 166): the output prints
    # when the program runs, as a function autolax.jit traces does.
    source = "def f(x, n):\n    print(n == 4)\n    print('scale')\n    if x > 0:\n        x = x * n\n    return x\n"
    path = tmp_path / "prints.py"
    path.write_text(convert_source(source, "prints.py", Options(all=True, standalone=True, static=("n",))).text)
    f = jax.jit(load(path, "prints_standalone").f, static_argnames="n")
    for _ in range(2):
        f(1.0, 4)
        jax.effects_barrier()
    assert capfd.readouterr().out == "True\nscale\n" * 2


def test_changing_a_global_list_is_refused_in_the_runtimes_words(tmp_path):
    source = """\
        LOG = [1.0]

        def f(x):
            LOG.append(x)
            return x
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 2.0)
    assert runtime.code == standalone.code == "traced-effect"
    assert "the global list 'LOG' is changed (`.append`) in a function that jax.jit is tracing" in str(standalone)
    assert "drop --standalone" not in str(standalone)


def test_a_loop_carrying_a_variable_a_closure_captures_is_refused(tmp_path):
    source = """\
        def f(xs, ys):
            for y in ys:
                xs = xs - y
            scale = lambda v: v * xs[0]
            return scale(2.0)
        """
    path = tmp_path / "cells.py"
    path.write_text("import jax.numpy as jnp\n\n\n" + textwrap.dedent(source))
    module = load(path, "cells")
    args = (jnp.array([1.0, 2.0]), jnp.array([0.5, 0.25]))
    assert_close(autolax.jit(module.f)(*args), module.f(*args))  # the runtime carries it
    with pytest.raises(ConversionError, match="a variable that a nested function or lambda captures") as info:
        convert_source(path.read_text(), str(path), Options(only=("f",), standalone=True))
    assert "drop --standalone to use the autolax runtime" in str(info.value)


def test_branches_that_hand_values_to_captured_variables(tmp_path):
    # A closure captures `xs` and `ys`: each branch function hands its operands to them
    # (`nonlocal ys; ys = ys_1`). Fuzzer seed 136: the inner `if`, inlined as Python, kept
    # that prologue (a SyntaxError), and the renamed operands were taken as static.
    source = textwrap.dedent("""\
        def f(xs, ys):
            cnt = ys
            shift = lambda: xs.min() + ys.min()
            if xs.sum() > 0:
                xs = xs * 2
            elif xs[1] == 0.0:
                cnt = cnt + 1
                ys = cnt
            return xs, ys, shift()
        """)
    original, standalone, _ = _file_and_standalone(tmp_path, "captured", source)
    for xs in ([1.0, 2.0], [-1.0, 0.0], [-1.0, 3.0]):
        args = (np.array(xs, np.float32), np.array([5.0, 6.0], np.float32))
        assert_close(original.f(*args), jax.jit(standalone.f)(*args))


@pytest.mark.parametrize("branches", [
    ("return [3.0]", "pass"),  # a list, and the None a function returns at its end (fuzzer seed 60)
    ("y = (x, x)", "y = (x, x, x)"),
    ("y = None", "y = 2.0"),
    ("y = [x]", "y = {'a': x}"),  # a list and a dict (fuzzer seed 130)
    ("return 1.0, [x]", "return 2.0, [x, x, x]"),  # returned lists of two lengths (fuzzer seeds 130, 147, 175)
])
def test_branches_of_different_structures_are_refused_as_the_runtime_refuses_them(tmp_path, branches):
    then, orelse = branches
    source = f"""\
        def f(x):
            y = 0.0
            if x > 0:
                {then}
            else:
                {orelse}
            return y
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "if-structure"
    assert "in the `if` branch and" in str(standalone) and "same structure" in str(standalone)
    assert "drop --standalone" not in str(standalone)


def test_returned_lists_of_two_lengths_are_refused_as_the_runtime_refuses_them(tmp_path):
    source = """\
        def f(x):
            if x > 0:
                return [x]
            return []
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "if-list-append"
    assert "a list of 1 item in the `if` branch and a list of 0 items in the `else` branch" in str(standalone)


@pytest.mark.parametrize("source", [
    # Fuzzer seed 657: a list made longer in place in one branch only.
    """\
        def f(x):
            stack = [1.0]
            if x > 0:
                stack += [x]
            return stack[0]
        """,
    """\
        def f(x):
            stack = [1.0, 2.0]
            if x > 0:
                stack.pop(0)
            else:
                del stack[1]
                stack.insert(0, x)
                stack.extend([x, x])
            return stack[0]
        """,
])
def test_a_list_changed_in_place_to_two_lengths_is_refused_as_the_runtime_refuses_it(tmp_path, source):
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "if-list-append"
    assert "'stack' is 1 item shorter than before in the `if` branch and 2 items longer than before in the `else`" \
        in str(standalone) or "'stack' is 1 item longer" in str(standalone)
    assert "drop --standalone" not in str(standalone)


def test_a_module_list_beside_a_tuple_is_refused_as_the_runtime_refuses_it(tmp_path):
    # Fuzzer seed 1084: the global list `LOG` returned on one side, a tuple on the other.
    source = """\
        LOG = [1.0]

        def f(x):
            if x > 0:
                return (x, 2.0)
            return LOG
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "if-structure"
    assert "a tuple in the `if` branch and a list in the `else` branch" in str(standalone)


@pytest.mark.parametrize("source, first, second", [
    # Fuzzer seeds 1595, 3222: a tuple returned beside an argument (an array, or a tuple).
    ("""\
        def f(x, ys):
            if x > 0:
                return ys, 1.0
            return ys * -1
        """, "a tuple of 2 items", "a value whose type --standalone cannot tell"),
    # Fuzzer seed 2709.
    ("""\
        def f(x, ys):
            if x > 0:
                return ys - x
            return ys, x
        """, "a value whose type --standalone cannot tell", "a tuple of 2 items"),
    ("""\
        def f(x, ys):
            if x > 0:
                return None
            return ys
        """, "None", "a value whose type --standalone cannot tell"),
    # Fuzzer seed 3266: a list display beside a list variable (an alias may change its length).
    ("""\
        def f(x, ys):
            items = [x, ys[0], 1.0]
            if x > 0:
                return [x]
            return items
        """, "a list of 1 item", "a list of a number of items --standalone cannot tell"),
])
def test_branches_of_structures_not_known_to_be_one_are_refused(tmp_path, source, first, second):
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0, np.array([0.5, 1.5], np.float32))
    assert runtime.code in ("if-structure", "if-list-append") and standalone.code == "if-structure"
    assert f"the return value is {first}" in str(standalone) and f"in the `if` branch and {second}" in str(standalone)
    assert "same structure" in str(standalone) and "drop --standalone" not in str(standalone)


def test_branches_of_values_of_types_not_known_stage(tmp_path):
    source = textwrap.dedent("""\
        def f(x, ys):
            if x > 0:
                return ys, x + 1.0
            return ys * 2.0, (ys[0],)[0]
        """)
    result = convert_source(source, "pair.py", Options(all=True, standalone=True))
    assert not result.warnings and "cond(" in result.text
    namespace, python = {}, {}
    exec(compile(result.text, "pair.py", "exec"), namespace)
    exec(compile(source, "pair_py.py", "exec"), python)
    for x in (1.0, -1.0):
        args = (np.float32(x), np.array([0.5, 1.5], np.float32))
        assert_close(python["f"](*args), jax.jit(namespace["f"])(*args))


def test_same_length_changes_in_both_branches_stage(tmp_path):
    source = textwrap.dedent("""\
        def f(x):
            stack = [1.0, 2.0]
            if x > 0:
                stack.pop(0)
                stack += [x]
            else:
                del stack[1]
                stack.insert(0, -x)
            return stack
        """)
    text = convert_source(source, "same.py", Options(all=True, standalone=True)).text
    assert "jax.lax.cond(" in text
    namespace = {}
    exec(compile(text, "same.py", "exec"), namespace)
    exec(compile(source, "same_py.py", "exec"), python := {})
    for x in (1.0, -1.0):
        assert_close(python["f"](np.float32(x)), jax.jit(namespace["f"])(np.float32(x)))


def test_a_length_change_not_known_at_conversion_says_to_drop_standalone():
    source = "def f(x, xs: list):\n    if x > 0:\n        xs.extend(xs)\n    return xs\n"
    with pytest.raises(ConversionError) as info:
        convert_source(source, "u.py", Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-length-change"
    assert "'xs' changes length in the `if` at u.py:2" in str(info.value) and "drop --standalone" in str(info.value)


def test_a_loop_that_changes_a_lists_length_runs_as_a_python_loop(tmp_path):
    # Fuzzer seed 472: the runtime unrolls a loop over a static range whose body grows a list.
    source = textwrap.dedent("""\
        def f(b, xs):
            queue = []
            for j in range(1, 3):
                queue += [b * j]
            for x in xs:
                queue.append(x)
                queue.pop(0)
                queue.insert(0, x)
            return queue
        """)
    result = convert_source(source, "grow.py", Options(all=True, standalone=True))
    text = result.text
    assert not result.warnings and "for j in range(1, 3):" in text and "for x in xs:" in text
    namespace, python = {}, {}
    exec(compile(text, "grow.py", "exec"), namespace)
    exec(compile(source, "grow_py.py", "exec"), python)
    args = (np.float32(1.5), np.array([0.5, -1.0], np.float32))
    assert_close(python["f"](*args), jax.jit(namespace["f"])(*args))


def test_a_loop_with_a_traced_trip_count_that_changes_a_lists_length_is_refused_as_the_runtime_refuses_it(tmp_path):
    source = """\
        def f(x):
            queue = [x, x]
            while x > 0:
                queue.pop()
                x = x - 1.0
            return x
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "list-changes-length"
    assert "'queue' is a list before the loop and a list 1 item shorter after one iteration" in str(standalone)


def test_a_list_an_alias_changed_is_not_refused_for_its_display_length(tmp_path):
    # The length of a list display is known only while no variable of the user's holds it:
    # `y = [x]` has two items when the `if` runs (an alias appended to it).
    source = textwrap.dedent("""\
        def f(x):
            y = [x]
            z = y
            z.append(x + 1.0)
            if x > 0:
                r = y
            else:
                r = [x, 2.0 * x]
            return r
        """)
    original, standalone, _ = _file_and_standalone(tmp_path, "alias_list", source)
    for x in (1.0, -1.0):
        assert_close(original.f(np.float32(x)), jax.jit(standalone.f)(np.float32(x)))


FAILS_WHILE_STAGED = {
    # Fuzzer seed 113: Python reads `items[0]` only when `xs[0]` is 0; jnp.where reads it always.
    "operand-fails": ("""\
        def f(x):
            items = []
            return x or items[0]
        """, "the operand after `or` at"),
    # Fuzzer seed 211: the later comparison of a chain.
    "operand-fails ": ("""\
        def f(x):
            items = []
            if 0.0 < x < items[0]:
                x = x + 1.0
            return x
        """, "the operand after `and` at"),
    "branch-fails": ("""\
        def f(x):
            items = []
            if x > 0:
                y = items[0]
            else:
                y = x
            return y
        """, "the `if` branch of the `if` at"),
}


def _staged_where_it_can(tmp_path, source, code, name, xs=(1.0, -1.0)):
    """The runtime's outcomes for a branch or operand that fails while staged: ``autolax.jit``
    stages it as raising Python's error when the program takes it (Python's answer for each
    of ``xs``); plain ``jax.jit`` does so in a function that stages another check, else
    refuses it as --standalone does (``code``). Returns the refusal of plain ``jax.jit`` or
    None."""
    path = tmp_path / f"staged_{name.strip()}.py"
    path.write_text("import jax.numpy as jnp\n\n\n" + textwrap.dedent(source))
    module = load(path, f"staged_{name.strip()}_{abs(hash(source))}")
    refusal = None
    for x in xs:
        try:
            expected = ("value", module.f(x))
        except Exception as exc:  # noqa: BLE001 - Python's outcome
            expected = ("error", type(exc))
        for path, staged in (("autolax.jit", autolax.jit(module.f)), ("jax.jit", jax.jit(autolax.convert(module.f)))):
            try:
                got = ("value", staged(x))
            except autolax.AutolaxError as exc:
                assert path == "jax.jit" and exc.code == code, exc
                refusal = exc
                continue
            except jax.errors.JaxRuntimeError as exc:  # plain jax.jit: the failed check
                got = ("error", expected[1]) if expected[0] == "error" and expected[1].__name__ in str(exc) else ("runtime", exc)
            except Exception as exc:  # noqa: BLE001
                got = ("error", type(exc))
            if expected[0] == "value":
                assert got[0] == "value", got
                assert_close(expected[1], got[1])
            else:
                assert got[0] == "error" and issubclass(got[1], expected[1]), (got, expected)
    return refusal


@pytest.mark.parametrize("code", sorted(FAILS_WHILE_STAGED))
def test_code_python_may_not_run_that_fails_while_staged_is_refused_as_the_runtime_refuses_it(tmp_path, code):
    # --standalone has no runtime to stage the failing branch or operand as raising when the
    # program takes it: it refuses as plain jax.jit does where it cannot stage it so.
    source, where = FAILS_WHILE_STAGED[code]
    with pytest.raises(ConversionError) as info:
        convert_source(textwrap.dedent(source), "refused.py", Options(only=("f",), standalone=True))
    standalone = info.value
    assert standalone.code == code.strip()
    assert where in str(standalone) and "raised IndexError: list index out of range while autolax staged it" in str(standalone)
    assert "drop --standalone" not in str(standalone)
    runtime = _staged_where_it_can(tmp_path, source, code.strip(), code, xs=(1.0, 0.0, -1.0))
    assert runtime is None or "raised IndexError: list index out of range while autolax staged it" in str(runtime)


def test_a_ternary_branch_that_fails_while_staged_is_refused():
    # (The runtime stages the failing side as raising IndexError only when the program takes it;
    # a standalone file has no runtime to do so.)
    source = "def f(x):\n    items = []\n    return x if x > 0 else items[-1]\n"
    with pytest.raises(ConversionError) as info:
        convert_source(source, "t.py", Options(only=("f",), standalone=True))
    assert info.value.code == "branch-fails"
    assert "the `else` branch of the conditional expression at t.py:3 raised IndexError" in str(info.value)


def test_an_empty_list_code_may_change_is_not_taken_to_be_empty(tmp_path):
    # `items` is handed to a function (which appends), or indexed only in a Python `if`:
    # nothing is known to fail, and the output runs as Python does.
    source = textwrap.dedent("""\
        def fill(lst, v):
            lst.append(v)


        def f(x):
            items = []
            fill(items, x + 1.0)
            if x > 0:
                y = items[0]
            else:
                y = x
            more = []
            if len(more) > 0:
                y = y + more[0]
            return y
        """)
    path = tmp_path / "filled.py"
    path.write_text(source)
    original = load(path, "filled")
    out = tmp_path / "filled_standalone.py"
    out.write_text(convert_source(source, str(path), Options(only=("f",), standalone=True)).text)
    standalone = load(out, "filled_standalone")
    for x in (1.0, -1.0):
        assert_close(original.f(np.float32(x)), jax.jit(standalone.f)(np.float32(x)))


def test_a_traced_value_for_a_parameter_static_made_static_is_refused(tmp_path):
    # Fuzzer seed 259: --static n made `n` static in `helper` too, which `f` calls with a
    # traced value: the output wrote `range(n)` as a scan of jnp.arange(n) (JAX's
    # ConcretizationTypeError). A Python value for it converts.
    source = textwrap.dedent("""\
        def helper(x, n):
            for i in range(n):
                x = x + i
            return x


        def f(xs, n):
            a = helper(xs[0], n)
            return a + helper(xs[1], m := 2), helper(xs[2], n=xs.argmax())
        """)
    with pytest.raises(ConversionError) as info:
        convert_source(source, "s.py", Options(only=("f", "helper"), standalone=True, static=("n",)))
    assert info.value.code == "standalone-static-traced"
    assert info.value.lineno == 9 and "'n' is a parameter of 'helper', which --static makes a Python value" in str(info.value)
    assert "drop --standalone" in str(info.value)
    path = tmp_path / "static_helper.py"
    path.write_text(source.replace("n=xs.argmax()", "n=3"))
    original = load(path, "static_helper")
    out = tmp_path / "static_helper_standalone.py"
    out.write_text(convert_source(path.read_text(), str(path), Options(all=True, standalone=True, static=("n",))).text)
    standalone = load(out, "static_helper_standalone")
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    assert_close(original.f(xs, 4), jax.jit(standalone.f, static_argnames="n")(xs, 4))


def test_static_can_name_one_functions_parameter(tmp_path):
    # `--static f.n` makes `n` static in `f` alone, as static_argnames does for the function
    # jax.jit wraps: `helper`'s `n` stays traced, so `f` may pass it a traced value, and the
    # output agrees with Python on every argument.
    source = textwrap.dedent("""\
        def helper(x, n):
            for i in range(n):
                x = x + i
            return x


        def f(xs, n):
            a = helper(xs[0], n)
            if n > 2:
                a = a * 0.5
            return a + helper(xs[1], 2) + helper(xs[2], n=xs.argmax())
        """)
    path = tmp_path / "qualified.py"
    path.write_text(source)
    original = load(path, "qualified")
    text = convert_source(source, str(path), Options(all=True, standalone=True, static=("f.n",))).text
    assert "    if n > 2:\n        a = a * 0.5" in text  # a Python `if` in f (n static there)
    out = tmp_path / "qualified_standalone.py"
    out.write_text(text)
    standalone = load(out, "qualified_standalone")
    f = jax.jit(standalone.f, static_argnames="n")
    for xs, n in ((np.array([1.0, 2.0, 3.0], np.float32), 4), (np.array([3.0, 1.0, 2.0], np.float32), 0)):
        assert_close(original.f(xs, n), f(xs, n))
    # a bare name still means every function's parameter: the traced call is refused, and the
    # fix names the qualified form
    with pytest.raises(ConversionError, match=r"--static FUNC\.n names that parameter of function FUNC alone"):
        convert_source(source, str(path), Options(only=("f", "helper"), standalone=True, static=("n",)))
    # a qualified name of another function, or of a parameter f lacks, makes nothing static
    for static in (("helper.m",), ("g.n",)):
        other = convert_source(source, str(path), Options(all=True, standalone=True, static=static)).text
        assert "    if n > 2:\n        a = a * 0.5" not in other


def test_del_keeps_pythons_unbound_reads(tmp_path):
    # Fuzzer seed 1173: after `del z` in a staged loop, the output read the carried `z`
    # where Python raises UnboundLocalError. In an `if` run as Python, `del` stays `del`.
    # The body of a loop with a traced condition reads `z` unbound whether or not an
    # iteration runs: the runtime's body-fails.
    staged = "def f(x, n):\n    z = 1.5\n    k = 0\n    while k < n:\n        k += 1\n        del z\n        z = x + k\n    return z\n"
    runtime, standalone = _runtime_and_standalone(
        tmp_path, "def f(x, n):\n    z = 1.5\n    k = 0\n    while k < n:\n        k += 1\n        del z\n"
                  "        t, z = z, k\n    return z\n", 1.0, 0)
    assert runtime.code == standalone.code == "body-fails"
    for error in (runtime, standalone):
        assert "the `while` loop at" in str(error) and ("raised UnboundLocalError: cannot access local variable 'z' "
                                                       "where it is not associated with a value while autolax staged it"
                                                       in str(error))
    assert "def f" in convert_source(staged, "d.py", Options(only=("f",), standalone=True)).text  # no read: converted
    source = "def f(x, n):\n    z = 1.5\n    if n > 2:\n        del z\n    if x > 0:\n        x = x * 2\n    return x + z\n"
    path = tmp_path / "dels.py"
    path.write_text(convert_source(source, "dels.py", Options(all=True, standalone=True, static=("n",))).text)
    f = jax.jit(load(path, "dels_standalone").f, static_argnames="n")
    assert float(f(1.0, 1)) == 3.5
    with pytest.raises(UnboundLocalError):
        f(1.0, 3)


def test_a_staged_branch_that_only_deletes_a_name(tmp_path):
    # Fuzzer seeds 59, 80, 278: `del k3` was the branch's only statement; the branch
    # function was written without a body ("internal error: the converted file does not parse").
    source = "def f(a, n, xs):\n    k3 = 0\n    while k3 < 5:\n        k3 += 1\n    if a + n:\n        del k3\n    return xs[1] * a\n"
    original, standalone, _ = _file_and_standalone(tmp_path, "del_only", source)
    xs = np.array([1.0, 2.0], np.float32)
    for a in (1.5, -2.0):
        assert_close(original.f(np.float32(a), np.int32(2), xs), jax.jit(standalone.f)(np.float32(a), np.int32(2), xs))


MORE_FAILS_WHILE_STAGED = {
    # Fuzzer seed 2164: `stack.pop()` of an empty list handed to the staged branch.
    "pop": ("""\
        def f(x):
            stack = []
            if x > 0:
                x = x * stack.pop()
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: pop from empty list"),
    # Fuzzer seed 865: a list read by `sum` only is still known to be empty.
    "sum": ("""\
        def f(x):
            stack = []
            if x > 0:
                x = x + sum(stack) + stack[0]
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: list index out of range"),
    # A Python `if` inside a staged branch runs while the branch is traced, whatever Python does.
    "python-if": ("""\
        def f(x):
            items = []
            if x > 0:
                if len(items) == 0:
                    x = x + items[0]
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: list index out of range"),
    # Fuzzer seed 2079: a module's list bound to [] that no code changes, after a traced `and`.
    "global": ("""\
        LOG = []


        def f(x):
            if x > 0 and LOG[0] > x:
                x = x + 1.0
            return x + len(LOG)
        """, "operand-fails", "the operand after `and` at", "IndexError: list index out of range"),
    # Fuzzer seed 2069: a `del` in a branch of a name every read finds bound (the unreachable
    # `return m` reads it) is lowered to the unbound placeholder, so the branch fails where
    # Python does, at the name bound nowhere, on both paths.
    "del": ("""\
        def f(x):
            m = 2.0
            if x > 0:
                del m
                x = x + never_bound
            return x
            return m
        """, "branch-fails", "the `if` branch of the `if` at", "NameError: name 'never_bound' is not defined"),
    # A loop whose body may not run (a traced condition).
    "while": ("""\
        def f(x):
            items = []
            while x > 0:
                x = x - items[0]
            return x
        """, "body-fails", "the `while` loop at", "IndexError: list index out of range"),
    # Fuzzer seed 7521: another name for the list that only reads it leaves it known empty.
    "copy": ("""\
        def f(x):
            queue = []
            if x > 0:
                alias = queue
                x = x + queue[0] + len(alias)
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: list index out of range"),
    # Fuzzer seed 9027: `reverse` keeps the list's length and hands it to no one, and an
    # empty list a staged loop carries is still known to be empty in its body.
    "reverse": ("""\
        def f(x):
            items = []
            while x > 0:
                x = x - items[0]
                items.reverse()
            return x
        """, "body-fails", "the `while` loop at", "IndexError: list index out of range"),
    "sort": ("""\
        def f(x):
            items = []
            if x > 0:
                items.sort()
                x = x + items[0]
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: list index out of range"),
    # Fuzzer seed 9994: `clear` leaves an empty list empty and hands it to no one.
    "clear": ("""\
        def f(x):
            items = []
            items.clear()
            while x > 0:
                x = x - 1.0 + items[-1]
            return x
        """, "body-fails", "the `while` loop at", "IndexError: list index out of range"),
    # ... and empties a list nothing else holds.
    "cleared": ("""\
        def f(x):
            items = [1.0, 2.0]
            items.clear()
            if x > 0:
                x = x + items[0]
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "IndexError: list index out of range"),
    # A staged branch reading what it deleted: the runtime's branch-fails, in Python's words.
    "deleted": ("""\
        def f(x):
            s = x * 2.0
            if x > 0:
                del s
                x = x + s
            return x
        """, "branch-fails", "the `if` branch of the `if` at",
        "UnboundLocalError: cannot access local variable 's' where it is not associated with a value"),
    # Fuzzer seed 3500: a name bound nowhere, read in a staged branch.
    "name": ("""\
        def f(x):
            if x > 0:
                x = x + never_bound
            return x
        """, "branch-fails", "the `if` branch of the `if` at", "NameError: name 'never_bound' is not defined"),
}


@pytest.mark.parametrize("name", sorted(MORE_FAILS_WHILE_STAGED))
def test_more_code_python_may_not_run_that_fails_while_staged(tmp_path, name):
    source, code, where, error = MORE_FAILS_WHILE_STAGED[name]
    if code == "body-fails":
        runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
        assert runtime.code == standalone.code == code
        assert f"raised {error} while autolax staged it" in str(runtime)
    else:  # a branch or operand: the runtime stages it as raising where it can
        with pytest.raises(ConversionError) as info:
            convert_source(textwrap.dedent(source), "refused.py", Options(only=("f",), standalone=True))
        standalone = info.value
        assert standalone.code == code
        runtime = _staged_where_it_can(tmp_path, source, code, name)
        assert runtime is None or f"raised {error} while autolax staged it" in str(runtime)
        (tmp_path / "refused.py").write_text("import jax.numpy as jnp\n\n\n" + textwrap.dedent(source))
    assert where in str(standalone) and f"raised {error} while autolax staged it" in str(standalone)
    # Python raises it too where it runs that code; never where it does not.
    module = load(tmp_path / "refused.py", f"refused_py_{name}")
    assert_close(module.f(-1.0), -1.0)
    with pytest.raises((IndexError, NameError)):
        module.f(1.0)


def test_an_empty_list_carried_by_staged_loops_stays_empty(tmp_path):
    # The counterpart of MORE_FAILS_WHILE_STAGED's "reverse": staged loops that reorder an
    # empty list and read only its length still run, as Python does.
    source = textwrap.dedent("""\
        def f(x, n):
            items = []
            for i in range(n):
                x = x + len(items)
                items.reverse()
            k = 0
            while k < n:
                items.sort()
                x = x * 2 + len(items)
                k += 1
            return x, items
        """)
    namespace, original = {}, {}
    exec(convert_source(source, "carried.py", Options(all=True, standalone=True)).text, namespace)
    exec(source, original)
    for n in (3, -1):
        got, want = jax.jit(namespace["f"])(1.0, n), original["f"](1.0, n)
        assert_close(got[0], want[0])
        assert got[1] == want[1] == []


def test_a_list_cleared_then_filled_is_read_as_python_does():
    # The counterpart of MORE_FAILS_WHILE_STAGED's "cleared": a list cleared, then appended
    # to, is not known empty.
    source = textwrap.dedent("""\
        def f(x):
            items = [1.0]
            for i in range(3):
                items.clear()
                items.append(x * i)
            if x > 0:
                x = x + items[0]
            return x
        """)
    namespace, original = {}, {}
    exec(convert_source(source, "cleared.py", Options(all=True, standalone=True)).text, namespace)
    exec(source, original)
    for x in (1.5, -1.0):
        assert_close(jax.jit(namespace["f"])(x), original["f"](x))


def test_a_range_of_literals_with_no_item_stages_nothing(tmp_path):
    # Fuzz seeds 5221 and 5825, reduced: `for i in range(3, 0, 2)` runs no iteration; the
    # output staged it (a scan of length 0 still traces its body, where unpacking a traced
    # number raised TypeError).
    source = textwrap.dedent("""\
        def f(a, b, xs):
            s = 0
            for i in range(3, 0, 2):
                s, u = b
                s = s + xs[i]
            return s + a
        """)
    namespace, original = {}, {}
    text = convert_source(source, "empty_range.py", Options(all=True, standalone=True)).text
    exec(text, namespace)
    exec(source, original)
    assert "for i in range(3, 0, 2):" in text and "jax.lax" not in text
    args = (np.float32(1.5), np.float32(-3.5), np.arange(4.0, dtype=np.float32))
    assert_close(jax.jit(namespace["f"])(*args), original["f"](*args))


def test_a_while_whose_first_test_is_false_by_literals_stages_nothing(tmp_path):
    # Fuzz seed 5825, reduced: `k3 = 0; while k3 > 0:` runs no iteration; the output staged
    # it (lax.while_loop traces its body, where unpacking a traced number raised TypeError).
    # A loop body starts with no literal known: `k` is 3 from the second iteration on.
    source = textwrap.dedent("""\
        def f(x, xs):
            k = 0
            while k > 0:
                a, b = x
            for i in range(2):
                while k > 0:
                    k -= 1
                    x = x + xs[k]
                k = 3
            return x
        """)
    namespace, original = {}, {}
    text = convert_source(source, "never.py", Options(all=True, standalone=True)).text
    exec(text, namespace)
    exec(source, original)
    assert "    while k > 0:\n        a, b = x\n" in text
    assert_close(jax.jit(namespace["f"])(1.5, np.arange(4.0)), original["f"](1.5, np.arange(4.0)))


def test_an_appended_item_is_read_in_the_staged_loop_body(tmp_path):
    # Fuzz seed 8003 (focus undefined), reduced: the item a staged loop appends is its
    # stacked output, lowered outside the body's function; it was not taken for staged code,
    # so a read of a deleted `flag` there became a free variable of the body (NameError
    # where Python raises UnboundLocalError). It is refused as reads in a staged body are.
    source = textwrap.dedent("""\
        import jax.numpy as jnp


        def f(a, xs):
            flag = a > 0
            del flag
            hist = []
            for x in xs:
                hist.append(x * -1.0 if flag else x)
            return jnp.stack(hist)
        """)
    with pytest.raises(ConversionError) as info:
        convert_source(source, "item.py", Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-op" and info.value.lineno == 9
    assert "a read of 'flag' in a staged body, where Python may find it unbound" in str(info.value)


def test_a_list_filled_through_another_name_is_not_known_empty(tmp_path):
    # The counterpart of MORE_FAILS_WHILE_STAGED's "copy": a copy that appends fills the
    # original too.
    source = textwrap.dedent("""\
        def f(x):
            queue = []
            alias = queue
            alias.append(1.0)
            if x > 0:
                x = x + queue[0] + alias[0]
            return x
        """)
    namespace, original = {}, {}
    exec(convert_source(source, "filled.py", Options(all=True, standalone=True)).text, namespace)
    exec(source, original)
    for x in (1.0, -1.0):
        assert_close(jax.jit(namespace["f"])(x), original["f"](x))


def test_a_staged_call_of_a_function_reading_a_deleted_variable_is_refused(tmp_path):
    # Fuzzer seed 5244: a staged branch calls a function of the file that reads a variable it
    # deleted. Python raises UnboundLocalError only on the runs that call it; the output
    # raised it while tracing, on every run. The runtime stages the branch as raising it
    # when the program takes it (it refused it: branch-fails, as plain jax.jit still does
    # where the function stages no other check); the standalone conversion refuses it with
    # the runtime's branch-fails.
    source = """\
        def helper(x):
            v = x
            del v
            return x + v


        def f(x):
            if x > 0:
                x = helper(x)
            return x
        """
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert isinstance(runtime, UnboundLocalError) and standalone.code == "branch-fails"
    assert _staged_where_it_can(tmp_path, source, "branch-fails", "helper_del") is None
    assert "the `if` branch of the `if` at" in str(standalone) and (
        "raised UnboundLocalError: cannot access local variable 'v' where it is not associated with a value "
        "while autolax staged it" in str(standalone))
    module = load(tmp_path / "refused.py", "refused_helper_del")
    assert module.f(-1.0) == -1.0
    with pytest.raises(UnboundLocalError):
        module.f(1.0)
    # A read that may find the name unbound (a loop that may run no iteration), through a
    # second function: --standalone cannot tell, and says so.
    with pytest.raises(ConversionError, match=r"calls `helper \(it may read a variable where it is unbound, in "
                                              r"code staged where Python may not run it\)`"):
        convert_source(textwrap.dedent("""\
            def last_of(x, n):
                for i in range(n):
                    last = x * i
                return last


            def helper(x):
                return last_of(x, 3)


            def f(x):
                while x > 0:
                    x = x - helper(x)
                return x
            """), "maybe.py", Options(only=("f",), standalone=True))
    # A lambda called there is checked too (fuzz seed 7528: its body is an expression).
    lam = "def f(x, xs):\n    h = lambda v: xs[-3] + v\n    if x > 0:\n        x = h(x)\n    return x\n"
    namespace = {}
    exec(convert_source(lam, "lam.py", Options(all=True, standalone=True)).text, namespace)
    assert_close(jax.jit(namespace["f"])(1.0, np.arange(4.0)), 2.0)


def test_a_side_of_a_python_if_that_never_runs_is_not_refused(tmp_path):
    # Fuzzer seed 297: `elif not 3: del k2` in a staged branch; the `del` never runs.
    source = textwrap.dedent("""\
        def f(x):
            items = []
            m = 2.0
            if x > 0:
                if not 3:
                    x = x + items[0]
                    del m
                    assert x > 100.0
                    raise ValueError("never")
                elif 2 // 2 > 3:
                    x = x + never_bound
                else:
                    x = x * 2.0
            return x
            return m
        """)
    path = tmp_path / "dead_side.py"
    path.write_text(source)
    out = tmp_path / "dead_side_standalone.py"
    out.write_text(convert_source(source, str(path), Options(only=("f",), standalone=True)).text)
    original, standalone = load(path, "dead_side"), load(out, "dead_side_standalone")
    for x in (1.0, -1.0):
        assert_close(original.f(np.float32(x)), jax.jit(standalone.f)(np.float32(x)))


@pytest.mark.parametrize("body", ["assert r > 3", "x = helper(x)", "x = outer(x)"])
def test_an_assert_python_may_not_run_is_refused(tmp_path, body):
    # Fuzzer seed 237: an `assert` on Python values (here in a helper) in the untaken branch of
    # a staged `if` fired while the output was traced. The runtime checks it when it runs.
    source = textwrap.dedent(f"""\
        def helper(x):
            r = 0
            assert r > 3
            return x


        def f(x):
            r = 0
            if x > 0:
                {body}
            return x


        def outer(x):
            return helper(x) + 1.0
        """)
    path = tmp_path / "asserts.py"
    path.write_text(source)
    module = load(path, f"asserts_{body[:3]}_{len(body)}")
    assert_close(autolax.jit(module.f)(-1.0), module.f(-1.0))
    with pytest.raises(ConversionError) as info:
        convert_source(source, str(path), Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-op" and info.value.lineno == 10
    assert "staged where Python may not run it" in str(info.value) and "drop --standalone" in str(info.value)


def test_a_search_that_compares_traced_values_is_refused_as_the_runtime_refuses_it(tmp_path):
    # Fuzzer seed 288: `stack.remove(stack[-1])` of traced items was JAX's TracerBoolConversionError.
    source = "def f(x):\n    stack = [x, x * 2.0]\n    stack.remove(stack[-1])\n    return stack[0]\n"
    runtime, standalone = _runtime_and_standalone(tmp_path, source, 1.0)
    assert runtime.code == standalone.code == "traced-comparison"
    assert isinstance(runtime, autolax.TracedComparisonError)
    assert standalone.reason.startswith(f"'stack' is searched for a value at {tmp_path / 'refused.py'}:6, and comparing "
                                      "the value with its item 0 gives a traced boolean")
    assert "drop --standalone" not in str(standalone)


@pytest.mark.parametrize("search", ["y = x * 3.0 in stack", "y = stack.index(x * 2.0)", "y = stack.count(x)"])
def test_a_search_the_runtime_stages_is_refused_by_standalone_with_the_hint(tmp_path, search):
    source = f"def f(x):\n    stack = [x, x * 2.0]\n    {search}\n    return y\n"
    path = tmp_path / "searched.py"
    path.write_text(source)
    module = load(path, f"searched_{abs(hash(search))}")
    assert_close(autolax.jit(module.f)(1.5), module.f(1.5))
    with pytest.raises(ConversionError) as info:
        convert_source(source, str(path), Options(only=("f",), standalone=True))
    assert info.value.code == "traced-comparison"
    assert "'stack' is searched for a value" in str(info.value) and "drop --standalone" in str(info.value)


def test_searches_python_decides_are_converted(tmp_path):
    # The first item *is* the value (no comparison); a dict is searched by hash (also one
    # a staged `if` gives, whose type the analysis no longer knows).
    source = textwrap.dedent("""\
        def f(x):
            stack = [x, x * 2.0]
            stack.remove(stack[0])
            box = {"lo": x}
            if x > 1.0:
                box = {"lo": x * 2.0}
            return stack[0] + ("lo" in box) + ("hi" in ["lo", "hi"])
        """)
    path = tmp_path / "searches.py"
    path.write_text(source)
    out = tmp_path / "searches_standalone.py"
    out.write_text(convert_source(source, str(path), Options(only=("f",), standalone=True)).text)
    assert_close(load(path, "searches").f(np.float32(1.5)), jax.jit(load(out, "searches_standalone").f)(np.float32(1.5)))


def test_a_closure_reading_a_traced_variable_gives_a_traced_value(tmp_path):
    # Fuzzer seed 3435: `g(a)` with a static `a` was taken to be static although `g` reads
    # the traced `xs`: `g(a) or ...` was Python's `or` (TracerBoolConversionError).
    source = textwrap.dedent("""\
        def f(a, xs):
            g = lambda v: xs[-1] * v
            def h(v):
                return g(v) + 1.0
            return (g(a) or xs[0]), (h(a) or xs[1])
        """)
    path = tmp_path / "closure_reads.py"
    path.write_text(source)
    out = tmp_path / "closure_reads_standalone.py"
    out.write_text(convert_source(source, str(path), Options(only=("f",), standalone=True, static=("a",))).text)
    original, standalone = load(path, "closure_reads"), load(out, "closure_reads_standalone")
    for xs in ([1.0, 2.0, 0.0], [1.0, 2.0, -1.0]):
        xs = np.array(xs, np.float32)
        assert_close(original.f(1.0, xs), jax.jit(standalone.f, static_argnames="a")(1.0, xs))


def test_a_nested_function_reading_a_variable_traced_after_its_def(tmp_path):
    # Fuzzer seed 1421: `step` was lowered where it is defined, with `flag` a Python value
    # (`a if flag else 0.0` stayed Python), then called with `flag` traced
    # (TracerBoolConversionError). Refused where that changes how `step` lowers; converted
    # (and agreeing with Python) where it does not.
    source = textwrap.dedent("""\
        def f(a, xs):
            flag = False
            def step(v):
                return v * (a if flag else 0.5)
            def scale(v):
                return v * flag
            y = step(xs[0]) + scale(xs[1])
            flag = xs.sum() > a
            return {call}
        """)
    with pytest.raises(ConversionError) as info:
        convert_source(source.format(call="step(xs[1])"), "late.py", Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-op" and info.value.lineno == 9
    assert "it reads 'flag', which is traced here but not where 'step' is defined" in str(info.value)
    path = tmp_path / "late.py"
    path.write_text(source.format(call="y + scale(xs[2])"))
    out = tmp_path / "late_standalone.py"
    out.write_text(convert_source(path.read_text(), str(path), Options(only=("f",), standalone=True)).text)
    original, standalone = load(path, "late"), load(out, "late_standalone")
    for a in (0.0, 10.0):
        xs = np.array([1.0, 2.0, 3.0], np.float32)
        assert_close(original.f(np.float32(a), xs), jax.jit(standalone.f)(np.float32(a), xs))


def test_a_traced_item_set_in_a_dict_or_list_is_read_as_traced(tmp_path):
    # Fuzzer seeds 2986, 3821: `lims["lo"] -= x` left the dict known as Python values; the
    # conditional expression on `lims["lo"]` stayed Python (TracerBoolConversionError).
    source = textwrap.dedent("""\
        def f(x):
            lims = {"lo": 0.0, "hi": 1.0}
            lims["lo"] -= x
            pts = [0.0, 1.0]
            pts[1] = x * 2.0
            return (1.0 if 3.0 != lims["lo"] else 2.0), (pts[1] > 0.0 and lims["hi"] > 0.5)
        """)
    path = tmp_path / "item_set.py"
    path.write_text(source)
    out = tmp_path / "item_set_standalone.py"
    out.write_text(convert_source(source, str(path), Options(only=("f",), standalone=True)).text)
    original, standalone = load(path, "item_set"), load(out, "item_set_standalone")
    for x in (1.0, -3.0):
        assert_close(original.f(np.float32(x)), jax.jit(standalone.f)(np.float32(x)))


def test_a_staged_branch_that_changes_a_function_is_refused():
    # Fuzzer seed 1603: a function handed through lax.cond ("not a valid JAX type"); the
    # runtime refuses two different functions too (StateMismatchError).
    source = "def f(x):\n    g = lambda v: v\n    if x > 0:\n        g = lambda v: 2 * v\n    return g(x)\n"
    with pytest.raises(ConversionError) as info:
        convert_source(source, "fn.py", Options(only=("f",), standalone=True))
    assert info.value.code == "standalone-op" and info.value.lineno == 3
    assert "carrying the function 'g'" in str(info.value)


# ----------------------------------------------------------------------------- item tests
# A loop whose body opens (`test: x`) or ends (`test: after x`) with `if c: break` /
# `return` is tested in the loop's predicate, as the runtime stages it (passes.loop_exits):
# no exit flag carried. The call also gives back the loop target (the item it stopped at,
# else the last item) and whether the test stopped it. Inputs: no iteration, the exit at
# the first item, at the last item, and no exit.
ITEM_TESTS = '''\
import jax.numpy as jnp


def leading_sum(xs, level):
    total = 0.0
    for x in xs:
        if x > level:
            break
        total += x
    return total


def leading_target(xs, level):
    total = 0.0
    x = -5.0
    for x in xs:
        if x > level:
            break
        total += x
    return total, x


def leading_range_target(n, x):
    i = -1
    for i in range(n):
        if i * x > 10:
            break
    return i


def leading_range_target_first(n, x):
    i = -1
    for i in range(n):
        if i + x > 10:
            break
    return i


def leading_return_index(xs, level):
    for i in range(xs.shape[0]):
        if xs[i] > level:
            return i
    return -1


def leading_zip(xs, ys, t):
    total = 0.0
    for p in zip(xs, ys):
        if p[0] + p[1] > t:
            break
        total += p[0] * p[1]
    return total


def leading_negative_step(n, t):
    total = 0
    for i in range(n, 0, -2):
        if i < t:
            break
        total += i
    return total


def after_sum(n, limit):
    total = 0
    for i in range(n):
        total += i
        if total > limit:
            break
    return total


def after_static_trip(xs, limit):
    total = 0.0
    for i in range(4):
        total += xs[i]
        if total > limit:
            break
    return total


def after_target(n, limit):
    total = 0
    i = -7
    for i in range(n):
        total += i
        if total > limit:
            break
    return total, i


def after_else(xs, t):
    total = 0.0
    for x in xs:
        total += x
        if total > t:
            break
    else:
        total = -1.0
    return total


def after_return(xs, t):
    acc = 0.0
    for x in xs:
        acc = acc * 0.5 + x
        if acc > t:
            return acc, 1
    return acc, 0


def python_loop(x, m):
    total = 0
    for i in range(10):
        if i >= m:
            break
        total += i
    for i in range(10):
        total += i
        if total > m:
            break
    return x * total


def python_search(x, m):
    found = -1
    for k in range(10):
        if k * k > m:
            found = k
            break
    else:
        found = 99
    return x * found


def python_return(x, m):
    total = 0
    for k in range(10):
        total += k
        if total > m:
            return x * k
    return x * total
'''

_f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
ITEM_TEST_INPUTS = {
    "leading_sum": [(_f32(1, 2, 3, 4), 2.5), (_f32(5, 1, 2), 2.5), (_f32(1, 2, 9), 2.5), (_f32(1, 2, 3), 9.0)],
    "leading_target": [(_f32(1, 2, 3, 4), 2.5), (_f32(5, 1, 2), 2.5), (_f32(1, 2, 9), 2.5), (_f32(1, 2, 3), 9.0)],
    "leading_range_target": [(0, 1.0), (5, 1.0), (12, 5.0), (20, 1.0), (3, 100.0)],
    # the test stops the loop at its first item: the target is that item, not the old value
    "leading_range_target_first": [(0, 11.0), (3, 11.0), (3, 9.5), (3, 1.0)],
    "leading_return_index": [(_f32(5, 1, 2), 2.5), (_f32(1, 2, 9), 2.5), (_f32(1, 2, 3), 9.0)],
    "leading_zip": [(_f32(5, 1), _f32(1, 1), 3.0), (_f32(1, 2, 3), _f32(1, 1, 1), 3.5), (_f32(1, 2), _f32(1, 2), 99.0)],
    "leading_negative_step": [(0, 3), (1, 3), (7, 3), (8, 100), (9, -1), (6, 5)],
    "after_sum": [(0, 3), (1, -1), (5, 3), (4, 5), (5, 100)],
    "after_static_trip": [(_f32(5, 1, 2, 1), 2.5), (_f32(0, 0, 0, 9), 2.5), (_f32(1, 2, 3, 4), 99.0)],
    "after_target": [(0, 3), (1, -1), (5, 3), (4, 5), (5, 100)],
    "after_else": [(_f32(5, 1, 2), 2.5), (_f32(1, 2, 9), 12.5), (_f32(1, 2, 3), 9.0), (_f32(1, 2, 9), 2.5)],
    "after_return": [(_f32(5, 1, 2), 2.5), (_f32(1, 2, 9), 9.5), (_f32(1, 2, 3), 9.0)],
    "python_loop": [(np.float32(2.0), 0), (np.float32(2.0), 3), (np.float32(2.0), 11), (np.float32(2.0), 50)],
    "python_search": [(np.float32(2.0), -1), (np.float32(2.0), 3), (np.float32(2.0), 80), (np.float32(2.0), 81)],
    "python_return": [(np.float32(2.0), -1), (np.float32(2.0), 3), (np.float32(2.0), 44), (np.float32(2.0), 45)],
}


@pytest.fixture(scope="module")
def item_tests(tmp_path_factory):
    folder = tmp_path_factory.mktemp("item_tests")
    source = folder / "item_tests.py"
    source.write_text(ITEM_TESTS)
    converted = folder / "item_tests_standalone.py"
    options = Options(all=True, standalone=True, static=("m",))
    converted.write_text(convert_source(ITEM_TESTS, str(source), options).text)
    return load(source, "item_tests"), load(converted, "item_tests_standalone"), converted.read_text()


@pytest.mark.parametrize("name", sorted(ITEM_TEST_INPUTS))
def test_item_tests_agree_with_python_and_the_runtime(item_tests, name):
    original, standalone, _ = item_tests
    static = ("m",) if name.startswith("python_") else ()
    for args in ITEM_TEST_INPUTS[name]:
        expected = getattr(original, name)(*args)
        assert_close(expected, jax.jit(getattr(standalone, name), static_argnames=static)(*args))
        assert_close(expected, autolax.jit(getattr(original, name), static_argnames=static)(*args))


def test_item_tests_are_the_loops_predicate(item_tests):
    """No exit flag is carried: the test is in the while loop's predicate, as the runtime
    stages it; the Python loop gets its `if c: break` back where the user wrote it."""
    _, standalone, text = item_tests
    assert "exit_ = False" not in text and "break_ = False" not in text
    assert "jnp.logical_and(index < len(xs), jnp.logical_not(x > level))" in text
    assert "jnp.logical_and(i < n, jnp.logical_or(i == 0, jnp.logical_not(total > limit)))" in text
    assert text.count("        if i >= m:\n            break\n") == 1
    assert text.count("        if total > m:\n            break\n") == 1
    # the exit's work and the loop's `else` where the user wrote them
    assert "        if k * k > m:\n            found = k\n            break\n    else:\n        found = 99\n" in text
    assert "        if total > m:\n            retval = x * k\n            break\n    else:\n        retval = x * total\n" in text
    xs, t = jnp.array([0.5, 1.0, 3.0]), jnp.float32(2.0)
    assert "custom_jvp_call" in str(jax.make_jaxpr(standalone.leading_sum)(xs, t))  # plan.EARLY_EXIT
    jaxpr = str(jax.make_jaxpr(standalone.after_sum)(3, 4))  # plan.WHILE: nothing to differentiate
    assert "while[" in jaxpr and "custom_jvp_call" not in jaxpr


@pytest.mark.parametrize("name", ["leading_sum", "after_static_trip", "after_else"])
def test_item_test_gradients_equal_the_decorators(item_tests, name):
    original, standalone, _ = item_tests
    for args in ITEM_TEST_INPUTS[name]:
        args = [jnp.asarray(a) for a in args]
        loss = (lambda f: lambda *a: jnp.sum(jax.tree_util.tree_leaves(f(*a))[0]))
        expected = jax.grad(loss(autolax.jit(getattr(original, name))), argnums=(0, 1))(*args)
        got = jax.jit(jax.grad(loss(getattr(standalone, name)), argnums=(0, 1)))(*args)
        assert_close(expected, got)


def test_an_early_return_of_the_loop_target():
    """Refused before (the target was carried, first assigned in the loop): the call gives
    the item it stopped at, read only where the exit proves it bound."""
    source = "import autolax\n\n\n@autolax.jit\ndef f(xs):\n    for x in xs:\n        if x > 0:\n            return x\n    return 0.0\n"
    text = convert_source(source, "ret.py", Options(standalone=True)).text
    namespace = {}
    exec(compile(text, "ret.py", "exec"), namespace)
    for xs in ([-1.0, 2.0, 3.0], [-1.0, -2.0], [5.0], [-1.0, 4.0]):
        expected = next((x for x in xs if x > 0), 0.0)
        assert_close(np.float32(expected), namespace["f"](jnp.array(xs, jnp.float32)))


CALL_EFFECTS = {
    # A function of the file that changes the list it is handed, called in a staged loop.
    "loop": ("""\
        def push(lst, v):
            lst.append(v)


        def f(x, n):
            out = [0.0]
            total = 0.0
            for i in range(n):
                push(out, x * i)
                total = total + out[-1]
            return total, len(out)
        """, (1.5, 3), ("'out', a list", "is changed by a function called inside the `for` loop at")),
    # ... or the dict it is handed, under a traced `if`.
    "if": ("""\
        def scale(d, k):
            d["a"] = d["a"] * k


        def f(x):
            d = {"a": 1.0}
            if x > 0:
                scale(d, 2.0)
            return d["a"] + x
        """, (2.0,), ("'d', a dict", "is changed by a function called inside the `if` at")),
}


@pytest.mark.parametrize("name", sorted(CALL_EFFECTS))
def test_call_changing_a_container_from_outside_the_staged_code_is_refused(tmp_path, name):
    source, args, (target, text) = CALL_EFFECTS[name]
    runtime, standalone = _runtime_and_standalone(tmp_path, source, *args)
    assert runtime.code == standalone.code == "call-effect"
    for error in (runtime, standalone):  # (the runtime also shows the items: `'out', a list ([0.0]),`)
        assert target in str(error)
        assert text in str(error)
    assert "Fix: change it in the statement itself" in str(standalone)


def test_call_changing_a_list_the_staged_body_made_converts(tmp_path):
    source = textwrap.dedent("""\
        import jax.numpy as jnp


        def push(lst, v):
            lst.append(v)


        def f(x, n):
            total = 0.0
            for i in range(n):
                row = [x]
                push(row, x * i)
                total = total + row[-1]
            return total
        """)
    original, standalone, text = _file_and_standalone(tmp_path, "own_list", source)
    assert "fori_loop" in text
    assert_close(jax.jit(standalone.f)(1.5, 3), original.f(1.5, 3))


def test_del_in_a_python_loop_raises_on_the_second_iteration_as_python(tmp_path):
    # Fuzzer seed 4644 (reduced): the second `del r` of the inner loop raises
    # UnboundLocalError; the output ran `r = r` only, the `del` dropped (the analysis took
    # 'r' for unbound at the loop's head).
    source = textwrap.dedent("""\
        import jax.numpy as jnp


        def f(n, ys):
            r = n
            items = [1.0]
            for h in ys:
                for j in ys:
                    del r
                    items.insert(0, 2.0)
            return items
        """)
    original, standalone, _ = _file_and_standalone(tmp_path, "del_twice", source)
    for ys in ([1, 2], [1, 2, 3]):
        with pytest.raises(UnboundLocalError):
            original.f(3, np.array(ys))
        with pytest.raises(UnboundLocalError):
            standalone.f(3, np.array(ys))
    assert original.f(3, np.array([7])) == standalone.f(3, np.array([7])) == [2.0, 1.0]


# ----------------------------------------------------------------------------- try
def _python_and_standalone(tmp_path, source, name, **options):
    """(the original module, its --standalone conversion), both imported from files; the
    conversion must convert every function (no warning that one is left as it is)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import jax\nimport jax.numpy as jnp\n\n\n" + textwrap.dedent(source))
    result = convert_source(path.read_text(), str(path), Options(all=True, standalone=True, **options))
    assert not [w for w in result.warnings if "is left as it is" in w], result.warnings
    text = result.text
    assert "import autolax" not in text and "from autolax" not in text
    out = tmp_path / f"{name}_standalone.py"
    out.write_text(text)
    return load(path, name), load(out, f"{name}_standalone"), text


def _same_outcome(python_fn, converted_fn, args, capfd):
    """Calls both on ``args``: the same value (or exception type) and the same printed text."""
    capfd.readouterr()
    try:
        expected, expected_error = python_fn(*args), None
    except Exception as exc:  # noqa: BLE001 -- the exception type is what is compared
        expected, expected_error = None, type(exc)
    printed = capfd.readouterr().out
    if expected_error is None:
        assert_close(expected, converted_fn(*args))
    else:
        with pytest.raises(expected_error):
            jax.block_until_ready(converted_fn(*args))
    jax.effects_barrier()
    assert capfd.readouterr().out == printed


TRY = '''\
def f(xs, t):
    total = 0.0
    try:
        for x in xs:
            total += x * t
        if total > t:
            total = total - 1.0
        if len(xs) > 3:
            raise ValueError("too long")
    except ValueError:
        total = -total
    return total
'''


def test_a_try_around_staged_code_keeps_only_the_users_handlers(tmp_path, capfd):
    # Fuzzer seeds 12, 30, 49: the front end's `except ops.AutolaxError: raise` (autolax's
    # errors pass the user's handlers) made --standalone leave the function as it is; the
    # output raises no autolax error, so the clause is dropped.
    original, standalone, text = _python_and_standalone(tmp_path, TRY, "tries")
    assert "AutolaxError" not in text and "except ValueError:" in text and "jax.lax.scan" in text
    for fn in (standalone.f, jax.jit(standalone.f)):
        for xs in (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0, 3.0, 4.0], np.float32)):
            for t in (np.float32(0.5), np.float32(9.0)):
                _same_outcome(original.f, fn, (xs, t), capfd)


# ----------------------------------------------------------------------------- last values
LAST_VALUES = '''\
def doubled_last(xs):
    total = 0.0
    for x in xs:
        total = total + x
        y = x * 2
    return y + total


def last_item(xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + x * y
    return x - y, total


def last_of_enumerate(xs):
    total = 0.0
    for k, x in enumerate(xs, 1):
        total = total + x
        z = x - total if total > 2.0 else total - x
    return z * total, x

'''


def test_a_variable_first_assigned_in_a_staged_loop_keeps_its_last_value(tmp_path, capfd):
    # Fuzzer seeds 41, 50: --standalone had no type to carry it from before the loop; its
    # value after the loop is collected from each iteration (a scan output), the last one
    # taken, and an empty loop leaves it unbound, as Python does (UnboundLocalError).
    original, standalone, text = _python_and_standalone(tmp_path, LAST_VALUES, "last_values")
    assert "y_values = jax.lax.scan(" in text and "if len(y_values) > 0:\n        y = y_values[-1]" in text
    assert "k_values" not in text  # enumerate's count is not collected (not read after the loop)
    xs, ys = np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 2.0, -1.0], np.float32)
    empty = np.zeros((0,), np.float32)
    cases = {
        "doubled_last": [(xs,), (empty,)],
        "last_item": [(xs, ys), (empty, empty)],
        "last_of_enumerate": [(xs,), (np.array([0.5, 0.25], np.float32),), (empty,)],
    }
    for name, arg_sets in cases.items():
        converted = getattr(standalone, name)
        for fn in (converted, jax.jit(converted)):
            for args in arg_sets:
                _same_outcome(getattr(original, name), fn, args, capfd)


@pytest.mark.parametrize("source", [
    # A count of the loop (a Python int in Python, which `coef[i]` may use as one) that the
    # body computes with (the loop's own target is read from the sequence: LOOP_TARGETS).
    "def f(xs):\n    coef = [1.0, 2.0, 3.0]\n    s = xs\n    for i in range(2):\n        s = s * 2\n        j = i\n    return coef[j] * s\n",
    "def f(xs):\n    s = 0.0\n    for k, x in enumerate(xs):\n        s = s + x\n        k = k + 1\n    return k + s\n",
    # A Python value in each iteration.
    "def f(xs):\n    s = xs\n    for x in xs:\n        s = s * 2\n        k = 1\n    return [1.0, 2.0][k] * s\n",
    # Assigned in some iterations only, or read before it is assigned.
    "def f(xs):\n    s = 0.0\n    for x in xs:\n        s = s + x\n        if s > 1:\n            y = s\n    return y\n",
])
def test_a_last_value_that_may_be_a_python_value_or_not_assigned_is_still_refused(source):
    with pytest.raises(ConversionError) as info:
        convert_source(source, "m.py", Options(only=("f",), standalone=True))
    assert info.value.code in ("standalone-first-assigned", "if-one-sided")


LOOP_TARGETS = '''\
def counts(xs):
    coef = [1.0, 2.0, 3.0]
    s = xs
    for i in range(2):
        s = s * 2
    return coef[i] * s, i


def counted_down(xs):
    s = 0.0
    for i in range(3, 0, -2):
        s = s + xs[i]
    return s, i


def below_length(xs):
    s = 0.0
    for i in range(len(xs) - 1):
        s = s + xs[i]
    return s, i


def enumerated(xs):
    coef = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    s = 0.0
    for l, x in enumerate(xs, 1):
        s = s + x * l
    return s, coef[l], x


def enumerated_pairs(xs, ys):
    s = 0.0
    for k, (a, b) in enumerate(zip(xs, ys)):
        s = s + a * b
    return s + k, a - b


def rows(m):
    s = 0.0
    for a, b in m:
        s = s + a * b
    return s, a, b


def with_else(xs, n):
    s = 0.0
    for h in xs:
        s = s + h
    else:
        h = h + n
    return s, h


def reassigned(xs):
    s = 0.0
    for h in xs:
        s = s + h
        h = h * 2
    return s, h


def python_list(a, b):
    hs = [a, b]
    s = 0.0
    for h in hs:
        s = s + h
    return s, h


def in_a_try(xs, t):
    s = 0.0
    try:
        for h in xs:
            s = s + h * t
        if len(xs) > 3:
            raise ValueError("long")
    except ValueError:
        s = -s
    return s, h
'''


def test_a_loops_own_target_read_after_it_is_the_last_item(tmp_path, capfd):
    # Fuzzer seeds 15, 41, 50, 97, 164 ...: the loop's target, first assigned by a staged
    # `for` and read after it, was refused (no type before the loop), and a count (`range`'s
    # index, `enumerate`'s count) could not be collected as an array where Python has an int.
    # The code after the loop reads the last item from the sequence; an empty one leaves the
    # target unbound (UnboundLocalError), as in Python.
    original, standalone, text = _python_and_standalone(tmp_path, LOOP_TARGETS, "loop_targets")
    for line in ("    i = 1\n", "    i = 1\n    return s, i", "    if len(range(len(xs) - 1)) > 0:\n        i = range(len(xs) - 1)[-1]",
                 "    if len(xs) > 0:\n        l = len(xs)\n        x = xs[-1]",
                 "    if min(len(xs), len(ys)) > 0:\n        k = min(len(xs), len(ys)) - 1",
                 "    if len(m) > 0:\n        a = m[-1][0]\n        b = m[-1][1]",
                 "    if len(xs) > 0:\n        h = xs[-1]\n    h = h + n",
                 "        if len(xs) > 0:\n            h = xs[-1]\n        if len(xs) > 3:"):
        assert line in text
    assert "h_values = jax.lax.scan(" in text  # reassigned in the body: collected
    assert "for h in hs:" in text  # a Python loop binds its target itself
    xs, ys = jnp.array([1.0, -2.0, 3.0, 0.5], jnp.float32), jnp.array([0.5, 2.0, -1.0, 4.0], jnp.float32)
    empty = jnp.zeros((0,), jnp.float32)
    cases = {
        "counts": [(xs,)],
        "counted_down": [(xs,)],
        "below_length": [(xs,), (xs[:1],)],
        "enumerated": [(xs,), (xs[:2],), (empty,)],
        "enumerated_pairs": [(xs, ys), (empty, empty)],
        "rows": [(jnp.ones((3, 2), jnp.float32),), (jnp.zeros((0, 2), jnp.float32),)],
        "with_else": [(xs, jnp.float32(3.0)), (empty, jnp.float32(3.0))],
        "reassigned": [(xs,), (empty,)],
        "python_list": [(jnp.float32(1.0), jnp.float32(2.0))],
        "in_a_try": [(xs, jnp.float32(1.0)), (xs[:2], jnp.float32(9.0)), (empty, jnp.float32(1.0))],
    }
    for name, arg_sets in cases.items():
        converted = getattr(standalone, name)
        for args in arg_sets:
            _same_outcome(getattr(original, name), converted, args, capfd)
            _same_outcome(getattr(original, name), jax.jit(converted), args, capfd)
    # Counts stay Python ints, as in Python (a list index, an int result).
    assert type(standalone.counts(xs)[1]) is int and type(standalone.enumerated(xs[:2])[1]) is float


@pytest.mark.parametrize(("source", "name"), [
    # The range's bound is traced: whether the loop ran is not known when traced.
    ("def f(xs, n):\n    s = 0.0\n    for i in range(n):\n        s = s + xs[i]\n    return s, i\n", "i"),
    # The loop changes the array it runs over: the count cannot be read from it after the
    # loop, nor collected (an array where Python has an int).
    ("def f(xs):\n    s = 0.0\n    for k, x in enumerate(xs):\n        s = s + x\n        xs = xs * 2\n    return s, k\n",
     "k"),
    # In a staged branch: with `xs` empty, `if len(xs) > 0: x = xs[-1]` would leave `x` unbound
    # while tracing the branch, also where Python does not take it.
    ("def f(xs, t):\n    s = 0.0\n    if t > 0:\n        for x in xs:\n            s = s + x\n        s = s - x\n    return s\n",
     "x:4"),
    # A range of literals in a staged branch too: converting the branch traces code Python may
    # not run, which --standalone cannot stage as failing only when taken (fuzzer seed 3225:
    # a `pop` of an emptied list further in that branch raised while tracing).
    ("def f(xs, t):\n    s = 0.0\n    if t > 0:\n        for i in range(3):\n            s = s + xs[i]\n        s = s * i\n"
     "    return s\n", "i:4"),
])
def test_a_loop_target_whose_last_value_is_not_known_is_still_refused(source, name):
    name, _, line = name.partition(":")  # "x:4": the loop is on line 4
    with pytest.raises(ConversionError) as info:
        convert_source(source, "m.py", Options(only=("f",), standalone=True))
    assert f"'{name}' is first assigned inside the `for` loop at m.py:{line or 3}, which is staged, and used after it" \
        in str(info.value)


def test_a_range_bound_to_a_name(tmp_path, capfd):
    # Fuzzer seeds 108, 124: `r = range(...)` became `ops.range(...)`, which --standalone
    # refused; with Python bounds it is the builtin range (traced bounds: still refused).
    source = '''\
def f(xs, n):
    steps = range(len(xs) - 1)
    total = 0.0
    for i in steps:
        total = total + xs[i] * n
    return total, len(steps)
'''
    original, standalone, text = _python_and_standalone(tmp_path, source, "ranges")
    assert "steps = range(len(xs) - 1)" in text
    for fn in (standalone.f, jax.jit(standalone.f)):
        for xs in (np.array([1.0, 2.0, 3.0], np.float32), np.array([4.0], np.float32)):
            _same_outcome(original.f, fn, (xs, np.float32(1.5)), capfd)
    with pytest.raises(ConversionError) as info:
        convert_source("def g(xs, n):\n    r = range(n)\n    t = 0.0\n    for i in r:\n        t = t + i\n    return t\n",
                       "m.py", Options(only=("g",), standalone=True))
    assert "ops.range (a range with traced bounds)" in str(info.value)


# ----------------------------------------------------------------------------- raise / assert
RAISES = '''\
def checked(x, xs):
    y = x * 2
    if y > 3:
        raise ValueError("too large")
    assert x > -5, "x too small"
    print("checked", y)
    return y + xs[0]


def fails_while_traced(x, xs):
    if x > 3:
        raise ValueError("too large")
    return [x, xs][5]
'''


def test_a_raise_or_assert_under_a_traced_condition_is_checked_when_the_program_runs(tmp_path, capfd, caplog):
    # Fuzzer seeds 54, 87: `raise` / `assert` under a traced condition among the function's
    # own statements: the rest of the function runs in `with raise_if(...)`, whose host
    # callback raises the error when the program runs and the condition holds.
    original, standalone, text = _python_and_standalone(tmp_path, RAISES, "raises")
    assert "with raise_if(y > 3, lambda: ValueError('too large'), " in text and "jax.debug.callback(check, pred, partitioned=jax.process_count() > 1)" in text
    xs = np.array([1.0, 2.0], np.float32)
    for x in (1.0, 2.0, -6.0):
        _same_outcome(original.checked, standalone.checked, (np.float32(x), xs), capfd)  # eagerly: Python's error
    jitted = jax.jit(standalone.checked)
    assert_close(jitted(np.float32(1.0), xs), original.checked(np.float32(1.0), xs))
    caplog.clear()
    for x, error in ((2.0, "ValueError: too large"), (-6.0, "AssertionError: x too small")):
        with pytest.raises(jax.errors.JaxRuntimeError) as info:
            jax.block_until_ready(jitted(np.float32(x), xs))
        assert error in str(info.value) and "autolax convert --standalone" in str(info.value)
    # The error reaches the caller; JAX's log of the failed callback (a traceback) is dropped.
    assert not [r for r in caplog.records if r.name == "jax._src.debugging"]
    assert any(eqn.primitive.name == "debug_callback" for eqn in jax.make_jaxpr(standalone.checked)(1.0, xs).eqns)
    # Tracing stops at an error after the check: Python raises the check's error first where
    # its condition holds, which only the running program knows -- an error that says so.
    with pytest.raises(IndexError):
        original.fails_while_traced(np.float32(1.0), xs)
    with pytest.raises(RuntimeError, match="autolax convert --standalone: tracing stopped at IndexError"):
        jax.jit(standalone.fails_while_traced)(np.float32(1.0), xs)


def test_traced_and_inside_a_try_with_finally_is_converted(tmp_path):
    # The runtime's `caught_by=(ops.FinallyRaises,)` on `ops.and_` / `ops.cond` inside a `try`
    # with a `finally` is only for staged errors, which --standalone does not stage: it drops
    # the argument instead of refusing the function (fuzzer seed 37).
    path = tmp_path / "guarded.py"
    path.write_text(textwrap.dedent("""\
        import jax.numpy as jnp


        def f(a, b):
            total = 0.0
            try:
                if a > 0 and b > 0:
                    total = a + b
            finally:
                total = total * 2
            return total
        """))
    out = tmp_path / "guarded_sa.py"
    out.write_text(convert_source(path.read_text(), str(path), Options(all=True, standalone=True)).text)
    assert "caught_by" not in out.read_text() and "FinallyRaises" not in out.read_text()
    original, converted = load(path, "guarded"), load(out, "guarded_sa")
    for a, b in [(1.0, 2.0), (1.0, -2.0), (-1.0, 2.0)]:
        assert_close(original.f(a, b), jax.jit(converted.f)(a, b))


def test_a_return_in_a_handler_of_a_type_not_known_is_not_left_unbound(tmp_path):
    # Fuzzer seed 2464 (reduced): the early `return` sits in an `except` handler that does not
    # run; the jumping side's zeros were made inside the handler only, and the output read the
    # return value unbound after the `try` (UnboundLocalError where Python returns).
    source = textwrap.dedent("""\
        def f(a, xs):
            try:
                y = xs[0] * 2
            except ValueError:
                if a > 0:
                    return a, xs
                y = 1.0
            return y, xs
        """)
    original, standalone, _ = _file_and_standalone(tmp_path, "handler_return", source)
    xs = np.array([1.5, 2.0, 3.0], np.float32)
    for a in (1.0, -1.0):
        assert_close(original.f(a, xs), jax.jit(standalone.f)(a, xs))


def test_a_return_value_given_a_zero_in_a_handler_that_did_not_run_is_not_read_after_the_try(tmp_path):
    # Fuzzer seed 7374 (reduced): the staged loop in the `except` handler gave the return value
    # a zero before it, in the handler; the handler does not run, and the output read the
    # return value unbound after the `try` (UnboundLocalError where Python returns 2). What a
    # handler binds may be unbound after the `try`: --standalone refuses the function, which
    # --all leaves as it is (and plain jax.jit runs, the handler not running).
    source = textwrap.dedent("""\
        def f(a, xs):
            try:
                t = 1.5
            except ValueError:
                for x in xs:
                    if a > 0:
                        return 1
            return 2
        """)
    with pytest.raises(ConversionError) as info:
        convert_source(source, "refused.py", Options(only=("f",), standalone=True))
    assert "the return value has a value on only one path through the `if` at refused.py:8" in str(info.value)
    assert "an exception a handler caught" in str(info.value)
    original, standalone, _ = _file_and_standalone(tmp_path, "handler_zero", source)
    xs = np.array([1.5, 2.0, 3.0], np.float32)
    for a in (1.0, -1.0):
        assert_close(original.f(a, xs), jax.jit(standalone.f)(a, xs))


def test_a_loop_target_read_from_its_sequence_under_an_if_may_be_unbound_after_it(tmp_path):
    # Fuzzer seed 8259 (reduced, `n` static): `for i in range(n)` staged, then
    # `if len(range(n)) > 0: i = range(n)[-1]` (last_values); the scope took `i` as bound after
    # that Python `if`, so the later operand of a traced `or` -- which Python does not evaluate
    # when the first is true -- read it unbound with n = 0 (UnboundLocalError where Python
    # returns True). A name one side of a Python `if` binds may be unbound after it: the read
    # in the operand, which the output evaluates whatever the first, is refused (in the words
    # of the function as the front end wrote it, where the loop leaves `i` unbound).
    source = textwrap.dedent("""\
        def f(a, n, xs):
            for i in range(n):
                a = a + xs[i]
            return a > 0 or i > 0
        """)
    options = Options(only=("f",), standalone=True, static=("f.n",))
    with pytest.raises(ConversionError) as info:
        convert_source(source, "refused.py", options)
    assert info.value.code == "operand-fails"
    assert "the operand after `or` at refused.py:4 raised UnboundLocalError: cannot access local variable 'i'" \
        in str(info.value)
    path = tmp_path / "last_item.py"
    path.write_text(source)
    assert load(path, "last_item").f(1.0, 0, np.zeros(3, np.float32)) is True


def test_a_last_value_of_a_loop_that_may_not_run_is_not_read_in_a_staged_branch(tmp_path, capfd):
    # Fuzzer seed 9934 (reduced): `k` is first assigned in a loop of static trip count, so
    # after it `if len(k_values) > 0: k = k_values[-1]`; with n == 0 that leaves `k` unbound,
    # and the staged branch that reads it (which Python does not take) raised NameError while
    # traced where Python returns. --standalone refuses the read, as the runtime stages it.
    source = textwrap.dedent("""\
        def f(x, n, ys):
            for j in range(n):
                k = 0
                while k < 2:
                    k += 1
                    ys = ys + k
            if x > 100:
                x = x + k
            return x, ys
        """)
    result = convert_source(source, "m.py", Options(all=True, standalone=True, static=("n",)))
    assert [w for w in result.warnings if "'f' is left as it is" in w and "a read of 'k' in a staged body, where "
            "Python may find it unbound" in w], result.warnings
    path = tmp_path / "last_value_unbound.py"
    path.write_text(source)
    original = load(path, "last_value_unbound")
    out = tmp_path / "last_value_unbound_standalone.py"
    out.write_text(result.text)
    left = load(out, "last_value_unbound_standalone")
    ys = np.array([1.0, 2.0], np.float32)
    for x, n in ((np.float32(1.0), 0), (np.float32(1.0), 2), (np.float32(200.0), 2)):
        _same_outcome(original.f, left.f, (x, n, ys), capfd)  # left as it is: Python's outcome


def test_a_flag_a_handler_sets_stays_traced_after_the_try(tmp_path):
    # Fuzzer seed 9808 (reduced): after the `try`, the lowering took the names to hold what
    # the handler left (`break_ = True`, a Python bool) and wrote `if not break_:` on the
    # loop's traced flag (TracerBoolConversionError where Python returns).
    source = '''\
def f(a, n, xs, ys):
    c = ys[0]
    if n < 1:
        for y in xs:
            try:
                ys[(c - n) % 4] += ys.sum()
            except ValueError:
                break
            for h in ys:
                c = abs(h) - ys.sum()
    return ys, c
'''
    original, standalone, text = _python_and_standalone(tmp_path, source, "handler_flag")
    assert "if not break_" not in text.split("def f(")[-1]
    xs = np.array([3.5, -1.5, -4.0], np.float32)
    for n in (0, 2):
        ys = np.array([-1, -1, -1, 5], np.int32)
        expected = original.f(np.float32(1.5), np.int32(n), xs, ys.copy())  # (changes its `ys` in place)
        assert_close(expected, jax.jit(standalone.f)(np.float32(1.5), np.int32(n), xs, ys.copy()))


ZIP_LENGTHS = '''\
def dot(xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + x * y
    return total


def nested(xs, ys, zs):
    total = 0.0
    for k, (a, (b, c)) in enumerate(zip(xs, zip(ys, zs))):
        total = total + a * b - c * k
    return total


def last_pair(xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + x * y
    return x - y, total


def stops(xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + x * y
        if total > 4.0:
            break
    return total
'''


def test_zip_of_arrays_of_different_lengths_stops_at_the_shortest(tmp_path, capfd):
    # `lax.scan` takes xs of one length; Python's zip stops at the shortest argument (as the
    # runtime does). --standalone used to pass the arrays as they were, and JAX refused.
    original, standalone, text = _python_and_standalone(tmp_path, ZIP_LENGTHS, "zip_lengths")
    assert "(xs[:len(ys)], ys[:len(xs)])" in text
    # (JAX arrays: eager standalone code indexes its sequences with a traced index, which a
    # NumPy array refuses -- README, Known limitations.)
    a, b, c = (jnp.arange(n, dtype=jnp.float32) + 1 for n in (3, 5, 4))
    for name, arg_sets in {"dot": [(a, b), (b, a), (a, a)], "nested": [(a, b, c), (b, c, a), (c, a, b)],
                           "last_pair": [(a, b), (b, a), (b, c)], "stops": [(a, b), (b, c), (c, a)]}.items():
        for fn in (getattr(standalone, name), jax.jit(getattr(standalone, name))):
            for args in arg_sets:
                _same_outcome(getattr(original, name), fn, args, capfd)


# ----------------------------------------------------------------------------- untaken code (plan.select_safe, plan.evaluate_anyway)
# Whether an `if`'s untaken branch, or the operand after a traced `and` / `or`, may run anyway
# is decided by `autolax.plan` for both paths: the runtime hands it the primitives of the
# jaxpr, --standalone those `sourcegen.standalone.primitives` finds in the code.
UNTAKEN = '''\
import jax.numpy as jnp


def accumulate(x: float, t: float):
    total = 0.0
    if x > t:
        total += x * x
    return total


def counted(x: float, n: int):
    count = 0
    if x > 0:
        count += n * 2
        count = count - 1
    else:
        count = n
    return count


def mixed(x: float, flag: bool, k: int):
    if flag:
        y = k + 1
        z = x < k
    else:
        y = x * 2
        z = flag
    return y, z


def ratio_above(x: float, y: float):
    return x > 1 and x / y > 1


def five_ops(x: float, t: float):
    total = 0.0
    if x > t:
        total = total + x * x + x * x + x
    return total


def on_arrays(xs, t: float):
    if t > 0:
        xs = xs * 2
    return xs


def divides(x: float, y: float):
    r = x
    if y != 0:
        r = x / y
    return r


def number_beside_int(x: "Float[Array, '']", i: "Int[Array, '']", b: "Bool[Array, '']"):
    z = b
    if i > 2:
        z = x < i
        w = 1.5
    else:
        w = i * i
    return z, w


def scaled_and(a: float, b: float):
    return a * 2 and b / a


def nested(x: float, t: float):
    total = 0.0
    if x > t:
        if x > 2 * t:
            total += x * x
    return total
'''

UNTAKEN_INPUTS = {  # (the Python numbers the annotations declare)
    "accumulate": [(3.0, 1.0), (0.5, 1.0), (-2.0, -3.0)],
    "counted": [(1.0, 5), (-1.0, 5), (0.0, -3)],
    "mixed": [(1.5, True, 2), (1.5, False, 2), (-1.5, True, 3)],
    "ratio_above": [(3.0, 2.0), (0.5, 0.0), (3.0, 4.0)],
    "five_ops": [(3.0, 1.0), (0.5, 1.0)],
    "on_arrays": [(np.arange(3, dtype=np.float32), 1.0), (np.arange(3, dtype=np.float32), -1.0)],
    "divides": [(3.0, 2.0), (3.0, 0.0)],
    "number_beside_int": [(np.float32(1.5), np.int32(3), np.bool_(True)), (np.float32(-1.5), np.int32(1), np.bool_(False))],
    "scaled_and": [(0.0, 3.0), (2.0, 3.0), (-1.5, 0.0)],
    "nested": [(3.0, 1.0), (1.5, 1.0), (0.5, 1.0)],
}


@pytest.fixture(scope="module")
def untaken(tmp_path_factory):
    return _file_and_standalone(tmp_path_factory.mktemp("untaken"), "untaken", UNTAKEN)


def _agrees_with_python_and_the_runtimes_dtypes(untaken, name, weak=True):
    """Python's values on every input, under x64 and not, of the runtime's dtypes (and weak
    types, with ``weak``: a boolean's weak type changes no promotion)."""
    original, standalone, _ = untaken
    for x64 in (False, True):
        with jax.enable_x64(x64):
            for args in UNTAKEN_INPUTS[name]:
                expected = getattr(original, name)(*args)
                got = jax.jit(getattr(standalone, name))(*args)
                runtime = autolax.jit(getattr(original, name))(*args)
                assert_close(expected, got)
                types = [(jnp.result_type(g), weak and g.weak_type) for g in jax.tree.leaves(got)]
                assert types == [(jnp.result_type(r), weak and r.weak_type) for r in jax.tree.leaves(runtime)], \
                    (name, args, x64)


def test_a_branch_of_cheap_scalar_arithmetic_is_a_select_in_both_paths(untaken):
    original, _, text = untaken
    assert "total = jnp.where(x > t, total + x * x, total)" in text
    assert "count = jnp.where(x > 0, count + n * 2 - 1, n)" in text
    assert "y, z = (jnp.asarray(jnp.where(flag, k + 1, x * 2), dtype=float), jnp.where(flag, x < k, flag))" in text
    jaxpr = str(jax.make_jaxpr(autolax.jit(original.accumulate))(3.0, 1.0))
    assert "select_n" in jaxpr and "cond[" not in jaxpr
    # A Python float beside an int32: a float32 (float64 under x64) array, as the runtime's select.
    assert "w = (jnp.where(i > 2, x < i, z), jnp.asarray(jnp.where(i > 2, 1.5, i * i), dtype=float))" in text
    for name in ("accumulate", "counted", "mixed", "number_beside_int"):
        _agrees_with_python_and_the_runtimes_dtypes(untaken, name)


def test_what_may_fail_or_costs_more_than_a_cond_stays_a_cond_in_both_paths(untaken):
    original, _, text = untaken
    # The operand after `and` divides: it runs only where Python runs it.
    assert "jax.lax.cond(x > 1, lambda: x / y > 1, lambda: False)" in text
    assert "logical_and" not in text
    # A number (not a bool) `and` whose later operand divides: Python's value under lax.cond.
    assert "jax.lax.cond((operand := (a * 2)) != 0, lambda: b / a, lambda: operand)" in text
    # Arithmetic in a branch of another staged `if`: a cond (cheaper there on XLA's CPU backend).
    for name in ("ratio_above", "five_ops", "on_arrays", "divides", "scaled_and", "nested"):
        values = UNTAKEN_INPUTS[name][0]
        source = text[text.index(f"def {name}("):]
        source = source.split("\n\n\ndef ")[0]
        assert "cond(" in source and "jnp.where" not in source, name
        jaxpr = str(jax.make_jaxpr(autolax.jit(getattr(original, name)))(*values))
        assert "cond[" in jaxpr, name
        _agrees_with_python_and_the_runtimes_dtypes(untaken, name, weak=name != "ratio_above")


@pytest.mark.parametrize("source, line", [
    # a module-level assignment would replace the helper the file defines after its imports
    ("import jax\npromoting_cond = 3\n\n\ndef f(x, y):\n    if x > y:\n        z = x\n    else:\n        z = y\n"
     "    return z\n", 2),
    ("def g(x):\n    assert x > 0\n    return x\n\n\nraise_if = None\n", 6),
    # a local of the converted function would hide it from the function
    ("def g(x):\n    raise_if = 2\n    assert x > 0\n    return x + raise_if\n", 2),
])
def test_a_name_the_user_binds_is_not_taken_for_a_helper(source, line):
    with pytest.raises(ConversionError, match="the name of a helper") as info:
        convert_source(source, "m.py", Options(standalone=True, all=True))
    assert f"m.py:{line}:" in str(info.value)


def test_recursion_in_a_staged_body_is_refused_up_front(tmp_path):
    """--standalone: a function of the file calling itself (directly or through another) in
    a staged branch or loop body recursed without end under jax.jit (RecursionError, or a
    crash); it is the runtime's TracedRecursionError words, at conversion."""
    source = ("def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n\n\n"
              "def is_even(n):\n    if n == 0:\n        return True\n    return is_odd(n - 1)\n\n\n"
              "def is_odd(n):\n    if n == 0:\n        return False\n    return is_even(n - 1)\n")
    for name, line in (("fact", 4), ("is_even", 10), ("is_odd", 16)):
        with pytest.raises(ConversionError, match=f"'{name}' calls itself") as info:
            convert_source(source, "m.py", Options(standalone=True, only=(name,)))
        assert f"m.py:{line}:" in str(info.value)
    # a static argument decides the recursion in Python: converted, and it runs
    namespace = standalone_module(source, all=True, static=("n",))
    assert namespace["fact"](5) == 120 and namespace["is_even"](5) is False


@pytest.mark.parametrize("source, call", [
    ("def f(x):\n    if x > 0:\n        r = 'a'\n    else:\n        r = 'b'\n    return r\n", "ops.cond"),
    ("def f(x):\n    return 'a' if x > 0 else 'b'\n", "ops.if_else"),
    ("def f(x):\n    s = 'run'\n    while x < 10:\n        x = x + 1\n        s = 'done'\n    return s, x\n",
     "ops.while_loop"),
    ("def f(x):\n    s = 'run'\n    for i in range(3):\n        x = x + 1\n        s = 'done'\n    return s, x\n",
     "ops.for_range"),
])
def test_a_string_given_by_a_staged_statement_is_refused(source, call):
    """lax carries arrays only: the output raised JAX's TypeError ("not a valid JAX type")
    where the runtime raises StateMismatchError (or keeps a string both sides give equal)."""
    with pytest.raises(ConversionError, match=f"{call}.*string.*drop --standalone"):
        convert_source(source, "m.py", Options(standalone=True, only=("f",)))


def test_strings_used_as_python_values_still_convert():
    source = "def f(x):\n    s = 'run'\n    if x > 0:\n        x = x + len(s)\n    for c in s:\n        x = x * 2\n    return x\n"
    namespace = standalone_module(source, only=("f",))
    assert float(jax.jit(namespace["f"])(1.0)) == 32.0 and float(jax.jit(namespace["f"])(-1.0)) == -8.0


INDEXED_BY_THE_LOOP = {
    # (source, args): a staged loop whose body uses the loop index (or a carried value) as a
    # Python value -- a list, tuple or NumPy array indexed with it, math / numpy of it -- ran
    # as a lax loop and raised JAX's tracer errors; the runtime runs it as a Python loop.
    "list": ("def f(x):\n    lk = [1.0, 2.0, 4.0, 8.0]\n    s = 0.0\n    for i in range(4):\n        s += lk[i] * x\n"
             "    return s\n", (1.0,)),
    "module tuple": ("LK = (1.0, 2.0, 4.0, 8.0)\n\n\ndef f(x):\n    s = 0.0\n    for i in range(len(LK)):\n"
                     "        s += LK[i] * x\n    return s\n", (1.0,)),
    "module numpy array": ("import numpy as np\nLK = np.array([1.0, 2.0, 4.0, 8.0])\n\n\ndef f(x):\n    s = 0.0\n"
                           "    for i in range(4):\n        s += LK[i] * x\n    return s\n", (1.0,)),
    "math and numpy": ("import math\nimport numpy as np\n\n\ndef f(x):\n    s = 0.0\n    for i in range(4):\n"
                       "        s += math.sqrt(i) * x + np.sin(i)\n    return s\n", (1.0,)),
    "while": ("import numpy as np\nLK = np.array([1.0, 2.0, 4.0, 8.0])\n\n\ndef f(x):\n    s = 0.0\n    k = 0\n"
              "    while k < 4:\n        s += LK[k] * x\n        k += 1\n    return s\n", (1.0,)),
    "runge-kutta tableau": ("import numpy as np\nA = np.array([0.0, 0.5, 0.5, 1.0])\nB = (1 / 6, 1 / 3, 1 / 3, 1 / 6)\n\n\n"
                            "def f(y, h):\n    ks = []\n    acc = 0.0\n    for i in range(4):\n"
                            "        k = -(y + A[i] * h * acc)\n        acc = k\n        ks.append(k)\n    out = y\n"
                            "    for i in range(4):\n        out = out + h * B[i] * ks[i]\n    return out\n", (1.0, 0.1)),
    # an item of a Python list assigned with the loop index (`xs[i] = v`): TracerIntegerConversionError
    "list item assigned": ("def f(x):\n    xs = [0.0, 0.0, 0.0]\n    for i in range(3):\n        xs[i] = x * i\n"
                           "    return xs\n", (2.0,)),
    # a carried list sorted (`xs.sort()`: TracerBoolConversionError), an inner list appended to
    # (`rows[0].append(v)`: lax's pytree error, the item's length changes)
    "list sorted": ("def f(x):\n    xs = [3.0, 1.0, 2.0]\n    for i in range(3):\n        xs.sort()\n"
                    "        x = x * xs[0] + xs[-1]\n        xs.reverse()\n    return x\n", (2.0,)),
    "inner list appended to": ("def f(x):\n    rows = [[], []]\n    for i in range(3):\n        rows[0].append(x * i)\n"
                               "        rows[1].append(x + i)\n    return rows\n", (2.0,)),
    "list of lists item assigned": ("def f(x):\n    grid = [[0.0] * 3 for _ in range(2)]\n    for i in range(2):\n"
                                    "        for j in range(3):\n            grid[i][j] = x * i + j\n    return grid\n",
                                    (2.0,)),
}


@pytest.mark.parametrize("name", sorted(INDEXED_BY_THE_LOOP))
def test_a_loop_whose_body_needs_python_values_runs_as_a_python_loop(name, tmp_path):
    source, args = INDEXED_BY_THE_LOOP[name]
    path = tmp_path / "m.py"
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the test's own program
    expected = namespace["f"](*args)
    text = convert_source(source, str(path), Options(standalone=True, only=("f",))).text
    converted = {}
    exec(compile(text, str(path), "exec"), converted)  # noqa: S102 - the test's own converted code
    assert_close(jax.jit(converted["f"])(*args), expected)
    assert "jax.lax" not in text.split("def f(")[1] or name == "runge-kutta tableau"


def test_a_loop_with_traced_bounds_whose_body_needs_python_values_is_the_runtimes_error():
    source = ("import numpy as np\nLK = np.array([1.0, 2.0, 4.0, 8.0])\n\n\ndef f(n):\n    s = 0.0\n"
              "    for i in range(n):\n        s += LK[i]\n    return s\n")
    with pytest.raises(ConversionError, match=r"m.py:8:14: the `for` loop at m.py:7 is staged \(its bounds or "
                                              r"condition are traced\), but line 8 uses a traced value as a Python int"):
        convert_source(source, "m.py", Options(standalone=True, only=("f",)))
    # with n static it is a Python loop
    converted = standalone_module(source, only=("f",), static=("n",))
    assert float(converted["f"](3)) == 7.0


def test_a_slice_of_star_args_or_a_declared_container_is_iterated_in_python():
    """`*xs` is a tuple whatever it holds, as is an argument declared `tuple` / `list`: a
    slice of it (`xs[1:]`) stayed a container nowhere, and `for x in xs[1:]` became a
    lax.scan over a tuple (JAX's TypeError / IndexError under jax.jit)."""
    source = ("def f(*xs):\n    m = xs[0]\n    for x in xs[1:]:\n        if x > m:\n            m = x\n    return m\n\n\n"
              "def g(xs: tuple):\n    m = xs[0]\n    for x in xs[1:]:\n        if x > m:\n            m = x\n    return m\n\n\n"
              "def h(xs: list):\n    t = 0.0\n    for x in xs[::2]:\n        t += x\n    return t\n")
    namespace = standalone_module(source, all=True)
    assert float(jax.jit(namespace["f"])(1.0, 3.0, 2.0)) == 3.0 and namespace["f"](1.0, 3.0, 2.0) == 3.0
    assert float(jax.jit(namespace["g"])((1.0, 3.0, 2.0))) == 3.0
    assert float(jax.jit(namespace["h"])([1.0, 3.0, 2.0])) == 3.0


def test_a_list_attribute_the_class_makes_indexed_by_the_loop_index_is_a_python_loop():
    """`self.weights = [...]` in `__init__`, then `self.weights[i]` in a staged loop of a
    method: the lax loop raised TracerIntegerConversionError under jax.jit (the runtime runs
    the loop as Python). A jnp array attribute keeps the lax loop."""
    source = ("import jax.numpy as jnp\n\n\nclass Model:\n    def __init__(self):\n"
              "        self.weights = [0.5, 2.0, 3.0]\n        self.arr = jnp.array([0.5, 2.0, 3.0])\n\n"
              "    def run(self, x):\n        for i in range(3):\n            x = x * self.weights[i]\n        return x\n\n"
              "    def run_arr(self, x):\n        for i in range(3):\n            x = x * self.arr[i]\n        return x\n")
    namespace = standalone_module(source, all=True)
    model = namespace["Model"]()
    assert float(jax.jit(model.run)(3.0)) == 9.0 and float(jax.jit(model.run_arr)(3.0)) == 9.0
    text = convert_source(source, "m.py", Options(standalone=True, all=True)).text
    run, run_arr = text.split("def run(")[1].split("def run_arr(")
    assert "loop_body" not in run and "fori_loop(0, 3, loop_body, x)" in run_arr


def test_a_repeated_list_display_is_a_list_and_a_tuple_grown_by_a_display_changes_length(tmp_path):
    """`xs = [0.0] * 5` was not known as a list: `xs[1:3] = [...]` in a staged loop became
    `xs.at[1:3].set(...)` (AttributeError: 'list' object has no attribute 'at'); and
    `t = t + (v,)` was not known to change the tuple's length: lax.fori_loop's pytree error.
    Python's answer (a Python loop where the trip count is static) or the runtime's error."""
    source = ("def f(x):\n    xs = [0.0] * 5\n    for i in range(2):\n        xs[1:3] = [x + i, x - i]\n"
              "        xs[4] = x * i\n    return xs\n\n\ndef g(x):\n    t = ()\n    for i in range(3):\n"
              "        t = t + (x * i,)\n    return t\n\n\ndef h(x, n):\n    t = ()\n    for i in range(n):\n"
              "        t = t + (x * i,)\n    return t\n")
    namespace = {}
    exec(compile(source, "m.py", "exec"), namespace)  # noqa: S102 - the test's own program
    converted = standalone_module(source, only=("f", "g"))
    for name in ("f", "g"):
        assert_close(jax.jit(converted[name])(2.0), namespace[name](2.0))
    with pytest.raises(ConversionError, match="'t' is a tuple before the loop and a tuple 1 item longer after one "
                                              "iteration"):
        convert_source(source, "m.py", Options(standalone=True, only=("h",)))


def test_a_slice_of_a_stacked_list_is_refused():
    """`out[::-1]` of a list a staged loop appended to was the stacked array reversed (an
    array where Python returns a list); `out[i]` is a row, a slice is not supported."""
    source = ("def f(x):\n    out = []\n    for i in range(4):\n        out.append(x * i)\n    return out[::-1]\n\n\n"
              "def g(x):\n    out = []\n    for i in range(4):\n        out.append(x * i)\n    return out[-1] + len(out)\n")
    with pytest.raises(ConversionError, match="'out' holds the items appended in a staged loop as one stacked array"):
        convert_source(source, "m.py", Options(standalone=True, only=("f",)))
    assert float(jax.jit(standalone_module(source, only=("g",))["g"])(2.0)) == 10.0
PYTREE_CLASS_CARRY = '''\
import jax


@jax.tree_util.register_pytree_node_class
class Params:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def main(x, n):
    p = Params(x, x * 0.0)
    for i in range(n):
        p = Params(p.w - 0.2 * p.w, p.b + 1.0)
    return p.w, p.b
'''


@pytest.mark.parametrize("n", [0, 3])
def test_a_promoting_loop_carrying_a_pytree_class_without_eq_ends(n):
    # The hunt for objects: `carry_types` compared the carry's types with `==`, which for a
    # pytree class with no `__eq__` is identity, so the search for the types never ended.
    import signal

    namespace = standalone_module(PYTREE_CLASS_CARRY, all=True)
    assert "promoting_fori_loop(" in convert_source(PYTREE_CLASS_CARRY, "m.py", Options(all=True, standalone=True)).text
    python = {}
    exec(PYTREE_CLASS_CARRY, python)  # noqa: S102 - the test's own program

    def timed_out(*_):
        raise TimeoutError("carry_types did not end")

    old = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(60)
    try:
        got = jax.jit(namespace["main"])(jnp.float32(1.0), n)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert_close(got, python["main"](jnp.float32(1.0), n))


APPENDS_TO_A_HELD_LIST = '''\
def f(x, n):
    d = {"a": [], "b": []}
    for i in range(n):
        d["a"].append(x * i)
        d["b"].append(x + i)
    return len(d["a"]), sum(d["b"]) if d["b"] else 0.0
'''


def test_a_staged_loop_appending_to_a_list_a_carried_dict_holds_is_refused():
    # The hunt for objects: `d["a"].append(v)` was not seen as a change of `d`'s structure,
    # so the loop became a lax loop whose carry grew (JAX's "pytree structure error") and
    # `if d["b"]` a `lax.cond` on a list.
    result = convert_source(APPENDS_TO_A_HELD_LIST, "m.py", Options(all=True, standalone=True))
    assert "lax" not in result.text.split("def f", 1)[1]  # left as it is
    assert any("'d' changes length in the `for` loop" in w and "drop --standalone" in w for w in result.warnings)
