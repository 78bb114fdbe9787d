"""tensorlab.optim.lr_scheduler vs torch.optim.lr_scheduler: the learning-rate (and momentum)
sequence of every scheduler over 30+ steps with two param groups, step(epoch), state_dict
round trips, composition (SequentialLR, ChainedScheduler), ReduceLROnPlateau, warnings and errors."""
from __future__ import annotations

import math
import warnings

import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim
from tensorlab.optim import lr_scheduler as ls

STEPS = 36


def _pair(torch, opt_name="SGD", **kw):
    kw = dict(lr=0.1, momentum=0.9, **kw) if opt_name == "SGD" else dict(lr=0.1, **kw)
    ours = getattr(optim, opt_name)([{"params": [nn.Parameter(tl.zeros(2))]},
                                     {"params": [nn.Parameter(tl.zeros(3))], "lr": 0.02}], **kw)
    theirs = getattr(torch.optim, opt_name)([{"params": [torch.nn.Parameter(torch.zeros(2))]},
                                             {"params": [torch.nn.Parameter(torch.zeros(3))], "lr": 0.02}], **kw)
    return ours, theirs


def _hyper(opt):
    out = []
    for g in opt.param_groups:
        out.append((g["lr"], g.get("momentum"), tuple(g["betas"]) if "betas" in g else None))
    return out


def _close(a, b):
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if isinstance(u, tuple):
                assert all(math.isclose(p, q, rel_tol=1e-12, abs_tol=1e-15) for p, q in zip(u, v)), (a, b)
            elif u is None:
                assert v is None
            else:
                assert math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-15), (a, b)


def _lambda(e):
    return 0.95 ** e


def _mult(e):
    return 0.9 if e % 3 else 1.05


SCHEDULERS = {
    "LambdaLR": dict(lr_lambda=_lambda),
    "LambdaLR-list": dict(lr_lambda=[_lambda, lambda e: 1.0 / (e + 1)]),
    "MultiplicativeLR": dict(lr_lambda=_mult),
    "StepLR": dict(step_size=7, gamma=0.5),
    "MultiStepLR": dict(milestones=[3, 10, 10, 25], gamma=0.3),
    "ExponentialLR": dict(gamma=0.93),
    "CosineAnnealingLR": dict(T_max=10, eta_min=0.001),
    "CosineAnnealingWarmRestarts": dict(T_0=5, T_mult=2, eta_min=0.0005),
    "CosineAnnealingWarmRestarts-1": dict(T_0=7),
    "LinearLR": dict(start_factor=0.25, end_factor=0.9, total_iters=12),
    "ConstantLR": dict(factor=0.4, total_iters=8),
    "PolynomialLR": dict(total_iters=20, power=2.0),
    "OneCycleLR": dict(max_lr=[0.5, 0.2], total_steps=STEPS + 1),
    "OneCycleLR-3phase-linear": dict(max_lr=0.3, total_steps=STEPS + 1, three_phase=True, anneal_strategy="linear",
                                     pct_start=0.25),
    "CyclicLR": dict(base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4, step_size_down=6),
    "CyclicLR-triangular2": dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "CyclicLR-exp_range": dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97,
                               cycle_momentum=False),
}


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_lr_sequence_matches_torch(torch, key, opt_name):
    name = key.split("-")[0]
    kw = SCHEDULERS[key]
    ours_opt, theirs_opt = _pair(torch, opt_name)
    if name == "CyclicLR" and opt_name == "Adam" and kw.get("cycle_momentum", True):
        kw = dict(kw)  # Adam cycles beta1
    ours = getattr(ls, name)(ours_opt, **kw)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kw)
    _close(_hyper(ours_opt), _hyper(theirs_opt))
    assert ours.last_epoch == theirs.last_epoch
    for _ in range(STEPS):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        _close(_hyper(ours_opt), _hyper(theirs_opt))
        assert all(math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
                   for a, b in zip(ours.get_last_lr(), theirs.get_last_lr()))
        assert ours.last_epoch == theirs.last_epoch
    assert {k for k in ours.state_dict()} == {k for k in theirs.state_dict()}


@pytest.mark.parametrize("key", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                 "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts"])
def test_step_with_epoch_uses_closed_form_and_warns(torch, key):
    name = key.split("-")[0]
    ours_opt, theirs_opt = _pair(torch)
    ours = getattr(ls, name)(ours_opt, **SCHEDULERS[key])
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **SCHEDULERS[key])
    for epoch in (3, 11, 4, 17, 17, 30):
        ours_opt.step()
        theirs_opt.step()
        with warnings.catch_warnings(record=True) as w_ours:
            warnings.simplefilter("always")
            ours.step(epoch)
        with warnings.catch_warnings(record=True) as w_theirs:
            warnings.simplefilter("always")
            theirs.step(epoch)
        # torch warns except for CosineAnnealingWarmRestarts, whose step(epoch) is documented
        assert [str(w.message) for w in w_ours] == [str(w.message) for w in w_theirs]
        assert len(w_ours) == (name != "CosineAnnealingWarmRestarts")
        assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(ours.get_last_lr(), theirs.get_last_lr()))


def test_scheduler_step_before_optimizer_step_warns(torch):
    ours_opt, theirs_opt = _pair(torch)
    ours = ls.StepLR(ours_opt, step_size=2)
    theirs = torch.optim.lr_scheduler.StepLR(theirs_opt, step_size=2)
    with pytest.warns(UserWarning) as w_theirs:
        theirs.step()
    with pytest.warns(UserWarning) as w_ours:
        ours.step()
    assert [str(w.message) for w in w_ours] == [str(w.message) for w in w_theirs]
    assert "Detected call of `lr_scheduler.step()` before `optimizer.step()`" in str(w_ours[0].message)
    assert w_ours[0].filename == __file__  # attributed to the caller's line
    # in the right order: silent
    ours_opt2, _ = _pair(torch)
    s = ls.StepLR(ours_opt2, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours_opt2.step()
        s.step()
        ours_opt2.step()
        s.step()


def test_overridden_optimizer_step_warns(torch):
    opt, _ = _pair(torch)
    s = ls.ExponentialLR(opt, gamma=0.9)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="Seems like `optimizer.step\\(\\)` has been overridden"):
        s.step()


def test_get_lr_outside_step_warns(torch):
    opt, topt = _pair(torch)
    s = ls.StepLR(opt, step_size=3)
    t = torch.optim.lr_scheduler.StepLR(topt, step_size=3)
    with pytest.warns(UserWarning) as w_theirs:
        t.get_lr()
    with pytest.warns(UserWarning) as w_ours:
        s.get_lr()
    assert str(w_ours[0].message) == str(w_theirs[0].message) == (
        "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.")


def test_lr_scheduler_alias_and_base_class(torch):
    assert issubclass(ls._LRScheduler, ls.LRScheduler)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        ls.StepLR([], step_size=1)

    class Halving(ls.LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    opt, _ = _pair(torch)
    s = Halving(opt)
    for _ in range(3):
        opt.step()
        s.step()
    assert s.get_last_lr() == [0.1 * 0.125, 0.02 * 0.125]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.02]


def test_resume_needs_initial_lr(torch):
    opt, topt = _pair(torch)
    with pytest.raises(KeyError) as ours:
        ls.StepLR(opt, step_size=2, last_epoch=4)
    with pytest.raises(KeyError) as theirs:
        torch.optim.lr_scheduler.StepLR(topt, step_size=2, last_epoch=4)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("key", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "CyclicLR", "LambdaLR",
                                 "CosineAnnealingWarmRestarts"])
def test_state_dict_round_trip_continues_the_sequence(torch, key):
    name = key.split("-")[0]
    kw = SCHEDULERS[key]
    opt, _ = _pair(torch)
    s = getattr(ls, name)(opt, **kw)
    for _ in range(9):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 9
    opt2, _ = _pair(torch)
    opt2.load_state_dict(opt.state_dict())
    s2 = getattr(ls, name)(opt2, **kw)
    s2.load_state_dict(sd)
    for _ in range(12):
        for o, sch in ((opt, s), (opt2, s2)):
            o.step()
            sch.step()
        assert s.get_last_lr() == s2.get_last_lr()


def test_sequential_lr_matches_torch(torch):
    ours_opt, theirs_opt = _pair(torch)

    def build(mod, opt):
        return mod.SequentialLR(opt, [mod.LinearLR(opt, start_factor=0.1, total_iters=5),
                                      mod.ExponentialLR(opt, gamma=0.9),
                                      mod.CosineAnnealingLR(opt, T_max=8)], milestones=[5, 15])

    ours, theirs = build(ls, ours_opt), build(torch.optim.lr_scheduler, theirs_opt)
    _close(_hyper(ours_opt), _hyper(theirs_opt))
    for _ in range(STEPS):
        for o in (ours_opt, theirs_opt, ours, theirs):
            o.step()
        _close(_hyper(ours_opt), _hyper(theirs_opt))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers provided to be one more"):
        ls.SequentialLR(ours_opt, [ls.StepLR(ours_opt, 2), ls.StepLR(ours_opt, 3)], milestones=[])


def test_chained_scheduler_matches_torch(torch):
    ours_opt, theirs_opt = _pair(torch)

    def build(mod, opt):
        return mod.ChainedScheduler([mod.ConstantLR(opt, factor=0.5, total_iters=4),
                                     mod.ExponentialLR(opt, gamma=0.95),
                                     mod.MultiStepLR(opt, milestones=[10, 20], gamma=0.5)], optimizer=opt)

    ours, theirs = build(ls, ours_opt), build(torch.optim.lr_scheduler, theirs_opt)
    for _ in range(STEPS):
        for o in (ours_opt, theirs_opt, ours, theirs):
            o.step()
        _close(_hyper(ours_opt), _hyper(theirs_opt))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        ls.ChainedScheduler([ls.ReduceLROnPlateau(ours_opt)])


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", factor=0.5, patience=2, threshold_mode="abs", threshold=0.1),
                                dict(patience=1, cooldown=3, min_lr=[0.01, 0.005], eps=1e-9),
                                dict(patience=0, threshold=0.0, min_lr=0.004)])
def test_reduce_lr_on_plateau_matches_torch(torch, kw):
    ours_opt, theirs_opt = _pair(torch)
    ours = ls.ReduceLROnPlateau(ours_opt, **kw)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **kw)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.91] * 4
    for m in metrics:
        ours_opt.step()
        theirs_opt.step()
        ours.step(tl.tensor(m))
        theirs.step(m)
        _close(_hyper(ours_opt), _hyper(theirs_opt))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        assert (ours.num_bad_epochs, ours.cooldown_counter, ours.last_epoch) == (
            theirs.num_bad_epochs, theirs.cooldown_counter, theirs.last_epoch)
    sd = ours.state_dict()
    assert set(sd) == set(theirs.state_dict())
    fresh = ls.ReduceLROnPlateau(ours_opt)
    fresh.load_state_dict(sd)
    assert fresh.best == ours.best and fresh.mode == ours.mode


@pytest.mark.parametrize("name,kw,exc,msg", [
    ("ReduceLROnPlateau", dict(factor=1.0), ValueError, "Factor should be < 1.0."),
    ("ReduceLROnPlateau", dict(mode="mid"), ValueError, "mode mid is unknown!"),
    ("ConstantLR", dict(factor=2.0), ValueError, "Constant multiplicative factor expected to be between 0 and 1."),
    ("LinearLR", dict(start_factor=0.0), ValueError, "Starting multiplicative factor expected to be greater than 0"),
    ("CosineAnnealingWarmRestarts", dict(T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    ("OneCycleLR", dict(max_lr=0.1), ValueError, "You must define either total_steps OR"),
    ("OneCycleLR", dict(max_lr=[0.1], total_steps=10), ValueError, "max_lr must have the same length"),
    ("CyclicLR", dict(base_lr=0.1, max_lr=0.2, mode="zigzag"), ValueError, "mode is invalid and scale_fn is None"),
    ("LambdaLR", dict(lr_lambda=[_lambda]), ValueError, "Expected 2 lr_lambdas, but got 1"),
])
def test_constructor_errors_match_torch(torch, name, kw, exc, msg):
    ours_opt, theirs_opt = _pair(torch)
    with pytest.raises(exc) as theirs:
        getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kw)
    with pytest.raises(exc, match=msg.replace("(", "\\(").replace(")", "\\)")) as ours:
        getattr(ls, name)(ours_opt, **kw)
    assert str(ours.value) == str(theirs.value)


def test_one_cycle_refuses_steps_past_total(torch):
    opt, _ = _pair(torch)
    s = ls.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        s.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        s.step()


def test_cyclic_lr_needs_momentum(torch):
    opt = optim.Adagrad([nn.Parameter(tl.zeros(1))])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ls.CyclicLR(opt, base_lr=0.01, max_lr=0.1)
    ls.CyclicLR(opt, base_lr=0.01, max_lr=0.1, cycle_momentum=False)


def test_tensor_lr_is_updated_in_place(torch):
    lr = tl.tensor(0.1)
    opt = optim.Adam([nn.Parameter(tl.zeros(2))], lr=lr)
    s = ls.ExponentialLR(opt, gamma=0.5)
    opt.step()
    s.step()
    assert opt.param_groups[0]["lr"] is lr
    assert lr.item() == pytest.approx(0.05)
    assert s.get_last_lr()[0].item() == pytest.approx(0.05)
