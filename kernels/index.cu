// Index kernels: gather-by-index and scatter-by-index for gather, scatter(_add), index_select,
// index_fill, and advanced indexing (x[i, j] / index_put_). The host reduces every op to one form:
// up to 8 int64 index rows (row k at idx + k * row_stride), each addressing one dimension of a
// source/destination whose other dimensions are walked through layouts sharing the iteration shape.
// `dims` is a table, not a layout: dims.shape[k] = size of the dimension row k indexes (negative
// indices count from its end), dims.stride[k] = that dimension's element stride.
// Index values are bounds-checked on the device by index_check, asynchronously: a failure is written
// to the op's guard word (guard[0] = serial, the op's number) and to the device's sticky record (count of
// bad values, then serial, row and value of the first one since the host last looked), read at the next
// point where it waits anyway (backends/cuda/device_checks.py). The gather/put kernels of the same op
// run next on the same stream and do nothing when their guard holds their serial: a bad index never
// reads or writes out of bounds, and an in-place target stays exactly as it was.
#include "tensorlab/indexing.cuh"

// Row k holding an index outside [0, size) (or [-size, size) with allow_negative) fails the check.
template <typename Index>
__global__ void index_check(const long long* __restrict__ idx, tl::Divisor<Index> nb, Index n,
                            tl::StridedLayout<Index> row, long long row_stride, tl::StridedLayout<long long> dims,
                            bool allow_negative, long long* guard, long long serial, unsigned long long* sticky) {
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index k = i;
    const Index b = nb.pop(k);
    long long v = idx[k * row_stride + tl::offset_of(b, row)];
    long long size = dims.shape[k];
    if (v >= size || v < (allow_negative ? -size : 0)) {
      guard[0] = serial;
      if (atomicAdd(sticky, 1ULL) == 0ULL) {
        sticky[1] = static_cast<unsigned long long>(serial);
        sticky[2] = static_cast<unsigned long long>(k);
        sticky[3] = static_cast<unsigned long long>(v);
      }
    }
  }
}

// A check another kernel computed as one bool (a probability out of range, a zero divisor): recorded as an
// index check's failure is (guard word, sticky record with row 0 and value 1), without a host wait.
__global__ void check_flag(const bool* __restrict__ flag, long long* guard, long long serial,
                           unsigned long long* sticky) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && *flag) {
    guard[0] = serial;
    if (atomicAdd(sticky, 1ULL) == 0ULL) {
      sticky[1] = static_cast<unsigned long long>(serial);
      sticky[2] = 0ULL;
      sticky[3] = 1ULL;
    }
  }
}

// True when this op's index check failed (its serial is in its guard word): the kernel writes nothing.
__device__ __forceinline__ bool check_failed(const long long* guard, long long serial) {
  return guard[0] == serial;
}

__device__ __forceinline__ long long indexed_offset(const long long* idx, long long b, long long row_stride,
                                                    const tl::StridedLayout<long long>& dims) {
  long long off = 0;
  for (int k = 0; k < dims.ndim; ++k) {
    long long v = idx[k * row_stride + b];
    off += (v < 0 ? v + dims.shape[k] : v) * dims.stride[k];
  }
  return off;
}

// out[o(i)] = src[s(i) + sum_k idx_k[b(i)] * dims.stride[k]] for i over the iteration shape.
template <typename T, typename Index>
__global__ void index_gather(T* out, const T* src, const long long* __restrict__ idx,
                             Index n, long long row_stride, tl::StridedLayout<Index> out_layout,
                             tl::StridedLayout<Index> src_layout, tl::StridedLayout<Index> idx_layout,
                             tl::StridedLayout<long long> dims, const long long* guard, long long serial) {
  if (check_failed(guard, serial)) return;
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index o, s, b;
    tl::offsets3(i, out_layout, src_layout, idx_layout, o, s, b);
    out[o] = src[static_cast<long long>(s) + indexed_offset(idx, b, row_stride, dims)];
  }
}

// dst[d(i) + sum_k idx_k[b(i)] * dims.stride[k]] (Mode: =, +=, *=) src[s(i)] (or `value` when
// !has_src). A is the accumulator type: S itself, or float / int when dst is a scratch copy.
// Plain stores with duplicate indices keep one of the values (unspecified which, as in torch).
template <typename S, typename A, typename Index, int Mode>
__global__ void index_put(A* dst, const S* src, S value, bool has_src, const long long* __restrict__ idx, Index n,
                          long long row_stride, tl::StridedLayout<Index> dst_layout,
                          tl::StridedLayout<Index> src_layout, tl::StridedLayout<Index> idx_layout,
                          tl::StridedLayout<long long> dims, const long long* guard, long long serial) {
  if (check_failed(guard, serial)) return;
  for (Index i = tl::global_thread<Index>(); i < n; i += tl::grid_stride<Index>()) {
    Index d, s, b;
    tl::offsets3(i, dst_layout, src_layout, idx_layout, d, s, b);
    S v = has_src ? src[s] : value;
    tl::combine<Mode>(dst + (static_cast<long long>(d) + indexed_offset(idx, b, row_stride, dims)), tl::cast<A>(v));
  }
}
