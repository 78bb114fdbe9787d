"""The cases the random-program fuzzer found (issue "Numerics and semantics found by 218,915 random
programs against torch"), one by one: the value torch's documented rule gives, checked on every
device, and torch itself as the oracle where it is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl


def _run(lib, code, device="cpu"):
    """(kind, value): 'ok' and the result as a list, or the exception's class name."""
    try:
        r = eval(code, {"m": lib, "dev": device, "math": math})  # noqa: S307 - the cases below, written here
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    if hasattr(r, "tolist"):
        return "ok", (r.float() if str(r.dtype).endswith("bfloat16") else r).tolist()
    return "ok", r


# -- operands rounded to a float16/bfloat16 common dtype before the float32 arithmetic ---------------
ROUNDING = [
    # (code, the right value: torch's rule of casting every operand to the common dtype first)
    ("m.tensor([3.75], dtype=m.bfloat16, device=dev).remainder(0.001)", [6.103515625e-05]),
    ("m.exp(m.ones(1, dtype=m.bfloat16, device=dev), out=m.zeros(1, device=dev))", [2.71875]),
    ("m.tensor([-1e-40], dtype=m.bfloat16, device=dev).le(m.tensor(-1e-40))", [True]),
    ("m.tensor([1.], dtype=m.float16, device=dev) + m.tensor(1e-4)", [1.0]),
    ("m.tensor([1.], dtype=m.float16, device=dev).lerp(m.tensor([2.], dtype=m.float16, device=dev), 0.3333)",
     [1.3330078125]),
    ("m.tensor([2147483647], dtype=m.int32, device=dev).to(m.float16)", [math.inf]),
]


@pytest.mark.parametrize("code,want", ROUNDING)
def test_operands_are_rounded_to_a_half_common_dtype(device, code, want):
    kind, got = _run(tl, code, device)
    assert kind == "ok", got
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))


def test_int_by_half_divides_the_rounded_operand(device):
    # int32 2**31-1 rounds to float16 inf before the division (NaN: inf - fmod(inf, b) is NaN in torch's
    # floor division formula, as in NumPy's)
    a = tl.tensor([2147483647], dtype=tl.int32, device=device)
    b = tl.tensor([3.75], dtype=tl.float16, device=device)
    assert (a / b).tolist() == [math.inf]
    assert math.isnan((a // b).item())


# -- reductions: dtype= casts the input first; float32 moments without overflow ---------------------
def test_reduction_dtype_casts_the_input_first(device):
    x = tl.tensor([65536.0, -40.0], device=device)
    assert x.sum(dtype=tl.float16).item() == math.inf          # torch's docs: the input is cast first
    assert x.cumsum(0, dtype=tl.float16).tolist() == [math.inf, math.inf]
    y = tl.tensor([1e5, 1e-3], device=device)
    assert y.prod(dtype=tl.float16).item() == math.inf
    assert y.cumprod(0, dtype=tl.float16).tolist() == [math.inf, math.inf]
    assert x.mean(dtype=tl.float16).item() == 32752.0           # mean computes, then casts (torch)
    assert tl.tensor([200, 100], device=device).sum(dtype=tl.int8).item() == 44  # wraps after the cast
    g = tl.tensor([1.0, 2.0], device=device, requires_grad=True)
    g.cumprod(0, dtype=tl.float64).sum().backward()
    assert g.grad.tolist() == [3.0, 1.0] and g.grad.dtype is tl.float32


def test_moments_and_norms_do_not_overflow_float32(device):
    x = tl.tensor([1e30, 1.0, 2.0, 3.0], device=device)
    assert math.isclose(x.std().item(), 5e29, rel_tol=1e-6)
    assert x.var().item() == math.inf                           # the variance itself is past float32
    v, m = tl.std_mean(x)
    assert math.isclose(v.item(), 5e29, rel_tol=1e-6) and math.isclose(m.item(), 2.5e29, rel_tol=1e-6)
    assert math.isclose(tl.tensor([3e20], device=device).norm().item(), 3e20, rel_tol=1e-6)
    assert math.isclose(tl.tensor([[3e20, 4e20]], device=device).norm(dim=1).item(), 5e20, rel_tol=1e-6)


# -- bool indices are advanced ----------------------------------------------------------------------
def test_bool_index_copies_and_false_writes_nothing(device):
    x = tl.zeros(3, device=device)
    x[True].add_(1)
    assert x.tolist() == [0.0] * 3
    x[False] = 5
    assert x._version == 0
    x[True] = 2
    assert x.tolist() == [2.0] * 3 and x._version == 1


# -- checks torch makes ------------------------------------------------------------------------------
REFUSED = [
    ("m.zeros(3, 0, 3, device=dev).copy_(m.zeros(2, 3, 0, 3, device=dev))", "RuntimeError",
     "doesn't match the broadcast shape"),
    ("m.tensor(1., device=dev).flip(2)", "IndexError", "Dimension out of range"),
    ("m.full_like(m.zeros(3, dtype=m.float16, device=dev), 1e30)", "RuntimeError", "without overflow"),
    ("m.zeros(2, device=dev).index_fill_(0, m.tensor([0], device=dev), 1e300)", "RuntimeError", "without overflow"),
    ("m.zeros(3, device=dev).__setitem__(m.tensor([0], device=dev), m.tensor([1.], dtype=m.float64, device=dev))",
     "RuntimeError", "Index put requires the source and destination dtypes match"),
    ("m.tensor([True, False], device=dev).topk(1)", "RuntimeError", "topk does not support bool"),
    ("m.abs(m.tensor([1., -2.], device=dev), out=m.zeros(2, dtype=m.float64, device=dev))", "RuntimeError",
     "Found dtype Double but expected Float"),
    ("m.floor(m.tensor([1.5], device=dev), out=m.zeros(1, dtype=m.float64, device=dev))", "RuntimeError",
     "Found dtype Double but expected Float"),
    ("m.where(m.tensor([True], device=dev), m.ones(1, device=dev), m.ones(1, device=dev), "
     "out=m.zeros(1, dtype=m.float64, device=dev))", "RuntimeError", "Expected out type to be Float but got Double"),
    ("m.relu(m.ones(1, device=dev), out=m.ones(1, device=dev))", "TypeError", "unexpected keyword argument 'out'"),
    ("m.clamp(m.tensor([1.], device=dev), m.tensor([0.], device=dev), 2)", "TypeError",
     "received an invalid combination of arguments"),
    ("m.softmax(m.zeros(2, device=dev), 0, dtype=m.int64)", "NotImplementedError", "not implemented for 'Long'"),
    ("m.tensor([2], dtype=m.int8, device=dev).pow_(300)", "RuntimeError", "without overflow"),
    ("m.ones(3, dtype=m.bool, device=dev).cumsum_(0)", "NotImplementedError", "not implemented for 'Bool'"),
]


@pytest.mark.parametrize("code,kind,words", REFUSED)
def test_refused_as_torch_refuses(device, code, kind, words):
    got_kind, msg = _run(tl, code, device)
    assert got_kind == kind or (kind == "RuntimeError" and got_kind == "IndexOutOfRangeError"), (got_kind, msg)
    assert words in msg


def test_index_fill_into_an_empty_dim_is_refused(device):
    x = tl.zeros(4, 0, device=device)
    with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 0"):
        x.index_fill_(1, tl.tensor([0], device=device), 2.0)
    assert x._version == 0


ALLOWED = [
    ("m.ones((), dtype=m.bool, device=dev).cumsum_(0)", True),
    ("m.tensor([True, False], device=dev).clamp_(m.tensor([True, True], device=dev), None)", [True, True]),
    ("m.tensor([True, False], device=dev).clamp(max=m.tensor([False, False], device=dev))", [False, False]),
    ("m.tensor(2., device=dev).mT", 2.0),
    ("m.tensor(2., device=dev).mH", 2.0),
    ("m.tensor(2., device=dev).T", 2.0),
    ("m.zeros(3, device=dev).set_(m.zeros(3, device=dev).untyped_storage(), 2, (1,), (-1,)).stride()", (1,)),
    ("m.empty_strided((2, 1, 3), (3, -7, 1), device=dev).stride()", (3, 3, 1)),
    ("m.tensor([2.], dtype=m.float16, device=dev).fill_(m.inf if hasattr(m, 'inf') else math.inf)", [math.inf]),
]


@pytest.mark.parametrize("code,want", ALLOWED)
def test_allowed_as_torch_allows(device, code, want):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .T/.mT/.mH of a 0-dim tensor warn (deprecated), as torch
        kind, got = _run(tl, code, device)
    assert kind == "ok", got
    assert (tuple(got) if isinstance(want, tuple) else got) == want


def test_zero_dim_transposes_warn_as_torch(device):
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        tl.tensor(1.0, device=device).mT


@pytest.mark.parametrize("case", ROUNDING + [(c, None) for c, _ in ALLOWED] + [(c, None) for c, _, _ in REFUSED])
def test_torch_agrees(torch, case):
    """The same code on torch: the same value, or the same kind of refusal (torch's one-element fill
    shortcut aside: tests/torch_divergences.py)."""
    import warnings
    code = case[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _run(tl, code), _run(torch, code)
    if ours[0] == "IndexOutOfRangeError":
        ours = ("RuntimeError", ours[1])
    assert ours[0] == theirs[0], (code, ours, theirs)
    if ours[0] == "ok":
        a, b = ours[1], theirs[1]
        if isinstance(a, list):
            np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-6)
        else:
            assert a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-6)), (code, a, b)
