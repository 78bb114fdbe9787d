// The special functions' device code (ops/special_functions.py), with the CPU backend's semantics
// (backends/cpu/special_math.py: SciPy in double, torch's conventions at poles and edges).
// Every function runs in the compute type: float for float16/bfloat16/float32 (special_float.cuh and CUDA's
// float math library: no FP64 instruction in a float kernel, issue 37), double for float64 (below: the
// double versions, which the CPU's float64 SciPy results match to ~1e-12). The orthogonal polynomials are
// templates on the compute type, as torch's recurrences are.
// CUDA's math library where it has the function (lgamma, erfc, erfinv, erfcx; j0, j1, y0, y1 for double); the rest
// from the textbook methods: recurrence + asymptotic (Bernoulli) series for digamma, Euler-Maclaurin
// summation for the Hurwitz zeta, power series / continued fraction (Lentz) for the incomplete gamma,
// power series + Hankel asymptotic expansions for I0/I1, series + the trapezoidal rule on
// K_nu(x) e^x = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt for K0/K1 and Airy Ai (x > 2, through
// K_1/3), Maclaurin series and the oscillatory asymptotic expansion for Ai elsewhere.
// Included by functors.cuh (after it defines Params); functors at the end, as tl::op structs.
#pragma once

#include "tensorlab/special_float.cuh"

namespace tl {
namespace sm {

__device__ __forceinline__ double d_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double d_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ bool d_isinf(double x) { return ::fabs(x) == d_inf(); }
__device__ __forceinline__ bool d_isnan(double x) { return x != x; }

constexpr double kPi = 3.14159265358979323846;
constexpr double kEuler = 0.57721566490153286061;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrt2Pi = 2.50662827463100050242;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kEps = 1.1102230246251565e-16;

// -- gamma family -------------------------------------------------------------------------------
__device__ inline double lgamma_d(double x) { return d_isinf(x) ? d_inf() : ::lgamma(x); }

__device__ inline double digamma_d(double x) {
  if (x == 0.0) return ::copysign(d_inf(), -x);
  if (d_isnan(x)) return x;
  if (x == d_inf()) return x;
  double acc = 0.0;
  if (x < 0.0) {
    if (x == ::trunc(x)) return d_nan();
    // reflection: psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so reduce x to its fraction
    double r = x - ::trunc(x);
    acc = -kPi / ::tan(kPi * r);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    acc -= 1.0 / x;
    x += 1.0;
  }
  // psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k)
  const double z = 1.0 / (x * x);
  const double c[7] = {8.33333333333333333e-02, -8.33333333333333333e-03, 3.96825396825396825e-03,
                       -4.16666666666666667e-03, 7.57575757575757576e-03, -2.10927960927960928e-02,
                       8.33333333333333333e-02};
  double s = 0.0;
  for (int k = 6; k >= 0; --k) s = s * z + c[k];
  return acc + ::log(x) - 0.5 / x - s * z;
}

// polygamma(1, x) for x >= 1/2: recurrence to x >= 10, then the asymptotic series
// 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1)
__device__ inline double trigamma_pos(double x) {
  double acc = 0.0;
  while (x < 10.0) {
    acc += 1.0 / (x * x);
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double b[8] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510};
  double s = 0.0;
  for (int k = 7; k >= 0; --k) s = s * z + b[k];
  return acc + 1.0 / x + 0.5 * z + s * z / x;
}
// below 1/2 the reflection pi^2 / sin^2(pi x) - polygamma(1, 1 - x)
__device__ inline double trigamma_d(double x) {
  if (d_isnan(x)) return x;
  if (x < 0.5) {
    double s = ::sin(kPi * x);
    return kPi * kPi / (s * s) - trigamma_pos(1.0 - x);
  }
  return trigamma_pos(x);
}

// Hurwitz zeta(x, q) = sum_{k >= 0} (q + k)^-x: the first terms directly, the tail by Euler-Maclaurin.
__device__ inline double zeta_d(double x, double q) {
  // torch's order: x = 1, x < 1, then a pole q = 0, -1, ... is inf even for a NaN x
  if (x == 1.0) return d_inf();
  if (x < 1.0) return d_nan();
  if (q <= 0.0) {
    if (q == ::floor(q)) return d_inf();
    if (x != ::floor(x)) return d_nan();  // (q + k)^-x of a negative base needs an integer x
  }
  if (d_isnan(x) || d_isnan(q) || q == d_inf()) return d_nan();  // torch: NaN at q = inf
  double s = ::pow(q, -x);
  double a = q;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1.0;
    double b = ::pow(a, -x);
    s += b;
    if (::fabs(b / s) < kEps) return s;
  }
  // tail: sum_{k >= a} k^-x = a^(1-x)/(x-1) - a^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) a^(-x-2j+1),
  // with s already holding a^-x
  const double b2[12] = {8.33333333333333333e-02, -1.38888888888888889e-03, 3.30687830687830688e-05,
                         -8.26719576719576720e-07, 2.08767569878680990e-08, -5.28419013868749318e-10,
                         1.33825365306846788e-11, -3.38968029632258287e-13, 8.58606205627784456e-15,
                         -2.17486869855806187e-16, 5.50900282836022952e-18, -1.39544646858125233e-19};
  double b = ::pow(a, -x);
  s += a * b / (x - 1.0) - 0.5 * b;
  double fac = x;       // x (x+1) ... (x+2j-2)
  double ap = b / a;    // a^(-x-2j+1)
  for (int j = 0; j < 12; ++j) {
    double t = b2[j] * fac * ap;
    s += t;
    if (::fabs(t / s) < kEps) break;
    fac *= (x + 2 * j + 1) * (x + 2 * j + 2);
    ap /= a * a;
  }
  return s;
}

// regularized incomplete gamma: series for P when x < a + 1, Lentz's continued fraction for Q otherwise
__device__ inline double igam_series(double a, double x, double ax) {
  double r = a, c = 1.0, s = 1.0;
  for (int n = 0; n < 4000; ++n) {
    r += 1.0;
    c *= x / r;
    s += c;
    if (c <= s * kEps) break;
  }
  return s * ax / a;
}
__device__ inline double igamc_cf(double a, double x, double ax) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 4000; ++i) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (::fabs(del - 1.0) < kEps) break;
  }
  return ax * h;
}
// which: 0 lower P(a, x), 1 upper Q(a, x)
__device__ inline double igamma_d(double a, double x, int which) {
  // torch's order: a NaN `a` still gives the values at x = 0 and x = inf
  if (x < 0.0 || a < 0.0) return d_nan();
  if (a == 0.0) return x > 0.0 ? (which ? 0.0 : 1.0) : d_nan();
  if (x == 0.0) return which ? 1.0 : 0.0;
  if (d_isinf(a)) return d_isinf(x) ? d_nan() : (which ? 1.0 : 0.0);
  if (d_isinf(x)) return which ? 0.0 : 1.0;
  double ax = ::exp(a * ::log(x) - x - ::lgamma(a));
  if (x < a + 1.0) {
    double p = igam_series(a, x, ax);
    return which ? 1.0 - p : p;
  }
  double q = igamc_cf(a, x, ax);
  return which ? q : 1.0 - q;
}

// -- Bessel --------------------------------------------------------------------------------------
// I_nu(x) e^-x for x >= 0, nu = 0 or 1
__device__ inline double bessel_ie_d(double x, int nu) {
  if (x <= 30.0) {
    const double y = 0.25 * x * x;
    double t = nu ? 0.5 * x : 1.0, s = t;
    for (int k = 1; k < 500; ++k) {
      t *= y / (k * double(k + nu));
      s += t;
      if (t <= s * kEps) break;
    }
    return s * ::exp(-x);
  }
  // Hankel: I_nu(x) e^-x ~ (2 pi x)^-1/2 sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k)
  const double mu = 4.0 * nu * nu;
  double t = 1.0, s = 1.0;
  for (int k = 1; k < 60; ++k) {
    double nt = -t * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
    if (::fabs(nt) >= ::fabs(t)) break;
    t = nt;
    s += t;
    if (::fabs(t) <= s * kEps) break;
  }
  return s / ::sqrt(2.0 * kPi * x);
}
__device__ inline double i0e_d(double x) { return d_isnan(x) ? x : bessel_ie_d(::fabs(x), 0); }
__device__ inline double i1e_d(double x) {
  if (d_isnan(x)) return x;
  double r = bessel_ie_d(::fabs(x), 1);
  return x < 0.0 ? -r : r;
}
__device__ inline double scaled_up(double r, double ax) {  // r e^ax without overflowing early
  double h = ::exp(0.5 * ax);
  return r * h * h;
}
// torch (and SciPy): NaN at +-inf for I0, I1, J0, J1, Y0, Y1 (their e^x / sqrt(x) forms make inf / inf)
__device__ inline double i0_d(double x) {
  if (d_isnan(x) || d_isinf(x)) return d_nan();
  double ax = ::fabs(x);
  return scaled_up(bessel_ie_d(ax, 0), ax);
}
__device__ inline double i1_d(double x) {
  if (d_isnan(x) || d_isinf(x)) return d_nan();
  double ax = ::fabs(x);
  double r = scaled_up(bessel_ie_d(ax, 1), ax);
  return x < 0.0 ? -r : r;
}
__device__ inline double j0_d(double x) { return d_isinf(x) ? d_nan() : ::j0(x); }
__device__ inline double j1_d(double x) { return d_isinf(x) ? d_nan() : ::j1(x); }
__device__ inline double y0_d(double x) { return d_isinf(x) ? d_nan() : ::y0(x); }
__device__ inline double y1_d(double x) { return d_isinf(x) ? d_nan() : ::y1(x); }

// K_nu(x) e^x for x > 2 (any real nu): the trapezoidal rule below 40, Hankel's expansion above
__device__ inline double bessel_ke_large(double x, double nu) {
  if (x > 40.0) {
    const double mu = 4.0 * nu * nu;
    double t = 1.0, s = 1.0;
    for (int k = 1; k < 60; ++k) {
      double nt = t * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
      if (::fabs(nt) >= ::fabs(t)) break;
      t = nt;
      s += t;
      if (::fabs(t) <= s * kEps) break;
    }
    return s * ::sqrt(kPi / (2.0 * x));
  }
  const double h = 0.1;
  double s = 0.5;
  for (int k = 1; k < 400; ++k) {
    double t = k * h;
    double f = ::exp(-x * (::cosh(t) - 1.0)) * ::cosh(nu * t);
    s += f;
    if (f < 1e-18 * s) break;
  }
  return s * h;
}
// K0 / K1 for 0 < x <= 2: the power series (Abramowitz & Stegun 9.6.13, 9.6.11)
__device__ inline double k0_small(double x) {
  const double y = 0.25 * x * x;
  double t = 1.0, h = 0.0, s = 0.0;
  for (int k = 1; k < 40; ++k) {
    t *= y / (double(k) * k);
    h += 1.0 / k;
    s += t * h;
    if (t * h <= s * kEps) break;
  }
  return -(::log(0.5 * x) + kEuler) * i0_d(x) + s;
}
__device__ inline double k1_small(double x) {
  const double y = 0.25 * x * x;
  double t = 1.0, psi1 = -kEuler, psi2 = 1.0 - kEuler;  // psi(k + 1), psi(k + 2)
  double s = psi1 + psi2;
  for (int k = 1; k < 40; ++k) {
    t *= y / (double(k) * (k + 1));
    psi1 = psi2;
    psi2 += 1.0 / (k + 1);
    double term = t * (psi1 + psi2);
    s += term;
    if (::fabs(term) <= ::fabs(s) * kEps) break;
  }
  return 1.0 / x + ::log(0.5 * x) * i1_d(x) - 0.25 * x * s;
}
// scaled: K_nu(x) e^x
__device__ inline double bessel_k_d(double x, int nu, bool scaled) {
  if (d_isnan(x)) return x;
  if (x == 0.0) return d_inf();
  if (x < 0.0) return d_nan();
  if (x == d_inf()) return 0.0;
  if (x <= 2.0) {
    double r = nu ? k1_small(x) : k0_small(x);
    return scaled ? r * ::exp(x) : r;
  }
  double r = bessel_ke_large(x, double(nu));
  return scaled ? r : r * ::exp(-x);
}

__device__ inline double k0_d(double x) { return bessel_k_d(x, 0, false); }
__device__ inline double k1_d(double x) { return bessel_k_d(x, 1, false); }
__device__ inline double k0e_d(double x) { return bessel_k_d(x, 0, true); }
__device__ inline double k1e_d(double x) { return bessel_k_d(x, 1, true); }

// Airy Ai
__device__ inline double airy_ai_d(double x) {
  if (d_isnan(x) || d_isinf(x)) return d_nan();  // torch: NaN at both infinities
  if (x > 2.0) {  // Ai(x) = sqrt(x / 3) K_1/3(zeta) / pi, zeta = 2/3 x^3/2
    double z = 2.0 / 3.0 * x * ::sqrt(x);
    if (z > 745.0) return 0.0;
    return ::sqrt(x / 3.0) / kPi * bessel_ke_large(z, 1.0 / 3.0) * ::exp(-z);
  }
  if (x >= -8.0) {  // Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f and g the Maclaurin series of the Airy equation
    const double c1 = 0.355028053887817239260, c2 = 0.258819403792806798405;
    const double x3 = x * x * x;
    double tf = 1.0, f = 1.0, tg = x, g = x;
    for (int k = 1; k < 200; ++k) {
      tf *= x3 / ((3.0 * k - 1.0) * (3.0 * k));
      tg *= x3 / ((3.0 * k) * (3.0 * k + 1.0));
      f += tf;
      g += tg;
      if (::fabs(tf) <= ::fabs(f) * 1e-18 && ::fabs(tg) <= ::fabs(g) * 1e-18) break;
    }
    return c1 * f - c2 * g;
  }
  // x < -8: Ai(-z) ~ pi^-1/2 z^-1/4 [sin(zeta + pi/4) P - cos(zeta + pi/4) Q]
  const double z = -x;
  const double zeta = 2.0 / 3.0 * z * ::sqrt(z);
  double u = 1.0, p = 1.0, q = 0.0, zp = 1.0;
  for (int k = 1; k < 80; ++k) {
    double nu = u * (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / ((2.0 * k - 1.0) * 216.0 * k);
    double nz = zp / zeta;
    double term = nu * nz;
    if (::fabs(term) >= ::fabs(u * zp) && k > 1) break;
    u = nu;
    zp = nz;
    // u_k zeta^-k: k even -> P with sign (-1)^(k/2); k odd -> Q with sign (-1)^((k-1)/2)
    if (k % 2 == 0) p += ((k / 2) % 2 ? -term : term);
    else q += (((k - 1) / 2) % 2 ? -term : term);
    if (::fabs(term) < 1e-18) break;
  }
  const double ph = zeta + 0.25 * kPi;
  return (::sin(ph) * p - ::cos(ph) * q) / (::sqrt(kPi) * ::sqrt(::sqrt(z)));
}

__device__ inline double spherical_j0_d(double x) {
  if (d_isinf(x)) return 0.0;
  if (::fabs(x) < 0.5) {
    const double y = x * x;
    return 1.0 + y * (-1.0 / 6 + y * (1.0 / 120 + y * (-1.0 / 5040 + y * (1.0 / 362880 + y * (-1.0 / 39916800
           + y * (1.0 / 6227020800.0))))));
  }
  return ::sin(x) / x;
}

// -- the normal distribution ---------------------------------------------------------------------
__device__ inline double ndtr_d(double x) {
  double t = x * kSqrtHalf, z = ::fabs(t);
  if (z < kSqrtHalf) return 0.5 + 0.5 * ::erf(t);
  double y = 0.5 * ::erfc(z);
  return t > 0.0 ? 1.0 - y : y;
}
__device__ inline double log_ndtr_d(double x) {
  double t = x * kSqrtHalf;
  if (x < -1.0) return ::log(::erfcx(-t) * 0.5) - t * t;
  return ::log1p(-0.5 * ::erfc(t));
}

__device__ inline double ndtri_d(double p) {
  if (d_isnan(p) || p < 0.0 || p > 1.0) return d_nan();
  if (p == 0.0) return -d_inf();
  if (p == 1.0) return d_inf();
  bool upper = p > 0.5;
  double q = upper ? 1.0 - p : p;  // exact (Sterbenz)
  double x = ::normcdfinv(q);
  if (!(x > -40.0 && x < 0.5)) x = -::sqrt(-2.0 * ::log(q));
  // Newton on log ndtr(x) = log q: accurate in the lower tail
  const double lq = ::log(q);
  for (int i = 0; i < 6; ++i) {
    double ln = log_ndtr_d(x);
    double dl = ::exp(-0.5 * x * x - ln) / kSqrt2Pi;  // phi(x) / Phi(x)
    double step = (ln - lq) / dl;
    x -= step;
    if (::fabs(step) <= 1e-16 * ::fabs(x)) break;
  }
  return upper ? -x : x;
}

// -- the orthogonal polynomials, torch's case analysis, in the compute type ----------------------
// infinity and NaN in the compute type (a double constant converted would put a cvt.f32.f64 in a float kernel)
template <typename C> __device__ __forceinline__ C inf_c();
template <> __device__ __forceinline__ float inf_c<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double inf_c<double>() { return d_inf(); }
template <typename C> __device__ __forceinline__ C nan_c();
template <> __device__ __forceinline__ float nan_c<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double nan_c<double>() { return d_nan(); }
__device__ __forceinline__ float fabs_c(float x) { return ::fabsf(x); }
__device__ __forceinline__ double fabs_c(double x) { return ::fabs(x); }

template <typename C>
__device__ inline long long degree(C n, bool hermite_h) {
  // torch: NaN and inf give -1 for H (n < 0: the value 0), and C's conversion of a degree beyond int64 is the
  // x86 "integer indefinite" INT64_MIN (n < 0 again); 2^63 is exact in float and double
  const C big = C(9223372036854775808.0f);
  if (n != n || fabs_c(n) >= big) {
    return hermite_h && (n != n || fabs_c(n) == inf_c<C>()) ? -1LL : (-9223372036854775807LL - 1);
  }
  return static_cast<long long>(n);
}
template <typename C>
__device__ inline C cheb_rec(C y, C first, long long n) {
  C p = C(1), q = first, r = first;
  for (long long k = 2; k <= n && q == q; ++k) {
    r = (y + y) * q - p;
    p = q;
    q = r;
  }
  return r;
}
__device__ __forceinline__ float acos_c(float x) { return ::acosf(x); }
__device__ __forceinline__ double acos_c(double x) { return ::acos(x); }
// float: without the FP64 slow path of CUDA's cosf/sinf (special_float.cuh)
__device__ __forceinline__ float cos_c(float x) { return tf::cos(x); }
__device__ __forceinline__ double cos_c(double x) { return ::cos(x); }
__device__ __forceinline__ float sin_c(float x) { return tf::sin(x); }
__device__ __forceinline__ double sin_c(double x) { return ::sin(x); }
// kind: 0 T, 1 U, 2 V, 3 W at y (y = x, or 2x - 1 for the shifted forms); trig_min the degree above
// which |y| < 1 takes the trigonometric form
template <typename C>
__device__ inline C chebyshev(C y, long long n, int kind, long long trig_min) {
  if (n < 0) return C(0);
  const C one = C(1);
  C nf = C(n);
  bool odd = (n % 2) != 0;
  if (y == one) return kind == 0 || kind == 2 ? one : (kind == 1 ? nf + one : nf + nf + one);
  if (y == -one) {
    if (kind == 0) return odd ? -one : one;
    if (kind == 1) return odd ? -(nf + one) : nf + one;
    if (kind == 2) return odd ? -(nf + nf + one) : nf + nf + one;
    return odd ? -one : one;
  }
  if (n > trig_min && fabs_c(y) < one) {
    C t = acos_c(y);
    if (kind == 0) return cos_c(nf * t);
    if (kind == 1) {
      C s = sin_c(t);
      return s != C(0) ? sin_c((nf + one) * t) / s : (nf + one) * cos_c((nf + one) * t) / y;
    }
    C h = t / C(2);
    if (kind == 2) return sin_c(h) != one ? cos_c((nf + C(0.5)) * t) / cos_c(h) : (odd ? -(nf + nf + one) : nf + nf + one);
    return cos_c(h) != one ? sin_c((nf + C(0.5)) * t) / sin_c(h) : (y > C(0) ? nf + nf + one : (odd ? -one : one));
  }
  C first = kind == 0 ? y : kind == 1 ? y + y : kind == 2 ? y + y - one : y + y + one;
  if (n == 0) return one;
  if (n == 1) return first;
  return cheb_rec(y, first, n);
}
template <typename C>
__device__ inline C hermite(C x, long long n, bool phys) {
  if (n < 0) return C(0);
  if (n == 0) return C(1);
  C first = phys ? x + x : x;
  if (n == 1) return first;
  long long limit = sizeof(C) == 4 ? 128 : 512;
  if (n > limit) return nan_c<C>();
  C p = C(1), q = first, r = first;
  for (long long k = 2; k <= n; ++k) {
    r = phys ? (x + x) * q - C(k + k - 2) * p : x * q - C(k - 1) * p;
    p = q;
    q = r;
  }
  return r;
}
template <typename C>
__device__ inline C laguerre(C x, long long n) {
  if (n < 0) return C(0);
  const C one = C(1);
  if (x == C(0)) return one;
  if (n == 0) return one;
  if (n == 1) return one - x;
  C p = one, q = one - x, r = q;
  for (long long k = 1; k < n && q == q; ++k) {
    C kk = C(k);
    r = (((kk + kk) + (one - x)) * q - kk * p) / (kk + one);
    p = q;
    q = r;
  }
  return r;
}
template <typename C>
__device__ inline C legendre(C x, long long n) {
  if (n < 0) return C(0);
  const C one = C(1);
  if (fabs_c(x) == one) return (x > C(0) || n % 2 == 0) ? one : -one;
  if (n == 0) return one;
  if (n == 1) return x;
  C p = one, q = x, r = x;
  for (long long k = 1; k < n && q == q; ++k) {
    C kk = C(k);
    r = ((kk + kk + one) * x * q - kk * p) / (kk + one);
    p = q;
    q = r;
  }
  return r;
}

}  // namespace sm

// The overload sets the float-capable functors call: float stays float, double stays double.
__device__ inline float erfc_c(float x) { return ::erfcf(x); }
__device__ inline double erfc_c(double x) { return ::erfc(x); }
__device__ inline float erfinv_c(float x) { return ::erfinvf(x); }
__device__ inline double erfinv_c(double x) { return ::erfinv(x); }
__device__ inline float erfcx_c(float x) { return ::erfcxf(x); }
__device__ inline double erfcx_c(double x) { return ::erfcx(x); }
__device__ inline float lgamma_c(float x) { return smf::lgamma(x); }
__device__ inline double lgamma_c(double x) { return sm::lgamma_d(x); }
__device__ inline float ndtr_c(float x) { return smf::ndtr(x); }
__device__ inline double ndtr_c(double x) { return sm::ndtr_d(x); }
__device__ inline float log_ndtr_c(float x) { return smf::log_ndtr(x); }
__device__ inline double log_ndtr_c(double x) { return sm::log_ndtr_d(x); }
// float: special_float.cuh; double: the versions above
#define TL_SM_OVERLOAD1(name, ffn, dfn)                                  \
  __device__ inline float name(float x) { return ffn(x); }              \
  __device__ inline double name(double x) { return dfn(x); }
TL_SM_OVERLOAD1(digamma_c, smf::digamma, sm::digamma_d)
TL_SM_OVERLOAD1(trigamma_c, smf::trigamma, sm::trigamma_d)
TL_SM_OVERLOAD1(i0_c, smf::i0, sm::i0_d)
TL_SM_OVERLOAD1(i0e_c, smf::i0e, sm::i0e_d)
TL_SM_OVERLOAD1(i1_c, smf::i1, sm::i1_d)
TL_SM_OVERLOAD1(i1e_c, smf::i1e, sm::i1e_d)
TL_SM_OVERLOAD1(ndtri_c, smf::ndtri, sm::ndtri_d)
TL_SM_OVERLOAD1(airy_ai_c, smf::airy_ai, sm::airy_ai_d)
TL_SM_OVERLOAD1(j0_c, smf::j0, sm::j0_d)
TL_SM_OVERLOAD1(j1_c, smf::j1, sm::j1_d)
TL_SM_OVERLOAD1(y0_c, smf::y0, sm::y0_d)
TL_SM_OVERLOAD1(y1_c, smf::y1, sm::y1_d)
TL_SM_OVERLOAD1(k0_c, smf::k0, sm::k0_d)
TL_SM_OVERLOAD1(k1_c, smf::k1, sm::k1_d)
TL_SM_OVERLOAD1(k0e_c, smf::k0e, sm::k0e_d)
TL_SM_OVERLOAD1(k1e_c, smf::k1e, sm::k1e_d)
TL_SM_OVERLOAD1(spherical_j0_c, smf::spherical_j0, sm::spherical_j0_d)
#undef TL_SM_OVERLOAD1
__device__ inline float igamma_c(float a, float x, int which) { return smf::igamma(a, x, which); }
__device__ inline double igamma_c(double a, double x, int which) { return sm::igamma_d(a, x, which); }
__device__ inline float zeta_c(float x, float q) { return smf::zeta(x, q); }
__device__ inline double zeta_c(double x, double q) { return sm::zeta_d(x, q); }

namespace op {
// fn in the compute type (an overload set of float and double)
#define TL_SM_UNARY_C(Name, fn)                                                                \
  struct Name {                                                                                \
    template <typename C>                                                                      \
    __device__ __forceinline__ static C f(C a, const Params<C>&) { return fn(a); }            \
  };
#define TL_SM_BINARY(Name, expr)                                                               \
  struct Name {                                                                                \
    template <typename C>                                                                      \
    __device__ __forceinline__ static C f(C a, C b, const Params<C>&) { return expr; }        \
  };
TL_SM_UNARY_C(Lgamma, lgamma_c)
TL_SM_UNARY_C(Digamma, digamma_c)
TL_SM_UNARY_C(Erfc, erfc_c)
TL_SM_UNARY_C(Trigamma, trigamma_c)
TL_SM_UNARY_C(Erfinv, erfinv_c)
TL_SM_UNARY_C(I0, i0_c)
TL_SM_UNARY_C(I0e, i0e_c)
TL_SM_UNARY_C(I1, i1_c)
TL_SM_UNARY_C(I1e, i1e_c)
TL_SM_UNARY_C(Ndtr, ndtr_c)
TL_SM_UNARY_C(Ndtri, ndtri_c)
TL_SM_UNARY_C(LogNdtr, log_ndtr_c)
TL_SM_UNARY_C(Erfcx, erfcx_c)
TL_SM_UNARY_C(AiryAi, airy_ai_c)
TL_SM_UNARY_C(BesselJ0, j0_c)
TL_SM_UNARY_C(BesselJ1, j1_c)
TL_SM_UNARY_C(BesselY0, y0_c)
TL_SM_UNARY_C(BesselY1, y1_c)
TL_SM_UNARY_C(BesselK0, k0_c)
TL_SM_UNARY_C(BesselK1, k1_c)
TL_SM_UNARY_C(BesselK0e, k0e_c)
TL_SM_UNARY_C(BesselK1e, k1e_c)
TL_SM_UNARY_C(SphericalJ0, spherical_j0_c)
TL_SM_BINARY(Igamma, igamma_c(a, b, 0))
TL_SM_BINARY(Igammac, igamma_c(a, b, 1))
TL_SM_BINARY(Zeta, zeta_c(a, b))
TL_SM_BINARY(ChebyshevT, sm::chebyshev(a, sm::degree(b, false), 0, 6))
TL_SM_BINARY(ChebyshevU, sm::chebyshev(a, sm::degree(b, false), 1, 8))
TL_SM_BINARY(ChebyshevV, sm::chebyshev(a, sm::degree(b, false), 2, 8))
TL_SM_BINARY(ChebyshevW, sm::chebyshev(a, sm::degree(b, false), 3, 8))
TL_SM_BINARY(ShiftedChebyshevT, sm::chebyshev(a + a - C(1), sm::degree(b, false), 0, 6))
TL_SM_BINARY(ShiftedChebyshevU, sm::chebyshev(a + a - C(1), sm::degree(b, false), 1, 6))
TL_SM_BINARY(ShiftedChebyshevV, sm::chebyshev(a + a - C(1), sm::degree(b, false), 2, 6))
TL_SM_BINARY(ShiftedChebyshevW, sm::chebyshev(a + a - C(1), sm::degree(b, false), 3, 4))
TL_SM_BINARY(HermiteH, sm::hermite(a, sm::degree(b, true), true))
TL_SM_BINARY(HermiteHe, sm::hermite(a, sm::degree(b, false), false))
TL_SM_BINARY(LaguerreL, sm::laguerre(a, sm::degree(b, false)))
TL_SM_BINARY(LegendreP, sm::legendre(a, sm::degree(b, false)))
#undef TL_SM_UNARY_C
#undef TL_SM_BINARY
}  // namespace op
}  // namespace tl
