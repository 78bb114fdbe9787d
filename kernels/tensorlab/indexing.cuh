// Shared device code of the index kernels (index.cu, scan_select.cu, shape.cu, sort.cu): several
// operands walked by one decomposition of the linear index, and the atomic read-modify-writes of
// scatter_add / index_put(accumulate=True) / scatter(reduce="multiply").
#pragma once
#include "cast.cuh"

namespace tl {

// Element offsets of linear index i in three layouts that share one (coalesced) shape: one
// multiply-high quotient per dimension (a's division magic) instead of three.
template <typename Index>
__device__ __forceinline__ void offsets3(Index i, const StridedLayout<Index>& a, const StridedLayout<Index>& b,
                                         const StridedLayout<Index>& c, Index& oa, Index& ob, Index& oc) {
  oa = 0;
  ob = 0;
  oc = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < a.ndim) {
      const Index q = a.div(i, d), r = i - q * a.shape[d];
      oa += r * a.stride[d];
      ob += r * b.stride[d];
      oc += r * c.stride[d];
      i = q;
    }
  }
}

template <typename Index>
__device__ __forceinline__ void offsets2(Index i, const StridedLayout<Index>& a, const StridedLayout<Index>& b,
                                         Index& oa, Index& ob) {
  oa = 0;
  ob = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < a.ndim) {
      const Index q = a.div(i, d), r = i - q * a.shape[d];
      oa += r * a.stride[d];
      ob += r * b.stride[d];
      i = q;
    }
  }
}

// How a write combines with the destination: plain store, or an atomic add / multiply (duplicate
// indices accumulate). Atomics exist for the 4- and 8-byte accumulator types only (float, double,
// int, long long); narrower dtypes accumulate in a float or int scratch copy (the host arranges it)
// and are rounded or wrapped once when copied back.
enum Combine { kSet = 0, kAdd = 1, kMul = 2, kMax = 3, kMin = 4 };

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
}

__device__ __forceinline__ void atomic_mul(float* p, float v) {
  unsigned int* w = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *w, seen;
  do {
    seen = old;
    old = atomicCAS(w, seen, __float_as_uint(__uint_as_float(seen) * v));
  } while (old != seen);
}
__device__ __forceinline__ void atomic_mul(double* p, double v) {
  unsigned long long* w = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *w, seen;
  do {
    seen = old;
    old = atomicCAS(w, seen, static_cast<unsigned long long>(
                                 __double_as_longlong(__longlong_as_double(static_cast<long long>(seen)) * v)));
  } while (old != seen);
}
// Integer products wrap (unsigned arithmetic: no signed overflow), as NumPy's.
__device__ __forceinline__ void atomic_mul(int* p, int v) {
  unsigned int* w = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *w, seen;
  do {
    seen = old;
    old = atomicCAS(w, seen, seen * static_cast<unsigned int>(v));
  } while (old != seen);
}
__device__ __forceinline__ void atomic_mul(long long* p, long long v) {
  unsigned long long* w = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *w, seen;
  do {
    seen = old;
    old = atomicCAS(w, seen, seen * static_cast<unsigned long long>(v));
  } while (old != seen);
}

// amax / amin (scatter_reduce): NaN wins, as torch's and NumPy's maximum/minimum; floating values by
// a CAS loop on the bits (no float atomicMax), integers by atomicMax/atomicMin.
template <bool Max, typename F>
__device__ __forceinline__ F pick(F cur, F v) {
  if (cur != cur) return cur;
  if (v != v) return v;
  return Max ? (v > cur ? v : cur) : (v < cur ? v : cur);
}
template <bool Max>
__device__ __forceinline__ void atomic_extreme(float* p, float v) {
  unsigned int* w = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *w, seen;
  do {
    seen = old;
    unsigned int want = __float_as_uint(pick<Max>(__uint_as_float(seen), v));
    if (want == seen) return;
    old = atomicCAS(w, seen, want);
  } while (old != seen);
}
template <bool Max>
__device__ __forceinline__ void atomic_extreme(double* p, double v) {
  unsigned long long* w = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *w, seen;
  do {
    seen = old;
    unsigned long long want = static_cast<unsigned long long>(
        __double_as_longlong(pick<Max>(__longlong_as_double(static_cast<long long>(seen)), v)));
    if (want == seen) return;
    old = atomicCAS(w, seen, want);
  } while (old != seen);
}
template <bool Max>
__device__ __forceinline__ void atomic_extreme(int* p, int v) {
  if (Max) atomicMax(p, v); else atomicMin(p, v);
}
template <bool Max>
__device__ __forceinline__ void atomic_extreme(long long* p, long long v) {
  if (Max) atomicMax(p, v); else atomicMin(p, v);
}

template <int Mode, typename A>
__device__ __forceinline__ void combine(A* p, A v) {
  if constexpr (Mode == kSet) {
    *p = v;
  } else if constexpr (Mode == kAdd) {
    atomic_add(p, v);
  } else if constexpr (Mode == kMul) {
    atomic_mul(p, v);
  } else {
    atomic_extreme<Mode == kMax>(p, v);
  }
}

// Block-wide exclusive prefix sum of one int per thread (blockDim.x a multiple of 32, at most
// 1024); `total` receives the block's sum. Every thread of the block must call it.
__device__ __forceinline__ int block_exclusive_scan(int v, int& total) {
  __shared__ int warp_sums[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    int s = lane < nwarps ? warp_sums[lane] : 0;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    warp_sums[lane] = s;  // inclusive sums of the warps
  }
  __syncthreads();
  int before = (warp ? warp_sums[warp - 1] : 0) + x - v;
  total = warp_sums[nwarps - 1];
  __syncthreads();  // warp_sums is reused by the next call
  return before;
}

}  // namespace tl
