/* judge/plan.c — a unit with library steps (cuBLASLt GEMM, cuDNN
 * convolution) made into a small module plan, which the worker runs
 * through the runtime (runtime/): the runtime owns those libraries'
 * handles, algorithm choice and workspaces, so the judge runs such a unit
 * exactly as a compiled module would.
 *
 * The plan's graph is the task's group.mlir with each input that is not a
 * plain contiguous tensor (a permuted weight, a slice at an offset, an
 * expanded view) replaced by its storage, a 1-d input of offset + extent
 * elements, and a kf.as_strided view of it: group 0 is those views (no
 * kernel), group 1 every op of group.mlir (kf.scalar constants included),
 * its inputs the task's inputs in order, its unit the one judged. The
 * worker hands the runtime each input's storage and each output (outputs
 * must be dense: contiguous, or channels-last as the layout pass makes a
 * convolution's result, kf_memplan_build_dense). What the judge cannot do
 * on this path: poison the unit's scratch (the runtime's arena). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge_int.h"
#include "kfuse/plan.h"

static bool plain(const kf_jvalue *v) { return v->type.offset == 0 && kf_type_is_contiguous(&v->type); }

/* an output the plan can take: contiguous, or dense in another order
 * (channels-last), its bytes exactly its elements' */
static bool dense_out(const kf_jvalue *v) {
  return plain(v) || (v->type.offset == 0 && v->bytes == v->numel * (int64_t)kf_dtype_size(v->type.dtype));
}

/* The graph described above; views[] gets the as_strided ops */
static kf_graph *storage_graph(const kf_jtask *t, kf_op **views, int *n_views, kf_diag *diag) {
  const kf_graph *g = t->graph;
  kf_graph *ng = kf_graph_create("judge");
  kf_value **map = calloc((size_t)g->next_value_id + 1, sizeof *map);
  kf_value **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  bool ok = ng && map && outs;
  *n_views = 0;
  for (int i = 0; ok && i < t->n_in; i++) {
    const kf_jvalue *v = &t->in[i];
    if (plain(v)) {
      ok = (map[g->inputs[i]->id] = kf_graph_add_input(ng, g->input_names[i], &v->type)) != NULL;
      continue;
    }
    int64_t es = (int64_t)kf_dtype_size(v->type.dtype), n = v->type.offset + v->bytes / es;
    kf_type st;
    kf_type_init_tensor(&st, v->type.dtype, 1, &n);
    char name[128];
    snprintf(name, sizeof name, "%s_storage", g->input_names[i]);
    kf_value *a = kf_graph_add_input(ng, name, &st);
    snprintf(name, sizeof name, "%s_view", g->input_names[i]);
    kf_op *op = a ? kf_graph_append_op(ng, KF_OP_AS_STRIDED, kf_graph_strdup(ng, name), &a, 1, &v->type, 1) : NULL;
    if (!op) {
      ok = false;
      break;
    }
    int r = v->type.rank;
    int64_t *size = kf_graph_alloc(ng, sizeof(int64_t) * (size_t)(r ? r : 1));
    int64_t *stride = kf_graph_alloc(ng, sizeof(int64_t) * (size_t)(r ? r : 1));
    memcpy(size, v->type.shape, sizeof(int64_t) * (size_t)r);
    memcpy(stride, v->type.strides, sizeof(int64_t) * (size_t)r);
    op->attrs[0].present = op->attrs[1].present = op->attrs[2].present = true;
    op->attrs[0].u.ints.v = size;
    op->attrs[0].u.ints.n = r;
    op->attrs[1].u.ints.v = stride;
    op->attrs[1].u.ints.n = r;
    op->attrs[2].u.i = v->type.offset;
    map[g->inputs[i]->id] = op->results[0];
    views[(*n_views)++] = op;
  }
  for (const kf_op *op = g->first; ok && op; op = op->next) {
    kf_value **operands = calloc((size_t)op->n_operands + 1, sizeof *operands);
    kf_type *rt = calloc((size_t)op->n_results + 1, sizeof *rt);
    ok = operands && rt;
    for (int i = 0; ok && i < op->n_operands; i++) operands[i] = op->operands[i] ? map[op->operands[i]->id] : NULL;
    for (int i = 0; ok && i < op->n_results; i++) rt[i] = op->results[i]->type;
    kf_op *c = ok ? kf_graph_append_op(ng, op->code, op->name, operands, op->n_operands, rt, op->n_results) : NULL;
    free(operands);
    free(rt);
    if (!c) {
      ok = false;
      break;
    }
    /* attribute arrays stay in group.mlir's arena, which outlives this graph */
    memcpy(c->attrs, op->attrs, sizeof c->attrs);
    for (int i = 0; i < op->n_results; i++) map[op->results[i]->id] = c->results[i];
  }
  for (int i = 0; ok && i < g->n_outputs; i++) ok = (outs[i] = map[g->outputs[i]->id]) != NULL;
  if (ok) kf_graph_set_outputs(ng, outs, g->n_outputs);
  free(map);
  free(outs);
  if (!ok) {
    kf_diag_error(diag, "judge: out of memory building the plan's graph");
    kf_graph_destroy(ng);
    return NULL;
  }
  if (kf_graph_verify(ng, diag) != KF_OK) {
    kf_diag_error(diag, "judge: internal error: the plan's graph does not verify");
    kf_graph_destroy(ng);
    return NULL;
  }
  return ng;
}

kf_status kf_jplan_build(const kf_jtask *t, const kf_unit *u, void **blob, size_t *bytes, kf_diag *diag) {
  *blob = NULL;
  *bytes = 0;
  for (int i = 0; i < t->n_out; i++)
    if (!dense_out(&t->out[i])) {
      kf_diag_error(diag,
                    "output '%s' is strided with gaps: the judge runs library steps on dense outputs only "
                    "(contiguous or channels-last)",
                    t->out[i].name);
      return KF_ERR_UNSUPPORTED;
    }
  kf_op **views = calloc((size_t)t->n_in + 1, sizeof *views);
  int n_views = 0;
  kf_graph *g = views ? storage_graph(t, views, &n_views, diag) : NULL;
  if (!g) {
    free(views);
    return views ? KF_ERR_INTERNAL : KF_ERR_NOMEM;
  }
  int n_ops = kf_graph_count_ops(g);
  kf_group grp[2];
  memset(grp, 0, sizeof grp);
  kf_value **vin = calloc((size_t)t->n_in + 1, sizeof *vin);
  kf_value **vsrc = calloc((size_t)n_views + 1, sizeof *vsrc), **vres = calloc((size_t)n_views + 1, sizeof *vres);
  kf_op **kops = calloc((size_t)n_ops + 1, sizeof *kops);
  int *group_of = calloc((size_t)n_ops + 1, sizeof *group_of);
  kf_status st = vin && vsrc && vres && kops && group_of ? KF_OK : KF_ERR_NOMEM;
  for (int i = 0; i < n_views && !st; i++) {
    vsrc[i] = views[i]->operands[0];
    vres[i] = views[i]->results[0];
  }
  int nk = 0, pos = 0, v = 0;
  for (kf_op *op = g->first; op && !st; op = op->next, pos++) {
    bool is_view = v < n_views && op == views[v];
    if (is_view) v++;
    else kops[nk++] = op;
    group_of[pos] = n_views && !is_view ? 1 : 0;
  }
  /* the kernel group's inputs: the task's, as the views or the inputs */
  int vi = 0;
  for (int i = 0; i < t->n_in && !st; i++) {
    bool viewed = !plain(&t->in[i]);
    vin[i] = viewed ? views[vi++]->results[0] : g->inputs[i];
  }
  int ng = 0;
  if (n_views) {
    grp[ng] = (kf_group){.id = ng, .kind = KF_GROUP_VIEW, .n_ops = n_views, .ops = views, .n_inputs = n_views,
                         .inputs = vsrc, .n_outputs = n_views, .outputs = vres, .canonical = (char *)"views"};
    ng++;
  }
  grp[ng] = (kf_group){.id = ng, .kind = KF_GROUP_OPAQUE, .n_ops = nk, .ops = kops, .n_inputs = t->n_in,
                       .inputs = vin, .n_outputs = g->n_outputs, .outputs = g->outputs, .canonical = (char *)"judge"};
  ng++;
  kf_partition p = {g, t->precision, ng, grp, group_of};
  kf_memplan *mp = NULL;
  int64_t scratch = 0;
  for (int i = 0; i < u->n_scratch; i++) scratch += (u->scratch_bytes[i] + 255) / 256 * 256;
  if (!st) st = kf_memplan_build_dense(&p, scratch, &mp, diag);
  kf_unit *units[2] = {NULL, NULL};
  units[ng - 1] = (kf_unit *)u;
  kf_plan_input pi = {
      .graph = g,
      .partition = &p,
      .memplan = mp,
      .units = units,
      .target = t->target,
      .embed_weights = true,
  };
  if (!st) st = kf_plan_build(&pi, blob, bytes, diag);
  kf_memplan_destroy(mp);
  free(vin);
  free(vsrc);
  free(vres);
  free(kops);
  free(group_of);
  free(views);
  kf_graph_destroy(g);
  return st;
}
