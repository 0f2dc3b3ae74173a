"""Every callable jax.jit takes is an entry point of autolax.jit, convert, to_source and
trace_check (issue 15 item 1); library code is never converted; a library's wrapper of a
user function is a clear error with the rewrite."""

import functools
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close


def step(x):
    if x > 0:
        return x * 2.0
    return -x


def scaled(a, x):
    while x < 10.0:
        x = x * 2.0 + a
    return x


@jax.tree_util.register_pytree_node_class
class Model:
    """A callable pytree (like an Equinox or NNX module)."""

    def __init__(self, w):
        self.w = w

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __call__(self, x):
        for _ in range(3):
            x = self.grow(x)
        return x

    def grow(self, x):
        if x > 5.0:
            return x + self.w
        return x * 2.0

    @staticmethod
    def flip(x):
        if x > 0:
            return -x
        return x

    @classmethod
    def twice(cls, x):
        if x > 1:
            return 2.0 * x
        return x


class Plain:
    """A callable that is not a pytree."""

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x > 0:
            return x * self.k
        return x


def nested_maker(k):
    def nested(x):
        if x > k:
            return x - k
        return x + k

    return nested


MODEL = Model(jnp.float32(1.5))
CALLABLES = {
    "function": (step, step, (3.0,)),
    "partial": (functools.partial(scaled, 1.0), lambda x: scaled(1.0, x), (0.5,)),
    "tree_util.Partial": (jax.tree_util.Partial(scaled, 2.0), lambda x: scaled(2.0, x), (0.5,)),
    "bound method": (MODEL.grow, MODEL.grow, (4.0,)),
    "unbound method": (Model.grow, Model.grow, (MODEL, 7.0)),
    "callable pytree": (MODEL, MODEL, (1.0,)),
    "callable object": (Plain(3.0), Plain(3.0), (2.0,)),
    "staticmethod": (Model.flip, Model.flip, (2.0,)),
    "staticmethod object": (Model.__dict__["flip"], Model.flip, (2.0,)),
    "classmethod": (Model.twice, Model.twice, (3.0,)),
    "nested def": (nested_maker(1.0), nested_maker(1.0), (0.5,)),
}


@pytest.mark.parametrize("kind", list(CALLABLES))
def test_every_kind_of_callable_runs_converted(kind):
    fn, python, args = CALLABLES[kind]
    expected = python(*args)
    if kind != "unbound method":  # jax.jit cannot take a plain object as an argument either
        assert_close(expected, autolax.jit(fn)(*args))
    assert_close(expected, autolax.convert(fn)(*args))
    if kind not in ("unbound method", "staticmethod object"):  # jax.jit refuses these too
        assert_close(expected, jax.jit(autolax.convert(fn))(*args))
    report = autolax.trace_check(fn, *args) if kind != "unbound method" else None
    if report is not None:
        assert report.rows and not any(r.became.startswith("python") for r in report.rows), str(report)
    assert re.match(r"(@ops\.function(\(checks=True\))?\n)?def ", autolax.to_source(fn))


def test_unbound_method_with_static_self():
    got = autolax.jit(Plain.__call__, static_argnums=0)(Plain(3.0), 2.0)
    assert float(got) == 6.0


def test_callable_pytree_stays_a_pytree_with_its_leaves():
    converted = autolax.convert(MODEL)
    assert jax.tree_util.tree_leaves(converted) == jax.tree_util.tree_leaves(MODEL)
    # its arrays are arguments of the jitted function, not constants
    jaxpr = jax.make_jaxpr(lambda m, x: m(x))(converted, 1.0)
    assert len(jaxpr.jaxpr.invars) == 2


def test_staticmethod_and_classmethod_decorated_below_autolax_jit():
    class Holder:
        @autolax.jit
        @staticmethod
        def flip(x):
            if x > 0:
                return -x
            return x

        @autolax.jit
        @classmethod
        def twice(cls, x):
            if x > 1:
                return 2.0 * x
            return x

        @autolax.convert
        @staticmethod
        def flip_eager(x):
            if x > 0:
                return -x
            return x

    assert float(Holder.flip(2.0)) == -2.0
    assert float(Holder().flip(2.0)) == -2.0
    assert float(Holder.twice(3.0)) == 6.0
    assert float(Holder().twice(0.5)) == 0.5
    assert float(jax.jit(Holder.flip_eager)(3.0)) == -3.0


def test_autolax_jit_as_a_method_decorator():
    class Counter:
        def __init__(self, k):
            self.k = k

        @functools.partial(autolax.jit, static_argnums=0)
        def run(self, x):
            while x < self.k:
                x = x * 2.0
            return x

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Counter) and other.k == self.k

    assert float(Counter(10.0).run(1.5)) == 12.0


def test_custom_jvp_of_a_user_function_is_converted_with_its_rule():
    @jax.custom_jvp
    def clipped(x):
        if x > 1.0:
            return jnp.ones_like(x)
        return x

    @clipped.defjvp
    def clipped_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if x > 1.0:
            return clipped(x), 0.0 * t
        return clipped(x), 3.0 * t  # a derivative of our own, to see the rule is used

    assert float(autolax.jit(clipped)(2.0)) == 1.0
    assert float(autolax.jit(jax.grad(autolax.convert(clipped)))(0.5)) == 3.0
    assert float(jax.grad(autolax.convert(clipped))(2.0)) == 0.0


def test_library_code_is_returned_as_it_is():
    assert autolax.convert(jnp.sin) is jnp.sin
    assert autolax.convert(np.cos) is np.cos
    assert autolax.convert(os.path.join) is os.path.join
    assert float(autolax.jit(jnp.sin)(0.0)) == 0.0
    wrapped_converted = jax.vmap(autolax.convert(step))
    assert autolax.convert(wrapped_converted) is wrapped_converted
    assert_close(jnp.array([4.0, 1.0]), autolax.jit(wrapped_converted)(jnp.array([2.0, -1.0])))


@pytest.mark.parametrize("transform", ["vmap", "jit", "grad", "jacobian", "hessian", "checkpoint", "jvp-vmap"])
@pytest.mark.parametrize("api", ["jit", "convert", "to_source", "trace_check", "filter_jit"])
def test_a_transformed_user_function_is_an_error_with_the_rewrite(transform, api):
    made = {
        "vmap": lambda: jax.vmap(step),
        "jit": lambda: jax.jit(step),
        "grad": lambda: jax.grad(step),
        "jacobian": lambda: jax.jacobian(step),
        "hessian": lambda: jax.hessian(step),
        "checkpoint": lambda: jax.checkpoint(step),
        "jvp-vmap": lambda: jax.vmap(jax.vmap(step)),
    }[transform]()
    call = {
        "jit": lambda: autolax.jit(made),
        "convert": lambda: autolax.convert(made),
        "to_source": lambda: autolax.to_source(made),
        "trace_check": lambda: autolax.trace_check(made, jnp.ones(2)),
        "filter_jit": lambda: autolax.filter_jit(made),
    }[api]
    with pytest.raises(autolax.ConversionError) as info:
        call()
    text = str(info.value)
    assert "wrapper around your function 'step'" in text
    if transform == "jit":
        assert "autolax.jit(step, ...) in place of jax.jit(step, ...)" in text
    else:
        assert "jax.vmap(autolax.convert(step)) in place of jax.vmap(step)" in text


def test_the_rewrite_works():
    xs = jnp.array([2.0, -1.0, 0.5])
    expected = jnp.array([step(float(x)) for x in xs])
    assert_close(expected, autolax.jit(jax.vmap(autolax.convert(step)))(xs))
    assert_close(expected, jax.jit(jax.vmap(autolax.convert(step)))(xs))
    assert_close(jnp.array([2.0, -1.0, 2.0]), jax.jit(jax.vmap(jax.grad(autolax.convert(step))))(xs))


def test_not_callable_is_a_type_error():
    for api in (autolax.convert, autolax.jit, autolax.to_source):
        with pytest.raises(TypeError, match="expects a function or another callable"):
            api(3.0)


PACKAGE = textwrap.dedent(
    """
    def halve_until_small(x):
        while x > 1.0:
            x = x / 2.0
        return x
    """
)


def test_a_users_package_in_site_packages_is_library_code_unless_opted_in(tmp_path):
    # A package installed into site-packages: simulated by a directory the library check
    # counts as site-packages (the check is by location).
    site_dir = tmp_path / "site-packages"
    (site_dir / "mypkg").mkdir(parents=True)
    (site_dir / "mypkg" / "__init__.py").write_text(PACKAGE)
    script = textwrap.dedent(
        f"""
        import sys, warnings
        sys.path.insert(0, {str(site_dir)!r})
        import autolax, autolax.runtime.libraries as libraries
        libraries._LIBRARY_DIRS = libraries._LIBRARY_DIRS + ({str(site_dir) + os.sep!r},)
        libraries._path_is_library.cache_clear()
        import jax, mypkg

        def f(x):
            return mypkg.halve_until_small(x)

        try:
            autolax.jit(f)(7.0)
            print("converted")
        except autolax.TracedValueError as error:  # JAX's error, named at the user's line
            assert isinstance(error.__cause__, jax.errors.TracerBoolConversionError), error.__cause__
            assert "main.py:10" in str(error) and "does not convert library code" in str(error), error
            print("not converted")
        if len(sys.argv) > 1:
            autolax.convert_package("mypkg")
            print(float(autolax.jit(f)(7.0)))
        """
    )
    (tmp_path / "main.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = lambda *extra, env=env: subprocess.run(  # noqa: E731
        [sys.executable, str(tmp_path / "main.py"), *extra], capture_output=True, text=True, env=env, timeout=120)
    out = run()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["not", "converted"]
    out = run("opt-in")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["not", "converted", "0.875"]
    out = run(env={**env, "AUTOLAX_CONVERT_PACKAGES": "mypkg"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["converted"]


def test_convert_package_refuses_known_libraries():
    with pytest.raises(ValueError, match="library code"):
        autolax.convert_package("jax")
    with pytest.raises(ValueError, match="top-level package name"):
        autolax.convert_package("my.pkg")
