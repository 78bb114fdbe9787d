"""The 3-D convolutions and pools against torch: F.conv3d / conv_transpose3d (stride, padding
incl. 'same', dilation, groups, output_padding, unbatched), F.max_pool3d (indices, ceil_mode,
dilation, NaN), F.avg_pool3d (count_include_pad, divisor_override, int64), F.adaptive_avg/max_pool3d,
F.fractional_max_pool2d/3d with torch's _random_samples, aten's max_pool2d_with_indices_backward,
the nn layers (Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvg/MaxPool3d,
FractionalMaxPool2d/3d, MaxUnpool1d/2d/3d) — values, float64 gradients and gradcheck, errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F

from layers_oracle import leaf, rand, raises_like

F64 = dict(rtol=1e-10, atol=1e-10)


def _close(ours, theirs, **tol):
    got = ours.detach().cpu().numpy()
    want = theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, equal_nan=True, **(tol or F64))


def _run(torch, device, fn, arrays, kw, grad=True):
    """fn(*arrays, **kw) on both libraries: outputs equal, and the float64 gradients of every array."""
    ours, theirs = zip(*(leaf(torch, device, a) if grad else (tl.tensor(a, device=device), torch.tensor(a))
                         for a in arrays))
    y, ty = getattr(F, fn)(*ours, **kw), getattr(torch.nn.functional, fn)(*theirs, **kw)
    if isinstance(ty, tuple):
        _close(y[1], ty[1])
        assert y[1].dtype is tl.int64
        y, ty = y[0], ty[0]
    _close(y, ty)
    if grad:
        g = rand(tuple(ty.shape), 9)
        y.backward(tl.tensor(g, device=device))
        ty.backward(torch.tensor(g))
        for a, b in zip(ours, theirs):
            _close(a.grad, b.grad)


CONV3D = [
    ((2, 4, 5, 6, 7), (6, 2, 2, 3, 2), dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)),
    ((3, 5, 6, 5), (2, 3, 3, 3, 3), dict(padding="same")),
    ((1, 2, 4, 4, 4), (3, 2, 1, 1, 1), {}),
    ((2, 2, 3, 5, 4), (4, 2, 2, 2, 2), dict(padding="valid", stride=2)),
]


@pytest.mark.parametrize("xs,ws,kw", CONV3D)
def test_conv3d(torch, device, xs, ws, kw):
    _run(torch, device, "conv3d", (rand(xs, 1), rand(ws, 2), rand((ws[0],), 3)), kw)


CONVT3D = [
    ((2, 4, 3, 4, 5), (4, 3, 2, 3, 2), dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2,
                                          output_padding=(1, 0, 1))),
    ((4, 3, 2, 3), (4, 2, 3, 3, 3), {}),
    ((1, 2, 2, 2, 2), (2, 3, 1, 2, 3), dict(stride=3, padding=(0, 1, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", CONVT3D)
def test_conv_transpose3d(torch, device, xs, ws, kw):
    cout = ws[1] * kw.get("groups", 1)
    _run(torch, device, "conv_transpose3d", (rand(xs, 1), rand(ws, 2), rand((cout,), 3)), kw)


def test_conv3d_int64_and_errors(torch, device):
    x = np.arange(2 * 2 * 3 * 3 * 3).reshape(2, 2, 3, 3, 3) % 7
    w = np.arange(3 * 2 * 2 * 2 * 2).reshape(3, 2, 2, 2, 2) % 5 - 2
    _close(F.conv3d(tl.tensor(x, device=device), tl.tensor(w, device=device)),
           torch.nn.functional.conv3d(torch.tensor(x), torch.tensor(w)))
    xa, wa = rand((1, 2, 3, 3, 3)), rand((3, 4, 2, 2, 2))
    raises_like(lambda: F.conv3d(tl.tensor(xa, device=device), tl.tensor(wa, device=device)),
                lambda: torch.nn.functional.conv3d(torch.tensor(xa), torch.tensor(wa)))
    raises_like(lambda: F.conv3d(tl.tensor(xa, device=device), tl.tensor(rand((3, 2, 4, 4, 4)), device=device)),
                lambda: torch.nn.functional.conv3d(torch.tensor(xa), torch.tensor(rand((3, 2, 4, 4, 4)))))
    raises_like(lambda: F.conv3d(tl.tensor(rand((2, 3, 3)), device=device), tl.tensor(wa, device=device)),
                lambda: torch.nn.functional.conv3d(torch.tensor(rand((2, 3, 3))), torch.tensor(wa)))


MAX3D = [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1, dilation=(2, 1, 1), ceil_mode=True,
         return_indices=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True),
]


@pytest.mark.parametrize("kw", MAX3D)
def test_max_pool3d(torch, device, kw):
    _run(torch, device, "max_pool3d", (rand((2, 3, 6, 7, 5), 4),), kw)


def test_max_pool3d_nan_ties_ints_unbatched(torch, device):
    x = rand((1, 2, 4, 4, 4), 5)
    x[0, 0, 1, 1, 1] = np.nan
    x[0, 1, 0, 0, 0] = x[0, 1, 1, 1, 1] = 99.0
    x[0, 1, 2:, 2:, 2:] = -np.inf
    _run(torch, device, "max_pool3d", (x,), dict(kernel_size=2, return_indices=True), grad=False)
    xi = np.random.default_rng(0).integers(-9, 9, (2, 3, 5, 4, 5))
    _run(torch, device, "max_pool3d", (xi,), dict(kernel_size=3, stride=2, padding=1, return_indices=True), grad=False)
    _run(torch, device, "max_pool3d", (rand((3, 4, 5, 6), 6),), dict(kernel_size=2, return_indices=True))


AVG3D = [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, divisor_override=5),
]


@pytest.mark.parametrize("kw", AVG3D)
def test_avg_pool3d(torch, device, kw):
    _run(torch, device, "avg_pool3d", (rand((2, 3, 6, 7, 5), 4),), kw)


def test_avg_pool3d_int64_unbatched(torch, device):
    xi = np.random.default_rng(1).integers(-20, 20, (2, 3, 5, 5, 5))
    _run(torch, device, "avg_pool3d", (xi,), dict(kernel_size=3, stride=2, padding=1), grad=False)
    _run(torch, device, "avg_pool3d", (rand((3, 4, 5, 6), 6),), dict(kernel_size=2, count_include_pad=False))


@pytest.mark.parametrize("size", [(3, 4, 5), (6, 7, 5), 1, (None, 3, 2), (4, 2, 3)])
def test_adaptive_pools3d(torch, device, size):
    x = rand((2, 3, 6, 7, 5), 7)
    _run(torch, device, "adaptive_avg_pool3d", (x,), dict(output_size=size))
    _run(torch, device, "adaptive_max_pool3d", (x,), dict(output_size=size, return_indices=True))


def test_pool3d_errors(torch, device):
    x, tx = tl.tensor(rand((2, 3, 4, 4, 4)), device=device), torch.tensor(rand((2, 3, 4, 4, 4)))
    for fn, kw in (("max_pool3d", dict(kernel_size=2, padding=2)), ("max_pool3d", dict(kernel_size=0)),
                   ("avg_pool3d", dict(kernel_size=5)), ("max_pool3d", dict(kernel_size=(2, 2)))):
        with pytest.raises(RuntimeError):
            getattr(torch.nn.functional, fn)(tx, **kw)
        with pytest.raises(RuntimeError):
            getattr(F, fn)(x, **kw)
    raises_like(lambda: F.max_pool3d(tl.tensor(rand((2, 3)), device=device), 2),
                lambda: torch.nn.functional.max_pool3d(torch.tensor(rand((2, 3))), 2))
    with pytest.raises(NotImplementedError):
        F.adaptive_max_pool3d(tl.tensor([[[[[1]]]]], device=device), 1)


@pytest.mark.parametrize("nd,shape,kernel,out", [(2, (2, 3, 9, 10), (2, 3), (4, 5)), (2, (3, 7, 7), 2, (3, 3)),
                                                 (3, (2, 2, 6, 7, 8), (2, 3, 2), (3, 4, 5))])
def test_fractional_max_pool(torch, device, nd, shape, kernel, out):
    n, c = (shape[0], shape[1]) if len(shape) == nd + 2 else (1, shape[0])
    s = np.random.default_rng(3).random((n, c, nd))
    x = rand(shape, 8)
    fn = f"fractional_max_pool{nd}d"
    ours, theirs = leaf(torch, device, x)
    y = getattr(F, fn)(ours, kernel, output_size=out, return_indices=True, _random_samples=tl.tensor(s, device=device))
    ty = getattr(torch.nn.functional, fn)(theirs, kernel, output_size=out, return_indices=True,
                                          _random_samples=torch.tensor(s))
    _close(y[0], ty[0])
    _close(y[1], ty[1])
    g = rand(tuple(ty[0].shape), 2)
    y[0].backward(tl.tensor(g, device=device))
    ty[0].backward(torch.tensor(g))
    _close(ours.grad, theirs.grad)


def test_fractional_errors_and_ratio(torch, device):
    x = tl.tensor(rand((1, 2, 8, 8)), device=device)
    with pytest.raises(ValueError):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError):
        F.fractional_max_pool2d(x, 5, output_size=6, _random_samples=tl.rand(1, 2, 2, dtype=tl.float64, device=device))
    y = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5))
    assert tuple(y.shape) == (1, 2, 4, 4)


def test_max_pool2d_with_indices_backward(torch, device):
    x = rand((2, 3, 7, 6), 3)
    tx = torch.tensor(x)
    out, idx = torch.nn.functional.max_pool2d(tx, 3, 2, 1, ceil_mode=True, return_indices=True)
    g = rand(tuple(out.shape), 4)
    want = torch.ops.aten.max_pool2d_with_indices_backward(torch.tensor(g), tx, [3, 3], [2, 2], [1, 1], [1, 1], True,
                                                           idx)
    got = tl.max_pool2d_with_indices_backward(tl.tensor(g, device=device), tl.tensor(x, device=device), [3, 3], [2, 2],
                                              [1, 1], [1, 1], True, tl.tensor(idx.numpy(), device=device))
    _close(got, want)


def test_gradcheck_float64(device):
    x = tl.tensor(rand((1, 2, 4, 5, 4), 11), device=device, requires_grad=True)
    w = tl.tensor(rand((2, 2, 2, 2, 2), 12), device=device, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: F.conv3d(a, b, stride=2, padding=1), (x, w))
    assert tl.autograd.gradcheck(lambda a, b: F.conv_transpose3d(a, b, stride=2, padding=1, output_padding=1), (x, w))
    assert tl.autograd.gradcheck(lambda a: F.max_pool3d(a, 2, 1, 1), (x,))
    assert tl.autograd.gradcheck(lambda a: F.avg_pool3d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,))
    assert tl.autograd.gradcheck(lambda a: F.adaptive_max_pool3d(a, (3, 2, 3)), (x,))
    assert tl.autograd.gradcheck(lambda a: F.adaptive_avg_pool3d(a, (3, 2, 3)), (x,))


def test_modules(torch, device):
    torch.manual_seed(0)
    pairs = [
        (nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, padding_mode="circular", bias=False),
         torch.nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, padding_mode="circular", bias=False)),
        (nn.ConvTranspose3d(2, 4, 2, stride=2, groups=2), torch.nn.ConvTranspose3d(2, 4, 2, stride=2, groups=2)),
        (nn.MaxPool3d(2, return_indices=True), torch.nn.MaxPool3d(2, return_indices=True)),
        (nn.AvgPool3d(3, 2, 1, count_include_pad=False), torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
        (nn.AdaptiveAvgPool3d((2, 3, 1)), torch.nn.AdaptiveAvgPool3d((2, 3, 1))),
        (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2)),
    ]
    x = rand((2, 2, 4, 6, 4), 1)
    for ours, theirs in pairs:
        ours.to(device=device, dtype=tl.float64)
        theirs.double()
        assert list(ours.state_dict()) == list(theirs.state_dict())
        ours.load_state_dict({k: tl.tensor(v.detach().numpy(), device=device) for k, v in theirs.state_dict().items()})
        y, ty = ours(tl.tensor(x, device=device)), theirs(torch.tensor(x))
        if isinstance(ty, tuple):
            _close(y[1], ty[1])
            y, ty = y[0], ty[0]
        _close(y, ty)
    s = tl.tensor(np.random.default_rng(0).random((2, 2, 2)), device=device)
    frac = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=s)
    tfrac = torch.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=torch.tensor(s.cpu().numpy()))
    assert list(frac.state_dict()) == list(tfrac.state_dict())
    _close(frac(tl.tensor(x[:, :, 0], device=device)), tfrac(torch.tensor(x[:, :, 0])))
    with pytest.raises(ValueError):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)
    y, idx = nn.MaxPool3d(2, return_indices=True)(tl.tensor(x, device=device))
    ty, tidx = torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(x))
    _close(nn.MaxUnpool3d(2)(y, idx), torch.nn.MaxUnpool3d(2)(ty, tidx))
