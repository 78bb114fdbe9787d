"""cauchy_, log_normal_, geometric_ (ops/random_fills.py): distributions by Kolmogorov-Smirnov and
frequency tests at fixed seeds (the draws are a fixed function of the seed on every device, so the
verdicts cannot flake; the thresholds are far from the statistics' values), the generator contract,
equality across devices, dtypes and torch's parameter errors. Also the empty variants
(empty_permuted, new_empty_strided) against torch's strides."""
import math

import numpy as np
import pytest
from scipy import stats

import tensorlab as tl

N = 20000


def _draw(device, method, *args, seed=1234, dtype=tl.float64, n=N, **kw):
    g = tl.Generator(device=device).manual_seed(seed)
    x = tl.empty(n, dtype=dtype, device=device)
    r = getattr(x, method)(*args, generator=g, **kw)
    assert r is x
    return x.cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("median,sigma", [(0.0, 1.0), (-2.0, 0.5), (3.0, 4.0)])
def test_cauchy_distribution(device, median, sigma):
    v = _draw(device, "cauchy_", median, sigma)
    assert stats.kstest(v, stats.cauchy(loc=median, scale=sigma).cdf).pvalue > 1e-3
    assert abs(np.median(v) - median) < 0.05 * sigma


@pytest.mark.parametrize("mean,std", [(1.0, 2.0), (0.0, 0.25), (-1.0, 1.0)])
def test_log_normal_distribution(device, mean, std):
    v = _draw(device, "log_normal_", mean, std)
    assert (v > 0).all()
    assert stats.kstest(np.log(v), stats.norm(loc=mean, scale=std).cdf).pvalue > 1e-3
    assert abs(np.log(v).mean() - mean) < 5 * std / math.sqrt(N)


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_geometric_distribution(device, p):
    v = _draw(device, "geometric_", p)
    assert (v >= 1).all() and (v == np.round(v)).all()
    ks = np.arange(1, 40)
    emp = np.array([(v <= k).mean() for k in ks])
    cdf = 1 - (1 - p) ** ks
    assert np.abs(emp - cdf).max() < 0.02  # ~6 standard errors at N = 20000
    assert abs(v.mean() - 1 / p) < 5 * math.sqrt((1 - p) / p ** 2 / N)


def test_generator_reproducible_and_advancing(device):
    for method, args in (("cauchy_", ()), ("log_normal_", ()), ("geometric_", (0.4,))):
        a = _draw(device, method, *args, seed=7, n=100)
        b = _draw(device, method, *args, seed=7, n=100)
        np.testing.assert_array_equal(a, b)
        g = tl.Generator(device=device).manual_seed(7)
        x = tl.empty(100, dtype=tl.float64, device=device)
        getattr(x, method)(*args, generator=g)
        first = x.cpu().numpy().copy()
        getattr(x, method)(*args, generator=g)
        assert not np.array_equal(first, x.cpu().numpy())
        tl.manual_seed(3)
        y1 = getattr(tl.empty(50, device=device), method)(*args).cpu().numpy()
        tl.manual_seed(3)
        y2 = getattr(tl.empty(50, device=device), method)(*args).cpu().numpy()
        np.testing.assert_array_equal(y1, y2)


def test_same_numbers_on_every_device(device):
    """The Philox stream is the same on both backends: a CUDA draw equals the CPU draw of its seed."""
    for method, args in (("cauchy_", (1.0, 2.0)), ("log_normal_", (0.5, 0.5)), ("geometric_", (0.2,))):
        here = _draw(device, method, *args, seed=11, n=257)
        cpu = _draw("cpu", method, *args, seed=11, n=257)
        np.testing.assert_allclose(here, cpu, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_floating_dtypes_and_strided_targets(device, dtype):
    dt = getattr(tl, dtype)
    x = tl.zeros(6, 8, dtype=dt, device=device).t()  # a non-contiguous target is filled in place
    v0 = x._version
    x.log_normal_(0.0, 0.5)
    assert x._version > v0 and x.dtype is dt
    assert (x.float().cpu().numpy() > 0).all()
    y = tl.zeros(3, 5, dtype=dt, device=device)
    y[:, 1].cauchy_()
    assert (y[:, 0].float().cpu().numpy() == 0).all() and (y[:, 1].float().cpu().numpy() != 0).all()


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "float16", "float32"])
def test_geometric_any_numeric_dtype(device, dtype):
    x = tl.zeros(1000, dtype=getattr(tl, dtype), device=device).geometric_(0.5)
    v = x.float().cpu().numpy()
    assert (v >= 1).all() and abs(v.mean() - 2.0) < 0.25


def test_errors(device, torch):
    f, i = tl.zeros(3, device=device), tl.zeros(3, dtype=tl.int64, device=device)
    tf, ti = torch.zeros(3), torch.zeros(3, dtype=torch.int64)
    cases = [
        (lambda a, b: a.cauchy_(0, 0), RuntimeError, "sigma > 0.0"),
        (lambda a, b: a.cauchy_(0, -1), RuntimeError, "sigma > 0.0"),
        (lambda a, b: b.cauchy_(), RuntimeError, "floating point"),
        (lambda a, b: a.log_normal_(1, 0), RuntimeError, "std > 0.0"),
        (lambda a, b: b.log_normal_(), NotImplementedError, "Long"),
        (lambda a, b: a.geometric_(0), RuntimeError, "in \\(0, 1\\)"),
        (lambda a, b: a.geometric_(1), RuntimeError, "in \\(0, 1\\)"),
        (lambda a, b: a.geometric_(1.5), RuntimeError, "in \\(0, 1\\)"),
        (lambda a, b: a.bool().geometric_(0.5), NotImplementedError, "Bool"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc):
            fn(tf, ti)
        with pytest.raises(exc, match=msg):
            fn(f, i)
    assert f.cpu().numpy().tolist() == [0.0, 0.0, 0.0]
    other = "cpu" if device != "cpu" else None
    if other is None:
        with pytest.raises(TypeError, match="generator"):
            f.cauchy_(generator=3)
    else:
        with pytest.raises(RuntimeError, match="generator"):
            f.cauchy_(generator=tl.Generator(device="cpu"))
    leaf = tl.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError):
        leaf.geometric_(0.5)


# -- empty variants ------------------------------------------------------------------------------------
@pytest.mark.parametrize("size,perm", [((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,)), ((), ()),
                                       ((2, 0, 3), (1, 2, 0)), ((2, 3, 4, 5), (0, 2, 3, 1))])
def test_empty_permuted_strides(device, torch, size, perm):
    want = torch.empty_permuted(size, perm)
    got = tl.empty_permuted(size, perm, dtype=tl.float64, device=device)
    assert tuple(got.shape) == tuple(want.shape) and tuple(got.stride()) == tuple(want.stride())
    assert got.dtype is tl.float64 and got.device.type == device


def test_empty_permuted_errors(device, torch):
    for args, exc in ((((2, 3, 4), (0, 2)), RuntimeError), (((2, 3, 4), (0, 2, 2)), RuntimeError),
                      (((2, 3), (0, 2)), RuntimeError), (((2, 3), (-1, 0)), RuntimeError)):
        with pytest.raises(exc):
            torch.empty_permuted(*args)
        with pytest.raises(exc):
            tl.empty_permuted(*args, device=device)


def test_new_empty_strided(device, torch):
    x = tl.zeros(3, dtype=tl.float16, device=device)
    y = x.new_empty_strided((2, 3), (1, 2))
    want = torch.zeros(3, dtype=torch.float16).new_empty_strided((2, 3), (1, 2))
    assert tuple(y.stride()) == tuple(want.stride()) and y.dtype is tl.float16 and y.device == x.device
    z = x.new_empty_strided((4,), (2,), dtype=tl.int64, device="cpu", requires_grad=False)
    assert z.dtype is tl.int64 and z.device.type == "cpu" and tuple(z.stride()) == (2,)
    with pytest.raises(RuntimeError):
        x.new_empty_strided((2, 3), (1,))
