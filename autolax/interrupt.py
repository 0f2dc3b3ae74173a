"""Ctrl-C while a staged computation runs: return to the prompt at once.

Python sees ``KeyboardInterrupt`` only between bytecodes of the main thread, and a thread
inside XLA does not come back until the computation ends: on CPU, XLA runs a program with
a loop on the very thread that calls it (the call itself blocks), and waiting for an
asynchronous result (``block_until_ready``, printing an array) blocks inside XLA too. So a
staged ``while`` that never ends would hold the prompt for ever.

Here the computation runs and is waited for on a worker thread, while the calling thread
waits on a lock in short slices, which a signal interrupts: Ctrl-C raises
``KeyboardInterrupt`` within about 50 ms. The computation itself cannot be cancelled: it
keeps running on the device (on CPU, one core stays busy) until it ends or the process
does. Worker threads are daemons, so they never keep the process alive.

    run(lambda: heavy(x))             # the whole call on a worker (no per-thread JAX settings)
    Interruptible(jitted, ("n",))(x, n)   # traced and compiled here, only run on a worker
"""

from __future__ import annotations

import inspect
import queue
import threading

import jax

from autolax.runtime import compat
from autolax.runtime.ops import checks

_POLL_S = 0.05
_NOTE = (
    "autolax: the interrupted computation may keep running on the device (on CPU, a core stays busy) "
    "until it ends or the process exits"
)

_idle: list = []  # queues of worker threads waiting for a task
_idle_lock = threading.Lock()


class _Task:
    def __init__(self, thunk):
        self.thunk = thunk
        self.done = threading.Lock()  # held until the task has run
        self.done.acquire()
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = self.thunk()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            self.error = exc
        finally:
            self.thunk = None
            self.done.release()


def _worker(tasks):
    while True:
        task = tasks.get()
        task.run()
        del task
        with _idle_lock:
            _idle.append(tasks)


def _submit(task) -> None:
    with _idle_lock:
        tasks = _idle.pop() if _idle else None
    if tasks is None:  # every worker is busy (or stuck in an interrupted computation)
        tasks = queue.SimpleQueue()
        threading.Thread(target=_worker, args=(tasks,), name="autolax-wait", daemon=True).start()
    tasks.put(task)


def run(thunk):
    """``thunk()``, run on a worker thread and waited for here so that Ctrl-C raises
    ``KeyboardInterrupt`` at once; its result is ready (``jax.block_until_ready``).

    The worker does not see this thread's JAX settings (``with jax.enable_x64(True):``,
    a mesh context): use it where ``thunk`` needs none, else ``call``."""
    __tracebackhide__ = True
    task = _Task(lambda: jax.block_until_ready(thunk()))
    _submit(task)
    try:
        # A lock, not an Event: its wait is one C call, so the traceback of a Ctrl-C ends
        # here instead of inside threading.py.
        while not task.done.acquire(timeout=_POLL_S):
            pass
    except KeyboardInterrupt as exc:
        exc.add_note(_NOTE)
        raise
    if task.error is not None:
        error, task.error = task.error, None
        if isinstance(error, jax.errors.JaxRuntimeError):  # a run-time check of autolax's failed
            failure = checks.pop_failure(str(error))
            if failure is not None:
                raise failure from None
        raise error
    return task.result


def _any_traced(args, kwargs) -> bool:
    """Is the call made from inside another trace (a traced argument)?"""
    return any(isinstance(leaf, compat.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def call(jitted, args, kwargs, static_positions=frozenset(), static_names=frozenset()):
    """``jitted(*args, **kwargs)`` for a ``jax.jit`` object whose static arguments are at
    ``static_positions`` / named ``static_names``, interruptible by Ctrl-C.

    Tracing and compiling happen on this thread, so JAX's per-thread settings and contexts
    apply as in a direct call (both are cached by ``jax.jit``); only the compiled program
    runs on a worker (see ``run``). Called with tracers (inside ``jax.vmap``, ``grad`` or
    another trace) it is a plain call."""
    __tracebackhide__ = True
    if any(isinstance(leaf, compat.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs))):
        return jitted(*args, **kwargs)
    compiled = jitted.lower(*args, **kwargs).compile()
    dynamic = (
        tuple(a for i, a in enumerate(args) if i not in static_positions),
        {k: v for k, v in kwargs.items() if k not in static_names},
    )
    # Python numbers and NumPy arrays become arrays here: their dtype depends on this
    # thread's settings (``jax.enable_x64``), which the worker does not have.
    dynamic_args, dynamic_kwargs = jax.tree_util.tree_map(
        lambda leaf: leaf if isinstance(leaf, jax.Array) else jax.device_put(leaf), dynamic
    )
    return run(lambda: compiled(*dynamic_args, **dynamic_kwargs))


def _static_positions(jitted, static_argnames) -> frozenset:
    """Positions of the parameters named static: ``jax.jit`` takes an argument passed by
    position for such a parameter as static too (and leaves it out of the compiled call)."""
    if not static_argnames:
        return frozenset()
    try:
        params = list(inspect.signature(jitted).parameters.values())
    except (TypeError, ValueError):
        return frozenset()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(i for i, p in enumerate(params) if p.kind in positional and p.name in static_argnames)


class Interruptible:
    """An ``autolax.jit`` object whose calls Ctrl-C interrupts (what ``%%autolax`` binds).

    Calling it is ``call(jitted, ...)``; everything else (``.lower``, ``.trace``,
    ``.eval_shape``, ``__wrapped__``) is the ``jax.jit`` object's."""

    def __init__(self, jitted, static_argnames=(), unjitted=None):
        self._jitted = jitted
        self._unjitted = unjitted  # () -> the converted function, for a traced static argument
        self.__autolax_jit__ = getattr(jitted, "__autolax_jit__", None)  # what autolax.jit was given
        self._static_names = frozenset(static_argnames)
        self._static_positions = _static_positions(jitted, self._static_names)
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                object.__setattr__(self, name, getattr(jitted, name))
            except AttributeError:
                pass
        self.__wrapped__ = jitted

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        if self._unjitted is not None and _any_traced(args, kwargs):
            # Called from another function's trace (a helper of the cell): it runs inside that
            # trace as autolax.jit's own conversion of a callee would, so its run-time checks
            # (a `raise` under a traced condition) are the caller's, and a parameter the cell
            # declared static (`--static n` applies to every function of the cell) may be
            # traced there (jax.jit could not hash it).
            return self._unjitted()(*args, **kwargs)
        return call(self._jitted, args, kwargs, self._static_positions, self._static_names)

    def __getattr__(self, name):
        try:
            jitted = self.__dict__["_jitted"]
        except KeyError:  # not initialised (copy, pickle)
            raise AttributeError(name) from None
        return getattr(jitted, name)

    def __repr__(self):
        return repr(self._jitted)
