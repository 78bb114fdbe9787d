// matmul: C[z] = A[z] @ B[z] for every batch index z, over operands of any strides (transposed,
// broadcast batch dims with stride 0). The host views the batch dims as one coalesced index z and
// passes each operand's batch layout; M, N, K and the matrix strides are in elements.
//
// Accumulation: float for float/half/bfloat16 (each result rounded once), double for double, and
// unsigned long long for integers and bool: it wraps modulo 2**64, so the result cast back to T
// wraps exactly as torch's and NumPy's integer matmul do (with no signed-overflow UB), and a bool
// result is "any a[i, k] and b[k, j]" (outer() of bool tensors).
//
// Both kernels run a 1-D grid-stride loop over the output tiles of every batch entry, column
// tiles fastest (consecutive blocks share A's rows in L2); everything a tile needs is derived
// from its index, so nothing stays live in registers from one tile to the next.
//
// gemm_tiled: the classic register-blocked SGEMM. A block of 256 threads computes a BMxBN tile
// (128x128 with 8x8 results per thread for float accumulators, 64x64 with 4x4 for 8-byte ones),
// stepping through K in slices of BK=8 staged in double-buffered shared memory: the next slice is
// fetched from global memory into registers while the current one is multiplied, so one barrier
// per slice suffices. Each thread's rows (and columns) are two groups of four, 64 apart, so its
// fragments are 16-byte shared-memory loads that a warp reads without bank conflicts.
// Global loads go through the strides; each thread's (row, k) share of a slice is chosen per
// launch so that consecutive threads read consecutive addresses whichever of the operand's two
// strides is 1 (a_kfast / b_kfast: walk k fastest, else m resp. n fastest).
// gemm_small: 16x16 tiles, one result per thread, for matrices too thin for the big tile.
#include "tensorlab/cast.cuh"

namespace tl {
namespace gemm {

template <typename T>
struct Acc { using type = unsigned long long; };
template <> struct Acc<float> { using type = float; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename A>
struct Tile { static constexpr int M = 64, N = 64, TM = 4, TN = 4; };  // 8-byte accumulators
template <>
struct Tile<float> { static constexpr int M = 128, N = 128, TM = 8, TN = 8; };

constexpr int kThreads = 256;
constexpr int kBK = 8;
constexpr int kPad = 4;  // keeps rows 16-byte aligned and the transposing smem stores conflict-free
constexpr int kSmall = 16;

// Four consecutive accumulators from 16-byte aligned shared memory.
__device__ __forceinline__ void load4(float* r, const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
}
__device__ __forceinline__ void load4(double* r, const double* p) {
  const double2 u = reinterpret_cast<const double2*>(p)[0], v = reinterpret_cast<const double2*>(p)[1];
  r[0] = u.x; r[1] = u.y; r[2] = v.x; r[3] = v.y;
}
__device__ __forceinline__ void load4(unsigned long long* r, const unsigned long long* p) {
  const ulonglong2 u = reinterpret_cast<const ulonglong2*>(p)[0], v = reinterpret_cast<const ulonglong2*>(p)[1];
  r[0] = u.x; r[1] = u.y; r[2] = v.x; r[3] = v.y;
}

template <typename A, typename T>
__device__ __forceinline__ A to_acc(T v) {
  return static_cast<A>(widen(v));
}

// Output tile t of BMxBN tiles, column tiles fastest, then row tiles, then the batch index.
template <typename Index>
struct TileAt {
  Index z, m0, n0;
};
template <int BM, int BN, typename Index>
__device__ __forceinline__ TileAt<Index> tile_at(Index t, Index M, Index N) {
  const Index tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  const Index row = index_div(t, tiles_n), z = index_div(row, tiles_m);
  return {z, (row - z * tiles_m) * BM, (t - row * tiles_n) * BN};
}

// Offsets of batch entry z in the three operands (the host coalesced their batch dims together).
// Once per output tile: a PlainLayout and a division walk (StridedLayout's larger argument with the
// division magic made gemm_tiled spill beside its register tile).
template <typename Index>
struct Bases {
  Index a, b, c;
};
template <typename Index>
__device__ __forceinline__ Bases<Index> bases_of(Index z, const PlainLayout<Index>& la, const PlainLayout<Index>& lb,
                                                 const PlainLayout<Index>& lc) {
  Bases<Index> o{0, 0, 0};
  const auto add = [&](int d, Index x) {
    o.a += x * la.stride[d];
    o.b += x * lb.stride[d];
    o.c += x * lc.stride[d];
  };
#pragma unroll
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d < la.ndim) {
      const Index n = la.shape[d], q = index_div(z, n);
      add(d, z - q * n);
      z = q;
    }
  }
  if (la.ndim > 0) add(0, z);
  return o;
}

// A thread's share of one operand's BK-deep slice of a W-wide tile: L elements, element i at
// (row or column, k) = (mn + i * DMN, k + i * DK). KFast (the operand's k stride is 1): consecutive
// threads take consecutive k, else consecutive rows/columns, so that global loads coalesce. The
// steps are compile-time constants (the kernel branches on the uniform kfast flag), which keeps
// the elements' shared-memory addresses and bounds checks out of registers.
struct Share {
  int mn, k;
};
template <int W>
__device__ __forceinline__ Share share_of(int tid, bool kfast) {
  return kfast ? Share{tid / kBK, tid % kBK} : Share{tid % W, tid / W};
}
template <int W, bool KFast>
struct Steps {
  static constexpr int L = W * kBK / kThreads;
  static constexpr int DMN = KFast ? kThreads / kBK : 0, DK = KFast ? 0 : kThreads / W;
};

// One slice's share from global memory, zero outside the matrix: p is the share's first element,
// step the distance between consecutive elements, rows the tile's rows/columns inside the matrix
// and kleft the slice's k inside it.
template <int W, bool KFast, int L, typename A, typename T, typename Index>
__device__ __forceinline__ void fetch(A (&r)[L], Share s, const T* p, Index step, int rows, int kleft) {
  using St = Steps<W, KFast>;
#pragma unroll
  for (int i = 0; i < L; ++i, p += step)
    r[i] = (s.mn + i * St::DMN < rows && s.k + i * St::DK < kleft) ? to_acc<A>(*p) : A(0);
}

// ...then into the shared slice t[k][row or column].
template <int W, bool KFast, int L, int P, typename A>
__device__ __forceinline__ void stage(A (*t)[P], const A (&r)[L], Share s) {
  using St = Steps<W, KFast>;
#pragma unroll
  for (int i = 0; i < L; ++i) t[s.k + i * St::DK][s.mn + i * St::DMN] = r[i];
}

}  // namespace gemm
}  // namespace tl

#define TL_GEMM_PARAMS                                                                                  \
  T *__restrict__ c, const T *__restrict__ a, const T *__restrict__ b, Index M, Index N, Index K,      \
      Index sam, Index sak, Index sbk, Index sbn, Index scm, Index scn, Index batch,                   \
      tl::PlainLayout<Index> batch_a, tl::PlainLayout<Index> batch_b, tl::PlainLayout<Index> batch_c,   \
      int a_kfast, int b_kfast

template <typename T, typename Index>
__global__ void __launch_bounds__(256, 2) gemm_tiled(TL_GEMM_PARAMS) {
  namespace g = tl::gemm;
  using A = typename g::Acc<T>::type;
  using Cfg = g::Tile<A>;
  constexpr int BM = Cfg::M, BN = Cfg::N, BK = g::kBK, TM = Cfg::TM, TN = Cfg::TN;
  constexpr int GM = TM / 4, GN = TN / 4;  // groups of four rows / columns per thread
  constexpr int LA = g::Steps<BM, true>::L, LB = g::Steps<BN, true>::L;
  __shared__ __align__(16) A As[2][BK][BM + g::kPad];  // As[k][m]
  __shared__ __align__(16) A Bs[2][BK][BN + g::kPad];  // Bs[k][n]

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const g::Share sa = g::share_of<BM>(tid, a_kfast), sb = g::share_of<BN>(tid, b_kfast);
  // distance between a share's consecutive elements in global memory
  const Index step_a = a_kfast ? g::Steps<BM, true>::DMN * sam : g::Steps<BM, false>::DK * sak;
  const Index step_b = b_kfast ? g::Steps<BN, true>::DMN * sbn : g::Steps<BN, false>::DK * sbk;
  const Index ktiles = (K + BK - 1) / BK, tiles = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN);

  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    const g::TileAt<Index> at = g::tile_at<BM, BN>(t, M, N);
    const g::Bases<Index> base = g::bases_of(at.z, batch_a, batch_b, batch_c);
    // the shares' first elements, advanced one slice per step
    const T* pa = a + base.a + (at.m0 + sa.mn) * sam + sa.k * sak;
    const T* pb = b + base.b + (at.n0 + sb.mn) * sbn + sb.k * sbk;
    // the tile's rows and columns inside the matrix, and the k left from the slice in flight on (in
    // the slice: kl); what fetch compares is at most a tile wide, so int whatever the index type
    const int rows_a = static_cast<int>(min(M - at.m0, Index(BM)));
    const int rows_b = static_cast<int>(min(N - at.n0, Index(BN)));
    Index kleft = K;
    int kl = static_cast<int>(min(kleft, Index(BK)));
    A ra[LA], rb[LB];  // the slice in flight from global memory
    auto fetch_a = [&]() {
      if (a_kfast) g::fetch<BM, true>(ra, sa, pa, step_a, rows_a, kl);
      else g::fetch<BM, false>(ra, sa, pa, step_a, rows_a, kl);
    };
    auto fetch_b = [&]() {
      if (b_kfast) g::fetch<BN, true>(rb, sb, pb, step_b, rows_b, kl);
      else g::fetch<BN, false>(rb, sb, pb, step_b, rows_b, kl);
    };
    auto stage = [&](int buf) {
      if (a_kfast) g::stage<BM, true>(As[buf], ra, sa);
      else g::stage<BM, false>(As[buf], ra, sa);
      if (b_kfast) g::stage<BN, true>(Bs[buf], rb, sb);
      else g::stage<BN, false>(Bs[buf], rb, sb);
    };

    A acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = A(0);
    if (ktiles > 0) {
      fetch_a();
      fetch_b();
      stage(0);
    }
    __syncthreads();
    for (Index kt = 0; kt < ktiles; ++kt) {
      const int cur = static_cast<int>(kt & 1);
      const bool more = kt + 1 < ktiles;
      if (more) {  // the next slice, half before the first k and half after the middle one
        pa += BK * sak;
        pb += BK * sbk;
        kleft -= BK;
        kl = static_cast<int>(min(kleft, Index(BK)));
        fetch_a();
      }
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k == BK / 2 && more) fetch_b();
        A fa[TM], fb[TN];
#pragma unroll
        for (int i = 0; i < GM; ++i) g::load4(fa + 4 * i, &As[cur][k][i * (BM / GM) + ty * 4]);
#pragma unroll
        for (int j = 0; j < GN; ++j) g::load4(fb + 4 * j, &Bs[cur][k][j * (BN / GN) + tx * 4]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] += fa[i] * fb[j];
      }
      if (more) stage(cur ^ 1);
      __syncthreads();
    }

    // this thread's results: rows (columns) in groups of four, BM / GM (BN / GN) apart
    T* pc = c + base.c + (at.m0 + ty * 4) * scm + (at.n0 + tx * 4) * scn;
    const Index rows_left = M - at.m0 - ty * 4, cols_left = N - at.n0 - tx * 4;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int r = (i / 4) * (BM / GM) + i % 4;
      if (r >= rows_left) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int col = (j / 4) * (BN / GN) + j % 4;
        if (col < cols_left) pc[r * scm + col * scn] = tl::cast<T>(acc[i][j]);
      }
    }
  }
}

template <typename T, typename Index>
__global__ void __launch_bounds__(256) gemm_small(TL_GEMM_PARAMS) {
  namespace g = tl::gemm;
  using A = typename g::Acc<T>::type;
  constexpr int S = g::kSmall;
  __shared__ A As[S][S + 1];  // As[k][m]
  __shared__ A Bs[S][S + 1];  // Bs[k][n]
  const int tx = threadIdx.x % S, ty = threadIdx.x / S;
  const int am = a_kfast ? ty : tx, ak = a_kfast ? tx : ty;
  const int bn = b_kfast ? ty : tx, bk = b_kfast ? tx : ty;
  const Index tiles = batch * ((M + S - 1) / S) * ((N + S - 1) / S);

  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    const g::TileAt<Index> at = g::tile_at<S, S>(t, M, N);
    const g::Bases<Index> base = g::bases_of(at.z, batch_a, batch_b, batch_c);
    const bool aok = at.m0 + am < M, bok = at.n0 + bn < N;
    const T* pa = a + base.a + (aok ? (at.m0 + am) * sam + ak * sak : 0);
    const T* pb = b + base.b + (bok ? bk * sbk + (at.n0 + bn) * sbn : 0);
    A acc = A(0);
    for (Index k0 = 0; k0 < K; k0 += S) {
      As[ak][am] = (aok && k0 + ak < K) ? g::to_acc<A>(pa[k0 * sak]) : A(0);
      Bs[bk][bn] = (bok && k0 + bk < K) ? g::to_acc<A>(pb[k0 * sbk]) : A(0);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < S; ++k) acc += As[k][ty] * Bs[k][tx];
      __syncthreads();
    }
    const Index row = at.m0 + ty, col = at.n0 + tx;
    if (row < M && col < N) c[base.c + row * scm + col * scn] = tl::cast<T>(acc);
  }
}

#undef TL_GEMM_PARAMS
