"""tensorlab.optim vs torch.optim: parameter trajectories with identical hand-set gradients,
every hyperparameter combination, param groups, zero_grad, state_dict round trips, errors."""
from __future__ import annotations

import copy
import itertools
import pickle
import re

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim

SHAPES = [(3, 4), (4,), ()]
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}


def _np(t):
    return t.detach().cpu().numpy()


def _twins(torch, device, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [nn.Parameter(tl.tensor(a, device=device)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return ours, theirs


def _set_grads(torch, ours, theirs, rng, dtype, skip=()):
    for i, (p, q) in enumerate(zip(ours, theirs)):
        if i in skip:
            p.grad, q.grad = None, None
            continue
        g = rng.standard_normal(tuple(p.shape)).astype(dtype)
        p.grad = tl.tensor(g, device=p.device)
        q.grad = torch.tensor(g)


def _run(torch, device, make_ours, make_theirs, dtype="float32", steps=5, skip=()):
    ours, theirs = _twins(torch, device, dtype)
    opt, ref = make_ours(ours), make_theirs(theirs)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        _set_grads(torch, ours, theirs, rng, dtype, skip)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL[dtype])
    return opt, ref, ours, theirs


SGD_CASES = [dict(lr=0.1, momentum=m, dampening=d, weight_decay=wd, nesterov=n, maximize=mx)
             for m, d, wd, n, mx in itertools.product((0.0, 0.9), (0.0, 0.3), (0.0, 0.05), (False, True),
                                                      (False, True))
             if not (n and (m == 0 or d != 0))]


@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_sgd_trajectory_matches_torch(device, torch, kw):
    _run(torch, device, lambda ps: optim.SGD(ps, **kw), lambda ps: torch.optim.SGD(ps, **kw))


ADAM_CASES = [dict(lr=0.01, betas=b, eps=e, weight_decay=wd, amsgrad=a, maximize=mx)
              for b, e, wd, a, mx in itertools.product(((0.9, 0.999), (0.5, 0.8)), (1e-8, 1e-3), (0.0, 0.1),
                                                       (False, True), (False, True))]


@pytest.mark.parametrize("kw", ADAM_CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam_trajectory_matches_torch(device, torch, cls, kw):
    _run(torch, device, lambda ps: getattr(optim, cls)(ps, **kw), lambda ps: getattr(torch.optim, cls)(ps, **kw),
         steps=6)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
                                     ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
                                     ("AdamW", dict(lr=0.01, amsgrad=True))])
def test_float64_trajectory_matches_torch_tightly(device, torch, name, kw):
    _run(torch, device, lambda ps: getattr(optim, name)(ps, **kw), lambda ps: getattr(torch.optim, name)(ps, **kw),
         dtype="float64")


def test_adam_decoupled_flag_equals_adamw(device, torch):
    kw = dict(lr=0.01, weight_decay=0.2)
    _run(torch, device, lambda ps: optim.Adam(ps, decoupled_weight_decay=True, **kw),
         lambda ps: torch.optim.AdamW(ps, **kw))


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01))])
def test_params_without_grad_are_skipped(device, torch, name, kw):
    opt, ref, ours, theirs = _run(torch, device, lambda ps: getattr(optim, name)(ps, **kw),
                                  lambda ps: getattr(torch.optim, name)(ps, **kw), skip=(1,))
    assert ours[1] not in opt.state and theirs[1] not in ref.state
    assert len(opt.state) == len(ref.state) == 2


def test_param_groups_with_own_hyperparameters(device, torch):
    def groups(ps):
        return [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.5, "momentum": 0.0}]
    opt, ref, *_ = _run(torch, device, lambda ps: optim.SGD(groups(ps), lr=0.1, momentum=0.9),
                        lambda ps: torch.optim.SGD(groups(ps), lr=0.1, momentum=0.9))
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.0]


def test_lr_changed_between_steps(device, torch):
    ours, theirs = _twins(torch, device)
    opt, ref = optim.Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    rng = np.random.default_rng(3)
    for step in range(4):
        for o in (opt, ref):
            o.param_groups[0]["lr"] = 0.1 / (step + 1)
        _set_grads(torch, ours, theirs, rng, "float32")
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL["float32"])


def test_step_updates_in_place_and_bumps_version(device):
    p = nn.Parameter(tl.ones(3, device=device))
    storage, v0 = p.untyped_storage(), p._version
    p.grad = tl.ones(3, device=device)
    optim.SGD([p], lr=0.5).step()
    assert p.untyped_storage() is storage and p._version > v0
    assert p.requires_grad and p.grad_fn is None
    assert _np(p).tolist() == [0.5, 0.5, 0.5]


def test_step_closure_returns_loss(device):
    p = nn.Parameter(tl.ones(2, device=device))
    calls = []

    def closure():
        calls.append(1)
        p.grad = tl.full((2,), 2.0, device=device)
        return 42.0
    assert optim.SGD([p], lr=0.25).step(closure) == 42.0
    assert calls == [1] and _np(p).tolist() == [0.5, 0.5]
    assert optim.SGD([p], lr=0.25).step() is None


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(device, set_to_none):
    ps = [nn.Parameter(tl.ones(2, device=device)) for _ in range(2)]
    ps[0].grad = tl.ones(2, device=device)
    opt = optim.SGD(ps, lr=0.1)
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert ps[0].grad is None
    else:
        assert _np(ps[0].grad).tolist() == [0.0, 0.0]
    assert ps[1].grad is None
    optim.SGD(ps).zero_grad()  # default set_to_none=True, as torch 2
    assert ps[0].grad is None


# -- state_dict ----------------------------------------------------------------------------------
def _torch_only(keys):
    return set(keys)  # every key torch keeps, foreach/differentiable/fused/capturable included


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01))])
def test_state_dict_layout_matches_torch(device, torch, name, kw):
    opt, ref, *_ = _run(torch, device, lambda ps: getattr(optim, name)(ps, **kw),
                        lambda ps: getattr(torch.optim, name)(ps, **kw), steps=2)
    sd, tsd = opt.state_dict(), ref.state_dict()
    assert set(sd) == set(tsd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for i in sd["state"]:
        assert set(sd["state"][i]) == set(tsd["state"][i])
        for key, v in sd["state"][i].items():
            np.testing.assert_allclose(_np(v), tsd["state"][i][key].numpy(), rtol=2e-5, atol=1e-6)
            if key == "step":
                assert v.dtype == tl.float32 and v.device == tl.device("cpu")
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        assert set(g) == _torch_only(tg)
        assert all(g[k] == tg[k] for k in g if k != "params")


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.02))])
def test_state_dict_round_trip_continues_identically(device, name, kw):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    a = [nn.Parameter(tl.tensor(x, device=device)) for x in arrays]
    opt_a = getattr(optim, name)(a, **kw)
    grads = [[rng.standard_normal(s).astype("float32") for s in SHAPES] for _ in range(6)]

    def step(ps, opt, gs):
        for p, g in zip(ps, gs):
            p.grad = tl.tensor(g, device=device)
        opt.step()
    for gs in grads[:3]:
        step(a, opt_a, gs)
    saved = pickle.loads(pickle.dumps(opt_a.state_dict()))
    b = [nn.Parameter(p.detach().clone()) for p in a]
    opt_b = getattr(optim, name)(b, lr=123.0)  # hyperparameters come back from the state dict
    opt_b.load_state_dict(saved)
    assert opt_b.param_groups[0]["lr"] == kw["lr"] and opt_b.param_groups[0]["params"][0] is b[0]
    snapshot = copy.deepcopy(saved)
    for gs in grads[3:]:
        step(a, opt_a, gs)
        step(b, opt_b, gs)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(_np(p), _np(q))
    for i, st in saved["state"].items():  # loading copied the tensors: the dict was not written
        for k, v in st.items():
            np.testing.assert_array_equal(_np(v), _np(snapshot["state"][i][k]))


def test_load_state_dict_casts_state_to_param_dtype(device):
    p32 = nn.Parameter(tl.ones(3, device=device))
    p32.grad = tl.ones(3, device=device)
    opt = optim.Adam([p32])
    opt.step()
    p64 = nn.Parameter(tl.ones(3, dtype=tl.float64, device=device))
    opt64 = optim.Adam([p64])
    opt64.load_state_dict(opt.state_dict())
    st = opt64.state[p64]
    assert st["exp_avg"].dtype == tl.float64 and st["exp_avg"].device == p64.device
    assert st["step"].dtype == tl.float32 and st["step"].item() == 1.0


def test_load_state_dict_errors(device):
    ps = [nn.Parameter(tl.ones(2, device=device)) for _ in range(3)]
    opt = optim.SGD([{"params": ps[:2]}, {"params": ps[2:]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD(ps, lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([{"params": ps[:1]}, {"params": ps[1:]}], lr=0.1).load_state_dict(opt.state_dict())


# -- construction and validation -----------------------------------------------------------------
_PARAM_KINDS = {"list": lambda p: [p], "tensor": lambda p: p, "empty": lambda p: [], "set": lambda p: [{"params": {p}}],
                "float": lambda p: [p, 3.0], "overlap": lambda p: [{"params": [p]}, {"params": [p]}]}


@pytest.mark.parametrize("cls,params,kw,exc,msg", [
    ("SGD", "list", dict(lr=-1), ValueError, "Invalid learning rate: -1"),
    ("SGD", "list", dict(momentum=-0.1), ValueError, "Invalid momentum value: -0.1"),
    ("SGD", "list", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    ("SGD", "list", dict(nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", "list", dict(momentum=0.9, dampening=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
    ("Adam", "list", dict(lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    ("Adam", "list", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("Adam", "list", dict(betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", "list", dict(betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
    ("AdamW", "list", dict(weight_decay=-0.1), ValueError, "Invalid weight_decay value: -0.1"),
    ("SGD", "tensor", {}, TypeError, "params argument given to the optimizer should be an iterable of Tensors"),
    ("SGD", "empty", {}, ValueError, "optimizer got an empty parameter list"),
    ("SGD", "set", {}, TypeError, "optimizer parameters need to be organized in ordered collections"),
    ("SGD", "float", {}, TypeError, "optimizer can only optimize Tensors, but one of the params is float"),
    ("SGD", "overlap", {}, ValueError, "some parameters appear in more than one parameter group"),
])
def test_constructor_errors_match_torch(device, torch, cls, params, kw, exc, msg):
    make = _PARAM_KINDS[params]
    with pytest.raises(exc, match=re.escape(msg)):
        getattr(optim, cls)(make(nn.Parameter(tl.ones(2, device=device))), **kw)
    with pytest.raises(exc, match=re.escape(msg)):
        getattr(torch.optim, cls)(make(torch.nn.Parameter(torch.ones(2))), **kw)


def test_duplicate_params_warn_and_defaults_fill_groups(device):
    p = nn.Parameter(tl.ones(2, device=device))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    q = nn.Parameter(tl.ones(2, device=device))
    opt = optim.SGD([p], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": q, "lr": 0.3})
    assert opt.param_groups[1]["params"] == [q]
    assert opt.param_groups[1]["lr"] == 0.3 and opt.param_groups[1]["momentum"] == 0.5
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([q])


def test_repr_lists_groups_like_torch(device):
    p = nn.Parameter(tl.ones(2, device=device))
    r = repr(optim.SGD([p], lr=0.1, momentum=0.9))
    assert r == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                 "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0.9\n"
                 "    nesterov: False\n    weight_decay: 0\n)")


class _SignSGD(optim.Optimizer):
    """A user optimizer on the base class: required lr, state, groups."""

    def __init__(self, params, lr=optim.optimizer.required):
        super().__init__(params, {"lr": lr})

    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    self.state[p]["n"] = self.state[p].get("n", 0) + 1
                    p.detach().sub_(p.grad.sign(), alpha=g["lr"])


def test_optimizer_base_class_for_user_optimizers(device):
    p = nn.Parameter(tl.tensor([1.0, -1.0], device=device))
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        _SignSGD([p])
    opt = _SignSGD([p], lr=0.25)
    p.grad = tl.tensor([3.0, -0.5], device=device)
    opt.step()
    opt.step()
    assert _np(p).tolist() == [0.5, -0.5] and opt.state[p]["n"] == 2
    assert opt.state_dict()["state"] == {0: {"n": 2}}
    with pytest.raises(NotImplementedError):
        optim.Optimizer([p], {}).step()


@pytest.mark.skipif(not hasattr(tl.Tensor, "backward"), reason="needs autograd (Tensor.backward)")
def test_non_leaf_is_refused(device):
    w = tl.ones(2, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([w * 2])
