"""The fused recurrent cells (ops/rnn_fused.py: the rnn_cell_fwd / rnn_cell_bwd primitives, kernels/rnn.cu):
the cell op against the composite steps of nn/rnn.py (rnn_fused.ENABLED = False) and torch, per mode (LSTM,
GRU with torch's b_hn placement, RNN tanh/relu), every floating dtype and both index types; gradcheck in
float64; double backward against torch; half precision layers against torch in float32; batch of one and
zero-size batch; one cell op per time step in the layers."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from layers_oracle import close, close_grads, copy_weights, np_of, pair, randn
from tensorlab.ops import rnn_fused

MODES = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]
DTYPES = {"float32": tl.float32, "float64": tl.float64, "float16": tl.float16, "bfloat16": tl.bfloat16}
TOL = {tl.float32: 1e-5, tl.float64: 1e-12, tl.float16: 4e-3, tl.bfloat16: 3e-2}


def _cell_inputs(device, mode, dtype, b=3, h=5, bias=True, seed=0):
    g = rnn_fused.GATES[mode]
    def mk(shape, s):
        return tl.tensor(randn(*shape, seed=seed + s), device=device).to(dtype).requires_grad_(True)
    gx, gh = mk((b, g * h), 0), mk((b, g * h), 1)
    state = mk((b, h), 2) if mode in ("LSTM", "GRU") else None
    bb = mk((g * h,), 3) if bias else None
    return gx, gh, state, bb


def _composite_cell(mode, gx, gh, state, bias):
    """The cell's math from plain ops (torch's formulas), in float32 for half types."""
    low = gx.dtype in (tl.float16, tl.bfloat16)
    up = (lambda t: None if t is None else t.float()) if low else (lambda t: t)  # noqa: E731
    gx, gh, state, bias = up(gx), up(gh), up(state), up(bias)
    if bias is not None:
        gh = gh + bias
    if mode == "LSTM":
        i, f, g, o = (gx + gh).chunk(4, -1)
        c = f.sigmoid() * state + i.sigmoid() * g.tanh()
        return tl.stack([o.sigmoid() * c.tanh(), c])
    if mode == "GRU":
        xr, xz, xn = gx.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return n + z * (state - n)
    v = gx + gh
    return v.relu() if mode == "RNN_RELU" else v.tanh()


def _fused(mode, *args):
    out = rnn_fused.cell(mode, *args)
    return tl.stack(out) if mode == "LSTM" else out


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", MODES)
def test_cell_matches_composite_every_dtype_and_index(device, index, mode, dtype):
    """Forward and every input's gradient, for each kernel instantiation (dtype x index type)."""
    dt = DTYPES[dtype]
    ins = _cell_inputs(device, mode, dt)
    args = [t for t in ins if t is not None]
    out = _fused(mode, *ins)
    assert out.dtype is dt
    gy = tl.tensor(randn(*out.shape, seed=9), device=device).to(dt)
    grads = tl.autograd.grad(out, args, gy)
    leaves = [t.detach().requires_grad_(True) if t is not None else None for t in ins]
    ref = _composite_cell(mode, *leaves)
    rgrads = tl.autograd.grad(ref, [t for t in leaves if t is not None], gy.to(ref.dtype))
    tol = TOL[dt]
    np.testing.assert_allclose(np_of(out).astype(np.float64), np_of(ref).astype(np.float64), rtol=tol, atol=tol)
    for g, r in zip(grads, rgrads):
        assert g.dtype is dt and tuple(g.shape) == tuple(r.shape)
        np.testing.assert_allclose(np_of(g).astype(np.float64), np_of(r).astype(np.float64), rtol=4 * tol,
                                   atol=4 * tol)


@pytest.mark.parametrize("mode", MODES)
def test_cell_gradcheck_float64(device, mode):
    ins = [t for t in _cell_inputs(device, mode, tl.float64, b=2, h=3) if t is not None]
    has_state = mode in ("LSTM", "GRU")

    def fn(*args):
        gx, gh = args[0], args[1]
        state = args[2] if has_state else None
        bias = args[-1]
        return _fused(mode, gx, gh, state, bias)
    assert tl.autograd.gradcheck(fn, tuple(ins))


@pytest.mark.parametrize("mode", MODES)
def test_cell_double_backward_matches_composite(device, mode):
    """create_graph: the gradients come from differentiable ops, so a second backward works and agrees
    with the composite's."""
    results = []
    for fused in (True, False):
        leaves = [t for t in _cell_inputs(device, mode, tl.float64, b=2, h=3, seed=4)]
        args = [t for t in leaves if t is not None]
        out = _fused(mode, *leaves) if fused else _composite_cell(mode, *leaves)
        gy = tl.tensor(randn(*out.shape, seed=5, dtype="float64"), device=device, requires_grad=True)
        grads = tl.autograd.grad(out, args, gy, create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        # (relu's second derivative is zero: an input may get no gradient at all)
        results.append([np_of(t.grad) if t.grad is not None else np.zeros(t.shape) for t in args + [gy]])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


LAYERS = [("LSTM", {}), ("GRU", {"bidirectional": True}), ("RNN", {"num_layers": 2}),
          ("RNN", {"nonlinearity": "relu", "bias": False}), ("LSTM", {"num_layers": 2, "batch_first": True})]


@pytest.mark.parametrize("name,kw", LAYERS, ids=str)
def test_layer_fused_matches_composite_and_torch(device, torch, monkeypatch, name, kw):
    tm = getattr(torch.nn, name)(4, 5, **kw)
    runs = []
    for enabled in (True, False):
        m = copy_weights(tm, getattr(nn, name)(4, 5, **kw), device)
        x = tl.tensor(randn(3, 6, 4), device=device, requires_grad=True)
        with monkeypatch.context() as mp:
            mp.setattr(rnn_fused, "ENABLED", enabled)
            out, state = m(x)
        loss = (out * out).sum() + sum((s * s).sum() for s in (state if isinstance(state, tuple) else (state,)))
        loss.backward()
        runs.append((out, x.grad, m))
    tx = torch.tensor(randn(3, 6, 4), requires_grad=True)
    tout, tstate = tm(tx)
    tloss = (tout * tout).sum() + sum((s * s).sum() for s in (tstate if isinstance(tstate, tuple) else (tstate,)))
    tloss.backward()
    for out, xg, m in runs:
        close(out, tout, rtol=1e-4, atol=1e-5)
        close(xg, tx.grad, rtol=1e-4, atol=1e-5)
        close_grads(tm, m, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_use_the_fused_op(device, name):
    m = getattr(nn, name)(3, 4).to(device)
    out = m(tl.randn(2, 3, device=device))
    h = out[0] if isinstance(out, tuple) else out
    fn = h.grad_fn
    names = set()
    stack = [fn]
    while stack:  # the fused op sits under the views that split LSTM's (h', c')
        f = stack.pop()
        if f is None:
            continue
        names.add(f.name())
        stack.extend(n for n, _ in f.next_functions)
    assert "FusedRnnCellBackward0" in names


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_ops_per_step(device, monkeypatch, name):
    """One fused sequence op per layer and direction (no op per time step); stepping with cells
    (SEQUENCE off): T x L x D fused cell ops."""
    calls = []
    real_cell, real_seq = rnn_fused.cell, rnn_fused.sequence
    monkeypatch.setattr(rnn_fused, "cell", lambda mode, *a: calls.append("cell") or real_cell(mode, *a))
    monkeypatch.setattr(rnn_fused, "sequence", lambda mode, *a: calls.append("seq") or real_seq(mode, *a))
    m = getattr(nn, name)(3, 4, num_layers=2, bidirectional=True).to(device)
    m(tl.zeros(5, 2, 3, device=device))
    assert calls == ["seq"] * 4
    calls.clear()
    with monkeypatch.context() as mp:
        mp.setattr(rnn_fused, "SEQUENCE", False)
        m(tl.zeros(5, 2, 3, device=device))
    assert calls == ["cell"] * (5 * 2 * 2)


SEQ_CONFIGS = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
               ("LSTM", {"bidirectional": True, "num_layers": 2}), ("GRU", {"bidirectional": True, "bias": False})]


def _layer_run(device, name, kw, dtype, monkeypatch, path, seed=0):
    """Output, final states and every gradient of one layer, with the path: "seq", "cell" or "composite"."""
    m = getattr(nn, name)(3, 6, **kw)
    m.load_state_dict({k: tl.tensor(randn(*v.shape, seed=seed + i, scale=0.5)) for i, (k, v) in
                       enumerate(m.state_dict().items())})
    m = m.to(device).to(dtype)
    d = 2 if kw.get("bidirectional") else 1
    n = kw.get("num_layers", 1) * d
    x = tl.tensor(randn(4, 2, 3, seed=seed + 50), device=device).to(dtype).requires_grad_(True)
    h0 = tl.tensor(randn(n, 2, 6, seed=seed + 51), device=device).to(dtype).requires_grad_(True)
    hx = (h0, tl.tensor(randn(n, 2, 6, seed=seed + 52), device=device).to(dtype).requires_grad_(True)) \
        if name == "LSTM" else h0
    with monkeypatch.context() as mp:
        mp.setattr(rnn_fused, "SEQUENCE", path == "seq")
        mp.setattr(rnn_fused, "ENABLED", path != "composite")
        out, state = m(x, hx)
    states = list(state) if isinstance(state, tuple) else [state]
    loss = (out.float() * tl.tensor(randn(*out.shape, seed=seed + 53), device=device)).sum()
    loss = loss + sum((s.float() * s.float()).sum() for s in states)
    loss.backward()
    leaves = [x] + (list(hx) if isinstance(hx, tuple) else [hx]) + list(m.parameters())
    return [out] + states + [t.grad for t in leaves]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name,kw", SEQ_CONFIGS, ids=str)
def test_sequence_matches_cells_and_composite(device, monkeypatch, name, kw, dtype):
    """The whole-sequence op (both directions, initial states, every floating dtype) against the per-step
    cells and the composite steps: outputs, final states, gradients of input, initial states, parameters."""
    dt = DTYPES[dtype]
    seq = _layer_run(device, name, kw, dt, monkeypatch, "seq")
    for path in ("cell", "composite"):
        ref = _layer_run(device, name, kw, dt, monkeypatch, path)
        tol = {tl.float64: 1e-10, tl.float32: 2e-5}.get(dt, TOL[dt] * 10)
        for a, b in zip(seq, ref):
            assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(np_of(a).astype(np.float64), np_of(b).astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kw", [("LSTM", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu"}),
                                     ("GRU", {})], ids=str)
def test_sequence_gradcheck_float64(device, name, kw):
    m = getattr(nn, name)(2, 3, **kw).to(device).double()
    x = tl.tensor(randn(3, 2, 2, dtype="float64"), device=device, requires_grad=True)
    d = 2 if kw.get("bidirectional") else 1
    h = tl.tensor(randn(d, 2, 3, seed=1, dtype="float64"), device=device, requires_grad=True)
    if name == "LSTM":
        c = tl.tensor(randn(d, 2, 3, seed=2, dtype="float64"), device=device, requires_grad=True)
        assert tl.autograd.gradcheck(lambda a, h, c: m(a, (h, c))[0], (x, h, c))
    else:
        assert tl.autograd.gradcheck(lambda a, h: m(a, h)[0], (x, h))


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_sequence_double_backward_matches_composite(device, monkeypatch, name):
    results = []
    for enabled in (True, False):
        m = getattr(nn, name)(2, 3)
        m.load_state_dict({k: tl.tensor(randn(*v.shape, seed=i, dtype="float64")) for i, (k, v) in
                           enumerate(m.state_dict().items())})
        m = m.to(device).double()
        x = tl.tensor(randn(3, 2, 2, seed=7, dtype="float64"), device=device, requires_grad=True)
        with monkeypatch.context() as mp:
            mp.setattr(rnn_fused, "ENABLED", enabled)
            out, _ = m(x)
        params = list(m.parameters())
        grads = tl.autograd.grad((out * out).sum(), [x] + params, create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        results.append([np_of(t.grad) for t in [x] + params])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_half_precision_layers_match_torch_float32(device, torch, name, dtype):
    dt = DTYPES[dtype]
    tm = getattr(torch.nn, name)(4, 8)
    m = copy_weights(tm, getattr(nn, name)(4, 8), device).to(dt)
    x = tl.tensor(randn(5, 2, 4), device=device).to(dt).requires_grad_(True)
    out, _ = m(x)
    tx = torch.tensor(randn(5, 2, 4)).to(getattr(torch, dtype)).float().requires_grad_(True)
    tout, _ = tm(tx)
    tol = 2e-2 if dt is tl.float16 else 8e-2
    close(out, tout, rtol=tol, atol=tol)
    out.float().sum().backward()
    tout.sum().backward()
    close(x.grad, tx.grad, rtol=2 * tol, atol=2 * tol)


def test_batch_of_one_and_zero_batch_cells(device, torch):
    for name in ("LSTMCell", "GRUCell", "RNNCell"):
        tm = getattr(torch.nn, name)(3, 4)
        m = copy_weights(tm, getattr(nn, name)(3, 4), device)
        for arr in (randn(1, 3), np.zeros((0, 3), np.float32)):
            x, tx = pair(torch, device, arr, requires_grad=True)
            out, tout = m(x), tm(tx)
            outs = out if isinstance(out, tuple) else (out,)
            touts = tout if isinstance(tout, tuple) else (tout,)
            for o, t in zip(outs, touts):
                close(o, t, rtol=1e-5, atol=1e-6)
            sum(o.sum() for o in outs).backward()
            sum(t.sum() for t in touts).backward()
            close(x.grad, tx.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_layer_forward_backward_has_no_host_wait(device, name):
    m = getattr(nn, name)(3, 4, bidirectional=True).to(device)
    x = tl.randn(5, 2, 3, device=device, requires_grad=True)
    with tl.cuda.sync_trace() as trace:
        out, _ = m(x)
        out.sum().backward()
    assert [t.reason for t in trace] == []


@pytest.mark.parametrize("name,kw", [("GRU", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu"}),
                                     ("LSTM", {"num_layers": 2})], ids=str)
def test_layers_batch_of_one_zero_batch_noncontiguous_match_torch(device, torch, name, kw):
    tm = getattr(torch.nn, name)(4, 5, **kw)
    m = copy_weights(tm, getattr(nn, name)(4, 5, **kw), device)
    base = randn(6, 3, 4)
    for arr in (randn(3, 1, 4), np.zeros((3, 0, 4), np.float32), base):
        xl, txl = pair(torch, device, arr, requires_grad=True)
        x, tx = (xl[::2], txl[::2]) if arr is base else (xl, txl)  # base: a non-contiguous view
        out, state = m(x)
        tout, tstate = tm(tx)
        close(out, tout, rtol=1e-4, atol=1e-5)
        for s, ts in zip(_states(state), _states(tstate)):
            close(s, ts, rtol=1e-4, atol=1e-5)
        out.sum().backward()
        tout.sum().backward()
        close(xl.grad, txl.grad, rtol=1e-4, atol=1e-5)
        close_grads(tm, m, rtol=1e-4, atol=1e-4)


def _states(state):
    return list(state) if isinstance(state, tuple) else [state]


# past one block: hidden 260 spans two 256-column chunks of h and ends inside a slice of 8 units (and a warp of
# 32 units in the backward); batch 11 is a full and a partial tile of 8 rows (kernels/rnn.cu, rnn_seq_step_*)
TILED = [("LSTM", {}), ("GRU", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu"}), ("RNN", {})]


def _tiled_run(mod, x, hx):
    out, state = mod(x, hx)
    states = list(state) if isinstance(state, tuple) else [state]
    loss = (out.float() * out.float()).sum() + sum((s.float() * s.float()).sum() for s in states)
    loss.backward()
    return [out] + states


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name,kw", TILED, ids=str)
def test_sequence_batch_tiles_and_hidden_chunks_match_torch(device, torch, name, kw, dtype):
    """The whole-sequence kernels over several blocks in both grid dimensions, against torch's layer: float64
    and float32 with torch in the same dtype, float16/bfloat16 against torch in float32 on the same rounded
    weights and input (ours rounds h and c to 16 bits every step)."""
    hidden, batch = 260, 11
    low = dtype in ("float16", "bfloat16")
    # torch's generator seeded: the layer's weights came from whatever state earlier tests left, and with h
    # rounded to 16 bits every step a bfloat16 ReLU RNN lands a pre-activation on the other side of the
    # kink (one weight-gradient element flips) for about one draw in eight
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(5, hidden, **kw)
    tdt = getattr(torch, dtype)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(p.to(tdt).float())  # the weights our 16-bit layer holds
    if dtype == "float64":
        tm = tm.double()
    m = copy_weights(tm, getattr(nn, name)(5, hidden, **kw), device).to(DTYPES[dtype])
    d = 2 if kw.get("bidirectional") else 1
    arr = randn(3, batch, 5, seed=7, dtype="float64")
    harr = randn(d, batch, hidden, seed=8, scale=0.5, dtype="float64")
    carr = randn(d, batch, hidden, seed=9, scale=0.5, dtype="float64")
    mk = lambda a: tl.tensor(a, device=device).to(DTYPES[dtype]).requires_grad_(True)  # noqa: E731
    tmk = lambda a: torch.tensor(a).to(tdt).to(torch.float64 if dtype == "float64" else torch.float32) \
        .requires_grad_(True)  # noqa: E731
    x, h = mk(arr), mk(harr)
    tx, th = tmk(arr), tmk(harr)
    hx, thx = ((h, mk(carr)), (th, tmk(carr))) if name == "LSTM" else (h, th)
    ours = _tiled_run(m, x, hx)
    theirs = _tiled_run(tm, tx, thx)
    tol = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-2, "bfloat16": 8e-2}[dtype]
    for a, b in zip(ours, theirs):
        close(a, b, rtol=tol, atol=tol)
    leaves = [(x, tx)] + ([(hx[0], thx[0]), (hx[1], thx[1])] if name == "LSTM" else [(h, th)])
    for a, b in leaves:
        close(a.grad, b.grad, rtol=2 * tol, atol=2 * tol)
    close_grads(tm, m, rtol=4 * tol, atol=4 * tol)


def test_sequence_kernels_launch_per_step_over_unit_and_batch_tiles(device):
    """One forward launch per step and T + 1 backward launches, each over ceil(H / 8) x ceil(B / 8) (forward)
    and ceil(H / 32) x ceil(B / 8) (backward) blocks: the grid grows with the hidden size, not the batch alone."""
    if device != "cuda":
        pytest.skip("CUDA launch geometry")
    from tensorlab.backends.cuda import rnn as crnn
    from tensorlab.backends.cuda.launch import LAUNCHES
    assert crnn.seq_fwd_geometry(1, 1024)[:2] == ((128, 1), 256)
    assert crnn.seq_fwd_geometry(11, 260)[:2] == ((33, 2), 256)
    assert crnn.seq_bwd_geometry(3, 1024)[:2] == ((32, 1), 96)
    assert crnn.seq_bwd_geometry(64, 1024)[:2] == ((32, 8), 256)
    m = nn.GRU(3, 40).to(device)
    before = dict(LAUNCHES)
    out, _ = m(tl.randn(6, 2, 3, device=device))
    out.sum().backward()
    counts = {e: n - before.get(("rnn.cu", e), 0) for (src, e), n in LAUNCHES.items() if src == "rnn.cu"}
    assert counts.get("rnn_seq_step_fwd<float, 1, int>") == 6
    assert counts.get("rnn_seq_step_bwd<float, 1, int>") == 7


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name,kw", [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})],
                         ids=str)
def test_sequence_kernels_64_bit_index_match_32_bit(cuda, monkeypatch, name, kw, dtype):
    """rnn_seq_step_fwd/bwd's long long instantiations (launch.wide_indexing() forces them; tensors of 2**31
    elements are out of reach in tests) give the int instantiations' values, forward and backward."""
    from tensorlab.backends.cuda import launch
    dt = DTYPES[dtype]
    ref = _layer_run(cuda, name, kw, dt, monkeypatch, "seq")
    with launch.wide_indexing():
        wide = _layer_run(cuda, name, kw, dt, monkeypatch, "seq")
    for a, b in zip(wide, ref):
        np.testing.assert_array_equal(np_of(a), np_of(b))
    kinds = {expr for (src, expr) in launch.LAUNCHES if src == "rnn.cu" and expr.endswith("long long>")}
    assert any(e.startswith("rnn_seq_step_fwd") for e in kinds) and any(e.startswith("rnn_seq_step_bwd") for e in kinds)
