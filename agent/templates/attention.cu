// attention.cu — scaled dot-product attention, softmax(q k^T * scale +
// mask) v, with an online softmax over blocks of keys (running maximum and
// sum per query row, the output rescaled as the maximum grows). Boolean
// masks (true = keep), additive masks, causal masking (key <= query, top-
// left aligned as PyTorch's tril), a scale, broadcast batch dims and
// grouped-query attention (key head = query head / ratio). A row whose keys
// are all masked gives zeros, as ATen's safe softmax does.
//
// Two kernels, chosen by agent/builtin_attention.c:
//
// KF_TILED 1 (fp32 accumulation, head sizes up to 128): flash-attention
//   style. A block of 256 threads owns KF_BM = 64 query rows of one batch
//   entry and walks the keys in tiles of KF_BN = 64 (causal: only the tiles
//   at or left of the diagonal). q, the key tile and the value tile are
//   staged in shared memory (16-byte loads where the feature stride is 1,
//   KF_QVEC / KF_KVEC / KF_VVEC; otherwise element loads, walking rows
//   first when KF_*RF says the row stride is the small one). Threads form a
//   16 x 16 grid (ty, tx): each computes scores for rows ty + 16i and keys
//   tx + 16j (i, j < 4) as a register micro-tile, the 16 threads of a row
//   (half a warp) agree on the row maximum by shuffles, and the
//   probabilities go through shared memory to O += P V, where the thread
//   owns rows ty + 16i and features 64t + 4tx .. +3 (t < KF_EVT). The
//   row pitches are padded by 4 floats so that the 16-byte shared loads do
//   not conflict. Shared memory (KF_SMEM bytes, dynamic) holds q (KF_BM x
//   E), p (KF_BM x KF_BN) and KF_STAGES buffers of k (KF_BN x E) and v
//   (KF_BN x 64 KF_EVT). With two stages the next key tile is staged while
//   this one is computed: by cp.async where the k and v loads are 16-byte
//   fp32 (KF_ASYNC), else by ordinary loads issued before the computation.
//
// KF_TILED 0 (the fp64 reference, large head sizes): one warp per query
//   row over blocks of 32 keys: each lane scores one key (q staged in
//   shared memory), the warp rescales its running maximum and sum, then
//   every lane accumulates its share of the output features.
//
// Prelude (agent/builtin_attention.c): KF_NB batch dims KF_BSHAPE with the
// batch strides of q, k, v, mask (KF_QBS, KF_KBS, KF_VBS, KF_MBS; 0 where
// broadcast) and KF_GQA_DIM / KF_GQA_RATIO; sizes KF_L, KF_S, KF_E, KF_EV;
// row/feature strides KF_QSL, KF_QSE, KF_KSS, KF_KSE, KF_VSS, KF_VSE, mask
// KF_MSL, KF_MSS; KF_MASK 0 none, 1 bool, 2 additive; KF_CAUSAL; KF_SCALE;
// KF_QS storage type; KF_Q, KF_K, KF_V, KF_M, KF_O pointers; KF_ACC;
// KF_ROWS = batch x KF_L; KF_EPL = ceil(KF_EV / 32) (simple kernel). The
// output is contiguous.
#include "kf_common.cuh"
#include "kf_ops.cuh"
#include "kf_reduce.cuh"

#if KF_TILED

#ifndef KF_ATTENTION_TILED_HELPERS
#define KF_ATTENTION_TILED_HELPERS
namespace kf {

// Four floats of shared memory at once (the tiles' pitches keep them
// 16-byte aligned).
struct __align__(16) attn_f4 { float x, y, z, w; };

__device__ __forceinline__ attn_f4 attn_ld4(const float *p) {
  return *reinterpret_cast<const attn_f4 *>(p);
}

// Stages R rows x CP columns of a strided matrix (src at row 0, row stride
// rs, column stride cs) into shared memory with row pitch P: zeros past
// nrows rows or ncols columns, so padded keys and features add nothing.
// VEC: four columns per access (column stride 1, rows and base 16-byte
// aligned, ncols a multiple of 4); else one element per access, walking
// columns first or, with ROWFAST, rows first (whichever stride is small).
template <int R, int CP, int P, int NT, bool VEC, bool ROWFAST, class S, class I>
__device__ __forceinline__ void attn_stage(float *dst, const S *src, I rs, I cs, I nrows, int ncols,
                                           int tid) {
  if constexpr (VEC) {
    constexpr int C4 = CP / 4;
    for (int x = tid; x < R * C4; x += NT) {
      const int r = x / C4, c = x % C4 * 4;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if ((I)r < nrows && c < ncols) vld<S, 4>(v, src + (I)r * rs + (I)c);
      attn_f4 w = {v[0], v[1], v[2], v[3]};
      *reinterpret_cast<attn_f4 *>(dst + r * P + c) = w;
    }
  } else {
    for (int x = tid; x < R * CP; x += NT) {
      const int r = ROWFAST ? x % R : x / CP, c = ROWFAST ? x / R : x % CP;
      dst[r * P + c] = (I)r < nrows && c < ncols ? ld<float>(src + (I)r * rs + (I)c * cs) : 0.0f;
    }
  }
}

// The async variant of the VEC path for fp32 sources: cp.async copies of
// 16 bytes straight into shared memory (zero-filled past the valid rows),
// so the next tile streams in while this one is computed. The caller
// commits the group and waits for it (attn_wait) before a __syncthreads.
template <int R, int CP, int P, int NT, class I>
__device__ __forceinline__ void attn_stage_async(float *dst, const float *src, I rs, I nrows, int ncols,
                                                 int tid) {
  constexpr int C4 = CP / 4;
  for (int x = tid; x < R * C4; x += NT) {
    const int r = x / C4, c = x % C4 * 4;
    const bool ok = (I)r < nrows && c < ncols;
    const float *g = ok ? src + (I)r * rs + (I)c : src;
#ifdef KF_EMU
    for (int j = 0; j < 4; j++) dst[r * P + c + j] = ok ? g[j] : 0.0f;
#else
    unsigned sa;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(sa) : "l"(dst + r * P + c));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(g), "r"(ok ? 16 : 0)
                 : "memory");
#endif
  }
}

__device__ __forceinline__ void attn_commit() {
#ifndef KF_EMU
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most N committed groups of this thread are in flight.
template <int N> __device__ __forceinline__ void attn_wait() {
#ifndef KF_EMU
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

}  // namespace kf
#endif

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  static_assert(sizeof(A) == 4, "the tiled attention kernel accumulates in fp32");
  constexpr int BM = KF_BM, BN = KF_BN, NT = KF_BLOCK;
  static_assert(BM == 64 && BN == 64 && NT == 256, "the thread grid is 16 x 16 over 64 x 64 tiles");
  constexpr int EP = (KF_E + 3) / 4 * 4;   // features, padded with zeros
  constexpr int QP = EP + 4;               // row pitch of the q and k tiles
  constexpr int EVT = KF_EVT, VP = 64 * EVT; // output features: EVT groups of 64
  constexpr int PP = BN + 4;               // row pitch of the p tile
  constexpr int NS = KF_STAGES;            // buffers of the k and v tiles: 2 = double-buffered
  constexpr int KVF = BN * QP + BN * VP;    // floats of one k and v stage
  constexpr int SMEM = (BM * QP + NS * KVF + BM * PP) * 4;
  static_assert(SMEM == KF_SMEM, "shared memory size disagrees with the generator");
  static_assert(EVT * 64 >= KF_EV, "KF_EVT too small");
  static_assert(NS == 1 || NS == 2, "one or two stages");
#ifdef KF_EMU
  __shared__ kf::attn_f4 kf_attn_smem[SMEM / 16];
#else
  extern __shared__ kf::attn_f4 kf_attn_smem[];
#endif
  float *qs = reinterpret_cast<float *>(kf_attn_smem);
  float *ps = qs + BM * QP, *kv0 = ps + BM * PP; // stage t: ks = kv0 + t * KVF, vs = ks + BN * QP

  constexpr long long bshape[KF_NB] = {KF_BSHAPE};
  constexpr long long qbs[KF_NB] = {KF_QBS}, kbs[KF_NB] = {KF_KBS}, vbs[KF_NB] = {KF_VBS};
  constexpr long long mbs[KF_NB] = {KF_MBS};
  (void)mbs;
  const int tid = (int)threadIdx.x, lane = tid % 32;
  const int tx = lane % 16, ty = tid / 32 * 2 + lane / 16;
  // blocks of one batch entry, the query tiles with the most (causal) keys first
  constexpr I QT = (I)((KF_L + BM - 1) / BM);
  const I b = (I)blockIdx.x / QT, l0 = (QT - 1 - (I)blockIdx.x % QT) * (I)BM;
  I bc[KF_NB];
  kf::unravel(b, bshape, bc);
  I qo = 0, ko = 0, vo = 0, mo = 0;
#pragma unroll
  for (int d = 0; d < KF_NB; d++) {
    const I kc = d == KF_GQA_DIM ? bc[d] / (I)KF_GQA_RATIO : bc[d];
    qo += bc[d] * (I)qbs[d];
    ko += kc * (I)kbs[d];
    vo += kc * (I)vbs[d];
    mo += bc[d] * (I)mbs[d];
  }
  (void)mo;
  const bool qvec = KF_QVEC && kf::vec_aligned<KF_QS, 4>(KF_Q);
  const bool kvec = KF_KVEC && kf::vec_aligned<KF_QS, 4>(KF_K);
  const bool vvec = KF_VVEC && kf::vec_aligned<KF_QS, 4>(KF_V);
  const I nq = (I)KF_L - l0 < (I)BM ? (I)KF_L - l0 : (I)BM;
  if (qvec)
    kf::attn_stage<BM, EP, QP, NT, KF_QVEC, false>(qs, KF_Q + qo + l0 * (I)KF_QSL, (I)KF_QSL,
                                                    (I)KF_QSE, nq, KF_E, tid);
  else
    kf::attn_stage<BM, EP, QP, NT, false, KF_QRF>(qs, KF_Q + qo + l0 * (I)KF_QSL, (I)KF_QSL,
                                                   (I)KF_QSE, nq, KF_E, tid);

  A m[4], lsum[4], o[4][4 * EVT];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    m[i] = kf::lowest_<A>();
    lsum[i] = A(0);
#pragma unroll
    for (int c = 0; c < 4 * EVT; c++) o[i][c] = A(0);
  }
  // causal: keys past the tile's last row are masked for all its rows
  const I send = KF_CAUSAL && l0 + (I)BM < (I)KF_S ? l0 + (I)BM : (I)KF_S;
  // k and v tile s0 into stage buffer kb (async where the loads allow)
  const bool async = KF_ASYNC && kvec && vvec;
  auto stage = [&](float *kb, I s0) {
    float *vb = kb + BN * QP;
    const I nk = (I)KF_S - s0 < (I)BN ? (I)KF_S - s0 : (I)BN;
#if KF_ASYNC
    if (async) {
      kf::attn_stage_async<BN, EP, QP, NT>(kb, KF_K + ko + s0 * (I)KF_KSS, (I)KF_KSS, nk, KF_E, tid);
      kf::attn_stage_async<BN, VP, VP, NT>(vb, KF_V + vo + s0 * (I)KF_VSS, (I)KF_VSS, nk, KF_EV, tid);
      kf::attn_commit();
      return;
    }
#endif
    if (kvec)
      kf::attn_stage<BN, EP, QP, NT, KF_KVEC, false>(kb, KF_K + ko + s0 * (I)KF_KSS, (I)KF_KSS,
                                                      (I)KF_KSE, nk, KF_E, tid);
    else
      kf::attn_stage<BN, EP, QP, NT, false, KF_KRF>(kb, KF_K + ko + s0 * (I)KF_KSS, (I)KF_KSS,
                                                     (I)KF_KSE, nk, KF_E, tid);
    if (vvec)
      kf::attn_stage<BN, VP, VP, NT, KF_VVEC, false>(vb, KF_V + vo + s0 * (I)KF_VSS, (I)KF_VSS,
                                                      (I)KF_VSE, nk, KF_EV, tid);
    else
      kf::attn_stage<BN, VP, VP, NT, false, KF_VRF>(vb, KF_V + vo + s0 * (I)KF_VSS, (I)KF_VSS,
                                                     (I)KF_VSE, nk, KF_EV, tid);
  };
  (void)async;
  if (NS == 2 && send > 0) stage(kv0, 0);
  int cur = 0;
  for (I s0 = 0; s0 < send; s0 += (I)BN, cur ^= NS - 1) {
    float *ks = kv0 + cur * KVF, *vs = ks + BN * QP;
    if (NS == 1) {
      __syncthreads(); // the previous tile's readers are done
      stage(ks, s0);
      if (async) kf::attn_wait<0>();
    } else if (s0 + (I)BN < send) {
      stage(kv0 + (cur ^ 1) * KVF, s0 + (I)BN); // read last in the previous tile, past its final barrier
      if (async) kf::attn_wait<1>();
    } else if (async) {
      kf::attn_wait<0>();
    }
    __syncthreads(); // tile s0 (and q) staged by all threads

    // scores of rows ty + 16i, keys tx + 16j
    A sc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) sc[i][j] = A(0);
#pragma unroll 4
    for (int e = 0; e < EP; e += 4) {
      kf::attn_f4 qv[4], kv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) qv[i] = kf::attn_ld4(qs + (ty + 16 * i) * QP + e);
#pragma unroll
      for (int j = 0; j < 4; j++) kv[j] = kf::attn_ld4(ks + (tx + 16 * j) * QP + e);
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
          sc[i][j] += qv[i].x * kv[j].x;
          sc[i][j] += qv[i].y * kv[j].y;
          sc[i][j] += qv[i].z * kv[j].z;
          sc[i][j] += qv[i].w * kv[j].w;
        }
    }

    // online softmax: masked scores are lowest (-inf) and weigh nothing
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const I l = l0 + (I)(ty + 16 * i);
      A mx = kf::lowest_<A>();
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const I s = s0 + (I)(tx + 16 * j);
        A x = kf::lowest_<A>();
        if (s < (I)KF_S && l < (I)KF_L && (!KF_CAUSAL || s <= l)) {
          x = sc[i][j] * (A)KF_SCALE;
#if KF_MASK == 1
          if (!kf::ld<bool>(KF_M + mo + l * (I)KF_MSL + s * (I)KF_MSS)) x = kf::lowest_<A>();
#elif KF_MASK == 2
          x += kf::ld<A>(KF_M + mo + l * (I)KF_MSL + s * (I)KF_MSS);
#endif
        }
        sc[i][j] = x;
        mx = kf::maximum(mx, x);
      }
#pragma unroll
      for (int sh = 8; sh >= 1; sh /= 2) mx = kf::maximum(mx, kf::shfl_xor(mx, sh)); // the row's 16 lanes
      const A mnew = kf::maximum(m[i], mx);
      const A corr = m[i] == kf::lowest_<A>() ? A(0) : kf::exp_(m[i] - mnew);
      A rsum = A(0);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const A p = sc[i][j] == kf::lowest_<A>() ? A(0) : kf::exp_(sc[i][j] - mnew);
        rsum += p;
        ps[(ty + 16 * i) * PP + tx + 16 * j] = p;
      }
      lsum[i] = lsum[i] * corr + rsum; // this thread's keys; summed over the row at the end
      m[i] = mnew;
#pragma unroll
      for (int c = 0; c < 4 * EVT; c++) o[i][c] *= corr;
    }
    __syncthreads();

    // O += P V over the tile's keys (padded keys have p = 0 and v = 0)
#pragma unroll 2
    for (int k = 0; k < BN; k += 4) {
      A pv[4][4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const kf::attn_f4 t = kf::attn_ld4(ps + (ty + 16 * i) * PP + k);
        pv[i][0] = t.x;
        pv[i][1] = t.y;
        pv[i][2] = t.z;
        pv[i][3] = t.w;
      }
#pragma unroll
      for (int u = 0; u < 4; u++)
#pragma unroll
        for (int t = 0; t < EVT; t++) {
          const kf::attn_f4 w = kf::attn_ld4(vs + (k + u) * VP + 64 * t + 4 * tx);
#pragma unroll
          for (int i = 0; i < 4; i++) {
            o[i][4 * t + 0] += pv[i][u] * w.x;
            o[i][4 * t + 1] += pv[i][u] * w.y;
            o[i][4 * t + 2] += pv[i][u] * w.z;
            o[i][4 * t + 3] += pv[i][u] * w.w;
          }
        }
    }
    if (NS == 2) __syncthreads(); // p and this stage are free for the next tile
  }

#pragma unroll
  for (int i = 0; i < 4; i++) {
    A sum = lsum[i];
#pragma unroll
    for (int sh = 8; sh >= 1; sh /= 2) sum += kf::shfl_xor(sum, sh);
    const I l = l0 + (I)(ty + 16 * i);
    if (l >= (I)KF_L) continue;
    const I row = b * (I)KF_L + l;
#pragma unroll
    for (int t = 0; t < EVT; t++)
#pragma unroll
      for (int w = 0; w < 4; w++) {
        const int e = 64 * t + 4 * tx + w;
        if (e < KF_EV) kf::st(KF_O + row * (I)KF_EV + (I)e, sum > A(0) ? o[i][4 * t + w] / sum : A(0));
      }
  }
}

#else // the simple kernel

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr int WARPS = KF_BLOCK / 32;
  constexpr long long bshape[KF_NB] = {KF_BSHAPE};
  constexpr long long qbs[KF_NB] = {KF_QBS}, kbs[KF_NB] = {KF_KBS}, vbs[KF_NB] = {KF_VBS};
  constexpr long long mbs[KF_NB] = {KF_MBS};
  (void)mbs;
  __shared__ A qsm[WARPS][KF_E];
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  constexpr I BATCH = (I)(KF_ROWS / KF_L);
  (void)BATCH;
  for (I row = (I)blockIdx.x * WARPS + warp; row < (I)KF_ROWS; row += (I)gridDim.x * WARPS) {
    const I b = row / (I)KF_L, l = row % (I)KF_L;
    I bc[KF_NB];
    kf::unravel(b, bshape, bc);
    I qo = l * (I)KF_QSL, ko = 0, vo = 0, mo = l * (I)KF_MSL;
#pragma unroll
    for (int d = 0; d < KF_NB; d++) {
      const I kc = d == KF_GQA_DIM ? bc[d] / (I)KF_GQA_RATIO : bc[d];
      qo += bc[d] * (I)qbs[d];
      ko += kc * (I)kbs[d];
      vo += kc * (I)vbs[d];
      mo += bc[d] * (I)mbs[d];
    }
    (void)mo;
    __syncwarp();
    for (int e = lane; e < KF_E; e += 32) qsm[warp][e] = kf::ld<A>(KF_Q + qo + (I)e * (I)KF_QSE);
    __syncwarp();
    A m = kf::lowest_<A>(), ssum = A(0);
    A acc[KF_EPL];
#pragma unroll
    for (int j = 0; j < KF_EPL; j++) acc[j] = A(0);
    for (I s0 = 0; s0 < (I)KF_S; s0 += 32) {
      const I s = s0 + lane;
      A score = kf::lowest_<A>();
      if (s < (I)KF_S && (!KF_CAUSAL || s <= l)) {
        const KF_QS *kr = KF_K + ko + s * (I)KF_KSS;
        A dot = A(0);
#pragma unroll 8
        for (int e = 0; e < KF_E; e++) dot += qsm[warp][e] * kf::ld<A>(kr + (I)e * (I)KF_KSE);
        score = dot * (A)KF_SCALE;
#if KF_MASK == 1
        if (!kf::ld<bool>(KF_M + mo + s * (I)KF_MSS)) score = kf::lowest_<A>();
#elif KF_MASK == 2
        score += kf::ld<A>(KF_M + mo + s * (I)KF_MSS);
#endif
      }
      A cm = score;
#pragma unroll
      for (int x = 16; x >= 1; x /= 2) cm = kf::maximum(cm, kf::shfl_xor(cm, x));
      const A mnew = kf::maximum(m, cm);
      if (mnew == kf::lowest_<A>()) continue; // every key so far masked
      const A p = score == kf::lowest_<A>() ? A(0) : kf::exp_(score - mnew);
      const A corr = m == kf::lowest_<A>() ? A(0) : kf::exp_(m - mnew);
      A cs = p;
#pragma unroll
      for (int x = 16; x >= 1; x /= 2) cs += kf::shfl_xor(cs, x);
      ssum = ssum * corr + cs;
#pragma unroll
      for (int j = 0; j < KF_EPL; j++) acc[j] *= corr;
      for (int jj = 0; jj < 32; jj++) {
        const A pj = kf::shfl_idx(p, jj);
        const I sj = s0 + jj;
        if (sj >= (I)KF_S || pj == A(0)) continue;
        const KF_QS *vr = KF_V + vo + sj * (I)KF_VSS;
#pragma unroll
        for (int j = 0; j < KF_EPL; j++) {
          const int e = lane + 32 * j;
          if (e < KF_EV) acc[j] += pj * kf::ld<A>(vr + (I)e * (I)KF_VSE);
        }
      }
      m = mnew;
    }
#pragma unroll
    for (int j = 0; j < KF_EPL; j++) {
      const int e = lane + 32 * j;
      if (e < KF_EV) kf::st(KF_O + row * (I)KF_EV + (I)e, ssum > A(0) ? acc[j] / ssum : A(0));
    }
  }
}

#endif
