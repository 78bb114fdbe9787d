// im2col / col2im: the sliding windows of a (B, C, H, W) input as a contiguous (B, C, kh, kw, oh, ow)
// tensor, and its adjoint. Convolutions feed im2col's result to the matmul kernels; their backward
// (and transposed convolutions, fold, the pools' backward) sum columns back with col2im, where each
// thread gathers the terms of one output element in (kernel row, kernel col) order: deterministic,
// no atomics, and the same order as the CPU backend.
#include "tensorlab/cast.cuh"

namespace {
template <typename T> struct Acc { using type = float; };  // float16, bfloat16, float32
template <> struct Acc<double> { using type = double; };
}  // namespace

// out[i] for i over the contiguous (B, C, kh, kw, oh, ow) result; `xl` is x's (B, C, H, W) shape and
// strides (not coalesced), `ol` the result's shape (its sizes' division magic splits i). Positions
// outside x read pad_value (0, or the lowest value for max pools).
template <typename T, typename Index>
__global__ void im2col(T* __restrict__ out, const T* __restrict__ x, Index n, tl::StridedLayout<Index> xl,
                       tl::StridedLayout<Index> ol, Index dh, Index dw, Index ph, Index pw, Index sh, Index sw,
                       T pad_value) {
  const Index H = xl.shape[2], W = xl.shape[3];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index z = ol.pop(r, 5), y = ol.pop(r, 4), j = ol.pop(r, 3), k = ol.pop(r, 2);
    const Index c = ol.pop(r, 1), b = r;
    const Index h = y * sh - ph + k * dh, w = z * sw - pw + j * dw;
    out[i] = (h >= 0 && h < H && w >= 0 && w < W)
                 ? x[b * xl.stride[0] + c * xl.stride[1] + h * xl.stride[2] + w * xl.stride[3]]
                 : pad_value;
  }
}

// out[i] for i over the contiguous (B, C, H, W) result: the sum of the column elements im2col would
// have read from it. `cl` is the columns' (B, C, kh, kw, oh, ow) shape and strides (not coalesced),
// `ol` the result's shape (its division magic splits i); sh / sw divide without a division instruction.
// float16/bfloat16/float32 accumulate in float, double in double; the result is rounded once.
template <typename T, typename Index>
__global__ void col2im(T* __restrict__ out, const T* __restrict__ cols, Index n, tl::StridedLayout<Index> cl,
                       tl::StridedLayout<Index> ol, Index dh, Index dw, Index ph, Index pw, tl::Divisor<Index> sh,
                       tl::Divisor<Index> sw) {
  using A = typename Acc<T>::type;
  const Index kh = cl.shape[2], kw = cl.shape[3], oh = cl.shape[4], ow = cl.shape[5];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index r = i;
    const Index w = ol.pop(r, 3), h = ol.pop(r, 2), c = ol.pop(r, 1), b = r;
    const T* base = cols + b * cl.stride[0] + c * cl.stride[1];
    A sum = A(0);
    for (Index k = 0; k < kh; ++k) {
      const Index hp = h + ph - k * dh;  // y * sh for the window row y that reads h with kernel row k
      if (hp < 0) break;                 // only decreases with k
      const Index y = sh.div(hp);
      if (y * sh.d != hp || y >= oh) continue;
      for (Index j = 0; j < kw; ++j) {
        const Index wp = w + pw - j * dw;
        if (wp < 0) break;
        const Index z = sw.div(wp);
        if (z * sw.d != wp || z >= ow) continue;
        sum += static_cast<A>(tl::widen(base[k * cl.stride[2] + j * cl.stride[3] + y * cl.stride[4] + z * cl.stride[5]]));
      }
    }
    out[i] = tl::cast<T>(sum);
  }
}
