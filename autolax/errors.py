"""Errors and warnings autolax raises. Each docstring is that error's documentation page."""

from __future__ import annotations


class AutolaxError(Exception):
    """Base class of every error autolax raises itself.

    Errors raised by JAX or by your own code while a converted function is traced pass
    through unchanged (with a note saying which converted statement they came from).
    """


class ConversionError(AutolaxError):
    """The function uses syntax autolax cannot convert. Raised up front, before tracing.

    The message gives ``file:line:col``, the offending source line with a caret under the
    construct, the rule, and a fix. Examples::

        def f(x):
            for v in x:
                yield v          # ConversionError: `yield` makes 'f' a generator

        def g(x):
            global total
            if x > 0:
                total = x        # ConversionError: 'total' is global and assigned in an `if`

    Also raised (under ``strict=True``) for a function whose source autolax cannot read.

    Fix: restructure the code as the message says, or keep the function out of conversion
    with ``@autolax.do_not_convert``.
    """

    def __init__(self, reason, *, filename=None, lineno=None, col=None, source_line=None, fix=None):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.fix = fix
        super().__init__(self._format())

    @property
    def location(self) -> str:
        if self.filename is None:
            return ""
        loc = f"{self.filename}:{self.lineno}" if self.lineno is not None else self.filename
        return f"{loc}:{self.col + 1}" if self.col is not None else loc

    def one_line(self) -> str:
        """``file:line:col: error: reason`` (the CLI's format)."""
        prefix = f"{self.location}: " if self.location else ""
        return f"{prefix}error: {self.reason}"

    def _format(self) -> str:
        lines = [f"{self.location}: {self.reason}" if self.location else self.reason]
        if self.source_line is not None:
            text = self.source_line.rstrip("\n")
            stripped = text.lstrip()
            lines.append("    " + stripped)
            if self.col is not None:
                caret_col = max(0, self.col - (len(text) - len(stripped)))
                lines.append("    " + " " * caret_col + "^")
        if self.fix:
            lines.append(f"Fix: {self.fix}")
        return "\n".join(lines)


class UndefinedVariableError(AutolaxError, NameError):
    """A variable is used where it may not have a value.

    Python only notices an unbound variable on the path that reads it. A staged ``if`` runs
    both branches and a staged loop runs its body for every iteration, so autolax must know
    every carried variable's value on every path. Raised when:

    * a variable is assigned in only one branch of an ``if`` whose condition is traced and
      is used after the ``if``::

          if x > 0:
              y = 1.0
          return y          # 'y' is assigned only in the `if` branch

    * a variable is read before it is assigned (for example a loop reading a value it only
      assigns later in its body).

    Fix: give the variable a value before the ``if`` / loop (``y = 0.0``,
    ``y = jnp.zeros_like(x)``), or assign it in both branches.
    """


class StateMismatchError(AutolaxError, TypeError):
    """A variable's type differs between the branches of a staged ``if`` or across the
    iterations of a staged loop.

    ``lax.cond`` needs both branches to produce values of the same structure, shape and
    dtype; ``lax.while_loop`` / ``lax.scan`` need a loop's carried values to keep theirs.
    dtypes are reconciled by promotion (``total = 0`` then ``total += x_f32`` is fine); shapes
    and structure are not::

        best = None
        for x in xs:
            if best is None or x > best:
                best = x      # 'best' is None before the loop and float32[] after an iteration

        for i in range(n):
            x = jnp.concatenate([x, x])   # 'x' changes shape from f32[2] to f32[4]

    The message names the variable, the statement (``file:line``) and both types.

    Fix: give the variable its final shape and type before the statement (``best = -jnp.inf``,
    ``x = jnp.zeros(n_max)`` plus a mask), or compute it outside the loop.
    """


class UnrolledLoopError(AutolaxError):
    """A loop that carries traced values ran as a Python loop (its body was unrolled into
    the trace), under ``strict=True`` or in ``autolax.trace_check``.

    An unrolled loop makes the traced program grow with the trip count: tracing and
    compiling a 1,000-step loop takes seconds instead of milliseconds. The message names
    the loop's ``file:line`` and why it could not be staged, for example::

        for i in range(len(layers)):
            x = layers[i](x)      # indexes a Python list with the loop index

    Fix: as the message says -- here ``for layer in layers: x = layer(x)`` (iterating a
    Python list is static structure, reported as ``python (static)``), or stack the
    per-step data into an array and index that.
    """


class UnrolledLoopWarning(UserWarning):
    """A loop that carries traced values could not be staged and ran as a Python loop.

    The result is still correct, but the loop was unrolled into the trace. The warning
    points at the loop's own line and says why; ``strict=True`` turns it into
    ``UnrolledLoopError``. See ``UnrolledLoopError`` for the usual fixes.
    """


class NoSourceWarning(UserWarning):
    """autolax could not read a function's source (a builtin, a function made by ``exec``,
    a plain REPL) and used it unconverted: ``autolax.jit`` then behaves like ``jax.jit``.

    Under ``strict=True`` this is a ``ConversionError`` instead. Fix: define the function in
    a file or a notebook cell, or keep it out of conversion with ``autolax.do_not_convert``.
    """


class CallConversionWarning(UserWarning):
    """A user function called from converted code could not be converted and ran as it is.

    Its own ``if``/loops then behave as under plain ``jax.jit``. The warning says why.
    """
