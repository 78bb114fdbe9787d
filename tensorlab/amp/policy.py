"""The autocast policy: one table of op name -> what autocast does to its floating inputs, per
device type, as torch's autocast lists say ("Automatic Mixed Precision package": CUDA Ops that can
autocast to float16 / to float32 / that promote to the widest input type; CPU Ops that can autocast
to bfloat16 / to float32 / that promote). Names are looked up on tensorlab, tensorlab.nn.functional
and tensorlab.linalg (linalg_X means tensorlab.linalg.X); names tensorlab does not have yet are
skipped when the policy is installed (tensorlab.amp.autocast_mode.install reports them).

LOWER: cast float16/bfloat16/float32 tensor arguments to the autocast dtype (float64 untouched).
FP32: cast float16/bfloat16 tensor arguments to float32.
PROMOTE: cast floating tensor arguments to the widest floating dtype among them."""
from __future__ import annotations

LOWER, FP32, PROMOTE = "lower", "fp32", "promote"

_CUDA_LOWER = """__matmul__ addbmm addmm addmv addr baddbmm bmm chain_matmul multi_dot conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d linear matmul mm mv prelu scaled_dot_product_attention
linalg_multi_dot"""
_CUDA_FP32 = """__pow__ __rdiv__ __rpow__ __rtruediv__ acos asin binary_cross_entropy_with_logits cosh
cosine_embedding_loss cdist cosine_similarity cross_entropy cumprod cumsum dist erfinv exp expm1 group_norm
hinge_embedding_loss kl_div l1_loss layer_norm log log_softmax log10 log1p log2 margin_ranking_loss mse_loss
multilabel_margin_loss multi_margin_loss nll_loss norm normalize pdist poisson_nll_loss pow prod reciprocal
rsqrt sinh smooth_l1_loss soft_margin_loss softmax softmin softplus sum renorm tan triplet_margin_loss
batch_norm instance_norm huber_loss gaussian_nll_loss linalg_vector_norm linalg_matrix_norm linalg_norm"""
_CUDA_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot grid_sample index_put scatter_add tensordot"

_CPU_LOWER = """conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul __matmul__
conv_transpose1d conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention"""
_CPU_FP32 = """avg_pool3d binary_cross_entropy grid_sample polar prod quantile nanquantile stft cdist trace
view_as_complex cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d
max_unpool2d max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d
replication_pad2d replication_pad3d mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss
poisson_nll_loss smooth_l1_loss cross_entropy l1_loss huber_loss margin_ranking_loss soft_margin_loss
triplet_margin_loss multi_margin_loss ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits
linalg_cholesky linalg_eig linalg_eigh linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product
linalg_lstsq linalg_lu_factor linalg_matrix_norm linalg_qr linalg_solve linalg_svd linalg_svdvals
linalg_tensorinv linalg_tensorsolve linalg_vector_norm linalg_norm linalg_matrix_rank linalg_pinv
linalg_matrix_exp linalg_det linalg_slogdet fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft
fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft"""
_CPU_PROMOTE = "stack cat index_copy"


def _table(lower, fp32, promote):
    t = {}
    for names, kind in ((lower, LOWER), (fp32, FP32), (promote, PROMOTE)):
        for n in names.split():
            t[n] = kind
    return t


POLICY = {"cuda": _table(_CUDA_LOWER, _CUDA_FP32, _CUDA_PROMOTE),
          "cpu": _table(_CPU_LOWER, _CPU_FP32, _CPU_PROMOTE)}

# ops whose `dtype=` argument, when given, overrides the float32 policy (torch's fp32_set_opt_dtype)
DTYPE_ARG = frozenset("softmax log_softmax cumsum cumprod sum prod softmin norm".split())

# the dtypes each device type's autocast accepts, and its default
DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}
SUPPORTED_DTYPES = {"cuda": ("float16", "bfloat16"), "cpu": ("bfloat16", "float16")}


def all_names():
    """Every op name the policy mentions, on any device type."""
    return set(POLICY["cuda"]) | set(POLICY["cpu"])
