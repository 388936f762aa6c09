/* pass/dce.c — dead-code elimination.
 *
 * Expects: a verified graph. Changes: removes every op none of whose results
 * reaches a graph output. Ops have no side effects in this IR, so liveness
 * is pure reachability; one backward sweep in program order suffices. */
#include <stdlib.h>

#include "kfuse/ir.h"
#include "pass_int.h"

kf_status kf_pass_dce(kf_graph *g, kf_diag *diag) {
  (void)diag;
  size_t nv = g->next_value_id ? g->next_value_id : 1;
  unsigned char *live = calloc(nv, 1);
  if (!live) return KF_ERR_NOMEM;
  for (int i = 0; i < g->n_outputs; i++) live[g->outputs[i]->id] = 1;
  for (kf_op *op = g->last, *prev; op; op = prev) {
    prev = op->prev;
    bool used = false;
    for (int i = 0; i < op->n_results; i++) used |= live[op->results[i]->id];
    if (!used) {
      kf_graph_remove_op(g, op);
      continue;
    }
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i]) live[op->operands[i]->id] = 1;
  }
  free(live);
  return KF_OK;
}
