"""tl.einsum against torch.einsum on every device: explicit and implicit outputs, ellipsis,
repeated indices (diagonals), sums, broadcasting, chains of operands, the sublist form, dtypes,
errors, and gradients (float64 gradcheck)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.autograd import gradcheck

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("...ij->ij", [(2, 3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ijk,jkl,lm->im", [(2, 3, 4), (3, 4, 5), (5, 2)]),
    ("iij->j", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
    ("a...b,b...->a...", [(2, 3, 4, 5), (5, 3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,j->i", [(2, 3), (1,)]),          # a size-1 dim broadcasts
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    ("Ab,ba", [(2, 3), (3, 2)]),           # uppercase labels come first in the implicit output
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
    ("ijk,ikl->jl", [(0, 2, 3), (0, 3, 2)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    # chains where the greedy order differs from left to right
    ("ij,jk,kl->il", [(20, 2), (2, 20), (20, 2)]),
    ("ab,cd,bc->ad", [(3, 4), (5, 6), (4, 5)]),
    ("ab,bc,cd,de->ae", [(3, 4), (4, 5), (5, 6), (6, 2)]),
    ("i,ij,jk,k->", [(5,), (5, 6), (6, 7), (7,)]),
    ("ij,ij,ij->i", [(3, 4), (3, 4), (3, 4)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]),
    ("a,ab,c->bc", [(1,), (3, 2), (4,)]),
]


def _ops(shapes, device, dtype=np.float64):
    arrs = [np.random.standard_normal(s).astype(dtype) for s in shapes]
    return arrs, [tl.tensor(a, device=device) for a in arrs]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_torch(device, torch, eq, shapes):
    arrs, ts = _ops(shapes, device)
    want = torch.einsum(eq, *[torch.tensor(a) for a in arrs])
    got = tl.einsum(eq, *ts)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype is tl.float64
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_operand_list_and_sublist(device, torch):
    arrs, ts = _ops([(2, 3), (3,)], device)
    ta = [torch.tensor(a) for a in arrs]
    np.testing.assert_allclose(tl.einsum("ij,j->i", ts).cpu().numpy(), torch.einsum("ij,j->i", ta).numpy())
    np.testing.assert_allclose(tl.einsum(ts[0], [0, 1], ts[1], [1], [0]).cpu().numpy(),
                               torch.einsum(ta[0], [0, 1], ta[1], [1], [0]).numpy())
    np.testing.assert_allclose(tl.einsum(ts[0], [Ellipsis, 1], ts[1], [1]).cpu().numpy(),
                               torch.einsum(ta[0], [Ellipsis, 1], ta[1], [1]).numpy())


def test_einsum_dtypes(device, torch):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    for eq, ops in (("ij,jk->ik", (a, a.T.copy())), ("ij->i", (a,)), ("ii->", (a[:, :2].copy(),))):
        want = torch.einsum(eq, *[torch.tensor(o) for o in ops])
        got = tl.einsum(eq, *[tl.tensor(o, device=device) for o in ops])
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    b = np.array([[True, False], [True, True]])
    want = torch.einsum("ij->i", torch.tensor(b))
    got = tl.einsum("ij->i", tl.tensor(b, device=device))
    assert got.dtype is tl.int64 and want.dtype == torch.int64
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


@pytest.mark.parametrize("eq,shapes,match", [
    ("ij,jk->ik", [(2, 3)], "fewer operands"),
    ("ij->ik", [(2, 3)], "output subscript k does not appear"),
    ("ij->ii", [(2, 3)], "appears more than once"),
    ("ijk->i", [(2, 3)], "number of subscripts"),
    ("i1->i", [(2, 3)], "invalid subscript"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4"),
    ("ii->i", [(2, 3)], "subscript i is repeated"),
])
def test_einsum_errors(device, torch, eq, shapes, match):
    arrs, ts = _ops(shapes, device)
    with pytest.raises(RuntimeError):
        torch.einsum(eq, *[torch.tensor(a) for a in arrs])
    with pytest.raises(RuntimeError, match=match):
        tl.einsum(eq, *ts)


def test_einsum_mixed_dtypes_and_bool_products_refused(device, torch):
    with pytest.raises(RuntimeError, match="expected scalar type"):
        torch.einsum("ij,jk", torch.ones(2, 2), torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="expected scalar type"):
        tl.einsum("ij,jk", tl.ones(2, 2, device=device), tl.ones(2, 2, dtype=tl.float64, device=device))
    with pytest.raises(NotImplementedError):
        torch.einsum("ij,jk", torch.ones(2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool))
    with pytest.raises(NotImplementedError):
        tl.einsum("ij,jk", tl.ones(2, 2, dtype=tl.bool, device=device), tl.ones(2, 2, dtype=tl.bool, device=device))


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(2, 3), (3, 2)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
                                       ("ii->i", [(3, 3)]), ("ijk,jkl,lm->im", [(2, 2, 3), (2, 3, 2), (2, 2)]),
                                       ("...i,...i->...", [(2, 3), (2, 3)]), ("ij,j->", [(2, 3), (1,)]),
                                       ("ab,cd,bc->ad", [(2, 3), (2, 2), (3, 2)])])
def test_einsum_gradients(device, eq, shapes):
    _, ts = _ops(shapes, device)
    ts = [t.requires_grad_() for t in ts]
    assert gradcheck(lambda *xs: tl.einsum(eq, *xs), tuple(ts))


@pytest.mark.parametrize("eq", ["i..j", "....i", "i.j"])
def test_einsum_ellipsis_errors_word_as_torch(device, torch, eq):
    with pytest.raises(RuntimeError) as te:
        torch.einsum(eq, torch.ones(2, 2))
    with pytest.raises(RuntimeError) as oe:
        tl.einsum(eq, tl.ones(2, 2, device=device))
    assert str(oe.value) == str(te.value)
