// Complex numbers on the device: tl::complex<T> (T float or double) laid out as NumPy's and torch's
// complex64/complex128 (real part, then imaginary part; aligned to its size), with the arithmetic
// and the elementary functions of the elementwise ops tensorlab runs on complex tensors
// (backends/cuda/complex.py). One functor per kernel name, in namespace tl::cop:
//   static R f(complex<T> a[, complex<T> b]) with R complex<T>, T (abs) or bool (predicates).
// Formulas follow NumPy's npymath (the CPU backend): Smith's division, the branch cuts of log/sqrt.
#pragma once
#include "functors.cuh"

namespace tl {

template <typename T>
struct alignas(2 * sizeof(T)) complex {
  T re, im;
};

namespace cm {  // float and double overloads beside tl::m's
__device__ __forceinline__ float hypot(float a, float b) { return ::hypotf(a, b); }
__device__ __forceinline__ double hypot(double a, double b) { return ::hypot(a, b); }
__device__ __forceinline__ float sinh(float a) { return ::sinhf(a); }
__device__ __forceinline__ double sinh(double a) { return ::sinh(a); }
__device__ __forceinline__ float cosh(float a) { return ::coshf(a); }
__device__ __forceinline__ double cosh(double a) { return ::cosh(a); }
__device__ __forceinline__ bool isinf_(float a) { return a == __int_as_float(0x7f800000) || a == -__int_as_float(0x7f800000); }
__device__ __forceinline__ bool isinf_(double a) {
  return a == __longlong_as_double(0x7ff0000000000000LL) || a == -__longlong_as_double(0x7ff0000000000000LL);
}
}  // namespace cm

template <typename T> __device__ __forceinline__ complex<T> cx(T re, T im) { return complex<T>{re, im}; }
template <typename T> __device__ __forceinline__ complex<T> cadd(complex<T> a, complex<T> b) {
  return cx(a.re + b.re, a.im + b.im);
}
template <typename T> __device__ __forceinline__ complex<T> csub(complex<T> a, complex<T> b) {
  return cx(a.re - b.re, a.im - b.im);
}
template <typename T> __device__ __forceinline__ complex<T> cmul(complex<T> a, complex<T> b) {
  return cx(m::mul_rn(a.re, b.re) - m::mul_rn(a.im, b.im), m::mul_rn(a.re, b.im) + m::mul_rn(a.im, b.re));
}
template <typename T> __device__ __forceinline__ complex<T> cdiv(complex<T> a, complex<T> b) {
  // Smith's algorithm (NumPy's), scaling by the larger part of b
  const T abr = m::fabs(b.re), abi = m::fabs(b.im);
  if (abr >= abi) {
    if (abr == T(0) && abi == T(0)) return cx(a.re / abr, a.im / abi);
    const T rat = b.im / b.re, scl = T(1) / (b.re + b.im * rat);
    return cx((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  const T rat = b.re / b.im, scl = T(1) / (b.im + b.re * rat);
  return cx((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
template <typename T> __device__ __forceinline__ T cabs(complex<T> a) { return cm::hypot(a.re, a.im); }
template <typename T> __device__ __forceinline__ complex<T> cexp(complex<T> a) {
  if (a.im == T(0)) return cx(m::exp(a.re), a.im);
  const T e = m::exp(a.re);
  return cx(e * m::cos(a.im), e * m::sin(a.im));
}
template <typename T> __device__ __forceinline__ complex<T> clog(complex<T> a) {
  return cx(m::log(cabs(a)), m::atan2(a.im, a.re));
}
template <typename T> __device__ __forceinline__ complex<T> csqrt(complex<T> a) {
  if (a.re == T(0) && a.im == T(0)) return cx(T(0), a.im);
  if (cm::isinf_(a.im)) return cx(m::inf(a.re), a.im);
  const T t = m::sqrt((m::fabs(a.re) + cabs(a)) * T(0.5));
  if (a.re >= T(0)) return cx(t, a.im / (T(2) * t));
  return cx(m::fabs(a.im) / (T(2) * t), m::copysign(t, a.im));
}
template <typename T> __device__ __forceinline__ complex<T> csin(complex<T> a) {
  return cx(m::sin(a.re) * cm::cosh(a.im), m::cos(a.re) * cm::sinh(a.im));
}
template <typename T> __device__ __forceinline__ complex<T> ccos(complex<T> a) {
  return cx(m::cos(a.re) * cm::cosh(a.im), -(m::sin(a.re) * cm::sinh(a.im)));
}
template <typename T> __device__ __forceinline__ complex<T> ctanh(complex<T> a) {
  // (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); for large |x| the limit +-1 (no inf/inf)
  if (m::fabs(a.re) > T(20)) return cx(m::copysign(T(1), a.re), m::copysign(T(0), m::sin(T(2) * a.im)));
  const T d = cm::cosh(T(2) * a.re) + m::cos(T(2) * a.im);
  return cx(cm::sinh(T(2) * a.re) / d, m::sin(T(2) * a.im) / d);
}
template <typename T> __device__ __forceinline__ complex<T> cpow(complex<T> a, complex<T> b) {
  if (b.re == T(0) && b.im == T(0)) return cx(T(1), T(0));
  if (a.re == T(0) && a.im == T(0)) {
    if (b.re > T(0)) return cx(T(0), T(0));  // NumPy's and torch's 0 ** z for Re z > 0
    const T nan = m::inf(a.re) - m::inf(a.re);
    return cx(nan, nan);
  }
  if (b.im == T(0) && b.re == T(1)) return a;
  if (b.im == T(0) && b.re == T(2)) return cmul(a, a);
  return cexp(cmul(b, clog(a)));
}
template <typename T> __device__ __forceinline__ bool cnonzero(complex<T> a) { return a.re != T(0) || a.im != T(0); }
template <typename T> __device__ __forceinline__ complex<T> cone() { return cx(T(1), T(0)); }

namespace cop {
#define TL_CUNARY(Name, expr) \
  struct Name {               \
    template <typename T>     \
    __device__ __forceinline__ static auto f(complex<T> a) { return expr; } \
  };
#define TL_CBINARY(Name, expr) \
  struct Name {                \
    template <typename T>      \
    __device__ __forceinline__ static auto f(complex<T> a, complex<T> b) { return expr; } \
  };
TL_CUNARY(Neg, cx(-a.re, -a.im))
TL_CUNARY(Abs, cabs(a))
TL_CUNARY(Exp, cexp(a))
TL_CUNARY(Exp2, cexp(cmul(a, cx(T(0.69314718055994530942), T(0)))))
TL_CUNARY(Expm1, csub(cexp(a), cone<T>()))
TL_CUNARY(Log, clog(a))
TL_CUNARY(Log2, cmul(clog(a), cx(T(1.44269504088896340736), T(0))))
TL_CUNARY(Log10, cmul(clog(a), cx(T(0.43429448190325182765), T(0))))
TL_CUNARY(Log1p, clog(cadd(a, cone<T>())))
TL_CUNARY(Sqrt, csqrt(a))
TL_CUNARY(Rsqrt, cdiv(cone<T>(), csqrt(a)))
TL_CUNARY(Square, cmul(a, a))
TL_CUNARY(Reciprocal, cdiv(cone<T>(), a))
TL_CUNARY(Sin, csin(a))
TL_CUNARY(Cos, ccos(a))
// tan z = -i tanh(i z)
TL_CUNARY(Tan, ([&] { const complex<T> t = ctanh(cx(-a.im, a.re)); return cx(t.im, -t.re); }()))
TL_CUNARY(Tanh, ctanh(a))
TL_CUNARY(Sigmoid, cdiv(cone<T>(), cadd(cexp(cx(-a.re, -a.im)), cone<T>())))
TL_CUNARY(IsNan, (a.re != a.re || a.im != a.im))
TL_CUNARY(IsInf, (cm::isinf_(a.re) || cm::isinf_(a.im)))
TL_CUNARY(IsFinite, (!(a.re != a.re || a.im != a.im) && !cm::isinf_(a.re) && !cm::isinf_(a.im)))
TL_CUNARY(LogicalNot, !cnonzero(a))
TL_CBINARY(Add, cadd(a, b))
TL_CBINARY(Sub, csub(a, b))
TL_CBINARY(Mul, cmul(a, b))
TL_CBINARY(Div, cdiv(a, b))
TL_CBINARY(Pow, cpow(a, b))
TL_CBINARY(Eq, (a.re == b.re && a.im == b.im))
TL_CBINARY(Ne, (a.re != b.re || a.im != b.im))
TL_CBINARY(LogicalAnd, (cnonzero(a) && cnonzero(b)))
TL_CBINARY(LogicalOr, (cnonzero(a) || cnonzero(b)))
TL_CBINARY(LogicalXor, (cnonzero(a) != cnonzero(b)))
#undef TL_CUNARY
#undef TL_CBINARY
}  // namespace cop

}  // namespace tl
