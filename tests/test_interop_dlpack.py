"""DLPack: tensorlab as producer and consumer (tensorlab, NumPy, torch), versioned and legacy
capsules, every dtype, strides/offsets/zero-size, read-only memory, lifetimes, CUDA streams."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tensorlab as tl
from tensorlab.interop import dlpack as D

DTYPES = [tl.float32, tl.float64, tl.float16, tl.bfloat16, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.bool]


def _values(dt, n=12):
    if dt is tl.bool:
        return tl.tensor([i % 3 == 0 for i in range(n)])
    if dt is tl.uint8:
        return tl.tensor([i * 17 % 256 for i in range(n)], dtype=dt)
    return tl.tensor([i * 1.5 - 7 if dt.is_floating_point else i * 3 - 17 for i in range(n)], dtype=dt)


def _host(t):
    return t.cpu().numpy()


def _write_one(t):
    """A value different from t's first element written through t (bool: negated)."""
    first = (0,) * t.dim()
    if t.dtype is tl.bool:
        t[first] = not bool(t[first])
    else:
        t[first] = 5 if t[first].item() != 5 else 6


def _capsule_name(cap):
    import ctypes
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, (ctypes.py_object,)
    return get(cap).decode()


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 3)])
def test_tensorlab_to_tensorlab_shares_memory(device, dt, max_version):
    t = _values(dt).to(device)
    cap = t.__dlpack__(max_version=max_version)
    assert _capsule_name(cap) == ("dltensor" if max_version is None else "dltensor_versioned")
    u = tl.from_dlpack(cap)
    assert _capsule_name(cap) == ("used_dltensor" if max_version is None else "used_dltensor_versioned")
    assert u.dtype is dt and u.device == t.device and u.shape == t.shape
    np.testing.assert_array_equal(_host(u), _host(t))
    assert u.data_ptr() == t.data_ptr()
    before = t._version
    _write_one(u)
    np.testing.assert_array_equal(_host(t), _host(u))
    assert u._version == 1 and t._version == before  # each tensor counts its own writes (as torch)
    assert not u.untyped_storage().resizable()


@pytest.mark.parametrize("make", ["transpose", "step", "offset", "expand", "zero_rows", "zero_cols", "scalar"])
def test_layouts_survive_the_exchange(device, make):
    base = tl.arange(24., device=device).reshape(4, 6)
    t = {"transpose": lambda: base.t(), "step": lambda: base[:, ::3], "offset": lambda: base[1:, 2:],
         "expand": lambda: base[0].expand(3, 6), "zero_rows": lambda: base[:0], "zero_cols": lambda: base[:, 6:],
         "scalar": lambda: base[2, 3]}[make]()
    u = tl.from_dlpack(t)
    assert u.shape == t.shape
    np.testing.assert_array_equal(_host(u), _host(t))
    if t.numel():
        assert u.data_ptr() == t.data_ptr()  # the start of the view, with storage_offset 0 (as torch)
        assert u.storage_offset() == 0
    if t.numel() > 1:
        assert u.stride() == t.stride()


@pytest.mark.parametrize("dt", [d for d in DTYPES if d is not tl.bfloat16], ids=str)
def test_numpy_round_trip_every_dtype(dt):
    t = _values(dt)
    a = np.from_dlpack(t)
    assert a.dtype == dt.np
    np.testing.assert_array_equal(a, t.numpy())
    a[1] = a[0]  # NumPy writes, tensorlab sees
    assert t[1].item() == t[0].item()
    b = np.arange(12).astype(dt.np)[::2]
    u = tl.from_dlpack(b)
    assert u.dtype is dt and u.stride() == (2,)
    _write_one(u)  # tensorlab writes, NumPy sees
    np.testing.assert_array_equal(b, u.numpy())


def test_numpy_refuses_bfloat16_as_it_refuses_torchs():
    with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
        np.from_dlpack(tl.ones(2, dtype=tl.bfloat16))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_torch_round_trip_every_dtype(torch, dt):
    t = _values(dt).reshape(3, 4)[:, 1:]
    x = torch.from_dlpack(t)
    assert str(x.dtype) == f"torch.{dt.name}"
    assert x.stride() == t.stride() and x.data_ptr() == t.data_ptr()
    want = _host(t)
    np.testing.assert_array_equal(x.float().numpy() if dt is tl.bfloat16 else x.numpy(), want.astype(np.float32)
                                  if dt is tl.bfloat16 else want)
    x[0, 0] = x[1, 1]  # torch writes, tensorlab sees
    assert t[0, 0].item() == t[1, 1].item()
    y = torch.arange(20).to(getattr(torch, dt.name)).reshape(4, 5)[1:, ::2]
    u = tl.from_dlpack(y)
    assert u.dtype is dt and u.stride() == y.stride() and u.data_ptr() == y.data_ptr()
    _write_one(u)
    assert y[0, 0].item() == u[0, 0].item()


def test_torch_zero_size_both_ways(torch):
    for shape in [(0, 3), (3, 0), (0,)]:
        assert tuple(torch.from_dlpack(tl.zeros(shape)).shape) == shape
        assert tuple(tl.from_dlpack(torch.zeros(shape)).shape) == shape
        assert tuple(tl.from_dlpack(np.zeros(shape)).shape) == shape


def test_capsule_consumed_once(device):
    cap = tl.arange(3, device=device).__dlpack__(max_version=(1, 0))
    tl.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
        tl.from_dlpack(cap)
    with pytest.raises(TypeError, match="__dlpack__ or a DLPack capsule"):
        tl.from_dlpack([1, 2])


def test_torch_consumes_our_capsule_once(torch):
    cap = tl.arange(3).__dlpack__()
    torch.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="consumed only once"):
        tl.from_dlpack(cap)


def test_requires_grad_refused(device):
    t = tl.ones(3, device=device, requires_grad=True)
    with pytest.raises(BufferError, match=r"Can't export tensors that require gradient, use tensor.detach\(\)"):
        t.__dlpack__()
    assert tl.from_dlpack(t.detach()).shape == (3,)


def test_requires_grad_message_is_torchs(torch):
    with pytest.raises(BufferError) as ours:
        tl.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as theirs:
        torch.ones(2, requires_grad=True).__dlpack__()
    assert str(ours.value) == str(theirs.value)


def test_read_only_memory():
    a = np.arange(4.)
    a.flags.writeable = False
    t = tl.from_dlpack(a)
    assert t.untyped_storage()._readonly
    with pytest.raises(RuntimeError, match="cannot be written"):
        t.add_(1)
    c = tl.from_dlpack(a, copy=True)
    c.add_(1)
    np.testing.assert_array_equal(a, np.arange(4.))
    assert c.data_ptr() != a.ctypes.data
    # and out again: the versioned capsule says READ_ONLY, the legacy one cannot (NumPy's error)
    out = np.from_dlpack(t)
    assert not out.flags.writeable
    np.testing.assert_array_equal(out, a)
    with pytest.raises(BufferError, match="readonly"):
        t.__dlpack__()


def test_copy_true_gives_new_memory_and_the_flag(device):
    t = tl.arange(4., device=device)
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    mt, versioned = D._managed(cap)
    assert versioned and mt.flags & D.FLAG_IS_COPIED
    u = tl.from_dlpack(cap)
    u[0] = 9
    assert t[0].item() == 0
    v = tl.from_dlpack(t, copy=True)
    assert v.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(_host(v), _host(t))


def test_producer_memory_lives_as_long_as_the_tensor_and_its_views():
    a = np.arange(10.)
    alive = weakref.ref(a)
    t = tl.from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None
    v = t[2:5]
    del t
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(v.numpy(), [2., 3., 4.])
    del v
    gc.collect()
    assert alive() is None


def test_our_memory_lives_as_long_as_the_consumer(device):
    t = tl.arange(6., device=device)
    buf = weakref.ref(t.untyped_storage()._buf)
    cap = t.__dlpack__(max_version=(1, 0))
    del t
    gc.collect()
    assert buf() is not None  # the unconsumed capsule holds it
    u = tl.from_dlpack(cap)
    del cap
    gc.collect()
    assert buf() is not None
    np.testing.assert_array_equal(_host(u), np.arange(6.))
    view = u[2:4]
    del u
    gc.collect()
    assert buf() is not None  # a view of the consumer's tensor holds it too
    np.testing.assert_array_equal(_host(view), [2., 3.])
    del view
    gc.collect()
    assert buf() is None


def test_unconsumed_capsule_frees_on_drop(device):
    t = tl.arange(6., device=device)
    buf = weakref.ref(t.untyped_storage()._buf)
    cap = t.__dlpack__()
    del t
    gc.collect()
    assert buf() is not None
    del cap
    gc.collect()
    assert buf() is None


@pytest.mark.parametrize("dtype,what", [(np.uint16, "Unsupported kDLUInt bits 16"),
                                        (np.uint32, "Unsupported kDLUInt bits 32")])
def test_unsupported_dtype_refused_and_capsule_left_alone(dtype, what):
    a = np.zeros(3, dtype)
    cap = a.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError, match=what):
        tl.from_dlpack(cap)
    assert _capsule_name(cap) == "dltensor_versioned"  # not consumed: its own destructor frees it


def test_negative_strides_need_a_copy():
    a = np.arange(6.)[::-1]
    with pytest.raises(BufferError, match="negative strides"):
        tl.from_dlpack(a)
    np.testing.assert_array_equal(tl.from_dlpack(a, copy=True).numpy(), a)


def test_stream_arguments_on_cpu():
    t = tl.ones(2)
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        t.__dlpack__(stream=5)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream="default")
    t.__dlpack__(stream=-1)


def test_device_and_copy_arguments():
    a = np.arange(3.)
    with pytest.raises(ValueError, match="without copying"):
        tl.from_dlpack(a, device="cuda:0", copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        tl.ones(2).__dlpack__(dl_device=(D.DLDeviceType.kDLCUDA, 0), copy=False)
    with pytest.raises(BufferError, match="unsupported device kDLOpenCL"):
        tl.ones(2).__dlpack__(dl_device=(D.DLDeviceType.kDLOpenCL, 0))
    u = tl.from_dlpack(a, device="cpu")
    assert u.data_ptr() == a.ctypes.data
    with pytest.raises(AssertionError, match="already a DLPack capsule"):
        tl.from_dlpack(a.__dlpack__(), device="cpu")


def test_old_producers_without_the_new_keywords():
    class Old:
        def __init__(self, a):
            self.a = a
            self.calls = []

        def __dlpack__(self, stream=None):
            self.calls.append(stream)
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(4.)
    old = Old(a)
    t = tl.from_dlpack(old, copy=True)
    assert old.calls == [None]
    assert t.data_ptr() != a.ctypes.data  # the producer could not copy: tensorlab did
    np.testing.assert_array_equal(t.numpy(), a)


def test_dlpack_device(device):
    t = tl.ones(2, device=device)
    kind, idx = t.__dlpack_device__()
    if device == "cpu":
        assert (kind, idx) == (D.DLDeviceType.kDLCPU, 0)
    else:
        assert (kind, idx) == (D.DLDeviceType.kDLCUDA, t.device.index)
        # host-only consumers refuse device memory (emulated or not); NumPy 2.5 raises BufferError
        with pytest.raises((RuntimeError, BufferError), match="Unsupported device in DLTensor"):
            np.from_dlpack(t)


def test_unreachable_device_is_the_cuda_diagnosis():
    from tensorlab import backends
    if backends.cuda_emulated() or backends.cuda_diagnosis() is None:
        pytest.skip("CUDA is usable here: the capsule would be reachable")
    cap = tl.arange(3.).__dlpack__(max_version=(1, 0))
    mt, _ = D._managed(cap)
    mt.dl_tensor.device.device_type = D.DLDeviceType.kDLCUDA
    with pytest.raises(RuntimeError, match="CUDA"):
        tl.from_dlpack(cap)


# -- CUDA: streams ---------------------------------------------------------------------------------
class _Spy:
    def __init__(self, monkeypatch):
        from tensorlab.backends.cuda.active import driver
        self.calls = []
        rec, wait = driver.event_record, driver.stream_wait_event
        monkeypatch.setattr(driver, "event_record",
                            lambda ev, s: (self.calls.append(("record", int(getattr(s, "ptr", 0)))), rec(ev, s))[1])
        monkeypatch.setattr(driver, "stream_wait_event",
                            lambda s, ev: (self.calls.append(("wait", int(getattr(s, "ptr", 0)))), wait(s, ev))[1])


def test_stream_orders_the_consumer_after_the_producer(cuda, monkeypatch):
    t = tl.arange(8., device=cuda)
    consumer = tl.cuda.Stream()
    producer = tl.cuda.Stream()
    spy = _Spy(monkeypatch)
    with tl.cuda.sync_trace() as trace, tl.cuda.stream(producer):
        t.add_(1)
        cap = t.__dlpack__(stream=consumer.cuda_stream, max_version=(1, 0))
    assert spy.calls == [("record", producer.cuda_stream), ("wait", consumer.cuda_stream)]
    assert list(trace) == []  # no host wait for an exchange
    spy.calls.clear()
    t.__dlpack__(stream=-1)  # no ordering asked
    assert spy.calls == []
    with tl.cuda.stream(consumer):
        t.__dlpack__(stream=consumer.cuda_stream)  # same stream: nothing to order
    assert spy.calls == []
    t.__dlpack__(stream=1)  # the legacy default stream, from the producer's new stream
    with tl.cuda.stream(producer):
        t.__dlpack__(stream=None)
    assert spy.calls == [("record", producer.cuda_stream), ("wait", 0)]
    np.testing.assert_array_equal(_host(tl.from_dlpack(cap)), np.arange(8.) + 1)


def test_stream_values_refused(cuda):
    t = tl.ones(2, device=cuda)
    with pytest.raises(BufferError, match="per-thread default stream is not supported"):
        t.__dlpack__(stream=2)
    with pytest.raises(AssertionError, match="unsupported stream on CUDA: 0"):
        t.__dlpack__(stream=0)


def test_from_dlpack_passes_the_current_stream(cuda):
    t = tl.arange(4., device=cuda)
    seen = []

    class Producer:
        def __dlpack_device__(self):
            return t.__dlpack_device__()

        def __dlpack__(self, **kw):
            seen.append(kw.get("stream"))
            return t.__dlpack__(**kw)

    tl.from_dlpack(Producer())
    s = tl.cuda.Stream()
    with tl.cuda.stream(s):
        tl.from_dlpack(Producer())
    assert seen == [1, s.cuda_stream]  # the legacy default stream is passed as 1 (the standard)


def test_cuda_export_to_the_host(cuda):
    t = tl.arange(5., device=cuda)
    u = tl.from_dlpack(t, device="cpu")
    assert u.device.type == "cpu"
    np.testing.assert_array_equal(u.numpy(), np.arange(5.))
    cap = t.__dlpack__(max_version=(1, 0), dl_device=(D.DLDeviceType.kDLCPU, 0))
    host = tl.from_dlpack(cap)  # a host copy
    assert host.device.type == "cpu"
    np.testing.assert_array_equal(host.numpy(), np.arange(5.))
    v = tl.from_dlpack(np.arange(3.), device=cuda)
    assert v.device.type == "cuda"
    np.testing.assert_array_equal(_host(v), np.arange(3.))


def test_cupy_on_a_real_gpu():
    cupy = pytest.importorskip("cupy")
    if not tl.cuda.is_available():
        pytest.skip("needs a real GPU")
    x = cupy.arange(6, dtype=cupy.float32)
    t = tl.from_dlpack(x)
    t[0] = 7
    assert float(x[0]) == 7
    y = cupy.from_dlpack(t)
    y[1] = 8
    assert t[1].item() == 8


# -- robustness: nothing a user does with capsules can crash or corrupt -----------------------------
def test_foreign_memory_is_not_resizable_and_resize_changes_nothing(device):
    src = tl.arange(4., device=device)
    t = tl.from_dlpack(src)
    with pytest.raises(RuntimeError, match="not resizable"):
        t.resize_(100)
    with pytest.raises(RuntimeError, match="not resizable"):
        t.untyped_storage().resize_(1000)
    assert t.shape == (4,) and t.untyped_storage().nbytes() == 16
    np.testing.assert_array_equal(_host(t), [0., 1., 2., 3.])


def test_capsule_dropped_while_an_exception_is_in_flight(device):
    t = tl.arange(3., device=device)

    def export_then_fail():
        cap = t.__dlpack__(max_version=(1, 0))  # noqa: F841  (freed while ValueError unwinds this frame)
        raise ValueError("boom")

    for _ in range(3):
        with pytest.raises(ValueError, match="boom"):
            export_then_fail()
    np.testing.assert_array_equal(_host(t), [0., 1., 2.])


def test_one_capsule_two_threads_consume_it_once(device):
    import threading
    t = tl.arange(5., device=device)
    for _ in range(20):
        cap = t.__dlpack__(max_version=(1, 0))
        results, start = [], threading.Barrier(2)

        def consume():
            start.wait()
            try:
                results.append(tl.from_dlpack(cap))
            except RuntimeError as e:
                results.append(e)
        threads = [threading.Thread(target=consume) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sum(isinstance(r, tl.Tensor) for r in results) == 1
        assert sum(isinstance(r, RuntimeError) and "consumed only once" in str(r) for r in results) == 1


def test_exported_bytes_survive_set_on_the_producer(device):
    t = tl.arange(6., device=device)
    cap = t.__dlpack__()
    t.set_(tl.zeros(2, device=device).untyped_storage())  # the tensor moves to other memory
    gc.collect()
    np.testing.assert_array_equal(_host(tl.from_dlpack(cap)), np.arange(6.))
    assert t.tolist() == [0., 0.]


def test_capsule_of_a_future_major_version_refused():
    cap = np.arange(3.).__dlpack__(max_version=(1, 0))
    mt, _ = D._managed(cap)
    mt.version.major = 2
    with pytest.raises(BufferError, match=r"DLPack 2\.\d+; tensorlab reads DLPack 1\.x"):
        tl.from_dlpack(cap)
    mt.version.major = 1  # its own destructor frees it as a 1.x capsule


def test_cpu_tensor_exported_to_a_cuda_consumer(cuda):
    t = tl.arange(4.)
    cap = t.__dlpack__(max_version=(1, 0), dl_device=(D.DLDeviceType.kDLCUDA, 0))
    mt, _ = D._managed(cap)
    assert mt.flags & D.FLAG_IS_COPIED and mt.dl_tensor.device.device_type == D.DLDeviceType.kDLCUDA
    u = tl.from_dlpack(cap)
    assert u.device.type == "cuda"
    np.testing.assert_array_equal(_host(u), np.arange(4.))


@st.composite
def _views(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    index = tuple(slice(draw(st.integers(0, 2)), None, draw(st.integers(1, 3))) for _ in shape)
    perm = draw(st.permutations(range(len(shape))))
    dt = draw(st.sampled_from(DTYPES))
    return shape, index, perm, dt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(view=_views())
def test_random_views_through_torch_and_numpy(torch, view):
    shape, index, perm, dt = view
    n = 1
    for s in shape:
        n *= s
    base = tl.arange(n).to(dt).reshape(shape) if shape else tl.tensor(7).to(dt)
    t = base[index].permute(*perm) if shape else base
    x = torch.from_dlpack(t)
    assert tuple(x.shape) == tuple(t.shape)
    back = tl.from_dlpack(x)
    np.testing.assert_array_equal(_host(back).astype(np.float64), _host(t).astype(np.float64))
    if t.numel() > 1:
        assert x.stride() == t.stride() and back.stride() == t.stride()
    if t.numel():
        assert x.data_ptr() == t.data_ptr() == back.data_ptr()
    if dt is not tl.bfloat16:
        np.testing.assert_array_equal(np.from_dlpack(t), _host(t))


def test_null_data_pointer_refused():
    cap = np.arange(3.).__dlpack__(max_version=(1, 0))
    mt, _ = D._managed(cap)
    data = mt.dl_tensor.data
    mt.dl_tensor.data = None
    with pytest.raises(BufferError, match="NULL data pointer"):
        tl.from_dlpack(cap)
    mt.dl_tensor.data = data
    np.testing.assert_array_equal(tl.from_dlpack(cap).numpy(), [0., 1., 2.])


def test_copy_for_a_consumer_stream_is_ordered_before_the_wait(cuda, monkeypatch):
    from tensorlab.backends.cuda.active import driver
    t = tl.arange(6., device=cuda)[::2]  # strided: the copy is a kernel launch
    consumer = tl.cuda.Stream()
    spy = _Spy(monkeypatch)
    launch = driver.launch
    monkeypatch.setattr(driver, "launch", lambda *a, **k: (spy.calls.append(("launch", 0)), launch(*a, **k))[1])
    cap = t.__dlpack__(stream=consumer.cuda_stream, max_version=(1, 0), copy=True)
    kinds = [c[0] for c in spy.calls]
    assert "launch" in kinds and kinds.index("record") > max(i for i, k in enumerate(kinds) if k == "launch")
    assert spy.calls[-1] == ("wait", consumer.cuda_stream)
    np.testing.assert_array_equal(_host(tl.from_dlpack(cap)), [0., 2., 4.])
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        t.__dlpack__(stream=consumer.cuda_stream, dl_device=(D.DLDeviceType.kDLCPU, 0))
