// Elementwise kernels (backs unary/binary/ternary of backends/cuda/elementwise.py). Op is a functor
// of tensorlab/functors.cuh, C the compute type (bool, long long, float, double).
//
// *_kernel: any dtypes, any strides. Each operand's dtype is a runtime code (dtype_code.cuh), so one
//   instantiation per (op, compute type, index type) serves every dtype mix; a code < 0 marks a
//   Python scalar passed by value in C (its layout is unused). The tensor operands' layouts share
//   the output's (coalesced) shape, so one walk over an element's coordinates gives every offset;
//   an output layout with ndim 0 marks all operands dense in one order (element i at offset i: the
//   strided arithmetic is skipped).
// *_vec: the fast path: every tensor operand and the output are contiguous and of one storage type
//   T; 16-byte loads and stores when every pointer is 16-byte aligned, element loop for the rest.
#include "tensorlab/functors.cuh"

namespace tl {

template <typename T>
struct alignas(16) Pack {
  static constexpr int N = 16 / sizeof(T);
  T v[N];
};

template <typename T>
__device__ __forceinline__ bool aligned16(const T* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ULL) == 0;
}

}  // namespace tl

// -- generic (mixed dtypes, strided, scalars) ----------------------------------------------------

template <typename Op, typename C, typename Index>
__global__ void unary_kernel(void* out, const void* a, int out_code, int a_code, int c_code, C p0, C p1, C p2,
                             Index n, tl::StridedLayout<Index> lo, tl::StridedLayout<Index> la) {
  const tl::Params<C> p{p0, p1, p2};
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index oo = i, oa = i;
    if (lo.ndim) {
      oo = oa = 0;
      tl::for_each_coord(i, lo, [&](int d, Index x) {
        oo += x * lo.stride[d];
        oa += x * la.stride[d];
      });
    }
    C x = tl::load<C>(a, a_code, oa, c_code);
    tl::store(out, out_code, oo, tl::narrow(Op::f(x, p), c_code));
  }
}

template <typename Op, typename C, typename Index>
__global__ void binary_kernel(void* out, const void* a, const void* b, int out_code, int a_code, int b_code,
                              int c_code, C sa, C sb, C p0, Index n, tl::StridedLayout<Index> lo,
                              tl::StridedLayout<Index> la, tl::StridedLayout<Index> lb) {
  const tl::Params<C> p{p0, C(0), C(0)};
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
    C x = tl::load_or<C>(a, a_code, oa, c_code, sa);
    C y = tl::load_or<C>(b, b_code, ob, c_code, sb);
    tl::store(out, out_code, oo, tl::narrow(Op::f(x, y, p), c_code));
  }
}

template <typename Op, typename C, typename Index>
__global__ void ternary_kernel(void* out, const void* a, const void* b, const void* c, int out_code, int a_code,
                               int b_code, int c_code, int comp_code, C sa, C sb, C sc, C p0, Index n,
                               tl::StridedLayout<Index> lo, tl::StridedLayout<Index> la,
                               tl::StridedLayout<Index> lb, tl::StridedLayout<Index> lc) {
  const tl::Params<C> p{p0, C(0), C(0)};
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index oo = i, oa = i, ob = i, oc = i;
    if (lo.ndim) {
      oo = oa = ob = oc = 0;
      tl::for_each_coord(i, lo, [&](int d, Index x) {
        oo += x * lo.stride[d];
        oa += x * la.stride[d];
        ob += x * lb.stride[d];
        oc += x * lc.stride[d];
      });
    }
    C x = tl::load_or<C>(a, a_code, oa, comp_code, sa);
    C y = tl::load_or<C>(b, b_code, ob, comp_code, sb);
    C z = tl::load_or<C>(c, c_code, oc, comp_code, sc);
    tl::store(out, out_code, oo, tl::narrow(Op::f(x, y, z, p), comp_code));
  }
}

// -- contiguous, one storage type ----------------------------------------------------------------

template <typename Op, typename T, typename Index>
__global__ void unary_vec(T* out, const T* a, typename tl::Compute<T>::type p0,
                          typename tl::Compute<T>::type p1, typename tl::Compute<T>::type p2, Index n) {
  using C = typename tl::Compute<T>::type;
  using P = tl::Pack<T>;
  const tl::Params<C> p{p0, p1, p2};
  Index done = 0;
  if (tl::aligned16(out) && tl::aligned16(a)) {
    const Index packs = n / P::N;
    for (Index k = tl::global_thread<Index>(); k < packs; k += tl::grid_stride<Index>()) {
      P x = reinterpret_cast<const P*>(a)[k], r;
#pragma unroll
      for (int j = 0; j < P::N; ++j) r.v[j] = tl::cast<T>(Op::f(tl::cast<C>(x.v[j]), p));
      reinterpret_cast<P*>(out)[k] = r;
    }
    done = packs * P::N;
  }
  for (Index i = done + tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i] = tl::cast<T>(Op::f(tl::cast<C>(a[i]), p));
  }
}

// scalar_mask: bit 0 set when `a` is the scalar sa, bit 1 when `b` is sb (its pointer is then unused)
template <typename Op, typename T, typename Index>
__global__ void binary_vec(T* out, const T* a, const T* b, typename tl::Compute<T>::type sa,
                           typename tl::Compute<T>::type sb, int scalar_mask, typename tl::Compute<T>::type p0,
                           Index n) {
  using C = typename tl::Compute<T>::type;
  using P = tl::Pack<T>;
  const tl::Params<C> p{p0, C(0), C(0)};
  const bool a_scalar = scalar_mask & 1, b_scalar = scalar_mask & 2;
  Index done = 0;
  if (tl::aligned16(out) && (a_scalar || tl::aligned16(a)) && (b_scalar || tl::aligned16(b))) {
    const Index packs = n / P::N;
    for (Index k = tl::global_thread<Index>(); k < packs; k += tl::grid_stride<Index>()) {
      P x, y, r;
      if (!a_scalar) x = reinterpret_cast<const P*>(a)[k];
      if (!b_scalar) y = reinterpret_cast<const P*>(b)[k];
#pragma unroll
      for (int j = 0; j < P::N; ++j) {
        C u = a_scalar ? sa : tl::cast<C>(x.v[j]);
        C v = b_scalar ? sb : tl::cast<C>(y.v[j]);
        r.v[j] = tl::cast<T>(Op::f(u, v, p));
      }
      reinterpret_cast<P*>(out)[k] = r;
    }
    done = packs * P::N;
  }
  for (Index i = done + tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    C u = a_scalar ? sa : tl::cast<C>(a[i]);
    C v = b_scalar ? sb : tl::cast<C>(b[i]);
    out[i] = tl::cast<T>(Op::f(u, v, p));
  }
}

// -- integer division by zero: flag[0] = 1 when some divisor, in the compute dtype, is 0 ---------

template <typename Index>
__global__ void any_zero_divisor(int* flag, const void* b, int b_code, int c_code, Index n,
                                 tl::StridedLayout<Index> lb) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    if (tl::load<long long>(b, b_code, tl::at(i, lb), c_code) == 0) flag[0] = 1;
  }
}
