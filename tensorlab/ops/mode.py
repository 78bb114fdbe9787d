"""torch.mode: the most frequent value along a dim (the smallest one among equally frequent values)
and the index of its last occurrence, as torch's CPU kernel returns. One stable sort along the dim,
then whole-tensor scans: a running count within each run of equal sorted values; the first place
the count reaches its row maximum ends the smallest most frequent value's run, and with a stable
sort that element is the value's last occurrence in the input. No host loop and no device wait;
the values are gathered from the input at the indices, so the gradient is gather's (torch's
value_selecting_reduction_backward)."""
from __future__ import annotations

from .. import dtypes
from ..return_types import mode as mode_result
from ._composite import tensor_arg, tl, to_outs, wrap_dim



def mode(input, dim=-1, keepdim=False, *, out=None):
    """torch.mode(input, dim=-1, keepdim=False) -> (values, indices)."""
    t = tl()
    tensor_arg(input, "mode")
    d = wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return to_outs(mode_result(input.clone(), t.zeros((), dtype=dtypes.int64, device=input.device)), out)
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    x = input.detach().movedim(d, -1)
    s, perm = x.sort(dim=-1, stable=True)
    dev = input.device
    pos = t.arange(n, device=dev)
    starts = t.ones(tuple(s.shape), dtype=dtypes.bool_, device=dev)
    if n > 1:
        differ = s[..., 1:] != s[..., :-1]
        if s.dtype.is_floating_point:
            differ = differ & ~(s[..., 1:].isnan() & s[..., :-1].isnan())  # NaNs count as one value, as torch's
        starts[..., 1:] = differ
    run_start = t.where(starts, pos, t.zeros((), dtype=dtypes.int64, device=dev)).cummax(-1).values
    running = pos - run_start + 1
    end = running.argmax(dim=-1, keepdim=True)  # the first maximum: the smallest most frequent value
    idx = perm.gather(-1, end)
    idx = idx.movedim(-1, d)
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return to_outs(mode_result(values, idx), out)


FUNCTIONS = ("mode",)
METHODS = {"mode": mode}
