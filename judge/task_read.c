/* judge/task_read.c — the task the judge judges against: a group of the
 * graph kfuse compile is compiling, in memory (kf_jtask_from_group), or a
 * task directory (agent/task.c writes it; docs/AGENT.md) read back:
 * task.json for the policy, the precision, the target, the floor and the
 * baselines; group.mlir for the graph the reference runs. The values a unit sees are the graph's arguments and
 * results, which must agree with task.json's inputs and outputs (dtype,
 * shape, strides, offset): a task whose files disagree is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "judge_int.h"
#include "kfuse/frontend.h"
#include "kfuse/task.h"

#define MAX_TASK_JSON (16L << 20)

static const cJSON *field(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* A time in the task's "baselines": a finite number >= 0, else -1 (null,
 * absent; 1e999, which cJSON reads as infinity, would make any unit look
 * fast) */
static double opt_ms(const cJSON *o, const char *k) {
  const cJSON *v = o ? field(o, k) : NULL;
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble : -1;
}

/* v as a whole number within [lo, hi] (JSON numbers are doubles: a cast of
 * one out of int64's range is undefined) */
static bool json_int(const cJSON *v, double lo, double hi, int64_t *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi ||
      v->valuedouble != floor(v->valuedouble))
    return false;
  *out = (int64_t)v->valuedouble;
  return true;
}

/* a's numbers equal v's; with shape, only where shape[i] > 1 (the stride
 * of a dim of size 1 is never used, and the IR prints such a tensor as
 * contiguous) */
static bool ints_equal(const cJSON *a, const int64_t *v, int n, const int64_t *shape) {
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return false;
  int i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    int64_t x;
    if (!json_int(e, -9.2e18, 9.2e18, &x) || (x != v[i] && (!shape || shape[i] > 1))) return false;
  }
  return true;
}

/* Bytes from the value's first element to its last; -1 past int64 */
static int64_t extent_bytes(const kf_type *t) {
  int64_t hi = 0, term;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &term) || __builtin_add_overflow(hi, term, &hi))
      return -1;
  }
  if (__builtin_add_overflow(hi, 1, &hi) || __builtin_mul_overflow(hi, (int64_t)kf_dtype_size(t->dtype), &hi))
    return -1;
  return hi;
}

/* v from a graph value's type t and its name */
static kf_status jvalue_of(const char *where, const char *name, const kf_type *t, kf_jvalue *v, kf_diag *diag) {
  if (t->kind != KF_TYPE_TENSOR) {
    kf_diag_error(diag, "%s: '%s' is a scalar: the judge takes tensor values only", where, name);
    return KF_ERR_UNSUPPORTED;
  }
  for (int d = 0; d < t->rank; d++)
    if (t->strides[d] < 0) {
      kf_diag_error(diag, "%s: '%s' has a negative stride", where, name);
      return KF_ERR_UNSUPPORTED;
    }
  snprintf(v->name, sizeof v->name, "%s", name);
  v->type = *t;
  v->numel = kf_type_numel(t);
  v->bytes = extent_bytes(t);
  if (v->bytes < 0 || v->numel < 0) {
    kf_diag_error(diag, "%s: '%s' reaches past 2^63 bytes", where, name);
    return KF_ERR_LIMIT;
  }
  return KF_OK;
}

static bool graph_has_conv(const kf_graph *g) {
  for (const kf_op *op = g->first; op; op = op->next)
    if (kf_op_info_get(op->code)->kind == KF_KIND_CONV) return true;
  return false;
}

/* v from the graph's value gv, checked against task.json's entry e */
static kf_status value(const char *path, const char *what, int i, const cJSON *e, const kf_value *gv,
                       kf_jvalue *v, kf_diag *diag) {
  const kf_type *t = &gv->type;
  int64_t off = 0;
  const cJSON *name = field(e, "name"), *dt = field(e, "dtype");
  if (!cJSON_IsObject(e) || !cJSON_IsString(name) || !cJSON_IsString(dt)) {
    kf_diag_error(diag, "%s: %s[%d]: needs \"name\" and \"dtype\"", path, what, i);
    return KF_ERR_FORMAT;
  }
  char where[4200];
  snprintf(where, sizeof where, "%s: %s[%d]", path, what, i);
  if (t->kind != KF_TYPE_TENSOR) /* jvalue_of refuses it */
    return jvalue_of(where, name->valuestring, t, v, diag);
  if (strcmp(dt->valuestring, kf_dtype_name(t->dtype)) != 0 || !ints_equal(field(e, "shape"), t->shape, t->rank, NULL) ||
      !ints_equal(field(e, "strides"), t->strides, t->rank, t->shape) || !json_int(field(e, "offset"), 0, 9.2e18, &off) ||
      off != t->offset) {
    char ty[160];
    kf_type_str(t, ty, sizeof ty);
    kf_diag_error(diag, "%s: %s[%d] '%s' disagrees with group.mlir, where it is %s (offset %lld)", path, what, i,
                  name->valuestring, ty, (long long)t->offset);
    return KF_ERR_FORMAT;
  }
  return jvalue_of(where, name->valuestring, t, v, diag);
}

static kf_status values(const char *path, const char *what, const cJSON *arr, kf_value **gv, int n,
                        kf_jvalue **out, kf_diag *diag) {
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n) {
    kf_diag_error(diag, "%s: \"%s\" must list the %d %s of group.mlir", path, what, n, what);
    return KF_ERR_FORMAT;
  }
  *out = calloc((size_t)n + 1, sizeof **out);
  if (!*out) return KF_ERR_NOMEM;
  int i = 0;
  for (const cJSON *e = arr->child; e; e = e->next, i++) {
    kf_status st = value(path, what, i, e, gv[i], &(*out)[i], diag);
    if (st) return st;
  }
  return KF_OK;
}

kf_status kf_jtask_from_group(const kf_graph *g, const kf_group *grp, const kf_compile_options *o, kf_jtask *t,
                              kf_diag *diag) {
  memset(t, 0, sizeof *t);
  t->eager_ms = t->compile_ms = -1;
  char where[64];
  snprintf(where, sizeof where, "group %d", grp->id);
  kf_status st = kf_task_group_graph(g, grp, &t->graph, diag);
  if (st) return st;
  t->precision = o->precision;
  t->target = o->target;
  t->group = grp->id;
  snprintf(t->key, sizeof t->key, "%s", grp->key_hex);
  snprintf(t->kind, sizeof t->kind, "%s", kf_group_kind_name(grp->kind));
  double bytes, flops;
  kf_task_group_floor(grp, &bytes, &flops);
  t->floor_bytes = (int64_t)bytes;
  t->floor_flops = flops;
  t->has_conv = graph_has_conv(t->graph);
  const kf_graph *ng = t->graph;
  t->in = calloc((size_t)ng->n_inputs + 1, sizeof *t->in);
  t->out = calloc((size_t)ng->n_outputs + 1, sizeof *t->out);
  if (!t->in || !t->out) st = KF_ERR_NOMEM;
  for (int i = 0; i < ng->n_inputs && !st; i++)
    st = jvalue_of(where, ng->input_names && ng->input_names[i] ? ng->input_names[i] : "in", &ng->inputs[i]->type,
                   &t->in[i], diag);
  for (int i = 0; i < ng->n_outputs && !st; i++) {
    char name[256];
    kf_task_value_name(g, grp->outputs[i], name, sizeof name);
    st = jvalue_of(where, name, &ng->outputs[i]->type, &t->out[i], diag);
  }
  t->n_in = ng->n_inputs;
  t->n_out = ng->n_outputs;
  if (!st && t->n_out == 0) {
    kf_diag_error(diag, "%s: the group has no outputs", where);
    st = KF_ERR_FORMAT;
  }
  if (st) kf_jtask_fini(t);
  return st;
}

kf_status kf_jtask_read(const char *dir, kf_jtask *t, kf_diag *diag) {
  memset(t, 0, sizeof *t);
  t->eager_ms = t->compile_ms = -1;
  char path[4096], ir[4096];
  snprintf(path, sizeof path, "%s/task.json", dir);
  char *text = NULL;
  kf_status st = kf_read_text(path, MAX_TASK_JSON, &text, diag);
  if (st) return st;
  cJSON *j = cJSON_Parse(text);
  free(text);
  if (!j) {
    kf_diag_error(diag, "%s: not JSON", path);
    return KF_ERR_FORMAT;
  }
  const cJSON *fmt = field(j, "format"), *prec = field(j, "precision"), *tgt = field(j, "target"),
              *irf = field(j, "ir"), *grp = field(j, "group"), *key = field(j, "key"), *kind = field(j, "kind"),
              *floor = field(j, "floor"), *base = field(j, "baselines"), *bu = field(j, "builtin_unit");
  st = KF_ERR_FORMAT;
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "kfuse-task-v1") != 0) {
    kf_diag_error(diag, "%s: \"format\" is not \"kfuse-task-v1\"", path);
    goto out;
  }
  if (!cJSON_IsString(prec) || !kf_precision_parse(prec->valuestring, &t->precision)) {
    kf_diag_error(diag, "%s: \"precision\" must be default, tf32, bf16, fp16 or fp32", path);
    goto out;
  }
  if (!cJSON_IsString(tgt) || (strcmp(tgt->valuestring, "sm_90") != 0 && strcmp(tgt->valuestring, "sm_90a") != 0)) {
    kf_diag_error(diag, "%s: \"target\" must be sm_90 or sm_90a", path);
    goto out;
  }
  t->target.sm = 90;
  t->target.arch_specific = strcmp(tgt->valuestring, "sm_90a") == 0;
  /* the IR file must be a plain name inside the task directory */
  if (!cJSON_IsString(irf) || !irf->valuestring[0] || strchr(irf->valuestring, '/') ||
      strcmp(irf->valuestring, "..") == 0) {
    kf_diag_error(diag, "%s: \"ir\" must name a file of the task directory", path);
    goto out;
  }
  int64_t fb = 0, gi = -1;
  const cJSON *ff = cJSON_IsObject(floor) ? field(floor, "flops") : NULL;
  if (!cJSON_IsObject(floor) || !json_int(field(floor, "bytes"), 0, 4.6e18, &fb) || !cJSON_IsNumber(ff) ||
      !isfinite(ff->valuedouble) || ff->valuedouble < 0) {
    kf_diag_error(diag, "%s: \"floor\" needs \"bytes\" (a whole number, 0 to 2^62) and \"flops\" (a finite number "
                  ">= 0)", path);
    goto out;
  }
  if (grp && !cJSON_IsNull(grp) && !json_int(grp, -1, 2147483647.0, &gi)) {
    kf_diag_error(diag, "%s: \"group\" must be a whole number", path);
    goto out;
  }
  t->floor_bytes = fb;
  t->floor_flops = ff->valuedouble;
  t->eager_ms = opt_ms(base, "eager_ms");
  t->compile_ms = opt_ms(base, "torch_compile_ms");
  t->group = (int)gi;
  snprintf(t->key, sizeof t->key, "%s", cJSON_IsString(key) ? key->valuestring : "");
  snprintf(t->kind, sizeof t->kind, "%s", cJSON_IsString(kind) ? kind->valuestring : "");
  if (cJSON_IsString(bu)) {
    /* like "ir": a plain name inside the task directory */
    if (!bu->valuestring[0] || strchr(bu->valuestring, '/') || strcmp(bu->valuestring, "..") == 0 ||
        strlen(bu->valuestring) >= sizeof t->builtin_dir) {
      kf_diag_error(diag, "%s: \"builtin_unit\" must name a directory of the task directory", path);
      goto out;
    }
    snprintf(t->builtin_dir, sizeof t->builtin_dir, "%s", bu->valuestring);
  }

  snprintf(ir, sizeof ir, "%s/%s", dir, irf->valuestring);
  kf_load_options lo;
  kf_load_options_init(&lo);
  st = kf_model_load(ir, &lo, &t->graph, diag);
  if (st) goto out;
  st = kf_graph_verify(t->graph, diag);
  if (st) goto out;
  t->has_conv = graph_has_conv(t->graph);
  st = values(path, "inputs", field(j, "inputs"), t->graph->inputs, t->graph->n_inputs, &t->in, diag);
  if (!st) t->n_in = t->graph->n_inputs;
  if (!st) st = values(path, "outputs", field(j, "outputs"), t->graph->outputs, t->graph->n_outputs, &t->out, diag);
  if (!st) t->n_out = t->graph->n_outputs;
  if (!st && t->n_out == 0) {
    kf_diag_error(diag, "%s: the group has no outputs", path);
    st = KF_ERR_FORMAT;
  }
out:
  cJSON_Delete(j);
  if (st) kf_jtask_fini(t);
  return st;
}

void kf_jtask_fini(kf_jtask *t) {
  kf_graph_destroy(t->graph);
  free(t->in);
  free(t->out);
  memset(t, 0, sizeof *t);
}
