"""The CuPy driver: that it implements the whole driver interface (runs everywhere, CuPy not
needed), and, on a real GPU only, that each call does what the interface says."""
from __future__ import annotations

import gc
import inspect
import threading

import numpy as np
import pytest

from tensorlab.backends.cuda.cupy_driver import CupyDriver
from tensorlab.backends.cuda.driver import Driver, OutOfMemory, Pointer
from tensorlab.kernels_path import kernel_dir


def _interface_methods():
    return {name: fn for name, fn in vars(Driver).items()
            if inspect.isfunction(fn) and not name.startswith("_")}


def test_cupy_driver_implements_every_driver_method_with_its_signature():
    methods = _interface_methods()
    assert len(methods) >= 30  # the protocol as written: devices, memory, streams, events, modules
    for name, proto in methods.items():
        impl = getattr(CupyDriver, name, None)
        assert callable(impl), f"CupyDriver lacks {name}"
        want = list(inspect.signature(proto).parameters)
        got = list(inspect.signature(impl).parameters)
        assert got == want, f"CupyDriver.{name}{inspect.signature(impl)} != Driver.{name}{inspect.signature(proto)}"
    assert CupyDriver.name == "cupy"


def test_cupy_driver_module_imports_without_touching_cupy():
    d = CupyDriver()  # construction allocates nothing and needs no device
    assert d._pool is None


# -- module loading without a GPU ----------------------------------------------------------------------
def test_nvrtc_options_are_a_pure_function_of_their_arguments():
    from tensorlab.backends.cuda.cupy_driver import nvrtc_options
    assert nvrtc_options(("-std=c++17",), "/k", "abc", "/rt") == ("-std=c++17", "-I/k", "-I/rt",
                                                                  "-DTENSORLAB_HEADERS_DIGEST=0xabc")
    assert nvrtc_options((), "/k", "abc") == ("-std=c++17", "-I/k", "-DTENSORLAB_HEADERS_DIGEST=0xabc")
    assert nvrtc_options(("--std=c++20", "-I/k"), "/k", "0", None) == ("--std=c++20", "-I/k",
                                                                     "-DTENSORLAB_HEADERS_DIGEST=0x0")


class _FakeCupy:
    """Just what CupyDriver.load_module touches: cuda.Device (a context), RawModule(path=...)
    (recorded; compile() is the module load) and its get_function."""

    def __init__(self, fail_load=False):
        self.raw_modules = []
        self.devices = []
        fake = self

        class Device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                fake.devices.append(self.index)

            def __exit__(self, *exc):
                return False

        class RawModule:
            def __init__(self, *, path):
                self.path = path
                self.loaded = False
                fake.raw_modules.append(self)

            def compile(self):
                if fail_load:
                    raise OSError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
                self.loaded = True

            def get_function(self, name):
                return ("kernel", name)

        class cuda:
            pass
        cuda.Device = Device
        self.cuda = cuda
        self.RawModule = RawModule


class _FakeNvrtc:
    """nvrtc.compile recorded instead of run (its own tests compile for real)."""

    def __init__(self, tmp_path):
        self.calls = []
        self.tmp_path = tmp_path

    def __call__(self, path, exprs, options, arch, *, source=None, cache=True):
        from tensorlab.backends.cuda.nvrtc import Compiled
        self.calls.append((path, exprs, options, arch, source))
        binary = self.tmp_path / f"{len(self.calls)}.cubin"
        binary.write_bytes(b"\x7fELF")
        return Compiled(b"\x7fELF", "cubin", {e: f"_Z{len(e)}mangled" for e in exprs}, binary, "")


def _fake_driver(monkeypatch, tmp_path, **kw):
    from tensorlab.backends.cuda import cupy_driver, nvrtc
    fake_cp, fake_nvrtc = _FakeCupy(**kw), _FakeNvrtc(tmp_path)
    monkeypatch.setattr(cupy_driver, "_cp", fake_cp)
    monkeypatch.setattr(nvrtc, "compile", fake_nvrtc)
    d = CupyDriver()
    d._props = {i: {"major": 9, "minor": 0} for i in range(4)}  # an H100 without asking CUDA
    return d, fake_cp, fake_nvrtc


def test_load_module_compiles_the_name_expressions_it_is_given_with_the_options(monkeypatch, tmp_path):
    from tensorlab.backends.cuda import modules
    from tensorlab.kernel_table import KERNELS
    d, fake_cp, fake_nvrtc = _fake_driver(monkeypatch, tmp_path)
    path = kernel_dir() / "elementwise.cu"
    expr = KERNELS["elementwise.cu"][7]
    m = d.load_module(path, (expr,), modules.OPTIONS, 3)
    ((p, exprs, options, arch, source),) = fake_nvrtc.calls
    assert p == path and exprs == (expr,) and arch == 90 and source == path.read_text()
    assert options == d.compile_options(path, modules.OPTIONS)
    assert f"-I{kernel_dir()}" in options and options[0] == "-std=c++17"
    assert any(o.startswith("-DTENSORLAB_HEADERS_DIGEST=0x") for o in options)
    assert not any("ftz" in o or "arch" in o for o in options)  # nvrtc.compile adds the architecture only
    (raw,) = fake_cp.raw_modules
    assert raw.path == str(tmp_path / "1.cubin") and raw.loaded  # loaded at once, under the device
    assert fake_cp.devices == [3] and m.device == 3 and m.raw is raw and m.name == "elementwise.cu"
    f = m.get_function(expr)  # looked up by its lowered name
    assert f.kernel == ("kernel", f"_Z{len(expr)}mangled") and f.name == expr and f.device == 3
    with pytest.raises(RuntimeError, match="was not compiled into this module of elementwise.cu"):
        m.get_function(KERNELS["elementwise.cu"][8])
    d.load_module(path, KERNELS["elementwise.cu"][:2], modules.OPTIONS, 0)  # the source is read once
    assert fake_nvrtc.calls[1][4] is fake_nvrtc.calls[0][4]


def test_load_module_passes_nvrtcs_compile_error_on(monkeypatch, tmp_path):
    from tensorlab.backends.cuda import nvrtc
    d, fake_cp, _ = _fake_driver(monkeypatch, tmp_path)

    def fail(path, exprs, *a, **k):
        raise nvrtc.CompileError(path.name, exprs, "sm_90", "fill.cu(3): error: identifier undefined")
    monkeypatch.setattr(nvrtc, "compile", fail)
    with pytest.raises(RuntimeError, match=r"compiling fill\.cu \(fill_contiguous<float, int>\) for sm_90 "
                                           r"failed:\nfill\.cu\(3\): error: identifier undefined"):
        d.load_module(kernel_dir() / "fill.cu", ("fill_contiguous<float, int>",), ("-std=c++17",), 0)
    assert not fake_cp.raw_modules


def test_load_module_names_the_binary_when_cuda_cannot_load_it(monkeypatch, tmp_path):
    d, _, _ = _fake_driver(monkeypatch, tmp_path, fail_load=True)
    with pytest.raises(RuntimeError, match=r"loading fill\.cu \(fill_contiguous<float, int>\) as cubin .*1\.cubin "
                                           r"on cuda:1 failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION"):
        d.load_module(kernel_dir() / "fill.cu", ("fill_contiguous<float, int>",), ("-std=c++17",), 1)


class _FakeLaunchCupy:
    """Just what CupyDriver.launch touches: runtime.getDevice, cuda.Device (a context that switches
    it) and a RawKernel whose `kernel` (its cupy.cuda.function.Function on the current device) is
    read once and records its calls."""

    def __init__(self, device):
        self.current = device
        self.entered = []
        self.resolved = []
        self.calls = []
        fake = self

        class runtime:
            @staticmethod
            def getDevice():
                return fake.current

        class Device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                fake.entered.append(self.index)
                self.prev, fake.current = fake.current, self.index

            def __exit__(self, *exc):
                fake.current = self.prev
                return False

        class cuda:
            pass
        cuda.runtime = runtime
        cuda.Device = Device
        self.cuda = cuda

    def raw_kernel(self):
        fake = self

        class Function:
            def __init__(self, device):
                self.device = device

            def __call__(self, grid, block, args, shared_mem=0, stream=None):
                assert type(grid) is tuple and type(block) is tuple
                fake.calls.append((self.device, fake.current, grid, block, list(args), shared_mem, stream))

        class RawKernel:
            max_dynamic_shared_size_bytes = 0

            @property
            def kernel(self):
                fake.resolved.append(fake.current)
                return Function(fake.current)
        return RawKernel()


def test_launch_resolves_cupys_function_once_and_enters_the_device_only_when_it_is_not_current(monkeypatch):
    """Per launch the CuPy driver builds the argument list and calls CuPy's Function: no RawKernel
    lookup, no keyword call, no device context while the kernel's device is the current one."""
    from tensorlab.backends.cuda import cupy_driver
    from tensorlab.backends.cuda.cupy_driver import _Function, _Stream
    fake = _FakeLaunchCupy(device=1)
    monkeypatch.setattr(cupy_driver, "_cp", fake)
    d = CupyDriver()

    class Buf:
        ptr = 0x7000_0000_0000

    class CpStream:
        ptr = 0x55

    f = _Function(fake.raw_kernel(), 1, "fill_contiguous<float, int>")
    s = _Stream(CpStream(), 1, 0)
    args = (Pointer(Buf(), 12), np.float32(2.5), np.int32(7))
    d.launch(f, [4], (256,), args, 0, s)  # first launch: the Function is looked up under the device
    d.launch(f, (4,), (256,), args, 0, s)
    d.launch(f, (4,), (256,), args, 0, s)
    assert fake.resolved == [1] and fake.entered == [1]
    assert len(fake.calls) == 3
    for dev, current, grid, block, got, smem, stream in fake.calls:
        assert (dev, current, grid, block, smem, stream) == (1, 1, (4,), (256,), 0, s.cp)
        assert type(got[0]) is np.uint64 and got[0] == 0x7000_0000_0000 + 12  # the pointer, 8 bytes
        assert type(got[1]) is np.float32 and got[1] == 2.5 and type(got[2]) is np.int32 and got[2] == 7
    fake.current = 0  # another device is current: the kernel's is entered for the call, then restored
    d.launch(f, (4,), (256,), args, 0, s)
    assert fake.entered == [1, 1] and fake.calls[-1][:2] == (1, 1) and fake.current == 0
    d.launch(f, (4,), (256,), args, 64 * 1024, s)  # more dynamic shared memory than the default: opted in
    assert f.kernel.max_dynamic_shared_size_bytes == 64 * 1024 and f.smem_limit == 64 * 1024
    assert fake.resolved == [1]


def test_one_name_expression_compiles_with_nvrtc_and_the_drivers_options(tmp_path, monkeypatch):
    """What the first `a + b` costs on a GPU: NVRTC compiling one instantiation of elementwise.cu
    with exactly the options CupyDriver.load_module uses (cp.RawModule needs a device, NVRTC does
    not)."""
    import os
    import time
    if os.environ.get("TENSORLAB_CUDA_EMULATION") == "1":
        pytest.skip("NVRTC's builtins cannot load in the ASan-preloaded emulated run")
    from tensorlab.backends.cuda import modules, nvrtc
    try:
        nvrtc.version()
    except Exception as e:
        pytest.skip(f"NVRTC not installed: {e}")
    if nvrtc.runtime_include() is None:
        pytest.skip("no CUDA runtime headers (cuda_runtime.h) installed")
    monkeypatch.setenv(nvrtc.CACHE_ENV, str(tmp_path))
    path = kernel_dir() / "elementwise.cu"
    expr = "binary_kernel<tl::op::Add, float, int>"
    opts = CupyDriver().compile_options(path, modules.OPTIONS)
    assert f"-I{nvrtc.runtime_include()}" in opts  # the CUDA runtime headers
    t0 = time.perf_counter()
    built = nvrtc.compile(path, (expr,), opts, 90)
    elapsed = time.perf_counter() - t0
    assert built.kind == "cubin" and built.binary[:4] == b"\x7fELF" and built.path.read_bytes() == built.binary
    assert built.lowered[expr].startswith("_Z13binary_kernel")
    assert elapsed < 30, f"one instantiation took {elapsed:.1f} s to compile"


# -- real GPU only ------------------------------------------------------------------------------------
def _gpu():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception as e:
        pytest.skip(f"needs a real CUDA GPU with CuPy: {e}")
    return CupyDriver()


@pytest.fixture
def drv(tmp_path_factory, monkeypatch):
    from tensorlab.backends.cuda import nvrtc
    d = _gpu()
    monkeypatch.setenv(nvrtc.CACHE_ENV, str(tmp_path_factory.mktemp("cubin")))  # the tests' sources only
    yield d
    d.device_synchronize(0)


def _upload(d, arr, stream):
    buf = d.malloc(arr.nbytes, 0, stream)
    d.memcpy_htod(Pointer(buf), np.ascontiguousarray(arr), arr.nbytes, stream, False)
    return buf


def _download(d, buf, nbytes, dtype, stream, offset=0):
    out = np.empty(nbytes // np.dtype(dtype).itemsize, dtype)
    d.memcpy_dtoh(out, Pointer(buf, offset), nbytes, stream, False)
    return out


def test_devices_and_properties(drv):
    import cupy
    n = drv.device_count()
    assert n == cupy.cuda.runtime.getDeviceCount() >= 1
    assert 0 <= drv.current_device() < n
    p = drv.device_properties(0)
    assert set(p) == {"name", "total_memory", "multi_processor_count", "major", "minor", "max_threads_per_block",
                      "max_shared_memory_per_block", "warp_size", "l2_cache_size"}
    assert p["warp_size"] == 32 and p["major"] >= 3 and p["total_memory"] > 2 ** 30
    assert drv.device_name(0) == p["name"] and isinstance(p["name"], str) and p["name"]
    free, total = drv.mem_get_info(0)
    assert 0 < free <= total == p["total_memory"]
    drv.set_device(0)
    assert drv.current_device() == 0


def test_memcpy_round_trip_dtod_and_memset(drv):
    s = drv.current_stream(0)
    x = np.arange(1000, dtype=np.float32)
    a = _upload(drv, x, s)
    assert a.nbytes == 4000 and a.device == 0 and a.ptr != 0
    b = drv.malloc(4000, 0, s)
    drv.memcpy_dtod(Pointer(b), Pointer(a), 4000, s)
    np.testing.assert_array_equal(_download(drv, b, 4000, np.float32, s), x)
    drv.memset(Pointer(b, 400), 0, 400, s)  # elements 100..199
    got = _download(drv, b, 4000, np.float32, s)
    want = x.copy()
    want[100:200] = 0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_download(drv, a, 40, np.float32, s, offset=40), x[10:20])
    drv.free(a, s)
    drv.free(b, s)
    drv.free(b, s)  # a second free is a no-op


def test_pinned_memory_and_async_copies_keep_the_host_buffer_alive(drv):
    h = drv.pinned_empty(1 << 20)
    assert h.dtype == np.uint8 and h.shape == (1 << 20,) and h.flags.writeable
    assert drv.is_pinned(h) and drv.is_pinned(h[100:])
    assert not drv.is_pinned(np.empty(1 << 20, np.uint8))
    assert drv.pinned_empty(0).shape == (0,)
    s = drv.create_stream(0)
    src = drv.pinned_empty(1 << 22).view(np.float32)
    src[:] = np.arange(src.size, dtype=np.float32)
    want = src.copy()
    buf = drv.malloc(src.nbytes, 0, s)
    drv.memcpy_htod(Pointer(buf), src, src.nbytes, s, True)
    del src  # the driver keeps the pinned source alive until the copy ran
    gc.collect()
    back = drv.pinned_empty(want.nbytes).view(np.float32)
    drv.memcpy_dtoh(back, Pointer(buf), want.nbytes, s, True)
    drv.stream_synchronize(s)
    np.testing.assert_array_equal(back, want)
    drv.free(buf, s)


def test_streams_are_per_thread_and_per_device(drv):
    default = drv.current_stream(0)
    assert drv.current_stream(0) is default
    s = drv.create_stream(0, priority=-1)
    assert s.priority == -1  # every GPU since Kepler has priorities 0 .. -5 or wider
    assert -100 < drv.create_stream(0, priority=-100).priority < 0  # clamped into the device's range
    drv.set_current_stream(0, s)
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(drv.current_stream(0)))
        t.start()
        t.join()
        assert seen[0] is default
        assert drv.current_stream(0) is s
    finally:
        drv.set_current_stream(0, default)
    assert drv.current_stream(0) is default
    assert drv.stream_query(s)


def _kernel_source(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.cuh").write_text("template <typename T> __device__ T twice(T x) { return x + x; }\n")
    src = tmp_path / "k.cu"
    src.write_text(
        '#include "inc/scale.cuh"\n'
        "struct Affine { long long n; float a; float b; };\n"
        "template <typename T> __global__ void affine(T* out, const T* x, Affine p) {\n"
        "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < p.n) out[i] = twice(x[i]) * (T)p.a + (T)p.b;\n"
        "}\n"
        "__global__ void spin(long long cycles) {\n"
        "  long long t0 = clock64(); while (clock64() - t0 < cycles) {}\n"
        "}\n"
        "extern __shared__ float smem[];\n"
        "__global__ void big_smem(float* out, int n) {\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) smem[i] = (float)i;\n"
        "  __syncthreads();\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = smem[n - 1 - i];\n"
        "}\n")
    return src


def test_load_module_and_launch_with_pointers_scalars_and_structs(drv, tmp_path):
    src = _kernel_source(tmp_path)
    mod = drv.load_module(src, ("affine<float>", "affine<double>", "spin", "big_smem"), (), 0)
    s = drv.current_stream(0)
    x = np.linspace(-3, 3, 1000)
    affine_t = np.dtype([("n", np.int64), ("a", np.float32), ("b", np.float32)], align=True)
    for dt, name in ((np.float32, "affine<float>"), (np.float64, "affine<double>")):
        xs = x.astype(dt)
        xb = _upload(drv, xs, s)
        out = drv.malloc(xs.nbytes, 0, s)
        p = np.array((1000, 1.5, -2.0), dtype=affine_t)[()]
        assert type(p) is np.void
        drv.launch(mod.get_function(name), (4,), (256,), (Pointer(out), Pointer(xb), p), 0, s)
        np.testing.assert_allclose(_download(drv, out, xs.nbytes, dt, s), 2 * xs * dt(1.5) - 2, rtol=1e-6)
    # an offset pointer: the kernel sees element 10 as element 0
    xs = x.astype(np.float32)
    xb = _upload(drv, xs, s)
    out = drv.malloc(xs.nbytes, 0, s)
    p = np.array((990, 1.0, 0.0), dtype=affine_t)[()]
    drv.launch(mod.get_function("affine<float>"), (4,), (256,), (Pointer(out), Pointer(xb, 40), p), 0, s)
    np.testing.assert_allclose(_download(drv, out, 990 * 4, np.float32, s), 2 * xs[10:], rtol=1e-6)
    # more than 48 KiB of dynamic shared memory needs the per-kernel opt-in the driver makes
    n = 16384  # 64 KiB of floats
    if drv.device_properties(0)["major"] >= 7:
        big = drv.malloc(n * 4, 0, s)
        drv.launch(mod.get_function("big_smem"), (1,), (256,), (Pointer(big), np.int32(n)), n * 4, s)
        np.testing.assert_array_equal(_download(drv, big, n * 4, np.float32, s), np.arange(n - 1, -1, -1))


def test_the_projects_fill_kernel_with_a_strided_layout_struct(drv):
    mod = drv.load_module(kernel_dir() / "fill.cu", ("fill_strided<float, int>",), ("-std=c++17",), 0)
    s = drv.current_stream(0)
    buf = drv.malloc(6 * 4 * 4, 0, s)
    drv.memset(Pointer(buf), 0, 96, s)
    lay_t = np.dtype([("shape", np.int32, 8), ("stride", np.int32, 8), ("ndim", np.int32)], align=True)
    lay = np.zeros((), lay_t)
    lay["shape"][:2] = (6, 2)  # columns 0 and 2 of a (6, 4) row-major matrix
    lay["stride"][:2] = (4, 2)
    lay["ndim"] = 2
    drv.launch(mod.get_function("fill_strided<float, int>"), (1,), (128,),
               (Pointer(buf), np.float32(7.0), np.int32(12), lay[()]), 0, s)
    got = _download(drv, buf, 96, np.float32, s).reshape(6, 4)
    want = np.zeros((6, 4), np.float32)
    want[:, ::2] = 7
    np.testing.assert_array_equal(got, want)


def _mul_source(tmp_path):
    src = tmp_path / "mul.cu"
    src.write_text("template <typename T> __global__ void mul(T* out, const T* x, const T* y, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  if (i < n) out[i] = x[i] * y[i];\n"
                   "}\n")
    return src


def _run_mul(drv, mod):
    s = drv.current_stream(0)
    x = np.array([1e-39, -3e-42, 1e-38, 2.0], np.float32)  # denormals, the smallest normal, a normal
    y = np.array([1.0, 1.0, 0.5, 3.0], np.float32)         # 1e-38 * 0.5 is denormal too
    xb, yb, out = _upload(drv, x, s), _upload(drv, y, s), drv.malloc(16, 0, s)
    drv.launch(mod.get_function("mul<float>"), (1,), (32,), (Pointer(out), Pointer(xb), Pointer(yb), np.int32(4)), 0, s)
    return _download(drv, out, 16, np.float32, s), x * y


def test_float32_denormals_are_kept_as_on_the_cpu_and_in_pytorch(drv, tmp_path):
    """CuPy's compiler would add -ftz=true (mul.ftz.f32 flushes denormals to zero); ours does not."""
    got, want = _run_mul(drv, drv.load_module(_mul_source(tmp_path), ("mul<float>",), (), 0))
    assert np.all(want[:3] != 0)
    np.testing.assert_array_equal(got, want)


def test_a_device_newer_than_nvrtc_loads_ptx_through_the_driver_jit(drv, tmp_path, monkeypatch):
    from tensorlab.backends.cuda import nvrtc
    p = drv.device_properties(0)
    arch = p["major"] * 10 + p["minor"]
    older = [a for a in nvrtc.supported_archs() if a < arch]
    if not older:
        pytest.skip(f"NVRTC supports no architecture below sm_{arch}")
    monkeypatch.setattr(nvrtc, "supported_archs", lambda: tuple(older))  # as if sm_{arch} were unknown to it
    assert nvrtc.target(arch) == (f"--gpu-architecture=compute_{older[-1]}", "ptx")
    mod = drv.load_module(_mul_source(tmp_path), ("mul<float>",), (), 0)
    assert mod.raw.file_path.endswith(".ptx")
    got, want = _run_mul(drv, mod)
    np.testing.assert_array_equal(got, want)


def test_events_time_a_kernel_and_order_streams(drv, tmp_path):
    mod = drv.load_module(_kernel_source(tmp_path), ("spin",), (), 0)
    spin = mod.get_function("spin")
    s1, s2 = drv.create_stream(0), drv.create_stream(0)
    start, end = drv.create_event(True, False), drv.create_event(True, True)
    assert drv.event_query(start)  # never recorded: nothing pending
    drv.event_record(start, s1)
    drv.launch(spin, (1,), (1,), (np.int64(50_000_000),), 0, s1)  # ~25 ms at 2 GHz
    drv.event_record(end, s1)
    drv.stream_wait_event(s2, end)
    assert not drv.stream_query(s1)
    drv.event_synchronize(end)
    assert drv.event_query(end)
    ms = drv.event_elapsed_ms(start, end)
    assert 1.0 < ms < 10_000
    drv.stream_synchronize(s2)
    assert drv.stream_query(s2)


def test_memory_stats_and_stream_ordered_free(drv, tmp_path):
    drv.empty_cache()
    s_alloc, s_use = drv.current_stream(0), drv.create_stream(0)
    before = drv.memory_stats(0)
    assert set(before) == {"allocated", "max_allocated", "reserved", "max_reserved"}
    buf = drv.malloc(1 << 20, 0, s_alloc)
    after = drv.memory_stats(0)
    assert after["allocated"] - before["allocated"] == 1 << 20  # a 1 MiB request is one 1 MiB block
    assert after["reserved"] >= after["allocated"] and after["max_allocated"] >= after["allocated"]
    drv.free(buf, s_alloc)
    assert drv.memory_stats(0)["allocated"] == before["allocated"]
    drv.reset_peak_memory_stats(0)
    assert drv.memory_stats(0)["max_allocated"] == before["allocated"]
    # freed on another stream: held until an event on that stream completed
    mod = drv.load_module(_kernel_source(tmp_path), ("spin",), (), 0)
    buf = drv.malloc(1 << 20, 0, s_alloc)
    drv.launch(mod.get_function("spin"), (1,), (1,), (np.int64(50_000_000),), 0, s_use)
    drv.free(buf, s_use)
    assert drv.memory_stats(0)["allocated"] == before["allocated"] + (1 << 20)  # the spin is still running
    drv.stream_synchronize(s_use)
    assert drv.memory_stats(0)["allocated"] == before["allocated"]
    # a dropped buffer (never freed) gives its bytes back too
    buf = drv.malloc(4096, 0, s_alloc)
    del buf
    gc.collect()
    assert drv.memory_stats(0)["allocated"] == before["allocated"]
    drv.empty_cache()
    assert drv.memory_stats(0)["reserved"] <= after["reserved"]


def test_release_keeps_a_held_buffer_until_the_last_reference_and_the_stream(drv, tmp_path):
    """release() (a storage's old bytes): while another thread still holds the buffer the pool must not
    hand its memory to the next malloc (on an H200 a reader then copied another tensor's bytes)."""
    s_alloc, s_use = drv.current_stream(0), drv.create_stream(0)
    base = drv.memory_stats(0)["allocated"]
    buf = _upload(drv, np.arange(256, dtype=np.int64), s_alloc)
    held = buf  # a reader thread's reference
    drv.release(buf, s_alloc)
    del buf
    other = _upload(drv, np.full(256, -1, dtype=np.int64), s_alloc)  # must not reuse held's memory
    assert other.ptr != held.ptr
    np.testing.assert_array_equal(_download(drv, held, 2048, np.int64, s_alloc), np.arange(256))
    assert drv.memory_stats(0)["allocated"] == base + 2 * 2048  # still counted while held
    del held
    gc.collect()
    assert drv.memory_stats(0)["allocated"] == base + 2048
    # released on another stream: the memory waits for the work queued there, as free() does
    mod = drv.load_module(_kernel_source(tmp_path), ("spin",), (), 0)
    buf = drv.malloc(1 << 20, 0, s_alloc)
    drv.launch(mod.get_function("spin"), (1,), (1,), (np.int64(50_000_000),), 0, s_use)
    drv.release(buf, s_use)
    del buf
    gc.collect()
    assert drv.memory_stats(0)["allocated"] == base + 2048 + (1 << 20)  # the spin is still running
    drv.stream_synchronize(s_use)
    assert drv.memory_stats(0)["allocated"] == base + 2048
    drv.free(other, s_alloc)


def test_struct_arguments_go_by_value_from_a_cached_host_copy():
    """Structs and bfloat16 scalars reach cuLaunchKernel as CuPy CPointers to a copy of their bytes,
    made once per distinct value (NumPy's __array_interface__ of a structured scalar cost 6-7 us)."""
    pytest.importorskip("cupy")
    import ml_dtypes
    from tensorlab.backends.cuda import cupy_driver as C
    from tensorlab.backends.cuda.launch import strided_layout
    from cupy.cuda.function import CPointer
    lay = strided_layout((4, 1024), (1024, 1), "int")
    h = C._arg(lay)
    assert isinstance(h, CPointer) and bytes(h.keep) == lay.tobytes()
    assert h.keep.__array_interface__["data"][0] == h.keep.ctypes.data
    assert C._arg(strided_layout((4, 1024), (1024, 1), "int")) is h  # same bytes: the same argument
    assert C._arg(strided_layout((4, 1024), (0, 1), "int")) is not h
    bf = np.array(1.5, ml_dtypes.bfloat16)[()]
    assert bytes(C._arg(bf).keep) == bf.tobytes()
    assert C._arg(np.float32(2.0)) == np.float32(2.0) and type(C._arg(np.int64(3))) is np.int64


def test_out_of_memory_names_the_request_and_free_bytes(drv):
    total = drv.device_properties(0)["total_memory"]
    with pytest.raises(OutOfMemory) as e:
        drv.malloc(4 * total, 0, drv.current_stream(0))
    assert e.value.nbytes == 4 * total
    assert 0 <= e.value.free <= total
    buf = drv.malloc(1024, 0, drv.current_stream(0))  # the driver still works
    drv.free(buf, drv.current_stream(0))
