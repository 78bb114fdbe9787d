"""F.interpolate and nn.Upsample against torch: nearest, nearest-exact, linear/bilinear/trilinear with
and without align_corners, bicubic and area, by size or scale factor (recompute_scale_factor
either way), antialiased bilinear/bicubic/lanczos, values and input gradients, half types, integer nearest, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F

CASES = [
    ((2, 3, 5, 7), dict(size=(8, 4), mode="nearest")),
    ((2, 3, 5, 7), dict(scale_factor=2.5, mode="nearest")),
    ((2, 3, 5, 7), dict(scale_factor=(0.5, 1.7), mode="nearest-exact")),
    ((2, 3, 9), dict(size=4, mode="nearest")),
    ((2, 3, 5, 7), dict(size=(8, 4), mode="bilinear")),
    ((2, 3, 5, 7), dict(size=(8, 4), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=1.7, mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 5, 7), dict(size=(1, 1), mode="bilinear", align_corners=True)),
    ((2, 3, 9), dict(size=14, mode="linear")),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="nearest")),
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bicubic")),
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bicubic", align_corners=True)),
    ((2, 3, 6, 7), dict(size=(3, 4), mode="area")),
    ((1, 2, 5, 6, 7), dict(size=(3, 4, 7), mode="area")),
    ((2, 3, 9), dict(size=4, mode="area")),
    ((2, 3, 7, 8), dict(size=(3, 4), mode="bilinear", antialias=True)),
    ((2, 3, 7, 8), dict(size=(11, 5), mode="bilinear", antialias=True, align_corners=True)),
    ((2, 3, 7, 8), dict(scale_factor=0.4, mode="bicubic", antialias=True)),
    ((2, 3, 7, 8), dict(size=(2, 9), mode="bicubic", antialias=True, align_corners=True)),
    ((2, 3, 7, 8), dict(size=(3, 11), mode="lanczos", antialias=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,kw", CASES, ids=str)
def test_interpolate_matches_torch_with_gradient(device, torch, shape, kw, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    x, tx = tl.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.interpolate(x, **kw), torch.nn.functional.interpolate(tx, **kw)
    assert tuple(y.shape) == tuple(ty.shape) and y.dtype is getattr(tl, dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), **tol)
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_interpolate_half_types(device, torch, dtype):
    a = np.random.default_rng(1).standard_normal((1, 2, 4, 5)).astype("float32")
    x, tx = tl.tensor(a, device=device).to(getattr(tl, dtype)), torch.tensor(a).to(getattr(torch, dtype))
    for kw in (dict(scale_factor=2, mode="bilinear"), dict(size=(3, 7), mode="nearest")):
        y, ty = F.interpolate(x, **kw), torch.nn.functional.interpolate(tx, **kw)
        assert y.dtype is getattr(tl, dtype)
        np.testing.assert_allclose(y.float().cpu().numpy(), ty.float().numpy(), rtol=1e-2, atol=1e-2)


def test_interpolate_nearest_integers(device, torch):
    a = np.arange(2 * 3 * 4).reshape(1, 2, 3, 4).astype("uint8")
    y = F.interpolate(tl.tensor(a, device=device), scale_factor=(1.5, 0.5))
    ty = torch.nn.functional.interpolate(torch.tensor(a), scale_factor=(1.5, 0.5))
    assert y.dtype is tl.uint8
    np.testing.assert_array_equal(y.cpu().numpy(), ty.numpy())


@pytest.mark.parametrize("args,kw", [((), dict(size=4, mode="nearest")),
                                     ((), dict(size=(2, 3), mode="bilinear")),
                                     ((), dict(scale_factor=2, mode="bilinear", align_corners=True))], ids=str)
def test_upsample_module(device, torch, args, kw):
    m, tm = nn.Upsample(*args, **kw), torch.nn.Upsample(*args, **kw)
    assert repr(m) == repr(tm)
    a = np.random.default_rng(2).standard_normal((1, 2, 3, 5))
    np.testing.assert_allclose(m(tl.tensor(a, device=device)).cpu().numpy(), tm(torch.tensor(a)).numpy(),
                               rtol=1e-12, atol=1e-12)


ERRORS = [
    ((1, 2, 4, 4), dict(size=2, scale_factor=2)),
    ((1, 2, 4, 4), dict()),
    ((1, 2, 4, 4), dict(size=2, align_corners=True)),
    ((1, 2, 4, 4), dict(size=(2, 2, 2))),
    ((1, 2, 4), dict(size=2, mode="bilinear")),
    ((1, 2, 4, 4), dict(size=2, mode="linear")),
    ((1, 2, 4, 4), dict(size=2, mode="cubic")),
    ((4, 4), dict(size=2)),
    ((1, 2, 4), dict(size=2, mode="linear", antialias=True)),
    ((1, 2, 4, 4), dict(size=2, mode="lanczos")),
    ((1, 2, 4, 4), dict(size=2, mode="lanczos", antialias=True, align_corners=True)),
]


@pytest.mark.parametrize("shape,kw", ERRORS, ids=str)
def test_interpolate_errors_match_torch(device, torch, shape, kw):
    try:
        torch.nn.functional.interpolate(torch.zeros(shape), **kw)
    except Exception as e:  # noqa: BLE001
        expected = e
    else:
        raise AssertionError("torch did not raise")
    with pytest.raises(type(expected)) as got:
        F.interpolate(tl.zeros(shape, device=device), **kw)
    assert str(got.value).split(",")[0][:50] == str(expected).split(",")[0][:50]
