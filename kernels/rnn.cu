// Fused recurrent cells: the pointwise gate math of one time step of LSTM / GRU / RNN (tanh, relu), forward
// and backward, one thread per (batch row, hidden unit). The matmuls stay outside: gx = x W_ih^T (+ biases
// folded in by the caller), gh = h W_hh^T; `bias` (optional) is added to gh's gates here (GRU: b_hh, whose
// b_hn sits inside r * (h W_hn + b_hn), as torch places it). Arithmetic in float for float16/bfloat16/float32,
// double for double. Every operand is contiguous: gx / gh (B, G*H) with gates in torch's order, states (B, H).
//
// lstm_cell_fwd: out (2, B, H) = (h', c');  lstm_cell_bwd: d_gates (B, 4H) (the gradient of gx and of gh),
//   d_c (B, H), from grad (2, B, H) = (dh', dc'), recomputing the gates.
// gru_cell_fwd: out (B, H) = h';  gru_cell_bwd: d_gx, d_gh (B, 3H), d_h (B, H).
// rnn_act_cell_fwd: out (B, H) = act(gx + gh + bias);  rnn_act_cell_bwd: d_pre (B, H) from out.
#include "tensorlab/reduce.cuh"

namespace {
__device__ __forceinline__ float rnn_exp(float v) { return expf(v); }
__device__ __forceinline__ double rnn_exp(double v) { return exp(v); }
__device__ __forceinline__ float rnn_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double rnn_tanh(double v) { return tanh(v); }
template <typename A>
__device__ __forceinline__ A rnn_sigmoid(A v) { return A(1) / (A(1) + rnn_exp(-v)); }

template <typename T, typename I>
__device__ __forceinline__ typename tl::AccOf<T>::type ld(const T* p, I i) {
  return static_cast<typename tl::AccOf<T>::type>(tl::widen(p[i]));
}

// pre-activation of gate k of row b, unit j: gx + gh (+ bias)
template <typename T, typename Index>
__device__ __forceinline__ typename tl::AccOf<T>::type gate(const T* gx, const T* gh, const T* bias, Index b,
                                                            Index j, Index k, Index G, Index H, int has_bias) {
  const Index o = b * G * H + k * H + j;
  auto v = ld(gx, o) + ld(gh, o);
  if (has_bias) v += ld(bias, k * H + j);
  return v;
}
}  // namespace

template <typename T, typename Index>
__global__ void lstm_cell_fwd(T* __restrict__ out, const T* __restrict__ gx, const T* __restrict__ gh,
                              const T* __restrict__ c, const T* __restrict__ bias, Index B, tl::Divisor<Index> hd,
                              int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index H = hd.d, n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = hd.div(e), j = e - b * H;
    const A i = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(0), Index(4), H, has_bias));
    const A f = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(1), Index(4), H, has_bias));
    const A g = rnn_tanh(gate(gx, gh, bias, b, j, Index(2), Index(4), H, has_bias));
    const A o = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(3), Index(4), H, has_bias));
    const A c2 = f * ld(c, e) + i * g;
    out[e] = tl::cast<T>(o * rnn_tanh(c2));
    out[n + e] = tl::cast<T>(c2);
  }
}

template <typename T, typename Index>
__global__ void lstm_cell_bwd(T* __restrict__ d_gates, T* __restrict__ d_c, const T* __restrict__ grad,
                              const T* __restrict__ gx, const T* __restrict__ gh, const T* __restrict__ c,
                              const T* __restrict__ bias, Index B, tl::Divisor<Index> hd, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index H = hd.d, n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = hd.div(e), j = e - b * H;
    const A i = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(0), Index(4), H, has_bias));
    const A f = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(1), Index(4), H, has_bias));
    const A g = rnn_tanh(gate(gx, gh, bias, b, j, Index(2), Index(4), H, has_bias));
    const A o = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(3), Index(4), H, has_bias));
    const A cp = ld(c, e);
    const A tc = rnn_tanh(f * cp + i * g);
    const A dh = ld(grad, e);
    const A dc2 = ld(grad, n + e) + dh * o * (A(1) - tc * tc);
    T* row = d_gates + b * 4 * H;
    row[j] = tl::cast<T>(dc2 * g * i * (A(1) - i));
    row[H + j] = tl::cast<T>(dc2 * cp * f * (A(1) - f));
    row[2 * H + j] = tl::cast<T>(dc2 * i * (A(1) - g * g));
    row[3 * H + j] = tl::cast<T>(dh * tc * o * (A(1) - o));
    d_c[e] = tl::cast<T>(dc2 * f);
  }
}

template <typename T, typename Index>
__global__ void gru_cell_fwd(T* __restrict__ out, const T* __restrict__ gx, const T* __restrict__ gh,
                             const T* __restrict__ h, const T* __restrict__ bias, Index B, tl::Divisor<Index> hd,
                             int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index H = hd.d, n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = hd.div(e), j = e - b * H;
    const A r = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(0), Index(3), H, has_bias));
    const A z = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(1), Index(3), H, has_bias));
    const Index on = b * 3 * H + 2 * H + j;
    A hn = ld(gh, on);
    if (has_bias) hn += ld(bias, 2 * H + j);
    const A nn = rnn_tanh(ld(gx, on) + r * hn);
    out[e] = tl::cast<T>(nn + z * (ld(h, e) - nn));
  }
}

template <typename T, typename Index>
__global__ void gru_cell_bwd(T* __restrict__ d_gx, T* __restrict__ d_gh, T* __restrict__ d_h,
                             const T* __restrict__ grad, const T* __restrict__ gx, const T* __restrict__ gh,
                             const T* __restrict__ h, const T* __restrict__ bias, Index B, tl::Divisor<Index> hd,
                             int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index H = hd.d, n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = hd.div(e), j = e - b * H;
    const A r = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(0), Index(3), H, has_bias));
    const A z = rnn_sigmoid(gate(gx, gh, bias, b, j, Index(1), Index(3), H, has_bias));
    const Index base = b * 3 * H;
    A hn = ld(gh, base + 2 * H + j);
    if (has_bias) hn += ld(bias, 2 * H + j);
    const A nn = rnn_tanh(ld(gx, base + 2 * H + j) + r * hn);
    const A dh = ld(grad, e), hp = ld(h, e);
    const A dn = dh * (A(1) - z) * (A(1) - nn * nn);
    const A dr = dn * hn * r * (A(1) - r);
    const A dz = dh * (hp - nn) * z * (A(1) - z);
    d_gx[base + j] = tl::cast<T>(dr);
    d_gx[base + H + j] = tl::cast<T>(dz);
    d_gx[base + 2 * H + j] = tl::cast<T>(dn);
    d_gh[base + j] = tl::cast<T>(dr);
    d_gh[base + H + j] = tl::cast<T>(dz);
    d_gh[base + 2 * H + j] = tl::cast<T>(dn * r);
    d_h[e] = tl::cast<T>(dh * z);
  }
}

template <typename T, typename Index>
__global__ void rnn_act_cell_fwd(T* __restrict__ out, const T* __restrict__ gx, const T* __restrict__ gh,
                             const T* __restrict__ bias, Index B, tl::Divisor<Index> hd, int has_bias, int relu) {
  using A = typename tl::AccOf<T>::type;
  const Index H = hd.d, n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = hd.div(e), j = e - b * H;
    const A v = gate(gx, gh, bias, b, j, Index(0), Index(1), H, has_bias);
    // relu as torch's: NaN stays NaN
    out[e] = tl::cast<T>(relu ? (v < A(0) ? A(0) : v) : rnn_tanh(v));
  }
}

template <typename T, typename Index>
__global__ void rnn_act_cell_bwd(T* __restrict__ d_pre, const T* __restrict__ grad, const T* __restrict__ out,
                             Index B, Index H, int relu) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const A y = ld(out, e), g = ld(grad, e);
    d_pre[e] = tl::cast<T>(relu ? (y > A(0) ? g : A(0)) : g * (A(1) - y * y));
  }
}

// Whole-sequence recurrences, one launch per time step (the launch boundary is the step barrier: every
// block of a step needs the whole h of the step before, which other blocks wrote). Mode (a template
// parameter): 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu. gi (T, B, G*H): the input projections with the biases
// folded in (GRU: b_ih only; its b_hh comes as `bias`, b_hn inside r * (.)). The states of a step are read
// back from hs / cs (T, B, H) or h0 / c0 (tp < 0): the same values a block-resident copy rounded through T
// would hold. ws (T, B, 4H, accumulation type; LSTM i, f, g, o; GRU r, z, n, h W_hn + b_hn) is what the
// backward reads.
//
// rnn_seq_step_fwd: block (x, y) owns kSeqUnits hidden units (one per warp) for a tile of kSeqRows batch rows;
// the tile's h rows are staged in shared memory kSeqChunk columns at a time and each W_hh element a warp loads
// (its unit's G gate rows) serves all kSeqRows batch rows from registers, so W_hh is read once per batch tile
// per step, not once per batch row, and the grid is ceil(H / 8) x ceil(B / 8). Summation order of a gate
// pre-activation: lane l accumulates columns l, l + 32, l + 64, ... in order from 0, then a butterfly
// (xor 16, 8, 4, 2, 1) sums the lanes. Lane r then applies the gate math of batch row r of the tile.
// rnn_seq_step_bwd, launch s of T + 1 (steps in reverse processing order): thread (unit j, batch row b) first
// finishes the step the previous launch formed gate gradients for (tq >= 0): dh = carry (GRU's dh * z, else
// 0) + sum over k of W_hh[k, j] * dg[k] in k order, dg being the stored, T-rounded d_gi (GRU: d_gh, whose n
// part is dn * r); then forms the gate gradients of step t (t >= 0) from grad + dh, or writes d_h0 / d_c0
// (the last launch). carry (B, H, accumulation type) holds LSTM's dc * f or GRU's dh * z between launches
// (each thread reads and writes only its own element). W_hh's and the biases' gradients are matmuls outside.
namespace {
__device__ __forceinline__ float rnn_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double rnn_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
template <typename T, typename A>
__device__ __forceinline__ A rnn_round(A v) { return static_cast<A>(tl::widen(tl::cast<T>(v))); }
constexpr int kSeqRows = 8;     // batch rows per forward block tile (registers per lane: G * kSeqRows)
constexpr int kSeqUnits = 8;    // hidden units per forward block: one per warp of 256 threads
constexpr int kSeqChunk = 256;  // h columns staged in shared memory at a time
// Blocks of rnn_seq_step_fwd per SM asked of ptxas (its register cap): left to itself it capped the 16-bit LSTM
// at 48 registers and spilled on sm_80, and with no bound it spreads the RNN modes over twice the registers.
template <typename T, int Mode>
struct RnnSeqMinBlocks {
  static constexpr int value = sizeof(typename tl::AccOf<T>::type) == 8 ? 2 : (Mode >= 2 ? 8 : 4);
};
}  // namespace

template <typename T, int Mode, typename Index>
__global__ void __launch_bounds__(256, RnnSeqMinBlocks<T, Mode>::value) rnn_seq_step_fwd(T* __restrict__ hs, T* __restrict__ cs,
                                                        typename tl::AccOf<T>::type* __restrict__ ws,
                                                        const T* __restrict__ gi, const T* __restrict__ w,
                                                        const T* __restrict__ bias, const T* __restrict__ h0,
                                                        const T* __restrict__ c0, Index t, Index tp, Index B,
                                                        Index H, Index tiles, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  constexpr int G = Mode == 0 ? 4 : (Mode == 1 ? 3 : 1);
  __shared__ A sh[kSeqRows][kSeqChunk];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const Index j = Index(blockIdx.x) * kSeqUnits + warp;
  const Index GH = G * H, HH = H * H;
  const T* hp = tp < 0 ? h0 : hs + tp * B * H;
  const T* cp = tp < 0 ? c0 : cs + tp * B * H;
  for (Index tile = blockIdx.y; tile < tiles; tile += gridDim.y) {
    const Index b0 = tile * kSeqRows;
    A acc[G][kSeqRows];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int r = 0; r < kSeqRows; ++r) acc[g][r] = A(0);
    for (Index k0 = 0; k0 < H; k0 += kSeqChunk) {
      const int kc = static_cast<int>(min(Index(kSeqChunk), H - k0));
      __syncthreads();  // the previous chunk (or tile) is read
      for (int e = threadIdx.x; e < kSeqRows * kSeqChunk; e += blockDim.x) {
        const int r = e / kSeqChunk, c = e % kSeqChunk;
        if (c < kc) sh[r][c] = b0 + r < B ? ld(hp, (b0 + r) * H + k0 + c) : A(0);
      }
      __syncthreads();
      if (j < H) {  // warp-uniform
        const T* wj = w + j * H + k0;
        for (int c = lane; c < kc; c += 32) {
          A wv[G];
#pragma unroll
          for (int g = 0; g < G; ++g) wv[g] = ld(wj, g * HH + c);
#pragma unroll
          for (int r = 0; r < kSeqRows; ++r) {
            const A hv = sh[r][c];
#pragma unroll
            for (int g = 0; g < G; ++g) acc[g][r] += wv[g] * hv;
          }
        }
      }
    }
    if (j >= H) continue;  // warp-uniform; no barrier below before the next tile's first one
    A pre[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int r = 0; r < kSeqRows; ++r) {
        A v = acc[g][r];
        for (int m = 16; m > 0; m >>= 1) v += rnn_shfl_xor(v, m);
        if (r == 0 || lane == r) pre[g] = v;
      }
    }
    const Index b = b0 + lane;
    if (lane >= kSeqRows || b >= B) continue;
    const Index base = t * B + b;
    const T* g = gi + base * GH;
    A* wr = ws + base * 4 * H;
    A hnew;
    if (Mode == 0) {
      const A i = rnn_sigmoid(ld(g, j) + pre[0]);
      const A f = rnn_sigmoid(ld(g, H + j) + pre[1]);
      const A gg = rnn_tanh(ld(g, 2 * H + j) + pre[2]);
      const A o = rnn_sigmoid(ld(g, 3 * H + j) + pre[3]);
      const A c = rnn_round<T>(f * ld(cp, b * H + j) + i * gg);
      hnew = o * rnn_tanh(c);
      cs[base * H + j] = tl::cast<T>(c);
      wr[j] = i;
      wr[H + j] = f;
      wr[2 * H + j] = gg;
      wr[3 * H + j] = o;
    } else if (Mode == 1) {
      A hr = pre[0], hz = pre[1], hn = pre[2];
      if (has_bias) {
        hr += ld(bias, j);
        hz += ld(bias, H + j);
        hn += ld(bias, 2 * H + j);
      }
      const A r = rnn_sigmoid(ld(g, j) + hr);
      const A z = rnn_sigmoid(ld(g, H + j) + hz);
      const A n = rnn_tanh(ld(g, 2 * H + j) + r * hn);
      hnew = n + z * (ld(hp, b * H + j) - n);
      wr[j] = r;
      wr[H + j] = z;
      wr[2 * H + j] = n;
      wr[3 * H + j] = hn;
    } else {
      const A v = ld(g, j) + pre[0];
      hnew = Mode == 3 ? (v < A(0) ? A(0) : v) : rnn_tanh(v);
    }
    hs[base * H + j] = tl::cast<T>(hnew);
  }
}

template <typename T, int Mode, typename Index>
__global__ void __launch_bounds__(256) rnn_seq_step_bwd(T* __restrict__ d_gi, T* __restrict__ d_gh,
                                                        T* __restrict__ d_h0, T* __restrict__ d_c0,
                                                        typename tl::AccOf<T>::type* __restrict__ carry,
                                                        const T* __restrict__ grad_h, const T* __restrict__ grad_c,
                                                        const typename tl::AccOf<T>::type* __restrict__ ws,
                                                        const T* __restrict__ hs, const T* __restrict__ cs,
                                                        const T* __restrict__ w, const T* __restrict__ h0,
                                                        const T* __restrict__ c0, Index t, Index tq, Index tp,
                                                        Index B, Index H, Index tiles) {
  using A = typename tl::AccOf<T>::type;
  constexpr int G = Mode == 0 ? 4 : (Mode == 1 ? 3 : 1);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, rows = blockDim.x >> 5;
  const Index j = Index(blockIdx.x) * 32 + lane;
  const Index GH = G * H;
  if (j >= H) return;  // no barriers in this kernel
  for (Index tile = blockIdx.y; tile < tiles; tile += gridDim.y) {
    const Index b = tile * rows + warp;
    if (b >= B) return;
    const Index e = b * H + j;
    A dh = A(0), dc = A(0);
    if (tq >= 0) {
      const T* dg = (Mode == 1 ? d_gh : d_gi) + (tq * B + b) * GH;
      A acc = Mode == 1 ? carry[e] : A(0);
      for (Index k = 0; k < GH; ++k) acc += ld(w, k * H + j) * ld(dg, k);
      dh = acc;
      if (Mode == 0) dc = carry[e];
    }
    if (t < 0) {
      d_h0[e] = tl::cast<T>(dh);
      if (Mode == 0) d_c0[e] = tl::cast<T>(dc);
      continue;
    }
    const Index base = t * B + b;
    const A* wr = ws + base * 4 * H;
    T* dgi = d_gi + base * GH;
    const A dht = ld(grad_h, base * H + j) + dh;
    if (Mode == 0) {
      const A i = wr[j], f = wr[H + j], gg = wr[2 * H + j], o = wr[3 * H + j];
      const A c = ld(cs, base * H + j);
      const A cprev = tp < 0 ? ld(c0, e) : ld(cs, tp * B * H + e);
      const A tc = rnn_tanh(c);
      const A dct = ld(grad_c, base * H + j) + dc + dht * o * (A(1) - tc * tc);
      dgi[j] = tl::cast<T>(dct * gg * i * (A(1) - i));
      dgi[H + j] = tl::cast<T>(dct * cprev * f * (A(1) - f));
      dgi[2 * H + j] = tl::cast<T>(dct * i * (A(1) - gg * gg));
      dgi[3 * H + j] = tl::cast<T>(dht * tc * o * (A(1) - o));
      carry[e] = dct * f;
    } else if (Mode == 1) {
      const A r = wr[j], z = wr[H + j], n = wr[2 * H + j], hn = wr[3 * H + j];
      const A hprev = tp < 0 ? ld(h0, e) : ld(hs, tp * B * H + e);
      const A dn = dht * (A(1) - z) * (A(1) - n * n);
      const A dr = dn * hn * r * (A(1) - r);
      const A dz = dht * (hprev - n) * z * (A(1) - z);
      T* dghr = d_gh + base * GH;
      dgi[j] = tl::cast<T>(dr);
      dgi[H + j] = tl::cast<T>(dz);
      dgi[2 * H + j] = tl::cast<T>(dn);
      dghr[j] = tl::cast<T>(dr);
      dghr[H + j] = tl::cast<T>(dz);
      dghr[2 * H + j] = tl::cast<T>(dn * r);
      carry[e] = dht * z;
    } else {
      const A y = ld(hs, base * H + j);
      dgi[j] = tl::cast<T>(Mode == 3 ? (y > A(0) ? dht : A(0)) : dht * (A(1) - y * y));
    }
  }
}
