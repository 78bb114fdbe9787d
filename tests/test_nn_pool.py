"""Pooling against torch: F.max_pool1d/2d (indices, dilation, ceil_mode), F.avg_pool1d/2d
(count_include_pad, ceil_mode, divisor_override, integer inputs), F.adaptive_avg_pool1d/2d,
F.adaptive_max_pool1d/2d and their modules — values, indices, gradients, NaN/-inf/tie rules,
odd shapes, half types, non-contiguous and channels-last inputs, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F

from layers_oracle import leaf as _leaf, rand as _rand, raises_like

F64 = dict(rtol=1e-10, atol=1e-10)


def _np(t):
    return t.detach().cpu().float().numpy() if t.dtype in (tl.float16, tl.bfloat16) else t.detach().cpu().numpy()


def _close(ours, theirs, **tol):
    got = _np(ours)
    want = theirs.detach().float().numpy() if str(theirs.dtype) in ("torch.float16", "torch.bfloat16") else \
        theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, equal_nan=True, **(tol or F64))


def _check_with_grad(torch, device, fn, shape, kw, seed=1, channels_last=False):
    x, tx = _leaf(torch, device, _rand(shape, seed), channels_last)
    y, ty = getattr(F, fn)(x, **kw), getattr(torch.nn.functional, fn)(tx, **kw)
    if isinstance(ty, tuple):
        assert isinstance(y, tuple) and len(y) == 2
        _close(y[1], ty[1])
        assert y[1].dtype is tl.int64
        y, ty = y[0], ty[0]
    _close(y, ty)
    g = _rand(tuple(ty.shape), 9)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    _close(x.grad, tx.grad)


# -- max pooling -------------------------------------------------------------------------------------------
MAX2D = [
    ((2, 3, 7, 6), dict(kernel_size=2)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ((2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True,
                        return_indices=True)),
    ((1, 1, 5, 5), dict(kernel_size=(2, 3), stride=(3, 1), dilation=2, return_indices=True)),
    ((3, 5, 4), dict(kernel_size=2, return_indices=True)),
    ((0, 2, 4, 4), dict(kernel_size=2, return_indices=True)),
]


@pytest.mark.parametrize("shape,kw", MAX2D, ids=str)
def test_max_pool2d_matches_torch(device, torch, shape, kw):
    _check_with_grad(torch, device, "max_pool2d", shape, kw)


@pytest.mark.parametrize("shape,kw", [((2, 3, 9), dict(kernel_size=2)),
                                      ((2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                       return_indices=True)),
                                      ((3, 8), dict(kernel_size=2, dilation=3, return_indices=True)),
                                      ((2, 3, 9), dict(kernel_size=4, stride=1, padding=2, return_indices=True))],
                         ids=str)
def test_max_pool1d_matches_torch(device, torch, shape, kw):
    _check_with_grad(torch, device, "max_pool1d", shape, kw)


def test_max_pool2d_channels_last_and_strided_inputs(device, torch):
    _check_with_grad(torch, device, "max_pool2d", (2, 3, 6, 5), dict(kernel_size=3, stride=2, padding=1,
                                                                     return_indices=True), channels_last=True)
    arr = _rand((2, 3, 10, 9), 3)
    x, tx = tl.tensor(arr, device=device)[:, ::2, 1::2, ::2], torch.tensor(arr)[:, ::2, 1::2, ::2]
    for a, b in zip(F.max_pool2d(x, 2, return_indices=True), torch.nn.functional.max_pool2d(tx, 2,
                                                                                            return_indices=True)):
        _close(a, b)


def test_max_pool_nan_ties_and_all_lowest_windows_pick_torchs_index(device, torch):
    nan, inf = float("nan"), float("inf")
    for row, kw in (([1., nan, 3, nan, 2., 2.], dict(kernel_size=3, stride=1)),   # the last NaN
                    ([1., 5, 5, 1, 5, 5], dict(kernel_size=3, stride=1)),         # the first maximum
                    ([-inf] * 6, dict(kernel_size=3, stride=2, padding=1)),       # never a padding position
                    ([-inf, -inf, 2., -inf], dict(kernel_size=2, stride=1, padding=1, ceil_mode=True))):
        arr = np.array([[row]])
        y = F.max_pool1d(tl.tensor(arr, device=device), return_indices=True, **kw)
        ty = torch.nn.functional.max_pool1d(torch.tensor(arr), return_indices=True, **kw)
        _close(y[0], ty[0])
        _close(y[1], ty[1])
    arr = np.array([[[[1., 5, 5, 1, 5, 5]]]])
    y = F.adaptive_max_pool2d(tl.tensor(arr, device=device), (1, 4), return_indices=True)
    ty = torch.nn.functional.adaptive_max_pool2d(torch.tensor(arr), (1, 4), return_indices=True)
    _close(y[1], ty[1])


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_max_pool2d_integer_dtypes(device, index, torch, dtype):
    arr = np.random.default_rng(0).integers(0, 100, (2, 2, 5, 6)).astype(dtype)
    y = F.max_pool2d(tl.tensor(arr, device=device), 3, 2, 1, return_indices=True)
    ty = torch.nn.functional.max_pool2d(torch.tensor(arr), 3, 2, 1, return_indices=True)
    assert y[0].dtype is getattr(tl, dtype)
    _close(y[0], ty[0])
    _close(y[1], ty[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_pools_half_types(device, index, torch, dtype):
    arr = _rand((2, 3, 6, 7), 2, "float32")
    x = tl.tensor(arr, device=device).to(getattr(tl, dtype))
    tx = torch.tensor(arr).to(getattr(torch, dtype))
    y, ty = F.max_pool2d(x, 3, 2, 1, return_indices=True), torch.nn.functional.max_pool2d(tx, 3, 2, 1,
                                                                                          return_indices=True)
    _close(y[0], ty[0], rtol=0, atol=0)  # a selection: exact
    _close(y[1], ty[1])
    tol = dict(rtol=1e-2, atol=1e-2) if dtype != "float32" else dict(rtol=1e-6, atol=1e-6)
    for fn, kw in (("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
                   ("adaptive_avg_pool2d", dict(output_size=(4, 3))), ("adaptive_avg_pool2d", dict(output_size=1)),
                   ("adaptive_max_pool2d", dict(output_size=(4, 3)))):
        y, ty = getattr(F, fn)(x, **kw), getattr(torch.nn.functional, fn)(tx, **kw)
        assert y.dtype is getattr(tl, dtype)
        _close(y, ty, **tol)


# -- average pooling -------------------------------------------------------------------------------------------
AVG2D = [
    ((2, 3, 7, 6), dict(kernel_size=2)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ((2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), divisor_override=3)),
    ((3, 5, 4), dict(kernel_size=(2, 3), stride=1)),
    ((0, 2, 4, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("shape,kw", AVG2D, ids=str)
def test_avg_pool2d_matches_torch(device, torch, shape, kw):
    _check_with_grad(torch, device, "avg_pool2d", shape, kw)


@pytest.mark.parametrize("shape,kw", [((2, 3, 9), dict(kernel_size=2)),
                                      ((2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                                      ((3, 8), dict(kernel_size=3, padding=1, count_include_pad=False))], ids=str)
def test_avg_pool1d_matches_torch(device, torch, shape, kw):
    _check_with_grad(torch, device, "avg_pool1d", shape, kw)


def test_avg_pool2d_integers_truncate_as_torch(device, torch):
    arr = (np.arange(2 * 16).reshape(2, 1, 4, 4) * 3 - 40)
    for kw in (dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2, ceil_mode=True, stride=3,
                                                              count_include_pad=False)):
        y = F.avg_pool2d(tl.tensor(arr, device=device), **kw)
        ty = torch.nn.functional.avg_pool2d(torch.tensor(arr), **kw)
        assert y.dtype is tl.int64
        _close(y, ty)


# -- adaptive pooling ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 3, (4, 5), (7, 6), (None, 2), (0, 2), (9, 2)], ids=str)
def test_adaptive_pool2d_matches_torch(device, torch, size):
    if size == (0, 2):  # torch's backward refuses an empty result; ours gives the zero gradient
        for fn in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
            x = tl.ones((2, 3, 7, 6), device=device, requires_grad=True)
            y, ty = getattr(F, fn)(x, size), getattr(torch.nn.functional, fn)(torch.ones(2, 3, 7, 6), size)
            assert tuple(y.shape) == tuple(ty.shape) == (2, 3, 0, 2)
            y.sum().backward()
            np.testing.assert_array_equal(_np(x.grad), np.zeros((2, 3, 7, 6)))
        return
    _check_with_grad(torch, device, "adaptive_avg_pool2d", (2, 3, 7, 6), dict(output_size=size))
    _check_with_grad(torch, device, "adaptive_max_pool2d", (2, 3, 7, 6), dict(output_size=size,
                                                                              return_indices=True))


def test_adaptive_pool1d_and_unbatched(device, torch):
    _check_with_grad(torch, device, "adaptive_avg_pool1d", (2, 3, 7), dict(output_size=4))
    _check_with_grad(torch, device, "adaptive_max_pool1d", (3, 7), dict(output_size=3, return_indices=True))
    _check_with_grad(torch, device, "adaptive_avg_pool2d", (3, 5, 6), dict(output_size=(2, 4)))
    _check_with_grad(torch, device, "adaptive_max_pool2d", (0, 3, 5, 6), dict(output_size=(2, 4),
                                                                              return_indices=True))


def test_gradcheck_float64(device):
    rng = np.random.default_rng(3)
    x = tl.tensor(rng.standard_normal((1, 2, 5, 6)), device=device).requires_grad_()
    assert tl.autograd.gradcheck(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True), (x,))
    assert tl.autograd.gradcheck(lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False, ceil_mode=True), (x,))
    assert tl.autograd.gradcheck(lambda t: F.adaptive_avg_pool2d(t, (3, 4)), (x,))
    assert tl.autograd.gradcheck(lambda t: F.adaptive_max_pool2d(t, (3, 4)), (x,))


def test_pool_double_backward_matches_torch(device, torch):
    x, tx = _leaf(torch, device, _rand((1, 2, 5, 5), 1))
    (g,) = tl.autograd.grad(F.avg_pool2d(x, 3, 2, 1).pow(2).sum(), (x,), create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.avg_pool2d(tx, 3, 2, 1).pow(2).sum(), (tx,), create_graph=True)
    _close(g, tg)
    (gg,) = tl.autograd.grad(g.pow(2).sum(), (x,))
    (tgg,) = torch.autograd.grad(tg.pow(2).sum(), (tx,))
    _close(gg, tgg)


# -- modules --------------------------------------------------------------------------------------------------------
MODULES = [("MaxPool2d", (3,), dict(stride=2, padding=1, return_indices=True), (2, 3, 6, 5)),
           ("MaxPool2d", ((2, 3),), dict(dilation=(1, 2), ceil_mode=True), (2, 3, 6, 7)),
           ("MaxPool1d", (2,), dict(), (2, 3, 7)),
           ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False, divisor_override=None), (2, 3, 6, 5)),
           ("AvgPool2d", (2,), dict(divisor_override=3), (2, 3, 6, 5)),
           ("AvgPool1d", (3,), dict(stride=1, padding=1, ceil_mode=True), (2, 3, 7)),
           ("AdaptiveAvgPool2d", ((2, 3),), dict(), (2, 3, 6, 5)),
           ("AdaptiveAvgPool1d", (3,), dict(), (2, 3, 7)),
           ("AdaptiveMaxPool2d", ((None, 3),), dict(return_indices=True), (2, 3, 6, 5)),
           ("AdaptiveMaxPool1d", (3,), dict(return_indices=True), (2, 3, 7))]


@pytest.mark.parametrize("name,args,kw,shape", MODULES, ids=str)
def test_pool_modules_match_torch(device, torch, name, args, kw, shape):
    m, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(m) == repr(tm)
    x, tx = _leaf(torch, device, _rand(shape, 2))
    y, ty = m(x), tm(tx)
    if isinstance(ty, tuple):
        _close(y[1], ty[1])
        y, ty = y[0], ty[0]
    _close(y, ty)


# -- errors --------------------------------------------------------------------------------------------------------
ERRORS = [
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=2, padding=2)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=7)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=2, stride=0)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=0)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=0, stride=1)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=2, dilation=0)),
    ("max_pool2d", (5, 5), dict(kernel_size=2)),
    ("max_pool2d", (2, 0, 5, 5), dict(kernel_size=2)),
    ("max_pool2d", (2, 4, 5, 5), dict(kernel_size=(2, 2, 2))),
    ("max_pool1d", (2, 4, 7), dict(kernel_size=0, stride=1)),
    ("max_pool1d", (2, 4, 7), dict(kernel_size=2, stride=0)),
    ("max_pool1d", (2, 4, 7), dict(kernel_size=2, padding=2)),
    ("max_pool1d", (2, 4, 7), dict(kernel_size=9)),
    ("max_pool1d", (7,), dict(kernel_size=2)),
    ("max_pool1d", (2, 4, 7), dict(kernel_size=2, dilation=0)),
    ("avg_pool2d", (2, 4, 5, 5), dict(kernel_size=2, padding=2)),
    ("avg_pool2d", (2, 4, 5, 5), dict(kernel_size=7)),
    ("avg_pool2d", (2, 4, 5, 5), dict(kernel_size=0, stride=1)),
    ("avg_pool2d", (5, 5), dict(kernel_size=2)),
    ("avg_pool2d", (2, 0, 5, 5), dict(kernel_size=2)),
    ("avg_pool2d", (2, 4, 5, 5), dict(kernel_size=2, divisor_override=0)),
    ("avg_pool2d", (2, 4, 5, 5), dict(kernel_size=(2, 2, 2))),
    ("avg_pool1d", (2, 4, 7), dict(kernel_size=9)),
    ("avg_pool1d", (7,), dict(kernel_size=2)),
    ("adaptive_avg_pool2d", (2, 4, 5, 5), dict(output_size=(2, 2, 2))),
    ("adaptive_avg_pool2d", (2, 4, 5, 5), dict(output_size=-1)),
    ("adaptive_avg_pool2d", (5, 5), dict(output_size=2)),
    ("adaptive_max_pool2d", (5, 5), dict(output_size=2)),
    ("adaptive_avg_pool1d", (7,), dict(output_size=2)),
    ("adaptive_max_pool1d", (7,), dict(output_size=2)),
]


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_pool_errors_match_torch(device, torch, case):
    fn, shape, kw = case
    x, tx = tl.zeros(shape, device=device), torch.zeros(shape)
    raises_like(lambda: getattr(F, fn)(x, **kw), lambda: getattr(torch.nn.functional, fn)(tx, **kw))


@pytest.mark.parametrize("fn,dtype", [("max_pool2d", "bool"), ("avg_pool2d", "bool"),
                                      ("adaptive_avg_pool2d", "int64"), ("adaptive_max_pool2d", "int64")])
def test_pool_dtype_errors_match_torch(device, torch, fn, dtype):
    x, tx = tl.zeros((1, 2, 4, 4), dtype=getattr(tl, dtype), device=device), torch.zeros(1, 2, 4, 4,
                                                                                         dtype=getattr(torch, dtype))
    raises_like(lambda: getattr(F, fn)(x, 2), lambda: getattr(torch.nn.functional, fn)(tx, 2))


def test_max_pool_double_backward_matches_torch(device, torch):
    x, tx = _leaf(torch, device, _rand((1, 2, 6, 5), 1))
    (g,) = tl.autograd.grad(F.max_pool2d(x, 3, 2, 1).pow(2).sum(), (x,), create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.max_pool2d(tx, 3, 2, 1).pow(2).sum(), (tx,), create_graph=True)
    _close(g, tg)
    (gg,) = tl.autograd.grad((g * g.cos()).sum(), (x,))
    (tgg,) = torch.autograd.grad((tg * tg.cos()).sum(), (tx,))
    _close(gg, tgg)


def test_max_pool_grad_fn_names_and_overlapping_windows(device, torch):
    x, tx = _leaf(torch, device, _rand((2, 1, 5, 5), 2))
    y, ty = F.max_pool2d(x, 3, 1, 1), torch.nn.functional.max_pool2d(tx, 3, 1, 1)  # windows overlap: sums
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    _close(x.grad, tx.grad)


def _check_max_kernels_in_dtype(torch, device, dtype, shape, seed, fn, *args, **kw):
    """F.<fn>(x, *args, return_indices=True, **kw) in `dtype`: values and indices exactly torch's, and
    the gradient of a random upstream gradient."""
    arr = _rand(shape, seed, "float32")
    x = tl.tensor(arr, device=device).to(getattr(tl, dtype)).requires_grad_()
    tx = torch.tensor(arr).to(getattr(torch, dtype)).requires_grad_()
    (y, i), (ty, ti) = getattr(F, fn)(x, *args, return_indices=True, **kw), \
        getattr(torch.nn.functional, fn)(tx, *args, return_indices=True, **kw)
    _close(y, ty, rtol=0, atol=0)
    _close(i, ti)
    g = _rand(tuple(ty.shape), seed + 1, "float32")
    y.backward(tl.tensor(g, device=device).to(getattr(tl, dtype)))
    ty.backward(torch.tensor(g).to(getattr(torch, dtype)))
    # sums of at most a few terms, accumulated in float32 and rounded once: torch's half kernels may round per term
    tol = dict(rtol=0, atol=0) if dtype in ("float32", "float64") else dict(rtol=1e-2, atol=1e-2)
    _close(x.grad, tx.grad, **tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_max_pool_kernels_forward_backward_every_floating_dtype(device, index, torch, dtype):
    _check_max_kernels_in_dtype(torch, device, dtype, (2, 2, 5, 6), 5, "max_pool2d", kernel_size=(3, 2),
                                stride=(1, 2), padding=1, dilation=(2, 1))


def _random_pool_cases(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        kw = dict(kernel_size=k, stride=tuple(int(v) for v in rng.integers(1, 4, 2)),
                  padding=tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k), ceil_mode=bool(rng.random() < 0.5))
        shape = (int(rng.integers(0, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        out.append((shape, kw, int(rng.integers(1, 3))))
    return out


@pytest.mark.parametrize("case", _random_pool_cases(24, 21), ids=str)
def test_pools_random_geometries_match_torch(device, torch, case):
    """Random shapes, kernels, strides, paddings and ceil_mode: max pooling (with a random dilation,
    values, indices and gradients) and average pooling (both count_include_pad settings) as torch, or
    the same exception type where torch refuses."""
    shape, kw, dil = case
    for fn, extra in (("max_pool2d", dict(dilation=dil, return_indices=True)),
                      ("avg_pool2d", dict(count_include_pad=True)), ("avg_pool2d", dict(count_include_pad=False))):
        try:
            getattr(torch.nn.functional, fn)(torch.zeros(shape, dtype=torch.float64), **kw, **extra)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                getattr(F, fn)(tl.zeros(shape, dtype=tl.float64, device=device), **kw, **extra)
            continue
        _check_with_grad(torch, device, fn, shape, dict(kw, **extra))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_adaptive_max_pool_kernels_every_floating_dtype(device, index, torch, dtype):
    _check_max_kernels_in_dtype(torch, device, dtype, (2, 2, 7, 5), 7, "adaptive_max_pool2d", (4, 3))


def test_adaptive_max_pool_double_backward_matches_torch(device, torch):
    x, tx = _leaf(torch, device, _rand((1, 2, 7, 5), 1))
    (g,) = tl.autograd.grad(F.adaptive_max_pool2d(x, (3, 4)).pow(2).sum(), (x,), create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.adaptive_max_pool2d(tx, (3, 4)).pow(2).sum(), (tx,),
                                create_graph=True)
    _close(g, tg)
    (gg,) = tl.autograd.grad((g * g.cos()).sum(), (x,))
    (tgg,) = torch.autograd.grad((tg * tg.cos()).sum(), (tx,))
    _close(gg, tgg)


def test_cached_geometry_tensors_work_in_and_out_of_inference_mode(device, torch):
    """The divisors and averaging matrices are built once per geometry: one first built under
    inference_mode must still serve a later call that records autograd."""
    x = tl.tensor(_rand((1, 2, 7, 5), 3), device=device)
    with tl.inference_mode():
        F.adaptive_avg_pool2d(x, (3, 2))
        F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)
        F.interpolate(x, size=(4, 9), mode="bilinear")
    for fn, kw in (("adaptive_avg_pool2d", dict(output_size=(3, 2))),
                   ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
                   ("interpolate", dict(size=(4, 9), mode="bilinear"))):
        _check_with_grad(torch, device, fn, (1, 2, 7, 5), kw, seed=3)


def test_layers_do_not_wait_for_the_device(device):
    """Convolutions (padding modes too), pools and resampling, forward and backward, queue work
    without a host wait (geometry tensors are built once; geometry indices are in range by
    construction and never read back). On the CPU nothing ever waits: the trace is empty there too."""
    x = tl.tensor(_rand((2, 3, 8, 8), 1), device=device).requires_grad_()
    w = tl.tensor(_rand((4, 3, 3, 3), 2), device=device).requires_grad_()
    calls = [lambda: F.conv2d(x, w, padding=1, stride=2), lambda: F.conv_transpose2d(x, w.transpose(0, 1), stride=2),
             lambda: F.max_pool2d(x, 3, 2, 1), lambda: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
             lambda: F.adaptive_avg_pool2d(x, (3, 5)), lambda: F.adaptive_max_pool2d(x, (3, 5)),
             lambda: F.interpolate(x, scale_factor=1.5, mode="bilinear"), lambda: F.interpolate(x, size=(5, 11)),
             lambda: nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect", device=device, dtype=tl.float64)(x)]
    for fn in calls:
        fn().sum().backward()  # the first call builds the geometry tensors (an upload waits)
        with tl.cuda.sync_trace() as trace:
            fn().sum().backward()
        assert len(trace) == 0, str(trace)


@pytest.mark.parametrize("fn,args", [("max_pool1d_with_indices", (3, 2, 1)), ("max_pool2d_with_indices", (3, 2, 1)),
                                     ("adaptive_max_pool1d_with_indices", (4,)),
                                     ("adaptive_max_pool2d_with_indices", ((3, 2),))])
def test_with_indices_forms_return_pairs(device, torch, fn, args):
    shape = (2, 3, 7) if "1d" in fn else (2, 3, 7, 6)
    a = _rand(shape, 4)
    y, ty = getattr(F, fn)(tl.tensor(a, device=device), *args), getattr(torch.nn.functional, fn)(torch.tensor(a), *args)
    assert isinstance(y, tuple) and len(y) == 2
    _close(y[0], ty[0])
    _close(y[1], ty[1])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "uint8"])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(3, 3)),
                                dict(kernel_size=3, stride=1), dict(kernel_size=2, stride=2, dilation=2)], ids=str)
def test_max_pool2d_unpadded_windows_nan_ties_and_gradients(device, torch, dtype, kw):
    """Windows with every tap inside the input (the convnet's 2x2 pool, strides past the kernel,
    overlapping and dilated windows): values, indices (ties: the first maximum; NaN: the last one),
    and the input's gradient — a store where windows cannot share an element, a sum where they can."""
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 4, (2, 3, 7, 8)).astype(dtype)  # few distinct values: many ties
    if dtype.startswith("float"):
        arr[0, 0, 1, 1] = arr[0, 0, 0, 1] = arr[1, 2, 4, 5] = np.nan
        arr[0, 1, 2:4, 2:4] = -np.inf
    y = F.max_pool2d(tl.tensor(arr, device=device), return_indices=True, **kw)
    ty = torch.nn.functional.max_pool2d(torch.tensor(arr), return_indices=True, **kw)
    _close(y[0], ty[0], rtol=0, atol=0)
    _close(y[1], ty[1])
    if not dtype.startswith("float"):
        return
    x, tx = tl.tensor(arr, device=device).requires_grad_(True), torch.tensor(arr).requires_grad_(True)
    g = _rand(tuple(ty[0].shape), 4, "float32").astype(dtype)
    F.max_pool2d(x, **kw).backward(tl.tensor(g, device=device))
    torch.nn.functional.max_pool2d(tx, **kw).backward(torch.tensor(g))
    # each element gets its windows' gradients in window order (float16: summed in float32 and rounded
    # once, where torch rounds every partial sum of overlapping windows)
    _close(x.grad, tx.grad, **(dict(rtol=4e-3, atol=1e-3) if dtype == "float16" else dict(rtol=0, atol=0)))
