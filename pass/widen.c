/* pass/widen.c — every floating-point value of the graph in fp64 (pass
 * "widen-f64"): the model as it would compute with no rounding at all.
 *
 * For the module check's bound (judge/module_check.c): the per-op fp64
 * reference rounds every value to its dtype, as eager does, and the
 * distance between that and this graph's outputs is how far rounding to
 * the model's dtypes moves its answer, which is how far a correct module
 * may be from the reference. A bf16 model whose own rounding moves the
 * output by 5 % cannot be held to a bound of 6 %.
 *
 * Float graph inputs and weights (kf.param) keep their dtype and are cast
 * to fp64 once, so the graph takes the same inputs and weights as before;
 * every other op's float results become fp64 and its types are inferred
 * again (views of a cast weight get the strides of the cast's row-major
 * result). A kf.cast between float types becomes fp64 to fp64, exact. A
 * float result that type promotion makes from integer operands alone (an
 * integer tensor divided by one) stays as inference gives it. Outputs are
 * fp64. */
#include <stdio.h>

#include "kfuse/ir.h"
#include "pass_int.h"

static bool narrow_float(kf_dtype t) { return kf_dtype_is_float(t) && t != KF_DTYPE_F64; }

/* A kf.cast of v to fp64 placed before `before` (NULL: at the top), which
 * every use of v then reads. */
static kf_status cast_up(kf_graph *g, kf_namer *nm, kf_value *v, const char *base, kf_op *before, kf_diag *diag) {
  kf_type t = v->type;
  t.dtype = KF_DTYPE_F64;
  kf_type_set_contiguous(&t);
  char name[300];
  snprintf(name, sizeof name, "%.250s_f64", base);
  const char *n = kf_namer_fresh(nm, name);
  if (!n) return KF_ERR_NOMEM;
  kf_op *c = kf_graph_append_op(g, KF_OP_CAST, n, &v, 1, &t, 1);
  if (!c) return KF_ERR_NOMEM;
  kf_graph_move_op(g, c, before);
  kf_type inf = t;
  kf_status st = kf_infer_types(c, &inf, diag);
  if (st != KF_OK) return st;
  c->results[0]->type = inf;
  kf_graph_replace_uses(g, v, c->results[0]);
  c->operands[0] = v; /* the cast itself still reads v */
  return KF_OK;
}

kf_status kf_pass_widen_f64(kf_graph *g, kf_diag *diag) {
  kf_namer nm;
  kf_status st = kf_namer_init(&nm, g);
  if (st != KF_OK) return st;
  kf_op *top = g->first;
  for (int i = 0; i < g->n_inputs && st == KF_OK; i++)
    if (g->inputs[i]->type.kind == KF_TYPE_TENSOR && narrow_float(g->inputs[i]->type.dtype))
      st = cast_up(g, &nm, g->inputs[i], g->input_names[i], top, diag);
  for (kf_op *op = g->first; op && st == KF_OK; op = op->next) {
    if (op->code == KF_OP_PARAM) {
      kf_value *v = op->results[0];
      if (narrow_float(v->type.dtype)) {
        st = cast_up(g, &nm, v, op->name, op->next, diag);
        if (st == KF_OK) op = op->next; /* past the cast */
      }
      continue;
    }
    kf_type res[8];
    if (op->n_results > 8) {
      kf_diag_error(diag, "widen-f64: node '%s' has %d results", op->name, op->n_results);
      st = KF_ERR_UNSUPPORTED;
      break;
    }
    for (int r = 0; r < op->n_results; r++) {
      res[r] = op->results[r]->type;
      if (narrow_float(res[r].dtype)) res[r].dtype = KF_DTYPE_F64;
    }
    st = kf_infer_types(op, res, diag);
    for (int r = 0; st == KF_OK && r < op->n_results; r++) op->results[r]->type = res[r];
  }
  kf_namer_fini(&nm);
  return st;
}
