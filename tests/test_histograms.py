"""histogram and histogramdd against torch on every device: int and tensor bins, range, weight,
density, the data's own extent (equal min and max, empty input), out-of-range and NaN-free points,
the top edge in the last bin, the method, out=, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


def _close(got, want, tol=1e-5):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("bins", [1, 4, 7, "tensor"])
@pytest.mark.parametrize("rng", [None, (-1.0, 0.5)], ids=str)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_torch(device, torch, dt, bins, rng, weighted, density):
    g = np.random.default_rng(0)
    a = g.standard_normal((5, 6))
    w = g.random((5, 6))
    ta, x = torch.tensor(a, dtype=getattr(torch, dt)), tl.tensor(a, device=device, dtype=getattr(tl, dt))
    tw = torch.tensor(w, dtype=ta.dtype) if weighted else None
    xw = tl.tensor(w, device=device, dtype=x.dtype) if weighted else None
    if bins == "tensor":
        e = np.array([-2.0, -0.3, 0.0, 0.1, 1.5])
        tb, xb = torch.tensor(e, dtype=ta.dtype), tl.tensor(e, device=device, dtype=x.dtype)
    else:
        tb = xb = bins
    kw = {} if rng is None or bins == "tensor" else {"range": rng}
    want = torch.histogram(ta, tb, weight=tw, density=density, **kw)
    got = tl.histogram(x, xb, weight=xw, density=density, **kw)
    _close(got.hist, want.hist)
    _close(got.bin_edges, want.bin_edges)
    m = x.histogram(xb, weight=xw, density=density, **kw)
    _close(m.hist, want.hist)


def test_histogram_extent_rules(device, torch):
    for a in ([2.0, 2.0], [], [0.0, 1.0, 1.0], [3.0]):
        want = torch.histogram(torch.tensor(a), 3)
        got = tl.histogram(tl.tensor(a, device=device), 3)
        _close(got.hist, want.hist)
        _close(got.bin_edges, want.bin_edges)
    # the top edge is in the last bin; points outside range are dropped
    got = tl.histogram(tl.tensor([0.0, 1.0, 2.0, 5.0, -1.0], device=device), 2, range=(0.0, 2.0))
    assert got.hist.tolist() == [1.0, 2.0]


def test_histogram_out(device, torch):
    a = np.linspace(-1, 1, 11)
    h, e = tl.empty(0, device=device, dtype=tl.float64), tl.empty(0, device=device, dtype=tl.float64)
    r = tl.histogram(tl.tensor(a, device=device), 4, out=(h, e))
    assert r.hist is h and r.bin_edges is e
    assert isinstance(r, tl.return_types.histogram) and r._fields == ("hist", "bin_edges")
    assert isinstance(tl.histogramdd(tl.ones((2, 2), device=device), 2), tl.return_types.histogramdd)
    _close(h, torch.histogram(torch.tensor(a), 4).hist)


@pytest.mark.parametrize("bins", [3, [2, 3, 4], "tensors"], ids=str)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_matches_torch(device, torch, bins, weighted, density):
    g = np.random.default_rng(1)
    a = g.standard_normal((4, 5, 3))
    w = g.random((4, 5))
    ta, x = torch.tensor(a), tl.tensor(a, device=device)
    tw = torch.tensor(w) if weighted else None
    xw = tl.tensor(w, device=device) if weighted else None
    if bins == "tensors":
        es = [np.array([-1.0, 0.0, 1.0]), np.array([-2.0, -0.5, 0.5, 2.0]), np.array([-0.5, 0.5])]
        tb, xb = [torch.tensor(e) for e in es], [tl.tensor(e, device=device) for e in es]
    else:
        tb = xb = bins
    want = torch.histogramdd(ta, tb, weight=tw, density=density)
    got = tl.histogramdd(x, xb, weight=xw, density=density)
    _close(got.hist, want.hist, 1e-10)
    assert len(got.bin_edges) == len(want.bin_edges)
    for ge, we in zip(got.bin_edges, want.bin_edges):
        _close(ge, we, 1e-12)
    r = tl.histogramdd(x, [2, 2, 2], range=[-1.0, 1.0, -1.0, 1.0, 0.0, 3.0])
    _close(r.hist, torch.histogramdd(ta, [2, 2, 2], range=[-1.0, 1.0, -1.0, 1.0, 0.0, 3.0]).hist)


def test_histogram_errors(device):
    x = tl.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tl.histogram(x, 0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        tl.histogram(x, 2, range=(2.0, 1.0))
    with pytest.raises(NotImplementedError, match="Long"):
        tl.histogram(tl.tensor([1, 2], device=device), 2)
    with pytest.raises(RuntimeError, match="one dimension"):
        tl.histogram(x, tl.tensor([[1.0, 2.0]], device=device))
    with pytest.raises(RuntimeError, match="same shape"):
        tl.histogram(x, 2, weight=tl.ones(3, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        tl.histogram(x, 2, weight=tl.ones(2, device=device, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="not finite"):
        tl.histogram(tl.tensor([1.0, float("inf")], device=device), 2)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tl.histogramdd(x, 2)
    with pytest.raises(RuntimeError, match="innermost dimension"):
        tl.histogramdd(tl.ones((3, 2), device=device), [2])
