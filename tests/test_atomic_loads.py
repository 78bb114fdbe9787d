"""Atomic state loads (issue 38, item 2): Module.load_state_dict (copy or assign, extra state,
buffers) and Optimizer.load_state_dict check everything before changing anything, and a failure
anywhere (an injected fault at any copy, a read-only buffer, a set_extra_state that raises, a
state the next step could not use) changes nothing; BatchNorm's counter and running statistics
move only after its checks."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.testing import InjectedFault, assert_unchanged, count_events, inject_fault, snapshot

nn = tl.nn


def _model(seed, device):
    tl.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2), nn.Linear(2, 2)).to(device)


def _tensors(m):
    return [t for _, t in m.named_parameters()] + [t for _, t in m.named_buffers()]


def _points(make, act):
    obj = make()
    with count_events() as c:
        act(obj)
    return [(k, i) for k in tl.testing.KINDS for i in range(1, getattr(c, k) + 1)]


@pytest.mark.parametrize("assign", [False, True])
def test_module_load_fault_sweep_changes_nothing(assign, device):
    src = _model(1, device).state_dict()
    points = _points(lambda: _model(0, device), lambda m: m.load_state_dict(src, assign=assign))
    if not assign:
        assert len([p for p in points if p[0] == "copy"]) >= 7
    for kind, n in points:
        m = _model(0, device)
        members = [(mod._parameters.copy(), mod._buffers.copy()) for mod in m.modules()]
        snap = snapshot(*_tensors(m))
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            m.load_state_dict(src, assign=assign)
        assert_unchanged(snap)
        assert [(mod._parameters, mod._buffers) for mod in m.modules()] == members
    m = _model(0, device)
    m.load_state_dict(src, assign=assign)
    got = m.state_dict()
    for k, b in src.items():
        assert got[k].cpu().numpy().tobytes() == b.cpu().numpy().tobytes(), k


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_module_load_read_only_buffer_last_changes_nothing():
    m = _model(0, "cpu")
    frozen = np.zeros(2, np.float32)
    frozen.setflags(write=False)
    m[3].register_buffer("frozen", tl.from_numpy(frozen))
    src = _model(1, "cpu").state_dict()
    src["3.frozen"] = tl.ones(2)
    snap = snapshot(*_tensors(m))
    with pytest.raises(RuntimeError, match="load_state_dict .*frozen.*non-writable"):
        m.load_state_dict(src)
    assert_unchanged(snap)


class _Extra(nn.Module):
    def __init__(self, fail):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.fail = fail
        self.value = "old"

    def get_extra_state(self):
        return {"value": self.value}

    def set_extra_state(self, state):
        if self.fail:
            raise ValueError("extra state refused")
        self.value = state["value"]


def test_module_load_extra_state_that_raises_changes_nothing():
    m = nn.Sequential(_Extra(False), nn.Linear(2, 2), _Extra(True))
    src = nn.Sequential(_Extra(False), nn.Linear(2, 2), _Extra(False))
    src[0].value = src[2].value = "new"
    sd = src.state_dict()
    snap = snapshot(*[p for p in m.parameters()])
    with pytest.raises(ValueError, match="extra state refused"):
        m.load_state_dict(sd)
    assert_unchanged(snap)
    assert m[0].value == "old"


def _opt(device, steps=2):
    rng = np.random.default_rng(0)
    ps = [nn.Parameter(tl.tensor(rng.standard_normal(s).astype(np.float32), device=device)) for s in [(3, 2), (4,)]]
    opt = tl.optim.Adam(ps, lr=0.01)
    for _ in range(steps):
        for p in ps:
            p.grad = tl.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32), device=device)
        opt.step()
    return ps, opt


def _opt_state(ps, opt):
    return [{k: (v.cpu().numpy().tobytes() if isinstance(v, tl.Tensor) else v) for k, v in opt.state[p].items()}
            for p in ps], [dict(g, params=None) for g in opt.param_groups]


@pytest.mark.parametrize("bad", ["shape", "not a tensor", "step string", "lr string", "betas", "state not dict"])
def test_optimizer_load_refuses_unusable_state(bad, device):
    ps, opt = _opt(device)
    sd = _opt(device, steps=3)[1].state_dict()
    if bad == "shape":
        sd["state"][1]["exp_avg"] = tl.zeros(5)
    elif bad == "not a tensor":
        sd["state"][1]["exp_avg_sq"] = [0.0] * 4
    elif bad == "step string":
        sd["state"][1]["step"] = "3"
    elif bad == "lr string":
        sd["param_groups"][0]["lr"] = "fast"
    elif bad == "betas":
        sd["param_groups"][0]["betas"] = (0.9,)
    else:
        sd["state"][0] = 7
    before = _opt_state(ps, opt)
    with pytest.raises((TypeError, ValueError), match="Adam.load_state_dict"):
        opt.load_state_dict(sd)
    assert _opt_state(ps, opt) == before
    opt.step()  # still usable


def test_optimizer_load_fault_sweep_changes_nothing(device):
    sd = _opt(device, steps=3)[1].state_dict()
    for kind, n in _points(lambda: _opt(device), lambda o: o[1].load_state_dict(sd)):
        ps, opt = _opt(device)
        before = _opt_state(ps, opt)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            opt.load_state_dict(sd)
        assert _opt_state(ps, opt) == before


def test_optimizer_load_converts_a_number_step():
    ps, opt = _opt("cpu")
    sd = opt.state_dict()
    sd["state"][0]["step"] = 2.0
    opt.load_state_dict(sd)
    assert isinstance(opt.state[ps[0]]["step"], tl.Tensor) and opt.state[ps[0]]["step"].item() == 2.0
    opt.step()


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_wrong_channel_count_moves_no_counter(momentum, device):
    bn = nn.BatchNorm1d(4, momentum=momentum).to(device)
    bn(tl.randn(8, 4, device=device))
    snap = snapshot(bn.running_mean, bn.running_var, bn.num_batches_tracked)
    with pytest.raises(RuntimeError):
        bn(tl.randn(8, 3, device=device))
    assert_unchanged(snap)
    x = tl.randn(8, 4, device=device)
    for kind, n in _points(lambda: None, lambda _: bn(x)):
        snap = snapshot(bn.running_mean, bn.running_var, bn.num_batches_tracked)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            bn(x)
        assert_unchanged(snap)
    bn(x)
    assert bn.num_batches_tracked.item() == 3  # the first call, _points' counting call, this one


def test_batchnorm_cumulative_average_matches_torch(torch):
    x = np.random.default_rng(0).standard_normal((3, 6, 4)).astype(np.float32)
    outs = []
    for lib in (tl, torch):
        bn = lib.nn.BatchNorm1d(4, momentum=None)
        for i in range(3):
            bn(lib.tensor(x[i]))
        outs.append((bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(), int(bn.num_batches_tracked)))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-6)
    assert outs[0][2] == outs[1][2] == 3
