// scan: cumsum / cumprod along one dim (`prod` selects the product), accumulating as the CPU
// backend does (float for half/bfloat16, long long for integral results, stored once per element).
// Rows are the input's other dims, coalesced by the host. in and out may be the same tensor
// (cumsum_): every element is read before it is written, so no __restrict__.
#include "tensorlab/reduce.cuh"

template <typename A>
__device__ __forceinline__ A scan_op(A a, A b, int prod) { return prod ? a * b : a + b; }

// The inclusive scan of src[start, end) (elements in_stride apart) into dst, continuing from `carry`,
// in tiles of blockDim.x elements: an inclusive warp scan by shuffles, the warps' totals scanned by the
// first warp, and the running carry of the previous tiles added. Every thread of the block calls it.
template <typename In, typename Out, typename Index, typename A>
__device__ __forceinline__ void scan_span(Out* dst, const In* src, Index start, Index end, Index in_stride,
                                          Index out_stride, A carry, int prod, A* warp_total, A& carry_slot) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const A identity = A(prod ? 1 : 0);
  for (Index base = start; base < end; base += blockDim.x) {
    const Index i = base + tid;
    A v = i < end ? tl::acc_load<Out>(src[i * in_stride]) : identity;
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
    if (i < end) dst[i * out_stride] = tl::cast<Out>(v);
    if (tid == blockDim.x - 1) carry_slot = v;
    __syncthreads();
    carry = carry_slot;
    __syncthreads();
  }
}

// One block per row (grid-stride over rows), the whole row scanned by scan_span.
template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_rows(Out* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
          tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  using A = typename tl::AccOf<Out>::type;
  __shared__ A warp_total[32];
  __shared__ A carry_slot;
  for (Index row = blockIdx.x; row < n_rows; row += gridDim.x) {
    scan_span(out + tl::offset_of(row, outer_out), in + tl::offset_of(row, outer_in), Index(0), len, in_stride,
              out_stride, A(prod ? 1 : 0), prod, warp_total, carry_slot);
  }
}

// Few long rows: a multi-block scan in three launches (reduce, scan the totals, scan again). Each row is
// cut into chunks of `chunk` elements, one block per (row, chunk) work item (row = item / chunks).
// scan_chunk_totals: the total of each chunk into totals[item] (accumulator type, row-major (rows,
// chunks)); scan_rows over `totals` makes them inclusive prefixes; scan_chunk_apply: every chunk scanned
// as scan_rows would, starting from the prefix of the chunks before it.
template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_chunk_totals(typename tl::AccOf<Out>::type* totals, const In* in, Index n_items, tl::Divisor<Index> chunks,
                  Index len, Index chunk, tl::StridedLayout<Index> outer_in, Index in_stride, int prod) {
  using A = typename tl::AccOf<Out>::type;
  __shared__ A part[256];
  const int tid = threadIdx.x;
  for (Index item = blockIdx.x; item < n_items; item += gridDim.x) {
    Index row = item;
    const Index c = chunks.pop(row);
    const In* src = in + tl::offset_of(row, outer_in);
    const Index start = c * chunk, end = min(start + chunk, len);
    A acc = A(prod ? 1 : 0);
    for (Index i = start + tid; i < end; i += blockDim.x) {
      acc = scan_op(acc, tl::acc_load<Out>(src[i * in_stride]), prod);
    }
    part[tid] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {  // a fixed tree: the same totals on every run
      if (tid < st) part[tid] = scan_op(part[tid], part[tid + st], prod);
      __syncthreads();
    }
    if (tid == 0) totals[item] = part[0];
    __syncthreads();
  }
}

template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_chunk_apply(Out* out, const In* in, const typename tl::AccOf<Out>::type* prefix, Index n_items,
                 tl::Divisor<Index> chunks, Index len, Index chunk, tl::StridedLayout<Index> outer_in,
                 tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  using A = typename tl::AccOf<Out>::type;
  __shared__ A warp_total[32];
  __shared__ A carry_slot;
  for (Index item = blockIdx.x; item < n_items; item += gridDim.x) {
    Index row = item;
    const Index c = chunks.pop(row);
    const Index start = c * chunk, end = min(start + chunk, len);
    const A carry = c > 0 ? prefix[item - 1] : A(prod ? 1 : 0);
    scan_span(out + tl::offset_of(row, outer_out), in + tl::offset_of(row, outer_in), start, end, in_stride,
              out_stride, carry, prod, warp_total, carry_slot);
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
