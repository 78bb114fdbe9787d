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


def _negative_stride_tensor(device):
    t = tl.tensor(np.arange(4)[::-1], device=device)
    assert t.tolist() == [3, 2, 1, 0] and t.stride() == (1,)
    with pytest.raises(ValueError, match="negative"):
        tl.from_numpy(np.arange(4)[::-1])


def _huge_int_into_half(device):
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.full((), 2 ** 63, dtype=tl.float16, device=device)
    assert tl.full((), -2 ** 63 - 1, dtype=tl.float32, device=device).item() == -2.0 ** 63


def _unsupported_dtypes(device):
    for npdt in (np.uint16, np.uint32, np.uint64, np.complex64, np.complex128):
        with pytest.raises(TypeError, match="can't convert np.ndarray"):
            tl.from_numpy(np.zeros(2, dtype=npdt))


def _linspace_double(device):
    got = tl.linspace(0.5, 7.5, 4, dtype=tl.float32, device=device).cpu().numpy()
    want = (np.array([0.5, 0.5 + 7 / 3, 7.5 - 7 / 3, 7.5], dtype=np.float64)).astype(np.float32)
    assert got.tolist() == want.tolist()


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


def _det_singular_grad(device):
    a = tl.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 7.0]], dtype=tl.float64, device=device,
                  requires_grad=True)
    if device != "cpu":  # tl.linalg's factorizations are CPU-only (their own row)
        with pytest.raises(RuntimeError, match=r"\.cpu\(\)"):
            tl.linalg.det(a)
        return
    tl.linalg.det(a).backward()
    assert np.allclose(a.grad.numpy(), [[22.0, -11.0, 0.0], [-11.0, 5.5, 0.0], [0.0, 0.0, 0.0]])


def _lapack_cpu_only(device):
    a = tl.eye(2, device=device)
    if device == "cpu":
        assert tl.linalg.inv(a).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    else:
        with pytest.raises(RuntimeError, match="not implemented on CUDA in tensorlab yet"):
            tl.linalg.inv(a)


def _not_differentiable_counts(device):
    w = tl.ones(3, device=device, requires_grad=True)
    assert tl.bincount(tl.tensor([0, 1, 1], device=device), w).grad_fn is None
    assert tl.unique(w).grad_fn is None


def _searchsorted_nan_boundaries(device):
    seq = tl.tensor([0.0, 0.0, 1.0, 1.0, 4.0, math.nan], device=device)
    assert tl.searchsorted(seq, tl.tensor([2.0, 5.0], device=device)).tolist() == [4, 5]
    assert tl.searchsorted(seq, tl.tensor([2.0, math.nan], device=device), right=True).tolist() == [4, 6]


DIVERGENCES = (
    Divergence("gelu", "+inf, bfloat16 or float32, approximate='none'",
               "NaN on its vectorized CPU path, inf on its scalar path (depends on the CPU and the length)", "inf",
               "gelu(x) = x·Φ(x) tends to x as x → +inf; torch's vectorized erf formula makes inf·0",
               PATH_DEPENDENT,
               _gelu_inf, corrects=lambda op, kw, dt: op == "gelu" and dt in ("bfloat16", "float32"),
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
    Divergence("tensor(), from_numpy()", "complex, uint16, uint32, uint64 data", "supported",
               "TypeError listing the supported dtypes", "tensorlab's dtypes are bool, uint8, int8-int64, float16, "
               "bfloat16, float32, float64", DELIBERATE, _unsupported_dtypes),
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
               "computed in the result dtype", "computed in float64, rounded once (may differ by one ulp)",
               "one formula for both backends (kernels/creation.cu evaluates it in double)", DELIBERATE,
               _linspace_double),
    Divergence("linalg.det backward", "a singular matrix (rank n-1), e.g. [[1, 2, 3], [2, 4, 6], [0.5, 1, 7]]",
               "zeros (det * A^-T computed through LU, det = 0)", "the cofactor matrix (the true derivative)",
               "torch's formula multiplies by det, which is 0 there; tensorlab takes the cofactors from the SVD",
               DELIBERATE, _det_singular_grad),
    Divergence("tl.linalg solve/inv/det/slogdet/cholesky/qr/svd/eigh (and norms that need svdvals)",
               "CUDA tensors", "cuSOLVER / MAGMA", "RuntimeError: not implemented on CUDA in tensorlab yet; "
               "move the tensor to the CPU with .cpu()", "no dense factorization kernels on CUDA yet; the CPU runs "
               "NumPy's LAPACK", DELIBERATE, _lapack_cpu_only),
    Divergence("bincount(weights=...), unique", "inputs that require grad",
               "a grad_fn whose backward raises (not implemented)", "no grad_fn (the results are not differentiable)",
               "neither has a derivative; tensorlab does not record a node that can only fail", DELIBERATE,
               _not_differentiable_counts),
    Divergence("searchsorted, bucketize", "NaN among the boundaries, e.g. searchsorted([0, 0, 1, 1, 4, nan], 2)",
               "6 (a binary-search artefact: the comparisons with NaN are false, the answer depends on the path)",
               "4: NaN boundaries sort last, as sort() puts them", "tensorlab sorts values and boundaries together "
               "(no binary-search kernel); a NaN value still lands after every boundary, as in torch", DELIBERATE,
               _searchsorted_nan_boundaries),
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
