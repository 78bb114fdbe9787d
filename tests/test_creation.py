import numpy as np
import pytest

import tensorlab as tl


def test_tensor_copies_and_infers(device):
    data = [[1, 2, 3], [4, 5, 6]]
    t = tl.tensor(data, device=device)
    assert t.shape == (2, 3) and t.dtype is tl.int64 and t.tolist() == data
    assert tl.tensor(3.5, device=device).dim() == 0
    assert tl.tensor([], device=device).shape == (0,) and tl.tensor([], device=device).dtype is tl.float32
    assert tl.tensor([1, 2], dtype=tl.float16, device=device).dtype is tl.float16
    a = np.arange(3, dtype=np.int32)
    t = tl.tensor(a, device=device)
    a[0] = 7
    assert t.dtype is tl.int32 and t.tolist() == [0, 1, 2]


def test_tensor_errors():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.uint16"):
        tl.tensor(np.zeros(2, dtype=np.uint16))
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 3\\)"):
        tl.tensor([[1, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):  # torch 2.13: ValueError
        tl.tensor([2 ** 70])


def test_tensor_matches_torch_inference(torch):
    for data in ([1, 2], [1.0, 2], [True, False], [True, 2], [[1.5]], 3, 2.5, True):
        assert tl.tensor(data).dtype.name == str(torch.tensor(data).dtype).split(".")[1], data


def test_from_numpy_layouts_and_errors():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = tl.from_numpy(a.T)
    assert t.shape == (4, 3) and t.stride() == (1, 4) and t.tolist() == a.T.tolist()
    assert tl.from_numpy(np.array(3.0)).dim() == 0
    with pytest.raises(ValueError, match="negative"):
        tl.from_numpy(a[::-1])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tl.from_numpy([1, 2])
    with pytest.raises(TypeError, match="can't convert"):
        tl.from_numpy(np.zeros(2, dtype=np.uint32))
    assert tl.from_numpy(np.zeros(2, dtype=np.complex64)).dtype is tl.complex64
    e = tl.from_numpy(np.zeros((0, 3), dtype=np.float32))
    assert e.shape == (0, 3) and e.numel() == 0


def test_as_tensor_shares_when_possible(device):
    a = np.arange(4, dtype=np.float32)
    t = tl.as_tensor(a)
    a[1] = 42
    assert t[1].item() == 42
    t2 = tl.as_tensor(a, dtype=tl.float64)
    a[2] = 43
    assert t2.tolist()[2] == 2.0
    x = tl.ones(3, device=device)
    assert tl.as_tensor(x) is x


@pytest.mark.parametrize("fn,value", [(tl.zeros, 0), (tl.ones, 1)])
def test_zeros_ones(device, fn, value):
    t = fn(2, 3, device=device)
    assert t.shape == (2, 3) and t.dtype is tl.float32 and t.tolist() == [[value] * 3] * 2
    assert fn((2, 3), dtype=tl.int8, device=device).dtype is tl.int8
    assert fn([], device=device).dim() == 0


def test_full_infers_dtype_like_torch(device):
    assert tl.full((2,), 3, device=device).dtype is tl.int64
    assert tl.full((2,), 3.0, device=device).dtype is tl.float32
    assert tl.full((2,), True, device=device).dtype is tl.bool
    assert tl.full((2, 2), 7, dtype=tl.float16, device=device).tolist() == [[7.0, 7.0]] * 2


def test_empty_negative_dimension():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        tl.empty(2, -1)


def test_like_functions_preserve_layout(device):
    x = tl.empty(2, 3, 4, 5, device=device).permute(0, 2, 3, 1) if hasattr(tl.Tensor, "permute") else None
    base = tl.zeros(3, 4, dtype=tl.int16, device=device)
    for f in (tl.zeros_like, tl.ones_like, tl.empty_like):
        y = f(base)
        assert y.shape == base.shape and y.dtype is tl.int16 and y.device == base.device
    assert tl.full_like(base, 5).tolist() == [[5] * 4] * 3
    assert tl.zeros_like(base, dtype=tl.float64).dtype is tl.float64
    if x is not None:
        assert tl.empty_like(x).stride() == x.stride()


@pytest.mark.parametrize("args,kwargs", [((10,), {}), ((2, 11, 3), {}), ((0, 1, 0.1), {}), ((5, -3, -2), {}),
                                         ((1.5, 4.0), {}), ((0, 10, 3), {"dtype": tl.float64}),
                                         ((-1.0, 1.0, 0.25), {"dtype": tl.float16})])
def test_arange_matches_numpy(device, args, kwargs):
    t = tl.arange(*args, device=device, **kwargs)
    ref = np.arange(*args)
    assert t.shape == ref.shape
    np.testing.assert_allclose(np.asarray(t.cpu(), dtype=np.float64), ref, rtol=1e-3, atol=1e-6)


def test_arange_dtypes_and_errors_match_torch(torch):
    for args in ((10,), (0, 1, 0.1), (2, 11, 3), (5, -3, -2), (0.0, 3)):
        a, b = tl.arange(*args), torch.arange(*args)
        assert a.tolist() == pytest.approx(b.tolist()) and a.dtype.name == str(b.dtype)[6:]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tl.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
        tl.arange(0, 5, -1)


def test_linspace_matches_torch(torch):
    for args in ((0, 1, 5), (-3.5, 7.25, 11), (2, 2, 1), (0, 1, 0), (10, -10, 6)):
        assert tl.linspace(*args).tolist() == pytest.approx(torch.linspace(*args).tolist(), rel=1e-6, abs=1e-6)
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.linspace(0, 1, -1)


def test_linspace_eye(device):
    np.testing.assert_allclose(np.asarray(tl.linspace(0, 1, 5, device=device).cpu()), np.linspace(0, 1, 5))
    assert tl.eye(3, device=device).tolist() == np.eye(3).tolist()
    assert tl.eye(2, 4, dtype=tl.int32, device=device).tolist() == np.eye(2, 4, dtype=np.int32).tolist()


def test_requires_grad_keyword():
    assert tl.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tl.zeros(2, dtype=tl.int64, requires_grad=True)


def test_empty_strided(device):
    t = tl.empty_strided((2, 3), (1, 2), device=device)
    assert t.stride() == (1, 2) and t.untyped_storage().nbytes() == 6 * 4
