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


// float64 data in kernels that compute in float or bool (the runtime-dtype kernels of dtype_code.cuh, when an
// operand or out= is float64: a 0-dim float64 tensor beside float32, out= of another dtype): the conversions
// by integer operations on the bit patterns, so those kernels carry no FP64 instruction (issue 37 item 4).
// Both are exact where the value fits and round half to even as cvt.rn does (double -> float: overflow to
// +-inf, underflow to float's subnormals or +-0); NaN stays NaN (quiet, sign kept).
__device__ inline float f32_from_f64_bits(unsigned long long b) {
  const unsigned sign = unsigned(b >> 32) & 0x80000000u;
  const int exp = int(b >> 52) & 0x7ff;
  const unsigned long long mant = b & 0xfffffffffffffull;
  if (exp == 0x7ff) return __uint_as_float(sign | 0x7f800000u | (mant ? 0x400000u | unsigned(mant >> 29) : 0u));
  if (exp == 0) return __uint_as_float(sign);  // a float64 subnormal is below half of float's smallest
  const int e = exp - 1023 + 127;               // float's biased exponent
  if (e >= 255) return __uint_as_float(sign | 0x7f800000u);
  const unsigned long long m = mant | (1ull << 52);  // 53 significant bits
  // keep 24 bits (normal result) or fewer (subnormal: 1 - e more shifted out), round half to even
  const int shift = e >= 1 ? 29 : 30 - e;
  if (shift >= 64) return __uint_as_float(sign);
  unsigned long long r = m >> shift;
  const unsigned long long rest = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  r += rest > half || (rest == half && (r & 1));
  // normal: (e - 1) << 23 plus r (its implicit bit adds the last 1 << 23; a carry to 2^24 steps the exponent,
  // to +-inf at the top); subnormal: r itself (a carry to 2^23 is the smallest normal)
  const unsigned bits = e >= 1 ? (unsigned(e - 1) << 23) + unsigned(r) : unsigned(r);
  return __uint_as_float(sign | bits);
}
__device__ inline unsigned long long f64_bits_from_f32(float v) {
  const unsigned b = __float_as_uint(v);
  const unsigned long long sign = (unsigned long long)(b & 0x80000000u) << 32;
  const int exp = int(b >> 23) & 0xff;
  const unsigned long long mant = b & 0x7fffffu;
  if (exp == 0xff) return sign | (0x7ffull << 52) | (mant << 29);
  if (exp == 0) {
    if (mant == 0) return sign;
    const int top = 31 - __clz(int(mant));  // subnormal: mant 2^-149 = 1.f 2^(top - 149)
    return sign | ((unsigned long long)(top - 149 + 1023) << 52) | ((mant << (52 - top)) & 0xfffffffffffffull);
  }
  return sign | ((unsigned long long)(exp - 127 + 1023) << 52) | (mant << 29);
}
// A float64 element (its bits) as compute type C, and a value of type V as float64 bits: float and bool by the
// integer conversions above, the rest (double, integers) through cast.
__device__ __forceinline__ float from_f64_bits(unsigned long long b, float) { return f32_from_f64_bits(b); }
__device__ __forceinline__ bool from_f64_bits(unsigned long long b, bool) { return (b << 1) != 0; }  // != 0, NaN true
template <typename C>
__device__ __forceinline__ C from_f64_bits(unsigned long long b, C) {
  return cast<C>(__longlong_as_double((long long)b));
}
__device__ __forceinline__ unsigned long long to_f64_bits(float v) { return f64_bits_from_f32(v); }
__device__ __forceinline__ unsigned long long to_f64_bits(bool v) { return v ? 0x3ff0000000000000ull : 0ull; }
template <typename V>
__device__ __forceinline__ unsigned long long to_f64_bits(V v) {
  return (unsigned long long)__double_as_longlong(cast<double>(v));
}

}  // namespace tl
