"""The CUDA random kernels (kernels/random.cu) against the CPU backend: uniform, randint, bernoulli
and randperm bit-identical for every dtype, normal and exponential bit-identical for float32/
float16/bfloat16 (the float32 math of tensorlab/random_math.cuh, which backends/cpu/random_math.py
reproduces) and within the rounding of libm's log/sin/cos for float64, each through the contiguous
and the strided (logical-order) store and both index types; Random123's known answers computed by the device's Philox rounds; the bernoulli range check
before any write; failed launches that leave the output and the generator untouched."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import _faults, backends, dtypes
from tensorlab.kernels_path import kernel_dir
from test_random import KATS  # Random123's known-answer vectors, shared with the CPU tests

pytestmark = pytest.mark.cuda

ALL = list(dtypes.ALL)
FLOATING = list(dtypes.FLOATING)
_COMPILE_ONLY = {"test_kat_kernel_is_plain_cuda_for_nvrtc"}  # needs NVRTC, not a device
KAT_KERNEL = Path(__file__).parent / "kernels" / "philox_kat.cu"


@pytest.fixture(autouse=True)
def _needs_cuda(request):
    if request.function.__name__ in _COMPILE_ONLY:
        return
    if not tl.cuda.is_available():
        from tensorlab.backends.cuda.emulation import enabled
        if not enabled():
            pytest.skip("needs a GPU or the CUDA emulation (TENSORLAB_CUDA_EMULATION=1)")


@pytest.fixture(params=["int", "long long"])
def index(request):
    """The "long long" parameter forces the kernels' 64-bit index instantiations."""
    if request.param == "long long":
        from tensorlab.backends.cuda import launch
        with launch.wide_indexing():
            yield request.param
        return
    yield request.param


# contiguous; transposed (dense, not row-major); with gaps between rows and elements
LAYOUTS = {"contiguous": ((3, 37), None), "transposed": ((5, 9), (1, 5)), "gaps": ((4, 7), (20, 2))}


def _target(device, dtype, layout):
    shape, stride = LAYOUTS[layout]
    if stride is None:
        return tl.empty(shape, dtype=dtype, device=device)
    return tl.empty_strided(shape, stride, dtype=dtype, device=device)


def _gen(device, seed=1234, offset=0):
    return tl.Generator(device=device).manual_seed(seed).set_offset(offset)


def _on_both(make, seed=1234, offset=5):
    """make(device, generator) on the CPU and on CUDA; both results as NumPy, and the offsets after."""
    out = []
    for device in ("cpu", "cuda"):
        g = _gen(device, seed, offset)
        t = make(device, g)
        out.append((t.cpu().numpy(), g.get_offset()))
    (a, oa), (b, ob) = out
    assert oa == ob
    return a, b


def assert_bits(a, b):
    """Equal bit for bit (NaN payloads, -0.0 and 16-bit floats included)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), (a, b)


def assert_close(a, b, dtype):
    """float32/float16/bfloat16: bit-identical. float64: within the rounding of libm's log/sin/cos."""
    if dtype.name != "float64":
        assert_bits(a, b)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(b64, a64, rtol=1e-13, atol=1e-13)
    # The emulation computes log/sin/cos with the host's libm, as the CPU backend does: almost always
    # identical after rounding. A GPU's float64 log/sincos (libdevice) are within 1-2 ulp but not
    # correctly rounded: on an H200, 4-14% of float64 normal() samples differed in the last bit.
    if backends.cuda_emulated():
        assert np.mean(a64 == b64) > 0.99


# -- bit-identical samplers -----------------------------------------------------------------------------
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_uniform_is_bit_identical(dtype, layout, index):
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).uniform_(-3, 5, generator=g))
    assert_bits(a, b)
    a, b = _on_both(lambda d, g: tl.rand(*LAYOUTS[layout][0], dtype=dtype, device=d, generator=g))
    assert_bits(a, b)


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_uniform_rounded_up_to_high_becomes_low_on_both(dtype):
    """A 24-bit uniform close to 1 rounds to 1.0 in a 16-bit dtype; both backends map it to low."""
    a, b = _on_both(lambda d, g: tl.empty(40000, dtype=dtype, device=d).uniform_(0, 1, generator=g))
    assert_bits(a, b)
    assert a.astype(np.float64).max() < 1


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_randint_is_bit_identical(dtype, layout, index):
    low, high = (0, 2) if dtype is tl.bool else (-5, 100) if dtype is not tl.uint8 else (3, 250)
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).random_(low, high, generator=g))
    assert_bits(a, b)
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).random_(generator=g))  # the dtype's default range
    assert_bits(a, b)


WIDE = [(tl.int32, -2 ** 31, 2 ** 31), (tl.int64, -2 ** 63, 2 ** 63), (tl.int64, 7, 7 + 3 * 2 ** 40),
        (tl.float64, 0, 2 ** 40), (tl.float32, -2 ** 40, 2 ** 40), (tl.bfloat16, -2 ** 40, 2 ** 40)]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype, low, high", WIDE, ids=lambda v: str(v))
def test_randint_over_ranges_of_2_32_and_more_reads_word_pairs(dtype, low, high, layout, index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # floats beyond their exact integers warn (as in torch)
        a, b = _on_both(lambda d, g: _target(d, dtype, layout).random_(low, high, generator=g))
    assert_bits(a, b)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_bernoulli_is_bit_identical(dtype, layout, index):
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).bernoulli_(0.37, generator=g))
    assert_bits(a, b)
    assert 0 < a.astype(np.float64).mean() < 1


@pytest.mark.parametrize("pdtype", FLOATING, ids=str)
def test_bernoulli_with_probability_tensors(pdtype, index):
    probs = np.linspace(0, 1, 9)

    def run(d, g):
        p = tl.tensor(probs, dtype=pdtype, device=d)  # broadcast over rows: stride 0
        return _target(d, tl.float32, "transposed").bernoulli_(p, generator=g)

    a, b = _on_both(run)
    assert_bits(a, b)
    assert (a[:, 0] == 0).all() and (a[:, -1] == 1).all()
    x, y = _on_both(lambda d, g: tl.bernoulli(tl.full((6, 50), 0.25, dtype=pdtype, device=d), generator=g))
    assert_bits(x, y)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_bernoulli_checks_probabilities_before_writing(bad):
    x = tl.full((2, 3), 7.0, device="cuda")
    g = _gen("cuda")
    p = tl.tensor([0.5, bad, 0.2], device="cuda")
    with tl.cuda.sync_trace() as trace:
        with pytest.raises(RuntimeError, match=r"p_in >= 0 && p_in <= 1"):
            x.bernoulli_(p, generator=g)
    assert [r.reason for r in trace] == ["bernoulli"]  # the range check is a named host sync
    assert x.tolist() == [[7.0] * 3] * 2 and g.get_offset() == 0


@pytest.mark.parametrize("dtype", [d for d in ALL if d is not tl.bool], ids=str)
def test_randperm_is_bit_identical(dtype, index):
    n = {"int8": 120, "uint8": 250, "bfloat16": 250}.get(dtype.name, 1500)  # 1500: tile sorts and merges
    a, b = _on_both(lambda d, g: tl.randperm(n, dtype=dtype, device=d, generator=g))
    assert_bits(a, b)
    assert sorted(a.astype(np.int64).tolist()) == list(range(n))
    strided = lambda d, g: tl.randperm(n, dtype=dtype, generator=g,  # noqa: E731
                                       out=tl.empty_strided((n,), (3,), dtype=dtype, device=d))
    x, y = _on_both(strided)
    assert_bits(x, y)
    assert_bits(x, a)


@pytest.mark.parametrize("n", [1, 2, 3, 511, 512, 513, 4097])
def test_randperm_sizes_around_the_tile(n):
    a, b = _on_both(lambda d, g: tl.randperm(n, device=d, generator=g), seed=n)
    assert_bits(a, b)


# -- samplers with log/sin/cos (float32 math bit-identical, float64 within libm's rounding) -------------
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_normal_matches_within_rounding(dtype, layout, index):
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).normal_(2.0, 3.0, generator=g))
    assert_close(a, b, dtype)
    a, b = _on_both(lambda d, g: tl.randn(7, dtype=dtype, device=d, generator=g))  # an odd count
    assert_close(a, b, dtype)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_exponential_matches_within_rounding(dtype, layout, index):
    a, b = _on_both(lambda d, g: _target(d, dtype, layout).exponential_(0.5, generator=g))
    assert_close(a, b, dtype)
    assert (a > 0).all() and np.isfinite(a.astype(np.float64)).all()


# -- the Philox rounds on the device ------------------------------------------------------------------
def test_first_known_answer_through_the_full_64_bit_randint():
    """seed 0, offset 0 reads block 0 = philox(counter 0, key 0); random_ over the whole int64 range
    returns its word pairs (minus 2^63)."""
    x = tl.empty(2, dtype=tl.int64, device="cuda").random_(-2 ** 63, None, generator=_gen("cuda", 0))
    words = []
    for v in x.tolist():
        u = (v + 2 ** 63) % 2 ** 64
        words += [u & 0xFFFFFFFF, u >> 32]
    assert tuple(words) == KATS[0][2]


def _kat_module():
    from tensorlab.backends.cuda.active import driver
    return driver, driver.load_module(KAT_KERNEL, ("philox_kat",), ("-std=c++17", f"-I{kernel_dir()}"), 0)


def test_philox_rounds_reproduce_random123_known_answers():
    from tensorlab.backends.cuda.driver import Pointer
    driver, mod = _kat_module()
    stream = driver.current_stream(0)
    rows = np.array([list(c) + list(k) for c, k, _ in KATS], dtype=np.uint32)
    inp = driver.malloc(rows.nbytes, 0, stream)
    out = driver.malloc(4 * 4 * len(KATS), 0, stream)
    driver.memcpy_htod(Pointer(inp), rows, rows.nbytes, stream, False)
    driver.launch(mod.get_function("philox_kat"), (1,), (32,), (Pointer(inp), Pointer(out), np.int32(len(KATS))), 0,
                  stream)
    got = np.empty((len(KATS), 4), np.uint32)
    driver.memcpy_dtoh(got, Pointer(out), got.nbytes, stream, False)
    driver.free(inp, stream)
    driver.free(out, stream)
    assert [tuple(r) for r in got.tolist()] == [w for _, _, w in KATS]


# -- failures change nothing -------------------------------------------------------------------------
class _FailAt:
    """Fails the k-th launch (kind "launch"), counting from 1."""

    def __init__(self, k):
        self.k, self.seen = k, 0

    def hit(self, kind):
        if kind == "launch":
            self.seen += 1
            if self.seen == self.k:
                raise RuntimeError("injected launch failure")


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_randperm_failing_at_any_launch_changes_nothing(k):
    """randperm(1500) launches the keys (1), the tile sort (2), the merges (3: global, 4: in tiles,
    then 5 to 7) and the store (8): a failure at any of them leaves out= and the generator as they were."""
    out = tl.full((1500,), -1, dtype=tl.int64, device="cuda")
    g = _gen("cuda")
    v = out._version
    prev = _faults.install(_FailAt(k))
    try:
        with pytest.raises(RuntimeError, match="injected"):
            tl.randperm(1500, generator=g, out=out)
    finally:
        _faults.install(prev)
    assert out._version == v and g.get_offset() == 0 and set(out.tolist()) == {-1}
    tl.randperm(1500, generator=g, out=out)
    assert sorted(out.tolist()) == list(range(1500))
