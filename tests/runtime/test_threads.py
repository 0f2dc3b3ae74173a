"""Conversion and calls from many threads at once (issue 16, item 7): 16 threads convert and
call distinct functions, one shared function, and closures sharing one code object, through
`autolax.jit` and `autolax.convert`, all starting together; every result equals plain
Python's."""

import importlib.util
import threading

import jax.numpy as jnp
import numpy as np

import autolax

N_THREADS = 16

TEMPLATE = '''
def distinct_{k}(x, n):
    total = 0.0
    i = 0
    while i < n:
        if x > {k}:
            total = total + x * {k}
        else:
            total = total - 1.0
        i += 1
    for j in range(3):
        if total > 100.0 + {k}:
            break
        total = total + j
    return total
'''

SHARED = '''
def shared(x, n):
    out = []
    for i in range(4):
        out.append(x * i if x > 1.0 else -x * n)
    acc = 0.0
    for v in out:
        acc = acc + v
    return acc


def make(k):
    def closure(x):
        y = x
        while y < 10.0 * k:
            y = abs(y) * 2.0 + 1.0
        return y + k
    return closure
'''


def load_fresh(tmp_path, name):
    """A module written now: its functions were never converted in this process."""
    path = tmp_path / f"{name}.py"
    path.write_text("".join(TEMPLATE.format(k=k) for k in range(N_THREADS)) + SHARED)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_threads(work):
    barrier = threading.Barrier(N_THREADS)
    errors = []

    def target(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as exc:  # reported below with its thread
            errors.append((k, exc))

    threads = [threading.Thread(target=target, args=(k,)) for k in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


def test_sixteen_threads_convert_and_call_at_once(tmp_path):
    module = load_fresh(tmp_path, "threads_fresh")
    inputs = [(-1.0, 3), (2.5, 4), (20.0, 5), (7.0, 0)]

    def work(k):
        distinct = getattr(module, f"distinct_{k}")
        closure = module.make(k % 4 + 1)  # the same code object for several threads
        jitted = [autolax.jit(distinct), autolax.jit(module.shared), autolax.jit(closure)]
        converted = [autolax.convert(distinct), autolax.convert(module.shared), autolax.convert(closure)]
        for x, n in inputs:
            cases = [(distinct, (x, n)), (module.shared, (x, n)), (closure, (x,))]
            for (plain, args), jit_fn, conv_fn in zip(cases, jitted, converted):
                expected = plain(*args)
                np.testing.assert_allclose(float(jit_fn(*args)), expected, rtol=1e-5)
                np.testing.assert_allclose(float(conv_fn(*args)), expected, rtol=1e-5)
                staged_args = (jnp.float32(args[0]),) + args[1:]
                np.testing.assert_allclose(float(conv_fn(*staged_args)), expected, rtol=1e-5)

    run_threads(work)


def test_threads_share_one_conversion(tmp_path):
    """Threads converting the same function at once get one converted code object."""
    module = load_fresh(tmp_path, "threads_shared")
    results = [None] * N_THREADS

    def work(k):
        results[k] = autolax.convert(module.shared)

    run_threads(work)
    assert len({id(r) for r in results}) == 1
    assert len({r.__code__ for r in results}) == 1
