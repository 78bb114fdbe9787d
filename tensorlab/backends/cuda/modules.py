"""Kernel modules: compiled on first use, looked up by name expression from a flat cache (the hot
path of every launch, ``function()``, is one dict lookup).

How much one compile covers is the driver's choice (``driver.module_granularity``, see
driver.py):

- ``"expression"`` (CuPy, real GPUs): one module per (source, name expression, options, device),
  so the first ``a + b`` of a session compiles one small instantiation (a few hundred ms of NVRTC)
  instead of all 532 of elementwise.cu (minutes). nvrtc.py caches each cubin on disk
  (~/.cache/tensorlab/cubin), and ``precompile()`` fills that cache for every instantiation in parallel.
- ``"source"`` (the emulation): one module per (source, options, device) holding every name
  expression of the source's tensorlab.kernel_table row (one g++ + ASan build per expression would
  make CI far too slow).

Thread safety: threads racing to the first launch of the same key compile it once (a lock per
module key); different keys compile concurrently (the table lock is held only to look up or create
a key's lock, never across a compile).
"""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from ...kernel_table import KERNELS
from ...kernels_path import kernel_dir
from .active import driver

OPTIONS = ("-std=c++17",)  # the drivers add the include path of kernels/
EXPRESSION, SOURCE = "expression", "source"  # the values of Driver.module_granularity

_functions = {}  # (source, name_expression, device) -> driver function: the launch hot path
_modules = {}    # module key -> driver module; key = (source, name_expressions, options, device)
_locks = {}      # module key -> the lock its (single) compile holds
_table_lock = threading.Lock()  # guards _locks only; never held across a compile


def _check(source, name_expression):
    exprs = KERNELS.get(source)
    if exprs is None:
        raise RuntimeError(f"no kernel source {source!r} in tensorlab/kernel_table.py (sources: "
                           f"{', '.join(sorted(KERNELS))})")
    if name_expression is not None and name_expression not in exprs:
        raise RuntimeError(f"kernel {name_expression!r} is not instantiated by {source}: add it to that "
                           "source's row in tensorlab/kernel_table.py")
    return exprs


def granularity(drv=None):
    """What one load_module call of the driver compiles: "expression" or "source"."""
    g = getattr(driver if drv is None else drv, "module_granularity", SOURCE)
    if g not in (EXPRESSION, SOURCE):
        raise RuntimeError(f"driver {getattr(drv or driver, 'name', '?')!r} has module_granularity {g!r}; "
                           f"expected {EXPRESSION!r} or {SOURCE!r}")
    return g


def module_key(source, name_expression, device, options=OPTIONS):
    """The key of the module that holds `name_expression` of `source` under the active driver:
    (source, (name_expression,), options, device) for an "expression" driver, (source, every
    expression of the source's row, options, device) for a "source" driver."""
    exprs = _check(source, name_expression)
    if granularity() == EXPRESSION:
        if name_expression is None:
            raise ValueError("an expression-granular driver compiles one name expression at a time: name one")
        return (source, (name_expression,), options, device)
    return (source, tuple(exprs), options, device)


def _load(key):
    """The driver module of `key`, compiling it unless cached; one compile per key however many
    threads ask at once."""
    m = _modules.get(key)
    if m is not None:
        return m
    with _table_lock:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.Lock()
    with lock:
        m = _modules.get(key)
        if m is None:
            source, exprs, options, device = key
            m = driver.load_module(kernel_dir() / source, exprs, options, device)
            _modules[key] = m
    return m


def module(source, device, options=OPTIONS, name_expression=None):
    """The compiled module holding `name_expression` of `source` on device index `device` (for a
    "source" driver, the whole source's module; `name_expression` may then be omitted)."""
    return _load(module_key(source, name_expression, device, options))


def function(source, name_expression, device):
    """The compiled kernel `name_expression` of `source` on device index `device`."""
    f = _functions.get((source, name_expression, device))
    if f is None:
        f = _function_slow(source, name_expression, device)
    return f


def _function_slow(source, name_expression, device):
    m = _load(module_key(source, name_expression, device))
    f = m.get_function(name_expression)
    # setdefault: two racing threads end up with the same function object
    return _functions.setdefault((source, name_expression, device), f)


def units(sources=None, drv=None):
    """What precompile() compiles for `sources` (default: every source of kernel_table): a list of
    (source, name_expression) for an "expression" driver, (source, None) per source for a
    "source" one."""
    names = sorted(KERNELS) if sources is None else [sources] if isinstance(sources, str) else list(sources)
    for s in names:
        _check(s, None)
    if granularity(drv) == EXPRESSION:
        return [(s, e) for s in names for e in KERNELS[s]]
    return [(s, None) for s in names]


def default_workers():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class PrecompileError(RuntimeError):
    """Some instantiations failed to compile; ``failures`` lists (source, name_expression, message)."""

    def __init__(self, failures, total):
        self.failures = failures
        lines = [f"  {s}: {e or '(whole source)'}: {m.splitlines()[0] if m else ''}" for s, e, m in failures[:5]]
        more = f"\n  ... and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(f"precompile: {len(failures)} of {total} compile(s) failed:\n" + "\n".join(lines) + more)


def precompile(sources=None, device=None, workers=None, progress=None):
    """Compile every instantiation of `sources` (names of kernels/*.cu; default all of them) for
    device index `device` (default: the current device) on `workers` threads (default: one per
    CPU), loading them as a first launch would. On a GPU this fills nvrtc.py's on-disk cubin cache, so
    later processes (a test run, pytest-xdist workers) load each kernel in milliseconds. NVRTC
    releases the GIL while it compiles, so threads scale with the cores.

    `progress(done, total, what)` is called from this thread before the first compile (done=0)
    and after each one. Returns {"units", "granularity", "workers", "elapsed_s"}; raises
    PrecompileError after trying everything if any compile failed (the failures are not cached:
    a launch retries and raises the compiler's message). Without a usable GPU (and not on the emulation
    driver) it raises RuntimeError saying what is missing, as any other request for CUDA."""
    from .. import cuda_unavailable_reason
    from .cupy_driver import CupyDriver
    if isinstance(driver, CupyDriver):  # the real driver (not the emulation's, not a test's)
        reason = cuda_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"precompile() compiles for a CUDA GPU, and there is none: {reason}")
    todo = units(sources)
    dev = driver.current_device() if device is None else int(device)
    g = granularity()
    n = len(todo)
    workers = max(1, min(n or 1, int(workers) if workers else default_workers()))
    t0 = time.perf_counter()
    if progress:
        progress(0, n, f"compiling {n} {'instantiation' if g == EXPRESSION else 'source'}(s) on {workers} thread(s)")
    failures = []

    def one(unit):
        source, expr = unit
        if expr is None:
            _load(module_key(source, None, dev))
        else:
            function(source, expr, dev)

    done = 0
    with ThreadPoolExecutor(workers, thread_name_prefix="tl-precompile") as pool:
        futures = {pool.submit(one, u): u for u in todo}
        try:
            for fut in as_completed(futures):
                source, expr = futures[fut]
                e = fut.exception()
                if e is not None:
                    failures.append((source, expr, f"{type(e).__name__}: {e}"))
                done += 1
                if progress:
                    progress(done, n, f"{source} {expr}" if expr else source)
        except BaseException:  # Ctrl-C or a failing callback: drop what has not started
            for fut in futures:
                fut.cancel()
            raise
    if failures:
        raise PrecompileError(failures, n)
    return {"units": n, "granularity": g, "workers": workers, "elapsed_s": time.perf_counter() - t0}
