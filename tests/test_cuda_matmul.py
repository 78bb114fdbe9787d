"""The matmul kernels (kernels/matmul.cu) against NumPy: sizes around both kernels' tile edges
(16, 64, 128), row-major, column-major and fully strided operands, broadcast batch dims, every
dtype on both the small and the register-blocked kernel with both index types, out= targets that
overlap an input or have another dtype or layout. Written once for every device, like the rest."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from test_reduction import LAYOUTS, make, sample

MATMUL_DTYPES = [d for d in tl.dtypes.ALL if d is not tl.bool]


@pytest.fixture(autouse=True)
def _our_kernels(monkeypatch):
    """These tests are kernels/matmul.cu's: float products go to cuBLAS otherwise (tested in
    tests/test_cuda_gemm_library.py)."""
    from tensorlab.backends.cuda import linalg
    monkeypatch.setattr(linalg, "VENDOR_GEMM", False)
# (M, N, K): 1 and 130 around the small 16x16 tile and the 64/128 register-blocked tiles, both
# kernels (min(M, N) >= 64 picks the big float tile, >= 32 the big double one), K below, at and
# past the 8- and 16-deep slices
SIZES = [(1, 1, 1), (1, 130, 7), (130, 1, 9), (17, 33, 15), (31, 40, 16), (63, 65, 8), (64, 64, 64),
         (65, 127, 17), (128, 128, 8), (129, 130, 33), (130, 64, 1)]


def reference(a, b):
    """a @ b as the backends compute it: floats exactly (float64) then rounded once to the
    dtype, integers wrapping modulo 2**bits, bool as any(a and b)."""
    if a.dtype.kind == "f" or a.dtype == tl.bfloat16.np:
        return np.matmul(a.astype(np.float64), b.astype(np.float64))
    if a.dtype == np.bool_:
        return np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)


def assert_product(r, a, b):
    """r == a @ b: exactly for integers, else within the dtype's rounding of a K-term sum."""
    want = reference(a, b)
    got = np.asarray(r)
    assert got.shape == want.shape
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    k = a.shape[-1]
    eps = {2: 2.0 ** -8 if got.dtype == tl.bfloat16.np else 2.0 ** -11, 4: 2.0 ** -23, 8: 2.0 ** -52}[got.itemsize]
    scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    err = np.abs(got.astype(np.float64) - want)
    bound = eps * (1 + scale) + 2.0 ** -23 * k * scale  # one rounding of the result + float32 accumulation
    assert np.all(err <= bound), f"max excess {np.max(err - bound)} (K={k})"


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("mnk", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_sizes_around_tile_edges(device, mnk, dtype):
    m, n, k = mnk
    a, b = sample((m, k), dtype, seed=m), sample((k, n), dtype, seed=n)
    for la, lb in (("contiguous", "contiguous"), ("transposed", "transposed"), ("strided", "transposed"),
                   ("transposed", "strided")):
        assert_product(make(a, device, la) @ make(b, device, lb), a, b)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_on_both_kernels(device, index, dtype):
    for m, n, k in ((5, 7, 19), (66, 67, 10)):
        a, b = sample((2, m, k), dtype, seed=k), sample((2, k, n), dtype, seed=n)
        assert_product(make(a, device) @ make(b, device, "transposed"), a, b)


def test_bool_outer_on_both_kernels(device, index):
    for n in (5, 70):
        v, w = sample((n,), tl.bool, seed=n), sample((n + 1,), tl.bool, seed=1)
        r = tl.outer(make(v, device), make(w, device))
        assert r.dtype is tl.bool
        np.testing.assert_array_equal(np.asarray(r), np.outer(v, w))


@pytest.mark.parametrize("dtype", [tl.int8, tl.uint8, tl.int32], ids=lambda d: d.name)
def test_integer_products_wrap(device, dtype):
    info = np.iinfo(dtype.np)
    for m in (3, 70):
        a = np.full((m, 40), info.max, dtype.np)
        b = np.full((40, m), info.max // 3, dtype.np)
        assert_product(make(a, device) @ make(b, device, "transposed"), a, b)


@pytest.mark.parametrize("m", [3, 70], ids=["small", "tiled"])
def test_broadcast_batches(device, m):
    a = sample((3, 1, m, 9), tl.float32, seed=1)
    b = sample((4, 9, m + 1), tl.float32, seed=2)
    assert_product(make(a, device) @ make(b, device), a, b)
    # a matrix expanded over the batch (stride 0), and a batch made of one matrix's columns
    x = make(a[0, 0], device).expand(5, m, 9)
    assert_product(x @ make(b[0], device, "transposed"), np.broadcast_to(a[0, 0], (5, m, 9)), b[0])
    v = sample((9,), tl.float32, seed=3)
    assert_product(make(a, device, "transposed") @ make(v, device), a, v)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16], ids=lambda d: d.name)
def test_half_accumulates_in_float_over_long_k(device, dtype):
    for m in (2, 64):
        a = np.ones((m, 700), dtype.np)
        b = np.ones((700, m), dtype.np)
        r = make(a, device) @ make(b, device)
        np.testing.assert_array_equal(np.asarray(r).astype(np.float64), np.full((m, m), 700.0))


@pytest.mark.parametrize("m", [4, 66], ids=["small", "tiled"])
def test_out_overlapping_an_input_reads_the_inputs_first(device, m):
    a, b = sample((m, m), tl.float64, seed=4), sample((m, m), tl.float64, seed=5)
    x, y = make(a, device), make(b, device)
    r = tl.mm(x, y, out=x)
    assert r is x
    assert_product(x, a, b)
    z = make(b, device)
    tl.matmul(z, z, out=z)
    assert_product(z, b, b)


def test_out_of_another_dtype_and_layout(device):
    v, w = sample((70,), tl.float32, seed=6), sample((65,), tl.float32, seed=7)
    out = tl.empty(0, dtype=tl.float64, device=device)
    tl.outer(make(v, device), make(w, device), out=out)
    assert out.dtype is tl.float64
    assert_product(out, v[:, None].astype(np.float64), w[None, :].astype(np.float64))
    a, b = sample((67, 5), tl.float32, seed=8), sample((5, 66), tl.float32, seed=9)
    for m, n in ((67, 66), (3, 2)):
        out = tl.empty((n, m), device=device).mT  # column-major result
        tl.mm(make(a[:m], device), make(b[:, :n], device), out=out)
        assert_product(out, a[:m], b[:, :n])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_vector_products(device, layout):
    for n in (1, 33, 130):
        v, w = sample((n,), tl.float64, seed=n), sample((n,), tl.float64, seed=n + 1)
        mat = sample((n, 70), tl.float64, seed=2)
        assert_product(tl.dot(make(v, device, layout), make(w, device, layout)), v, w)
        assert_product(tl.mv(make(mat.T.copy(), device, layout), make(v, device, layout)), mat.T.copy(), v)
        assert_product(make(v, device, layout) @ make(mat, device, layout), v, mat)
