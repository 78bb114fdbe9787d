"""renorm / Tensor.renorm / Tensor.renorm_ against torch on every device: p (1, 2, 3.5, inf), dims,
slices below and above maxnorm, float16, gradients (through the norm), out=, in-place atomicity
and torch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


@pytest.mark.parametrize("p", [1, 2, 3.5, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("maxnorm", [0.0, 0.5, 3.0, 100.0])
def test_renorm_matches_torch(device, torch, p, dim, maxnorm):
    a = np.random.default_rng(0).standard_normal((3, 4, 5))
    want = torch.renorm(torch.tensor(a), p, dim, maxnorm)
    got = tl.renorm(tl.tensor(a, device=device), p, dim, maxnorm)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tl.tensor(a, device=device).renorm(p, dim, maxnorm).cpu().numpy(), want.numpy(),
                               rtol=1e-12, atol=1e-12)


def test_renorm_inplace_out_and_float16(device, torch):
    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    x = tl.tensor(a, device=device)
    r = x.renorm_(2, 0, 1.0)
    assert r is x
    np.testing.assert_allclose(x.cpu().numpy(), torch.tensor(a).renorm_(2, 0, 1.0).numpy(), rtol=1e-6, atol=1e-6)
    out = tl.empty(0, device=device)
    tl.renorm(tl.tensor(a, device=device), 1, 1, 0.5, out=out)
    np.testing.assert_allclose(out.cpu().numpy(), torch.renorm(torch.tensor(a), 1, 1, 0.5).numpy(), rtol=1e-6)
    h = tl.renorm(tl.tensor(a, device=device).half(), 2, 0, 1.0)
    assert h.dtype == tl.float16
    np.testing.assert_allclose(h.float().cpu().numpy(), torch.tensor(a).half().renorm(2, 0, 1.0).float().numpy(),
                               rtol=2e-3, atol=2e-3)


def test_renorm_gradient_matches_torch(device, torch):
    a = np.random.default_rng(2).standard_normal((3, 5))
    ta = torch.tensor(a, requires_grad=True)
    x = tl.tensor(a, device=device, requires_grad=True)
    w = np.random.default_rng(3).standard_normal((3, 5))
    (torch.renorm(ta, 2, 0, 1.0) * torch.tensor(w)).sum().backward()
    (tl.renorm(x, 2, 0, 1.0) * tl.tensor(w, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tl.autograd.gradcheck(lambda t: tl.renorm(t, 3, 1, 0.7), (tl.tensor(a, device=device, requires_grad=True),))


def test_renorm_errors_leave_self_unchanged(device):
    x = tl.ones((2, 3), device=device)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tl.renorm(tl.ones(3, device=device), 2, 0, 1.0)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        tl.renorm(x, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm"):
        x.renorm_(2, 0, -1.0)
    with pytest.raises(IndexError):
        tl.renorm(x, 2, 2, 1.0)
    with pytest.raises(RuntimeError):
        tl.renorm(tl.ones((2, 3), dtype=tl.int64, device=device), 2, 0, 1.0)
    assert x.tolist() == [[1.0] * 3] * 2


def test_renorm_inplace_failure_leaves_self_unchanged(device):
    from tensorlab.testing import KINDS, InjectedFault, assert_unchanged, count_events, inject_fault, snapshot

    def setup():
        x = tl.tensor(np.random.default_rng(4).standard_normal((3, 4)), device=device)
        return (lambda: x.renorm_(2, 0, 0.5)), x
    fn, x = setup()
    with count_events() as counts:
        fn()
    for kind in KINDS:
        for n in range(1, getattr(counts, kind) + 1):
            fn, x = setup()
            snap = snapshot(x)
            with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
                fn()
            assert plan.fired
            assert_unchanged(snap)
