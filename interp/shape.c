/* interp/shape.c — views and data movement in the CPU reference
 * interpreter: reshape, permute, expand, slice, select, unfold, split, cat,
 * pad, advanced indexing, index_select, gather, embedding and
 * slice_scatter.
 *
 * Views are materialised: each is a gather from the operand's contiguous
 * data with strides derived from the operand's shape (as_strided, which is
 * defined on storage instead, lives in interp.c). Index operands are
 * checked: negative indices wrap where PyTorch wraps them (advanced
 * indexing) and are errors where PyTorch rejects them; out-of-range indices
 * are reported, never read. */
#include <inttypes.h>
#include <string.h>

#include "interp_int.h"

static kf_status run_view(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *x = ki_arg(c, 0);
  int64_t cs[KF_MAX_RANK], vs[KF_MAX_RANK] = {0}, off = 0;
  ki_strides(x->rank, x->shape, cs);
  switch (op->code) {
  case KF_OP_RESHAPE: {
    ki_val *r = ki_res(c, 0);
    memcpy(r->d, x->d, sizeof(double) * (size_t)r->n);
    return KF_OK;
  }
  case KF_OP_PERMUTE: {
    int n;
    const int64_t *d = kf_op_get_ints(op, "dims", &n);
    for (int i = 0; i < n; i++) vs[i] = cs[d[i]];
    break;
  }
  case KF_OP_EXPAND: {
    ki_val *r = ki_res(c, 0);
    ki_bcast_strides(x->rank, x->shape, r->rank, vs);
    break;
  }
  case KF_OP_SLICE: {
    int64_t d = kf_op_get_int(op, "dim");
    memcpy(vs, cs, sizeof cs);
    off = kf_op_get_int(op, "start") * cs[d];
    vs[d] = cs[d] * kf_op_get_int(op, "step");
    break;
  }
  case KF_OP_SELECT: {
    int64_t d = kf_op_get_int(op, "dim");
    off = kf_op_get_int(op, "index") * cs[d];
    for (int k = 0, j = 0; k < x->rank; k++)
      if (k != d) vs[j++] = cs[k];
    break;
  }
  case KF_OP_UNFOLD: {
    ki_val *r = ki_res(c, 0);
    if (x->rank == 0) { /* a 0-d tensor unfolds to [size] with size <= 1 */
      for (int64_t i = 0; i < r->n; i++) r->d[i] = x->d[0];
      return KF_OK;
    }
    int64_t d = kf_op_get_int(op, "dim");
    memcpy(vs, cs, sizeof cs);
    vs[d] = cs[d] * kf_op_get_int(op, "step");
    vs[x->rank] = cs[d];
    break;
  }
  case KF_OP_SPLIT: {
    int64_t d = kf_op_get_int(op, "dim");
    memcpy(vs, cs, sizeof cs);
    for (int i = 0; i < op->n_results; i++) {
      ki_val *r = ki_res(c, i);
      ki_gather(r->d, r->rank, r->shape, x->d, off, vs);
      off += r->shape[d] * cs[d];
    }
    return KF_OK;
  }
  default:
    return ki_fail(c, KF_ERR_INTERNAL, "not a view op");
  }
  ki_val *r = ki_res(c, 0);
  ki_gather(r->d, r->rank, r->shape, x->d, off, vs);
  return KF_OK;
}

static kf_status run_cat(ki_ctx *c) {
  int64_t d = kf_op_get_int(c->op, "dim");
  ki_val *r = ki_res(c, 0);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; k++) outer *= r->shape[k];
  for (int k = (int)d + 1; k < r->rank; k++) inner *= r->shape[k];
  int64_t row = r->shape[d] * inner, pos = 0;
  for (int i = 0; i < c->op->n_operands; i++) {
    const ki_val *x = ki_arg(c, i);
    if (x->rank == 1 && x->shape[0] == 0) continue; /* legacy empty operand */
    int64_t len = x->shape[d] * inner;
    for (int64_t o = 0; o < outer; o++)
      memcpy(r->d + o * row + pos, x->d + o * len, sizeof(double) * (size_t)len);
    pos += len;
  }
  return KF_OK;
}

static kf_status run_pad(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  int n;
  const int64_t *p = kf_op_get_ints(c->op, "pad", &n);
  double value = kf_number_as_double(kf_op_get_number(c->op, "value"));
  int64_t before[KF_MAX_RANK] = {0}, cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  for (int i = 0; i < n / 2; i++) before[x->rank - 1 - i] = p[2 * i];
  ki_strides(x->rank, x->shape, cs);
  for (int64_t e = 0; e < r->n; e++) {
    int64_t o = 0;
    bool inside = true;
    for (int k = 0; k < r->rank; k++) {
      int64_t j = idx[k] - before[k]; /* negative padding crops */
      if (j < 0 || j >= x->shape[k]) inside = false;
      o += j * cs[k];
    }
    r->d[e] = inside ? x->d[o] : value;
    ki_next(r->rank, r->shape, idx);
  }
  return KF_OK;
}

/* Check and wrap an index into [0, size). */
static kf_status index_of(ki_ctx *c, double v, int64_t size, bool wrap, int dim,
                          int64_t *out) {
  int64_t i = (int64_t)v;
  if (wrap && i < 0) i += size;
  if (i < 0 || i >= size)
    return ki_fail(c, KF_ERR_INVALID, "index %" PRId64 " is out of bounds for dim %d with size %" PRId64,
                   (int64_t)v, dim, size);
  *out = i;
  return KF_OK;
}

/* x[..., idx_0, ..., idx_k, ...]: the broadcast index shape B replaces the
 * indexed dims in place when they are adjacent, else it goes first. */
static kf_status run_index(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  int n;
  const int64_t *dims = kf_op_get_ints(c->op, "dims", &n);
  int br = 0;
  int64_t bshape[KF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    const ki_val *t = ki_arg(c, i + 1);
    int rr = t->rank > br ? t->rank : br;
    int64_t sh[KF_MAX_RANK];
    for (int k = 0; k < rr; k++) {
      int ia = br - rr + k, ib = t->rank - rr + k;
      int64_t da = ia >= 0 ? bshape[ia] : 1, db = ib >= 0 ? t->shape[ib] : 1;
      sh[k] = da == 1 ? db : da;
    }
    br = rr;
    memcpy(bshape, sh, sizeof sh);
  }
  int64_t istr[KF_MAX_RANK][KF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    const ki_val *t = ki_arg(c, i + 1);
    ki_bcast_strides(t->rank, t->shape, br, istr[i]);
  }
  bool adjacent = dims[n - 1] - dims[0] == n - 1;
  int bpos = adjacent ? (int)dims[0] : 0; /* where B sits in the result */
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK * 2] = {0};
  ki_strides(x->rank, x->shape, cs);
  bool indexed[KF_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) indexed[dims[i]] = true;
  for (int64_t e = 0; e < r->n; e++) {
    const int64_t *bi = idx + bpos;
    int64_t o = 0;
    /* non-indexed dims of x, in order, take the result dims outside B */
    int rpos = 0;
    for (int k = 0; k < x->rank; k++) {
      if (indexed[k]) continue;
      if (rpos == bpos) rpos += br;
      o += idx[rpos++] * cs[k];
    }
    for (int i = 0; i < n; i++) {
      const ki_val *t = ki_arg(c, i + 1);
      int64_t to = 0;
      for (int k = 0; k < br; k++) to += bi[k] * istr[i][k];
      int64_t j = 0;
      kf_status st = index_of(c, t->d[to], x->shape[dims[i]], true, (int)dims[i], &j);
      if (st) return st;
      o += j * cs[dims[i]];
    }
    r->d[e] = x->d[o];
    ki_next(r->rank, r->shape, idx);
  }
  return KF_OK;
}

static kf_status run_index_select(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *ix = ki_arg(c, 1);
  ki_val *r = ki_res(c, 0);
  int64_t d = kf_op_get_int(c->op, "dim");
  if (x->rank == 0) {
    int64_t j = 0;
    kf_status st = index_of(c, ix->d[0], 1, false, 0, &j);
    if (st) return st;
    r->d[0] = x->d[0];
    return KF_OK;
  }
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_strides(x->rank, x->shape, cs);
  for (int64_t e = 0; e < r->n; e++) {
    int64_t o = 0;
    for (int k = 0; k < x->rank; k++) {
      int64_t j = idx[k];
      if (k == d) {
        kf_status st = index_of(c, ix->d[j], x->shape[k], false, k, &j);
        if (st) return st;
      }
      o += j * cs[k];
    }
    r->d[e] = x->d[o];
    ki_next(r->rank, r->shape, idx);
  }
  return KF_OK;
}

static kf_status run_gather(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *ix = ki_arg(c, 1);
  ki_val *r = ki_res(c, 0);
  int64_t d = kf_op_get_int(c->op, "dim");
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_strides(x->rank, x->shape, cs);
  for (int64_t e = 0; e < r->n; e++) {
    int64_t o = 0;
    for (int k = 0; k < x->rank; k++) {
      int64_t j = idx[k];
      if (k == d) {
        kf_status st = index_of(c, ix->d[e], x->shape[k], false, k, &j);
        if (st) return st;
      }
      o += j * cs[k];
    }
    if (x->rank == 0) {
      int64_t j = 0;
      kf_status st = index_of(c, ix->d[e], 1, false, 0, &j);
      if (st) return st;
    }
    r->d[e] = x->d[o];
    ki_next(r->rank, r->shape, idx);
  }
  return KF_OK;
}

static kf_status run_embedding(ki_ctx *c) {
  const ki_val *w = ki_arg(c, 0), *ix = ki_arg(c, 1);
  ki_val *r = ki_res(c, 0);
  int64_t dim = w->shape[1];
  for (int64_t e = 0; e < ix->n; e++) {
    int64_t j = 0;
    kf_status st = index_of(c, ix->d[e], w->shape[0], false, 0, &j);
    if (st) return st;
    memcpy(r->d + e * dim, w->d + j * dim, sizeof(double) * (size_t)dim);
  }
  return KF_OK;
}

/* x with src written over its slice along dim; src of another dtype
 * rounds to x's */
static kf_status run_slice_scatter(ki_ctx *c) {
  const ki_val *x = ki_arg(c, 0), *src = ki_arg(c, 1);
  ki_val *r = ki_res(c, 0);
  int64_t d = kf_op_get_int(c->op, "dim");
  int64_t start = kf_op_get_int(c->op, "start"), step = kf_op_get_int(c->op, "step");
  kf_dtype dt = ki_res_type(c, 0)->dtype;
  bool convert = ki_arg_type(c, 1)->dtype != dt; /* same dtype: the value as computed */
  memcpy(r->d, x->d, sizeof(double) * (size_t)r->n);
  int64_t cs[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_strides(r->rank, r->shape, cs);
  for (int64_t e = 0; e < src->n; e++) {
    int64_t o = 0;
    for (int k = 0; k < r->rank; k++) o += (k == d ? start + idx[k] * step : idx[k]) * cs[k];
    r->d[o] = convert ? ki_round_to(dt, src->d[e]) : src->d[e];
    ki_next(src->rank, src->shape, idx);
  }
  return KF_OK;
}

kf_status ki_run_shape(ki_ctx *c) {
  switch (c->op->code) {
  case KF_OP_CAT: return run_cat(c);
  case KF_OP_PAD: return run_pad(c);
  case KF_OP_INDEX: return run_index(c);
  case KF_OP_INDEX_SELECT: return run_index_select(c);
  case KF_OP_GATHER: return run_gather(c);
  case KF_OP_EMBEDDING: return run_embedding(c);
  case KF_OP_SLICE_SCATTER: return run_slice_scatter(c);
  default: return run_view(c);
  }
}
