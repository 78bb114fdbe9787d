// Tensor-core matrix multiply-accumulate for the emulation (and the ldmatrix / cp.async loads that feed
// it, below): mma.sync.aligned.m16n8k16 with float
// accumulators (kernels/tensorlab/mma.cuh calls it where the GPU runs the PTX instruction). The
// warp's 32 lanes deposit their A and B fragments at a warp barrier, as a shuffle does
// (tl_emu_warp_gather); each lane then rebuilds the 16x16 A and 16x8 B from the fragment layout
// of the PTX ISA and computes its own four accumulators. Products of 16-bit values are exact in
// float; the sum runs over k in order (the hardware's order is unspecified).
#pragma once

inline void tl_emu_mma_m16n8k16(float* d, const unsigned* a, const unsigned* b, bool bf16) {
  unsigned all_a[32][4], all_b[32][4];
  unsigned mine_b[4] = {b[0], b[1], 0u, 0u};
  const unsigned ta = tl_emu_warp_gather(a, 16, 0xffffffffu, all_a);
  const unsigned tb = tl_emu_warp_gather(mine_b, 16, 0xffffffffu, all_b);
  if (ta != 0xffffffffu || tb != 0xffffffffu) tl_emu_trap("mma.sync.aligned called by a partial warp");
  auto val = [bf16](unsigned reg, int half) {
    const unsigned short bits = (unsigned short)((reg >> (16 * half)) & 0xffffu);
    return bf16 ? tl_emu::b2f(bits) : tl_emu::h2f(bits);
  };
  const int lane = tl_emu_lane(), g = lane >> 2, c = 2 * (lane & 3);
  // A[r][k]: lane 4 (r % 8) + (k % 8) / 2, register (r >= 8) + 2 (k >= 8), half k % 2
  auto A = [&](int r, int k) { return val(all_a[4 * (r % 8) + (k % 8) / 2][(r >= 8) + 2 * (k >= 8)], k % 2); };
  // B[k][n]: lane 4 n + (k % 8) / 2, register k >= 8, half k % 2
  auto B = [&](int k, int n) { return val(all_b[4 * n + (k % 8) / 2][k >= 8], k % 2); };
  for (int e = 0; e < 4; ++e) {
    const int r = g + 8 * (e >> 1), n = c + (e & 1);
    float s = 0.0f;
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    d[e] += s;
  }
}

// ldmatrix.sync.aligned.m8n8.x{n}{.trans}.shared.b16 (kernels/tensorlab/mma.cuh): the lanes deposit
// their row addresses at a warp barrier (lane 8 i + r names row r of matrix i, which must be
// 16-byte aligned, as on the GPU); then each lane reads, from every matrix i, the two 16-bit
// values of row l / 4, columns 2 (l % 4), +1 (trans: column l / 4, rows 2 (l % 4), +1) into r[i],
// the lower column (row) in the low half.
inline void tl_emu_ldmatrix(unsigned* r, const void* row, int n, bool trans) {
  const unsigned char* all[32];
  const unsigned char* mine = static_cast<const unsigned char*>(row);
  if (tl_emu_warp_gather(&mine, sizeof(mine), 0xffffffffu, all) != 0xffffffffu)
    tl_emu_trap("ldmatrix.sync.aligned called by a partial warp");
  const int lane = tl_emu_lane();
  for (int i = 0; i < 8 * n; ++i)
    if (reinterpret_cast<unsigned long long>(all[i]) % 16 != 0) tl_emu_trap("ldmatrix: a row address is not 16-byte aligned");
  auto at = [](const unsigned char* p) {
    unsigned short v;
    memcpy(&v, p, 2);
    return (unsigned)v;
  };
  for (int i = 0; i < n; ++i) {
    const unsigned char* const* rows = all + 8 * i;
    if (trans) {
      const int r0 = 2 * (lane & 3), col = lane >> 2;
      r[i] = at(rows[r0] + 2 * col) | (at(rows[r0 + 1] + 2 * col) << 16);
    } else {
      const unsigned char* p = rows[lane >> 2] + 4 * (lane & 3);
      r[i] = at(p) | (at(p + 2) << 16);
    }
  }
}

// cp.async.cg.shared.global (kernels/tensorlab/async_copy.cuh): the copy happens at issue, so every
// later commit_group / wait_group finds it complete; src_bytes < size fills the rest with zeros.
inline void tl_emu_cp_async(void* dst, const void* src, int size, int src_bytes) {
  if (reinterpret_cast<unsigned long long>(dst) % size != 0 || (src_bytes && reinterpret_cast<unsigned long long>(src) % size != 0))
    tl_emu_trap("cp.async: an address is not aligned to the copy size");
  if (src_bytes) memcpy(dst, src, src_bytes);
  memset(static_cast<char*>(dst) + src_bytes, 0, size - src_bytes);
}
