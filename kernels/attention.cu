// Fused scaled-dot-product attention (flash-attention style): forward and backward.
//
// Two paths behind the same entry points: float / double (kHeadDim 0) run the scalar tiles below;
// float16 / bfloat16 run the tensor-core tiles of tensorlab/flash_attention.cuh (mma.sync
// m16n8k16, float accumulation), one instantiation per head-dim bucket kHeadDim (32, 64, 128, 256; the
// name expression without it means 128; 256 takes dynamic shared memory and, for dK / dV, gridDim.z = 2).
// Both read the mask and draw dropout the same way
// (tensorlab/attention_args.cuh).
//
// Layout (the host makes every operand contiguous): q [BH, L, E], k [BHk, S, E], v [BHk, S, Ev],
// out/dout [BH, L, Ev], lse/delta [BH, L] (float; double for double), with BH = batch * Hq and BHk = batch * Hk; the
// query head h of batch b reads key/value head b * Hk + h / group (group = Hq / Hk: GQA). The
// mask (mode 1 bool keeps True, 2 additive float of type T) is read through its broadcast strides:
// `ml` is the layout of its leading (batch..., head) dims expanded to (batch..., Hq), ms_l and
// ms_s the strides of its last two dims (0 where broadcast). Dropout (dr.on) multiplies
// probability (bh, i, j) by 0 or 1 / (1 - p), drawn from the Philox stream at element
// (bh L + i) S + j exactly as the composite's bernoulli_ over the [BH, L, S] probabilities.
//
// The forward walks key blocks with an online softmax (running max m and sum l per row), so no
// L x S matrix exists anywhere; it stores out and the row's log-sum-exp lse = m + log(l) (-inf for
// a row whose every key is masked out: its output is 0, as the composite's _safe_softmax gives;
// l sums the probabilities before dropout). The backward recomputes P = exp(s - lse) per tile:
// attention_bwd_dkdv owns one key block of one key/value head and loops over every query row of
// the group's heads (dV = (P z)^T dO, dK = scale dS^T Q with dS = P (z dO V^T - delta),
// delta = rowsum(dO * out) from attention_bwd_delta), attention_bwd_dq owns one query block
// (dQ = scale dS K). Each gradient element is written by one thread after a fixed-order sum:
// deterministic, no atomics. With want_dmask, attention_bwd_dkdv also stores dS (the float mask's
// gradient) per (row, key).
//
// Scalar geometry: 128 threads per block, tiles of kBM = 16 query rows by kBN = 16 keys, head dims
// up to Acc<T>::kMaxE (128; 64 for double, whose tiles are twice as wide). Thread t works on row
// (or key) t / 8 and on columns t % 8 + 8 i. Tiles are kept in the accumulation type A (float;
// double for double) in static shared memory under 48 KB (rows padded by one element against bank
// conflicts), accumulators in A registers. Tensor-core geometry: 128 threads, 64 query rows (or
// keys) per block, see flash_attention.cuh.
#include "tensorlab/attention_args.cuh"
#include "tensorlab/flash_attention.cuh"

namespace {
using namespace tl_attn;
constexpr int kThreads = 128;
constexpr int kBM = 16;
constexpr int kBN = 16;
constexpr int kLanes = 8;                    // threads per row
constexpr int kTile = kBM * kBN / kThreads;  // score-tile entries per thread
static_assert(kThreads == kFlashThreads, "one block size for both paths");

#define TL_ATTN_TYPES                        \
  using A = typename Acc<T>::A;              \
  constexpr int kMaxE = Acc<T>::kMaxE;       \
  constexpr int kLd = kMaxE + 1;             \
  constexpr int kCols = kMaxE / kLanes;      \
  const A kNegInf = -tl::Bounds<A>::highest()

// The head-dim bucket a name expression without one means: 0 (the scalar path) for float and
// double, 128 (the tensor-core path) for float16 / bfloat16.
template <typename T> struct HeadDim {
  static constexpr int kDefault = 0;
};
template <> struct HeadDim<__half> {
  static constexpr int kDefault = 128;
};
template <> struct HeadDim<__nv_bfloat16> {
  static constexpr int kDefault = 128;
};

// rows x n elements of a contiguous [*, n] matrix starting at row r0 (rows past `limit` read 0):
// warp w copies rows w, w + 4, ..., its lanes stride the columns (coalesced, and no runtime integer
// division by n in the index)
template <typename T, typename A, int kLd>
__device__ __forceinline__ void load_tile(A (*dst)[kLd], const T* src, long long r0, long long limit, int rows, int n) {
  const int lane = threadIdx.x & 31;
  for (int r = threadIdx.x >> 5; r < rows; r += kThreads / 32) {
    const bool in = r0 + r < limit;
    const T* row = src + (r0 + r) * n;
    for (int c = lane; c < n; c += 32) dst[r][c] = in ? static_cast<A>(tl::widen(row[c])) : A(0);
  }
}
}  // namespace

// The scalar path (float, double): grid (BH, ceil(L / kBM))
template <typename T>
__device__ __forceinline__ void scalar_fwd(T* __restrict__ out, AccT<T>* __restrict__ lse, const T* __restrict__ q,
                                           const T* __restrict__ k, const T* __restrict__ v,
                                           const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L,
                                           long long S, int E, int Ev, int group, int Hq, AccT<T> scale, MaskArgs mk,
                                           const tl::StridedLayout<long long>& ml, const DropArgs& dr) {
  TL_ATTN_TYPES;
  __shared__ A sq[kBM][kLd];
  __shared__ A sk[kBN][kLd];
  __shared__ A sv[kBN][kLd];
  __shared__ A sp[kBM][kBN];
  const long long bh = blockIdx.x, i0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long kvh = (bh / Hq) * (Hq / group) + (bh % Hq) / group;
  const int t = threadIdx.x, r = t / kLanes, c = t % kLanes;
  const long long i = i0 + r;
  const long long mb = mk.mode ? mask_base(bh, ml) : 0;
  const T* qb = q + bh * L * E;
  const T* kb = k + kvh * S * E;
  const T* vb = v + kvh * S * Ev;
  load_tile(sq, qb, i0, L, kBM, E);
  A acc[kCols];
#pragma unroll
  for (int x = 0; x < kCols; ++x) acc[x] = A(0);
  A m = kNegInf, l = A(0);
  const long long s_end = mk.causal ? (i0 + kBM < S ? i0 + kBM : S) : S;
  for (long long j0 = 0; j0 < s_end; j0 += kBN) {
    __syncthreads();  // the previous tile's readers are done
    load_tile(sk, kb, j0, S, kBN, E);
    load_tile(sv, vb, j0, S, kBN, Ev);
    __syncthreads();
#pragma unroll
    for (int x = 0; x < kTile; ++x) {
      const int jj = c + kLanes * x;
      const long long j = j0 + jj;
      A s = kNegInf;
      if (i < L && j < S) {
        A dot = A(0);
        for (int e = 0; e < E; ++e) dot += sq[r][e] * sk[jj][e];
        s = masked(dot, scale, i, j, mk, bmask, fmask, mb);
      }
      sp[r][jj] = s;
    }
    __syncthreads();
    A tmax = kNegInf;
    for (int jj = 0; jj < kBN; ++jj) tmax = amax(tmax, sp[r][jj]);
    const A m_new = amax(m, tmax);
    if (m_new != kNegInf) {  // else every key so far is masked out: nothing to add
      const A alpha = m == kNegInf ? A(0) : tl::m_exp(m - m_new);
      A psum = A(0);
      A p[kBN];
#pragma unroll
      for (int jj = 0; jj < kBN; ++jj) {
        p[jj] = tl::m_exp(sp[r][jj] - m_new);
        psum += p[jj];
      }
      l = l * alpha + psum;
      if (dr.on && i < L) {  // the output sums the dropped probabilities; l the kept-or-not ones
#pragma unroll
        for (int jj = 0; jj < kBN; ++jj) p[jj] *= drop_factor<A>(dr, (bh * L + i) * S + j0 + jj);
      }
#pragma unroll
      for (int x = 0; x < kCols; ++x) {
        const int d = c + kLanes * x;
        if (d < Ev) {
          A a = acc[x] * alpha;
#pragma unroll
          for (int jj = 0; jj < kBN; ++jj) a += p[jj] * sv[jj][d];
          acc[x] = a;
        }
      }
      m = m_new;
    }
  }
  if (i < L) {
    const A inv = l > A(0) ? A(1) / l : A(0);
    T* ob = out + (bh * L + i) * Ev;
#pragma unroll
    for (int x = 0; x < kCols; ++x) {
      const int d = c + kLanes * x;
      if (d < Ev) ob[d] = tl::cast<T>(acc[x] * inv);
    }
    if (c == 0) lse[bh * L + i] = l > A(0) ? m + tl::m_log(l) : kNegInf;
  }
}

// delta[row] = sum(dout[row] * out[row]) over Ev, one thread per row (grid-stride over n rows)
template <typename T>
__global__ void attention_bwd_delta(AccT<T>* __restrict__ delta, const T* __restrict__ dout, const T* __restrict__ out,
                                    long long n, int Ev) {
  using A = AccT<T>;
  for (long long row = tl::global_thread<long long>(); row < n; row += tl::grid_stride<long long>()) {
    A s = A(0);
    for (int d = 0; d < Ev; ++d)
      s += static_cast<A>(tl::widen(dout[row * Ev + d])) * static_cast<A>(tl::widen(out[row * Ev + d]));
    delta[row] = s;
  }
}

// P and dS of one (kBM rows) x (kBN keys) tile into sp / sds; rows and keys out of range give 0.
template <typename T, typename A, int kLd>
__device__ __forceinline__ void probs_tile(A (*sp)[kBN], A (*sds)[kBN], const A (*sq)[kLd],
                                           const A (*sk)[kLd], const A (*sdo)[kLd],
                                           const A (*sv)[kLd], const A* slse, const A* sdelta,
                                           long long i0, long long j0, long long L, long long S, int E, int Ev,
                                           AccT<T> scale, MaskArgs mk, const bool* bmask, const T* fmask,
                                           long long mb, long long bh, const DropArgs& dr) {
  const A kNegInf = neg_inf<A>();
  const int t = threadIdx.x;
#pragma unroll
  for (int x = 0; x < kTile; ++x) {
    const int idx = t + kThreads * x, ii = idx / kBN, jj = idx % kBN;
    const long long i = i0 + ii, j = j0 + jj;
    A p = A(0), ds = A(0);
    if (i < L && j < S && slse[ii] != kNegInf) {
      A dot = A(0);
      for (int e = 0; e < E; ++e) dot += sq[ii][e] * sk[jj][e];
      const A s = masked(dot, scale, i, j, mk, bmask, fmask, mb);
      if (s != kNegInf) {
        p = tl::m_exp(s - slse[ii]);
        A dp = A(0);
        for (int e = 0; e < Ev; ++e) dp += sdo[ii][e] * sv[jj][e];
        const A z = drop_factor<A>(dr, (bh * L + i) * S + j);
        ds = p * (dp * z - sdelta[ii]);
        p *= z;
      }
    }
    sp[ii][jj] = p;
    sds[ii][jj] = ds;
  }
}

// grid (BHk, ceil(S / kBN)): dK and dV of one key block of one key/value head, summed over the
// group's query heads and every query block in order. dmask (if want_dmask): contiguous [BH, L, S].
template <typename T>
__device__ __forceinline__ void scalar_bwd_dkdv(
    T* __restrict__ dk, T* __restrict__ dv, T* __restrict__ dmask, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, const T* __restrict__ dout, const AccT<T>* __restrict__ lse,
    const AccT<T>* __restrict__ delta, const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L,
    long long S, int E, int Ev, int group, int Hq, AccT<T> scale, MaskArgs mk, const tl::StridedLayout<long long>& ml,
    const DropArgs& dr, int want_dmask) {
  TL_ATTN_TYPES;
  __shared__ A sq[kBM][kLd];
  __shared__ A sdo[kBM][kLd];
  __shared__ A sk[kBN][kLd];
  __shared__ A sv[kBN][kLd];
  __shared__ A sp[kBM][kBN];
  __shared__ A sds[kBM][kBN];
  __shared__ A slse[kBM], sdelta[kBM];
  const long long kvh = blockIdx.x, j0 = static_cast<long long>(blockIdx.y) * kBN;
  const int Hk = Hq / group;
  const long long b = kvh / Hk, hk = kvh % Hk;
  const int t = threadIdx.x, r = t / kLanes, c = t % kLanes;  // r: the key row of the block this thread sums
  load_tile(sk, k + kvh * S * E, j0, S, kBN, E);
  load_tile(sv, v + kvh * S * Ev, j0, S, kBN, Ev);
  A adk[kCols], adv[kCols];
#pragma unroll
  for (int x = 0; x < kCols; ++x) adk[x] = adv[x] = A(0);
  const long long i_start = mk.causal ? (j0 / kBM) * kBM : 0;
  for (int g = 0; g < group; ++g) {
    const long long bh = b * Hq + hk * group + g;
    const long long mb = mk.mode ? mask_base(bh, ml) : 0;
    for (long long i0 = i_start; i0 < L; i0 += kBM) {
      __syncthreads();
      load_tile(sq, q + bh * L * E, i0, L, kBM, E);
      load_tile(sdo, dout + bh * L * Ev, i0, L, kBM, Ev);
      if (t < kBM) {
        slse[t] = i0 + t < L ? lse[bh * L + i0 + t] : kNegInf;
        sdelta[t] = i0 + t < L ? delta[bh * L + i0 + t] : A(0);
      }
      __syncthreads();
      probs_tile(sp, sds, sq, sk, sdo, sv, slse, sdelta, i0, j0, L, S, E, Ev, scale, mk, bmask, fmask, mb, bh, dr);
      __syncthreads();
      if (want_dmask) {
        for (int idx = t; idx < kBM * kBN; idx += kThreads) {
          const int ii = idx / kBN, jj = idx % kBN;
          if (i0 + ii < L && j0 + jj < S) dmask[(bh * L + i0 + ii) * S + j0 + jj] = tl::cast<T>(sds[ii][jj]);
        }
      }
      for (int ii = 0; ii < kBM; ++ii) {
        const A p = sp[ii][r], ds = sds[ii][r];
#pragma unroll
        for (int x = 0; x < kCols; ++x) {
          const int d = c + kLanes * x;
          if (d < Ev) adv[x] += p * sdo[ii][d];
          if (d < E) adk[x] += ds * sq[ii][d];
        }
      }
    }
  }
  if (j0 + r < S) {
    T* dkb = dk + (kvh * S + j0 + r) * E;
    T* dvb = dv + (kvh * S + j0 + r) * Ev;
#pragma unroll
    for (int x = 0; x < kCols; ++x) {
      const int d = c + kLanes * x;
      if (d < E) dkb[d] = tl::cast<T>(adk[x] * scale);
      if (d < Ev) dvb[d] = tl::cast<T>(adv[x]);
    }
  }
}

// grid (BH, ceil(L / kBM)): dQ of one query block, summed over the key blocks in order.
template <typename T>
__device__ __forceinline__ void scalar_bwd_dq(
    T* __restrict__ dq, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const T* __restrict__ dout, const AccT<T>* __restrict__ lse, const AccT<T>* __restrict__ delta,
    const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L, long long S, int E, int Ev, int group,
    int Hq, AccT<T> scale, MaskArgs mk, const tl::StridedLayout<long long>& ml, const DropArgs& dr) {
  TL_ATTN_TYPES;
  __shared__ A sq[kBM][kLd];
  __shared__ A sdo[kBM][kLd];
  __shared__ A sk[kBN][kLd];
  __shared__ A sv[kBN][kLd];
  __shared__ A sp[kBM][kBN];
  __shared__ A sds[kBM][kBN];
  __shared__ A slse[kBM], sdelta[kBM];
  const long long bh = blockIdx.x, i0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long kvh = (bh / Hq) * (Hq / group) + (bh % Hq) / group;
  const int t = threadIdx.x, r = t / kLanes, c = t % kLanes;
  const long long mb = mk.mode ? mask_base(bh, ml) : 0;
  load_tile(sq, q + bh * L * E, i0, L, kBM, E);
  load_tile(sdo, dout + bh * L * Ev, i0, L, kBM, Ev);
  if (t < kBM) {
    slse[t] = i0 + t < L ? lse[bh * L + i0 + t] : kNegInf;
    sdelta[t] = i0 + t < L ? delta[bh * L + i0 + t] : A(0);
  }
  A adq[kCols];
#pragma unroll
  for (int x = 0; x < kCols; ++x) adq[x] = A(0);
  const long long s_end = mk.causal ? (i0 + kBM < S ? i0 + kBM : S) : S;
  for (long long j0 = 0; j0 < s_end; j0 += kBN) {
    __syncthreads();
    load_tile(sk, k + kvh * S * E, j0, S, kBN, E);
    load_tile(sv, v + kvh * S * Ev, j0, S, kBN, Ev);
    __syncthreads();
    probs_tile(sp, sds, sq, sk, sdo, sv, slse, sdelta, i0, j0, L, S, E, Ev, scale, mk, bmask, fmask, mb, bh, dr);
    __syncthreads();
    for (int jj = 0; jj < kBN; ++jj) {
      const A ds = sds[r][jj];
#pragma unroll
      for (int x = 0; x < kCols; ++x) {
        const int d = c + kLanes * x;
        if (d < E) adq[x] += ds * sk[jj][d];
      }
    }
  }
  if (i0 + r < L) {
    T* dqb = dq + (bh * L + i0 + r) * E;
#pragma unroll
    for (int x = 0; x < kCols; ++x) {
      const int d = c + kLanes * x;
      if (d < E) dqb[d] = tl::cast<T>(adq[x] * scale);
    }
  }
}

// The entry points: the scalar path for float / double (kHeadDim 0), the tensor-core path of
// tensorlab/flash_attention.cuh for float16 / bfloat16 per head-dim bucket (E and Ev <= kHeadDim).
// grid (BH, ceil(L / 16)) scalar, (BH, ceil(L / 64)) tensor cores.
template <typename T, int kHeadDim = HeadDim<T>::kDefault>
__global__ void __launch_bounds__(kThreads, 1) attention_fwd(T* __restrict__ out, AccT<T>* __restrict__ lse,
                                                          const T* __restrict__ q, const T* __restrict__ k,
                                                          const T* __restrict__ v, const bool* __restrict__ bmask,
                                                          const T* __restrict__ fmask, long long L, long long S, int E,
                                                          int Ev, int group, int Hq, AccT<T> scale, MaskArgs mk,
                                                          tl::StridedLayout<long long> ml, DropArgs dr) {
  if constexpr (kHeadDim == 0)
    scalar_fwd<T>(out, lse, q, k, v, bmask, fmask, L, S, E, Ev, group, Hq, scale, mk, ml, dr);
  else
    flash_fwd<T, kHeadDim>(out, lse, q, k, v, bmask, fmask, L, S, E, Ev, group, Hq, scale, mk, ml, dr);
}

// grid (BHk, ceil(S / 16)) scalar, (BHk, ceil(S / 64)) tensor cores.
template <typename T, int kHeadDim = HeadDim<T>::kDefault>
__global__ void __launch_bounds__(kThreads, 1) attention_bwd_dkdv(
    T* __restrict__ dk, T* __restrict__ dv, T* __restrict__ dmask, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, const T* __restrict__ dout, const AccT<T>* __restrict__ lse,
    const AccT<T>* __restrict__ delta, const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L,
    long long S, int E, int Ev, int group, int Hq, AccT<T> scale, MaskArgs mk, tl::StridedLayout<long long> ml,
    DropArgs dr, int want_dmask) {
  if constexpr (kHeadDim == 0)
    scalar_bwd_dkdv<T>(dk, dv, dmask, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale, mk, ml,
                       dr, want_dmask);
  else
    flash_bwd_dkdv<T, kHeadDim>(dk, dv, dmask, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq,
                                scale, mk, ml, dr, want_dmask);
}

// grid (BH, ceil(L / 16)) scalar, (BH, ceil(L / 64)) tensor cores.
template <typename T, int kHeadDim = HeadDim<T>::kDefault>
__global__ void __launch_bounds__(kThreads, 1) attention_bwd_dq(
    T* __restrict__ dq, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const T* __restrict__ dout, const AccT<T>* __restrict__ lse, const AccT<T>* __restrict__ delta,
    const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L, long long S, int E, int Ev, int group,
    int Hq, AccT<T> scale, MaskArgs mk, tl::StridedLayout<long long> ml, DropArgs dr) {
  if constexpr (kHeadDim == 0)
    scalar_bwd_dq<T>(dq, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale, mk, ml, dr);
  else
    flash_bwd_dq<T, kHeadDim>(dq, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale, mk, ml,
                              dr);
}
