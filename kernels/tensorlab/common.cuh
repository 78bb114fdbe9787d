// Shared device code: element types and strided indexing over coalesced dimensions.
// Included by every kernel in kernels/*.cu; compiled by NVRTC and, for CI, by the emulation driver
// (tensorlab/backends/cuda/emulation), which force-includes its CUDA built-ins and defines TL_EMULATION.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Dynamic shared memory (the launch's shared_mem bytes) as a T*: the one place kernels differ
// between NVRTC and the emulation, where `extern __shared__` has no host equivalent.
#ifdef TL_EMULATION
#define TL_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(tl_emu_dynamic_shared())
#else
#define TL_DYNAMIC_SHARED(T, name)                                 \
  extern __shared__ __align__(16) unsigned char tl_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(tl_dynamic_shared_)
#endif

namespace tl {

constexpr int kMaxDims = 8;

// Index arithmetic without integer division: a / d for an invariant d > 0 is
// (mul_high(a, magic) + a) >> shift, where magic = floor(2^(B+l) / d) + 1 - 2^B and shift = l =
// ceil(log2 d) for the B-bit unsigned type of the Index (B = 32 for int, 64 for long long). The host
// computes (magic, shift) once per divisor (launch.py's divisor_magic, tested against // there); the
// quotient is exact for 0 <= a < 2^(B-1), i.e. every non-negative Index, and the sum cannot wrap
// because mul_high(a, magic) < a.
template <typename Index> struct UnsignedIndex;
template <> struct UnsignedIndex<int> { using type = unsigned; };
template <> struct UnsignedIndex<long long> { using type = unsigned long long; };

__device__ __forceinline__ unsigned mul_high(unsigned a, unsigned b) { return __umulhi(a, b); }
__device__ __forceinline__ unsigned long long mul_high(unsigned long long a, unsigned long long b) {
  return __umul64hi(a, b);
}

template <typename Index>
__device__ __forceinline__ Index magic_quotient(Index a, typename UnsignedIndex<Index>::type magic, int shift) {
  using U = typename UnsignedIndex<Index>::type;
  const U u = static_cast<U>(a);
  return static_cast<Index>((mul_high(u, magic) + u) >> shift);
}

// One invariant divisor with its magic numbers, packed by the host (launch.divisor) for kernels that
// split an index by sizes that are not a layout's shape (windows, matrix rows and columns).
template <typename Index>
struct Divisor {
  Index d;
  typename UnsignedIndex<Index>::type magic;
  int shift;
  __device__ __forceinline__ Index div(Index a) const { return magic_quotient(a, magic, shift); }
  // a's remainder; a becomes the quotient (peels the innermost coordinate off a linear index)
  __device__ __forceinline__ Index pop(Index& a) const {
    const Index q = div(a), r = a - q * d;
    a = q;
    return r;
  }
};

// Shape and strides (in elements) of one operand after the host coalesced its dimensions, and each
// size's division magic (magic[d], shift[d] for shape[d], as in Divisor). Passed by value as a kernel
// argument; the host packs it with the same field order (launch.strided_layout).
template <typename Index>
struct StridedLayout {
  Index shape[kMaxDims];
  Index stride[kMaxDims];
  typename UnsignedIndex<Index>::type magic[kMaxDims];
  int shift[kMaxDims];
  int ndim;
  __device__ __forceinline__ Index div(Index a, int d) const { return magic_quotient(a, magic[d], shift[d]); }
  // a's coordinate along dim d; a becomes the linear index of the outer dims
  __device__ __forceinline__ Index pop(Index& a, int d) const {
    const Index q = div(a, d), r = a - q * shape[d];
    a = q;
    return r;
  }
};

// Shape and strides without the division magic, for a layout walked once per tile (matmul's batch
// dims): the smaller argument keeps gemm_tiled's register allocation as tuned (no spills).
template <typename Index>
struct PlainLayout {
  Index shape[kMaxDims];
  Index stride[kMaxDims];
  int ndim;
};

// a / b for the non-negative operands of index arithmetic where b varies at run time (not a per-launch
// invariant). 64-bit indices divide in 32 bits when both operands fit (a few instructions); the 64-bit
// division is a subroutine call.
__device__ __forceinline__ int index_div(int a, int b) { return a / b; }
__device__ __forceinline__ long long index_div(long long a, long long b) {
  if (((a | b) >> 32) == 0) return static_cast<long long>(static_cast<unsigned>(a) / static_cast<unsigned>(b));
  return a / b;
}

// Calls f(d, c) with the coordinate c along each dim d of the linear (row-major) index i of a
// layout's shape, innermost dim first; 0 <= i < the number of elements, so dim 0 needs no division.
// Operands the host coalesced together share one shape: one walk gives the offsets of all of them.
template <typename Index, typename F>
__device__ __forceinline__ void for_each_coord(Index i, const StridedLayout<Index>& l, F&& f) {
#pragma unroll
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d < l.ndim) {
      const Index q = l.div(i, d);
      f(d, i - q * l.shape[d]);
      i = q;
    }
  }
  if (l.ndim > 0) f(0, i);
}

// Element offset of the linear (row-major) index i, 0 <= i < the layout's number of elements.
template <typename Index>
__device__ __forceinline__ Index offset_of(Index i, const StridedLayout<Index>& l) {
  Index off = 0;
  for_each_coord(i, l, [&](int d, Index c) { off += c * l.stride[d]; });
  return off;
}

// Grid-stride loop bounds for 1-D launches.
template <typename Index>
__device__ __forceinline__ Index global_thread() {
  return static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
}

template <typename Index>
__device__ __forceinline__ Index grid_stride() {
  return static_cast<Index>(gridDim.x) * blockDim.x;
}

}  // namespace tl
