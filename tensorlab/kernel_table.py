"""Which template instantiations each kernel source provides: one row per source file, listing the
C++ name expressions the CUDA backend passes to RawModule(name_expressions=...). CI compiles every
row with NVRTC for sm_80 and sm_90, and the emulated test run launches every one of them
(tests/test_kernel_coverage.py). Adding a kernel: write kernels/<name>.cu, add its row here, and
launch it from a primitive through tensorlab.backends.cuda.launch (see that module's docstring)."""
from __future__ import annotations

from . import dtypes

INDEX_TYPES = ("int", "long long")


def _per_dtype(*templates, among=dtypes.ALL):
    """template<T, Index> for every dtype (of `among`) and index type."""
    return tuple(f"{t}<{d.ctype}, {ix}>" for t in templates for d in among for ix in INDEX_TYPES)


_FLOAT_PAIR = (dtypes.float32, dtypes.float16, dtypes.bfloat16)  # creation.cu's float-pair kernels


def _per_dtype_pair(*templates):
    """template<Src, Dst, Index> for every (source, destination) dtype pair and index type."""
    return tuple(f"{t}<{s.ctype}, {d.ctype}, {ix}>" for t in templates for s in dtypes.ALL for d in dtypes.ALL
                 for ix in INDEX_TYPES)


def _accumulator(d):
    """The type index.cu's atomics accumulate dtype d in (see the index.cu row)."""
    if d in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return dtypes.int32 if d.itemsize < 4 else d


def _reduction_pairs():
    """(In, Out) dtype pairs per reduce/scan op: same dtype, integral -> int64 (sum, prod, cumsum,
    cumprod), any -> bool (all, any), any -> int64 (count_nonzero). The CUDA backend converts
    other pairs on the device first (backends/cuda/reduction.py)."""
    d = dtypes
    same = [(t, t) for t in d.ALL]
    floats = [(t, t) for t in d.ALL if t.is_floating_point]
    to_long = same + [(t, d.int64) for t in (d.bool_, d.uint8, d.int8, d.int16, d.int32)]
    sums = floats + [(t, d.int64) for t in d.ALL if not t.is_floating_point]  # narrower ints wrap the int64 result
    logical = [(t, d.bool_) for t in d.ALL] + [(d.uint8, d.uint8)]
    # amax/amin run as ArgMax/ArgMin storing the value only
    return {"Sum": sums, "Prod": sums, "Mean": floats, "All": logical, "Any": logical,
            "CountNonzero": [(t, d.int64) for t in d.ALL], "Norm": floats, "Var": floats, "Std": floats,
            "LogSumExp": floats, "ArgMax": same, "ArgMin": same}, to_long


def _reduce_rows():
    ops, _ = _reduction_pairs()
    return tuple(f"reduce_kernel<tl::{op}, {i.ctype}, {o.ctype}, {ix}>" for op, pairs in ops.items()
                 for i, o in pairs for ix in INDEX_TYPES)


def _scan_rows():
    _, pairs = _reduction_pairs()
    sums = tuple(f"{k}<{i.ctype}, {o.ctype}, {ix}>"
                 for k in ("scan_rows", "scan_seq", "scan_chunk_totals", "scan_chunk_apply") for i, o in pairs
                 for ix in INDEX_TYPES)
    # cummax/cummin indices: the input dtypes ARG_SCAN_INPUTS (others are converted to int64 first), the
    # chunk totals' scan per key type (float, double, long long)
    args = tuple(f"{k}<{t.ctype}, {ix}>" for k in ("scan_arg_rows", "scan_arg_seq", "scan_arg_chunk_totals",
                                                   "scan_arg_chunk_apply") for t in ARG_SCAN_INPUTS
                 for ix in INDEX_TYPES)
    keys = tuple(f"scan_arg_totals<{k}, {ix}>" for k in ("float", "double", "long long") for ix in INDEX_TYPES)
    return sums + args + keys


ARG_SCAN_INPUTS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)



# elementwise.cu: per primitive, kernel name -> (functor of kernels/tensorlab/functors.cuh, compute
# types as letters: B bool, I long long (every integer dtype), F float (float16/bfloat16/float32),
# D double). backends/cuda/elementwise.py launches from this table: the generic *_kernel per compute
# type, and the contiguous *_vec per compute dtype of those letters (elementwise_vec_expr).
ELEMENTWISE = {
    "unary": {
        "neg": ("Neg", "IFD"), "abs": ("Abs", "IFD"), "sign": ("Sign", "BIFD"), "exp": ("Exp", "FD"),
        "exp2": ("Exp2", "FD"), "expm1": ("Expm1", "FD"), "log": ("Log", "FD"), "log2": ("Log2", "FD"),
        "log10": ("Log10", "FD"), "log1p": ("Log1p", "FD"), "sqrt": ("Sqrt", "FD"), "rsqrt": ("Rsqrt", "FD"),
        "square": ("Square", "IFD"), "reciprocal": ("Reciprocal", "FD"), "sin": ("Sin", "FD"), "cos": ("Cos", "FD"),
        "tan": ("Tan", "FD"), "tanh": ("Tanh", "FD"), "sigmoid": ("Sigmoid", "FD"), "relu": ("Relu", "IFD"),
        "gelu": ("Gelu", "FD"), "silu": ("Silu", "FD"), "erf": ("Erf", "FD"), "floor": ("Floor", "IFD"),
        "ceil": ("Ceil", "IFD"), "trunc": ("Trunc", "IFD"), "round": ("Round", "IFD"), "isnan": ("IsNan", "BIFD"),
        "isinf": ("IsInf", "BIFD"), "isfinite": ("IsFinite", "BIFD"), "logical_not": ("LogicalNot", "BIFD"),
        "bitwise_not": ("BitwiseNot", "BI"), "nan_to_num": ("NanToNum", "BIFD"),
    },
    "binary": {
        "add": ("Add", "BIFD"), "sub": ("Sub", "IFD"), "mul": ("Mul", "BIFD"), "div_true": ("DivTrue", "FD"),
        "div_trunc": ("DivTrunc", "IFD"), "div_floor": ("DivFloor", "IFD"), "remainder": ("Remainder", "IFD"),
        "fmod": ("Fmod", "IFD"), "pow": ("Pow", "BIFD"), "maximum": ("Maximum", "BIFD"),
        "minimum": ("Minimum", "BIFD"), "atan2": ("Atan2", "FD"), "eq": ("Eq", "BIFD"), "ne": ("Ne", "BIFD"),
        "lt": ("Lt", "BIFD"), "le": ("Le", "BIFD"), "gt": ("Gt", "BIFD"), "ge": ("Ge", "BIFD"),
        "logical_and": ("LogicalAnd", "BIFD"), "logical_or": ("LogicalOr", "BIFD"),
        "logical_xor": ("LogicalXor", "BIFD"), "bitwise_and": ("BitwiseAnd", "BI"),
        "bitwise_or": ("BitwiseOr", "BI"), "bitwise_xor": ("BitwiseXor", "BI"),
        "gelu_backward": ("GeluBackward", "FD"),
        # the activations' gradients as one kernel (ops/activation_backward.py): a = grad, b = the
        # forward's result (tanh, sigmoid, relu) or input (silu)
        "tanh_backward": ("TanhBackward", "FD"), "sigmoid_backward": ("SigmoidBackward", "FD"),
        "threshold_backward": ("ThresholdBackward", "FD"), "silu_backward": ("SiluBackward", "FD"),
    },
    "ternary": {
        "where": ("Where", "BIFD"), "clamp": ("Clamp", "IFD"), "lerp": ("Lerp", "FD"), "addcmul": ("Addcmul", "IFD"),
        "addcdiv": ("Addcdiv", "FD"), "masked_fill": ("MaskedFill", "BIFD"),
        "gelu_backward_out": ("GeluBackwardOut", "FD"),
    },
}
# the special functions (kernels/tensorlab/special_math.cuh; ops/special_functions.py)
ELEMENTWISE["unary"].update({
    "lgamma": ("Lgamma", "FD"), "digamma": ("Digamma", "FD"), "trigamma": ("Trigamma", "FD"), "erfc": ("Erfc", "FD"), "erfinv": ("Erfinv", "FD"),
    "i0": ("I0", "FD"), "i0e": ("I0e", "FD"), "i1": ("I1", "FD"), "i1e": ("I1e", "FD"), "ndtr": ("Ndtr", "FD"),
    "ndtri": ("Ndtri", "FD"), "log_ndtr": ("LogNdtr", "FD"), "erfcx": ("Erfcx", "FD"), "airy_ai": ("AiryAi", "FD"),
    "bessel_j0": ("BesselJ0", "FD"), "bessel_j1": ("BesselJ1", "FD"), "bessel_y0": ("BesselY0", "FD"),
    "bessel_y1": ("BesselY1", "FD"), "modified_bessel_k0": ("BesselK0", "FD"),
    "modified_bessel_k1": ("BesselK1", "FD"), "scaled_modified_bessel_k0": ("BesselK0e", "FD"),
    "scaled_modified_bessel_k1": ("BesselK1e", "FD"), "spherical_bessel_j0": ("SphericalJ0", "FD"),
})
ELEMENTWISE["binary"].update({
    "igamma": ("Igamma", "FD"), "igammac": ("Igammac", "FD"), "zeta": ("Zeta", "FD"),
    "poly_t": ("ChebyshevT", "FD"), "poly_u": ("ChebyshevU", "FD"), "poly_v": ("ChebyshevV", "FD"),
    "poly_w": ("ChebyshevW", "FD"), "poly_st": ("ShiftedChebyshevT", "FD"), "poly_su": ("ShiftedChebyshevU", "FD"),
    "poly_sv": ("ShiftedChebyshevV", "FD"), "poly_sw": ("ShiftedChebyshevW", "FD"), "poly_h": ("HermiteH", "FD"),
    "poly_he": ("HermiteHe", "FD"), "poly_l": ("LaguerreL", "FD"), "poly_p": ("LegendreP", "FD"),
})
ELEMENTWISE_BOOL_RESULT = frozenset(("isnan", "isinf", "isfinite", "logical_not", "eq", "ne", "lt", "le", "gt", "ge",
                                     "logical_and", "logical_or", "logical_xor"))
ELEMENTWISE_COMPUTE = {"B": "bool", "I": "long long", "F": "float", "D": "double"}
# The compute dtypes of each compute-type letter: the *_vec kernels are instantiated per compute dtype
# (its storage type T, computing in Compute<T>: the letter's C type)
ELEMENTWISE_KIND_DTYPES = {"B": (dtypes.bool_,), "I": dtypes.INTEGRAL,
                           "F": (dtypes.float16, dtypes.bfloat16, dtypes.float32), "D": (dtypes.float64,)}
# operand positions that are bool whatever the compute dtype (where's condition, masked_fill's mask)
ELEMENTWISE_BOOL_OPERAND = {("ternary", "where"): 0, ("ternary", "masked_fill"): 1}
_ARITY = {"unary": 1, "binary": 2, "ternary": 3}


def elementwise_vec_types(prim, name, t):
    """(output dtype, operand dtypes) of kernel `name`'s *_vec instantiation for compute dtype `t`."""
    out = dtypes.bool_ if name in ELEMENTWISE_BOOL_RESULT else t
    ops = [t] * _ARITY[prim]
    k = ELEMENTWISE_BOOL_OPERAND.get((prim, name))
    if k is not None:
        ops[k] = dtypes.bool_
    return out, tuple(ops)


def elementwise_vec_expr(prim, name, t):
    """The *_vec name expression for compute dtype `t` (32-bit index: tensors of 2**31 elements or
    more take the generic kernel): <Op, T, int[, O[, A, B, D]]>, trailing defaults (T) left out."""
    return _typed_expr("vec", prim, name, t, *elementwise_vec_types(prim, name, t))


# mixed float16/bfloat16-with-float32 operands (torch's promotion: the result float32, or the 16-bit dtype in place
# or against a 0-dim float32 tensor), computing in float: *_strided rows for these ops, either order
ELEMENTWISE_MIXED = {"binary": ("add", "sub", "mul", "div_true", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
                                "ge")}


def _typed_expr(kernel, prim, name, t, out, ops):
    """<Op, T, int[, O[, A, B, D]]> with trailing defaults (T) left out; *_vec takes the operand types of
    ternary only, *_strided of binary and ternary."""
    extra = [out] + (list(ops) if prim == "ternary" or (kernel == "strided" and prim == "binary") else [])
    while extra and extra[-1] is t:
        extra.pop()
    args = ", ".join([t.ctype, "int"] + [d.ctype for d in extra])
    return f"{prim}_{kernel}<tl::op::{ELEMENTWISE[prim][name][0]}, {args}>"


def elementwise_strided_types(prim, name):
    """((T, output dtype, operand dtypes), ...) of kernel `name`'s *_strided instantiations: the *_vec rows'
    types (one per compute dtype), then the mixed 16-bit/float32 ones (T float32)."""
    rows = [(t, *elementwise_vec_types(prim, name, t)) for t in elementwise_vec_dtypes(prim, name)]
    if name in ELEMENTWISE_MIXED.get(prim, ()):
        f = dtypes.float32
        for h in (dtypes.float16, dtypes.bfloat16):
            outs = (dtypes.bool_,) if name in ELEMENTWISE_BOOL_RESULT else (f, h)
            rows += [(f, o, ops) for o in outs for ops in ((h, f), (f, h))]
    return tuple(rows)


def elementwise_strided_expr(prim, name, t, out, ops):
    """The *_strided name expression for storage type `t` (its compute type computes), output dtype
    `out` and operand dtypes `ops` (32-bit index: larger tensors take the generic kernel)."""
    return _typed_expr("strided", prim, name, t, out, ops)


def elementwise_vec_dtypes(prim, name):
    """The compute dtypes kernel `name` of `prim` has *_vec instantiations for."""
    return tuple(t for k in ELEMENTWISE[prim][name][1] for t in ELEMENTWISE_KIND_DTYPES[k])


def elementwise_vectorized(prim, name):
    """Whether kernel `name` of `prim` has a same-type float32 *_vec instantiation,
    `{prim}_vec<tl::op::Functor, float, int>` (output and every operand float)."""
    if "F" not in ELEMENTWISE[prim][name][1]:
        return False
    out, ops = elementwise_vec_types(prim, name, dtypes.float32)
    return out is dtypes.float32 and all(d is dtypes.float32 for d in ops)


def _elementwise():
    exprs = []
    for prim, ops in ELEMENTWISE.items():
        for name, (functor, kinds) in ops.items():
            for k in kinds:
                exprs += [f"{prim}_kernel<tl::op::{functor}, {ELEMENTWISE_COMPUTE[k]}, {ix}>" for ix in INDEX_TYPES]
            exprs += [elementwise_vec_expr(prim, name, t) for t in elementwise_vec_dtypes(prim, name)]
            exprs += [elementwise_strided_expr(prim, name, *row) for row in elementwise_strided_types(prim, name)]
    return tuple(exprs) + tuple(f"any_zero_divisor<{ix}>" for ix in INDEX_TYPES)

KERNELS = {
    "fill.cu": _per_dtype("fill_contiguous", "fill_strided"),
    "copy.cu": _per_dtype_pair("copy_cast_contiguous", "copy_cast_strided"),
    # arange computes an integral range in int64, a float64 one in double, float32/float16/bfloat16 ones in
    # float pairs (backends/range_params.py); linspace likewise (integer outputs in double); no bool arange
    "creation.cu": (_per_dtype("arange_int", among=dtypes.INTEGRAL)
                    + _per_dtype("arange_float", among=(dtypes.float64,))
                    + _per_dtype("arange_df", "linspace_df", among=_FLOAT_PAIR)
                    + _per_dtype("linspace", among=tuple(d for d in dtypes.ALL if d not in _FLOAT_PAIR))
                    + _per_dtype("eye")),
    "matmul.cu": _per_dtype("gemm_tiled", "gemm_small"),
    # random.cu: <T, Index, Contiguous[, Words]>; randint reads word pairs (Words 2) for ranges >= 2^32,
    # which only these dtypes hold; randperm refuses bool
    "random.cu": tuple(
        [f"{t}<{d.ctype}, {ix}, {c}>" for t in ("philox_uniform", "philox_normal", "philox_exponential")
         for d in dtypes.FLOATING for ix in INDEX_TYPES for c in ("true", "false")]
        + [f"philox_randint<{d.ctype}, {ix}, {c}, {w}>" for w in (1, 2) for d in dtypes.ALL
           if w == 1 or d.name in ("int32", "int64", "bfloat16", "float32", "float64")
           for ix in INDEX_TYPES for c in ("true", "false")]
        + [f"philox_bernoulli<{d.ctype}, {ix}, {c}>" for d in dtypes.ALL for ix in INDEX_TYPES
           for c in ("true", "false")]
        + [f"bernoulli_mask<{d.ctype}, {ix}>" for d in dtypes.FLOATING for ix in INDEX_TYPES]
        + [f"randperm_store<{d.ctype}, {ix}, {c}>" for d in dtypes.ALL if d is not dtypes.bool_
           for ix in INDEX_TYPES for c in ("true", "false")]
        + [f"{t}<{ix}>" for t in ("randperm_keys", "bitonic_sort_tiles", "bitonic_merge_global",
                                    "bitonic_merge_tiles") for ix in INDEX_TYPES]),
    # index.cu: index_put<S, A, Index, Mode>, A the accumulator (S; float for half/bfloat16, int for
    # bool/uint8/int8/int16: no atomics narrower than 32 bits), Mode 0 store, 1 add, 2 multiply, 3 max, 4 min
    "index.cu": tuple(
        [f"index_check<{ix}>" for ix in INDEX_TYPES] + ["check_flag"]
        + list(_per_dtype("index_gather"))
        + [f"index_put<{d.ctype}, {d.ctype if m == 0 else _accumulator(d).ctype}, {ix}, {m}>" for m in (0, 1, 2, 3, 4)
           for d in dtypes.ALL for ix in INDEX_TYPES]),
    "shape.cu": _per_dtype("cat", "roll", "triangle"),
    "scan_select.cu": _per_dtype("tile_counts", "compact_coords", "compact_values"),
    "sort.cu": _per_dtype("sort_segments", "sort_merge"),
    "reduce.cu": _reduce_rows(),
    "scan.cu": _scan_rows(),
    "softmax.cu": tuple(f"{k}<{t.ctype}, {ix}>" for k in ("softmax_rows", "softmax_cols") for t in dtypes.ALL
                        if t.is_floating_point for ix in INDEX_TYPES),
    "elementwise.cu": _elementwise(),
}

# conv.cu: im2col for every dtype convolutions and pools run on (not bool); col2im, the adjoint, for the
# floating dtypes (gradients, fold, transposed convolutions)
KERNELS["conv.cu"] = (_per_dtype("im2col", among=tuple(d for d in dtypes.ALL if d is not dtypes.bool_))
                      + _per_dtype("col2im", among=dtypes.FLOATING))

# pool.cu: max_pool2d for every dtype but bool (torch refuses bool), its backward for the floating dtypes
# adaptive_max_pool2d: the floating dtypes (torch refuses integers)
KERNELS["pool.cu"] = (_per_dtype("max_pool2d_fwd", among=tuple(d for d in dtypes.ALL if d is not dtypes.bool_))
                      + _per_dtype("max_pool2d_bwd", "adaptive_max_pool2d_fwd", "adaptive_max_pool2d_bwd",
                                   among=dtypes.FLOATING))

# norm.cu: fused layer norm / RMSNorm forward, backward (dx and per-block float partials of dweight/dbias)
# and the fixed-order sum of the partials, for the dtypes torch computes in float (float16, bfloat16, float32)
KERNELS["norm.cu"] = _per_dtype("layer_norm_fwd", "layer_norm_bwd", "layer_norm_bwd_reduce",
                                among=(dtypes.float16, dtypes.bfloat16, dtypes.float32))
# embedding.cu: embedding's weight gradient as a segmented sum over the sorted indices, the floating dtypes
KERNELS["embedding.cu"] = _per_dtype("embedding_bwd", among=dtypes.FLOATING)
# ctc.cu: the CTC loss recursions (alpha, beta) and the gradient (its dense part, the labels' entries), for
# float32/float64 (the dtypes torch's ctc_loss takes)
# grid_sample.cu: grid_sampler_2d/3d forward and backward (every mode and padding in one kernel each way) for the
# floating dtypes, ND = 2 or 3 coordinates
KERNELS["grid_sample.cu"] = tuple(f"grid_sample_{k}<{d.ctype}, {ix}, {nd}>" for k in ("fwd", "bwd")
                                  for d in dtypes.FLOATING for ix in INDEX_TYPES for nd in (2, 3))
KERNELS["ctc.cu"] = _per_dtype("ctc_alpha", "ctc_grad_fill", "ctc_beta", "ctc_grad_labels",
                               among=(dtypes.float32, dtypes.float64))
# attention.cu: the fused scaled_dot_product_attention forward and its backward (delta, dK/dV per key
# block, dQ per query block) for the floating dtypes (float accumulation; double for double); 64-bit
# offsets throughout. float / double: the scalar kernels; float16 / bfloat16: the tensor-core kernels
# per head-dim bucket (ATTENTION_HEAD_DIMS; the name without a bucket is the default one, 128)
ATTENTION_HEAD_DIMS = (32, 64, 128, 256)
ATTENTION_DEFAULT_HEAD_DIM = 128


def attention_expr(kernel, ctype, head_dim=None):
    """The name expression of an attention kernel: the tensor-core bucket `head_dim` (None: the scalar
    kernel, or the default bucket, which is spelled without it)."""
    if head_dim is None or head_dim == ATTENTION_DEFAULT_HEAD_DIM:
        return f"{kernel}<{ctype}>"
    return f"{kernel}<{ctype}, {head_dim}>"


KERNELS["attention.cu"] = (tuple(attention_expr(k, d.ctype) for k in ("attention_fwd", "attention_bwd_delta",
                                                                       "attention_bwd_dkdv", "attention_bwd_dq")
                                 for d in dtypes.FLOATING)
                           + tuple(attention_expr(k, d.ctype, hd) for k in ("attention_fwd", "attention_bwd_dkdv",
                                                                             "attention_bwd_dq")
                                   for d in (dtypes.float16, dtypes.bfloat16) for hd in ATTENTION_HEAD_DIMS
                                   if hd != ATTENTION_DEFAULT_HEAD_DIM))
# batch_norm.cu: fused batch norm (statistics, finalize, apply with the running-stat update; backward partial
# sums, finalize, dx) for inputs T of float16/bfloat16/float32 with parameters and running statistics P of
# T's dtype or float32 (torch's mixed form)
_BN_T = (dtypes.float16, dtypes.bfloat16, dtypes.float32)
_BN_PAIRS = tuple((t, p) for t in _BN_T for p in dict.fromkeys((t, dtypes.float32)))
KERNELS["batch_norm.cu"] = (_per_dtype("batch_norm_stats", "batch_norm_bwd_reduce", "batch_norm_finalize",
                                       "batch_norm_bwd_finalize", among=_BN_T)
                            + tuple(f"{k}<{t.ctype}, {p.ctype}, {ix}>"
                                    for k in ("batch_norm_apply", "batch_norm_bwd_dx")
                                    for t, p in _BN_PAIRS for ix in INDEX_TYPES))
# rnn.cu: fused recurrent cells (LSTM, GRU, RNN tanh/relu) forward and backward, the floating dtypes (float math
# for float16/bfloat16/float32, double for double)
KERNELS["rnn.cu"] = _per_dtype("lstm_cell_fwd", "lstm_cell_bwd", "gru_cell_fwd", "gru_cell_bwd", "rnn_act_cell_fwd",
                               "rnn_act_cell_bwd", among=dtypes.FLOATING)
# rnn.cu's whole-sequence recurrences (one launch per time step, a grid of hidden-unit slices x batch tiles), the
# floating dtypes, per mode (0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu) and index type
KERNELS["rnn.cu"] += tuple(f"{k}<{d.ctype}, {m}, {ix}>" for k in ("rnn_seq_step_fwd", "rnn_seq_step_bwd")
                           for d in dtypes.FLOATING for m in range(4) for ix in INDEX_TYPES)
# complex.cu: elementwise ops over complex operands (backends/cuda/complex.py), per kernel name the
# functor of kernels/tensorlab/complex.cuh's tl::cop and the result: C complex<T>, R T (abs), B bool;
# T float (complex64) and double (complex128), both index types
COMPLEX_ELEMENTWISE = {
    "unary": {"neg": ("Neg", "C"), "abs": ("Abs", "R"), "exp": ("Exp", "C"), "exp2": ("Exp2", "C"),
              "expm1": ("Expm1", "C"), "log": ("Log", "C"), "log2": ("Log2", "C"), "log10": ("Log10", "C"),
              "log1p": ("Log1p", "C"), "sqrt": ("Sqrt", "C"), "rsqrt": ("Rsqrt", "C"), "square": ("Square", "C"),
              "reciprocal": ("Reciprocal", "C"), "sin": ("Sin", "C"), "cos": ("Cos", "C"), "tan": ("Tan", "C"),
              "tanh": ("Tanh", "C"), "sigmoid": ("Sigmoid", "C"), "isnan": ("IsNan", "B"), "isinf": ("IsInf", "B"),
              "isfinite": ("IsFinite", "B"), "logical_not": ("LogicalNot", "B")},
    "binary": {"add": ("Add", "C"), "sub": ("Sub", "C"), "mul": ("Mul", "C"), "div_true": ("Div", "C"),
               "pow": ("Pow", "C"), "eq": ("Eq", "B"), "ne": ("Ne", "B"), "logical_and": ("LogicalAnd", "B"),
               "logical_or": ("LogicalOr", "B"), "logical_xor": ("LogicalXor", "B")},
}


def complex_expr(prim, name, part, index):
    """complex.cu's name expression for kernel `name` of `prim` over complex<part> (part "float"/"double")
    with `index` ("int" / "long long") indexing."""
    functor, res = COMPLEX_ELEMENTWISE[prim][name]
    r = {"C": f"tl::complex<{part}>", "R": part, "B": "bool"}[res]
    return f"complex_{prim}<tl::cop::{functor}, {part}, {r}, {index}>"


KERNELS["complex.cu"] = tuple(complex_expr(prim, name, part, ix) for prim, ops in COMPLEX_ELEMENTWISE.items()
                              for name in ops for part in ("float", "double") for ix in INDEX_TYPES)
