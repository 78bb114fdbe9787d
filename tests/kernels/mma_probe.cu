// Test-only kernel for tests/test_attention_flash.py: one warp runs tl::mma16816 (kernels/tensorlab/
// mma.cuh) on a 16x16 A and a 16x8 B staged in shared memory, loading B both ways the attention
// kernels do (b_rows from B, b_cols from B^T), and writes each accumulator tile by the fragment
// layout; a third product feeds the first two results back as one A fragment (c_to_a).
#include "tensorlab/mma.cuh"

// a [16][16], b [16][8], bt [8][16] row-major (bt = b^T); out [3][16][8]: A B (b_rows), A B (b_cols),
// [round(A B) | round(A B)] B, the two tiles side by side as one 16 x 16 A (c_to_a): columns 0..7
// meet B's rows 0..7, columns 8..15 its rows 8..15.
template <typename T>
__global__ void mma_probe(const T* a, const T* b, const T* bt, float* out) {
  __shared__ __align__(16) T sa[16 * 16];
  __shared__ __align__(16) T sb[16 * 8];
  __shared__ __align__(16) T sbt[8 * 16];
  for (int i = threadIdx.x; i < 256; i += 32) sa[i] = a[i];
  for (int i = threadIdx.x; i < 128; i += 32) {
    sb[i] = b[i];
    sbt[i] = bt[i];
  }
  __syncwarp();
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const tl::FragA fa = tl::a_rows(sa, 16, 0, 0);
  tl::FragC d[3] = {};
  tl::mma16816<T>(d[0], fa, tl::b_rows(sb, 8, 0, 0));
  tl::mma16816<T>(d[1], fa, tl::b_cols(sbt, 16, 0, 0));
  const tl::FragB fb = tl::b_rows(sb, 8, 0, 0);
  const tl::FragA fd = tl::c_to_a<T>(d[0], d[1]);
  tl::mma16816<T>(d[2], fd, fb);
  for (int t = 0; t < 3; ++t)
    for (int e = 0; e < 4; ++e) out[t * 128 + (g + 8 * (e >> 1)) * 8 + c + (e & 1)] = d[t].x[e];
}
