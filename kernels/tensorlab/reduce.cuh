// Reduction functors for kernels/reduce.cu (and the row helpers softmax.cu and scan.cu share).
// Each op is a template <In, Out> struct with
//   State                      the running accumulator (a POD of at most three fields)
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

// norm, var and std accumulate float32 in double (float16/bfloat16 in float): the CPU backend does the
// same, so squares and squared deviations past float32's range give one finite answer on every device
// (std([1e30, 1, 2, 3]) is 5e29, tensor([3e20, 1.]).norm() 3e20; torch's CUDA kernels give inf there, its
// CPU var/std the finite value: docs/torch-divergences.md). The only FP64 in float32 kernels, by choice.
// The double `arg` (p, correction) is converted to the accumulation type once.
template <typename T> struct WideAccOf { using type = typename AccOf<T>::type; };
template <> struct WideAccOf<float> { using type = double; };

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

// -- norm: p in {0, 1, 2, inf, -inf} by special cases, any other p by pow -------------------------
template <typename In, typename Out>
struct Norm {
  using Acc = typename WideAccOf<Out>::type;
  using State = Val<Acc>;
  __device__ static State identity(double pd) {
    const Acc p = static_cast<Acc>(pd);
    return {p == Bounds<Acc>::lowest() ? Bounds<Acc>::highest() : Acc(0)};
  }
  __device__ static void push(State& s, In x, long long, double pd) {
    const Acc p = static_cast<Acc>(pd), inf = Bounds<Acc>::highest();
    Acc v = m_abs(acc_load<Out>(x));
    if (p == 2) s.a += v * v;
    else if (p == 1) s.a += v;
    else if (p == inf) s.a = max_nan(s.a, v);
    else if (p == -inf) s.a = min_nan(s.a, v);
    else if (p == 0) s.a += v != Acc(0) ? Acc(1) : Acc(0);
    else s.a += m_pow(v, p);
  }
  __device__ static State combine(State a, State b, double pd) {
    const Acc p = static_cast<Acc>(pd), inf = Bounds<Acc>::highest();
    if (p == inf) return {max_nan(a.a, b.a)};
    if (p == -inf) return {min_nan(a.a, b.a)};
    return {a.a + b.a};
  }
  __device__ static void store(State s, long long, double pd, Out* out, long long*) {
    const Acc p = static_cast<Acc>(pd), inf = Bounds<Acc>::highest();
    Acc r = s.a;
    if (p == 2) r = m_sqrt(r);
    else if (p != 1 && p != 0 && p != inf && p != -inf) r = m_pow(r, Acc(1) / p);
    *out = cast<Out>(r);
  }
};

// -- var, std: Welford (mean, sum of squared deviations, count), merged with Chan's formula --------
template <typename In, typename Out, bool Sqrt>
struct Moments {
  using Acc = typename WideAccOf<Out>::type;
  using State = Triple<Acc, Acc, long long>;
  __device__ static State identity(double) { return {Acc(0), Acc(0), 0}; }
  __device__ static void push(State& s, In x, long long, double) {
    Acc v = acc_load<Out>(x);
    s.c += 1;
    Acc d = v - s.a;
    s.a += d / static_cast<Acc>(s.c);
    s.b += d * (v - s.a);
  }
  __device__ static State combine(State a, State b, double) {
    if (b.c == 0) return a;
    if (a.c == 0) return b;
    long long n = a.c + b.c;
    Acc d = b.a - a.a;
    Acc nb = static_cast<Acc>(b.c) / static_cast<Acc>(n);
    return {a.a + d * nb, a.b + b.b + d * d * static_cast<Acc>(a.c) * nb, n};
  }
  __device__ static void store(State s, long long, double correction, Out* out, long long*) {
    const Acc dof = static_cast<Acc>(s.c) - static_cast<Acc>(correction);
    Acc r = s.b / (dof > Acc(0) ? dof : Acc(0));
    *out = cast<Out>(Sqrt ? m_sqrt(r) : r);
  }
};
template <typename In, typename Out> using Var = Moments<In, Out, false>;
template <typename In, typename Out> using Std = Moments<In, Out, true>;

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
