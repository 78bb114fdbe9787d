"""More activations (SiLU, Mish, LeakyReLU, ELU, Softplus, Hardtanh, ReLU6, LogSigmoid, ...), Flatten/
Unflatten and losses (BCE, BCE with logits, L1, smooth L1, Huber, KL divergence, cross entropy's extras)
against torch: forward values, input gradients, module reprs, errors, gradcheck."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F
from layers_oracle import close, np_of, pair, randn

ACTS = [("silu", {}), ("mish", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
        ("elu", {"alpha": 0.5}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 5.0}), ("hardtanh", {}),
        ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}), ("logsigmoid", {}), ("softsign", {}),
        ("tanhshrink", {})]


@pytest.mark.parametrize("name,kw", ACTS, ids=str)
def test_activation_functionals_and_grads(device, torch, name, kw):
    arr = randn(4, 6, scale=4)
    arr[0, :4] = [0.0, 1.0, -1.0, 6.0]  # kinks and clamp bounds
    arr[1, 0], arr[1, 1] = 40.0, -40.0  # softplus/elu saturation
    x, tx = pair(torch, device, arr, requires_grad=True)
    y, ty = getattr(F, name)(x, **kw), getattr(torch.nn.functional, name)(tx, **kw)
    close(y, ty)
    g = randn(4, 6, seed=2)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad, rtol=1e-5, atol=1e-6)


MODULES = [("SiLU", (), {}), ("Mish", (), {}), ("LeakyReLU", (0.1,), {}), ("ELU", (), {"alpha": 2.0}),
           ("Softplus", (), {"beta": 0.5}), ("Hardtanh", (-2.0, 2.0), {}), ("ReLU6", (), {}), ("LogSigmoid", (), {}),
           ("Softsign", (), {}), ("Tanhshrink", (), {}), ("Flatten", (), {}), ("Flatten", (0, 1), {}),
           ("Unflatten", (1, (2, 3)), {}), ("Identity", (), {}), ("Softmax", (1,), {}), ("LogSoftmax", (-1,), {})]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=str)
def test_activation_modules(device, torch, name, args, kw):
    arr = randn(2, 6, 1, scale=3)
    x, tx = pair(torch, device, arr)
    m, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(m) == repr(tm)
    close(m(x), tm(tx))


def test_inplace_activations(device, torch):
    for name in ("silu", "leaky_relu", "elu", "hardtanh", "mish"):
        arr = randn(3, 4, scale=2)
        x, tx = pair(torch, device, arr)
        y = getattr(F, name)(x, inplace=True)
        getattr(torch.nn.functional, name)(tx, inplace=True)
        assert y is x
        close(x, tx)
        # through autograd: the in-place result keeps its gradient, as torch's
        a, ta = pair(torch, device, arr, requires_grad=True)
        h, th = a * 1.5, ta * 1.5
        getattr(F, name)(h, inplace=True).sum().backward()
        getattr(torch.nn.functional, name)(th, inplace=True).sum().backward()
        close(a.grad, ta.grad)


# -- losses --------------------------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def _loss_pair(torch, device, fn, arr_in, arr_t, kw, tkw=None):
    x, tx = pair(torch, device, arr_in, requires_grad=True)
    t, tt = pair(torch, device, arr_t)
    ours_kw = {k: (tl.tensor(v, device=device) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    theirs_kw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    y, ty = getattr(F, fn)(x, t, **ours_kw), getattr(torch.nn.functional, fn)(tx, tt, **theirs_kw)
    close(y, ty)
    g = randn(*ty.shape, seed=5) if ty.dim() else np.float32(1.3)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fn,kw", [("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                   ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}),
                                   ("huber_loss", {"delta": 0.3}),
                                   ("l1_loss", {"weight": np.linspace(0.5, 2, 15, dtype=np.float32).reshape(3, 5)}),
                                   ("huber_loss", {"weight": np.linspace(0.5, 2, 15, dtype=np.float32).reshape(3, 5)})],
                         ids=lambda v: str(v)[:30])
def test_regression_losses(device, torch, fn, kw, reduction):
    _loss_pair(torch, device, fn, randn(3, 5, scale=2), randn(3, 5, seed=1), dict(kw, reduction=reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("with_weight", [False, True])
def test_binary_cross_entropy(device, torch, reduction, with_weight):
    p = 1 / (1 + np.exp(-randn(4, 3, scale=3)))
    p[0, 0], p[0, 1] = 0.0, 1.0  # log clamped at -100, as torch
    t = (randn(4, 3, seed=1) > 0).astype(np.float32)
    t[1, 0] = 0.3  # soft targets are allowed
    kw = {"reduction": reduction}
    if with_weight:
        kw["weight"] = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    x, tx = pair(torch, device, p.astype(np.float32))
    tgt, ttgt = pair(torch, device, t)
    w = {k: (tl.tensor(v, device=device) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    tw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    close(F.binary_cross_entropy(x, tgt, **w), torch.nn.functional.binary_cross_entropy(tx, ttgt, **tw))
    p2 = p.copy()
    p2[0, :2] = [0.1, 0.8]  # away from the clamp for the gradient comparison
    _loss_pair(torch, device, "binary_cross_entropy", p2.astype(np.float32), t, kw)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("extra", [{}, {"pos_weight": np.array([0.5, 2.0, 3.0], dtype=np.float32)},
                                   {"weight": np.array([1.0, 0.2, 2.0], dtype=np.float32)}], ids=str)
def test_binary_cross_entropy_with_logits(device, torch, reduction, extra):
    x = randn(4, 3, scale=5)
    x[0, 0], x[0, 1] = 80.0, -80.0  # the stable form stays finite
    t = (randn(4, 3, seed=1) > 0).astype(np.float32)
    _loss_pair(torch, device, "binary_cross_entropy_with_logits", x, t, dict(extra, reduction=reduction))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(device, torch, reduction, log_target):
    logp = np.log(np.random.default_rng(0).dirichlet(np.ones(5), 3)).astype(np.float32)
    q = np.random.default_rng(1).dirichlet(np.ones(5), 3).astype(np.float32)
    q[0, 0] = 0.0  # 0 * log 0 = 0
    target = np.log(q + 1e-3).astype(np.float32) if log_target else q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _loss_pair(torch, device, "kl_div", logp, target, {"reduction": reduction, "log_target": log_target})


def test_loss_modules(device, torch):
    a, b = randn(4, 3), (randn(4, 3, seed=1) > 0).astype(np.float32)
    x, tx = pair(torch, device, a)
    t, tt = pair(torch, device, b)
    pw = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    cases = [("L1Loss", {}), ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {"delta": 0.5}),
             ("KLDivLoss", {"reduction": "batchmean", "log_target": True}), ("BCEWithLogitsLoss", {"pos_weight": pw}),
             ("BCEWithLogitsLoss", {"weight": pw, "reduction": "sum"})]
    for name, kw in cases:
        ours = getattr(nn, name)(**{k: (tl.tensor(v, device=device) if isinstance(v, np.ndarray) else v)
                                    for k, v in kw.items()})
        theirs = getattr(torch.nn, name)(**{k: (torch.tensor(v) if isinstance(v, np.ndarray) else v)
                                            for k, v in kw.items()})
        assert repr(ours) == repr(theirs)
        close(ours(x, t), theirs(tx, tt))
    sig = tx.sigmoid()
    close(nn.BCELoss(weight=tl.tensor(pw, device=device))(x.sigmoid(), t), torch.nn.BCELoss(torch.tensor(pw))(sig, tt))
    names = [n for n, _ in nn.BCEWithLogitsLoss(pos_weight=tl.tensor(pw)).named_buffers()]
    assert names == [n for n, _ in torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw)).named_buffers()]


def test_loss_errors(device):
    x = tl.full((3, 1), 0.5, device=device)
    with pytest.raises(ValueError, match=re.escape("Using a target size (torch.Size([3])) that is different to the "
                                                   "input size (torch.Size([3, 1])) is deprecated")):
        F.binary_cross_entropy(x, tl.zeros(3, device=device))
    with pytest.raises(ValueError, match=re.escape("Target size (torch.Size([3])) must be the same as input size "
                                                   "(torch.Size([3, 1]))")):
        F.binary_cross_entropy_with_logits(x, tl.zeros(3, device=device))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    if device == "cpu":
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(tl.full((2,), 1.5), tl.zeros(2))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, x)


@pytest.mark.parametrize("kw", [{"label_smoothing": 0.2}, {"ignore_index": 1}, {"label_smoothing": 0.1,
                                "ignore_index": 0}], ids=str)
def test_cross_entropy_extras_grads(device, torch, kw):
    """label smoothing, class weights and ignore_index with gradients, K-dimensional input."""
    logits = randn(3, 4, 2, scale=2)
    target = np.array([[1, 3], [0, 1], [2, 2]], dtype=np.int64)
    w = np.array([1.0, 0.5, 2.0, 1.5], dtype=np.float32)
    for reduction in REDUCTIONS:
        x, tx = pair(torch, device, logits, requires_grad=True)
        t, tt = pair(torch, device, target)
        y = F.cross_entropy(x, t, weight=tl.tensor(w, device=device), reduction=reduction, **kw)
        ty = torch.nn.functional.cross_entropy(tx, tt, weight=torch.tensor(w), reduction=reduction, **kw)
        close(y, ty)
        y.sum().backward()
        ty.sum().backward()
        close(x.grad, tx.grad, rtol=1e-4, atol=1e-6)


def test_cross_entropy_probability_targets_grads(device, torch):
    logits = randn(4, 5)
    probs = np.random.default_rng(2).dirichlet(np.ones(5), 4).astype(np.float32)
    x, tx = pair(torch, device, logits, requires_grad=True)
    t, tt = pair(torch, device, probs)
    y = F.cross_entropy(x, t, label_smoothing=0.1)
    ty = torch.nn.functional.cross_entropy(tx, tt, label_smoothing=0.1)
    close(y, ty)
    y.backward()
    ty.backward()
    close(x.grad, tx.grad)


@pytest.mark.parametrize("fn", ["softplus", "elu", "mish", "logsigmoid", "smooth_l1_loss", "huber_loss", "kl_div",
                                "binary_cross_entropy_with_logits", "binary_cross_entropy"])
def test_gradcheck_float64(device, fn):
    rng = np.random.default_rng(1)
    x = tl.tensor(rng.uniform(0.1, 0.9, (2, 3)) if fn == "binary_cross_entropy" else rng.standard_normal((2, 3)) * 2,
                  device=device, requires_grad=True)
    t = tl.tensor(rng.uniform(0.05, 0.95, (2, 3)), device=device)
    call = {
        "softplus": lambda a: F.softplus(a, beta=1.5),
        "elu": lambda a: F.elu(a, 0.7),
        "mish": F.mish,
        "logsigmoid": F.logsigmoid,
        "smooth_l1_loss": lambda a: F.smooth_l1_loss(a, t, reduction="none", beta=0.5),
        "huber_loss": lambda a: F.huber_loss(a, t, reduction="none", delta=0.5),
        "kl_div": lambda a: F.kl_div(a, t, reduction="none"),
        "binary_cross_entropy_with_logits": lambda a: F.binary_cross_entropy_with_logits(
            a, t, reduction="none", pos_weight=tl.tensor([1.0, 2.0, 0.5], dtype=tl.float64, device=device)),
        "binary_cross_entropy": lambda a: F.binary_cross_entropy(a, t, reduction="none"),
    }[fn]
    assert tl.autograd.gradcheck(call, (x,))
    assert np_of(call(x)).shape == (2, 3)
