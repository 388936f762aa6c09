// pool.cu — max_pool (values and flat indices), avg_pool and
// adaptive_avg_pool over the last 1-3 dims, one thread per output element.
//
// Prelude (agent/builtin_opaque.c): KF_MODE 0 max, 1 avg, 2 adaptive avg;
// the input's leading dims KF_LRANK/KF_LSHAPE/KF_LST (planes, any strides)
// and spatial dims padded to three: KF_IN, KF_IST, KF_OUT, KF_K, KF_S, KF_P,
// KF_D; KF_CIP (count_include_pad), KF_DIV (divisor override, 0: none);
// KF_SMALLK: 1 the window (max and avg pools) is small enough to unroll,
// 2 its innermost dim is, 0 neither;
// KF_XS/KF_YS storage types, KF_ACC the accumulate type; KF_X, KF_Y,
// KF_YI (indices, when KF_HAS_IDX) the pointers. Outputs are contiguous.
//
// Conventions are ATen's: max pool windows start at the first in-bounds
// position with -inf and NaN replaces the maximum whenever seen, indices
// are flat within the input plane; avg pool divides by the window clipped
// to the padded input (count_include_pad) or to the input, or by divisor.
#include "kf_common.cuh"
#include "kf_reduce.cuh"

extern "C" __global__ void __launch_bounds__(KF_BLOCK) KF_KERNEL(KF_PARAMS) {
  typedef KF_INDEX I;
  typedef KF_ACC A;
  constexpr long long lshape[KF_LRANK] = {KF_LSHAPE};
  constexpr long long lst[KF_LRANK] = {KF_LST};
  constexpr long long IN[3] = {KF_IN}, IST[3] = {KF_IST}, OUT[3] = {KF_OUT};
  constexpr long long K[3] = {KF_K}, S[3] = {KF_S}, P[3] = {KF_P}, D[3] = {KF_D};
  constexpr I OUTSZ = (I)(OUT[0] * OUT[1] * OUT[2]);
  constexpr I TOTAL = (I)KF_PLANES * OUTSZ;
  (void)K; (void)S; (void)P; (void)D;
  const I nthreads = (I)gridDim.x * KF_BLOCK;
  for (I o = (I)blockIdx.x * KF_BLOCK + (I)threadIdx.x; o < TOTAL; o += nthreads) {
    const I plane = o / OUTSZ, sp = o % OUTSZ;
    const I oc[3] = {sp / (I)(OUT[1] * OUT[2]), (sp / (I)OUT[2]) % (I)OUT[1], sp % (I)OUT[2]};
    const KF_XS *x = KF_X + kf::offset_of(plane, lshape, lst);
#if KF_MODE == 0
    I lo[3], hi[3];
#pragma unroll
    for (int d = 0; d < 3; d++) {
      I start = oc[d] * (I)S[d] - (I)P[d];
      lo[d] = start;
      while (lo[d] < 0) lo[d] += (I)D[d];
      hi[d] = start + (I)((K[d] - 1) * D[d]) + 1;
      if (hi[d] > (I)IN[d]) hi[d] = (I)IN[d];
    }
    A best = kf::lowest_<A>();
    long long besti = (long long)((lo[0] * (I)IN[1] + lo[1]) * (I)IN[2] + lo[2]);
#if KF_SMALLK == 1
    // the window unrolled: every in-bounds load issued at once (the
    // runtime-bounded loops below leave one load in flight a thread),
    // visited in the same order, so the same maximum and index win
    const I st0 = oc[0] * (I)S[0] - (I)P[0], st1 = oc[1] * (I)S[1] - (I)P[1], st2 = oc[2] * (I)S[2] - (I)P[2];
#pragma unroll
    for (int k0 = 0; k0 < (int)K[0]; k0++)
#pragma unroll
      for (int k1 = 0; k1 < (int)K[1]; k1++)
#pragma unroll
        for (int k2 = 0; k2 < (int)K[2]; k2++) {
          const I i0 = st0 + (I)k0 * (I)D[0], i1 = st1 + (I)k1 * (I)D[1], i2 = st2 + (I)k2 * (I)D[2];
          const bool in = i0 >= 0 && i0 < (I)IN[0] && i1 >= 0 && i1 < (I)IN[1] && i2 >= 0 && i2 < (I)IN[2];
          const A v = in ? kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]) : best;
          if (in && (v > best || kf::isnan_(v))) {
            best = v;
            besti = (long long)((i0 * (I)IN[1] + i1) * (I)IN[2] + i2);
          }
        }
#elif KF_SMALLK == 2
    // a large window: its innermost dim unrolled, the same order
    const I st2 = oc[2] * (I)S[2] - (I)P[2];
    for (I i0 = lo[0]; i0 < hi[0]; i0 += (I)D[0])
      for (I i1 = lo[1]; i1 < hi[1]; i1 += (I)D[1])
#pragma unroll
        for (int k2 = 0; k2 < (int)K[2]; k2++) {
          const I i2 = st2 + (I)k2 * (I)D[2];
          const bool in = i2 >= 0 && i2 < (I)IN[2];
          const A v = in ? kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]) : best;
          if (in && (v > best || kf::isnan_(v))) {
            best = v;
            besti = (long long)((i0 * (I)IN[1] + i1) * (I)IN[2] + i2);
          }
        }
#else
    for (I i0 = lo[0]; i0 < hi[0]; i0 += (I)D[0])
      for (I i1 = lo[1]; i1 < hi[1]; i1 += (I)D[1])
        for (I i2 = lo[2]; i2 < hi[2]; i2 += (I)D[2]) {
          const A v = kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]);
          if (v > best || kf::isnan_(v)) {
            best = v;
            besti = (long long)((i0 * (I)IN[1] + i1) * (I)IN[2] + i2);
          }
        }
#endif
    kf::st(KF_Y + o, best);
#if KF_HAS_IDX
    KF_YI[o] = besti;
#endif
#elif KF_MODE == 1
    I lo[3], hi[3];
    long long pool_size = 1, count = 1;
    bool empty = false;
#pragma unroll
    for (int d = 0; d < 3; d++) {
      lo[d] = oc[d] * (I)S[d] - (I)P[d];
      hi[d] = lo[d] + (I)K[d];
      if (hi[d] > (I)(IN[d] + P[d])) hi[d] = (I)(IN[d] + P[d]);
      pool_size *= (long long)(hi[d] - lo[d]);
      if (lo[d] < 0) lo[d] = 0;
      if (hi[d] > (I)IN[d]) hi[d] = (I)IN[d];
      if (lo[d] >= hi[d]) empty = true;
      count *= (long long)(hi[d] - lo[d]);
    }
    A sum = A(0);
#if KF_SMALLK == 1
    // unrolled as max pool's window: the same elements added in the same order
    const I st0 = oc[0] * (I)S[0] - (I)P[0], st1 = oc[1] * (I)S[1] - (I)P[1], st2 = oc[2] * (I)S[2] - (I)P[2];
#pragma unroll
    for (int k0 = 0; k0 < (int)K[0]; k0++)
#pragma unroll
      for (int k1 = 0; k1 < (int)K[1]; k1++)
#pragma unroll
        for (int k2 = 0; k2 < (int)K[2]; k2++) {
          const I i0 = st0 + (I)k0, i1 = st1 + (I)k1, i2 = st2 + (I)k2;
          if (i0 >= 0 && i0 < (I)IN[0] && i1 >= 0 && i1 < (I)IN[1] && i2 >= 0 && i2 < (I)IN[2])
            sum += kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]);
        }
#elif KF_SMALLK == 2
    const I st2 = oc[2] * (I)S[2] - (I)P[2];
    if (!empty)
      for (I i0 = lo[0]; i0 < hi[0]; i0++)
        for (I i1 = lo[1]; i1 < hi[1]; i1++)
#pragma unroll
          for (int k2 = 0; k2 < (int)K[2]; k2++) {
            const I i2 = st2 + (I)k2;
            if (i2 >= 0 && i2 < (I)IN[2]) sum += kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]);
          }
#else
    if (!empty)
      for (I i0 = lo[0]; i0 < hi[0]; i0++)
        for (I i1 = lo[1]; i1 < hi[1]; i1++)
          for (I i2 = lo[2]; i2 < hi[2]; i2++)
            sum += kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]);
#endif
    const long long div = KF_DIV ? (long long)KF_DIV : KF_CIP ? pool_size : count;
    kf::st(KF_Y + o, empty ? A(0) : sum / (A)div);
#else
    I lo[3], hi[3];
    long long count = 1;
#pragma unroll
    for (int d = 0; d < 3; d++) {
      lo[d] = (I)((long long)oc[d] * IN[d] / OUT[d]);
      hi[d] = (I)(((long long)(oc[d] + 1) * IN[d] + OUT[d] - 1) / OUT[d]);
      count *= (long long)(hi[d] - lo[d]);
    }
    A sum = A(0);
    for (I i0 = lo[0]; i0 < hi[0]; i0++)
      for (I i1 = lo[1]; i1 < hi[1]; i1++)
        for (I i2 = lo[2]; i2 < hi[2]; i2++)
          sum += kf::ld<A>(x + i0 * (I)IST[0] + i1 * (I)IST[1] + i2 * (I)IST[2]);
    kf::st(KF_Y + o, sum / (A)count);
#endif
  }
}
