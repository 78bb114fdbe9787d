// Stable sort along one dimension (sort, argsort, topk). Every row is sorted as (key, original
// index) pairs under a strict total order: keys ascending (descending: reversed) with NaN above
// every number, equal keys by index, so the result is the stable order of the CPU backend.
//   sort_segments: one block per segment of up to kSegment elements of a row, bitonic sort in
//                  shared memory (padded to a power of two P); rows up to kSegment elements are one
//                  segment and are written straight to the outputs (the first `limit` of them: topk);
//   sort_merge:    for longer rows, merge passes over runs of `width` sorted elements: each element
//                  finds its place by a binary search in the partner run; the last pass writes the
//                  outputs.
// Rows are addressed through a layout over the non-sorted dims plus an element stride along the
// sorted dim, for the input and for each output.
#include "tensorlab/indexing.cuh"

constexpr long long kPad = 0x7fffffffffffffffLL;  // the index of a padding slot: after everything

template <typename T>
__device__ __forceinline__ bool before(T a, long long ia, T b, long long ib, bool descending) {
  if (ib == kPad) return ia != kPad;
  if (ia == kPad) return false;
  auto x = tl::widen(a);
  auto y = tl::widen(b);
  bool xn = x != x, yn = y != y;
  if (xn || yn) return xn && yn ? ia < ib : (descending ? xn : yn);
  if (x == y) return ia < ib;
  return descending ? y < x : x < y;
}

template <typename T, typename Index>
__global__ void sort_segments(const T* __restrict__ x, T* values, long long* __restrict__ indices, bool has_values,
                              Index rows, Index length, int segment, int padded, Index limit, bool descending,
                              tl::StridedLayout<Index> x_rows, Index x_step, tl::StridedLayout<Index> v_rows,
                              Index v_step, tl::StridedLayout<Index> i_rows, Index i_step) {
  TL_DYNAMIC_SHARED(unsigned char, smem);
  long long* ids = reinterpret_cast<long long*>(smem);
  T* keys = reinterpret_cast<T*>(smem + padded * sizeof(long long));
  Index per_row = (length + segment - 1) / segment;
  for (Index sg = blockIdx.x; sg < rows * per_row; sg += gridDim.x) {
    Index r = sg / per_row;
    Index start = (sg - r * per_row) * segment;
    Index m = length - start < segment ? length - start : segment;
    Index xo = tl::offset_of(r, x_rows);
    for (int t = threadIdx.x; t < padded; t += blockDim.x) {
      if (t < m) {
        keys[t] = x[xo + (start + t) * x_step];
        ids[t] = start + t;
      } else {
        ids[t] = kPad;
      }
    }
    __syncthreads();
    for (int k = 2; k <= padded; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < padded; t += blockDim.x) {
          int u = t ^ j;
          if (u > t) {
            bool swap = (t & k) == 0 ? before(keys[u], ids[u], keys[t], ids[t], descending)
                                     : before(keys[t], ids[t], keys[u], ids[u], descending);
            if (swap) {
              T kt = keys[t];
              keys[t] = keys[u];
              keys[u] = kt;
              long long it = ids[t];
              ids[t] = ids[u];
              ids[u] = it;
            }
          }
        }
        __syncthreads();
      }
    }
    Index vo = tl::offset_of(r, v_rows), io = tl::offset_of(r, i_rows);
    for (int t = threadIdx.x; t < m && start + t < limit; t += blockDim.x) {
      if (has_values) values[vo + (start + t) * v_step] = keys[t];
      indices[io + (start + t) * i_step] = ids[t];
    }
    __syncthreads();  // the shared arrays are refilled for the next segment
  }
}

// Input: rows of `length` elements, contiguous (row r at r * length), sorted in runs of `width`.
// Output: runs of 2 * width, through the output layouts (only positions below `limit`).
template <typename T, typename Index>
__global__ void sort_merge(const T* __restrict__ keys, const long long* __restrict__ ids, T* out_keys,
                           long long* __restrict__ out_ids, bool has_values, Index rows, tl::Divisor<Index> len_div,
                           tl::Divisor<Index> width_div, Index limit, bool descending, tl::StridedLayout<Index> v_rows,
                           Index v_step, tl::StridedLayout<Index> i_rows, Index i_step) {
  const Index length = len_div.d, width = width_div.d, n = rows * length;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    Index r = len_div.div(e), p = e - r * length;
    Index run = width_div.div(p);
    Index a0 = (run - (run & 1)) * width, b0 = a0 + width;
    Index end = b0 + width < length ? b0 + width : length;
    const T* rk = keys + r * length;
    const long long* ri = ids + r * length;
    T key = rk[p];
    long long id = ri[p];
    Index pos = p;
    if (b0 < length) {
      bool in_a = p < b0;
      Index lo = in_a ? b0 : a0, hi = in_a ? end : b0;
      Index first = lo;
      while (lo < hi) {  // partner elements that come before this one
        Index mid = lo + (hi - lo) / 2;
        if (before(rk[mid], ri[mid], key, id, descending)) lo = mid + 1; else hi = mid;
      }
      pos = a0 + (p - (in_a ? a0 : b0)) + (lo - first);
    }
    if (pos < limit) {
      if (has_values) out_keys[tl::offset_of(r, v_rows) + pos * v_step] = key;
      out_ids[tl::offset_of(r, i_rows) + pos * i_step] = id;
    }
  }
}
