"""Adamax, ASGD, Rprop and optim.swa_utils against torch: parameter trajectories from the
same initial weights, state_dict round trips, constructor errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim

SHAPES = [(3, 4), (4,), ()]
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-11, atol=1e-13)}


def _np(t):
    return t.detach().cpu().numpy()


def _twins(torch, device, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    return ([nn.Parameter(tl.tensor(a, device=device)) for a in arrays],
            [torch.nn.Parameter(torch.tensor(a)) for a in arrays])


def _run(torch, device, name, kw, dtype="float32", steps=6):
    ours, theirs = _twins(torch, device, dtype)
    opt, ref = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        for p, q in zip(ours, theirs):
            g = rng.standard_normal(tuple(p.shape)).astype(dtype)
            p.grad, q.grad = tl.tensor(g, device=p.device), torch.tensor(g)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL[dtype])
    return opt, ref, ours, theirs


CASES = [("Adamax", dict(lr=0.01)), ("Adamax", dict(lr=0.05, betas=(0.5, 0.8), eps=1e-3, weight_decay=0.1)),
         ("Adamax", dict(lr=0.01, maximize=True)),
         ("ASGD", dict(lr=0.05)), ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.05)),
         ("ASGD", dict(lr=0.01, maximize=True, t0=0)),
         ("Rprop", dict(lr=0.01)), ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
         ("Rprop", dict(lr=0.01, maximize=True))]


@pytest.mark.parametrize("name,kw", CASES, ids=lambda v: str(v))
def test_trajectory_matches_torch(device, torch, name, kw):
    opt, ref, _, _ = _run(torch, device, name, kw)
    # state_dict has torch's layout (same keys, same values)
    ours, theirs = opt.state_dict(), ref.state_dict()
    assert ours["param_groups"] == theirs["param_groups"]
    for i, st in theirs["state"].items():
        assert sorted(ours["state"][i]) == sorted(st)
        for k, v in st.items():
            np.testing.assert_allclose(_np(ours["state"][i][k]), v.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kw", [("Adamax", dict(lr=0.01)), ("ASGD", dict(lr=0.05, t0=2)),
                                     ("Rprop", dict(lr=0.01))])
def test_float64_and_state_dict_round_trip(device, torch, name, kw):
    opt, ref, ours, theirs = _run(torch, device, name, kw, dtype="float64", steps=3)
    clone = [nn.Parameter(p.detach().clone()) for p in ours]
    opt2 = getattr(optim, name)(clone, **kw)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    rng = np.random.default_rng(7)
    for _ in range(3):
        for p, p2, q in zip(ours, clone, theirs):
            g = rng.standard_normal(tuple(p.shape))
            p.grad, p2.grad, q.grad = tl.tensor(g, device=device), tl.tensor(g, device=device), torch.tensor(g)
        opt.step(), opt2.step(), ref.step()
        for p, p2, q in zip(ours, clone, theirs):
            np.testing.assert_array_equal(_np(p), _np(p2))
            np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL["float64"])


@pytest.mark.parametrize("cls,kw,exc,msg", [
    ("Adamax", dict(lr=-1), ValueError, "Invalid learning rate"),
    ("Adamax", dict(betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0"),
    ("Adamax", dict(eps=-1), ValueError, "Invalid epsilon value"),
    ("ASGD", dict(weight_decay=-1), ValueError, "Invalid weight_decay value"),
    ("Rprop", dict(etas=(1.5, 1.2)), ValueError, "Invalid eta values"),
])
def test_constructor_errors_match_torch(device, torch, cls, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        getattr(torch.optim, cls)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(exc, match=msg):
        getattr(optim, cls)([nn.Parameter(tl.ones(2, device=device))], **kw)


def _mlp(lib, seed=0):
    rng = np.random.default_rng(seed)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    return m, rng


def _copy_weights(src_torch, dst, device):
    for (n, p), (n2, q) in zip(src_torch.state_dict().items(), dst.state_dict().items()):
        q.copy_(tl.tensor(p.numpy(), device=device))


@pytest.mark.parametrize("mode", ["swa", "ema", "ema_avg_fn", "ema_buffers"])
def test_averaged_model_matches_torch(device, torch, mode):
    theirs, _ = _mlp(torch)
    ours = _mlp(tl)[0].to(device)
    _copy_weights(theirs, ours, device)
    su, tsu = optim.swa_utils, torch.optim.swa_utils
    kw = {"swa": ({}, {}), "ema": ({"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
                                    {"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.9)}),
          "ema_avg_fn": ({"avg_fn": su.get_ema_avg_fn(0.8)}, {"avg_fn": tsu.get_ema_avg_fn(0.8)}),
          "ema_buffers": ({"multi_avg_fn": su.get_ema_multi_avg_fn(0.7), "use_buffers": True},
                          {"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.7), "use_buffers": True})}[mode]
    avg, tavg = su.AveragedModel(ours, **kw[0]), tsu.AveragedModel(theirs, **kw[1])
    opt, topt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = rng.standard_normal((5, 3)).astype("float32")
        for lib, m, o, xx in ((tl, ours, opt, tl.tensor(x, device=device)), (torch, theirs, topt, torch.tensor(x))):
            o.zero_grad()
            m(xx).pow(2).sum().backward()
            o.step()
        avg.update_parameters(ours)
        tavg.update_parameters(theirs)
    for (k, a), (k2, b) in zip(avg.state_dict().items(), tavg.state_dict().items()):
        assert k == k2
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-5, atol=1e-6)
    x = rng.standard_normal((6, 3)).astype("float32")
    loader = [(tl.tensor(x[:3]), 0), (tl.tensor(x[3:]), 1)]
    tloader = [(torch.tensor(x[:3]), 0), (torch.tensor(x[3:]), 1)]
    su.update_bn(loader, avg, device=device)
    tsu.update_bn(tloader, tavg)
    for (k, a), b in zip(avg.state_dict().items(), tavg.state_dict().values()):
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.05], anneal_epochs=3, anneal_strategy="linear"),
                                dict(swa_lr=0.01, anneal_epochs=0)], ids=str)
def test_swalr_matches_torch(device, torch, kw):
    opt = optim.SGD([nn.Parameter(tl.ones(2, device=device))], lr=0.5)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.5)
    s, ts = optim.swa_utils.SWALR(opt, **kw), torch.optim.swa_utils.SWALR(topt, **kw)
    for _ in range(12):
        opt.step(), topt.step()
        s.step(), ts.step()
        np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    sd = s.state_dict()
    assert sorted(sd) == sorted(ts.state_dict())
    s2 = optim.swa_utils.SWALR(optim.SGD([nn.Parameter(tl.ones(2, device=device))], lr=0.5), swa_lr=0.3)
    s2.load_state_dict(sd)
    assert s2.anneal_func(0.5) == s.anneal_func(0.5)
    with pytest.raises(ValueError, match="anneal_strategy"):
        optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="Invalid decay"):
        optim.swa_utils.get_ema_multi_avg_fn(1.5)
