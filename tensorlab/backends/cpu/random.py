"""CPU random primitives: Philox4x32-10 (Random123) vectorized over NumPy uint32/uint64 arrays.

The word stream, the uint32 -> value mappings and the number of words each primitive reads are
specified in tensorlab/ops/random.py; the CUDA kernels implement the same definitions, so both
backends produce the same numbers from the same (seed, offset). Values are written in the output
tensor's logical (row-major) element order, whatever its strides."""
from __future__ import annotations

import numpy as np

from ... import _faults
from ..random_params import uniform_params
from .memory import array
from .random_math import box_muller, neg_log_uniform

__all__ = ("philox_uniform", "philox_normal", "philox_randint", "philox_bernoulli", "philox_exponential",
           "philox_randperm")

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_LO = np.uint64(_MASK32)
_S32 = np.uint64(32)


_ROUND_KEYS = tuple(((_W0 * r) & _MASK32, (_W1 * r) & _MASK32) for r in range(10))


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32 with 10 rounds on arrays of counter words and a scalar key; returns the four
    output word arrays (uint32). The words travel in uint64 so each 32x32-bit product is exact."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32).astype(np.uint64) for c in (c0, c1, c2, c3))
    k0, k1 = int(k0) & _MASK32, int(k1) & _MASK32
    for w0, w1 in _ROUND_KEYS:
        p0 = c0 * _M0
        p1 = c2 * _M1
        c0 = p1 >> _S32
        c0 ^= c1
        c0 ^= np.uint64((k0 + w0) & _MASK32)
        c2 = p0 >> _S32
        c2 ^= c3
        c2 ^= np.uint64((k1 + w1) & _MASK32)
        p1 &= _LO
        p0 &= _LO
        c1, c3 = p1, p0
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def _philox_block(ctr, k0, k1):
    """One block with Python integers: a few microseconds, where NumPy's per-call cost for the ~60
    array operations of the vectorized rounds is ~100 us. Used for short calls."""
    c0, c1, c2, c3 = ctr & _MASK32, ctr >> 32, 0, 0
    for w0, w1 in _ROUND_KEYS:
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ ((k0 + w0) & _MASK32), p1 & _MASK32,
                          (p0 >> 32) ^ c3 ^ ((k1 + w1) & _MASK32), p0 & _MASK32)
    return c0, c1, c2, c3


_SMALL_BLOCKS = 16  # below this many blocks the Python loop beats the vectorized rounds


def philox_words(seed, offset, nwords):
    """Words W[0..nwords) of the stream: block b uses counter (offset + b) as a 64-bit number in
    counter words 0 (low) and 1 (high), counter words 2 and 3 zero, key = seed (low, high);
    W[4b + j] is output word j of block b."""
    nblocks = -(-nwords // 4)
    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32
    offset &= 0xFFFFFFFFFFFFFFFF
    if nblocks <= _SMALL_BLOCKS:
        words = []
        for b in range(nblocks):
            words.extend(_philox_block((offset + b) & 0xFFFFFFFFFFFFFFFF, k0, k1))
        return np.array(words[:nwords], dtype=np.uint32)
    blocks = np.arange(nblocks, dtype=np.uint64) + np.uint64(offset)  # wraps mod 2^64
    zero = np.zeros(nblocks, dtype=np.uint32)
    out = philox4x32_10((blocks & _LO).astype(np.uint32), (blocks >> _S32).astype(np.uint32), zero, zero, k0, k1)
    return np.stack(out, axis=1).reshape(-1)[:nwords]


def _u64(words):
    """Pairs of words as uint64: word 2i is the low half, word 2i+1 the high half."""
    w = words.astype(np.uint64)
    return w[0::2] | (w[1::2] << _S32)


def _uniforms(seed, offset, n, double):
    """n uniforms in [0, 1) as float64: 24 bits from one word each, or 53 bits from two words."""
    if double:
        return (_u64(philox_words(seed, offset, 2 * n)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (philox_words(seed, offset, n) >> np.uint32(8)).astype(np.float64) * 2.0 ** -24


def _is_double(out):
    return out.dtype.name == "float64"


def _store(out, values):
    """Write float32/float64/int values (flat, logical order) into out. 16-bit floats round through
    float32, as the CUDA kernels do (__float2half_rn(float(x)))."""
    if out.dtype.itemsize == 2 and out.dtype.is_floating_point:
        values = values.astype(np.float32)
    np.copyto(array(out), values.reshape(out.shape), casting="unsafe")


def _rounded32(out, values):
    """float32 values as they read back from out's (float32 or 16-bit) dtype, as float32."""
    if out.dtype.name == "float32":
        return values
    return values.astype(out.dtype.np).astype(np.float32)


def philox_uniform(out, seed, offset, low, high):
    """out[i] = U_i * (high - low) + low, rounded to out's dtype; a value rounded up to `high` becomes `low`.
    float64: 53-bit U in float64; the other dtypes: 24-bit U in float32 (random_params.uniform_params)."""
    _faults.hit("launch")
    if _is_double(out):
        u = _uniforms(seed, offset, out.numel(), True)
        if low == 0 and high == 1:
            v = u  # U_i is exact and below 1
        else:
            v = u * (float(high) - float(low)) + float(low)
            v[v >= high] = float(low)
        _store(out, v)
        return
    lo, rng, hb = uniform_params(float(low), float(high), np.float32)
    u = (philox_words(seed, offset, out.numel()) >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)
    with np.errstate(over="ignore"):
        v = _rounded32(out, u * rng + lo)
        v[v >= hb] = _rounded32(out, np.array([lo], np.float32))[0]
    _store(out, v)


def philox_normal(out, seed, offset, mean, std):
    """Box-Muller on pairs of uniforms: r = sqrt(-2 log(1 - U_2k)), t = 2 pi U_2k+1;
    element 2k gets mean + std * r cos t, element 2k+1 mean + std * r sin t: in float64 (libm) for
    float64, else in float32 with random_math.box_muller (the CUDA kernel's operations, bit for bit)."""
    _faults.hit("launch")
    n = out.numel()
    pairs = -(-n // 2)
    if _is_double(out):
        u = _uniforms(seed, offset, 2 * pairs, True)
        r = np.sqrt(-2.0 * np.log(1.0 - u[0::2]))
        t = (2.0 * np.pi) * u[1::2]
        z = np.stack((r * np.cos(t), r * np.sin(t)), axis=1).reshape(-1)[:n]
        _store(out, z * float(std) + float(mean))
        return
    w = philox_words(seed, offset, 2 * pairs)
    z = np.stack(box_muller(w[0::2], w[1::2]), axis=1).reshape(-1)[:n]
    with np.errstate(invalid="ignore", over="ignore"):  # a huge mean/std may overflow a 16-bit dtype
        _store(out, z * np.float32(std) + np.float32(mean))


def philox_randint(out, seed, offset, low, high):
    """out[i] = low + X_i % (high - low), X_i = W[i] when the range is below 2^32, else the 64-bit
    word pair (W[2i], W[2i+1]); arithmetic modulo 2^64 (a range of 2^64 takes X_i whole)."""
    _faults.hit("launch")
    n = out.numel()
    rng = high - low
    if rng < 2 ** 32:
        x = philox_words(seed, offset, n).astype(np.uint64) % np.uint64(rng)
    else:
        x = _u64(philox_words(seed, offset, 2 * n))
        if rng < 2 ** 64:
            x = x % np.uint64(rng)
    v = (x + np.uint64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
    _store(out, v)


def philox_bernoulli(out, seed, offset, p):
    """out[i] = 1 if U_i < p_i else 0 with 53-bit uniforms; p is a number or a tensor of out's shape.
    A probability tensor holding a value outside [0, 1] (or NaN) raises before anything is written."""
    _faults.hit("launch")
    n = out.numel()
    prob = array(p).reshape(-1).astype(np.float64) if hasattr(p, "_meta") else float(p)
    if not np.all((prob >= 0) & (prob <= 1)):
        raise RuntimeError("bernoulli_: Expected p_in >= 0 && p_in <= 1 to be true, but got false: every "
                           "probability must be in [0, 1]")
    _store(out, _uniforms(seed, offset, n, True) < prob)


def philox_exponential(out, seed, offset, lambd):
    """out[i] = -log(U_i + half a cell) / lambd: float64 with 53-bit U_i + 2^-54 (libm's log); the other
    dtypes in float32 with 23-bit U_i + 2^-24 (random_math.neg_log_uniform, exact in float32). The
    midpoint keeps the logarithm's argument in (0, 1), so every value is positive and finite."""
    _faults.hit("launch")
    n = out.numel()
    if _is_double(out):
        v = _uniforms(seed, offset, n, True) + 2.0 ** -54
        _store(out, -np.log(v) / float(lambd))
        return
    with np.errstate(over="ignore"):  # a tiny lambda may overflow a 16-bit dtype
        _store(out, neg_log_uniform(philox_words(seed, offset, n)) / np.float32(lambd))


def philox_randperm(out, seed, offset):
    """A stable sort of the 64-bit keys (W[2i], W[2i+1]): out[j] is the index with the j-th smallest key."""
    _faults.hit("launch")
    n = out.numel()
    keys = _u64(philox_words(seed, offset, 2 * n))
    _store(out, np.argsort(keys, kind="stable"))
