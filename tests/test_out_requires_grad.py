"""out= and autograd: every reduction, matrix product and shape op that takes out= refuses it
while grad mode is on and an argument requires grad, with torch's message (its op name
included), before it writes anything: the out tensors keep their shape, bytes and version. The
non-differentiable ones (argmax, all, nonzero, ...) accept it, as torch's do, and under no_grad
every op writes out= as usual."""
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.testing import assert_unchanged, snapshot
from test_reduction import _compare_torch, sample

F, I, B = "float32", "int64", "bool"


def _index(m, x, values):
    return m.tensor(values, dtype=m.int64, device=x.device)


# name -> (call(m, x, out), dtypes of the out tensors); x is a (3, 4) float32 leaf that requires
# grad, and `out` a tensor or a tuple of tensors of those dtypes
OUT_CALLS = {
    "sum": (lambda m, x, o: m.sum(x, 0, out=o), (F,)),
    "sum_dtype": (lambda m, x, o: m.sum(x, 1, dtype=m.float64, out=o), ("float64",)),
    "sum_out_wrong_dtype": (lambda m, x, o: m.sum(x, 0, dtype=m.float32, out=o), (I,)),  # refused first
    "prod": (lambda m, x, o: m.prod(x, 1, out=o), (F,)),
    "mean": (lambda m, x, o: m.mean(x, (0, 1), out=o), (F,)),
    "amax": (lambda m, x, o: m.amax(x, 1, out=o), (F,)),
    "amin": (lambda m, x, o: m.amin(x, out=o), (F,)),
    "max": (lambda m, x, o: m.max(x, out=o), (F,)),
    "min": (lambda m, x, o: m.min(x, out=o), (F,)),
    "max_dim": (lambda m, x, o: m.max(x, 0, out=o), (F, I)),
    "min_dim": (lambda m, x, o: m.min(x, 1, True, out=o), (F, I)),
    "max_other": (lambda m, x, o: m.max(x, x.detach(), out=o), (F,)),
    "var": (lambda m, x, o: m.var(x, 0, out=o), (F,)),
    "std": (lambda m, x, o: m.std(x, 1, correction=0, out=o), (F,)),
    "norm": (lambda m, x, o: m.norm(x, 2, 0, out=o), (F,)),
    "logsumexp": (lambda m, x, o: m.logsumexp(x, 1, out=o), (F,)),
    "cumsum": (lambda m, x, o: m.cumsum(x, 0, out=o), (F,)),
    "cumprod": (lambda m, x, o: m.cumprod(x, 1, out=o), (F,)),
    "matmul": (lambda m, x, o: m.matmul(x, x.detach().t(), out=o), (F,)),
    "matmul_other": (lambda m, x, o: m.matmul(x.detach(), x.t(), out=o), (F,)),
    "matmul_bad_shapes": (lambda m, x, o: m.matmul(x, x, out=o), (F,)),  # refused before the shape check
    "mm": (lambda m, x, o: m.mm(x, x.detach().t(), out=o), (F,)),
    "bmm": (lambda m, x, o: m.bmm(x.unsqueeze(0), x.detach().t().unsqueeze(0), out=o), (F,)),
    "mv": (lambda m, x, o: m.mv(x.detach(), x[0], out=o), (F,)),
    "dot": (lambda m, x, o: m.dot(x[0], x.detach()[1], out=o), (F,)),
    "outer": (lambda m, x, o: m.outer(x[0], x.detach()[1], out=o), (F,)),
    "ger": (lambda m, x, o: m.ger(x.detach()[0], x[1], out=o), (F,)),
    "cat": (lambda m, x, o: m.cat([x.detach(), x], out=o), (F,)),
    "stack": (lambda m, x, o: m.stack([x, x.detach()], 1, out=o), (F,)),
    "gather": (lambda m, x, o: m.gather(x, 1, _index(m, x, [[0], [3], [1]]), out=o), (F,)),
    "index_select": (lambda m, x, o: m.index_select(x, 1, _index(m, x, [2, 0]), out=o), (F,)),
    "masked_select": (lambda m, x, o: m.masked_select(x, x.detach() > 0, out=o), (F,)),
    "sort": (lambda m, x, o: m.sort(x, 1, out=o), (F, I)),
    "topk": (lambda m, x, o: m.topk(x, 2, out=o), (F, I)),
    "tril": (lambda m, x, o: m.tril(x, out=o), (F,)),
    "triu": (lambda m, x, o: m.triu(x, 1, out=o), (F,)),
    "median": (lambda m, x, o: m.median(x, 1, out=o), (F, I)),
    "nanmedian": (lambda m, x, o: m.nanmedian(x, 0, True, out=o), (F, I)),
    "kthvalue": (lambda m, x, o: m.kthvalue(x, 2, 1, out=o), (F, I)),
}
# torch accepts out= here: the results are not differentiable
NON_DIFFERENTIABLE = {
    "argmax": (lambda m, x, o: m.argmax(x, 1, out=o), (I,)),
    "argmin": (lambda m, x, o: m.argmin(x, out=o), (I,)),
    "all": (lambda m, x, o: m.all(x, 0, out=o), (B,)),
    "any": (lambda m, x, o: m.any(x, 1, out=o), (B,)),
    "nonzero": (lambda m, x, o: m.nonzero(x, out=o), (I,)),
}


def _outs(m, dtypes, device=None):
    """Out tensors of a shape no op here produces, holding values a write would change."""
    outs = [m.full((2, 1), 7, dtype=getattr(m, d), **({} if device is None else {"device": device})) for d in dtypes]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _torch_outcome(torch, call, dtypes, requires_grad=True, grad=True):
    x = torch.from_numpy(sample((3, 4), tl.float32)).requires_grad_(requires_grad)
    o = _outs(torch, dtypes)
    try:
        with torch.set_grad_enabled(grad), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own "was resized" warning
            r = call(torch, x, o)
    except Exception as e:  # noqa: BLE001 - the oracle
        return None, e
    return r, None


def _tl_args(device, dtypes, requires_grad=True):
    x = tl.tensor(sample((3, 4), tl.float32), device=device, requires_grad=requires_grad)
    return x, _outs(tl, dtypes, device)


def _as_tuple(o):
    return o if isinstance(o, tuple) else (o,)


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_with_an_input_that_requires_grad_is_refused_like_torch(device, torch, name):
    call, dtypes = OUT_CALLS[name]
    _, err = _torch_outcome(torch, call, dtypes)
    assert isinstance(err, RuntimeError) and "automatic differentiation" in str(err), err
    x, o = _tl_args(device, dtypes)
    snap = snapshot(x, *_as_tuple(o))
    with pytest.raises(RuntimeError) as info:
        call(tl, x, o)
    assert str(info.value) == str(err)
    assert_unchanged(snap)  # shape, bytes and _version of every out tensor: nothing was written
    assert all(t._version == 0 for t in _as_tuple(o))


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_is_written_under_no_grad_like_torch(device, torch, name):
    call, dtypes = OUT_CALLS[name]
    expected, err = _torch_outcome(torch, call, dtypes, grad=False)
    x, o = _tl_args(device, dtypes)
    with tl.no_grad(), pytest.warns(UserWarning, match="resized") if err is None else pytest.raises(type(err)):
        r = call(tl, x, o)
    if err is not None:
        return
    if isinstance(expected, tuple):
        r, expected = tuple(r), tuple(expected)
        assert all(a is b for a, b in zip(r, o))  # the results are the out tensors
    else:
        assert r is o
    _compare_torch(torch, r, expected)
    assert not any(t.requires_grad for t in _as_tuple(r))
    assert all(t._version == 1 for t in _as_tuple(o))


@pytest.mark.parametrize("name", sorted(NON_DIFFERENTIABLE))
def test_non_differentiable_ops_accept_out_with_grad_like_torch(device, torch, name):
    call, dtypes = NON_DIFFERENTIABLE[name]
    expected, err = _torch_outcome(torch, call, dtypes)
    assert err is None, err
    x, o = _tl_args(device, dtypes)
    with pytest.warns(UserWarning, match="resized"):
        r = call(tl, x, o)
    assert r is o
    _compare_torch(torch, r, expected)


@pytest.mark.parametrize("name", ["sum", "max_dim", "matmul", "cat", "sort", "median"])
def test_out_that_requires_grad_is_refused_like_torch(device, torch, name):
    call, dtypes = OUT_CALLS[name]
    x = torch.from_numpy(sample((3, 4), tl.float32))
    o = _outs(torch, dtypes)
    _as_tuple(o)[0].requires_grad_()
    with pytest.raises(RuntimeError) as want, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(torch, x, o)
    x, o = _tl_args(device, dtypes, requires_grad=False)
    _as_tuple(o)[0].requires_grad_()
    snap = snapshot(*_as_tuple(o))
    with pytest.raises(RuntimeError) as info:
        call(tl, x, o)
    assert str(info.value) == str(want.value)
    assert_unchanged(snap)


def test_inputs_without_grad_write_out_with_grad_mode_on(device):
    x = tl.tensor(sample((3, 4), tl.float32), device=device)
    o = tl.empty(4, device=device)
    assert tl.sum(x, 0, out=o) is o and o._version == 1
    np.testing.assert_allclose(np.asarray(o), sample((3, 4), tl.float32).sum(0), rtol=1e-6)
    vals, idx = tl.empty(0, device=device), tl.empty(0, dtype=tl.int64, device=device)
    tl.median(x, 0, out=(vals, idx))
    assert vals.shape == (4,) and idx.dtype is tl.int64 and not vals.requires_grad
