// Shared device code: element types and strided indexing over coalesced dimensions.
// Included by every kernel in kernels/*.cu; compiled by NVRTC and, for CI, by the emulation driver
// (tensorlab/backends/cuda/emulation), which force-includes its CUDA built-ins and defines TL_EMULATION.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Dynamic shared memory (the launch's shared_mem bytes) as a T*: the one place kernels differ
// between NVRTC and the emulation, where `extern __shared__` has no host equivalent.
#ifdef TL_EMULATION
#define TL_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(tl_emu_dynamic_shared())
#else
#define TL_DYNAMIC_SHARED(T, name)                                 \
  extern __shared__ __align__(16) unsigned char tl_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(tl_dynamic_shared_)
#endif

namespace tl {

constexpr int kMaxDims = 8;

// Shape and strides (in elements) of one operand after the host coalesced its dimensions.
// Passed by value as a kernel argument; the host packs it with the same field order.
template <typename Index>
struct StridedLayout {
  Index shape[kMaxDims];
  Index stride[kMaxDims];
  int ndim;
};

// a / b for the non-negative operands of index arithmetic. 64-bit indices divide in 32 bits when
// both operands fit (the common case, a few instructions); the 64-bit division is a subroutine call.
__device__ __forceinline__ int index_div(int a, int b) { return a / b; }
__device__ __forceinline__ long long index_div(long long a, long long b) {
  if (((a | b) >> 32) == 0) return static_cast<long long>(static_cast<unsigned>(a) / static_cast<unsigned>(b));
  return a / b;
}

// Calls f(d, c) with the coordinate c along each dim d of the linear (row-major) index i of a
// layout's shape, innermost dim first; 0 <= i < the number of elements, so dim 0 needs no division.
// Operands the host coalesced together share one shape: one walk gives the offsets of all of them.
template <typename Index, typename F>
__device__ __forceinline__ void for_each_coord(Index i, const StridedLayout<Index>& l, F&& f) {
#pragma unroll
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d < l.ndim) {
      const Index n = l.shape[d], q = index_div(i, n);
      f(d, i - q * n);
      i = q;
    }
  }
  if (l.ndim > 0) f(0, i);
}

// Element offset of the linear (row-major) index i, 0 <= i < the layout's number of elements.
template <typename Index>
__device__ __forceinline__ Index offset_of(Index i, const StridedLayout<Index>& l) {
  Index off = 0;
  for_each_coord(i, l, [&](int d, Index c) { off += c * l.stride[d]; });
  return off;
}

// Grid-stride loop bounds for 1-D launches.
template <typename Index>
__device__ __forceinline__ Index global_thread() {
  return static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
}

template <typename Index>
__device__ __forceinline__ Index grid_stride() {
  return static_cast<Index>(gridDim.x) * blockDim.x;
}

}  // namespace tl
