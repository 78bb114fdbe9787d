"""SyncBatchNorm: BatchNorm whose training statistics are those of the whole global batch. On one
process (no process group, or a group of one rank) it is BatchNorm; across the ranks of
tensorlab.distributed each forward all-reduces the per-channel (count, sum, sum of squares) once, and
the backward all-reduces the per-channel (sum dy*w, sum dy*w*xhat) once, as torch's sync_batch_norm.
convert_sync_batchnorm swaps every BatchNorm*d of a model for one, sharing its parameters and buffers."""
from __future__ import annotations

from ..autograd.function import Function
from ._grad import no_grad
from .normalization import _BatchNorm


def _dist():
    from .. import distributed
    return distributed


def _channel_view(t, ndim):
    return t.reshape((1, -1) + (1,) * (ndim - 2))


class _SyncBatchNormFn(Function):
    """(x - mean) * invstd * w + b over the global batch; saves what backward's one reduction needs."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group):
        dist = _dist()
        c = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        count = input.numel() // c
        x = input
        # one all_reduce: per channel [sum, sum of squares], and the element count (float64: exact)
        stats = x.double().sum(dims)
        sq = (x.double() * x.double()).sum(dims)
        packed = stats.new_zeros(2 * c + 1)
        packed[:c] = stats
        packed[c:2 * c] = sq
        packed[2 * c] = float(count)
        dist.all_reduce(packed, group=group)
        total = packed[2 * c:2 * c + 1]
        mean = packed[:c] / total
        var = (packed[c:2 * c] / total - mean * mean).clamp(min=0.0)
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            with no_grad():
                unbiased = var * total / (total - 1).clamp(min=1.0)
                running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
                running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))
        mean_v = _channel_view(mean.to(x.dtype), x.dim())
        invstd_v = _channel_view(invstd.to(x.dtype), x.dim())
        xhat = (x - mean_v) * invstd_v
        out = xhat
        if weight is not None:
            out = out * _channel_view(weight, x.dim())
        if bias is not None:
            out = out + _channel_view(bias, x.dim())
        ctx.save_for_backward(xhat, invstd_v, weight, total)
        ctx.group = group
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        xhat, invstd_v, weight, total = ctx.saved_tensors
        dims = [0] + list(range(2, xhat.dim()))
        c = xhat.shape[1]
        gw = (grad * xhat).sum(dims) if weight is not None else None
        gb = grad.sum(dims) if ctx.has_bias else None
        dxhat = grad * _channel_view(weight, xhat.dim()) if weight is not None else grad
        packed = dxhat.double().sum(dims).new_zeros(2 * c)
        packed[:c] = dxhat.double().sum(dims)
        packed[c:] = (dxhat.double() * xhat.double()).sum(dims)
        _dist().all_reduce(packed, group=ctx.group)
        mean_dy = _channel_view((packed[:c] / total).to(xhat.dtype), xhat.dim())
        mean_dy_xhat = _channel_view((packed[c:] / total).to(xhat.dtype), xhat.dim())
        gx = (dxhat - mean_dy - xhat * mean_dy_xhat) * invstd_v
        return gx, gw, gb, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over N-D input whose training statistics are reduced across the process group."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _group_size(self):
        dist = _dist()
        if not (dist.is_available() and dist.is_initialized()):
            return 1, None
        group = self.process_group if self.process_group is not None else dist.group.WORLD
        return dist.get_world_size(group), group

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        world, group = self._group_size() if (bn_training and self.training) else (1, None)
        if world <= 1:  # one process: exactly BatchNorm
            return super().forward(input)
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"SyncBatchNorm: expected input with {self.num_features} channels (num_features), "
                               f"got input of shape {list(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        track = self.track_running_stats and self.num_batches_tracked is not None
        if track:
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item() + 1)
        from .._journal import Journal
        with Journal() as journal:
            if track:
                journal.tensors((self.running_mean, self.running_var, self.num_batches_tracked))
            out = _SyncBatchNormFn.apply(input, self.weight, self.bias, self.running_mean if track else None,
                                         self.running_var if track else None, self.eps, momentum, group)
            if track:
                with no_grad():
                    self.num_batches_tracked.add_(1)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm1d/2d/3d (at any depth) replaced by a SyncBatchNorm that takes
        over its parameters (the same Parameter objects), buffers and training flag."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out

