"""Functions ``--standalone`` writes into its output file, once, for the loop forms that
``jax.lax`` has no single call for (``autolax.plan.EARLY_EXIT`` and ``MASKED_SCAN``): a
``for`` that can stop early (``break`` / ``return`` under a traced condition) has a static
trip count, so it can be differentiated as a scan that skips the iterations after the
exit, as ``autolax.jit`` does. And for values whose dtype is known only when the program
is traced: ``promoting_cond`` and the ``promoting_*`` loops give what a staged ``if`` or
loop produces the dtype both sides (every iteration) promote to, as the runtime's type
join does, where ``lax.cond`` and the lax loops need equal types. And ``raise_if``: a ``raise``
or ``assert`` under a traced condition, checked when the program runs.

Each is plain JAX, documented by the Python it stands for; ``{jax}`` is how the file spells
the ``jax`` module.
"""

from __future__ import annotations

from autolax import errors

MASKED = "masked_while_loop"
EARLY_EXIT = "while_loop_with_masked_grad"
PROMOTING_COND = "promoting_cond"
PROMOTED_DTYPE = "promoted_dtype"
CARRY_TYPES = "carry_types"
AS_TYPES = "as_types"
PROMOTING_WHILE = "promoting_while_loop"
PROMOTING_FORI = "promoting_fori_loop"
PROMOTING_SCAN = "promoting_scan"
PROMOTING_MASKED = "promoting_masked_while_loop"
PROMOTING_EARLY_EXIT = "promoting_while_loop_with_masked_grad"
RAISE_IF = "raise_if"
PREDICATE = "cond_predicate"
CHECK_ARGUMENT = "check_argument"

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

_TEXT[PROMOTED_DTYPE] = '''\
def promoted_dtype(a, b):
    """The dtype values of types ``a`` and ``b`` (``jax.ShapeDtypeStruct``) promote to; a
    weakly typed value promotes as the Python number it stands for (a float32 array and
    ``0.5`` give float32). (Written by ``autolax convert --standalone``.)"""
    def promotes_as(t):
        if not t.weak_type:
            return t.dtype
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[{jax}.numpy.dtype(t.dtype).kind]

    return {jax}.dtypes.result_type(promotes_as(a), promotes_as(b))
'''

_TEXT[CARRY_TYPES] = '''\
def carry_types(step, init_val, *args):
    """The types of a staged loop's carry: ``init_val``'s, each promoted with the type one
    iteration (``step(val, *args)``) gives it, until no iteration changes them -- a Python
    loop may turn an int it carries into the float it assigns.
    (Written by ``autolax convert --standalone``.)"""
    def join(a, b):
        return {jax}.ShapeDtypeStruct(a.shape, promoted_dtype(a, b), weak_type=a.weak_type and b.weak_type)

    types = {jax}.eval_shape(lambda val: val, init_val)
    while True:
        joined = {jax}.tree.map(join, types, {jax}.eval_shape(step, types, *args))
        if {jax}.tree.leaves(joined) == {jax}.tree.leaves(types):  # (a pytree class may have no `==`)
            return types
        types = joined
'''

_TEXT[AS_TYPES] = '''\
def as_types(val, types):
    """``val`` with the dtypes of ``types``. (Written by ``autolax convert --standalone``.)"""
    return {jax}.tree.map(lambda x, t: x if {jax}.numpy.result_type(x) == t.dtype else {jax}.numpy.asarray(x, t.dtype),
                        val, types)
'''

_TEXT[PROMOTING_WHILE] = '''\
def promoting_while_loop(cond_fun, body_fun, init_val):
    """``jax.lax.while_loop(cond_fun, body_fun, init_val)`` for a body that may change the
    dtypes of what it carries, as a Python loop may: the carry has the types ``carry_types``
    finds. (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val
    """
    types = carry_types(body_fun, init_val)
    return {jax}.lax.while_loop(cond_fun, lambda val: as_types(body_fun(val), types), as_types(init_val, types))
'''

_TEXT[PROMOTING_FORI] = '''\
def promoting_fori_loop(lower, upper, body_fun, init_val):
    """``jax.lax.fori_loop(lower, upper, body_fun, init_val)`` for a body that may change the
    dtypes of what it carries (see ``promoting_while_loop``).
    (Written by ``autolax convert --standalone``.)"""
    types = carry_types(lambda val, i: body_fun(i, val), init_val, {jax}.numpy.asarray(lower))
    return {jax}.lax.fori_loop(lower, upper, lambda i, val: as_types(body_fun(i, val), types),
                             as_types(init_val, types))
'''

_TEXT[PROMOTING_SCAN] = '''\
def promoting_scan(f, init, xs):
    """``jax.lax.scan(f, init, xs)`` for a body that may change the dtypes of what it
    carries (see ``promoting_while_loop``). (Written by ``autolax convert --standalone``.)"""
    item = {jax}.tree.map(lambda x: {jax}.ShapeDtypeStruct(x.shape[1:], x.dtype), xs)
    types = carry_types(lambda carry, x: f(carry, x)[0], init, item)

    def step(carry, x):
        carry, y = f(carry, x)
        return as_types(carry, types), y

    return {jax}.lax.scan(step, as_types(init, types), xs)
'''

_TEXT[PROMOTING_MASKED] = '''\
def promoting_masked_while_loop(cond_fun, body_fun, init_val, max_steps):
    """``masked_while_loop(cond_fun, body_fun, init_val, max_steps)`` for a body that may
    change the dtypes of what it carries (see ``promoting_while_loop``).
    (Written by ``autolax convert --standalone``.)"""
    types = carry_types(body_fun, init_val)
    return masked_while_loop(cond_fun, lambda val: as_types(body_fun(val), types), as_types(init_val, types),
                             max_steps)
'''

_TEXT[PROMOTING_EARLY_EXIT] = '''\
def promoting_while_loop_with_masked_grad(cond_fun, body_fun, init_val, max_steps):
    """``while_loop_with_masked_grad(cond_fun, body_fun, init_val, max_steps)`` for a body
    that may change the dtypes of what it carries (see ``promoting_while_loop``).
    (Written by ``autolax convert --standalone``.)"""
    types = carry_types(body_fun, init_val)
    return while_loop_with_masked_grad(cond_fun, lambda val: as_types(body_fun(val), types),
                                       as_types(init_val, types), max_steps)
'''

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

    leaves, tree = {jax}.tree.flatten(true_types)
    dtypes = [promoted_dtype(a, b) for a, b in zip(leaves, {jax}.tree.leaves(false_types))]

    def promoted(jaxpr):
        # A value that already has the dtype is left as it is (a weakly typed one stays so).
        run = jaxpr_as_fun(jaxpr)
        return lambda *args: tree.unflatten(
            [x if {jax}.numpy.result_type(x) == dtype else {jax}.numpy.asarray(x, dtype)
             for x, dtype in zip(run(*{jax}.tree.leaves(args)), dtypes)])

    return {jax}.lax.cond(pred, promoted(true_jaxpr), promoted(false_jaxpr), *operands)
'''

_TEXT[RAISE_IF] = '''\
class raise_if:
    """``with raise_if(pred, error, where):`` for ``if pred: raise error()`` at the top of a
    function, the rest of the function in the ``with`` block, where ``pred`` may be traced:
    a ``raise`` or ``assert`` under a traced condition, or a read of a variable that a staged
    ``if`` assigns on one side only (``pred``: its flag is False; ``error``: UnboundLocalError).
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        if pred:
            raise error()

    A Python ``pred`` decides now. A traced one is checked when the program runs, by a host
    callback that raises ``error()`` where ``pred`` holds (in any lane, under ``vmap``); under
    ``jax.jit`` JAX reports it as a ``jax.errors.JaxRuntimeError`` that holds its text. If
    tracing the rest of the function stops at an error, Python would raise ``error()`` first
    where ``pred`` holds, which only the running program knows: that is an error saying so.
    """

    def __init__(self, pred, error, where):
        self.where = where
        try:
            self.traced = False
            failed = bool(pred)
        except {jax}.errors.ConcretizationTypeError:
            self.traced = True
        if not self.traced:
            if failed:
                raise error()
            return

        def check(pred):
            if pred.any():
                raised = error()
                failed = type(raised)(f"{raised} (raised when the program ran: the `raise`, `assert` or read at {where}, "
                                      "under a traced condition; written by autolax convert --standalone)")
                failed.raised_by_raise_if = True
                raise failed

        # JAX logs an error raised in a host callback with its traceback; the caller gets it.
        # With several processes it runs on every device, so that every process raises.
        import logging
        logging.getLogger("jax._src.debugging").addFilter(raise_if.quiet)
        {jax}.debug.callback(check, pred, partitioned={jax}.process_count() > 1)

    @staticmethod
    def quiet(record):
        error = record.exc_info[1] if record.exc_info else None
        return not getattr(error, "raised_by_raise_if", False)

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if self.traced and isinstance(error, Exception):
            raise RuntimeError(
                f"autolax convert --standalone: tracing stopped at {kind.__name__}: {error}, after the `raise`, "
                f"`assert` or read at {self.where} under a traced condition, which is checked when the program runs; "
                "Python raises its error first where the condition holds, which only the running program "
                "knows.\\nFix: drop --standalone to use the autolax runtime (autolax.jit runs the function as "
                "Python to find Python's error), or fix the error tracing stopped at.") from error
        return False
'''

_ARRAY_CONDITION = errors.MESSAGES["array-condition"]
_EMPTY_CONDITION = errors.MESSAGES["empty-condition"]
_TEXT[PREDICATE] = '''\
def cond_predicate(pred, where):
    """``pred`` as the boolean scalar ``jax.lax`` takes, with Python's (NumPy's) truth value
    (nonzero is true; one element of any rank is its value), as the runtime stages a traced
    condition; an empty array or one of several elements is refused in the runtime's words
    (its ArrayConditionError, a ValueError).
    (Written by ``autolax convert --standalone``.)

    Equivalent Python::

        return bool(pred)
    """
    pred = {jax}.numpy.asarray(pred)
    if pred.size == 0:
        raise ValueError(%r.format(where=where, shape=pred.shape))
    if pred.size != 1:
        raise ValueError(%r.format(where=where, shape=pred.shape))
    pred = pred.reshape(())
    return pred if pred.dtype == bool else pred != 0
''' % tuple(m.text + "\nFix: " + m.fix
               + " (the runtime's ArrayConditionError, in a file written by autolax convert --standalone)"
               for m in (_EMPTY_CONDITION, _ARRAY_CONDITION))

_TEXT[CHECK_ARGUMENT] = '''\
def check_argument(value, function, name, declared, dtype=None, ndim=None, types=None):
    """Raises ``TypeError`` unless ``value``, the argument ``name`` of ``function``, is of the
    type the function was written for: ``declared``, its annotation (or ``--signature``); None
    where nothing was declared and the function takes it for an array. ``types``: the Python
    containers it may be; else an array or number whose dtype is a ``jax.numpy.<dtype>``
    (None: any) with ``ndim`` dimensions (None: any).
    (Written by ``autolax convert --standalone``, for the declared argument types.)

    Equivalent Python::

        assert isinstance(value, declared)
    """
    array = hasattr(value, "dtype") or isinstance(value, (bool, int, float, complex))
    if array:
        kind = {jax}.numpy.result_type(value)
        got = f"{kind}{list({jax}.numpy.shape(value))}"  # float32[3]
    else:
        got = f"a {type(value).__name__}"
    if types is not None:
        ok = isinstance(value, types)
    else:
        ok = array and ((dtype is None or {jax}.numpy.issubdtype(kind, getattr({jax}.numpy, dtype)))
                        and (ndim is None or {jax}.numpy.ndim(value) == ndim))
    if not ok:
        wanted = (f"'{name}: {declared}' was declared" if declared is not None
                  else "no type was declared for it and the function takes it for an array")
        raise TypeError(f"{function}() argument '{name}' is {got}, where {wanted}: autolax convert --standalone "
                        f"wrote the function for that type.\\nFix: pass a value of that type, or declare the type "
                        f"it takes (an annotation, or --signature '{function}({name}: TYPE)') and convert again.")
'''

NEEDS = {
    EARLY_EXIT: (MASKED,), MASKED: (), PROMOTED_DTYPE: (), PROMOTING_COND: (PROMOTED_DTYPE,),
    CARRY_TYPES: (PROMOTED_DTYPE,), AS_TYPES: (),
    PROMOTING_WHILE: (CARRY_TYPES, PROMOTED_DTYPE, AS_TYPES),
    PROMOTING_FORI: (CARRY_TYPES, PROMOTED_DTYPE, AS_TYPES),
    PROMOTING_SCAN: (CARRY_TYPES, PROMOTED_DTYPE, AS_TYPES),
    PROMOTING_MASKED: (MASKED, CARRY_TYPES, PROMOTED_DTYPE, AS_TYPES),
    PROMOTING_EARLY_EXIT: (EARLY_EXIT, MASKED, CARRY_TYPES, PROMOTED_DTYPE, AS_TYPES),
    RAISE_IF: (), PREDICATE: (), CHECK_ARGUMENT: (),
}


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
