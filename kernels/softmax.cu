// softmax / log_softmax along one dim, fused: the row max (NaN-propagating), the sum of
// exp(x - max), then exp(x - max) / sum or (x - max) - log(sum), computed in float for
// half/bfloat16 (double for double) and stored once. Same formulas as the CPU backend, so
// infinities and NaN give the same results. Rows are the other dims, coalesced by the host.
#include "tensorlab/reduce.cuh"

namespace {
template <typename A>
struct MaxOp {
  using State = tl::Val<A>;
  __device__ static State identity(double) { return {tl::Bounds<A>::lowest()}; }
  __device__ static State combine(State a, State b, double) { return {tl::max_nan(a.a, b.a)}; }
};
template <typename A>
struct SumOp {
  using State = tl::Val<A>;
  __device__ static State identity(double) { return {A(0)}; }
  __device__ static State combine(State a, State b, double) { return {a.a + b.a}; }
};
}  // namespace

// At least this many blocks per SM under the 256-thread launch bound: 0 (no minimum: ptxas's
// default, which squeezes float rows with int indices into 32 registers), or 1 with 64-bit
// arithmetic (double's exp and division subroutine, long long indices), which spills when squeezed.
template <typename A, typename Index>
constexpr int kMinBlocks = sizeof(A) == 8 || sizeof(Index) == 8 ? 1 : 0;

// `lanes` consecutive threads (a warp, or the whole block) per row, blockDim.x / lanes rows per block.
template <typename T, typename Index>
__global__ void __launch_bounds__(256, kMinBlocks<typename tl::AccOf<T>::type, Index>)
softmax_rows(T* out, const T* __restrict__ in, Index n_rows, Index len, tl::StridedLayout<Index> outer_in,
             tl::StridedLayout<Index> outer_out, Index in_stride, Index out_stride, int lanes, int log) {
  using A = typename tl::AccOf<T>::type;
  using S = tl::Val<A>;
  __shared__ S smem[256];
  __shared__ A row_max[256], row_sum[256];
  const int tid = threadIdx.x, rpb = blockDim.x / lanes, r_lane = tid % lanes, o_lane = tid / lanes;
  for (Index base = static_cast<Index>(blockIdx.x) * rpb; base < n_rows; base += static_cast<Index>(gridDim.x) * rpb) {
    const Index row = base + o_lane;
    const bool valid = row < n_rows;
    Index o_in = 0, o_out = 0;  // the row's offsets (outer_in and outer_out share one shape)
    if (valid) {
      tl::for_each_coord(row, outer_in, [&](int d, Index x) {
        o_in += x * outer_in.stride[d];
        o_out += x * outer_out.stride[d];
      });
    }
    const T* src = in + o_in;
    auto load = [=](Index i) { return static_cast<A>(tl::widen(src[i * in_stride])); };
    constexpr int U = 4;  // independent loads in flight per thread in each pass
    S m = MaxOp<A>::identity(0);
    if (valid)
      tl::for_each_loaded<U>(Index(r_lane), len, Index(lanes), load, [&](A v, Index) { m.a = tl::max_nan(m.a, v); });
    m = tl::group_merge<MaxOp<A>>(m, smem, tid, lanes, 1, rpb, o_lane, r_lane, 0);
    if (r_lane == 0) row_max[o_lane] = m.a;
    __syncthreads();
    const A mx = row_max[o_lane];
    S s = SumOp<A>::identity(0);
    if (valid)
      tl::for_each_loaded<U>(Index(r_lane), len, Index(lanes), load, [&](A v, Index) { s.a += tl::m_exp(v - mx); });
    s = tl::group_merge<SumOp<A>>(s, smem, tid, lanes, 1, rpb, o_lane, r_lane, 0);
    if (r_lane == 0) row_sum[o_lane] = s.a;
    __syncthreads();
    const A sum = row_sum[o_lane];
    if (valid) {
      T* dst = out + o_out;
      if (log) {
        const A lsum = tl::m_log(sum);
        tl::for_each_loaded<U>(Index(r_lane), len, Index(lanes), load,
                               [&](A v, Index i) { dst[i * out_stride] = tl::cast<T>((v - mx) - lsum); });
      } else {
        tl::for_each_loaded<U>(Index(r_lane), len, Index(lanes), load,
                               [&](A v, Index i) { dst[i * out_stride] = tl::cast<T>(tl::m_exp(v - mx) / sum); });
      }
    }
    __syncthreads();  // row_max/row_sum are reused by the next rows
  }
}

// One thread per row, three passes along it: rows along a strided dim, consecutive threads on
// consecutive rows so that every pass's loads coalesce.
template <typename T, typename Index>
__global__ void softmax_cols(T* out, const T* __restrict__ in, Index n_rows, Index len,
                             tl::StridedLayout<Index> outer_in, tl::StridedLayout<Index> outer_out, Index in_stride,
                             Index out_stride, int log) {
  using A = typename tl::AccOf<T>::type;
  for (Index row = tl::global_thread<Index>(); row < n_rows; row += tl::grid_stride<Index>()) {
    Index o_in = 0, o_out = 0;
    tl::for_each_coord(row, outer_in, [&](int d, Index x) {
      o_in += x * outer_in.stride[d];
      o_out += x * outer_out.stride[d];
    });
    const T* src = in + o_in;
    T* dst = out + o_out;
    auto load = [=](Index i) { return static_cast<A>(tl::widen(src[i * in_stride])); };
    constexpr int U = 4;  // independent loads in flight per thread in each pass
    A mx = tl::Bounds<A>::lowest(), sum = A(0);
    tl::for_each_loaded<U>(Index(0), len, Index(1), load, [&](A v, Index) { mx = tl::max_nan(mx, v); });
    tl::for_each_loaded<U>(Index(0), len, Index(1), load, [&](A v, Index) { sum += tl::m_exp(v - mx); });
    const A lsum = tl::m_log(sum);
    tl::for_each_loaded<U>(Index(0), len, Index(1), load, [&](A v, Index i) {
      const A x = v - mx;
      dst[i * out_stride] = tl::cast<T>(log ? x - lsum : tl::m_exp(x) / sum);
    });
  }
}
