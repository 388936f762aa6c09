// rnn.cu — one time step of a kf.rnn (an LSTM or GRU layer): the unit is
// one launch of this kernel per step (agent/builtin_rnn.c), the kernel
// boundary being the barrier between steps; each launch reads the previous
// step's h (h0 at the first) and writes this step's h into hseq.
//
// Prelude: KF_MODE 0 lstm (G = 4 gates i f g o), 1 gru (G = 3, r z n);
// KF_G, KF_B batch rows, KF_H hidden size, KF_U hidden units per block
// (block x owns units [x U, x U + U) and all G of their gate rows), KF_BC
// batch rows per pass (staged in shared memory), KF_BLOCK threads; KF_S the
// storage type, KF_ACC the accumulate type; the pointers KF_XG (this time
// index's [B, G*H] input gates), KF_HP ([B, H] previous h), KF_CP ([B, H]
// previous c, lstm), KF_W ([G*H, H] W_hh), KF_BIAS ([G*H] b_hh), KF_HO
// ([B, H] this step's h), KF_CO ([B, H] the state: c for lstm, h for gru).
// All dense row-major. KF_CP and KF_CO may be the same buffer: each thread
// reads its own element of it before writing it, and no other.
#include "kf_common.cuh"
#include "kf_ops.cuh"

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_ACC A;
  constexpr int G = KF_G, U = KF_U, BC = KF_BC, NW = KF_BLOCK / 32;
  constexpr long long B = KF_B, H = KF_H;
  // W elements per lane; with one gate row per warp and few enough of them
  // the row is loaded into registers first, its latency overlapping the
  // staging of h (a step's latency is what bounds a recurrence)
  constexpr int KW = (int)((H + 31) / 32);
  constexpr bool WREG = G * U <= NW && KW <= 32;
  // one cell per thread (the host keeps U * BC <= KF_BLOCK): its inputs
  // are loaded before the products too
  static_assert(U * BC <= KF_BLOCK, "one cell per thread");
  __shared__ A hs[BC][H];
  __shared__ A gh[G * U][BC];
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const long long j0 = (long long)blockIdx.x * U;
  A wreg[WREG ? KW : 1];
  if (WREG && warp < G * U && j0 + warp % U < H) {
    const KF_S *wr = KF_W + ((long long)(warp / U) * H + j0 + warp % U) * H;
#pragma unroll
    for (int i = 0; i < (WREG ? KW : 1); i++) {
      const long long k = lane + 32LL * i;
      wreg[i] = k < H ? kf::ld<A>(wr + k) : A(0);
    }
  }
  for (long long b0 = 0; b0 < B; b0 += BC) {
    const int nb = (int)(B - b0 < BC ? B - b0 : BC);
    // this thread's cell: unit cu, batch row b0 + cb
    const int cu = (int)threadIdx.x / BC, cb = (int)threadIdx.x % BC;
    const long long cj = j0 + cu, o = (b0 + cb) * H + cj;
    const bool mine = (int)threadIdx.x < U * BC && cj < H && cb < nb;
    A x[G], st = A(0);
    if (mine) {
      const KF_S *xp = KF_XG + (b0 + cb) * (G * H) + cj;
#pragma unroll
      for (int q = 0; q < G; q++) x[q] = kf::ld<A>(xp + q * H);
#if KF_MODE == 0
      st = kf::ld<A>(KF_CP + o);
#else
      st = kf::ld<A>(KF_HP + o);
#endif
    }
    // the previous h of these batch rows, staged once for all gate rows
    for (long long e = threadIdx.x; e < (long long)nb * H; e += KF_BLOCK)
      hs[e / H][e % H] = kf::ld<A>(KF_HP + (b0 + e / H) * H + e % H);
    __syncthreads();
    // gh[r][b] = W_hh[row] . h[b] + b_hh[row], row = g H + j: one warp a row
    for (int r = warp; r < G * U; r += NW) {
      const long long j = j0 + r % U;
      if (j >= H) continue;  // warp-uniform
      const long long row = (long long)(r / U) * H + j;
      A acc[BC];
#pragma unroll
      for (int bi = 0; bi < BC; bi++) acc[bi] = A(0);
      if (WREG) {
#pragma unroll
        for (int i = 0; i < (WREG ? KW : 1); i++) {
          const long long k = lane + 32LL * i;
          if (k < H) {
#pragma unroll
            for (int bi = 0; bi < BC; bi++) acc[bi] += wreg[i] * hs[bi][k];
          }
        }
      } else {
        const KF_S *wr = KF_W + row * H;
#pragma unroll 4
        for (long long k = lane; k < H; k += 32) {
          const A w = kf::ld<A>(wr + k);
#pragma unroll
          for (int bi = 0; bi < BC; bi++) acc[bi] += w * hs[bi][k];
        }
      }
      const A bias = kf::ld<A>(KF_BIAS + row);
#pragma unroll
      for (int bi = 0; bi < BC; bi++) {
        A v = acc[bi];
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) v += kf::shfl_xor(v, m);
        if (lane == 0) gh[r][bi] = v + bias;
      }
    }
    __syncthreads();
    // the cell
    if (mine) {
#if KF_MODE == 0
      const A ig = kf::sigmoid(x[0] + gh[0 * U + cu][cb]);
      const A fg = kf::sigmoid(x[1] + gh[1 * U + cu][cb]);
      const A gg = kf::tanh(x[2] + gh[2 * U + cu][cb]);
      const A og = kf::sigmoid(x[3] + gh[3 * U + cu][cb]);
      const A c = fg * st + ig * gg;
      KF_CO[o] = kf::cvt<KF_S>(c);
      KF_HO[o] = kf::cvt<KF_S>(og * kf::tanh(c));
#else
      const A rg = kf::sigmoid(x[0] + gh[0 * U + cu][cb]);
      const A zg = kf::sigmoid(x[1] + gh[1 * U + cu][cb]);
      const A ng = kf::tanh(x[2] + rg * gh[2 * U + cu][cb]);
      const A h = (A(1) - zg) * ng + zg * st;
      KF_HO[o] = kf::cvt<KF_S>(h);
      KF_CO[o] = kf::cvt<KF_S>(h);
#endif
    }
    __syncthreads();
  }
}
