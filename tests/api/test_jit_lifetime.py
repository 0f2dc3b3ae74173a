"""What ``autolax.jit`` hands to ``jax.jit`` lives as long as the user's function, as
``jax.jit(fn)``'s caches do: a wrapper made and called in one expression
(``autolax.jit(f)(x)``) does not free its compiled program inside the call."""

import gc
import weakref


import autolax
from autolax import api

TRACES = []


@autolax.do_not_convert
def note(n):
    TRACES.append(n)


def energy(x, n):
    note(n)  # runs once per trace
    total = 0.0
    for i in range(n):
        total += x * i
    return total


def fresh():
    return type(energy)(energy.__code__, energy.__globals__, "energy")


def python(x, n):
    return sum(x * i for i in range(n))


def test_each_wrapper_traces_on_its_own():
    f = fresh()
    TRACES.clear()
    assert float(autolax.jit(f, static_argnums=1)(2.0, 4)) == python(2.0, 4)
    assert float(autolax.jit(f, static_argnums=1)(2.0, 4)) == python(2.0, 4)
    assert TRACES == [4, 4]


def test_wrappers_with_other_options_never_share():
    f = fresh()
    TRACES.clear()
    assert float(autolax.jit(f, static_argnums=1)(2.0, 4)) == python(2.0, 4)
    assert float(autolax.jit(f, static_argnames="n")(2.0, n=4)) == python(2.0, 4)
    assert float(autolax.jit(f, static_argnums=1, strict=True)(2.0, 4)) == python(2.0, 4)
    assert len(TRACES) == 3


def test_the_function_given_to_jax_jit_lives_with_the_users_function():
    f = fresh()
    autolax.jit(f, static_argnums=1)(2.0, 3)  # the wrapper is gone after this line
    gc.collect()
    owns = autolax.convert(f).__dict__[api._OWN]
    own = weakref.ref(next(iter(owns.values())))
    assert own() is not None
    del f, owns
    gc.collect()
    assert own() is None
