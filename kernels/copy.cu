// copy_cast: dst[i] = cast<Dst>(src[i]) for every dtype pair (backs copy_, to, clone, contiguous,
// and host <-> device transfers into strided tensors). The host coalesces the two operands'
// dimensions together; Index is int when every offset fits in 32 bits, else long long.
#include "tensorlab/cast.cuh"

// Both operands dense and in the same order: element i of one is element i of the other.
template <typename Src, typename Dst, typename Index>
__global__ void copy_cast_contiguous(Dst* __restrict__ dst, const Src* __restrict__ src, Index n) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    dst[i] = tl::cast<Dst>(src[i]);
  }
}

// Any strides (broadcast source dims have stride 0); both layouts share one coalesced shape.
template <typename Src, typename Dst, typename Index>
__global__ void copy_cast_strided(Dst* __restrict__ dst, const Src* __restrict__ src, Index n,
                                  tl::StridedLayout<Index> dst_layout, tl::StridedLayout<Index> src_layout) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index od = 0, os = 0;
    tl::for_each_coord(i, dst_layout, [&](int d, Index x) {
      od += x * dst_layout.stride[d];
      os += x * src_layout.stride[d];
    });
    dst[od] = tl::cast<Dst>(src[os]);
  }
}
