/* pass/simplify.c — removes ops that do nothing.
 *
 * Expects: a verified graph. Changes: replaces the result of an identity op
 * by its operand — a reshape, expand or permute that leaves shape and
 * strides unchanged, a full-range slice with step 1, a cast to the same
 * dtype, a copy of a value that is already contiguous and not a graph input
 * — and removes the op. Graph outputs keep their types, so an identity whose
 * result is a graph output with a different layout is kept. */
#include "kfuse/ir.h"
#include "pass_int.h"

static bool is_identity(const kf_op *op) {
  const kf_value *x = op->operands[0];
  const kf_type *in = &x->type, *out = &op->results[0]->type;
  switch (op->code) {
  case KF_OP_RESHAPE:
  case KF_OP_EXPAND:
  case KF_OP_PERMUTE:
  case KF_OP_SLICE:
  case KF_OP_CAST:
    return kf_type_equal(in, out);
  case KF_OP_COPY:
    return x->def != NULL && kf_type_is_contiguous(in) && kf_type_equal(in, out);
  default:
    return false;
  }
}

kf_status kf_pass_simplify(kf_graph *g, kf_diag *diag) {
  (void)diag;
  for (kf_op *op = g->first, *next; op; op = next) {
    next = op->next;
    if (op->n_operands < 1 || !op->operands[0] || !is_identity(op)) continue;
    kf_graph_replace_uses(g, op->results[0], op->operands[0]);
    kf_graph_remove_op(g, op);
  }
  return KF_OK;
}
