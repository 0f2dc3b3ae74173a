"""autolax: Python control flow, staged for ``jax.jit``.

``@autolax.jit`` rewrites the data-dependent ``if`` / ``for`` / ``while`` of a function
(with ``break``, ``continue``, early ``return``, ``and``/``or``/``not``, ternaries,
``x[i] = v`` and list appends) into ``lax.cond``, ``while_loop``, ``fori_loop`` and
``scan``, then hands it to ``jax.jit``. ``autolax.trace_check`` proves no loop was unrolled.
"""

from autolax.api import convert, do_not_convert, jit, to_source
from autolax.check import TraceReport, trace_check
from autolax.errors import (
    ArrayConditionError,
    AutolaxError,
    CallConversionWarning,
    ConversionError,
    NoSourceWarning,
    RuntimeCheckError,
    SourceChangedError,
    StagedEffectError,
    StateMismatchError,
    TracedRecursionError,
    UndefinedVariableError,
    UnrolledLoopError,
    UnrolledLoopWarning,
)

__version__ = "0.1.0"


__all__ = [
    "ArrayConditionError",
    "AutolaxError",
    "CallConversionWarning",
    "ConversionError",
    "NoSourceWarning",
    "RuntimeCheckError",
    "SourceChangedError",
    "StagedEffectError",
    "StateMismatchError",
    "TraceReport",
    "TracedRecursionError",
    "UndefinedVariableError",
    "UnrolledLoopError",
    "UnrolledLoopWarning",
    "convert",
    "do_not_convert",
    "jit",
    "to_source",
    "trace_check",
]


def load_ipython_extension(ipython):  # %load_ext autolax
    from autolax.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    from autolax.magic import unload_ipython_extension as unload

    unload(ipython)
