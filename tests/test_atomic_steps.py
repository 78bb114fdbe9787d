"""Atomic training steps (issue 38, item 1): every optimizer's step() either applies the whole
update or leaves every parameter and state tensor bit-identical (a wrong-shaped gradient, a bad
state, a fault injected at any allocation/copy/launch through tl.testing); zero_grad, gradient
clipping and lr scheduler steps likewise; concurrent step() on one optimizer is serialized.

Cost (CPU, one step, tensorlab/_journal.py's undo copy vs. the same code without it; see
docs/ARCHITECTURE.md): Adam/AdamW on the CPU take the whole step through optim/_adam_cpu.py's
step_all, which allocates its work arrays first and needs no undo copy; other optimizers and
devices journal one copy of each written tensor."""
import threading

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.testing import InjectedFault, assert_unchanged, count_events, inject_fault, snapshot

O = tl.optim
CONFIGS = [
    (O.SGD, dict(lr=0.1)),
    (O.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (O.SGD, dict(lr=0.1, momentum=0.9, foreach=True)),
    (O.SGD, dict(lr=0.1, momentum=0.9, fused=True)),
    (O.Adam, dict(lr=0.01)),
    (O.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    (O.Adam, dict(lr=0.01, fused=True)),
    (O.Adam, dict(lr=0.01, foreach=True, maximize=True)),
    (O.AdamW, dict(lr=0.01)),
    (O.Adadelta, dict()),
    (O.Adagrad, dict(lr=0.1, lr_decay=0.01)),
    (O.RMSprop, dict(lr=0.01, momentum=0.9, centered=True)),
    (O.RMSprop, dict(lr=0.01)),
    (O.NAdam, dict(lr=0.01)),
    (O.RAdam, dict(lr=0.01)),
]
IDS = [f"{c.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for c, kw in CONFIGS]


def _setup(cls, kw, device, steps=1):
    rng = np.random.default_rng(0)
    ps = [tl.nn.Parameter(tl.tensor(rng.standard_normal(s).astype(np.float32), device=device))
          for s in [(4, 3), (5,), (2, 2)]]
    opt = cls(ps, **kw)
    for _ in range(steps):
        for p in ps:
            p.grad = tl.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32), device=device)
        opt.step()
    for p in ps:
        p.grad = tl.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32), device=device)
    return ps, opt


def _points(make, act):
    """Every (kind, n) fault point of act(make()), not counting make()'s own events."""
    obj = make()
    with count_events() as c:
        act(obj)
    return [(k, i) for k in tl.testing.KINDS for i in range(1, getattr(c, k) + 1)]


def _everything(ps, opt):
    objs = list(ps)
    for p in ps:
        for v in opt.state.get(p, {}).values():
            if isinstance(v, tl.Tensor):
                objs.append(v)
    return objs


def _state_keys(opt, ps):
    return [sorted(opt.state[p]) if p in opt.state else None for p in ps]


@pytest.mark.parametrize("steps", [0, 1])
@pytest.mark.parametrize("cfg", range(len(CONFIGS)), ids=IDS)
def test_step_fault_sweep_leaves_everything_unchanged(cfg, steps, device):
    cls, kw = CONFIGS[cfg]
    if kw.get("fused") and device == "cuda" and cls is O.SGD:
        pass
    points = _points(lambda: _setup(cls, kw, device, steps)[1], lambda opt: opt.step())
    assert points
    for kind, n in points:
        ps, opt = _setup(cls, kw, device, steps)
        keys = _state_keys(opt, ps)
        snap = snapshot(*_everything(ps, opt))
        with inject_fault(kind, n) as plan:
            try:
                opt.step()
            except InjectedFault:
                pass
        if not plan.fired:
            continue
        assert_unchanged(snap)
        assert _state_keys(opt, ps) == keys, (kind, n)
        # and the optimizer still works: the next step is the step that failed
        ref_ps, ref_opt = _setup(cls, kw, device, steps)
        ref_opt.step()
        opt.step()
        for a, b in zip(ps, ref_ps):
            assert a.detach().cpu().numpy().tobytes() == b.detach().cpu().numpy().tobytes(), (kind, n)


@pytest.mark.parametrize("cfg", range(len(CONFIGS)), ids=IDS)
def test_wrong_shaped_grad_on_the_last_parameter_moves_nothing(cfg, device):
    cls, kw = CONFIGS[cfg]
    ps, opt = _setup(cls, kw, device)
    ps[-1]._grad = tl.ones(7, device=device)  # past the setter's check (as .data = ... can leave it)
    snap = snapshot(*_everything(ps, opt))
    with pytest.raises(RuntimeError, match=r"step: the gradient of parameter 2 .* shape \[7\]"):
        opt.step()
    assert_unchanged(snap)


def test_bad_state_tensor_is_refused_before_any_update(device):
    ps, opt = _setup(O.Adam, dict(lr=0.01), device)
    opt.state[ps[2]]["exp_avg"] = tl.zeros(3, device=device)
    snap = snapshot(*_everything(ps, opt))
    with pytest.raises(RuntimeError, match="state 'exp_avg' of parameter 2"):
        opt.step()
    assert_unchanged(snap)


def test_closure_runs_once_and_its_loss_is_returned(device):
    ps, opt = _setup(O.SGD, dict(lr=0.1, momentum=0.9), device)
    calls = []

    def closure():
        calls.append(1)
        return tl.tensor(3.0)
    assert opt.step(closure).item() == 3.0
    assert calls == [1]
    snap = snapshot(*_everything(ps, opt))
    with inject_fault("launch", 2), pytest.raises(InjectedFault):
        opt.step(closure)
    assert_unchanged(snap)


def test_concurrent_steps_on_one_optimizer_are_serialized():
    ps, opt = _setup(O.Adam, dict(lr=0.01, amsgrad=True), "cpu", steps=0)  # amsgrad: the journaled path
    ps2, opt2 = _setup(O.Adam, dict(lr=0.01, amsgrad=True), "cpu", steps=0)
    errors = []
    n = 30

    def work():
        try:
            for _ in range(n):
                opt.step()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for p in ps:
        assert opt.state[p]["step"].item() == 2 * n
    for _ in range(2 * n):
        opt2.step()
    for a, b in zip(ps, ps2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("set_to_none", [False, True])
def test_zero_grad_is_all_or_nothing(set_to_none, device):
    ps, opt = _setup(O.SGD, dict(lr=0.1), device)
    grads = [p.grad for p in ps]
    for kind, n in _points(lambda: _setup(O.SGD, dict(lr=0.1), device)[1], lambda o: o.zero_grad(set_to_none)):
        ps, opt = _setup(O.SGD, dict(lr=0.1), device)
        grads = [p.grad for p in ps]
        snap = snapshot(*grads)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            opt.zero_grad(set_to_none)
        assert_unchanged(snap)
        assert all(p.grad is g for p, g in zip(ps, grads))


@pytest.mark.parametrize("which", ["norm", "value"])
def test_grad_clipping_is_all_or_nothing(which, device):
    def make():
        rng = np.random.default_rng(1)
        ps = [tl.nn.Parameter(tl.zeros(s, device=device)) for s in [(4, 3), (5,), (2, 2)]]
        for p in ps:
            p.grad = tl.tensor(10 * rng.standard_normal(tuple(p.shape)).astype(np.float32), device=device)
        return ps

    def clip(ps):
        if which == "norm":
            return tl.nn.utils.clip_grad_norm_(ps, 1.0)
        return tl.nn.utils.clip_grad_value_(ps, 0.5)
    points = _points(make, clip)
    assert points
    for kind, n in points:
        ps = make()
        snap = snapshot(*[p.grad for p in ps])
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            clip(ps)
        assert_unchanged(snap)


def test_scheduler_step_is_all_or_nothing():
    ps = [tl.nn.Parameter(tl.zeros(2)), tl.nn.Parameter(tl.zeros(2))]
    opt = O.SGD([{"params": [ps[0]]}, {"params": [ps[1]]}], lr=0.1)
    calls = []

    def second(epoch):
        calls.append(epoch)
        if epoch == 3:
            raise ValueError("boom")
        return 0.5 ** epoch
    sched = O.lr_scheduler.LambdaLR(opt, [lambda e: 0.9 ** e, second])
    opt.step()
    sched.step()
    sched.step()
    before = ([g["lr"] for g in opt.param_groups], sched.last_epoch, sched.get_last_lr())
    with pytest.raises(ValueError, match="boom"):
        sched.step()
    assert ([g["lr"] for g in opt.param_groups], sched.last_epoch, sched.get_last_lr()) == before


SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
             dict(lr=0.1, momentum=0.8, nesterov=True, maximize=True), dict(lr=0.1, momentum=0.9, dampening=0.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", SGD_CASES, ids=[str(k) for k in SGD_CASES])
def test_sgd_cpu_whole_step_is_the_general_paths_bits(kw, dtype, monkeypatch):
    from tensorlab.optim import _sgd_cpu

    def run(fast):
        rng = np.random.default_rng(0)
        ps = [tl.nn.Parameter(tl.from_numpy(rng.standard_normal(s).astype(dtype))) for s in [(5, 7), (3,), ()]]
        opt = O.SGD(ps, **kw)
        calls = []
        with monkeypatch.context() as m:
            real = _sgd_cpu.step_all
            m.setattr(_sgd_cpu, "step_all", (lambda o: calls.append(1) or real(o)) if fast else (lambda o: False))
            for _ in range(4):
                for p in ps:
                    p.grad = tl.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
                opt.step()
        bufs = [opt.state[p].get("momentum_buffer") for p in ps]
        return ([p.detach().numpy().tobytes() for p in ps] + [b.numpy().tobytes() for b in bufs if b is not None],
                [p._version for p in ps] + [b._version for b in bufs if b is not None], bool(calls))
    a, b = run(True), run(False)
    assert a[2]
    assert a[0] == b[0]
    assert a[1] == b[1]


FAST_CASES = [(O.Adagrad, dict(lr=0.1)), (O.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, eps=1e-3)),
              (O.Adagrad, dict(lr=0.05, initial_accumulator_value=0.2, maximize=True)),
              (O.RMSprop, dict(lr=0.01)), (O.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
              (O.RMSprop, dict(lr=0.01, alpha=0.3, centered=True)), (O.RMSprop, dict(lr=0.02, momentum=0.5, maximize=True))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(FAST_CASES)), ids=[f"{c.__name__}-{k}" for c, k in FAST_CASES])
def test_adagrad_rmsprop_cpu_whole_step_is_the_general_paths_bits(case, dtype, monkeypatch):
    from tensorlab.optim import _cpu_steps
    cls, kw = FAST_CASES[case]
    name = "adagrad_step_all" if cls is O.Adagrad else "rmsprop_step_all"

    def run(fast):
        rng = np.random.default_rng(0)
        ps = [tl.nn.Parameter(tl.from_numpy(rng.standard_normal(s).astype(dtype))) for s in [(5, 7), (3,), ()]]
        opt = cls(ps, **kw)
        calls = []
        with monkeypatch.context() as m:
            real = getattr(_cpu_steps, name)
            m.setattr(_cpu_steps, name, (lambda o: real(o) and (calls.append(1) or True)) if fast else (lambda o: False))
            for _ in range(4):
                for p in ps:
                    p.grad = tl.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
                opt.step()
        sts = [opt.state[p] for p in ps]
        vals = [p.detach().numpy().tobytes() for p in ps] + [v.numpy().tobytes() for s in sts for k, v in sorted(s.items())]
        vers = [p._version for p in ps] + [v._version for s in sts for k, v in sorted(s.items())]
        return vals, vers, bool(calls)
    a, b = run(True), run(False)
    assert a[2]
    assert a[0] == b[0]
    assert a[1] == b[1]
