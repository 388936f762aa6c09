/* pass/fold_bn.c — folds inference-mode batch norm into the preceding
 * convolution or matrix product.
 *
 * Expects: a verified graph. Changes: a kf.batch_norm with running
 * statistics (the eval form) whose input is the result of a kf.conv (not
 * transposed), kf.mm or kf.addmm used by nothing else, where every
 * per-channel operand and the product's weight (and bias) are constants —
 * a kf.param with data in the graph's store, a view of one, or a kf.full —
 * is removed. With scale = weight / sqrt(var + eps) and shift = bias -
 * mean * scale per channel (dim 1 of the batch norm's input, which is the
 * conv's output channel or the product's column):
 *   conv:  W'[o, ...] = W[o, ...] * scale[o],  b'[o] = b[o] * scale[o] + shift[o]
 *   mm:    B'[k, n] = B[k, n] * scale[n],  becomes addmm(shift, A, B')
 *   addmm: B' as above, bias' = beta * bias * scale + shift, beta' = 1
 * The new weights are graph-owned constants (kf_graph_add_constant, kf.param
 * kind "folded") computed in double and stored in the old weight's dtype;
 * the old ones are left for dce.
 *
 * An inference batch norm with constant operands that no producer can
 * absorb (its input comes from a pooling, a graph input, a value used
 * elsewhere) becomes the element-wise x * scale + shift, with scale and
 * shift folded constants of shape [C, 1, ...] broadcasting over dim 1 —
 * element-wise ops fuse with their neighbours, a normalisation would not.
 * They are kept in f32 (f64 for f64 inputs); a 16-bit input is cast back
 * at the end, as PyTorch computes such a batch norm in f32. A graph without
 * weight data (MLIR text of a model) keeps its batch norms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "pass_int.h"

/* ---- reading constants ------------------------------------------------------ */

/* Reads an optional rank-1 operand of n elements into out (dflt when
 * absent). *ok false when present but not a readable constant. */
static kf_status read_vec(kf_graph *g, const kf_value *v, int64_t n, double dflt, double *out,
                          bool *ok, kf_diag *diag) {
  *ok = true;
  if (!v) {
    for (int64_t i = 0; i < n; i++) out[i] = dflt;
    return KF_OK;
  }
  if (kf_type_numel(&v->type) != n) {
    *ok = false;
    return KF_OK;
  }
  kf_pass_const c;
  kf_status st = kf_pass_const_open(g, v, &c, ok, diag);
  if (st != KF_OK || !*ok) return st;
  for (int64_t i = 0; i < n; i++) out[i] = kf_pass_const_get(&c, i);
  return KF_OK;
}

/* ---- the pass ---------------------------------------------------------------- */

typedef struct fold {
  kf_graph *g;
  kf_diag *diag;
  kf_op *bn, *prod;
  int64_t c;         /* channels */
  double *scale, *shift;
} fold;

static const char *fqn_hint(const kf_value *v, const kf_op *fallback) {
  const kf_value *r = kf_pass_storage_root(v);
  if (r->def && r->def->code == KF_OP_PARAM) return kf_op_get_str(r->def, "fqn");
  return fallback->name;
}

static kf_status fold_conv(fold *f, bool *done) {
  kf_op *conv = f->prod;
  kf_value *w = conv->operands[1], *b = conv->operands[2];
  *done = false;
  if (kf_op_get_bool(conv, "transposed") || w->type.rank < 1 || w->type.shape[0] != f->c)
    return KF_OK;
  kf_pass_const cw;
  bool ok;
  kf_status st = kf_pass_const_open(f->g, w, &cw, &ok, f->diag);
  if (st != KF_OK || !ok) return st;
  double *bias = malloc(sizeof(double) * (size_t)f->c);
  int64_t nw = kf_type_numel(&w->type);
  double *wv = malloc(sizeof(double) * (size_t)(nw ? nw : 1));
  if (!bias || !wv) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  if ((st = read_vec(f->g, b, f->c, 0.0, bias, &ok, f->diag)) != KF_OK || !ok) goto done;
  int64_t per = f->c ? nw / f->c : 0;
  for (int64_t i = 0; i < nw; i++) wv[i] = kf_pass_const_get(&cw, i) * f->scale[per ? i / per : 0];
  for (int64_t o = 0; o < f->c; o++) bias[o] = bias[o] * f->scale[o] + f->shift[o];
  char fqn[300], name[300];
  const char *hint = fqn_hint(w, conv);
  kf_value *nwv, *nbv;
  snprintf(fqn, sizeof fqn, "%.250s.bn_folded", hint);
  snprintf(name, sizeof name, "%.250s_w_folded", conv->name);
  if ((st = kf_pass_new_param(f->g, fqn, name, w->type.dtype, w->type.rank, w->type.shape, wv, conv, &nwv,
                      f->diag)) != KF_OK)
    goto done;
  snprintf(fqn, sizeof fqn, "%.250s.bn_folded_bias", hint);
  snprintf(name, sizeof name, "%.250s_b_folded", conv->name);
  kf_dtype bdt = b ? b->type.dtype : w->type.dtype;
  if ((st = kf_pass_new_param(f->g, fqn, name, bdt, 1, &f->c, bias, conv, &nbv, f->diag)) != KF_OK)
    goto done;
  conv->operands[1] = nwv;
  conv->operands[2] = nbv;
  *done = true;
done:
  free(bias);
  free(wv);
  return st;
}

static kf_status fold_matmul(fold *f, bool *done) {
  kf_op *mm = f->prod;
  bool addmm = mm->code == KF_OP_ADDMM;
  kf_value *a = mm->operands[addmm ? 1 : 0], *bm = mm->operands[addmm ? 2 : 1];
  *done = false;
  if (bm->type.rank != 2 || bm->type.shape[1] != f->c) return KF_OK;
  kf_pass_const cb;
  bool ok;
  kf_status st = kf_pass_const_open(f->g, bm, &cb, &ok, f->diag);
  if (st != KF_OK || !ok) return st;
  double beta = 1.0;
  kf_value *bias_v = NULL;
  if (addmm) {
    bias_v = mm->operands[0];
    /* a per-column bias only: [N] or [1, N] */
    const kf_type *bt = &bias_v->type;
    if (!(bt->rank == 1 || (bt->rank == 2 && bt->shape[0] == 1)) || bt->shape[bt->rank - 1] != f->c)
      return KF_OK;
    beta = kf_number_as_double(kf_op_get_number(mm, "beta"));
  }
  int64_t k = bm->type.shape[0], nb = k * f->c;
  double *bias = malloc(sizeof(double) * (size_t)(f->c ? f->c : 1));
  double *bv = malloc(sizeof(double) * (size_t)(nb ? nb : 1));
  if (!bias || !bv) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  if ((st = read_vec(f->g, bias_v, f->c, 0.0, bias, &ok, f->diag)) != KF_OK || !ok) goto done;
  for (int64_t i = 0; i < nb; i++) bv[i] = kf_pass_const_get(&cb, i) * f->scale[i % f->c];
  for (int64_t n = 0; n < f->c; n++) bias[n] = beta * bias[n] * f->scale[n] + f->shift[n];
  char fqn[300], name[300];
  const char *hint = fqn_hint(bm, mm);
  kf_value *nbm, *nbias;
  snprintf(fqn, sizeof fqn, "%.250s.bn_folded", hint);
  snprintf(name, sizeof name, "%.250s_w_folded", mm->name);
  if ((st = kf_pass_new_param(f->g, fqn, name, bm->type.dtype, 2, bm->type.shape, bv, mm, &nbm,
                      f->diag)) != KF_OK)
    goto done;
  snprintf(fqn, sizeof fqn, "%.250s.bn_folded_bias", hint);
  snprintf(name, sizeof name, "%.250s_b_folded", mm->name);
  kf_dtype bdt = bias_v ? bias_v->type.dtype : bm->type.dtype;
  if ((st = kf_pass_new_param(f->g, fqn, name, bdt, 1, &f->c, bias, mm, &nbias, f->diag)) != KF_OK)
    goto done;
  if (addmm) {
    mm->operands[0] = nbias;
    mm->operands[2] = nbm;
    kf_op_set_number(mm, "beta", kf_number_int(1));
  } else {
    kf_value *ops[3] = {nbias, a, nbm};
    kf_type rt = mm->results[0]->type;
    char nm[300];
    snprintf(nm, sizeof nm, "%.250s_bn", mm->name);
    kf_op *n = kf_graph_append_op(f->g, KF_OP_ADDMM, kf_pass_unique_name(f->g, nm), ops, 3, &rt, 1);
    kf_op_set_number(n, "beta", kf_number_int(1));
    kf_op_set_number(n, "alpha", kf_number_int(1));
    n->source = mm->source;
    kf_graph_move_op(f->g, n, mm);
    kf_graph_replace_uses(f->g, mm->results[0], n->results[0]);
    f->prod = n;
    kf_graph_remove_op(f->g, mm); /* its one use was the batch norm, now rewired */
  }
  *done = true;
done:
  free(bias);
  free(bv);
  return st;
}

/* bn(x) -> x * scale + shift (then a cast back for 16-bit x). */
static kf_status to_affine(fold *f) {
  kf_graph *g = f->g;
  kf_op *bn = f->bn;
  kf_value *x = bn->operands[0];
  kf_dtype xd = x->type.dtype, cd = xd == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  int64_t shape[KF_MAX_RANK];
  int rank = x->type.rank - 1;
  shape[0] = f->c;
  for (int i = 1; i < rank; i++) shape[i] = 1;
  char fqn[300], name[300];
  kf_value *sc, *sh;
  snprintf(fqn, sizeof fqn, "%.250s.scale", bn->name);
  snprintf(name, sizeof name, "%.250s_scale", bn->name);
  kf_status st = kf_pass_new_param(g, fqn, name, cd, rank, shape, f->scale, bn, &sc, f->diag);
  if (st != KF_OK) return st;
  snprintf(fqn, sizeof fqn, "%.250s.shift", bn->name);
  snprintf(name, sizeof name, "%.250s_shift", bn->name);
  if ((st = kf_pass_new_param(g, fqn, name, cd, rank, shape, f->shift, bn, &sh, f->diag)) != KF_OK)
    return st;
  kf_type t;
  kf_type_init_tensor(&t, kf_dtype_promote(xd, cd), x->type.rank, x->type.shape);
  kf_value *ops[2] = {x, sc};
  snprintf(name, sizeof name, "%.250s_mul", bn->name);
  kf_op *mul = kf_graph_append_op(g, KF_OP_MUL, kf_pass_unique_name(g, name), ops, 2, &t, 1);
  kf_graph_move_op(g, mul, bn);
  ops[0] = mul->results[0];
  ops[1] = sh;
  snprintf(name, sizeof name, "%.250s_add", bn->name);
  kf_op *add = kf_graph_append_op(g, KF_OP_ADD, kf_pass_unique_name(g, name), ops, 2, &t, 1);
  kf_graph_move_op(g, add, bn);
  kf_op *last = add;
  if (t.dtype != xd) {
    kf_type c = bn->results[0]->type;
    snprintf(name, sizeof name, "%.250s_cast", bn->name);
    last = kf_graph_append_op(g, KF_OP_CAST, kf_pass_unique_name(g, name), &add->results[0], 1,
                              &c, 1);
    kf_graph_move_op(g, last, bn);
  }
  mul->source = add->source = last->source = bn->source;
  f->prod = last;
  return KF_OK;
}

static kf_status try_fold(kf_graph *g, kf_op *bn, kf_diag *diag) {
  kf_value *x = bn->operands[0];
  if (!bn->operands[3] || !bn->operands[4] || x->type.rank < 2) return KF_OK;
  kf_op *prod = x->def;
  bool conv = prod && prod->code == KF_OP_CONV;
  bool mm = prod && (prod->code == KF_OP_MM || prod->code == KF_OP_ADDMM) && x->type.rank == 2;
  if ((conv || mm) && kf_graph_count_uses(g, x) != 1) conv = mm = false;
  fold f = {g, diag, bn, prod, x->type.shape[1], NULL, NULL};
  size_t n = (size_t)(f.c ? f.c : 1);
  double *w = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
  double *mean = malloc(sizeof(double) * n), *var = malloc(sizeof(double) * n);
  f.scale = malloc(sizeof(double) * n);
  f.shift = malloc(sizeof(double) * n);
  kf_status st = KF_OK;
  bool ok = true, done = false;
  if (!w || !b || !mean || !var || !f.scale || !f.shift) {
    st = KF_ERR_NOMEM;
    goto out;
  }
  double eps = kf_op_get_float(bn, "eps");
  const double dflt[4] = {1.0, 0.0, 0.0, 1.0};
  double *dst[4] = {w, b, mean, var};
  for (int i = 0; i < 4 && ok && st == KF_OK; i++)
    st = read_vec(g, bn->operands[1 + i], f.c, dflt[i], dst[i], &ok, diag);
  if (st != KF_OK || !ok) goto out;
  for (int64_t c = 0; c < f.c; c++) {
    f.scale[c] = w[c] / sqrt(var[c] + eps);
    f.shift[c] = b[c] - mean[c] * f.scale[c];
  }
  if (conv)
    st = fold_conv(&f, &done);
  else if (mm)
    st = fold_matmul(&f, &done);
  if (st == KF_OK && !done && kf_dtype_is_float(x->type.dtype)) {
    st = to_affine(&f);
    done = st == KF_OK;
  }
  if (st == KF_OK && done) {
    kf_graph_replace_uses(g, bn->results[0], f.prod->results[0]);
    kf_graph_remove_op(g, bn);
  }
out:
  free(w);
  free(b);
  free(mean);
  free(var);
  free(f.scale);
  free(f.shift);
  return st;
}

kf_status kf_pass_fold_bn(kf_graph *g, kf_diag *diag) {
  for (kf_op *op = g->first, *next; op; op = next) {
    next = op->next;
    if (op->code != KF_OP_BATCH_NORM) continue;
    kf_status st = try_fold(g, op, diag);
    if (st != KF_OK) return st;
  }
  return KF_OK;
}
