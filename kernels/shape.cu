// cat, roll, tril/triu. (flip is a copy through a view with negative strides: copy.cu.)
#include "tensorlab/indexing.cuh"

// One part of a cat: its first element (a device address) and, per output dimension, its element
// stride; `start` is where it begins along the cat dimension. The host uploads a table of them.
struct CatPart {
  long long ptr;
  long long start;
  long long stride[tl::kMaxDims];
};

// Every part (already of T) into out in one launch, so an out= target is written all at once.
// `layout` is out's over its (partly coalesced) dims; `cat_dim` the cat dimension in it.
template <typename T, typename Index>
__global__ void cat(T* __restrict__ out, Index n, tl::StridedLayout<Index> layout, int cat_dim,
                    const CatPart* __restrict__ parts, int nparts) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index coord[tl::kMaxDims];
    Index rest = i, o = 0;
    for (int d = layout.ndim - 1; d >= 0; --d) {
      Index q = layout.div(rest, d);
      coord[d] = rest - q * layout.shape[d];
      o += coord[d] * layout.stride[d];
      rest = q;
    }
    long long c = coord[cat_dim];
    int lo = 0, hi = nparts - 1;  // the last part starting at or before c
    while (lo < hi) {
      int mid = (lo + hi + 1) >> 1;
      if (parts[mid].start <= c) lo = mid; else hi = mid - 1;
    }
    const CatPart& p = parts[lo];
    long long s = 0;
    for (int d = 0; d < layout.ndim; ++d) s += (d == cat_dim ? c - p.start : coord[d]) * p.stride[d];
    out[o] = reinterpret_cast<const T*>(p.ptr)[s];
  }
}

// out[c] = src[c'] with c'_d = (c_d - shift_d) mod size_d; shifts.shape[d] holds shift_d in [0, size_d)
// (a table in the layout struct; shifts.stride is unused).
template <typename T, typename Index>
__global__ void roll(T* __restrict__ out, const T* __restrict__ src, Index n, tl::StridedLayout<Index> out_layout,
                     tl::StridedLayout<Index> src_layout, tl::StridedLayout<Index> shifts) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index rest = i, o = 0, s = 0;
    for (int d = out_layout.ndim - 1; d >= 0; --d) {
      Index size = out_layout.shape[d];
      Index q = out_layout.div(rest, d);
      Index c = rest - q * size;
      Index sc = c - shifts.shape[d];
      o += c * out_layout.stride[d];
      s += (sc < 0 ? sc + size : sc) * src_layout.stride[d];
      rest = q;
    }
    out[o] = src[s];
  }
}

// tril (upper=false: keep col - row <= diagonal) / triu (upper: keep col - row >= diagonal) over
// the last two dims of the layouts (never merged with the batch dims). out may be src (tril_).
template <typename T, typename Index>
__global__ void triangle(T* out, const T* src, Index n, tl::StridedLayout<Index> out_layout,
                         tl::StridedLayout<Index> src_layout, long long diagonal, bool upper) {
  const int dc = out_layout.ndim - 1, dr = out_layout.ndim - 2;
  const Index cols = out_layout.shape[dc], rows = out_layout.shape[dr];
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index o, s;
    tl::offsets2(i, out_layout, src_layout, o, s);
    const Index q = out_layout.div(i, dc), row = q - out_layout.div(q, dr) * rows;
    long long diff = static_cast<long long>(i - q * cols) - static_cast<long long>(row);
    bool keep = upper ? diff >= diagonal : diff <= diagonal;
    out[o] = keep ? src[s] : tl::cast<T>(0);
  }
}
