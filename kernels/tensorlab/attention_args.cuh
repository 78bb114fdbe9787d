// What both attention paths (kernels/attention.cu's scalar tiles, tensorlab/flash_attention.cuh's
// tensor-core tiles) read the same way: the accumulation type, the mask (causal, bool, additive)
// and the dropout keep decision from the Philox stream.
#pragma once
#include "tensorlab/philox.cuh"
#include "tensorlab/reduce.cuh"

namespace tl_attn {

// Accumulation type and the scalar path's head-dim limit per element type.
template <typename T> struct Acc {
  using A = float;
  static constexpr int kMaxE = 128;
};
template <> struct Acc<double> {
  using A = double;
  static constexpr int kMaxE = 64;
};
template <typename T> using AccT = typename Acc<T>::A;

template <typename A>
__device__ __forceinline__ A neg_inf() { return -tl::Bounds<A>::highest(); }

template <typename A>
__device__ __forceinline__ A amax(A a, A b) { return b > a ? b : a; }

struct MaskArgs {
  int mode;        // 0 none, 1 bool (keep True), 2 additive float
  int causal;      // keep key j <= query i (top-left aligned, as tril on (L, S))
  long long ms_l;  // mask strides of the query and key dims
  long long ms_s;
};

// Offset of the mask's (batch..., head) `bh` in elements.
__device__ __forceinline__ long long mask_base(long long bh, const tl::StridedLayout<long long>& ml) {
  return tl::offset_of(bh, ml);
}

// The masked, scaled score of query i and key j (both in range), given the raw dot product.
template <typename T, typename A>
__device__ __forceinline__ A masked(A dot, A scale, long long i, long long j, MaskArgs m, const bool* bmask,
                                    const T* fmask, long long mb) {
  A s = dot * scale;
  if (m.causal && j > i) return neg_inf<A>();
  if (m.mode == 1) {
    if (!bmask[mb + i * m.ms_l + j * m.ms_s]) return neg_inf<A>();
  } else if (m.mode == 2) {
    s += static_cast<A>(tl::widen(fmask[mb + i * m.ms_l + j * m.ms_s]));
  }
  return s;
}

// Dropout of the probabilities [BH, L, S] as the composite's `bernoulli_(1 - p)` draws them:
// element n keeps when its 53-bit uniform, the words 2 (n % 2), +1 of Philox block n / 2 at the
// generator's (seed, offset), is below 1 - p; compared as integers, (word pair >> 11) < threshold
// with threshold = ceil((1 - p) 2^53), so no float64 arithmetic runs. A kept value is scaled by
// 1 / (1 - p).
struct DropArgs {
  unsigned long long threshold;
  unsigned long long seed;
  unsigned long long offset;
  double inv_keep_d;  // 1 / (1 - p) for double kernels
  float inv_keep;     // the same, rounded to float
  int on;             // 0: no dropout (every other field unused)
};

// Not inlined: the kernels call it inside unrolled tile loops, where sixteen inlined copies of the
// Philox rounds would cost registers (and occupancy) even with dropout off.
__device__ __noinline__ bool drop_keeps(const DropArgs& d, long long n) {
  const tl::Philox4 w = tl::philox_block(d.seed, d.offset, static_cast<unsigned long long>(n) >> 1);
  const bool odd = n & 1;  // words 2, 3 (selected, not indexed: no local-memory array)
  return (tl::word_pair(odd ? w.w[2] : w.w[0], odd ? w.w[3] : w.w[1]) >> 11) < d.threshold;
}
__device__ __forceinline__ float inv_keep(const DropArgs& d, float) { return d.inv_keep; }
__device__ __forceinline__ double inv_keep(const DropArgs& d, double) { return d.inv_keep_d; }

// The factor element n of the probabilities is multiplied by: 1 without dropout, else 0 or 1 / (1 - p).
template <typename A>
__device__ __forceinline__ A drop_factor(const DropArgs& d, long long n) {
  if (!d.on) return A(1);
  return drop_keeps(d, n) ? inv_keep(d, A(0)) : A(0);
}

}  // namespace tl_attn
