"""torch.backends under tensorlab.compat: the switches scripts set (cudnn.benchmark,
cudnn.deterministic, cuda.matmul.allow_tf32, ...) are accepted and read back. torch.backends.cuda.matmul's
switches choose cuBLAS's compute type and math mode for CUDA products (global_settings.cuda_gemm_mode);
the others change no result: tensorlab has no cuDNN and picks its kernels without autotuning.
cudnn.deterministic=True is what tensorlab does anyway; global determinism is
tl.use_deterministic_algorithms."""
from __future__ import annotations

from . import cuda, cudnn, mps  # noqa: F401
from . import cpu, mha, mkl, mkldnn, nnpack, openmp, opt_einsum, quantized  # noqa: F401  (issue 34)
from ._flags import disable_global_flags, flags_frozen  # noqa: F401  (torch.backends' freeze switch)
