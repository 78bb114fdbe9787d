"""nn.functional.linear as one op (torch's addmm): y = x W^T (+ b) written by one GEMM into a fresh
output, the bias then added in place into that output (float16/bfloat16: the bias copied into the output
first and the product accumulated onto it in float32, one rounding, as BLAS's beta 1) (no broadcast add into a new tensor, no
transposed-weight node in the graph). Recorded as "linear"; its derivative
(autograd/derivatives_nn.py) computes grad_input = g W and grad_weight = g^T x as matrix products
on transposed views (BLAS reads them as they are: no copies) and grad_bias = g.sum(0). Those are
ordinary tensor ops, so create_graph (double backward) works through them.

nn.functional.linear takes this path where `supported` says so (floating inputs of one dtype and
device, x at least 2-D with x.shape[-1] == in_features, a 1-D bias of out_features); anything else
(1-D input, mismatched shapes or dtypes, integer tensors) goes through the composite
x.matmul(W.t()) + b, which raises torch's errors."""
from __future__ import annotations

from .. import autograd_hooks, dtypes, layout as L
from ..tensor import Tensor
from . import registry
from ._common import empty_tensor
from .registry import KEEP, OpDef

_F = "linear_fused"
registry.register(OpDef("linear", _F, "matmul", KEEP))
FUNCTIONS = ()

ENABLED = True  # False: nn.functional.linear uses the composite (tests compare the two paths)
_FLOATS = frozenset((dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64))


def supported(x, weight, bias):
    """Whether linear(x, weight, bias) takes the fused path."""
    if not ENABLED or type(x) is not Tensor and not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        return False
    dt = x._dtype
    if dt not in _FLOATS or weight._dtype is not dt:
        return False
    ls, ws = x._meta.layout.shape, weight._meta.layout.shape
    if len(ws) != 2 or len(ls) < 2 or ls[-1] != ws[1]:
        return False
    dev = x._meta.storage.device
    if weight._meta.storage.device != dev:
        return False
    if bias is not None:
        if not isinstance(bias, Tensor) or bias._dtype is not dt or bias._meta.storage.device != dev:
            return False
        bs = bias._meta.layout.shape
        if len(bs) != 1 or bs[0] != ws[0]:
            return False
    return True


def _mat(t, shape, stride, meta):
    """A view of t's storage with the given 2-D layout, outside autograd (the op reads it)."""
    return t._view_of(L.Layout(L.Size(shape), stride, meta.layout.offset), meta=meta)


def linear(x, weight, bias=None):
    """x @ weight.T + bias for x [..., in], weight [out, in], bias [out] (see `supported`)."""
    xm, wm = x._meta, weight._meta
    xl, wl = xm.layout, wm.layout
    shape = tuple(xl.shape)
    n_out, n_in = wl.shape
    out = empty_tensor(shape[:-1] + (n_out,), x._dtype, xm.storage.device)
    n = 1
    for s in shape[:-1]:
        n *= s
    if len(shape) == 2:
        x2 = x
    elif L.is_contiguous(xl.shape, xl.stride) and n:
        x2 = _mat(x, (n, n_in), (n_in, 1), xm)  # the rows of a contiguous x, viewed outside autograd
    else:
        x2 = x.detach().reshape(n, n_in)  # a view where x's layout allows one (as torch's linear)
    o2 = out if len(shape) == 2 else _mat(out, (n, n_out), (n_out, 1), out._meta)
    wt = _mat(weight, (n_in, n_out), (wl.stride[1], wl.stride[0]), wm)
    be = x._backend
    if n and n_out:
        if bias is None:
            be.matmul(o2, x2, wt)
        else:
            # the bias added to the product in the accumulator (16-bit: float32, one rounding, as torch's addmm):
            # cuBLASLt's bias epilogue on CUDA, one call
            be.matmul_bias(o2, x2, wt, bias)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return autograd_hooks.record(out, "linear", inputs)


def _product(a, b, a_t=False):
    """a @ b (a^T @ b when a_t) into a fresh contiguous tensor by one backend GEMM: the backward's
    products without mm's argument checks (the shapes, dtypes and devices are the forward's)."""
    am = a._meta
    al = am.layout
    if a_t:
        a = _mat(a, (al.shape[1], al.shape[0]), (al.stride[1], al.stride[0]), am)
    n, m = a._meta.layout.shape[0], b._meta.layout.shape[1]
    out = empty_tensor((n, m), a._dtype, am.storage.device)
    if n and m:
        if a._meta.layout.shape[1]:
            a._backend.matmul(out, a, b)
        else:
            out.zero_()
    return out


def backward(g2, x2, w, needs_x, needs_w, needs_b=False):
    """(g2 @ w, g2^T @ x2, g2.sum(0)) of linear's backward as direct products (no graph: create_graph goes
    through the ops in autograd/derivatives_nn.py instead); the bias gradient None unless `needs_b` and
    the weight's is computed too (then one call: cuBLASLt's BGRADB epilogue on CUDA)."""
    gx = _product(g2, w) if needs_x else None
    if not needs_w:
        return gx, None, None
    if not needs_b:
        return gx, _product(g2, x2, a_t=True), None
    gm = g2._meta
    gl = gm.layout
    n_out, n_in = gl.shape[1], x2._meta.layout.shape[1]
    gt = _mat(g2, (n_out, gl.shape[0]), (gl.stride[1], gl.stride[0]), gm)
    gw = empty_tensor((n_out, n_in), g2._dtype, gm.storage.device)
    gb = empty_tensor((n_out,), g2._dtype, gm.storage.device)
    if n_out and n_in:
        if gl.shape[0]:
            g2._backend.matmul_bias_grad(gw, gt, x2, gb)
        else:
            gw.zero_()
            gb.zero_()
    elif n_out:
        gb = g2.sum(0)
    return gx, gw, gb
