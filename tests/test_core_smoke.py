import numpy as np
import pytest

import tensorlab as tl


def test_seed_example_storage_offset_and_stride(device):
    x = tl.arange(12, device=device).reshape(3, 4)
    y = x[1:, 1:3]
    assert y.storage_offset() == 5
    assert y.stride() == (4, 1)


def test_from_numpy_shares_memory_and_is_not_resizable():
    a = np.array([1, 2, 3], dtype=np.float32)
    x = tl.from_numpy(a)
    a[0] = 99
    assert x[0].item() == 99
    assert not x.untyped_storage().resizable()


def test_tensor_infers_dtypes_like_torch():
    assert tl.tensor([1, 2]).dtype is tl.int64
    assert tl.tensor([1.0, 2]).dtype is tl.float32
    assert tl.tensor([True, False]).dtype is tl.bool
    assert tl.tensor(np.zeros(2)).dtype is tl.float64
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        tl.tensor([[1, 2], [3]])
