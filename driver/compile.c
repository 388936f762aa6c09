/* driver/compile.c — the compile driver: graph in, module out.
 *
 *   compile passes (kf_pass_run_compile, pass/pipeline.c) -> partition -> one kernel unit per
 *   unique group key (built-in policy) -> NVRTC -> memory plan -> weights
 *   sidecar or embedded -> plan blob (driver/plan.c) -> object file
 *   (driver/emit.c) -> shared module linked with libkfuse_runtime.a
 *
 * Nothing here needs a GPU. Units are shared between groups with the same
 * canonical key, so repeated blocks compile once. The JSON report lists
 * every group with its key, policy, kernel and timing of each phase, the
 * arena next to the naive footprint, and whether kernels were verified
 * (never, here: that is the environment's job on a GPU). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "emit_int.h"
#include "kfr_hash.h"
#include "kfr_plan.h"
#include "kfr_plan_writer.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/pass.h"
#include "kfuse/task.h"
#include "kfuse/plan.h"
#include "units_int.h"

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Every file kfuse compile writes (weights, header, module or object,
 * report) goes to a temporary name in its own directory and is renamed into
 * place once all of them are written, so a reader sees the previous
 * artifact or the new one, never a truncated file, and a failed compile
 * leaves the previous artifact as it was (docs/DEPLOY.md). */
typedef struct artifact {
  char *final, *tmp;
} artifact;

enum { ART_WEIGHTS, ART_HEADER, ART_MODULE, ART_REPORT, ART_COUNT };

/* Rename order: the report first, the module last, so that a rename that
 * fails leaves the previous module in place; a new weights file beside it
 * is then refused by its model id at create, never run with the old plan. */
static const int commit_order[ART_COUNT] = {ART_REPORT, ART_HEADER, ART_WEIGHTS, ART_MODULE};

static kf_status art_init(artifact *a, const char *final) {
  size_t n = strlen(final) + 40;
  a->final = malloc(n);
  a->tmp = malloc(n);
  if (!a->final || !a->tmp) return KF_ERR_NOMEM;
  snprintf(a->final, n, "%s", final);
  snprintf(a->tmp, n, "%s.kfuse-tmp-%ld", final, (long)getpid());
  return KF_OK;
}

/* Rename every written artifact into place (commit_order), after checking
 * that no target is a directory, which rename would refuse half-way. */
static kf_status art_commit(artifact *a, kf_diag *diag) {
  for (int i = 0; i < ART_COUNT; i++) {
    struct stat st;
    if (a[i].tmp && lstat(a[i].final, &st) == 0 && S_ISDIR(st.st_mode)) {
      kf_diag_error(diag, "%s: is a directory; nothing was replaced", a[i].final);
      return KF_ERR_IO;
    }
  }
  for (int k = 0; k < ART_COUNT; k++) {
    artifact *x = &a[commit_order[k]];
    if (!x->tmp) continue;
    if (rename(x->tmp, x->final) != 0) {
      kf_diag_error(diag, "%s: cannot rename %s into place: %s", x->final, x->tmp, strerror(errno));
      return KF_ERR_IO;
    }
    free(x->tmp);
    x->tmp = NULL;
  }
  return KF_OK;
}

/* Remove what was not committed; free the names. */
static void art_fini(artifact *a) {
  for (int i = 0; i < ART_COUNT; i++) {
    if (a[i].tmp) unlink(a[i].tmp);
    free(a[i].tmp);
    free(a[i].final);
    a[i].tmp = a[i].final = NULL;
  }
}

/* ---- weights ------------------------------------------------------------- */

/* n bytes to the weights file, hashed as they go (runtime/kfr_hash.h) */
static bool put(FILE *f, kfr_xxh64_state *hs, const void *p, size_t n) {
  kfr_xxh64_update(hs, p, n);
  return fwrite(p, 1, n, f) == n;
}

/* Lay out every weight a kf.param still references: one region per storage
 * record (tied weights share it), 256-byte aligned. Writes the bytes to f
 * and hashes them into hs (f NULL: only compute offsets). */
static kf_status layout_weights(const kf_graph *g, int64_t *offset, int64_t *total, FILE *f,
                                kfr_xxh64_state *hs, const char *what, kf_diag *diag) {
  int64_t pos = 0;
  bool *used = calloc((size_t)g->n_weights + 1, sizeof *used);
  if (!used) return KF_ERR_NOMEM;
  for (const kf_op *op = g->first; op; op = op->next) {
    if (op->code != KF_OP_PARAM) continue;
    const kf_weight *w = kf_graph_find_weight(g, kf_op_get_str(op, "fqn"));
    if (w) used[w - g->weights] = true;
  }
  kf_status st = KF_OK;
  static const char zeros[256];
  for (int i = 0; i < g->n_weights && !st; i++) {
    offset[i] = -1;
    if (!used[i]) continue;
    const kf_weight *w = &g->weights[i];
    int shared = -1;
    for (int j = 0; j < i && w->storage; j++)
      if (offset[j] >= 0 && g->weights[j].storage && strcmp(g->weights[j].storage, w->storage) == 0)
        shared = j;
    if (shared >= 0) {
      offset[i] = offset[shared];
      continue;
    }
    int64_t pad = (256 - pos % 256) % 256;
    if (f && pad && !put(f, hs, zeros, (size_t)pad)) st = KF_ERR_IO;
    pos += pad;
    offset[i] = pos;
    if (f && !st) {
      const void *data = NULL;
      int64_t n = 0;
      if (!g->store.get) {
        kf_diag_error(diag, "weight '%s' has no data (the model was read without weights)", w->fqn);
        st = KF_ERR_ARG;
        break;
      }
      st = g->store.get(g->store.impl, w->fqn, &data, &n, diag);
      if (st) break;
      if (n < w->storage_bytes) {
        kf_diag_error(diag, "weight '%s': the store holds %lld bytes, the graph expects %lld", w->fqn,
                      (long long)n, (long long)w->storage_bytes);
        st = KF_ERR_FORMAT;
        break;
      }
      if (w->storage_bytes && !put(f, hs, data, (size_t)w->storage_bytes)) st = KF_ERR_IO;
    }
    pos += w->storage_bytes;
  }
  if (st == KF_ERR_IO) kf_diag_error(diag, "%s: write failed: %s", what, strerror(errno));
  free(used);
  *total = pos;
  return st;
}

/* ---- the compile passes and the partition -------------------------------- */

/* ---- units --------------------------------------------------------------- */

/* One slot per unique group key, in program order, each with its unit
 * (driver/units.c); units[i] is group i's (NULL for view groups). */
static kf_status build_units(const kf_graph *g, const kf_partition *p, const kf_compile_options *o,
                             kf_unit ***out_units, kf_uslot **out_slots, int *n_slots, kf_units_state *us,
                             kf_diag *diag) {
  kf_unit **units = calloc((size_t)p->n_groups + 1, sizeof *units);
  kf_uslot *slots = calloc((size_t)p->n_groups + 1, sizeof *slots);
  int *slot_of = calloc((size_t)p->n_groups + 1, sizeof *slot_of);
  if (!units || !slots || !slot_of) {
    free(units);
    free(slots);
    free(slot_of);
    return KF_ERR_NOMEM;
  }
  int ns = 0;
  kf_status st = KF_OK;
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    slot_of[i] = -1;
    if (grp->kind == KF_GROUP_VIEW) continue;
    int found = -1;
    for (int s = 0; s < ns && found < 0; s++)
      if (memcmp(slots[s].first->key, grp->key, sizeof grp->key) == 0) found = s;
    if (found < 0) {
      slots[ns] = (kf_uslot){.g = g, .p = p, .first = grp};
      found = ns++;
    }
    slot_of[i] = found;
  }
  /* units given for groups: every key names a group, and is judged */
  bool judging = o->picker && !o->no_tune && !o->reference;
  for (int k = 0; k < o->n_given && !st; k++) {
    int hit = 0;
    for (int s = 0; s < ns; s++)
      if (strcmp(slots[s].first->key_hex, o->given_keys[k]) == 0) {
        slots[s].given_dir = o->given_dirs[k];
        hit++;
      }
    if (!hit) {
      kf_diag_error(diag, "--unit %s=%s: no group of this model has that key (kfuse partition --canonical lists "
                    "them; a task's task.json gives its group's)", o->given_keys[k], o->given_dirs[k]);
      st = KF_ERR_ARG;
    } else if (!judging) {
      kf_diag_error(diag, "--unit %s=%s: given units are judged before they are used, and nothing is judged "
                    "here (%s)", o->given_keys[k], o->given_dirs[k],
                    o->no_tune ? "--no-judge" : o->reference ? "the fp64 reference is not judged"
                                                             : "no judge in this build of the compile path");
      st = KF_ERR_ARG;
    }
  }
  if (!st) st = kf_units_build(slots, ns, o, us, diag);
  if (st) {
    kf_units_free(slots, ns);
    free(units);
    free(slots);
    free(slot_of);
    return st;
  }
  for (int i = 0; i < p->n_groups; i++)
    if (slot_of[i] >= 0) units[i] = slots[slot_of[i]].unit;
  free(slot_of);
  *out_units = units;
  *out_slots = slots;
  *n_slots = ns;
  return KF_OK;
}

/* ---- report -------------------------------------------------------------- */

static const char *compute_name(int c) {
  switch (c) {
  case KFR_COMPUTE_32F: return "fp32";
  case KFR_COMPUTE_32F_TF32: return "tf32";
  case KFR_COMPUTE_32F_BF16: return "bf16";
  case KFR_COMPUTE_32F_F16: return "fp16";
  default: return "?";
  }
}

/* The unit's library steps and the math they may use: "library": ["cudnn
 * conv tf32", "cublaslt gemm fp32", ...]. A cuDNN convolution of f32 with a
 * compute other than fp32 may use TF32 tensor cores, and says "tf32". */
static void add_library_steps(cJSON *e, const kf_unit *u) {
  cJSON *lib = NULL;
  for (int s = 0; s < u->n_steps; s++) {
    const kf_unit_step *q = &u->steps[s];
    char buf[64];
    if (q->kind == KF_USTEP_GEMM)
      snprintf(buf, sizeof buf, "cublaslt gemm %s",
               q->gemm.dtype == KF_DTYPE_F64 ? "fp64" : compute_name(q->gemm.compute));
    else if (q->kind == KF_USTEP_CONV)
      snprintf(buf, sizeof buf, "cudnn %s %s", q->conv.transposed ? "conv_transpose" : "conv",
               q->conv.dtype == KF_DTYPE_F32 ? compute_name(q->conv.compute)
                                             : kf_dtype_name(q->conv.dtype));
    else
      continue;
    if (!lib) lib = cJSON_AddArrayToObject(e, "library");
    if (lib) cJSON_AddItemToArray(lib, cJSON_CreateString(buf));
  }
}

/* What one run of the module does: its plan's steps, which are the steps of
 * every non-view group's unit in group order (driver/plan.c). */
typedef struct run_steps {
  int launches, gemm, conv, memset, copy;
} run_steps;

static run_steps count_steps(const kf_partition *p, kf_unit **units) {
  run_steps r = {0, 0, 0, 0, 0};
  for (int i = 0; i < p->n_groups; i++) {
    if (p->groups[i].kind == KF_GROUP_VIEW || !units[i]) continue;
    for (int s = 0; s < units[i]->n_steps; s++)
      switch (units[i]->steps[s].kind) {
      case KF_USTEP_LAUNCH: r.launches++; break;
      case KF_USTEP_GEMM: r.gemm++; break;
      case KF_USTEP_CONV: r.conv++; break;
      case KF_USTEP_MEMSET: r.memset++; break;
      case KF_USTEP_COPY: r.copy++; break;
      default: break;
      }
  }
  return r;
}

/* A judged group's candidates and the judge's figures */
static void add_candidates(cJSON *e, const kf_uslot *sl) {
  const kf_pick_info *in = &sl->info;
  if (!in->judged) {
    char b[600];
    snprintf(b, sizeof b, "not judged: %s", in->why);
    cJSON_AddStringToObject(e, "judge", b);
    return;
  }
  cJSON *ca = cJSON_AddArrayToObject(e, "candidates");
  for (int k = 0; ca && k < sl->n_cands; k++) {
    const kf_pick_cand *c = &sl->cands[k];
    cJSON *ce = cJSON_CreateObject();
    cJSON_AddStringToObject(ce, "candidate", c->label);
    cJSON_AddBoolToObject(ce, "correct", c->correct);
    cJSON_AddNumberToObject(ce, "reward", c->reward);
    if (c->ms > 0) {
      cJSON_AddNumberToObject(ce, "ms", c->ms);
      if (sl->cands[0].ms > 0) cJSON_AddNumberToObject(ce, "speedup_vs_rule", sl->cands[0].ms / c->ms);
      if (in->floor_ms > 0) cJSON_AddNumberToObject(ce, "fraction_of_floor", in->floor_ms / c->ms);
    }
    if (!c->correct) cJSON_AddStringToObject(ce, "why", c->why);
    cJSON_AddBoolToObject(ce, "chosen", k == sl->chosen);
    if (c->judged) {
      cJSON_AddNumberToObject(ce, "verify_seconds", c->verify_s);
      cJSON_AddNumberToObject(ce, "time_seconds", c->time_s);
    }
    cJSON_AddItemToArray(ca, ce);
  }
  cJSON *j = cJSON_AddObjectToObject(e, "judge");
  cJSON_AddStringToObject(j, "device", in->device);
  cJSON_AddNumberToObject(j, "floor_ms", in->floor_ms);
  cJSON_AddNumberToObject(j, "workers", in->workers);
  cJSON_AddNumberToObject(j, "seconds", sl->pick_s);
  cJSON_AddNumberToObject(j, "sets_seconds", in->sets_s);
  cJSON_AddNumberToObject(j, "worker_seconds", in->worker_s);
  cJSON_AddNumberToObject(j, "device_open_seconds", in->open_s);
  cJSON_AddNumberToObject(j, "reference_seconds", in->refs_s);
}

/* The module check's result in the report (docs/ARCHITECTURE.md, "The
 * module check"). */
static void add_module_check(cJSON *r, const kf_module_check *mc) {
  cJSON *c = cJSON_AddObjectToObject(r, "module_check");
  cJSON_AddBoolToObject(c, "checked", mc->checked);
  if (mc->checked) {
    cJSON_AddBoolToObject(c, "passed", mc->passed);
    cJSON_AddStringToObject(c, "device", mc->device);
    cJSON_AddNumberToObject(c, "sets", mc->sets);
    cJSON_AddNumberToObject(c, "max_rel_err", mc->max_rel_err);
    cJSON_AddNumberToObject(c, "bound", mc->bound);
    cJSON_AddNumberToObject(c, "policy_bound", mc->policy_bound);
    /* how far rounding every value to its dtype moves the answer: an
     * output's bound is the policy's or a multiple of this */
    if (mc->rounding_err >= 0) cJSON_AddNumberToObject(c, "rounding_rel_err", mc->rounding_err);
    cJSON_AddNumberToObject(c, "seconds", mc->seconds);
    cJSON_AddNumberToObject(c, "reference_seconds", mc->reference_s);
    /* where the check's seconds went (the reference is built alongside
     * the compile; wait: what of it was not done when the module was) */
    cJSON *t = cJSON_AddObjectToObject(c, "seconds_in");
    cJSON_AddNumberToObject(t, "wait_for_reference", mc->wait_s);
    cJSON_AddNumberToObject(t, "load_module", mc->create_s);
    cJSON_AddNumberToObject(t, "module_runs", mc->run_s);
    cJSON_AddNumberToObject(t, "reference_runs", mc->ref_run_s);
    cJSON_AddNumberToObject(t, "search", mc->search_s);
    cJSON_AddNumberToObject(c, "repeat_max_diff", mc->repeat_diff);
    cJSON_AddStringToObject(c, "reference", mc->reference);
  }
  if (mc->why[0]) cJSON_AddStringToObject(c, mc->checked ? "failure" : "why", mc->why);
  if (mc->fallback[0]) {
    cJSON_AddStringToObject(c, "fallback", mc->fallback);
    cJSON_AddStringToObject(c, "first_failure", mc->first_failure);
  }
}

/* Hand the linked module to o->checker (kf_module_checker). */
static kf_status check_module(const kf_graph *g, const kf_partition *p, const kf_memplan *mp, kf_unit **units,
                              const kf_compile_options *o, const char *module_tmp, const char *weights_tmp,
                              kf_module_check *mc, kf_diag *diag) {
  uint32_t *end = calloc((size_t)p->n_groups + 1, sizeof *end);
  if (!end) return KF_ERR_NOMEM;
  uint32_t n = 0;
  for (int i = 0; i < p->n_groups; i++) {
    if (units[i]) n += (uint32_t)units[i]->n_steps;
    end[i] = n;
  }
  kf_module_built b = {.module_path = module_tmp,
                       .weights_path = weights_tmp,
                       .graph = g,
                       .partition = p,
                       .memplan = mp,
                       .units = units,
                       .end_step = end};
  kf_status st = o->checker->check(o->checker->user, &b, o, mc, diag);
  free(end);
  if (st == KF_ERR_MISMATCH) {
    /* a warning: the caller decides whether a fallback compile follows
     * (kfuse compile's) or the compile fails */
    kf_diag_warn(diag, "%s: the compiled module does not match the reference: %s%s%s", g->name, mc->why,
                 mc->bad_group >= 0 ? "; first diverging group: " : "", mc->bad_group >= 0 ? mc->bad_what : "");
  } else if (st) {
    kf_diag_error(diag, "%s: the module check failed: %s", g->name, mc->why[0] ? mc->why : kf_status_str(st));
  } else if (o->progress && mc->checked) {
    char rnd[96] = "";
    if (mc->rounding_err >= 0 && mc->bound > mc->policy_bound)
      snprintf(rnd, sizeof rnd, "; rounding alone moves the model %.1e", mc->rounding_err);
    fprintf(stderr, "kfuse: module check: %d input sets, worst relative error %.2e (bound %.1e%s) against the fp64 "
            "reference, %.2f s (reference built alongside in %.2f s, %.2f s waited for it)\n", mc->sets,
            mc->max_rel_err, mc->bound, rnd, mc->seconds, mc->reference_s, mc->wait_s);
  } else if (o->progress) {
    fprintf(stderr, "kfuse: module check: not run: %s\n", mc->why);
  }
  return st;
}

static kf_status write_report(const char *path, const kf_graph *g, const kf_partition *p,
                              const kf_memplan *mp, kf_unit **units, const kf_uslot *slots, int ns,
                              const kf_compile_options *o, const char *out_path, const void *blob,
                              size_t blob_bytes,
                              int64_t weights_bytes, const double *phase, const kf_units_state *ps,
                              run_steps rs, const kf_module_check *mc, kf_diag *diag) {
  cJSON *r = cJSON_CreateObject();
  if (!r) return KF_ERR_NOMEM;
  cJSON_AddStringToObject(r, "model", g->name);
  cJSON_AddStringToObject(r, "source", g->origin ? g->origin : "");
  cJSON_AddStringToObject(r, "module", out_path);
  cJSON_AddStringToObject(r, "emit", o->emit == KF_EMIT_SO ? "so" : "obj");
  char tgt[32];
  snprintf(tgt, sizeof tgt, "sm_%d%s", o->target.sm, o->target.arch_specific ? "a" : "");
  cJSON_AddStringToObject(r, "target", tgt);
  cJSON_AddStringToObject(r, "precision", kf_precision_name(o->precision));
  cJSON_AddStringToObject(r, "policy", o->reference ? "builtin fp64-reference (per op)" : "builtin");
  /* verified: every unique unit's chosen candidate passed the judge, in
   * this compile or before it was cached */
  int cached = ps->hits_local + ps->hits_remote, reverified = 0;
  for (int s = 0; s < ns; s++) reverified += slots[s].reverified;
  cJSON_AddBoolToObject(r, "verified", ns > 0 && ps->verified + cached - reverified == ns);
  cJSON_AddNumberToObject(r, "units_judged", ps->judged);
  cJSON_AddNumberToObject(r, "units_verified", ps->verified);
  cJSON_AddNumberToObject(r, "units_replaced", ps->replaced);
  cJSON_AddNumberToObject(r, "units_over_judge_time", ps->over_budget);
  cJSON_AddNumberToObject(r, "judge_seconds", o->judge_seconds);
  cJSON_AddNumberToObject(r, "units_compiled", ps->compiled);
  cJSON_AddNumberToObject(r, "units_from_cache", cached);
  cJSON *cj = cJSON_AddObjectToObject(r, "cache");
  cJSON_AddBoolToObject(cj, "used", ps->cache_on);
  if (ps->cache_on) {
    cJSON_AddStringToObject(cj, "dir", kf_cache_dir(o->cache));
    cJSON_AddNumberToObject(cj, "hits", cached);
    cJSON_AddNumberToObject(cj, "hits_remote", ps->hits_remote);
    cJSON_AddNumberToObject(cj, "misses", ps->misses);
    cJSON_AddNumberToObject(cj, "stored", ps->stored);
  } else {
    cJSON_AddStringToObject(cj, "why", ps->cache_why);
  }
  char note[1500];
  if (cached && !ps->judged)
    snprintf(note, sizeof note,
             "%d of %d unique units came from the kernel cache, verified on the GPU when they were stored "
             "(group_list[].cached); %s%s", cached, ns,
             ps->compiled ? "the others were compiled with NVRTC but not verified or timed: " : "none was compiled",
             ps->compiled ? ps->why : "");
  else if (ps->judged)
    snprintf(note, sizeof note,
             "kernels were compiled with NVRTC; %d of %d unique units had their candidates (the rule's unit "
             "and the built-in policy's variants) judged on the GPU: verified against the fp64 reference on "
             "fresh inputs and timed in a worker process, the fastest verified kept (group_list[].candidates); "
             "%d verified, %d replaced by a faster variant; the other units by rule, not verified at compile "
             "time%s%s%s",
             ps->judged, ns, ps->verified, ps->replaced, ps->on ? "" : "; judging stopped: ", ps->on ? "" : ps->why,
             ps->over_budget ? "; groups with choices left to the rule when the judging time (judge_seconds) "
                               "was spent: units_over_judge_time" : "");
  else
    snprintf(note, sizeof note,
             "kernels were compiled with NVRTC but not verified or timed (%s); choices were made by "
             "rule", ps->why);
  cJSON_AddStringToObject(r, "note", note);
  cJSON_AddNumberToObject(r, "groups", p->n_groups);
  cJSON_AddNumberToObject(r, "unique_units", ns);
  cJSON *sr = cJSON_AddObjectToObject(r, "steps_per_run");
  cJSON_AddNumberToObject(sr, "launches", rs.launches);
  cJSON_AddNumberToObject(sr, "gemm", rs.gemm);
  cJSON_AddNumberToObject(sr, "conv", rs.conv);
  cJSON_AddNumberToObject(sr, "memset", rs.memset);
  cJSON_AddNumberToObject(sr, "copy", rs.copy);
  cJSON_AddNumberToObject(r, "arena_bytes", (double)mp->arena_bytes);
  cJSON_AddNumberToObject(r, "naive_bytes", (double)mp->naive_bytes);
  cJSON_AddNumberToObject(r, "scratch_bytes", (double)mp->scratch_bytes);
  cJSON_AddNumberToObject(r, "weights_bytes", (double)weights_bytes);
  char hex[32];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)((const kfr_header *)blob)->weights_hash);
  cJSON_AddStringToObject(r, "weights_xxh64", hex);
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)((const kfr_header *)blob)->model_id);
  cJSON_AddStringToObject(r, "model_id", hex);
  cJSON_AddBoolToObject(r, "weights_embedded", o->embed_weights);
  cJSON_AddNumberToObject(r, "plan_bytes", (double)blob_bytes);
  cJSON *ph = cJSON_AddObjectToObject(r, "seconds");
  const char *phases[] = {"passes", "partition", "units", "memplan", "plan", "emit", "link", "total", "module_check"};
  for (int i = 0; i < 9; i++) cJSON_AddNumberToObject(ph, phases[i], phase[i]);
  add_module_check(r, mc);
  cJSON *ga = cJSON_AddArrayToObject(r, "group_list");
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "id", grp->id);
    cJSON_AddStringToObject(e, "kind", kf_group_kind_name(grp->kind));
    cJSON_AddStringToObject(e, "key", grp->key_hex);
    cJSON_AddNumberToObject(e, "io_bytes", (double)kf_group_io_bytes(grp));
    cJSON *ops = cJSON_AddArrayToObject(e, "ops");
    for (int k = 0; k < grp->n_ops; k++) {
      char buf[300];
      snprintf(buf, sizeof buf, "%s (kf.%s)", grp->ops[k]->name, kf_opcode_name(grp->ops[k]->code));
      cJSON_AddItemToArray(ops, cJSON_CreateString(buf));
    }
    if (units[i]) {
      cJSON_AddStringToObject(e, "unit", units[i]->name ? units[i]->name : "");
      cJSON_AddStringToObject(e, "policy", units[i]->policy ? units[i]->policy : "");
      cJSON_AddNumberToObject(e, "cubin_bytes", (double)units[i]->cubin_bytes);
      add_library_steps(e, units[i]);
      for (int s = 0; s < ns; s++)
        if (slots[s].unit == units[i] && slots[s].first == grp) {
          const kf_uslot *sl = &slots[s];
          cJSON_AddNumberToObject(e, "build_seconds", sl->build_s);
          cJSON_AddNumberToObject(e, "compile_seconds", sl->compile_s);
          if (sl->cache_key[0]) cJSON_AddStringToObject(e, "cache_key", sl->cache_key);
          if (sl->source != KF_USLOT_BUILT) {
            cJSON *c = cJSON_AddObjectToObject(e, "cached");
            cJSON_AddStringToObject(c, "from", sl->source == KF_USLOT_REMOTE ? "remote" : "local");
            cJSON_AddNumberToObject(c, "reward", sl->cached_reward);
            cJSON_AddNumberToObject(c, "ms", sl->cached_ms);
            cJSON_AddStringToObject(c, "gpu", sl->cached_gpu);
            cJSON_AddStringToObject(c, "policy", sl->cached_policy);
            cJSON_AddBoolToObject(c, "verified_again", sl->reverified);
          } else if (sl->cache_key[0]) {
            cJSON_AddBoolToObject(e, "stored_in_cache", sl->stored);
          }
          /* judged, or not judged for a reason (the judging time spent) */
          if (sl->n_cands || (sl->source == KF_USLOT_BUILT && sl->info.why[0])) add_candidates(e, sl);
        }
    }
    cJSON_AddItemToArray(ga, e);
  }
  char *text = cJSON_Print(r);
  cJSON_Delete(r);
  if (!text) return KF_ERR_NOMEM;
  FILE *f = fopen(path, "w");
  kf_status st = KF_OK;
  if (!f || fputs(text, f) < 0 || fputc('\n', f) == EOF) st = KF_ERR_IO;
  if (f && fclose(f) != 0) st = KF_ERR_IO;
  /* path is the temporary name; the user named the report */
  if (st) kf_diag_error(diag, "%s: cannot write the report: %s", o->report_path, strerror(errno));
  free(text);
  return st;
}

/* ---- the driver ---------------------------------------------------------- */

/* The largest scratch one unit needs (each buffer rounded to 256 bytes);
 * INT64_MAX on overflow, which the memory plan refuses, naming the size */
static int64_t max_scratch(const kf_uslot *slots, int ns) {
  int64_t scratch = 0;
  for (int s = 0; s < ns; s++) {
    int64_t sum = 0, b = 0;
    for (int k = 0; k < slots[s].unit->n_scratch; k++)
      if (__builtin_add_overflow(slots[s].unit->scratch_bytes[k], 255, &b) ||
          __builtin_add_overflow(sum, b / 256 * 256, &sum))
        sum = INT64_MAX;
    if (sum > scratch) scratch = sum;
  }
  return scratch;
}

/* The weights laid out (into OUT.weights under its temporary name, art's
 * ART_WEIGHTS, unless embedded: *woff their offsets, *wbytes their size)
 * and the module's plan built (*blob); the weights file's header, which
 * names the plan's model id, written last. */
static kf_status weights_and_plan(kf_graph *g, kf_partition *p, kf_memplan *mp, kf_unit **units,
                                  const kf_compile_options *o, const char *out_path, artifact *art, int64_t **woff_out,
                                  int64_t *wbytes_out, void **blob, size_t *blob_bytes, kf_diag *diag) {
  FILE *wf = NULL;
  int64_t wbytes = 0;
  int64_t *woff = *woff_out = calloc((size_t)g->n_weights + 1, sizeof *woff);
  if (!woff) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  const char *wrecord = NULL;
  kfr_xxh64_state whash;
  kfr_xxh64_init(&whash, 0);
  if (!o->embed_weights) {
    size_t n = strlen(out_path) + 16;
    char *wpath = malloc(n);
    if (!wpath) return KF_ERR_NOMEM;
    snprintf(wpath, n, "%s.weights", out_path);
    st = art_init(&art[ART_WEIGHTS], wpath);
    free(wpath);
    if (st) return st;
    /* written under its temporary name, reported under its own */
    const char *wname = art[ART_WEIGHTS].final;
    wf = fopen(art[ART_WEIGHTS].tmp, "wb");
    if (!wf) {
      kf_diag_error(diag, "%s: cannot open for writing: %s", wname, strerror(errno));
      return KF_ERR_IO;
    }
    /* the header, filled in once the plan (and so its model id) exists */
    static const kfr_weights_header blank;
    if (fwrite(&blank, 1, sizeof blank, wf) != sizeof blank) {
      kf_diag_error(diag, "%s: write failed: %s", wname, strerror(errno));
      st = KF_ERR_IO;
    }
    if (!st) st = layout_weights(g, woff, &wbytes, wf, &whash, wname, diag);
    /* recorded to name it in messages; a shared module finds it beside
     * itself, an object module by this name relative to its program */
    wrecord = base_name(art[ART_WEIGHTS].final);
  } else {
    st = layout_weights(g, woff, &wbytes, NULL, NULL, "weights", diag);
  }
  *wbytes_out = wbytes;
  if (!st) {
    kf_plan_input pi = {
        .graph = g,
        .partition = p,
        .memplan = mp,
        .units = units,
        .target = o->target,
        .weight_offset = woff,
        .weights_bytes = wbytes,
        .weights_hash = kfr_xxh64_final(&whash),
        .weights_path = wrecord,
        .weights_beside_module = o->emit == KF_EMIT_SO,
        .embed_weights = o->embed_weights,
    };
    st = kf_plan_build(&pi, blob, blob_bytes, diag);
  }
  if (wf) {
    const char *wname = art[ART_WEIGHTS].final;
    if (!st) {
      kfr_weights_header wh;
      kfr_weights_header_fill(*blob, &wh);
      if (fseek(wf, 0, SEEK_SET) != 0 || fwrite(&wh, 1, sizeof wh, wf) != sizeof wh) {
        kf_diag_error(diag, "%s: write failed: %s", wname, strerror(errno));
        st = KF_ERR_IO;
      }
    }
    if (fclose(wf) != 0 && !st) {
      kf_diag_error(diag, "%s: write failed: %s", wname, strerror(errno));
      st = KF_ERR_IO;
    }
  }
  return st;
}

/* The plan emitted as an object (beside the module for a shared one,
 * *objpath; the object module itself, with its header, for --emit obj)
 * under art's temporary names; the create function's prefix chosen. */
static kf_status emit_module(const kf_graph *g, const kf_compile_options *o, const char *out_path, const void *blob,
                             size_t blob_bytes, artifact *art, char **objpath, kf_diag *diag) {
  char prefix[256];
  if (o->emit == KF_EMIT_SO) {
    snprintf(prefix, sizeof prefix, "kfuse_model");
  } else if (o->prefix) {
    snprintf(prefix, sizeof prefix, "%s", o->prefix);
  } else {
    snprintf(prefix, sizeof prefix, "kfuse_%s", g->name);
    for (char *c = prefix; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
        *c = '_';
  }
  kf_status st = art_init(&art[ART_MODULE], out_path);
  if (st) return st;
  size_t n = strlen(art[ART_MODULE].tmp) + 8;
  *objpath = malloc(n);
  if (!*objpath) return KF_ERR_NOMEM;
  /* a shared module links an object written beside it */
  if (o->emit == KF_EMIT_SO)
    snprintf(*objpath, n, "%s.o", art[ART_MODULE].tmp);
  else
    snprintf(*objpath, n, "%s", art[ART_MODULE].tmp);
  st = kf_emit_object(blob, blob_bytes, prefix, *objpath, out_path, diag);
  if (!st && o->emit == KF_EMIT_OBJ) {
    char *hpath = kf_header_path(out_path);
    st = hpath ? art_init(&art[ART_HEADER], hpath) : KF_ERR_NOMEM;
    free(hpath);
    if (!st) st = kf_write_header(art[ART_HEADER].tmp, art[ART_HEADER].final, out_path, prefix, g, diag);
  }
  return st;
}

kf_status kf_compile_graph(kf_graph *g, const kf_compile_options *o, const char *out_path,
                           kf_diag *diag) {
  double phase[9] = {0}, t0 = kf_now_s(), t;
  kf_partition *p = NULL;
  kf_memplan *mp = NULL;
  kf_unit **units = NULL;
  kf_uslot *slots = NULL;
  int ns = 0;
  void *blob = NULL;
  size_t blob_bytes = 0;
  int64_t *woff = NULL, wbytes = 0;
  char *objpath = NULL;
  artifact art[ART_COUNT];
  memset(art, 0, sizeof art);
  kf_status st;

  if (o->emit == KF_EMIT_SO && !ends_with(out_path, ".so"))
    kf_diag_warn(diag, "%s: a shared module usually ends in .so", out_path);
  if (o->emit == KF_EMIT_OBJ && !ends_with(out_path, ".o")) {
    kf_diag_error(diag, "%s: --emit obj writes an object file: name it *.o", out_path);
    return KF_ERR_ARG;
  }

  t = kf_now_s();
  st = kf_compile_passes(g, o, diag);
  phase[0] = kf_now_s() - t;
  if (st) goto done;

  t = kf_now_s();
  st = kf_compile_partition(g, o, &p, diag);
  phase[1] = kf_now_s() - t;
  if (st) goto done;
  if (o->progress)
    fprintf(stderr, "kfuse: %s: %d ops in %d groups\n", g->name, kf_graph_count_ops(g), p->n_groups);

  t = kf_now_s();
  kf_units_state ps;
  memset(&ps, 0, sizeof ps);
  st = build_units(g, p, o, &units, &slots, &ns, &ps, diag);
  phase[2] = kf_now_s() - t;
  if (st) goto done;

  t = kf_now_s();
  int64_t scratch = max_scratch(slots, ns);
  st = o->keep_values ? kf_memplan_build_keep(p, scratch, &mp, diag) : kf_memplan_build(p, scratch, &mp, diag);
  phase[3] = kf_now_s() - t;
  if (st) goto done;

  t = kf_now_s();
  st = weights_and_plan(g, p, mp, units, o, out_path, art, &woff, &wbytes, &blob, &blob_bytes, diag);
  phase[4] = kf_now_s() - t;
  if (st) goto done;

  t = kf_now_s();
  st = emit_module(g, o, out_path, blob, blob_bytes, art, &objpath, diag);
  phase[5] = kf_now_s() - t;
  if (st) goto done;

  if (o->emit == KF_EMIT_SO) {
    t = kf_now_s();
    st = kf_link_shared(objpath, art[ART_MODULE].tmp, out_path, diag);
    unlink(objpath);
    phase[6] = kf_now_s() - t;
    if (st) goto done;
  }
  kf_module_check mc_local, *mc = o->check_out ? o->check_out : &mc_local;
  memset(&mc_local, 0, sizeof mc_local);
  char fb[256], ff[1024];
  snprintf(fb, sizeof fb, "%s", mc->fallback);
  snprintf(ff, sizeof ff, "%s", mc->first_failure);
  memset(mc, 0, sizeof *mc);
  snprintf(mc->fallback, sizeof mc->fallback, "%s", fb);
  snprintf(mc->first_failure, sizeof mc->first_failure, "%s", ff);
  mc->bad_group = -1;
  if (o->checker && o->emit == KF_EMIT_SO) {
    t = kf_now_s();
    st = check_module(g, p, mp, units, o, art[ART_MODULE].tmp, o->embed_weights ? NULL : art[ART_WEIGHTS].tmp,
                      mc, diag);
    phase[8] = kf_now_s() - t;
    if (st) goto done;
  } else {
    snprintf(mc->why, sizeof mc->why, "%s",
             o->emit != KF_EMIT_SO ? "an object module (--emit obj) is not checked: it runs only once linked into a program"
                                   : "no module check was asked for (kfuse compile --no-verify-module, or a "
                                     "library caller without a checker)");
  }
  phase[7] = kf_now_s() - t0;
  run_steps rs = count_steps(p, units);
  if (o->report_path) {
    if ((st = art_init(&art[ART_REPORT], o->report_path))) goto done;
    st = write_report(art[ART_REPORT].tmp, g, p, mp, units, slots, ns, o, out_path, blob, blob_bytes, wbytes,
                      phase, &ps, rs, mc, diag);
  }
  if (!st) st = art_commit(art, diag);
  if (o->progress && !st) {
    fprintf(stderr,
            "kfuse: wrote %s (%d groups, %d kernel units, %d launches + %d library calls a run, "
            "arena %.1f KiB vs %.1f KiB naive, %.2f s; %d unit(s) from the kernel cache, %d judged on the "
            "GPU, %d verified, %d replaced by a faster variant, %d stored; the others by rule, not verified)\n",
            out_path, p->n_groups, ns, rs.launches, rs.gemm + rs.conv, (double)mp->arena_bytes / 1024,
            (double)mp->naive_bytes / 1024, phase[7], ps.hits_local + ps.hits_remote, ps.judged, ps.verified,
            ps.replaced, ps.stored);
  }
done:
  if (objpath && o->emit == KF_EMIT_SO) unlink(objpath); /* gone unless emission failed */
  art_fini(art);
  free(objpath);
  free(blob);
  free(woff);
  kf_units_free(slots, ns);
  free(slots);
  free(units);
  kf_memplan_destroy(mp);
  kf_partition_destroy(p);
  return st;
}

/* ---- a model file, with the module check's fallbacks ---------------------------- */

kf_status kf_compile_file(const char *model_path, kf_compile_options *o, const char *out_path, kf_diag *diag) {
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_module_check *res = o->check_out;
  for (;;) {
    kf_graph *g = NULL;
    kf_status st = kf_model_load(model_path, &lo, &g, diag);
    if (st == KF_OK) st = kf_graph_verify(g, diag);
    if (st == KF_OK) st = kf_compile_graph(g, o, out_path, diag);
    kf_graph_destroy(g);
    if (st != KF_ERR_MISMATCH) return st;
    /* the module failed its check: the safer lowerings in turn */
    const char *next = NULL;
    if (!o->no_channels_last && !o->no_cudnn) {
      o->no_channels_last = true;
      next = "--no-channels-last";
    } else if (o->fuse) {
      o->fuse = false;
      next = "--no-channels-last --no-fuse";
    } else if (!o->no_cudnn) {
      o->no_cudnn = true;
      next = "--no-channels-last --no-fuse --no-cudnn";
    }
    if (!next) {
      kf_diag_error(diag, "%s: no module written: the compiled module does not match the fp64 reference, nor do "
                    "its fallbacks (%s)", model_path, res ? res->fallback : "");
      return st;
    }
    if (res && !res->first_failure[0]) {
      kf_strbuf fb;
      kf_strbuf_init(&fb);
      kf_strbuf_printf(&fb, "%s%s%s", res->why, res->bad_group >= 0 ? "; first diverging group: " : "",
                       res->bad_group >= 0 ? res->bad_what : "");
      snprintf(res->first_failure, sizeof res->first_failure, "%s", fb.data ? fb.data : "");
      kf_strbuf_fini(&fb);
    }
    if (res) snprintf(res->fallback, sizeof res->fallback, "%s", next);
    kf_diag_warn(diag, "%s: compiling again with %s, and checking that", model_path, next);
  }
}
