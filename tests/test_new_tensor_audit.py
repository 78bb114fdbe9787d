"""Ops whose torch contract is "returns a new tensor" never return a view of their input: with
torch as the oracle, for each op and input where torch's result shares no memory with the input,
tensorlab's must not either, and an in-place write to the result must leave the input unchanged.
(Tensor.repeat and tl.tile returned a stride-0 view when the repeated dims had size 1 or were
new: `x.repeat(1, 1) += 1` wrote x.) Inputs have size-1 dims, are 0-d, 1-element and contiguous,
where a final reshape or expand is most likely to stay a view."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = [pytest.mark.torch_oracle, pytest.mark.filterwarnings("ignore:To copy construct from a tensor")]

INPUTS = {"2x3": (2, 3), "3x1": (3, 1), "1x1": (1, 1), "1": (1,), "0d": ()}

OPS = {
    "repeat_ones": lambda m, x: x.repeat(*([1] * x.dim())),
    "repeat_new_dim": lambda m, x: x.repeat(*([1] * (x.dim() + 1))),
    "repeat_size1": lambda m, x: x.repeat(*([2] * x.dim())) if x.dim() else x.repeat(2),
    "tile_ones": lambda m, x: m.tile(x, (1,)),
    "tile_new": lambda m, x: m.tile(x, (1,) * (x.dim() + 1)),
    "repeat_interleave": lambda m, x: m.repeat_interleave(x, 1),
    "clone": lambda m, x: x.clone(),
    "flip_none": lambda m, x: m.flip(x, ()) if x.dim() else x.clone(),
    "flip": lambda m, x: m.flip(x, (0,)) if x.dim() else x.clone(),
    "roll0": lambda m, x: m.roll(x, 0),
    "roll": lambda m, x: m.roll(x, 1),
    "rot90_0": lambda m, x: m.rot90(x, 0) if x.dim() >= 2 else x.clone(),
    "tril": lambda m, x: m.tril(x) if x.dim() >= 2 else x.clone(),
    "triu": lambda m, x: m.triu(x) if x.dim() >= 2 else x.clone(),
    "cat1": lambda m, x: m.cat([x.reshape(-1)]),
    "stack1": lambda m, x: m.stack([x]),
    "hstack1": lambda m, x: m.hstack([x]),
    "vstack1": lambda m, x: m.vstack([x]),
    "cumsum": lambda m, x: m.cumsum(x.reshape(-1), 0),
    "sum_no_dims": lambda m, x: x.sum(dim=()) if hasattr(x, "sum") else None,
    "amax_all": lambda m, x: m.amax(x, dim=tuple(range(x.dim()))),
    "mul_one": lambda m, x: x * 1,
    "add_zero": lambda m, x: x + 0,
    "pos": lambda m, x: +x,
    "abs": lambda m, x: x.abs(),
    "clamp_none": lambda m, x: x.clamp(min=-1e30),
    "where": lambda m, x: m.where(x > -1e30, x, x),
    "to_copy": lambda m, x: x.to(m.float32, copy=True),
    "double_to_float_twice": lambda m, x: x.double().float(),
    "new_tensor": lambda m, x: x.new_tensor(x),
    "tensor_of": lambda m, x: m.tensor(x.tolist()),
    "diag_embed": lambda m, x: m.diag_embed(x) if x.dim() else x.clone(),
    "pad0": lambda m, x: m.nn.functional.pad(x, (0, 0)) if x.dim() else x.clone(),
    "index_select": lambda m, x: m.index_select(x.reshape(-1), 0, m.tensor([0], device=x.device)),
    "gather": lambda m, x: m.gather(x.reshape(-1), 0, m.tensor([0], device=x.device)),
    "take_along_dim": lambda m, x: m.take_along_dim(x.reshape(-1), m.tensor([0], device=x.device)),
    "masked_select": lambda m, x: m.masked_select(x, x > -1e30),
    "sort_values": lambda m, x: m.sort(x.reshape(-1)).values,
    "kron1": lambda m, x: m.kron(x, m.ones(1, device=x.device)) if x.dim() else x.clone(),
    "outer": lambda m, x: m.outer(x.reshape(-1), m.ones(1, device=x.device)),
    "broadcast_to_copy": lambda m, x: m.broadcast_to(x, x.shape).clone(),
    "contiguous_of_expand": lambda m, x: x.reshape(-1).expand(2, -1).contiguous(),
    "reshape_of_expand": lambda m, x: x.reshape(-1, 1).expand(-1, 2).reshape(-1),
    "flatten_of_expand": lambda m, x: x.reshape(-1, 1).expand(-1, 2).flatten(),
    "matmul_1x1": lambda m, x: m.matmul(x.reshape(-1, 1), m.ones(1, 1, device=x.device)),
    "softmax": lambda m, x: m.softmax(x.reshape(-1), 0),
    "nan_to_num": lambda m, x: m.nan_to_num(x),
    "lerp0": lambda m, x: m.lerp(x, x, 0.0),
    "einsum_id": lambda m, x: m.einsum("...->...", x),
    "atleast_copy": lambda m, x: m.atleast_2d(x).clone(),
    # this round's ops (scatter family, masked, special, complex/fft, linalg, 3-D nn)
    "slice_scatter": lambda m, x: m.slice_scatter(x.reshape(-1), x.reshape(-1)[:1], 0, 0, 1),
    "select_scatter": lambda m, x: m.select_scatter(x.reshape(-1), x.reshape(-1)[0], 0, 0),
    "diagonal_scatter": lambda m, x: m.diagonal_scatter(x, m.diagonal(x).clone()) if x.dim() >= 2 else x.clone(),
    "as_strided_scatter": lambda m, x: m.as_strided_scatter(x.reshape(-1), x.reshape(-1)[:1].clone(), (1,), (1,)),
    "scatter_reduce": lambda m, x: m.scatter_reduce(x.reshape(-1), 0, m.tensor([0], device=x.device),
                                                    x.reshape(-1)[:1], "amax"),
    "index_reduce": lambda m, x: m.index_reduce(x.reshape(-1), 0, m.tensor([0], device=x.device),
                                                x.reshape(-1)[:1], "prod"),
    "renorm": lambda m, x: m.renorm(x, 2, 0, 1e30) if x.dim() else x.clone(),
    "masked_sum": lambda m, x: m.masked.sum(x, mask=x > -1e30),
    "mode_values": lambda m, x: m.mode(x.reshape(-1)).values,
    "lgamma": lambda m, x: m.lgamma(x),
    "special_erfcx": lambda m, x: m.special.erfcx(x),
    "complex_of": lambda m, x: m.complex(x, x),
    "fft_roundtrip_real": lambda m, x: m.fft.irfft(m.fft.rfft(x.reshape(-1)), n=x.numel()),
    "fftshift": lambda m, x: m.fft.fftshift(x),
    "lu_factor_LU": lambda m, x: m.linalg.lu_factor(x).LU if x.dim() >= 2 and x.shape[-1] == x.shape[-2] else x.clone(),
    "native_layer_norm": lambda m, x: m.native_layer_norm(x.reshape(1, -1), (x.numel(),), None, None, 1e-5)[0],
    "nonzero_static": lambda m, x: m.nonzero_static(x.reshape(-1), size=1).to(m.float32),
}


def _shares(r, x):
    lo, hi = x.untyped_storage().data_ptr(), x.untyped_storage().data_ptr() + x.untyped_storage().nbytes()
    a = r.untyped_storage().data_ptr()
    return lo <= a < hi and r.untyped_storage().nbytes() > 0 and x.untyped_storage().nbytes() > 0


@pytest.mark.parametrize("shape", list(INPUTS), ids=str)
@pytest.mark.parametrize("name", list(OPS))
def test_new_tensor_ops_never_alias_their_input(device, torch, name, shape):
    vals = np.arange(1, int(np.prod(INPUTS[shape])) + 1, dtype=np.float32).reshape(INPUTS[shape])
    tx = torch.tensor(vals)
    try:
        tr = OPS[name](torch, tx)
    except Exception:  # noqa: BLE001 (torch refuses this input: nothing to compare)
        return
    if not isinstance(tr, torch.Tensor) or _shares(tr, tx):
        return  # torch itself returns a view (or aliases) here: not a "new tensor" case
    x = tl.tensor(vals, device=device)
    r = OPS[name](tl, x)
    assert not _shares(r, x), f"{name}({shape}): the result shares the input's memory (torch's does not)"
    before = x.cpu().numpy().copy()
    r.add_(1)  # a write to the result: the input stays as it was (no internal-overlap error either)
    np.testing.assert_array_equal(x.cpu().numpy(), before)
