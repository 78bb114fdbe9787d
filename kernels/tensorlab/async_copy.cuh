// Asynchronous global -> shared copies (cp.async, sm_80+): 16 bytes per instruction that go straight to
// shared memory without passing through registers, so a block can issue the next tile's loads and
// compute on the current one while they are in flight (double buffering). Completion is per thread:
// cp_async_commit closes a group of this thread's copies, cp_async_wait<N> waits until at most N of
// its groups are pending; a __syncthreads after the wait makes every thread's copies visible.
// The emulation (TL_EMULATION) copies at once (include/tl_emu_mma.h), which honours that order; before
// sm_80 the copy is a 16-byte load and store.
#pragma once
#include "tensorlab/common.cuh"

namespace tl {

// dst (shared) and src (global) 16-byte aligned; src_bytes 16 or 0 (0: dst gets zeros, src is not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
#if defined(TL_EMULATION)
  tl_emu_cp_async(dst, src, 16, src_bytes);
#elif __CUDA_ARCH__ >= 800
  const unsigned int d = static_cast<unsigned int>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
#else
  *static_cast<uint4*>(dst) = src_bytes ? *static_cast<const uint4*>(src) : make_uint4(0u, 0u, 0u, 0u);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if !defined(TL_EMULATION) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(TL_EMULATION) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace tl
