"""combinations and nonzero_static against torch on every device: every r with and without
replacement, every dtype, empty inputs, gradients (combinations), size below/at/above the
nonzero count, fill_value, 0-dim inputs, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("rep", [False, True])
@pytest.mark.parametrize("dt", ["float32", "int64", "bool"])
def test_combinations_match_torch(device, torch, n, r, rep, dt):
    a = np.arange(1, n + 1) % 2 if dt == "bool" else np.arange(1, n + 1)
    ta = torch.tensor(a).to(getattr(torch, dt))
    want = torch.combinations(ta, r, rep)
    got = tl.combinations(tl.tensor(a, device=device).to(getattr(tl, dt)), r, rep)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == getattr(tl, dt)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_combinations_gradient_and_errors(device, torch):
    a = np.array([0.5, -1.0, 2.0, 3.0])
    ta = torch.tensor(a, requires_grad=True)
    x = tl.tensor(a, device=device, requires_grad=True)
    w = np.random.default_rng(0).standard_normal((10, 2))
    (torch.combinations(ta, 2, True) * torch.tensor(w)).sum().backward()
    (tl.combinations(x, 2, True) * tl.tensor(w, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy())
    with pytest.raises(RuntimeError, match="1D vector"):
        tl.combinations(tl.ones((2, 2), device=device))
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.combinations(x, -1)
    with pytest.raises(TypeError):
        tl.combinations(x, 1.5)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4), (0, 3)], ids=str)
@pytest.mark.parametrize("size", [0, 1, 5, 30])
@pytest.mark.parametrize("fill", [-1, 7])
@pytest.mark.parametrize("dt", ["float32", "int32", "bool"])
def test_nonzero_static_matches_torch(device, torch, shape, size, fill, dt):
    a = np.random.default_rng(1).integers(0, 3, shape) * (np.random.default_rng(2).random(shape) > 0.4)
    ta = torch.tensor(a).to(getattr(torch, dt))
    want = torch.nonzero_static(ta, size=size, fill_value=fill)
    x = tl.tensor(a, device=device).to(getattr(tl, dt))
    got = tl.nonzero_static(x, size=size, fill_value=fill)
    assert got.dtype == tl.int64 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    np.testing.assert_array_equal(x.nonzero_static(size=size, fill_value=fill).cpu().numpy(), want.numpy())


def test_nonzero_static_errors(device):
    x = tl.ones(3, device=device)
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.nonzero_static(x, size=-1)
    with pytest.raises(TypeError):
        tl.nonzero_static(x, size=2, fill_value=1.5)
    with pytest.raises(TypeError):
        tl.nonzero_static([1, 0], size=2)
