"""CupyDriver: the driver interface (driver.py) on real NVIDIA GPUs through CuPy.

CuPy is imported on first use, so this module imports without it (the interface test runs
everywhere). Choices that matter for correctness:

Device memory comes from a MemoryPool owned by this driver (not CuPy's default pool, so the
memory statistics count tensorlab's tensors only). CuPy's pool is *stream ordered*: a block is
handed out from the arena of the stream that is current at malloc time, and a freed block goes
back to the arena it came from, to be reused only by later allocations on that same stream. Work
queued later on that stream runs after all earlier work there, so freeing on the allocation
stream needs no event: the MemoryPointer is dropped at once. A buffer freed on *another* stream
(it was used there) is kept alive with an event recorded on that stream and dropped only when
the event completed (polled on every malloc/free, drained on out-of-memory) - the record_stream
rule of PyTorch's caching allocator.

Host memory given to a non-blocking copy is kept alive the same way (an event after the copy),
so a pinned source or destination can be released by its owner while the DMA is in flight.
Pageable memory needs nothing: cudaMemcpyAsync from pageable memory returns once CUDA staged the
bytes, and a copy to pageable memory is synchronous.

Streams are created with cudaStreamNonBlocking (as PyTorch's pool streams); each device's
default stream is the legacy NULL stream. The current stream is kept per thread and per device.
Events are created on the device of the stream they are first recorded on (CUDA events belong
to a device), so ``create_event`` needs no device.

Kernels are compiled by nvrtc.py (NVRTC called directly, cached on disk), not by CuPy's compiler,
which adds -ftz=true and would flush float32 denormals to zero; CuPy only loads the cubin
(``cp.RawModule(path=...)``) and launches its RawKernels.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from . import nvrtc
from .driver import GEMM_EPILOGUE_DTYPES, GEMM_EPILOGUES, OutOfMemory, Pointer, gemm_compute

_cp = None
_DEFAULT_SMEM = 48 * 1024  # dynamic shared memory beyond this needs an opt-in per kernel


def _cupy():
    global _cp
    if _cp is None:
        import cupy
        _cp = cupy
    return _cp


class _Stream:
    __slots__ = ("cp", "device", "ptr", "priority")

    def __init__(self, cp_stream, device, priority):
        self.cp = cp_stream
        self.device = device
        self.ptr = cp_stream.ptr
        self.priority = priority

    def __repr__(self):
        return f"<cupy stream {self.ptr:#x} on cuda:{self.device}>"


class _Event:
    __slots__ = ("cp", "device", "enable_timing", "blocking")

    def __init__(self, enable_timing, blocking):
        self.cp = None  # the CUDA event, created at the first record on its stream's device
        self.device = None
        self.enable_timing = enable_timing
        self.blocking = blocking

    @property
    def ptr(self):
        return 0 if self.cp is None else self.cp.ptr


class _Buffer:
    """A device allocation: ``ptr``, ``nbytes``, ``device`` (driver convention) over a CuPy
    MemoryPointer, remembering the stream it was allocated on and its pool block size."""

    __slots__ = ("ptr", "nbytes", "device", "mem", "stream_ptr", "block", "owner", "after", "__weakref__")

    def __init__(self, mem, nbytes, device, stream_ptr, block, owner):
        self.mem = mem
        self.ptr = mem.ptr
        self.nbytes = nbytes
        self.device = device
        self.stream_ptr = stream_ptr
        self.block = block
        self.owner = owner
        self.after = None  # release(): an event the memory's reuse must wait for

    def __del__(self):
        mem = self.mem
        if mem is not None:  # dropped without free(): the pool reclaims it, the stats must too
            self.mem = None
            try:
                if self.after is not None and not self.after.done:
                    self.owner._pending_add(self.after, mem, self.device, self.block)
                else:
                    self.owner._account(self.device, -self.block)
            except Exception:  # interpreter shutdown: nothing left to account to
                pass

    def __repr__(self):
        return f"<cuda buffer {self.ptr:#x} nbytes={self.nbytes} on cuda:{self.device}>"


class _Module:
    __slots__ = ("raw", "device", "name", "lowered")

    def __init__(self, raw, device, name, lowered):
        self.raw = raw  # cp.RawModule over the compiled binary's file
        self.device = device
        self.name = name
        self.lowered = lowered  # name expression -> the kernel's (mangled) symbol in the binary

    def get_function(self, name_expression):
        symbol = self.lowered.get(name_expression)
        if symbol is None:
            raise RuntimeError(f"{name_expression!r} was not compiled into this module of {self.name} "
                               f"(it holds {', '.join(self.lowered)})")
        cp = _cupy()
        with cp.cuda.Device(self.device):
            return _Function(self.raw.get_function(symbol), self.device, name_expression)


class _Function:
    __slots__ = ("kernel", "device", "name", "smem_limit", "fn")

    def __init__(self, kernel, device, name):
        self.kernel = kernel  # CuPy's RawKernel
        self.device = device
        self.name = name
        self.smem_limit = _DEFAULT_SMEM
        self.fn = None  # its cupy.cuda.function.Function on `device`, resolved at the first launch

    def __repr__(self):
        return f"<cuda kernel {self.name} on cuda:{self.device}>"


def _arg(a):
    """A kernel argument as CuPy's launcher takes it: device pointers as 8-byte integers; structs
    (np.void) and types CuPy does not know (ml_dtypes.bfloat16, kind 'V' too) by value, byte for
    byte, from a cached host copy (_by_value); numeric NumPy scalars unchanged."""
    if type(a) is Pointer:
        return np.uint64(a.buffer.ptr + a.offset)
    if isinstance(a, np.generic) and a.dtype.kind == "V":
        return _by_value(a)
    return a


_PLAIN_ARGS = set()  # argument types _arg passes through unchanged (numeric NumPy scalars), learned


def _launch_args(args):
    """The arguments as CuPy's Function takes them (_arg's conversions): device pointers as 8-byte
    integers, structs by value, the types _arg passes through as they are without asking it again.
    A list: CuPy's launcher only iterates it."""
    out = []
    for a in args:
        t = type(a)
        if t is Pointer:
            out.append(_uint64(a.buffer.ptr + a.offset))
        elif t in _PLAIN_ARGS:
            out.append(a)
        else:
            c = _arg(a)
            if c is a:
                _PLAIN_ARGS.add(t)
            out.append(c)
    return out


_uint64 = np.uint64


# alpha = 1, beta = 0 for cuBLAS, read from host memory at the call (pointer mode host): kept alive here
_ONES = {"float32": np.ones(1, np.float32), "float64": np.ones(1, np.float64)}  # trsm's alpha

_BY_VALUE = {}         # the argument's bytes -> its _HostArg (layouts recur launch after launch)
_BY_VALUE_MAX = 4096


def _by_value(a):
    """`a`'s bytes as a CuPy CPointer, which the launcher passes through untouched. A 0-d NumPy
    array would do too, but CuPy reads its address through __array_interface__, which NumPy builds
    in Python for a structured dtype: 6-7 us per struct argument (measured on an H200's host: a
    broadcast add cost 66 us against CuPy's 12)."""
    key = a.tobytes()
    h = _BY_VALUE.get(key)
    if h is None:
        if len(_BY_VALUE) >= _BY_VALUE_MAX:
            _BY_VALUE.clear()  # each _HostArg keeps its own bytes: launches holding one are unaffected
        keep = np.frombuffer(key, np.uint8)
        h = _host_arg_type()(keep.__array_interface__["data"][0])
        h.keep = keep
        _BY_VALUE[key] = h
    return h


_HostArg = None


def _host_arg_type():
    """A CuPy CPointer (a host address cuLaunchKernel copies the argument from) that keeps the
    bytes it points to alive."""
    global _HostArg
    if _HostArg is None:
        from cupy.cuda.function import CPointer

        class _HostArg(CPointer):  # noqa: N801 (a private class made on first use)
            __slots__ = ("keep",)
    return _HostArg


def _host_ptr(host):
    return host.__array_interface__["data"][0]


def _cuda_runtime_include():
    """The CUDA runtime headers (cuda_fp16.h needs them) for this NVRTC, or None (nvrtc.py)."""
    return nvrtc.runtime_include()


def _headers_digest(include_dir):
    """A digest of the shared headers, passed as a -D option: the on-disk kernel cache (nvrtc.py) is
    keyed by source and options, so an edited header would otherwise load a stale binary."""
    h = hashlib.sha1()
    for p in sorted(Path(include_dir).rglob("*.cuh")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def nvrtc_options(options, include_dir, digest, runtime_include=None):
    """The NVRTC options load_module compiles a source in `include_dir` with (a pure function of
    its arguments, so they can be checked without a GPU): the caller's options, the C++ standard
    unless given, -I for kernels/ and the CUDA runtime headers, and the headers' digest. Nothing
    else: nvrtc.compile adds only --gpu-architecture for the device (no -ftz: denormals are kept)."""
    opts = list(options)
    if not any(o.startswith(("-std", "--std")) for o in opts):
        opts.append("-std=c++17")
    for inc in (include_dir, runtime_include):
        if inc is not None and f"-I{inc}" not in opts:
            opts.append(f"-I{inc}")
    opts.append(f"-DTENSORLAB_HEADERS_DIGEST=0x{digest}")
    return tuple(opts)


class CupyDriver:
    name = "cupy"
    # one module per name expression: the first launch of a kernel compiles that instantiation only
    # (~0.1-0.5 s of NVRTC), not its source's whole kernel_table row (elementwise.cu: 532, minutes)
    module_granularity = "expression"

    def __init__(self):
        self._pool = None
        self._lock = threading.RLock()  # re-entrant: a _Buffer.__del__ may run inside a locked region
        self._tls = threading.local()
        self._defaults = {}   # device -> _Stream over the legacy NULL stream
        self._pending = []    # (event, objects kept alive until it completes, device, block bytes)
        self._allocated = {}  # device -> bytes in live buffers (pool block sizes)
        self._peak_allocated = {}
        self._peak_reserved = {}
        self._props = {}
        self._digests = {}
        self._sources = {}  # path -> source text: read once, not once per name expression

    # -- devices -------------------------------------------------------------------------------
    def device_count(self):
        return _cupy().cuda.runtime.getDeviceCount()

    def current_device(self):
        return _cupy().cuda.runtime.getDevice()

    def set_device(self, index):
        _cupy().cuda.runtime.setDevice(index)

    def device_name(self, index):
        return self.device_properties(index)["name"]

    def device_properties(self, index):
        props = self._props.get(index)
        if props is None:
            p = _cupy().cuda.runtime.getDeviceProperties(index)
            name = p["name"]
            props = {"name": name.decode() if isinstance(name, bytes) else str(name),
                     "total_memory": int(p["totalGlobalMem"]),
                     "multi_processor_count": int(p["multiProcessorCount"]),
                     "major": int(p["major"]), "minor": int(p["minor"]),
                     "max_threads_per_block": int(p["maxThreadsPerBlock"]),
                     "max_shared_memory_per_block": int(p["sharedMemPerBlock"]),
                     "warp_size": int(p["warpSize"]),
                     "l2_cache_size": int(p["l2CacheSize"])}
            self._props[index] = props
        return dict(props)

    def mem_get_info(self, index):
        cp = _cupy()
        with cp.cuda.Device(index):
            free, total = cp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def device_synchronize(self, index):
        cp = _cupy()
        with cp.cuda.Device(index):
            cp.cuda.runtime.deviceSynchronize()
        self._collect()

    # -- memory --------------------------------------------------------------------------------
    def _pool_get(self):
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = _cupy().cuda.MemoryPool()
        return self._pool

    def malloc(self, nbytes, device, stream):
        cp = _cp or _cupy()
        pool = self._pool if self._pool is not None else self._pool_get()
        if self._pending:
            self._collect()
        if cp.cuda.runtime.getDevice() == device:  # the commonest case: no device context to enter and leave
            try:
                mem = self._pool_malloc(cp, pool, nbytes, stream)
            except cp.cuda.memory.OutOfMemoryError:
                mem = None
            if mem is not None:
                block = mem.mem.size if nbytes else 0
                buf = _Buffer(mem, nbytes, device, stream.ptr, block, self)
                self._account(device, block, pool.total_bytes())
                return buf
        with cp.cuda.Device(device):
            try:
                mem = self._pool_malloc(cp, pool, nbytes, stream)
            except cp.cuda.memory.OutOfMemoryError:
                # blocks freed on other streams may still wait for their events: wait for them,
                # return every cached block to CUDA, and try once more
                self._collect(wait=True)
                pool.free_all_blocks()
                try:
                    mem = self._pool_malloc(cp, pool, nbytes, stream)
                except cp.cuda.memory.OutOfMemoryError:
                    raise OutOfMemory(nbytes, self.mem_get_info(device)[0]) from None
            reserved = pool.total_bytes()
        block = mem.mem.size if nbytes else 0
        buf = _Buffer(mem, nbytes, device, stream.ptr, block, self)
        self._account(device, block, reserved)
        return buf

    @staticmethod
    def _pool_malloc(cp, pool, nbytes, stream):
        # the pool picks the arena of CuPy's current stream: make it ours for the call
        if cp.cuda.get_current_stream().ptr == stream.ptr:
            return pool.malloc(nbytes)
        with stream.cp:
            return pool.malloc(nbytes)

    def free(self, buffer, stream):
        mem = buffer.mem
        if mem is None:
            return
        buffer.mem = None
        if stream.ptr == buffer.stream_ptr and stream.device == buffer.device:
            del mem  # back to its stream's arena: later work on that stream runs after this
            self._account(buffer.device, -buffer.block)
            return
        self._keep_until_done(stream, mem, buffer.device, buffer.block)

    def release(self, buffer, stream):
        # A storage's old buffer: another thread may have read its pointer and still be queuing
        # work on it, so the memory must not go back to the pool now (the pool would hand it to
        # the next malloc, and that thread's copy would read someone else's bytes: seen on an
        # H200). It goes when the last reference does (__del__); work queued on another stream
        # than the allocation's first has to finish (the event).
        if buffer.mem is None:
            return
        if not (stream.ptr == buffer.stream_ptr and stream.device == buffer.device):
            buffer.after = self._record(stream)

    @staticmethod
    def _record(stream):
        cp = _cupy()
        with cp.cuda.Device(stream.device):
            ev = cp.cuda.Event(block=False, disable_timing=True)
            ev.record(stream.cp)
        return ev

    def _pending_add(self, ev, obj, device, block):
        with self._lock:
            self._pending.append((ev, obj, device, block))

    def _keep_until_done(self, stream, obj, device=None, block=0):
        self._pending_add(self._record(stream), obj, device, block)

    def _collect(self, wait=False):
        """Drop what completed events kept alive (all of it, waiting, when `wait`)."""
        with self._lock:
            if not self._pending:
                return
            keep, done = [], []
            for entry in self._pending:
                if wait:
                    entry[0].synchronize()
                (done if wait or entry[0].done else keep).append(entry)
            self._pending = keep
        for _, obj, device, block in done:
            if block:
                self._account(device, -block)
        del done  # the MemoryPointers / host arrays go here, outside the lock

    def _account(self, device, delta, reserved=None):
        with self._lock:
            now = self._allocated.get(device, 0) + delta
            self._allocated[device] = now
            if now > self._peak_allocated.get(device, 0):
                self._peak_allocated[device] = now
            if reserved is not None and reserved > self._peak_reserved.get(device, 0):
                self._peak_reserved[device] = reserved

    def _reserved(self, device):
        cp = _cupy()
        with cp.cuda.Device(device):
            return int(self._pool_get().total_bytes())

    def memcpy_htod(self, dst, host, nbytes, stream, non_blocking):
        if not nbytes:
            return
        cp = _cupy()
        rt = cp.cuda.runtime
        with cp.cuda.Device(stream.device):
            rt.memcpyAsync(dst.buffer.ptr + dst.offset, _host_ptr(host), nbytes, rt.memcpyHostToDevice, stream.ptr)
        self._after_host_copy(host, stream, non_blocking)

    def memcpy_dtoh(self, host, src, nbytes, stream, non_blocking):
        if not nbytes:
            return
        cp = _cupy()
        rt = cp.cuda.runtime
        with cp.cuda.Device(stream.device):
            rt.memcpyAsync(_host_ptr(host), src.buffer.ptr + src.offset, nbytes, rt.memcpyDeviceToHost, stream.ptr)
        self._after_host_copy(host, stream, non_blocking)

    def _after_host_copy(self, host, stream, non_blocking):
        if not self.is_pinned(host):
            return  # pageable: CUDA completed (to host) or staged (from host) the bytes already
        if non_blocking:
            self._keep_until_done(stream, host)
        else:
            self.stream_synchronize(stream)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        if not nbytes:
            return
        cp = _cupy()
        rt = cp.cuda.runtime
        with cp.cuda.Device(stream.device):
            rt.memcpyAsync(dst.buffer.ptr + dst.offset, src.buffer.ptr + src.offset, nbytes,
                           rt.memcpyDeviceToDevice, stream.ptr)

    def memset(self, dst, value, nbytes, stream):
        if not nbytes:
            return
        cp = _cupy()
        with cp.cuda.Device(stream.device):
            cp.cuda.runtime.memsetAsync(dst.buffer.ptr + dst.offset, value, nbytes, stream.ptr)

    def pinned_empty(self, nbytes):
        # one byte at least: a zero-size allocation has no address to recognise as pinned
        mem = _cupy().cuda.alloc_pinned_memory(max(nbytes, 1))
        return np.frombuffer(mem, dtype=np.uint8, count=max(nbytes, 1))[:nbytes]

    def is_pinned(self, host):
        ptr = _host_ptr(host)
        if not ptr:
            return False
        cp = _cupy()
        try:
            attrs = cp.cuda.runtime.pointerGetAttributes(ptr)
        except cp.cuda.runtime.CUDARuntimeError:
            return False  # old drivers report unregistered host memory as an error
        return attrs.type == cp.cuda.runtime.memoryTypeHost

    def memory_stats(self, device):
        if self._pending:
            self._collect()
        reserved = self._reserved(device) if self._pool is not None else 0
        with self._lock:
            peak_reserved = max(self._peak_reserved.get(device, 0), reserved)
            self._peak_reserved[device] = peak_reserved
            return {"allocated": self._allocated.get(device, 0),
                    "max_allocated": self._peak_allocated.get(device, 0),
                    "reserved": reserved, "max_reserved": peak_reserved}

    def reset_peak_memory_stats(self, device):
        reserved = self._reserved(device) if self._pool is not None else 0
        with self._lock:
            self._peak_allocated[device] = self._allocated.get(device, 0)
            self._peak_reserved[device] = reserved

    def empty_cache(self):
        if self._pool is None:
            return
        self._collect()
        cp = _cupy()
        for d in range(self.device_count()):
            with cp.cuda.Device(d):
                self._pool.free_all_blocks()

    # -- streams and events --------------------------------------------------------------------
    def _default(self, device):
        s = self._defaults.get(device)
        if s is None:
            s = self._defaults.setdefault(device, _Stream(_cupy().cuda.Stream.null, device, 0))
        return s

    def create_stream(self, device, priority=0):
        cp = _cupy()
        with cp.cuda.Device(device):
            s = cp.cuda.Stream(non_blocking=True, priority=priority)
            actual = cp.cuda.runtime.streamGetPriority(s.ptr)  # CUDA clamps to the device's range
        return _Stream(s, device, actual)

    def current_stream(self, device):
        streams = getattr(self._tls, "streams", None)
        if streams is not None:
            s = streams.get(device)
            if s is not None:
                return s
        return self._default(device)

    def set_current_stream(self, device, stream):
        streams = getattr(self._tls, "streams", None)
        if streams is None:
            streams = self._tls.streams = {}
        if stream is None or stream is self._defaults.get(device):
            streams.pop(device, None)
        else:
            streams[device] = stream

    def stream_synchronize(self, stream):
        cp = _cupy()
        with cp.cuda.Device(stream.device):
            stream.cp.synchronize()
        if self._pending:
            self._collect()

    def stream_query(self, stream):
        cp = _cupy()
        with cp.cuda.Device(stream.device):
            return bool(stream.cp.done)

    def stream_wait_event(self, stream, event):
        if event.cp is None:
            return  # never recorded: nothing to wait for (as cudaStreamWaitEvent on a fresh event)
        cp = _cupy()
        with cp.cuda.Device(stream.device):
            stream.cp.wait_event(event.cp)

    def create_event(self, enable_timing, blocking):
        return _Event(bool(enable_timing), bool(blocking))

    def event_record(self, event, stream):
        cp = _cupy()
        if event.cp is None:
            with cp.cuda.Device(stream.device):
                event.cp = cp.cuda.Event(block=event.blocking, disable_timing=not event.enable_timing)
            event.device = stream.device
        elif event.device != stream.device:
            raise RuntimeError(f"Event device cuda:{event.device} does not match recording stream's device "
                               f"cuda:{stream.device}; record it on a stream of cuda:{event.device} or create "
                               "a new Event")
        with cp.cuda.Device(stream.device):
            event.cp.record(stream.cp)

    def event_query(self, event):
        return True if event.cp is None else bool(event.cp.done)

    def event_synchronize(self, event):
        if event.cp is not None:
            event.cp.synchronize()

    def event_elapsed_ms(self, start, end):
        cp = _cupy()
        with cp.cuda.Device(start.device):
            return float(cp.cuda.get_elapsed_time(start.cp, end.cp))

    # -- modules and launches ------------------------------------------------------------------
    def compile_options(self, source_path, options):
        """nvrtc_options() for `source_path`, with its include directory's header digest."""
        include = Path(source_path).parent
        digest = self._digests.get(include)
        if digest is None:
            digest = self._digests[include] = _headers_digest(include)
        return nvrtc_options(options, include, digest, _cuda_runtime_include())

    def _source(self, path):
        text = self._sources.get(path)
        if text is None:
            text = self._sources[path] = path.read_text()
        return text

    def _arch(self, device):
        p = self.device_properties(device)
        return p["major"] * 10 + p["minor"]

    def load_module(self, source_path, name_expressions, options, device):
        # module_granularity "expression": modules.py passes one name expression. nvrtc.compile
        # caches each instantiation on disk (source, options, expressions, architecture, NVRTC
        # version), so it is compiled once per machine; NVRTC releases the GIL while compiling, so
        # concurrent calls (modules.precompile) run in parallel. Its CompileError (a RuntimeError)
        # names the source, the expression and the architecture, with NVRTC's log.
        path = Path(source_path)
        built = nvrtc.compile(path, tuple(name_expressions), self.compile_options(path, options),
                              self._arch(device), source=self._source(path))
        cp = _cupy()
        with cp.cuda.Device(device):
            raw = cp.RawModule(path=str(built.path))
            try:
                raw.compile()  # for a path: cuModuleLoad of the cubin (or of PTX, JIT-compiled by the driver)
            except Exception as e:
                raise RuntimeError(f"loading {path.name} ({', '.join(built.lowered)}) as {built.kind} "
                                   f"{built.path} on cuda:{device} failed: {e}") from e
        return _Module(raw, device, path.name, built.lowered)

    def launch(self, function, grid, block, args, shared_mem, stream):
        """One cuLaunchKernel through the kernel's cupy.cuda.function.Function, resolved once per
        kernel (RawKernel.__call__ would look it up per device, with a keyword call, on every launch);
        the device is made current only when it is not (a `with cp.cuda.Device` costs more than the
        rest of the call). Per launch, Python builds the argument list (_launch_args) and nothing else."""
        cp = _cp or _cupy()
        fn = function.fn
        if fn is None or shared_mem > function.smem_limit or cp.cuda.runtime.getDevice() != function.device:
            with cp.cuda.Device(function.device):
                if fn is None:
                    fn = function.fn = function.kernel.kernel
                if shared_mem > function.smem_limit:
                    function.kernel.max_dynamic_shared_size_bytes = shared_mem
                    function.smem_limit = shared_mem
                fn(grid if type(grid) is tuple else tuple(grid), block if type(block) is tuple else tuple(block),
                   _launch_args(args), shared_mem, stream.cp)
            return
        fn(grid if type(grid) is tuple else tuple(grid), block if type(block) is tuple else tuple(block),
           _launch_args(args), shared_mem, stream.cp)

    # -- vendor libraries ----------------------------------------------------------------------
    def gemm(self, transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, dtype,
             stream, *, compute="default", reduced_reduction=False, alpha=1.0, beta=0.0):
        cp = _cupy()
        from cupy_backends.cuda.libs import cublas
        rt = cp.cuda.runtime
        data, scalar = {
            "float16": (rt.CUDA_R_16F, np.float32), "bfloat16": (rt.CUDA_R_16BF, np.float32),
            "float32": (rt.CUDA_R_32F, np.float32), "float64": (rt.CUDA_R_64F, np.float64),
            "complex64": (rt.CUDA_C_32F, np.complex64), "complex128": (rt.CUDA_C_64F, np.complex128)}[dtype]
        kind = gemm_compute(dtype, compute)
        if kind == "16F":  # float16 accumulation: cuBLAS takes the scalars in the compute type
            scalar = np.float16
        ctype = getattr(cublas, "CUBLAS_COMPUTE_" + kind)
        mode = cublas.CUBLAS_DEFAULT_MATH if reduced_reduction else \
            cublas.CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
        al, be = np.array([alpha], scalar), np.array([beta], scalar)  # host pointer mode: read at the call
        with cp.cuda.Device(stream.device):
            handle = cp.cuda.device.get_cublas_handle()
            cublas.setStream(handle, stream.ptr)
            cublas.setMathMode(handle, mode)
            cublas.gemmStridedBatchedEx(
                handle, cublas.CUBLAS_OP_T if transa else cublas.CUBLAS_OP_N,
                cublas.CUBLAS_OP_T if transb else cublas.CUBLAS_OP_N, m, n, k, al.ctypes.data,
                a.buffer.ptr + a.offset, data, lda, stride_a, b.buffer.ptr + b.offset, data, ldb, stride_b,
                be.ctypes.data, c.buffer.ptr + c.offset, data, ldc, stride_c, batch, ctype,
                cublas.CUBLAS_GEMM_DEFAULT)

    def gemm_epilogue(self, transa, transb, m, n, k, a, lda, b, ldb, d, ldd, bias, epilogue, dtype, stream, *,
                      compute="default", reduced_reduction=False):
        # cuBLASLt through ctypes (cublaslt.py: CuPy 14 has no binding); its workspace from CuPy's pool on
        # the stream it serves
        cp = _cupy()
        if dtype not in GEMM_EPILOGUE_DTYPES or epilogue not in GEMM_EPILOGUES:
            raise RuntimeError(f"cuBLASLt gemm_epilogue: dtype {dtype!r} / epilogue {epilogue!r} not supported")
        kind = gemm_compute(dtype, compute)

        def alloc(nbytes, device, stream_ptr):
            with cp.cuda.Device(device), cp.cuda.ExternalStream(stream_ptr):
                return cp.cuda.alloc(nbytes)

        from . import cublaslt
        lt = cublaslt.get(cp.cuda.runtime.runtimeGetVersion() // 1000, alloc)
        P = self._p
        with cp.cuda.Device(stream.device):
            lt.matmul(stream.device, stream.ptr, transa, transb, m, n, k, P(a), lda, P(b), ldb, P(d), ldd, P(bias),
                      epilogue, dtype, kind, reduced_reduction)

    # -- cuSOLVER (dense factorizations) and cuBLAS trsm: the handle bound to the stream; each routine
    # loops over the batch (matrix i at a + i * stride) where cuSOLVER has no strided batched form;
    # info stays on the device (one int32 per matrix), read only by a caller that asks for it
    @staticmethod
    def _solver(stream):
        cp = _cupy()
        from cupy_backends.cuda.libs import cusolver
        handle = cp.cuda.device.get_cusolver_handle()
        cusolver.setStream(handle, stream.ptr)
        return cusolver, handle

    @staticmethod
    def _fn(lib, dtype, name):
        return getattr(lib, {"float32": "s", "float64": "d"}[dtype] + name)

    @staticmethod
    def _p(ptr, i=0, isz=0, stride=0):
        return 0 if ptr is None else ptr.buffer.ptr + ptr.offset + i * stride * isz

    @staticmethod
    def _isz(dtype):
        return 4 if dtype == "float32" else 8

    @staticmethod
    def _fill(lower):
        from cupy_backends.cuda.libs import cublas
        return cublas.CUBLAS_FILL_MODE_LOWER if lower else cublas.CUBLAS_FILL_MODE_UPPER

    def getrf_buffer_size(self, m, n, a, lda, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "getrf_bufferSize")(h, m, n, self._p(a), lda))

    _BATCHED_MAX_N = 128  # cuBLAS's getrf/getrsBatched (one launch for the batch) up to this order

    @staticmethod
    def _ptr_array(cp, base, stride_bytes, batch):
        """The device array of `batch` matrix pointers base + i * stride_bytes, computed on the current
        (CuPy) stream as CuPy's _mat_ptrs does; CuPy's pool reuses it only after that stream's work."""
        return cp.arange(batch, dtype=cp.uint64) * cp.uint64(stride_bytes) + cp.uint64(base)

    def getrf(self, m, n, a, lda, stride_a, ipiv, stride_ipiv, info, batch, work, lwork, dtype, stream):
        cp = _cupy()
        isz, P = self._isz(dtype), self._p
        if batch > 1 and m == n and n <= self._BATCHED_MAX_N and (ipiv is None or stride_ipiv == n):
            from cupy_backends.cuda.libs import cublas
            with cp.cuda.Device(stream.device), stream.cp:
                handle = cp.cuda.device.get_cublas_handle()
                cublas.setStream(handle, stream.ptr)
                ptrs = self._ptr_array(cp, P(a), stride_a * isz, batch)
                self._fn(cublas, dtype, "getrfBatched")(handle, n, ptrs.data.ptr, lda, P(ipiv), P(info), batch)
            return
        with cp.cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "getrf")
            for i in range(batch):
                f(h, m, n, P(a, i, isz, stride_a), lda, P(work), P(ipiv, i, 4, stride_ipiv), P(info, i, 4, 1))

    def getrs(self, trans, n, nrhs, a, lda, stride_a, ipiv, stride_ipiv, b, ldb, stride_b, info, batch, dtype,
              stream):
        from cupy_backends.cuda.libs import cublas
        cp = _cupy()
        isz, P = self._isz(dtype), self._p
        op = cublas.CUBLAS_OP_T if trans else cublas.CUBLAS_OP_N
        if batch > 1 and n <= self._BATCHED_MAX_N and stride_ipiv == n:
            host_info = np.zeros(1, np.int32)  # getrsBatched's info is a host int: argument errors only
            with cp.cuda.Device(stream.device), stream.cp:
                handle = cp.cuda.device.get_cublas_handle()
                cublas.setStream(handle, stream.ptr)
                aptrs = self._ptr_array(cp, P(a), stride_a * isz, batch)
                bptrs = self._ptr_array(cp, P(b), stride_b * isz, batch)
                self._fn(cublas, dtype, "getrsBatched")(handle, op, n, nrhs, aptrs.data.ptr, lda, P(ipiv),
                                                        bptrs.data.ptr, ldb, host_info.ctypes.data, batch)
                cp.cuda.runtime.memsetAsync(P(info), 0, 4 * batch, stream.ptr)
            if host_info[0]:
                raise RuntimeError(f"cuBLAS getrsBatched: argument {-int(host_info[0])} is invalid")
            return
        with cp.cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "getrs")
            for i in range(batch):
                f(h, op, n, nrhs, P(a, i, isz, stride_a), lda, P(ipiv, i, 4, stride_ipiv), P(b, i, isz, stride_b), ldb,
                  P(info, i, 4, 1))

    def potrf_buffer_size(self, lower, n, a, lda, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "potrf_bufferSize")(h, self._fill(lower), n, self._p(a), lda))

    def potrf(self, lower, n, a, lda, stride_a, info, batch, work, lwork, dtype, stream):
        cp = _cupy()
        isz, P = self._isz(dtype), self._p
        with cp.cuda.Device(stream.device):
            lib, h = self._solver(stream)
            if batch > 1:
                # cusolverDn<t>potrfBatched over the array of matrix pointers, computed on the device on
                # this stream (as CuPy's _mat_ptrs; CuPy's pool reuses it only after the work queued here)
                with stream.cp:
                    ptrs = self._ptr_array(cp, P(a), stride_a * isz, batch)
                    self._fn(lib, dtype, "potrfBatched")(h, self._fill(lower), n, ptrs.data.ptr, lda, P(info),
                                                         batch)
                return
            f = self._fn(lib, dtype, "potrf")
            for i in range(batch):
                f(h, self._fill(lower), n, P(a, i, isz, stride_a), lda, P(work), lwork, P(info, i, 4, 1))

    def potrs(self, lower, n, nrhs, a, lda, stride_a, b, ldb, stride_b, info, batch, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "potrs")
            for i in range(batch):
                f(h, self._fill(lower), n, nrhs, P(a, i, isz, stride_a), lda, P(b, i, isz, stride_b), ldb,
                  P(info, i, 4, 1))

    def geqrf_buffer_size(self, m, n, a, lda, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "geqrf_bufferSize")(h, m, n, self._p(a), lda))

    def geqrf(self, m, n, a, lda, stride_a, tau, stride_tau, info, batch, work, lwork, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "geqrf")
            for i in range(batch):
                f(h, m, n, P(a, i, isz, stride_a), lda, P(tau, i, isz, stride_tau), P(work), lwork, P(info, i, 4, 1))

    def orgqr_buffer_size(self, m, n, k, a, lda, tau, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "orgqr_bufferSize")(h, m, n, k, self._p(a), lda, self._p(tau)))

    def orgqr(self, m, n, k, a, lda, stride_a, tau, stride_tau, info, batch, work, lwork, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "orgqr")
            for i in range(batch):
                f(h, m, n, k, P(a, i, isz, stride_a), lda, P(tau, i, isz, stride_tau), P(work), lwork,
                  P(info, i, 4, 1))

    @staticmethod
    def _side_op(left, trans):
        from cupy_backends.cuda.libs import cublas
        return (cublas.CUBLAS_SIDE_LEFT if left else cublas.CUBLAS_SIDE_RIGHT,
                cublas.CUBLAS_OP_T if trans else cublas.CUBLAS_OP_N)

    def ormqr_buffer_size(self, left, trans, m, n, k, a, lda, tau, c, ldc, dtype, stream):
        side, op = self._side_op(left, trans)
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "ormqr_bufferSize")(h, side, op, m, n, k, self._p(a), lda, self._p(tau),
                                                                 self._p(c), ldc))

    def ormqr(self, left, trans, m, n, k, a, lda, stride_a, tau, stride_tau, c, ldc, stride_c, info, batch, work,
              lwork, dtype, stream):
        side, op = self._side_op(left, trans)
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "ormqr")
            for i in range(batch):
                f(h, side, op, m, n, k, P(a, i, isz, stride_a), lda, P(tau, i, isz, stride_tau), P(c, i, isz, stride_c),
                  ldc, P(work), lwork, P(info, i, 4, 1))

    def gesvd_buffer_size(self, m, n, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "gesvd_bufferSize")(h, m, n))

    def gesvd(self, jobu, jobvt, m, n, a, lda, stride_a, s, stride_s, u, ldu, stride_u, vt, ldvt, stride_vt, info,
              batch, work, lwork, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "gesvd")
            for i in range(batch):
                f(h, ord(jobu), ord(jobvt), m, n, P(a, i, isz, stride_a), lda, P(s, i, isz, stride_s),
                  P(u, i, isz, stride_u), ldu, P(vt, i, isz, stride_vt), ldvt, P(work), lwork, 0, P(info, i, 4, 1))

    def syevd_buffer_size(self, vectors, lower, n, a, lda, w, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            jobz = lib.CUSOLVER_EIG_MODE_VECTOR if vectors else lib.CUSOLVER_EIG_MODE_NOVECTOR
            return int(self._fn(lib, dtype, "syevd_bufferSize")(h, jobz, self._fill(lower), n, self._p(a), lda,
                                                                 self._p(w)))

    def syevd(self, vectors, lower, n, a, lda, stride_a, w, stride_w, info, batch, work, lwork, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            jobz = lib.CUSOLVER_EIG_MODE_VECTOR if vectors else lib.CUSOLVER_EIG_MODE_NOVECTOR
            f = self._fn(lib, dtype, "syevd")
            for i in range(batch):
                f(h, jobz, self._fill(lower), n, P(a, i, isz, stride_a), lda, P(w, i, isz, stride_w), P(work), lwork,
                  P(info, i, 4, 1))

    def sytrf_buffer_size(self, n, a, lda, dtype, stream):
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            return int(self._fn(lib, dtype, "sytrf_bufferSize")(h, n, self._p(a), lda))

    def sytrf(self, lower, n, a, lda, stride_a, ipiv, stride_ipiv, info, batch, work, lwork, dtype, stream):
        isz, P = self._isz(dtype), self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            f = self._fn(lib, dtype, "sytrf")
            for i in range(batch):
                f(h, self._fill(lower), n, P(a, i, isz, stride_a), lda, P(ipiv, i, 4, stride_ipiv), P(work), lwork,
                  P(info, i, 4, 1))

    # cusolverDnXgeev (the 64-bit API): cudaDataType values of A / VR (A's type) and W (complex)
    _CUDA_DATA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}  # CUDA_R_32F, _R_64F, _C_32F, _C_64F
    _GEEV_W = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}
    _ITEMSIZE = {"float32": 4, "float64": 8, "complex64": 8, "complex128": 16}

    def _geev_args(self, lib, vectors, dtype):
        ta, tw = self._CUDA_DATA_TYPE[dtype], self._CUDA_DATA_TYPE[self._GEEV_W[dtype]]
        jobvr = lib.CUSOLVER_EIG_MODE_VECTOR if vectors else lib.CUSOLVER_EIG_MODE_NOVECTOR
        return ta, tw, lib.CUSOLVER_EIG_MODE_NOVECTOR, jobvr

    def geev_buffer_size(self, vectors, n, a, lda, w, vr, ldvr, dtype, stream):
        P = self._p
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            ta, tw, jobvl, jobvr = self._geev_args(lib, vectors, dtype)
            params = lib.createParams()
            try:
                d, hb = lib.xgeev_bufferSize(h, params, jobvl, jobvr, n, ta, P(a), lda, tw, P(w), ta, 0, 1, ta, P(vr),
                                             ldvr, ta)
            finally:
                lib.destroyParams(params)
            return int(d), int(hb)

    def geev(self, vectors, n, a, lda, stride_a, w, stride_w, vr, ldvr, stride_vr, info, batch, work, work_bytes,
             host_bytes, dtype, stream):
        P = self._p
        isz, wsz = self._ITEMSIZE[dtype], self._ITEMSIZE[self._GEEV_W[dtype]]
        host = np.empty(max(int(host_bytes), 1), np.uint8)
        with _cupy().cuda.Device(stream.device):
            lib, h = self._solver(stream)
            ta, tw, jobvl, jobvr = self._geev_args(lib, vectors, dtype)
            params = lib.createParams()
            try:
                for i in range(batch):
                    lib.xgeev(h, params, jobvl, jobvr, n, ta, P(a, i, isz, stride_a), lda, tw, P(w, i, wsz, stride_w),
                              ta, 0, 1, ta, P(vr, i, isz, stride_vr), ldvr, ta, P(work), work_bytes, host.ctypes.data,
                              host_bytes, P(info, i, 4, 1))
            finally:
                lib.destroyParams(params)
        self._keep_until_done(stream, host)

    def trsm(self, left, lower, trans, unit, m, n, a, lda, stride_a, b, ldb, stride_b, batch, dtype, stream):
        cp = _cupy()
        from cupy_backends.cuda.libs import cublas
        isz, P = self._isz(dtype), self._p
        one = _ONES[dtype]
        side, op = self._side_op(left, trans)
        diag = cublas.CUBLAS_DIAG_UNIT if unit else cublas.CUBLAS_DIAG_NON_UNIT
        with cp.cuda.Device(stream.device):
            handle = cp.cuda.device.get_cublas_handle()
            cublas.setStream(handle, stream.ptr)
            f = self._fn(cublas, dtype, "trsm")
            for i in range(batch):
                f(handle, side, self._fill(lower), op, diag, m, n, one.ctypes.data, P(a, i, isz, stride_a), lda,
                  P(b, i, isz, stride_b), ldb)

    def fft(self, kind, x, y, n, batch, forward, dtype, stream):
        cp = _cupy()
        from cupy.cuda import cufft
        single = dtype == "complex64"
        ctype, rtype = (np.complex64, np.float32) if single else (np.complex128, np.float64)
        fft_type = {"c2c": cufft.CUFFT_C2C if single else cufft.CUFFT_Z2Z,
                    "r2c": cufft.CUFFT_R2C if single else cufft.CUFFT_D2Z,
                    "c2r": cufft.CUFFT_C2R if single else cufft.CUFFT_Z2D}[kind]
        half = tuple(n[:-1]) + (n[-1] // 2 + 1,)
        in_shape, in_t = {"c2c": (n, ctype), "r2c": (n, rtype), "c2r": (half, ctype)}[kind]
        out_shape, out_t = {"c2c": (n, ctype), "r2c": (half, ctype), "c2r": (n, rtype)}[kind]

        def view(p, shape, t):
            count = batch * int(np.prod(shape))
            nbytes = count * np.dtype(t).itemsize
            mem = cp.cuda.UnownedMemory(p.buffer.ptr + p.offset, nbytes, p.buffer)
            return cp.ndarray((batch,) + tuple(shape), t, cp.cuda.MemoryPointer(mem, 0))

        with cp.cuda.Device(stream.device), stream.cp:
            a, b = view(x, in_shape, in_t), view(y, out_shape, out_t)
            idist, odist = int(np.prod(in_shape)), int(np.prod(out_shape))
            plan = cufft.PlanNd(tuple(n), tuple(in_shape), 1, idist, tuple(out_shape), 1, odist, fft_type, batch,
                                "C", -1, None)
            plan.fft(a, b, cufft.CUFFT_FORWARD if forward else cufft.CUFFT_INVERSE)

    def csrmm(self, m, n, k, nnz, crow, col, index_dtype, values, b, c, dtype, stream):
        cp = _cupy()
        import cupyx.scipy.sparse as csp
        it = np.int32 if index_dtype == "int32" else np.int64
        vt = np.float32 if dtype == "float32" else np.float64

        def view(p, shape, t):
            count = int(np.prod(shape))
            if count == 0:
                return cp.zeros(shape, t)
            mem = cp.cuda.UnownedMemory(p.buffer.ptr + p.offset, count * np.dtype(t).itemsize, p.buffer)
            return cp.ndarray(tuple(shape), t, cp.cuda.MemoryPointer(mem, 0))

        with cp.cuda.Device(stream.device), stream.cp:
            C = view(c, (m, n), vt)
            if m == 0 or n == 0:
                return
            if nnz == 0 or k == 0:
                C.fill(0)
                return
            # CuPy's sparse matrices hold int32 indices (cuSPARSE's CSR descriptor through cupyx)
            rows = view(crow, (m + 1,), it).astype(cp.int32)
            cols = view(col, (nnz,), it).astype(cp.int32)
            a = csp.csr_matrix((view(values, (nnz,), vt), cols, rows), shape=(m, k))
            C[...] = a.dot(view(b, (k, n), vt))

    # -- memory and streams that tensorlab does not own (tensorlab/interop) ---------------------
    def wrap_external(self, ptr, nbytes, device, owner):
        # block 0: foreign memory is not counted in tensorlab's statistics; `mem` holds the owner
        # (free() drops that reference only: the memory goes back when the owner lets it go)
        buf = _Buffer.__new__(_Buffer)
        buf.mem, buf.ptr, buf.nbytes, buf.device = owner, int(ptr), int(nbytes), int(device)
        buf.stream_ptr, buf.block, buf.owner, buf.after = None, 0, self, None
        return buf

    def external_stream(self, ptr, device):
        if ptr == 0:
            return self._default(device)
        cp = _cupy()
        return _Stream(cp.cuda.ExternalStream(int(ptr), int(device)), device, 0)

    def pointer_device(self, ptr):
        attrs = _cupy().cuda.runtime.pointerGetAttributes(int(ptr))
        return int(attrs.device)
