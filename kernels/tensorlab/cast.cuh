// tl::cast<To>(from): element conversion with the CPU backend's semantics (NumPy / ml_dtypes), so a
// copy or a computed value is the same on both devices:
// - to bool: value != 0 (NaN is true);
// - floating -> integer: truncate toward zero through long long, then wrap to the narrower type
//   (what NumPy does on x86, and what torch does for float -> uint8);
// - double -> half: rounded once (NumPy); double -> bfloat16: through float (ml_dtypes);
// - half/bfloat16 -> anything: through float (exact).
#pragma once
#include "common.cuh"

namespace tl {

__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T widen(T v) { return v; }

template <typename To>
struct Converter {  // To is an integral type
  template <typename From>
  __device__ __forceinline__ static To from(From v) { return static_cast<To>(v); }
  __device__ __forceinline__ static To from(float v) { return static_cast<To>(static_cast<long long>(v)); }
  __device__ __forceinline__ static To from(double v) { return static_cast<To>(static_cast<long long>(v)); }
  __device__ __forceinline__ static To from(__half v) { return from(__half2float(v)); }
  __device__ __forceinline__ static To from(__nv_bfloat16 v) { return from(__bfloat162float(v)); }
};

template <>
struct Converter<bool> {
  template <typename From>
  __device__ __forceinline__ static bool from(From v) { return widen(v) != 0; }
};

template <>
struct Converter<float> {
  template <typename From>
  __device__ __forceinline__ static float from(From v) { return static_cast<float>(widen(v)); }
};

template <>
struct Converter<double> {
  template <typename From>
  __device__ __forceinline__ static double from(From v) { return static_cast<double>(widen(v)); }
};

template <>
struct Converter<__half> {
  template <typename From>
  __device__ __forceinline__ static __half from(From v) { return __float2half(static_cast<float>(widen(v))); }
  __device__ __forceinline__ static __half from(double v) { return __double2half(v); }
  __device__ __forceinline__ static __half from(__half v) { return v; }
};

template <>
struct Converter<__nv_bfloat16> {
  template <typename From>
  __device__ __forceinline__ static __nv_bfloat16 from(From v) {
    return __float2bfloat16(static_cast<float>(widen(v)));
  }
  __device__ __forceinline__ static __nv_bfloat16 from(__nv_bfloat16 v) { return v; }
};

template <typename To, typename From>
__device__ __forceinline__ To cast(From v) {
  return Converter<To>::from(v);
}

}  // namespace tl
