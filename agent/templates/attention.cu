// attention.cu — scaled dot-product attention, softmax(q k^T * scale +
// mask) v, one warp per query row with an online softmax over blocks of 32
// keys: each lane scores one key (q staged in shared memory), the warp
// rescales its running maximum and sum, then every lane accumulates its
// share of the output features. Boolean masks (true = keep), additive
// masks, causal masking (key <= query, top-left aligned as PyTorch's
// tril), a scale, broadcast batch dims and grouped-query attention (key
// head = query head / ratio). A row whose keys are all masked gives zeros,
// as ATen's safe softmax does.
//
// Prelude (agent/builtin_attention.c): KF_NB batch dims KF_BSHAPE with the
// batch strides of q, k, v, mask (KF_QBS, KF_KBS, KF_VBS, KF_MBS; 0 where
// broadcast) and KF_GQA_DIM / KF_GQA_RATIO; sizes KF_L, KF_S, KF_E, KF_EV;
// row/feature strides KF_QSL, KF_QSE, KF_KSS, KF_KSE, KF_VSS, KF_VSE, mask
// KF_MSL, KF_MSS; KF_MASK 0 none, 1 bool, 2 additive; KF_CAUSAL; KF_SCALE;
// KF_QS, KF_MS, KF_OS storage types; KF_Q, KF_K, KF_V, KF_M, KF_O pointers;
// KF_ACC; KF_EPL = ceil(KF_EV / 32). The output is contiguous.
#include "kf_common.cuh"
#include "kf_ops.cuh"
#include "kf_reduce.cuh"

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
