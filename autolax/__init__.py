"""autolax: Python control flow, staged for ``jax.jit``.

``@autolax.jit`` rewrites the data-dependent ``if`` / ``for`` / ``while`` of a function
(with ``break``, ``continue``, early ``return``, ``and``/``or``/``not``, ternaries,
``x[i] = v`` and list appends) into ``lax.cond``, ``while_loop``, ``fori_loop`` and
``scan``, then hands it to ``jax.jit``. ``autolax.trace_check`` proves no loop was unrolled.
"""


def _working_directory_off_path():
    """``python -m autolax``: take the working directory off ``sys.path`` (as ``python -P``
    does) before anything is imported. Python puts it first for ``-m``, and ``autolax
    convert`` runs inside source trees that may hold files named like the modules autolax
    imports (``numpy.py``, ``jax.py``); none of them may run. Only when this package is the
    ``-m`` module being started (``sys.argv[0]`` is ``'-m'`` until it is found)."""
    import os
    import sys

    argv = getattr(sys, "orig_argv", [])
    if sys.argv[:1] != ["-m"] or sys.flags.safe_path or "-m" not in argv:
        return
    module = argv[argv.index("-m") + 1 : argv.index("-m") + 2]
    if module in (["autolax"], ["autolax.__main__"]) and sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]


_working_directory_off_path()

from autolax.api import convert, do_not_convert, jit, to_source  # noqa: E402
from autolax.check import TraceReport, trace_check  # noqa: E402
from autolax.errors import (  # noqa: E402
    AutolaxError,
    CallConversionWarning,
    ConversionError,
    NoSourceWarning,
    StateMismatchError,
    UndefinedVariableError,
    UnrolledLoopError,
    UnrolledLoopWarning,
)

__version__ = "0.1.0"


def _hide_internal_frames():
    """Drop autolax's own frames from JAX's filtered tracebacks, as JAX drops its own: an
    error while tracing converted code then shows the user's lines only."""
    import os

    try:
        from jax._src import traceback_util

        traceback_util.register_exclusion(os.path.dirname(__file__))
    except (ImportError, AttributeError):  # a JAX without this hook: full tracebacks
        pass


_hide_internal_frames()

__all__ = [
    "AutolaxError",
    "CallConversionWarning",
    "ConversionError",
    "NoSourceWarning",
    "StateMismatchError",
    "TraceReport",
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
