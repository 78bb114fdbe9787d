"""slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter against torch: values, new
tensors (never views of the input), gradients (torch's, and gradcheck; as_strided_scatter's input
gradient is the correct one, where torch's fails its own gradcheck) and torch's errors."""
import numpy as np
import pytest

import tensorlab as tl

CASES = [
    ("slice_scatter", (4, 6), (4, 2), dict(dim=1, start=1, end=5, step=2)),
    ("slice_scatter", (4, 6), (2, 6), dict(dim=0, start=-2)),
    ("slice_scatter", (4, 6), (4, 6), dict()),
    ("select_scatter", (4, 6), (6,), dict(dim=0, index=-1)),
    ("select_scatter", (3, 4, 5), (3, 5), dict(dim=1, index=2)),
    ("diagonal_scatter", (4, 6), (4,), dict()),
    ("diagonal_scatter", (4, 6), (3,), dict(offset=3)),
    ("diagonal_scatter", (3, 4, 5), (3, 3), dict(offset=-1, dim1=1, dim2=2)),
    ("as_strided_scatter", (4, 6), (2, 3), dict(size=(2, 3), stride=(6, 2), storage_offset=1)),
    ("as_strided_scatter", (4, 6), (5,), dict(size=(5,), stride=(5,))),
]


def _arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name,shape,sshape,kw", CASES)
def test_values_and_new_tensor(device, torch, name, shape, sshape, kw):
    x, s = _arr(shape, 0).astype(np.float32), _arr(sshape, 1).astype(np.float32)
    want = getattr(torch, name)(torch.tensor(x), torch.tensor(s), **kw)
    lx = tl.tensor(x, device=device)
    got = getattr(tl, name)(lx, tl.tensor(s, device=device), **kw)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    np.testing.assert_array_equal(lx.cpu().numpy(), x)  # the input is unchanged
    got.fill_(7.0)  # and the result is no view of it
    np.testing.assert_array_equal(lx.cpu().numpy(), x)
    m = getattr(lx, name)(tl.tensor(s, device=device), **kw)
    np.testing.assert_array_equal(m.cpu().numpy(), want.numpy())


def test_as_strided_scatter_keeps_the_input_strides(device, torch):
    """The clone keeps a transposed input's strides, which the window's strides address (torch's)."""
    x = np.zeros((3, 4), np.float32)
    want = torch.as_strided_scatter(torch.tensor(x).t(), torch.ones(4), (4,), (1,), 1)
    got = tl.as_strided_scatter(tl.tensor(x, device=device).t(), tl.ones(4, device=device), (4,), (1,), 1)
    assert tuple(got.stride()) == tuple(want.stride())
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


@pytest.mark.parametrize("name,shape,sshape,kw", [c for c in CASES if c[0] != "as_strided_scatter"])
def test_gradients_match_torch(device, torch, name, shape, sshape, kw):
    x, s = _arr(shape, 2), _arr(sshape, 3)
    tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)
    lx = tl.tensor(x, device=device, requires_grad=True)
    ls = tl.tensor(s, device=device, requires_grad=True)
    w = _arr(shape, 4)
    want = torch.autograd.grad((getattr(torch, name)(tx, ts, **kw) * torch.tensor(w)).sum(), (tx, ts))
    got = tl.autograd.grad((getattr(tl, name)(lx, ls, **kw) * tl.tensor(w, device=device)).sum(), (lx, ls))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,shape,sshape,kw", CASES)
def test_gradcheck(device, name, shape, sshape, kw):
    x = tl.tensor(_arr(shape, 5), device=device, requires_grad=True)
    s = tl.tensor(_arr(sshape, 6), device=device, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: getattr(tl, name)(a, b, **kw), (x, s))


def test_as_strided_scatter_gradient(device, torch):
    """input's gradient: the output's with the window zeroed; src's: the output's window. (torch
    returns the window's gradient for input too: its gradcheck fails.)"""
    x = tl.tensor(_arr((3, 3), 7), device=device, requires_grad=True)
    s = tl.tensor(_arr((2, 2), 8), device=device, requires_grad=True)
    gx, gs = tl.autograd.grad(tl.as_strided_scatter(x, s, (2, 2), (1, 2), 0).sum(), (x, s))
    np.testing.assert_array_equal(gx.cpu().numpy(), [[0, 0, 0], [0, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(gs.cpu().numpy(), np.ones((2, 2)))
    with pytest.raises(RuntimeError, match="contiguous"):
        tl.as_strided_scatter(x.t(), s, (2, 2), (1, 2), 0)


def test_errors(device, torch):
    x, tx = tl.zeros(3, 4, device=device), torch.zeros(3, 4)
    cases = [
        (lambda m, t: m.slice_scatter(x_(m, t, 3, 3), 1, 0, 2), RuntimeError, "src size = \\[3, 3\\], slice size"),
        (lambda m, t: m.select_scatter(x_(m, t, 3), 1, 5), IndexError, None),
        (lambda m, t: m.select_scatter(x_(m, t, 4), 1, 0), RuntimeError, "slice size = \\[3\\]"),
        (lambda m, t: m.diagonal_scatter(x_(m, t, 4), 0), RuntimeError, "slice size = \\[3\\]"),
        (lambda m, t: m.as_strided_scatter(x_(m, t, 4), (4,), (5,)), RuntimeError, None),
        (lambda m, t: m.slice_scatter(x_(m, t, 3, 2), 1, 0, 4, 0), RuntimeError, "step must be positive"),
        (lambda m, t: m.slice_scatter(x_(m, t, 3, 2), 2), IndexError, "Dimension out of range"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc):
            fn(tx, torch)
        with pytest.raises(exc, match=msg):
            fn(x, tl)
    np.testing.assert_array_equal(x.cpu().numpy(), np.zeros((3, 4)))


def x_(m, lib, *shape):
    """ones of `shape` from the library `m` belongs to (on its device)."""
    return lib.ones(*shape, device=m.device) if lib is tl else lib.ones(*shape)
