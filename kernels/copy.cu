// copy_cast: dst[i] = cast<Dst>(src[i]) for every dtype pair (backs copy_, to, clone, contiguous,
// and host <-> device transfers into strided tensors). The host coalesces the two operands'
// dimensions together; Index is int when every offset fits in 32 bits, else long long.
// Both kernels keep kUnroll independent loads in flight per thread (all loads of a step, then all
// stores): one scalar load per thread leaves HBM mostly idle.
#include "tensorlab/cast.cuh"
#include "tensorlab/pack.cuh"

namespace tl {
constexpr int kCopyUnroll = 4;
template <typename A, typename B> struct SameType { static constexpr bool value = false; };
template <typename A> struct SameType<A, A> { static constexpr bool value = true; };
}

// Both operands dense and in the same order: element i of one is element i of the other. Packs of
// Lanes<Src, Dst> elements (16 bytes of the wider type); `packs` is 0 when the launcher found a
// pointer not aligned to its pack width, and the elements past the packs go one by one.
template <typename Src, typename Dst, typename Index>
__global__ void copy_cast_contiguous(Dst* __restrict__ dst, const Src* __restrict__ src, Index n, Index packs) {
  constexpr int N = tl::Lanes<Src, Dst>::value, U = tl::kCopyUnroll;
  const Index stride = tl::grid_stride<Index>();
  for (Index k0 = tl::global_thread<Index>(); k0 < packs; k0 += U * stride) {
    tl::Pack<Src, N> x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (k0 + u * stride < packs) x[u] = tl::load_pack<N>(src, k0 + u * stride);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (k0 + u * stride < packs) {
        if constexpr (tl::SameType<Src, Dst>::value) {  // the bytes as they are (a bool holds 0 or 1)
          tl::store_pack<N>(dst, k0 + u * stride, x[u]);
        } else {
          tl::Pack<Dst, N> r;
#pragma unroll
          for (int j = 0; j < N; ++j) r.v[j] = tl::cast<Dst>(x[u].v[j]);
          tl::store_pack<N>(dst, k0 + u * stride, r);
        }
      }
    }
  }
  for (Index i = packs * N + tl::global_thread<Index>(); i < n; i += stride) {
    dst[i] = tl::cast<Dst>(src[i]);
  }
}

// Any strides (broadcast source dims have stride 0); both layouts share one coalesced shape.
template <typename Src, typename Dst, typename Index>
__global__ void copy_cast_strided(Dst* __restrict__ dst, const Src* __restrict__ src, Index n,
                                  tl::StridedLayout<Index> dst_layout, tl::StridedLayout<Index> src_layout) {
  constexpr int U = tl::kCopyUnroll;
  const Index stride = tl::grid_stride<Index>();
  for (Index i0 = tl::global_thread<Index>(); i0 < n; i0 += U * stride) {
    Src v[U];
    Index od[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = i0 + u * stride;
      if (i < n) {
        Index os = 0;
        od[u] = 0;
        tl::for_each_coord(i, dst_layout, [&](int d, Index x) {
          od[u] += x * dst_layout.stride[d];
          os += x * src_layout.stride[d];
        });
        v[u] = src[os];
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i0 + u * stride < n) dst[od[u]] = tl::cast<Dst>(v[u]);
    }
  }
}
