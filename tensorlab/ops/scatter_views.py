"""The *_scatter family: slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter.

Each returns a new tensor (never a view of the input): a clone of the input (torch's clone keeps a
dense input's strides, which as_strided_scatter's strides address) with the view the op names
overwritten by `src` through copy_. Gradients come from the autograd of clone, the view and the
in-place copy (the copy into a view of a fresh tensor): the input's gradient is the output's with
the view zeroed, src's is the output's gradient seen through the view."""
from __future__ import annotations

from ..tensor import Tensor


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _publish(input, src, view_of, op):
    _tensor(input, op, "input", 1)
    _tensor(src, op, "src", 2)
    if src.device != input.device:
        raise RuntimeError(f"{op}: expected src and input on the same device, but got src on {src.device} and input "
                           f"on {input.device}; move src with src.to({str(input.device)!r})")
    out = input.clone()
    view = view_of(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)} ({op}: give src the slice's shape)")
    view.copy_(src)
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, *, out=None):
    """A copy of input with src written into input[..., start:end:step, ...] along dim (torch.slice_scatter)."""
    from ._composite import to_out
    return to_out(_slice_scatter(input, src, dim, start, end, step), out, "slice_scatter")


def _slice_scatter(input, src, dim, start, end, step):
    """input with input[..., start:end:step, ...] (along dim) replaced by src."""
    def view(out):
        if step <= 0:
            raise RuntimeError("slice step must be positive")
        d = dim
        n = out.dim()
        if not -max(n, 1) <= d < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                             f"but got {d})")
        d = d % max(n, 1)
        return out[(slice(None),) * d + (slice(start, end, step),)]
    return _publish(input, src, view, "slice_scatter")


def select_scatter(input, src, dim, index):
    """input with input.select(dim, index) replaced by src."""
    return _publish(input, src, lambda out: out.select(dim, index), "select_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with input.diagonal(offset, dim1, dim2) replaced by src."""
    return _publish(input, src, lambda out: out.diagonal(offset, dim1, dim2), "diagonal_scatter")


def _as_strided_scatter(input, src, size, stride, storage_offset):
    return _publish(input, src, lambda out: out.as_strided(size, stride, storage_offset), "as_strided_scatter")


_FN = None


def _function():
    """torch's derivative (an autograd Function: a copy into an as_strided view of a fresh tensor is
    no view autograd rewrites): input: grad with the window zeroed; src: grad's window."""
    global _FN
    if _FN is None:
        from ..autograd.function import Function

        class AsStridedScatter(Function):
            @staticmethod
            def forward(ctx, input, src, size, stride, storage_offset):
                ctx.geometry = (size, stride, storage_offset)
                return _as_strided_scatter(input, src, size, stride, storage_offset)

            @staticmethod
            def backward(ctx, g):
                size, stride, off = ctx.geometry
                g = g.contiguous()
                window = g.as_strided(size, stride, off)
                gi = as_strided_scatter(g, window.new_zeros(window.shape), size, stride, off) \
                    if ctx.needs_input_grad[0] else None
                gs = window.clone() if ctx.needs_input_grad[1] else None
                return gi, gs, None, None, None
        _FN = AsStridedScatter
    return _FN


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input's clone with clone.as_strided(size, stride, storage_offset) replaced by src."""
    _tensor(input, "as_strided_scatter", "input", 1)
    _tensor(src, "as_strided_scatter", "src", 2)
    if not (input.requires_grad or src.requires_grad) or not _grad_enabled():
        return _as_strided_scatter(input, src, size, stride, storage_offset)
    if input.requires_grad and not input.is_contiguous():
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous inputs when the input "
                           "requires grad (the gradient addresses the window in a contiguous gradient); pass "
                           "input.contiguous()")
    return _function().apply(input, src, size, stride, storage_offset)


def _grad_enabled():
    from ..autograd import grad_mode
    return grad_mode.is_grad_enabled()


FUNCTIONS = ("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter")
METHODS = {name: globals()[name] for name in FUNCTIONS}
