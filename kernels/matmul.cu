// matmul: C[z] = A[z] @ B[z] for every batch index z, over operands of any strides (transposed,
// broadcast batch dims with stride 0). The host views the batch dims as one coalesced index z and
// passes each operand's batch layout; M, N, K and the matrix strides are in elements.
//
// Accumulation: float for float/half/bfloat16 (each result rounded once), double for double, and
// unsigned long long for integers and bool: it wraps modulo 2**64, so the result cast back to T
// wraps exactly as torch's and NumPy's integer matmul do (with no signed-overflow UB), and a bool
// result is "any a[i, k] and b[k, j]" (outer() of bool tensors).
//
// gemm_tiled: the classic register-blocked SGEMM. A block of 256 threads computes a BMxBN tile
// (128x128 with 8x8 results per thread for float accumulators, 64x64 with 4x4 for 8-byte ones),
// stepping through K in slices of BK=8 staged in double-buffered shared memory: the next slice is
// fetched from global memory into registers while the current one is multiplied, so one barrier
// per slice suffices. Each thread's rows (and columns) are two groups of four, 64 apart, so its
// fragments are 16-byte shared-memory loads that a warp reads without bank conflicts.
// Global loads go through the strides; each thread's (row, k) share of a slice is chosen once per
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

// A thread's share of one operand's BK-deep slice: elements i = 0..L-1 at (row or column, k) =
// (mn + i * dmn, k + i * dk) of the tile. Keeping the share as a base and a step (rather than L
// offsets) is what keeps the big tile's registers under the 128 that two blocks per SM allow.
struct Share {
  int mn, k, dmn, dk;
};

// `kfast`: consecutive threads take consecutive k (the operand's k stride is 1), else consecutive
// rows/columns. W (BM or BN) divides the block size, so both are a base plus i times a step.
template <int W>
__device__ __forceinline__ Share share_of(int tid, int kfast) {
  if (kfast) return Share{tid / kBK, tid % kBK, kThreads / kBK, 0};
  return Share{tid % W, tid / W, 0, kThreads / W};
}

// The share of slice k0 from global memory (zero outside the matrix): p + off is the share's
// first element at k = 0, step the distance between its elements, rem the rows/columns left.
template <int L, typename A, typename T, typename Index>
__device__ __forceinline__ void fetch(A (&r)[L], const T* p, Index off, Index step, Share s, Index rem, Index k0,
                                      Index sk, Index K) {
  p += off + k0 * sk;
#pragma unroll
  for (int i = 0; i < L; ++i)
    r[i] = (s.mn + i * s.dmn < rem && k0 + s.k + i * s.dk < K) ? to_acc<A>(p[i * step]) : A(0);
}

// ...then into the shared slice t[k][row or column].
template <int L, int W, typename A>
__device__ __forceinline__ void stage(A (*t)[W], const A (&r)[L], Share s) {
#pragma unroll
  for (int i = 0; i < L; ++i) t[s.k + i * s.dk][s.mn + i * s.dmn] = r[i];
}

}  // namespace gemm
}  // namespace tl

#define TL_GEMM_PARAMS                                                                                  \
  T *__restrict__ c, const T *__restrict__ a, const T *__restrict__ b, Index M, Index N, Index K,      \
      Index sam, Index sak, Index sbk, Index sbn, Index scm, Index scn, Index batch,                   \
      tl::StridedLayout<Index> batch_a, tl::StridedLayout<Index> batch_b, tl::StridedLayout<Index> batch_c, \
      int a_kfast, int b_kfast

template <typename T, typename Index>
__global__ void __launch_bounds__(256, 2) gemm_tiled(TL_GEMM_PARAMS) {
  using A = typename tl::gemm::Acc<T>::type;
  using Cfg = tl::gemm::Tile<A>;
  constexpr int BM = Cfg::M, BN = Cfg::N, BK = tl::gemm::kBK, TM = Cfg::TM, TN = Cfg::TN;
  constexpr int GM = TM / 4, GN = TN / 4;  // groups of four rows / columns per thread
  constexpr int LA = BM * BK / tl::gemm::kThreads, LB = BK * BN / tl::gemm::kThreads;
  __shared__ __align__(16) A As[2][BK][BM + tl::gemm::kPad];  // As[k][m]
  __shared__ __align__(16) A Bs[2][BK][BN + tl::gemm::kPad];  // Bs[k][n]

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const tl::gemm::Share sa = tl::gemm::share_of<BM>(tid, a_kfast);
  const tl::gemm::Share sb = tl::gemm::share_of<BN>(tid, b_kfast);
  const Index step_a = sa.dmn * sam + sa.dk * sak, step_b = sb.dmn * sbn + sb.dk * sbk;
  const Index ktiles = (K + BK - 1) / BK;

  for (Index z = blockIdx.z; z < batch; z += gridDim.z) {
    const T* pa = a + tl::offset_of(z, batch_a);
    const T* pb = b + tl::offset_of(z, batch_b);
    T* pc = c + tl::offset_of(z, batch_c);
    for (Index m0 = static_cast<Index>(blockIdx.y) * BM; m0 < M; m0 += static_cast<Index>(gridDim.y) * BM) {
      for (Index n0 = static_cast<Index>(blockIdx.x) * BN; n0 < N; n0 += static_cast<Index>(gridDim.x) * BN) {
        const Index off_a = (m0 + sa.mn) * sam + sa.k * sak, off_b = (n0 + sb.mn) * sbn + sb.k * sbk;
        const Index rem_a = M - m0, rem_b = N - n0;
        A acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = A(0);
        A ra[LA], rb[LB];  // the slice in flight from global memory

        if (ktiles > 0) {
          tl::gemm::fetch(ra, pa, off_a, step_a, sa, rem_a, Index(0), sak, K);
          tl::gemm::fetch(rb, pb, off_b, step_b, sb, rem_b, Index(0), sbk, K);
          tl::gemm::stage(As[0], ra, sa);
          tl::gemm::stage(Bs[0], rb, sb);
        }
        __syncthreads();
        for (Index kt = 0; kt < ktiles; ++kt) {
          const int cur = static_cast<int>(kt & 1);
          const bool more = kt + 1 < ktiles;
          if (more) {
            tl::gemm::fetch(ra, pa, off_a, step_a, sa, rem_a, (kt + 1) * BK, sak, K);
            tl::gemm::fetch(rb, pb, off_b, step_b, sb, rem_b, (kt + 1) * BK, sbk, K);
          }
#pragma unroll
          for (int k = 0; k < BK; ++k) {
            A fa[TM], fb[TN];
#pragma unroll
            for (int g = 0; g < GM; ++g) tl::gemm::load4(fa + 4 * g, &As[cur][k][g * (BM / GM) + ty * 4]);
#pragma unroll
            for (int h = 0; h < GN; ++h) tl::gemm::load4(fb + 4 * h, &Bs[cur][k][h * (BN / GN) + tx * 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
              for (int j = 0; j < TN; ++j) acc[i][j] += fa[i] * fb[j];
          }
          if (more) {
            tl::gemm::stage(As[cur ^ 1], ra, sa);
            tl::gemm::stage(Bs[cur ^ 1], rb, sb);
          }
          __syncthreads();
        }

#pragma unroll
        for (int i = 0; i < TM; ++i) {
          const Index row = m0 + (i / 4) * (BM / GM) + ty * 4 + i % 4;
          if (row >= M) continue;
#pragma unroll
          for (int j = 0; j < TN; ++j) {
            const Index col = n0 + (j / 4) * (BN / GN) + tx * 4 + j % 4;
            if (col < N) pc[row * scm + col * scn] = tl::cast<T>(acc[i][j]);
          }
        }
      }
    }
  }
}

template <typename T, typename Index>
__global__ void __launch_bounds__(256) gemm_small(TL_GEMM_PARAMS) {
  using A = typename tl::gemm::Acc<T>::type;
  constexpr int S = tl::gemm::kSmall;
  __shared__ A As[S][S + 1];  // As[k][m]
  __shared__ A Bs[S][S + 1];  // Bs[k][n]
  const int tx = threadIdx.x % S, ty = threadIdx.x / S;
  const int am = a_kfast ? ty : tx, ak = a_kfast ? tx : ty;
  const int bn = b_kfast ? ty : tx, bk = b_kfast ? tx : ty;

  for (Index z = blockIdx.z; z < batch; z += gridDim.z) {
    const T* pa = a + tl::offset_of(z, batch_a);
    const T* pb = b + tl::offset_of(z, batch_b);
    T* pc = c + tl::offset_of(z, batch_c);
    for (Index m0 = static_cast<Index>(blockIdx.y) * S; m0 < M; m0 += static_cast<Index>(gridDim.y) * S) {
      for (Index n0 = static_cast<Index>(blockIdx.x) * S; n0 < N; n0 += static_cast<Index>(gridDim.x) * S) {
        const bool aok = m0 + am < M, bok = n0 + bn < N;
        const Index aoff = aok ? (m0 + am) * sam + ak * sak : 0;
        const Index boff = bok ? bk * sbk + (n0 + bn) * sbn : 0;
        A acc = A(0);
        for (Index k0 = 0; k0 < K; k0 += S) {
          As[ak][am] = (aok && k0 + ak < K) ? tl::gemm::to_acc<A>(pa[aoff + k0 * sak]) : A(0);
          Bs[bk][bn] = (bok && k0 + bk < K) ? tl::gemm::to_acc<A>(pb[boff + k0 * sbk]) : A(0);
          __syncthreads();
#pragma unroll
          for (int k = 0; k < S; ++k) acc += As[k][ty] * Bs[k][tx];
          __syncthreads();
        }
        const Index row = m0 + ty, col = n0 + tx;
        if (row < M && col < N) pc[row * scm + col * scn] = tl::cast<T>(acc);
      }
    }
  }
}

#undef TL_GEMM_PARAMS
