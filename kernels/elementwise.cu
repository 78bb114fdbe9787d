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
// *_strided<Op, T, Index[, O[, A, B, D]]>: any layout (broadcast, transposed, sliced; dense when out's
//   layout has ndim 0) with every operand's storage type a template argument, as *_vec's (A, B, D the
//   operands' for binary too: the mixed float16/bfloat16-with-float32 rows). One magic-number walk of
//   out's coalesced shape gives every operand's offset; each thread loads StridedUnroll<T> elements (a
//   grid stride apart, so each load stays coalesced) before it computes and stores any, so several
//   loads are in flight. kernel_table.py generates the rows (int Index only: 64-bit indexing and the
//   dtype mixes without a row take *_kernel).
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

// -- any layout, types fixed at compile time -----------------------------------------------------

// Elements per thread per step: 4 for the 16-bit float types (8 bytes of each operand in flight per
// thread), 2 otherwise (each unrolled element costs NVRTC compile time in every row: 2 for 4 bytes).
template <typename T> struct StridedUnroll { static constexpr int value = 2; };
template <> struct StridedUnroll<__half> { static constexpr int value = 4; };
template <> struct StridedUnroll<__nv_bfloat16> { static constexpr int value = 4; };

// A thread's groups are the elements i0, i0 + step, ... (U of them, those below n) of a grid-stride
// loop; the next group's i0, or n after the thread's last group (no Index overflow near 2^31).
template <int U, typename Index>
__device__ __forceinline__ Index next_group(Index i0, Index n, Index step) {
  return n - i0 > U * step ? i0 + U * step : n;
}

template <typename Op, typename T, typename Index, typename O = T>
__global__ void unary_strided(O* out, const T* a, typename tl::Compute<T>::type p0, typename tl::Compute<T>::type p1,
                              typename tl::Compute<T>::type p2, Index n, tl::StridedLayout<Index> lo,
                              tl::StridedLayout<Index> la) {
  using C = typename tl::Compute<T>::type;
  const tl::Params<C> p{p0, p1, p2};
  constexpr int U = StridedUnroll<T>::value;
  const Index step = tl::grid_stride<Index>();
  for (Index i0 = tl::global_thread<Index>(); i0 < n; i0 = next_group<U>(i0, n, step)) {
    Index oo[U];
    T x[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) {
        const Index i = i0 + j * step;
        Index o = i, oa = i;
        if (lo.ndim) {
          o = oa = 0;
          tl::for_each_coord(i, lo, [&](int d, Index c) {
            o += c * lo.stride[d];
            oa += c * la.stride[d];
          });
        }
        oo[j] = o;
        x[j] = a[oa];
      }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) out[oo[j]] = tl::cast<O>(Op::f(tl::cast<C>(x[j]), p));
    }
  }
}

// scalar_mask: bit 0 set when `a` is the scalar sa, bit 1 when `b` is sb (its pointer and layout unused)
template <typename Op, typename T, typename Index, typename O = T, typename A = T, typename B = T>
__global__ void binary_strided(O* out, const A* a, const B* b, typename tl::Compute<T>::type sa,
                               typename tl::Compute<T>::type sb, int scalar_mask, typename tl::Compute<T>::type p0,
                               Index n, tl::StridedLayout<Index> lo, tl::StridedLayout<Index> la,
                               tl::StridedLayout<Index> lb) {
  using C = typename tl::Compute<T>::type;
  const tl::Params<C> p{p0, C(0), C(0)};
  const bool a_scalar = scalar_mask & 1, b_scalar = scalar_mask & 2;
  constexpr int U = StridedUnroll<T>::value;
  const Index step = tl::grid_stride<Index>();
  for (Index i0 = tl::global_thread<Index>(); i0 < n; i0 = next_group<U>(i0, n, step)) {
    Index oo[U];
    C x[U], y[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) {
        const Index i = i0 + j * step;
        Index o = i, oa = i, ob = i;
        if (lo.ndim) {
          o = oa = ob = 0;
          tl::for_each_coord(i, lo, [&](int d, Index c) {
            o += c * lo.stride[d];
            oa += c * la.stride[d];
            ob += c * lb.stride[d];
          });
        }
        oo[j] = o;
        x[j] = a_scalar ? sa : tl::cast<C>(a[oa]);
        y[j] = b_scalar ? sb : tl::cast<C>(b[ob]);
      }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) out[oo[j]] = tl::cast<O>(Op::f(x[j], y[j], p));
    }
  }
}

// scalar_mask: bit k set when operand k (a, b, c) is its scalar
template <typename Op, typename T, typename Index, typename O = T, typename A = T, typename B = T, typename D = T>
__global__ void ternary_strided(O* out, const A* a, const B* b, const D* c, typename tl::Compute<T>::type sa,
                                typename tl::Compute<T>::type sb, typename tl::Compute<T>::type sc, int scalar_mask,
                                typename tl::Compute<T>::type p0, Index n, tl::StridedLayout<Index> lo,
                                tl::StridedLayout<Index> la, tl::StridedLayout<Index> lb,
                                tl::StridedLayout<Index> lc) {
  using C = typename tl::Compute<T>::type;
  const tl::Params<C> p{p0, C(0), C(0)};
  const bool a_scalar = scalar_mask & 1, b_scalar = scalar_mask & 2, c_scalar = scalar_mask & 4;
  constexpr int U = StridedUnroll<T>::value;
  const Index step = tl::grid_stride<Index>();
  for (Index i0 = tl::global_thread<Index>(); i0 < n; i0 = next_group<U>(i0, n, step)) {
    Index oo[U];
    C x[U], y[U], z[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) {
        const Index i = i0 + j * step;
        Index o = i, oa = i, ob = i, oc = i;
        if (lo.ndim) {
          o = oa = ob = oc = 0;
          tl::for_each_coord(i, lo, [&](int d, Index k) {
            o += k * lo.stride[d];
            oa += k * la.stride[d];
            ob += k * lb.stride[d];
            oc += k * lc.stride[d];
          });
        }
        oo[j] = o;
        x[j] = a_scalar ? sa : tl::cast<C>(a[oa]);
        y[j] = b_scalar ? sb : tl::cast<C>(b[ob]);
        z[j] = c_scalar ? sc : tl::cast<C>(c[oc]);
      }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j * step < n - i0) out[oo[j]] = tl::cast<O>(Op::f(x[j], y[j], z[j], p));
    }
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
