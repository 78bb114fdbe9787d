"""Elementwise ops against a NumPy reference and, where torch is installed, against torch itself
(values, result dtypes and exception types) for every op, dtype and sample of tests/op_table.py;
then in-place/out= semantics, Python operators and the op-specific errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tensorlab as tl
import tensorlab.testing as tlt
from op_table import (ALL_DTYPES, BINARY_OPS, BY_NAME, OPS, SAMPLE_DTYPES, Sample, assert_values, common_dtype,
                      comparable, make,
                      reference, samples, scalar_of, strided, to_numpy, to_torch, torch_dtype_name, torch_to_numpy)
from torch_divergences import oracle

_ERRORS = (TypeError, NotImplementedError, IndexError, ValueError, RuntimeError)


def _error_kind(e):
    """The torch-visible class of an exception (NotImplementedError before its base RuntimeError)."""
    return next(k for k in _ERRORS if isinstance(e, k))


def _call_tl(op, sample):
    return op.tl_fn()(*sample.args, **sample.kwargs)


def _call_torch(op, sample, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op.torch_fn(torch)(*sample.torch_args(torch), **sample.torch_kwargs(torch))


def _outcome(fn):
    try:
        return fn(), None
    except _ERRORS as e:
        return None, e


def _assert_like_torch(op, sample, torch, got, err):
    """Same exception kind as torch, or the same dtype and (within tolerance) the same values."""
    want, werr = _outcome(lambda: _call_torch(op, sample, torch))
    if werr is None:  # never trust a path-dependent torch answer: the divergence table's right value instead
        want = oracle(torch, op.name, sample.kwargs, op.torch_fn(torch), sample.torch_args(torch), want)
    if werr is not None or err is not None:
        assert werr is not None and err is not None and _error_kind(err) is _error_kind(werr), (
            f"{sample.desc}: tensorlab {'raised ' + repr(err) if err else 'returned'}, torch "
            f"{'raised ' + repr(werr) if werr else 'returned'}")
        return
    assert got.dtype.name == torch_dtype_name(want), f"{sample.desc}: dtype {got.dtype.name} vs {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{sample.desc}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    assert_values(to_numpy(got), torch_to_numpy(want), got.dtype.name, op, sample.desc)


# -- every op x dtype x sample ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SAMPLE_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_matches_numpy_reference(device, op, dtype):
    if dtype not in op.dtypes:
        pytest.skip(f"{op.name} is not sampled in {dtype.name}")
    for sample in samples(op, dtype, device):
        refused = op.refuses is not None and op.refuses(sample, common_dtype(op, sample))
        if refused:
            with pytest.raises((NotImplementedError, RuntimeError)):
                _call_tl(op, sample)
            continue
        got = _call_tl(op, sample)
        assert got.device.type == tl.device(device).type
        assert_values(to_numpy(got), reference(op, sample, got.dtype), got.dtype.name, op, sample.desc)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_matches_torch_every_dtype_and_sample(device, torch, op):
    for dtype in op.dtypes:
        for sample in samples(op, dtype, device, seed=1):
            got, err = _outcome(lambda: _call_tl(op, sample))
            _assert_like_torch(op, sample, torch, got, err)


def _promotion_samples(op, da, db, device, rng):
    mk = lambda dt, shape, i: make(dt, shape, op.domain(i), device, rng)  # noqa: E731
    out = [Sample((mk(da, (3,), 0), mk(db, (3,), 1)), {}, f"{da.name}[3] . {db.name}[3]"),
           Sample((mk(da, (3,), 0), mk(db, (), 1)), {}, f"{da.name}[3] . {db.name}[]"),
           Sample((mk(da, (), 0), mk(db, (2, 3), 1)), {}, f"{da.name}[] . {db.name}[2, 3]")]
    if op.scalar_other:
        s = scalar_of(db, op.domain(1), rng)
        out.append(Sample((mk(da, (3,), 0), s), {}, f"{da.name}[3] . {s!r}"))
        out.append(Sample((mk(da, (), 0), s), {}, f"{da.name}[] . {s!r}"))
    if op.scalar_input:
        s = scalar_of(da, op.domain(0), rng)
        out.append(Sample((s, mk(db, (3,), 1)), {}, f"{s!r} . {db.name}[3]"))
    return out


@pytest.mark.parametrize("op", BINARY_OPS, ids=lambda o: o.name)
def test_binary_promotion_of_every_dtype_pair_matches_torch(device, torch, op):
    """All 100 dtype pairs, dimensioned vs 0-dim vs Python numbers on both sides."""
    rng = np.random.default_rng(2)
    for da in ALL_DTYPES:
        for db in ALL_DTYPES:
            for sample in _promotion_samples(op, da, db, device, rng):
                for kw in op.kwargs:
                    sample.kwargs = dict(kw)
                    got, err = _outcome(lambda: _call_tl(op, sample))
                    _assert_like_torch(op, sample, torch, got, err)


# -- in-place forms ---------------------------------------------------------------------------------

def _inplace_ops():
    return [op for op in OPS if op.inplace]


def _inplace_cases(op, dtype, device, rng):
    """(self, args, kwargs) triples: same-shape, broadcast other, bigger other (a shape error),
    a Python number, and a promoting dtype for the other operand (castability)."""
    x = lambda shape, dt=dtype, i=0: make(dt, shape, op.domain(i), device, rng)  # noqa: E731
    if op.arity == 1:
        return [(x((3, 4)), (), dict(kw)) for kw in op.kwargs] + [(make(dtype, (4, 3), "any", device, rng,
                                                                        "transposed"), (), {})]
    if op.arity == 2:
        cases = [(x((3, 4)), (x((3, 4), i=1),), {}), (x((3, 4)), (x((4,), i=1),), {}),
                 (x((4,)), (x((3, 4), i=1),), {}), (x((3, 4)), (x((3, 4), tl.float64, 1),), {}),
                 (x((3, 4)), (x((3, 4), tl.int64, 1),), {})]
        if op.scalar_other:
            cases += [(x((3, 4)), (scalar_of(k, op.domain(1), rng),), {}) for k in (tl.bool, tl.int64, tl.float32)]
        return [(s, a, dict(kw, **k)) for s, a, k in cases for kw in op.kwargs]
    return [(s.args[0], s.args[1:], s.kwargs) for s in samples(op, dtype, device)]


@pytest.mark.parametrize("op", _inplace_ops(), ids=lambda o: o.name)
def test_inplace_matches_torch_and_moves_version_once(device, torch, op):
    rng = np.random.default_rng(3)
    for dtype in op.dtypes:
        for self_, args, kwargs in _inplace_cases(op, dtype, device, rng):
            desc = f"{op.name}_({dtype.name}{list(self_.shape)}, {args}, {kwargs})"
            t_self = to_torch(self_, torch).clone()
            before, version = to_numpy(self_), self_._version
            got, err = _outcome(lambda: getattr(self_, op.name + "_")(*args, **kwargs))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want, werr = _outcome(lambda: getattr(t_self, op.name + "_")(
                    *[to_torch(a, torch) for a in args], **{k: to_torch(v, torch) for k, v in kwargs.items()}))
            if werr is not None or err is not None:
                assert err is not None and werr is not None and _error_kind(err) is _error_kind(werr), (
                    f"{desc}: tensorlab {err!r}, torch {werr!r}")
                assert self_._version == version, f"{desc}: a failed in-place op moved the version"
                np.testing.assert_array_equal(comparable_bits(to_numpy(self_)), comparable_bits(before))
                continue
            assert got is self_, desc
            assert self_._version == version + 1, f"{desc}: version moved {self_._version - version} times"
            before_t = torch.from_numpy(comparable(before)).to(getattr(torch, dtype.name))
            want = oracle(torch, op.name, kwargs, op.torch_fn(torch), [before_t] + [to_torch(a, torch) for a in args],
                          want)
            assert self_.dtype.name == torch_dtype_name(want)
            assert_values(to_numpy(self_), torch_to_numpy(want), dtype.name, op, desc)


def comparable_bits(arr):
    return np.ascontiguousarray(arr).view(np.uint8)


def test_inplace_result_must_cast_to_self(device):
    i = tl.tensor([1, 2, 3], device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.exp_()
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        tl.tensor([True], device=device).add_(1)
    assert i.tolist() == [1, 2, 3] and i._version == 0
    f = tl.tensor([1.0, 2.0, 3.0], device=device)
    assert f.lt_(2).tolist() == [1.0, 0.0, 0.0]  # a bool result casts into a float self


def test_inplace_broadcast_shape_must_equal_self(device):
    x = tl.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.add_(tl.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast shape \[3\]"):
        tl.tensor(3.0, device=device).mul_(tl.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.masked_fill_(tl.ones(2, 1, dtype=tl.bool, device=device), 0.0)
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version == 0


def test_inplace_refuses_internal_overlap_and_partial_overlap(device):
    base = tl.ones(3, device=device)
    expanded = strided(base, (2, 3), (0, 1))
    for call in (lambda: expanded.add_(1), lambda: expanded.exp_(), lambda: expanded.clamp_(0, 1),
                 lambda: expanded.masked_fill_(tl.ones(2, 3, dtype=tl.bool, device=device), 1.0)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            call()
    assert base.tolist() == [1.0, 1.0, 1.0] and base._version == 0
    expanded.fill_(2)  # torch allows fill_/zero_ there: every aliased element gets the same value
    assert base.tolist() == [2.0, 2.0, 2.0] and base._version == 1
    expanded.zero_()
    assert base.tolist() == [0.0, 0.0, 0.0] and base._version == 2
    base.fill_(1)
    x = tl.arange(6, dtype=tl.float32, device=device)
    head, tail = strided(x, (5,), (1,), 0), strided(x, (5,), (1,), 1)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        head.add_(tail)
    assert x.tolist() == [0, 1, 2, 3, 4, 5] and x._version == 0
    x.add_(x)  # exact aliasing is the ordinary in-place case
    assert x.tolist() == [0, 2, 4, 6, 8, 10] and x._version == 1


def test_views_share_the_version_counter_and_see_inplace_writes(device):
    x = tl.zeros(2, 3, device=device)
    row = strided(x, (3,), (1,), 3)
    row.add_(5)
    assert x.tolist() == [[0, 0, 0], [5, 5, 5]]
    assert x._version == row._version == 1
    x.mul_(2)
    assert row.tolist() == [10, 10, 10] and row._version == 2


# -- integer division by zero: refused before anything is written ---------------------------------

@pytest.mark.parametrize("call", [
    lambda a, b, **kw: tl.floor_divide(a, b, **kw), lambda a, b, **kw: tl.remainder(a, b, **kw),
    lambda a, b, **kw: tl.fmod(a, b, **kw), lambda a, b, **kw: tl.div(a, b, rounding_mode="trunc", **kw),
    lambda a, b, **kw: tl.div(a, b, rounding_mode="floor", **kw)], ids=["floor_divide", "remainder", "fmod",
                                                                         "div_trunc", "div_floor"])
def test_integer_division_by_zero_raises_before_writing(device, call):
    a = tl.tensor([7, -7, 9], device=device)
    b = tl.tensor([2, 0, 3], device=device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(a, 0)
    out = tl.full((3,), 42, device=device)
    snap = tlt.snapshot(out, a)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(a, b, out=out)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(a, b, out=a)
    tlt.assert_unchanged(snap)
    assert tl.div(a.float(), 0).tolist()[0] == math.inf  # floats divide by zero as IEEE says
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # 256 is 0 once cast to the int8 compute type
        call(a.to(tl.int8), tl.tensor(256, device=device))


@pytest.mark.parametrize("name", ["floor_divide_", "remainder_", "fmod_"])
def test_inplace_integer_division_by_zero_changes_nothing(device, name):
    a = tl.tensor([7, -7, 9], device=device)
    snap = tlt.snapshot(a)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(a, name)(tl.tensor([1, 0, 1], device=device))
    tlt.assert_unchanged(snap)


# -- out= -----------------------------------------------------------------------------------------

def _out_calls(device):
    """(op, sample): the first non-empty, supported sample of every functional op."""
    calls = []
    for op in OPS:
        candidates = (s for dt in (tl.float32, tl.int64) if dt in op.dtypes for s in samples(op, dt, device))
        for sample in candidates:
            if op.refuses is not None and op.refuses(sample, common_dtype(op, sample)):
                continue
            if _call_tl(op, sample).numel() > 0:
                calls.append((op, sample))
                break
    return calls


def test_out_matches_functional_result_and_bumps_version_once(device):
    calls = _out_calls(device)
    assert {op.name for op, _ in calls} == {op.name for op in OPS}
    for op, sample in calls:
        want = _call_tl(op, sample)
        out = tl.empty(want.shape, dtype=want.dtype, device=device)
        if op.name in ("relu", "isnan", "isinf", "isfinite"):  # torch has no out= for these
            with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
                op.tl_fn()(*sample.args, **sample.kwargs, out=out)
            continue
        got = op.tl_fn()(*sample.args, **sample.kwargs, out=out)
        assert got is out and out._version == 1, op.name
        assert_values(to_numpy(out), to_numpy(want), want.dtype.name, op, f"{op.name} out=")


def test_out_of_a_wider_dtype_receives_the_cast_result(device):
    a = tl.tensor([1, 2, 3], device=device)
    out = tl.empty(3, dtype=tl.float64, device=device)
    tl.add(a, a, out=out)
    assert out.tolist() == [2.0, 4.0, 6.0] and out.dtype is tl.float64
    out = tl.empty(3, dtype=tl.int32, device=device)
    tl.lt(a, 2, out=out)  # bool results cast into any dtype
    assert out.tolist() == [1, 0, 0]


def test_out_refuses_a_dtype_the_result_cannot_cast_to(device):
    f = tl.tensor([1.5, 2.5], device=device)
    out = tl.tensor([7, 7], device=device)
    snap = tlt.snapshot(out)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tl.add(f, f, out=out)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tl.exp(tl.tensor([1, 2], device=device), out=out)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        tl.add(out, out, out=tl.empty(2, dtype=tl.bool, device=device))
    tlt.assert_unchanged(snap)


def test_out_of_another_shape_is_resized_with_torchs_warning(device):
    a = tl.ones(2, 3, device=device)
    out = tl.empty(2, device=device)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2\\]"):
        tl.mul(a, 2, out=out)
    assert out.shape == (2, 3) and out.tolist() == [[2.0] * 3] * 2 and out._version == 1
    empty = tl.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a zero-element out resizes silently
        tl.exp(a, out=empty)
    assert empty.shape == (2, 3)


def test_out_refuses_partial_overlap_with_an_input_but_accepts_exact_alias(device):
    x = tl.arange(6, dtype=tl.float32, device=device)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        tl.add(strided(x, (5,), (1,), 0), 1, out=strided(x, (5,), (1,), 1))
    assert x.tolist() == [0, 1, 2, 3, 4, 5]
    tl.add(x, x, out=x)
    assert x.tolist() == [0, 2, 4, 6, 8, 10]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tl.exp(tl.ones(2, 3, device=device), out=strided(x, (2, 3), (0, 1)))


def test_out_that_requires_grad_is_refused(device):
    out = tl.empty(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tl.exp(tl.ones(3, device=device), out=out)


def test_out_may_be_a_non_contiguous_view(device):
    base = tl.zeros(3, 4, device=device)
    out = strided(base, (4, 3), (1, 4))  # the transpose of base
    a = tl.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), device=device)
    tl.mul(a, 2, out=out)
    assert to_numpy(base).tolist() == (np.arange(12).reshape(4, 3) * 2).T.tolist()
    assert base._version == 1


def test_inplace_on_a_leaf_that_requires_grad_is_refused(device):
    x = tl.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.zero_()
    assert x._version == 0
    assert (x * 2).tolist() == [2.0, 2.0, 2.0]  # out-of-place ops are fine


def test_out_must_be_a_tensor_on_the_inputs_device(device):
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        tl.add(tl.ones(2, device=device), 1, out=[0, 0])


# -- fault injection: a failure anywhere leaves every tensor as it was ------------------------------

@pytest.mark.parametrize("case", ["add_", "exp_out_resize", "masked_fill_", "clamp_out", "where_out", "fill_"])
def test_injected_faults_leave_targets_unchanged(device, case):
    def setup():
        x = tl.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], device=device)
        out = tl.full((1,), 9.0, device=device)
        return x, out

    def run(x, out):
        if case == "add_":
            x.add_(tl.ones(3, device=device), alpha=2)
        elif case == "exp_out_resize":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tl.exp(x, out=out)
        elif case == "masked_fill_":
            x.masked_fill_(tl.tensor([True, False, True], device=device), 0.5)
        elif case == "clamp_out":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tl.clamp(x, -1, 1, out=out)
        elif case == "where_out":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tl.where(x > 0, x, 0.0, out=out)
        else:
            x.fill_(3)

    args = setup()
    points = tlt.fault_points(lambda: run(*args))
    assert points, "the op performed no fault-injection events"
    for kind, n in points:
        x, out = setup()
        snap = tlt.snapshot(x, out)
        with tlt.inject_fault(kind, n), pytest.raises(tlt.InjectedFault):
            run(x, out)
        tlt.assert_unchanged(snap)


# -- Python operators -------------------------------------------------------------------------------

_OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
_NONZERO = {"/", "//", "%"}


@pytest.mark.parametrize("sym", list(_OPERATORS))
def test_python_operators_match_torch_both_sides(device, torch, sym):
    fn = _OPERATORS[sym]
    rng = np.random.default_rng(5)
    dom = "nonzero" if sym in _NONZERO else "small" if sym == "**" else "any"
    for da in (tl.bool, tl.uint8, tl.int32, tl.int64, tl.float16, tl.float32):
        for other in (make(tl.int64, (3,), dom, device, rng), make(tl.float32, (2, 3), dom, device, rng),
                      make(tl.bool, (), dom, device, rng), 2, 3.0, True):
            a = make(da, (3,), dom, device, rng)
            for left, right in ((a, other), (other, a)):
                if not isinstance(left, tl.Tensor) and not isinstance(right, tl.Tensor):
                    continue
                desc = f"{left!r} {sym} {right!r}"
                got, err = _outcome(lambda: fn(left, right))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want, werr = _outcome(lambda: fn(to_torch(left, torch), to_torch(right, torch)))
                if err is not None or werr is not None:
                    assert err is not None and werr is not None and _error_kind(err) is _error_kind(werr), (
                        f"{desc}: tensorlab {err!r}, torch {werr!r}")
                    continue
                assert isinstance(got, tl.Tensor), desc
                assert got.dtype.name == torch_dtype_name(want), desc
                assert_values(to_numpy(got), torch_to_numpy(want), got.dtype.name, None, desc)


_IOPS = {"+=": "__iadd__", "-=": "__isub__", "*=": "__imul__", "/=": "__itruediv__", "//=": "__ifloordiv__",
         "%=": "__imod__", "**=": "__ipow__", "&=": "__iand__", "|=": "__ior__", "^=": "__ixor__"}


@pytest.mark.parametrize("sym", list(_IOPS))
def test_augmented_assignment_is_inplace_like_torch(device, torch, sym):
    rng = np.random.default_rng(6)
    dom = "nonzero" if sym in ("/=", "//=", "%=") else "small"
    for da in (tl.int64, tl.float32, tl.bool):
        for other in (make(tl.int64, (3,), dom, device, rng), make(tl.float32, (3,), dom, device, rng), 2, 2.0):
            a = make(da, (3,), dom, device, rng)
            ta = to_torch(a, torch).clone()
            keep = a
            got, err = _outcome(lambda: getattr(a, _IOPS[sym])(other))
            want, werr = _outcome(lambda: getattr(ta, _IOPS[sym])(to_torch(other, torch)))
            if err is not None or werr is not None:
                assert err is not None and werr is not None and _error_kind(err) is _error_kind(werr), (
                    f"{da.name} {sym} {other!r}: tensorlab {err!r}, torch {werr!r}")
                assert a._version == 0
                continue
            assert got is keep and a._version == 1
            assert_values(to_numpy(a), torch_to_numpy(want), a.dtype.name, None, f"{da.name} {sym} {other!r}")


def test_unary_operators(device, torch):
    x = tl.tensor([-2, 0, 3], dtype=tl.int8, device=device)
    assert (-x).tolist() == [2, 0, -3] and abs(x).tolist() == [2, 0, 3] and (~x).tolist() == [1, -1, -4]
    assert (+x) is x
    b = tl.tensor([True, False], device=device)
    assert (~b).tolist() == [False, True]
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
        -b
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported"):
        +b
    with pytest.raises(TypeError, match="only implemented on integer and Boolean-type tensors"):
        ~tl.ones(2, device=device)
    with pytest.raises(NotImplementedError, match="\"abs\" not implemented for 'Bool'"):
        abs(b)


def test_operators_with_unsupported_operands(device):
    x = tl.ones(2, device=device)
    assert (x == None) is False and (x != None) is True  # noqa: E711  (as torch)
    assert (x == "a") is False
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x < None
    with pytest.raises(TypeError, match="must be Tensor or Number, not str"):
        tl.add(x, "a")
    with pytest.raises(TypeError, match="maximum\\(\\): argument 'other' \\(position 2\\) must be Tensor, not int"):
        tl.maximum(x, 2)
    with pytest.raises(TypeError, match="argument 'input' \\(position 1\\) must be Tensor, not int"):
        tl.eq(2, x)


def test_numpy_scalars_are_python_numbers_and_numpy_defers_to_tensors(device):
    x = tl.tensor([1.0, 2.0], dtype=tl.float16, device=device)
    r = x + np.float64(0.5)
    assert isinstance(r, tl.Tensor) and r.dtype is tl.float16 and r.tolist() == [1.5, 2.5]
    r = np.float32(2) * x
    assert isinstance(r, tl.Tensor) and r.dtype is tl.float16 and r.tolist() == [2.0, 4.0]
    r = np.int64(3) - tl.tensor([1, 2], device=device)
    assert isinstance(r, tl.Tensor) and r.tolist() == [2, 1]
    assert (tl.tensor([1, 2], device=device) & np.bool_(True)).tolist() == [1, 0]


def test_hash_stays_identity_based(device):
    a, b = tl.ones(2, device=device), tl.ones(2, device=device)
    assert hash(a) == object.__hash__(a) and hash(a) != hash(b)
    assert {a: 1, b: 2}[a] == 1


# -- promotion kinds (torch's documented rules, checked here without torch) -------------------------

@pytest.mark.parametrize("expr, dtype", [
    (lambda d: tl.tensor([1, 2], device=d) + 1.5, tl.float32),
    (lambda d: tl.tensor([1, 2], device=d) / 2, tl.float32),
    (lambda d: tl.div(tl.tensor([7, 2], device=d), 2, rounding_mode="floor"), tl.int64),
    (lambda d: tl.tensor([1, 2], dtype=tl.uint8, device=d) + tl.tensor([1], dtype=tl.int8, device=d), tl.int16),
    (lambda d: tl.ones(2, dtype=tl.float16, device=d) + tl.tensor(1.0, dtype=tl.float64, device=d), tl.float16),
    (lambda d: tl.ones(2, dtype=tl.float16, device=d) * tl.ones(2, dtype=tl.bfloat16, device=d), tl.float32),
    (lambda d: tl.tensor([1, 2], dtype=tl.int8, device=d) * tl.tensor(1.0, device=d), tl.float32),
    (lambda d: tl.sqrt(tl.tensor([1, 4], device=d)), tl.float32),
    (lambda d: tl.sigmoid(tl.tensor([True], device=d)), tl.float32),
    (lambda d: tl.square(tl.tensor([True], device=d)), tl.int64),
    (lambda d: tl.floor(tl.tensor([3], dtype=tl.int16, device=d)), tl.int16),
    (lambda d: tl.abs(tl.tensor([-3], dtype=tl.int8, device=d)), tl.int8),
    (lambda d: tl.tensor([1, 2], device=d) < 1.5, tl.bool),
    (lambda d: tl.isnan(tl.tensor([1, 2], device=d)), tl.bool),
    (lambda d: tl.logical_and(tl.ones(2, device=d), tl.tensor([1, 0], device=d)), tl.bool),
    (lambda d: tl.clamp(tl.tensor([1, 2, 3], device=d), 0.5), tl.float32),
    (lambda d: tl.clamp(tl.tensor([True], device=d), 0, 1), tl.int64),
    (lambda d: tl.where(tl.tensor([True], device=d), 1, 2.5), tl.float32),
    (lambda d: tl.where(tl.tensor([True], device=d), tl.tensor([1], dtype=tl.int8, device=d), 100), tl.int8),
    (lambda d: tl.addcmul(tl.ones(2, dtype=tl.int32, device=d), tl.ones(2, device=d), tl.ones(2, device=d)),
     tl.float32),
    (lambda d: tl.masked_fill(tl.tensor([1, 2], device=d), tl.tensor([True, False], device=d), 2.7), tl.int64),
], ids=lambda x: "" if callable(x) else x.name)
def test_documented_promotions(device, expr, dtype):
    assert expr(device).dtype is dtype


def test_where_scalars_must_fit_the_result_dtype(device):
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        tl.where(tl.tensor([True], device=device), tl.tensor([1], dtype=tl.int8, device=device), 200)


def test_int_to_float_follows_the_default_dtype(device):
    tl.set_default_dtype(tl.float64)
    assert (tl.tensor([1, 2], device=device) / 2).dtype is tl.float64
    assert tl.exp(tl.tensor([1], device=device)).dtype is tl.float64
    assert (tl.tensor([1, 2], device=device) * 0.5).dtype is tl.float64
    tl.set_default_dtype(tl.float32)
    assert (tl.tensor([1, 2], device=device) / 2).dtype is tl.float32


def test_python_numbers_are_passed_in_the_compute_dtype(device):
    # 0.1 as a float32 (torch), not as a float64 promoting the computation
    x = tl.tensor([0.2], dtype=tl.float32, device=device)
    assert (x + 0.1).item() == float(np.float32(0.2) + np.float32(0.1))
    assert (x * 0.1).item() == float(np.float32(0.2) * np.float32(0.1))
    # integers wrap into the tensor's type, as torch's C casts do
    assert (tl.tensor([1], dtype=tl.int8, device=device) + 1000).tolist() == [-23]
    assert (tl.tensor([255], dtype=tl.uint8, device=device) == -1).tolist() == [True]
    assert (tl.tensor([3], dtype=tl.uint8, device=device) - 5).tolist() == [254]


def test_half_precision_rounds_once_from_a_float32_computation(device):
    """x + alpha * y and 1 + x * y in float16/bfloat16 are computed in float32 (alpha too) and
    rounded to the half type once, as torch's opmath does; rounding each step to the half type
    gives different results on a large share of random inputs, so the check tells them apart."""
    rng = np.random.default_rng(7)
    f32 = np.float32
    for dt in (tl.float16, tl.bfloat16):
        xs, ys = (rng.uniform(-4, 4, 20000).astype(dt.np) for _ in range(2))
        x, y = (tl.tensor(v, dtype=dt, device=device) for v in (xs, ys))
        xf, yf = xs.astype(f32), ys.astype(f32)
        once = (xf + f32(0.1) * yf).astype(dt.np)
        twice = (xf + (f32(0.1) * yf).astype(dt.np).astype(f32)).astype(dt.np)
        got = to_numpy(tl.add(x, y, alpha=0.1))
        np.testing.assert_array_equal(got.astype(f32), once.astype(f32))
        assert np.mean(twice != once) > 0.02, dt  # thousands of elements differ
        got = to_numpy(tl.addcmul(tl.ones(20000, dtype=dt, device=device), x, y))
        np.testing.assert_array_equal(got.astype(f32), (f32(1) + xf * yf).astype(dt.np).astype(f32))


# -- op-specific behaviour and errors --------------------------------------------------------------

def test_sub_with_bool_is_refused_like_torch(device):
    b = tl.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match=r"Subtraction, the `-` operator, with two bool tensors is not supported"):
        b - b
    with pytest.raises(RuntimeError, match=r"with two bool tensors"):
        tl.sub(b, True)
    with pytest.raises(RuntimeError, match=r"Subtraction, the `-` operator, with a bool tensor is not supported"):
        tl.tensor([1, 2], device=device) - b
    with pytest.raises(RuntimeError, match=r"with a bool tensor"):
        tl.rsub(tl.tensor([1, 2], device=device), True)


def test_alpha_rules(device):
    i = tl.tensor([1, 2], device=device)
    f = tl.tensor([1.0, 2.0], device=device)
    assert tl.add(f, f, alpha=2.5).tolist() == [3.5, 7.0]
    assert tl.sub(i, i, alpha=3).tolist() == [-2, -4]
    assert tl.rsub(f, 1, alpha=2).tolist() == [-1.0, -3.0]
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point"):
        tl.add(i, i, alpha=2.5)
    with pytest.raises(RuntimeError, match="For integral input tensors"):
        tl.add(i, i, alpha=1.0)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        tl.add(i, i, alpha=True)
    with pytest.raises(TypeError, match="argument 'alpha' must be Number, not NoneType"):
        tl.add(f, f, alpha=None)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        tl.add(tl.ones(2, dtype=tl.int8, device=device), 1, alpha=1000)


def test_pow_integer_rules(device):
    i = tl.tensor([-1, 1, 2, 0], device=device)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        i ** -1
    assert (i ** tl.tensor([-1, -3, -2, -1], device=device)).tolist() == [-1, 1, 0, 0]
    assert (2 ** tl.tensor([0, 3], device=device)).tolist() == [1, 8]
    assert (tl.tensor([2], dtype=tl.int8, device=device) ** 9).tolist() == [0]  # wraps like C
    assert (i ** -1.0).tolist() == [-1.0, 1.0, 0.5, math.inf]
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        tl.tensor([True], device=device) ** tl.tensor([True], device=device)


def test_div_rounding_modes(device):
    a = tl.tensor([-7, 7, -8], device=device)
    assert tl.div(a, 2, rounding_mode="trunc").tolist() == [-3, 3, -4]
    assert tl.div(a, 2, rounding_mode="floor").tolist() == [-4, 3, -4]
    assert tl.div(a, 2).tolist() == [-3.5, 3.5, -4.0]
    assert tl.div(tl.tensor([-2 ** 63], device=device), -1, rounding_mode="trunc").tolist() == [-2 ** 63]
    f = tl.tensor([5.0, -5.0, 0.0], device=device)
    assert str(tl.div(f, 0, rounding_mode="floor").tolist()) == "[inf, -inf, nan]"
    assert str(tl.div(f, 0, rounding_mode="trunc").tolist()) == "[inf, -inf, nan]"
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                                           "found 'bad'"):
        tl.div(f, 2, rounding_mode="bad")
    x = tl.tensor([7, -7], device=device)
    x.div_(2, rounding_mode="floor")
    assert x.tolist() == [3, -4]


def test_remainder_and_fmod_signs(device):
    a, b = tl.tensor([-3, 3], device=device), tl.tensor([2, -2], device=device)
    assert tl.remainder(a, b).tolist() == [1, -1]  # sign of the divisor
    assert tl.fmod(a, b).tolist() == [-1, 1]  # sign of the dividend
    assert tl.remainder(a.float(), b.float()).tolist() == [1.0, -1.0]
    assert tl.remainder(-7, tl.tensor([3], device=device)).tolist() == [2]
    assert (tl.tensor([-7], dtype=tl.int8, device=device) % tl.tensor([3], dtype=tl.uint8, device=device)
            ).dtype is tl.int16


def test_bitwise_ops_refuse_floats(device):
    f = tl.ones(2, device=device)
    with pytest.raises(NotImplementedError, match="\"bitwise_and\" not implemented for 'Float'"):
        f & f
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        tl.bitwise_or(tl.tensor([1, 2], device=device), 1.0)
    assert tl.bitwise_xor(tl.tensor([1, 2, 3], device=device), True).tolist() == [0, 3, 2]
    with pytest.raises(NotImplementedError, match="bitwise_not"):
        tl.bitwise_not(f)


@pytest.mark.parametrize("value", [0.0, 1.0, -1.0, 0.5, -2.25, 3.0, 6.5, 1e-8, -30.0, math.inf, -math.inf])
def test_erf_against_the_standard_library(device, value):
    got = tl.erf(tl.tensor([value], dtype=tl.float64, device=device)).item()
    assert got == pytest.approx(math.erf(value), rel=4e-16, abs=1e-300)


def test_erf_dense_grid_float64(device):
    xs = np.linspace(-7, 7, 4001)
    got = to_numpy(tl.erf(tl.tensor(xs, device=device)))
    ref = np.array([math.erf(v) for v in xs])
    np.testing.assert_allclose(got, ref, rtol=4e-16, atol=1e-300)
    assert math.isnan(tl.erf(tl.tensor([math.nan], device=device)).item())


def test_gelu_float32_accuracy_on_a_dense_grid(device):
    """Exact GELU in float32 against float64 erfc on a grid longer than the CPU's cache block. The
    CPU keeps its relative accuracy where gelu(x) is tiny (x < -4; its backward reads
    Phi(x) = gelu(x) / x off this result): 2e-5 down to the smallest normal float32, a few
    subnormal steps below. CUDA computes torch's 0.5 x (1 + erf(x / sqrt 2)), which cancels there:
    torch's absolute accuracy. Special values as torch (-inf * 0: NaN)."""
    xs = np.concatenate([np.linspace(-13, 8, 120001), [0.0, -0.0, 1e30, -1e30]]).astype(np.float32)
    got = to_numpy(tl.nn.functional.gelu(tl.tensor(xs, device=device))).astype(np.float64)
    x64 = xs.astype(np.float64)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x64])
    err = np.abs(got - ref)
    if device == "cpu":
        normal = np.abs(ref) >= 2.0 ** -126
        rel = err[normal] / np.abs(ref[normal])
        assert rel.max() < 2e-5, (rel.max(), xs[normal][rel.argmax()])
        assert err[~normal].max() <= 4 * 2.0 ** -149
    else:
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6)
    special = to_numpy(tl.nn.functional.gelu(tl.tensor([np.inf, -np.inf, np.nan], device=device)))
    assert special[0] == np.inf and np.isnan(special[1]) and np.isnan(special[2])


def test_gelu_silu_sigmoid_known_values(device):
    x = tl.tensor([-3.0, 0.5, 3.0], device=device)
    # torch's values; at -3 the result is a cancellation (1 + tanh(..) ~ 0.0024), so allow float32 noise
    assert to_numpy(tl.gelu(x, approximate="tanh")).tolist() == pytest.approx(
        [-0.0036374330520629883, 0.3457140028476715, 2.9963626861572266], rel=1e-6, abs=2e-7)
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in (-3.0, 0.5, 3.0)]
    assert to_numpy(tl.gelu(x)).tolist() == pytest.approx(exact, rel=1e-6, abs=2e-7)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        tl.gelu(x, approximate="bad")
    assert tl.sigmoid(tl.tensor([-100.0, 100.0], device=device)).tolist() == [0.0, 1.0]
    assert tl.silu(tl.tensor([-100.0, 100.0], device=device)).tolist() == [-0.0, 100.0]
    y = tl.tensor([1.0, -1.0], device=device)
    assert tl.silu(y, inplace=True) is y and y._version == 1
    with pytest.raises(NotImplementedError, match="\"gelu\" not implemented for 'Long'"):
        tl.gelu(tl.tensor([1], device=device))


def test_sign_round_nan_to_num_special_values(device):
    assert tl.sign(tl.tensor([math.nan, -0.0, -2.0, 3.0], device=device)).tolist() == [0.0, 0.0, -1.0, 1.0]
    assert tl.round(tl.tensor([2.5, 3.5, -2.5, 0.5], device=device)).tolist() == [2.0, 4.0, -2.0, 0.0]
    assert tl.round(tl.tensor([1.2345, 1255.0], device=device), decimals=-1).tolist() == [0.0, 1260.0]
    with pytest.raises(NotImplementedError, match="round"):
        tl.round(tl.tensor([1234], device=device), decimals=-2)
    assert tl.round(tl.tensor([1234], device=device)).tolist() == [1234]
    r = tl.nan_to_num(tl.tensor([math.nan, math.inf, -math.inf], dtype=tl.float16, device=device))
    assert r.tolist() == [0.0, 65504.0, -65504.0]
    r = tl.nan_to_num(tl.tensor([math.nan, math.inf], device=device), nan=1.5, posinf=2)
    assert r.tolist() == [1.5, 2.0]
    assert tl.nan_to_num(tl.tensor([1, 2], device=device), nan=1.5).tolist() == [1, 2]


def test_clamp_rules(device):
    x = tl.tensor([1.0, 5.0, math.nan], device=device)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        tl.clamp(x)
    assert str(tl.clamp(x, 2, 4).tolist()) == "[2.0, 4.0, nan]"
    assert tl.clamp(tl.tensor([1.0, 2.0], device=device), 5, 1).tolist() == [1.0, 1.0]  # min > max: max
    assert str(tl.clamp(tl.tensor([1.0], device=device), math.nan).tolist()) == "[nan]"
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        tl.clamp(tl.ones(2, dtype=tl.int8, device=device), 0, 1000)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float16 without overflow"):
        tl.clamp(tl.ones(2, dtype=tl.float16, device=device), 1e10)
    with pytest.raises(NotImplementedError, match="\"clamp\" not implemented for 'Bool'"):
        tl.clamp(tl.tensor([True], device=device), False, True)
    i = tl.tensor([1, 5, 9], device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i.clamp_(0.5)
    assert i.clip_(2, 4).tolist() == [2, 4, 4] and i._version == 1
    assert tl.clip(tl.tensor([1, 5], device=device), max=3).tolist() == [1, 3]


def test_where_rules(device):
    c = tl.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor "
                                           "with dtype Long"):
        tl.where(tl.tensor([1, 0], device=device), 1, 2)
    with pytest.warns(UserWarning, match="uint8 condition"):
        r = tl.where(tl.tensor([1, 0], dtype=tl.uint8, device=device), 1, 2)
    assert r.tolist() == [1, 2]
    assert tl.where(c, 1, 2).dtype is tl.int64 and tl.where(c, True, 2).tolist() == [1, 2]
    x = tl.tensor([1.0, 2.0], device=device)
    assert x.where(c, 0.0).tolist() == [1.0, 0.0]  # Tensor.where(condition, other): self is the input
    r = tl.where(tl.tensor([True, False], device=device), tl.ones(2, device=device), tl.zeros(3, 1, device=device))
    assert r.shape == (3, 2)


def test_where_with_only_a_condition_is_nonzero_as_tuple(device, torch):
    c = tl.tensor([[True, False], [False, True]], device=device)
    got = tl.where(c)
    want = torch.where(torch.tensor([[True, False], [False, True]]))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    with pytest.raises(TypeError, match="takes a condition alone, or a condition, input and other"):
        tl.where(c, 1)


def test_lerp_rules(device):
    a, b = tl.tensor([0.0, 10.0], device=device), tl.tensor([10.0, 0.0], device=device)
    assert tl.lerp(a, b, tl.tensor([0.25, 0.75], device=device)).tolist() == [2.5, 2.5]
    assert tl.lerp(a, b, 1.0).tolist() == [10.0, 0.0]  # exact at the far end
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        tl.lerp(a, b.double(), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `weight` but got dtype float64"):
        tl.lerp(a, b, tl.tensor([0.5, 0.5], dtype=tl.float64, device=device))
    assert tl.lerp(a, b, tl.tensor(0.5, dtype=tl.float64, device=device)).tolist() == [5.0, 5.0]
    with pytest.raises(NotImplementedError, match="\"lerp\" not implemented for 'Long'"):
        tl.lerp(tl.tensor([1], device=device), tl.tensor([2], device=device), 0.5)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float32 without overflow"):
        tl.lerp(a, b, 1e300)


def test_addcmul_addcdiv_rules(device):
    i = tl.tensor([1, 2, 3], device=device)
    assert tl.addcmul(i, i, i, value=2).tolist() == [3, 10, 21]
    assert tl.addcmul(i, i, i, value=2.5).tolist() == [3, 10, 21]  # value cast to the integer type, as torch
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        tl.addcdiv(i, i, i)
    f = tl.tensor([1.0, 2.0, 3.0], device=device)
    assert tl.addcdiv(f, f, f, value=2).tolist() == [3.0, 4.0, 5.0]
    assert tl.addcdiv(i, f, f).dtype is tl.float32
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        tl.addcmul(i.to(tl.int8), i.to(tl.int8), i.to(tl.int8), value=1000)
    f.addcmul_(f, f, value=-1)
    assert f.tolist() == [0.0, -2.0, -6.0] and f._version == 1


def test_masked_fill_rules(device):
    x = tl.tensor([1, 2, 3], device=device)
    m = tl.tensor([True, False, True], device=device)
    assert x.masked_fill(m, 2.7).tolist() == [2, 2, 2]
    assert x.masked_fill(m, tl.tensor(5, device=device)).tolist() == [5, 2, 5]
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype Long"):
        x.masked_fill(x, 5)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but got tensor with 1 "
                                           "dimension"):
        x.masked_fill(m, tl.tensor([5], device=device))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        x.to(tl.int8).masked_fill(m, 1000)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64 without overflow"):
        x.masked_fill(m, math.nan)
    assert tl.tensor([1, 2], dtype=tl.uint8, device=device).masked_fill(
        tl.tensor([True, False], device=device), -1).tolist() == [255, 2]  # as torch
    r = x.masked_fill(tl.tensor([[True], [False]], device=device), 0)
    assert r.tolist() == [[0, 0, 0], [1, 2, 3]]
    y = x.clone()
    assert y.masked_fill_(m, -1) is y and y.tolist() == [-1, 2, -1] and y._version == 1


def test_fill_and_zero(device):
    x = tl.tensor([1, 2, 3], device=device)
    assert x.fill_(2.7) is x and x.tolist() == [2, 2, 2] and x._version == 1
    x.fill_(tl.tensor(7.9, device=device))
    assert x.tolist() == [7, 7, 7] and x._version == 2
    x.add_(tl.tensor([0, 1, 2], device=device))
    x.fill_(strided(x, (), (), 1))  # a value that is one of self's elements
    assert x.tolist() == [8, 8, 8] and x._version == 4
    x.zero_()
    assert x.tolist() == [0, 0, 0] and x._version == 5
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions."):
        x.fill_(tl.tensor([1.0], device=device))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        tl.ones(2, dtype=tl.int8, device=device).fill_(1000)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float32 without overflow"):
        tl.ones(2, device=device).fill_(1e300)
    assert tl.ones(1, dtype=tl.uint8, device=device).fill_(-1).tolist() == [255]
    assert tl.ones(1, dtype=tl.int8, device=device).fill_(tl.tensor(1000, device=device)).tolist() == [-24]
    assert tl.tensor([False], device=device).fill_(5).tolist() == [True]
    assert x._version == 5
    e = tl.empty(0, device=device)
    e.fill_(1)
    assert e._version == 1
    assert tl.fill_ is tl.Tensor.fill_ and tl.zero_(tl.ones(2, device=device)).tolist() == [0.0, 0.0]


def test_functions_methods_and_inplace_forms_exist(device):
    x = tl.ones(2, 2, device=device)
    for op in OPS:
        assert callable(getattr(tl, op.name)), op.name
        assert hasattr(tl.Tensor, op.name) == op.method, op.name
        assert hasattr(tl.Tensor, op.name + "_") == op.inplace, op.name
    for name in ("relu_", "sigmoid_", "exp_", "clamp_", "zero_", "fill_"):
        assert callable(getattr(tl, name))
    assert not hasattr(tl, "sign_") and not hasattr(tl, "add_")  # torch has no such functions either
    assert x.exp().shape == (2, 2)


def test_scalar_first_functional_forms(device, torch):
    t = tl.tensor([1.0, 2.0], device=device)
    for name in ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow"):
        got = getattr(tl, name)(3, t)
        want = getattr(torch, name)(3, torch.tensor([1.0, 2.0]))
        assert got.tolist() == pytest.approx(want.tolist()), name
    for name in ("fmod", "eq", "maximum", "atan2", "logical_and"):
        with pytest.raises(TypeError):
            getattr(tl, name)(3, t)
        with pytest.raises(TypeError):
            getattr(torch, name)(3, torch.tensor([1.0, 2.0]))


def test_zero_size_and_zero_dim_results(device):
    e = tl.ones(0, 3, device=device)
    assert tl.add(e, tl.ones(3, device=device)).shape == (0, 3)
    assert tl.exp(e).shape == (0, 3)
    assert tl.where(tl.ones(0, 1, dtype=tl.bool, device=device), e, 1.0).shape == (0, 3)
    s = tl.tensor(2.0, device=device)
    r = s * 3
    assert r.shape == () and r.item() == 6.0
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        tl.ones(3, device=device) + tl.ones(2, device=device)


def test_registry_rows_cover_every_public_op():
    from tensorlab.ops import registry
    rows = {d.name: d for d in registry.REGISTRY.values() if d.family == "elementwise"}
    for op in OPS:
        assert op.name in rows, op.name
        assert rows[op.name].inplace == op.inplace, op.name
    assert rows["div"].kernels == ("div_true", "div_trunc", "div_floor")
    assert rows["exp"].promotion == registry.INT_TO_FLOAT and rows["lt"].promotion == registry.ALWAYS_BOOL
    assert rows["abs"].promotion == registry.KEEP and rows["add"].promotion == registry.DEFAULT


# -- random broadcasting shapes and layouts (hypothesis) -------------------------------------------

@st.composite
def _broadcastable_pair(draw):
    ndim = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    a = [draw(st.sampled_from([n, 1])) for n in shape]
    b = [draw(st.sampled_from([n, 1])) for n in shape]
    a = a[draw(st.integers(0, len(a))):]  # drop leading dims on either side
    b = b[draw(st.integers(0, len(b))):]
    return tuple(a), tuple(b), draw(st.sampled_from(["contiguous", "transposed", "sliced"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=_broadcastable_pair(), name=st.sampled_from(["add", "mul", "maximum", "lt", "atan2", "div"]),
       dtypes_=st.sampled_from([(tl.float32, tl.float32), (tl.int32, tl.float64), (tl.float16, tl.bfloat16),
                                (tl.uint8, tl.int8), (tl.bool, tl.int64)]))
def test_random_broadcasts_and_layouts_match_numpy(device, pair, name, dtypes_):
    sa, sb, lay = pair
    rng = np.random.default_rng(len(sa) * 7 + len(sb))
    op = BY_NAME[name]
    a = make(dtypes_[0], sa, op.domain(0), device, rng, lay)
    b = make(dtypes_[1], sb, op.domain(1), device, rng)
    sample = Sample((a, b), {}, f"{name}({dtypes_[0].name}{list(sa)} {lay}, {dtypes_[1].name}{list(sb)})")
    got = _call_tl(op, sample)
    assert tuple(got.shape) == np.broadcast_shapes(sa, sb)
    assert_values(to_numpy(got), reference(op, sample, got.dtype), got.dtype.name, op, sample.desc)


# issue 13: the exponent's sign is taken after the cast to the result dtype (uint8 253 -> int8 -3);
# torch 2.13: 1 ** -3 = 1, (-1) ** -3 = -1, any other base (0 included) to a negative power = 0
def test_int_pow_uint8_exponent_wraps(device):
    a = tl.tensor([-2, -1, 0, 1, 2, 3], dtype=tl.int8, device=device)
    r = tl.pow(a, tl.tensor(-3, dtype=tl.uint8, device=device))
    assert r.dtype == tl.int8
    assert r.cpu().tolist() == [0, -1, 0, 1, 0, 0]
    e = tl.tensor([-3, -2, -1, -3, -2, -1], dtype=tl.int8, device=device)
    assert tl.pow(a, e).cpu().tolist() == [0, 1, 0, 1, 0, 0]


# issue 13: torch raises "ZeroDivisionError" only when an element is divided; empty results are returned
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_trunc"])
def test_int_division_by_zero_on_empty(device, op):
    f = (lambda a, b: tl.div(a, b, rounding_mode="trunc")) if op == "div_trunc" else getattr(tl, op)
    a = tl.empty((0, 3), dtype=tl.int32, device=device)
    for b in (0, tl.zeros(3, dtype=tl.int32, device=device), tl.tensor(0, dtype=tl.int32, device=device)):
        r = f(a, b)
        assert r.shape == (0, 3) and r.dtype == tl.int32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(tl.ones(3, dtype=tl.int32, device=device), 0)


@pytest.mark.parametrize("n", [6, 70000])  # one call; a large input on the CPU pool
def test_relu_forward_and_gradient_at_special_values(device, n):
    """relu's gradient is torch's threshold_backward, result <= 0 ? 0 : grad: a NaN input passes
    its gradient on (NaN <= 0 is false), -0.0 and 0.0 get none. Exact values (torch 2.13's
    documented formula, not path-dependent); the forward as max(x, 0) keeping -0.0."""
    vals = np.array([math.nan, -1.0, 0.0, -0.0, 2.0, -math.inf, math.inf], np.float32)
    a = np.resize(vals, n)
    for dt in (tl.float32, tl.float64):
        x = tl.tensor(a, device=device).to(dt).requires_grad_()
        r = x.relu()
        g = tl.tensor(np.resize(np.arange(1, 8, dtype=np.float32), n), device=device).to(dt)
        r.backward(g)
        want_grad = np.where(np.isnan(a) | (a > 0), np.resize(np.arange(1, 8), n), 0)
        np.testing.assert_array_equal(x.grad.float().cpu().numpy(), want_grad)
        out = r.detach().float().cpu().numpy()
        np.testing.assert_array_equal(out, np.where(np.isnan(a) | (a >= 0), a, 0.0))
        assert (np.signbit(out) == (np.signbit(a) & (a == 0))).all()


def test_clamp_and_relu_keep_the_input_at_ties(device):
    """torch's `x < lo ? lo : x`: -0.0 clamped to [0, 1] stays -0.0 (its reciprocal is -inf), NaN
    propagates, in place too; relu(-0.0) is -0.0. Exact values from torch 2.13 (not path-dependent)."""
    x = tl.tensor([-0.0, 0.0, math.nan, -0.0, -2.0, 3.0], device=device)
    for dt in (tl.float32, tl.float64, tl.float16, tl.bfloat16):
        xs = x.to(dt)
        for got in (xs.clamp(0, 1), xs.clamp(-1, 0), xs.clamp(min=0.0), xs.clamp(max=-0.0), xs.clone().clamp_(0, 1),
                    xs.relu(), xs.clone().relu_()):
            g = got.float().cpu().numpy()
            assert np.signbit(g[:4]).tolist() == [True, False, False, True], (dt, g)
            assert math.isnan(g[2])
        assert xs.clamp(0, 1).float().tolist()[4:] == [0.0, 1.0]
    assert tl.tensor(-0.0, device=device).clamp_(0, 1).reciprocal().item() == -math.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_gelu_primitive_broadcasts_its_operand(dtype):
    """The CPU backend's gelu with an operand broadcast over the output (as the launch tests pass
    it): every row of the result is gelu of the one input row (float32 writes the output in place
    only when the shapes agree)."""
    from tensorlab import backends
    x = np.linspace(-4, 4, 37).astype(dtype)
    out = tl.empty((3, 37), dtype=tl.float64 if dtype == np.float64 else tl.float32)
    backends.cpu.unary(out, "gelu", tl.from_numpy(x), out.dtype)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    got = out.numpy().astype(np.float64)
    for row in got:
        np.testing.assert_allclose(row, ref, rtol=2e-6, atol=1e-7)
