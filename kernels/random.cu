// Random numbers: the Philox4x32-10 word stream and the uint32 -> value mappings of
// tensorlab/ops/random.py, so every value equals the CPU backend's. Each thread computes whole
// Philox blocks and writes the elements they feed, in the output's logical (row-major) order:
// directly when it is contiguous, through its coalesced strides otherwise. Arithmetic that must match
// the CPU bit for bit is written with unfused, correctly rounded operations (__fmul_rn/__fadd_rn,
// __dmul_rn/__dadd_rn): NVRTC would otherwise contract a * b + c into an FMA.
// float16/bfloat16/float32 outputs compute in float32 only (Box-Muller and the logarithm from
// tensorlab/random_math.cuh, which the CPU reproduces exactly); float64 computes in float64 (libm's
// log/sin/cos, equal to the CPU's up to their last bit). The scalar parameters have the compute
// type (Param<T>), so a float kernel holds no FP64 instruction.
//
// Template parameters: T the output element type, Index int or long long, Contiguous the fast
// path (element i at out + i, stored as one vector when aligned), Words (randint) 1 or 2 words
// per element.
#include "tensorlab/cast.cuh"
#include "tensorlab/philox.cuh"
#include "tensorlab/random_math.cuh"

namespace tl_random {

typedef unsigned long long u64;

template <typename T>
constexpr bool kIsDouble = sizeof(T) == 8;  // used with floating T only

// The compute type of a floating output: double for double, float for the others.
template <typename T>
struct Param {
  typedef float type;
};
template <>
struct Param<double> {
  typedef double type;
};

// A compute-type value stored into T as the CPU backend stores it (round to nearest even).
template <typename T>
__device__ __forceinline__ T store_float(typename Param<T>::type v) {
  return tl::cast<T>(v);
}

template <typename T>
__device__ __forceinline__ typename Param<T>::type widened(T v) {
  return static_cast<typename Param<T>::type>(tl::widen(v));
}

// A uniform in [0, 1) from one word (24 bits, exact in float) in the compute type.
__device__ __forceinline__ float uniform24f(unsigned int w) {
  return __fmul_rn(static_cast<float>(w >> 8), 0x1p-24f);
}

// K elements of T as one aligned store.
template <typename T, int K>
struct alignas(sizeof(T) * K) Vec {
  T v[K];
};

// Grid-stride loop over the Philox blocks feeding n elements, K elements per block: block b
// writes elements b*K .. b*K+K-1 with the values gen(block's words) puts in v[0..K).
template <int K, bool Contiguous, typename T, typename Index, typename Gen>
__device__ __forceinline__ void fill_blocks(T* __restrict__ out, Index n, const tl::StridedLayout<Index>& layout,
                                            u64 seed, u64 offset, Gen gen) {
  const Index nblocks = n / K + (n % K != 0);
  const bool aligned = reinterpret_cast<u64>(out) % sizeof(Vec<T, K>) == 0;
  for (Index b = tl::global_thread<Index>(); b < nblocks; b += tl::grid_stride<Index>()) {
    Vec<T, K> vals;
    gen(tl::philox_block(seed, offset, static_cast<u64>(b)), vals.v);
    const Index i0 = b * K;
    if (Contiguous && aligned && i0 + K <= n) {
      *reinterpret_cast<Vec<T, K>*>(out + i0) = vals;
      continue;
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const Index i = i0 + j;
      if (i < n) out[Contiguous ? i : tl::offset_of(i, layout)] = vals.v[j];
    }
  }
}

// U * range + low rounded to T; a value rounded up to `high` becomes low (rounded). For float
// compute `high` arrives rounded up to float (the smallest float >= high), which keeps the
// comparison exact.
template <typename T>
struct Uniform {
  typedef typename Param<T>::type P;
  P low, range, high;
  __device__ __forceinline__ T value(P u) const {
    T r;
    if constexpr (kIsDouble<T>) {
      r = store_float<T>(__dadd_rn(__dmul_rn(u, range), low));
    } else {
      r = store_float<T>(__fadd_rn(__fmul_rn(u, range), low));
    }
    return widened(r) >= high ? store_float<T>(low) : r;
  }
  __device__ __forceinline__ void operator()(const tl::Philox4& p, T* v) const {
    if constexpr (kIsDouble<T>) {
      v[0] = value(tl::uniform53(p.w[0], p.w[1]));
      v[1] = value(tl::uniform53(p.w[2], p.w[3]));
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = value(uniform24f(p.w[j]));
    }
  }
};

// Box-Muller on a uniform pair: mean + std * r * (cos t, sin t); float64 with libm for double,
// tl::rmath::box_muller (words 2k, 2k+1) for the float types.
template <typename T>
struct Normal {
  typedef typename Param<T>::type P;
  P mean, std;
  __device__ __forceinline__ void pair(double u0, double u1, T* v) const {
    const double r = sqrt(__dmul_rn(-2.0, log(__dsub_rn(1.0, u0))));
    const double t = __dmul_rn(6.283185307179586, u1);  // 2 pi, as float64
    v[0] = store_float<T>(__dadd_rn(__dmul_rn(__dmul_rn(r, cos(t)), std), mean));
    v[1] = store_float<T>(__dadd_rn(__dmul_rn(__dmul_rn(r, sin(t)), std), mean));
  }
  __device__ __forceinline__ void pairf(unsigned int w0, unsigned int w1, T* v) const {
    float z0, z1;
    tl::rmath::box_muller(w0, w1, z0, z1);
    v[0] = store_float<T>(__fadd_rn(__fmul_rn(z0, std), mean));
    v[1] = store_float<T>(__fadd_rn(__fmul_rn(z1, std), mean));
  }
  __device__ __forceinline__ void operator()(const tl::Philox4& p, T* v) const {
    if constexpr (kIsDouble<T>) {
      pair(tl::uniform53(p.w[0], p.w[1]), tl::uniform53(p.w[2], p.w[3]), v);
    } else {
      pairf(p.w[0], p.w[1], v);
      pairf(p.w[2], p.w[3], v + 2);
    }
  }
};

// -log(U + half an ulp of U's grid) / lambd: positive and finite. float64: U of 53 bits; the float
// types: U of 23 bits (tl::rmath::neg_log_uniform), so the midpoint is exact in float.
template <typename T>
struct Exponential {
  typedef typename Param<T>::type P;
  P lambd;
  __device__ __forceinline__ void operator()(const tl::Philox4& p, T* v) const {
    if constexpr (kIsDouble<T>) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const double u = __dadd_rn(tl::uniform53(p.w[2 * j], p.w[2 * j + 1]), 0x1p-54);
        v[j] = store_float<T>(__ddiv_rn(-log(u), lambd));
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = store_float<T>(__fdiv_rn(tl::rmath::neg_log_uniform(p.w[j]), lambd));
    }
  }
};

// low + X % range modulo 2^64 (range 0 stands for 2^64: X whole); X one word or a word pair. The
// remainder divides by multiply-high with the host's magic numbers for range (launch.divisor_magic with
// 32 bits for one word, 64 for a pair), in forms exact over the whole word: one word sums in 64 bits,
// a pair halves the sum first ((x - hi) / 2 + hi never wraps; shift >= 1 for every range >= 2).
template <typename T, int Words>
struct RandInt {
  u64 range;
  long long low;
  u64 magic;
  int shift;
  __device__ __forceinline__ T value(u64 x) const {
    if (range > 1) {
      const u64 hi = __umul64hi(x, magic);
      x -= ((((x - hi) >> 1) + hi) >> (shift - 1)) * range;
    } else if (range == 1) {
      x = 0;
    }
    return tl::cast<T>(static_cast<long long>(x + static_cast<u64>(low)));
  }
  __device__ __forceinline__ void operator()(const tl::Philox4& p, T* v) const {
    if constexpr (Words == 2) {
      v[0] = value(tl::word_pair(p.w[0], p.w[1]));
      v[1] = value(tl::word_pair(p.w[2], p.w[3]));
    } else {
      const unsigned int r = static_cast<unsigned int>(range), m = static_cast<unsigned int>(magic);  // r < 2^32
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned int x = p.w[j];
        const unsigned int q = static_cast<unsigned int>((static_cast<u64>(__umulhi(x, m)) + x) >> shift);
        v[j] = tl::cast<T>(static_cast<long long>(static_cast<u64>(x - q * r) + static_cast<u64>(low)));
      }
    }
  }
};

// U < p for the 53-bit U = X / 2^53 (X = word pair >> 11) is X < ceil(p 2^53) on integers: `threshold`
// arrives computed exactly on the host, so no kernel compares in float64.
template <typename T>
struct Bernoulli {
  u64 threshold;
  __device__ __forceinline__ void operator()(const tl::Philox4& p4, T* v) const {
    v[0] = tl::cast<T>((tl::word_pair(p4.w[0], p4.w[1]) >> 11) < threshold);
    v[1] = tl::cast<T>((tl::word_pair(p4.w[2], p4.w[3]) >> 11) < threshold);
  }
};

// ceil(p 2^53) for one probability element (p in [0, 1] by the caller's check): p 2^53 is exact in
// p's own type (a power-of-two scaling), and so is its ceiling, converted exactly to an integer; the
// 16-bit types widen to float first (exact).
__device__ __forceinline__ u64 bernoulli_threshold(double p) { return static_cast<u64>(ceil(p * 0x1p53)); }
__device__ __forceinline__ u64 bernoulli_threshold(float p) { return static_cast<u64>(ceilf(p * 0x1p53f)); }

// Bitonic compare-exchange of the (key, index) pairs at i and l (i < l): ascending puts the
// smaller pair at i. Pairs are distinct (indices are), so the order is the stable order by key.
__device__ __forceinline__ void exchange(u64* keys, long long* idx, long long i, long long l, bool ascending) {
  const u64 ka = keys[i], kb = keys[l];
  const long long ia = idx[i], ib = idx[l];
  const bool greater = ka > kb || (ka == kb && ia > ib);
  if (greater == ascending) {
    keys[i] = kb;
    keys[l] = ka;
    idx[i] = ib;
    idx[l] = ia;
  }
}

constexpr int kTile = 512;  // elements a block sorts in shared memory (blockDim.x == kTile / 2)

// The lower element 2 j (t / j) + t % j of the t-th compared pair of a step of distance j (a power of
// two): the division is a mask and a shift.
template <typename I>
__device__ __forceinline__ I pair_low(I t, I j) {
  return ((t & ~(j - 1)) << 1) | (t & (j - 1));
}

// Bitonic steps j = j0, j0/2, ..., 1 of stage k on one tile held in shared memory.
__device__ __forceinline__ void tile_steps(u64* keys, long long* idx, long long base, int tile, long long k, int j0) {
  for (int j = j0; j > 0; j >>= 1) {
    for (int t = threadIdx.x; t < tile / 2; t += blockDim.x) {
      const int i = pair_low(t, j);
      exchange(keys, idx, i, i + j, ((base + i) & k) == 0);
    }
    __syncthreads();
  }
}

// Loads each tile of `tile` elements into shared memory, runs `body`, and writes it back.
template <typename Body>
__device__ __forceinline__ void per_tile(u64* keys, long long* idx, long long m, int tile, Body body) {
  __shared__ u64 skeys[kTile];
  __shared__ long long sidx[kTile];
  for (long long base = static_cast<long long>(blockIdx.x) * tile; base < m;
       base += static_cast<long long>(gridDim.x) * tile) {
    for (int t = threadIdx.x; t < tile; t += blockDim.x) {
      skeys[t] = keys[base + t];
      sidx[t] = idx[base + t];
    }
    __syncthreads();
    body(skeys, sidx, base);
    for (int t = threadIdx.x; t < tile; t += blockDim.x) {
      keys[base + t] = skeys[t];
      idx[base + t] = sidx[t];
    }
    __syncthreads();
  }
}

}  // namespace tl_random

template <typename T, typename Index, bool Contiguous>
__global__ void philox_uniform(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout, unsigned long long seed,
                               unsigned long long offset, typename tl_random::Param<T>::type low,
                               typename tl_random::Param<T>::type range, typename tl_random::Param<T>::type high) {
  constexpr int K = tl_random::kIsDouble<T> ? 2 : 4;
  tl_random::fill_blocks<K, Contiguous>(out, n, layout, seed, offset, tl_random::Uniform<T>{low, range, high});
}

template <typename T, typename Index, bool Contiguous>
__global__ void philox_normal(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout, unsigned long long seed,
                              unsigned long long offset, typename tl_random::Param<T>::type mean,
                              typename tl_random::Param<T>::type std) {
  constexpr int K = tl_random::kIsDouble<T> ? 2 : 4;
  tl_random::fill_blocks<K, Contiguous>(out, n, layout, seed, offset, tl_random::Normal<T>{mean, std});
}

template <typename T, typename Index, bool Contiguous>
__global__ void philox_exponential(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout,
                                   unsigned long long seed, unsigned long long offset,
                                   typename tl_random::Param<T>::type lambd) {
  constexpr int K = tl_random::kIsDouble<T> ? 2 : 4;
  tl_random::fill_blocks<K, Contiguous>(out, n, layout, seed, offset, tl_random::Exponential<T>{lambd});
}

// range = high - low modulo 2^64 (0: the whole 64-bit range); Words = 2 when range >= 2^32.
template <typename T, typename Index, bool Contiguous, int Words>
__global__ void philox_randint(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout, unsigned long long seed,
                               unsigned long long offset, unsigned long long range, long long low,
                               unsigned long long magic, int shift) {
  tl_random::fill_blocks<Words == 2 ? 2 : 4, Contiguous>(out, n, layout, seed, offset,
                                                         tl_random::RandInt<T, Words>{range, low, magic, shift});
}

template <typename T, typename Index, bool Contiguous>
__global__ void philox_bernoulli(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout,
                                 unsigned long long seed, unsigned long long offset, unsigned long long threshold) {
  tl_random::fill_blocks<2, Contiguous>(out, n, layout, seed, offset, tl_random::Bernoulli<T>{threshold});
}

// Tensor-valued p: mask[i] = U_i < p_i (mask contiguous in logical order, p through its layout);
// *bad = 1 when some p_i is outside [0, 1] or NaN, so the host refuses before writing the output.
template <typename P, typename Index>
__global__ void bernoulli_mask(bool* __restrict__ mask, const P* __restrict__ p, Index n,
                               tl::StridedLayout<Index> p_layout, unsigned long long seed, unsigned long long offset,
                               int* bad) {
  const Index nblocks = n / 2 + (n % 2 != 0);
  for (Index b = tl::global_thread<Index>(); b < nblocks; b += tl::grid_stride<Index>()) {
    const tl::Philox4 w = tl::philox_block(seed, offset, static_cast<unsigned long long>(b));
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const Index i = 2 * b + j;
      if (i < n) {
        const auto pi = tl::widen(p[tl::offset_of(i, p_layout)]);  // float or double
        if (!(pi >= decltype(pi)(0) && pi <= decltype(pi)(1))) {
          *bad = 1;
          continue;
        }
        mask[i] = (tl::word_pair(w.w[2 * j], w.w[2 * j + 1]) >> 11) < tl_random::bernoulli_threshold(pi);
      }
    }
  }
}

// randperm: keys[i] = word pair i of the stream for i < n; m (a power of two >= 2) - n padding
// pairs get the largest key and sort last (their indices exceed every real one). The sort kernels
// are templates (Index int when m fits, else long long), which also lets every translation unit the
// emulation splits the table into define them.
template <typename Index>
__global__ void randperm_keys(unsigned long long* __restrict__ keys, long long* __restrict__ idx, Index n, Index m,
                              unsigned long long seed, unsigned long long offset) {
  for (Index b = tl::global_thread<Index>(); b < m / 2; b += tl::grid_stride<Index>()) {
    const tl::Philox4 w = tl::philox_block(seed, offset, static_cast<unsigned long long>(b));
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const Index i = 2 * b + j;
      keys[i] = i < n ? tl::word_pair(w.w[2 * j], w.w[2 * j + 1]) : ~0ull;
      idx[i] = i;
    }
  }
}

// Stages k = 2 .. tile of the bitonic sort, each tile in shared memory (tile = min(m, kTile)).
template <typename Index>
__global__ void bitonic_sort_tiles(unsigned long long* keys, long long* idx, Index m, int tile) {
  tl_random::per_tile(keys, idx, m, tile, [=](unsigned long long* sk, long long* si, long long base) {
    for (int k = 2; k <= tile; k <<= 1) tl_random::tile_steps(sk, si, base, tile, k, k / 2);
  });
}

// One step (j >= tile) of stage k, over global memory.
template <typename Index>
__global__ void bitonic_merge_global(unsigned long long* keys, long long* idx, Index m, Index j, Index k) {
  for (Index t = tl::global_thread<Index>(); t < m / 2; t += tl::grid_stride<Index>()) {
    const Index i = tl_random::pair_low(t, j);
    tl_random::exchange(keys, idx, i, i + j, (i & k) == 0);
  }
}

// The steps j = tile/2 .. 1 of stage k, each tile in shared memory.
template <typename Index>
__global__ void bitonic_merge_tiles(unsigned long long* keys, long long* idx, Index m, int tile, Index k) {
  tl_random::per_tile(keys, idx, m, tile, [=](unsigned long long* sk, long long* si, long long base) {
    tl_random::tile_steps(sk, si, base, tile, k, tile / 2);
  });
}

// out[j] = idx[j] (the sorted indices) in out's dtype.
template <typename T, typename Index, bool Contiguous>
__global__ void randperm_store(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout,
                               const long long* __restrict__ idx) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[Contiguous ? i : tl::offset_of(i, layout)] = tl::cast<T>(idx[i]);
  }
}
