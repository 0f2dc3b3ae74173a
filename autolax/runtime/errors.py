"""Errors and warnings autolax raises. Each docstring is that error's documentation page."""

from __future__ import annotations

from dataclasses import dataclass


class AutolaxError(Exception):
    """Base class of every error autolax raises itself.

    Errors raised by JAX or by your own code while a converted function is traced pass
    through unchanged (with a note saying which converted statement they came from), except
    JAX's tracer errors (a traced value used where Python needs a concrete one), which are
    ``TracedValueError`` where autolax sees them leave your code (see its page).
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

    Also raised (under ``strict=True``) for a function whose source autolax cannot read,
    and when the function runs for a ``finally`` that augments an array a ``return`` of its
    ``try`` holds (``return xs, n`` then ``xs += 1``): whether the name holds an array or a
    number is known only then.

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


class UndefinedVariableError(AutolaxError, UnboundLocalError):
    """A variable is used where it may not have a value.

    Python only notices an unbound variable on the path that reads it. A staged ``if`` runs
    both branches and a staged loop runs its body for every iteration, so autolax must know
    every carried variable's value on every path. Raised when:

    * a variable is read before it is assigned (for example a loop reading a value it only
      assigns later in its body), or after a loop that ran zero times was its only
      assignment, or after an ``if`` whose other branch assigns it::

          if x > 0:
              y = 1.0
          return y          # x <= 0: 'y' is unbound here, as in Python

      When that depends on traced values (a loop over a traced range, a traced condition),
      the check runs when the program runs (see ``autolax.jit``: it raises this error then).

    It is an ``UnboundLocalError`` (a ``NameError``), as Python raises.

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


class ArrayConditionError(AutolaxError, ValueError):
    """The condition of an ``if`` / ``while`` (or an operand of ``and`` / ``or`` / ``not``) is
    a traced array with more than one element, or an empty one. Python (NumPy) raises
    ``ValueError`` for the truth value of such an array; so does autolax, naming the
    statement. (An array of one element, of any shape, is a condition as NumPy's is: its
    one value.)

    Fix: reduce the condition to one value first: ``if jnp.any(c):`` or ``if jnp.all(c):``;
    for an empty array, test ``c.size > 0``.
    """


class TracedComparisonError(AutolaxError, TypeError):
    """Python would have to test a traced comparison to search a list or tuple by value:
    ``x in lst``, ``lst.remove(x)``, ``lst.index(x)``, ``lst.count(x)``.

    Python compares ``x`` with the items in turn (``item is x or item == x``) and tests
    each answer. When ``x`` or an item is traced, the answer is a traced boolean whose value
    only the running program knows (JAX would raise ``TracerBoolConversionError``). autolax
    does not guess: the message names the list and the line. An item that *is* ``x``
    (``stack.remove(stack[0])``) is found without a comparison, as in Python.

    Fix: keep positions rather than values (``del stack[-1]`` / ``stack.pop()`` for
    ``stack.remove(stack[-1])``), or compare with ``jnp``:
    ``jnp.any(jnp.stack(lst) == x)`` for ``x in lst``.
    """


class TracedValueError(AutolaxError, TypeError):
    """Python needs the concrete value of a traced one: the code indexes a Python list with
    it (``table[i]``), takes ``float()`` / ``int()`` / ``bool()`` of it, turns it into a
    NumPy array or a shape, slices with it, or calls a function whose result's shape depends
    on data (``jnp.argwhere`` without ``size=``). Raised where JAX would raise its tracer
    error (``ConcretizationTypeError``, ``TracerIntegerConversionError``, ...):

    * in a staged statement's body (``i`` the index of a loop over a traced range) that
      cannot run in Python instead, because its condition or bounds are traced -- the
      message names the statement and the line;
    * among a function's own statements (``x = float(x0)`` of a traced argument), while JAX
      traces it through ``autolax.jit`` or ``trace_check``; through ``jax.jit`` of converted
      code (``autolax.convert``, the CLI's output) where the runtime sees the error leave
      the function: one whose body runs inside ``with ops.runtime_checks():`` (it calls a
      function or may stage a check), or an item assignment to a Python list. The message
      names the innermost line of your code and the arguments the value depends on::

          the statement at f.py:3 needs the concrete value of a traced expression (`float()`
          of a traced value) while JAX traces the function; the value depends on the
          argument 'x0', which is traced: ...

    JAX's own error is its ``__cause__``. An error your code raises itself is never
    changed.

    Fix: make the Python list an array (``table = jnp.asarray(table)``) and index that; use
    ``jnp`` in place of ``np`` and of the Python builtin (``jnp.asarray(v, dtype=float)``
    for ``float(v)``); give ``jnp.argwhere`` / ``jnp.nonzero`` a static ``size=``; or mark
    the arguments the value depends on static (``static_argnums`` / ``static_argnames``).
    """


class StagedEffectError(AutolaxError):
    """A Python side effect inside a staged branch or loop body would run once, while
    tracing, instead of when the program runs.

    Raised for: appending to (or otherwise mutating) a global or a container that the
    statement does not carry, inside a staged loop or ``if``; output other than ``print``
    there (``logging``, ``warnings.warn``, ``sys.stdout.write``); a ``raise`` under a traced
    condition inside a ``try`` that could catch it (the handler would have to run depending
    on data); under plain ``jax.jit``, an error of the user's code that stops tracing after
    a check was staged (a ``raise`` under a traced condition, then ``items[-1]`` of an empty
    list): Python raises the check's error instead whenever it fails, which only the running
    program knows (``autolax.jit`` runs the function as Python then, to raise Python's
    error). The message names the value and the statement.

    Fix: return the values from the function (or carry them in a local variable of the
    function), and compute the flag that decides an error with ``jnp`` instead of
    catching it. An operand of ``and`` / ``or`` after a traced one that raises while it is
    staged (Python evaluates it only on the runs the traced value lets through): make it
    safe to evaluate on every run.
    """


class ArgumentWriteError(AutolaxError):
    """A converted helper writes into a JAX array it was given (``v[i] = x``), and autolax
    cannot hand the new value back to the caller.

    Python changes the caller's array in place; converted code updates a JAX array as a
    value. autolax rebinds the caller's variable after a call of a helper that writes into
    its argument (``set0(b, 1)`` becomes ``b, _ = ops.call_writing(('v',), set0, b, 1)``)
    where it can see which variable that is: the helper called by its name (a function of
    the module, of the closure or a ``def`` of the same function), the call a statement of
    its own, the argument a local variable. Elsewhere -- a method, a function held in a
    variable or a container, a call inside a larger expression, the argument an item of a
    list or a global, the same array given twice, a helper autolax could not convert -- the
    change would be lost, and autolax raises this error instead of returning the old value.
    (A NumPy array, a list or an object is changed in place, as in Python, and needs nothing.)

    Fix: call the helper as a statement of its own with the array in a local variable
    (``set0(b, 1)``), or have it return the array and assign it (``b = set0(b, 1)``).
    """


class RuntimeCheckError(AutolaxError, RuntimeError):
    """A condition that autolax checks when the program runs failed, and it has no exception
    of the user's to raise: a loop with ``max_steps`` ran longer while differentiated; a run
    took a path on which Python's function returns ``None`` while its other paths return a
    value (a compiled program returns one structure: it returns the value, and the runs that
    take the ``None`` path raise this, after what Python prints on it)::

        def f(x):
            for i in range(30):
                x = x * 0.5
                if x < 1e-3:
                    return x, i
            print("did not converge")   # f(1e12): RuntimeCheckError; f(1.0): (x, i)

    Fix: return one structure on every path (the result and a flag), or ``raise`` where the
    method fails; call the function without ``jit`` where ``None`` is wanted.

    (A ``raise`` or ``assert`` under a traced condition raises the user's own exception when
    called through ``autolax.jit``; under plain ``jax.jit`` every failed check surfaces as
    ``jax.errors.JaxRuntimeError`` whose message starts with ``autolax:``.)
    """


class SourceChangedError(ConversionError):
    """The source file of a function changed after the function was defined: autolax
    would convert code that is not the code running.

    Fix: re-import the module (or re-run the cell) so the function matches its file.
    """


class TracedRecursionError(AutolaxError, RecursionError):
    """A converted function calls itself while it is being traced, and the recursion depth
    depends on traced values: tracing would never end.

    Fix: write the recursion as a loop (a ``while`` with an explicit stack or state), or
    make the recursion depth depend on Python values only.
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


# autolax's refusals: errors Python would not raise, which say autolax cannot give Python's
# outcome. A ``finally`` block a refusal leaves through is skipped (``ops.refusing``): an
# error of the block would replace autolax's.
REFUSALS = (
    ConversionError,
    StateMismatchError,
    StagedEffectError,
    ArgumentWriteError,
    UnrolledLoopError,
    TracedValueError,
    TracedComparisonError,
    TracedRecursionError,
)


class UnrolledLoopWarning(UserWarning):
    """A loop that carries traced values could not be staged and ran as a Python loop.

    Its iterations ran in Python while tracing (the loop was unrolled into the trace), so
    the traced program grows with the trip count. The warning
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


# ----------------------------------------------------------------------------- catalogue
# Every message autolax shows comes from here, so every path (the decorator, files written
# by `autolax convert`, with --standalone or without) says the same words. Each entry: the error class, a
# message template, a fix template, and the README section that explains the rule.
# Fields: {what} (a variable, quoted, or what a generated one stands for), {name}, {where}
# (file:line), {stmt} (`the `while` loop at f.py:3`), {source} (the statement as written),
# and entry-specific ones.
@dataclass(frozen=True)
class Message:
    error: type
    text: str
    fix: str
    docs: str  # README anchor


# ``call-effect``'s fix: how the statement itself changes a container of each kind.
CHANGED_HERE = {
    "list": "`{name}.append(v)`, `{name}[i] = v`",
    "dict": "`{name}[k] = v`",
    "set": "a list in place of the set, `items.append(v)`",
}


MESSAGES = {
    "if-list-append": Message(
        StateMismatchError,
        "{what} is {first} in the `if` branch and {second} in the `else` branch of {stmt}\n    {source}\n"
        "The condition is traced, so appending to a list in one branch only would make the list's length "
        "depend on data.",
        "append in both branches (for example a masked value: `{name}.append(jnp.where(c, item, 0.0))`), "
        "or keep a buffer and a count in place of the list:\n"
        "        {name}_buf = jnp.zeros((N, *item_shape)); {name}_count = 0    # before; N: the most items\n"
        "        {name}_buf = {name}_buf.at[{name}_count].set(item); {name}_count += 1    # for {name}.append(item)\n"
        "    and take {name}_buf[:{name}_count] outside jax.jit (its length depends on data).",
        "#the-rules-semantics",
    ),
    "append-after-jump": Message(
        StateMismatchError,
        "{what} is appended to after the `{kind}` at {jump_where}:\n    {jump_source}\n"
        "Whether the program takes the `{kind}` depends on a traced value, so the number of items appended to "
        "{what} would depend on data.",
        "keep a buffer and a count in place of the list:\n"
        "        {name}_buf = jnp.zeros((N, *item_shape)); {name}_count = 0    # before; N: the most items\n"
        "        {name}_buf = {name}_buf.at[{name}_count].set(item); {name}_count += 1    # for {name}.append(item)\n"
        "    and take {name}_buf[:{name}_count] outside jax.jit (its length depends on data).",
        "#the-rules-semantics",
    ),
    "if-structure": Message(
        StateMismatchError,
        "{what} is {first} in the `if` branch and {second} in the `else` branch of {stmt}\n    {source}\n"
        "The condition is traced, so lax.cond needs both branches to give it the same structure.",
        "give {what} the same structure (same container, same number of items) in both branches.",
        "#when-autolax-says-no",
    ),
    "if-shape": Message(
        StateMismatchError,
        "{what} is {first} in the `if` branch and {second} in the `else` branch of {stmt}\n    {source}\n"
        "The condition is traced, so lax.cond needs both branches to give it the same shape; non-array "
        "values (strings, objects) must be equal.",
        "compute values of one shape in both branches (pad, mask, or use jnp.where), or move the non-array "
        "value out of the `if`.",
        "#when-autolax-says-no",
    ),
    "loop-structure": Message(
        StateMismatchError,
        "{what} is {first} before the loop and {second} after one iteration of {stmt}\n    {source}\n"
        "A staged loop carries each variable with one structure for every iteration.",
        "give {what} its final structure before the loop.",
        "#when-autolax-says-no",
    ),
    "loop-target-object": Message(
        StateMismatchError,
        "{what}, the target of {stmt}, is read after the loop, but the loop stops at a traced condition and "
        "its items are not arrays or numbers ({first}, then {second}):\n    {source}\n"
        "Which item the target holds after the loop depends on data, and only arrays and numbers can be "
        "selected by data.",
        "read {what} inside the loop body only; what the code after the loop needs of it, compute in the body "
        "as an array or a number (`n = len({name})`) and read that after the loop.",
        "#when-autolax-says-no",
    ),
    "loop-none": Message(
        StateMismatchError,
        "{what} is {first} before the loop and {second} after one iteration of {stmt}\n    {source}\n"
        "A staged loop cannot carry None: each carried variable needs an array value before the loop.",
        "initialise {what} before the loop with a value of its final type (for example -jnp.inf, 0.0 or "
        "jnp.zeros(...)), and a separate flag if 'no value yet' matters.",
        "#when-autolax-says-no",
    ),
    "loop-shape": Message(
        StateMismatchError,
        "{what} is {first} before the loop and {second} after one iteration of {stmt}\n    {source}\n"
        "A staged loop carries each variable with one shape for every iteration.",
        "give {what} a fixed shape (preallocate and write with .at[i].set(...), or mask), or keep the loop "
        "in Python over a static range.",
        "#when-autolax-says-no",
    ),
    "loop-loses-value": Message(
        UndefinedVariableError,
        "{what} has a value before {stmt} but not after an iteration of it\n    {source}",
        "do not `del` {what} in the loop, or assign it again before the iteration ends.",
        "#when-autolax-says-no",
    ),
    "loop-types-unsettled": Message(
        StateMismatchError,
        "the types carried by {stmt} do not settle (they change on every iteration)\n    {source}",
        "give each carried variable its final dtype before the loop (for example 0.0 instead of 0).",
        "#when-autolax-says-no",
    ),
    "loop-condition-static": Message(
        StateMismatchError,
        "the condition of {stmt} does not depend on any traced value, but the loop carries traced values "
        "whose shapes or types change\n    {source}",
        "give the carried values one shape and type, so the loop can be staged.",
        "#when-autolax-says-no",
    ),
    "while-became-traced": Message(
        StateMismatchError,
        "{stmt} cannot be staged and its condition became traced after {count} iteration(s), so it cannot "
        "run as a Python loop either.\n    {source}",
        "make the loop's carried values keep one shape and type, so it can be staged.",
        "#when-autolax-says-no",
    ),
    "while-needs-concrete": Message(
        TracedValueError,
        "{stmt} cannot be staged: {reason}. It cannot run as a Python loop instead either: its condition "
        "became traced after {count} iteration(s).\n    {source}",
        "{fix}",
        "#when-autolax-says-no",
    ),
    "unbound": Message(
        UndefinedVariableError,
        "cannot access local variable '{name}' where it is not associated with a value{at}\n"
        "No statement that ran so far gave it a value.",
        "assign '{name}' before this point (before the loop or `if` that first assigns it).",
        "#when-autolax-says-no",
    ),
    "unbound-after-loop": Message(
        UndefinedVariableError,
        "cannot access local variable '{name}' where it is not associated with a value (at {where}): "
        "the staged statement that assigns it did not (a loop that ran zero times or never reached "
        "the assignment, or an `if` whose traced condition chose the branch that does not assign it), "
        "which the running program found",
        "assign '{name}' before the loop or the `if` (for example {name} = jnp.zeros_like(...)), or on every path.",
        "#when-autolax-says-no",
    ),
    "array-condition": Message(
        ArrayConditionError,
        "the condition at {where} is a traced array of shape {shape}; the truth value of an array with "
        "more than one element is ambiguous.",
        "reduce it to one value first, e.g. `if jnp.any(c):` or `if jnp.all(c):`.",
        "#the-rules-semantics",
    ),
    "empty-condition": Message(
        ArrayConditionError,
        "the condition at {where} is a traced array of shape {shape}; the truth value of an empty array is ambiguous.",
        "use `array.size > 0` to check that an array is not empty.",
        "#the-rules-semantics",
    ),
    "object-holding-tracers": Message(
        StateMismatchError,
        "'{name}' is a {kind} object holding traced values: a staged loop or `if` can only carry arrays, "
        "Python numbers and registered pytrees, and would leak the traced values it stores in the object.",
        "register {kind} as a pytree (jax.tree_util.register_dataclass or register_pytree_node_class), or "
        "carry its traced fields as separate variables.",
        "#transforms-pytrees-and-sharding",
    ),
    "append-and-read": Message(
        StateMismatchError,
        "{what} is appended to in {stmt} and also read there; a staged loop collects appended items as its "
        "outputs, so the body would not see the items earlier iterations appended.\n    {source}",
        "read the values from the variables they came from, or keep a running value (a sum, the last item) "
        "in a variable of its own.",
        "#the-rules-semantics",
    ),
    "list-grows-inside": Message(
        StateMismatchError,
        "{what} grows in {stmt}, which also inserts into it (`insert`, a slice assignment): a staged loop "
        "carries a list of one length and collects only items appended at its end as its outputs.\n    {source}",
        "append at the end and reverse or reorder after the loop, or keep a fixed-size array with a count "
        "(`buf = buf.at[k].set(v); k += 1`).",
        "#the-rules-semantics",
    ),
    "append-length-depends-on-data": Message(
        StateMismatchError,
        "{what} is appended to in {stmt}, but {reason}, so the length of {what} would depend on data.\n    {source}",
        "keep a buffer and a count in place of the list:\n"
        "        {name}_buf = jnp.zeros((N, *item_shape)); {name}_count = 0    # before; N: the most items\n"
        "        {name}_buf = {name}_buf.at[{name}_count].set(item); {name}_count += 1    # for {name}.append(item)\n"
        "    and take {name}_buf[:{name}_count] outside jax.jit (its length depends on data); or loop over a "
        "static range without a traced `break`; or, where the trip count follows from arguments alone (a step "
        "size and an end point), mark those static (`static_argnames=(...)`: the loop then runs in Python and "
        "each new value traces the function again).",
        "#the-rules-semantics",
    ),
    "appended-items-differ": Message(
        StateMismatchError,
        "the items appended to a list differ in structure, shape or dtype ({detail})",
        "append items of one shape and dtype (pad or cast them).",
        "#the-rules-semantics",
    ),
    "list-changes-length": Message(
        StateMismatchError,
        "{what} is {first} before the loop and {second} after one iteration of {stmt}: a staged loop "
        "carries a list with one length (appends at the end, in a loop with a static trip count, are "
        "collected as its stacked outputs).\n    {source}",
        "use a fixed-size array with a count (`buf = buf.at[k].set(v); k += 1`) instead of changing the "
        "list's length, or loop over a static range.",
        "#the-rules-semantics",
    ),
    "traced-comparison": Message(
        TracedComparisonError,
        "{what} is searched for a value at {where}, and comparing the value with its item {index} gives a "
        "traced boolean ({detail}): Python tests each comparison (`item is x or item == x`), which only the "
        "running program can decide.\n    {source}",
        "keep positions rather than values (`del {name}[i]` or `{name}.pop(i)` in place of "
        "`{name}.remove({name}[i])`, the index itself in place of `{name}.index(...)`), or compare with jnp: "
        "`jnp.any(jnp.stack({name}) == x)` for `x in {name}`.",
        "#the-rules-semantics",
    ),
    "traced-comparison-display": Message(
        TracedComparisonError,
        "{what} is searched for a value at {where}, and comparing the value with its item {index} gives a "
        "traced boolean ({detail}): Python tests each comparison (`item is x or item == x`), which only the "
        "running program can decide.\n    {source}",
        "compare with jnp: `jnp.any(jnp.stack({name}) == x)` for `x in {name}` (items of one shape).",
        "#the-rules-semantics",
    ),
    "staged-effect": Message(
        StagedEffectError,
        "{target} is {action} inside {stmt}, which is staged (its condition or carried values are traced): "
        "the change would happen once, while tracing, not each time the statement runs.\n    {source}",
        "keep the values in a local variable of the function (a list it appends to, an array it updates) "
        "and return them.",
        "#the-rules-semantics",
    ),
    "staged-outside-effect": Message(
        StagedEffectError,
        "{target} is {action} inside {stmt}, through '{name}' at {where}{line}, which is staged (its condition "
        "or carried values are traced): the change would happen once, while tracing, not each time the "
        "statement runs.\n    {source}\n"
        "'{name}' is not a variable of the function that runs the staged statement (it is a global, or a "
        "variable of an enclosing function that a closure changes), so autolax cannot carry it.",
        "keep what '{name}' collects in a local variable of the function that runs the staged statement "
        "(`calls += 1` beside the call, for a count of calls) and return it or use it after the statement; or "
        "have the function that changes '{name}' return the new value, assigned where it is called; or make "
        "the statement run as Python (its bounds and condition not traced).",
        "#the-rules-semantics",
    ),
    "call-effect": Message(
        StagedEffectError,
        "{target} is changed by a function called inside {stmt}, which is staged (its condition or carried "
        "values are traced): the change would happen once, while tracing, not each time the statement runs.\n"
        "    {source}",
        "change it in the statement itself ({example}: autolax carries it), or have "
        "the function return the new value and assign it (`{name} = f({name}, v)`).",
        "#the-rules-semantics",
    ),
    "host-output": Message(
        StagedEffectError,
        "{call} writes output at {where} inside {stmt}, which is staged (its condition or carried values are "
        "traced): it would run once, while autolax traces the body -- also for a branch the program never "
        "takes, and with tracers for traced values -- not each time the statement runs.\n    {source}",
        "use print(...), which autolax stages, or jax.debug.callback(...) "
        '(`jax.debug.callback(lambda v: LOG.warning("step %d", v), i)`), which runs the call when the '
        "program runs; or write the output outside the staged statement.",
        "#the-rules-semantics",
    ),
    "host-io": Message(
        StagedEffectError,
        "`{call}(...)` at {where} reads or writes outside the program (the terminal, files, the clock, the "
        "operating system) inside {stmt}, which is staged (its condition or carried values are traced): autolax "
        "traces every branch and body once, so it would run then -- also for a branch the program never takes "
        "(`input()` would wait for Return) -- and not each time the statement runs.\n    {source}",
        "call it outside the staged statement and pass its result in (read the input before the loop or the "
        "`if`), or run it when the program runs with jax.debug.callback(...) (for a result: "
        "jax.pure_callback(...)).",
        "#the-rules-semantics",
    ),
    "iterator-effect": Message(
        StagedEffectError,
        "the {kind} '{name}' is advanced (`next`) inside {stmt}, which is staged (its condition or "
        "carried values are traced): it would advance while tracing, not each time the statement runs.\n"
        "    {source}",
        "take its items before the statement (`items = list({name})`) and loop over them (`for v in items:`), "
        "or index them with a counter.",
        "#the-rules-semantics",
    ),
    "traced-value": Message(
        TracedValueError,
        "{stmt} is staged ({why}), but {reason}: JAX has no concrete value to give Python there.\n    {source}",
        "{fix}",
        "#the-rules-semantics",
    ),
    "traced-python-value": Message(
        TracedValueError,
        "the statement at {where} {use} while JAX traces the function{depends}: JAX has no concrete value to "
        "give Python there.\n    {source}",
        "{fix}",
        "#the-rules-semantics",
    ),
    "range-traced": Message(
        TracedValueError,
        "{what} of a range whose bounds are traced: its length is known only when the program runs.",
        "loop over it with `for` (a staged loop), or make its bounds Python ints (static arguments).",
        "#the-rules-semantics",
    ),
    "traced-identity": Message(
        TracedValueError,
        "`{text}` at {where} tests the identity of {what}, which is traced: {why}\n    {source}",
        "compare values instead (`x == False`, `not x`, `x == y`), or assign the variable only the literals "
        "True / False / None (autolax then stages `x is False` as `not x`).",
        "#semantics",
    ),
    "range-step-in-try": Message(
        StagedEffectError,
        "the `range()` at {where} has a traced step and is inside a `try` that catches ValueError: Python raises "
        "ValueError('range() arg 3 must not be zero') there when the step is 0, and whether the handler runs would "
        "depend on data, which a staged program cannot decide.",
        "make the step a Python int (a static argument), or check it before the `try` "
        "(`if step == 0: raise ValueError(...)`).",
        "#semantics",
    ),
    "argument-write": Message(
        ArgumentWriteError,
        "'{name}' writes into its parameter '{param}' (an item or an attribute), which was given a JAX array "
        "at {where}:\n    {source}\n"
        "Python changes the caller's array; converted code updates a JAX array as a value, and here {why}.",
        "call '{name}' as a statement of its own, with the array in a local variable (`{name}(a, ...)`), so that "
        "autolax rebinds it; or have '{name}' return the array and assign it (`a = {name}(a, ...)`).",
        "#changes-reach-the-caller",
    ),
    "argument-write-rebound": Message(
        ArgumentWriteError,
        "'{name}' writes into its parameter '{param}' (an item or an attribute) and then assigns '{param}' anew; "
        "'{param}' was given a JAX array at {where}:\n    {source}\n"
        "Python changes the caller's array before the new assignment; converted code updates a JAX array as a "
        "value, and the value it had there cannot be handed back.",
        "copy the array first in '{name}' (`{param} = {param}.copy()` as its first statement: the caller's array "
        "then stays as it was, in Python too), or change it only through '{param}' and return it.",
        "#changes-reach-the-caller",
    ),
    "argument-write-unconverted": Message(
        ArgumentWriteError,
        "'{name}' writes into its parameter '{param}' (an item or an attribute), which was given a JAX array "
        "at {where}:\n    {source}\n"
        "Python changes the caller's array; '{name}' runs as written here (it was not converted: {how}), and a JAX "
        "array cannot be changed in place.",
        "have autolax convert '{name}' too: convert its file with `autolax convert --all` (or select it with "
        "`--only`), or call it from code `autolax.jit` converts.",
        "#changes-reach-the-caller",
    ),
    "finally-augments-returned": Message(
        ConversionError,
        "the `finally` block augments '{name}' at {where} after a `return` in its `try` computed a value "
        "holding it:\n    {source}\n"
        "'{name}' is an array: Python's augmented assignment changes that returned array in place, while "
        "converted code makes a new value, which the return would not hold.",
        "make the change before the `return`, or spell it `{name} = {name} <op> ...` if the returned value "
        "should keep the old array.",
        "#the-rules-semantics",
    ),
    "argument-write-caller-unconverted": Message(
        ArgumentWriteError,
        "'{name}' writes into its parameter '{param}' (an item or an attribute), which was given a traced array "
        "at {where}:\n    {source}\n"
        "Python changes the caller's array; converted code updates a traced array as a value and hands it back "
        "to converted callers only, and '{caller}' runs as written (it was not converted), so its variable would "
        "keep the old array.",
        "have '{name}' return the array and assign it in '{caller}' (`a = {name}(a, ...)`), or write '{caller}' "
        "so that autolax converts it (a generator: return a list; the CLI's warning says why it was left).",
        "#changes-reach-the-caller",
    ),
    "callee-unconverted": Message(
        TracedValueError,
        "'{name}' is called from converted code with traced values, but autolax could not convert it, so it "
        "runs as written, and {reason}: JAX has no concrete value to give Python there.\n"
        "Why '{name}' was not converted: {why}",
        "rewrite '{name}' as the reason above says, so that autolax converts it; or {fix}",
        "#the-rules-semantics",
    ),
    "returns-none": Message(
        RuntimeCheckError,
        "'{function}' returned {none} on this run: the program took the `{side}` branch of {stmt}\n    {source}\n"
        "on which Python's function returns {none}, while on the other path it returns {value}. The condition "
        "is traced and a compiled program returns one structure: it was compiled to return the value, and "
        "raises this error on the runs that take the None path (after what that path prints).",
        "return a value of one structure on every path (for example the result and a flag: "
        "`return x, converged`, or `raise` an error where the method fails), or call '{function}' without jit "
        "where None is wanted.",
        "#when-autolax-says-no",
    ),
    "callee-not-converted": Message(
        TracedValueError,
        "'{name}' ({file}) is called from converted code with traced values, but it was not converted: this "
        "program runs autolax's runtime without its converter (`autolax convert --standalone` output), which "
        "converts only the functions of a file it converts and those they call in that file, so '{name}' runs as "
        "written, and {reason}: JAX has no concrete value to give Python there.",
        "convert {file} too (`autolax convert --standalone --all {file} -o ...`, or `--only {name}`), or use "
        "the default output (without --standalone), which converts '{name}' when it is called",
        "#the-rules-semantics",
    ),
    "raise-leaves-no-return": Message(
        StagedEffectError,
        "{error} is raised at {where} when the program reaches it, and on the other path there no statement "
        "has given the function's return value a value yet:\n    {source}\n"
        "Which path runs depends on traced values, so both are staged, and the other one would return nothing.",
        "make the condition a Python value (a static argument), or return from every path before this `if`.",
        "#when-autolax-says-no",
    ),
    "branch-fails": Message(
        StagedEffectError,
        "the `{side}` branch of {stmt} raised {error} while autolax staged it:\n    {source}\n"
        "The condition is traced: Python raises this only on the runs that take that branch, which only "
        "the running program knows; autolax stages the branch as raising it then, but not in a function "
        "that converted code calls (whose `try` may catch it), not for a variable read unbound in a staged "
        "loop body, not after the branch changed a container the function was given, and under plain "
        "`jax.jit` only in a function that stages another check",
        "make the branch safe to run whatever the condition (keep indices in range, do not take items "
        "from an empty list or read a variable after `del`), call the function through autolax.jit, or "
        "raise the error yourself with `raise` / `assert` under the condition "
        "(autolax checks those when the program runs).",
        "#the-rules-semantics",
    ),
    "branch-fails-in-try": Message(
        StagedEffectError,
        "the `{side}` branch of {stmt} raised {error} while autolax staged it, inside a `try` that catches it "
        "(or whose `finally` can fail too):\n    {source}\n"
        "The condition is traced: Python raises this (and runs the handler or `finally`) only on the runs that "
        "take that branch, which a staged program cannot decide",
        "make the branch safe to run whatever the condition (keep indices in range, do not take items from an "
        "empty list or read a variable after `del`), or decide the condition in Python.",
        "#semantics",
    ),
    "body-fails": Message(
        StagedEffectError,
        "{stmt} raised {error} while autolax staged it:\n    {source}\n"
        "The loop's condition or bounds are traced: Python raises this only if an iteration runs, which "
        "only the running program knows, so autolax stages the loop on every run",
        "make the loop safe to stage whatever the values (keep indices in range, do not unpack or iterate "
        "over a traced number), or raise the error yourself with `raise` / `assert` under a condition "
        "(autolax checks those when the program runs).",
        "#the-rules-semantics",
    ),
    "logical-shapes": Message(
        StateMismatchError,
        "the value of the `{kind}` at {where} is its first operand (shape {first}) where that is {when}, else the "
        "next one (shape {other}): Python's value has one shape or the other depending on data, which a traced "
        "program cannot return.\n    {source}",
        "give the operands one shape (`jnp.where(c, v, jnp.zeros_like(v))` for `c and v`), or use the expression "
        "only as the condition of an `if` / `while`.",
        "#the-rules-semantics",
    ),
    "operand-fails": Message(
        StagedEffectError,
        "the operand after `{kind}` at {where} raised {error} while autolax staged it:\n    {source}\n"
        "Python evaluates it only when the traced value before it is {needed}, which only the running "
        "program knows; autolax stages it as raising this then, but not in a function that converted code "
        "calls (whose `try` may catch it), not for a variable read unbound in a staged loop body, and under "
        "plain `jax.jit` only in a function that stages another check",
        "make the operand safe to evaluate whatever the value before it (define every name it reads, "
        "keep indices in range), call the function through autolax.jit, or decide the value before it in "
        "Python.",
        "#the-rules-semantics",
    ),
    "operand-fails-in-try": Message(
        StagedEffectError,
        "the operand after `{kind}` at {where} raised {error} while autolax staged it, inside a `try` that "
        "catches it (or whose `finally` can fail too):\n    {source}\n"
        "Python evaluates it (and runs the handler or `finally`) only on the runs the value before it "
        "allows, which a staged program cannot decide",
        "make the operand safe to evaluate whatever the value before it (define every name it reads, "
        "keep indices in range), or decide the value before it in Python.",
        "#semantics",
    ),
    "window-range": Message(
        RuntimeCheckError,
        "autolax: the window at {where} (width {width}) started outside 0..{last} when the program ran: on an "
        "axis of length {n}, NumPy returns a shorter (or empty) window there, which a fixed-shape program "
        "cannot; autolax reads a window at a traced start with `lax.dynamic_slice` and checks that it lies "
        "inside the axis.\n    {source}",
        "keep the start in range(0, {n} - {width} + 1), or pad the array (`jnp.pad`) so that every window fits.",
        "#the-rules-semantics",
    ),
    "masked-lengths": Message(
        RuntimeCheckError,
        "autolax: the slices combined at {where} had different lengths when the program ran (their bounds "
        "are traced, so autolax computes them at full length under a mask, which pairs their items one to "
        "one); Python would raise ValueError there, or broadcast a slice of length 1.\n    {source}",
        "slice both operands with the same bounds (`a[:j] @ b[:j]`), or make the lengths agree.",
        "#the-rules-semantics",
    ),
    "mask-write-values": Message(
        TracedValueError,
        "the write through a traced boolean mask at {where} assigns an array whose length would be the "
        "number of items the mask selects, which only the running program knows (autolax writes through a "
        "traced mask with `jnp.where`, at full length).\n    {source}",
        "assign a scalar, or values computed item by item from reads through the same mask "
        "(`x[m] = y[m] * 2` is `jnp.where(m, y * 2, x)`), or write `x = jnp.where(m, new_full_length, x)`.",
        "#the-rules-semantics",
    ),
    "traced-effect": Message(
        StagedEffectError,
        "{target} is {action} in a function that jax.jit is tracing: the change would happen once, "
        "while tracing (and hold traced values), not on every call as in Python",
        "return the new values and update {target} outside the jitted function (or call the function "
        "without jax.jit); to do it once per trace on purpose (a trace counter), do it in a function "
        "marked @autolax.do_not_convert.",
        "#the-rules-semantics",
    ),
    "math-int-range": Message(
        TracedValueError,
        "`{call}(...)` at {where} gives a number outside the range of {dtype}, JAX's integer type here, where "
        "Python's integer is exact.\n    {source}",
        "enable 64-bit integers (`jax.config.update('jax_enable_x64', True)`), or keep the value a float "
        "(`jnp.{short}(x)`).",
        "#the-rules-semantics",
    ),
    "math-float-range": Message(
        TracedValueError,
        "`{call}(...)` at {where} gives a number beyond the range of {dtype}, the argument's type here, where "
        "Python's float64 has it.\n    {source}",
        "enable 64-bit floats (`jax.config.update('jax_enable_x64', True)`), or keep the argument smaller.",
        "#the-rules-semantics",
    ),
    "if-function-nested": Message(
        StateMismatchError,
        "'{name}' holds a different function in each branch of the `if` at {where}, and already one of two "
        "functions chosen by another traced condition inside a branch: autolax stages the calls of a function "
        "chosen by one traced `if`, not by nested ones.\n    {source}",
        "choose the function with one `if` (`if a and b: {name} = f`), or call it inside the branch that chooses it.",
        "#the-rules-semantics",
    ),
    "raise-in-try": Message(
        StagedEffectError,
        "`{statement}` under a traced condition at {where} is inside a `try` that catches it; whether the handler "
        "runs would depend on data, which a staged program cannot decide.\n    {source}",
        "compute the condition as a value (`bad = x < 0`) and select with jnp.where, or raise outside the `try`; "
        "autolax stages `raise E(...)` of a builtin exception written in the `try` body itself as a jump to its "
        "handler when that handler reads no `except E as e` name and has no bare `raise`, and runs a handler "
        "that only calls, raises or passes when a run-time check (`math.sqrt` of a traced number) that the `try` "
        "catches fails, if that handler always raises (`except ValueError: sys.exit('...')`).",
        "#semantics",
    ),
    "side-fails-in-try": Message(
        StagedEffectError,
        "the `{side}` side of the conditional expression at {where} raised {error} while autolax staged it, "
        "inside a `try` that catches it (or whose `finally` can fail too):\n    {source}\n"
        "The test is traced: Python raises this (and runs the handler or `finally`) only on the runs that take "
        "that side, which a staged program cannot decide",
        "make the side safe to evaluate whatever the test (keep indices in range, do not take items from an "
        "empty list), or decide the test in Python.",
        "#semantics",
    ),
    "fails-after-check": Message(
        StagedEffectError,
        "{stmt} ran as a Python loop ({reason}), and an iteration raised {error} while traced, after a "
        "`raise` / `assert` (of this iteration or an earlier one) that is checked when the program runs:"
        "\n    {source}\n"
        "Python raises whichever comes first, which only the running program knows",
        "make the loop safe to run whatever the values (keep indices in range, do not take items from an "
        "empty list), or call the function through autolax.jit, which then runs it as Python to find "
        "Python's error.",
        "#semantics",
    ),
    "raises-after-check": Message(
        StagedEffectError,
        "{error} was raised at {where} while jax.jit traced the function:\n    {source}\n"
        "The statement at {check_where} staged a check that the program makes only when it runs (a `raise` "
        "or `assert` under a traced condition, a side of a conditional expression that failed while traced, "
        "or a read of a variable a staged loop may not have assigned):"
        "\n    {check_source}\n"
        "If that check fails, Python raises its error instead, which only the running program knows",
        "make the code after the check safe to run whatever the values (keep indices in range, do not take "
        "items from an empty list, define every name it reads), or call the function through autolax.jit, "
        "which then runs it as Python on the arguments to find Python's error.",
        "#semantics",
    ),
    "traced-message": Message(
        StagedEffectError,
        "`{statement}` under a traced condition at {where} makes its error from traced values: the error is "
        "raised when the program runs, but its message was made while autolax traced it, where the values are "
        "tracers (`{shown}`), not the numbers Python's message shows.\n    {source}",
        "make the message from Python values only (a constant text, static arguments), and print the traced "
        'values before the `{statement}` (`print(f"x = {{x}}")` prints when the program runs, only on the runs '
        "that take that path).",
        "#semantics",
    ),
    "traced-print-text": Message(
        StagedEffectError,
        "`print` at {where} is given text made from a traced value while autolax traced it (`{shown}`): "
        "Python prints the number there.\n    {source}",
        'give `print` the value itself or an f-string (`print("n =", n)`, `print(f"n = {{n}}")`, '
        '`print("n = {{}}".format(n))`): autolax formats those when the program runs. `str(n)`, `"%d" % n` '
        'and `"n = " + str(n)` are evaluated while tracing.',
        "#semantics",
    ),
    "raise-in-with": Message(
        StagedEffectError,
        "`{statement}` under a traced condition at {where} is inside a `with` block, whose context manager may "
        "suppress the error (`contextlib.suppress`, an `__exit__` that returns True); whether it does would depend "
        "on data, which a staged program cannot decide.\n    {source}",
        "compute the condition as a value (`bad = x < 0`) and select with jnp.where, or raise outside the `with` "
        "block.",
        "#semantics",
    ),
    "raise-before-finally": Message(
        StagedEffectError,
        "`{statement}` under a traced condition at {where} is inside a `try` whose `finally` block can fail "
        "too (it raises, asserts or reads a variable that may be unbound): Python runs the `finally` after "
        "this error, from the values at this line, and an error there replaces this one, which a staged "
        "program cannot decide.\n    {source}",
        "compute the condition as a value (`bad = x < 0`) and select with jnp.where, or raise outside the "
        "`try` (or check the `finally`'s condition before the `try`).",
        "#semantics",
    ),
    "raise-both-branches": Message(
        StagedEffectError,
        "both branches of a staged `if` raise, so this traced function raises on every call; which "
        "exception depends on traced values",
        "decide between the exceptions with a Python value (a static argument), or raise before calling jax.jit.",
        "#semantics",
    ),
    "raise-every-time": Message(
        StagedEffectError,
        "{stmt} raises on every path each time it runs, and it always runs, so this traced function "
        "raises on every call; which exception, or whether a check before it fails first, depends on "
        "traced values",
        "decide with a Python value (a static argument) whether to raise, or raise before calling jax.jit.",
        "#semantics",
    ),
    "traced-recursion": Message(
        TracedRecursionError,
        "'{name}' calls itself more than {depth} levels deep while its staged `if` (or loop) is traced: "
        "a staged `if` traces both branches, so a recursion that stops on a traced condition never stops "
        "while tracing",
        "write the recursion as a loop (a `while` with explicit state), or make its depth depend on Python "
        "values only (a static argument).",
        "#semantics",
    ),
    "loop-bound-exceeded": Message(
        RuntimeCheckError,
        "{stmt} ran more than max_steps={max_steps} iterations while being differentiated",
        "raise max_steps in autolax.loop_options(max_steps=...) (or autolax.jit(max_steps=...)).",
        "#gradients-through-while-loops",
    ),
    "unrolled": Message(
        UnrolledLoopError,
        "the loop at {where} carries traced values but ran as a Python loop (unrolled into the trace): "
        "{reason}.\n    {source}",
        "{rewrite}\nOr drop strict=True to accept the unrolled loop.",
        "#when-autolax-says-no",
    ),
    # ------------------------------------------------------------------ autolax convert --standalone
    # ------------------------------------------------------------------ ecosystem (issue 15)
    # Entry points and library code. Fields: {name} (what was given), {inner} (the user's
    # function inside it), {rewrite} (the one-line fix).
}


def make(code: str, **fields) -> AutolaxError:
    """The error for catalogue entry ``code``, its templates filled from ``fields``."""
    return from_message(code, MESSAGES[code], **fields)


def from_message(code: str, entry: Message, **fields) -> AutolaxError:
    """The error of ``entry``, a ``Message`` named ``code`` (of this catalogue, or of one the
    API or the front end keeps for its own errors), its templates filled from ``fields``."""
    text = entry.text.format(**fields).rstrip()
    fix = entry.fix.format(**fields)
    exc = entry.error(f"{text}\nFix: {fix}")
    exc.code = code
    exc.docs = entry.docs
    exc.fix = fix
    return exc
