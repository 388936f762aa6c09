/* interp/nn.c — matrix products, convolution, pooling, upsampling and
 * attention in the CPU reference interpreter.
 *
 * Written as the textbook loops over output elements, with PyTorch's
 * conventions where they are not obvious: max-pool indices are flat within
 * each (spatial) plane, padded positions never win a max, avg-pool windows
 * are clipped the way ATen's CPU kernels clip them, and causal attention
 * keeps the top-left aligned lower triangle. Products whose multiply-add
 * count exceeds KI_MAX_MACS are refused so that CI cannot hang. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

/* ---- mm, bmm, addmm ---------------------------------------------------------- */

static kf_status run_matmul(ki_ctx *c) {
  const kf_op *op = c->op;
  int base = op->code == KF_OP_ADDMM ? 1 : 0;
  const ki_val *a = ki_arg(c, base), *b = ki_arg(c, base + 1);
  ki_val *r = ki_res(c, 0);
  int64_t B = op->code == KF_OP_BMM ? a->shape[0] : 1;
  int64_t M = a->shape[a->rank - 2], K = a->shape[a->rank - 1], N = b->shape[b->rank - 1];
  kf_status st = ki_check_macs(c, (double)B * M * N * K);
  if (st) return st;
  double alpha = 1, beta = 0;
  const ki_val *bias = NULL;
  int64_t bst[2] = {0, 0};
  if (op->code == KF_OP_ADDMM) {
    alpha = kf_number_as_double(kf_op_get_number(op, "alpha"));
    beta = kf_number_as_double(kf_op_get_number(op, "beta"));
    bias = ki_arg(c, 0);
    ki_bcast_strides(bias->rank, bias->shape, 2, bst);
  }
  for (int64_t bb = 0; bb < B; bb++) {
    const double *A = a->d + bb * M * K, *Bm = b->d + bb * K * N;
    double *R = r->d + bb * M * N;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) s += A[i * K + k] * Bm[k * N + j];
        if (bias) {
          /* beta == 0 ignores the bias entirely (NaNs included), as ATen does */
          s *= alpha;
          if (beta != 0) s += beta * bias->d[i * bst[0] + j * bst[1]];
        }
        R[i * N + j] = s;
      }
  }
  return KF_OK;
}

/* ---- convolution ---------------------------------------------------------------- */

static kf_status run_conv(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *x = ki_arg(c, 0), *w = ki_arg(c, 1), *bias = ki_arg(c, 2);
  ki_val *r = ki_res(c, 0);
  int n;
  const int64_t *st_ = kf_op_get_ints(op, "stride", &n);
  const int64_t *pd_ = kf_op_get_ints(op, "padding", &n);
  const int64_t *dl_ = kf_op_get_ints(op, "dilation", &n);
  bool tr = kf_op_get_bool(op, "transposed");
  int64_t G = kf_op_get_int(op, "groups");
  int sp = x->rank - 2;
  /* Pad everything to three spatial dims of size 1. */
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  for (int i = 0; i < sp; i++) {
    int j = 3 - sp + i;
    in[j] = x->shape[2 + i];
    out[j] = r->shape[2 + i];
    k[j] = w->shape[2 + i];
    s[j] = st_[i];
    p[j] = pd_[i];
    d[j] = dl_[i];
  }
  int64_t N = x->shape[0], Cin = x->shape[1], Cout = r->shape[1];
  int64_t cin_g = Cin / G, cout_g = Cout / G, ksz = k[0] * k[1] * k[2];
  int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
  double macs = tr ? (double)N * Cin * isz * cout_g * ksz : (double)N * Cout * osz * cin_g * ksz;
  kf_status st = ki_check_macs(c, macs);
  if (st) return st;
  for (int64_t e = 0; e < r->n; e++) r->d[e] = bias ? bias->d[(e / osz) % Cout] : 0.0;
  for (int64_t b = 0; b < N; b++)
    for (int64_t g = 0; g < G; g++) {
      if (!tr) {
        /* out[b, oc, o] += x[b, ic, o * s - p + kk * d] * w[oc, ic - g*cin_g, kk] */
        for (int64_t oc = g * cout_g; oc < (g + 1) * cout_g; oc++)
          for (int64_t o0 = 0; o0 < out[0]; o0++)
            for (int64_t o1 = 0; o1 < out[1]; o1++)
              for (int64_t o2 = 0; o2 < out[2]; o2++) {
                double acc = 0;
                for (int64_t ic = 0; ic < cin_g; ic++)
                  for (int64_t k0 = 0; k0 < k[0]; k0++) {
                    int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
                    if (i0 < 0 || i0 >= in[0]) continue;
                    for (int64_t k1 = 0; k1 < k[1]; k1++) {
                      int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
                      if (i1 < 0 || i1 >= in[1]) continue;
                      for (int64_t k2 = 0; k2 < k[2]; k2++) {
                        int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                        if (i2 < 0 || i2 >= in[2]) continue;
                        double xv = x->d[((b * Cin + g * cin_g + ic) * in[0] + i0) * in[1] * in[2] +
                                         i1 * in[2] + i2];
                        double wv = w->d[((oc * cin_g + ic) * k[0] + k0) * k[1] * k[2] +
                                         k1 * k[2] + k2];
                        acc += xv * wv;
                      }
                    }
                  }
                r->d[((b * Cout + oc) * out[0] + o0) * out[1] * out[2] + o1 * out[2] + o2] += acc;
              }
      } else {
        /* transposed: x[b, ic, i] scatters into out[b, g*cout_g + oc,
         * i * s - p + kk * d] with weight w[ic, oc, kk] */
        for (int64_t ic = g * cin_g; ic < (g + 1) * cin_g; ic++)
          for (int64_t i0 = 0; i0 < in[0]; i0++)
            for (int64_t i1 = 0; i1 < in[1]; i1++)
              for (int64_t i2 = 0; i2 < in[2]; i2++) {
                double xv = x->d[((b * Cin + ic) * in[0] + i0) * in[1] * in[2] + i1 * in[2] + i2];
                for (int64_t oc = 0; oc < cout_g; oc++)
                  for (int64_t k0 = 0; k0 < k[0]; k0++) {
                    int64_t o0 = i0 * s[0] - p[0] + k0 * d[0];
                    if (o0 < 0 || o0 >= out[0]) continue;
                    for (int64_t k1 = 0; k1 < k[1]; k1++) {
                      int64_t o1 = i1 * s[1] - p[1] + k1 * d[1];
                      if (o1 < 0 || o1 >= out[1]) continue;
                      for (int64_t k2 = 0; k2 < k[2]; k2++) {
                        int64_t o2 = i2 * s[2] - p[2] + k2 * d[2];
                        if (o2 < 0 || o2 >= out[2]) continue;
                        double wv = w->d[((ic * cout_g + oc) * k[0] + k0) * k[1] * k[2] +
                                         k1 * k[2] + k2];
                        r->d[((b * Cout + g * cout_g + oc) * out[0] + o0) * out[1] * out[2] +
                             o1 * out[2] + o2] += xv * wv;
                      }
                    }
                  }
              }
      }
    }
  return KF_OK;
}

/* ---- pooling ------------------------------------------------------------------------ */

/* Pooling sees the input as planes of nk spatial dims; every leading dim
 * (batch, channels, or only channels for unbatched input) indexes planes. */
typedef struct pool_geom {
  int nk;
  int64_t planes;
  int64_t in[3], out[3], in_sz, out_sz;
  int64_t k[3], s[3], p[3], d[3];
} pool_geom;

static void pool_geom_init(ki_ctx *c, const ki_val *x, const ki_val *r, pool_geom *g) {
  int n;
  const int64_t *k = kf_op_get_ints(c->op, "kernel", &n);
  const int64_t *s = kf_op_get_ints(c->op, "stride", &n);
  const int64_t *p = kf_op_get_ints(c->op, "padding", &n);
  const int64_t *d = NULL;
  if (c->op->code == KF_OP_MAX_POOL) d = kf_op_get_ints(c->op, "dilation", &n);
  memset(g, 0, sizeof *g);
  g->nk = n;
  g->planes = 1;
  for (int i = 0; i < x->rank - n; i++) g->planes *= x->shape[i];
  g->in_sz = g->out_sz = 1;
  for (int i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->p[i] = 0;
  }
  for (int i = 0; i < n; i++) {
    int j = 3 - n + i;
    g->in[j] = x->shape[x->rank - n + i];
    g->out[j] = r->shape[r->rank - n + i];
    g->k[j] = k[i];
    g->s[j] = s[i];
    g->p[j] = p[i];
    g->d[j] = d ? d[i] : 1;
  }
  for (int i = 0; i < 3; i++) {
    g->in_sz *= g->in[i];
    g->out_sz *= g->out[i];
  }
}

static kf_status check_pool_cost(ki_ctx *c, const ki_val *r, const pool_geom *g) {
  return ki_check_macs(c, (double)r->n * (double)(g->k[0] * g->k[1] * g->k[2]));
}

static kf_status run_max_pool(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0), *ri = ki_res(c, 1);
  pool_geom g;
  pool_geom_init(c, x, r, &g);
  kf_status st = check_pool_cost(c, r, &g);
  if (st) return st;
  int64_t o = 0;
  for (int64_t pl = 0; pl < g.planes; pl++) {
    const double *xp = x->d + pl * g.in_sz;
    for (int64_t o0 = 0; o0 < g.out[0]; o0++)
      for (int64_t o1 = 0; o1 < g.out[1]; o1++)
        for (int64_t o2 = 0; o2 < g.out[2]; o2++, o++) {
          int64_t o_[3] = {o0, o1, o2}, lo[3], hi[3];
          for (int i = 0; i < 3; i++) {
            /* window positions start + t*d inside [0, in): padding is -inf */
            int64_t start = o_[i] * g.s[i] - g.p[i];
            lo[i] = start;
            while (lo[i] < 0) lo[i] += g.d[i];
            hi[i] = start + (g.k[i] - 1) * g.d[i] + 1;
            if (hi[i] > g.in[i]) hi[i] = g.in[i];
          }
          /* ATen starts from the first in-bounds position with -inf, and a
           * NaN replaces the maximum whenever it is seen. */
          double best = -INFINITY;
          int64_t besti = (lo[0] * g.in[1] + lo[1]) * g.in[2] + lo[2];
          for (int64_t i0 = lo[0]; i0 < hi[0]; i0 += g.d[0])
            for (int64_t i1 = lo[1]; i1 < hi[1]; i1 += g.d[1])
              for (int64_t i2 = lo[2]; i2 < hi[2]; i2 += g.d[2]) {
                int64_t idx = (i0 * g.in[1] + i1) * g.in[2] + i2;
                double v = xp[idx];
                if (v > best || isnan(v)) {
                  best = v;
                  besti = idx;
                }
              }
          r->d[o] = best;
          ri->d[o] = (double)besti;
        }
  }
  return KF_OK;
}

static kf_status run_avg_pool(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  bool cip = kf_op_get_bool(c->op, "count_include_pad");
  bool has_div = kf_op_has_attr(c->op, "divisor");
  int64_t divisor = has_div ? kf_op_get_int(c->op, "divisor") : 0;
  if (has_div && divisor == 0) return ki_fail(c, KF_ERR_INVALID, "divisor must be non-zero");
  pool_geom g;
  pool_geom_init(c, x, r, &g);
  kf_status st = check_pool_cost(c, r, &g);
  if (st) return st;
  int64_t o = 0;
  for (int64_t pl = 0; pl < g.planes; pl++) {
    const double *xp = x->d + pl * g.in_sz;
    for (int64_t o0 = 0; o0 < g.out[0]; o0++)
      for (int64_t o1 = 0; o1 < g.out[1]; o1++)
        for (int64_t o2 = 0; o2 < g.out[2]; o2++, o++) {
          int64_t o_[3] = {o0, o1, o2}, lo[3], hi[3];
          int64_t pool_size = 1, count = 1;
          bool empty = false;
          for (int i = 0; i < 3; i++) {
            /* the window, clipped to the padded input, counts padding;
             * clipped again to the input, it holds the summed elements */
            lo[i] = o_[i] * g.s[i] - g.p[i];
            hi[i] = lo[i] + g.k[i];
            if (hi[i] > g.in[i] + g.p[i]) hi[i] = g.in[i] + g.p[i];
            pool_size *= hi[i] - lo[i];
            if (lo[i] < 0) lo[i] = 0;
            if (hi[i] > g.in[i]) hi[i] = g.in[i];
            if (lo[i] >= hi[i]) empty = true;
            count *= hi[i] - lo[i];
          }
          if (empty) {
            r->d[o] = 0;
            continue;
          }
          double sum = 0;
          for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
            for (int64_t i1 = lo[1]; i1 < hi[1]; i1++)
              for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
                sum += xp[(i0 * g.in[1] + i1) * g.in[2] + i2];
          int64_t div = has_div ? divisor : cip ? pool_size : count;
          r->d[o] = sum / (double)div;
        }
  }
  return KF_OK;
}

/* Every dim is pooled adaptively: a dim whose size is kept gets windows
 * [i, i+1), so leading (batch, channel) dims come out unchanged. */
static kf_status run_adaptive_avg_pool(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  int rank = x->rank;
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_strides(rank, x->shape, cs);
  /* each window spans at most in/out + 2 positions per dim */
  double cost = (double)r->n;
  for (int k = 0; k < rank; k++)
    if (r->shape[k]) cost *= (double)(x->shape[k] / r->shape[k] + 2);
  kf_status st = ki_check_macs(c, cost);
  if (st) return st;
  for (int64_t e = 0; e < r->n; e++) {
    int64_t lo[KF_MAX_RANK], len[KF_MAX_RANK], cnt = 1;
    for (int k = 0; k < rank; k++) {
      int64_t in = x->shape[k], out = r->shape[k];
      lo[k] = idx[k] * in / out;
      int64_t hi = ((idx[k] + 1) * in + out - 1) / out;
      len[k] = hi - lo[k];
      cnt *= len[k];
    }
    double sum = 0;
    int64_t w[KF_MAX_RANK] = {0};
    for (int64_t t = 0; t < cnt; t++) {
      int64_t off = 0;
      for (int k = 0; k < rank; k++) off += (lo[k] + w[k]) * cs[k];
      sum += x->d[off];
      ki_next(rank, len, w);
    }
    r->d[e] = sum / (double)cnt;
    ki_next(rank, r->shape, idx);
  }
  return KF_OK;
}

/* ---- upsample ---------------------------------------------------------------------------- */

/* Keys' cubic convolution with A = -0.75, as ATen's
 * get_cubic_upsample_coefficients: taps at -1, 0, 1, 2 from floor(src). */
static void cubic_weights(double t, double w[4]) {
  const double A = -0.75;
  double x1 = t, x2 = 1.0 - t;
  w[0] = ((A * (x1 + 1.0) - 5.0 * A) * (x1 + 1.0) + 8.0 * A) * (x1 + 1.0) - 4.0 * A;
  w[1] = ((A + 2.0) * x1 - (A + 3.0)) * x1 * x1 + 1.0;
  w[2] = ((A + 2.0) * x2 - (A + 3.0)) * x2 * x2 + 1.0;
  w[3] = ((A * (x2 + 1.0) - 5.0 * A) * (x2 + 1.0) + 8.0 * A) * (x2 + 1.0) - 4.0 * A;
}

/* The taps of output position o along one dim: source indices and
 * weights, *nt of them (1 nearest, 2 linear, 4 cubic). ATen's CPU rules
 * (UpSample.h): nearest in float arithmetic (compute_scales_value<float>,
 * floorf), linear and cubic in the computation type (double here) through
 * area_pixel_compute_scale and area_pixel_compute_source_index. */
static void upsample_taps(const char *mode, bool align, double scale, int64_t in, int64_t out, int64_t o,
                          int64_t *ix, double *w, int *nt) {
  if (strcmp(mode, "nearest") == 0 || strcmp(mode, "nearest-exact") == 0) {
    bool exact = mode[7] == '-';
    float s = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    int64_t j;
    if (!exact && out == in) j = o;
    else if (!exact && out == 2 * in) j = o >> 1;
    else if (!exact) j = (int64_t)floorf((float)o * s);
    else j = (int64_t)floorf((float)(((double)o + 0.5) * (double)s));
    ix[0] = j < in - 1 ? j : in - 1;
    w[0] = 1.0;
    *nt = 1;
    return;
  }
  bool cubic = strcmp(mode, "cubic") == 0;
  double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                    : (scale > 0 ? 1.0 / scale : (double)in / (double)out);
  double src = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
  if (!cubic) {
    *nt = 2;
    if (out == in && !align) {
      ix[0] = ix[1] = o;
      w[0] = 1.0;
      w[1] = 0.0;
      return;
    }
    if (src < 0) src = 0;
    int64_t i0 = (int64_t)src;
    double l1 = src - (double)i0;
    l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;
    ix[0] = i0;
    ix[1] = i0 + (i0 < in - 1 ? 1 : 0);
    w[0] = 1.0 - l1;
    w[1] = l1;
    return;
  }
  *nt = 4;
  int64_t i0 = (int64_t)floor(src);
  if (i0 > in - 1) i0 = in - 1;
  double t = src - (double)i0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  cubic_weights(t, w);
  for (int k = 0; k < 4; k++) {
    int64_t j = i0 - 1 + k;
    ix[k] = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
  }
}

static kf_status run_upsample(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  const char *mode = kf_op_get_str(c->op, "mode");
  bool align = kf_op_get_bool(c->op, "align_corners");
  int ns;
  const double *scales = kf_op_get_floats(c->op, "scales", &ns);
  int rank = x->rank, sp = rank - 2;
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_strides(rank, x->shape, cs);
  kf_status st = ki_check_macs(c, (double)r->n * pow(4.0, sp));
  if (st) return st;
  for (int64_t e = 0; e < r->n; e++) {
    int64_t ix[3][4];
    double w[3][4];
    int nt[3], tap[3] = {0, 0, 0};
    int64_t taps = 1, base = idx[0] * cs[0] + idx[1] * cs[1];
    for (int d = 0; d < sp; d++) {
      upsample_taps(mode, align, scales[d], x->shape[2 + d], r->shape[2 + d], idx[2 + d], ix[d], w[d], &nt[d]);
      taps *= nt[d];
    }
    double sum = 0;
    for (int64_t t = 0; t < taps; t++) {
      double wt = 1.0;
      int64_t off = base;
      for (int d = 0; d < sp; d++) {
        wt *= w[d][tap[d]];
        off += ix[d][tap[d]] * cs[2 + d];
      }
      sum += wt * x->d[off];
      for (int d = sp - 1; d >= 0; d--) {
        if (++tap[d] < nt[d]) break;
        tap[d] = 0;
      }
    }
    r->d[e] = sum;
    ki_next(rank, r->shape, idx);
  }
  return KF_OK;
}

/* ---- scaled dot-product attention ------------------------------------------------------ */

static kf_status run_sdpa(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *q = ki_arg(c, 0), *k = ki_arg(c, 1), *v = ki_arg(c, 2), *m = ki_arg(c, 3);
  const kf_type *mt = ki_arg_type(c, 3);
  ki_val *r = ki_res(c, 0);
  int R = q->rank;
  int64_t L = q->shape[R - 2], E = q->shape[R - 1], S = k->shape[R - 2], Ev = v->shape[R - 1];
  bool causal = kf_op_get_bool(op, "is_causal");
  bool gqa = kf_op_get_bool(op, "enable_gqa");
  double scale = kf_op_has_attr(op, "scale") ? kf_op_get_float(op, "scale") : 1.0 / sqrt((double)E);
  int64_t batches = 1;
  for (int i = 0; i < R - 2; i++) batches *= r->shape[i];
  kf_status st = ki_check_macs(c, (double)batches * L * S * (double)(E + Ev));
  if (st) return st;
  /* strides of the batch dims of q, k, v and the mask within the result's
   * batch shape: broadcasting (size 1) gets stride 0; with gqa the head dim
   * of k and v maps query head h to key head h / (Hq / Hk). */
  int64_t qs[KF_MAX_RANK], ks[KF_MAX_RANK], vs[KF_MAX_RANK], ms[KF_MAX_RANK] = {0};
  ki_strides(R, q->shape, qs);
  ki_strides(R, k->shape, ks);
  ki_strides(R, v->shape, vs);
  if (m) ki_bcast_strides(m->rank, m->shape, R, ms);
  int64_t rshape[KF_MAX_RANK], bidx[KF_MAX_RANK] = {0};
  memcpy(rshape, r->shape, sizeof rshape);
  double *row = NULL;
  if ((st = ki_alloc(c, S, &row))) return st;
  for (int64_t bt = 0; bt < batches; bt++) {
    int64_t qo = 0, ko = 0, vo = 0, mo = 0;
    for (int i = 0; i < R - 2; i++) {
      int64_t bi = bidx[i];
      qo += (q->shape[i] == 1 ? 0 : bi) * qs[i];
      int64_t kb = bi;
      if (gqa && i == R - 3) kb = bi / (q->shape[i] / k->shape[i]);
      else if (k->shape[i] == 1) kb = 0;
      ko += kb * ks[i];
      vo += kb * vs[i];
      mo += bi * ms[i];
    }
    ki_next(R - 2, rshape, bidx);
    for (int64_t i = 0; i < L; i++) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; j++) {
        double s = 0;
        for (int64_t e = 0; e < E; e++)
          s += q->d[qo + i * qs[R - 2] + e] * k->d[ko + j * ks[R - 2] + e];
        s *= scale;
        if (causal && j > i) s = -INFINITY;
        if (m) {
          double mv = m->d[mo + i * ms[R - 2] + j * ms[R - 1]];
          if (mt->dtype == KF_DTYPE_BOOL)
            s = mv != 0 ? s : -INFINITY;
          else
            s += mv;
        }
        row[j] = s;
        if (s > mx || isnan(s)) mx = s;
      }
      if (mx == -INFINITY) {
        /* every key masked out: ATen's safe softmax gives zeros, not NaN */
        for (int64_t e = 0; e < Ev; e++) r->d[(bt * L + i) * Ev + e] = 0.0;
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < S; j++) {
        row[j] = exp(row[j] - mx);
        sum += row[j];
      }
      for (int64_t e = 0; e < Ev; e++) {
        double acc = 0;
        for (int64_t j = 0; j < S; j++) acc += row[j] * v->d[vo + j * vs[R - 2] + e];
        r->d[(bt * L + i) * Ev + e] = acc / sum;
      }
    }
  }
  free(row);
  return KF_OK;
}

/* ---- recurrences (kf.rnn) ------------------------------------------------------- */

static double rnn_sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static kf_status run_rnn(ki_ctx *c) {
  const kf_op *op = c->op;
  bool lstm = strcmp(kf_op_get_str(op, "mode"), "lstm") == 0, rev = kf_op_get_flag(op, "reverse");
  const ki_val *xg = ki_arg(c, 0), *h0 = ki_arg(c, 1), *c0 = ki_arg(c, 2), *w = ki_arg(c, 3), *b = ki_arg(c, 4);
  ki_val *hs = ki_res(c, 0), *st = ki_res(c, 1);
  int64_t T = xg->shape[0], B = xg->shape[1], H = h0->shape[1], G = lstm ? 4 : 3;
  kf_status s = ki_check_macs(c, (double)T * B * G * H * H);
  if (s) return s;
  double *h = NULL, *gh = NULL;
  if ((s = ki_alloc(c, B * H, &h)) || (s = ki_alloc(c, G * H, &gh))) {
    free(h);
    return s;
  }
  memcpy(h, h0->d, (size_t)(B * H) * sizeof(double));
  if (lstm) memcpy(st->d, c0->d, (size_t)(B * H) * sizeof(double));
  for (int64_t k = 0; k < T; k++) {
    int64_t t = rev ? T - 1 - k : k;
    double *ho = hs->d + t * B * H;
    for (int64_t bb = 0; bb < B; bb++) {
      const double *hb = h + bb * H, *x = xg->d + (t * B + bb) * G * H;
      for (int64_t r = 0; r < G * H; r++) {
        double acc = b->d[r];
        for (int64_t q = 0; q < H; q++) acc += hb[q] * w->d[r * H + q];
        gh[r] = acc;
      }
      for (int64_t j = 0; j < H; j++) {
        double hn;
        if (lstm) {
          double ig = rnn_sig(x[j] + gh[j]), fg = rnn_sig(x[H + j] + gh[H + j]);
          double gg = tanh(x[2 * H + j] + gh[2 * H + j]), og = rnn_sig(x[3 * H + j] + gh[3 * H + j]);
          double cn = fg * st->d[bb * H + j] + ig * gg;
          st->d[bb * H + j] = cn;
          hn = og * tanh(cn);
        } else {
          double r = rnn_sig(x[j] + gh[j]), z = rnn_sig(x[H + j] + gh[H + j]);
          double n = tanh(x[2 * H + j] + r * gh[2 * H + j]);
          hn = (1 - z) * n + z * hb[j];
        }
        ho[bb * H + j] = hn;
      }
    }
    memcpy(h, ho, (size_t)(B * H) * sizeof(double));
  }
  if (!lstm) memcpy(st->d, h, (size_t)(B * H) * sizeof(double));
  free(h);
  free(gh);
  return KF_OK;
}

kf_status ki_run_nn(ki_ctx *c) {
  switch (c->op->code) {
  case KF_OP_MM: case KF_OP_BMM: case KF_OP_ADDMM: return run_matmul(c);
  case KF_OP_CONV: return run_conv(c);
  case KF_OP_MAX_POOL: return run_max_pool(c);
  case KF_OP_AVG_POOL: return run_avg_pool(c);
  case KF_OP_ADAPTIVE_AVG_POOL: return run_adaptive_avg_pool(c);
  case KF_OP_UPSAMPLE: return run_upsample(c);
  case KF_OP_SDPA: return run_sdpa(c);
  case KF_OP_RNN: return run_rnn(c);
  default: break;
  }
  return ki_fail(c, KF_ERR_INTERNAL, "not a matmul, conv, pool or attention op");
}
