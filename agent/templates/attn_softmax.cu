// attn_softmax.cu — the softmax step of attention's GEMM lowering
// (agent/builtin_attention.c): a cuBLASLt step has written scores
// S = scale * q k^T of one chunk into scratch; this kernel turns each row
// into probabilities P in place, applying the mask on the way (boolean:
// false gives -inf; additive: added) or causal masking (key > query gives
// -inf, top-left aligned as PyTorch's tril), and a second cuBLASLt step
// computes P v. A row whose keys are all masked gives zeros, as ATen's
// safe softmax (and agent/templates/attention.cu) does.
//
// Which query a scratch row is: a launch covers kf_rows rows of a chunk,
// KF_MC rows per GEMM batch entry. Row r is query row m = kf_m0 + r % KF_MC
// of GEMM batch entry r / KF_MC, which is output batch entry (the output's
// batch dims flattened) kf_b0 + (r / KF_MC) * KF_BSTEP + m / KF_L, query
// l = m % KF_L: the GEMM may stack the query rows of consecutive batch
// entries (grouped-query heads sharing a key head) into one matrix, and
// its batch steps KF_BSTEP output entries.
//
// KF_TPR consecutive threads work on a row, KF_BLOCK / KF_TPR rows a block.
// KF_CACHE > 0: each thread keeps its KF_CACHE values of the row in
// registers, KF_VEC consecutive ones per access (16 bytes), so the row is
// read once and written once; the maximum, then the sum of exponentials,
// are all-reduced over the row's threads. KF_CACHE 0 (rows too long for
// the registers): an online (maximum, sum) pass, then a second pass that
// reads the row again and writes it.
//
// Prelude: KF_ACC the scratch's (and accumulation) type, KF_P the scratch,
// KF_S keys (the row length and pitch), KF_L queries, KF_MC, KF_BSTEP;
// KF_NB batch dims KF_BSHAPE and the mask's batch strides KF_MBS, KF_MSL,
// KF_MSS, KF_MASK (0 none, 1 bool, 2 additive) and KF_M; KF_CAUSAL;
// KF_TPR, KF_BLOCK, KF_CACHE, KF_VEC; KF_INDEX.
#include "kf_common.cuh"
#include "kf_ops.cuh"
#include "kf_reduce.cuh"

extern "C" __global__ void __launch_bounds__(KF_BLOCK)
    KF_KERNEL(KF_PARAMS, long long kf_b0, long long kf_m0, long long kf_rows) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr int TPR = KF_TPR, RPB = KF_BLOCK / KF_TPR;
  static_assert(KF_BLOCK % KF_TPR == 0 && (KF_TPR <= 32 || KF_TPR % 32 == 0), "rows of whole warps");
  static_assert(KF_CACHE % KF_VEC == 0 && KF_S % KF_VEC == 0, "vector accesses within rows");
  const int tid = (int)threadIdx.x, slot = tid / TPR, lane = tid % TPR;
  const I r = (I)blockIdx.x * RPB + slot;
  const bool valid = r < (I)kf_rows;
  const I rr = valid ? r : (I)0;
  const I m = (I)kf_m0 + rr % (I)KF_MC;
  const I l = m % (I)KF_L;
  A *const row = KF_P + rr * (I)KF_S;
#if KF_MASK
  constexpr long long bshape[KF_NB] = {KF_BSHAPE};
  constexpr long long mbs[KF_NB] = {KF_MBS};
  const I b = (I)kf_b0 + rr / (I)KF_MC * (I)KF_BSTEP + m / (I)KF_L;
  I bc[KF_NB];
  kf::unravel(b, bshape, bc);
  const I mo = kf::dot(bc, mbs) + l * (I)KF_MSL;
#else
  (void)kf_b0;
#endif
  (void)l;
  // the score of key s with its mask (lowest: masked)
  auto masked = [&](A x, I s) -> A {
    if (KF_CAUSAL && s > l) return kf::lowest_<A>();
#if KF_MASK == 1
    if (!kf::ld<bool>(KF_M + mo + s * (I)KF_MSS)) return kf::lowest_<A>();
#elif KF_MASK == 2
    x += kf::ld<A>(KF_M + mo + s * (I)KF_MSS);
#endif
    return x;
  };
  (void)masked;

#if KF_CACHE > 0
  __shared__ A kf_smem[KF_BLOCK / 32 + 1];
  A c[KF_CACHE];
#pragma unroll
  for (int iv = 0; iv < KF_CACHE / KF_VEC; iv++) {
    const I s0 = ((I)lane + (I)iv * TPR) * KF_VEC;
    if (valid && s0 < (I)KF_S) {
      A t[KF_VEC];
      kf::vld<A, KF_VEC>(t, row + s0);
#pragma unroll
      for (int j = 0; j < KF_VEC; j++) c[iv * KF_VEC + j] = masked(t[j], s0 + j);
    } else {
#pragma unroll
      for (int j = 0; j < KF_VEC; j++) c[iv * KF_VEC + j] = kf::lowest_<A>();
    }
  }
  const kf::red_maxnan<A> mx;
  A mv = mx.init();
#pragma unroll
  for (int i = 0; i < KF_CACHE; i++) mx.add(mv, c[i], 0);
  mv = kf::row_allreduce<kf::red_maxnan<A>, KF_BLOCK, TPR, true>(mx, mv, kf_smem);
  A sum = A(0);
#pragma unroll
  for (int i = 0; i < KF_CACHE; i++) {
    c[i] = c[i] == kf::lowest_<A>() ? A(0) : kf::exp_(c[i] - mv);
    sum += c[i];
  }
  sum = kf::row_allreduce<kf::red_sum<A>, KF_BLOCK, TPR, true>(kf::red_sum<A>(), sum, kf_smem);
  const A inv = sum == A(0) ? A(0) : A(1) / sum; // NaN stays NaN
#pragma unroll
  for (int iv = 0; iv < KF_CACHE / KF_VEC; iv++) {
    const I s0 = ((I)lane + (I)iv * TPR) * KF_VEC;
    if (valid && s0 < (I)KF_S) {
      A t[KF_VEC];
#pragma unroll
      for (int j = 0; j < KF_VEC; j++) t[j] = c[iv * KF_VEC + j] * inv;
      kf::vst<A, KF_VEC>(row + s0, t);
    }
  }
#else
  typedef kf::red_softmax<A> RED;
  __shared__ typename RED::state kf_smem[KF_BLOCK / 32 + 1];
  const RED red;
  typename RED::state st = red.init();
  if (valid)
    for (I s = (I)lane; s < (I)KF_S; s += TPR) red.add(st, masked(row[s], s), 0);
  st = kf::row_allreduce<RED, KF_BLOCK, TPR, true>(red, st, kf_smem);
  const A inv = st.s == A(0) ? A(0) : A(1) / st.s;
  if (valid)
    for (I s = (I)lane; s < (I)KF_S; s += TPR) {
      const A x = masked(row[s], s);
      row[s] = x == kf::lowest_<A>() ? A(0) : kf::exp_(x - st.m) * inv;
    }
#endif
}
