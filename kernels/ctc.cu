// CTC loss (Graves et al. 2006) in log space: the forward (alpha) and backward (beta) recursions over
// each sample's extended label sequence l' (blank, t1, blank, t2, ..., blank: L_n = 2 S_n + 1
// states), one block per batch element with the time loop inside (a barrier between steps: state s
// at step t reads states s, s - 1, s - 2 (alpha) or s, s + 1, s + 2 (beta) of step t -/+ 1, written
// by other threads of the block). The gradient with respect to the log-probabilities is the one
// ATen's ctc_loss_backward defines (the gradient through the log_softmax that produced them):
//   grad[t, n, c] = exp(lp[t, n, c]) - exp(lse_{s: l'_s = c}(alpha[t, s] + beta[t, s]) + nll[n] - lp[t, n, c])
// for t < T_n, zero past T_n. ctc_grad_fill writes the formula with no state of the class everywhere
// (and the zeros), ctc_beta runs the beta recursion and links each state to the next of its class,
// ctc_grad_labels then overwrites the entries of the classes the labels name, one thread per (sample,
// step, class) walking the class's chain of states, so the work is O(T L_n) per sample whatever the
// number of classes. A target outside [0, C) is an impossible label
// (log-probability -inf): never read out of bounds. Layouts (all contiguous): lp (T, N, C), alpha and
// beta (N, T, Lx) with Lx = 2 max(S_n) + 1, targets int64 read at target_offsets[n] + j, lengths int64.
#include "tensorlab/reduce.cuh"

namespace {
template <typename T>
__device__ __forceinline__ T neg_inf() { return tl::Bounds<T>::lowest(); }

// log(exp(a) + exp(b) + exp(c)), -inf when all three are -inf
template <typename T>
__device__ __forceinline__ T lse3(T a, T b, T c) {
  T m = a > b ? a : b;
  m = m > c ? m : c;
  if (m == neg_inf<T>()) return m;
  return m + tl::m_log(tl::m_exp(a - m) + tl::m_exp(b - m) + tl::m_exp(c - m));
}

// the class of extended state s of the sample whose targets start at tg
__device__ __forceinline__ long long ext_label(const long long* tg, long long s, long long blank) {
  return (s & 1) ? tg[s >> 1] : blank;
}

template <typename T, typename Index>
__device__ __forceinline__ T log_prob(const T* lp, Index t, Index n, Index N, Index C, long long c) {
  return (c >= 0 && c < C) ? lp[(t * N + n) * C + static_cast<Index>(c)] : neg_inf<T>();
}

// may state s skip from s - 2 (alpha; beta: s - 2 -> s read backwards)? l'_s not blank and not l'_{s-2}
__device__ __forceinline__ bool can_skip(const long long* tg, long long s, long long blank) {
  if (s < 2 || !(s & 1)) return false;
  const long long c = tg[s >> 1];
  return c != blank && c != tg[(s >> 1) - 1];
}
}  // namespace

// alpha (N, T, Lx) for t < T_n (the rest untouched) and nll[n] = -log p(l | x_n): 0 for an empty
// input with an empty target, inf for an empty input with a target.
template <typename T, typename Index>
__global__ void __launch_bounds__(256, 1) ctc_alpha(T* __restrict__ alpha, T* __restrict__ nll, const T* __restrict__ lp,
                                                 const long long* __restrict__ targets,
                                                 const long long* __restrict__ target_offsets,
                                                 const long long* __restrict__ input_lengths,
                                                 const long long* __restrict__ target_lengths, Index T_max, Index N,
                                                 Index C, Index Lx, long long blank) {
  const Index n = blockIdx.x;
  const Index Tn = static_cast<Index>(input_lengths[n]);
  const Index Ln = 2 * static_cast<Index>(target_lengths[n]) + 1;
  const long long* tg = targets + target_offsets[n];
  T* a = alpha + n * T_max * Lx;
  if (Tn > 0) {
    for (Index s = threadIdx.x; s < Lx; s += blockDim.x)
      a[s] = s < 2 && s < Ln ? log_prob(lp, Index(0), n, N, C, ext_label(tg, s, blank)) : neg_inf<T>();
  }
  for (Index t = 1; t < Tn; ++t) {
    __syncthreads();
    const T* prev = a + (t - 1) * Lx;
    T* cur = a + t * Lx;
    for (Index s = threadIdx.x; s < Lx; s += blockDim.x) {
      if (s >= Ln) {
        cur[s] = neg_inf<T>();
        continue;
      }
      const T x = prev[s], y = s > 0 ? prev[s - 1] : neg_inf<T>();
      const T z = can_skip(tg, s, blank) ? prev[s - 2] : neg_inf<T>();
      const T l = lse3(x, y, z);
      cur[s] = l == neg_inf<T>() ? l : l + log_prob(lp, t, n, N, C, ext_label(tg, s, blank));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (Tn == 0) {
      nll[n] = Ln == 1 ? T(0) : -neg_inf<T>();
    } else {
      const T* last = a + (Tn - 1) * Lx;
      nll[n] = -lse3(last[Ln - 1], Ln > 1 ? last[Ln - 2] : neg_inf<T>(), neg_inf<T>());
    }
  }
}

// grad (T, N, C) = exp(lp) - exp(-inf + nll - lp) for t < T_n (exp(lp), or NaN where nll is inf: the
// formula with no state of the class), 0 past T_n and for a sample whose nll is inf under zero_infinity
template <typename T, typename Index>
__global__ void ctc_grad_fill(T* __restrict__ grad, const T* __restrict__ lp, const T* __restrict__ nll,
                              const long long* __restrict__ input_lengths, Index N, Index C, Index total,
                              int zero_infinity) {
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index tn = tl::index_div(e, C), t = tl::index_div(tn, N), n = tn - t * N;
    const bool dead = t >= static_cast<Index>(input_lengths[n]) || (zero_infinity && nll[n] == -neg_inf<T>());
    const T l = lp[e];
    grad[e] = dead ? T(0) : tl::m_exp(l) - tl::m_exp(neg_inf<T>() + nll[n] - l);
  }
}

// beta (N, T, Lx) for t < T_n, and links (N, 2, Lx): [0] the next state of the same class (-1: none),
// [1] 1 where the state is its class's first (for ctc_grad_labels).
template <typename T, typename Index>
__global__ void __launch_bounds__(256, 1) ctc_beta(T* __restrict__ beta, int* __restrict__ links, const T* __restrict__ nll,
                                                const T* __restrict__ lp, const long long* __restrict__ targets,
                                                const long long* __restrict__ target_offsets,
                                                const long long* __restrict__ input_lengths,
                                                const long long* __restrict__ target_lengths, Index T_max, Index N,
                                                Index C, Index Lx, long long blank, int zero_infinity) {
  const Index n = blockIdx.x;
  const Index Tn = static_cast<Index>(input_lengths[n]);
  const Index Ln = 2 * static_cast<Index>(target_lengths[n]) + 1;
  const long long* tg = targets + target_offsets[n];
  if (Tn == 0 || (zero_infinity && nll[n] == -neg_inf<T>())) return;  // grad_fill wrote the zeros
  T* b = beta + n * T_max * Lx;
  int* next = links + n * 2 * Lx;
  int* first = next + Lx;
  for (Index s = threadIdx.x; s < Ln; s += blockDim.x) {
    const long long c = ext_label(tg, s, blank);
    int nx = -1;
    for (Index r = s + 1; r < Ln; ++r)
      if (ext_label(tg, r, blank) == c) {
        nx = static_cast<int>(r);
        break;
      }
    bool head = true;
    for (Index r = s - 1; r >= 0 && head; --r) head = ext_label(tg, r, blank) != c;
    next[s] = nx;
    first[s] = head;
    const Index t = Tn - 1;
    b[t * Lx + s] = s >= Ln - 2 ? log_prob(lp, t, n, N, C, c) : neg_inf<T>();
  }
  for (Index t = Tn - 2; t >= 0; --t) {
    __syncthreads();
    const T* after = b + (t + 1) * Lx;
    T* cur = b + t * Lx;
    for (Index s = threadIdx.x; s < Ln; s += blockDim.x) {
      const T x = after[s], y = s + 1 < Ln ? after[s + 1] : neg_inf<T>();
      const T z = s + 2 < Ln && can_skip(tg, s + 2, blank) ? after[s + 2] : neg_inf<T>();
      const T l = lse3(x, y, z);
      cur[s] = l == neg_inf<T>() ? l : l + log_prob(lp, t, n, N, C, ext_label(tg, s, blank));
    }
  }
}

// the label classes' entries of grad (after ctc_grad_fill and ctc_beta): one thread per (n, t, s)
// where s is its class's first state, a logsumexp over the class's chain of states
template <typename T, typename Index>
__global__ void ctc_grad_labels(T* __restrict__ grad, const T* __restrict__ alpha, const T* __restrict__ beta,
                                const int* __restrict__ links, const T* __restrict__ nll, const T* __restrict__ lp,
                                const long long* __restrict__ targets, const long long* __restrict__ target_offsets,
                                const long long* __restrict__ input_lengths,
                                const long long* __restrict__ target_lengths, Index T_max, Index N, Index C, Index Lx,
                                long long blank, int zero_infinity) {
  const Index per_sample = T_max * Lx, total = N * per_sample;
  for (Index e = tl::global_thread<Index>(); e < total; e += tl::grid_stride<Index>()) {
    const Index n = tl::index_div(e, per_sample), ts = e - n * per_sample, t = tl::index_div(ts, Lx), s = ts - t * Lx;
    const T loss = nll[n];
    if (t >= static_cast<Index>(input_lengths[n]) || s >= 2 * static_cast<Index>(target_lengths[n]) + 1 ||
        (zero_infinity && loss == -neg_inf<T>()))
      continue;
    const int* next = links + n * 2 * Lx;
    if (!next[Lx + s]) continue;
    const long long c = ext_label(targets + target_offsets[n], s, blank);
    if (c < 0 || c >= C) continue;
    const T* a = alpha + n * per_sample + t * Lx;
    const T* b = beta + n * per_sample + t * Lx;
    T m = neg_inf<T>();  // logsumexp along the class's chain of states: the max, then the sum
    for (int r = static_cast<int>(s); r >= 0; r = next[r]) {
      const T v = a[r] + b[r];
      m = v > m ? v : m;
    }
    T acc = T(0);
    if (m != neg_inf<T>())
      for (int r = static_cast<int>(s); r >= 0; r = next[r]) acc += tl::m_exp(a[r] + b[r] - m);
    const T lcab = m == neg_inf<T>() ? m : m + tl::m_log(acc);
    const Index at = (t * N + n) * C + static_cast<Index>(c);
    const T l = lp[at];
    grad[at] = tl::m_exp(l) - tl::m_exp(lcab + loss - l);
  }
}
