"""The device-independent front end. Each family module declares:

- ``FUNCTIONS``: names re-exported at ``tensorlab.<name>``;
- ``METHODS``: ``{method_name: function}`` bound onto ``Tensor`` (the function takes the tensor
  first), so tensor.py stays free of op logic and no two modules edit the same table.
"""
from __future__ import annotations

import importlib

FAMILIES = ("creation", "copy", "resize", "views", "indexing", "random",
            # elementwise.py: the generic machinery; the ops, by family (unary, binary, ternary, fills, operators)
            "elementwise", "elementwise_unary", "elementwise_binary", "elementwise_ternary", "fill", "operators",
            "reduction", "linalg", "shape", "transfer",
            # tensor functions (composites, plus the CPU LAPACK primitive)
            "constructors", "repeats", "closeness", "index_ops", "combinatorics", "einsum", "distance", "lapack",
            "linalg_legacy", "tensor_algebra", "stacking", "math_composites", "copy_variants", "blas_composites",
            "scans_quantiles", "linalg_solves", "integer_composites")
FAMILIES += ("conv", "pool")
FAMILIES += ("norm_fused",)
FAMILIES += ("attention",)


def modules():
    out = []
    for name in FAMILIES:
        try:
            out.append(importlib.import_module(f"{__name__}.{name}"))
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    return out


def install(tensor_cls):
    for m in modules():
        for name, fn in getattr(m, "METHODS", {}).items():
            setattr(tensor_cls, name, fn)
FAMILIES += ("batch_norm_fused",)
FAMILIES += ("rnn_fused",)
FAMILIES += ("linear_fused",)
FAMILIES += ("nll_fused",)
FAMILIES += ("random_fills", "empty_variants", "scatter_views", "scatter_reduce")
FAMILIES += ("mode", "renorm", "histograms", "combinations", "nonzero_static", "native_norms")
FAMILIES += ("conv3d", "pool3d", "grid_sample")  # the 3-D convolutions and pools, grid sampling
FAMILIES += ("lu_family",)
FAMILIES += ("special_functions",)
FAMILIES += ("complex_ops", "spectral")
FAMILIES += ("random_samplers",)
FAMILIES += ("private_ops",)  # torch._chunk_cat, segment_reduce, _unsafe_masked_index, ...
