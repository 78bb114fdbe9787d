// Test-only kernel for tests/test_cuda_random.py: runs tl::philox4x32_10 (kernels/tensorlab/philox.cuh)
// on arbitrary counters and keys, which the random primitives never pass (their counter words 2
// and 3 are zero), so Random123's known-answer vectors check the device rounds themselves.
#include "tensorlab/philox.cuh"

// in: n rows of (c0, c1, c2, c3, k0, k1); out: n rows of the four output words.
__global__ void philox_kat(const unsigned int* in, unsigned int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const unsigned int* c = in + 6 * i;
    tl::Philox4 r = tl::philox4x32_10(c[0], c[1], c[2], c[3], c[4], c[5]);
    for (int j = 0; j < 4; ++j) out[4 * i + j] = r.w[j];
  }
}
