"""autolax: Python control flow, staged for ``jax.jit``.

``@autolax.jit`` rewrites the data-dependent ``if`` / ``for`` / ``while`` of a function
(with ``break``, ``continue``, early ``return``, ``and``/``or``/``not``, ternaries,
``x[i] = v`` and list appends) into ``lax.cond``, ``while_loop``, ``fori_loop`` and
``scan``, then hands it to ``jax.jit``. ``autolax.trace_check`` proves no loop was unrolled.
"""

import os
import sys


def _working_directory_off_path():
    """``python -m autolax``: take the working directory off ``sys.path`` (as ``python -P``
    does) before anything is imported. Python puts it first for ``-m``, and ``autolax
    convert`` runs inside source trees that may hold files named like the modules autolax
    imports (``numpy.py``, ``jax.py``); none of them may run. Only when this package is the
    ``-m`` module being started (``sys.argv[0]`` is ``'-m'`` until it is found)."""
    argv = getattr(sys, "orig_argv", [])
    if sys.argv[:1] != ["-m"] or sys.flags.safe_path or "-m" not in argv:
        return
    module = argv[argv.index("-m") + 1 : argv.index("-m") + 2]
    if module in (["autolax"], ["autolax.__main__"]) and sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]


_working_directory_off_path()

from autolax.api import (  # noqa: E402
    convert,
    convert_package,
    do_not_convert,
    filter_jit,
    jit,
    loop_options,
    to_source,
)
from autolax.check import TraceReport, trace_check  # noqa: E402
from autolax.runtime import ops  # noqa: E402,F401 - what files written by earlier `autolax convert` import
from autolax.runtime.errors import (  # noqa: E402
    ArgumentWriteError,
    ArrayConditionError,
    AutolaxError,
    CallConversionWarning,
    ConversionError,
    NoSourceWarning,
    RuntimeCheckError,
    SourceChangedError,
    StagedEffectError,
    StateMismatchError,
    TracedComparisonError,
    TracedRecursionError,
    TracedValueError,
    UndefinedVariableError,
    UnrolledLoopError,
    UnrolledLoopWarning,
)

__version__ = "0.1.0"


__all__ = [
    "ArgumentWriteError",
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
    "TracedComparisonError",
    "TracedValueError",
    "TracedRecursionError",
    "UndefinedVariableError",
    "UnrolledLoopError",
    "UnrolledLoopWarning",
    "convert",
    "convert_package",
    "do_not_convert",
    "filter_jit",
    "jit",
    "loop_options",
    "to_source",
    "trace_check",
]


def load_ipython_extension(ipython):  # %load_ext autolax
    from autolax.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    from autolax.magic import unload_ipython_extension as unload

    unload(ipython)
