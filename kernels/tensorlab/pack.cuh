// Vector memory access for the contiguous kernels (elementwise.cu, copy.cu): N elements of T moved
// as one aligned word of N * sizeof(T) bytes (16 at most: one ld/st.global.v4.b32 for 16 bytes).
// The launcher checks each pointer against its pack width and passes packs = 0 when one is not
// aligned, so the kernels never test alignment themselves.
#pragma once
#include "common.cuh"

namespace tl {

// One register-sized word per access width; structs of 32-bit lanes so NVRTC emits .v4/.v2 b32
// accesses and the emulation (no CUDA vector types) compiles them too.
template <int Bytes> struct Word;
template <> struct alignas(16) Word<16> { unsigned x, y, z, w; };
template <> struct alignas(8) Word<8> { unsigned x, y; };
template <> struct Word<4> { unsigned x; };
template <> struct Word<2> { unsigned short x; };
template <> struct Word<1> { unsigned char x; };

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Elements per pack when every operand of a kernel moves the same count per step: 16 bytes of the
// widest operand type (8 halves, 4 floats, 2 doubles, 16 bools/int8s; narrower operands move less).
template <typename T, typename... R>
struct Widest {
  static constexpr int value = static_cast<int>(sizeof(T)) > Widest<R...>::value ? static_cast<int>(sizeof(T))
                                                                                  : Widest<R...>::value;
};
template <typename T>
struct Widest<T> {
  static constexpr int value = static_cast<int>(sizeof(T));
};
template <typename... Ts>
struct Lanes {
  static constexpr int value = 16 / Widest<Ts...>::value;
};

template <int N, typename T, typename Index>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p, Index k) {
  static_assert(sizeof(Pack<T, N>) == sizeof(Word<sizeof(T) * N>), "pack and word differ in size");
  const Word<sizeof(T) * N> w = reinterpret_cast<const Word<sizeof(T) * N>*>(p)[k];
  Pack<T, N> r;
  memcpy(&r, &w, sizeof(w));
  return r;
}

template <int N, typename T, typename Index>
__device__ __forceinline__ void store_pack(T* p, Index k, const Pack<T, N>& v) {
  Word<sizeof(T) * N> w;
  memcpy(&w, &v, sizeof(w));
  reinterpret_cast<Word<sizeof(T) * N>*>(p)[k] = w;
}

}  // namespace tl
