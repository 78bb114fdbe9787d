"""torch.nn.functional's 3-D convolutions and pools, fractional max pooling, grid_sample /
affine_grid, embedding_bag and ctc_loss (re-exports of ops/conv3d.py, ops/pool3d.py,
ops/grid_sample.py and nn/functional_bag_ctc.py)."""
from __future__ import annotations

from ..ops.conv3d import conv3d, conv_transpose3d  # noqa: F401
from ..ops.pool3d import (adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices,  # noqa: F401
                          avg_pool3d, fractional_max_pool2d, fractional_max_pool2d_with_indices,
                          fractional_max_pool3d, fractional_max_pool3d_with_indices, max_pool3d,
                          max_pool3d_with_indices)
from ..ops.grid_sample import affine_grid, grid_sample  # noqa: F401
from .functional_bag_ctc import ctc_loss, embedding_bag  # noqa: F401

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid",
           "avg_pool3d", "conv3d", "conv_transpose3d", "ctc_loss", "embedding_bag", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
           "grid_sample", "max_pool3d", "max_pool3d_with_indices"]
