"""tensorlab: a GPU tensor runtime with PyTorch's semantics, NumPy on the CPU and our own CUDA
kernels on NVIDIA GPUs. This module only re-exports."""
from __future__ import annotations

from . import _build  # first: TENSORLAB_PURE_PYTHON=1 must act before the hot-path modules import
from . import dtypes as _dtypes
from .device import Device, device
from .dtypes import (DType, bfloat16, bool_ as bool, can_cast, double, finfo, float, float16, float32, float64,  # noqa: A004
                     get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long, promote_types,
                     result_type, set_default_dtype, short, uint8)
from .dtypes import cdouble, cfloat, complex64, complex128  # complex dtypes (ops/complex_ops.py)
from .layout import Size, public_broadcast_shapes as broadcast_shapes
from .storage import UntypedStorage
from .tensor import Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format
from .layouts import jagged, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided  # torch.layout values
from . import ops as _ops
from . import benchmark, cuda, return_types, testing
from .printing import get_printoptions, printoptions, set_printoptions

dtype = DType
_ops.install(Tensor)
for _m in _ops.modules():
    for _name in getattr(_m, "FUNCTIONS", ()):
        globals()[_name] = getattr(_m, _name)
del _m, _name

from . import autograd  # noqa: E402
_ops.complex_ops._install_derivatives()  # complex autograd rules (ops/complex_ops.py) into the derivative table
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,  # noqa: E402
                       set_grad_enabled)
from . import nn, optim  # noqa: E402
from . import utils  # noqa: E402  (tensorlab.utils.data: datasets, samplers, DataLoader)
from . import amp, cpu, func  # noqa: E402  (issue 34: torch.amp, torch.cpu(.amp), torch.func)
from .cuda import amp as _cuda_amp  # noqa: E402,F401  (tl.cuda.amp: torch's deprecated aliases)
from .amp import autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled  # noqa: E402
from . import linalg  # noqa: E402  (torch.linalg's names)
from . import special  # noqa: E402  (torch.special's names that tensorlab has)
from . import fft  # noqa: E402  (torch.fft: tensorlab/fft.py)
from . import signal  # noqa: E402  (torch.signal.windows)
from . import distributions  # noqa: E402  (torch.distributions)
from . import masked  # noqa: E402  (torch.masked's reductions and normalizations with mask=)
from . import onnx  # noqa: E402  (torch.onnx: export writes an ONNX model; needs the onnx package only then)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(t):
    return t.numel()


from .interop.dlpack import from_dlpack  # noqa: E402
from .interop.arrays import asarray  # noqa: E402
from . import serialization  # noqa: E402
from .serialization import load, save  # noqa: E402

from ._version import __version__  # noqa: E402

from . import accelerator  # noqa: E402
from . import library  # noqa: E402  (torch.library: Python operators; torch.ops is op_namespaces)
from ._checks import (_assert, _check, _check_index, _check_is_size, _check_not_implemented,  # noqa: E402,F401
                      _check_type, _check_value, _check_with)
from ._compile import compile  # noqa: E402,A004
from .global_settings import (are_deterministic_algorithms_enabled, get_float32_matmul_precision,  # noqa: E402
                              is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision,
                              use_deterministic_algorithms)
from .legacy_tensors import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor,  # noqa: E402
                             HalfTensor, IntTensor, LongTensor, ShortTensor)
from math import e, inf, nan, pi  # noqa: E402  (torch.e, torch.inf, torch.nan, torch.pi)
from . import profiler  # noqa: E402  (tl.profiler: profile, record_function, ProfilerActivity)
from . import distributed  # noqa: E402  (tl.distributed: MPI and NCCL collectives; mpi4py optional)
from .backends.cpu.parallel import get_num_threads, set_num_threads  # noqa: E402  (the CPU backend's threads)

from . import sparse  # noqa: E402  (tl.sparse: sparse COO/CSR tensors, torch.sparse's ops)
from .sparse import sparse_coo_tensor, sparse_csr_tensor  # noqa: E402
from .sparse._ops import spmm  # noqa: E402  (torch.spmm(input, mat2))
from .sparse import _methods as _sparse_methods  # noqa: E402
_sparse_methods.install()  # after the ops bound theirs: sparse tensors' methods and refusals
from ._torch_names import *  # noqa: E402,F401,F403  (issue 34: set_default_device, capability flags, ...)
from . import hub, compiler, jit, multiprocessing, mps, mtia, random, xpu  # noqa: E402  (issue 34: torch's modules of those names)
from . import _docs as _docs  # noqa: E402  (docstrings of the generated ops, applied once)
_docs.apply()
