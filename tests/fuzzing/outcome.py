"""What one call did, and whether it agrees with Python.

An ``Outcome`` records what a call returned or raised, what it printed and the values of the
program's globals after it. ``verdict(python, got)`` compares a path's outcome with Python's:

* ``ok``: the same value (pytree structure equal; numbers equal up to ``RTOL``/``ATOL``,
  dtype promotion allowed), or the same exception type (``isinstance`` of Python's); and the
  same printed output (numbers parsed and compared with the same tolerance, the text
  between them exactly, whitespace ignored) and the same globals after the call. When both
  raise, a traced path's printed lines must be the first of Python's: under ``jit`` an
  exception raised while tracing comes before anything the traced program prints, but a
  program that runs and fails a check must not print what Python did not.
  An autolax error counts so too when it is an instance of Python's exception type
  (``UndefinedVariableError``, a subclass of ``UnboundLocalError``): it is Python's outcome,
  not a refusal (the summary counts these runs apart).
* ``refused``: autolax raised its own clear error -- an ``autolax.AutolaxError``, or a
  ``jax.errors.JaxRuntimeError`` whose message names autolax (a run-time check). Accepted
  whatever Python did.
* anything else is a mismatch, in one of ``CATEGORIES``.

Exceptions with an ``autolax:`` note (``exc.__notes__``) are their own category,
``noted-error``, unless Python raised the same type (then ``ok``) or JAX raised them (then
``jax-internal``): autolax adds the note ``autolax: raised while staging the `if` at
file:line`` to *every* exception raised while a staged body is traced, so counting noted
exceptions as autolax's own errors would accept the trace-time ``raise`` of an untaken
branch, or a ``list.pop`` run once at trace time, whatever Python did. ``ACCEPT_NOTES =
True`` (``--accept-notes``) counts them as ``refused`` instead.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

RTOL = 1e-5  # float32 rounding: inputs and results may be float32
ATOL = 1e-5

CATEGORIES = {
    "value": "returned a different value than Python (silent)",
    "missing-error": "returned a value where Python raises (silent)",
    "print": "printed something else than Python (silent)",
    "global-state": "left different values in the program's globals (silent)",
    "wrong-error": "raised another exception type than Python (not an autolax error)",
    "unexpected-error": "raised where Python returns (not an autolax error, not from JAX)",
    "jax-internal": "raised a JAX error where Python does not raise it",
    "noted-error": "raised a non-autolax exception carrying an `autolax:` note, where Python does not raise it",
    "autolax-crash": "an exception from inside autolax's own code that is not an AutolaxError",
    "hang": "a staged while loop did not end",
}
SILENT = ("value", "missing-error", "print", "global-state")
ACCEPT_NOTES = False  # see the module docstring

_AUTOLAX_DIR = None
_JAX_DIRS = None


@dataclass
class Outcome:
    """What one call did."""

    kind: str  # "value", "raise", or "skip" (Python's numbers left float range: not compared)
    value: object = None
    exc_type: type | None = None
    exc_text: str = ""  # type: message, and the innermost frames
    refused: bool = False
    noted: bool = False  # carries an `autolax:` note
    origin: str = ""  # "jax", "autolax" or "" (where the exception was raised)
    printed: str = ""
    globals: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)  # warning category names

    @property
    def label(self) -> str:
        if self.kind == "value":
            return "returned " + _short(self.value)
        if self.kind == "raise":
            return f"raised {first_line(self.exc_text)[:160]}"
        return "skipped"


def _short(value, limit=200) -> str:
    text = repr(_plain(_plain_lists(value)))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(tree):
    """Arrays as lists and NumPy/JAX scalars as Python numbers, for messages."""
    import jax

    def leaf(x):
        if hasattr(x, "tolist") and not isinstance(x, jax.core.Tracer):
            return x.tolist()
        return x

    return jax.tree_util.tree_map(leaf, tree)


def is_refusal(exc: BaseException) -> bool:
    """autolax's own clear error (see the module docstring)."""
    import jax
    import autolax

    if isinstance(exc, autolax.AutolaxError):
        return True
    if any(c.__name__ == "AutolaxError" and c.__module__ == "autolax_runtime.errors" for c in type(exc).__mro__):
        return True  # the same class of the runtime's copy (--standalone output)
    return isinstance(exc, jax.errors.JaxRuntimeError) and "autolax" in str(exc)


def has_note(exc: BaseException) -> bool:
    return any("autolax:" in str(note) for note in getattr(exc, "__notes__", ()))


def exception_outcome(exc: BaseException) -> "Outcome":
    return Outcome(
        "raise", exc_type=type(exc), exc_text=_exc_text(exc), refused=is_refusal(exc), noted=has_note(exc), origin=_origin(exc)
    )


def _origin(exc: BaseException) -> str:
    """Where an exception comes from: JAX's code, autolax's own code, or elsewhere (the
    program, NumPy, Python)."""
    global _AUTOLAX_DIR, _JAX_DIRS
    if _AUTOLAX_DIR is None:
        import jax
        import jaxlib
        import autolax

        _AUTOLAX_DIR = os.path.dirname(autolax.__file__) + os.sep
        _JAX_DIRS = (os.path.dirname(jax.__file__) + os.sep, os.path.dirname(jaxlib.__file__) + os.sep)
    if type(exc).__module__.split(".")[0] in ("jax", "jaxlib"):
        return "jax"
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    if last is None:
        return ""
    if last.startswith(_JAX_DIRS):
        return "jax"
    if last.startswith(_AUTOLAX_DIR):
        return "autolax"
    return ""


def _exc_text(exc) -> str:
    """``Type: first line of the message``, then the innermost frames and the whole message
    (long ones cut in the middle)."""
    message = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {message[0] if message else ''}"
    text = "".join(traceback.format_exception(exc, limit=-6, chain=False))
    if len(text) > 4000:
        text = text[:2000] + "\n[...]\n" + text[-2000:]
    return head + "\n" + text


@contextlib.contextmanager
def record_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield caught


def observe(call, namespace=None, initial_globals=None, python=False) -> Outcome:
    """Runs ``call()`` and records its outcome. ``namespace``/``initial_globals``: the
    program's module globals, reset to fresh copies of their initial values before the call
    and read after it. ``python``: the oracle run (NumPy errors on overflow, so that values
    beyond float range are skipped rather than compared)."""
    import jax

    if namespace is not None:
        reset_globals(namespace, initial_globals)
    buf = io.StringIO()
    errstate = np.errstate(all="raise") if python else contextlib.nullcontext()
    skipped = (FloatingPointError, OverflowError) if python else ()
    with contextlib.redirect_stdout(buf), record_warnings() as caught, errstate:
        try:
            value = call()
            value = jax.block_until_ready(value)
            jax.effects_barrier()
            outcome = Outcome("value", value=_to_host(value))
        except skipped as exc:
            outcome = Outcome("skip", exc_type=type(exc), exc_text=_exc_text(exc))
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome to compare
            _barrier()
            outcome = exception_outcome(exc)
            del exc
    outcome.printed = buf.getvalue()
    outcome.warnings = [w.category.__name__ for w in caught]
    if namespace is not None:
        outcome.globals = {name: _to_host(namespace.get(name, _MISSING)) for name in initial_globals}
    if python and outcome.kind == "value" and _too_large(outcome.value):
        outcome.kind = "skip"
    return outcome


def _barrier():
    """Waits for staged prints after a failed call (a failed callback re-raises here; the
    call's own exception is the outcome)."""
    import jax

    try:
        jax.effects_barrier()
    except Exception:  # noqa: BLE001 - already recorded as the call's exception
        pass


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def reset_globals(namespace, initial):
    import copy

    for name, value in initial.items():
        namespace[name] = copy.deepcopy(value)


def initial_globals(namespace) -> dict:
    """The program's own module-level values (upper-case names: ``SCALE``, ``LOG``, ...)."""
    import copy

    return {k: copy.deepcopy(v) for k, v in namespace.items() if k.isupper() and isinstance(v, (int, float, list, dict))}


def _to_host(tree):
    import jax

    def leaf(x):
        if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
            return np.asarray(x)
        return x

    return jax.tree_util.tree_map(leaf, tree)


def _too_large(tree) -> bool:
    """Values beyond float32's exact integers: rounding (or integer wrap-around) makes a
    comparison with Python's wider numbers meaningless."""
    import jax

    for x in jax.tree_util.tree_leaves(tree):
        try:
            a = np.asarray(x, np.float64)
        except (TypeError, ValueError):
            continue
        if np.any(np.abs(a[np.isfinite(a)]) > 2.0**24) or not np.all(np.isfinite(a)):
            return True
    return False


# ----------------------------------------------------------------------------- comparing
def _plain_lists(value):
    """``value`` with the lists a staged loop appended to made plain lists (those of
    autolax's runtime and of its copy, which --standalone output imports)."""
    for module in ("autolax.runtime.ops.lists", "autolax_runtime.ops.lists"):
        lists = sys.modules.get(module)
        if lists is not None and hasattr(lists, "plain_lists"):
            value = lists.plain_lists(value)
    return value


def compare_values(expected, got) -> str | None:
    """None if ``got`` equals ``expected`` (see the module docstring), else how they differ."""
    import jax

    # (A list a staged loop appended to, returned through plain jax.jit, is a list whose
    # pytree leaves are the stacked arrays: README, Known limitations. Its items are compared.)
    got = _plain_lists(got)
    e_leaves, e_tree = jax.tree_util.tree_flatten(_to_host(expected))
    g_leaves, g_tree = jax.tree_util.tree_flatten(_to_host(got))
    if any(isinstance(g, jax.core.Tracer) for g in g_leaves):
        return f"a leaked tracer: expected {_short(expected)}, got {_short(got)}"
    if len(e_leaves) != len(g_leaves) or e_tree != g_tree:
        return f"structure differs: expected {_short(expected)}, got {_short(got)}"
    for i, (e, g) in enumerate(zip(e_leaves, g_leaves)):
        if not _is_number(e) or not _is_number(g):
            if type(e) is not type(g) or repr(e) != repr(g):
                return f"output {i}: expected {e!r}, got {g!r}"
            continue
        e, g = np.asarray(e), np.asarray(g)
        if e.shape != g.shape:
            return f"output {i}: shape {g.shape} instead of {e.shape} (expected {_short(e)}, got {_short(g)})"
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        if not np.allclose(g64, e64, rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"output {i}: expected {_short(e)}, got {_short(g)}"
    return None


def _is_number(x) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "biuf"
    return isinstance(x, (bool, int, float))


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\binf\b|\bnan\b")


def compare_printed_prefix(expected: str, got: str) -> str | None:
    """None if ``got``'s lines are the first lines of ``expected`` (as ``compare_printed``
    compares them): a traced program that raises may have stopped before Python's last
    ``print`` (an error while tracing, before the program ran), but it never prints what
    Python did not."""
    got_lines = got.splitlines()
    expected_lines = expected.splitlines()
    if len(got_lines) > len(expected_lines):
        return f"printed {got!r}, Python printed {expected!r} before raising"
    if compare_printed("\n".join(expected_lines[:len(got_lines)]), "\n".join(got_lines)):
        return f"printed {got!r}, Python printed {expected!r} before raising"
    return None


def compare_printed(expected: str, got: str) -> str | None:
    """None if the printed texts agree: the same text between numbers (whitespace ignored)
    and numbers equal up to the tolerance."""
    e_nums, g_nums = _NUMBER.findall(expected), _NUMBER.findall(got)
    e_text = re.sub(r"\s+", "", _NUMBER.sub("#", expected))
    g_text = re.sub(r"\s+", "", _NUMBER.sub("#", got))
    if e_text != g_text or len(e_nums) != len(g_nums):
        return f"printed {got!r}, Python printed {expected!r}"
    for e, g in zip(e_nums, g_nums):
        e, g = float(e), float(g)
        if not (math.isclose(g, e, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(e) and math.isnan(g))):
            return f"printed {got!r}, Python printed {expected!r}"
    return None


def verdict(python: Outcome, got: Outcome, eager: bool) -> tuple[str, str]:
    """``(verdict, detail)``: ``ok``, ``refused`` or a category of ``CATEGORIES``."""
    if got.kind == "raise":
        # An autolax error that is an instance of the exception Python raised
        # (``UndefinedVariableError`` where Python raises ``UnboundLocalError``) is Python's
        # outcome: a user's ``except UnboundLocalError`` catches it. It is judged as any
        # exception of Python's type is, not counted as a refusal.
        if got.refused and not (python.kind == "raise" and issubclass(got.exc_type, python.exc_type)):
            return "refused", f"{got.exc_type.__name__}: {first_line(got.exc_text)}"
        if python.kind == "raise" and issubclass(got.exc_type, python.exc_type):
            diff = (compare_printed(python.printed, got.printed) if eager
                    else compare_printed_prefix(python.printed, got.printed))
            if diff:
                return "print", diff
            return "ok", ""
        if got.exc_type.__name__ == "NonTerminatingLoop":
            return "hang", first_line(got.exc_text)
        detail = f"raised {got.exc_type.__name__}; Python {python.label}\n{got.exc_text}"
        if got.origin == "autolax":
            return "autolax-crash", detail
        if got.origin == "jax":
            return "jax-internal", detail
        if got.noted:
            return ("refused", detail) if ACCEPT_NOTES else ("noted-error", detail)
        return ("wrong-error" if python.kind == "raise" else "unexpected-error"), detail
    if python.kind == "raise":
        return "missing-error", f"returned {_short(got.value)}; Python raised {python.exc_type.__name__}: {first_line(python.exc_text)}"
    diff = compare_values(python.value, got.value)
    if diff:
        return "value", diff
    diff = compare_printed(python.printed, got.printed)
    if diff:
        return "print", diff
    for name, want in python.globals.items():
        diff = compare_values(want, got.globals.get(name, _MISSING))
        if diff:
            return "global-state", f"global {name}: {diff}"
    return "ok", ""


def first_line(exc_text: str) -> str:
    """The ``Type: message`` line of an exception's text (see ``_exc_text``)."""
    return exc_text.split("\n", 1)[0][:300]
