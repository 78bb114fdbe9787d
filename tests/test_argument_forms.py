"""Argument and index forms real PyTorch programs use, against torch: Tensor.split(split_size=...),
a Python range as an index (x[range(n), y] = v), to(device, dtype, non_blocking, copy) positionally,
flip(dims=...), broadcast_shapes with an int, arange with bool bounds, and float32 log_softmax never
above 0 (a positive log-probability made NLL negative)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


def test_split_keyword_forms(device, torch):
    t, tt = tl.arange(10.0, device=device), torch.arange(10.0)
    for kw in ({"split_size": 3}, {"split_size": [2, 8]}, {"split_size": 4, "dim": 0}):
        assert [tuple(a.shape) for a in t.split(**kw)] == [tuple(a.shape) for a in tt.split(**kw)]
    assert [a.tolist() for a in tl.split(t, split_size_or_sections=4)] == [
        a.tolist() for a in torch.split(tt, split_size_or_sections=4)]
    with pytest.raises(TypeError):
        t.split(3, split_size_or_sections=3)


def test_range_as_an_index(device, torch):
    x, tx = tl.zeros(4, 3, device=device), torch.zeros(4, 3)
    y = [0, 1, 2, 0]
    x[range(4), tl.tensor(y, device=device)] = 1.0
    tx[range(4), torch.tensor(y)] = 1.0
    assert x.tolist() == tx.tolist()
    for r in (range(1, 3), range(0), range(3, 0, -1)):
        assert x[r].tolist() == tx[r].tolist()


def test_positional_to_flags_flip_dims_broadcast_ints_bool_arange(device, torch):
    x = tl.ones(2, 3, device=device)
    y = x.to(device, tl.float64, False, True)
    assert y.dtype is tl.float64 and y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    z = x.to(tl.float32, False, True)  # copy=True: a new tensor even with nothing to convert
    assert z.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    a = tl.arange(6.0, device=device).reshape(2, 3)
    assert a.flip(dims=(0,)).tolist() == torch.arange(6.0).reshape(2, 3).flip(dims=(0,)).tolist()
    assert tuple(tl.broadcast_shapes((5, 1), 5)) == tuple(torch.broadcast_shapes((5, 1), 5))
    assert tl.arange(False, True, True, dtype=tl.float32, device=device).tolist() == torch.arange(
        False, True, True, dtype=torch.float32).tolist()
    with pytest.raises(TypeError):
        tl.eye(True)


def test_log_softmax_is_never_positive(device, torch):
    rows = [[30.0, 0.0, -1e9], [88.0, -1.0, 0.5], [20.0, 20.0, -3.0]]
    rng = np.random.default_rng(0)
    rows += (rng.standard_normal((64, 3)) * 20).tolist()
    x = tl.tensor(rows, dtype=tl.float32, device=device)
    got = tl.log_softmax(x, 1)
    assert float(got.max()) <= 0.0
    want = torch.log_softmax(torch.tensor(rows, dtype=torch.float32), 1)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert got[0, 0].item() == 0.0


def test_two_python_numbers_and_integer_hardtanh(device, torch):
    for name in ("add", "sub", "mul", "div", "true_divide", "floor_divide"):
        for a, b in ((2, 3), (2.5, 3), (7, 2.0), (True, False)):
            try:
                want = getattr(torch, name)(a, b)
            except Exception as e:  # noqa: BLE001 (torch's refusals: bool sub, bool floor_divide)
                with pytest.raises(type(e)):
                    getattr(tl, name)(a, b)
                continue
            got = getattr(tl, name)(a, b)
            assert got.dim() == 0 and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            assert got.item() == pytest.approx(want.item())
    with pytest.raises(TypeError):
        tl.remainder(7, 2)
    F, TF = tl.nn.functional, torch.nn.functional
    for dt in ("int8", "int32", "int64", "uint8"):
        x, tx = tl.tensor([-5, 0, 3, 100], device=device).to(getattr(tl, dt)), torch.tensor([-5, 0, 3, 100]).to(
            getattr(torch, dt))
        assert F.relu6(x).tolist() == TF.relu6(tx).tolist() and F.relu6(x).dtype == x.dtype
        if dt != "uint8":
            assert F.hardtanh(x, -2.7, 2.7).tolist() == TF.hardtanh(tx, -2.7, 2.7).tolist()
    with pytest.raises(RuntimeError, match="unsigned"):
        F.hardtanh(tl.tensor([1], dtype=tl.uint8, device=device), -1.0, 1.0)
    with pytest.raises(RuntimeError, match="Bool"):
        F.hardtanh(tl.tensor([True], device=device))
    assert tl.zeros(2, layout=tl.strided, device=device).layout is tl.strided
    with pytest.raises(RuntimeError, match="strided"):
        tl.ones(2, layout=tl.sparse_coo, device=device)
