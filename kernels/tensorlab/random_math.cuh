// Float32 math of the random samplers (normal's Box-Muller, exponential's logarithm), written with
// correctly rounded float operations only (__fadd_rn, __fmul_rn, __fdiv_rn, __fsqrt_rn, integer
// bit manipulation) in a fixed order, so backends/cpu/random_math.py reproduces every value bit for
// bit with NumPy float32 operations: the one-RNG-stream guarantee (same numbers on the CPU and the
// GPU for a seed) without FP64 instructions in the float kernels and without depending on how a
// math library rounds log/sin/cos. Accuracy: log within ~1 ulp, sin/cos within ~2 ulp.
// The polynomial coefficients are float32 values, written in hex so both sides read the same bits.
#pragma once

namespace tl {
namespace rmath {

// log(x) for a positive normal float x: x = m 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1
// (exact), s = f / (2 + f), log(m) = 2 atanh(s) = f - s (f - R(s^2)) with
// R(z) = z (2/3 + z (2/5 + z (2/7 + z 2/9))) (|s| <= 0.172: truncation below 2^-28 relative),
// log(x) = e ln2_hi + (e ln2_lo + log(m)) with ln2_hi exact in 16 bits (e ln2_hi is exact).
__device__ __forceinline__ float log_pos(float x) {
  unsigned int bits = __float_as_uint(x);
  int e = static_cast<int>(bits >> 23) - 127;
  bits = (bits & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
  if (bits > 0x3FB504F3u) {                   // m > sqrt(2): halve it (exact)
    bits -= 0x00800000u;
    e += 1;
  }
  const float f = __fsub_rn(__uint_as_float(bits), 1.0f);
  const float s = __fdiv_rn(f, __fadd_rn(2.0f, f));
  const float z = __fmul_rn(s, s);
  float r = __fmul_rn(z, 0x1.c71c72p-3f);
  r = __fmul_rn(z, __fadd_rn(0x1.24924ap-2f, r));
  r = __fmul_rn(z, __fadd_rn(0x1.99999ap-2f, r));
  r = __fmul_rn(z, __fadd_rn(0x1.555556p-1f, r));
  const float logm = __fsub_rn(f, __fmul_rn(s, __fsub_rn(f, r)));
  const float ef = static_cast<float>(e);
  return __fadd_rn(__fmul_rn(ef, 0x1.62e4p-1f), __fadd_rn(__fmul_rn(ef, 0x1.7f7d1cp-20f), logm));
}

// (cos t, sin t) for t = 2 pi k / 2^24, k the top 24 bits of a word: the quadrant is k's top 2
// bits, the angle within it (pi / 2) a with a = the other 22 bits / 2^22 in [0, 1); a > 1/2 uses
// the complement 1 - a (sin and cos swap), so the polynomials only see a in [0, 1/2] (angles up to
// pi / 4): sin(pi/2 a) = a S(a^2) to a^9 and cos(pi/2 a) = C(a^2) to a^10 (Taylor; truncation
// below 2^-27 relative). Everything before the polynomials is exact.
__device__ __forceinline__ void sincos_turn(unsigned int w, float& c, float& s) {
  const unsigned int k = w >> 8;
  const unsigned int quadrant = k >> 22;
  unsigned int ak = k & 0x3FFFFFu;
  const bool swap = ak > 0x200000u;
  if (swap) ak = 0x400000u - ak;
  const float a = __fmul_rn(static_cast<float>(ak), 0x1p-22f);
  const float a2 = __fmul_rn(a, a);
  float ps = __fmul_rn(a2, 0x1.507834p-13f);
  ps = __fmul_rn(a2, __fadd_rn(-0x1.32d2ccp-8f, ps));
  ps = __fmul_rn(a2, __fadd_rn(0x1.466bc6p-4f, ps));
  ps = __fmul_rn(a2, __fadd_rn(-0x1.4abbcep-1f, ps));
  const float sa = __fmul_rn(a, __fadd_rn(0x1.921fb6p+0f, ps));
  float pc = __fmul_rn(a2, -0x1.a6d1f2p-16f);
  pc = __fmul_rn(a2, __fadd_rn(0x1.e1f506p-11f, pc));
  pc = __fmul_rn(a2, __fadd_rn(-0x1.55d3c8p-6f, pc));
  pc = __fmul_rn(a2, __fadd_rn(0x1.03c1f0p-2f, pc));
  pc = __fmul_rn(a2, __fadd_rn(-0x1.3bd3ccp+0f, pc));
  const float ca = __fadd_rn(1.0f, pc);
  const float sq = swap ? ca : sa, cq = swap ? sa : ca;  // sin and cos of the angle within the quadrant
  switch (quadrant) {
    case 0: c = cq; s = sq; break;
    case 1: c = -sq; s = cq; break;
    case 2: c = -cq; s = -sq; break;
    default: c = sq; s = -cq; break;
  }
}

// Box-Muller on words (w0, w1): r = sqrt(-2 log(1 - U0)) with U0 = (w0 >> 8) / 2^24 (1 - U0 exact
// in (0, 1]), angle 2 pi U1; z = (r cos, r sin).
__device__ __forceinline__ void box_muller(unsigned int w0, unsigned int w1, float& z0, float& z1) {
  const float v = __fmul_rn(static_cast<float>(0x1000000u - (w0 >> 8)), 0x1p-24f);
  const float r = __fsqrt_rn(__fmul_rn(-2.0f, log_pos(v)));
  float c, s;
  sincos_turn(w1, c, s);
  z0 = __fmul_rn(r, c);
  z1 = __fmul_rn(r, s);
}

// -log(U') for U' = (2 (w >> 9) + 1) / 2^24, the midpoint of a 23-bit uniform's cell: exact in
// float, in (0, 1), so the result is positive and finite.
__device__ __forceinline__ float neg_log_uniform(unsigned int w) {
  const float u = __fmul_rn(static_cast<float>(((w >> 9) << 1) | 1u), 0x1p-24f);
  return -log_pos(u);
}

}  // namespace rmath
}  // namespace tl
