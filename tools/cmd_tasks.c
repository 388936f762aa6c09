/* tools/cmd_tasks.c — `kfuse tasks`: the unique fusion groups of many
 * models written as tasks (a training set for kernel models drawn from real
 * models; issue 11, docs/AGENT.md "Task sets").
 *
 *   kfuse tasks MODEL... -o DIR [--update] [--keep-going]
 *               [--min-floor-us US] [--max-floor-us US] [--kinds K,...]
 *               [compile options as kfuse task's]
 *
 * Each model goes through the compile passes and the partition as
 * `kfuse task --all` does (kf_task_partition). Every group that runs a
 * kernel is a candidate; candidates are deduplicated by canonical key (the
 * key kfuse compile caches by), in and across models. One task per key is
 * written, by kf_task_write_group, to DIR/<first 16 hex of the key>. The
 * filters, after CUDA-Agent-Ops-6K's:
 *   kind               not one of --kinds (a property of the key);
 *   constant_output    an output computed from none of the group's inputs,
 *                      a fill (a property of the key);
 *   floor_below/above  the floor estimate (kf_task_floor_estimate_ms: the
 *                      static stand-in for Ops-6K's measured eager-time
 *                      window) outside --min-floor-us/--max-floor-us;
 *   input_independent  an output that depends on no input of the model, in
 *                      every occurrence (a property of the occurrence: the
 *                      same group may compute from weights in one model and
 *                      from activations in another; one occurrence that
 *                      depends on the inputs keeps the key).
 * DIR/index.json (kfuse-task-set-v1), written last, lists the tasks with
 * their occurrences, the dropped keys with their reasons, the models and
 * the counts, in order of first occurrence.
 *
 * Nothing is half-written: a new set is built in DIR.tmp.<pid> and renamed
 * to DIR; --update stages its new tasks in DIR/.staging.<pid>, renames them
 * into DIR once every model went through, then replaces index.json. */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kfuse/frontend.h"
#include "kfuse/partition.h"
#include "kfuse/compile.h"
#include "kfuse/task.h"
#include "tools_int.h"

#define SET_FORMAT "kfuse-task-set-v1"
#define CMD "tasks"

/* A key's state: a task (written), dropped for a reason of the key, or
 * (so far) seen only where its outputs do not depend on the model's
 * inputs. */
enum { KEPT, DROPPED, INDEPENDENT };

typedef struct rec {
  char key[65];
  char dir[65];        /* the task's directory under DIR, once written */
  int state;
  char reason[24];     /* DROPPED's */
  char why[200];
  char kind[16];
  char *ops;           /* "addmm+relu" */
  int n_inputs, n_outputs;
  double bytes, flops, floor_us;
  cJSON *occ;          /* [{"model", "group"[, "input_independent"]}] */
  bool fresh;          /* written by this run, in the staging directory */
} rec;

typedef struct set {
  rec *r;
  int n, cap;
  int *slot;           /* open addressing over r by key; -1 empty */
  int n_slots;
} set;

typedef struct filters {
  double min_us, max_us; /* max_us INFINITY: none */
  unsigned kinds;        /* bit per kf_group_kind; 0: every kind */
} filters;

/* ---- the set ---------------------------------------------------------------- */

static uint64_t key_hash(const char *k) {
  uint64_t h = 1469598103934665603ull;
  for (; *k; k++) h = (h ^ (uint8_t)*k) * 1099511628211ull;
  return h;
}

static int set_find(const set *s, const char *key) {
  if (!s->n_slots) return -1;
  for (uint64_t h = key_hash(key);; h++) {
    int i = s->slot[h & (uint64_t)(s->n_slots - 1)];
    if (i < 0) return -1;
    if (strcmp(s->r[i].key, key) == 0) return i;
  }
}

static void slot_put(set *s, int i) {
  uint64_t h = key_hash(s->r[i].key);
  while (s->slot[h & (uint64_t)(s->n_slots - 1)] >= 0) h++;
  s->slot[h & (uint64_t)(s->n_slots - 1)] = i;
}

/* A new record for key (zeroed but for the key and an empty occurrence
 * list), or NULL when out of memory. */
static rec *set_add(set *s, const char *key) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    rec *r = realloc(s->r, (size_t)cap * sizeof *r);
    if (!r) return NULL;
    s->r = r;
    s->cap = cap;
  }
  if (2 * (s->n + 1) > s->n_slots) {
    int n = s->n_slots ? 2 * s->n_slots : 128;
    int *slot = malloc((size_t)n * sizeof *slot);
    if (!slot) return NULL;
    free(s->slot);
    s->slot = slot;
    s->n_slots = n;
    for (int i = 0; i < n; i++) s->slot[i] = -1;
    for (int i = 0; i < s->n; i++) slot_put(s, i);
  }
  rec *x = &s->r[s->n];
  memset(x, 0, sizeof *x);
  snprintf(x->key, sizeof x->key, "%s", key);
  x->occ = cJSON_CreateArray();
  if (!x->occ) return NULL;
  slot_put(s, s->n++);
  return x;
}

static void set_fini(set *s) {
  for (int i = 0; i < s->n; i++) {
    free(s->r[i].ops);
    cJSON_Delete(s->r[i].occ);
  }
  free(s->r);
  free(s->slot);
}

/* ---- files ------------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  (void)(flag == FTW_DP ? rmdir(path) : unlink(path)); /* best effort: go on */
  return 0;
}

/* Removes a directory this command made (under a name of its own) and
 * everything in it, links not followed. */
static void remove_tree(const char *dir) { (void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* ---- the index -------------------------------------------------------------- */

static cJSON *options_json(const kf_compile_options *o) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  char target[32];
  snprintf(target, sizeof target, "sm_%d%s", o->target.sm, o->target.arch_specific ? "a" : "");
  cJSON_AddStringToObject(j, "precision", kf_precision_name(o->precision));
  cJSON_AddStringToObject(j, "target", target);
  cJSON_AddBoolToObject(j, "fuse", o->fuse);
  cJSON_AddBoolToObject(j, "horizontal", !o->no_horizontal);
  cJSON_AddBoolToObject(j, "cudnn", !o->no_cudnn);
  cJSON_AddBoolToObject(j, "channels_last", !o->no_channels_last);
  return j;
}

static cJSON *filters_json(const filters *f) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddNumberToObject(j, "min_floor_us", f->min_us);
  if (isinf(f->max_us)) cJSON_AddNullToObject(j, "max_floor_us");
  else cJSON_AddNumberToObject(j, "max_floor_us", f->max_us);
  if (!f->kinds) {
    cJSON_AddNullToObject(j, "kinds");
  } else {
    cJSON *k = cJSON_AddArrayToObject(j, "kinds");
    for (int i = KF_GROUP_ELEMENTWISE; k && i <= KF_GROUP_SCAN; i++)
      if (f->kinds & (1u << i)) cJSON_AddItemToArray(k, cJSON_CreateString(kf_group_kind_name((kf_group_kind)i)));
  }
  cJSON_AddBoolToObject(j, "constant_output", true);
  cJSON_AddBoolToObject(j, "input_independent", true);
  return j;
}

static cJSON *rec_json(const rec *x) {
  cJSON *e = cJSON_CreateObject();
  if (!e) return NULL;
  cJSON_AddStringToObject(e, "key", x->key);
  if (x->state == KEPT) {
    cJSON_AddStringToObject(e, "dir", x->dir);
  } else {
    cJSON_AddStringToObject(e, "reason", x->reason);
    cJSON_AddStringToObject(e, "why", x->why);
  }
  cJSON_AddStringToObject(e, "kind", x->kind);
  cJSON_AddStringToObject(e, "ops", x->ops);
  cJSON_AddNumberToObject(e, "inputs", x->n_inputs);
  cJSON_AddNumberToObject(e, "outputs", x->n_outputs);
  cJSON *f = cJSON_AddObjectToObject(e, "floor");
  if (f) {
    cJSON_AddNumberToObject(f, "bytes", x->bytes);
    cJSON_AddNumberToObject(f, "flops", x->flops);
    cJSON_AddNumberToObject(f, "estimate_us", x->floor_us);
  }
  cJSON *o = cJSON_Duplicate(x->occ, true);
  if (o) cJSON_AddItemToObject(e, "occurrences", o);
  return e;
}

static const char *const reasons[] = {"kind", "constant_output", "floor_below", "floor_above",
                                      "input_independent"};

/* The whole index: options, filters, counts, models, tasks, dropped. */
static char *index_text(const set *s, const kf_compile_options *o, const filters *f, const cJSON *models,
                        const cJSON *failed) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "format", SET_FORMAT);
  cJSON_AddItemToObject(j, "options", options_json(o));
  cJSON_AddItemToObject(j, "filters", filters_json(f));
  int n_tasks = 0, n_dropped = 0, n_occ = 0, by[5] = {0};
  for (int i = 0; i < s->n; i++) {
    n_occ += cJSON_GetArraySize(s->r[i].occ);
    if (s->r[i].state == KEPT) {
      n_tasks++;
      continue;
    }
    n_dropped++;
    for (int k = 0; k < 5; k++)
      if (strcmp(s->r[i].reason, reasons[k]) == 0) by[k]++;
  }
  cJSON *sum = cJSON_AddObjectToObject(j, "summary");
  if (sum) {
    cJSON_AddNumberToObject(sum, "models", cJSON_GetArraySize(models));
    cJSON_AddNumberToObject(sum, "models_failed", cJSON_GetArraySize(failed));
    cJSON_AddNumberToObject(sum, "groups", n_occ);
    cJSON_AddNumberToObject(sum, "unique_keys", s->n);
    cJSON_AddNumberToObject(sum, "duplicates", n_occ - s->n);
    cJSON_AddNumberToObject(sum, "tasks", n_tasks);
    cJSON_AddNumberToObject(sum, "dropped", n_dropped);
    cJSON *d = cJSON_AddObjectToObject(sum, "dropped_by_reason");
    for (int k = 0; d && k < 5; k++) cJSON_AddNumberToObject(d, reasons[k], by[k]);
  }
  cJSON_AddItemToObject(j, "models", cJSON_Duplicate(models, true));
  cJSON_AddItemToObject(j, "failed", cJSON_Duplicate(failed, true));
  cJSON *tasks = cJSON_AddArrayToObject(j, "tasks");
  cJSON *dropped = cJSON_AddArrayToObject(j, "dropped");
  for (int i = 0; tasks && dropped && i < s->n; i++)
    cJSON_AddItemToArray(s->r[i].state == KEPT ? tasks : dropped, rec_json(&s->r[i]));
  char *text = cJSON_Print(j);
  cJSON_Delete(j);
  return text;
}

/* Numbers and strings of an index entry, or an error naming the file, the
 * entry and the field. */
static bool get_str(const cJSON *e, const char *name, char *out, size_t n, const char *path, const char *list,
                    int k, kf_diag *diag) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, name);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= n) {
    kf_diag_error(diag, "%s: %s[%d].%s: missing, not a string or too long", path, list, k, name);
    return false;
  }
  snprintf(out, n, "%s", v->valuestring);
  return true;
}

static bool get_num(const cJSON *e, const char *name, double *out, const char *path, const char *list, int k,
                    kf_diag *diag) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, name);
  if (!cJSON_IsNumber(v)) {
    kf_diag_error(diag, "%s: %s[%d].%s: missing or not a number", path, list, k, name);
    return false;
  }
  *out = v->valuedouble;
  return true;
}

/* An existing set's index into s, *models and *failed (--update): its
 * options and filters must be o's and f's, or keys would mix. */
static kf_status load_index(const char *dir, const kf_compile_options *o, const filters *f, set *s, cJSON **models,
                            cJSON **failed, kf_diag *diag) {
  char path[4200];
  snprintf(path, sizeof path, "%s/index.json", dir);
  char *text = NULL;
  kf_status st = kf_read_text(path, 1L << 30, &text, diag);
  if (st) return st;
  cJSON *j = cJSON_Parse(text);
  free(text);
  cJSON *oj = options_json(o), *fj = filters_json(f);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
  st = KF_ERR_FORMAT;
  if (!j || !oj || !fj) {
    if (!j) kf_diag_error(diag, "%s: not JSON", path);
    st = j ? KF_ERR_NOMEM : KF_ERR_FORMAT;
  } else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, SET_FORMAT) != 0) {
    kf_diag_error(diag, "%s: not a task set's index (format %s expected)", path, SET_FORMAT);
  } else if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, "options"), oj, true)) {
    kf_diag_error(diag, "%s: the set was made with other compile options (its \"options\"); --update needs the same "
                  "--precision, --target and --no-* options", path);
    st = KF_ERR_ARG;
  } else if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, "filters"), fj, true)) {
    kf_diag_error(diag, "%s: the set was made with other filters (its \"filters\"); --update needs the same "
                  "--min-floor-us, --max-floor-us and --kinds", path);
    st = KF_ERR_ARG;
  } else {
    st = KF_OK;
  }
  cJSON_Delete(oj);
  cJSON_Delete(fj);
  static const char *const lists[] = {"tasks", "dropped"};
  for (int l = 0; l < 2 && !st; l++) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, lists[l]);
    if (!cJSON_IsArray(arr)) {
      kf_diag_error(diag, "%s: \"%s\" missing or not a list", path, lists[l]);
      st = KF_ERR_FORMAT;
      break;
    }
    int k = 0;
    for (const cJSON *e = arr->child; e && !st; e = e->next, k++) {
      char key[65];
      const cJSON *ops = cJSON_GetObjectItemCaseSensitive(e, "ops");
      const cJSON *fl = cJSON_GetObjectItemCaseSensitive(e, "floor");
      const cJSON *occ = cJSON_GetObjectItemCaseSensitive(e, "occurrences");
      double ni, no;
      if (!get_str(e, "key", key, sizeof key, path, lists[l], k, diag) || strlen(key) != 64 ||
          !cJSON_IsString(ops) ||
          !get_num(e, "inputs", &ni, path, lists[l], k, diag) || !get_num(e, "outputs", &no, path, lists[l], k, diag) ||
          !cJSON_IsObject(fl) || !cJSON_IsArray(occ)) {
        kf_diag_error(diag, "%s: %s[%d]: not a task set entry (key, ops, inputs, outputs, floor, occurrences)", path,
                      lists[l], k);
        st = KF_ERR_FORMAT;
        break;
      }
      if (set_find(s, key) >= 0) {
        kf_diag_error(diag, "%s: %s[%d]: key %s listed twice", path, lists[l], k, key);
        st = KF_ERR_FORMAT;
        break;
      }
      rec *x = set_add(s, key);
      if (!x || !(x->ops = strdup(ops->valuestring))) {
        st = KF_ERR_NOMEM;
        break;
      }
      x->n_inputs = (int)ni;
      x->n_outputs = (int)no;
      cJSON_Delete(x->occ);
      x->occ = cJSON_Duplicate(occ, true);
      if (!x->occ) {
        st = KF_ERR_NOMEM;
        break;
      }
      if (!get_str(e, "kind", x->kind, sizeof x->kind, path, lists[l], k, diag) ||
          !get_num(fl, "bytes", &x->bytes, path, lists[l], k, diag) ||
          !get_num(fl, "flops", &x->flops, path, lists[l], k, diag) ||
          !get_num(fl, "estimate_us", &x->floor_us, path, lists[l], k, diag)) {
        st = KF_ERR_FORMAT;
      } else if (l == 0) {
        x->state = KEPT;
        if (!get_str(e, "dir", x->dir, sizeof x->dir, path, lists[l], k, diag)) st = KF_ERR_FORMAT;
      } else if (!get_str(e, "reason", x->reason, sizeof x->reason, path, lists[l], k, diag) ||
                 !get_str(e, "why", x->why, sizeof x->why, path, lists[l], k, diag)) {
        st = KF_ERR_FORMAT;
      } else {
        x->state = strcmp(x->reason, "input_independent") == 0 ? INDEPENDENT : DROPPED;
      }
    }
  }
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "models");
  const cJSON *fa = cJSON_GetObjectItemCaseSensitive(j, "failed");
  if (!st && (!cJSON_IsArray(m) || !cJSON_IsArray(fa))) {
    kf_diag_error(diag, "%s: \"models\" or \"failed\" missing or not a list", path);
    st = KF_ERR_FORMAT;
  }
  if (!st) {
    cJSON_Delete(*models);
    cJSON_Delete(*failed);
    *models = cJSON_Duplicate(m, true);
    *failed = cJSON_Duplicate(fa, true);
    if (!*models || !*failed) st = KF_ERR_NOMEM;
  }
  cJSON_Delete(j);
  return st;
}

/* ---- one model -------------------------------------------------------------- */

/* The ops of a group as "addmm+relu" (malloc'd), or NULL when out of
 * memory. */
static char *ops_summary(const kf_group *grp) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  for (int i = 0; i < grp->n_ops; i++) {
    const char *n = kf_op_info_get(grp->ops[i]->code)->name;
    if (strncmp(n, "kf.", 3) == 0) n += 3;
    kf_strbuf_printf(&b, "%s%s", i ? "+" : "", n);
  }
  if (b.failed) {
    kf_strbuf_fini(&b);
    return NULL;
  }
  return b.data ? b.data : strdup("");
}

/* The key filters (kind, a fill among the outputs, the floor window) on
 * a new record: false and the reason when one drops it. */
static bool key_passes(rec *x, const kf_group *grp, const kf_task_facts *fa, const filters *f) {
  if (f->kinds && !(f->kinds & (1u << grp->kind))) {
    snprintf(x->reason, sizeof x->reason, "kind");
    snprintf(x->why, sizeof x->why, "its kind, %s, is not one --kinds keeps", x->kind);
  } else if (fa->constant_output >= 0) {
    snprintf(x->reason, sizeof x->reason, "constant_output");
    snprintf(x->why, sizeof x->why, "output %d is computed from none of the group's inputs (a fill: the same "
             "whatever the inputs)", fa->constant_output);
  } else if (x->floor_us < f->min_us) {
    snprintf(x->reason, sizeof x->reason, "floor_below");
    snprintf(x->why, sizeof x->why, "its floor estimate, %.6g us, is below --min-floor-us %g", x->floor_us,
             f->min_us);
  } else if (x->floor_us > f->max_us) {
    snprintf(x->reason, sizeof x->reason, "floor_above");
    snprintf(x->why, sizeof x->why, "its floor estimate, %.6g us, is above --max-floor-us %g", x->floor_us,
             f->max_us);
  } else {
    return true;
  }
  return false;
}

/* A directory name for x: the key's first 16 hex digits, or the whole key
 * where another key already has those. */
static void name_dir(const set *s, rec *x) {
  snprintf(x->dir, sizeof x->dir, "%.16s", x->key);
  for (int i = 0; i < s->n; i++)
    if (&s->r[i] != x && s->r[i].state == KEPT && strcmp(s->r[i].dir, x->dir) == 0) {
      snprintf(x->dir, sizeof x->dir, "%s", x->key);
      return;
    }
}

typedef struct counts {
  int groups, fresh, seen;
} counts;

/* The groups of one loaded, partitioned model into s; new tasks into
 * stage. */
static kf_status add_groups(set *s, const kf_graph *g, const kf_partition *p, const kf_task_facts *facts,
                            const char *model, const kf_compile_options *o, const filters *f, const char *stage,
                            counts *c, kf_diag *diag) {
  for (int k = 0; k < p->n_groups; k++) {
    const kf_group *grp = &p->groups[k];
    const kf_task_facts *fa = &facts[k];
    if (grp->kind == KF_GROUP_VIEW) continue;
    c->groups++;
    int i = set_find(s, grp->key_hex);
    rec *x;
    if (i >= 0) {
      x = &s->r[i];
      c->seen++;
    } else {
      x = set_add(s, grp->key_hex);
      if (!x || !(x->ops = ops_summary(grp))) return KF_ERR_NOMEM;
      snprintf(x->kind, sizeof x->kind, "%s", kf_group_kind_name(grp->kind));
      x->n_inputs = 0;
      for (int j = 0; j < grp->n_inputs; j++)
        if (!(grp->inputs[j]->def && grp->inputs[j]->def->code == KF_OP_SCALAR)) x->n_inputs++;
      x->n_outputs = grp->n_outputs;
      x->bytes = fa->bytes;
      x->flops = fa->flops;
      x->floor_us = fa->floor_ms * 1e3;
      x->state = key_passes(x, grp, fa, f) ? INDEPENDENT : DROPPED;
      if (x->state == INDEPENDENT) {
        snprintf(x->reason, sizeof x->reason, "input_independent");
        snprintf(x->why, sizeof x->why, "in every occurrence, an output depends on no input of the model "
                 "(computed from weights and constants only)");
      }
    }
    cJSON *e = cJSON_CreateObject();
    if (!e) return KF_ERR_NOMEM;
    cJSON_AddStringToObject(e, "model", model);
    cJSON_AddNumberToObject(e, "group", grp->id);
    if (fa->fixed_output >= 0) cJSON_AddBoolToObject(e, "input_independent", true);
    cJSON_AddItemToArray(x->occ, e);
    if (x->state == INDEPENDENT && fa->fixed_output < 0) { /* the first occurrence that counts: its task */
      name_dir(s, x);
      char path[4300];
      if ((size_t)snprintf(path, sizeof path, "%s/%s", stage, x->dir) >= sizeof path) {
        kf_diag_error(diag, "%s: path too long", stage);
        return KF_ERR_ARG;
      }
      kf_status st = kf_task_write_group(g, p, grp, o, path, diag);
      if (st) return st;
      x->state = KEPT;
      x->fresh = true;
      x->reason[0] = x->why[0] = 0;
      c->fresh++;
    }
  }
  return KF_OK;
}

/* A sink that passes every message on and keeps the first error (the
 * reason a model failed, for index.json). */
typedef struct keep_first {
  kf_diag *next;
  char first[400];
} keep_first;

static void keep_first_fn(void *user, kf_diag_level level, const char *msg) {
  keep_first *k = user;
  if (level == KF_DIAG_ERROR && !k->first[0]) snprintf(k->first, sizeof k->first, "%s", msg);
  kf_diag_report(k->next, level, "%s", msg);
}

/* One model through the frontend, the verifier, the compile passes and
 * the partition, its groups into s. *loaded false: it failed before any
 * of its groups reached s (what --keep-going may skip). */
static kf_status add_model(set *s, const char *path, const kf_compile_options *o, const filters *f,
                           const char *stage, counts *c, bool *loaded, char *why, size_t why_n, kf_diag *diag) {
  *loaded = false;
  keep_first kd = {diag, ""};
  kf_diag d;
  kf_diag_init(&d, keep_first_fn, &kd);
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  kf_partition *p = NULL;
  kf_task_facts *facts = NULL;
  kf_status st = kf_model_load(path, &lo, &g, &d);
  if (!st) st = kf_graph_verify(g, &d);
  if (!st) st = kf_task_partition(g, o, &p, &d);
  if (!st && !(facts = calloc((size_t)p->n_groups + 1, sizeof *facts))) st = KF_ERR_NOMEM;
  if (!st) st = kf_task_facts_all(g, p, facts);
  if (st) {
    snprintf(why, why_n, "%s", kd.first[0] ? kd.first : kf_status_str(st));
  } else {
    *loaded = true;
    st = add_groups(s, g, p, facts, base_name(path), o, f, stage, c, &d);
  }
  free(facts);
  kf_partition_destroy(p);
  kf_graph_destroy(g);
  return st;
}

/* ---- the command ------------------------------------------------------------ */

static bool parse_kinds(const char *v, unsigned *out, kf_diag *diag) {
  *out = 0;
  const char *s = v;
  while (*s) {
    size_t n = strcspn(s, ",");
    int found = -1;
    for (int i = KF_GROUP_ELEMENTWISE; i <= KF_GROUP_SCAN && found < 0; i++) {
      const char *name = kf_group_kind_name((kf_group_kind)i);
      if (strlen(name) == n && strncmp(name, s, n) == 0) found = i;
    }
    if (found < 0) {
      kf_cli_error(CMD, diag, "--kinds: '%.*s' is not a kind (elementwise, reduce, gemm, conv, attention, opaque, "
                   "scan)", (int)n, s);
      return false;
    }
    *out |= 1u << found;
    s += n;
    if (*s == ',') s++;
  }
  if (!*out) {
    kf_cli_error(CMD, diag, "--kinds: no kind given");
    return false;
  }
  return true;
}

/* The staged tasks of an --update renamed into dir, then index.json. */
static kf_status commit_update(set *s, const char *dir, const char *stage, const char *index, kf_diag *diag) {
  char from[4300], to[4300];
  for (int i = 0; i < s->n; i++) {
    if (!s->r[i].fresh) continue;
    snprintf(from, sizeof from, "%s/%s", stage, s->r[i].dir);
    snprintf(to, sizeof to, "%s/%s", dir, s->r[i].dir);
    if (exists(to)) {
      kf_diag_error(diag, "%s: exists but index.json does not list it (left by an interrupted run?); remove it and "
                    "run again", to);
      return KF_ERR_IO;
    }
    if (rename(from, to) != 0) {
      kf_diag_error(diag, "%s: cannot rename into place as %s: %s", from, to, strerror(errno));
      return KF_ERR_IO;
    }
    s->r[i].fresh = false;
  }
  snprintf(to, sizeof to, "%s/index.json", dir);
  return kf_write_file_atomic(to, index, strlen(index), diag);
}

/* The set: models into out (new, or --update's existing one). */
static kf_status make_set(const char **models, int n_models, const char *out, const kf_compile_options *o,
                          const filters *f, bool update, bool keep_going, kf_diag *diag) {
  set s = {0};
  cJSON *mlist = cJSON_CreateArray(), *flist = cJSON_CreateArray();
  char stage[4200] = "", *index = NULL;
  bool have = exists(out);
  kf_status st = mlist && flist ? KF_OK : KF_ERR_NOMEM;
  if (!st && have && !update) {
    kf_diag_error(diag, "%s: exists; kfuse tasks writes a new directory (--update adds to a set made by kfuse tasks)",
                  out);
    st = KF_ERR_ARG;
  }
  if (!st && have) st = load_index(out, o, f, &s, &mlist, &flist, diag);
  if (!st) {
    if (have) snprintf(stage, sizeof stage, "%s/.staging.%ld", out, (long)getpid());
    else snprintf(stage, sizeof stage, "%s.tmp.%ld", out, (long)getpid());
    if (mkdir(stage, 0777) != 0) {
      kf_diag_error(diag, "%s: cannot create: %s", stage, strerror(errno));
      stage[0] = 0;
      st = KF_ERR_IO;
    }
  }
  int n_failed = 0;
  for (int m = 0; m < n_models && !st; m++) {
    counts c = {0};
    bool loaded = false;
    char why[400] = "";
    kf_status ms = add_model(&s, models[m], o, f, stage, &c, &loaded, why, sizeof why, diag);
    if (ms && (!keep_going || loaded || ms == KF_ERR_NOMEM)) {
      kf_diag_error(diag, "tasks: model %d of %d, %s, failed; nothing written%s", m + 1, n_models, models[m],
                    keep_going || loaded ? "" : " (--keep-going skips models that fail to load or compile)");
      st = ms;
      break;
    }
    cJSON *e = cJSON_CreateObject();
    if (!e) {
      st = KF_ERR_NOMEM;
      break;
    }
    cJSON_AddStringToObject(e, "model", base_name(models[m]));
    if (ms) { /* --keep-going */
      n_failed++;
      cJSON_AddStringToObject(e, "error", why);
      cJSON_AddItemToArray(flist, e);
      kf_diag_warn(diag, "tasks: [%d/%d] %s: skipped (--keep-going): %s", m + 1, n_models, models[m], why);
      continue;
    }
    cJSON_AddNumberToObject(e, "groups", c.groups);
    cJSON_AddNumberToObject(e, "new_tasks", c.fresh);
    cJSON_AddItemToArray(mlist, e);
    if (o->progress)
      fprintf(stderr, "kfuse: tasks: [%d/%d] %s: %d groups, %d new tasks, %d seen before\n", m + 1, n_models,
              models[m], c.groups, c.fresh, c.seen);
  }
  if (!st && n_failed == n_models) {
    kf_diag_error(diag, "tasks: every model failed; nothing written");
    st = KF_ERR_INVALID;
  }
  if (!st && !(index = index_text(&s, o, f, mlist, flist))) st = KF_ERR_NOMEM;
  if (!st && !have) {
    char path[4300];
    snprintf(path, sizeof path, "%s/index.json", stage);
    st = kf_write_file_atomic(path, index, strlen(index), diag);
    if (!st && rename(stage, out) != 0) {
      kf_diag_error(diag, "%s: cannot rename into place as %s: %s", stage, out, strerror(errno));
      st = KF_ERR_IO;
    }
    if (!st) stage[0] = 0;
  } else if (!st) {
    st = commit_update(&s, out, stage, index, diag);
  }
  if (stage[0]) remove_tree(stage);
  if (!st && o->progress) {
    int n_tasks = 0;
    for (int i = 0; i < s.n; i++) n_tasks += s.r[i].state == KEPT;
    fprintf(stderr, "kfuse: tasks: %d tasks (%d unique keys, %d dropped) in %s; index.json lists them\n", n_tasks,
            s.n, s.n - n_tasks, out);
  }
  free(index);
  cJSON_Delete(mlist);
  cJSON_Delete(flist);
  set_fini(&s);
  return st;
}

int kf_cmd_tasks(int argc, char **argv, kf_diag *diag) {
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.progress = true;
  filters f = {0, INFINITY, 0};
  const char *v;
  char *out = NULL;
  bool update = false, keep_going = false;
  int took, n_models = 0;
  const char **models = calloc((size_t)argc + 1, sizeof *models);
  if (!models) return 1;
  int rc = 2;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, CMD);
      rc = 0;
      goto done;
    } else if (strcmp(a, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, CMD, &v, diag)) goto done;
      free(out);
      if (!(out = strdup(v))) goto done;
    } else if (strcmp(a, "--update") == 0) {
      update = true;
    } else if (strcmp(a, "--keep-going") == 0) {
      keep_going = true;
    } else if (strcmp(a, "--min-floor-us") == 0) {
      if (!kf_cli_value(argc, argv, &i, CMD, &v, diag) ||
          !kf_cli_double(CMD, "--min-floor-us", v, 0, INFINITY, &f.min_us, diag))
        goto done;
    } else if (strcmp(a, "--max-floor-us") == 0) {
      if (!kf_cli_value(argc, argv, &i, CMD, &v, diag) ||
          !kf_cli_double(CMD, "--max-floor-us", v, 0, INFINITY, &f.max_us, diag))
        goto done;
    } else if (strcmp(a, "--kinds") == 0) {
      if (!kf_cli_value(argc, argv, &i, CMD, &v, diag) || !parse_kinds(v, &f.kinds, diag)) goto done;
    } else if ((took = kf_cli_task_option(argc, argv, &i, CMD, &o, diag)) != 0) {
      if (took < 0) goto done;
    } else if (a[0] == '-' && a[1]) {
      kf_cli_unknown(CMD, a, diag);
      goto done;
    } else {
      models[n_models++] = a;
    }
  }
  if (!n_models) {
    kf_cli_error(CMD, diag, "no model given");
    goto done;
  }
  if (!out || !*out) {
    kf_cli_error(CMD, diag, "-o DIR is required");
    goto done;
  }
  if (f.min_us > f.max_us) {
    kf_cli_error(CMD, diag, "--min-floor-us %g is above --max-floor-us %g", f.min_us, f.max_us);
    goto done;
  }
  for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--) out[n - 1] = 0;
  rc = make_set(models, n_models, out, &o, &f, update, keep_going, diag) ? 1 : 0;
done:
  free(models);
  free(out);
  return rc;
}
