"""The memory, copy and creation primitives give the CPU backend's values on every device, for
every dtype and dtype pair, contiguous, strided and broadcast layouts, host <-> device transfers,
and both kernel index types (`index` runs the CUDA kernels' long long instantiations too)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorlab as tl
from tensorlab import dtypes

ALL = list(dtypes.ALL)
# Values every dtype holds exactly (bool aside) and whose casts are defined everywhere: negative
# floats into uint8 wrap (-3 -> 253) on both backends, fractions truncate toward zero.
VALUES = [[-3.0, -1.5, 0.0, 0.5], [1.0, 2.75, 64.0, 100.0], [7.0, -0.25, 3.0, 12.5]]


def host(t):
    """A tensor's values as NumPy (through .cpu(): the device-to-host path under test)."""
    return t.cpu().numpy()


def reference(values, src, dst):
    """What the CPU backend makes of values stored as `src` then converted to `dst`."""
    return make(values, src).to(dst).numpy()


def make(values, dtype, device="cpu"):
    """`values` converted to `dtype` by a cast (tensor() itself refuses -3.0 for uint8, as torch)."""
    return tl.tensor(values, dtype=tl.float64, device=device).to(dtype)


def same(actual, expected):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a, e = actual, expected
    if a.dtype == ml_dtypes.bfloat16 or a.dtype.kind == "f":
        a, e = a.astype(np.float64), e.astype(np.float64)
    np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("value", [0, 1, -3, 2.5, True])
def test_fill_every_dtype_and_layout(device, index, dtype, value):
    if dtype is tl.uint8 and value == -3:
        value = 253
    t = tl.empty(3, 5, dtype=dtype, device=device)
    t.fill_(value)
    same(host(t), np.full((3, 5), value).astype(dtype.np))
    base = tl.zeros(4, 6, dtype=dtype, device=device)
    base.t()[1:5:2].fill_(value)  # columns 1 and 3: a strided view
    want = np.zeros((4, 6), dtype.np)
    want[:, 1:5:2] = np.array(value).astype(dtype.np)
    same(host(base), want)


@pytest.mark.parametrize("src", ALL, ids=str)
def test_copy_cast_every_dtype_pair(device, index, src):
    x = make(VALUES, src, device)
    for dst in ALL:
        want = reference(VALUES, src, dst)
        same(host(x.to(dst, copy=True)), want)           # contiguous -> contiguous
        same(host(x.t().to(dst)), want.T)                # strided source
        out = tl.zeros(4, 3, dtype=dst, device=device)
        out.t().copy_(x)                                 # strided destination
        same(host(out.t()), want)


def test_broadcast_copies(device, index):
    row = tl.tensor([1.5, -2.0, 3.25], device=device)
    col = tl.tensor([[1], [2]], dtype=tl.int16, device=device)
    dst = tl.zeros(2, 3, dtype=tl.float64, device=device)
    dst.copy_(row)
    same(host(dst), np.broadcast_to(np.array([1.5, -2.0, 3.25]), (2, 3)).astype(np.float64))
    dst.copy_(col)
    same(host(dst), np.array([[1.0] * 3, [2.0] * 3]))
    e = row.expand(4, 3)
    same(host(e), np.broadcast_to(np.array([1.5, -2.0, 3.25], np.float32), (4, 3)))
    same(host(e.contiguous()), np.broadcast_to(np.array([1.5, -2.0, 3.25], np.float32), (4, 3)))


def test_copy_between_overlapping_views_matches_cpu(device, index):
    x = tl.arange(10, device=device)
    x[1:].copy_(x[:-1])
    assert x.tolist() == [0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    y = tl.arange(12, dtype=tl.float32, device=device).reshape(3, 4)
    y.copy_(y.t().reshape(3, 4).t().reshape(3, 4))  # reads and writes interleave in memory
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    want[...] = want.T.reshape(3, 4).T.reshape(3, 4).copy()
    same(host(y), want)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_host_to_device_from_any_numpy_layout(device, index, dtype):
    base = (np.arange(24).reshape(4, 6) % 7 - 2).astype(dtype.np)
    for arr in (base, base.T, base[::-1, ::2], np.broadcast_to(base[:1], (5, 6)), base[2, 3]):
        same(host(tl.tensor(arr, device=device)), np.array(arr))
    # a CPU tensor of another dtype, broadcast, into a strided device tensor
    src = tl.tensor(base[:1].astype(np.float64)).expand(4, 6)
    dst = tl.zeros(6, 4, dtype=dtype, device=device).t()
    dst.copy_(src)
    same(host(dst), np.broadcast_to(base[:1].astype(np.float64), (4, 6)).astype(dtype.np))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_device_to_host_of_views(device, index, dtype):
    big = tl.tensor((np.arange(600).reshape(20, 30) % 11).astype(dtype.np), device=device)
    ref = (np.arange(600).reshape(20, 30) % 11).astype(dtype.np)
    for view, want in ((big[:, 7], ref[:, 7]),                # sparse: gathered by the copy kernel
                       (big.t(), ref.T),                      # dense, permuted: one copy of the span
                       (big[3:5, 2:29:3], ref[3:5, 2:29:3]),
                       (big[4, 5], ref[4, 5]),
                       (big[0].expand(3, 30), np.broadcast_to(ref[0], (3, 30)))):
        same(view.cpu().numpy(), np.array(want))
        assert view.tolist() == np.array(want).tolist()


def test_storage_bytes_round_trip(device):
    t = tl.tensor([1, 2, 3], dtype=tl.int16, device=device)
    s = t.untyped_storage()
    assert s.tolist() == [1, 0, 2, 0, 3, 0]
    s.resize_(8)
    assert s.nbytes() == 8 and s.tolist()[:6] == [1, 0, 2, 0, 3, 0]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_arange_linspace_eye_match_cpu(device, index, dtype):
    cases = [lambda d, dev: tl.arange(7, dtype=d, device=dev),
             lambda d, dev: tl.arange(-3, 20, 4, dtype=d, device=dev),
             lambda d, dev: tl.arange(0.5, 6.1, 0.75, dtype=d, device=dev),
             lambda d, dev: tl.linspace(-2, 10, 7, dtype=d, device=dev),
             lambda d, dev: tl.linspace(0.1, 1.0, 10, dtype=d, device=dev),
             lambda d, dev: tl.linspace(3, 3, 1, dtype=d, device=dev),
             lambda d, dev: tl.eye(3, 5, dtype=d, device=dev),
             lambda d, dev: tl.eye(4, dtype=d, device=dev)]
    for make in cases:
        try:
            want = make(dtype, "cpu").numpy()
        except (RuntimeError, ValueError, NotImplementedError) as e:  # torch refuses it (bool arange, ...)
            with pytest.raises(type(e)):
                make(dtype, device)
            continue
        same(host(make(dtype, device)), want)


def test_creation_into_strided_out(device, index):
    buf = tl.zeros(10, dtype=tl.float64, device=device)
    tl.arange(5, out=buf[::2])
    tl.linspace(1, 2, 5, out=buf[1::2])
    same(host(buf), np.array([0, 1, 1, 1.25, 2, 1.5, 3, 1.75, 4, 2.0]))
    m = tl.zeros(4, 3, dtype=tl.int32, device=device)
    tl.eye(3, 4, out=m.t())
    same(host(m.t()), np.eye(3, 4, dtype=np.int32))


def test_out_of_memory_names_the_request(device):
    if device == "cpu":
        pytest.skip("device memory")
    free, total = tl.cuda.mem_get_info()
    with pytest.raises(tl.cuda.OutOfMemoryError, match=rf"Tried to allocate .*\({total * 2} bytes\).*free") as e:
        tl.empty(total * 2, dtype=tl.uint8, device=device)
    assert isinstance(e.value, RuntimeError) and e.value.nbytes == total * 2


def test_fault_in_a_copy_leaves_the_destination_unchanged(device):
    from tensorlab import testing
    dst = tl.arange(6, dtype=tl.float32, device=device).reshape(2, 3)
    src = tl.full((3, 2), 9.0, device=device).t()
    with pytest.raises(testing.InjectedFault):
        with testing.inject_fault("copy", 1):
            dst.copy_(src)
    assert dst.tolist() == [[0, 1, 2], [3, 4, 5]]
