"""CUDA graphs (tl.cuda.CUDAGraph, tl.cuda.graph, make_graphed_callables): capture records the work
queued on the capturing stream, replay runs it again on new data in the static inputs, and the results
equal torch's eager ones; what a capture cannot record (a host wait, a random op, the default stream)
is refused with CUDA's/torch's errors. Runs on a GPU or the emulation driver (which records the
captured calls and runs them at replay)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import nn


def _np(t):
    return t.detach().cpu().numpy()


def _mlp_weights(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((16, 8), (16,), (3, 16), (3,))]


def _tl_mlp(weights, device):
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)
    with tl.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(tl.tensor(w, device=device))
    return m


def _torch_mlp(torch, weights):
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(torch.tensor(w))
    return m


def test_capture_and_replay_on_new_inputs(cuda):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    x, wt = tl.tensor(a, device=cuda), tl.tensor(w, device=cuda)
    g = tl.cuda.CUDAGraph()
    with tl.cuda.graph(g):
        y = (x @ wt).relu().sum(1)
        tmp = tl.empty(1000, device=cuda)  # freed inside the capture: its memory stays with the graph
        del tmp
    g.replay()
    np.testing.assert_allclose(_np(y), np.maximum(a @ w, 0).sum(1), rtol=1e-5, atol=1e-5)
    filler = [tl.full((1000,), 7.0, device=cuda) for _ in range(3)]  # new allocations do not take the graph's memory
    for k in range(3):
        b = rng.standard_normal((5, 8)).astype(np.float32)
        x.copy_(tl.tensor(b, device=cuda))
        g.replay()
        np.testing.assert_allclose(_np(y), np.maximum(b @ w, 0).sum(1), rtol=1e-5, atol=1e-5)
    assert all(float(f.sum().item()) == 7000.0 for f in filler)
    assert isinstance(g.pool(), tuple)
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_replay_on_the_default_stream_and_shared_pool(cuda):
    x = tl.arange(6.0, device=cuda)
    g1, g2 = tl.cuda.CUDAGraph(), tl.cuda.CUDAGraph()
    with tl.cuda.graph(g1):
        y = x * 2
    with tl.cuda.graph(g2, pool=g1.pool()):
        z = y + 1
    g1.replay()
    g2.replay()
    assert z.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    assert g2.pool() == g1.pool()


def test_what_a_capture_refuses(cuda):
    x = tl.ones(4, device=cuda)
    g = tl.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with tl.cuda.graph(g):
            y = x * 3
            if y.sum().item() > 0:  # a host read inside the captured region
                pass
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="random op inside a CUDA graph capture"):
        with tl.cuda.graph(tl.cuda.CUDAGraph()):
            tl.rand(3, device=cuda)
    with pytest.raises(RuntimeError, match="non-default stream"):
        tl.cuda.CUDAGraph().capture_begin()
    with pytest.raises(RuntimeError, match="capture_end without a preceding capture_begin"):
        tl.cuda.CUDAGraph().capture_end()
    with pytest.raises(RuntimeError, match="capture_error_mode"):
        with tl.cuda.graph(tl.cuda.CUDAGraph(), capture_error_mode="sloppy"):
            pass
    with pytest.raises(TypeError, match="CUDAGraph"):
        tl.cuda.graph("g")
    assert (x * 2).sum().item() == 8.0  # the device works normally afterwards


def test_make_graphed_callables_matches_torch(cuda, torch):
    weights = _mlp_weights()
    m = _tl_mlp(weights, cuda)
    tm = _torch_mlp(torch, weights)
    sample = tl.zeros(4, 8, device=cuda, requires_grad=True)
    gm = tl.cuda.make_graphed_callables(m, (sample,))
    rng = np.random.default_rng(2)
    for step in range(3):
        a = rng.standard_normal((4, 8)).astype(np.float32)
        x = tl.tensor(a, device=cuda, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        out = gm(x)
        tout = tm(tx)
        np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
        (out * out).sum().backward()
        (tout * tout).sum().backward()
        np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
        for p, tp in zip(m.parameters(), tm.parameters()):
            np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_graphed_training_steps_match_torch(cuda, torch):
    """A launch-bound training step (small MLP): the graphed forward/backward with an optimizer step
    outside the graph gives torch's losses step by step."""
    weights = _mlp_weights(3)
    m = _tl_mlp(weights, cuda)
    tm = _torch_mlp(torch, weights)
    gm = tl.cuda.make_graphed_callables(m, (tl.zeros(6, 8, device=cuda),))
    opt = tl.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    t = rng.integers(0, 3, 6)
    x, y = tl.tensor(a, device=cuda), tl.tensor(t, device=cuda)
    tx, ty = torch.tensor(a), torch.tensor(t)
    for step in range(4):
        opt.zero_grad()
        loss = tl.nn.functional.cross_entropy(gm(x), y)
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(tx), ty)
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5, abs=1e-6)


def test_graphed_function_and_eval_mode_runs_eagerly(cuda):
    def f(a, b):
        return (a * b).sin(), a + b

    a = tl.ones(3, device=cuda, requires_grad=True)
    b = tl.full((3,), 2.0, device=cuda)
    gf = tl.cuda.make_graphed_callables(f, (a, b))
    s, t = gf(tl.full((3,), 0.5, device=cuda, requires_grad=True), tl.full((3,), 3.0, device=cuda))
    np.testing.assert_allclose(_np(s), np.sin(np.full(3, 1.5)), rtol=1e-6)
    np.testing.assert_allclose(_np(t), np.full(3, 3.5))
    m = _tl_mlp(_mlp_weights(), cuda)
    gm = tl.cuda.make_graphed_callables(m, (tl.zeros(2, 8, device=cuda),))
    m.eval()  # another mode than at capture: the eager forward
    x = tl.ones(2, 8, device=cuda)
    np.testing.assert_allclose(_np(gm(x)), _np(m.forward_eager(x)))
    with pytest.raises(TypeError, match="only tensors"):
        tl.cuda.make_graphed_callables(f, (a, 2.0))
