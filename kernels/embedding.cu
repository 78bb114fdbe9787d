// The gradient of embedding's weight as a deterministic segmented sum. The indices come sorted (stable)
// with the positions they had, so the grad rows of one weight row form one segment of the sorted
// indices. One thread per (sorted position, column): a thread at a segment's first position sums the
// segment's grad rows in order (float for float16/bfloat16, the dtype otherwise) and writes that
// row of grad_weight; the others return. No atomics: bit-identical from run to run. grad_weight is
// zero-filled first (rows no index names keep zero); the row at padding_idx (-1: none) is skipped, and
// so is an index outside [0, num_weights) (the forward checked them; an in-place change of the
// indices since then must not write out of bounds). scale_grad_by_freq divides by the segment length.
#include "tensorlab/reduce.cuh"

template <typename T, typename Index>
__global__ void embedding_bwd(T* __restrict__ grad_weight, const T* __restrict__ grad,
                              const long long* __restrict__ sorted, const long long* __restrict__ order,
                              Index num_weights, tl::Divisor<Index> dim_div, Index n_idx, long long padding_idx,
                              int scale) {
  using A = typename tl::AccOf<T>::type;
  const Index dim = dim_div.d, n = n_idx * dim;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index k = dim_div.div(e), col = e - k * dim;
    const long long key = sorted[k];
    if ((k > 0 && sorted[k - 1] == key) || key == padding_idx || key < 0 || key >= num_weights) continue;
    A s = A(0);
    Index j = k;
    for (; j < n_idx && sorted[j] == key; ++j) s += static_cast<A>(tl::widen(grad[static_cast<Index>(order[j]) * dim + col]));
    if (scale) s /= static_cast<A>(j - k);
    grad_weight[static_cast<Index>(key) * dim + col] = tl::cast<T>(s);
  }
}
