"""Index arithmetic without integer division (kernels/tensorlab/common.cuh's magic_quotient): the host's
magic numbers (launch.divisor_magic) against Python's // , and the strided kernels that split a linear
index with them against NumPy on awkward shapes (sizes that are not powers of two, 1, primes, sizes
crossing the 256-thread block), transposed and expanded (stride 0) layouts, 32- and 64-bit indices."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends.cuda.launch import DIVISOR_DTYPES, LAYOUT_DTYPES, divisor, divisor_magic, strided_layout


def _quotients32(n, d):
    """The device's 32-bit quotients of the uint64 array n by d: (umulhi(n, magic) + n) >> shift."""
    magic, shift = divisor_magic(d, 32)
    assert 0 <= magic < 2 ** 32 and 0 <= shift <= 31
    hi = (n * np.uint64(magic)) >> np.uint64(32)  # n < 2**31, magic < 2**32: the product fits in 64 bits
    s = hi + n
    assert (s < 2 ** 32).all()  # the 32-bit sum never wraps
    return s >> np.uint64(shift)


def _check32(d, n):
    n = np.asarray(n, dtype=np.uint64)
    np.testing.assert_array_equal(_quotients32(n, d), n // np.uint64(d), err_msg=f"divisor {d}")


def _numerators(d, rng, extra=64):
    top = 2 ** 31 - 1
    q = top // d
    picks = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, top, top - 1, q * d, q * d - 1, max(0, (q - 1) * d + d - 1)]
    picks += list(rng.integers(0, top + 1, extra))
    mult = rng.integers(0, q + 1, extra)  # exact multiples and their neighbours: where a wrong magic shows
    picks += list(mult * d) + list(np.maximum(mult * d - 1, 0)) + list(np.minimum(mult * d + d - 1, top))
    return [v for v in picks if 0 <= v <= top]


def test_magic_32_every_small_divisor_against_floor_division():
    # every divisor up to 2**12 with every numerator up to 2**14 and the edges of the int range
    rng = np.random.default_rng(1)
    n_small = np.arange(2 ** 14, dtype=np.uint64)
    for d in range(1, 2 ** 12 + 1):
        _check32(d, n_small)
        _check32(d, _numerators(d, rng, extra=8))


def test_magic_32_large_divisors_against_floor_division():
    rng = np.random.default_rng(2)
    ds = set()
    for k in range(1, 32):
        ds.update(v for v in (2 ** k - 1, 2 ** k, 2 ** k + 1, 3 * 2 ** (k - 1)) if 1 <= v <= 2 ** 31 - 1)
    ds.update(int(v) for v in rng.integers(2 ** 12, 2 ** 31, 2000))
    ds.update((641, 6700417, 65537, 2 ** 31 - 1, 2 ** 31 - 2, 1000003, 46341))
    for d in sorted(ds):
        _check32(d, _numerators(d, rng))


def test_magic_64_against_floor_division():
    rng = np.random.default_rng(3)
    top = 2 ** 63 - 1
    ds = [1, 2, 3, 5, 7, 10, 641, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32 + 1, 2 ** 62 + 1, top, top - 1]
    ds += [int(v) for v in rng.integers(1, 2 ** 62, 200)] + [int(v) for v in rng.integers(1, 2 ** 20, 200)]
    for d in ds:
        magic, shift = divisor_magic(d, 64)
        assert 0 <= magic < 2 ** 64 and 0 <= shift <= 63
        ns = [0, 1, d - 1, d, d + 1, top, top - 1, (top // d) * d, (top // d) * d - 1]
        ns += [int(v) for v in rng.integers(0, 2 ** 62, 40)] + [int(v) * d for v in rng.integers(0, top // d + 1, 5)]
        for n in ns:
            if not 0 <= n <= top:
                continue
            s = ((n * magic) >> 64) + n
            assert s < 2 ** 64
            assert s >> shift == n // d, (d, n)


def test_packed_records_carry_the_magic():
    rec = strided_layout((3, 7, 256), (1, 3, 21), "int")
    assert rec.dtype == LAYOUT_DTYPES["int"]
    assert [int(v) for v in rec["shape"][:3]] == [3, 7, 256] and int(rec["ndim"]) == 3
    for k, d in enumerate((3, 7, 256)):
        assert (int(rec["magic"][k]), int(rec["shift"][k])) == divisor_magic(d, 32)
    wide = strided_layout((5, 2 ** 33), (2 ** 33, 1), "long long")
    assert (int(wide["magic"][1]), int(wide["shift"][1])) == divisor_magic(2 ** 33, 64)
    dv = divisor(12, "int")
    assert dv.dtype == DIVISOR_DTYPES["int"] and int(dv["d"]) == 12
    assert (int(dv["magic"]), int(dv["shift"])) == divisor_magic(12, 32)
    assert divisor_magic(0, 32) == (0, 0)  # a table entry nobody divides by


# The strided kernels on layouts whose sizes exercise the magic: 1, primes, 2**k +- 1, sizes crossing
# the 256-thread block, transposed (dims merged out of order) and expanded (stride 0) operands.
SHAPES = [(7,), (3, 1, 5), (257, 3), (2, 255, 3), (5, 7, 11, 13), (1, 65, 1, 17), (31, 2, 9, 1, 4)]
DTYPES = [tl.float32, tl.float16, tl.bfloat16, tl.float64, tl.int64]


def _np(t):
    return t.cpu().float().numpy() if t.dtype == tl.bfloat16 else t.cpu().numpy()


@pytest.mark.parametrize("wide", [False, True], ids=["int", "long long"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_strided_copy_and_binary_on_awkward_shapes(device, shape, wide):
    import contextlib

    from tensorlab.backends.cuda.launch import wide_indexing
    rng = np.random.default_rng(len(shape) * 100 + shape[0])
    for dt in DTYPES:
        a_np = (rng.standard_normal(shape) * 8).astype(np.float32)
        ctx = wide_indexing() if wide and device == "cuda" else contextlib.nullcontext()
        with ctx:
            a = tl.tensor(a_np, device=device).to(dt)
            ref = _np(a)
            perm = tuple(reversed(range(len(shape))))
            t = a.permute(*perm)  # a transposed view: the strided copy path
            np.testing.assert_array_equal(_np(t.contiguous()), ref.transpose(perm))
            col = a.reshape(*shape, 1)[..., :1]
            e = col.expand(*shape, 3)  # stride 0 on the last dim
            np.testing.assert_array_equal(_np(e.contiguous()), np.broadcast_to(ref[..., None], shape + (3,)))
            s = t + t  # elementwise over a transposed operand into a fresh output
            np.testing.assert_array_equal(_np(s), _np((a + a)).transpose(perm))
            if len(shape) >= 2:
                b = a.transpose(0, -1)
                out = tl.zeros(b.shape, dtype=dt, device=device).transpose(0, -1)  # a non-dense out order
                out.copy_(a)
                np.testing.assert_array_equal(_np(out), ref)


@pytest.mark.parametrize("wide", [False, True], ids=["int", "long long"])
def test_triangle_cat_roll_eye_on_awkward_shapes(device, wide):
    import contextlib

    from tensorlab.backends.cuda.launch import wide_indexing
    rng = np.random.default_rng(5)
    ctx = wide_indexing() if wide and device == "cuda" else contextlib.nullcontext()
    with ctx:
        for dt in (tl.float32, tl.float16, tl.bfloat16, tl.float64):
            x_np = rng.standard_normal((3, 17, 29)).astype(np.float32)
            x = tl.tensor(x_np, device=device).to(dt)
            ref = _np(x)
            for k in (-3, 0, 2):
                np.testing.assert_array_equal(_np(x.tril(k)), np.tril(ref, k))
                np.testing.assert_array_equal(_np(x.transpose(1, 2).triu(k)), np.triu(ref.transpose(0, 2, 1), k))
            np.testing.assert_array_equal(_np(tl.cat([x, x[:, :5]], 1)), np.concatenate([ref, ref[:, :5]], 1))
            np.testing.assert_array_equal(_np(tl.roll(x, (5, -7), (1, 2))), np.roll(ref, (5, -7), (1, 2)))
            np.testing.assert_array_equal(_np(tl.eye(13, 257, dtype=dt, device=device)), np.eye(13, 257))


def test_randint_remainders_over_whole_words():
    """random.cu's RandInt: X % range by multiply-high for X over every 32-bit word (sum in 64 bits) and
    every 64-bit word pair (the halved sum), as Python's %."""
    rng = np.random.default_rng(7)
    for r in [1, 2, 3, 6, 7, 10, 255, 1000, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32 - 1] + \
            [int(v) for v in rng.integers(1, 2 ** 32, 300)]:
        magic, shift = divisor_magic(r, 32)
        x = np.concatenate([rng.integers(0, 2 ** 32, 2000, dtype=np.uint64),
                            np.array([0, 1, r - 1, r, 2 ** 32 - 1, 2 ** 32 - 2, (2 ** 32 - 1) // r * r], np.uint64)])
        x = x[x < 2 ** 32]
        q = (((x * np.uint64(magic)) >> np.uint64(32)) + x) >> np.uint64(shift)
        np.testing.assert_array_equal(x - q * np.uint64(r), x % np.uint64(r), err_msg=f"range {r}")
    top = 2 ** 64 - 1
    wide = [2 ** 32, 2 ** 32 + 1, 2 ** 63, 2 ** 63 + 1, top, top - 1, 3 * 2 ** 40]
    wide += [int(v) for v in rng.integers(2 ** 32, 2 ** 63, 200)]
    wide += [2 ** 63 + int(v) for v in rng.integers(0, 2 ** 62, 50)]
    for r in wide:
        magic, shift = divisor_magic(r, 64)
        assert 1 <= shift <= 64 and 0 <= magic < 2 ** 64
        xs = [0, 1, r - 1, r % (top + 1), top, top - 1, top // r * r]
        xs += [int(v) for v in rng.integers(0, 2 ** 63, 30)] + [int(v) + 2 ** 63 for v in rng.integers(0, 2 ** 63, 30)]
        for x in xs:
            x &= top
            hi = (x * magic) >> 64
            q = (((x - hi) >> 1) + hi) >> (shift - 1)
            assert x - q * r == x % r, (r, x)
