"""nn.utils.rnn against torch: pad_sequence (both sides, batch_first), pack_padded_sequence (sorted and
unsorted), pad_packed_sequence (total_length), pack/unpack/unpad_sequence, PackedSequence's methods, the
errors; RNN/LSTM/GRU on a PackedSequence (outputs, h_n/c_n, gradients of inputs, states and weights)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.nn.utils import rnn as R
from layers_oracle import close, close_grads, copy_weights, np_of, randn, raises_like

F64 = dict(rtol=1e-9, atol=1e-10)


def _seqs(lengths, feat=(3,), seed=0):
    return [randn(n, *feat, seed=seed + i, dtype="float64") for i, n in enumerate(lengths)]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, device, batch_first, side):
    arrs = _seqs([2, 4, 1], feat=(2, 3))
    ours = [tl.tensor(a, device=device, requires_grad=True) for a in arrs]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrs]
    out = R.pad_sequence(ours, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    ref = torch.nn.utils.rnn.pad_sequence(theirs, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    close(out, ref, **F64)
    w = randn(*ref.shape, seed=9, dtype="float64")
    (out * tl.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        close(a.grad, b.grad, **F64)


def test_pad_sequence_edge_cases(torch, device):
    # a 2-D tensor is a sequence of rows; the first sequence's dtype wins
    x = randn(3, 2, dtype="float64")
    close(R.pad_sequence(tl.tensor(x, device=device)), torch.nn.utils.rnn.pad_sequence(torch.tensor(x)), **F64)
    mixed = [tl.ones(2, 3, device=device), tl.ones(3, 3, dtype=tl.float64, device=device)]
    assert R.pad_sequence(mixed).dtype is tl.float32
    raises_like(lambda: R.pad_sequence([]), lambda: torch.nn.utils.rnn.pad_sequence([]))
    raises_like(lambda: R.pad_sequence([tl.ones(2, device=device)], padding_side="mid"),
                lambda: torch.nn.utils.rnn.pad_sequence([torch.ones(2)], padding_side="mid"))
    with pytest.raises(RuntimeError, match="pad_sequence"):
        R.pad_sequence([tl.ones(2, 3, device=device), tl.ones(3, 2, device=device)])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_pad_packed_round_trip(torch, device, batch_first, enforce_sorted):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    x = randn(4, 5, 2, seed=1, dtype="float64") if batch_first else randn(5, 4, 2, seed=1, dtype="float64")
    ours = tl.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    p = R.pack_padded_sequence(ours, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = torch.nn.utils.rnn.pack_padded_sequence(theirs, lengths, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    close(p.data, tp.data, **F64)
    assert p.batch_sizes.device.type == "cpu" and p.batch_sizes.dtype is tl.int64
    assert p.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for a, b in ((p.sorted_indices, tp.sorted_indices), (p.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist() and a.device.type == device
    out, lens = R.pad_packed_sequence(p, batch_first=batch_first, padding_value=7.0, total_length=6)
    tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=7.0,
                                                         total_length=6)
    close(out, tout, **F64)
    assert lens.tolist() == tlens.tolist() and lens.device.type == "cpu"
    w = randn(*tout.shape, seed=4, dtype="float64")
    (out * tl.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    close(ours.grad, theirs.grad, **F64)


def test_pack_sequence_unpack_unpad(torch, device):
    arrs = _seqs([2, 4, 3])
    ours = [tl.tensor(a, device=device) for a in arrs]
    p = R.pack_sequence(ours, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrs], enforce_sorted=False)
    close(p.data, tp.data, **F64)
    back = R.unpack_sequence(p)
    assert [tuple(b.shape) for b in back] == [a.shape for a in arrs]
    for b, a in zip(back, arrs):
        np.testing.assert_array_equal(np_of(b), a)
    padded = R.pad_sequence(ours, batch_first=True)
    for b, a in zip(R.unpad_sequence(padded, tl.tensor([2, 4, 3]), batch_first=True), arrs):
        np.testing.assert_array_equal(np_of(b), a)
    raises_like(lambda: R.pack_sequence(ours),
                lambda: torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrs]))


def test_pack_padded_errors(torch, device):
    x = randn(4, 3, 2)
    ours, theirs = tl.tensor(x, device=device), torch.tensor(x)
    P, TP = R.pack_padded_sequence, torch.nn.utils.rnn.pack_padded_sequence
    raises_like(lambda: P(ours, [4, 2, 3]), lambda: TP(theirs, [4, 2, 3]))
    raises_like(lambda: P(ours, [4, 2]), lambda: TP(theirs, [4, 2]))
    raises_like(lambda: P(ours, [4, 2, 0]), lambda: TP(theirs, [4, 2, 0]))
    raises_like(lambda: P(ours, tl.tensor([[4, 2, 1]])), lambda: TP(theirs, torch.tensor([[4, 2, 1]])))
    if device == "cuda":
        with pytest.raises(RuntimeError, match="1D CPU int64"):
            P(ours, tl.tensor([4, 2, 1], device="cuda"))
    with pytest.raises(RuntimeError, match="longest length is 5"):  # torch reads past the end here
        P(ours, [5, 2, 1])
    p = R.pack_sequence([tl.ones(3, device=device), tl.ones(2, device=device)])
    tp = torch.nn.utils.rnn.pack_sequence([torch.ones(3), torch.ones(2)])
    raises_like(lambda: R.pad_packed_sequence(p, total_length=2),
                lambda: torch.nn.utils.rnn.pad_packed_sequence(tp, total_length=2))


def test_packed_sequence_methods(torch, device):
    p = R.pack_sequence([tl.ones(2, device=device), tl.ones(3, device=device)], enforce_sorted=False)
    assert isinstance(p, tuple) and p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    d = p.double()
    assert d.data.dtype is tl.float64 and d.batch_sizes is p.batch_sizes and type(d) is R.PackedSequence
    assert p.half().data.dtype is tl.float16 and p.long().data.dtype is tl.int64 and p.int().data.dtype is tl.int32
    assert p.to(tl.float32) is p  # nothing to change: the same object, as torch
    c = p.cpu()
    assert c.data.device.type == "cpu" and c.sorted_indices.device.type == "cpu"
    assert c.is_cuda is False and p.is_cuda is (device == "cuda")
    if device == "cuda":
        g = c.cuda()
        assert g.data.device.type == "cuda" and g.unsorted_indices.device.type == "cuda"
        assert g.batch_sizes.device.type == "cpu"
    # unsorted_indices is computed from sorted_indices when not given
    q = R.PackedSequence(p.data, p.batch_sizes, tl.tensor([2, 0, 1], device=device))
    assert q.unsorted_indices.tolist() == [1, 2, 0]
    assert R.invert_permutation(None) is None
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        if device == "cuda":
            R.PackedSequence(p.data, p.batch_sizes.cuda())
        else:
            raise ValueError("batch_sizes should always be on CPU")


CONFIGS = [
    ("LSTM", {}), ("GRU", {}), ("RNN", {"nonlinearity": "relu"}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("RNN", {"num_layers": 2, "bias": False, "batch_first": True}),
]


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
@pytest.mark.parametrize("with_hx", [False, True])
def test_rnn_on_packed_sequence_matches_torch(torch, device, name, kw, with_hx):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(3, 4, **kw).double()
    m = copy_weights(tm, getattr(tl.nn, name)(3, 4, **kw).double(), device)
    lengths = [3, 5, 2, 5]
    x = randn(5, 4, 3, seed=2, dtype="float64")
    ours, theirs = tl.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    p = R.pack_padded_sequence(ours, lengths, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(theirs, lengths, enforce_sorted=False)
    hx = thx = None
    if with_hx:
        d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
        h = randn(d, 4, kw.get("proj_size") or 4, seed=5, dtype="float64")
        hx, thx = tl.tensor(h, device=device, requires_grad=True), torch.tensor(h, requires_grad=True)
        if name == "LSTM":
            c = randn(d, 4, 4, seed=6, dtype="float64")
            hx = (hx, tl.tensor(c, device=device, requires_grad=True))
            thx = (thx, torch.tensor(c, requires_grad=True))
    out, h_n = m(p, hx)
    tout, th_n = tm(tp, thx)
    assert isinstance(out, R.PackedSequence)
    close(out.data, tout.data, **F64)
    assert out.batch_sizes.tolist() == tout.batch_sizes.tolist()
    assert out.unsorted_indices.tolist() == tout.unsorted_indices.tolist()
    hs = list(h_n) if isinstance(h_n, tuple) else [h_n]
    ths = list(th_n) if isinstance(th_n, tuple) else [th_n]
    for a, b in zip(hs, ths):
        close(a, b, **F64)
    padded, _ = R.pad_packed_sequence(out)
    tpadded, _ = torch.nn.utils.rnn.pad_packed_sequence(tout)
    w = randn(*tpadded.shape, seed=7, dtype="float64")
    loss = (padded * tl.tensor(w, device=device)).sum() + sum((h * (k + 2)).sum() for k, h in enumerate(hs))
    tloss = (tpadded * torch.tensor(w)).sum() + sum((h * (k + 2)).sum() for k, h in enumerate(ths))
    loss.backward()
    tloss.backward()
    close(ours.grad, theirs.grad, **F64)
    close_grads(tm, m, **F64)
    if with_hx:
        for a, b in zip(hx if isinstance(hx, tuple) else [hx], thx if isinstance(thx, tuple) else [thx]):
            close(a.grad, b.grad, **F64)


def test_rnn_packed_errors(torch, device):
    m = tl.nn.GRU(3, 4).to(device)
    p = R.pack_sequence([tl.ones(3, 3, device=device), tl.ones(2, 3, device=device)])
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\)"):
        m(p, tl.zeros(1, 3, 4, device=device))
    bad = R.pack_sequence([tl.ones(3, 2, device=device)])
    with pytest.raises(RuntimeError, match="input_size"):
        m(bad)
    with pytest.raises(ValueError, match="dtype"):
        m(p.double())


def test_gradcheck_packing_and_packed_gru(device):
    x = tl.tensor(randn(4, 3, 2, seed=11, dtype="float64"), device=device, requires_grad=True)

    def round_trip(x):
        p = R.pack_padded_sequence(x, [4, 2, 1])
        return R.pad_packed_sequence(p, padding_value=0.5, total_length=5)[0]
    assert tl.autograd.gradcheck(round_trip, (x,))
    seqs = [tl.tensor(randn(n, 2, seed=n, dtype="float64"), device=device, requires_grad=True) for n in (2, 3)]
    assert tl.autograd.gradcheck(lambda a, b: R.pad_sequence([a, b], padding_side="left"), tuple(seqs))
    gru = tl.nn.GRU(2, 2, bidirectional=True).double().to(device)

    def packed_gru(x):
        out, h = gru(R.pack_padded_sequence(x, [1, 4, 2], enforce_sorted=False))
        return out.data, h
    assert tl.autograd.gradcheck(packed_gru, (x,))
