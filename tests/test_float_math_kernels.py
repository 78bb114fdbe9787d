"""Float math in the float kernels (issue 37 item 4), on every device:
- exact GELU and its gradient for float32 (CUDA: erfcf/erff, no float64) against torch's CPU
  float32 GELU and backward, and against the float64 definition where torch's own 1 + erf cancels;
- the float32 random math (backends/cpu/random_math.py, the twin of kernels/tensorlab/random_math.cuh)
  against float64 log/sin/cos of the same Philox words, and normal/exponential bit-identical on the
  CPU and on CUDA (float32, float16, bfloat16) over enough words to visit every quadrant and branch;
- float32 var/std/norm (Welford; the CPU accumulates in double, CUDA in float with an exact power-of-two
  scale: tests/test_scaled_norm_moments.py) against torch's float32 results, with a
  large mean (where a naive float32 sum of squares loses everything) and split reductions."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends.cpu import random as cpu_random
from tensorlab.backends.cpu import random_math as RM

FLOAT16ISH = [tl.float32, tl.float16, tl.bfloat16]


def _close(got, want, rtol, atol):
    """|got - want| <= rtol |want| + atol elementwise (atol may be an array); names the worst element."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    excess = np.abs(got - want) - (rtol * np.abs(want) + atol)
    i = int(np.argmax(excess))
    assert excess[i] <= 0, f"element {i}: got {got[i]!r}, want {want[i]!r}"


# -- GELU ----------------------------------------------------------------------------------------------
def _gelu_inputs():
    rng = np.random.default_rng(37)
    x = np.concatenate([np.linspace(-12, 8, 20001), rng.standard_normal(5000) * 3, [0.0, -0.0, 1e-30, -1e-30]])
    return x.astype(np.float32)


def test_gelu_float32_matches_torch(device, torch):
    x = _gelu_inputs()
    got = tl.nn.functional.gelu(tl.tensor(x, device=device)).cpu().numpy()
    want = torch.nn.functional.gelu(torch.tensor(x)).numpy()
    assert got.dtype == np.float32
    # torch's 0.5 x (1 + erf(x / sqrt 2)) in float32 loses up to |x| ulp(1) / 2 absolutely in the tail
    _close(got, want, 3e-6, 1e-6 * np.maximum(1, np.abs(x)))
    # the negative tail keeps its relative accuracy (torch's 1 + erf cancels there, ours does not)
    exact = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    tail = (x < -3) & (x > -9)
    np.testing.assert_allclose(got[tail], exact[tail], rtol=2e-5)


def test_gelu_backward_float32_matches_torch(device, torch):
    x = _gelu_inputs()
    g = np.random.default_rng(1).standard_normal(x.size).astype(np.float32)
    tx = torch.tensor(x).requires_grad_()
    torch.nn.functional.gelu(tx).backward(torch.tensor(g))
    lx = tl.tensor(x, device=device).requires_grad_()
    tl.nn.functional.gelu(lx).backward(tl.tensor(g, device=device))
    _close(lx.grad.cpu().numpy(), tx.grad.numpy(), 3e-6, 1e-6 * np.maximum(1, np.abs(x * g)))


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_gelu_16bit_matches_torch(device, torch, dtype):
    x = _gelu_inputs()[::7]
    got = tl.nn.functional.gelu(tl.tensor(x, dtype=dtype, device=device)).float().cpu().numpy()
    want = torch.nn.functional.gelu(torch.tensor(x).to(getattr(torch, dtype.name))).float().numpy()
    tol = {"float16": 1e-3, "bfloat16": 8e-3}[dtype.name]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_erf_float32_matches_torch(device, torch):
    x = _gelu_inputs()[::3] / 3
    got = tl.erf(tl.tensor(x, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, torch.erf(torch.tensor(x)).numpy(), rtol=2e-6, atol=2e-7)


# -- the float32 random math ------------------------------------------------------------------------------
def _words(n, seed=5):
    return cpu_random.philox_words(seed, 0, n)


def test_float32_log_is_within_an_ulp_of_float64():
    x = np.concatenate([(np.arange(1, 2 ** 16, dtype=np.float64) * 2.0 ** -16),
                        (2 ** 24 - (_words(1 << 16) >> 8).astype(np.float64)) * 2.0 ** -24, [2.0 ** -24, 1.0]])
    got = RM.log_pos(x.astype(np.float32)).astype(np.float64)
    want = np.log(x)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= 1.0 * np.maximum(ulp, 1e-45))
    assert got[-1] == 0.0


def test_float32_sincos_of_a_turn_is_within_two_ulps():
    w = np.concatenate([_words(1 << 16), np.arange(0, 2 ** 32, 2 ** 20, dtype=np.uint64).astype(np.uint32)])
    c, s = RM.sincos_turn(w)
    t = 2 * np.pi * (w >> 8).astype(np.float64) * 2.0 ** -24
    np.testing.assert_allclose(c, np.cos(t), rtol=0, atol=1.2e-7)
    np.testing.assert_allclose(s, np.sin(t), rtol=0, atol=1.2e-7)
    quarter = (w >> 8) % (1 << 22) == 0  # exact quarter turns give exact values
    np.testing.assert_array_equal(np.abs(c[quarter]) + np.abs(s[quarter]), 1.0)


def test_box_muller_and_exponential_against_float64_formulas():
    w = _words(1 << 16)
    z0, z1 = RM.box_muller(w[0::2], w[1::2])
    u0 = (w[0::2] >> 8).astype(np.float64) * 2.0 ** -24
    t = 2 * np.pi * (w[1::2] >> 8).astype(np.float64) * 2.0 ** -24
    r = np.sqrt(-2 * np.log(1 - u0))
    np.testing.assert_allclose(z0, r * np.cos(t), rtol=0, atol=1e-6)
    np.testing.assert_allclose(z1, r * np.sin(t), rtol=0, atol=1e-6)
    e = RM.neg_log_uniform(w)
    want = -np.log(((w >> 9).astype(np.float64) * 2 + 1) * 2.0 ** -24)
    np.testing.assert_allclose(e, want, rtol=2e-7)
    assert e.dtype == np.float32 and (e > 0).all() and np.isfinite(e).all()


def _draw(device, dtype, fill, n=1 << 15, seed=99):
    g = tl.Generator(device=device).manual_seed(seed)
    t = tl.empty(n, dtype=dtype, device=device)
    fill(t, g)
    return t.cpu().numpy(), g.get_offset()


FILLS = {
    "normal": lambda t, g: t.normal_(0.5, 2.0, generator=g),
    "randn": lambda t, g: t.normal_(generator=g),
    "exponential": lambda t, g: t.exponential_(1.5, generator=g),
    "uniform": lambda t, g: t.uniform_(-2.0, 3.0, generator=g),
    "log_normal": lambda t, g: t.log_normal_(0.0, 0.5, generator=g),
    "cauchy": lambda t, g: t.cauchy_(generator=g),
    "geometric": lambda t, g: t.geometric_(0.3, generator=g),
}


@pytest.mark.parametrize("name", sorted(FILLS))
@pytest.mark.parametrize("dtype", FLOAT16ISH, ids=str)
def test_float_samplers_are_bit_identical_on_cpu_and_cuda(device, dtype, name):
    """The CPU's float32 twin and the CUDA kernel give the same bits (on the CPU: the same call twice
    is reproducible and the statistics hold)."""
    a, oa = _draw("cpu", dtype, FILLS[name])
    b, ob = _draw(device, dtype, FILLS[name])
    assert oa == ob
    assert a.tobytes() == b.tobytes()
    v = a.astype(np.float64)
    if name == "randn":
        assert abs(v.mean()) < 0.03 and abs(v.std() - 1) < 0.02
    if name == "exponential":
        assert (v > 0).all() and abs(v.mean() - 1 / 1.5) < 0.02


def test_float32_normal_reads_the_words_as_documented():
    """randn element 2k/2k+1 = box_muller(W[2k], W[2k+1]) of the stream at the generator's offset."""
    a, _ = _draw("cpu", tl.float32, FILLS["randn"], n=1001)
    w = cpu_random.philox_words(99, 0, 1002)
    z0, z1 = RM.box_muller(w[0::2], w[1::2])
    np.testing.assert_array_equal(a, np.stack([z0, z1], axis=1).reshape(-1)[:1001])


# -- float32 var / std / norm ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((5, 37), 1), ((37, 5), 0), ((70000,), None), ((3, 40000), 1),
                                       ((40000, 3), 0)], ids=str)
def test_float32_moments_and_norm_match_torch(device, torch, shape, dim):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) + 1000.0).astype(np.float32)  # a large mean: Welford keeps the variance
    t, lx = torch.tensor(x), tl.tensor(x, device=device)
    kw = {} if dim is None else {"dim": dim}
    for name, call_t, call_l in (
            ("var", lambda v: v.var(**kw), lambda v: v.var(**kw)),
            ("std", lambda v: v.std(**kw, correction=0), lambda v: v.std(**kw, correction=0)),
            ("norm", lambda v: torch.linalg.vector_norm(v, **kw), lambda v: tl.linalg.vector_norm(v, **kw)),
            ("norm3", lambda v: torch.linalg.vector_norm(v, 3.0, **kw), lambda v: tl.linalg.vector_norm(v, 3.0, **kw))):
        got, want = call_l(lx), call_t(t)
        assert got.dtype is tl.float32, name
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2e-5, atol=0, err_msg=name)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16, tl.float64], ids=str)
def test_other_dtypes_moments_and_norm_match_torch(device, torch, dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 300)) * 2 + 3
    tt = torch.tensor(x).to(getattr(torch, dtype.name))
    lt = tl.tensor(x, dtype=dtype, device=device)
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}[dtype.name]
    for got, want in ((lt.var(1), tt.var(1)), (lt.std(0), tt.std(0)), (lt.norm(2, 1), tt.norm(2, 1))):
        assert got.dtype is dtype
        np.testing.assert_allclose(got.double().cpu().numpy(), want.double().numpy(), rtol=tol, atol=tol)
