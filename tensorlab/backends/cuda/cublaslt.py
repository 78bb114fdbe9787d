"""cuBLASLt through ctypes: the one GEMM entry point CuPy 14 does not bind (cupy_backends has cublas,
not cublasLt), used for what plain cuBLAS cannot do in one call: a bias vector added, and ReLU
applied, in the GEMM's epilogue (EPILOGUE_BIAS / RELU_BIAS), and the bias gradient reduced
from an operand while the product is written (EPILOGUE_BGRADB). Called by CupyDriver.gemm_epilogue
(cupy_driver.py) only; the emulation driver has a NumPy stand-in for the same driver call.

The library is the libcublasLt.so.<major> of the CUDA runtime CuPy uses (already loaded into the
process when CuPy's cuBLAS is: dlopen by soname returns that copy; otherwise the pip wheel's
nvidia/cublas/lib, then CUDA_PATH/lib64). Everything the call needs is built per call (the matmul
descriptor carries the bias pointer, so it cannot be shared between threads), except what is safe
to keep: one handle per device, one workspace per (device, stream) (work on one stream is ordered,
so it never runs two matmuls on one workspace at once), and the heuristic's chosen algorithm per
problem (shapes, leading dims, types, epilogue, pointer alignments), since cublasLtMatmulAlgoGetHeuristic
costs tens of microseconds.

Constants are cublasLt.h's (CUDA 12 and 13 keep them): the enum values below are part of the ABI.
`Lt(lib)` takes any object with the C entry points as attributes, so tests drive the whole sequence of
calls against a fake library that computes on host memory (tests/test_cublaslt.py)."""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading

# cublasLtMatmulDescAttributes_t
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE, DESC_BIAS_POINTER = 3, 4, 7, 8
# cublasLtMatmulPreferenceAttributes_t
PREF_MAX_WORKSPACE_BYTES, PREF_REDUCTION_SCHEME_MASK = 1, 3
REDUCTION_SCHEME_COMPUTE_TYPE = 2  # split-K partial sums reduced in the compute type, never in 16 bits
# cublasLtEpilogue_t: the epilogues tensorlab asks for
EPILOGUES = {"bias": 4, "relu_bias": 6, "bgradb": 512}
# cudaDataType and cublasComputeType_t
DATA_TYPES = {"float16": 2, "bfloat16": 14, "float32": 0}
COMPUTE_TYPES = {"16F": 64, "32F": 68, "32F_FAST_TF32": 77}
OP_N, OP_T = 0, 1
WORKSPACE_BYTES = 4 << 20
_HEURISTIC_BYTES = 96  # cublasLtMatmulHeuristicResult_t: algo (8 x uint64), size_t, int, float, int[4]
_ALIGNMENTS = (16, 8, 4, 2)


def _alignment(ptr):
    for a in _ALIGNMENTS:
        if ptr % a == 0:
            return a
    return 1


def _load_library(runtime_major):
    """The libcublasLt shared object for CUDA `runtime_major`, or an OSError naming where it looked."""
    name = f"libcublasLt.so.{runtime_major}"
    tried = [name]
    try:
        return ctypes.CDLL(name)
    except OSError:
        pass
    roots = [os.path.join(p, "nvidia", "cublas", "lib") for p in sys.path if p]
    cuda = os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    roots += [os.path.join(cuda, "lib64"), os.path.join(cuda, "lib")]
    for root in roots:
        for path in sorted(glob.glob(os.path.join(root, name + "*"))):
            tried.append(path)
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise OSError(f"cuBLASLt: {name} not found (tried {', '.join(tried)}); install the CUDA toolkit's cuBLAS or the "
                  f"nvidia-cublas-cu{runtime_major} wheel")


def _check(status, call):
    if status != 0:
        raise RuntimeError(f"cuBLASLt: {call} failed with cublasStatus_t {status}")


class Lt:
    """The cuBLASLt calls one matmul with an epilogue needs, over `lib` (ctypes.CDLL or a fake with the
    same attribute names). `alloc(nbytes, device, stream_ptr)` returns an object with `.ptr` that stays
    allocated while referenced (the workspace)."""

    def __init__(self, lib, alloc):
        self.lib = lib
        self._alloc = alloc
        self._handles = {}
        self._workspaces = {}
        self._algos = {}
        self._lock = threading.Lock()

    def _handle(self, device):
        h = self._handles.get(device)
        if h is None:
            with self._lock:
                h = self._handles.get(device)
                if h is None:
                    p = ctypes.c_void_p()
                    _check(self.lib.cublasLtCreate(ctypes.byref(p)), "cublasLtCreate")
                    h = self._handles[device] = p
        return h

    def _workspace(self, device, stream_ptr):
        key = (device, stream_ptr)
        w = self._workspaces.get(key)
        if w is None:
            with self._lock:
                w = self._workspaces.get(key)
                if w is None:
                    w = self._workspaces[key] = self._alloc(WORKSPACE_BYTES, device, stream_ptr)
        return w

    def _set(self, setter, obj, attr, value, ctype, call):
        v = ctype(value)
        _check(setter(obj, attr, ctypes.byref(v), ctypes.sizeof(v)), call)

    def _layout(self, dtype, rows, cols, ld):
        p = ctypes.c_void_p()
        _check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(p), DATA_TYPES[dtype], ctypes.c_uint64(rows),
                                                    ctypes.c_uint64(cols), ctypes.c_int64(ld)),
               "cublasLtMatrixLayoutCreate")
        return p

    def matmul(self, device, stream_ptr, transa, transb, m, n, k, a, lda, b, ldb, d, ldd, bias, epilogue, dtype,
               compute, reduced_reduction):
        """D (m x n, column-major, ld ldd) = epilogue(op(A) op(B)) with alpha 1, beta 0; `a`, `b`, `d`, `bias`
        device addresses (ints). epilogue "bias"/"relu_bias": bias holds m elements (one per row
        of D); "bgradb": bias receives the n sums over k of op(B)'s columns."""
        lib = self.lib
        handle = self._handle(device)
        ws = self._workspace(device, stream_ptr)
        desc = ctypes.c_void_p()
        layouts = []
        pref = ctypes.c_void_p()
        scale_type = 2 if compute == "16F" else 0  # CUDA_R_16F for float16 accumulation, else CUDA_R_32F
        try:
            _check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_TYPES[compute], scale_type),
                   "cublasLtMatmulDescCreate")
            setd = lib.cublasLtMatmulDescSetAttribute
            self._set(setd, desc, DESC_TRANSA, OP_T if transa else OP_N, ctypes.c_int32, "set TRANSA")
            self._set(setd, desc, DESC_TRANSB, OP_T if transb else OP_N, ctypes.c_int32, "set TRANSB")
            self._set(setd, desc, DESC_EPILOGUE, EPILOGUES[epilogue], ctypes.c_uint32, "set EPILOGUE")
            self._set(setd, desc, DESC_BIAS_POINTER, bias, ctypes.c_void_p, "set BIAS_POINTER")
            la = self._layout(dtype, *((k, m) if transa else (m, k)), lda)
            layouts.append(la)
            lb = self._layout(dtype, *((n, k) if transb else (k, n)), ldb)
            layouts.append(lb)
            ld_ = self._layout(dtype, m, n, ldd)
            layouts.append(ld_)
            key = (device, transa, transb, m, n, k, lda, ldb, ldd, epilogue, dtype, compute, reduced_reduction,
                   _alignment(a), _alignment(b), _alignment(d), _alignment(bias))
            algo = self._algos.get(key)
            if algo is None:
                _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
                setp = lib.cublasLtMatmulPreferenceSetAttribute
                self._set(setp, pref, PREF_MAX_WORKSPACE_BYTES, WORKSPACE_BYTES, ctypes.c_uint64,
                          "set MAX_WORKSPACE_BYTES")
                if not reduced_reduction:
                    self._set(setp, pref, PREF_REDUCTION_SCHEME_MASK, REDUCTION_SCHEME_COMPUTE_TYPE, ctypes.c_uint32,
                              "set REDUCTION_SCHEME_MASK")
                result = ctypes.create_string_buffer(_HEURISTIC_BYTES)
                found = ctypes.c_int(0)
                _check(lib.cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld_, ld_, pref, 1, result,
                                                          ctypes.byref(found)), "cublasLtMatmulAlgoGetHeuristic")
                if found.value < 1:
                    raise RuntimeError(f"cuBLASLt: no algorithm for a {m}x{n}x{k} {dtype} matmul with epilogue "
                                       f"{epilogue} (compute {compute})")
                algo = self._algos[key] = result  # the algo is the result's first 64 bytes
            alpha, beta = (ctypes.c_uint16(0x3C00), ctypes.c_uint16(0)) if compute == "16F" else \
                (ctypes.c_float(1.0), ctypes.c_float(0.0))
            _check(lib.cublasLtMatmul(handle, desc, ctypes.byref(alpha), ctypes.c_void_p(a), la, ctypes.c_void_p(b),
                                      lb, ctypes.byref(beta), ctypes.c_void_p(d), ld_, ctypes.c_void_p(d), ld_, algo,
                                      ctypes.c_void_p(ws.ptr), ctypes.c_size_t(WORKSPACE_BYTES),
                                      ctypes.c_void_p(stream_ptr)), "cublasLtMatmul")
        finally:
            if pref.value:
                lib.cublasLtMatmulPreferenceDestroy(pref)
            for lay in layouts:
                lib.cublasLtMatrixLayoutDestroy(lay)
            if desc.value:
                lib.cublasLtMatmulDescDestroy(desc)


_LT = None
_LT_LOCK = threading.Lock()


def get(runtime_major, alloc):
    """The process's Lt over the loaded library (created on first use)."""
    global _LT
    if _LT is None:
        with _LT_LOCK:
            if _LT is None:
                _LT = Lt(_load_library(runtime_major), alloc)
    return _LT
