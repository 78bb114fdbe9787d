"""matmul / @ / mm / bmm / mv / dot / outer against NumPy over every shape combination
(1-D, 2-D, batched, broadcast), dtypes and layouts, and against torch for dtypes and errors."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.ops import registry
from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot
from test_reduction import ALL_DTYPES, LAYOUTS, against_torch, check, host, make, sample

SHAPES = [  # (a, b): every rank combination torch.matmul accepts
    ((4,), (4,)), ((4,), (4, 3)), ((2, 4), (4,)), ((2, 4), (4, 3)),
    ((5, 2, 4), (4,)), ((4,), (5, 4, 3)), ((5, 2, 4), (4, 3)), ((2, 4), (5, 4, 3)), ((5, 2, 4), (5, 4, 3)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (6, 1, 4, 2)), ((3, 1, 2, 4), (3, 4, 2)),
    ((0, 4), (4, 3)), ((2, 0), (0, 3)), ((0,), (0,)), ((5, 2, 0), (0, 3)), ((0, 2, 4), (4, 3)),
]


def _np_matmul(a, b):
    acc = np.float64 if a.dtype.kind == "f" or a.dtype == np.dtype("bfloat16") else None
    if acc is not None:
        return np.matmul(a.astype(acc), b.astype(acc))
    return np.matmul(a, b)


@pytest.mark.parametrize("sa,sb", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_numpy_for_every_shape(device, sa, sb):
    a, b = sample(sa, tl.float64, seed=1), sample(sb, tl.float64, seed=2)
    for la in LAYOUTS:
        for lb in LAYOUTS:
            r = tl.matmul(make(a, device, la), make(b, device, lb))
            check(r, np.matmul(a, b), tl.float64)
    check(make(a, device) @ make(b, device), np.matmul(a, b))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not tl.bool], ids=lambda d: d.name)
def test_matmul_dtypes_match_numpy(device, dtype):
    a, b = sample((3, 2, 5), dtype, seed=3), sample((5, 4), dtype, seed=4)
    r = make(a, device, "transposed") @ make(b, device, "strided")
    want = _np_matmul(a, b)
    if dtype.is_floating_point:
        check(r, want, dtype)
    else:
        check(r, want.astype(dtype.np), dtype)  # integers wrap like torch's


def test_integer_matmul_wraps_like_torch(device, torch):
    a = np.full((2, 3), 100, np.int8)
    against_torch(torch, device, lambda m, x, y: m.matmul(x, y), a, a.T.copy())


def test_half_matmul_accumulates_in_float32(device):
    a = np.full((1, 4096), 1.0, dtype=np.float16)
    b = np.full((4096, 1), 1.0, dtype=np.float16)
    r = make(a, device) @ make(b, device)
    assert r.dtype is tl.float16 and r.item() == 4096.0


LINALG_CALLS = {
    "matmul": (lambda m, x, y: m.matmul(x, y), [(3, 4), (4, 2)]),
    "matmul_method": (lambda m, x, y: x.matmul(y), [(2, 3, 4), (4,)]),
    "matmul_operator": (lambda m, x, y: x @ y, [(4,), (2, 4, 3)]),
    "mm": (lambda m, x, y: m.mm(x, y), [(3, 4), (4, 2)]),
    "bmm": (lambda m, x, y: m.bmm(x, y), [(2, 3, 4), (2, 4, 5)]),
    "mv": (lambda m, x, y: m.mv(x, y), [(3, 4), (4,)]),
    "dot": (lambda m, x, y: m.dot(x, y), [(4,), (4,)]),
    "outer": (lambda m, x, y: m.outer(x, y), [(3,), (2,)]),
    "ger": (lambda m, x, y: m.ger(x, y), [(3,), (2,)]),
}


@pytest.mark.parametrize("name", sorted(LINALG_CALLS))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_products_match_torch(device, torch, name, dtype):
    fn, shapes = LINALG_CALLS[name]
    against_torch(torch, device, fn, sample(shapes[0], dtype, seed=5), sample(shapes[1], dtype, seed=6))


MIXED = [(tl.float32, tl.float64), (tl.float32, tl.int64), (tl.int32, tl.int64), (tl.bool, tl.float32),
         (tl.float16, tl.bfloat16)]


@pytest.mark.parametrize("name", sorted(LINALG_CALLS))
@pytest.mark.parametrize("dts", MIXED, ids=lambda p: f"{p[0].name}-{p[1].name}")
def test_mixed_dtypes_match_torch(device, torch, name, dts):
    fn, shapes = LINALG_CALLS[name]
    against_torch(torch, device, fn, sample(shapes[0], dts[0], seed=7), sample(shapes[1], dts[1], seed=8))


ERROR_SHAPES = {
    "matmul_2d": (lambda m, x, y: m.matmul(x, y), (2, 3), (4, 5)),
    "matmul_1d": (lambda m, x, y: x @ y, (3,), (4,)),
    "matmul_1d_2d": (lambda m, x, y: x @ y, (3,), (4, 5)),
    "matmul_2d_1d": (lambda m, x, y: x @ y, (2, 3), (4,)),
    "matmul_batched": (lambda m, x, y: x @ y, (7, 2, 3), (7, 4, 5)),
    "matmul_batch_broadcast": (lambda m, x, y: x @ y, (7, 2, 3), (6, 3, 5)),
    "matmul_0d": (lambda m, x, y: m.matmul(x, y), (), (3,)),
    "matmul_0d_0d": (lambda m, x, y: m.matmul(x, y), (), ()),
    "mm_1d": (lambda m, x, y: m.mm(x, y), (3,), (3, 2)),
    "mm_3d": (lambda m, x, y: m.mm(x, y), (1, 2, 3), (3, 2)),
    "mm_mat2_1d": (lambda m, x, y: m.mm(x, y), (2, 3), (3,)),
    "mm_shapes": (lambda m, x, y: x.mm(y), (2, 3), (4, 5)),
    "bmm_2d": (lambda m, x, y: m.bmm(x, y), (2, 3), (3, 2)),
    "bmm_batch2_2d": (lambda m, x, y: m.bmm(x, y), (1, 2, 3), (3, 2)),
    "bmm_batch": (lambda m, x, y: m.bmm(x, y), (2, 2, 3), (3, 3, 2)),
    "bmm_inner": (lambda m, x, y: m.bmm(x, y), (2, 2, 3), (2, 4, 2)),
    "dot_size": (lambda m, x, y: m.dot(x, y), (3,), (4,)),
    "dot_2d": (lambda m, x, y: m.dot(x, y), (3, 1), (3,)),
    "mv_size": (lambda m, x, y: m.mv(x, y), (2, 3), (4,)),
    "mv_dims": (lambda m, x, y: m.mv(x, y), (2, 3), (3, 1)),
    "mv_vec_vec": (lambda m, x, y: m.mv(x, y), (3,), (3,)),
    "outer_2d": (lambda m, x, y: m.outer(x, y), (2, 2), (3,)),
    "outer_0d": (lambda m, x, y: m.outer(x, y), (), (3,)),
    "matmul_out_dtype": (lambda m, x, y: m.matmul(x, y, out=m.empty(0, dtype=m.float64)), (2, 3), (3, 2)),
    "mm_out_long": (lambda m, x, y: m.mm(x, y, out=m.empty(0, dtype=m.int64)), (2, 3), (3, 2)),
    "dot_out_dtype": (lambda m, x, y: m.dot(x, y, out=m.empty((), dtype=m.float64)), (3,), (3,)),
}


@pytest.mark.parametrize("name", sorted(ERROR_SHAPES))
def test_errors_match_torch(device, torch, name):
    fn, sa, sb = ERROR_SHAPES[name]
    against_torch(torch, device, fn, sample(sa, tl.float32, seed=9), sample(sb, tl.float32, seed=10))


def test_error_messages_name_shapes_and_dtypes(device):
    a, b = tl.ones((2, 3), device=device), tl.ones((4, 5), device=device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        a @ b
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: "
                                           r"\[7, 3\] but got: \[7, 4\]"):
        tl.ones((7, 2, 3), device=device) @ tl.ones((7, 4, 5), device=device)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        a @ tl.ones((3, 2), dtype=tl.float64, device=device)
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for 'Bool'"):
        tl.ones((2, 2), dtype=tl.bool, device=device) @ tl.ones((2, 2), dtype=tl.bool, device=device)


def test_matmul_operator_with_non_tensors(device):
    x = tl.ones(3, device=device)
    assert x.__matmul__(2) is NotImplemented and x.__rmatmul__(2) is NotImplemented
    with pytest.raises(TypeError):
        x @ 2
    a = make(sample((2, 3), tl.float32, seed=11), device)
    check(x.__rmatmul__(a), host(a) @ np.ones(3, np.float32))


def test_dot_mv_outer_mm_bmm_match_numpy(device):
    v, w = sample((5,), tl.float64, seed=12), sample((5,), tl.float64, seed=13)
    m, n = sample((3, 5), tl.float64, seed=14), sample((5, 2), tl.float64, seed=15)
    b1, b2 = sample((4, 3, 5), tl.float64, seed=16), sample((4, 5, 2), tl.float64, seed=17)
    for layout in LAYOUTS:
        check(tl.dot(make(v, device, layout), make(w, device)), np.dot(v, w), tl.float64)
        check(tl.mv(make(m, device, layout), make(v, device, layout)), m @ v)
        check(tl.outer(make(v, device, layout), make(w[:3], device)), np.outer(v, w[:3]))
        check(tl.mm(make(m, device, layout), make(n, device, layout)), m @ n)
        check(tl.bmm(make(b1, device, layout), make(b2, device)), b1 @ b2)
    assert tl.dot(make(v, device), make(w, device)).shape == ()


def test_out_variants(device):
    a, b = sample((2, 3), tl.float32, seed=18), sample((3, 4), tl.float32, seed=19)
    out = tl.empty(0, device=device)
    r = tl.matmul(make(a, device), make(b, device), out=out)
    assert r is out and out.shape == (2, 4) and out._version == 1
    check(out, a @ b)
    out2 = tl.empty((2, 4), device=device)
    tl.mm(make(a, device), make(b, device), out=out2)
    check(out2, a @ b)
    o = tl.empty(0, dtype=tl.float64, device=device)
    tl.outer(make(a[0], device), make(b[0].astype(np.float64), device), out=o)
    check(o, np.outer(a[0].astype(np.float64), b[0].astype(np.float64)), tl.float64)


def test_failed_matmul_out_changes_nothing(device):
    a = make(sample((2, 3), tl.float32, seed=20), device)
    b = make(sample((3, 4), tl.float32, seed=21), device)
    out = tl.zeros(0, device=device)
    points = fault_points(lambda: tl.matmul(a, b, out=out))
    assert points
    for kind, n in points:
        out = tl.zeros(0, device=device)
        snap = snapshot(a, b, out)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            tl.matmul(a, b, out=out)
        assert_unchanged(snap)
    bad = tl.zeros((2, 4), dtype=tl.float64, device=device)
    snap = snapshot(bad)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        tl.matmul(a, b, out=bad)
    assert_unchanged(snap)


def test_registry_rows():
    from tensorlab.backends import cpu
    for name in ("matmul", "mm", "bmm", "mv", "dot", "outer"):
        row = registry.REGISTRY[name]
        assert row.family == "linalg" and row.primitive in cpu.linalg.__all__
        assert hasattr(tl, name) and hasattr(tl.Tensor, name)
    assert hasattr(tl.Tensor, "__matmul__") and hasattr(tl.Tensor, "__rmatmul__")


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
_FIXTURE_CHECK = hypothesis.HealthCheck.function_scoped_fixture  # `device` is the same for every example


@st.composite
def _matmul_shapes(draw):
    """Operand shapes torch.matmul accepts: 1-D or matrices with broadcastable batch dims."""
    n, k, m = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    batch = draw(st.lists(st.integers(1, 3), max_size=3))
    ba = [b if draw(st.booleans()) else 1 for b in batch][draw(st.integers(0, len(batch))):]
    bb = [b if draw(st.booleans()) else 1 for b in batch][draw(st.integers(0, len(batch))):]
    sa = (k,) if draw(st.booleans()) and not ba else tuple(ba) + (n, k)
    sb = (k,) if draw(st.booleans()) and not bb else tuple(bb) + (k, m)
    return sa, sb, draw(st.sampled_from(LAYOUTS)), draw(st.sampled_from(LAYOUTS))


@hypothesis.settings(max_examples=80, deadline=None, suppress_health_check=[_FIXTURE_CHECK])
@hypothesis.given(case=_matmul_shapes())
def test_matmul_matches_numpy_on_random_shapes(device, case):
    sa, sb, la, lb = case
    a, b = sample(sa, tl.float64, seed=1), sample(sb, tl.float64, seed=2)
    check(make(a, device, la) @ make(b, device, lb), np.matmul(a, b), tl.float64)


# torch 2.13 CPU: each bool product raises NotImplementedError naming the ATen kernel it folds into
@pytest.mark.parametrize("sa,sb,kernel", [
    ((2,), (2,), "dot"), ((2, 2), (2,), "addmv_impl_cpu"), ((3, 2, 2), (2,), "addmv_impl_cpu"),
    ((2,), (2, 2), "addmm_impl_cpu_"), ((3, 2, 2), (2, 2), "addmm_impl_cpu_"),
    ((3, 2, 2), (3, 2, 2), "bmm"), ((2,), (3, 2, 2), "bmm")])
def test_bool_matmul_not_implemented(device, sa, sb, kernel):
    a, b = tl.ones(sa, dtype=tl.bool, device=device), tl.ones(sb, dtype=tl.bool, device=device)
    with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
        a @ b


def test_bool_products_not_implemented(device):
    m, v = tl.ones((2, 2), dtype=tl.bool, device=device), tl.ones(2, dtype=tl.bool, device=device)
    for f, kernel in [(lambda: m.mm(m), "addmm_impl_cpu_"), (lambda: m[None].bmm(m[None]), "bmm"),
                      (lambda: m.mv(v), "addmv_impl_cpu"), (lambda: v.dot(v), "dot")]:
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
            f()
