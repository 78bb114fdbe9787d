"""The one table of known divergences from torch 2.13: where torch's CPU answer depends on its code
path (ATEN_CPU_CAPABILITY, the tensor's length) or is wrong, and where tensorlab differs on purpose.

Each row says what torch does, what tensorlab does, why, and carries `check(device)`, which asserts
tensorlab's value (tests/test_torch_divergences.py runs every row on every device). A row whose torch
answer is path-dependent also carries `corrects` and `right`: the torch-oracle tests (test_elementwise)
replace torch's answer by the right one where the row applies, so no test trusts a path-dependent
torch answer. docs/torch-divergences.md shows this table (`render()`); a test checks they agree.

Adding a row: append a Divergence, write its check, run
`python tests/torch_divergences.py > docs/torch-divergences.md`."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import tensorlab as tl

PATH_DEPENDENT, DELIBERATE = "torch path-dependent", "deliberate"


@dataclass(frozen=True)
class Divergence:
    op: str
    inputs: str
    torch: str
    ours: str
    why: str
    kind: str
    check: Callable                      # (device) -> None: asserts tensorlab's behaviour
    corrects: Callable | None = None     # (op name, kwargs, result dtype name) -> True where the oracle is corrected
    right: Callable | None = None        # (torch, fn, torch args, kwargs, torch's answer) -> the right answer


# -- checks (tensorlab's side of each row) ----------------------------------------------------------

def _gelu_inf(device):
    for dt in (tl.bfloat16, tl.float16, tl.float32, tl.float64):
        for n in (1, 3, 40):  # torch's answer changes with the length (vectorized body vs scalar tail)
            x = tl.tensor([math.inf, 1.0] * n, dtype=dt, device=device)
            got = tl.nn.functional.gelu(x).cpu().numpy().astype(np.float64)
            assert np.all(got[0::2] == math.inf), (dt, n, got[:4])


def _gelu_right(torch, fn, args, kwargs, want):
    return torch.where(args[0] == math.inf, torch.full_like(want, math.inf), want)


def _div_trunc_bf16(device):
    # -2 / bfloat16(0.4004) = -4.995...: one rounding (to bfloat16 after truncating) gives -4.
    x = tl.tensor([-2.0] * 3, dtype=tl.bfloat16, device=device)
    y = tl.tensor([0.4004] * 3, dtype=tl.bfloat16, device=device)
    assert tl.div(x, y, rounding_mode="trunc").tolist() == [-4.0] * 3


def _div_trunc_right(torch, fn, args, kwargs, want):
    up = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in args]
    return fn(*up, **kwargs).to(torch.bfloat16)


def _more_than_64_dims(device):
    assert tl.ones(*[1] * 64, device=device).dim() == 64
    with pytest.raises(RuntimeError, match="at most 64 dimensions"):
        tl.ones(*[1] * 65, device=device)


def _read_only_numpy(device):
    a = np.arange(3.0)
    a.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = tl.from_numpy(a)
    with pytest.raises(RuntimeError, match="non-writable NumPy array"):
        t.add_(1)
    assert a.tolist() == [0.0, 1.0, 2.0] and t._version == 0


def _shared_storage_resize(device):
    x = tl.arange(4.0, device=device).share_memory_()
    if device == "cpu" or getattr(device, "type", None) == "cpu":
        assert not x.untyped_storage().resizable()
        with pytest.raises(RuntimeError, match="not resizable"):
            x.resize_(100)
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def _negative_stride_tensor(device):
    t = tl.tensor(np.arange(4)[::-1], device=device)
    assert t.tolist() == [3, 2, 1, 0] and t.stride() == (1,)
    with pytest.raises(ValueError, match="negative"):
        tl.from_numpy(np.arange(4)[::-1])


def _huge_int_into_half(device):
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.full((), 2 ** 63, dtype=tl.float16, device=device)
    assert tl.full((), -2 ** 63 - 1, dtype=tl.float32, device=device).item() == -2.0 ** 63


def _fill_overflow_half(device):
    for dt in (tl.float16, tl.bfloat16):
        for n in (1, 2, 100):  # torch: inf for one element on the CPU (its scalar_fill), an error otherwise
            for fill in (lambda: tl.zeros(n, dtype=dt, device=device).fill_(1e300),
                         lambda: tl.full((n,), 1e300, dtype=dt, device=device),
                         lambda: tl.full_like(tl.zeros(n, dtype=dt, device=device), 1e39)):
                with pytest.raises(RuntimeError, match="without overflow"):
                    fill()
        assert tl.full((2,), math.inf, dtype=dt, device=device).tolist() == [math.inf] * 2  # inf itself fits


def _wide_moments(device):
    x = tl.tensor([1e30, 1.0, 2.0, 3.0], device=device)
    assert math.isclose(x.std().item(), 5e29, rel_tol=1e-6) and x.var().item() == math.inf
    assert math.isclose(tl.tensor([3e20, 4e20], device=device).norm().item(), 5e20, rel_tol=1e-6)
    assert math.isclose(tl.tensor([3e-25, 4e-25], device=device).norm().item(), 5e-25, rel_tol=1e-6)


def _mean_out_self(device):
    x = tl.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.raises(RuntimeError):
        tl.mean(x, 0, out=x)
    assert x.tolist() == [1.0, 2.0, 3.0]


def _advanced_index_layout(device):
    x = tl.arange(6.0, device=device).reshape(2, 3).t()  # (3, 2) with strides (1, 3)
    for idx in ([0, 2], True, x > 1):
        assert x[idx].is_contiguous(), idx


def _raising_changes_nothing(device):
    x = tl.tensor([1.0, 2.0, 3.0], device=device)
    out = tl.zeros(1, dtype=tl.int64, device=device)
    with pytest.raises(RuntimeError):
        tl.add(x, 1.5, out=out)  # the result type Float can't be cast to Long: out is not resized first
    assert tuple(out.shape) == (1,) and out._version == 0
    a = tl.tensor([2], dtype=tl.int8, device=device)
    with pytest.raises(RuntimeError):
        a.pow_(300)
    assert a.tolist() == [2] and a._version == 0


def _deterministic_float_atomics(device):
    x = tl.zeros(3, device=device)
    idx = tl.tensor([0, 0, 2], device=device)
    tl.use_deterministic_algorithms(True)
    try:
        if device == "cpu":  # the CPU backend is deterministic: nothing to refuse
            x.scatter_add_(0, idx, tl.ones(3, device=device))
            assert x.tolist() == [2.0, 0.0, 1.0]
        else:
            with pytest.raises(RuntimeError, match="deterministic"):
                x.scatter_add_(0, idx, tl.ones(3, device=device))
            assert x.tolist() == [0.0, 0.0, 0.0]
    finally:
        tl.use_deterministic_algorithms(False)


def _unsupported_dtypes(device):
    for npdt in (np.uint16, np.uint32, np.uint64):
        with pytest.raises(TypeError, match="can't convert np.ndarray"):
            tl.from_numpy(np.zeros(2, dtype=npdt))


def _addmm_activation_gelu_exact(device):
    """_addmm_activation(use_gelu=True) is the exact GELU of addmm on every device (not the tanh
    approximation torch's CUDA takes from cuBLASLt's GELU_BIAS epilogue)."""
    b, a, c = (tl.tensor(v, device=device) for v in ([0.5, -1.0], [[1.0, 2.0]], [[0.25, -0.5], [1.0, 0.75]]))
    got = tl._addmm_activation(b, a, c, use_gelu=True).cpu().numpy().astype(np.float64)
    x = np.array([[2.75, 0.0]])
    exact = x * 0.5 * np.array([[math.erfc(-v / math.sqrt(2)) for v in x[0]]])
    np.testing.assert_allclose(got, exact, rtol=1e-6, atol=1e-7)


def _linspace_double(device):
    got = tl.linspace(0.5, 7.5, 4, dtype=tl.float32, device=device).cpu().numpy()
    want = (np.array([0.5, 0.5 + 7 / 3, 7.5 - 7 / 3, 7.5], dtype=np.float64)).astype(np.float32)
    assert got.tolist() == want.tolist()


def _special_float_kernels(device):
    x = [0.3, 2.5, 7.0, -2.5]
    got = tl.special.i0e(tl.tensor(x, dtype=tl.float32, device=device)).cpu().numpy().astype(np.float64)
    import scipy.special as sp
    want = sp.i0e(np.array(x, dtype=np.float32).astype(np.float64))
    if tl.device(device).type == "cpu":
        assert got.tolist() == want.astype(np.float32).astype(np.float64).tolist()  # rounded once
    else:
        np.testing.assert_allclose(got, want, rtol=4e-6)  # float kernels: a few ulps


def _ragged_order(device):
    with pytest.raises(TypeError, match="found a sequence at dim 1"):
        tl.tensor((128, []), dtype=tl.int8, device=device)
    with pytest.raises(TypeError, match="not a sequence"):
        tl.tensor(([], 1), device=device)


def _overlapping_outs(device):
    b = tl.zeros(2, dtype=tl.int64, device=device)
    v, i = b[:1], b[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl.max(tl.arange(6, device=device).reshape(2, 3), 0, out=(v, i))
    assert v.tolist() == [3, 1, 1] and i.tolist() == [1, 1, 1]


def _masked_fill_expanded(device):
    x = tl.zeros(3, device=device).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.masked_fill_(tl.tensor([[True, False, False], [False, False, True]], device=device), 1.0)
    x.fill_(2.0)  # fill_ and zero_ are allowed, as torch: every aliased element gets the same value
    assert x.tolist() == [[2.0] * 3] * 2 and x._version == 1
    x.zero_()
    assert x.tolist() == [[0.0] * 3] * 2 and x._version == 2


def _index_put_expanded(device):
    e = tl.arange(3, device=device).reshape(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e[tl.tensor([0], device=device)] = 9
    assert e.tolist()[0] == [0, 0, 0, 0]


def _extreme_ties(device):
    x = tl.tensor([-0.0, 0.0, -0.0, math.nan], device=device)
    z = tl.zeros(4, device=device)
    for a, b in ((x, z), (z, x)):
        for f in (tl.maximum, tl.minimum):
            got = f(a, b).cpu().numpy()
            assert np.array_equal(np.signbit(got[:3]), np.signbit(a.cpu().numpy()[:3])), (f, got)
            assert math.isnan(got[3])


def _extreme_right(torch, fn, args, kwargs, want):
    a, b = args[0], args[1]
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != want.dtype:
        return want
    return torch.where(a == b, a.expand_as(want), want)


def _dlpack_negative_strides(device):
    a = np.arange(6.)[::-1]
    with pytest.raises(BufferError, match="negative strides"):
        tl.from_dlpack(a)
    assert tl.from_dlpack(a, copy=True).tolist() == [5., 4., 3., 2., 1., 0.]


def _dlpack_read_only(device):
    a = np.arange(3.)
    a.flags.writeable = False
    t = tl.from_dlpack(a)
    with pytest.raises(RuntimeError):
        t.add_(1)
    assert a.tolist() == [0., 1., 2.]
    c = tl.from_dlpack(a, copy=True).to(device)
    c.add_(1)
    assert c.tolist() == [1., 2., 3.]


def _dlpack_default_stream(device):
    import inspect
    assert inspect.signature(tl.Tensor.__dlpack__).parameters["stream"].default is None
    tl.from_dlpack(tl.ones(2, device=device).__dlpack__())


def _array_of_cuda(device):
    assert np.asarray(tl.arange(3., device=device)).tolist() == [0., 1., 2.]
    if device != "cpu":
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            np.array(tl.ones(1, device=device), copy=False)


def _shuffle_stream(device):
    from tensorlab.utils.data import DataLoader, RandomSampler
    orders = [list(RandomSampler(range(10), generator=tl.Generator().manual_seed(0))) for _ in range(2)]
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(10))
    tl.manual_seed(0)
    first = [v for b in DataLoader(list(range(10)), batch_size=4, shuffle=True) for v in b.tolist()]
    tl.manual_seed(0)
    assert [v for b in DataLoader(list(range(10)), batch_size=4, shuffle=True) for v in b.tolist()] == first


def _worker_batches_pickled(device):
    from tensorlab.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(tl.arange(6).float().reshape(3, 2))
    (batch,) = next(iter(DataLoader(ds, batch_size=3, num_workers=1)))
    assert batch.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]] and not batch.is_shared()
def _encoder_padded_positions(device):
    layer = tl.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True).to(device)
    enc = tl.nn.TransformerEncoder(layer, 1).eval()
    x = tl.ones(1, 3, 4, device=device) * tl.arange(4, device=device)
    with tl.no_grad():
        y = enc(x, src_key_padding_mask=tl.tensor([[False, False, True]], device=device))
    assert y[0, 2].abs().sum().item() > 0  # computed, not zeroed


def _bce_range_on_gpu(device):
    x, t = tl.tensor([1.5, 0.5], device=device), tl.tensor([1.0, 0.0], device=device)
    if device == "cpu":
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            tl.nn.functional.binary_cross_entropy(x, t)
    else:
        tl.nn.functional.binary_cross_entropy(x, t)  # no host sync to check it
def _det_singular_grad(device):
    a = tl.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 7.0]], dtype=tl.float64, device=device,
                  requires_grad=True)
    tl.linalg.det(a).backward()
    assert np.allclose(a.grad.cpu().numpy(), [[22.0, -11.0, 0.0], [-11.0, 5.5, 0.0], [0.0, 0.0, 0.0]])


def _lowrank_stream(device):
    a = tl.tensor(np.outer(np.arange(1.0, 6.0), np.arange(1.0, 4.0)), dtype=tl.float64, device=device)  # rank 1
    tl.manual_seed(0)
    U1, S1, V1 = tl.svd_lowrank(a, q=2)
    tl.manual_seed(0)
    U2, S2, V2 = tl.svd_lowrank(a, q=2)
    assert np.array_equal(U1.cpu().numpy(), U2.cpu().numpy())  # reproducible for a seed
    assert np.allclose(((U1 * S1) @ V1.mT).cpu().numpy(), a.cpu().numpy())


def _not_differentiable_counts(device):
    w = tl.ones(3, device=device, requires_grad=True)
    assert tl.bincount(tl.tensor([0, 1, 1], device=device), w).grad_fn is None
    assert tl.unique(w).grad_fn is None


def _searchsorted_nan_boundaries(device):
    seq = tl.tensor([0.0, 0.0, 1.0, 1.0, 4.0, math.nan], device=device)
    assert tl.searchsorted(seq, tl.tensor([2.0, 5.0], device=device)).tolist() == [4, 5]
    assert tl.searchsorted(seq, tl.tensor([2.0, math.nan], device=device), right=True).tolist() == [4, 6]


def _numpy_ufunc_results(device):
    t = tl.arange(3.0, device=device)
    if device != "cpu":  # a CUDA tensor is never copied to the host by a ufunc
        with pytest.raises(TypeError, match="can't convert"):
            np.isnan(t)
        return
    assert np.isnan(t).dtype is tl.bool
    r = np.ones(3) + t
    assert isinstance(r, tl.Tensor) and r.tolist() == [1.0, 2.0, 3.0]


def _as_strided_scatter_grad(device):
    x = tl.zeros(4, device=device, dtype=tl.float64, requires_grad=True)
    src = tl.ones(2, device=device, dtype=tl.float64)
    y = tl.as_strided_scatter(x, src, (2,), (1,), 1)
    (y * tl.arange(4.0, device=device, dtype=tl.float64)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 3.0]  # the window (elements 1, 2) came from src


def _mode_long_rows(device):
    x = tl.tensor([3.0] * 10 + [1.0] * 20 + [3.0] * 10 + [2.0], device=device)
    v, i = tl.mode(x)
    assert v.item() == 1.0 and i.item() == 29  # 1 and 3 occur 20 times each: the smaller wins, at its last occurrence


def _native_batch_norm_without_stats(device):
    with pytest.raises(RuntimeError):
        tl.native_batch_norm(tl.ones(2, 3, device=device), None, None, None, None, False, 0.1, 1e-5)


def _load_defaultdict(device):
    import collections
    import io
    buf = io.BytesIO()
    d = collections.defaultdict(list, {"a": [1]})
    tl.save({"d": d, "t": tl.ones(2, device=device)}, buf)
    buf.seek(0)
    got = tl.load(buf)
    assert isinstance(got["d"], collections.defaultdict) and got["d"]["a"] == [1]


def _load_refuses_tensor_state(device):
    import io
    import pickle
    import zipfile
    buf = io.BytesIO()
    tl.save(tl.nn.Parameter(tl.arange(3.0, device=device)), buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:  # the same checkpoint, its parameter given state
        for info in src.infolist():
            payload = src.read(info)
            if info.filename.endswith("/data.pkl"):
                payload = payload[:-1] + pickle.dumps({"_dtype": 1}, protocol=2)[2:-1] + b"b."
            zf.writestr(info.filename, payload)
    out.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        tl.load(out)


class _UnpicklableItems:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i  # a lambda cannot be pickled back to the main process


def _dataloader_unpicklable_batch(device):
    from tensorlab.utils.data import DataLoader
    it = iter(DataLoader(_UnpicklableItems(), batch_size=None, num_workers=1, collate_fn=lambda x: x))
    with pytest.raises(RuntimeError):
        next(it)


def _polynomials_at_nan(device):
    x = tl.tensor([math.nan], device=device)
    n = tl.tensor([2.0], device=device)
    for name in ("chebyshev_polynomial_u", "laguerre_polynomial_l", "legendre_polynomial_p"):
        assert math.isnan(getattr(tl.special, name)(x, n).item()), name


def _vmap_runs_per_element(device):
    f = tl.func.vmap(lambda row: row * row.sum().item())  # data-dependent Python: fine in a per-element loop
    assert f(tl.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)).tolist() == [[3.0, 6.0], [21.0, 28.0]]


def _index_error_at_next_wait(device):
    x = tl.arange(4.0, device=device)
    i = tl.tensor([1, 9], device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="index 9 is out of bounds"):
            x[i]
        return
    x[i] = 1.0  # queued with its check: no wait, no error yet
    with pytest.raises(IndexError, match="index 9 is out of bounds.*reported at this synchronization"):
        tl.cuda.synchronize()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and (x + 1).sum().item() == 10.0  # unchanged; the device works


def _graph_capture_refuses_random(device):
    if device == "cpu":
        return
    with pytest.raises(RuntimeError, match="random op inside a CUDA graph capture"):
        with tl.cuda.graph(tl.cuda.CUDAGraph()):
            tl.rand(2, device=device)


def _pack_padded_too_long(device):
    x = tl.zeros(3, 2, 4, device=device)
    with pytest.raises(RuntimeError):
        tl.nn.utils.rnn.pack_padded_sequence(x, tl.tensor([5, 2]), enforce_sorted=True)


def _sparse_add_concatenates(device):
    i = tl.tensor([[0, 1, 1], [2, 0, 2]], device=device)
    s = tl.sparse_coo_tensor(i, tl.tensor([3.0, 4.0, 5.0], device=device), (2, 3))
    t = s + s
    assert t._nnz() == 6 and not t.is_coalesced()
    assert t.coalesce()._nnz() == 3 and tl.equal(t.to_dense(), 2 * s.to_dense())


def _lbfgs_state_floats(device):
    w = tl.tensor([1.5, -0.5], device=device, requires_grad=True)
    opt = tl.optim.LBFGS([w], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((w - 1.0) ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    st = opt.state[w]
    assert isinstance(st["t"], (int, float)) and all(isinstance(v, float) for v in st["ro"])


def _onnx_export_returns_none(device):
    pytest.importorskip("onnx")
    import io
    m = tl.nn.Linear(3, 2)
    assert tl.onnx.export(m, (tl.zeros(1, 3),), io.BytesIO(), dynamo=True) is None


def _zero_refuses_overlap(device):
    from tensorlab.distributed.optim import ZeroRedundancyOptimizer
    p = tl.nn.Parameter(tl.zeros(2))
    with pytest.raises((ValueError, RuntimeError, NotImplementedError)):
        ZeroRedundancyOptimizer([p], tl.optim.SGD, lr=0.1, overlap_with_ddp=True)


def _multi_margin_empty_mean_nan(device):
    out = tl.nn.functional.multi_margin_loss(tl.zeros(0, 3, device=device), tl.zeros(0, dtype=tl.int64, device=device))
    assert math.isnan(out.item())


DIVERGENCES = (
    Divergence("gelu", "+inf, bfloat16, float16 or float32, approximate='none'",
               "NaN on its vectorized CPU path, inf on its scalar path (depends on the CPU and the length; "
               "float16 too in torch 2.11, seen on an H200 machine; inf on CUDA)", "inf",
               "gelu(x) = x·Φ(x) tends to x as x → +inf; torch's vectorized erf formula makes inf·0",
               PATH_DEPENDENT,
               _gelu_inf, corrects=lambda op, kw, dt: op == "gelu" and dt in ("bfloat16", "float16", "float32"),
               right=_gelu_right),
    Divergence("div(rounding_mode='trunc')", "bfloat16 quotients near an integer, e.g. -2 / 0.4004",
               "its vectorized path rounds the quotient to bfloat16 before truncating (-5 for three elements), "
               "its scalar path does not (-4 for one)", "-4: one rounding, after truncating",
               "the answer must not depend on the tensor's length", PATH_DEPENDENT, _div_trunc_bf16,
               corrects=lambda op, kw, dt: op == "div" and kw.get("rounding_mode") == "trunc" and dt == "bfloat16",
               right=_div_trunc_right),
    Divergence("maximum, minimum", "equal operands of different sign: maximum(-0.0, 0.0)",
               "the first operand on its scalar path, the second on its vectorized path (depends on the length)",
               "the first operand (NaN still propagates), on both backends",
               "one answer whatever the length; the CUDA kernels' rule", PATH_DEPENDENT, _extreme_ties,
               corrects=lambda op, kw, dt: op in ("maximum", "minimum"), right=_extreme_right),
    Divergence("every creation and view op", "more than 64 dimensions", "allowed (up to its own limit)",
               "RuntimeError naming the 64-dimension limit",
               "NumPy, which backs every CPU view, stops at 64 dimensions; a named error instead of NumPy's",
               DELIBERATE, _more_than_64_dims),
    Divergence("any write (add_, copy_, setitem, out=)", "a tensor from from_numpy() of a read-only array",
               "warns once at from_numpy, then writes into the read-only memory",
               "RuntimeError, nothing written",
               "writing into memory its owner marked read-only is undefined behaviour", DELIBERATE, _read_only_numpy),
    Divergence("tensor()", "a NumPy array with negative strides", "ValueError (negative strides not supported)",
               "a copy with positive strides", "tensor() always copies, so no negative stride can reach a tensor",
               DELIBERATE, _negative_stride_tensor),
    Divergence("full()", "an int outside int64 into a floating dtype: full((), 2**63, dtype=float16)",
               "inf (float16), or OverflowError 'can't convert negative int to unsigned' (-2**63-1)",
               "RuntimeError (overflow) for 2**63 into float16; -2**63 as float32",
               "one rule for every fill value: it is compared with the dtype's range, whatever its Python type",
               DELIBERATE, _huge_int_into_half),
    Divergence("tensor(), from_numpy()", "uint16, uint32, uint64 data", "supported",
               "TypeError listing the supported dtypes", "tensorlab's dtypes are bool, uint8, int8-int64, float16, "
               "bfloat16, float32, float64, complex64, complex128", DELIBERATE, _unsupported_dtypes),
    Divergence("tensor()", "ragged nested data: (128, []) as int8; ([], 1)",
               "reports the first problem in element order (RuntimeError: 128 overflows int8); accepts ([], 1) "
               "as a (2, 0) tensor", "TypeError naming the ragged dimension, for both",
               "the structure is checked before any value; a number where a sequence belongs is an error",
               DELIBERATE, _ragged_order),
    Divergence("max/min/sort/topk/kthvalue/median(out=(values, indices))", "values and indices that overlap "
               "each other, e.g. b[:1] and b[1:] both resized to 3 elements",
               "values [3, 4, 5], indices [4, 5, 1]: its kernel interleaves the two writes element by element",
               "values [3, 1, 1], indices [1, 1, 1]: every value, then every index",
               "the results are computed into fresh memory and copied out one output after the other, so that all "
               "outputs change or none; torch leaves overlapping outputs undefined", DELIBERATE, _overlapping_outs),
    Divergence("masked_fill_", "a self-overlapping (expanded) tensor", "allowed with a deprecation warning: an "
               "element aliased with a masked one ends up filled too", "RuntimeError (internal overlap), as every "
               "other in-place op but fill_/zero_", "the result depends on which aliased element is written last; "
               "torch deprecates it", DELIBERATE, _masked_fill_expanded),
    Divergence("index_put_, setitem with index tensors", "a self-overlapping (expanded) tensor",
               "allowed (e[tensor([0])] = 9 writes the aliased row)", "RuntimeError (internal overlap), as setitem "
               "with ints and slices in both", "one rule for every write through an aliased layout but fill_/zero_",
               DELIBERATE, _index_put_expanded),
    Divergence("linspace()", "float32/float16/bfloat16 interior points",
               "computed in the result dtype", "the float64 formula's value (start + float64(i * step), rounded "
               "once to float32; float16/bfloat16 from that float32), without float64 arithmetic on the device "
               "(may differ from torch by one ulp)",
               "one formula for both backends (kernels/creation.cu rounds the double product in 64-bit integers "
               "and sums in float pairs; backends/range_params.py)", DELIBERATE,
               _linspace_double),
    Divergence("special functions (digamma, trigamma, zeta, igamma(c), i0/i1(e), Bessel J/Y/K, airy_ai, ndtri, "
               "spherical_bessel_j0)", "float32/float16/bfloat16",
               "computed in float on both devices, by different code on the CPU and CUDA (results differ by ulps)",
               "CPU: SciPy in float64, rounded once; CUDA: float kernels (kernels/tensorlab/special_float.cuh) within "
               "~4e-6 relative (near zeros 3e-6 absolute) of that, float16/bfloat16 within one 16-bit rounding",
               "no FP64 in a float kernel (issue 37); the CPU keeps the more accurate answer as the reference the "
               "CUDA kernels are tested against (tests/test_special_float_kernels.py)", DELIBERATE,
               _special_float_kernels),
    Divergence("fill_, full(), full_like()", "a float16/bfloat16 fill value past the dtype's range (1e300)",
               "inf for a one-element CPU tensor (its scalar_fill shortcut), RuntimeError 'value cannot be "
               "converted to type c10::Half without overflow' for any other size",
               "RuntimeError (overflow) whatever the size; inf and NaN themselves fit",
               "the answer must not depend on the tensor's length (torch's is path-dependent; no elementwise "
               "oracle test reaches it)", DELIBERATE, _fill_overflow_half),
    Divergence("_addmm_activation(use_gelu=True)", "CUDA tensors",
               "GELU's tanh approximation on CUDA (cuBLASLt's GELU_BIAS epilogue), the exact GELU on the CPU",
               "the exact GELU on both backends (the BIAS epilogue, then the GELU kernel)",
               "one answer on every device: torch's CPU one", DELIBERATE, _addmm_activation_gelu_exact),
    Divergence("std, var, norm (float32)", "values whose squares leave float32's range: std([1e30, 1, 2, 3]), "
               "norm([3e-25, 4e-25])",
               "std 5e29 on the CPU (accumulated in double), inf on CUDA (accumulated in float); the norm's squares "
               "underflow: 0.0", "5e29 and 5e-25 on both backends: the CPU accumulates in double, CUDA in float "
               "scaled by an exact power of two (no overflow or underflow where the result is finite)",
               "one answer on every device; the CPU's is the finite, right one", DELIBERATE, _wide_moments),
    Divergence("mean(x, dim, out=x) and other reductions into an input", "out= that is the reduced input",
               "writes the output while reading the input (mean(x, 0, out=x) of [1, 2, 3] gives 0.)",
               "RuntimeError, nothing changed", "an out= that aliases an input of a reduction gives a wrong answer",
               DELIBERATE, _mean_out_self),
    Divergence("getitem with index tensors, masks or bools", "a source in a non-contiguous memory order: "
               "x.t()[[0, 2]]", "the result's strides follow the source's memory order (TensorIterator)",
               "a contiguous result (same values and shape)", "one layout rule for every gather; a later .view() "
               "that torch refuses on such a result works here", DELIBERATE, _advanced_index_layout),
    Divergence("any op that raises (resize_, set_, in-place, out=)", "a call torch refuses after it has started: "
               "resize_ of a non-resizable storage, out= resized before a later check fails",
               "may leave the tensor changed (a new shape over the old bytes: pytorch/pytorch#170298; 4,968 of "
               "218,915 fuzzed programs)", "every tensor and storage exactly as before the call",
               "the strong exception guarantee: tensorlab's first promise (docs/exception-safety.md)", DELIBERATE,
               _raising_changes_nothing),
    Divergence("from_dlpack()", "a producer with negative strides, e.g. np.arange(6.)[::-1]",
               "aborts the process (a c10::Error escapes: 'Storage size calculation overflowed')",
               "BufferError naming the strides; copy=True asks the producer for a copy",
               "nothing a user passes may crash the interpreter; tensors cannot have negative strides",
               DELIBERATE, _dlpack_negative_strides),
    Divergence("from_dlpack()", "a capsule with DLPack's READ_ONLY flag (a non-writable NumPy array)",
               "ignores the flag: the tensor writes into memory its owner marked read-only",
               "a read-only tensor: every write raises RuntimeError; copy=True gives a writable copy",
               "the same rule as from_numpy of a read-only array", DELIBERATE, _dlpack_read_only),
    Divergence("Tensor.__dlpack__", "stream not given", "-1: no ordering between the streams",
               "None: the consumer's stream (the legacy default one) waits on an event recorded on the producer's "
               "current stream; the host never waits",
               "the DLPack standard's default; the issue asks for stream=None", DELIBERATE, _dlpack_default_stream),
    Divergence("Tensor.__array__ (np.asarray)", "a CUDA tensor", "TypeError (numpy() of a CUDA tensor)",
               "a host copy (a named host wait); copy=False raises NumPy 2's ValueError",
               "np.asarray(t) is how tests and notebooks read results; the wait is visible in sync_trace",
               DELIBERATE, _array_of_cuda),
    Divergence("RandomSampler, DataLoader(shuffle=True), random_split, SubsetRandomSampler, "
               "WeightedRandomSampler", "the same seed (tl.manual_seed / a Generator) as torch",
               "an order drawn from torch's CPU generator (mt19937)",
               "a different order, drawn from tensorlab's Philox stream; reproducible for a seed, new each epoch",
               "tensorlab's generators are Philox4x32-10 on every device; torch's exact stream is not reproduced",
               DELIBERATE, _shuffle_stream),
    Divergence("svd_lowrank, pca_lowrank", "the same seed as torch",
               "U, S, V from a random basis drawn from torch's CPU generator",
               "the same algorithm (torch/_lowrank.py) over a basis from tensorlab's Philox stream: U S V^T agrees, "
               "while U and V differ where the basis is free (signs, columns beyond A's rank)",
               "tensorlab's generators are Philox4x32-10 on every device; torch's exact stream is not reproduced",
               DELIBERATE, _lowrank_stream),
    Divergence("DataLoader(num_workers>0)", "tensor batches made in a worker process",
               "moved through shared memory (the batch is_shared())",
               "pickled through the result queue (a copy); tensorlab tensors have no shared-memory storage",
               "correct values either way; shared CPU storages are not part of tensorlab's storage model",
               DELIBERATE, _worker_batches_pickled),
    Divergence("nn.TransformerEncoder", "eval mode under no_grad, batch_first=True, src_key_padding_mask",
               "the fast path packs a nested tensor: padded positions come out as 0",
               "padded positions computed like the others (torch's training-mode values)",
               "tensorlab has no nested tensors; one path gives one answer in train and eval", DELIBERATE,
               _encoder_padded_positions),
    Divergence("F.binary_cross_entropy, nn.BCELoss", "input outside [0, 1] on a GPU",
               "device-side assert (the CUDA context is lost)", "not checked on GPUs (a loss from the clamped logs); "
               "RuntimeError on the CPU as torch", "a check would cost a host sync per loss", DELIBERATE,
               _bce_range_on_gpu),
    Divergence("use_deterministic_algorithms(True)", "CUDA float index_put_(accumulate=True), scatter_add_, "
               "scatter_(reduce=)", "switches to deterministic kernels", "RuntimeError naming the op (a warning "
               "with warn_only=True): these are tensorlab's only float atomics, and no deterministic kernel "
               "exists for them yet", "refusing is honest where a slower exact kernel is missing", DELIBERATE,
               _deterministic_float_atomics),
    Divergence("linalg.det backward", "a singular matrix (rank n-1), e.g. [[1, 2, 3], [2, 4, 6], [0.5, 1, 7]]",
               "zeros (det * A^-T computed through LU, det = 0)", "the cofactor matrix (the true derivative)",
               "torch's formula multiplies by det, which is 0 there; tensorlab takes the cofactors from the SVD",
               DELIBERATE, _det_singular_grad),
    Divergence("bincount(weights=...), unique", "inputs that require grad",
               "a grad_fn whose backward raises (not implemented)", "no grad_fn (the results are not differentiable)",
               "neither has a derivative; tensorlab does not record a node that can only fail", DELIBERATE,
               _not_differentiable_counts),
    Divergence("searchsorted, bucketize", "NaN among the boundaries, e.g. searchsorted([0, 0, 1, 1, 4, nan], 2)",
               "6 (a binary-search artefact: the comparisons with NaN are false, the answer depends on the path)",
               "4: NaN boundaries sort last, as sort() puts them", "tensorlab sorts values and boundaries together "
               "(no binary-search kernel); a NaN value still lands after every boundary, as in torch", DELIBERATE,
               _searchsorted_nan_boundaries),
    Divergence("NumPy ufuncs on tensors (Tensor.__array_ufunc__)", "np.isnan(t) and other bool-valued ufuncs; "
               "ndarray + t (the array first)", "a uint8 tensor (its __array_wrap__ turns bool into uint8); "
               "TypeError 'Concatenation operation is not implemented for NumPy arrays'",
               "a bool tensor; a tensor computed by NumPy, as t + ndarray", "bool is the ufunc's own dtype (torch's "
               "uint8 predates its bool dtype); both operand orders give one answer", DELIBERATE,
               _numpy_ufunc_results),
    Divergence("as_strided_scatter backward", "any input that requires grad",
               "the input's gradient is the gradient of the window's positions (it fails torch's own gradcheck)",
               "the output's gradient with the window zeroed: those positions came from src", "the input does not "
               "reach the output through the window; gradcheck agrees with tensorlab", DELIBERATE,
               _as_strided_scatter_grad),
    Divergence("mode", "rows longer than 16 elements", "the index of an arbitrary occurrence of the mode (its CPU "
               "kernel sorts unstably)", "the index of the mode's last occurrence, on every device (values agree)",
               "one answer whatever the length and the device", DELIBERATE, _mode_long_rows),
    Divergence("native_batch_norm", "training=False without running statistics (None)", "crashes the process "
               "(segmentation fault, torch 2.13)", "RuntimeError naming the missing statistics",
               "nothing a user passes may crash the interpreter", DELIBERATE, _native_batch_norm_without_stats),
    Divergence("load(weights_only=True)", "a checkpoint holding a collections.defaultdict with a builtin factory "
               "(list, dict, set, int, ...)", "refused (not on its allowlist)", "loaded", "everything tl.save writes "
               "(schedulers, optimizers) loads under the default", DELIBERATE, _load_defaultdict),
    Divergence("load(weights_only=True)", "a file that sets state on a Tensor or Parameter (BUILD, __setstate__, "
               "slots such as _dtype/_meta), a non-bool requires_grad, bytearray(n) larger than the pickle, a record "
               "inflating more than 64x", "applies the state / allocates / inflates", "UnpicklingError or "
               "RuntimeError, before allocating", "a file is data: tensorlab builds its objects only through their "
               "constructors and checks sizes against the file (tests/test_serialization_safety.py)", DELIBERATE,
               _load_refuses_tensor_state),
    Divergence("DataLoader(num_workers>0)", "a worker whose batch or exception cannot be pickled, or that dies "
               "(signal, exit)", "hangs (unpicklable results), or raises once and then blocks on the next next()",
               "RuntimeError naming the worker, pid, signal or exit code and batch, within a second; every later "
               "next() raises too", "a loader must never hang (tests/test_dataloader_faults.py)", DELIBERATE,
               _dataloader_unpicklable_batch),
    Divergence("special.chebyshev_polynomial_u/v/w, laguerre, legendre, shifted_* polynomials", "x = NaN",
               "an uninitialized value (e.g. U_2(NaN) = 35)", "NaN", "NaN in, NaN out, as every other elementwise "
               "op", DELIBERATE, _polynomials_at_nan),
    Divergence("func.vmap", "any function", "batched kernels (data-dependent control flow and .item() refused)",
               "the function run once per batch element and the results stacked: values agree, and data-dependent "
               "code works", "a loop is exact and always applicable; tensorlab has no batching rules yet",
               DELIBERATE, _vmap_runs_per_element),
    Divergence("index ops on CUDA (x[idx], x[idx] = v, index_put_, gather, scatter*, index_select, index_fill_, "
               "embedding, nll_loss/cross_entropy targets, multinomial's probabilities)", "an out-of-range index",
               "a device-side assert: the error surfaces later and the CUDA context is unusable until the process "
               "restarts", "checked on the device without a host wait; the op writes nothing (an in-place target "
               "stays bit-identical; its version counter has counted the launch); the CPU backend's exception "
               "is raised at the next host wait, naming the op, the value, the bound and the launching line; "
               "the device stays usable; tl.cuda.set_check_mode('eager') / CUDA_LAUNCH_BLOCKING=1 raise at the call",
               "no hidden waits (issue 35) and an error that names the line, without poisoning the context",
               DELIBERATE, _index_error_at_next_wait),
    Divergence("CUDA graph capture", "a random op (rand, dropout, ...) inside the captured region",
               "captured with a per-replay offset: each replay draws new numbers",
               "refused with a RuntimeError naming the fix (draw outside the region, pass the mask in)",
               "tensorlab's generators pass (seed, offset) to the kernel by value: a replay would repeat the "
               "captured draws silently", DELIBERATE, _graph_capture_refuses_random),
    Divergence("nn.utils.rnn.pack_padded_sequence", "a length longer than the input's time steps",
               "reads past the end of the input", "RuntimeError naming the length and the input's size",
               "never read memory outside a tensor", DELIBERATE, _pack_padded_too_long),
    Divergence("sparse COO s + s", "uncoalesced operands", "CPU merges the two index lists (6 -> coalesced)",
               "the entries are concatenated (uncoalesced result); values equal after coalesce()",
               "one concatenation, no sort; torch's CUDA result is uncoalesced too", DELIBERATE,
               _sparse_add_concatenates),
    Divergence("optim.LBFGS", "its state", "t, ro, al as 0-dim tensors", "Python floats (ro/al: lists of floats)",
               "they are scalars the step computes on the host anyway; iterates agree to float64 rounding",
               DELIBERATE, _lbfgs_state_floats),
    Divergence("onnx.export", "dynamo=True", "the dynamo exporter; returns an ONNXProgram",
               "one exporter (tracing at tensorlab's op records), writes f, returns None; opsets 13-23",
               "tensorlab has no dynamo/FX graph capture", DELIBERATE, _onnx_export_returns_none),
    Divergence("distributed.optim.ZeroRedundancyOptimizer", "overlap_with_ddp=True", "steps inside DDP's "
               "communication hook", "refused", "tensorlab's DDP has no communication hooks", DELIBERATE,
               _zero_refuses_overlap),
    Divergence("resize_, set_ (growing)", "a tensor whose CPU storage share_memory_() moved into shared memory",
               "resizable() says True; resize_(100) crashes the interpreter (segmentation fault)",
               "resizable() is False; RuntimeError 'Trying to resize storage that is not resizable', nothing changed",
               "a shared-memory segment has a fixed size; nothing a user passes may crash the interpreter",
               DELIBERATE, _shared_storage_resize),
    Divergence("nn.functional.multi_margin_loss", "an empty batch, reduction='mean'", "uninitialized memory",
               "NaN (0/0)", "a mean over nothing", DELIBERATE, _multi_margin_empty_mean_nan),
)


def oracle(torch, op_name, kwargs, fn, args, want):
    """torch's answer, with every path-dependent row that applies replaced by the right value."""
    dt = str(want.dtype).replace("torch.", "")
    for d in DIVERGENCES:
        if d.corrects is not None and d.corrects(op_name, kwargs, dt):
            want = d.right(torch, fn, args, kwargs, want)
    return want


def render():
    """The table as docs/torch-divergences.md shows it."""
    head = ("# Known divergences from torch 2.13\n\n"
            "Generated from `tests/torch_divergences.py` (`python tests/torch_divergences.py`); every row is\n"
            "checked by `tests/test_torch_divergences.py` on every device. *torch path-dependent*: torch's\n"
            "CPU answer depends on its code path (`ATEN_CPU_CAPABILITY`, the tensor's length), and the\n"
            "torch-oracle tests assert the right value instead. *deliberate*: tensorlab differs on purpose.\n\n"
            "| op | inputs | torch | tensorlab | why | kind |\n|---|---|---|---|---|---|\n")
    cell = lambda s: s.replace("|", "\\|")  # noqa: E731
    return head + "".join(f"| {cell(d.op)} | {cell(d.inputs)} | {cell(d.torch)} | {cell(d.ours)} | {cell(d.why)} "
                          f"| {d.kind} |\n" for d in DIVERGENCES)


if __name__ == "__main__":
    print(render(), end="")
