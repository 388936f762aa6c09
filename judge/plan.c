/* judge/plan.c — a unit with library steps (cuBLASLt GEMM, cuDNN
 * convolution) made into a one-group module plan, which the worker runs
 * through the runtime (runtime/): the runtime owns those libraries'
 * handles, algorithm choice and workspaces, so the judge runs such a unit
 * exactly as a compiled module would.
 *
 * The group is the task's whole group.mlir: its arguments are the group's
 * inputs (task.json's, in order), its results the outputs, every op in it
 * (kf.scalar constants included, which make no storage). The memory plan
 * gives the unit's scratch to the arena. The runtime is given each input's
 * and output's first element; an input may be strided (its steps read it
 * through its strides) but must start at offset 0, and outputs must be
 * contiguous. What the judge cannot do on this path:
 * poison the unit's scratch (the runtime's arena). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge_int.h"
#include "plan_int.h"

static bool plain(const kf_jvalue *v) { return v->type.offset == 0 && kf_type_is_contiguous(&v->type); }

kf_status kf_jplan_build(const kf_jtask *t, const kf_unit *u, void **blob, size_t *bytes, kf_diag *diag) {
  *blob = NULL;
  *bytes = 0;
  /* an input may be strided (a permuted weight a GEMM reads transposed):
   * the runtime is given its extent's start, which is the value's first
   * element when its offset is 0 */
  for (int i = 0; i < t->n_in; i++)
    if (t->in[i].type.offset != 0) {
      kf_diag_error(diag, "input '%s' starts %lld elements into its storage: the judge runs library steps on "
                    "values at offset 0 only", t->in[i].name, (long long)t->in[i].type.offset);
      return KF_ERR_UNSUPPORTED;
    }
  for (int i = 0; i < t->n_out; i++)
    if (!plain(&t->out[i])) {
      kf_diag_error(diag, "output '%s' is strided: the judge runs library steps on contiguous values only",
                    t->out[i].name);
      return KF_ERR_UNSUPPORTED;
    }
  const kf_graph *g = t->graph;
  int n_ops = kf_graph_count_ops(g);
  kf_group grp;
  memset(&grp, 0, sizeof grp);
  grp.kind = KF_GROUP_OPAQUE;
  grp.n_ops = n_ops;
  grp.ops = calloc((size_t)n_ops + 1, sizeof *grp.ops);
  grp.n_inputs = g->n_inputs;
  grp.inputs = g->inputs;
  grp.n_outputs = g->n_outputs;
  grp.outputs = g->outputs;
  grp.canonical = (char *)"judge";
  kf_partition p = {g, t->precision, 1, &grp, calloc((size_t)n_ops + 1, sizeof(int))};
  kf_memplan *mp = NULL;
  kf_status st = grp.ops && p.group_of_op ? KF_OK : KF_ERR_NOMEM;
  int k = 0;
  for (kf_op *op = g->first; op && !st; op = op->next) grp.ops[k++] = op;
  int64_t scratch = 0;
  for (int i = 0; i < u->n_scratch; i++) scratch += (u->scratch_bytes[i] + 255) / 256 * 256;
  if (!st) st = kf_memplan_build(&p, scratch, &mp, diag);
  kf_unit *units[1] = {(kf_unit *)u};
  kf_plan_input pi = {
      .graph = g,
      .partition = &p,
      .memplan = mp,
      .units = units,
      .target = t->target,
      .weight_offset = NULL,
      .embed_weights = true,
  };
  if (!st) st = kf_plan_build(&pi, blob, bytes, diag);
  kf_memplan_destroy(mp);
  free(grp.ops);
  free(p.group_of_op);
  return st;
}
