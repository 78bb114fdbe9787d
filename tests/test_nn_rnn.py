"""RNN (tanh/relu), LSTM (with proj_size), GRU and their cells against torch: parameter names and
shapes, init bounds, outputs, final states, input/hidden/parameter gradients, batch_first,
bidirectional, stacked layers, initial states, unbatched input, errors."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from layers_oracle import close, close_grads, copy_weights, np_of, pair, randn

TOL = dict(rtol=1e-4, atol=1e-5)

CONFIGS = [
    ("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"num_layers": 3, "batch_first": True, "bias": False}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True}),
]


def _states(torch, device, name, kw, batch, seed=3):
    d = 2 if kw.get("bidirectional") else 1
    n = kw.get("num_layers", 1) * d
    h_out = kw.get("proj_size") or 5
    h = randn(n, batch, h_out, seed=seed)
    if name != "LSTM":
        return pair(torch, device, h, requires_grad=True)
    c = randn(n, batch, 5, seed=seed + 1)
    (h1, th1), (c1, tc1) = pair(torch, device, h, True), pair(torch, device, c, True)
    return (h1, c1), (th1, tc1)


def _flat(state):
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize("name,kw", CONFIGS, ids=str)
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_layers_match_torch(device, torch, name, kw, with_state):
    tm = getattr(torch.nn, name)(4, 5, **kw)
    m = copy_weights(tm, getattr(nn, name)(4, 5, **kw), device)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert repr(m) == repr(tm)
    m.flatten_parameters()
    shape = (3, 6, 4) if kw.get("batch_first") else (6, 3, 4)
    x, tx = pair(torch, device, randn(*shape), requires_grad=True)
    args, targs = ((), ())
    if with_state:
        hx, thx = _states(torch, device, name, kw, batch=3)
        args, targs = (hx,), (thx,)
    out, state = m(x, *args)
    tout, tstate = tm(tx, *targs)
    close(out, tout, **TOL)
    for s, ts in zip(_flat(state), _flat(tstate)):
        close(s, ts, **TOL)
    loss = (out * tl.tensor(randn(*tout.shape, seed=9), device=device)).sum() + \
        sum((s * s).sum() for s in _flat(state))
    tloss = (tout * torch.tensor(randn(*tout.shape, seed=9))).sum() + sum((s * s).sum() for s in _flat(tstate))
    loss.backward()
    tloss.backward()
    close(x.grad, tx.grad, **TOL)
    close_grads(tm, m, **TOL)
    if with_state:
        for h, th in zip(_flat(args[0]), _flat(targs[0])):
            close(h.grad, th.grad, **TOL)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input(device, torch, name):
    tm = getattr(torch.nn, name)(4, 5, num_layers=2)
    m = copy_weights(tm, getattr(nn, name)(4, 5, num_layers=2), device)
    x, tx = pair(torch, device, randn(7, 4))
    out, state = m(x)
    tout, tstate = tm(tx)
    close(out, tout, **TOL)
    for s, ts in zip(_flat(state), _flat(tstate)):
        close(s, ts, **TOL)
    hx = tuple(tl.zeros(2, 5, device=device) for _ in range(2)) if name == "LSTM" else tl.zeros(2, 5, device=device)
    assert tuple(m(x, hx)[0].shape) == (7, 5)


def test_init_bounds_and_names(device):
    m = nn.GRU(3, 16, num_layers=2, bidirectional=True, device=device)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_hh_l1_reverse" in names and len(names) == 16
    bound = 1 / math.sqrt(16)
    for p in m.parameters():
        a = np_of(p)
        assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 3
    assert m.weight_ih_l1.shape == (48, 32)
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse


def test_dropout_between_layers(device):
    tl.manual_seed(0)
    m = nn.LSTM(4, 6, num_layers=2, dropout=0.5).to(device)
    x = tl.tensor(randn(5, 2, 4), device=device)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(np_of(a), np_of(b))  # eval: no dropout
    m.train()
    c = m(x)[0]
    assert not np.allclose(np_of(a), np_of(c))  # training: dropout between the layers
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        nn.GRU(3, 4, dropout=0.2)


def test_errors(device):
    m = nn.LSTM(3, 4).to(device)
    with pytest.raises(RuntimeError, match=re.escape("input.size(-1) must be equal to input_size. Expected 3, got 5")):
        m(tl.zeros(2, 3, 5, device=device))
    with pytest.raises(ValueError, match=re.escape("LSTM: Expected input to be 2D or 3D, got 4D input instead")):
        m(tl.zeros(1, 2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match=re.escape("Expected hidden[1] size (1, 3, 4), got [2, 3, 4]")):
        m(tl.zeros(2, 3, 3, device=device), (tl.zeros(1, 3, 4, device=device), tl.zeros(2, 3, 4, device=device)))
    g = nn.GRU(3, 4).to(device)
    with pytest.raises(RuntimeError, match=re.escape("Expected hidden size (1, 3, 4), got [2, 3, 4]")):
        g(tl.zeros(2, 3, 3, device=device), tl.zeros(2, 3, 4, device=device))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        g(tl.zeros(2, 3, 3, device=device), tl.zeros(3, 4, device=device))
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="foo")
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        g(tl.zeros(0, 3, 3, device=device))
    with pytest.raises(ValueError, match=re.escape("RNN input dtype (torch.float64) does not match weight dtype "
                                                   "(torch.float32). Convert input: input.to(torch.float32)")):
        g(tl.zeros(2, 3, 3, dtype=tl.float64, device=device))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        nn.RNNCell(3, 4).to(device)(tl.zeros(2, 5, device=device))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 4"):
        nn.LSTMCell(3, 4).to(device)(tl.zeros(2, 3, device=device),
                                     (tl.zeros(2, 5, device=device), tl.zeros(2, 4, device=device)))


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("name,kw", CELLS, ids=str)
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(device, torch, name, kw, batched):
    tm = getattr(torch.nn, name)(4, 5, **kw)
    m = copy_weights(tm, getattr(nn, name)(4, 5, **kw), device)
    assert repr(m) == repr(tm)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    shape = (3, 4) if batched else (4,)
    x, tx = pair(torch, device, randn(*shape), requires_grad=True)
    hshape = (3, 5) if batched else (5,)
    if name == "LSTMCell":
        h, th = pair(torch, device, randn(*hshape, seed=1), True)
        c, tc = pair(torch, device, randn(*hshape, seed=2), True)
        hx, thx = (h, c), (th, tc)
    else:
        hx, thx = pair(torch, device, randn(*hshape, seed=1), True)
    for state, tstate in ((None, None), (hx, thx)):
        out, tout = m(x, state), tm(tx, tstate)
        for o, to in zip(_flat(out), _flat(tout)):
            close(o, to, **TOL)
    sum((o * o).sum() for o in _flat(out)).backward()
    sum((o * o).sum() for o in _flat(tout)).backward()
    close(x.grad, tx.grad, **TOL)
    close_grads(tm, m, **TOL)


def test_gradcheck_float64(device):
    rng = np.random.default_rng(0)
    m = nn.GRU(2, 3, bidirectional=True).to(device).double()
    x = tl.tensor(rng.standard_normal((3, 2, 2)), device=device, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a: m(a)[0], (x,))
    cell = nn.LSTMCell(2, 3).to(device).double()
    assert tl.autograd.gradcheck(lambda a: cell(a)[1], (x[0].detach().requires_grad_(),))


def test_batch_of_one_zero_batch_and_noncontiguous(device, torch):
    tm = torch.nn.LSTM(4, 5, batch_first=True)
    m = copy_weights(tm, nn.LSTM(4, 5, batch_first=True), device)
    for arr in (randn(1, 3, 4), np.zeros((0, 3, 4), np.float32)):
        x, tx = pair(torch, device, arr)
        out, (h, c) = m(x)
        tout, (th, tc) = tm(tx)
        close(out, tout, **TOL)
        close(c, tc, **TOL)
    base = randn(3, 4, 6)  # a transposed view as input
    x, tx = pair(torch, device, base)
    close(m(x.transpose(1, 2))[0], tm(tx.transpose(1, 2))[0], **TOL)


def test_half_precision_runs(device, torch):
    tm = torch.nn.GRU(4, 5)
    m = copy_weights(tm, nn.GRU(4, 5), device).half()
    x = randn(3, 2, 4)
    out, _ = m(tl.tensor(x, device=device).half())
    assert out.dtype is tl.float16
    close(out, tm(torch.tensor(x))[0], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_input_projection_is_one_matmul_per_layer_and_direction(device, monkeypatch, name):
    """T steps, L layers, D directions: L*D input projections (each over all steps); the recurrent products
    run inside the fused sequence op, or, stepping with cells (rnn_fused.SEQUENCE = False), L*D*T of them."""
    from tensorlab.ops import rnn_fused
    calls = []
    real = tl.Tensor.matmul

    def counting(self, other):
        calls.append(tuple(self.shape))
        return real(self, other)

    monkeypatch.setattr(tl.Tensor, "matmul", counting)
    T, B, L, D = 7, 2, 2, 2
    m = getattr(nn, name)(3, 4, num_layers=L, bidirectional=True).to(device)
    m(tl.zeros(T, B, 3, device=device))
    assert len([s for s in calls if s[0] == T * B]) == L * D  # [T*B, in] @ W_ih^T: one per layer/direction
    assert len(calls) == L * D
    calls.clear()
    monkeypatch.setattr(rnn_fused, "SEQUENCE", False)
    m(tl.zeros(T, B, 3, device=device))
    assert len([s for s in calls if s[0] == T * B]) == L * D
    assert len(calls) == L * D * (1 + T)
