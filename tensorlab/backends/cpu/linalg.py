"""CPU linear-algebra primitive: batched matrix multiply over already-broadcast operands."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
from .elementwise import _quiet_off, _quiet_on
from .memory import array
from .reduction import HALF

__all__ = ("matmul", "matmul_bias", "matmul_bias_grad", "lapack")

_F32 = np.dtype(np.float32)


def matmul(out, a, b, accumulate=False):
    """out[..., n, m] = a[..., n, k] @ b[..., k, m]; with `accumulate`, out += a @ b (BLAS's beta 1:
    the product and out's values added before the one rounding). The batch dims of a, b and out are
    equal (broadcast ones have stride 0). float16/bfloat16 multiply and accumulate in float32 and
    round once; integers wrap on overflow as in torch. With more than one thread a large stack of
    products is split over the CPU pool, and a product runs on OpenBLAS's threads or held at one
    thread (parallel.blas_product)."""
    o = array(out)
    x = array(a)
    y = array(b)
    _faults.hit("launch")
    if x.dtype in HALF:
        x = x.astype(_F32)
        y = y.astype(_F32)
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        if accumulate:
            acc = np.matmul(x, y)
            acc += o.astype(acc.dtype)
            np.copyto(o, acc, casting="unsafe")
            return
        if _par.get_num_threads() > 1:
            per = x.shape[-2] * x.shape[-1] * y.shape[-1]  # multiply-adds of one matrix product
            if o.ndim > 2 and per < _par.BLAS_OWN_MIN and per * (o.size // max(1, o.shape[-2] * o.shape[-1])) >= \
                    SPLIT_MIN and not _par.blas_spinning() and _split(o, x, y):
                return
            _par.blas_product(per, _product, o, x, y)  # OpenBLAS's threads, or held at one (parallel.py)
            return
        _product(o, x, y)
    finally:
        _quiet_off(token)


def matmul_bias(out, a, b, bias, activation=None):
    """out[n, m] = act(a[n, k] @ b[k, m] + bias[m]), act None or "relu", as cuBLASLt's BIAS / RELU_BIAS
    epilogues on CUDA: the bias added to the product in the accumulator's type (float32 for
    float16/bfloat16), rounded once (ReLU commutes with the rounding)."""
    o = array(out)
    if o.size == 0:
        return
    v = array(bias)
    if o.dtype in HALF:
        acc = np.matmul(array(a).astype(_F32), array(b).astype(_F32))
        _faults.hit("launch")
        acc += v.astype(_F32)
        if activation == "relu":
            np.maximum(acc, 0, out=acc)
        np.copyto(o, acc, casting="unsafe")
        return
    matmul(out, a, b)
    token = _quiet_on()
    try:
        np.add(o, v, out=o)
        if activation == "relu":
            np.maximum(o, 0, out=o)
    finally:
        _quiet_off(token)


def matmul_bias_grad(out, a, b, grad_bias):
    """out[n, m] = a[n, k] @ b[k, m] and grad_bias[n] = a summed over k (a linear layer's weight gradient
    g^T x and bias gradient g.sum(0)), as cuBLASLt's BGRADB epilogue on CUDA: 16-bit sums in float32."""
    matmul(out, a, b)
    x = array(a)
    g = array(grad_bias)
    np.copyto(g, x.sum(axis=1, dtype=_F32 if x.dtype in HALF else x.dtype), casting="unsafe")


# multiply-adds of a whole stack of products below parallel.BLAS_OWN_MIN each from which it is
# split over the pool: a pool call costs 60-90 us on a 2-core VM (a sleeping thread's wake-up),
# about what 4Mi multiply-adds take on one core; measured on two threads, 64 products of
# 16x72x576 (a convolution's): 877 -> 463-514 us; 64x2304x32 alone (4.7Mi): no gain
SPLIT_MIN = 1 << 23


def _product(o, x, y):
    if o.dtype == x.dtype:
        np.matmul(x, y, out=o)
    else:
        np.copyto(o, np.matmul(x, y), casting="unsafe")


def _split(o, x, y):
    """The stack over the CPU pool in blocks of its outermost batch dim of two or more matrices,
    one block a thread, each block one np.matmul (the same per-matrix BLAS calls as the whole
    stack: the same bits). True when done."""
    ax = next((d for d in range(o.ndim - 2) if o.shape[d] >= 2), None)
    if ax is None:
        return False
    pieces = _par.split_ranges(o.shape[ax], -(-o.shape[ax] // min(_par.get_num_threads(), o.shape[ax])))
    lead = (slice(None),) * ax

    def task(i):
        sl = lead + (slice(*pieces[i]),)
        _product(o[sl], x[sl], y[sl])
    _par.run(len(pieces), task)
    return True


from .lapack import lapack  # noqa: E402  (dense factorizations: their own file)
