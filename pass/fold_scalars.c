/* pass/fold_scalars.c — constant folding of element-wise ops over fills and
 * scalars, and removal of exact identities.
 *
 * Expects: a verified graph. Changes, in one sweep in program order (so
 * chains fold as they go):
 *  - an element-wise op (unary, binary, where, cast, copy) whose operands
 *    are all constants — kf.scalar results, or tensors whose storage is a
 *    kf.full (the fill itself or a view of it) — becomes a kf.full of its
 *    result type. The value is computed by the CPU reference interpreter on
 *    a one-element copy of the op, so folding has exactly the semantics of
 *    the op (promotion, integer wrap-around, rounding modes), and is
 *    rounded to the result dtype as the tensor would hold it;
 *  - an op that provably returns its operand unchanged is removed: x * 1,
 *    1 * x and x / 1 for any dtype; x + 0, 0 + x and x - 0 for integers;
 *    for floating point only x + (-0.0), (-0.0) + x and x - (+0.0), since
 *    x + 0.0 turns -0.0 into +0.0. Only when the result's type (dtype,
 *    shape and layout) equals x's, add/sub have no alpha other than 1, and
 *    the result is not a graph output (outputs keep their own memory).
 * Ops that fail to evaluate (integer division by zero, ...) are kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "pass_int.h"

static bool is_elementwise(const kf_op *op) {
  kf_op_kind k = kf_op_info_get(op->code)->kind;
  return k == KF_KIND_UNARY || k == KF_KIND_BINARY || k == KF_KIND_TERNARY;
}

/* The number a constant operand holds, rounded to its dtype for tensors. */
static bool const_number(const kf_value *v, kf_number *out) {
  if (!v) return false;
  if (v->type.kind == KF_TYPE_SCALAR) {
    if (!v->def || v->def->code != KF_OP_SCALAR) return false;
    *out = kf_op_get_number(v->def, "value");
    return true;
  }
  const kf_value *root = kf_pass_storage_root(v);
  if (!root->def || root->def->code != KF_OP_FULL) return false;
  kf_number n = kf_op_get_number(root->def, "value");
  double d = 0;
  kf_tensor one = {root->type.dtype, 0, {0}, &d};
  kf_tensor_set(&one, 0, kf_number_as_double(n));
  double r = kf_tensor_get(&one, 0);
  kf_dtype dt = root->type.dtype;
  *out = kf_dtype_is_float(dt) ? kf_number_float(r)
         : dt == KF_DTYPE_BOOL ? kf_number_bool(r != 0)
                               : kf_number_int((int64_t)r);
  return true;
}

static void quiet(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

/* Evaluates op on one-element stand-ins of its constant operands (same
 * dtypes and ranks, so type promotion is unchanged). */
static kf_status eval_const(const kf_op *op, kf_number *out, bool *ok) {
  *ok = false;
  kf_diag d;
  kf_diag_init(&d, quiet, NULL);
  kf_graph *m = kf_graph_create("fold");
  if (!m) return KF_ERR_NOMEM;
  kf_value *ins[KF_MAX_OPERAND_SLOTS] = {0};
  int64_t ones[KF_MAX_RANK];
  for (int i = 0; i < KF_MAX_RANK; i++) ones[i] = 1;
  kf_tensor res = {0};
  for (int i = 0; i < op->n_operands && i < KF_MAX_OPERAND_SLOTS; i++) {
    const kf_value *v = op->operands[i];
    if (!v) continue;
    kf_number n;
    if (!const_number(v, &n)) goto done;
    kf_type t;
    kf_op *src;
    if (v->type.kind == KF_TYPE_SCALAR) {
      kf_type_init_scalar(&t, v->type.dtype);
      src = kf_graph_append_op(m, KF_OP_SCALAR, NULL, NULL, 0, &t, 1);
    } else {
      kf_type_init_tensor(&t, v->type.dtype, v->type.rank, ones);
      src = kf_graph_append_op(m, KF_OP_FULL, NULL, NULL, 0, &t, 1);
    }
    kf_op_set_number(src, "value", n);
    ins[i] = src->results[0];
  }
  if (op->n_operands > KF_MAX_OPERAND_SLOTS) goto done;
  kf_type rt;
  kf_type_init_tensor(&rt, op->results[0]->type.dtype, op->results[0]->type.rank, ones);
  kf_op *e = kf_graph_append_op(m, op->code, "e", ins, op->n_operands, &rt, 1);
  memcpy(e->attrs, op->attrs, sizeof e->attrs); /* borrowed: g outlives m */
  kf_graph_set_outputs(m, &e->results[0], 1);
  if (kf_graph_verify(m, &d) != KF_OK) goto done;
  if (kf_interp_run(m, NULL, 0, &res, NULL, &d) != KF_OK) goto done;
  double r = kf_tensor_get(&res, 0);
  kf_dtype dt = rt.dtype;
  if (kf_dtype_is_float(dt)) {
    double h = 0;
    kf_tensor one = {dt, 0, {0}, &h};
    kf_tensor_set(&one, 0, r);
    *out = kf_number_float(kf_tensor_get(&one, 0));
  } else if (dt == KF_DTYPE_BOOL) {
    *out = kf_number_bool(r != 0);
  } else {
    *out = kf_number_int((int64_t)r);
  }
  *ok = true;
done:
  kf_tensor_fini(&res);
  kf_graph_destroy(m);
  return KF_OK;
}

static bool all_const(const kf_op *op) {
  kf_number n;
  for (int i = 0; i < op->n_operands; i++)
    if (op->operands[i] && !const_number(op->operands[i], &n)) return false;
  return true;
}

static bool alpha_is_one(const kf_op *op) {
  return !kf_op_has_attr(op, "alpha") ||
         kf_number_as_double(kf_op_get_number(op, "alpha")) == 1.0;
}

static bool is_output(const kf_graph *g, const kf_value *v) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

/* The operand an identity op passes through, or NULL. */
static kf_value *identity_operand(const kf_graph *g, const kf_op *op) {
  if (op->n_operands != 2 || !op->operands[0] || !op->operands[1]) return NULL;
  if (is_output(g, op->results[0])) return NULL;
  kf_number na, nb;
  bool ca = const_number(op->operands[0], &na), cb = const_number(op->operands[1], &nb);
  if (ca == cb) return NULL;
  kf_value *x = ca ? op->operands[1] : op->operands[0];
  double c = kf_number_as_double(ca ? na : nb);
  if (!kf_type_equal(&x->type, &op->results[0]->type)) return NULL;
  bool fl = kf_dtype_is_float(x->type.dtype);
  switch (op->code) {
  case KF_OP_MUL:
    return c == 1.0 ? x : NULL;
  case KF_OP_DIV:
    return cb && !kf_op_has_attr(op, "rounding_mode") && c == 1.0 ? x : NULL;
  case KF_OP_ADD:
    if (!alpha_is_one(op) || c != 0.0) return NULL;
    return !fl || signbit(c) ? x : NULL;
  case KF_OP_SUB:
    if (!cb || !alpha_is_one(op) || c != 0.0) return NULL;
    return !fl || !signbit(c) ? x : NULL;
  default:
    return NULL;
  }
}

kf_status kf_pass_fold_scalars(kf_graph *g, kf_diag *diag) {
  (void)diag;
  for (kf_op *op = g->first, *next; op; op = next) {
    next = op->next;
    if (!is_elementwise(op) || op->n_results != 1 ||
        op->results[0]->type.kind != KF_TYPE_TENSOR)
      continue;
    if (all_const(op)) {
      kf_number v;
      bool ok;
      kf_status st = eval_const(op, &v, &ok);
      if (st != KF_OK) return st;
      if (!ok) continue;
      /* Rewrite in place: the result value, its type and its uses stay. */
      op->code = KF_OP_FULL;
      op->n_operands = 0;
      memset(op->attrs, 0, sizeof op->attrs);
      kf_op_set_number(op, "value", v);
      continue;
    }
    kf_value *x = identity_operand(g, op);
    if (x) {
      kf_graph_replace_uses(g, op->results[0], x);
      kf_graph_remove_op(g, op);
    }
  }
  return KF_OK;
}
