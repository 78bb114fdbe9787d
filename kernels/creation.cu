// arange / linspace / eye: the formulas of backends/cpu/creation.py, evaluated per element with
// unfused, correctly rounded operations (__dmul_rn/__dadd_rn) so the values equal the CPU's.
// The 1-D outputs are written with an element stride (an out= tensor may be a strided view).
#include "tensorlab/cast.cuh"

// Integer start and step: int64 arithmetic (wrapping as NumPy's), then cast to T.
template <typename T, typename Index>
__global__ void arange_int(T* __restrict__ out, long long start, long long step, Index n, Index stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    unsigned long long v = static_cast<unsigned long long>(start) +
                           static_cast<unsigned long long>(i) * static_cast<unsigned long long>(step);
    out[i * stride] = tl::cast<T>(static_cast<long long>(v));
  }
}

// Any floating-point argument: double arithmetic, then cast to T.
template <typename T, typename Index>
__global__ void arange_float(T* __restrict__ out, double start, double step, Index n, Index stride) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i * stride] = tl::cast<T>(__dadd_rn(__dmul_rn(static_cast<double>(i), step), start));
  }
}

// torch's symmetric linspace: the first half counts up from start, the second down from end.
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
