"""``--standalone``: lowers the ``ops.*`` calls of converted code to ``jax.lax``, ``jnp`` and Python.

The default output calls autolax's runtime, which decides each statement when it runs. A
standalone file has no runtime, so each statement is decided here, once, by the same
module: ``autolax.plan``. What the runtime observes while tracing (is the condition
traced? does the loop carry floating-point values? does its body print?) is gathered by
static analysis instead, with the rules ``autolax.jit`` applies when it traces:

* a function's parameters are traced, unless declared static (``static_argnames`` /
  ``static_argnums`` of its decorator, or ``--static``); ``self`` / ``cls`` are static; their
  kinds and shapes come from annotations or ``--signature`` (``declarations``);
* Python literals, ``x.shape`` / ``ndim`` / ``dtype`` / ``size``, ``len()``, ``isinstance()``,
  ``type()`` and ``is`` / ``is not`` comparisons are static, as are the results of NumPy,
  ``math`` and user calls whose arguments are all static;
* JAX calls and anything computed from a traced value are traced.

Where the runtime looks at the jaxpr it traced -- may an ``if``'s untaken branch run anyway,
as a select (``plan.select_safe``)? may the operand after a traced ``and`` / ``or`` be
evaluated where Python skips it (``plan.evaluate_anyway``)? -- ``primitives`` says what the
code traces to, as far as static analysis knows ("not known": a ``lax.cond``), and the plan
decides with the runtime's rule: neither decision is made in this package.

What the runtime would refuse is refused with its words (``autolax.errors``); what only the
runtime can do is a ``ConversionError`` that says to drop ``--standalone``: never code that
runs differently.

Modules: ``values`` (what is known about a value), ``declarations`` (argument types),
``patterns`` (shapes of converted code), ``lowering`` (the entry point, statements, ``if``),
``expressions``, ``loops`` (and list appends), ``primitives`` (what an expression traces
to), ``helpers`` (functions written into the output file), ``breaks`` (Python loops get
their ``break`` back).

    n = ops.cond(n % 2 == 0, if_true, if_false, n, at='f.py:7 -> n')
                                                   ->   n = jax.lax.cond(n % 2 == 0, if_true, if_false, n)
    done = ops.and_(a < b, lambda: c)              ->   done = jnp.logical_and(a < b, c)
    done = ops.and_(a < b, lambda: c / d > 1)      ->   done = jax.lax.cond(a < b, lambda: c / d > 1, lambda: False)
    total = ops.cond(x > 0, if_true, if_false, total, ...)   (if_true: total += x * x)
                                                   ->   total = jnp.where(x > 0, total + x * x, total)
    x = ops.at(x)[i].set(v)                        ->   x = x.at[i].set(v)
"""

from autolax.sourcegen.standalone import helpers
from autolax.sourcegen.standalone.lowering import Lowering, Refs

__all__ = ["Lowering", "Refs", "helpers"]
