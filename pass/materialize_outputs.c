/* pass/materialize_outputs.c — gives every graph output memory of its own.
 *
 * Expects: a verified graph. Changes: a graph output that is a graph input,
 * a weight (kf.param), a view of another value (pass_util.c's definition:
 * it aliases that value's storage), a non-contiguous value, or a value
 * whose storage an earlier output already uses (the same value returned
 * twice, or a view of it) is replaced by a kf.copy appended at the end of
 * the graph. One kind of view is kept: a whole view (a contiguous reshape
 * of a contiguous value computed by an op, every element in order), whose
 * producer can write the output buffer directly. A scalar output is an
 * error: modules return tensors.
 *
 * Afterwards every output is the result of a computing op, or a whole view
 * of one, contiguous, and no two outputs share storage, so the memory plan
 * can have the producing kernels write straight into the caller's output
 * buffers. Passes that remove copies (simplify) must run before this one,
 * not after. */
#include <stdio.h>
#include <stdlib.h>

#include "kfuse/ir.h"
#include "pass_int.h"

/* Does output value v (not yet claimed) need a copy? */
static bool needs_copy(const kf_value *v, const kf_value *const *claimed, int n_claimed) {
  if (!v->def || v->def->code == KF_OP_PARAM || !kf_type_is_contiguous(&v->type)) return true;
  if (kf_op_is_view(v->def) && !kf_pass_is_whole_view(v)) return true;
  const kf_value *root = kf_pass_storage_root(v);
  for (int j = 0; j < n_claimed; j++)
    if (claimed[j] == root) return true;
  return false;
}

kf_status kf_pass_materialize_outputs(kf_graph *g, kf_diag *diag) {
  const kf_value **claimed = calloc((size_t)g->n_outputs + 1, sizeof *claimed);
  if (!claimed) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  const char *file = g->origin ? g->origin : "";
  const char *sep = g->origin ? ": " : "";
  for (int i = 0; i < g->n_outputs && st == KF_OK; i++) {
    kf_value *v = g->outputs[i];
    if (v->type.kind != KF_TYPE_TENSOR) {
      kf_diag_error(diag, "%s%sgraph output %d is a scalar (a Python number); compiled modules "
                    "return tensors only", file, sep, i);
      st = KF_ERR_UNSUPPORTED;
      break;
    }
    if (needs_copy(v, claimed, i)) {
      char base[200];
      const char *from = v->def ? v->def->name : g->input_names[v->index];
      snprintf(base, sizeof base, "%.180s_out%d", from, i);
      kf_type t;
      kf_type_init_tensor(&t, v->type.dtype, v->type.rank, v->type.shape);
      kf_op *cp = kf_graph_append_op(g, KF_OP_COPY, kf_pass_unique_name(g, base), &v, 1, &t, 1);
      if ((st = kf_infer_types(cp, &t, diag)) != KF_OK) break;
      cp->results[0]->type = t;
      g->outputs[i] = v = cp->results[0];
    }
    claimed[i] = kf_pass_storage_root(v);
  }
  free(claimed);
  return st;
}
