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
                              const T* __restrict__ c, const T* __restrict__ bias, Index B, Index H, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = tl::index_div(e, H), j = e - b * H;
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
                              const T* __restrict__ bias, Index B, Index H, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = tl::index_div(e, H), j = e - b * H;
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
                             const T* __restrict__ h, const T* __restrict__ bias, Index B, Index H, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = tl::index_div(e, H), j = e - b * H;
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
                             const T* __restrict__ h, const T* __restrict__ bias, Index B, Index H, int has_bias) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = tl::index_div(e, H), j = e - b * H;
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
                             const T* __restrict__ bias, Index B, Index H, int has_bias, int relu) {
  using A = typename tl::AccOf<T>::type;
  const Index n = B * H;
  for (Index e = tl::global_thread<Index>(); e < n; e += tl::grid_stride<Index>()) {
    const Index b = tl::index_div(e, H), j = e - b * H;
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
