"""tensorlab.amp: autocast's per-op policy (CPU against torch's CPU autocast, CUDA against
torch's documented lists), nesting / enabled=False / decorator / per-thread state, GradScaler
(skipped steps, growth/backoff, state_dict, one host wait per step), the deprecated aliases, and
a mixed-precision training loop against torch step by step."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F

AUTOCAST_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}


def _inputs(lib, device=None):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 4)).astype("float32"), rng.standard_normal((4, 4)).astype("float32")
    if lib is tl:
        return tl.tensor(a, device=device), tl.tensor(b, device=device)
    return lib.tensor(a), lib.tensor(b)


# (name, call) pairs: the same expression for torch and tensorlab
OPS = {
    "mm": lambda L, a, b: L.mm(a, b), "matmul": lambda L, a, b: a @ b, "bmm": lambda L, a, b: L.bmm(a[None], b[None]),
    "addmm": lambda L, a, b: L.addmm(a, a, b), "linear": lambda L, a, b: L.nn.functional.linear(a, b),
    "baddbmm": lambda L, a, b: L.baddbmm(a[None], a[None], b[None]),
    "conv2d": lambda L, a, b: L.nn.functional.conv2d(a[None, None], b[None, None, :2, :2]),
    "softmax": lambda L, a, b: L.softmax(a, 0), "log_softmax": lambda L, a, b: L.log_softmax(a, 0),
    "exp": lambda L, a, b: L.exp(a), "sum": lambda L, a, b: L.sum(a), "cumsum": lambda L, a, b: L.cumsum(a, 0),
    "mse_loss": lambda L, a, b: L.nn.functional.mse_loss(a, b),
    "cross_entropy": lambda L, a, b: L.nn.functional.cross_entropy(a, L.tensor([0, 1, 2, 3])),
    "layer_norm": lambda L, a, b: L.nn.functional.layer_norm(a, (4,)),
    "relu": lambda L, a, b: L.relu(a), "add": lambda L, a, b: a + b,
    "cat": lambda L, a, b: L.cat([a, b.double()]), "stack": lambda L, a, b: L.stack([a, b.float()]),
    "addcmul": lambda L, a, b: L.addcmul(a, a, b.double()),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_cpu_policy_matches_torch(torch, op, dtype):
    """Each op's result dtype inside CPU autocast, on float32 inputs and on lower-precision inputs."""
    for pre in ("float32", dtype):
        ta, tb = (t.to(getattr(torch, pre)) for t in _inputs(torch))
        a, b = (t.to(getattr(tl, pre)) for t in _inputs(tl, "cpu"))
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            expected = OPS[op](torch, ta, tb)
        with tl.amp.autocast("cpu", dtype=getattr(tl, dtype)):
            got = OPS[op](tl, a, b)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (op, pre)
        np.testing.assert_allclose(got.float().detach().numpy(), expected.float().detach().numpy(),
                                   rtol=2e-2, atol=2e-2)


CUDA_EXPECTED = {"mm": "float16", "matmul": "float16", "bmm": "float16", "addmm": "float16", "linear": "float16",
                 "baddbmm": "float16", "conv2d": "float16", "softmax": "float32", "log_softmax": "float32",
                 "exp": "float32", "sum": "float32", "cumsum": "float32", "mse_loss": "float32",
                 "cross_entropy": "float32", "layer_norm": "float32", "relu": "float16", "add": "float32",
                 "cat": "float64", "stack": "float32", "addcmul": "float64"}


@pytest.mark.cuda
@pytest.mark.parametrize("op", sorted(OPS))
def test_cuda_policy(op):
    """torch's CUDA lists: lower precision (float16), float32, promote; other ops keep their input dtype."""
    if tl.cuda.device_count() == 0:
        pytest.skip("no CUDA device (real or emulated)")
    a, b = _inputs(tl, "cuda")
    if op == "relu":
        a = a.half()  # not in any list: runs in its input's dtype
    if op != "cross_entropy":
        with tl.amp.autocast("cuda"):
            got = OPS[op](tl, a, b)
    else:
        with tl.amp.autocast("cuda"):
            got = F.cross_entropy(a.half(), tl.tensor([0, 1, 2, 3], device="cuda"))
    assert str(got.dtype).split(".")[-1] == CUDA_EXPECTED[op]


def test_nesting_disable_decorator_and_threads(device):
    a, b = _inputs(tl, device)
    low = getattr(tl, AUTOCAST_DTYPE[device])
    assert not tl.amp.is_autocast_enabled(device)
    with tl.amp.autocast(device):
        assert tl.amp.is_autocast_enabled(device) and tl.amp.get_autocast_dtype(device) is low
        assert tl.mm(a, b).dtype is low
        with tl.amp.autocast(device, enabled=False):
            assert tl.mm(a, b).dtype is tl.float32
            with tl.amp.autocast(device, dtype=tl.float16):
                assert tl.mm(a, b).dtype is tl.float16
            assert tl.mm(a, b).dtype is tl.float32
        assert tl.mm(a, b).dtype is low
        # autocast state is per thread: another thread runs without it
        seen = []
        t = threading.Thread(target=lambda: seen.append(tl.mm(a, b).dtype))
        t.start()
        t.join()
        assert seen == [tl.float32]
        # float64 inputs are never cast down
        assert tl.mm(a.double(), b.double()).dtype is tl.float64
    assert tl.mm(a, b).dtype is tl.float32

    @tl.amp.autocast(device)
    def f(x, y):
        return x @ y
    assert f(a, b).dtype is low and (a @ b).dtype is tl.float32
    other = "cuda" if device == "cpu" else "cpu"
    with tl.amp.autocast(other):  # autocast for the other device type leaves this one alone
        assert tl.mm(a, b).dtype is tl.float32
    with pytest.warns(UserWarning, match="not supported"):
        with tl.amp.autocast(device, dtype=tl.float64):
            assert tl.mm(a, b).dtype is tl.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        tl.amp.autocast("xla")


def test_gradients_flow_to_float32_params(device, torch):
    w = tl.nn.Parameter(_inputs(tl, device)[0])
    tw = torch.nn.Parameter(_inputs(torch)[0])
    x, tx = _inputs(tl, device)[1], _inputs(torch)[1]
    dt = AUTOCAST_DTYPE["cpu"]
    with tl.amp.autocast(device, dtype=getattr(tl, dt)):
        y = (x @ w).sum()
    with torch.autocast("cpu", dtype=getattr(torch, dt)):
        ty = (tx @ tw).sum()
    y.backward()
    ty.backward()
    assert w.grad.dtype is tl.float32
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = tl.cpu.amp.autocast()
    with ctx:
        assert tl.mm(*_inputs(tl, "cpu")).dtype is tl.bfloat16
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        ctx = tl.cuda.amp.autocast()
    assert ctx.device == "cuda" and ctx.fast_dtype is tl.float16
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprecated"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tl.cuda.amp.GradScaler()
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
        assert tl.cpu.amp.GradScaler().is_enabled()


# -- GradScaler -----------------------------------------------------------------------------------------
def _model(lib, device=None):
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal(s).astype("float32") * 0.5 for s in ((16, 8), (16,), (4, 16), (4,))]
    m = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    if lib is tl:
        m = m.to(device)
    for p, w in zip(m.parameters(), ws):
        with lib.no_grad():
            p.copy_(lib.tensor(w) if lib is not tl else tl.tensor(w, device=device))
    return m


@pytest.mark.parametrize("init_scale", [2.0 ** 16, 2.0 ** 127])
def test_mixed_precision_training_matches_torch(device, torch, init_scale):
    """bfloat16 on the CPU, float16 on CUDA (against torch's CPU float16 autocast, whose policy
    agrees for these ops). 2**127 overflows the scaled gradients: the first steps are skipped and
    the scale backs off, as torch's."""
    dt = AUTOCAST_DTYPE[device]
    m, tm = _model(tl, device), _model(torch)
    opt, topt = tl.optim.SGD(m.parameters(), lr=0.02, momentum=0.5), torch.optim.SGD(tm.parameters(), lr=0.02,
                                                                                    momentum=0.5)
    scaler = tl.amp.GradScaler(device, init_scale=init_scale, growth_interval=2)
    tscaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=2)
    rng = np.random.default_rng(1)
    skipped, tskipped = [], []
    for step in range(8):
        x = rng.standard_normal((6, 8)).astype("float32")
        y = rng.integers(0, 4, 6)
        before = [p.detach().clone() for p in m.parameters()]
        with tl.amp.autocast(device, dtype=getattr(tl, dt)):
            loss = F.cross_entropy(m(tl.tensor(x, device=device)), tl.tensor(y, device=device))
        with torch.autocast("cpu", dtype=getattr(torch, dt)):
            tloss = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        assert loss.dtype is tl.float32
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=3e-2, atol=3e-3)
        opt.zero_grad()
        topt.zero_grad()
        tbefore = [p.detach().clone() for p in tm.parameters()]
        scaler.scale(loss * 8).backward()
        tscaler.scale(tloss * 8).backward()
        scaler.step(opt)
        tscaler.step(topt)
        skipped.append(all(bool((p == q).all()) for p, q in zip(m.parameters(), before)))
        tskipped.append(all(bool((p == q).all()) for p, q in zip(tm.parameters(), tbefore)))
        scaler.update()
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale(), step
    assert skipped == tskipped
    if init_scale == 2.0 ** 127:  # (float16 also overflows at 2**16 * 8 * loss: skips there too)
        assert any(skipped)
    for p, q in zip(m.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=5e-2, atol=5e-2)
    assert scaler.state_dict() == tscaler.state_dict()


def test_grad_scaler_schedule_state_dict_and_errors(device, torch):
    p = tl.nn.Parameter(tl.ones(3, device=device))
    opt = tl.optim.SGD([p], lr=1.0)
    s = tl.amp.GradScaler(device, init_scale=8.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    with pytest.raises(AssertionError, match="scale"):
        s.unscale_(opt)
    for grad, scale_after in ((1.0, 8.0), (1.0, 32.0), (float("inf"), 8.0), (float("nan"), 2.0), (1.0, 2.0),
                              (1.0, 8.0)):
        s.scale(p.sum()).backward()
        p.grad.fill_(grad)
        before = p.detach().clone()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            s.step(opt)
        changed = not bool((p == before).all())
        assert changed == np.isfinite(grad)
        s.update()
        assert s.get_scale() == scale_after
        opt.zero_grad()
    sd = s.state_dict()
    assert sd == {"scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2,
                  "_growth_tracker": 0}
    s2 = tl.amp.GradScaler(device)
    s2.load_state_dict(sd)
    assert s2.state_dict() == sd
    off = tl.amp.GradScaler(device, enabled=False)
    assert off.scale(p) is p and off.state_dict() == {} and off.get_scale() == 1.0
    with pytest.raises(ValueError, match="growth factor"):
        tl.amp.GradScaler(device, growth_factor=0.5)
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(opt, closure=lambda: None)
    s.update(16.0)
    assert s.get_scale() == 16.0


@pytest.mark.cuda
def test_grad_scaler_step_waits_once():
    """unscale_ checks every gradient on the device; step reads the flags once."""
    if tl.cuda.device_count() == 0:
        pytest.skip("no CUDA device (real or emulated)")
    m = _model(tl, "cuda")
    opt = tl.optim.SGD(m.parameters(), lr=0.1)
    s = tl.amp.GradScaler("cuda")
    with tl.amp.autocast("cuda"):
        loss = m(tl.ones(2, 8, device="cuda")).float().sum()
    s.scale(loss).backward()
    with tl.cuda.sync_trace() as trace:
        s.unscale_(opt)
    assert len(trace) == 0
    with tl.cuda.sync_trace() as trace:
        s.step(opt)
        s.update()
    assert len(trace) == 1, trace.reasons()


def test_ops_are_unwrapped_outside_regions_and_cache(device):
    """No region open anywhere: the ops are the plain functions (autocast costs nothing); inside,
    the wrappers are bound, and a weight's cast is cached for the region (cache_enabled)."""
    plain = tl.mm
    with tl.amp.autocast(device):
        assert tl.mm is not plain and tl.mm.__autocast_wrapped__ is plain
        assert tl.Tensor.mm is tl.mm
        w = tl.nn.Parameter(tl.ones(4, 4, device=device))
        x = tl.ones(2, 4, device=device)
        from tensorlab.amp import autocast_mode
        F.linear(x, w)
        cached = [v[1] for k, v in autocast_mode._local.cache.items() if v[0] is w]
        assert len(cached) == 1
        F.linear(x, w)
        assert [v[1] for k, v in autocast_mode._local.cache.items() if v[0] is w] == cached
    assert tl.mm is plain and tl.Tensor.mm is plain and not hasattr(tl.mm, "__autocast_wrapped__")
    with tl.amp.autocast(device, cache_enabled=False):
        F.linear(x, w)
        assert not autocast_mode._local.cache
