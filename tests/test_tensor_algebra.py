"""tensordot, kron, cross / linalg.cross, vander / linalg.vander, block_diag, cartesian_prod,
tril_indices / triu_indices, linalg.cond against torch on every device, with float64 gradchecks."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.autograd import gradcheck


def same(ours, ref):
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-9)


def both(fn, torch, device):
    """fn(module, device) on tensorlab and torch, compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(fn(tl, device), fn(torch, "cpu"))


def arr(m, a, d, dtype=None):
    a = np.asarray(a)
    return m.tensor(a, device=d) if dtype is None else m.tensor(a, device=d).to(getattr(m, dtype))


@pytest.mark.parametrize("case", [
    lambda m, d: m.tensordot(arr(m, np.arange(24.).reshape(2, 3, 4), d), arr(m, np.arange(60.).reshape(3, 4, 5), d)),
    lambda m, d: m.tensordot(arr(m, np.arange(24.).reshape(2, 3, 4), d), arr(m, np.arange(60.).reshape(4, 3, 5), d),
                             dims=([1, 2], [1, 0])),
    lambda m, d: m.tensordot(arr(m, [[1.0, 2.0]], d), arr(m, [3.0, 4.0], d), dims=0),
    lambda m, d: m.tensordot(arr(m, np.arange(6).reshape(2, 3), d), arr(m, np.arange(6).reshape(3, 2), d), dims=1),
    lambda m, d: m.kron(arr(m, np.arange(6.).reshape(2, 3), d), arr(m, [1.0, 10.0], d)),
    lambda m, d: m.kron(arr(m, [[1, 2]], d), arr(m, np.arange(8).reshape(2, 2, 2), d)),
    lambda m, d: arr(m, [[1.0, 2.0]], d).kron(arr(m, np.eye(2), d)),
    lambda m, d: m.linalg.cross(arr(m, np.arange(6.).reshape(2, 3), d), arr(m, [[1.0, 0.0, 2.0]], d)),
    lambda m, d: m.cross(arr(m, np.arange(9.).reshape(3, 3), d), arr(m, np.arange(9.)[::-1].reshape(3, 3).copy(), d)),
    lambda m, d: arr(m, np.arange(12).reshape(3, 4), d).cross(arr(m, np.ones((3, 4), np.int64), d), dim=0),
    lambda m, d: m.linalg.vander(arr(m, [1, 2, 3], d, "int32")),
    lambda m, d: m.linalg.vander(arr(m, [[1.0, 2.0, 3.0]], d), N=4),
    lambda m, d: m.vander(arr(m, [1, 2, 3], d), 4),
    lambda m, d: m.vander(arr(m, [1.0, 2.0, 3.0], d), increasing=True),
    lambda m, d: m.vander(arr(m, [1, 2, 3], d), 0),
    lambda m, d: m.block_diag(m.ones(2, 2, device=d), arr(m, 3.0, d), arr(m, [1, 2], d)),
    lambda m, d: m.block_diag(arr(m, [[1, 2, 3]], d), arr(m, np.ones((2, 1), np.int64), d)),
    lambda m, d: m.cartesian_prod(arr(m, [1, 2], d), arr(m, [3, 4, 5], d), arr(m, [6, 7], d)),
    lambda m, d: m.cartesian_prod(arr(m, [1, 2], d)),
    lambda m, d: m.tril_indices(3, 4, 1, device=d),
    lambda m, d: m.triu_indices(3, 3, -1, device=d),
    lambda m, d: m.tril_indices(4, 3, -1, dtype=m.int32, device=d),
    lambda m, d: m.triu_indices(0, 3, device=d),
])
def test_matches_torch(device, torch, case):
    both(case, torch, device)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, float("inf")])
def test_cond(torch, p):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    same(tl.linalg.cond(tl.tensor(a), p), torch.linalg.cond(torch.tensor(a), p))


@pytest.mark.parametrize("case", [
    lambda m, d: m.linalg.vander(m.ones(1, device=d)),
    lambda m, d: m.block_diag(m.ones(1, 1, 1, device=d)),
    lambda m, d: m.cartesian_prod(m.ones(2, 2, device=d)),
    lambda m, d: m.tensordot(m.ones(2, 3, device=d), m.ones(2, 3, device=d), dims=1),
    lambda m, d: m.tril_indices(-1, 2, device=d),
    lambda m, d: m.linalg.cross(m.ones(2, device=d), m.ones(2, device=d)),
    lambda m, d: m.cross(m.ones(2, 2, device=d), m.ones(2, 2, device=d)),
    lambda m, d: m.linalg.cross(m.ones(3, device=d), m.ones(3, dtype=m.float64, device=d)),
])
def test_errors_word_as_torch(device, torch, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as te:
            case(torch, "cpu")
        with pytest.raises(type(te.value)) as oe:
            case(tl, device)
    want = str(te.value).split(" (Triggered internally")[0]
    assert str(oe.value).startswith(want), (str(oe.value), want)


def test_cross_without_dim_warns(device):
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        tl.cross(tl.ones(3, 2, device=device), tl.ones(3, 2, device=device))


def test_gradients(device):
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return tl.tensor(rng.standard_normal(shape), device=device, requires_grad=True)
    assert gradcheck(lambda a, b: tl.tensordot(a, b, dims=([1, 0], [0, 1])), (leaf(3, 2, 2), leaf(2, 3, 2)))
    assert gradcheck(tl.kron, (leaf(2, 2), leaf(3)))
    assert gradcheck(lambda a, b: tl.linalg.cross(a, b), (leaf(2, 3), leaf(1, 3)))
    assert gradcheck(lambda x: tl.linalg.vander(x, N=4), (leaf(3),))
    assert gradcheck(lambda a, b: tl.block_diag(a, b), (leaf(2, 1), leaf(3)))
    assert gradcheck(lambda a, b: tl.cartesian_prod(a, b), (leaf(2), leaf(3)))


@pytest.mark.parametrize("scale", [0.1, 2.0, 20.0])
def test_matrix_exp(device, torch, scale):
    a = np.random.default_rng(1).standard_normal((2, 4, 4)) * scale
    want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    got = tl.linalg.matrix_exp(tl.tensor(a, device=device))
    assert got.dtype is tl.float64 and got.shape == (2, 4, 4)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    got32 = tl.tensor(a, dtype=tl.float32, device=device).matrix_exp()
    assert got32.dtype is tl.float32
    np.testing.assert_allclose(got32.cpu().numpy(), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    same(tl.matrix_exp(tl.zeros(0, 2, 2, device=device)), torch.matrix_exp(torch.zeros(0, 2, 2)))
    same(tl.matrix_exp(tl.zeros(3, 3, device=device)), torch.matrix_exp(torch.zeros(3, 3)))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        tl.linalg.matrix_exp(tl.ones(2, 2, dtype=tl.int64, device=device))
    with pytest.raises(RuntimeError, match="square matrices"):
        tl.linalg.matrix_exp(tl.ones(2, 3, device=device))


def test_matrix_exp_gradient(device):
    x = tl.tensor(np.random.default_rng(2).standard_normal((2, 3, 3)), device=device, requires_grad=True)
    assert gradcheck(tl.linalg.matrix_exp, (x,))
