// Test-only kernels for tests/test_cuda_emulation.py: each exercises one CUDA built-in the
// emulation provides (barriers, shared memory, warp shuffles and votes, atomics, 16-bit floats,
// device assertions) or one failure it must report (an out-of-bounds write, a deadlock). They are
// plain CUDA: the test compiles them with NVRTC too.
#include "tensorlab/common.cuh"

// Sum of each block's slice of `in` through a static shared-memory tree (needs every barrier).
template <typename T>
__global__ void block_sum(const T* in, T* out, int n) {
  __shared__ T partial[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : T(0);
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Reverses each block's slice through dynamic shared memory (launch with blockDim * 4 bytes).
__global__ void reverse_dynamic(const float* in, float* out) {
  TL_DYNAMIC_SHARED(float, buf);
  int t = threadIdx.x;
  buf[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = buf[blockDim.x - 1 - t];
}

// Per thread (one warp per block or more), 8 results: shfl_down tree sum, shfl_xor butterfly
// max, broadcast of lane 3, shfl_up by 1, ballot of (lane % 3 == 0), all(v > 0), any(v > 30),
// and the __reduce_add_sync sum.
__global__ void warp_ops(const int* in, int* out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int v = in[g];
  int sum = v;
  for (int d = 16; d > 0; d >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, d);
  int mx = v;
  for (int m = 1; m < 32; m <<= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, m));
  int* o = out + g * 8;
  o[0] = sum;
  o[1] = mx;
  o[2] = __shfl_sync(0xffffffffu, v, 3);
  o[3] = __shfl_up_sync(0xffffffffu, v, 1);
  o[4] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
  o[5] = __all_sync(0xffffffffu, v > 0);
  o[6] = __any_sync(0xffffffffu, v > 30);
  o[7] = __reduce_add_sync(0xffffffffu, v);
}

// Atomics from every thread of the grid: a counter, a float sum, a max, and a CAS-claimed slot.
__global__ void atomics(int* counter, float* fsum, int* imax, int* first, const float* in, const int* vals) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(counter, 1);
  atomicAdd(fsum, in[g]);
  atomicMax(imax, vals[g]);
  atomicCAS(first, -1, g);
}

// __syncthreads_count / _and / _or over a predicate of the thread index.
__global__ void barrier_votes(int* out, int k) {
  int t = threadIdx.x;
  int c = __syncthreads_count(t < k);
  int a = __syncthreads_and(t < k);
  int o = __syncthreads_or(t < k);
  if (t == 0) {
    out[0] = c;
    out[1] = a;
    out[2] = o;
  }
}

// float -> __half / __nv_bfloat16 -> float, and 16-bit arithmetic (a + b rounded once).
__global__ void half_roundtrip(const float* in, float* h, float* b, float* hsum, float* bsum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half x = __float2half(in[i]);
    __nv_bfloat16 y = __float2bfloat16(in[i]);
    h[i] = __half2float(x);
    b[i] = __bfloat162float(y);
    hsum[i] = __half2float(x + __float2half(1.0f));
    bsum[i] = __bfloat162float(y + __float2bfloat16(1.0f));
  }
}

// Every thread writes its built-in indices: 3-D blocks in a 2-D grid.
__global__ void indices(int* out) {
  int block = blockIdx.y * gridDim.x + blockIdx.x;
  int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  int* o = out + (block * blockDim.x * blockDim.y * blockDim.z + t) * 4;
  o[0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
  o[1] = blockIdx.x + 10 * blockIdx.y;
  o[2] = blockDim.x * blockDim.y * blockDim.z;
  o[3] = gridDim.x * gridDim.y;
}

// Writes n + 1 elements into an n-element buffer: the last write is out of bounds.
__global__ void oob_write(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 1.0f;
}

// Half a warp shuffles while the other half waits at __syncthreads: can never complete.
__global__ void deadlock(int* out) {
  int t = threadIdx.x;
  if (t < 16) {
    out[t] = __shfl_sync(0xffffffffu, t, 0);
  } else {
    __syncthreads();
  }
}

// assert() fails in one thread.
__global__ void failing_assert(const int* in) {
  assert(in[threadIdx.x] >= 0);
}

// Reads static shared memory at index k: out of bounds for k >= 64.
template <typename T>
__global__ void shared_read(T* out, int k) {
  __shared__ T s[64];
  s[threadIdx.x] = T(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s[k];
}
