// conv.cu — direct N-d convolution (1-3 spatial dims, any stride, padding,
// dilation and groups, transposed too), one thread per output element,
// accumulating in KF_ACC, with the group's element-wise epilogue applied
// before the store. The straightforward per-op lowering: correct for every
// shape, not fast; a library step (cuDNN) is the fast path.
//
// Prelude (agent/builtin_conv.c): KF_RANK/KF_SHAPE/KF_NUMEL the output
// [N, Cout, spatial...]; KF_XST (x strides of N, C and three spatial dims,
// padded with 0), KF_WST (weight strides of its two leading dims and three
// kernel dims), KF_IN, KF_K, KF_S, KF_P, KF_D, KF_OUT (spatial, padded to
// three with 1 / 0), KF_CING input channels per group, KF_COG output
// channels per group, KF_TRANSPOSED; KF_X, KF_W, KF_B (when KF_HAS_BIAS,
// stride KF_BST) with storage types KF_XS, KF_WS, KF_BS; the epilogue
// KF_BODY over the output coordinates c[] with KF_CONV the convolution's
// value, KF_LD(k) / KF_ST(k, v) as in elementwise.cu. KF_TF32_OPERANDS:
// fp32 operands rounded to TF32 before the product (the module check's
// reference for a module whose convolutions may use TF32).
#include "kf_common.cuh"
#include "kf_ops.cuh"

#define KF_DECL_LST(k) constexpr long long kf_lst_##k[KF_RANK] = {KF_L##k##_ST};
#define KF_DECL_SST(k) constexpr long long kf_sst_##k[KF_RANK] = {KF_S##k##_ST};
#define KF_LD(k) kf::ld<KF_L##k##_R>(KF_L##k##_P + kf::dot(c, kf_lst_##k))
#define KF_ST(k, v) kf::st(KF_S##k##_P + kf::dot(c, kf_sst_##k), (v))
#define KF_CONV kf_acc
#if KF_TF32_OPERANDS
#define KF_OPND(p) kf::cvt<A>(kf::tf32(*(p)))
#else
#define KF_OPND(p) kf::ld<A>(p)
#endif

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr long long shape[KF_RANK] = {KF_SHAPE};
  constexpr long long XST[5] = {KF_XST}, WST[5] = {KF_WST};
  constexpr long long IN[3] = {KF_IN}, K[3] = {KF_K}, S[3] = {KF_S}, P[3] = {KF_P}, D[3] = {KF_D};
  constexpr long long OUT[3] = {KF_OUT};
  KF_LOADS(KF_DECL_LST)
  KF_STORES(KF_DECL_SST)
  const I nthreads = (I)gridDim.x * KF_BLOCK;
  for (I i = (I)blockIdx.x * KF_BLOCK + (I)threadIdx.x; i < (I)KF_NUMEL; i += nthreads) {
    I c[KF_RANK];
    kf::unravel(i, shape, c);
    const I n = c[0], co = c[1];
    const I sp = i % (I)(OUT[0] * OUT[1] * OUT[2]);
    const I oc[3] = {sp / (I)(OUT[1] * OUT[2]), (sp / (I)OUT[2]) % (I)OUT[1], sp % (I)OUT[2]};
    const I grp = co / (I)KF_COG;
    const I ci0 = grp * (I)KF_CING;
    A kf_acc = A(0);
    const KF_XS *xb = KF_X + n * (I)XST[0];
#if !KF_TRANSPOSED
    const KF_WS *wb = KF_W + co * (I)WST[0];
    for (I ci = 0; ci < (I)KF_CING; ci++) {
      const KF_XS *xc = xb + (ci0 + ci) * (I)XST[1];
      const KF_WS *wc = wb + ci * (I)WST[1];
      for (I k0 = 0; k0 < (I)K[0]; k0++) {
        const I i0 = oc[0] * (I)S[0] - (I)P[0] + k0 * (I)D[0];
        if (i0 < 0 || i0 >= (I)IN[0]) continue;
        for (I k1 = 0; k1 < (I)K[1]; k1++) {
          const I i1 = oc[1] * (I)S[1] - (I)P[1] + k1 * (I)D[1];
          if (i1 < 0 || i1 >= (I)IN[1]) continue;
#pragma unroll 4
          for (I k2 = 0; k2 < (I)K[2]; k2++) {
            const I i2 = oc[2] * (I)S[2] - (I)P[2] + k2 * (I)D[2];
            if (i2 < 0 || i2 >= (I)IN[2]) continue;
            kf_acc += KF_OPND(xc + i0 * (I)XST[2] + i1 * (I)XST[3] + i2 * (I)XST[4]) *
                      KF_OPND(wc + k0 * (I)WST[2] + k1 * (I)WST[3] + k2 * (I)WST[4]);
          }
        }
      }
    }
#else
    // transposed: output o gathers input i where i * S - P + k * D == o
    const I col = co % (I)KF_COG;
    for (I ci = 0; ci < (I)KF_CING; ci++) {
      const KF_XS *xc = xb + (ci0 + ci) * (I)XST[1];
      const KF_WS *wc = KF_W + (ci0 + ci) * (I)WST[0] + col * (I)WST[1];
      for (I k0 = 0; k0 < (I)K[0]; k0++) {
        const I t0 = oc[0] + (I)P[0] - k0 * (I)D[0];
        if (t0 < 0 || t0 % (I)S[0]) continue;
        const I i0 = t0 / (I)S[0];
        if (i0 >= (I)IN[0]) continue;
        for (I k1 = 0; k1 < (I)K[1]; k1++) {
          const I t1 = oc[1] + (I)P[1] - k1 * (I)D[1];
          if (t1 < 0 || t1 % (I)S[1]) continue;
          const I i1 = t1 / (I)S[1];
          if (i1 >= (I)IN[1]) continue;
          for (I k2 = 0; k2 < (I)K[2]; k2++) {
            const I t2 = oc[2] + (I)P[2] - k2 * (I)D[2];
            if (t2 < 0 || t2 % (I)S[2]) continue;
            const I i2 = t2 / (I)S[2];
            if (i2 >= (I)IN[2]) continue;
            kf_acc += KF_OPND(xc + i0 * (I)XST[2] + i1 * (I)XST[3] + i2 * (I)XST[4]) *
                      KF_OPND(wc + k0 * (I)WST[2] + k1 * (I)WST[3] + k2 * (I)WST[4]);
          }
        }
      }
    }
#endif
#if KF_HAS_BIAS
    kf_acc += kf::ld<A>(KF_B + co * (I)KF_BST);
#endif
    KF_BODY
  }
}

#undef KF_DECL_LST
#undef KF_DECL_SST
#undef KF_LD
#undef KF_ST
#undef KF_CONV
#undef KF_OPND
