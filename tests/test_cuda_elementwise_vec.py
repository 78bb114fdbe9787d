"""The type-resolved contiguous elementwise kernels (`*_vec`, kernels/elementwise.cu) and the packed
copy/cast kernels (kernels/copy.cu), against the CPU backend: every *_vec instantiation of
kernel_table (each op in each storage dtype it has a row for; float16/bfloat16 under torch's float32
upcast), with aligned operands (16-byte packs, then the tail) and operands one element off
(the launcher's fallback to the element loop); every dtype pair of copy_cast, contiguous and strided,
aligned and misaligned, at lengths around the pack and unroll sizes. Runs where CUDA (or the
emulation driver) is available."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends, dtypes
from tensorlab.kernel_table import ELEMENTWISE, elementwise_vec_dtypes, elementwise_vec_expr, elementwise_vec_types
from test_cuda_elementwise import _CPU, _CUDA, _compare, _cuda_only, _values  # noqa: F401 (the autouse fixture)

pytestmark = pytest.mark.cuda

_DIVISOR = {"div_true": 1, "div_trunc": 1, "div_floor": 1, "remainder": 1, "fmod": 1, "addcdiv": 2}


def _same(got, want, desc):
    """Exact equality; 16-bit floats compared as float64 (exact) so that NaN equals NaN."""
    if got.dtype.itemsize == 2 and got.dtype.kind not in "iu":
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want, err_msg=desc)


def _launched(fn):
    from tensorlab.backends.cuda import launch as K
    before = dict(K.LAUNCHES)
    fn()
    return {e for (s, e), v in K.LAUNCHES.items() if v != before.get((s, e), 0)}


def _pair(arr, dt, offset):
    """(cpu, cuda) tensors holding arr; the CUDA one starts `offset` elements into its buffer."""
    cpu = tl.tensor(arr, dtype=dt)
    flat = np.concatenate([arr.reshape(-1)[:1]] * offset + [arr.reshape(-1)]) if offset else arr.reshape(-1)
    cuda = tl.tensor(flat, dtype=dt, device="cuda")[offset:]
    return cpu, cuda.view(*arr.shape)


def _run_case(prim, op, t, compute, n, offset, rng):
    out_dt, op_dts = elementwise_vec_types(prim, op, t)
    pairs = []
    for k, dt in enumerate(op_dts):
        arr = _values(dt, (n,), rng, nonzero=_DIVISOR.get(op) == k)
        pairs.append(_pair(arr, dt, offset if k == 0 else 0))
    results = []
    for which in (0, 1):
        out = tl.empty(n, dtype=out_dt, device=("cpu", "cuda")[which])
        getattr(backends.get((_CPU, _CUDA)[which]), prim)(out, op, *[p[which] for p in pairs], compute)
        results.append(out)
    return results, out_dt


def _vec_cases():
    for prim, ops in ELEMENTWISE.items():
        for op in ops:
            yield pytest.param(prim, op, id=f"{prim}-{op}")


@pytest.mark.parametrize("prim,op", list(_vec_cases()))
def test_every_vec_instantiation_matches_the_cpu_backend(prim, op):
    rng = np.random.default_rng(11)
    for t in elementwise_vec_dtypes(prim, op):
        # float16/bfloat16 compute in float32 (the front end's upcast; the CPU backend's bfloat16 math
        # differs, e.g. sign(NaN), and the front end never asks for it)
        computes = [dtypes.float32] if t in (dtypes.float16, dtypes.bfloat16) else [t]
        for compute in computes:
            for n, offset in ((1, 0), (77, 0), (133, 1)):  # one element; packs + tail; misaligned
                res = {}
                launched = _launched(lambda: res.update(r=_run_case(prim, op, t, compute, n, offset, rng)))
                (want, got), out_dt = res["r"]
                desc = f"{prim} {op} T={t.name} compute={compute.name} n={n} offset={offset}"
                _compare(got.cpu().numpy(), want.numpy(), out_dt, desc)
                assert elementwise_vec_expr(prim, op, t) in launched, f"{desc}: launched {launched}"


def test_rare_dtype_mixes_and_wide_indexing_take_the_generic_kernel():
    from tensorlab.backends.cuda import launch as K
    h = tl.ones(40, dtype=tl.float16, device="cuda")
    f = tl.ones(40, dtype=tl.float32, device="cuda")
    i = tl.ones(40, dtype=tl.int32, device="cuda")
    assert any(e.startswith("binary_kernel<tl::op::Add, float") for e in _launched(lambda: f + i))  # no row
    assert _launched(lambda: h + f) == {"binary_strided<tl::op::Add, float, int, float, __half>"}
    with K.wide_indexing():
        assert any(e.startswith("binary_kernel<tl::op::Add, float, long long") for e in _launched(lambda: h + h))
    assert "binary_vec<tl::op::Add, __half, int>" in _launched(lambda: h + h)
    assert "binary_vec<tl::op::Lt, __nv_bfloat16, int, bool>" in _launched(lambda: h.bfloat16() < 0.5)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16, tl.float32, tl.float64, tl.int8, tl.int64, tl.bool],
                         ids=lambda d: d.name)
def test_public_ops_on_the_vec_path_in_place_and_misaligned(dtype):
    """x.op_(y) writes over its own input pack by pack; offsets 0..2 put out and inputs on and off the
    pack boundary independently."""
    rng = np.random.default_rng(3)
    n = 45
    for off_x, off_y in ((0, 0), (1, 1), (0, 2), (2, 0)):
        base = _values(dtype, (n + off_x,), rng)
        other = _values(dtype, (n + off_y,), rng)
        xc, yc = tl.tensor(base[off_x:], dtype=dtype), tl.tensor(other[off_y:], dtype=dtype)
        x = tl.tensor(base, dtype=dtype, device="cuda")[off_x:]
        y = tl.tensor(other, dtype=dtype, device="cuda")[off_y:]
        _compare(tl.where(x == y, x, y).cpu().numpy(), tl.where(xc == yc, xc, yc).numpy(), dtype, "where")
        _compare((x != y).cpu().numpy(), (xc != yc).numpy(), tl.bool, "ne")
        _compare(tl.maximum(x, y).cpu().numpy(), tl.maximum(xc, yc).numpy(), dtype, "maximum")
        if dtype is not tl.bool:
            _compare(tl.clamp(x, -1, 2).cpu().numpy(), tl.clamp(xc, -1, 2).numpy(), dtype, "clamp")
            x.add_(y)
            xc.add_(yc)
            _compare(x.cpu().numpy(), xc.numpy(), dtype, f"add_ offsets {off_x},{off_y}")


# -- copy / cast ----------------------------------------------------------------------------------

def _finite(arr):
    return np.nan_to_num(arr.astype(np.float64), nan=1.0, posinf=3.0, neginf=-3.0).astype(arr.dtype)


def _dtype_pairs():
    for s in dtypes.ALL:
        for d in dtypes.ALL:
            yield pytest.param(s, d, id=f"{s.name}-{d.name}")


@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
@pytest.mark.parametrize("src,dst", list(_dtype_pairs()))
def test_every_cast_pair_contiguous_and_strided(src, dst, wide):
    from tensorlab.backends.cuda import launch as K
    with K.wide_indexing() if wide else _null():
        _cast_pair(src, dst, (17, 131) if wide else (1, 15, 16, 17, 131, 1030))


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _cast_pair(src, dst, lengths):
    rng = np.random.default_rng(5)
    assert tl.empty(3, device="cuda").data_ptr() % 16 == 0  # fresh buffers take the packed path
    for n in lengths:  # below, at and past one pack; several unrolled steps plus a tail
        arr = _values(src, (n,), rng)
        if src.is_floating_point and not dst.is_floating_point:
            arr = _finite(arr)  # NaN/inf -> int is undefined
        for off_s, off_d in ((0, 0), (1, 0), (0, 1), (3, 3)):
            want = tl.tensor(arr, dtype=src).to(dst).numpy()
            _, x = _pair(arr, src, off_s)
            holder = tl.empty(n + off_d, dtype=dst, device="cuda")
            out = holder[off_d:]
            launched = _launched(lambda: out.copy_(x))
            desc = f"{src.name} -> {dst.name} n={n} offsets {off_s},{off_d}"
            assert any(e.startswith("copy_cast_contiguous") for e in launched), f"{desc}: {launched}"
            _same(out.cpu().numpy(), want, desc)
    # strided: a transposed source into a dense destination and back
    arr = _values(src, (33, 7), rng)
    if src.is_floating_point and not dst.is_floating_point:
        arr = _finite(arr)
    x = tl.tensor(np.ascontiguousarray(arr.T), dtype=src, device="cuda").t()
    want = tl.tensor(arr, dtype=src).to(dst).numpy()
    got = tl.empty((33, 7), dtype=dst, device="cuda")
    assert any(e.startswith("copy_cast_strided") for e in _launched(lambda: got.copy_(x)))
    _same(got.cpu().numpy(), want, f"strided {src.name} -> {dst.name}")
    back = tl.empty((7, 33), dtype=dst, device="cuda").t()
    back.copy_(tl.tensor(arr, dtype=src, device="cuda"))
    _same(back.cpu().numpy(), want, f"strided out {src.name} -> {dst.name}")
