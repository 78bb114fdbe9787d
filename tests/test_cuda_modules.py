"""tensorlab.backends.cuda.modules with stand-in drivers (no GPU, no compiler): an "expression"
driver (CuPy) gets one load_module per name expression, a "source" driver (the emulation) one per
kernels/*.cu with its whole kernel_table row; one compile per key when threads race to a first
launch, different keys compile concurrently; precompile() covers every instantiation."""
from __future__ import annotations

import threading
import time

import pytest

from tensorlab.backends.cuda import modules
from tensorlab.kernel_table import KERNELS


class FakeFunction:
    def __init__(self, source, name, device):
        self.source, self.name, self.device = source, name, device


class FakeModule:
    def __init__(self, source, exprs, device):
        self.source, self.exprs, self.device = source, exprs, device

    def get_function(self, name):
        assert name in self.exprs, (name, self.exprs)
        return FakeFunction(self.source, name, self.device)


class FakeDriver:
    """Records load_module calls; `delay` seconds per compile; `barrier` (if set) must be passed by
    that many compiles at once (proves they ran concurrently); `fail` names expressions (or
    sources) whose compile raises."""

    name = "fake"

    def __init__(self, granularity, delay=0.0, barrier=None, fail=()):
        self.module_granularity = granularity
        self.delay = delay
        self.barrier = barrier
        self.fail = set(fail)
        self.calls = []
        self.active = self.max_active = 0
        self.lock = threading.Lock()

    def current_device(self):
        return 0

    def load_module(self, source_path, name_expressions, options, device):
        with self.lock:
            self.calls.append((source_path.name, tuple(name_expressions), options, device))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.barrier is not None:
                self.barrier.wait()
            if self.delay:
                time.sleep(self.delay)
            if self.fail & ({source_path.name} | set(name_expressions)):
                raise RuntimeError(f"compiling {source_path.name} failed: error: boom\nmore log")
            return FakeModule(source_path.name, tuple(name_expressions), device)
        finally:
            with self.lock:
                self.active -= 1


@pytest.fixture
def use(monkeypatch):
    """Install a FakeDriver and empty caches in modules (restored after the test)."""
    def install(drv):
        monkeypatch.setattr(modules, "driver", drv)
        monkeypatch.setattr(modules, "_functions", {})
        monkeypatch.setattr(modules, "_modules", {})
        monkeypatch.setattr(modules, "_locks", {})
        return drv
    return install


SRC = "elementwise.cu"
E1, E2 = KERNELS[SRC][0], KERNELS[SRC][1]


def test_expression_driver_compiles_one_module_per_name_expression_and_device(use):
    drv = use(FakeDriver("expression"))
    f1 = modules.function(SRC, E1, 0)
    assert drv.calls == [(SRC, (E1,), modules.OPTIONS, 0)]
    assert (f1.source, f1.name, f1.device) == (SRC, E1, 0)
    f2 = modules.function(SRC, E2, 0)
    assert drv.calls[1] == (SRC, (E2,), modules.OPTIONS, 0) and f2.name == E2
    assert modules.function(SRC, E1, 0) is f1 and modules.function(SRC, E2, 0) is f2
    modules.function(SRC, E1, 1)
    assert drv.calls[2] == (SRC, (E1,), modules.OPTIONS, 1)
    assert len(drv.calls) == 3
    assert modules.module_key(SRC, E1, 0) == (SRC, (E1,), modules.OPTIONS, 0)
    assert modules.module(SRC, 0, name_expression=E1).exprs == (E1,)
    with pytest.raises(ValueError, match="one name expression"):
        modules.module(SRC, 0)


def test_source_driver_compiles_the_whole_row_once(use):
    drv = use(FakeDriver("source"))
    f1 = modules.function(SRC, E1, 0)
    f2 = modules.function(SRC, E2, 0)
    modules.function("fill.cu", KERNELS["fill.cu"][3], 0)
    assert drv.calls == [(SRC, tuple(KERNELS[SRC]), modules.OPTIONS, 0),
                         ("fill.cu", tuple(KERNELS["fill.cu"]), modules.OPTIONS, 0)]
    assert (f1.name, f2.name) == (E1, E2)
    assert modules.module(SRC, 0).exprs == tuple(KERNELS[SRC])
    assert len(drv.calls) == 2


def test_the_hot_path_is_the_flat_cache(use, monkeypatch):
    use(FakeDriver("expression"))
    f = modules.function(SRC, E1, 0)

    def slow(*a):
        raise AssertionError("a cached kernel went past the dict lookup")
    monkeypatch.setattr(modules, "_function_slow", slow)
    assert modules.function(SRC, E1, 0) is f


@pytest.mark.parametrize("granularity", ["expression", "source"])
def test_unknown_sources_and_expressions_are_refused_before_compiling(use, granularity):
    drv = use(FakeDriver(granularity))
    with pytest.raises(RuntimeError, match="no kernel source 'nope.cu'"):
        modules.function("nope.cu", E1, 0)
    with pytest.raises(RuntimeError, match="not instantiated by elementwise.cu"):
        modules.function(SRC, "binary_kernel<tl::op::Add, float, short>", 0)
    assert drv.calls == []


def test_a_driver_with_an_unknown_granularity_is_refused(use):
    use(FakeDriver("kernel"))
    with pytest.raises(RuntimeError, match="module_granularity 'kernel'"):
        modules.function(SRC, E1, 0)


@pytest.mark.parametrize("granularity", ["expression", "source"])
def test_threads_racing_to_a_first_launch_compile_once(use, granularity):
    drv = use(FakeDriver(granularity, delay=0.05))
    n = 8
    start = threading.Barrier(n)
    got, errors = [None] * n, []

    def worker(i):
        try:
            start.wait()
            got[i] = modules.function(SRC, E1, 0)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(drv.calls) == 1
    assert all(f is got[0] for f in got)


def test_different_expressions_compile_concurrently(use):
    # both compiles must be inside load_module at the same time to pass the barrier: a global lock
    # held across a compile would time it out
    drv = use(FakeDriver("expression", barrier=threading.Barrier(2, timeout=10)))
    out, errors = {}, []

    def worker(expr):
        try:
            out[expr] = modules.function(SRC, expr, 0)
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(e,)) for e in (E1, E2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert drv.max_active == 2 and sorted(c[1] for c in drv.calls) == sorted([(E1,), (E2,)])


def test_a_failed_compile_is_not_cached(use):
    drv = use(FakeDriver("expression", fail={E1}))
    with pytest.raises(RuntimeError, match="boom"):
        modules.function(SRC, E1, 0)
    drv.fail.clear()
    assert modules.function(SRC, E1, 0).name == E1
    assert len(drv.calls) == 2


def test_precompile_with_an_expression_driver_compiles_every_instantiation_once(use):
    drv = use(FakeDriver("expression"))
    seen = []
    result = modules.precompile(workers=4, progress=lambda done, total, what: seen.append((done, total, what)))
    total = sum(len(v) for v in KERNELS.values())
    assert result["units"] == total and result["granularity"] == "expression" and result["workers"] == 4
    assert result["elapsed_s"] >= 0
    want = sorted((s, (e,), modules.OPTIONS, 0) for s, exprs in KERNELS.items() for e in exprs)
    assert sorted(drv.calls) == want
    # progress: a start line, then one call per compile, counting up to the total
    assert seen[0][:2] == (0, total) and "thread" in seen[0][2]
    assert [d for d, _, _ in seen[1:]] == list(range(1, total + 1)) and all(t == total for _, t, _ in seen)
    assert {w for _, _, w in seen[1:]} == {f"{s} {e}" for s, exprs in KERNELS.items() for e in exprs}
    # everything is loaded: launches compile nothing more
    for s, exprs in KERNELS.items():
        for e in exprs:
            assert modules.function(s, e, 0).name == e
    assert len(drv.calls) == total


def test_precompile_with_a_source_driver_compiles_each_source_once(use):
    drv = use(FakeDriver("source"))
    result = modules.precompile(["fill.cu", "softmax.cu"], device=0, workers=2)
    assert (result["units"], result["granularity"], result["workers"]) == (2, "source", 2)
    assert sorted(drv.calls) == [("fill.cu", tuple(KERNELS["fill.cu"]), modules.OPTIONS, 0),
                                 ("softmax.cu", tuple(KERNELS["softmax.cu"]), modules.OPTIONS, 0)]
    modules.function("softmax.cu", KERNELS["softmax.cu"][0], 0)
    assert len(drv.calls) == 2
    modules.precompile()  # the rest; fill and softmax are cached
    assert sorted(c[0] for c in drv.calls) == sorted(KERNELS)


def test_precompile_runs_compiles_in_parallel_on_the_given_device(use):
    drv = use(FakeDriver("expression", delay=0.05))
    n = len(KERNELS["softmax.cu"])
    t0 = time.perf_counter()
    modules.precompile("softmax.cu", device=1, workers=n)
    elapsed = time.perf_counter() - t0
    assert drv.max_active > 1 and elapsed < n * 0.05 / 2  # one after another would take n * 0.05 s
    assert {c[3] for c in drv.calls} == {1} and len(drv.calls) == n


def test_precompile_reports_every_failure_after_trying_everything(use):
    bad = KERNELS["fill.cu"][:2]
    drv = use(FakeDriver("expression", fail=set(bad)))
    with pytest.raises(modules.PrecompileError, match="2 of 40 compile") as info:
        modules.precompile("fill.cu", workers=3)
    assert sorted(e for _, e, _ in info.value.failures) == sorted(bad)
    assert all(m.startswith("RuntimeError: compiling fill.cu failed") for _, _, m in info.value.failures)
    assert len(drv.calls) == 40  # the others compiled, and stay cached
    assert modules.function("fill.cu", KERNELS["fill.cu"][5], 0).name == KERNELS["fill.cu"][5]
    assert len(drv.calls) == 40


def test_precompile_refuses_unknown_sources(use):
    drv = use(FakeDriver("expression"))
    with pytest.raises(RuntimeError, match="no kernel source 'nope.cu'"):
        modules.precompile(["fill.cu", "nope.cu"])
    assert drv.calls == []


def test_units_and_default_workers(use):
    use(FakeDriver("source"))
    assert modules.units() == [(s, None) for s in sorted(KERNELS)]
    assert modules.units(["fill.cu"], drv=FakeDriver("expression")) == [("fill.cu", e) for e in KERNELS["fill.cu"]]
    assert modules.default_workers() >= 1


@pytest.mark.cuda
def test_precompile_with_the_real_driver(cuda):
    """The active driver (the emulation in the emulated run, CuPy on a GPU): precompile of one
    source loads the modules its granularity says, and every function is then cached."""
    from tensorlab.backends.cuda.active import driver
    exprs = KERNELS["softmax.cu"]
    result = modules.precompile(["softmax.cu"], device=0)
    if driver.module_granularity == "source":
        assert result["units"] == 1 and result["granularity"] == "source"
        keys = [modules.module_key("softmax.cu", None, 0)]
    else:
        assert result["units"] == len(exprs) and result["granularity"] == "expression"
        keys = [modules.module_key("softmax.cu", e, 0) for e in exprs]
    loaded = [modules._modules[k] for k in keys]
    for e in exprs:
        assert modules.function("softmax.cu", e, 0).name == e
    assert [modules._modules[k] for k in keys] == loaded  # nothing compiled twice


def test_precompile_without_a_gpu_says_what_is_missing(monkeypatch):
    """The README's promise: precompile() on a machine without CuPy or a GPU is a RuntimeError naming the
    cause, not a raw ModuleNotFoundError from inside CuPy."""
    from tensorlab import backends
    from tensorlab.backends.cuda.cupy_driver import CupyDriver
    monkeypatch.setattr(modules, "driver", CupyDriver())
    monkeypatch.setattr(backends, "cuda_unavailable_reason", lambda: "CuPy is not installed (test)")
    with pytest.raises(RuntimeError, match="there is none: CuPy is not installed"):
        modules.precompile()
