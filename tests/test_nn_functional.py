"""tensorlab.nn.functional (and the loss/activation modules over it) vs torch: forward values
for every reduction, ignore_index, class weights, label smoothing, probability targets, the
K-dimensional case and torch's errors."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle
import tensorlab.nn as nn
import tensorlab.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def _np(t):
    return t.detach().cpu().numpy()


def _close(ours, theirs, dtype="float32"):
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    got = _np(ours)
    assert got.shape == tuple(theirs.shape)
    np.testing.assert_allclose(got, theirs.detach().numpy(), **tol)


def _pair(torch, device, arr):
    return tl.tensor(arr, device=device), torch.tensor(arr)


# -- activations ---------------------------------------------------------------------------------
ACTIVATIONS = [("relu", {}), ("sigmoid", {}), ("tanh", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}),
               ("softmax", {"dim": 1}), ("softmax", {"dim": -1}), ("log_softmax", {"dim": 0}),
               ("log_softmax", {"dim": 2})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_functionals_match_torch(device, torch, name, kw, dtype):
    arr = (np.random.default_rng(0).standard_normal((4, 5, 3)) * 3).astype(dtype)
    x, tx = _pair(torch, device, arr)
    _close(getattr(F, name)(x, **kw), getattr(torch.nn.functional, name)(tx, **kw), dtype)


MODULES = [("ReLU", (), {}), ("Sigmoid", (), {}), ("Tanh", (), {}), ("GELU", (), {}),
           ("GELU", (), {"approximate": "tanh"}),
           ("Softmax", (1,), {}), ("LogSoftmax", (-1,), {}), ("Identity", (), {})]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=lambda v: str(v))
def test_activation_modules_match_torch(device, torch, name, args, kw):
    arr = np.random.default_rng(1).standard_normal((6, 7)).astype("float32")
    x, tx = _pair(torch, device, arr)
    m, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    _close(m(x), tm(tx))
    assert repr(m) == repr(tm)


def test_relu_inplace(device, torch):
    x = tl.tensor([-1.0, 2.0, -3.0], device=device)
    assert F.relu(x, inplace=True) is x and _np(x).tolist() == [0.0, 2.0, 0.0]
    y = tl.tensor([-1.0, 2.0], device=device)
    assert nn.ReLU(inplace=True)(y) is y
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_implicit_dim_warns_and_picks_torchs_dim(device, torch, name, ndim):
    arr = np.random.default_rng(2).standard_normal((2, 3, 4, 5)[:ndim]).astype("float32")
    x, tx = _pair(torch, device, arr)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated"):
        ours = getattr(F, name)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(ours, getattr(torch.nn.functional, name)(tx))


def test_softmax_dtype_argument(device, torch):
    arr = np.random.default_rng(3).standard_normal((3, 4)).astype("float32")
    x, tx = _pair(torch, device, arr)
    out = F.softmax(x, 1, dtype=tl.float64)
    assert out.dtype == tl.float64
    _close(out, torch.nn.functional.softmax(tx, 1, dtype=torch.float64), "float64")


# -- linear --------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_shape", [(5,), (3, 5), (2, 3, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(device, torch, in_shape, bias):
    rng = np.random.default_rng(4)
    x, tx = _pair(torch, device, rng.standard_normal(in_shape).astype("float32"))
    w, tw = _pair(torch, device, rng.standard_normal((4, 5)).astype("float32"))
    b, tb = _pair(torch, device, rng.standard_normal(4).astype("float32")) if bias else (None, None)
    _close(F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb))


def test_linear_shape_mismatch(device):
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(tl.ones(3, 5, device=device), tl.ones(4, 4, device=device))
    with pytest.raises(TypeError, match="linear"):
        F.linear([1.0], tl.ones(1, 1, device=device))


# -- dropout -------------------------------------------------------------------------------------
def test_dropout_eval_and_p0_return_the_input(device, torch):
    x = tl.randn(4, 5, device=device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    tx = torch.randn(4, 5)
    assert torch.nn.functional.dropout(tx, 0.5, training=False) is tx
    m = nn.Dropout(0.3).eval()
    assert m(x) is x


def test_dropout_p1_zeroes(device, torch):
    arr = np.random.default_rng(5).standard_normal((3, 4)).astype("float32")
    x, tx = _pair(torch, device, arr)
    out = F.dropout(x, 1.0)
    np.testing.assert_array_equal(_np(out), torch.nn.functional.dropout(tx, 1.0).numpy())
    np.testing.assert_array_equal(np.signbit(_np(out)), np.signbit(arr))  # x * 0 keeps the sign, as torch


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_training_statistics_and_inverted_scaling(device, p):
    tl.manual_seed(7)
    x = tl.rand(200, 100, device=device) + 0.5
    out = _np(F.dropout(x, p))
    xs = _np(x)
    dropped = out == 0
    assert abs(dropped.mean() - p) < 0.02
    scale = np.float32(1.0) / np.float32(1 - p)
    np.testing.assert_array_equal(out[~dropped], xs[~dropped] * scale)
    assert abs(out.mean() - xs.mean()) < 0.05  # inverted dropout keeps the expectation


def test_dropout_is_reproducible_and_inplace(device):
    tl.manual_seed(3)
    a = _np(F.dropout(tl.ones(50, device=device), 0.5))
    tl.manual_seed(3)
    x = tl.ones(50, device=device)
    assert F.dropout(x, 0.5, inplace=True) is x
    np.testing.assert_array_equal(a, _np(x))
    assert set(np.unique(a)) <= {0.0, 2.0}


def test_dropout_module_train_eval(device, torch):
    m = nn.Dropout(0.5)
    assert repr(m) == repr(torch.nn.Dropout(0.5))
    x = tl.ones(1000, device=device)
    assert (_np(m(x)) == 0).any()
    m.eval()
    assert m(x) is x
    m.train()
    assert (_np(m(x)) == 0).any()


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_probability_checked(device, torch, p):
    msg = re.escape(f"dropout probability has to be between 0 and 1, but got {p}")
    with pytest.raises(ValueError, match=msg):
        F.dropout(tl.ones(2, device=device), p)
    with pytest.raises(ValueError, match=msg):
        nn.Dropout(p)
    with pytest.raises(ValueError, match=msg):
        torch.nn.Dropout(p)


# -- mse -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_matches_torch(device, torch, reduction, dtype):
    rng = np.random.default_rng(8)
    x, tx = _pair(torch, device, rng.standard_normal((4, 3)).astype(dtype))
    y, ty = _pair(torch, device, rng.standard_normal((4, 3)).astype(dtype))
    _close(F.mse_loss(x, y, reduction=reduction), torch.nn.functional.mse_loss(tx, ty, reduction=reduction), dtype)
    _close(nn.MSELoss(reduction=reduction)(x, y), torch.nn.MSELoss(reduction=reduction)(tx, ty), dtype)
    w, tw = _pair(torch, device, rng.random((4, 3)).astype(dtype))
    _close(F.mse_loss(x, y, reduction=reduction, weight=w),
           torch.nn.functional.mse_loss(tx, ty, reduction=reduction, weight=tw), dtype)


def test_mse_loss_broadcast_warning_and_legacy_args(device, torch):
    rng = np.random.default_rng(9)
    x, tx = _pair(torch, device, rng.standard_normal((4, 3)).astype("float32"))
    y, ty = _pair(torch, device, rng.standard_normal(3).astype("float32"))
    with pytest.warns(UserWarning, match="Using a target size"):
        ours = F.mse_loss(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(ours, torch.nn.functional.mse_loss(tx, ty))
        for sa, red in [(False, None), (None, False), (True, True)]:
            _close(F.mse_loss(x, x * 2, size_average=sa, reduce=red),
                   torch.nn.functional.mse_loss(tx, tx * 2, size_average=sa, reduce=red))
            assert nn.MSELoss(size_average=sa, reduce=red).reduction == \
                torch.nn.MSELoss(size_average=sa, reduce=red).reduction
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="foo")


# -- nll / cross entropy with class indices ------------------------------------------------------
def _logits(torch, device, shape, dtype="float32", seed=10):
    return _pair(torch, device, (np.random.default_rng(seed).standard_normal(shape) * 2).astype(dtype))


def _targets(torch, device, shape, n_classes, ignore=None, seed=11):
    t = np.random.default_rng(seed).integers(0, n_classes, shape)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return _pair(torch, device, t.astype("int64"))


CE_SHAPES = [((6, 5), (6,)), ((5,), ()), ((3, 4, 2, 3), (3, 2, 3)), ((0, 4), (0,))]


@pytest.mark.parametrize("shape,tshape", CE_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 1, -100])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_and_nll_with_indices_match_torch(device, torch, shape, tshape, reduction, weighted, ignore,
                                                        smoothing):
    C = shape[1] if len(shape) > 1 else shape[0]
    x, tx = _logits(torch, device, shape)
    t, tt = _targets(torch, device, tshape, C, ignore if tshape else None)
    w, tw = _pair(torch, device, np.linspace(0.5, 2.0, C).astype("float32")) if weighted else (None, None)
    kw = dict(reduction=reduction, ignore_index=-100 if ignore is None else ignore)
    _close(F.cross_entropy(x, t, w, label_smoothing=smoothing, **kw),
           torch.nn.functional.cross_entropy(tx, tt, tw, label_smoothing=smoothing, **kw))
    _close(nn.CrossEntropyLoss(w, label_smoothing=smoothing, **kw)(x, t),
           torch.nn.CrossEntropyLoss(tw, label_smoothing=smoothing, **kw)(tx, tt))
    lp, tlp = F.log_softmax(x, 1 if len(shape) > 1 else 0), torch.log_softmax(tx, 1 if len(shape) > 1 else 0)
    _close(F.nll_loss(lp, t, w, **kw), torch.nn.functional.nll_loss(tlp, tt, tw, **kw))
    _close(nn.NLLLoss(w, **kw)(lp, t), torch.nn.NLLLoss(tw, **kw)(tlp, tt))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_dtypes(device, torch, dtype):
    x, tx = _logits(torch, device, (4, 3), dtype)
    t, tt = _targets(torch, device, (4,), 3)
    out = F.cross_entropy(x, t)
    assert out.dtype == getattr(tl, dtype) and out.dim() == 0
    _close(out, torch.nn.functional.cross_entropy(tx, tt), dtype)


def test_uint8_targets_accepted(device, torch):
    x, tx = _logits(torch, device, (4, 3))
    t = np.array([0, 2, 1, 2], dtype="uint8")
    _close(F.cross_entropy(x, tl.tensor(t, device=device)), torch.nn.functional.cross_entropy(tx, torch.tensor(t)))


def test_all_targets_ignored_gives_nan_mean(device, torch):
    x, tx = _logits(torch, device, (3, 4))
    t, tt = _pair(torch, device, np.full(3, -100, dtype="int64"))
    for red in ("mean", "sum"):
        _close(F.cross_entropy(x, t, reduction=red), torch.nn.functional.cross_entropy(tx, tt, reduction=red))
    assert math.isnan(F.cross_entropy(x, t).item())


def test_ignored_rows_holding_minus_inf_stay_finite(device, torch):
    arr = np.random.default_rng(12).standard_normal((3, 4)).astype("float32")
    arr[1, :2] = -np.inf  # the ignored row: its (masked) class 0 has probability 0
    x, tx = _pair(torch, device, arr)
    t, tt = _pair(torch, device, np.array([2, -100, 3], dtype="int64"))
    w, tw = _pair(torch, device, np.array([1.0, 2.0, 3.0, 4.0], dtype="float32"))
    for red in REDUCTIONS:
        for ww, tww in ((None, None), (w, tw)):
            ours = F.cross_entropy(x, t, ww, reduction=red)
            assert np.isfinite(_np(ours)).all()
            _close(ours, torch.nn.functional.cross_entropy(tx, tt, tww, reduction=red))


# -- probability targets ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 5), (5,), (3, 4, 2, 3), (0, 4)], ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_with_probabilities_matches_torch(device, torch, shape, reduction, weighted, smoothing):
    cd = 1 if len(shape) > 1 else 0
    C = shape[cd]
    x, tx = _logits(torch, device, shape)
    p = np.random.default_rng(13).random(shape).astype("float32")
    p /= np.maximum(p.sum(axis=cd, keepdims=True), 1e-6)
    t, tt = _pair(torch, device, p)
    w, tw = _pair(torch, device, np.linspace(0.5, 2.0, C).astype("float32")) if weighted else (None, None)
    _close(F.cross_entropy(x, t, w, reduction=reduction, label_smoothing=smoothing),
           torch.nn.functional.cross_entropy(tx, tt, tw, reduction=reduction, label_smoothing=smoothing))
    _close(nn.CrossEntropyLoss(w, reduction=reduction, label_smoothing=smoothing)(x, t),
           torch.nn.CrossEntropyLoss(tw, reduction=reduction, label_smoothing=smoothing)(tx, tt))


# -- errors ----------------------------------------------------------------------------------------
def _err_cases():
    f32 = "float32"
    return [
        ("nll_loss", (3, 5), f32, np.array([1, 2]), {}, ValueError,
         "Expected input batch_size (3) to match target batch_size (2)."),
        ("nll_loss", (3, 5), f32, np.array([1, 2, 7]), {}, IndexError, "Target 7 is out of bounds."),
        ("cross_entropy", (3, 5), f32, np.array([1, -3, 2]), {}, IndexError, "Target -3 is out of bounds."),
        ("nll_loss", (3, 5), f32, np.array([1, 2, 3], dtype="int32"), {}, RuntimeError,
         "expected target dtype to be Long or Byte, but got Int"),
        ("nll_loss", (2, 3, 4), f32, np.array([[1, 2, 0], [0, 0, 0]]), {}, RuntimeError,
         "Expected target size [2, 4], got [2, 3]"),
        ("nll_loss", (5,), f32, np.array([1, 2]), {}, ValueError,
         "For 1D input, 1D target must have size 1, but got target size: 2"),
        ("nll_loss", (1, 5), f32, np.array([[1]]), {}, RuntimeError,
         "0D or 1D target tensor expected, multi-target not supported"),
        ("nll_loss", (), f32, np.array(1), {}, ValueError, "Expected 1 or more dimensions (got 0)"),
        ("nll_loss", (3, 5), f32, np.array([1, 2, 3]), {"weight": np.ones(4, "float32")}, RuntimeError,
         "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: [4]"),
        ("cross_entropy", (3, 5), f32, np.ones((3, 5), dtype="int64"), {}, RuntimeError,
         "Expected floating point type for target with class probabilities, got Long"),
        ("cross_entropy", (3, 5), f32, np.ones((3, 5), dtype="float32"), {"ignore_index": 1}, RuntimeError,
         "ignore_index is not supported for floating point target"),
        ("cross_entropy", (3, 5), f32, np.array([1, 2, 3]), {"label_smoothing": 1.5}, RuntimeError,
         "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        ("cross_entropy", (3, 5), f32, np.ones((3, 5), dtype="float32"), {"weight": np.ones(4, "float32")},
         RuntimeError, "cross_entropy: weight tensor should be defined either for all 5 classes or no classes"),
        ("cross_entropy", (3, 5), f32, np.array([1, 2, 3]), {"reduction": "foo"}, ValueError,
         "foo is not a valid value for reduction"),
    ]


@pytest.mark.parametrize("fn,shape,dtype,target,kw,exc,msg", _err_cases(), ids=lambda v: str(v)[:30])
def test_loss_errors_match_torch(device, torch, fn, shape, dtype, target, kw, exc, msg):
    ours = msg  # on CUDA the target is checked on the device (gather's check, named as nll_loss's error)
    x = np.random.default_rng(14).standard_normal(shape).astype(dtype)
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    okw = {k: tl.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with pytest.raises(exc, match=re.escape(msg)):
        getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(target), **tkw)
    x, t = tl.tensor(x, device=device), tl.tensor(target, device=device)
    with pytest.raises(exc, match=re.escape(ours)):
        getattr(F, fn)(x, t, **okw)
        settle(device)  # on CUDA the target's range is checked on the device: raised at the next wait


def test_loss_modules_repr_and_weight_buffer(device, torch):
    w = tl.ones(3, device=device)
    m, tm = nn.CrossEntropyLoss(w, label_smoothing=0.1), torch.nn.CrossEntropyLoss(torch.ones(3), label_smoothing=0.1)
    assert repr(m) == repr(tm) and repr(nn.MSELoss()) == repr(torch.nn.MSELoss())
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]
    assert m.weight is w and nn.CrossEntropyLoss().weight is None


@pytest.mark.skipif(not hasattr(tl.Tensor, "backward"), reason="needs autograd (Tensor.backward)")
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_gradient_matches_torch(device, torch, smoothing):
    arr = np.random.default_rng(15).standard_normal((5, 4)).astype("float32")
    x = tl.tensor(arr, device=device, requires_grad=True)
    tx = torch.tensor(arr, requires_grad=True)
    t, tt = _pair(torch, device, np.array([0, 3, -100, 1, 2], dtype="int64"))
    w, tw = _pair(torch, device, np.array([1.0, 0.5, 2.0, 1.5], dtype="float32"))
    F.cross_entropy(x, t, w, label_smoothing=smoothing).backward()
    torch.nn.functional.cross_entropy(tx, tt, tw, label_smoothing=smoothing).backward()
    _close(x.grad, tx.grad)


@pytest.mark.skipif(not hasattr(tl.Tensor, "backward"), reason="needs autograd (Tensor.backward)")
def test_mse_and_linear_gradients_match_torch(device, torch):
    rng = np.random.default_rng(16)
    xa, wa, ba, ya = (rng.standard_normal(s).astype("float32") for s in ((6, 3), (2, 3), (2,), (6, 2)))
    w, b = tl.tensor(wa, device=device, requires_grad=True), tl.tensor(ba, device=device, requires_grad=True)
    tw, tb = torch.tensor(wa, requires_grad=True), torch.tensor(ba, requires_grad=True)
    F.mse_loss(F.linear(tl.tensor(xa, device=device), w, b), tl.tensor(ya, device=device)).backward()
    torch.nn.functional.mse_loss(torch.nn.functional.linear(torch.tensor(xa), tw, tb), torch.tensor(ya)).backward()
    _close(w.grad, tw.grad)
    _close(b.grad, tb.grad)
