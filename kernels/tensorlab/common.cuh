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

// Element offset of the linear (row-major) index `i` in a strided layout.
template <typename Index>
__device__ __forceinline__ Index offset_of(Index i, const StridedLayout<Index>& l) {
  Index off = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < l.ndim) {
      Index n = l.shape[d];
      off += (i % n) * l.stride[d];
      i /= n;
    }
  }
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
