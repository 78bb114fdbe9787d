"""The third spatial dim of the convolutions (conv3d, conv_transpose3d): the depth dim is reduced to
the 2-D path of ops/conv.py, so 3-D convolutions run on every backend through the same im2col /
col2im primitives and batched products, differentiable to any order.

conv3d gathers the depth taps (od * sd + kd * dd of the depth-padded input, one `take_rows`) and
folds them into the channels: a (B * OD, C * KD, H, W) image convolved in 2-D with the weight seen
as (Cout, C/g * KD, KH, KW) (a group's channels stay contiguous). conv_transpose3d is the adjoint:
a 2-D transposed convolution per input depth slice with KD times the output channels, whose slices
are summed into their output depths by `put_rows` (depth col2im)."""
from __future__ import annotations

from .. import dtypes
from . import conv as _conv

FUNCTIONS = ("conv3d", "conv_transpose3d")


def _depth_taps(n_out, k, s, d):
    return [o * s + t * d for o in range(n_out) for t in range(k)]


def conv3d_core(x, w, kernel, dilation, pads, stride, outs, groups):
    """conv3d of the 5-D x by w (Cout, C/g, KD, KH, KW); pads (lo, hi) per spatial dim."""
    B, C, D = x.shape[:3]
    cout = w.shape[0]
    (kd, kh, kw), (dd, dh, dw), (sd, sh, sw), (od, oh, ow) = kernel, dilation, stride, outs
    lo, hi = pads[0]
    if lo or hi:  # zero depth padding: a zero slice read through the tap table
        from ..nn.functional_norm import pad
        x = pad(x, (0, 0, 0, 0, lo, hi))
    H, W = x.shape[3:]
    idx = _conv.geometry_tensor(("conv3d_depth", od, kd, sd, dd), dtypes.int64, x.device,
                                lambda: _depth_taps(od, kd, sd, dd))
    xd = _conv.take_rows(x, 2, idx).reshape(B, C, od, kd, H, W).permute(0, 2, 1, 3, 4, 5)
    xd = xd.reshape(B * od, C * kd, H, W)
    w4 = w.reshape(cout, w.shape[1] * kd, kh, kw)
    y = _conv._conv2d_core(xd, w4, (kh, kw), (dh, dw), (pads[1][0], pads[2][0]), (sh, sw), (oh, ow), groups)
    return y.reshape(B, od, cout, oh, ow).permute(0, 2, 1, 3, 4)


def conv_transpose3d_core(x, weight, groups, stride, padding, output_padding, dilation, outs):
    """conv_transpose3d of the 5-D x by weight (Cin, Cout/g, KD, KH, KW), result depth outs[0]."""
    B, cin, D, H, W = x.shape
    cout_g, kd = weight.shape[1], weight.shape[2]
    cout = cout_g * groups
    sd, pd, dd = stride[0], padding[0], dilation[0]
    x2 = x.permute(0, 2, 1, 3, 4).reshape(B * D, cin, H, W)
    w2 = weight.reshape(cin, cout_g * kd, weight.shape[3], weight.shape[4])
    y2 = _conv._conv_transpose("conv_transpose2d", 2, x2, w2, None, stride[1:], padding[1:], output_padding[1:],
                               groups, dilation[1:])
    oh, ow = y2.shape[2:]
    y = y2.reshape(B, D, cout, kd, oh, ow).permute(0, 2, 1, 3, 4, 5).reshape(B, cout, D * kd, oh, ow)
    full = (D - 1) * sd + dd * (kd - 1) + 1 + output_padding[0]
    idx = _conv.geometry_tensor(("conv3d_depth", D, kd, sd, dd), dtypes.int64, x.device,
                                lambda: _depth_taps(D, kd, sd, dd))
    y = _conv.put_rows(y, 2, idx, full)
    return y.narrow(2, pd, outs[0])


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv._conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv._conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
