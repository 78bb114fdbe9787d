"""Random numbers: Philox4x32-10 known answers, the documented counter layout (which the CUDA
kernels reproduce), reproducibility, generator state, distributions and errors."""
import pickle
import threading

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import _faults
from tensorlab.backends.cpu.random import philox4x32_10

# Random123's kat_vectors for philox4x32_10: counter, key, expected output
KATS = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def _ref_block(counter, key):
    """One Philox4x32-10 block with Python integers: an independent reference for the vectorized one."""
    c, k = list(counter), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
    return c


def _words(seed, offset, nblocks):
    """The documented word stream: block b has counter (lo32(offset+b), hi32(offset+b), 0, 0), key = seed."""
    out = []
    for b in range(nblocks):
        ctr = (offset + b) % 2 ** 64
        out += _ref_block((ctr & 0xFFFFFFFF, ctr >> 32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))
    return np.array(out, dtype=np.uint64)


def _gen(device, seed):
    return tl.Generator(device=device).manual_seed(seed)


# -- Philox itself ------------------------------------------------------------------------------
@pytest.mark.parametrize("counter,key,want", KATS)
def test_philox_known_answers(counter, key, want):
    got = philox4x32_10(*[np.array([c], dtype=np.uint32) for c in counter], *key)
    assert [int(w[0]) for w in got] == list(want)
    assert _ref_block(counter, key) == list(want)


def test_philox_vectorized_matches_scalar_reference():
    rng = np.random.default_rng(1)
    ctr = rng.integers(0, 2 ** 32, size=(4, 50), dtype=np.uint64).astype(np.uint32)
    key = (0x12345678, 0x9ABCDEF0)
    got = np.stack(philox4x32_10(*ctr, *key), axis=1)
    for i in range(50):
        assert got[i].tolist() == _ref_block([int(c) for c in ctr[:, i]], key)


# -- the counter layout (what the CUDA kernels must reproduce) ---------------------------------------
def test_seed_zero_offset_zero_reads_the_first_known_answer(device):
    x = tl.rand(4, generator=_gen(device, 0), device=device)
    assert x.tolist() == [(w >> 8) * 2.0 ** -24 for w in KATS[0][2]]


def test_float32_uniforms_use_top_24_bits_and_calls_take_whole_blocks(device):
    seed = 0x0123456789ABCDEF
    g = _gen(device, seed)
    a = tl.rand(5, generator=g, device=device)
    assert g.get_offset() == 2
    b = tl.rand(2, 3, generator=g, device=device)
    assert g.get_offset() == 4
    w = _words(seed, 0, 4)
    np.testing.assert_array_equal(a.cpu().numpy(), (w[:5] >> 8).astype(np.float64) * 2.0 ** -24)
    np.testing.assert_array_equal(b.cpu().numpy().reshape(-1), (w[8:14] >> 8).astype(np.float64) * 2.0 ** -24)


def test_float64_uniforms_use_53_bits_of_a_word_pair(device):
    g = _gen(device, 99)
    x = tl.rand(3, dtype=tl.float64, generator=g, device=device)
    assert g.get_offset() == 2
    w = _words(99, 0, 2)
    want = [float(((int(w[2 * i + 1]) << 32 | int(w[2 * i])) >> 11) * 2.0 ** -53) for i in range(3)]
    assert x.tolist() == want


def test_counter_carries_into_the_high_word_and_wraps(device):
    g = _gen(device, 7).set_offset(2 ** 32 - 1)
    x = tl.rand(8, generator=g, device=device)
    w = _words(7, 2 ** 32 - 1, 2)
    np.testing.assert_array_equal(x.cpu().numpy(), (w >> 8).astype(np.float64) * 2.0 ** -24)
    g.set_offset(2 ** 64 - 1)
    y = tl.rand(8, generator=g, device=device)
    assert g.get_offset() == 1
    np.testing.assert_array_equal(y.cpu().numpy(), (_words(7, 2 ** 64 - 1, 2) >> 8).astype(np.float64) * 2.0 ** -24)


def test_randint_small_and_large_ranges(device):
    g = _gen(device, 5)
    x = tl.randint(-3, 7, (6,), generator=g, device=device)
    np.testing.assert_array_equal(x.cpu().numpy(), (_words(5, 0, 2)[:6] % 10).astype(np.int64) - 3)
    assert g.get_offset() == 2
    big = 2 ** 40 + 3
    y = tl.randint(1, 1 + big, (3,), generator=g, device=device)
    w = _words(5, 2, 2)
    want = [1 + ((int(w[2 * i + 1]) << 32 | int(w[2 * i])) % big) for i in range(3)]
    assert y.tolist() == want


def test_random_full_int64_range_is_the_raw_64_bit_word(device):
    x = tl.empty(2, dtype=tl.int64, device=device).random_(-2 ** 63, None, generator=_gen(device, 3))
    w = _words(3, 0, 1)
    want = [((int(w[2 * i + 1]) << 32 | int(w[2 * i])) - 2 ** 63) % 2 ** 64 for i in range(2)]
    assert [v % 2 ** 64 for v in x.tolist()] == want


def test_randn_is_box_muller_on_uniform_pairs(device):
    x = tl.randn(5, dtype=tl.float64, generator=_gen(device, 11), device=device)
    w = _words(11, 0, 3)
    u = [((int(w[2 * i + 1]) << 32 | int(w[2 * i])) >> 11) * 2.0 ** -53 for i in range(6)]
    want = []
    for k in range(3):
        r = np.sqrt(-2 * np.log(1 - u[2 * k]))
        want += [r * np.cos(2 * np.pi * u[2 * k + 1]), r * np.sin(2 * np.pi * u[2 * k + 1])]
    np.testing.assert_allclose(x.cpu().numpy(), want[:5], rtol=1e-15)


def test_randperm_sorts_64_bit_keys(device):
    x = tl.randperm(6, generator=_gen(device, 2), device=device)
    w = _words(2, 0, 3)
    keys = [int(w[2 * i + 1]) << 32 | int(w[2 * i]) for i in range(6)]
    assert x.tolist() == sorted(range(6), key=lambda i: keys[i])


def test_values_follow_logical_order_not_memory_order(device):
    a = tl.rand(3, 4, generator=_gen(device, 1), device=device)
    b = tl.empty_strided((3, 4), (1, 3), device=device).uniform_(generator=_gen(device, 1))
    assert b.stride() == (1, 3)
    assert a.tolist() == b.tolist()


# -- seeding and state ------------------------------------------------------------------------------
def test_manual_seed_reproduces_and_calls_advance(device):
    tl.manual_seed(123)
    a, b = tl.rand(10, device=device), tl.randn(10, device=device)
    tl.manual_seed(123)
    assert tl.rand(10, device=device).tolist() == a.tolist()
    assert tl.randn(10, device=device).tolist() == b.tolist()
    assert tl.rand(10, device=device).tolist() != a.tolist()
    tl.manual_seed(124)
    assert tl.rand(10, device=device).tolist() != a.tolist()


def test_generators_are_independent_of_the_default(device):
    g = _gen(device, 42)
    a = tl.rand(4, generator=g, device=device)
    tl.rand(100, device=device)
    g2 = _gen(device, 42)
    assert tl.rand(4, generator=g2, device=device).tolist() == a.tolist()


def test_generator_api():
    g = tl.Generator()
    assert g.device == "cpu"
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(-1) is g and g.initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s and 0 <= s < 2 ** 64
    assert isinstance(tl.default_generator, tl.Generator)
    assert tl.manual_seed(5) is tl.default_generator and tl.initial_seed() == 5
    s = tl.seed()
    assert tl.initial_seed() == s


def test_state_save_and_restore(device):
    g = _gen(device, 77)
    tl.rand(9, generator=g, device=device)
    state = g.get_state()
    assert state.dtype is tl.uint8 and state.shape == (16,) and state.device == "cpu"
    assert state.tolist() == list((77).to_bytes(8, "little") + (3).to_bytes(8, "little"))
    a = tl.randn(7, generator=g, device=device)
    assert g.set_state(state) is g
    assert tl.randn(7, generator=g, device=device).tolist() == a.tolist()
    c = g.clone_state()
    assert tl.rand(3, generator=c, device=device).tolist() == tl.rand(3, generator=g, device=device).tolist()
    p = pickle.loads(pickle.dumps(g))
    assert p.device == g.device and tl.rand(3, generator=p, device=device).tolist() == \
        tl.rand(3, generator=g, device=device).tolist()


def test_global_rng_state_roundtrip():
    tl.manual_seed(3)
    tl.rand(2)
    st = tl.get_rng_state()
    a = tl.rand(5)
    tl.set_rng_state(st)
    assert tl.rand(5).tolist() == a.tolist()


def test_state_and_seed_errors():
    g = tl.Generator()
    with pytest.raises(TypeError, match="RNG state must be"):
        g.set_state(tl.zeros(16))
    with pytest.raises(TypeError, match="expected a tensorlab.uint8 tensor, but got list"):
        g.set_state([1])
    with pytest.raises(RuntimeError, match="state size to be 3"):
        g.set_state(tl.zeros(3, dtype=tl.uint8))
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)
    with pytest.raises(TypeError, match="argument 'generator' must be tensorlab.Generator, not int"):
        tl.rand(3, generator=1)


def test_failed_launch_changes_nothing(device):
    class Fail:
        def hit(self, kind):
            if kind == "launch":
                raise RuntimeError("injected launch failure")

    g = _gen(device, 8)
    x = tl.zeros(5, device=device)
    v = x._version
    prev = _faults.install(Fail())
    try:
        with pytest.raises(RuntimeError, match="injected"):
            x.normal_(generator=g)
    finally:
        _faults.install(prev)
    assert g.get_offset() == 0 and x._version == v and x.tolist() == [0.0] * 5
    x.normal_(generator=g)
    assert x._version == v + 1 and g.get_offset() == 2


def test_threads_never_share_counter_blocks():
    g = tl.Generator().manual_seed(1)
    outs = []

    def work():
        for _ in range(20):
            outs.append(tuple(tl.rand(4, generator=g).tolist()))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert g.get_offset() == 80 and len(set(outs)) == 80


# -- distributions ----------------------------------------------------------------------------------
N = 100_000


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_uniform_and_normal_moments(device, dtype):
    g = _gen(device, 2024)
    u = tl.rand(N, dtype=dtype, generator=g, device=device).cpu().numpy().astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = tl.randn(N, dtype=dtype, generator=g, device=device).cpu().numpy().astype(np.float64)
    assert abs(z.mean()) < 0.015 and abs(z.var() - 1) < 0.02
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3) < 0.1


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_half_types_stay_in_range(device, dtype):
    u = tl.rand(N, dtype=dtype, generator=_gen(device, 1), device=device)
    assert u.dtype is dtype
    a = u.cpu().numpy().astype(np.float64)
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.01
    z = tl.randn(1000, dtype=dtype, generator=_gen(device, 1), device=device).cpu().numpy().astype(np.float64)
    assert abs(z.mean()) < 0.15 and 0.8 < z.std() < 1.2


def test_uniform_normal_exponential_parameters(device):
    g = _gen(device, 9)
    x = tl.empty(N, device=device)
    a = x.uniform_(-2, 3, generator=g).cpu().numpy()
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.03
    b = x.normal_(10, 0.5, generator=g).cpu().numpy()
    assert abs(b.mean() - 10) < 0.01 and abs(b.std() - 0.5) < 0.01
    c = x.exponential_(4.0, generator=g).cpu().numpy()
    assert c.min() > 0 and np.isfinite(c).all() and abs(c.mean() - 0.25) < 0.005
    d = x.uniform_(2, 2, generator=g).cpu().numpy()
    assert (d == 2).all()


def test_randint_buckets_chi_square(device):
    k = 10
    x = tl.randint(5, 5 + k, (N,), generator=_gen(device, 31), device=device).cpu().numpy()
    counts = np.bincount(x - 5, minlength=k)
    assert counts.sum() == N and len(counts) == k
    chi2 = ((counts - N / k) ** 2 / (N / k)).sum()
    assert chi2 < 27.9  # p = 0.001 for 9 degrees of freedom
    y = tl.randint(0, 2 ** 40, (N,), generator=_gen(device, 32), device=device).cpu().numpy()
    top = np.bincount(y >> 36, minlength=16)
    assert ((top - N / 16) ** 2 / (N / 16)).sum() < 37.7  # p = 0.001, 15 dof


def test_random_default_ranges(device):
    g = _gen(device, 4)
    for dtype, hi in [(tl.bool, 1), (tl.uint8, 255), (tl.int8, 127), (tl.float16, 2 ** 11),
                      (tl.bfloat16, 2 ** 8), (tl.float32, 2 ** 24)]:
        a = tl.empty(20000, dtype=dtype, device=device).random_(generator=g).cpu().numpy().astype(np.float64)
        assert a.min() >= 0 and a.max() <= hi and (a == np.round(a)).all()
        assert abs(a.mean() - hi / 2) < 0.05 * hi + 0.02, dtype
    a = tl.empty(1000, dtype=tl.int64, device=device).random_(generator=g).cpu().numpy()
    assert a.min() >= 0 and a.max() > 2 ** 60
    b = tl.empty(1000, device=device).random_(3, generator=g).cpu().numpy()
    assert set(b.tolist()) == {0.0, 1.0, 2.0}
    c = tl.empty(1000, dtype=tl.int32, device=device).random_(-4, -1, generator=g).cpu().numpy()
    assert set(c.tolist()) == {-4, -3, -2}


def test_randperm_is_a_permutation(device):
    for n in (0, 1, 7, 1000):
        p = tl.randperm(n, device=device, generator=_gen(device, n))
        assert p.dtype is tl.int64 and sorted(p.tolist()) == list(range(n))
    f = tl.randperm(50, dtype=tl.float32, device=device)
    assert f.dtype is tl.float32 and sorted(f.tolist()) == list(range(50))
    assert tl.randperm(50, generator=_gen(device, 1), device=device).tolist() != list(range(50))


def test_bernoulli(device):
    g = _gen(device, 6)
    x = tl.empty(N, device=device).bernoulli_(0.3, generator=g).cpu().numpy()
    assert set(np.unique(x).tolist()) == {0.0, 1.0} and abs(x.mean() - 0.3) < 0.01
    p = tl.tensor([0.0, 1.0, 0.5], device=device)
    probs = tl.tensor(np.tile([0.0, 1.0, 0.5], 20000), device=device)
    y = tl.bernoulli(probs, generator=g).cpu().numpy().reshape(-1, 3)
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all() and abs(y[:, 2].mean() - 0.5) < 0.02
    z = tl.empty(4, 3, dtype=tl.int32, device=device).bernoulli_(p, generator=g)  # p broadcast over rows
    assert z.dtype is tl.int32 and [r[:2] for r in z.tolist()] == [[0, 1]] * 4
    b = tl.empty(10, dtype=tl.bool, device=device).bernoulli_(1.0)
    assert b.tolist() == [True] * 10
    d = tl.bernoulli(tl.zeros(3, dtype=tl.float64, device=device), 1.0)
    assert d.dtype is tl.float64 and d.tolist() == [1.0] * 3
    as_method = probs.bernoulli(generator=_gen(device, 1))
    assert as_method.tolist() == tl.bernoulli(probs, generator=_gen(device, 1)).tolist()


@pytest.mark.skipif(not hasattr(tl.Tensor, "mul_"), reason="needs the elementwise ops (mul_, add_, <, any)")
def test_normal_with_tensor_arguments(device):
    g = _gen(device, 12)
    mean = tl.tensor([[0.0], [100.0]], device=device)
    x = tl.normal(mean, tl.full((3,), 0.001, device=device), generator=g)
    assert x.shape == (2, 3)
    np.testing.assert_allclose(x.cpu().numpy(), [[0.0] * 3, [100.0] * 3], atol=0.01)
    y = tl.normal(5.0, tl.zeros(4, device=device))
    assert y.tolist() == [5.0] * 4
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        tl.normal(tl.zeros(2, device=device), tl.tensor([1.0, -1.0], device=device))


# -- keywords ---------------------------------------------------------------------------------------
def test_factory_keywords(device):
    assert tl.rand(2, 3, device=device).shape == (2, 3)
    assert tl.rand((2, 3), device=device).shape == (2, 3)
    assert tl.randn([4], dtype=tl.float64, device=device).dtype is tl.float64
    assert tl.rand(size=(2,), device=device).shape == (2,)
    x = tl.rand(3, requires_grad=True, device=device)
    assert x.requires_grad and x.device.type == device
    assert tl.randint(10, (2,), device=device).dtype is tl.int64
    assert tl.randint(10, (2,), dtype=tl.int32, device=device).dtype is tl.int32
    assert tl.randint(low=2, high=3, size=(2,), device=device).tolist() == [2, 2]
    assert tl.randint(0, 3, (2,), dtype=tl.float16, device=device).dtype is tl.float16
    assert tl.normal(2.0, 0.0, (3,), device=device).tolist() == [2.0] * 3
    base = tl.zeros(2, 2, dtype=tl.float64, device=device)
    assert tl.rand_like(base).dtype is tl.float64 and tl.randn_like(base).shape == (2, 2)
    assert tl.randint_like(base, 10).dtype is tl.float64
    assert set(tl.randint_like(tl.zeros(100, dtype=tl.int8, device=device), 3, 5).tolist()) == {3, 4}
    assert tl.rand_like(base, dtype=tl.float16).dtype is tl.float16
    assert tl.rand_like(base, generator=_gen(device, 1)).tolist() == \
        tl.rand(2, 2, dtype=tl.float64, generator=_gen(device, 1), device=device).tolist()


def test_out_argument(device):
    out = tl.empty(5, dtype=tl.float64, device=device)
    r = tl.rand(5, out=out, generator=_gen(device, 1))
    assert r is out and out.tolist() == tl.rand(5, dtype=tl.float64, generator=_gen(device, 1), device=device).tolist()
    o2 = tl.empty(0, dtype=tl.int32, device=device)
    assert tl.randint(3, (4,), out=o2) is o2 and o2.shape == (4,) and o2.dtype is tl.int32
    o3 = tl.empty(3, dtype=tl.int64, device=device)
    assert sorted(tl.randperm(3, out=o3).tolist()) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="check_uniform_bounds"):
        tl.rand(3, out=tl.empty(3, dtype=tl.int64, device=device))


# -- errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda d: tl.rand(3, dtype=tl.int64, device=d), RuntimeError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda d: tl.randn(3, dtype=tl.bool, device=d), RuntimeError, "\"normal_kernel\" not implemented for 'Bool'"),
    (lambda d: tl.rand_like(tl.zeros(2, dtype=tl.int64, device=d)), RuntimeError, "not implemented for 'Long'"),
    (lambda d: tl.randint(5, 5, (3,), device=d), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda d: tl.randint(0, 300, (3,), dtype=tl.uint8, device=d), RuntimeError, "to - 1 is out of bounds for"),
    (lambda d: tl.randint(-1, 3, (3,), dtype=tl.uint8, device=d), RuntimeError, "from is out of bounds for"),
    (lambda d: tl.randint(0, 2 ** 40, (3,), dtype=tl.float16, device=d), RuntimeError, "to - 1 is out of bounds"),
    (lambda d: tl.randint(3.5, (3,), device=d), TypeError, "argument 'high' \\(position 1\\) must be int, not float"),
    (lambda d: tl.randint(3, 5, device=d), TypeError, "argument 'size' \\(position 2\\) must be tuple of ints"),
    (lambda d: tl.randint(3, (3,), requires_grad=True, device=d), RuntimeError, "floating point"),
    (lambda d: tl.rand(-1, device=d), RuntimeError, "negative dimension -1"),
    (lambda d: tl.randperm(-1, device=d), RuntimeError, "n must be non-negative"),
    (lambda d: tl.randperm(3, dtype=tl.bool, device=d), RuntimeError, "not implemented for 'Bool'"),
    (lambda d: tl.randperm(300, dtype=tl.uint8, device=d), RuntimeError, "too large"),
    (lambda d: tl.empty(3, device=d).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a \\[from, to\\) range, but found from=2 > to=1"),
    (lambda d: tl.empty(3, device=d).uniform_(float("nan"), 1), RuntimeError, "from is out of bounds"),
    (lambda d: tl.empty(3, device=d).uniform_(0, float("inf")), RuntimeError, "to is out of bounds"),
    (lambda d: tl.empty(3, dtype=tl.int64, device=d).uniform_(), RuntimeError, "check_uniform_bounds"),
    (lambda d: tl.empty(3, device=d).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda d: tl.empty(3, device=d).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda d: tl.empty(3, dtype=tl.int64, device=d).exponential_(), RuntimeError, "dtype must be a floating point"),
    (lambda d: tl.empty(3, device=d).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in \\[0, 1\\], but got p=1.5"),
    (lambda d: tl.empty(3, device=d).bernoulli_(tl.tensor([0.5, 2.0, 0.1], device=d)), RuntimeError, "p_in"),
    (lambda d: tl.bernoulli(tl.tensor([1, 0], device=d)), RuntimeError, "not implemented for 'Long'"),
    (lambda d: tl.empty(3, device=d).bernoulli_(tl.tensor([0.5, 0.5], device=d)), RuntimeError,
     "must match the existing size"),
    (lambda d: tl.empty(3, device=d).random_(5, 5), RuntimeError, "from=5 >= to=5"),
    (lambda d: tl.empty(3, dtype=tl.uint8, device=d).random_(0, 300), RuntimeError, "to - 1 is out of bounds"),
    (lambda d: tl.empty_strided((3,), (0,), device=d).uniform_(), RuntimeError, "more than one element"),
])
def test_errors(device, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(device)


def test_float_random_beyond_exact_integers_warns(device):
    with pytest.warns(UserWarning, match="precision limitations"):
        tl.empty(3, device=device).random_(2 ** 30)


def test_error_types_match_torch(torch):
    calls = [
        lambda m: m.rand(3, dtype=m.int64), lambda m: m.randint(5, 5, (3,)),
        lambda m: m.randint(0, 300, (3,), dtype=m.uint8), lambda m: m.randint(3.5, (3,)),
        lambda m: m.randint(3, 5), lambda m: m.randperm(-1), lambda m: m.empty(3).uniform_(2, 1),
        lambda m: m.empty(3).normal_(0, -1), lambda m: m.empty(3).exponential_(0),
        lambda m: m.empty(3).bernoulli_(1.5), lambda m: m.Generator().manual_seed(1.5),
        lambda m: m.Generator().manual_seed(2 ** 64), lambda m: m.Generator().set_state(m.zeros(3)),
    ]
    for call in calls:
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(Exception) as ours:
            call(tl)
        want = RuntimeError if isinstance(theirs.value, RuntimeError) else type(theirs.value)
        assert isinstance(ours.value, want), (ours.value, theirs.value)


def test_output_dtypes_match_torch(torch):
    for name in ("rand_like", "randn_like"):
        for dt in ("float16", "float64"):
            assert getattr(tl, name)(tl.zeros(2, dtype=getattr(tl, dt))).dtype.name == \
                str(getattr(torch, name)(torch.zeros(2, dtype=getattr(torch, dt))).dtype).split(".")[1]
    assert str(torch.randint_like(torch.zeros(2), 5).dtype) == "torch.float32"
    assert tl.randint_like(tl.zeros(2), 5).dtype is tl.float32
    assert str(torch.bernoulli(torch.zeros(2, dtype=torch.float16)).dtype) == "torch.float16"
    assert tl.bernoulli(tl.zeros(2, dtype=tl.float16)).dtype is tl.float16
