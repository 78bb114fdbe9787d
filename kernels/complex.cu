// Elementwise kernels over complex operands (backs backends/cuda/complex.py): Op a functor of
// tensorlab/complex.cuh's tl::cop, T the part type (float: complex64, double: complex128), R the
// result type (tl::complex<T>, T for abs, bool for predicates). The host converts every operand to
// complex<T> first; a Python scalar operand is passed by value (its flag set, its pointer unused).
#include "tensorlab/common.cuh"
#include "tensorlab/complex.cuh"

template <typename Op, typename T, typename R, typename Index>
__global__ void complex_unary(R* out, const tl::complex<T>* a, Index n, tl::StridedLayout<Index> lo,
                              tl::StridedLayout<Index> la) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index oo = i, oa = i;
    if (lo.ndim) {
      oo = oa = 0;
      tl::for_each_coord(i, lo, [&](int d, Index x) {
        oo += x * lo.stride[d];
        oa += x * la.stride[d];
      });
    }
    out[oo] = Op::f(a[oa]);
  }
}

template <typename Op, typename T, typename R, typename Index>
__global__ void complex_binary(R* out, const tl::complex<T>* a, const tl::complex<T>* b, tl::complex<T> sa,
                               tl::complex<T> sb, int a_scalar, int b_scalar, Index n, tl::StridedLayout<Index> lo,
                               tl::StridedLayout<Index> la, tl::StridedLayout<Index> lb) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index oo = i, oa = i, ob = i;
    if (lo.ndim) {
      oo = oa = ob = 0;
      tl::for_each_coord(i, lo, [&](int d, Index x) {
        oo += x * lo.stride[d];
        oa += x * la.stride[d];
        ob += x * lb.stride[d];
      });
    }
    const tl::complex<T> x = a_scalar ? sa : a[oa];
    const tl::complex<T> y = b_scalar ? sb : b[ob];
    out[oo] = Op::f(x, y);
  }
}
