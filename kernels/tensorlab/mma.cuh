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

// Fragments from a row-major shared-memory matrix s with row pitch ld (elements; even, so that the
// column pairs are 4-byte aligned):
//   a_rows:  A[m][k] = s[(m0 + m) * ld + k0 + k]
//   b_cols:  B[k][n] = s[(n0 + n) * ld + k0 + k]   (s holds B^T: K for Q K^T)
//   b_rows:  B[k][n] = s[(k0 + k) * ld + n0 + n]   (s holds B: V for P V)
template <typename T>
__device__ __forceinline__ unsigned int pair_at(const T* p) {
  return *reinterpret_cast<const unsigned int*>(p);
}
template <typename T>
__device__ __forceinline__ FragA a_rows(const T* s, int ld, int m0, int k0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const T* r0 = s + (m0 + g) * ld + k0 + c;
  const T* r1 = r0 + 8 * ld;
  return FragA{{pair_at(r0), pair_at(r1), pair_at(r0 + 8), pair_at(r1 + 8)}};
}
template <typename T>
__device__ __forceinline__ FragB b_cols(const T* s, int ld, int n0, int k0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const T* p = s + (n0 + g) * ld + k0 + c;
  return FragB{{pair_at(p), pair_at(p + 8)}};
}
template <typename T>
__device__ __forceinline__ FragB b_rows(const T* s, int ld, int k0, int n0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const T* p = s + (k0 + c) * ld + n0 + g;
  return FragB{{pack2(p[0], p[ld]), pack2(p[8 * ld], p[9 * ld])}};
}

}  // namespace tl
