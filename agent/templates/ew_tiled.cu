// ew_tiled.cu — an element-wise launch whose accesses do not share one
// contiguous dim: a layout change (NCHW <-> channels-last) fused with the
// element-wise ops around it, a transposed operand, a convolution epilogue
// that writes row-major from a channels-last result.
//
// The (coalesced) iteration shape has two tile dims: KF_DA, the innermost,
// along which the "row" accesses move with stride 0 or 1, and KF_DT, along
// which the "tiled" accesses (KF_L<k>_T / KF_S<k>_T = 1) move with stride
// 1. A block owns one KF_TA x KF_TT tile (every other dim fixed):
//   1. tiled loads, threads consecutive along KF_DT, into shared memory;
//   2. the body, threads consecutive along KF_DA: row loads and stores go
//      to memory, tiled ones come from / go to shared memory;
//   3. tiled stores, threads consecutive along KF_DT, from shared memory.
// Every global access is coalesced; the tiles are padded one column
// against bank conflicts.
//
// Prelude (agent/builtin_ew.c): as elementwise.cu (KF_KERNEL, KF_PARAMS,
// KF_INDEX, KF_RANK, KF_SHAPE, KF_LOADS(X), KF_STORES(X), KF_L<k>_S/_R/_P/
// _ST, KF_S<k>_S/_R/_P/_ST, KF_BODY with KF_LD(k) and KF_ST(k, v)), plus
// KF_DA, KF_DT, KF_TA, KF_TT (powers of two), KF_NTA, KF_NTT (tiles along
// each), KF_BLOCK (threads: divides KF_TA * KF_TT, or
// one warp over a smaller tile) and the flags
// KF_L<k>_T, KF_S<k>_T. Grid: one block per tile, (KF_NTA * KF_NTT * the
// product of the other dims) blocks.
#include "kf_common.cuh"
#include "kf_ops.cuh"

#define KF_TL_LST(k) constexpr long long kf_lst_##k[KF_RANK] = {KF_L##k##_ST};
#define KF_TL_SST(k) constexpr long long kf_sst_##k[KF_RANK] = {KF_S##k##_ST};
#define KF_TL_LTILE(k) \
  __shared__ KF_L##k##_R kf_tl_##k[KF_L##k##_T ? KF_TA : 1][KF_L##k##_T ? KF_TT + 1 : 1];
#define KF_TL_STILE(k) \
  __shared__ KF_S##k##_R kf_ts_##k[KF_S##k##_T ? KF_TA : 1][KF_S##k##_T ? KF_TT + 1 : 1];
#define KF_TL_LBASE(k) const I kf_lb_##k = kf::dot(c0, kf_lst_##k);
#define KF_TL_SBASE(k) const I kf_sb_##k = kf::dot(c0, kf_sst_##k);
// step 1: a tiled load's tile, threads along KF_DT; every load of the
// thread issued before the first shared-memory store
#define KF_TL_FILL(k)                                                               \
  if constexpr (KF_L##k##_T) {                                                      \
    KF_L##k##_R kf_f_##k[kf_per];                                                   \
    _Pragma("unroll") for (int j = 0; j < kf_per; j++) {                            \
      const int e = (int)threadIdx.x + j * KF_BLOCK;                                \
      const int tl = e % KF_TT, al = e / KF_TT;                                     \
      if (al < na && tl < nt)                                                       \
        kf_f_##k[j] = kf::ld<KF_L##k##_R>(                                          \
            KF_L##k##_P + kf_lb_##k + (I)al * (I)kf_lst_##k[KF_DA] + (I)tl * (I)kf_lst_##k[KF_DT]); \
    }                                                                               \
    _Pragma("unroll") for (int j = 0; j < kf_per; j++) {                            \
      const int e = (int)threadIdx.x + j * KF_BLOCK;                                \
      const int tl = e % KF_TT, al = e / KF_TT;                                     \
      if (al < na && tl < nt) kf_tl_##k[al][tl] = kf_f_##k[j];                      \
    }                                                                               \
  }
// step 3: a tiled store's tile, threads along KF_DT
#define KF_TL_DRAIN(k)                                                              \
  if constexpr (KF_S##k##_T) {                                                      \
    _Pragma("unroll") for (int j = 0; j < kf_per; j++) {                            \
      const int e = (int)threadIdx.x + j * KF_BLOCK;                                \
      const int tl = e % KF_TT, al = e / KF_TT;                                     \
      if (al < na && tl < nt)                                                       \
        kf::st(KF_S##k##_P + kf_sb_##k + (I)al * (I)kf_sst_##k[KF_DA] + (I)tl * (I)kf_sst_##k[KF_DT], \
               kf_ts_##k[al][tl]);                                                  \
    }                                                                               \
  }
#define KF_TL_ANY_L(k) || KF_L##k##_T
#define KF_TL_ANY_S(k) || KF_S##k##_T

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  constexpr long long shape[KF_RANK] = {KF_SHAPE};
  KF_LOADS(KF_TL_LST)
  KF_STORES(KF_TL_SST)
  KF_LOADS(KF_TL_LTILE)
  KF_STORES(KF_TL_STILE)
  constexpr bool tiled_loads = false KF_LOADS(KF_TL_ANY_L);
  // elements a thread handles in each step (a warp over a smaller tile: 1)
  constexpr int kf_per = KF_TA * KF_TT >= KF_BLOCK ? KF_TA * KF_TT / KF_BLOCK : 1;
  constexpr bool tiled_stores = false KF_STORES(KF_TL_ANY_S);
  // the tile: along KF_DA, along KF_DT, then the other dims (row-major)
  long long b = (long long)blockIdx.x;
  const long long ta = b % KF_NTA;
  b /= KF_NTA;
  const long long tt = b % KF_NTT;
  b /= KF_NTT;
  I c0[KF_RANK];
#pragma unroll
  for (int d = KF_RANK - 1; d >= 0; d--) {
    if (d == KF_DA || d == KF_DT) continue;
    c0[d] = (I)(b % shape[d]);
    b /= shape[d];
  }
  c0[KF_DA] = (I)(ta * KF_TA);
  c0[KF_DT] = (I)(tt * KF_TT);
  const int na = (int)(shape[KF_DA] - ta * KF_TA < KF_TA ? shape[KF_DA] - ta * KF_TA : KF_TA);
  const int nt = (int)(shape[KF_DT] - tt * KF_TT < KF_TT ? shape[KF_DT] - tt * KF_TT : KF_TT);
  KF_LOADS(KF_TL_LBASE)
  KF_STORES(KF_TL_SBASE)

  KF_LOADS(KF_TL_FILL)
  if constexpr (tiled_loads) __syncthreads();

#define KF_LD(k)                                                                       \
  (KF_L##k##_T ? kf_tl_##k[KF_L##k##_T ? al : 0][KF_L##k##_T ? tl : 0]                \
               : kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lb_##k + (I)al * (I)kf_lst_##k[KF_DA] + \
                                     (I)tl * (I)kf_lst_##k[KF_DT]))
#define KF_ST(k, v)                                                                    \
  do {                                                                                 \
    if constexpr (KF_S##k##_T)                                                         \
      kf_ts_##k[al][tl] = (KF_S##k##_R)(v);                                            \
    else                                                                               \
      kf::st(KF_S##k##_P + kf_sb_##k + (I)al * (I)kf_sst_##k[KF_DA] + (I)tl * (I)kf_sst_##k[KF_DT], (v)); \
  } while (0)
#pragma unroll
  for (int j = 0; j < kf_per; j++) {
    const int e = (int)threadIdx.x + j * KF_BLOCK;
    const int al = e % KF_TA, tl = e / KF_TA;
    if (al < na && tl < nt) {
      KF_BODY
    }
  }
#undef KF_LD
#undef KF_ST

  if constexpr (tiled_stores) {
    __syncthreads();
    KF_STORES(KF_TL_DRAIN)
  }
}

#undef KF_TL_LST
#undef KF_TL_SST
#undef KF_TL_LTILE
#undef KF_TL_STILE
#undef KF_TL_LBASE
#undef KF_TL_SBASE
#undef KF_TL_FILL
#undef KF_TL_DRAIN
#undef KF_TL_ANY_L
#undef KF_TL_ANY_S
