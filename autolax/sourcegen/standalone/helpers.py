"""Functions ``--standalone`` writes into its output file, once, for the loop forms that
``jax.lax`` has no single call for (``autolax.plan.EARLY_EXIT`` and ``MASKED_SCAN``): a
``for`` that can stop early (``break`` / ``return`` under a traced condition) has a static
trip count, so it can be differentiated as a scan that skips the iterations after the
exit, as ``autolax.jit`` does.

Each is plain JAX, documented by the Python it stands for; ``{jax}`` is how the file spells
the ``jax`` module.
"""

from __future__ import annotations

MASKED = "masked_while_loop"
EARLY_EXIT = "while_loop_with_masked_grad"
PROMOTING_COND = "promoting_cond"

_TEXT = {
    MASKED: '''\
def masked_while_loop(cond_fun, body_fun, init_val, max_steps):
    """``jax.lax.while_loop(cond_fun, body_fun, init_val)`` for a loop that stops within
    ``max_steps`` iterations, written as a ``jax.lax.scan`` of ``max_steps`` steps that skip
    the body once ``cond_fun`` is false: reverse-differentiable, unlike a while loop.
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        val = init_val
        for _ in range(max_steps):
            if cond_fun(val):
                val = body_fun(val)
        return val
    """
    # Start from the types the body gives (0 becomes 0.0 where the body adds floats).
    types = {jax}.eval_shape(body_fun, init_val)
    init_val = {jax}.tree.map(lambda x, t: {jax}.numpy.asarray(x, t.dtype), init_val, types)

    def step(val, _):
        return {jax}.lax.cond(cond_fun(val), body_fun, lambda val: val, val), None

    return {jax}.lax.scan(step, init_val, length=max_steps)[0]
''',
    EARLY_EXIT: '''\
def while_loop_with_masked_grad(cond_fun, body_fun, init_val, max_steps):
    """``jax.lax.while_loop(cond_fun, body_fun, init_val)`` for a loop that stops within
    ``max_steps`` iterations, which ``jax.grad`` can differentiate: a call stops early,
    while the derivative is that of ``masked_while_loop`` (a while loop has no
    reverse-mode derivative). (Written by ``autolax convert --standalone``.)

    ``jax.custom_jvp`` picks the form; ``jax.closure_convert`` makes the values the loop
    functions close over arguments, so that their tangents reach the derivative.
    """
    types = {jax}.eval_shape(body_fun, init_val)
    init_val = {jax}.tree.map(lambda x, t: {jax}.numpy.asarray(x, t.dtype), init_val, types)
    early, early_consts = {jax}.closure_convert(
        lambda val: {jax}.lax.while_loop(cond_fun, body_fun, val), init_val)
    masked, masked_consts = {jax}.closure_convert(
        lambda val: masked_while_loop(cond_fun, body_fun, val, max_steps), init_val)

    @{jax}.custom_jvp
    def loop(val, early_consts, masked_consts):
        return early(val, *early_consts)

    @loop.defjvp
    def loop_jvp(primals, tangents):
        (val, _, consts), (val_dot, _, consts_dot) = primals, tangents
        return {jax}.jvp(lambda val, consts: masked(val, *consts), (val, consts), (val_dot, consts_dot))

    return loop(init_val, early_consts, masked_consts)
''',
}

_TEXT[PROMOTING_COND] = '''\
def promoting_cond(pred, true_fun, false_fun, *operands):
    """``jax.lax.cond(pred, true_fun, false_fun, *operands)`` for branches whose results may
    differ in dtype, as the two sides of a Python ``if`` may (a Python number on one side, a
    float32 array on the other): each result takes the dtype both sides promote to.
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        return true_fun(*operands) if pred else false_fun(*operands)
    """
    from jax.extend.core import jaxpr_as_fun

    # Each branch is traced once (a chain of `elif`s stays linear), then replayed in the cond.
    (true_jaxpr, true_types), (false_jaxpr, false_types) = (
        {jax}.make_jaxpr(fun, return_shape=True)(*operands) for fun in (true_fun, false_fun))
    if {jax}.tree.structure(true_types) != {jax}.tree.structure(false_types):
        return {jax}.lax.cond(pred, true_fun, false_fun, *operands)  # JAX's error names the difference

    def promotes_as(t):  # a weakly typed value promotes as the Python number it stands for
        if not t.weak_type:
            return t.dtype
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[{jax}.numpy.dtype(t.dtype).kind]

    leaves, tree = {jax}.tree.flatten(true_types)
    dtypes = [{jax}.dtypes.result_type(promotes_as(a), promotes_as(b))
              for a, b in zip(leaves, {jax}.tree.leaves(false_types))]

    def promoted(jaxpr):
        run = jaxpr_as_fun(jaxpr)
        return lambda *args: tree.unflatten(
            [{jax}.numpy.asarray(x, dtype) for x, dtype in zip(run(*{jax}.tree.leaves(args)), dtypes)])

    return {jax}.lax.cond(pred, promoted(true_jaxpr), promoted(false_jaxpr), *operands)
'''

NEEDS = {EARLY_EXIT: (MASKED,), MASKED: (), PROMOTING_COND: ()}


def closure(names) -> list:
    """``names`` and the helpers they call, in the order the file defines them."""
    out = set(names)
    for name in names:
        out |= set(NEEDS[name])
    return [name for name in _TEXT if name in out]


def text(name: str, jax: str) -> str:
    """The source of helper ``name`` (module level)."""
    return _TEXT[name].replace("{jax}", jax)


__all__ = ["EARLY_EXIT", "MASKED", "closure", "text"]
