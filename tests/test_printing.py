"""Tensor repr: torch's formatting rules, checked against torch's own output when torch is installed
and against exact strings that need no torch."""
import math
import re

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import printing

nan, inf = math.nan, math.inf
_rng = np.random.default_rng(0)

# (data, dtype name or None): tl.tensor(data, dtype) vs torch.tensor(data, dtype)
CASES = [
    ([1.0, 2.0, 3.0], None), ([1.5, 2.25, -3.125], None), ([0.1, 100000.0], None), ([1e-5, 1.0], None),
    ([1e-4, 1.0], None), ([1000.0, 1.0], None), ([1000.5, 1.0], None), ([1e10], None), ([123456789.0], None),
    ([1e8, 1.0], None), ([1e-8, 1e8], None), ([-1.0, 0.0], None), ([-0.0], None), ([0.0, 0.0], None),
    ([nan, 1.0], None), ([inf, -inf, nan], None), ([nan, 0.5, -inf], None), ([nan, 1e-6, 2.0], None),
    ([1 / 3, 2 / 3], "float64"), ([1e300, 1e-300], "float64"), ([0.1, 0.2, 65504.0], "float16"),
    ([1.5, 3.14159, -2.0], "bfloat16"), ([1.0, 2.0], "float16"), ([[1.0, -2.5], [3.0, 4.0]], None),
    (3.0, None), (-2.5, None), (1e-7, None), (nan, None), (7, None), (True, None), (5, "uint8"), (2.5, "float64"),
    ([True, False], None), ([1, -20, 300], None), ([0, 255], "uint8"), ([-128, 127], "int8"),
    ([1, 2], "int32"), ([1, 2], "int16"), ([1, 0], "bool"), ([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], None),
    ([], None), (np.zeros((0, 3), dtype=np.float32), None), (np.zeros((2, 0, 3), dtype=np.int64), None),
    ([], "float16"), ([], "bool"),
    (np.arange(2000), None), (np.arange(2000, dtype=np.float32).reshape(40, 50), None),
    (np.arange(1001, dtype=np.float64), "float64"),
    (_rng.standard_normal((10, 10)).astype(np.float32), None),
    (_rng.standard_normal((20, 20, 20)).astype(np.float32), None),
    (_rng.standard_normal((2, 3, 4, 5)).astype(np.float32) * 1000, None),
    (np.arange(30, dtype=np.float32) * 1.5, None), (np.arange(40) ** 4, None),
    (np.arange(25, dtype=np.float16) * 100, "float16"), (_rng.integers(0, 2, (4, 30)).astype(bool), None),
    (np.array([1e-3, 1e3, 1e6], dtype=np.float32), None), (np.linspace(0, 1, 17, dtype=np.float32), None),
]


def _pair(torch, data, dtype):
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    x = tl.tensor(data, dtype=getattr(tl, dtype) if dtype else None)
    return x, t


_SUFFIX_BREAK = re.compile(r",\n *(?=(dtype|size|device|requires_grad|grad_fn)=)")


def _same(x, t):
    """Equal up to where the suffixes wrap: "tensorlab." is longer than "torch.", so a suffix may
    wrap onto a new line for us and not for torch (test_suffix_wrapping checks our wrapping)."""
    ours, theirs = repr(x), repr(t).replace("torch.", "tensorlab.")
    assert _SUFFIX_BREAK.sub(", ", ours) == _SUFFIX_BREAK.sub(", ", theirs), "\n" + ours + "\n" + theirs


@pytest.mark.parametrize("data,dtype", CASES, ids=[str(i) for i in range(len(CASES))])
def test_repr_matches_torch(torch, data, dtype):
    x, t = _pair(torch, data, dtype)
    _same(x, t)
    assert str(x) == repr(x)


@pytest.mark.parametrize("opts", [
    dict(precision=2), dict(precision=8), dict(threshold=5), dict(threshold=5, edgeitems=1),
    dict(threshold=5, edgeitems=0), dict(linewidth=40), dict(linewidth=10), dict(sci_mode=True),
    dict(sci_mode=False), dict(profile="short"), dict(profile="full"), dict(profile="full", precision=1),
])
def test_printoptions_match_torch(torch, opts):
    data = [[0.5, 1e-5, 123.25, -7.0], [1.0, 2.0, 3.0, 4.0]]
    samples = [(data, None), (np.arange(2000), None), ([1.0, 2.0, 3.0], None), ([0.12345678, 2.0], "float64"),
               (np.arange(24, dtype=np.float32).reshape(2, 3, 4), None), ([1e-5, 1.0], None), ([1, 2], "int32"),
               (np.arange(1200, dtype=np.float32).reshape(3, 20, 20) / 7, None)]
    torch.set_printoptions(**opts)
    tl.set_printoptions(**opts)
    try:
        assert tl.get_printoptions() == {k: getattr(printing.PRINT_OPTS, k) for k in tl.get_printoptions()}
        for data, dtype in samples:
            _same(*_pair(torch, data, dtype))
    finally:
        torch.set_printoptions(profile="default")
        tl.set_printoptions(profile="default")


def test_default_dtype_changes_the_suffix(torch):
    torch.set_default_dtype(torch.float64)
    tl.set_default_dtype(tl.float64)
    try:
        for data, dtype in [([1.0, 2.5], None), ([1.0, 2.5], "float32"), ([], "float32"), ([], None), ([1, 2], None)]:
            _same(*_pair(torch, data, dtype))
    finally:
        torch.set_default_dtype(torch.float32)


def test_requires_grad_matches_torch(torch):
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    _same(x, torch.tensor([1.0, 2.0], requires_grad=True))


def test_suffix_wrapping():
    """torch's rule: a suffix goes on a new line when the last line (plus 2) and ", suffix" pass linewidth."""
    x = tl.tensor(np.arange(1001, dtype=np.float64))
    assert repr(x) == ("tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.],\n"
                       "       dtype=tensorlab.float64)")
    y = tl.tensor(np.arange(6) * 1000.5, dtype=tl.float64, requires_grad=True)
    assert repr(y) == ("tensor([   0.0000, 1000.5000, 2001.0000, 3001.5000, 4002.0000, 5002.5000],\n"
                       "       dtype=tensorlab.float64, requires_grad=True)")
    with tl.printoptions(linewidth=60):
        z = tl.tensor(np.arange(3) * 100.25, dtype=tl.float64, requires_grad=True)
        assert repr(z) == ("tensor([  0.0000, 100.2500, 200.5000],\n"
                           "       dtype=tensorlab.float64, requires_grad=True)")


# -- exact strings, no torch needed -------------------------------------------------------------------
def test_exact_strings(device):
    def r(data, dtype=None):
        return repr(tl.tensor(data, dtype=dtype, device="cpu"))

    assert r([1.0, 2.0, 3.0]) == "tensor([1., 2., 3.])"
    assert r(3.0) == "tensor(3.)"
    assert r(7) == "tensor(7)"
    assert r([1.5, -2.25]) == "tensor([ 1.5000, -2.2500])"
    assert r([1e-5, 1.0]) == "tensor([1.0000e-05, 1.0000e+00])"
    assert r([nan, 1.0, inf]) == "tensor([nan, 1., inf])"
    assert r([True, False]) == "tensor([ True, False])"
    assert r([[1, 2], [3, 4]]) == "tensor([[1, 2],\n        [3, 4]])"
    assert r([0.1, 0.25], tl.float16) == "tensor([0.1000, 0.2500], dtype=tensorlab.float16)"
    assert r([1, 2], tl.uint8) == "tensor([1, 2], dtype=tensorlab.uint8)"
    assert r([]) == "tensor([])"
    assert r(np.zeros((0, 3), dtype=np.float32)) == "tensor([], size=(0, 3))"
    assert r(np.zeros(0, dtype=np.int64)) == "tensor([], dtype=tensorlab.int64)"
    assert r(np.arange(12.0, dtype=np.float32).reshape(2, 2, 3)) == (
        "tensor([[[ 0.,  1.,  2.],\n"
        "         [ 3.,  4.,  5.]],\n"
        "\n"
        "        [[ 6.,  7.,  8.],\n"
        "         [ 9., 10., 11.]]])")
    assert r(np.arange(3000, dtype=np.float32)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 2.9970e+03, 2.9980e+03,\n"
        "        2.9990e+03])")
    assert repr(tl.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"


def test_device_suffix(device):
    x = tl.tensor([1.0, 2.0], device=device)
    want = "tensor([1., 2.])" if device == "cpu" else f"tensor([1., 2.], device='{x.device}')"
    assert repr(x) == want


def test_grad_fn_suffix():
    class AddBackward0:
        def name(self):
            return "AddBackward0"

    x = tl.tensor([2.0, 2.0])
    x._requires_grad = True
    x._grad_fn = AddBackward0()
    assert repr(x) == "tensor([2., 2.], grad_fn=<AddBackward0>)"


def test_set_printoptions_and_context_manager():
    try:
        tl.set_printoptions(threshold=5)
        assert repr(tl.tensor(np.arange(10))) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
        tl.set_printoptions(precision=2)
        assert repr(tl.tensor([1.12345])) == "tensor([1.12])"
        with tl.printoptions(sci_mode=True):
            assert repr(tl.tensor([1.5])) == "tensor([1.50e+00])"
        assert repr(tl.tensor([1.5])) == "tensor([1.50])"
        tl.set_printoptions(edgeitems=0)
        assert repr(tl.tensor(np.arange(10))) == "tensor([...], size=(10,))"
        with pytest.raises(ValueError, match="profile"):
            tl.set_printoptions(profile="long")
    finally:
        tl.set_printoptions(profile="default")
    assert repr(tl.tensor([1.12345])) == "tensor([1.1235])"


def test_random_arrays_match_torch(torch):
    """Shapes, dtypes and magnitudes drawn at random (fixed seed), including nan/inf and summaries."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        shape = tuple(rng.integers(1, 7, size=rng.integers(0, 4)))
        if rng.random() < 0.1:
            shape = (rng.integers(900, 1400),)
        dtype = rng.choice(["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
        vals = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 9)
        if rng.random() < 0.3:
            vals = np.round(vals)
        if dtype in ("float32", "float64") and vals.size and rng.random() < 0.2:
            vals.flat[0] = rng.choice([np.nan, np.inf, -np.inf])
        if dtype == "bool":
            data = vals > 0
        elif dtype in ("int64", "int32", "uint8"):
            data = np.abs(np.nan_to_num(vals)).astype(np.int64) % (200 if dtype == "uint8" else 10 ** 6)
        elif dtype == "bfloat16":
            data = vals.astype(np.float32)
        else:
            with np.errstate(over="ignore"):  # float16 overflows to inf: a case worth printing too
                data = vals.astype(dtype)
        _same(*_pair(torch, data, str(dtype)))
