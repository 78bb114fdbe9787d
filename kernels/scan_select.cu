// Data-dependent outputs (nonzero, masked_select, boolean-mask indexing) by a device-side scan:
//   tile_counts:   the number of nonzero elements of each tile t of kTile elements (row-major order), into
//                  counts[t + 1] (counts[0] = 0);
//   then the host's multi-block cumsum (kernels/scan.cu, backends/cuda/reduction.py) turns counts[0..tiles]
//   into each tile's exclusive offset, the grand total last (an inclusive scan of the shifted counts);
//   compact_*:     each tile ranks its nonzero elements (block prefix sums) and writes them, in
//                  order, from its offset: their coordinates, or the selected values.
// Launched with blocks of kBlock threads. The host reads the total (a named host_wait) to size the
// output, then runs the compaction.
#include "tensorlab/indexing.cuh"

constexpr int kBlock = 256;
constexpr int kRounds = 8;
constexpr int kTile = kBlock * kRounds;

template <typename T, typename Index>
__global__ void tile_counts(const T* __restrict__ x, Index n, tl::StridedLayout<Index> layout,
                            long long* __restrict__ counts) {
  Index tiles = (n + kTile - 1) / kTile;
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[0] = 0;
  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    int c = 0;
    for (int r = 0; r < kRounds; ++r) {
      Index i = t * kTile + r * kBlock + threadIdx.x;
      c += __syncthreads_count(i < n && tl::cast<bool>(x[tl::offset_of(i, layout)]));
    }
    if (threadIdx.x == 0) counts[t + 1] = c;
  }
}

// The row-major coordinates (in `shape`, a table: shape.shape[d], shape.ndim) of every nonzero
// element j-th in order, written at out[j * stride_j + d * stride_d].
template <typename T, typename Index>
__global__ void compact_coords(const T* __restrict__ x, Index n, tl::StridedLayout<Index> layout,
                               tl::StridedLayout<long long> shape, const long long* __restrict__ offsets,
                               long long* __restrict__ out, long long stride_j, long long stride_d) {
  Index tiles = (n + kTile - 1) / kTile;
  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long base = offsets[t];
    for (int r = 0; r < kRounds; ++r) {
      Index i = t * kTile + r * kBlock + threadIdx.x;
      bool p = i < n && tl::cast<bool>(x[tl::offset_of(i, layout)]);
      int total;
      int rank = tl::block_exclusive_scan(p ? 1 : 0, total);
      if (p) {
        long long* row = out + (base + rank) * stride_j;
        long long rest = i;
        for (int d = shape.ndim - 1; d >= 0; --d) {
          long long q = shape.div(rest, d);
          row[d * stride_d] = rest - q * shape.shape[d];
          rest = q;
        }
      }
      base += total;
    }
  }
}

// out[j * stride] = the j-th element of x where mask is true (x and mask share the shape).
template <typename T, typename Index>
__global__ void compact_values(const T* __restrict__ x, const bool* __restrict__ mask, Index n,
                               tl::StridedLayout<Index> x_layout, tl::StridedLayout<Index> mask_layout,
                               const long long* __restrict__ offsets, T* __restrict__ out, long long stride) {
  Index tiles = (n + kTile - 1) / kTile;
  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long base = offsets[t];
    for (int r = 0; r < kRounds; ++r) {
      Index i = t * kTile + r * kBlock + threadIdx.x;
      Index xo = 0, mo = 0;
      if (i < n) tl::offsets2(i, x_layout, mask_layout, xo, mo);
      bool p = i < n && mask[mo];
      int total;
      int rank = tl::block_exclusive_scan(p ? 1 : 0, total);
      if (p) out[(base + rank) * stride] = x[xo];
      base += total;
    }
  }
}
