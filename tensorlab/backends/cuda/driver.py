"""The driver interface: everything the CUDA backend needs from a GPU runtime, and nothing else.

Two implementations stand behind it:
- ``cupy_driver.CupyDriver``: real GPUs through CuPy (device memory from CuPy's pool, pinned host
  memory, streams, events, NVRTC-compiled RawModules, kernel launches);
- ``emulation.EmulationDriver``: the same calls over host memory, compiling ``kernels/*.cu`` with
  the system C++ compiler against a header that provides the CUDA built-ins (test infrastructure
  for CI; selected with TENSORLAB_CUDA_EMULATION=1; never makes tl.cuda.is_available() True).

Everything above the driver (kernel choice, launch geometry, argument packing, the primitives in
``backends/cuda/*.py``) is plain Python shared by both, so the emulation exercises it for real.

Conventions
- A *buffer* is the driver's device allocation object; it has ``.ptr`` (int, device address),
  ``.nbytes`` and ``.device`` (int index). Byte offsets into buffers are explicit arguments.
- A *stream* / *event* is the driver's handle object; ``None`` never means "default stream":
  callers pass ``driver.current_stream(device)``.
- Kernel arguments are a tuple of: NumPy scalars of the kernel parameter's exact C type
  (np.float32 for ``float``, np.int64 for ``long long``, ...), ``Pointer(buffer, byte_offset)``
  for ``T*`` parameters, and NumPy structured scalars (``np.void`` with an aligned dtype) for
  struct parameters passed by value (tl::StridedLayout).
- Every allocation calls ``_faults.hit("alloc")`` and every launch ``_faults.hit("launch")`` in
  the shared layer above the driver, not inside the drivers.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol


# the compute types each operand dtype may ask for; "default" is the first
GEMM_COMPUTE = {"float16": ("32F", "16F"), "bfloat16": ("32F",), "float32": ("32F", "32F_FAST_TF32"),
                "float64": ("64F",), "complex64": ("32F", "32F_FAST_TF32"), "complex128": ("64F",)}


# driver.gemm_epilogue: its dtypes and epilogues (cuBLASLt's CUBLASLT_EPILOGUE_* of the same names)
GEMM_EPILOGUE_DTYPES = ("float16", "bfloat16", "float32")
GEMM_EPILOGUES = ("bias", "relu_bias", "bgradb")


def gemm_compute(dtype, compute):
    """driver.gemm's compute argument checked against the operands' dtype ("default": the first)."""
    allowed = GEMM_COMPUTE[dtype]
    if compute == "default":
        return allowed[0]
    if compute not in allowed:
        raise RuntimeError(f"cuBLAS gemm: compute type {compute!r} is not one of {allowed} for {dtype} operands")
    return compute


class Pointer(NamedTuple):
    """A ``T*`` kernel argument: a device buffer plus a byte offset into it."""

    buffer: object
    offset: int = 0


class OutOfMemory(Exception):
    """Raised by a driver's ``malloc`` when the device cannot satisfy an allocation; the backend
    turns it into tl.cuda.OutOfMemoryError naming the bytes asked for and free."""

    def __init__(self, nbytes, free=None):
        super().__init__(nbytes, free)
        self.nbytes = nbytes
        self.free = free


class Driver(Protocol):
    """The structural type both drivers satisfy (tests/test_cuda_driver_interface.py checks that
    each implements every method below)."""

    name: str

    #: What one ``load_module`` call compiles, read by modules.py: ``"expression"`` - one module per
    #: name expression (``name_expressions`` has one element; the first launch of a kernel costs
    #: one small compile: CuPy/NVRTC), or ``"source"`` - one module per kernels/*.cu holding its
    #: whole tensorlab.kernel_table row (the emulation: one g++ build per source, cached on disk).
    module_granularity: str

    # -- devices -------------------------------------------------------------------------------
    def device_count(self) -> int: ...
    def current_device(self) -> int: ...
    def set_device(self, index: int) -> None: ...
    def device_name(self, index: int) -> str: ...

    def device_properties(self, index: int) -> dict:
        """name, total_memory, multi_processor_count, major, minor, max_threads_per_block,
        max_shared_memory_per_block, warp_size, l2_cache_size."""
        ...

    def mem_get_info(self, index: int) -> tuple: ...  # (free, total) bytes
    def device_synchronize(self, index: int) -> None: ...

    # -- memory --------------------------------------------------------------------------------
    def malloc(self, nbytes: int, device: int, stream) -> object: ...

    def free(self, buffer, stream) -> None:
        """Return a buffer; the memory is reused only after work queued on `stream` finished."""
        ...

    def release(self, buffer, stream) -> None:
        """Let go of a buffer that other threads may still hold (a storage's old bytes after
        resize_/set_): the memory is reused only once the last reference is gone AND the work
        queued on `stream` so far has finished. free() is for private scratch, reusable at once."""
        ...

    def memcpy_htod(self, dst: Pointer, host, nbytes: int, stream, non_blocking: bool) -> None:
        """Copy `nbytes` from a host NumPy array (C-contiguous) into device memory."""
        ...

    def memcpy_dtoh(self, host, src: Pointer, nbytes: int, stream, non_blocking: bool) -> None:
        ...

    def memcpy_dtod(self, dst: Pointer, src: Pointer, nbytes: int, stream) -> None: ...
    def memset(self, dst: Pointer, value: int, nbytes: int, stream) -> None: ...
    def pinned_empty(self, nbytes: int): ...  # page-locked NumPy uint8 array
    def is_pinned(self, host) -> bool: ...
    def memory_stats(self, device: int) -> dict: ...  # allocated/reserved/peaks
    def reset_peak_memory_stats(self, device: int) -> None: ...
    def empty_cache(self) -> None: ...

    # -- streams and events --------------------------------------------------------------------
    def create_stream(self, device: int, priority: int = 0): ...
    def current_stream(self, device: int): ...
    def set_current_stream(self, device: int, stream) -> None: ...
    def stream_synchronize(self, stream) -> None: ...
    def stream_query(self, stream) -> bool: ...
    def stream_wait_event(self, stream, event) -> None: ...
    def create_event(self, enable_timing: bool, blocking: bool): ...
    def event_record(self, event, stream) -> None: ...
    def event_query(self, event) -> bool: ...
    def event_synchronize(self, event) -> None: ...
    def event_elapsed_ms(self, start, end) -> float: ...

    # -- modules and launches ------------------------------------------------------------------
    def load_module(self, source_path, name_expressions, options, device: int):
        """Compile one kernels/*.cu source with the template instantiations `name_expressions`
        (one of them, or the source's whole kernel_table row, as ``module_granularity`` says);
        returns an object with ``get_function(name_expression)``. Called from any thread, possibly
        concurrently for different modules; modules.py caches the result per (source, name
        expressions, options, device) and never asks twice for one key."""
        ...

    def launch(self, function, grid: tuple, block: tuple, args: tuple, shared_mem: int, stream) -> None:
        ...

    # -- vendor libraries (cuBLAS through CuPy; the emulation: NumPy stand-ins checking the arguments)
    def gemm(self, transa: bool, transb: bool, m: int, n: int, k: int, a: Pointer, lda: int, stride_a: int,
             b: Pointer, ldb: int, stride_b: int, c: Pointer, ldc: int, stride_c: int, batch: int, dtype: str,
             stream, *, compute: str = "default", reduced_reduction: bool = False, alpha=1.0,
             beta=0.0) -> None:
        """cuBLAS's strided batched GEMM in its column-major terms: for each of `batch` matrices,
        C (m x n, leading dim ldc) = alpha op(A) (m x k) @ op(B) (k x n) + beta C, op a transpose
        where asked; strides in elements (0: the same matrix for every batch). `dtype` one of
        "float16", "bfloat16" (float32 accumulation, tensor cores), "float32", "float64",
        "complex64" (CUDA_C_32F), "complex128" (CUDA_C_64F). `compute`: cuBLAS's compute type,
        "default" (32F for float/16-bit, 64F for double), "32F", "32F_FAST_TF32" (float32 and
        complex64 inputs rounded to TF32 on tensor cores), "16F" (float16 accumulation, float16 only),
        "64F"; `reduced_reduction`: whether split-K partial sums of 16-bit products may be reduced in
        16 bits (cuBLAS's default math mode) or not (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION).
        alpha and beta are host scalars; C is rounded to `dtype` once, after beta C is added."""
        ...

    def gemm_epilogue(self, transa: bool, transb: bool, m: int, n: int, k: int, a: Pointer, lda: int, b: Pointer,
                      ldb: int, d: Pointer, ldd: int, bias: Pointer, epilogue: str, dtype: str, stream, *,
                      compute: str = "default", reduced_reduction: bool = False) -> None:
        """cuBLASLt's matmul with an epilogue, one column-major matrix (no batch), alpha 1, beta 0:
        D (m x n, leading dim ldd) = op(A) (m x k) @ op(B) (k x n), then by `epilogue` (GEMM_EPILOGUES):
        "bias" adds bias[i] (m elements of dtype, one per row of D) in the compute type before D's one
        rounding, "relu_bias" then max(0, .) (cuBLASLt's GELU epilogues are GELU's tanh approximation:
        not used, tensorlab's gelu is exact); "bgradb" writes D = op(A) op(B) and bias[j] = the
        sum over k of op(B)'s column j (n elements: a linear layer's bias gradient, reduced while the weight
        gradient is computed). `dtype` "float16", "bfloat16" or "float32"; `compute` and
        `reduced_reduction` as gemm's."""
        ...

    def fft(self, kind: str, x: Pointer, y: Pointer, n: tuple, batch: int, forward: bool, dtype: str,
            stream) -> None:
        """cuFFT's batched transform of `batch` contiguous signals, unnormalized: `n` the logical
        signal sizes (rank 1 to 3, the last the fastest); kind "c2c" (x, y complex, forward or
        inverse), "r2c" (x real n, y complex n[:-1] + (n[-1]//2+1)) or "c2r" (the reverse; x may be
        overwritten, as cuFFT's C2R does). `dtype` the complex type: "complex64" (C2C/R2C/C2R) or
        "complex128" (Z2Z/D2Z/Z2D)."""
        ...

    def csrmm(self, m: int, n: int, k: int, nnz: int, crow: Pointer, col: Pointer, index_dtype: str,
              values: Pointer, b: Pointer, c: Pointer, dtype: str, stream) -> None:
        """cuSPARSE's sparse-times-dense product (SpMM), alpha 1 and beta 0: C (m x n, row-major,
        contiguous) = A @ B, A the m x k CSR matrix of `crow` (m + 1 row offsets), `col` (nnz column
        indices; both `index_dtype` "int32" or "int64") and `values` (nnz), B (k x n, row-major,
        contiguous); `dtype` "float32" or "float64". Duplicate entries of a row add up."""
        ...

    # -- cuSOLVER / cuBLAS dense factorizations (backends/cuda/solver.py) ------------------------
    # Column-major LAPACK terms: a batch of `batch` matrices, matrix i at a + i * stride_a elements,
    # leading dim lda >= max(1, rows); ipiv/tau/s/w vectors likewise with their own stride; `info`
    # points at `batch` device int32s, one per matrix, written by the library (LAPACK's semantics:
    # 0 success, i > 0 the failing pivot / minor / non-converged count, -i the i-th argument wrong),
    # never read by the host here. `work` holds `lwork` elements of dtype, lwork from the routine's
    # *_buffer_size query. dtype is "float32" or "float64". Each routine loops over the batch on
    # `stream` where the library has no strided batched form.
    def getrf_buffer_size(self, m: int, n: int, a: Pointer, lda: int, dtype: str, stream) -> int: ...
    def getrf(self, m: int, n: int, a: Pointer, lda: int, stride_a: int, ipiv, stride_ipiv: int, info: Pointer,
              batch: int, work: Pointer, lwork: int, dtype: str, stream) -> None:
        """LU with partial pivoting, in place; ipiv (min(m, n) 1-based int32 rows per matrix) or
        None for no pivoting (CuPy driver: one cuBLAS getrfBatched call for square batches, n <= 128)."""
    def getrs(self, trans: bool, n: int, nrhs: int, a: Pointer, lda: int, stride_a: int, ipiv: Pointer,
              stride_ipiv: int, b: Pointer, ldb: int, stride_b: int, info: Pointer, batch: int, dtype: str,
              stream) -> None:
        """Solve op(A) X = B from getrf's factors, X over B (CuPy driver: cuBLAS getrsBatched for
        batches, n <= 128; its info only reports arguments, so the device info is zeroed)."""
    def potrf_buffer_size(self, lower: bool, n: int, a: Pointer, lda: int, dtype: str, stream) -> int: ...
    def potrf(self, lower: bool, n: int, a: Pointer, lda: int, stride_a: int, info: Pointer, batch: int,
              work: Pointer, lwork: int, dtype: str, stream) -> None:
        """Cholesky of the `lower` (or upper) triangle, in place; the other triangle is not touched
        (CuPy driver: one potrfBatched call over a device array of matrix pointers when batch > 1)."""
    def potrs(self, lower: bool, n: int, nrhs: int, a: Pointer, lda: int, stride_a: int, b: Pointer, ldb: int,
              stride_b: int, info: Pointer, batch: int, dtype: str, stream) -> None:
        """Solve A X = B from potrf's `lower` (or upper) factor, X over B."""
    def geqrf_buffer_size(self, m: int, n: int, a: Pointer, lda: int, dtype: str, stream) -> int: ...
    def geqrf(self, m: int, n: int, a: Pointer, lda: int, stride_a: int, tau: Pointer, stride_tau: int,
              info: Pointer, batch: int, work: Pointer, lwork: int, dtype: str, stream) -> None:
        """Householder QR in place: R on and above the diagonal, the reflectors below, min(m, n) taus."""
    def orgqr_buffer_size(self, m: int, n: int, k: int, a: Pointer, lda: int, tau: Pointer, dtype: str,
                          stream) -> int: ...
    def orgqr(self, m: int, n: int, k: int, a: Pointer, lda: int, stride_a: int, tau: Pointer, stride_tau: int,
              info: Pointer, batch: int, work: Pointer, lwork: int, dtype: str, stream) -> None:
        """The first n columns of H_1 ... H_k (m x n, n <= m, k <= n), over the reflectors in a."""
    def ormqr_buffer_size(self, left: bool, trans: bool, m: int, n: int, k: int, a: Pointer, lda: int,
                          tau: Pointer, c: Pointer, ldc: int, dtype: str, stream) -> int: ...
    def ormqr(self, left: bool, trans: bool, m: int, n: int, k: int, a: Pointer, lda: int, stride_a: int,
              tau: Pointer, stride_tau: int, c: Pointer, ldc: int, stride_c: int, info: Pointer, batch: int,
              work: Pointer, lwork: int, dtype: str, stream) -> None:
        """C (m x n) <- op(Q) C (left) or C op(Q), Q = H_1 ... H_k from geqrf's reflectors."""
    def gesvd_buffer_size(self, m: int, n: int, dtype: str, stream) -> int: ...
    def gesvd(self, jobu: str, jobvt: str, m: int, n: int, a: Pointer, lda: int, stride_a: int, s: Pointer,
              stride_s: int, u, ldu: int, stride_u: int, vt, ldvt: int, stride_vt: int, info: Pointer, batch: int,
              work: Pointer, lwork: int, dtype: str, stream) -> None:
        """SVD (cuSOLVER: m >= n only); jobu/jobvt "A", "S" or "N"; a is destroyed."""
    def syevd_buffer_size(self, vectors: bool, lower: bool, n: int, a: Pointer, lda: int, w: Pointer, dtype: str,
                          stream) -> int: ...
    def syevd(self, vectors: bool, lower: bool, n: int, a: Pointer, lda: int, stride_a: int, w: Pointer,
              stride_w: int, info: Pointer, batch: int, work: Pointer, lwork: int, dtype: str, stream) -> None:
        """Symmetric eigensolver reading the `lower` (or upper) triangle; ascending w, vectors over a."""
    def sytrf_buffer_size(self, n: int, a: Pointer, lda: int, dtype: str, stream) -> int: ...
    def sytrf(self, lower: bool, n: int, a: Pointer, lda: int, stride_a: int, ipiv: Pointer, stride_ipiv: int,
              info: Pointer, batch: int, work: Pointer, lwork: int, dtype: str, stream) -> None:
        """Bunch-Kaufman LDL^T in place, LAPACK's ipiv (negative entries: 2x2 blocks)."""
    def geev_buffer_size(self, vectors: bool, n: int, a: Pointer, lda: int, w: Pointer, vr, ldvr: int, dtype: str,
                         stream) -> tuple:
        """(device bytes, host bytes) of geev's two workspaces; dtype here may also be "complex64" or
        "complex128" (A's; W is always the complex type of A's precision, VR has A's type)."""
    def geev(self, vectors: bool, n: int, a: Pointer, lda: int, stride_a: int, w: Pointer, stride_w: int, vr,
             ldvr: int, stride_vr: int, info: Pointer, batch: int, work: Pointer, work_bytes: int, host_bytes: int,
             dtype: str, stream) -> None:
        """General eigensolver (cusolverDnXgeev; right vectors only, or none): W the n complex eigenvalues,
        VR (vectors) the unit-norm right eigenvectors, for a real A in LAPACK's packed real form; a is
        destroyed. The driver owns the host workspace of host_bytes (kept until the stream is done)."""
    def trsm(self, left: bool, lower: bool, trans: bool, unit: bool, m: int, n: int, a: Pointer, lda: int,
             stride_a: int, b: Pointer, ldb: int, stride_b: int, batch: int, dtype: str, stream) -> None:
        """cuBLAS triangular solve, alpha 1: B (m x n) <- op(A)^-1 B (left) or B op(A)^-1."""

    # -- memory and streams that tensorlab does not own (tensorlab/interop) ---------------------
    def wrap_external(self, ptr: int, nbytes: int, device: int, owner) -> object:
        """A buffer over `nbytes` of device memory at `ptr` that another library owns (DLPack,
        __cuda_array_interface__); it keeps `owner` alive and never frees the memory itself."""
        ...

    def external_stream(self, ptr: int, device: int):
        """A stream handle for a raw cudaStream_t another library gave as an int (0: legacy default)."""
        ...

    def pointer_device(self, ptr: int) -> int:
        """The device index a device pointer belongs to (cudaPointerGetAttributes)."""
        ...
