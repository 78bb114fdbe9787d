// max_pool2d with torch's indices, and its backward. The forward is ATen's loop per output element
// (the first maximum in row-major window order, or the last NaN; a window whose elements all equal
// the lowest value keeps its first element inside the input). The backward gathers, per input
// element, the gradients of the windows whose index is that element, in window order: deterministic,
// no atomics, and the CPU backend's order. 1-D pools run as 2-D ones over a height of 1.
#include "tensorlab/reduce.cuh"

namespace {
template <typename T> struct PoolAcc { using type = float; };  // float16, bfloat16, float32
template <> struct PoolAcc<double> { using type = double; };

// ATen's max over the window rows [hs, he) step dh x cols [ws, we) step dw of the plane `base`: the first
// maximum in row-major order, or the last NaN; the window's first element where every one is the lowest value.
template <typename T, typename Index>
__device__ __forceinline__ void window_max(const T* base, Index s_h, Index s_w, Index W, Index hs, Index he, Index dh,
                                           Index ws, Index we, Index dw, T& out, long long& index) {
  using V = decltype(tl::widen(T()));
  V best = tl::Bounds<V>::lowest();
  T best_t = tl::cast<T>(best);
  long long best_i = static_cast<long long>(hs) * W + ws;
  for (Index h = hs; h < he; h += dh) {
    for (Index w = ws; w < we; w += dw) {
      const T t = base[h * s_h + w * s_w];
      const V v = tl::widen(t);
      if (v > best || tl::is_nan(v)) {
        best = v;
        best_t = t;
        best_i = static_cast<long long>(h) * W + w;
      }
    }
  }
  out = best_t;
  index = best_i;
}

// The sum, in window order, of the gradients of the windows [oh0, oh_end) x [ow0, ow_end) whose index is target;
// g and ix point at one (b, c) plane of grad_output and indices.
template <typename A, typename T, typename Index>
__device__ __forceinline__ A gather_by_index(const T* g, const long long* ix, const tl::StridedLayout<Index>& gl,
                                             const tl::StridedLayout<Index>& il, Index oh0, Index oh_end, Index ow0,
                                             Index ow_end, long long target) {
  A sum = A(0);
  for (Index oh = oh0; oh < oh_end; ++oh) {
    for (Index ow = ow0; ow < ow_end; ++ow) {
      if (ix[oh * il.stride[2] + ow * il.stride[3]] == target)
        sum += static_cast<A>(tl::widen(g[oh * gl.stride[2] + ow * gl.stride[3]]));
    }
  }
  return sum;
}
}  // namespace

// out and indices: contiguous (N, C, OH, OW) of shape `ol` (whose division magic splits i); xl: x's
// (N, C, H, W) shape and strides.
template <typename T, typename Index>
__global__ void max_pool2d_fwd(T* __restrict__ out, long long* __restrict__ indices, const T* __restrict__ x, Index n,
                               tl::StridedLayout<Index> xl, tl::StridedLayout<Index> ol, Index kh, Index kw, Index sh,
                               Index sw, Index ph, Index pw, Index dh, Index dw) {
  const Index H = xl.shape[2], W = xl.shape[3];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index ow = ol.pop(r, 3), oh = ol.pop(r, 2), c = ol.pop(r, 1), b = r;
    Index hs = oh * sh - ph, ws = ow * sw - pw;
    const Index he = min(hs + (kh - 1) * dh + 1, H), we = min(ws + (kw - 1) * dw + 1, W);
    while (hs < 0) hs += dh;
    while (ws < 0) ws += dw;
    const T* base = x + b * xl.stride[0] + c * xl.stride[1];
    window_max(base, xl.stride[2], xl.stride[3], W, hs, he, dh, ws, we, dw, out[i], indices[i]);
  }
}

// grad_input: contiguous (N, C, H, W) of shape `ol` (whose division magic splits i); gl / il: grad_output's
// and indices' (N, C, OH, OW) shapes and strides; sh / sw divide by multiply-high.
template <typename T, typename Index>
__global__ void max_pool2d_bwd(T* __restrict__ grad_input, const T* __restrict__ grad_output,
                               const long long* __restrict__ indices, Index n, tl::StridedLayout<Index> gl,
                               tl::StridedLayout<Index> il, tl::StridedLayout<Index> ol, Index kh, Index kw,
                               tl::Divisor<Index> sh, tl::Divisor<Index> sw, Index ph, Index pw, Index dh, Index dw) {
  using A = typename PoolAcc<T>::type;
  const Index OH = gl.shape[2], OW = gl.shape[3], W = ol.shape[3];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index w = ol.pop(r, 3), h = ol.pop(r, 2), c = ol.pop(r, 1), b = r;
    // the windows whose taps can reach (h, w): oh * sh - ph <= h <= oh * sh - ph + (kh - 1) * dh
    const Index lh = h + ph - (kh - 1) * dh, lw = w + pw - (kw - 1) * dw;
    const Index oh0 = lh <= 0 ? 0 : sh.div(lh + sh.d - 1);
    const Index ow0 = lw <= 0 ? 0 : sw.div(lw + sw.d - 1);
    const Index oh1 = min(sh.div(h + ph), OH - 1), ow1 = min(sw.div(w + pw), OW - 1);
    const long long target = static_cast<long long>(h) * W + w;
    const T* g = grad_output + b * gl.stride[0] + c * gl.stride[1];
    const long long* ix = indices + b * il.stride[0] + c * il.stride[1];
    grad_input[i] = tl::cast<T>(gather_by_index<A>(g, ix, gl, il, oh0, oh1 + 1, ow0, ow1 + 1, target));
  }
}

// adaptive_max_pool2d: output (oh, ow) reduces the window [floor(oh*H/OH), ceil((oh+1)*H/OH)) x (the same for
// w), in ATen's loop order and with its rule (first maximum, or the last NaN).
template <typename T, typename Index>
__global__ void adaptive_max_pool2d_fwd(T* __restrict__ out, long long* __restrict__ indices, const T* __restrict__ x,
                                        Index n, tl::StridedLayout<Index> xl, tl::StridedLayout<Index> ol) {
  const Index H = xl.shape[2], W = xl.shape[3], OH = ol.shape[2], OW = ol.shape[3];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index ow = ol.pop(r, 3), oh = ol.pop(r, 2), c = ol.pop(r, 1), b = r;
    const Index hs = ol.div(oh * H, 2), he = ol.div((oh + 1) * H + OH - 1, 2);
    const Index ws = ol.div(ow * W, 3), we = ol.div((ow + 1) * W + OW - 1, 3);
    const T* base = x + b * xl.stride[0] + c * xl.stride[1];
    window_max(base, xl.stride[2], xl.stride[3], W, hs, he, Index(1), ws, we, Index(1), out[i], indices[i]);
  }
}

// The backward: input (h, w) lies in the windows oh in [floor(h*OH/H), ceil((h+1)*OH/H)) (and the same for w);
// it gathers the gradients of those whose index is (h, w), in window order.
template <typename T, typename Index>
__global__ void adaptive_max_pool2d_bwd(T* __restrict__ grad_input, const T* __restrict__ grad_output,
                                        const long long* __restrict__ indices, Index n, tl::StridedLayout<Index> gl,
                                        tl::StridedLayout<Index> il, tl::StridedLayout<Index> ol) {
  using A = typename PoolAcc<T>::type;
  const Index OH = gl.shape[2], OW = gl.shape[3], H = ol.shape[2], W = ol.shape[3];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index w = ol.pop(r, 3), h = ol.pop(r, 2), c = ol.pop(r, 1), b = r;
    const Index oh0 = ol.div(h * OH, 2), oh1 = ol.div((h + 1) * OH + H - 1, 2);
    const Index ow0 = ol.div(w * OW, 3), ow1 = ol.div((w + 1) * OW + W - 1, 3);
    const long long target = static_cast<long long>(h) * W + w;
    const T* g = grad_output + b * gl.stride[0] + c * gl.stride[1];
    const long long* ix = indices + b * il.stride[0] + c * il.stride[1];
    grad_input[i] = tl::cast<T>(gather_by_index<A>(g, ix, gl, il, oh0, oh1, ow0, ow1, target));
  }
}
