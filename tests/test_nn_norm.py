"""Normalization layers and their functional forms against torch: LayerNorm, RMSNorm, GroupNorm,
BatchNorm1d/2d (outputs, input and parameter gradients, running statistics, momentum=None,
train/eval, track_running_stats=False), F.normalize, errors, reduced-precision inputs, gradcheck."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F
from layers_oracle import close, close_grads, copy_weights, np_of, pair, randn


def _run(torch, device, tm, m, arr, grad=True):
    x, tx = pair(torch, device, arr, requires_grad=grad)
    y, ty = m(x), tm(tx)
    close(y, ty)
    if grad:
        g = randn(*arr.shape, seed=7)
        y.backward(tl.tensor(g, device=device))
        ty.backward(torch.tensor(g))
        close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
        close_grads(tm, m, rtol=1e-4, atol=1e-4)
    return y, ty


LAYERS = [
    ("LayerNorm", (8,), {}, (2, 5, 8)),
    ("LayerNorm", ((5, 8),), {"eps": 1e-3}, (2, 5, 8)),
    ("LayerNorm", (8,), {"bias": False}, (3, 8)),
    ("LayerNorm", (8,), {"elementwise_affine": False}, (1, 8)),
    ("RMSNorm", (8,), {}, (2, 5, 8)),
    ("RMSNorm", ([5, 8],), {"eps": 1e-4}, (2, 5, 8)),
    ("RMSNorm", (8,), {"elementwise_affine": False}, (4, 8)),
    ("GroupNorm", (2, 6), {}, (3, 6, 5)),
    ("GroupNorm", (3, 6), {"affine": False}, (2, 6, 2, 3)),
    ("GroupNorm", (1, 4), {"bias": False, "eps": 1e-3}, (1, 4, 7)),
]


@pytest.mark.parametrize("name,args,kw,shape", LAYERS, ids=lambda v: str(v))
def test_norm_layers_match_torch(device, torch, name, args, kw, shape):
    tm = getattr(torch.nn, name)(*args, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape))
    m = copy_weights(tm, getattr(nn, name)(*args, **kw), device)
    assert repr(m) == repr(tm)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _run(torch, device, tm, m, randn(*shape, scale=3) + 1.5)


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
def test_batchnorm_training_running_stats_and_eval(device, torch, cls, momentum):
    shape = (4, 3, 5) if cls == "BatchNorm1d" else (4, 3, 2, 3)
    tm = getattr(torch.nn, cls)(3, momentum=momentum)
    with torch.no_grad():
        tm.weight.copy_(torch.randn(3))
        tm.bias.copy_(torch.randn(3))
    m = copy_weights(tm, getattr(nn, cls)(3, momentum=momentum), device)
    assert repr(m) == repr(tm)
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()]
    for step in range(3):
        m.zero_grad()
        tm.zero_grad()
        _run(torch, device, tm, m, randn(*shape, scale=2, seed=step) + step)
        close(m.running_mean, tm.running_mean)
        close(m.running_var, tm.running_var)
        assert m.num_batches_tracked.item() == tm.num_batches_tracked.item() == step + 1
        assert m.num_batches_tracked.dtype is tl.int64
    m.eval()
    tm.eval()
    _run(torch, device, tm, m, randn(*shape, seed=9))
    close(m.running_mean, tm.running_mean)
    assert m.num_batches_tracked.item() == 3


def test_batchnorm_2d_input_and_no_tracking(device, torch):
    tm = torch.nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    m = nn.BatchNorm1d(4, affine=False, track_running_stats=False).to(device)
    assert m.running_mean is None and m.num_batches_tracked is None
    assert repr(m) == repr(tm)
    _run(torch, device, tm, m, randn(6, 4, scale=2))
    m.eval()
    tm.eval()
    _run(torch, device, tm, m, randn(5, 4, seed=3))  # still batch statistics without running ones


def test_batchnorm_errors(device, torch):
    m = nn.BatchNorm1d(3).to(device)
    with pytest.raises(ValueError, match=re.escape("Expected more than 1 value per channel when training, got input "
                                                   "size torch.Size([1, 3])")):
        m(tl.zeros(1, 3, device=device))
    with pytest.raises(ValueError, match=re.escape("expected 2D or 3D input (got 4D input)")):
        m(tl.zeros(2, 3, 1, 1, device=device))
    with pytest.raises(ValueError, match=re.escape("expected 4D input (got 3D input)")):
        nn.BatchNorm2d(3).to(device)(tl.zeros(2, 3, 4, device=device))
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(tl.zeros(2, 3, device=device), None, None, training=False)
    m.eval()
    out = m(tl.ones(1, 3, device=device))  # evaluation: a batch of one is fine
    close(out, torch.nn.BatchNorm1d(3).eval()(torch.ones(1, 3)))


def test_batch_norm_functional_no_running_stats(device, torch):
    arr = randn(5, 3, 4)
    w, b = randn(3, seed=1), randn(3, seed=2)
    x, tx = pair(torch, device, arr)
    ours = F.batch_norm(x, None, None, tl.tensor(w, device=device), tl.tensor(b, device=device), training=True)
    close(ours, torch.nn.functional.batch_norm(tx, None, None, torch.tensor(w), torch.tensor(b), training=True))


def test_layer_norm_errors(device):
    x = tl.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match=re.escape("Given normalized_shape=[5], expected input with shape [*, 5], "
                                                     "but got input of size[3, 4]")):
        F.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match=re.escape("Expected weight to be of same shape as normalized_shape, but got "
                                                     "weight of shape [3] and normalized_shape = [4]")):
        F.layer_norm(x, (4,), tl.ones(3, device=device))
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(tl.zeros(2, 6, 3, device=device), 4)
    with pytest.raises(ValueError, match=re.escape("num_channels (6) must be divisible by num_groups (4)")):
        nn.GroupNorm(4, 6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", ["layer_norm", "rms_norm", "group_norm"])
def test_reduced_precision_inputs(device, torch, fn, dtype):
    arr = randn(3, 4, 6, scale=2)
    x = tl.tensor(arr, device=device).to(getattr(tl, dtype))
    tx = torch.tensor(arr).to(getattr(torch, dtype))
    args = (2,) if fn == "group_norm" else ((6,),)
    y, ty = getattr(F, fn)(x, *args), getattr(torch.nn.functional, fn)(tx, *args)
    assert y.dtype is getattr(tl, dtype)
    close(y, ty, rtol=1e-2, atol=1e-2)


def test_normalize_matches_torch(device, torch):
    arr = randn(3, 5, 2)
    arr[1, :, 0] = 0  # a zero vector: eps keeps it finite
    for kw in ({}, {"p": 1.0, "dim": 2}, {"dim": -1, "eps": 0.5}, {"p": 3.0, "dim": 0}):
        x, tx = pair(torch, device, arr, requires_grad=True)
        y, ty = F.normalize(x, **kw), torch.nn.functional.normalize(tx, **kw)
        close(y, ty)
        y.sum().backward()
        ty.sum().backward()
        close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)


def test_zero_size_batch(device, torch):
    for name, args, shape in (("LayerNorm", (4,), (0, 4)), ("GroupNorm", (2, 4), (0, 4, 3)),
                              ("BatchNorm1d", (4,), (0, 4)), ("RMSNorm", (4,), (0, 2, 4))):
        tm, m = getattr(torch.nn, name)(*args), getattr(nn, name)(*args).to(device)
        y = m(tl.zeros(shape, device=device))
        assert tuple(y.shape) == tuple(tm(torch.zeros(shape)).shape) == shape


def test_noncontiguous_input(device, torch):
    arr = randn(6, 4, 3)
    x, tx = pair(torch, device, arr)
    y = F.layer_norm(x.transpose(0, 2), (6,))
    close(y, torch.nn.functional.layer_norm(tx.transpose(0, 2), (6,)))


@pytest.mark.parametrize("fn", ["layer_norm", "rms_norm", "group_norm", "batch_norm", "normalize"])
def test_gradcheck_float64(device, fn):
    rng = np.random.default_rng(3)
    x = tl.tensor(rng.standard_normal((3, 4, 2)), device=device, requires_grad=True)
    w = tl.tensor(rng.standard_normal(4) if fn in ("group_norm", "batch_norm") else rng.standard_normal(2),
                  device=device, requires_grad=True)
    b = tl.tensor(rng.standard_normal(w.shape[0]), device=device, requires_grad=True)
    calls = {
        "layer_norm": lambda x, w, b: F.layer_norm(x, (2,), w, b),
        "rms_norm": lambda x, w, b: F.rms_norm(x, (2,), w) + b,
        "group_norm": lambda x, w, b: F.group_norm(x, 2, w, b),
        "batch_norm": lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        "normalize": lambda x, w, b: F.normalize(x, dim=1) * w + b,
    }
    assert tl.autograd.gradcheck(calls[fn], (x, w, b))


def test_running_var_is_unbiased(device):
    m = nn.BatchNorm1d(1, momentum=1.0).to(device)
    m(tl.tensor([[1.0], [3.0]], device=device))
    assert np_of(m.running_var).tolist() == [2.0]  # unbiased variance of {1, 3}
    assert np_of(m.running_mean).tolist() == [2.0]


def test_initial_parameters_and_buffers(device):
    for m in (nn.LayerNorm((2, 3), device=device), nn.RMSNorm(3, device=device), nn.GroupNorm(1, 3, device=device),
              nn.BatchNorm2d(3, device=device)):
        assert (np_of(m.weight) == 1).all()
        if getattr(m, "bias", None) is not None:
            assert not np_of(m.bias).any()
    bn = nn.BatchNorm1d(3, dtype=tl.float64, device=device)
    assert bn.running_mean.dtype is tl.float64 and bn.num_batches_tracked.dtype is tl.int64
    assert not np_of(bn.running_mean).any() and (np_of(bn.running_var) == 1).all()
    bn(tl.ones(4, 3, dtype=tl.float64, device=device))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and (np_of(bn.running_var) == 1).all()
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None
