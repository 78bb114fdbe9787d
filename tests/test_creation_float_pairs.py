"""float32/float16/bfloat16 arange and linspace without float64 on the device (kernels/creation.cu
arange_df / linspace_df, backends/range_params.py): the values of the double formula
float32(float64(float64(i * step) + start)) (linspace: torch's symmetric halves), bit for bit on the
CPU and on CUDA, except that they may differ by one subnormal step where a result is below 2^-126
(the range scaled by 2^-e, rounded, then scaled back: checked separately, within that step)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends import range_params as RP

DTYPES = [tl.float32, tl.float16, tl.bfloat16]
TINY = 2.0 ** -126


def _double_arange(start, step, j):
    with np.errstate(over="ignore", invalid="ignore"):
        return j.astype(np.float64) * step + start


def _double_linspace(start, end, n):
    i = np.arange(n, dtype=np.float64)
    if n == 1:
        return np.array([start], dtype=np.float64)
    step = (end - start) / (n - 1)
    return np.where(i < n // 2, start + step * i, end - step * (n - 1 - i))


def _ranges(seed, count):
    """(start, step, largest j) of decimal steps and their zero crossings, float32 midpoints, long
    ranges, random doubles and magnitudes near either end of float32's range."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        k = t % 6
        if k == 0:
            step = float(rng.choice([0.1, 0.2, 0.3, 0.05, 0.01, 0.001, 0.25, 0.7, 1 / 3, 0.15]))
            yield -int(rng.integers(1, 1000)) * step, step, 2500
        elif k == 1:
            yield float(np.float32(rng.uniform(1, 2))) + 2.0 ** -24, 2.0 ** -30 * int(rng.integers(1, 50)), 1 << 20
        elif k == 2:
            yield rng.standard_normal() * 100, rng.standard_normal() * 1e-3, 1 << 31
        elif k == 3:
            yield (rng.standard_normal() * 10.0 ** rng.integers(-5, 8), rng.standard_normal() * 10.0 ** rng.integers(-8, 3),
                   1 << 28)
        elif k == 4:
            s = 10.0 ** rng.integers(-37, 37)
            yield rng.standard_normal() * s, rng.standard_normal() * s * 1e-3, 1 << 20
        else:
            step = rng.uniform(0.01, 1)
            jj = int(rng.integers(1, 10000))
            yield -jj * step, step, 2 * jj + 2


def test_float_formula_is_the_double_formula_over_many_ranges():
    """~700,000 values of 360 ranges (j up to 2^31): equal to the double formula's float32 value,
    outside the subnormal range."""
    rng = np.random.default_rng(0)
    total = 0
    for start, step, jmax in _ranges(1, 360):
        j = np.unique(np.concatenate([rng.integers(0, jmax, 1500), np.arange(min(jmax, 500))])).astype(np.int64)
        e = RP.scale_exponent(start, start + float(j[-1]) * step, step)
        got = RP.affine_values(j, start, step, e)
        with np.errstate(over="ignore"):
            want = _double_arange(start, step, j).astype(np.float32)
        normal = np.abs(want) >= TINY
        np.testing.assert_array_equal(got[normal], want[normal], err_msg=f"start={start!r} step={step!r}")
        sub = ~normal
        assert np.all(np.abs(got[sub].astype(np.float64) - want[sub]) <= 2.0 ** -149), (start, step)
        total += len(j)
    assert total > 600_000


def test_subnormal_results_within_one_step():
    for start, step in ((2.8275906890292677e-37, -2.6814774287013244e-39), (1.8e-43, 2.07e-46), (-3e-39, 1e-41)):
        j = np.arange(400, dtype=np.int64)
        e = RP.scale_exponent(start, start + 399 * step, step)
        got = RP.affine_values(j, start, step, e).astype(np.float64)
        want = _double_arange(start, step, j).astype(np.float32).astype(np.float64)
        assert np.all(np.abs(got - want) <= 2.0 ** -149)


def _expected(dtype, vals64):
    """The double formula's value in dtype: float32 first, then dtype (the device cast's two roundings)."""
    with np.errstate(over="ignore"):
        f = vals64.astype(np.float32)
    return f if dtype is tl.float32 else tl.tensor(f).to(dtype).float().numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_arange_equals_the_double_formula(device, dtype):
    for start, end, step in ((-1, 1, 0.1), (-3, 3, 0.3), (0, 1, 0.01), (-5, 5, 0.5), (1e-3, 2.5, 7e-3),
                             (-0.7, 100.3, 1 / 3), (1e6, 1e6 + 50, 0.37), (5, -5, -0.2)):
        n = math.ceil((end - start) / step)
        got = tl.arange(start, end, step, dtype=dtype, device=device).float().cpu().numpy()
        want = _expected(dtype, _double_arange(start, step, np.arange(n)))
        np.testing.assert_array_equal(got, want, err_msg=f"arange({start}, {end}, {step})")
    for start, step in ((-1, 0.1), (-3, 0.3), (-2, 0.2), (-0.7, 0.07)):  # zero crossings: the double's residue
        want = np.float32(10 * step + start)  # 0.0, 0.0, 0.0, 1.1e-16
        assert tl.arange(start, 1, step, dtype=tl.float32, device=device)[10].item() == want


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linspace_equals_the_double_formula(device, dtype):
    for start, end, n in ((-1.0, 1.0, 21), (0.0, 1.0, 7), (-math.pi, math.pi, 1000), (3.0, -2.0, 11),
                          (1e-20, 1e-19, 33), (2.5, 2.5, 4), (7.0, 9.0, 1), (-1e30, 1e30, 9)):
        if dtype is tl.float16 and abs(end) > 6e4:
            continue
        got = tl.linspace(start, end, n, dtype=dtype, device=device).float().cpu().numpy()
        np.testing.assert_array_equal(got, _expected(dtype, _double_linspace(start, end, n)),
                                      err_msg=f"linspace({start}, {end}, {n})")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_same_bits_on_every_device_and_strided_out(device, dtype):
    """Random ranges (including scaled magnitudes and subnormal results) against the CPU twin's bits,
    written through a strided out= view."""
    for start, step, _ in _ranges(3, 24):
        n = 300
        if dtype is tl.float16 and max(abs(start), abs(start + n * step)) > 6e4:
            continue
        end = start + n * step
        nn = math.ceil((end - start) / step)
        e = RP.scale_exponent(start, start + (nn - 1) * step, step)
        want = RP.affine_values(np.arange(nn, dtype=np.int64), start, step, e)
        base = tl.zeros(2 * nn, dtype=dtype, device=device)
        tl.arange(start, end, step, dtype=dtype, out=base[::2])
        got = base[::2].float().cpu().numpy()
        np.testing.assert_array_equal(got, want if dtype is tl.float32 else tl.tensor(want).to(dtype).float().numpy())
    big = tl.arange(0, 3_000_000 * 0.37, 0.37, device=device).cpu().numpy()  # j past 2^21
    j = np.arange(big.shape[0], dtype=np.int64)
    np.testing.assert_array_equal(big, _double_arange(0.0, 0.37, j).astype(np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_both_index_types(device, index, dtype):
    """The int and long long instantiations (kernel_table rows) give the CPU twin's bits."""
    got = tl.arange(-2.0, 3.0, 0.3, dtype=dtype, device=device).float().cpu().numpy()
    want = RP.affine_values(np.arange(17, dtype=np.int64), -2.0, 0.3, 0)
    np.testing.assert_array_equal(got, want if dtype is tl.float32 else tl.tensor(want).to(dtype).float().numpy())
    got = tl.linspace(-1.5, 2.0, 12, dtype=dtype, device=device).float().cpu().numpy()
    np.testing.assert_array_equal(got, _expected(dtype, _double_linspace(-1.5, 2.0, 12)))


def test_non_finite_bounds_give_nan_on_every_device(device):
    for a, b in ((float("-inf"), float("inf")), (0.0, float("inf")), (float("nan"), 1.0), (float("inf"), 2.0)):
        got = tl.linspace(a, b, 5, device=device).cpu().numpy()
        assert np.isnan(got).all(), (a, b, got)
