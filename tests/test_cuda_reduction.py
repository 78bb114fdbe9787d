"""The CUDA reduction kernels (reduce.cu, scan.cu, softmax.cu) against the CPU backend for every
instantiated dtype pair, both index types, and each geometry the host picks: a warp or a block per
output (inner), threads across outputs (outer), reductions split across blocks and merged in a
second pass (large full and strided reductions), block scans of long rows and sequential scans,
softmax by rows and by columns. On the CPU these compare the CPU backend with NumPy's own results."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import dtypes
from tensorlab import layout as L

ALL = list(dtypes.ALL)
FLOATS = [d for d in ALL if d.is_floating_point]
_TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 2e-5, "float64": 1e-12}


def values(shape, dtype, seed=0, low=-3, high=4):
    rng = np.random.default_rng(seed)
    if dtype is tl.bool:
        return rng.random(shape) < 0.6
    if dtype.is_floating_point:
        return rng.standard_normal(shape).astype(dtype.np)
    if dtype is tl.uint8:
        low = max(low, 0)
    return rng.integers(low, high, shape).astype(dtype.np)


def transposed(arr, device, dtype):
    base = tl.tensor(np.array(arr.T, order="C"), dtype=dtype, device=device)
    return base._view_of(L.make(arr.shape, tuple(reversed(base.stride())), 0))


def same(actual, expected):
    """A device result equals the CPU backend's (within the dtype's rounding for floats)."""
    assert actual.dtype is expected.dtype and actual.shape == expected.shape, (actual, expected)
    a, e = np.asarray(actual.cpu()), np.asarray(expected)
    if actual.dtype.is_floating_point:
        tol = _TOL[actual.dtype.name]
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, e)


REDUCE_CALLS = {
    "sum": lambda x, d: x.sum(d), "prod": lambda x, d: x.prod(d) if isinstance(d, int) else x.prod(),
    "amax": lambda x, d: x.amax(() if d is None else d), "amin": lambda x, d: x.amin(() if d is None else d),
    "all": lambda x, d: x.all(d), "any": lambda x, d: x.any(d), "count_nonzero": lambda x, d: tl.count_nonzero(x, d),
    "argmax": lambda x, d: x.argmax(d), "max_dim": lambda x, d: tuple(x.max(0 if d is None else d)),
}
FLOAT_CALLS = {
    "mean": lambda x, d: x.mean(d), "var": lambda x, d: x.var(d), "std": lambda x, d: x.std(d, correction=0),
    "norm2": lambda x, d: x.norm(2, d), "norm_p": lambda x, d: x.norm(3.0, d), "norm_inf": lambda x, d: x.norm(
        float("inf"), d), "norm0": lambda x, d: x.norm(0, d), "logsumexp": lambda x, d: tl.logsumexp(x, d or ()),
}


def _both(call, arr, dtype, device, d, layout):
    x = tl.tensor(arr, dtype=dtype, device=device) if layout == "contiguous" else transposed(arr, device, dtype)
    got, want = call(x, d), call(tl.tensor(arr, dtype=dtype), d)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        same(g, w)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_every_reduction_and_dtype_matches_cpu(device, index, dtype):
    arr = values((5, 37), dtype, seed=1)
    calls = dict(REDUCE_CALLS, **(FLOAT_CALLS if dtype.is_floating_point else {}))
    for name, call in calls.items():
        if name == "argmax" and dtype is tl.bool:
            continue
        for d in (None, 0, 1):
            for layout in ("contiguous", "transposed"):
                _both(call, arr, dtype, device, d, layout)


@pytest.mark.parametrize("shape,dim", [((70000,), None), ((3, 40000), 1), ((40000, 3), 0), ((600, 9), 0),
                                       ((7, 3000), 1)], ids=str)
def test_large_and_split_reductions_match_cpu(device, index, shape, dim):
    """Long reductions over few outputs are split across blocks and merged (Welford, logsumexp and
    argmax States included); long rows use a whole block per output."""
    arr = values(shape, tl.float32, seed=2)
    flat = arr.reshape(-1)
    flat[[5, 17, flat.size - 3]] = 9.5  # ties: the first occurrence wins across splits
    for name in ("sum", "amax", "argmax", "max_dim", "count_nonzero"):
        _both(REDUCE_CALLS[name], arr, tl.float32, device, dim, "contiguous")
    for name in ("mean", "var", "norm2", "logsumexp"):
        _both(FLOAT_CALLS[name], arr, tl.float32, device, dim, "contiguous")
    flat[flat.size // 2] = np.nan
    _both(REDUCE_CALLS["argmax"], arr, tl.float32, device, dim, "contiguous")
    _both(REDUCE_CALLS["amax"], arr, tl.float32, device, dim, "contiguous")


def test_integer_and_boolean_sums_split_exactly(device, index):
    arr = values((50000,), tl.int32, seed=3, low=-1000, high=1000)
    same(tl.tensor(arr, device=device).sum(), tl.tensor(arr).sum())
    b = values((50000,), tl.bool, seed=4)
    same(tl.tensor(b, device=device).sum(), tl.tensor(b).sum())
    assert tl.tensor(b, device=device).sum().item() == int(b.sum())


def test_dtype_conversions_match_cpu(device, index):
    f = values((4, 9), tl.float32, seed=5) * 3
    i = values((4, 9), tl.int32, seed=6)
    cases = [
        (f, lambda x: x.sum(1, dtype=tl.int16)), (f, lambda x: x.sum(dtype=tl.int64)),
        (i, lambda x: x.sum(0, dtype=tl.bool)), (i, lambda x: x.prod(1, dtype=tl.int8)),
        (i, lambda x: x.sum(dtype=tl.int32)), (f, lambda x: x.mean(0, dtype=tl.float16)),
        (i, lambda x: x.mean(1, dtype=tl.float64)), (i, lambda x: tl.logsumexp(x, 1)),
        (f, lambda x: x.norm(2, 1, dtype=tl.float64)), (f, lambda x: x.sum(dtype=tl.bfloat16)),
        (f, lambda x: x.all(1, out=tl.empty(4, dtype=tl.uint8, device=x.device))),
        (values((4, 9), tl.uint8, seed=7), lambda x: x.any(0, out=tl.empty(9, dtype=tl.bool, device=x.device))),
        (values((4, 9), tl.uint8, seed=7), lambda x: x.all(1, out=tl.empty(4, dtype=tl.bool, device=x.device))),
        (f, lambda x: x.cumsum(1, dtype=tl.float64)), (i, lambda x: x.cumprod(0, dtype=tl.float16)),
        (i, lambda x: tl.softmax(x, 1, dtype=tl.float32)), (f, lambda x: tl.log_softmax(x, 0, dtype=tl.float64)),
    ]
    for arr, call in cases:
        same(call(tl.tensor(arr, device=device)), call(tl.tensor(arr)))


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_cumulative_matches_cpu(device, index, dtype):
    """Short rows and rows along a strided dim scan sequentially; long rows by block scans."""
    for shape in ((3, 5), (2, 300), (300, 2)):
        arr = values(shape, dtype, seed=8, low=-1, high=2)
        if dtype.is_floating_point:
            arr = (1 + 0.01 * arr.astype(np.float32)).astype(dtype.np)  # products stay in range
        for layout in ("contiguous", "transposed"):
            for dim in (0, 1):
                calls = [lambda x: x.cumsum(dim), lambda x: x.cumprod(dim)]
                if not dtype.is_floating_point:
                    calls += [lambda x: x.cumsum(dim, dtype=dtype), lambda x: x.cumprod(dim, dtype=dtype)]
                for call in calls:
                    _both(lambda x, _: call(x), arr, dtype, device, None, layout)


def test_cumsum_inplace_long_rows(device, index):
    arr = values((2, 700), tl.int64, seed=9)
    x = tl.tensor(arr, device=device)
    x.cumsum_(1)
    np.testing.assert_array_equal(x.cpu().numpy(), np.cumsum(arr, 1))


def _scan_bound_check(got, arr, op, dtype):
    """A long scan against NumPy's float64 one: floats within the dtype's tolerance of the running sum of
    magnitudes (sums) or relatively (products of values near 1), integers exactly (int64 wraps alike)."""
    g = np.asarray(got.cpu()).astype(np.float64) if got.dtype.is_floating_point else np.asarray(got.cpu())
    if not dtype.is_floating_point:
        fn = np.cumsum if op == "sum" else np.cumprod
        np.testing.assert_array_equal(g, fn(arr.astype(np.int64), axis=-1))
        return
    a = arr.astype(np.float64)
    tol = _TOL[got.dtype.name]
    if op == "sum":
        ref, scale = np.cumsum(a, -1), np.cumsum(np.abs(a), -1)
        assert (np.abs(g - ref) <= tol * scale + tol).all(), np.abs(g - ref).max()
    else:
        ref = np.cumprod(a, -1)
        np.testing.assert_allclose(g, ref, rtol=4 * tol, atol=0)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_cumulative_long_rows_multi_block(device, index, dtype):
    """Few rows longer than two scan chunks (backends/cuda/reduction.py's SCAN_CHUNK) scan on many blocks
    (reduce, scan the chunk totals, rescan): contiguous, transposed (the scanned dim strided) and with an
    expanded (stride 0) row dim, lengths that end inside a chunk and inside a tile."""
    from tensorlab.backends.cuda.reduction import SCAN_CHUNK
    length = 2 * SCAN_CHUNK + 4096 // 3
    arr = values((3, length), dtype, seed=11, low=-2, high=3)
    if dtype.is_floating_point:
        arr = (1 + 0.002 * arr.astype(np.float32)).astype(dtype.np)
    for layout in ("contiguous", "transposed", "expanded"):
        if layout == "contiguous":
            x = tl.tensor(arr, dtype=dtype, device=device)
        elif layout == "transposed":
            x = transposed(arr, device, dtype)
        else:
            x = tl.tensor(arr[:1], dtype=dtype, device=device).expand(3, length)
        # the values as the dtype holds them (float16/bfloat16 rounded)
        src = np.asarray(x.cpu()).astype(np.float64) if dtype.is_floating_point else np.broadcast_to(
            arr[:1] if layout == "expanded" else arr, arr.shape)
        for op in ("sum", "prod"):
            _scan_bound_check(x.cumsum(1) if op == "sum" else x.cumprod(1), src, op, dtype)
        if not dtype.is_floating_point:  # integral scans in their own dtype (wrapping): as the CPU backend
            cpu = x.cpu()
            same(x.cumsum(1, dtype=dtype), cpu.cumsum(1, dtype=dtype))
            same(x.cumprod(1, dtype=dtype), cpu.cumprod(1, dtype=dtype))
    y = tl.tensor(arr[0], dtype=dtype, device=device)  # one 1-D row, in place
    want = np.asarray(y.cpu()).astype(np.float64) if dtype.is_floating_point else arr[0]
    if dtype.is_floating_point or dtype is tl.int64:
        y.cumsum_(0)
        _scan_bound_check(y, want, "sum", dtype)


def _extreme_values(shape, dtype, seed):
    """Few levels (ties everywhere); floats with NaNs in the first row only, so other rows keep their
    numbers (after a NaN the answer is the latest NaN), a 1-D row one NaN near its end."""
    arr = values(shape, dtype, seed=seed, low=-2, high=3)
    if dtype.is_floating_point:
        arr = np.round(arr.astype(np.float32) * 2).astype(dtype.np)
        row = arr if arr.ndim == 1 else arr.reshape(-1, shape[-1])[0]
        n = row.shape[0]
        row[[n - 2] if arr.ndim == 1 else [n // 3, n // 3 + 1, n - 2]] = np.nan
    return arr


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_cummax_cummin_match_cpu(device, index, dtype):
    """cummax/cummin's index scan (scan.cu scan_arg_*) on each launch shape: short rows and rows along a
    strided dim (a thread per row), long rows (a block per row), few rows longer than two scan chunks (a
    block per chunk: the chunks' (key, position) records, their scan, the rescan), 1-D; ties and NaNs as
    the CPU backend (torch's rules: the latest extreme, the latest NaN)."""
    from tensorlab.backends.cuda.reduction import SCAN_CHUNK
    long = 2 * SCAN_CHUNK + 4096 // 3
    for shape, dim in (((3, 5), 1), ((300, 2), 0), ((2, 300), 1), ((3, long), 1), ((long,), 0)):
        arr = _extreme_values(shape, dtype, seed=12)
        for layout in ("contiguous", "transposed") if len(shape) == 2 else ("contiguous",):
            for fn in (tl.cummax, tl.cummin):
                _both(lambda x, d: fn(x, d), arr, dtype, device, dim, layout)


@pytest.mark.torch_oracle
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8"])
def test_cummax_cummin_long_rows_match_torch(device, dtype):
    torch = pytest.importorskip("torch")
    from tensorlab.backends.cuda.reduction import SCAN_CHUNK
    dt = getattr(tl, dtype)
    for shape, dim in (((2 * SCAN_CHUNK + 77,), 0), ((2, 3 * SCAN_CHUNK + 5), 1), ((2, 700), 1)):
        arr = _extreme_values(shape, dt, seed=13)
        x = tl.tensor(arr, dtype=dt, device=device)
        tx = torch.tensor(np.asarray(x.cpu()).astype(np.float32) if dt is tl.bfloat16 else arr).to(getattr(torch, dtype))
        for name in ("cummax", "cummin"):
            got, want = getattr(tl, name)(x, dim), getattr(torch, name)(tx, dim)
            np.testing.assert_array_equal(np.asarray(got.indices.cpu()), want.indices.numpy())
            np.testing.assert_array_equal(np.asarray(got.values.cpu()).astype(np.float64),
                                          want.values.float().numpy().astype(np.float64))


def test_nonzero_tile_offsets_multi_block(device, monkeypatch):
    """The per-tile offsets of nonzero / boolean-mask indexing are the cumsum primitive's scan of the shifted
    tile counts: one row of tiles + 1 counts, scanned by many blocks when long (SCAN_CHUNK lowered here so a
    few hundred tiles take the multi-block path, as ~16M elements would)."""
    from tensorlab.backends.cuda import reduction
    if device == "cuda":
        monkeypatch.setattr(reduction, "SCAN_CHUNK", 64)
    rng = np.random.default_rng(14)
    arr = rng.random((300, 2048 + 17)) < 0.3
    arr[5] = False
    arr[7] = True
    x = tl.tensor(arr, device=device)
    np.testing.assert_array_equal(np.asarray(x.nonzero().cpu()), np.argwhere(arr))
    vals = tl.tensor(rng.standard_normal(arr.shape).astype(np.float32), device=device)
    np.testing.assert_array_equal(np.asarray(vals[x].cpu()), np.asarray(vals.cpu())[arr])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_softmax_rows_and_columns_match_cpu(device, index, dtype):
    for shape, dim in (((3, 1500), 1), ((40, 7), 0), ((40, 7), 1), ((5, 60, 3), 1), ((), 0)):
        arr = values(shape, dtype, seed=10)
        for layout in ("contiguous", "transposed"):
            _both(lambda x, d: tl.softmax(x, d), arr, dtype, device, dim, layout)
            _both(lambda x, d: tl.log_softmax(x, d), arr, dtype, device, dim, layout)
