"""torch.nn.functional's 3-D convolutions and pools, fractional max pooling, grid_sample /
affine_grid, embedding_bag and ctc_loss (re-exports of ops/conv3d.py, ops/pool3d.py,
ops/grid_sample.py and nn/functional_bag_ctc.py)."""
from __future__ import annotations

from ..ops.conv3d import conv3d, conv_transpose3d  # noqa: F401
