"""Fused batch norm: the op over the `batch_norm_fwd` and `batch_norm_bwd` primitives
(backends/cpu/batch_norm.py, backends/cuda/batch_norm.py with kernels/batch_norm.cu).

nn.functional.batch_norm calls `batch_norm` where `supported` says so: float16/bfloat16/float32 inputs
with at least one element, weight/bias/running statistics all of one dtype (the input's, or float32:
torch's mixed form) on the input's device, running statistics contiguous. The composite of
nn/functional_norm.py stays the reference and the fallback (float64, other mixes, ENABLED = False).

- Statistics run over every dim but 1 whatever the layout: a contiguous input is read as (N, C, S), a
  channels_last / channels_last_3d one in place with channels innermost (y then channels_last too, as
  torch's), anything else is made contiguous first.
- Training: one pass for the per-channel mean and variance (Welford, float32), y written with the float32
  mean and invstd kept for the backward; running_mean / running_var (unbiased variance) are updated in
  the primitive's last step, after every allocation and every other launch: a failure leaves them (and
  everything else the caller can see) unchanged. Their version counters are bumped, as torch's in-place
  update does. Evaluation: the running statistics.
- Recorded as "native_batch_norm" (grad_fn NativeBatchNormBackward0). Its derivative runs
  batch_norm_backward (dx, dweight, dbias in one fused pass per channel, fixed-order sums) unless
  create_graph is asked for; then batch_norm_backward_composite computes the same gradients from
  differentiable ops (double backward)."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor
from . import registry
from ._common import check_writable, empty_tensor
from .registry import KEEP, OpDef

_F = "batch_norm_fused"
registry.register(
    OpDef("native_batch_norm", _F, "batch_norm_fwd", KEEP),
    # not recorded: a double backward goes through batch_norm_backward_composite
    OpDef("native_batch_norm_backward", _F, "batch_norm_bwd", KEEP, differentiable=False),
)
FUNCTIONS = ()

ENABLED = True  # False: nn.functional uses the composite (tests compare the two paths)
FUSED_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


def supported(x, weight, bias, running_mean, running_var):
    if not ENABLED or x._dtype not in FUSED_DTYPES or x.dim() < 2 or x.numel() == 0:
        return False
    pdt = None
    for p in (weight, bias, running_mean, running_var):
        if p is None:
            continue
        if not isinstance(p, Tensor) or p.device != x.device or p._dtype not in (x._dtype, dtypes.float32):
            return False
        if pdt is None:
            pdt = p._dtype
        elif p._dtype is not pdt:
            return False
    return all(r is None or r.is_contiguous() for r in (running_mean, running_var))


def _geometry(x):
    n, c = x.shape[0], x.shape[1]
    return n, c, x.numel() // (n * c)


def _cols_layout(x):
    """Whether x is channels_last (4-D) or channels_last_3d (5-D): then it is read in place as (N, C, S) with
    strides (S*C, 1, C) and y keeps that layout, as torch's; every other input (and y) is contiguous."""
    return x.dim() in (4, 5) and x.movedim(1, -1).is_contiguous() and not x.is_contiguous()


def _as3(t, n, c, s, cols):
    """t (of x's layout) as the (N, C, S) tensor the primitives take."""
    if cols:
        return t.movedim(1, -1).reshape(n, s, c).transpose(1, 2)
    return t.reshape(n, c, s)


def _like_x(x, dtype, cols):
    stride = tuple(x.stride()) if cols else None
    return empty_tensor(tuple(x.shape), dtype, x.device, stride=stride)


def _in_layout(t, cols):
    """t (of x's shape) laid out as the primitives read x."""
    if cols:
        return t if _cols_layout(t) else t.movedim(1, -1).contiguous().movedim(-1, 1)
    return t.contiguous()


def _vec(t, c):
    return None if t is None else t.detach().contiguous().reshape(c)


def batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps):
    n, c, s = _geometry(x)
    cols = _cols_layout(x)
    xd = x.detach()
    if not cols:
        xd = xd.contiguous()
    y = _like_x(x, x._dtype, cols)
    save_mean = empty_tensor((c,), dtypes.float32, x.device)
    save_invstd = empty_tensor((c,), dtypes.float32, x.device)
    rm = rv = None
    if training:
        rm = None if running_mean is None else running_mean.detach().view(c)
        rv = None if running_var is None else running_var.detach().view(c)
        for r in (rm, rv):
            if r is not None:
                check_writable(r, "batch_norm")
    else:
        rm, rv = running_mean.detach().reshape(c), running_var.detach().reshape(c)
    x._backend.batch_norm_fwd(_as3(y, n, c, s, cols), save_mean, save_invstd, _as3(xd, n, c, s, cols),
                              _vec(weight, c), _vec(bias, c), rm, rv, bool(training), float(momentum), float(eps))
    if training:
        for r in (running_mean, running_var):
            if r is not None:
                r._vc.bump()
    inputs = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return autograd_hooks.record(y, "native_batch_norm", inputs, save_mean=save_mean, save_invstd=save_invstd,
                                 training=bool(training), eps=eps, has_weight=weight is not None,
                                 has_bias=bias is not None, param_dtype=_param_dtype(x, weight, bias))


def _param_dtype(x, weight, bias):
    """The gradients' dtype for weight/bias (`bias` may be given as that dtype itself)."""
    p = weight if weight is not None else bias
    if p is None:
        return x._dtype
    return p._dtype if isinstance(p, Tensor) else p


def batch_norm_backward(grad_output, x, save_mean, save_invstd, weight, bias, training, needs):
    """(grad_input, grad_weight, grad_bias) of batch_norm from the saved statistics; `needs` says which
    to compute (None for the others). Not differentiable (see batch_norm_backward_composite)."""
    n, c, s = _geometry(x)
    cols = _cols_layout(x)
    want_x, want_w, want_b = needs
    pdt = _param_dtype(x, weight, bias)
    gi = _like_x(x, x._dtype, cols) if want_x else None
    gw = empty_tensor((c,), pdt, x.device) if want_w else None
    gb = empty_tensor((c,), pdt, x.device) if want_b else None
    if x.numel():
        g = grad_output.detach()
        if g._dtype is not x._dtype:
            g = g.to(x._dtype)
        xd = x.detach() if cols else x.detach().contiguous()
        x._backend.batch_norm_bwd(None if gi is None else _as3(gi, n, c, s, cols), gw, gb,
                                  _as3(_in_layout(g, cols), n, c, s, cols), _as3(xd, n, c, s, cols), save_mean,
                                  save_invstd, _vec(weight, c), bool(training))
    return gi, gw, gb


def batch_norm_backward_composite(grad_output, x, save_mean, save_invstd, weight, bias, training, eps, needs):
    """The same gradients written with differentiable ops (for create_graph). In evaluation the statistics
    are constants (the running ones, as saved)."""
    low = x._dtype in (dtypes.float16, dtypes.bfloat16)
    xf = x.float() if low else x
    g = grad_output.float() if low else grad_output.to(xf.dtype)
    dims = (0,) + tuple(range(2, x.dim()))
    view = [1, x.shape[1]] + [1] * (x.dim() - 2)
    if training:
        mu = xf.mean(dims, keepdim=True)
        invstd = (xf.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    else:
        mu = save_mean.to(xf.dtype).reshape(view)
        invstd = save_invstd.to(xf.dtype).reshape(view)
    xh = (xf - mu) * invstd
    gi = gw = gb = None
    if needs[0]:
        scale = invstd * weight.to(xf.dtype).reshape(view) if weight is not None else invstd
        inner = g - g.mean(dims, keepdim=True) - xh * (g * xh).mean(dims, keepdim=True) if training else g
        gi = (inner * scale).to(x._dtype)
    pdt = _param_dtype(x, weight, bias)
    if needs[1]:
        gw = (g * xh).sum(dims).to(pdt)
    if needs[2]:
        gb = g.sum(dims).to(pdt)
    return gi, gw, gb
