import numpy as np
import pytest

import tensorlab as tl


def test_copy_broadcasts_casts_and_bumps_version(device):
    x = tl.zeros(2, 3, device=device)
    v = x._version
    x.copy_(tl.tensor([1, 2, 3], device=device))
    assert x.tolist() == [[1, 2, 3]] * 2 and x.dtype is tl.float32 and x._version == v + 1
    with pytest.raises(RuntimeError, match="must match"):
        x.copy_(tl.zeros(4, device=device))
    assert x._version == v + 1


def test_copy_float_to_bool_and_int(device):
    x = tl.tensor([0.0, 2.5, -1.7], device=device)
    assert tl.zeros(3, dtype=tl.bool, device=device).copy_(x).tolist() == [False, True, True]
    assert tl.zeros(3, dtype=tl.int32, device=device).copy_(x).tolist() == [0, 2, -1]


def test_to_returns_self_when_nothing_changes(device):
    x = tl.ones(3, device=device)
    assert x.to(device) is x and x.to(tl.float32) is x
    assert x.to(tl.float32, copy=True) is not x
    y = x.to(tl.float16)
    assert y.dtype is tl.float16 and y.tolist() == [1.0] * 3
    assert x.to(tl.zeros(1, dtype=tl.int8)).dtype is tl.int8
    assert x.to(dtype=tl.float64).dtype is tl.float64
    assert x.double().dtype is tl.float64 and x.long().dtype is tl.int64 and x.bool().dtype is tl.bool
    assert x.half().dtype is tl.float16 and x.bfloat16().dtype is tl.bfloat16 and x.int().dtype is tl.int32
    assert x.type() == "tensorlab.FloatTensor" and x.type(tl.int16).dtype is tl.int16


def test_clone_is_independent_and_keeps_dense_strides(device):
    x = tl.arange(6, device=device).reshape(2, 3).t() if hasattr(tl.Tensor, "reshape") else None
    if x is None:
        pytest.skip("views not available")
    y = x.clone()
    assert y.stride() == x.stride() and y.tolist() == x.tolist()
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    z = x.contiguous()
    assert z.is_contiguous() and z.tolist() == x.tolist()
    assert x.clone(memory_format=tl.contiguous_format).stride() == (2, 1)


def test_clone_of_non_dense_tensor_uses_dense_strides_in_same_order(device, torch):
    x = tl.arange(24, device=device).reshape(2, 3, 4).permute(2, 0, 1)[::2]
    tx = torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1)[::2]
    assert x.clone().stride() == tx.clone().stride()
    assert x.clone().tolist() == tx.clone().tolist()


def test_channels_last_conversion(device):
    x = tl.arange(2 * 3 * 4 * 5, dtype=tl.float32, device=device).reshape(2, 3, 4, 5)
    y = x.to(memory_format=tl.channels_last)
    assert y.stride() == (60, 1, 15, 3) and y.is_contiguous(memory_format=tl.channels_last)
    assert not y.is_contiguous() and y.tolist() == x.tolist()
    assert y.clone().stride() == y.stride()
    assert y.contiguous().stride() == (60, 20, 5, 1)


def test_numpy_shares_memory_on_cpu():
    x = tl.zeros(3)
    a = x.numpy()
    a[0] = 5
    assert x[0].item() == 5
    assert np.asarray(x).dtype == np.float32
    with pytest.raises(RuntimeError, match="detach"):
        tl.zeros(2, requires_grad=True).numpy()


def test_python_protocol(device):
    x = tl.tensor([[1, 2], [3, 4]], device=device)
    assert len(x) == 2 and [r.tolist() for r in x] == [[1, 2], [3, 4]]
    assert tl.tensor(3, device=device).item() == 3 and isinstance(tl.tensor(3.0, device=device).item(), float)
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    assert bool(tl.tensor([1], device=device)) and not bool(tl.tensor(0.0, device=device))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tl.tensor(1, device=device))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(tl.tensor(1, device=device))
    assert int(tl.tensor(7, device=device)) == 7 and float(tl.tensor(2.5, device=device)) == 2.5
    assert [0, 1, 2][tl.tensor(1, device=device)] == 1
    assert tl.tensor([1.5], dtype=tl.bfloat16, device=device).tolist() == [1.5]


def test_pickle_and_deepcopy_roundtrip(device):
    import copy
    import pickle
    x = tl.tensor([[1.5, 2.0]], dtype=tl.float16, device=device)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.dtype is tl.float16 and y.tolist() == x.tolist() and y.device == x.device


def test_upload_into_a_dense_non_row_major_layout(cuda):
    """A CPU tensor in channels_last (or any permuted dense) order keeps its values on the way to the
    GPU: the destination takes the same memory order (preserve_format), so its bytes are not the
    host array's row-major bytes."""
    x = tl.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5).contiguous(memory_format=tl.channels_last)
    for src in (x, tl.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)):
        y = src.to(cuda)
        assert y.stride() == src.stride()
        np.testing.assert_array_equal(y.cpu().numpy(), src.numpy())
