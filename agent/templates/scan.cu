// scan.cu — prefix sums and products along one dim (kf.cumsum, kf.cumprod;
// forward or reverse, inclusive or exclusive), with the group's element-wise
// prologue computed on load and its epilogue on store: one read and one
// write of each element.
//
// The loop is seen as KF_LINES lines (the kept dims KF_KSHAPE) of KF_LEN
// elements; each access has strides over the kept dims (KF_L<k>_SK,
// KF_S<k>_SK, KF_I<k>_SK) and one along the line (_SR). Accumulation in
// KF_ACC (float for f32/f16/bf16, int64 for integers, as ATen), combining
// with + or * (KF_PROD). Bodies written by agent/builtin_scan.c:
//   KF_PRO   one element's scan input: KF_LD(k), KF_IX(k); KF_YIELD(v)
//   KF_EPI   one element's outputs from its scanned value KF_SCAN (and the
//            loads again): KF_ST(k, v)
//
// KF_LAYOUT 1 (rows: the line is contiguous). KF_TPR threads scan a line
// (a segment of a warp, or a whole block of KF_TPR == KF_BLOCK threads) in
// tiles of KF_TPR * KF_NV * KF_VEC elements. A warp's part of a tile is
// KF_NV slices of KF_W * KF_VEC consecutive elements, lane l holding
// KF_VEC consecutive ones of each (one 16-byte access per slice and
// operand, every warp access contiguous). Each thread scans its vectors in
// registers, the vector totals are scanned across the lanes with shuffles
// (one warp scan a slice), the warp totals across the line's warps through
// shared memory, and the running total carries to the next tile. Reverse
// scans visit the tiles, warps, slices, lanes and elements mirrored (the
// line padded to whole tiles at its end), so the same arithmetic runs
// backwards while the accesses stay aligned vectors. KF_VLD: every access
// walks the line with stride 0 or 1, so lines whose pointers are aligned
// at run time move whole vectors; other vectors (the line's last partial
// one, unaligned lines) are loaded element by element.
//
// KF_LAYOUT 0 (columns: neighbouring lines are neighbours in memory, the
// line itself strided). Each thread owns KF_VEC consecutive lines (one
// vector along the innermost kept dim) and walks them, KF_UNROLL positions
// loaded before they are combined; every warp access is contiguous.
//
// KF_STAGE splits long lines over KF_SPLIT blocks (grid.y) when the lines
// alone would not fill the GPU: stage 1 writes each chunk's total to
// KF_SCRATCH (KF_ACC, [line][chunk]), stage 2 starts each chunk from the
// combined totals of the chunks before it. Chunks are KF_CTILES tiles
// (rows) or KF_CHUNK positions (columns). Stage 0: one pass.
#include "kf_common.cuh"
#include "kf_ops.cuh"

#ifndef KF_SCAN_HELPERS
#define KF_SCAN_HELPERS // once per unit source, which may hold several scan kernels
namespace kf {

template <class A, bool PROD> __device__ __forceinline__ A scan_op(A a, A b) {
  if constexpr (PROD)
    return A(a * b);
  else
    return A(a + b);
}

// Inclusive scan across the W lanes of a warp segment (Hillis-Steele).
template <class A, bool PROD, int W> __device__ __forceinline__ A seg_scan(A s, int lane) {
#pragma unroll
  for (int m = 1; m < W; m *= 2) {
    const A y = shfl_up(s, m, W);
    if (lane >= m) s = scan_op<A, PROD>(y, s);
  }
  return s;
}

}  // namespace kf
#endif

#define KF_DECL_L(k)                                                            \
  constexpr long long kf_lsk_##k[KF_KRANK] = {KF_L##k##_SK};                    \
  constexpr long long kf_lsr_##k = KF_L##k##_SR;
#define KF_DECL_S(k)                                                            \
  constexpr long long kf_ssk_##k[KF_KRANK] = {KF_S##k##_SK};                    \
  constexpr long long kf_ssr_##k = KF_S##k##_SR;
#define KF_DECL_I(k)                                                            \
  constexpr long long kf_isk_##k[KF_KRANK] = {KF_I##k##_SK};                    \
  constexpr long long kf_isr_##k = KF_I##k##_SR;
#define KF_LINEOFF_L(k) const I kf_lro_##k = kf::dot(kc, kf_lsk_##k); (void)kf_lro_##k;
#define KF_LINEOFF_S(k) const I kf_sro_##k = kf::dot(kc, kf_ssk_##k); (void)kf_sro_##k;
#define KF_LINEOFF_I(k) const I kf_iro_##k = kf::dot(kc, kf_isk_##k); (void)kf_iro_##k;

#ifndef KF_UNROLL
#define KF_UNROLL 8
#endif

// Resident threads asked of ptxas: at least 1024 a SM (64 registers), which
// keeps 64 KiB of loads in flight a SM; KF_OCC > 0: the kernel option occ
#if defined(KF_OCC) && KF_OCC > 0
#define KF_MINB (KF_OCC / KF_BLOCK > 0 ? KF_OCC / KF_BLOCK : 1)
#else
#define KF_MINB (1024 / KF_BLOCK > 0 ? 1024 / KF_BLOCK : 1)
#endif

#define KF_IDENT (KF_PROD ? A(1) : A(0))
#define KF_SCAN kf_scan
#define KF_COMB(a, b) kf::scan_op<A, KF_PROD>((a), (b))

#if KF_LAYOUT == 1
// ============================================================================
// rows
#define KF_W (KF_TPR < 32 ? KF_TPR : 32)
#define KF_NW (KF_TPR / KF_W)
#define KF_LPB (KF_BLOCK / KF_TPR)
#define KF_TILE (KF_TPR * KF_NV * KF_VEC)

// vector loads of line-walking accesses (stride 1) or one broadcast value
// (stride 0); _SR is 0 or 1 when KF_VLD
#define KF_CHECK_L(k)                                                           \
  kf_al = kf_al && (kf_lsr_##k == 0 || kf::vec_aligned<KF_L##k##_S, KF_VEC>(KF_L##k##_P + kf_lro_##k));
#define KF_CHECK_S(k) kf_al = kf_al && kf::vec_aligned<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf_sro_##k);
#define KF_DECL_RV(k) KF_L##k##_R kf_rv_##k[KF_NV][KF_VEC];
#define KF_VLOAD(k)                                                             \
  kf::vload<kf_lsr_##k == 0, KF_L##k##_S, KF_VEC>(                              \
      kf_rv_##k[kf_v], KF_L##k##_P + kf_lro_##k + (kf_lsr_##k == 0 ? (I)0 : kf_pos0));
#define KF_SLOAD(k)                                                             \
  _Pragma("unroll") for (int kf_j = 0; kf_j < KF_VEC; kf_j++) {                 \
    const I kf_pos = kf_pos0 + kf_j;                                                \
    kf_rv_##k[kf_v][kf_j] = (valid && kf_pos < (I)KF_LEN)                         \
                                ? kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf_pos * (I)kf_lsr_##k) \
                                : (KF_L##k##_R)0;                               \
  }
#define KF_VDECL(k) KF_S##k##_R kf_vs_##k[KF_VEC];
#define KF_VSTORE(k) kf::vst<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf_sro_##k + kf_pos0, kf_vs_##k);

#define KF_LD(k) kf_rv_##k[kf_v][kf_j]
#define KF_IX(k) (kf_iro_##k + kf_pos * (I)kf_isr_##k)
#define KF_ST(k, x)                                                             \
  do {                                                                          \
    if (kf_whole)                                                               \
      kf_vs_##k[kf_j] = (x);                                                    \
    else if (valid && kf_pos < (I)KF_LEN)                                         \
      kf::st(KF_S##k##_P + kf_sro_##k + kf_pos * (I)kf_ssr_##k, (x));             \
  } while (0);

// The line's running total through its threads: all of them get x combined
// over the line (warp shuffles, then shared memory across warps).
#define KF_LINE_ALL(x, out)                                                     \
  {                                                                             \
    const A kf_ls = kf::seg_scan<A, KF_PROD, KF_W>((x), lane);                  \
    A kf_lt = kf::shfl_idx(kf_ls, KF_W - 1, KF_W);                              \
    if constexpr (KF_NW > 1) {                                                  \
      if (lane == 0) kf_smem[kf_par][wl] = kf_lt;                               \
      __syncthreads();                                                          \
      kf_lt = KF_IDENT;                                                         \
      _Pragma("unroll") for (int kf_w = 0; kf_w < KF_NW; kf_w++)                \
        kf_lt = KF_COMB(kf_lt, kf_smem[kf_par][kf_w]);                          \
      kf_par ^= 1;                                                              \
    }                                                                           \
    out = kf_lt;                                                                \
  }

extern "C" __global__ void __launch_bounds__(KF_BLOCK, KF_MINB) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr long long kshape[KF_KRANK] = {KF_KSHAPE};
  KF_LOADS(KF_DECL_L)
  KF_STORES(KF_DECL_S)
  KF_IDXS(KF_DECL_I)
  constexpr long long ntiles = (KF_LEN + KF_TILE - 1) / KF_TILE;
  // warp totals of a tile, double-buffered so one barrier a tile suffices
  __shared__ A kf_smem[2][KF_NW];
  int kf_par = 0;
  const int tid = (int)threadIdx.x;
  const int slot = tid / KF_TPR;      // the block's line
  const int lane = tid % KF_W;        // in the warp segment
  const int wl = (tid % KF_TPR) / KF_W; // the warp's place in the line
#if KF_STAGE == 0
  const I t_begin = 0, t_end = (I)ntiles;
#else
  A *const scratch = reinterpret_cast<A *>(KF_SCRATCH);
  const I t_begin = (I)blockIdx.y * (I)KF_CTILES;
  const I t_end = t_begin + (I)KF_CTILES < (I)ntiles ? t_begin + (I)KF_CTILES : (I)ntiles;
#endif

  for (I lb = (I)blockIdx.x * KF_LPB; lb < (I)KF_LINES; lb += (I)gridDim.x * KF_LPB) {
    const I line = lb + slot;
    const bool valid = line < (I)KF_LINES;
    I kc[KF_KRANK];
    kf::unravel(valid ? line : (I)0, kshape, kc);
    KF_LOADS(KF_LINEOFF_L)
    KF_STORES(KF_LINEOFF_S)
    KF_IDXS(KF_LINEOFF_I)
#if KF_VLD
    bool kf_al = valid;
    KF_LOADS(KF_CHECK_L)
    KF_STORES(KF_CHECK_S)
#else
    const bool kf_al = false;
#endif
    A carry = KF_IDENT;
#if KF_STAGE == 2
    {
      // the totals of the chunks before this one
      A kf_x = KF_IDENT;
      if (valid)
        for (int c = tid % KF_TPR; c < (int)blockIdx.y; c += KF_TPR) kf_x = KF_COMB(kf_x, scratch[(I)line * KF_SPLIT + c]);
      KF_LINE_ALL(kf_x, carry)
    }
#endif
#if KF_STAGE == 1
    A kf_tot = KF_IDENT;
#endif
    for (I tile = t_begin; tile < t_end; tile++) {
      const I pt = KF_REV ? (I)ntiles - 1 - tile : tile; // the tile in memory
      A a[KF_NV][KF_VEC];
      KF_LOADS(KF_DECL_RV)
      // ---- loads (all of them before any arithmetic) and the prologue
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++) {
        const I o = (I)((wl * KF_NV + kf_v) * KF_W + lane) * KF_VEC;
        const I kf_pos0 = pt * (I)KF_TILE + (KF_REV ? (I)(KF_TILE - KF_VEC) - o : o);
        const bool kf_whole = kf_al && kf_pos0 + KF_VEC <= (I)KF_LEN;
        if (kf_whole) {
          KF_LOADS(KF_VLOAD)
        } else {
          KF_LOADS(KF_SLOAD)
        }
      }
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++) {
        const I o = (I)((wl * KF_NV + kf_v) * KF_W + lane) * KF_VEC;
        const I kf_pos0 = pt * (I)KF_TILE + (KF_REV ? (I)(KF_TILE - KF_VEC) - o : o);
#pragma unroll
        for (int kf_j = 0; kf_j < KF_VEC; kf_j++) {
          const I kf_pos = kf_pos0 + kf_j;
          (void)kf_pos;
          A kf_y = KF_IDENT;
#define KF_YIELD(x) kf_y = (A)(x)
          KF_PRO
#undef KF_YIELD
          // a[][] in scan order: reverse scans read each vector backwards
          a[kf_v][KF_REV ? KF_VEC - 1 - kf_j : kf_j] = valid && kf_pos < (I)KF_LEN ? kf_y : KF_IDENT;
        }
      }
#if KF_STAGE == 1
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++)
#pragma unroll
        for (int e = 0; e < KF_VEC; e++) kf_tot = KF_COMB(kf_tot, a[kf_v][e]);
#else
      // ---- scan: in each vector, across the lanes per slice, across warps
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++)
#pragma unroll
        for (int e = 1; e < KF_VEC; e++) a[kf_v][e] = KF_COMB(a[kf_v][e - 1], a[kf_v][e]);
      A pre[KF_NV];
      A wrun = KF_IDENT;
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++) {
        const A s = kf::seg_scan<A, KF_PROD, KF_W>(a[kf_v][KF_VEC - 1], lane);
        A ex = KF_W > 1 ? kf::shfl_up(s, 1, KF_W) : s;
        if (lane == 0) ex = KF_IDENT;
        pre[kf_v] = KF_COMB(wrun, ex);
        wrun = KF_COMB(wrun, KF_W > 1 ? kf::shfl_idx(s, KF_W - 1, KF_W) : s);
      }
      A base = carry;
      if constexpr (KF_NW > 1) {
        if (lane == 0) kf_smem[kf_par][wl] = wrun;
        __syncthreads();
        A before = KF_IDENT, all = KF_IDENT;
#pragma unroll
        for (int w = 0; w < KF_NW; w++) {
          if (w == wl) before = all;
          all = KF_COMB(all, kf_smem[kf_par][w]);
        }
        kf_par ^= 1;
        base = KF_COMB(carry, before);
        carry = KF_COMB(carry, all);
      } else {
        carry = KF_COMB(carry, wrun);
      }
      // ---- the epilogue and the stores
#pragma unroll
      for (int kf_v = 0; kf_v < KF_NV; kf_v++) {
        const I o = (I)((wl * KF_NV + kf_v) * KF_W + lane) * KF_VEC;
        const I kf_pos0 = pt * (I)KF_TILE + (KF_REV ? (I)(KF_TILE - KF_VEC) - o : o);
        const bool kf_whole = kf_al && kf_pos0 + KF_VEC <= (I)KF_LEN;
        const A bp = KF_COMB(base, pre[kf_v]);
        KF_STORES(KF_VDECL)
#pragma unroll
        for (int kf_j = 0; kf_j < KF_VEC; kf_j++) {
          const I kf_pos = kf_pos0 + kf_j;
          (void)kf_pos;
          const int e = KF_REV ? KF_VEC - 1 - kf_j : kf_j;
          const A kf_scan = KF_EXCL ? (e == 0 ? bp : KF_COMB(bp, a[kf_v][e > 0 ? e - 1 : 0]))
                                    : KF_COMB(bp, a[kf_v][e]);
          KF_EPI
        }
        if (kf_whole) {
          KF_STORES(KF_VSTORE)
        }
      }
#endif
    }
#if KF_STAGE == 1
    {
      A kf_t;
      KF_LINE_ALL(kf_tot, kf_t)
      if (valid && tid % KF_TPR == 0) scratch[(I)line * KF_SPLIT + blockIdx.y] = kf_t;
    }
#endif
    (void)carry;
  }
}

#undef KF_W
#undef KF_NW
#undef KF_LPB
#undef KF_TILE
#undef KF_CHECK_L
#undef KF_CHECK_S
#undef KF_DECL_RV
#undef KF_VLOAD
#undef KF_SLOAD
#undef KF_VDECL
#undef KF_VSTORE
#undef KF_LINE_ALL

#else
// ============================================================================
// columns: KF_VEC lines a thread, along the innermost kept dim (_CB: an
// access broadcast across those lines)
#define KF_CHECK_L(k)                                                           \
  kf_al = kf_al && (KF_L##k##_CB || kf::vec_aligned<KF_L##k##_S, KF_VEC>(KF_L##k##_P + kf_lro_##k));
#define KF_CHECK_S(k) kf_al = kf_al && kf::vec_aligned<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf_sro_##k);
#define KF_DECL_RV(k) KF_L##k##_R kf_rv_##k[KF_UNROLL][KF_VEC];
#define KF_CLOAD(k)                                                             \
  if (kf_al) {                                                                  \
    kf::vload<KF_L##k##_CB, KF_L##k##_S, KF_VEC>(kf_rv_##k[u], KF_L##k##_P + kf_lro_##k + kf_pos * (I)kf_lsr_##k); \
  } else {                                                                      \
    _Pragma("unroll") for (int kf_j = 0; kf_j < KF_VEC; kf_j++)                 \
      kf_rv_##k[u][kf_j] = kf::ld<KF_L##k##_R>(KF_L##k##_P + kf_lro_##k + kf_j * (I)kf_lsk_##k[KF_KRANK - 1] + \
                                               kf_pos * (I)kf_lsr_##k);           \
  }
#define KF_VDECL(k) KF_S##k##_R kf_vs_##k[KF_VEC];
#define KF_CSTORE(k)                                                            \
  if (kf_al) {                                                                  \
    kf::vst<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf_sro_##k + kf_pos * (I)kf_ssr_##k, kf_vs_##k); \
  } else {                                                                      \
    _Pragma("unroll") for (int kf_j = 0; kf_j < KF_VEC; kf_j++)                 \
      kf::st(KF_S##k##_P + kf_sro_##k + kf_j * (I)kf_ssk_##k[KF_KRANK - 1] + kf_pos * (I)kf_ssr_##k, kf_vs_##k[kf_j]); \
  }

#define KF_LD(k) kf_rv_##k[u][kf_j]
#define KF_IX(k) (kf_iro_##k + kf_j * (I)kf_isk_##k[KF_KRANK - 1] + kf_pos * (I)kf_isr_##k)
#define KF_ST(k, x) kf_vs_##k[kf_j] = (x);

extern "C" __global__ void __launch_bounds__(KF_BLOCK, KF_MINB) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr long long kshape[KF_KRANK] = {KF_KSHAPE};
  KF_LOADS(KF_DECL_L)
  KF_STORES(KF_DECL_S)
  KF_IDXS(KF_DECL_I)
#if KF_STAGE == 0
  const I q_begin = 0, q_end = (I)KF_LEN;
#else
  A *const scratch = reinterpret_cast<A *>(KF_SCRATCH);
  const I q_begin = (I)blockIdx.y * (I)KF_CHUNK;
  const I q_end = q_begin + (I)KF_CHUNK < (I)KF_LEN ? q_begin + (I)KF_CHUNK : (I)KF_LEN;
#endif
  constexpr long long groups = KF_LINES / KF_VEC;
  for (I g = (I)blockIdx.x * KF_BLOCK + (I)threadIdx.x; g < (I)groups; g += (I)gridDim.x * KF_BLOCK) {
    const I line0 = g * KF_VEC;
    I kc[KF_KRANK];
    kf::unravel(line0, kshape, kc);
    KF_LOADS(KF_LINEOFF_L)
    KF_STORES(KF_LINEOFF_S)
    KF_IDXS(KF_LINEOFF_I)
    bool kf_al = KF_VEC > 1;
#if KF_VEC > 1
    KF_LOADS(KF_CHECK_L)
    KF_STORES(KF_CHECK_S)
#endif
    A carry[KF_VEC];
#pragma unroll
    for (int kf_j = 0; kf_j < KF_VEC; kf_j++) {
      carry[kf_j] = KF_IDENT;
#if KF_STAGE == 2
      for (int c = 0; c < (int)blockIdx.y; c++)
        carry[kf_j] = KF_COMB(carry[kf_j], scratch[(line0 + kf_j) * KF_SPLIT + c]);
#endif
    }
    for (I q0 = q_begin; q0 < q_end; q0 += KF_UNROLL) {
      KF_LOADS(KF_DECL_RV)
#pragma unroll
      for (int u = 0; u < KF_UNROLL; u++) {
        const I q = q0 + u;
        const I kf_pos = KF_REV ? (I)KF_LEN - 1 - q : q;
        if (q < q_end) {
          KF_LOADS(KF_CLOAD)
        }
      }
#pragma unroll
      for (int u = 0; u < KF_UNROLL; u++) {
        const I q = q0 + u;
        const I kf_pos = KF_REV ? (I)KF_LEN - 1 - q : q;
        if (q < q_end) {
          KF_STORES(KF_VDECL)
#pragma unroll
          for (int kf_j = 0; kf_j < KF_VEC; kf_j++) {
            A kf_y = KF_IDENT;
#define KF_YIELD(x) kf_y = (A)(x)
            KF_PRO
#undef KF_YIELD
#if KF_STAGE == 1
            carry[kf_j] = KF_COMB(carry[kf_j], kf_y);
#else
            const A kf_before = carry[kf_j];
            carry[kf_j] = KF_COMB(carry[kf_j], kf_y);
            const A kf_scan = KF_EXCL ? kf_before : carry[kf_j];
            KF_EPI
#endif
          }
#if KF_STAGE != 1
          KF_STORES(KF_CSTORE)
#endif
        }
      }
    }
#if KF_STAGE == 1
#pragma unroll
    for (int kf_j = 0; kf_j < KF_VEC; kf_j++) scratch[(line0 + kf_j) * KF_SPLIT + blockIdx.y] = carry[kf_j];
#endif
  }
}

#undef KF_CHECK_L
#undef KF_CHECK_S
#undef KF_DECL_RV
#undef KF_CLOAD
#undef KF_VDECL
#undef KF_CSTORE
#endif

#undef KF_DECL_L
#undef KF_DECL_S
#undef KF_DECL_I
#undef KF_LINEOFF_L
#undef KF_LINEOFF_S
#undef KF_LINEOFF_I
#undef KF_UNROLL
#undef KF_IDENT
#undef KF_SCAN
#undef KF_COMB
#undef KF_LD
#undef KF_IX
#undef KF_ST
#undef KF_MINB
#undef KF_OCC
