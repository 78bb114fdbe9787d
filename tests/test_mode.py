"""mode against torch on every device: values (the smallest most frequent), indices (the last
occurrence, torch's CPU answer wherever its sort is stable: up to 16 elements per row), keepdim,
dims, integer/bool/float inputs, 0-dim and empty inputs, gradients and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "uint8", "bool", "float16"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_matches_torch(device, torch, dt, dim, keepdim):
    a = np.random.default_rng(0).integers(0, 4, (6, 12, 5))
    ta = torch.tensor(a).to(getattr(torch, dt))
    x = tl.tensor(a, device=device).to(getattr(tl, dt))
    want = torch.mode(ta, dim, keepdim)
    got = tl.mode(x, dim, keepdim)
    np.testing.assert_array_equal(got.values.cpu().numpy().astype(np.float64), want.values.numpy().astype(np.float64))
    np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
    assert got.indices.dtype == tl.int64 and got.values.dtype == x.dtype
    m = x.mode(dim, keepdim)  # the method
    np.testing.assert_array_equal(m.indices.cpu().numpy(), want.indices.numpy())


def test_mode_ties_pick_smallest_value_and_its_last_index(device):
    x = tl.tensor([[5, 5, 2, 2, 7], [3, 1, 3, 1, 2]], device=device)
    r = tl.mode(x)
    assert r.values.tolist() == [2, 1] and r.indices.tolist() == [3, 3]
    v, i = tl.mode(tl.tensor([float("nan"), 1.0, float("nan")], device=device))
    assert np.isnan(v.item())  # NaNs count as one value, as torch's


def test_mode_long_rows_value_matches_and_index_points_at_it(device, torch):
    a = np.random.default_rng(1).integers(0, 16, (3, 3000))
    want = torch.mode(torch.tensor(a), 1)
    got = tl.mode(tl.tensor(a, device=device), 1)
    np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
    idx = got.indices.cpu().numpy()
    assert (a[np.arange(3), idx] == want.values.numpy()).all()
    # the last occurrence (torch's unstable sort may return another one of the same value here)
    for r in range(3):
        assert idx[r] == np.nonzero(a[r] == want.values.numpy()[r])[0][-1]


def test_mode_zero_dim_empty_and_errors(device, torch):
    v, i = tl.mode(tl.tensor(5.0, device=device))
    assert v.item() == 5.0 and i.item() == 0 and v.shape == () and i.shape == ()
    r = tl.mode(tl.zeros((0, 3), device=device), 1)
    assert tuple(r.values.shape) == (0,) == tuple(torch.mode(torch.zeros(0, 3), 1).values.shape)
    with pytest.raises(IndexError, match="non-zero size"):
        tl.mode(tl.zeros((3, 0), device=device), 1)
    with pytest.raises(IndexError):
        tl.mode(tl.zeros((3, 2), device=device), 2)
    with pytest.raises(TypeError):
        tl.mode([1, 2, 3])


def test_mode_out_and_gradient(device, torch):
    a = np.random.default_rng(2).integers(0, 3, (4, 6)).astype(np.float64)
    ta = torch.tensor(a, requires_grad=True)
    x = tl.tensor(a, device=device, requires_grad=True)
    torch.mode(ta, 1).values.sum().backward()
    tl.mode(x, 1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ta.grad.numpy())
    vo, io = tl.empty(0, device=device, dtype=tl.float64), tl.empty(0, device=device, dtype=tl.int64)
    r = tl.mode(x.detach(), 1, out=(vo, io))
    assert isinstance(r, tl.return_types.mode)
    assert r.values is vo and vo.tolist() == torch.mode(ta.detach(), 1).values.tolist()
