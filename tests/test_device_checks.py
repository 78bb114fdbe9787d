"""Index bounds checked on the device, without a host wait (backends/cuda/device_checks.py, issue 35):
an out-of-range index into a gather/scatter/index op on CUDA is raised at the next point where the host
waits anyway, with the op, the value, the bound and the launching call's line; the op wrote nothing (an
in-place target is bit-identical to before); the device stays usable; a training step of index ops
records no host wait. `set_check_mode("eager")` raises at the call, as torch's blocking launches do.
Tests that take `device` run on the CPU too, where the error comes at the call."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import nn
from tensorlab.nn import functional as F


def _line():
    return inspect.currentframe().f_back.f_lineno


def _settle(device):
    if device != "cpu":
        tl.cuda.synchronize()


WRITES = {
    "index_put_": lambda x, i, v: x.index_put_((i,), v),
    "setitem": lambda x, i, v: x.__setitem__(i, v),
    "accumulate": lambda x, i, v: x.index_put_((i,), v, accumulate=True),
    "scatter_": lambda x, i, v: x.scatter_(0, i, v),
    "scatter_add_": lambda x, i, v: x.scatter_add_(0, i, v),
    "index_fill_": lambda x, i, v: x.index_fill_(0, i, -1.0),
    "index_copy_": lambda x, i, v: x.index_copy_(0, i, v),
    "index_add_": lambda x, i, v: x.index_add_(0, i, v),
}


@pytest.mark.parametrize("dtype", [tl.float32, tl.float16, tl.int64])
@pytest.mark.parametrize("name", sorted(WRITES))
def test_bad_index_leaves_the_target_unchanged(device, name, dtype):
    x = tl.arange(10, device=device).to(dtype)
    before = x.clone()
    i = tl.tensor([1, 12, 3], device=device)
    v = tl.tensor([5, 6, 7], device=device).to(dtype)
    with tl.cuda.sync_trace() as trace:
        with pytest.raises((IndexError, RuntimeError), match="12"):
            WRITES[name](x, i, v)
            _settle(device)
    assert [r.reason for r in trace if not r.explicit] == []  # nothing waited but the test's own synchronize
    assert tl.equal(x, before)
    # the next ops on the same device work, and the same op with good indices writes
    WRITES[name](x, tl.tensor([1, 2, 3], device=device), v)
    _settle(device)
    assert not tl.equal(x, before)


def test_error_names_op_value_bound_and_launch_site(cuda):
    x = tl.zeros(4, 5, device=cuda)
    i = tl.tensor([0, 9], device=cuda)
    with tl.cuda.sync_trace() as trace:
        line = _line() + 1
        x[i] = tl.ones(2, 5, device=cuda)
    assert trace.reasons() == []  # nothing waited: the check is on the device
    with pytest.raises(IndexError) as err:
        tl.cuda.synchronize()
    msg = str(err.value)
    assert "index 9 is out of bounds for dimension 0 with size 4" in msg
    assert f"test_device_checks.py:{line}" in msg and "index_put_" in msg
    assert err.value.launch_site[1] == line
    assert tl.count_nonzero(x).item() == 0
    tl.cuda.synchronize()  # reported once: the record is clear


@pytest.mark.parametrize("wait", ["item", "tolist", "cpu", "synchronize", "event", "stream"])
def test_raised_at_any_host_wait(cuda, wait):
    x = tl.arange(6.0, device=cuda)
    y = x[tl.tensor([2, -7], device=cuda)]
    s = x.sum()
    waits = {
        "item": lambda: s.item(),
        "tolist": lambda: x.tolist(),
        "cpu": lambda: x.cpu(),
        "synchronize": tl.cuda.synchronize,
        "event": lambda: tl.cuda.Event().record() or tl.cuda.synchronize(),
        "stream": lambda: (tl.cuda.current_stream().synchronize(), tl.cuda.synchronize()),
    }
    with pytest.raises(IndexError, match="index -7 is out of bounds for dimension 0 with size 6"):
        waits[wait]()
    del y
    assert x.sum().item() == 15.0


def test_first_error_reported_with_the_count_of_the_rest(cuda):
    x = tl.arange(5.0, device=cuda)
    i, j = tl.tensor([7], device=cuda), tl.tensor([8, 9], device=cuda)  # uploads wait: before the bad ops
    x[i]
    x.index_fill_(0, j, 0.0)
    with pytest.raises(IndexError, match=r"index 7 .*2 more failed device-side checks since"):
        tl.cuda.synchronize()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_gather_family_and_losses_raise_as_on_the_cpu(device):
    w = tl.randn(5, 3, device=device)
    cases = [
        (lambda: F.embedding(tl.tensor([0, 5], device=device), w), IndexError),
        (lambda: tl.gather(w, 0, tl.tensor([[0, 6, 1]], device=device)), (IndexError, RuntimeError)),
        (lambda: w.index_select(0, tl.tensor([-1], device=device)), IndexError),
        (lambda: F.nll_loss(F.log_softmax(w, 1), tl.tensor([0, 1, 2, 3, 1], device=device)), IndexError),
        (lambda: F.cross_entropy(w, tl.tensor([0, 1, 2, 1, 9], device=device)), IndexError),
    ]
    for fn, exc in cases:
        with pytest.raises(exc):
            out = fn()
            _settle(device)
            out.sum().item()


def test_training_step_of_index_ops_waits_nowhere(cuda):
    tl.manual_seed(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8)
            self.rnn = nn.LSTM(8, 16, batch_first=True)
            self.out = nn.Linear(16, 20)

        def forward(self, x):
            return self.out(self.rnn(self.emb(x))[0])

    m = Model().to(cuda)
    opt = tl.optim.AdamW(m.parameters(), lr=1e-3)
    x = tl.randint(0, 20, (4, 6), device=cuda)
    y = tl.randint(0, 20, (4, 6), device=cuda)
    zero = tl.zeros(1, 8, dtype=tl.int64, device=cuda)
    losses = []
    for _ in range(2):
        with tl.cuda.sync_trace() as trace, tl.cuda.set_sync_debug_mode("error"):
            loss = F.cross_entropy(m(x).reshape(-1, 20), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            g = m.emb.weight.gather(0, zero)
            m.emb.weight.data.scatter_add_(0, zero, 0 * g)
        assert trace.reasons() == []
        losses.append(loss.item())
    assert np.isfinite(losses).all() and losses[1] < losses[0] + 1e-3


def test_eager_mode_raises_at_the_call(cuda):
    x = tl.arange(4.0, device=cuda)
    four = tl.tensor([4], device=cuda)
    previous = tl.cuda.set_check_mode("eager")
    try:
        assert tl.cuda.get_check_mode() == "eager"
        with tl.cuda.sync_trace() as trace:
            with pytest.raises(IndexError, match="raised at the call"):
                x[four] = 1.0
        assert trace.reasons() == ["index bounds check"]
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    finally:
        tl.cuda.set_check_mode(previous)
    assert tl.cuda.get_check_mode() == "deferred"
    with pytest.raises(ValueError, match="set_check_mode"):
        tl.cuda.set_check_mode("lazy")


def test_good_indices_pay_no_wait_and_agree_with_the_cpu(cuda):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 3)).astype(np.float32)
    idx = rng.integers(-7, 7, size=11)
    x = tl.tensor(a, device=cuda)
    i = tl.tensor(idx, device=cuda)
    with tl.cuda.sync_trace() as trace:
        y = x[i]
        z = x.index_select(0, i.remainder(7))
        x2 = x.clone()
        x2[i] = tl.zeros(11, 3, device=cuda)
    assert trace.reasons() == []
    np.testing.assert_array_equal(y.cpu().numpy(), a[idx])
    np.testing.assert_array_equal(z.cpu().numpy(), a[idx % 7])
    want = a.copy()
    want[idx] = 0
    np.testing.assert_array_equal(x2.cpu().numpy(), want)


def test_multinomial_probabilities_checked_on_the_device(device):
    bad = tl.tensor([[0.2, -1.0, 0.5]], device=device)
    empty = tl.zeros(2, 3, device=device)
    for p, msg in ((bad, "element < 0"), (empty, "sum of probabilities")):
        with tl.cuda.sync_trace() as trace:
            try:
                tl.multinomial(p, 1)
                launched = True
            except RuntimeError as e:  # the CPU reads the probabilities at the call
                assert device == "cpu" and msg in str(e)
                launched = False
        assert trace.reasons() == []
        if launched:
            with pytest.raises(RuntimeError, match=msg) as err:
                _settle(device)
            assert "found on the device by multinomial" in str(err.value)
    good = tl.tensor([[0.0, 1.0, 0.0]], device=device)
    with tl.cuda.sync_trace() as trace:
        r = tl.multinomial(good, 2, replacement=True)
    assert trace.reasons() == [] and r.tolist() == [[1, 1]]
