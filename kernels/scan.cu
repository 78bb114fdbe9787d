// scan: cumsum / cumprod along one dim (`prod` selects the product), accumulating as the CPU
// backend does (float for half/bfloat16, long long for integral results, stored once per element);
// and the index scans of cummax / cummin (scan_arg_*: the position of the running maximum or minimum,
// torch's rules: the latest of equal extremes, a NaN beats every number and the latest NaN wins).
// Rows are the input's other dims, coalesced by the host. in and out may be the same tensor
// (cumsum_): every element is read before it is written, so no __restrict__.
//
// One body per launch shape, over a scan operator Op: its State, identity(), load(src, i, stride) of
// element i of a row, combine(earlier, later) and store(dst, i, stride, state).
#include "tensorlab/reduce.cuh"

namespace tl_scan {
template <typename In, typename Out>
struct SumProdScan {
  using State = typename tl::AccOf<Out>::type;
  int prod;
  __device__ State identity() const { return State(prod ? 1 : 0); }
  template <typename Index>
  __device__ State load(const In* src, Index i, Index stride) const { return tl::acc_load<Out>(src[i * stride]); }
  __device__ State combine(State a, State b) const { return prod ? a * b : a + b; }
  template <typename Index>
  __device__ void store(Out* dst, Index i, Index stride, State v) const { dst[i * stride] = tl::cast<Out>(v); }
};

template <typename K>
struct ArgState {
  K v;
  long long i;  // the position along the row; -1: the identity
};
template <typename K> __device__ __forceinline__ bool scan_isnan(K v) {
  if constexpr (sizeof(K) >= 4 && K(0.5) != K(0)) return v != v;  // floating keys
  else return false;
}

// The running extreme's position. The order is total (NaN over numbers, then the value, then the later
// position), so combine is associative and commutative: any grouping gives torch's sequential answer.
template <typename In>
struct ArgScan {
  using K = typename tl::AccOf<In>::type;
  using State = ArgState<K>;
  int is_max;
  __device__ State identity() const { return {K(0), -1}; }
  template <typename Index>
  __device__ State load(const In* src, Index i, Index stride) const {
    return {static_cast<K>(tl::widen(src[i * stride])), static_cast<long long>(i)};
  }
  __device__ bool beats(State b, State a) const {
    const bool bn = scan_isnan(b.v), an = scan_isnan(a.v);
    if (bn != an) return bn;
    if (!bn && b.v != a.v) return is_max ? b.v > a.v : b.v < a.v;
    return b.i > a.i;
  }
  __device__ State combine(State a, State b) const {
    return a.i < 0 || (b.i >= 0 && beats(b, a)) ? b : a;
  }
  template <typename Index>
  __device__ void store(long long* dst, Index i, Index stride, State s) const { dst[i * stride] = s.i; }
};

// The chunk totals of an ArgScan (rows of States) scanned in place: load and store the State itself.
template <typename Op>
struct StateScan {
  using State = typename Op::State;
  Op op;
  __device__ State identity() const { return op.identity(); }
  template <typename Index>
  __device__ State load(const State* src, Index i, Index stride) const { return src[i * stride]; }
  __device__ State combine(State a, State b) const { return op.combine(a, b); }
  template <typename Index>
  __device__ void store(State* dst, Index i, Index stride, State s) const { dst[i * stride] = s; }
};

template <typename A>
__device__ __forceinline__ A scan_shfl_up(A v, unsigned off) { return tl::shfl_up(v, off); }
template <typename K>
__device__ __forceinline__ ArgState<K> scan_shfl_up(ArgState<K> s, unsigned off) {
  return {tl::shfl_up(s.v, off), tl::shfl_up(s.i, off)};
}

// The inclusive scan of src[start, end) (elements in_stride apart) into dst, continuing from `carry`,
// in tiles of blockDim.x elements: an inclusive warp scan by shuffles, the warps' totals scanned by the
// first warp, and the running carry of the previous tiles combined in. Every thread of the block calls it.
template <typename Op, typename In, typename Out, typename Index>
__device__ __forceinline__ void scan_span(const Op& op, Out* dst, const In* src, Index start, Index end,
                                          Index in_stride, Index out_stride, typename Op::State carry,
                                          typename Op::State* warp_total, typename Op::State& carry_slot) {
  using S = typename Op::State;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  for (Index base = start; base < end; base += blockDim.x) {
    const Index i = base + tid;
    S v = i < end ? op.load(src, i, in_stride) : op.identity();
    for (int off = 1; off < 32; off <<= 1) {
      S u = scan_shfl_up(v, off);
      if (lane >= off) v = op.combine(u, v);
    }
    if (lane == 31) warp_total[warp] = v;
    __syncthreads();
    if (warp == 0) {
      S t = lane < nwarps ? warp_total[lane] : op.identity();
      for (int off = 1; off < 32; off <<= 1) {
        S u = scan_shfl_up(t, off);
        if (lane >= off) t = op.combine(u, t);
      }
      warp_total[lane] = t;  // inclusive prefix of the warps' totals
    }
    __syncthreads();
    if (warp > 0) v = op.combine(warp_total[warp - 1], v);
    v = op.combine(carry, v);
    if (i < end) op.store(dst, i, out_stride, v);
    if (tid == blockDim.x - 1) carry_slot = v;
    __syncthreads();
    carry = carry_slot;
    __syncthreads();
  }
}

// One block per row (grid-stride over rows), the whole row scanned by scan_span.
template <typename Op, typename In, typename Out, typename Index>
__device__ __forceinline__ void rows_body(const Op& op, Out* out, const In* in, Index n_rows, Index len,
                                          const tl::StridedLayout<Index>& outer_in,
                                          const tl::StridedLayout<Index>& outer_out, Index in_stride,
                                          Index out_stride) {
  using S = typename Op::State;
  __shared__ S warp_total[32];
  __shared__ S carry_slot;
  for (Index row = blockIdx.x; row < n_rows; row += gridDim.x) {
    scan_span(op, out + tl::offset_of(row, outer_out), in + tl::offset_of(row, outer_in), Index(0), len, in_stride,
              out_stride, op.identity(), warp_total, carry_slot);
  }
}

// Few long rows: a multi-block scan in three launches (reduce, scan the totals, scan again). Each row is
// cut into chunks of `chunk` elements, one block per (row, chunk) work item (row = item / chunks).
// chunk_totals_body: the total of each chunk into totals[item] (the State, row-major (rows, chunks));
// a rows scan over `totals` makes them inclusive prefixes; chunk_apply_body: every chunk scanned as the
// rows scan would, starting from the prefix of the chunks before it.
template <typename Op, typename In, typename Index>
__device__ __forceinline__ void chunk_totals_body(const Op& op, typename Op::State* totals, const In* in,
                                                  Index n_items, const tl::Divisor<Index>& chunks, Index len,
                                                  Index chunk, const tl::StridedLayout<Index>& outer_in,
                                                  Index in_stride) {
  using S = typename Op::State;
  __shared__ S part[256];
  const int tid = threadIdx.x;
  for (Index item = blockIdx.x; item < n_items; item += gridDim.x) {
    Index row = item;
    const Index c = chunks.pop(row);
    const In* src = in + tl::offset_of(row, outer_in);
    const Index start = c * chunk, end = min(start + chunk, len);
    S acc = op.identity();
    for (Index i = start + tid; i < end; i += blockDim.x) acc = op.combine(acc, op.load(src, i, in_stride));
    part[tid] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {  // a fixed tree: the same totals on every run
      if (tid < st) part[tid] = op.combine(part[tid], part[tid + st]);
      __syncthreads();
    }
    if (tid == 0) totals[item] = part[0];
    __syncthreads();
  }
}

template <typename Op, typename In, typename Out, typename Index>
__device__ __forceinline__ void chunk_apply_body(const Op& op, Out* out, const In* in,
                                                 const typename Op::State* prefix, Index n_items,
                                                 const tl::Divisor<Index>& chunks, Index len, Index chunk,
                                                 const tl::StridedLayout<Index>& outer_in,
                                                 const tl::StridedLayout<Index>& outer_out, Index in_stride,
                                                 Index out_stride) {
  using S = typename Op::State;
  __shared__ S warp_total[32];
  __shared__ S carry_slot;
  for (Index item = blockIdx.x; item < n_items; item += gridDim.x) {
    Index row = item;
    const Index c = chunks.pop(row);
    const Index start = c * chunk, end = min(start + chunk, len);
    const S carry = c > 0 ? prefix[item - 1] : op.identity();
    scan_span(op, out + tl::offset_of(row, outer_out), in + tl::offset_of(row, outer_in), start, end, in_stride,
              out_stride, carry, warp_total, carry_slot);
  }
}

// One thread per row, sequential along the row: short rows, and rows along a strided dim, where
// consecutive threads own consecutive rows and their loads coalesce.
template <typename Op, typename In, typename Out, typename Index>
__device__ __forceinline__ void seq_body(const Op& op, Out* out, const In* in, Index n_rows, Index len,
                                         const tl::StridedLayout<Index>& outer_in,
                                         const tl::StridedLayout<Index>& outer_out, Index in_stride,
                                         Index out_stride) {
  for (Index row = tl::global_thread<Index>(); row < n_rows; row += tl::grid_stride<Index>()) {
    const In* src = in + tl::offset_of(row, outer_in);
    Out* dst = out + tl::offset_of(row, outer_out);
    auto acc = op.identity();
    for (Index i = 0; i < len; ++i) {
      acc = op.combine(acc, op.load(src, i, in_stride));
      op.store(dst, i, out_stride, acc);
    }
  }
}
}  // namespace tl_scan
using namespace tl_scan;

// cumsum / cumprod
template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_rows(Out* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
          tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  rows_body(SumProdScan<In, Out>{prod}, out, in, n_rows, len, outer_in, outer_out, in_stride, out_stride);
}

template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_chunk_totals(typename tl::AccOf<Out>::type* totals, const In* in, Index n_items, tl::Divisor<Index> chunks,
                  Index len, Index chunk, tl::StridedLayout<Index> outer_in, Index in_stride, int prod) {
  chunk_totals_body(SumProdScan<In, Out>{prod}, totals, in, n_items, chunks, len, chunk, outer_in, in_stride);
}

template <typename In, typename Out, typename Index>
__global__ void __launch_bounds__(256)
scan_chunk_apply(Out* out, const In* in, const typename tl::AccOf<Out>::type* prefix, Index n_items,
                 tl::Divisor<Index> chunks, Index len, Index chunk, tl::StridedLayout<Index> outer_in,
                 tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  chunk_apply_body(SumProdScan<In, Out>{prod}, out, in, prefix, n_items, chunks, len, chunk, outer_in, outer_out,
                   in_stride, out_stride);
}

template <typename In, typename Out, typename Index>
__global__ void scan_seq(Out* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
                         tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int prod) {
  seq_body(SumProdScan<In, Out>{prod}, out, in, n_rows, len, outer_in, outer_out, in_stride, out_stride);
}

// cummax / cummin indices (is_max selects): the same launch shapes, int64 positions out. The chunk totals
// are ArgState<K> records (16 bytes: K = float, double or long long, then the position).
template <typename In, typename Index>
__global__ void __launch_bounds__(256)
scan_arg_rows(long long* out, const In* in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
              tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int is_max) {
  rows_body(ArgScan<In>{is_max}, out, in, n_rows, len, outer_in, outer_out, in_stride, out_stride);
}

template <typename In, typename Index>
__global__ void __launch_bounds__(256)
scan_arg_chunk_totals(ArgState<typename tl::AccOf<In>::type>* totals, const In* in, Index n_items,
                      tl::Divisor<Index> chunks, Index len, Index chunk, tl::StridedLayout<Index> outer_in,
                      Index in_stride, int is_max) {
  chunk_totals_body(ArgScan<In>{is_max}, totals, in, n_items, chunks, len, chunk, outer_in, in_stride);
}

// the (rows, chunks) totals into inclusive prefixes per row, in place; K the key type (In's AccOf)
template <typename K, typename Index>
__global__ void __launch_bounds__(256)
scan_arg_totals(ArgState<K>* totals, Index n_rows, Index chunks, tl::StridedLayout<Index> per_row, int is_max) {
  using Op = ArgScan<K>;  // AccOf<K> is K for float, double and long long
  rows_body(StateScan<Op>{Op{is_max}}, totals, static_cast<const ArgState<K>*>(totals), n_rows, chunks, per_row,
            per_row, Index(1), Index(1));
}

template <typename In, typename Index>
__global__ void __launch_bounds__(256)
scan_arg_chunk_apply(long long* out, const In* in, const ArgState<typename tl::AccOf<In>::type>* prefix,
                     Index n_items, tl::Divisor<Index> chunks, Index len, Index chunk,
                     tl::StridedLayout<Index> outer_in, tl::StridedLayout<Index> outer_out, Index in_stride,
                     Index out_stride, int is_max) {
  chunk_apply_body(ArgScan<In>{is_max}, out, in, prefix, n_items, chunks, len, chunk, outer_in, outer_out, in_stride,
                   out_stride);
}

template <typename In, typename Index>
__global__ void scan_arg_seq(long long* out, const In* in, Index n_rows, Index len,
                             tl::StridedLayout<Index> outer_in, tl::StridedLayout<Index> outer_out, Index in_stride,
                             Index out_stride, int is_max) {
  seq_body(ArgScan<In>{is_max}, out, in, n_rows, len, outer_in, outer_out, in_stride, out_stride);
}
