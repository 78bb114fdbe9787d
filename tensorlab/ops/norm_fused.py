"""Fused layer norm / RMSNorm and embedding's weight gradient: the ops over the `layer_norm_fwd`,
`layer_norm_bwd` and `embedding_bwd` primitives (backends/cpu/norm.py, backends/cuda/norm.py with
kernels/norm.cu and kernels/embedding.cu).

nn.functional.layer_norm / rms_norm / embedding call these where `supported` says so (float16,
bfloat16, float32 inputs; weight and bias of the input's dtype and device); the composites in
nn/functional_norm.py stay the reference and the fallback (float64, mixed dtypes, ENABLED = False).

- layer_norm(x, weight, bias, eps, rms, n_norm): one pass over each row for the statistics
  (Welford, float32), y written with the float32 mean and rstd kept for the backward. Recorded as
  "native_layer_norm" (or "native_rms_norm"): its derivative (autograd/derivatives_nn.py) runs
  layer_norm_backward (dx from the saved statistics; dweight/dbias as per-block partial sums and a
  fixed-order second pass: deterministic) unless create_graph is asked for; then it computes the
  same gradients from composites so that they are themselves differentiable.
- embedding(flat, weight, padding_idx, scale_grad_by_freq): the rows of weight (index_select),
  recorded as "embedding"; embedding_backward sorts the indices (stable) and sums each index's
  segment of grad rows in order: bit-identical from run to run, no atomics, with or without
  tl.use_deterministic_algorithms."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor
from . import registry
from ._common import _CONTIGUOUS, _contiguous_layout, empty_tensor, pinned
from .registry import KEEP, OpDef

_F = "norm_fused"
registry.register(
    OpDef("native_layer_norm", _F, "layer_norm_fwd", KEEP),
    OpDef("native_rms_norm", _F, "layer_norm_fwd", KEEP),
    # the backward ops are not recorded: a double backward goes through the composites (see above)
    OpDef("native_layer_norm_backward", _F, "layer_norm_bwd", KEEP, differentiable=False),
    OpDef("embedding_dense_backward", _F, "embedding_bwd", KEEP, differentiable=False),
)
FUNCTIONS = ()

ENABLED = True  # False: nn.functional uses the composites (tests compare the two paths)
FUSED_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def supported(x, *params):
    """Whether the fused path takes x (and weight/bias, None where absent)."""
    if not ENABLED or x._dtype not in FUSED_DTYPES:
        return False
    for p in params:
        if p is not None and (not isinstance(p, Tensor) or p._dtype is not x._dtype or p.device != x.device):
            return False
    return True


def supported_embedding(flat, weight):
    """Whether embedding takes the fused path (every dtype: only floating weights get gradients)."""
    return ENABLED and flat.device == weight.device


def _flat(t, shape, out=False):
    """t as a contiguous tensor of `shape` for a backend primitive: an operand it reads, or with
    out=True a fresh output it writes (a view of it). Where t's record is its shape's contiguous
    layout at offset 0 (the common case, and every fresh output), t's storage under the contiguous
    layout of `shape`, no op run; else t.view(shape) for an output, detach().contiguous().reshape()
    for an operand."""
    meta = t._meta
    lay = meta.layout
    hit = _CONTIGUOUS.get((lay.shape,))
    if hit is not None and hit[0] is lay:
        if lay.shape == shape:
            return pinned(t, meta)
        return Tensor._make(meta.storage, _contiguous_layout(shape)[0], t._dtype, t._vc)
    if out:
        return t.view(shape)
    return t.detach().contiguous().reshape(shape)


def layer_norm(x, weight, bias, eps, rms, n_norm):
    """Layer norm (rms=False) or RMSNorm (rms=True) of x over its trailing n_norm dims."""
    shape = tuple(x.shape)
    n = _numel(shape[len(shape) - n_norm:])
    m = _numel(shape) // n if n else 0
    y = empty_tensor(shape, x._dtype, x.device)
    mean = empty_tensor((m,), dtypes.float32, x.device)
    rstd = empty_tensor((m,), dtypes.float32, x.device)
    if m and n:
        w = None if weight is None else _flat(weight, (n,))
        b = None if bias is None else _flat(bias, (n,))
        x._backend.layer_norm_fwd(_flat(y, (m, n), True), mean, rstd, _flat(x, (m, n)), w, b, float(eps), bool(rms))
    inputs = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return autograd_hooks.record(y, "native_rms_norm" if rms else "native_layer_norm", inputs, mean=mean, rstd=rstd,
                                 eps=eps, n_norm=n_norm, has_weight=weight is not None, has_bias=bias is not None)


def layer_norm_backward(grad_output, x, mean, rstd, weight, rms, n_norm, needs):
    """(grad_input, grad_weight, grad_bias) of layer_norm / rms norm from the saved statistics; `needs`
    says which to compute (None for the others). Not differentiable: the derivative table uses the
    composite formulas under create_graph."""
    shape = tuple(x.shape)
    n = _numel(shape[len(shape) - n_norm:])
    m = _numel(shape) // n if n else 0
    want_x, want_w, want_b = needs
    gi = empty_tensor(shape, x._dtype, x.device) if want_x else None
    wshape = shape[len(shape) - n_norm:]
    gw = empty_tensor(wshape, x._dtype, x.device) if want_w else None
    gb = empty_tensor(wshape, x._dtype, x.device) if want_b else None
    if n:
        g = grad_output.detach()
        if g._dtype is not x._dtype:
            g = g.to(x._dtype)
        w = None if weight is None else _flat(weight, (n,))
        x._backend.layer_norm_bwd(None if gi is None else _flat(gi, (m, n), True),
                                  None if gw is None else _flat(gw, (n,), True),
                                  None if gb is None else _flat(gb, (n,), True), _flat(g, (m, n)), _flat(x, (m, n)),
                                  mean, rstd, w, bool(rms))
    return gi, gw, gb


def layer_norm_backward_composite(grad_output, x, weight, eps, rms, n_norm, needs):
    """The same gradients written with differentiable ops (for create_graph)."""
    low = x._dtype in (dtypes.float16, dtypes.bfloat16)
    xf = x.float() if low else x
    g = grad_output.float() if low else grad_output
    dims = tuple(range(-n_norm, 0))
    if rms:
        rstd = ((xf * xf).mean(dims, keepdim=True) + eps).rsqrt()
        xh = xf * rstd
    else:
        mu = xf.mean(dims, keepdim=True)
        rstd = (xf.var(dims, correction=0, keepdim=True) + eps).rsqrt()
        xh = (xf - mu) * rstd
    gi = gw = gb = None
    if needs[0]:
        gy = g * (weight.float() if low else weight) if weight is not None else g
        inner = gy - xh * (gy * xh).mean(dims, keepdim=True)
        if not rms:
            inner = inner - gy.mean(dims, keepdim=True)
        gi = (rstd * inner).to(x._dtype)
    lead = tuple(range(x.dim() - n_norm))
    if needs[1]:
        gw = ((g * xh).sum(lead) if lead else g * xh).to(x._dtype)
    if needs[2]:
        gb = (g.sum(lead) if lead else g).to(x._dtype)
    return gi, gw, gb


def embedding(flat, weight, padding_idx, scale_grad_by_freq, shape):
    """weight's rows at the int64 vector `flat`, as `shape` (the indices' shape + [dim]), recorded as
    "embedding"."""
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        out = weight.detach().index_select(0, flat).reshape(shape)
    return autograd_hooks.record(out, "embedding", (weight,), indices=flat, padding_idx=padding_idx,
                                 scale_grad_by_freq=bool(scale_grad_by_freq))


def embedding_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """grad of embedding's weight ((num_weights, dim)): each row the sum of grad_output's rows (n, dim)
    whose index is that row, in the indices' stable sorted order; zero at padding_idx; divided by the
    index's count when scale_grad_by_freq."""
    g = grad_output.detach()
    dim = g.shape[-1]
    g = g.reshape(-1, dim).contiguous()
    gw = empty_tensor((num_weights, dim), g._dtype, g.device)
    if gw.numel():
        sorted_idx, order = indices.detach().sort(stable=True)
        g._backend.embedding_bwd(gw, g, sorted_idx, order, -1 if padding_idx is None else int(padding_idx),
                                 bool(scale_grad_by_freq))
    return gw


def embedding_backward_composite(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """The same gradient with differentiable ops (for create_graph): index_put with accumulate."""
    from . import creation, elementwise
    dim = grad_output.shape[-1]
    g = grad_output.reshape(-1, dim)
    if scale_grad_by_freq:
        counts = creation.zeros(num_weights, dtype=g._dtype, device=g.device)
        counts = counts.index_put((indices,), creation.ones(indices.shape[0], dtype=g._dtype, device=g.device),
                                  accumulate=True)
        g = g / counts.index_select(0, indices).unsqueeze(-1)
    if padding_idx is not None:
        g = elementwise.where((indices == padding_idx).unsqueeze(-1), 0.0, g)
    zeros = creation.zeros((num_weights, dim), dtype=g._dtype, device=g.device)
    return zeros.index_put((indices,), g, accumulate=True)
