"""scatter_reduce(_) and index_reduce(_) against torch: every reduction with and without self, the
dtypes (the CUDA max/min kernel instantiations of every dtype and index width), NaN and ties,
torch's gradients (prod with zeros, amax/amin ties split evenly) and gradcheck, the in-place
contract and torch's errors."""
import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle

REDUCES = ("sum", "prod", "mean", "amax", "amin")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _tl(t, device):
    """A torch tensor as a tensorlab one on `device` (bfloat16 through float32: NumPy has no bfloat16)."""
    import torch
    if t.dtype == torch.bfloat16:
        return tl.tensor(t.float().numpy(), device=device).to(tl.bfloat16)
    return tl.tensor(t.numpy(), device=device)


def _np(t):
    return (t.float() if t.dtype is tl.bfloat16 else t).cpu().numpy()


def _tnp(t):
    import torch
    return (t.float() if t.dtype == torch.bfloat16 else t).detach().numpy()


def _values(torch, shape, dtype, gen):
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        # small integers as floats: sums, products and means are exact in every float dtype
        return torch.randint(-3, 4, shape, generator=gen).to(dtype)
    lo = 0 if dtype == torch.uint8 else -3
    return torch.randint(lo, 4, shape, generator=gen).to(dtype)


def _case(torch, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    self_ = _values(torch, (4, 5), dtype, g)
    src = _values(torch, (6, 5), dtype, g)
    index = torch.randint(0, 4, (6, 5), generator=g)  # duplicates on purpose; row 3 sometimes untouched
    return self_, index, src


def _close(got, want, dtype_name):
    tol = {"float16": 1e-3, "bfloat16": 1e-2}.get(dtype_name, 1e-6)
    np.testing.assert_allclose(_np(got).astype(np.float64), _tnp(want).astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_matches_torch(device, torch, dtype, reduce):
    tdt = getattr(torch, dtype)
    if reduce == "mean" and dtype == "bool":
        pytest.skip("torch refuses bool means (tested in test_errors)")
    for include_self in (True, False):
        for dim in (0, 1):
            s, i, src = _case(torch, tdt, seed=dim)
            if dim == 1:
                i = i[:4] % 5
            want = s.scatter_reduce(dim, i, src, reduce, include_self=include_self)
            got = _tl(s, device).scatter_reduce(dim, _tl(i, device), _tl(src, device), reduce,
                                                include_self=include_self)
            assert got.dtype is getattr(tl, dtype) and got.device.type == device
            _close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_amax_amin_every_dtype_and_index_width(device, torch, index, dtype):
    """The CUDA max/min kernels of each dtype (16-bit floats and narrow integers through a 32-bit
    scratch), at both index widths."""
    tdt = getattr(torch, dtype)
    s, i, src = _case(torch, tdt, seed=3)
    for reduce in ("amax", "amin"):
        want = torch.scatter_reduce(s, 0, i, src, reduce)
        got = tl.scatter_reduce(_tl(s, device), 0, _tl(i, device), _tl(src, device), reduce)
        _close(got, want, dtype)


def test_nan_propagates_and_ties(device, torch):
    nan = float("nan")
    s = torch.tensor([0.0, 1.0, nan, 5.0])
    src = torch.tensor([nan, 2.0, 3.0, -1.0, 7.0, 7.0])
    i = torch.tensor([0, 1, 1, 2, 3, 3])
    for reduce in ("amax", "amin", "sum", "prod", "mean"):
        for inc in (True, False):
            want = s.scatter_reduce(0, i, src, reduce, include_self=inc)
            got = _tl(s, device).scatter_reduce(0, _tl(i, device), _tl(src, device), reduce, include_self=inc)
            np.testing.assert_array_equal(_np(got), want.numpy())


def test_integer_mean_floors(device, torch):
    s = torch.tensor([0, 0, 0, 0])
    src = torch.tensor([7, -3, 5, 2, -8])
    i = torch.tensor([0, 1, 1, 2, 2])
    for inc in (True, False):
        want = s.scatter_reduce(0, i, src, "mean", include_self=inc)
        got = _tl(s, device).scatter_reduce(0, _tl(i, device), _tl(src, device), "mean", include_self=inc)
        np.testing.assert_array_equal(_np(got), want.numpy())


@pytest.mark.parametrize("reduce", ("prod", "mean", "amax", "amin"))
def test_index_reduce_matches_torch(device, torch, reduce):
    g = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.int64):
        for dim in (0, 1, -1):
            s = _values(torch, (4, 5, 3), dtype, g)
            n = 7
            shape = [4, 5, 3]
            shape[dim] = n
            src = _values(torch, tuple(shape), dtype, g)
            i = torch.randint(0, (4, 5, 3)[dim], (n,), generator=g)
            for inc in (True, False):
                want = s.index_reduce(dim, i, src, reduce, include_self=inc)
                got = _tl(s, device).index_reduce(dim, _tl(i, device), _tl(src, device), reduce, include_self=inc)
                np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-6)
                x = _tl(s, device)
                r = x.index_reduce_(dim, _tl(i.int(), device), _tl(src, device), reduce, include_self=inc)
                assert r is x
                np.testing.assert_allclose(_np(x), want.numpy(), rtol=1e-6)


def test_inplace_and_out(device, torch):
    s, i, src = _case(torch, torch.float32)
    want = s.scatter_reduce(0, i, src, "amax", include_self=False)
    x = _tl(s, device)
    v = x._version
    assert x.scatter_reduce_(0, _tl(i, device), _tl(src, device), "amax", include_self=False) is x
    np.testing.assert_array_equal(_np(x), want.numpy())
    assert x._version > v
    out = tl.empty((1,), device=device)
    r = tl.scatter_reduce(_tl(s, device), 0, _tl(i, device), _tl(src, device), "amax", include_self=False, out=out)
    assert r is out
    np.testing.assert_array_equal(_np(out), want.numpy())


def test_failure_leaves_self_unchanged(device, torch):
    """A bad index raises before anything is written, as torch's exception class."""
    s, i, src = _case(torch, torch.float32)
    s0 = s.clone()  # torch's own scatter_reduce_ may write part of the result before it raises
    bad = i.clone()
    bad[5, 4] = 4
    x = _tl(s, device)
    b1, b2, src_ = _tl(bad, device), _tl(-bad - 1, device), _tl(src, device)
    for fn in (lambda: x.scatter_reduce_(0, b1, src_, "sum"),
               lambda: x.scatter_reduce_(0, b2, src_, "amin")):
        with pytest.raises(RuntimeError, match="out of bounds"):
            fn()
            settle(device)  # on CUDA the index is checked on the device: raised at the next wait
        np.testing.assert_array_equal(_np(x), s0.numpy())
    with pytest.raises(RuntimeError):
        s.scatter_reduce_(0, bad, src, "sum")
    src2 = torch.ones(2, 5)
    i04, src2_ = _tl(torch.tensor([0, 4]), device), _tl(src2, device)
    with pytest.raises(IndexError, match="index_reduce_.*out of range"):
        x.index_reduce_(0, i04, src2_, "amax")
        settle(device)
    with pytest.raises(IndexError):
        s.index_reduce_(0, torch.tensor([0, 4]), src2, "amax")
    np.testing.assert_array_equal(_np(x), s0.numpy())


def test_errors(device, torch):
    x = tl.zeros(3, 4, device=device)
    i = tl.tensor([[0, 1], [2, 0]], device=device)
    s = tl.ones(2, 2, device=device)
    tx, ti, ts = torch.zeros(3, 4), torch.tensor([[0, 1], [2, 0]]), torch.ones(2, 2)
    cases = [
        (lambda t, j, u: t.scatter_reduce(0, j, u, "foo"), RuntimeError, "sum, prod, mean, amax or amin"),
        (lambda t, j, u: t.scatter_reduce(0, j, u.double(), "sum"), RuntimeError, "self.dtype to be equal to src"),
        (lambda t, j, u: t.scatter_reduce(0, j.float(), u, "sum"), RuntimeError, "int64"),
        (lambda t, j, u: t.scatter_reduce(0, j, 3.0, "sum"), TypeError, "src"),
        (lambda t, j, u: t.scatter_reduce(0, j, u, "sum", include_self=3), TypeError, "include_self"),
        (lambda t, j, u: t.scatter_reduce(2, j, u, "sum"), IndexError, "Dimension out of range"),
        (lambda t, j, u: t.bool().scatter_reduce(0, j, u.bool(), "mean"), NotImplementedError, "Bool"),
        (lambda t, j, u: t.index_reduce(0, j[0], u, "sum"), RuntimeError, "prod, mean, amax or amin"),
        (lambda t, j, u: t.index_reduce(0, j, u, "prod"), IndexError, "vector"),
        (lambda t, j, u: t.index_reduce(0, j[0], u.double(), "prod"), RuntimeError, "same scalar type"),
        (lambda t, j, u: t.index_reduce(0, j[0], u, "prod"), RuntimeError, "source tensor shape must match"),
        (lambda t, j, u: t.index_reduce(0, j[0], u.new_ones(3, 4), "prod"), RuntimeError, "Number of indices"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc):
            fn(tx, ti, ts)
        with pytest.raises(exc, match=msg):
            fn(x, i, s)


def test_deterministic_mode(device):
    """Float sums and products combine through atomics on CUDA (order-dependent rounding): refused under
    use_deterministic_algorithms, as torch; max/min are exact in any order and run."""
    x = tl.zeros(3, device=device)
    i = tl.tensor([0, 1, 1], device=device)
    s = tl.ones(3, device=device)
    tl.use_deterministic_algorithms(True)
    try:
        assert x.scatter_reduce(0, i, s, "amax").tolist() == [1.0, 1.0, 0.0]
        if device == "cuda":
            with pytest.raises(RuntimeError, match="deterministic"):
                x.scatter_reduce(0, i, s, "sum")
        else:
            assert x.scatter_reduce(0, i, s, "mean").tolist() == pytest.approx([0.5, 2 / 3, 0.0])
    finally:
        tl.use_deterministic_algorithms(False)


# -- gradients ---------------------------------------------------------------------------------------
def _grads(torch, device, fn_t, fn_l, *arrays):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    ls = [tl.tensor(a, dtype=tl.float64, device=device, requires_grad=True) for a in arrays]
    rt, rl = fn_t(*ts), fn_l(*ls)
    w = np.linspace(0.5, 2.0, rt.numel()).reshape(tuple(rt.shape))
    gt = torch.autograd.grad((rt * torch.tensor(w)).sum(), ts)
    gl = tl.autograd.grad((rl * tl.tensor(w, device=device)).sum(), ls)
    for a, b in zip(gl, gt):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_grad_matches_torch_with_zeros_and_ties(device, torch, reduce):
    s = np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 0.0], [5.0, 5.0, 1.0]])
    src = np.array([[0.0, 4.0, 3.0], [2.0, 0.0, 0.0], [5.0, 4.0, 3.0], [0.0, 1.0, 2.0]])  # zeros, one and two per slot
    idx = np.array([[0, 1, 0], [0, 1, 1], [2, 1, 0], [0, 2, 1]])
    ti, li = torch.tensor(idx), tl.tensor(idx, device=device)
    for inc in (True, False):
        _grads(torch, device, lambda a, b: a.scatter_reduce(0, ti, b, reduce, include_self=inc),
               lambda a, b: a.scatter_reduce(0, li, b, reduce, include_self=inc), s, src)


@pytest.mark.parametrize("reduce", ("prod", "mean", "amax", "amin"))
def test_index_reduce_grad_matches_torch(device, torch, reduce):
    s = np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 0.0], [5.0, 5.0, 1.0]])
    src = np.array([[0.0, 4.0, 3.0], [2.0, 5.0, 0.0], [5.0, 4.0, 3.0], [2.0, 1.0, 2.0]])
    idx = [0, 2, 2, 0]
    ti, li = torch.tensor(idx), tl.tensor(idx, device=device)
    for inc in (True, False):
        _grads(torch, device, lambda a, b: a.index_reduce(1, ti, b.T, reduce, include_self=inc),
               lambda a, b: a.index_reduce(1, li, b.T, reduce, include_self=inc), s, src)


@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck(device, reduce):
    """Finite differences (distinct values: no ties, no zeros, where the function is differentiable)."""
    rng = np.random.default_rng(0)
    s = tl.tensor(rng.permutation(12).reshape(3, 4) + 1.5, dtype=tl.float64, device=device, requires_grad=True)
    src = tl.tensor(rng.permutation(8).reshape(2, 4) * 1.3 + 0.7, dtype=tl.float64, device=device, requires_grad=True)
    i = tl.tensor([[0, 2, 1, 1], [2, 2, 0, 1]], device=device)
    for inc in (True, False):
        assert tl.autograd.gradcheck(lambda a, b: a.scatter_reduce(0, i, b, reduce, include_self=inc), (s, src))


@pytest.mark.parametrize("op", ["scatter_reduce_", "index_reduce_"])
@pytest.mark.parametrize("reduce", ["mean", "amax", "prod"])
def test_injected_faults_leave_self_unchanged(device, op, reduce):
    """Every allocation, copy and launch of the in-place forms may fail: self keeps its values and
    version; then the same call succeeds."""
    from tensorlab import testing as T
    from tensorlab.testing import InjectedFault, assert_unchanged, count_events, inject_fault, snapshot

    def setup():
        x = tl.tensor(np.arange(12.0).reshape(3, 4), device=device)
        src = tl.tensor(np.arange(8.0).reshape(2, 4) - 3, device=device)
        if op == "scatter_reduce_":
            i = tl.tensor([[0, 2, 1, 1], [2, 2, 0, 1]], device=device)
            return x, (lambda: x.scatter_reduce_(0, i, src, reduce, include_self=False)), (x, src, i)
        i = tl.tensor([2, 0], device=device)
        return x, (lambda: x.index_reduce_(0, i, src, reduce, include_self=False)), (x, src, i)

    x, fn, _ = setup()
    with count_events() as counts:
        fn()
    want = x.cpu().numpy()
    for kind in T.KINDS:
        for n in range(1, getattr(counts, kind) + 1):
            x, fn, objs = setup()
            snap = snapshot(*objs)
            with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
                fn()
            assert plan.fired
            assert_unchanged(snap)
            fn()
            np.testing.assert_array_equal(x.cpu().numpy(), want)


@pytest.mark.parametrize("reduce", ("prod", "amax", "mean"))
def test_inplace_forms_differentiate_like_torch(device, torch, reduce):
    """scatter_reduce_ / index_reduce_ on a non-leaf: the gradient reaches the old self and src."""
    s = np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 0.0], [5.0, 5.0, 1.0]])
    src = np.array([[0.0, 4.0, 3.0], [2.0, 0.0, 0.0]])
    w = np.arange(9.0).reshape(3, 3)
    for inc in (True, False):
        got = []
        for lib, dev in ((torch, None), (tl, device)):
            kw = {} if dev is None else {"device": dev}
            a = lib.tensor(s, requires_grad=True, **kw)
            b = lib.tensor(src, requires_grad=True, **kw)
            x = a * 1
            x.scatter_reduce_(0, lib.tensor([[0, 1, 0], [2, 1, 1]], **kw), b, reduce, include_self=inc)
            y = a * 1
            y.index_reduce_(1, lib.tensor([0, 2], **kw), b.T * 1, reduce, include_self=inc)
            g = lib.autograd.grad(((x + y) * lib.tensor(w, **kw)).sum(), (a, b))
            got.append([t.detach().cpu().numpy() for t in g])
        for p, q in zip(*got):
            np.testing.assert_allclose(q, p, rtol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
def test_one_index_check_per_call(device, reduce):
    """The index is checked once per call, on the device (no host wait), however many scatters the
    reduction takes (identity fill, reduction, counts)."""
    x = tl.zeros(3, 4, device=device)
    i = tl.tensor([[0, 2, 1, 1], [2, 2, 0, 1]], device=device)
    s = tl.ones(2, 4, device=device)
    for inc in (True, False):
        with tl.cuda.sync_trace() as trace:
            r = x.scatter_reduce(0, i, s, reduce, include_self=inc)
        assert [t.reason for t in trace] == []
        assert r.shape == (3, 4)
