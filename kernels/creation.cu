// arange / linspace / eye: the formulas of backends/cpu/creation.py, evaluated per element with
// unfused, correctly rounded operations so the values equal the CPU's bit for bit: float64 (and the
// integer outputs of linspace) in double (__dmul_rn/__dadd_rn); float32/float16/bfloat16 without FP64
// (arange_df / linspace_df: the integer product and float sum of backends/range_params.py).
// The 1-D outputs are written with an element stride (an out= tensor may be a strided view).
#include "tensorlab/cast.cuh"

namespace {
__device__ __forceinline__ void two_sum(float a, float b, float& s, float& e) {
  s = __fadd_rn(a, b);
  const float bb = __fsub_rn(s, a);
  e = __fadd_rn(__fsub_rn(a, __fsub_rn(s, bb)), __fsub_rn(b, bb));
}

// v * 2^x in two steps (exact while the result is normal; below 2^-252 times v it is a signed 0, as
// float32(p) of such a tiny double).
__device__ __forceinline__ float scale2(float v, int x) {
  if (x < -252) return __fmul_rn(v, 0.f);
  const int x1 = x / 2;
  return __fmul_rn(__fmul_rn(v, __int_as_float((x1 + 127) << 23)), __int_as_float((x - x1 + 127) << 23));
}

// j * M * 2^es rounded to 53 bits (the double product float64(j * step), |step| = M 2^es), as
// three floats whose sum is exact (hi = float(p), mid = float(p - hi), lo = p - hi - mid).
__device__ __forceinline__ void product3(unsigned long long j, unsigned long long m, int es, float& hi, float& mid,
                                         float& lo) {
  unsigned long long l = j * m, h = __umul64hi(j, m);
  const int bits = h ? 128 - __clzll(h) : 64 - __clzll(l);
  int sh = bits > 53 ? bits - 53 : 0;  // <= 63: the dropped bits all lie in l
  if (sh) {
    const unsigned long long rem = l & ((1ULL << sh) - 1), half = 1ULL << (sh - 1);
    l = (l >> sh) | (h << (64 - sh));
    if (rem > half || (rem == half && (l & 1))) ++l;  // to nearest, ties to even
    if (l >> 53) {
      l >>= 1;
      ++sh;
    }
  }
  const float fh = static_cast<float>(l);  // round to nearest
  const long long r = static_cast<long long>(l) - static_cast<long long>(fh);
  const float fm = static_cast<float>(r);
  const float fl = static_cast<float>(r - static_cast<long long>(fm));  // exact: a few bits
  hi = scale2(fh, sh + es);
  mid = scale2(fm, sh + es);
  lo = scale2(fl, sh + es);
}

// float32(base + float64(j * step)) scaled by 2^e: backends/range_params.py affine_values,
// operation for operation. base is the three floats (b0, b1, b2), step M 2^es with sign `neg`.
__device__ __forceinline__ float affine_value(float b0, float b1, float b2, unsigned long long m, int es, int neg,
                                              unsigned long long j, int e) {
  float p0, p1, p2;
  product3(j, m, es, p0, p1, p2);
  if (neg) {
    p0 = -p0;
    p1 = -p1;
    p2 = -p2;
  }
  float a, ea, c, ec, t, et;
  two_sum(p0, b0, a, ea);
  two_sum(p1, b1, c, ec);
  two_sum(a, c, t, et);
  float r = __fadd_rn(t, __fadd_rn(__fadd_rn(__fadd_rn(ea, ec), et), __fadd_rn(p2, b2)));
  // times 2^e in three steps of at most 2^100 (beyond +-300 every nonzero float overflows or underflows)
  e = min(max(e, -300), 300);
  const int e1 = e / 3, e2 = (e - e1) / 2, e3 = e - e1 - e2;
  r = __fmul_rn(r, __int_as_float((e1 + 127) << 23));
  r = __fmul_rn(r, __int_as_float((e2 + 127) << 23));
  return __fmul_rn(r, __int_as_float((e3 + 127) << 23));
}
}  // namespace

// float32/float16/bfloat16 arange: float32(start + float64(i * step)) without float64 arithmetic.
template <typename T, typename Index>
__global__ void arange_df(T* __restrict__ out, float s0, float s1, float s2, unsigned long long m, int es, int neg,
                          int e, Index n, Index stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i * stride] = tl::cast<T>(affine_value(s0, s1, s2, m, es, neg, static_cast<unsigned long long>(i), e));
  }
}

// float32/float16/bfloat16 linspace: torch's symmetric formula (the first half start + i * step, the
// second end - (n - 1 - i) * step) the same way.
template <typename T, typename Index>
__global__ void linspace_df(T* __restrict__ out, float s0, float s1, float s2, float e0, float e1, float e2,
                            unsigned long long m, int es, int neg, int e, Index n, Index stride) {
  const Index half = n / 2;
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    const bool up = i < half;
    const float v = up ? affine_value(s0, s1, s2, m, es, neg, static_cast<unsigned long long>(i), e)
                       : affine_value(e0, e1, e2, m, es, !neg, static_cast<unsigned long long>(n - 1 - i), e);
    out[i * stride] = tl::cast<T>(v);
  }
}

// Integer start and step: int64 arithmetic (wrapping as NumPy's), then cast to T.
template <typename T, typename Index>
__global__ void arange_int(T* __restrict__ out, long long start, long long step, Index n, Index stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    unsigned long long v = static_cast<unsigned long long>(start) +
                           static_cast<unsigned long long>(i) * static_cast<unsigned long long>(step);
    out[i * stride] = tl::cast<T>(static_cast<long long>(v));
  }
}

// float64: double arithmetic.
template <typename T, typename Index>
__global__ void arange_float(T* __restrict__ out, double start, double step, Index n, Index stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i * stride] = tl::cast<T>(__dadd_rn(__dmul_rn(static_cast<double>(i), step), start));
  }
}

// torch's symmetric linspace in double (float64 and integer outputs): the first half counts up from start,
// the second down from end.
template <typename T, typename Index>
__global__ void linspace(T* __restrict__ out, double start, double end, double step, Index n, Index stride) {
  Index half = n / 2;
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    double v = i < half ? __dadd_rn(start, __dmul_rn(step, static_cast<double>(i)))
                        : __dsub_rn(end, __dmul_rn(step, static_cast<double>(n - 1 - i)));
    out[i * stride] = tl::cast<T>(v);
  }
}

// Identity matrix of `cols` columns written through strides (row_stride, col_stride) in elements.
template <typename T, typename Index>
__global__ void eye(T* __restrict__ out, tl::Divisor<Index> cols, Index n, Index row_stride, Index col_stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index c = cols.pop(r);
    out[r * row_stride + c * col_stride] = tl::cast<T>(r == c ? 1 : 0);
  }
}
