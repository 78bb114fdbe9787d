"""The strong exception guarantee, proved by sweeping fault injection over every allocation, copy
and kernel launch an operation performs; plus tl.testing's own helpers (fault plans, snapshots,
assert_close against torch.testing.assert_close)."""
import threading

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import layout as L
from tensorlab import testing as T
from tensorlab.testing import InjectedFault, assert_unchanged, count_events, inject_fault, snapshot


def view(t, shape, stride=None, offset=0):
    return t._view_of(L.make(shape, stride, offset))


def values(t):
    return np.asarray(t.tolist())


def eq(t, expected):
    def check():
        np.testing.assert_array_equal(values(t), np.asarray(expected))
    return check


# -- the sweep table ---------------------------------------------------------------------------
# Each case: setup(device) -> (fn, objects, check). `objects` are every tensor/storage fn could
# touch (other views of the same storage included); `check` verifies a successful run.
# `needs` names attributes ("Tensor.add_", "add") that must exist: entries for ops other helpers
# are still writing skip until those ops land.

class Case:
    def __init__(self, name, setup, needs=(), min_events=1):
        self.name, self.setup, self.needs, self.min_events = name, setup, needs, min_events

    def require(self):
        for need in self.needs:
            owner, _, attr = need.rpartition(".")
            if not hasattr(tl.Tensor if owner == "Tensor" else tl, attr):
                pytest.skip(f"{need} not implemented yet")


def _resize_grow(d):
    t = tl.arange(6, dtype=tl.float32, device=d)
    v = view(t, (2,), offset=3)
    return lambda: t.resize_(4, 5), (t, v), lambda: (t.shape == (4, 5) and v.tolist() == [3, 4]) or _fail()


def _resize_channels_last(d):
    t = tl.arange(6, dtype=tl.float32, device=d)
    return (lambda: t.resize_(2, 3, 4, 5, memory_format=tl.channels_last), (t,),
            lambda: t.stride() == (60, 1, 15, 3) or _fail())


def _resize_repairs_shrunk_storage(d):
    t = tl.arange(10, dtype=tl.int64, device=d)
    t.untyped_storage().resize_(16)
    return lambda: t.resize_(10), (t,), lambda: t.tolist()[:2] == [0, 1] or _fail()


def _resize_as(d):
    t = tl.arange(2, dtype=tl.int32, device=d)
    tmpl = tl.zeros(3, 4, device=d)
    return lambda: t.resize_as_(tmpl), (t, tmpl), lambda: t.shape == (3, 4) or _fail()


def _set_empty(d):
    t = tl.arange(4, device=d)
    return lambda: t.set_(), (t,), lambda: t.shape == (0,) or _fail()


def _set_tensor(d):
    t = tl.arange(4, device=d)
    src = tl.arange(6, device=d)
    return lambda: t.set_(src), (t, src), eq(t, np.arange(6))


def _set_grows_storage(d):
    owner = tl.arange(4, dtype=tl.float32, device=d)
    s = owner.untyped_storage()
    t = tl.zeros(1, device=d)
    return lambda: t.set_(s, 1, (3, 3)), (t, owner, s), lambda: (s.nbytes() == 40 and owner.tolist() == [0, 1, 2, 3]) \
        or _fail()


def _storage_grow(d):
    base = tl.arange(6, dtype=tl.int16, device=d)
    s = base.untyped_storage()
    return lambda: s.resize_(100), (base, s), lambda: (s.nbytes() == 100 and base.tolist() == list(range(6))) or _fail()


def _storage_shrink(d):
    base = tl.arange(6, dtype=tl.int16, device=d)
    s = base.untyped_storage()
    return lambda: s.resize_(4), (base, s), lambda: view(base, (2,)).tolist() == [0, 1] or _fail()


def _copy_same(d):
    dst = tl.zeros(2, 3, device=d)
    src = view(tl.arange(6, dtype=tl.float32, device=d), (2, 3), (1, 2))
    return lambda: dst.copy_(src), (dst, src), eq(dst, [[0, 2, 4], [1, 3, 5]])


def _copy_cast_broadcast(d):
    dst = tl.zeros(3, 4, dtype=tl.float64, device=d)
    src = tl.arange(4, dtype=tl.int32, device=d)
    return lambda: dst.copy_(src), (dst, src), eq(dst, np.tile(np.arange(4.0), (3, 1)))


def _copy_into_view(d):
    base = tl.zeros(10, device=d)
    dst = view(base, (2, 2), (5, 1), 1)
    other = view(base, (3,), offset=6)
    src = tl.ones(2, 2, device=d)
    return lambda: dst.copy_(src), (base, dst, other, src), eq(base, [0, 1, 1, 0, 0, 0, 1, 1, 0, 0])


def _to_dtype(d):
    t = tl.arange(6, device=d)
    return lambda: t.to(tl.float64), (t,), lambda: None


def _to_copy(d):
    t = tl.arange(6, device=d)
    return lambda: t.to(d, copy=True), (t,), lambda: None


def _contiguous(d):
    t = tl.arange(12, dtype=tl.float32, device=d)
    v = view(t, (4, 3), (1, 4))
    box = []
    return (lambda: box.append(v.contiguous()), (t, v),
            lambda: np.testing.assert_array_equal(values(box[-1]), np.arange(12).reshape(3, 4).T))


def _clone(d):
    t = tl.arange(12, dtype=tl.int32, device=d)
    v = view(t, (3, 2), (4, 2), 1)
    box = []
    return lambda: box.append(v.clone()), (t, v), lambda: values(box[-1]).tolist() == [[1, 3], [5, 7], [9, 11]] \
        or _fail()


def _clone_channels_last(d):
    t = tl.arange(24, dtype=tl.float32, device=d)
    v = view(t, (1, 2, 3, 4))
    return lambda: v.clone(memory_format=tl.channels_last), (t, v), lambda: None


def _zeros_out_grow(d):
    out = tl.arange(3, dtype=tl.float32, device=d)
    v = view(out, (2,), offset=1)
    return lambda: tl.zeros(20, out=out), (out, v), lambda: (out.tolist() == [0.0] * 20 and v.tolist() == [0, 0]) \
        or _fail()


def _zeros_out_same(d):
    out = tl.arange(6, dtype=tl.float32, device=d)
    return lambda: tl.zeros(6, out=out), (out,), eq(out, np.zeros(6))


def _ones_out_shrink(d):
    out = tl.arange(6, dtype=tl.float32, device=d)
    v = view(out, (3,), offset=3)
    return lambda: tl.ones(2, out=out), (out, v), lambda: (out.tolist() == [1, 1] and v.tolist() == [3, 4, 5]) \
        or _fail()


def _full_out(d):
    out = tl.zeros(0, dtype=tl.int64, device=d)
    return lambda: tl.full((4, 5), 7, out=out), (out,), eq(out, np.full((4, 5), 7))


def _arange_out(d):
    out = tl.zeros(2, dtype=tl.int64, device=d)
    return lambda: tl.arange(30, out=out), (out,), eq(out, np.arange(30))


def _empty_out(d):
    out = tl.arange(2, dtype=tl.int64, device=d)
    return lambda: tl.empty(30, out=out), (out,), lambda: out.shape == (30,) or _fail()


def _fill_method(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    return lambda: a.fill_(3), (a,), eq(a, np.full(6, 3.0))


def _zero_method(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    return lambda: a.zero_(), (a,), eq(a, np.zeros(6))


def _add_inplace(d):
    base = tl.arange(8, dtype=tl.float32, device=d)
    a = view(base, (2, 3), (4, 1))
    b = tl.ones(3, device=d)
    return lambda: a.add_(b), (base, a, b), eq(base, [1, 2, 3, 3, 5, 6, 7, 7])


def _mul_inplace_scalar(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    return lambda: a.mul_(2), (a,), eq(a, np.arange(6) * 2.0)


def _sub_inplace_cast(d):
    a = tl.arange(6, dtype=tl.float64, device=d)
    b = tl.arange(6, dtype=tl.int32, device=d)
    return lambda: a.sub_(b), (a, b), eq(a, np.zeros(6))


def _div_inplace(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    return lambda: a.div_(2), (a,), eq(a, np.arange(6) / 2)


def _add_out_grow(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    b = tl.ones(6, device=d)
    out = tl.zeros(0, device=d)
    return lambda: tl.add(a, b, out=out), (a, b, out), eq(out, np.arange(6) + 1.0)


def _mul_out_same(d):
    a = tl.arange(6, dtype=tl.float32, device=d)
    out = tl.zeros(6, device=d)
    v = view(out, (2,), offset=4)
    return lambda: tl.mul(a, a, out=out), (a, out, v), eq(out, np.arange(6.0) ** 2)


def _exp_out_grow(d):
    a = tl.zeros(5, device=d)
    out = tl.arange(2, dtype=tl.float32, device=d)
    return lambda: tl.exp(a, out=out), (a, out), eq(out, np.ones(5))


def _sum_out_grow(d):
    x = view(tl.arange(12, dtype=tl.float32, device=d), (3, 4))
    out = tl.zeros(0, device=d)
    return lambda: tl.sum(x, 0, out=out), (x, out), eq(out, np.arange(12.0).reshape(3, 4).sum(0))


def _mean_out_same(d):
    x = view(tl.arange(12, dtype=tl.float32, device=d), (3, 4))
    out = tl.zeros(3, device=d)
    return lambda: tl.mean(x, 1, out=out), (x, out), eq(out, np.arange(12.0).reshape(3, 4).mean(1))


def _matmul_out_grow(d):
    a = view(tl.arange(6, dtype=tl.float32, device=d), (2, 3))
    b = view(tl.arange(6, dtype=tl.float32, device=d), (3, 2))
    out = tl.zeros(1, device=d)
    ref = np.arange(6.0).reshape(2, 3) @ np.arange(6.0).reshape(3, 2)
    return lambda: tl.matmul(a, b, out=out), (a, b, out), eq(out, ref)


# -- ops with several outputs (values, indices) or several launches: all outs change, or none --------
_MATRIX = np.arange(24.0).reshape(4, 6)[:, ::-1]  # rows descending: every op below has work to do


def _pair_out(d, fn, name, values, indices, grow=False, shared=False):
    """fn(x, out=(v, i)) with outs that keep their shape, grow (0 -> n), or share one storage."""
    def setup(dev):
        x = tl.tensor(_MATRIX.copy(), dtype=tl.int64 if shared else tl.float32, device=dev)
        if shared:  # both outs are empty views of one buffer too small for both results: one grown buffer
            base = tl.zeros(4, dtype=tl.int64, device=dev)
            v, i = base[:0], base[4:]
            objs = (x, base, v, i)
        else:
            n = 0 if grow else len(values)
            v = tl.full((n,), -1.0, device=dev)
            i = tl.full((n,), -1, dtype=tl.int64, device=dev)
            objs = (x, v, i)

        def check():
            np.testing.assert_array_equal(values_(v), values)
            np.testing.assert_array_equal(values_(i), indices)
        return lambda: fn(x, (v, i)), objs, check
    setup.__name__ = name
    return setup


def values_(t):
    return np.asarray(t.tolist())


_ROWS = _MATRIX
_MULTI = {  # op -> (call with out=, expected values, expected indices)
    "max": (lambda x, o: tl.max(x, 1, out=o), _ROWS.max(1), np.zeros(4)),
    "min": (lambda x, o: tl.min(x, 1, out=o), _ROWS.min(1), np.full(4, 5)),
    "sort": (lambda x, o: tl.sort(x[:, :1].reshape(-1), out=o), np.sort(_ROWS[:, 0]), np.arange(4)),
    "topk": (lambda x, o: tl.topk(x[:, 0], 4, out=o), _ROWS[::-1, 0], np.arange(4)[::-1]),
    "kthvalue": (lambda x, o: tl.kthvalue(x, 2, 1, out=o), np.sort(_ROWS, 1)[:, 1], np.full(4, 4)),
    "median": (lambda x, o: tl.median(x, 1, out=o), np.sort(_ROWS, 1)[:, 2], np.full(4, 3)),
    "nanmedian": (lambda x, o: tl.nanmedian(x, 1, out=o), np.sort(_ROWS, 1)[:, 2], np.full(4, 3)),
}
MULTI_CASES = [Case(f"{op}_out{kind}", _pair_out(None, fn, f"_{op}_out{kind}", v, i, grow=kind == "_grow",
                                                 shared=kind == "_shared"))
               for op, (fn, v, i) in _MULTI.items() for kind in ("", "_grow", "_shared")]


def _var_mean(d):
    x = tl.tensor(_MATRIX.copy(), device=d)
    res = []
    return (lambda: res.append(tl.var_mean(x, 1))), (x,), lambda: np.testing.assert_allclose(
        values_(res[-1][1]), _MATRIX.mean(1))


def _std_mean(d):
    x = tl.tensor(_MATRIX.copy(), device=d)
    res = []
    return (lambda: res.append(tl.std_mean(x, 1))), (x,), lambda: np.testing.assert_allclose(
        values_(res[-1][1]), _MATRIX.mean(1))


def _lapack(op):
    """qr/svd: NumPy's LAPACK on the CPU, cuSOLVER on CUDA (a failed library call leaves x as it was)."""
    def setup(d):
        x = tl.tensor(_MATRIX.copy(), device=d)
        res = []

        def check():
            parts = [values_(t) for t in res[-1]]
            rebuilt = parts[0] @ parts[1] if op == "qr" else (parts[0] * parts[1]) @ parts[2]
            np.testing.assert_allclose(rebuilt, _MATRIX, atol=1e-9)
        return (lambda: res.append(getattr(tl.linalg, op)(x) if op == "qr" else
                                   tl.linalg.svd(x, full_matrices=False))), (x,), check
    return setup


def _lu_factor_out(d):
    """linalg.lu_factor_ex into out= tensors (a failed getrf / copy leaves x and the outs as they were)."""
    x = tl.tensor(_MATRIX[:, :3].copy(), device=d)
    outs = (tl.zeros(2, dtype=tl.float64, device=d), tl.zeros(1, dtype=tl.int32, device=d),
            tl.ones(1, dtype=tl.int32, device=d))

    def check():
        import scipy.linalg
        lu, piv = scipy.linalg.lu_factor(_MATRIX[:, :3])
        np.testing.assert_allclose(values_(outs[0]), lu, atol=1e-9)
        assert values_(outs[1]).tolist() == (piv + 1).tolist()
    return (lambda: tl.linalg.lu_factor_ex(x, out=outs)), (x,) + outs, check


def _factor_case(op):
    """geqrf (out=), torch.lu, svd_lowrank, pca_lowrank: LAPACK / cuSOLVER plus tensor ops."""
    def setup(d):
        import scipy.linalg
        x = tl.tensor(_MATRIX[:, :3].copy(), device=d)
        res = []
        if op == "geqrf":
            outs = (tl.zeros(1, dtype=tl.float64, device=d), tl.zeros(1, dtype=tl.float64, device=d))

            def check():
                qr, tau = scipy.linalg.qr(_MATRIX[:, :3], mode="raw")[0]
                np.testing.assert_allclose(values_(outs[0]), qr, atol=1e-9)
                np.testing.assert_allclose(values_(outs[1]), tau, atol=1e-9)
            return (lambda: tl.geqrf(x, out=outs)), (x,) + outs, check

        def check():
            parts = [values_(t) for t in res[-1]]
            if op == "lu":
                np.testing.assert_allclose(parts[0], scipy.linalg.lu_factor(_MATRIX[:, :3])[0], atol=1e-9)
            else:
                c = _MATRIX[:, :3] - (_MATRIX[:, :3].mean(0) if op == "pca_lowrank" else 0)
                np.testing.assert_allclose((parts[0] * parts[1]) @ parts[2].T, c, atol=1e-9)
        call = {"lu": lambda: tl.lu(x), "svd_lowrank": lambda: tl.svd_lowrank(x, q=3),
                "pca_lowrank": lambda: tl.pca_lowrank(x, q=3)}[op]
        return (lambda: res.append(call())), (x,), check
    setup.__name__ = f"_{op}"
    return setup


def _unique_consecutive(d):
    data = np.array([3, 3, 1, 1, 1, 2, 3, 3])
    x = tl.tensor(data, device=d)
    res = []

    def check():
        v, inv, cnt = (values_(t) for t in res[-1])
        np.testing.assert_array_equal(v, [3, 1, 2, 3])
        np.testing.assert_array_equal(inv, [0, 0, 1, 1, 1, 2, 3, 3])
        np.testing.assert_array_equal(cnt, [2, 3, 1, 2])
    return (lambda: res.append(tl.unique_consecutive(x, return_inverse=True, return_counts=True))), (x,), check


def _composite(fn, want):
    """A several-output composite (ops/math_composites.py, scans_quantiles.py, copy_variants.py): its
    inputs stay unchanged under every injected fault, and a clean run gives `want(_MATRIX)`."""
    def setup(d):
        x = tl.tensor(_MATRIX.copy(), device=d)
        res = []

        def check():
            for got, w in zip(res[-1], want(_MATRIX)):
                np.testing.assert_allclose(values_(got), w)
        return (lambda: res.append(fn(x))), (x,), check
    return setup


_COMPOSITES = {  # op -> (call, expected outputs from the NumPy matrix)
    "aminmax": (lambda x: tl.aminmax(x, dim=1), lambda m: (m.min(1), m.max(1))),
    "cummax": (lambda x: tl.cummax(x, 1), lambda m: (np.maximum.accumulate(m, 1),)),
    "cummin": (lambda x: tl.cummin(x, 1), lambda m: (np.minimum.accumulate(m, 1),)),
    "frexp": (lambda x: tl.frexp(x), lambda m: np.frexp(m)),
    "gradient": (lambda x: tl.gradient(x, dim=1), lambda m: (np.gradient(m, axis=1),)),
    "unbind_copy": (lambda x: tl.unbind_copy(x, 0), lambda m: tuple(m)),
    "mode": (lambda x: tl.mode(x, 1), lambda m: (m.min(1), m.argmin(1))),  # distinct values: each row's smallest
    "histogram": (lambda x: tl.histogram(x.reshape(-1), bins=4),
                  lambda m: (np.histogram(m.reshape(-1), bins=4)[0],
                             tl.linspace(float(m.min()), float(m.max()), 5).numpy())),
}


def _fail():
    raise AssertionError("the successful run produced the wrong state")


CASES = [Case(op, _composite(fn, want)) for op, (fn, want) in _COMPOSITES.items()] + [
    Case("resize_grow", _resize_grow),
    Case("resize_channels_last", _resize_channels_last),
    Case("resize_repairs_shrunk_storage", _resize_repairs_shrunk_storage),
    Case("resize_as_", _resize_as),
    Case("set_empty", _set_empty),
    Case("set_tensor", _set_tensor, min_events=0),
    Case("set_grows_storage", _set_grows_storage),
    Case("storage_resize_grow", _storage_grow),
    Case("storage_resize_shrink", _storage_shrink),
    Case("copy_", _copy_same),
    Case("copy_cast_broadcast", _copy_cast_broadcast),
    Case("copy_into_view", _copy_into_view),
    Case("to_dtype", _to_dtype),
    Case("to_copy", _to_copy),
    Case("contiguous", _contiguous),
    Case("clone", _clone),
    Case("clone_channels_last", _clone_channels_last),
    Case("zeros_out_grow", _zeros_out_grow),
    Case("zeros_out_same", _zeros_out_same),
    Case("ones_out_shrink", _ones_out_shrink),
    Case("full_out", _full_out),
    Case("arange_out", _arange_out),
    Case("empty_out", _empty_out),
    Case("fill_", _fill_method, needs=("Tensor.fill_",)),
    Case("zero_", _zero_method, needs=("Tensor.zero_",)),
    Case("add_", _add_inplace, needs=("Tensor.add_",)),
    Case("mul_scalar", _mul_inplace_scalar, needs=("Tensor.mul_",)),
    Case("sub_cast", _sub_inplace_cast, needs=("Tensor.sub_",)),
    Case("div_", _div_inplace, needs=("Tensor.div_",)),
    Case("add_out_grow", _add_out_grow, needs=("add",)),
    Case("mul_out_same", _mul_out_same, needs=("mul",)),
    Case("exp_out_grow", _exp_out_grow, needs=("exp",)),
    Case("sum_out_grow", _sum_out_grow, needs=("sum",)),
    Case("mean_out_same", _mean_out_same, needs=("mean",)),
    Case("matmul_out_grow", _matmul_out_grow, needs=("matmul",)),
    Case("var_mean", _var_mean),
    Case("std_mean", _std_mean),
    Case("qr", _lapack("qr")),
    Case("svd", _lapack("svd")),
    Case("lu_factor_out", _lu_factor_out),
    *(Case(op, _factor_case(op)) for op in ("geqrf", "lu", "svd_lowrank", "pca_lowrank")),
    Case("unique_consecutive", _unique_consecutive),
] + MULTI_CASES


@pytest.mark.filterwarnings("ignore:.*was resized:UserWarning")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_injected_fault_leaves_everything_unchanged(case, device):
    case.require()
    fn, objs, check = case.setup(device)
    with count_events() as counts:
        fn()
    check()
    assert counts.total >= case.min_events, f"{case.name} performed no alloc/copy/launch: {counts}"
    for kind in T.KINDS:
        for n in range(1, getattr(counts, kind) + 1):
            fn, objs, check = case.setup(device)
            snap = snapshot(*objs)
            with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
                fn()
            assert plan.fired
            assert_unchanged(snap)
            fn()  # the same objects still work: the failure left nothing half-done
            check()


# -- fault plans ---------------------------------------------------------------------------------

def test_count_events_counts_each_kind(device):
    t = tl.arange(6, device=device)
    with count_events() as c:
        t.resize_(100)
    assert (c.alloc, c.copy, c.launch) == (1, 1, 0) and c.total == 2
    with count_events() as c:
        tl.zeros(3, device=device)
    assert c.as_dict() == {"alloc": 1, "copy": 0, "launch": 1}
    assert T.fault_points(lambda: tl.arange(6, device=device).clone()) == [
        ("alloc", 1), ("alloc", 2), ("copy", 1), ("launch", 1)]


def test_inject_fault_fires_once_on_the_nth_event(device):
    with inject_fault("alloc", 2) as plan:
        tl.zeros(1, device=device)
        with pytest.raises(InjectedFault) as ei:
            tl.zeros(1, device=device)
        tl.zeros(1, device=device)  # once only
    assert plan.fired and ei.value.kind == "alloc" and ei.value.n == 2
    assert isinstance(ei.value, RuntimeError) and "inject_fault('alloc', 2)" in str(ei.value)
    with inject_fault("launch", 5) as plan:
        tl.zeros(1, device=device)
    assert not plan.fired
    tl.zeros(1, device=device)  # no plan after the context


def test_inject_fault_any_counts_all_kinds(device):
    t = tl.arange(6, device=device)
    with inject_fault("any", 2), pytest.raises(InjectedFault) as ei:
        t.resize_(100)  # alloc #1, then copy #1 = event 2
    assert ei.value.kind == "copy" and t.shape == (6,)


def test_inject_fault_validates_arguments():
    with pytest.raises(ValueError, match="kind"):
        inject_fault("malloc", 1)
    for n in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="n must be"):
            inject_fault("alloc", n)


def test_nested_plans_report_to_the_outer_count(device):
    with count_events() as outer:
        with inject_fault("launch", 1), pytest.raises(InjectedFault):
            tl.zeros(2, device=device)
        tl.zeros(2, device=device)
    assert outer.alloc == 2 and outer.launch == 2


def test_plans_apply_to_the_installing_thread_only(device):
    errors = []

    def other():
        try:
            for _ in range(50):
                tl.zeros(3, device=device).clone()
        except Exception as e:  # pragma: no cover - the failure being tested for
            errors.append(e)

    with inject_fault("alloc", 1) as plan, count_events() as counts:
        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert counts.total == 0 and not plan.fired and not errors
        with pytest.raises(InjectedFault):
            tl.zeros(3, device=device)


# -- snapshots -----------------------------------------------------------------------------------

@pytest.mark.parametrize("change,field", [
    (lambda t: t.resize_(2), "shape"),
    (lambda t: t.copy_(tl.ones(4, device=t.device)), "storage bytes"),
    (lambda t: t.set_(), "storage object"),
    (lambda t: t.untyped_storage().resize_(64), "storage nbytes"),
    (lambda t: t._vc.bump(), "_version"),
])
def test_assert_unchanged_names_what_changed(device, change, field):
    t = tl.arange(4, dtype=tl.float32, device=device)
    snap = snapshot(t)
    assert_unchanged(snap)
    change(t)
    with pytest.raises(AssertionError, match=field):
        assert_unchanged(snap)


def test_snapshot_reads_no_events_and_rejects_other_objects(device):
    t = tl.arange(4, device=device)
    with count_events() as c:
        assert_unchanged(snapshot(t, t.untyped_storage()))
    assert c.total == 0
    with pytest.raises(TypeError):
        snapshot(np.zeros(2))


# -- assert_close --------------------------------------------------------------------------------

ATOL = {tl.float16: 1e-5, tl.bfloat16: 1e-5, tl.float32: 1e-5, tl.float64: 1e-7}
RTOL = {tl.float16: 1e-3, tl.bfloat16: 1.6e-2, tl.float32: 1.3e-6, tl.float64: 1e-7}


@pytest.mark.parametrize("dt", list(ATOL), ids=lambda d: d.name)
def test_assert_close_default_tolerances(device, dt):
    zero = tl.zeros(1, dtype=dt, device=device)
    T.assert_close(tl.full((1,), ATOL[dt] * 0.8, dtype=dt, device=device), zero)
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        T.assert_close(tl.full((1,), ATOL[dt] * 1.5, dtype=dt, device=device), zero)
    big = 2.0 ** 12  # exact in every floating dtype; the atol is negligible next to rtol * 4096
    ref = tl.full((1,), big, dtype=dt, device=device)
    step = np.spacing(np.asarray(big, dtype=dt.np).astype(np.float64) if dt is not tl.bfloat16 else np.float64(big))
    over = big * (1 + 3 * RTOL[dt]) + (16 if dt is tl.bfloat16 else 2 * float(step))
    with pytest.raises(AssertionError):
        T.assert_close(tl.full((1,), over, dtype=dt, device=device), ref)


@pytest.mark.parametrize("dt", [tl.int8, tl.int32, tl.int64, tl.uint8, tl.bool], ids=lambda d: d.name)
def test_assert_close_integers_are_exact(device, dt):
    a = tl.tensor([1, 0, 1], dtype=dt, device=device)
    T.assert_close(a, tl.tensor([1, 0, 1], dtype=dt, device=device))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal"):
        T.assert_close(a, tl.tensor([1, 1, 1], dtype=dt, device=device))
    T.assert_close(a, tl.tensor([1, 1, 1], dtype=dt, device=device), rtol=0, atol=1)
    big = tl.tensor([2 ** 62 + 1], dtype=tl.int64, device=device)
    with pytest.raises(AssertionError):  # no float64 round trip hiding the difference
        T.assert_close(big, tl.tensor([2 ** 62], dtype=tl.int64, device=device))


def test_assert_close_checks_shape_dtype_nan_and_arguments(device):
    a = tl.tensor([1.0, float("nan"), float("inf")], device=device)
    with pytest.raises(AssertionError, match="not close"):
        T.assert_close(a, a)
    T.assert_close(a, a, equal_nan=True)
    with pytest.raises(AssertionError, match="'shape'"):
        T.assert_close(a, tl.zeros(2, device=device))
    with pytest.raises(AssertionError, match="'dtype'"):
        T.assert_close(a, a.to(tl.float64), equal_nan=True)
    T.assert_close(a, a.to(tl.float64), equal_nan=True, check_dtype=False)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        T.assert_close(a, a, rtol=1e-3)
    with pytest.raises(AssertionError, match="^custom$"):
        T.assert_close(tl.zeros(1, device=device), tl.ones(1, device=device), msg="custom")
    T.assert_close(tl.tensor([1.0, 2.0], device=device), np.array([1.0, 2.0], dtype=np.float32))
    T.assert_close([tl.zeros(1, device=device), 1.0], [tl.zeros(1, device=device), 1.0])
    with pytest.raises(AssertionError, match=r"item \[1\]"):
        T.assert_close([1.0, 2.0], [1.0, 2.1])


PAIRS = [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], "float32"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-6], "float32"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-4], "float32"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-3], "float16"),
    ([1.0, 2.0], [1.0, 2.0 + 2e-2], "bfloat16"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-9], "float64"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-6], "float64"),
    ([[1, 2], [3, 4]], [[1, 2], [3, 5]], "int64"),
    ([float("inf")], [float("inf")], "float32"),
    ([float("inf")], [float("-inf")], "float32"),
    ([0.0], [1e-6], "float32"),
]


@pytest.mark.parametrize("a,e,dt", PAIRS)
def test_assert_close_agrees_with_torch(torch, a, e, dt):
    def outcome(lib, mod):
        try:
            mod.assert_close(lib.tensor(a, dtype=getattr(lib, dt)), lib.tensor(e, dtype=getattr(lib, dt)))
            return "ok"
        except AssertionError as err:
            return str(err).split("\n")[:3]
    ours = outcome(tl, T)
    theirs = outcome(torch, torch.testing)
    assert (ours == "ok") == (theirs == "ok")
    if ours != "ok":
        assert ours[:3] == theirs[:3]  # headline and mismatch count read the same


# process-wide settings: probing them with a tensor would change every later test (set_printoptions(x, 1)
# made the precision a tensor, and every repr after this test failed)
_GLOBAL_STATE_SETTERS = {"set_printoptions", "set_default_dtype", "set_rng_state", "manual_seed", "seed"}


def _multi_output_ops():
    """Every public function that, called on a matrix (with a dim, or without), returns two or more
    tensors written into different memory: the ops the sweep must cover (views such as split return
    several tensors over one storage and write nothing)."""
    x = tl.tensor(_MATRIX.copy())
    found = set()
    for name in dir(tl):
        fn = getattr(tl, name)
        if (name.startswith("_") or not callable(fn) or isinstance(fn, type) or name in _GLOBAL_STATE_SETTERS
                or name.startswith(("set_", "use_"))):  # set_default_tensor_type, use_deterministic_algorithms, ...
            continue
        for args in ((x, 1), (x,)):
            try:
                r = fn(*args)
            except Exception:  # noqa: BLE001 - not callable this way: try the next form
                continue
            if isinstance(r, tuple) and len(r) > 1 and all(isinstance(t, tl.Tensor) for t in r):
                storages = {id(t.untyped_storage()) for t in r} - {id(x.untyped_storage())}
                if len(storages) > 1:
                    found.add(name)
            break
    return found


def test_the_sweep_covers_every_op_with_several_outputs():
    before, rng = (tl.get_printoptions(), tl.get_default_dtype()), tl.get_rng_state()
    ops = _multi_output_ops()
    tl.set_rng_state(rng)  # random ops draw from the generator: later tests keep their seeds' streams
    assert (tl.get_printoptions(), tl.get_default_dtype()) == before, "the probe changed process-wide settings"
    assert {"max", "min", "sort", "topk", "kthvalue", "median", "var_mean"} <= ops, ops  # the probe itself works
    covered = {c.name for c in CASES}
    missing = sorted(op for op in ops if not any(n == op or n.startswith(op + "_out") for n in covered))
    assert not missing, f"ops with several outputs but no fault-injection case: {missing}"
