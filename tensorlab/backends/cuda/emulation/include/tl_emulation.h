// CUDA built-ins for kernels compiled by the host C++ compiler (the emulation driver force-includes
// this header before every kernels/*.cu). Execution model: see runtime.cpp. Everything a kernel may
// use on the device is declared here or in the cuda_fp16.h / cuda_bf16.h shims next to it; a kernel
// that needs another built-in gets it added here (and keeps compiling unchanged with NVRTC).
#pragma once
#define TL_EMULATION 1
#define __CUDA_ARCH__ 800  // the emulated device reports compute capability 8.0

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <math.h>

// -- declaration specifiers -------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static shared memory: one instance per launch shared by the block's fibers (blocks run one after
// another). Dynamic shared memory goes through TL_DYNAMIC_SHARED (kernels/tensorlab/common.cuh).
#define __shared__ static
#define __constant__ static

// -- vector types ---------------------------------------------------------------------------------
#define TL_EMU_VEC(name, T, a2, a4)                                                        \
  struct name##1 { T x; };                                                                \
  struct __attribute__((aligned(a2))) name##2 { T x, y; };                                \
  struct name##3 { T x, y, z; };                                                         \
  struct __attribute__((aligned(a4))) name##4 { T x, y, z, w; };                          \
  inline name##1 make_##name##1(T x) { return {x}; }                                      \
  inline name##2 make_##name##2(T x, T y) { return {x, y}; }                              \
  inline name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; }                      \
  inline name##4 make_##name##4(T x, T y, T z, T w) { return {x, y, z, w}; }
TL_EMU_VEC(char, signed char, 2, 4)
TL_EMU_VEC(uchar, unsigned char, 2, 4)
TL_EMU_VEC(short, short, 4, 8)
TL_EMU_VEC(ushort, unsigned short, 4, 8)
TL_EMU_VEC(int, int, 8, 16)
TL_EMU_VEC(uint, unsigned int, 8, 16)
TL_EMU_VEC(longlong, long long, 16, 16)
TL_EMU_VEC(ulonglong, unsigned long long, 16, 16)
TL_EMU_VEC(float, float, 8, 16)
TL_EMU_VEC(double, double, 16, 16)
#undef TL_EMU_VEC

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};

// -- built-in variables -----------------------------------------------------------------------------
namespace tl_emu {
extern thread_local uint3 thread_idx, block_idx, block_dim, grid_dim;
}
#define threadIdx (static_cast<const uint3&>(::tl_emu::thread_idx))
#define blockIdx (static_cast<const uint3&>(::tl_emu::block_idx))
#define blockDim (static_cast<const dim3>(::tl_emu::block_dim))
#define gridDim (static_cast<const dim3>(::tl_emu::grid_dim))
static constexpr int warpSize = 32;

// -- the runtime (runtime.cpp) ----------------------------------------------------------------------
extern "C" {
void tl_emu_syncthreads(void);
int tl_emu_syncthreads_count(int);
int tl_emu_syncthreads_and(int);
int tl_emu_syncthreads_or(int);
int tl_emu_lane(void);
unsigned tl_emu_warp_gather(const void* mine, unsigned size, unsigned mask, void* all);
unsigned tl_emu_warp_live(void);
void* tl_emu_dynamic_shared(void);
[[noreturn]] void tl_emu_trap(const char* what);
void tl_emu_assert_fail(const char* expr, const char* file, int line);
}

// -- synchronization --------------------------------------------------------------------------------
inline void __syncthreads() { tl_emu_syncthreads(); }
inline int __syncthreads_count(int p) { return tl_emu_syncthreads_count(p); }
inline int __syncthreads_and(int p) { return tl_emu_syncthreads_and(p); }
inline int __syncthreads_or(int p) { return tl_emu_syncthreads_or(p); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  char none = 0, all[32];
  tl_emu_warp_gather(&none, 1, mask, all);
}
// One OS thread runs every fiber and switches only at barriers, so memory is always coherent.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] inline void __trap() { tl_emu_trap("__trap() called"); }
#undef assert
#define assert(e) ((e) ? (void)0 : tl_emu_assert_fail(#e, __FILE__, __LINE__))

// -- warp shuffles and votes ------------------------------------------------------------------------
namespace tl_emu {
template <typename T>
inline T shfl_from(unsigned mask, T var, int src) {
  static_assert(sizeof(T) <= 16, "warp shuffle of a type wider than 16 bytes");
  T all[32];
  unsigned took_part = tl_emu_warp_gather(&var, sizeof(T), mask, all);
  return (src >= 0 && src < 32 && (took_part & (1u << src))) ? all[src] : var;
}
inline unsigned vote(unsigned mask, int pred, unsigned* took_part) {
  int all[32];
  int p = pred != 0;
  *took_part = tl_emu_warp_gather(&p, sizeof(int), mask, all);
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if ((*took_part & (1u << l)) && all[l]) bits |= 1u << l;
  return bits;
}
template <typename T, typename Op>
inline T warp_reduce(unsigned mask, T v, Op op) {
  T all[32];
  unsigned took_part = tl_emu_warp_gather(&v, sizeof(T), mask, all);
  bool first = true;
  T r = v;
  for (int l = 0; l < 32; ++l)
    if (took_part & (1u << l)) {
      r = first ? all[l] : op(r, all[l]);
      first = false;
    }
  return r;
}
}  // namespace tl_emu

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  int lane = tl_emu_lane();
  int seg = lane & ~(width - 1);
  return tl_emu::shfl_from(mask, var, seg + (src & (width - 1)));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  int lane = tl_emu_lane();
  int seg = lane & ~(width - 1);
  int src = lane - int(delta);
  return tl_emu::shfl_from(mask, var, src < seg ? lane : src);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  int lane = tl_emu_lane();
  int seg = lane & ~(width - 1);
  int src = lane + int(delta);
  return tl_emu::shfl_from(mask, var, src >= seg + width ? lane : src);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  int lane = tl_emu_lane();
  int seg = lane & ~(width - 1);
  int src = lane ^ lane_mask;
  return tl_emu::shfl_from(mask, var, src >= seg + width ? lane : src);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  unsigned took;
  return tl_emu::vote(mask, pred, &took);
}
inline int __all_sync(unsigned mask, int pred) {
  unsigned took;
  return tl_emu::vote(mask, pred, &took) == took;
}
inline int __any_sync(unsigned mask, int pred) {
  unsigned took;
  return tl_emu::vote(mask, pred, &took) != 0;
}
inline unsigned __activemask() { return tl_emu_warp_live(); }
inline unsigned __lanemask_lt() { return (1u << tl_emu_lane()) - 1u; }
#define TL_EMU_WARP_REDUCE(name, T, expr) \
  inline T name(unsigned mask, T v) { return tl_emu::warp_reduce(mask, v, [](T a, T b) -> T { return expr; }); }
TL_EMU_WARP_REDUCE(__reduce_add_sync, int, a + b)
TL_EMU_WARP_REDUCE(__reduce_add_sync, unsigned, a + b)
TL_EMU_WARP_REDUCE(__reduce_min_sync, int, a < b ? a : b)
TL_EMU_WARP_REDUCE(__reduce_min_sync, unsigned, a < b ? a : b)
TL_EMU_WARP_REDUCE(__reduce_max_sync, int, a > b ? a : b)
TL_EMU_WARP_REDUCE(__reduce_max_sync, unsigned, a > b ? a : b)
TL_EMU_WARP_REDUCE(__reduce_and_sync, unsigned, a & b)
TL_EMU_WARP_REDUCE(__reduce_or_sync, unsigned, a | b)
TL_EMU_WARP_REDUCE(__reduce_xor_sync, unsigned, a ^ b)
#undef TL_EMU_WARP_REDUCE

// -- atomics (the GCC builtins; only the overloads CUDA has) ----------------------------------------
namespace tl_emu {
template <typename T, typename F>
inline T atomic_update(T* addr, F f) {  // compare-and-swap loop for operations without a builtin
  T old;
  __atomic_load(addr, &old, __ATOMIC_SEQ_CST);
  for (;;) {
    T desired = f(old);
    if (__atomic_compare_exchange(addr, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return old;
  }
}
}  // namespace tl_emu
#define TL_EMU_ATOMIC_INT(T)                                                                          \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicMin(T* a, T v) { return tl_emu::atomic_update(a, [v](T o) { return o < v ? o : v; }); } \
  inline T atomicMax(T* a, T v) { return tl_emu::atomic_update(a, [v](T o) { return o > v ? o : v; }); } \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }                  \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicCAS(T* a, T cmp, T v) {                                                              \
    __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);               \
    return cmp;                                                                                       \
  }
TL_EMU_ATOMIC_INT(int)
TL_EMU_ATOMIC_INT(unsigned int)
TL_EMU_ATOMIC_INT(unsigned long long)
#undef TL_EMU_ATOMIC_INT
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicSub(unsigned* a, unsigned v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline long long atomicMin(long long* a, long long v) {
  return tl_emu::atomic_update(a, [v](long long o) { return o < v ? o : v; });
}
inline long long atomicMax(long long* a, long long v) {
  return tl_emu::atomic_update(a, [v](long long o) { return o > v ? o : v; });
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short cmp, unsigned short v) {
  __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
inline unsigned atomicInc(unsigned* a, unsigned v) {
  return tl_emu::atomic_update(a, [v](unsigned o) { return o >= v ? 0u : o + 1u; });
}
inline unsigned atomicDec(unsigned* a, unsigned v) {
  return tl_emu::atomic_update(a, [v](unsigned o) { return (o == 0u || o > v) ? v : o - 1u; });
}
inline float atomicAdd(float* a, float v) { return tl_emu::atomic_update(a, [v](float o) { return o + v; }); }
inline double atomicAdd(double* a, double v) { return tl_emu::atomic_update(a, [v](double o) { return o + v; }); }
inline float atomicExch(float* a, float v) {
  float old;
  __atomic_exchange(a, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}

// -- integer and bit intrinsics ---------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev(unsigned(x)) << 32) | __brev(unsigned(x >> 32));
}
inline int __mulhi(int a, int b) { return int(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
inline int __double2hiint(double d) { return int(__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return int(__double_as_longlong(d)); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

// -- read-only / cache-hinted loads -----------------------------------------------------------------
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
template <typename T> inline T __ldlu(const T* p) { return *p; }
template <typename T> inline void __stcs(T* p, T v) { *p = v; }
template <typename T> inline void __stcg(T* p, T v) { *p = v; }

// -- math: <math.h> gives the float/double overloads; these are CUDA's additions ---------------------
namespace tl_emu {
constexpr double kPi = 3.14159265358979323846, kSqrt2 = 1.41421356237309504880, kSqrtHalf = 0.70710678118654752440;
}
#define TL_EMU_MINMAX(T)                                   \
  inline T min(T a, T b) { return a < b ? a : b; }         \
  inline T max(T a, T b) { return a > b ? a : b; }
TL_EMU_MINMAX(int)
TL_EMU_MINMAX(unsigned int)
TL_EMU_MINMAX(long)
TL_EMU_MINMAX(unsigned long)
TL_EMU_MINMAX(long long)
TL_EMU_MINMAX(unsigned long long)
#undef TL_EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double max(double a, float b) { return fmax(a, b); }

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float exp10f(float x) { return powf(10.0f, x); }
// sinpi/cospi in float as CUDA's (1 ulp, exact zeros at integers and half-integers): the exact remainder of
// x mod 2 in double, then double sin/cos rounded once
inline float sinpif(float x) {
  const double r = remainder(double(x), 2.0);
  return r == 0.0 || fabs(r) == 1.0 ? 0.0f * x : float(sin(tl_emu::kPi * r));
}
inline float cospif(float x) {
  const double r = remainder(double(x), 2.0);
  return fabs(r) == 0.5 ? 0.0f : float(cos(tl_emu::kPi * r));
}
inline double sinpi(double x) { return sin(tl_emu::kPi * x); }
inline double cospi(double x) { return cos(tl_emu::kPi * x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * float(tl_emu::kSqrtHalf)); }
inline double normcdf(double x) { return 0.5 * erfc(-x * tl_emu::kSqrtHalf); }
inline double erfinv(double y) {  // Newton on erf(x) = y from a rational first guess
  if (y <= -1.0) return y == -1.0 ? -INFINITY : NAN;
  if (y >= 1.0) return y == 1.0 ? INFINITY : NAN;
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w; x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w; x = -0.00125372503 + x * w; x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w; x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w; x = 0.00134934322 + x * w; x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w; x = -0.0076224613 + x * w; x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w; x = 2.83297682 + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; ++i) x -= (erf(x) - y) / (2.0 / sqrt(tl_emu::kPi) * exp(-x * x));
  return x;
}
inline float erfinvf(float y) { return float(erfinv(y)); }
inline float erfcinvf(float y) { return float(erfinv(1.0 - double(y))); }
inline double erfcinv(double y) { return erfinv(1.0 - y); }
// erfcx(x) = exp(x^2) erfc(x): the product below 25, the asymptotic series 1/(x sqrt(pi)) (1 - 1/(2x^2) + ...)
// above (where erfc underflows)
inline double erfcx(double x) {
  if (x < 25.0) return exp(x * x) * erfc(x);
  double z = 1.0 / (2.0 * x * x), t = 1.0, s = 1.0;
  for (int k = 1; k < 12; ++k) { t *= -(2.0 * k - 1.0) * z; s += t; }
  return s / (x * 1.7724538509055160273);
}
inline float erfcxf(float x) { return float(erfcx(double(x))); }
inline double normcdfinv(double p) { return tl_emu::kSqrt2 * erfinv(2.0 * p - 1.0); }
inline float normcdfinvf(float p) { return float(normcdfinv(p)); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
// Fast-math intrinsics: the accurate function (the emulation does not reproduce hardware ulp errors).
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
// Correctly rounded operations: the host computes them exactly so (built with -ffp-contract=off).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rd(float x) { return int(floorf(x)); }
inline int __float2int_ru(float x) { return int(ceilf(x)); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline long long __float2ll_rn(float x) { return llrintf(x); }
inline unsigned __float2uint_rz(float x) { return unsigned(x); }
inline int __double2int_rz(double x) { return int(x); }
inline int __double2int_rn(double x) { return int(nearbyint(x)); }
inline long long __double2ll_rz(double x) { return (long long)x; }
inline long long __double2ll_rn(double x) { return llrint(x); }
inline float __int2float_rn(int x) { return float(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline double __ll2double_rn(long long x) { return double(x); }
inline float __double2float_rn(double x) { return float(x); }

// 16-bit floats: included here, at global scope, so that a kernel's own #include of them (inside
// the generated translation unit's anonymous namespace) is a no-op.
#include "tl_emu_fp.h"
// Tensor-core mma.sync (after the 16-bit types, whose bit conversions it uses).
#include "tl_emu_mma.h"
