// scan.cu — cumsum along one dim: a warp per row, 32 elements per step
// with a warp-shuffle inclusive scan and the running total carried to the
// next step. Accumulates in KF_ACC (float for f32/f16/bf16, int64 for
// integers, as ATen's scan does).
//
// Prelude (agent/builtin_opaque.c): KF_ROWS rows over the kept dims
// KF_KRANK/KF_KSHAPE, row length KF_LEN; strides of input and output over
// the kept dims (KF_XSK, KF_YSK) and along the row (KF_XSL, KF_YSL);
// storage types KF_XS, KF_YS; pointers KF_X, KF_Y.
#include "kf_common.cuh"

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr long long kshape[KF_KRANK] = {KF_KSHAPE};
  constexpr long long xsk[KF_KRANK] = {KF_XSK}, ysk[KF_KRANK] = {KF_YSK};
  const int lane = (int)threadIdx.x % 32;
  const I warp = ((I)blockIdx.x * KF_BLOCK + (I)threadIdx.x) / 32;
  const I nwarps = (I)gridDim.x * (KF_BLOCK / 32);
  for (I row = warp; row < (I)KF_ROWS; row += nwarps) {
    const I xo = kf::offset_of(row, kshape, xsk), yo = kf::offset_of(row, kshape, ysk);
    A carry = A(0);
    for (I base = 0; base < (I)KF_LEN; base += 32) {
      const I j = base + lane;
      A v = j < (I)KF_LEN ? kf::ld<A>(KF_X + xo + j * (I)KF_XSL) : A(0);
#pragma unroll
      for (int m = 1; m < 32; m *= 2) {
        const A t = kf::shfl_up(v, m);
        if (lane >= m) v += t;
      }
      v += carry;
      if (j < (I)KF_LEN) kf::st(KF_Y + yo + j * (I)KF_YSL, v);
      carry = kf::shfl_idx(v, 31);
    }
  }
}
