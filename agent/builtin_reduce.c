/* agent/builtin_reduce.c — REDUCE groups: a reduction or normalisation
 * anchor with its element-wise prologue and epilogue, on the row template
 * agent/templates/reduce.cu.
 *
 * The anchor's input x is split into kept dims (rows) and reduced dims
 * (elements of a row); the loop is x's dims (group norm splits the channel
 * dim into groups x channels-per-group). The prologue (ops computing x) is
 * evaluated per element, the reducer combines, and then either the row
 * results feed the epilogue per row (reductions) or a second phase
 * rewrites every element with the row statistics (softmax, log_softmax,
 * layer/group norm, batch norm over the batch). batch_norm with running
 * statistics is not a reduction: it runs as an element-wise launch.
 *
 * Layout by rule (no GPU to time): rows contiguous along the reduced dims
 * get a warp per row (short rows: fewer lanes; rows over 4096 elements, or
 * normalisations whose row would not fit 16 values per lane: a block);
 * reductions over an outer dim (the kept dim is the contiguous one) use a
 * column layout, 32 rows per block with 16 threads splitting each row (fewer
 * on short rows); when
 * there are too few rows to fill 132 SMs, rows are split over several
 * blocks through a scratch buffer of partial states (stages 1-3 of the
 * template). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

typedef struct rctx {
  const kf_partition *p;
  const kf_group *g;
  const kf_builtin_options *o;
  const kf_op *anchor;
  const kf_value *x;
  int rank; /* loop rank */
  int64_t shape[KF_MAX_RANK];
  int red[KF_MAX_RANK]; /* 1: reduced loop dim */
  kb_frame elem;        /* x's shape onto the loop */
  kb_frame row;         /* the row results' shape onto the loop */
  bool phase2;
  /* a plain reduction whose group has element-wise ops over the input's
   * shape: phase 2 runs them with the row's statistics (pass/partition.c,
   * row_broadcast) */
  bool elem_epi;
  char reducer[96];
  char red_init[128];
  kf_dtype acc;
  bool *pro;            /* per group op: part of the prologue */
  /* layout */
  int64_t rows, rlen;
  int block, tpr, cache;
  bool rowlayout;
  int split;
  int64_t chunk;
  uint32_t grid_x;
} rctx;

static kf_dtype float_acc(kf_dtype t, bool fp64) {
  if (fp64) return KF_DTYPE_F64;
  return t == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
}

/* ---- the anchor ----------------------------------------------------------- */

/* A max/min along a dim whose indices result nothing reads. */
static bool values_only(const rctx *c) {
  const kf_op *a = c->anchor;
  return (a->code == KF_OP_MAX_DIM || a->code == KF_OP_MIN_DIM) && a->n_results > 1 &&
         kf_graph_count_uses(c->p->graph, a->results[1]) == 0;
}

static kf_status setup_anchor(rctx *c, kf_diag *diag) {
  const kf_op *a = c->anchor;
  const kf_value *x = a->operands[0];
  c->x = x;
  if (!x || x->type.kind != KF_TYPE_TENSOR)
    return kb_unsupported(diag, c->g, a, "input is not a tensor");
  int r = x->type.rank;
  c->rank = r;
  for (int i = 0; i < r; i++) c->shape[i] = x->type.shape[i];
  kb_frame_identity(&c->elem, r, x->type.shape);
  bool fp64 = c->o->fp64;
  kf_dtype xd = x->type.dtype;
  const char *racc;
  bool keep = false;
  int nd = 0;
  int64_t dims[KF_MAX_RANK];

  switch (a->code) {
  case KF_OP_SUM: case KF_OP_MEAN: case KF_OP_PROD: case KF_OP_AMAX: case KF_OP_AMIN:
  case KF_OP_ANY: case KF_OP_ALL: case KF_OP_VAR: case KF_OP_NORM: {
    int n;
    const int64_t *d = kf_op_get_ints(a, "dims", &n);
    for (int i = 0; i < n; i++) dims[nd++] = d[i];
    keep = kf_op_get_bool(a, "keepdim");
    break;
  }
  case KF_OP_MAX_DIM: case KF_OP_MIN_DIM:
    if (r) dims[nd++] = kf_op_get_int(a, "dim");
    keep = kf_op_get_bool(a, "keepdim");
    break;
  case KF_OP_ARGMAX: case KF_OP_ARGMIN:
    keep = kf_op_get_bool(a, "keepdim");
    if (kf_op_has_attr(a, "dim")) {
      if (r) dims[nd++] = kf_op_get_int(a, "dim");
    } else {
      for (int i = 0; i < r; i++) dims[nd++] = i;
    }
    break;
  case KF_OP_SOFTMAX: case KF_OP_LOG_SOFTMAX:
    if (r) dims[nd++] = kf_op_get_int(a, "dim");
    c->phase2 = true;
    break;
  case KF_OP_LAYER_NORM: {
    int64_t n = kf_op_get_int(a, "normalized_ndim");
    for (int64_t i = r - n; i < r; i++) dims[nd++] = i;
    c->phase2 = true;
    break;
  }
  case KF_OP_BATCH_NORM:
    for (int i = 0; i < r; i++)
      if (i != 1) dims[nd++] = i;
    c->phase2 = true;
    break;
  case KF_OP_GROUP_NORM: {
    int64_t G = kf_op_get_int(a, "groups");
    if (r + 1 > KF_MAX_RANK) return kb_unsupported(diag, c->g, a, "rank too large");
    int64_t C = x->type.shape[1];
    /* loop [N, G, C/G, spatial...] */
    c->rank = r + 1;
    c->shape[0] = x->type.shape[0];
    c->shape[1] = G;
    c->shape[2] = C / G;
    for (int i = 2; i < r; i++) c->shape[i + 1] = x->type.shape[i];
    c->elem.loop_dim[0] = 0;
    c->elem.loop_dim[1] = 1;
    for (int i = 2; i < r; i++) c->elem.loop_dim[i] = i + 1;
    c->elem.split_dim = 1;
    c->elem.split_inner = C / G;
    for (int i = 2; i < r + 1; i++) dims[nd++] = i;
    c->phase2 = true;
    break;
  }
  default:
    return kb_unsupported(diag, c->g, a, "no reduction template for this op");
  }
  for (int i = 0; i < c->rank; i++) c->red[i] = 0;
  for (int i = 0; i < nd; i++) {
    if (dims[i] < 0 || dims[i] >= c->rank) return kb_unsupported(diag, c->g, a, "dim out of range");
    c->red[dims[i]] = 1;
  }

  /* the row results' frame */
  const kf_type *rt = &a->results[0]->type;
  memset(&c->row, 0, sizeof c->row);
  c->row.split_dim = -1;
  if (a->code == KF_OP_GROUP_NORM) {
    rt = &a->results[1]->type; /* [N, G] */
    c->row.rank = 2;
    c->row.shape[0] = rt->shape[0];
    c->row.shape[1] = rt->shape[1];
    c->row.loop_dim[0] = 0;
    c->row.loop_dim[1] = 1;
  } else if (a->code == KF_OP_LAYER_NORM || keep) {
    if (a->code == KF_OP_LAYER_NORM) rt = &a->results[1]->type;
    c->row.rank = rt->rank;
    for (int i = 0; i < rt->rank; i++) {
      c->row.shape[i] = rt->shape[i];
      c->row.loop_dim[i] = i < c->rank ? i : -1;
    }
  } else if (!c->phase2) {
    c->row.rank = rt->rank;
    int k = 0;
    for (int i = 0; i < c->rank && k < rt->rank; i++)
      if (!c->red[i]) {
        c->row.shape[k] = rt->shape[k];
        c->row.loop_dim[k] = i;
        k++;
      }
  }

  /* reducer and the value type it sees */
  switch (a->code) {
  case KF_OP_SUM: case KF_OP_PROD: {
    kf_dtype rd = a->results[0]->type.dtype;
    c->acc = kf_dtype_is_float(rd) ? float_acc(rd, fp64) : KF_DTYPE_I64;
    if (rd == KF_DTYPE_BOOL) c->acc = KF_DTYPE_I64;
    racc = kb_storage_type(c->acc);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_%s<%s>", a->code == KF_OP_SUM ? "sum" : "prod", racc);
    break;
  }
  case KF_OP_MEAN:
    c->acc = float_acc(a->results[0]->type.dtype, fp64);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_mean<%s>", kb_storage_type(c->acc));
    break;
  case KF_OP_AMAX: case KF_OP_AMIN: case KF_OP_MAX_DIM: case KF_OP_MIN_DIM:
  case KF_OP_ARGMAX: case KF_OP_ARGMIN: {
    c->acc = kf_dtype_is_float(xd) ? float_acc(xd, fp64) : KF_DTYPE_I64;
    bool mx = a->code == KF_OP_AMAX || a->code == KF_OP_MAX_DIM || a->code == KF_OP_ARGMAX;
    /* max/min along a dim whose indices nothing reads (torch.max(x, d)[0])
     * reduce values only, as amax/amin: tracking the first index cost
     * KernelBench L1 49 and 53 3.72 ms against 2.37 ms for a sum of the same
     * shape (H200, 2026-11-25) */
    bool ext = a->code == KF_OP_AMAX || a->code == KF_OP_AMIN || values_only(c);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_%s<%s, %s>", ext ? "ext" : "arg",
             kb_storage_type(c->acc), mx ? "true" : "false");
    break;
  }
  case KF_OP_ANY: case KF_OP_ALL:
    c->acc = KF_DTYPE_BOOL;
    snprintf(c->reducer, sizeof c->reducer, "kf::red_bool<%s>", a->code == KF_OP_ALL ? "true" : "false");
    break;
  case KF_OP_VAR: {
    c->acc = float_acc(xd, fp64);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_welford<%s>", kb_storage_type(c->acc));
    char lit[96];
    kb_literal(kf_op_get_number(a, "correction"), c->acc, fp64, lit, sizeof lit);
    snprintf(c->red_init, sizeof c->red_init, "{%s}", lit);
    break;
  }
  case KF_OP_NORM: {
    c->acc = float_acc(xd, fp64);
    double ord = kf_number_as_double(kf_op_get_number(a, "ord"));
    int kind = isinf(ord) ? (ord > 0 ? 3 : 4) : ord == 0 ? 5 : ord == 1 ? 1 : ord == 2 ? 2 : 0;
    snprintf(c->reducer, sizeof c->reducer, "kf::red_norm<%s, %d>", kb_storage_type(c->acc), kind);
    char lit[96];
    kb_literal(kf_number_float(isinf(ord) ? 0 : ord), c->acc, fp64, lit, sizeof lit);
    snprintf(c->red_init, sizeof c->red_init, "{%s}", lit);
    break;
  }
  case KF_OP_SOFTMAX: case KF_OP_LOG_SOFTMAX:
    c->acc = float_acc(xd, fp64);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_softmax<%s>", kb_storage_type(c->acc));
    break;
  default: { /* the norms: mean and biased variance */
    c->acc = float_acc(xd, fp64);
    snprintf(c->reducer, sizeof c->reducer, "kf::red_welford<%s>", kb_storage_type(c->acc));
    char lit[96];
    kb_literal(kf_number_int(0), c->acc, fp64, lit, sizeof lit);
    snprintf(c->red_init, sizeof c->red_init, "{%s}", lit);
    break;
  }
  }
  if (!c->red_init[0]) snprintf(c->red_init, sizeof c->red_init, "{}");
  return KF_OK;
}

/* A plain reduction's group holding ops over x's shape (not its prologue):
 * those run in phase 2, the row's statistics broadcast to its elements.
 * Shapes here are dims alone: in a 16-bit model's RMSNorm x is the f32
 * upcast and the element results are cast back, and an output taken for a
 * row value was stored by neither pass. */
static bool has_elem_epilogue(const rctx *c) {
  if (c->phase2) return false;
  const kf_type *xt = &c->x->type, *rt = &c->anchor->results[0]->type;
  if (kf_type_same_dims(xt, rt)) return false; /* a reduction over size-1 dims only */
  for (int i = 0; i < c->g->n_ops; i++) {
    const kf_op *op = c->g->ops[i];
    if (c->pro[i] || op == c->anchor) continue;
    if (kf_type_same_dims(&op->results[0]->type, xt)) return true;
  }
  return false;
}

/* ---- layout rules ------------------------------------------------------------- */

/* The access pattern that decides the layout: the largest group input the
 * prologue reads (x itself when it is an input). */
static void main_strides(const rctx *c, int64_t *st) {
  const kf_value *best = NULL;
  int64_t best_n = -1;
  for (int i = 0; i < c->g->n_inputs; i++) {
    const kf_value *v = c->g->inputs[i];
    if (v->type.kind != KF_TYPE_TENSOR) continue;
    bool used = v == c->x;
    for (int j = 0; j < c->g->n_ops && !used; j++) {
      if (!c->pro[j]) continue;
      for (int k = 0; k < c->g->ops[j]->n_operands; k++)
        if (c->g->ops[j]->operands[k] == v) used = true;
    }
    if (!used) continue;
    int64_t n = kf_type_numel(&v->type);
    if (n > best_n) {
      best_n = n;
      best = v;
    }
  }
  for (int i = 0; i < KF_MAX_RANK; i++) st[i] = 0;
  if (best) kb_frame_strides(&c->elem, c->rank, &best->type, st);
}

static void plan_layout(rctx *c) {
  c->rows = 1;
  c->rlen = 1;
  for (int i = 0; i < c->rank; i++) {
    if (c->red[i]) c->rlen *= c->shape[i];
    else c->rows *= c->shape[i];
  }
  int64_t st[KF_MAX_RANK];
  main_strides(c, st);
  int64_t inner_red = 0, inner_kept = 0;
  for (int i = c->rank - 1; i >= 0; i--)
    if (c->red[i] && c->shape[i] > 1) {
      inner_red = st[i];
      break;
    }
  for (int i = c->rank - 1; i >= 0; i--)
    if (!c->red[i] && c->shape[i] > 1) {
      inner_kept = st[i];
      break;
    }
  bool rowlayout = !(inner_red != 1 && inner_kept == 1 && c->rlen > 1);
  kb_row_rules r = kb_rules_rows(c->o, c->rows, c->rlen, rowlayout, c->phase2);
  c->rowlayout = r.rowlayout;
  c->block = r.block;
  c->tpr = r.tpr;
  c->split = r.split;
  c->chunk = r.chunk;
  c->grid_x = r.grid;
  c->cache = r.cache;
}

/* ---- bodies -------------------------------------------------------------------- */

static kf_status emit_epilogue(rctx *c, kb_expr *e, bool row_frame) {
  const kf_group *g = c->g;
  kf_status st = KF_OK;
  /* every op that neither computes the anchor's input nor is the anchor,
   * in program order (the partitioner may also have merged independent
   * element-wise ops of the same shape) */
  for (int i = 0; i < g->n_ops && !st; i++) {
    if (c->pro[i] || g->ops[i] == c->anchor) continue;
    const kf_op *op = g->ops[i];
    if (!kb_expr_can(op)) return kb_unsupported(e->diag, g, op, "not element-wise (in a reduction epilogue)");
    /* an epilogue op belongs to the frame its result has */
    const kf_type *t = &op->results[0]->type;
    int64_t s[KF_MAX_RANK];
    if (!kb_frame_strides(&e->frame, e->k->rank, t, s)) {
      if (row_frame && c->phase2) continue;
      return kb_unsupported(e->diag, g, op, "epilogue shape does not match the reduction's result");
    }
    /* element epilogues run in phase 2; a plain reduction's other ops (over
     * its result's shape, or fills) run once per row too, for row outputs */
    if (row_frame && c->phase2 && (!c->elem_epi || kf_type_same_dims(t, &c->x->type))) continue;
    st = kb_expr_op(e, op);
  }
  return st;
}

/* store the group outputs computed in this context */
static kf_status store_outputs(rctx *c, kb_expr *e, bool row_ctx) {
  const kf_group *g = c->g;
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    if (v->id >= e->n_ids || !e->name[v->id]) continue; /* computed elsewhere */
    bool is_row = true;
    if (c->elem_epi) is_row = !kf_type_same_dims(&v->type, &c->x->type);
    else if (c->phase2) is_row = !(v == c->anchor->results[0] || (v->def != c->anchor));
    if (is_row != row_ctx) continue;
    kf_status st = kb_expr_store(e, v, i);
    if (st) return st;
  }
  return KF_OK;
}

static kf_status pro_body(rctx *c, kb_kernel *k, kf_diag *diag) {
  kb_expr e;
  kf_status st = kb_expr_init(&e, k, c->p, c->g, &c->elem, diag);
  if (st) return st;
  for (int i = 0; i < c->g->n_ops && !st; i++)
    if (c->pro[i]) st = kb_expr_op(&e, c->g->ops[i]);
  const char *xv = NULL;
  if (!st) st = kb_expr_value(&e, c->x, &xv);
  if (!st) {
    char conv[1024];
    kb_convert(&e, xv, kb_reg_dtype(c->x->type.dtype, c->o->fp64), c->acc, conv, sizeof conv);
    if (c->acc == KF_DTYPE_BOOL || !kf_dtype_is_float(c->acc))
      kb_reg_convert(&e, xv, c->x->type.dtype, c->acc, conv, sizeof conv);
    kb_emit(k, "KF_YIELD(%s);", conv);
  }
  kb_expr_fini(&e);
  return st;
}

static kf_status row_body(rctx *c, kb_kernel *k, kf_diag *diag) {
  kb_expr e;
  kf_status st = kb_expr_init(&e, k, c->p, c->g, &c->row, diag);
  if (st) return st;
  const kf_op *a = c->anchor;
  char expr[512];
  kf_dtype rd = a->results[0]->type.dtype;
  switch (a->code) {
  case KF_OP_VAR:
    kb_reg_convert(&e, "KF_RES1", c->acc, rd, expr, sizeof expr);
    st = kb_bind_local(&e, a->results[0], rd, expr);
    break;
  case KF_OP_ARGMAX: case KF_OP_ARGMIN:
    st = kb_bind_local(&e, a->results[0], KF_DTYPE_I64, "KF_RES1");
    break;
  case KF_OP_MAX_DIM: case KF_OP_MIN_DIM:
    kb_reg_convert(&e, "KF_RES0", c->acc, rd, expr, sizeof expr);
    st = kb_bind_local(&e, a->results[0], rd, expr);
    if (!st && !values_only(c)) st = kb_bind_local(&e, a->results[1], KF_DTYPE_I64, "KF_RES1");
    break;
  case KF_OP_LAYER_NORM: case KF_OP_GROUP_NORM: {
    kf_dtype sd = a->results[1]->type.dtype;
    char eps[96];
    kb_literal(kf_number_float(kf_op_get_float(a, "eps")), c->acc, c->o->fp64, eps, sizeof eps);
    kb_reg_convert(&e, "KF_RES0", c->acc, sd, expr, sizeof expr);
    st = kb_bind_local(&e, a->results[1], sd, expr);
    char r[400];
    snprintf(r, sizeof r, "kf::rsqrt(KF_RES1 + %s)", eps);
    kb_reg_convert(&e, r, c->acc, sd, expr, sizeof expr);
    if (!st) st = kb_bind_local(&e, a->results[2], sd, expr);
    break;
  }
  case KF_OP_SOFTMAX: case KF_OP_LOG_SOFTMAX: case KF_OP_BATCH_NORM:
    break;
  default:
    kb_reg_convert(&e, "KF_RES0", c->acc, rd, expr, sizeof expr);
    st = kb_bind_local(&e, a->results[0], rd, expr);
    break;
  }
  if (!st) st = emit_epilogue(c, &e, true);
  if (!st) st = store_outputs(c, &e, true);
  kb_expr_fini(&e);
  return st;
}

/* a per-channel (group/batch norm) or normalized-shape (layer norm)
 * weight or bias, converted to the accumulate type; "" when absent */
static kf_status affine_operand(rctx *c, kb_expr *e, const kf_value *v, char *out, size_t n) {
  out[0] = '\0';
  if (!v) return KF_OK;
  char nm[32];
  kf_status st;
  if (c->anchor->code == KF_OP_LAYER_NORM) {
    const char *x;
    if ((st = kb_expr_value(e, v, &x))) return st;
    snprintf(nm, sizeof nm, "%s", x);
  } else {
    int64_t s[KF_MAX_RANK];
    kb_frame_channel_strides(&e->frame, 1, &v->type, s);
    if ((st = kb_expr_load(e, v, s, nm, sizeof nm))) return st;
  }
  kb_convert(e, nm, kb_reg_dtype(v->type.dtype, c->o->fp64), c->acc, out, n);
  return KF_OK;
}

static kf_status elem_body(rctx *c, kb_kernel *k, kf_diag *diag) {
  kb_expr e;
  kf_status st = kb_expr_init(&e, k, c->p, c->g, &c->elem, diag);
  if (st) return st;
  /* the prologue's values again, for epilogues that read them (unused
   * ones are dead code) */
  for (int i = 0; i < c->g->n_ops && !st; i++)
    if (c->pro[i]) st = kb_expr_op(&e, c->g->ops[i]);
  const kf_op *a = c->anchor;
  /* an epilogue reading the anchor's input x itself (a residual) takes the
   * element value the kernel already holds (KF_X: x in the accumulator type;
   * the register cache in the cached path) instead of loading x again —
   * when x is a group input, its register type is the accumulator's, and
   * KF_X is not softmax's cached exponential */
  if (!st && a->code != KF_OP_SOFTMAX && kb_group_input(c->g, c->x) >= 0 &&
      kb_reg_dtype(c->x->type.dtype, c->o->fp64) == c->acc)
    st = kb_bind_local(&e, c->x, c->x->type.dtype, "KF_X");
  char y[1600], w[512], b[512], eps[96], expr[1800];
  if (c->elem_epi) {
    /* a plain reduction: its result per row, then the epilogue */
    kf_dtype rd = a->results[0]->type.dtype;
    if (!st) {
      kb_reg_convert(&e, a->code == KF_OP_VAR ? "KF_RES1" : "KF_RES0", c->acc, rd, expr, sizeof expr);
      st = kb_bind_local(&e, a->results[0], rd, expr);
    }
    if (!st) st = emit_epilogue(c, &e, false);
    if (!st) st = store_outputs(c, &e, false);
    kb_expr_fini(&e);
    return st;
  }
  switch (a->code) {
  case KF_OP_SOFTMAX:
    snprintf(y, sizeof y, "KF_SOFTMAX(KF_X, KF_RES0, KF_RES1)");
    break;
  case KF_OP_LOG_SOFTMAX:
    snprintf(y, sizeof y, "KF_X - (KF_RES0 + kf::log(KF_RES1))");
    break;
  default: {
    /* (x - mean) * rstd, times weight, plus bias */
    kb_literal(kf_number_float(kf_op_get_float(a, "eps")), c->acc, c->o->fp64, eps, sizeof eps);
    const kf_value *wv = a->n_operands > 1 ? a->operands[1] : NULL;
    const kf_value *bv = a->n_operands > 2 ? a->operands[2] : NULL;
    if (!st) st = affine_operand(c, &e, wv, w, sizeof w);
    if (!st) st = affine_operand(c, &e, bv, b, sizeof b);
    if (st) break;
    int n = snprintf(y, sizeof y, "(KF_X - KF_RES0) * kf::rsqrt(KF_RES1 + %s)", eps);
    if (w[0] && n > 0 && (size_t)n < sizeof y) n += snprintf(y + n, sizeof y - (size_t)n, " * %s", w);
    if (b[0] && n > 0 && (size_t)n < sizeof y) snprintf(y + n, sizeof y - (size_t)n, " + %s", b);
    break;
  }
  }
  kf_dtype rd = a->results[0]->type.dtype;
  if (!st) {
    kb_reg_convert(&e, y, c->acc, rd, expr, sizeof expr);
    st = kb_bind_local(&e, a->results[0], rd, expr);
  }
  if (!st) st = emit_epilogue(c, &e, false);
  if (!st) st = store_outputs(c, &e, false);
  kb_expr_fini(&e);
  return st;
}

/* ---- kernels ---------------------------------------------------------------------- */

static kf_status build_kernel(rctx *c, int stage, int scratch, kf_unit *u, kf_strbuf *src,
                              kf_diag *diag) {
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel k;
  kb_init(&k, c->o, name, c->rank, c->shape);
  kf_strbuf pro, row, elem;
  kf_strbuf_init(&pro);
  kf_strbuf_init(&row);
  kf_strbuf_init(&elem);
  kf_status st = pro_body(c, &k, diag);
  kb_take_body(&k, &pro);
  if (!st) st = row_body(c, &k, diag);
  kb_take_body(&k, &row);
  if (!st && c->phase2) st = elem_body(c, &k, diag);
  kb_take_body(&k, &elem);
  if (st) goto done;

  int grp[KF_MAX_RANK];
  for (int i = 0; i < k.rank; i++) grp[i] = c->red[i];
  kb_coalesce(&k, grp);
  int nk = 0;
  while (nk < k.rank && grp[nk] == 0) nk++;
  /* a loop of only kept (or only reduced) dims: the other set is empty */
  char ks[256] = "1LL", rs[256] = "1LL";
  size_t o1 = 0, o2 = 0;
  for (int i = 0; i < nk; i++)
    o1 += (size_t)snprintf(ks + o1, sizeof ks - o1, "%s%lldLL", i ? ", " : "", (long long)k.shape[i]);
  for (int i = nk; i < k.rank; i++)
    o2 += (size_t)snprintf(rs + o2, sizeof rs - o2, "%s%lldLL", i > nk ? ", " : "", (long long)k.shape[i]);
  if (nk == 0) snprintf(ks, sizeof ks, "1LL");
  if (nk == k.rank) snprintf(rs, sizeof rs, "1LL");
  /* all-reduced loop with a single size-1 dim: it belongs to the rows */
  if (k.rank == 1 && k.shape[0] == 1 && grp[0] == 1) snprintf(rs, sizeof rs, "1LL");

  int sp = -1;
  if (stage != 0) sp = kb_use_param(&k, KF_UARG_SCRATCH, scratch, KF_DTYPE_U8, true);
  kb_def_params(&k);
  kb_def_accesses(&k, "SK", 0, nk);
  kb_def_accesses(&k, "SR", nk, k.rank);
  kb_def(&k, "KF_KRANK", "%d", nk ? nk : 1);
  kb_def(&k, "KF_KSHAPE", "%s", ks);
  kb_def(&k, "KF_ROWS", "%lldLL", (long long)c->rows);
  kb_def(&k, "KF_RRANK", "%d", k.rank - nk ? k.rank - nk : 1);
  kb_def(&k, "KF_RSHAPE", "%s", rs);
  kb_def(&k, "KF_RLEN", "%lldLL", (long long)c->rlen);
  kb_def(&k, "KF_BLOCK", "%d", c->block);
  kb_def(&k, "KF_TPR", "%d", c->tpr);
  kb_def(&k, "KF_ROWLAYOUT", "%d", c->rowlayout ? 1 : 0);
  kb_def(&k, "KF_STAGE", "%d", stage);
  kb_def(&k, "KF_SPLIT", "%d", c->split);
  kb_def(&k, "KF_CHUNK", "%lldLL", (long long)c->chunk);
  kb_def(&k, "KF_RED", "%s", c->reducer);
  /* argmin/argmax, max/min with indices: elements computed in batches before they are reduced
   * (reduce.cu): over dim 1 of [128, 4096, 4095] 4.07 -> 3.11 ms; other
   * reducers gain nothing or lose (a logsumexp with a long prologue in
   * KernelBench L2 92 0.212 -> 0.287 ms; H100, 2026-11-25) */
  bool arg = strncmp(c->reducer, "kf::red_arg<", 12) == 0 || strncmp(c->reducer, "kf::red_ext<", 12) == 0;
  kb_def(&k, "KF_BATCH", "%d", arg ? 1 : 0);
  kb_def(&k, "KF_RED_INIT", "%s", c->red_init);
  kb_def(&k, "KF_ACC", "%s", kb_storage_type(c->acc));
  /* vector accesses along a contiguous row: one reduced dim, every load
   * (and with the row cached in registers, every store of phase 2) walking
   * it with stride 1 or 0, row starts and chunk bounds multiples of the
   * width */
  int cache = stage == 0 ? c->cache : 0;
  int rvec = 1;
  bool ph2vec = false;
  if (c->rowlayout && k.rank - nk == 1 && (stage == 1 || stage == 0)) {
    int min_bytes = 16;
    bool ok = k.n_loads > 0, any = false;
    for (int i = 0; i < k.n_loads && ok; i++) {
      int64_t sr = k.loads[i].st[nk];
      if (sr != 0 && sr != 1) ok = false;
      if (sr == 1) {
        any = true;
        int b = (int)kf_dtype_size(k.params[k.loads[i].param].dtype);
        if (b < min_bytes) min_bytes = b;
      }
    }
    if (ok && any) {
      rvec = 16 / min_bytes;
      if (rvec > 8) rvec = 8;
      if (c->o->vector_width > 0) rvec = c->o->vector_width;
      for (int i = 0; i < k.n_loads; i++) {
        if (k.loads[i].st[nk] != 1) continue;
        for (int d = 0; d < nk; d++)
          if (k.loads[i].st[d] % rvec) rvec = 1;
      }
      if (c->rlen % rvec || c->chunk % rvec || c->rlen < (int64_t)c->tpr * rvec) rvec = 1;
      /* phase 2's stores as vectors too: needed with the cache, optional
       * (KF_PH2VEC) when phase 2 reads the row again */
      ph2vec = rvec > 1 && stage == 0 && c->phase2;
      for (int i = 0; i < k.n_stores && ph2vec; i++) {
        int64_t sr = k.stores[i].st[nk];
        if (sr != 0 && sr != 1) ph2vec = false;
        for (int d = 0; d < nk; d++)
          if (k.stores[i].st[d] % rvec) ph2vec = false;
      }
      if (cache > 0 && !ph2vec) rvec = 1;
    }
  }
  if (cache > 0 && rvec > 1) {
    /* the vector mapping's values a thread, rounded to whole vectors; the
     * scalar fallback (rows not aligned at run time) needs c->cache */
    int64_t per = ((c->rlen + (int64_t)c->tpr * rvec - 1) / ((int64_t)c->tpr * rvec)) * rvec;
    if (per > cache) cache = (int)per;
    cache = (cache + rvec - 1) / rvec * rvec;
  }
  kb_def(&k, "KF_CACHE", "%d", cache);
  kb_def(&k, "KF_CACHE_EXP", "%d", c->anchor->code == KF_OP_SOFTMAX ? 1 : 0);
  kb_def(&k, "KF_RVEC", "%d", rvec);
  /* Rows of a normalisation read twice, neither kept in registers nor read
   * in vectors (group norm's rows over several dims, rows of odd length):
   * a full SM of threads (32 registers) even where ptxas spills, more loads
   * in flight than the 1024 the template falls back to. H100, 2026-11-25:
   * GroupNorm over [112, 64, 512, 512] 11.60 -> 9.54 ms (eager 9.97), x /
   * ||x|| over rows of 65535, [32768, 65535], 12.61 -> 11.12 ms (eager
   * 9.98); rows of 65536, read in vectors, lost 12% the same way and are
   * left out; a whole-tensor norm and a mean over (2, 3) unchanged */
  int occ = c->o->row_occupancy;
  if (occ == 0 && stage == 0 && c->rowlayout && c->phase2 && cache == 0 && rvec == 1) occ = 2048;
  kb_def(&k, "KF_OCC", "%d", occ);
  kb_def(&k, "KF_UNROLL", "%d", c->o->row_unroll > 0 ? c->o->row_unroll : 4);
  kb_def(&k, "KF_PH2VEC", "%d", ph2vec && rvec > 1 ? 1 : 0);
  for (int i = 0; i < k.n_stores; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "KF_S%d_RB", i);
    kb_def(&k, nm, "%d", k.rank > nk && k.stores[i].st[nk] == 0 ? 1 : 0);
  }
  for (int i = 0; i < k.n_loads; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "KF_L%d_RB", i);
    kb_def(&k, nm, "%d", k.rank > nk && k.loads[i].st[nk] == 0 ? 1 : 0);
  }
  kb_def(&k, "KF_PHASE2", "%d", c->phase2 ? 1 : 0);
  if (sp >= 0) kb_def(&k, "KF_SCRATCH", "kf_p%d", sp);
  int64_t ext = kb_extent(&k);
  int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 26);
  bool small = ext < lim && c->rows * (int64_t)c->split < lim && c->rlen < lim;
  kb_def(&k, "KF_INDEX", "%s", small ? "int" : "long long");
  kb_def_text(&k, "KF_PRO", pro.data);
  kb_def_text(&k, "KF_ROW", row.data);
  kb_def_text(&k, "KF_ELEM", elem.data);
  uint32_t grid[3] = {c->grid_x, (stage == 1 || stage == 3) ? (uint32_t)c->split : 1, 1};
  uint32_t block[3] = {(uint32_t)c->block, 1, 1};
  st = kb_finish(&k, u, src, "reduce.cu", grid, block, 0, diag);
done:
  kf_strbuf_fini(&pro);
  kf_strbuf_fini(&row);
  kf_strbuf_fini(&elem);
  kb_fini(&k);
  return st;
}

/* prologue values used outside the group: an element-wise launch first */
static kf_status prologue_outputs(rctx *c, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_group *g = c->g;
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    int oi = v->def ? kb_op_index(g, v->def) : -1;
    if (oi < 0 || !c->pro[oi]) continue;
    kb_ew_launch l;
    memset(&l, 0, sizeof l);
    l.rank = v->type.rank;
    memcpy(l.shape, v->type.shape, sizeof l.shape);
    l.n_ops = g->n_ops;
    l.ops = g->ops;
    l.out_vals[0] = v;
    l.out_kind[0] = KF_UARG_OUTPUT;
    l.out_index[0] = i;
    l.out_type[0] = &v->type;
    l.n_out = 1;
    kf_status st = kb_ew_emit(c->p, g, c->o, &l, u, src, diag);
    if (st) return st;
  }
  return KF_OK;
}

kf_status kb_unit_reduce(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                         kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a) return kb_unsupported(diag, g, NULL, "reduction group without an anchor");
  /* batch norm with running statistics is element-wise */
  if (a->code == KF_OP_BATCH_NORM && kb_expr_can(a)) {
    const kf_value *out = g->n_outputs ? g->outputs[0] : NULL;
    kb_ew_launch l;
    memset(&l, 0, sizeof l);
    const kf_type *t = &a->results[0]->type;
    l.rank = t->rank;
    memcpy(l.shape, t->shape, sizeof l.shape);
    l.n_ops = g->n_ops;
    l.ops = g->ops;
    for (int i = 0; i < g->n_outputs && l.n_out < KB_MAX_ACCESS; i++) {
      out = g->outputs[i];
      if (!kf_type_same_shape(&out->type, t) && out->type.rank != t->rank)
        return kb_unsupported(diag, g, out->def, "output of another shape than the batch norm's");
      l.out_vals[l.n_out] = out;
      l.out_kind[l.n_out] = KF_UARG_OUTPUT;
      l.out_index[l.n_out] = i;
      l.out_type[l.n_out] = &out->type;
      l.n_out++;
    }
    return kb_ew_emit(p, g, o, &l, u, src, diag);
  }
  rctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.g = g;
  c.o = o;
  c.anchor = a;
  c.pro = calloc((size_t)g->n_ops + 1, sizeof *c.pro);
  if (!c.pro) return KF_ERR_NOMEM;
  kf_status st = setup_anchor(&c, diag);
  if (!st) {
    kb_mark_prologue(c.g, c.anchor, c.pro, a->operands[0]);
    if (has_elem_epilogue(&c)) c.phase2 = c.elem_epi = true;
    int64_t n = kf_type_numel(&c.x->type);
    if (n == 0) {
      /* nothing to read: fine when nothing is written either */
      for (int i = 0; i < g->n_outputs; i++)
        if (kf_type_numel(&g->outputs[i]->type) > 0) {
          st = kb_unsupported(diag, g, a, "reduction of an empty tensor");
          goto done;
        }
      goto done;
    }
    plan_layout(&c);
    /* with a phase 2 the prologue's outputs are stored there, from the
     * values it recomputes (from L2) or holds; else one launch first */
    if (!c.phase2) st = prologue_outputs(&c, u, src, diag);
  }
  if (!st) {
    if (c.split == 1) {
      st = build_kernel(&c, 0, -1, u, src, diag);
    } else {
      /* partial states: 32 bytes each covers every reducer's state */
      int sidx = kf_unit_add_scratch(u, c.rows * (int64_t)c.split * 32);
      if (sidx < 0) st = KF_ERR_NOMEM;
      if (!st) st = build_kernel(&c, 1, sidx, u, src, diag);
      if (!st) st = build_kernel(&c, 2, sidx, u, src, diag);
      if (!st && c.phase2) st = build_kernel(&c, 3, sidx, u, src, diag);
    }
  }
done:
  free(c.pro);
  return st;
}
