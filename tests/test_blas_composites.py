"""addmm, addmv, addr, baddbmm, addbmm in float16/bfloat16 round as torch's do, on every device: the
product accumulated in float32 and added to the scaled input before the one rounding (addbmm once per
matrix, as torch's loop of addmm_; addr after rounding the outer product, as torch); with and without a
gradient to record (the fused beta-1 product and the composite agree); float32/float64 within one
rounding of torch."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends

pytestmark = pytest.mark.torch_oracle

RNG = np.random.default_rng(0)
INP = RNG.standard_normal((5, 7)).astype(np.float32) * 30
M1, M2 = RNG.standard_normal((5, 40)).astype(np.float32), RNG.standard_normal((40, 7)).astype(np.float32)
B1, B2 = RNG.standard_normal((3, 5, 40)).astype(np.float32), RNG.standard_normal((3, 40, 7)).astype(np.float32)
V, V5, V7 = (RNG.standard_normal(n).astype(np.float32) for n in (40, 5, 7))
CASES = [("addmm", (INP, M1, M2), {}), ("addmm", (INP[0], M1, M2), {"beta": 0.5, "alpha": 2}),
         ("addmm", (INP, M1, M2), {"beta": 0}), ("baddbmm", (INP, B1, B2), {}),
         ("baddbmm", (INP[:, :1], B1, B2), {"alpha": -1.5}), ("addmv", (V5, M1, V), {"alpha": 3}),
         ("addr", (INP, V5, V7), {}), ("addbmm", (INP, B1, B2), {}), ("addbmm", (INP, B1, B2), {"beta": 0.25})]


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: f"{CASES[i][0]}{i}")
def test_rounding_matches_torch(device, torch, case, dt, grad):
    name, args, kw = CASES[case]
    ours = [tl.tensor(a, device=device).to(getattr(tl, dt)) for a in args]
    theirs = [torch.tensor(a).to(getattr(torch, dt)) for a in args]
    if grad:
        ours[1].requires_grad_()
        theirs[1].requires_grad_()
    got = getattr(tl, name)(*ours, **kw)
    want = getattr(torch, name)(*theirs, **kw)
    assert got.dtype is getattr(tl, dt) and want.dtype is getattr(torch, dt) and got.requires_grad == grad
    g, w = got.detach().double().cpu().numpy(), want.detach().double().numpy()
    if dt in ("float16", "bfloat16"):
        assert np.array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-4)
    if grad:  # the composite's gradient is torch's
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(ours[1].grad.double().cpu().numpy(), theirs[1].grad.double().numpy(),
                                   rtol=2e-2, atol=2e-2)


@pytest.mark.cuda
def test_fused_beta_one_product_is_one_library_call(cuda):
    from tensorlab.backends.cuda import linalg
    if not backends.cuda_emulated() and not linalg.VENDOR_GEMM:
        pytest.skip("vendor GEMM off")
    a, b, c = (tl.tensor(x, device=cuda).bfloat16() for x in (M1, M2, INP))
    before = sum(linalg.GEMM_CALLS.values())
    r = tl.addmm(c, a, b)
    assert sum(linalg.GEMM_CALLS.values()) == before + 1 and r.dtype is tl.bfloat16
    assert tl.equal(r.cpu(), tl.addmm(c.cpu(), a.cpu(), b.cpu()))
