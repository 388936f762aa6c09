// transpose.cu — a layout change as a batched transpose: y[b][s][r] =
// x[b][r][s] for x contiguous as [KF_B, KF_R, KF_S] and y contiguous as
// [KF_B, KF_S, KF_R]. NCHW -> NHWC is R = C, S = H * W; NHWC -> NCHW is
// R = H * W, S = C (pass/layout.c's copies). 32 x 32 tiles pass through
// shared memory (one padding column against bank conflicts), so reads run
// along s and writes along r, both coalesced; 256 threads a tile, each
// moving 4 elements.
//
// Prelude (agent/builtin_opaque.c): KF_T the element type, KF_X and KF_Y
// the pointers, KF_INDEX the index type. Grid: (ceil(S / 32), ceil(R / 32),
// B).
#include "kf_common.cuh"

extern "C" __global__ void __launch_bounds__(256) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  __shared__ KF_T tile[32][33];
  const I b = (I)blockIdx.z;
  const I r0 = (I)blockIdx.y * 32, s0 = (I)blockIdx.x * 32;
  const KF_T *x = KF_X + b * ((I)KF_R * (I)KF_S);
  KF_T *y = KF_Y + b * ((I)KF_R * (I)KF_S);
  const int tx = (int)threadIdx.x % 32, ty = (int)threadIdx.x / 32;
#pragma unroll
  for (int k = ty; k < 32; k += 8) {
    const I r = r0 + k, s = s0 + tx;
    if (r < (I)KF_R && s < (I)KF_S) tile[k][tx] = x[r * (I)KF_S + s];
  }
  __syncthreads();
#pragma unroll
  for (int k = ty; k < 32; k += 8) {
    const I s = s0 + k, r = r0 + tx;
    if (s < (I)KF_S && r < (I)KF_R) y[s * (I)KF_R + r] = tile[tx][k];
  }
}
