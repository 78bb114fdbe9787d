import numpy as np
import pytest

import tensorlab as tl


def test_untyped_storage_basics(device):
    s = tl.UntypedStorage(16, device=device)
    assert s.nbytes() == 16 and len(s) == 16 and s.resizable() and s.device.type == device
    assert s.data_ptr() != 0
    s.resize_(32)
    assert s.nbytes() == 32
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.UntypedStorage(-1, device=device)


def test_storage_resize_keeps_bytes(device):
    t = tl.arange(4, dtype=tl.int32, device=device)
    s = t.untyped_storage()
    s.resize_(32)
    assert t.tolist() == [0, 1, 2, 3]
    s.resize_(8)
    assert s.nbytes() == 8


def test_foreign_storage_is_not_resizable():
    s = tl.from_numpy(np.zeros(3, dtype=np.float32)).untyped_storage()
    assert not s.resizable()
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        s.resize_(100)
    assert s.nbytes() == 12


def test_views_share_storage_and_version(device):
    x = tl.zeros(4, device=device)
    y = x[1:] if hasattr(tl.Tensor, "__getitem__") else None
    if y is None:
        pytest.skip("views not available")
    assert y.untyped_storage() is x.untyped_storage()
    y.copy_(tl.ones(3, device=device))
    assert x._version == y._version == 1 and x.tolist() == [0, 1, 1, 1]
    assert x.data_ptr() + 4 == y.data_ptr()


def test_reading_a_tensor_whose_storage_was_shrunk_raises_instead_of_crashing(device):
    x = tl.arange(100, dtype=tl.int64, device=device)
    x.untyped_storage().resize_(8)
    with pytest.raises(RuntimeError, match="storage was shrunk"):
        x.tolist()
