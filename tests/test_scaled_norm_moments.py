"""float32/float16/bfloat16 norm, var and std accumulate in float with an exact power-of-two scale
(kernels/tensorlab/reduce.cuh: no FP64 in their CUDA kernels); the CPU backend accumulates in float64.
Both give the finite answer where squares or powers leave float's range (std([1e30, 1, 2, 3]) = 5e29,
norm([3e-25, 4e-25]) = 5e-25), checked here against NumPy float64 on every device, with

  tolerance: float32 2e-6 relative (a few ulps: float summation against the float64 one), float16
  2e-3, bfloat16 1.6e-2 (the result's own rounding); the generic-p norm float32 1e-5 (powf and the
  rescaling by the largest |x|); plus two float32 subnormal steps (2.8e-45) for subnormal results.

Inf/NaN, empty inputs and correction >= n follow torch (its CPU float32 results are the oracle)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

DTYPES = [tl.float32, tl.float16, tl.bfloat16]
RTOL = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}
P_RTOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}


def _np_dtype(dt):
    return tl.empty(0, dtype=dt).numpy().dtype


def _ref_norm(x, p, axis=None, keepdims=False):
    a = np.abs(x.astype(np.float64))
    if p == 2:
        m = np.max(a, axis=axis, keepdims=True) if a.size else np.zeros((1,) * a.ndim)
        m = np.where(m == 0, 1.0, m)  # scaled in float64 too: 1e200-sized squares stay finite
        return (np.sqrt(np.sum((a / m) ** 2, axis=axis, keepdims=True)) * m).reshape(
            np.sum(a, axis=axis, keepdims=keepdims).shape)
    if p == float("inf"):
        return np.max(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.count_nonzero(a, axis=axis, keepdims=keepdims).astype(np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _ref_var(x, axis=None, correction=1, keepdims=False):
    b = x.astype(np.float64)
    n = b.size if axis is None else np.prod([b.shape[d] for d in np.atleast_1d(axis)])
    d = b - b.mean(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(d * d, axis=axis, keepdims=keepdims) / max(n - correction, 0)


def _check(got, want, dt, rtol=None):
    assert got.dtype is dt
    g = got.cpu().double().numpy()
    with np.errstate(over="ignore"):  # a float64 result past the dtype's range is inf there
        w = np.asarray(want, dtype=np.float64).astype(_np_dtype(dt)).astype(np.float64)
    tol = RTOL[dt.name] if rtol is None else rtol
    tiny = float(np.finfo(np.float32).smallest_subnormal) if dt is tl.float32 else 0.0
    np.testing.assert_allclose(g, w, rtol=tol, atol=2 * tiny)  # a subnormal result: an ulp is 1.4e-45


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_far_range_values_give_the_finite_answer(device, dtype):
    big = dtype is not tl.float16  # float16 has no 1e30
    cases = [
        ("std", [1e30, 1.0, 2.0, 3.0] if big else [6e4, 1.0, 2.0, 3.0], {}),
        ("std", [1e-30, 2e-30, 3e-30, 4e-30] if big else [1e-6, 2e-6, 3e-6, 4e-6], {"correction": 0}),
        ("var", [1e18, -1e18, 3.0] if big else [200.0, -200.0, 3.0], {}),
        ("var", [3e38, -3e38] if big else [6e4, -6e4], {}),  # 1.8e77: inf as float32, as the reference
        ("norm", [3e20, 1.0] if big else [6e4, 1.0], {}),
        ("norm", [3e-25, 4e-25] if big else [3e-5, 4e-5], {}),
        ("norm", [1e-40, 2e-40, -3e-40] if big else [1e-7, 2e-7], {}),  # subnormal inputs
        ("norm", [2e38, 2e38, 1.0] if big else [5e4, 5e4], {}),  # 2.8e38 float32, inf float16
    ]
    for op, vals, kw in cases:
        x = np.array(vals, dtype=np.float64).astype(_np_dtype(dtype))
        t = tl.tensor(x, device=device)
        if op == "norm":
            _check(t.norm(), _ref_norm(x, 2), dtype)
            _check(tl.linalg.vector_norm(t), _ref_norm(x, 2), dtype)
        else:
            c = kw.get("correction", 1)
            v = _ref_var(x, correction=c)
            _check(getattr(t, op)(**kw), np.sqrt(v) if op == "std" else v, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [3.0, 0.5, 7.5, -1.0, -2.5, 1.0, float("inf"), 0.0], ids=str)
def test_other_p_past_the_range_of_their_powers(device, dtype, p):
    if dtype is tl.float16:
        x = np.array([6e3, 1.5e4, 1.0, 0.25], dtype=np.float16)
    else:
        x = np.array([1e13, 2e13, 1.0, 0.25], dtype=np.float32) if p > 0 else np.array([1e-30, 3e-30, 1.0],
                                                                                          dtype=np.float32)
        x = x.astype(_np_dtype(dtype))
    t = tl.tensor(x, device=device)
    _check(tl.linalg.vector_norm(t, p), _ref_norm(x, p), dtype, P_RTOL[dtype.name])


@pytest.mark.parametrize("dtype", DTYPES + [tl.float64], ids=str)
def test_rows_of_every_magnitude_over_dims(device, dtype):
    rng = np.random.default_rng(37)
    lo, hi = {"float16": (-3, 3), "float64": (-150, 150)}.get(dtype.name, (-30, 30))
    scales = 10.0 ** rng.integers(lo, hi, size=(12, 1, 1))
    x = (rng.standard_normal((12, 5, 67)) * scales + scales * rng.standard_normal((12, 1, 1)))
    x = x.astype(_np_dtype(dtype))
    t = tl.tensor(x, device=device)
    for dims in ((2,), (1, 2), (1,)):
        for keep in (False, True):
            for c in (0, 1, 2):
                v = _ref_var(x, dims, c, keep)
                _check(t.var(dims, correction=c, keepdim=keep), v, dtype)
                _check(t.std(dims, correction=c, keepdim=keep), np.sqrt(v), dtype)
            _check(t.norm(2, dims, keep), _ref_norm(x, 2, dims, keep), dtype)
            _check(tl.linalg.vector_norm(t, 3.0, dims, keep), _ref_norm(x, 3.0, dims, keep), dtype,
                   P_RTOL[dtype.name])


@pytest.mark.parametrize("dtype", [tl.float32, tl.bfloat16], ids=str)
def test_long_reductions_merge_scales(device, dtype):
    """70,000 and 3 x 40,000 elements: many threads' and split blocks' states with different scales
    merged (the largest values sit in one place so most partial states have a smaller scale)."""
    rng = np.random.default_rng(5)
    for shape, dim in (((70000,), None), ((3, 40000), 1), ((40000, 3), 0)):
        x = rng.standard_normal(shape) * 1e-20
        x.reshape(-1)[1234] = 3e25
        x.reshape(-1)[-7] = -2e25
        x = x.astype(_np_dtype(dtype))
        t = tl.tensor(x, device=device)
        kw = {} if dim is None else {"dim": dim}
        v = _ref_var(x, dim)
        _check(t.var(**kw), v, dtype)
        _check(t.std(**kw), np.sqrt(v), dtype)
        _check(t.norm(**kw) if dim is None else t.norm(2, dim), _ref_norm(x, 2, dim), dtype)
        vm = tl.var_mean(t, **kw)
        _check(vm[0], v, dtype)
        sm = tl.std_mean(t, **kw)
        _check(sm[0], np.sqrt(v), dtype)


def test_var_mean_std_mean_far_range(device):
    x = np.array([1e30, 1.0, 2.0, 3.0], dtype=np.float32)
    s, m = tl.std_mean(tl.tensor(x, device=device))
    _check(s, np.sqrt(_ref_var(x)), tl.float32)
    _check(m, x.astype(np.float64).mean(), tl.float32)
    v, m = tl.var_mean(tl.tensor(x[1:] * 1e-30, device=device), correction=0)
    _check(v, _ref_var(x[1:] * np.float32(1e-30), correction=0), tl.float32)


_SPECIAL = [[np.inf, 1.0, 2.0], [np.nan, 1.0], [np.inf, -np.inf], [np.inf, np.inf], [1.0, np.nan, np.inf],
            [0.0, 0.0, 0.0], [5.0], [0.0, 1.0, np.inf], [-0.0]]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_inf_nan_empty_and_correction_follow_torch(device, torch, dtype):
    tdt = getattr(torch, dtype.name)
    for vals in _SPECIAL:
        x = torch.tensor(vals, dtype=torch.float32).to(tdt)
        t = tl.tensor(np.array(vals, dtype=np.float32), device=device).to(dtype)
        for name, f_t, f_l in (
                ("var", lambda v: v.var(), lambda v: v.var()),
                ("var0", lambda v: v.var(correction=0), lambda v: v.var(correction=0)),
                ("std5", lambda v: v.std(correction=5), lambda v: v.std(correction=5)),
                ("norm2", lambda v: v.norm(), lambda v: v.norm()),
                ("norm1", lambda v: v.norm(1), lambda v: v.norm(1)),
                ("norm3", lambda v: v.norm(3), lambda v: v.norm(3)),
                ("norm-1", lambda v: v.norm(-1), lambda v: v.norm(-1)),
                ("norm0", lambda v: v.norm(0), lambda v: v.norm(0)),
                ("norminf", lambda v: v.norm(float("inf")), lambda v: v.norm(float("inf")))):
            want = float(f_t(x).float())
            got = float(f_l(t).float().cpu())
            if np.isnan(want) or np.isinf(want) or want == 0:
                assert (np.isnan(got) and np.isnan(want)) or got == want, (vals, name, got, want)
            else:
                assert got == pytest.approx(want, rel=RTOL[dtype.name]), (vals, name, got, want)
    e = tl.empty((0, 3), device=device, dtype=dtype)
    te = torch.empty((0, 3), dtype=tdt)
    for f in (lambda v: v.var(0), lambda v: v.std(1), lambda v: v.norm(2, 0), lambda v: v.norm(2.5, 1),
              lambda v: v.var()):
        want, got = f(te).float().numpy(), f(e).float().cpu().numpy()
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
