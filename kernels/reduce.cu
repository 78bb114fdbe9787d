// reduce: every reduction (sum, prod, mean, amax/amin, all/any, count_nonzero, norm, var/std,
// logsumexp, argmax/argmin with values) over an arbitrary set of dims, one kernel template per
// (op, In, Out, Index). The host (backends/cuda/reduction.py) splits the input's dims into "outer"
// dims (one output element each) and reduced dims, coalescing each group, and picks a geometry:
// - inner (red_fast=1): the reduced dims are the fastest varying; `lanes` consecutive threads (a
//   warp, or the whole block) share one output, strided loads are coalesced along the row, and the
//   lanes merge with warp shuffles (plus shared memory across warps);
// - outer (red_fast=0): the reduced dim is strided; consecutive threads own consecutive outputs
//   (coalesced across outputs) and `lanes` rows of threads split the reduced range, merged in
//   shared memory;
// - split (gridDim.y > 1): large reductions over few outputs also split the reduced range across
//   blocks: pass 1 (kWritePartial) writes one State per (output, split), pass 2 (kReadPartial)
//   merges them and stores. Merging is exact for every op (Welford uses Chan's formula).
//
// Blocks have at most kMaxBlock threads, but the kernel deliberately has no __launch_bounds__: under
// a 256-thread bound ptxas squeezes every instantiation toward 32 registers and spills the ones
// that call subroutines (division in var/std, pow in norm, double math in the float64 kernels). Unbounded, the simple ops
// (sum, mean, ... of float) still get <= 32 registers, i.e. 8 blocks per SM, which the split
// geometry's grid (reduction.py, one wave of 8 blocks per SM) assumes.
#include "tensorlab/reduce.cuh"

constexpr int kWriteValues = 1, kWriteIndex = 2, kWritePartial = 4, kReadPartial = 8;
constexpr int kMaxBlock = 256;

template <template <typename, typename> class Op, typename In, typename Out, typename Index>
__global__ void reduce_kernel(Out* out, long long* out_index, const In* __restrict__ in, void* partial,
                              Index n_out, Index n_red, Index split_len, long long count,
                              tl::StridedLayout<Index> outer_in, tl::StridedLayout<Index> outer_out,
                              tl::StridedLayout<Index> outer_index, tl::StridedLayout<Index> red, int lanes,
                              int red_fast, int flags, unsigned long long arg_bits) {
  // the op's double argument (norm's p, var/std's correction) passed as its bits: the float kernels read it
  // through integer operations only (reduce.cuh: norm_kind, arg_float), no FP64 instruction
  const double arg = __longlong_as_double(static_cast<long long>(arg_bits));
  using O = Op<In, Out>;
  using S = typename O::State;
  __shared__ S smem[kMaxBlock];
  const int tid = threadIdx.x;
  const int opb = blockDim.x / lanes;  // outputs per block
  const int r_lane = red_fast ? tid % lanes : tid / opb;
  const int o_lane = red_fast ? tid / lanes : tid % opb;
  const Index split = blockIdx.y;
  const Index r_begin = split * split_len;
  const Index r_end = min(n_red, r_begin + split_len);
  const Index step = lanes;
  // uniform across the block: every thread reaches the barriers and shuffles
  for (Index base = static_cast<Index>(blockIdx.x) * opb; base < n_out; base += static_cast<Index>(gridDim.x) * opb) {
    const Index o = base + o_lane;
    const bool valid = o < n_out;
    Index o_in = 0, o_out = 0, o_index = 0;  // the output's offsets (outer_* share one shape)
    if (valid) {
      tl::for_each_coord(o, outer_in, [&](int d, Index c) {
        o_in += c * outer_in.stride[d];
        o_out += c * outer_out.stride[d];
        o_index += c * outer_index.stride[d];
      });
    }
    S s = O::identity(arg);
    if (valid) {
      if (flags & kReadPartial) {
        const S* p = static_cast<const S*>(partial) + static_cast<long long>(o) * n_red;
        for (Index r = r_begin + r_lane; r < r_end; r += step) s = O::combine(s, p[r], arg);
      } else if (red.ndim <= 1) {
        const In* row = in + o_in;
        const Index st = red.ndim ? red.stride[0] : 0;
        Index r = r_begin + r_lane;
        for (; r + 3 * step < r_end; r += 4 * step) {  // four loads in flight per thread
          In v0 = row[r * st], v1 = row[(r + step) * st], v2 = row[(r + 2 * step) * st], v3 = row[(r + 3 * step) * st];
          O::push(s, v0, r, arg);
          O::push(s, v1, r + step, arg);
          O::push(s, v2, r + 2 * step, arg);
          O::push(s, v3, r + 3 * step, arg);
        }
        for (; r < r_end; r += step) O::push(s, row[r * st], r, arg);
      } else {
        const In* row = in + o_in;
        for (Index r = r_begin + r_lane; r < r_end; r += step) O::push(s, row[tl::offset_of(r, red)], r, arg);
      }
    }
    s = tl::group_merge<O>(s, smem, tid, lanes, red_fast, opb, o_lane, r_lane, arg);
    if (valid && r_lane == 0) {
      if (flags & kWritePartial) {
        static_cast<S*>(partial)[static_cast<long long>(o) * gridDim.y + split] = s;
      } else {
        O::store(s, count, arg, (flags & kWriteValues) ? out + o_out : nullptr,
                 (flags & kWriteIndex) ? out_index + o_index : nullptr);
      }
    }
  }
}
