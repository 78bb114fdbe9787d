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

template <typename T>
__device__ __forceinline__ typename tl::AccOf<T>::type ld(const T* p, long long i) {
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

// Whole-sequence recurrences: one launch runs every time step of one layer direction. Block b owns batch
// rows b, b + gridDim.x, ...; it keeps h (and LSTM's c) in shared memory (in the accumulation type, rounded
// through T each step as the per-step cells store them) and reads W_hh (G*H, H) from global memory.
// Mode (a template parameter): 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu. gi (T, B, G*H): the input
// projections with the biases folded in (GRU: b_ih only; its b_hh comes as `bias`, b_hn inside r * (.)).
// Dynamic shared memory: (2 * H + G * H) accumulation-type elements.
//
// rnn_seq_fwd: each step, warp w computes the dot products of W_hh rows w, w + 8, ... with h (lanes over
// the row, a fixed butterfly sum), then one thread per hidden unit applies the gate math. Writes hs (T, B, H),
// cs (LSTM), and the workspace ws (T, B, 4H, accumulation type: LSTM i, f, g, o; GRU r, z, n, h W_hn + b_hn)
// that the backward reads.
// rnn_seq_bwd: the steps in reverse processing order; per step one thread per hidden unit forms the gate
// gradients (d_gi (T, B, G*H); GRU also d_gh, whose n part is dn * r) from ws, then
// dh_prev[j] = sum over k of W_hh[k, j] * d_gh[k] in k order (+ GRU's dh * z), dc_prev = dc * f.
// Ends with d_h0, d_c0. W_hh's and the biases' gradients are matmuls / sums outside.
namespace {
__device__ __forceinline__ float rnn_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double rnn_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
template <typename T, typename A>
__device__ __forceinline__ A rnn_round(A v) { return static_cast<A>(tl::widen(tl::cast<T>(v))); }
}  // namespace

template <typename T, int Mode>
__global__ void __launch_bounds__(256, 1) rnn_seq_fwd(T* __restrict__ hs, T* __restrict__ cs,
                                                   typename tl::AccOf<T>::type* __restrict__ ws,
                                                   const T* __restrict__ gi, const T* __restrict__ w,
                                                   const T* __restrict__ bias, const T* __restrict__ h0,
                                                   const T* __restrict__ c0, long long steps, long long B,
                                                   long long H, int has_bias, int reverse) {
  using A = typename tl::AccOf<T>::type;
  TL_DYNAMIC_SHARED(A, sm);
  constexpr int G = Mode == 0 ? 4 : (Mode == 1 ? 3 : 1);
  A* sh_h = sm;
  A* sh_c = sm + H;
  A* pre = sm + 2 * H;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const long long GH = G * H;
  for (long long b = blockIdx.x; b < B; b += gridDim.x) {
    for (long long j = tid; j < H; j += blockDim.x) {
      sh_h[j] = ld(h0, b * H + j);
      if (Mode == 0) sh_c[j] = ld(c0, b * H + j);
    }
    __syncthreads();
    for (long long step = 0; step < steps; ++step) {
      const long long t = reverse ? steps - 1 - step : step;
      for (long long k = warp; k < GH; k += nwarps) {
        const T* row = w + k * H;
        A acc = A(0);
        for (long long j = lane; j < H; j += 32) acc += ld(row, j) * sh_h[j];
        for (int m = 16; m > 0; m >>= 1) acc += rnn_shfl_xor(acc, m);
        if (lane == 0) pre[k] = acc;
      }
      __syncthreads();
      const long long base = t * B + b;
      const T* g = gi + base * GH;
      A* wr = ws + base * 4 * H;
      for (long long j = tid; j < H; j += blockDim.x) {
        A hnew;
        if (Mode == 0) {
          const A i = rnn_sigmoid(ld(g, j) + pre[j]);
          const A f = rnn_sigmoid(ld(g, H + j) + pre[H + j]);
          const A gg = rnn_tanh(ld(g, 2 * H + j) + pre[2 * H + j]);
          const A o = rnn_sigmoid(ld(g, 3 * H + j) + pre[3 * H + j]);
          const A c = rnn_round<T>(f * sh_c[j] + i * gg);
          hnew = o * rnn_tanh(c);
          sh_c[j] = c;
          cs[base * H + j] = tl::cast<T>(c);
          wr[j] = i;
          wr[H + j] = f;
          wr[2 * H + j] = gg;
          wr[3 * H + j] = o;
        } else if (Mode == 1) {
          A hr = pre[j], hz = pre[H + j], hn = pre[2 * H + j];
          if (has_bias) {
            hr += ld(bias, j);
            hz += ld(bias, H + j);
            hn += ld(bias, 2 * H + j);
          }
          const A r = rnn_sigmoid(ld(g, j) + hr);
          const A z = rnn_sigmoid(ld(g, H + j) + hz);
          const A n = rnn_tanh(ld(g, 2 * H + j) + r * hn);
          hnew = n + z * (sh_h[j] - n);
          wr[j] = r;
          wr[H + j] = z;
          wr[2 * H + j] = n;
          wr[3 * H + j] = hn;
        } else {
          const A v = ld(g, j) + pre[j];
          hnew = Mode == 3 ? (v < A(0) ? A(0) : v) : rnn_tanh(v);
        }
        hnew = rnn_round<T>(hnew);
        sh_h[j] = hnew;  // unit j is read by this thread only until the barrier
        hs[base * H + j] = tl::cast<T>(hnew);
      }
      __syncthreads();
    }
  }
}

template <typename T, int Mode>
__global__ void __launch_bounds__(256, 1) rnn_seq_bwd(T* __restrict__ d_gi, T* __restrict__ d_gh, T* __restrict__ d_h0,
                                                   T* __restrict__ d_c0, const T* __restrict__ grad_h,
                                                   const T* __restrict__ grad_c,
                                                   const typename tl::AccOf<T>::type* __restrict__ ws,
                                                   const T* __restrict__ hs, const T* __restrict__ cs,
                                                   const T* __restrict__ w, const T* __restrict__ h0,
                                                   const T* __restrict__ c0, long long steps, long long B,
                                                   long long H, int reverse) {
  using A = typename tl::AccOf<T>::type;
  TL_DYNAMIC_SHARED(A, sm);
  constexpr int G = Mode == 0 ? 4 : (Mode == 1 ? 3 : 1);
  A* dh = sm;
  A* dc = sm + H;
  A* dg = sm + 2 * H;
  const int tid = threadIdx.x;
  const long long GH = G * H;
  for (long long b = blockIdx.x; b < B; b += gridDim.x) {
    for (long long j = tid; j < H; j += blockDim.x) {
      dh[j] = A(0);
      dc[j] = A(0);
    }
    __syncthreads();
    for (long long step = 0; step < steps; ++step) {
      const long long t = reverse ? step : steps - 1 - step;  // the forward's order, backwards
      const long long tp = reverse ? t + 1 : t - 1;           // the step whose state this one read
      const bool first = tp < 0 || tp >= steps;
      const long long base = t * B + b;
      const A* wr = ws + base * 4 * H;
      T* dgi = d_gi + base * GH;
      for (long long j = tid; j < H; j += blockDim.x) {
        const A dht = ld(grad_h, base * H + j) + dh[j];
        A direct = A(0);
        if (Mode == 0) {
          const A i = wr[j], f = wr[H + j], gg = wr[2 * H + j], o = wr[3 * H + j];
          const A c = ld(cs, base * H + j);
          const A cp = first ? ld(c0, b * H + j) : ld(cs, (tp * B + b) * H + j);
          const A tc = rnn_tanh(c);
          const A dct = ld(grad_c, base * H + j) + dc[j] + dht * o * (A(1) - tc * tc);
          const A v0 = dct * gg * i * (A(1) - i), v1 = dct * cp * f * (A(1) - f);
          const A v2 = dct * i * (A(1) - gg * gg), v3 = dht * tc * o * (A(1) - o);
          dgi[j] = tl::cast<T>(v0);
          dgi[H + j] = tl::cast<T>(v1);
          dgi[2 * H + j] = tl::cast<T>(v2);
          dgi[3 * H + j] = tl::cast<T>(v3);
          dg[j] = rnn_round<T>(v0);
          dg[H + j] = rnn_round<T>(v1);
          dg[2 * H + j] = rnn_round<T>(v2);
          dg[3 * H + j] = rnn_round<T>(v3);
          dc[j] = dct * f;
        } else if (Mode == 1) {
          const A r = wr[j], z = wr[H + j], n = wr[2 * H + j], hn = wr[3 * H + j];
          const A hp = first ? ld(h0, b * H + j) : ld(hs, (tp * B + b) * H + j);
          const A dn = dht * (A(1) - z) * (A(1) - n * n);
          const A dr = dn * hn * r * (A(1) - r);
          const A dz = dht * (hp - n) * z * (A(1) - z);
          T* dghr = d_gh + base * GH;
          dgi[j] = tl::cast<T>(dr);
          dgi[H + j] = tl::cast<T>(dz);
          dgi[2 * H + j] = tl::cast<T>(dn);
          dghr[j] = tl::cast<T>(dr);
          dghr[H + j] = tl::cast<T>(dz);
          dghr[2 * H + j] = tl::cast<T>(dn * r);
          dg[j] = rnn_round<T>(dr);
          dg[H + j] = rnn_round<T>(dz);
          dg[2 * H + j] = rnn_round<T>(dn * r);
          direct = dht * z;
        } else {
          const A y = ld(hs, base * H + j);
          const A dp = Mode == 3 ? (y > A(0) ? dht : A(0)) : dht * (A(1) - y * y);
          dgi[j] = tl::cast<T>(dp);
          dg[j] = rnn_round<T>(dp);
        }
        dh[j] = direct;  // unit j is this thread's until the barrier
      }
      __syncthreads();
      for (long long j = tid; j < H; j += blockDim.x) {
        A acc = dh[j];
        for (long long k = 0; k < GH; ++k) acc += ld(w, k * H + j) * dg[k];
        dh[j] = acc;
      }
      __syncthreads();
    }
    for (long long j = tid; j < H; j += blockDim.x) {
      d_h0[b * H + j] = tl::cast<T>(dh[j]);
      if (Mode == 0) d_c0[b * H + j] = tl::cast<T>(dc[j]);
    }
    __syncthreads();
  }
}
