// One functor per elementwise kernel name of backends/cpu/elementwise.py, with that backend's
// semantics (NumPy's, evaluated in the compute type C: bool, long long for every integer dtype
// (dtype_code.cuh narrows), float for float16/bfloat16/float32, double). Each is a struct with
//   template <typename C> static R f(C a[, C b[, C c]], const Params<C>& p)
// where R is C, or bool for predicates. backends/cuda/elementwise.py maps kernel names to these.
#pragma once
#include "dtype_code.cuh"
#include "trig_float.cuh"

namespace tl {

// Scalar options of an op (alpha, value, nan_to_num's replacements, round's scale).
template <typename C>
struct Params {
  C p0, p1, p2;
};

namespace m {  // float and double overloads of the math functions
#define TL_MATH1(name, ff, fd)                                                  \
  __device__ __forceinline__ float name(float x) { return ::ff(x); }            \
  __device__ __forceinline__ double name(double x) { return ::fd(x); }
TL_MATH1(exp, expf, exp)
TL_MATH1(exp2, exp2f, exp2)
TL_MATH1(expm1, expm1f, expm1)
TL_MATH1(log, logf, log)
TL_MATH1(log2, log2f, log2)
TL_MATH1(log10, log10f, log10)
TL_MATH1(log1p, log1pf, log1p)
TL_MATH1(sqrt, sqrtf, sqrt)
TL_MATH1(tanh, tanhf, tanh)
TL_MATH1(floor, floorf, floor)
TL_MATH1(ceil, ceilf, ceil)
TL_MATH1(trunc, truncf, trunc)
TL_MATH1(rint, rintf, rint)  // round half to even
TL_MATH1(fabs, fabsf, fabs)
#undef TL_MATH1
// sin/cos/tan of float without CUDA's FP64 Payne-Hanek slow path (trig_float.cuh); double: CUDA's.
__device__ __forceinline__ float sin(float x) { return tf::sin(x); }
__device__ __forceinline__ double sin(double x) { return ::sin(x); }
__device__ __forceinline__ float cos(float x) { return tf::cos(x); }
__device__ __forceinline__ double cos(double x) { return ::cos(x); }
__device__ __forceinline__ float tan(float x) { return tf::tan(x); }
__device__ __forceinline__ double tan(double x) { return ::tan(x); }
__device__ __forceinline__ float fmod(float a, float b) { return ::fmodf(a, b); }
__device__ __forceinline__ double fmod(double a, double b) { return ::fmod(a, b); }
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
__device__ __forceinline__ float atan2(float a, float b) { return ::atan2f(a, b); }
__device__ __forceinline__ double atan2(double a, double b) { return ::atan2(a, b); }
__device__ __forceinline__ float copysign(float a, float b) { return ::copysignf(a, b); }
__device__ __forceinline__ double copysign(double a, double b) { return ::copysign(a, b); }
// erf in the compute type: CUDA's erff (max 2 ulp) for float16/bfloat16/float32, as torch's float
// kernels; no FP64 instruction in a float kernel.
__device__ __forceinline__ float erf(float x) { return ::erff(x); }
__device__ __forceinline__ double erf(double x) { return ::erf(x); }
// 1 + erf(x / sqrt 2) (twice the normal CDF) for GELU: float as erfc(-x / sqrt 2), which keeps its
// relative accuracy in the negative tail where 1 + erf cancels; double as the CPU backend's 1 + erf.
__device__ __forceinline__ float gelu_cdf2(float x) { return ::erfcf(x * -0.70710678118654752440f); }
__device__ __forceinline__ double gelu_cdf2(double x) { return ::erf(x * 0.70710678118654752440) + 1.0; }
__device__ __forceinline__ float inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
// Products that feed a sum, rounded on their own (NVRTC would otherwise contract them into an FMA
// and differ from the CPU backend in the last bit).
template <typename C>
__device__ __forceinline__ C mul_rn(C a, C b) { return static_cast<C>(a * b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
}  // namespace m

// Integer arithmetic in long long wraps modulo 2**64 (through unsigned: no undefined overflow).
template <typename C> __device__ __forceinline__ C add(C a, C b) { return static_cast<C>(a + b); }
template <typename C> __device__ __forceinline__ C sub(C a, C b) { return static_cast<C>(a - b); }
template <typename C> __device__ __forceinline__ C mul(C a, C b) { return static_cast<C>(a * b); }
template <typename C> __device__ __forceinline__ C neg(C a) { return static_cast<C>(-a); }
__device__ __forceinline__ float mul(float a, float b) { return m::mul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return m::mul_rn(a, b); }
__device__ __forceinline__ long long add(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long sub(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long mul(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long neg(long long a) {
  return static_cast<long long>(0ULL - static_cast<unsigned long long>(a));
}

template <typename C> __device__ __forceinline__ bool is_nan(C) { return false; }
__device__ __forceinline__ bool is_nan(float x) { return x != x; }
__device__ __forceinline__ bool is_nan(double x) { return x != x; }

// NumPy's maximum/minimum: a NaN on either side is the result.
template <typename C> __device__ __forceinline__ C maximum(C a, C b) { return (a >= b || is_nan(a)) ? a : b; }
template <typename C> __device__ __forceinline__ C minimum(C a, C b) { return (a <= b || is_nan(a)) ? a : b; }

namespace op {

#define TL_UNARY(Name, expr) \
  struct Name {              \
    template <typename C>    \
    __device__ __forceinline__ static auto f(C a, const Params<C>& p) { return expr; } \
  };
#define TL_BINARY(Name, expr) \
  struct Name {               \
    template <typename C>     \
    __device__ __forceinline__ static auto f(C a, C b, const Params<C>& p) { return expr; } \
  };
#define TL_TERNARY(Name, expr) \
  struct Name {                \
    template <typename C>      \
    __device__ __forceinline__ static auto f(C a, C b, C c, const Params<C>& p) { return expr; } \
  };

// -- unary ------------------------------------------------------------------------------------
template <typename C> __device__ __forceinline__ C abs_(C a) { return a < C(0) ? neg(a) : a; }
__device__ __forceinline__ float abs_(float a) { return m::fabs(a); }
__device__ __forceinline__ double abs_(double a) { return m::fabs(a); }
template <typename C> __device__ __forceinline__ C sign_(C a) { return static_cast<C>((C(0) < a) - (a < C(0))); }
__device__ __forceinline__ bool sign_(bool a) { return a; }

// floor/ceil/trunc/round leave integers as they are
template <typename C> __device__ __forceinline__ C floor_(C a) { return a; }
template <typename C> __device__ __forceinline__ C ceil_(C a) { return a; }
template <typename C> __device__ __forceinline__ C trunc_(C a) { return a; }
__device__ __forceinline__ float floor_(float a) { return m::floor(a); }
__device__ __forceinline__ double floor_(double a) { return m::floor(a); }
__device__ __forceinline__ float ceil_(float a) { return m::ceil(a); }
__device__ __forceinline__ double ceil_(double a) { return m::ceil(a); }
__device__ __forceinline__ float trunc_(float a) { return m::trunc(a); }
__device__ __forceinline__ double trunc_(double a) { return m::trunc(a); }

// round: p0 = 10**|decimals| in C, p1 = sign of decimals (torch: nearbyint(x * 10^d) / 10^d)
template <typename C> __device__ __forceinline__ C round_(C a, const Params<C>&) { return a; }
template <typename F>
__device__ __forceinline__ F round_float(F a, const Params<F>& p) {
  if (p.p1 > F(0)) return m::rint(a * p.p0) / p.p0;
  if (p.p1 < F(0)) return m::rint(a / p.p0) * p.p0;
  return m::rint(a);
}
__device__ __forceinline__ float round_(float a, const Params<float>& p) { return round_float(a, p); }
__device__ __forceinline__ double round_(double a, const Params<double>& p) { return round_float(a, p); }

template <typename C> __device__ __forceinline__ bool isinf_(C) { return false; }
__device__ __forceinline__ bool isinf_(float a) { return m::fabs(a) == m::inf(a); }
__device__ __forceinline__ bool isinf_(double a) { return m::fabs(a) == m::inf(a); }
template <typename C> __device__ __forceinline__ bool isfinite_(C a) { return !is_nan(a) && !isinf_(a); }

template <typename C> __device__ __forceinline__ C bitwise_not_(C a) { return ~a; }
__device__ __forceinline__ bool bitwise_not_(bool a) { return !a; }

// nan_to_num: p0 replaces NaN, p1 +inf, p2 -inf; integers and bools have neither
template <typename C> __device__ __forceinline__ C nan_to_num_(C a, const Params<C>&) { return a; }
template <typename F>
__device__ __forceinline__ F nan_to_num_float(F a, const Params<F>& p) {
  return a != a ? p.p0 : a == m::inf(a) ? p.p1 : a == -m::inf(a) ? p.p2 : a;
}
__device__ __forceinline__ float nan_to_num_(float a, const Params<float>& p) { return nan_to_num_float(a, p); }
__device__ __forceinline__ double nan_to_num_(double a, const Params<double>& p) { return nan_to_num_float(a, p); }

// gelu: p0 != 0 selects the tanh approximation; torch's order of operations, in C
template <typename F>
__device__ __forceinline__ F gelu_(F x, const Params<F>& p) {
  F t;
  if (p.p0 != F(0)) {
    F inner = x * x * x;
    inner = m::mul_rn(inner, F(0.044715)) + x;
    t = m::tanh(inner * F(0.79788456080286535588));
  } else {
    return (x * F(0.5)) * m::gelu_cdf2(x);
  }
  return (x * F(0.5)) * (t + F(1));
}

template <typename F> __device__ __forceinline__ F sigmoid_(F a) { return F(1) / (m::exp(-a) + F(1)); }

TL_UNARY(Neg, neg(a))
TL_UNARY(Abs, abs_(a))
TL_UNARY(Sign, sign_(a))
TL_UNARY(Exp, m::exp(a))
TL_UNARY(Exp2, m::exp2(a))
TL_UNARY(Expm1, m::expm1(a))
TL_UNARY(Log, m::log(a))
TL_UNARY(Log2, m::log2(a))
TL_UNARY(Log10, m::log10(a))
TL_UNARY(Log1p, m::log1p(a))
TL_UNARY(Sqrt, m::sqrt(a))
TL_UNARY(Rsqrt, C(1) / m::sqrt(a))
TL_UNARY(Square, mul(a, a))
TL_UNARY(Reciprocal, C(1) / a)
TL_UNARY(Sin, m::sin(a))
TL_UNARY(Cos, m::cos(a))
TL_UNARY(Tan, m::tan(a))
TL_UNARY(Tanh, m::tanh(a))
TL_UNARY(Sigmoid, sigmoid_(a))
TL_UNARY(Relu, maximum(a, C(0)))
TL_UNARY(Gelu, gelu_(a, p))
TL_UNARY(Silu, a / (m::exp(-a) + C(1)))
TL_UNARY(Erf, m::erf(a))
TL_UNARY(Floor, floor_(a))
TL_UNARY(Ceil, ceil_(a))
TL_UNARY(Trunc, trunc_(a))
TL_UNARY(Round, round_(a, p))
TL_UNARY(IsNan, is_nan(a))
TL_UNARY(IsInf, isinf_(a))
TL_UNARY(IsFinite, isfinite_(a))
TL_UNARY(LogicalNot, !(a != C(0)))
TL_UNARY(BitwiseNot, bitwise_not_(a))
TL_UNARY(NanToNum, nan_to_num_(a, p))

// -- binary -----------------------------------------------------------------------------------
// Integer division. A zero divisor is an error the host reports (in place: checked before; a fresh result: a
// device-side check raised at the next host wait), so its element is 0 here rather than a trap (the CPU
// emulation of the kernels would take SIGFPE); b == -1 is a negation, which cannot trap either.
__device__ __forceinline__ long long idiv_trunc(long long a, long long b) {
  return b == 0 ? 0 : b == -1 ? neg(a) : a / b;
}
__device__ __forceinline__ long long idiv_floor(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return neg(a);
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long imod_floor(long long a, long long b) {
  if (b == 0 || b == -1) return 0;
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ long long ifmod(long long a, long long b) { return b == 0 || b == -1 ? 0 : a % b; }

// NumPy's npy_divmod: Python's floor division and modulo for floats
template <typename F>
__device__ __forceinline__ F fdivmod(F a, F b, F* modulus) {
  F mod = m::fmod(a, b);
  if (b == F(0)) {
    *modulus = mod;
    return a / b;
  }
  F div = (a - mod) / b;
  if (mod != F(0)) {
    if ((b < F(0)) != (mod < F(0))) {
      mod += b;
      div -= F(1);
    }
  } else {
    mod = m::copysign(F(0), b);
  }
  F floordiv;
  if (div != F(0)) {
    floordiv = m::floor(div);
    if (div - floordiv > F(0.5)) floordiv += F(1);
  } else {
    floordiv = m::copysign(F(0), a / b);
  }
  *modulus = mod;
  return floordiv;
}
__device__ __forceinline__ long long div_trunc_(long long a, long long b) { return idiv_trunc(a, b); }
template <typename F> __device__ __forceinline__ F div_trunc_(F a, F b) { return m::trunc(a / b); }
__device__ __forceinline__ long long div_floor_(long long a, long long b) { return idiv_floor(a, b); }
template <typename F> __device__ __forceinline__ F div_floor_(F a, F b) {
  F mod;
  return b == F(0) ? a / b : fdivmod(a, b, &mod);
}
__device__ __forceinline__ long long remainder_(long long a, long long b) { return imod_floor(a, b); }
template <typename F> __device__ __forceinline__ F remainder_(F a, F b) {
  F mod;
  if (b == F(0)) return m::fmod(a, b);
  fdivmod(a, b, &mod);
  return mod;
}
__device__ __forceinline__ long long fmod_(long long a, long long b) { return ifmod(a, b); }
template <typename F> __device__ __forceinline__ F fmod_(F a, F b) { return m::fmod(a, b); }

// pow: integers by squaring (negative exponents: 1/a**|b| truncated); bool: x ** True = x, x ** False = 1
__device__ __forceinline__ long long pow_(long long a, long long b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  unsigned long long r = 1, x = static_cast<unsigned long long>(a);
  while (b) {
    if (b & 1) r *= x;
    x *= x;
    b >>= 1;
  }
  return static_cast<long long>(r);
}
__device__ __forceinline__ bool pow_(bool a, bool b) { return a || !b; }
template <typename F> __device__ __forceinline__ F pow_(F a, F b) { return m::pow(a, b); }

TL_BINARY(Add, add(a, mul(b, p.p0)))   // p0: alpha
TL_BINARY(Sub, sub(a, mul(b, p.p0)))
TL_BINARY(Mul, mul(a, b))
TL_BINARY(DivTrue, a / b)
TL_BINARY(DivTrunc, div_trunc_(a, b))
TL_BINARY(DivFloor, div_floor_(a, b))
TL_BINARY(Remainder, remainder_(a, b))
TL_BINARY(Fmod, fmod_(a, b))
TL_BINARY(Pow, pow_(a, b))
TL_BINARY(Maximum, maximum(a, b))
TL_BINARY(Minimum, minimum(a, b))
TL_BINARY(Atan2, m::atan2(a, b))
TL_BINARY(Eq, a == b)
TL_BINARY(Ne, a != b)
TL_BINARY(Lt, a < b)
TL_BINARY(Le, a <= b)
TL_BINARY(Gt, a > b)
TL_BINARY(Ge, a >= b)
TL_BINARY(LogicalAnd, (a != C(0)) && (b != C(0)))
TL_BINARY(LogicalOr, (a != C(0)) || (b != C(0)))
TL_BINARY(LogicalXor, (a != C(0)) != (b != C(0)))
TL_BINARY(BitwiseAnd, static_cast<C>(a & b))
TL_BINARY(BitwiseOr, static_cast<C>(a | b))
TL_BINARY(BitwiseXor, static_cast<C>(a ^ b))

// gelu_backward: a = grad, b = x; p0 != 0 selects the tanh approximation; torch's GeluBackward
// formulas, in C (the normal CDF through m::gelu_cdf2, as the forward)
template <typename F>
__device__ __forceinline__ F gelu_backward_(F g, F x, const Params<F>& p) {
  if (p.p0 != F(0)) {
    const F beta = F(0.79788456080286535588), kappa = F(0.044715);
    F x2 = m::mul_rn(x, x);
    F inner = m::mul_rn(beta, x + m::mul_rn(kappa, m::mul_rn(x2, x)));
    F t = m::tanh(inner);
    F right = F(1) + t;
    F rd = m::mul_rn(m::mul_rn(m::mul_rn(F(0.5) * x, F(1) - m::mul_rn(t, t)), beta),
                     F(1) + m::mul_rn(F(3) * kappa, x2));
    return g * (m::mul_rn(F(0.5), right) + rd);
  }
  F cdf = F(0.5) * m::gelu_cdf2(x);
  F pdf = m::exp(m::mul_rn(x, x) * F(-0.5)) * F(0.39894228040143267794);
  return g * (cdf + m::mul_rn(x, pdf));
}
TL_BINARY(GeluBackward, gelu_backward_(a, b, p))

// the activations' gradients, torch's kernels (a = grad): tanh_backward and sigmoid_backward read
// the forward's result b; threshold_backward (relu's) gives 0 where the result b <= 0 (a NaN result
// passes the gradient on); silu_backward reads the input b
template <typename F>
__device__ __forceinline__ F silu_backward_(F g, F x) {
  F s = sigmoid_(x);
  return mul(mul(g, s), F(1) + mul(x, F(1) - s));
}
TL_BINARY(TanhBackward, mul(a, C(1) - mul(b, b)))
TL_BINARY(SigmoidBackward, mul(mul(a, C(1) - b), b))
TL_BINARY(ThresholdBackward, b <= C(0) ? C(0) : a)
TL_BINARY(SiluBackward, silu_backward_(a, b))

// gelu_backward_out: a = grad, b = x, c = gelu(x) (the forward's result); Phi(x) = gelu(x) / x
// (0.5 at x = 0), phi(x) = exp(-x^2 / 2) / sqrt(2 pi); the final + 0 turns a -0 factor into +0 as
// torch's cdf + x * pdf gives it
template <typename F>
__device__ __forceinline__ F gelu_backward_out_(F g, F x, F y) {
  F cdf = x == F(0) ? F(0.5) : y / x;
  F pdf = m::exp(m::mul_rn(x, x) * F(-0.5)) * F(0.39894228040143267794);
  return g * ((cdf + m::mul_rn(x, pdf)) + F(0));
}

// -- ternary ----------------------------------------------------------------------------------
// lerp: torch's two-sided formula, exact at both ends
template <typename F>
__device__ __forceinline__ F lerp_(F x, F e, F w) {
  F d = e - x;
  return m::fabs(w) < F(0.5) ? x + m::mul_rn(w, d) : e - m::mul_rn(d, F(1) - w);
}

TL_TERNARY(Where, (a != C(0)) ? b : c)
TL_TERNARY(Clamp, minimum(maximum(a, b), c))  // absent bounds arrive as -inf/+inf (or the int64 extremes)
TL_TERNARY(Lerp, lerp_(a, b, c))
TL_TERNARY(Addcmul, add(a, mul(mul(b, p.p0), c)))  // p0: value
TL_TERNARY(Addcdiv, add(a, mul(b, p.p0) / c))
TL_TERNARY(MaskedFill, (b != C(0)) ? c : a)
TL_TERNARY(GeluBackwardOut, gelu_backward_out_(a, b, c))

#undef TL_UNARY
#undef TL_BINARY
#undef TL_TERNARY
}  // namespace op
}  // namespace tl

#include "special_math.cuh"  // the special functions' functors (tl::op::Lgamma, ...)
