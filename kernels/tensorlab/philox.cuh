// Philox4x32-10 (Salmon et al., SC11; Random123) and the word stream of tensorlab/ops/random.py:
// block b of a call at generator state (seed, offset) is philox4x32_10 of the counter
// (lo32(offset + b), hi32(offset + b), 0, 0) under the key (lo32(seed), hi32(seed)).
#pragma once

namespace tl {

struct Philox4 {
  unsigned int w[4];
};

__device__ __forceinline__ Philox4 philox4x32_10(unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3,
                                                 unsigned int k0, unsigned int k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;  // the Weyl sequence of round keys
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Block `b` of the stream; the counter wraps modulo 2^64 like the generator's offset.
__device__ __forceinline__ Philox4 philox_block(unsigned long long seed, unsigned long long offset,
                                                unsigned long long b) {
  const unsigned long long ctr = offset + b;
  return philox4x32_10(static_cast<unsigned int>(ctr), static_cast<unsigned int>(ctr >> 32), 0u, 0u,
                       static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// Uniforms in [0, 1), exact in double: 24 bits of one word, or 53 bits of a word pair (low word first).
__device__ __forceinline__ double uniform24(unsigned int w) { return static_cast<double>(w >> 8) * 0x1p-24; }

__device__ __forceinline__ unsigned long long word_pair(unsigned int lo, unsigned int hi) {
  return static_cast<unsigned long long>(lo) | (static_cast<unsigned long long>(hi) << 32);
}

__device__ __forceinline__ double uniform53(unsigned int lo, unsigned int hi) {
  return static_cast<double>(word_pair(lo, hi) >> 11) * 0x1p-53;
}

}  // namespace tl
