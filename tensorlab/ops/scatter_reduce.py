"""scatter_reduce(_) and index_reduce(_): reductions of src into self at indexed positions.

Both run on the `scatter` primitive of the backends (CPU: ufunc.at; CUDA: kernels/index.cu's
index_put with an add / multiply / max / min combine, the floating max/min and multiply as CAS
loops on the bits, 16-bit floats and narrow integers through a 32-bit scratch copy; indices are
bounds-checked before anything is written, as every index kernel). One result is computed in
fresh memory:

    include_self=False: the indexed positions are first set to the reduction's identity
                        (0, 1, -inf / the dtype's lowest, +inf / its highest);
    sum / mean:         scatter add;  prod: scatter multiply;  amax / amin: scatter max / min;
    mean:               divided by the count of values reduced into each position (self counted
                        when include_self), a position nothing reached keeps its value; integer
                        results divide with floor rounding (torch's).

index_reduce(dim, index, source) is scatter_reduce with the 1-D index expanded along source:
index'[..., i, ...] = index[i] on dim. The in-place forms compute the result first and publish it
with one copy_ (a failing call changes nothing).

Gradients are torch's (FunctionsManual's scatter_reduce_backward, whose index_reduce form is the
same formula through the expanded index), as an autograd Function over differentiable ops, so they
differentiate again: sum: grad / grad.gather; mean: divided by the counts; prod: the product
without the element itself (computed with the zeros masked, so a single zero gets the product of
the others); amax / amin: the gradient split evenly among the tied extremes; positions reduced with
include_self=False give self no gradient."""
from __future__ import annotations

from .. import dtypes, layout as L, sync
from ..errors import IndexOutOfRangeError
from ..tensor import Tensor
from ._common import check_no_partial_overlap, check_writable, same_device
from .shape import _copy_of, _scatter_checks

_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_PRIMITIVE = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "amax", "amin": "amin"}


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _flag(include_self, op):
    if not isinstance(include_self, bool):
        raise TypeError(f"{op}(): argument 'include_self' must be bool, not {type(include_self).__name__}")
    return include_self


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return False if dt is dtypes.bool_ else 0
    if reduce == "prod":
        return True if dt is dtypes.bool_ else 1
    if dt is dtypes.bool_:
        return reduce == "amin"
    if dt.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    info = dtypes.iinfo(dt)
    return info.min if reduce == "amax" else info.max


def _reduce_name(reduce, op):
    if reduce in ("max", "min"):  # torch's parser takes the legacy spellings too
        reduce = "a" + reduce
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce} ({op})")
    return reduce


def _check(self, dim, index, src, reduce, op):
    """torch's checks; returns (wrapped dim, whether anything is scattered)."""
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {index._dtype}")
    same_device(op, self, index, src)
    d = L.wrap_dim(dim, self.dim())
    if reduce == "mean" and self._dtype is dtypes.bool_:
        raise NotImplementedError(f"\"{op}\" with reduce='mean' not implemented for 'Bool': the mean of booleans "
                                  "has no boolean value; convert self and src to an integer or floating dtype")
    return d, _scatter_checks(self, d, index, src, op.rstrip("_"))


def _compute(self, d, index, src, reduce, include_self, any_index):
    """The result, in fresh memory (no autograd)."""
    res = _copy_of(self)
    if not any_index:
        return res
    be = res._backend
    # every scatter checks the index itself (on CUDA on the device, without a wait: a scatter that
    # trusted an earlier check would write out of bounds, as that check only reports at the next wait)
    if not include_self:
        be.scatter(res, d, index, _identity(reduce, res._dtype), None)
    be.scatter(res, d, index, src, _PRIMITIVE[reduce])
    if reduce == "mean":
        count = _copy_of(self).fill_(1 if include_self else 0)
        be.scatter(count, d, index, 1, "add")
        count.masked_fill_(count == 0, 1)
        if res._dtype.is_floating_point:
            res.div_(count)
        else:
            res.div_(count, rounding_mode="floor")
    return res


# -- autograd ----------------------------------------------------------------------------------------
def _backward(g, self, index, src, result, d, reduce, include_self):
    """torch's scatter_reduce_backward: (grad_self, grad_src), over differentiable ops."""
    if reduce == "sum":
        gs, gsrc = g, g.gather(d, index)
    elif reduce == "mean":
        n = g.new_ones(g.shape) if include_self else g.new_zeros(g.shape)
        n = n.scatter_add(d, index, src.new_ones(src.shape))
        n = n.masked_fill(n == 0, 1)
        gs = g / n
        gsrc = g.gather(d, index) / n.gather(d, index)
    elif reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = scatter_reduce(masked_self, d, index, src, reduce, include_self=include_self)
        gs = g * masked_self_result / masked_self
        src_zero = src == 0
        src_num_zeros = self.new_zeros(self.shape).scatter_add(d, index, src_zero.to(self.dtype)).gather(d, index)
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1)
        masked_src_result = scatter_reduce(self, d, index, masked_src, reduce, include_self=include_self)
        from .elementwise import where
        gsrc = where(src_single_zero, (g * masked_src_result).gather(d, index),
                     (g * result).gather(d, index) / src.masked_fill(src_zero, 1))
    else:  # amax / amin: split evenly among the values equal to the result
        value = result.gather(d, index)
        self_is = (self == result).to(self.dtype)
        src_is = (src == value).to(self.dtype)
        share = g / self_is.scatter_add(d, index, src_is)
        gs = self_is * share
        gsrc = src_is * share.gather(d, index)
    if not include_self:
        gs = gs.scatter(d, index, 0)
    return gs, gsrc


_FN = None


def _function():
    global _FN
    if _FN is None:
        from ..autograd.function import Function

        class ScatterReduce(Function):
            @staticmethod
            def forward(ctx, self, src, index, d, reduce, include_self, any_index):
                r = _compute(self, d, index, src, reduce, include_self, any_index)
                ctx.save_for_backward(self, src, index, r)
                ctx.args = (d, reduce, include_self, any_index)
                return r

            @staticmethod
            def backward(ctx, g):
                self, src, index, r = ctx.saved_tensors
                d, reduce, include_self, any_index = ctx.args
                if not any_index:
                    return g, None, None, None, None, None, None
                gs, gsrc = _backward(g, self, index, src, r, d, reduce, include_self)
                return (gs if ctx.needs_input_grad[0] else None, gsrc if ctx.needs_input_grad[1] else None,
                        None, None, None, None, None)
        _FN = ScatterReduce
    return _FN


def _needs_grad(*ts):
    from ..autograd import grad_mode
    return grad_mode.is_grad_enabled() and any(t.requires_grad for t in ts)


def _run(self, d, index, src, reduce, include_self, any_index):
    if _needs_grad(self, src):
        return _function().apply(self, src, index, d, reduce, include_self, any_index)
    return _compute(self, d, index, src, reduce, include_self, any_index)


def _publish(self, r, op):
    """Write the computed result into self (the in-place forms)."""
    check_writable(self, op)
    return self.copy_(r)


# -- scatter_reduce ------------------------------------------------------------------------------------
def _scatter_reduce(input, dim, index, src, reduce, include_self, op):
    _tensor(input, op, "input", 1)
    _tensor(index, op, "index", 3)
    _tensor(src, op, "src", 4)
    include_self = _flag(include_self, op)
    reduce = _reduce_name(reduce, op)
    d, any_index = _check(input, dim, index, src, reduce, op)
    return _run(input, d, index, src, reduce, include_self, any_index)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """input with src reduced into it at input[index[i][j]][j] (dim 0; any dim likewise)."""
    r = _scatter_reduce(input, dim, index, src, reduce, include_self, "scatter_reduce")
    if out is None:
        return r
    _tensor(out, "scatter_reduce", "out", 6)
    if out.dtype is not r.dtype:
        raise RuntimeError(f"scatter_reduce(): expected out to have dtype {r.dtype}, but got {out.dtype}")
    if tuple(out.shape) != tuple(r.shape):
        out.resize_(r.shape)
    return out.copy_(r)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    _tensor(self, "scatter_reduce_", "self", 0)
    check_writable(self, "scatter_reduce_")
    check_no_partial_overlap(self, index, src, op="scatter_reduce_")
    base = self.clone() if _needs_grad(self, src) else self  # the gradient needs self's old values
    r = _scatter_reduce(base, dim, index, src, reduce, include_self, "scatter_reduce_")
    return _publish(self, r, "scatter_reduce_")


# -- index_reduce --------------------------------------------------------------------------------------
def _index_reduce(self, dim, index, source, reduce, include_self, op):
    _tensor(self, op, "self", 0)
    _tensor(index, op, "index", 2)
    _tensor(source, op, "source", 3)
    include_self = _flag(include_self, op)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = L.wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{index._dtype.torch_name} and size: {list(index.shape)}")
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index, got {index._dtype}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"index_reduce_(): self ({self._dtype.torch_name}) and source "
                           f"({source._dtype.torch_name}) must have the same scalar type")
    same_device(op, self, index, source)
    sshape, oshape = list(self.shape), list(source.shape)
    if self.dim() != source.dim() or any(a != b for k, (a, b) in enumerate(zip(sshape, oshape)) if k != d):
        if not (self.dim() <= 1 and source.dim() <= 1 and source.numel() == index.numel()):
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {sshape} source.shape = {oshape}")
    n = index.numel()
    along = source.shape[d] if source.dim() else 1
    if n != along:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({along}), for dim: {d}")
    if reduce == "mean" and self._dtype is dtypes.bool_:
        raise NotImplementedError("\"index_reduce\" with reduce='mean' not implemented for 'Bool': the mean of "
                                  "booleans has no boolean value; convert self and source to an integer or floating "
                                  "dtype")
    src = source if source.dim() else source.reshape(1)
    base = self if self.dim() else self.reshape(1)
    shape = [1] * src.dim()
    shape[d] = n
    idx = index.reshape(shape).expand(tuple(src.shape))
    try:
        with sync.reported_as(op, lambda e, value: IndexOutOfRangeError(f"{op}(): index out of range in self ({e})")):
            r = _run(base, d, idx, src, reduce, include_self, n > 0 and src.numel() > 0)
    except IndexOutOfRangeError as e:
        raise IndexOutOfRangeError(f"{op}(): index out of range in self ({e})") from None
    return r if self.dim() else r.reshape(())


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """input with source's slices reduced into input's slices index[i] along dim."""
    r = _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce")
    if out is None:
        return r
    _tensor(out, "index_reduce", "out", 6)
    if out.dtype is not r.dtype:
        raise RuntimeError(f"index_reduce(): expected out to have dtype {r.dtype}, but got {out.dtype}")
    if tuple(out.shape) != tuple(r.shape):
        out.resize_(r.shape)
    return out.copy_(r)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    _tensor(self, "index_reduce_", "self", 0)
    check_writable(self, "index_reduce_")
    check_no_partial_overlap(self, index, source, op="index_reduce_")
    base = self.clone() if _needs_grad(self, source) else self
    r = _index_reduce(base, dim, index, source, reduce, include_self, "index_reduce_")
    return _publish(self, r, "index_reduce_")


FUNCTIONS = ("scatter_reduce", "index_reduce")
METHODS = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_, "index_reduce": index_reduce,
           "index_reduce_": index_reduce_}
