// Fused layer norm and RMSNorm over the last dim of a contiguous (rows, len) input, float accumulation
// for float16/bfloat16/float32 inputs.
//
// layer_norm_fwd: one 256-thread block per row (grid-stride over rows). Each thread runs Welford over
// its elements (one pass over the row for the statistics; RMSNorm runs it over x*x and keeps the mean of
// squares), the block merges the 256 states in a fixed tree order, and the block writes y, mean and rstd
// (RMSNorm: mean = 0, rstd = 1 / sqrt(mean(x^2) + eps)).
// layer_norm_bwd: block j handles rows j, j + G, ...; it computes dx with the saved mean/rstd (two block
// sums in a fixed tree order) and adds dy * xhat and dy into its own row of float partials (each element
// of a partial row belongs to one thread: no atomics). layer_norm_bwd_reduce sums the G partial rows per
// column in row order: a deterministic two-stage reduction of dweight / dbias.
#include "tensorlab/reduce.cuh"

namespace {
constexpr int kNormThreads = 256;

// Merge the per-thread Welford states (n, mean, m2) in a fixed tree order; the result is in slot 0.
__device__ __forceinline__ void welford_block_merge(float* s_n, float* s_mean, float* s_m2, int tid) {
  for (int st = kNormThreads / 2; st > 0; st >>= 1) {
    if (tid < st) {
      const float na = s_n[tid], nb = s_n[tid + st], n = na + nb;
      if (nb > 0.f) {
        const float d = s_mean[tid + st] - s_mean[tid], f = nb / n;
        s_mean[tid] += d * f;
        s_m2[tid] += s_m2[tid + st] + d * d * na * f;
        s_n[tid] = n;
      }
    }
    __syncthreads();
  }
}

// Up to three row values of one element, loaded together (tl::for_each_loaded keeps 4 elements' loads
// in flight per thread).
struct Trio {
  float a, b, c;
};

// Sums of (a, b) over the block in a fixed tree order; the results are in slot 0.
__device__ __forceinline__ void pair_block_sum(float* s_a, float* s_b, int tid) {
  for (int st = kNormThreads / 2; st > 0; st >>= 1) {
    if (tid < st) {
      s_a[tid] += s_a[tid + st];
      s_b[tid] += s_b[tid + st];
    }
    __syncthreads();
  }
}
}  // namespace

template <typename T, typename Index>
__global__ void __launch_bounds__(256) layer_norm_fwd(T* __restrict__ y, float* __restrict__ mean_out,
                                                      float* __restrict__ rstd_out, const T* __restrict__ x,
                                                      const T* __restrict__ w, const T* __restrict__ b, Index rows,
                                                      Index len, float eps, int rms, int has_w, int has_b) {
  __shared__ float s_n[kNormThreads], s_mean[kNormThreads], s_m2[kNormThreads];
  const int tid = threadIdx.x;
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* src = x + row * len;
    float n = 0.f, mean = 0.f, m2 = 0.f;
    auto load_x = [=](Index i) { return static_cast<float>(tl::widen(src[i])); };
    tl::for_each_loaded<4>(Index(tid), len, Index(kNormThreads), load_x, [&](float v, Index) {
      if (rms) v *= v;
      n += 1.f;
      const float d = v - mean;
      mean += d / n;
      m2 += d * (v - mean);
    });
    s_n[tid] = n;
    s_mean[tid] = mean;
    s_m2[tid] = m2;
    __syncthreads();
    welford_block_merge(s_n, s_mean, s_m2, tid);
    const float mu = rms ? 0.f : s_mean[0];
    const float var = rms ? s_mean[0] : s_m2[0] / s_n[0];
    const float r = 1.f / sqrtf(var + eps);
    __syncthreads();  // slot 0 is read by every thread before the next row overwrites it
    if (tid == 0) {
      mean_out[row] = mu;
      rstd_out[row] = r;
    }
    T* dst = y + row * len;
    auto load_xwb = [=](Index i) {
      return Trio{static_cast<float>(tl::widen(src[i])), has_w ? static_cast<float>(tl::widen(w[i])) : 1.f,
                  has_b ? static_cast<float>(tl::widen(b[i])) : 0.f};
    };
    tl::for_each_loaded<4>(Index(tid), len, Index(kNormThreads), load_xwb, [&](Trio t, Index i) {
      float v = (t.a - mu) * r;
      if (has_w) v *= t.b;
      if (has_b) v += t.c;
      dst[i] = tl::cast<T>(v);
    });
  }
}

// dw_part / db_part: (gridDim.x, len) float scratch; block j owns row j.
template <typename T, typename Index>
__global__ void __launch_bounds__(256) layer_norm_bwd(T* __restrict__ dx, float* __restrict__ dw_part,
                                                      float* __restrict__ db_part, const T* __restrict__ dy,
                                                      const T* __restrict__ x, const float* __restrict__ mean,
                                                      const float* __restrict__ rstd, const T* __restrict__ w,
                                                      Index rows, Index len, int rms, int has_w, int want_dx,
                                                      int want_partials) {
  __shared__ float s_a[kNormThreads], s_b[kNormThreads];
  const int tid = threadIdx.x;
  float* pw = dw_part + static_cast<Index>(blockIdx.x) * len;
  float* pb = db_part + static_cast<Index>(blockIdx.x) * len;
  if (want_partials) {
    for (Index i = tid; i < len; i += kNormThreads) {
      pw[i] = 0.f;
      pb[i] = 0.f;
    }
  }
  const float inv_len = 1.f / static_cast<float>(len);
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const float mu = mean[row], r = rstd[row];
    const T* g_row = dy + row * len;
    const T* x_row = x + row * len;
    float a = 0.f, bs = 0.f;  // sum(dy * w), sum(dy * w * xhat)
    auto load_gxw = [=](Index i) {
      return Trio{static_cast<float>(tl::widen(g_row[i])), static_cast<float>(tl::widen(x_row[i])),
                  has_w ? static_cast<float>(tl::widen(w[i])) : 1.f};
    };
    tl::for_each_loaded<4>(Index(tid), len, Index(kNormThreads), load_gxw, [&](Trio t, Index i) {
      const float g = t.a;
      const float xh = (t.b - mu) * r;
      if (want_partials) {
        pw[i] += g * xh;
        pb[i] += g;
      }
      const float gw = has_w ? g * t.c : g;
      a += gw;
      bs += gw * xh;
    });
    if (want_dx) {  // uniform over the grid: every thread reaches the barriers
      s_a[tid] = a;
      s_b[tid] = bs;
      __syncthreads();
      pair_block_sum(s_a, s_b, tid);
      const float ma = rms ? 0.f : s_a[0] * inv_len, mb = s_b[0] * inv_len;
      __syncthreads();
      T* d_row = dx + row * len;
      tl::for_each_loaded<4>(Index(tid), len, Index(kNormThreads), load_gxw, [&](Trio t, Index i) {
        const float xh = (t.b - mu) * r;
        const float gw = has_w ? t.a * t.c : t.a;
        d_row[i] = tl::cast<T>(r * (gw - ma - xh * mb));
      });
    }
  }
}

// dw[i] = sum over the partial rows p = 0, 1, ... of dw_part[p, i] (same for db), in that order.
template <typename T, typename Index>
__global__ void layer_norm_bwd_reduce(T* __restrict__ dw, T* __restrict__ db, const float* __restrict__ dw_part,
                                      const float* __restrict__ db_part, Index parts, Index len, int want_w,
                                      int want_b) {
  for (Index i = tl::global_thread<Index>(); i < len; i += tl::grid_stride<Index>()) {
    float sw = 0.f, sb = 0.f;
    for (Index p = 0; p < parts; ++p) {
      sw += dw_part[p * len + i];
      sb += db_part[p * len + i];
    }
    if (want_w) dw[i] = tl::cast<T>(sw);
    if (want_b) db[i] = tl::cast<T>(sb);
  }
}
