"""Reductions (sum, mean, prod, amax/amin, max/min, argmax/argmin, var/std, var_mean/std_mean,
norm, logsumexp, all/any, count_nonzero, cumsum/cumprod, softmax/log_softmax) against NumPy over dtypes, dims,
keepdim and memory layouts, and against torch (values, dtypes and exception types) through a
table. The helpers at the top are shared with test_linalg.py and test_shape_ops.py."""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle
from tensorlab import layout as L
from tensorlab.ops import registry
from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot

ALL_DTYPES = (tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16, tl.float32,
              tl.float64)
FLOATS = (tl.float16, tl.bfloat16, tl.float32, tl.float64)
LAYOUTS = ("contiguous", "transposed", "strided")
_TOLS = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


# -- shared helpers --------------------------------------------------------------------------------
def sample(shape, dtype, seed=0):
    """Values exactly representable in `dtype`: small integers, or normals rounded to the dtype."""
    rng = np.random.default_rng(seed)
    if dtype is tl.bool:
        return rng.random(shape) < 0.5
    if dtype is tl.uint8:
        return rng.integers(0, 10, shape).astype(np.uint8)
    if not dtype.is_floating_point:
        return rng.integers(-5, 6, shape).astype(dtype.np)
    return rng.standard_normal(shape).astype(dtype.np)


def make(arr, device, layout="contiguous", dtype=None):
    """A tensor holding `arr` in a chosen memory layout: contiguous, transposed (reversed strides)
    or strided (every other element of a larger buffer, at a storage offset)."""
    arr = np.asarray(arr)
    dtype = dtype or tl.dtypes.from_numpy_dtype(arr.dtype)
    if layout == "contiguous":
        return tl.tensor(arr, dtype=dtype, device=device)
    if layout == "transposed":
        base = tl.tensor(np.array(arr.T, order="C"), dtype=dtype, device=device)
        return base._view_of(L.make(arr.shape, tuple(reversed(base.stride())), 0))
    base = tl.tensor(np.stack([arr, arr], axis=-1), dtype=dtype, device=device)
    return base._view_of(L.make(arr.shape, base.stride()[:-1], 1))


def host(t):
    return np.asarray(t)


def check(actual, expected, dtype=None, rtol=None, atol=None):
    """Tensor vs NumPy: shape, dtype (when given), values within the dtype's tolerance, NaN==NaN."""
    a = host(actual)
    expected = np.asarray(expected)
    assert a.shape == expected.shape, (a.shape, expected.shape)
    if dtype is not None:
        assert actual.dtype is dtype, (actual.dtype, dtype)
    name = actual.dtype.name
    if rtol is None:
        rtol, atol = _TOLS.get(name, (0, 0))
    if rtol == 0:
        np.testing.assert_array_equal(a.astype(np.float64) if a.dtype == ml_dtypes.bfloat16 else a, expected)
    else:
        np.testing.assert_allclose(a.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True)


def to_torch(torch, x):
    if isinstance(x, np.ndarray):
        if x.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(x.copy())
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(torch, v) for v in x)
    return x


def to_tl(x, device, layout="contiguous"):
    if isinstance(x, np.ndarray):
        return make(x, device, layout)
    if isinstance(x, (list, tuple)):
        return type(x)(to_tl(v, device, layout) for v in x)
    return x


def _compare_torch(torch, actual, expected, path="result"):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), f"{path}: {actual!r} vs {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare_torch(torch, a, e, f"{path}[{i}]")
        return
    if not torch.is_tensor(expected):
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
        return
    tdt = str(expected.dtype).split(".")[-1]
    assert isinstance(actual, tl.Tensor), f"{path}: expected a tensor, got {type(actual).__name__}"
    assert actual.dtype.name == tdt, f"{path}: dtype {actual.dtype.name} != torch's {tdt}"
    e = expected.detach().float().numpy() if tdt == "bfloat16" else expected.detach().numpy()
    check(actual, e)


def expected_error_types(err):
    """torch's exception type, or RuntimeError where torch raises NotImplementedError (a dtype
    that its kernel lacks), which tensorlab reports as a RuntimeError naming the fix."""
    return RuntimeError if isinstance(err, NotImplementedError) else type(err)


def against_torch(torch, device, fn, *arrays, layout="contiguous"):
    """fn(module, *tensors) under torch and tensorlab: the same values and dtypes, or the same
    exception type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected, err = fn(torch, *to_torch(torch, arrays)), None
        except Exception as e:  # noqa: BLE001 - any torch error is the oracle
            expected, err = None, e
        args = to_tl(arrays, device, layout)
        if err is not None:
            with pytest.raises(Exception) as info:
                fn(tl, *args)
                settle(device)  # an index checked on a CUDA device raises at the next wait
            want = expected_error_types(err)
            assert isinstance(info.value, want), (f"torch raised {type(err).__name__}: {err}; tensorlab raised "
                                                  f"{type(info.value).__name__}: {info.value}")
            return
        actual = fn(tl, *args)
    _compare_torch(torch, actual, expected)


def view(t, shape, stride, offset=0):
    return t._view_of(L.make(shape, stride, offset))


# -- torch table -----------------------------------------------------------------------------------
_INF = float("inf")
REDUCTION_CALLS = {
    "sum": lambda m, x: m.sum(x),
    "sum_dim": lambda m, x: m.sum(x, 0),
    "sum_dims_keepdim": lambda m, x: m.sum(x, (0, -1), keepdim=True),
    "sum_dtype": lambda m, x: m.sum(x, 1, dtype=m.float64),
    "sum_dtype_int": lambda m, x: x.sum(dtype=m.int32),
    "sum_dim_list_empty": lambda m, x: m.sum(x, dim=[]),
    "prod": lambda m, x: m.prod(x, 1),
    "prod_full": lambda m, x: x.prod(),
    "mean": lambda m, x: m.mean(x),
    "mean_dims": lambda m, x: x.mean((0, 1), True),
    "mean_dtype": lambda m, x: m.mean(x, 0, dtype=m.float64),
    "amax": lambda m, x: m.amax(x, 1),
    "amin": lambda m, x: m.amin(x, (0, 1)),
    "amax_all_keepdim": lambda m, x: x.amax(keepdim=True),
    "max": lambda m, x: m.max(x),
    "max_dim": lambda m, x: m.max(x, 1),
    "max_dim_keepdim": lambda m, x: x.max(-1, True),
    "min_dim": lambda m, x: m.min(x, dim=0),
    "argmax": lambda m, x: m.argmax(x),
    "argmax_dim": lambda m, x: m.argmax(x, 1, keepdim=True),
    "argmin": lambda m, x: x.argmin(0),
    "argmin_keepdim_all": lambda m, x: m.argmin(x, keepdim=True),
    "var": lambda m, x: m.var(x, 1),
    "var_unbiased_positional": lambda m, x: x.var(False),
    "var_dims_keepdim": lambda m, x: m.var(x, (0, 1), keepdim=True, correction=2),
    "std": lambda m, x: m.std(x, correction=0),
    "std_unbiased": lambda m, x: x.std(0, False, True),
    "var_mean": lambda m, x: m.var_mean(x),
    "var_mean_dim": lambda m, x: m.var_mean(x, 1),
    "var_mean_unbiased_positional": lambda m, x: m.var_mean(x, False),
    "var_mean_dims_keepdim": lambda m, x: m.var_mean(x, (0, -1), keepdim=True, correction=2),
    "std_mean": lambda m, x: m.std_mean(x, 0),
    "std_mean_unbiased_keepdim": lambda m, x: m.std_mean(x, 1, False, True),
    "std_mean_correction": lambda m, x: m.std_mean(x, dim=None, correction=0),
    "norm": lambda m, x: m.norm(x),
    "norm_p1_dim": lambda m, x: m.norm(x, 1, 1),
    "norm_inf": lambda m, x: x.norm(_INF),
    "norm_ninf_dim": lambda m, x: x.norm(-_INF, dim=0),
    "norm_p0": lambda m, x: m.norm(x, 0),
    "norm_p3_5": lambda m, x: m.norm(x, 3.5, dim=0, keepdim=True),
    "norm_pneg": lambda m, x: m.norm(x, -1.5),
    "norm_fro_dims": lambda m, x: m.norm(x, "fro", (0, 1)),
    "norm_dtype": lambda m, x: m.norm(x, dtype=m.float64),
    "logsumexp": lambda m, x: m.logsumexp(x, 1),
    "logsumexp_dims": lambda m, x: x.logsumexp((0, 1), keepdim=True),
    "all": lambda m, x: m.all(x),
    "any_dim": lambda m, x: m.any(x, 1),
    "all_dims_keepdim": lambda m, x: x.all((0, 1), keepdim=True),
    "count_nonzero": lambda m, x: m.count_nonzero(x),
    "count_nonzero_dim": lambda m, x: m.count_nonzero(x, -1),
    "count_nonzero_dims": lambda m, x: x.count_nonzero((0, 1)),
    "cumsum": lambda m, x: m.cumsum(x, 1),
    "cumsum_dtype": lambda m, x: x.cumsum(0, dtype=m.float64),
    "cumprod": lambda m, x: m.cumprod(x, 0),
    "softmax": lambda m, x: m.softmax(x, 1),
    "softmax_dtype": lambda m, x: m.softmax(x, 0, dtype=m.float64),
    "log_softmax": lambda m, x: m.log_softmax(x, -1),
    "log_softmax_method": lambda m, x: x.log_softmax(0),
}

ERROR_CALLS = {
    "dup_dims": lambda m, x: m.sum(x, (0, 0)),
    "dup_dims_negative": lambda m, x: m.amax(x, (1, -1)),
    "dim_out_of_range": lambda m, x: m.sum(x, 2),
    "mean_int_dtype": lambda m, x: m.mean(x, dtype=m.int64),
    "amax_out_dtype": lambda m, x: m.amax(x, 0, out=m.empty(3, dtype=m.float64)),
    "max_out_dtype": lambda m, x: m.max(x, 0, out=(m.empty(3, dtype=m.float64), m.empty(3, dtype=m.int64))),
    "max_out_index_dtype": lambda m, x: m.max(x, 0, out=(m.empty(0), m.empty(0, dtype=m.int32))),
    "argmax_out_dtype": lambda m, x: m.argmax(x, 0, out=m.empty(3, dtype=m.int32)),
    "sum_out_wrong_dtype": lambda m, x: m.sum(x, 0, dtype=m.int64, out=m.empty(3, dtype=m.int32)),
    "mean_out_cast": lambda m, x: m.mean(x, 0, out=m.empty(3, dtype=m.int64)),
    "var_out_cast": lambda m, x: m.var(x, 0, out=m.empty(3, dtype=m.int64)),
    "norm_out_dtype": lambda m, x: m.norm(x, 2, 0, out=m.empty(3, dtype=m.float64)),
    "norm_int_dtype": lambda m, x: m.norm(x, dtype=m.int64),
    "norm_order": lambda m, x: m.norm(x, "abc"),
    "all_out_float": lambda m, x: m.all(x, 0, out=m.empty(3)),
    "logsumexp_out_int": lambda m, x: m.logsumexp(x, 0, out=m.empty(3, dtype=m.int64)),
    "cumsum_inplace_dtype": lambda m, x: x.clone().cumsum_(0, dtype=m.float64),
    "softmax_dim": lambda m, x: m.softmax(x, 2),
    "0d_dim_1": lambda m, x: m.sum(m.sum(x), 1),
    "norm_fro_three_dims": lambda m, x: m.norm(m.stack([x, x]), "fro", (0, 1, 2)),
    "var_mean_dup_dims": lambda m, x: m.var_mean(x, (0, 0)),
    "var_mean_unbiased_and_correction": lambda m, x: m.var_mean(x, 0, True, correction=1),
    "std_mean_dim_range": lambda m, x: m.std_mean(x, 2),
    "std_mean_int": lambda m, x: m.std_mean(x.long(), 0),
    "var_mean_out": lambda m, x: m.var_mean(x, 0, out=(m.empty(0), m.empty(0))),
}


@pytest.mark.parametrize("name", sorted(REDUCTION_CALLS))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_reductions_match_torch(device, torch, name, dtype):
    against_torch(torch, device, REDUCTION_CALLS[name], sample((3, 4), dtype))


@pytest.mark.parametrize("name", ["sum", "sum_dim", "prod_full", "mean", "max_dim", "argmax", "var", "norm",
                                  "var_mean_dim", "std_mean", "logsumexp", "all", "any_dim", "count_nonzero", "cumsum",
                                  "softmax"])
@pytest.mark.parametrize("dtype", (tl.float32, tl.int64, tl.float16), ids=lambda d: d.name)
def test_reductions_match_torch_on_views(device, torch, name, dtype):
    for layout in ("transposed", "strided"):
        against_torch(torch, device, REDUCTION_CALLS[name], sample((3, 4), dtype, seed=1), layout=layout)


@pytest.mark.parametrize("name", sorted(ERROR_CALLS))
def test_reduction_errors_match_torch(device, torch, name):
    against_torch(torch, device, ERROR_CALLS[name], sample((2, 3), tl.float32))


EMPTY_AND_SCALAR = {
    "sum": lambda m, x: m.sum(x), "sum_dim0": lambda m, x: m.sum(x, 0), "prod": lambda m, x: m.prod(x),
    "mean": lambda m, x: m.mean(x), "mean_dim0": lambda m, x: m.mean(x, 0), "amax": lambda m, x: m.amax(x),
    "amax_dim0": lambda m, x: m.amax(x, 0), "amax_dim_last": lambda m, x: m.amax(x, -1),
    "max": lambda m, x: m.max(x), "max_dim0": lambda m, x: m.max(x, 0), "max_dim_last": lambda m, x: m.max(x, -1),
    "min": lambda m, x: m.min(x), "argmax": lambda m, x: m.argmax(x), "argmin_dim0": lambda m, x: m.argmin(x, 0),
    "argmax_dim_last": lambda m, x: m.argmax(x, -1), "var": lambda m, x: m.var(x), "std_dim0": lambda m, x: m.std(x, 0),
    "var_mean": lambda m, x: m.var_mean(x), "std_mean_dim_last": lambda m, x: m.std_mean(x, -1),
    "norm": lambda m, x: m.norm(x), "norm_inf": lambda m, x: m.norm(x, _INF),
    "norm_ninf_dim0": lambda m, x: m.norm(x, -_INF, 0), "norm_inf_last": lambda m, x: m.norm(x, _INF, -1),
    "logsumexp0": lambda m, x: m.logsumexp(x, 0), "logsumexp_last": lambda m, x: m.logsumexp(x, -1),
    "all": lambda m, x: m.all(x), "any": lambda m, x: m.any(x), "count_nonzero": lambda m, x: m.count_nonzero(x),
    "cumsum": lambda m, x: m.cumsum(x, 0), "cumprod": lambda m, x: m.cumprod(x, -1),
    "softmax": lambda m, x: m.softmax(x, 0), "log_softmax": lambda m, x: m.log_softmax(x, -1),
    "max_dim0_keepdim": lambda m, x: m.max(x, 0, keepdim=True), "sum_keepdim": lambda m, x: m.sum(x, 0, True),
}


@pytest.mark.parametrize("name", sorted(EMPTY_AND_SCALAR))
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (), (1,)], ids=str)
def test_empty_and_zero_dim_match_torch(device, torch, name, shape):
    against_torch(torch, device, EMPTY_AND_SCALAR[name], sample(shape, tl.float32, seed=2))


def test_nan_handling_matches_torch(device, torch):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, -1.0, 0.0]], dtype=np.float32)
    for name in ("max", "max_dim", "min_dim", "argmax", "argmax_dim", "argmin", "amax", "amin", "sum", "mean",
                 "softmax", "logsumexp", "norm", "cumsum", "all", "count_nonzero"):
        against_torch(torch, device, REDUCTION_CALLS[name], x)


def test_logsumexp_infinities_match_torch(device, torch):
    x = np.array([[np.inf, 1.0], [-np.inf, -np.inf], [np.inf, -np.inf]], dtype=np.float32)
    against_torch(torch, device, lambda m, t: m.logsumexp(t, 1), x)


def test_binary_max_min_use_elementwise(device, torch):
    if not hasattr(tl, "maximum"):
        pytest.skip("elementwise maximum/minimum not implemented yet")
    a, b = sample((2, 3), tl.float32), sample((2, 3), tl.float32, seed=5)
    against_torch(torch, device, lambda m, x, y: m.max(x, y), a, b)
    against_torch(torch, device, lambda m, x, y: x.min(y), a, b)


# -- NumPy across dims, keepdim, layouts and dtypes ------------------------------------------------
def _acc(dtype):
    return np.float32 if dtype in (tl.float16, tl.bfloat16) else dtype.np


def _np_dims(dims, ndim):
    if dims is None:
        return tuple(range(ndim))
    return tuple(d % ndim for d in ((dims,) if isinstance(dims, int) else dims))


NP_REFS = {  # name -> (tensorlab call, NumPy reference over (array as float64 or exact, axis), result dtype)
    "sum": (lambda x, d, k: x.sum(d, k), lambda a, ax, k, dt: np.sum(a.astype(_acc_int(dt)), ax, keepdims=k),
            lambda dt: dt if dt.is_floating_point else tl.int64),
    "prod": (lambda x, d, k: tl.prod(x, d, k), lambda a, ax, k, dt: np.prod(a.astype(_acc_int(dt)), ax, keepdims=k),
             lambda dt: dt if dt.is_floating_point else tl.int64),
    "mean": (lambda x, d, k: x.mean(d, k), lambda a, ax, k, dt: np.mean(a.astype(np.float64), ax, keepdims=k),
             lambda dt: dt),
    "amax": (lambda x, d, k: x.amax(() if d is None else d, k),
             lambda a, ax, k, dt: np.max(a, ax, keepdims=k), lambda dt: dt),
    "amin": (lambda x, d, k: tl.amin(x, () if d is None else d, k),
             lambda a, ax, k, dt: np.min(a, ax, keepdims=k), lambda dt: dt),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda a, ax, k, dt: np.var(a.astype(np.float64), ax, ddof=1,
                                                                              keepdims=k), lambda dt: dt),
    "std0": (lambda x, d, k: tl.std(x, d, keepdim=k, correction=0),
             lambda a, ax, k, dt: np.std(a.astype(np.float64), ax, keepdims=k), lambda dt: dt),
    "norm2": (lambda x, d, k: x.norm(2, d, k),
              lambda a, ax, k, dt: np.sqrt(np.sum(a.astype(np.float64) ** 2, ax, keepdims=k)), lambda dt: dt),
    "norm1": (lambda x, d, k: tl.norm(x, 1, d, k),
              lambda a, ax, k, dt: np.sum(np.abs(a.astype(np.float64)), ax, keepdims=k), lambda dt: dt),
    "logsumexp": (lambda x, d, k: tl.logsumexp(x, () if d is None else d, k),
                  lambda a, ax, k, dt: np.log(np.sum(np.exp(a.astype(np.float64)), ax, keepdims=k)),
                  lambda dt: dt if dt.is_floating_point else tl.float32),
    "all": (lambda x, d, k: x.all(d, k), lambda a, ax, k, dt: np.all(a, ax, keepdims=k),
            lambda dt: tl.uint8 if dt is tl.uint8 else tl.bool),
    "any": (lambda x, d, k: tl.any(x, d, k), lambda a, ax, k, dt: np.any(a, ax, keepdims=k),
            lambda dt: tl.uint8 if dt is tl.uint8 else tl.bool),
}
FLOAT_ONLY = {"mean", "var", "std0", "norm2", "norm1"}


def _acc_int(dt):
    return np.float64 if dt.is_floating_point else np.int64


@pytest.mark.parametrize("name", sorted(NP_REFS))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_reductions_match_numpy(device, name, dtype):
    if name in FLOAT_ONLY and not dtype.is_floating_point:
        pytest.skip("floating point only (errors are compared with torch)")
    call, ref, out_dtype = NP_REFS[name]
    arr = sample((3, 4, 5), dtype, seed=3)
    if name == "prod" and dtype.is_floating_point:
        arr = (np.abs(arr.astype(np.float32)) * 0.5 + 0.75).astype(dtype.np)  # keep products in range
    exact = arr.astype(np.float64) if dtype in (tl.float16, tl.bfloat16) else arr
    for dims in (None, 0, -1, (0, 2), [-1, 1], (0, 1, 2)):
        for keepdim in (False, True):
            for layout in LAYOUTS:
                res = call(make(arr, device, layout), dims, keepdim)
                want = ref(exact, _np_dims(dims, 3), keepdim, dtype)
                check(res, want, out_dtype(dtype))


def test_zero_dim_tensor_reduces_over_dim_0_and_minus_1(device):
    x = tl.tensor(2.5, device=device)
    for dim in (None, 0, -1, (0,), (-1,)):
        check(x.sum(dim), np.float32(2.5), tl.float32)
        check(tl.amax(x, dim if dim is not None else ()), np.float32(2.5))
    r = x.max(0)
    assert r.values.item() == 2.5 and r.indices.item() == 0 and r.indices.shape == ()
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        x.sum(1)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -1))


def test_half_precision_accumulates_in_float32(device):
    x = tl.full((2000,), 0.1, dtype=tl.float16, device=device)
    assert x.sum().item() == 200.0  # float16 accumulation would stall far from 200
    assert host(x.cumsum(0))[-1] == 200.0
    assert abs(x.mean().item() - 0.1) < 1e-3
    b = tl.full((4096,), 1.0, dtype=tl.bfloat16, device=device)
    assert b.sum().item() == 4096.0  # bfloat16 accumulation would stop at 256
    assert tl.cumsum(b, 0).cpu().numpy().astype(np.float64)[-1] == 4096.0


def test_integer_sum_promotes_to_int64_without_overflow(device):
    x = tl.full((300,), 100, dtype=tl.int8, device=device)
    s = x.sum()
    assert s.dtype is tl.int64 and s.item() == 30000
    assert tl.cumsum(x, 0).dtype is tl.int64
    assert tl.tensor([True, True, False], device=device).sum().item() == 2


def test_sum_dtype_converts_before_adding(device):
    x = tl.tensor([1.5, 1.5, 2.7], device=device)
    r = x.sum(dtype=tl.int64)
    assert r.dtype is tl.int64 and r.item() == 4  # 1 + 1 + 2, as torch truncates first


def test_mean_of_integers_raises_like_torch(device):
    x = tl.tensor([1, 2, 3], device=device)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Long"):
        x.mean()
    check(x.mean(dtype=tl.float64), np.float64(2.0), tl.float64)


def test_empty_reductions_identities(device):
    e = tl.zeros((0, 3), device=device)
    assert e.sum().item() == 0 and e.prod().item() == 1 and math.isnan(e.mean().item())
    check(e.sum(0), np.zeros(3, np.float32), tl.float32)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0 to have non-zero size"):
        e.amax(0)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        e.max()


def test_max_with_dim_returns_named_tuple(device):
    x = make(np.array([[1.0, 7.0, 7.0], [4.0, 2.0, 9.0]], np.float32), device, "transposed")
    r = tl.max(x, 1)
    assert type(r).__name__ == "max" and isinstance(r, tuple)
    values, indices = r
    check(values, [7.0, 9.0], tl.float32)
    check(indices, [1, 2], tl.int64)  # the first of equal maxima
    assert r[0] is r.values and r[1] is r.indices
    assert "return_types.max(" in repr(r)
    m = x.min(0, keepdim=True)
    assert type(m).__name__ == "min"
    check(m.values, [[1.0, 2.0, 7.0]])
    check(m.indices, [[0, 1, 0]])


def test_var_std_correction_and_unbiased(device):
    arr = sample((4, 6), tl.float64, seed=4)
    x = make(arr, device)
    for corr in (0, 1, 2, 2.5):
        check(x.var(1, correction=corr), np.sum((arr - arr.mean(1, keepdims=True)) ** 2, 1) / (6 - corr))
    check(x.var(1, unbiased=False), np.var(arr, 1))
    check(x.std(1, True), np.std(arr, 1, ddof=1))
    check(x.var(False), np.var(arr))
    assert math.isnan(tl.tensor([1.0], device=device).var().item())
    with pytest.raises(TypeError):
        x.var(1, unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        tl.tensor([1, 2], device=device).std()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_var_mean_std_mean_match_numpy(device, dtype):
    arr = sample((3, 4, 5), dtype, seed=7)
    exact = arr.astype(np.float64)
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        for dims, axis in ((None, None), (1, 1), ((0, -1), (0, 2))):
            for keepdim in (False, True):
                for correction in (0, 1):
                    v, m = tl.var_mean(x, dims, keepdim=keepdim, correction=correction)
                    s, m2 = tl.std_mean(x, dims, keepdim=keepdim, correction=correction)
                    mean = np.mean(exact, axis=axis, keepdims=keepdim)
                    check(v, np.var(exact, axis=axis, ddof=correction, keepdims=keepdim), dtype)
                    check(s, np.std(exact, axis=axis, ddof=correction, keepdims=keepdim), dtype)
                    check(m, mean, dtype)
                    check(m2, mean, dtype)
    r = tl.var_mean(make(arr, device))
    assert type(r) is tuple and len(r) == 2  # torch returns a plain tuple, and has no Tensor.var_mean
    assert not hasattr(tl.Tensor, "var_mean") and not hasattr(tl.Tensor, "std_mean")


@pytest.mark.parametrize("p", [2, 1, _INF, -_INF, 0, 3.0, 0.5, -1.0, "fro"], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_norm_orders_match_numpy(device, p, dtype):
    arr = sample((3, 5), dtype, seed=6)
    arr[0, 0] = 0
    a = arr.astype(np.float64)
    order = 2 if p == "fro" else p
    for dim in (None, 1, (0, 1)):
        ax = _np_dims(dim, 2)
        if order == 0:
            want = np.count_nonzero(a, axis=ax).astype(np.float64)
        elif order == _INF:
            want = np.max(np.abs(a), axis=ax)
        elif order == -_INF:
            want = np.min(np.abs(a), axis=ax)
        else:
            with np.errstate(divide="ignore"):
                want = np.sum(np.abs(a) ** order, axis=ax) ** (1.0 / order)
        check(make(arr, device, "strided").norm(p, dim), want, dtype)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_sums_over_leading_dims(device, np_dtype):
    """sum/mean over the leading dims or the last dim of a contiguous float tensor (a bias
    gradient's g.sum(0), softmax's backward; the CPU takes one BLAS product with ones): float64
    reference, inf/NaN columns, -0.0 columns sum to +0.0 (torch), one row, empty columns."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((300, 7, 5)).astype(np_dtype)
    a[:, 0, 1] = -0.0
    a[5, 1, 2] = np.inf
    a[9, 2, 3] = np.nan
    a[3, 3, 4], a[4, 3, 4] = np.inf, -np.inf
    x = tl.tensor(a, device=device)
    w = a.astype(np.float64)
    tol = 2e-6 if np_dtype == np.float32 else 1e-13
    for dims in (0, (0, 1), 2, -1):
        got = host(x.sum(dims))
        want = w.sum(dims)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 30)
        np.testing.assert_allclose(host(x.mean(dims)), w.mean(dims), rtol=tol, atol=tol)
    s0 = host(x.sum(0))
    assert s0[0, 1] == 0 and not np.signbit(s0[0, 1])
    assert s0[1, 2] == np.inf and np.isnan(s0[2, 3]) and np.isnan(s0[3, 4])
    s2 = host(x.sum(-1, keepdim=True))
    assert s2.shape == (300, 7, 1) and s2[5, 1, 0] == np.inf and np.isnan(s2[9, 2, 0])
    assert s2[3, 3, 0] == np.inf and s2[4, 3, 0] == -np.inf
    one = tl.tensor(a[:1], device=device)
    np.testing.assert_array_equal(host(one.sum(0)), a[0])
    assert host(tl.zeros((4, 0), dtype=tl.float32, device=device).sum(0)).shape == (0,)


@pytest.mark.parametrize("p", [2, 1, _INF, 0, 3.0, 0.5], ids=str)
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.float16], ids=lambda d: d.name)
def test_foreach_norm_is_each_norm(device, p, dtype):
    """foreach_norm (clip_grad_norm_'s one call for the list) gives each tensor's norm exactly as
    norm() does, bit for bit: views, a 0-d tensor, an empty one, a large one (blocked path)."""
    from tensorlab.ops.reduction import foreach_norm
    ts = [make(sample((3, 5), dtype, seed=1), device, "strided"), make(sample((4,), dtype, seed=2), device),
          tl.tensor(-3.5, device=device).to(dtype), make(sample((2, 3, 4), dtype, seed=3), device, "transposed"),
          tl.from_numpy(np.random.default_rng(4).standard_normal(600_000).astype(dtype.np)).to(device)]
    if p != _INF:
        ts.append(tl.zeros((0, 3), dtype=dtype, device=device))
    got = foreach_norm(ts, p)
    assert got.shape == (len(ts),) and got.dtype == dtype and got.device == ts[0].device
    want = [t.norm(p) for t in ts]
    np.testing.assert_array_equal(host(got).view(np.uint8), np.stack([host(w) for w in want]).view(np.uint8))


def test_foreach_norm_refuses_what_norm_must_handle(device):
    from tensorlab.ops.reduction import foreach_norm
    a, b = tl.ones(3, device=device), tl.ones(3, dtype=tl.float64, device=device)
    with pytest.raises(RuntimeError, match=r"dtype Float on .*got Double.*call norm\(\) per tensor"):
        foreach_norm([a, b])
    with pytest.raises(RuntimeError, match="needs p >= 0"):
        foreach_norm([a], -1.0)
    with pytest.raises(RuntimeError, match="needs p >= 0"):
        foreach_norm([a, tl.ones(0, device=device)], _INF)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        foreach_norm([tl.ones(3, dtype=tl.int64, device=device)])
    with pytest.raises(TypeError, match="must be Tensor"):
        foreach_norm([a, 3.0])


def test_norm_rejects_nuc_and_integers(device):
    # the nuclear norm goes through tl.linalg's SVD (NumPy's LAPACK on the CPU, cuSOLVER on CUDA)
    assert tl.ones((2, 2), device=device).norm("nuc").item() == pytest.approx(2.0)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        tl.tensor([1, 2], device=device).norm()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        tl.zeros((0,), device=device).norm(_INF)


def test_argmax_flat_index_and_errors(device):
    arr = sample((3, 4), tl.float32, seed=7)
    x = make(arr, device, "transposed")
    assert x.argmax().item() == int(np.argmax(arr)) and x.argmin().item() == int(np.argmin(arr))
    assert x.argmax(keepdim=True).shape == (1, 1)
    with pytest.raises(RuntimeError, match="does not support bool"):
        tl.tensor([True], device=device).argmax()
    with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
        tl.zeros((0,), device=device).argmax()


def test_all_any_count_nonzero(device):
    arr = np.array([[0, 1, 2], [3, 0, 0]], np.uint8)
    x = make(arr, device, "strided")
    check(x.all(1), np.array([0, 0], np.uint8), tl.uint8)
    check(x.any(0), np.array([1, 1, 1], np.uint8), tl.uint8)
    f = make(arr.astype(np.float32), device)
    check(f.all(), np.bool_(False), tl.bool)
    check(tl.count_nonzero(f, (0, 1)), np.int64(3), tl.int64)
    check(tl.count_nonzero(f, 0), np.array([1, 1, 1]), tl.int64)
    assert tl.zeros((0,), device=device).all().item() is True
    assert tl.zeros((0,), device=device).any().item() is False
    nan = tl.tensor([float("nan")], device=device)
    assert nan.all().item() is True  # NaN is nonzero


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_cumsum_cumprod_match_numpy(device, dtype):
    arr = sample((3, 4), dtype, seed=8)
    acc = _acc(dtype) if dtype.is_floating_point else np.int64
    out_dt = dtype if dtype.is_floating_point else tl.int64
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        for dim in (0, 1, -1):
            check(x.cumsum(dim), np.cumsum(arr.astype(acc), dim).astype(out_dt.np), out_dt)
            check(tl.cumprod(x, dim), np.cumprod(arr.astype(acc), dim).astype(out_dt.np), out_dt)
    check(tl.cumsum(tl.tensor(3, device=device), 0), np.int64(3), tl.int64)


def test_cumsum_inplace(device):
    arr = np.array([[1, 2], [3, 4]], np.int32)
    x = make(arr, device)
    v = x._version
    assert x.cumsum_(0) is x
    check(x, np.cumsum(arr, 0).astype(np.int32), tl.int32)
    assert x._version == v + 1
    b = tl.tensor([True, False], device=device)
    snap = snapshot(b)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):  # torch: no bool kernel
        b.cumsum_(0)
    assert_unchanged(snap)
    with pytest.raises(RuntimeError, match="Bad in-place call"):
        x.cumprod_(0, dtype=tl.float32)
    assert x._version == v + 1


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_softmax_matches_numpy(device, dtype):
    arr = sample((3, 4, 5), dtype, seed=9)
    a = arr.astype(np.float64)
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        for dim in (0, 1, -1):
            e = np.exp(a - a.max(dim, keepdims=True))
            check(tl.softmax(x, dim), e / e.sum(dim, keepdims=True), dtype)
            check(x.log_softmax(dim), (a - a.max(dim, keepdims=True)) - np.log(e.sum(dim, keepdims=True)), dtype)


def test_softmax_is_stable_for_large_logits(device):
    x = tl.tensor([[1000.0, 1000.0, -1000.0], [1000.0, 0.0, -1000.0]], device=device)
    s = tl.softmax(x, 1)
    check(s, [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    ls = tl.log_softmax(x, 1)
    assert not np.isnan(host(ls)).any()
    check(ls, [[-math.log(2), -math.log(2), -2000 - math.log(2)], [0.0, -1000.0, -2000.0]])
    check(tl.logsumexp(x, 1), [1000 + math.log(2), 1000.0])
    h = tl.softmax(tl.tensor([60000.0, 60000.0], dtype=tl.float16, device=device), 0)
    check(h, [0.5, 0.5], tl.float16)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [9, 700])  # one call; a large input in row blocks on the CPU pool
def test_softmax_rows_of_every_kind(device, np_dtype, rows):
    """Rows that need the shift by their max (large logits, all below exp's range, +inf, all -inf,
    NaN) next to ordinary rows in the same call: each row as its float64 reference computed alone
    (softmax and log_softmax), whatever its neighbours are."""
    rng = np.random.default_rng(rows)
    a = (rng.standard_normal((rows, 1000)) * 4).astype(np_dtype)
    a[1] += 500            # exp overflows: needs the shift
    a[2] -= 300            # exp underflows everywhere: sum < 1
    a[3, 17] = np.inf
    a[4] = -np.inf
    a[5, 3] = np.nan
    a[6] = -np.inf
    a[6, 5] = 2.0          # a single finite entry among -inf
    a[7, :] = 0.0
    a[7, 0] = 80.0         # sum of exp(x) just past the no-shift range (float32)
    x = tl.tensor(a, device=device)
    w = a.astype(np.float64)
    with np.errstate(all="ignore"):
        m = w.max(1, keepdims=True)
        e = np.exp(w - m)
        ref = e / e.sum(1, keepdims=True)
        lref = (w - m) - np.log(e.sum(1, keepdims=True))
    f32 = np_dtype == np.float32
    # (log_softmax near 0: log(sum) carries the sum's relative rounding as an absolute error)
    cases = ((host(tl.softmax(x, 1)), ref, 1e-30), (host(tl.log_softmax(x, 1)), lref, 2e-6 if f32 else 1e-14))
    for got, want, atol in cases:
        assert got.dtype == np_dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2e-5 if f32 else 1e-12, atol=atol)
    # a row's result does not depend on the other rows (up to the BLAS sum's last bit)
    for r in range(8):
        alone = host(tl.softmax(tl.tensor(a[r:r + 1], device=device), 1))[0]
        np.testing.assert_allclose(host(tl.softmax(x, 1))[r], alone, rtol=1e-6 if np_dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("rows", [64, 1100])  # one call; a large input in row blocks on the CPU pool
def test_log_softmax_float32_accuracy_across_logit_scales(device, rows):
    """float32 log_softmax within a few ulps of max(|y|, 1) of the float64 result at every logit
    scale: the CPU's unshifted sums (log(sum) split into a float32 value and its remainder) below
    the exp-overflow range, the max-shifted path past it. torch measured on the same inputs: up
    to 4.0 such ulps (scale 20)."""
    rng = np.random.default_rng(rows)
    eps = np.finfo(np.float32).eps
    for scale in (0.1, 1.0, 5.0, 20.0, 40.0, 60.0, 69.0, 80.0, 200.0):
        a = (rng.standard_normal((rows, 1024)) * scale / 3).astype(np.float32)
        a[:, 0] += scale  # a clear winner at about `scale`
        w = a.astype(np.float64)
        want = w - w.max(1, keepdims=True)
        want -= np.log(np.exp(want).sum(1, keepdims=True))
        got = host(tl.log_softmax(tl.tensor(a, device=device), 1)).astype(np.float64)
        err = np.abs(got - want) / (np.maximum(np.abs(want), 1.0) * eps)
        assert err.max() <= 6.0, (scale, err.max())


def test_softmax_dtype_and_errors(device):
    x = tl.tensor([[1, 2], [3, 4]], device=device)
    with pytest.raises(RuntimeError, match="dtype=tensorlab.float32"):
        tl.softmax(x, 0)
    check(tl.softmax(x, 0, dtype=tl.float64), np.full((2, 2), 1.0) / (1 + np.exp(2.0)) *
          np.array([[1.0, 1.0], [np.exp(2.0), np.exp(2.0)]]), tl.float64)
    with pytest.raises(TypeError):
        tl.softmax(x)  # dim is required, as in torch.softmax


# -- out=, atomicity, registry -----------------------------------------------------------------------
def test_out_resizes_casts_and_refuses_bad_targets(device):
    x = make(sample((3, 4), tl.float32, seed=10), device)
    out = tl.empty(0, dtype=tl.float64, device=device)
    r = tl.sum(x, 1, out=out)
    assert r is out and out.shape == (3,) and out.dtype is tl.float64
    check(out, host(x).astype(np.float64).sum(1))
    v = out._version
    with pytest.warns(UserWarning, match="was resized"):
        tl.mean(x, 0, keepdim=True, out=out)
    assert out.shape == (1, 4) and out._version == v + 1
    bad = tl.zeros(4, dtype=tl.int64, device=device)
    snap = snapshot(bad)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tl.mean(x, 0, out=bad)
    with pytest.raises(RuntimeError, match="Expected the dtype for input and out to match"):
        tl.amax(x, 0, out=bad)
    assert_unchanged(snap)
    vals, idx = tl.empty(0, device=device), tl.empty(0, dtype=tl.int64, device=device)
    r = tl.max(x, 0, out=(vals, idx))
    assert r.values is vals and r.indices is idx and vals.shape == (4,)
    check(idx, np.argmax(host(x), 0))


def test_out_partially_overlapping_the_input_is_refused(device):
    base = tl.ones((4, 4), device=device)
    snap = snapshot(base)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        tl.sum(base, 0, out=view(base, (4,), (1,), 0))
    assert_unchanged(snap)


@pytest.mark.parametrize("call", [
    lambda x, o: tl.sum(x, 0, out=o),
    lambda x, o: tl.cumsum(x, 1, out=o),
    lambda x, o: tl.norm(x, 2, 1, out=o),
    lambda x, o: x.cumsum_(0),
], ids=["sum_out", "cumsum_out", "norm_out", "cumsum_"])
def test_failed_reductions_change_nothing(device, call):
    def setup():
        x = make(sample((3, 4), tl.float32, seed=11), device)
        return x, tl.zeros(0, device=device)

    x, o = setup()
    points = fault_points(lambda: call(x, o))
    assert points
    for kind, n in points:
        x, o = setup()
        snap = snapshot(x, o)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            call(x, o)
        assert_unchanged(snap)


def test_registry_rows_name_existing_primitives():
    from tensorlab.backends import cpu
    names = ("sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "norm",
             "logsumexp", "all", "any", "count_nonzero", "cumsum", "cumprod", "softmax", "log_softmax")
    for name in names:
        row = registry.REGISTRY[name]
        assert row.family == "reduction" and callable(getattr(cpu, row.primitive)), name
        assert row.primitive in cpu.reduction.__all__, name
        assert hasattr(tl, name) and hasattr(tl.Tensor, name), name


# -- property tests (hypothesis) ---------------------------------------------------------------------
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
_FIXTURE_CHECK = hypothesis.HealthCheck.function_scoped_fixture  # `device` is the same for every example


@st.composite
def _reduction_case(draw, min_size):
    """(shape, dims as given to tensorlab, the same dims as a NumPy axis tuple, keepdim, layout)."""
    nd = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(min_size, 4), min_size=nd, max_size=nd)))
    if nd == 0 or draw(st.booleans()):
        dims, axis = None, tuple(range(nd))
    else:
        axis = tuple(sorted(draw(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd))))
        dims = [d - nd if draw(st.booleans()) else d for d in axis]
    return shape, dims, axis, draw(st.booleans()), draw(st.sampled_from(LAYOUTS))


@hypothesis.settings(max_examples=60, deadline=None, suppress_health_check=[_FIXTURE_CHECK])
@hypothesis.given(case=_reduction_case(min_size=0))
def test_sum_prod_match_numpy_on_random_shapes(device, case):
    shape, dims, axis, keepdim, layout = case
    arr = sample(shape, tl.float64, seed=len(shape))
    x = make(arr, device, layout)
    check(x.sum(dims, keepdim), np.sum(arr, axis=axis, keepdims=keepdim), tl.float64)
    check(tl.prod(x, dims, keepdim), np.prod(arr, axis=axis, keepdims=keepdim), tl.float64)


@hypothesis.settings(max_examples=60, deadline=None, suppress_health_check=[_FIXTURE_CHECK])
@hypothesis.given(case=_reduction_case(min_size=1))
def test_mean_amax_var_match_numpy_on_random_shapes(device, case):
    shape, dims, axis, keepdim, layout = case
    arr = sample(shape, tl.float64, seed=len(shape) + 1)
    x = make(arr, device, layout)
    check(x.mean(dims, keepdim), np.mean(arr, axis=axis, keepdims=keepdim))
    check(tl.amax(x, dims or (), keepdim), np.max(arr, axis=axis, keepdims=keepdim))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        check(x.var(dims, keepdim=keepdim, correction=0), np.var(arr, axis=axis, keepdims=keepdim))
