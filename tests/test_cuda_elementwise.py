"""CUDA elementwise primitives against the CPU backend's, called directly: every kernel of
kernel_table.ELEMENTWISE in each compute type it is instantiated for, through each kernel variant
(the type-resolved contiguous *_vec, generic dense with mixed dtypes and scalars, the type-resolved
*_strided for strided/broadcast operands, and the generic kernel on the same strided operands under
generic_kernels()), with 32-bit and 64-bit indexing; plus the integer division-by-zero check and the vector path's
alignment and tail handling. Runs where CUDA (or the emulation driver) is available."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends
from tensorlab.device import Device
from tensorlab.kernel_table import ELEMENTWISE, ELEMENTWISE_BOOL_RESULT, elementwise_strided_types, \
    elementwise_vec_types

pytestmark = pytest.mark.cuda

_CPU, _CUDA = Device("cpu"), Device("cuda", 0)
_CLASS_DTYPE = {"B": tl.bool, "I": tl.int8, "F": tl.float32, "D": tl.float64}
# the integer dtype each variant computes in (every one narrows from long long differently)
_INT_DTYPES = {"vec": tl.int8, "dense": tl.int32, "strided": tl.int16, "broadcast": tl.uint8}
_DIVIDES = {"div_true", "div_trunc", "div_floor", "remainder", "fmod"}
_SPECIALS = (np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 2.5, -2.5, -1.0, 1.0)


@pytest.fixture(autouse=True)
def _cuda_only():
    d = backends.cuda_diagnosis()
    if d is not None and os.environ.get("TENSORLAB_CUDA_EMULATION") != "1":
        pytest.skip(f"no CUDA: {d.what}")


def _values(dt, shape, rng, nonzero=False):
    n = int(np.prod(shape))
    if dt is tl.bool:
        v = rng.random(n) < 0.5
        if nonzero:
            v[:] = True
    elif dt.is_floating_point:
        v = rng.uniform(-3.0, 3.0, n)
        if nonzero:
            v[np.abs(v) < 0.1] = 0.5
        else:
            v[:len(_SPECIALS)] = _SPECIALS[:n]
    else:
        lo, hi = (0, 11) if dt is tl.uint8 else (-5, 6)
        v = rng.integers(lo, hi, n)
        if dt is not tl.uint8:
            v[:2] = (-1, 3)[:n]  # b == -1 is the division kernels' special case
        if nonzero:
            v[v == 0] = 3
    return v.reshape(shape).astype(dt.np)


def _both(arr, dt):
    return tuple(tl.tensor(arr, dtype=dt, device=d) for d in ("cpu", "cuda"))


class _Case:
    """Operands for one primitive call, as (cpu, cuda) pairs or numbers, and the output dtype."""

    def __init__(self, prim, op, letter, variant, rng):
        self.prim, self.op, self.variant = prim, op, variant
        comp = _CLASS_DTYPE[letter]
        if letter == "I":
            comp = _INT_DTYPES[variant]
        self.compute = comp
        self.out_dtype = tl.bool if op in ELEMENTWISE_BOOL_RESULT else comp
        if variant == "dense" and prim == "unary" and op not in ELEMENTWISE_BOOL_RESULT:  # stored in another dtype
            self.out_dtype = {tl.float32: tl.float16, tl.float64: tl.float32, tl.bool: tl.uint8}.get(comp, tl.int64)
        self.shape = (3, 37)
        arity = {"unary": 1, "binary": 2, "ternary": 3}[prim]
        dts = [self._operand_dtype(k, comp, variant) for k in range(arity)]
        self.operands = [self._make(k, dt, rng) for k, dt in enumerate(dts)]
        self.params = self._params(letter)

    def _operand_dtype(self, k, comp, variant):
        if (self.op == "where" and k == 0) or (self.op == "masked_fill" and k == 1):
            return tl.bool
        if variant == "dense" and k == (1 if self.op == "where" else 0) and comp is not tl.bool:
            return {tl.float32: tl.float16, tl.float64: tl.int32}.get(comp, tl.uint8)  # converted on load
        return comp

    def _make(self, k, dt, rng):
        nonzero = (self.op in _DIVIDES or self.op == "addcdiv") and k == self.prim_divisor()
        if self.op == "masked_fill" and k == 2 or (self.variant == "dense" and self.prim == "binary" and k == 1
                                                   and self.op not in _DIVIDES):
            return _values(dt, (), rng, nonzero=True).item() if dt is not tl.bool else True
        shape = self.shape
        if self.variant == "broadcast" and k == (0 if self.prim == "unary" else 1):
            shape = (1, self.shape[1])
        arr = _values(dt, shape, rng, nonzero)
        if self.variant == "strided" and k == 0:  # a transposed view: not dense in the output's order
            pair = _both(np.ascontiguousarray(arr.T), dt)
            return tuple(t.t() for t in pair)
        if self.variant == "vec" and k == 0 and self.prim != "ternary":  # one element in: unaligned on purpose
            pair = _both(np.concatenate([arr.reshape(-1)[:1], arr.reshape(-1)]), dt)
            return tuple(t[1:].view(*shape) for t in pair)
        return _both(arr, dt)

    def one_row(self):
        """Whether out and the tensor operands have the dtypes of the op's *_vec row for the compute
        dtype (or, computing in float32, for float16/bfloat16 storage: torch's upcast)."""
        rows = [self.compute] + ([tl.float16, tl.bfloat16] if self.compute is tl.float32 else [])
        for t in rows:
            out, ops = elementwise_vec_types(self.prim, self.op, t)
            if self.out_dtype is out and all(x[0]._dtype is d for x, d in zip(self.operands, ops)
                                             if isinstance(x, tuple)):
                return True
        return False

    def typed_row(self):
        """Whether a *_strided row has exactly out's and the tensor operands' dtypes and computes in
        the compute dtype's C type (an integer or bool row: the compute dtype itself)."""
        c_type = {tl.float16: "float", tl.bfloat16: "float", tl.float32: "float", tl.float64: "double"}
        for t, out, ops in elementwise_strided_types(self.prim, self.op):
            same = t is self.compute or (t.is_floating_point and c_type[t] == c_type.get(self.compute))
            if same and out is self.out_dtype and all(x[0]._dtype is d for x, d in zip(self.operands, ops)
                                                      if isinstance(x, tuple)):
                return True
        return False

    def prim_divisor(self):
        return 2 if self.op == "addcdiv" else 1

    def _params(self, letter):
        if self.op in ("add", "sub") and letter != "B":
            return {"alpha": 2}
        if self.op in ("addcmul", "addcdiv"):
            return {"value": 3 if letter == "I" else 0.5}
        if self.op == "round" and letter != "I":
            return {"decimals": {"vec": 1, "dense": -1}.get(self.variant, 0)}
        if self.op == "nan_to_num" and letter in "FD":
            return {"nan": 1.5, "posinf": 7.0, "neginf": -7.0}
        if self.op in ("gelu", "gelu_backward") and self.variant in ("vec", "strided"):
            return {"approximate": "tanh"}
        return {}

    def run(self, which):
        ops = []
        for x in self.operands:
            x = x[which] if isinstance(x, tuple) else x
            ops.append(x)
        dev = ("cpu", "cuda")[which]
        out = tl.empty(self.shape, dtype=self.out_dtype, device=dev)
        if self.variant == "strided" and self.prim != "unary":  # (a unary op on two transposed views is dense)
            out = tl.empty(self.shape[::-1], dtype=self.out_dtype, device=dev).t()
        getattr(backends.get((_CPU, _CUDA)[which]), self.prim)(out, self.op, *ops, self.compute, **self.params)
        return out.cpu().numpy()


def _compare(got, want, dt, desc):
    if dt.is_floating_point:
        tol = {tl.float64: 1e-12, tl.float32: 2e-6}.get(dt, 1e-2)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=desc)
    else:
        np.testing.assert_array_equal(got, want, err_msg=desc)


def _kernels():
    for prim, ops in ELEMENTWISE.items():
        for op, (_, letters) in ops.items():
            yield pytest.param(prim, op, letters, id=f"{prim}-{op}")


@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
@pytest.mark.parametrize("prim,op,letters", list(_kernels()))
def test_every_instantiation_matches_the_cpu_backend(prim, op, letters, wide):
    rng = np.random.default_rng(7)
    from tensorlab.backends.cuda import elementwise as E
    from tensorlab.backends.cuda import launch as K
    variants = ["dense", "strided", "broadcast", "vec"] + ([] if wide else ["generic"])
    for letter in letters:
        for variant in variants:
            case = _Case(prim, op, letter, "strided" if variant == "generic" else variant, rng)
            want = case.run(0)
            with (K.wide_indexing() if wide else E.generic_kernels() if variant == "generic" else _null()):
                before = dict(K.LAUNCHES)
                got = case.run(1)
                launched = {k for k, v in K.LAUNCHES.items() if v != before.get(k, 0) and k[0] == "elementwise.cu"}
            desc = f"{prim} {op} compute={case.compute.name} variant={variant} wide={wide}"
            _compare(got, want, case.out_dtype, desc)
            # the *_vec kernels: contiguous, 32-bit indexed, the dtypes of the op's row; the *_strided ones:
            # 32-bit indexed, the dtypes of a row; else (and under generic_kernels()) the generic kernel
            if case.one_row() and variant in ("vec", "dense") and not wide:
                assert any("_vec<" in e for _, e in launched), f"{desc}: launched {launched}"
            elif case.typed_row() and variant != "generic" and not wide:
                assert any("_strided<" in e and ", int" in e for _, e in launched), f"{desc}: launched {launched}"
            else:
                ix = "long long>" if wide else "int>"
                assert any("_kernel<" in e and e.endswith(ix) for _, e in launched), f"{desc}: launched {launched}"


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# -- integer division by zero -----------------------------------------------------------------

@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
@pytest.mark.parametrize("op", ["div_trunc", "div_floor", "remainder", "fmod"])
def test_integer_division_by_a_zero_tensor_raises_before_writing(op, wide):
    from tensorlab.backends.cuda import launch as K
    a = tl.tensor([[7, -7, 5]], dtype=tl.int32, device="cuda")
    b = tl.tensor([[2, 0, 1], [1, 1, 1]], dtype=tl.int32, device="cuda").t()[:, 0]  # strided divisor with a zero
    out = tl.full((1, 3), 42, dtype=tl.int32, device="cuda")
    with (K.wide_indexing() if wide else _null()), tl.cuda.sync_trace() as trace:
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            backends.get(_CUDA).binary(out, op, a, b, tl.int32)
    assert [r.reason for r in trace] == ["integer division by zero check"]
    assert out.tolist() == [[42, 42, 42]]
    with (K.wide_indexing() if wide else _null()):
        backends.get(_CUDA).binary(out, op, a, tl.tensor([2, -1, 3], dtype=tl.int32, device="cuda"), tl.int32)
    want = {"div_trunc": [3, 7, 1], "div_floor": [3, 7, 1], "remainder": [1, 0, 2], "fmod": [1, 0, 2]}[op]
    assert out.tolist() == [want]


def test_zero_divisor_after_narrowing_to_the_compute_dtype_raises():
    # int8 // int16(256): the divisor converted to int8 is 0, as the CPU backend sees it
    a = tl.tensor([5, 6], dtype=tl.int8, device="cuda")
    b = tl.tensor([256, 2], dtype=tl.int16, device="cuda")
    out = tl.zeros(2, dtype=tl.int8, device="cuda")
    for dev, x, y, o in ((_CPU, a.cpu(), b.cpu(), out.cpu()), (_CUDA, a, b, out)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            backends.get(dev).binary(o, "div_floor", x, y, tl.int8)


def test_scalar_zero_divisor_is_checked_on_the_host_without_a_sync():
    a = tl.tensor([5, 6], device="cuda")
    with tl.cuda.sync_trace() as trace, pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // 0
    assert list(trace) == []
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % tl.zeros(2, dtype=tl.int64, device="cuda")
    assert (tl.tensor([1.0, -1.0, 0.0], device="cuda") // 0).tolist()[:2] == [float("inf"), float("-inf")]


def test_minimum_int64_divided_by_minus_one_wraps_like_numpy():
    lo = np.iinfo(np.int64).min
    a = tl.tensor([lo, lo, 7], device="cuda")
    b = tl.tensor([-1, -1, -1], device="cuda")
    assert (a // b).tolist() == [lo, lo, -7]
    assert (a % b).tolist() == [0, 0, 0]
    assert tl.fmod(a, b).tolist() == [0, 0, 0]


# -- the vectorized path ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("n", [1, 3, 4, 5, 17, 64, 1001])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_vector_path_alignment_and_tail(dtype, n, offset):
    rng = np.random.default_rng(n + offset)
    base = rng.uniform(-2, 2, n + offset).astype(dtype.np)
    other = rng.uniform(-2, 2, n).astype(dtype.np)
    x = tl.tensor(base, device="cuda")[offset:]
    y = tl.tensor(other, device="cuda")
    np.testing.assert_allclose((x * y).cpu().numpy(), base[offset:] * other, rtol=1e-6)
    np.testing.assert_allclose((2.5 - x).cpu().numpy(), np.asarray(2.5, dtype.np) - base[offset:], rtol=1e-6)
    np.testing.assert_allclose(tl.exp(x).cpu().numpy(), np.exp(base[offset:]), rtol=2e-6)
    x.add_(y, alpha=2)  # in place: out aliases the first input exactly
    np.testing.assert_allclose(x.cpu().numpy(), base[offset:] + other * dtype.np.type(2), rtol=1e-6)


def test_in_place_through_a_transposed_view_reads_before_writing():
    a = tl.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4), device="cuda")
    t = a.t()
    t.mul_(2).add_(1)
    np.testing.assert_array_equal(a.cpu().numpy(), np.arange(12.0, dtype=np.float32).reshape(3, 4) * 2 + 1)


def test_mixed_dtypes_and_out_dtype_round_once():
    h = tl.tensor([1.0, 2.0, 3.0], dtype=tl.float16, device="cuda")
    i = tl.tensor([1, 2, 3], dtype=tl.int64, device="cuda")
    assert (h + i).dtype is tl.float16 and (h + i).tolist() == [2.0, 4.0, 6.0]
    out = tl.empty(3, dtype=tl.float64, device="cuda")
    tl.add(tl.tensor([100, 100, 1], dtype=tl.int8, device="cuda"), 100, out=out)
    assert out.tolist() == [-56.0, -56.0, 101.0]  # int8 result wraps before it is stored in float64
    assert (tl.tensor([True, False], device="cuda") + tl.tensor([True, True], device="cuda")).tolist() == [True, True]
    assert (~tl.tensor([True, False], device="cuda")).tolist() == [False, True]
    assert tl.clamp(tl.tensor([float("nan"), -5.0, 5.0], device="cuda"), min=-1.0).tolist()[1:] == [-1.0, 5.0]
