// Warp-level matrix multiply-accumulate on tensor cores: D = A B + D for one 16x16 A (row major) by
// 16x8 B (column major) product of 16-bit values (float16 or bfloat16) with float accumulators,
// the PTX instruction mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (sm_80+).
//
// Fragments (PTX ISA, "matrix fragments for mma.m16n8k16"): lane l of the warp, g = l / 4,
// c = 2 * (l % 4); each 32-bit register holds two 16-bit values, the lower column (or k) in the
// low half:
//   A   x[0] = (row g, cols c, c+1)    x[1] = (row g+8, cols c, c+1)
//       x[2] = (row g, cols c+8, c+9)  x[3] = (row g+8, cols c+8, c+9)
//   B   x[0] = (k c, c+1; col g)       x[1] = (k c+8, c+9; col g)
//   C   x[0], x[1] = (row g, cols c, c+1)   x[2], x[3] = (row g+8, cols c, c+1)
// so two C tiles side by side (cols 0..7 and 8..15), rounded to 16 bits, are the A fragment of the
// next product (c_to_a): attention's probabilities never leave registers.
//
// The emulation driver (TL_EMULATION) runs the instruction as an exchange of the 32 lanes'
// fragments at a warp barrier (include/tl_emu_mma.h); before sm_80, which lacks m16n8k16, the lanes
// exchange the fragments with shuffles (same result, summed in another order; TL_MMA_BY_SHUFFLES
// selects that path anywhere, so the tests run it under the emulation).
#pragma once
#include "tensorlab/cast.cuh"

namespace tl {

struct FragA {
  unsigned int x[4];
};
struct FragB {
  unsigned int x[2];
};
struct FragC {
  float x[4];
};

template <typename T>
struct Mma16;
template <>
struct Mma16<__half> {
  static constexpr bool kBf16 = false;
  __device__ __forceinline__ static unsigned int bits(__half v) { return __half_as_ushort(v); }
  __device__ __forceinline__ static float value(unsigned int b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
};
template <>
struct Mma16<__nv_bfloat16> {
  static constexpr bool kBf16 = true;
  __device__ __forceinline__ static unsigned int bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
  __device__ __forceinline__ static float value(unsigned int b) {
    return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
  }
};

// Two 16-bit values as one register (lo in the low half).
template <typename T>
__device__ __forceinline__ unsigned int pack2(T lo, T hi) {
  return Mma16<T>::bits(lo) | (Mma16<T>::bits(hi) << 16);
}
template <typename T>
__device__ __forceinline__ unsigned int pack2f(float lo, float hi) {
  return pack2<T>(cast<T>(lo), cast<T>(hi));
}

// The A fragment of the 16 x 16 block made of two accumulator tiles (columns 0..7, 8..15).
template <typename T>
__device__ __forceinline__ FragA c_to_a(const FragC& lo, const FragC& hi) {
  return FragA{{pack2f<T>(lo.x[0], lo.x[1]), pack2f<T>(lo.x[2], lo.x[3]), pack2f<T>(hi.x[0], hi.x[1]),
                pack2f<T>(hi.x[2], hi.x[3])}};
}

#if defined(TL_MMA_BY_SHUFFLES) || (!defined(TL_EMULATION) && __CUDA_ARCH__ < 800)
#define TL_MMA_SHUFFLE_PATH 1
// d += a b with the other lanes' fragments fetched by shuffles: lane 4r + q holds row r's columns
// 2q, 2q+1 (x[0]) and 2q+8, 2q+9 (x[2]) of A (row r+8 in x[1], x[3]) and column r's k = 2q, 2q+1
// (x[0]) and 2q+8, 2q+9 (x[1]) of B.
template <typename T>
__device__ __forceinline__ void mma_by_shuffles(FragC& d, const FragA& a, const FragB& b) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  for (int q = 0; q < 4; ++q) {
    unsigned int ar[4], b0[2], b1[2];
#pragma unroll
    for (int r = 0; r < 4; ++r) ar[r] = __shfl_sync(0xffffffffu, a.x[r], 4 * g + q);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      b0[r] = __shfl_sync(0xffffffffu, b.x[r], 4 * c + q);
      b1[r] = __shfl_sync(0xffffffffu, b.x[r], 4 * (c + 1) + q);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // k = 2q + h + 8 * half
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int sh = 16 * h;
        const float x0 = Mma16<T>::value((ar[2 * half] >> sh) & 0xffffu);      // row g
        const float x1 = Mma16<T>::value((ar[2 * half + 1] >> sh) & 0xffffu);  // row g + 8
        const float y0 = Mma16<T>::value((b0[half] >> sh) & 0xffffu);          // col c
        const float y1 = Mma16<T>::value((b1[half] >> sh) & 0xffffu);          // col c + 1
        d.x[0] += x0 * y0;
        d.x[1] += x0 * y1;
        d.x[2] += x1 * y0;
        d.x[3] += x1 * y1;
      }
    }
  }
}
#endif

// d += a b (every lane of the warp must take part).
template <typename T>
__device__ __forceinline__ void mma16816(FragC& d, const FragA& a, const FragB& b) {
#if defined(TL_MMA_SHUFFLE_PATH)
  mma_by_shuffles<T>(d, a, b);
#elif defined(TL_EMULATION)
  tl_emu_mma_m16n8k16(d.x, a.x, b.x, Mma16<T>::kBf16);
#elif __CUDA_ARCH__ >= 800
  if constexpr (Mma16<T>::kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
  }
#endif
}

// Fragments from a row-major shared-memory matrix s with row pitch ld (elements; a multiple of 8 and
// s 16-byte aligned, so that every 8-element row segment is one 16-byte line):
//   a_rows:  A[m][k] = s[(m0 + m) * ld + k0 + k]
//   b_cols:  B[k][n] = s[(n0 + n) * ld + k0 + k]   (s holds B^T: K for Q K^T)
//   b_rows:  B[k][n] = s[(k0 + k) * ld + n0 + n]   (s holds B: V for P V)
// b_cols2 / b_rows2: the B fragments of columns n0..n0+7 and n0+8..n0+15 in one load.
// From sm_80 (and in the emulation) they are ldmatrix.sync.aligned.m8n8 loads: lane l names the
// row (l % 8) of 8 x 8 matrix l / 8 (16 bytes) and receives, from each matrix, the 32-bit word of
// row l / 4, columns 2 (l % 4), +1 (.trans: of column l / 4, rows 2 (l % 4), +1) -- exactly the
// fragment layout of mma.m16n8k16, one shared-memory instruction per 1 (x2) or 2 (x4) fragments
// where the plain loads took 2 (b_cols) or 4 (b_rows, two 16-bit loads per register) per fragment.
// The shuffle path (before sm_80, or TL_MMA_BY_SHUFFLES) keeps the plain loads.
template <typename T>
__device__ __forceinline__ unsigned int pair_at(const T* p) {
  return *reinterpret_cast<const unsigned int*>(p);
}

#if !defined(TL_MMA_SHUFFLE_PATH)
#define TL_MMA_LDMATRIX 1
// N (2 or 4) 8 x 8 matrices of 16-bit values; `row` is this lane's row address (lanes 0..8 N - 1
// are read; the others pass any valid address).
template <int N, bool Trans>
__device__ __forceinline__ void ldmatrix(unsigned int (&r)[N], const void* row) {
  static_assert(N == 2 || N == 4, "ldmatrix .x2 or .x4");
#if defined(TL_EMULATION)
  tl_emu_ldmatrix(r, row, N, Trans);
#else
  const unsigned int a = static_cast<unsigned int>(__cvta_generic_to_shared(row));
  if constexpr (N == 4 && Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (N == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
#endif
}
#endif

template <typename T>
__device__ __forceinline__ FragA a_rows(const T* s, int ld, int m0, int k0) {
  const int lane = threadIdx.x & 31;
#if defined(TL_MMA_LDMATRIX)
  // matrices: rows 0..7 | 8..15 (lane bit 3) x columns k0 | k0 + 8 (lane bit 4) = x[0..3]
  FragA f;
  ldmatrix<4, false>(f.x, s + (m0 + (lane & 15)) * ld + k0 + 8 * (lane >> 4));
  return f;
#else
  const int g = lane >> 2, c = 2 * (lane & 3);
  const T* r0 = s + (m0 + g) * ld + k0 + c;
  const T* r1 = r0 + 8 * ld;
  return FragA{{pair_at(r0), pair_at(r1), pair_at(r0 + 8), pair_at(r1 + 8)}};
#endif
}
template <typename T>
__device__ __forceinline__ FragB b_cols(const T* s, int ld, int n0, int k0) {
  const int lane = threadIdx.x & 31;
#if defined(TL_MMA_LDMATRIX)
  FragB f;
  ldmatrix<2, false>(f.x, s + (n0 + (lane & 7)) * ld + k0 + 8 * ((lane >> 3) & 1));
  return f;
#else
  const int g = lane >> 2, c = 2 * (lane & 3);
  const T* p = s + (n0 + g) * ld + k0 + c;
  return FragB{{pair_at(p), pair_at(p + 8)}};
#endif
}
template <typename T>
__device__ __forceinline__ FragB b_rows(const T* s, int ld, int k0, int n0) {
  const int lane = threadIdx.x & 31;
#if defined(TL_MMA_LDMATRIX)
  FragB f;
  ldmatrix<2, true>(f.x, s + (k0 + (lane & 15)) * ld + n0);
  return f;
#else
  const int g = lane >> 2, c = 2 * (lane & 3);
  const T* p = s + (k0 + c) * ld + n0 + g;
  return FragB{{pack2(p[0], p[ld]), pack2(p[8 * ld], p[9 * ld])}};
#endif
}
template <typename T>
__device__ __forceinline__ void b_cols2(FragB (&f)[2], const T* s, int ld, int n0, int k0) {
#if defined(TL_MMA_LDMATRIX)
  // matrices: k0 | k0 + 8 (lane bit 3) x columns n0 | n0 + 8 (lane bit 4)
  const int lane = threadIdx.x & 31;
  unsigned int r[4];
  ldmatrix<4, false>(r, s + (n0 + (lane & 7) + 8 * (lane >> 4)) * ld + k0 + 8 * ((lane >> 3) & 1));
  f[0] = FragB{{r[0], r[1]}};
  f[1] = FragB{{r[2], r[3]}};
#else
  f[0] = b_cols(s, ld, n0, k0);
  f[1] = b_cols(s, ld, n0 + 8, k0);
#endif
}
template <typename T>
__device__ __forceinline__ void b_rows2(FragB (&f)[2], const T* s, int ld, int k0, int n0) {
#if defined(TL_MMA_LDMATRIX)
  // matrices: rows k0 | k0 + 8 (lane bit 3) x columns n0 | n0 + 8 (lane bit 4), transposed
  const int lane = threadIdx.x & 31;
  unsigned int r[4];
  ldmatrix<4, true>(r, s + (k0 + (lane & 15)) * ld + n0 + 8 * (lane >> 4));
  f[0] = FragB{{r[0], r[1]}};
  f[1] = FragB{{r[2], r[3]}};
#else
  f[0] = b_rows(s, ld, k0, n0);
  f[1] = b_rows(s, ld, k0, n0 + 8);
#endif
}

}  // namespace tl
