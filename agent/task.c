/* agent/task.c — a fusion group written out as a task for a kernel policy
 * (include/kfuse/task.h; the directory is described in docs/AGENT.md).
 *
 * A task directory holds:
 *   task.json      what the group reads and writes (names, dtypes, shapes,
 *                  strides), its kind, ops, key, the precision policy and
 *                  target, the bytes it must move at least (its inputs and
 *                  outputs once each); the roofline floor's times and the
 *                  baselines are the judge's to measure on a GPU (null
 *                  here, with the reason);
 *   group.mlir     the group alone as a kfuse IR function (its inputs the
 *                  function's arguments, its outputs the results; scalars
 *                  it reads are copied in), which `kfuse opt` and
 *                  `kfuse run` read;
 *   canonical.txt  the group's canonical form, whose BLAKE3 is its key;
 *   builtin/       the built-in policy's unit for it (unit.json + unit.cu,
 *                  docs/FORMATS.md "Kernel unit on disk"): the starting
 *                  point, and the unit a policy's must beat.
 * Each directory is written under a temporary name and renamed into
 * place; an existing path is never overwritten. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kfuse/agent.h"
#include "kfuse/partition.h"
#include "kfuse/task.h"
#include "agent_int.h"
#include "kfuse/options.h"

#define TASK_FORMAT "kfuse-task-v1"

/* The floor's time on an H100 before anything is measured: bytes at
 * 3.0 TB/s plus FLOPs at 50 TFLOP/s (the fp32 rate), per millisecond. */
#define FLOOR_EST_BYTES_PER_MS 3.0e9
#define FLOOR_EST_FLOPS_PER_MS 5.0e10

/* ---- files ------------------------------------------------------------------ */

static kf_status write_file(const char *path, const char *text, kf_diag *diag) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    kf_diag_error(diag, "%s: cannot create: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  size_t n = strlen(text);
  bool ok = fwrite(text, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    kf_diag_error(diag, "%s: write failed: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  return KF_OK;
}

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/%s", a, b);
  return s;
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  (void)(flag == FTW_DP ? rmdir(path) : unlink(path)); /* best effort: go on */
  return 0;
}

/* Removes a temporary task directory (made by this file, under a name of
 * its own) and everything in it, links not followed. */
static void remove_tmp(const char *dir) { (void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* keeps the first error message (the built-in policy's reason) */
static void first_error(void *user, kf_diag_level level, const char *msg) {
  char *buf = user;
  if (level == KF_DIAG_ERROR && !*buf) snprintf(buf, 400, "%s", msg);
}

void kf_task_value_name(const kf_graph *g, const kf_value *v, char *out, size_t n) {
  if (!v->def) snprintf(out, n, "%s", g->input_names && g->input_names[v->index] ? g->input_names[v->index] : "in");
  else if (v->def->n_results == 1) snprintf(out, n, "%s", v->def->name);
  else snprintf(out, n, "%s_%d", v->def->name, v->index);
}

static kf_op *clone_op(kf_graph *ng, const kf_op *op, kf_value **map) {
  kf_value **ops = calloc((size_t)op->n_operands + 1, sizeof *ops);
  kf_type *rt = calloc((size_t)op->n_results + 1, sizeof *rt);
  if (!ops || !rt) {
    free(ops);
    free(rt);
    return NULL;
  }
  for (int i = 0; i < op->n_operands; i++) ops[i] = op->operands[i] ? map[op->operands[i]->id] : NULL;
  for (int i = 0; i < op->n_results; i++) rt[i] = op->results[i]->type;
  kf_op *c = kf_graph_append_op(ng, op->code, op->name, ops, op->n_operands, rt, op->n_results);
  free(ops);
  free(rt);
  if (!c) return NULL;
  /* attribute arrays and strings stay in the source graph's arena, which
   * outlives this graph (printed, then destroyed) */
  memcpy(c->attrs, op->attrs, sizeof c->attrs);
  for (int i = 0; i < op->n_results; i++) map[op->results[i]->id] = c->results[i];
  return c;
}

/* The group as a function: its inputs are arguments, except scalars made
 * outside it (kf.scalar), which are copied in. */
kf_status kf_task_group_graph(const kf_graph *g, const kf_group *grp, kf_graph **out, kf_diag *diag) {
  *out = NULL;
  char name[64];
  snprintf(name, sizeof name, "group_%d", grp->id);
  kf_graph *ng = kf_graph_create(name);
  kf_value **map = calloc((size_t)g->next_value_id + 1, sizeof *map);
  if (!ng || !map) {
    kf_graph_destroy(ng);
    free(map);
    return KF_ERR_NOMEM;
  }
  kf_status st = KF_OK;
  for (int i = 0; i < grp->n_inputs && !st; i++) {
    const kf_value *v = grp->inputs[i];
    if (v->def && v->def->code == KF_OP_SCALAR) {
      if (!clone_op(ng, v->def, map)) st = KF_ERR_NOMEM;
      continue;
    }
    char vn[256];
    kf_task_value_name(g, v, vn, sizeof vn);
    kf_value *a = kf_graph_add_input(ng, vn, &v->type);
    if (!a) st = KF_ERR_NOMEM;
    map[v->id] = a;
  }
  for (int i = 0; i < grp->n_ops && !st; i++)
    if (!clone_op(ng, grp->ops[i], map)) st = KF_ERR_NOMEM;
  kf_value **outs = calloc((size_t)grp->n_outputs + 1, sizeof *outs);
  if (!st && !outs) st = KF_ERR_NOMEM;
  for (int i = 0; i < grp->n_outputs && !st; i++) {
    outs[i] = map[grp->outputs[i]->id];
    if (!outs[i]) {
      kf_diag_error(diag, "task: group %d: output %d is not computed in the group", grp->id, i);
      st = KF_ERR_INTERNAL;
    }
  }
  if (!st) kf_graph_set_outputs(ng, outs, grp->n_outputs);
  free(outs);
  free(map);
  if (!st) st = kf_graph_verify(ng, diag);
  if (st) kf_graph_destroy(ng);
  else *out = ng;
  return st;
}

/* group.mlir's text and model.py's (NULL, the reason in py_why, when the
 * group has no PyTorch form) */
static kf_status group_text(const kf_graph *g, const kf_group *grp, char **out, char **model_py, char *py_why,
                            size_t py_n, kf_diag *diag) {
  *out = NULL;
  *model_py = NULL;
  kf_graph *ng = NULL;
  kf_status st = kf_task_group_graph(g, grp, &ng, diag);
  kf_strbuf b;
  kf_strbuf_init(&b);
  if (!st) {
    st = kf_graph_print(ng, kf_write_strbuf, &b);
    if (!st && (b.failed || !b.data)) st = KF_ERR_NOMEM;
  }
  if (!st) {
    *out = b.data;
    b.data = NULL;
    char title[96];
    snprintf(title, sizeof title, "group %d of '%s'", grp->id, g->name);
    kf_status ps = kf_task_model_py(ng, title, model_py, py_why, py_n);
    if (ps == KF_ERR_NOMEM) st = ps;
  }
  kf_strbuf_fini(&b);
  kf_graph_destroy(ng);
  return st;
}

/* The unit's input arguments renumbered as task.json's inputs, which leave
 * out the group's scalar inputs (copied into group.mlir): a unit reads
 * task input k where the compiler's unit reads group input j. A unit that
 * reads a scalar input through a pointer has no task form. */
kf_status kf_task_unit_inputs(const kf_group *grp, kf_unit *u, char *why, size_t n) {
  for (int s = 0; s < u->n_steps; s++)
    for (int a = 0; a < u->steps[s].n_args; a++) {
      kf_unit_arg *arg = &u->steps[s].args[a];
      if (arg->kind != KF_UARG_INPUT || arg->index < 0 || arg->index >= grp->n_inputs) continue;
      int k = 0;
      for (int i = 0; i < arg->index; i++)
        if (!(grp->inputs[i]->def && grp->inputs[i]->def->code == KF_OP_SCALAR)) k++;
      const kf_value *v = grp->inputs[arg->index];
      if (v->def && v->def->code == KF_OP_SCALAR) {
        snprintf(why, n, "its unit reads scalar input %d through a pointer", arg->index);
        return KF_ERR_UNSUPPORTED;
      }
      arg->index = k;
    }
  return KF_OK;
}

kf_status kf_task_unit_inputs_to_group(const kf_group *grp, kf_unit *u, char *why, size_t n) {
  for (int s = 0; s < u->n_steps; s++)
    for (int a = 0; a < u->steps[s].n_args; a++) {
      kf_unit_arg *arg = &u->steps[s].args[a];
      if (arg->kind != KF_UARG_INPUT) continue;
      int j = -1;
      for (int i = 0, k = 0; i < grp->n_inputs && j < 0; i++) {
        if (grp->inputs[i]->def && grp->inputs[i]->def->code == KF_OP_SCALAR) continue;
        if (k++ == arg->index) j = i;
      }
      if (j < 0) {
        snprintf(why, n, "step %d reads input %d; the task has fewer", s, arg->index);
        return KF_ERR_INVALID;
      }
      arg->index = j;
    }
  return KF_OK;
}

/* ---- task.json -------------------------------------------------------------- */

static cJSON *ints(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

static int64_t value_bytes(const kf_value *v) {
  if (v->type.kind != KF_TYPE_TENSOR) return 0;
  return kf_type_numel(&v->type) * (int64_t)kf_dtype_size(v->type.dtype);
}

static double prod_from(const kf_type *t, int from) {
  double p = 1;
  for (int i = from; i < t->rank; i++) p *= (double)t->shape[i];
  return p;
}

/* FLOPs of the ops whose floor can be compute: matrix products,
 * convolutions and attention, 2 a multiply-add (causal attention half its
 * score matrix); every other op counts none (its floor is its bytes). */
static double op_flops(const kf_op *op) {
  const kf_type *r = &op->results[0]->type;
  if (r->kind != KF_TYPE_TENSOR) return 0;
  switch (op->code) {
  case KF_OP_MM:
  case KF_OP_BMM:
  case KF_OP_ADDMM: {
    const kf_type *a = &op->operands[op->code == KF_OP_ADDMM ? 1 : 0]->type;
    return 2.0 * (double)kf_type_numel(r) * (double)a->shape[a->rank - 1];
  }
  case KF_OP_CONV: {
    const kf_type *x = &op->operands[0]->type, *w = &op->operands[1]->type;
    bool tr = kf_op_get_bool(op, "transposed");
    /* forward: each output element sums Cin/groups x kernel products;
     * transposed: each input element feeds Cout/groups x kernel ones */
    return 2.0 * (double)kf_type_numel(tr ? x : r) * prod_from(w, 1);
  }
  case KF_OP_SDPA: {
    const kf_type *q = &op->operands[0]->type, *k = &op->operands[1]->type, *v = &op->operands[2]->type;
    double lq = (double)q->shape[q->rank - 2], lk = (double)k->shape[k->rank - 2];
    double d = (double)q->shape[q->rank - 1], dv = (double)v->shape[v->rank - 1];
    double heads = prod_from(q, 0) / (lq * d);
    double f = 2.0 * heads * lq * lk * (d + dv);
    return kf_op_get_bool(op, "is_causal") ? f / 2 : f;
  }
  default:
    return 0;
  }
}

/* The floor's bytes (every tensor input read and every output written
 * once; scalar inputs are copied into group.mlir) and FLOPs. */
void kf_task_group_floor(const kf_group *grp, double *bytes, double *flops) {
  int64_t b = 0;
  for (int i = 0; i < grp->n_inputs; i++)
    if (!(grp->inputs[i]->def && grp->inputs[i]->def->code == KF_OP_SCALAR)) b += value_bytes(grp->inputs[i]);
  for (int i = 0; i < grp->n_outputs; i++) b += value_bytes(grp->outputs[i]);
  double f = 0;
  for (int i = 0; i < grp->n_ops; i++) f += op_flops(grp->ops[i]);
  *bytes = (double)b;
  *flops = f;
}

double kf_task_floor_estimate_ms(double bytes, double flops) {
  return bytes / FLOOR_EST_BYTES_PER_MS + flops / FLOOR_EST_FLOPS_PER_MS;
}

static cJSON *tensor_json(const kf_graph *g, const kf_value *v) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char vn[256];
  kf_task_value_name(g, v, vn, sizeof vn);
  cJSON_AddStringToObject(o, "name", vn);
  cJSON_AddStringToObject(o, "dtype", kf_dtype_name(v->type.dtype));
  if (v->type.kind == KF_TYPE_TENSOR) {
    cJSON_AddItemToObject(o, "shape", ints(v->type.shape, v->type.rank));
    cJSON_AddItemToObject(o, "strides", ints(v->type.strides, v->type.rank));
    cJSON_AddNumberToObject(o, "offset", (double)v->type.offset);
  } else {
    cJSON_AddBoolToObject(o, "scalar", true);
  }
  /* a weight of the model (a parameter or buffer) rather than data made
   * by the model at run time */
  if (v->def && v->def->code == KF_OP_PARAM) {
    const char *fqn = kf_op_get_str(v->def, "fqn");
    if (fqn) cJSON_AddStringToObject(o, "weight", fqn);
  }
  return o;
}

static char *task_json(const kf_graph *g, const kf_group *grp, const kf_compile_options *o,
                       const char *builtin_why, const char *model_py_why) {
  cJSON *t = cJSON_CreateObject();
  if (!t) return NULL;
  cJSON_AddStringToObject(t, "format", TASK_FORMAT);
  cJSON_AddStringToObject(t, "model", g->name);
  if (g->origin) cJSON_AddStringToObject(t, "source", g->origin);
  cJSON_AddNumberToObject(t, "group", grp->id);
  cJSON_AddStringToObject(t, "kind", kf_group_kind_name(grp->kind));
  cJSON_AddStringToObject(t, "key", grp->key_hex);
  cJSON_AddStringToObject(t, "precision", kf_precision_name(o->precision));
  char target[32];
  snprintf(target, sizeof target, "sm_%d%s", o->target.sm, o->target.arch_specific ? "a" : "");
  cJSON_AddStringToObject(t, "target", target);
  cJSON *ops = cJSON_AddArrayToObject(t, "ops");
  for (int i = 0; ops && i < grp->n_ops; i++) {
    cJSON *op = cJSON_CreateObject();
    cJSON_AddStringToObject(op, "name", grp->ops[i]->name);
    cJSON_AddStringToObject(op, "op", kf_op_info_get(grp->ops[i]->code)->name);
    if (grp->ops[i] == grp->anchor) cJSON_AddBoolToObject(op, "anchor", true);
    cJSON_AddItemToArray(ops, op);
  }
  cJSON *ins = cJSON_AddArrayToObject(t, "inputs");
  for (int i = 0; ins && i < grp->n_inputs; i++) {
    const kf_value *v = grp->inputs[i];
    if (v->def && v->def->code == KF_OP_SCALAR) continue; /* copied into group.mlir */
    cJSON_AddItemToArray(ins, tensor_json(g, v));
  }
  cJSON *outs = cJSON_AddArrayToObject(t, "outputs");
  for (int i = 0; outs && i < grp->n_outputs; i++) cJSON_AddItemToArray(outs, tensor_json(g, grp->outputs[i]));
  double bytes, flops;
  kf_task_group_floor(grp, &bytes, &flops);
  cJSON *floor = cJSON_AddObjectToObject(t, "floor");
  if (floor) {
    cJSON_AddNumberToObject(floor, "bytes", (double)bytes);
    cJSON_AddNumberToObject(floor, "flops", flops);
    cJSON_AddNullToObject(floor, "ms");
    cJSON_AddStringToObject(floor, "why",
                            "bytes: every input read and every output written once; flops: matrix products, "
                            "convolutions and attention, 2 a multiply-add, other ops none; the time is the larger "
                            "of bytes over the bandwidth and flops over the peak the judge measures on the GPU "
                            "(not measured when the task is written)");
  }
  cJSON *base = cJSON_AddObjectToObject(t, "baselines");
  if (base) {
    cJSON_AddNullToObject(base, "eager_ms");
    cJSON_AddNullToObject(base, "builtin_ms");
    cJSON_AddNullToObject(base, "torch_compile_ms");
    cJSON_AddStringToObject(base, "why", "timed by the judge on a GPU; none was used to write this task");
  }
  cJSON_AddStringToObject(t, "ir", "group.mlir");
  cJSON_AddStringToObject(t, "canonical", "canonical.txt");
  if (model_py_why) {
    cJSON_AddNullToObject(t, "model_py");
    cJSON_AddStringToObject(t, "model_py_why", model_py_why);
  } else {
    cJSON_AddStringToObject(t, "model_py", "model.py");
  }
  if (builtin_why) {
    cJSON_AddNullToObject(t, "builtin_unit");
    cJSON_AddStringToObject(t, "builtin_why", builtin_why);
  } else {
    cJSON_AddStringToObject(t, "builtin_unit", "builtin");
  }
  char *s = cJSON_Print(t);
  cJSON_Delete(t);
  return s;
}

/* ---- one task --------------------------------------------------------------- */

kf_status kf_task_write_group(const kf_graph *g, const kf_partition *p, const kf_group *grp,
                             const kf_compile_options *o, const char *dir, kf_diag *diag) {
  if (exists(dir)) {
    kf_diag_error(diag, "%s: exists; kfuse task writes a new directory (remove it or choose another)", dir);
    return KF_ERR_ARG;
  }
  size_t n = strlen(dir) + 32;
  char *tmp = malloc(n);
  if (!tmp) return KF_ERR_NOMEM;
  snprintf(tmp, n, "%s.tmp.%ld", dir, (long)getpid());
  if (mkdir(tmp, 0777) != 0) {
    kf_diag_error(diag, "%s: cannot create: %s", tmp, strerror(errno));
    free(tmp);
    return KF_ERR_IO;
  }
  kf_status st = KF_OK;
  char *ir = NULL, *json = NULL, *path = NULL, *py = NULL, py_why[300] = "";
  st = group_text(g, grp, &ir, &py, py_why, sizeof py_why, diag);
  if (!st) {
    path = join(tmp, "group.mlir");
    st = path ? write_file(path, ir, diag) : KF_ERR_NOMEM;
    free(path);
  }
  if (!st && py) {
    path = join(tmp, "model.py");
    st = path ? write_file(path, py, diag) : KF_ERR_NOMEM;
    free(path);
  }
  if (!st) {
    path = join(tmp, "canonical.txt");
    st = path ? write_file(path, grp->canonical, diag) : KF_ERR_NOMEM;
    free(path);
  }
  /* the built-in unit; a group it cannot build still gets its task */
  char why[512] = "";
  if (!st) {
    kf_builtin_options bo;
    kf_compile_builtin_options(o, &bo);
    kf_unit *u = NULL;
    char reason[400] = "";
    kf_diag quiet;
    kf_diag_init(&quiet, first_error, reason);
    kf_status bs = kf_builtin_unit(p, grp, &bo, &u, &quiet);
    if (bs == KF_OK) bs = kf_task_unit_inputs(grp, u, reason, sizeof reason);
    if (bs == KF_OK) {
      path = join(tmp, "builtin");
      st = path ? kf_unit_write_dir(u, path, diag) : KF_ERR_NOMEM;
      free(path);
    } else if (bs == KF_ERR_NOMEM) {
      st = bs;
    } else {
      snprintf(why, sizeof why, "the built-in policy has no unit for this group: %s",
               *reason ? reason : kf_status_str(bs));
    }
    kf_unit_destroy(u);
  }
  if (!st) {
    json = task_json(g, grp, o, *why ? why : NULL, py ? NULL : py_why);
    path = join(tmp, "task.json");
    st = json && path ? write_file(path, json, diag) : KF_ERR_NOMEM;
    free(path);
  }
  if (!st && rename(tmp, dir) != 0) {
    kf_diag_error(diag, "%s: cannot rename into place as %s: %s", tmp, dir, strerror(errno));
    st = KF_ERR_IO;
  }
  if (st) remove_tmp(tmp);
  free(ir);
  free(py);
  cJSON_free(json);
  free(tmp);
  return st;
}

/* ---- the command's entry ---------------------------------------------------- */

kf_status kf_task_write(kf_graph *g, const kf_compile_options *o, int group, const char *out_dir,
                        kf_diag *diag) {
  if (exists(out_dir)) {
    kf_diag_error(diag, "%s: exists; kfuse task writes a new directory (remove it or choose another)", out_dir);
    return KF_ERR_ARG;
  }
  kf_status st = kf_compile_passes(g, o, diag);
  kf_partition *p = NULL;
  if (!st) st = kf_compile_partition(g, o, &p, diag);
  if (st) {
    kf_partition_destroy(p);
    return st;
  }
  if (group >= 0) {
    const kf_group *grp = NULL;
    for (int i = 0; i < p->n_groups; i++)
      if (p->groups[i].id == group) grp = &p->groups[i];
    if (!grp) {
      kf_diag_error(diag, "--group %d: the model has groups 0 to %d after the compile passes (kfuse partition "
                    "lists them)", group, p->n_groups - 1);
      st = KF_ERR_ARG;
    } else if (grp->kind == KF_GROUP_VIEW) {
      kf_diag_error(diag, "--group %d is a view group (it runs no kernel; kfuse partition lists the groups)", group);
      st = KF_ERR_ARG;
    } else {
      st = kf_task_write_group(g, p, grp, o, out_dir, diag);
    }
    kf_partition_destroy(p);
    return st;
  }
  if (mkdir(out_dir, 0777) != 0) {
    kf_diag_error(diag, "%s: cannot create: %s", out_dir, strerror(errno));
    kf_partition_destroy(p);
    return KF_ERR_IO;
  }
  cJSON *index = cJSON_CreateObject(), *list = index ? cJSON_AddArrayToObject(index, "tasks") : NULL;
  if (!list) st = KF_ERR_NOMEM;
  if (!st) {
    cJSON_AddStringToObject(index, "format", TASK_FORMAT);
    cJSON_AddStringToObject(index, "model", g->name);
  }
  int written = 0;
  for (int i = 0; i < p->n_groups && !st; i++) {
    const kf_group *grp = &p->groups[i];
    if (grp->kind == KF_GROUP_VIEW) continue;
    char sub[64];
    snprintf(sub, sizeof sub, "group_%d", grp->id);
    char *dir = join(out_dir, sub);
    st = dir ? kf_task_write_group(g, p, grp, o, dir, diag) : KF_ERR_NOMEM;
    free(dir);
    if (st) break;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "group", grp->id);
    cJSON_AddStringToObject(e, "kind", kf_group_kind_name(grp->kind));
    cJSON_AddStringToObject(e, "key", grp->key_hex);
    cJSON_AddStringToObject(e, "dir", sub);
    cJSON_AddItemToArray(list, e);
    written++;
  }
  if (!st) {
    char *s = cJSON_Print(index);
    char *path = join(out_dir, "tasks.json"), *tmp = path ? malloc(strlen(path) + 8) : NULL;
    if (!s || !path || !tmp) st = KF_ERR_NOMEM;
    if (!st) {
      snprintf(tmp, strlen(path) + 8, "%s.tmp", path);
      st = write_file(tmp, s, diag);
      if (!st && rename(tmp, path) != 0) {
        kf_diag_error(diag, "%s: cannot rename into place: %s", path, strerror(errno));
        st = KF_ERR_IO;
      }
      if (st) (void)unlink(tmp);
    }
    cJSON_free(s);
    free(path);
    free(tmp);
  }
  if (!st && o->progress) fprintf(stderr, "kfuse: %d tasks written under %s\n", written, out_dir);
  cJSON_Delete(index);
  kf_partition_destroy(p);
  return st;
}

/* ---- what a task set needs of a group (kfuse tasks) ------------------------- */

kf_status kf_task_partition(kf_graph *g, const kf_compile_options *o, kf_partition **out, kf_diag *diag) {
  *out = NULL;
  kf_status st = kf_compile_passes(g, o, diag);
  if (!st) st = kf_compile_partition(g, o, out, diag);
  return st;
}

/* Which values depend on an input of the graph: graph inputs do; an op's
 * results do when one of its operands does (weights and scalars have
 * none). The ops are in topological order, so one walk settles it. */
static uint8_t *graph_dependence(const kf_graph *g) {
  uint8_t *dep = calloc((size_t)g->next_value_id + 1, 1);
  if (!dep) return NULL;
  for (int i = 0; i < g->n_inputs; i++) dep[g->inputs[i]->id] = 1;
  for (const kf_op *op = g->first; op; op = op->next) {
    uint8_t d = 0;
    for (int i = 0; i < op->n_operands && !d; i++) d = op->operands[i] && dep[op->operands[i]->id];
    for (int i = 0; i < op->n_results; i++) dep[op->results[i]->id] = d;
  }
  return dep;
}

kf_status kf_task_facts_all(const kf_graph *g, const kf_partition *p, kf_task_facts *facts) {
  uint8_t *dep = graph_dependence(g);
  uint8_t *in = calloc((size_t)g->next_value_id + 1, 1); /* depends on a tensor input of the group */
  if (!dep || !in) {
    free(dep);
    free(in);
    return KF_ERR_NOMEM;
  }
  for (int k = 0; k < p->n_groups; k++) {
    const kf_group *grp = &p->groups[k];
    kf_task_facts *f = &facts[k];
    kf_task_group_floor(grp, &f->bytes, &f->flops);
    f->floor_ms = kf_task_floor_estimate_ms(f->bytes, f->flops);
    f->constant_output = -1;
    f->fixed_output = -1;
    for (int i = 0; i < grp->n_outputs && f->fixed_output < 0; i++)
      if (!dep[grp->outputs[i]->id]) f->fixed_output = i;
    /* within the group, from its tensor inputs (scalars are constants of
     * the task: their values are in the canonical form) */
    for (int i = 0; i < grp->n_inputs; i++)
      if (!(grp->inputs[i]->def && grp->inputs[i]->def->code == KF_OP_SCALAR)) in[grp->inputs[i]->id] = 1;
    for (int j = 0; j < grp->n_ops; j++) {
      const kf_op *op = grp->ops[j];
      uint8_t d = 0;
      for (int i = 0; i < op->n_operands && !d; i++) d = op->operands[i] && in[op->operands[i]->id];
      for (int i = 0; i < op->n_results; i++) in[op->results[i]->id] = d;
    }
    for (int i = 0; i < grp->n_outputs && f->constant_output < 0; i++)
      if (!in[grp->outputs[i]->id]) f->constant_output = i;
    /* back to zeros for the next group */
    for (int i = 0; i < grp->n_inputs; i++) in[grp->inputs[i]->id] = 0;
    for (int j = 0; j < grp->n_ops; j++)
      for (int i = 0; i < grp->ops[j]->n_results; i++) in[grp->ops[j]->results[i]->id] = 0;
  }
  free(dep);
  free(in);
  return KF_OK;
}
