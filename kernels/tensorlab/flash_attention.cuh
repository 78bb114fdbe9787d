// FlashAttention-2-style attention on tensor cores (float16 / bfloat16 operands, float accumulators):
// the bodies of kernels/attention.cu's attention_fwd / attention_bwd_dq / attention_bwd_dkdv for the
// 16-bit dtypes, per head-dim bucket D (32, 64, 128: E and Ev padded with zeros up to D).
//
// A block is 4 warps; each warp owns 16 query rows (fwd, dq) or 16 keys (dkdv) and keeps its share of
// Q (or K and V) as mma A fragments in registers for the whole kernel. Key tiles (fwd, dq) or query
// tiles (dkdv) are staged in shared memory, rows padded by 8 elements (16 bytes) so the fragment
// loads of 8 rows hit different banks. Every product is tl::mma16816 (kernels/tensorlab/mma.cuh):
//   fwd   S = Q K^T, online softmax on S's accumulator registers (each lane holds 2 rows; the row
//         max and sum combine the 4 lanes of a quad by shuffles), O = O alpha + P V with P rounded to
//         16 bits straight from the accumulators into A fragments (c_to_a); lse = m + log(l).
//   dq    S = Q K^T and dP = dO V^T per key tile, dS = P (dP z - delta), dQ += dS K.
//   dkdv  S^T = K Q^T and dP^T = V dO^T per query tile (the transposes come from the operand order,
//         no data is transposed), dV += (P z)^T dO, dK += dS^T Q, summed over the group's query heads.
// z is the dropout factor (attention_args.cuh), regenerated from the Philox stream in every pass.
// Each gradient element is written once by one lane after a fixed-order sum: no atomics.
#pragma once
#include "tensorlab/attention_args.cuh"
#include "tensorlab/async_copy.cuh"
#include "tensorlab/mma.cuh"

namespace tl_attn {

constexpr int kFlashWarps = 4;
constexpr int kFlashThreads = 32 * kFlashWarps;
constexpr int kFlashRows = 16 * kFlashWarps;  // query rows (fwd, dq) or keys (dkdv) per block
constexpr unsigned kFull = 0xffffffffu;

template <int D>
struct FlashTile {
  static_assert(D == 32 || D == 64 || D == 128 || D == 256, "head-dim buckets are 32, 64, 128, 256");
  static constexpr int kLd = D + 8;                // shared row pitch (elements; 16-byte rows for ldmatrix)
  // 256: only the accumulators stay in registers (see the top); tiles in dynamic shared memory
  static constexpr bool kWide = D == 256;
  // keys per shared tile (fwd), two of each of K and V (double buffered): <= 37 KB below 256
  static constexpr int kBN = D <= 64 ? 64 : D == 128 ? 32 : 16;
  static constexpr int kBNdq = D <= 64 ? 64 : 16;  // keys per shared tile (dq), which holds S and dP
  static constexpr int kBQ = 16;                   // query rows per shared tile (dkdv)
  // dkdv: the block's 64 keys of K and V in shared memory (43 KB at D = 128), else in registers
  static constexpr bool kKVShared = D >= 128;
  static constexpr int kK = D / 16;                // k-steps over the head dim
  static constexpr int kN = D / 8;                 // 8-column accumulator tiles over the head dim
  // kWide: elements of T in dynamic shared memory (fwd: Q, K, V tiles; dq: Q, dO, K, V; dkdv: K, V, Q, dO)
  static constexpr int kFwdSmem = (kFlashRows + 4 * kBN) * kLd;
  static constexpr int kDqSmem = (2 * kFlashRows + 2 * kBNdq) * kLd;
  static constexpr int kDkdvSmem = (2 * kFlashRows + 2 * kBQ) * kLd;
};

// rows x D of a row-major [*, n] global matrix from row r0 into shared memory (rows at or past
// `limit` and columns past n read 0). Rows of whole 16-byte chunks (n % 8 == 0, src 16-byte aligned)
// go by cp.async, complete after the caller's tl::cp_async_commit, cp_async_wait and __syncthreads;
// other shapes by 16-bit loads and stores (complete at the barrier).
template <typename T, int D>
__device__ __forceinline__ void stage(T* dst, const T* src, long long r0, long long limit, int rows, int n) {
  constexpr int kLd = FlashTile<D>::kLd;
  if (n % 8 == 0 && (reinterpret_cast<unsigned long long>(src) & 15) == 0) {
    constexpr int kChunks = D / 8;
    for (int idx = threadIdx.x; idx < rows * kChunks; idx += kFlashThreads) {
      const int r = idx / kChunks, c = 8 * (idx % kChunks);
      const bool in = r0 + r < limit && c < n;
      tl::cp_async16(dst + r * kLd + c, in ? src + (r0 + r) * n + c : src, in ? 16 : 0);
    }
    return;
  }
  const T zero = tl::cast<T>(0.0f);
  for (int idx = threadIdx.x; idx < rows * D; idx += kFlashThreads) {
    const int r = idx / D, c = idx % D;
    dst[r * kLd + c] = (r0 + r < limit && c < n) ? src[(r0 + r) * n + c] : zero;
  }
}

// Every copy this thread staged is in shared memory (the barrier that follows shows them to the block).
__device__ __forceinline__ void staged() {
  tl::cp_async_commit();
  tl::cp_async_wait<0>();
}

// The A fragment of rows r0..r0+15, columns k0..k0+15 of a row-major [rows, cols] global matrix
// (0 outside it).
template <typename T>
__device__ __forceinline__ tl::FragA a_global(const T* src, long long rows, int cols, long long r0, int k0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const T zero = tl::cast<T>(0.0f);
  const long long ra = r0 + g, rb = ra + 8;
  const int ka = k0 + c, kb = ka + 8;
  auto at = [&](long long r, int col) { return r < rows && col < cols ? src[r * cols + col] : zero; };
  return tl::FragA{{tl::pack2(at(ra, ka), at(ra, ka + 1)), tl::pack2(at(rb, ka), at(rb, ka + 1)),
                    tl::pack2(at(ra, kb), at(ra, kb + 1)), tl::pack2(at(rb, kb), at(rb, kb + 1))}};
}

__device__ __forceinline__ float quad_max(float v) {
  v = amax(v, __shfl_xor_sync(kFull, v, 1));
  return amax(v, __shfl_xor_sync(kFull, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(kFull, v, 1);
  return v + __shfl_xor_sync(kFull, v, 2);
}

template <int N>
__device__ __forceinline__ void zero(tl::FragC (&f)[N]) {
#pragma unroll
  for (int n = 0; n < N; ++n) f[n] = tl::FragC{{0.0f, 0.0f, 0.0f, 0.0f}};
}

// grid (BH, ceil(L / 64))
template <typename T, int D>
__device__ __forceinline__ void flash_fwd(T* __restrict__ out, float* __restrict__ lse, const T* __restrict__ q,
                                          const T* __restrict__ k, const T* __restrict__ v,
                                          const bool* __restrict__ bmask, const T* __restrict__ fmask, long long L,
                                          long long S, int E, int Ev, int group, int Hq, float scale, MaskArgs mk,
                                          const tl::StridedLayout<long long>& ml, const DropArgs& dr) {
  using Tile = FlashTile<D>;
  constexpr int kLd = Tile::kLd, kBN = Tile::kBN, kNS = kBN / 8;
  T *sq = nullptr, *sk, *sv;
  if constexpr (Tile::kWide) {
    TL_DYNAMIC_SHARED(T, dyn);  // Tile::kFwdSmem elements
    sq = dyn;
    sk = sq + kFlashRows * kLd;
    sv = sk + 2 * kBN * kLd;
  } else {
    __shared__ __align__(16) T ssk[2 * kBN * kLd];
    __shared__ __align__(16) T ssv[2 * kBN * kLd];
    sk = ssk;
    sv = ssv;
  }
  const float kNegInf = neg_inf<float>();
  const long long bh = blockIdx.x, blk0 = static_cast<long long>(blockIdx.y) * kFlashRows;
  const long long kvh = (bh / Hq) * (Hq / group) + (bh % Hq) / group;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
  const long long i0 = blk0 + 16 * warp;
  const long long rows[2] = {i0 + g, i0 + g + 8};
  const long long mb = mk.mode ? mask_base(bh, ml) : 0;
  const T* kb = k + kvh * S * E;
  const T* vb = v + kvh * S * Ev;
  tl::FragA qf[Tile::kWide ? 1 : Tile::kK];
  if constexpr (Tile::kWide) {
    stage<T, D>(sq, q + bh * L * E, blk0, L, kFlashRows, E);  // read after the loop's first barrier
  } else {
#pragma unroll
    for (int ks = 0; ks < Tile::kK; ++ks) qf[ks] = a_global(q + bh * L * E, L, E, i0, 16 * ks);
  }
  tl::FragC o[Tile::kN];
  zero(o);
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  const long long s_end = mk.causal ? (blk0 + kFlashRows < S ? blk0 + kFlashRows : S) : S;
  // K and V tiles double buffered: tile j0 + kBN is copied (cp.async) while tile j0 is multiplied
  if (s_end > 0) {
    stage<T, D>(sk, kb, 0, S, kBN, E);
    stage<T, D>(sv, vb, 0, S, kBN, Ev);
  }
  int buf = 0;
#pragma unroll 1
  for (long long j0 = 0; j0 < s_end; j0 += kBN, buf ^= 1) {
    staged();
    __syncthreads();  // tile j0 is in shared memory; every reader of the other buffer is done
    if (j0 + kBN < s_end) {
      stage<T, D>(sk + (buf ^ 1) * kBN * kLd, kb, j0 + kBN, S, kBN, E);
      stage<T, D>(sv + (buf ^ 1) * kBN * kLd, vb, j0 + kBN, S, kBN, Ev);
    }
    const T* tk = sk + buf * kBN * kLd;
    const T* tv = sv + buf * kBN * kLd;
    tl::FragC s[kNS];
    zero(s);
#pragma unroll
    for (int ks = 0; ks < Tile::kK; ++ks) {
      const tl::FragA qa = Tile::kWide ? tl::a_rows(sq, kLd, 16 * warp, 16 * ks) : qf[Tile::kWide ? 0 : ks];
#pragma unroll
      for (int nt = 0; nt < kNS; nt += 2) {
        tl::FragB fb[2];
        tl::b_cols2(fb, tk, kLd, 8 * nt, 16 * ks);
        tl::mma16816<T>(s[nt], qa, fb[0]);
        tl::mma16816<T>(s[nt + 1], qa, fb[1]);
      }
    }
    float tmax[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < kNS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long i = rows[e >> 1], j = j0 + 8 * nt + c + (e & 1);
        const float x = (i < L && j < S) ? masked(s[nt].x[e], scale, i, j, mk, bmask, fmask, mb) : kNegInf;
        s[nt].x[e] = x;
        tmax[e >> 1] = amax(tmax[e >> 1], x);
      }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = amax(m[r], quad_max(tmax[r]));
      alpha[r] = m_new == kNegInf ? 1.0f : (m[r] == kNegInf ? 0.0f : tl::m_exp(m[r] - m_new));
      m[r] = m_new;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int dt = 0; dt < Tile::kN; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt].x[e] *= alpha[e >> 1];
#pragma unroll
    for (int nt = 0; nt < kNS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const float x = s[nt].x[e];
        float p = x == kNegInf ? 0.0f : tl::m_exp(x - m[r]);
        l[r] += p;
        if (dr.on && p != 0.0f) p *= drop_factor<float>(dr, (bh * L + rows[r]) * S + j0 + 8 * nt + c + (e & 1));
        s[nt].x[e] = p;
      }
#pragma unroll
    for (int kt = 0; kt < kBN / 16; ++kt) {
      const tl::FragA pa = tl::c_to_a<T>(s[2 * kt], s[2 * kt + 1]);
#pragma unroll
      for (int dt = 0; dt < Tile::kN; dt += 2) {
        tl::FragB fb[2];
        tl::b_rows2(fb, tv, kLd, 16 * kt, 8 * dt);
        tl::mma16816<T>(o[dt], pa, fb[0]);
        tl::mma16816<T>(o[dt + 1], pa, fb[1]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float lr = quad_sum(l[r]);
    const long long i = rows[r];
    if (i >= L) continue;
    const float inv = lr > 0.0f ? 1.0f / lr : 0.0f;
    T* ob = out + (bh * L + i) * Ev;
#pragma unroll
    for (int dt = 0; dt < Tile::kN; ++dt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int d = 8 * dt + c + h;
        if (d < Ev) ob[d] = tl::cast<T>(o[dt].x[2 * r + h] * inv);
      }
    if ((lane & 3) == 0) lse[bh * L + i] = lr > 0.0f ? m[r] + tl::m_log(lr) : kNegInf;
  }
}

// grid (BH, ceil(L / 64)): dQ of 64 query rows, summed over the key tiles in order.
template <typename T, int D>
__device__ __forceinline__ void flash_bwd_dq(T* __restrict__ dq, const T* __restrict__ q, const T* __restrict__ k,
                                             const T* __restrict__ v, const T* __restrict__ dout,
                                             const float* __restrict__ lse, const float* __restrict__ delta,
                                             const bool* __restrict__ bmask, const T* __restrict__ fmask,
                                             long long L, long long S, int E, int Ev, int group, int Hq, float scale,
                                             MaskArgs mk, const tl::StridedLayout<long long>& ml,
                                             const DropArgs& dr) {
  using Tile = FlashTile<D>;
  constexpr int kLd = Tile::kLd, kBN = Tile::kBNdq, kNS = kBN / 8;
  T *sq = nullptr, *sdo = nullptr, *sk, *sv;
  if constexpr (Tile::kWide) {
    TL_DYNAMIC_SHARED(T, dyn);  // Tile::kDqSmem elements
    sq = dyn;
    sdo = sq + kFlashRows * kLd;
    sk = sdo + kFlashRows * kLd;
    sv = sk + kBN * kLd;
  } else {
    __shared__ __align__(16) T ssk[kBN * kLd];
    __shared__ __align__(16) T ssv[kBN * kLd];
    sk = ssk;
    sv = ssv;
  }
  const float kNegInf = neg_inf<float>();
  const long long bh = blockIdx.x, blk0 = static_cast<long long>(blockIdx.y) * kFlashRows;
  const long long kvh = (bh / Hq) * (Hq / group) + (bh % Hq) / group;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, c = 2 * (lane & 3);
  const long long i0 = blk0 + 16 * warp;
  const long long rows[2] = {i0 + (lane >> 2), i0 + (lane >> 2) + 8};
  const long long mb = mk.mode ? mask_base(bh, ml) : 0;
  constexpr int kQf = Tile::kWide ? 1 : Tile::kK;
  tl::FragA qf[kQf], of[kQf];
  if constexpr (Tile::kWide) {  // read after the loop's first barrier
    stage<T, D>(sq, q + bh * L * E, blk0, L, kFlashRows, E);
    stage<T, D>(sdo, dout + bh * L * Ev, blk0, L, kFlashRows, Ev);
  } else {
#pragma unroll
    for (int ks = 0; ks < Tile::kK; ++ks) {
      qf[ks] = a_global(q + bh * L * E, L, E, i0, 16 * ks);
      of[ks] = a_global(dout + bh * L * Ev, L, Ev, i0, 16 * ks);
    }
  }
  float ls[2], dl[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    ls[r] = rows[r] < L ? lse[bh * L + rows[r]] : kNegInf;
    dl[r] = rows[r] < L ? delta[bh * L + rows[r]] : 0.0f;
  }
  tl::FragC acc[Tile::kN];
  zero(acc);
  const long long s_end = mk.causal ? (blk0 + kFlashRows < S ? blk0 + kFlashRows : S) : S;
#pragma unroll 1
  for (long long j0 = 0; j0 < s_end; j0 += kBN) {
    __syncthreads();
    stage<T, D>(sk, k + kvh * S * E, j0, S, kBN, E);
    stage<T, D>(sv, v + kvh * S * Ev, j0, S, kBN, Ev);
    staged();
    __syncthreads();
    tl::FragC s[kNS], dp[kNS];
    zero(s);
    zero(dp);
#pragma unroll
    for (int ks = 0; ks < Tile::kK; ++ks) {
      const int kq = Tile::kWide ? 0 : ks;
      const tl::FragA qa = Tile::kWide ? tl::a_rows(sq, kLd, 16 * warp, 16 * ks) : qf[kq];
      const tl::FragA oa = Tile::kWide ? tl::a_rows(sdo, kLd, 16 * warp, 16 * ks) : of[kq];
#pragma unroll
      for (int nt = 0; nt < kNS; nt += 2) {
        tl::FragB fk[2], fv[2];
        tl::b_cols2(fk, sk, kLd, 8 * nt, 16 * ks);
        tl::b_cols2(fv, sv, kLd, 8 * nt, 16 * ks);
        tl::mma16816<T>(s[nt], qa, fk[0]);
        tl::mma16816<T>(s[nt + 1], qa, fk[1]);
        tl::mma16816<T>(dp[nt], oa, fv[0]);
        tl::mma16816<T>(dp[nt + 1], oa, fv[1]);
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const long long i = rows[r], j = j0 + 8 * nt + c + (e & 1);
        float ds = 0.0f;
        if (i < L && j < S && ls[r] != kNegInf) {
          const float x = masked(s[nt].x[e], scale, i, j, mk, bmask, fmask, mb);
          if (x != kNegInf) {
            const float p = tl::m_exp(x - ls[r]);
            ds = p * (dp[nt].x[e] * drop_factor<float>(dr, (bh * L + i) * S + j) - dl[r]);
          }
        }
        s[nt].x[e] = ds;
      }
#pragma unroll
    for (int kt = 0; kt < kBN / 16; ++kt) {
      const tl::FragA da = tl::c_to_a<T>(s[2 * kt], s[2 * kt + 1]);
#pragma unroll
      for (int dt = 0; dt < Tile::kN; dt += 2) {
        tl::FragB fb[2];
        tl::b_rows2(fb, sk, kLd, 16 * kt, 8 * dt);
        tl::mma16816<T>(acc[dt], da, fb[0]);
        tl::mma16816<T>(acc[dt + 1], da, fb[1]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= L) continue;
    T* qb = dq + (bh * L + rows[r]) * E;
#pragma unroll
    for (int dt = 0; dt < Tile::kN; ++dt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int d = 8 * dt + c + h;
        if (d < E) qb[d] = tl::cast<T>(acc[dt].x[2 * r + h] * scale);
      }
  }
}

// dK and dV (kPart 0), dV only (1) or dK and the mask's gradient only (2) of the block's 64 keys.
template <typename T, int D, int kPart>
__device__ __forceinline__ void flash_dkdv_pass(T* __restrict__ dk, T* __restrict__ dv, T* __restrict__ dmask,
                                                const T* __restrict__ q, const T* __restrict__ k,
                                                const T* __restrict__ v, const T* __restrict__ dout,
                                                const float* __restrict__ lse, const float* __restrict__ delta,
                                                const bool* __restrict__ bmask, const T* __restrict__ fmask,
                                                long long L, long long S, int E, int Ev, int group, int Hq,
                                                float scale, MaskArgs mk, const tl::StridedLayout<long long>& ml,
                                                const DropArgs& dr, int want_dmask, T* skv, T* sq, T* sdo,
                                                float* slse, float* sdelta) {
  using Tile = FlashTile<D>;
  constexpr int kLd = Tile::kLd, kBQ = Tile::kBQ, kNQ = kBQ / 8;
  constexpr bool kDV = kPart != 2, kDK = kPart != 1;
  constexpr int kKV = kFlashRows * kLd;  // skv: K, then V (kKVShared)
  const float kNegInf = neg_inf<float>();
  const long long kvh = blockIdx.x, blk0 = static_cast<long long>(blockIdx.y) * kFlashRows;
  const int Hk = Hq / group;
  const long long b = kvh / Hk, hk = kvh % Hk;
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31, c = 2 * (lane & 3);
  const long long j0 = blk0 + 16 * warp;
  const long long keys[2] = {j0 + (lane >> 2), j0 + (lane >> 2) + 8};
  constexpr int kKf = Tile::kKVShared ? 1 : Tile::kK;
  tl::FragA kf[kKf], vf[kKf];
  if constexpr (Tile::kKVShared) {
    stage<T, D>(skv, k + kvh * S * E, blk0, S, kFlashRows, E);
    if constexpr (kDK) stage<T, D>(skv + kKV, v + kvh * S * Ev, blk0, S, kFlashRows, Ev);
  } else {
#pragma unroll
    for (int ks = 0; ks < Tile::kK; ++ks) {
      kf[ks] = a_global(k + kvh * S * E, S, E, j0, 16 * ks);
      vf[ks] = a_global(v + kvh * S * Ev, S, Ev, j0, 16 * ks);
    }
  }
  tl::FragC adk[kDK ? Tile::kN : 1], adv[kDV ? Tile::kN : 1];
  zero(adk);
  zero(adv);
  const long long i_start = mk.causal ? (blk0 / kBQ) * kBQ : 0;
#pragma unroll 1  // the tile loops stay loops: their bodies are long (unrolled copies cost code, not time)
  for (int gi = 0; gi < group; ++gi) {
    const long long bh = b * Hq + hk * group + gi;
    const long long mb = mk.mode ? mask_base(bh, ml) : 0;
#pragma unroll 1
    for (long long i0 = i_start; i0 < L; i0 += kBQ) {
      __syncthreads();
      stage<T, D>(sq, q + bh * L * E, i0, L, kBQ, E);
      stage<T, D>(sdo, dout + bh * L * Ev, i0, L, kBQ, Ev);
      if (t < kBQ) {
        slse[t] = i0 + t < L ? lse[bh * L + i0 + t] : kNegInf;
        sdelta[t] = i0 + t < L ? delta[bh * L + i0 + t] : 0.0f;
      }
      staged();  // also the block's K and V (kKVShared), staged before the loop
      __syncthreads();
      tl::FragC st[kNQ], dpt[kNQ];
      zero(st);
      zero(dpt);
#pragma unroll
      for (int ks = 0; ks < Tile::kK; ++ks) {
        tl::FragA ka, va;
        if constexpr (Tile::kKVShared) {
          ka = tl::a_rows(skv, kLd, 16 * warp, 16 * ks);
          if constexpr (kDK) va = tl::a_rows(skv + kKV, kLd, 16 * warp, 16 * ks);
        } else {
          ka = kf[ks];
          va = vf[ks];
        }
        static_assert(kNQ == 2, "one query tile is two 8-column accumulator tiles");
        tl::FragB fq[2];
        tl::b_cols2(fq, sq, kLd, 0, 16 * ks);
        tl::mma16816<T>(st[0], ka, fq[0]);
        tl::mma16816<T>(st[1], ka, fq[1]);
        if constexpr (kDK) {
          tl::FragB fo[2];
          tl::b_cols2(fo, sdo, kLd, 0, 16 * ks);
          tl::mma16816<T>(dpt[0], va, fo[0]);
          tl::mma16816<T>(dpt[1], va, fo[1]);
        }
      }
#pragma unroll
      for (int nq = 0; nq < kNQ; ++nq)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ii = 8 * nq + c + (e & 1);
          const long long i = i0 + ii, j = keys[e >> 1];
          float p = 0.0f, ds = 0.0f;
          if (i < L && j < S && slse[ii] != kNegInf) {
            const float x = masked(st[nq].x[e], scale, i, j, mk, bmask, fmask, mb);
            if (x != kNegInf) {
              p = tl::m_exp(x - slse[ii]);
              const float z = drop_factor<float>(dr, (bh * L + i) * S + j);
              if constexpr (kDK) ds = p * (dpt[nq].x[e] * z - sdelta[ii]);
              p *= z;
            }
          }
          if constexpr (kDK) {
            if (want_dmask && i < L && j < S) dmask[(bh * L + i) * S + j] = tl::cast<T>(ds);
          }
          st[nq].x[e] = p;
          dpt[nq].x[e] = ds;
        }
      const tl::FragA pa = tl::c_to_a<T>(st[0], st[1]);
      const tl::FragA da = tl::c_to_a<T>(dpt[0], dpt[1]);
#pragma unroll
      for (int dt = 0; dt < Tile::kN; dt += 2) {
        tl::FragB fb[2];
        if constexpr (kDV) {
          tl::b_rows2(fb, sdo, kLd, 0, 8 * dt);
          tl::mma16816<T>(adv[dt], pa, fb[0]);
          tl::mma16816<T>(adv[dt + 1], pa, fb[1]);
        }
        if constexpr (kDK) {
          tl::b_rows2(fb, sq, kLd, 0, 8 * dt);
          tl::mma16816<T>(adk[dt], da, fb[0]);
          tl::mma16816<T>(adk[dt + 1], da, fb[1]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long j = keys[r];
    if (j >= S) continue;
    T* kb = dk + (kvh * S + j) * E;
    T* vb = dv + (kvh * S + j) * Ev;
#pragma unroll
    for (int dt = 0; dt < Tile::kN; ++dt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int d = 8 * dt + c + h;
        if constexpr (kDK) {
          if (d < E) kb[d] = tl::cast<T>(adk[dt].x[2 * r + h] * scale);
        }
        if constexpr (kDV) {
          if (d < Ev) vb[d] = tl::cast<T>(adv[dt].x[2 * r + h]);
        }
      }
  }
}

// grid (BHk, ceil(S / 64), 1; 2 for the 256 bucket: blockIdx.z 0 dV, 1 dK): dK and dV of 64 keys of
// one key/value head, summed over the group's query heads and the query tiles in order; dmask
// (want_dmask): contiguous [BH, L, S].
template <typename T, int D>
__device__ __forceinline__ void flash_bwd_dkdv(T* __restrict__ dk, T* __restrict__ dv, T* __restrict__ dmask,
                                               const T* __restrict__ q, const T* __restrict__ k,
                                               const T* __restrict__ v, const T* __restrict__ dout,
                                               const float* __restrict__ lse, const float* __restrict__ delta,
                                               const bool* __restrict__ bmask, const T* __restrict__ fmask,
                                               long long L, long long S, int E, int Ev, int group, int Hq,
                                               float scale, MaskArgs mk, const tl::StridedLayout<long long>& ml,
                                               const DropArgs& dr, int want_dmask) {
  using Tile = FlashTile<D>;
  constexpr int kLd = Tile::kLd, kBQ = Tile::kBQ;
  __shared__ float slse[kBQ], sdelta[kBQ];
  if constexpr (Tile::kWide) {
    TL_DYNAMIC_SHARED(T, dyn);  // Tile::kDkdvSmem elements: K, V, then the Q and dO tiles
    T* sq = dyn + 2 * kFlashRows * kLd;
    T* sdo = sq + kBQ * kLd;
    if (blockIdx.z == 0)
      flash_dkdv_pass<T, D, 1>(dk, dv, dmask, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale,
                               mk, ml, dr, want_dmask, dyn, sq, sdo, slse, sdelta);
    else
      flash_dkdv_pass<T, D, 2>(dk, dv, dmask, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale,
                               mk, ml, dr, want_dmask, dyn, sq, sdo, slse, sdelta);
  } else {
    __shared__ __align__(16) T sq[kBQ * kLd];
    __shared__ __align__(16) T sdo[kBQ * kLd];
    constexpr int kKV = Tile::kKVShared ? kFlashRows * kLd : 1;
    __shared__ __align__(16) T skv[2 * kKV];
    flash_dkdv_pass<T, D, 0>(dk, dv, dmask, q, k, v, dout, lse, delta, bmask, fmask, L, S, E, Ev, group, Hq, scale,
                             mk, ml, dr, want_dmask, skv, sq, sdo, slse, sdelta);
  }
}

}  // namespace tl_attn
