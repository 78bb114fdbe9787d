// __half and __nv_bfloat16 for the emulation: 16-bit storage types with the conversions and
// operators of CUDA 12's cuda_fp16.h / cuda_bf16.h (arithmetic through float, rounded back to
// nearest even). Conversions follow CUDA: float/double -> 16-bit rounds to nearest even,
// 16-bit -> integer truncates with saturation (NaN -> 0).
#pragma once
#include <climits>
#include <cmath>
#include <cstring>

struct __half;
struct __nv_bfloat16;

namespace tl_emu {
inline float h2f(unsigned short b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return float(h);
}
inline unsigned short f2h(float f) {
  _Float16 h = static_cast<_Float16>(f);  // libgcc rounds to nearest even
  unsigned short b;
  memcpy(&b, &h, 2);
  return b;
}
inline unsigned short d2h(double d) {  // directly, without rounding twice through float
  _Float16 h = static_cast<_Float16>(d);
  unsigned short b;
  memcpy(&b, &h, 2);
  return b;
}
inline float b2f(unsigned short b) {
  unsigned u = unsigned(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline unsigned short f2b(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  // canonical NaN, as CUDA
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
inline unsigned short d2b(double d) {  // round to odd into float, then to nearest even: one rounding
  float f = float(d);
  if (std::isfinite(d) && double(f) != d && std::isfinite(f)) {
    unsigned u;
    memcpy(&u, &f, 4);
    if (!(u & 1u)) {
      f = std::nextafter(f, double(f) < d ? INFINITY : -INFINITY);
    }
  }
  return f2b(f);
}
template <typename T>
inline T sat_trunc(float f, double lo, double hi) {  // float -> integer, round toward zero, saturating
  if (f != f) return T(0);
  double t = std::trunc(double(f));
  return t <= lo ? T(lo) : t >= hi ? T(hi) : T(t);
}
}  // namespace tl_emu

struct __half_raw {
  unsigned short x;
};
struct __nv_bfloat16_raw {
  unsigned short x;
};

#define TL_EMU_16BIT_CLASS(Name, Raw, Other, FromF, FromD, ToF)                                            \
  struct __attribute__((aligned(2))) Name {                                                          \
   protected:                                                                                        \
    unsigned short __x;                                                                             \
                                                                                                     \
   public:                                                                                           \
    Name() = default;                                                                                \
    constexpr Name(const Raw& r) : __x(r.x) {}                                                       \
    Name& operator=(const Raw& r) { __x = r.x; return *this; }                                       \
    operator Raw() const { return Raw{__x}; }                                                        \
    explicit Name(const Other o);                                                                    \
    Name(float f) : __x(FromF(f)) {}                                                                 \
    Name(double d) : __x(FromD(d)) {}                                                                \
    Name(short v) : __x(FromF(float(v))) {}                                                          \
    Name(unsigned short v) : __x(FromF(float(v))) {}                                                 \
    Name(int v) : __x(FromF(float(v))) {}                                                            \
    Name(unsigned int v) : __x(FromF(float(v))) {}                                                   \
    Name(long v) : __x(FromF(float(v))) {}                                                           \
    Name(unsigned long v) : __x(FromF(float(v))) {}                                                  \
    Name(long long v) : __x(FromF(float(v))) {}                                                      \
    Name(unsigned long long v) : __x(FromF(float(v))) {}                                             \
    Name& operator=(float f) { __x = FromF(f); return *this; }                                       \
    Name& operator=(double d) { __x = FromD(d); return *this; }                                      \
    Name& operator=(short v) { return *this = Name(v); }                                             \
    Name& operator=(unsigned short v) { return *this = Name(v); }                                    \
    Name& operator=(int v) { return *this = Name(v); }                                               \
    Name& operator=(unsigned int v) { return *this = Name(v); }                                      \
    Name& operator=(long long v) { return *this = Name(v); }                                         \
    Name& operator=(unsigned long long v) { return *this = Name(v); }                                \
    operator float() const { return ToF(__x); }                                                      \
    operator signed char() const { return tl_emu::sat_trunc<signed char>(ToF(__x), -128, 127); }     \
    operator unsigned char() const { return tl_emu::sat_trunc<unsigned char>(ToF(__x), 0, 255); }    \
    operator char() const { return tl_emu::sat_trunc<char>(ToF(__x), CHAR_MIN, CHAR_MAX); }          \
    operator short() const { return tl_emu::sat_trunc<short>(ToF(__x), -32768, 32767); }             \
    operator unsigned short() const { return tl_emu::sat_trunc<unsigned short>(ToF(__x), 0, 65535); } \
    operator int() const { return tl_emu::sat_trunc<int>(ToF(__x), -2147483648.0, 2147483647.0); }   \
    operator unsigned int() const { return tl_emu::sat_trunc<unsigned>(ToF(__x), 0, 4294967295.0); } \
    operator long() const { return tl_emu::sat_trunc<long>(ToF(__x), -9223372036854775808.0, 9223372036854775807.0); } \
    operator unsigned long() const { return tl_emu::sat_trunc<unsigned long>(ToF(__x), 0, 18446744073709551615.0); } \
    operator long long() const { return tl_emu::sat_trunc<long long>(ToF(__x), -9223372036854775808.0, 9223372036854775807.0); } \
    operator unsigned long long() const { return tl_emu::sat_trunc<unsigned long long>(ToF(__x), 0, 18446744073709551615.0); } \
    constexpr operator bool() const { return (__x & 0x7FFFu) != 0u; }                               \
  };

TL_EMU_16BIT_CLASS(__half, __half_raw, __nv_bfloat16, tl_emu::f2h, tl_emu::d2h, tl_emu::h2f)
TL_EMU_16BIT_CLASS(__nv_bfloat16, __nv_bfloat16_raw, __half, tl_emu::f2b, tl_emu::d2b, tl_emu::b2f)
#undef TL_EMU_16BIT_CLASS
inline __half::__half(const __nv_bfloat16 o) : __x(tl_emu::f2h(float(o))) {}
inline __nv_bfloat16::__nv_bfloat16(const __half o) : __x(tl_emu::f2b(float(o))) {}

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

struct __attribute__((aligned(4))) __half2 {
  __half x, y;
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;

// -- conversions ------------------------------------------------------------------------------------
inline __half __float2half(float f) { return __half_raw{tl_emu::f2h(f)}; }
inline __half __float2half_rn(float f) { return __float2half(f); }
inline __half __double2half(double d) { return __half_raw{tl_emu::d2h(d)}; }
inline float __half2float(__half h) { return float(h); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16_raw{tl_emu::f2b(f)}; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16_raw{tl_emu::d2b(d)}; }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline unsigned short __half_as_ushort(__half h) { return __half_raw(h).x; }
inline short __half_as_short(__half h) { return short(__half_raw(h).x); }
inline __half __ushort_as_half(unsigned short u) { return __half_raw{u}; }
inline __half __short_as_half(short s) { return __half_raw{(unsigned short)s}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return __nv_bfloat16_raw(h).x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return short(__nv_bfloat16_raw(h).x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16_raw{u}; }
inline __nv_bfloat16 __short_as_bfloat16(short s) { return __nv_bfloat16_raw{(unsigned short)s}; }
#define TL_EMU_INT_CONV(pfx, H, sfx, T)                                   \
  inline H __##sfx##2##pfx##_rn(T v) { return H(float(v)); }              \
  inline T __##pfx##2##sfx##_rz(H h) { return static_cast<T>(h); }
TL_EMU_INT_CONV(half, __half, short, short)
TL_EMU_INT_CONV(half, __half, ushort, unsigned short)
TL_EMU_INT_CONV(half, __half, int, int)
TL_EMU_INT_CONV(half, __half, uint, unsigned int)
TL_EMU_INT_CONV(half, __half, ll, long long)
TL_EMU_INT_CONV(half, __half, ull, unsigned long long)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, short, short)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, ushort, unsigned short)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, int, int)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, uint, unsigned int)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, ll, long long)
TL_EMU_INT_CONV(bfloat16, __nv_bfloat16, ull, unsigned long long)
#undef TL_EMU_INT_CONV
inline int __half2int_rn(__half h) { return int(nearbyintf(float(h))); }
inline signed char __half2char_rz(__half h) { return (signed char)h; }
inline unsigned char __half2uchar_rz(__half h) { return (unsigned char)h; }
inline __half __low2half(__half2 v) { return v.x; }
inline __half __high2half(__half2 v) { return v.y; }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half(a), __float2half(b)}; }
inline __half2 __float2half2_rn(float a) { return {__float2half(a), __float2half(a)}; }
inline float2 __half22float2(__half2 v) { return {float(v.x), float(v.y)}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 v) { return v.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 v) { return v.y; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 v) { return {float(v.x), float(v.y)}; }

// -- arithmetic, comparisons and math: computed in float, rounded once ------------------------------
#define TL_EMU_16BIT_OPS(H)                                                                            \
  inline H operator+(const H& a, const H& b) { return H(float(a) + float(b)); }                        \
  inline H operator-(const H& a, const H& b) { return H(float(a) - float(b)); }                        \
  inline H operator*(const H& a, const H& b) { return H(float(a) * float(b)); }                        \
  inline H operator/(const H& a, const H& b) { return H(float(a) / float(b)); }                        \
  inline H& operator+=(H& a, const H& b) { return a = a + b; }                                         \
  inline H& operator-=(H& a, const H& b) { return a = a - b; }                                         \
  inline H& operator*=(H& a, const H& b) { return a = a * b; }                                         \
  inline H& operator/=(H& a, const H& b) { return a = a / b; }                                         \
  inline H& operator++(H& a) { return a = H(float(a) + 1.0f); }                                        \
  inline H& operator--(H& a) { return a = H(float(a) - 1.0f); }                                        \
  inline H operator++(H& a, int) { H o = a; ++a; return o; }                                           \
  inline H operator--(H& a, int) { H o = a; --a; return o; }                                           \
  inline H operator+(const H& a) { return a; }                                                         \
  inline H operator-(const H& a) { return H(-float(a)); }                                              \
  inline bool operator==(const H& a, const H& b) { return float(a) == float(b); }                      \
  inline bool operator!=(const H& a, const H& b) { return float(a) != float(b); }                      \
  inline bool operator<(const H& a, const H& b) { return float(a) < float(b); }                        \
  inline bool operator>(const H& a, const H& b) { return float(a) > float(b); }                        \
  inline bool operator<=(const H& a, const H& b) { return float(a) <= float(b); }                      \
  inline bool operator>=(const H& a, const H& b) { return float(a) >= float(b); }                      \
  inline H __hadd(H a, H b) { return a + b; }                                                          \
  inline H __hsub(H a, H b) { return a - b; }                                                          \
  inline H __hmul(H a, H b) { return a * b; }                                                          \
  inline H __hdiv(H a, H b) { return a / b; }                                                          \
  inline H __hfma(H a, H b, H c) { return H(fmaf(float(a), float(b), float(c))); }                     \
  inline H __hneg(H a) { return -a; }                                                                  \
  inline H __habs(H a) { return H(fabsf(float(a))); }                                                  \
  inline bool __heq(H a, H b) { return a == b; }                                                       \
  inline bool __hne(H a, H b) { return a != b; }                                                       \
  inline bool __hlt(H a, H b) { return a < b; }                                                        \
  inline bool __hle(H a, H b) { return a <= b; }                                                       \
  inline bool __hgt(H a, H b) { return a > b; }                                                        \
  inline bool __hge(H a, H b) { return a >= b; }                                                       \
  inline bool __hisnan(H a) { return std::isnan(float(a)); }                                           \
  inline int __hisinf(H a) { float f = float(a); return std::isinf(f) ? (f < 0 ? -1 : 1) : 0; }       \
  inline H __hmax(H a, H b) { return H(fmaxf(float(a), float(b))); }                                   \
  inline H __hmin(H a, H b) { return H(fminf(float(a), float(b))); }                                   \
  inline H __hmax_nan(H a, H b) { return __hisnan(a) || __hisnan(b) ? H(NAN) : __hmax(a, b); }          \
  inline H __hmin_nan(H a, H b) { return __hisnan(a) || __hisnan(b) ? H(NAN) : __hmin(a, b); }          \
  inline H hsqrt(H a) { return H(sqrtf(float(a))); }                                                   \
  inline H hrsqrt(H a) { return H(1.0f / sqrtf(float(a))); }                                           \
  inline H hrcp(H a) { return H(1.0f / float(a)); }                                                    \
  inline H hexp(H a) { return H(expf(float(a))); }                                                     \
  inline H hexp2(H a) { return H(exp2f(float(a))); }                                                   \
  inline H hexp10(H a) { return H(powf(10.0f, float(a))); }                                            \
  inline H hlog(H a) { return H(logf(float(a))); }                                                     \
  inline H hlog2(H a) { return H(log2f(float(a))); }                                                   \
  inline H hlog10(H a) { return H(log10f(float(a))); }                                                 \
  inline H hsin(H a) { return H(sinf(float(a))); }                                                     \
  inline H hcos(H a) { return H(cosf(float(a))); }                                                     \
  inline H htanh(H a) { return H(tanhf(float(a))); }                                                   \
  inline H hceil(H a) { return H(ceilf(float(a))); }                                                   \
  inline H hfloor(H a) { return H(floorf(float(a))); }                                                 \
  inline H htrunc(H a) { return H(truncf(float(a))); }                                                 \
  inline H hrint(H a) { return H(nearbyintf(float(a))); }
TL_EMU_16BIT_OPS(__half)
TL_EMU_16BIT_OPS(__nv_bfloat16)
#undef TL_EMU_16BIT_OPS

inline __half atomicAdd(__half* a, __half v) {
  return tl_emu::atomic_update(a, [v](__half o) { return o + v; });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
  return tl_emu::atomic_update(a, [v](__nv_bfloat16 o) { return o + v; });
}
