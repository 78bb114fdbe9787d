"""nn.utils as a package: every name torch.nn.utils (and its submodules) exports exists at the same path;
parameters_to_vector / vector_to_parameters, fuse_conv_bn_eval / fuse_linear_bn_eval, the conv weight
memory-format helpers, clip_grad's foreach argument and deprecated alias against torch."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from layers_oracle import close, copy_weights, np_of, randn, raises_like

F64 = dict(rtol=1e-10, atol=1e-12)

SUBMODULES = ["clip_grad", "convert_parameters", "fusion", "init", "memory_format", "parametrizations", "parametrize",
              "prune", "rnn", "spectral_norm", "stateless", "weight_norm"]


@pytest.mark.parametrize("sub", [""] + SUBMODULES)
def test_every_torch_name_exists(torch, sub):
    theirs = importlib.import_module("torch.nn.utils" + (f".{sub}" if sub else ""))
    ours = importlib.import_module("tensorlab.nn.utils" + (f".{sub}" if sub else ""))
    names = getattr(theirs, "__all__", None) or [n for n in dir(theirs) if not n.startswith("_")]
    own = [n for n in names if getattr(getattr(theirs, n, None), "__module__", "torch").startswith("torch")]
    missing = [n for n in own if not hasattr(ours, n) and not isinstance(getattr(theirs, n, None), type(importlib))]
    assert not missing, f"tensorlab.nn.utils{'.' + sub if sub else ''} lacks {missing}"


def test_parameters_to_vector_and_back(torch, device):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).double()
    m = copy_weights(tm, nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)).double(), device)
    v = nn.utils.parameters_to_vector(m.parameters())
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    close(v, tv, **F64)
    assert v.grad_fn is not None  # part of the graph, as torch's
    new = randn(tv.numel(), seed=3, dtype="float64")
    params = list(m.parameters())
    nn.utils.vector_to_parameters(tl.tensor(new, device=device), m.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tm.parameters())
    assert list(m.parameters())[0] is params[0]  # identity kept, data replaced
    for a, b in zip(m.parameters(), tm.parameters()):
        close(a, b, **F64)
    raises_like(lambda: nn.utils.vector_to_parameters([1.0], m.parameters()),
                lambda: torch.nn.utils.vector_to_parameters([1.0], tm.parameters()))
    if device == "cuda":
        mixed = [nn.Parameter(tl.zeros(2, device="cuda")), nn.Parameter(tl.zeros(2))]
        with pytest.raises(TypeError, match="Found two parameters on different devices"):
            nn.utils.parameters_to_vector(mixed)


@pytest.mark.parametrize("layer", ["conv2d", "conv1d_nobias", "conv_transpose2d", "linear"])
def test_fusion_matches_torch(torch, device, layer):
    torch.manual_seed(1)
    if layer == "conv2d":
        tl_layer, t_layer = nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3)
        tbn, bn, x = torch.nn.BatchNorm2d(3), nn.BatchNorm2d(3), randn(2, 2, 5, 5, seed=2, dtype="float64")
    elif layer == "conv1d_nobias":
        tl_layer, t_layer = nn.Conv1d(2, 3, 3, bias=False), torch.nn.Conv1d(2, 3, 3, bias=False)
        tbn, bn, x = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3), randn(2, 2, 6, seed=2, dtype="float64")
    elif layer == "conv_transpose2d":
        tl_layer, t_layer = nn.ConvTranspose2d(2, 3, 2), torch.nn.ConvTranspose2d(2, 3, 2)
        tbn, bn, x = torch.nn.BatchNorm2d(3), nn.BatchNorm2d(3), randn(2, 2, 4, 4, seed=2, dtype="float64")
    else:
        tl_layer, t_layer = nn.Linear(4, 3), torch.nn.Linear(4, 3)
        tbn, bn, x = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3), randn(5, 4, seed=2, dtype="float64")
    t_layer.double()
    tbn.double()
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1)
        tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 1.5)
        tbn.bias.uniform_(-1, 1)
    copy_weights(t_layer, tl_layer.double(), device)
    copy_weights(tbn, bn.double(), device)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(tl_layer, bn) if layer == "linear" else nn.utils.fuse_conv_bn_eval(tl_layer, bn)
    for mod in (tl_layer, bn, t_layer, tbn):
        mod.eval()
    transpose = layer == "conv_transpose2d"
    if layer == "linear":
        fused, tfused = nn.utils.fuse_linear_bn_eval(tl_layer, bn), torch.nn.utils.fuse_linear_bn_eval(t_layer, tbn)
    else:
        fused = nn.utils.fuse_conv_bn_eval(tl_layer, bn, transpose=transpose)
        tfused = torch.nn.utils.fuse_conv_bn_eval(t_layer, tbn, transpose=transpose)
    assert fused is not tl_layer and type(fused) is type(tl_layer)
    close(fused.weight, tfused.weight, **F64)
    close(fused.bias, tfused.bias, **F64)
    xt = tl.tensor(x, device=device)
    close(fused(xt), bn(tl_layer(xt)), rtol=1e-9, atol=1e-10)


def test_fusion_errors():
    lin, bn = nn.Linear(3, 4).eval(), nn.BatchNorm1d(3).eval()
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(lin, bn)
    nostats = nn.BatchNorm2d(3, track_running_stats=False).eval()
    with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be None"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(2, 3, 1).eval(), nostats)


def test_conv_weight_memory_format(device):
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.Sequential(nn.ConvTranspose2d(4, 2, 3)), nn.Linear(2, 2)).to(device)
    before = [np_of(p).copy() for p in model.parameters()]
    w0 = model[0].weight
    out = nn.utils.convert_conv2d_weight_memory_format(model, tl.channels_last)
    assert out is model and model[0].weight is w0
    assert model[0].weight.is_contiguous(memory_format=tl.channels_last)
    assert model[1][0].weight.is_contiguous(memory_format=tl.channels_last)
    for a, b in zip(before, model.parameters()):
        np.testing.assert_array_equal(a, np_of(b))
    c3 = nn.Conv3d(2, 3, 2).to(device)
    nn.utils.convert_conv3d_weight_memory_format(c3, tl.channels_last_3d)
    assert c3.weight.is_contiguous(memory_format=tl.channels_last_3d)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_foreach_matches_torch(torch, device, foreach):
    grads = [randn(3, 4, seed=1, dtype="float64") * 3, randn(5, seed=2, dtype="float64")]
    ours = [nn.Parameter(tl.zeros(g.shape, dtype=tl.float64, device=device)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, tp, g in zip(ours, theirs, grads):
        p.grad = tl.tensor(g, device=device)
        tp.grad = torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ours, 1.5, norm_type=3.0, foreach=foreach)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type=3.0, foreach=foreach)
    close(total, ttotal, **F64)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad, **F64)
    nn.utils.clip_grad_value_(ours, 0.1, foreach=foreach)
    torch.nn.utils.clip_grad_value_(theirs, 0.1, foreach=foreach)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad, **F64)
    norm = nn.utils.get_total_norm([p.grad for p in ours], 2.0, foreach=foreach)
    close(norm, torch.nn.utils.get_total_norm([p.grad for p in theirs], 2.0, foreach=foreach), **F64)
    nn.utils.clip_grads_with_norm_(ours, 0.05, norm, foreach=foreach)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.05, torch.tensor(np_of(norm)), foreach=foreach)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad, **F64)


def test_clip_grad_norm_deprecated_alias(device):
    p = nn.Parameter(tl.ones(4, device=device))
    p.grad = tl.full((4,), 2.0, device=device)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm(p, 1.0)
    assert total.item() == pytest.approx(4.0)
    np.testing.assert_allclose(np_of(p.grad), np.full(4, 0.5), rtol=1e-5)


def test_func_functional_call_is_stateless_functional_call(torch, device):
    m = nn.Linear(3, 2).to(device)
    w = tl.ones(2, 3, device=device)
    x = tl.ones(1, 3, device=device)
    a = tl.func.functional_call(m, {"weight": w}, x)
    with pytest.warns(FutureWarning):
        b = nn.utils.stateless.functional_call(m, {"weight": w}, x)
    np.testing.assert_array_equal(np_of(a), np_of(b))
    np.testing.assert_allclose(np_of(a), 3 + np_of(m.bias)[None], rtol=1e-6)
    with pytest.raises(RuntimeError, match="Missing key"):
        tl.func.functional_call(m, {"weight": w}, x, strict=True)
    with nn.utils.stateless._reparametrize_module(m, {"bias": tl.zeros(2, device=device)}):
        np.testing.assert_array_equal(np_of(m.bias), [0.0, 0.0])
    assert m.bias is dict(m.named_parameters())["bias"] and np_of(m.bias).any()
