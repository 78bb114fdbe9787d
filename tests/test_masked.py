"""tl.masked (torch.masked's reductions and normalizations with mask=) against torch.masked on every
device: values and dtypes, fully masked slices (identity, NaN, -inf), broadcast masks, keepdim,
dtype=, empty dims, integer and bool inputs, float64 gradients, and torch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle

REDUCTIONS = ("sum", "prod", "amax", "amin", "mean", "norm", "var", "std", "logsumexp")
NORMALIZATIONS = ("softmax", "log_softmax", "softmin", "cumsum", "cumprod")


def _data(shape, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, shape).astype(dtype) if dtype != np.uint8 else rng.integers(0, 6, shape).astype(
            dtype)
    return rng.standard_normal(shape).astype(dtype)


def _mask(shape, seed=1):
    m = np.random.default_rng(seed).random(shape) > 0.4
    if len(shape) >= 2:
        m[0] = False  # a fully masked first row
        m[-1] = True
    return m


def _check(got, want):
    w = want.detach().numpy()
    g = got.detach().cpu().numpy()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    assert g.shape == w.shape
    if w.dtype.kind in "iub":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True)


def _both(torch, device, a, m):
    return (torch.tensor(a), torch.tensor(m)), (tl.tensor(a, device=device), tl.tensor(m, device=device))


def _call(mod, name, x, m, dim, **kw):
    f = getattr(mod, name)
    if name == "norm":
        return f(x, 2.0, dim, mask=m, **kw)
    return f(x, dim, mask=m, **kw)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_match_torch_with_fully_masked_rows(device, torch, name, dim, keepdim):
    a, m = _data((4, 5)), _mask((4, 5))
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    want = _call(torch.masked, name, ta, tm, dim, keepdim=keepdim)
    got = _call(tl.masked, name, x, xm, dim, keepdim=keepdim)
    _check(got, want)


@pytest.mark.parametrize("name", REDUCTIONS + ("argmax", "argmin", "median"))
def test_broadcast_mask_and_no_mask(device, torch, name):
    a = _data((3, 4, 5), 2)
    m = np.array([True, False, True, True, False])  # broadcast over the leading dims
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    dim = 2 if name in ("argmax", "argmin", "median") else (0, 2)
    _check(_call(tl.masked, name, x, xm, dim), _call(torch.masked, name, ta, tm, dim))
    _check(_call(tl.masked, name, x, None, dim), _call(torch.masked, name, ta, None, dim))


@pytest.mark.parametrize("name", NORMALIZATIONS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_normalizations_match_torch(device, torch, name, dim):
    a, m = _data((4, 5), 3), _mask((4, 5), 4)
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    _check(getattr(tl.masked, name)(x, dim, mask=xm), getattr(torch.masked, name)(ta, dim, mask=tm))
    _check(getattr(tl.masked, name)(x, dim, mask=xm, dtype=tl.float32),
           getattr(torch.masked, name)(ta, dim, mask=tm, dtype=torch.float32))


@pytest.mark.parametrize("ord", [1.0, 2.0, 3.5, math.inf, -math.inf, 0.0])
def test_norm_and_normalize_orders(device, torch, ord):
    a, m = _data((4, 5), 5), _mask((4, 5), 6)
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    _check(tl.masked.norm(x, ord, 1, mask=xm), torch.masked.norm(ta, ord, 1, mask=tm))
    if ord != 0.0:
        _check(tl.masked.normalize(x, ord, 1, mask=xm), torch.masked.normalize(ta, ord, 1, mask=tm))


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint8, np.bool_, np.int8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ("sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod"))
def test_integer_and_bool_inputs(device, torch, dt, name):
    a, m = _data((3, 4), 7, dt), _mask((3, 4), 8)
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    dim = 1
    try:
        want = getattr(torch.masked, name)(ta, dim, mask=tm)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            getattr(tl.masked, name)(x, dim, mask=xm)
        return
    _check(getattr(tl.masked, name)(x, dim, mask=xm), want)


@pytest.mark.parametrize("name", ("var", "std"))
def test_var_std_integer_input_correction_and_unbiased(device, torch, name):
    a, m = _data((4, 6), 9, np.int64), _mask((4, 6), 10)
    (ta, tm), (x, xm) = _both(torch, device, a, m)
    for kw in ({}, {"unbiased": False}, {"correction": 0}, {"correction": 2}):
        _check(getattr(tl.masked, name)(x, 1, mask=xm, **kw), getattr(torch.masked, name)(ta, 1, mask=tm, **kw))


def test_dtype_argument(device, torch):
    a, m = _data((3, 4), 11), _mask((3, 4), 12)
    (ta, tm), (x, xm) = _both(torch, device, a.astype(np.float32), m)
    for name in ("sum", "prod", "amax", "mean", "logsumexp", "argmax"):
        _check(getattr(tl.masked, name)(x, 1, mask=xm, dtype=tl.float64),
               getattr(torch.masked, name)(ta, 1, mask=tm, dtype=torch.float64))
    ia = _data((3, 4), 13, np.int32)
    _check(tl.masked.sum(tl.tensor(ia, device=device), 1, mask=xm, dtype=tl.int32),
           torch.masked.sum(torch.tensor(ia), 1, mask=tm, dtype=torch.int32))


def test_logaddexp_masks(device, torch):
    a, b = _data((3, 4), 14), _data((3, 4), 15)
    ma, mb = _mask((3, 4), 16), _mask((3, 4), 17)
    ta, tb, tma, tmb = (torch.tensor(v) for v in (a, b, ma, mb))
    x, y, xma, xmb = (tl.tensor(v, device=device) for v in (a, b, ma, mb))
    _check(tl.masked.logaddexp(x, y, input_mask=xma, other_mask=xmb),
           torch.masked.logaddexp(ta, tb, input_mask=tma, other_mask=tmb))
    _check(tl.masked.logaddexp(x, y), torch.masked.logaddexp(ta, tb))


def test_empty_and_zero_dim_inputs(device, torch):
    for shape, dim in (((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((), None)):
        a = np.zeros(shape)
        m = np.ones(shape, dtype=bool)
        (ta, tm), (x, xm) = _both(torch, device, a, m)
        for name in ("sum", "prod", "mean", "logsumexp", "norm"):
            try:
                want = _call(torch.masked, name, ta, tm, dim)
            except Exception as e:  # noqa: BLE001
                with pytest.raises(type(e)):
                    _call(tl.masked, name, x, xm, dim)
                continue
            _check(_call(tl.masked, name, x, xm, dim), want)


@pytest.mark.parametrize("name", ("sum", "prod", "amax", "mean", "norm", "var", "std", "logsumexp", "median"))
def test_gradients_match_torch(device, torch, name):
    a, m = _data((4, 5), 18), _mask((4, 5), 19)
    m[0] = True  # gradients where the output is finite
    ta = torch.tensor(a, requires_grad=True)
    x = tl.tensor(a, device=device, requires_grad=True)
    dim = 1
    want = _call(torch.masked, name, ta, torch.tensor(m), dim)
    got = _call(tl.masked, name, x, tl.tensor(m, device=device), dim)
    w = np.random.default_rng(0).standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * tl.tensor(w, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ("softmax", "log_softmax", "softmin", "cumsum", "cumprod"))
def test_normalization_gradcheck(device, name):
    a, m = _data((3, 4), 20), _mask((3, 4), 21)
    m[0] = True
    x = tl.tensor(a, device=device, requires_grad=True)
    xm = tl.tensor(m, device=device)
    # masked-out outputs (-inf for log_softmax) replaced by 0, as torch's gradcheck_wrapper_masked_operation
    assert tl.autograd.gradcheck(lambda t: tl.where(xm, getattr(tl.masked, name)(t, 1, mask=xm), 0.0), (x,))


def test_fully_masked_rules(device):
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    m = tl.tensor([[False, False], [True, False]], device=device)
    assert tl.masked.sum(x, 1, mask=m).tolist() == [0.0, 3.0]
    assert tl.masked.prod(x, 1, mask=m).tolist() == [1.0, 3.0]
    assert tl.masked.amax(x, 1, mask=m).tolist() == [-math.inf, 3.0]
    assert tl.masked.amin(x, 1, mask=m).tolist() == [math.inf, 3.0]
    assert tl.masked.logsumexp(x, 1, mask=m).tolist()[0] == -math.inf
    assert math.isnan(tl.masked.mean(x, 1, mask=m).tolist()[0])
    assert math.isnan(tl.masked.median(x, 1, mask=m).tolist()[0])
    assert all(math.isnan(v) for v in tl.masked.softmax(x, 1, mask=m).tolist()[0])


def test_bad_masks_and_arguments(device, torch):
    x = tl.ones((2, 3), device=device)
    with pytest.raises(IndexError, match="dimensionality higher"):
        tl.masked.sum(x, mask=tl.ones((1, 2, 3), dtype=tl.bool, device=device))
    with pytest.raises(RuntimeError):
        tl.masked.sum(x, mask=tl.ones((2, 2), dtype=tl.bool, device=device))
    with pytest.raises(torch_error(torch, lambda: torch.masked.mean(torch.ones(2, 3, dtype=torch.long), 1,
                                                                 mask=torch.ones(2, 3, dtype=torch.bool)))):
        tl.masked.mean(tl.ones((2, 3), dtype=tl.int64, device=device), 1, mask=tl.ones((2, 3), dtype=tl.bool,
                                                                                      device=device))
    with pytest.raises(ValueError, match="fully masked"):
        tl.masked.median(tl.ones((2, 3), dtype=tl.int64, device=device), 1,
                         mask=tl.tensor([[True] * 3, [False] * 3], device=device))
    with pytest.raises(IndexError):
        tl.masked.sum(x, 2, mask=tl.ones((2, 3), dtype=tl.bool, device=device))
    with pytest.raises(RuntimeError, match="multiple times"):
        tl.masked.sum(x, (1, -1), mask=tl.ones((2, 3), dtype=tl.bool, device=device))
    with pytest.raises(TypeError):
        tl.masked.sum([1.0, 2.0])
    # a non-bool mask is cast, as torch's
    np.testing.assert_array_equal(tl.masked.sum(x, 1, mask=tl.tensor([1, 0, 2], device=device)).cpu().numpy(),
                                  [2.0, 2.0])


def torch_error(torch, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e)
    raise AssertionError("torch did not raise")
