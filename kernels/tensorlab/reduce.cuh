// Reduction functors for kernels/reduce.cu (and the row helpers softmax.cu and scan.cu share).
// Each op is a template <In, Out> struct with
//   State                      the running accumulator (a POD of at most four fields, <= 32 bytes)
//   identity(arg)              the State of an empty range
//   push(state, x, r, arg)     fold in element x (its row-major index r among the reduced elements)
//   combine(a, b, arg)         merge two States (a thread's with another's, or two split partials)
//   store(state, n, arg, out, index)  write the result (n: the number of reduced elements)
// Values are loaded as the CPU backend computes them: converted to Out first (sum(x, dtype=int64)
// truncates floats), then widened to the accumulation type (float for half/bfloat16, long long
// for integral and bool results, whose sums and products wrap modulo 2**bits exactly as the
// narrower type would).
#pragma once
#include "cast.cuh"

namespace tl {

template <typename T> struct Wide { using type = T; };
template <> struct Wide<__half> { using type = float; };
template <> struct Wide<__nv_bfloat16> { using type = float; };

template <typename T> struct AccOf { using type = long long; };
template <> struct AccOf<__half> { using type = float; };
template <> struct AccOf<__nv_bfloat16> { using type = float; };
template <> struct AccOf<float> { using type = float; };
template <> struct AccOf<double> { using type = double; };

template <typename Out, typename In>
__device__ __forceinline__ typename AccOf<Out>::type acc_load(In x) {
  return static_cast<typename AccOf<Out>::type>(widen(cast<Out>(x)));
}

__device__ __forceinline__ double inf_value() { return __longlong_as_double(0x7ff0000000000000LL); }

// Smallest and largest values (the identities of max and min).
template <typename T> struct Bounds;
template <> struct Bounds<bool> { __device__ static bool lowest() { return false; } __device__ static bool highest() { return true; } };
template <> struct Bounds<unsigned char> {
  __device__ static unsigned char lowest() { return 0; } __device__ static unsigned char highest() { return 255; } };
template <> struct Bounds<signed char> {
  __device__ static signed char lowest() { return -128; } __device__ static signed char highest() { return 127; } };
template <> struct Bounds<short> {
  __device__ static short lowest() { return -32768; } __device__ static short highest() { return 32767; } };
template <> struct Bounds<int> {
  __device__ static int lowest() { return -2147483647 - 1; } __device__ static int highest() { return 2147483647; } };
template <> struct Bounds<long long> {
  __device__ static long long lowest() { return -9223372036854775807LL - 1; }
  __device__ static long long highest() { return 9223372036854775807LL; } };
template <> struct Bounds<float> {
  __device__ static float lowest() { return -__int_as_float(0x7f800000); }
  __device__ static float highest() { return __int_as_float(0x7f800000); } };
template <> struct Bounds<double> {
  __device__ static double lowest() { return -inf_value(); } __device__ static double highest() { return inf_value(); } };

template <typename T> __device__ __forceinline__ bool is_nan(T v) { return v != v; }
// NaN-propagating max/min (NumPy's and torch's): a NaN operand wins.
template <typename T> __device__ __forceinline__ T max_nan(T a, T b) { return (is_nan(b) || b > a) ? b : a; }
template <typename T> __device__ __forceinline__ T min_nan(T a, T b) { return (is_nan(b) || b < a) ? b : a; }

__device__ __forceinline__ float m_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double m_abs(double v) { return fabs(v); }
__device__ __forceinline__ float m_exp(float v) { return expf(v); }
__device__ __forceinline__ double m_exp(double v) { return exp(v); }
__device__ __forceinline__ float m_log(float v) { return logf(v); }
__device__ __forceinline__ double m_log(double v) { return log(v); }
__device__ __forceinline__ float m_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double m_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }

// Warp shuffles of any accumulator type (types under 4 bytes travel as int).
template <typename T>
__device__ __forceinline__ T shfl_down(T v, unsigned off, int width) {
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(__shfl_down_sync(0xffffffffu, static_cast<int>(v), off, width));
  } else {
    return __shfl_down_sync(0xffffffffu, v, off, width);
  }
}
template <typename T>
__device__ __forceinline__ T shfl_up(T v, unsigned off) {
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(__shfl_up_sync(0xffffffffu, static_cast<int>(v), off));
  } else {
    return __shfl_up_sync(0xffffffffu, v, off);
  }
}

template <typename A> struct Val { A a; };
template <typename A, typename B> struct Pair { A a; B b; };
template <typename A, typename B, typename C> struct Triple { A a; B b; C c; };

template <typename A, typename B, typename C, typename D> struct Quad { A a; B b; C c; D d; };

template <typename A>
__device__ __forceinline__ Val<A> shfl_down(Val<A> s, unsigned off, int w) { return {shfl_down(s.a, off, w)}; }
template <typename A, typename B>
__device__ __forceinline__ Pair<A, B> shfl_down(Pair<A, B> s, unsigned off, int w) {
  return {shfl_down(s.a, off, w), shfl_down(s.b, off, w)};
}
template <typename A, typename B, typename C>
__device__ __forceinline__ Triple<A, B, C> shfl_down(Triple<A, B, C> s, unsigned off, int w) {
  return {shfl_down(s.a, off, w), shfl_down(s.b, off, w), shfl_down(s.c, off, w)};
}
template <typename A, typename B, typename C, typename D>
__device__ __forceinline__ Quad<A, B, C, D> shfl_down(Quad<A, B, C, D> s, unsigned off, int w) {
  return {shfl_down(s.a, off, w), shfl_down(s.b, off, w), shfl_down(s.c, off, w), shfl_down(s.d, off, w)};
}

// -- sum, prod, mean -------------------------------------------------------------------------------
template <typename In, typename Out>
struct Sum {
  using Acc = typename AccOf<Out>::type;
  using State = Val<Acc>;
  __device__ static State identity(double) { return {Acc(0)}; }
  __device__ static void push(State& s, In x, long long, double) { s.a += acc_load<Out>(x); }
  __device__ static State combine(State a, State b, double) { return {a.a + b.a}; }
  __device__ static void store(State s, long long, double, Out* out, long long*) { *out = cast<Out>(s.a); }
};

template <typename In, typename Out>
struct Prod {
  using Acc = typename AccOf<Out>::type;
  using State = Val<Acc>;
  __device__ static State identity(double) { return {Acc(1)}; }
  __device__ static void push(State& s, In x, long long, double) { s.a *= acc_load<Out>(x); }
  __device__ static State combine(State a, State b, double) { return {a.a * b.a}; }
  __device__ static void store(State s, long long, double, Out* out, long long*) { *out = cast<Out>(s.a); }
};

template <typename In, typename Out>
struct Mean : Sum<In, Out> {
  using typename Sum<In, Out>::Acc;
  using typename Sum<In, Out>::State;
  __device__ static void store(State s, long long n, double, Out* out, long long*) {
    *out = cast<Out>(s.a / static_cast<Acc>(n));
  }
};

// -- all, any, count_nonzero -----------------------------------------------------------------
template <typename In, typename Out>
struct All {
  using State = Val<bool>;
  __device__ static State identity(double) { return {true}; }
  __device__ static void push(State& s, In x, long long, double) { s.a = s.a && cast<bool>(x); }
  __device__ static State combine(State a, State b, double) { return {a.a && b.a}; }
  __device__ static void store(State s, long long, double, Out* out, long long*) { *out = cast<Out>(s.a); }
};

template <typename In, typename Out>
struct Any {
  using State = Val<bool>;
  __device__ static State identity(double) { return {false}; }
  __device__ static void push(State& s, In x, long long, double) { s.a = s.a || cast<bool>(x); }
  __device__ static State combine(State a, State b, double) { return {a.a || b.a}; }
  __device__ static void store(State s, long long, double, Out* out, long long*) { *out = cast<Out>(s.a); }
};

template <typename In, typename Out>
struct CountNonzero {
  using State = Val<long long>;
  __device__ static State identity(double) { return {0}; }
  __device__ static void push(State& s, In x, long long, double) { s.a += cast<bool>(x) ? 1 : 0; }
  __device__ static State combine(State a, State b, double) { return {a.a + b.a}; }
  __device__ static void store(State s, long long, double, Out* out, long long*) { *out = cast<Out>(s.a); }
};

// -- norm, var, std ----------------------------------------------------------------------------------
// float32/float16/bfloat16 accumulate in float with a power-of-two scale, so a square (or a power) of a
// value near float's range neither overflows nor underflows where the result is finite: std([1e30, 1,
// 2, 3]) is 5e29, norm([3e-25, 4e-25]) 5e-25, on every device (torch's CUDA kernels give inf and 0
// there). The scale is 2^k with k the exponent of the largest |x| seen, clamped to [-126, 126]: a value
// times inv = 2^-k is exact and below 4, so sums of squares stay below 16 n; a state with a smaller
// scale is brought to a larger one by another exact power of two (squares by its square, clamped at
// 2^-126: what that drops is below 2^-126 of the larger state's terms). Where nothing leaves float's
// range, the scaled sums are the unscaled float sums' bits times 2^-2k. float64 accumulates in double,
// unscaled. No FP64 instruction in the float kernels: the double `arg` (p, correction) arrives as its bits,
// is classified by them and converted to float in integers (arg_float).

// 2^e for e in [-126, 127] (a normal float).
__device__ __forceinline__ float pow2f(int e) { return __int_as_float((e + 127) << 23); }
// The biased exponent of a finite float (0 for zero and subnormals).
__device__ __forceinline__ int exp_bits(float a) { return (__float_as_int(a) >> 23) & 0xff; }
// The scale exponent for a finite |x|: floor(log2 |x|) clamped to [-126, 126].
__device__ __forceinline__ int scale_exp(float a) { return min(max(exp_bits(a), 1), 253) - 127; }
// inv_from / inv_to for scales inv = 2^-k (inv_to <= inv_from), and its square, clamped below at 2^-126.
__device__ __forceinline__ float scale_ratio(float inv_to, float inv_from) {
  return pow2f(max(exp_bits(inv_to) - exp_bits(inv_from), -126));
}
__device__ __forceinline__ float scale_ratio2(float inv_to, float inv_from) {
  return pow2f(max(2 * (exp_bits(inv_to) - exp_bits(inv_from)), -126));
}
// The scale inv = 2^-k that holds |x| (unchanged for inf/NaN, which poison the sums by themselves).
__device__ __forceinline__ float grown_inv(float inv, float x) {
  const float a = fabsf(x);
  if (!(a <= 3.4028234663852886e38f)) return inv;
  return fminf(inv, pow2f(-scale_exp(a)));
}

// The norm's p, classified from the double's bits (no FP64 compare in a float kernel).
enum NormKind { kNorm2, kNorm1, kNorm0, kNormInf, kNormNegInf, kNormPos, kNormNeg };
__device__ __forceinline__ int norm_kind(double pd) {
  const long long b = __double_as_longlong(pd);
  if (b == 0x4000000000000000LL) return kNorm2;
  if (b == 0x3ff0000000000000LL) return kNorm1;
  if ((b << 1) == 0) return kNorm0;
  if (b == 0x7ff0000000000000LL) return kNormInf;
  if (b == static_cast<long long>(0xfff0000000000000ULL)) return kNormNegInf;
  return b < 0 ? kNormNeg : kNormPos;
}

// The double argument as a float, rounded in integer operations (cast.cuh), as static_cast<float> rounds.
__device__ __forceinline__ float arg_float(double a) {
  return f32_from_f64_bits(static_cast<unsigned long long>(__double_as_longlong(a)));
}

template <typename Out> struct IsDouble { static constexpr bool value = false; };
template <> struct IsDouble<double> { static constexpr bool value = true; };

// Float: state (a, b, c) by kind:
//   2:       a = sum of (|x| inv)^2, c = inv = 2^-k                       (b unused)
//   other p: a = sum of (u / s)^q, b = s = max u so far, c = 1 / s (1 when s is inf, 0 when s is 0),
//            with u = |x|, q = p for p > 0, and u = 1 / |x|, q = -p for p < 0 (the p-norm of x is the
//            reciprocal of the q-norm of 1 / |x|): every term is at most 1 (up to rounding of c)
//   1, 0, inf, -inf: a = sum, count, max, min                            (b, c unused)
template <typename In, typename Out, bool Wide>
struct NormAcc {
  using State = Triple<float, float, float>;
  __device__ static State identity(double pd) {
    const int k = norm_kind(pd);
    return {k == kNormNegInf ? Bounds<float>::highest() : 0.f, 0.f, k == kNorm2 ? pow2f(126) : 0.f};
  }
  __device__ static void push(State& s, In x, long long, double pd) {
    const int k = norm_kind(pd);
    float v = fabsf(acc_load<Out>(x));
    if (k == kNorm2) {
      float t = v * s.c;
      if (!(t < 2.f)) {
        const float inv = grown_inv(s.c, v);
        s.a *= scale_ratio2(inv, s.c);
        s.c = inv;
        t = v * inv;
      }
      s.a = fmaf(t, t, s.a);
    } else if (k == kNorm1) {
      s.a += v;
    } else if (k == kNormInf) {
      s.a = max_nan(s.a, v);
    } else if (k == kNormNegInf) {
      s.a = min_nan(s.a, v);
    } else if (k == kNorm0) {
      s.a += v != 0.f ? 1.f : 0.f;
    } else {
      const float q = k == kNormPos ? arg_float(pd) : -arg_float(pd);
      if (k == kNormNeg) v = 1.f / v;
      if (v > s.b) {  // a new largest u: the sum so far in units of u (NaN u falls through)
        s.a *= powf(s.b / v, q);
        s.b = v;
        s.c = v == Bounds<float>::highest() ? 1.f : 1.f / v;
      }
      s.a += powf(v * s.c, q);
    }
  }
  __device__ static State combine(State a, State b, double pd) {
    const int k = norm_kind(pd);
    if (k == kNorm2) {
      if (a.c > b.c) { State t = a; a = b; b = t; }  // a has the larger scale (smaller inv)
      return {a.a + b.a * scale_ratio2(a.c, b.c), 0.f, a.c};
    }
    if (k == kNormInf) return {max_nan(a.a, b.a), 0.f, 0.f};
    if (k == kNormNegInf) return {min_nan(a.a, b.a), 0.f, 0.f};
    if (k == kNormPos || k == kNormNeg) {
      if (a.b < b.b) { State t = a; a = b; b = t; }
      const float q = k == kNormPos ? arg_float(pd) : -arg_float(pd);
      const float ratio = a.b == b.b ? 1.f : b.b / a.b;
      return {a.a + b.a * powf(ratio, q), a.b, a.c};
    }
    return {a.a + b.a, 0.f, 0.f};
  }
  __device__ static void store(State s, long long, double pd, Out* out, long long*) {
    const int k = norm_kind(pd);
    float r = s.a;
    if (k == kNorm2) {
      r = sqrtf(s.a) * pow2f(127 - exp_bits(s.c));
    } else if (k == kNormPos || k == kNormNeg) {
      const float q = k == kNormPos ? arg_float(pd) : -arg_float(pd);
      r = s.b * powf(s.a, 1.f / q);
      if (k == kNormNeg) r = 1.f / r;
    }
    *out = cast<Out>(r);
  }
};

// Double: sums of |x|^p unscaled (p in {0, 1, 2, inf, -inf} by special cases, any other p by pow).
template <typename In, typename Out>
struct NormAcc<In, Out, true> {
  using State = Val<double>;
  __device__ static State identity(double p) { return {p == -inf_value() ? inf_value() : 0.0}; }
  __device__ static void push(State& s, In x, long long, double p) {
    const double inf = inf_value(), v = fabs(acc_load<Out>(x));
    if (p == 2) s.a += v * v;
    else if (p == 1) s.a += v;
    else if (p == inf) s.a = max_nan(s.a, v);
    else if (p == -inf) s.a = min_nan(s.a, v);
    else if (p == 0) s.a += v != 0.0 ? 1.0 : 0.0;
    else s.a += pow(v, p);
  }
  __device__ static State combine(State a, State b, double p) {
    if (p == inf_value()) return {max_nan(a.a, b.a)};
    if (p == -inf_value()) return {min_nan(a.a, b.a)};
    return {a.a + b.a};
  }
  __device__ static void store(State s, long long, double p, Out* out, long long*) {
    const double inf = inf_value();
    double r = s.a;
    if (p == 2) r = sqrt(r);
    else if (p != 1 && p != 0 && p != inf && p != -inf) r = pow(r, 1.0 / p);
    *out = cast<Out>(r);
  }
};

// var, std: Welford (mean, sum of squared deviations, count), merged with Chan's formula. Float: the
// mean and the sum in units of the scale inv = 2^-k (d), so deviations stay below 4 and their squares
// below 16 per element; the result is scaled back by 2^k twice (var) or once (std).
template <typename In, typename Out, bool Sqrt, bool Wide>
struct Moments {
  using State = Quad<float, float, long long, float>;
  __device__ static State identity(double) { return {0.f, 0.f, 0, pow2f(126)}; }
  __device__ static void push(State& s, In x, long long, double) {
    const float v = acc_load<Out>(x);
    float vs = v * s.d;
    if (!(fabsf(vs) < 2.f)) {
      const float inv = grown_inv(s.d, v);
      s.a *= scale_ratio(inv, s.d);
      s.b *= scale_ratio2(inv, s.d);
      s.d = inv;
      vs = v * inv;
    }
    s.c += 1;
    const float d = vs - s.a;
    s.a += d / static_cast<float>(s.c);
    s.b = fmaf(d, vs - s.a, s.b);
  }
  __device__ static State combine(State a, State b, double) {
    if (b.c == 0) return a;
    if (a.c == 0) return b;
    if (a.d > b.d) {  // bring a to b's larger scale
      a.a *= scale_ratio(b.d, a.d);
      a.b *= scale_ratio2(b.d, a.d);
      a.d = b.d;
    } else if (b.d > a.d) {
      b.a *= scale_ratio(a.d, b.d);
      b.b *= scale_ratio2(a.d, b.d);
    }
    const long long n = a.c + b.c;
    const float d = b.a - a.a, nb = static_cast<float>(b.c) / static_cast<float>(n);
    return {a.a + d * nb, a.b + b.b + d * d * static_cast<float>(a.c) * nb, n, a.d};
  }
  __device__ static void store(State s, long long, double correction, Out* out, long long*) {
    const float dof = static_cast<float>(s.c) - arg_float(correction);
    const float r = s.b / (dof > 0.f ? dof : 0.f);
    const float scale = pow2f(127 - exp_bits(s.d));  // 2^k = 1 / inv
    *out = cast<Out>(Sqrt ? sqrtf(r) * scale : r * scale * scale);
  }
};

template <typename In, typename Out, bool Sqrt>
struct Moments<In, Out, Sqrt, true> {
  using State = Triple<double, double, long long>;
  __device__ static State identity(double) { return {0.0, 0.0, 0}; }
  __device__ static void push(State& s, In x, long long, double) {
    const double v = acc_load<Out>(x);
    s.c += 1;
    const double d = v - s.a;
    s.a += d / static_cast<double>(s.c);
    s.b += d * (v - s.a);
  }
  __device__ static State combine(State a, State b, double) {
    if (b.c == 0) return a;
    if (a.c == 0) return b;
    const long long n = a.c + b.c;
    const double d = b.a - a.a, nb = static_cast<double>(b.c) / static_cast<double>(n);
    return {a.a + d * nb, a.b + b.b + d * d * static_cast<double>(a.c) * nb, n};
  }
  __device__ static void store(State s, long long, double correction, Out* out, long long*) {
    const double dof = static_cast<double>(s.c) - correction;
    const double r = s.b / (dof > 0.0 ? dof : 0.0);
    *out = cast<Out>(Sqrt ? sqrt(r) : r);
  }
};
template <typename In, typename Out> using Norm = NormAcc<In, Out, IsDouble<Out>::value>;
template <typename In, typename Out> using Var = Moments<In, Out, false, IsDouble<Out>::value>;
template <typename In, typename Out> using Std = Moments<In, Out, true, IsDouble<Out>::value>;

// -- logsumexp: online (max, sum of exp(x - max)); NaN, +inf and all -inf give NaN, +inf, -inf -----
template <typename In, typename Out>
struct LogSumExp {
  using Acc = typename AccOf<Out>::type;
  using State = Pair<Acc, Acc>;  // a: max so far, b: sum of exp(x - a)
  __device__ static State identity(double) { return {Bounds<Acc>::lowest(), Acc(0)}; }
  __device__ static State merge(State s, Acc m, Acc e) {  // s with a value of weight e at scale m
    const Acc inf = Bounds<Acc>::highest();
    if (is_nan(s.a) || is_nan(m)) return {is_nan(s.a) ? s.a : m, Acc(0)};
    if (s.a == inf || m == inf) return {inf, Acc(0)};
    if (m == -inf) return s;
    if (s.a == -inf) return {m, e};
    if (m > s.a) return {m, s.b * m_exp(s.a - m) + e};
    return {s.a, s.b + e * m_exp(m - s.a)};
  }
  __device__ static void push(State& s, In x, long long, double) { s = merge(s, acc_load<Out>(x), Acc(1)); }
  __device__ static State combine(State a, State b, double) { return merge(a, b.a, b.b); }
  __device__ static void store(State s, long long, double, Out* out, long long*) {
    const Acc inf = Bounds<Acc>::highest();
    bool special = is_nan(s.a) || s.a == inf || s.a == -inf;
    *out = cast<Out>(special ? s.a : m_log(s.b) + s.a);
  }
};

// -- argmax/argmin (with the value; amax/amin store the value only): the first extreme in row-major
// order, NaN the most extreme (torch's rule) ------------------------------------------------------------
template <typename In, typename Out, bool Max>
struct ArgExtreme {
  using Acc = typename Wide<In>::type;
  using State = Pair<Acc, long long>;
  __device__ static State identity(double) {
    return {Max ? Bounds<Acc>::lowest() : Bounds<Acc>::highest(), 9223372036854775807LL};
  }
  __device__ static bool first(State a, State b) {  // a is the result of combining a and b
    if (is_nan(a.a)) return !is_nan(b.a) || a.b < b.b;
    if (is_nan(b.a)) return false;
    if (a.a == b.a) return a.b < b.b;
    return Max ? a.a > b.a : a.a < b.a;
  }
  __device__ static void push(State& s, In x, long long r, double) {
    State c{static_cast<Acc>(widen(x)), r};
    if (first(c, s)) s = c;
  }
  __device__ static State combine(State a, State b, double) { return first(a, b) ? a : b; }
  __device__ static void store(State s, long long, double, Out* out, long long* index) {
    if (out) *out = cast<Out>(s.a);
    if (index) *index = s.b;
  }
};
template <typename In, typename Out> using ArgMax = ArgExtreme<In, Out, true>;
template <typename In, typename Out> using ArgMin = ArgExtreme<In, Out, false>;

// Merge the States of the `lanes` threads that share one output: consecutive lanes (red_fast) by
// warp shuffles, plus shared memory `smem` (a slot per warp) when a group spans several warps;
// strided lanes (tid / opb) through smem (a slot per thread). Every thread of the block calls it.
template <typename O, typename S>
__device__ __forceinline__ S group_merge(S s, S* smem, int tid, int lanes, int red_fast, int opb, int o_lane,
                                         int r_lane, double arg) {
  if (lanes == 1) return s;
  if (red_fast) {
    const int w = lanes < 32 ? lanes : 32;
    for (int off = w / 2; off > 0; off >>= 1) s = O::combine(s, tl::shfl_down(s, off, w), arg);
    if (lanes > 32) {
      const int warp = tid >> 5, lane = tid & 31, nw = lanes >> 5;
      if (lane == 0) smem[warp] = s;
      __syncthreads();
      if (r_lane < 32) {  // the group's first warp merges its warps' results
        s = lane < nw ? smem[(warp / nw) * nw + lane] : O::identity(arg);
        for (int off = 16; off > 0; off >>= 1) s = O::combine(s, tl::shfl_down(s, off, 32), arg);
      }
      __syncthreads();
    }
    return s;
  }
  smem[tid] = s;
  __syncthreads();
  if (r_lane == 0) {
    for (int k = 1; k < lanes; ++k) s = O::combine(s, smem[k * opb + o_lane], arg);
  }
  __syncthreads();
  return s;
}

// Visits load(i) for i = begin, begin + step, ... < end in that order, issuing U independent loads
// before using any of them (U loads in flight per thread: Little's law, not one load per latency),
// then f(value, i) for each in order, so results equal the one-at-a-time loop's bit for bit.
// `end - (U - 1) * step` keeps the bound free of overflow near the top of a 32-bit Index.
template <int U, typename Index, typename Load, typename F>
__device__ __forceinline__ void for_each_loaded(Index begin, Index end, Index step, Load load, F f) {
  using V = decltype(load(begin));
  Index i = begin;
  for (; i < end - (U - 1) * step; i += U * step) {
    V v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load(i + k * step);
#pragma unroll
    for (int k = 0; k < U; ++k) f(v[k], i + k * step);
  }
  for (; i < end; i += step) f(load(i), i);
}

}  // namespace tl
