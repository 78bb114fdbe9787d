// scan: cumsum / cumprod along one dim (`prod` selects the product), accumulating as the CPU
// backend does (float for half/bfloat16, long long for integral results, stored once per element).
// Rows are the input's other dims, coalesced by the host. in and out may be the same tensor
// (cumsum_): every element is read before it is written, so no __restrict__.
#include "tensorlab/reduce.cuh"

template <typename A>
__device__ __forceinline__ A scan_op(A a, A b, int prod) { return prod ? a * b : a + b; }

// One block per row (grid-stride over rows), the row in tiles of blockDim.x elements: an inclusive
// warp scan by shuffles, the warps' totals scanned by the first warp, and the running carry of
// the previous tiles added.
template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_rows(Out* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
          tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  using A = typename tl::AccOf<Out>::type;
  __shared__ A warp_total[32];
  __shared__ A carry_slot;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const A identity = A(prod ? 1 : 0);
  for (Index row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const In* src = in + tl::offset_of(row, outer_in);
    Out* dst = out + tl::offset_of(row, outer_out);
    A carry = identity;
    for (Index base = 0; base < len; base += blockDim.x) {
      const Index i = base + tid;
      A v = i < len ? tl::acc_load<Out>(src[i * in_stride]) : identity;
      for (int off = 1; off < 32; off <<= 1) {
        A u = tl::shfl_up(v, off);
        if (lane >= off) v = scan_op(u, v, prod);
      }
      if (lane == 31) warp_total[warp] = v;
      __syncthreads();
      if (warp == 0) {
        A t = lane < nwarps ? warp_total[lane] : identity;
        for (int off = 1; off < 32; off <<= 1) {
          A u = tl::shfl_up(t, off);
          if (lane >= off) t = scan_op(u, t, prod);
        }
        warp_total[lane] = t;  // inclusive prefix of the warps' totals
      }
      __syncthreads();
      if (warp > 0) v = scan_op(warp_total[warp - 1], v, prod);
      v = scan_op(carry, v, prod);
      if (i < len) dst[i * out_stride] = tl::cast<Out>(v);
      if (tid == blockDim.x - 1) carry_slot = v;
      __syncthreads();
      carry = carry_slot;
      __syncthreads();
    }
  }
}

// One thread per row, sequential along the row: short rows, and rows along a strided dim, where
// consecutive threads own consecutive rows and their loads coalesce.
template <typename In, typename Out, typename Index>
__global__ void scan_seq(Out* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
                         tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  using A = typename tl::AccOf<Out>::type;
  for (Index row = tl::global_thread<Index>(); row < n_rows; row += tl::grid_stride<Index>()) {
    const In* src = in + tl::offset_of(row, outer_in);
    Out* dst = out + tl::offset_of(row, outer_out);
    A acc = A(prod ? 1 : 0);
    for (Index i = 0; i < len; ++i) {
      acc = scan_op(acc, tl::acc_load<Out>(src[i * in_stride]), prod);
      dst[i * out_stride] = tl::cast<Out>(acc);
    }
  }
}
