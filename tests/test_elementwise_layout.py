"""Elementwise outputs keep their inputs' memory order (torch's TensorIterator rule): the same
strides as torch for permuted, sliced, broadcast, channels-last and size-1-dim layouts, on every
device, with the values unchanged."""
from __future__ import annotations

import random

import numpy as np
import pytest

import tensorlab as tl


def _layout(rng, shape, lib, device=None):
    """arange data of `shape` in a random memory order (a permutation, sliced with steps), built the
    same way in tensorlab and torch from one rng state."""
    nd = len(shape)
    if nd == 0:
        return lib.tensor(1.0, device=device) if device else lib.tensor(1.0)
    perm = list(range(nd))
    rng.shuffle(perm)
    base = [shape[p] for p in perm]
    step = [rng.choice([1, 1, 1, 2]) for _ in base]
    n = int(np.prod([s * st for s, st in zip(base, step)]))
    t = lib.arange(float(n)).reshape(*[s * st for s, st in zip(base, step)])
    if device:
        t = t.to(device)
    t = t[tuple(slice(None, None, st) for st in step)]
    return t.permute(*[perm.index(i) for i in range(nd)])


OPS = {
    "add": lambda lib, a, b: a + b,
    "radd": lambda lib, a, b: b + a,
    "exp": lambda lib, a, b: lib.exp(a),
    "mul_scalar": lambda lib, a, b: a * 2,
    "self": lambda lib, a, b: a * a,
    "zero_dim": lambda lib, a, b: a + lib.tensor(2.0, device=a.device),
    "where": lambda lib, a, b: lib.where(a > 2, b, a),
    "where_scalar": lambda lib, a, b: lib.where(a > 2, a, 0.0),
    "lt": lambda lib, a, b: a < b,
    "clamp": lambda lib, a, b: a.clamp(1, 3),
    "clamp_tensor": lambda lib, a, b: a.clamp(b),
    "to_double": lambda lib, a, b: a.to(lib.float64),
    "addcmul": lambda lib, a, b: lib.addcmul(a, b, a),
    "addcdiv": lambda lib, a, b: lib.addcdiv(a, a, a + 1, value=2),
    "lerp": lambda lib, a, b: lib.lerp(a, b, 0.5),
    "masked_fill": lambda lib, a, b: a.masked_fill(b > 2, 0.0),
}


def _case(seed):
    rng = random.Random(seed)
    nd = rng.randint(0, 4)
    shape = [rng.choice([1, 2, 3, 4]) for _ in range(nd)]
    nd2 = rng.randint(0, nd)
    return shape, [rng.choice([1, s]) for s in shape[nd - nd2:]]


def _tl_pair(seed, device):
    shape, shape2 = _case(seed)
    r = random.Random(seed * 7 + 1)
    return _layout(r, shape, tl, device), _layout(r, shape2, tl, device)


def test_the_issue_example(device):
    x = tl.arange(30.0, device=device).reshape(2, 3, 5).permute(2, 1, 0)
    y = x + 1
    assert y.stride() == (1, 5, 15)
    assert y.permute(2, 1, 0).is_contiguous() and y.permute(2, 1, 0).view(-1).shape == (30,)  # as in torch
    assert tl.exp(x).stride() == (1, 5, 15) and (x * x).stride() == (1, 5, 15)
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(30.0).reshape(2, 3, 5).transpose(2, 1, 0) + 1)


@pytest.mark.parametrize("shape,stride,expected", [
    ((3, 4), (1, 3), (1, 3)),                    # a transpose stays a transpose
    ((1, 3, 1, 2), (1, 1, 1, 3), (6, 1, 6, 3)),  # channels-last (size-1 dims ignored): canonical NHWC
    ((2, 3), (3, 1), (3, 1)),                    # contiguous
    ((2, 1, 3), (1, 5, 2), (1, 5, 2)),           # dense: the size-1 dim's stride is kept (one operand)
    ((4, 3), (2, 8), (1, 4)),                    # not dense: dense in the same memory order
])
def test_exact_strides(device, shape, stride, expected):
    n = 1 + sum((s - 1) * st for s, st in zip(shape, stride))
    x = tl.arange(float(n), device=device).as_strided(shape, stride)
    y = tl.exp(x)
    assert y.stride() == expected
    np.testing.assert_allclose(y.cpu().numpy(), np.exp(x.cpu().numpy()), rtol=1e-6)


def test_broadcast_and_scalar_operands_sort_dims(device):
    x = tl.empty_strided((2, 1, 3), (1, 5, 2), device=device).fill_(1)
    assert (x + 1).stride() == (1, 6, 2)      # a Python number is an operand: dims sorted, dense
    a = tl.ones(3, 4, device=device).t()       # (4, 3) with strides (1, 4)
    assert (a + tl.ones(3, device=device)).stride() == (1, 4)  # the broadcast row does not decide


def test_masked_fill_is_contiguous(device):
    a = tl.ones(3, 4, device=device).t()
    assert a.masked_fill(a > 2, 0.0).stride() == (3, 1)


@pytest.mark.parametrize("op", sorted(OPS))
def test_strides_and_values_match_torch(torch, device, op):
    fn = OPS[op]
    for seed in range(120):
        shape, shape2 = _case(seed)
        r = random.Random(seed * 7 + 1)
        ta, tb = _layout(r, shape, torch), _layout(r, shape2, torch)
        a, b = _tl_pair(seed, device)
        want, got = fn(torch, ta, tb), fn(tl, a, b)
        assert tuple(got.shape) == tuple(want.shape), (seed, shape, shape2)
        assert got.stride() == tuple(want.stride()), (seed, op, shape, shape2, a.stride(), b.stride())
        np.testing.assert_allclose(got.cpu().numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=1e-6, err_msg=f"seed {seed}")
