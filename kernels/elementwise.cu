// Elementwise kernels (backs unary/binary/ternary of backends/cuda/elementwise.py). Op is a functor
// of tensorlab/functors.cuh, C the compute type (bool, long long, float, double).
//
// *_kernel: any dtypes, any strides. Each operand's dtype is a runtime code (dtype_code.cuh), so one
//   instantiation per (op, compute type, index type) serves every dtype mix; a code < 0 marks a
//   Python scalar passed by value in C (its layout is unused). The tensor operands' layouts share
//   the output's (coalesced) shape, so one walk over an element's coordinates gives every offset;
//   an output layout with ndim 0 marks all operands dense in one order (element i at offset i: the
//   strided arithmetic is skipped). The fallback for strided layouts and mixed operand dtypes.
// *_vec<Op, T, Index[, O[, A, B, D]]>: the contiguous path with every type fixed at compile time: T
//   the compute dtype's storage type (C = Compute<T>), O the output's, A/B/D the operands' (default
//   T; where's condition and masked_fill's mask are bool). kernel_table.py generates one row per
//   (op, compute dtype) from ELEMENTWISE. Each step moves one pack (pack.cuh: 16 bytes of the widest
//   operand) of every tensor operand; `packs` (0 when the launcher found a pointer not aligned to its
//   pack width) packs first, then the elements past them one by one, with the same types.
#include "tensorlab/functors.cuh"
#include "tensorlab/pack.cuh"

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

// -- contiguous, types fixed at compile time -----------------------------------------------------

template <typename Op, typename T, typename Index, typename O = T>
__global__ void unary_vec(O* out, const T* a, typename tl::Compute<T>::type p0,
                          typename tl::Compute<T>::type p1, typename tl::Compute<T>::type p2, Index n, Index packs) {
  using C = typename tl::Compute<T>::type;
  constexpr int N = tl::Lanes<T, O>::value;
  const tl::Params<C> p{p0, p1, p2};
  for (Index k = tl::global_thread<Index>(); k < packs; k += tl::grid_stride<Index>()) {
    const tl::Pack<T, N> x = tl::load_pack<N>(a, k);
    tl::Pack<O, N> r;
#pragma unroll
    for (int j = 0; j < N; ++j) r.v[j] = tl::cast<O>(Op::f(tl::cast<C>(x.v[j]), p));
    tl::store_pack<N>(out, k, r);
  }
  for (Index i = packs * N + tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    out[i] = tl::cast<O>(Op::f(tl::cast<C>(a[i]), p));
  }
}

// scalar_mask: bit 0 set when `a` is the scalar sa, bit 1 when `b` is sb (its pointer is then unused)
template <typename Op, typename T, typename Index, typename O = T>
__global__ void binary_vec(O* out, const T* a, const T* b,
                           typename tl::Compute<T>::type sa, typename tl::Compute<T>::type sb, int scalar_mask,
                           typename tl::Compute<T>::type p0, Index n, Index packs) {
  using C = typename tl::Compute<T>::type;
  constexpr int N = tl::Lanes<T, O>::value;
  const tl::Params<C> p{p0, C(0), C(0)};
  const bool a_scalar = scalar_mask & 1, b_scalar = scalar_mask & 2;
  for (Index k = tl::global_thread<Index>(); k < packs; k += tl::grid_stride<Index>()) {
    tl::Pack<T, N> x, y;
    if (!a_scalar) x = tl::load_pack<N>(a, k);
    if (!b_scalar) y = tl::load_pack<N>(b, k);
    tl::Pack<O, N> r;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const C u = a_scalar ? sa : tl::cast<C>(x.v[j]);
      const C v = b_scalar ? sb : tl::cast<C>(y.v[j]);
      r.v[j] = tl::cast<O>(Op::f(u, v, p));
    }
    tl::store_pack<N>(out, k, r);
  }
  for (Index i = packs * N + tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    const C u = a_scalar ? sa : tl::cast<C>(a[i]);
    const C v = b_scalar ? sb : tl::cast<C>(b[i]);
    out[i] = tl::cast<O>(Op::f(u, v, p));
  }
}

// scalar_mask: bit k set when operand k (a, b, c) is its scalar
template <typename Op, typename T, typename Index, typename O = T, typename A = T, typename B = T, typename D = T>
__global__ void ternary_vec(O* out, const A* a, const B* b,
                            const D* c, typename tl::Compute<T>::type sa,
                            typename tl::Compute<T>::type sb, typename tl::Compute<T>::type sc, int scalar_mask,
                            typename tl::Compute<T>::type p0, Index n, Index packs) {
  using C = typename tl::Compute<T>::type;
  constexpr int N = tl::Lanes<O, A, B, D>::value;
  const tl::Params<C> p{p0, C(0), C(0)};
  const bool a_scalar = scalar_mask & 1, b_scalar = scalar_mask & 2, c_scalar = scalar_mask & 4;
  for (Index k = tl::global_thread<Index>(); k < packs; k += tl::grid_stride<Index>()) {
    tl::Pack<A, N> x;
    tl::Pack<B, N> y;
    tl::Pack<D, N> z;
    if (!a_scalar) x = tl::load_pack<N>(a, k);
    if (!b_scalar) y = tl::load_pack<N>(b, k);
    if (!c_scalar) z = tl::load_pack<N>(c, k);
    tl::Pack<O, N> r;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const C u = a_scalar ? sa : tl::cast<C>(x.v[j]);
      const C v = b_scalar ? sb : tl::cast<C>(y.v[j]);
      const C w = c_scalar ? sc : tl::cast<C>(z.v[j]);
      r.v[j] = tl::cast<O>(Op::f(u, v, w, p));
    }
    tl::store_pack<N>(out, k, r);
  }
  for (Index i = packs * N + tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    const C u = a_scalar ? sa : tl::cast<C>(a[i]);
    const C v = b_scalar ? sb : tl::cast<C>(b[i]);
    const C w = c_scalar ? sc : tl::cast<C>(c[i]);
    out[i] = tl::cast<O>(Op::f(u, v, w, p));
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
