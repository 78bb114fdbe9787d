// The gradient of embedding's weight as a deterministic segmented sum: the indices come sorted (stable)
// with the positions they had, so the grad rows of one weight row form one segment, found by binary
// search. One thread per element of grad_weight sums its segment in order (float for float16/bfloat16,
// the dtype otherwise): no atomics, bit-identical from run to run. The row at padding_idx (-1: none)
// gets zero; scale_grad_by_freq divides each sum by the segment's length.
#include "tensorlab/reduce.cuh"

template <typename T, typename Index>
__global__ void embedding_bwd(T* __restrict__ grad_weight, const T* __restrict__ grad,
                              const long long* __restrict__ sorted, const long long* __restrict__ order,
                              Index num_weights, Index dim, Index n_idx, long long padding_idx, int scale) {
  using A = typename tl::AccOf<T>::type;
  const Index n = num_weights * dim;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index row = tl::index_div(e, dim), col = e - row * dim;
    const long long key = static_cast<long long>(row);
    Index lo = 0, hi = n_idx;
    while (lo < hi) {  // the first position with sorted >= key
      const Index m = lo + (hi - lo) / 2;
      if (sorted[m] < key) lo = m + 1; else hi = m;
    }
    Index end = lo;
    hi = n_idx;
    while (end < hi) {  // the first position with sorted > key
      const Index m = end + (hi - end) / 2;
      if (sorted[m] <= key) end = m + 1; else hi = m;
    }
    A s = A(0);
    if (key != padding_idx) {
      for (Index k = lo; k < end; ++k) s += static_cast<A>(tl::widen(grad[static_cast<Index>(order[k]) * dim + col]));
      if (scale && end > lo) s /= static_cast<A>(end - lo);
    }
    grad_weight[e] = tl::cast<T>(s);
  }
}
