// Fused batch norm: per-channel statistics over every dim but 1, float accumulation for float16/bfloat16/
// float32 inputs. The input is dense in one of two orders (the front end makes it so):
//   rows (cols = 0): (N, C, S) contiguous, a channel's elements are N runs of S;
//   cols (cols = 1): channels innermost (channels_last, or S == 1), element (m, c) at m * C + c, m = n*S + s.
// A block has 256 threads: in rows mode all 256 lanes work on one channel, in cols mode 32 channels x 8
// lanes (a warp reads 32 neighbouring channels of one row: coalesced). A channel's M = N*S elements are
// split into `parts` fixed chunks (a function of the shape only); each (channel, chunk) is one work item.
//
// Forward (training): batch_norm_stats writes each work item's Welford state (n, mean, m2), merged over
// the lanes in a fixed tree order; batch_norm_finalize merges a channel's chunks in chunk order (one
// thread per channel) into save_mean / save_invstd and the unbiased variance; batch_norm_apply writes y
// and, in the same launch, the running statistics (so a failed launch before it leaves them unchanged).
// Evaluation: batch_norm_finalize reads the running statistics instead.
// Backward: batch_norm_bwd_reduce writes each work item's (sum dy, sum dy * (x - mean)); batch_norm_bwd_finalize
// sums the chunks in order into dweight / dbias and the two per-channel sums; batch_norm_bwd_dx writes dx.
// Every sum has a fixed order: results are bit-identical from run to run, no atomics.
#include "tensorlab/reduce.cuh"

namespace {
constexpr int kBnThreads = 256;

struct BnGeom {
  int lanes, width, lane, chan;  // lanes per channel, channels per block, this thread's lane and channel slot
};

__device__ __forceinline__ BnGeom bn_geom(int cols) {
  BnGeom g;
  g.width = cols ? 32 : 1;
  g.lanes = kBnThreads / g.width;
  g.lane = threadIdx.x / g.width;
  g.chan = threadIdx.x - g.lane * g.width;
  return g;
}

// Walks the elements m = start, start + step, ... of channel c: one division per walk, none per element
// (rows mode keeps (n, s) and carries s into n).
template <typename Index>
struct BnWalk {
  Index n, s, dn, ds, C, S, c;
  int cols;
  // step = dn * S + ds (rows mode; cols mode: dn = step, ds = 0), computed once per kernel
  __device__ __forceinline__ BnWalk(Index start, Index dn_, Index ds_, Index c_, Index C_, Index S_, int cols_)
      : dn(dn_), ds(ds_), C(C_), S(S_), c(c_), cols(cols_) {
    if (cols) {
      n = start, s = 0;
    } else {
      n = tl::index_div(start, S), s = start - n * S;
    }
  }
  __device__ __forceinline__ Index offset() const { return cols ? n * C + c : (n * C + c) * S + s; }
  __device__ __forceinline__ void next() {
    n += dn;
    s += ds;
    if (s >= S) {
      s -= S;
      ++n;
    }
  }
};

// Visits the walk's elements m = start, start + step, ... < hi in order, U loads (load(offset))
// issued before any is used (independent loads in flight per thread): group(v) gets each full group
// of U values, one(v) each value of the tail.
template <int U, typename Index, typename Load, typename Group, typename One>
__device__ __forceinline__ void bn_walk_loaded(BnWalk<Index> w, Index m, Index hi, Index step, Load load, Group group,
                                               One one) {
  using V = decltype(load(Index(0)));
  for (; m < hi - (U - 1) * step; m += U * step) {
    Index o[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      o[k] = w.offset();
      w.next();
    }
    V v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load(o[k]);
    group(v);
  }
  for (; m < hi; m += step, w.next()) one(load(w.offset()));
}

// Folds values into a Welford state (n, mean, m2): one value (Welford's update), or a group of
// four (its own mean and squared deviations merged with Chan's formula: one division per group,
// where four updates would call the IEEE division subroutine four times and make ptxas spill).
struct BnWelford {
  float n = 0.f, mean = 0.f, m2 = 0.f;
  __device__ __forceinline__ void one(float v) {
    n += 1.f;
    const float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
  }
  __device__ __forceinline__ void four(const float* v) {
    const float gm = ((v[0] + v[1]) + (v[2] + v[3])) * 0.25f;
    const float e0 = v[0] - gm, e1 = v[1] - gm, e2 = v[2] - gm, e3 = v[3] - gm;
    const float gm2 = (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3);
    const float nt = n + 4.f, f = 4.f / nt, d = gm - mean;
    mean += d * f;
    m2 += gm2 + d * d * n * f;
    n = nt;
  }
};

struct BnPair {
  float a, b;
};

// The element range of chunk p (chunks of `chunk` elements) of M elements.
template <typename Index>
__device__ __forceinline__ void bn_chunk(Index M, Index chunk, int p, Index* lo, Index* hi) {
  *lo = p * chunk < M ? p * chunk : M;
  *hi = *lo + chunk < M ? *lo + chunk : M;
}
}  // namespace

// part: (C, parts, 3) floats (n, mean, m2) per work item.
template <typename T, typename Index>
__global__ void __launch_bounds__(256) batch_norm_stats(float* __restrict__ part, const T* __restrict__ x, Index N,
                                                        Index C, Index S, Index parts, int cols) {
  __shared__ float s_n[kBnThreads], s_mean[kBnThreads], s_m2[kBnThreads];
  const BnGeom g = bn_geom(cols);
  // work items, tiles and chunks are few (int); element offsets use Index
  const Index M = N * S, chunk = (M + parts - 1) / parts;
  const int np = static_cast<int>(parts), items = static_cast<int>((C + g.width - 1) / g.width) * np;
  const Index dn = cols ? Index(g.lanes) : tl::index_div(Index(g.lanes), S);
  const Index ds = cols ? Index(0) : Index(g.lanes) - dn * S;
  const int tid = threadIdx.x;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int tile = item / np, p = item - tile * np;
    const Index c = Index(tile) * g.width + g.chan;
    Index lo, hi;
    bn_chunk(M, chunk, p, &lo, &hi);
    BnWelford acc;
    if (c < C) {
      BnWalk<Index> w(lo + g.lane, dn, ds, c, C, S, cols);
      auto load = [=](Index o) { return static_cast<float>(tl::widen(x[o])); };
      bn_walk_loaded<4>(w, lo + g.lane, hi, Index(g.lanes), load, [&](const float* v) { acc.four(v); },
                        [&](float v) { acc.one(v); });
    }
    s_n[tid] = acc.n;
    s_mean[tid] = acc.mean;
    s_m2[tid] = acc.m2;
    __syncthreads();
    for (int st = g.lanes / 2; st > 0; st >>= 1) {  // fixed tree order over the lanes of each channel
      if (g.lane < st) {
        const int o = tid + st * g.width;
        const float na = s_n[tid], nb = s_n[o], nt = na + nb;
        if (nb > 0.f) {
          const float d = s_mean[o] - s_mean[tid], f = nb / nt;
          s_mean[tid] += d * f;
          s_m2[tid] += s_m2[o] + d * d * na * f;
          s_n[tid] = nt;
        }
      }
      __syncthreads();
    }
    if (g.lane == 0 && c < C) {
      float* dst = part + (c * parts + p) * 3;
      dst[0] = s_n[tid];
      dst[1] = s_mean[tid];
      dst[2] = s_m2[tid];
    }
    __syncthreads();  // slot 0 is read before the next item overwrites it
  }
}

// One thread per channel. Training: merge the chunks of `part` in order; eval: the running statistics.
// var_unbiased: (C,) floats for batch_norm_apply's running-variance update.
template <typename P, typename Index>
__global__ void batch_norm_finalize(float* __restrict__ save_mean, float* __restrict__ save_invstd,
                                    float* __restrict__ var_unbiased, const float* __restrict__ part,
                                    const P* __restrict__ running_mean, const P* __restrict__ running_var, Index C,
                                    Index parts, float eps, int training) {
  for (Index c = tl::global_thread<Index>(); c < C; c += tl::grid_stride<Index>()) {
    if (!training) {
      save_mean[c] = static_cast<float>(tl::widen(running_mean[c]));
      save_invstd[c] = 1.f / sqrtf(static_cast<float>(tl::widen(running_var[c])) + eps);
      continue;
    }
    float n = 0.f, mean = 0.f, m2 = 0.f;
    for (Index p = 0; p < parts; ++p) {
      const float* s = part + (c * parts + p) * 3;
      const float nb = s[0];
      if (nb > 0.f) {
        const float nt = n + nb, d = s[1] - mean, f = nb / nt;
        mean += d * f;
        m2 += s[2] + d * d * n * f;
        n = nt;
      }
    }
    const float var = n > 0.f ? m2 / n : 0.f;
    save_mean[c] = mean;
    save_invstd[c] = 1.f / sqrtf(var + eps);
    var_unbiased[c] = n > 1.f ? m2 / (n - 1.f) : __int_as_float(0x7fc00000);
  }
}

// y = (x - mean) * invstd * w + b over every element; threads 0..C-1 also update the running statistics
// (bit 0 of update: running_mean, bit 1: running_var): running = (1 - momentum) * running + momentum * batch
// (the unbiased variance).
template <typename T, typename P, typename Index>
__global__ void batch_norm_apply(T* __restrict__ y, P* __restrict__ running_mean, P* __restrict__ running_var,
                                 const T* __restrict__ x, const float* __restrict__ mean,
                                 const float* __restrict__ invstd, const float* __restrict__ var_unbiased,
                                 const P* __restrict__ w, const P* __restrict__ b, Index N, tl::Divisor<Index> cd,
                                 tl::Divisor<Index> sd, float momentum, int cols, int has_w, int has_b, int update) {
  const Index C = cd.d, S = sd.d, total = N * C * S;
  const Index first = tl::global_thread<Index>();
  if (update) {
    for (Index c = first; c < C; c += tl::grid_stride<Index>()) {
      if (update & 1) {
        const float r = static_cast<float>(tl::widen(running_mean[c]));
        running_mean[c] = tl::cast<P>(r * (1.f - momentum) + mean[c] * momentum);
      }
      if (update & 2) {
        const float r = static_cast<float>(tl::widen(running_var[c]));
        running_var[c] = tl::cast<P>(r * (1.f - momentum) + var_unbiased[c] * momentum);
      }
    }
  }
  for (Index i = first; i < total; i += tl::grid_stride<Index>()) {
    // i runs over memory order; its channel follows from the layout
    Index q = cols ? i : sd.div(i);
    const Index c = cd.pop(q);
    float v = (static_cast<float>(tl::widen(x[i])) - mean[c]) * invstd[c];
    if (has_w) v *= static_cast<float>(tl::widen(w[c]));
    if (has_b) v += static_cast<float>(tl::widen(b[c]));
    y[i] = tl::cast<T>(v);
  }
}

// part: (C, parts, 2) floats (sum dy, sum dy * (x - mean)) per work item.
template <typename T, typename Index>
__global__ void __launch_bounds__(256) batch_norm_bwd_reduce(float* __restrict__ part, const T* __restrict__ dy,
                                                             const T* __restrict__ x, const float* __restrict__ mean,
                                                             Index N, Index C, Index S, Index parts, int cols) {
  __shared__ float s_a[kBnThreads], s_b[kBnThreads];
  const BnGeom g = bn_geom(cols);
  // work items, tiles and chunks are few (int); element offsets use Index
  const Index M = N * S, chunk = (M + parts - 1) / parts;
  const int np = static_cast<int>(parts), items = static_cast<int>((C + g.width - 1) / g.width) * np;
  const Index dn = cols ? Index(g.lanes) : tl::index_div(Index(g.lanes), S);
  const Index ds = cols ? Index(0) : Index(g.lanes) - dn * S;
  const int tid = threadIdx.x;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int tile = item / np, p = item - tile * np;
    const Index c = Index(tile) * g.width + g.chan;
    Index lo, hi;
    bn_chunk(M, chunk, p, &lo, &hi);
    float a = 0.f, bsum = 0.f;
    if (c < C) {
      const float mu = mean[c];
      BnWalk<Index> w(lo + g.lane, dn, ds, c, C, S, cols);
      auto load = [=](Index o) {
        return BnPair{static_cast<float>(tl::widen(dy[o])), static_cast<float>(tl::widen(x[o]))};
      };
      auto add = [&](BnPair v) {
        a += v.a;
        bsum += v.a * (v.b - mu);
      };
      // four pairs in flight with 32-bit offsets; two with 64-bit ones (four made ptxas spill on sm_90)
      constexpr int U = sizeof(Index) == 8 ? 2 : 4;
      bn_walk_loaded<U>(w, lo + g.lane, hi, Index(g.lanes), load, [&](const BnPair* v) {
        for (int k = 0; k < U; ++k) add(v[k]);
      }, add);
    }
    s_a[tid] = a;
    s_b[tid] = bsum;
    __syncthreads();
    for (int st = g.lanes / 2; st > 0; st >>= 1) {
      if (g.lane < st) {
        s_a[tid] += s_a[tid + st * g.width];
        s_b[tid] += s_b[tid + st * g.width];
      }
      __syncthreads();
    }
    if (g.lane == 0 && c < C) {
      float* dst = part + (c * parts + p) * 2;
      dst[0] = s_a[tid];
      dst[1] = s_b[tid];
    }
    __syncthreads();
  }
}

// One thread per channel: sums (C, 2) = (sum dy, sum dy * xhat) in chunk order; dweight / dbias from them.
template <typename P, typename Index>
__global__ void batch_norm_bwd_finalize(P* __restrict__ dw, P* __restrict__ db, float* __restrict__ sums,
                                        const float* __restrict__ part, const float* __restrict__ invstd, Index C,
                                        Index parts, int want_w, int want_b) {
  for (Index c = tl::global_thread<Index>(); c < C; c += tl::grid_stride<Index>()) {
    float a = 0.f, bsum = 0.f;
    for (Index p = 0; p < parts; ++p) {
      a += part[(c * parts + p) * 2];
      bsum += part[(c * parts + p) * 2 + 1];
    }
    bsum *= invstd[c];
    sums[c * 2] = a;
    sums[c * 2 + 1] = bsum;
    if (want_w) dw[c] = tl::cast<P>(bsum);
    if (want_b) db[c] = tl::cast<P>(a);
  }
}

// dx over every element. Training: w * invstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M);
// evaluation (the statistics are constants): dy * w * invstd.
template <typename T, typename P, typename Index>
__global__ void batch_norm_bwd_dx(T* __restrict__ dx, const T* __restrict__ dy, const T* __restrict__ x,
                                  const float* __restrict__ mean, const float* __restrict__ invstd,
                                  const float* __restrict__ sums, const P* __restrict__ w, Index N,
                                  tl::Divisor<Index> cd, tl::Divisor<Index> sd,
                                  int cols, int has_w, int training) {
  const Index C = cd.d, S = sd.d, total = N * C * S;
  const float inv_m = 1.f / static_cast<float>(N * S);
  for (Index i = tl::global_thread<Index>(); i < total; i += tl::grid_stride<Index>()) {
    Index q = cols ? i : sd.div(i);
    const Index c = cd.pop(q);
    const float r = invstd[c];
    const float scale = has_w ? r * static_cast<float>(tl::widen(w[c])) : r;
    float g = static_cast<float>(tl::widen(dy[i]));
    if (training) {
      const float xh = (static_cast<float>(tl::widen(x[i])) - mean[c]) * r;
      g = g - sums[c * 2] * inv_m - xh * sums[c * 2 + 1] * inv_m;
    }
    dx[i] = tl::cast<T>(g * scale);
  }
}
