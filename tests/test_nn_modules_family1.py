"""nn module classes of issue 34, family 1 (activations, padding, shuffles, dropouts, distances,
upsampling, losses, AdaptiveLogSoftmaxWithLoss) against torch: each is constructed on both libraries with
the same arguments, torch's state_dict copied into ours, and forward + backward run with the same inputs
and grad_outputs (outputs, input grads and parameter grads compared); reprs, state_dict keys and public
attributes equal torch's; bad constructor arguments and inputs raise torch's exception class. torch's
module_db samples for these classes run through tests/nn_family1_db.py (a fixed subset here;
TENSORLAB_FULL_MODULE_DB=1 runs every sample)."""
from __future__ import annotations

import os
import pickle
import warnings

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import nn_family1_db as db

F64 = dict(rtol=1e-9, atol=1e-10)


def _rand(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _ints(shape, high, seed):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)


def _signs(shape, seed):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)


def _logp(shape, seed):
    x = _rand(shape, seed)
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def _mlm_target(n, c, seed):
    rng = np.random.default_rng(seed)
    t = np.full((n, c), -1, dtype=np.int64)
    for i in range(n):
        k = rng.integers(1, c)
        t[i, :k] = rng.permutation(c)[:k]
    return t


def _cos(a, b):
    return (a * b).sum(-1) / ((a * a).sum(-1) * (b * b).sum(-1)).sqrt()


# (class, ctor args, ctor kwargs, inputs: [(array, requires_grad)]); np arrays in the kwargs become tensors
SPECS = [
    ("Hardsigmoid", (), {}, lambda: [(_rand((3, 5), 0, 4), True)]),
    ("Hardswish", (), {}, lambda: [(_rand((3, 5), 1, 4), True)]),
    ("RReLU", (0.1, 0.3), {}, lambda: [(_rand((3, 5), 2), True)]),  # eval: the mean slope
    ("PReLU", (3,), {"init": 0.1}, lambda: [(_rand((2, 3, 4), 3), True)]),
    ("PReLU", (), {}, lambda: [(_rand((2, 3), 4), True)]),
    ("CELU", (0.5,), {}, lambda: [(_rand((4, 3), 5), True)]),
    ("SELU", (), {}, lambda: [(_rand((4, 3), 6), True)]),
    ("GLU", (1,), {}, lambda: [(_rand((2, 6, 3), 7), True)]),
    ("Hardshrink", (0.3,), {}, lambda: [(_rand((4, 5), 8), True)]),
    ("Softshrink", (0.2,), {}, lambda: [(_rand((4, 5), 9), True)]),
    ("Threshold", (0.1, 20.0), {}, lambda: [(_rand((4, 5), 10), True)]),
    ("Softmin", (1,), {}, lambda: [(_rand((3, 4, 2), 11), True)]),
    ("Softmax2d", (), {}, lambda: [(_rand((2, 3, 4, 2), 12), True)]),
    ("ConstantPad2d", ((1, 2, 0, 1), 3.5), {}, lambda: [(_rand((2, 3, 4), 13), True)]),
    ("ConstantPad1d", (2, -1.0), {}, lambda: [(_rand((2, 3, 4), 13), True)]),
    ("ZeroPad2d", ((1, -1, 2, 0),), {}, lambda: [(_rand((1, 2, 4, 4), 14), True)]),
    ("ZeroPad3d", (1,), {}, lambda: [(_rand((1, 2, 2, 3, 2), 14), True)]),
    ("ReflectionPad1d", ((2, 1),), {}, lambda: [(_rand((2, 3, 5), 15), True)]),
    ("ReflectionPad2d", (1,), {}, lambda: [(_rand((3, 4, 5), 15), True)]),
    ("ReplicationPad3d", (1,), {}, lambda: [(_rand((1, 2, 3, 3, 2), 16), True)]),
    ("ReplicationPad1d", ((0, 3),), {}, lambda: [(_rand((3, 4), 16), True)]),
    ("CircularPad2d", ((1, 1, 2, 0),), {}, lambda: [(_rand((1, 2, 3, 4), 17), True)]),
    ("CircularPad1d", (2,), {}, lambda: [(_rand((2, 5), 17), True)]),
    ("CircularPad3d", ((1, 0, 0, 1, 1, 1),), {}, lambda: [(_rand((2, 3, 3, 2), 17), True)]),
    ("PixelShuffle", (2,), {}, lambda: [(_rand((1, 8, 3, 3), 18), True)]),
    ("PixelUnshuffle", (2,), {}, lambda: [(_rand((1, 2, 4, 6), 19), True)]),
    ("ChannelShuffle", (2,), {}, lambda: [(_rand((2, 4, 3, 3), 20), True)]),
    ("CosineSimilarity", (), {}, lambda: [(_rand((4, 5), 21), True), (_rand((4, 5), 22), True)]),
    ("CosineSimilarity", (0, 1e-6), {}, lambda: [(_rand((4, 5), 21), True), (_rand((4, 1), 22), True)]),
    ("PairwiseDistance", (), {}, lambda: [(_rand((4, 5), 23), True), (_rand((4, 5), 24), True)]),
    ("PairwiseDistance", (1.5, 1e-4, True), {}, lambda: [(_rand((4, 5), 23), True), (_rand((5,), 24), True)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, lambda: [(_rand((1, 2, 3, 3), 25), True)]),
    ("UpsamplingNearest2d", ((5, 4),), {}, lambda: [(_rand((1, 2, 3, 3), 25), True)]),
    ("UpsamplingBilinear2d", ((5, 7),), {}, lambda: [(_rand((1, 2, 3, 4), 26), True)]),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2.5}, lambda: [(_rand((2, 1, 3, 4), 26), True)]),
    ("Dropout1d", (0.3,), {}, lambda: [(_rand((2, 3, 4), 27), True)]),  # eval mode: the identity
    ("Dropout2d", (), {}, lambda: [(_rand((2, 3, 4, 2), 27), True)]),
    ("Dropout3d", (0.2, True), {}, lambda: [(_rand((2, 3, 2, 2, 2), 27), True)]),
    ("AlphaDropout", (0.2,), {}, lambda: [(_rand((3, 4), 27), True)]),
    ("FeatureAlphaDropout", (0.2,), {}, lambda: [(_rand((3, 4, 2), 27), True)]),
    ("TripletMarginLoss", (), {}, lambda: [(_rand((4, 6), 28), True), (_rand((4, 6), 29), True),
                                           (_rand((4, 6), 30), True)]),
    ("TripletMarginLoss", (), {"margin": 2.0, "p": 1.0, "swap": True, "reduction": "none"},
     lambda: [(_rand((4, 6), 28), True), (_rand((4, 6), 29), True), (_rand((4, 6), 30), True)]),
    ("TripletMarginWithDistanceLoss", (), {"margin": 1.5, "swap": True},
     lambda: [(_rand((4, 6), 31), True), (_rand((4, 6), 32), True), (_rand((4, 6), 33), True)]),
    ("TripletMarginWithDistanceLoss", (), {"distance_function": lambda a, b: 1.0 - _cos(a, b), "reduction": "sum"},
     lambda: [(_rand((4, 6), 31), True), (_rand((4, 6), 32), True), (_rand((4, 6), 33), True)]),
    ("NLLLoss2d", (), {"ignore_index": 1}, lambda: [(_logp((2, 3, 4, 4), 34), True), (_ints((2, 4, 4), 3, 35), False)]),
    ("NLLLoss2d", (), {"weight": np.array([0.2, 1.0, 3.0])},
     lambda: [(_logp((2, 3, 4, 4), 34), True), (_ints((2, 4, 4), 3, 35), False)]),
    ("MultiMarginLoss", (2, 0.5), {"weight": np.array([1.0, 2.0, 0.5, 1.5])},
     lambda: [(_rand((3, 4), 36), True), (_ints((3,), 4, 37), False)]),
    ("MultiLabelSoftMarginLoss", (), {"weight": np.array([1.0, 2.0, 0.5]), "reduction": "none"},
     lambda: [(_rand((4, 3), 38), True), ((_rand((4, 3), 39) > 0).astype(np.float64), False)]),
    ("MultiLabelMarginLoss", (), {"reduction": "sum"}, lambda: [(_rand((3, 5), 40), True), (_mlm_target(3, 5, 41), False)]),
    ("PoissonNLLLoss", (False, True), {"eps": 1e-6}, lambda: [(np.abs(_rand((4, 3), 42)) + 0.1, True),
                                                              (np.abs(_rand((4, 3), 43)) * 3, False)]),
    ("PoissonNLLLoss", (), {"reduction": "none"}, lambda: [(_rand((4, 3), 42), True), (np.abs(_rand((4, 3), 43)), False)]),
    ("GaussianNLLLoss", (), {"full": True, "eps": 1e-3, "reduction": "sum"},
     lambda: [(_rand((4, 3), 44), True), (_rand((4, 3), 45), False), (np.abs(_rand((4, 1), 46)) + 1e-4, True)]),
    ("HingeEmbeddingLoss", (0.5,), {}, lambda: [(_rand((4, 3), 47), True), (_signs((4, 3), 48), False)]),
    ("CosineEmbeddingLoss", (0.2,), {"reduction": "none"},
     lambda: [(_rand((4, 5), 49), True), (_rand((4, 5), 50), True), (_signs((4,), 51), False)]),
    ("MarginRankingLoss", (0.1,), {}, lambda: [(_rand((6,), 52), True), (_rand((6,), 53), True), (_signs((6,), 54), False)]),
    ("SoftMarginLoss", (), {"reduction": "sum"}, lambda: [(_rand((4, 3), 55), True), (_signs((4, 3), 56), False)]),
    ("LinearCrossEntropyLoss", (5, 4), {"bias": True}, lambda: [(_rand((6, 5), 57), True), (_ints((6,), 4, 58), False)]),
    ("LinearCrossEntropyLoss", (5, 3), {"out_features": (2,), "weight": np.array([1.0, 0.5, 2.0]),
                                        "reduction": "sum", "ignore_index": 0},
     lambda: [(_rand((4, 5), 59), True), (_ints((4, 2), 3, 60), False)]),
]


def _convert(obj, lib, device, torch):
    if isinstance(obj, np.ndarray):
        return tl.tensor(obj, device=device) if lib == "tl" else torch.tensor(obj)
    if isinstance(obj, dict):
        return {k: _convert(v, lib, device, torch) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(_convert(v, lib, device, torch) for v in obj)
    return obj


def _public(m):
    return {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"}


def _same_public_attrs(m, tm):
    ours, theirs = _public(m), _public(tm)
    assert sorted(ours) == sorted(theirs), (sorted(ours), sorted(theirs))
    for k, v in theirs.items():
        if isinstance(v, (int, float, str, bool, tuple, list, type(None))):
            assert ours[k] == v and type(ours[k]) is type(v), (k, ours[k], v)


def _pair_module(torch, device, name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, name)(*_convert(args, "torch", device, torch), **_convert(kwargs, "torch", device, torch))
        m = getattr(nn, name)(*_convert(args, "tl", device, torch), **_convert(kwargs, "tl", device, torch))
    tm = tm.double()
    m.to(device)
    m.double()
    sd = tm.state_dict()
    assert list(m.state_dict()) == list(sd)
    m.load_state_dict({k: tl.tensor(v.detach().numpy(), device=device) for k, v in sd.items()})
    return m, tm


def _forward_backward(torch, device, m, tm, arrays):
    ours = [tl.tensor(a, device=device, requires_grad=g) for a, g in arrays]
    theirs = [torch.tensor(a, requires_grad=g) for a, g in arrays]
    y, ty = m(*ours), tm(*theirs)
    db._close(y, ty, "output")
    g = _rand(tuple(ty.shape), 99)
    ty.backward(torch.tensor(g))
    y.backward(tl.tensor(g, device=device))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if b.requires_grad:
            db._close(a.grad, b.grad, f"input {i} grad")
    tparams = dict(tm.named_parameters())
    for pname, p in m.named_parameters():
        db._close(p.grad, tparams[pname].grad, f"{pname} grad")


@pytest.mark.parametrize("name,args,kwargs,inputs", SPECS, ids=[f"{s[0]}-{i}" for i, s in enumerate(SPECS)])
def test_module_against_torch(device, torch, name, args, kwargs, inputs):
    m, tm = _pair_module(torch, device, name, args, kwargs)
    m.eval()
    tm.eval()
    assert repr(m) == repr(tm)
    _same_public_attrs(m, tm)
    _forward_backward(torch, device, m, tm, inputs())


def _db_cases():
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return []
    import torch
    full = os.environ.get("TENSORLAB_FULL_MODULE_DB") == "1"
    return [pytest.param(info.module_cls.__name__, training, limit, id=f"{info.module_cls.__name__}-{training}")
            for info in db.module_infos(torch) for training in (True, False)
            for limit in [None if full else (2 if training else 3)]]


@pytest.mark.parametrize("name,training,limit", _db_cases())
def test_module_db_samples(device, torch, name, training, limit):
    (info,) = db.module_infos(torch, [name])
    for sample in db.samples(info, torch, training, limit):
        db.run_sample(info, sample, device, torch, training)
    if training:
        for err in db.error_samples(info, torch):
            db.run_error_sample(info, err, device, torch)


# -- modules that draw random numbers while training ----------------------------------------------------
def test_rrelu_training(device, torch):
    x = tl.tensor(_rand((64, 32), 1), device=device, requires_grad=True)
    m = nn.RReLU(0.1, 0.3)
    y = m(x)
    y.backward(tl.ones_like(y))
    xs, ys, gs = (t.detach().cpu().numpy() for t in (x, y, x.grad))
    neg = xs < 0
    slope = ys[neg] / xs[neg]
    assert slope.min() >= 0.1 - 1e-7 and slope.max() <= 0.3 + 1e-7 and slope.std() > 0.03  # drawn per element
    np.testing.assert_allclose(ys[~neg], xs[~neg])
    np.testing.assert_allclose(gs[neg], slope, rtol=1e-6)  # the gradient is the drawn slope
    np.testing.assert_allclose(gs[~neg], 1.0)
    assert "lower=0.1, upper=0.3" == m.extra_repr() == torch.nn.RReLU(0.1, 0.3).extra_repr()
    xi = tl.tensor(_rand((4, 4), 2), device=device)
    assert nn.RReLU(inplace=True)(xi) is xi


@pytest.mark.parametrize("name,shape", [("Dropout1d", (4, 16, 5)), ("Dropout2d", (4, 16, 3, 2)),
                                        ("Dropout3d", (2, 16, 2, 2, 2)), ("Dropout1d", (16, 5))])
def test_channel_dropout_training(device, torch, name, shape):
    p = 0.4
    x = tl.tensor(np.abs(_rand(shape, 3)) + 1, device=device, requires_grad=True)
    y = getattr(nn, name)(p)(x)
    y.sum().backward()
    yn, xn, gn = y.detach().cpu().numpy(), x.detach().cpu().numpy(), x.grad.cpu().numpy()
    batched = len(shape) > {"Dropout1d": 2, "Dropout2d": 3, "Dropout3d": 4}[name]
    chan = yn.reshape(yn.shape[:2] + (-1,)) if batched else yn.reshape(yn.shape[:1] + (-1,))
    kept = (chan != 0).all(-1)
    assert ((chan == 0).all(-1) | kept).all()  # whole channels dropped
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(np.where(yn != 0, yn, 0), np.where(yn != 0, xn / (1 - p), 0), rtol=1e-6)
    np.testing.assert_allclose(gn, np.where(yn != 0, 1 / (1 - p), 0), rtol=1e-6)
    x0 = tl.tensor(_rand(shape, 4), device=device)
    np.testing.assert_array_equal(getattr(nn, name)(0.0)(x0).cpu().numpy(), x0.cpu().numpy())
    assert not getattr(nn, name)(1.0)(x0).cpu().numpy().any()
    xi = tl.tensor(_rand(shape, 5), device=device)
    assert getattr(nn, name)(0.5, inplace=True)(xi) is xi


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_training(device, torch, name):
    x = tl.tensor(_rand((200, 50, 2), 6), device=device)
    y = getattr(nn, name)(0.2)(x).cpu().numpy()
    xn = x.cpu().numpy()
    alpha = -1.7580993408473766
    a = (0.8 * (1 + 0.2 * alpha ** 2)) ** -0.5
    b = -a * alpha * 0.2
    dropped = np.isclose(y, a * alpha + b)
    np.testing.assert_allclose(y[~dropped], a * xn[~dropped] + b, rtol=1e-9, atol=1e-9)
    assert 0.15 < dropped.mean() < 0.25
    if name == "FeatureAlphaDropout":
        assert (dropped.all(-1) | ~dropped.any(-1)).all()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05  # keeps zero mean, unit variance
    np.testing.assert_array_equal(getattr(nn, name)(0.0)(x).cpu().numpy(), xn)


# -- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(cutoffs=[3, 6]), dict(cutoffs=(2, 5, 8), div_value=2.0, head_bias=True)])
def test_adaptive_log_softmax(device, torch, kw):
    m, tm = _pair_module(torch, device, "AdaptiveLogSoftmaxWithLoss", (8, 10), kw)
    assert repr(m) == repr(tm)
    _same_public_attrs(m, tm)
    xa, ta = _rand((7, 8), 1), np.array([0, 9, 4, 2, 7, 5, 9])
    x, tx = tl.tensor(xa, device=device, requires_grad=True), torch.tensor(xa, requires_grad=True)
    out, tout = m(x, tl.tensor(ta, device=device)), tm(tx, torch.tensor(ta))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    db._close(out.output, tout.output, "output")
    db._close(out.loss, tout.loss, "loss")
    g = _rand((7,), 2)
    (out.output * tl.tensor(g, device=device)).sum().add(out.loss).backward()
    (tout.output * torch.tensor(g)).sum().add(tout.loss).backward()
    db._close(x.grad, tx.grad, "input grad")
    tparams = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        db._close(p.grad, tparams[name].grad, f"{name} grad")
    db._close(m.log_prob(x), tm.log_prob(tx), "log_prob")
    np.testing.assert_allclose(np.exp(m.log_prob(x).detach().cpu().numpy()).sum(1), 1.0)
    for rows in (xa, xa * 5, _rand((9, 8), 3) * 3):  # mixed, and (by scale) head/tail-heavy predictions
        np.testing.assert_array_equal(m.predict(tl.tensor(rows, device=device)).cpu().numpy(),
                                      tm.predict(torch.tensor(rows)).numpy())
    # unbatched: a 1-D input and a 0-D target
    o1, to1 = m(x[2].detach(), tl.tensor(ta[2], device=device)), tm(tx[2].detach(), torch.tensor(ta[2]))
    db._close(o1.output, to1.output, "unbatched output")
    assert o1.output.dim() == 0


def test_adaptive_log_softmax_errors(device, torch):
    for bad in ([], [5, 3], [0, 4], [4, 10], [3, 3], [2.5]):
        with pytest.raises(ValueError):
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
        with pytest.raises(ValueError, match="cutoffs"):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2]).to(device)
    x = tl.tensor(_rand((3, 4), 1), device=device)
    with pytest.raises(RuntimeError, match="same size in the batch"):
        m(x, tl.tensor([0, 1], device=device))
    with pytest.raises(RuntimeError, match="0D or 1D target"):
        m(x, tl.zeros((3, 1), dtype=tl.int64, device=device))
    with pytest.raises(RuntimeError, match="expects 1D input"):
        m(x, tl.tensor(1, device=device))
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 5\]"):
        m(x, tl.tensor([0, 6, 1], device=device))


# -- constructor and forward errors: torch's exception classes ------------------------------------------
ERRORS = [
    ("Dropout2d", (1.5,), {}, None),
    ("AlphaDropout", (-0.1,), {}, None),
    ("MultiMarginLoss", (3,), {}, None),
    ("MultiMarginLoss", (), {"weight": np.ones((2, 2))}, None),
    ("TripletMarginLoss", (), {"margin": 0.0}, None),
    ("TripletMarginWithDistanceLoss", (), {"margin": -1.0}, None),
    ("LinearCrossEntropyLoss", (4, 3), {"weight": np.ones(4)}, None),
    ("LinearCrossEntropyLoss", (4, 3), {"label_smoothing": 1.5}, None),
    ("Softmax2d", (), {}, lambda: [_rand((3, 4), 0)]),
    ("CircularPad1d", (1,), {}, lambda: [_rand((2, 3, 4, 5), 0)]),
    ("CircularPad2d", (1,), {}, lambda: [_rand((3, 4), 0)]),
    ("CircularPad3d", (1,), {}, lambda: [_rand((2, 3, 4), 0)]),
    ("ReflectionPad1d", (4,), {}, lambda: [_rand((2, 3, 4), 0)]),
    ("PixelShuffle", (2,), {}, lambda: [_rand((1, 3, 2, 2), 0)]),
    ("PixelUnshuffle", (2,), {}, lambda: [_rand((1, 1, 3, 4), 0)]),
    ("ChannelShuffle", (4,), {}, lambda: [_rand((1, 6, 2, 2), 0)]),
    ("GLU", (), {}, lambda: [_rand((2, 3), 0)]),
    ("PReLU", (3,), {}, lambda: [_rand((2, 4, 2), 0).astype(np.float32)]),
    ("PReLU", (3,), {}, lambda: [_rand((2, 3, 2), 0)]),  # float64 input, float32 weight: no promotion
    ("Dropout1d", (0.5,), {}, lambda: [_rand((2, 3, 4, 5), 0)]),
    ("PairwiseDistance", (), {}, lambda: [_rand((3, 4), 0), _rand((3, 5), 1)]),
    ("CosineSimilarity", (), {}, lambda: [_rand((3, 4), 0), _rand((2, 4), 1)]),
    ("CosineEmbeddingLoss", (), {}, lambda: [_rand((3, 4), 0), _rand((3, 4), 1), _rand((3, 2), 2)]),
    ("MarginRankingLoss", (), {}, lambda: [_rand((3,), 0), _rand((4,), 1), _rand((3,), 2)]),
    ("MultiLabelMarginLoss", (), {}, lambda: [_rand((3, 4), 0), np.zeros((3, 5), dtype=np.int64)]),
    ("MultiMarginLoss", (), {}, lambda: [_rand((3, 4), 0), np.zeros((2,), dtype=np.int64)]),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2}, lambda: [_rand((1, 2, 3), 0)]),
    ("ReplicationPad2d", (1,), {}, lambda: [_rand((3, 4), 0)]),
    ("ConstantPad3d", (1, 0.0), {}, lambda: [_rand((3, 4), 0)]),
    ("PixelShuffle", (2,), {}, lambda: [_rand((4, 2), 0)]),
    ("TripletMarginLoss", (), {}, lambda: [_rand((3, 4), 0), _rand((3, 4), 1), _rand((4,), 2)]),
]


MESSAGE_DIFFERS = set()


@pytest.mark.parametrize("name,args,kwargs,inputs", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_match_torch(device, torch, name, args, kwargs, inputs):
    def build(lib):
        mod = torch.nn if lib == "torch" else nn
        return getattr(mod, name)(*_convert(args, lib, device, torch), **_convert(kwargs, lib, device, torch))

    try:
        tm = build("torch")
        if inputs is not None:
            tm(*[torch.tensor(a) for a in inputs()])
    except Exception as e:  # noqa: BLE001
        expected = e
    else:
        raise AssertionError("torch did not raise")
    with pytest.raises(type(expected)) as got:
        m = build("tl")
        if inputs is not None:
            m.to(device)(*[tl.tensor(a, device=device) for a in inputs()])
    if name not in MESSAGE_DIFFERS:  # torch's text first; ours may add a hint in parentheses
        assert str(got.value).startswith(str(expected).split(" (")[0][:60]), (str(got.value), str(expected))


# -- flags, pickling, deprecation, namespaces -----------------------------------------------------------
@pytest.mark.parametrize("name,args", [("Threshold", (0.0, -1.0)), ("CELU", ()), ("SELU", ()), ("Hardsigmoid", ()),
                                       ("Hardswish", ()), ("Dropout1d", (0.3,))])
def test_inplace_flag(device, torch, name, args):
    arr = _rand((3, 4, 5), 1)
    m, tm = getattr(nn, name)(*args, inplace=True), getattr(torch.nn, name)(*args, inplace=True)
    assert repr(m) == repr(tm)
    x, tx = tl.tensor(arr, device=device), torch.tensor(arr)
    m.eval()
    tm.eval()
    assert m(x) is x
    tm(tx)
    db._close(x, tx, "in-place result")


def test_pickle_round_trip_and_state_dict_keys(device, torch):
    model = nn.Sequential(nn.PReLU(2), nn.ReflectionPad1d(1), nn.Dropout1d(0.1), nn.Softmin(1))
    tmodel = torch.nn.Sequential(torch.nn.PReLU(2), torch.nn.ReflectionPad1d(1), torch.nn.Dropout1d(0.1),
                                 torch.nn.Softmin(1))
    assert list(model.state_dict()) == list(tmodel.state_dict()) == ["0.weight"]
    assert repr(model) == repr(tmodel)
    model.to(device).eval()
    x = tl.tensor(_rand((3, 2, 4), 1).astype(np.float32), device=device)
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(back(x).detach().cpu().numpy(), model(x).detach().cpu().numpy())
    loss = nn.TripletMarginWithDistanceLoss()
    assert repr(pickle.loads(pickle.dumps(loss))) == repr(torch.nn.TripletMarginWithDistanceLoss())
    ls = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    assert list(ls.state_dict()) == list(torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).state_dict())
    assert list(pickle.loads(pickle.dumps(ls)).state_dict()) == list(ls.state_dict())


def test_prelu_factory_kwargs_and_reset(device, torch):
    m = nn.PReLU(4, init=0.3, device=device, dtype=tl.float64)
    assert m.weight.dtype is tl.float64 and str(m.weight.device).startswith(device)
    with tl.no_grad():
        m.weight.fill_(2.0)
    m.reset_parameters()
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), [0.3] * 4)
    lce = nn.LinearCrossEntropyLoss(5, 3, out_features=(2, 2), bias=True, dtype=tl.float64)
    assert tuple(lce.linear.weight.shape) == (12, 5) and lce.linear.bias.dtype is tl.float64


def test_nllloss2d_warns_and_softmin_implicit_dim(torch):
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        nn.NLLLoss2d()
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        y = nn.Softmin()(tl.tensor(_rand((2, 3), 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ty = torch.nn.Softmin()(torch.tensor(_rand((2, 3), 1)))
    db._close(y, ty, "softmin")


def test_torch_import_paths(torch):
    import tensorlab.nn.modules as M
    paths = {"activation": ["CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "PReLU", "RReLU", "SELU",
                            "Softmax2d", "Softmin", "Softshrink", "Threshold"],
             "padding": [f"{k}Pad{d}d" for k in ("Circular", "Constant", "Reflection", "Replication", "Zero")
                         for d in (1, 2, 3)],
             "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"], "channelshuffle": ["ChannelShuffle"],
             "dropout": ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"],
             "distance": ["CosineSimilarity", "PairwiseDistance"],
             "upsampling": ["UpsamplingBilinear2d", "UpsamplingNearest2d"],
             "loss": ["CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "LinearCrossEntropyLoss",
                      "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
                      "NLLLoss2d", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
                      "TripletMarginWithDistanceLoss"],
             "adaptive": ["AdaptiveLogSoftmaxWithLoss"]}
    import importlib
    for mod, names in paths.items():
        ours = importlib.import_module(f"tensorlab.nn.modules.{mod}")
        theirs = importlib.import_module(f"torch.nn.modules.{mod}")
        for n in names:
            assert hasattr(theirs, n), (mod, n)
            assert getattr(ours, n) is getattr(nn, n) is getattr(M, n), (mod, n)
    assert issubclass(nn.Dropout, importlib.import_module("tensorlab.nn.modules.dropout")._DropoutNd)
    assert issubclass(nn.ZeroPad2d, nn.ConstantPad2d) and issubclass(nn.UpsamplingNearest2d, tl.nn.Upsample)


# -- gradcheck: the modules' own parameters and inputs, float64 -----------------------------------------
def _gradcheck_cases():
    def prelu(device):
        m = nn.PReLU(3, init=0.3).double().to(device)
        x = tl.tensor(_rand((2, 3, 4), 1), device=device, requires_grad=True)
        return (lambda x, w: tl.nn.functional.prelu(x, w)), (x, m.weight)

    def adaptive(device):
        m = nn.AdaptiveLogSoftmaxWithLoss(6, 8, [3, 5], div_value=2.0, head_bias=True).double().to(device)
        t = tl.tensor([0, 7, 4, 2, 5], device=device)
        x = tl.tensor(_rand((5, 6), 2), device=device, requires_grad=True)
        w = m.tail[1][0].weight
        return (lambda x, w: m(x, t).output), (x, w)

    def gaussian(device):
        m = nn.GaussianNLLLoss(full=True)
        x, y = (tl.tensor(_rand((4, 3), s), device=device, requires_grad=True) for s in (3, 4))
        v = tl.tensor(np.abs(_rand((4, 1), 5)) + 0.1, device=device, requires_grad=True)
        return (lambda x, v: m(x, y, v)), (x, v)

    def lce(device):
        m = nn.LinearCrossEntropyLoss(5, 4, bias=True, dtype=tl.float64).to(device)
        t = tl.tensor(_ints((6,), 4, 6), device=device)
        x = tl.tensor(_rand((6, 5), 7), device=device, requires_grad=True)
        return (lambda x: m(x, t)), (x,)

    def triplet(device):
        m = nn.TripletMarginLoss(margin=2.0, p=1.5, swap=True, reduction="none")
        a, p, n = (tl.tensor(_rand((3, 4), s), device=device, requires_grad=True) for s in (8, 9, 10))
        return m, (a, p, n)

    return [prelu, adaptive, gaussian, lce, triplet]


@pytest.mark.parametrize("case", _gradcheck_cases(), ids=lambda f: f.__name__)
def test_gradcheck(device, case):
    fn, inputs = case(device)
    assert tl.autograd.gradcheck(fn, inputs)


def test_gaussian_nll_var_forms(device, torch):
    m, tm = nn.GaussianNLLLoss(), torch.nn.GaussianNLLLoss()
    xa, ya = _rand((4, 3), 1), _rand((4, 3), 2)
    x, y, tx, ty = tl.tensor(xa, device=device), tl.tensor(ya, device=device), torch.tensor(xa), torch.tensor(ya)
    db._close(m(x, y, 0.7), tm(tx, ty, 0.7), "float var")
    for shape in ((4,), (1, 3), (4, 1)):
        va = np.abs(_rand(shape, 3)) + 0.05
        db._close(m(x, y, tl.tensor(va, device=device)), tm(tx, ty, torch.tensor(va)), f"var {shape}")
    for bad, exc in ((1, TypeError), (-0.5, ValueError), (tl.tensor(-np.ones((4, 3)), device=device), ValueError),
                     (tl.tensor(np.ones((2, 3)), device=device), ValueError)):
        with pytest.raises(exc):
            m(x, y, bad)
    with pytest.raises(TypeError):
        tm(tx, ty, 1)


FAMILY1_CLASSES = sorted(set(db.FAMILY1) | {
    "Hardsigmoid", "RReLU", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Dropout1d", "Dropout2d", "Dropout3d",
    "AlphaDropout", "FeatureAlphaDropout", "CosineSimilarity", "PairwiseDistance", "UpsamplingBilinear2d",
    "UpsamplingNearest2d", "NLLLoss2d", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
    "AdaptiveLogSoftmaxWithLoss"})


@pytest.mark.parametrize("name", FAMILY1_CLASSES)
def test_signatures_match_torch(torch, name):
    """Constructor and forward: torch's parameter names, kinds (keyword-only too) and defaults."""
    import inspect

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    ours, theirs = getattr(nn, name), getattr(torch.nn, name)
    if any("__init__" in vars(c) for c in theirs.__mro__[:-1] if c is not torch.nn.Module):
        assert params(ours.__init__) == params(theirs.__init__)  # (Module's own (*args, **kwargs) aside)
    assert [p[:2] for p in params(ours.forward)] == [p[:2] for p in params(theirs.forward)]
