// reduce.cu — row reductions and row normalisations: sum/mean/prod/amax/
// amin/any/all/var/norm/argmax/argmin/max_dim/min_dim, softmax/log_softmax,
// layer/group/batch norm, each with its element-wise prologue (computed on
// load) and epilogue (on store).
//
// The anchor's input is seen as rows: the kept dims (KF_KSHAPE, KF_ROWS rows)
// times the reduced dims (KF_RSHAPE, KF_RLEN elements per row), each access
// with strides over both (KF_L<k>_SK / _SR, KF_S<k>_SK / _SR), so reduced
// dims need not be contiguous. KF_TPR threads work on one row: consecutive
// threads along the row (KF_ROWLAYOUT 1: a warp or a block per row, for
// rows contiguous in memory) or consecutive rows per thread index
// (KF_ROWLAYOUT 0: a column reduction, where neighbouring rows are
// neighbours in memory). Threads combine with warp shuffles and shared
// memory (kf_reduce.cuh).
//
// Bodies written by agent/builtin_reduce.c:
//   KF_PRO   computes one element's value: KF_LD(k), KF_RIDX; KF_YIELD(v)
//   KF_ROW   once per row with the results KF_RES0/KF_RES1: KF_LD, KF_ST
//            at the row's offsets (accesses whose _SR strides are all 0)
//   KF_ELEM  (KF_PHASE2) once per element after the row statistics: the
//            element value KF_X, KF_RES0/1, KF_LD, KF_ST
// With KF_CACHE > 0 each thread keeps its KF_CACHE element values in
// registers between the two phases instead of recomputing them, and the
// row statistics come from two passes over the registers (kf::
// cached_reduce). With KF_RVEC > 1 (one contiguous reduced dim) the loads
// move KF_RVEC elements per access (16 bytes), KF_L<k>_RB marking accesses
// broadcast along the row; with the cache, phase 2 also stores KF_RVEC
// elements at once (KF_S<k>_RB marks row results, stored by KF_ROW).
//
// Without the cache, phase 2 reads the row again (from L2 when the rows in
// flight fit); KF_PH2VEC: its loads and stores move KF_RVEC elements too.
//
// KF_STAGE splits long rows over several blocks (grid.y = KF_SPLIT chunks
// of KF_CHUNK elements): 0 = whole rows in one kernel; 1 = partial states
// of each chunk to the scratch buffer KF_SCRATCH; 2 = combine the partials,
// run KF_ROW; 3 = combine the partials, run KF_ELEM over this block's chunk.
#include "kf_common.cuh"
#include "kf_ops.cuh"
#include "kf_reduce.cuh"

// #pragma unroll with a macro's value (the builder's KF_UNROLL)
#define KF_PRAGMA(x) _Pragma(#x)
#define KF_PRAGMA_UNROLL(n) KF_PRAGMA(unroll n)
#ifndef KF_UNROLL
#define KF_UNROLL 4
#endif

#define KF_DECL_L(k)                                                            \
  constexpr long long kf_lsk_##k[KF_KRANK] = {KF_L##k##_SK};                    \
  constexpr long long kf_lsr_##k[KF_RRANK] = {KF_L##k##_SR};
#define KF_DECL_S(k)                                                            \
  constexpr long long kf_ssk_##k[KF_KRANK] = {KF_S##k##_SK};                    \
  constexpr long long kf_ssr_##k[KF_RRANK] = {KF_S##k##_SR};
#define KF_ROWOFF_L(k) const I kf_lro_##k = kf::dot(kc, kf_lsk_##k); (void)kf_lro_##k;
#define KF_ROWOFF_S(k) const I kf_sro_##k = kf::dot(kc, kf_ssk_##k); (void)kf_sro_##k;
#define KF_RCHECK(k)                                                            \
  kf_al = kf_al && (KF_L##k##_RB || kf::vec_aligned<KF_L##k##_S, KF_RVEC>(KF_L##k##_P + kf_lro_##k + r_begin));
#define KF_SCHECK(k)                                                            \
  kf_al = kf_al && (KF_S##k##_RB || kf::vec_aligned<KF_S##k##_S, KF_RVEC>(KF_S##k##_P + kf_sro_##k + r_begin));
// phase 2 vector stores: element outputs only (_RB: a row result, stored in KF_ROW)
#define KF_RVDECL(k) KF_S##k##_R kf_vs_##k[KF_RVEC];
#define KF_RVSTORE(k)                                                           \
  if (!KF_S##k##_RB) kf::vst<KF_S##k##_S, KF_RVEC>(KF_S##k##_P + kf_sro_##k + r0, kf_vs_##k);
#define KF_RVLOAD(k)                                                            \
  KF_L##k##_R kf_rv_##k[KF_RVEC];                                               \
  kf::vload<KF_L##k##_RB, KF_L##k##_S, KF_RVEC>(kf_rv_##k, KF_L##k##_P + kf_lro_##k + (KF_L##k##_RB ? 0 : r0));

// element accesses (rc: the element's coordinates in the reduced dims)
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf::dot(rc, kf_lsr_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf_sro_##k + kf::dot(rc, kf_ssr_##k), (v))
#define KF_RIDX r
#define KF_RES0 kf_res0
#define KF_RES1 kf_res1
#define KF_X kf_x

// softmax's phase 2 (KF_SOFTMAX in KF_ELEM): with the row cached, the
// registers already hold exp(x - max) (KF_CACHE_EXP) and the row's
// reciprocal sum is computed once
#ifndef KF_CACHE_EXP
#define KF_CACHE_EXP 0
#endif
#if KF_CACHE > 0 && KF_STAGE == 0 && KF_CACHE_EXP
#define KF_SOFTMAX(x, m, s) ((x) * kf_rinv)
#else
#define KF_SOFTMAX(x, m, s) (kf::exp((x) - (m)) / (s))
#endif

// Resident threads asked of ptxas: with the row in registers, a full SM
// (2048: 32 registers a thread; the softmax and layer norm kernels at 64
// registers ran at 48% occupancy and 2.1 TB/s on the H200, Inductor's at
// 32 registers and 92%); otherwise at least 1024 (64 registers)
// (KF_MINB_LOW: ptxas spilled at 32 registers; agent/nvrtc.c recompiles)
// KF_OCC > 0: the resident threads asked for, chosen (kernel option occ)
#if defined(KF_OCC) && KF_OCC > 0
#define KF_MINB (KF_OCC / KF_BLOCK > 0 ? KF_OCC / KF_BLOCK : 1)
#elif KF_CACHE > 0 && !defined(KF_MINB_LOW)
#define KF_MINB (2048 / KF_BLOCK > 0 ? 2048 / KF_BLOCK : 1)
#else
#define KF_MINB (1024 / KF_BLOCK > 0 ? 1024 / KF_BLOCK : 1)
#endif
extern "C" __global__ void __launch_bounds__(KF_BLOCK, KF_MINB) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_RED RED;
  typedef typename RED::state S;
  static_assert(sizeof(S) <= 32, "split partial states are 32-byte slots");
  const RED red KF_RED_INIT;
  constexpr long long kshape[KF_KRANK] = {KF_KSHAPE};
  constexpr long long rshape[KF_RRANK] = {KF_RSHAPE};
  (void)rshape;
  KF_LOADS(KF_DECL_L)
  KF_STORES(KF_DECL_S)
  __shared__ S kf_smem[KF_BLOCK];
  constexpr int RPB = KF_BLOCK / KF_TPR;
  const int tid = (int)threadIdx.x;
  const int slot = KF_ROWLAYOUT ? tid / KF_TPR : tid % RPB;
  const int lane = KF_ROWLAYOUT ? tid % KF_TPR : tid / RPB;
#if KF_STAGE == 0
  const I r_begin = 0, r_end = (I)KF_RLEN;
#else
  S *const scratch = reinterpret_cast<S *>(KF_SCRATCH);
  const I r_begin = (I)blockIdx.y * (I)KF_CHUNK;
  const I r_end = r_begin + (I)KF_CHUNK < (I)KF_RLEN ? r_begin + (I)KF_CHUNK : (I)KF_RLEN;
#endif
  (void)r_begin;
  (void)r_end;

  for (I rb = (I)blockIdx.x * RPB; rb < (I)KF_ROWS; rb += (I)gridDim.x * RPB) {
    const I row = rb + slot;
    const bool valid = row < (I)KF_ROWS;
    I kc[KF_KRANK];
    kf::unravel(valid ? row : (I)0, kshape, kc);
    KF_LOADS(KF_ROWOFF_L)
    KF_STORES(KF_ROWOFF_S)
    S st = red.init();
#if KF_CACHE > 0
    KF_ACC kf_cache[KF_CACHE];
#endif

#if KF_CACHE > 0
    // ---- phase 1 with the row in registers (stage 0): KF_CACHE values a
    // thread; with KF_RVEC > 1 and aligned rows, KF_RVEC consecutive
    // elements per access (value i is element (lane + i / KF_RVEC * KF_TPR)
    // * KF_RVEC + i % KF_RVEC), else every KF_TPR-th element. The rows of a
    // block may take different paths; the barriers are outside them.
    int kf_n = 0;
#define KF_YIELD(v) kf_cache[it] = (KF_ACC)(v)
#if KF_RVEC > 1
    bool kf_al = true;
    KF_LOADS(KF_RCHECK)
    KF_STORES(KF_SCHECK)
    if (kf_al) {
#pragma unroll
      for (int iv = 0; iv < KF_CACHE / KF_RVEC; iv++) {
        const I r0 = r_begin + ((I)lane + (I)iv * KF_TPR) * KF_RVEC;
        if (valid && r0 < r_end) {
          KF_LOADS(KF_RVLOAD)
#undef KF_LD
#define KF_LD(k) kf_rv_##k[j]
#pragma unroll
          for (int j = 0; j < KF_RVEC; j++) {
            const I r = r0 + j; /* read by some prologues */
            (void)r;
            const int it = iv * KF_RVEC + j;
            KF_PRO
          }
#undef KF_LD
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf::dot(rc, kf_lsr_##k))
          kf_n = (iv + 1) * KF_RVEC;
        }
      }
    } else
#else
    const bool kf_al = false;
#endif
    {
#pragma unroll
      for (int it = 0; it < KF_CACHE; it++) {
        const I r = r_begin + (I)lane + (I)it * KF_TPR;
        if (valid && r < r_end) {
          I rc[KF_RRANK];
          kf::unravel(r, rshape, rc);
          KF_PRO
          kf_n = it + 1;
        }
      }
    }
#undef KF_YIELD
    st = kf::cached_reduce<RED, KF_BLOCK, KF_TPR, KF_ROWLAYOUT, KF_CACHE_EXP>(
        red, kf_cache, kf_n, (long long)r_begin + (long long)lane * (kf_al ? KF_RVEC : 1), kf_al ? KF_RVEC : 1,
        (long long)KF_RLEN, kf_smem);
#elif KF_STAGE == 0 || KF_STAGE == 1
    // ---- phase 1: the row's (or chunk's) elements into one state
    if (valid) {
#define KF_YIELD(v) red.add(st, (KF_ACC)(v), (long long)r)
      I r_first = r_begin + (I)lane;
      I r_step = KF_TPR;
#if KF_RVEC > 1
      // KF_RVEC consecutive elements per step and thread: the single
      // reduced dim is contiguous (or broadcast, KF_L<k>_RB) for every
      // load; rows whose pointers are not aligned take the scalar loop
      bool kf_al = true;
      KF_LOADS(KF_RCHECK)
      if (kf_al) {
#pragma unroll 4
        for (I r0 = r_begin + (I)lane * KF_RVEC; r0 < r_end; r0 += (I)KF_TPR * KF_RVEC) {
          KF_LOADS(KF_RVLOAD)
#undef KF_LD
#define KF_LD(k) kf_rv_##k[j]
#pragma unroll
          for (int j = 0; j < KF_RVEC; j++) {
            const I r = r0 + j; /* read by some prologues */
            (void)r;
            KF_PRO
          }
#undef KF_LD
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf::dot(rc, kf_lsr_##k))
        }
        r_first = r_end; // done
      }
#endif
#if KF_UNROLL > 1 && defined(KF_BATCH) && KF_BATCH
      // KF_UNROLL elements computed into registers, then reduced in order:
      // their loads issue together even when the reducer branches (argmin
      // and argmax over an outer dim read at 61% of DRAM's bandwidth with
      // one load at a time in flight, H100 ncu); the same adds in the same
      // order as the loop below
      for (; r_first + (I)(KF_UNROLL - 1) * r_step < r_end; r_first += (I)KF_UNROLL * r_step) {
        KF_ACC kf_b[KF_UNROLL];
#undef KF_YIELD
#define KF_YIELD(v) kf_b[u] = (KF_ACC)(v)
#pragma unroll
        for (int u = 0; u < KF_UNROLL; u++) {
          const I r = r_first + (I)u * r_step;
          I rc[KF_RRANK];
          kf::unravel(r, rshape, rc);
          KF_PRO
        }
#pragma unroll
        for (int u = 0; u < KF_UNROLL; u++) red.add(st, kf_b[u], (long long)(r_first + (I)u * r_step));
      }
#undef KF_YIELD
#define KF_YIELD(v) red.add(st, (KF_ACC)(v), (long long)r)
#endif
      for (I r = r_first; r < r_end; r += r_step) {
        I rc[KF_RRANK];
        kf::unravel(r, rshape, rc);
        KF_PRO
      }
#undef KF_YIELD
    }
#else
    // ---- the partial states of the row's chunks
    if (valid)
      for (int j = lane; j < KF_SPLIT; j += KF_TPR) st = red.combine(st, scratch[row * KF_SPLIT + j]);
#endif
#if KF_CACHE == 0
    st = kf::row_allreduce<RED, KF_BLOCK, KF_TPR, KF_ROWLAYOUT>(red, st, kf_smem);
#endif

#if KF_STAGE == 1
    if (valid && lane == 0) scratch[row * KF_SPLIT + blockIdx.y] = st;
#else
    const auto kf_res0 = red.r0(st, (long long)KF_RLEN);
    const auto kf_res1 = red.r1(st, (long long)KF_RLEN);
    (void)kf_res0;
    (void)kf_res1;
#if KF_CACHE > 0 && KF_STAGE == 0 && KF_CACHE_EXP
    const KF_ACC kf_rinv = KF_ACC(1) / (KF_ACC)kf_res1;
#endif
#if KF_STAGE == 0 || KF_STAGE == 2
    if (valid && lane == 0) {
      const I rc[KF_RRANK] = {0};
      (void)rc;
      KF_ROW
    }
#endif
#if KF_PHASE2 && (KF_STAGE == 0 || KF_STAGE == 3)
    // ---- phase 2: every element again, with the row's statistics
    if (valid) {
#if KF_CACHE > 0 && KF_STAGE == 0
#if KF_RVEC > 1
      if (kf_al) {
#pragma unroll
        for (int iv = 0; iv < KF_CACHE / KF_RVEC; iv++) {
          const I r0 = r_begin + ((I)lane + (I)iv * KF_TPR) * KF_RVEC;
          if (r0 < r_end) {
            KF_LOADS(KF_RVLOAD)
            KF_STORES(KF_RVDECL)
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf_rv_##k[j]
#define KF_ST(k, v) kf_vs_##k[j] = (v)
#pragma unroll
            for (int j = 0; j < KF_RVEC; j++) {
              const I r = r0 + j;
              const I rc[KF_RRANK] = {r};
              (void)rc;
              const KF_ACC kf_x = kf_cache[iv * KF_RVEC + j];
              KF_ELEM
            }
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf::dot(rc, kf_lsr_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf_sro_##k + kf::dot(rc, kf_ssr_##k), (v))
            KF_STORES(KF_RVSTORE)
          }
        }
      } else
#endif
#pragma unroll
      for (int it = 0; it < KF_CACHE; it++) {
        const I r = r_begin + (I)lane + (I)it * KF_TPR;
        if (r < r_end) {
          I rc[KF_RRANK];
          kf::unravel(r, rshape, rc);
          const KF_ACC kf_x = kf_cache[it];
          KF_ELEM
        }
      }
#else
#define KF_YIELD(v) kf_x = (KF_ACC)(v)
#if KF_RVEC > 1 && KF_PH2VEC
      // the row again from memory (L2 for rows read moments ago), KF_RVEC
      // elements per access when every load and store of the row allows
      bool kf_al = true;
      KF_LOADS(KF_RCHECK)
      KF_STORES(KF_SCHECK)
      if (kf_al) {
#pragma unroll 4
        for (I r0 = r_begin + (I)lane * KF_RVEC; r0 < r_end; r0 += (I)KF_TPR * KF_RVEC) {
          KF_LOADS(KF_RVLOAD)
          KF_STORES(KF_RVDECL)
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf_rv_##k[j]
#define KF_ST(k, v) kf_vs_##k[j] = (v)
#pragma unroll
          for (int j = 0; j < KF_RVEC; j++) {
            const I r = r0 + j;
            const I rc[KF_RRANK] = {r};
            (void)rc;
            KF_ACC kf_x;
            KF_PRO
            KF_ELEM
          }
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf::dot(rc, kf_lsr_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf_sro_##k + kf::dot(rc, kf_ssr_##k), (v))
          KF_STORES(KF_RVSTORE)
        }
      } else
#endif
      for (I r = r_begin + (I)lane; r < r_end; r += KF_TPR) {
        I rc[KF_RRANK];
        kf::unravel(r, rshape, rc);
        KF_ACC kf_x;
        KF_PRO
        KF_ELEM
      }
#undef KF_YIELD
#endif
    }
#endif
#endif
  }
}

#undef KF_DECL_L
#undef KF_DECL_S
#undef KF_ROWOFF_L
#undef KF_ROWOFF_S
#undef KF_RCHECK
#undef KF_SCHECK
#undef KF_RVDECL
#undef KF_RVSTORE
#undef KF_RVLOAD
#undef KF_LD
#undef KF_ST
#undef KF_RIDX
#undef KF_RES0
#undef KF_RES1
#undef KF_X
#undef KF_SOFTMAX
#undef KF_CACHE_EXP
#undef KF_PH2VEC
#undef KF_OCC
#undef KF_MINB
#undef KF_MINB_LOW
