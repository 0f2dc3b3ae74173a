"""Pytrees as carried state: dicts, tuples, NamedTuples, registered dataclasses and
mixtures, updated by item (``state["w"] = ...``) and attribute (``p.x = ...``) assignment
inside staged loops and branches; each compared with the original Python."""

import dataclasses
import functools
import textwrap
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autolax
from conftest import assert_close, assert_matches, primitives


def assert_matches_fresh(fn, make_args, make_python_args=None, **jit_kwargs):
    """``assert_matches`` for functions that mutate their arguments: every run (plain
    Python, ``autolax.jit``, eager ``autolax.convert``) gets freshly built arguments."""
    make_python_args = make_python_args or make_args
    expected = fn(*make_python_args())
    assert_close(expected, autolax.jit(fn, **jit_kwargs)(*make_args()))
    assert_close(expected, autolax.convert(fn)(*make_python_args()))
    return expected


class Params(NamedTuple):
    w: object
    b: object


@functools.partial(jax.tree_util.register_dataclass, data_fields=["x", "v"], meta_fields=["name"])
@dataclasses.dataclass
class Particle:
    x: object
    v: object
    name: str = "p"


@functools.partial(jax.tree_util.register_dataclass, data_fields=["x"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class FrozenPoint:
    x: object


@jax.tree_util.register_pytree_node_class
class Accumulator:
    """A hand-registered pytree class with mutable attributes."""

    def __init__(self, total, count):
        self.total = total
        self.count = count

    def tree_flatten(self):
        return (self.total, self.count), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


# ----------------------------------------------------------------------------- containers
def dict_state(w, xs):
    state = {"w": w, "n": 0}
    for x in xs:
        state["w"] = state["w"] * 0.9 + x
        state["n"] += 1
    return state


def test_dict_item_updates_in_array_loop():
    xs = np.array([0.5, -1.0, 2.0])
    assert_matches(dict_state, 1.0, jnp.asarray(xs), python_args=(1.0, xs))
    assert primitives(dict_state, 1.0, jnp.asarray(xs))["scan"] == 1


def dict_while(d):
    while d["x"] < 100.0:
        d["x"] = d["x"] * 3
        d["k"] += 1
    return d


def test_dict_argument_in_while():
    assert_matches_fresh(dict_while, lambda: ({"x": 1.5, "k": 0},))


def tuple_and_namedtuple(p, pair):
    for i in range(3):
        p = Params(p.w * 2, p.b + p.w)
        pair = (pair[1], pair[0] + i)
    return p, pair


def test_tuple_and_namedtuple_carries():
    out = assert_matches(tuple_and_namedtuple, Params(1.0, 0.0), (0.5, 1.5))
    got = autolax.jit(tuple_and_namedtuple)(Params(1.0, 0.0), (0.5, 1.5))
    assert isinstance(got[0], Params) and isinstance(out[0], Params)


def nested_mixture(s, xs):
    for x in xs:
        if x > 1.0:
            s = {"a": (s["a"][0] + x, [s["a"][1][0] * x]), "p": Params(s["p"].w + 1, s["p"].b * x)}
        s["p"] = s["p"]._replace(w=s["p"].w - 0.5)
    return s


def test_nested_mixture_in_loop_with_if():
    def s0():
        return {"a": (0.0, [1.0]), "p": Params(1.0, 2.0)}

    xs = np.array([0.5, 2.0, 3.0])
    out = assert_matches_fresh(nested_mixture, lambda: (s0(), jnp.asarray(xs)), lambda: (s0(), xs))
    got = autolax.jit(nested_mixture)(s0(), jnp.asarray(xs))
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(out)


def array_dict_item(x):
    state = {"buf": jnp.zeros(4), "i": 0}
    for k in range(4):
        state["buf"] = state["buf"].at[k].set(x * k)
        if x > 0:
            state["buf"] = state["buf"] * 2
    return state["buf"]


def test_item_update_of_array_in_dict():
    assert_matches(array_dict_item, 1.5)
    assert_matches(array_dict_item, -1.0)


def grad_through_pytree(params, xs):
    loss = 0.0
    for x in xs:
        pred = params["w"] * x + params["b"]
        loss = loss + (pred - 1.0) ** 2
        params["w"] = params["w"] - 0.1 * x
    return loss


def test_grad_with_respect_to_dict_carried_through_loop():
    params = {"w": 0.5, "b": -0.2}
    xs = jnp.array([0.1, 0.7, -0.3])
    expected = jax.grad(grad_through_pytree)(dict(params), xs)
    for form in (autolax.jit, autolax.convert):
        assert_close(expected, jax.grad(form(grad_through_pytree))(dict(params), xs))


# ----------------------------------------------------------------------------- attributes
def particle_fall(x0, v0, dt):
    p = Particle(x0, v0)
    for i in range(5):
        p.v = p.v - 9.8 * dt
        p.x += p.v * dt
    return p


def test_attribute_updates_on_registered_dataclass_in_loop():
    out = assert_matches(particle_fall, 1.0, 0.0, 0.1)
    got = autolax.jit(particle_fall)(1.0, 0.0, 0.1)
    assert isinstance(got, Particle) and got.name == out.name == "p"
    assert primitives(particle_fall, 1.0, 0.0, 0.1)["scan"] == 1


def bounce(p, steps):
    for i in range(steps):
        p.x = p.x + p.v
        if p.x < 0:
            p.x = -p.x
            p.v = -p.v * 0.8
    return p


def test_attribute_updates_under_traced_if_on_parameter():
    assert_matches_fresh(bounce, lambda: (Particle(1.0, -0.6), 6), static_argnums=1)
    # gradient with respect to the dataclass's fields, through the scan and the cond
    grad = jax.grad(lambda p: autolax.convert(bounce)(p, 6).x)(Particle(1.0, -0.6))
    assert_close(jax.grad(lambda p: bounce(p, 6).x)(Particle(1.0, -0.6)), grad)


def accumulate(xs):
    acc = Accumulator(0.0, 0)
    for x in xs:
        if x > 0:
            acc.total += x
            acc.count += 1
    return acc.total / acc.count


def test_attribute_updates_on_pytree_node_class():
    xs = np.array([1.0, -2.0, 3.0, 0.5])
    assert_matches(accumulate, jnp.asarray(xs), python_args=(xs,))


def nested_attributes(x, buf):
    s = Particle(Particle(x, 0.0), buf)
    for i in range(3):
        s.x.v = s.x.v + s.x.x
        s.v[i] = s.x.v
        s.v[i] += 1.0
    return s.x.v, s.v


def test_nested_attribute_and_item_of_attribute():
    # Python cannot assign items of a JAX array, so the reference run uses a NumPy buffer
    assert_matches_fresh(nested_attributes, lambda: (2.0, jnp.zeros(3)), lambda: (2.0, np.zeros(3)))


def swap_fields(x, y):
    p = Particle(x, y)
    for i in range(3):
        p.x, p.v = p.v, p.x + i
    a = p.x = p.x * 2
    return p, a


def test_unpacking_into_attributes():
    assert_matches(swap_fields, 1.0, 5.0)


def numpy_field_in_place(n):
    p = Particle(np.zeros(3), 0.0)
    alias = p.x
    for i in range(n):
        p.x += 1.0  # in place on the NumPy array, as in Python
    return alias


def test_augmented_attribute_keeps_in_place_semantics():
    expected = numpy_field_in_place(2)
    assert_close(expected, autolax.convert(numpy_field_in_place)(2))
    assert_close(np.full(3, 2.0), expected)


def frozen_update(x):
    p = FrozenPoint(x)
    for i in range(3):
        p.x = p.x + 1.0
    return p


def namedtuple_update(x):
    p = Params(x, 0.0)
    if x > 0:
        p.w = 1.0
    return p


def test_frozen_dataclass_and_namedtuple_raise_as_python_does():
    with pytest.raises(dataclasses.FrozenInstanceError) as python:
        frozen_update(1.0)
    for form in (autolax.convert, autolax.jit):
        with pytest.raises(dataclasses.FrozenInstanceError) as converted:
            form(frozen_update)(1.0)
        assert str(converted.value) == str(python.value)
    with pytest.raises(AttributeError) as python:
        namedtuple_update(1.0)
    for form in (autolax.convert, autolax.jit):
        with pytest.raises(AttributeError) as converted:
            form(namedtuple_update)(1.0)
        assert str(converted.value) == str(python.value)


def test_frozen_dataclass_with_mutable_field_item_update_works():
    @dataclasses.dataclass(frozen=True)
    class Log:
        items: list

    def record(x):
        log = Log([0.0, 0.0])
        log.items[1] = x  # mutates the list, not the frozen object
        return log.items

    assert_matches(record, 3.0)


# ----------------------------------------------------------------------------- scoping
class Counter:
    def __init__(self):
        self.count = 0

    def bump(self, x):
        for i in range(3):
            self.count += 1
        return x * 2


def test_self_is_not_rewritten():
    # `self` is not carried: its mutations are marked (an error inside a staged body).
    source = autolax.to_source(Counter.bump)
    assert "ops.outside(self).count += 1" in source and "ops.setattr" not in source
    c = Counter()
    assert autolax.convert(Counter.bump)(c, 2.0) == 4.0
    assert c.count == 3


GLOBAL_POINT = Particle(0.0, 0.0)


def update_global(x):
    GLOBAL_POINT.x = x
    return x


def test_global_and_enclosing_names_are_not_rewritten():
    # Not carried: marked as a mutation of something outside (an error in a staged body).
    assert "ops.outside(GLOBAL_POINT).x = x" in autolax.to_source(update_global)
    autolax.convert(update_global)(4.0)
    assert GLOBAL_POINT.x == 4.0

    def outer(x):
        p = Particle(x, 0.0)

        def move(dx):
            p.x = p.x + dx  # `p` belongs to `outer`: rebinding it here would be an error

        move(1.0)
        move(2.0)
        return p.x

    assert "ops.outside(p).x = p.x + dx" in autolax.to_source(outer)
    assert_matches(outer, 1.0)


def test_emitted_source_for_attribute_updates():
    source = autolax.to_source(nested_attributes)
    expected = textwrap.dedent(
        """\
        s = ops.setattr(s, 'x', ops.setattr(s.x, 'v', s.x.v + s.x.x))
        s = ops.setattr(s, 'v', ops.at(s.v)[i].set(s.x.v))
        s = ops.setattr(s, 'v', ops.at(s.v)[i].add(1.0))
        """
    )
    body = "\n".join(line.strip() for line in source.splitlines() if "setattr" in line) + "\n"
    assert body == expected
    swap = autolax.to_source(swap_fields)
    assert "attr_x, attr_v = (p.v, p.x + i)" in swap
    assert "p = ops.setattr(p, 'x', attr_x)" in swap and "p = ops.setattr(p, 'v', attr_v)" in swap
    assert "p = ops.setattr(p, 'x', p.v * dt, op='add')" in autolax.to_source(particle_fall)


def item_updates(x):
    y = jnp.zeros(3)
    y[1] = x
    y[2] += x
    return y


def test_emitted_item_updates_are_not_wrapped_in_ops_call():
    # `ops.at(y)[1].set` is the runtime, not user code: no `ops.call(ops.at(y)[1].set, x)`
    source = autolax.to_source(item_updates)
    assert "y = ops.at(y)[1].set(x)" in source and "y = ops.at(y)[2].add(x)" in source
    assert "ops.call" not in source
    assert_close(np.array([0.0, 2.0, 2.0]), autolax.jit(item_updates)(2.0))
