// fill: write one value into every element of a tensor (backs zeros/ones/full/fill_/zero_).
// T is the element type, Index is int (tensors under 2**31 elements) or long long.
#include "tensorlab/common.cuh"

template <typename T, typename Index>
__global__ void fill_contiguous(T* __restrict__ out, T value, Index n) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i] = value;
  }
}

template <typename T, typename Index>
__global__ void fill_strided(T* __restrict__ out, T value, Index n, tl::StridedLayout<Index> layout) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[tl::offset_of(i, layout)] = value;
  }
}
