"""Float kernels without FP64 (issue 37 item 4), on every device.

sin/cos/tan in float: CUDA's sinf/cosf/tanf reduce large arguments with an FP64 step, so the float kernels
use kernels/tensorlab/trig_float.cuh (an integer Payne-Hanek reduction, then sincospif): checked in ulps of
float32 against NumPy's float64 functions at the float32 inputs, over every magnitude up to 3e38, the
floats nearest multiples of pi/2 (where the reduction cancels), the path boundaries and the edges (signed
zeros, infinities, NaN); float16/bfloat16 against the CPU backend within one 16-bit rounding.

float64 data in a float kernel: the runtime-dtype (generic) kernel computing in float reads a float64
operand (a 0-dim float64 tensor beside float32) and writes a float64 out= by integer conversions of the bit
patterns (kernels/tensorlab/cast.cuh); checked bit for bit against the CPU backend at the conversion's
edges: ties to even, overflow to inf, float32 subnormals, float64 subnormals to zero, NaN, signed zeros."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import tensorlab as tl

_RNG = np.random.default_rng(3737)


def _trig_grid():
    mags = np.exp(_RNG.uniform(math.log(1e-8), math.log(3e38), 4000))
    near = np.arange(1, 2000) * (np.pi / 2)  # the float32 nearest k pi/2 (k up to 2000) and k up to 2^40
    near = np.concatenate([near, np.exp(_RNG.uniform(0, math.log(2.0 ** 40), 1500)).round() * (np.pi / 2)])
    edges = [0.0, 2.0 ** -12, 2.0 ** -12 * (1 - 2.0 ** -24), 0.78539818525, 0.7853981, 0.7853982, 2.0 ** 24,
             2.0 ** 24 - 1, 105615.0, 105616.0, 2.0 ** 127, 3.4028235e38, 1e-45, 1e-38]
    grid = np.concatenate([mags, near, edges, _RNG.uniform(-10, 10, 500)]).astype(np.float32)
    return np.concatenate([grid, -grid])


def _ulps(got, want64):
    """|got - want| in units of float32's last place at want (the subnormal spacing below float32's tiny)."""
    w = np.abs(want64)
    ulp = np.where(w >= np.finfo(np.float32).tiny, np.spacing(w.astype(np.float32)).astype(np.float64), 2.0 ** -149)
    return np.abs(got.astype(np.float64) - want64) / ulp


@pytest.mark.parametrize("name,max_ulps", [("sin", 2.0), ("cos", 2.0), ("tan", 4.0)])
def test_sin_cos_tan_float32_in_ulps(device, name, max_ulps):
    x = _trig_grid()
    got = getattr(tl, name)(tl.tensor(x, device=device)).cpu().numpy()
    want = getattr(np, name)(x.astype(np.float64))
    err = _ulps(got, want)
    worst = int(np.argmax(err))
    assert err.max() <= max_ulps, (name, float(x[worst]), float(got[worst]), float(want[worst]), float(err.max()))


def test_sin_cos_tan_edges(device):
    x = tl.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, -1e-30], device=device)
    s, c, t = (f(x).cpu().numpy() for f in (tl.sin, tl.cos, tl.tan))
    assert np.signbit(s[:2]).tolist() == [False, True] and np.signbit(t[:2]).tolist() == [False, True]
    assert s[:2].tolist() == [0.0, 0.0] and c[:2].tolist() == [1.0, 1.0]
    assert np.isnan(s[2:5]).all() and np.isnan(c[2:5]).all() and np.isnan(t[2:5]).all()
    assert s[5:].tolist() == [np.float32(1e-30), np.float32(-1e-30)] and t[5:].tolist() == s[5:].tolist()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_sin_cos_tan_16bit_against_the_cpu(device, name, dtype):
    dt = getattr(tl, dtype)
    x = tl.tensor(_trig_grid()[::7], dtype=dt)
    want = getattr(tl, name)(x).float().numpy()
    got = getattr(tl, name)(x.to(device)).cpu().float().numpy()
    rtol = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7  # one rounding of the 16-bit result
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6 if name != "tan" else 1e-3, equal_nan=True)


# float64 values at the edges of their conversion to float32 (and float32 ones to float64)
_F64_EDGES = [0.0, -0.0, 1.0, -2.5, 1e300, -1e300, 3.4028235677973366e38, 3.4028235e38 * (1 + 2.0 ** -25),
              1e-40, -1e-45, 7e-46, 1e-310, -1e-320, 5e-324, 1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24,
              1.0 + 2.0 ** -24 + 2.0 ** -50, 2.0 ** -126 * (1 - 2.0 ** -25), 2.0 ** -149 * 1.5, 2.0 ** -150,
              math.inf, -math.inf, math.nan, math.pi, 1 / 3]


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("value", _F64_EDGES, ids=repr)
def test_float32_with_a_0dim_float64_tensor_reads_it_exactly_as_the_cpu(device, value):
    """torch's promotion: float32 with a 0-dim float64 tensor computes in float32, the float64 operand rounded
    to float32 (the generic kernel on CUDA reads its bits and rounds in integers)."""
    a = np.asarray([0.0, -0.0, 1.0, 1e-40], dtype=np.float32)
    want = (tl.tensor(a) + tl.tensor(value, dtype=tl.float64)).numpy()
    got = (tl.tensor(a, device=device) + tl.tensor(value, dtype=tl.float64, device=device)).cpu().numpy()
    assert got.dtype == np.float32
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (got, want)
    assert (_bits(got)[~nan] == _bits(want)[~nan]).all(), (got, want)
    with np.errstate(over="ignore"):
        assert (want[~nan] == (a + np.float32(value))[~nan]).all()  # the CPU backend is NumPy's rounding


def test_float32_results_into_a_float64_out_and_predicates(device):
    """out= float64 of a float32 computation: float32's result widened (exact), bit for bit; a predicate into
    a float64 out= stores 1.0/0.0."""
    with np.errstate(over="ignore"):
        a = np.asarray(_F64_EDGES, dtype=np.float64).astype(np.float32)
    b = np.asarray([0.0, 0.0, 2.0 ** -24, 1.0, -1e-45, 1e-45, 3e38, 1e38] * 4)[:a.size].astype(np.float32)
    ta, tb = tl.tensor(a, device=device), tl.tensor(b, device=device)
    out = tl.empty(a.size, dtype=tl.float64, device=device)
    tl.add(ta, tb, out=out)
    with np.errstate(over="ignore", invalid="ignore"):
        want = (a + b).astype(np.float64)
    got = out.cpu().numpy()
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all() and (_bits(got)[~nan] == _bits(want)[~nan]).all(), (got, want)
    tl.sin(ta, out=out)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out.cpu().numpy(), np.sin(a.astype(np.float64)), rtol=3e-7, atol=0,
                                   equal_nan=True)
    tl.lt(ta, tb, out=out)
    assert out.cpu().numpy().tolist() == (a < b).astype(np.float64).tolist()


@pytest.mark.cuda
def test_float64_data_take_the_float_generic_kernel():
    """The cases above run in the float-compute generic kernel (not a float64 one) on CUDA."""
    from tensorlab import backends
    from tensorlab.backends.cuda import launch as K
    d = backends.cuda_diagnosis()
    if d is not None and os.environ.get("TENSORLAB_CUDA_EMULATION") != "1":
        pytest.skip(f"no CUDA: {d.what}")
    a = tl.ones(6, device="cuda")
    d = tl.tensor(0.25, dtype=tl.float64, device="cuda")
    out = tl.empty(6, dtype=tl.float64, device="cuda")

    def launched(fn):
        before = dict(K.LAUNCHES)
        fn()
        return {e for (s, e), v in K.LAUNCHES.items() if v != before.get((s, e), 0) and s == "elementwise.cu"}

    assert launched(lambda: a + d) == {"binary_kernel<tl::op::Add, float, int>"}
    assert launched(lambda: tl.add(a, a, out=out)) == {"binary_kernel<tl::op::Add, float, int>"}
    assert launched(lambda: tl.lt(a, a, out=out)) == {"binary_kernel<tl::op::Lt, float, int>"}
    assert out.cpu().tolist() == [0.0] * 6
