"""Adadelta, Adagrad, RMSprop, NAdam, RAdam (and the implementation keywords of every optimizer)
against torch.optim: parameter trajectories with identical hand-set gradients, option
combinations, param groups, add_param_group, zero_grad, state_dict format and round trips,
maximize, in-place updates (version counters), errors."""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim

SHAPES = [(3, 4), (5,), ()]
TOL = dict(rtol=3e-5, atol=2e-6)
NAMES = ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop", "NAdam", "RAdam"]


def _np(t):
    return t.detach().cpu().numpy()


def _twins(torch, device, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    ours = [nn.Parameter(tl.tensor(q.detach().numpy(), device=device)) for q in theirs]
    return ours, theirs


def _set_grads(torch, ours, theirs, rng, skip=()):
    for i, (p, q) in enumerate(zip(ours, theirs)):
        if i in skip:
            p.grad, q.grad = None, None
            continue
        g = rng.standard_normal(tuple(p.shape)).astype("float32")
        p.grad = tl.tensor(g, device=p.device)
        q.grad = torch.tensor(g)


def _run(torch, device, make_ours, make_theirs, steps=6, skip=(), groups=None, tol=TOL):
    ours, theirs = _twins(torch, device)
    a = groups(ours) if groups else ours
    b = groups(theirs) if groups else theirs
    opt, ref = make_ours(a), make_theirs(b)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        _set_grads(torch, ours, theirs, rng, skip)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(_np(p), q.detach().numpy(), **tol)
    return opt, ref, ours, theirs


def _cases(**axes):
    keys = list(axes)
    return [dict(zip(keys, values)) for values in itertools.product(*axes.values())]


CASES = {
    "Adadelta": _cases(lr=(1.0, 0.5), rho=(0.9, 0.5), eps=(1e-6, 1e-3), weight_decay=(0.0, 0.1),
                       maximize=(False, True)),
    "Adagrad": _cases(lr=(0.1,), lr_decay=(0.0, 0.05), weight_decay=(0.0, 0.1), initial_accumulator_value=(0.0, 0.5),
                      eps=(1e-10, 1e-3), maximize=(False, True)),
    "RMSprop": _cases(lr=(0.01,), alpha=(0.99, 0.7), weight_decay=(0.0, 0.1), momentum=(0.0, 0.9),
                      centered=(False, True), maximize=(False, True)),
    "NAdam": _cases(lr=(0.01,), betas=((0.9, 0.999), (0.6, 0.9)), weight_decay=(0.0, 0.1), momentum_decay=(4e-3, 0.1),
                    decoupled_weight_decay=(False, True), maximize=(False, True)),
    "RAdam": _cases(lr=(0.01,), betas=((0.9, 0.999), (0.5, 0.9)), eps=(1e-8, 1e-3), weight_decay=(0.0, 0.1),
                    decoupled_weight_decay=(False, True), maximize=(False, True)),
}
PARAMS = [(name, kw) for name, cases in CASES.items() for kw in cases]


@pytest.mark.parametrize("name,kw", PARAMS, ids=[f"{n}-" + "-".join(f"{k}={v}" for k, v in kw.items())
                                                  for n, kw in PARAMS])
def test_trajectory_matches_torch(device, torch, name, kw):
    # RAdam leaves the un-rectified branch (rho_t > 5) after a few steps
    steps = 8 if name == "RAdam" else 5
    _run(torch, device, lambda ps: getattr(optim, name)(ps, **kw), lambda ps: getattr(torch.optim, name)(ps, **kw),
         steps=steps)


def test_radam_takes_both_branches(torch):
    for beta2 in (0.9, 0.999):
        rho_inf = 2 / (1 - beta2) - 1
        rho = [rho_inf - 2 * t * beta2 ** t / (1 - beta2 ** t) for t in range(1, 9)]
        assert min(rho) <= 5 < max(rho)  # the trajectories above exercise both updates


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("flags", [dict(foreach=True), dict(foreach=False), dict(differentiable=False),
                                   dict(fused=True), dict(capturable=False)],
                         ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()))
def test_implementation_keywords_accepted(device, torch, name, flags):
    import inspect
    sig = inspect.signature(getattr(torch.optim, name))
    if any(k not in sig.parameters for k in flags):
        with pytest.raises(TypeError):
            getattr(optim, name)([nn.Parameter(tl.zeros(2, device=device))], **flags)
        return
    _run(torch, device, lambda ps: getattr(optim, name)(ps, lr=0.05, **flags),
         lambda ps: getattr(torch.optim, name)(ps, lr=0.05, **flags), steps=3)


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_torch(torch, name):
    import inspect
    ours = inspect.signature(getattr(optim, name))
    theirs = inspect.signature(getattr(torch.optim, name))
    assert list(ours.parameters) == list(theirs.parameters)
    for k, p in theirs.parameters.items():
        assert ours.parameters[k].kind == p.kind, k
        assert ours.parameters[k].default == p.default, k


@pytest.mark.parametrize("name", [n for n in NAMES if n in ("SGD", "Adam", "AdamW", "Adagrad")])
def test_fused_errors(torch, name):
    for bad in (dict(fused=True, foreach=True), dict(fused=True, differentiable=True)):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **bad)
        with pytest.raises(RuntimeError, match="fused") as ours:
            getattr(optim, name)([nn.Parameter(tl.zeros(2))], **bad)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["Adam", "Adadelta", "RMSprop", "NAdam", "RAdam"])
def test_capturable_on_cpu_raises_as_torch(torch, name):
    q = torch.nn.Parameter(torch.zeros(2))
    q.grad = torch.ones(2)
    with pytest.raises(AssertionError, match="If capturable=True"):
        getattr(torch.optim, name)([q], capturable=True).step()
    p = nn.Parameter(tl.zeros(2))
    p.grad = tl.ones(2)
    with pytest.raises(AssertionError, match="If capturable=True, params"):
        getattr(optim, name)([p], capturable=True).step()


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adadelta", "RMSprop", "NAdam", "RAdam"])
def test_capturable_on_cuda_keeps_steps_on_device(device, torch, name):
    if device != "cuda":
        pytest.skip("capturable is a CUDA placement")
    kw = dict(lr=0.05, weight_decay=0.1)
    # 8 steps: RAdam's rectified branch starts at step 6 (torch.where on the device picks it). Its
    # capturable rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t) is float32 arithmetic on the step tensor
    # (torch's too), 1999 - 1993 cancelling to ~6e-5 relative, against torch's float64 non-capturable run
    tol = dict(rtol=5e-4, atol=1e-5) if name == "RAdam" else TOL
    opt, ref, ours, theirs = _run(torch, device, lambda ps: getattr(optim, name)(ps, capturable=True, **kw),
                                  lambda ps: getattr(torch.optim, name)(ps, **kw), steps=8, tol=tol)
    for p in ours:
        assert opt.state[p]["step"].device.type == "cuda"
        assert opt.state[p]["step"].item() == 8.0
    # a capturable step never waits for the device (torch's point: no host read of the step)
    rng = np.random.default_rng(9)
    _set_grads(torch, ours, theirs, rng)
    with tl.cuda.set_sync_debug_mode("error"):
        opt.step()
    ref.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(_np(p), q.detach().numpy(), **tol)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_fused_adam_on_cuda_does_not_sync(device, torch, name):
    if device != "cuda":
        pytest.skip("a fused group's step lives on the CPU parameters' device: nothing to sync")
    kw = dict(lr=0.05, weight_decay=0.1, amsgrad=True)
    opt, ref, ours, theirs = _run(torch, device, lambda ps: getattr(optim, name)(ps, fused=True, **kw),
                                  lambda ps: getattr(torch.optim, name)(ps, **kw), steps=3)
    _set_grads(torch, ours, theirs, np.random.default_rng(4))
    with tl.cuda.set_sync_debug_mode("error"):
        opt.step()
    ref.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL)


@pytest.mark.parametrize("name", NAMES)
def test_fused_rejects_integer_params(name):
    import inspect
    if "fused" not in inspect.signature(getattr(optim, name)).parameters:
        pytest.skip("no fused implementation in torch")
    p = tl.zeros(2, dtype=tl.int64)
    p.grad = tl.zeros(2, dtype=tl.int64)
    with pytest.raises(RuntimeError, match=r"`fused=True` requires all the params to be floating point"):
        opt = getattr(optim, name)([p], fused=True)
        opt.step()


@pytest.mark.parametrize("name", ["Adadelta", "Adagrad", "RMSprop", "NAdam", "RAdam"])
def test_param_groups_and_add_param_group(device, torch, name):
    def groups(ps):
        return [{"params": ps[:1]}, {"params": ps[1:2], "lr": 0.003, "weight_decay": 0.2}]

    opt, ref, ours, theirs = _run(torch, device, lambda g: getattr(optim, name)(g, lr=0.02),
                                  lambda g: getattr(torch.optim, name)(g, lr=0.02), groups=groups, skip=(2,))
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in ref.param_groups]
    opt.add_param_group({"params": [ours[2]], "lr": 0.5})
    ref.add_param_group({"params": [theirs[2]], "lr": 0.5})
    assert opt.param_groups[2].keys() == ref.param_groups[2].keys()
    rng = np.random.default_rng(7)
    for _ in range(3):
        _set_grads(torch, ours, theirs, rng)
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(_np(p), q.detach().numpy(), **TOL)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [ours[0]]})


def _state_matches(opt, ref):
    sd, rsd = opt.state_dict(), ref.state_dict()
    assert sd["param_groups"] == [{k: v for k, v in g.items()} for g in rsd["param_groups"]]
    assert sd["state"].keys() == rsd["state"].keys()
    for k in rsd["state"]:
        assert sd["state"][k].keys() == rsd["state"][k].keys(), k
        for key, v in rsd["state"][k].items():
            mine = sd["state"][k][key]
            assert str(mine.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], key
            assert tuple(mine.shape) == tuple(v.shape), key
            np.testing.assert_allclose(_np(mine), v.detach().numpy(), **TOL)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_format_and_round_trip(device, torch, name):
    kw = dict(lr=0.02)
    opt, ref, ours, theirs = _run(torch, device, lambda ps: getattr(optim, name)(ps, **kw),
                                  lambda ps: getattr(torch.optim, name)(ps, **kw), steps=3, skip=(1,))
    _state_matches(opt, ref)
    # a fresh optimizer loaded from the state dict continues the same trajectory
    sd = copy.deepcopy(opt.state_dict())
    clones = [nn.Parameter(p.detach().clone()) for p in ours]
    opt2 = getattr(optim, name)(clones, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw["lr"]
    rng = np.random.default_rng(5)
    for _ in range(3):
        _set_grads(torch, ours, theirs, rng)
        for p, c in zip(ours, clones):
            c.grad = p.grad.clone()
        for o in (opt, opt2, ref):
            o.step()
    for p, c, q in zip(ours, clones, theirs):
        np.testing.assert_allclose(_np(c), q.detach().numpy(), **TOL)
        np.testing.assert_allclose(_np(c), _np(p), rtol=0, atol=0)
    # and the loaded state is independent of the dict it came from
    for k, st in sd["state"].items():
        for key, v in st.items():
            if key != "step":
                assert v.data_ptr() != opt2.state[clones[k]][key].data_ptr()


@pytest.mark.parametrize("name", NAMES)
def test_updates_in_place_and_bump_versions(device, name):
    p = nn.Parameter(tl.ones(3, device=device))
    ptr, version = p.data_ptr(), p._version
    opt = getattr(optim, name)([p], lr=0.1)
    p.grad = tl.full((3,), 0.5, device=device)
    opt.step()
    assert p.data_ptr() == ptr
    assert p._version > version
    assert p.grad_fn is None and p.requires_grad
    assert not np.allclose(_np(p), 1.0)
    opt.zero_grad()
    assert p.grad is None
    p.grad = tl.ones(3, device=device)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and _np(p.grad).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_maximize_is_descent_on_negated_gradient(device, name):
    a = nn.Parameter(tl.tensor([1.0, -2.0, 3.0], device=device))
    b = nn.Parameter(tl.tensor([1.0, -2.0, 3.0], device=device))
    oa = getattr(optim, name)([a], lr=0.1, maximize=True)
    ob = getattr(optim, name)([b], lr=0.1)
    for g in ([0.5, -1.0, 2.0], [0.1, 0.2, -0.3]):
        a.grad = tl.tensor(g, device=device)
        b.grad = -tl.tensor(g, device=device)
        oa.step()
        ob.step()
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1)),
                                     ("RMSprop", dict(lr=0.1, momentum=0.5, centered=True)),
                                     ("Adagrad", dict(lr=0.1)), ("Adadelta", dict(lr=0.5)),
                                     ("RAdam", dict(lr=0.1)), ("NAdam", dict(lr=0.1))])
def test_differentiable_step_records_autograd(torch, name, kw):
    # the updated parameter is a function of the leaf it was computed from: d(sum p')/d(w)
    w0 = np.array([0.5, -1.5, 2.0], dtype="float32")
    g0 = np.array([0.3, -0.7, 1.1], dtype="float32")

    def ours():
        w = tl.tensor(w0, requires_grad=True)
        p = w.clone()
        p.grad = tl.tensor(g0) * w
        opt = getattr(optim, name)([p], differentiable=True, **kw)
        opt.step()
        p.sum().backward()
        return _np(p), _np(w.grad)

    def theirs():
        w = torch.tensor(w0, requires_grad=True)
        p = w.clone()
        p.grad = torch.tensor(g0) * w
        opt = getattr(torch.optim, name)([p], differentiable=True, **kw)
        opt.step()
        p.sum().backward()
        return p.detach().numpy(), w.grad.numpy()

    (pv, pg), (qv, qg) = ours(), theirs()
    np.testing.assert_allclose(pv, qv, **TOL)
    np.testing.assert_allclose(pg, qg, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name,kw,msg", [
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("RAdam", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
])
def test_invalid_hyperparameters(torch, name, kw, msg):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(1))], **kw)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([nn.Parameter(tl.zeros(1))], **kw)
    assert str(ours.value) == str(theirs.value) == msg


def test_adagrad_state_exists_before_first_step(torch):
    p = nn.Parameter(tl.zeros(2))
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    q = torch.nn.Parameter(torch.zeros(2))
    ref = torch.optim.Adagrad([q], initial_accumulator_value=0.25)
    _state_matches(opt, ref)


def test_closure_is_called_with_grad_enabled(device):
    p = nn.Parameter(tl.tensor([2.0], device=device))
    opt = optim.RMSprop([p], lr=0.1)

    def closure():
        opt.zero_grad()
        assert tl.is_grad_enabled()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0
    assert p.item() < 2.0


VERSION_CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True)),
                 ("Adam", dict(amsgrad=True, weight_decay=0.1)), ("AdamW", dict()), ("Adadelta", dict(weight_decay=0.1)),
                 ("Adagrad", dict(weight_decay=0.1)), ("RMSprop", dict(momentum=0.9, centered=True)),
                 ("NAdam", dict()), ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
                 ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True))]


@pytest.mark.parametrize("name,kw", VERSION_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(VERSION_CASES)])
def test_version_counter_bumps_match_torch(device, torch, name, kw):
    # every in-place write torch makes to the parameter, we make too (autograd's saved-tensor checks see them)
    p, q = nn.Parameter(tl.ones(3, device=device)), torch.nn.Parameter(torch.ones(3))
    opt, ref = getattr(optim, name)([p], **kw), getattr(torch.optim, name)([q], **kw)
    for _ in range(6):
        p.grad, q.grad = tl.full((3,), 0.5, device=device), torch.full((3,), 0.5)
        opt.step()
        ref.step()
        assert p._version == q._version


def test_load_state_dict_places_step_as_torch(device, torch):
    # step stays a CPU tensor unless the group is fused (or capturable): then float32 on the param's device
    for flags in (dict(), dict(fused=True)):
        p = nn.Parameter(tl.ones(2, device=device))
        opt = optim.Adam([p], lr=0.1, **flags)
        p.grad = tl.ones(2, device=device)
        opt.step()
        sd = opt.state_dict()
        assert sd["state"][0]["step"].device.type == ("cpu" if not flags else device)
        sd["state"][0]["step"] = sd["state"][0]["step"].cpu()
        q = nn.Parameter(tl.ones(2, device=device))
        opt2 = optim.Adam([q], lr=0.1, **flags)
        opt2.load_state_dict(sd)
        step = opt2.state[q]["step"]
        assert step.device.type == ("cpu" if not flags else device) and step.dtype == tl.float32
        assert step.item() == 1.0
        assert opt2.state[q]["exp_avg"].device.type == device


def test_named_parameters_as_torch(torch):
    lin = nn.Linear(3, 2)
    tlin = torch.nn.Linear(3, 2)
    opt = optim.NAdam(lin.named_parameters(), lr=0.01)
    ref = torch.optim.NAdam(tlin.named_parameters(), lr=0.01)
    assert opt.param_groups[0]["param_names"] == ref.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    assert set(opt.state_dict()["param_groups"][0]) == set(ref.state_dict()["param_groups"][0])
    extra = nn.Parameter(tl.zeros(1))
    with pytest.raises(ValueError) as ours:
        opt.add_param_group({"params": [extra]})
    with pytest.raises(ValueError) as theirs:
        ref.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))]})
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.SGD([("a", nn.Parameter(tl.zeros(1))), nn.Parameter(tl.zeros(1))])
    # names survive a round trip into an unnamed optimizer
    plain = optim.NAdam(lin.parameters(), lr=0.5)
    plain.load_state_dict(opt.state_dict())
    assert plain.param_groups[0]["param_names"] == ["weight", "bias"] and plain.param_groups[0]["lr"] == 0.01


@pytest.mark.parametrize("name", NAMES)
def test_tensor_lr_matches_torch(device, torch, name):
    _run(torch, device, lambda ps: getattr(optim, name)(ps, lr=tl.tensor(0.02)),
         lambda ps: getattr(torch.optim, name)(ps, lr=torch.tensor(0.02)), steps=3)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(optim, name)([nn.Parameter(tl.zeros(1))], lr=tl.tensor([0.1, 0.2]))


F64_CASES = [("Adadelta", dict(weight_decay=0.1, maximize=True)), ("Adagrad", dict(lr_decay=0.1, weight_decay=0.1)),
             ("RMSprop", dict(momentum=0.9, centered=True, weight_decay=0.1)),
             ("NAdam", dict(decoupled_weight_decay=True, weight_decay=0.1)),
             ("RAdam", dict(betas=(0.5, 0.9), weight_decay=0.1))]


@pytest.mark.parametrize("name,kw", F64_CASES, ids=[n for n, _ in F64_CASES])
def test_float64_trajectory_matches_torch_tightly(device, torch, name, kw):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    ours = [nn.Parameter(tl.tensor(a, device=device)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    opt, ref = getattr(optim, name)(ours, lr=0.05, **kw), getattr(torch.optim, name)(theirs, lr=0.05, **kw)
    for _ in range(8):
        for p, q in zip(ours, theirs):
            g = rng.standard_normal(tuple(p.shape))
            p.grad, q.grad = tl.tensor(g, device=device), torch.tensor(g)
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        assert p.dtype == tl.float64
        np.testing.assert_allclose(_np(p), q.detach().numpy(), rtol=1e-12, atol=1e-14)
