"""EmulationDriver: driver.Driver over host memory, running the real kernels/*.cu compiled by the
system C++ compiler (build.py) on the fiber runtime (runtime.cpp). Test infrastructure only: it
makes the CUDA backend's Python layer and the kernels run in CI without a GPU; it never makes
tl.cuda.is_available() True. Work is synchronous: a launch or copy has finished when the call
returns, so streams only order bookkeeping and events record host time (not GPU timing)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import threading
import time
import weakref

import ml_dtypes
import numpy as np

from ..driver import GEMM_EPILOGUE_DTYPES, GEMM_EPILOGUES, OutOfMemory, Pointer, gemm_compute
from . import build

DEVICES_ENV = "TENSORLAB_CUDA_EMULATION_DEVICES"
MEMORY_ENV = "TENSORLAB_CUDA_EMULATION_MEMORY"  # bytes per emulated device (default 4 GiB)
FREED_BYTE = 0xFB  # what free() leaves in the bytes (a real pool reuses them at once)
BLOCK = 512  # the statistics count whole blocks, as CuPy's pool and torch's allocator do (seen on an H200)


def _tf32(x):
    """float32 values as a tensor core reads them in TF32 mode: the mantissa rounded to 10 bits, to
    nearest with ties away from zero (PTX's cvt.rna.tf32.f32); complex parts each."""
    if np.iscomplexobj(x):
        return _tf32(x.real) + 1j * _tf32(x.imag)
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
    return rounded.view(np.float32).reshape(x.shape)


def _block(nbytes):
    return -(-nbytes // BLOCK) * BLOCK

_PROPS = {"name": "tensorlab CUDA emulation (host CPU)", "multi_processor_count": 2, "major": 8, "minor": 0,
          "max_threads_per_block": 1024, "max_shared_memory_per_block": 48 * 1024, "warp_size": 32,
          "l2_cache_size": 4 * 1024 * 1024}

# tl_emulation_entry.h's ParamKind, and what C type each names in messages
_POINTER, _SIGNED, _UNSIGNED, _FLOAT, _BOOL, HALF, _BF16, _STRUCT = range(8)
_KIND_NAMES = {_POINTER: "a pointer", _SIGNED: "a signed integer", _UNSIGNED: "an unsigned integer",
               _FLOAT: "float/double", _BOOL: "bool", HALF: "__half", _BF16: "__nv_bfloat16", _STRUCT: "a struct"}
_BF16_DTYPE = np.dtype(ml_dtypes.bfloat16)
_ERR_CAP = 16384


def asan_loaded():
    """Whether this process started with the AddressSanitizer runtime (LD_PRELOAD)."""
    try:
        return hasattr(ctypes.CDLL(None), "__asan_init")
    except OSError:
        return False


_KIND_OF = {}  # NumPy dtype -> _scalar_kind(dtype)


def _scalar_kind(dt):
    if dt == _BF16_DTYPE:
        return _BF16
    if dt.fields is not None:
        return _STRUCT
    return {"b": _BOOL, "i": _SIGNED, "u": _UNSIGNED}.get(dt.kind, HALF if dt == np.float16 else
                                                            _FLOAT if dt.kind == "f" else None)


_object_new = object.__new__


class _DryLog(list):
    """kernel_timing(dry=True)'s record: launches that see it skip the kernel."""


class EmulatedBuffer:
    """Device memory of the emulation: host bytes with poisoned guards on both sides (runtime.cpp).
    The bytes go back to the host when the last reference goes, so a reader still holding a buffer
    that was freed on a stream never sees released memory (a GPU's stream-ordered free gives the
    same guarantee to work already queued)."""

    __slots__ = ("ptr", "nbytes", "device", "_owner", "_accounted", "__weakref__")

    def __init__(self, ptr, nbytes, device, owner):
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self._owner = owner
        self._accounted = True  # counted in the owner's allocated bytes until freed or dropped

    def __del__(self):
        try:
            self._owner._release(self)
        except Exception:  # interpreter shutdown: the runtime may already be gone
            pass

    def __repr__(self):
        return f"EmulatedBuffer(ptr=0x{self.ptr:x}, nbytes={self.nbytes}, device={self.device})"


class ExternalBuffer(EmulatedBuffer):
    """Emulated device memory another library owns (DLPack, __cuda_array_interface__): it keeps
    the owner alive and gives nothing back to the runtime when it goes."""

    __slots__ = ("_keep",)

    def __del__(self):
        pass


class EmulatedStream:
    __slots__ = ("device", "priority", "ptr")

    def __init__(self, device, priority, ptr):
        self.device = device
        self.priority = priority
        self.ptr = ptr

    def __repr__(self):
        return f"EmulatedStream(device={self.device}, ptr={self.ptr})"


class EmulatedEvent:
    __slots__ = ("enable_timing", "blocking", "time")

    def __init__(self, enable_timing, blocking):
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.time = None


class EmulatedFunction:
    """One name expression of a compiled kernel library: its entry point and parameter list."""

    __slots__ = ("name", "_entry", "kinds", "sizes", "offsets", "nbytes")

    def __init__(self, name, entry, kinds, sizes):
        self.name = name
        self._entry = entry
        self.kinds = kinds
        self.sizes = sizes
        offsets = []  # where each argument's bytes go in the packed block: 16-byte aligned, in order
        end = 0
        for size in sizes:
            end += -end % 16
            offsets.append(end)
            end += size
        self.offsets = tuple(offsets)
        self.nbytes = end

    def __repr__(self):
        return f"EmulatedFunction({self.name!r})"


class EmulatedModule:
    def __init__(self, path, names):
        self.path = path
        self._lib = ctypes.CDLL(str(path))
        self._index = {n: i for i, n in enumerate(names)}
        self._functions = {}

    def get_function(self, name):
        f = self._functions.get(name)
        if f is None:
            i = self._index.get(name)
            if i is None:
                raise RuntimeError(f"kernel {name!r} is not among the name expressions this module was compiled with "
                                   f"({self.path.name}); add it to tensorlab/kernel_table.py")
            entry = getattr(self._lib, f"tl_entry_{i}")
            entry.restype = ctypes.c_int
            entry.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)
            sig = getattr(self._lib, f"tl_sig_{i}")
            sig.restype = ctypes.c_int
            kinds, sizes = (ctypes.c_int * 64)(), (ctypes.c_int * 64)()
            n = sig(kinds, sizes, 64)
            f = self._functions[name] = EmulatedFunction(name, entry, tuple(kinds[:n]), tuple(sizes[:n]))
        return f


class EmulationDriver:
    """driver.Driver on the host: see the module docstring and docs/cuda-emulation.md."""

    name = "emulation"
    # one module per kernels/*.cu with its whole kernel_table row: a g++ (+ ASan) build per name
    # expression would make CI far too slow; build.py compiles a source's chunks in parallel
    module_granularity = "source"

    def __init__(self, asan=None):
        self.asan = build.asan_wanted() if asan is None else bool(asan)
        self._rt_lib = None  # the runtime is built and loaded on first use: importing costs nothing
        self._count = int(os.environ.get(DEVICES_ENV, "1"))
        self._total = int(os.environ.get(MEMORY_ENV, str(4 << 30)))
        self._lock = threading.RLock()
        self._stats = [dict(allocated=0, peak=0, allocs=0, frees=0, ooms=0) for _ in range(self._count)]
        self._local = threading.local()
        self._streams_set = False  # set_current_stream was never called: every thread is on the defaults
        self._default_streams = [EmulatedStream(i, 0, 0) for i in range(self._count)]
        self._next_stream = 3  # as on CUDA, 1 and 2 name the legacy and per-thread default streams (DLPack)
        self._pinned = {}  # id -> (start, end) of live pinned host arrays

    @property
    def _rt(self):
        rt = self._rt_lib
        if rt is None:
            with self._lock:
                if self._rt_lib is None:
                    self._rt_lib = self._load_runtime()
            rt = self._rt_lib
        return rt

    def _load_runtime(self):
        if self.asan and not asan_loaded():
            raise RuntimeError(
                "TENSORLAB_CUDA_EMULATION=1 builds the kernels with AddressSanitizer, which must be loaded when "
                "Python starts. Run through the launcher, which sets LD_PRELOAD and ASAN_OPTIONS:\n"
                "    python -m tensorlab.backends.cuda.emulation -m pytest tests\n"
                f"or set {build.ASAN_ENV}=0 to emulate without bounds checks.")
        rt = ctypes.CDLL(str(build.runtime_library(self.asan)), mode=ctypes.RTLD_GLOBAL)
        rt.tl_emu_malloc.restype = ctypes.c_void_p
        rt.tl_emu_malloc.argtypes = (ctypes.c_size_t,)
        rt.tl_emu_free.restype = None
        rt.tl_emu_free.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        return rt

    # -- devices --------------------------------------------------------------------------------
    def device_count(self):
        return self._count

    def _check(self, index):
        if not 0 <= index < self._count:
            raise RuntimeError(f"CUDA error: invalid device ordinal {index} (the emulation has {self._count} "
                               f"device(s); set {DEVICES_ENV} for more)")
        return index

    def current_device(self):
        return getattr(self._local, "device", 0)

    def set_device(self, index):
        self._local.device = self._check(index)

    def device_name(self, index):
        self._check(index)
        return _PROPS["name"]

    def device_properties(self, index):
        self._check(index)
        return dict(_PROPS, total_memory=self._total)

    def mem_get_info(self, index):
        self._check(index)
        return self._total - self._stats[index]["allocated"], self._total

    def device_synchronize(self, index):
        self._check(index)  # every operation has finished when its call returned

    # -- memory ---------------------------------------------------------------------------------
    def malloc(self, nbytes, device, stream):
        st = self._stats[device if 0 <= device < self._count else self._check(device)]
        with self._lock:
            now = st["allocated"] + _block(nbytes)
            if now > self._total:
                st["ooms"] += 1
                raise OutOfMemory(nbytes, self._total - st["allocated"])
            st["allocated"] = now
            if now > st["peak"]:
                st["peak"] = now
            st["allocs"] += 1
        ptr = (self._rt_lib or self._rt).tl_emu_malloc(nbytes)
        if not ptr:
            with self._lock:
                st["allocated"] -= _block(nbytes)
            raise OutOfMemory(nbytes, self._total - st["allocated"])
        b = _object_new(EmulatedBuffer)  # EmulatedBuffer(ptr, nbytes, device, self) without the __init__ frame
        b.ptr = ptr
        b.nbytes = nbytes
        b.device = device
        b._owner = self
        b._accounted = True
        return b

    def free(self, buffer, stream):
        # A real GPU's pool hands freed memory to the next malloc at once (stream-ordered): poison
        # it, so a thread that still reads a freed buffer sees garbage here too, not its old bytes.
        if type(buffer) is EmulatedBuffer and buffer._accounted and buffer.nbytes:
            ctypes.memset(buffer.ptr, FREED_BYTE, buffer.nbytes)
        self._uncount(buffer)

    def release(self, buffer, stream):
        """The memory goes back when the last reference does (EmulatedBuffer.__del__), and every
        operation queued so far has already run: nothing to wait for."""

    def _uncount(self, buffer):
        with self._lock:
            if buffer._accounted:
                buffer._accounted = False
                st = self._stats[buffer.device]
                st["allocated"] -= _block(buffer.nbytes)
                st["frees"] += 1

    def _release(self, buffer):
        if buffer._accounted:  # still counted (not freed on a stream before)
            self._uncount(buffer)
        self._rt_lib.tl_emu_free(buffer.ptr, buffer.nbytes)  # loaded: this buffer came from it

    @staticmethod
    def _address(p, nbytes, what):
        buf = p.buffer
        if not isinstance(buf, EmulatedBuffer):
            raise TypeError(f"{what}: expected an emulated device buffer, got {type(buf).__name__}")
        if p.offset < 0 or p.offset + nbytes > buf.nbytes:
            raise RuntimeError(f"CUDA error: invalid argument: {what} of {nbytes} bytes at offset {p.offset} of a "
                               f"{buf.nbytes}-byte buffer")
        return buf.ptr + p.offset

    @staticmethod
    def _host_address(host, nbytes, what):
        if not host.flags.c_contiguous or host.nbytes < nbytes:
            raise RuntimeError(f"{what}: the host array must be C-contiguous and hold {nbytes} bytes "
                               f"(got {host.nbytes} bytes, contiguous={host.flags.c_contiguous})")
        return host.__array_interface__["data"][0]

    def memcpy_htod(self, dst, host, nbytes, stream, non_blocking):
        d = self._address(dst, nbytes, "memcpy_htod")
        if nbytes:
            ctypes.memmove(d, self._host_address(host, nbytes, "memcpy_htod"), nbytes)

    def memcpy_dtoh(self, host, src, nbytes, stream, non_blocking):
        s = self._address(src, nbytes, "memcpy_dtoh")
        if nbytes:
            if not host.flags.writeable:
                raise RuntimeError("memcpy_dtoh: the host array is read-only")
            ctypes.memmove(self._host_address(host, nbytes, "memcpy_dtoh"), s, nbytes)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        d = self._address(dst, nbytes, "memcpy_dtod")
        s = self._address(src, nbytes, "memcpy_dtod")
        if nbytes:
            ctypes.memmove(d, s, nbytes)

    def memset(self, dst, value, nbytes, stream):
        d = self._address(dst, nbytes, "memset")
        if nbytes:
            ctypes.memset(d, value, nbytes)

    # -- vendor libraries: NumPy stand-ins that check the arguments as the library would ----------
    _GEMM_TYPES = {"float16": (np.float16, np.float32), "bfloat16": (ml_dtypes.bfloat16, np.float32),
                   "float32": (np.float32, np.float32), "float64": (np.float64, np.float64),
                   "complex64": (np.complex64, np.complex64), "complex128": (np.complex128, np.complex128)}

    def _matrix(self, p, rows, cols, ld, stride, batch, np_type, what):
        """The column-major batch of `rows` x `cols` matrices at `p` as a (batch, rows, cols) NumPy view,
        after cuBLAS's checks (ld >= max(1, rows), non-negative strides) and a bounds check of the
        farthest element against the buffer."""
        for name, v in (("rows", rows), ("cols", cols), ("ld", ld), ("stride", stride), ("batch", batch)):
            if type(v) is not int or v < 0 or v > 2 ** 31 - 1:
                raise RuntimeError(f"cuBLAS (emulated) gemm: {what} {name}={v!r} is not an int in [0, 2^31)")
        if ld < max(1, rows):
            raise RuntimeError(f"cuBLAS (emulated) gemm: CUBLAS_STATUS_INVALID_VALUE: {what} ld={ld} < rows={rows}")
        isz = np.dtype(np_type).itemsize
        last = (rows - 1) + (cols - 1) * ld + (batch - 1) * stride if rows and cols and batch else -1
        nbytes = (last + 1) * isz
        addr = self._address(p, nbytes, f"cuBLAS gemm {what}")
        if nbytes <= 0:
            return np.empty((batch, rows, cols), np_type)
        flat = np.frombuffer((ctypes.c_char * nbytes).from_address(addr), np_type)
        return np.lib.stride_tricks.as_strided(flat, (batch, rows, cols), (stride * isz, isz, ld * isz))

    def gemm(self, transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, dtype,
             stream, *, compute="default", reduced_reduction=False, alpha=1.0, beta=0.0):
        if dtype not in self._GEMM_TYPES:
            raise RuntimeError(f"cuBLAS (emulated) gemm: dtype {dtype!r} is not one of {sorted(self._GEMM_TYPES)}")
        kind = gemm_compute(dtype, compute)
        if type(reduced_reduction) is not bool:
            raise RuntimeError(f"cuBLAS (emulated) gemm: reduced_reduction={reduced_reduction!r} is not a bool")
        for name, v in (("alpha", alpha), ("beta", beta)):
            if not isinstance(v, (int, float, complex)) or isinstance(v, bool):
                raise RuntimeError(f"cuBLAS (emulated) gemm: {name}={v!r} is not a host number")
        t, acc = self._GEMM_TYPES[dtype]
        C = self._matrix(c, m, n, ldc, stride_c, batch, t, "C")
        if batch > 1 and stride_c == 0 and m * n:
            raise RuntimeError("cuBLAS (emulated) gemm: stride_c 0 with batch > 1 writes one C from every batch")
        prod = self._product(transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, batch, t, acc, kind)[0]
        scale = np.dtype(acc).type
        res = prod * scale(alpha) if alpha != 1 else prod
        if beta != 0:  # beta 0: C is not read (its NaNs included), as cuBLAS
            res = res + C.astype(acc) * scale(beta)
        C[...] = res.astype(t)

    def _product(self, transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, batch, t, acc, kind):
        """op(A) @ op(B) in the accumulation type, as the compute type `kind` reads and sums them."""
        A = self._matrix(a, *((k, m) if transa else (m, k)), lda, stride_a, batch, t, "A")
        B = self._matrix(b, *((n, k) if transb else (k, n)), ldb, stride_b, batch, t, "B")
        A = A.astype(acc).transpose(0, 2, 1) if transa else A.astype(acc)
        B = B.astype(acc).transpose(0, 2, 1) if transb else B.astype(acc)
        if kind == "32F_FAST_TF32":  # tensor cores read float32 as TF32: 10 mantissa bits, rounded
            A, B = _tf32(A), _tf32(B)
        if kind == "16F":  # float16 accumulation: one rounding per multiply-add along k
            prod = np.zeros((batch, m, n), np.float16)
            for i in range(k):
                prod = (prod + A[:, :, i:i + 1].astype(np.float16) * B[:, i:i + 1, :].astype(np.float16))
            return prod.astype(np.float32), B
        return np.matmul(A, B), B

    def gemm_epilogue(self, transa, transb, m, n, k, a, lda, b, ldb, d, ldd, bias, epilogue, dtype, stream, *,
                      compute="default", reduced_reduction=False):
        what = "cuBLASLt (emulated) gemm_epilogue"
        if dtype not in GEMM_EPILOGUE_DTYPES:
            raise RuntimeError(f"{what}: dtype {dtype!r} is not one of {GEMM_EPILOGUE_DTYPES}")
        if epilogue not in GEMM_EPILOGUES:
            raise RuntimeError(f"{what}: epilogue {epilogue!r} is not one of {GEMM_EPILOGUES}")
        kind = gemm_compute(dtype, compute)
        if type(reduced_reduction) is not bool or type(transa) is not bool or type(transb) is not bool:
            raise RuntimeError(f"{what}: transa/transb/reduced_reduction must be bools")
        if not isinstance(bias, Pointer):
            raise RuntimeError(f"{what}: epilogue {epilogue!r} needs a bias Pointer, got {bias!r}")
        t, acc = self._GEMM_TYPES[dtype]
        D = self._matrix(d, m, n, ldd, 0, 1, t, "D")
        nb = n if epilogue == "bgradb" else m
        vec = self._matrix(bias, nb, 1, max(1, nb), 0, 1, t, "bias")[0, :, 0]
        prod, B = self._product(transa, transb, m, n, k, a, lda, 0, b, ldb, 0, 1, t, acc, kind)
        prod = prod[0]
        if epilogue == "bgradb":  # the column sums of op(B) over k, in the compute type, rounded once
            vec[...] = B[0].sum(axis=0, dtype=np.float32).astype(t)
        else:
            prod = prod + vec.astype(np.float32)[:, None]
            if epilogue == "relu_bias":
                prod = np.maximum(prod, np.float32(0))
        D[0][...] = prod.astype(t)

    # cuSOLVER / cuBLAS trsm stand-ins: SciPy's LAPACK on column-major NumPy views of the buffers,
    # with the library's argument contract checked first (types, ld >= max(1, rows), bounds of the
    # farthest element, workspace size, info written per matrix on the device, never returned)
    _SOLVER_TYPES = {"float32": np.float32, "float64": np.float64}

    def _stype(self, dtype, routine):
        t = self._SOLVER_TYPES.get(dtype)
        if t is None:
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: dtype {dtype!r} is not one of "
                               f"{sorted(self._SOLVER_TYPES)}")
        return t

    def _smat(self, routine, p, rows, cols, ld, stride, batch, t, what):
        for name, v in (("rows", rows), ("cols", cols), ("ld", ld), ("stride", stride), ("batch", batch)):
            if type(v) is not int or v < 0 or v > 2 ** 31 - 1:
                raise RuntimeError(f"cuSOLVER (emulated) {routine}: {what} {name}={v!r} is not an int in [0, 2^31)")
        if ld < max(1, rows):
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: CUSOLVER_STATUS_INVALID_VALUE: {what} ld={ld} < "
                               f"max(1, rows={rows})")
        if batch > 1 and stride < ld * cols and rows and cols:
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: {what} batch stride {stride} < ld * cols = "
                               f"{ld * cols}: the matrices overlap")
        isz = np.dtype(t).itemsize
        last = (rows - 1) + (cols - 1) * ld + (batch - 1) * stride if rows and cols and batch else -1
        nbytes = (last + 1) * isz
        addr = self._address(p, nbytes, f"cuSOLVER {routine} {what}")
        if nbytes <= 0:
            return np.empty((batch, rows, cols), t)
        flat = np.frombuffer((ctypes.c_char * nbytes).from_address(addr), t)
        return np.lib.stride_tricks.as_strided(flat, (batch, rows, cols), (stride * isz, isz, ld * isz))

    def _svec(self, routine, p, n, stride, batch, t, what):
        if type(n) is not int or n < 0 or type(stride) is not int or stride < 0:
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: {what} n={n!r} stride={stride!r} must be ints >= 0")
        if batch > 1 and n and stride < n:
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: {what} stride {stride} < length {n}")
        return self._smat(routine, p, n, 1, max(1, n), stride, batch, t, what)[:, :, 0]

    def _sinfo(self, routine, info, batch):
        return self._svec(routine, info, batch, 1, 1, np.int32, "info")[0] if batch else np.empty(0, np.int32)

    def _swork(self, routine, work, lwork, need, t):
        if type(lwork) is not int or lwork < need:
            raise RuntimeError(f"cuSOLVER (emulated) {routine}: CUSOLVER_STATUS_INVALID_VALUE: lwork={lwork!r} < "
                               f"the buffer size {need} the query returned")
        if lwork:
            self._address(work, lwork * np.dtype(t).itemsize, f"cuSOLVER {routine} workspace")

    @staticmethod
    def _lapack(name, t):
        from scipy.linalg import lapack
        return getattr(lapack, ("s" if t == np.float32 else "d") + name)

    @staticmethod
    def _lwork(*dims):
        return max(1, 64 * max(dims + (1,)))

    def getrf_buffer_size(self, m, n, a, lda, dtype, stream):
        self._stype(dtype, "getrf")
        return self._lwork(m, n)

    def getrf(self, m, n, a, lda, stride_a, ipiv, stride_ipiv, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "getrf")
        self._swork("getrf", work, lwork, self._lwork(m, n), t)
        A = self._smat("getrf", a, m, n, lda, stride_a, batch, t, "A")
        k = min(m, n)
        P = None if ipiv is None else self._svec("getrf", ipiv, k, stride_ipiv, batch, np.int32, "ipiv")
        inf = self._sinfo("getrf", info, batch)
        for i in range(batch):
            if not k:
                inf[i] = 0
                continue
            if P is None:  # no pivoting (cuSOLVER's devIpiv = NULL)
                u = np.array(A[i], dtype=t)
                first = 0
                for j in range(k):
                    if u[j, j] == 0 and not first:
                        first = j + 1
                    with np.errstate(all="ignore"):
                        u[j + 1:, j] /= u[j, j]
                        u[j + 1:, j + 1:] -= np.outer(u[j + 1:, j], u[j, j + 1:])
                A[i] = u
                inf[i] = first
                continue
            lu, piv, code = self._lapack("getrf", t)(np.array(A[i]))
            A[i] = lu
            P[i] = piv + 1
            inf[i] = code

    def getrs(self, trans, n, nrhs, a, lda, stride_a, ipiv, stride_ipiv, b, ldb, stride_b, info, batch, dtype,
              stream):
        t = self._stype(dtype, "getrs")
        A = self._smat("getrs", a, n, n, lda, stride_a, batch, t, "A")
        P = self._svec("getrs", ipiv, n, stride_ipiv, batch, np.int32, "ipiv")
        B = self._smat("getrs", b, n, nrhs, ldb, stride_b, batch, t, "B")
        inf = self._sinfo("getrs", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not (n and nrhs):
                continue
            piv = P[i].astype(np.int32) - 1
            if piv.min() < 0 or piv.max() >= n:
                raise RuntimeError(f"cuSOLVER (emulated) getrs: ipiv of matrix {i} holds rows outside [1, {n}]")
            with np.errstate(all="ignore"):
                x, code = self._lapack("getrs", t)(np.array(A[i]), piv, np.array(B[i]), trans=1 if trans else 0)
            B[i] = x
            inf[i] = code

    def potrf_buffer_size(self, lower, n, a, lda, dtype, stream):
        self._stype(dtype, "potrf")
        return self._lwork(n)

    def potrf(self, lower, n, a, lda, stride_a, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "potrf")
        self._swork("potrf", work, lwork, self._lwork(n), t)
        A = self._smat("potrf", a, n, n, lda, stride_a, batch, t, "A")
        inf = self._sinfo("potrf", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not n:
                continue
            c, code = self._lapack("potrf", t)(np.array(A[i]), lower=1 if lower else 0, clean=0)
            A[i] = c
            inf[i] = code

    def potrs(self, lower, n, nrhs, a, lda, stride_a, b, ldb, stride_b, info, batch, dtype, stream):
        t = self._stype(dtype, "potrs")
        A = self._smat("potrs", a, n, n, lda, stride_a, batch, t, "A")
        B = self._smat("potrs", b, n, nrhs, ldb, stride_b, batch, t, "B")
        inf = self._sinfo("potrs", info, batch)
        for i in range(batch):
            inf[i] = 0
            if n and nrhs:
                with np.errstate(all="ignore"):
                    x, code = self._lapack("potrs", t)(np.array(A[i]), np.array(B[i]), lower=int(bool(lower)))
                B[i], inf[i] = x, code

    def geqrf_buffer_size(self, m, n, a, lda, dtype, stream):
        self._stype(dtype, "geqrf")
        return self._lwork(m, n)

    def geqrf(self, m, n, a, lda, stride_a, tau, stride_tau, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "geqrf")
        self._swork("geqrf", work, lwork, self._lwork(m, n), t)
        A = self._smat("geqrf", a, m, n, lda, stride_a, batch, t, "A")
        T = self._svec("geqrf", tau, min(m, n), stride_tau, batch, t, "tau")
        inf = self._sinfo("geqrf", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not min(m, n):
                continue
            qr, ta, _, code = self._lapack("geqrf", t)(np.array(A[i]))
            A[i], T[i], inf[i] = qr, ta, code

    def orgqr_buffer_size(self, m, n, k, a, lda, tau, dtype, stream):
        self._stype(dtype, "orgqr")
        return self._lwork(m, n)

    def orgqr(self, m, n, k, a, lda, stride_a, tau, stride_tau, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "orgqr")
        if not (0 <= k <= n <= m):
            raise RuntimeError(f"cuSOLVER (emulated) orgqr: CUSOLVER_STATUS_INVALID_VALUE: needs 0 <= k <= n <= m, "
                               f"got m={m} n={n} k={k}")
        self._swork("orgqr", work, lwork, self._lwork(m, n), t)
        A = self._smat("orgqr", a, m, n, lda, stride_a, batch, t, "A")
        T = self._svec("orgqr", tau, k, stride_tau, batch, t, "tau")
        inf = self._sinfo("orgqr", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not n:
                continue
            if not k:
                A[i] = np.eye(m, n, dtype=t)
                continue
            q, _, code = self._lapack("orgqr", t)(np.array(A[i]), np.array(T[i]))
            A[i], inf[i] = q, code

    def ormqr_buffer_size(self, left, trans, m, n, k, a, lda, tau, c, ldc, dtype, stream):
        self._stype(dtype, "ormqr")
        return self._lwork(m, n)

    def ormqr(self, left, trans, m, n, k, a, lda, stride_a, tau, stride_tau, c, ldc, stride_c, info, batch, work,
              lwork, dtype, stream):
        t = self._stype(dtype, "ormqr")
        r = m if left else n
        if not 0 <= k <= r:
            raise RuntimeError(f"cuSOLVER (emulated) ormqr: CUSOLVER_STATUS_INVALID_VALUE: k={k} > {'m' if left else 'n'}"
                               f"={r}")
        self._swork("ormqr", work, lwork, self._lwork(m, n), t)
        A = self._smat("ormqr", a, r, k, lda, stride_a, batch, t, "A")
        T = self._svec("ormqr", tau, k, stride_tau, batch, t, "tau")
        C = self._smat("ormqr", c, m, n, ldc, stride_c, batch, t, "C")
        inf = self._sinfo("ormqr", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not (m and n and k):
                continue
            cq, _, code = self._lapack("ormqr", t)("L" if left else "R", "T" if trans else "N", np.array(A[i]),
                                                  np.array(T[i]), np.array(C[i]), max(1, 64 * max(m, n)))
            C[i], inf[i] = cq, code

    def gesvd_buffer_size(self, m, n, dtype, stream):
        self._stype(dtype, "gesvd")
        return self._lwork(m, n)

    def gesvd(self, jobu, jobvt, m, n, a, lda, stride_a, s, stride_s, u, ldu, stride_u, vt, ldvt, stride_vt, info,
              batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "gesvd")
        if m < n:
            raise RuntimeError(f"cuSOLVER (emulated) gesvd: CUSOLVER_STATUS_INVALID_VALUE: gesvd only supports m >= "
                               f"n, got m={m} n={n}")
        if jobu not in ("A", "S", "N") or jobvt not in ("A", "S", "N") or (jobu == "N") != (jobvt == "N"):
            raise RuntimeError(f"cuSOLVER (emulated) gesvd: jobu={jobu!r} jobvt={jobvt!r}: this stand-in takes "
                               f"'A'/'S' for both or 'N' for both")
        self._swork("gesvd", work, lwork, self._lwork(m, n), t)
        k = min(m, n)
        A = self._smat("gesvd", a, m, n, lda, stride_a, batch, t, "A")
        S = self._svec("gesvd", s, k, stride_s, batch, t, "S")
        U = V = None
        if jobu != "N":
            U = self._smat("gesvd", u, m, m if jobu == "A" else k, ldu, stride_u, batch, t, "U")
            V = self._smat("gesvd", vt, n if jobvt == "A" else k, n, ldvt, stride_vt, batch, t, "VT")
        inf = self._sinfo("gesvd", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not k:
                if U is not None and jobu == "A":
                    U[i] = np.eye(m, dtype=t)
                if V is not None and jobvt == "A":
                    V[i] = np.eye(n, dtype=t)
                continue
            uu, ss, vv, code = self._lapack("gesvd", t)(np.array(A[i]), compute_uv=int(U is not None),
                                                       full_matrices=int(jobu == "A"))
            S[i], inf[i] = ss, code
            if U is not None:
                U[i] = uu
                V[i] = vv[:V.shape[1]]
            A[i] = np.nan  # cuSOLVER destroys A

    def syevd_buffer_size(self, vectors, lower, n, a, lda, w, dtype, stream):
        self._stype(dtype, "syevd")
        return self._lwork(n)

    def syevd(self, vectors, lower, n, a, lda, stride_a, w, stride_w, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "syevd")
        self._swork("syevd", work, lwork, self._lwork(n), t)
        A = self._smat("syevd", a, n, n, lda, stride_a, batch, t, "A")
        W = self._svec("syevd", w, n, stride_w, batch, t, "W")
        inf = self._sinfo("syevd", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not n:
                continue
            ww, vv, code = self._lapack("syevd", t)(np.array(A[i]), compute_v=int(bool(vectors)),
                                                   lower=int(bool(lower)))
            W[i], inf[i] = ww, code
            A[i] = vv if vectors else np.nan

    def sytrf_buffer_size(self, n, a, lda, dtype, stream):
        self._stype(dtype, "sytrf")
        return self._lwork(n)

    def sytrf(self, lower, n, a, lda, stride_a, ipiv, stride_ipiv, info, batch, work, lwork, dtype, stream):
        t = self._stype(dtype, "sytrf")
        self._swork("sytrf", work, lwork, self._lwork(n), t)
        A = self._smat("sytrf", a, n, n, lda, stride_a, batch, t, "A")
        P = self._svec("sytrf", ipiv, n, stride_ipiv, batch, np.int32, "ipiv")
        inf = self._sinfo("sytrf", info, batch)
        for i in range(batch):
            inf[i] = 0
            if not n:
                continue
            ldu, piv, code = self._lapack("sytrf", t)(np.array(A[i]), lower=int(bool(lower)))
            A[i], P[i], inf[i] = ldu, piv, code

    # cusolverDnXgeev: A's type real or complex, W complex of its precision, VR A's type (packed real
    # vectors for a real A, as LAPACK's); two workspaces in bytes, the host one the driver's own
    _GEEV_TYPES = {"float32": (np.float32, np.complex64), "float64": (np.float64, np.complex128),
                   "complex64": (np.complex64, np.complex64), "complex128": (np.complex128, np.complex128)}

    def _geev_types(self, dtype):
        t = self._GEEV_TYPES.get(dtype)
        if t is None:
            raise RuntimeError(f"cuSOLVER (emulated) geev: dtype {dtype!r} is not one of {sorted(self._GEEV_TYPES)}")
        return t

    def geev_buffer_size(self, vectors, n, a, lda, w, vr, ldvr, dtype, stream):
        t, _ = self._geev_types(dtype)
        return self._lwork(n) * np.dtype(t).itemsize, 8 * max(n, 1)

    def geev(self, vectors, n, a, lda, stride_a, w, stride_w, vr, ldvr, stride_vr, info, batch, work, work_bytes,
             host_bytes, dtype, stream):
        t, tw = self._geev_types(dtype)
        need, need_host = self.geev_buffer_size(vectors, n, a, lda, w, vr, ldvr, dtype, stream)
        self._swork("geev", work, work_bytes, need, np.uint8)
        if type(host_bytes) is not int or host_bytes < need_host:
            raise RuntimeError(f"cuSOLVER (emulated) geev: CUSOLVER_STATUS_INVALID_VALUE: host workspace "
                               f"{host_bytes!r} bytes < the {need_host} the query returned")
        A = self._smat("geev", a, n, n, lda, stride_a, batch, t, "A")
        W = self._svec("geev", w, n, stride_w, batch, tw, "W")
        if vectors and vr is None:
            raise RuntimeError("cuSOLVER (emulated) geev: CUSOLVER_STATUS_INVALID_VALUE: jobvr VECTOR with VR NULL")
        V = self._smat("geev", vr, n, n, ldvr, stride_vr, batch, t, "VR") if vectors else None
        inf = self._sinfo("geev", info, batch)
        from scipy.linalg import lapack
        f = getattr(lapack, {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[t] + "geev")
        for i in range(batch):
            inf[i] = 0
            if not n:
                continue
            res = f(np.array(A[i]), compute_vl=0, compute_vr=int(bool(vectors)))
            if t in (np.complex64, np.complex128):
                ww, vv, code = res[0], res[2], res[3]
            else:
                ww, vv, code = res[0] + 1j * res[1], res[3], res[4]
            W[i], inf[i] = ww, code
            if vectors:
                V[i] = vv
            A[i] = np.nan  # cuSOLVER destroys A

    def trsm(self, left, lower, trans, unit, m, n, a, lda, stride_a, b, ldb, stride_b, batch, dtype, stream):
        t = self._stype(dtype, "trsm")
        r = m if left else n
        A = self._smat("trsm", a, r, r, lda, stride_a, batch, t, "A")
        B = self._smat("trsm", b, m, n, ldb, stride_b, batch, t, "B")
        from scipy.linalg import blas
        f = getattr(blas, ("s" if t == np.float32 else "d") + "trsm")
        for i in range(batch):
            if m and n:
                with np.errstate(all="ignore"):
                    B[i] = f(1.0, np.array(A[i]), np.array(B[i]), side=0 if left else 1, lower=int(bool(lower)),
                             trans_a=int(bool(trans)), diag=int(bool(unit)))
    FFT_CALLS = []  # (kind, n, batch, forward, dtype) per emulated cuFFT call, for the tests

    def fft(self, kind, x, y, n, batch, forward, dtype, stream):
        """cuFFT's cufftPlanMany + cufftExec* stand-in: checks the plan (kind, rank 1-3, sizes,
        batch, types, both buffers large enough) and transforms with NumPy, unnormalized."""
        if kind not in ("c2c", "r2c", "c2r"):
            raise RuntimeError(f"cuFFT (emulated): CUFFT_INVALID_TYPE: kind {kind!r}")
        if dtype not in ("complex64", "complex128"):
            raise RuntimeError(f"cuFFT (emulated): CUFFT_INVALID_TYPE: dtype {dtype!r}")
        n = tuple(n)
        if not 1 <= len(n) <= 3 or any(type(v) is not int or v < 1 for v in n):
            raise RuntimeError(f"cuFFT (emulated): CUFFT_INVALID_SIZE: rank {len(n)} sizes {n} (rank 1 to 3, sizes >= 1)")
        if type(batch) is not int or batch < 1:
            raise RuntimeError(f"cuFFT (emulated): CUFFT_INVALID_VALUE: batch {batch!r}")
        if kind == "c2c" and type(forward) is not bool:
            raise RuntimeError(f"cuFFT (emulated): CUFFT_INVALID_VALUE: direction {forward!r}")
        ct, rt = (np.complex64, np.float32) if dtype == "complex64" else (np.complex128, np.float64)
        half = n[:-1] + (n[-1] // 2 + 1,)
        in_shape, in_t = {"c2c": (n, ct), "r2c": (n, rt), "c2r": (half, ct)}[kind]
        out_shape, out_t = {"c2c": (n, ct), "r2c": (half, ct), "c2r": (n, rt)}[kind]

        def arr(p, shape, t, what):
            count = batch * int(np.prod(shape))
            nbytes = count * np.dtype(t).itemsize
            addr = self._address(p, nbytes, f"cuFFT {what}")
            return np.frombuffer((ctypes.c_char * nbytes).from_address(addr), t).reshape((batch,) + shape)

        a = arr(x, in_shape, in_t, "input")
        b = arr(y, out_shape, out_t, "output")
        axes = tuple(range(1, len(n) + 1))
        if kind == "c2c":
            r = np.fft.fftn(a, axes=axes) if forward else np.fft.ifftn(a, axes=axes, norm="forward")
        elif kind == "r2c":
            r = np.fft.rfftn(a, axes=axes)
        else:
            r = np.fft.irfftn(a, s=n, axes=axes, norm="forward")
        b[...] = r.astype(out_t)
        self.FFT_CALLS.append((kind, n, batch, forward, dtype))

    CSRMM_CALLS = []  # (m, n, k, nnz, index_dtype, dtype) per emulated cuSPARSE SpMM, for the tests

    def csrmm(self, m, n, k, nnz, crow, col, index_dtype, values, b, c, dtype, stream):
        """cuSPARSE's cusparseSpMM (CSR A, row-major dense B and C) stand-in: checks the descriptors
        (sizes, index and value types, each buffer large enough, the row offsets starting at 0,
        non-decreasing and ending at nnz, every column index in [0, k)) and multiplies with SciPy."""
        import scipy.sparse
        for name, v in (("m", m), ("n", n), ("k", k), ("nnz", nnz)):
            if type(v) is not int or v < 0 or v > 2 ** 31 - 1:
                raise RuntimeError(f"cuSPARSE (emulated) SpMM: CUSPARSE_STATUS_INVALID_VALUE: {name}={v!r} is not "
                                   f"an int in [0, 2^31)")
        it = {"int32": np.int32, "int64": np.int64}.get(index_dtype)
        vt = {"float32": np.float32, "float64": np.float64}.get(dtype)
        if it is None or vt is None:
            raise RuntimeError(f"cuSPARSE (emulated) SpMM: CUSPARSE_STATUS_NOT_SUPPORTED: index type "
                               f"{index_dtype!r}, value type {dtype!r}")

        def arr(p, count, t, what):
            nbytes = count * np.dtype(t).itemsize
            addr = self._address(p, nbytes, f"cuSPARSE SpMM {what}")
            if not nbytes:
                return np.empty(count, t)
            return np.frombuffer((ctypes.c_char * nbytes).from_address(addr), t)

        rows = arr(crow, m + 1, it, "csrRowOffsets")
        cols = arr(col, nnz, it, "csrColInd")
        vals = arr(values, nnz, vt, "csrValues")
        B = arr(b, k * n, vt, "B").reshape(k, n)
        C = arr(c, m * n, vt, "C").reshape(m, n)
        if rows[0] != 0 or rows[-1] != nnz or (m and np.any(np.diff(rows) < 0)):
            raise RuntimeError("cuSPARSE (emulated) SpMM: CUSPARSE_STATUS_INVALID_VALUE: the row offsets must start "
                               f"at 0, not decrease and end at nnz={nnz}")
        if nnz and (cols.min() < 0 or cols.max() >= k):
            raise RuntimeError(f"cuSPARSE (emulated) SpMM: CUSPARSE_STATUS_INVALID_VALUE: a column index outside "
                               f"[0, {k})")
        a = scipy.sparse.csr_matrix((vals.copy(), cols.copy(), rows.copy()), shape=(m, k))
        C[...] = np.asarray(a @ B.astype(vt), dtype=vt) if m and n else 0
        self.CSRMM_CALLS.append((m, n, k, nnz, index_dtype, dtype))

    def pinned_empty(self, nbytes):
        arr = np.empty(nbytes, dtype=np.uint8)
        start = arr.__array_interface__["data"][0]
        key = id(arr)
        self._pinned[key] = (start, start + nbytes)
        weakref.finalize(arr, self._pinned.pop, key, None)
        return arr

    def is_pinned(self, host):
        start = host.__array_interface__["data"][0]
        end = start + max(host.nbytes, 1)
        return any(s <= start and end <= e for s, e in list(self._pinned.values()))

    def memory_stats(self, device):
        st = self._stats[self._check(device)]
        # no caching pool: what is reserved is what is allocated
        return {"allocated": st["allocated"], "max_allocated": st["peak"], "reserved": st["allocated"],
                "max_reserved": st["peak"], "num_allocs": st["allocs"], "num_frees": st["frees"], "num_ooms": st["ooms"]}

    def reset_peak_memory_stats(self, device):
        st = self._stats[self._check(device)]
        st["peak"] = st["allocated"]

    def empty_cache(self):
        """No pool: every buffer is returned to the host allocator when freed."""

    # -- streams and events ---------------------------------------------------------------------
    def create_stream(self, device, priority=0):
        self._check(device)
        with self._lock:
            ptr = self._next_stream
            self._next_stream += 1
        return EmulatedStream(device, priority, ptr)

    def current_stream(self, device):
        if self._streams_set:  # some thread made a stream current: this thread's choice, if any
            cur = getattr(self._local, "streams", None)
            if cur:
                s = cur.get(device)
                if s is not None:
                    return s
        if 0 <= device < self._count:  # _check, inlined: this runs for every allocation and launch
            return self._default_streams[device]
        return self._default_streams[self._check(device)]

    def set_current_stream(self, device, stream):
        self._check(device)
        self._streams_set = True  # from now on current_stream looks at the thread's own choice
        if not hasattr(self._local, "streams"):
            self._local.streams = {}
        self._local.streams[device] = stream

    def stream_synchronize(self, stream):
        pass  # work is done when its call returns

    def stream_query(self, stream):
        return True

    def stream_wait_event(self, stream, event):
        pass

    def create_event(self, enable_timing, blocking):
        return EmulatedEvent(bool(enable_timing), bool(blocking))

    def event_record(self, event, stream):
        event.time = time.perf_counter()

    def event_query(self, event):
        return True

    def event_synchronize(self, event):
        pass

    def event_elapsed_ms(self, start, end):
        if not (start.enable_timing and end.enable_timing):
            raise RuntimeError("CUDA error: invalid resource handle (both events must be created with "
                               "enable_timing=True to measure elapsed time)")
        if start.time is None or end.time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end.time - start.time) * 1000.0  # host time: the emulation has no GPU clock

    # -- memory and streams that tensorlab does not own (tensorlab/interop) ---------------------
    def wrap_external(self, ptr, nbytes, device, owner):
        buf = ExternalBuffer.__new__(ExternalBuffer)
        buf.ptr, buf.nbytes, buf.device = int(ptr), int(nbytes), self._check(int(device))
        buf._owner, buf._accounted, buf._keep = self, False, owner
        return buf

    def external_stream(self, ptr, device):
        if ptr == 0:
            return self._default_streams[self._check(device)]
        return EmulatedStream(self._check(device), 0, int(ptr))

    def pointer_device(self, ptr):
        return self.current_device()  # one host address space: the pointer says nothing of a device

    # -- modules and launches -------------------------------------------------------------------
    def load_module(self, source_path, name_expressions, options, device):
        self._check(device)
        names = tuple(name_expressions)
        self._rt  # the kernel library resolves the runtime's symbols when it is loaded
        return EmulatedModule(build.kernel_library(source_path, names, tuple(options), self.asan), names)

    def launch(self, function, grid, block, args, shared_mem, stream):
        log = getattr(self._local, "kernel_log", None)
        t_in = time.perf_counter() if log is not None else 0.0
        grid, block = _dim3(grid), _dim3(block)
        kinds, sizes = function.kinds, function.sizes
        if len(args) != len(kinds):
            raise TypeError(f"kernel {function.name}: takes {len(kinds)} arguments, got {len(args)}")
        offsets = function.offsets
        pack = self._local.__dict__.get("pack")  # this thread's argument block (allocations are slow under ASan)
        if pack is None or pack[0] < function.nbytes:
            cap = max(1024, 1 << function.nbytes.bit_length())
            storage = ctypes.create_string_buffer(cap)
            pack = self._local.pack = (cap, storage, memoryview(storage).cast("B"), {})
        cap, storage, view, argvs = pack
        for k, (a, kind, size) in enumerate(zip(args, kinds, sizes)):
            raw = self._arg_bytes(function.name, k, a, kind, size)  # `size` bytes (a pointer: 8)
            o = offsets[k]
            view[o:o + len(raw)] = raw
        argv = argvs.get(function)  # the arguments' addresses in this thread's block
        if argv is None:
            base = ctypes.addressof(storage)
            argv = argvs[function] = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        dims = (ctypes.c_uint * 6)(*grid, *block)
        err = getattr(self._local, "err", None)  # this thread's error buffer: a 16 KiB malloc a launch costs
        if err is None:                          # microseconds under AddressSanitizer's allocator
            err = self._local.err = ctypes.create_string_buffer(_ERR_CAP)
        if log is None:
            rc = function._entry(dims, int(shared_mem), argv, err, _ERR_CAP)
        elif type(log) is _DryLog:  # kernel_timing(dry=True): checked and packed, not run
            log.append((function.name, 0.0, time.perf_counter() - t_in))
            return
        else:  # a kernel_timing() is open on this thread: time the kernel's own run
            t0 = time.perf_counter()
            rc = function._entry(dims, int(shared_mem), argv, err, _ERR_CAP)
            t1 = time.perf_counter()
            log.append((function.name, t1 - t0, t1 - t_in))
        if rc:
            msg = err.value.decode(errors="replace")
            raise RuntimeError(f"CUDA error in kernel {function.name} (emulated, grid {grid}, block {block}): "
                               f"{_where(msg, args)}{msg}")

    @contextlib.contextmanager
    def kernel_timing(self, dry=False):
        """Record every kernel launch this thread makes while the block is open: yields a list that
        each launch appends (kernel name, kernel seconds, launch seconds) to - the seconds spent
        running the kernel itself (the call into the compiled kernel library, from the block's
        fibers starting to the last one finishing), and the whole of this launch() call (that plus
        the emulation's own argument checks and packing, which CuPy's launch replaces on a GPU).
        The emulation runs kernels synchronously on the host, so an op's host time is its kernels'
        seconds plus the launch path's own cost (front end, planning in the backend, launch):
        subtract the kernel seconds from a timed region to get the host overhead a GPU would see
        (tensorlab/bench/overhead.py). A nested block gets its own list; its records reach the
        enclosing block's list too when it closes.

        dry=True: launches check and pack their arguments as always but do not run the kernel
        (kernel seconds 0): the host path alone, without what running kernels on the host does to
        its caches (an 8-element sum's emulated kernel takes ~0.8 ms); results are garbage, so
        only for timing calls whose values nobody reads."""
        outer = getattr(self._local, "kernel_log", None)
        log = self._local.kernel_log = _DryLog() if dry else []
        try:
            yield log
        finally:
            self._local.kernel_log = outer
            if outer is not None:
                outer.extend(log)

    def _arg_bytes(self, name, k, a, kind, size):
        if isinstance(a, Pointer):
            if kind != _POINTER:
                raise TypeError(f"kernel {name}: argument {k} is a device pointer but the parameter is "
                                f"{_KIND_NAMES[kind]} ({size} bytes)")
            buf = a.buffer
            if not isinstance(buf, EmulatedBuffer) or not 0 <= a.offset <= buf.nbytes:
                raise RuntimeError(f"kernel {name}: argument {k} points at offset {a.offset} of {buf!r}")
            return (buf.ptr + a.offset).to_bytes(8, "little")
        if isinstance(a, np.generic):
            dt = a.dtype
            got = _KIND_OF.get(dt)
            if got is None:
                got = _KIND_OF[dt] = _scalar_kind(dt)
            if got != kind or dt.itemsize != size:
                raise TypeError(f"kernel {name}: argument {k} is numpy.{a.dtype} ({a.dtype.itemsize} bytes) but the "
                                f"parameter is {_KIND_NAMES[kind]} of {size} bytes; pass the parameter's exact C type")
            return a.tobytes()
        raise TypeError(f"kernel {name}: argument {k} is a Python {type(a).__name__}; kernel arguments are NumPy scalars "
                        f"of the parameter's exact C type, Pointer(buffer, offset) or packed structs")


_ADDRESS = re.compile(r"on (?:unknown )?address (0x[0-9a-f]+)")


def _where(msg, args):
    """For an AddressSanitizer report: which pointer argument's buffer the bad address is next to
    ("use-after-poison" there means the guard bytes around a device buffer)."""
    m = _ADDRESS.search(msg)
    if not m:
        return ""
    addr = int(m.group(1), 16)
    for k, a in enumerate(args):
        if isinstance(a, Pointer) and isinstance(a.buffer, EmulatedBuffer):
            lo, n = a.buffer.ptr, a.buffer.nbytes
            guard = max(64, min(n, 16384)) + 64
            if lo - guard <= addr < lo + n + guard:
                rel = addr - (a.buffer.ptr + a.offset)
                where = (f"{addr - lo - n} bytes past the end" if addr >= lo + n else
                         f"{lo - addr} bytes before the start" if addr < lo else "inside")
                return (f"argument {k} (a device pointer at byte {a.offset} of a {n}-byte buffer) was accessed "
                        f"{where} of its buffer, at byte {rel} from the pointer.\n")
    return ""


def _dim3(d):
    if type(d) is tuple and len(d) == 1 and type(d[0]) is int:  # launch's usual (n,)
        return (d[0], 1, 1)
    d = (d,) if isinstance(d, int) else tuple(d)
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))
