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
template <typename A>
struct Coord {
  A src;   // the padded source coordinate
  A mult;  // d src / d grid coordinate
};

template <typename A>
__device__ __forceinline__ A m_floor(A v);
template <> __device__ __forceinline__ float m_floor(float v) { return floorf(v); }
template <> __device__ __forceinline__ double m_floor(double v) { return floor(v); }
template <typename A>
__device__ __forceinline__ A m_fmod(A a, A b);
template <> __device__ __forceinline__ float m_fmod(float a, float b) { return fmodf(a, b); }
template <> __device__ __forceinline__ double m_fmod(double a, double b) { return fmod(a, b); }
template <typename A>
__device__ __forceinline__ A m_rint(A v);
template <> __device__ __forceinline__ float m_rint(float v) { return rintf(v); }
template <> __device__ __forceinline__ double m_rint(double v) { return rint(v); }

// grid coordinate c -> pixel coordinate, and its derivative
template <typename A>
__device__ __forceinline__ Coord<A> unnormalize(A c, long long size, int align, bool factored) {
  const A n = static_cast<A>(size);
  if (factored) {  // ATen's vectorized 2-D CPU kernel
    if (align) return {(c + A(1)) * ((n - A(1)) / A(2)), (n - A(1)) / A(2)};
    return {(c + A(1)) * (n / A(2)) - A(0.5), n / A(2)};
  }
  if (align) return {(c + A(1)) / A(2) * (n - A(1)), (n - A(1)) / A(2)};
  return {((c + A(1)) * n - A(1)) / A(2), n / A(2)};
}

// padding 1 (border) clips to [0, size - 1]; 2 (reflection) reflects about the edges (the pixel
// centres with align_corners, the outer borders without), then clips. The derivative multiplies mult.
template <typename A>
__device__ __forceinline__ Coord<A> pad(Coord<A> x, long long size, int padding, int align) {
  if (padding == 0) return x;
  if (padding == 2) {
    const A lo2 = align ? A(0) : A(-1), hi2 = align ? A(2 * (size - 1)) : A(2 * size - 1);
    if (lo2 == hi2) return {A(0), A(0)};
    const A lo = lo2 / A(2), span = (hi2 - lo2) / A(2);
    A v = x.src - lo, sign = A(1);
    if (v < A(0)) {
      v = -v;
      sign = A(-1);
    }
    const A extra = m_fmod(v, span);
    const A flips = m_floor(v / span);
    if (m_fmod(flips, A(2)) == A(0)) {
      x.src = extra + lo;
      x.mult *= sign;
    } else {
      x.src = span - extra + lo;
      x.mult *= -sign;
    }
  }
  const A top = static_cast<A>(size - 1);
  if (x.src <= A(0)) return {A(0), A(0)};
  if (x.src >= top) return {top, A(0)};
  return x;
}

template <typename A>
__device__ __forceinline__ void cubic_weights(A t, A w[4], A dw[4]) {
  const A a = A(-0.75);
  // taps at distance 1 + t, t, 1 - t, 2 - t: the outer and inner pieces of Keys' kernel
  const A x0 = t + A(1), x1 = t, x2 = A(1) - t, x3 = A(2) - t;
  w[0] = ((a * x0 - A(5) * a) * x0 + A(8) * a) * x0 - A(4) * a;
  w[1] = ((a + A(2)) * x1 - (a + A(3))) * x1 * x1 + A(1);
  w[2] = ((a + A(2)) * x2 - (a + A(3))) * x2 * x2 + A(1);
  w[3] = ((a * x3 - A(5) * a) * x3 + A(8) * a) * x3 - A(4) * a;
  // d w / d t (x2, x3 decrease with t)
  dw[0] = (A(3) * a * x0 - A(10) * a) * x0 + A(8) * a;
  dw[1] = (A(3) * (a + A(2)) * x1 - A(2) * (a + A(3))) * x1;
  dw[2] = -((A(3) * (a + A(2)) * x2 - A(2) * (a + A(3))) * x2);
  dw[3] = -((A(3) * a * x3 - A(10) * a) * x3 + A(8) * a);
}

template <int ND, typename Index>
struct Geometry {
  Index N, C;
  long long size[3];   // input sizes per coordinate: W, H, D (x first)
  Index out_points;    // oD * oH * oW
  Index in_points;     // D * H * W
};

// the taps of one output point: up to 16 (bicubic) positions (flat spatial offsets, -1 outside),
// weights, and per coordinate the weight's derivative (for the grid's gradient)
template <typename A, int ND>
struct Taps {
  static constexpr int kMax = ND == 2 ? 16 : 8;
  int count;
  long long pos[kMax];
  A w[kMax];
  A dw[kMax][ND];
  A mult[ND];
};

template <typename A, int ND, typename Index>
__device__ void taps_of(Taps<A, ND>& tp, const A* c, const Geometry<ND, Index>& g, int mode, int padding, int align) {
  long long stride[ND];
  long long s = 1;
  for (int d = 0; d < ND; ++d) {
    stride[d] = s;
    s *= g.size[d];
  }
  if (mode == 2) {  // bicubic, 2-D
    A t[2], wv[2][4], dwv[2][4], base[2];
    for (int d = 0; d < 2; ++d) {
      const Coord<A> u = unnormalize(c[d], g.size[d], align, true);
      base[d] = m_floor(u.src);
      t[d] = u.src - base[d];
      tp.mult[d] = u.mult;
      cubic_weights(t[d], wv[d], dwv[d]);
    }
    tp.count = 16;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        const int k = j * 4 + i;
        long long off = 0;
        bool inside = true;
        const int tap[2] = {i, j};
        for (int d = 0; d < 2; ++d) {
          const A x = pad(Coord<A>{base[d] + A(tap[d] - 1), A(1)}, g.size[d], padding, align).src;
          const long long p = static_cast<long long>(x);
          inside = inside && x > A(-1) && p >= 0 && p < g.size[d];
          off += p * stride[d];
        }
        tp.pos[k] = inside ? off : -1;
        tp.w[k] = wv[0][i] * wv[1][j];
        tp.dw[k][0] = dwv[0][i] * wv[1][j];
        tp.dw[k][1] = wv[0][i] * dwv[1][j];
      }
    return;
  }
  Coord<A> src[ND];
  for (int d = 0; d < ND; ++d) {
    src[d] = pad(unnormalize(c[d], g.size[d], align, ND == 2), g.size[d], padding, align);
    tp.mult[d] = src[d].mult;
  }
  if (mode == 1) {
    tp.count = 1;
    long long off = 0;
    bool inside = true;
    for (int d = 0; d < ND; ++d) {
      const A r = m_rint(src[d].src);
      const long long p = static_cast<long long>(r);
      inside = inside && r > A(-1) && r < static_cast<A>(g.size[d]);
      off += p * stride[d];
    }
    tp.pos[0] = inside ? off : -1;
    tp.w[0] = A(1);
    for (int d = 0; d < ND; ++d) tp.dw[0][d] = A(0);
    return;
  }
  A lo[ND], fr[ND];
  for (int d = 0; d < ND; ++d) {
    lo[d] = m_floor(src[d].src);
    fr[d] = src[d].src - lo[d];
  }
  tp.count = 1 << ND;
  for (int k = 0; k < (1 << ND); ++k) {  // bit d of k: the upper corner along coordinate d (x fastest)
    long long off = 0;
    bool inside = true;
    A w = A(1);
    for (int d = 0; d < ND; ++d) {
      const int b = (k >> d) & 1;
      const A p = lo[d] + A(b);
      inside = inside && p >= A(0) && p < static_cast<A>(g.size[d]);
      off += static_cast<long long>(p) * stride[d];
      w *= b ? fr[d] : A(1) - fr[d];
    }
    tp.pos[k] = inside ? off : -1;
    tp.w[k] = w;
    for (int d = 0; d < ND; ++d) {  // d w / d src_d: the other factors, signed by the corner's side
      A p = ((k >> d) & 1) ? A(1) : A(-1);
      for (int e = 0; e < ND; ++e)
        if (e != d) p *= ((k >> e) & 1) ? fr[e] : A(1) - fr[e];
      tp.dw[k][d] = p;
    }
  }
}

template <typename T, typename A, int ND, typename Index>
__device__ __forceinline__ void load_coords(A* c, const T* grid, Index point) {
  for (int d = 0; d < ND; ++d) c[d] = static_cast<A>(tl::widen(grid[point * ND + d]));
}
}  // namespace

template <typename T, typename Index, int ND>
__global__ void __launch_bounds__(256, 1) grid_sample_fwd(T* __restrict__ out, const T* __restrict__ input,
                                                          const T* __restrict__ grid, Index N, Index C, long long W,
                                                          long long H, long long D, Index out_points, int mode,
                                                          int padding, int align) {
  using A = typename tl::AccOf<T>::type;
  const Geometry<ND, Index> g{N, C, {W, H, D}, out_points, static_cast<Index>(W * H * (ND == 3 ? D : 1))};
  const Index total = N * out_points;
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index n = tl::index_div(e, out_points), o = e - n * out_points;
    A c[ND];
    load_coords<T, A, ND>(c, grid, e);
    Taps<A, ND> tp;
    taps_of<A, ND, Index>(tp, c, g, mode, padding, align);
    const T* in_n = input + n * C * g.in_points;
    T* out_n = out + n * C * out_points + o;
    for (Index ch = 0; ch < C; ++ch) {
      const T* plane = in_n + ch * g.in_points;
      A v = A(0);
      for (int k = 0; k < tp.count; ++k)
        if (tp.pos[k] >= 0) v += tp.w[k] * static_cast<A>(tl::widen(plane[tp.pos[k]]));
      out_n[ch * out_points] = tl::cast<T>(v);
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
  const Geometry<ND, Index> g{N, C, {W, H, D}, out_points, static_cast<Index>(W * H * (ND == 3 ? D : 1))};
  const Index total = N * out_points;
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index n = tl::index_div(e, out_points), o = e - n * out_points;
    A c[ND];
    load_coords<T, A, ND>(c, grid, e);
    Taps<A, ND> tp;
    taps_of<A, ND, Index>(tp, c, g, mode, padding, align);
    A gg[ND];
    for (int d = 0; d < ND; ++d) gg[d] = A(0);
    for (Index ch = 0; ch < C; ++ch) {
      const Index plane = (n * C + ch) * g.in_points;
      const A go = static_cast<A>(tl::widen(grad_out[(n * C + ch) * out_points + o]));
      for (int k = 0; k < tp.count; ++k) {
        if (tp.pos[k] < 0) continue;
        if (want_input) atomicAdd(grad_input + plane + tp.pos[k], tp.w[k] * go);
        if (want_grid && mode != 1) {
          const A v = static_cast<A>(tl::widen(input[plane + tp.pos[k]])) * go;
          for (int d = 0; d < ND; ++d) gg[d] += v * tp.dw[k][d];
        }
      }
    }
    if (want_grid)
      for (int d = 0; d < ND; ++d) grad_grid[e * ND + d] = tl::cast<T>(gg[d] * tp.mult[d]);
  }
}
