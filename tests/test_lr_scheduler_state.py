"""tensorlab.optim.lr_scheduler against torch.optim.lr_scheduler beyond plain stepping: state
dicts moved between the two libraries (both ways), resuming with last_epoch, step(epoch) where
no closed form exists, nested SequentialLR/ChainedScheduler state, callable objects in state
dicts, param groups added under ReduceLROnPlateau, and tensor learning rates."""
from __future__ import annotations

import copy
import math
import warnings

import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim
from tensorlab.optim import lr_scheduler as ls
from test_lr_scheduler import _pair as _optimizers  # two param groups, ours and torch's

GROUP_KEYS = ("lr", "initial_lr", "momentum", "betas", "max_lr", "min_lr", "max_momentum", "base_momentum")


class Decay:
    """A callable object: its attributes travel in state dicts (plain functions do not)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** epoch


def _halving(epoch):
    return 0.5 ** (epoch // 4)


def _wobble(epoch):
    return 1.1 if epoch % 2 else 0.85


KINDS = {
    "LambdaLR": dict(lr_lambda=_halving),
    "MultiplicativeLR": dict(lr_lambda=_wobble),
    "StepLR": dict(step_size=3, gamma=0.6),
    "MultiStepLR": dict(milestones=[2, 5, 5, 11], gamma=0.4),
    "ConstantLR": dict(factor=0.3, total_iters=6),
    "LinearLR": dict(start_factor=0.2, end_factor=0.8, total_iters=9),
    "ExponentialLR": dict(gamma=0.9),
    "PolynomialLR": dict(total_iters=14, power=1.5),
    "CosineAnnealingLR": dict(T_max=5, eta_min=0.002),
    "CosineAnnealingWarmRestarts": dict(T_0=3, T_mult=2, eta_min=0.001),
    "CyclicLR": dict(base_lr=0.01, max_lr=[0.1, 0.06], step_size_up=3, step_size_down=4),
    "OneCycleLR": dict(max_lr=[0.4, 0.2], total_steps=40, three_phase=True),
}


def _groups(opt):
    return [tuple(tuple(g[k]) if k == "betas" and k in g else g.get(k) for k in GROUP_KEYS) for g in opt.param_groups]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, (list, tuple)):
            _same(x, y)
        elif x is None or y is None:
            assert x is y
        else:
            assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15), (a, b)


def _copy_groups(src, dst):
    """Give dst's param groups src's hyperparameters (what loading an optimizer state would do)."""
    for s, d in zip(src.param_groups, dst.param_groups):
        for key in GROUP_KEYS:
            if key in s:
                d[key] = tuple(s[key]) if key == "betas" else s[key]


def _run(pairs, steps):
    """Step every (optimizer, scheduler) pair in lockstep; all must agree with the last one."""
    for _ in range(steps):
        for opt, sched in pairs:
            opt.step()
            sched.step()
        ref_opt, ref = pairs[-1]
        for opt, sched in pairs[:-1]:
            _same(_groups(opt), _groups(ref_opt))
            _same(sched.get_last_lr(), ref.get_last_lr())
            assert getattr(sched, "last_epoch", None) == getattr(ref, "last_epoch", None)


@pytest.mark.parametrize("direction", ["torch->ours", "ours->torch"])
@pytest.mark.parametrize("name", list(KINDS))
def test_state_dict_moves_between_libraries(torch, name, direction):
    ours_opt, theirs_opt = _optimizers(torch)
    ours = getattr(ls, name)(ours_opt, **KINDS[name])
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **KINDS[name])
    _run([(ours_opt, ours), (theirs_opt, theirs)], 9)
    assert set(ours.state_dict()) == set(theirs.state_dict())

    # a fresh scheduler of the other library takes over from the saved state
    new_ours_opt, new_theirs_opt = _optimizers(torch)
    if direction == "torch->ours":
        taker = getattr(ls, name)(new_ours_opt, **KINDS[name])
        _copy_groups(theirs_opt, new_ours_opt)  # after construction, which moves the lrs
        taker.load_state_dict(theirs.state_dict())
        pairs = [(new_ours_opt, taker), (theirs_opt, theirs)]
    else:
        taker = getattr(torch.optim.lr_scheduler, name)(new_theirs_opt, **KINDS[name])
        _copy_groups(ours_opt, new_theirs_opt)
        taker.load_state_dict(ours.state_dict())
        pairs = [(ours_opt, ours), (new_theirs_opt, taker)]
    assert taker.last_epoch == 9
    _run(pairs, 14)


@pytest.mark.parametrize("name", list(KINDS))
def test_resuming_with_last_epoch_matches_torch(torch, name):
    """A scheduler built with last_epoch=k on an optimizer that already holds 'initial_lr'
    continues from epoch k; each kind has its own rule for that first step and for whether the
    lr the groups hold is kept or recomputed from 'initial_lr' (CosineAnnealingLR's first step
    after resuming goes back onto its curve)."""
    ours_opt, theirs_opt = _optimizers(torch)
    _run([(ours_opt, getattr(ls, name)(ours_opt, **KINDS[name])),
          (theirs_opt, getattr(torch.optim.lr_scheduler, name)(theirs_opt, **KINDS[name]))], 7)
    for opt in (ours_opt, theirs_opt):  # lrs moved off the schedule by hand before resuming
        for group in opt.param_groups:
            group["lr"] *= 0.5
    ours = getattr(ls, name)(ours_opt, last_epoch=7, **KINDS[name])
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, last_epoch=7, **KINDS[name])
    _same(_groups(ours_opt), _groups(theirs_opt))
    assert ours.last_epoch == theirs.last_epoch == 8
    # what get_lr() (called directly: it warns) would give right after resuming
    peeks = []
    for sched in (ours, theirs):
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            peeks.append(sched.get_lr())
    _same(peeks[0], peeks[1])
    _run([(ours_opt, ours), (theirs_opt, theirs)], 12)


@pytest.mark.parametrize("name,epochs", [
    ("LambdaLR", [5, 2, 9]),
    ("MultiplicativeLR", [4, 4, 1]),                     # no closed form: the epoch's factor applies
    ("CosineAnnealingWarmRestarts", [2.5, 13.7, 0, 40, 3.25]),  # fractional epochs, no warning
])
def test_step_with_epoch_without_closed_form(torch, name, epochs):
    ours_opt, theirs_opt = _optimizers(torch)
    ours = getattr(ls, name)(ours_opt, **KINDS[name])
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **KINDS[name])
    for epoch in epochs:
        ours_opt.step()
        theirs_opt.step()
        caught = []
        for sched in (ours, theirs):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                sched.step(epoch)
            caught.append([str(m.message) for m in w])
        assert caught[0] == caught[1]
        _same(ours.get_last_lr(), theirs.get_last_lr())
        assert ours.last_epoch == theirs.last_epoch
    if name == "CosineAnnealingWarmRestarts":
        assert (ours.T_cur, ours.T_i) == (theirs.T_cur, theirs.T_i)
        with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
            ours.step(-1)


def _nested(mod, opt):
    return mod.SequentialLR(opt, [
        mod.ChainedScheduler([mod.ConstantLR(opt, factor=0.5, total_iters=3), mod.ExponentialLR(opt, gamma=0.9)]),
        mod.StepLR(opt, step_size=3, gamma=0.5),
        mod.CosineAnnealingLR(opt, T_max=6, eta_min=0.001),
    ], milestones=[6, 14])


def _keys(state):
    return {k: [_keys(s) for s in v] if k == "_schedulers" else None for k, v in state.items()}


def _epochs(sched):
    """last_epoch of every scheduler in a nest, depth first (composites without one: None)."""
    return [getattr(sched, "last_epoch", None)] + [e for s in getattr(sched, "_schedulers", []) for e in _epochs(s)]


def test_nested_composites_match_torch_and_round_trip(torch):
    ours_opt, theirs_opt = _optimizers(torch)
    built, caught = [], []
    for mod, opt in ((ls, ours_opt), (torch.optim.lr_scheduler, theirs_opt)):
        # starting a ChainedScheduler member steps its members before any optimizer step: both warn
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            built.append(_nested(mod, opt))
        caught.append([str(m.message) for m in w])
    assert caught[0] == caught[1] and len(caught[0]) == 2
    ours, theirs = built
    _same(_groups(ours_opt), _groups(theirs_opt))
    _run([(ours_opt, ours), (theirs_opt, theirs)], 10)
    assert _keys(ours.state_dict()) == _keys(theirs.state_dict())

    # ours rebuilt from either library's saved nest continues torch's sequence
    rebuilt = []
    for source, source_opt in ((ours, ours_opt), (theirs, theirs_opt)):
        copy_opt, _ = _optimizers(torch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = _nested(ls, copy_opt)
        _copy_groups(source_opt, copy_opt)
        sched.load_state_dict(source.state_dict())
        assert _epochs(sched) == _epochs(source)
        rebuilt.append((copy_opt, sched))
    _run([*rebuilt, (ours_opt, ours), (theirs_opt, theirs)], 12)


def test_callable_objects_travel_in_state_dicts(torch):
    ours_opt, theirs_opt = _optimizers(torch)
    ours = ls.LambdaLR(ours_opt, [Decay(0.9), _halving])
    theirs = torch.optim.lr_scheduler.LambdaLR(theirs_opt, [Decay(0.9), _halving])
    _run([(ours_opt, ours), (theirs_opt, theirs)], 3)
    sd = ours.state_dict()
    assert sd["lr_lambdas"] == theirs.state_dict()["lr_lambdas"] == [{"rate": 0.9}, None]

    # loading updates the callable object in place; the given dict is left as it was
    theirs.lr_lambdas[0].rate = 0.7
    fresh_opt, _ = _optimizers(torch)
    fresh = ls.LambdaLR(fresh_opt, [Decay(0.5), _halving])
    saved = theirs.state_dict()
    before = copy.deepcopy(saved)
    fresh.load_state_dict(saved)
    assert saved == before
    assert fresh.lr_lambdas[0].rate == 0.7 and fresh.last_epoch == 3
    _copy_groups(theirs_opt, fresh_opt)
    _run([(fresh_opt, fresh), (theirs_opt, theirs)], 6)

    # CyclicLR keeps a custom scale_fn object the same way; a built-in mode keeps None
    c_ours_opt, c_theirs_opt = _optimizers(torch)
    kw = dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=Decay(0.8), scale_mode="iterations")
    c_ours = ls.CyclicLR(c_ours_opt, **kw)
    c_theirs = torch.optim.lr_scheduler.CyclicLR(c_theirs_opt, **kw)
    _run([(c_ours_opt, c_ours), (c_theirs_opt, c_theirs)], 7)
    assert c_ours.state_dict()["_scale_fn_custom"] == c_theirs.state_dict()["_scale_fn_custom"] == {"rate": 0.8}
    tri = ls.CyclicLR(_optimizers(torch)[0], base_lr=0.01, max_lr=0.1, mode="exp_range", gamma=0.9)
    state = tri.state_dict()
    assert state["_scale_fn_custom"] is None and state["scale_mode"] == "iterations"
    tri.load_state_dict(state)
    assert tri.scale_fn(2) == pytest.approx(0.81)


def test_reduce_lr_on_plateau_after_a_new_param_group(torch):
    for min_lr in (0.001, [0.001, 0.0005]):
        outcomes = []
        for lib, opt in zip(("ours", "torch"), _optimizers(torch)):
            mod = ls if lib == "ours" else torch.optim.lr_scheduler
            sched = mod.ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
            sched.step(1.0)
            new = nn.Parameter(tl.zeros(1)) if lib == "ours" else torch.nn.Parameter(torch.zeros(1))
            opt.add_param_group({"params": [new], "lr": 0.5})
            try:
                sched.step(2.0)
                outcomes.append((sched.get_last_lr(), sched.min_lrs))
            except RuntimeError as e:
                outcomes.append(str(e))
        if isinstance(min_lr, list):
            assert outcomes[0] == outcomes[1]
            assert "differs from when `ReduceLROnPlateau` was initialized (2)" in outcomes[0]
        else:
            _same(outcomes[0][0], outcomes[1][0])
            assert outcomes[0][1] == outcomes[1][1] == [0.001] * 3


@pytest.mark.parametrize("name", ["ExponentialLR", "StepLR", "CosineAnnealingLR", "LinearLR", "PolynomialLR"])
def test_tensor_lr_sequences_match_torch(torch, name):
    ours_lr, theirs_lr = tl.tensor(0.1), torch.tensor(0.1)
    ours_opt = optim.Adam([nn.Parameter(tl.zeros(2))], lr=ours_lr, foreach=False)
    theirs_opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))], lr=theirs_lr, foreach=False)
    kw = {k: v for k, v in KINDS[name].items()}
    ours = getattr(ls, name)(ours_opt, **kw)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kw)
    assert ours.base_lrs[0] is not ours_lr  # a copy: later steps must not move base_lrs
    for _ in range(16):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert ours_opt.param_groups[0]["lr"] is ours_lr
        assert ours_lr.item() == pytest.approx(theirs_lr.item(), rel=1e-6)
        last = ours.get_last_lr()[0]
        assert last is not ours_lr and last.item() == pytest.approx(ours_lr.item())
    assert ours.base_lrs[0].item() == pytest.approx(0.1)


def test_torch_style_subclass_closed_form(torch):
    """A subclass written against torch's base class (get_lr and _get_closed_form_lr) steps the
    same on ours: step() uses get_lr, step(epoch) the closed form."""

    def subclass(base):
        class Thirds(base):
            def get_lr(self):
                return [group["lr"] * 0.75 if self.last_epoch % 3 == 0 else group["lr"]
                        for group in self.optimizer.param_groups]

            def _get_closed_form_lr(self):
                return [b * 0.75 ** (self.last_epoch // 3) for b in self.base_lrs]
        return Thirds

    ours_opt, theirs_opt = _optimizers(torch)
    ours, theirs = subclass(ls.LRScheduler)(ours_opt), subclass(torch.optim.lr_scheduler.LRScheduler)(theirs_opt)
    for epoch in (None, None, None, 7, None, 2, None, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # step(epoch) is deprecated in both
            for opt, sched in ((ours_opt, ours), (theirs_opt, theirs)):
                opt.step()
                sched.step(epoch)
        _same(ours.get_last_lr(), theirs.get_last_lr())
        _same(_groups(ours_opt), _groups(theirs_opt))
