"""NumPy's __array__ / __array_interface__, CUDA's __cuda_array_interface__ (v3), Tensor.numpy, and
tl.as_tensor / tl.asarray over objects that expose them: zero-copy proven by writes seen on both sides."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tensorlab as tl


def _host(t):
    return t.cpu().numpy()


class _CAI:
    """An object exposing only a __cuda_array_interface__ (as Numba or CuPy arrays do)."""

    def __init__(self, iface, keep=None):
        self._iface = iface
        self._keep = keep

    @property
    def __cuda_array_interface__(self):
        return self._iface


class _AI:
    """An object exposing only a NumPy __array_interface__."""

    def __init__(self, arr):
        self._arr = arr

    @property
    def __array_interface__(self):
        return self._arr.__array_interface__


# -- __array__ ------------------------------------------------------------------------------------
def test_asarray_shares_cpu_memory():
    t = tl.arange(6.).reshape(2, 3)
    a = np.asarray(t)
    a[0, 1] = 42
    assert t[0, 1].item() == 42
    t[1, 2] = -1
    assert a[1, 2] == -1


def test_array_copy_keyword_numpy2():
    t = tl.arange(4, dtype=tl.int32)
    c = np.array(t, copy=True)
    c[0] = 9
    assert t[0].item() == 0
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(t, dtype=np.float64, copy=False)
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), [0., 1., 2., 3.])
    same = t.__array__(copy=False)
    same[1] = 7
    assert t[1].item() == 7


def test_array_on_cuda_copies_or_refuses(device):
    t = tl.arange(3., device=device)
    np.testing.assert_array_equal(np.asarray(t), [0., 1., 2.])
    if device != "cpu":
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            np.array(t, copy=False)
        assert not hasattr(t, "__array_interface__")


def test_numpy_checks_in_torchs_order(device):
    t = tl.ones(2, device=device, requires_grad=True)
    if device == "cpu":
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
            t.numpy()
        with pytest.raises(RuntimeError, match="requires grad"):
            np.asarray(t)
        with tl.no_grad():
            assert t.numpy().shape == (2,)  # torch refuses only while grad mode is on
    else:
        with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
            t.numpy()
    np.testing.assert_array_equal(t.numpy(force=True), [1., 1.])


def test_numpy_messages_match_torch(torch):
    with pytest.raises(RuntimeError) as ours:
        tl.ones(2, requires_grad=True).numpy()
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2, requires_grad=True).numpy()
    assert str(ours.value) == str(theirs.value)


# -- __array_interface__ --------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [tl.float32, tl.float64, tl.float16, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8,
                                tl.bool], ids=str)
def test_array_interface_describes_the_tensor(dt):
    t = tl.arange(24).to(dt).reshape(4, 6)[1:, ::2]
    ai = t.__array_interface__
    assert ai["version"] == 3 and ai["shape"] == (3, 3) and ai["typestr"] == dt.np.str
    assert ai["data"] == (t.data_ptr(), False)
    assert ai["strides"] == (6 * dt.itemsize, 2 * dt.itemsize)
    a = np.asarray(_AI(t))
    np.testing.assert_array_equal(a, _host(t))
    assert a.ctypes.data == t.data_ptr()


def test_array_interface_absent_where_numpy_must_use_array():
    assert not hasattr(tl.ones(2, dtype=tl.bfloat16), "__array_interface__")
    assert np.asarray(tl.ones(2, dtype=tl.bfloat16)).dtype.name == "bfloat16"
    assert not hasattr(tl.ones(2, requires_grad=True), "__array_interface__")


def test_array_interface_memory_outlives_set_():
    t = tl.arange(1000.)
    a = np.asarray(t)
    buf = weakref.ref(t.untyped_storage()._buf)
    t.set_(tl.zeros(3).untyped_storage())
    gc.collect()
    assert buf() is not None  # the array still reads the old bytes
    np.testing.assert_array_equal(a[:3], [0., 1., 2.])


def test_as_tensor_from_an_array_interface_object():
    arr = np.arange(5, dtype=np.int16)
    t = tl.as_tensor(_AI(arr))
    assert t.dtype is tl.int16
    t[0] = 11
    assert arr[0] == 11
    v = t._version
    t.add_(1)
    assert t._version == v + 1 and arr[1] == 2


# -- __cuda_array_interface__ ----------------------------------------------------------------------
def test_cuda_array_interface_v3(cuda):
    t = tl.arange(12., device=cuda).reshape(3, 4)
    ci = t.__cuda_array_interface__
    assert ci["version"] == 3 and ci["shape"] == (3, 4) and ci["typestr"] == "<f4" and ci["strides"] is None
    assert ci["data"] == (t.data_ptr(), False)
    assert ci["stream"] == 1  # the legacy default stream (0 is not allowed)
    s = tl.cuda.Stream()
    with tl.cuda.stream(s):
        assert t.__cuda_array_interface__["stream"] == s.cuda_stream
    col = t[:, 1]
    assert col.__cuda_array_interface__["strides"] == (16,)
    assert col.__cuda_array_interface__["data"][0] == t.data_ptr() + 4
    assert tl.zeros(0, device=cuda).__cuda_array_interface__["data"] == (0, False)


def test_cuda_array_interface_refusals(device):
    t = tl.ones(2, device=device)
    if device == "cpu":
        assert not hasattr(t, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match="non-CUDA tensor"):
            t.__cuda_array_interface__
        return
    with pytest.raises(RuntimeError, match="requires grad"):
        tl.ones(2, device=device, requires_grad=True).__cuda_array_interface__
    assert not hasattr(tl.ones(2, device=device, dtype=tl.bfloat16), "__cuda_array_interface__")


def test_as_tensor_shares_cuda_array_interface_memory(cuda, monkeypatch):
    from tensorlab.backends.cuda.active import driver
    t = tl.arange(8, dtype=tl.int32, device=cuda)
    calls = []
    rec, wait = driver.event_record, driver.stream_wait_event
    monkeypatch.setattr(driver, "event_record", lambda ev, s: (calls.append(("record", s.ptr)), rec(ev, s))[1])
    monkeypatch.setattr(driver, "stream_wait_event", lambda s, ev: (calls.append(("wait", s.ptr)), wait(s, ev))[1])
    producer = tl.cuda.Stream()
    with tl.cuda.stream(producer):
        iface = t[2:].__cuda_array_interface__
    obj = _CAI(iface, keep=t)
    alive = weakref.ref(obj)
    with tl.cuda.sync_trace() as trace:
        u = tl.as_tensor(obj)
    assert list(trace) == []
    # the consumer's (default) stream waits for the producer's stream named in the interface
    assert calls == [("record", producer.cuda_stream), ("wait", 0)]
    assert u.device == t.device and u.dtype is tl.int32 and u.data_ptr() == t.data_ptr() + 8
    u[0] = 100
    assert t[2].item() == 100
    t[3] = -5
    assert u[1].item() == -5
    del obj
    gc.collect()
    assert alive() is not None  # the tensor keeps its producer alive
    del u
    gc.collect()
    assert alive() is None


def test_cuda_array_interface_read_only_and_strided(cuda):
    t = tl.arange(12., device=cuda).reshape(3, 4)
    iface = dict(t.t().__cuda_array_interface__)
    iface["data"] = (iface["data"][0], True)
    u = tl.as_tensor(_CAI(iface, keep=t))
    assert u.shape == (4, 3) and u.stride() == (1, 4)
    np.testing.assert_array_equal(_host(u), _host(t.t()))
    with pytest.raises(RuntimeError, match="cannot be written"):
        u.fill_(0)
    bad = dict(iface, stream=0)
    with pytest.raises(ValueError, match="stream 0 is not allowed"):
        tl.as_tensor(_CAI(bad, keep=t))


# -- as_tensor / asarray -----------------------------------------------------------------------------
def test_as_tensor_from_torch_shares(torch):
    x = torch.arange(6.).reshape(2, 3)[:, 1:]
    t = tl.as_tensor(x)
    assert t.data_ptr() == x.data_ptr() and t.stride() == x.stride()
    t[0, 0] = 50
    assert x[0, 0].item() == 50
    d = tl.as_tensor(x, dtype=tl.float64)  # another dtype: a copy
    d[0, 0] = -1
    assert x[0, 0].item() == 50


def test_asarray_copy_rules(device):
    t = tl.arange(4., device=device)
    assert tl.asarray(t) is t
    c = tl.asarray(t, copy=True)
    c[0] = 9
    assert t[0].item() == 0
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype 'Double'"):
        tl.asarray(t, dtype=tl.float64, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor"):
        tl.asarray([1, 2], copy=False)
    assert tl.asarray([1, 2], device=device).tolist() == [1, 2]
    assert tl.asarray(t, dtype=tl.float64).dtype is tl.float64


def test_asarray_messages_match_torch(torch):
    for ours_args, theirs_args in [((tl.arange(4.),), (torch.arange(4.),))]:
        with pytest.raises(ValueError) as ours:
            tl.asarray(*ours_args, dtype=tl.float64, copy=False)
        with pytest.raises(ValueError) as theirs:
            torch.asarray(*theirs_args, dtype=torch.float64, copy=False)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError) as ours:
        tl.asarray([1.0], copy=False)
    with pytest.raises(ValueError) as theirs:
        torch.asarray([1.0], copy=False)
    assert str(ours.value) == str(theirs.value)


def test_asarray_shares_numpy_and_buffers():
    a = np.arange(4, dtype=np.int64)
    t = tl.asarray(a)
    t[0] = 5
    assert a[0] == 5
    raw = bytearray(np.arange(3, dtype=np.float32).tobytes())
    b = tl.asarray(raw)
    assert b.dtype is tl.float32 and b.tolist() == [0., 1., 2.]
    b[2] = 8
    assert np.frombuffer(raw, dtype=np.float32)[2] == 8
    neg = np.arange(4.)[::-1]
    with pytest.raises(ValueError):
        tl.asarray(neg, copy=False)
    assert tl.asarray(neg).tolist() == [3., 2., 1., 0.]


def test_cupy_asarray_on_a_real_gpu():
    cupy = pytest.importorskip("cupy")
    if not tl.cuda.is_available():
        pytest.skip("needs a real GPU")
    t = tl.arange(6., device="cuda")
    x = cupy.asarray(t)
    x[0] = 7
    assert t[0].item() == 7
    y = cupy.arange(4, dtype=cupy.int32)
    u = tl.as_tensor(y)
    u[1] = 9
    assert int(y[1]) == 9


@pytest.mark.parametrize("dt", [tl.float32, tl.float64, tl.float16, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8,
                                tl.bool], ids=str)
def test_cuda_array_interface_every_dtype(cuda, dt):
    t = (tl.arange(12, device=cuda) % 5).to(dt).reshape(3, 4)[:, 1:]
    ci = t.__cuda_array_interface__
    assert ci["typestr"] == dt.np.str and ci["strides"] == (4 * dt.itemsize, dt.itemsize)
    u = tl.as_tensor(_CAI(ci, keep=t))
    assert u.dtype is dt and u.data_ptr() == t.data_ptr() and u.stride() == t.stride()
    np.testing.assert_array_equal(_host(u), _host(t))
    u.zero_()
    assert not _host(t).any()
