// Float versions of the special functions, for the float16/bfloat16/float32 kernels (compute type float):
// no FP64 instruction in them (issue 37 item 4). special_math.cuh keeps the double versions for float64
// and picks these for float through its overload sets.
// CUDA's float library where it has the function without FP64 inside: normcdfinvf (5 ulp, CUDA math API) for
// ndtri away from the far tail; not j0f/j1f/y0f/y1f (9 ulp below 8, 2.2e-6 absolute above), whose sincosf
// carries the FP64 Payne-Hanek slow path. The rest from the mathematics, sized for float's 2^-24:
//  - digamma / trigamma: reflection (exact sinpi/cospi), recurrence up to x >= 6, 4-5 terms of the
//    Bernoulli asymptotic series (the next term is below 1e-9 relative at x = 6);
//  - Hurwitz zeta: direct terms, then Euler-Maclaurin with Bernoulli numbers;
//  - incomplete gamma: power series for P below a + 1, Lentz's continued fraction for Q above; the prefactor
//    x^a e^-x / Gamma(a) through Stirling's series for a >= 4, so its exponent does not cancel in float;
//  - I0/I1: power series up to 12, Hankel's asymptotic series above;
//  - K0/K1: the power series (A&S 9.6.13, 9.6.11) up to 1, the trapezoidal rule on
//    K_nu(x) e^x = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt up to 40, Hankel's series above;
//  - Airy Ai: through K_1/3 above 1, the Maclaurin series in float-float arithmetic on [-6, 1] (its terms
//    reach ~450 at -6 and cancel), the oscillatory asymptotic series below -6 with the phase
//    2/3 z^3/2 reduced in float-float (an absolute phase error of z^3/2 2^-24 otherwise);
//  - Bessel J0/J1/Y0/Y1: the power series in float-float up to 8, Hankel's expansion above;
//  - sin/cos (trigamma's reflection, spherical j0, the Chebyshev trig forms, J/Y): trig_float.cuh's tf::sincos;
//  - ndtri: normcdfinvf, and below 1e-6 an asymptotic first guess refined by Newton on log ndtr.
#pragma once
#include "tensorlab/trig_float.cuh"

namespace tl {
namespace smf {

__device__ __forceinline__ float f_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float f_nan() { return __int_as_float(0x7fffffff); }
__device__ __forceinline__ bool f_isnan(float x) { return x != x; }
__device__ __forceinline__ bool f_isinf(float x) { return ::fabsf(x) == f_inf(); }

constexpr float kPi = 3.14159265358979323846f;
constexpr float kEuler = 0.57721566490153286061f;
constexpr float kEps = 5.9604644775390625e-08f;  // 2^-24
constexpr float kInvSqrtPi = 0.56418958354775628695f;

// -- float-float (an unevaluated sum hi + lo): error-free sums and products (fma) -------------------
struct FF {
  float hi, lo;
};
__device__ __forceinline__ FF ff_renorm(float a, float b) {  // |a| >= |b|
  const float s = a + b;
  return {s, b - (s - a)};
}
__device__ __forceinline__ FF ff_add(FF a, FF b) {
  const float s = a.hi + b.hi;
  const float v = s - a.hi;
  const float e = (a.hi - (s - v)) + (b.hi - v);
  return ff_renorm(s, e + a.lo + b.lo);
}
__device__ __forceinline__ FF ff_mul(FF a, FF b) {
  const float p = a.hi * b.hi;
  const float e = ::fmaf(a.hi, b.hi, -p);
  return ff_renorm(p, e + (a.hi * b.lo + a.lo * b.hi));
}
__device__ __forceinline__ FF ff_div(FF a, float d) {
  const float q = a.hi / d;
  const float r = ::fmaf(-q, d, a.hi);  // exact remainder
  return ff_renorm(q, (r + a.lo) / d);
}
__device__ __forceinline__ FF ff_neg(FF a) { return {-a.hi, -a.lo}; }

// -- gamma family -------------------------------------------------------------------------------
__device__ inline float digamma(float x) {
  if (x == 0.f) return ::copysignf(f_inf(), -x);
  if (f_isnan(x) || x == f_inf()) return x;
  float acc = 0.f;
  if (x < 0.f) {
    if (x == ::truncf(x)) return f_nan();
    // psi(x) = psi(1 - x) - pi cot(pi x) = psi(-x) - 1/x - pi cot(pi x): -x is exact, and cot has period
    // 1 in x, so x minus its nearest integer (exact, |r| <= 1/2) goes to sinpi/cospi
    float s, c;
    ::sincospif(x - ::rintf(x), &s, &c);
    acc = -kPi * c / s - 1.f / x;
    x = -x;
  }
  while (x < 6.f) {
    acc -= 1.f / x;
    x += 1.f;
  }
  // psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k), k = 1..4 (B2/2 = 1/12, B4/4 = -1/120, B6/6 = 1/252,
  // B8/8 = -1/240)
  const float z = 1.f / (x * x);
  const float s = z * (1.f / 12 + z * (-1.f / 120 + z * (1.f / 252 + z * (-1.f / 240))));
  return acc + (::logf(x) - 0.5f / x - s);
}

// polygamma(1, x) for x >= 1/2: recurrence to x >= 6, then 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1)
__device__ inline float trigamma_pos(float x) {
  float acc = 0.f;
  while (x < 6.f) {
    acc += 1.f / (x * x);
    x += 1.f;
  }
  const float z = 1.f / (x * x);
  const float s = 1.f / 6 + z * (-1.f / 30 + z * (1.f / 42 + z * (-1.f / 30 + z * (5.f / 66))));
  return acc + (1.f + 0.5f / x + z * s) / x;
}
// below 1/2: pi^2 / sin^2(pi x) - polygamma(1, 1 - x), pi x rounded to float as torch's float kernel does
__device__ inline float trigamma(float x) {
  if (f_isnan(x)) return x;
  if (x < 0.5f) {
    const float s = tf::sin(kPi * x);
    return (kPi * kPi) / (s * s) - trigamma_pos(1.f - x);
  }
  return trigamma_pos(x);
}

// Hurwitz zeta(x, q) = sum_{k >= 0} (q + k)^-x
__device__ inline float zeta(float x, float q) {
  if (x == 1.f) return f_inf();
  if (x < 1.f) return f_nan();
  if (q <= 0.f) {
    if (q == ::floorf(q)) return f_inf();
    if (x != ::floorf(x)) return f_nan();
  }
  if (f_isnan(x) || f_isnan(q) || q == f_inf()) return f_nan();
  float s = ::powf(q, -x);
  float a = q;
  int i = 0;
  while (i < 9 || a <= 9.f) {
    i += 1;
    a += 1.f;
    const float b = ::powf(a, -x);
    s += b;
    if (::fabsf(b / s) < kEps) return s;
  }
  // tail sum_{k >= a} k^-x = a^(1-x)/(x-1) - a^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) a^(-x-2j+1)
  const float b2[6] = {8.33333333333333333e-02f, -1.38888888888888889e-03f, 3.30687830687830688e-05f,
                       -8.26719576719576720e-07f, 2.08767569878680990e-08f, -5.28419013868749318e-10f};
  const float b = ::powf(a, -x);
  s += a * b / (x - 1.f) - 0.5f * b;
  float fac = x, ap = b / a;
  for (int j = 0; j < 6; ++j) {
    const float t = b2[j] * fac * ap;
    s += t;
    if (::fabsf(t / s) < kEps) break;
    fac *= (x + float(2 * j + 1)) * (x + float(2 * j + 2));
    ap /= a * a;
  }
  return s;
}

// x^a e^-x / Gamma(a) (a > 0, 0 < x < inf). For a >= 4 with Stirling's series
// lgamma(a) = (a - 1/2) log a - a + log(2 pi)/2 + c(a), c(a) = 1/(12a) - 1/(360a^3) + 1/(1260a^5) - 1/(1680a^7)
// + 1/(1188a^9) (the next term is below 5e-10 at a = 4):
// a log(x/a) + a - x - c(a) + log(a / (2 pi))/2, with a log(x/a) + a - x = a (log1p(t) - t), t = (x - a)/a,
// near x = a (where the direct form's a log x - x - lgamma(a) loses a eps log a to cancellation).
__device__ inline float igam_prefactor(float a, float x) {
  if (a < 4.f) return ::expf(a * ::logf(x) - x - ::lgammaf(a));
  const float ia = 1.f / a, ia2 = ia * ia;
  const float c = ia * (1.f / 12 - ia2 * (1.f / 360 - ia2 * (1.f / 1260 - ia2 * (1.f / 1680 - ia2 * (1.f / 1188)))));
  const float t = (x - a) / a;
  const float e = ::fabsf(t) < 0.5f ? a * (::log1pf(t) - t) : a * ::logf(x / a) + (a - x);
  return ::expf(e - c) * ::sqrtf(a * (0.5f / kPi));
}
__device__ inline float igam_series(float a, float x, float ax) {
  float r = a, c = 1.f, s = 1.f;
  for (int n = 0; n < 2000; ++n) {
    r += 1.f;
    c *= x / r;
    s += c;
    if (c <= s * kEps) break;
  }
  return s * ax / a;
}
__device__ inline float igamc_cf(float a, float x, float ax) {
  const float tiny = 1e-30f;
  float b = x + 1.f - a, c = 1.f / tiny, d = 1.f / b, h = d;
  for (int i = 1; i < 2000; ++i) {
    const float fi = float(i);
    const float an = -fi * (fi - a);
    b += 2.f;
    d = an * d + b;
    if (::fabsf(d) < tiny) d = tiny;
    c = b + an / c;
    if (::fabsf(c) < tiny) c = tiny;
    d = 1.f / d;
    const float del = d * c;
    h *= del;
    if (::fabsf(del - 1.f) < kEps) break;
  }
  return ax * h;
}
// which: 0 lower P(a, x), 1 upper Q(a, x); torch's order of the edge cases (special_math.cuh's igamma_d)
__device__ inline float igamma(float a, float x, int which) {
  if (x < 0.f || a < 0.f) return f_nan();
  if (a == 0.f) return x > 0.f ? (which ? 0.f : 1.f) : f_nan();
  if (x == 0.f) return which ? 1.f : 0.f;
  if (f_isinf(a)) return f_isinf(x) ? f_nan() : (which ? 1.f : 0.f);
  if (f_isinf(x)) return which ? 0.f : 1.f;
  if (f_isnan(a) || f_isnan(x)) return f_nan();
  const float ax = igam_prefactor(a, x);
  if (x < a + 1.f) {
    const float p = igam_series(a, x, ax);
    return which ? 1.f - p : p;
  }
  const float q = igamc_cf(a, x, ax);
  return which ? q : 1.f - q;
}

// -- Bessel I -----------------------------------------------------------------------------------
// sum_k (x^2/4)^k / (k! (k + nu)!) (x/2)^nu = I_nu(x), 0 <= x <= 12
__device__ inline float bessel_i_series(float x, int nu) {
  const float y = 0.25f * x * x;
  float t = nu ? 0.5f * x : 1.f, s = t;
  for (int k = 1; k < 60; ++k) {
    t *= y / float(k * (k + nu));
    s += t;
    if (t <= s * kEps) break;
  }
  return s;
}
// I_nu(x) e^-x sqrt(2 pi x) for x > 12: Hankel, sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k)
__device__ inline float bessel_i_hankel(float x, int nu) {
  const float mu = float(4 * nu * nu);
  float t = 1.f, s = 1.f;
  for (int k = 1; k < 30; ++k) {
    const float o = float(2 * k - 1);
    const float nt = -t * (mu - o * o) / (float(k) * 8.f * x);
    if (::fabsf(nt) >= ::fabsf(t)) break;
    t = nt;
    s += t;
    if (::fabsf(t) <= s * kEps) break;
  }
  return s;
}
constexpr float kBesselISwitch = 12.f;
// I_nu(|x|) e^-|x| (scaled) or I_nu(|x|), odd in x for nu = 1
__device__ inline float bessel_i(float x, int nu, bool scaled) {
  if (f_isnan(x)) return x;
  const float ax = ::fabsf(x);
  float r;
  if (ax <= kBesselISwitch) {
    r = bessel_i_series(ax, nu);
    if (scaled) r *= ::expf(-ax);
  } else if (scaled) {
    r = bessel_i_hankel(ax, nu) * (0.3989422804014327f * ::rsqrtf(ax));  // (2 pi x)^-1/2, no overflow in 2 pi x
  } else {
    if (ax == f_inf()) return f_nan();  // torch: NaN at +-inf for I0 and I1
    if (ax > 100.f) {
      r = f_inf();  // I0, I1 pass float's range at ~89.4
    } else {
      const float h = ::expf(0.5f * ax);  // e^x as a square: no overflow before the result does
      r = bessel_i_hankel(ax, nu) * (0.3989422804014327f * ::rsqrtf(ax)) * h * h;
    }
  }
  return (nu && x < 0.f) ? -r : r;
}

__device__ inline float i0(float x) { return bessel_i(x, 0, false); }
__device__ inline float i0e(float x) { return bessel_i(x, 0, true); }
__device__ inline float i1(float x) { return bessel_i(x, 1, false); }
__device__ inline float i1e(float x) { return bessel_i(x, 1, true); }

// -- Bessel K -----------------------------------------------------------------------------------
// K_nu(x) e^x for x > 1 (any real nu >= 0): the trapezoidal rule (step 0.1) up to 40, Hankel's series above
__device__ inline float bessel_ke_large(float x, float nu) {
  if (x > 40.f) {
    const float mu = 4.f * nu * nu;
    float t = 1.f, s = 1.f;
    for (int k = 1; k < 30; ++k) {
      const float o = float(2 * k - 1);
      const float nt = t * (mu - o * o) / (float(k) * 8.f * x);
      if (::fabsf(nt) >= ::fabsf(t)) break;
      t = nt;
      s += t;
      if (::fabsf(t) <= s * kEps) break;
    }
    return s * ::sqrtf(kPi / (2.f * x));
  }
  const float h = 0.1f;
  float s = 0.5f;
  for (int k = 1; k < 400; ++k) {
    const float t = float(k) * h;
    const float sh = ::sinhf(0.5f * t);  // cosh t - 1 = 2 sinh^2(t/2), without cancellation near 0
    const float f = ::expf(-2.f * x * sh * sh) * ::coshf(nu * t);
    s += f;
    if (f < 1e-9f * s) break;
  }
  return s * h;
}
__device__ inline float k0_small(float x) {
  const float y = 0.25f * x * x;
  float t = 1.f, hk = 0.f, s = 0.f;
  for (int k = 1; k < 30; ++k) {
    t *= y / float(k * k);
    hk += 1.f / float(k);
    s += t * hk;
    if (t * hk <= s * kEps) break;
  }
  return s - (::logf(0.5f * x) + kEuler) * bessel_i_series(x, 0);
}
__device__ inline float k1_small(float x) {
  const float y = 0.25f * x * x;
  float t = 1.f, psi1 = -kEuler, psi2 = 1.f - kEuler;  // psi(k + 1), psi(k + 2)
  float s = psi1 + psi2;
  for (int k = 1; k < 30; ++k) {
    t *= y / float(k * (k + 1));
    psi1 = psi2;
    psi2 += 1.f / float(k + 1);
    const float term = t * (psi1 + psi2);
    s += term;
    if (::fabsf(term) <= ::fabsf(s) * kEps) break;
  }
  return 1.f / x + ::logf(0.5f * x) * bessel_i_series(x, 1) - 0.25f * x * s;
}
__device__ inline float bessel_k(float x, int nu, bool scaled) {
  if (f_isnan(x)) return x;
  if (x == 0.f) return f_inf();
  if (x < 0.f) return f_nan();
  if (x == f_inf()) return 0.f;
  if (x <= 1.f) {  // the series cancels more above 1 (K0(2) is 1/12 of its terms)
    const float r = nu ? k1_small(x) : k0_small(x);
    return scaled ? r * ::expf(x) : r;
  }
  const float r = bessel_ke_large(x, float(nu));
  return scaled ? r : r * ::expf(-x);
}

__device__ inline float k0(float x) { return bessel_k(x, 0, false); }
__device__ inline float k1(float x) { return bessel_k(x, 1, false); }
__device__ inline float k0e(float x) { return bessel_k(x, 0, true); }
__device__ inline float k1e(float x) { return bessel_k(x, 1, true); }

// -- Airy Ai ------------------------------------------------------------------------------------
// (2/3) z^3/2 times c (c as a float-float pair): z^3/2 = z sqrt(z) with sqrt's residual, all in float-float
__device__ inline FF z32_times(float z, FF c) {
  const float r = ::sqrtf(z);
  const float res = ::fmaf(-r, r, z);          // z - r^2, exact
  const FF sq = ff_renorm(r, res / (2.f * r));  // sqrt(z) to ~2^-48
  return ff_mul(ff_mul(FF{z, 0.f}, sq), c);
}
// float-float constants (hi = the float nearest, lo = the float nearest the rest)
__device__ __forceinline__ FF ff_two_thirds() { return {0.6666666865348816f, -1.9868215517249155e-08f}; }
__device__ __forceinline__ FF ff_two_thirds_over_pi() { return {0.21220658719539642f, 3.59379725978215e-09f}; }
__device__ __forceinline__ FF ff_ai0() { return {0.35502806305885315f, -9.171035486588153e-09f}; }     // Ai(0)
__device__ __forceinline__ FF ff_minus_aip0() { return {0.2588194012641907f, 2.528616205310641e-09f}; }  // -Ai'(0)

__device__ inline float airy_ai(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();  // torch: NaN at both infinities
  if (x > 1.f) {  // Ai(x) = sqrt(x / 3) K_1/3(zeta) / pi, zeta = 2/3 x^3/2
    const FF z = z32_times(x, ff_two_thirds());
    if (z.hi > 110.f) return 0.f;
    const float e = ::expf(-z.hi) * (1.f - z.lo);
    return ::sqrtf(x / 3.f) * (1.f / kPi) * bessel_ke_large(z.hi, 1.f / 3.f) * e;
  }
  if (x >= -6.f) {  // Ai(x) = Ai(0) f(x) + Ai'(0) g(x), the Maclaurin series of the Airy equation
    const float x2 = x * x;
    const FF x3 = ff_mul(FF{x2, ::fmaf(x, x, -x2)}, FF{x, 0.f});
    FF tf = {1.f, 0.f}, f = tf, tg = {x, 0.f}, g = tg;
    for (int k = 1; k < 60; ++k) {
      const float k3 = float(3 * k);
      tf = ff_div(ff_mul(tf, x3), (k3 - 1.f) * k3);
      tg = ff_div(ff_mul(tg, x3), k3 * (k3 + 1.f));
      f = ff_add(f, tf);
      g = ff_add(g, tg);
      if (::fabsf(tf.hi) <= 1e-15f * ::fabsf(f.hi) && ::fabsf(tg.hi) <= 1e-15f * ::fabsf(g.hi)) break;
    }
    const FF r = ff_add(ff_mul(ff_ai0(), f), ff_neg(ff_mul(ff_minus_aip0(), g)));
    return r.hi + r.lo;
  }
  // x < -6: Ai(-z) ~ pi^-1/2 z^-1/4 [sin(zeta + pi/4) P - cos(zeta + pi/4) Q]
  const float z = -x;
  const FF u = z32_times(z, ff_two_thirds_over_pi());  // zeta / pi
  const float zeta = u.hi * kPi;
  float c = 1.f, p = 1.f, q = 0.f, zp = 1.f;
  for (int k = 1; k < 40; ++k) {
    const float fk = float(k);
    const float nc = c * (6.f * fk - 5.f) * (6.f * fk - 3.f) * (6.f * fk - 1.f) / ((2.f * fk - 1.f) * 216.f * fk);
    const float nz = zp / zeta;
    const float term = nc * nz;
    if (::fabsf(term) >= ::fabsf(c * zp) && k > 1) break;
    c = nc;
    zp = nz;
    // u_k zeta^-k: k even -> P with sign (-1)^(k/2); k odd -> Q with sign (-1)^((k-1)/2)
    if (k % 2 == 0) p += ((k / 2) % 2 ? -term : term);
    else q += (((k - 1) / 2) % 2 ? -term : term);
    if (::fabsf(term) < 1e-9f) break;
  }
  // (zeta + pi/4) / pi = u + 1/4, reduced by the integer nearest u.hi (exact) before sinpi/cospi
  const float n = ::rintf(u.hi);
  const float ph = ((u.hi - n) + u.lo) + 0.25f;
  float s, co;
  ::sincospif(ph, &s, &co);
  if (::fmodf(n, 2.f) != 0.f) {
    s = -s;
    co = -co;
  }
  return (s * p - co * q) * kInvSqrtPi * ::rsqrtf(::sqrtf(z));
}

// -- Bessel J, Y -------------------------------------------------------------------------------
// Below 8 the power series (A&S 9.1.10, 9.1.11, 9.1.13) in float-float: their terms reach ~10^2 at 8 and cancel
// to ~0.2. Above 8 Hankel's expansion J/Y_nu = sqrt(2/(pi x)) (P cos/sin chi -/+ Q sin/cos chi),
// chi = x - (nu/2 + 1/4) pi, with sin x, cos x from tf::sincos (CUDA's j0f/y0f carry sincosf's FP64 slow
// path); its smallest term near 8 is ~e^-16.
constexpr float kBesselJSwitch = 8.f;
__device__ __forceinline__ FF ff_euler() { return {0.5772156715393066f, -6.637773886097875e-09f}; }

// sum_k (-y)^k / (k! (k + nu)!) and, when `harm`, sum_k (-y)^k (H_k + H_(k+nu)) / (k! (k + nu)!), y = x^2/4
__device__ inline void bessel_j_series(float x, int nu, FF* plain, FF* harm) {
  const float x2 = x * x;
  const FF y = {0.25f * x2, 0.25f * ::fmaf(x, x, -x2)};
  FF t = {1.f, 0.f}, s = t, h = {0.f, 0.f}, hk = {0.f, 0.f}, hkn = {nu ? 1.f : 0.f, 0.f};
  h = ff_mul(t, ff_add(hk, hkn));
  for (int k = 1; k < 40; ++k) {
    t = ff_neg(ff_div(ff_mul(t, y), float(k * (k + nu))));
    hk = ff_add(hk, ff_div(FF{1.f, 0.f}, float(k)));
    hkn = ff_add(hkn, ff_div(FF{1.f, 0.f}, float(k + nu)));
    s = ff_add(s, t);
    h = ff_add(h, ff_mul(t, ff_add(hk, hkn)));
    if (::fabsf(t.hi) <= 1e-16f) break;
  }
  *plain = s;
  *harm = h;
}
// Hankel's P, Q for order nu at x > 8
__device__ inline void bessel_hankel_pq(float x, int nu, float* p, float* q) {
  const float mu = float(4 * nu * nu), ix8 = 1.f / (8.f * x);
  float a = 1.f, ps = 1.f, qs = 0.f;
  for (int k = 1; k < 30; ++k) {
    const float o = float(2 * k - 1);
    const float na = a * (mu - o * o) * ix8 / float(k);  // a_k (8x)^-k
    if (k > 2 && ::fabsf(na) >= ::fabsf(a)) break;
    a = na;
    // P = a0 - a2 + a4 - ..., Q = a1 - a3 + ...
    const int r = k % 4;
    if (r == 1) qs += a;
    else if (r == 2) ps -= a;
    else if (r == 3) qs -= a;
    else ps += a;
    if (::fabsf(a) <= kEps * 1e-2f) break;
  }
  *p = ps;
  *q = qs;
}
// J_nu (y = false) or Y_nu (y = true) at x > 8
__device__ inline float bessel_jy_large(float x, int nu, bool y) {
  float p, q, s, c;
  bessel_hankel_pq(x, nu, &p, &q);
  tf::sincos(x, &s, &c);
  // chi = x - pi/4 (nu = 0) or x - 3 pi/4 (nu = 1)
  const float h = 0.70710678118654752440f;
  const float cchi = nu ? (s - c) * h : (c + s) * h;
  const float schi = nu ? -(s + c) * h : (s - c) * h;
  const float amp = ::sqrtf(0.63661977236758134f / x);  // sqrt(2 / (pi x))
  return y ? amp * (p * schi + q * cchi) : amp * (p * cchi - q * schi);
}
__device__ inline float j0(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();  // torch: NaN at +-inf
  const float ax = ::fabsf(x);
  if (ax > kBesselJSwitch) return bessel_jy_large(ax, 0, false);
  FF s, h;
  bessel_j_series(ax, 0, &s, &h);
  return s.hi + s.lo;
}
__device__ inline float j1(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();
  const float ax = ::fabsf(x);
  float r;
  if (ax > kBesselJSwitch) {
    r = bessel_jy_large(ax, 1, false);
  } else {
    FF s, h;
    bessel_j_series(ax, 1, &s, &h);
    r = 0.5f * ax * (s.hi + s.lo);
  }
  return x < 0.f ? -r : r;
}
// Y0 = (2/pi) [(log(x/2) + gamma) J0(x) + sum_k>=1 (-1)^(k+1) H_k y^k / (k!)^2]
__device__ inline float y0(float x) {
  if (f_isnan(x) || x < 0.f || x == f_inf()) return f_nan();
  if (x == 0.f) return -f_inf();
  if (x > kBesselJSwitch) return bessel_jy_large(x, 0, true);
  FF s, h;
  bessel_j_series(x, 0, &s, &h);  // h = sum (-y)^k 2 H_k / (k!)^2
  const FF lg = ff_add(FF{::logf(0.5f * x), 0.f}, ff_euler());
  const FF r = ff_add(ff_mul(lg, s), ff_neg(ff_mul(FF{0.5f, 0.f}, h)));
  return 0.63661977236758134f * (r.hi + r.lo);
}
// Y1 = -2/(pi x) + (2/pi) log(x/2) J1(x) - (x / (2 pi)) sum_k (psi(k+1) + psi(k+2)) (-y)^k / (k! (k+1)!),
// psi(k+1) + psi(k+2) = H_k + H_(k+1) - 2 gamma
__device__ inline float y1(float x) {
  if (f_isnan(x) || x < 0.f || x == f_inf()) return f_nan();
  if (x == 0.f) return -f_inf();
  if (x > kBesselJSwitch) return bessel_jy_large(x, 1, true);
  FF s, h;
  bessel_j_series(x, 1, &s, &h);
  // (2/pi) log(x/2) (x/2) s - (x/(2 pi)) (h - 2 gamma s) = (x/pi) [(log(x/2) + gamma) s - h/2]
  const FF lg = ff_add(FF{::logf(0.5f * x), 0.f}, ff_euler());
  const FF r = ff_add(ff_mul(lg, s), ff_neg(ff_mul(FF{0.5f, 0.f}, h)));
  return -0.63661977236758134f / x + 0.31830988618379067f * x * (r.hi + r.lo);
}

// the CPU's formula in the compute type: the Maclaurin polynomial below 1/2, sin(x)/x above
__device__ inline float spherical_j0(float x) {
  if (f_isinf(x)) return 0.f;
  if (::fabsf(x) < 0.5f) {
    const float y = x * x;
    return 1.f + y * (-1.f / 6 + y * (1.f / 120 + y * (-1.f / 5040 + y * (1.f / 362880 + y * (-1.f / 39916800
           + y * (1.f / 6227020800.f))))));
  }
  return tf::sin(x) / x;
}

// -- the normal distribution ----------------------------------------------------------------------
__device__ inline float lgamma(float x) { return f_isinf(x) ? ::fabsf(x) : ::lgammaf(x); }
__device__ inline float ndtr(float x) {
  const float t = x * 0.70710678118654752440f, z = ::fabsf(t);
  if (z < 0.70710678118654752440f) return 0.5f + 0.5f * ::erff(t);
  const float y = 0.5f * ::erfcf(z);
  return t > 0.f ? 1.f - y : y;
}
// log ndtr: erfcx in the lower tail (log(erfcx(-t) / 2) - t^2), log1p(-erfc(t) / 2) elsewhere
__device__ inline float log_ndtr(float x) {
  const float t = x * 0.70710678118654752440f;
  if (x < -1.f) return ::logf(::erfcxf(-t) * 0.5f) - t * t;
  return ::log1pf(-0.5f * ::erfcf(t));
}
__device__ inline float ndtri(float p) {
  if (f_isnan(p) || p < 0.f || p > 1.f) return f_nan();
  if (p == 0.f) return -f_inf();
  if (p == 1.f) return f_inf();
  const bool upper = p > 0.5f;
  const float q = upper ? 1.f - p : p;  // exact (Sterbenz)
  float x;
  if (q >= 1e-6f) {
    x = ::normcdfinvf(q);
  } else {
    // log q = log phi(x) - log|x| + O(x^-2): x0 = -sqrt(L - log L - log 2 pi), L = -2 log q; then Newton on
    // log ndtr(x) = log q (d/dx log ndtr = phi / ndtr)
    const float lq = ::logf(q);
    const float L = -2.f * lq;
    x = -::sqrtf(L - ::logf(L) - 1.8378770664093453f);
    for (int i = 0; i < 3; ++i) {
      const float ln = log_ndtr(x);
      const float step = (ln - lq) * 2.5066282746310002f * ::expf(0.5f * x * x + ln);
      x -= step;
    }
  }
  return upper ? -x : x;
}

}  // namespace smf
}  // namespace tl
