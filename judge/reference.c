/* judge/reference.c — the GPU reference for tasks too large for the CPU
 * interpreter: the built-in policy's fp64 unit for the task's group
 * (every value converted to fp64 on load, computed in fp64, rounded to its
 * dtype on store: the unit the per-op reference of `kfuse compile
 * --reference` is made of), made here from group.mlir, never read from the
 * task directory. group.mlir is partitioned as `kfuse compile` would; its
 * ops must form one group whose inputs are the task's (its scalars aside)
 * and whose outputs are the task's, in order, else there is no GPU
 * reference. It shares its templates with the built-in fp32 units, so the
 * CPU interpreter stays the reference wherever it can run (judge.c). */
#include <stdio.h>
#include <string.h>

#include "judge_int.h"
#include "kfuse/task.h"

static bool is_scalar_def(const kf_value *v) { return v->def && v->def->code == KF_OP_SCALAR; }

kf_status kf_jref_unit(const kf_jtask *t, kf_unit **out, void **plan, size_t *plan_bytes, char *why, size_t n) {
  *out = NULL;
  *plan = NULL;
  *plan_bytes = 0;
  kf_diag quiet;
  kf_diag_init(&quiet, NULL, NULL);
  kf_partition_options po;
  kf_partition_options_init(&po);
  po.precision = t->precision;
  kf_partition *p = NULL;
  kf_status st = kf_partition_graph(t->graph, &po, &p, &quiet);
  if (st) {
    snprintf(why, n, "group.mlir does not partition: %s", kf_status_str(st));
    return st;
  }
  const kf_group *g = NULL;
  int kernels = 0;
  for (int i = 0; i < p->n_groups; i++)
    if (p->groups[i].kind != KF_GROUP_VIEW) {
      g = &p->groups[i];
      kernels++;
    }
  bool same = kernels == 1 && g->n_outputs == t->graph->n_outputs;
  for (int i = 0; same && i < g->n_outputs; i++) same = g->outputs[i] == t->graph->outputs[i];
  int k = 0;
  for (int i = 0; same && i < g->n_inputs; i++) {
    if (is_scalar_def(g->inputs[i])) continue;
    same = k < t->graph->n_inputs && g->inputs[i] == t->graph->inputs[k];
    k++;
  }
  if (same && k != t->graph->n_inputs) same = false;
  if (!same) {
    snprintf(why, n, "group.mlir does not form one group with the task's inputs and outputs (%d kernel groups)", kernels);
    kf_partition_destroy(p);
    return KF_ERR_UNSUPPORTED;
  }
  kf_builtin_options bo;
  kf_builtin_options_init(&bo);
  bo.target = t->target;
  bo.precision = t->precision;
  bo.fp64 = true;
  bo.no_cudnn = true;
  kf_unit *u = NULL;
  st = kf_builtin_unit(p, g, &bo, &u, &quiet);
  if (st) snprintf(why, n, "the built-in policy has no fp64 unit for this group");
  if (!st) st = kf_task_unit_inputs(g, u, why, n);
  if (!st && (st = kf_unit_compile(u, &t->target, &quiet)) != KF_OK)
    snprintf(why, n, "the fp64 unit does not compile: %s", u->compile_log ? u->compile_log : "");
  if (!st && kf_junit_has_library_steps(u) && (st = kf_jplan_build(t, u, plan, plan_bytes, &quiet)) != KF_OK)
    snprintf(why, n, "the fp64 unit's library steps cannot run here");
  kf_partition_destroy(p);
  if (st) {
    kf_unit_destroy(u);
    return st;
  }
  *out = u;
  return KF_OK;
}
