"""``--standalone``: lowers the ``ops.*`` calls of converted code to ``jax.lax``, ``jnp`` and Python.

Modules: ``values`` (what is known about a value), ``patterns`` (shapes of converted code),
``lowering`` (statements, ``if``), ``loops``, ``expressions``, ``breaks`` (Python loops get
their ``break`` back).

The default output calls autolax's runtime, which decides each statement when it runs. A
standalone file has no runtime, so the decisions are made here by static analysis, with
the rules ``autolax.jit`` applies when it traces:

* a function's parameters are traced, unless declared static (``static_argnames`` /
  ``static_argnums`` of its decorator, or ``--static``); ``self`` / ``cls`` are static;
* Python literals, ``x.shape`` / ``ndim`` / ``dtype`` / ``size``, ``len()``, ``isinstance()``,
  ``type()`` and ``is`` / ``is not`` comparisons are static, as are the results of NumPy,
  ``math`` and user calls whose arguments are all static;
* JAX calls and anything computed from a traced value are traced.

A traced ``if`` test becomes ``jax.lax.cond``; a loop whose condition, bounds or carried state
is traced becomes ``jax.lax.while_loop`` / ``fori_loop`` / ``scan``; everything else is
written back as the Python statement it was. What cannot be expressed without the runtime
(an append to a list carried by a staged loop, a variable first assigned inside a staged loop,
``print(..., end=...)`` of traced values ...) is a ``ConversionError`` that says to drop
``--standalone``: never code that runs differently.

    n = ops.cond(n % 2 == 0, if_true, if_false, n)      ->   n = jax.lax.cond(n % 2 == 0, if_true, if_false, n)
    done = ops.and_(a < b, lambda: c)                    ->   done = jnp.logical_and(a < b, c)
    x = ops.at(x)[i].set(v)                              ->   x = x.at[i].set(v)
"""

from autolax.sourcegen.standalone import helpers
from autolax.sourcegen.standalone.lowering import Lowering, Refs

__all__ = ["Lowering", "Refs", "helpers"]
