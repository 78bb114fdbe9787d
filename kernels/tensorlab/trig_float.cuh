// sin, cos and tan of a float without FP64 (issue 37 item 4): CUDA's sinf/cosf/tanf reduce arguments above
// 105615 with a Payne-Hanek slow path whose last step (the 64-bit fraction times pi/2) runs in double, so
// every float kernel that calls them carries FP64 instructions. Here the whole reduction is integer:
//   |a| = M 2^e (M the 24-bit significand) and a / pi mod 2 = (M T mod 2^96) 2^-95, T the 96 bits of 1/pi
//   from weight 2^-e on (bits of weight 2^-e+1 and above give even integers; those below 2^-e-95 add less
//   than M 2^-95 <= 2^-71);
// the nearest half-integer m/2 of it gives the quadrant (m mod 4) and f = a / pi - m/2 in [-1/4, 1/4] to
// 2^-63 absolute, as a float pair; CUDA's sincospif (FP64-free, 1 ulp) of the high part, with the low part's
// first-order term, gives sin and cos of pi f. |a| < pi/4 skips the reduction (f = a / pi in float-float);
// |a| < 2^-12 returns a, 1 and a (the next terms are below half an ulp). Error: ~1-2 ulp for sin and cos,
// ~3 ulp for tan (CUDA's: 2, 2, 4); NaN for NaN and +-inf.
#pragma once

namespace tl {
namespace tf {

// The bits of 1/pi, 32 to a word, after one zero word: bit k of this string (k = 0 the top bit of word 0)
// has weight 2^-(k - 31). Enough words for the largest float exponent (2^127: bits up to weight 2^-200).
__device__ __forceinline__ unsigned inv_pi_word(int i) {
  switch (i) {
    case 0: return 0u;
    case 1: return 0x517cc1b7u;
    case 2: return 0x27220a94u;
    case 3: return 0xfe13abe8u;
    case 4: return 0xfa9a6ee0u;
    case 5: return 0x6db14accu;
    case 6: return 0x9e21c820u;
    case 7: return 0xff28b1d5u;
    default: return 0xef5de2b0u;
  }
}

// f (hi + lo) and the quadrant k with a = pi (k/2 + f) + 2 pi n, for finite |a| >= 2^-8 (a >= 0).
__device__ __forceinline__ void reduce_pi(float a, float* hi, float* lo, int* k) {
  const unsigned bits = __float_as_uint(a);
  const unsigned mant = (bits & 0x7fffffu) | 0x800000u;
  const int e = int(bits >> 23) - 150;  // a = mant 2^e
  const int idx = e + 31;               // bit index of weight 2^-e in the padded string (>= 0 for a >= 2^-8)
  const int q = idx >> 5, r = idx & 31;
  // |a| < 2^24 (idx <= 30): the first four words, constants; beyond, the words from q on
  unsigned long long w0 = 0u, w1 = 0x517cc1b7u, w2 = 0x27220a94u, w3 = 0xfe13abe8u;
  if (q != 0) {
    w0 = inv_pi_word(q);
    w1 = inv_pi_word(q + 1);
    w2 = inv_pi_word(q + 2);
    w3 = inv_pi_word(q + 3);
  }
  // T = the 96 bits from bit idx on, as t2:t1:t0 (a shift of a 64-bit pair: r = 0 is well defined)
  const unsigned t2 = unsigned(((w0 << 32) | w1) >> (32 - r));
  const unsigned t1 = unsigned(((w1 << 32) | w2) >> (32 - r));
  const unsigned t0 = unsigned(((w2 << 32) | w3) >> (32 - r));
  // X = M T mod 2^96, its top 64 bits: a / pi mod 2 = Y 2^-63
  // (32 x 32 -> 64-bit products: mul.wide.u32)
  unsigned long long p = (unsigned long long)mant * t0;
  p = (unsigned long long)mant * t1 + (p >> 32);
  const unsigned x1 = unsigned(p);
  p = (unsigned long long)mant * t2 + (p >> 32);
  const unsigned long long y = (p << 32) | x1;
  // m = round(2 Y 2^-63) mod 4, D = Y - m 2^62 in [-2^61, 2^61): f = D 2^-63
  const unsigned long long yr = y + (1ull << 61);
  *k = int(yr >> 62);
  const long long d = (long long)(yr & ((1ull << 62) - 1)) - (1ll << 61);
  const float dh = float(d);                     // rounded (an integer below 2^62: exact back in 64 bits)
  const float dl = float(d - (long long)dh);     // the rest, below ulp(dh)
  const float scale = 1.0842021724855044e-19f;  // 2^-63
  *hi = dh * scale;
  *lo = dl * scale;
}

// sin and cos of a float a.
__device__ inline void sincos(float a, float* s, float* c) {
  const float x = ::fabsf(a);
  if (!(x < __int_as_float(0x7f800000))) {  // NaN, +-inf
    *s = *c = a - a;
    return;
  }
  if (x < 2.44140625e-4f) {  // 2^-12
    *s = a;
    *c = 1.f;
    return;
  }
  float hi, lo;
  int k = 0;
  if (x < 0.78539818525f) {  // pi/4: f = x / pi in float-float (1/pi = c1 + c2)
    const float c1 = 0.31830987334251404f, c2 = 1.2841276486597053e-08f;
    hi = x * c1;
    lo = ::fmaf(x, c1, -hi) + x * c2;
  } else {
    reduce_pi(x, &hi, &lo, &k);
  }
  float sf, cf;
  ::sincospif(hi, &sf, &cf);
  const float t = lo * 3.14159274101257324f;  // pi lo: sin(pi (hi + lo)) = sf + pi lo cf to first order
  const float s0 = sf;
  sf = ::fmaf(t, cf, sf);
  cf = ::fmaf(-t, s0, cf);
  const float sk = k == 0 ? sf : k == 1 ? cf : k == 2 ? -sf : -cf;
  *c = k == 0 ? cf : k == 1 ? -sf : k == 2 ? -cf : sf;
  *s = a < 0.f ? -sk : sk;
}
__device__ inline float sin(float a) {
  float s, c;
  sincos(a, &s, &c);
  return s;
}
__device__ inline float cos(float a) {
  float s, c;
  sincos(a, &s, &c);
  return c;
}
__device__ inline float tan(float a) {
  if (::fabsf(a) < 2.44140625e-4f) return a;  // a + a^3/3: below half an ulp
  float s, c;
  sincos(a, &s, &c);
  return s / c;
}

}  // namespace tf
}  // namespace tl
