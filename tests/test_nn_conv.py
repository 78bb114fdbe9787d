"""Convolutions against torch: F.conv1d/conv2d/conv_transpose1d/conv_transpose2d, F.unfold/fold and
the Conv/ConvTranspose/Unfold/Fold modules — outputs, input/weight/bias gradients, double
backward, odd geometries (stride, padding incl. 'same'/'valid', dilation, groups, batch of one,
empty batch), non-contiguous and channels-last inputs, float16/bfloat16 (float32 accumulation),
padding modes, torch's errors, the im2col/col2im kernels for every dtype and index width, and a
small convnet trained a few steps on tensorlab and on torch from the same weights."""
from __future__ import annotations

import math

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
    tol = tol or F64
    got = _np(ours)
    want = theirs.detach().float().numpy() if str(theirs.dtype) in ("torch.float16", "torch.bfloat16") else \
        theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, **tol)


def _backward_both(y, ty, seed=9):
    g = _rand(tuple(ty.shape), seed, str(ty.dtype).replace("torch.", ""))
    y.backward(tl.tensor(g, device=y.device))
    ty.backward(__import__("torch").tensor(g))


# -- conv2d ------------------------------------------------------------------------------------------
CONV2D = [  # (input shape, weight shape, kwargs)
    ((2, 4, 7, 6), (6, 4, 3, 3), {}),
    ((2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    ((1, 3, 5, 5), (3, 1, 3, 3), dict(padding=1, groups=3)),                   # depthwise, batch of one
    ((2, 2, 6, 5), (4, 2, 2, 3), dict(padding="same", dilation=(2, 1))),     # 'same' with an even kernel
    ((2, 2, 6, 5), (4, 2, 3, 3), dict(padding="valid", stride=3)),
    ((2, 3, 4, 4), (5, 3, 1, 1), {}),                                         # 1x1: no im2col
    ((2, 3, 4, 4), (5, 3, 1, 1), dict(stride=2)),
    ((0, 3, 5, 5), (4, 3, 3, 3), dict(padding=1)),                           # empty batch
    ((3, 6, 5), (4, 3, 3, 2), dict(stride=(1, 2), padding=(0, 1))),          # unbatched
]


@pytest.mark.parametrize("shapes", CONV2D, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_torch_with_gradients(device, torch, shapes, bias):
    xs, ws, kw = shapes
    x, tx = _leaf(torch, device, _rand(xs, 1))
    w, tw = _leaf(torch, device, _rand(ws, 2))
    b, tb = _leaf(torch, device, _rand((ws[0],), 3)) if bias else (None, None)
    y, ty = F.conv2d(x, w, b, **kw), torch.nn.functional.conv2d(tx, tw, tb, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    _close(x.grad, tx.grad)
    _close(w.grad, tw.grad)
    if bias:
        _close(b.grad, tb.grad)


def test_conv2d_noncontiguous_and_channels_last_inputs(device, torch):
    arr = _rand((2, 3, 6, 7), 4)
    w, tw = _leaf(torch, device, _rand((4, 3, 3, 2), 5))
    x, tx = _leaf(torch, device, arr, channels_last=True)
    _close(F.conv2d(x, w, stride=(1, 2), padding=1), torch.nn.functional.conv2d(tx, tw, stride=(1, 2), padding=1))
    big = _rand((2, 3, 12, 9), 6)
    xs, txs = tl.tensor(big, device=device)[:, :, ::2, 1:8], torch.tensor(big)[:, :, ::2, 1:8]
    wt = tl.tensor(_rand((3, 4, 2, 3), 7), device=device).transpose(0, 1)  # a non-contiguous weight
    _close(F.conv2d(xs, wt, dilation=2), torch.nn.functional.conv2d(txs, torch.tensor(_rand((3, 4, 2, 3), 7))
                                                                   .transpose(0, 1), dilation=2))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv2d_half_types_accumulate_in_float32(device, torch, dtype):
    xa, wa, ba = _rand((2, 3, 6, 6), 1, "float32"), _rand((4, 3, 3, 3), 2, "float32"), _rand((4,), 3, "float32")
    tdt = getattr(torch, dtype)
    x, w, b = (tl.tensor(a, device=device).to(getattr(tl, dtype)) for a in (xa, wa, ba))
    y = F.conv2d(x, w, b, padding=1)
    assert y.dtype is getattr(tl, dtype)
    # the reference: the rounded operands convolved in float32, rounded once
    ref = torch.nn.functional.conv2d(*(torch.tensor(a).to(tdt).float() for a in (xa, wa)), padding=1)
    ref = (ref + torch.tensor(ba).to(tdt).float().view(1, 4, 1, 1)).to(tdt)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == "float16" else dict(rtol=2e-2, atol=5e-2)
    _close(y, ref, **tol)
    ty = torch.nn.functional.conv2d(*(torch.tensor(a).to(tdt) for a in (xa, wa, ba)), padding=1)
    _close(y, ty, **tol)


def test_conv2d_int64_as_torch(device, torch):
    xa = np.random.default_rng(0).integers(-5, 5, (2, 3, 5, 5))
    wa = np.random.default_rng(1).integers(-3, 3, (4, 3, 2, 2))
    y = F.conv2d(tl.tensor(xa, device=device), tl.tensor(wa, device=device), stride=2, padding=1)
    ty = torch.nn.functional.conv2d(torch.tensor(xa), torch.tensor(wa), stride=2, padding=1)
    assert y.dtype is tl.int64
    np.testing.assert_array_equal(y.cpu().numpy(), ty.numpy())


# -- conv1d ------------------------------------------------------------------------------------------
CONV1D = [
    ((2, 4, 9), (6, 4, 3), {}),
    ((2, 4, 9), (6, 2, 2), dict(stride=2, padding=1, dilation=3, groups=2)),
    ((1, 3, 8), (3, 3, 4), dict(padding="same")),
    ((3, 7), (2, 3, 3), dict(padding="valid")),
    ((0, 3, 7), (2, 3, 3), {}),
]


@pytest.mark.parametrize("shapes", CONV1D, ids=str)
def test_conv1d_matches_torch_with_gradients(device, torch, shapes):
    xs, ws, kw = shapes
    x, tx = _leaf(torch, device, _rand(xs, 1))
    w, tw = _leaf(torch, device, _rand(ws, 2))
    b, tb = _leaf(torch, device, _rand((ws[0],), 3))
    y, ty = F.conv1d(x, w, b, **kw), torch.nn.functional.conv1d(tx, tw, tb, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, ta.grad)


# -- transposed convolutions ---------------------------------------------------------------------------
CONVT2D = [
    ((2, 4, 5, 4), (4, 3, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))),
    ((1, 2, 3, 3), (2, 2, 2, 2), dict(stride=(3, 2), output_padding=(2, 1))),
    ((2, 3, 3), (2, 2, 3, 3), dict(padding=1)),
    ((0, 2, 3, 3), (2, 2, 3, 3), {}),
]


@pytest.mark.parametrize("shapes", CONVT2D, ids=str)
def test_conv_transpose2d_matches_torch_with_gradients(device, torch, shapes):
    xs, ws, kw = shapes
    x, tx = _leaf(torch, device, _rand(xs, 1))
    w, tw = _leaf(torch, device, _rand(ws, 2))
    b, tb = _leaf(torch, device, _rand((ws[1] * kw.get("groups", 1),), 3))
    y, ty = F.conv_transpose2d(x, w, b, **kw), torch.nn.functional.conv_transpose2d(tx, tw, tb, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, ta.grad)


def test_conv_transpose1d_matches_torch(device, torch):
    x, tx = _leaf(torch, device, _rand((2, 4, 6), 1))
    w, tw = _leaf(torch, device, _rand((4, 1, 3), 2))
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    y, ty = F.conv_transpose1d(x, w, None, **kw), torch.nn.functional.conv_transpose1d(tx, tw, None, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    _close(x.grad, tx.grad)
    _close(w.grad, tw.grad)


# -- double backward and gradcheck ---------------------------------------------------------------------
def test_conv2d_double_backward_matches_torch(device, torch):
    x, tx = _leaf(torch, device, _rand((1, 2, 5, 4), 1))
    w, tw = _leaf(torch, device, _rand((3, 2, 2, 3), 2))
    kw = dict(stride=(2, 1), padding=1)
    (gx,) = tl.autograd.grad(F.conv2d(x, w, **kw).pow(2).sum(), (x,), create_graph=True)
    (tgx,) = torch.autograd.grad(torch.nn.functional.conv2d(tx, tw, **kw).pow(2).sum(), (tx,), create_graph=True)
    _close(gx, tgx)
    (gw,) = tl.autograd.grad(gx.sin().sum(), (w,))
    (tgw,) = torch.autograd.grad(tgx.sin().sum(), (tw,))
    _close(gw, tgw)


@pytest.mark.parametrize("fn", ["conv2d", "conv_transpose2d", "unfold", "fold"])
def test_gradcheck_float64(device, fn):
    rng = np.random.default_rng(3)

    def leaf(*shape):
        return tl.tensor(rng.standard_normal(shape), device=device).requires_grad_()
    if fn == "conv2d":
        args, f = (leaf(1, 2, 4, 5), leaf(2, 1, 2, 3), leaf(2)), \
            lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=(2, 1), groups=2)
    elif fn == "conv_transpose2d":
        args, f = (leaf(1, 2, 3, 3), leaf(2, 2, 2, 3), leaf(2)), \
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1)
    elif fn == "unfold":
        args, f = (leaf(1, 2, 4, 4),), lambda x: F.unfold(x, (2, 3), padding=1, stride=2)
    else:
        args, f = (leaf(1, 8, 12),), lambda x: F.fold(x, (4, 5), 2, stride=(2, 1), padding=(1, 0))
    assert tl.autograd.gradcheck(f, args)


# -- unfold / fold -------------------------------------------------------------------------------------
UNFOLD = [((2, 3, 6, 5), dict(kernel_size=2)),
          ((2, 3, 6, 5), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))),
          ((3, 4, 4), dict(kernel_size=3, padding=1)),
          ((0, 3, 4, 4), dict(kernel_size=3))]


@pytest.mark.parametrize("shape,kw", UNFOLD, ids=str)
def test_unfold_fold_match_torch(device, torch, shape, kw):
    x, tx = _leaf(torch, device, _rand(shape, 1))
    u, tu = F.unfold(x, **kw), torch.nn.functional.unfold(tx, **kw)
    _close(u, tu)
    size = shape[-2:]
    f, tf = F.fold(u, size, **kw), torch.nn.functional.fold(tu, size, **kw)
    _close(f, tf)
    _backward_both(f, tf)
    _close(x.grad, tx.grad)
    m, tm = nn.Unfold(**kw), torch.nn.Unfold(**kw)
    assert repr(m) == repr(tm)
    _close(m(x), tm(tx))
    fm, tfm = nn.Fold(size, **kw), torch.nn.Fold(size, **kw)
    assert repr(fm) == repr(tfm)
    _close(fm(u), tfm(tu))


# -- the kernels: every dtype, both index widths ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_im2col_col2im_floating_kernels(device, index, torch, dtype):
    arr = _rand((2, 3, 5, 4), 1, "float32")
    x = tl.tensor(arr, device=device).to(getattr(tl, dtype))
    tx = torch.tensor(arr).to(getattr(torch, dtype))
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=(1, 2), stride=(2, 1))
    u, tu = F.unfold(x, **kw), torch.nn.functional.unfold(tx, **kw)
    np.testing.assert_array_equal(_np(u), tu.float().numpy())  # a gather: exact
    f = F.fold(u, (5, 4), **kw)
    ref = torch.nn.functional.fold(tu.float(), (5, 4), **kw).to(getattr(torch, dtype))  # float32 sums, one rounding
    np.testing.assert_array_equal(_np(f), ref.float().numpy())


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_im2col_integer_kernels_through_conv2d(device, index, torch, dtype):
    xa = np.random.default_rng(0).integers(0, 4, (1, 2, 4, 5)).astype(dtype)
    wa = np.random.default_rng(1).integers(0, 3, (3, 2, 2, 2)).astype(dtype)
    y = F.conv2d(tl.tensor(xa, device=device), tl.tensor(wa, device=device), padding=1, stride=(1, 2))
    ty = torch.nn.functional.conv2d(torch.tensor(xa), torch.tensor(wa), padding=1, stride=(1, 2))
    assert y.dtype is getattr(tl, dtype)
    np.testing.assert_array_equal(y.cpu().numpy(), ty.numpy())


# -- modules ---------------------------------------------------------------------------------------------
def _copy_params(m, tm, device):
    with tl.no_grad():
        m.weight.copy_(tl.tensor(tm.weight.detach().numpy(), device=device))
        if tm.bias is not None:
            m.bias.copy_(tl.tensor(tm.bias.detach().numpy(), device=device))


MODULES = [
    ("Conv2d", (4, 6, 3), dict(padding=1, padding_mode="reflect"), (2, 4, 5, 6)),
    ("Conv2d", (4, 6, (3, 2)), dict(padding=(2, 1), padding_mode="replicate", stride=2, groups=2), (2, 4, 5, 6)),
    ("Conv2d", (4, 6, 3), dict(padding=2, padding_mode="circular", dilation=2, bias=False), (2, 4, 5, 6)),
    ("Conv2d", (4, 6, 2), dict(padding="same", padding_mode="reflect"), (1, 4, 5, 6)),
    ("Conv2d", (2, 4, 3), dict(), (2, 5, 5)),
    ("Conv1d", (4, 6, 3), dict(padding=1, padding_mode="circular"), (2, 4, 7)),
    ("Conv1d", (4, 2, 4), dict(padding="same", dilation=2, groups=2), (2, 4, 7)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 4)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, bias=False), (2, 4, 5)),
]


@pytest.mark.parametrize("name,args,kw,xs", MODULES, ids=str)
def test_conv_modules_match_torch(device, torch, name, args, kw, xs):
    tm = getattr(torch.nn, name)(*args, **kw).double()
    m = getattr(nn, name)(*args, **kw, device=device, dtype=tl.float64)
    assert repr(m) == repr(tm)
    assert m._reversed_padding_repeated_twice == tm._reversed_padding_repeated_twice
    assert tuple(m.weight.shape) == tuple(tm.weight.shape)
    assert (m.bias is None) == (tm.bias is None)
    _copy_params(m, tm, device)
    x, tx = _leaf(torch, device, _rand(xs, 4))
    y, ty = m(x), tm(tx)
    _close(y, ty)
    _backward_both(y, ty)
    _close(x.grad, tx.grad)
    _close(m.weight.grad, tm.weight.grad)
    if tm.bias is not None:
        _close(m.bias.grad, tm.bias.grad)


def test_conv_transpose2d_output_size(device, torch):
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, device=device, dtype=tl.float64)
    _copy_params(m, tm, device)
    x, tx = _leaf(torch, device, _rand((1, 2, 4, 4), 1))
    for size in ([8, 8], [7, 8], [1, 3, 8, 7]):
        _close(m(x, output_size=size), tm(tx, output_size=size))
    with pytest.raises(ValueError):
        tm(tx, output_size=[9, 9])
    with pytest.raises(ValueError, match="requested an output size"):
        m(x, output_size=[9, 9])


def test_conv_default_init_bounds(device):
    tl.manual_seed(0)
    m = nn.Conv2d(3, 8, (3, 5), groups=1, device=device)
    bound = 1 / math.sqrt(3 * 3 * 5)  # kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w, b = _np(m.weight), _np(m.bias)
    assert w.shape == (8, 3, 3, 5) and b.shape == (8,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound and np.abs(b).std() > 0
    t = nn.ConvTranspose2d(4, 6, 3, groups=2, device=device)
    assert tuple(t.weight.shape) == (4, 3, 3, 3)
    assert np.abs(_np(t.weight)).max() <= 1 / math.sqrt(3 * 9)  # fan_in is weight.size(1) * kernel


@pytest.mark.parametrize("kw", [dict(groups=0), dict(groups=3), dict(groups=2, out=5), dict(padding="full"),
                                dict(padding="same", stride=2), dict(padding_mode="mirror")], ids=str)
def test_conv_module_constructor_errors(torch, kw):
    kw = dict(kw)
    out = kw.pop("out", 4)
    with pytest.raises(ValueError) as theirs:
        torch.nn.Conv2d(4, out, 3, **kw)
    with pytest.raises(ValueError) as ours:
        nn.Conv2d(4, out, 3, **kw)
    # the messages print a set of choices, whose order is the hash seed's
    def words(e):
        return sorted(str(e.value).translate(str.maketrans(",{}", "   ")).split())
    assert words(ours) == words(theirs)


def test_conv_transpose_refuses_padding_modes(torch):
    with pytest.raises(ValueError) as theirs:
        torch.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError) as ours:
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    assert str(ours.value) == str(theirs.value)


# -- errors ---------------------------------------------------------------------------------------------------
ERRORS = [  # (function, input shape, weight shape, kwargs, input dtype, weight dtype)
    ("conv2d", (2, 4, 5, 5), (6, 3, 3, 3), {}, "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 2, 3, 3), dict(groups=3), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (5, 2, 3, 3), dict(groups=2), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 7, 7), {}, "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(dilation=3), "float32", "float32"),
    ("conv2d", (5, 5), (6, 4, 3, 3), {}, "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3), {}, "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(stride=0), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(padding=-1), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(dilation=0), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(groups=0), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(stride=(1, 2, 3)), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(padding="same", stride=2), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), dict(padding="foo"), "float32", "float32"),
    ("conv2d", (2, 4, 5, 5), (6, 4, 3, 3), {}, "float64", "float32"),
    ("conv1d", (2, 4, 5, 5), (6, 4, 3), {}, "float32", "float32"),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), dict(output_padding=1), "float32", "float32"),
    ("conv_transpose2d", (2, 4, 5, 5), (3, 3, 3, 3), {}, "float32", "float32"),
]


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_conv_errors_match_torch(device, torch, case):
    fn, xs, ws, kw, xd, wd = case
    x, w = tl.zeros(xs, dtype=getattr(tl, xd), device=device), tl.zeros(ws, dtype=getattr(tl, wd), device=device)
    tx, tw = torch.zeros(xs, dtype=getattr(torch, xd)), torch.zeros(ws, dtype=getattr(torch, wd))
    raises_like(lambda: getattr(F, fn)(x, w, **kw), lambda: getattr(torch.nn.functional, fn)(tx, tw, **kw))


def test_conv_bias_errors_match_torch(device, torch):
    x, w = tl.zeros((2, 4, 5, 5), device=device), tl.zeros((6, 4, 3, 3), device=device)
    tx, tw = torch.zeros(2, 4, 5, 5), torch.zeros(6, 4, 3, 3)
    raises_like(lambda: F.conv2d(x, w, tl.zeros(5, device=device)),
                 lambda: torch.nn.functional.conv2d(tx, tw, torch.zeros(5)))
    raises_like(lambda: F.conv2d(x, w, tl.zeros(6, dtype=tl.float64, device=device)),
                 lambda: torch.nn.functional.conv2d(tx, tw, torch.zeros(6, dtype=torch.float64)))


UNFOLD_ERRORS = [
    ("unfold", (2, 4, 5, 5), dict(kernel_size=3, padding=-1)),
    ("unfold", (2, 4, 5, 5), dict(kernel_size=7)),
    ("unfold", (5, 5), dict(kernel_size=2)),
    ("fold", (2, 35, 9), dict(output_size=(5, 5), kernel_size=3)),
    ("fold", (2, 36, 8), dict(output_size=(5, 5), kernel_size=3)),
]


@pytest.mark.parametrize("case", UNFOLD_ERRORS, ids=str)
def test_unfold_fold_errors_match_torch(device, torch, case):
    fn, shape, kw = case
    x, tx = tl.zeros(shape, device=device), torch.zeros(shape)
    raises_like(lambda: getattr(F, fn)(x, **kw), lambda: getattr(torch.nn.functional, fn)(tx, **kw))


def test_unfold_refuses_integers_as_torch(device, torch):
    raises_like(lambda: F.unfold(tl.zeros((1, 2, 3, 3), dtype=tl.int64, device=device), 2),
                 lambda: torch.nn.functional.unfold(torch.zeros(1, 2, 3, 3, dtype=torch.int64), 2))


# -- acceptance: a small convnet trains like torch's ------------------------------------------------------------
class _Net:
    """Conv2d-ReLU-MaxPool2d-Conv2d-ReLU-AdaptiveAvgPool2d-flatten-Linear, for either library."""

    def __init__(self, lib, **kw):
        n = lib.nn
        self.layers = [n.Conv2d(1, 4, 3, padding=1, **kw), n.ReLU(), n.MaxPool2d(2), n.Conv2d(4, 8, 3, **kw),
                       n.ReLU(), n.AdaptiveAvgPool2d(1)]
        self.fc = n.Linear(8, 10, **kw)

    def params(self):
        return [self.layers[0].weight, self.layers[0].bias, self.layers[3].weight, self.layers[3].bias,
                self.fc.weight, self.fc.bias]

    def __call__(self, x):
        for m in self.layers:
            x = m(x)
        return self.fc(x.reshape(x.shape[0], 8))


def test_small_convnet_trains_like_torch(device, torch):
    side, batch = (28, 8) if device == "cpu" else (8, 2)  # the emulation driver runs kernels on the CPU: tiny
    torch.manual_seed(0)
    tnet = _Net(torch)
    net = _Net(tl, device=device)
    with tl.no_grad():
        for p, tp in zip(net.params(), tnet.params()):
            p.copy_(tl.tensor(tp.detach().numpy(), device=device))
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, batch, 1, side, side)).astype("float32")
    ys = rng.integers(0, 10, (5, batch))
    opt = tl.optim.SGD(net.params(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(tnet.params(), lr=0.1, momentum=0.9)
    losses, tlosses = [], []
    for step in range(5):
        loss = F.cross_entropy(net(tl.tensor(xs[step], device=device)), tl.tensor(ys[step], device=device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        tloss = torch.nn.functional.cross_entropy(tnet(torch.tensor(xs[step])), torch.tensor(ys[step]))
        topt.zero_grad()
        tloss.backward()
        topt.step()
        losses.append(loss.item())
        tlosses.append(tloss.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-4, atol=1e-5)
    assert losses[0] != losses[-1]
    for p, tp in zip(net.params(), tnet.params()):
        np.testing.assert_allclose(_np(p), tp.detach().numpy(), rtol=1e-3, atol=1e-4)


def test_channels_last_sources_give_channels_last_results(device, torch):
    """torch's memory-format rule: a channels-last input (or convolution weight) gives a
    channels-last result, for convolutions, pools and interpolation alike."""
    x = tl.tensor(_rand((2, 4, 5, 5), 1), device=device)
    w = tl.tensor(_rand((6, 4, 3, 3), 2), device=device)
    xc, wc = x.contiguous(memory_format=tl.channels_last), w.contiguous(memory_format=tl.channels_last)
    wt = tl.tensor(_rand((4, 3, 3, 3), 3), device=device)
    cases = [(F.conv2d(xc, w), True), (F.conv2d(x, wc), True), (F.conv2d(x, w), False),
             (F.conv_transpose2d(xc, wt), True), (F.max_pool2d(xc, 2), True), (F.max_pool2d(xc, 2, return_indices=True)[1], True),
             (F.avg_pool2d(xc, 2), True), (F.adaptive_avg_pool2d(xc, 2), True), (F.adaptive_max_pool2d(xc, 2), True),
             (F.interpolate(xc, scale_factor=2), True), (F.interpolate(xc, scale_factor=2, mode="bilinear"), True),
             (F.max_pool2d(x, 2), False)]
    for y, cl in cases:
        assert y.is_contiguous(memory_format=tl.channels_last) is cl or (cl is False and y.is_contiguous())
        assert y.is_contiguous() is not cl
    xt = torch.tensor(_rand((2, 4, 5, 5), 1)).contiguous(memory_format=torch.channels_last)
    _close(F.conv2d(xc, w), torch.nn.functional.conv2d(xt, torch.tensor(_rand((6, 4, 3, 3), 2))))


@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d", "max_pool2d", "fold"])
def test_injected_faults_leave_inputs_unchanged(device, op):
    """Every allocation, copy and launch of a layer's forward may fail: the inputs keep their
    values and metadata, and the same call then succeeds with the same result."""
    from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot
    x = tl.tensor(_rand((1, 2, 4, 5), 1), device=device)
    w = tl.tensor(_rand((2, 2, 2, 3), 2), device=device)
    b = tl.tensor(_rand((2,), 3), device=device)
    fns = {"conv2d": lambda: F.conv2d(x, w, b, padding=1),
           "conv_transpose2d": lambda: F.conv_transpose2d(x, w, b, stride=2),
           "max_pool2d": lambda: F.max_pool2d(x, 2, 1, 1, return_indices=True)[1],
           "fold": lambda: F.fold(x.reshape(1, 4, 10), (3, 6), 2)}
    fn = fns[op]
    want = _np(fn())
    points = fault_points(fn)
    assert points
    for kind, n in points:
        snap = snapshot(x, w, b)
        with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
            fn()
        assert plan.fired
        assert_unchanged(snap)
        np.testing.assert_array_equal(_np(fn()), want)


def _random_conv_cases(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        g = int(rng.choice([1, 1, 2, 3]))
        cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        kw = dict(stride=tuple(int(v) for v in rng.integers(1, 4, 2)), dilation=tuple(int(v) for v in rng.integers(1, 3, 2)),
                  groups=g)
        kw["padding"] = "same" if rng.random() < 0.15 else tuple(int(v) for v in rng.integers(0, 3, 2))
        if kw["padding"] == "same":
            kw["stride"] = (1, 1)
        shape = (int(rng.integers(0, 3)), cin, int(rng.integers(1, 8)), int(rng.integers(1, 8)))
        out.append((shape, (cout, cin // g) + k, kw))
    return out


@pytest.mark.parametrize("case", _random_conv_cases(24, 11), ids=str)
def test_conv2d_random_geometries_match_torch(device, torch, case):
    """Random shapes, kernels, strides, paddings, dilations and groups: the same result and gradients
    as torch, or the same exception type where torch refuses (a kernel larger than the padded input)."""
    xs, ws, kw = case
    x, tx = _leaf(torch, device, _rand(xs, 1))
    w, tw = _leaf(torch, device, _rand(ws, 2))
    b, tb = _leaf(torch, device, _rand((ws[0],), 3))
    try:
        ty = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            F.conv2d(x, w, b, **kw)
        return
    y = F.conv2d(x, w, b, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, ta.grad)


@pytest.mark.parametrize("case", _random_conv_cases(16, 12), ids=str)
def test_conv_transpose2d_random_geometries_match_torch(device, torch, case):
    xs, ws, kw = case
    if kw["padding"] == "same":
        kw["padding"] = 0
    kw["output_padding"] = tuple(min(p, max(s, d) - 1) for p, s, d in zip((1, 1), kw["stride"], kw["dilation"]))
    ws = (xs[1], ws[0] // kw["groups"]) + ws[2:]
    x, tx = _leaf(torch, device, _rand(xs, 1))
    w, tw = _leaf(torch, device, _rand(ws, 2))
    try:
        ty = torch.nn.functional.conv_transpose2d(tx, tw, **kw)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            F.conv_transpose2d(x, w, **kw)
        return
    y = F.conv_transpose2d(x, w, **kw)
    _close(y, ty)
    _backward_both(y, ty)
    _close(x.grad, tx.grad)
    _close(w.grad, tw.grad)


def test_operands_on_different_devices_are_refused(device):
    if device == "cpu":
        pytest.skip("needs a second device: the cuda parameter checks a CUDA input with CPU weights")
    x = tl.zeros((1, 2, 4, 4), device=device)
    w = tl.zeros((3, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.conv_transpose2d(x, w.transpose(0, 1))
