"""optim.Adafactor and optim.Muon against torch.optim's: parameter trajectories from the same
weights and gradients, state_dict layout and round trip, constructor errors.

Muon orthogonalizes in bfloat16 as torch does (each Newton-Schulz product-and-sum accumulated in
float32 and rounded once); the orthogonalized updates agree bit for bit, the parameters to float32
rounding."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim

SHAPES = [(5, 3), (2, 3, 4), (4,), ()]


def _np(t):
    return t.detach().cpu().float().numpy() if t.dtype == tl.bfloat16 else t.detach().cpu().numpy()


def _run(torch, device, name, kw, shapes, dtype="float32", steps=5, tol=None):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ours = [nn.Parameter(tl.tensor(a, device=device)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    opt, ref = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    grng = np.random.default_rng(1)
    for _ in range(steps):
        for p, q in zip(ours, theirs):
            g = grng.standard_normal(tuple(p.shape)).astype(dtype)
            p.grad, q.grad = tl.tensor(g, device=p.device), torch.tensor(g)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(_np(p), q.detach().numpy(), **tol)
    return opt, ref, ours, theirs


ADAFACTOR = [dict(), dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1),
             dict(lr=0.01, maximize=True), dict(lr=0.3)]


@pytest.mark.parametrize("kw", ADAFACTOR, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adafactor_matches_torch(device, torch, kw, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    opt, ref, ours, theirs = _run(torch, device, "Adafactor", kw, SHAPES, dtype, tol=tol)
    sd, ref_sd = opt.state_dict(), ref.state_dict()
    assert sd["param_groups"] == ref_sd["param_groups"]
    for i, st in ref_sd["state"].items():
        assert sorted(sd["state"][i]) == sorted(st)
        for k, v in st.items():
            assert tuple(sd["state"][i][k].shape) == tuple(v.shape)
            np.testing.assert_allclose(_np(sd["state"][i][k]), v.numpy(), **tol)
    # round trip: a fresh optimizer loaded from the state continues as the original
    twins = [nn.Parameter(p.detach().clone()) for p in ours]
    twin = optim.Adafactor(twins, **kw)
    twin.load_state_dict(sd)
    for a, b in zip(ours, twins):
        g = tl.ones_like(a)
        a.grad, b.grad = g, g.clone()
    opt.step()
    twin.step()
    for a, b in zip(ours, twins):
        np.testing.assert_array_equal(_np(a), _np(b))


def test_adafactor_errors():
    p = nn.Parameter(tl.ones(2, 2))
    for kw, msg in [(dict(lr=-1), "Learning rate"), (dict(beta2_decay=0.1), "beta2_decay"),
                    (dict(eps=(-1, 1e-3)), "epsilon1"), (dict(eps=(None, -1)), "epsilon2"),
                    (dict(d=0.5), "Clipping threshold"), (dict(weight_decay=-1), "weight_decay")]:
        with pytest.raises(ValueError, match=msg):
            optim.Adafactor([p], **kw)
    z = nn.Parameter(tl.ones(2, dtype=tl.complex64))
    z.grad = tl.ones(2, dtype=tl.complex64)
    with pytest.raises(RuntimeError, match="complex"):
        optim.Adafactor([z]).step()


MUON = [dict(), dict(lr=0.02, weight_decay=0.0, momentum=0.9, nesterov=False),
        dict(lr=0.01, adjust_lr_fn="match_rms_adamw", ns_steps=3),
        dict(lr=0.01, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-5)]


@pytest.mark.parametrize("kw", MUON, ids=str)
def test_muon_matches_torch(device, torch, kw):
    # shapes: wide, tall (transposed inside) and square
    opt, ref, ours, theirs = _run(torch, device, "Muon", kw, [(4, 6), (7, 3), (5, 5)], steps=4,
                                  tol=dict(rtol=1e-6, atol=1e-7))
    sd, ref_sd = opt.state_dict(), ref.state_dict()
    assert sd["param_groups"] == ref_sd["param_groups"]
    for i, st in ref_sd["state"].items():
        np.testing.assert_allclose(_np(sd["state"][i]["momentum_buffer"]), st["momentum_buffer"].numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_muon_orthogonalizes(torch):
    # the update of one step from zero momentum: the Newton-Schulz image of the gradient, whose singular values
    # lie near 1 (torch's quintic gives values in about [0.5, 1.5])
    from tensorlab.optim.muon import orthogonalize
    g = np.random.default_rng(2).standard_normal((32, 16)).astype("float32")
    ours = orthogonalize(tl.tensor(g)).float().numpy()
    ref = torch.optim._muon._zeropower_via_newtonschulz(torch.tensor(g), (3.4445, -4.775, 2.0315), 5,
                                                        1e-7).float().numpy()
    np.testing.assert_array_equal(ours, ref)
    s = np.linalg.svd(ours, compute_uv=False)
    assert s.min() > 0.5 and s.max() < 1.5


def test_muon_errors():
    with pytest.raises(ValueError, match="2D parameters"):
        optim.Muon([nn.Parameter(tl.ones(3))])
    p = nn.Parameter(tl.ones(2, 2))
    for kw, msg in [(dict(lr=-1), "Learning rate"), (dict(momentum=-1), "momentum"),
                    (dict(weight_decay=-1), "weight decay"), (dict(adjust_lr_fn="x"), "not supported")]:
        with pytest.raises(ValueError, match=msg):
            optim.Muon([p], **kw)
    opt = optim.Muon([p], ns_steps=100)
    p.grad = tl.ones(2, 2)
    with pytest.raises(ValueError, match="less than 100"):
        opt.step()
    np.testing.assert_array_equal(_np(p), np.ones((2, 2)))


def test_swap_in_optimizer_params_and_state(torch):
    import copy
    results = []
    for lib in (tl, torch):
        p, q = lib.nn.Parameter(lib.ones(2, dtype=lib.float64)), lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
        opt = lib.optim.Adam([p, q], lr=0.1)
        p.grad, q.grad = lib.ones(2, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        opt.step()
        swap_sd = copy.deepcopy(opt.state_dict())
        swap_sd["param_groups"][0]["lr"] = 0.5
        a = lib.zeros(2, dtype=lib.float64, requires_grad=True)
        b = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        a.grad, b.grad = lib.ones(2, dtype=lib.float64), lib.full((3,), 2.0, dtype=lib.float64)
        with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": a, "q": b}, swap_sd):
            assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is a
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"][0] is p
        with pytest.raises(RuntimeError, match="match optimizer.param_groups ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": a}, swap_sd):
                pass
        results.append([x.detach().cpu().numpy().copy() for x in (a, b, p, q, swap_sd["state"][0]["exp_avg"],
                                                                  swap_sd["state"][1]["step"])])
    for x, y in zip(*results):
        np.testing.assert_allclose(x, y, rtol=1e-12)
