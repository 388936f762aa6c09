/* interp/reduce.c — reductions, scans and normalisations in the CPU
 * reference interpreter.
 *
 * All of them work on "groups": the elements of the operand that share the
 * indices of the kept dims. A plan lists the offsets of one group's
 * elements relative to its first one; the groups are visited in row-major
 * order of the kept dims, which is the order of the result's elements
 * whether or not keepdim keeps the reduced dims as size 1. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

typedef struct plan {
  int nk;                      /* kept dims */
  int64_t kshape[KF_MAX_RANK];
  int64_t kstr[KF_MAX_RANK];
  int64_t n_groups;
  int64_t gn;    /* elements per group */
  int64_t *off;  /* gn offsets, row-major over the reduced dims */
  int64_t kidx[KF_MAX_RANK];
} plan;

/* red[k]: dim k of x is reduced. */
static kf_status plan_init(ki_ctx *c, const ki_val *x, const bool *red, plan *p) {
  memset(p, 0, sizeof *p);
  int64_t cs[KF_MAX_RANK], rshape[KF_MAX_RANK], rstr[KF_MAX_RANK];
  int nr = 0;
  ki_strides(x->rank, x->shape, cs);
  p->n_groups = 1;
  p->gn = 1;
  for (int k = 0; k < x->rank; k++) {
    if (red[k]) {
      rshape[nr] = x->shape[k];
      rstr[nr++] = cs[k];
      p->gn *= x->shape[k];
    } else {
      p->kshape[p->nk] = x->shape[k];
      p->kstr[p->nk++] = cs[k];
      p->n_groups *= x->shape[k];
    }
  }
  p->off = malloc(sizeof(int64_t) * (size_t)(p->gn ? p->gn : 1));
  if (!p->off) return ki_fail(c, KF_ERR_NOMEM, "out of memory");
  int64_t idx[KF_MAX_RANK] = {0};
  for (int64_t j = 0; j < p->gn; j++) {
    int64_t o = 0;
    for (int k = 0; k < nr; k++) o += idx[k] * rstr[k];
    p->off[j] = o;
    ki_next(nr, rshape, idx);
  }
  return KF_OK;
}

/* Offset of the current group's first element; then step to the next. */
static int64_t plan_next(plan *p) {
  int64_t o = 0;
  for (int k = 0; k < p->nk; k++) o += p->kidx[k] * p->kstr[k];
  ki_next(p->nk, p->kshape, p->kidx);
  return o;
}

static void plan_fini(plan *p) { free(p->off); }

static double nan_max(double a, double b) { return isnan(a) || a > b ? a : b; }
static double nan_min(double a, double b) { return isnan(a) || a < b ? a : b; }

/* ---- reductions ----------------------------------------------------------- */

static kf_status reduce_group(ki_ctx *c, const double *x, const int64_t *off,
                              int64_t n, double *out) {
  const kf_op *op = c->op;
  double acc = 0;
  switch (op->code) {
  case KF_OP_SUM: case KF_OP_MEAN:
    for (int64_t j = 0; j < n; j++) acc += x[off[j]];
    *out = op->code == KF_OP_MEAN ? acc / (double)n : acc;
    return KF_OK;
  case KF_OP_PROD:
    acc = 1;
    for (int64_t j = 0; j < n; j++) acc *= x[off[j]];
    *out = acc;
    return KF_OK;
  case KF_OP_AMAX: case KF_OP_AMIN:
    if (n == 0) return ki_fail(c, KF_ERR_INVALID, "reduction over an empty dim");
    acc = x[off[0]];
    for (int64_t j = 1; j < n; j++)
      acc = op->code == KF_OP_AMAX ? nan_max(acc, x[off[j]]) : nan_min(acc, x[off[j]]);
    *out = acc;
    return KF_OK;
  case KF_OP_ANY:
    for (int64_t j = 0; j < n; j++) if (x[off[j]] != 0) acc = 1;
    *out = acc;
    return KF_OK;
  case KF_OP_ALL:
    acc = 1;
    for (int64_t j = 0; j < n; j++) if (x[off[j]] == 0) acc = 0;
    *out = acc;
    return KF_OK;
  case KF_OP_VAR: {
    double corr = kf_number_as_double(kf_op_get_number(op, "correction"));
    double mean = 0;
    for (int64_t j = 0; j < n; j++) mean += x[off[j]];
    mean /= (double)n;
    for (int64_t j = 0; j < n; j++) acc += (x[off[j]] - mean) * (x[off[j]] - mean);
    double div = (double)n - corr;
    *out = acc / (div > 0 ? div : 0);
    return KF_OK;
  }
  case KF_OP_NORM: {
    double p = kf_number_as_double(kf_op_get_number(op, "ord"));
    if (isinf(p)) {
      if (n == 0) return ki_fail(c, KF_ERR_INVALID, "inf-norm of an empty tensor");
      acc = fabs(x[off[0]]);
      for (int64_t j = 1; j < n; j++)
        acc = p > 0 ? nan_max(acc, fabs(x[off[j]])) : nan_min(acc, fabs(x[off[j]]));
    } else if (p == 0) {
      for (int64_t j = 0; j < n; j++) acc += x[off[j]] != 0;
    } else if (p == 1) {
      for (int64_t j = 0; j < n; j++) acc += fabs(x[off[j]]);
    } else if (p == 2) {
      for (int64_t j = 0; j < n; j++) acc += x[off[j]] * x[off[j]];
      acc = sqrt(acc);
    } else {
      for (int64_t j = 0; j < n; j++) acc += pow(fabs(x[off[j]]), p);
      acc = pow(acc, 1.0 / p);
    }
    *out = acc;
    return KF_OK;
  }
  default: break;
  }
  return ki_fail(c, KF_ERR_UNSUPPORTED, "reduction not supported by the interpreter");
}

/* Index of the max (min) in a group: first occurrence, a NaN wins at once. */
static int64_t arg_best(const double *x, const int64_t *off, int64_t n, bool max) {
  int64_t best = 0;
  for (int64_t j = 0; j < n; j++) {
    double v = x[off[j]], b = x[off[best]];
    if (isnan(v)) return j;
    if (max ? v > b : v < b) best = j;
  }
  return best;
}

static kf_status run_reduction(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *x = ki_arg(c, 0);
  bool red[KF_MAX_RANK] = {0};
  bool arg = op->code == KF_OP_ARGMAX || op->code == KF_OP_ARGMIN;
  bool dimwise = arg || op->code == KF_OP_MAX_DIM || op->code == KF_OP_MIN_DIM;
  if (dimwise) {
    if (kf_op_has_attr(op, "dim")) {
      if (x->rank) red[kf_op_get_int(op, "dim")] = true;
    } else {
      for (int k = 0; k < x->rank; k++) red[k] = true;
    }
  } else {
    int n;
    const int64_t *dims = kf_op_get_ints(op, "dims", &n);
    for (int i = 0; i < n; i++) red[dims[i]] = true;
  }
  plan p;
  kf_status st = plan_init(c, x, red, &p);
  if (st) return st;
  ki_val *r0 = ki_res(c, 0);
  for (int64_t g = 0; g < p.n_groups; g++) {
    int64_t base = plan_next(&p);
    if (dimwise) {
      if (p.gn == 0) {
        st = ki_fail(c, KF_ERR_INVALID, "reduction over an empty dim");
        break;
      }
      bool max = op->code == KF_OP_ARGMAX || op->code == KF_OP_MAX_DIM;
      int64_t j = arg_best(x->d + base, p.off, p.gn, max);
      if (arg) {
        r0->d[g] = (double)j;
      } else {
        r0->d[g] = x->d[base + p.off[j]];
        ki_res(c, 1)->d[g] = (double)j;
      }
    } else if ((st = reduce_group(c, x->d + base, p.off, p.gn, &r0->d[g]))) {
      break;
    }
  }
  plan_fini(&p);
  return st;
}

/* ---- scans and softmax: results shaped like the operand --------------------- */

static kf_status run_along_dim(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  bool red[KF_MAX_RANK] = {0};
  if (x->rank) red[kf_op_get_int(op, "dim")] = true;
  plan p;
  kf_status st = plan_init(c, x, red, &p);
  if (st) return st;
  for (int64_t g = 0; g < p.n_groups; g++) {
    int64_t base = plan_next(&p);
    const double *xs = x->d + base;
    double *rs = r->d + base;
    const int64_t *off = p.off;
    int64_t n = p.gn;
    if (kf_op_info_get(op->code)->kind == KF_KIND_SCAN) {
      bool prod = op->code == KF_OP_CUMPROD, excl = kf_op_get_flag(op, "exclusive");
      bool rev = kf_op_get_flag(op, "reverse");
      double acc = prod ? 1 : 0;
      for (int64_t i = 0; i < n; i++) {
        int64_t j = off[rev ? n - 1 - i : i];
        double v = xs[j];
        if (excl) rs[j] = acc;
        acc = prod ? acc * v : acc + v;
        if (!excl) rs[j] = acc;
      }
      continue;
    }
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; j++) m = nan_max(m, xs[off[j]]);
    for (int64_t j = 0; j < n; j++) s += exp(xs[off[j]] - m);
    for (int64_t j = 0; j < n; j++)
      rs[off[j]] = op->code == KF_OP_SOFTMAX ? exp(xs[off[j]] - m) / s
                                             : xs[off[j]] - m - log(s);
  }
  plan_fini(&p);
  return KF_OK;
}

/* ---- layer, group and batch norm -------------------------------------------- */

/* Biased mean and variance of n values at x[off[j]] (off NULL: contiguous). */
static void moments(const double *x, const int64_t *off, int64_t n, double *mean,
                    double *var) {
  double m = 0, v = 0;
  for (int64_t j = 0; j < n; j++) m += x[off ? off[j] : j];
  m /= (double)n;
  for (int64_t j = 0; j < n; j++) {
    double d = x[off ? off[j] : j] - m;
    v += d * d;
  }
  *mean = m;
  *var = v / (double)n;
}

static kf_status run_layer_norm(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *w = ki_arg(c, 1), *b = ki_arg(c, 2);
  ki_val *r = ki_res(c, 0), *rm = ki_res(c, 1), *rr = ki_res(c, 2);
  int64_t nn = kf_op_get_int(c->op, "normalized_ndim");
  double eps = kf_op_get_float(c->op, "eps");
  int64_t gn = 1;
  for (int k = x->rank - (int)nn; k < x->rank; k++) gn *= x->shape[k];
  int64_t groups = gn ? x->n / gn : rm->n;
  for (int64_t g = 0; g < groups; g++) {
    const double *xs = x->d + g * gn;
    double mean, var;
    moments(xs, NULL, gn, &mean, &var);
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < gn; j++) {
      double y = (xs[j] - mean) * rstd;
      if (w) y *= w->d[j];
      if (b) y += b->d[j];
      r->d[g * gn + j] = y;
    }
    rm->d[g] = mean;
    rr->d[g] = rstd;
  }
  return KF_OK;
}

static kf_status run_group_norm(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *w = ki_arg(c, 1), *b = ki_arg(c, 2);
  ki_val *r = ki_res(c, 0), *rm = ki_res(c, 1), *rr = ki_res(c, 2);
  int64_t G = kf_op_get_int(c->op, "groups");
  double eps = kf_op_get_float(c->op, "eps");
  int64_t N = x->shape[0], C = x->shape[1], S = 1;
  for (int k = 2; k < x->rank; k++) S *= x->shape[k];
  int64_t cg = C / G, gn = cg * S;
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < G; g++) {
      int64_t base = (n * G + g) * gn;
      double mean, var;
      moments(x->d + base, NULL, gn, &mean, &var);
      double rstd = 1.0 / sqrt(var + eps);
      for (int64_t j = 0; j < gn; j++) {
        int64_t ch = g * cg + j / S;
        double y = (x->d[base + j] - mean) * rstd;
        if (w) y *= w->d[ch];
        if (b) y += b->d[ch];
        r->d[base + j] = y;
      }
      rm->d[n * G + g] = mean;
      rr->d[n * G + g] = rstd;
    }
  return KF_OK;
}

static kf_status run_batch_norm(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *w = ki_arg(c, 1), *b = ki_arg(c, 2);
  const ki_val *rmean = ki_arg(c, 3), *rvar = ki_arg(c, 4);
  ki_val *r = ki_res(c, 0);
  double eps = kf_op_get_float(c->op, "eps");
  int64_t C = x->shape[1];
  double *mean = NULL, *var = NULL;
  kf_status st = ki_alloc(c, C, &mean);
  if (!st) st = ki_alloc(c, C, &var);
  if (st) goto done;
  if (rmean) {
    memcpy(mean, rmean->d, sizeof(double) * (size_t)C);
    memcpy(var, rvar->d, sizeof(double) * (size_t)C);
  } else {
    bool red[KF_MAX_RANK] = {0};
    for (int k = 0; k < x->rank; k++) red[k] = k != 1;
    plan p;
    if ((st = plan_init(c, x, red, &p))) goto done;
    for (int64_t ch = 0; ch < C; ch++) {
      int64_t base = plan_next(&p);
      moments(x->d + base, p.off, p.gn, &mean[ch], &var[ch]);
    }
    plan_fini(&p);
  }
  {
    int64_t S = 1;
    for (int k = 2; k < x->rank; k++) S *= x->shape[k];
    for (int64_t e = 0; e < x->n; e++) {
      int64_t ch = (e / S) % C;
      double y = (x->d[e] - mean[ch]) / sqrt(var[ch] + eps);
      if (w) y *= w->d[ch];
      if (b) y += b->d[ch];
      r->d[e] = y;
    }
  }
done:
  free(mean);
  free(var);
  return st;
}

kf_status ki_run_reduce(ki_ctx *c) {
  switch (c->op->code) {
  case KF_OP_CUMSUM: case KF_OP_CUMPROD: case KF_OP_SOFTMAX: case KF_OP_LOG_SOFTMAX:
    return run_along_dim(c);
  case KF_OP_LAYER_NORM: return run_layer_norm(c);
  case KF_OP_GROUP_NORM: return run_group_norm(c);
  case KF_OP_BATCH_NORM: return run_batch_norm(c);
  default: return run_reduction(c);
  }
}
