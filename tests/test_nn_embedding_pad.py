"""Embedding (padding_idx gradient, max_norm renormalization in place, from_pretrained, scale_grad_by_freq),
F.embedding, F.one_hot, F.pad in its four modes, F.cosine_similarity and F.pairwise_distance against torch."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F
from layers_oracle import close, copy_weights, np_of, pair, randn

IDX = np.array([[1, 4, 0, 4], [2, 2, 9, 0]], dtype=np.int64)


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 0}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}], ids=str)
def test_embedding_matches_torch(device, torch, kw):
    tm = torch.nn.Embedding(10, 3, **kw)
    m = copy_weights(tm, nn.Embedding(10, 3, **kw), device)
    assert repr(m) == repr(tm)
    idx = IDX.copy()
    if kw.get("padding_idx") == -1:
        idx[0, 0] = 9
    i, ti = pair(torch, device, idx)
    y, ty = m(i), tm(ti)
    close(y, ty)
    close(m.weight, tm.weight)  # max_norm renormalized the referenced rows in place, as torch
    g = randn(2, 4, 3, seed=1)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(m.weight.grad, tm.weight.grad)


def test_embedding_init_padding_row_and_from_pretrained(device, torch):
    m = nn.Embedding(6, 4, padding_idx=2, device=device)
    w = np_of(m.weight)
    assert not w[2].any() and w[[0, 1, 3]].std() > 0.3  # N(0, 1) elsewhere
    pre = tl.tensor(randn(5, 3), device=device)
    frozen = nn.Embedding.from_pretrained(pre)
    assert not frozen.weight.requires_grad and frozen.weight.data_ptr() == pre.data_ptr()
    trainable = nn.Embedding.from_pretrained(pre, freeze=False, padding_idx=1)
    assert trainable.weight.requires_grad and trainable.padding_idx == 1
    close(frozen(tl.tensor([4, 0], device=device)), torch.tensor(randn(5, 3))[[4, 0]])
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tl.zeros(3, device=device))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(4, 2, padding_idx=4)


def test_embedding_errors_and_shapes(device):
    w = tl.zeros(5, 2, device=device)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(tl.zeros(3, device=device), w)
    if device == "cpu":
        with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
            F.embedding(tl.tensor([7], device=device), w)
    assert tuple(F.embedding(tl.tensor(3, device=device), w).shape) == (2,)
    assert tuple(F.embedding(tl.zeros(0, 4, dtype=tl.int64, device=device), w).shape) == (0, 4, 2)
    assert tuple(F.embedding(tl.tensor([[1, 2]], dtype=tl.int32, device=device), w).shape) == (1, 2, 2)


def test_one_hot(device, torch):
    arr = np.array([[0, 3], [1, 1]], dtype=np.int64)
    x, tx = pair(torch, device, arr)
    for n in (-1, 5):
        y, ty = F.one_hot(x, n), torch.nn.functional.one_hot(tx, n)
        assert y.dtype is tl.int64
        np.testing.assert_array_equal(np_of(y), ty.numpy())
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(x, 3)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(x.int())


PADS = [((1, 2), "constant", 0.5, (2, 3, 4)), ((2, 1, 0, 3), "constant", None, (2, 3, 4)), ((-1, 2), "constant", None,
        (3, 4)), ((1, 1, 1, 1, 1, 1), "constant", 2.0, (2, 2, 2)),
        ((2, 3), "reflect", None, (2, 3, 5)), ((1, 2, 2, 0), "reflect", None, (1, 2, 3, 4)), ((3, 1), "reflect", None,
        (3, 4)),
        ((2, 3), "replicate", None, (2, 3, 4)), ((1, 0, 2, 3), "replicate", None, (2, 3, 4)),
        ((1, 1, 1, 2, 0, 1), "replicate", None, (1, 1, 2, 3, 2)),
        ((2, 3), "circular", None, (2, 3, 4)), ((1, 2, 3, 0), "circular", None, (1, 2, 3, 4)), ((-1, 2), "circular",
        None, (1, 2, 3))]


@pytest.mark.parametrize("p,mode,value,shape", PADS, ids=str)
def test_pad_matches_torch(device, torch, p, mode, value, shape):
    arr = randn(*shape)
    x, tx = pair(torch, device, arr, requires_grad=True)
    kw = {} if value is None else {"value": value}
    y, ty = F.pad(x, p, mode=mode, **kw), torch.nn.functional.pad(tx, p, mode=mode, **kw)
    close(y, ty)
    g = randn(*ty.shape, seed=4)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad)


def test_pad_errors(device):
    x = tl.zeros(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 8 and input of dimension 3"):
        F.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match=re.escape("Argument #4: Padding size should be less than the corresponding "
                                                     "input dimension, but got: padding (5, 5) at dimension 2 of "
                                                     "input [2, 3, 4]")):
        F.pad(x, (5, 5), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input tensor."):
        F.pad(tl.zeros(3, 4, device=device), (1, 1, 1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")


def test_pad_integer_and_bool_constant(device, torch):
    arr = np.arange(6, dtype=np.int64).reshape(2, 3)
    y = F.pad(tl.tensor(arr, device=device), (1, 0), value=7)
    assert y.dtype is tl.int64
    np.testing.assert_array_equal(np_of(y), torch.nn.functional.pad(torch.tensor(arr), (1, 0), value=7).numpy())


def test_distances_match_torch(device, torch):
    a, b = randn(4, 5), randn(4, 5, seed=1)
    b[2] = 0  # a zero vector: the norm is clamped at eps
    for fn, kw in (("cosine_similarity", {}), ("cosine_similarity", {"dim": 0}), ("pairwise_distance", {}),
                   ("pairwise_distance", {"p": 1.0, "keepdim": True})):
        x, tx = pair(torch, device, a, requires_grad=True)
        y, ty = pair(torch, device, b, requires_grad=True)
        out, tout = getattr(F, fn)(x, y, **kw), getattr(torch.nn.functional, fn)(tx, ty, **kw)
        close(out, tout)
        out.sum().backward()
        tout.sum().backward()
        close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
        close(y.grad, ty.grad, rtol=1e-4, atol=1e-5)
    # broadcasting
    out = F.cosine_similarity(tl.tensor(a[:1], device=device), tl.tensor(b, device=device))
    close(out, torch.nn.functional.cosine_similarity(torch.tensor(a[:1]), torch.tensor(b)))


def test_gradcheck_pad_and_embedding(device):
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.standard_normal((1, 2, 4)), device=device, requires_grad=True)
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert tl.autograd.gradcheck(lambda t: F.pad(t, (2, 1), mode=mode), (x,))
    w = tl.tensor(rng.standard_normal((5, 3)), device=device, requires_grad=True)
    idx = tl.tensor([[0, 2, 2], [4, 1, 0]], device=device)
    assert tl.autograd.gradcheck(lambda t: F.embedding(idx, t), (w,))  # padding_idx: zero grad by design


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision(device, torch, dtype):
    tm = torch.nn.Embedding(10, 3, padding_idx=0).to(getattr(torch, dtype))
    m = copy_weights(tm.float(), nn.Embedding(10, 3, padding_idx=0), device).to(dtype=getattr(tl, dtype))
    tm = tm.to(getattr(torch, dtype))
    i, ti = pair(torch, device, IDX)
    y, ty = m(i), tm(ti)
    assert y.dtype is getattr(tl, dtype)
    close(y, ty)
    y.float().sum().backward()
    ty.float().sum().backward()
    close(m.weight.grad, tm.weight.grad)
    arr = randn(1, 2, 5)
    x = tl.tensor(arr, device=device).to(getattr(tl, dtype))
    for mode in ("constant", "reflect", "replicate", "circular"):
        close(F.pad(x, (2, 1), mode=mode), torch.nn.functional.pad(torch.tensor(arr).to(getattr(torch, dtype)), (2, 1),
                                                                   mode=mode))
