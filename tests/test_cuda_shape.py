"""CUDA-specific cases of the shape and index kernels (index.cu, shape.cu, scan_select.cu, sort.cu):
every dtype with 32- and 64-bit indexing (launch.wide_indexing), rows longer than one shared-memory
sort segment (merge passes), multi-tile scans, narrow-dtype atomics through scratch accumulators,
and the bounds check that raises before anything is written. Each result is compared with the CPU
backend, which is the contract."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.testing import assert_unchanged, snapshot

pytestmark = pytest.mark.cuda


@pytest.fixture
def launch():
    pytest.importorskip("tensorlab.backends.cuda.emulation")
    from tensorlab import backends
    if backends.cuda_unavailable_reason() is not None and not backends.cuda_emulated():
        pytest.skip("no CUDA device and no emulation")
    from tensorlab.backends.cuda import launch as K
    return K


DTYPES = [tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16, tl.float32, tl.float64]


def _values(shape, dtype, seed=0):
    a = np.random.default_rng(seed).integers(0, 4, size=shape)
    return a % 2 == 1 if dtype is tl.bool else a.astype(dtype.np)


def _both(fn, *arrays, dtype):
    """fn run on the CPU and on CUDA tensors made from `arrays` (host NumPy)."""
    dts = [None if a.dtype in (np.int64, np.bool_) else dtype for a in arrays]  # indices and masks keep theirs
    cpu = fn(*(tl.tensor(a, dtype=d) for a, d in zip(arrays, dts)))
    cuda = fn(*(tl.tensor(a, dtype=d, device="cuda") for a, d in zip(arrays, dts)))
    return cpu, cuda


def _same(cpu, cuda):
    if isinstance(cpu, (tuple, list)):
        for a, b in zip(cpu, cuda):
            _same(a, b)
        return
    assert cuda.device.type == "cuda" and cpu.dtype == cuda.dtype and cpu.shape == cuda.shape
    np.testing.assert_array_equal(cuda.cpu().numpy().astype(np.float64), cpu.numpy().astype(np.float64))


@pytest.fixture(params=["int", "long long"])
def indexing(request, launch):
    return launch.wide_indexing() if request.param == "long long" else contextlib.nullcontext()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_kernels_every_dtype(dtype, indexing):
    x = _values((4, 5), dtype)
    i = np.array([[0, 3, 3, 1, 0], [2, 2, 0, 3, 1]])
    src = _values((2, 5), dtype, seed=1)
    with indexing:
        _same(*_both(lambda t, j: tl.gather(t, 0, j), x, i, dtype=dtype))
        _same(*_both(lambda t, j, s: tl.scatter(t, 0, j[:, :1], s[:, :1]), x, i, src, dtype=dtype))
        _same(*_both(lambda t, j, s: tl.scatter_add(t, 0, j, s), x, i, src, dtype=dtype))
        _same(*_both(lambda t, j, s: tl.scatter(t, 0, j, s, reduce="multiply"), x, i, src, dtype=dtype))
        _same(*_both(lambda t, j: tl.index_select(t, 1, j[0]), x, i, dtype=dtype))
        _same(*_both(lambda t, j: tl.index_fill(t, 1, j[1], 1), x, i, dtype=dtype))
        _same(*_both(lambda t, j: t[j[0, :3], j[1, :3]], x, i, dtype=dtype))

        def put(t, j, s):
            t.index_put_((j[0, :3], j[1, :3]), s[0, :3], accumulate=True)
            t[j[1, 3:]] = s[1, 0]
            return t
        _same(*_both(put, x, i, src, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_shape_kernels_every_dtype(dtype, indexing):
    x = _values((3, 4, 5), dtype)
    y = _values((3, 2, 5), dtype, seed=2)
    with indexing:
        _same(*_both(lambda a, b: tl.cat([a, b, a], 1), x, y, dtype=dtype))
        _same(*_both(lambda a: tl.roll(a, (1, -2), (0, 2)), x, dtype=dtype))
        _same(*_both(lambda a: tl.roll(a[:, ::2], 3), x, dtype=dtype))
        _same(*_both(lambda a: tl.tril(a, -1), x, dtype=dtype))
        _same(*_both(lambda a: tl.flip(a.transpose(0, 2), (0, 1)), x, dtype=dtype))
        _same(*_both(lambda a: tl.nonzero(a.transpose(1, 2)), x, dtype=dtype))
        _same(*_both(lambda a, b: tl.masked_select(a, b), x, x[:, :1] % 2 == 1, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort_kernels_every_dtype(dtype, indexing):
    short = _values((3, 37), dtype)
    long = _values((2, 4500), dtype, seed=3)
    with indexing:
        _same(*_both(lambda a: tl.sort(a, 1, descending=True), short, dtype=dtype))
        _same(*_both(lambda a: tl.sort(a.t(), 0), long, dtype=dtype))
        if dtype is tl.bool:  # torch has no topk for bool: refused on both devices
            with pytest.raises(RuntimeError, match="topk does not support bool"):
                tl.topk(tl.tensor(long, device="cuda"), 5, 1)
        else:
            _same(*_both(lambda a: tl.topk(a, 5, 1, largest=False), long, dtype=dtype))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_nan_order_and_stability_match_cpu(launch, descending):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 5, size=(3, 2600)).astype(np.float32)
    a[rng.random(a.shape) < 0.05] = np.nan
    a[0, :3] = [-0.0, 0.0, -0.0]
    for cols in (a[:, :300], a):  # one shared-memory segment, and merge passes
        _same(*_both(lambda t: tl.sort(t, 1, descending=descending), cols, dtype=tl.float32))
        _same(*_both(lambda t: tl.topk(t, 7, 1, largest=descending), cols, dtype=tl.float32))


def test_scans_over_many_tiles_match_cpu(launch):
    a = np.random.default_rng(6).random((70, 130)) < 0.3  # 9100 elements: 5 tiles of 2048
    _same(*_both(lambda t: tl.nonzero(t), a, dtype=tl.bool))
    _same(*_both(lambda t: t[t > 0.5], a.astype(np.float32), dtype=tl.float32))
    _same(*_both(lambda t: tl.masked_select(t, t > 0.5), a.astype(np.float32).T, dtype=tl.float32))


def test_half_scatter_add_rounds_once_like_cpu(launch):
    # 2048 + 1 + 1 in float16: adding twice in float16 gives 2048, accumulating in float32 2050
    x = np.array([2048.0, 0.0], np.float16)
    _same(*_both(lambda t, i, s: tl.scatter_add(t, 0, i, s), x, np.array([0, 0]), np.ones(2, np.float16),
                 dtype=tl.float16))


def test_bad_index_raises_before_writing(launch):
    """The check runs on the device; the write kernel then does nothing; the error comes at the next wait."""
    x = tl.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4), device="cuda")
    before = x.cpu().numpy().copy()
    rows, cols, vals = tl.tensor([0, 1], device="cuda"), tl.tensor([1, 9], device="cuda"), tl.tensor([5.0, 6.0],
                                                                                                      device="cuda")
    idx, ones = tl.tensor([[0, 4]], device="cuda"), tl.ones((1, 2), device="cuda")
    neg = tl.tensor([0, -4], dtype=tl.int32, device="cuda")
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 4"):
        x.index_put_((rows, cols), vals)
        tl.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"scatter\(\): index 4 is out of bounds for dimension 1 with size 4"):
        x.scatter_add_(1, idx, ones)
        tl.cuda.synchronize()
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x[neg]
        tl.cuda.synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(), before)


def test_bounds_check_waits_nowhere(launch):
    x = tl.zeros((3, 4), device="cuda")
    rows, cols, ones = tl.tensor([0, 2], device="cuda"), tl.tensor([1, 3], device="cuda"), tl.ones(2, device="cuda")
    with tl.cuda.sync_trace() as trace:
        x.index_put_((rows, cols), ones)
    assert trace.reasons() == []
    assert x.sum().item() == 2.0
