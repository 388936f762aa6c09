// elementwise.cu — one kernel computing every output of an element-wise
// group over one iteration shape.
//
// Parameterised by the prelude agent/builtin_ew.c writes:
//   KF_KERNEL, KF_PARAMS      entry name and parameter list
//   KF_INDEX                  int when every offset fits, else long long
//   KF_RANK, KF_SHAPE, KF_NUMEL   the (coalesced) iteration shape
//   KF_BLOCK, KF_VEC          threads per block; elements per thread and
//                             step on the vector path (1: no vector path)
//   KF_LOADS(X), KF_STORES(X), KF_IDXS(X)   the accesses, X(k) each:
//     KF_L<k>_S storage type, KF_L<k>_R register type, KF_L<k>_P pointer,
//     KF_L<k>_ST strides over the iteration shape, KF_L<k>_B 1 when the
//     innermost stride is 0 (broadcast along the vector); KF_S<k>_S, KF_S<k>_R, KF_S<k>_P,
//     KF_S<k>_ST for stores; KF_I<k>_ST for virtual index operands (arange)
//   KF_BODY                   statements computing one element from
//                             KF_LD(k), KF_IX(k), storing with KF_ST(k, v);
//                             on the generic path also the coordinates c[]
//                             and linear index i, and KF_LDX(k, offset)
//                             (gathers: pad, cat, index ops, reshape copies)
//
// The vector path (every access walks the innermost dim with stride 1 or
// broadcasts along it, checked aligned at run time) moves up to 16 bytes
// per access and step; otherwise each element's offsets come from its
// coordinates, with divisions by compile-time constants. Grid-stride loops:
// any grid size is correct; the policy picks one that fills the GPU.
#include "kf_common.cuh"
#include "kf_ops.cuh"

#define KF_DECL_LST(k) constexpr long long kf_lst_##k[KF_RANK] = {KF_L##k##_ST};
#define KF_DECL_SST(k) constexpr long long kf_sst_##k[KF_RANK] = {KF_S##k##_ST};
#define KF_DECL_IST(k) constexpr long long kf_ist_##k[KF_RANK] = {KF_I##k##_ST};
#define KF_CHECK_L(k) aligned = aligned && (KF_L##k##_B || kf::vec_aligned<KF_L##k##_S, KF_VEC>(KF_L##k##_P));
#define KF_CHECK_S(k) aligned = aligned && kf::vec_aligned<KF_S##k##_S, KF_VEC>(KF_S##k##_P);
#define KF_VLOAD(k)                                                             \
  KF_L##k##_R kf_vl_##k[KF_VEC];                                                \
  kf::vload<KF_L##k##_B, KF_L##k##_S, KF_VEC>(kf_vl_##k, KF_L##k##_P + kf::dot(c, kf_lst_##k));
#define KF_VDECL(k) KF_S##k##_R kf_vs_##k[KF_VEC];
#define KF_VSTORE(k) kf::vst<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf::dot(c, kf_sst_##k), kf_vs_##k);
#define KF_VLOADU(k)                                                            \
  KF_L##k##_R kf_vu_##k[KF_UNROLL][KF_VEC];                                     \
  for (int u = 0; u < KF_UNROLL; u++)                                           \
    kf::vload<KF_L##k##_B, KF_L##k##_S, KF_VEC>(kf_vu_##k[u], KF_L##k##_P + kf::dot(cu[u], kf_lst_##k));
#define KF_VSTOREU(k) kf::vst<KF_S##k##_S, KF_VEC>(KF_S##k##_P + kf::dot(cu[u], kf_sst_##k), kf_vs_##k);
// vectors a thread loads before its first store (the unrolled steps)
#ifndef KF_UNROLL
#define KF_UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  constexpr long long shape[KF_RANK] = {KF_SHAPE};
  KF_LOADS(KF_DECL_LST)
  KF_STORES(KF_DECL_SST)
  KF_IDXS(KF_DECL_IST)
  const I nthreads = (I)gridDim.x * KF_BLOCK;
  const I tid = (I)blockIdx.x * KF_BLOCK + (I)threadIdx.x;
  I start = tid;

#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf::dot(c, kf_lst_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf::dot(c, kf_sst_##k), (v))
#define KF_IX(k) kf::dot(c, kf_ist_##k)
// gathers (agent/builtin_opaque.c): load k at an explicit element offset
#define KF_LDX(k, off) kf::ld<KF_L##k##_R>(KF_L##k##_P + (off))
#define KF_GENERIC_LOOP                                                          \
  for (I i = start; i < (I)KF_NUMEL; i += nthreads) {                            \
    I c[KF_RANK];                                                                \
    kf::unravel(i, shape, c);                                                    \
    KF_BODY                                                                      \
  }

#if KF_VEC > 1
  bool aligned = true;
  KF_LOADS(KF_CHECK_L)
  KF_STORES(KF_CHECK_S)
  if (aligned) {
    // KF_VEC consecutive elements along the innermost dim per step: every
    // access walks it with stride 1 (vector) or 0 (broadcast, KF_L<k>_B).
    // While a thread has KF_UNROLL vectors left, it issues all their loads
    // before the first store (more bytes in flight per thread), then
    // finishes one vector per step.
    I v = tid;
#if KF_UNROLL > 1
    for (; v + (I)(KF_UNROLL - 1) * nthreads < (I)(KF_NUMEL / KF_VEC); v += (I)KF_UNROLL * nthreads) {
      I cu[KF_UNROLL][KF_RANK];
#pragma unroll
      for (int u = 0; u < KF_UNROLL; u++) kf::unravel((v + (I)u * nthreads) * (I)KF_VEC, shape, cu[u]);
      KF_LOADS(KF_VLOADU)
#pragma unroll
      for (int u = 0; u < KF_UNROLL; u++) {
        KF_STORES(KF_VDECL)
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf_vu_##k[u][j]
#define KF_ST(k, v) kf_vs_##k[j] = (v)
#pragma unroll
        for (int j = 0; j < KF_VEC; j++) {
          KF_BODY
        }
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf::dot(c, kf_lst_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf::dot(c, kf_sst_##k), (v))
        KF_STORES(KF_VSTOREU)
      }
    }
#endif
    for (; v < (I)(KF_NUMEL / KF_VEC); v += nthreads) {
      I c[KF_RANK];
      kf::unravel(v * (I)KF_VEC, shape, c);
      KF_LOADS(KF_VLOAD)
      KF_STORES(KF_VDECL)
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf_vl_##k[j]
#define KF_ST(k, v) kf_vs_##k[j] = (v)
#pragma unroll
      for (int j = 0; j < KF_VEC; j++) {
        KF_BODY
      }
#undef KF_LD
#undef KF_ST
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf::dot(c, kf_lst_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf::dot(c, kf_sst_##k), (v))
      KF_STORES(KF_VSTORE)
    }
    // the tail (a rank-1 loop whose length is not a multiple of KF_VEC)
    start = (I)(KF_NUMEL / KF_VEC * KF_VEC) + tid;
  }
#endif
  KF_GENERIC_LOOP
}

#undef KF_LD
#undef KF_ST
#undef KF_IX
#undef KF_LDX
#undef KF_GENERIC_LOOP
#undef KF_DECL_LST
#undef KF_DECL_SST
#undef KF_DECL_IST
#undef KF_CHECK_L
#undef KF_CHECK_S
#undef KF_VLOAD
#undef KF_VDECL
#undef KF_VSTORE
#undef KF_VLOADU
#undef KF_VSTOREU
#undef KF_UNROLL
