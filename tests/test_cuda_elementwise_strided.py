"""The type-resolved strided elementwise kernels (`*_strided`, kernels/elementwise.cu) against the CPU
backend: every *_strided instantiation of kernel_table (each op in each storage dtype it has a row for,
and the mixed float16/bfloat16-with-float32 rows) over a transposed, a broadcast and a sliced operand
into a transposed output, with Python scalars where the op takes them; the launcher's choice of the
typed kernel for broadcast/transposed/strided/mixed public ops (and of the generic kernel for the
dtype mixes without a row, 64-bit indexing and generic_kernels()); a grid smaller than the tensor, so
threads run several groups of StridedUnroll<T> elements and a partial last group. Runs where CUDA (or
the emulation driver) is available."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends, dtypes
from tensorlab.kernel_table import ELEMENTWISE, elementwise_strided_expr, elementwise_strided_types
from test_cuda_elementwise import _CPU, _CUDA, _compare, _cuda_only, _values  # noqa: F401 (the autouse fixture)

pytestmark = pytest.mark.cuda

_DIVISOR = {"div_true": 1, "div_trunc": 1, "div_floor": 1, "remainder": 1, "fmod": 1, "addcdiv": 2}
_SHAPE = (5, 23)


def _launched(fn):
    from tensorlab.backends.cuda import launch as K
    before = dict(K.LAUNCHES)
    r = fn()
    return r, {e for (s, e), v in K.LAUNCHES.items() if v != before.get((s, e), 0) and s == "elementwise.cu"}


def _pair(arr, dt, how):
    """(cpu, cuda) tensors of shape _SHAPE holding arr (shape _SHAPE; (1, 23) for "broadcast"):
    "transposed" a .t() view, "sliced" every other column of a wider tensor, else contiguous."""
    if how == "transposed":
        return tuple(tl.tensor(np.ascontiguousarray(arr.T), dtype=dt, device=d).t() for d in ("cpu", "cuda"))
    if how == "sliced":
        wide = np.repeat(arr, 2, axis=1)
        return tuple(tl.tensor(wide, dtype=dt, device=d)[:, ::2] for d in ("cpu", "cuda"))
    return tuple(tl.tensor(arr, dtype=dt, device=d) for d in ("cpu", "cuda"))


_LAYOUTS = ("transposed", "broadcast", "sliced")


def _compute(t):
    """The compute dtype the front end asks for with storage type t (float16/bfloat16 upcast)."""
    return dtypes.float32 if t in (dtypes.float16, dtypes.bfloat16) else t


def _scalar_position(prim, op, ops):
    """An operand position that may be a Python scalar in this row (None for unary): the last one
    that is not a bool mask/condition."""
    if prim == "unary":
        return None
    k = len(ops) - 1
    return k if not (op in ("where",) and k == 0) else None


def _run_row(prim, op, t, out_dt, op_dts, rng, scalar):
    operands = []
    for k, dt in enumerate(op_dts):
        nonzero = _DIVISOR.get(op) == k
        if scalar and k == len(op_dts) - 1:
            v = _values(dt, (1,), rng, nonzero=True).item()
            operands.append((v, v))
            continue
        how = _LAYOUTS[(k + scalar) % 3]  # with a scalar, no operand is transposed like out (dense)
        arr = _values(dt, (1, _SHAPE[1]) if how == "broadcast" else _SHAPE, rng, nonzero)
        cpu, cuda = _pair(arr, dt, how)
        if how == "broadcast":
            cpu, cuda = cpu.expand(*_SHAPE), cuda.expand(*_SHAPE)
        operands.append((cpu, cuda))
    if prim == "unary":  # one transposed operand into a transposed out is dense: slice the input instead
        arr = _values(op_dts[0], _SHAPE, rng)
        operands = [_pair(arr, op_dts[0], "sliced")]
    compute = _compute(t)
    results = []
    for which in (0, 1):
        dev = ("cpu", "cuda")[which]
        out = tl.empty(_SHAPE[::-1], dtype=out_dt, device=dev).t()
        getattr(backends.get((_CPU, _CUDA)[which]), prim)(out, op, *[x[which] for x in operands], compute)
        results.append(out)
    return results


def _cases():
    for prim, ops in ELEMENTWISE.items():
        for op in ops:
            yield pytest.param(prim, op, id=f"{prim}-{op}")


@pytest.mark.parametrize("prim,op", list(_cases()))
def test_every_strided_instantiation_matches_the_cpu_backend(prim, op):
    rng = np.random.default_rng(23)
    for t, out_dt, op_dts in elementwise_strided_types(prim, op):
        expr = elementwise_strided_expr(prim, op, t, out_dt, op_dts)
        k = _scalar_position(prim, op, op_dts)
        # a scalar in place of a mixed row's float32 operand leaves the 16-bit row's types
        one_type = out_dt in (t, tl.bool) and all(d in (t, tl.bool) for d in op_dts)
        scalars = (False, True) if k is not None and one_type and t.is_floating_point else (False,)
        for scalar in scalars:
            res, launched = _launched(lambda: _run_row(prim, op, t, out_dt, op_dts, rng, scalar))
            want, got = res
            desc = f"{expr} scalar={scalar}"
            _compare(got.cpu().numpy(), want.numpy(), out_dt, desc)
            assert expr in launched, f"{desc}: launched {launched}"  # (and integer division's zero check)
            assert not any("_kernel<" in e and e != "any_zero_divisor<int>" for e in launched), launched


# -- the launcher's choice, through the public ops ------------------------------------------------

def _both(arr, dt):
    return tl.tensor(arr, dtype=dt), tl.tensor(arr, dtype=dt, device="cuda")


@pytest.mark.parametrize("dt", [tl.float16, tl.bfloat16, tl.float32, tl.float64, tl.int32, tl.int8, tl.bool],
                         ids=lambda d: d.name)
def test_public_ops_on_broadcast_and_transposed_operands_take_the_typed_kernel(dt):
    rng = np.random.default_rng(17)
    x, bias, col = _both(_values(dt, (6, 9), rng), dt), _both(_values(dt, (9,), rng), dt), \
        _both(_values(dt, (6, 1), rng), dt)
    sq = _both(_values(dt, (9, 9), rng), dt)
    mask = _both(rng.random((1, 9)) < 0.5, tl.bool)
    c = dt.ctype
    pred = ", bool" if dt is not tl.bool else ""  # a predicate's bool output (a default for bool T)
    cases = [  # (what, fn(x, bias, col, sq, mask), the *_strided kernel expected)
        ("x + bias", lambda x, b, cl, s, m: x + b, f"binary_strided<tl::op::Add, {c}, int>"),
        ("x * col", lambda x, b, cl, s, m: x * cl, f"binary_strided<tl::op::Mul, {c}, int>"),
        ("sq.t() == sq", lambda x, b, cl, s, m: s.t() == s, f"binary_strided<tl::op::Eq, {c}, int{pred}>"),
        ("maximum(sq.t(), bias)", lambda x, b, cl, s, m: tl.maximum(s.t(), b),
         f"binary_strided<tl::op::Maximum, {c}, int>"),
        ("where(mask, x, bias)", lambda x, b, cl, s, m: tl.where(m, x, b),
         f"ternary_strided<tl::op::Where, {c}, int{', ' + c + ', bool' if pred else ''}>"),
        ("x.masked_fill(mask, 1)", lambda x, b, cl, s, m: x.masked_fill(m, 1),
         f"ternary_strided<tl::op::MaskedFill, {c}, int{', ' + c + ', ' + c + ', bool' if pred else ''}>"),
        ("sq.t()[::2] < 1", lambda x, b, cl, s, m: s.t()[::2] < (True if s.dtype is tl.bool else 1),
         f"binary_strided<tl::op::Lt, {c}, int{pred}>"),
    ]
    if dt is not tl.bool:
        cases += [
            ("abs(sq.t())", lambda x, b, cl, s, m: tl.abs(s.t()[:, ::2]), f"unary_strided<tl::op::Abs, {c}, int>"),
            ("x - bias", lambda x, b, cl, s, m: x - b, f"binary_strided<tl::op::Sub, {c}, int>"),
            ("clamp(sq.t(), col...)", lambda x, b, cl, s, m: tl.clamp(s.t()[:6], min=cl, max=b),
             f"ternary_strided<tl::op::Clamp, {c}, int>"),
        ]
    if dt.is_floating_point:
        cases += [
            ("exp(bias.expand(6, 9))", lambda x, b, cl, s, m: tl.exp(b.expand(6, 9)),
             f"unary_strided<tl::op::Exp, {c}, int>"),
            ("lerp(x, bias, 0.25)", lambda x, b, cl, s, m: tl.lerp(x, b, 0.25),
             f"ternary_strided<tl::op::Lerp, {c}, int>"),
            ("addcmul(x, col, bias)", lambda x, b, cl, s, m: tl.addcmul(x, cl, b, value=0.5),
             f"ternary_strided<tl::op::Addcmul, {c}, int>"),
        ]
    for what, fn, expr in cases:
        want = fn(x[0], bias[0], col[0], sq[0], mask[0])
        got, launched = _launched(lambda: fn(x[1], bias[1], col[1], sq[1], mask[1]))
        assert expr in launched, f"{dt.name} {what}: launched {launched}"
        assert not any("_kernel<" in e for e in launched), f"{dt.name} {what}: launched {launched}"
        _compare(got.cpu().numpy(), want.numpy(), want.dtype, f"{dt.name} {what}")


@pytest.mark.parametrize("half", [tl.float16, tl.bfloat16], ids=lambda d: d.name)
def test_mixed_16_bit_and_float32_take_the_typed_kernel_in_both_orders(half):
    rng = np.random.default_rng(9)
    h = _both(_values(half, (4, 10), rng), half)
    f = _both(_values(tl.float32, (4, 10), rng), tl.float32)
    fb = _both(_values(tl.float32, (10,), rng), tl.float32)
    c = half.ctype
    cases = [
        ("h + f", lambda h, f, fb: h + f, f"binary_strided<tl::op::Add, float, int, float, {c}>"),
        ("f * h", lambda h, f, fb: f * h, f"binary_strided<tl::op::Mul, float, int, float, float, {c}>"),
        ("h.t() - f.t()", lambda h, f, fb: h.t() - f.t(), f"binary_strided<tl::op::Sub, float, int, float, {c}>"),
        ("fb / h", lambda h, f, fb: fb / h, f"binary_strided<tl::op::DivTrue, float, int, float, float, {c}>"),
        ("h < fb", lambda h, f, fb: h < fb, f"binary_strided<tl::op::Lt, float, int, bool, {c}>"),
        ("f >= h", lambda h, f, fb: f >= h, f"binary_strided<tl::op::Ge, float, int, bool, float, {c}>"),
        ("h.clone().mul_(f)", lambda h, f, fb: h.clone().mul_(f), f"binary_strided<tl::op::Mul, float, int, {c}, {c}>"),
        ("maximum(fb, h, out=16-bit)",
         lambda h, f, fb: tl.maximum(fb, h, out=tl.empty(h.shape, dtype=h.dtype, device=h.device)),
         f"binary_strided<tl::op::Maximum, float, int, {c}, float, {c}>"),
        ("h.clone().add_(fb)", lambda h, f, fb: h.clone().add_(fb),
         f"binary_strided<tl::op::Add, float, int, {c}, {c}>"),
    ]
    for what, fn, expr in cases:
        want = fn(h[0], f[0], fb[0])
        got, launched = _launched(lambda: fn(h[1], f[1], fb[1]))
        assert expr in launched, f"{half.name} {what}: launched {launched}"
        assert got.dtype is want.dtype, what
        _compare(got.cpu().numpy(), want.numpy(), want.dtype, f"{half.name} {what}")


def test_rare_mixes_wide_indexing_and_generic_kernels_take_the_generic_kernel():
    from tensorlab.backends.cuda import elementwise as E
    from tensorlab.backends.cuda import launch as K
    h = tl.ones((8, 5), dtype=tl.float16, device="cuda")
    i = tl.full((8, 5), 3, dtype=tl.int32, device="cuda")
    f = tl.full((8, 5), 1.5, dtype=tl.float32, device="cuda")
    d = tl.full((5,), 0.5, dtype=tl.float64, device="cuda")
    got, launched = _launched(lambda: f + i)  # float32 with int32: no row
    assert launched == {"binary_kernel<tl::op::Add, float, int>"}, launched
    assert got.cpu().tolist() == [[4.5] * 5] * 8
    _, launched = _launched(lambda: h + d)  # float16 with float64 computes in double
    assert launched == {"binary_kernel<tl::op::Add, double, int>"}, launched
    with K.wide_indexing():
        _, launched = _launched(lambda: h + h.t().t()[:, :1])
    assert launched == {"binary_kernel<tl::op::Add, float, long long>"}, launched
    with E.generic_kernels():
        got, launched = _launched(lambda: h * h[:1])
    assert launched == {"binary_kernel<tl::op::Mul, float, int>"}, launched
    _, launched = _launched(lambda: h * h[:1])  # the context's recipes are gone with it
    assert launched == {"binary_strided<tl::op::Mul, __half, int>"}, launched
    assert got.cpu().tolist() == [[1.0] * 5] * 8


@pytest.mark.parametrize("dt", [tl.float32, tl.bfloat16, tl.int64], ids=lambda d: d.name)
def test_threads_run_several_groups_and_a_partial_last_one(dt, monkeypatch):
    """A grid of one block (256 threads) over 25 x 87 = 2175 elements: each thread runs full groups of
    StridedUnroll<T> elements (4 for bfloat16, else 2), some threads part of one more; out aliases the
    first input."""
    from tensorlab.backends.cuda import elementwise as E
    from tensorlab.backends.cuda import launch as K
    monkeypatch.setattr(E, "_FAST", {})
    monkeypatch.setitem(K._grid_caps, 0, 1)
    rng = np.random.default_rng(1)
    a, b = _values(dt, (87, 25), rng), _values(dt, (87,), rng)
    xc, yc = tl.tensor(a, dtype=dt).t(), tl.tensor(b, dtype=dt)
    x, y = tl.tensor(a, dtype=dt, device="cuda").t(), tl.tensor(b, dtype=dt, device="cuda")
    _, launched = _launched(lambda: x.mul_(y))
    xc.mul_(yc)
    assert launched == {f"binary_strided<tl::op::Mul, {dt.ctype}, int>"}, launched
    _compare(x.cpu().numpy(), xc.numpy(), dt, "in place, one block")
