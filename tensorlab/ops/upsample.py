"""torch.nn.functional.interpolate: nearest, nearest-exact, linear/bilinear/trilinear (align_corners
either way), bicubic, bilinear/bicubic/lanczos with antialias, and area, over any of torch's 1-3 spatial dims.

Resampling is separable: nearest modes are an index_select per spatial dim (an exact copy, any
dtype); the interpolating modes are a product with a (out, in) weight matrix per spatial dim,
computed on the host from torch's source-index formulas (area_pixel_compute_source_index,
cubic convolution with A = -0.75, clamped taps); area is adaptive average pooling. Gradients come
from index_select and matmul. Half types interpolate in float32 and round once."""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor
from . import _bounds, _taps
from .conv import geometry_tensor, keep_channels_last, take_rows, type_name

_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4, "lanczos": 4}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area", "nearest-exact")
_AA_TAPS = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _scale(in_size, out_size, scale, align_corners, cubic=False):
    """torch's area_pixel_compute_scale."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _source(dst, scale, align_corners, cubic):
    """torch's area_pixel_compute_source_index."""
    if align_corners:
        return scale * dst
    src = scale * (dst + 0.5) - 0.5
    return src if cubic or src >= 0 else 0.0


def _cubic_weights(t, a=-0.75):
    def c1(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return c2(t + 1), c1(t), c1(1 - t), c2(2 - t)


def _float32(v):
    """v as torch computes it in float32 (its CPU kernels keep source indices and lambdas in the
    scalar type's accumulate type, float for float32)."""
    import struct
    return struct.unpack("f", struct.pack("f", v))[0]


def _weight_matrix(mode, n_in, n_out, scale, align_corners, single):
    s = _scale(n_in, n_out, scale, align_corners)
    if single:
        s = _float32(s)
    rows = []
    for o in range(n_out):
        row = [0.0] * n_in
        if mode == "bicubic":
            src = _source(o, s, align_corners, True)
            i = math.floor(src)
            t = src - i
            for k, wgt in zip(range(i - 1, i + 3), _cubic_weights(t)):
                row[min(max(k, 0), n_in - 1)] += wgt
        else:
            src = _source(o, s, align_corners, False)
            if single:
                src = _float32(src)
            i0 = min(int(math.floor(src)), n_in - 1)
            i1 = i0 + (1 if i0 < n_in - 1 else 0)
            lam = src - i0
            if single:
                lam = _float32(lam)
            row[i0] += 1.0 - lam
            row[i1] += lam
        rows.append(row)
    return rows


def _aa_filter(mode):
    if mode == "bilinear":
        return lambda x: max(0.0, 1.0 - abs(x))
    if mode == "lanczos":  # Lanczos-3: a windowed sinc
        def lanczos(x, a=3.0):
            if x == 0.0:
                return 1.0
            if abs(x) >= a:
                return 0.0
            px = math.pi * x
            return a * math.sin(px) * math.sin(px / a) / (px * px)
        return lanczos

    def cubic(x, a=-0.5):  # Keys' kernel with a = -0.5, as torch's (and PIL's) antialiasing filter
        x = abs(x)
        if x < 1.0:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2.0:
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return 0.0
    return cubic


def _antialias_matrix(mode, n_in, n_out, scale, align_corners, single=False):
    """torch's _compute_weights_aa: a filter widened by the downscale factor, each row normalized;
    `single`: every step rounded to float32, as torch's kernel computes them for float32 input."""
    import numpy as np
    r = np.float32 if single else float
    s = r(_scale(n_in, n_out, scale, align_corners))
    interp = _AA_TAPS[mode]
    support = r(interp * r(0.5) * s) if s >= 1.0 else r(interp * 0.5)
    invscale = r(r(1.0) / s) if s >= 1.0 else r(1.0)
    f = _aa_filter(mode)
    half = r(0.5)
    rows = []
    for i in range(n_out):
        center = r(s * r(i + half))
        xmin = max(int(center - support + half), 0)
        xsize = min(int(center + support + half), n_in) - xmin
        ws = [r(f(r(r(r(j + xmin) - center + half) * invscale))) for j in range(xsize)]
        total = r(0.0)
        for w in ws:
            total = r(total + w)
        row = [0.0] * n_in
        for j, w in enumerate(ws):
            row[xmin + j] = float(r(w / total)) if total != 0.0 else float(w)
        rows.append(row)
    return rows


def _nearest_index(mode, n_in, n_out, scale):
    import numpy as np
    s = _float32(1.0 / scale if scale is not None and scale > 0 else n_in / n_out)
    o = np.arange(n_out, dtype=np.float64)
    src = (o + 0.5) * s if mode == "nearest-exact" else o * s
    src = np.floor(src.astype(np.float32).astype(np.float64)).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _output_size(x, nsp, size, scale_factor, recompute_scale_factor):
    spatial = tuple(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nsp:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                                 f"spatial dimensions of {list(spatial)} and output size of {size}. Please provide input "
                                 f"tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            sizes = [int(s) for s in size]
        else:
            sizes = [int(size)] * nsp
        return sizes, [None] * nsp
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nsp:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(spatial)} and scale_factor of shape {scale_factor}. "
                             f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             f"s2, ...,sK) format.")
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * nsp
    sizes = [int(math.floor(n * s)) for n, s in zip(spatial, scales)]
    return sizes, ([None] * nsp if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim()
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "lanczos" and nd == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode not in _MODES or nd not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the modes: "
                                  f"nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got "
                                  f"{mode})")
    need = _LINEAR.get(mode)
    if need is not None and nd != need:
        raise NotImplementedError(f"Got {nd}D input, but {mode} mode needs {need}D input")
    sizes, scales = _output_size(input, nd - 2, size, scale_factor, recompute_scale_factor)
    return resample(input, mode, sizes, scales, align_corners, antialias)


def resample(input, mode, sizes, scales, align_corners, antialias):
    """interpolate after its argument checks: the output's spatial sizes and the scales that map its
    coordinates (None: in / out), given apart as aten's upsample operators take them."""
    nd = input.dim()
    nsp = nd - 2
    if any(s <= 0 for s in sizes) and input.numel():
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({', '.join(str(n) for n in input.shape[2:])}) "
                           f"output ({', '.join(map(str, sizes))})")
    # the output (and, below, each pass's gather) must fit before any geometry is built
    _bounds.check_shape_fits(tuple(input.shape[:2]) + tuple(sizes), input._dtype.itemsize, input.device,
                             f"interpolate ({mode})")
    if mode == "area":
        from . import pool
        if nsp == 1:
            return pool.adaptive_avg_pool1d(input, sizes[0])
        if nsp == 2:
            return pool.adaptive_avg_pool2d(input, tuple(sizes))
        if not input._dtype.is_floating_point:
            raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for '{type_name(input._dtype)}'")
        acc = dtypes.float32 if input._dtype in (dtypes.float16, dtypes.bfloat16) else input._dtype
        y = input.to(acc)
        for k in reversed(range(3)):  # adaptive average pooling is separable: one window average per dim
            y = pool.adaptive_average_dim(y, 2 + k, sizes[k], "interpolate (area)")
        return y.contiguous().to(input._dtype)
    dt = input._dtype
    y = input
    dev = input.device
    if mode in ("nearest", "nearest-exact"):
        if dt is dtypes.bool_:
            raise RuntimeError(f"\"upsample_{mode.replace('-', '_')}{nsp}d_out_frame\" not implemented for 'Bool'")
        for k in range(nsp):
            d = 2 + k
            n_in, n_out, sc = input.shape[d], sizes[k], scales[k]
            idx = geometry_tensor(("nearest", mode, n_in, n_out, sc), dtypes.int64, dev,
                                  lambda: _nearest_index(mode, n_in, n_out, sc))
            y = take_rows(y, d, idx)
        return keep_channels_last(y, input)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"upsample_{mode}{nsp}d_out_frame\" not implemented for '{type_name(dt)}'")
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    y = y.to(acc) if acc is not dt else y
    for k in reversed(range(nsp)):  # the last dim first, as torch's kernels combine the taps
        d = 2 + k
        n_in = input.shape[d]
        if n_in == sizes[k] and not align_corners and scales[k] in (None, 1.0) and not antialias:
            continue  # the identity (torch copies)
        n_out, sc = sizes[k], scales[k]
        if not antialias:
            cubic = mode == "bicubic"
            _taps.check_taps(y, d, n_out, 4 if cubic else 2, f"interpolate ({mode})")
            s = _scale(n_in, n_out, sc, align_corners)
            single = acc is dtypes.float32
            if single:
                s = _float32(s)
            idx, w = (_taps.cubic_taps(n_in, n_out, s, align_corners) if cubic
                      else _taps.linear_taps(n_in, n_out, s, align_corners, single))
            ti, tw = _taps.as_tensors(("taps", mode, n_in, n_out, sc, align_corners), (idx, w), (dtypes.int64, acc),
                                      dev)
            y = _taps.apply(y, d, ti, tw)
            continue
        _bounds.check_bytes_fit(n_out * n_in * 8, None, f"interpolate ({mode}, antialias)")
        m = geometry_tensor(("resample", mode, n_in, n_out, sc, align_corners, antialias, acc.name), acc, dev,
                            lambda: _antialias_matrix(mode, n_in, n_out, sc, align_corners, acc is dtypes.float32)
                            if antialias else
                            _weight_matrix(mode, n_in, n_out, sc, align_corners, acc is dtypes.float32))
        m = m.reshape(n_out, n_in)
        y = y.movedim(d, -1).matmul(m.t()).movedim(-1, d)
    y = keep_channels_last(y.contiguous(), input)
    return y.to(dt) if acc is not dt else y
