"""Differential fuzzer: random Python programs, run as plain Python and through every path autolax offers.

Each program (``generator``) is a small module whose ``f(a, b, n, xs, ys)`` reads like code
a person writes: control flow autolax stages, and Python's semantics around it (closures,
``try``/``raise``, zero-trip loops, list methods, ``del``, globals, aliases, unbound names,
``print``, ``assert``). The oracle is Python itself (``jnp`` bound to NumPy, which refuses
what ``jax.numpy`` refuses where the programs differ: ``paths.NUMPY_AS_JNP``). Each program
runs through ``autolax.jit``, ``jax.jit(autolax.convert(f))``, ``autolax.convert`` called
eagerly, the CLI's default and ``--standalone`` output and ``%%autolax`` (``paths``), with
every numeric argument traced and again with static mixes, and each outcome must equal
Python's -- value, exception type, printed output -- or be autolax's own clear error
(``outcome``). ``report`` adds the results up per path and per construct.

Modules: ``generator`` (programs), ``constructs`` (what a program has), ``paths`` (the ways
to run it), ``interpret`` (evaluates a jaxpr without compiling it), ``outcome`` (the oracle's
comparison), ``runner`` (one program, many programs), ``report`` (tables), ``reduce``
(shrinks a failing program), ``__main__`` (the command line)::

    python -m tests.fuzzing --n 10000 --seed 1 --jobs 2      # the long run
    python -m tests.fuzzing --show 1234                      # print one program
    python -m tests.fuzzing --reduce 1234                    # shrink a failing one
    python -m tests.fuzzing --n 200 --focus try --paths jit,cli

``tests/integration/fuzz/test_fuzz.py`` runs about 80 programs with fixed seeds, one test per construct, and
asserts no silent mismatch and no crash inside autolax (``FINDINGS.md``: what remains).
"""

from .generator import CONSTRUCTS, generate
from .outcome import CATEGORIES
from .paths import ALL_PATHS
from .runner import check_program, configured, run

__all__ = ["ALL_PATHS", "CATEGORIES", "CONSTRUCTS", "check_program", "configured", "generate", "run"]
