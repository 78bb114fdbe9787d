// Shared device code: element types and strided indexing over coalesced dimensions.
// Included by every kernel in kernels/*.cu; compiled by NVRTC (and, later, the emulation driver).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

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
