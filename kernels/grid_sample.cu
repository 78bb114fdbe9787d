// grid_sample (torch's grid_sampler_2d / grid_sampler_3d): one thread per output point (n, oz, oy, ox)
// computes its source coordinates once (GridSampler.h's formulas: unnormalize by align_corners, then
// padding: border clips, reflection reflects then clips), then loops over the channels. Modes: 0
// bilinear / trilinear (the 2^ND corners, x fastest), 1 nearest (round half to even), 2 bicubic (2-D
// only: Keys' cubic convolution with A = -0.75 over 4 x 4 taps, each tap's coordinate padded on its
// own). A position outside the input reads zero. The backward is the same walk: the input's gradient
// by atomic adds into an accumulator (float for float16/bfloat16), the grid's as the sum over channels
// of grad_out * value * the weight's derivative, times d(source)/d(grid) (zero for nearest; bicubic
// takes only the unnormalize factor, as ATen does). Layouts (contiguous): input (N, C, [D,] H, W),
// grid (N, [oD,] oH, oW, ND) with x first, out (N, C, [oD,] oH, oW). The 2-D path unnormalizes
// with a precomputed factor (ATen's vectorized CPU kernel: the same value, rounded the same way).
#include "tensorlab/reduce.cuh"

namespace {
// The coordinate and weight arithmetic runs in the tensor's dtype, rounded after every operation as
// torch's float16/bfloat16 grid_sampler computes it (its scalar_t math); float and double are
// themselves. Sums over taps and channels of the backward accumulate in float.
template <typename T>
struct Rounded {
  float v;
  __device__ __forceinline__ Rounded() : v(0.f) {}
  __device__ __forceinline__ Rounded(float x) : v(tl::widen(tl::cast<T>(x))) {}
  __device__ __forceinline__ Rounded(double x) : Rounded(static_cast<float>(x)) {}
  __device__ __forceinline__ Rounded(int x) : Rounded(static_cast<float>(x)) {}
  __device__ __forceinline__ Rounded(long long x) : Rounded(static_cast<float>(x)) {}
  __device__ __forceinline__ float value() const { return v; }
};
template <typename T> __device__ __forceinline__ Rounded<T> operator+(Rounded<T> a, Rounded<T> b) { return Rounded<T>(a.v + b.v); }
template <typename T> __device__ __forceinline__ Rounded<T> operator-(Rounded<T> a, Rounded<T> b) { return Rounded<T>(a.v - b.v); }
template <typename T> __device__ __forceinline__ Rounded<T> operator*(Rounded<T> a, Rounded<T> b) { return Rounded<T>(a.v * b.v); }
template <typename T> __device__ __forceinline__ Rounded<T> operator/(Rounded<T> a, Rounded<T> b) { return Rounded<T>(a.v / b.v); }
template <typename T> __device__ __forceinline__ Rounded<T> operator-(Rounded<T> a) { return Rounded<T>(-a.v); }
template <typename T> __device__ __forceinline__ bool operator<(Rounded<T> a, Rounded<T> b) { return a.v < b.v; }
template <typename T> __device__ __forceinline__ bool operator>(Rounded<T> a, Rounded<T> b) { return a.v > b.v; }
template <typename T> __device__ __forceinline__ bool operator<=(Rounded<T> a, Rounded<T> b) { return a.v <= b.v; }
template <typename T> __device__ __forceinline__ bool operator>=(Rounded<T> a, Rounded<T> b) { return a.v >= b.v; }
template <typename T> __device__ __forceinline__ bool operator==(Rounded<T> a, Rounded<T> b) { return a.v == b.v; }

template <typename T> struct MathOf { using type = T; };
template <> struct MathOf<__half> { using type = Rounded<__half>; };
template <> struct MathOf<__nv_bfloat16> { using type = Rounded<__nv_bfloat16>; };

__device__ __forceinline__ float val(float v) { return v; }
__device__ __forceinline__ double val(double v) { return v; }
template <typename T> __device__ __forceinline__ float val(Rounded<T> v) { return v.v; }

__device__ __forceinline__ float m_floor(float v) { return floorf(v); }
__device__ __forceinline__ double m_floor(double v) { return floor(v); }
template <typename T> __device__ __forceinline__ Rounded<T> m_floor(Rounded<T> v) { return Rounded<T>(floorf(v.v)); }
__device__ __forceinline__ float m_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double m_fmod(double a, double b) { return fmod(a, b); }
template <typename T> __device__ __forceinline__ Rounded<T> m_fmod(Rounded<T> a, Rounded<T> b) { return Rounded<T>(fmodf(a.v, b.v)); }
__device__ __forceinline__ float m_rint(float v) { return rintf(v); }
__device__ __forceinline__ double m_rint(double v) { return rint(v); }
template <typename T> __device__ __forceinline__ Rounded<T> m_rint(Rounded<T> v) { return Rounded<T>(rintf(v.v)); }
__device__ __forceinline__ float m_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double m_abs(double v) { return fabs(v); }
template <typename T> __device__ __forceinline__ Rounded<T> m_abs(Rounded<T> v) { return Rounded<T>(fabsf(v.v)); }

template <typename M>
struct Coord {
  M src;   // the padded source coordinate
  M mult;  // d src / d grid coordinate
};

// grid coordinate c -> pixel coordinate, and its derivative
template <typename M>
__device__ __forceinline__ Coord<M> unnormalize(M c, long long size, int align, bool factored) {
  const M n(size), one(1), two(2);
  if (factored) {  // ATen's vectorized 2-D CPU kernel
    if (align) return {(c + one) * ((n - one) / two), (n - one) / two};
    return {(c + one) * (n / two) - M(0.5f), n / two};
  }
  if (align) return {(c + one) / two * (n - one), (n - one) / two};
  return {((c + one) * n - one) / two, n / two};
}

// padding 1 (border) clips to [0, size - 1]; 2 (reflection) reflects about the edges (the pixel
// centres with align_corners, the outer borders without), then clips. The derivative multiplies mult.
template <typename M>
__device__ __forceinline__ Coord<M> pad(Coord<M> x, long long size, int padding, int align) {
  if (padding == 0) return x;
  if (padding == 2) {
    const long long lo2 = align ? 0 : -1, hi2 = align ? 2 * (size - 1) : 2 * size - 1;
    if (lo2 == hi2) return {M(0), M(0)};
    const M lo = M(static_cast<float>(lo2) / 2.f), span = M(static_cast<float>(hi2 - lo2) / 2.f);
    M v = x.src - lo;
    const bool negative = v < M(0);
    v = m_abs(v);
    const M extra = m_fmod(v, span);
    const M flips = m_floor(v / span);
    const bool even = m_fmod(flips, M(2)) == M(0);
    x.src = even ? extra + lo : span - extra + lo;
    x.mult = (even != negative) ? x.mult : -x.mult;
  }
  const M top(size - 1);
  if (x.src <= M(0)) return {M(0), M(0)};
  if (x.src >= top) return {top, M(0)};
  return x;
}

// Keys' cubic convolution (A = -0.75) weights of the taps at distance 1 + t, t, 1 - t, 2 - t, and
// their derivatives with respect to t
template <typename M>
__device__ __forceinline__ void cubic_weights(M t, M w[4], M dw[4]) {
  const M a(-0.75f), one(1), two(2), three(3), five(5), eight(8), ten(10), four(4);
  const M x0 = t + one, x1 = t, x2 = one - t, x3 = x2 + one;
  w[0] = ((a * x0 - five * a) * x0 + eight * a) * x0 - four * a;
  w[1] = ((a + two) * x1 - (a + three)) * x1 * x1 + one;
  w[2] = ((a + two) * x2 - (a + three)) * x2 * x2 + one;
  w[3] = ((a * x3 - five * a) * x3 + eight * a) * x3 - four * a;
  dw[0] = (three * a * x0 - ten * a) * x0 + eight * a;
  dw[1] = (three * (a + two) * x1 - two * (a + three)) * x1;
  dw[2] = -((three * (a + two) * x2 - two * (a + three)) * x2);
  dw[3] = -((three * a * x3 - ten * a) * x3 + eight * a);
}

// the taps of one output point: bilinear / trilinear 2^ND corners (bit d of k: the upper corner along
// coordinate d, x fastest), nearest 1, bicubic 4 x 4 (j * 4 + i; its weights are cw[0][i] * cw[1][j]).
// pos: flat spatial offsets, -1 outside.
template <typename M, int ND>
struct Taps {
  static constexpr int kMax = ND == 2 ? 16 : 8;
  int count;
  long long pos[kMax];
  M lo[ND], fr[ND];      // bilinear: the lower corner and the distance from it (torch's form of the weights)
  M cw[2][4], cdw[2][4];  // bicubic weights per coordinate and their derivatives
  M mult[ND];
};

template <typename M, int ND>
__device__ __forceinline__ M corner_weight(const Taps<M, ND>& tp, const M* src, int k) {
  M w(1);
  for (int d = 0; d < ND; ++d) w = w * (((k >> d) & 1) ? src[d] - tp.lo[d] : tp.lo[d] + M(1) - src[d]);
  return w;
}

template <typename M, int ND>
__device__ void taps_of(Taps<M, ND>& tp, M* src, const M* c, const long long* size, int mode, int padding,
                        int align) {
  long long stride[ND];
  long long s = 1;
  for (int d = 0; d < ND; ++d) {
    stride[d] = s;
    s *= size[d];
  }
  if (mode == 2) {  // bicubic, 2-D
    M base[2];
    for (int d = 0; d < 2; ++d) {
      const Coord<M> u = unnormalize(c[d], size[d], align, true);
      base[d] = m_floor(u.src);
      tp.mult[d] = u.mult;
      cubic_weights(u.src - base[d], tp.cw[d], tp.cdw[d]);
    }
    tp.count = 16;
    for (int k = 0; k < 16; ++k) {
      const int tap[2] = {k & 3, k >> 2};
      long long off = 0;
      bool inside = true;
      for (int d = 0; d < 2; ++d) {
        const float x = val(pad(Coord<M>{base[d] + M(tap[d] - 1), M(1)}, size[d], padding, align).src);
        inside = inside && x > -1.f && x < static_cast<float>(size[d]);
        if (inside) off += static_cast<long long>(x) * stride[d];
      }
      tp.pos[k] = inside ? off : -1;
    }
    return;
  }
  for (int d = 0; d < ND; ++d) {
    const Coord<M> x = pad(unnormalize(c[d], size[d], align, ND == 2), size[d], padding, align);
    src[d] = x.src;
    tp.mult[d] = x.mult;
  }
  if (mode == 1) {
    tp.count = 1;
    long long off = 0;
    bool inside = true;
    for (int d = 0; d < ND; ++d) {
      const float r = val(m_rint(src[d]));
      inside = inside && r > -1.f && r < static_cast<float>(size[d]);
      if (inside) off += static_cast<long long>(r) * stride[d];
    }
    tp.pos[0] = inside ? off : -1;
    return;
  }
  for (int d = 0; d < ND; ++d) tp.lo[d] = m_floor(src[d]);
  tp.count = 1 << ND;
  for (int k = 0; k < (1 << ND); ++k) {
    long long off = 0;
    bool inside = true;
    for (int d = 0; d < ND; ++d) {
      const float p = val(tp.lo[d]) + static_cast<float>((k >> d) & 1);
      inside = inside && p >= 0.f && p < static_cast<float>(size[d]);
      if (inside) off += static_cast<long long>(p) * stride[d];
    }
    tp.pos[k] = inside ? off : -1;
  }
}

template <typename T, typename M, int ND, typename Index>
__device__ __forceinline__ void load_coords(M* c, const T* grid, Index point) {
  for (int d = 0; d < ND; ++d) c[d] = M(tl::widen(grid[point * ND + d]));
}
}  // namespace

template <typename T, typename Index, int ND>
__global__ void __launch_bounds__(256, 1) grid_sample_fwd(T* __restrict__ out, const T* __restrict__ input,
                                                          const T* __restrict__ grid, Index N, Index C, long long W,
                                                          long long H, long long D, Index out_points, int mode,
                                                          int padding, int align) {
  using M = typename MathOf<T>::type;
  const long long size[3] = {W, H, D};
  const Index in_points = static_cast<Index>(W * H * (ND == 3 ? D : 1));
  const Index total = N * out_points;
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index n = tl::index_div(e, out_points), o = e - n * out_points;
    M c[ND], src[ND];
    load_coords<T, M, ND>(c, grid, e);
    Taps<M, ND> tp;
    taps_of<M, ND>(tp, src, c, size, mode, padding, align);
    const T* in_n = input + n * C * in_points;
    T* out_n = out + n * C * out_points + o;
    for (Index ch = 0; ch < C; ++ch) {
      const T* plane = in_n + ch * in_points;
      M v(0);
      if (mode == 2) {  // row by row, then the rows (ATen's cubic_interp1d twice)
        for (int j = 0; j < 4; ++j) {
          M row(0);
          for (int i = 0; i < 4; ++i) {
            const long long p = tp.pos[j * 4 + i];
            row = row + (p >= 0 ? M(tl::widen(plane[p])) : M(0)) * tp.cw[0][i];
          }
          v = v + row * tp.cw[1][j];
        }
      } else if (mode == 1) {
        if (tp.pos[0] >= 0) v = M(tl::widen(plane[tp.pos[0]]));
      } else {
        for (int k = 0; k < tp.count; ++k)
          if (tp.pos[k] >= 0) v = v + M(tl::widen(plane[tp.pos[k]])) * corner_weight(tp, src, k);
      }
      out_n[ch * out_points] = tl::cast<T>(val(v));
    }
  }
}

// grad_input: A-typed accumulator (zero-filled by the caller), written when want_input; grad_grid (T)
// written when want_grid (otherwise either pointer is any valid buffer, never touched)
template <typename T, typename Index, int ND>
__global__ void __launch_bounds__(256, 1) grid_sample_bwd(typename tl::AccOf<T>::type* grad_input,
                                                          T* __restrict__ grad_grid, const T* __restrict__ grad_out,
                                                          const T* __restrict__ input, const T* __restrict__ grid,
                                                          Index N, Index C, long long W, long long H, long long D,
                                                          Index out_points, int mode, int padding, int align,
                                                          int want_input, int want_grid) {
  using A = typename tl::AccOf<T>::type;
  using M = typename MathOf<T>::type;
  const long long size[3] = {W, H, D};
  const Index in_points = static_cast<Index>(W * H * (ND == 3 ? D : 1));
  const Index total = N * out_points;
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index n = tl::index_div(e, out_points), o = e - n * out_points;
    M c[ND], src[ND];
    load_coords<T, M, ND>(c, grid, e);
    Taps<M, ND> tp;
    taps_of<M, ND>(tp, src, c, size, mode, padding, align);
    A w[Taps<M, ND>::kMax], dw[Taps<M, ND>::kMax][ND];
    for (int k = 0; k < tp.count; ++k) {  // each tap's weight and its derivative per source coordinate
      if (mode == 2) {
        const int i = k & 3, j = k >> 2;
        w[k] = static_cast<A>(val(tp.cw[0][i])) * static_cast<A>(val(tp.cw[1][j]));
        dw[k][0] = static_cast<A>(val(tp.cdw[0][i])) * static_cast<A>(val(tp.cw[1][j]));
        dw[k][1] = static_cast<A>(val(tp.cw[0][i])) * static_cast<A>(val(tp.cdw[1][j]));
      } else if (mode == 1) {
        w[k] = A(1);
        for (int d = 0; d < ND; ++d) dw[k][d] = A(0);
      } else {
        w[k] = static_cast<A>(val(corner_weight(tp, src, k)));
        for (int d = 0; d < ND; ++d) {
          A p = ((k >> d) & 1) ? A(1) : A(-1);
          for (int f = 0; f < ND; ++f)
            if (f != d) p *= static_cast<A>(val(((k >> f) & 1) ? src[f] - tp.lo[f] : tp.lo[f] + M(1) - src[f]));
          dw[k][d] = p;
        }
      }
    }
    A gg[ND];
    for (int d = 0; d < ND; ++d) gg[d] = A(0);
    for (Index ch = 0; ch < C; ++ch) {
      const Index plane = (n * C + ch) * in_points;
      const A go = static_cast<A>(tl::widen(grad_out[(n * C + ch) * out_points + o]));
      for (int k = 0; k < tp.count; ++k) {
        if (tp.pos[k] < 0) continue;
        if (want_input) atomicAdd(grad_input + plane + tp.pos[k], w[k] * go);
        if (want_grid && mode != 1) {
          const A v = static_cast<A>(tl::widen(input[plane + tp.pos[k]])) * go;
          for (int d = 0; d < ND; ++d) gg[d] += v * dw[k][d];
        }
      }
    }
    if (want_grid)
      for (int d = 0; d < ND; ++d) grad_grid[e * ND + d] = tl::cast<T>(gg[d] * static_cast<A>(val(tp.mult[d])));
  }
}
